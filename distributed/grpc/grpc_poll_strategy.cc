#include "distributed/grpc/grpc_poll_strategy.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "grpc/grpc.h"

namespace shardflow {

// Note [Poll strategy]
// With gRPC's default ("epoll1") one designated thread waits in epoll and wakes the thread that
// owns the call, so every completion costs a cross-CPU wakeup; on the 2-vCPU VM these figures
// come from, that wakeup dominated. Same binary, same run, 2026-11-21
// (build/bin/transfer_benchmark --rounds 8, alternating): 4-byte round trip 109-120 µs with
// epoll1 vs 83-87 µs with poll; 64 MB 19.6-20.2 ms vs 13.6-13.8 ms; 1 MB 446-471 µs vs 294 µs.
// shardflow keeps few connections per process, where poll's cost per file descriptor does not
// matter. The choice used to be made by a static initialiser of the library, for every process
// that loaded it (Python included); now the process that serves makes it.
absl::Status ChooseGrpcPollStrategy(const std::string& strategy) {
  if (!strategy.empty() && strategy != "poll" && strategy != "epoll1") {
    return absl::InvalidArgumentError(absl::StrCat("gRPC poll strategy '", strategy,
                                                   "' is not one of poll, epoll1 (or empty for "
                                                   "gRPC's default)"));
  }
  const char* user = std::getenv("GRPC_POLL_STRATEGY");
  if (user != nullptr) return absl::OkStatus();  // the user's choice wins
  if (strategy.empty()) return absl::OkStatus();
  if (grpc_is_initialized()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "gRPC is already initialised in this process, so its poll strategy can no longer be "
        "set to '",
        strategy, "'; choose it before creating sessions or servers"));
  }
  setenv("GRPC_POLL_STRATEGY", strategy.c_str(), /*overwrite=*/0);
  return absl::OkStatus();
}

}  // namespace shardflow
