// The in-process session: one task ("/job:localhost/replica:0/task:0") with its CPU devices.
#include <atomic>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/platform/status.h"
#include "partitioner/partition.h"
#include "partitioner/placer.h"
#include "runtime/executor.h"
#include "runtime/rendezvous.h"
#include "runtime/session.h"
#include "runtime/subgraph.h"

namespace shardflow {
namespace {

class VectorCallFrame : public CallFrame {
 public:
  VectorCallFrame(std::vector<std::pair<std::string, Tensor>> feeds, size_t num_fetches)
      : feeds_(std::move(feeds)), retvals_(num_fetches) {}
  absl::Status GetArg(int index, Tensor* value) const override {
    if (index < 0 || index >= static_cast<int>(feeds_.size())) {
      return absl::InternalError(absl::StrCat("no feed ", index));
    }
    *value = feeds_[index].second;
    return absl::OkStatus();
  }
  absl::Status SetRetval(int index, const Tensor& value) override {
    if (index < 0 || index >= static_cast<int>(retvals_.size())) {
      return absl::InternalError(absl::StrCat("no fetch ", index));
    }
    retvals_[index] = value;
    return absl::OkStatus();
  }
  std::vector<Tensor>& retvals() { return retvals_; }

 private:
  const std::vector<std::pair<std::string, Tensor>> feeds_;
  std::vector<Tensor> retvals_;
};

// Everything built for one Run signature.
// Everything built for one Run signature: one executor per device the graph uses.
struct PreparedRun {
  std::vector<FeedSpec> feeds;
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<GraphDef> partitions;  // what each executor runs, for RunMetadata
  std::map<std::string, std::string> placement;
};

class LocalSession final : public Session {
 public:
  explicit LocalSession(const SessionOptions& options) : options_(options) {
    devices_ = CreateCpuDevices(options.config, "localhost", 0);
  }

  // Waits for steps abandoned after a timeout (they were cancelled, so this is bounded by the
  // kernels already running) before executors and devices go away.
  ~LocalSession() override { WaitForAbandonedSteps(); }

  absl::Status Create(const GraphDef& graph) override {
    absl::MutexLock lock(&mu_);
    SF_RETURN_IF_ERROR(CheckOpen());
    if (created_) {
      return absl::FailedPreconditionError(
          "Session::Create was called twice; use Extend to add nodes");
    }
    SF_RETURN_IF_ERROR(CheckClientGraph(graph));
    SF_RETURN_IF_ERROR(Graph::FromGraphDef(graph).status());
    graph_def_ = graph;
    created_ = true;
    placement_.clear();
    placement_valid_ = false;
    return absl::OkStatus();
  }

  absl::Status Extend(const GraphDef& graph) override {
    absl::MutexLock lock(&mu_);
    SF_RETURN_IF_ERROR(CheckOpen());
    SF_RETURN_IF_ERROR(CheckClientGraph(graph));
    GraphDef merged = graph_def_;
    for (const NodeDef& n : graph.node()) *merged.add_node() = n;
    SF_RETURN_IF_ERROR(Graph::FromGraphDef(merged).status());
    graph_def_ = std::move(merged);
    created_ = true;
    placement_valid_ = false;  // new nodes; the placed ones keep their devices
    return absl::OkStatus();
  }

  absl::Status Run(const RunOptions& run_options,
                   const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    if (fetches.empty() && targets.empty()) {
      return absl::InvalidArgumentError("Run needs at least one fetch or target");
    }
    SF_ASSIGN_OR_RETURN(PreparedRun * prepared, GetOrPrepare(feeds, fetches, targets));
    SF_RETURN_IF_ERROR(CheckFeeds(prepared->feeds, feeds));
    // Heap-allocated: after a timeout the step winds down on its own, after Run returned.
    auto step = std::make_shared<StepState>(feeds, fetches.size());
    Executor::Args args;
    args.step_id = next_step_id_.fetch_add(1);
    args.call_frame = &step->frame;
    args.cancelled = std::make_shared<std::atomic<bool>>(false);
    args.check_numerics = run_options.check_numerics();
    bool trace = run_options.trace_level() == RunOptions::FULL_TRACE && metadata != nullptr;
    if (trace) args.stats = &step->stats;
    absl::Status status = RunStep(*prepared, args, step, run_options.timeout_in_ms());
    if (!status.ok()) return status;
    if (metadata != nullptr) {
      if (trace) {
        step->stats.Finalize(metadata->mutable_step_stats());
        for (const GraphDef& part : prepared->partitions) *metadata->add_partition_graphs() = part;
      }
      for (const auto& [node, device] : prepared->placement)
        (*metadata->mutable_placement())[node] = device;
    }
    if (outputs != nullptr) *outputs = std::move(step->frame.retvals());
    return absl::OkStatus();
  }

  std::vector<DeviceAttributes> ListDevices() const override {
    std::vector<DeviceAttributes> out;
    for (const auto& d : devices_) out.push_back(d->attributes());
    return out;
  }

  absl::Status Close() override {
    WaitForAbandonedSteps();  // they still use the executors dropped below
    absl::MutexLock lock(&mu_);
    closed_ = true;
    cache_.clear();
    return absl::OkStatus();
  }

 private:
  void WaitForAbandonedSteps() {
    absl::MutexLock lock(&steps_mu_);
    auto drained = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(steps_mu_) { return abandoned_steps_ == 0; };
    steps_mu_.Await(absl::Condition(&drained));
  }

  absl::Status CheckOpen() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    return absl::OkStatus();
  }

  struct StepState {
    StepState(const std::vector<std::pair<std::string, Tensor>>& feeds, size_t num_fetches)
        : frame(feeds, num_fetches) {}
    VectorCallFrame frame;
    StepStatsCollector stats;
    absl::Notification done;
    absl::Mutex mu;
    absl::Status status ABSL_GUARDED_BY(mu);
    int pending ABSL_GUARDED_BY(mu) = 0;
  };

  // Runs one step; after timeout_ms (0 = no limit) cancels it and returns DEADLINE_EXCEEDED.
  // Runs one step on every device of `prepared`: all executors share the step's rendezvous, the
  // first error aborts it (so every pending _Recv returns), and the step's status is the first
  // error. After timeout_ms (0 = no limit) the step is cancelled and DEADLINE_EXCEEDED returned;
  // the session's destructor waits for such abandoned steps.
  absl::Status RunStep(const PreparedRun& prepared, Executor::Args args,
                       std::shared_ptr<StepState> step, int64_t timeout_ms) {
    auto rendezvous = std::make_shared<LocalRendezvous>();
    args.rendezvous = rendezvous.get();
    args.on_abort = [rendezvous](const absl::Status& s) { rendezvous->StartAbort(s); };
    {
      absl::MutexLock lock(&steps_mu_);
      ++abandoned_steps_;  // counted until the step's last executor is done
    }
    step->pending = static_cast<int>(prepared.executors.size());
    auto done = [this, step, rendezvous](const absl::Status& s) {
      bool last;
      {
        absl::MutexLock lock(&step->mu);
        if (step->status.ok() && !s.ok()) step->status = s;
        last = --step->pending == 0;
      }
      if (!last) return;
      step->done.Notify();
      absl::MutexLock lock(&steps_mu_);
      --abandoned_steps_;
    };
    // Every executor but the first starts on its device's threads; the first runs here, unless
    // there is a timeout to watch: then this thread only waits.
    const size_t first_here = timeout_ms > 0 ? 0 : 1;
    for (size_t i = first_here; i < prepared.executors.size(); ++i) {
      Executor* ex = prepared.executors[i].get();
      ex->device()->Schedule([ex, args, done] { ex->RunAsync(args, done); });
    }
    if (first_here == 1) prepared.executors[0]->RunAsync(args, done);
    if (timeout_ms <= 0) {
      step->done.WaitForNotification();
    } else if (!step->done.WaitForNotificationWithTimeout(absl::Milliseconds(timeout_ms))) {
      absl::Status deadline = absl::DeadlineExceededError(absl::StrCat(
          "step did not finish within RunOptions.timeout_in_ms = ", timeout_ms, " ms"));
      args.cancelled->store(true);
      rendezvous->StartAbort(deadline);
      return deadline;
    }
    absl::MutexLock lock(&step->mu);
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
    if (!created_) return absl::FailedPreconditionError("Session::Run before Session::Create");
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second.get();
    SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(graph_def_));
    auto prepared = std::make_unique<PreparedRun>();
    SF_RETURN_IF_ERROR(PlaceWholeGraph());
    SF_RETURN_IF_ERROR(RewriteForRun(graph.get(), feed_names, fetches, targets, &prepared->feeds));
    ApplyWholeGraphPlacement(graph.get(), placement_);
    PlacerOptions placer_options;
    placer_options.allow_soft_placement = options_.config.allow_soft_placement();
    SF_RETURN_IF_ERROR(PlaceGraph(graph.get(), ListDevices(), placer_options));
    for (Node* n : graph->nodes()) prepared->placement[n->name()] = n->assigned_device();
    std::map<std::string, GraphDef> parts;
    SF_RETURN_IF_ERROR(PartitionGraph(*graph, PartitionOptions(), &parts));
    for (auto& [device_name, part] : parts) {
      Device* device = FindDevice(device_name);
      if (device == nullptr) {
        return absl::InternalError(absl::StrCat("placed on unknown device ", device_name));
      }
      SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> part_graph, Graph::FromGraphDef(part));
      for (Node* n : part_graph->nodes()) n->set_assigned_device(device_name);
      SF_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                          Executor::Create(std::move(part_graph), device));
      prepared->executors.push_back(std::move(executor));
      prepared->partitions.push_back(std::move(part));
    }
    if (prepared->executors.empty()) {
      return absl::InvalidArgumentError("nothing to run: the fetches and targets need no node");
    }
    PreparedRun* raw = prepared.get();
    cache_[key] = std::move(prepared);
    return raw;
  }

  // Places the whole graph once per Create/Extend (nodes placed before keep their device) with
  // the session's policy, so stateful nodes stay put across Run signatures.
  absl::Status PlaceWholeGraph() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (placement_valid_) return absl::OkStatus();
    SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(graph_def_));
    ApplyWholeGraphPlacement(graph.get(), placement_);
    std::vector<int> threads, slots;
    for (const auto& d : devices_) {
      threads.push_back(d->intra_op_threads());
      slots.push_back(std::min(d->compute_slots(), 64));
    }
    Cluster cluster = Cluster::ForDevices(ListDevices(), threads, slots);
    PlacerOptions placer_options;
    placer_options.allow_soft_placement = options_.config.allow_soft_placement();
    placer_options.log_device_placement = options_.config.log_device_placement();
    placer_options.policy = options_.config.placement_policy();
    placer_options.cluster = &cluster;
    SF_RETURN_IF_ERROR(PlaceGraph(graph.get(), ListDevices(), placer_options));
    for (Node* n : graph->nodes()) placement_[n->name()] = n->assigned_device();
    placement_valid_ = true;
    return absl::OkStatus();
  }

  Device* FindDevice(const std::string& name) const {
    for (const auto& d : devices_) {
      if (d->name() == name) return d.get();
    }
    return nullptr;
  }

  const SessionOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::atomic<int64_t> next_step_id_{1};
  absl::Mutex mu_;
  GraphDef graph_def_ ABSL_GUARDED_BY(mu_);
  bool created_ ABSL_GUARDED_BY(mu_) = false;
  // The whole graph's placement, node name -> device; valid until the graph changes.
  std::map<std::string, std::string> placement_ ABSL_GUARDED_BY(mu_);
  bool placement_valid_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<PreparedRun>> cache_ ABSL_GUARDED_BY(mu_);
  absl::Mutex steps_mu_;
  int abandoned_steps_ ABSL_GUARDED_BY(steps_mu_) = 0;
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
  if (options.target.empty()) return std::unique_ptr<Session>(new LocalSession(options));
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
