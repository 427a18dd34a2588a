#include "ops/training.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/platform/status.h"
#include "ops/gradients.h"

namespace shardflow {

Var Var::Create(const Scope& outer, const Input& initial_value, bool trainable,
                bool validate_shape) {
  // A variable's nodes never inherit control dependencies: initialising it must not need
  // anything but its initial value.
  const Scope scope = outer.WithNoControlDependencies();
  if (!scope.ok()) return Var();
  std::string name = scope.UniqueNameForOp("Variable");
  // The handle node's name is the variable's shared name; the rest lives under it.
  Scope sub = scope.WithAbsoluteOpName(name).NewSubScope(name).WithNoControlDependencies();
  sub = Scope(sub);
  Output value = initial_value.is_literal()
                     ? ops::Const(sub.WithOpName("initial_value"), initial_value)
                     : initial_value.output();
  if (!value.valid()) {
    scope.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat("variable '", name, "': the initial value is invalid")));
    return Var();
  }
  const TensorShape shape = validate_shape ? value.shape() : TensorShape::Unknown();
  Operation handle = OpBuilder(scope.WithAbsoluteOpName(name), "VarHandleOp")
                         .Attr("dtype", value.dtype())
                         .Attr("shape", shape)
                         .Attr("shared_name", name)
                         .Finalize();
  if (!handle.valid()) return Var();
  Operation read = OpBuilder(scope.WithAbsoluteOpName(name + "/read").WithNoControlDependencies(),
                             "ReadVariableOp")
                       .Input(Output(handle.node(), 0))
                       .Attr("dtype", value.dtype())
                       .Attr("_shape", shape)
                       .Finalize();
  Operation assign = OpBuilder(scope.WithAbsoluteOpName(name + "/Assign"), "AssignVariableOp")
                         .Input(Output(handle.node(), 0))
                         .Input(value)
                         .Finalize();
  if (!read.valid() || !assign.valid()) return Var();
  VariableInfo info;
  info.handle = handle.node();
  info.read = read.node();
  info.initializer = assign.node();
  info.trainable = trainable;
  scope.AddVariable(info);
  return Var(info);
}

std::string Var::name() const { return info_.handle ? info_.handle->name() : "<invalid>"; }

std::vector<Var> AllVariables(const Scope& scope, bool trainable_only) {
  std::vector<Var> out;
  for (const VariableInfo& info : scope.variables()) {
    if (!trainable_only || info.trainable) out.push_back(Var(info));
  }
  return out;
}

Operation InitializeAllVariables(const Scope& scope) {
  std::vector<Operation> inits;
  for (const VariableInfo& info : scope.variables()) inits.push_back(Operation(info.initializer));
  return ops::NoOp(scope.WithControlDependencies(inits).WithOpName("init_all_variables"));
}

namespace init {
namespace {

Tensor ShapeTensor(const TensorShape& shape) {
  std::vector<int32_t> dims(shape.dims().begin(), shape.dims().end());
  return Tensor::FromVector(dims);
}

Tensor ScalarOf(double v, DataType dtype) {
  return dtype == DT_DOUBLE ? Tensor::Scalar(v) : Tensor::Scalar(static_cast<float>(v));
}

Output Random(const Scope& s, const char* op, const TensorShape& shape, int64_t seed,
              DataType dtype) {
  Operation r = OpBuilder(s, op)
                    .Input(ShapeTensor(shape))
                    .Attr("dtype", dtype)
                    .Attr("seed", seed)
                    .Attr("seed2", seed == 0 ? int64_t{0} : int64_t{1})
                    .Finalize();
  return r.valid() ? Output(r.node(), 0) : Output();
}

void Fans(const TensorShape& shape, double* fan_in, double* fan_out) {
  int r = shape.rank();
  if (r < 1) {
    *fan_in = *fan_out = 1;
  } else if (r == 1) {
    *fan_in = *fan_out = static_cast<double>(shape.dim(0));
  } else {
    double receptive = 1;
    for (int i = 0; i < r - 2; ++i) receptive *= static_cast<double>(shape.dim(i));
    *fan_in = receptive * static_cast<double>(shape.dim(r - 2));
    *fan_out = receptive * static_cast<double>(shape.dim(r - 1));
  }
}

// Standard deviation of a unit normal truncated at two standard deviations.
constexpr double kTruncatedStddev = 0.87962566103423978;

Output UniformLimit(const Scope& s, const TensorShape& shape, double limit, int64_t seed,
                    DataType dtype) {
  Output u = Random(s, "RandomUniform", shape, seed, dtype);
  return ops::Mul(s, ops::Sub(s, ops::Mul(s, u, ScalarOf(2, dtype)), ScalarOf(1, dtype)),
                  ScalarOf(limit, dtype));
}

}  // namespace

Output Zeros(const Scope& s, const TensorShape& shape, DataType dtype) {
  return ops::Fill(s, ShapeTensor(shape), ScalarOf(0, dtype));
}
Output Constant(const Scope& s, const TensorShape& shape, float value, DataType dtype) {
  return ops::Fill(s, ShapeTensor(shape), ScalarOf(value, dtype));
}
Output GlorotUniform(const Scope& s, const TensorShape& shape, int64_t seed, DataType dtype) {
  double in, out;
  Fans(shape, &in, &out);
  return UniformLimit(s, shape, std::sqrt(6.0 / (in + out)), seed, dtype);
}
Output GlorotNormal(const Scope& s, const TensorShape& shape, int64_t seed, DataType dtype) {
  double in, out;
  Fans(shape, &in, &out);
  return TruncatedNormal(s, shape, std::sqrt(2.0 / (in + out)) / kTruncatedStddev, seed, dtype);
}
Output HeUniform(const Scope& s, const TensorShape& shape, int64_t seed, DataType dtype) {
  double in, out;
  Fans(shape, &in, &out);
  return UniformLimit(s, shape, std::sqrt(6.0 / in), seed, dtype);
}
Output HeNormal(const Scope& s, const TensorShape& shape, int64_t seed, DataType dtype) {
  double in, out;
  Fans(shape, &in, &out);
  return TruncatedNormal(s, shape, std::sqrt(2.0 / in) / kTruncatedStddev, seed, dtype);
}
Output TruncatedNormal(const Scope& s, const TensorShape& shape, float stddev, int64_t seed,
                       DataType dtype) {
  return ops::Mul(s, Random(s, "TruncatedNormal", shape, seed, dtype), ScalarOf(stddev, dtype));
}

}  // namespace init

absl::StatusOr<Operation> Optimizer::Minimize(const Scope& scope, const Output& loss,
                                              std::vector<Var> vars) {
  if (vars.empty()) vars = AllVariables(scope, /*trainable_only=*/true);
  if (vars.empty())
    return absl::InvalidArgumentError("Minimize: the graph has no trainable variables");
  std::vector<Output> xs;
  for (const Var& v : vars) xs.push_back(v.value());
  std::vector<Output> grads;
  SF_RETURN_IF_ERROR(AddGradients(scope, {loss}, xs, &grads));
  std::vector<std::pair<Output, Var>> pairs;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (grads[i].valid()) pairs.push_back({grads[i], vars[i]});
  }
  if (pairs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Minimize: the loss '", loss.name(), "' depends on none of the variables"));
  }
  return ApplyGradients(scope, pairs);
}

absl::StatusOr<Operation> Optimizer::ApplyGradients(
    const Scope& scope, const std::vector<std::pair<Output, Var>>& grads) {
  Scope s = (name_.empty() ? scope : scope.NewSubScope(name_)).NewSubScope("train");
  // Shared state (Adam's beta powers) lives with the first variable, as TF1 colocates it: under
  // replica_device_setter that is a ps task, so the workers share one count and the chief's
  // initialisation covers it (on a worker's own device, a non-chief worker waited forever for
  // the chief to initialise it).
  auto first = [&](const Scope& at) {
    return grads.empty() ? at : at.WithDevice(grads[0].second.info().handle->requested_device());
  };
  first_dtype_ = grads.empty() ? DT_FLOAT : grads[0].second.dtype();
  SF_RETURN_IF_ERROR(Prepare(first(s), first(scope)));
  std::vector<Operation> updates;
  for (const auto& [grad, var] : grads) {
    Scope vs = s.WithDevice(var.info().handle->requested_device());
    SF_ASSIGN_OR_RETURN(Operation update, ApplyDense(vs, grad, var));
    updates.push_back(update);
  }
  SF_ASSIGN_OR_RETURN(Operation step, Finish(s, updates));
  SF_RETURN_IF_ERROR(scope.status());
  return step;
}

absl::StatusOr<Operation> Optimizer::Finish(const Scope& s, const std::vector<Operation>& updates) {
  return ops::NoOp(s.WithControlDependencies(updates).WithOpName("step"));
}

Var Optimizer::ZerosSlot(const Scope& scope, const Var& var, const std::string& slot) {
  Scope s = scope.WithAbsoluteOpName(var.name() + "/" + slot).WithNoControlDependencies();
  // Zeros shaped like the variable's initial value, not its current value: all initializers run
  // together, so reading the variable here could see it uninitialized.
  Output initial = GradInput(Operation(var.info().initializer), 1);
  Output zeros = ops::ZerosLike(s.WithAbsoluteOpName(var.name() + "/" + slot + "_init"), initial);
  return Var::Create(s, zeros, /*trainable=*/false);
}

Var Optimizer::ConstantSlot(const Scope& scope, const Var& var, const std::string& slot,
                            double value) {
  Scope s = scope.WithAbsoluteOpName(var.name() + "/" + slot).WithNoControlDependencies();
  Output initial = GradInput(Operation(var.info().initializer), 1);
  Scope is = s.WithAbsoluteOpName(var.name() + "/" + slot + "_init");
  Output filled =
      ops::Add(is, ops::ZerosLike(is, initial),
               initial.dtype() == DT_DOUBLE ? Input(Tensor::Scalar(value))
                                            : Input(Tensor::Scalar(static_cast<float>(value))));
  return Var::Create(s, filled, /*trainable=*/false);
}

Input Optimizer::LearningRate(const Scope& scope, double value, DataType dtype) const {
  if (lr_tensor_.valid()) {
    return lr_tensor_.dtype() == dtype ? lr_tensor_ : ops::Cast(scope, lr_tensor_, dtype);
  }
  return dtype == DT_DOUBLE ? Tensor::Scalar(value) : Tensor::Scalar(static_cast<float>(value));
}

namespace {
Operation Done(const Scope& s, Operation op) {
  if (!op.valid()) s.UpdateStatus(absl::InternalError("optimizer update could not be built"));
  return op;
}
Tensor Scalar(double v, DataType dtype) {
  return dtype == DT_DOUBLE ? Tensor::Scalar(v) : Tensor::Scalar(static_cast<float>(v));
}
}  // namespace

absl::StatusOr<Operation> GradientDescentOptimizer::ApplyDense(const Scope& s, const Output& grad,
                                                               const Var& var) {
  Operation op = OpBuilder(s, "ResourceApplyGradientDescent")
                     .Input(var.handle())
                     .Input(LearningRate(s, lr_, grad.dtype()))
                     .Input(grad)
                     .Finalize();
  SF_RETURN_IF_ERROR(s.status());
  return Done(s, op);
}

absl::StatusOr<Operation> MomentumOptimizer::ApplyDense(const Scope& s, const Output& grad,
                                                        const Var& var) {
  Var accum = ZerosSlot(s, var, "Momentum");
  Operation op = OpBuilder(s, "ResourceApplyMomentum")
                     .Input(var.handle())
                     .Input(accum.handle())
                     .Input(LearningRate(s, lr_, grad.dtype()))
                     .Input(grad)
                     .Input(Scalar(momentum_, grad.dtype()))
                     .Attr("use_nesterov", nesterov_)
                     .Finalize();
  SF_RETURN_IF_ERROR(s.status());
  return Done(s, op);
}

absl::Status AdamOptimizer::Prepare(const Scope& s, const Scope& outer) {
  // In the first variable's precision, as TF1's (float64 models keep beta^t exact); float
  // for the half types.
  const Scope vars = outer.WithNoControlDependencies();
  auto power = [&](const char* name, double beta) {
    Tensor start = first_dtype() == DT_DOUBLE ? Tensor::Scalar(beta)
                                              : Tensor::Scalar(static_cast<float>(beta));
    return Var::Create(vars.WithOpName(name), start, /*trainable=*/false);
  };
  beta1_power_ = power("beta1_power", beta1_);
  beta2_power_ = power("beta2_power", beta2_);
  return outer.status();
}

absl::StatusOr<Operation> AdamOptimizer::Finish(const Scope& s,
                                                const std::vector<Operation>& updates) {
  // beta^t *= beta after every variable was updated with this step's, where the powers live.
  const Scope at = s.WithDevice(beta1_power_.info().handle->requested_device());
  Operation done = ops::NoOp(at.WithControlDependencies(updates).WithOpName("updates_done"));
  std::vector<Operation> steps;
  for (auto [power, beta] : {std::pair{&beta1_power_, beta1_}, std::pair{&beta2_power_, beta2_}}) {
    const DataType dt = power->dtype();
    Output read(
        OpBuilder(at.WithControlDependencies(std::vector<Operation>{done}), "ReadVariableOp")
            .Input(power->handle())
            .Attr("dtype", dt)
            .Finalize(),
        0);
    steps.push_back(OpBuilder(at.WithOpName("update_" + power->name()), "AssignVariableOp")
                        .Input(power->handle())
                        .Input(ops::Mul(at, read, Scalar(beta, dt)))
                        .Finalize());
  }
  SF_RETURN_IF_ERROR(s.status());
  return ops::NoOp(s.WithControlDependencies(steps).WithOpName("step"));
}

absl::StatusOr<Operation> AdamOptimizer::ApplyDense(const Scope& s, const Output& grad,
                                                    const Var& var) {
  Var m = ZerosSlot(s, var, "Adam");
  Var v = ZerosSlot(s, var, "Adam_1");
  DataType t = grad.dtype();
  // beta^t in the variable's precision.
  auto power = [&](const Var& p) {
    return p.dtype() == t ? p.value() : ops::Cast(s, p.value(), t);
  };
  Operation op = OpBuilder(s, "ResourceApplyAdam")
                     .Input(var.handle())
                     .Input(m.handle())
                     .Input(v.handle())
                     .Input(power(beta1_power_))
                     .Input(power(beta2_power_))
                     .Input(LearningRate(s, lr_, t))
                     .Input(Scalar(beta1_, t))
                     .Input(Scalar(beta2_, t))
                     .Input(Scalar(epsilon_, t))
                     .Input(grad)
                     .Finalize();
  SF_RETURN_IF_ERROR(s.status());
  return Done(s, op);
}

namespace {
Output Read(const Scope& s, const Var& v, const Operation& after) {
  return Output(
      OpBuilder(s.WithControlDependencies(std::vector<Operation>{after}), "ReadVariableOp")
          .Input(v.handle())
          .Attr("dtype", v.dtype())
          .Finalize(),
      0);
}
Operation AssignTo(const Scope& s, const Var& v, const Input& value, const char* op) {
  return OpBuilder(s, op).Input(v.handle()).Input(value).Finalize();
}
}  // namespace

absl::StatusOr<Operation> RMSPropOptimizer::ApplyDense(const Scope& s, const Output& grad,
                                                       const Var& var) {
  const DataType dt = grad.dtype();
  Var ms = ConstantSlot(s, var, "RMSProp", 1.0);
  Var mom = ZerosSlot(s, var, "RMSProp_1");
  Output ms_new = ops::Add(s, ops::Mul(s, ms.value(), Scalar(decay_, dt)),
                           ops::Mul(s, ops::Square(s, grad), Scalar(1 - decay_, dt)));
  Operation set_ms = AssignTo(s, ms, ms_new, "AssignVariableOp");
  Output step = ops::Mul(s, ops::Mul(s, LearningRate(s, lr_, dt), grad),
                         ops::Rsqrt(s, ops::Add(s, ms_new, Scalar(epsilon_, dt))));
  Output mom_new = ops::Add(s, ops::Mul(s, mom.value(), Scalar(momentum_, dt)), step);
  Operation set_mom = AssignTo(s, mom, mom_new, "AssignVariableOp");
  Operation update = AssignTo(s.WithControlDependencies(std::vector<Operation>{set_ms, set_mom}),
                              var, ops::Neg(s, mom_new), "AssignAddVariableOp");
  SF_RETURN_IF_ERROR(s.status());
  return Done(s, update);
}

absl::StatusOr<Operation> AdagradOptimizer::ApplyDense(const Scope& s, const Output& grad,
                                                       const Var& var) {
  const DataType dt = grad.dtype();
  Var accum = ConstantSlot(s, var, "Adagrad", initial_);
  Operation add = AssignTo(s, accum, ops::Square(s, grad), "AssignAddVariableOp");
  Output accum_new = Read(s, accum, add);
  Output step = ops::Mul(s, ops::Mul(s, LearningRate(s, lr_, dt), grad), ops::Rsqrt(s, accum_new));
  Operation update = AssignTo(s, var, ops::Neg(s, step), "AssignAddVariableOp");
  SF_RETURN_IF_ERROR(s.status());
  return Done(s, update);
}

}  // namespace shardflow
