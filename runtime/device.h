// Device: a place where kernels run, with its memory, its inter-op threads and its intra-op
// budget. The executor only talks to this interface, so GPU and remote devices fit without
// changing it.
//
// Thread safety: every method may be called concurrently.
#ifndef SHARDFLOW_RUNTIME_DEVICE_H_
#define SHARDFLOW_RUNTIME_DEVICE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/device_base.h"
#include "core/framework/resource_mgr.h"
#include "core/platform/threadpool.h"
#include "core/protos/config.pb.h"

namespace shardflow {

class Device : public DeviceBase {
 public:
  using DeviceBase::DeviceBase;
  // Runs `fn` on one of the device's inter-op threads.
  virtual void Schedule(std::function<void()> fn) = 0;
  // Expensive synchronous kernels run between these two calls. A device whose kernels each use
  // its whole intra-op budget admits only as many at a time as the cores allow, so concurrent
  // expensive ops queue instead of oversubscribing the cores (two 2-thread OpenMP teams on two
  // cores run far slower than one after the other).
  virtual void AcquireComputeSlot() {}
  virtual void ReleaseComputeSlot() {}
  // How many expensive kernels may run at once (a large number when unlimited).
  virtual int compute_slots() const { return 1 << 20; }
};

// A CPU device: tensors in host memory, `inter_op_threads` workers for independent ops and
// `intra_op_threads` for one op (the ParallelFor caller counts as one of them, and OpenMP-based
// oneDNN kernels are told the same number).
class CpuDevice final : public Device {
 public:
  // `compute_slots`: expensive kernels allowed to run at once (see AcquireComputeSlot).
  CpuDevice(const std::string& name, int inter_op_threads, int intra_op_threads,
            int compute_slots = 1);
  ~CpuDevice() override;
  Allocator* GetAllocator() override { return CpuAllocator(); }
  void Schedule(std::function<void()> fn) override { inter_op_pool_.Schedule(std::move(fn)); }
  ResourceMgr* resource_manager() override { return &resources_; }
  void AcquireComputeSlot() override;
  void ReleaseComputeSlot() override;
  int compute_slots() const override { return compute_slots_; }

 private:
  ResourceMgr resources_;
  const int compute_slots_;
  absl::Mutex slots_mu_;
  int free_slots_ ABSL_GUARDED_BY(slots_mu_);
  ThreadPool inter_op_pool_;
  std::unique_ptr<ThreadPool> intra_op_pool_;
};

// The thread budget the machine allows, from std::thread::hardware_concurrency().
int NumHardwareThreads();

// CPU devices are made by the "CPU" device factory (runtime/device_factory.h): task (job, task)
// gets "/job:JOB/replica:0/task:TASK/device:CPU:i" for i below config.cpu_device_count (at least
// one). With several CPU devices the cores are split between them so their threads do not
// oversubscribe the machine. Its priority is kCpuDeviceFactoryPriority.
inline constexpr int kCpuDeviceFactoryPriority = 50;

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_DEVICE_H_
