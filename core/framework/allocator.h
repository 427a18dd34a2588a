// Allocator: where tensor memory comes from.
//
// Every buffer is at least 64-byte aligned. A device owns its allocators; the CPU one is a
// process-wide caching allocator (large blocks are kept for reuse, so a step that allocates the
// same sizes every time does not page-fault fresh memory each step). A GPU allocator returns
// device memory and says so through IsHostMemory().
//
// Thread safety: every method may be called from any thread.
#ifndef SHARDFLOW_CORE_FRAMEWORK_ALLOCATOR_H_
#define SHARDFLOW_CORE_FRAMEWORK_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace shardflow {

struct AllocatorStats {
  int64_t num_allocs = 0;
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  // Bytes held in the allocator's cache, free for reuse.
  int64_t bytes_cached = 0;
  // The most bytes that may be in use at once; 0 = no limit.
  int64_t bytes_limit = 0;
};

class Allocator {
 public:
  static constexpr size_t kAlignment = 64;

  virtual ~Allocator() = default;
  virtual std::string Name() const = 0;
  // Returns nullptr when the memory cannot be had; never throws. `alignment` is a power of two;
  // the result is aligned to max(alignment, kAlignment). num_bytes may be 0.
  virtual void* AllocateRaw(size_t alignment, size_t num_bytes) = 0;
  // `num_bytes` must be the size passed to the AllocateRaw that returned `ptr`.
  virtual void DeallocateRaw(void* ptr, size_t num_bytes) = 0;
  virtual AllocatorStats GetStats() const = 0;
  // Whether the CPU can read and write the memory directly.
  virtual bool IsHostMemory() const { return true; }
  // Copies between two buffers of this allocator (a device allocator enqueues the copy on its
  // device's stream, ordered before any later kernel of that device).
  virtual void CopyBytes(void* dst, const void* src, size_t num_bytes);
};

// The process-wide CPU allocator. Never null; lives for the whole process. It refuses (returns
// nullptr for) an allocation that would take its bytes in use past its limit, so that one
// request cannot make a server allocate more memory than the machine has.
Allocator* CpuAllocator();

// The CPU allocator's limit on bytes in use. The default is 90% of the machine's physical
// memory. `bytes` <= 0 restores the default. Allocations already made are not affected.
void SetCpuMemoryLimit(int64_t bytes);
int64_t CpuMemoryLimit();

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_ALLOCATOR_H_
