#!/usr/bin/env bash
# tools/sanitize.sh: builds shardflow with clang 14 under AddressSanitizer + UndefinedBehavior-
# Sanitizer (and libFuzzer's coverage instrumentation, so the same build dir serves tools/fuzz.sh),
# then runs the C++ tests and the fuzz corpora replays with ctest. Any sanitizer report fails the
# test that produced it (-fno-sanitize-recover=all, halt_on_error). Prints SANITIZE PASS or
# SANITIZE FAIL last and exits 0 or 1.
#
# Usage: tools/sanitize.sh [--build-only] [extra ctest args, e.g. -R kernels/]
#   SHARDFLOW_SANITIZE_DIR  build dir (default: build-sanitize/ in the repository root)
#   SANITIZE_TARGETS        what to build (default: shardflow shardflow_cli cc_tests fuzzers)
#   JOBS                    parallel build/test jobs (default 2)
#
# Not run here (see docs/fuzzing.md): python/* (pytest loads the extension into an uninstrumented
# interpreter, which ASan cannot start in without LD_PRELOAD games), tools/train_*_accuracy (full
# training runs, 15-40 minutes each without ASan), tools/train_parity, tools/train_cli and
# distributed/netns (Python drivers of the `shardflow` binary; netns needs root), bazel/build
# (a Bazel build of its own, not instrumented).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SHARDFLOW_SANITIZE_DIR:-$ROOT/build-sanitize}"
JOBS="${JOBS:-2}"
BUILD_ONLY=0
if [[ "${1:-}" == "--build-only" ]]; then
  BUILD_ONLY=1
  shift
fi

# clang 14 and its runtimes (ASan/UBSan/libFuzzer in libclang-rt, OpenMP in libomp) from Debian.
ensure_toolchain() {
  local missing=()
  command -v clang++-14 >/dev/null || missing+=(clang-14)
  [[ -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ||
     -n "$(ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ]] ||
    missing+=(libclang-rt-14-dev)
  [[ -e /usr/lib/llvm-14/lib/libomp.so ]] || missing+=(libomp-14-dev)
  command -v ld.lld-14 >/dev/null || missing+=(lld-14)
  if ((${#missing[@]})); then
    echo "sanitize.sh: installing ${missing[*]}"
    apt-get install -y --no-install-recommends "${missing[@]}"
  fi
}

SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
configure() {
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # The project's Release flags (-O2 -DNDEBUG, set in CMakeLists.txt) plus the sanitizers.
  nice -n 10 cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="$SAN_FLAGS" \
    -DCMAKE_EXE_LINKER_FLAGS="$SAN_FLAGS -fuse-ld=lld" \
    -DCMAKE_SHARED_LINKER_FLAGS="$SAN_FLAGS -fuse-ld=lld" \
    -DSHARDFLOW_FUZZ=ON >"$BUILD.configure.log" 2>&1 ||
    { cat "$BUILD.configure.log"; return 1; }
}

# The engine, the CLI (multi-process tests start it), every C++ test and every fuzzer; not the
# Python extension or the benchmarks.
build() {
  local targets=(${SANITIZE_TARGETS:-shardflow shardflow_cli cc_tests fuzzers})
  nice -n 10 cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"
}

# Reports go to stderr and end the process with a non-zero status; ctest then marks the test
# failed. Suppressions cover third-party code only (tests/fuzz/sanitizer_suppressions/).
export_sanitizer_env() {
  local supp="$ROOT/tests/fuzz/sanitizer_suppressions"
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:suppressions=$supp/asan.supp"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
}

EXCLUDED='^(python/|tools/|distributed/netns$|bazel/)'
# Tests that measure the process's RSS against a bound run last, with ASan's quarantine of freed
# memory cut from 256 MB to 16 MB and free memory returned to the OS each second: otherwise the
# quarantine and allocator caches alone exceed the bound. Everything else runs with the defaults.
RSS_BOUND_TESTS='^distributed/soak_test$'

main() {
  ensure_toolchain
  configure
  build
  if ((BUILD_ONLY)); then
    echo "sanitize.sh: built in $BUILD"
    return 0
  fi
  export_sanitizer_env
  local status=0
  (cd "$BUILD" && nice -n 10 ctest --output-on-failure -j "$JOBS" \
    -E "$EXCLUDED|$RSS_BOUND_TESTS" "$@") || status=$?
  if (($# == 0)); then  # with ctest arguments (a -R of their own), only the first run
    (cd "$BUILD" &&
      ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=16:allocator_release_to_os_interval_ms=1000" \
        nice -n 10 ctest --output-on-failure -R "$RSS_BOUND_TESTS") || status=$?
  fi
  if ((status == 0)); then
    echo "SANITIZE PASS: every C++ test and corpus replay ran clean under ASan+UBSan ($BUILD)"
  else
    echo "SANITIZE FAIL: see the failing tests above (sanitizer reports are in their output)"
  fi
  return "$status"
}

main "$@"
