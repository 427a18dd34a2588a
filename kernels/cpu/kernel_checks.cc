#include "kernels/cpu/kernel_checks.h"

#include "core/framework/types.h"
#include "core/framework/windowed_output.h"
#include "core/platform/status.h"

namespace shardflow {

absl::Status ReadAxes(const Tensor& t, const char* what, std::vector<int64_t>* axes) {
  if (t.dims() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a scalar or a vector, got shape ", t.shape().DebugString()));
  }
  axes->clear();
  if (t.dtype() == DT_INT32) {
    axes->assign(t.data<int32_t>(), t.data<int32_t>() + t.NumElements());
  } else if (t.dtype() == DT_INT64) {
    axes->assign(t.data<int64_t>(), t.data<int64_t>() + t.NumElements());
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be int32 or int64, got ", DataTypeString(t.dtype())));
  }
  return absl::OkStatus();
}

absl::Status AxisOutOfRange(const char* what, int64_t axis, const TensorShape& shape) {
  const int rank = shape.rank();
  if (rank == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", axis, " is out of range: the input is a scalar, which has no dimensions"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, " ", axis, " is out of range for input of shape ", shape.DebugString(),
                   "; valid: [", -rank, ", ", rank, ")"));
}

absl::StatusOr<ReductionShape> PlanReduction(const TensorShape& input, const Tensor& axes,
                                             bool keep_dims) {
  std::vector<int64_t> list;
  SF_RETURN_IF_ERROR(ReadAxes(axes, "axis", &list));
  const int rank = input.rank();
  ReductionShape r;
  r.reduce.assign(rank, false);
  for (int64_t a : list) {
    if (a < -rank || a >= rank) return AxisOutOfRange("reduction axis", a, input);
    r.reduce[a < 0 ? a + rank : a] = true;
  }
  for (int i = 0; i < rank; ++i) {
    const int64_t d = input.dim(i);
    if (r.reduce[i]) {
      r.reduced_count *= d;
      if (keep_dims) r.out_shape.AddDim(1);
    } else {
      r.out_shape.AddDim(d);
    }
  }
  r.groups = MergeReducedGroups(input, r.reduce);
  return r;
}

std::vector<std::pair<int64_t, bool>> MergeReducedGroups(const TensorShape& input,
                                                         const std::vector<bool>& reduce) {
  std::vector<std::pair<int64_t, bool>> groups;
  for (int i = 0; i < input.rank(); ++i) {
    const int64_t d = input.dim(i);
    if (d == 1) continue;
    if (!groups.empty() && groups.back().second == reduce[i]) {
      groups.back().first *= d;
    } else {
      groups.emplace_back(d, reduce[i]);
    }
  }
  return groups;
}

absl::Status EmptyIntegerMeanError(const TensorShape& input) {
  return absl::InvalidArgumentError(
      absl::StrCat("Mean of an empty set of integers is undefined: input shape ",
                   input.DebugString(), " has size 0 along a reduced axis"));
}

absl::StatusOr<MatMulDims> MatMulShape(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  if (a.dims() != 2 || b.dims() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("both inputs must be matrices; got ",
                                                   a.shape().DebugString(), " and ",
                                                   b.shape().DebugString()));
  }
  MatMulDims d;
  d.m = a.dim_size(ta ? 1 : 0);
  d.k = a.dim_size(ta ? 0 : 1);
  const int64_t kb = b.dim_size(tb ? 1 : 0);
  d.n = b.dim_size(tb ? 0 : 1);
  if (d.k != kb) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inner dimensions differ: a is ", a.shape().DebugString(), ta ? " (transposed)" : "",
        ", b is ", b.shape().DebugString(), tb ? " (transposed)" : "", "; ", d.k, " vs ", kb));
  }
  return d;
}

absl::Status CheckConv2DShapes(const TensorShape& input, const TensorShape& filter) {
  if (input.rank() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("input must be 4-D NHWC, got shape ", input.DebugString()));
  }
  if (filter.rank() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "filter must be 4-D [height, width, in, out], got shape ", filter.DebugString()));
  }
  if (input.dim(3) != filter.dim(2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", input.DebugString(), " has ", input.dim(3), " channels but filter ",
                     filter.DebugString(), " expects ", filter.dim(2)));
  }
  return absl::OkStatus();
}

absl::Status ShapeFromSizes(const Tensor& t, const char* what, TensorShape* shape) {
  if (t.dtype() != DT_INT32 || t.dims() != 1 || t.NumElements() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be an int32 vector of 4 sizes, got ", t.DebugString()));
  }
  *shape = TensorShape();
  for (int i = 0; i < 4; ++i) {
    const int32_t d = t.data<int32_t>()[i];
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(what, " has a negative size"));
    shape->AddDim(d);
  }
  return absl::OkStatus();
}

absl::Status ReadConv2DStrides(OpKernelConstruction* c, int64_t* sh, int64_t* sw,
                               std::string* padding) {
  std::vector<int64_t> strides;
  SF_RETURN_IF_ERROR(c->GetAttr("strides", &strides));
  SF_RETURN_IF_ERROR(c->GetAttr("padding", padding));
  SF_RETURN_IF_ERROR(CheckPadding(*padding));
  if (strides.size() != 4 || strides[0] != 1 || strides[3] != 1 || strides[1] < 1 ||
      strides[2] < 1) {
    return absl::InvalidArgumentError(
        "strides must be [1, height, width, 1] with entries >= 1 (NHWC; no striding over "
        "batch or channels)");
  }
  *sh = strides[1];
  *sw = strides[2];
  return absl::OkStatus();
}

absl::StatusOr<int64_t> BiasAddChannels(const Tensor& value, const Tensor& bias) {
  if (value.dims() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("value must have rank >= 2, got shape ", value.shape().DebugString()));
  }
  const int64_t c = value.dim_size(value.dims() - 1);
  if (bias.dims() != 1 || bias.dim_size(0) != c) {
    return absl::InvalidArgumentError(
        absl::StrCat("bias must be a vector of ", c, " entries (value's last dimension, value ",
                     value.shape().DebugString(), "), got shape ", bias.shape().DebugString()));
  }
  return c;
}

absl::StatusOr<int64_t> BiasAddGradChannels(const Tensor& grad) {
  if (grad.dims() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("out_backprop must have rank >= 2, got shape ", grad.shape().DebugString()));
  }
  return grad.dim_size(grad.dims() - 1);
}

absl::Status LastDimRows(const Tensor& t, const char* what, int64_t* rows, int64_t* c) {
  if (t.dims() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must have rank >= 1, got a scalar"));
  }
  *c = t.dim_size(t.dims() - 1);
  *rows = *c == 0 ? 0 : t.NumElements() / *c;
  return absl::OkStatus();
}

absl::Status CheckSoftmaxXentShapes(const Tensor& features, const Tensor& labels) {
  if (features.dims() == 2 && labels.shape() == features.shape()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("features ", features.shape().DebugString(),
                                                 " and labels ", labels.shape().DebugString(),
                                                 " must have one shape [batch, classes]"));
}

namespace {

template <typename L>
absl::Status CheckLabels(const L* lab, int64_t n, int64_t c) {
  for (int64_t r = 0; r < n; ++r) {
    if (lab[r] < 0 || lab[r] >= c) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", lab[r], " at row ", r, " is outside the valid range [0, ", c,
                       ") of class indices (features have ", c, " columns)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSparseXentInputs(const Tensor& features, const Tensor& labels) {
  if (features.dims() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("features must be [batch, classes], got ", features.shape().DebugString()));
  }
  const int64_t n = features.dim_size(0), c = features.dim_size(1);
  if (labels.dims() != 1 || labels.dim_size(0) != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "labels must be a vector of ", n, " class indices (one per row of features ",
        features.shape().DebugString(), "), got shape ", labels.shape().DebugString()));
  }
  if (labels.dtype() == DT_INT64) return CheckLabels(labels.data<int64_t>(), n, c);
  return CheckLabels(labels.data<int32_t>(), n, c);
}

namespace {

absl::Status ChannelVectors(const std::vector<const Tensor*>& inputs,
                            const std::vector<const char*>& names, int64_t c) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    if (t.dims() == 1 && t.dim_size(0) == c) continue;
    return absl::InvalidArgumentError(absl::StrCat(names[i], " must be a vector of ", c,
                                                   " entries (x's channels, its last dimension), "
                                                   "got shape ",
                                                   t.shape().DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckBatchNormInputs(const Tensor& x, const std::vector<const Tensor*>& inputs,
                                  const std::vector<const char*>& names, int64_t* rows,
                                  int64_t* c) {
  if (x.dims() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("x must have rank >= 2 (channels last), got shape ", x.shape().DebugString()));
  }
  *c = x.dim_size(x.dims() - 1);
  *rows = *c == 0 ? 0 : x.NumElements() / *c;
  return ChannelVectors(inputs, names, *c);
}

absl::Status CheckBatchNormGradInputs(const Tensor& dy, const Tensor& x,
                                      const std::vector<const Tensor*>& inputs,
                                      const std::vector<const char*>& names, int64_t* rows,
                                      int64_t* c) {
  if (x.dims() < 2 || dy.shape() != x.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("y_backprop ", dy.shape().DebugString(), " and x ", x.shape().DebugString(),
                     " must have one shape of rank >= 2 (channels last)"));
  }
  *c = x.dim_size(x.dims() - 1);
  *rows = *c == 0 ? 0 : x.NumElements() / *c;
  return ChannelVectors(inputs, names, *c);
}

}  // namespace shardflow
