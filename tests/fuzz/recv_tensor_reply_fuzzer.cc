// Fuzzes the RecvTensor reply decoder (distributed/grpc/tensor_coding.h), which reads bytes a
// remote worker sent.
//
// Input: byte 0 chooses how the rest is cut into gRPC slices (gRPC cuts received messages where
// it likes): its low 3 bits are the number of cuts (0-7), and the cut points are drawn from it
// and the length; cuts may coincide, giving empty slices. Bytes 1.. are the reply:
// [varint N][RecvTensorHeader, N bytes][tensor data].
//
// Checked on every input: Parse, DecodeTensor, ToTensor and CopyInto return a status, never
// crash, and allocate no more than the reply's own bytes (a whole reply) or, for a ranged reply,
// this harness allocates the destination only when it is at most 1 MiB. Checked when Parse
// accepts: the header's numbers agree (total bytes = dtype size x elements, the range inside
// the tensor); the data copied out is exactly the reply's trailing bytes; and a whole tensor
// encoded again with EncodeTensor decodes to the same dtype, shape and bytes.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "distributed/grpc/tensor_coding.h"

namespace shardflow {
namespace {

constexpr int64_t kMaxRangedDestinationBytes = 1 << 20;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "recv_tensor_reply_fuzzer: invariant violated: %s\n", what.c_str());
  std::abort();
}

// `bytes` cut at up to 7 points chosen by `selector`.
grpc::ByteBuffer Slices(uint8_t selector, const uint8_t* bytes, size_t size) {
  std::vector<size_t> cuts;
  uint64_t state = selector * 0x9E3779B97F4A7C15ull + size;
  for (int i = 0; i < (selector & 7); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    cuts.push_back(static_cast<size_t>((state >> 33) % (size + 1)));
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.push_back(size);
  std::vector<grpc::Slice> slices;
  size_t begin = 0;
  for (size_t end : cuts) {
    slices.emplace_back(bytes + begin, end - begin);
    begin = end;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// The tensor's bytes, or its strings each prefixed by its length.
std::string TensorBytes(const Tensor& t) {
  if (t.dtype() != DT_STRING) {
    return std::string(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }
  std::string out;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const std::string& s = t.data<std::string>()[i];
    out += std::to_string(s.size()) + ":" + s;
  }
  return out;
}

void CheckHeader(const RecvTensorReply& reply) {
  const int64_t elements = reply.shape().num_elements();
  if (!reply.shape().IsFullyDefined() || elements < 0) Fail("accepted an undefined shape");
  const int64_t size = reply.dtype() == DT_STRING ? 0 : DataTypeSize(reply.dtype());
  int64_t bytes = 0;
  if (__builtin_mul_overflow(elements, size, &bytes) || bytes != reply.total_bytes()) {
    Fail("total_bytes is not dtype size x elements");
  }
  if (reply.whole()) {
    if (reply.range_offset() != 0 || reply.range_length() != reply.total_bytes()) {
      Fail("a whole reply with a range");
    }
  } else if (reply.range_offset() < 0 || reply.range_length() <= 0 ||
             reply.range_length() > reply.total_bytes() - reply.range_offset()) {
    Fail("a range outside the tensor");
  }
}

// Bools must arrive as 0 or 1: any other byte is refused by CopyInto (reading it as bool is
// undefined).
bool BadBoolBytes(DataType dtype, const std::string& data) {
  return dtype == DT_BOOL && data.find_first_not_of(std::string("\0\1", 2)) != std::string::npos;
}

void CheckWhole(RecvTensorReply reply, const std::string& data) {
  auto t = reply.ToTensor(nullptr);
  if (BadBoolBytes(reply.dtype(), data)) {
    if (t.ok()) Fail("ToTensor accepted a bool byte other than 0 and 1");
    return;
  }
  if (!t.ok()) {
    if (t.status().code() == absl::StatusCode::kResourceExhausted) return;
    Fail("ToTensor of an accepted whole reply: " + t.status().ToString());
  }
  if (t->dtype() != reply.dtype() || t->shape() != reply.shape()) Fail("ToTensor: wrong type");
  if (t->dtype() != DT_STRING && TensorBytes(*t) != data) Fail("ToTensor: wrong bytes");

  grpc::ByteBuffer again = EncodeTensor(*t);
  auto decoded = DecodeTensor(again, nullptr);
  if (!decoded.ok()) Fail("DecodeTensor rejects EncodeTensor: " + decoded.status().ToString());
  if (decoded->dtype() != t->dtype() || decoded->shape() != t->shape() ||
      TensorBytes(*decoded) != TensorBytes(*t)) {
    Fail("EncodeTensor then DecodeTensor changes the tensor");
  }
}

void CheckRanged(RecvTensorReply reply, const std::string& data) {
  if (reply.ToTensor(nullptr).ok()) Fail("ToTensor accepted a ranged reply");
  if (reply.total_bytes() > kMaxRangedDestinationBytes) return;
  auto dst = Tensor::Create(CpuAllocator(), reply.dtype(), reply.shape());
  if (!dst.ok()) return;
  std::memset(dst->raw_data(), 0, dst->TotalBytes());
  absl::Status copied = reply.CopyInto(&*dst);
  if (BadBoolBytes(reply.dtype(), data)) {
    if (copied.ok()) Fail("CopyInto accepted a bool byte other than 0 and 1");
    if (TensorBytes(*dst).find_first_not_of(std::string("\0\1", 2)) != std::string::npos) {
      Fail("CopyInto left a bool byte other than 0 and 1 in the destination");
    }
    return;
  }
  if (!copied.ok()) Fail("CopyInto of an accepted ranged reply: " + copied.ToString());
  const std::string bytes = TensorBytes(*dst);
  if (bytes.compare(reply.range_offset(), reply.range_length(), data) != 0) {
    Fail("CopyInto: wrong bytes in the range");
  }
  const std::string outside = bytes.substr(0, reply.range_offset()) +
                              bytes.substr(reply.range_offset() + reply.range_length());
  if (outside.find_first_not_of('\0') != std::string::npos) Fail("CopyInto wrote outside");
}

}  // namespace
}  // namespace shardflow

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardflow;
  if (size == 0) return 0;
  const grpc::ByteBuffer buffer = Slices(data[0], data + 1, size - 1);
  auto reply = RecvTensorReply::Parse(buffer);
  auto decoded = DecodeTensor(buffer, nullptr);
  if (!reply.ok()) {
    if (decoded.ok()) Fail("DecodeTensor accepts what Parse rejects");
    return 0;
  }
  CheckHeader(*reply);
  // The data is the reply's last range_length bytes (Parse checked that exactly those follow).
  const size_t n = reply->dtype() == DT_STRING ? 0 : static_cast<size_t>(reply->range_length());
  const std::string tail(reinterpret_cast<const char*>(data) + size - n, n);
  if (reply->whole()) {
    CheckWhole(*std::move(reply), tail);
  } else {
    if (decoded.ok()) Fail("DecodeTensor accepts a ranged reply");
    CheckRanged(*std::move(reply), tail);
  }
  return 0;
}
