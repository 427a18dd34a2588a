// Kernels that move tensors without computing: Const, Identity, NoOp, _Arg, _Retval,
// Placeholder, Print (Identity that also writes a line to stderr) and Assert. All are cheap and run
// inline in the executor.
#include <algorithm>
#include <cstdio>
#include <limits>

#include "absl/strings/escaping.h"
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

// One value as TF1's Print and Assert write it: strings C-escaped, bools 1 / 0, the narrow
// floats as float, the 8-bit integers as numbers.
template <typename T>
void AppendLegacy(std::string* out, const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    absl::StrAppend(out, absl::CEscape(v));
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    absl::StrAppend(out, static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> ||
                       std::is_same_v<T, bool>) {
    absl::StrAppend(out, static_cast<int>(v));
  } else {
    absl::StrAppend(out, v);
  }
}

// The first `limit` values of `data` (row-major, dimension `dim` on) as TF1's
// Tensor::SummarizeValue writes them for Print and Assert: the innermost rows space-separated,
// every outer dimension's rows in brackets, "..." where the values stop inside a row.
template <typename T>
void AppendDims(const TensorShape& shape, int dim, int64_t limit, const T* data, int64_t* at,
                std::string* out) {
  if (*at >= limit) return;
  const int64_t count = shape.dim(dim);
  if (dim == shape.rank() - 1) {
    for (int64_t i = 0; i < count; ++i) {
      if (*at >= limit) {
        if (dim != 0) *out += "...";
        return;
      }
      if (i > 0) *out += " ";
      AppendLegacy(out, data[(*at)++]);
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const bool open = *at < limit;
    if (open) *out += "[";
    AppendDims(shape, dim + 1, limit, data, at, out);
    if (open) *out += "]";
  }
}

// Note [TF1's value summaries]. tf.Print's and tf.Assert's text for a tensor: "1 2 3..." for a
// vector of more than `summarize` values and "[1 2][3 4]" for a matrix ("[1 2][3...]..." when
// the values stop), as TF 1.15's Tensor::SummarizeValue(summarize) (PrintOneDim); the callers
// put each tensor in brackets.
std::string LegacySummary(const Tensor& t, int64_t summarize) {
  std::string out;
  const int64_t n = t.NumElements(), limit = std::min(n, summarize);
  SF_SWITCH_ALL(
      t.dtype(), T,
      {
        const T* data = t.data<T>();
        if (t.shape().rank() == 0) {
          if (limit > 0) AppendLegacy(&out, data[0]);
        } else {
          int64_t at = 0;
          AppendDims(t.shape(), 0, limit, data, &at, &out);
        }
      },
      return "<invalid>");
  if (n > limit) out += "...";
  return out;
}

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
        absl::StrAppend(&line, "[", LegacySummary(t, summarize_), "]");
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

// Assert: fails the step unless the scalar `condition` is true, with TF1's message: "assertion
// failed: " and each `data` tensor summarized in brackets (Note [TF1's value summaries]).
class AssertOp : public OpKernel {
 public:
  explicit AssertOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("summarize", &summarize_);
    if (s.ok() && summarize_ < 0) {
      s = absl::InvalidArgumentError(
          absl::StrCat("Assert's summarize must be >= 0, got ", summarize_));
    }
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    OP_REQUIRES(
        ctx, cond.NumElements() == 1 && cond.dims() <= 1,
        absl::InvalidArgumentError(absl::StrCat(
            "Assert's condition must be a scalar bool, got shape ", cond.shape().DebugString())));
    if (cond.data<bool>()[0]) return;
    std::string msg = "assertion failed: ";
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      absl::StrAppend(&msg, i > 1 ? " [" : "[", LegacySummary(ctx->input(i), summarize_), "]");
    }
    ctx->SetStatus(absl::InvalidArgumentError(msg));
  }
  bool IsExpensive() const override { return false; }

 private:
  int64_t summarize_ = 3;
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
REGISTER_KERNEL(KernelDef("Assert").Device(kDeviceCpu), AssertOp);
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
