#include "distributed/master_session.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string_view>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/framework/op_names.h"
#include "core/platform/status.h"
#include "distributed/worker.h"
#include "glog/logging.h"
#include "partitioner/cost_model.h"
#include "partitioner/partition.h"
#include "partitioner/placer.h"
#include "runtime/graph_execution_state.h"
#include "runtime/step_stats_collector.h"
#include "runtime/subgraph.h"

namespace shardflow {
namespace {

// Note [Bounded steps and plans] (in MasterSessionImpl).
constexpr size_t kMaxRunNames = size_t{1} << 16;       // feeds + fetches + targets of a step
constexpr size_t kMaxCachedPlans = 128;                // per session
constexpr int64_t kMaxCachedNodes = int64_t{1} << 19;  // in a session's cached plans

std::string TaskOf(const std::string& device) {
  auto parsed = DeviceName::Parse(device);
  return parsed.ok() ? parsed->TaskName() : std::string();
}

int64_t NewStepId() {
  static absl::Mutex mu(absl::kConstInit);
  static std::mt19937_64* rng = new std::mt19937_64(std::random_device{}());
  absl::MutexLock lock(&mu);
  return static_cast<int64_t>((*rng)() >> 1);
}

// Shifts a task's step stats into the master's clock when they fall outside the RunGraph call
// as the master saw it [sent, received]: the task's step is centred in that window.
void AlignClock(int64_t sent, int64_t received, StepStats* stats) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const DeviceStepStats& d : stats->dev_stats()) {
    for (const NodeExecStats& n : d.node_stats()) {
      lo = std::min(lo, n.start_micros());
      hi = std::max(hi, n.end_micros());
    }
  }
  if (lo > hi || (lo >= sent && hi <= received)) return;
  int64_t shift = ((sent + received) - (lo + hi)) / 2;
  for (DeviceStepStats& d : *stats->mutable_dev_stats()) {
    for (NodeExecStats& n : *d.mutable_node_stats()) {
      n.set_start_micros(n.start_micros() + shift);
      n.set_end_micros(n.end_micros() + shift);
    }
  }
}

// The root cause among a failed step's errors: not the aborts it caused elsewhere.
absl::Status PickError(const std::vector<absl::Status>& errors) {
  for (const absl::Status& s : errors) {
    if (s.code() != absl::StatusCode::kAborted && s.code() != absl::StatusCode::kCancelled) {
      return s;
    }
  }
  return errors.empty() ? absl::OkStatus() : errors[0];
}
}  // namespace

absl::StatusOr<std::vector<DeviceName>> ParseDeviceFilters(const std::vector<std::string>& names) {
  constexpr int kMaxDeviceFilters = 256;
  if (names.size() > kMaxDeviceFilters) {
    return absl::InvalidArgumentError(absl::StrCat("device_filters has ", names.size(),
                                                   " entries; at most ", kMaxDeviceFilters,
                                                   " (partial device names such as '/job:ps')"));
  }
  std::vector<DeviceName> filters;
  for (const std::string& f : names) {
    absl::StatusOr<DeviceName> spec = DeviceName::Parse(f);
    if (!spec.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device_filters: '", f, "' is not a device name (", spec.status().message(), ")"));
    }
    filters.push_back(*std::move(spec));
  }
  return filters;
}

bool TaskPassesFilters(const std::vector<DeviceName>& filters, const TaskId& id) {
  if (filters.empty()) return true;
  DeviceName task;
  task.has_job = task.has_replica = task.has_task = true;
  task.job = id.job;
  task.task = id.task;
  for (const DeviceName& f : filters) {
    if (f.IsCompatibleWith(task)) return true;
  }
  return false;
}

class MasterSessionImpl final : public MasterSession {
 public:
  MasterSessionImpl(std::string handle, const MasterOptions* options,
                    std::shared_ptr<WorkerCacheInterface> cache, SessionOptionsProto config,
                    std::shared_ptr<BetweenGraphSteps> between_graph_steps)
      : handle_(std::move(handle)),
        options_(options),
        cache_(std::move(cache)),
        config_(std::move(config)),
        between_graph_steps_(std::move(between_graph_steps)),
        last_used_(absl::Now()) {}

  // Asks every task, all at once, for its devices and incarnation, and checks the graph. A
  // task that does not answer within options.connect_timeout is left out (Note [Tasks that are
  // down]); when none answers, the error names every task.
  absl::Status Init(const GraphDef& graph) override {
    SF_RETURN_IF_ERROR(CheckClientGraph(graph));
    SF_RETURN_IF_ERROR(Graph::FromGraphDef(graph).status());
    struct Probe {
      TaskId id;
      Task task;
      GetStatusResponse status;
      absl::Status result;
    };
    // Shared with the callbacks, which may still be unlocking when the wait below ends.
    struct Probes {
      std::vector<Probe> probes;
      absl::Mutex mu;
      int pending ABSL_GUARDED_BY(mu) = 0;
    };
    auto state = std::make_shared<Probes>();
    SF_RETURN_IF_ERROR(ParseDeviceFilters());
    for (const TaskId& id : options_->cluster.tasks()) {
      Probe p;
      p.id = id;
      p.task.name = ClusterSpec::TaskName(id.job, id.task);
      if (!TaskPassesFilters(id)) {
        filtered_out_.insert(p.task.name);
        continue;  // never contacted
      }
      SF_ASSIGN_OR_RETURN(p.task.address, options_->cluster.TaskAddress(id.job, id.task));
      if (options_->local_worker != nullptr && options_->local_worker->task() == p.task.name) {
        p.task.client = options_->local_worker;  // this process's own task: no RPC
      } else {
        SF_ASSIGN_OR_RETURN(p.task.client, cache_->GetWorker(p.task.address, p.task.name));
      }
      state->probes.push_back(std::move(p));
    }
    if (state->probes.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "no task of the cluster matches the session's device_filters [",
          absl::StrJoin(config_.device_filters(), ", "), "]; the cluster's tasks are ",
          absl::StrJoin(options_->cluster.tasks(), ", ", [](std::string* out, const TaskId& id) {
            absl::StrAppend(out, ClusterSpec::TaskName(id.job, id.task));
          })));
    }
    const int64_t timeout_ms =
        std::max<int64_t>(1, absl::ToInt64Milliseconds(options_->connect_timeout));
    {
      absl::MutexLock lock(&state->mu);
      state->pending = static_cast<int>(state->probes.size());
    }
    for (Probe& p : state->probes) {
      p.task.client->GetStatusAsync(
          &p.status,
          [state, &p](const absl::Status& s) {
            absl::MutexLock lock(&state->mu);
            p.result = s;
            --state->pending;
          },
          timeout_ms, /*wait_for_ready=*/true);
    }
    {
      absl::MutexLock lock(&state->mu);
      auto all_done = [&state]()
                          ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) { return state->pending == 0; };
      state->mu.Await(absl::Condition(&all_done));
    }
    std::vector<Probe>& probes = state->probes;
    std::vector<std::string> down;
    for (Probe& p : probes) {
      if (!p.result.ok()) {
        down.push_back(p.task.name);
        unreachable_[p.task.name] = absl::UnavailableError(
            absl::StrCat(p.result.message(), "; is `shardflow server --job ", p.id.job, " --task ",
                         p.id.task, "` running at ", p.task.address, "?"));
        continue;
      }
      if (p.status.task() != p.task.name) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the server at ", p.task.address, " is task ", p.status.task(),
            ", but the cluster spec says ", p.task.name, " is there; fix the cluster spec"));
      }
      SF_RETURN_IF_ERROR(CheckSameCluster(p.task.name, p.status));
      p.task.incarnation = p.status.incarnation();
      for (const WorkerDevice& d : p.status.devices()) {
        if (!DevicePassesFilters(d.name())) continue;
        devices_.push_back(DeviceAttributes{d.name(), d.device_type(), d.memory_limit()});
        device_task_[d.name()] = p.task.name;
      }
      tasks_[p.task.name] = std::move(p.task);
    }
    // Ops that request no device go to the master's own task, as TF1's (its master places them
    // on the client's task): the constraints policy takes the first device that can run an op,
    // so this task's devices come first. Between-graph programs rely on it (each worker's
    // unplaced ops — MonitoredTrainingSession's, summaries — stay on its own task).
    if (options_->local_worker != nullptr) {
      const std::string& own = options_->local_worker->task();
      std::stable_partition(devices_.begin(), devices_.end(), [&](const DeviceAttributes& d) {
        return device_task_.at(d.name) == own;
      });
    }
    if (tasks_.empty()) {
      return unreachable_.size() == 1
                 ? unreachable_.begin()->second
                 : absl::UnavailableError(absl::StrCat(
                       "no task of the cluster answered within ",
                       absl::FormatDuration(options_->connect_timeout), ": ",
                       absl::StrJoin(unreachable_, "; ", [](std::string* out, const auto& kv) {
                         absl::StrAppend(out, kv.second.message());
                       })));
    }
    if (!down.empty()) {
      LOG(WARNING) << "master: session " << handle_ << " leaves out task(s) "
                   << absl::StrJoin(down, ", ")
                   << ", which did not answer; its graph may use only the others";
    }
    GraphExecutionStateOptions state_options;
    state_options.devices = devices_;
    state_options.config = config_;
    state_options.topology = [this] { return CostCluster(); };
    state_options.check_graph = [this](const Graph& g) { return CheckRequestedTasksAreUp(g); };
    state_options.between_graph_collectives = true;
    state_options.incarnation = [this](const std::string& device) -> uint64_t {
      auto t = device_task_.find(device);
      return t == device_task_.end() ? 0 : tasks_.at(t->second).incarnation;
    };
    state_ = std::make_unique<GraphExecutionState>(std::move(state_options));
    return state_->Create(graph);
  }

  absl::Status Extend(const GraphDef& graph) override {
    {
      absl::MutexLock lock(&mu_);
      SF_RETURN_IF_ERROR(CheckOpen());
    }
    Touch(0);
    return state_->Extend(graph);
  }

  // Note [A step waits on no thread]
  // RunAsync prepares the signature (the first time) and sends RunGraph to every task; it
  // returns then. The step finishes from the completion of the last RunGraph, on the worker
  // clients' queue thread, which calls `done`. A step that waits (on a slow kernel, on a
  // transfer, for its deadline) therefore holds no thread of the master, and any number of
  // them cannot keep other sessions from being served. The caller's cancellation and the
  // step's deadline end it on every task: cancellation through AbortStep and the RunGraph
  // calls' own cancellation, the deadline through RunGraphRequest.timeout_ms and the calls'
  // gRPC deadlines.
  void RunAsync(const RunOptions& run_options, std::vector<std::pair<std::string, Tensor>> feeds,
                const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                std::vector<Tensor>* outputs, RunMetadata* metadata, StepCall* call,
                std::function<void(absl::Status)> done) override {
    Touch(+1);
    std::function<void(absl::Status)> finish = [this, done = std::move(done)](absl::Status s) {
      Touch(-1);
      done(std::move(s));
    };
    if (fetches.empty() && targets.empty()) {
      finish(absl::InvalidArgumentError("Run needs at least one fetch or target"));
      return;
    }
    // Note [Bounded steps and plans]: a step names a bounded number of things, each distinct
    // fetch is computed once and its tensor shared by the repeats.
    if (feeds.size() + fetches.size() + targets.size() > kMaxRunNames) {
      finish(absl::InvalidArgumentError(
          absl::StrCat("a step names ", feeds.size(), " feeds, ", fetches.size(), " fetches and ",
                       targets.size(), " targets; at most ", kMaxRunNames, " in all")));
      return;
    }
    std::vector<std::string> distinct;
    std::vector<size_t> slot;
    {
      std::map<std::string_view, size_t> seen;
      slot.reserve(fetches.size());
      for (const std::string& f : fetches) {
        auto [it, fresh] = seen.emplace(f, distinct.size());
        if (fresh) distinct.push_back(f);
        slot.push_back(it->second);
      }
    }
    if (distinct.size() != fetches.size()) {
      auto unique_outputs = std::make_shared<std::vector<Tensor>>();
      std::vector<Tensor>* caller_outputs = outputs;
      outputs = unique_outputs.get();
      finish = [finish = std::move(finish), unique_outputs, caller_outputs,
                slot = std::move(slot)](absl::Status s) {
        if (s.ok()) {
          caller_outputs->clear();
          for (size_t i : slot) caller_outputs->push_back((*unique_outputs)[i]);
        }
        finish(std::move(s));
      };
    }
    std::vector<std::string> run_targets = targets;
    std::sort(run_targets.begin(), run_targets.end());
    run_targets.erase(std::unique(run_targets.begin(), run_targets.end()), run_targets.end());
    // The step's time limit: the tightest of the options', the caller's and the master's.
    int64_t timeout_ms = run_options.timeout_in_ms() > 0 ? run_options.timeout_in_ms()
                                                         : config_.operation_timeout_in_ms();
    if (timeout_ms < 0) timeout_ms = 0;
    auto tighten = [&timeout_ms](int64_t ms) {
      if (timeout_ms <= 0 || ms < timeout_ms) timeout_ms = ms;
    };
    if (options_->max_step_time > absl::ZeroDuration()) {
      tighten(std::max<int64_t>(1, absl::ToInt64Milliseconds(options_->max_step_time)));
    }
    const absl::Time start = absl::Now();
    if (call != nullptr && call->deadline != absl::InfiniteFuture()) {
      // Rounded up: the tasks' timers must not end the step before the caller's deadline.
      const int64_t left =
          absl::ToInt64Milliseconds(absl::Ceil(call->deadline - start, absl::Milliseconds(1)));
      if (left <= 0) {
        finish(absl::DeadlineExceededError(
            "the step's deadline passed before it started; give it more time"));
        return;
      }
      tighten(left);
    }
    auto prepared = GetOrPrepare(feeds, distinct, run_targets);
    if (!prepared.ok()) {
      finish(prepared.status());
      return;
    }
    absl::Status checked = CheckFeeds((*prepared)->feeds, feeds);
    if (!checked.ok()) {
      finish(checked);
      return;
    }
    auto step = std::make_shared<Step>();
    step->prepared = *prepared;
    step->fetches = distinct.size();
    step->outputs = outputs;
    step->metadata = metadata;
    step->trace = run_options.trace_level() == RunOptions::FULL_TRACE && metadata != nullptr;
    step->report_placement = run_options.report_placement();
    step->step_id = step->prepared->plan->between_graph_signature.empty()
                        ? NewStepId()
                        : NextBetweenGraphStepId(step->prepared->plan->between_graph_signature);
    step->caller = call;
    if (timeout_ms > 0) step->time_limit = start + absl::Milliseconds(timeout_ms);
    step->done = std::move(finish);
    for (const auto& [task, handle] : step->prepared->handles) {
      auto c = std::make_unique<Step::TaskCall>();
      c->task = task;
      c->client = tasks_.at(task).client;
      c->request.set_graph_handle(handle);
      c->request.set_step_id(step->step_id);
      c->request.set_trace(step->trace);
      c->request.set_timeout_ms(timeout_ms);
      c->request.set_check_numerics(run_options.check_numerics());
      step->calls.push_back(std::move(c));
    }
    for (size_t i = 0; i < feeds.size(); ++i) {
      for (auto& c : step->calls) {
        if (c->task != step->prepared->arg_task[i]) continue;
        IndexedTensor* arg = c->request.add_args();
        arg->set_index(static_cast<int>(i));
        feeds[i].second.AsProto(arg->mutable_tensor());
      }
    }
    feeds.clear();  // their bytes are in the requests now
    step->pending = static_cast<int>(step->calls.size());
    // The gRPC deadline leaves the worker's own timeout time to report first.
    const int64_t deadline_ms = timeout_ms > 0 ? timeout_ms + 2000 : 0;
    if (call != nullptr) {
      call->cancellation.SetCancelHook([step] {
        step->Abort(absl::CancelledError(
                        absl::StrCat("step ", step->step_id, " was cancelled by its caller")),
                    nullptr, /*cancel_calls=*/true);
      });
    }
    for (auto& c : step->calls) {
      Step::TaskCall* tc = c.get();
      tc->sent = NowMicros();
      tc->client->RunGraphAsync(&tc->request, &tc->response, deadline_ms, &tc->cancel,
                                [this, step, tc](const absl::Status& s) {
                                  tc->received = NowMicros();
                                  step->OnTaskDone(tc, s, this);
                                });
    }
  }

  // Drops the session's graphs on every task, all at once. Best effort, as TensorFlow's: a task
  // that cannot be reached (lost, its host gone) is logged and left to collect them itself
  // (WorkerOptions::graph_idle_timeout); the session is closed either way, within the client's
  // cleanup deadline however many graphs and tasks it has (each call waited for in turn made a
  // lost host cost 30 s per graph).
  void Close() override {
    std::vector<std::pair<std::string, std::string>> handles;  // task, graph handle
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      closed_ = true;
      for (const auto& [key, prepared] : cache_map_) {
        for (const auto& [task, handle] : prepared->handles) handles.emplace_back(task, handle);
      }
      cache_map_.clear();
      cache_tick_.clear();
      cached_nodes_ = 0;
    }
    if (handles.empty()) return;
    struct Pending {
      absl::Mutex mu;
      size_t left ABSL_GUARDED_BY(mu) = 0;
      std::map<std::string, absl::Status> failed ABSL_GUARDED_BY(mu);  // task -> first error
    };
    auto pending = std::make_shared<Pending>();
    {
      absl::MutexLock lock(&pending->mu);
      pending->left = handles.size();
    }
    for (const auto& [task, handle] : handles) {
      tasks_.at(task).client->CleanupGraphAsync(handle,
                                                [pending, task = task](const absl::Status& s) {
                                                  absl::MutexLock lock(&pending->mu);
                                                  if (!s.ok()) pending->failed.emplace(task, s);
                                                  --pending->left;
                                                });
    }
    absl::MutexLock lock(&pending->mu);
    pending->mu.Await(absl::Condition(
        +[](size_t* left) { return *left == 0; }, &pending->left));
    for (const auto& [task, s] : pending->failed) {
      // A task that is shutting down (this process's own, as it exits) or collected the graph
      // already has nothing left to drop.
      const bool gone = absl::StrContains(s.message(), "shut down") ||
                        absl::StrContains(s.message(), "shutting down") ||
                        (absl::IsNotFound(s) && absl::StrContains(s.message(), "has no graph"));
      LOG_IF(WARNING, !gone) << "master: closing session " << handle_ << ": " << s.message()
                             << " (task " << task << " drops the session's graphs itself when "
                             << "they have been idle for its graph idle timeout)";
    }
  }

  // How long no call has used the session as of `now` (zero while a step runs).
  absl::Duration IdleFor(absl::Time now) override {
    absl::MutexLock lock(&use_mu_);
    return steps_running_ > 0 ? absl::ZeroDuration() : now - last_used_;
  }

 private:
  struct Task {
    std::string name, address;
    std::shared_ptr<WorkerInterface> client;
    uint64_t incarnation = 0;
  };
  struct Prepared {
    std::vector<FeedSpec> feeds;
    std::map<std::string, std::string> handles;  // task -> graph handle
    std::vector<std::string> arg_task;           // the task of each feed's _Arg
    std::vector<GraphDef> partitions;
    std::map<std::string, std::string> placement;
    std::shared_ptr<const ExecutionPlan> plan;  // the optimized graph and its report
    int64_t nodes = 0;                          // in all its partitions
  };

  // Note [Between-graph step ids]. The tasks of a between-graph collective group run their
  // own graphs from their own masters, and their members meet only in one step id: the n-th
  // step with a given between-graph signature (its groups, instances, member devices and
  // incarnations; runtime/collectives/group_resolution.h) that any session of a master starts
  // gets the same id on every master, FNV-1a of the signature and n. Every task must run those
  // steps in the same order, one at a time (as every data-parallel loop does); a restarted task has
  // a new incarnation, hence new ids, and cannot meet a stale peer.
  int64_t NextBetweenGraphStepId(const std::string& signature) {
    int64_t n = 0;
    {
      absl::MutexLock lock(&between_graph_steps_->mu);
      n = between_graph_steps_->started[signature]++;
    }
    uint64_t h = 14695981039346656037ull;
    auto mix = [&h](unsigned char c) {
      h ^= c;
      h *= 1099511628211ull;
    };
    for (unsigned char c : signature) mix(c);
    for (int i = 0; i < 8; ++i)
      mix(static_cast<unsigned char>(static_cast<uint64_t>(n) >> (8 * i)));
    return static_cast<int64_t>(h >> 1);
  }

  // Forgets a signature whose graph a task no longer has, so that the next step registers it
  // again.
  void ForgetGraph(const std::shared_ptr<const Prepared>& prepared) {
    absl::MutexLock lock(&mu_);
    for (auto it = cache_map_.begin(); it != cache_map_.end(); ++it) {
      if (it->second == prepared) {
        EraseLocked(it);
        return;
      }
    }
  }

  // One step in flight: a RunGraph per task, finished by the last reply.
  struct Step {
    struct TaskCall {
      std::string task;
      std::shared_ptr<WorkerInterface> client;
      RunGraphRequest request;
      RunGraphResponse response;
      CallCancellation cancel;
      int64_t sent = 0, received = 0;
    };
    std::shared_ptr<const Prepared> prepared;
    std::vector<std::unique_ptr<TaskCall>> calls;
    size_t fetches = 0;
    std::vector<Tensor>* outputs = nullptr;
    RunMetadata* metadata = nullptr;
    bool trace = false;
    bool report_placement = false;  // RunOptions.report_placement
    int64_t step_id = 0;
    StepCall* caller = nullptr;
    // The end of the step's time limit (the tightest of the options', the caller's and the
    // master's); InfiniteFuture when it has none.
    absl::Time time_limit = absl::InfiniteFuture();
    std::function<void(absl::Status)> done;

    absl::Mutex mu;
    int pending ABSL_GUARDED_BY(mu) = 0;
    std::vector<absl::Status> errors ABSL_GUARDED_BY(mu);
    bool aborted ABSL_GUARDED_BY(mu) = false;
    // A task of the step restarted (Note [Restarted tasks]): the step's error, whatever the
    // others say.
    absl::Status restarted ABSL_GUARDED_BY(mu);

    // Aborts the step on every task whose RunGraph has not answered (once). The RunGraph calls
    // themselves are cancelled only when the caller cancelled the step: after a task's error
    // they go on until their tasks answer, so that a lost task's own error (UNAVAILABLE, naming
    // it) is not masked by the cancellations it caused elsewhere (PickError).
    void Abort(const absl::Status& status, const TaskCall* except = nullptr,
               bool cancel_calls = false) {
      {
        absl::MutexLock lock(&mu);
        if (aborted) return;
        aborted = true;
      }
      for (auto& other : calls) {
        if (other.get() == except) continue;
        other->client->AbortStepAsync(step_id, status, [](const absl::Status&) {});
        if (cancel_calls) other->cancel.Cancel();
      }
    }

    void OnTaskDone(TaskCall* call, const absl::Status& status, MasterSessionImpl* session) {
      absl::Status s = status;
      if (!s.ok()) {
        if (absl::IsNotFound(s) && absl::StrContains(s.message(), "has no graph")) {
          // The worker names its incarnation: the one this session knows means it collected
          // an idle graph (register it again next time); another, that the task restarted.
          if (absl::StrContains(s.message(), session->IncarnationText(call->task))) {
            session->ForgetGraph(prepared);
          } else {
            s = session->TaskRestarted(call->task);
            absl::MutexLock lock(&mu);
            restarted = s;
          }
        }
        bool first_error = false;
        {
          absl::MutexLock lock(&mu);
          first_error = errors.empty();
          errors.push_back(s);
        }
        // A task lost (the errors of the step's other tasks follow from the first). One that
        // is shutting down (its process ends, e.g. after training, while a background step
        // such as a sync-replicas update is still in flight) is expected: not a warning.
        if (first_error && absl::IsUnavailable(s)) {
          const bool ending = absl::StrContains(s.message(), "is shutting down");
          LOG_IF(WARNING, !ending)
              << "master: session " << session->handle_ << ": step " << step_id << " failed: task "
              << call->task << " is unavailable: " << s.message();
          LOG_IF(INFO, ending) << "master: session " << session->handle_ << ": step " << step_id
                               << " ended: task " << call->task << " is shutting down";
        }
        Abort(s, call);
      }
      {
        absl::MutexLock lock(&mu);
        if (--pending > 0) return;
      }
      if (caller != nullptr) caller->cancellation.ClearCancelHook();
      done(Finish());
    }

    // Collects the fetched tensors and the run metadata once every task has answered.
    absl::Status Finish() {
      {
        absl::MutexLock lock(&mu);
        if (!restarted.ok()) return restarted;
        if (!errors.empty()) {
          absl::Status error = PickError(errors);
          // A step its time limit ended (the caller's deadline, the options' timeout, the
          // master's max_step_time) fails with DEADLINE_EXCEEDED, whatever the cancellations
          // it caused on the tasks said first (one task's timer firing makes another report
          // that a pull stopped).
          const absl::Time now = absl::Now();
          const bool over = now >= time_limit || (caller != nullptr && now >= caller->deadline);
          if (over && !absl::IsDeadlineExceeded(error)) {
            return absl::DeadlineExceededError(
                absl::StrCat("the step's deadline passed (", error.message(), ")"));
          }
          return error;
        }
      }
      outputs->assign(fetches, Tensor());
      for (auto& c : calls) {
        for (const IndexedTensor& r : c->response.retvals()) {
          if (r.index() < 0 || r.index() >= static_cast<int>(fetches)) {
            return absl::InternalError(
                absl::StrCat("task ", c->task, " returned fetch ", r.index(), " of ", fetches));
          }
          auto t = Tensor::FromProto(r.tensor());
          if (!t.ok()) {
            return absl::InternalError(
                absl::StrCat("task ", c->task, " returned fetch ", r.index(),
                             " as an invalid tensor: ", t.status().message()));
          }
          (*outputs)[r.index()] = std::move(t).value();
        }
      }
      if (metadata != nullptr) {
        if (trace) {
          for (auto& c : calls) {
            StepStats* stats = c->response.mutable_step_stats();
            AlignClock(c->sent, c->received, stats);
            for (DeviceStepStats& d : *stats->mutable_dev_stats()) {
              *metadata->mutable_step_stats()->add_dev_stats() = std::move(d);
            }
          }
          for (const GraphDef& part : prepared->partitions)
            *metadata->add_partition_graphs() = part;
          *metadata->mutable_optimized_graph() = prepared->plan->optimized_graph;
          *metadata->mutable_optimizer_report() = prepared->plan->optimizer_report;
        }
        // Every node's device: with a trace, or when the client asks (its caller gave a
        // RunMetadata); a reply to every step would otherwise carry a map of the whole graph.
        if (trace || report_placement) {
          for (const auto& [node, device] : prepared->placement) {
            (*metadata->mutable_placement())[node] = device;
          }
        }
      }
      return absl::OkStatus();
    }
  };

  // Counts steps in flight (delta +1 when one starts, -1 when it ends) and marks the session
  // used.
  void Touch(int delta) {
    absl::MutexLock lock(&use_mu_);
    steps_running_ += delta;
    last_used_ = absl::Now();
  }

  // How a worker writes the incarnation of task `task` this session knows, in its errors.
  std::string IncarnationText(const std::string& task) const {
    return absl::StrCat("(incarnation ", absl::Hex(tasks_.at(task).incarnation), ")");
  }

  // Note [Restarted tasks]. A task that restarted since the session was created lost what the
  // session's steps keep there (variables, queues, tables) and its rendezvous keys name the old
  // incarnation: the session cannot go on. Its steps fail ABORTED from then on, as TensorFlow's
  // do (a TF1 program, or MonitoredSession's recovery, opens a new session and initializes or
  // restores again); re-registering the graph would fail on the incarnation check anyway.
  absl::Status TaskRestarted(const std::string& task) {
    absl::MutexLock lock(&mu_);
    if (lost_.ok()) {
      lost_ = absl::AbortedError(absl::StrCat(
          "task ", task, " restarted since session ", handle_,
          " was created (it is a new "
          "incarnation: its variables, queues and tables are gone); close this session and open "
          "a new one, then initialize or restore the variables again"));
      LOG(WARNING) << "master: " << lost_.message();
    }
    return lost_;
  }

  absl::Status CheckOpen() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    if (!lost_.ok()) return lost_;
    return absl::OkStatus();
  }

  // The cost model's view of the cluster: in-process links within a task, options.link across.
  DeviceTopology CostCluster() const {
    DeviceTopology local = DeviceTopology::ForDevices(devices_);
    TopologyDescription d = local.description();
    for (size_t a = 0; a < devices_.size(); ++a) {
      for (size_t b = 0; b < devices_.size(); ++b) {
        if (a == b || device_task_.at(devices_[a].name) == device_task_.at(devices_[b].name)) {
          continue;
        }
        LinkDescription* l = d.add_links();
        *l = options_->inter_task_link;
        l->set_src(devices_[a].name);
        l->set_dst(devices_[b].name);
      }
    }
    auto cluster = DeviceTopology::FromDescription(d);
    return cluster.ok() ? *cluster : local;
  }

  // Note [Tasks that are down]
  // A session is created with the tasks that answer; one that is down only matters to a graph
  // that asks for it. Such a graph fails here with the task's own error (UNAVAILABLE, its
  // address and the command that starts it), not with the placer's "no such device".
  // A task started with another cluster spec than this master's (a launcher that gave the
  // tasks different files) would exchange tensors with the wrong peers: refuse, naming the task
  // and the first difference.
  absl::Status CheckSameCluster(const std::string& task, const GetStatusResponse& status) const {
    if (status.cluster().empty()) return absl::OkStatus();
    std::string difference = options_->cluster.DifferenceFrom(
        std::map<std::string, std::string>(status.cluster().begin(), status.cluster().end()));
    if (difference.empty()) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "task ", task, " was started with another cluster spec than this master's: ", difference,
        ". Start every task with the same cluster spec"));
  }

  // ConfigProto.device_filters, parsed once per session.
  absl::Status ParseDeviceFilters() {
    SF_ASSIGN_OR_RETURN(filters_,
                        shardflow::ParseDeviceFilters(std::vector<std::string>(
                            config_.device_filters().begin(), config_.device_filters().end())));
    return absl::OkStatus();
  }

  bool TaskPassesFilters(const TaskId& id) const {
    return shardflow::TaskPassesFilters(filters_, id);
  }

  bool DevicePassesFilters(const std::string& device) const {
    if (filters_.empty()) return true;
    absl::StatusOr<DeviceName> name = DeviceName::Parse(device);
    if (!name.ok()) return false;
    for (const DeviceName& f : filters_) {
      if (f.Matches(*name)) return true;
    }
    return false;
  }

  absl::Status CheckRequestedTasksAreUp(const Graph& graph) const {
    if (unreachable_.empty() && filtered_out_.empty()) return absl::OkStatus();
    for (const Node* n : graph.nodes()) {
      if (n->requested_device().empty()) continue;
      auto spec = DeviceName::Parse(n->requested_device());
      if (!spec.ok() || !spec->has_job || !spec->has_task) continue;
      // "/job:ps/task:0" names the same task as "/job:ps/replica:0/task:0".
      if (spec->has_replica && spec->replica != 0) continue;
      const std::string task = ClusterSpec::TaskName(spec->job, spec->task);
      if (filtered_out_.count(task) > 0 && !config_.allow_soft_placement()) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", n->name(), "' asks for ", n->requested_device(), ", but task ",
                         task, " is left out by the session's device_filters [",
                         absl::StrJoin(config_.device_filters(), ", "),
                         "]; add a filter that matches it, or place the node elsewhere"));
      }
      auto down = unreachable_.find(task);
      if (down != unreachable_.end()) {
        return absl::Status(
            down->second.code(),
            absl::StrCat("node '", n->name(), "' asks for ", n->requested_device(), ", but task ",
                         down->first,
                         " did not answer when the session was created: ", down->second.message()));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<const Prepared>> GetOrPrepare(
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
    std::vector<std::string> feed_names;
    for (const auto& f : feeds) feed_names.push_back(f.first);
    std::string key = RunSignature(feed_names, fetches, targets);
    absl::MutexLock lock(&mu_);
    SF_RETURN_IF_ERROR(CheckOpen());
    auto it = cache_map_.find(key);
    if (it != cache_map_.end()) {
      cache_tick_[key] = ++tick_;
      return it->second;
    }
    SF_ASSIGN_OR_RETURN(std::shared_ptr<const ExecutionPlan> plan,
                        state_->BuildPlan(feed_names, fetches, targets));
    auto prepared = std::make_shared<Prepared>();
    prepared->feeds = plan->feeds;
    prepared->placement = plan->placement;
    prepared->plan = plan;
    for (const std::string& device : plan->feed_devices) {
      prepared->arg_task.push_back(TaskOf(device));
    }
    std::map<std::string, RegisterGraphRequest> requests;
    for (const auto& [device, part] : plan->partitions) {
      RegisterGraphRequest& r = requests[device_task_.at(device)];
      r.set_session_handle(handle_);
      // Every task that answered: a partition may receive from any of them.
      for (const auto& [task, t] : tasks_) (*r.mutable_cluster())[task] = t.address;
      prepared->partitions.push_back(part);
      (*r.mutable_partitions())[device] = part;
    }
    for (auto& [task, request] : requests) {
      RegisterGraphResponse response;
      SF_RETURN_IF_ERROR(tasks_.at(task).client->RegisterGraph(request, &response));
      prepared->handles[task] = response.graph_handle();
    }
    for (const GraphDef& part : prepared->partitions) prepared->nodes += part.node_size();
    cache_map_[key] = prepared;
    cache_tick_[key] = ++tick_;
    cached_nodes_ += prepared->nodes;
    EvictLocked(key);
    return std::shared_ptr<const Prepared>(prepared);
  }

  // Note [Bounded steps and plans]. Each distinct set of feeds, fetches and targets is a plan
  // of its own: pruned, partitioned and registered on the tasks (a few KB a node), and kept
  // for the next step like it. A client that fetches a different node each step (or a hostile
  // one) would grow that cache without end, so a session keeps at most kMaxCachedPlans plans
  // and kMaxCachedNodes of their nodes: past either, the least recently used plans that no
  // step is running are dropped here and on their tasks (a later step like them registers
  // its plan again). A step names at most kMaxRunNames feeds, fetches and targets, and a
  // fetch named twice is computed once.
  void EvictLocked(const std::string& keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<std::pair<std::string, std::string>> dropped;  // task, graph handle
    while (cache_map_.size() > kMaxCachedPlans || cached_nodes_ > kMaxCachedNodes) {
      auto oldest = cache_map_.end();
      for (auto it = cache_map_.begin(); it != cache_map_.end(); ++it) {
        if (it->first == keep || it->second.use_count() > 1) continue;  // a step holds it
        if (oldest == cache_map_.end() || cache_tick_[it->first] < cache_tick_[oldest->first]) {
          oldest = it;
        }
      }
      if (oldest == cache_map_.end()) break;
      for (const auto& [task, handle] : oldest->second->handles) dropped.emplace_back(task, handle);
      EraseLocked(oldest);
    }
    for (const auto& [task, handle] : dropped) {
      tasks_.at(task).client->CleanupGraphAsync(handle, [task = task](const absl::Status& s) {
        LOG_IF(WARNING, !s.ok()) << "master: dropping a cached plan's graph on task " << task
                                 << ": " << s.message();
      });
    }
  }

  void EraseLocked(std::map<std::string, std::shared_ptr<const Prepared>>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    cached_nodes_ -= it->second->nodes;
    cache_tick_.erase(it->first);
    cache_map_.erase(it);
  }

  const std::string handle_;
  const MasterOptions* const options_;
  const std::shared_ptr<WorkerCacheInterface> cache_;
  const SessionOptionsProto config_;
  const std::shared_ptr<BetweenGraphSteps> between_graph_steps_;  // the master's
  // Set by Init, read-only afterwards.
  std::map<std::string, Task> tasks_;
  std::map<std::string, absl::Status> unreachable_;  // task -> why it was left out
  std::vector<DeviceName> filters_;                  // config_.device_filters, parsed
  std::set<std::string> filtered_out_;               // tasks no filter can match: never contacted
  std::vector<DeviceAttributes> devices_;
  std::map<std::string, std::string> device_task_;

  // The graph and its placement; set by Init.
  std::unique_ptr<GraphExecutionState> state_;
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status lost_ ABSL_GUARDED_BY(mu_);  // Note [Restarted tasks]
  std::map<std::string, std::shared_ptr<const Prepared>> cache_map_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> cache_tick_ ABSL_GUARDED_BY(mu_);  // key -> last use
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t cached_nodes_ ABSL_GUARDED_BY(mu_) = 0;
  // Apart from mu_, which a new signature's registration holds for a while: the collector only
  // needs these.
  absl::Mutex use_mu_;
  absl::Time last_used_ ABSL_GUARDED_BY(use_mu_);
  int steps_running_ ABSL_GUARDED_BY(use_mu_) = 0;
};

std::shared_ptr<MasterSession> MasterSession::New(
    std::string handle, const MasterOptions* options, std::shared_ptr<WorkerCacheInterface> cache,
    SessionOptionsProto config, std::shared_ptr<BetweenGraphSteps> between_graph_steps) {
  return std::make_shared<MasterSessionImpl>(std::move(handle), options, std::move(cache),
                                             std::move(config), std::move(between_graph_steps));
}

}  // namespace shardflow
