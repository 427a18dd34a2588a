// LocalRendezvous: the in-process Rendezvous, shared by the devices of one step.
//
// Thread safety: every method may be called from any thread.
#ifndef SHARDFLOW_RUNTIME_RENDEZVOUS_H_
#define SHARDFLOW_RUNTIME_RENDEZVOUS_H_

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/framework/rendezvous.h"

namespace shardflow {

class LocalRendezvous final : public Rendezvous {
 public:
  ~LocalRendezvous() override;
  absl::Status Send(const std::string& key, const Tensor& value) override;
  using Rendezvous::RecvAsync;
  void RecvAsync(const std::string& key, const RecvArgs& args, DoneCallback done) override;
  void StartAbort(const absl::Status& status) override;
  void OnAbort(std::function<void(const absl::Status&)> fn) override;
  // True when no tensor waits to be received and no receiver waits.
  bool Idle() const;

 private:
  // Per key: tensors sent and not yet received, or receivers waiting (never both).
  struct Waiter {
    RecvArgs args;
    DoneCallback done;
  };
  struct Slot {
    std::deque<Tensor> values;
    std::deque<Waiter> waiters;
  };
  // Hands `value` to a receiver, in the memory it asked for.
  static void Deliver(const RecvArgs& args, const DoneCallback& done, const Tensor& value);
  mutable absl::Mutex mu_;
  std::map<std::string, Slot> slots_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void(const absl::Status&)>> on_abort_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_RENDEZVOUS_H_
