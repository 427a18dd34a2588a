#include "runtime/gpu/gpu_device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/platform/status.h"
#include "runtime/device_factory.h"

namespace shardflow {
namespace {

absl::Status Cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("CUDA error ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ") in ", what));
}

size_t RoundUp(size_t n) {
  constexpr size_t kSmall = 512, kLarge = size_t{1} << 20;
  if (n == 0) n = 1;
  const size_t unit = n < kLarge ? kSmall : kLarge;
  return (n + unit - 1) / unit * unit;
}

}  // namespace

// ---- GpuAllocator ------------------------------------------------------------------------------

GpuAllocator::GpuAllocator(int ordinal, cudaStream_t stream, int64_t limit_bytes)
    : ordinal_(ordinal), stream_(stream), limit_(limit_bytes) {
  stats_.bytes_limit = limit_bytes;
}

GpuAllocator::~GpuAllocator() {
  absl::MutexLock lock(&mu_);
  ReleaseCacheLocked();
}

std::string GpuAllocator::Name() const { return absl::StrCat("gpu_", ordinal_); }

void GpuAllocator::ReleaseCacheLocked() {
  if (free_.empty()) return;
  // Work queued before these blocks were freed may still use them.
  cudaStreamSynchronize(stream_);
  for (auto& [size, ptr] : free_) {
    cudaFree(ptr);
    stats_.bytes_cached -= static_cast<int64_t>(size);
  }
  free_.clear();
}

void* GpuAllocator::AllocateRaw(size_t alignment, size_t num_bytes) {
  // cudaMalloc returns 256-byte aligned memory; more is never asked of device memory.
  if (alignment > 256) return nullptr;
  if (num_bytes > (size_t{1} << 50)) return nullptr;
  const size_t size = RoundUp(num_bytes);
  absl::MutexLock lock(&mu_);
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first - size <= it->first / 4) {
    void* ptr = it->second;
    const size_t block = it->first;
    free_.erase(it);
    used_[ptr] = block;
    stats_.bytes_cached -= static_cast<int64_t>(block);
    stats_.bytes_in_use += static_cast<int64_t>(block);
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    ++stats_.num_allocs;
    return ptr;
  }
  const int64_t held = stats_.bytes_in_use + stats_.bytes_cached;
  if (held + static_cast<int64_t>(size) > limit_) ReleaseCacheLocked();
  if (stats_.bytes_in_use + static_cast<int64_t>(size) > limit_) return nullptr;
  cudaSetDevice(ordinal_);
  void* ptr = nullptr;
  if (cudaMalloc(&ptr, size) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state of this thread
    ReleaseCacheLocked();
    if (cudaMalloc(&ptr, size) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
  }
  used_[ptr] = size;
  stats_.bytes_in_use += static_cast<int64_t>(size);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocs;
  return ptr;
}

void GpuAllocator::DeallocateRaw(void* ptr, size_t num_bytes) {
  if (ptr == nullptr) return;
  absl::MutexLock lock(&mu_);
  auto it = used_.find(ptr);
  if (it == used_.end()) {
    std::fprintf(stderr, "shardflow: %s: freeing %p, which it did not allocate\n", Name().c_str(),
                 ptr);
    std::abort();
  }
  const size_t block = it->second;
  used_.erase(it);
  stats_.bytes_in_use -= static_cast<int64_t>(block);
  stats_.bytes_cached += static_cast<int64_t>(block);
  free_.emplace(block, ptr);
}

AllocatorStats GpuAllocator::GetStats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void GpuAllocator::CopyBytes(void* dst, const void* src, size_t num_bytes) {
  cudaMemcpyAsync(dst, src, num_bytes, cudaMemcpyDeviceToDevice, stream_);
}

// ---- PinnedStaging -----------------------------------------------------------------------------

PinnedStaging::~PinnedStaging() {
  absl::MutexLock lock(&mu_);
  cudaStreamSynchronize(stream_);
  for (std::vector<Block>* list : {&free_, &in_flight_}) {
    for (Block& b : *list) {
      cudaEventDestroy(b.done);
      cudaFreeHost(b.ptr);
    }
  }
}

bool PinnedStaging::CopyToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes > kMaxPinnedBytes / 4) return false;
  Block block;
  {
    absl::MutexLock lock(&mu_);
    // Buffers whose copies have finished are free again.
    for (size_t i = 0; i < in_flight_.size();) {
      if (cudaEventQuery(in_flight_[i].done) == cudaSuccess) {
        free_.push_back(in_flight_[i]);
        in_flight_[i] = in_flight_.back();
        in_flight_.pop_back();
      } else {
        ++i;
      }
    }
    cudaGetLastError();  // cudaErrorNotReady from the queries is not an error
    // The smallest free buffer that fits.
    int best = -1;
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].size >= bytes && (best < 0 || free_[i].size < free_[best].size)) {
        best = static_cast<int>(i);
      }
    }
    if (best >= 0) {
      block = free_[best];
      free_[best] = free_.back();
      free_.pop_back();
    } else {
      const size_t size = std::max<size_t>((bytes + 65535) / 65536 * 65536, 65536);
      if (pinned_bytes_ + size > kMaxPinnedBytes) return false;
      if (cudaHostAlloc(&block.ptr, size, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        return false;
      }
      if (cudaEventCreateWithFlags(&block.done, cudaEventDisableTiming) != cudaSuccess) {
        cudaGetLastError();
        cudaFreeHost(block.ptr);
        return false;
      }
      block.size = size;
      pinned_bytes_ += size;
    }
  }
  std::memcpy(block.ptr, src, bytes);
  const bool ok =
      cudaMemcpyAsync(dst, block.ptr, bytes, cudaMemcpyHostToDevice, stream_) == cudaSuccess &&
      cudaEventRecord(block.done, stream_) == cudaSuccess;
  absl::MutexLock lock(&mu_);
  if (!ok) {
    cudaGetLastError();
    // The copy may not have been enqueued: wait so the buffer is surely unused, then retry
    // directly (the caller does).
    cudaStreamSynchronize(stream_);
    free_.push_back(block);
    return false;
  }
  in_flight_.push_back(block);
  return true;
}

// ---- StreamTimer -------------------------------------------------------------------------------

StreamTimer::~StreamTimer() {
  absl::MutexLock lock(&mu_);
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}

void StreamTimer::Begin() {
  mu_.Lock();
  begin_error_ = cudaSuccess;
  if (start_ == nullptr) begin_error_ = cudaEventCreate(&start_);
  if (begin_error_ == cudaSuccess && stop_ == nullptr) begin_error_ = cudaEventCreate(&stop_);
  if (begin_error_ == cudaSuccess) begin_error_ = cudaEventRecord(start_, stream_);
}

absl::StatusOr<int64_t> StreamTimer::End() {
  cudaError_t e = begin_error_;
  if (e == cudaSuccess) e = cudaEventRecord(stop_, stream_);
  if (e == cudaSuccess) e = cudaEventSynchronize(stop_);
  float ms = 0;
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start_, stop_);
  mu_.Unlock();
  if (e != cudaSuccess) return Cuda(e, "timing a kernel on the GPU stream");
  return static_cast<int64_t>(ms * 1000.0f + 0.5f);
}

// ---- GpuDevice ---------------------------------------------------------------------------------

GpuDevice::GpuDevice(const std::string& name, int ordinal, GpuAllocator* allocator,
                     cudaStream_t stream, cudaStream_t d2h_stream, PinnedStaging* staging,
                     StreamTimer* timer, int64_t memory_limit, bool allow_tf32)
    : Device(DeviceAttributes{name, kDeviceGpu, memory_limit}),
      ordinal_(ordinal),
      allocator_(allocator),
      stream_(stream),
      d2h_stream_(d2h_stream),
      staging_(staging),
      timer_(timer),
      allow_tf32_(allow_tf32),
      pool_(absl::StrCat(name, "/inter"), 2, [ordinal] { cudaSetDevice(ordinal); }) {}

GpuDevice::~GpuDevice() {
  // Kernels of this device's last steps may still be queued on the shared stream; the variables
  // freed with resources_ must not be reused before they finish.
  cudaStreamSynchronize(stream_);
}

void GpuDevice::Schedule(std::function<void()> fn) { pool_.Schedule(std::move(fn)); }

absl::Status GpuDevice::Sync() { return Cuda(cudaStreamSynchronize(stream_), "Sync"); }

absl::Status GpuDevice::CopyTensor(const Tensor& src, Tensor* dst) {
  if (src.dtype() != dst->dtype() || src.shape() != dst->shape()) {
    return absl::InternalError(
        absl::StrCat("CopyTensor of a ", src.DebugString(0), " into a ", dst->DebugString(0)));
  }
  if (src.dtype() == DT_STRING) {
    if (IsHostTensor(src) && IsHostTensor(*dst)) return DeviceBase::CopyTensor(src, dst);
    return absl::InvalidArgumentError(
        absl::StrCat("a ", DataTypeString(src.dtype()),
                     " tensor cannot be in GPU memory; its ops run on the "
                     "CPU (or keep it in host memory)"));
  }
  const size_t bytes = src.TotalBytes();
  if (bytes == 0) return absl::OkStatus();
  const bool to_host = IsHostTensor(*dst);
  const bool from_host = IsHostTensor(src);
  cudaSetDevice(ordinal_);
  if (to_host && !from_host) {
    // Device to host on the GPU's copy stream: it waits (an event) for the work queued on the
    // compute stream so far, then the copy runs on a copy engine while kernels queued after it
    // go on; the host waits for the copy alone.
    cudaEvent_t ready;
    SF_RETURN_IF_ERROR(
        Cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate"));
    cudaError_t e = cudaEventRecord(ready, stream_);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(d2h_stream_, ready, 0);
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(dst->raw_data(), src.raw_data(), bytes, cudaMemcpyDeviceToHost,
                          d2h_stream_);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(d2h_stream_);
    cudaEventDestroy(ready);
    return Cuda(e, "copying a tensor to the host");
  }
  // From the host: staged through pinned memory, enqueued without waiting for the stream. The
  // copy stays on the compute stream: the block it writes may still be read by kernels queued
  // there before it was freed (the allocator's reuse is ordered by that stream), so a copy
  // stream would have to wait for the compute stream anyway.
  if (from_host && !to_host && staging_->CopyToDevice(dst->raw_data(), src.raw_data(), bytes)) {
    return absl::OkStatus();
  }
  SF_RETURN_IF_ERROR(
      Cuda(cudaMemcpyAsync(dst->raw_data(), src.raw_data(), bytes, cudaMemcpyDefault, stream_),
           "cudaMemcpyAsync"));
  // Into host memory: the reader is the CPU, right after this returns. From pageable host
  // memory the copy may still read the source after cudaMemcpyAsync returns.
  if (to_host || from_host) {
    SF_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "copying a tensor to the host"));
  }
  return absl::OkStatus();
}

namespace {

// One physical GPU's process-wide state.
struct GpuState {
  int ordinal = 0;
  cudaStream_t stream = nullptr;
  cudaStream_t d2h_stream = nullptr;  // device-to-host copies
  std::unique_ptr<GpuAllocator> allocator;
  std::unique_ptr<PinnedStaging> staging;
  std::unique_ptr<StreamTimer> timer;
  int64_t limit = 0;
};

absl::Mutex states_mu(absl::kConstInit);
std::map<int, GpuState*>& States() {
  static auto* states = new std::map<int, GpuState*>;
  return *states;
}

absl::StatusOr<GpuState*> StateFor(int ordinal, const GPUOptions& options) {
  absl::MutexLock lock(&states_mu);
  auto it = States().find(ordinal);
  if (it != States().end()) return it->second;
  SF_RETURN_IF_ERROR(Cuda(cudaSetDevice(ordinal), "cudaSetDevice"));
  size_t free_bytes = 0, total_bytes = 0;
  SF_RETURN_IF_ERROR(Cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  int64_t limit;
  if (options.memory_limit_mb() > 0) {
    limit = std::min<int64_t>(options.memory_limit_mb(), int64_t{1} << 30) << 20;
  } else {
    double fraction = options.per_process_gpu_memory_fraction() > 0
                          ? options.per_process_gpu_memory_fraction()
                          : 0.9;
    limit = static_cast<int64_t>(fraction * static_cast<double>(free_bytes));
  }
  auto* state = new GpuState;
  state->ordinal = ordinal;
  state->limit = limit;
  SF_RETURN_IF_ERROR(
      Cuda(cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  SF_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&state->d2h_stream, cudaStreamNonBlocking),
                          "cudaStreamCreate(device to host)"));
  state->allocator = std::make_unique<GpuAllocator>(ordinal, state->stream, limit);
  state->staging = std::make_unique<PinnedStaging>(state->stream);
  state->timer = std::make_unique<StreamTimer>(state->stream);
  States()[ordinal] = state;
  return state;
}

absl::StatusOr<std::vector<int>> VisibleOrdinals(const GPUOptions& options, int count) {
  std::vector<int> ordinals;
  if (options.visible_device_list().empty()) {
    for (int i = 0; i < count; ++i) ordinals.push_back(i);
    return ordinals;
  }
  for (absl::string_view part : absl::StrSplit(options.visible_device_list(), ',')) {
    int id;
    if (!absl::SimpleAtoi(part, &id) || id < 0 || id >= count ||
        std::find(ordinals.begin(), ordinals.end(), id) != ordinals.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gpu_options.visible_device_list is \"", options.visible_device_list(), "\": '", part,
          "' is not a distinct GPU ordinal below ", count,
          " (this process sees that many GPUs; CUDA_VISIBLE_DEVICES may hide others)"));
    }
    ordinals.push_back(id);
  }
  return ordinals;
}

class GpuDeviceFactory final : public DeviceFactory {
 public:
  absl::Status AddDevices(const SessionOptionsProto& options, const std::string& job, int task,
                          std::vector<std::unique_ptr<Device>>* devices) override {
    if (options.gpu_device_count() < 0) return absl::OkStatus();
    const GPUOptions& gpu = options.gpu_options();
    if (gpu.virtual_devices_per_gpu() < 0 || gpu.virtual_devices_per_gpu() > 64) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpu_options.virtual_devices_per_gpu is ", gpu.virtual_devices_per_gpu(),
                       "; give 0 or 1 (one device per GPU) up to 64"));
    }
    if (gpu.per_process_gpu_memory_fraction() < 0 || gpu.per_process_gpu_memory_fraction() > 1 ||
        gpu.memory_limit_mb() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gpu_options: per_process_gpu_memory_fraction must be in [0, 1] and memory_limit_mb "
          ">= 0; got ",
          gpu.per_process_gpu_memory_fraction(), " and ", gpu.memory_limit_mb()));
    }
    int count = 0;
    // No driver, no device: a machine without a GPU has no GPU devices, and that is fine.
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();
      return absl::OkStatus();
    }
    SF_ASSIGN_OR_RETURN(std::vector<int> ordinals, VisibleOrdinals(gpu, count));
    const char* env = std::getenv("SHARDFLOW_GPU_TF32");
    const bool tf32 = gpu.allow_tf32() || (env != nullptr && std::string(env) == "1");
    const int per_gpu = std::max(1, gpu.virtual_devices_per_gpu());
    int index = 0;
    for (int ordinal : ordinals) {
      SF_ASSIGN_OR_RETURN(GpuState * state, StateFor(ordinal, gpu));
      for (int v = 0; v < per_gpu; ++v) {
        if (options.gpu_device_count() > 0 && index >= options.gpu_device_count()) break;
        devices->push_back(std::make_unique<GpuDevice>(
            DeviceName::Full(job, 0, task, kDeviceGpu, index).ToString(), ordinal,
            state->allocator.get(), state->stream, state->d2h_stream, state->staging.get(),
            state->timer.get(), state->limit, tf32));
        ++index;
      }
    }
    return absl::OkStatus();
  }
};

REGISTER_DEVICE_FACTORY(kDeviceGpu, GpuDeviceFactory, kGpuDeviceFactoryPriority);

}  // namespace
}  // namespace shardflow
