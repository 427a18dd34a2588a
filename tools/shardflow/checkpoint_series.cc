#include "tools/shardflow/checkpoint_series.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace shardflow {
namespace {

constexpr absl::string_view kStepPrefix = "model.ckpt-";

// The step of a file name "model.ckpt-<digits>", or -1 for any other name.
int64_t StepOf(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kStepPrefix) || name.empty() || name.size() > 18) return -1;
  if (!std::all_of(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return -1;
  }
  int64_t step = -1;
  return absl::SimpleAtoi(name, &step) ? step : -1;
}

// True for "<model.ckpt-N or checkpoint>.tmp-<pid>" left by a process that no longer runs.
bool IsStaleTemporary(absl::string_view name) {
  size_t at = name.rfind(".tmp-");
  if (at == absl::string_view::npos) return false;
  absl::string_view base = name.substr(0, at);
  if (StepOf(base) < 0 && base != CheckpointSeries::kIndexName) return false;
  int pid = 0;
  if (!absl::SimpleAtoi(name.substr(at + 5), &pid) || pid <= 0 || pid == ::getpid()) return false;
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  const std::string tmp = absl::StrCat(path, ".tmp-", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot create '", tmp, "'"));
  absl::Status status;
  for (size_t done = 0; status.ok() && done < contents.size();) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) status = absl::ErrnoToStatus(errno, absl::StrCat("cannot write '", tmp, "'"));
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (status.ok() && ::fsync(fd) != 0) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("fsync '", tmp, "'"));
  }
  if (::close(fd) != 0 && status.ok()) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot close '", tmp, "'"));
  }
  if (status.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  // Makes the rename durable; file systems that cannot fsync a directory say EINVAL.
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open directory '", dir, "'"));
  int rc = ::fsync(dir_fd);
  int err = errno;
  ::close(dir_fd);
  if (rc != 0 && err != EINVAL) {
    return absl::ErrnoToStatus(err, absl::StrCat("fsync directory '", dir, "'"));
  }
  return absl::OkStatus();
}

std::string FileName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

CheckpointSeries::CheckpointSeries(std::string dir, int64_t keep)
    : dir_(std::move(dir)), keep_(std::max<int64_t>(keep, 1)) {}

std::string CheckpointSeries::PathFor(int64_t step) const {
  return absl::StrCat(dir_, "/", kStepPrefix, step);
}

absl::Status CheckpointSeries::ReadIndex(const std::string& dir, std::vector<std::string>* names) {
  const std::string path = absl::StrCat(dir, "/", kIndexName);
  std::ifstream in(path);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return absl::NotFoundError(absl::StrCat("no index '", path, "'"));
    }
    return absl::PermissionDeniedError(absl::StrCat("cannot read index '", path, "'"));
  }
  names->clear();
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    if (StepOf(line) < 0) {
      return absl::DataLossError(absl::StrCat("index '", path, "' line ", number,
                                              " is not a checkpoint name (model.ckpt-<step>)"));
    }
    names->push_back(line);
  }
  return absl::OkStatus();
}

std::vector<std::string> CheckpointSeries::Listed(std::string* note) const {
  std::vector<std::string> names;
  absl::Status index = ReadIndex(dir_, &names);
  if (index.ok()) return names;
  names.clear();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (StepOf(name) >= 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end(),
            [](const std::string& a, const std::string& b) { return StepOf(a) < StepOf(b); });
  if (!absl::IsNotFound(index) && note != nullptr) {
    *note = absl::StrCat(index.message(), "; looking for model.ckpt-<step> files instead (found ",
                         names.size(), ")");
  }
  return names;
}

std::vector<std::string> CheckpointSeries::ResumeCandidates(std::string* note) const {
  if (note != nullptr) note->clear();
  std::vector<std::string> paths;
  std::vector<std::string> names = Listed(note);
  for (auto it = names.rbegin(); it != names.rend(); ++it) paths.push_back(dir_ + "/" + *it);
  std::string legacy = absl::StrCat(dir_, "/", kLegacyName);
  std::error_code ec;
  if (std::filesystem::exists(legacy, ec)) paths.push_back(legacy);
  return paths;
}

void CheckpointSeries::ContinueAfter(const std::string& path) {
  latest_ = path;
  kept_ = Listed(nullptr);
  auto it = std::find(kept_.begin(), kept_.end(), FileName(path));
  kept_.erase(it == kept_.end() ? kept_.begin() : it + 1, kept_.end());
}

absl::Status CheckpointSeries::Commit(int64_t step) {
  const std::string name = absl::StrCat(kStepPrefix, step);
  std::vector<std::string> kept = kept_;
  kept.erase(std::remove(kept.begin(), kept.end(), name), kept.end());
  kept.push_back(name);
  if (static_cast<int64_t>(kept.size()) > keep_) kept.erase(kept.begin(), kept.end() - keep_);
  std::string contents =
      "# shardflow train: the kept checkpoints, oldest first; the last line is the latest\n";
  for (const std::string& n : kept) absl::StrAppend(&contents, n, "\n");
  absl::Status written = WriteFileAtomically(absl::StrCat(dir_, "/", kIndexName), contents);
  if (!written.ok()) {
    return absl::Status(written.code(), absl::StrCat("checkpoint '", PathFor(step),
                                                     "' was written but the index "
                                                     "could not be updated: ",
                                                     written.message()));
  }
  kept_ = std::move(kept);
  latest_ = PathFor(step);
  DeleteUnlisted();
  return absl::OkStatus();
}

void CheckpointSeries::DeleteUnlisted() const {
  std::error_code ec;
  std::vector<std::filesystem::path> doomed;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename().string();
    bool unlisted = StepOf(name) >= 0 && std::find(kept_.begin(), kept_.end(), name) == kept_.end();
    if (unlisted || IsStaleTemporary(name)) doomed.push_back(entry.path());
  }
  for (const auto& path : doomed) std::filesystem::remove(path, ec);
}

}  // namespace shardflow
