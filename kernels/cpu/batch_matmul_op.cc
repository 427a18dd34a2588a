// BatchMatMulV2 on CPU (tf.matmul of rank > 2): one GEMM per item of the broadcast batch, float
// through kernels/cpu/sgemm.h, double and the integers in a plain loop (kernels/cpu/gemm_loop.h).
// The batch dimensions broadcast as NumPy's (an item of a size-1 dimension is reused), so
// attention's [b, h, t, d] x [b, h, d, t] and a batch times one matrix, [b, t, d] x [d, e], are
// both one kernel.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "kernels/cpu/gemm_loop.h"
#include "kernels/cpu/onednn_util.h"
#include "kernels/cpu/sgemm.h"

namespace shardflow {
namespace {

// The output's batch dimensions for batch dimensions that broadcast; an error naming both shapes
// when they do not, or when their product does not fit in 64 bits.
absl::StatusOr<TensorShape> BroadcastBatch(const TensorShape& x, const TensorShape& y) {
  const int rx = x.rank() - 2, ry = y.rank() - 2, rank = std::max(rx, ry);
  std::vector<int64_t> dims(rank);
  bool empty = false;
  for (int d = 0; d < rank; ++d) {
    const int64_t xd = d - rank + rx >= 0 ? x.dim(d - rank + rx) : 1;
    const int64_t yd = d - rank + ry >= 0 ? y.dim(d - rank + ry) : 1;
    if (xd != yd && xd != 1 && yd != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("BatchMatMulV2: batch dimensions of x ", x.DebugString(), " and y ",
                       y.DebugString(), " cannot be broadcast (", xd, " vs ", yd, ")"));
    }
    dims[d] = xd == 1 ? yd : xd;
    empty |= dims[d] == 0;
  }
  int64_t items = 1;
  for (int64_t d : dims) {
    if (!empty && __builtin_mul_overflow(items, d, &items)) {
      return absl::InvalidArgumentError(absl::StrCat("BatchMatMulV2: the broadcast batch of x ",
                                                     x.DebugString(), " and y ", y.DebugString(),
                                                     " has more than 2^63 items"));
    }
  }
  return TensorShape(absl::MakeConstSpan(dims));
}

// Where each output item's x and y matrices start (counted in matrices): the output's batch
// index walked like an odometer, each input's item kept in step (a size-1 dimension reused).
void ItemOffsets(const TensorShape& x, const TensorShape& y, const TensorShape& batch,
                 std::vector<int64_t>* x_item, std::vector<int64_t>* y_item) {
  const int rank = batch.rank(), rx = x.rank() - 2, ry = y.rank() - 2;
  std::vector<int64_t> index(rank, 0), x_stride(rank), y_stride(rank);
  int64_t xs = 1, ys = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t xd = d - rank + rx >= 0 ? x.dim(d - rank + rx) : 1;
    const int64_t yd = d - rank + ry >= 0 ? y.dim(d - rank + ry) : 1;
    x_stride[d] = xd == 1 ? 0 : xs;
    y_stride[d] = yd == 1 ? 0 : ys;
    xs *= xd;
    ys *= yd;
  }
  int64_t xi = 0, yi = 0;
  for (size_t i = 0; i < x_item->size(); ++i) {
    (*x_item)[i] = xi;
    (*y_item)[i] = yi;
    for (int d = rank - 1; d >= 0; --d) {
      xi += x_stride[d];
      yi += y_stride[d];
      if (++index[d] < batch.dim(d)) break;
      xi -= x_stride[d] * batch.dim(d);
      yi -= y_stride[d] * batch.dim(d);
      index[d] = 0;
    }
  }
}

template <typename T>
class BatchMatMulOp : public OpKernel {
 public:
  explicit BatchMatMulOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("adj_x", &adj_x_);
    if (s.ok()) s = c->GetAttr("adj_y", &adj_y_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    OP_REQUIRES(ctx, x.dims() >= 2 && y.dims() >= 2,
                absl::InvalidArgumentError(
                    absl::StrCat("BatchMatMulV2 needs inputs of rank >= 2, got x ",
                                 x.shape().DebugString(), " and y ", y.shape().DebugString())));
    const int rx = x.dims(), ry = y.dims();
    const int64_t x_rows = x.dim_size(rx - 2), x_cols = x.dim_size(rx - 1);
    const int64_t y_rows = y.dim_size(ry - 2), y_cols = y.dim_size(ry - 1);
    const int64_t m = adj_x_ ? x_cols : x_rows, k = adj_x_ ? x_rows : x_cols;
    const int64_t ky = adj_y_ ? y_cols : y_rows, n = adj_y_ ? y_rows : y_cols;
    OP_REQUIRES(
        ctx, k == ky,
        absl::InvalidArgumentError(absl::StrCat(
            "BatchMatMulV2: inner dimensions differ: x is ", x.shape().DebugString(),
            adj_x_ ? " (adjoint)" : "", ", y is ", y.shape().DebugString(),
            adj_y_ ? " (adjoint)" : "", "; x's columns (", k, ") must equal y's rows (", ky, ")")));
    auto batch = BroadcastBatch(x.shape(), y.shape());
    OP_REQUIRES_OK(ctx, batch.status());
    TensorShape out_shape = *batch;
    out_shape.AddDim(m);
    out_shape.AddDim(n);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out->NumElements() == 0) return;
    // Now at most one item per output element: the offsets' memory is bounded by the output's.
    std::vector<int64_t> x_item(batch->num_elements()), y_item(batch->num_elements());
    ItemOffsets(x.shape(), y.shape(), *batch, &x_item, &y_item);
    T* z = out->data<T>();
    if (k == 0) {
      std::fill(z, z + out->NumElements(), T(0));
      return;
    }
    const T* xs = x.data<T>();
    const T* ys = y.data<T>();
    const int64_t x_size = x_rows * x_cols, y_size = y_rows * y_cols, z_size = m * n;
    if constexpr (std::is_same_v<T, float>) SetOneDnnThreads(ctx);
    for (size_t i = 0; i < x_item.size(); ++i) {
      const T* a = xs + x_item[i] * x_size;
      const T* b = ys + y_item[i] * y_size;
      T* c = z + static_cast<int64_t>(i) * z_size;
      if constexpr (std::is_same_v<T, float>) {
        OP_REQUIRES_OK(ctx, Sgemm(adj_x_, adj_y_, m, n, k, a, x_cols, b, y_cols, 0.0f, c, n));
      } else {
        GemmLoop<T>(adj_x_, adj_y_, m, n, k, a, x_cols, b, y_cols, c);
      }
    }
  }

 private:
  bool adj_x_ = false, adj_y_ = false;
};

REGISTER_KERNEL(KernelDef("BatchMatMulV2").Device(kDeviceCpu).TypeConstraint<float>("T"),
                BatchMatMulOp<float>);
REGISTER_KERNEL(KernelDef("BatchMatMulV2").Device(kDeviceCpu).TypeConstraint<double>("T"),
                BatchMatMulOp<double>);
REGISTER_KERNEL(KernelDef("BatchMatMulV2").Device(kDeviceCpu).TypeConstraint<int32_t>("T"),
                BatchMatMulOp<int32_t>);
REGISTER_KERNEL(KernelDef("BatchMatMulV2").Device(kDeviceCpu).TypeConstraint<int64_t>("T"),
                BatchMatMulOp<int64_t>);

}  // namespace
}  // namespace shardflow
