#include "runtime/executor.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/framework/kernel_registry.h"
#include "core/platform/status.h"

namespace shardflow {

absl::StatusOr<std::unique_ptr<Executor>> Executor::CreateForPartition(const GraphDef& partition,
                                                                       Device* device,
                                                                       SharedKernels* shared) {
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(partition));
  for (Node* n : graph->nodes()) n->set_assigned_device(device->name());
  return Create(std::move(graph), device, shared);
}

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(std::unique_ptr<Graph> graph,
                                                           Device* device, SharedKernels* shared) {
  std::unique_ptr<Executor> ex(new Executor());
  ex->device_ = device;
  ex->device_memory_ = !device->GetAllocator()->IsHostMemory();
  SF_ASSIGN_OR_RETURN(std::vector<Node*> order, graph->TopologicalOrder());
  std::vector<int> index_of(graph->num_node_ids(), -1);
  for (size_t i = 0; i < order.size(); ++i) index_of[order[i]->id()] = static_cast<int>(i);
  ex->items_.resize(order.size());
  int slot = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    Node* n = order[i];
    NodeItem& item = ex->items_[i];
    item.node = n;
    SF_ASSIGN_OR_RETURN(item.kernel, KernelRegistry::Global()->CreateKernel(
                                         device, n->def(), n->input_types(), n->output_types()));
    if (shared != nullptr && item.kernel->SharedAcrossExecutors()) {
      item.kernel = shared->FindOrAdd(device->name(), n->def(), std::move(item.kernel));
    }
    item.is_async = item.kernel->AsAsync() != nullptr;
    item.expensive = item.kernel->IsExpensive();
    item.input_start = slot;
    item.num_inputs = n->num_inputs();
    item.initial_pending = static_cast<int>(n->in_edges().size());
    slot += n->num_inputs();
    if (item.initial_pending == 0) ex->roots_.push_back(static_cast<int>(i));
  }
  ex->total_inputs_ = slot;
  for (size_t i = 0; i < order.size(); ++i) {
    Node* n = order[i];
    NodeItem& item = ex->items_[i];
    item.out_begin = static_cast<int>(ex->out_edges_.size());
    std::vector<int> last_edge_for_output(n->num_outputs(), -1);
    for (const Edge* e : n->out_edges()) {
      OutEdge oe;
      oe.dst = index_of[e->dst->id()];
      oe.src_output = e->IsControl() ? -1 : e->src_output;
      oe.dst_slot = e->IsControl() ? -1 : ex->items_[oe.dst].input_start + e->dst_input;
      if (!e->IsControl())
        last_edge_for_output[e->src_output] = static_cast<int>(ex->out_edges_.size());
      ex->out_edges_.push_back(oe);
    }
    for (int k : last_edge_for_output) {
      if (k >= 0) ex->out_edges_[k].last_use = true;
    }
    item.out_end = static_cast<int>(ex->out_edges_.size());
  }
  ex->graph_ = std::move(graph);
  return ex;
}

Executor::~Executor() = default;

// The state of one step. Deletes itself when the last node has finished.
class ExecutorState {
 public:
  ExecutorState(const Executor* ex, const Executor::Args& args, Executor::DoneCallback done)
      : ex_(ex),
        args_(args),
        done_(std::move(done)),
        inputs_(ex->total_inputs_),
        pending_(new std::atomic<int>[ex->items_.size()]) {
    call_options_.step_id = args.step_id;
    call_options_.stats = args.stats;
    call_options_.collective_executor = args.collective_executor;
    call_options_.cancelled = args.cancelled;
    call_options_.check_numerics = args.check_numerics;
    for (size_t i = 0; i < ex->items_.size(); ++i) {
      pending_[i].store(ex->items_[i].initial_pending, std::memory_order_relaxed);
    }
  }

  void Start() {
    if (ex_->items_.empty()) {
      Finish();
      return;
    }
    // ScheduleReady counts the roots as outstanding.
    InlineQueue queue;
    ScheduleReady(ReadyList(ex_->roots_.begin(), ex_->roots_.end()), &queue);
    RunInline(&queue);
  }

 private:
  using ReadyList = absl::InlinedVector<int, 8>;

  // Work this thread will run itself: cheap nodes first, then expensive ones in the order they
  // became ready. Keeping an expensive node on the thread that made it ready avoids a hand-off
  // (and, for OpenMP kernels, a second thread team competing for the cores). Further expensive
  // nodes go to the device's threads to run in parallel — unless the device runs one expensive
  // kernel at a time anyway, when a hand-off would only add latency.
  struct InlineQueue {
    ReadyList cheap;
    ReadyList expensive;
    size_t next_expensive = 0;
  };

  void Process(int id) {
    InlineQueue queue;
    if (IsExpensiveNow(id)) {
      queue.expensive.push_back(id);
    } else {
      queue.cheap.push_back(id);
    }
    RunInline(&queue);
  }

  void RunInline(InlineQueue* queue) {
    while (true) {
      int id;
      if (!queue->cheap.empty()) {
        id = queue->cheap.back();
        queue->cheap.pop_back();
      } else if (queue->next_expensive < queue->expensive.size()) {
        id = queue->expensive[queue->next_expensive++];
      } else {
        return;
      }
      RunNode(id, queue);
    }
  }

  // Host-memory inputs of a kernel (KernelDef::HostMemory) that arrived in device memory are
  // copied to the host by the device (on a CPU device they are there already); on a device with
  // memory of its own, the other inputs that arrived in host memory (a fed value, a host-memory
  // output such as Shape's) are copied into the device's memory.
  absl::Status MoveInputs(const Executor::NodeItem& item) {
    for (int i = 0; i < item.num_inputs; ++i) {
      Tensor& input = inputs_[item.input_start + i];
      if (!input.IsInitialized()) continue;
      const bool on_host = IsHostTensor(input);
      if (item.kernel->input_on_host(i)) {
        if (on_host) continue;
        SF_ASSIGN_OR_RETURN(Tensor host, Tensor::Create(ex_->device_->GetHostAllocator(),
                                                        input.dtype(), input.shape()));
        SF_RETURN_IF_ERROR(ex_->device_->CopyTensor(input, &host));
        input = std::move(host);
      } else if (ex_->device_memory_ && on_host && input.dtype() != DT_STRING) {
        SF_ASSIGN_OR_RETURN(
            Tensor dev, Tensor::Create(ex_->device_->GetAllocator(), input.dtype(), input.shape()));
        SF_RETURN_IF_ERROR(ex_->device_->CopyTensor(input, &dev));
        input = std::move(dev);
      }
    }
    return absl::OkStatus();
  }

  void RunNode(int id, InlineQueue* queue) {
    const Executor::NodeItem& item = ex_->items_[id];
    if (args_.cancelled && args_.cancelled->load(std::memory_order_relaxed)) {
      Abort(absl::CancelledError("the step was cancelled"));
    }
    if (aborted_.load(std::memory_order_relaxed)) {
      ClearInputs(item);
      NodeDone();
      return;
    }
    if (item.kernel->has_host_inputs() || ex_->device_memory_) {
      absl::Status moved = MoveInputs(item);
      if (!moved.ok()) {
        Abort(absl::Status(moved.code(), absl::StrCat("node '", item.node->name(), "' (",
                                                      item.node->op(), "): ", moved.message())));
        ClearInputs(item);
        NodeDone();
        return;
      }
    }
    OpKernelContext::Params params;
    params.step_id = args_.step_id;
    params.device = ex_->device_;
    params.kernel = item.kernel.get();
    params.inputs = inputs_.data() + item.input_start;
    params.num_inputs = item.num_inputs;
    params.call_frame = args_.call_frame;
    params.rendezvous = args_.rendezvous;
    params.collective_executor = args_.collective_executor;
    params.function_library = args_.function_library;
    params.call_options = &call_options_;
    int64_t start = args_.stats ? NowMicros() : 0;
    if (item.is_async) {
      // The context must outlive this frame: it moves to the heap with its params.
      auto* state = new AsyncState{params, nullptr, start};
      state->ctx = std::make_unique<OpKernelContext>(&state->params);
      item.kernel->AsAsync()->ComputeAsync(state->ctx.get(), [this, id, state] {
        ReadyList ready;
        const Executor::NodeItem& it = ex_->items_[id];
        // `done` may be called on another device's thread (a _Send waking this _Recv): the
        // ready work goes to this device's threads, so neither device runs the other's nodes.
        auto q = std::make_shared<InlineQueue>();
        if (Complete(it, state->ctx.get(), state->start, &ready)) ScheduleReady(ready, q.get());
        delete state;
        bool has_work = !q->cheap.empty() || !q->expensive.empty();
        if (has_work) ex_->device_->Schedule([this, q] { RunInline(q.get()); });
        NodeDone();
      });
      return;
    }
    OpKernelContext ctx(&params);
    // A traced step on a device with a queue of its own (a GPU) times each kernel's work on that
    // queue and waits for it, so that its stats give the time the kernel ran on the device, not
    // the time it took to enqueue it.
    const bool timed = args_.stats && ex_->device_memory_;
    if (timed) ex_->device_->BeginKernelTiming();
    if (IsExpensiveNow(id)) {
      ex_->device_->AcquireComputeSlot();
      if (args_.stats) start = NowMicros();  // queueing for the slot is not kernel time
      item.kernel->Compute(&ctx);
      ex_->device_->ReleaseComputeSlot();
    } else {
      item.kernel->Compute(&ctx);
    }
    int64_t device_micros = -1;
    if (timed) {
      absl::StatusOr<int64_t> t = ex_->device_->EndKernelTiming();
      if (!t.ok() && ctx.status().ok()) ctx.SetStatus(t.status());
      if (t.ok()) device_micros = *t;
    }
    ReadyList ready;
    if (Complete(item, &ctx, start, &ready, device_micros)) ScheduleReady(ready, queue);
    NodeDone();
  }

  struct AsyncState {
    OpKernelContext::Params params;
    std::unique_ptr<OpKernelContext> ctx;
    int64_t start;
  };

  // Checks the kernel's result, records stats and hands outputs to consumers. Returns false
  // (after aborting the step) on error.
  // `device_micros`: the kernel's time on the device's queue (traced steps), -1 if not timed.
  bool Complete(const Executor::NodeItem& item, OpKernelContext* ctx, int64_t start,
                ReadyList* ready, int64_t device_micros = -1) {
    ClearInputs(item);
    absl::Status s = ctx->status();
    if (s.ok()) {
      for (int i = 0; i < ctx->num_outputs(); ++i) {
        const Tensor* t = ctx->mutable_output(i);
        if (!t->IsInitialized() || t->dtype() != item.node->output_type(i)) {
          s = absl::InternalError(absl::StrCat(
              "kernel produced ", t->IsInitialized() ? DataTypeString(t->dtype()) : "no value",
              " for output ", i, "; expected ", DataTypeString(item.node->output_type(i))));
          break;
        }
      }
    }
    if (s.ok() && args_.check_numerics) s = CheckNumerics(ctx);
    if (args_.stats) RecordStats(item, ctx, start, device_micros);
    if (!s.ok()) {
      Abort(absl::Status(s.code(), absl::StrCat(NodeErrorPrefix(item.node->def()), s.message())));
      return false;
    }
    for (int k = item.out_begin; k < item.out_end; ++k) {
      const Executor::OutEdge& e = ex_->out_edges_[k];
      if (e.dst_slot >= 0) {
        Tensor* out = ctx->mutable_output(e.src_output);
        if (e.last_use) {
          inputs_[e.dst_slot] = std::move(*out);
        } else {
          inputs_[e.dst_slot] = *out;
        }
      }
      if (pending_[e.dst].fetch_sub(1, std::memory_order_acq_rel) == 1) ready->push_back(e.dst);
    }
    return true;
  }

  static absl::Status CheckNumerics(OpKernelContext* ctx) {
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      const Tensor* t = ctx->mutable_output(i);
      int64_t bad = -1;
      SF_SWITCH_FLOAT(
          t->dtype(), T,
          {
            const T* p = t->data<T>();
            for (int64_t k = 0; k < t->NumElements() && bad < 0; ++k) {
              if (!std::isfinite(static_cast<double>(p[k]))) bad = k;
            }
          },
          continue);
      if (bad >= 0) {
        double v = 0;
        SF_SWITCH_FLOAT(
            t->dtype(), T, { v = static_cast<double>(t->data<T>()[bad]); }, break);
        return absl::InvalidArgumentError(
            absl::StrCat("produced ", std::isnan(v) ? "NaN" : "Inf", " in output ", i, " (shape ",
                         t->shape().DebugString(), ", element ", bad,
                         "): the first non-finite value of this step (check_numerics)"));
      }
    }
    return absl::OkStatus();
  }

  void RecordStats(const Executor::NodeItem& item, OpKernelContext* ctx, int64_t start,
                   int64_t device_micros) {
    NodeExecStats ns;
    ns.set_node_name(item.node->name());
    ns.set_op(item.node->op());
    ns.set_start_micros(start);
    const int64_t end = NowMicros();
    ns.set_end_micros(end);
    if (device_micros >= 0) {  // the host saw the work finish just before `end`
      ns.set_device_start_micros(std::max(start, end - device_micros));
      ns.set_device_end_micros(end);
    }
    ns.set_thread_id(
        static_cast<int64_t>(std::hash<std::thread::id>()(std::this_thread::get_id()) % 100000));
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      const Tensor* t = ctx->mutable_output(i);
      if (!t->IsInitialized()) continue;
      NodeOutputStats* o = ns.add_output();
      o->set_slot(i);
      o->set_dtype(t->dtype());
      t->shape().AsProto(o->mutable_shape());
      o->set_bytes(static_cast<int64_t>(t->TotalBytes()));
    }
    ns.set_allocator_bytes_in_use(ex_->device_->GetAllocator()->GetStats().bytes_in_use);
    if (!ctx->timeline_label().empty()) ns.set_timeline_label(ctx->timeline_label());
    args_.stats->Record(ex_->device_->name(), std::move(ns));
  }

  void ClearInputs(const Executor::NodeItem& item) {
    for (int i = 0; i < item.num_inputs; ++i) inputs_[item.input_start + i] = Tensor();
  }

  // Whether node `id`, whose inputs are all present, is worth a thread and a compute slot: its
  // kernel says it is expensive and some input is large (a scalar Pow or a bias-sized Add is
  // not, whatever its kernel says).
  bool IsExpensiveNow(int id) const {
    const Executor::NodeItem& item = ex_->items_[id];
    if (!item.expensive) return false;
    if (item.num_inputs == 0) return true;
    constexpr int64_t kSmallElements = 1 << 14;
    for (int i = 0; i < item.num_inputs; ++i) {
      if (inputs_[item.input_start + i].NumElements() > kSmallElements) return true;
    }
    return false;
  }

  // Counts `ready` as outstanding and queues it: cheap nodes and one expensive node inline, the
  // other expensive nodes to the device's inter-op threads.
  void ScheduleReady(const ReadyList& ready, InlineQueue* queue) {
    if (ready.empty()) return;
    num_outstanding_.fetch_add(static_cast<int>(ready.size()), std::memory_order_relaxed);
    for (int id : ready) {
      if (!IsExpensiveNow(id)) {
        queue->cheap.push_back(id);
      } else if (queue->next_expensive == queue->expensive.size() ||
                 ex_->device_->compute_slots() <= 1) {
        queue->expensive.push_back(id);
      } else {
        ex_->device_->Schedule([this, id] { Process(id); });
      }
    }
  }

  void Abort(const absl::Status& s) {
    {
      absl::MutexLock lock(&mu_);
      if (!status_.ok()) return;
      status_ = s;
    }
    aborted_.store(true, std::memory_order_relaxed);
    if (args_.on_abort) args_.on_abort(s);
  }

  void NodeDone() {
    if (num_outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish();
  }

  void Finish() {
    absl::Status s;
    {
      absl::MutexLock lock(&mu_);
      s = status_;
    }
    Executor::DoneCallback done = std::move(done_);
    delete this;
    done(s);
  }

  const Executor* ex_;
  const Executor::Args args_;
  FunctionCallOptions call_options_;
  Executor::DoneCallback done_;
  std::vector<Tensor> inputs_;
  std::unique_ptr<std::atomic<int>[]> pending_;
  std::atomic<int> num_outstanding_{0};
  std::atomic<bool> aborted_{false};
  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

void Executor::RunAsync(const Args& args, DoneCallback done) {
  (new ExecutorState(this, args, std::move(done)))->Start();
}

absl::Status Executor::Run(const Args& args) {
  absl::Notification n;
  absl::Status status;
  RunAsync(args, [&](const absl::Status& s) {
    status = s;
    n.Notify();
  });
  n.WaitForNotification();
  return status;
}

}  // namespace shardflow
