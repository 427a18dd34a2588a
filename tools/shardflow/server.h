// `shardflow server`: one task of a cluster. Serves WorkerService and MasterService until
// SIGTERM or SIGINT, then shuts down cleanly.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_SERVER_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_SERVER_H_

namespace shardflow {

class CommandLine;

// Adds the command and its flags to `cli`.
void AddServerCommand(CommandLine* cli);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_SERVER_H_
