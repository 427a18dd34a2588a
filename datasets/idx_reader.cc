#include "datasets/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

// Reads at most this much at a time, so memory grows only with what the file really holds.
constexpr size_t kChunkBytes = size_t{1} << 20;

struct IdxType {
  uint8_t code;
  const char* name;  // as in the idx description
  int file_bytes;    // bytes per element in the file
  DataType dtype;    // dtype of the Tensor we return
};

constexpr IdxType kIdxTypes[] = {
    {0x08, "unsigned byte", 1, DT_UINT8}, {0x09, "signed byte", 1, DT_INT8},
    {0x0B, "short", 2, DT_INT32},         {0x0C, "int", 4, DT_INT32},
    {0x0D, "float", 4, DT_FLOAT},         {0x0E, "double", 8, DT_DOUBLE},
};

const IdxType* FindIdxType(uint8_t code) {
  for (const IdxType& t : kIdxTypes) {
    if (t.code == code) return &t;
  }
  return nullptr;
}

std::string ValidTypeCodes() {
  std::vector<std::string> parts;
  for (const IdxType& t : kIdxTypes) parts.push_back(absl::StrFormat("0x%02X %s", t.code, t.name));
  return absl::StrJoin(parts, ", ");
}

uint64_t BigEndian(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

// A gzFile that closes itself. zlib reads plain (not gzipped) files transparently.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {}
  ~GzReader() {
    if (file_ != nullptr) gzclose(file_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  bool is_open() const { return file_ != nullptr; }

  // Reads up to `n` bytes; fewer only at the end of the data. Errors for a corrupt gzip stream.
  absl::StatusOr<size_t> Read(void* out, size_t n) {
    size_t done = 0;
    while (done < n) {
      unsigned want = static_cast<unsigned>(std::min(n - done, kChunkBytes));
      int got = gzread(file_, static_cast<char*>(out) + done, want);
      if (got < 0) return StreamError();
      done += static_cast<size_t>(got);
      if (static_cast<unsigned>(got) < want) {
        // A short read is the end of the data, or a gzip stream cut off in the middle.
        int code = Z_OK;
        gzerror(file_, &code);
        if (code != Z_OK) return StreamError();
        break;
      }
    }
    return done;
  }

 private:
  absl::Status StreamError() {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (code == Z_BUF_ERROR) {
      return absl::DataLossError(
          absl::StrCat("idx file '", path_, "' is truncated: its gzip stream ends early"));
    }
    return absl::DataLossError(absl::StrCat("idx file '", path_, "' has a corrupt gzip stream: ",
                                            code == Z_ERRNO ? std::strerror(errno) : message));
  }

  std::string path_;
  gzFile file_;
};

}  // namespace

absl::StatusOr<Tensor> ReadIdxFile(const std::string& path) {
  const std::string where = absl::StrCat("idx file '", path, "'");
  errno = 0;
  GzReader reader(path);
  if (!reader.is_open()) {
    return absl::NotFoundError(absl::StrCat("cannot open ", where, ": ",
                                            errno != 0 ? std::strerror(errno) : "out of memory"));
  }

  uint8_t magic[4];
  SF_ASSIGN_OR_RETURN(size_t got, reader.Read(magic, sizeof(magic)));
  if (got < sizeof(magic)) {
    return absl::InvalidArgumentError(absl::StrCat(where, " is not an idx file: it holds only ",
                                                   got,
                                                   " bytes, fewer than the 4-byte magic number"));
  }
  if (magic[0] != 0 || magic[1] != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is not an idx file: bad magic number 0x%02X%02X%02X%02X (an idx file starts with "
        "two zero bytes, a type code and the number of dimensions, e.g. 0x00000803)",
        where, magic[0], magic[1], magic[2], magic[3]));
  }
  const IdxType* type = FindIdxType(magic[2]);
  if (type == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s has unknown element type code 0x%02X; valid codes: %s", where, magic[2],
                        ValidTypeCodes()));
  }
  const int rank = magic[3];
  if (rank == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " declares 0 dimensions; an idx array has at least one"));
  }

  std::vector<uint8_t> dim_bytes(4 * rank);
  SF_ASSIGN_OR_RETURN(got, reader.Read(dim_bytes.data(), dim_bytes.size()));
  if (got < dim_bytes.size()) {
    return absl::DataLossError(absl::StrCat(where, " is truncated in its header: it declares ",
                                            rank, " dimensions but holds only ", got / 4));
  }
  TensorShape shape;
  uint64_t elements = 1;
  for (int i = 0; i < rank; ++i) {
    uint64_t dim = BigEndian(&dim_bytes[4 * i], 4);
    shape.AddDim(static_cast<int64_t>(dim));
    // Each dim is below 2^32, so the product overflows only past 2^63 / 2^32; check each step.
    if (__builtin_mul_overflow(elements, dim, &elements) || elements > (uint64_t{1} << 48)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " declares an impossibly large array of shape ", shape.DebugString(),
                       "...: the header is corrupt"));
    }
  }
  const uint64_t payload_bytes = elements * type->file_bytes;

  std::string payload;
  while (payload.size() < payload_bytes) {
    size_t old = payload.size();
    size_t want = static_cast<size_t>(std::min<uint64_t>(payload_bytes - old, kChunkBytes));
    payload.resize(old + want);
    SF_ASSIGN_OR_RETURN(got, reader.Read(&payload[old], want));
    payload.resize(old + got);
    if (got < want) break;
  }
  if (payload.size() < payload_bytes) {
    return absl::DataLossError(absl::StrCat(
        where, " is truncated: its header declares ", type->name, " ", shape.DebugString(), " (",
        payload_bytes, " payload bytes) but the file holds only ", payload.size()));
  }
  char extra;
  SF_ASSIGN_OR_RETURN(got, reader.Read(&extra, 1));
  if (got != 0) {
    return absl::DataLossError(absl::StrCat(
        where, " has bytes after the ", payload_bytes, "-byte payload its header declares (",
        type->name, " ", shape.DebugString(), "): wrong header or a corrupt file"));
  }

  SF_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(CpuAllocator(), type->dtype, shape));
  const uint8_t* in = reinterpret_cast<const uint8_t*>(payload.data());
  const int64_t n = static_cast<int64_t>(elements);
  switch (type->code) {
    case 0x08:
    case 0x09:
      std::memcpy(out.raw_data(), in, payload_bytes);
      break;
    case 0x0B:
      for (int64_t i = 0; i < n; ++i) {
        out.data<int32_t>()[i] = static_cast<int16_t>(BigEndian(in + 2 * i, 2));
      }
      break;
    case 0x0C:
      for (int64_t i = 0; i < n; ++i) {
        out.data<int32_t>()[i] = static_cast<int32_t>(BigEndian(in + 4 * i, 4));
      }
      break;
    case 0x0D:
      for (int64_t i = 0; i < n; ++i) {
        uint32_t bits = static_cast<uint32_t>(BigEndian(in + 4 * i, 4));
        std::memcpy(&out.data<float>()[i], &bits, 4);
      }
      break;
    case 0x0E:
      for (int64_t i = 0; i < n; ++i) {
        uint64_t bits = BigEndian(in + 8 * i, 8);
        std::memcpy(&out.data<double>()[i], &bits, 8);
      }
      break;
  }
  return out;
}

}  // namespace shardflow
