// The in-process session: one task ("/job:localhost/replica:0/task:0") with its CPU devices.
#include <atomic>
#include <map>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/platform/status.h"
#include "runtime/call_frame.h"
#include "runtime/device.h"
#include "runtime/device_factory.h"
#include "runtime/executor.h"
#include "runtime/executor_barrier.h"
#include "runtime/function_runtime.h"
#include "runtime/graph_execution_state.h"
#include "runtime/rendezvous.h"
#include "runtime/session.h"
#include "runtime/step_stats_collector.h"
#include "runtime/subgraph.h"

namespace shardflow {
namespace {

// What a signature runs here: its plan and one executor per device the plan uses.
struct PreparedRun {
  std::shared_ptr<const ExecutionPlan> plan;
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<Executor*> executor_ptrs;
  std::vector<GraphDef> partitions;  // what each executor runs, for RunMetadata
};

class LocalSession final : public Session {
 public:
  LocalSession(const SessionOptions& options, std::vector<std::unique_ptr<Device>> devices)
      : options_(options),
        devices_(std::move(devices)),
        state_(StateOptions(options, devices_)),
        functions_(DevicePointers(devices_), options.config) {}

  // Waits for steps abandoned after a timeout (they were cancelled, so this is bounded by the
  // kernels already running) before executors and devices go away.
  ~LocalSession() override { WaitForAbandonedSteps(); }

  absl::Status Create(const GraphDef& graph) override {
    {
      absl::MutexLock lock(&mu_);
      SF_RETURN_IF_ERROR(CheckOpen());
    }
    return state_.Create(graph);
  }

  absl::Status Extend(const GraphDef& graph) override {
    {
      absl::MutexLock lock(&mu_);
      SF_RETURN_IF_ERROR(CheckOpen());
    }
    return state_.Extend(graph);
  }

  absl::Status Run(const RunOptions& run_options,
                   const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    if (fetches.empty() && targets.empty()) {
      return absl::InvalidArgumentError("Run needs at least one fetch or target");
    }
    // Counted from here, so that Close waits for this call before it drops the executors
    // GetOrPrepare hands out (a queue runner may start a step while another thread closes).
    {
      absl::MutexLock lock(&steps_mu_);
      if (closing_) return absl::FailedPreconditionError("the session is closed");
      ++runs_in_progress_;
    }
    absl::Cleanup counted = [this] {
      absl::MutexLock lock(&steps_mu_);
      --runs_in_progress_;
    };
    SF_ASSIGN_OR_RETURN(PreparedRun * prepared, GetOrPrepare(feeds, fetches, targets));
    SF_RETURN_IF_ERROR(CheckFeeds(prepared->plan->feeds, feeds));
    std::map<int, Tensor> args;
    for (size_t i = 0; i < feeds.size(); ++i) args[static_cast<int>(i)] = feeds[i].second;
    // Heap-allocated: after a timeout the step winds down on its own, after Run returned.
    auto step = std::make_shared<StepState>(std::move(args), static_cast<int>(fetches.size()));
    Executor::Args exec_args;
    exec_args.step_id = next_step_id_.fetch_add(1);
    exec_args.call_frame = &step->frame;
    exec_args.cancelled = std::make_shared<std::atomic<bool>>(false);
    exec_args.check_numerics = run_options.check_numerics();
    exec_args.function_library = &functions_;
    bool trace = run_options.trace_level() == RunOptions::FULL_TRACE && metadata != nullptr;
    if (trace) exec_args.stats = &step->stats;
    // RunOptions' own limit, else the session's (ConfigProto.operation_timeout_in_ms).
    const int64_t timeout_ms = run_options.timeout_in_ms() > 0
                                   ? run_options.timeout_in_ms()
                                   : options_.config.operation_timeout_in_ms();
    SF_RETURN_IF_ERROR(RunStep(*prepared, exec_args, step, timeout_ms));
    if (metadata != nullptr) {
      if (trace) {
        step->stats.Finalize(metadata->mutable_step_stats());
        for (const GraphDef& part : prepared->partitions) *metadata->add_partition_graphs() = part;
        *metadata->mutable_optimized_graph() = prepared->plan->optimized_graph;
        *metadata->mutable_optimizer_report() = prepared->plan->optimizer_report;
      }
      for (const auto& [node, device] : prepared->plan->placement)
        (*metadata->mutable_placement())[node] = device;
    }
    if (outputs != nullptr) *outputs = step->frame.TakeRetvals();
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<DeviceAttributes>> ListDevices() const override {
    return state_.devices();
  }

  absl::Status Close() override {
    {
      // As TF1's: closing cancels the steps still running (a queue runner blocked in an
      // enqueue into a full queue would otherwise keep Close waiting forever).
      absl::MutexLock lock(&steps_mu_);
      closing_ = true;  // no new Run starts
      for (auto& [id, running] : running_steps_) {
        running.cancelled->store(true);
        running.rendezvous->StartAbort(
            absl::CancelledError("the session was closed while this step ran"));
      }
    }
    WaitForAbandonedSteps();  // they still use the executors dropped below
    absl::MutexLock lock(&mu_);
    closed_ = true;
    cache_.clear();
    return absl::OkStatus();
  }

 private:
  static GraphExecutionStateOptions StateOptions(
      const SessionOptions& options, const std::vector<std::unique_ptr<Device>>& devices) {
    GraphExecutionStateOptions state;
    state.config = options.config;
    std::vector<int> threads, slots;
    for (const auto& d : devices) {
      state.devices.push_back(d->attributes());
      threads.push_back(d->intra_op_threads());
      slots.push_back(std::min(d->compute_slots(), 64));
    }
    state.topology = [attributes = state.devices, threads, slots] {
      return DeviceTopology::ForDevices(attributes, threads, slots);
    };
    return state;
  }

  static std::vector<Device*> DevicePointers(const std::vector<std::unique_ptr<Device>>& devices) {
    std::vector<Device*> out;
    for (const auto& d : devices) out.push_back(d.get());
    return out;
  }
  void WaitForAbandonedSteps() {
    absl::MutexLock lock(&steps_mu_);
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(steps_mu_) {
      return running_steps_.empty() && runs_in_progress_ == 0;
    };
    steps_mu_.Await(absl::Condition(&drained));
  }

  absl::Status CheckOpen() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    return absl::OkStatus();
  }

  struct StepState {
    StepState(std::map<int, Tensor> args, int num_fetches) : frame(std::move(args), num_fetches) {}
    StepCallFrame frame;
    StepStatsCollector stats;
    absl::Notification done;
    absl::Status status;  // written before `done` is notified
  };

  // Runs one step on every device of `prepared` (ExecutorBarrier: the first error aborts the
  // step's rendezvous, so every pending _Recv returns, and is the step's status). After
  // timeout_ms (0 = no limit) the step is cancelled and DEADLINE_EXCEEDED returned; the
  // session's destructor waits for such abandoned steps.
  absl::Status RunStep(const PreparedRun& prepared, Executor::Args args,
                       std::shared_ptr<StepState> step, int64_t timeout_ms) {
    auto rendezvous = std::make_shared<LocalRendezvous>();
    args.rendezvous = rendezvous.get();
    const int64_t id = args.step_id;
    {
      absl::MutexLock lock(&steps_mu_);
      // Close aborted the steps running when it began; this one would not be.
      if (closing_) return absl::CancelledError("the session was closed before this step ran");
      // Until the step's last executor is done (after a timeout, past Run's return).
      running_steps_[id] = RunningStep{rendezvous, args.cancelled};
    }
    auto done = [this, step, rendezvous, id](const absl::Status& s) {
      step->status = s;
      step->done.Notify();
      absl::MutexLock lock(&steps_mu_);
      running_steps_.erase(id);
    };
    // Without a timeout to watch, the first executor starts on this thread.
    ExecutorBarrier::Run(prepared.executor_ptrs, args, rendezvous.get(), std::move(done),
                         /*run_first_here=*/timeout_ms <= 0);
    if (timeout_ms <= 0) {
      step->done.WaitForNotification();
    } else if (!step->done.WaitForNotificationWithTimeout(absl::Milliseconds(timeout_ms))) {
      absl::Status deadline = absl::DeadlineExceededError(
          absl::StrCat("step did not finish within ", timeout_ms,
                       " ms (RunOptions.timeout_in_ms, or the session's operation_timeout_in_ms)"));
      args.cancelled->store(true);
      rendezvous->StartAbort(deadline);
      return deadline;
    }
    return step->status;
  }

  absl::StatusOr<PreparedRun*> GetOrPrepare(
      const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
    std::vector<std::string> feed_names;
    for (const auto& f : feeds) feed_names.push_back(f.first);
    std::string key = RunSignature(feed_names, fetches, targets);
    absl::MutexLock lock(&mu_);
    SF_RETURN_IF_ERROR(CheckOpen());
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second.get();
    auto prepared = std::make_unique<PreparedRun>();
    SF_ASSIGN_OR_RETURN(prepared->plan, state_.BuildPlan(feed_names, fetches, targets));
    for (const auto& [device_name, part] : prepared->plan->partitions) {
      Device* device = FindDevice(device_name);
      if (device == nullptr) {
        return absl::InternalError(absl::StrCat("placed on unknown device ", device_name));
      }
      SF_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                          Executor::CreateForPartition(part, device, &shared_kernels_));
      prepared->executor_ptrs.push_back(executor.get());
      prepared->executors.push_back(std::move(executor));
      prepared->partitions.push_back(part);
    }
    PreparedRun* raw = prepared.get();
    cache_[key] = std::move(prepared);
    return raw;
  }

  Device* FindDevice(const std::string& name) const {
    for (const auto& d : devices_) {
      if (d->name() == name) return d.get();
    }
    return nullptr;
  }

  const SessionOptions options_;
  const std::vector<std::unique_ptr<Device>> devices_;
  GraphExecutionState state_;
  // The graph functions of this session's steps (While); before the cache, whose executors
  // use it.
  FunctionRuntime functions_;
  // The random ops' kernels, one per node for every signature's executors.
  SharedKernels shared_kernels_;
  std::atomic<int64_t> next_step_id_{1};
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<PreparedRun>> cache_ ABSL_GUARDED_BY(mu_);
  absl::Mutex steps_mu_;
  int runs_in_progress_ ABSL_GUARDED_BY(steps_mu_) = 0;  // Run calls not yet returned
  bool closing_ ABSL_GUARDED_BY(steps_mu_) = false;
  // The steps running now, by step id (also those a timeout abandoned): what Close aborts and
  // WaitForAbandonedSteps waits for.
  struct RunningStep {
    std::shared_ptr<LocalRendezvous> rendezvous;
    std::shared_ptr<std::atomic<bool>> cancelled;
  };
  std::map<int64_t, RunningStep> running_steps_ ABSL_GUARDED_BY(steps_mu_);
};

}  // namespace

namespace {
absl::Mutex factories_mu(absl::kConstInit);
std::map<std::string, SessionFactory>& Factories() {
  static auto* factories = new std::map<std::string, SessionFactory>;
  return *factories;
}
}  // namespace

void RegisterSessionFactory(const std::string& scheme, SessionFactory factory) {
  absl::MutexLock lock(&factories_mu);
  Factories()[scheme] = std::move(factory);
}

absl::StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options) {
  if (options.target.empty()) {
    SF_ASSIGN_OR_RETURN(auto devices, DeviceFactory::CreateDevices(options.config, "localhost", 0));
    return std::unique_ptr<Session>(new LocalSession(options, std::move(devices)));
  }
  size_t pos = options.target.find("://");
  std::string scheme = pos == std::string::npos ? "" : options.target.substr(0, pos);
  SessionFactory factory;
  std::vector<std::string> known;
  {
    absl::MutexLock lock(&factories_mu);
    auto it = Factories().find(scheme);
    if (it != Factories().end()) factory = it->second;
    for (const auto& [name, f] : Factories()) known.push_back(name + "://host:port");
  }
  if (!factory) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown session target '", options.target, "'; use \"\" for a local ",
                     "session", known.empty() ? "" : " or ", absl::StrJoin(known, ", ")));
  }
  return factory(options);
}

}  // namespace shardflow
