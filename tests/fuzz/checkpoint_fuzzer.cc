// Fuzzes the checkpoint reader (runtime/checkpoint.h): the input is a checkpoint file's bytes.
//
// Checked on every input: LoadCheckpoint returns a status, never crashes, and never allocates
// more than the file could hold. Checked when it loads: the format is canonical, so saving
// what was loaded gives back exactly the input bytes (a reader that accepts what the writer
// would not write, or that drops or alters a byte, fails here), and CheckCompatible accepts
// the variables against their own specs.
#include <unistd.h>

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

}  // namespace
}  // namespace shardflow

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardflow::MemFile file(data, size);
  if (!file.ok()) return 0;
  auto loaded = shardflow::LoadCheckpoint(file.path());
  if (loaded.ok()) shardflow::CheckRoundTrip(*loaded, data, size);
  return 0;
}
