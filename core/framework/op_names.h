// Names of the ops the runtime itself inserts or treats specially, so that code compares a
// node's op against a constant instead of repeating a string:
//
//   if (node->op() == kRecvOp) ...
//
// Ops whose name starts with '_' are internal: only the runtime puts them in a graph
// (CheckClientGraph refuses them in a client's graph).
#ifndef SHARDFLOW_CORE_FRAMEWORK_OP_NAMES_H_
#define SHARDFLOW_CORE_FRAMEWORK_OP_NAMES_H_

#include <string>

namespace shardflow {

// Inserted by the runtime.
inline constexpr char kArgOp[] = "_Arg";        // a fed value (runtime/subgraph.h)
inline constexpr char kRetvalOp[] = "_Retval";  // a fetched value
inline constexpr char kSendOp[] = "_Send";      // one end of a cut edge (partitioner/partition.h)
inline constexpr char kRecvOp[] = "_Recv";      // the other end

// Treated specially by the placer, the cost model, gradients or the graph rewrites.
inline constexpr char kConstOp[] = "Const";
inline constexpr char kPlaceholderOp[] = "Placeholder";
inline constexpr char kIdentityOp[] = "Identity";
inline constexpr char kNoOp[] = "NoOp";
inline constexpr char kStopGradientOp[] = "StopGradient";
inline constexpr char kVarHandleOp[] = "VarHandleOp";
// Other ops whose output names a resource that lives on their device (ops/data_flow_ops.cc).
inline constexpr char kAccumulatorHandleOp[] = "ResourceConditionalAccumulator";
inline constexpr char kQueueHandleOp[] = "FIFOQueueV2";

// True for ops that output a handle to state kept on their device: the ops that take the handle
// run there too.
inline bool IsResourceHandleOp(const std::string& op) {
  return op == kVarHandleOp || op == kAccumulatorHandleOp || op == kQueueHandleOp;
}

// True for ops only the runtime may insert (their name starts with '_').
inline bool IsInternalOp(const std::string& op) { return !op.empty() && op[0] == '_'; }

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_OP_NAMES_H_
