#!/bin/sh
# ctest bazel/build: `bazel build //...` (the engine, libshardflow.so, the CLI, the example, the
# benchmarks, every C++ test and fuzz harness) with Debian's Bazel, offline, then runs what it
# built: the CLI and a few of the C++ tests, so the registrations (ops, kernels, devices, the
# grpc protocol) are known to have survived Bazel's link. Skipped (77) when Bazel is not
# installed (.ci/setup.sh installs bazel-bootstrap).
set -eu
root=${1:?usage: build.sh SOURCE_DIR}
if ! command -v bazel >/dev/null 2>&1; then
  echo "bazel/build: skipped: no bazel on PATH (apt-get install bazel-bootstrap; bazel/README.md)"
  exit 77
fi
cd "$root"
# Niced: ctest runs other tests beside this one, some of them timing a server's answers; the
# Bazel server started here (and so every compile it spawns) yields the CPU to them.
nice -n 10 bazel build //...
bin=$(bazel info bazel-bin 2>/dev/null)
"$bin/shardflow_cli" --help | head -n 3
"$bin/basic_graph"
# Runs from the runfiles tree, as `bazel test` would (tests/data, tests/add_graph.pb).
for t in tests/graph/graph_io_test tests/ops/gradients_test tests/runtime/device_test \
         tests/distributed/worker_service_test; do
  if [ -x "$bin/$t" ]; then
    (cd "$bin/$t.runfiles/shardflow" && "$bin/$t" --gtest_brief=1) || exit 1
  fi
done
echo "bazel/build: OK"
