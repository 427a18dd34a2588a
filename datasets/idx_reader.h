// ReadIdxFile: reads an array in the idx format of MNIST and Fashion-MNIST, gzipped or plain.
//
// An idx file is a big-endian header — two zero bytes, a type code, the number of dimensions,
// then each dimension as a 32-bit integer — followed by the elements in row-major order:
//
//   SF_ASSIGN_OR_RETURN(Tensor images, ReadIdxFile("train-images-idx3-ubyte.gz"));
//   // images: uint8 [60000,28,28]
//
// Type codes and the dtype of the result: 0x08 unsigned byte -> uint8, 0x09 signed byte -> int8,
// 0x0B short -> int32 (widened; there is no int16 dtype), 0x0C int -> int32, 0x0D float ->
// float, 0x0E double -> double. Elements are converted to host byte order.
//
// Whether the file is gzipped is decided from its content, not its name. The header is checked
// (magic, type code, dimensions) and the payload must hold exactly the declared number of
// elements: a short payload or bytes after it are errors that name the file. Memory is only
// allocated for bytes the file really holds, so a corrupt header cannot cause a huge allocation.
//
// Thread safety: ReadIdxFile may be called from any thread.
#ifndef SHARDFLOW_DATASETS_IDX_READER_H_
#define SHARDFLOW_DATASETS_IDX_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/framework/tensor.h"

namespace shardflow {

// Errors: NotFound when the file cannot be opened; InvalidArgument for a header that is not an
// idx header; DataLoss for a truncated or over-long payload or a corrupt gzip stream.
absl::StatusOr<Tensor> ReadIdxFile(const std::string& path);

}  // namespace shardflow

#endif  // SHARDFLOW_DATASETS_IDX_READER_H_
