// Checkpoints: named tensors (a model's variables) saved to and loaded from one file.
//
//   SF_RETURN_IF_ERROR(SaveCheckpoint("/ckpt/model-1000", {{"dense/w", w}, {"dense/b", b}}));
//   SF_ASSIGN_OR_RETURN(auto vars, LoadCheckpoint("/ckpt/model-1000"));
//   SF_RETURN_IF_ERROR(CheckCompatible(vars, {{"dense/w", DT_FLOAT, TensorShape({784, 10})},
//                                             {"dense/b", DT_FLOAT, TensorShape({10})}}));
//
// Saving is atomic: the file is written to `path + ".tmp-<pid>"`, fsynced, and renamed over
// `path` (then the directory is fsynced), so a crash leaves either the old checkpoint or the new
// one under `path`, never a half-written file. Loading checks every byte (structure, a checksum
// per variable and for the whole file, no trailing bytes) and returns all variables or an error,
// never part of them.
//
// File format, version 1 (integers little-endian; crc is zlib's CRC-32):
//   header   "SFCKPT01" | u32 version | u64 variable count | u32 crc of the 20 bytes before it
//   variable u32 name length | name | u32 dtype (the DataType enum value) | u32 rank |
//            i64 dims[rank] | u64 data length | data | u32 crc of this variable's bytes before it
//            data: numeric types as packed little-endian elements (bfloat16 and half as their
//            16 bits); strings as u64 length | bytes, per element
//   trailer  "SFCKTAIL" | u32 crc of every byte before the trailer
//
// Thread safety: the functions may be called from any thread, but two saves to the same path
// from one process at once are not supported (they share the temporary file name).
#ifndef SHARDFLOW_RUNTIME_CHECKPOINT_H_
#define SHARDFLOW_RUNTIME_CHECKPOINT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_shape.h"
#include "core/framework/types.h"

namespace shardflow {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Writes `tensors` in their order. Names must be non-empty and distinct and every tensor
// initialized (InvalidArgument otherwise, naming the variable). An existing file at `path` is
// replaced whole. I/O errors name the file and the system error; the temporary file is removed.
absl::Status SaveCheckpoint(const std::string& path, const NamedTensors& tensors);

// Reads every variable, in the order they were saved. Errors: NotFound (no file);
// InvalidArgument (not a checkpoint, an unknown format version or dtype, an invalid shape);
// DataLoss (truncated, a checksum mismatch, trailing bytes). Messages name the file and, where
// the problem lies in one variable, the variable.
absl::StatusOr<NamedTensors> LoadCheckpoint(const std::string& path);

// What a model expects of one variable. An unknown dimension (-1) in `shape` matches any size.
struct VariableSpec {
  std::string name;
  DataType dtype = DT_INVALID;
  TensorShape shape;
};

// OK when `loaded` holds exactly the variables of `expected` (any order) with their dtypes and
// shapes. Otherwise InvalidArgument listing every difference: missing variables, unexpected
// ones, and dtype or shape mismatches ("variable 'dense/w' has shape [784,128] in the checkpoint
// but [784,256] in the model").
absl::Status CheckCompatible(const NamedTensors& loaded, const std::vector<VariableSpec>& expected);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_CHECKPOINT_H_
