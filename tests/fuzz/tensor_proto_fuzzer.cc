// Fuzzes tensor protos (core/framework/tensor.h): the input is a serialized TensorProto, the
// form tensors take in GraphDefs (Const values), feeds and fetches.
//
// Checked on every input: parsing and Tensor::FromProto return, never crash, and allocate no
// more than the proto's own content (or one string per string_val). Checked when FromProto
// accepts: the tensor describes exactly the proto (dtype, shape, content bytes or strings), so
// AsProto gives back the same fields; a second FromProto of that gives an equal tensor;
// DebugString, SummarizeValue and DeepCopy work on it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/framework/tensor.h"
#include "core/protos/tensor.pb.h"

namespace shardflow {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "tensor_proto_fuzzer: invariant violated: %s\n", what.c_str());
  std::abort();
}

// The bytes of a tensor's values: content for numeric types, the strings for DT_STRING.
std::string ValueBytes(const TensorProto& p) {
  if (p.dtype() != DT_STRING) return p.content();
  std::string out;
  for (const std::string& s : p.string_val()) {
    out += std::to_string(s.size());
    out += ':';
    out += s;
  }
  return out;
}

void CheckSameTensor(const TensorProto& expected, const TensorProto& got, const char* what) {
  if (got.dtype() != expected.dtype()) Fail(std::string(what) + ": dtype differs");
  if (got.shape().unknown_rank() || got.shape().dim_size() != expected.shape().dim_size()) {
    Fail(std::string(what) + ": rank differs");
  }
  for (int i = 0; i < got.shape().dim_size(); ++i) {
    if (got.shape().dim(i) != expected.shape().dim(i)) {
      Fail(std::string(what) + ": dimension " + std::to_string(i) + " differs");
    }
  }
  if (ValueBytes(got) != ValueBytes(expected)) Fail(std::string(what) + ": values differ");
  if (got.dtype() == DT_STRING ? !got.content().empty() : got.string_val_size() != 0) {
    Fail(std::string(what) + ": AsProto wrote the field its dtype does not use");
  }
}

// Tensor::FromProto refuses DT_BOOL content bytes other than 0 and 1 (reading one as bool is
// undefined; regress_bool_byte_93 is the input that found it): an accepted tensor never has one.
bool HasNonCanonicalBools(const Tensor& t) {
  if (t.dtype() != DT_BOOL) return false;
  const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (bytes[i] > 1) return true;
  }
  return false;
}

void CheckAccepted(const TensorProto& proto, const Tensor& t) {
  if (!t.IsInitialized()) Fail("FromProto returned an uninitialized tensor");
  if (t.dtype() != DT_STRING && t.TotalBytes() != proto.content().size()) {
    Fail("TotalBytes differs from the content size");
  }
  TensorProto out;
  t.AsProto(&out);
  CheckSameTensor(proto, out, "AsProto of FromProto");

  auto again = Tensor::FromProto(out);
  if (!again.ok()) Fail("FromProto rejects what AsProto wrote: " + again.status().ToString());
  TensorProto out2;
  again->AsProto(&out2);
  if (out2.SerializeAsString() != out.SerializeAsString()) Fail("second round trip differs");
  if (HasNonCanonicalBools(t)) Fail("FromProto accepted a bool byte other than 0 and 1");
  if (again->DebugString(1000) != t.DebugString(1000)) Fail("DebugString differs after a trip");

  Tensor copy = t.DeepCopy();
  if (copy.SharesBufferWith(t) && t.NumElements() > 0) Fail("DeepCopy shares the buffer");
  TensorProto out3;
  copy.AsProto(&out3);
  CheckSameTensor(proto, out3, "AsProto of DeepCopy");
  (void)t.SummarizeValue(3);
  (void)t.DebugString();
}

}  // namespace
}  // namespace shardflow

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardflow::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto t = shardflow::Tensor::FromProto(proto);
  if (t.ok()) shardflow::CheckAccepted(proto, *t);
  return 0;
}
