#include "distributed/master.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/platform/status.h"
#include "partitioner/cost_model.h"
#include "partitioner/partition.h"
#include "partitioner/placer.h"
#include "runtime/step_stats_collector.h"
#include "runtime/subgraph.h"

namespace shardflow {
namespace {

constexpr int kConnectAttempts = 20;  // 5 s

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

// ---- MasterSession -------------------------------------------------------------------------

class MasterSession {
 public:
  MasterSession(std::string handle, const MasterOptions* options,
                std::shared_ptr<GrpcWorkerCache> cache, SessionOptionsProto config)
      : handle_(std::move(handle)),
        options_(options),
        cache_(std::move(cache)),
        config_(std::move(config)) {}

  // Finds every task's devices and incarnation, and checks the graph.
  absl::Status Init(const GraphDef& graph) {
    SF_RETURN_IF_ERROR(Graph::FromGraphDef(graph).status());
    for (const TaskId& id : options_->cluster.tasks()) {
      Task t;
      t.name = ClusterSpec::TaskName(id.job, id.task);
      SF_ASSIGN_OR_RETURN(t.address, options_->cluster.TaskAddress(id.job, id.task));
      SF_ASSIGN_OR_RETURN(t.client, cache_->GetClient(t.address, t.name));
      GetStatusResponse status;
      // A task that is (re)starting refuses connections for a moment: retry for a few seconds.
      absl::Status s = t.client->GetStatus(&status);
      for (int attempt = 0; attempt < kConnectAttempts && absl::IsUnavailable(s); ++attempt) {
        absl::SleepFor(absl::Milliseconds(250));
        s = t.client->GetStatus(&status);
      }
      if (!s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat(s.message(), "; is `shardflow server --job ", id.job, " --task ",
                                   id.task, "` running at ", t.address, "?"));
      }
      if (status.task() != t.name) {
        return absl::FailedPreconditionError(
            absl::StrCat("the server at ", t.address, " is task ", status.task(),
                         ", but the "
                         "cluster spec says ",
                         t.name, " is there; fix the cluster spec"));
      }
      t.incarnation = status.incarnation();
      for (const WorkerDevice& d : status.devices()) {
        devices_.push_back(DeviceAttributes{d.name(), d.device_type(), d.memory_limit()});
        device_task_[d.name()] = t.name;
      }
      tasks_[t.name] = std::move(t);
    }
    absl::MutexLock lock(&mu_);
    graph_def_ = graph;
    return absl::OkStatus();
  }

  const std::vector<DeviceAttributes>& devices() const { return devices_; }

  absl::Status Extend(const GraphDef& graph) {
    absl::MutexLock lock(&mu_);
    SF_RETURN_IF_ERROR(CheckOpen());
    GraphDef merged = graph_def_;
    for (const NodeDef& n : graph.node()) *merged.add_node() = n;
    SF_RETURN_IF_ERROR(Graph::FromGraphDef(merged).status());
    graph_def_ = std::move(merged);
    placement_valid_ = false;
    return absl::OkStatus();
  }

  absl::Status Run(const RunOptions& run_options,
                   const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) {
    if (fetches.empty() && targets.empty()) {
      return absl::InvalidArgumentError("Run needs at least one fetch or target");
    }
    SF_ASSIGN_OR_RETURN(Prepared * prepared, GetOrPrepare(feeds, fetches, targets));
    SF_RETURN_IF_ERROR(CheckFeeds(prepared->feeds, feeds));
    const bool trace = run_options.trace_level() == RunOptions::FULL_TRACE && metadata != nullptr;
    struct Call {
      std::string task;
      std::shared_ptr<GrpcWorkerClient> client;
      RunGraphRequest request;
      RunGraphResponse response;
      int64_t sent = 0, received = 0;
    };
    struct State {
      absl::Mutex mu;
      int pending = 0;
      std::vector<absl::Status> errors;
      bool aborted = false;
      absl::Notification done;
    };
    auto calls = std::make_shared<std::vector<Call>>();
    const int64_t step_id = NewStepId();
    for (const auto& [task, handle] : prepared->handles) {
      Call c;
      c.task = task;
      c.client = tasks_.at(task).client;
      c.request.set_graph_handle(handle);
      c.request.set_step_id(step_id);
      c.request.set_trace(trace);
      c.request.set_timeout_ms(run_options.timeout_in_ms());
      c.request.set_check_numerics(run_options.check_numerics());
      calls->push_back(std::move(c));
    }
    for (size_t i = 0; i < feeds.size(); ++i) {
      for (Call& c : *calls) {
        if (c.task != prepared->arg_task[i]) continue;
        IndexedTensor* arg = c.request.add_args();
        arg->set_index(static_cast<int>(i));
        feeds[i].second.AsProto(arg->mutable_tensor());
      }
    }
    auto state = std::make_shared<State>();
    state->pending = static_cast<int>(calls->size());
    // The gRPC deadline leaves the worker's own timeout time to report first.
    const int64_t deadline_ms =
        run_options.timeout_in_ms() > 0 ? run_options.timeout_in_ms() + 2000 : 0;
    for (size_t i = 0; i < calls->size(); ++i) {
      Call* c = &(*calls)[i];
      c->sent = NowMicros();
      c->client->RunGraphAsync(&c->request, &c->response, deadline_ms, nullptr,
                               [calls, state, c, step_id](const absl::Status& s) {
                                 c->received = NowMicros();
                                 bool abort_others = false;
                                 bool last;
                                 {
                                   absl::MutexLock lock(&state->mu);
                                   if (!s.ok()) {
                                     state->errors.push_back(s);
                                     abort_others = !state->aborted;
                                     state->aborted = true;
                                   }
                                   last = --state->pending == 0;
                                 }
                                 if (abort_others) {
                                   for (Call& other : *calls) {
                                     if (&other == c) continue;
                                     other.client->AbortStepAsync(step_id, s,
                                                                  [calls](const absl::Status&) {});
                                   }
                                 }
                                 if (last) state->done.Notify();
                               });
    }
    state->done.WaitForNotification();
    {
      absl::MutexLock lock(&state->mu);
      if (!state->errors.empty()) return PickError(state->errors);
    }
    outputs->assign(fetches.size(), Tensor());
    for (Call& c : *calls) {
      for (const IndexedTensor& r : c.response.retvals()) {
        if (r.index() < 0 || r.index() >= static_cast<int>(fetches.size())) {
          return absl::InternalError(
              absl::StrCat("task ", c.task, " returned fetch ", r.index(), " of ", fetches.size()));
        }
        SF_ASSIGN_OR_RETURN((*outputs)[r.index()], Tensor::FromProto(r.tensor()));
      }
    }
    if (metadata != nullptr) {
      if (trace) {
        for (Call& c : *calls) {
          StepStats* stats = c.response.mutable_step_stats();
          AlignClock(c.sent, c.received, stats);
          for (DeviceStepStats& d : *stats->mutable_dev_stats()) {
            *metadata->mutable_step_stats()->add_dev_stats() = std::move(d);
          }
        }
        for (const GraphDef& part : prepared->partitions) *metadata->add_partition_graphs() = part;
      }
      for (const auto& [node, device] : prepared->placement) {
        (*metadata->mutable_placement())[node] = device;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Close() {
    std::vector<std::pair<std::shared_ptr<GrpcWorkerClient>, std::string>> handles;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::OkStatus();
      closed_ = true;
      for (const auto& [key, prepared] : cache_map_) {
        for (const auto& [task, handle] : prepared->handles) {
          handles.emplace_back(tasks_.at(task).client, handle);
        }
      }
      cache_map_.clear();
    }
    absl::Status first;
    for (const auto& [client, handle] : handles) {
      absl::Status s = client->CleanupGraph(handle);
      if (first.ok() && !s.ok()) first = s;
    }
    return first;
  }

 private:
  struct Task {
    std::string name, address;
    std::shared_ptr<GrpcWorkerClient> client;
    uint64_t incarnation = 0;
  };
  struct Prepared {
    std::vector<FeedSpec> feeds;
    std::map<std::string, std::string> handles;  // task -> graph handle
    std::vector<std::string> arg_task, retval_task;
    std::vector<GraphDef> partitions;
    std::map<std::string, std::string> placement;
  };

  absl::Status CheckOpen() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    return absl::OkStatus();
  }

  // The cost model's view of the cluster: in-process links within a task, options.link across.
  Cluster CostCluster() const {
    Cluster local = Cluster::ForDevices(devices_);
    ClusterDescription d = local.description();
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
    auto cluster = Cluster::FromDescription(d);
    return cluster.ok() ? *cluster : local;
  }

  absl::Status PlaceWholeGraph() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (placement_valid_) return absl::OkStatus();
    SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(graph_def_));
    ApplyWholeGraphPlacement(graph.get(), placement_);
    Cluster cluster = CostCluster();
    PlacerOptions options;
    options.allow_soft_placement = config_.allow_soft_placement();
    options.log_device_placement = config_.log_device_placement();
    options.policy = config_.placement_policy();
    options.cluster = &cluster;
    SF_RETURN_IF_ERROR(PlaceGraph(graph.get(), devices_, options));
    for (Node* n : graph->nodes()) placement_[n->name()] = n->assigned_device();
    placement_valid_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<Prepared*> GetOrPrepare(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                         const std::vector<std::string>& fetches,
                                         const std::vector<std::string>& targets) {
    std::vector<std::string> feed_names;
    for (const auto& f : feeds) feed_names.push_back(f.first);
    std::string key = RunSignature(feed_names, fetches, targets);
    absl::MutexLock lock(&mu_);
    SF_RETURN_IF_ERROR(CheckOpen());
    auto it = cache_map_.find(key);
    if (it != cache_map_.end()) return it->second.get();
    SF_RETURN_IF_ERROR(PlaceWholeGraph());
    SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(graph_def_));
    auto prepared = std::make_unique<Prepared>();
    SF_RETURN_IF_ERROR(RewriteForRun(graph.get(), feed_names, fetches, targets, &prepared->feeds));
    ApplyWholeGraphPlacement(graph.get(), placement_);
    PlacerOptions placer_options;
    placer_options.allow_soft_placement = config_.allow_soft_placement();
    SF_RETURN_IF_ERROR(PlaceGraph(graph.get(), devices_, placer_options));
    prepared->arg_task.resize(feeds.size());
    prepared->retval_task.resize(fetches.size());
    for (Node* n : graph->nodes()) {
      prepared->placement[n->name()] = n->assigned_device();
      if (n->op() != "_Arg" && n->op() != "_Retval") continue;
      int index = 0;
      SF_RETURN_IF_ERROR(GetAttr(n->attrs(), "index", &index));
      auto& slots = n->op() == "_Arg" ? prepared->arg_task : prepared->retval_task;
      if (index >= 0 && index < static_cast<int>(slots.size())) {
        slots[index] = TaskOf(n->assigned_device());
      }
    }
    PartitionOptions partition_options;
    partition_options.incarnation = [this](const std::string& device) -> uint64_t {
      auto t = device_task_.find(device);
      return t == device_task_.end() ? 0 : tasks_.at(t->second).incarnation;
    };
    std::map<std::string, GraphDef> parts;
    SF_RETURN_IF_ERROR(PartitionGraph(*graph, partition_options, &parts));
    std::map<std::string, RegisterGraphRequest> requests;
    const std::map<std::string, std::string> addresses = options_->cluster.TaskAddresses();
    for (auto& [device, part] : parts) {
      if (part.node_size() == 0) continue;
      RegisterGraphRequest& r = requests[device_task_.at(device)];
      r.set_session_handle(handle_);
      for (const auto& [task, address] : addresses) (*r.mutable_cluster())[task] = address;
      prepared->partitions.push_back(part);
      (*r.mutable_partitions())[device] = std::move(part);
    }
    for (auto& [task, request] : requests) {
      RegisterGraphResponse response;
      SF_RETURN_IF_ERROR(tasks_.at(task).client->RegisterGraph(request, &response));
      prepared->handles[task] = response.graph_handle();
    }
    if (prepared->handles.empty()) {
      return absl::InvalidArgumentError("nothing to run: the fetches and targets need no node");
    }
    Prepared* raw = prepared.get();
    cache_map_[key] = std::move(prepared);
    return raw;
  }

  const std::string handle_;
  const MasterOptions* const options_;
  const std::shared_ptr<GrpcWorkerCache> cache_;
  const SessionOptionsProto config_;
  // Set by Init, read-only afterwards.
  std::map<std::string, Task> tasks_;
  std::vector<DeviceAttributes> devices_;
  std::map<std::string, std::string> device_task_;

  absl::Mutex mu_;
  GraphDef graph_def_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> placement_ ABSL_GUARDED_BY(mu_);
  bool placement_valid_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<Prepared>> cache_map_ ABSL_GUARDED_BY(mu_);
};

// ---- Master --------------------------------------------------------------------------------

Master::Master(MasterOptions options)
    : options_(std::move(options)), cache_(std::make_shared<GrpcWorkerCache>(options_.client)) {}

Master::~Master() {
  std::map<std::string, std::shared_ptr<MasterSession>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions.swap(sessions_);
  }
  for (auto& [handle, session] : sessions) session->Close().IgnoreError();
}

absl::StatusOr<std::shared_ptr<Master>> Master::Create(MasterOptions options) {
  if (options.cluster.tasks().empty()) {
    return absl::InvalidArgumentError(
        "the master's cluster spec has no tasks; give {\"worker\": [\"host:port\", ...]}");
  }
  return std::shared_ptr<Master>(new Master(std::move(options)));
}

absl::StatusOr<std::string> Master::CreateSession(const GraphDef& graph,
                                                  const SessionOptionsProto& config) {
  std::string handle;
  {
    absl::MutexLock lock(&mu_);
    handle = absl::StrCat("session-", next_session_++, "-", NewStepId() % 1000000);
  }
  auto session = std::make_shared<MasterSession>(handle, &options_, cache_, config);
  SF_RETURN_IF_ERROR(session->Init(graph));
  absl::MutexLock lock(&mu_);
  sessions_[handle] = std::move(session);
  return handle;
}

absl::StatusOr<std::shared_ptr<MasterSession>> Master::Find(const std::string& handle) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) {
    return absl::NotFoundError(absl::StrCat("no session '", handle,
                                            "' on this master (closed, or the master was "
                                            "restarted); create a new session"));
  }
  return it->second;
}

absl::Status Master::ExtendSession(const std::string& handle, const GraphDef& graph) {
  SF_ASSIGN_OR_RETURN(auto session, Find(handle));
  return session->Extend(graph);
}

absl::Status Master::RunStep(const std::string& handle, const RunOptions& options,
                             const std::vector<std::pair<std::string, Tensor>>& feeds,
                             const std::vector<std::string>& fetches,
                             const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                             RunMetadata* metadata) {
  SF_ASSIGN_OR_RETURN(auto session, Find(handle));
  return session->Run(options, feeds, fetches, targets, outputs, metadata);
}

absl::Status Master::CloseSession(const std::string& handle) {
  std::shared_ptr<MasterSession> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(handle);
    if (it == sessions_.end()) return absl::OkStatus();
    session = std::move(it->second);
    sessions_.erase(it);
  }
  return session->Close();
}

absl::StatusOr<std::vector<DeviceAttributes>> Master::ListDevices() {
  std::vector<DeviceAttributes> out;
  for (const TaskId& id : options_.cluster.tasks()) {
    std::string name = ClusterSpec::TaskName(id.job, id.task);
    SF_ASSIGN_OR_RETURN(std::string address, options_.cluster.TaskAddress(id.job, id.task));
    SF_ASSIGN_OR_RETURN(auto client, cache_->GetClient(address, name));
    GetStatusResponse status;
    SF_RETURN_IF_ERROR(client->GetStatus(&status));
    for (const WorkerDevice& d : status.devices()) {
      out.push_back(DeviceAttributes{d.name(), d.device_type(), d.memory_limit()});
    }
  }
  return out;
}

// ---- an in-process master as a Session -----------------------------------------------------

namespace {

class ClusterSession final : public Session {
 public:
  ClusterSession(std::shared_ptr<Master> master, SessionOptions options)
      : master_(std::move(master)), options_(std::move(options)) {}
  ~ClusterSession() override { Close().IgnoreError(); }

  absl::Status Create(const GraphDef& graph) override {
    absl::MutexLock lock(&mu_);
    if (!handle_.empty()) {
      return absl::FailedPreconditionError(
          "Session::Create was called twice; use Extend to add nodes");
    }
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    SF_ASSIGN_OR_RETURN(handle_, master_->CreateSession(graph, options_.config));
    return absl::OkStatus();
  }
  absl::Status Extend(const GraphDef& graph) override {
    SF_ASSIGN_OR_RETURN(std::string handle, Handle());
    return master_->ExtendSession(handle, graph);
  }
  absl::Status Run(const RunOptions& options,
                   const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    SF_ASSIGN_OR_RETURN(std::string handle, Handle());
    std::vector<Tensor> out;
    SF_RETURN_IF_ERROR(master_->RunStep(handle, options, feeds, fetches, targets,
                                        outputs != nullptr ? outputs : &out, metadata));
    return absl::OkStatus();
  }
  std::vector<DeviceAttributes> ListDevices() const override {
    auto devices = master_->ListDevices();
    return devices.ok() ? *devices : std::vector<DeviceAttributes>();
  }
  absl::Status Close() override {
    std::string handle;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::OkStatus();
      closed_ = true;
      handle.swap(handle_);
    }
    return handle.empty() ? absl::OkStatus() : master_->CloseSession(handle);
  }

 private:
  absl::StatusOr<std::string> Handle() {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    if (handle_.empty()) {
      return absl::FailedPreconditionError("Session::Run before Session::Create");
    }
    return handle_;
  }

  const std::shared_ptr<Master> master_;
  const SessionOptions options_;
  absl::Mutex mu_;
  std::string handle_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> NewClusterSession(std::shared_ptr<Master> master,
                                                           const SessionOptions& options) {
  if (master == nullptr) return absl::InvalidArgumentError("NewClusterSession needs a master");
  return std::unique_ptr<Session>(new ClusterSession(std::move(master), options));
}

}  // namespace shardflow
