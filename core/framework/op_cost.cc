#include "core/framework/op_cost.h"

namespace shardflow {
namespace {

const TensorShape& UnknownShape() {
  static const TensorShape* unknown = new TensorShape(TensorShape::Unknown());
  return *unknown;
}

}  // namespace

const TensorShape& OpCostContext::input(int i) const {
  return i >= 0 && i < static_cast<int>(inputs_->size()) ? (*inputs_)[i] : UnknownShape();
}

const TensorShape& OpCostContext::output(int i) const {
  return i >= 0 && i < static_cast<int>(outputs_->size()) ? (*outputs_)[i] : UnknownShape();
}

double OpCostContext::Dim(const TensorShape& shape, int i) const {
  if (shape.unknown_rank() || i >= shape.rank() || i < -shape.rank()) {
    return static_cast<double>(unknown_dim_);
  }
  int64_t d = shape.dim(i < 0 ? shape.rank() + i : i);
  return static_cast<double>(d < 0 ? unknown_dim_ : d);
}

double OpCostContext::Elements(const TensorShape& shape) const {
  if (shape.unknown_rank()) return static_cast<double>(unknown_dim_);
  double n = 1;
  for (int64_t d : shape.dims()) n *= static_cast<double>(d < 0 ? unknown_dim_ : d);
  return n;
}

double OpCostContext::InputElements() const {
  double n = 0;
  for (const TensorShape& s : *inputs_) n += Elements(s);
  return n;
}

double OpCostContext::OutputElements() const {
  double n = 0;
  for (const TensorShape& s : *outputs_) n += Elements(s);
  return n;
}

}  // namespace shardflow
