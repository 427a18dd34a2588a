#include "distributed/grpc/tensor_coding.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/protos/worker.pb.h"
#include "grpc/slice.h"
#include "grpcpp/support/slice.h"

namespace shardflow {
namespace {

size_t PutVarint(uint64_t v, uint8_t* out) {
  size_t n = 0;
  while (v >= 0x80) {
    out[n++] = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  out[n++] = static_cast<uint8_t>(v);
  return n;
}

void UnrefTensor(void* tensor) { delete static_cast<Tensor*>(tensor); }

// Reads consecutive bytes across the slices of a received buffer.
class SliceReader {
 public:
  explicit SliceReader(std::vector<grpc::Slice> slices) : slices_(std::move(slices)) {
    for (const auto& s : slices_) remaining_ += s.size();
  }
  size_t remaining() const { return remaining_; }
  bool Read(void* dst, size_t n) {
    if (n > remaining_) return false;
    auto* out = static_cast<uint8_t*>(dst);
    while (n > 0) {
      const grpc::Slice& s = slices_[index_];
      size_t take = std::min(n, s.size() - offset_);
      std::memcpy(out, s.begin() + offset_, take);
      out += take;
      n -= take;
      remaining_ -= take;
      offset_ += take;
      if (offset_ == s.size()) {
        ++index_;
        offset_ = 0;
      }
    }
    return true;
  }
  bool ReadVarint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Read(&b, 1)) return false;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }

 private:
  std::vector<grpc::Slice> slices_;
  size_t index_ = 0;
  size_t offset_ = 0;
  size_t remaining_ = 0;
};

}  // namespace

grpc::ByteBuffer EncodeTensor(const Tensor& tensor) {
  RecvTensorHeader header;
  header.set_dtype(tensor.dtype());
  tensor.shape().AsProto(header.mutable_shape());
  const bool is_string = tensor.dtype() == DT_STRING;
  const size_t data_bytes = is_string ? 0 : tensor.TotalBytes();
  header.set_num_bytes(static_cast<int64_t>(data_bytes));
  if (is_string) {
    for (int64_t i = 0; i < tensor.NumElements(); ++i) {
      header.add_string_val(tensor.data<std::string>()[i]);
    }
  }
  const size_t header_bytes = header.ByteSizeLong();
  uint8_t prefix[10];
  const size_t prefix_bytes = PutVarint(header_bytes, prefix);
  const bool inline_data = data_bytes <= kInlineTensorBytes;
  const size_t first_bytes = prefix_bytes + header_bytes + (inline_data ? data_bytes : 0);

  grpc_slice first = grpc_slice_malloc(first_bytes);
  uint8_t* p = GRPC_SLICE_START_PTR(first);
  std::memcpy(p, prefix, prefix_bytes);
  header.SerializeWithCachedSizesToArray(p + prefix_bytes);
  if (inline_data && data_bytes > 0) {
    std::memcpy(p + prefix_bytes + header_bytes, tensor.raw_data(), data_bytes);
  }
  grpc::Slice slices[2] = {grpc::Slice(first, grpc::Slice::STEAL_REF), grpc::Slice()};
  if (inline_data) return grpc::ByteBuffer(slices, 1);
  // The second slice borrows the tensor's memory; the Tensor copy keeps it alive until gRPC
  // drops the slice.
  slices[1] = grpc::Slice(tensor.raw_data(), data_bytes, &UnrefTensor, new Tensor(tensor));
  return grpc::ByteBuffer(slices, 2);
}

absl::StatusOr<Tensor> DecodeTensor(const grpc::ByteBuffer& buffer, Allocator* allocator) {
  if (allocator == nullptr) allocator = CpuAllocator();
  std::vector<grpc::Slice> slices;
  if (!buffer.Valid() || !buffer.Dump(&slices).ok()) {
    return absl::InvalidArgumentError("RecvTensor reply: empty or unreadable byte buffer");
  }
  SliceReader reader(std::move(slices));
  const size_t total = reader.remaining();
  uint64_t header_bytes = 0;
  if (!reader.ReadVarint(&header_bytes) || header_bytes > reader.remaining()) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecvTensor reply of ", total,
                     " bytes does not start with a header length that fits in it"));
  }
  std::string header_data(header_bytes, '\0');
  reader.Read(header_data.data(), header_bytes);
  RecvTensorHeader header;
  if (!header.ParseFromString(header_data)) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecvTensor reply: the ", header_bytes, "-byte header does not parse"));
  }
  auto shape = TensorShape::FromProto(header.shape());
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecvTensor reply: bad shape in header: ", shape.status().message()));
  }
  const DataType dtype = header.dtype();
  const bool is_string = dtype == DT_STRING;
  if (dtype == DT_INVALID || !DataType_IsValid(dtype) || (!is_string && DataTypeSize(dtype) == 0)) {
    return absl::InvalidArgumentError(absl::StrCat("RecvTensor reply: header has no valid dtype (",
                                                   static_cast<int>(dtype), ")"));
  }
  if (!shape->IsFullyDefined()) {
    return absl::InvalidArgumentError(absl::StrCat("RecvTensor reply: header shape ",
                                                   shape->DebugString(), " is not fully defined"));
  }
  // Checked before allocating, so that a lying header cannot make us allocate.
  const uint64_t expected =
      is_string ? 0 : static_cast<uint64_t>(shape->num_elements()) * DataTypeSize(dtype);
  if (header.num_bytes() < 0 || static_cast<uint64_t>(header.num_bytes()) != expected) {
    return absl::InvalidArgumentError(absl::StrCat("RecvTensor reply: header says ",
                                                   header.num_bytes(), " bytes for a ",
                                                   DataTypeString(dtype), " tensor of shape ",
                                                   shape->DebugString(), ", which has ", expected));
  }
  if (reader.remaining() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RecvTensor reply: header announces ", expected, " bytes of ", DataTypeString(dtype), " ",
        shape->DebugString(), " but ", reader.remaining(), " bytes follow it"));
  }
  auto created = Tensor::Create(allocator, dtype, *shape);
  if (!created.ok()) return created.status();
  Tensor t = std::move(created).value();
  if (is_string) {
    if (header.string_val_size() != t.NumElements()) {
      return absl::InvalidArgumentError(
          absl::StrCat("RecvTensor reply: string tensor of shape ", shape->DebugString(), " has ",
                       header.string_val_size(), " values; expected ", t.NumElements()));
    }
    for (int i = 0; i < header.string_val_size(); ++i) {
      t.data<std::string>()[i] = header.string_val(i);
    }
  } else if (expected > 0) {
    reader.Read(t.raw_data(), expected);
  }
  return t;
}

}  // namespace shardflow
