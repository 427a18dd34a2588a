// Rewriting a graph for one Run signature: feeds become _Arg nodes, fetches _Retval nodes, and
// everything the fetches and targets do not need is pruned.
#ifndef SHARDFLOW_RUNTIME_SUBGRAPH_H_
#define SHARDFLOW_RUNTIME_SUBGRAPH_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/framework/tensor.h"
#include "core/graph/graph.h"

namespace shardflow {

// What a fed tensor must look like.
struct FeedSpec {
  std::string name;  // as given by the caller
  DataType dtype = DT_INVALID;
  TensorShape shape;  // declared (Placeholder) or inferred; may be partial
};

// Checks a graph a client submits to a session (Create, Extend, a master's CreateSession):
// INVALID_ARGUMENT naming the first node whose op is internal — its name starts with '_'
// (_Send, _Recv, _Arg, _Retval, ...). Those ops are inserted by the runtime itself; in a
// client's graph a _Recv would wait for a tensor nobody sends, an _Arg read another feed.
absl::Status CheckClientGraph(const GraphDef& graph);

// Errors: a feed or fetch naming a node or output that does not exist, a target that does not
// exist, a tensor fed twice, or a Placeholder that is needed but not fed.
absl::Status RewriteForRun(Graph* graph, const std::vector<std::string>& feeds,
                           const std::vector<std::string>& fetches,
                           const std::vector<std::string>& targets, std::vector<FeedSpec>* specs);

// Gives the nodes of a rewritten graph the devices the whole graph was placed on
// (`placement`: node name -> device); a feed's _Arg goes where its first consumer is, a fetch's
// _Retval where its tensor is produced. Nodes it cannot place keep no device.
void ApplyWholeGraphPlacement(Graph* graph, const std::map<std::string, std::string>& placement);

// Checks fed values against the specs RewriteForRun returned (same order); the error names the
// feed, what it should be and what it is.
absl::Status CheckFeeds(const std::vector<FeedSpec>& specs,
                        const std::vector<std::pair<std::string, Tensor>>& feeds);

// The key under which sessions cache what they built for one (feeds, fetches, targets).
std::string RunSignature(const std::vector<std::string>& feeds,
                         const std::vector<std::string>& fetches,
                         const std::vector<std::string>& targets);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_SUBGRAPH_H_
