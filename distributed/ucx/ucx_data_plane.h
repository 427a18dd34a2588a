// The "ucx" data plane: tensors between tasks over UCX (Debian's libucx 1.13), which reaches
// InfiniBand/RoCE verbs, shared memory (posix, sysv, cma) and TCP through one API; gRPC stays the
// control plane. Servers make it when ServerOptions::transport is "ucx" (distributed/data_plane.h
// registers it by name; this header is for tests and benchmarks that make one themselves). The
// engine under it (UCP worker, progress thread, the wire protocol below) is ucx_engine.{h,cc}.
//
// Note [UCX data plane]
// ---------------------
// Wire protocol: three active messages (AM) on UCP endpoints made from the worker addresses the
// tasks publish in GetStatus (data_plane_address).
//   request  receiver -> sender   header {id, step_id}, data: the rendezvous key
//                                 (sent with UCP_AM_SEND_FLAG_REPLY: the sender answers on the
//                                 endpoint UCX hands its handler, no second address exchange)
//   reply    sender -> receiver   header {id, code, dtype, rank, message length, dims, message},
//                                 data: the tensor's bytes (DT_STRING: length-prefixed values)
//   cancel   receiver -> sender   header {id, step_id}: the receiver gave up; the sender aborts
//                                 the step, as gRPC's RecvTensor does when its caller cancels —
//                                 only a step whose pull this peer made and is still answered.
// Requests and cancels carry the cluster's token (SecurityOptions::token) after their header; a
// task with a token answers a request without it UNAUTHENTICATED. UCX itself neither
// authenticates nor encrypts: there is no TLS on this plane (a server with TLS refuses "ucx").
// Why active messages rather than tag matching or RMA get with remote keys: the pull has to wait
// for the sender's _Send anyway, so the sender answers when the tensor exists, and UCX's AM
// rendezvous gives the rest for free. A small reply arrives eagerly inside the AM (one memcpy into
// the tensor); for a large one the handler learns dtype, shape and size from the header, makes the
// destination tensor (the _Recv's own buffer when RecvArgs::destination fits, else one from the
// receiving device's allocator) and calls ucp_am_recv_data_nbx into it: UCX then moves the bytes
// with its zero-copy protocol of the transport (CMA's process_vm_readv, an RDMA read of the
// sender's registered tensor, TCP straight into the buffer), once, with no staging copy. Tag
// matching would need the receiver to know the size before posting, so a second round trip;
// RMA get would need our own rkey exchange and a completion message, which is what the AM
// rendezvous already does. (NCCL's UCX plugin and UCX-Py make the same choice of eager for small
// and rendezvous for large messages.)
// Memory registration: UCX registers the buffers of a zero-copy transfer through its own
// registration cache (UCX_RCACHE_*, on by default), keyed by address range; the engine's CPU
// allocator reuses its blocks, so a tensor of the same size on the next step hits the cache
// instead of registering again. No pool of our own: it would add a copy into the pool's memory,
// which the rcache avoids.
// Threads: the UCP worker (UCS_THREAD_MODE_SERIALIZED) is used by one thread at a time, the one
// holding the engine's worker mutex. A progress thread holds it while it polls; after any
// activity it polls for a short while (200 µs; SHARDFLOW_UCX_SPIN_US sets it, 0 to 1000000)
// before arming the worker's wakeup fd and sleeping in epoll, so an idle task costs no CPU. A
// thread that pulls a tensor does not hand the pull over: it takes the worker (the progress
// thread leaves it between passes; after 20 µs of waiting the pull is queued instead), sends the
// request and polls for the answer itself for up to a quarter of the polling window (50 µs by
// default), then runs its done callback after releasing the worker; a pull not answered by then
// is left to the progress thread. A round trip then wakes no thread on the receiving side (as
// MPI and UCX-Py progress on the waiting thread): measured back to back on one host, 4-6 µs when
// a core is free. Other work (a sender's reply when its _Send runs, a cancel) is likewise done by
// the thread that has it when the worker is free, else queued through an eventfd. Completion
// callbacks of pulls the progress thread answers run on it and must be short (the rendezvous's
// are).
// Errors and liveness: a peer that dies or whose connection breaks fails every pull waiting on
// it with UNAVAILABLE naming the task (the endpoint's error handler), and its next pull asks the
// peer's GetStatus again (a restarted task has a new address). Endpoints to peers on other hosts
// ask for UCP_ERR_HANDLING_MODE_PEER, with keepalive probes (UCX_KEEPALIVE_INTERVAL, 2 s here
// unless set in the environment) that find a peer that vanished without closing its
// connections. Endpoints to a peer on this host do not: in UCX 1.13 peer-failure handling rules
// out its shared-memory and CMA transports, and the 64 MiB pull then goes over loopback TCP at
// half the speed (measured: 28.5 ms against 13.9 ms). UCX still reports a reset connection there
// (a killed peer fails the pull at once, tested), and a peer that hangs is bounded by the control
// plane: its RunGraph fails on gRPC's keepalive, the master cancels the step, and the cancelled
// pulls end here (CallCancellation). SHARDFLOW_UCX_PEER_FAILURE=always|never overrides the
// choice ("remote" is the default). Everything a peer sends is checked before use: header sizes,
// dtype, rank and dims (no overflow), data length equal to dtype × shape, bool bytes, string
// lengths; a bad reply fails that pull with INVALID_ARGUMENT, a bad request gets an error reply
// or is dropped, and the task serves on. UCX_* environment variables (UCX_TLS, UCX_NET_DEVICES,
// UCX_RNDV_THRESH, ...) apply as UCX documents them: the context reads them.
#ifndef SHARDFLOW_DISTRIBUTED_UCX_UCX_DATA_PLANE_H_
#define SHARDFLOW_DISTRIBUTED_UCX_UCX_DATA_PLANE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "distributed/data_plane.h"

namespace shardflow {

// UNAVAILABLE naming UCX's error when no UCP context or worker can be made here (no usable
// transport for UCX_TLS, a broken UCX_* variable).
// The UCX worker address a task publishes in GetStatus, in an envelope: "SFUCX1", the UCX
// major and minor version, a 64-bit FNV-1a tag over the cluster's token and the address, then the
// address. UCX aborts the process on an address it cannot unpack (a corrupted one, or one from
// another UCX version), so a receiver unwraps and checks before connecting, and falls back to
// gRPC when the check fails. The tag is not a cryptographic MAC.
std::string WrapUcxAddress(const std::string& address, const std::string& token);
// INVALID_ARGUMENT (not an envelope, a tag that does not match), FAILED_PRECONDITION (another
// UCX version), else the address.
absl::StatusOr<std::string> UnwrapUcxAddress(const std::string& wrapped, const std::string& token);

absl::StatusOr<std::unique_ptr<DataPlane>> NewUcxDataPlane(
    const DataPlaneOptions& options, std::shared_ptr<WorkerCacheInterface> cache,
    std::unique_ptr<TensorTransport> fallback);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_UCX_UCX_DATA_PLANE_H_
