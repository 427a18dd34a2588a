// Rendezvous: where a _Send leaves a tensor and the matching _Recv picks it up, by key.
//
// Keys follow DESIGN.md: "src_device;src_incarnation;dst_device;edge_name;frame_iter". One
// rendezvous serves one step; a restarted process has a new incarnation, so a stale sender can
// never satisfy a new receiver. The in-process implementation is runtime/rendezvous.h; remote
// ones (gRPC, RDMA) implement the same interface.
//
// Contracts: RecvAsync's `done` is called exactly once — with the tensor, or with the abort
// status — possibly on another thread. After StartAbort every pending and later RecvAsync gets
// the abort status and Send fails with it. A receiver says where it wants the tensor
// (RecvArgs): the tensor it gets is in that memory, copied by the receiving device when the
// sender's memory is another (a CPU -> GPU edge); between CPU devices nothing is copied.
#ifndef SHARDFLOW_CORE_FRAMEWORK_RENDEZVOUS_H_
#define SHARDFLOW_CORE_FRAMEWORK_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/framework/allocator.h"
#include "core/framework/tensor.h"

namespace shardflow {

class DeviceBase;

// Where a receiver wants a tensor.
struct RecvArgs {
  // The receiving device (it makes the copy when one is needed); null = the host.
  DeviceBase* device = nullptr;
  // The memory the tensor should be in; null = host memory.
  Allocator* allocator = nullptr;
  // Optional, host memory: where the value should land. A transport that copies the bytes
  // anyway (from the network) writes them here when dtype and shape match, and hands back this
  // tensor; otherwise (an in-process value, a mismatch) the value comes as usual and the
  // receiver copies what it needs.
  Tensor destination;
};

class Rendezvous {
 public:
  using DoneCallback = std::function<void(const absl::Status&, const Tensor&)>;
  virtual ~Rendezvous() = default;
  virtual absl::Status Send(const std::string& key, const Tensor& value) = 0;
  virtual void RecvAsync(const std::string& key, const RecvArgs& args, DoneCallback done) = 0;
  // A receive into host memory.
  void RecvAsync(const std::string& key, DoneCallback done) {
    RecvAsync(key, RecvArgs(), std::move(done));
  }
  virtual void StartAbort(const absl::Status& status) = 0;
  // Calls `fn` once with the abort status when the rendezvous is aborted or destroyed (at once
  // when it already is aborted). For kernels that wait on something other than a tensor (a
  // queue, a gradient accumulator), so that an aborted step never leaves them waiting; `fn`
  // must do nothing once the kernel has finished.
  virtual void OnAbort(std::function<void(const absl::Status&)> fn) = 0;
};

// `value` in the memory `args` asks for: `value` itself when it is there already (always
// between host memories), else a copy into a tensor from args.allocator made by args.device.
// Errors: the allocation fails, or the device cannot copy between those memories.
absl::StatusOr<Tensor> ToReceiverMemory(const Tensor& value, const RecvArgs& args);

// "src_device;incarnation(hex);dst_device;tensor_name;0:0".
std::string RendezvousKey(const std::string& src_device, uint64_t src_incarnation,
                          const std::string& dst_device, const std::string& tensor_name);

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_RENDEZVOUS_H_
