#include "distributed/grpc/tensor_coding.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/platform/checked_math.h"
#include "core/platform/status.h"
#include "core/protos/worker.pb.h"
#include "grpc/slice.h"

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
  explicit SliceReader(const std::vector<grpc::Slice>* slices) : slices_(slices) {
    for (const auto& s : *slices_) remaining_ += s.size();
  }
  size_t remaining() const { return remaining_; }
  size_t index() const { return index_; }
  size_t offset() const { return offset_; }
  bool Read(void* dst, size_t n) {
    if (n > remaining_) return false;
    auto* out = static_cast<uint8_t*>(dst);
    while (n > 0) {
      const grpc::Slice& s = (*slices_)[index_];
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
  const std::vector<grpc::Slice>* slices_;
  size_t index_ = 0;
  size_t offset_ = 0;
  size_t remaining_ = 0;
};

// [varint][header][data bytes at `data` (copied when small, else referenced)].
grpc::ByteBuffer Encode(const RecvTensorHeader& header, const Tensor& tensor, const uint8_t* data,
                        size_t data_bytes) {
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
    std::memcpy(p + prefix_bytes + header_bytes, data, data_bytes);
  }
  grpc::Slice slices[2] = {grpc::Slice(first, grpc::Slice::STEAL_REF), grpc::Slice()};
  if (inline_data) return grpc::ByteBuffer(slices, 1);
  // The second slice borrows the tensor's memory; the Tensor copy keeps it alive until gRPC
  // drops the slice.
  slices[1] = grpc::Slice(const_cast<uint8_t*>(data), data_bytes, &UnrefTensor, new Tensor(tensor));
  return grpc::ByteBuffer(slices, 2);
}

void FillHeader(const Tensor& tensor, RecvTensorHeader* header) {
  header->set_dtype(tensor.dtype());
  tensor.shape().AsProto(header->mutable_shape());
}

}  // namespace

grpc::ByteBuffer EncodeTensor(const Tensor& tensor) {
  RecvTensorHeader header;
  FillHeader(tensor, &header);
  const bool is_string = tensor.dtype() == DT_STRING;
  const size_t data_bytes = is_string ? 0 : tensor.TotalBytes();
  header.set_num_bytes(static_cast<int64_t>(data_bytes));
  if (is_string) {
    for (int64_t i = 0; i < tensor.NumElements(); ++i) {
      header.add_string_val(tensor.data<std::string>()[i]);
    }
  }
  return Encode(header, tensor, static_cast<const uint8_t*>(tensor.raw_data()), data_bytes);
}

grpc::ByteBuffer EncodeTensorRange(const Tensor& tensor, int64_t offset, int64_t length) {
  RecvTensorHeader header;
  FillHeader(tensor, &header);
  header.set_num_bytes(static_cast<int64_t>(tensor.TotalBytes()));
  header.set_range_offset(offset);
  header.set_range_length(length);
  return Encode(header, tensor, static_cast<const uint8_t*>(tensor.raw_data()) + offset,
                static_cast<size_t>(length));
}

absl::Status CheckRecvTensorRange(int64_t offset, int64_t length, int64_t total_bytes) {
  if (offset < 0 || length <= 0 || offset >= total_bytes || length > total_bytes - offset) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecvTensor: byte range [", offset, ", ", offset, " + ", length,
                     ") is not a non-empty range inside the tensor's ", total_bytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<RecvTensorReply> RecvTensorReply::Parse(const grpc::ByteBuffer& buffer) {
  RecvTensorReply reply;
  if (!buffer.Valid() || !buffer.Dump(&reply.slices_).ok()) {
    return absl::InvalidArgumentError("RecvTensor reply: empty or unreadable byte buffer");
  }
  SliceReader reader(&reply.slices_);
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
  // Checked before anything is allocated, so that a lying header cannot make us allocate.
  int64_t num_elements = shape->num_elements();
  int64_t expected_bytes = 0;
  if (num_elements < 0 ||
      (!is_string && !CheckedMul(num_elements, DataTypeSize(dtype), &expected_bytes))) {
    return absl::InvalidArgumentError(absl::StrCat("RecvTensor reply: a ", DataTypeString(dtype),
                                                   " tensor of shape ", shape->DebugString(),
                                                   " has more bytes than fit in 64 bits"));
  }
  const uint64_t expected = static_cast<uint64_t>(expected_bytes);
  if (header.num_bytes() < 0 || static_cast<uint64_t>(header.num_bytes()) != expected) {
    return absl::InvalidArgumentError(absl::StrCat("RecvTensor reply: header says ",
                                                   header.num_bytes(), " bytes for a ",
                                                   DataTypeString(dtype), " tensor of shape ",
                                                   shape->DebugString(), ", which has ", expected));
  }
  reply.dtype_ = dtype;
  reply.shape_ = *shape;
  reply.total_bytes_ = static_cast<int64_t>(expected);
  reply.whole_ = header.range_offset() == 0 && header.range_length() == 0;
  uint64_t follows = expected;
  if (!reply.whole_) {
    if (is_string) {
      return absl::InvalidArgumentError(
          "RecvTensor reply: a DT_STRING tensor cannot be sent as a byte range");
    }
    absl::Status range =
        CheckRecvTensorRange(header.range_offset(), header.range_length(), reply.total_bytes_);
    if (!range.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("RecvTensor reply of a ",
                                                     DataTypeString(dtype), " ",
                                                     shape->DebugString(), ": ", range.message()));
    }
    reply.range_offset_ = header.range_offset();
    reply.range_length_ = header.range_length();
    follows = static_cast<uint64_t>(reply.range_length_);
  } else {
    reply.range_length_ = reply.total_bytes_;
  }
  if (reader.remaining() != follows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RecvTensor reply: header announces ", follows, " bytes of ", DataTypeString(dtype), " ",
        shape->DebugString(), " but ", reader.remaining(), " bytes follow it"));
  }
  if (is_string) {
    if (header.string_val_size() != shape->num_elements()) {
      return absl::InvalidArgumentError(
          absl::StrCat("RecvTensor reply: string tensor of shape ", shape->DebugString(), " has ",
                       header.string_val_size(), " values; expected ", shape->num_elements()));
    }
    reply.string_values_.assign(header.string_val().begin(), header.string_val().end());
  }
  reply.data_slice_ = reader.index();
  reply.data_offset_ = reader.offset();
  return reply;
}

absl::Status RecvTensorReply::CopyInto(Tensor* dst) {
  if (dst->dtype() != dtype_ || !(dst->shape() == shape_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecvTensor reply: a ", DataTypeString(dtype_), " ", shape_.DebugString(),
                     " cannot be copied into a ", DataTypeString(dst->dtype()), " ",
                     dst->shape().DebugString()));
  }
  if (dtype_ == DT_STRING) {
    for (size_t i = 0; i < string_values_.size(); ++i) {
      dst->data<std::string>()[i] = std::move(string_values_[i]);
    }
    return absl::OkStatus();
  }
  auto* out = static_cast<uint8_t*>(dst->raw_data()) + range_offset_;
  uint8_t* const begin = out;
  size_t n = static_cast<size_t>(range_length_);
  size_t index = data_slice_, offset = data_offset_;
  while (n > 0) {
    const grpc::Slice& s = slices_[index];
    const size_t take = std::min(n, s.size() - offset);
    std::memcpy(out, s.begin() + offset, take);
    out += take;
    n -= take;
    ++index;
    offset = 0;
  }
  // The slices are released here rather than with the reply, so the memory gRPC read into goes
  // back as soon as it has been copied.
  slices_.clear();
  if (dtype_ == DT_BOOL) {
    // A peer's bytes: anything but 0 and 1 is not a bool, and reading it as one is undefined.
    // The bad bytes are cleared too, so that nothing can read them before the error is seen.
    absl::Status bad;
    for (uint8_t* p = begin; p < out; ++p) {
      if (*p <= 1) continue;
      if (bad.ok()) {
        bad = absl::InvalidArgumentError(
            absl::StrCat("RecvTensor reply: a bool tensor holds byte ", static_cast<int>(*p),
                         " at offset ", range_offset_ + (p - begin), "; a bool is 0 or 1"));
      }
      *p = 0;
    }
    if (!bad.ok()) return bad;
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> RecvTensorReply::ToTensor(Allocator* allocator) {
  if (!whole_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RecvTensor reply holds bytes [", range_offset_, ", ", range_offset_ + range_length_,
        ") of a ", total_bytes_, "-byte tensor, not the whole tensor"));
  }
  if (allocator == nullptr) allocator = CpuAllocator();
  auto created = Tensor::Create(allocator, dtype_, shape_);
  if (!created.ok()) return created.status();
  Tensor t = std::move(created).value();
  SF_RETURN_IF_ERROR(CopyInto(&t));
  return t;
}

absl::StatusOr<Tensor> DecodeTensor(const grpc::ByteBuffer& buffer, Allocator* allocator) {
  auto reply = RecvTensorReply::Parse(buffer);
  if (!reply.ok()) return reply.status();
  return reply->ToTensor(allocator);
}

}  // namespace shardflow
