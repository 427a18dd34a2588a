// Rewriting a graph for one Run signature: feeds become _Arg nodes, fetches _Retval nodes, and
// everything the fetches and targets do not need is pruned.
#ifndef SHARDFLOW_RUNTIME_SUBGRAPH_H_
#define SHARDFLOW_RUNTIME_SUBGRAPH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/graph.h"

namespace shardflow {

// What a fed tensor must look like.
struct FeedSpec {
  std::string name;  // as given by the caller
  DataType dtype = DT_INVALID;
  TensorShape shape;  // declared (Placeholder) or inferred; may be partial
};

// Errors: a feed or fetch naming a node or output that does not exist, a target that does not
// exist, a tensor fed twice, or a Placeholder that is needed but not fed.
absl::Status RewriteForRun(Graph* graph, const std::vector<std::string>& feeds,
                           const std::vector<std::string>& fetches,
                           const std::vector<std::string>& targets, std::vector<FeedSpec>* specs);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_SUBGRAPH_H_
