#include "distributed/remote_rendezvous.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/framework/device_name.h"

namespace shardflow {

absl::StatusOr<ParsedRendezvousKey> ParseRendezvousKey(const std::string& key) {
  std::vector<std::string> parts = absl::StrSplit(key, ';');
  if (parts.size() != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous key '", key,
                     "' is malformed; expected \"src_device;incarnation;dst_device;edge;0:0\""));
  }
  ParsedRendezvousKey out;
  out.src_device = parts[0];
  out.dst_device = parts[2];
  out.edge_name = parts[3];
  if (!absl::SimpleHexAtoi(parts[1], &out.src_incarnation)) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous key '", key, "': incarnation '",
                                                   parts[1], "' is not a hexadecimal number"));
  }
  auto src = DeviceName::Parse(out.src_device);
  if (!src.ok() || !src->IsFullySpecified()) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous key '", key, "': source device '",
                                                   out.src_device, "' is not a full name"));
  }
  out.src_task = src->TaskName();
  return out;
}

RemoteRendezvous::RemoteRendezvous(int64_t step_id, std::string local_task,
                                   TensorTransport* transport, TaskResolver resolve)
    : step_id_(step_id),
      local_task_(std::move(local_task)),
      local_prefix_(local_task_ + "/"),
      transport_(transport),
      resolve_(std::move(resolve)) {}

RemoteRendezvous::~RemoteRendezvous() {
  StartAbort(absl::CancelledError(
      absl::StrCat("the rendezvous of step ", step_id_, " on ", local_task_, " was destroyed")));
}

absl::Status RemoteRendezvous::Send(const std::string& key, const Tensor& value) {
  return local_.Send(key, value);
}

void RemoteRendezvous::RecvLocalAsync(const std::string& key, DoneCallback done) {
  local_.RecvAsync(key, std::move(done));
}

void RemoteRendezvous::RecvAsync(const std::string& key, const RecvArgs& args, DoneCallback done) {
  auto parsed = ParseRendezvousKey(key);
  if (!parsed.ok()) {
    done(parsed.status(), Tensor());
    return;
  }
  if (parsed->src_task == local_task_) {
    local_.RecvAsync(key, args, std::move(done));
  } else {
    RecvRemote(key, *parsed, args, std::move(done));
  }
}

void RemoteRendezvous::RecvRemote(const std::string& key, const ParsedRendezvousKey& parsed,
                                  const RecvArgs& args, DoneCallback done) {
  absl::StatusOr<std::string> address =
      resolve_ ? resolve_(parsed.src_task) : absl::NotFoundError("no task resolver was given");
  if (!address.ok()) {
    done(absl::FailedPreconditionError(absl::StrCat(
             "step ", step_id_, " on ", local_task_, " must receive '", key, "' from task ",
             parsed.src_task, ", whose address is not known: ", address.status().message(),
             "; list it in RegisterGraphRequest.cluster")),
         Tensor());
    return;
  }
  auto cancel = std::make_shared<CallCancellation>();
  int64_t id = 0;
  absl::Status aborted;
  {
    absl::MutexLock lock(&mu_);
    aborted = status_;
    if (aborted.ok()) {
      id = next_remote_id_++;
      remote_[id] = cancel;
    }
  }
  if (!aborted.ok()) {
    done(aborted, Tensor());
    return;
  }
  RecvTensorCall call;
  call.task = parsed.src_task;
  call.address = *address;
  call.step_id = step_id_;
  call.key = key;
  // The transport writes into host memory the receiver can use directly; device memory is
  // filled from there by the receiving device.
  const bool to_host = args.allocator == nullptr || args.allocator->IsHostMemory();
  call.allocator = to_host ? args.allocator : nullptr;
  if (to_host) call.destination = args.destination;
  transport_->RecvTensorAsync(call, cancel.get(),
                              [self = shared_from_this(), this, id, cancel, to_host, args,
                               done = std::move(done)](const absl::Status& s, Tensor t) {
                                absl::Status abort;
                                {
                                  absl::MutexLock lock(&mu_);
                                  remote_.erase(id);
                                  abort = status_;
                                }
                                // An aborted step reports its abort status, not the CANCELLED of
                                // its cancelled call.
                                if (!s.ok() && !abort.ok()) {
                                  done(abort, Tensor());
                                } else if (!s.ok() || to_host) {
                                  done(s, t);
                                } else {
                                  auto received = ToReceiverMemory(t, args);
                                  done(received.status(), received.ok() ? *received : Tensor());
                                }
                              });
}

void RemoteRendezvous::StartAbort(const absl::Status& status) {
  std::vector<std::shared_ptr<CallCancellation>> remote;
  absl::Status abort;
  {
    absl::MutexLock lock(&mu_);
    if (!status_.ok()) return;
    status_ =
        status.ok() ? absl::CancelledError(absl::StrCat("step ", step_id_, " aborted")) : status;
    abort = status_;
    for (auto& [id, c] : remote_) remote.push_back(c);
  }
  for (auto& c : remote) c->Cancel();
  local_.StartAbort(abort);
}

absl::Status RemoteRendezvous::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

bool RemoteRendezvous::Idle() const {
  absl::MutexLock lock(&mu_);
  return remote_.empty() && local_.Idle();
}

}  // namespace shardflow
