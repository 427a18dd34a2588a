#include "runtime/executor_barrier.h"

#include <memory>
#include <optional>

#include "absl/synchronization/mutex.h"
#include "core/framework/collective.h"
#include "runtime/collectives/ring.h"

namespace shardflow {
namespace {

// What the executors of one step share until the last one is done.
struct BarrierState {
  explicit BarrierState(int pending, ExecutorBarrier::DoneCallback done)
      : pending(pending), done(std::move(done)) {}
  // The step's collectives when the caller brings none: a ring over the step's rendezvous
  // (in the state itself: no allocation of its own on every step).
  std::optional<RingCollectiveExecutor> ring;
  absl::Mutex mu;
  int pending ABSL_GUARDED_BY(mu);
  absl::Status status ABSL_GUARDED_BY(mu);
  ExecutorBarrier::DoneCallback done;
};

}  // namespace

void ExecutorBarrier::Run(const std::vector<Executor*>& executors, Executor::Args args,
                          Rendezvous* rendezvous, DoneCallback done, bool run_first_here) {
  if (executors.empty()) {
    done(absl::OkStatus());
    return;
  }
  auto state = std::make_shared<BarrierState>(static_cast<int>(executors.size()), std::move(done));
  if (args.collective_executor == nullptr) {
    state->ring.emplace(rendezvous);
    args.collective_executor = &*state->ring;
  }
  CollectiveExecutor* collectives = args.collective_executor;
  args.on_abort = [rendezvous, collectives](const absl::Status& s) {
    rendezvous->StartAbort(s);
    if (collectives != nullptr) collectives->StartAbort(s);
  };
  auto executor_done = [state](const absl::Status& s) {
    absl::Status status;
    {
      absl::MutexLock lock(&state->mu);
      if (state->status.ok() && !s.ok()) state->status = s;
      if (--state->pending > 0) return;
      status = state->status;
    }
    // Moved out first: `done` may drop the rendezvous the ring refers to.
    ExecutorBarrier::DoneCallback done = std::move(state->done);
    done(status);
  };
  const size_t first_scheduled = run_first_here ? 1 : 0;
  for (size_t i = first_scheduled; i < executors.size(); ++i) {
    Executor* ex = executors[i];
    ex->device()->Schedule([ex, args, executor_done] { ex->RunAsync(args, executor_done); });
  }
  if (run_first_here) executors[0]->RunAsync(args, executor_done);
}

}  // namespace shardflow
