// CPU kernels for shape manipulation: Reshape, ExpandDims, Squeeze, Shape, Transpose, Concat,
// Slice, Cast, Fill, ZerosLike, OnesLike. Data movement is written once per element size (and
// once for strings) instead of once per dtype, so these kernels accept every dtype.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/tensor_util.h"
#include "core/platform/checked_math.h"
#include "core/platform/status.h"
#include "core/platform/threadpool.h"

namespace shardflow {
namespace {

// Reads an int32 or int64 tensor as int64 values.
std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    v[i] = t.dtype() == DT_INT32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
  }
  return v;
}

absl::Status CanonicalAxis(int64_t axis, int rank, int64_t* out) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " is out of range for rank ",
                                                   rank, "; valid: [", -rank, ", ", rank, ")"));
  }
  *out = axis < 0 ? axis + rank : axis;
  return absl::OkStatus();
}

// Copies element i of `src` to element j of `dst` for same-typed tensors.
inline void CopyElement(const Tensor& src, int64_t i, Tensor* dst, int64_t j, size_t elem) {
  if (src.dtype() == DT_STRING) {
    dst->data<std::string>()[j] = src.data<std::string>()[i];
  } else {
    std::memcpy(static_cast<char*>(dst->raw_data()) + j * elem,
                static_cast<const char*>(src.raw_data()) + i * elem, elem);
  }
}

// Copies `count` consecutive elements.
inline void CopyRun(const Tensor& src, int64_t i, Tensor* dst, int64_t j, int64_t count,
                    size_t elem) {
  if (src.dtype() == DT_STRING) {
    for (int64_t k = 0; k < count; ++k)
      dst->data<std::string>()[j + k] = src.data<std::string>()[i + k];
  } else if (count > 0) {
    std::memcpy(static_cast<char*>(dst->raw_data()) + j * elem,
                static_cast<const char*>(src.raw_data()) + i * elem, count * elem);
  }
}

class ReshapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& shape_t = ctx->input(1);
    OP_REQUIRES(ctx, shape_t.dims() == 1,
                absl::InvalidArgumentError(absl::StrCat("shape must be a vector, got shape ",
                                                        shape_t.shape().DebugString())));
    std::vector<int64_t> dims = ReadInts(shape_t);
    int unknown = -1;
    int64_t product = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == -1) {
        OP_REQUIRES(ctx, unknown < 0,
                    absl::InvalidArgumentError("shape may contain at most one -1"));
        unknown = static_cast<int>(i);
      } else {
        OP_REQUIRES(
            ctx, dims[i] >= 0,
            absl::InvalidArgumentError(absl::StrCat("shape has negative dimension ", dims[i])));
        OP_REQUIRES(
            ctx, CheckedMul(product, dims[i], &product),
            absl::InvalidArgumentError(absl::StrCat("shape [", absl::StrJoin(dims, ","),
                                                    "] has more elements than fit in 64 bits")));
      }
    }
    if (unknown >= 0) {
      OP_REQUIRES(ctx, product > 0 && x.NumElements() % product == 0,
                  absl::InvalidArgumentError(absl::StrCat(
                      "cannot reshape ", x.shape().DebugString(), " (", x.NumElements(),
                      " elements) so that the known dimensions multiply to ", product)));
      dims[unknown] = x.NumElements() / product;
    }
    auto out = x.Reshaped(TensorShape(absl::MakeConstSpan(dims)));
    OP_REQUIRES_OK(ctx, out.status());
    ctx->set_output(0, *std::move(out));
  }
};

class ExpandDimsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    std::vector<int64_t> axis = ReadInts(ctx->input(1));
    OP_REQUIRES(ctx, axis.size() == 1, absl::InvalidArgumentError("axis must hold one value"));
    int64_t a;
    OP_REQUIRES_OK(ctx, CanonicalAxis(axis[0], x.dims() + 1, &a));
    TensorShape shape = x.shape();
    shape.InsertDim(static_cast<int>(a), 1);
    ctx->set_output(0, *x.Reshaped(shape));
  }
};

class SqueezeOp : public OpKernel {
 public:
  explicit SqueezeOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("squeeze_dims", &dims_);
    if (!s.ok()) c->SetStatus(s);
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    std::vector<bool> drop(x.dims(), dims_.empty());
    if (!dims_.empty()) {
      for (int64_t d : dims_) {
        int64_t a;
        OP_REQUIRES_OK(ctx, CanonicalAxis(d, x.dims(), &a));
        OP_REQUIRES(ctx, x.dim_size(a) == 1,
                    absl::InvalidArgumentError(
                        absl::StrCat("cannot squeeze dimension ", a, " of size ", x.dim_size(a))));
        drop[a] = true;
      }
    }
    TensorShape shape;
    for (int i = 0; i < x.dims(); ++i) {
      if (!(drop[i] && x.dim_size(i) == 1)) shape.AddDim(x.dim_size(i));
    }
    ctx->set_output(0, *x.Reshaped(shape));
  }

 private:
  std::vector<int64_t> dims_;
};

class ShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({x.dims()}), &out));
    for (int i = 0; i < x.dims(); ++i) {
      if (out->dtype() == DT_INT32) {
        out->data<int32_t>()[i] = static_cast<int32_t>(x.dim_size(i));
      } else {
        out->data<int64_t>()[i] = x.dim_size(i);
      }
    }
  }
};

class TransposeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    std::vector<int64_t> perm = ReadInts(ctx->input(1));
    int rank = x.dims();
    OP_REQUIRES(ctx, static_cast<int>(perm.size()) == rank,
                absl::InvalidArgumentError(absl::StrCat("perm has ", perm.size(),
                                                        " entries but the input has rank ", rank)));
    std::vector<bool> seen(rank, false);
    TensorShape out_shape;
    for (int i = 0; i < rank; ++i) {
      OP_REQUIRES(ctx, perm[i] >= 0 && perm[i] < rank && !seen[perm[i]],
                  absl::InvalidArgumentError("perm must be a permutation of 0..rank-1"));
      seen[perm[i]] = true;
      out_shape.AddDim(x.dim_size(perm[i]));
    }
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &y));
    int64_t n = x.NumElements();
    if (n == 0) return;
    // in_stride[d]: stride in x of x's dim d; out dim i walks x's dim perm[i].
    std::vector<int64_t> in_stride(rank, 1);
    for (int d = rank - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * x.dim_size(d + 1);
    std::vector<int64_t> walk(rank);
    for (int i = 0; i < rank; ++i) walk[i] = in_stride[perm[i]];
    size_t elem = DataTypeSize(x.dtype());
    int64_t inner = rank > 0 ? out_shape.dim(rank - 1) : 1;
    int64_t rows = n / inner;
    auto body = [&](int64_t begin, int64_t end) {
      std::vector<int64_t> idx(rank, 0);
      for (int64_t r = begin; r < end; ++r) {
        int64_t rem = r, src = 0;
        for (int i = rank - 2; i >= 0; --i) {
          idx[i] = rem % out_shape.dim(i);
          rem /= out_shape.dim(i);
          src += idx[i] * walk[i];
        }
        int64_t dst = r * inner;
        int64_t step = rank > 0 ? walk[rank - 1] : 1;
        if (step == 1) {
          CopyRun(x, src, y, dst, inner, elem);
        } else if (elem == 4 && x.dtype() != DT_STRING) {
          const uint32_t* s = x.data<uint32_t>() + src;
          uint32_t* d = y->data<uint32_t>() + dst;
          for (int64_t k = 0; k < inner; ++k) d[k] = s[k * step];
        } else {
          for (int64_t k = 0; k < inner; ++k) CopyElement(x, src + k * step, y, dst + k, elem);
        }
      }
    };
    if (ctx->intra_op_pool() && x.dtype() != DT_STRING) {
      ctx->intra_op_pool()->ParallelFor(rows, inner * 2, body);
    } else {
      body(0, rows);
    }
  }
};

class ConcatOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    int n = ctx->num_inputs() - 1;
    std::vector<int64_t> axis_v = ReadInts(ctx->input(n));
    OP_REQUIRES(ctx, axis_v.size() == 1, absl::InvalidArgumentError("axis must be a scalar"));
    const Tensor& first = ctx->input(0);
    int rank = first.dims();
    OP_REQUIRES(ctx, rank > 0, absl::InvalidArgumentError("cannot concatenate scalars"));
    int64_t axis;
    OP_REQUIRES_OK(ctx, CanonicalAxis(axis_v[0], rank, &axis));
    TensorShape out_shape = first.shape();
    int64_t total = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& t = ctx->input(i);
      OP_REQUIRES(ctx, t.dims() == rank,
                  absl::InvalidArgumentError(
                      absl::StrCat("value ", i, " has rank ", t.dims(), "; expected ", rank)));
      for (int d = 0; d < rank; ++d) {
        OP_REQUIRES(ctx, d == axis || t.dim_size(d) == first.dim_size(d),
                    absl::InvalidArgumentError(absl::StrCat(
                        "value ", i, " has shape ", t.shape().DebugString(), " but value 0 has ",
                        first.shape().DebugString(), "; only dimension ", axis, " may differ")));
      }
      total += t.dim_size(axis);
    }
    out_shape.set_dim(static_cast<int>(axis), total);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= out_shape.dim(d);
    for (int d = axis + 1; d < rank; ++d) inner *= out_shape.dim(d);
    size_t elem = DataTypeSize(first.dtype());
    int64_t out_row = total * inner;
    for (int64_t o = 0; o < outer; ++o) {
      int64_t offset = o * out_row;
      for (int i = 0; i < n; ++i) {
        const Tensor& t = ctx->input(i);
        int64_t chunk = t.dim_size(axis) * inner;
        CopyRun(t, o * chunk, out, offset, chunk, elem);
        offset += chunk;
      }
    }
  }
};

class SliceOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    std::vector<int64_t> begin = ReadInts(ctx->input(1));
    std::vector<int64_t> size = ReadInts(ctx->input(2));
    int rank = x.dims();
    OP_REQUIRES(ctx,
                static_cast<int>(begin.size()) == rank && static_cast<int>(size.size()) == rank,
                absl::InvalidArgumentError(absl::StrCat("begin and size must have ", rank,
                                                        " entries for an input of shape ",
                                                        x.shape().DebugString())));
    TensorShape out_shape;
    for (int d = 0; d < rank; ++d) {
      // Compared without adding: begin and size come from the graph or a feed, and a begin
      // near INT64_MAX must not wrap the end around to a small number.
      const int64_t dim = x.dim_size(d);
      OP_REQUIRES(
          ctx, begin[d] >= 0 && begin[d] <= dim,
          absl::InvalidArgumentError(absl::StrCat(
              "slice begin ", begin[d], " is out of bounds for dimension ", d, " of size ", dim)));
      int64_t s = size[d] == -1 ? dim - begin[d] : size[d];
      OP_REQUIRES(ctx, s >= 0 && s <= dim - begin[d],
                  absl::InvalidArgumentError(
                      absl::StrCat("slice of ", s, " elements from ", begin[d],
                                   " is out of bounds for dimension ", d, " of size ", dim)));
      out_shape.AddDim(s);
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    int64_t n = out_shape.num_elements();
    if (n == 0) return;
    if (rank == 0) {
      CopyRun(x, 0, out, 0, 1, DataTypeSize(x.dtype()));
      return;
    }
    std::vector<int64_t> stride(rank, 1);
    for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * x.dim_size(d + 1);
    int64_t inner = out_shape.dim(rank - 1);
    size_t elem = DataTypeSize(x.dtype());
    for (int64_t r = 0; r < n / inner; ++r) {
      int64_t rem = r, src = begin[rank - 1];
      for (int d = rank - 2; d >= 0; --d) {
        src += (begin[d] + rem % out_shape.dim(d)) * stride[d];
        rem /= out_shape.dim(d);
      }
      CopyRun(x, src, out, r * inner, inner, elem);
    }
  }
};

class CastOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &out));
    OP_REQUIRES_OK(ctx, CastInto(ctx->input(0), out));
  }
};

class FillOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dims_t = ctx->input(0);
    const Tensor& value = ctx->input(1);
    OP_REQUIRES(ctx, dims_t.dims() == 1, absl::InvalidArgumentError("dims must be a vector"));
    OP_REQUIRES(ctx, value.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("value must be a scalar, got shape ",
                                                        value.shape().DebugString())));
    std::vector<int64_t> dims = ReadInts(dims_t);
    for (int64_t d : dims) {
      OP_REQUIRES(ctx, d >= 0,
                  absl::InvalidArgumentError(absl::StrCat("dims has negative entry ", d)));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(absl::MakeConstSpan(dims)), &out));
    FillWith(value, out);
  }

  static void FillWith(const Tensor& value, Tensor* out) {
    size_t elem = DataTypeSize(value.dtype());
    for (int64_t i = 0; i < out->NumElements(); ++i) CopyElement(value, 0, out, i, elem);
  }
};

template <int kValue>
class ConstantLikeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    OP_REQUIRES(ctx, x.dtype() != DT_STRING,
                absl::InvalidArgumentError("ZerosLike/OnesLike need a numeric tensor"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    auto one = CastTensor(Tensor::Scalar<int32_t>(kValue), x.dtype());
    OP_REQUIRES_OK(ctx, one.status());
    FillOp::FillWith(*one, out);
  }
};

// GatherV2 and GatherV2Grad see params as [outer, rows, inner] and the output as
// [outer, indices, inner] (Note in ops/gather_ops.cc).
struct GatherGeometry {
  int64_t axis = 0, outer = 1, rows = 0, inner = 1;
};

absl::Status GatherGeometryOf(const TensorShape& params, const Tensor& axis_t, GatherGeometry* g) {
  if (axis_t.NumElements() != 1) return absl::InvalidArgumentError("axis must be a scalar");
  SF_RETURN_IF_ERROR(CanonicalAxis(ReadInts(axis_t)[0], params.rank(), &g->axis));
  g->rows = params.dim(g->axis);
  for (int d = 0; d < g->axis; ++d) g->outer *= params.dim(d);
  for (int d = static_cast<int>(g->axis) + 1; d < params.rank(); ++d) {
    g->inner *= params.dim(d);
  }
  return absl::OkStatus();
}

absl::Status CheckIndices(const std::vector<int64_t>& indices, int64_t rows) {
  for (size_t j = 0; j < indices.size(); ++j) {
    if (indices[j] < 0 || indices[j] >= rows) {
      return absl::InvalidArgumentError(
          absl::StrCat("indices[", j, "] = ", indices[j], " is not in [0, ", rows, ")"));
    }
  }
  return absl::OkStatus();
}

class GatherOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    OP_REQUIRES(ctx, params.dims() >= 1,
                absl::InvalidArgumentError("params must have at least one dimension"));
    GatherGeometry g;
    OP_REQUIRES_OK(ctx, GatherGeometryOf(params.shape(), ctx->input(2), &g));
    std::vector<int64_t> indices = ReadInts(ctx->input(1));
    OP_REQUIRES_OK(ctx, CheckIndices(indices, g.rows));
    TensorShape out_shape;
    for (int d = 0; d < g.axis; ++d) out_shape.AddDim(params.dim_size(d));
    for (int d = 0; d < ctx->input(1).dims(); ++d) out_shape.AddDim(ctx->input(1).dim_size(d));
    for (int d = static_cast<int>(g.axis) + 1; d < params.dims(); ++d) {
      out_shape.AddDim(params.dim_size(d));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    size_t elem = DataTypeSize(params.dtype());
    const int64_t k = static_cast<int64_t>(indices.size());
    for (int64_t o = 0; o < g.outer; ++o) {
      for (int64_t j = 0; j < k; ++j) {
        CopyRun(params, (o * g.rows + indices[j]) * g.inner, out, (o * k + j) * g.inner, g.inner,
                elem);
      }
    }
  }
};

class GatherGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    std::vector<int64_t> dims = ReadInts(ctx->input(3));
    for (int64_t d : dims) {
      OP_REQUIRES(ctx, d >= 0,
                  absl::InvalidArgumentError(absl::StrCat("params_shape has negative entry ", d)));
    }
    TensorShape params_shape(absl::MakeConstSpan(dims));
    OP_REQUIRES(ctx, params_shape.rank() >= 1,
                absl::InvalidArgumentError("params_shape must have at least one dimension"));
    GatherGeometry g;
    OP_REQUIRES_OK(ctx, GatherGeometryOf(params_shape, ctx->input(2), &g));
    std::vector<int64_t> indices = ReadInts(ctx->input(1));
    OP_REQUIRES_OK(ctx, CheckIndices(indices, g.rows));
    const int64_t k = static_cast<int64_t>(indices.size());
    OP_REQUIRES(ctx, grad.NumElements() == g.outer * k * g.inner,
                absl::InvalidArgumentError(
                    absl::StrCat("grad has shape ", grad.shape().DebugString(), "; gathering ", k,
                                 " indices from params of shape ", params_shape.DebugString(),
                                 " gives ", g.outer * k * g.inner, " elements")));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, params_shape, &out));
    SF_SWITCH_FLOAT(
        grad.dtype(), T,
        {
          T* dst = out->data<T>();
          const T* src = grad.data<T>();
          std::fill(dst, dst + out->NumElements(), T(0));
          for (int64_t o = 0; o < g.outer; ++o) {
            for (int64_t j = 0; j < k; ++j) {
              T* row = dst + (o * g.rows + indices[j]) * g.inner;
              const T* from = src + (o * k + j) * g.inner;
              for (int64_t i = 0; i < g.inner; ++i) row[i] = row[i] + from[i];
            }
          }
        },
        ctx->SetStatus(absl::InvalidArgumentError("GatherV2Grad takes a floating-point grad")));
  }
};

// ReverseV2: each output element copies the input element at the mirrored coordinates along
// the reversed dimensions (any element size; the dims are walked with an odometer).
class ReverseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const int rank = x.dims();
    std::vector<bool> flip(rank, false);
    for (int64_t a : ReadInts(ctx->input(1))) {
      int64_t d;
      OP_REQUIRES_OK(ctx, CanonicalAxis(a, rank, &d));
      OP_REQUIRES(ctx, !flip[d],
                  absl::InvalidArgumentError(
                      absl::StrCat("ReverseV2: dimension ", d, " is given twice in axis")));
      flip[d] = true;
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const int64_t n = x.NumElements();
    if (n == 0) return;
    const size_t size = DataTypeSize(x.dtype());
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    // Source offset (in elements) of output element i, kept up to date as i advances.
    std::vector<int64_t> stride(rank, 1), coord(rank, 0);
    for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * x.shape().dim(d + 1);
    int64_t from = 0;
    for (int d = 0; d < rank; ++d) {
      if (flip[d]) from += (x.shape().dim(d) - 1) * stride[d];
    }
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(dst + i * size, src + from * size, size);
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t dim = x.shape().dim(d);
        if (++coord[d] < dim) {
          from += flip[d] ? -stride[d] : stride[d];
          break;
        }
        coord[d] = 0;
        from -= (flip[d] ? -stride[d] : stride[d]) * (dim - 1);
      }
    }
  }
};

// Cumsum (kProduct false) and Cumprod (true): one pass along the axis per outer and inner index,
// accumulating in double for floating types (half and bfloat16 too) and in T for integers, over
// [outer, n, inner] views of the input.
template <typename T, bool kProduct>
class CumulativeOp : public OpKernel {
 public:
  explicit CumulativeOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("exclusive", &exclusive_);
    if (s.ok()) s = c->GetAttr("reverse", &reverse_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const char* what = kProduct ? "Cumprod" : "Cumsum";
    const Tensor& x = ctx->input(0);
    const std::vector<int64_t> axis = ReadInts(ctx->input(1));
    OP_REQUIRES(ctx, axis.size() == 1,
                absl::InvalidArgumentError(absl::StrCat(what, ": axis must be a scalar")));
    OP_REQUIRES(ctx, x.dims() >= 1,
                absl::InvalidArgumentError(
                    absl::StrCat(what, ": the input must have at least one dimension")));
    int64_t a;
    OP_REQUIRES_OK(ctx, CanonicalAxis(axis[0], x.dims(), &a));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < a; ++d) outer *= x.shape().dim(d);
    for (int d = static_cast<int>(a) + 1; d < x.dims(); ++d) inner *= x.shape().dim(d);
    const int64_t n = x.shape().dim(static_cast<int>(a));
    using C = std::conditional_t<std::is_integral_v<T>, T, double>;
    const T* in = x.data<T>();
    T* y = out->data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t base = o * n * inner + j;
        C acc = kProduct ? 1 : 0;
        for (int64_t k = 0; k < n; ++k) {
          const int64_t at = base + (reverse_ ? n - 1 - k : k) * inner;
          const C v = static_cast<C>(static_cast<double>(in[at]));
          if (!exclusive_) acc = kProduct ? acc * v : acc + v;
          y[at] = static_cast<T>(acc);
          if (exclusive_) acc = kProduct ? acc * v : acc + v;
        }
      }
    }
  }

 private:
  bool exclusive_ = false, reverse_ = false;
};

// Where: counts the true elements, then writes each one's coordinates (row-major order).
template <typename T>
class WhereOp : public OpKernel {
 public:
  explicit WhereOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const T* x = in.data<T>();
    const int64_t n = in.NumElements();
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += x[i] != T(0);
    const int rank = in.shape().rank();
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({count, rank}), &out));
    int64_t* idx = out->data<int64_t>();
    std::vector<int64_t> coord(rank, 0);
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] != T(0)) {
        std::copy(coord.begin(), coord.end(), idx);
        idx += rank;
      }
      // Advance the row-major coordinate of element i to i + 1.
      for (int d = rank - 1; d >= 0; --d) {
        if (++coord[d] < in.shape().dim(d)) break;
        coord[d] = 0;
      }
    }
  }
};

// Unique: one pass with a hash map from value to its position in y (first appearance).
template <typename T, typename Index>
class UniqueOp : public OpKernel {
 public:
  explicit UniqueOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    OP_REQUIRES(ctx, x.dims() == 1,
                absl::InvalidArgumentError(absl::StrCat("Unique: x must be a vector, got shape ",
                                                        x.shape().DebugString())));
    const int64_t n = x.NumElements();
    OP_REQUIRES(ctx, n <= static_cast<int64_t>(std::numeric_limits<Index>::max()),
                absl::InvalidArgumentError(absl::StrCat(
                    "Unique: ", n, " elements do not fit out_idx; use out_idx=int64")));
    Tensor* idx = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, x.shape(), &idx));
    const T* in = x.data<T>();
    Index* pos = idx->data<Index>();
    absl::flat_hash_map<T, Index> seen;
    std::vector<int64_t> firsts;
    for (int64_t i = 0; i < n; ++i) {
      auto [it, inserted] = seen.try_emplace(in[i], static_cast<Index>(firsts.size()));
      if (inserted) firsts.push_back(i);
      pos[i] = it->second;
    }
    Tensor* y = nullptr;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_output(0, TensorShape({static_cast<int64_t>(firsts.size())}), &y));
    T* out = y->data<T>();
    for (size_t k = 0; k < firsts.size(); ++k) out[k] = in[firsts[k]];
  }
};

REGISTER_KERNEL(KernelDef("ReverseV2").Device(kDeviceCpu).HostMemory("axis"), ReverseOp);
#define SF_REGISTER_UNIQUE(T)                              \
  REGISTER_KERNEL(KernelDef("Unique")                      \
                      .Device(kDeviceCpu)                  \
                      .TypeConstraint<T>("T")              \
                      .TypeConstraint<int32_t>("out_idx"), \
                  UniqueOp<T, int32_t>);                   \
  REGISTER_KERNEL(KernelDef("Unique")                      \
                      .Device(kDeviceCpu)                  \
                      .TypeConstraint<T>("T")              \
                      .TypeConstraint<int64_t>("out_idx"), \
                  UniqueOp<T, int64_t>)
SF_REGISTER_UNIQUE(float);
SF_REGISTER_UNIQUE(double);
SF_REGISTER_UNIQUE(int8_t);
SF_REGISTER_UNIQUE(uint8_t);
SF_REGISTER_UNIQUE(int32_t);
SF_REGISTER_UNIQUE(int64_t);
SF_REGISTER_UNIQUE(bool);
SF_REGISTER_UNIQUE(std::string);
#undef SF_REGISTER_UNIQUE
#define SF_REGISTER_CUMSUM(T)                                                            \
  REGISTER_KERNEL(                                                                       \
      KernelDef("Cumsum").Device(kDeviceCpu).TypeConstraint<T>("T").HostMemory("axis"),  \
      CumulativeOp<T, false>);                                                           \
  REGISTER_KERNEL(                                                                       \
      KernelDef("Cumprod").Device(kDeviceCpu).TypeConstraint<T>("T").HostMemory("axis"), \
      CumulativeOp<T, true>)
SF_REGISTER_CUMSUM(float);
SF_REGISTER_CUMSUM(double);
SF_REGISTER_CUMSUM(half);
SF_REGISTER_CUMSUM(bfloat16);
SF_REGISTER_CUMSUM(int32_t);
SF_REGISTER_CUMSUM(int64_t);
SF_REGISTER_CUMSUM(int8_t);
SF_REGISTER_CUMSUM(uint8_t);
#undef SF_REGISTER_CUMSUM

#define SF_REGISTER_WHERE(T) \
  REGISTER_KERNEL(KernelDef("Where").Device(kDeviceCpu).TypeConstraint<T>("T"), WhereOp<T>)
SF_REGISTER_WHERE(bool);
SF_REGISTER_WHERE(float);
SF_REGISTER_WHERE(double);
SF_REGISTER_WHERE(int8_t);
SF_REGISTER_WHERE(uint8_t);
SF_REGISTER_WHERE(int32_t);
SF_REGISTER_WHERE(int64_t);
#undef SF_REGISTER_WHERE

REGISTER_KERNEL(KernelDef("Reshape").Device(kDeviceCpu).HostMemory("shape"), ReshapeOp);
REGISTER_KERNEL(KernelDef("ExpandDims").Device(kDeviceCpu).HostMemory("axis"), ExpandDimsOp);
REGISTER_KERNEL(KernelDef("Squeeze").Device(kDeviceCpu), SqueezeOp);
REGISTER_KERNEL(KernelDef("Shape").Device(kDeviceCpu).HostMemory("output"), ShapeOp);
// Reshape, ExpandDims, Squeeze and Shape only read and relabel shapes, so the same kernels serve
// tensors in any memory: they are a GPU's too (its data never crosses to the host).
REGISTER_KERNEL(KernelDef("Reshape").Device(kDeviceGpu).HostMemory("shape"), ReshapeOp);
REGISTER_KERNEL(KernelDef("ExpandDims").Device(kDeviceGpu).HostMemory("axis"), ExpandDimsOp);
REGISTER_KERNEL(KernelDef("Squeeze").Device(kDeviceGpu), SqueezeOp);
REGISTER_KERNEL(KernelDef("Shape").Device(kDeviceGpu).HostMemory("output"), ShapeOp);
REGISTER_KERNEL(KernelDef("Transpose").Device(kDeviceCpu).HostMemory("perm"), TransposeOp);
REGISTER_KERNEL(KernelDef("Concat").Device(kDeviceCpu).HostMemory("axis"), ConcatOp);
// int32 shape arithmetic on a GPU device stays in host memory (cwise_binary_ops.cc says why).
REGISTER_KERNEL(KernelDef("Concat")
                    .Device(kDeviceGpu)
                    .TypeConstraint<int32_t>("T")
                    .HostMemory("values")
                    .HostMemory("axis")
                    .HostMemory("output"),
                ConcatOp);
REGISTER_KERNEL(KernelDef("Fill")
                    .Device(kDeviceGpu)
                    .TypeConstraint<int32_t>("T")
                    .HostMemory("dims")
                    .HostMemory("value")
                    .HostMemory("output"),
                FillOp);
REGISTER_KERNEL(KernelDef("Slice").Device(kDeviceCpu).HostMemory("begin").HostMemory("size"),
                SliceOp);
REGISTER_KERNEL(KernelDef("Cast").Device(kDeviceCpu), CastOp);
REGISTER_KERNEL(KernelDef("Fill").Device(kDeviceCpu).HostMemory("dims"), FillOp);
REGISTER_KERNEL(KernelDef("ZerosLike").Device(kDeviceCpu), ConstantLikeOp<0>);
REGISTER_KERNEL(KernelDef("OnesLike").Device(kDeviceCpu), ConstantLikeOp<1>);
REGISTER_KERNEL(KernelDef("GatherV2").Device(kDeviceCpu).HostMemory("axis"), GatherOp);
REGISTER_KERNEL(
    KernelDef("GatherV2Grad").Device(kDeviceCpu).HostMemory("axis").HostMemory("params_shape"),
    GatherGradOp);

}  // namespace
}  // namespace shardflow
