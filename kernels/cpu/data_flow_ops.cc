// Kernels of the gradient accumulator and FIFO queue ops (ops/data_flow_ops.cc). The
// accumulator and the queue are resources in the device's ResourceMgr, shared by every graph that
// names them. Taking a gradient and dequeueing wait without holding a thread: the kernels are
// asynchronous, and a waiting kernel finishes exactly once — when the resource satisfies it, when
// its step is aborted (Rendezvous::OnAbort: a dead peer, a deadline, a cancelled step), or when its
// timeout_ms passes. A wait longer than a minute is logged with what is missing.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/rendezvous.h"
#include "core/framework/resource_mgr.h"
#include "core/platform/status.h"
#include "core/platform/timer.h"
#include "glog/logging.h"
#include "kernels/cpu/variable_util.h"

namespace shardflow {
namespace {

// How long a wait lasts before it is logged (and logged again).
constexpr absl::Duration kWaitWarning = absl::Seconds(60);

Timer& WaitTimer() {
  static Timer* timer = new Timer("resource waits");  // never destroyed: waits outlive main()
  return *timer;
}

// One kernel waiting on a resource. Whoever removes it from the resource's list (under the
// resource's lock) finishes it, so it finishes once.
struct Waiter {
  std::function<void(const absl::Status&, Tensor)> done;
  int required = 1;           // gradients a take needs
  std::vector<Tensor> items;  // what a waiting enqueue adds
  absl::Time since = absl::Now();
  Timer::Id timeout = 0;
  Timer::Id warning = 0;

  // Ends the wait (once it is off its resource's list, outside the resource's lock).
  void Complete(const absl::Status& s, Tensor value) {
    WaitTimer().Cancel(warning);
    WaitTimer().Cancel(timeout);
    done(s, std::move(value));
  }
};

// Removes `w` from `owner`'s waiters (the list `kList` names) and fails it with `s`, unless it
// finished already.
template <typename Owner, auto kList = &Owner::waiters_>
void FailWaiter(const std::weak_ptr<Owner>& weak, const std::shared_ptr<Waiter>& w,
                const absl::Status& s) {
  auto o = weak.lock();
  if (o == nullptr) return;
  {
    absl::MutexLock lock(&o->mu_);
    auto& list = (*o).*kList;
    auto it = std::find(list.begin(), list.end(), w);
    if (it == list.end()) return;  // finished already
    list.erase(it);
  }
  w->Complete(s, Tensor());
}

// Logs a wait that lasts, every kWaitWarning, with what it lacks.
template <typename Owner, auto kList = &Owner::waiters_>
void ScheduleWarning(const std::weak_ptr<Owner>& weak, const std::shared_ptr<Waiter>& w,
                     const std::string& what) {
  w->warning = WaitTimer().Schedule(absl::Now() + kWaitWarning, [weak, w, what] {
    auto o = weak.lock();
    if (o == nullptr) return;
    std::string report;
    {
      absl::MutexLock lock(&o->mu_);
      auto& list = (*o).*kList;
      if (std::find(list.begin(), list.end(), w) == list.end()) return;
      report = o->WaitReport();
      ScheduleWarning<Owner, kList>(weak, w, what);
    }
    LOG(WARNING) << what << ": still waiting after " << absl::FormatDuration(absl::Now() - w->since)
                 << "; " << report;
  });
}

// Adds `w` to `owner`'s waiters (the caller holds owner->mu_) with its timeout and warnings.
// Returns what to register with the step's rendezvous once the lock is released.
// `Owner` has `absl::Mutex mu_`, `std::deque<std::shared_ptr<Waiter>> waiters_` and
// `std::string WaitReport()` (what a long wait lacks).
template <typename Owner, auto kList = &Owner::waiters_>
std::function<void(const absl::Status&)> Park(const std::shared_ptr<Owner>& owner,
                                              const std::shared_ptr<Waiter>& w, int64_t timeout_ms,
                                              const std::string& what) {
  ((*owner).*kList).push_back(w);
  std::weak_ptr<Owner> weak = owner;
  if (timeout_ms >= 0) {
    w->timeout = WaitTimer().Schedule(absl::Now() + absl::Milliseconds(timeout_ms), [weak, w, what,
                                                                                     timeout_ms] {
      FailWaiter<Owner, kList>(weak, w,
                               absl::DeadlineExceededError(absl::StrCat(
                                   what, ": it did not happen within timeout_ms=", timeout_ms)));
    });
  }
  ScheduleWarning<Owner, kList>(weak, w, what);
  return [weak, w](const absl::Status& s) { FailWaiter<Owner, kList>(weak, w, s); };
}

// Connects a waiter to its step's abort. Made before the kernel parks (once parked it may finish
// on another thread at any moment, and its context and step with it), armed once parked.
struct AbortLink {
  absl::Mutex mu;
  absl::Status aborted ABSL_GUARDED_BY(mu);
  std::function<void(const absl::Status&)> fail ABSL_GUARDED_BY(mu);

  static std::shared_ptr<AbortLink> For(OpKernelContext* ctx) {
    auto link = std::make_shared<AbortLink>();
    if (ctx->rendezvous() != nullptr) {
      ctx->rendezvous()->OnAbort([link](const absl::Status& s) {
        std::function<void(const absl::Status&)> fail;
        {
          absl::MutexLock lock(&link->mu);
          link->aborted = s;
          fail = link->fail;
        }
        if (fail) fail(s);
      });
    }
    return link;
  }
  // `fail` runs on the step's abort, at once when it came already.
  void Arm(std::function<void(const absl::Status&)> f) {
    absl::Status s;
    {
      absl::MutexLock lock(&mu);
      fail = f;
      s = aborted;
    }
    if (!s.ok()) f(s);
  }
};

// Finishes waiters taken off a list, outside the owner's lock.
void Finish(std::vector<std::pair<std::shared_ptr<Waiter>, Tensor>> ready) {
  for (auto& [w, value] : ready) w->Complete(absl::OkStatus(), std::move(value));
}

// Fails every waiter taken off a closed resource's list.
void FailAll(std::deque<std::shared_ptr<Waiter>> waiters, const absl::Status& s) {
  for (auto& w : waiters) w->Complete(s, Tensor());
}

// A waiting kernel's completion: the value as output 0, or the error.
std::function<void(const absl::Status&, Tensor)> OutputOrError(OpKernelContext* ctx,
                                                               AsyncOpKernel::DoneCallback done) {
  return [ctx, done = std::move(done)](const absl::Status& s, Tensor value) {
    if (s.ok()) {
      ctx->set_output(0, std::move(value));
    } else {
      ctx->SetStatus(s);
    }
    done();
  };
}

template <typename T>
absl::StatusOr<std::shared_ptr<T>> LookupHandle(OpKernelContext* ctx) {
  SF_ASSIGN_OR_RETURN(ResourceMgr * rm, ResourcesOf(ctx));
  SF_ASSIGN_OR_RETURN(std::string name, ResourceHandleName(ctx, 0));
  return rm->LookupResource<T>(name);
}

// A handle op (attrs shared_name, dtype, shape): outputs the resource's name, creating the
// resource on first use with Make(). T has dtype() and DebugString().
template <typename T>
class ResourceHandleKernel : public OpKernel {
 public:
  explicit ResourceHandleKernel(OpKernelConstruction* c)
      : OpKernel(c), attrs_(ReadHandleAttrs(c)) {}
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    auto rm = ResourcesOf(ctx);
    OP_REQUIRES_OK(ctx, rm.status());
    auto made = (*rm)->LookupOrCreateResource<T>(
        attrs_.name, [this]() -> absl::StatusOr<std::shared_ptr<T>> { return Make(); });
    OP_REQUIRES_OK(ctx, made.status());
    OP_REQUIRES(ctx, (*made)->dtype() == attrs_.dtype,
                absl::InvalidArgumentError(
                    absl::StrCat("resource '", attrs_.name, "' exists as ", (*made)->DebugString(),
                                 "; this graph declares it ", DataTypeString(attrs_.dtype))));
    ctx->set_output(0, attrs_.handle);
  }

 protected:
  virtual std::shared_ptr<T> Make() const = 0;

  const HandleAttrs attrs_;
};

// ---- gradient accumulator ----------------------------------------------------------------

class GradientAccumulator : public ResourceBase {
 public:
  static constexpr char kTypeName[] = "gradient accumulator";

  GradientAccumulator(std::string name, DataType dtype, TensorShape shape, bool mean)
      : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)), mean_(mean) {}

  std::string DebugString() const override {
    return absl::StrCat("a gradient accumulator of ", DataTypeString(dtype_), " ",
                        shape_.DebugString());
  }
  DataType dtype() const { return dtype_; }
  const std::string& name() const { return name_; }

  // Adds `grad` unless it is stale; sets `label` to what happened, for the trace.
  absl::Status Apply(int64_t local_step, const Tensor& grad, const std::string& source,
                     std::string* label) {
    std::vector<std::pair<std::shared_ptr<Waiter>, Tensor>> ready;
    {
      absl::MutexLock lock(&mu_);
      if (!source.empty()) last_step_of_[source] = local_step;
      if (closed_ || local_step < global_step_) {
        ++dropped_;
        *label = absl::StrCat(closed_ ? "dropped (accumulator closed)" : "stale: dropped",
                              ", local_step ", local_step, " < global step ", global_step_, "; ",
                              dropped_, " dropped so far");
        return absl::OkStatus();
      }
      if (!grad.shape().IsCompatibleWith(shape_) || (count_ > 0 && grad.shape() != sum_.shape())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "accumulator '", name_, "' holds gradients of shape ",
            (count_ > 0 ? sum_.shape() : shape_).DebugString(), " but got one of shape ",
            grad.shape().DebugString(), source.empty() ? "" : absl::StrCat(" from ", source)));
      }
      if (count_ == 0) {
        sum_ = grad.DeepCopy();
      } else {
        SF_SWITCH_FLOAT(
            dtype_, T,
            {
              T* out = sum_.data<T>();
              const T* in = grad.data<T>();
              for (int64_t i = 0; i < grad.NumElements(); ++i) out[i] += in[i];
            },
            return absl::InternalError("accumulator dtype"));
      }
      ++count_;
      if (!source.empty()) sources_this_step_.insert(source);
      *label = absl::StrCat("applied for step ", local_step, ": ", count_, " gradient(s) held");
      TakeReady(&ready);
    }
    Finish(std::move(ready));
    return absl::OkStatus();
  }

  void Take(std::shared_ptr<GradientAccumulator> self, OpKernelContext* ctx, int required,
            std::function<void(const absl::Status&, Tensor)> done) {
    std::vector<std::pair<std::shared_ptr<Waiter>, Tensor>> ready;
    std::function<void(const absl::Status&)> fail;
    auto link = AbortLink::For(ctx);
    {
      absl::MutexLock lock(&mu_);
      if (!closed_) {
        auto w = std::make_shared<Waiter>();
        w->done = std::move(done);
        w->required = required;
        fail =
            Park(self, w, -1, absl::StrCat("taking ", required, " gradient(s) from '", name_, "'"));
        TakeReady(&ready);
      }
    }
    if (!fail) {
      done(absl::CancelledError(absl::StrCat("accumulator '", name_, "' is closed")), Tensor());
      return;
    }
    Finish(std::move(ready));
    link->Arm(std::move(fail));
  }

  void SetGlobalStep(int64_t step) {
    absl::MutexLock lock(&mu_);
    global_step_ = step;
    count_ = 0;
    sum_ = Tensor();
    closed_ = false;
    sources_this_step_.clear();
  }

  void Close() {
    std::deque<std::shared_ptr<Waiter>> waiters;
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
      waiters.swap(waiters_);
    }
    FailAll(std::move(waiters),
            absl::CancelledError(absl::StrCat("accumulator '", name_, "' was closed")));
  }

  int32_t num_accumulated() {
    absl::MutexLock lock(&mu_);
    return count_;
  }
  int64_t num_dropped() {
    absl::MutexLock lock(&mu_);
    return dropped_;
  }

  // For a long wait: who sent this step's gradients, and who sent before but not this step.
  std::string WaitReport() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<std::string> missing;
    for (const auto& [source, step] : last_step_of_) {
      if (sources_this_step_.count(source) == 0) missing.push_back(source);
    }
    return absl::StrCat(count_, " fresh gradient(s) for global step ", global_step_,
                        " so far, from [", absl::StrJoin(sources_this_step_, ", "), "]",
                        missing.empty()
                            ? std::string()
                            : absl::StrCat("; missing from [", absl::StrJoin(missing, ", "), "]"));
  }

  absl::Mutex mu_;
  std::deque<std::shared_ptr<Waiter>> waiters_ ABSL_GUARDED_BY(mu_);

 private:
  // Hands the average to the first waiter that has enough gradients.
  void TakeReady(std::vector<std::pair<std::shared_ptr<Waiter>, Tensor>>* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (waiters_.empty() || count_ < waiters_.front()->required) return;
    Tensor out = std::move(sum_);
    if (mean_ && count_ > 1) {
      SF_SWITCH_FLOAT(
          dtype_, T,
          {
            T* v = out.data<T>();
            const T scale = T(1) / static_cast<T>(count_);
            for (int64_t i = 0; i < out.NumElements(); ++i) v[i] *= scale;
          },
          break);
    }
    ready->emplace_back(waiters_.front(), std::move(out));
    waiters_.pop_front();
    sum_ = Tensor();
    count_ = 0;
    ++global_step_;
    sources_this_step_.clear();
  }

  const std::string name_;
  const DataType dtype_;
  const TensorShape shape_;
  const bool mean_;
  Tensor sum_ ABSL_GUARDED_BY(mu_);
  int32_t count_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t global_step_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, int64_t> last_step_of_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> sources_this_step_ ABSL_GUARDED_BY(mu_);
};

class AccumulatorHandleOp : public ResourceHandleKernel<GradientAccumulator> {
 public:
  explicit AccumulatorHandleOp(OpKernelConstruction* c) : ResourceHandleKernel(c) {
    std::string reduction;
    absl::Status s = c->GetAttr("reduction_type", &reduction);
    if (s.ok() && reduction != "MEAN" && reduction != "SUM") {
      s = absl::InvalidArgumentError(absl::StrCat("ResourceConditionalAccumulator '",
                                                  c->def().name(),
                                                  "': reduction_type is 'MEAN' or "
                                                  "'SUM', not '",
                                                  reduction, "'"));
    }
    if (!s.ok()) c->SetStatus(s);
    mean_ = reduction == "MEAN";
  }

 private:
  std::shared_ptr<GradientAccumulator> Make() const override {
    return std::make_shared<GradientAccumulator>(attrs_.name, attrs_.dtype, attrs_.shape, mean_);
  }
  bool mean_ = true;
};

class AccumulatorApplyOp : public OpKernel {
 public:
  explicit AccumulatorApplyOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("source", &source_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    auto acc = LookupHandle<GradientAccumulator>(ctx);
    OP_REQUIRES_OK(ctx, acc.status());
    const Tensor& step = ctx->input(1);
    OP_REQUIRES(ctx, step.NumElements() == 1,
                absl::InvalidArgumentError("local_step must be a scalar"));
    OP_REQUIRES(ctx, ctx->input(2).dtype() == (*acc)->dtype(),
                absl::InvalidArgumentError(absl::StrCat(
                    "accumulator '", (*acc)->name(), "' holds ", DataTypeString((*acc)->dtype()),
                    " but the gradient is ", DataTypeString(ctx->input(2).dtype()))));
    std::string label;
    OP_REQUIRES_OK(ctx, (*acc)->Apply(step.scalar<int64_t>(), ctx->input(2), source_, &label));
    ctx->set_timeline_label(std::move(label));
  }

 private:
  std::string source_;
};

class AccumulatorTakeOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  bool IsExpensive() const override { return false; }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    auto acc = LookupHandle<GradientAccumulator>(ctx);
    if (!acc.ok()) {
      ctx->SetStatus(acc.status());
      done();
      return;
    }
    const Tensor& n = ctx->input(1);
    if (n.NumElements() != 1 || n.scalar<int32_t>() < 1) {
      ctx->SetStatus(absl::InvalidArgumentError(absl::StrCat(
          "take from accumulator '", (*acc)->name(), "': num_required must be a scalar >= 1")));
      done();
      return;
    }
    (*acc)->Take(*acc, ctx, n.scalar<int32_t>(), OutputOrError(ctx, std::move(done)));
  }
};

template <typename Fn>
class AccumulatorSimpleOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    auto acc = LookupHandle<GradientAccumulator>(ctx);
    OP_REQUIRES_OK(ctx, acc.status());
    Fn()(ctx, acc->get());
  }
};

struct SetGlobalStepFn {
  void operator()(OpKernelContext* ctx, GradientAccumulator* acc) {
    OP_REQUIRES(ctx, ctx->input(1).NumElements() == 1,
                absl::InvalidArgumentError("new_global_step must be a scalar"));
    acc->SetGlobalStep(ctx->input(1).scalar<int64_t>());
  }
};
struct NumAccumulatedFn {
  void operator()(OpKernelContext* ctx, GradientAccumulator* acc) {
    ctx->set_output(0, Tensor::Scalar<int32_t>(acc->num_accumulated()));
  }
};
struct NumDroppedFn {
  void operator()(OpKernelContext* ctx, GradientAccumulator* acc) {
    ctx->set_output(0, Tensor::Scalar<int64_t>(acc->num_dropped()));
  }
};
struct CloseFn {
  void operator()(OpKernelContext*, GradientAccumulator* acc) { acc->Close(); }
};

// ---- FIFO queue ---------------------------------------------------------------------------

class FifoQueue : public ResourceBase {
 public:
  static constexpr char kTypeName[] = "FIFO queue";

  FifoQueue(std::string name, DataType dtype, TensorShape shape, int64_t capacity)
      : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)), capacity_(capacity) {}

  std::string DebugString() const override {
    return absl::StrCat("a FIFO queue of ", DataTypeString(dtype_), " ", shape_.DebugString());
  }
  DataType dtype() const { return dtype_; }
  const std::string& name() const { return name_; }

  // Adds `items`; when they do not fit yet, waits (TF1's blocking enqueue) until dequeues make
  // room, the queue closes (CANCELLED), timeout_ms passes or the step aborts. `done` runs once.
  void Enqueue(std::shared_ptr<FifoQueue> self, OpKernelContext* ctx, std::vector<Tensor> items,
               int64_t timeout_ms, std::function<void(const absl::Status&)> done) {
    std::vector<std::pair<std::shared_ptr<Waiter>, Tensor>> ready;
    std::function<void(const absl::Status&)> fail;
    absl::Status refused;
    auto link = AbortLink::For(ctx);
    {
      absl::MutexLock lock(&mu_);
      if (closed_) {
        refused = absl::CancelledError(absl::StrCat("queue '", name_, "' is closed"));
      } else if (capacity_ >= 0 && static_cast<int64_t>(items.size()) > capacity_) {
        refused = absl::InvalidArgumentError(absl::StrCat("queue '", name_, "' holds at most ",
                                                          capacity_, " elements; ", items.size(),
                                                          " enqueued at once can never fit"));
      } else if (!Fits(items.size()) || !enqueue_waiters_.empty()) {
        auto w = std::make_shared<Waiter>();
        w->items = std::move(items);
        w->done = [done](const absl::Status& s, Tensor) { done(s); };
        fail = Park<FifoQueue, &FifoQueue::enqueue_waiters_>(
            self, w, timeout_ms, absl::StrCat("enqueue into full queue '", name_, "'"));
      } else {
        for (Tensor& t : items) items_.push_back(std::move(t));
        HandOutLocked(&ready);
      }
    }
    if (fail) {
      link->Arm(std::move(fail));
      return;
    }
    Finish(std::move(ready));
    done(refused);
  }

  void Dequeue(std::shared_ptr<FifoQueue> self, OpKernelContext* ctx, int64_t timeout_ms,
               std::function<void(const absl::Status&, Tensor)> done) {
    Tensor item;
    bool closed = false;
    std::function<void(const absl::Status&)> fail;
    std::vector<std::pair<std::shared_ptr<Waiter>, Tensor>> admitted;
    auto link = AbortLink::For(ctx);
    {
      absl::MutexLock lock(&mu_);
      if (!items_.empty()) {
        item = std::move(items_.front());
        items_.pop_front();
        AdmitEnqueuesLocked(&admitted);
      } else if (closed_) {
        closed = true;
      } else {
        auto w = std::make_shared<Waiter>();
        w->done = std::move(done);
        fail = Park(self, w, timeout_ms, absl::StrCat("dequeue from '", name_, "'"));
      }
    }
    Finish(std::move(admitted));
    if (fail) {
      link->Arm(std::move(fail));
    } else if (closed) {
      done(ClosedAndEmpty(), Tensor());
    } else {
      done(absl::OkStatus(), std::move(item));
    }
  }

  void Close() {
    std::deque<std::shared_ptr<Waiter>> waiters, enqueues;
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
      waiters.swap(waiters_);  // the queue is empty when anyone waits
      enqueues.swap(enqueue_waiters_);
    }
    FailAll(std::move(waiters), ClosedAndEmpty());
    FailAll(std::move(enqueues), absl::CancelledError(absl::StrCat("queue '", name_,
                                                                   "' was closed while an enqueue "
                                                                   "waited for room")));
  }

  int32_t size() {
    absl::MutexLock lock(&mu_);
    return static_cast<int32_t>(items_.size());
  }

  std::string WaitReport() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!enqueue_waiters_.empty()) {
      return absl::StrCat("queue '", name_, "' holds ", items_.size(), " of at most ", capacity_,
                          " elements and ", enqueue_waiters_.size(),
                          " enqueue(s) wait for room; nobody dequeues");
    }
    return absl::StrCat("queue '", name_, "' is empty and ", waiters_.size(),
                        " dequeue(s) wait; whoever enqueues (for a token queue: the chief's "
                        "update) has not");
  }

  absl::Mutex mu_;
  std::deque<std::shared_ptr<Waiter>> waiters_ ABSL_GUARDED_BY(mu_);          // dequeues
  std::deque<std::shared_ptr<Waiter>> enqueue_waiters_ ABSL_GUARDED_BY(mu_);  // for room

 private:
  bool Fits(size_t n) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return capacity_ < 0 || static_cast<int64_t>(items_.size() + n) <= capacity_;
  }

  // Gives waiting dequeues the first items.
  void HandOutLocked(std::vector<std::pair<std::shared_ptr<Waiter>, Tensor>>* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!waiters_.empty() && !items_.empty()) {
      ready->emplace_back(waiters_.front(), std::move(items_.front()));
      waiters_.pop_front();
      items_.pop_front();
    }
  }

  // Lets waiting enqueues in, in order, while they fit (they finish OK).
  void AdmitEnqueuesLocked(std::vector<std::pair<std::shared_ptr<Waiter>, Tensor>>* admitted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!enqueue_waiters_.empty() && Fits(enqueue_waiters_.front()->items.size())) {
      std::shared_ptr<Waiter> w = std::move(enqueue_waiters_.front());
      enqueue_waiters_.pop_front();
      for (Tensor& t : w->items) items_.push_back(std::move(t));
      w->items.clear();
      admitted->emplace_back(std::move(w), Tensor());
    }
  }

  absl::Status ClosedAndEmpty() const {
    return absl::OutOfRangeError(absl::StrCat("queue '", name_, "' is closed and empty"));
  }

  const std::string name_;
  const DataType dtype_;
  const TensorShape shape_;
  const int64_t capacity_;
  std::deque<Tensor> items_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

class FifoQueueHandleOp : public ResourceHandleKernel<FifoQueue> {
 public:
  explicit FifoQueueHandleOp(OpKernelConstruction* c) : ResourceHandleKernel(c) {
    absl::Status s = c->GetAttr("capacity", &capacity_);
    if (s.ok() && (attrs_.dtype == DT_STRING || attrs_.dtype == DT_INVALID)) {
      s = absl::InvalidArgumentError(absl::StrCat("FIFOQueueV2 '", c->def().name(),
                                                  "': elements of ", DataTypeString(attrs_.dtype),
                                                  " are not supported; use a numeric dtype"));
    }
    if (!s.ok()) c->SetStatus(s);
  }

 private:
  std::shared_ptr<FifoQueue> Make() const override {
    return std::make_shared<FifoQueue>(attrs_.name, attrs_.dtype, attrs_.shape, capacity_);
  }
  int64_t capacity_ = -1;
};

template <bool kMany>
class EnqueueOp : public AsyncOpKernel {
 public:
  explicit EnqueueOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    absl::Status s = c->GetAttr("timeout_ms", &timeout_ms_);
    if (!s.ok()) c->SetStatus(s);
  }
  bool IsExpensive() const override { return false; }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    auto fail = [ctx, &done](const absl::Status& s) {
      ctx->SetStatus(s);
      done();
    };
    auto q = LookupHandle<FifoQueue>(ctx);
    if (!q.ok()) return fail(q.status());
    const Tensor& value = ctx->input(1);
    if (value.dtype() != (*q)->dtype()) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("queue '", (*q)->name(), "' holds ", DataTypeString((*q)->dtype()),
                       " but the value is ", DataTypeString(value.dtype()))));
    }
    std::vector<Tensor> items;
    if (!kMany) {
      items.push_back(value);
    } else {
      if (value.dims() < 1) {
        return fail(absl::InvalidArgumentError("QueueEnqueueManyV2 needs a value of rank >= 1"));
      }
      TensorShape element;
      for (int i = 1; i < value.dims(); ++i) element.AddDim(value.dim_size(i));
      const int64_t n = value.dim_size(0);
      const size_t bytes = n == 0 ? 0 : value.TotalBytes() / static_cast<size_t>(n);
      for (int64_t i = 0; i < n; ++i) {
        Tensor t(value.dtype(), element);
        if (bytes > 0) {
          std::memcpy(t.raw_data(), static_cast<const char*>(value.raw_data()) + i * bytes, bytes);
        }
        items.push_back(std::move(t));
      }
    }
    (*q)->Enqueue(*q, ctx, std::move(items), timeout_ms_,
                  [ctx, done = std::move(done)](const absl::Status& s) {
                    if (!s.ok()) ctx->SetStatus(s);
                    done();
                  });
  }

 private:
  int64_t timeout_ms_ = -1;
};

class DequeueOp : public AsyncOpKernel {
 public:
  explicit DequeueOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    absl::Status s = c->GetAttr("timeout_ms", &timeout_ms_);
    if (!s.ok()) c->SetStatus(s);
  }
  bool IsExpensive() const override { return false; }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    auto q = LookupHandle<FifoQueue>(ctx);
    if (!q.ok()) {
      ctx->SetStatus(q.status());
      done();
      return;
    }
    if ((*q)->dtype() != output_type(0)) {
      ctx->SetStatus(absl::InvalidArgumentError(
          absl::StrCat("queue '", (*q)->name(), "' holds ", DataTypeString((*q)->dtype()),
                       " but is dequeued as ", DataTypeString(output_type(0)))));
      done();
      return;
    }
    (*q)->Dequeue(*q, ctx, timeout_ms_, OutputOrError(ctx, std::move(done)));
  }

 private:
  int64_t timeout_ms_ = -1;
};

class QueueSizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    auto q = LookupHandle<FifoQueue>(ctx);
    OP_REQUIRES_OK(ctx, q.status());
    ctx->set_output(0, Tensor::Scalar<int32_t>((*q)->size()));
  }
};

class QueueCloseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    auto q = LookupHandle<FifoQueue>(ctx);
    OP_REQUIRES_OK(ctx, q.status());
    (*q)->Close();
  }
};

#define SF_REGISTER_ACCUMULATOR(type)                           \
  REGISTER_KERNEL(KernelDef("ResourceConditionalAccumulator")   \
                      .Device(kDeviceCpu)                       \
                      .TypeConstraint<type>("dtype"),           \
                  AccumulatorHandleOp);                         \
  REGISTER_KERNEL(KernelDef("ResourceAccumulatorApplyGradient") \
                      .Device(kDeviceCpu)                       \
                      .TypeConstraint<type>("dtype"),           \
                  AccumulatorApplyOp);                          \
  REGISTER_KERNEL(KernelDef("ResourceAccumulatorTakeGradient")  \
                      .Device(kDeviceCpu)                       \
                      .TypeConstraint<type>("dtype"),           \
                  AccumulatorTakeOp);
SF_REGISTER_ACCUMULATOR(float)
SF_REGISTER_ACCUMULATOR(double)
#undef SF_REGISTER_ACCUMULATOR

REGISTER_KERNEL(KernelDef("ResourceAccumulatorSetGlobalStep").Device(kDeviceCpu),
                AccumulatorSimpleOp<SetGlobalStepFn>);
REGISTER_KERNEL(KernelDef("ResourceAccumulatorNumAccumulated").Device(kDeviceCpu),
                AccumulatorSimpleOp<NumAccumulatedFn>);
REGISTER_KERNEL(KernelDef("ResourceAccumulatorNumDropped").Device(kDeviceCpu),
                AccumulatorSimpleOp<NumDroppedFn>);
REGISTER_KERNEL(KernelDef("ResourceAccumulatorClose").Device(kDeviceCpu),
                AccumulatorSimpleOp<CloseFn>);
REGISTER_KERNEL(KernelDef("FIFOQueueV2").Device(kDeviceCpu), FifoQueueHandleOp);
REGISTER_KERNEL(KernelDef("QueueEnqueueV2").Device(kDeviceCpu), EnqueueOp<false>);
REGISTER_KERNEL(KernelDef("QueueEnqueueManyV2").Device(kDeviceCpu), EnqueueOp<true>);
REGISTER_KERNEL(KernelDef("QueueDequeueV2").Device(kDeviceCpu), DequeueOp);
REGISTER_KERNEL(KernelDef("QueueSizeV2").Device(kDeviceCpu), QueueSizeOp);
REGISTER_KERNEL(KernelDef("QueueCloseV2").Device(kDeviceCpu), QueueCloseOp);

}  // namespace
}  // namespace shardflow
