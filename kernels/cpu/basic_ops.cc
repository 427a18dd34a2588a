// Kernels that move tensors without computing: Const, Identity, NoOp, _Arg, _Retval,
// Placeholder, and Print (Identity that also writes a line to stderr). All are cheap and run
// inline in the executor.
#include <algorithm>
#include <cstdio>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/kernel_registry.h"

namespace shardflow {
namespace {

class ConstOp : public OpKernel {
 public:
  explicit ConstOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("value", &value_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, value_); }
  bool IsExpensive() const override { return false; }

 private:
  Tensor value_;
};

class IdentityOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
  bool IsExpensive() const override { return false; }
};

class NoOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  bool IsExpensive() const override { return false; }
};

class PlaceholderOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->SetStatus(
        absl::InvalidArgumentError("a placeholder must be fed: pass a value for it in the feeds"));
  }
  bool IsExpensive() const override { return false; }
};

class ArgOp : public OpKernel {
 public:
  explicit ArgOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("index", &index_);
    if (s.ok()) s = c->GetAttr("T", &dtype_);
    if (!s.ok()) c->SetStatus(s);
  }
  // A fed value comes from the caller (a session's feeds, a RunGraph request): a value of
  // another type is the caller's error, said as such, never an internal one.
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->call_frame() != nullptr, absl::InternalError("_Arg needs a call frame"));
    Tensor value;
    OP_REQUIRES_OK(ctx, ctx->call_frame()->GetArg(index_, &value));
    OP_REQUIRES(ctx, value.IsInitialized() && value.dtype() == dtype_,
                absl::InvalidArgumentError(absl::StrCat(
                    "fed value ", index_, " (node '", name(), "') is ",
                    value.IsInitialized() ? DataTypeString(value.dtype()) : "uninitialized",
                    ", but the graph expects ", DataTypeString(dtype_), "; feed a ",
                    DataTypeString(dtype_), " tensor")));
    ctx->set_output(0, std::move(value));
  }
  bool IsExpensive() const override { return false; }

 private:
  int index_ = 0;
  DataType dtype_ = DT_INVALID;
};

class RetvalOp : public OpKernel {
 public:
  explicit RetvalOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("index", &index_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->call_frame() != nullptr,
                absl::InternalError("_Retval needs a call frame"));
    OP_REQUIRES_OK(ctx, ctx->call_frame()->SetRetval(index_, ctx->input(0)));
  }
  bool IsExpensive() const override { return false; }

 private:
  int index_ = 0;
};

// Print: forwards input 0 and writes the message and a summary of inputs 1.. to stderr, one
// line per run (the first first_n runs when first_n >= 0).
class PrintOp : public OpKernel {
 public:
  explicit PrintOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("message", &message_);
    if (s.ok()) s = c->GetAttr("first_n", &first_n_);
    if (s.ok()) s = c->GetAttr("summarize", &summarize_);
    if (s.ok() && summarize_ < 0) {
      s = absl::InvalidArgumentError(
          absl::StrCat("Print's summarize must be >= 0, got ", summarize_));
    }
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    bool print = true;
    if (first_n_ >= 0) {
      absl::MutexLock lock(&mu_);
      print = printed_ < first_n_;
      if (print) ++printed_;
    }
    if (print) {
      std::string line = message_;
      for (int i = 1; i < ctx->num_inputs(); ++i) {
        const Tensor& t = ctx->input(i);
        absl::StrAppend(&line, "[",
                        t.SummarizeValue(static_cast<int>(
                            std::min<int64_t>(summarize_, std::numeric_limits<int>::max()))),
                        "]");
      }
      line += "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
    ctx->set_output(0, ctx->input(0));
  }
  bool IsExpensive() const override { return false; }

 private:
  std::string message_;
  int64_t first_n_ = -1;
  int64_t summarize_ = 3;
  absl::Mutex mu_;
  int64_t printed_ ABSL_GUARDED_BY(mu_) = 0;
};

// EnsureShape: the input, when its shape fits the partial shape `shape`.
class EnsureShapeOp : public OpKernel {
 public:
  explicit EnsureShapeOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("shape", &shape_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    OP_REQUIRES(ctx, shape_.IsCompatibleWith(x.shape()),
                absl::InvalidArgumentError(absl::StrCat(
                    "the value has shape ", x.shape().DebugString(), ", which does not fit ",
                    shape_.DebugString(), " (its set_shape / ensure_shape)")));
    ctx->set_output(0, x);
  }
  bool IsExpensive() const override { return false; }

 private:
  TensorShape shape_;
};

class IdentityNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) ctx->set_output(i, ctx->input(i));
  }
  bool IsExpensive() const override { return false; }
};

// These kernels work for any dtype: one registration without a type constraint.
REGISTER_KERNEL(KernelDef("Const").Device(kDeviceCpu), ConstOp);
REGISTER_KERNEL(KernelDef("Identity").Device(kDeviceCpu), IdentityOp);
REGISTER_KERNEL(KernelDef("IdentityN").Device(kDeviceCpu), IdentityNOp);
REGISTER_KERNEL(KernelDef("EnsureShape").Device(kDeviceCpu), EnsureShapeOp);
REGISTER_KERNEL(KernelDef("StopGradient").Device(kDeviceCpu), IdentityOp);
REGISTER_KERNEL(KernelDef("Print").Device(kDeviceCpu), PrintOp);
REGISTER_KERNEL(KernelDef("NoOp").Device(kDeviceCpu), NoOp);
REGISTER_KERNEL(KernelDef("Placeholder").Device(kDeviceCpu), PlaceholderOp);
REGISTER_KERNEL(KernelDef("_Arg").Device(kDeviceCpu), ArgOp);
REGISTER_KERNEL(KernelDef("_Retval").Device(kDeviceCpu), RetvalOp);

// The same kernels on a GPU, where they never read the values: Identity passes the tensor on;
// fed values arrive and fetched ones leave in host memory (the executor copies a fetched device
// tensor to the host, and a fed one into device memory for the kernels that read it). int32
// constants stay in host memory on a GPU, as in TensorFlow: they are mostly shapes and axes,
// which kernels read on the host. Other constants: kernels/gpu/basic_ops.cc.
REGISTER_KERNEL(KernelDef("Identity").Device(kDeviceGpu), IdentityOp);
REGISTER_KERNEL(KernelDef("StopGradient").Device(kDeviceGpu), IdentityOp);
REGISTER_KERNEL(KernelDef("NoOp").Device(kDeviceGpu), NoOp);
REGISTER_KERNEL(KernelDef("Placeholder").Device(kDeviceGpu), PlaceholderOp);
REGISTER_KERNEL(KernelDef("_Arg").Device(kDeviceGpu).HostMemory("output"), ArgOp);
REGISTER_KERNEL(KernelDef("_Retval").Device(kDeviceGpu).HostMemory("input"), RetvalOp);
REGISTER_KERNEL(
    KernelDef("Const").Device(kDeviceGpu).TypeConstraint<int32_t>("dtype").HostMemory("output"),
    ConstOp);

}  // namespace
}  // namespace shardflow
