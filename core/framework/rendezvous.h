// Rendezvous: where a _Send leaves a tensor and the matching _Recv picks it up, by key.
//
// Keys follow DESIGN.md: "src_device;src_incarnation;dst_device;edge_name;frame_iter". One
// rendezvous serves one step; a restarted process has a new incarnation, so a stale sender can
// never satisfy a new receiver. The in-process implementation is runtime/rendezvous.h; remote
// ones (gRPC, RDMA) implement the same interface.
//
// Contracts: RecvAsync's `done` is called exactly once — with the tensor, or with the abort
// status — possibly on another thread. After StartAbort every pending and later RecvAsync gets
// the abort status and Send fails with it.
#ifndef SHARDFLOW_CORE_FRAMEWORK_RENDEZVOUS_H_
#define SHARDFLOW_CORE_FRAMEWORK_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "core/framework/tensor.h"

namespace shardflow {

class Rendezvous {
 public:
  using DoneCallback = std::function<void(const absl::Status&, const Tensor&)>;
  virtual ~Rendezvous() = default;
  virtual absl::Status Send(const std::string& key, const Tensor& value) = 0;
  virtual void RecvAsync(const std::string& key, DoneCallback done) = 0;
  virtual void StartAbort(const absl::Status& status) = 0;
};

// "src_device;incarnation(hex);dst_device;tensor_name;0:0".
std::string RendezvousKey(const std::string& src_device, uint64_t src_incarnation,
                          const std::string& dst_device, const std::string& tensor_name);

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_RENDEZVOUS_H_
