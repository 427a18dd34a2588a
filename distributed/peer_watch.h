// PeerWatch: notices a lost task of the cluster even when no step talks to it.
//
// A step fails by itself when a task it runs on dies (its RunGraph call breaks, or the
// channel's keepalive gives up). In between-graph data parallelism that is not enough: a worker's
// step runs on its own task and the parameter servers only, so when another worker dies the
// survivors wait for its gradients (a synchronous step's accumulator, a token that never comes)
// forever. A PeerWatch probes every task it is given with GetStatus once per `interval`; a task
// that answered before and has not answered for `lost_after` (killed, its host gone, hung), or
// that never answered within `first_wait`, is lost: status() becomes an UNAVAILABLE error naming
// it and its address, and every OnLoss callback runs once. The master (MasterOptions::
// peer_watch) cancels the steps it runs through such a callback, so they fail with that error
// within lost_after + interval + the probe timeout (about 7 s by default) instead of hanging.
//
//   SF_ASSIGN_OR_RETURN(auto probes, NewWorkerCache(kDefaultProtocol, client));
//   SF_ASSIGN_OR_RETURN(auto watch, PeerWatch::Start(probes, spec, spec.tasks(), {}));
//   master_options.peer_watch = watch;
//
// Thread safety: all methods may be called from any thread.
#ifndef SHARDFLOW_DISTRIBUTED_PEER_WATCH_H_
#define SHARDFLOW_DISTRIBUTED_PEER_WATCH_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "distributed/cluster_spec.h"
#include "distributed/security.h"
#include "distributed/worker_interface.h"

namespace shardflow {

struct PeerWatchOptions {
  absl::Duration interval = absl::Seconds(1);
  absl::Duration probe_timeout = absl::Seconds(1);
  absl::Duration lost_after = absl::Seconds(4);
  // A task that has not answered once by then is lost too (it never came up).
  absl::Duration first_wait = absl::Minutes(2);
};

// GetStatus of every worker at once (waiting up to `timeout` for a reconnecting channel);
// their statuses, in order. Shared by PeerWatch and the CLI's serving tasks.
std::vector<absl::Status> ProbeTasks(const std::vector<std::shared_ptr<WorkerInterface>>& workers,
                                     absl::Duration timeout);

// A worker cache of its own for probes, reaching tasks with `security`: a probe that finds a
// task down leaves its channel backing off, which must not be the channel a transport pulls
// tensors on.
absl::StatusOr<std::shared_ptr<WorkerCacheInterface>> NewProbeCache(
    const SecurityOptions& security);

class PeerWatch {
 public:
  // Starts probing `tasks` of `spec` through `probes` (a worker cache of its own: a probe that
  // finds a task down leaves its channel backing off). Errors: a task not in `spec`, a worker
  // the cache cannot address.
  static absl::StatusOr<std::shared_ptr<PeerWatch>> Start(
      std::shared_ptr<WorkerCacheInterface> probes, const ClusterSpec& spec,
      const std::vector<TaskId>& tasks, PeerWatchOptions options = {});
  // The same through a probe cache of its own (NewProbeCache).
  static absl::StatusOr<std::shared_ptr<PeerWatch>> Start(const ClusterSpec& spec,
                                                          const std::vector<TaskId>& tasks,
                                                          const SecurityOptions& security,
                                                          PeerWatchOptions options = {});
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // OK while every task is up (or starting, within first_wait); else the error naming the first
  // task lost.
  absl::Status status() const;
  // Runs `on_loss` once when a task is lost (at once when one already is). Returns an id for
  // Remove, which must be called before anything `on_loss` uses goes away.
  int64_t OnLoss(std::function<void()> on_loss);
  void Remove(int64_t id);
  // Stops probing (e.g. once training is over and the other workers leave); status() keeps its
  // value and no OnLoss callback runs any more.
  void Stop();

 private:
  struct Peer {
    std::string task;
    std::string address;
    std::shared_ptr<WorkerInterface> worker;
    bool seen = false;
    absl::Time last_answer;
    std::string last_error;
  };
  PeerWatch(std::vector<Peer> peers, std::shared_ptr<WorkerCacheInterface> probes,
            PeerWatchOptions options);
  void Loop();
  void ProbeAll();
  void Lose(absl::Status status);

  const std::shared_ptr<WorkerCacheInterface> probes_;
  const PeerWatchOptions options_;
  const absl::Time start_;
  std::vector<Peer> peers_;  // the loop thread's alone
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_PEER_WATCH_H_
