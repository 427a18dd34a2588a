#include "distributed/worker.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <optional>
#include <random>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/framework/op_names.h"
#include "core/platform/status.h"
#include "glog/logging.h"
#include "runtime/call_frame.h"
#include "runtime/executor_barrier.h"
#include "runtime/step_stats_collector.h"

namespace shardflow {
namespace {

// The most fed (_Arg) and fetched (_Retval) tensors a registered partition may index.
constexpr int64_t kMaxStepArgs = int64_t{1} << 24;

// The per-step state of one RunGraph call, alive until its last executor is done.
struct RunState {
  RunState(std::map<int, Tensor> args, int num_retvals) : frame(std::move(args), num_retvals) {}
  StepCallFrame frame;
  StepStatsCollector stats;
};

absl::Status CheckIncarnation(const Node& n, const std::string& local_task, uint64_t incarnation,
                              const std::string& device) {
  std::string send_device;
  int64_t send_incarnation = 0;
  SF_RETURN_IF_ERROR(GetAttr(n.attrs(), "send_device", &send_device));
  SF_RETURN_IF_ERROR(GetAttr(n.attrs(), "send_device_incarnation", &send_incarnation));
  if (absl::StartsWith(send_device, local_task + "/") &&
      static_cast<uint64_t>(send_incarnation) != incarnation) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node '", n.name(), "' (", n.op(), ") of the partition for ", device,
        " names send_device_incarnation ", absl::Hex(static_cast<uint64_t>(send_incarnation)),
        " for ", send_device, ", but task ", local_task, " is incarnation ", absl::Hex(incarnation),
        " (the graph was partitioned for an earlier run of this task); ask GetStatus for the "
        "incarnation and partition again"));
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t NewIncarnation() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(NowMicros()));
  uint64_t v = 0;
  while (v == 0) v = gen();
  return v;
}

std::string NewRandomHandle(const std::string& prefix) {
  // std::random_device reads the kernel's entropy source on Linux.
  std::random_device rd;
  auto word = [&rd] { return (static_cast<uint64_t>(rd()) << 32) | rd(); };
  return absl::StrCat(prefix, absl::Hex(word(), absl::kZeroPad16),
                      absl::Hex(word(), absl::kZeroPad16));
}

Worker::Worker(std::string task, std::vector<Device*> devices, TensorTransport* transport,
               uint64_t incarnation, WorkerOptions options)
    : task_(std::move(task)),
      devices_(std::move(devices)),
      transport_(transport),
      incarnation_(incarnation),
      options_(std::move(options)),
      functions_(devices_, SessionOptionsProto()) {}

Worker::~Worker() { Shutdown(); }

void Worker::GetStatus(GetStatusResponse* response) const {
  response->set_task(task_);
  response->set_incarnation(incarnation_);
  for (const auto& [task, address] : options_.known_cluster) {
    (*response->mutable_cluster())[task] = address;
  }
  for (const auto& [key, value] : options_.labels) (*response->mutable_labels())[key] = value;
  for (Device* d : devices_) {
    WorkerDevice* out = response->add_devices();
    out->set_name(d->name());
    out->set_device_type(d->device_type());
    out->set_memory_limit(d->attributes().memory_limit_bytes);
  }
  if (transport_ != nullptr && !transport_->data_plane().empty()) {
    response->set_data_plane(transport_->data_plane());
    response->set_data_plane_address(transport_->data_plane_address());
  }
}

Device* Worker::FindDevice(const std::string& name) const {
  for (Device* d : devices_) {
    if (d->name() == name) return d;
  }
  return nullptr;
}

// Note [Worker isolation]
// A worker serves every session of every master that holds the cluster's token, so nothing one
// request says may change what another session's steps do. Task addresses are therefore kept
// per registered graph (not merged worker-wide, where a request could point task 1 of every
// session at a server of its choosing), and a step resolves its peers through the graph that
// runs it. When the server was started with the cluster spec, a request's addresses must also
// agree with it. Graph handles are 128-bit random strings (a handle is the only thing that
// names a graph in RunGraph and CleanupGraph), and a step id, once a graph of one session runs
// under it, cannot be joined by a graph of another session.
absl::Status Worker::CheckClusterAddresses(const RegisterGraphRequest& request) const {
  if (options_.known_cluster.empty()) return absl::OkStatus();
  for (const auto& [task, address] : request.cluster()) {
    auto known = options_.known_cluster.find(task);
    if (known == options_.known_cluster.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RegisterGraph on task ", task_, ": RegisterGraphRequest.cluster names task ", task,
          ", which is not in this server's cluster spec"));
    }
    if (known->second != address) {
      return absl::InvalidArgumentError(
          absl::StrCat("RegisterGraph on task ", task_, ": RegisterGraphRequest.cluster says task ",
                       task, " is at ", address, ", but this server's cluster spec says ",
                       known->second, "; give the master and the servers the same cluster spec"));
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<SharedKernels> Worker::SessionKernels(const std::string& session_handle) {
  // Without a session handle (an old client) each graph keeps its own kernels.
  if (session_handle.empty()) return std::make_shared<SharedKernels>();
  absl::MutexLock lock(&mu_);
  for (auto it = session_kernels_.begin(); it != session_kernels_.end();) {
    it = it->second.expired() ? session_kernels_.erase(it) : std::next(it);
  }
  std::shared_ptr<SharedKernels> kernels = session_kernels_[session_handle].lock();
  if (kernels == nullptr) {
    kernels = std::make_shared<SharedKernels>();
    session_kernels_[session_handle] = kernels;
  }
  return kernels;
}

absl::Status Worker::RegisterGraph(const RegisterGraphRequest& request,
                                   RegisterGraphResponse* response) {
  if (request.partitions().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("RegisterGraph on task ", task_, ": the request has no partition"));
  }
  SF_RETURN_IF_ERROR(CheckClusterAddresses(request));
  {
    absl::MutexLock lock(&mu_);
    if (static_cast<int>(graphs_.size()) >= options_.max_registered_graphs) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "RegisterGraph on task ", task_, ": ", graphs_.size(),
          " graphs are registered, the most this worker keeps (--max-graphs); close sessions "
          "that are no longer used"));
    }
  }
  auto graph = std::make_shared<RegisteredGraph>();
  graph->session_handle = request.session_handle();
  graph->shared_kernels = SessionKernels(graph->session_handle);
  graph->cluster =
      std::make_shared<const TaskAddresses>(request.cluster().begin(), request.cluster().end());
  std::set<int> arg_indices;
  // Sorted by device name (a std::map in the request is not ordered).
  std::map<std::string, const GraphDef*> partitions;
  for (const auto& [device_name, def] : request.partitions()) partitions[device_name] = &def;
  for (const auto& [device_name, def] : partitions) {
    Device* device = FindDevice(device_name);
    if (device == nullptr) {
      std::vector<std::string> names;
      for (Device* d : devices_) names.push_back(d->name());
      return absl::InvalidArgumentError(absl::StrCat(
          "RegisterGraph: a partition is for device '", device_name, "', which task ", task_,
          " does not have; its devices are [", absl::StrJoin(names, ", "), "]"));
    }
    auto built = Graph::FromGraphDef(*def);
    if (!built.ok()) {
      return WithContext(built.status(),
                         absl::StrCat("RegisterGraph: partition for ", device_name, ": "));
    }
    std::unique_ptr<Graph> part = std::move(built).value();
    for (Node* n : part->nodes()) {
      n->set_assigned_device(device_name);
      if (n->op() == kSendOp || n->op() == kRecvOp) {
        SF_RETURN_IF_ERROR(CheckIncarnation(*n, task_, incarnation_, device_name));
      }
      if (n->op() == kRecvOp) {
        std::string send_device;
        SF_RETURN_IF_ERROR(GetAttr(n->attrs(), "send_device", &send_device));
        auto src = DeviceName::Parse(send_device);
        if (!src.ok() || !src->has_job || !src->has_task) {
          return absl::InvalidArgumentError(absl::StrCat("RegisterGraph: node '", n->name(),
                                                         "' receives from '", send_device,
                                                         "', which is not a full device name"));
        }
        const std::string src_task = src->TaskName();
        if (src_task != task_ && request.cluster().count(src_task) == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("RegisterGraph: node '", n->name(), "' on ", device_name,
                           " receives from task ", src_task,
                           ", which RegisterGraphRequest.cluster does not list; add its "
                           "address there"));
        }
      }
      if (n->op() == kArgOp || n->op() == kRetvalOp) {
        // Read whole and bounded: the partition comes from the network, and an index of 2^32
        // read as an int would silently become 0.
        int64_t index = 0;
        SF_RETURN_IF_ERROR(GetAttr(n->attrs(), "index", &index));
        if (index < 0 || index >= kMaxStepArgs) {
          return absl::InvalidArgumentError(absl::StrCat("RegisterGraph: node '", n->name(), "' (",
                                                         n->op(), ") has index ", index,
                                                         ", outside [0, ", kMaxStepArgs, ")"));
        }
        if (n->op() == kArgOp) {
          arg_indices.insert(static_cast<int>(index));
        } else {
          graph->num_retvals = std::max(graph->num_retvals, static_cast<int>(index) + 1);
        }
      }
    }
    auto executor = Executor::Create(std::move(part), device, graph->shared_kernels.get());
    if (!executor.ok()) {
      return WithContext(executor.status(),
                         absl::StrCat("RegisterGraph: partition for ", device_name, ": "));
    }
    graph->executor_ptrs.push_back(executor->get());
    graph->executors.push_back(std::move(executor).value());
  }
  graph->arg_indices.assign(arg_indices.begin(), arg_indices.end());
  absl::MutexLock lock(&mu_);
  if (shutting_down_) {
    return absl::UnavailableError(absl::StrCat("task ", task_, " is shutting down"));
  }
  graph->handle = NewRandomHandle("graph-");
  graph->last_used = absl::Now();
  graphs_[graph->handle] = graph;
  response->set_graph_handle(graph->handle);
  return absl::OkStatus();
}

absl::StatusOr<std::string> Worker::ResolveTask(int64_t step_id, const std::string& task) const {
  absl::MutexLock lock(&mu_);
  auto step = steps_.find(step_id);
  if (step != steps_.end() && step->second.cluster != nullptr) {
    auto it = step->second.cluster->find(task);
    if (it != step->second.cluster->end()) return it->second;
  }
  return absl::NotFoundError(absl::StrCat("task ", task,
                                          " is not in the cluster the graph of step ", step_id,
                                          " was registered with on ", task_));
}

std::shared_ptr<RemoteRendezvous> Worker::NewRendezvous(int64_t step_id) {
  return std::make_shared<RemoteRendezvous>(
      step_id, task_, transport_,
      [this, step_id](const std::string& task) { return ResolveTask(step_id, task); });
}

absl::StatusOr<std::shared_ptr<RemoteRendezvous>> Worker::AcquireStep(
    int64_t step_id, bool run, const RegisteredGraph* graph) {
  if (shutting_down_) {
    return absl::UnavailableError(absl::StrCat("task ", task_, " is shutting down"));
  }
  auto retired = retired_.find(step_id);
  if (retired != retired_.end()) {
    if (!retired->second.ok()) return retired->second;
    return absl::FailedPreconditionError(
        absl::StrCat("step ", step_id, " already finished on task ", task_,
                     (run ? "; step ids must not be reused" : "; its tensors were all taken")));
  }
  auto it = steps_.find(step_id);
  if (it == steps_.end()) {
    // Steps a RunGraph started here, and steps only peers' RecvTensor calls have asked for so
    // far (the RunGraph may come later), are counted apart: anyone who reaches this task can
    // ask for tensors of made-up steps, and those must not crowd out the steps it runs.
    const int asked_only = static_cast<int>(steps_.size()) - started_steps_;
    if (run && started_steps_ >= options_.max_active_steps) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "task ", task_, " has ", started_steps_,
          " steps in flight, the most it runs at once; retry when some have finished"));
    }
    const int max_asked = std::max(16, options_.max_active_steps / 4);
    if (!run && asked_only >= max_asked) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "task ", task_, " has ", asked_only,
          " steps that peers asked tensors of before this task started them, the most it keeps; "
          "retry when some have started"));
    }
    it = steps_.emplace(step_id, Step()).first;
  }
  Step& step = it->second;
  if (step.rendezvous == nullptr) step.rendezvous = NewRendezvous(step_id);
  if (graph != nullptr) {
    if (step.cluster == nullptr) {
      step.session_handle = graph->session_handle;
      step.cluster = graph->cluster;
      ++started_steps_;
    } else if (step.session_handle != graph->session_handle) {
      return absl::FailedPreconditionError(
          absl::StrCat("RunGraph on task ", task_, ": step id ", step_id,
                       " is in use by another session; step ids must be unique (the master "
                       "draws them at random)"));
    }
  }
  if (run) {
    ++step.running;
  } else {
    ++step.serving;
  }
  step.last_activity = absl::Now();
  ++in_flight_;
  return step.rendezvous;
}

void Worker::ReleaseStep(int64_t step_id, bool run) {
  absl::MutexLock lock(&mu_);
  auto it = steps_.find(step_id);
  if (it != steps_.end()) {
    if (run) {
      --it->second.running;
    } else {
      --it->second.serving;
    }
    it->second.last_activity = absl::Now();
    MaybeRetireLocked(step_id);
  }
  --in_flight_;
}

void Worker::MaybeRetireLocked(int64_t step_id) {
  auto it = steps_.find(step_id);
  if (it == steps_.end()) return;
  Step& step = it->second;
  absl::Status status = step.rendezvous->status();
  if (step.running > 0) return;
  // A served tensor's waiter leaves the rendezvous before the serve is released.
  if (status.ok() && (step.serving > 0 || !step.rendezvous->Idle())) return;
  if (step.cluster != nullptr) --started_steps_;
  steps_.erase(it);
  retired_[step_id] = status;
  retired_order_.push_back(step_id);
  while (retired_order_.size() > kRetiredStepsKept) {
    retired_.erase(retired_order_.front());
    retired_order_.pop_front();
  }
}

void Worker::RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response,
                           StatusCallback done) {
  const int64_t step_id = request->step_id();
  std::shared_ptr<RegisteredGraph> graph;
  std::shared_ptr<RemoteRendezvous> rendezvous;
  {
    absl::MutexLock lock(&mu_);
    auto it = graphs_.find(request->graph_handle());
    if (it == graphs_.end()) {
      done(absl::NotFoundError(absl::StrCat(
          "RunGraph: task ", task_, " (incarnation ", absl::Hex(incarnation_), ") has no graph '",
          request->graph_handle(),
          "'; it was never registered here, was cleaned up, or the task restarted: register "
          "the graph again")));
      return;
    }
    graph = it->second;
  }
  std::map<int, Tensor> args;
  for (const IndexedTensor& arg : request->args()) {
    if (!std::binary_search(graph->arg_indices.begin(), graph->arg_indices.end(), arg.index())) {
      done(absl::InvalidArgumentError(absl::StrCat(
          "RunGraph step ", step_id, " of graph '", graph->handle, "' on task ", task_,
          ": RunGraphRequest.args has index ", arg.index(), ", which no _Arg of the graph reads",
          " (its _Arg indices are [", absl::StrJoin(graph->arg_indices, ", "), "])")));
      return;
    }
    if (args.count(arg.index()) > 0) {
      done(absl::InvalidArgumentError(absl::StrCat("RunGraph step ", step_id, " on task ", task_,
                                                   ": RunGraphRequest.args gives index ",
                                                   arg.index(), " twice")));
      return;
    }
    auto t = Tensor::FromProto(arg.tensor());
    if (!t.ok()) {
      done(absl::InvalidArgumentError(absl::StrCat("RunGraph step ", step_id, " on task ", task_,
                                                   ": args index ", arg.index(), ": ",
                                                   t.status().message())));
      return;
    }
    args[arg.index()] = std::move(t).value();
  }
  for (int index : graph->arg_indices) {
    if (args.count(index) == 0) {
      done(absl::InvalidArgumentError(
          absl::StrCat("RunGraph step ", step_id, " of graph '", graph->handle, "' on task ", task_,
                       ": no value for _Arg index ", index, " in RunGraphRequest.args")));
      return;
    }
  }
  absl::Status acquire_status;
  std::shared_ptr<std::atomic<bool>> cancelled;
  {
    absl::MutexLock lock(&mu_);
    auto acquired = AcquireStep(step_id, /*run=*/true, graph.get());
    if (acquired.ok()) {
      rendezvous = *acquired;
      cancelled = steps_[step_id].cancelled;
      ++graph->running;
      graph->last_used = absl::Now();
    } else {
      acquire_status = acquired.status();
    }
  }
  if (!acquire_status.ok()) {
    done(acquire_status);
    return;
  }
  auto state = std::make_shared<RunState>(std::move(args), graph->num_retvals);
  Executor::Args exec_args;
  exec_args.step_id = step_id;
  exec_args.call_frame = &state->frame;
  exec_args.rendezvous = rendezvous.get();
  exec_args.stats = request->trace() ? &state->stats : nullptr;
  exec_args.check_numerics = request->check_numerics();
  exec_args.cancelled = cancelled;
  exec_args.function_library = &functions_;
  const bool trace = request->trace();
  // The step's time limit: its executors are cancelled through the rendezvous's abort.
  std::optional<Timer::Id> deadline;
  if (request->timeout_ms() > 0) {
    const int64_t ms = request->timeout_ms();
    deadline = deadlines_.Schedule(absl::Now() + absl::Milliseconds(ms), [this, step_id, ms] {
      AbortStep(step_id,
                absl::DeadlineExceededError(absl::StrCat(
                    "step ", step_id, " on task ", task_, " ran past its limit of ", ms,
                    " ms (RunOptions.timeout_in_ms, the session's operation_timeout_in_ms or the "
                    "caller's deadline)")));
    });
  }
  auto step_done = [this, state, graph, rendezvous, step_id, response, trace, deadline,
                    done](absl::Status status) {
    if (deadline.has_value()) deadlines_.Cancel(*deadline);
    if (status.ok()) {
      for (auto& [index, value] : state->frame.TakeRetvalMap()) {
        IndexedTensor* out = response->add_retvals();
        out->set_index(index);
        value.AsProto(out->mutable_tensor());
      }
      if (trace) state->stats.Finalize(response->mutable_step_stats());
    } else {
      // A step stopped by AbortStep (a deadline, a caller's cancellation, another task's error)
      // reports why, not the executors' plain "cancelled".
      absl::Status abort = rendezvous->status();
      if (!abort.ok() && absl::IsCancelled(status)) status = abort;
      status = WithContext(status, absl::StrCat(task_, ": "));
      rendezvous->StartAbort(status);
    }
    {
      absl::MutexLock lock(&mu_);
      --graph->running;
      graph->last_used = absl::Now();
    }
    ReleaseStep(step_id, /*run=*/true);
    done(status);
  };
  // An aborted step must still run its executors' done path; they see the abort at once.
  ExecutorBarrier::Run(graph->executor_ptrs, exec_args, rendezvous.get(), std::move(step_done));
}

absl::Status Worker::CheckServedKey(const std::string& key) const {
  auto parsed = ParseRendezvousKey(key);
  if (!parsed.ok()) return parsed.status();
  if (parsed->src_task != task_) {
    return absl::InvalidArgumentError(absl::StrCat("RecvTensor: key '", key, "' is sent by task ",
                                                   parsed->src_task, ", not by this task (", task_,
                                                   "); ask that task's worker"));
  }
  if (parsed->src_incarnation != incarnation_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "RecvTensor: key '", key, "' was made for incarnation ", absl::Hex(parsed->src_incarnation),
        " of task ", task_, ", but this is incarnation ", absl::Hex(incarnation_),
        ": the task restarted since the graph was partitioned; register the graph again"));
  }
  return absl::OkStatus();
}

void Worker::RecvTensorAsync(int64_t step_id, const std::string& key, TensorCallback done) {
  absl::Status status = CheckServedKey(key);
  if (!status.ok()) {
    done(status, Tensor());
    return;
  }
  std::shared_ptr<RemoteRendezvous> rendezvous;
  {
    absl::MutexLock lock(&mu_);
    auto acquired = AcquireStep(step_id, /*run=*/false);
    if (!acquired.ok()) {
      status = acquired.status();
    } else {
      rendezvous = *acquired;
    }
  }
  if (!status.ok()) {
    done(status, Tensor());
    return;
  }
  rendezvous->RecvLocalAsync(
      key, [this, step_id, done = std::move(done)](const absl::Status& s, const Tensor& t) {
        done(s, t);
        ReleaseStep(step_id, /*run=*/false);
      });
}

absl::Status Worker::StepStatus(int64_t step_id) const {
  absl::MutexLock lock(&mu_);
  auto it = steps_.find(step_id);
  if (it != steps_.end()) return it->second.rendezvous->status();
  auto retired = retired_.find(step_id);
  return retired != retired_.end() ? retired->second : absl::OkStatus();
}

void Worker::SetAbortListener(AbortListener listener) {
  absl::MutexLock lock(&mu_);
  abort_listener_ = std::move(listener);
}

void Worker::NotifyAbort(int64_t step_id, const absl::Status& status) {
  AbortListener listener;
  {
    absl::MutexLock lock(&mu_);
    listener = abort_listener_;
  }
  if (listener) listener(step_id, status);
}

absl::Status Worker::CleanupGraph(const std::string& graph_handle) {
  absl::MutexLock lock(&mu_);
  if (graphs_.erase(graph_handle) == 0) {
    return absl::NotFoundError(
        absl::StrCat("CleanupGraph: task ", task_, " has no graph '", graph_handle, "'"));
  }
  return absl::OkStatus();
}

absl::Status Worker::ResetResources(const std::vector<std::string>& containers) {
  if (containers.size() > static_cast<size_t>(kMaxResetContainers)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ResetResources: ", containers.size(), " containers named; at most ", kMaxResetContainers));
  }
  const bool default_container =
      containers.empty() || std::find(containers.begin(), containers.end(), "") != containers.end();
  if (!default_container) return absl::OkStatus();
  for (Device* d : devices_) {
    if (ResourceMgr* resources = d->resource_manager()) resources->Clear();
  }
  LOG(INFO) << "task " << task_ << ": resources reset (Session.reset)";
  return absl::OkStatus();
}

void Worker::AbortStep(int64_t step_id, const absl::Status& status) {
  absl::Status abort =
      status.ok() ? absl::CancelledError(absl::StrCat("step ", step_id, " was aborted")) : status;
  std::shared_ptr<RemoteRendezvous> rendezvous;
  bool retired = false;
  {
    absl::MutexLock lock(&mu_);
    retired = retired_.count(step_id) > 0;  // finished or aborted already
  }
  if (retired) {
    // Its tensors may still be on their way out through the transport: it drops them.
    NotifyAbort(step_id, abort);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (retired_.count(step_id) > 0) return;
    auto it = steps_.find(step_id);
    // An abort for an unknown step is remembered (a RunGraph of it may still arrive), but
    // never grows the table past its limit.
    if (it == steps_.end() && static_cast<int>(steps_.size()) >= options_.max_active_steps) {
      return;
    }
    Step& step = steps_[step_id];
    if (step.rendezvous == nullptr) step.rendezvous = NewRendezvous(step_id);
    step.last_activity = absl::Now();
    step.cancelled->store(true);
    rendezvous = step.rendezvous;
  }
  rendezvous->StartAbort(abort);  // outside the lock: waiters' callbacks release the step
  {
    absl::MutexLock lock(&mu_);
    MaybeRetireLocked(step_id);
  }
  NotifyAbort(step_id, abort);
}

void Worker::Shutdown() {
  std::vector<std::shared_ptr<RemoteRendezvous>> rendezvous;
  {
    absl::MutexLock lock(&mu_);
    // Note [Draining]. A step that ended well here may still hold tensors a peer has not taken:
    // in between-graph replication the other worker pulls the last chunks of this task's
    // all-reduce after this task's step (and perhaps its process) is done. They are served
    // for up to shutdown_drain (each taken tensor retires its step, which re-checks this), so
    // a worker that exits right after its last step does not fail its peer's.
    if (!shutting_down_ && options_.shutdown_drain > absl::ZeroDuration()) {
      auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        for (const auto& [id, step] : steps_) {
          if (step.running == 0 && !step.session_handle.empty() && step.rendezvous->status().ok() &&
              !step.rendezvous->Idle()) {
            return false;
          }
        }
        return true;
      };
      mu_.AwaitWithTimeout(absl::Condition(&drained), options_.shutdown_drain);
    }
    shutting_down_ = true;
    for (auto& [id, step] : steps_) {
      rendezvous.push_back(step.rendezvous);
      step.cancelled->store(true);
    }
  }
  for (auto& r : rendezvous) {
    r->StartAbort(absl::UnavailableError(absl::StrCat("task ", task_, " is shutting down")));
  }
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
  mu_.Await(absl::Condition(&idle));
  std::vector<int64_t> ids;
  for (const auto& [id, step] : steps_) ids.push_back(id);
  for (int64_t id : ids) MaybeRetireLocked(id);
}

void Worker::CollectGarbage(absl::Time now) {
  struct Abandoned {
    int64_t step_id;
    std::shared_ptr<RemoteRendezvous> rendezvous;
    absl::Status status;
  };
  std::vector<Abandoned> abandoned;
  {
    absl::MutexLock lock(&mu_);
    if (options_.graph_idle_timeout > absl::ZeroDuration()) {
      for (auto it = graphs_.begin(); it != graphs_.end();) {
        const RegisteredGraph& g = *it->second;
        if (g.running == 0 && now - g.last_used > options_.graph_idle_timeout) {
          LOG(INFO) << task_ << ": dropped graph " << g.handle << " of session '"
                    << g.session_handle << "': no step ran it for "
                    << absl::FormatDuration(now - g.last_used) << " (graph idle timeout "
                    << absl::FormatDuration(options_.graph_idle_timeout) << ")";
          it = graphs_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (const auto& [id, step] : steps_) {
      if (step.running > 0) continue;
      const absl::Duration idle = now - step.last_activity;
      if (options_.abandoned_step_timeout <= absl::ZeroDuration() ||
          idle <= options_.abandoned_step_timeout) {
        continue;
      }
      absl::Status status = absl::AbortedError(absl::StrCat(
          "step ", id, " on task ", task_, " was abandoned: nothing ran or used it for ",
          absl::FormatDuration(idle), "; its tensors were freed"));
      LOG(INFO) << task_ << ": " << status.message();
      step.cancelled->store(true);
      abandoned.push_back({id, step.rendezvous, status});
    }
  }
  for (Abandoned& a : abandoned) {
    a.rendezvous->StartAbort(a.status);  // outside the lock: waiters' callbacks release the step
    {
      absl::MutexLock lock(&mu_);
      MaybeRetireLocked(a.step_id);
    }
    NotifyAbort(a.step_id, a.status);
  }
}

int Worker::num_active_steps() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(steps_.size());
}

int Worker::num_registered_graphs() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(graphs_.size());
}

}  // namespace shardflow
