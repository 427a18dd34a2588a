#include "distributed/ucx/ucx_engine.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/platform/checked_math.h"
#include "core/platform/status.h"
#include "core/protos/worker.pb.h"
#include "distributed/ucx/ucx_data_plane.h"
#include "distributed/worker.h"
#include "glog/logging.h"

namespace shardflow {
namespace ucx_detail {
// A request's and a cancel's header: then `token_bytes` of the cluster's token.
struct RequestHeader {
  uint64_t id;
  int64_t step_id;
  uint32_t token_bytes;
  uint32_t reserved;
};
}  // namespace ucx_detail

namespace {

// Active message ids (Note [UCX data plane]).
constexpr unsigned kRequestAm = 11;
constexpr unsigned kReplyAm = 12;
constexpr unsigned kCancelAm = 13;

// A request's key (a rendezvous key is ~150 bytes) and a reply's error text are bounded.
constexpr size_t kMaxKeyBytes = 64 << 10;
constexpr size_t kMaxErrorBytes = 2048;
using ucx_detail::kDefaultSpinUs;
using ucx_detail::RequestHeader;
constexpr int64_t kMaxSpinUs = 1000000;
// How long a thread waits for the progress thread to leave it the worker before it queues.
constexpr std::chrono::microseconds kTakeWorker(20);

// SHARDFLOW_UCX_SPIN_US, or the default; INVALID_ARGUMENT naming the variable when malformed.
absl::StatusOr<std::chrono::microseconds> SpinFromEnvironment() {
  const char* env = std::getenv("SHARDFLOW_UCX_SPIN_US");
  if (env == nullptr || *env == '\0') return std::chrono::microseconds(kDefaultSpinUs);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(env, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > kMaxSpinUs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SHARDFLOW_UCX_SPIN_US is '", env, "'; it is the microseconds the UCX progress thread ",
        "polls before sleeping, 0 to ", kMaxSpinUs, " (unset: ", kDefaultSpinUs, ")"));
  }
  return std::chrono::microseconds(v);
}

constexpr size_t kMaxTokenBytes = 4096;
struct ReplyHeader {
  uint64_t id;
  int32_t code;
  int32_t dtype;
  uint32_t rank;
  uint32_t message_bytes;
  // then `rank` int64 dims, then `message_bytes` of error text
};

absl::Status UcxError(const std::string& what, ucs_status_t status) {
  return absl::UnavailableError(absl::StrCat(what, ": ", ucs_status_string(status)));
}

// DT_STRING values on the wire: per value, its length (uint64) then its bytes.
std::string EncodeStrings(const Tensor& t) {
  std::string out;
  const std::string* v = t.data<std::string>();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const uint64_t n = v[i].size();
    out.append(reinterpret_cast<const char*>(&n), sizeof(n));
    out.append(v[i]);
  }
  return out;
}

absl::Status DecodeStrings(const std::string& bytes, Tensor* t) {
  size_t at = 0;
  std::string* v = t->data<std::string>();
  for (int64_t i = 0; i < t->NumElements(); ++i) {
    uint64_t n = 0;
    if (bytes.size() - at < sizeof(n)) {
      return absl::InvalidArgumentError(absl::StrCat("string value ", i, " is cut short"));
    }
    std::memcpy(&n, bytes.data() + at, sizeof(n));
    at += sizeof(n);
    if (n > bytes.size() - at) {
      return absl::InvalidArgumentError(absl::StrCat("string value ", i, " announces ", n,
                                                     " bytes but ", bytes.size() - at, " follow"));
    }
    v[i].assign(bytes.data() + at, n);
    at += n;
  }
  if (at != bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(bytes.size() - at, " bytes follow the last string value"));
  }
  return absl::OkStatus();
}

// Bytes of a peer's bool tensor that are not 0 or 1 are an error (and cleared).
absl::Status CheckBools(Tensor* t) {
  auto* p = static_cast<uint8_t*>(t->raw_data());
  absl::Status bad;
  for (size_t i = 0; i < t->TotalBytes(); ++i) {
    if (p[i] <= 1) continue;
    if (bad.ok()) {
      bad = absl::InvalidArgumentError(absl::StrCat("a bool tensor holds byte ",
                                                    static_cast<int>(p[i]), " at offset ", i,
                                                    "; a bool is 0 or 1"));
    }
    p[i] = 0;
  }
  return bad;
}

// Whether endpoints to a peer ask UCX for peer-failure handling (Note [UCX data plane]).
// SHARDFLOW_UCX_PEER_FAILURE: "remote" (default: peers on other hosts only), "always", "never".
bool PeerFailureHandling(bool same_host) {
  const char* env = std::getenv("SHARDFLOW_UCX_PEER_FAILURE");
  const std::string mode = env == nullptr ? "remote" : env;
  if (mode == "always") return true;
  if (mode == "never") return false;
  return !same_host;
}

absl::Status CheckPeerFailureEnvironment() {
  const char* env = std::getenv("SHARDFLOW_UCX_PEER_FAILURE");
  if (env == nullptr) return absl::OkStatus();
  const std::string mode = env;
  if (mode == "remote" || mode == "always" || mode == "never") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "SHARDFLOW_UCX_PEER_FAILURE is '", mode, "'; use remote (the default: UCX's peer-failure ",
      "handling for peers on other hosts), always, or never"));
}

}  // namespace

absl::StatusOr<std::shared_ptr<UcxEngine>> UcxEngine::Create(const DataPlaneOptions& options) {
  if (options.token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat("UCX for task ", options.task, ": a token of ",
                                                   options.token.size(), " bytes; at most ",
                                                   kMaxTokenBytes));
  }
  std::shared_ptr<UcxEngine> engine(new UcxEngine(options));
  absl::Status s = engine->Init();
  if (!s.ok()) {
    return absl::Status(absl::IsInvalidArgument(s) ? s.code() : absl::StatusCode::kUnavailable,
                        absl::StrCat("UCX for task ", options.task, ": ", s.message()));
  }
  return engine;
}

std::string UcxEngine::RequestHeaderBytes(uint64_t id, int64_t step_id) const {
  RequestHeader h{id, step_id, static_cast<uint32_t>(token_.size()), 0};
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + token_;
}

bool UcxEngine::ParseRequestHeader(const void* header, size_t header_length, RequestHeader* h,
                                   absl::Status* why) const {
  if (header_length < sizeof(RequestHeader)) return false;  // no id: nobody to tell
  std::memcpy(h, header, sizeof(*h));
  if (h->token_bytes > kMaxTokenBytes || header_length != sizeof(*h) + h->token_bytes) {
    *why = absl::InvalidArgumentError(absl::StrCat("UCX request to task ", task_, ": a header of ",
                                                   header_length, " bytes announcing a token of ",
                                                   h->token_bytes));
    return false;
  }
  if (token_.empty()) return true;
  // The token is checked before anything else is read, in time independent of where it differs.
  const char* given = static_cast<const char*>(header) + sizeof(*h);
  unsigned char diff = h->token_bytes == token_.size() ? 0 : 1;
  for (size_t i = 0; i < token_.size(); ++i) {
    diff |= static_cast<unsigned char>(token_[i] ^ (i < h->token_bytes ? given[i] : 0));
  }
  if (diff != 0) {
    *why = absl::UnauthenticatedError(absl::StrCat("UCX request to task ", task_,
                                                   ": missing or wrong token; give every task the "
                                                   "cluster's --token"));
    return false;
  }
  return true;
}

absl::Status UcxEngine::Init() {
  absl::StatusOr<std::chrono::microseconds> spin = SpinFromEnvironment();
  if (!spin.ok()) return spin.status();
  SF_RETURN_IF_ERROR(CheckPeerFailureEnvironment());
  spin_ = *spin;
  caller_poll_ = *spin / 4;
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return UcxError("reading the UCX_* environment", st);
  // A peer that vanished without closing its connection is found by keepalive probes; UCX's
  // default interval (20 s) is longer than a step should hang. The environment wins.
  if (std::getenv("UCX_KEEPALIVE_INTERVAL") == nullptr) {
    ucp_config_modify(config, "KEEPALIVE_INTERVAL", "2s");
  }
  // Same-host peers only (transport "auto"): shared memory and loopback within the process, so
  // UCX opens no TCP listener beside the server's own port. UCX_TLS, when set, wins.
  if (same_host_only_ && std::getenv("UCX_TLS") == nullptr) {
    st = ucp_config_modify(config, "TLS", "sm,self");
    if (st != UCS_OK) {
      ucp_config_release(config);
      return UcxError("restricting UCX to shared memory (TLS=sm,self)", st);
    }
  }
  ucp_params_t params;
  std::memset(&params, 0, sizeof(params));
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "shardflow";
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) return UcxError("ucp_init", st);

  ucp_worker_params_t wp;
  std::memset(&wp, 0, sizeof(wp));
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // several threads, one at a time (worker_mu_)
  st = ucp_worker_create(context_, &wp, &worker_);
  if (st != UCS_OK) return UcxError("ucp_worker_create", st);

  ucp_worker_attr_t attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  st = ucp_worker_query(worker_, &attr);
  if (st != UCS_OK) return UcxError("ucp_worker_query", st);
  address_ = WrapUcxAddress(
      std::string(reinterpret_cast<const char*>(attr.address), attr.address_length), token_);
  ucp_worker_release_address(worker_, attr.address);
  max_am_header_ = attr.max_am_header;
  if (max_am_header_ < sizeof(ReplyHeader) + 8 * 8 + 64) {
    return absl::UnavailableError(
        absl::StrCat("UCX allows active-message headers of ", max_am_header_, " bytes only"));
  }

  struct Handler {
    unsigned id;
    ucp_am_recv_callback_t cb;
  };
  for (const Handler& h :
       {Handler{kRequestAm, &UcxEngine::OnRequest}, Handler{kReplyAm, &UcxEngine::OnReply},
        Handler{kCancelAm, &UcxEngine::OnCancel}}) {
    ucp_am_handler_param_t hp;
    std::memset(&hp, 0, sizeof(hp));
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    hp.id = h.id;
    hp.cb = h.cb;
    hp.arg = this;
    hp.flags = UCP_AM_FLAG_WHOLE_MSG;
    st = ucp_worker_set_am_recv_handler(worker_, &hp);
    if (st != UCS_OK) return UcxError("ucp_worker_set_am_recv_handler", st);
  }

  int ucx_fd = -1;
  st = ucp_worker_get_efd(worker_, &ucx_fd);
  if (st != UCS_OK) return UcxError("ucp_worker_get_efd", st);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || event_fd_ < 0) {
    return absl::UnavailableError(absl::StrCat("epoll/eventfd: ", std::strerror(errno)));
  }
  for (int fd : {ucx_fd, event_fd_}) {
    epoll_event ev;
    std::memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return absl::UnavailableError(absl::StrCat("epoll_ctl: ", std::strerror(errno)));
    }
  }
  absl::Notification started;
  thread_ = std::thread([this, &started] {
    started.Notify();
    Loop();
  });
  started.WaitForNotification();
  return absl::OkStatus();
}

UcxEngine::~UcxEngine() {
  Stop();
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (event_fd_ >= 0) close(event_fd_);
}

bool UcxEngine::TryTakeWorker(std::unique_lock<std::mutex>* lock) {
  wanted_.fetch_add(1, std::memory_order_acq_rel);
  const auto deadline = std::chrono::steady_clock::now() + kTakeWorker;
  bool got = lock->try_lock();
  while (!got && std::chrono::steady_clock::now() < deadline) {
    sched_yield();  // on a VM with one free core, the holder may need this one
    got = lock->try_lock();
  }
  wanted_.fetch_sub(1, std::memory_order_acq_rel);
  if (got) owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  return got;
}

void UcxEngine::ReleaseWorker(std::unique_lock<std::mutex>* lock, bool wake) {
  owner_.store(std::thread::id(), std::memory_order_relaxed);
  lock->unlock();
  if (!wake) return;
  bool sleeping = false;
  {
    absl::MutexLock l(&mu_);
    sleeping = sleeping_;
  }
  if (sleeping) {
    const uint64_t one = 1;
    ssize_t n = write(event_fd_, &one, sizeof(one));
    (void)n;
  }
}

void UcxEngine::Run(std::function<void()> fn) {
  if (HoldsWorker()) {
    fn();
    return;
  }
  std::unique_lock<std::mutex> worker(worker_mu_, std::defer_lock);
  if (TryTakeWorker(&worker)) {
    if (!Stopped()) fn();
    // A send may still need progress (a rendezvous): the progress thread goes on with it.
    ReleaseWorker(&worker, /*wake=*/true);
    return;
  }
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    queue_.push_back(std::move(fn));
    wake = sleeping_;
  }
  if (wake) {
    const uint64_t one = 1;
    ssize_t n = write(event_fd_, &one, sizeof(one));
    (void)n;
  }
}

void UcxEngine::PullHere(uint64_t ep_id, const RecvTensorCall& call, CallCancellation* cancel,
                         Done done) {
  std::unique_lock<std::mutex> worker(worker_mu_, std::defer_lock);
  if (HoldsWorker() || caller_poll_.count() == 0 || !TryTakeWorker(&worker)) {
    // `this`, not a shared_ptr: a closure that held the last reference would destroy the engine
    // on its own progress thread, whose Stop() would then join itself (std::system_error,
    // "Resource deadlock avoided"). The engine outlives every queued closure anyway: its
    // destructor joins the progress thread, which runs or drops them first.
    Run([this, ep_id, call, cancel, done = std::move(done)]() mutable {
      Pull(ep_id, call, cancel, std::move(done));
    });
    return;
  }
  if (Stopped()) {  // dropped, as Run drops closures after Stop
    ReleaseWorker(&worker, /*wake=*/false);
    return;
  }
  // The answer, when it comes while this thread polls: `done` runs after the worker is released,
  // so that what it starts (the executor's next ops) does not hold up the other pulls.
  struct Answer {
    bool polling = true;  // both fields are read and written with the worker held
    bool arrived = false;
    absl::Status status;
    Tensor tensor;
    Done done;
  };
  auto answer = std::make_shared<Answer>();
  answer->done = std::move(done);
  Pull(ep_id, call, cancel, [answer](const absl::Status& status, Tensor tensor) {
    if (!answer->polling) {
      answer->done(status, std::move(tensor));
      return;
    }
    answer->arrived = true;
    answer->status = status;
    answer->tensor = std::move(tensor);
  });
  const auto deadline = std::chrono::steady_clock::now() + caller_poll_;
  while (!answer->arrived) {
    if (ucp_worker_progress(worker_) == 0 && std::chrono::steady_clock::now() >= deadline) break;
  }
  answer->polling = false;
  ReleaseWorker(&worker, /*wake=*/!answer->arrived);
  if (answer->arrived) answer->done(answer->status, std::move(answer->tensor));
}

void UcxEngine::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || !thread_.joinable()) return;
    stopping_ = true;
  }
  const uint64_t one = 1;
  ssize_t n = write(event_fd_, &one, sizeof(one));
  (void)n;
  thread_.join();
}

void UcxEngine::Loop() {
  auto last_activity = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> worker(worker_mu_, std::defer_lock);
  while (true) {
    // A thread that wants the worker (to send and poll its own pull) gets it between passes.
    while (wanted_.load(std::memory_order_acquire) > 0) sched_yield();
    worker.lock();
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    std::deque<std::function<void()>> work;
    bool stop = false;
    {
      absl::MutexLock lock(&mu_);
      work.swap(queue_);
      stop = stopping_;
    }
    for (auto& fn : work) fn();
    if (stop) break;  // the worker stays held for the shutdown below
    bool busy = !work.empty();
    while (ucp_worker_progress(worker_) != 0) busy = true;
    const auto now = std::chrono::steady_clock::now();
    bool sleep = false;
    if (busy) {
      last_activity = now;
    } else if (now - last_activity >= spin_ && ucp_worker_arm(worker_) != UCS_ERR_BUSY) {
      absl::MutexLock lock(&mu_);
      sleep = queue_.empty() && !stopping_;
      sleeping_ = sleep;
    }
    owner_.store(std::thread::id(), std::memory_order_relaxed);
    worker.unlock();
    if (!sleep) continue;
    epoll_event events[2];
    epoll_wait(epoll_fd_, events, 2, 100);
    {
      absl::MutexLock lock(&mu_);
      sleeping_ = false;
    }
    uint64_t drained;
    while (read(event_fd_, &drained, sizeof(drained)) > 0) {
    }
    // last_activity stays: a wake for a message that a polling caller already took finds nothing
    // to do, and the thread sleeps again after one pass instead of polling beside that caller.
  }
  // Stopping: no more closures; pulls in flight fail, endpoints close.
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    queue_.clear();
  }
  const absl::Status down =
      absl::UnavailableError(absl::StrCat("task ", task_, ": the UCX data plane is shutting down"));
  down_ = true;
  serving_ = nullptr;
  std::vector<uint64_t> ids;
  for (const auto& [id, p] : pending_) ids.push_back(id);
  for (uint64_t id : ids) Finish(id, down);
  std::vector<ucs_status_ptr_t> closing;
  for (auto& [id, e] : eps_) {
    ucp_request_param_t param;
    std::memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t r = ucp_ep_close_nbx(e.ep, &param);
    if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
  }
  eps_.clear();
  ep_ids_.clear();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (ucs_status_ptr_t r : closing) {
    while (ucp_request_check_status(r) == UCS_INPROGRESS &&
           std::chrono::steady_clock::now() < deadline) {
      ucp_worker_progress(worker_);
    }
    ucp_request_free(r);
  }
  owner_.store(std::thread::id(), std::memory_order_relaxed);
}

absl::StatusOr<uint64_t> UcxEngine::Connect(const std::string& peer_task,
                                            const std::string& wrapped_address, bool same_host) {
  // UCX asserts (aborting the process) on an address it cannot unpack: only one that passes the
  // envelope's checks reaches it.
  absl::StatusOr<std::string> peer_address = UnwrapUcxAddress(wrapped_address, token_);
  if (!peer_address.ok()) {
    return absl::Status(peer_address.status().code(),
                        absl::StrCat("task ", peer_task, ": ", peer_address.status().message()));
  }
  ucp_ep_params_t params;
  std::memset(&params, 0, sizeof(params));
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peer_address->data());
  params.err_mode =
      PeerFailureHandling(same_host) ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  params.err_handler.cb = &UcxEngine::OnEndpointError;
  params.err_handler.arg = this;
  ucp_ep_h ep = nullptr;
  ucs_status_t st = ucp_ep_create(worker_, &params, &ep);
  if (st != UCS_OK) {
    return UcxError(absl::StrCat("connecting to task ", peer_task, " over UCX"), st);
  }
  const uint64_t id = next_id_++;
  eps_[id] = Endpoint{ep, peer_task};
  ep_ids_[ep] = id;
  return id;
}

void UcxEngine::Send(ucp_ep_h ep, unsigned am, std::unique_ptr<SendContext> ctx, const void* data,
                     size_t length, uint32_t flags) {
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof(param));
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param.cb.send = &UcxEngine::OnSent;
  param.flags = flags;
  param.memory_type = UCS_MEMORY_TYPE_HOST;
  SendContext* raw = ctx.release();
  param.user_data = raw;
  ucs_status_ptr_t r =
      ucp_am_send_nbx(ep, am, raw->header.data(), raw->header.size(), data, length, &param);
  if (r == nullptr) {
    delete raw;
  } else if (UCS_PTR_IS_ERR(r)) {
    OnSent(nullptr, UCS_PTR_STATUS(r), raw);
  }
}

void UcxEngine::OnSent(void* request, ucs_status_t status, void* user_data) {
  std::unique_ptr<SendContext> ctx(static_cast<SendContext*>(user_data));
  if (request != nullptr) ucp_request_free(request);
  if (status == UCS_OK || ctx->pending_id == 0) return;
  if (std::shared_ptr<UcxEngine> engine = ctx->engine.lock()) {
    auto it = engine->pending_.find(ctx->pending_id);
    if (it == engine->pending_.end()) return;
    const auto ep = engine->eps_.find(it->second.ep_id);
    engine->Finish(
        ctx->pending_id,
        UcxError(absl::StrCat("RecvTensor request to task ",
                              ep == engine->eps_.end() ? it->second.call.task : ep->second.task,
                              " over UCX failed"),
                 status));
  }
}

void UcxEngine::Pull(uint64_t ep_id, const RecvTensorCall& call, CallCancellation* cancel,
                     Done done) {
  auto ep = eps_.find(ep_id);
  if (ep == eps_.end() || down_) {
    done(absl::UnavailableError(absl::StrCat(
             "task ", call.task, " at ", call.address, ": ",
             down_ ? "this task's UCX data plane is shutting down" : "its UCX connection is gone")),
         Tensor());
    return;
  }
  if (call.key.size() > kMaxKeyBytes) {
    done(absl::InvalidArgumentError(
             absl::StrCat("rendezvous key of ", call.key.size(), " bytes; at most ", kMaxKeyBytes)),
         Tensor());
    return;
  }
  const uint64_t id = next_id_++;
  Pending& p = pending_[id];
  p.ep_id = ep_id;
  p.call = call;
  p.cancel = cancel;
  p.done = std::move(done);
  auto ctx = std::make_unique<SendContext>();
  ctx->engine = weak_from_this();
  ctx->pending_id = id;
  ctx->header = RequestHeaderBytes(id, call.step_id);
  ctx->key = call.key;
  const void* key = ctx->key.data();
  const size_t key_bytes = ctx->key.size();
  Send(ep->second.ep, kRequestAm, std::move(ctx), key, key_bytes, UCP_AM_SEND_FLAG_REPLY);
  if (cancel != nullptr && pending_.count(id) != 0) {
    std::weak_ptr<UcxEngine> weak = weak_from_this();
    cancel->SetCancelHook([weak, id] {
      if (std::shared_ptr<UcxEngine> engine = weak.lock()) {
        engine->Run([engine, id] { engine->Cancel(id); });
      }
    });
  }
}

void UcxEngine::Finish(uint64_t id, const absl::Status& status) {
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second.finished) return;
  Pending& p = it->second;
  p.finished = true;
  if (p.cancel != nullptr) p.cancel->ClearCancelHook();
  Done done = std::move(p.done);
  Tensor result = status.ok() ? p.tensor : Tensor();
  if (!p.receiving) pending_.erase(it);
  done(status, std::move(result));
}

void UcxEngine::Cancel(uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second.finished) return;
  Pending& p = it->second;
  auto ep = eps_.find(p.ep_id);
  if (ep != eps_.end()) {
    // The sender aborts the step, as a cancelled gRPC RecvTensor makes it do.
    auto ctx = std::make_unique<SendContext>();
    ctx->header = RequestHeaderBytes(id, p.call.step_id);
    Send(ep->second.ep, kCancelAm, std::move(ctx), nullptr, 0, UCP_AM_SEND_FLAG_REPLY);
  }
  if (p.receiving && p.recv_request != nullptr) ucp_request_cancel(worker_, p.recv_request);
  Finish(id, absl::CancelledError(absl::StrCat("RecvTensor of step ", p.call.step_id, " from task ",
                                               p.call.task, " was cancelled")));
}

void UcxEngine::CloseEndpoint(uint64_t ep_id, const absl::Status& why, bool tell_peer_lost) {
  auto ep = eps_.find(ep_id);
  if (ep == eps_.end()) return;
  const std::string peer = ep->second.task;
  ucp_ep_h handle = ep->second.ep;
  eps_.erase(ep);
  ep_ids_.erase(handle);
  std::vector<uint64_t> ids;
  for (const auto& [id, p] : pending_) {
    if (p.ep_id == ep_id) ids.push_back(id);
  }
  for (uint64_t id : ids) Finish(id, why);
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof(param));
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t r = ucp_ep_close_nbx(handle, &param);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) ucp_request_free(r);
  if (tell_peer_lost && on_peer_lost_) on_peer_lost_(peer);
}

void UcxEngine::OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* engine = static_cast<UcxEngine*>(arg);
  auto it = engine->ep_ids_.find(ep);
  if (it == engine->ep_ids_.end()) return;
  const uint64_t ep_id = it->second;
  const std::string peer = engine->eps_[ep_id].task;
  LOG(WARNING) << "task " << engine->task_ << ": UCX connection to task " << peer
               << " failed: " << ucs_status_string(status);
  engine->CloseEndpoint(
      ep_id, absl::UnavailableError(absl::StrCat("task ", peer, ": its UCX connection failed (",
                                                 ucs_status_string(status),
                                                 "); the task died or its host is unreachable")));
}

ucs_status_t UcxEngine::OnReply(void* arg, const void* header, size_t header_length, void* data,
                                size_t length, const ucp_am_recv_param_t* param) {
  return static_cast<UcxEngine*>(arg)->HandleReply(header, header_length, data, length, param);
}

ucs_status_t UcxEngine::HandleReply(const void* header, size_t header_length, void* data,
                                    size_t length, const ucp_am_recv_param_t* param) {
  if (header_length < sizeof(ReplyHeader)) return UCS_OK;  // not ours to answer: dropped
  ReplyHeader h;
  std::memcpy(&h, header, sizeof(h));
  auto it = pending_.find(h.id);
  if (it == pending_.end() || it->second.finished || it->second.receiving) {
    return UCS_OK;  // cancelled, failed, or a duplicate: its data is dropped
  }
  Pending& p = it->second;
  const std::string from = absl::StrCat("RecvTensor over UCX from task ", p.call.task, ": ");
  auto bad = [&](const std::string& what) {
    Finish(h.id, absl::InvalidArgumentError(absl::StrCat(from, what)));
    return UCS_OK;
  };
  const auto* bytes = static_cast<const char*>(header);
  if (h.rank > static_cast<uint32_t>(TensorShape::kMaxRank) || h.message_bytes > kMaxErrorBytes ||
      header_length != sizeof(h) + 8 * static_cast<size_t>(h.rank) + h.message_bytes) {
    return bad(absl::StrCat("a reply header of ", header_length, " bytes for rank ", h.rank,
                            " and a message of ", h.message_bytes, " bytes"));
  }
  if (h.code != 0) {
    const int code =
        h.code < 0 || h.code > 16 ? static_cast<int>(absl::StatusCode::kUnknown) : h.code;
    Finish(h.id, absl::Status(static_cast<absl::StatusCode>(code),
                              std::string(bytes + sizeof(h) + 8 * h.rank, h.message_bytes)));
    return UCS_OK;
  }
  const auto dtype = static_cast<DataType>(h.dtype);
  const bool is_string = dtype == DT_STRING;
  if (!DataType_IsValid(h.dtype) || dtype == DT_INVALID ||
      (!is_string && DataTypeSize(dtype) == 0)) {
    return bad(absl::StrCat("the reply has no valid dtype (", h.dtype, ")"));
  }
  TensorShapeProto shape_proto;
  for (uint32_t i = 0; i < h.rank; ++i) {
    int64_t d;
    std::memcpy(&d, bytes + sizeof(h) + 8 * i, sizeof(d));
    shape_proto.add_dim(d);
  }
  auto shape = TensorShape::FromProto(shape_proto);
  if (!shape.ok()) return bad(std::string(shape.status().message()));
  if (!shape->IsFullyDefined()) return bad("shape " + shape->DebugString() + " is not defined");
  int64_t expected = 0;
  if (!is_string && !CheckedMul(shape->num_elements(), DataTypeSize(dtype), &expected)) {
    return bad("shape " + shape->DebugString() + " is too large");
  }
  if (!is_string && static_cast<uint64_t>(expected) != length) {
    return bad(absl::StrCat("a ", DataTypeString(dtype), " tensor of shape ", shape->DebugString(),
                            " has ", expected, " bytes but ", length, " came"));
  }
  const Tensor& dst = p.call.destination;
  if (!is_string && dst.IsInitialized() && dst.dtype() == dtype && dst.shape() == *shape) {
    p.tensor = dst;
  } else {
    auto created = Tensor::Create(p.call.allocator != nullptr ? p.call.allocator : CpuAllocator(),
                                  dtype, *shape);
    if (!created.ok()) {
      Finish(h.id,
             absl::Status(created.status().code(), absl::StrCat(from, created.status().message())));
      return UCS_OK;
    }
    p.tensor = *std::move(created);
  }
  void* target = p.tensor.raw_data();
  if (is_string) {
    p.staging.resize(length);
    target = p.staging.data();
  }
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {
    if (length > 0) std::memcpy(target, data, length);
    absl::Status s;
    if (is_string) s = DecodeStrings(p.staging, &p.tensor);
    if (s.ok() && dtype == DT_BOOL) s = CheckBools(&p.tensor);
    Finish(h.id, s.ok() ? s : absl::InvalidArgumentError(absl::StrCat(from, s.message())));
    return UCS_OK;
  }
  // Zero-copy: UCX moves the bytes straight into the tensor (Note [UCX data plane]).
  auto* ctx = new RecvContext{this, h.id};
  ucp_request_param_t rp;
  std::memset(&rp, 0, sizeof(rp));
  rp.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  rp.cb.recv_am = &UcxEngine::OnReceived;
  rp.user_data = ctx;
  rp.memory_type = UCS_MEMORY_TYPE_HOST;
  p.receiving = true;
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker_, data, target, length, &rp);
  if (r == nullptr) {
    OnReceived(nullptr, UCS_OK, length, ctx);
  } else if (UCS_PTR_IS_ERR(r)) {
    OnReceived(nullptr, UCS_PTR_STATUS(r), 0, ctx);
  } else {
    p.recv_request = r;
  }
  // The receive has been started (UCX owns the descriptor now): UCX's own AM users return
  // UCS_INPROGRESS here.
  return UCS_INPROGRESS;
}

void UcxEngine::OnReceived(void* request, ucs_status_t status, size_t /*length*/, void* user_data) {
  std::unique_ptr<RecvContext> ctx(static_cast<RecvContext*>(user_data));
  if (request != nullptr) ucp_request_free(request);
  UcxEngine* engine = ctx->engine;
  auto it = engine->pending_.find(ctx->id);
  if (it == engine->pending_.end()) return;
  Pending& p = it->second;
  p.receiving = false;
  p.recv_request = nullptr;
  if (p.finished) {  // cancelled while the bytes were on their way
    engine->pending_.erase(it);
    return;
  }
  const std::string from = absl::StrCat("RecvTensor over UCX from task ", p.call.task, ": ");
  absl::Status s;
  if (status != UCS_OK) {
    s = UcxError(from + "receiving the tensor's bytes", status);
  } else if (p.tensor.dtype() == DT_STRING) {
    s = DecodeStrings(p.staging, &p.tensor);
    if (!s.ok()) s = absl::InvalidArgumentError(from + std::string(s.message()));
  } else if (p.tensor.dtype() == DT_BOOL) {
    s = CheckBools(&p.tensor);
    if (!s.ok()) s = absl::InvalidArgumentError(from + std::string(s.message()));
  }
  engine->Finish(ctx->id, s);
}

ucs_status_t UcxEngine::OnRequest(void* arg, const void* header, size_t header_length, void* data,
                                  size_t length, const ucp_am_recv_param_t* param) {
  auto* engine = static_cast<UcxEngine*>(arg);
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) == 0) return UCS_OK;  // no way back
  ucp_ep_h reply_ep = param->reply_ep;
  RequestHeader h;
  absl::Status why;
  if (!engine->ParseRequestHeader(header, header_length, &h, &why)) {
    if (!why.ok()) engine->SendReply(reply_ep, h.id, why, Tensor());
    return UCS_OK;
  }
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 || length == 0 ||
      length > kMaxKeyBytes) {
    engine->SendReply(reply_ep, h.id,
                      absl::InvalidArgumentError(absl::StrCat(
                          "UCX RecvTensor to task ", engine->task_, ": a rendezvous key of ",
                          length, " bytes (1 to ", kMaxKeyBytes, " expected)")),
                      Tensor());
    return UCS_OK;
  }
  Worker* worker = engine->serving_;
  if (worker == nullptr) {
    engine->SendReply(reply_ep, h.id,
                      absl::UnavailableError(absl::StrCat("task ", engine->task_,
                                                          " is not serving tensors over UCX "
                                                          "(starting or shutting down)")),
                      Tensor());
    return UCS_OK;
  }
  std::string key(static_cast<const char*>(data), length);
  std::weak_ptr<UcxEngine> weak = engine->weak_from_this();
  const uint64_t id = h.id;
  engine->answering_[{reply_ep, id}] = h.step_id;
  worker->RecvTensorAsync(
      h.step_id, key, [weak, reply_ep, id](const absl::Status& status, const Tensor& tensor) {
        std::shared_ptr<UcxEngine> e = weak.lock();
        if (e == nullptr) return;
        e->Run([e, reply_ep, id, status, tensor] { e->SendReply(reply_ep, id, status, tensor); });
      });
  return UCS_OK;
}

ucs_status_t UcxEngine::OnCancel(void* arg, const void* header, size_t header_length,
                                 void* /*data*/, size_t /*length*/,
                                 const ucp_am_recv_param_t* param) {
  auto* engine = static_cast<UcxEngine*>(arg);
  RequestHeader h;
  absl::Status why;
  if (engine->serving_ == nullptr || (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) == 0 ||
      !engine->ParseRequestHeader(header, header_length, &h, &why)) {
    return UCS_OK;
  }
  // Only a pull this peer made and that is still being answered can be cancelled: a peer cannot
  // abort other steps by naming them.
  auto it = engine->answering_.find({param->reply_ep, h.id});
  if (it == engine->answering_.end()) return UCS_OK;
  h.step_id = it->second;
  Worker* worker = engine->serving_;
  worker->AbortStep(h.step_id,
                    absl::CancelledError(absl::StrCat(
                        "RecvTensor of step ", h.step_id, " on task ", worker->task(),
                        " was cancelled by its caller over UCX; the step is aborted here")));
  return UCS_OK;
}

void UcxEngine::SendReply(ucp_ep_h ep, uint64_t id, const absl::Status& status,
                          const Tensor& tensor) {
  answering_.erase({ep, id});
  auto ctx = std::make_unique<SendContext>();
  ReplyHeader h;
  std::memset(&h, 0, sizeof(h));
  h.id = id;
  h.code = static_cast<int32_t>(status.code());
  const void* data = nullptr;
  size_t length = 0;
  std::string message;
  if (!status.ok()) {
    message = std::string(status.message()).substr(0, kMaxErrorBytes);
    const size_t room = max_am_header_ - sizeof(h);
    if (message.size() > room) message.resize(room);
    h.message_bytes = static_cast<uint32_t>(message.size());
  } else {
    h.dtype = tensor.dtype();
    h.rank = static_cast<uint32_t>(tensor.shape().rank());
    ctx->tensor = tensor;
    if (tensor.dtype() == DT_STRING) {
      ctx->payload = EncodeStrings(tensor);
      data = ctx->payload.data();
      length = ctx->payload.size();
    } else {
      data = tensor.raw_data();
      length = tensor.TotalBytes();
    }
  }
  ctx->header.assign(reinterpret_cast<const char*>(&h), sizeof(h));
  for (uint32_t i = 0; i < h.rank; ++i) {
    const int64_t d = tensor.shape().dim(static_cast<int>(i));
    ctx->header.append(reinterpret_cast<const char*>(&d), sizeof(d));
  }
  ctx->header += message;
  if (ctx->header.size() > max_am_header_) {  // a rank UCX's header cannot carry
    SendReply(ep, id,
              absl::UnimplementedError(
                  absl::StrCat("task ", task_, ": a tensor of rank ", h.rank,
                               " does not fit a UCX active-message header; use --transport grpc")),
              Tensor());
    return;
  }
  Send(ep, kReplyAm, std::move(ctx), data, length, 0);
}

}  // namespace shardflow
