// MemFile: fuzz input bytes behind a file path, for readers that only take a path
// (LoadCheckpoint, ReadGraphDef). The bytes live in an anonymous memory file (memfd), named by
// "/proc/self/fd/N", so no disk is touched and nothing is left behind.
//
//   MemFile file(data, size);
//   if (!file.ok()) return 0;
//   auto loaded = LoadCheckpoint(file.path());
//
// Not thread-safe; one per input. Linux only.
#ifndef SHARDFLOW_TESTS_FUZZ_MEM_FILE_H_
#define SHARDFLOW_TESTS_FUZZ_MEM_FILE_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace shardflow {

class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) : fd_(memfd_create("fuzz_input", MFD_CLOEXEC)) {
    if (fd_ < 0) return;
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
      done += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  bool ok() const { return fd_ >= 0; }
  // Valid while this object lives.
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_FUZZ_MEM_FILE_H_
