#!/usr/bin/env bash
# tools/fuzz.sh: builds the libFuzzer harnesses of tests/fuzz/ (clang 14, ASan + UBSan, in the
# build dir of tools/sanitize.sh) and fuzzes each for SECONDS (default 60), one after another.
#
# Usage: tools/fuzz.sh [SECONDS] [NAME...]      e.g. tools/fuzz.sh 600 checkpoint graph_def
#   NAME: a harness, tests/fuzz/<NAME>_fuzzer.cc; default all of them.
#   FUZZ_ARGS: extra libFuzzer flags, e.g. FUZZ_ARGS="-jobs=4 -workers=4".
#   FUZZ_NO_BUILD=1: fuzz the binaries as built (e.g. while another build uses the build dir).
#
# Each fuzzer works on a copy of its checked-in corpus, build-sanitize/fuzz/<NAME>/corpus/ (kept
# between runs, so longer runs build on shorter ones); the checked-in corpus only grows when
# someone copies an input into it (docs/fuzzing.md). A crash, leak, timeout or sanitizer report
# leaves the input in build-sanitize/fuzz/<NAME>/ (crash-*, leak-*, timeout-*, oom-*) and the
# log beside it. Prints one line per fuzzer (executions, result) and exits 1 if any failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SHARDFLOW_SANITIZE_DIR:-$ROOT/build-sanitize}"
SECONDS_EACH="${1:-60}"
shift || true

# The largest input worth trying per harness (bytes); the seeds are far smaller.
max_len() {
  case "$1" in
    graph_def) echo 65536 ;;
    checkpoint | recv_tensor_reply) echo 16384 ;;
    tensor_proto) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

names=("$@")
if ((${#names[@]} == 0)); then
  for f in "$ROOT"/tests/fuzz/*_fuzzer.cc; do
    n="$(basename "$f" _fuzzer.cc)"
    names+=("$n")
  done
fi

if [[ -z "${FUZZ_NO_BUILD:-}" ]]; then
  SANITIZE_TARGETS=fuzzers "$ROOT/tools/sanitize.sh" --build-only
fi

supp="$ROOT/tests/fuzz/sanitizer_suppressions"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:suppressions=$supp/asan.supp"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"

summary=()
failed=0
for name in "${names[@]}"; do
  bin="$BUILD/tests/fuzz/${name}_fuzzer"
  seeds="$ROOT/tests/fuzz/corpus/$name"
  work="$BUILD/fuzz/$name"
  [[ -x "$bin" ]] || { echo "fuzz.sh: no fuzzer $bin"; exit 2; }
  mkdir -p "$work/corpus"
  dict=()
  [[ -f "$ROOT/tests/fuzz/$name.dict" ]] && dict=(-dict="$ROOT/tests/fuzz/$name.dict")
  log="$work/fuzz-$(date +%Y%m%d-%H%M%S).log"
  echo "fuzz.sh: $name for ${SECONDS_EACH}s (log: $log)"
  status=0
  # New inputs go to the first directory only; the checked-in seeds are read, never written.
  nice -n 10 "$bin" -max_total_time="$SECONDS_EACH" -print_final_stats=1 -rss_limit_mb=4096 \
    -timeout=10 -max_len="$(max_len "$name")" -artifact_prefix="$work/" "${dict[@]}" \
    ${FUZZ_ARGS:-} "$work/corpus" "$seeds" >"$log" 2>&1 || status=$?
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s += $2} END {print s + 0}')"
  if ((status == 0)); then
    result="ok"
  else
    result="FAILED (exit $status): $(grep -m1 -E 'ERROR: |runtime error|invariant violated' "$log" || true)"
    failed=1
  fi
  summary+=("$(printf '%-20s %6ss %12s execs  %s' "$name" "$SECONDS_EACH" "$execs" "$result")")
  tail -n 3 "$log"
done

echo "---- fuzz.sh summary ($(date -u +%FT%TZ), $BUILD) ----"
printf '%s\n' "${summary[@]}"
if ((failed)); then
  echo "FUZZ FAIL: inputs and logs are in $BUILD/fuzz/<name>/"
  exit 1
fi
echo "FUZZ PASS"
