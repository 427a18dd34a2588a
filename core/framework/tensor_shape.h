// TensorShape: the dimensions of a tensor, possibly partly or wholly unknown.
//
// A shape of a value (a Tensor) is always fully defined. Shapes seen at graph-build time may have
// unknown dimensions (-1, printed "?") or an unknown rank:
//
//   TensorShape s({-1, 784});           // [?,784]
//   s.IsFullyDefined()                  // false
//   s.IsCompatibleWith(TensorShape({32, 784}))   // true
//   TensorShape::Unknown()              // <unknown>
//
// Thread safety: a const TensorShape may be read from any thread.
#ifndef SHARDFLOW_CORE_FRAMEWORK_TENSOR_SHAPE_H_
#define SHARDFLOW_CORE_FRAMEWORK_TENSOR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/protos/tensor.pb.h"

namespace shardflow {

class TensorShape {
 public:
  static constexpr int64_t kUnknownDim = -1;
  // The most dimensions a shape may have (as TensorFlow's).
  static constexpr int kMaxRank = 254;
  using Dims = absl::InlinedVector<int64_t, 4>;

  // A scalar: rank 0, known.
  TensorShape() = default;
  TensorShape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit TensorShape(absl::Span<const int64_t> dims) : dims_(dims.begin(), dims.end()) {}
  static TensorShape Unknown();
  // A known rank with every dimension unknown.
  static TensorShape UnknownOfRank(int rank);

  // Validates a proto: at most kMaxRank dims, each >= -1, and the product of the known ones
  // must fit in int64 (so no shape that came from bytes can overflow an element count).
  static absl::StatusOr<TensorShape> FromProto(const TensorShapeProto& proto);
  void AsProto(TensorShapeProto* proto) const;

  bool unknown_rank() const { return unknown_rank_; }
  // Rank; -1 when the rank is unknown.
  int rank() const { return unknown_rank_ ? -1 : static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  const Dims& dims() const { return dims_; }
  bool IsFullyDefined() const;
  // Product of the dimensions; -1 unless fully defined, and -1 when the product does not fit
  // in int64 (a shape built in code from untrusted values can be that large).
  int64_t num_elements() const;
  // The element count of a fully defined shape; INVALID_ARGUMENT naming the shape when it is
  // not fully defined or has more elements than int64 holds.
  absl::StatusOr<int64_t> CheckedNumElements() const;

  void AddDim(int64_t size) { dims_.push_back(size); }
  void set_dim(int i, int64_t size) { dims_[i] = size; }
  void RemoveDim(int i) { dims_.erase(dims_.begin() + i); }
  void InsertDim(int i, int64_t size) { dims_.insert(dims_.begin() + i, size); }

  // True if some fully defined shape matches both.
  bool IsCompatibleWith(const TensorShape& other) const;
  // The most specific shape compatible with both, or an error naming both.
  absl::StatusOr<TensorShape> Merge(const TensorShape& other) const;

  // "[2,?,3]", "[]" for a scalar, "<unknown>".
  std::string DebugString() const;

  bool operator==(const TensorShape& o) const {
    return unknown_rank_ == o.unknown_rank_ && dims_ == o.dims_;
  }
  bool operator!=(const TensorShape& o) const { return !(*this == o); }

 private:
  Dims dims_;
  bool unknown_rank_ = false;
};

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_TENSOR_SHAPE_H_
