// Checking a NodeDef against its OpDef, and deriving its input and output types.
#ifndef SHARDFLOW_CORE_FRAMEWORK_NODE_DEF_UTIL_H_
#define SHARDFLOW_CORE_FRAMEWORK_NODE_DEF_UTIL_H_

#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "core/framework/op_def.h"
#include "core/protos/graph.pb.h"

namespace shardflow {

using DataTypeVector = absl::InlinedVector<DataType, 4>;

// Fills in attr defaults, then checks that every attr is set with the right type, type attrs are
// within their allowed sets, minimums hold and no unknown attr is present (names starting with
// '_' are reserved for shardflow and always allowed). Errors name the node and the op signature.
absl::Status AddDefaultsAndValidate(const OpDef& op, NodeDef* node);

// Expands list arguments and resolves type attrs. Requires a validated node.
absl::Status ComputeArgTypes(const OpDef& op, const NodeDef& node, DataTypeVector* inputs,
                             DataTypeVector* outputs);

// "node 'dense/MatMul' (MatMul): " — the prefix every node error starts with.
std::string NodeErrorPrefix(const NodeDef& node);

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_NODE_DEF_UTIL_H_
