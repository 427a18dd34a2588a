// GPU kernels for the reductions Sum, Mean, Max, Min and Prod over an `axis` input, ArgMax, and
// SumToShape (the gradient of a broadcast). Axes and shapes are host-memory inputs, checked on the
// host exactly as the CPU kernels (kernels/cpu/reduction_ops.cc, training_ops.cc) check them; the
// CUDA work is in reduction_ops.cu.
//
// Registered (T): float and int32, any Tidx and (ArgMax) any output_type. float accumulates in
// float; int32 in int32, wrapping on overflow, and its Mean divides with truncation, as on the
// CPU.
//
// A reduction views the input, with adjacent dimensions merged and size-1 dimensions dropped, as
// [outer, reduced, inner] and reduces the middle one; separate reduced groups (axes {0, 2} of a
// rank-3 input) take one pass each, innermost first, through temporary buffers.
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "core/platform/status.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/gpu/gpu_util.h"
#include "kernels/gpu/reduction_ops.cu.h"

namespace shardflow {
namespace {

using gpu::ReduceFn;

// Reduces `in` over its reduced (size, reduced?) groups (ReductionShape::groups) into `out`, which
// holds the kept dimensions in order. The reduced dimensions must hold at least 2 elements in all
// and the kept ones at least 1 (the callers handle the other cases). One pass per reduced group,
// the innermost first; passes before the last write temporaries.
template <typename T>
absl::Status ReduceInto(OpKernelContext* ctx, const Tensor& in,
                        std::vector<std::pair<int64_t, bool>> groups, ReduceFn fn, T* out) {
  cudaStream_t stream = gpu::StreamOf(ctx);
  const T* src = in.data<T>();
  Tensor src_hold;  // keeps the previous pass's result alive while it is read
  while (true) {
    int k = static_cast<int>(groups.size()) - 1;
    while (k >= 0 && !groups[k].second) --k;
    if (k < 0) {
      return absl::InternalError("ReduceInto: no reduced dimension of more than one element");
    }
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < k; ++i) outer *= groups[i].first;
    for (size_t i = k + 1; i < groups.size(); ++i) inner *= groups[i].first;
    const int64_t reduced = groups[k].first;
    groups.erase(groups.begin() + k);
    // The kept groups on either side of the removed one are now adjacent.
    if (k > 0 && k < static_cast<int>(groups.size()) && !groups[k - 1].second &&
        !groups[k].second) {
      groups[k - 1].first *= groups[k].first;
      groups.erase(groups.begin() + k);
    }
    bool last = true;
    for (const auto& g : groups) last = last && !g.second;
    const int64_t n = outer * inner;
    Tensor dst_hold;
    T* dst = out;
    if (!last) {
      SF_RETURN_IF_ERROR(ctx->allocate_temp(DataTypeToEnum<T>::value, TensorShape({n}), &dst_hold));
      dst = dst_hold.data<T>();
    }
    Tensor scratch;
    const int64_t scratch_elems = gpu::ReduceScratchElems(outer, reduced, inner);
    if (scratch_elems > 0) {
      SF_RETURN_IF_ERROR(
          ctx->allocate_temp(DataTypeToEnum<T>::value, TensorShape({scratch_elems}), &scratch));
    }
    SF_RETURN_IF_ERROR(
        gpu::CudaStatus(gpu::LaunchReduce(fn, src, outer, reduced, inner, dst,
                                          scratch_elems > 0 ? scratch.data<T>() : nullptr, stream),
                        "LaunchReduce"));
    if (last) return absl::OkStatus();
    // Freeing a temporary here is safe: the allocator hands its memory only to work queued on
    // the stream after the kernels that use it.
    src_hold = std::move(dst_hold);
    src = src_hold.data<T>();
  }
}

template <typename T, ReduceFn kFn, bool kMean>
class ReductionOp : public OpKernel {
 public:
  explicit ReductionOp(OpKernelConstruction* c) : OpKernel(c) {
    c->SetStatus(c->GetAttr("keep_dims", &keep_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto plan = PlanReduction(in.shape(), ctx->input(1), keep_dims_);
    OP_REQUIRES_OK(ctx, plan.status());
    const TensorShape& out_shape = plan->out_shape;
    const int64_t reduced_count = plan->reduced_count;
    if (reduced_count == 1) {
      // Nothing to combine: the output is the input, reshaped.
      auto same = in.Reshaped(out_shape);
      OP_REQUIRES_OK(ctx, same.status());
      ctx->set_output(0, *std::move(same));
      return;
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    const int64_t out_count = out_shape.num_elements();
    if (out_count == 0) return;
    T* out_data = out->data<T>();
    cudaStream_t stream = gpu::StreamOf(ctx);
    if (reduced_count == 0) {
      // As the CPU (and TensorFlow): the identity of the reduction.
      T empty = kFn == ReduceFn::kProd ? T(1) : T(0);
      if constexpr (kFn == ReduceFn::kMax) empty = -std::numeric_limits<T>::infinity();
      if constexpr (kFn == ReduceFn::kMin) empty = std::numeric_limits<T>::infinity();
      if constexpr (kMean) {
        OP_REQUIRES(ctx, !std::is_integral_v<T>, EmptyIntegerMeanError(in.shape()));
        empty = std::numeric_limits<T>::quiet_NaN();
      }
      OP_REQUIRES_CUDA(ctx, gpu::LaunchFillConstant(out_data, out_count, empty, stream));
      return;
    }
    OP_REQUIRES_OK(ctx, ReduceInto<T>(ctx, in, std::move(plan->groups), kFn, out_data));
    if constexpr (kMean) {
      // As the CPU: the sum divided by the count in T (truncating for int32).
      OP_REQUIRES_CUDA(
          ctx, gpu::LaunchDivide(out_data, out_count, static_cast<T>(reduced_count), stream));
    }
  }

 private:
  bool keep_dims_ = false;
};

// Index of the largest value along one dimension; the first one on ties, the first NaN if any.
template <typename T>
class ArgMaxOp : public OpKernel {
 public:
  explicit ArgMaxOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    std::vector<int64_t> axis;
    OP_REQUIRES_OK(ctx, ReadAxes(ctx->input(1), "dimension", &axis));
    OP_REQUIRES(ctx, axis.size() == 1,
                absl::InvalidArgumentError(
                    absl::StrCat("dimension must hold exactly one axis, got ", axis.size())));
    const int rank = in.dims();
    int64_t a = axis[0];
    OP_REQUIRES(ctx, a >= -rank && a < rank, AxisOutOfRange("dimension", a, in.shape()));
    if (a < 0) a += rank;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < a; ++i) outer *= in.dim_size(i);
    for (int i = a + 1; i < rank; ++i) inner *= in.dim_size(i);
    const int64_t reduced = in.dim_size(static_cast<int>(a));
    TensorShape out_shape = in.shape();
    out_shape.RemoveDim(static_cast<int>(a));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (outer * inner == 0) return;
    OP_REQUIRES(ctx, reduced > 0,
                absl::InvalidArgumentError(
                    absl::StrCat("ArgMax over an empty dimension: input shape ",
                                 in.shape().DebugString(), " has size 0 along dimension ", a)));
    cudaStream_t stream = gpu::StreamOf(ctx);
    if (output_type(0) == DT_INT32) {
      OP_REQUIRES(
          ctx, reduced <= std::numeric_limits<int32_t>::max(),
          absl::InvalidArgumentError(absl::StrCat("dimension ", a, " has size ", reduced,
                                                  ", too large for output_type int32; use int64")));
      OP_REQUIRES_CUDA(ctx, gpu::LaunchArgMax(in.data<T>(), outer, reduced, inner,
                                              out->data<int32_t>(), stream));
    } else {
      OP_REQUIRES_CUDA(ctx, gpu::LaunchArgMax(in.data<T>(), outer, reduced, inner,
                                              out->data<int64_t>(), stream));
    }
  }
};

// SumToShape: sums `input` down to `shape` (the reverse of broadcasting).
template <typename T>
class SumToShapeOp : public OpKernel {
 public:
  explicit SumToShapeOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& shape_t = ctx->input(1);
    OP_REQUIRES(ctx, shape_t.dims() == 1, absl::InvalidArgumentError("shape must be a vector"));
    TensorShape target;
    for (int64_t i = 0; i < shape_t.NumElements(); ++i) target.AddDim(shape_t.data<int32_t>()[i]);
    const int rank = in.dims();
    const int offset = rank - target.rank();
    OP_REQUIRES(
        ctx, offset >= 0,
        absl::InvalidArgumentError(absl::StrCat("cannot sum ", in.shape().DebugString(),
                                                " to the larger rank of ", target.DebugString())));
    // A dimension is summed away when the target lacks it or has 1 where the input does not;
    // the kept dimensions, in order, are then the target's layout.
    std::vector<bool> reduce(rank, false);
    int64_t reduced_count = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int td = d - offset;
      if (td >= 0) {
        OP_REQUIRES(ctx, target.dim(td) == in.dim_size(d) || target.dim(td) == 1,
                    absl::InvalidArgumentError(absl::StrCat(
                        "cannot sum ", in.shape().DebugString(), " to ", target.DebugString(),
                        ": dimension ", d, " is neither equal nor 1")));
      }
      reduce[d] = td < 0 || (target.dim(td) == 1 && in.dim_size(d) != 1);
      if (reduce[d]) reduced_count *= in.dim_size(d);
    }
    // Nothing to sum (the gradient of an Add of equal shapes, as in a residual block): the
    // input is the output.
    if (offset == 0 && target == in.shape()) {
      ctx->set_output(0, in);
      return;
    }
    if (reduced_count == 1) {
      // Only size-1 dimensions go: the same elements in the target's shape.
      auto same = in.Reshaped(target);
      OP_REQUIRES_OK(ctx, same.status());
      ctx->set_output(0, *std::move(same));
      return;
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, target, &out));
    const int64_t out_count = out->NumElements();
    if (out_count == 0) return;
    if (reduced_count == 0) {
      OP_REQUIRES_CUDA(
          ctx, gpu::LaunchFillConstant(out->data<T>(), out_count, T(0), gpu::StreamOf(ctx)));
      return;
    }
    OP_REQUIRES_OK(ctx, ReduceInto<T>(ctx, in, MergeReducedGroups(in.shape(), reduce),
                                      ReduceFn::kSum, out->data<T>()));
  }
};

#define SF_GPU_REDUCTIONS(T)                                                                      \
  REGISTER_KERNEL(KernelDef("Sum").Device(kDeviceGpu).TypeConstraint<T>("T").HostMemory("axis"),  \
                  ReductionOp<T, ReduceFn::kSum, false>);                                         \
  REGISTER_KERNEL(KernelDef("Mean").Device(kDeviceGpu).TypeConstraint<T>("T").HostMemory("axis"), \
                  ReductionOp<T, ReduceFn::kSum, true>);                                          \
  REGISTER_KERNEL(KernelDef("Max").Device(kDeviceGpu).TypeConstraint<T>("T").HostMemory("axis"),  \
                  ReductionOp<T, ReduceFn::kMax, false>);                                         \
  REGISTER_KERNEL(KernelDef("Min").Device(kDeviceGpu).TypeConstraint<T>("T").HostMemory("axis"),  \
                  ReductionOp<T, ReduceFn::kMin, false>);                                         \
  REGISTER_KERNEL(KernelDef("Prod").Device(kDeviceGpu).TypeConstraint<T>("T").HostMemory("axis"), \
                  ReductionOp<T, ReduceFn::kProd, false>);                                        \
  REGISTER_KERNEL(                                                                                \
      KernelDef("ArgMax").Device(kDeviceGpu).TypeConstraint<T>("T").HostMemory("dimension"),      \
      ArgMaxOp<T>);                                                                               \
  REGISTER_KERNEL(                                                                                \
      KernelDef("SumToShape").Device(kDeviceGpu).TypeConstraint<T>("T").HostMemory("shape"),      \
      SumToShapeOp<T>)

// float only: int32 reductions are shape arithmetic, kept on the CPU (kernels/gpu/cwise_ops.cc).
SF_GPU_REDUCTIONS(float);
#undef SF_GPU_REDUCTIONS

}  // namespace
}  // namespace shardflow
