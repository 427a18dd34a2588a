// `shardflow profile`: trains a few steps of a model split across CPU devices and writes the
// profile of the last one: Chrome trace, placement report and Graphviz DOT (SVG with graphviz).
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_PROFILE_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_PROFILE_H_

namespace shardflow {

// Returns the process exit code (0 ok, 1 failed, 2 bad flags).
int ProfileMain(int argc, char** argv, int first);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_PROFILE_H_
