#include "ops/window_shapes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/windowed_output.h"
#include "core/platform/checked_math.h"
#include "core/platform/status.h"

namespace shardflow {

absl::Status GetSpatialAttr(InferenceContext* c, const std::string& name, int spatial,
                            std::vector<int64_t>* v) {
  std::vector<int64_t> a;
  SF_RETURN_IF_ERROR(c->GetAttr(name, &a));
  bool ok = static_cast<int>(a.size()) == spatial + 2 && a.front() == 1 && a.back() == 1;
  for (int i = 1; ok && i <= spatial; ++i) ok = a[i] >= 1;
  if (!ok) {
    const char* form = spatial == 3 ? "[1, depth, height, width, 1]" : "[1, height, width, 1]";
    return c->InvalidArgument(absl::StrCat(name, " must be ", form,
                                           " with entries >= 1 (channels last; no window over "
                                           "batch or channels), got [",
                                           absl::StrJoin(a, ", "), "]"));
  }
  v->assign(a.begin() + 1, a.end() - 1);
  return absl::OkStatus();
}

absl::Status WindowedOutputShape(InferenceContext* c, const TensorShape& in,
                                 const std::vector<int64_t>& k, bool dilated, int64_t channels,
                                 TensorShape* out) {
  const int spatial = static_cast<int>(k.size());
  std::vector<int64_t> s, r(spatial, 1);
  SF_RETURN_IF_ERROR(GetSpatialAttr(c, "strides", spatial, &s));
  if (dilated) SF_RETURN_IF_ERROR(GetSpatialAttr(c, "dilations", spatial, &r));
  std::string padding;
  SF_RETURN_IF_ERROR(c->GetAttr("padding", &padding));
  SF_RETURN_IF_ERROR(CheckPadding(padding));
  std::vector<int64_t> dims(spatial + 2, -1);
  dims[0] = in.dim(0);
  dims[spatial + 1] = channels;
  for (int i = 0; i < spatial; ++i) {
    if (k[i] < 0) continue;
    int64_t span = 0, before, after;
    if (k[i] < 1 || !CheckedMul(k[i] - 1, r[i], &span) || !CheckedAdd(span, int64_t{1}, &span)) {
      return c->InvalidArgument(absl::StrCat("a window of ", k[i], " dilated by ", r[i],
                                             " is not a window (empty, or too large a window)"));
    }
    SF_RETURN_IF_ERROR(
        WindowedOutputSize(in.dim(i + 1), span, s[i], padding, &dims[i + 1], &before, &after));
  }
  *out = TensorShape(dims);
  return absl::OkStatus();
}

absl::Status CheckChannelsLast(InferenceContext* c, const std::string& want) {
  std::string format;
  SF_RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  if (format == want) return absl::OkStatus();
  return c->InvalidArgument(absl::StrCat(
      "data_format must be \"", want, "\" (the CPU kernels take channels last), got \"", format,
      "\"; transpose channels-first input so that channels come last"));
}

absl::Status ShapeFromSizesInput(InferenceContext* c, int i, int rank) {
  SF_ASSIGN_OR_RETURN(TensorShape shape, c->ConstantInputAsShape(i));
  if (shape.unknown_rank()) shape = TensorShape::UnknownOfRank(rank);
  if (shape.rank() != rank) {
    return c->InvalidArgument(
        absl::StrCat("input ", i, " must hold ", rank, " sizes, got ", shape.rank(), " of them"));
  }
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status MaxPoolGradShapeOfRank(InferenceContext* c, int rank) {
  TensorShape in, out, grad;
  SF_RETURN_IF_ERROR(c->WithRank(0, rank, &in));
  SF_RETURN_IF_ERROR(c->WithRank(1, rank, &out));
  SF_RETURN_IF_ERROR(c->WithRank(2, rank, &grad));
  if (!out.IsCompatibleWith(grad)) {
    return c->InvalidArgument(absl::StrCat("orig_output ", out.DebugString(), " and grad ",
                                           grad.DebugString(), " must have one shape"));
  }
  c->set_output(0, in);
  return absl::OkStatus();
}

}  // namespace shardflow
