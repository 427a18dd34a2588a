// Test-side encoders written from the format descriptions, independent of the code under test:
// CRC-32 (IEEE 802.3, the checksum of zlib and gzip) and gzip with uncompressed deflate blocks.
#ifndef SHARDFLOW_TESTS_UTIL_FILE_FORMATS_H_
#define SHARDFLOW_TESTS_UTIL_FILE_FORMATS_H_

#include <algorithm>
#include <cstdint>
#include <string>

namespace shardflow {
namespace test {

// Bitwise CRC-32 (reflected polynomial 0xEDB88320), continuing from `crc` (0 to start).
inline uint32_t Crc32(const std::string& data, uint32_t crc = 0) {
  crc = ~crc;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline void AppendLittleEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// A valid gzip member (RFC 1952) holding `data` in stored (uncompressed) deflate blocks.
inline std::string GzipStored(const std::string& data) {
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  size_t pos = 0;
  do {
    size_t n = std::min<size_t>(data.size() - pos, 65535);
    bool last = pos + n == data.size();
    out.push_back(last ? 1 : 0);  // BFINAL, BTYPE=00 (stored)
    AppendLittleEndian(&out, n, 2);
    AppendLittleEndian(&out, ~n & 0xFFFF, 2);
    out.append(data, pos, n);
    pos += n;
  } while (pos < data.size());
  AppendLittleEndian(&out, Crc32(data), 4);
  AppendLittleEndian(&out, data.size() & 0xFFFFFFFFu, 4);
  return out;
}

}  // namespace test
}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_UTIL_FILE_FORMATS_H_
