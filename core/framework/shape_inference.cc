#include "core/framework/shape_inference.h"

#include "absl/strings/str_cat.h"

namespace shardflow {

InferenceContext::InferenceContext(const NodeDef& node, const DataTypeVector& input_types,
                                   const DataTypeVector& output_types,
                                   std::vector<TensorShape> input_shapes,
                                   std::vector<const Tensor*> input_tensors)
    : node_(node),
      input_types_(input_types),
      output_types_(output_types),
      inputs_(std::move(input_shapes)),
      input_tensors_(std::move(input_tensors)),
      outputs_(output_types.size(), TensorShape::Unknown()) {}

absl::Status InferenceContext::WithRank(int i, int rank, TensorShape* out) const {
  const TensorShape& s = inputs_[i];
  if (s.unknown_rank()) {
    *out = TensorShape::UnknownOfRank(rank);
    return absl::OkStatus();
  }
  if (s.rank() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", i, " must have rank ", rank, " but has shape ", s.DebugString()));
  }
  *out = s;
  return absl::OkStatus();
}

absl::Status InferenceContext::WithRankAtLeast(int i, int rank, TensorShape* out) const {
  const TensorShape& s = inputs_[i];
  if (!s.unknown_rank() && s.rank() < rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", i, " must have rank >= ", rank, " but has shape ", s.DebugString()));
  }
  *out = s;
  return absl::OkStatus();
}

bool InferenceContext::GetConstantInts(int i, std::vector<int64_t>* values) const {
  const Tensor* t = input_tensors_[i];
  if (t == nullptr) return false;
  values->clear();
  if (t->dtype() == DT_INT32) {
    for (int64_t k = 0; k < t->NumElements(); ++k) values->push_back(t->data<int32_t>()[k]);
  } else if (t->dtype() == DT_INT64) {
    for (int64_t k = 0; k < t->NumElements(); ++k) values->push_back(t->data<int64_t>()[k]);
  } else {
    return false;
  }
  return true;
}

absl::StatusOr<TensorShape> InferenceContext::ConstantInputAsShape(int i) const {
  std::vector<int64_t> values;
  if (GetConstantInts(i, &values)) {
    TensorShape s;
    for (int64_t v : values) {
      if (v < -1) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", i, " holds dimension ", v, "; dimensions must be >= 0"));
      }
      s.AddDim(v);
    }
    return s;
  }
  if (i < static_cast<int>(has_partial_value_.size()) && has_partial_value_[i]) {
    TensorShape partial;
    for (int64_t v : partial_values_[i]) partial.AddDim(v < 0 ? TensorShape::kUnknownDim : v);
    return partial;
  }
  const TensorShape& s = inputs_[i];
  if (s.rank() == 1 && s.dim(0) >= 0) return TensorShape::UnknownOfRank(static_cast<int>(s.dim(0)));
  return TensorShape::Unknown();
}

void InferenceContext::set_input_partial_value(int i, std::vector<int64_t> values) {
  if (i < 0 || i >= num_inputs()) return;
  if (has_partial_value_.empty()) {
    has_partial_value_.assign(num_inputs(), false);
    partial_values_.resize(num_inputs());
  }
  has_partial_value_[i] = true;
  partial_values_[i] = std::move(values);
}

absl::StatusOr<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return TensorShape::Unknown();
  int rank = std::max(a.rank(), b.rank());
  TensorShape out = TensorShape::UnknownOfRank(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a.dim(ia) : 1;
    int64_t db = ib >= 0 ? b.dim(ib) : 1;
    int64_t d;
    if (da == 1) {
      d = db;
    } else if (db == 1) {
      d = da;
    } else if (da < 0) {
      d = db;  // unknown vs known n (n != 1): must be n for the op to be valid
    } else if (db < 0) {
      d = da;
    } else if (da == db) {
      d = da;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes ", a.DebugString(), " and ", b.DebugString(), " cannot be broadcast: dimension ",
          i, " is ", da, " vs ", db, " (dimensions must be equal or one of them 1)"));
    }
    out.set_dim(i, d);
  }
  return out;
}

absl::Status UnchangedShape(InferenceContext* c) {
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

absl::Status ScalarShape(InferenceContext* c) {
  c->set_output(0, TensorShape());
  return absl::OkStatus();
}

absl::Status BroadcastBinaryShape(InferenceContext* c) {
  auto s = BroadcastShapes(c->input(0), c->input(1));
  if (!s.ok()) return s.status();
  c->set_output(0, *s);
  return absl::OkStatus();
}

absl::Status UnknownShape(InferenceContext* c) { return absl::OkStatus(); }

}  // namespace shardflow
