// Variable kernels: handles, reads, assignments. The variable lives in the device's ResourceMgr.
#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/resource_mgr.h"
#include "core/platform/status.h"
#include "kernels/cpu/variable_util.h"

namespace shardflow {

absl::StatusOr<ResourceMgr*> ResourcesOf(OpKernelContext* ctx) {
  ResourceMgr* rm = ctx->device()->resource_manager();
  if (rm == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("device ", ctx->device()->name(), " keeps no variables or other resources"));
  }
  return rm;
}

HandleAttrs ReadHandleAttrs(OpKernelConstruction* c) {
  HandleAttrs a;
  absl::Status s = c->GetAttr("shared_name", &a.name);
  if (s.ok()) s = c->GetAttr("dtype", &a.dtype);
  if (s.ok()) s = c->GetAttr("shape", &a.shape);
  if (!s.ok()) c->SetStatus(s);
  if (a.name.empty()) a.name = c->def().name();
  a.handle = Tensor(DT_STRING, TensorShape());
  a.handle.data<std::string>()[0] = a.name;
  return a;
}

absl::StatusOr<std::shared_ptr<Variable>> LookupVariable(OpKernelContext* ctx, int input) {
  SF_ASSIGN_OR_RETURN(ResourceMgr * rm, ResourcesOf(ctx));
  SF_ASSIGN_OR_RETURN(std::string name, ResourceHandleName(ctx, input));
  return rm->Lookup(name);
}

absl::StatusOr<std::string> ResourceHandleName(OpKernelContext* ctx, int input) {
  const Tensor& handle = ctx->input(input);
  if (handle.dtype() != DT_STRING || handle.NumElements() != 1) {
    return absl::InvalidArgumentError("a resource handle must be a string scalar");
  }
  return handle.data<std::string>()[0];
}

std::string UninitializedMessage(const std::string& name) {
  return absl::StrCat("variable '", name,
                      "' is not initialized: run its initializer first (Python: "
                      "sess.run(sf.global_variables_initializer()); C++: the op "
                      "InitializeAllVariables returns), or restore it from a checkpoint");
}

absl::Status CheckAssignable(const std::string& name, const Variable& var, const Tensor& value) {
  if (var.dtype() != value.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable '", name, "' holds ", DataTypeString(var.dtype()),
                     " but the value is ", DataTypeString(value.dtype())));
  }
  if (!value.shape().IsCompatibleWith(var.declared_shape())) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable '", name, "' has shape ", var.declared_shape().DebugString(),
                     " but the value has shape ", value.shape().DebugString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor*> AssignAddTarget(const std::string& name, Variable* var,
                                        const Tensor& value) {
  SF_RETURN_IF_ERROR(CheckAssignable(name, *var, value));
  if (!var->initialized()) return absl::FailedPreconditionError(UninitializedMessage(name));
  Tensor* v = var->mutable_value();
  if (v->shape() != value.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AssignAdd to variable '", name, "' of shape ", v->shape().DebugString(),
                     " with a value of shape ", value.shape().DebugString()));
  }
  return v;
}

absl::StatusOr<Tensor*> WritableVariable(OpKernelContext* ctx, int input, Variable* var,
                                         const Tensor& grad) {
  const std::string& name = ctx->input(input).data<std::string>()[0];
  if (!var->initialized()) return absl::FailedPreconditionError(UninitializedMessage(name));
  if (var->dtype() != grad.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable '", name, "' holds ", DataTypeString(var->dtype()),
                     " but the gradient is ", DataTypeString(grad.dtype())));
  }
  Tensor* v = var->mutable_value();
  if (v->shape() != grad.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable '", name, "' has shape ", v->shape().DebugString(),
                     " but its gradient has shape ", grad.shape().DebugString()));
  }
  return v;
}

absl::Status CheckDistinctVariables(OpKernelContext* ctx,
                                    const std::vector<std::pair<int, Variable*>>& vars) {
  for (size_t i = 0; i < vars.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (vars[i].second == vars[j].second) {
        return absl::InvalidArgumentError(
            absl::StrCat("inputs ", vars[j].first, " and ", vars[i].first,
                         " of this update are the same variable '",
                         ctx->input(vars[i].first).data<std::string>()[0],
                         "'; a variable and its optimizer slots must be distinct variables"));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

class VarHandleOp : public OpKernel {
 public:
  explicit VarHandleOp(OpKernelConstruction* c) : OpKernel(c), attrs_(ReadHandleAttrs(c)) {}
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    auto rm = ResourcesOf(ctx);
    OP_REQUIRES_OK(ctx, rm.status());
    OP_REQUIRES_OK(ctx, (*rm)->LookupOrCreate(attrs_.name, attrs_.dtype, attrs_.shape).status());
    ctx->set_output(0, attrs_.handle);
  }

 private:
  const HandleAttrs attrs_;
};

class ReadVariableOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    auto var = LookupVariable(ctx, 0);
    OP_REQUIRES_OK(ctx, var.status());
    absl::MutexLock lock((*var)->mu());
    const std::string& name = ctx->input(0).data<std::string>()[0];
    OP_REQUIRES(ctx, (*var)->initialized(),
                absl::FailedPreconditionError(UninitializedMessage(name)));
    OP_REQUIRES(ctx, (*var)->dtype() == output_type(0),
                absl::InvalidArgumentError(
                    absl::StrCat("variable '", name, "' holds ", DataTypeString((*var)->dtype()),
                                 " but is read as ", DataTypeString(output_type(0)))));
    ctx->set_output(0, (*var)->value());
  }
};

template <bool kAdd>
class AssignVariableOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return kAdd; }
  void Compute(OpKernelContext* ctx) override {
    auto var = LookupVariable(ctx, 0);
    OP_REQUIRES_OK(ctx, var.status());
    const Tensor& value = ctx->input(1);
    const std::string& name = ctx->input(0).data<std::string>()[0];
    absl::MutexLock lock((*var)->mu());
    if (!kAdd) {
      OP_REQUIRES_OK(ctx, CheckAssignable(name, **var, value));
      (*var)->set_value(value);
      return;
    }
    auto target = AssignAddTarget(name, var->get(), value);
    OP_REQUIRES_OK(ctx, target.status());
    Tensor* v = *target;
    SF_SWITCH_NUMERIC(
        value.dtype(), T,
        {
          T* out = v->data<T>();
          const T* in = value.data<T>();
          for (int64_t i = 0; i < value.NumElements(); ++i) out[i] = out[i] + in[i];
        },
        ctx->SetStatus(absl::InvalidArgumentError("AssignAdd needs a numeric variable")));
  }
};

// TF's count_up_to: an atomic "take the next number below `limit`" (old input producers).
class ResourceCountUpTo : public OpKernel {
 public:
  explicit ResourceCountUpTo(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("limit", &limit_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    auto var = LookupVariable(ctx, 0);
    OP_REQUIRES_OK(ctx, var.status());
    const std::string& name = ctx->input(0).data<std::string>()[0];
    absl::MutexLock lock((*var)->mu());
    OP_REQUIRES(ctx, (*var)->initialized(),
                absl::FailedPreconditionError(UninitializedMessage(name)));
    OP_REQUIRES(ctx, (*var)->dtype() == output_type(0) && (*var)->value().NumElements() == 1,
                absl::InvalidArgumentError(
                    absl::StrCat("count_up_to needs a scalar ", DataTypeString(output_type(0)),
                                 " variable; '", name, "' holds ", DataTypeString((*var)->dtype()),
                                 " of shape ", (*var)->value().shape().DebugString())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(), &out));
    Tensor* v = (*var)->mutable_value();
    auto step = [&](auto* value, auto* old) {
      *old = *value;
      if (*old >= limit_) {
        ctx->SetStatus(absl::OutOfRangeError(
            absl::StrCat("Reached limit of ", limit_, " (variable '", name, "')")));
        return;
      }
      *value = *old + 1;
    };
    if (output_type(0) == DT_INT32) {
      step(v->data<int32_t>(), out->data<int32_t>());
    } else {
      step(v->data<int64_t>(), out->data<int64_t>());
    }
  }

 private:
  int64_t limit_ = 0;
};

class VarIsInitializedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(), &out));
    auto var = LookupVariable(ctx, 0);
    if (!var.ok()) {
      out->scalar<bool>() = false;
      return;
    }
    absl::MutexLock lock((*var)->mu());
    out->scalar<bool>() = (*var)->initialized();
  }
};

REGISTER_KERNEL(KernelDef("VarHandleOp").Device(kDeviceCpu), VarHandleOp);
REGISTER_KERNEL(KernelDef("ReadVariableOp").Device(kDeviceCpu), ReadVariableOp);
REGISTER_KERNEL(KernelDef("AssignVariableOp").Device(kDeviceCpu), AssignVariableOp<false>);
REGISTER_KERNEL(KernelDef("AssignAddVariableOp").Device(kDeviceCpu), AssignVariableOp<true>);
REGISTER_KERNEL(KernelDef("VarIsInitializedOp").Device(kDeviceCpu), VarIsInitializedOp);
REGISTER_KERNEL(KernelDef("ResourceCountUpTo").Device(kDeviceCpu), ResourceCountUpTo);
// Handles, reads and assignments never touch a variable's values: the same kernels keep a GPU's
// variables (in device memory, its resource manager), with the handles in host memory.
// AssignAddVariableOp computes, so its GPU kernel is in kernels/gpu/.
REGISTER_KERNEL(KernelDef("VarHandleOp").Device(kDeviceGpu).HostMemory("resource"), VarHandleOp);
REGISTER_KERNEL(KernelDef("ReadVariableOp").Device(kDeviceGpu).HostMemory("resource"),
                ReadVariableOp);
REGISTER_KERNEL(KernelDef("AssignVariableOp").Device(kDeviceGpu).HostMemory("resource"),
                AssignVariableOp<false>);
REGISTER_KERNEL(KernelDef("VarIsInitializedOp")
                    .Device(kDeviceGpu)
                    .HostMemory("resource")
                    .HostMemory("is_initialized"),
                VarIsInitializedOp);

}  // namespace
}  // namespace shardflow
