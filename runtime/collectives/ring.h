// RingCollectiveExecutor: all-reduce, broadcast and all-gather among the members of a group,
// over the step's Rendezvous — the same channel _Send/_Recv use, so one implementation serves
// devices of one process (the local session's in-process rendezvous) and tasks of a cluster (a
// worker's remote rendezvous, which pulls over the cluster's TensorTransport: a faster transport
// makes collectives faster with no change here).
//
//   RingCollectiveExecutor ring(rendezvous);        // one per step; ExecutorBarrier makes it
//   ring.AllReduceAsync(params, input, &output, done);
//
// Note [Ring all-reduce]. The tensor is cut into group_size segments; member r sends segment
// r-s to member r+1 and adds segment r-s-1 from member r-1 into its own, for s = 0..N-2
// (reduce-scatter: member r then holds the full reduction of segment r+1, divided by N here
// for a mean), then passes the reduced segments on around the ring for N-1 more steps
// (all-gather). Each member sends and receives 2(N-1)/N of the tensor, whatever N. Segments
// are further cut into chunks of at most chunk_bytes, and each chunk index is a "lane" that
// runs the whole algorithm on its own: lanes are in flight together, so one chunk is on the
// wire while another is being added (pipelining), and no message is larger than a chunk.
//
// Nothing is copied to start: the first reduce-scatter step sends a view of the input, and each
// reduce-scatter receive writes input + the peer's partial sum into the output (every segment is
// received there at most once, so the input is read exactly where the output is first written);
// the all-gather writes the rest. A 64 MiB all-reduce between two processes spent ~20% of its
// CPU copying an unforwardable input (a variable's buffer) into the output before this. Later
// sends are views into the output (no copy): a segment a member sent in the reduce-scatter is
// overwritten in its all-gather only with data that could not exist before the peer consumed
// what it sent, since that data includes the sent segment's contribution.
//
// Keys are rendezvous keys from the sender's device (and incarnation) to the receiver's, named
// "collective:G:I:<phase>...", unique per step; the incarnations make a restarted member's
// stale data unusable, as for _Send/_Recv.
//
// Errors: the first failure of a collective (a member unreachable or dead, a mismatch between
// members' shapes or dtypes) aborts the step's rendezvous with a message naming the op's group,
// instance and device, so no member of the step waits for it; StartAbort fails later calls.
//
// Thread safety: every method may be called from any thread. Callbacks run on the threads that
// complete the rendezvous' receives (reductions run there too).
#ifndef SHARDFLOW_RUNTIME_COLLECTIVES_RING_H_
#define SHARDFLOW_RUNTIME_COLLECTIVES_RING_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/framework/collective.h"
#include "core/framework/rendezvous.h"

namespace shardflow {

struct RingOptions {
  // The largest message of an all-reduce; smaller tensors go whole. 4 MiB, as the gRPC
  // transport's recv_chunk_bytes: larger messages wait longer to start being reduced.
  int64_t chunk_bytes = 4 << 20;
  // A member that waits this long for a peer's data logs a warning naming the peer's device
  // (its task is missing, stuck or slow); it goes on waiting, until the step's deadline or
  // abort. Zero: no warning.
  absl::Duration straggler_warning = absl::Seconds(60);
};

class RingCollectiveExecutor final : public CollectiveExecutor {
 public:
  // `rendezvous` is borrowed: the step's, alive until every collective of the step is done.
  explicit RingCollectiveExecutor(Rendezvous* rendezvous, RingOptions options = RingOptions());

  void AllReduceAsync(const CollectiveParams& params, const Tensor& input, Tensor* output,
                      DoneCallback done) override;
  void BroadcastAsync(const CollectiveParams& params, const Tensor& input, Tensor* output,
                      DoneCallback done) override;
  void AllGatherAsync(const CollectiveParams& params, const Tensor& input, Tensor* output,
                      DoneCallback done) override;
  void StartAbort(const absl::Status& status) override;

 private:
  // The abort status, or an error for params that do not describe a member of a group.
  absl::Status CheckCall(const CollectiveParams& params) const;

  Rendezvous* const rendezvous_;
  const RingOptions options_;
  mutable absl::Mutex mu_;
  absl::Status abort_status_ ABSL_GUARDED_BY(mu_);
};

// "CollectiveReduce group 1 instance 3 on /job:worker/replica:0/task:0/device:CPU:0", for errors.
std::string DescribeCollective(const char* what, const CollectiveParams& params);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_COLLECTIVES_RING_H_
