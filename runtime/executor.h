// Executor: runs one graph on one device, step after step.
//
// The per-graph part (kernels, input slots, fan-out lists) is built once by Create and never
// changes; every RunAsync creates its own per-step state (pending counts, tensors in flight)
// that dies with the step, so several steps may run at once.
//
// Scheduling: a node becomes ready when its pending count (data + control inputs) reaches
// zero. Cheap kernels run inline on the thread that made them ready; expensive ones go to the
// device's inter-op threads, except that the last expensive one runs inline when nothing else
// would. The first error aborts the step: no further kernel starts, every registered abort hook
// runs (so pending Recvs return the error), and `done` gets the error prefixed with the node's
// name once all in-flight kernels have returned.
#ifndef SHARDFLOW_RUNTIME_EXECUTOR_H_
#define SHARDFLOW_RUNTIME_EXECUTOR_H_

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/function.h"
#include "core/framework/op_kernel.h"
#include "core/graph/graph.h"
#include "runtime/device.h"
#include "runtime/shared_kernels.h"
#include "runtime/step_stats_collector.h"

namespace shardflow {

class Executor {
 public:
  struct Args {
    int64_t step_id = 0;
    CallFrame* call_frame = nullptr;   // borrowed; feeds and fetches
    Rendezvous* rendezvous = nullptr;  // borrowed; Send/Recv between devices
    // Borrowed; collectives among groups of devices (core/framework/collective.h). Null = the
    // step has none, and a collective kernel fails naming that.
    CollectiveExecutor* collective_executor = nullptr;
    StepStatsCollector* stats = nullptr;  // borrowed; null = no tracing
    // Borrowed; runs graph functions (While). Null = the step has none.
    FunctionLibrary* function_library = nullptr;
    // Called once with the first error of the step (e.g. to abort a rendezvous).
    std::function<void(const absl::Status&)> on_abort;
    // Set to true to stop the step: no kernel starts afterwards and the step ends with
    // CANCELLED (unless it had already failed).
    std::shared_ptr<std::atomic<bool>> cancelled;
    // Fail the step at the first kernel output holding NaN or Inf (RunOptions.check_numerics).
    bool check_numerics = false;
  };
  using DoneCallback = std::function<void(const absl::Status&)>;

  // Takes ownership of `graph`; `device` is borrowed and must outlive the executor. Errors: a
  // cycle, an unconnected input, or a node without a kernel on the device.
  // `shared` (borrowed, may be null): the session's kernels that executors share
  // (OpKernel::SharedAcrossExecutors); it must outlive the executor.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(std::unique_ptr<Graph> graph,
                                                          Device* device,
                                                          SharedKernels* shared = nullptr);
  // The executor of one partition of a step (GraphExecutionState's plan): builds the graph
  // and assigns every node to `device`, then Create.
  static absl::StatusOr<std::unique_ptr<Executor>> CreateForPartition(
      const GraphDef& partition, Device* device, SharedKernels* shared = nullptr);
  ~Executor();

  // Runs one step; `done` is called exactly once, possibly on another thread. The calling
  // thread runs ready cheap work before returning.
  void RunAsync(const Args& args, DoneCallback done);
  // Runs one step and waits for it.
  absl::Status Run(const Args& args);

  const Graph& graph() const { return *graph_; }
  Device* device() const { return device_; }

 private:
  friend class ExecutorState;
  struct OutEdge {
    int dst = 0;            // node index
    int src_output = 0;     // -1 for a control edge
    int dst_slot = -1;      // global input slot, -1 for a control edge
    bool last_use = false;  // the last edge reading src_output: the tensor may be moved
  };
  struct NodeItem {
    const Node* node = nullptr;
    std::shared_ptr<OpKernel> kernel;  // shared with other executors when SharedKernels says
    bool is_async = false;
    bool expensive = true;
    int input_start = 0;
    int num_inputs = 0;
    int initial_pending = 0;
    int out_begin = 0;
    int out_end = 0;
  };

  Executor() = default;

  std::unique_ptr<Graph> graph_;
  Device* device_ = nullptr;
  // The device keeps tensors in memory of its own (a GPU): host inputs are copied in.
  bool device_memory_ = false;
  std::vector<NodeItem> items_;
  std::vector<OutEdge> out_edges_;
  std::vector<int> roots_;
  int total_inputs_ = 0;
};

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_EXECUTOR_H_
