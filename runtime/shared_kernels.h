// SharedKernels: the kernels one session's executors share (OpKernel::SharedAcrossExecutors,
// the random ops), keyed by device, node name, op and attrs.
//
// A session builds one executor per (feeds, fetches, targets) signature, each with kernels of
// its own. A seeded random op's kernel holds its generator, so without sharing, fetching it
// through a second signature would replay the first draws. TensorFlow's DirectSession shares
// stateful kernels per session (OpSegment); this does the same for the kernels that ask for it.
// A node redefined with other attrs (a new graph under the same session) gets a new kernel.
//
//   SharedKernels shared;   // one per session
//   auto ex = Executor::Create(std::move(graph), device, &shared);
//
// Thread safety: FindOrAdd may be called from several threads.
#ifndef SHARDFLOW_RUNTIME_SHARED_KERNELS_H_
#define SHARDFLOW_RUNTIME_SHARED_KERNELS_H_

#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "core/framework/op_kernel.h"

namespace shardflow {

class SharedKernels {
 public:
  // The kernel already shared for `def` on `device`, or `kernel` (now shared) if none is.
  std::shared_ptr<OpKernel> FindOrAdd(const std::string& device, const NodeDef& def,
                                      std::shared_ptr<OpKernel> kernel);

 private:
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<OpKernel>> kernels_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_SHARED_KERNELS_H_
