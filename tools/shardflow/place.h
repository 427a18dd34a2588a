// `shardflow place`: places a model's graph (or a GraphDef file) on local CPU devices or a
// described cluster, prints where nodes went, and on request explains one node or simulates
// the step.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_PLACE_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_PLACE_H_

#include "ops/scope.h"

namespace shardflow {

// Returns the process exit code (0 ok, 1 failed, 2 bad flags).
int PlaceMain(int argc, char** argv, int first);

// Two independent towers of `depth` [dim x dim] matmuls ("tower0/matmul0"...), joined by an Add
// named "join": the model-parallel example of `place --model towers` and the towers benchmark.
void BuildTowers(const Scope& scope, int dim, int depth);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_PLACE_H_
