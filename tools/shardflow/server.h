// `shardflow server`: one task of a cluster. Serves WorkerService and MasterService until
// SIGTERM or SIGINT, then shuts down cleanly.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_SERVER_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_SERVER_H_

namespace shardflow {

// Returns the process exit code (0 ok, 1 failed, 2 bad flags).
int ServerMain(int argc, char** argv, int first);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_SERVER_H_
