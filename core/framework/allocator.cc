#include "core/framework/allocator.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace shardflow {
namespace {

// Blocks of at least kCacheMin bytes are cached after release, bucketed by size rounded up to a
// quarter power of two. Smaller blocks go straight to malloc, which is fast for them and does not
// return them to the kernel. The cache has no size of its own: it holds whatever the process
// freed while bytes in use plus bytes cached stay under the memory limit, and gives blocks back
// to malloc when a fresh block would pass it. A bounded cache (2 GiB until 2026-11-29) made every
// step of a model whose activations pass it (ResNet-50 training, batch 32: 3.7 GB) fault ~1.6 GB
// of fresh pages, a fifth of the step (docs/benchmarks.md, "Issue 16, later the same day").
constexpr size_t kCacheMin = 64 << 10;

// Larger requests are refused before any arithmetic on them (RoundBucket cannot overflow below).
constexpr size_t kMaxRequest = size_t{1} << 60;

int64_t DefaultMemoryLimit() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{1} << 40;
  return static_cast<int64_t>(pages) * page_size / 10 * 9;
}

size_t RoundBucket(size_t n) {
  if (n < kCacheMin) return (n + Allocator::kAlignment - 1) & ~(Allocator::kAlignment - 1);
  size_t p = 1;
  while (p * 2 <= n) p *= 2;
  size_t quarter = p / 4;
  return (n + quarter - 1) / quarter * quarter;
}

class CachingCpuAllocator final : public Allocator {
 public:
  std::string Name() const override { return "cpu"; }

  void* AllocateRaw(size_t alignment, size_t num_bytes) override {
    if (num_bytes > kMaxRequest) return nullptr;
    if (alignment < kAlignment) alignment = kAlignment;
    size_t bucket = RoundBucket(num_bytes == 0 ? 1 : num_bytes);
    // Reserve the bytes first, so that concurrent allocations cannot pass the limit together.
    const int64_t limit = limit_.load(std::memory_order_relaxed);
    int64_t in_use = in_use_.fetch_add(bucket, std::memory_order_relaxed) + bucket;
    if (in_use > limit) {
      in_use_.fetch_sub(bucket, std::memory_order_relaxed);
      return nullptr;
    }
    void* ptr = nullptr;
    if (bucket >= kCacheMin && alignment <= 4096) {
      absl::MutexLock lock(&mu_);
      auto it = free_.find(bucket);
      if (it != free_.end() && !it->second.empty()) {
        ptr = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= bucket;
      }
    }
    if (ptr == nullptr) {
      if (bucket >= kCacheMin) ReleaseCacheAbove(limit - in_use);
      const size_t align = bucket >= kCacheMin ? 4096 : alignment;
      const size_t bytes = (bucket + alignment - 1) / alignment * alignment;
      ptr = std::aligned_alloc(align, bytes);
      if (ptr == nullptr) {
        // Cached blocks of other sizes may be what stands in the way.
        ReleaseCacheAbove(0);
        ptr = std::aligned_alloc(align, bytes);
      }
      if (ptr == nullptr) {
        in_use_.fetch_sub(bucket, std::memory_order_relaxed);
        return nullptr;
      }
    }
    num_allocs_.fetch_add(1, std::memory_order_relaxed);
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (in_use > peak && !peak_.compare_exchange_weak(peak, in_use)) {
    }
    return ptr;
  }

  void DeallocateRaw(void* ptr, size_t num_bytes) override {
    if (ptr == nullptr) return;
    size_t bucket = RoundBucket(num_bytes == 0 ? 1 : num_bytes);
    in_use_.fetch_sub(bucket, std::memory_order_relaxed);
    if (bucket >= kCacheMin) {
      absl::MutexLock lock(&mu_);
      free_[bucket].push_back(ptr);
      cached_bytes_ += bucket;
      return;
    }
    std::free(ptr);
  }

  void set_limit(int64_t bytes) { limit_.store(bytes); }
  int64_t limit() const { return limit_.load(); }

  AllocatorStats GetStats() const override {
    AllocatorStats s;
    s.num_allocs = num_allocs_.load();
    s.bytes_in_use = in_use_.load();
    s.peak_bytes_in_use = peak_.load();
    s.bytes_limit = limit_.load();
    absl::MutexLock lock(&mu_);
    s.bytes_cached = cached_bytes_;
    return s;
  }

 private:
  // Frees cached blocks, largest first, until at most `keep` bytes stay cached.
  void ReleaseCacheAbove(int64_t keep) {
    std::vector<void*> release;
    {
      absl::MutexLock lock(&mu_);
      if (cached_bytes_ <= keep) return;
      std::vector<size_t> buckets;
      for (const auto& [size, blocks] : free_) {
        if (!blocks.empty()) buckets.push_back(size);
      }
      std::sort(buckets.rbegin(), buckets.rend());
      for (size_t size : buckets) {
        std::vector<void*>& blocks = free_[size];
        while (!blocks.empty() && cached_bytes_ > keep) {
          release.push_back(blocks.back());
          blocks.pop_back();
          cached_bytes_ -= static_cast<int64_t>(size);
        }
        if (cached_bytes_ <= keep) break;
      }
    }
    for (void* p : release) std::free(p);
  }

  mutable absl::Mutex mu_;
  absl::flat_hash_map<size_t, std::vector<void*>> free_ ABSL_GUARDED_BY(mu_);
  int64_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> num_allocs_{0};
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> limit_{DefaultMemoryLimit()};
};

CachingCpuAllocator* TheCpuAllocator() {
  static CachingCpuAllocator* allocator = new CachingCpuAllocator();
  return allocator;
}

}  // namespace

void Allocator::CopyBytes(void* dst, const void* src, size_t num_bytes) {
  if (num_bytes > 0) std::memcpy(dst, src, num_bytes);
}

Allocator* CpuAllocator() { return TheCpuAllocator(); }

void SetCpuMemoryLimit(int64_t bytes) {
  TheCpuAllocator()->set_limit(bytes > 0 ? bytes : DefaultMemoryLimit());
}

int64_t CpuMemoryLimit() { return TheCpuAllocator()->limit(); }

}  // namespace shardflow
