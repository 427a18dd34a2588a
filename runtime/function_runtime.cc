#include "runtime/function_runtime.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "core/platform/status.h"
#include "runtime/call_frame.h"
#include "runtime/executor_barrier.h"
#include "runtime/graph_execution_state.h"
#include "runtime/rendezvous.h"

namespace shardflow {

struct FunctionRuntime::Instance {
  int num_args = 0;
  int num_rets = 0;
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<Executor*> executor_ptrs;
};

FunctionRuntime::FunctionRuntime(std::vector<Device*> devices, SessionOptionsProto config)
    : devices_(std::move(devices)), config_(std::move(config)) {}

FunctionRuntime::~FunctionRuntime() = default;

absl::StatusOr<std::unique_ptr<FunctionRuntime::Instance>> FunctionRuntime::Build(
    const GraphFunction& function, const std::string& default_device) const {
  GraphDef graph = function.graph();
  std::set<std::string> args(function.arg().begin(), function.arg().end());
  if (args.size() != static_cast<size_t>(function.arg_size())) {
    return absl::InvalidArgumentError("a function names the same argument twice");
  }
  std::vector<std::string> targets;
  for (NodeDef& n : *graph.mutable_node()) {
    if (n.device().empty()) n.set_device(default_device);
    n.clear_assigned_device();
    if (!args.count(n.name())) targets.push_back(n.name());
  }
  GraphExecutionStateOptions options;
  options.config = config_;
  for (Device* d : devices_) options.devices.push_back(d->attributes());
  GraphExecutionState state(std::move(options));
  SF_RETURN_IF_ERROR(state.Create(graph));
  std::vector<std::string> feeds(function.arg().begin(), function.arg().end());
  std::vector<std::string> fetches(function.ret().begin(), function.ret().end());
  SF_ASSIGN_OR_RETURN(auto plan, state.BuildPlan(feeds, fetches, targets));
  auto instance = std::make_unique<Instance>();
  instance->num_args = function.arg_size();
  instance->num_rets = function.ret_size();
  for (const auto& [device_name, part] : plan->partitions) {
    Device* device = nullptr;
    for (Device* d : devices_) {
      if (d->name() == device_name) device = d;
    }
    if (device == nullptr) {
      return absl::InternalError(absl::StrCat("function placed on unknown device ", device_name));
    }
    SF_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                        Executor::CreateForPartition(part, device));
    instance->executor_ptrs.push_back(executor.get());
    instance->executors.push_back(std::move(executor));
  }
  return instance;
}

absl::StatusOr<FunctionLibrary::Handle> FunctionRuntime::Instantiate(
    const GraphFunction& function, const std::string& default_device) {
  std::string key = absl::StrCat(default_device, "\n", function.SerializeAsString());
  {
    absl::MutexLock lock(&mu_);
    auto it = handles_.find(key);
    if (it != handles_.end()) return it->second;
  }
  // Built outside the lock: a body may hold a loop whose kernel instantiates its own body.
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Instance> instance, Build(function, default_device));
  absl::MutexLock lock(&mu_);
  auto it = handles_.find(key);
  if (it != handles_.end()) return it->second;  // built twice concurrently; keep the first
  Handle handle = static_cast<Handle>(instances_.size());
  instances_.push_back(std::move(instance));
  handles_[key] = handle;
  return handle;
}

void FunctionRuntime::Run(Handle handle, const FunctionCallOptions& options,
                          std::vector<Tensor> args, std::vector<Tensor>* rets, DoneCallback done) {
  Instance* instance = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (handle >= 0 && handle < static_cast<Handle>(instances_.size())) {
      instance = instances_[handle].get();
    }
  }
  if (instance == nullptr) {
    done(absl::InternalError(absl::StrCat("no function with handle ", handle)));
    return;
  }
  if (static_cast<int>(args.size()) != instance->num_args) {
    done(absl::InternalError(absl::StrCat("a function taking ", instance->num_args,
                                          " arguments was called with ", args.size())));
    return;
  }
  std::map<int, Tensor> arg_map;
  for (size_t i = 0; i < args.size(); ++i) arg_map[static_cast<int>(i)] = std::move(args[i]);
  struct Call {
    Call(std::map<int, Tensor> a, int n) : frame(std::move(a), n) {}
    StepCallFrame frame;
    LocalRendezvous rendezvous;
  };
  auto call = std::make_shared<Call>(std::move(arg_map), instance->num_rets);
  Executor::Args exec_args;
  exec_args.step_id = options.step_id;
  exec_args.call_frame = &call->frame;
  exec_args.rendezvous = &call->rendezvous;
  exec_args.collective_executor = options.collective_executor;
  exec_args.stats = options.stats;
  exec_args.cancelled = options.cancelled;
  exec_args.check_numerics = options.check_numerics;
  exec_args.function_library = this;
  ExecutorBarrier::Run(
      instance->executor_ptrs, exec_args, &call->rendezvous,
      [call, rets, done = std::move(done)](const absl::Status& s) {
        if (s.ok()) *rets = call->frame.TakeRetvals();
        done(s);
      },
      /*run_first_here=*/true);
}

}  // namespace shardflow
