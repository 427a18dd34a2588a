// gRPC's I/O polling strategy for every shardflow process: "poll" unless the user chose one
// with GRPC_POLL_STRATEGY.
//
// Why: with gRPC's default ("epoll1") one designated thread waits in epoll and wakes the thread
// that owns the call, so every completion costs a cross-CPU wakeup; on the 2-vCPU VM these
// figures come from, that wakeup dominated. Same binary, same run, 2026-11-21
// (build/bin/transfer_benchmark --rounds 8, alternating): 4-byte round trip 109-120 µs with
// epoll1 vs 83-87 µs with poll; 64 MB 19.6-20.2 ms vs 13.6-13.8 ms; 1 MB 446-471 µs vs 294 µs.
// shardflow keeps few connections per process, where poll's cost per file descriptor does not
// matter.
//
// This runs while libshardflow is loaded, before the first gRPC object initialises gRPC (which
// reads the variable once).
#include <cstdlib>

namespace shardflow {
namespace {

const bool kPollStrategySet = [] {
  setenv("GRPC_POLL_STRATEGY", "poll", /*overwrite=*/0);
  return true;
}();

}  // namespace
}  // namespace shardflow
