// `shardflow profile`: trains a few steps of a model split across CPU devices and writes the
// profile of the last one: Chrome trace, placement report and Graphviz DOT (SVG with graphviz).
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_PROFILE_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_PROFILE_H_

namespace shardflow {

class CommandLine;

// Adds the command and its flags to `cli`.
void AddProfileCommand(CommandLine* cli);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_PROFILE_H_
