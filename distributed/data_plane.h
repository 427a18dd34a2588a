// DataPlane: a transport that carries tensors between tasks beside the gRPC connection (UCX:
// distributed/ucx/), chosen by name in ServerOptions::transport. gRPC stays the control plane
// (sessions, RegisterGraph, RunGraph, GetStatus); a data plane only moves the tensors a peer's
// _Recv pulls. It is both sides of that pull: as a TensorTransport it fetches tensors from
// peers, and Serve() makes it answer peers' pulls from this task's worker.
//
//   SF_ASSIGN_OR_RETURN(std::unique_ptr<DataPlane> ucx,
//                       NewDataPlane("ucx", {task, token}, worker_cache,
//                                    worker_cache->NewTransport()));
//   Worker worker(task, devices, ucx.get(), incarnation);   // GetStatus publishes its address
//   ucx->Serve(&worker);
//   ...
//   worker.Shutdown();
//   ucx->StopServing();
//
// A peer is asked for its data plane address once (GetStatus through the worker cache); a peer
// that has none, or that cannot be connected to, is pulled from with the fallback transport (the
// gRPC one), with one logged line per peer. Implementations register themselves by name at
// static-initialisation time, as protocols do (distributed/protocol.h); a build without UCX has
// no "ucx", and NewDataPlane then says so (Server falls back to gRPC with a logged line).
//
// Thread safety: every method may be called from any thread.
#ifndef SHARDFLOW_DISTRIBUTED_DATA_PLANE_H_
#define SHARDFLOW_DISTRIBUTED_DATA_PLANE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "distributed/transport.h"
#include "distributed/worker.h"
#include "distributed/worker_interface.h"

namespace shardflow {

class DataPlane : public TensorTransport {
 public:
  // Starts answering peers' pulls with `worker`'s tensors (borrowed; StopServing before it
  // goes). Pulls that arrive before are answered UNAVAILABLE.
  virtual void Serve(Worker* worker) = 0;
  // Stops answering (after Worker::Shutdown, whose callbacks then have all run). Idempotent.
  virtual void StopServing() = 0;
};

struct DataPlaneOptions {
  std::string task;  // "/job:J/replica:0/task:T"
  // The cluster's shared token (SecurityOptions::token): sent with every pull, and required of
  // every peer's pull when not empty, as gRPC's bearer token is.
  std::string token;
  // Transport "auto" (Note [Same-host data plane] in distributed/grpc/grpc_server.cc): pull over
  // this data plane only from peers on this host (their address a loopback one, one of this
  // network namespace's, or the host name), over shared memory; from the others over the
  // fallback, without asking them.
  bool same_host_only = false;
};

// Makes a data plane. `cache` reaches the peers' GetStatus; `fallback` pulls from peers without
// this data plane.
using DataPlaneFactory = std::function<absl::StatusOr<std::unique_ptr<DataPlane>>(
    const DataPlaneOptions& options, std::shared_ptr<WorkerCacheInterface> cache,
    std::unique_ptr<TensorTransport> fallback)>;

// A second registration of a name is a bug in shardflow and aborts with a message.
void RegisterDataPlane(const std::string& name, DataPlaneFactory factory);

// The data planes this build has, sorted.
std::vector<std::string> RegisteredDataPlanes();

// NOT_FOUND naming the ones this build has when `name` is not registered; the factory's error
// (UNAVAILABLE when the library finds no usable transport) otherwise.
absl::StatusOr<std::unique_ptr<DataPlane>> NewDataPlane(const std::string& name,
                                                        const DataPlaneOptions& options,
                                                        std::shared_ptr<WorkerCacheInterface> cache,
                                                        std::unique_ptr<TensorTransport> fallback);

// OK for "auto", "grpc" and "ucx" (whether or not this build has UCX: a task without it falls
// back to gRPC); INVALID_ARGUMENT naming the choices otherwise.
absl::Status CheckTransportName(const std::string& name);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_DATA_PLANE_H_
