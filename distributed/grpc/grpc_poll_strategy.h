// gRPC's I/O polling strategy, chosen explicitly by the process that serves (the CLI's
// `--grpc-poll-strategy`, ServerOptions::grpc_poll_strategy) instead of by loading the library.
//
//   SF_RETURN_IF_ERROR(ChooseGrpcPollStrategy("poll"));   // before any gRPC object exists
//
// Why "poll" is shardflow's default (Note [Poll strategy] in grpc_poll_strategy.cc): with gRPC's
// own default ("epoll1") one designated thread waits in epoll and wakes the thread that owns the
// call, so every completion costs a cross-CPU wake-up, which dominated small transfers and
// slowed 64 MB ones on the 2-vCPU machines measured (docs/distributed.md, "Measured transfer
// speed").
//
// Thread safety: call before gRPC is initialised, from one thread.
#ifndef SHARDFLOW_DISTRIBUTED_GRPC_GRPC_POLL_STRATEGY_H_
#define SHARDFLOW_DISTRIBUTED_GRPC_GRPC_POLL_STRATEGY_H_

#include <string>

#include "absl/status/status.h"

namespace shardflow {

inline constexpr char kDefaultGrpcPollStrategy[] = "poll";

// Sets GRPC_POLL_STRATEGY to `strategy` ("poll", "epoll1", or "" for gRPC's own default) unless
// the user set the variable: theirs wins. INVALID_ARGUMENT for another name;
// FAILED_PRECONDITION when gRPC is already initialised in this process with another strategy
// (it reads the variable once).
absl::Status ChooseGrpcPollStrategy(const std::string& strategy);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_GRPC_GRPC_POLL_STRATEGY_H_
