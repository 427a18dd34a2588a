#!/bin/sh
# ctest bazel/build: analyses every target of //... (the engine, libshardflow.so, the CLI, the
# example, the benchmarks, every C++ test and fuzz harness) with Debian's Bazel, offline, builds
# and runs the CLI and a few of the C++ tests, so the registrations (ops, kernels, devices, the
# grpc protocol) are known to have survived Bazel's link. Skipped (77) when Bazel is not
# installed (.ci/setup.sh installs bazel-bootstrap).
set -eu
root=${1:?usage: build.sh SOURCE_DIR}
if ! command -v bazel >/dev/null 2>&1; then
  echo "bazel/build: skipped: no bazel on PATH (apt-get install bazel-bootstrap; bazel/README.md)"
  exit 77
fi
cd "$root"
tests="tests/graph/graph_io_test tests/ops/gradients_test tests/runtime/device_test
       tests/distributed/worker_service_test"
# Every target is analysed (its sources and deps resolve: `--nobuild`), but only what runs below is
# compiled: compiling all of //... a second time beside the CMake build took 22 of CI's minutes on
# 2 cores. `bazel build //...` builds the rest (bazel/README.md).
# Niced: ctest runs other tests beside this one, some of them timing a server's answers; the
# Bazel server started here (and so every compile it spawns) yields the CPU to them.
nice -n 10 bazel build --nobuild //...
labels=""
for t in $tests; do labels="$labels //:$t"; done
nice -n 10 bazel build //:shardflow_cli //:basic_graph $labels
bin=$(bazel info bazel-bin 2>/dev/null)
"$bin/shardflow_cli" --help | head -n 3
"$bin/basic_graph"
# Runs from the runfiles tree, as `bazel test` would (tests/data, tests/add_graph.pb).
for t in $tests; do
  (cd "$bin/$t.runfiles/shardflow" && "$bin/$t" --gtest_brief=1) || exit 1
done
echo "bazel/build: OK"
