// Symbolic automatic differentiation.
//
//   std::vector<Output> grads;
//   SF_RETURN_IF_ERROR(AddGradients(scope, {loss}, {w.value(), b.value()}, &grads));
//
// AddGradients adds the backward graph to `scope`: for each op between xs and ys it calls the
// op's registered gradient function, sums the gradients of tensors used more than once (AddN),
// and stops at StopGradient and at ops registered with no gradient. grads[i] is d(sum of ys)/d
// xs[i]; it is an invalid Output when ys do not depend on xs[i].
//
// Writing a gradient function:
//
//   absl::Status MulGrad(const Scope& s, const Operation& op, const std::vector<Output>& dy,
//                        std::vector<Output>* dx) {
//     Output x = GradInput(op, 0), y = GradInput(op, 1);
//     dx->push_back(ReduceLike(s, ops::Mul(s, dy[0], y), x));   // sums broadcast dims away
//     dx->push_back(ReduceLike(s, ops::Mul(s, dy[0], x), y));
//     return absl::OkStatus();
//   }
//   REGISTER_GRADIENT("Mul", MulGrad);
//
// Contract: dy has one entry per output of `op`; an entry is never invalid (outputs without a
// gradient get zeros). The function appends one entry per data input of `op` to dx, in order; an
// invalid Output means "no gradient" for that input (integer inputs, shapes, axes).
#ifndef SHARDFLOW_OPS_GRADIENTS_H_
#define SHARDFLOW_OPS_GRADIENTS_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "ops/scope.h"

namespace shardflow {

using GradFunc = std::function<absl::Status(const Scope& scope, const Operation& op,
                                            const std::vector<Output>& grad_outputs,
                                            std::vector<Output>* grad_inputs)>;

// A node attr (string) naming the registered gradient function to use for the node instead of
// its op's; set by Python's gradient_override_map and custom_gradient.
inline constexpr char kGradientOpTypeAttr[] = "_gradient_op_type";

class GradientRegistry {
 public:
  static GradientRegistry* Global();
  // Registers (or, for a name registered before, replaces) the function for `op`.
  void Register(const std::string& op, GradFunc fn);
  // Ops whose inputs get no gradient (e.g. Shape, ArgMax, comparisons).
  void RegisterNoGradient(const std::string& op);
  // nullptr for ops without a registered function; `*no_gradient` says whether the op was
  // registered as having none. The pointer stays valid (entries are never removed).
  const GradFunc* Lookup(const std::string& op, bool* no_gradient) const;

 private:
  // Registrations also come at run time (Python's sf.RegisterGradient).
  mutable absl::Mutex mu_;
  std::map<std::string, GradFunc> fns_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, bool> none_ ABSL_GUARDED_BY(mu_);
};

struct GradientRegistration {
  GradientRegistration(const std::string& op, GradFunc fn) {
    GradientRegistry::Global()->Register(op, std::move(fn));
  }
  explicit GradientRegistration(const std::string& op) {
    GradientRegistry::Global()->RegisterNoGradient(op);
  }
};

#define SF_GRAD_UNIQ_HELPER(ctr, ...) \
  static ::shardflow::GradientRegistration sf_grad_registration_##ctr(__VA_ARGS__)
#define SF_GRAD_UNIQ(ctr, ...) SF_GRAD_UNIQ_HELPER(ctr, __VA_ARGS__)
#define REGISTER_GRADIENT(op, fn) SF_GRAD_UNIQ(__COUNTER__, op, fn)
#define REGISTER_NO_GRADIENT(op) SF_GRAD_UNIQ(__COUNTER__, op)

// Adds the gradients of sum(ys) (or of sum(ys[i] * grad_ys[i]) when grad_ys is given) with
// respect to xs. The nodes of `stop_at` pass no gradient to their inputs, as if their outputs
// were constants (TF's stop_gradients). Errors name the op that has no registered gradient
// function.
absl::Status AddGradients(const Scope& scope, const std::vector<Output>& ys,
                          const std::vector<Output>& xs, std::vector<Output>* grads,
                          const std::vector<Output>& grad_ys = {},
                          const std::vector<Output>& stop_at = {});

// Helpers for gradient functions.
// The tensor feeding data input i of `op`.
Output GradInput(const Operation& op, int i);
// Output i of `op`.
inline Output GradOutput(const Operation& op, int i) { return Output(op.node(), i); }
// Sums `grad` over the dimensions that broadcasting added or stretched so that it has the shape
// of `like` (known at build time when possible, else computed at run time with SumToShape).
Output ReduceLike(const Scope& scope, const Output& grad, const Output& like);

}  // namespace shardflow

#endif  // SHARDFLOW_OPS_GRADIENTS_H_
