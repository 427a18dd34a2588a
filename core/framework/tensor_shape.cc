#include "core/framework/tensor_shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/platform/checked_math.h"

namespace shardflow {

TensorShape TensorShape::Unknown() {
  TensorShape s;
  s.unknown_rank_ = true;
  return s;
}

TensorShape TensorShape::UnknownOfRank(int rank) {
  TensorShape s;
  s.dims_.assign(rank, kUnknownDim);
  return s;
}

absl::StatusOr<TensorShape> TensorShape::FromProto(const TensorShapeProto& proto) {
  if (proto.unknown_rank()) {
    if (proto.dim_size() > 0) {
      return absl::InvalidArgumentError("shape has unknown_rank set but also lists dimensions");
    }
    return Unknown();
  }
  if (proto.dim_size() > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape has ", proto.dim_size(), " dimensions; at most ", kMaxRank, " are allowed"));
  }
  TensorShape s;
  int64_t known_product = 1;
  for (int64_t d : proto.dim()) {
    if (d < kUnknownDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape dimension ", d, " is negative; use -1 for an unknown dimension"));
    }
    s.dims_.push_back(d);
    if (d >= 0 && !CheckedMul(known_product, d, &known_product)) {
      return absl::InvalidArgumentError(absl::StrCat("shape ", s.DebugString(),
                                                     "... has more elements than fit in 64 bits; ",
                                                     "no tensor can have this shape"));
    }
  }
  return s;
}

void TensorShape::AsProto(TensorShapeProto* proto) const {
  proto->Clear();
  if (unknown_rank_) {
    proto->set_unknown_rank(true);
    return;
  }
  for (int64_t d : dims_) proto->add_dim(d);
}

bool TensorShape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t TensorShape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  int64_t n = 1;
  for (int64_t d : dims_) {
    if (!CheckedMul(n, d, &n)) return -1;
  }
  return n;
}

absl::StatusOr<int64_t> TensorShape::CheckedNumElements() const {
  if (!IsFullyDefined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", DebugString(), " is not fully defined, so it has no element count"));
  }
  int64_t n = num_elements();
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", DebugString(), " has more elements than fit in 64 bits"));
  }
  return n;
}

bool TensorShape::IsCompatibleWith(const TensorShape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (dims_.size() != other.dims_.size()) return false;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

absl::StatusOr<TensorShape> TensorShape::Merge(const TensorShape& other) const {
  if (!IsCompatibleWith(other)) {
    return absl::InvalidArgumentError(
        absl::StrCat("shapes ", DebugString(), " and ", other.DebugString(), " are incompatible"));
  }
  if (unknown_rank_) return other;
  if (other.unknown_rank_) return *this;
  TensorShape merged = *this;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (merged.dims_[i] < 0) merged.dims_[i] = other.dims_[i];
  }
  return merged;
}

std::string TensorShape::DebugString() const {
  if (unknown_rank_) return "<unknown>";
  return absl::StrCat("[",
                      absl::StrJoin(dims_, ",",
                                    [](std::string* out, int64_t d) {
                                      absl::StrAppend(out,
                                                      d < 0 ? std::string("?") : absl::StrCat(d));
                                    }),
                      "]");
}

}  // namespace shardflow
