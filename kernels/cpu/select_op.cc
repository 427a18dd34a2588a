// CPU kernels for Select (TF1's tf.where) and SelectV2 (tf.where_v2): output[i] = condition[i]
// ? t[i] : e[i], reading only the chosen operand, so NaN or Inf in the other does not leak (the
// arithmetic form c·t + (1 − c)·e gives NaN for 0·Inf).
//
// Registered (T): float, double, half, bfloat16, int8, uint8, int32, int64, bool.
//
// Both ops reduce to one three-way broadcast: Select's vector condition over t's first dimension
// is read as shape [n, 1, ..., 1]. The output is walked in rows of its last dimension; within a
// row each operand is either contiguous or one repeated value.
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "kernels/cpu/cwise_ops_common.h"

namespace shardflow {
namespace {

// Row-major strides of `in` read as broadcast to `out` (aligned from the right): 0 along the
// dimensions `in` repeats.
std::vector<int64_t> BroadcastStrides(const TensorShape& in, const TensorShape& out) {
  const int rank = out.rank();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int j = in.rank() - rank + i;
    const int64_t d = j >= 0 ? in.dim(j) : 1;
    if (d != 1) {
      strides[i] = stride;
      stride *= d;
    }
  }
  return strides;
}

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
        std::vector<int64_t> dims(out_shape.rank(), 1);
        dims[0] = cond_shape.dim(0);
        cond_shape = TensorShape(dims);
      } else {
        OP_REQUIRES(ctx, cond_shape.rank() == 0 || cond_shape == out_shape,
                    absl::InvalidArgumentError(
                        absl::StrCat("Select's condition ", cond_shape.DebugString(),
                                     " must be a scalar, have t's shape ", out_shape.DebugString(),
                                     ", or be a vector over t's first dimension")));
      }
    }
    const bool* c = cond.data<bool>();
    const T* tp = t.data<T>();
    const T* ep = e.data<T>();
    const bool same = cond_shape == out_shape && t.shape() == out_shape && e.shape() == out_shape;
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    T* z = out->data<T>();
    const int64_t n = out_shape.num_elements();
    if (n == 0) return;
    if (same) {
      cwise::RunSharded(ctx, n, 1, [&](int64_t b, int64_t end) {
        SF_SIMD_LOOP
        for (int64_t i = b; i < end; ++i) z[i] = c[i] ? tp[i] : ep[i];
      });
      return;
    }
    const int rank = out_shape.rank();
    const std::vector<int64_t> sc = BroadcastStrides(cond_shape, out_shape);
    const std::vector<int64_t> st = BroadcastStrides(t.shape(), out_shape);
    const std::vector<int64_t> se = BroadcastStrides(e.shape(), out_shape);
    const int64_t row = rank == 0 ? 1 : out_shape.dim(rank - 1);
    const int64_t rows = n / row;
    const int64_t lc = rank == 0 ? 0 : sc[rank - 1], lt = rank == 0 ? 0 : st[rank - 1],
                  le = rank == 0 ? 0 : se[rank - 1];
    cwise::RunSharded(ctx, rows, row, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        // Offsets of row r's first element in each operand.
        int64_t oc = 0, ot = 0, oe = 0, rem = r;
        for (int i = rank - 2; i >= 0; --i) {
          const int64_t idx = rem % out_shape.dim(i);
          rem /= out_shape.dim(i);
          oc += idx * sc[i];
          ot += idx * st[i];
          oe += idx * se[i];
        }
        T* zr = z + r * row;
        for (int64_t j = 0; j < row; ++j) {
          zr[j] = c[oc + j * lc] ? tp[ot + j * lt] : ep[oe + j * le];
        }
      }
    });
  }

 private:
  const bool v2_;
};

#define SF_REGISTER_SELECT(T)                                                                  \
  REGISTER_KERNEL(KernelDef("Select").Device(kDeviceCpu).TypeConstraint<T>("T"), SelectOp<T>); \
  REGISTER_KERNEL(KernelDef("SelectV2").Device(kDeviceCpu).TypeConstraint<T>("T"), SelectOp<T>)

SF_REGISTER_SELECT(float);
SF_REGISTER_SELECT(double);
SF_REGISTER_SELECT(half);
SF_REGISTER_SELECT(bfloat16);
SF_REGISTER_SELECT(int8_t);
SF_REGISTER_SELECT(uint8_t);
SF_REGISTER_SELECT(int32_t);
SF_REGISTER_SELECT(int64_t);
SF_REGISTER_SELECT(bool);

}  // namespace
}  // namespace shardflow
