// Fuzzes the checkpoint reader (runtime/checkpoint.h): the input is a checkpoint file's bytes.
// Every input is tried twice: as it is, and with its checksums recomputed (WithChecksumsFixed),
// since random bytes almost never carry valid CRCs and the checks behind them (dtypes, shapes,
// strings, bools) would otherwise be out of the fuzzer's reach.
//
// Checked on every input: LoadCheckpoint returns a status, never crashes, and never allocates
// more than the file could hold. Checked when it loads: the format is canonical, so saving
// what was loaded gives back exactly the input bytes (a reader that accepts what the writer
// would not write, or that drops or alters a byte, fails here), and CheckCompatible accepts
// the variables against their own specs.
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/checkpoint.h"
#include "tests/fuzz/mem_file.h"

namespace shardflow {
namespace {

// Stops the fuzzer with a message libFuzzer records with the crashing input.
[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "checkpoint_fuzzer: invariant violated: %s\n", what.c_str());
  std::abort();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A path on tmpfs when there is one (SaveCheckpoint fsyncs), private to this process.
std::string ScratchPath() {
  const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/shardflow_checkpoint_fuzzer_" + std::to_string(::getpid());
}

void CheckRoundTrip(const NamedTensors& loaded, const uint8_t* data, size_t size) {
  static const std::string path = ScratchPath();
  absl::Status saved = SaveCheckpoint(path, loaded);
  if (!saved.ok()) Fail("a loaded checkpoint cannot be saved: " + saved.ToString());
  const std::string written = ReadAll(path);
  std::remove(path.c_str());
  if (written != std::string(reinterpret_cast<const char*>(data), size)) {
    Fail("saving a loaded checkpoint gives other bytes (" + std::to_string(written.size()) +
         " bytes, input " + std::to_string(size) + ")");
  }
  std::vector<VariableSpec> specs;
  for (const auto& [name, tensor] : loaded) {
    if (!tensor.IsInitialized()) Fail("variable '" + name + "' is uninitialized");
    specs.push_back({name, tensor.dtype(), tensor.shape()});
  }
  absl::Status compatible = CheckCompatible(loaded, specs);
  if (!compatible.ok()) Fail("loaded variables fail their own specs: " + compatible.ToString());
}

uint64_t Get(const std::string& s, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[pos + i]);
  return v;
}

// Writes at `pos` the CRC of bytes [begin, end).
void PutCrc(std::string* s, size_t pos, size_t begin, size_t end) {
  uint32_t crc = static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(s->data() + begin), end - begin));
  for (int i = 0; i < 4; ++i) (*s)[pos + i] = static_cast<char>(crc >> (8 * i));
}

// The input with the header, variable and file checksums recomputed, as far as its structure
// (the format in runtime/checkpoint.h) can be followed.
std::string WithChecksumsFixed(std::string s) {
  constexpr size_t kHeader = 8 + 4 + 8;
  if (s.size() < kHeader + 4) return s;
  PutCrc(&s, kHeader, 0, kHeader);
  const uint64_t count = Get(s, 12, 8);
  size_t pos = kHeader + 4;
  for (uint64_t v = 0; v < count; ++v) {
    const size_t begin = pos;
    auto skip = [&](uint64_t n) {
      if (n > s.size() - pos) return false;
      pos += n;
      return true;
    };
    if (!skip(4)) return s;
    if (!skip(Get(s, pos - 4, 4)) || !skip(8)) return s;            // name, dtype and rank
    if (!skip(Get(s, pos - 4, 4) * 8) || !skip(8)) return s;        // dims, data length
    if (!skip(Get(s, pos - 8, 8)) || s.size() - pos < 4) return s;  // data
    PutCrc(&s, pos, begin, pos);
    pos += 4;
  }
  if (s.size() - pos >= 12) PutCrc(&s, pos + 8, 0, pos);  // every byte before the trailer
  return s;
}

void LoadAndCheck(const uint8_t* data, size_t size) {
  MemFile file(data, size);
  if (!file.ok()) return;
  auto loaded = LoadCheckpoint(file.path());
  if (loaded.ok()) CheckRoundTrip(*loaded, data, size);
}

}  // namespace
}  // namespace shardflow

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardflow::LoadAndCheck(data, size);
  const std::string fixed =
      shardflow::WithChecksumsFixed(std::string(reinterpret_cast<const char*>(data), size));
  if (fixed.compare(0, std::string::npos, reinterpret_cast<const char*>(data), size) != 0) {
    shardflow::LoadAndCheck(reinterpret_cast<const uint8_t*>(fixed.data()), fixed.size());
  }
  return 0;
}
