// The wire format of a tensor in RecvTensor's reply, without an intermediate protobuf copy.
//
//   [varint N][RecvTensorHeader, N bytes][tensor data: num_bytes, or range_length, bytes]
//
// EncodeTensor puts a small tensor (up to kInlineTensorBytes) in one slice with its header (one
// small copy beats a second slice and a reference for latency); a larger tensor goes as two
// slices, the header and a slice that points at the tensor's own memory and holds a reference
// to it until gRPC has written it out. EncodeTensorRange does the same for a byte range of the
// tensor (the reply to a ranged RecvTensor). RecvTensorReply walks the received slices (gRPC
// cuts them where it likes), checks the header against the byte count, and copies the data once
// into the destination tensor. DT_STRING values travel in the header (they are not contiguous)
// and are never split into ranges.
//
//   auto reply = RecvTensorReply::Parse(buffer);          // header checked, nothing copied yet
//   if (reply->whole()) return reply->ToTensor(allocator);
//   Tensor dst = ...;                                     // dtype/shape of reply->dtype()/shape()
//   SF_RETURN_IF_ERROR(reply->CopyInto(&dst));            // bytes [range_offset, +range_length)
//
// Thread safety: the functions are thread-compatible (no shared state); a RecvTensorReply is
// used by one thread at a time.
#ifndef SHARDFLOW_DISTRIBUTED_GRPC_TENSOR_CODING_H_
#define SHARDFLOW_DISTRIBUTED_GRPC_TENSOR_CODING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/allocator.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_shape.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"

namespace shardflow {

inline constexpr size_t kInlineTensorBytes = 16 * 1024;

// `tensor` must be initialized.
grpc::ByteBuffer EncodeTensor(const Tensor& tensor);

// The reply to a ranged RecvTensor: bytes [offset, offset + length) of `tensor`, which must be
// initialized, not DT_STRING, with 0 <= offset, 0 < length and offset + length <=
// TotalBytes() (the caller checks; see CheckRecvTensorRange). The data slice points at the
// tensor's memory and keeps a reference to it until gRPC has written it out.
grpc::ByteBuffer EncodeTensorRange(const Tensor& tensor, int64_t offset, int64_t length);

// OK when [offset, offset + length) is a range a ranged RecvTensor may ask of a tensor of
// `total_bytes`; INVALID_ARGUMENT naming the range and the size otherwise.
absl::Status CheckRecvTensorRange(int64_t offset, int64_t length, int64_t total_bytes);

// A received RecvTensor reply whose header has been checked: dtype and shape valid, num_bytes
// equal to dtype × shape, the range inside the tensor, and exactly the announced bytes after
// the header. Errors (INVALID_ARGUMENT, naming what is wrong): a truncated or unparsable
// header, an invalid dtype or shape, a header whose num_bytes disagrees with its dtype and
// shape, a range outside the tensor or of a string tensor, or a payload of another length.
class RecvTensorReply {
 public:
  static absl::StatusOr<RecvTensorReply> Parse(const grpc::ByteBuffer& buffer);

  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  // dtype × shape (0 for DT_STRING).
  int64_t total_bytes() const { return total_bytes_; }
  // The bytes that follow the header: all of the tensor, or [range_offset, +range_length).
  bool whole() const { return whole_; }
  int64_t range_offset() const { return range_offset_; }
  int64_t range_length() const { return range_length_; }

  // A fresh, aligned tensor from `allocator` (null = CpuAllocator()) holding the data; only for
  // a whole() reply. RESOURCE_EXHAUSTED when the allocation fails.
  absl::StatusOr<Tensor> ToTensor(Allocator* allocator);
  // Copies the data into `dst` at range_offset(). INVALID_ARGUMENT when `dst` is not of this
  // reply's dtype and shape, or is a string tensor. Once.
  absl::Status CopyInto(Tensor* dst);

 private:
  RecvTensorReply() = default;

  DataType dtype_ = DT_INVALID;
  TensorShape shape_;
  int64_t total_bytes_ = 0;
  bool whole_ = true;
  int64_t range_offset_ = 0;
  int64_t range_length_ = 0;
  std::vector<std::string> string_values_;
  // The received slices and where the tensor data starts in them.
  std::vector<grpc::Slice> slices_;
  size_t data_slice_ = 0;
  size_t data_offset_ = 0;
};

// RecvTensorReply::Parse, then ToTensor of a whole reply (a ranged one is INVALID_ARGUMENT).
// `allocator` null = CpuAllocator().
absl::StatusOr<Tensor> DecodeTensor(const grpc::ByteBuffer& buffer, Allocator* allocator);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_GRPC_TENSOR_CODING_H_
