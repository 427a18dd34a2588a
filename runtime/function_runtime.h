// FunctionRuntime: the FunctionLibrary (core/framework/function.h) over the devices of one
// process. The local session and every worker own one; their executors hand it to kernels, so a
// While runs its cond and body on the same devices as the step that runs it.
//
//   FunctionRuntime functions(device_ptrs, options.config);
//   exec_args.function_library = &functions;
//
// Instantiate places the function like a session places a graph (GraphExecutionState: the
// session's placement options, soft placement included), so a body that asks for
// "/device:CPU:1" runs its ops there and the rest where the loop runs, with _Send/_Recv between
// them. Each call gets a fresh in-process rendezvous and runs the partitions with
// ExecutorBarrier, as a step does; its kernels see this runtime again (a loop in a loop).
//
// Thread safety: all methods may be called concurrently. The devices must outlive the runtime,
// and the runtime every executor that may call it.
#ifndef SHARDFLOW_RUNTIME_FUNCTION_RUNTIME_H_
#define SHARDFLOW_RUNTIME_FUNCTION_RUNTIME_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/framework/function.h"
#include "core/protos/config.pb.h"
#include "runtime/device.h"
#include "runtime/executor.h"

namespace shardflow {

class FunctionRuntime final : public FunctionLibrary {
 public:
  FunctionRuntime(std::vector<Device*> devices, SessionOptionsProto config);
  ~FunctionRuntime() override;

  absl::StatusOr<Handle> Instantiate(const GraphFunction& function,
                                     const std::string& default_device) override;
  void Run(Handle handle, const FunctionCallOptions& options, std::vector<Tensor> args,
           std::vector<Tensor>* rets, DoneCallback done) override;

 private:
  struct Instance;
  absl::StatusOr<std::unique_ptr<Instance>> Build(const GraphFunction& function,
                                                  const std::string& default_device) const;

  const std::vector<Device*> devices_;
  const SessionOptionsProto config_;
  absl::Mutex mu_;
  std::map<std::string, Handle> handles_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Instance>> instances_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_FUNCTION_RUNTIME_H_
