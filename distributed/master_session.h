// MasterSession: one session of a Master (distributed/master.h) — its graph, placed once over
// the devices of the tasks that answered, and the steps it runs on them.
//
//   auto session = MasterSession::New(handle, &options, cache, config, between_graph_steps);
//   SF_RETURN_IF_ERROR(session->Init(graph_def));   // asks every task, places the graph
//   session->RunAsync(run_options, feeds, fetches, targets, &outputs, &metadata, &call, done);
//   session->Close();                               // drops its graphs on the tasks
//
// Each Run signature is pruned, partitioned by device and registered with its tasks once; a
// step sends RunGraph to every task and finishes from their replies (Note [A step waits on no
// thread] in master_session.cc). Between-graph collective steps get the same id on every
// master (Note [Between-graph step ids]).
//
// Thread safety: every method may be called concurrently; RunAsync after Close fails.
#ifndef SHARDFLOW_DISTRIBUTED_MASTER_SESSION_H_
#define SHARDFLOW_DISTRIBUTED_MASTER_SESSION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/framework/device_name.h"
#include "core/protos/config.pb.h"
#include "distributed/master.h"

namespace shardflow {

// Note [Between-graph step ids]: steps started per between-graph signature by every session of
// one master, so that a second session (a program's next one, a restarted
// MonitoredTrainingSession) goes on with new ids instead of repeating the first's.
struct BetweenGraphSteps {
  absl::Mutex mu;
  std::map<std::string, int64_t> started ABSL_GUARDED_BY(mu);
};

class MasterSession {
 public:
  // `options` is borrowed for the session's life (the master's).
  static std::shared_ptr<MasterSession> New(std::string handle, const MasterOptions* options,
                                            std::shared_ptr<WorkerCacheInterface> cache,
                                            SessionOptionsProto config,
                                            std::shared_ptr<BetweenGraphSteps> between_graph_steps);
  virtual ~MasterSession() = default;

  // Asks every task, all at once, for its devices and incarnation, and checks the graph. A
  // task that does not answer within options.connect_timeout is left out (Note [Tasks that are
  // down]); when none answers, the error names every task.
  virtual absl::Status Init(const GraphDef& graph) = 0;
  // Adds nodes to the graph (TF1's Session.extend: the ops a program adds after its first run).
  virtual absl::Status Extend(const GraphDef& graph) = 0;
  // Starts one step; `done` is called exactly once, possibly on another thread. `outputs`,
  // `metadata` (may be null) and `call` (may be null) are borrowed until then.
  virtual void RunAsync(const RunOptions& run_options,
                        std::vector<std::pair<std::string, Tensor>> feeds,
                        const std::vector<std::string>& fetches,
                        const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                        RunMetadata* metadata, StepCall* call,
                        std::function<void(absl::Status)> done) = 0;
  // Drops the session's graphs on every task, all at once, best effort (a task that cannot be
  // reached is logged and collects them after its graph idle timeout); a second call does
  // nothing.
  virtual void Close() = 0;
  // How long no call has used the session as of `now` (zero while a step runs).
  virtual absl::Duration IdleFor(absl::Time now) = 0;
};

// ConfigProto.device_filters (or ResetRequest's), parsed (INVALID_ARGUMENT naming a bad one).
// They come from the client: at most 256 (TF1 programs name one to three), so that matching
// them against every task and device stays cheap.
absl::StatusOr<std::vector<DeviceName>> ParseDeviceFilters(const std::vector<std::string>& names);
// Whether some device of task `id` could match a filter (every task without filters).
bool TaskPassesFilters(const std::vector<DeviceName>& filters, const TaskId& id);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_MASTER_SESSION_H_
