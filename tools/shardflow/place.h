// `shardflow place`: places a model's graph (or a GraphDef file) on local CPU devices or a
// described cluster, prints where nodes went, and on request explains one node or simulates
// the step.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_PLACE_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_PLACE_H_

#include "ops/scope.h"

namespace shardflow {

class CommandLine;

// Adds the command and its flags to `cli`.
void AddPlaceCommand(CommandLine* cli);

// Two independent towers of `depth` [dim x dim] matmuls ("tower0/matmul0"...), joined by an Add
// named "join": the model-parallel example of `place --model towers` and the towers benchmark.
void BuildTowers(const Scope& scope, int dim, int depth);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_PLACE_H_
