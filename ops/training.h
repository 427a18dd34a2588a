// Training from C++: variables, initializers and optimizers.
//
//   Scope s = Scope::NewRootScope();
//   Var w = Var::Create(s.WithOpName("w"), init::GlorotUniform(s, {784, 10}, /*seed=*/1));
//   Var b = Var::Create(s.WithOpName("b"), init::Zeros(s, {10}));
//   Output logits = ops::Add(s, ops::MatMul(s, x, w.value()), b.value());
//   Output loss = ...;
//   AdamOptimizer adam(1e-3);
//   SF_ASSIGN_OR_RETURN(Operation train, adam.Minimize(s, loss));   // all trainable variables
//   Operation init = InitializeAllVariables(s);
//   session->Run({}, {}, {init.name()}, nullptr);                   // once
//   session->Run({{"x", batch}}, {loss.name()}, {train.name()}, &out);   // per step
//
// Variables live in the device's ResourceMgr and persist across steps of a session.
#ifndef SHARDFLOW_OPS_TRAINING_H_
#define SHARDFLOW_OPS_TRAINING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/ops.h"

namespace shardflow {

class Var {
 public:
  Var() = default;
  explicit Var(const VariableInfo& info) : info_(info) {}
  // A variable named by the scope's op name (or "Variable"), initialised to `initial_value`,
  // whose dtype and shape it takes (without validate_shape, its shape is unknown: assignments
  // may change it, as TF1's validate_shape=False). Registered with the scope
  // (InitializeAllVariables, Optimizer::Minimize, checkpoints find it there).
  static Var Create(const Scope& scope, const Input& initial_value, bool trainable = true,
                    bool validate_shape = true);

  bool valid() const { return info_.handle != nullptr; }
  std::string name() const;  // the variable's shared name
  Output handle() const { return Output(info_.handle, 0); }
  // The value the model uses; gradients are taken with respect to it.
  Output value() const { return Output(info_.read, 0); }
  Operation initializer() const { return Operation(info_.initializer); }
  DataType dtype() const { return value().dtype(); }
  TensorShape shape() const { return value().shape(); }
  const VariableInfo& info() const { return info_; }

 private:
  VariableInfo info_;
};

// All variables of the scope's graph (trainable only, if asked).
std::vector<Var> AllVariables(const Scope& scope, bool trainable_only = false);
// One op that runs every variable's initializer.
Operation InitializeAllVariables(const Scope& scope);

// Initial values. `seed` makes them reproducible (0 = random).
namespace init {
Output Zeros(const Scope& s, const TensorShape& shape, DataType dtype = DT_FLOAT);
Output Constant(const Scope& s, const TensorShape& shape, float value, DataType dtype = DT_FLOAT);
// fan_in/fan_out from the shape: dense [in, out]; conv [kh, kw, in, out] (times the kernel area).
Output GlorotUniform(const Scope& s, const TensorShape& shape, int64_t seed,
                     DataType dtype = DT_FLOAT);
Output GlorotNormal(const Scope& s, const TensorShape& shape, int64_t seed,
                    DataType dtype = DT_FLOAT);
Output HeUniform(const Scope& s, const TensorShape& shape, int64_t seed, DataType dtype = DT_FLOAT);
Output HeNormal(const Scope& s, const TensorShape& shape, int64_t seed, DataType dtype = DT_FLOAT);
Output TruncatedNormal(const Scope& s, const TensorShape& shape, float stddev, int64_t seed,
                       DataType dtype = DT_FLOAT);
}  // namespace init

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Adds the gradients of `loss` with respect to `vars` (default: every trainable variable) and
  // one update per variable; returns an op that runs them all.
  absl::StatusOr<Operation> Minimize(const Scope& scope, const Output& loss,
                                     std::vector<Var> vars = {});
  // Updates each variable with its gradient.
  absl::StatusOr<Operation> ApplyGradients(const Scope& scope,
                                           const std::vector<std::pair<Output, Var>>& grads);
  // Takes the learning rate from a float scalar tensor (e.g. a Placeholder fed every step, for a
  // schedule) instead of the constant given at construction. Call before Minimize.
  void set_learning_rate(const Output& lr) { lr_tensor_ = lr; }
  // The update ops go under this sub-scope of the caller's scope (TF1's optimizer name, "Adam");
  // gradients and shared state (Adam's beta powers) are named in the caller's scope, as TF1's.
  void set_name(std::string name) { name_ = std::move(name); }

 protected:
  // Called once per ApplyGradients before any ApplyDense (e.g. to create shared state), with the
  // update scope and the caller's (both on the first variable's device).
  virtual absl::Status Prepare(const Scope& scope, const Scope& outer) { return absl::OkStatus(); }
  virtual absl::StatusOr<Operation> ApplyDense(const Scope& scope, const Output& grad,
                                               const Var& var) = 0;
  // Groups the updates into the returned op; may add work that runs after all of them.
  virtual absl::StatusOr<Operation> Finish(const Scope& scope,
                                           const std::vector<Operation>& updates);
  // A non-trainable variable of var's shape and dtype, initialised to zeros (or `value`),
  // named "<var>/<slot>".
  static Var ZerosSlot(const Scope& scope, const Var& var, const std::string& slot);
  static Var ConstantSlot(const Scope& scope, const Var& var, const std::string& slot,
                          double value);
  // The learning rate as an input of `dtype`: the tensor from set_learning_rate, else `value`.
  Input LearningRate(const Scope& scope, double value, DataType dtype) const;
  // The first variable's dtype in this ApplyGradients (TF1 makes shared state of that type).
  DataType first_dtype() const { return first_dtype_; }

 private:
  Output lr_tensor_;
  std::string name_;
  DataType first_dtype_ = DT_FLOAT;
};

class GradientDescentOptimizer : public Optimizer {
 public:
  explicit GradientDescentOptimizer(double learning_rate) : lr_(learning_rate) {}

 protected:
  absl::StatusOr<Operation> ApplyDense(const Scope& s, const Output& grad, const Var& var) override;

 private:
  double lr_;
};

class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(double learning_rate, double momentum, bool use_nesterov = false)
      : lr_(learning_rate), momentum_(momentum), nesterov_(use_nesterov) {}

 protected:
  absl::StatusOr<Operation> ApplyDense(const Scope& s, const Output& grad, const Var& var) override;

 private:
  double lr_, momentum_;
  bool nesterov_;
};

class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(double learning_rate, double beta1 = 0.9, double beta2 = 0.999,
                         double epsilon = 1e-8)
      : lr_(learning_rate), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}

 protected:
  absl::Status Prepare(const Scope& s, const Scope& outer) override;
  absl::StatusOr<Operation> ApplyDense(const Scope& s, const Output& grad, const Var& var) override;
  absl::StatusOr<Operation> Finish(const Scope& s, const std::vector<Operation>& updates) override;

 private:
  double lr_, beta1_, beta2_, epsilon_;
  // TF1's beta1^t and beta2^t (float variables "beta1_power", "beta2_power", so checkpoints keep
  // them and TF1's restore into them), multiplied by beta1 and beta2 after each step's updates.
  Var beta1_power_, beta2_power_;
};

// TF1's tf.train.RMSPropOptimizer (not centered): ms = decay * ms + (1 - decay) * grad^2;
// mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom. ms starts at ones, as in
// TF1. Built from element-wise ops and assignments (no fused kernel yet).
class RMSPropOptimizer : public Optimizer {
 public:
  RMSPropOptimizer(double learning_rate, double decay = 0.9, double momentum = 0.0,
                   double epsilon = 1e-10)
      : lr_(learning_rate), decay_(decay), momentum_(momentum), epsilon_(epsilon) {}

 protected:
  absl::StatusOr<Operation> ApplyDense(const Scope& s, const Output& grad, const Var& var) override;

 private:
  double lr_, decay_, momentum_, epsilon_;
};

// TF1's tf.train.AdagradOptimizer: accum += grad^2; var -= lr * grad / sqrt(accum), the
// accumulator starting at initial_accumulator_value (0.1). Built from element-wise ops.
class AdagradOptimizer : public Optimizer {
 public:
  explicit AdagradOptimizer(double learning_rate, double initial_accumulator_value = 0.1)
      : lr_(learning_rate), initial_(initial_accumulator_value) {}

 protected:
  absl::StatusOr<Operation> ApplyDense(const Scope& s, const Output& grad, const Var& var) override;

 private:
  double lr_, initial_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_OPS_TRAINING_H_
