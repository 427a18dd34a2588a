// ExecutorBarrier: runs the executors of one step (one per device of a task) and joins them.
//
//   ExecutorBarrier::Run(executors, args, rendezvous,
//                        [](const absl::Status& s) { ... all done; s is the step's status });
//
// Every executor gets `args` with on_abort set so that the first error aborts `rendezvous`
// (every pending _Recv, on every device, returns that error) and the step's collectives
// (args.collective_executor; when the caller sets none, a RingCollectiveExecutor over
// `rendezvous`, runtime/collectives/ring.h, alive until `done`), and becomes the step's status.
// The local session and a worker's RunGraph both run their steps this way.
//
// Contracts: `done` is called exactly once, after the last executor has finished, possibly on
// another thread. `rendezvous` and the executors are borrowed until then. The executors start
// on their devices' threads, except the first one when `run_first_here` is set: it then starts
// on the calling thread (which runs its ready cheap work before Run returns).
#ifndef SHARDFLOW_RUNTIME_EXECUTOR_BARRIER_H_
#define SHARDFLOW_RUNTIME_EXECUTOR_BARRIER_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "core/framework/rendezvous.h"
#include "runtime/executor.h"

namespace shardflow {

class ExecutorBarrier {
 public:
  using DoneCallback = std::function<void(const absl::Status&)>;

  static void Run(const std::vector<Executor*>& executors, Executor::Args args,
                  Rendezvous* rendezvous, DoneCallback done, bool run_first_here = false);
};

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_EXECUTOR_BARRIER_H_
