// CPU kernels hashing strings into buckets with TensorFlow's hash functions, so that a model's
// hashed features (hash-bucket and crossed feature columns, vocabulary tables' out-of-vocabulary
// buckets) land in the rows TensorFlow puts them in and a TF-trained checkpoint means the same:
//   StringToHashBucketFast    FarmHash Fingerprint64 (Debian's libfarmhash, TF's own choice)
//   StringToHashBucketStrong  SipHash-2-4 keyed by two uint64s (Debian's libhighwayhash)
//   StringToHashBucket        TF's legacy Hash64: MurmurHash64A seeded with 0xDECAFCAFFE
// each modulo num_buckets.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "farmhash.h"
#include "highwayhash/sip_hash.h"
#include "kernels/cpu/string_hash.h"

namespace shardflow {

uint64_t Fingerprint64(const std::string& s) { return util::Fingerprint64(s.data(), s.size()); }

uint64_t LegacyHash64(const std::string& s) {
  // MurmurHash64A (Austin Appleby's public-domain algorithm), little-endian 8-byte blocks.
  constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;
  constexpr int kShift = 47;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  uint64_t h = 0xDECAFCAFFEULL ^ (n * kMul);
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t k;
    std::memcpy(&k, p, 8);
    k *= kMul;
    k ^= k >> kShift;
    k *= kMul;
    h ^= k;
    h *= kMul;
  }
  if (n > 0) {
    for (size_t i = n; i-- > 0;) h ^= static_cast<uint64_t>(p[i]) << (8 * i);
    h *= kMul;
  }
  h ^= h >> kShift;
  h *= kMul;
  h ^= h >> kShift;
  return h;
}

uint64_t StrongKeyedHash64(uint64_t k0, uint64_t k1, const std::string& s) {
  const highwayhash::SipHashState::Key key = {k0, k1};
  return highwayhash::SipHash(key, s.data(), s.size());
}

namespace {

template <typename Hash>
void HashInto(OpKernelContext* ctx, int64_t buckets, const Hash& hash) {
  const Tensor& input = ctx->input(0);
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
  const std::string* in = input.data<std::string>();
  int64_t* o = out->data<int64_t>();
  for (int64_t i = 0; i < input.NumElements(); ++i) {
    o[i] = static_cast<int64_t>(hash(in[i]) % static_cast<uint64_t>(buckets));
  }
}

int64_t ReadBuckets(OpKernelConstruction* c) {
  int64_t buckets = 1;
  absl::Status s = c->GetAttr("num_buckets", &buckets);
  if (s.ok() && buckets < 1) {
    s = absl::InvalidArgumentError(absl::StrCat("num_buckets must be >= 1, got ", buckets));
  }
  if (!s.ok()) c->SetStatus(s);
  return buckets;
}

class StringToHashBucketFastOp : public OpKernel {
 public:
  explicit StringToHashBucketFastOp(OpKernelConstruction* c)
      : OpKernel(c), buckets_(ReadBuckets(c)) {}
  void Compute(OpKernelContext* ctx) override { HashInto(ctx, buckets_, Fingerprint64); }

 private:
  const int64_t buckets_;
};

class StringToHashBucketOp : public OpKernel {
 public:
  explicit StringToHashBucketOp(OpKernelConstruction* c) : OpKernel(c), buckets_(ReadBuckets(c)) {}
  void Compute(OpKernelContext* ctx) override { HashInto(ctx, buckets_, LegacyHash64); }

 private:
  const int64_t buckets_;
};

class StringToHashBucketStrongOp : public OpKernel {
 public:
  explicit StringToHashBucketStrongOp(OpKernelConstruction* c)
      : OpKernel(c), buckets_(ReadBuckets(c)) {
    std::vector<int64_t> key;
    absl::Status s = c->GetAttr("key", &key);
    if (s.ok() && key.size() != 2) {
      s = absl::InvalidArgumentError(
          absl::StrCat("key must have size 2 (SipHash's two uint64 words), got ", key.size()));
    }
    if (!s.ok()) {
      c->SetStatus(s);
      return;
    }
    k0_ = static_cast<uint64_t>(key[0]);
    k1_ = static_cast<uint64_t>(key[1]);
  }
  void Compute(OpKernelContext* ctx) override {
    HashInto(ctx, buckets_,
             [this](const std::string& s) { return StrongKeyedHash64(k0_, k1_, s); });
  }

 private:
  const int64_t buckets_;
  uint64_t k0_ = 0;
  uint64_t k1_ = 0;
};

REGISTER_KERNEL(KernelDef("StringToHashBucketFast").Device(kDeviceCpu), StringToHashBucketFastOp);
REGISTER_KERNEL(KernelDef("StringToHashBucket").Device(kDeviceCpu), StringToHashBucketOp);
REGISTER_KERNEL(KernelDef("StringToHashBucketStrong").Device(kDeviceCpu),
                StringToHashBucketStrongOp);

}  // namespace
}  // namespace shardflow
