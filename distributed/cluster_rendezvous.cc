// GatherClusterSpec (distributed/cluster_resolver.h): the rendezvous of ranks that know no
// addresses (MPI, torchrun), over plain TCP with bounded lines and waits.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/platform/status.h"
#include "distributed/cluster_resolver.h"

namespace shardflow {

// ---- the rendezvous -------------------------------------------------------------------------

namespace {

constexpr size_t kMaxLine = 256;

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
};

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::Status SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the coordinator '", address, "' is not host:port"));
  }
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() > 2 && (*host)[0] == '[') *host = host->substr(1, host->size() - 2);
  // A number in 1..65535: getaddrinfo takes 99999 as 34463 and 0 as a port of its choosing,
  // where no other rank would look.
  int number = 0;
  if (!absl::SimpleAtoi(*port, &number) || number < 1 || number > 65535 ||
      port->find_first_not_of("0123456789") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("the coordinator '", address, "' does not end in a port in 1..65535"));
  }
  return absl::OkStatus();
}

// Waits for `events` on `fd` until `deadline`; false on timeout.
bool WaitFor(int fd, short events, absl::Time deadline) {
  while (true) {
    const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (ms <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // the next call reports the error
  }
}

// A line of at most kMaxLine bytes, without its '\n'.
absl::StatusOr<std::string> ReadLine(int fd, absl::Time deadline, std::string* buffer) {
  while (true) {
    const size_t nl = buffer->find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer->substr(0, nl);
      buffer->erase(0, nl + 1);
      return line;
    }
    if (buffer->size() > kMaxLine) return absl::InvalidArgumentError("a line is too long");
    if (!WaitFor(fd, POLLIN, deadline)) return absl::DeadlineExceededError("timed out");
    char chunk[512];
    const ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n == 0) return absl::UnavailableError("the connection closed");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Errno("recv");
    }
    buffer->append(chunk, n);
  }
}

absl::Status WriteAll(int fd, const std::string& data, absl::Time deadline) {
  size_t done = 0;
  while (done < data.size()) {
    if (!WaitFor(fd, POLLOUT, deadline)) return absl::DeadlineExceededError("timed out");
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Errno("send");
    }
    done += n;
  }
  return absl::OkStatus();
}

std::string PeerHost(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, text, sizeof(text));
    return text;
  }
  inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, text, sizeof(text));
  return absl::StrCat("[", text, "]");
}

absl::StatusOr<ClusterSpec> Coordinate(const ClusterResolution& r, absl::Time deadline) {
  std::string host, port;
  SF_RETURN_IF_ERROR(SplitHostPort(r.coordinator, &host, &port));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(host == "0.0.0.0" ? nullptr : host.c_str(), port.c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve the coordinator ", r.coordinator));
  }
  Fd listener(socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // Bind every interface of this host on the coordinator's port: the others reach it by name.
  sockaddr_storage any{};
  socklen_t any_len = 0;
  if (found->ai_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&any);
    a->sin6_family = AF_INET6;
    a->sin6_port = reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_port;
    a->sin6_addr = in6addr_any;
    any_len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&any);
    a->sin_family = AF_INET;
    a->sin_port = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_port;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    any_len = sizeof(sockaddr_in);
  }
  freeaddrinfo(found);
  if (listener.fd < 0 || bind(listener.fd, reinterpret_cast<sockaddr*>(&any), any_len) != 0 ||
      listen(listener.fd, 128) != 0) {
    return Errno(absl::StrCat("rank 0 cannot listen on the coordinator port ", port, " (",
                              r.coordinator, "); choose a free one with --coordinator"));
  }
  std::vector<std::string> addresses(r.num_tasks);
  addresses[0] = absl::StrCat(host, ":", r.port);
  std::vector<Fd> peers(r.num_tasks);
  int arrived = 1;
  while (arrived < r.num_tasks) {
    if (!WaitFor(listener.fd, POLLIN, deadline)) {
      std::vector<std::string> missing;
      for (int i = 1; i < r.num_tasks && missing.size() < 20; ++i) {
        if (peers[i].fd < 0) missing.push_back(absl::StrCat(i));
      }
      return absl::DeadlineExceededError(absl::StrCat(
          "the rendezvous at ", r.coordinator, " (", r.source, "): rank(s) ",
          absl::StrJoin(missing, ", "), missing.size() == 20 ? ", ..." : "", " of ", r.num_tasks,
          " never arrived; check that every rank was started, with the same --coordinator"));
    }
    sockaddr_storage from{};
    socklen_t from_len = sizeof(from);
    Fd peer(accept4(listener.fd, reinterpret_cast<sockaddr*>(&from), &from_len, SOCK_CLOEXEC));
    if (peer.fd < 0) continue;
    std::string buffer;
    // A peer gets a few seconds to say who it is; a silent or malformed one is dropped.
    auto line = ReadLine(peer.fd, std::min(deadline, absl::Now() + absl::Seconds(5)), &buffer);
    if (!line.ok()) continue;
    std::vector<std::string> words = absl::StrSplit(*line, ' ');
    int rank = -1, rank_port = 0;
    if (words.size() != 3 || words[0] != "shardflow-rendezvous" ||
        !absl::SimpleAtoi(words[1].substr(0, words[1].find(':')), &rank) ||
        words[1].find(':') == std::string::npos ||
        !absl::SimpleAtoi(words[1].substr(words[1].find(':') + 1), &rank_port) || rank < 1 ||
        rank >= r.num_tasks || rank_port < 1 || rank_port > 65535 || words[2] != r.job) {
      WriteAll(peer.fd, "error malformed or out-of-range hello\n", deadline).IgnoreError();
      continue;
    }
    if (peers[rank].fd >= 0) {
      WriteAll(peer.fd, absl::StrCat("error rank ", rank, " arrived twice\n"), deadline)
          .IgnoreError();
      continue;
    }
    addresses[rank] = absl::StrCat(PeerHost(from), ":", rank_port);
    peers[rank] = std::move(peer);
    ++arrived;
  }
  std::string answer;
  for (const std::string& a : addresses) absl::StrAppend(&answer, a, "\n");
  answer += "end\n";
  for (int i = 1; i < r.num_tasks; ++i) {
    // A rank that left meanwhile learns nothing; it will fail on its own.
    WriteAll(peers[i].fd, answer, deadline).IgnoreError();
  }
  return ClusterSpec::FromMap({{r.job, addresses}}, "the rendezvous");
}

absl::StatusOr<ClusterSpec> Join(const ClusterResolution& r, absl::Time deadline) {
  std::string host, port;
  SF_RETURN_IF_ERROR(SplitHostPort(r.coordinator, &host, &port));
  absl::Status last = absl::UnavailableError("not tried");
  while (absl::Now() < deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
      last = absl::UnavailableError(absl::StrCat("cannot resolve ", host));
      absl::SleepFor(absl::Milliseconds(200));
      continue;
    }
    Fd fd(socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const int rc = connect(fd.fd, found->ai_addr, found->ai_addrlen);
    freeaddrinfo(found);
    if (rc != 0) {
      last = Errno("connect");
      absl::SleepFor(absl::Milliseconds(200));  // rank 0 is not listening yet
      continue;
    }
    SF_RETURN_IF_ERROR(WriteAll(
        fd.fd, absl::StrCat("shardflow-rendezvous ", r.task, ":", r.port, " ", r.job, "\n"),
        deadline));
    std::string buffer;
    std::vector<std::string> addresses;
    while (true) {
      auto line = ReadLine(fd.fd, deadline, &buffer);
      if (!line.ok()) {
        return absl::Status(line.status().code(),
                            absl::StrCat("waiting for the rendezvous at ", r.coordinator,
                                         " (rank 0) to gather all ", r.num_tasks,
                                         " ranks: ", line.status().message()));
      }
      if (line->rfind("error ", 0) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the rendezvous at ", r.coordinator, " refused rank ", r.task, ": ", line->substr(6)));
      }
      if (*line == "end") break;
      if (addresses.size() >= static_cast<size_t>(r.num_tasks)) {
        return absl::InvalidArgumentError("the rendezvous answered more addresses than ranks");
      }
      addresses.push_back(*line);
    }
    if (addresses.size() != static_cast<size_t>(r.num_tasks)) {
      return absl::InvalidArgumentError(absl::StrCat("the rendezvous answered ", addresses.size(),
                                                     " addresses for ", r.num_tasks, " ranks"));
    }
    return ClusterSpec::FromMap({{r.job, addresses}}, "the rendezvous");
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "rank ", r.task, " could not reach the rendezvous at ", r.coordinator, " (rank 0) in time (",
      last.message(), "); check that rank 0 runs and that --coordinator names its host"));
}

}  // namespace

absl::StatusOr<ClusterSpec> GatherClusterSpec(const ClusterResolution& r, absl::Duration timeout) {
  if (r.num_tasks < 1 || r.task < 0 || r.task >= r.num_tasks) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous: rank ", r.task, " of ", r.num_tasks, " tasks"));
  }
  const absl::Time deadline = absl::Now() + timeout;
  if (r.num_tasks == 1) {
    return ClusterSpec::FromMap({{r.job, {absl::StrCat("127.0.0.1:", r.port)}}}, "rendezvous");
  }
  return r.task == 0 ? Coordinate(r, deadline) : Join(r, deadline);
}

}  // namespace shardflow
