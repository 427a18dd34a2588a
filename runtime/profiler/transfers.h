// Transfers: the Send→Recv pairs of one traced step, matched from its RunMetadata.
//
//   RunMetadata md;  // from Session::Run with RunOptions::FULL_TRACE
//   for (const Transfer& t : MatchTransfers(md)) {
//     std::cout << t.send_device << " -> " << t.recv_device << ": " << FormatBytes(t.bytes);
//   }
//
// A `_Send` on device A and a `_Recv` on device B whose string attrs (tensor_name, send_device,
// recv_device) are equal are one transfer. The attrs are read from the NodeDefs in
// md.partition_graphs (found by device and node name, or by name alone when it is unique);
// a _Send/_Recv in the step stats without a NodeDef cannot be matched and is ignored. When a
// pair executes several times in one step (loops), the k-th _Send and the k-th _Recv by start
// time are one transfer; a side with more executions gives transfers with the other side null.
//
// The profiler outputs (chrome_trace.h, placement_report.h, graph_dot.h) are built on this.
#ifndef SHARDFLOW_RUNTIME_PROFILER_TRANSFERS_H_
#define SHARDFLOW_RUNTIME_PROFILER_TRANSFERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/protos/config.pb.h"
#include "core/protos/graph.pb.h"

namespace shardflow {

// The attrs that identify one cross-device edge; equal keys on a _Send and a _Recv pair them.
struct TransferKey {
  std::string tensor_name;  // "dense/MatMul:0"
  std::string send_device;  // full device names
  std::string recv_device;
  bool operator<(const TransferKey& o) const;
  bool operator==(const TransferKey& o) const;
};

// Reads the key attrs of a _Send or _Recv NodeDef; false when any of the three is missing.
bool TransferKeyOf(const NodeDef& node, TransferKey* key);

struct Transfer {
  TransferKey key;
  // Node names of the two ends (as in the partition graphs).
  std::string send_node;
  std::string recv_node;
  // Borrowed pointers into the RunMetadata passed to MatchTransfers (it must outlive them);
  // null when that side has no step stats.
  const NodeExecStats* send = nullptr;
  const NodeExecStats* recv = nullptr;
  // Bytes moved: the _Recv's output slot 0, else the _Send's; -1 when neither records it.
  int64_t bytes = -1;
};

// Every transfer with step stats on at least one side, ordered by key, then by start time.
std::vector<Transfer> MatchTransfers(const RunMetadata& md);

// The bytes an execution recorded for output slot 0 (the first output if none says slot 0);
// -1 when it recorded no output.
int64_t OutputBytes(const NodeExecStats& stats);

// "512 B", "4.0 KiB", "1.5 MiB", "2.3 GiB"; "?" for negative (unknown) counts.
std::string FormatBytes(int64_t bytes);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_PROFILER_TRANSFERS_H_
