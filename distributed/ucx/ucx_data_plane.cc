#include "distributed/ucx/ucx_data_plane.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/platform/status.h"
#include "core/platform/timer.h"
#include "core/protos/worker.pb.h"
#include "distributed/ucx/ucx_engine.h"
#include "glog/logging.h"

namespace shardflow {
namespace {

// FNV-1a over the token, then the bytes: a check against corrupted or truncated addresses, and,
// with a token, against addresses not made by a task of the cluster (not a cryptographic MAC).
uint64_t AddressTag(const std::string& token, const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (const std::string* part : {&token, &bytes}) {
    for (unsigned char c : *part) {
      h ^= c;
      h *= 1099511628211ull;
    }
  }
  return h;
}

constexpr char kAddressMagic[] = "SFUCX1";  // envelope version 1
constexpr size_t kMagicBytes = sizeof(kAddressMagic) - 1;
constexpr size_t kEnvelopeBytes = kMagicBytes + 4 + 4 + 8;  // magic, UCX major, minor, tag
constexpr size_t kMaxAddressBytes = 64 << 10;

// Whether the host of "host:port" is this machine: a loopback address, one of its interfaces'
// addresses, or its host name. Names are not resolved (no DNS lookup on this path).
bool IsThisHost(const std::string& address) {
  std::string host = address;
  const size_t colon = address.rfind(':');
  if (colon != std::string::npos) host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1") return true;
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) == 0 && host == name) return true;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {0};
    if (i->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text,
                sizeof(text));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, text,
                sizeof(text));
    } else {
      continue;
    }
    found = host == text;
  }
  freeifaddrs(list);
  return found;
}
// The incarnation of the task a rendezvous key's tensor comes from
// ("src_device;incarnation;dst_device;edge;0:0"); 0 when the key does not say.
uint64_t KeyIncarnation(const std::string& key) {
  const size_t first = key.find(';');
  if (first == std::string::npos) return 0;
  const size_t second = key.find(';', first + 1);
  if (second == std::string::npos) return 0;
  uint64_t incarnation = 0;
  if (!absl::SimpleHexAtoi(key.substr(first + 1, second - first - 1), &incarnation)) return 0;
  return incarnation;
}

// Note [Restarted peers]: a peer's UCX endpoint belongs to the process that answered when it
// was resolved (its incarnation). A task restarted at the same address is a new process with a
// new UCX address; over shared memory nothing tells this side the old one is gone, so pulls on
// the old endpoint would wait forever. A pull whose key names another incarnation than the
// endpoint's therefore asks the peer again: a new incarnation gets a new endpoint (the old one
// is closed, failing what was pending on it); a key of an incarnation the peer no longer has
// (a step of its predecessor) goes over gRPC, where the peer refuses it naming the stale
// incarnation, without asking again.

// Note [Silent peers]: an endpoint to a peer on this host has no UCX peer-failure handling
// (Note [UCX data plane]), so over shared memory a peer that dies leaves the pulls waiting on
// it forever. A step that waits on such a peer is often watched by the master (its RunGraph to
// the peer fails), but not always: between-graph collectives (Horovod, MultiWorkerMirrored-
// Strategy) pull from peers their own master never calls. So a pull from a same-host peer that
// has not finished after kSilentPeerCheck asks the peer's GetStatus over gRPC: a peer that does
// not answer, or answers as another incarnation, is lost — its endpoint is closed and every pull
// waiting on it fails UNAVAILABLE naming the task; a peer that answers is only slow, and is
// asked again every kSilentPeerCheck while the pull waits.
constexpr absl::Duration kSilentPeerCheck = absl::Seconds(3);
constexpr int64_t kSilentPeerProbeMs = 2000;

// One timer for every data plane of the process, never destroyed: a check may hold the last
// reference to a PeerTable, which must not then destroy (and join) the thread it runs on.
Timer* SilentPeerTimer() {
  static Timer* timer = new Timer("ucx-silent-peers");
  return timer;
}

// Peers by address, each asked once for its UCX address (again when it restarts: Note
// [Restarted peers]). Shared with the callbacks of the calls
// it makes (GetStatus, the engine's closures), so that it outlives them.
class PeerTable : public std::enable_shared_from_this<PeerTable> {
 public:
  PeerTable(std::shared_ptr<UcxEngine> engine, std::shared_ptr<WorkerCacheInterface> cache,
            std::unique_ptr<TensorTransport> fallback, bool same_host_only)
      : engine_(std::move(engine)),
        cache_(std::move(cache)),
        fallback_(std::move(fallback)),
        same_host_only_(same_host_only) {}

  const std::shared_ptr<UcxEngine>& engine() const { return engine_; }

  void RecvTensorAsync(const RecvTensorCall& call, CallCancellation* cancel,
                       TensorTransport::RecvDone done) {
    enum { kFallback, kUcx, kWait, kResolve } action = kWait;
    uint64_t ep_id = 0;
    uint64_t peer_incarnation = 0;
    bool same_host = false;
    uint64_t gone_ep = 0;  // the endpoint of a predecessor, to close
    const uint64_t incarnation = KeyIncarnation(call.key);
    {
      absl::MutexLock lock(&mu_);
      Peer& peer = peers_[call.address];
      switch (peer.state) {
        case Peer::kGrpc:
          action = kFallback;
          break;
        case Peer::kUcx:
          if (incarnation != 0 && incarnation != peer.incarnation) {
            if (peer.stale.count(incarnation) != 0) {
              action = kFallback;  // a predecessor's step: refused over gRPC
              break;
            }
            // Perhaps restarted (Note [Restarted peers]): ask it again.
            action = kResolve;
            gone_ep = peer.ep_id;
            peer.state = Peer::kResolving;
            peer.ep_id = 0;
            peer.waiting.push_back({call, cancel, std::move(done)});
            break;
          }
          action = kUcx;
          ep_id = peer.ep_id;
          peer_incarnation = peer.incarnation;
          same_host = peer.same_host;
          break;
        case Peer::kResolving:
          action = kWait;
          peer.waiting.push_back({call, cancel, std::move(done)});
          break;
        case Peer::kUnknown:
          peer.same_host = IsThisHost(call.address);  // once per peer (a system call)
          if (same_host_only_ && !peer.same_host) {
            // Transport "auto": a peer on another host is pulled from over gRPC, unasked.
            peer.state = Peer::kGrpc;
            peer.task = call.task;
            action = kFallback;
            break;
          }
          action = kResolve;
          peer.state = Peer::kResolving;
          peer.task = call.task;
          peer.waiting.push_back({call, cancel, std::move(done)});
          break;
      }
    }
    // Never under mu_: a callback may run inline and pull again.
    switch (action) {
      case kFallback:
        fallback_->RecvTensorAsync(call, cancel, std::move(done));
        return;
      case kUcx: {
        engine_->PullHere(ep_id, call, cancel,
                          Watched(call, ep_id, peer_incarnation, same_host, std::move(done)));
        return;
      }
      case kWait:
        return;
      case kResolve:
        Resolve(call.address, call.task, gone_ep);
        return;
    }
  }

  // `done`, watched while it waits when the peer is on this host (Note [Silent peers]).
  TensorTransport::RecvDone Watched(const RecvTensorCall& call, uint64_t ep_id,
                                    uint64_t incarnation, bool same_host,
                                    TensorTransport::RecvDone done) {
    if (!same_host) return done;
    auto watch = std::make_shared<SilentWatch>();
    watch->address = call.address;
    watch->task = call.task;
    watch->ep_id = ep_id;
    watch->incarnation = incarnation;
    TensorTransport::RecvDone wrapped = [watch, done = std::move(done)](const absl::Status& status,
                                                                        Tensor tensor) mutable {
      watch->finished.store(true);
      const Timer::Id id = watch->timer_id.load();
      if (id != 0) SilentPeerTimer()->Cancel(id);
      done(status, std::move(tensor));
    };
    ScheduleCheck(watch);
    return wrapped;
  }

  // A peer whose connection failed is asked again on its next pull.
  void Forget(const std::string& task) {
    absl::MutexLock lock(&mu_);
    for (auto& [address, peer] : peers_) {
      if (peer.task == task && peer.state == Peer::kUcx) {
        peer.state = Peer::kUnknown;
        peer.ep_id = 0;
      }
    }
  }

 private:
  struct Waiting {
    RecvTensorCall call;
    CallCancellation* cancel;
    TensorTransport::RecvDone done;
  };
  struct SilentWatch {
    std::string address, task;
    uint64_t ep_id = 0;
    uint64_t incarnation = 0;
    std::atomic<bool> finished{false};
    std::atomic<Timer::Id> timer_id{0};
    GetStatusResponse status;  // the probe's answer
  };

  void ScheduleCheck(const std::shared_ptr<SilentWatch>& watch) {
    std::weak_ptr<PeerTable> weak = shared_from_this();
    const Timer::Id id = SilentPeerTimer()->Schedule(absl::Now() + kSilentPeerCheck, [weak, watch] {
      if (std::shared_ptr<PeerTable> self = weak.lock()) self->CheckSilent(watch);
    });
    watch->timer_id.store(id);
    // The pull may have finished before the id was stored: its Cancel found nothing to cancel.
    if (watch->finished.load()) SilentPeerTimer()->Cancel(id);
  }

  // Note [Silent peers]: is the peer of a pull that still waits alive, and the same process?
  void CheckSilent(const std::shared_ptr<SilentWatch>& watch) {
    if (watch->finished.load()) return;
    auto worker = cache_->GetWorker(watch->address, watch->task);
    if (!worker.ok()) return;
    std::shared_ptr<WorkerInterface> client = *worker;
    std::shared_ptr<PeerTable> self = shared_from_this();
    client->GetStatusAsync(
        &watch->status,
        [self, watch, client](const absl::Status& status) {
          if (watch->finished.load()) return;
          if (status.ok() &&
              (watch->incarnation == 0 || watch->status.incarnation() == watch->incarnation)) {
            self->ScheduleCheck(watch);  // alive: only slow
            return;
          }
          const std::string why = status.ok()
                                      ? std::string("it restarted (another incarnation answers)")
                                      : absl::StrCat("it does not answer (", status.message(), ")");
          self->Lost(watch->address, watch->task, watch->ep_id,
                     absl::UnavailableError(absl::StrCat(
                         "task ", watch->task, " is lost: ", why,
                         " while this task waited for a tensor from it over shared memory")));
        },
        kSilentPeerProbeMs, /*wait_for_ready=*/false);
  }

  // Closes the endpoint of a lost peer: its pulls fail with `why`; the next pull asks again.
  void Lost(const std::string& address, const std::string& task, uint64_t ep_id,
            const absl::Status& why) {
    {
      absl::MutexLock lock(&mu_);
      Peer& peer = peers_[address];
      if (peer.state == Peer::kUcx && peer.ep_id == ep_id) {
        peer.state = Peer::kUnknown;
        peer.ep_id = 0;
      }
    }
    LOG(WARNING) << "task " << engine_->task() << ": " << why.message();
    std::shared_ptr<UcxEngine> engine = engine_;
    engine_->Run([engine, ep_id, why] { engine->Disconnect(ep_id, why); });
  }

  struct Peer {
    enum State { kUnknown, kResolving, kUcx, kGrpc } state = kUnknown;
    std::string task;
    bool same_host = false;  // on this machine (Note [Silent peers])
    uint64_t ep_id = 0;
    uint64_t incarnation = 0;  // of the process ep_id reaches
    std::set<uint64_t> stale;  // incarnations it had before (Note [Restarted peers])
    std::vector<Waiting> waiting;
  };

  // Asks the peer's GetStatus for its data plane, connects, and sends the waiting pulls. A
  // `gone_ep` (its predecessor's endpoint, when it restarted) is closed once the answer says
  // the incarnation changed, or kept when it did not.
  void Resolve(const std::string& address, const std::string& task, uint64_t gone_ep = 0) {
    auto worker = cache_->GetWorker(address, task);
    if (!worker.ok()) {
      Settle(address, Peer::kUnknown, 0, "", 0);
      return;
    }
    auto response = std::make_shared<GetStatusResponse>();
    std::shared_ptr<WorkerInterface> client = *worker;
    std::shared_ptr<PeerTable> self = shared_from_this();
    client->GetStatusAsync(response.get(), [self, address, task, response, client,
                                            gone_ep](const absl::Status& status) {
      if (!status.ok()) {
        // Unreachable now: these pulls go over gRPC (and fail there as gRPC's would); the next
        // one asks again.
        self->CloseGone(gone_ep, task);
        self->Settle(address, Peer::kUnknown, 0, "", 0);
        return;
      }
      const uint64_t incarnation = response->incarnation();
      if (gone_ep != 0 && self->KeepIfSame(address, gone_ep, incarnation)) return;
      self->CloseGone(gone_ep, task);
      if (response->data_plane() != "ucx" || response->data_plane_address().empty()) {
        self->Settle(address, Peer::kGrpc, 0,
                     absl::StrCat("task ", task, " at ", address,
                                  " has no UCX data plane; tensors from it travel over gRPC"),
                     incarnation);
        return;
      }
      const std::string peer_address = response->data_plane_address();
      self->engine_->Run([self, address, task, peer_address, incarnation] {
        absl::StatusOr<uint64_t> ep =
            self->engine_->Connect(task, peer_address, IsThisHost(address));
        if (!ep.ok()) {
          self->Settle(address, Peer::kGrpc, 0,
                       absl::StrCat(ep.status().message(), "; tensors from it travel over gRPC"),
                       incarnation);
        } else {
          self->Settle(address, Peer::kUcx, *ep, "", incarnation);
        }
      });
    });
  }

  // A re-resolve that found the same process: its endpoint stays, and the key that made us ask
  // named an incarnation it no longer has (recorded stale by Settle's pulls).
  bool KeepIfSame(const std::string& address, uint64_t ep_id, uint64_t incarnation) {
    {
      absl::MutexLock lock(&mu_);
      Peer& peer = peers_[address];
      if (peer.incarnation != incarnation) return false;
    }
    Settle(address, Peer::kUcx, ep_id, "", incarnation);
    return true;
  }

  void CloseGone(uint64_t ep_id, const std::string& task) {
    if (ep_id == 0) return;
    std::shared_ptr<UcxEngine> engine = engine_;
    engine_->Run([engine, ep_id, task] {
      engine->Disconnect(ep_id, absl::UnavailableError(
                                    absl::StrCat("task ", task,
                                                 " restarted (a new incarnation answers at its "
                                                 "address); its predecessor's tensors are gone")));
    });
    LOG(INFO) << "task " << engine_->task() << ": task " << task
              << " restarted; connecting to its new incarnation";
  }

  void Settle(const std::string& address, Peer::State state, uint64_t ep_id, const std::string& log,
              uint64_t incarnation) {
    std::vector<Waiting> waiting;
    std::vector<Waiting> stale;
    bool same_host = false;
    {
      absl::MutexLock lock(&mu_);
      Peer& peer = peers_[address];
      same_host = peer.same_host;
      if (incarnation != 0 && peer.incarnation != 0 && peer.incarnation != incarnation) {
        peer.stale.insert(peer.incarnation);
      }
      peer.state = state;
      peer.ep_id = ep_id;
      if (incarnation != 0) peer.incarnation = incarnation;
      waiting.swap(peer.waiting);
      // Pulls of an incarnation the peer does not have go over gRPC (it refuses them).
      for (auto w = waiting.begin(); w != waiting.end();) {
        const uint64_t wanted = KeyIncarnation(w->call.key);
        if (state == Peer::kUcx && incarnation != 0 && wanted != 0 && wanted != incarnation) {
          peer.stale.insert(wanted);
          stale.push_back(std::move(*w));
          w = waiting.erase(w);
        } else {
          ++w;
        }
      }
    }
    if (!log.empty()) LOG(INFO) << "task " << engine_->task() << ": " << log;
    for (Waiting& w : stale) fallback_->RecvTensorAsync(w.call, w.cancel, std::move(w.done));
    for (Waiting& w : waiting) {
      if (state == Peer::kUcx) {
        std::shared_ptr<UcxEngine> engine = engine_;
        TensorTransport::RecvDone done =
            Watched(w.call, ep_id, incarnation, same_host, std::move(w.done));
        engine_->Run([engine, ep_id, w = std::move(w), done = std::move(done)]() mutable {
          engine->Pull(ep_id, w.call, w.cancel, std::move(done));
        });
      } else {
        fallback_->RecvTensorAsync(w.call, w.cancel, std::move(w.done));
      }
    }
  }

  const std::shared_ptr<UcxEngine> engine_;
  const std::shared_ptr<WorkerCacheInterface> cache_;
  const std::unique_ptr<TensorTransport> fallback_;
  const bool same_host_only_;
  absl::Mutex mu_;
  std::map<std::string, Peer> peers_ ABSL_GUARDED_BY(mu_);
};

class UcxDataPlane final : public DataPlane {
 public:
  explicit UcxDataPlane(std::shared_ptr<PeerTable> peers) : peers_(std::move(peers)) {
    std::weak_ptr<PeerTable> weak = peers_;
    engine()->Run([this, weak] {
      engine()->set_on_peer_lost([weak](const std::string& task) {
        if (std::shared_ptr<PeerTable> peers = weak.lock()) peers->Forget(task);
      });
    });
  }
  ~UcxDataPlane() override {
    StopServing();
    engine()->Stop();
  }

  std::string data_plane() const override { return "ucx"; }
  std::string data_plane_address() const override { return engine()->address(); }

  void Serve(Worker* worker) override { SetServing(worker); }
  void StopServing() override { SetServing(nullptr); }

  void RecvTensorAsync(const RecvTensorCall& call, CallCancellation* cancel,
                       RecvDone done) override {
    peers_->RecvTensorAsync(call, cancel, std::move(done));
  }

 private:
  const std::shared_ptr<UcxEngine>& engine() const { return peers_->engine(); }

  void SetServing(Worker* worker) {
    auto set = std::make_shared<absl::Notification>();
    engine()->Run([engine = engine(), worker, set] {
      engine->set_serving(worker);
      set->Notify();
    });
    // A stopped engine drops the closure, and serves nothing anyway.
    set->WaitForNotificationWithTimeout(absl::Seconds(5));
  }

  const std::shared_ptr<PeerTable> peers_;
};

const bool kRegistered = [] {
  RegisterDataPlane("ucx", &NewUcxDataPlane);
  return true;
}();

}  // namespace

std::string WrapUcxAddress(const std::string& address, const std::string& token) {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  const uint32_t v[2] = {major, minor};
  const uint64_t tag = AddressTag(token, address);
  std::string out(kAddressMagic, kMagicBytes);
  out.append(reinterpret_cast<const char*>(v), sizeof(v));
  out.append(reinterpret_cast<const char*>(&tag), sizeof(tag));
  return out + address;
}

absl::StatusOr<std::string> UnwrapUcxAddress(const std::string& wrapped, const std::string& token) {
  if (wrapped.size() <= kEnvelopeBytes || wrapped.size() > kMaxAddressBytes ||
      wrapped.compare(0, kMagicBytes, kAddressMagic) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("its UCX address (", wrapped.size(),
                                                   " bytes) is not one shardflow publishes"));
  }
  uint32_t v[2];
  std::memcpy(v, wrapped.data() + kMagicBytes, sizeof(v));
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  if (v[0] != major || v[1] != minor) {
    return absl::FailedPreconditionError(absl::StrCat("it runs UCX ", v[0], ".", v[1],
                                                      " and this task ", major, ".", minor,
                                                      " (UCX addresses differ between versions)"));
  }
  uint64_t tag = 0;
  std::memcpy(&tag, wrapped.data() + kMagicBytes + sizeof(v), sizeof(tag));
  std::string address = wrapped.substr(kEnvelopeBytes);
  if (tag != AddressTag(token, address)) {
    return absl::InvalidArgumentError(
        "its UCX address fails its check (corrupted, or made with another --token)");
  }
  return address;
}

absl::StatusOr<std::unique_ptr<DataPlane>> NewUcxDataPlane(
    const DataPlaneOptions& options, std::shared_ptr<WorkerCacheInterface> cache,
    std::unique_ptr<TensorTransport> fallback) {
  auto engine = UcxEngine::Create(options);
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<DataPlane>(new UcxDataPlane(std::make_shared<PeerTable>(
      *std::move(engine), std::move(cache), std::move(fallback), options.same_host_only)));
}

}  // namespace shardflow
