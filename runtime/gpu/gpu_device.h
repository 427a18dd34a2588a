// GPU devices (CUDA): "/job:J/replica:0/task:T/device:GPU:i", one per visible GPU (or several
// logical ones per GPU, gpu_options.virtual_devices_per_gpu), made by the "GPU" device factory,
// whose priority is above the CPU's so that the placer's default puts every op with a GPU kernel
// on GPU:0 (docs/gpu.md).
//
// Per physical GPU, for the whole process (every session and logical device on it shares them):
// - a caching best-fit allocator over cudaMalloc with a byte limit (GpuAllocator below);
// - one compute stream, on which every kernel and every copy into the GPU is enqueued, so stream
//   order alone orders them: a kernel sees what earlier kernels wrote, and memory freed by the
//   host after a launch is only reused by work queued behind it. The executor thread does not
//   wait for kernels; only copies to the host (fetches, sends to the CPU or another task, host-
//   memory inputs) wait, for the work queued before them: they run on a copy stream of their
//   own, after an event on the compute stream, so later kernels go on meanwhile.
//
// Thread safety: every method may be called concurrently.
#ifndef SHARDFLOW_RUNTIME_GPU_GPU_DEVICE_H_
#define SHARDFLOW_RUNTIME_GPU_GPU_DEVICE_H_

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "runtime/device.h"

namespace shardflow {

// Device memory of one GPU. Blocks are cudaMalloc'ed in sizes rounded up (to 512 bytes below
// 1 MiB, to 1 MiB above) and kept when freed; a request takes the smallest cached block that
// fits and wastes at most a quarter of it. When a request would take the memory held (in use
// plus cached) past the limit, or cudaMalloc fails, the cache is released (after the stream
// drains) and the request retried; it then fails with nullptr, which the caller reports with
// the bytes and the limit.
class GpuAllocator final : public Allocator {
 public:
  GpuAllocator(int ordinal, cudaStream_t stream, int64_t limit_bytes);
  ~GpuAllocator() override;
  std::string Name() const override;
  void* AllocateRaw(size_t alignment, size_t num_bytes) override;
  void DeallocateRaw(void* ptr, size_t num_bytes) override;
  AllocatorStats GetStats() const override;
  bool IsHostMemory() const override { return false; }
  void CopyBytes(void* dst, const void* src, size_t num_bytes) override;

 private:
  void ReleaseCacheLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const int ordinal_;
  const cudaStream_t stream_;
  const int64_t limit_;
  mutable absl::Mutex mu_;
  std::multimap<size_t, void*> free_ ABSL_GUARDED_BY(mu_);       // size -> block
  std::unordered_map<void*, size_t> used_ ABSL_GUARDED_BY(mu_);  // block -> size
  AllocatorStats stats_ ABSL_GUARDED_BY(mu_);
};

// Pinned host buffers that stage host-to-device copies, so that a copy from host memory is
// enqueued without waiting for the stream (cudaMemcpyAsync from pageable memory first waits for
// the stream to drain). A buffer is reused once the event recorded after its copy has completed.
class PinnedStaging {
 public:
  explicit PinnedStaging(cudaStream_t stream) : stream_(stream) {}
  ~PinnedStaging();
  // Copies `bytes` from host `src` to device `dst` on the stream through a pinned buffer. False
  // when no buffer can be had (the caller then copies directly).
  bool CopyToDevice(void* dst, const void* src, size_t bytes);

 private:
  struct Block {
    void* ptr = nullptr;
    size_t size = 0;
    cudaEvent_t done = nullptr;
  };
  static constexpr size_t kMaxPinnedBytes = size_t{512} << 20;
  const cudaStream_t stream_;
  absl::Mutex mu_;
  std::vector<Block> free_ ABSL_GUARDED_BY(mu_);
  std::vector<Block> in_flight_ ABSL_GUARDED_BY(mu_);
  size_t pinned_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Times kernels on one GPU's stream for traced steps (Device::BeginKernelTiming and
// EndKernelTiming): Begin takes a lock and records an event, End records a second one, waits for
// it and releases the lock, so no other timed kernel of the GPU (of any of its logical devices)
// enqueues work in between and the time between the events is the kernel's own.
class StreamTimer {
 public:
  explicit StreamTimer(cudaStream_t stream) : stream_(stream) {}
  ~StreamTimer();
  void Begin() ABSL_EXCLUSIVE_LOCK_FUNCTION(mu_);
  absl::StatusOr<int64_t> End() ABSL_UNLOCK_FUNCTION(mu_);

 private:
  const cudaStream_t stream_;
  absl::Mutex mu_;
  cudaEvent_t start_ ABSL_GUARDED_BY(mu_) = nullptr;
  cudaEvent_t stop_ ABSL_GUARDED_BY(mu_) = nullptr;
  cudaError_t begin_error_ ABSL_GUARDED_BY(mu_) = cudaSuccess;
};

class GpuDevice final : public Device {
 public:
  // `ordinal`: the CUDA device; the allocator and stream are the GPU's shared ones.
  // `d2h_stream`: the GPU's stream for copies to the host.
  GpuDevice(const std::string& name, int ordinal, GpuAllocator* allocator, cudaStream_t stream,
            cudaStream_t d2h_stream, PinnedStaging* staging, StreamTimer* timer,
            int64_t memory_limit, bool allow_tf32);
  ~GpuDevice() override;
  Allocator* GetAllocator() override { return allocator_; }
  void* gpu_stream() const override { return stream_; }
  bool allow_tf32() const override { return allow_tf32_; }
  // Host<->device and device<->device copies on the compute stream; a copy into host memory
  // waits for it.
  absl::Status CopyTensor(const Tensor& src, Tensor* dst) override;
  void Schedule(std::function<void()> fn) override;
  ResourceMgr* resource_manager() override { return &resources_; }
  absl::Status Sync() override;
  void BeginKernelTiming() override { timer_->Begin(); }
  absl::StatusOr<int64_t> EndKernelTiming() override { return timer_->End(); }
  int ordinal() const { return ordinal_; }

 private:
  const int ordinal_;
  GpuAllocator* allocator_;
  cudaStream_t stream_;
  cudaStream_t d2h_stream_;
  PinnedStaging* staging_;
  StreamTimer* timer_;
  const bool allow_tf32_;
  ResourceMgr resources_;
  ThreadPool pool_;
};

// Above the CPU's (kCpuDeviceFactoryPriority): ops with a GPU kernel go to the GPU by default.
inline constexpr int kGpuDeviceFactoryPriority = 100;

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_GPU_GPU_DEVICE_H_
