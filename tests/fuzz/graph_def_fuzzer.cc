// Fuzzes GraphDef import (core/graph/graph.h, core/graph/graph_io.h) through kernel construction:
// the input is a GraphDef file's bytes, binary or text format, as `shardflow` reads them.
//
// Every input goes through ReadGraphDef (binary first, then text), Graph::FromGraphDef (ops,
// attrs, inputs, dtypes, cycles, shape inference, Const values) and Executor::Create on a CPU
// device, which orders the graph and constructs every node's kernel. Nothing is run: a step may
// legitimately wait forever (a _Recv nobody sends) or take long. Checked: each stage returns a
// status and never crashes; an accepted graph written back with ToGraphDef imports again with
// the same nodes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/graph/graph.h"
#include "core/graph/graph_io.h"
#include "google/protobuf/stubs/logging.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "tests/fuzz/mem_file.h"
#include "tests/util/test_device.h"

namespace shardflow {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "graph_def_fuzzer: invariant violated: %s\n", what.c_str());
  std::abort();
}

// One inter-op and one intra-op thread: kernels are constructed, never run.
Device* FuzzDevice() {
  static Device* device = NewTestCpuDevice(1, 1).release();
  return device;
}

void CheckReimport(const Graph& graph) {
  GraphDef out;
  graph.ToGraphDef(&out);
  auto again = Graph::FromGraphDef(out);
  if (!again.ok())
    Fail("an imported graph's ToGraphDef does not import: " + again.status().ToString());
  if ((*again)->nodes().size() != graph.nodes().size()) Fail("re-import changes the node count");
}

}  // namespace
}  // namespace shardflow

// Protobuf logs every text-format parse error to stderr; most inputs are not text GraphDefs, and
// the logging would dominate the run. ReadGraphDef's status says the same.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardflow;
  MemFile file(data, size);
  if (!file.ok()) return 0;
  auto def = ReadGraphDef(file.path());
  if (!def.ok()) return 0;
  auto graph = Graph::FromGraphDef(*def);
  if (!graph.ok()) return 0;
  CheckReimport(**graph);
  auto executor = Executor::Create(*std::move(graph), FuzzDevice());
  (void)executor;
  return 0;
}
