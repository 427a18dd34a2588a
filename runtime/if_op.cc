// The If kernel (TF1's cond; Note [While as a function call] in ops/control_flow_ops.cc): calls
// then_branch or else_branch through the step's FunctionLibrary and returns its results. Only
// the branch taken runs. Asynchronous, like While, so a branch that spans devices holds no
// thread while it runs.
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/framework/function.h"
#include "core/framework/kernel_registry.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

class IfOp : public AsyncOpKernel {
 public:
  explicit IfOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    const AttrMap& attrs = c->def().attr();
    init_ = GetAttr(attrs, "Tout", &types_);
    if (init_.ok()) init_ = GetAttr(attrs, "output_shapes", &shapes_);
    std::vector<GraphFunction> branches(2);
    if (init_.ok()) init_ = GetAttr(attrs, "then_branch", &branches[0]);
    if (init_.ok()) init_ = GetAttr(attrs, "else_branch", &branches[1]);
    for (int b = 0; init_.ok() && b < 2; ++b) {
      if (branches[b].ret_size() != static_cast<int>(types_.size())) {
        init_ = absl::InvalidArgumentError(absl::StrCat(
            b == 0 ? "then_branch" : "else_branch", " returns ", branches[b].ret_size(),
            " values and the If has ", types_.size(), " outputs"));
      }
    }
    branches_ = std::make_unique<KernelFunctions>(std::move(branches));
  }
  bool IsExpensive() const override { return false; }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    auto fail = [&](const absl::Status& s) {
      ctx->SetStatus(s);
      done();
    };
    if (!init_.ok()) return fail(init_);
    if (ctx->function_library() == nullptr || ctx->call_options() == nullptr) {
      return fail(absl::FailedPreconditionError(
          "an If runs its branches as functions, and this executor was given no function "
          "library (run the graph through a session or a worker)"));
    }
    const Tensor& pred = ctx->input(0);
    if (pred.dtype() != DT_BOOL || pred.NumElements() != 1) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("cond's predicate must be one bool, got ", DataTypeString(pred.dtype()),
                       " of shape ", pred.shape().DebugString())));
    }
    const int taken = pred.data<bool>()[0] ? 0 : 1;
    absl::StatusOr<FunctionLibrary::Handle> handle =
        branches_->Get(ctx->function_library(), taken, ctx->device()->name());
    if (!handle.ok()) {
      return fail(WithContext(
          handle.status(),
          absl::StrCat("cannot prepare cond's ", taken == 0 ? "true" : "false", " branch: ")));
    }
    std::vector<Tensor> args;
    for (int i = 1; i < ctx->num_inputs(); ++i) args.push_back(ctx->input(i));
    auto rets = std::make_shared<std::vector<Tensor>>();
    ctx->function_library()->Run(
        *handle, *ctx->call_options(), std::move(args), rets.get(),
        [this, ctx, rets, taken, done = std::move(done)](const absl::Status& s) {
          const char* which = taken == 0 ? "true" : "false";
          absl::Status status =
              s.ok() ? Check(*rets, which)
                     : WithContext(s, absl::StrCat("in cond's ", which, " branch: "));
          if (status.ok()) {
            for (size_t i = 0; i < rets->size(); ++i) {
              ctx->set_output(static_cast<int>(i), (*rets)[i]);
            }
          } else {
            ctx->SetStatus(status);
          }
          done();
        });
  }

 private:
  absl::Status Check(const std::vector<Tensor>& rets, const char* which) const {
    for (size_t i = 0; i < types_.size(); ++i) {
      const Tensor* t = i < rets.size() ? &rets[i] : nullptr;
      bool fits = t != nullptr && t->IsInitialized() && t->dtype() == types_[i] &&
                  (shapes_.empty() || shapes_[i].IsCompatibleWith(t->shape()));
      if (!fits) {
        return absl::InvalidArgumentError(
            absl::StrCat("cond's ", which, " branch returned ",
                         t != nullptr && t->IsInitialized()
                             ? DataTypeString(t->dtype()) + " " + t->shape().DebugString()
                             : std::string("nothing"),
                         " as output ", i, ", which is declared ", DataTypeString(types_[i]),
                         shapes_.empty() ? std::string() : " " + shapes_[i].DebugString()));
      }
    }
    return absl::OkStatus();
  }

  absl::Status init_;
  std::vector<DataType> types_;
  std::vector<TensorShape> shapes_;
  std::unique_ptr<KernelFunctions> branches_;  // then, else
};

REGISTER_KERNEL(KernelDef("If").Device(kDeviceCpu), IfOp);

}  // namespace
}  // namespace shardflow
