// GPU kernels for the element-wise ops: unary functions, binary functions with NumPy
// broadcasting, comparisons, logical ops, AddN, Select/SelectV2 and ReluGrad. Shapes are checked
// on the host exactly as the CPU kernels (kernels/cpu/cwise_*.cc, addn_op.cc, select_op.cc,
// nn_ops.cc) check them; the CUDA work is in cwise_ops.cu.
//
// Registered (T):
// - Neg, Abs, Square, Sign, Relu: float, int32.
// - Sqrt, Rsqrt, Exp, Log, Tanh, Sigmoid, Reciprocal, Floor, Ceil, Round, Sin, Cos, Log1p,
//   Expm1, Erf, IsNan, IsInf, IsFinite: float.
// - LogicalNot, LogicalAnd, LogicalOr (no T).
// - Add, Sub, Mul, Maximum, Minimum, SquaredDifference: float, int32.
// - Div, FloorDiv, FloorMod, Pow: float (integer division needs a zero check of the divisor,
//   which would have to read device memory on the host).
// - Equal, NotEqual: float, int32, bool. Less, LessEqual, Greater, GreaterEqual: float, int32.
// - AddN: float, int32. ReluGrad: float.
// - Select, SelectV2: float, int32, int64, bool, half, bfloat16.
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "core/framework/shape_inference.h"
#include "kernels/gpu/cwise_ops.cu.h"
#include "kernels/gpu/gpu_util.h"

namespace shardflow {
namespace {

using gpu::BinaryFn;
using gpu::OperandLayout;
using gpu::UnaryFn;

// Describes how `operands` (each broadcastable to `out`, which has at least one element) are
// read to produce `out`: flat when each operand has out's element count (then its layout is
// out's: broadcasting only stretches size-1 dimensions) or is a single value; otherwise through
// a BroadcastIndex with size-1 dimensions dropped and adjacent dimensions that every operand
// reads alike merged.
absl::Status MakeLayout(absl::Span<const TensorShape> operands, const TensorShape& out,
                        OperandLayout* layout) {
  const int num = static_cast<int>(operands.size());
  if (num > gpu::kMaxBroadcastOperands) {
    return absl::InternalError(absl::StrCat("MakeLayout of ", num, " operands"));
  }
  const int64_t n = out.num_elements();
  bool flat = true;
  for (int k = 0; k < num; ++k) {
    const int64_t count = operands[k].num_elements();
    if (count == n) {
      layout->flat[k] = 1;
    } else if (count == 1) {
      layout->flat[k] = 0;
    } else {
      flat = false;
    }
  }
  layout->indexed = !flat;
  if (flat) return absl::OkStatus();

  const int rank = out.rank();
  std::vector<int64_t> dims;
  std::vector<std::vector<bool>> repeats;  // per merged dim: does operand k repeat along it?
  for (int i = 0; i < rank; ++i) {
    const int64_t d = out.dim(i);
    if (d == 1) continue;
    std::vector<bool> rep(num);
    for (int k = 0; k < num; ++k) {
      const int j = operands[k].rank() - rank + i;
      rep[k] = (j >= 0 ? operands[k].dim(j) : 1) == 1;
    }
    if (!dims.empty() && repeats.back() == rep) {
      dims.back() *= d;
    } else {
      dims.push_back(d);
      repeats.push_back(std::move(rep));
    }
  }
  const int merged = static_cast<int>(dims.size());
  if (merged < 1 || merged > gpu::kMaxBroadcastRank) {
    std::string shapes;
    for (int k = 0; k < num; ++k)
      absl::StrAppend(&shapes, k ? ", " : "", operands[k].DebugString());
    return absl::UnimplementedError(absl::StrCat(
        "the GPU kernels broadcast at most ", gpu::kMaxBroadcastRank,
        " dimensions after merging adjacent ones that broadcast alike; shapes ", shapes, " need ",
        merged, ". Reshape the operands to fewer dimensions, or run the op on the CPU"));
  }
  layout->index.rank = merged;
  for (int i = 0; i < merged; ++i) layout->index.dims[i] = dims[i];
  for (int k = 0; k < num; ++k) {
    int64_t stride = 1;
    for (int i = merged - 1; i >= 0; --i) {
      if (repeats[i][k]) {
        layout->index.strides[k][i] = 0;
      } else {
        layout->index.strides[k][i] = stride;
        stride *= dims[i];
      }
    }
  }
  return absl::OkStatus();
}

// ---- unary -----------------------------------------------------------------------------------

template <typename T, UnaryFn kFn>
class UnaryOp : public OpKernel {
 public:
  explicit UnaryOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    // Forwarding clears the input in the context, so take its data pointer first.
    const T* x = ctx->input(0).data<T>();
    const TensorShape shape = ctx->input(0).shape();
    Tensor* y = nullptr;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, shape, &y));
    OP_REQUIRES_CUDA(ctx,
                     gpu::LaunchUnary(kFn, x, y->data<T>(), y->NumElements(), gpu::StreamOf(ctx)));
  }
};

template <gpu::FloatClass kClass>
class FloatPredicateOp : public OpKernel {
 public:
  explicit FloatPredicateOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* y = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    OP_REQUIRES_CUDA(ctx, gpu::LaunchFloatPredicate(kClass, x.data<float>(), y->data<bool>(),
                                                    y->NumElements(), gpu::StreamOf(ctx)));
  }
};

class LogicalNotOp : public OpKernel {
 public:
  explicit LogicalNotOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const bool* x = ctx->input(0).data<bool>();
    const TensorShape shape = ctx->input(0).shape();
    Tensor* y = nullptr;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, shape, &y));
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchLogicalNot(x, y->data<bool>(), y->NumElements(), gpu::StreamOf(ctx)));
  }
};

// ---- binary ----------------------------------------------------------------------------------

// z = fn(x, y) with broadcasting; Out is T, or bool for comparisons and logical ops.
template <typename T, typename Out, BinaryFn kFn>
class BinaryOp : public OpKernel {
 public:
  explicit BinaryOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x_in = ctx->input(0);
    const Tensor& y_in = ctx->input(1);
    absl::StatusOr<TensorShape> broadcast = BroadcastShapes(x_in.shape(), y_in.shape());
    OP_REQUIRES_OK(ctx, broadcast.status());
    const TensorShape out_shape = *std::move(broadcast);
    // Forwarding an input clears it in the context, so take what we need first.
    const T* x = x_in.data<T>();
    const T* y = y_in.data<T>();
    const TensorShape x_shape = x_in.shape(), y_shape = y_in.shape();
    const int64_t n = out_shape.num_elements();
    OperandLayout layout;
    if (n > 0) OP_REQUIRES_OK(ctx, MakeLayout({x_shape, y_shape}, out_shape, &layout));
    Tensor* z = nullptr;
    if (std::is_same_v<Out, T> && x_shape == out_shape) {
      OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, out_shape, &z));
    } else if (std::is_same_v<Out, T> && y_shape == out_shape) {
      OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(1, 0, out_shape, &z));
    } else {
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &z));
    }
    if (n == 0) return;
    OP_REQUIRES_CUDA(ctx,
                     gpu::LaunchBinary(kFn, x, y, z->data<Out>(), n, layout, gpu::StreamOf(ctx)));
  }
};

// ---- AddN ------------------------------------------------------------------------------------

template <typename T>
class AddNOp : public OpKernel {
 public:
  explicit AddNOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    const TensorShape shape = ctx->input(0).shape();
    for (int i = 1; i < n; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).shape() == shape,
                  absl::InvalidArgumentError(absl::StrCat(
                      "AddN needs inputs of one shape: input 0 is ", shape.DebugString(),
                      " but input ", i, " is ", ctx->input(i).shape().DebugString())));
    }
    if (n == 1) {
      ctx->set_output(0, ctx->input(0));
      return;
    }
    // Forwarding clears the input in the context, so take the data pointers first.
    std::vector<const T*> inputs(n);
    for (int i = 0; i < n; ++i) inputs[i] = ctx->input(i).data<T>();
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, shape, &out));
    OP_REQUIRES_CUDA(ctx, gpu::LaunchAddN(inputs.data(), n, out->data<T>(), out->NumElements(),
                                          gpu::StreamOf(ctx)));
  }
};

// ---- Select, SelectV2 ------------------------------------------------------------------------

template <typename T>
class SelectOp : public OpKernel {
 public:
  explicit SelectOp(OpKernelConstruction* c) : OpKernel(c), v2_(c->def().op() == "SelectV2") {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    TensorShape cond_shape = cond.shape();
    TensorShape out_shape;
    if (v2_) {
      auto te = BroadcastShapes(t.shape(), e.shape());
      OP_REQUIRES_OK(ctx, te.status());
      auto all = BroadcastShapes(cond_shape, *te);
      OP_REQUIRES_OK(ctx, all.status());
      out_shape = *std::move(all);
    } else {
      OP_REQUIRES(ctx, t.shape() == e.shape(),
                  absl::InvalidArgumentError(absl::StrCat(
                      "Select needs t and e of one shape, got ", t.shape().DebugString(), " and ",
                      e.shape().DebugString(), "; use SelectV2 (tf.where_v2) to broadcast")));
      out_shape = t.shape();
      if (cond_shape.rank() == 1 && out_shape.rank() > 1 && cond_shape.dim(0) == out_shape.dim(0)) {
        // A vector over the first dimension chooses whole rows: read it as [n, 1, ..., 1].
        std::vector<int64_t> dims(out_shape.rank(), 1);
        dims[0] = cond_shape.dim(0);
        cond_shape = TensorShape(absl::MakeConstSpan(dims));
      } else {
        OP_REQUIRES(ctx, cond_shape.rank() == 0 || cond_shape == out_shape,
                    absl::InvalidArgumentError(
                        absl::StrCat("Select's condition ", cond_shape.DebugString(),
                                     " must be a scalar, have t's shape ", out_shape.DebugString(),
                                     ", or be a vector over t's first dimension")));
      }
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    const int64_t n = out_shape.num_elements();
    if (n == 0) return;
    OperandLayout layout;
    OP_REQUIRES_OK(ctx, MakeLayout({cond_shape, t.shape(), e.shape()}, out_shape, &layout));
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchSelect(cond.data<bool>(), t.raw_data(), e.raw_data(), out->raw_data(),
                               static_cast<int>(sizeof(T)), n, layout, gpu::StreamOf(ctx)));
  }

 private:
  const bool v2_;
};

// ---- ReluGrad --------------------------------------------------------------------------------

class ReluGradOp : public OpKernel {
 public:
  explicit ReluGradOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    const Tensor& features = ctx->input(1);
    OP_REQUIRES(ctx, grad.shape() == features.shape(),
                absl::InvalidArgumentError(
                    absl::StrCat("gradients ", grad.shape().DebugString(), " and features ",
                                 features.shape().DebugString(), " must have one shape")));
    // Read the inputs before input 0 may be forwarded to the output (which empties it).
    const float* g = grad.data<float>();
    const float* f = features.data<float>();
    const TensorShape shape = grad.shape();
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, shape, &out));
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchReluGrad(g, f, out->data<float>(), out->NumElements(), gpu::StreamOf(ctx)));
  }
};

// ---- registrations ---------------------------------------------------------------------------

// int32 arithmetic stays on the CPU, as in TensorFlow: on a GPU it is mostly shape arithmetic
// (Shape -> Prod -> Reshape) whose results kernels read on the host, and each trip through device
// memory would wait for the stream. Comparisons, Select and Cast keep int32 (labels, predictions).
#define SF_GPU_UNARY(NAME, FN, T)                                            \
  REGISTER_KERNEL(KernelDef(NAME).Device(kDeviceGpu).TypeConstraint<T>("T"), \
                  UnaryOp<T, UnaryFn::FN>)

SF_GPU_UNARY("Neg", kNeg, float);
SF_GPU_UNARY("Abs", kAbs, float);
SF_GPU_UNARY("Square", kSquare, float);
SF_GPU_UNARY("Sign", kSign, float);
SF_GPU_UNARY("Relu", kRelu, float);
SF_GPU_UNARY("Sqrt", kSqrt, float);
SF_GPU_UNARY("Rsqrt", kRsqrt, float);
SF_GPU_UNARY("Exp", kExp, float);
SF_GPU_UNARY("Log", kLog, float);
SF_GPU_UNARY("Tanh", kTanh, float);
SF_GPU_UNARY("Sigmoid", kSigmoid, float);
SF_GPU_UNARY("Reciprocal", kReciprocal, float);
SF_GPU_UNARY("Floor", kFloor, float);
SF_GPU_UNARY("Ceil", kCeil, float);
SF_GPU_UNARY("Round", kRound, float);
SF_GPU_UNARY("Sin", kSin, float);
SF_GPU_UNARY("Cos", kCos, float);
SF_GPU_UNARY("Log1p", kLog1p, float);
SF_GPU_UNARY("Expm1", kExpm1, float);
SF_GPU_UNARY("Erf", kErf, float);
#undef SF_GPU_UNARY

REGISTER_KERNEL(KernelDef("IsNan").Device(kDeviceGpu).TypeConstraint<float>("T"),
                FloatPredicateOp<gpu::FloatClass::kNan>);
REGISTER_KERNEL(KernelDef("IsInf").Device(kDeviceGpu).TypeConstraint<float>("T"),
                FloatPredicateOp<gpu::FloatClass::kInf>);
REGISTER_KERNEL(KernelDef("IsFinite").Device(kDeviceGpu).TypeConstraint<float>("T"),
                FloatPredicateOp<gpu::FloatClass::kFinite>);
REGISTER_KERNEL(KernelDef("LogicalNot").Device(kDeviceGpu), LogicalNotOp);

#define SF_GPU_BINARY(NAME, FN, T, OUT)                                      \
  REGISTER_KERNEL(KernelDef(NAME).Device(kDeviceGpu).TypeConstraint<T>("T"), \
                  BinaryOp<T, OUT, BinaryFn::FN>)
#define SF_GPU_ARITHMETIC(NAME, FN) SF_GPU_BINARY(NAME, FN, float, float)
#define SF_GPU_COMPARE(NAME, FN)        \
  SF_GPU_BINARY(NAME, FN, float, bool); \
  SF_GPU_BINARY(NAME, FN, int32_t, bool)

SF_GPU_ARITHMETIC("Add", kAdd);
SF_GPU_ARITHMETIC("Sub", kSub);
SF_GPU_ARITHMETIC("Mul", kMul);
SF_GPU_ARITHMETIC("Maximum", kMaximum);
SF_GPU_ARITHMETIC("Minimum", kMinimum);
SF_GPU_ARITHMETIC("SquaredDifference", kSquaredDifference);
SF_GPU_BINARY("Div", kDiv, float, float);
SF_GPU_BINARY("FloorDiv", kFloorDiv, float, float);
SF_GPU_BINARY("FloorMod", kFloorMod, float, float);
SF_GPU_BINARY("Pow", kPow, float, float);
SF_GPU_COMPARE("Equal", kEqual);
SF_GPU_COMPARE("NotEqual", kNotEqual);
SF_GPU_COMPARE("Less", kLess);
SF_GPU_COMPARE("LessEqual", kLessEqual);
SF_GPU_COMPARE("Greater", kGreater);
SF_GPU_COMPARE("GreaterEqual", kGreaterEqual);
SF_GPU_BINARY("Equal", kEqual, bool, bool);
SF_GPU_BINARY("NotEqual", kNotEqual, bool, bool);
#undef SF_GPU_COMPARE
#undef SF_GPU_ARITHMETIC
#undef SF_GPU_BINARY

REGISTER_KERNEL(KernelDef("LogicalAnd").Device(kDeviceGpu),
                BinaryOp<bool, bool, BinaryFn::kLogicalAnd>);
REGISTER_KERNEL(KernelDef("LogicalOr").Device(kDeviceGpu),
                BinaryOp<bool, bool, BinaryFn::kLogicalOr>);

REGISTER_KERNEL(KernelDef("AddN").Device(kDeviceGpu).TypeConstraint<float>("T"), AddNOp<float>);

#define SF_GPU_SELECT(T)                                                                       \
  REGISTER_KERNEL(KernelDef("Select").Device(kDeviceGpu).TypeConstraint<T>("T"), SelectOp<T>); \
  REGISTER_KERNEL(KernelDef("SelectV2").Device(kDeviceGpu).TypeConstraint<T>("T"), SelectOp<T>)
SF_GPU_SELECT(float);
SF_GPU_SELECT(int32_t);
SF_GPU_SELECT(int64_t);
SF_GPU_SELECT(bool);
SF_GPU_SELECT(half);
SF_GPU_SELECT(bfloat16);
#undef SF_GPU_SELECT

REGISTER_KERNEL(KernelDef("ReluGrad").Device(kDeviceGpu).TypeConstraint<float>("T"), ReluGradOp);

}  // namespace
}  // namespace shardflow
