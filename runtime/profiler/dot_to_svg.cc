// DotToSvg (declared in graph_dot.h): runs Graphviz's `dot -Tsvg` through posix_spawnp with
// temp files for input, output and stderr, so no shell and no quoting are involved.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/profiler/graph_dot.h"

extern char** environ;

namespace shardflow {
namespace {

bool DotOnPath() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/dot");
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

// A temp file that is removed when this goes out of scope.
class TempFile {
 public:
  explicit TempFile(const char* suffix_tag) {
    const char* dir = std::getenv("TMPDIR");
    path_ =
        absl::StrCat(dir != nullptr && *dir ? dir : "/tmp", "/shardflow_", suffix_tag, "_XXXXXX");
    int fd = mkstemp(path_.data());
    if (fd < 0) {
      path_.clear();
    } else {
      close(fd);
    }
  }
  ~TempFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

absl::StatusOr<std::string> DotToSvg(const std::string& dot) {
  if (!DotOnPath()) {
    return absl::FailedPreconditionError(
        "Graphviz 'dot' is not installed: apt-get install graphviz (or write the DOT text to a "
        "file and render it elsewhere)");
  }
  TempFile in("dot"), out("svg"), err("err");
  if (!in.ok() || !out.ok() || !err.ok()) {
    return absl::InternalError("DotToSvg: cannot create temp files (check $TMPDIR)");
  }
  {
    std::ofstream f(in.path(), std::ios::binary);
    f << dot;
    if (!f.flush()) return absl::InternalError(absl::StrCat("DotToSvg: cannot write ", in.path()));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.path().c_str(), O_WRONLY | O_TRUNC,
                                   0);
  std::string out_flag = "-o" + out.path();
  std::vector<char*> argv = {const_cast<char*>("dot"), const_cast<char*>("-Tsvg"), out_flag.data(),
                             const_cast<char*>(in.path().c_str()), nullptr};
  pid_t pid;
  int rc = posix_spawnp(&pid, "dot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("DotToSvg: cannot start 'dot': error ", rc));
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return absl::InternalError("DotToSvg: waitpid failed");
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return absl::InternalError(absl::StrCat("Graphviz 'dot -Tsvg' failed (exit status ",
                                            WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1,
                                            "): ", ReadAll(err.path())));
  }
  std::string svg = ReadAll(out.path());
  if (svg.empty()) return absl::InternalError("Graphviz 'dot -Tsvg' wrote no output");
  return svg;
}

}  // namespace shardflow
