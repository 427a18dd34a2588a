// `shardflow train --strategy ps-async|ps-sync`: what a worker process does around the training
// loop of train.cc — its set-up from the cluster file, the watch of the other tasks, the start
// (the chief initialises or restores and says the model is ready; the others wait and follow the
// global step), the chief's synchronous update loop, and the end (every worker waits for all).
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_PS_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_PS_H_

#include <atomic>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "core/platform/status.h"
#include "distributed/peer_watch.h"
#include "runtime/session.h"
#include "tools/shardflow/train_graph.h"

namespace shardflow {

// Strategies ps-async and ps-sync: checks the cluster and this process's task, and fills the
// devices of the ps tasks and of this worker.
absl::Status SetUpParameterServerWorker(TrainConfig* c);

// Strategies ps-async and ps-sync: a PeerWatch of every task but this one.
absl::StatusOr<std::shared_ptr<PeerWatch>> WatchOtherTasks(const TrainConfig& c);

// Strategy ps-sync, on the chief: runs the update (take the mean gradients, apply, hand out
// tokens) in a thread of its own, one global step after the other. A failure closes the
// accumulators and the token queue, so that no worker waits for a token forever, and is
// reported by Finish.
class SyncUpdateLoop {
 public:
  SyncUpdateLoop(Session* session, const TrainGraph& g, const TrainConfig& c, int64_t first_index,
                 int64_t steps_per_epoch)
      : session_(session), g_(g) {
    thread_ = std::thread([this, &c, first_index, steps_per_epoch] {
      std::vector<Tensor> out;
      for (int64_t index = first_index; !stop_.load(); ++index) {
        const float lr = static_cast<float>(LearningRateAt(c, index, steps_per_epoch));
        absl::Status st = session_->Run({{g_.learning_rate.name(), Tensor::Scalar(lr)}}, {},
                                        {g_.ps.update_op.node()->name()}, &out);
        if (!st.ok()) {
          if (!stop_.load()) {
            error_ = WithContext(st, "the chief's synchronous update failed: ");
            Close();
          }
          return;
        }
      }
    });
  }
  ~SyncUpdateLoop() { Finish().IgnoreError(); }

  // Stops the loop (closing what it waits on); the error that ended it early, if any.
  absl::Status Finish() {
    if (thread_.joinable()) {
      stop_.store(true);
      Close();
      thread_.join();
    }
    return error_;
  }

 private:
  void Close() {
    std::vector<Tensor> out;
    session_->Run({}, {}, {g_.ps.close_op.node()->name()}, &out).IgnoreError();
  }

  Session* const session_;
  const TrainGraph& g_;
  std::atomic<bool> stop_{false};
  absl::Status error_;  // written by the thread before it ends, read after join
  std::thread thread_;
};

// Strategies ps-async and ps-sync, once the session exists. The chief (which has initialised or
// restored the variables) resets the accumulators, starts the update loop (sync) and says the
// model is ready; the others wait for that and start at the global step (its batches, in sync;
// its share of them, in async). Every worker sets its local step (sync).
absl::Status StartParameterServerWorker(Session* session, const TrainGraph& g, const TrainConfig& c,
                                        int64_t steps_per_epoch, Position* at,
                                        std::unique_ptr<SyncUpdateLoop>* update_loop);

// Strategies ps-async and ps-sync, after this worker's last step: says it is done and waits
// until every worker is (a worker that left early would look dead to the others' PeerWatch);
// then stops the watch and the chief's update loop.
absl::Status FinishParameterServerWorker(Session* session, const TrainGraph& g,
                                         const TrainConfig& c, PeerWatch* watch,
                                         SyncUpdateLoop* update_loop);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_PS_H_
