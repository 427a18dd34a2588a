// OpKernel: the code that computes one op on one device type for one set of dtypes.
//
//   class ReluOp : public OpKernel {
//    public:
//     explicit ReluOp(OpKernelConstruction* c) : OpKernel(c) {}
//     void Compute(OpKernelContext* ctx) override {
//       const Tensor& x = ctx->input(0);
//       Tensor* y;
//       OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, x.shape(), &y));
//       ...
//     }
//   };
//   REGISTER_KERNEL(KernelDef("Relu").Device(kDeviceCpu).TypeConstraint<float>("T"), ReluOp);
//
// Contracts:
// - A kernel is created once per (graph, node) and Compute() may run concurrently for different
//   steps: per-step data lives in the OpKernelContext, never in the kernel.
// - A synchronous kernel never blocks waiting for another kernel.
// - An AsyncOpKernel's `done` is called exactly once, on success, error or cancellation, and
//   may be called from any thread.
// - Errors go through ctx->SetStatus (OP_REQUIRES*); the executor prefixes the node's name.
#ifndef SHARDFLOW_CORE_FRAMEWORK_OP_KERNEL_H_
#define SHARDFLOW_CORE_FRAMEWORK_OP_KERNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "core/framework/attr_value.h"
#include "core/framework/device_base.h"
#include "core/framework/node_def_util.h"
#include "core/framework/tensor.h"

namespace shardflow {

class CollectiveExecutor;
class FunctionLibrary;
struct FunctionCallOptions;

class AsyncOpKernel;
class OpKernelContext;
class Rendezvous;

// Arguments of a step that a kernel may need: the feeds and fetches (_Arg/_Retval kernels).
class CallFrame {
 public:
  virtual ~CallFrame() = default;
  virtual absl::Status GetArg(int index, Tensor* value) const = 0;
  virtual absl::Status SetRetval(int index, const Tensor& value) = 0;
};

class OpKernelConstruction {
 public:
  OpKernelConstruction(DeviceBase* device, const NodeDef& def, const DataTypeVector& input_types,
                       const DataTypeVector& output_types)
      : device_(device), def_(def), input_types_(input_types), output_types_(output_types) {}

  template <typename T>
  absl::Status GetAttr(const std::string& name, T* value) const {
    return ::shardflow::GetAttr(def_.attr(), name, value);
  }
  const NodeDef& def() const { return def_; }
  DeviceBase* device() const { return device_; }
  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  const DataTypeVector& input_types() const { return input_types_; }
  const DataTypeVector& output_types() const { return output_types_; }

  void SetStatus(const absl::Status& s) {
    if (status_.ok()) status_ = s;
  }
  const absl::Status& status() const { return status_; }

 private:
  DeviceBase* device_;
  const NodeDef& def_;
  const DataTypeVector& input_types_;
  const DataTypeVector& output_types_;
  absl::Status status_;
};

class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction* c);
  virtual ~OpKernel();

  virtual void Compute(OpKernelContext* ctx) = 0;
  virtual AsyncOpKernel* AsAsync() { return nullptr; }
  // Cheap kernels run inline on the thread that made them ready; expensive ones may be handed to
  // the device's inter-op threads.
  virtual bool IsExpensive() const { return true; }
  // True for kernels whose state is a sequence over their runs (the random ops: the k-th run of
  // a seeded node gives its k-th draw). Every executor of one session then runs one instance of
  // the node's kernel (runtime/shared_kernels.h), as TensorFlow's OpSegment shares stateful
  // kernels, so a new fetch signature continues the sequence rather than restarting it. Such a
  // kernel must allow concurrent Compute calls.
  virtual bool SharedAcrossExecutors() const { return false; }

  const std::string& name() const { return name_; }
  const std::string& type_string() const { return type_string_; }
  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  // Arguments the kernel's registration keeps in host memory (KernelDef::HostMemory): the
  // executor hands it such inputs in host memory, and its outputs there come from the device's
  // host allocator.
  bool input_on_host(int i) const { return !host_inputs_.empty() && host_inputs_[i]; }
  bool output_on_host(int i) const { return !host_outputs_.empty() && host_outputs_[i]; }
  bool has_host_inputs() const { return !host_inputs_.empty(); }
  // Every argument is in host memory: a CPU kernel registered for an accelerator (int32 shape
  // arithmetic on a GPU, as in TensorFlow). Its scratch memory comes from the host too.
  bool runs_on_host() const { return runs_on_host_; }

 private:
  friend class KernelRegistry;

  std::string name_;
  std::string type_string_;
  DataTypeVector input_types_;
  DataTypeVector output_types_;
  // Empty when no argument is in host memory.
  std::vector<bool> host_inputs_;
  std::vector<bool> host_outputs_;
  bool runs_on_host_ = false;
};

class AsyncOpKernel : public OpKernel {
 public:
  using DoneCallback = std::function<void()>;
  using OpKernel::OpKernel;
  virtual void ComputeAsync(OpKernelContext* ctx, DoneCallback done) = 0;
  AsyncOpKernel* AsAsync() override { return this; }
  // Runs ComputeAsync and waits for `done`.
  void Compute(OpKernelContext* ctx) final;
};

class OpKernelContext {
 public:
  struct Params {
    int64_t step_id = 0;
    DeviceBase* device = nullptr;
    OpKernel* kernel = nullptr;
    // The node's inputs, contiguous; borrowed. A kernel may move from them only through
    // forward_input_or_allocate_output.
    Tensor* inputs = nullptr;
    int num_inputs = 0;
    CallFrame* call_frame = nullptr;
    // Where _Send and _Recv exchange tensors in this step; borrowed, may be null.
    Rendezvous* rendezvous = nullptr;
    // Collective operations among the members of groups; borrowed, may be null (none).
    CollectiveExecutor* collective_executor = nullptr;
    // Graph functions (While's cond and body) and what their calls inherit from this step;
    // borrowed, may be null (then a While fails naming that).
    FunctionLibrary* function_library = nullptr;
    const FunctionCallOptions* call_options = nullptr;
  };

  // `params` is borrowed and must outlive the context.
  explicit OpKernelContext(Params* params);
  ~OpKernelContext();

  int num_inputs() const { return params_->num_inputs; }
  const Tensor& input(int i) const { return params_->inputs[i]; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }

  absl::Status allocate_output(int index, const TensorShape& shape, Tensor** out);
  // Reuses input `input_index`'s buffer for output `output_index` when nothing else refers to
  // it and its dtype and size fit; else allocates.
  absl::Status forward_input_or_allocate_output(int input_index, int output_index,
                                                const TensorShape& shape, Tensor** out);
  // Allocates a scratch tensor that is not an output.
  absl::Status allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out);
  void set_output(int index, Tensor value);
  Tensor* mutable_output(int index) { return &outputs_[index]; }
  Tensor release_output(int index) { return std::move(outputs_[index]); }

  void SetStatus(const absl::Status& s) {
    if (status_.ok()) status_ = s;
  }
  const absl::Status& status() const { return status_; }

  DeviceBase* device() const { return params_->device; }
  Allocator* allocator() const { return params_->device->GetAllocator(); }
  // Where output `index` is allocated: host memory for a host-memory output, else the device's.
  Allocator* output_allocator(int index) const {
    return params_->kernel->output_on_host(index) ? params_->device->GetHostAllocator()
                                                  : params_->device->GetAllocator();
  }
  ThreadPool* intra_op_pool() const { return params_->device->intra_op_pool(); }
  const OpKernel& op_kernel() const { return *params_->kernel; }
  int64_t step_id() const { return params_->step_id; }
  CallFrame* call_frame() const { return params_->call_frame; }
  Rendezvous* rendezvous() const { return params_->rendezvous; }
  CollectiveExecutor* collective_executor() const { return params_->collective_executor; }
  FunctionLibrary* function_library() const { return params_->function_library; }
  const FunctionCallOptions* call_options() const { return params_->call_options; }

  // What this execution did beyond its op, for the trace (NodeExecStats.timeline_label), e.g.
  // a collective's group, peers and bytes. Empty by default.
  void set_timeline_label(std::string label) { timeline_label_ = std::move(label); }
  const std::string& timeline_label() const { return timeline_label_; }

 private:
  Params* params_;
  absl::InlinedVector<Tensor, 2> outputs_;
  absl::Status status_;
  std::string timeline_label_;
};

#define OP_REQUIRES(CTX, EXP, STATUS) \
  do {                                \
    if (!(EXP)) {                     \
      (CTX)->SetStatus(STATUS);       \
      return;                         \
    }                                 \
  } while (0)

#define OP_REQUIRES_OK(CTX, EXPR)          \
  do {                                     \
    ::absl::Status sf_op_status_ = (EXPR); \
    if (!sf_op_status_.ok()) {             \
      (CTX)->SetStatus(sf_op_status_);     \
      return;                              \
    }                                      \
  } while (0)

#define OP_REQUIRES_ASYNC(CTX, EXP, STATUS, DONE) \
  do {                                            \
    if (!(EXP)) {                                 \
      (CTX)->SetStatus(STATUS);                   \
      (DONE)();                                   \
      return;                                     \
    }                                             \
  } while (0)

#define OP_REQUIRES_OK_ASYNC(CTX, EXPR, DONE) \
  do {                                        \
    ::absl::Status sf_op_status_ = (EXPR);    \
    if (!sf_op_status_.ok()) {                \
      (CTX)->SetStatus(sf_op_status_);        \
      (DONE)();                               \
      return;                                 \
    }                                         \
  } while (0)

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_OP_KERNEL_H_
