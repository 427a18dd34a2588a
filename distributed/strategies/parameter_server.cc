#include "distributed/strategies/parameter_server.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "core/platform/status.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

// Note [Variables on parameter servers] in parameter_server.h.
class PsPlacement {
 public:
  explicit PsPlacement(const std::vector<std::string>& ps) : ps_(ps), bytes_(ps.size(), 0) {}

  // Places every variable of the graph not placed yet, except those named in `local`.
  void PlaceNew(const Scope& scope, const std::set<std::string>& local,
                std::map<std::string, std::string>* where) {
    for (const VariableInfo& info : scope.variables()) {
      Var v(info);
      const std::string name = v.name();
      if (where->count(name) || local.count(name)) continue;
      std::string device = SlotOwnerDevice(name, *where);
      const int64_t size =
          v.shape().IsFullyDefined() ? v.shape().num_elements() * DataTypeSize(v.dtype()) : 0;
      size_t target = 0;
      for (size_t i = 0; i < ps_.size(); ++i) {
        if (device.empty() ? bytes_[i] < bytes_[target] : ps_[i] == device) target = i;
      }
      bytes_[target] += size;
      (*where)[name] = ps_[target];
      info.handle->set_requested_device(ps_[target]);
    }
  }

  // Every user of a placed variable's handle (reads, assignments, updates) requests its device.
  static void PlaceUsers(const Scope& scope, const std::map<std::string, std::string>& where) {
    for (const VariableInfo& info : scope.variables()) {
      auto it = where.find(Var(info).name());
      if (it == where.end()) continue;
      for (const Edge* e : info.handle->out_edges()) {
        if (!e->IsControl()) e->dst->set_requested_device(it->second);
      }
    }
  }

 private:
  // "<var>/<slot>" lives with <var> (the longest prefix that is a placed variable).
  static std::string SlotOwnerDevice(const std::string& name,
                                     const std::map<std::string, std::string>& where) {
    for (size_t slash = name.rfind('/'); slash != std::string::npos && slash > 0;
         slash = name.rfind('/', slash - 1)) {
      auto it = where.find(name.substr(0, slash));
      if (it != where.end()) return it->second;
    }
    return "";
  }

  std::vector<std::string> ps_;
  std::vector<int64_t> bytes_;
};

Output ReadVariable(const Scope& s, const Var& v) {
  return Output(
      OpBuilder(s, "ReadVariableOp").Input(v.handle()).Attr("dtype", v.dtype()).Finalize(), 0);
}

}  // namespace

absl::StatusOr<ParameterServerTraining> BuildParameterServerTraining(
    const Scope& scope, const ParameterServerOptions& options,
    const std::function<absl::StatusOr<Output>(const Scope& scope)>& build,
    const OptimizerFactory& make_optimizer) {
  if (options.ps_devices.empty()) {
    return absl::InvalidArgumentError(
        "parameter-server training needs at least one ps task (a \"ps\" job in the cluster)");
  }
  if (options.worker_device.empty()) {
    return absl::InvalidArgumentError("parameter-server training needs the worker's device");
  }
  if (options.sync && (options.replicas_to_aggregate < 1 ||
                       options.replicas_to_aggregate > options.total_num_replicas)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replicas_to_aggregate is ", options.replicas_to_aggregate, " but there are ",
        options.total_num_replicas,
        " workers: the chief would wait for gradients no worker sends. Aggregate between 1 "
        "and the number of workers"));
  }
  ParameterServerTraining out;
  const Scope ws = scope.WithDevice(options.worker_device);
  const std::string& ps0 = options.ps_devices[0];
  SF_ASSIGN_OR_RETURN(out.loss, build(ws));
  SF_RETURN_IF_ERROR(scope.status());
  std::vector<Var> vars = AllVariables(scope, /*trainable_only=*/true);
  if (vars.empty()) return absl::InvalidArgumentError("the model has no trainable variables");
  out.global_step = Var::Create(ws.WithOpName("global_step"), Tensor::Scalar<int64_t>(0),
                                /*trainable=*/false);
  // The global step on the first ps, as TF1's replica_device_setter puts it (created first).
  out.global_step.info().handle->set_requested_device(ps0);
  out.variable_devices[out.global_step.name()] = ps0;
  PsPlacement placement(options.ps_devices);
  std::set<std::string> local;  // worker-local variables
  placement.PlaceNew(scope, local, &out.variable_devices);
  // Placed before the optimizer is built: it puts each update and slot where its variable is.
  PsPlacement::PlaceUsers(scope, out.variable_devices);

  std::vector<Output> xs;
  for (const Var& v : vars) xs.push_back(v.value());
  std::vector<Output> grads;
  SF_RETURN_IF_ERROR(AddGradients(ws, {out.loss}, xs, &grads));
  std::vector<std::pair<Output, Var>> pairs;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (grads[i].valid()) pairs.push_back({grads[i], vars[i]});
  }
  if (pairs.empty()) {
    return absl::InvalidArgumentError("the loss depends on none of the model's variables");
  }
  const Output gate = options.gate ? options.gate(ws, out.loss) : Output();
  const Scope gated = gate.valid() ? ws.WithControlDependencies(gate) : ws;
  const Var& gs = out.global_step;
  const Scope ps_scope = scope.NewSubScope("ps_training").WithDevice(ps0);
  std::unique_ptr<Optimizer> opt = make_optimizer();

  // Readiness: one element in a queue on the first ps.
  Output ready_queue(OpBuilder(ps_scope.WithOpName("model_ready_q"), "FIFOQueueV2")
                         .Attr("dtype", DT_INT32)
                         .Attr("shape", TensorShape())
                         .Attr("shared_name", std::string("model_ready_q"))
                         .Finalize(),
                     0);
  out.ready_op = OpBuilder(ps_scope.WithOpName("mark_ready"), "QueueEnqueueV2")
                     .Input(ready_queue)
                     .Input(ops::Const(ps_scope, Tensor::Scalar<int32_t>(1)))
                     .Finalize();
  out.is_ready = Output(
      OpBuilder(ps_scope.WithOpName("is_ready"), "QueueSizeV2").Input(ready_queue).Finalize(), 0);
  Output done_queue(OpBuilder(ps_scope.WithOpName("workers_done_q"), "FIFOQueueV2")
                        .Attr("dtype", DT_INT32)
                        .Attr("shape", TensorShape())
                        .Attr("shared_name", std::string("workers_done_q"))
                        .Finalize(),
                    0);
  out.done_op = OpBuilder(ps_scope.WithOpName("mark_done"), "QueueEnqueueV2")
                    .Input(done_queue)
                    .Input(ops::Const(ps_scope, Tensor::Scalar<int32_t>(1)))
                    .Finalize();
  out.num_done = Output(
      OpBuilder(ps_scope.WithOpName("num_done"), "QueueSizeV2").Input(done_queue).Finalize(), 0);

  if (!options.sync) {
    // The global step before this step reads the variables, and after its own update.
    Output before = ReadVariable(ws.WithOpName("ps_training/step_before"), gs);
    for (const Var& v : vars) scope.graph()->AddControlEdge(before.node(), v.info().read);
    SF_ASSIGN_OR_RETURN(Operation update, opt->ApplyGradients(gated, pairs));
    Operation advance = OpBuilder(ws.WithOpName("ps_training/advance_global_step")
                                      .WithDevice(ps0)
                                      .WithControlDependencies(std::vector<Operation>{update}),
                                  "AssignAddVariableOp")
                            .Input(gs.handle())
                            .Input(Tensor::Scalar<int64_t>(1))
                            .Finalize();
    Output after = ReadVariable(ws.WithOpName("ps_training/step_after")
                                    .WithDevice(ps0)
                                    .WithControlDependencies(std::vector<Operation>{advance}),
                                gs);
    out.staleness = ops::Sub(ws.WithOpName("ps_training/staleness"), ops::Sub(ws, after, before),
                             Tensor::Scalar<int64_t>(1));
    out.train_op = ops::NoOp(ws.WithOpName("ps_training/train")
                                 .WithControlDependencies(std::vector<Operation>{advance}));
  } else {
    const Scope ss = scope.NewSubScope("sync_replicas");
    Var local_step = Var::Create(ss.WithOpName("local_step").WithDevice(options.worker_device),
                                 Tensor::Scalar<int64_t>(0), /*trainable=*/false);
    local.insert(local_step.name());
    std::vector<Operation> applies, init_steps, closes;
    std::vector<Output> accumulators, dropped;
    std::vector<std::pair<Output, Var>> means;
    for (const auto& [grad, var] : pairs) {
      const std::string& device = out.variable_devices[var.name()];
      Scope vs = ss.NewSubScope(var.name()).WithDevice(device);
      Output acc(OpBuilder(vs.WithOpName("grad_accum"), "ResourceConditionalAccumulator")
                     .Attr("dtype", var.dtype())
                     .Attr("shape", var.shape())
                     .Attr("shared_name", var.name() + "/grad_accum")
                     .Finalize(),
                 0);
      Scope gvs = gate.valid() ? vs.WithControlDependencies(gate) : vs;
      applies.push_back(OpBuilder(gvs.WithOpName("apply"), "ResourceAccumulatorApplyGradient")
                            .Input(acc)
                            .Input(local_step.value())
                            .Input(grad)
                            .Attr("dtype", var.dtype())
                            .Attr("source", options.worker_device)
                            .Finalize());
      Output mean(OpBuilder(vs.WithOpName("take"), "ResourceAccumulatorTakeGradient")
                      .Input(acc)
                      .Input(Tensor::Scalar<int32_t>(options.replicas_to_aggregate))
                      .Attr("dtype", var.dtype())
                      .Finalize(),
                  0);
      means.push_back({mean, var});
      init_steps.push_back(
          OpBuilder(vs.WithOpName("set_global_step"), "ResourceAccumulatorSetGlobalStep")
              .Input(acc)
              .Input(gs.value())
              .Finalize());
      closes.push_back(
          OpBuilder(vs.WithOpName("close"), "ResourceAccumulatorClose").Input(acc).Finalize());
      dropped.push_back(
          Output(OpBuilder(vs.WithOpName("num_dropped"), "ResourceAccumulatorNumDropped")
                     .Input(acc)
                     .Finalize(),
                 0));
    }
    const Scope qs = ss.WithDevice(ps0);
    Output queue(OpBuilder(qs.WithOpName("sync_token_q"), "FIFOQueueV2")
                     .Attr("dtype", DT_INT64)
                     .Attr("shape", TensorShape())
                     .Attr("shared_name", std::string("sync_token_q"))
                     .Finalize(),
                 0);
    // The chief's update: apply the means, advance the global step, hand out its tokens.
    SF_ASSIGN_OR_RETURN(Operation update, opt->ApplyGradients(ss, means));
    Operation advance = OpBuilder(qs.WithOpName("advance_global_step")
                                      .WithControlDependencies(std::vector<Operation>{update}),
                                  "AssignAddVariableOp")
                            .Input(gs.handle())
                            .Input(Tensor::Scalar<int64_t>(1))
                            .Finalize();
    Output step_now = ReadVariable(
        qs.WithOpName("step_now").WithControlDependencies(std::vector<Operation>{advance}), gs);
    Output tokens = ops::Fill(qs.WithOpName("tokens"),
                              Tensor::FromVector<int32_t>({options.total_num_replicas}), step_now);
    out.update_op = OpBuilder(qs.WithOpName("sync_op"), "QueueEnqueueManyV2")
                        .Input(queue)
                        .Input(tokens)
                        .Finalize();
    closes.push_back(
        OpBuilder(qs.WithOpName("close_tokens"), "QueueCloseV2").Input(queue).Finalize());
    // The worker's step: its gradients in, then a token out (the step it may compute next).
    Output token(
        OpBuilder(qs.WithOpName("token").WithControlDependencies(applies), "QueueDequeueV2")
            .Input(queue)
            .Attr("T", DT_INT64)
            .Finalize(),
        0);
    Scope local_scope = ss.WithDevice(options.worker_device);
    out.train_op = OpBuilder(local_scope.WithOpName("train"), "AssignVariableOp")
                       .Input(local_step.handle())
                       .Input(token)
                       .Finalize();
    out.local_step_init_op =
        OpBuilder(local_scope.WithOpName("local_step_init"), "AssignVariableOp")
            .Input(local_step.handle())
            .Input(gs.value())
            .Finalize();
    out.chief_init_op =
        ops::NoOp(ss.WithOpName("chief_init").WithDevice(ps0).WithControlDependencies(init_steps));
    out.close_op =
        ops::NoOp(ss.WithOpName("close").WithDevice(ps0).WithControlDependencies(closes));
    std::vector<Input> dropped_inputs(dropped.begin(), dropped.end());
    out.num_dropped = ops::AddN(ss.WithOpName("num_dropped").WithDevice(ps0), dropped_inputs);
  }
  // The optimizer's own variables (slots, step counts) go to the ps too.
  placement.PlaceNew(scope, local, &out.variable_devices);
  PsPlacement::PlaceUsers(scope, out.variable_devices);
  SF_RETURN_IF_ERROR(scope.status());
  return out;
}

}  // namespace shardflow
