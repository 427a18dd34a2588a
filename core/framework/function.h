// FunctionLibrary: how a kernel calls a graph function — the cond and body of a While.
//
//   SF_ASSIGN_OR_RETURN(FunctionLibrary::Handle h,
//                       ctx->function_library()->Instantiate(body, device_name));
//   ctx->function_library()->Run(h, *ctx->call_options(), args, &rets, done);
//
// A function (GraphFunction, core/protos/graph.proto) is a graph whose arguments feed named
// Placeholders and whose results are named tensors. The library places it on the devices of
// this process (nodes without a device go to `default_device`, so a body runs where its loop
// runs unless it asks otherwise), partitions it with _Send/_Recv between those devices, and
// runs each call as a small step of its own: its own rendezvous, the caller's step id, trace
// and cancellation. The runtime implements it (runtime/function_runtime.h); kernels only see
// this interface.
//
// Contracts: Instantiate is cached (the same function and device give the same handle) and
// thread-safe; Run's `done` is called exactly once, possibly on the calling thread before Run
// returns; `rets` is filled before `done`. A call that fails names the function's node.
#ifndef SHARDFLOW_CORE_FRAMEWORK_FUNCTION_H_
#define SHARDFLOW_CORE_FRAMEWORK_FUNCTION_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/tensor.h"
#include "core/protos/graph.pb.h"

namespace shardflow {

class CollectiveExecutor;
class StepStatsCollector;  // runtime/step_stats_collector.h; passed through, never used here

// What a call inherits from the step that makes it.
struct FunctionCallOptions {
  int64_t step_id = 0;
  StepStatsCollector* stats = nullptr;  // null = no tracing
  CollectiveExecutor* collective_executor = nullptr;
  std::shared_ptr<std::atomic<bool>> cancelled;  // may be null
  bool check_numerics = false;
};

class FunctionLibrary {
 public:
  using Handle = int64_t;
  using DoneCallback = std::function<void(const absl::Status&)>;
  virtual ~FunctionLibrary() = default;

  // Errors: a malformed graph, an argument or result that names no tensor, a node that cannot
  // be placed on this process's devices.
  virtual absl::StatusOr<Handle> Instantiate(const GraphFunction& function,
                                             const std::string& default_device) = 0;
  // `args` in the order of the function's `arg`; the results land in `rets` in `ret` order.
  virtual void Run(Handle handle, const FunctionCallOptions& options, std::vector<Tensor> args,
                   std::vector<Tensor>* rets, DoneCallback done) = 0;
};

// The handles of a kernel's functions (While's cond and body, If's branches), instantiated
// the first time each is needed and kept for the library that made them: the library's own
// cache keys on the serialized function, too slow to consult on every call. Thread-safe.
class KernelFunctions {
 public:
  explicit KernelFunctions(std::vector<GraphFunction> functions)
      : functions_(std::move(functions)), handles_(functions_.size(), -1) {}

  const GraphFunction& function(size_t i) const { return functions_[i]; }

  // Function `i` instantiated through `lib` on `device`.
  absl::StatusOr<FunctionLibrary::Handle> Get(FunctionLibrary* lib, size_t i,
                                              const std::string& device) {
    {
      absl::MutexLock lock(&mu_);
      if (lib_ != lib) {
        lib_ = lib;
        std::fill(handles_.begin(), handles_.end(), -1);
      }
      if (handles_[i] >= 0) return handles_[i];
    }
    absl::StatusOr<FunctionLibrary::Handle> h = lib->Instantiate(functions_[i], device);
    if (!h.ok()) return h.status();
    absl::MutexLock lock(&mu_);
    if (lib_ == lib) handles_[i] = *h;
    return *h;
  }

 private:
  const std::vector<GraphFunction> functions_;
  absl::Mutex mu_;
  FunctionLibrary* lib_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<FunctionLibrary::Handle> handles_ ABSL_GUARDED_BY(mu_);  // -1: not yet
};

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_FUNCTION_H_
