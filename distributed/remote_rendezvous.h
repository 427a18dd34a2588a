// RemoteRendezvous: the rendezvous of one step on one worker, reaching across tasks.
//
//   auto rdv = std::make_shared<RemoteRendezvous>(step_id, "/job:worker/replica:0/task:0",
//                                                 transport, resolve);
//   rdv->Send(key, t);                  // a local _Send: kept here until someone takes it
//   rdv->RecvAsync(key, done);          // a local _Recv: local key -> local slot,
//                                       //   key from another task -> transport->RecvTensorAsync
//   rdv->RecvLocalAsync(key, done);     // a peer's RecvTensor: waits for the local _Send
//   rdv->StartAbort(status);            // every pending recv (local, remote, served) gets it
//
// A key whose source device ("src_device;incarnation;dst;edge;0:0") lies in this rendezvous's
// task is served from the local slots; any other is pulled from the source task's worker (the
// pull model of docs/distributed.md). A tensor sent here waits until exactly one receiver takes
// it, local or remote.
//
// Thread safety: every method may be called from any thread. Contracts as in
// core/framework/rendezvous.h: every `done` is called exactly once; after StartAbort every
// pending and later Recv gets the abort status and Send fails with it.
#ifndef SHARDFLOW_DISTRIBUTED_REMOTE_RENDEZVOUS_H_
#define SHARDFLOW_DISTRIBUTED_REMOTE_RENDEZVOUS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/rendezvous.h"
#include "distributed/transport.h"
#include "runtime/rendezvous.h"

namespace shardflow {

// The parts of a rendezvous key.
struct ParsedRendezvousKey {
  std::string src_device;
  uint64_t src_incarnation = 0;
  std::string dst_device;
  std::string edge_name;
  // "/job:J/replica:0/task:T" of src_device.
  std::string src_task;
};
absl::StatusOr<ParsedRendezvousKey> ParseRendezvousKey(const std::string& key);

class RemoteRendezvous final : public Rendezvous,
                               public std::enable_shared_from_this<RemoteRendezvous> {
 public:
  // Task name -> "host:port" of its worker; an error when the task is unknown.
  using TaskResolver = std::function<absl::StatusOr<std::string>(const std::string& task)>;

  // `local_task`: "/job:J/replica:0/task:T" of this worker. `transport` is borrowed and must
  // outlive every remote recv (the worker owns both). Create with std::make_shared: a remote
  // recv in flight holds a reference.
  RemoteRendezvous(int64_t step_id, std::string local_task, TensorTransport* transport,
                   TaskResolver resolve);
  ~RemoteRendezvous() override;

  absl::Status Send(const std::string& key, const Tensor& value) override;
  using Rendezvous::RecvAsync;
  void RecvAsync(const std::string& key, const RecvArgs& args, DoneCallback done) override;
  void StartAbort(const absl::Status& status) override;
  void OnAbort(std::function<void(const absl::Status&)> fn) override { local_.OnAbort(fn); }

  // Takes the tensor of a local _Send for a peer (the serving side of RecvTensor).
  void RecvLocalAsync(const std::string& key, DoneCallback done);

  int64_t step_id() const { return step_id_; }
  // OK, or the status the step was aborted with.
  absl::Status status() const;
  // True when no tensor waits to be taken and no receiver waits (local, remote or served).
  bool Idle() const;

 private:
  void RecvRemote(const std::string& key, const ParsedRendezvousKey& parsed, const RecvArgs& args,
                  DoneCallback done);

  const int64_t step_id_;
  const std::string local_task_;
  const std::string local_prefix_;  // local_task_ + "/"
  TensorTransport* const transport_;
  const TaskResolver resolve_;

  // Sends of this task's devices and their receivers here or at a peer (RecvLocalAsync).
  LocalRendezvous local_;
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  // Remote recvs in flight, so that StartAbort can cancel them.
  std::map<int64_t, std::shared_ptr<CallCancellation>> remote_ ABSL_GUARDED_BY(mu_);
  int64_t next_remote_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_REMOTE_RENDEZVOUS_H_
