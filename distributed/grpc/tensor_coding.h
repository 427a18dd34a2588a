// The wire format of a tensor in RecvTensor's reply, without an intermediate protobuf copy.
//
//   [varint N][RecvTensorHeader, N bytes][tensor data, header.num_bytes bytes]
//
// EncodeTensor puts a small tensor (up to kInlineTensorBytes) in one slice with its header (one
// small copy beats a second slice and a reference for latency); a larger tensor goes as two
// slices, the header and a slice that points at the tensor's own memory and holds a reference
// to it until gRPC has written it out. DecodeTensor walks the received slices (gRPC cuts them
// where it likes), checks the header against the byte count, and copies the data once into a
// freshly allocated, aligned tensor. DT_STRING values travel in the header (they are not
// contiguous).
//
// Thread safety: both functions are thread-compatible (no shared state).
#ifndef SHARDFLOW_DISTRIBUTED_GRPC_TENSOR_CODING_H_
#define SHARDFLOW_DISTRIBUTED_GRPC_TENSOR_CODING_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "core/framework/allocator.h"
#include "core/framework/tensor.h"
#include "grpcpp/support/byte_buffer.h"

namespace shardflow {

inline constexpr size_t kInlineTensorBytes = 16 * 1024;

// `tensor` must be initialized.
grpc::ByteBuffer EncodeTensor(const Tensor& tensor);

// Errors (INVALID_ARGUMENT, naming what is wrong): a truncated or unparsable header, an invalid
// dtype or shape, a header whose num_bytes disagrees with its dtype and shape, or a payload
// whose length is not num_bytes. RESOURCE_EXHAUSTED when the allocation fails.
// `allocator` null = CpuAllocator().
absl::StatusOr<Tensor> DecodeTensor(const grpc::ByteBuffer& buffer, Allocator* allocator);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_GRPC_TENSOR_CODING_H_
