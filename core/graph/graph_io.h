// Reading and writing GraphDefs as files, in protobuf binary or text format.
//
//   SF_RETURN_IF_ERROR(WriteGraphDef("model.pbtxt", def, GraphFormat::kText));
//   SF_ASSIGN_OR_RETURN(GraphDef def, ReadGraphDef("model.pb"));   // either format
#ifndef SHARDFLOW_CORE_GRAPH_GRAPH_IO_H_
#define SHARDFLOW_CORE_GRAPH_GRAPH_IO_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/protos/graph.pb.h"

namespace shardflow {

enum class GraphFormat { kBinary, kText };

// Writes to a temporary file beside `path`, then renames it, so readers never see half a file.
absl::Status WriteGraphDef(const std::string& path, const GraphDef& def, GraphFormat format);
// Accepts both formats: binary is tried first, then text. Errors name the file and say what was
// wrong (missing, unreadable, not a GraphDef in either format).
absl::StatusOr<GraphDef> ReadGraphDef(const std::string& path);

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_GRAPH_GRAPH_IO_H_
