#include "runtime/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoint element data is copied in host byte order, which must be little-endian");

constexpr char kMagic[] = "SFCKPT01";
constexpr char kTrailerMagic[] = "SFCKTAIL";
constexpr size_t kMagicBytes = 8;
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = kMagicBytes + 4 + 8 + 4;
constexpr size_t kTrailerBytes = kMagicBytes + 4;
constexpr size_t kWriteBufferBytes = size_t{1} << 20;

uint32_t Crc(uint32_t crc, const void* data, size_t n) {
  return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), n));
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t GetLittleEndian(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

bool IsKnownDataType(uint32_t code) {
  for (DataType dt : AllDataTypes()) {
    if (static_cast<uint32_t>(dt) == code) return true;
  }
  return false;
}

std::string KnownDataTypes() {
  std::vector<std::string> names;
  for (DataType dt : AllDataTypes()) {
    names.push_back(absl::StrCat(DataTypeString(dt), " (", static_cast<int>(dt), ")"));
  }
  return absl::StrJoin(names, ", ");
}

// ---- writing -----------------------------------------------------------------------------------

// Buffered writes to a file descriptor it owns, with a CRC of everything written.
class CheckpointWriter {
 public:
  CheckpointWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~CheckpointWriter() {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(const void* data, size_t n, uint32_t* entry_crc = nullptr) {
    file_crc_ = Crc(file_crc_, data, n);
    if (entry_crc != nullptr) *entry_crc = Crc(*entry_crc, data, n);
    if (buffer_.size() + n <= kWriteBufferBytes) {
      buffer_.append(static_cast<const char*>(data), n);
      return absl::OkStatus();
    }
    SF_RETURN_IF_ERROR(Flush());
    return WriteFully(data, n);
  }
  absl::Status Append(const std::string& s, uint32_t* entry_crc = nullptr) {
    return Append(s.data(), s.size(), entry_crc);
  }
  uint32_t file_crc() const { return file_crc_; }

  // Flushes, fsyncs and closes the file.
  absl::Status Finish() {
    SF_RETURN_IF_ERROR(Flush());
    if (::fsync(fd_) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("fsync '", path_, "'"));
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("close '", path_, "'"));
    return absl::OkStatus();
  }

 private:
  absl::Status Flush() {
    SF_RETURN_IF_ERROR(WriteFully(buffer_.data(), buffer_.size()));
    buffer_.clear();
    return absl::OkStatus();
  }
  absl::Status WriteFully(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t done = ::write(fd_, p, n);
      if (done < 0 && errno == EINTR) continue;
      if (done < 0) return absl::ErrnoToStatus(errno, absl::StrCat("write to '", path_, "'"));
      p += done;
      n -= static_cast<size_t>(done);
    }
    return absl::OkStatus();
  }

  int fd_;
  const std::string path_;
  std::string buffer_;
  uint32_t file_crc_ = 0;
};

absl::Status WriteVariable(CheckpointWriter* out, const std::string& name, const Tensor& t) {
  uint64_t data_bytes = t.TotalBytes();
  if (t.dtype() == DT_STRING) {
    data_bytes = 0;
    for (int64_t i = 0; i < t.NumElements(); ++i) data_bytes += 8 + t.data<std::string>()[i].size();
  }
  std::string head;
  PutU32(&head, static_cast<uint32_t>(name.size()));
  head += name;
  PutU32(&head, static_cast<uint32_t>(t.dtype()));
  PutU32(&head, static_cast<uint32_t>(t.dims()));
  for (int i = 0; i < t.dims(); ++i) PutU64(&head, static_cast<uint64_t>(t.dim_size(i)));
  PutU64(&head, data_bytes);
  uint32_t crc = 0;
  SF_RETURN_IF_ERROR(out->Append(head, &crc));
  if (t.dtype() == DT_STRING) {
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      const std::string& s = t.data<std::string>()[i];
      std::string length;
      PutU64(&length, s.size());
      SF_RETURN_IF_ERROR(out->Append(length, &crc));
      SF_RETURN_IF_ERROR(out->Append(s, &crc));
    }
  } else {
    SF_RETURN_IF_ERROR(out->Append(t.raw_data(), t.TotalBytes(), &crc));
  }
  std::string crc_bytes;
  PutU32(&crc_bytes, crc);
  return out->Append(crc_bytes);
}

absl::Status WriteCheckpointFile(const std::string& tmp, const NamedTensors& tensors) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create checkpoint file '", tmp, "'"));
  }
  CheckpointWriter out(fd, tmp);
  std::string header(kMagic, kMagicBytes);
  PutU32(&header, kFormatVersion);
  PutU64(&header, tensors.size());
  PutU32(&header, Crc(0, header.data(), header.size()));
  SF_RETURN_IF_ERROR(out.Append(header));
  for (const auto& [name, tensor] : tensors) {
    SF_RETURN_IF_ERROR(WriteVariable(&out, name, tensor));
  }
  std::string trailer(kTrailerMagic, kMagicBytes);
  PutU32(&trailer, out.file_crc());
  SF_RETURN_IF_ERROR(out.Append(trailer));
  return out.Finish();
}

// Makes a rename in the directory of `path` durable. Some file systems cannot fsync a
// directory (EINVAL); that is not an error.
absl::Status SyncParentDirectory(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open directory '", dir, "'"));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) {
    return absl::ErrnoToStatus(err, absl::StrCat("fsync directory '", dir, "'"));
  }
  return absl::OkStatus();
}

// ---- reading -----------------------------------------------------------------------------------

// Sequential reads of a checkpoint file of known size, with running CRCs. Every read names what
// it reads, so that running out of bytes gives the precise truncation error.
class CheckpointReader {
 public:
  CheckpointReader(std::string path, std::FILE* file, uint64_t size)
      : path_(std::move(path)), file_(file), size_(size) {}
  ~CheckpointReader() { std::fclose(file_); }

  uint64_t remaining() const { return size_ - offset_; }
  uint32_t file_crc() const { return file_crc_; }
  uint32_t entry_crc() const { return entry_crc_; }
  void StartEntry() { entry_crc_ = 0; }

  // Ok when `n` more bytes exist; otherwise the error "checkpoint '...' is truncated in <what>".
  absl::Status Need(uint64_t n, absl::string_view what) const {
    if (n <= remaining()) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat("checkpoint '", path_, "' is truncated in ", what,
                                            " (needs ", n, " bytes at offset ", offset_, "; only ",
                                            remaining(), " remain)"));
  }
  absl::Status Read(void* out, uint64_t n, absl::string_view what) {
    SF_RETURN_IF_ERROR(Need(n, what));
    if (n > 0 && std::fread(out, 1, n, file_) != n) {
      return absl::DataLossError(absl::StrCat("error reading checkpoint '", path_, "' at offset ",
                                              offset_, ": ", std::strerror(errno)));
    }
    offset_ += n;
    file_crc_ = Crc(file_crc_, out, n);
    entry_crc_ = Crc(entry_crc_, out, n);
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> ReadInt(int bytes, absl::string_view what) {
    unsigned char buf[8];
    SF_RETURN_IF_ERROR(Read(buf, bytes, what));
    return GetLittleEndian(buf, bytes);
  }

 private:
  const std::string path_;
  std::FILE* const file_;
  const uint64_t size_;
  uint64_t offset_ = 0;
  uint32_t file_crc_ = 0;
  uint32_t entry_crc_ = 0;
};

// Decodes a CRC-checked string payload: per element, u64 length and bytes.
absl::Status DecodeStrings(const std::string& data, Tensor* t, const std::string& where) {
  size_t pos = 0;
  for (int64_t i = 0; i < t->NumElements(); ++i) {
    if (data.size() - pos < 8) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": its string data ends before the length of element ", i));
    }
    uint64_t length = GetLittleEndian(reinterpret_cast<const unsigned char*>(data.data() + pos), 8);
    pos += 8;
    if (length > data.size() - pos) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": string element ", i, " has length ",
                                                     length, " but only ", data.size() - pos,
                                                     " bytes remain"));
    }
    t->data<std::string>()[i].assign(data, pos, length);
    pos += length;
  }
  if (pos != data.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", data.size() - pos, " bytes follow the last string element"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<std::string, Tensor>> ReadVariable(CheckpointReader& in,
                                                            const std::string& path, int64_t index,
                                                            const std::string& previous) {
  in.StartEntry();
  const std::string ordinal = index == 0 ? std::string("the first variable")
                                         : absl::StrCat("variable #", index + 1, " (after '",
                                                        absl::CEscape(previous), "')");
  SF_ASSIGN_OR_RETURN(uint64_t name_length, in.ReadInt(4, absl::StrCat("the header of ", ordinal)));
  const std::string name_what = absl::StrCat("the name of ", ordinal);
  SF_RETURN_IF_ERROR(in.Need(name_length, name_what));
  std::string name(name_length, '\0');
  SF_RETURN_IF_ERROR(in.Read(name.data(), name_length, name_what));

  const std::string var = absl::StrCat("variable '", absl::CEscape(name), "'");
  const std::string header_what = absl::StrCat("the header of ", var);
  SF_ASSIGN_OR_RETURN(uint64_t dtype_code, in.ReadInt(4, header_what));
  SF_ASSIGN_OR_RETURN(uint64_t rank, in.ReadInt(4, header_what));
  SF_RETURN_IF_ERROR(in.Need(rank * 8, header_what));
  std::vector<int64_t> dims(rank);
  for (uint64_t i = 0; i < rank; ++i) {
    SF_ASSIGN_OR_RETURN(uint64_t dim, in.ReadInt(8, header_what));
    dims[i] = static_cast<int64_t>(dim);
  }
  SF_ASSIGN_OR_RETURN(uint64_t data_bytes, in.ReadInt(8, header_what));
  const std::string data_what = absl::StrCat("the data of ", var);
  SF_RETURN_IF_ERROR(in.Need(data_bytes, data_what));

  // Read numeric data straight into the tensor when the header is consistent; anything else into
  // a scratch buffer (bounded by the file size), so that the checksum is checked before the
  // header's content is judged.
  const DataType dtype = static_cast<DataType>(dtype_code);
  const TensorShape shape{absl::Span<const int64_t>(dims)};
  bool shape_ok = true;
  uint64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements)) {
      shape_ok = false;
    }
  }
  const bool known = IsKnownDataType(dtype_code);
  uint64_t expected_bytes = 0;
  const bool direct = known && shape_ok && dtype != DT_STRING &&
                      !__builtin_mul_overflow(elements, DataTypeSize(dtype), &expected_bytes) &&
                      expected_bytes == data_bytes;
  Tensor tensor;
  std::string scratch;
  if (direct) {
    SF_ASSIGN_OR_RETURN(tensor, Tensor::Create(CpuAllocator(), dtype, shape));
    SF_RETURN_IF_ERROR(in.Read(tensor.raw_data(), data_bytes, data_what));
  } else {
    scratch.resize(data_bytes);
    SF_RETURN_IF_ERROR(in.Read(scratch.data(), data_bytes, data_what));
  }
  const uint32_t computed = in.entry_crc();
  SF_ASSIGN_OR_RETURN(uint64_t stored, in.ReadInt(4, absl::StrCat("the checksum of ", var)));
  if (stored != computed) {
    return absl::DataLossError(absl::StrFormat(
        "checkpoint '%s' is corrupt: %s fails its checksum (stored 0x%08x, computed 0x%08x)", path,
        var, stored, computed));
  }

  const std::string where = absl::StrCat(var, " in checkpoint '", path, "'");
  if (name.empty()) {  // SaveCheckpoint never writes one
    return absl::InvalidArgumentError(
        absl::StrCat(ordinal, " in checkpoint '", path, "' has an empty name"));
  }
  if (!known) {
    return absl::InvalidArgumentError(absl::StrCat(where, " has unknown dtype code ", dtype_code,
                                                   "; this build knows ", KnownDataTypes()));
  }
  if (!shape_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has invalid shape ", shape.DebugString()));
  }
  if (dtype == DT_STRING) {
    if (elements > data_bytes / 8) {  // each element needs at least its 8-byte length
      return absl::InvalidArgumentError(absl::StrCat(
          where, " has ", elements, " string elements but only ", data_bytes, " data bytes"));
    }
    SF_ASSIGN_OR_RETURN(tensor, Tensor::Create(CpuAllocator(), dtype, shape));
    SF_RETURN_IF_ERROR(DecodeStrings(scratch, &tensor, where));
  } else if (!direct) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " holds ", data_bytes, " data bytes but ", DataTypeString(dtype), " ",
                     shape.DebugString(), " needs ", elements, " x ", DataTypeSize(dtype)));
  }
  if (dtype == DT_BOOL) {
    const unsigned char* b = static_cast<const unsigned char*>(tensor.raw_data());
    for (int64_t i = 0; i < tensor.NumElements(); ++i) {
      if (b[i] > 1) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": bool element ", i,
                                                       " has byte value ", static_cast<int>(b[i]),
                                                       ", not 0 or 1"));
      }
    }
  }
  return std::make_pair(std::move(name), std::move(tensor));
}

}  // namespace

absl::Status SaveCheckpoint(const std::string& path, const NamedTensors& tensors) {
  absl::flat_hash_set<std::string> seen;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, tensor] = tensors[i];
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot save checkpoint '", path, "': variable #", i + 1, " has no name"));
    }
    if (name.size() > UINT32_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot save checkpoint '", path, "': a variable name is too long"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot save checkpoint '", path, "': variable '", name, "' appears twice"));
    }
    if (!tensor.IsInitialized()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot save checkpoint '", path, "': variable '", name, "' is an uninitialized tensor"));
    }
  }
  const std::string tmp = absl::StrCat(path, ".tmp-", ::getpid());
  absl::Status status = WriteCheckpointFile(tmp, tensors);
  if (status.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  return SyncParentDirectory(path);
}

absl::StatusOr<NamedTensors> LoadCheckpoint(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("checkpoint '", path, "' does not exist"));
    }
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open checkpoint '", path, "'"));
  }
  struct stat st;
  if (::fstat(::fileno(file), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(file);
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint '", path, "' is not a regular file"));
  }
  CheckpointReader in(path, file, static_cast<uint64_t>(st.st_size));
  if (st.st_size == 0) {
    return absl::DataLossError(absl::StrCat("checkpoint '", path, "' is truncated: it is empty"));
  }

  // The magic first, as far as the file goes: wrong bytes mean "not a checkpoint".
  char magic[kMagicBytes];
  const uint64_t magic_bytes = std::min<uint64_t>(kMagicBytes, in.remaining());
  SF_RETURN_IF_ERROR(in.Read(magic, magic_bytes, "the magic"));
  if (std::memcmp(magic, kMagic, magic_bytes) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' is not a shardflow checkpoint: it does not start with \"", kMagic, "\""));
  }
  SF_RETURN_IF_ERROR(in.Need(kHeaderBytes - kMagicBytes, "the header"));
  SF_ASSIGN_OR_RETURN(uint64_t version, in.ReadInt(4, "the header"));
  SF_ASSIGN_OR_RETURN(uint64_t count, in.ReadInt(8, "the header"));
  const uint32_t header_crc = in.file_crc();
  SF_ASSIGN_OR_RETURN(uint64_t stored_header_crc, in.ReadInt(4, "the header"));
  if (stored_header_crc != header_crc) {
    return absl::DataLossError(
        absl::StrCat("checkpoint '", path, "' is corrupt: its header fails its checksum"));
  }
  if (version != kFormatVersion) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint '", path, "' has format version ",
                                                   version, "; this build reads version ",
                                                   kFormatVersion));
  }

  NamedTensors out;
  absl::flat_hash_set<std::string> names;
  for (uint64_t i = 0; i < count; ++i) {
    SF_ASSIGN_OR_RETURN(auto variable,
                        ReadVariable(in, path, i, out.empty() ? "" : out.back().first));
    if (!names.insert(variable.first).second) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint '", path, "' holds variable '",
                                                     absl::CEscape(variable.first), "' twice"));
    }
    out.push_back(std::move(variable));
  }

  const std::string trailer_what = out.empty()
                                       ? std::string("the trailer")
                                       : absl::StrCat("the trailer (after the last variable '",
                                                      absl::CEscape(out.back().first), "')");
  const uint32_t file_crc = in.file_crc();
  char trailer_magic[kMagicBytes];
  SF_RETURN_IF_ERROR(in.Need(kTrailerBytes, trailer_what));
  SF_RETURN_IF_ERROR(in.Read(trailer_magic, kMagicBytes, trailer_what));
  if (std::memcmp(trailer_magic, kTrailerMagic, kMagicBytes) != 0) {
    return absl::DataLossError(
        absl::StrCat("checkpoint '", path, "' is corrupt: ", trailer_what, " is missing"));
  }
  SF_ASSIGN_OR_RETURN(uint64_t stored_file_crc, in.ReadInt(4, trailer_what));
  if (stored_file_crc != file_crc) {
    return absl::DataLossError(
        absl::StrCat("checkpoint '", path, "' is corrupt: the whole-file checksum does not match"));
  }
  if (in.remaining() != 0) {
    return absl::DataLossError(absl::StrCat("checkpoint '", path, "' has ", in.remaining(),
                                            " bytes of trailing garbage after its trailer"));
  }
  return out;
}

absl::Status CheckCompatible(const NamedTensors& loaded,
                             const std::vector<VariableSpec>& expected) {
  absl::flat_hash_map<std::string, const Tensor*> by_name;
  for (const auto& [name, tensor] : loaded) by_name[name] = &tensor;
  absl::flat_hash_set<std::string> wanted;
  std::vector<std::string> problems;
  for (const VariableSpec& spec : expected) {
    wanted.insert(spec.name);
    auto it = by_name.find(spec.name);
    if (it == by_name.end()) {
      problems.push_back(absl::StrCat("missing variable '", spec.name, "' (",
                                      DataTypeString(spec.dtype), " ", spec.shape.DebugString(),
                                      " in the model)"));
      continue;
    }
    const Tensor& t = *it->second;
    if (t.dtype() != spec.dtype) {
      problems.push_back(absl::StrCat("variable '", spec.name, "' has dtype ",
                                      DataTypeString(t.dtype()), " in the checkpoint but ",
                                      DataTypeString(spec.dtype), " in the model"));
    }
    if (!spec.shape.IsCompatibleWith(t.shape())) {
      problems.push_back(absl::StrCat("variable '", spec.name, "' has shape ",
                                      t.shape().DebugString(), " in the checkpoint but ",
                                      spec.shape.DebugString(), " in the model"));
    }
  }
  for (const auto& [name, tensor] : loaded) {
    if (!wanted.contains(name)) {
      problems.push_back(
          absl::StrCat("unexpected variable '", name, "' (", DataTypeString(tensor.dtype()), " ",
                       tensor.shape().DebugString(), " in the checkpoint, not in the model)"));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the checkpoint does not match the model (", problems.size(),
      problems.size() == 1 ? " problem): " : " problems): ", absl::StrJoin(problems, "; ")));
}

}  // namespace shardflow
