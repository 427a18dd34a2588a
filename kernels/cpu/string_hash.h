// TensorFlow's string hashes, shared by the hash-bucket kernels (string_hash_ops.cc) and the
// Python layer's feature crosses and vocabulary buckets (python_bindings: fingerprint64).
#ifndef SHARDFLOW_KERNELS_CPU_STRING_HASH_H_
#define SHARDFLOW_KERNELS_CPU_STRING_HASH_H_

#include <cstdint>
#include <string>

namespace shardflow {

// FarmHash's Fingerprint64 (TF's Fingerprint64): tf.strings.to_hash_bucket_fast's hash.
uint64_t Fingerprint64(const std::string& s);

// TF's legacy Hash64 (tf.strings.to_hash_bucket's hash).
uint64_t LegacyHash64(const std::string& s);

// SipHash-2-4 keyed by (k0, k1) (tf.strings.to_hash_bucket_strong's hash).
uint64_t StrongKeyedHash64(uint64_t k0, uint64_t k1, const std::string& s);

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_STRING_HASH_H_
