// Helpers for tests that run `shardflow server` tasks as child processes on loopback.
//
//   int port = test::FreePort();
//   test::ServerProcess task({"--cluster", path, "--task", "0"});
//   ASSERT_TRUE(task.WaitFor("listening on"));
//   task.RssKb();                  // the child's resident memory
//   task.Signal(SIGKILL);
//
// The child's stdout and stderr are read by a thread of the helper (so a chatty server never
// blocks on a full pipe) and kept for WaitFor/output().
#ifndef SHARDFLOW_TESTS_DISTRIBUTED_PROCESS_UTIL_H_
#define SHARDFLOW_TESTS_DISTRIBUTED_PROCESS_UTIL_H_

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shardflow {
namespace test {

inline const std::string& ShardflowBinary() {
  static const std::string* path =
      new std::string(std::string(SHARDFLOW_BINARY_DIR) + "/bin/shardflow");
  return *path;
}

// A loopback port nobody listens on right now.
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// `shardflow <args...>` as a child process; killed (SIGKILL) when destroyed.
class ServerProcess {
 public:
  explicit ServerProcess(const std::vector<std::string>& args) {
    int out[2];
    if (pipe(out) != 0) return;
    std::vector<std::string> argv_strings = {ShardflowBinary()};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      dup2(out[1], 2);
      close(out[0]);
      std::vector<char*> argv;
      for (auto& a : argv_strings) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(ShardflowBinary().c_str(), argv.data());
      _exit(127);
    }
    close(out[1]);
    const int fd = out[0];
    reader_ = std::thread([this, fd] {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof(buf))) > 0) {
        absl::MutexLock lock(&mu_);
        output_.append(buf, n);
      }
      close(fd);
    });
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Waits (up to `timeout`) until the output contains `text`.
  bool WaitFor(const std::string& text, absl::Duration timeout = absl::Seconds(30)) {
    absl::MutexLock lock(&mu_);
    auto found = [this, &text]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return output_.find(text) != std::string::npos;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&found), timeout);
  }
  std::string output() {
    absl::MutexLock lock(&mu_);
    return output_;
  }
  pid_t pid() const { return pid_; }
  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }
  // Exit status after waiting up to `seconds` (128 + signal when killed); -1 if still running.
  int Wait(int seconds) {
    for (int i = 0; i < seconds * 20 && pid_ > 0; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  bool Alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  // Resident memory of the child in KiB (VmRSS); -1 when it cannot be read.
  int64_t RssKb() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  std::thread reader_;
  absl::Mutex mu_;
  std::string output_ ABSL_GUARDED_BY(mu_);
};

}  // namespace test
}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_DISTRIBUTED_PROCESS_UTIL_H_
