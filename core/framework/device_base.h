// DeviceBase: what a kernel may know about the device it runs on.
//
// Kernels see only this interface; the runtime's Device (runtime/device.h) derives from it and
// adds what the executor needs. A GPU device returns device memory from GetAllocator(), host
// (pinned) memory from GetHostAllocator(), and exposes its stream through gpu_stream().
//
// Thread safety: all methods may be called concurrently by kernels of one step and of several.
#ifndef SHARDFLOW_CORE_FRAMEWORK_DEVICE_BASE_H_
#define SHARDFLOW_CORE_FRAMEWORK_DEVICE_BASE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/framework/allocator.h"
#include "core/framework/device_name.h"
#include "core/framework/tensor.h"

namespace shardflow {

class ResourceMgr;
class ThreadPool;

struct DeviceAttributes {
  std::string name;                // full name, "/job:localhost/replica:0/task:0/device:CPU:0"
  std::string device_type;         // "CPU", "GPU"
  int64_t memory_limit_bytes = 0;  // 0 = no stated limit
};

class DeviceBase {
 public:
  explicit DeviceBase(DeviceAttributes attributes);
  virtual ~DeviceBase();

  const DeviceAttributes& attributes() const { return attributes_; }
  const std::string& name() const { return attributes_.name; }
  const std::string& device_type() const { return attributes_.device_type; }
  const DeviceName& parsed_name() const { return parsed_name_; }

  // Memory for tensors this device's kernels produce.
  virtual Allocator* GetAllocator() = 0;
  // Host memory usable by this device (pinned for a GPU).
  virtual Allocator* GetHostAllocator() { return CpuAllocator(); }

  // Copies `src` into `dst` (same dtype and shape, allocated), where either may be in this
  // device's memory or in host memory: a received tensor into the memory its receiver wants, a
  // device tensor to the host for a host-memory kernel input. The default copies between host
  // memories and is UNIMPLEMENTED for anything else; devices with memory of their own override
  // it.
  virtual absl::Status CopyTensor(const Tensor& src, Tensor* dst);

  // Threads a kernel may use for one op (ParallelFor); null means run serially. Borrowed.
  ThreadPool* intra_op_pool() const { return intra_op_pool_; }
  // The thread budget one op may use (oneDNN/OpenMP are told the same number).
  int intra_op_threads() const { return intra_op_threads_; }

  // The device's compute stream (a cudaStream_t) for GPU devices; null elsewhere.
  virtual void* gpu_stream() const { return nullptr; }
  // GPU devices: float32 matrix products and convolutions may use TF32 tensor cores.
  virtual bool allow_tf32() const { return false; }
  // Waits until work queued on the device (e.g. a GPU stream) has finished.
  virtual absl::Status Sync() { return absl::OkStatus(); }
  // Kernel timing for traced steps on a device with a queue of its own (a GPU stream). The
  // executor calls BeginKernelTiming before a kernel enqueues its work and EndKernelTiming right
  // after, on the same thread; no other timed kernel of the device enqueues in between (the
  // device holds a lock from Begin to End). EndKernelTiming waits for that work and returns how
  // long it ran on the device, in microseconds; -1 where the device has no queue to time.
  virtual void BeginKernelTiming() {}
  virtual absl::StatusOr<int64_t> EndKernelTiming() { return -1; }

  // State that outlives steps (variables). Never null for devices that run stateful kernels.
  virtual ResourceMgr* resource_manager() { return nullptr; }

 protected:
  void set_intra_op(ThreadPool* pool, int threads) {
    intra_op_pool_ = pool;
    intra_op_threads_ = threads;
  }

 private:
  DeviceAttributes attributes_;
  DeviceName parsed_name_;
  ThreadPool* intra_op_pool_ = nullptr;
  int intra_op_threads_ = 1;
};

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_DEVICE_BASE_H_
