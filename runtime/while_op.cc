// The While kernel (Note [While as a function call] in ops/control_flow_ops.cc): calls cond and
// body through the step's FunctionLibrary until cond is false. It is asynchronous, so a loop
// never holds a thread while its body runs on other devices, and it drives the loop from
// whichever thread finished the last call without recursing (a 10,000-iteration loop whose calls
// all finish inline uses one stack frame per call, not one per iteration).
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/attr_value.h"
#include "core/framework/function.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/rendezvous.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

class WhileOp : public AsyncOpKernel {
 public:
  explicit WhileOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    const AttrMap& attrs = c->def().attr();
    init_ = GetAttr(attrs, "T", &types_);
    if (init_.ok()) init_ = GetAttr(attrs, "Tcaptured", &captured_types_);
    std::vector<DataType> history;
    if (init_.ok()) init_ = GetAttr(attrs, "Thistory", &history);
    std::vector<GraphFunction> functions(2);
    if (init_.ok()) init_ = GetAttr(attrs, "cond", &functions[0]);
    if (init_.ok()) init_ = GetAttr(attrs, "body", &functions[1]);
    const size_t n = types_.size();
    const GraphFunction &cond = functions[0], &body = functions[1];
    if (init_.ok() && (cond.ret_size() != 1 || body.ret_size() != static_cast<int>(n) ||
                       cond.arg_size() != static_cast<int>(n + captured_types_.size()) ||
                       body.arg_size() != cond.arg_size())) {
      init_ = absl::InvalidArgumentError(absl::StrCat(
          "cond must take ", n + captured_types_.size(), " arguments (", n,
          " loop variables, then the captured tensors) and return 1 bool; body must take the "
          "same and return ",
          n, "; they take ", cond.arg_size(), " and ", body.arg_size(), " and return ",
          cond.ret_size(), " and ", body.ret_size()));
    }
    functions_ = std::make_unique<KernelFunctions>(std::move(functions));
    if (init_.ok()) init_ = GetAttr(attrs, "output_shapes", &shapes_);
    if (init_.ok()) init_ = GetAttr(attrs, "maximum_iterations", &maximum_iterations_);
    keep_history_ = !history.empty();
    if (init_.ok() && keep_history_) {
      for (DataType t : types_) {
        if (t == DT_STRING) {
          init_ = absl::InvalidArgumentError(
              "a string loop variable cannot keep history; build the loop with back_prop=False");
        }
      }
    }
  }
  bool IsExpensive() const override { return false; }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override;

 private:
  struct Loop;
  // Runs the loop until a call goes asynchronous or the loop ends; `have_result`: the call of
  // the current phase has finished and its result is in `loop`.
  void Drive(Loop* loop, bool have_result);
  // Checks the finished call's result and moves to the next phase; false = the loop is over
  // (loop->status says whether it failed).
  bool TakeResult(Loop* loop);
  // Sets the outputs (or the error) and calls `done`; deletes `loop`.
  void Finish(Loop* loop);

  absl::Status init_;
  std::vector<DataType> types_, captured_types_;
  std::vector<TensorShape> shapes_;
  std::unique_ptr<KernelFunctions> functions_;  // cond, body
  int64_t maximum_iterations_ = -1;
  bool keep_history_ = false;
};

struct WhileOp::Loop {
  enum Phase { kCond, kBody };
  OpKernelContext* ctx = nullptr;
  DoneCallback done;
  FunctionLibrary* lib = nullptr;
  FunctionLibrary::Handle cond = -1, body = -1;
  FunctionCallOptions options;  // the step's, with this loop's own cancellation flag
  std::shared_ptr<std::atomic<bool>> outer_cancelled;
  std::vector<Tensor> vars, captured, rets;
  std::vector<std::vector<Tensor>> history;
  int64_t iteration = 0;
  Phase phase = kCond;
  absl::Status status;  // of the call that just finished
  // 0: a call is running and its caller has not returned; 1: it finished inline; 2: the caller
  // returned first, so the callback drives the loop on.
  std::atomic<int> handoff{0};
};

void WhileOp::ComputeAsync(OpKernelContext* ctx, DoneCallback done) {
  auto fail = [&](const absl::Status& s) {
    ctx->SetStatus(s);
    done();
  };
  if (!init_.ok()) return fail(init_);
  if (ctx->function_library() == nullptr || ctx->call_options() == nullptr) {
    return fail(absl::FailedPreconditionError(
        "a While runs its cond and body as functions, and this executor was given no function "
        "library (run the graph through a session or a worker)"));
  }
  const size_t n = types_.size();
  auto* loop = new Loop;
  const std::string& device = ctx->device()->name();
  absl::StatusOr<FunctionLibrary::Handle> cond =
      functions_->Get(ctx->function_library(), 0, device);
  if (!cond.ok()) {
    delete loop;
    return fail(WithContext(cond.status(), "cannot prepare the loop's cond: "));
  }
  absl::StatusOr<FunctionLibrary::Handle> body =
      functions_->Get(ctx->function_library(), 1, device);
  if (!body.ok()) {
    delete loop;
    return fail(WithContext(body.status(), "cannot prepare the loop's body: "));
  }
  loop->cond = *cond;
  loop->body = *body;
  loop->ctx = ctx;
  loop->done = std::move(done);
  loop->lib = ctx->function_library();
  loop->options = *ctx->call_options();
  loop->outer_cancelled = loop->options.cancelled;
  loop->options.cancelled = std::make_shared<std::atomic<bool>>(false);
  if (ctx->rendezvous() != nullptr) {
    // Another device's failure aborts the step's rendezvous: stop this loop too.
    ctx->rendezvous()->OnAbort(
        [flag = loop->options.cancelled](const absl::Status&) { flag->store(true); });
  }
  for (size_t i = 0; i < n; ++i) loop->vars.push_back(ctx->input(static_cast<int>(i)));
  for (size_t i = 0; i < captured_types_.size(); ++i) {
    loop->captured.push_back(ctx->input(static_cast<int>(n + i)));
  }
  loop->history.resize(keep_history_ ? n : 0);
  loop->phase = Loop::kCond;
  Drive(loop, /*have_result=*/false);
}

void WhileOp::Drive(Loop* loop, bool have_result) {
  while (true) {
    if (have_result && !TakeResult(loop)) return Finish(loop);
    have_result = true;
    bool stop =
        (loop->outer_cancelled && loop->outer_cancelled->load()) || loop->options.cancelled->load();
    if (stop) {
      loop->status = absl::CancelledError("the step was aborted while the loop ran");
      return Finish(loop);
    }
    std::vector<Tensor> args = loop->vars;
    args.insert(args.end(), loop->captured.begin(), loop->captured.end());
    FunctionLibrary::Handle h = loop->phase == Loop::kCond ? loop->cond : loop->body;
    if (loop->phase == Loop::kBody && keep_history_) {
      for (size_t i = 0; i < loop->vars.size(); ++i) loop->history[i].push_back(loop->vars[i]);
    }
    loop->handoff.store(0);
    loop->rets.clear();
    loop->lib->Run(h, loop->options, std::move(args), &loop->rets,
                   [this, loop](const absl::Status& s) {
                     loop->status = s;
                     int expected = 0;
                     if (loop->handoff.compare_exchange_strong(expected, 1)) return;
                     Drive(loop, /*have_result=*/true);  // the caller returned: go on here
                   });
    int expected = 0;
    if (loop->handoff.compare_exchange_strong(expected, 2)) return;  // the callback goes on
  }
}

bool WhileOp::TakeResult(Loop* loop) {
  if (!loop->status.ok()) {
    loop->status = WithContext(
        loop->status, absl::StrCat("in the loop's ", loop->phase == Loop::kCond ? "cond" : "body",
                                   " (iteration ", loop->iteration, "): "));
    return false;
  }
  if (loop->phase == Loop::kCond) {
    const Tensor pred = loop->rets.empty() ? Tensor() : loop->rets[0];
    if (!pred.IsInitialized() || pred.dtype() != DT_BOOL || pred.NumElements() != 1) {
      loop->status = absl::InvalidArgumentError(absl::StrCat(
          "the loop's cond must return one bool, got ",
          pred.IsInitialized()
              ? DataTypeString(pred.dtype()) + " of shape " + pred.shape().DebugString()
              : std::string("nothing")));
      return false;
    }
    bool more =
        pred.data<bool>()[0] && (maximum_iterations_ < 0 || loop->iteration < maximum_iterations_);
    if (!more) return false;
    if (loop->iteration >= std::numeric_limits<int32_t>::max()) {
      loop->status = absl::OutOfRangeError("the loop ran 2^31 - 1 iterations without ending");
      return false;
    }
    loop->phase = Loop::kBody;
    return true;
  }
  for (size_t i = 0; i < loop->vars.size(); ++i) {
    const Tensor& next = i < loop->rets.size() ? loop->rets[i] : Tensor();
    const TensorShape want = shapes_.empty() ? loop->vars[i].shape() : shapes_[i];
    bool fits = next.IsInitialized() && next.dtype() == types_[i] &&
                (shapes_.empty() ? next.shape() == want : want.IsCompatibleWith(next.shape()));
    if (!fits) {
      loop->status = absl::InvalidArgumentError(absl::StrCat(
          "loop variable ", i, " entered iteration ", loop->iteration, " as ",
          DataTypeString(types_[i]), " ", loop->vars[i].shape().DebugString(),
          " and the body returned ",
          next.IsInitialized() ? DataTypeString(next.dtype()) + " " + next.shape().DebugString()
                               : std::string("nothing"),
          shapes_.empty() ? "; a loop variable keeps its dtype and shape unless "
                            "shape_invariants allow the change"
                          : "; that does not fit its shape invariant " + want.DebugString()));
      return false;
    }
  }
  loop->vars = std::move(loop->rets);
  loop->rets.clear();
  ++loop->iteration;
  loop->phase = Loop::kCond;
  return true;
}

void WhileOp::Finish(Loop* loop) {
  OpKernelContext* ctx = loop->ctx;
  const int n = static_cast<int>(loop->vars.size());
  absl::Status s = loop->status;
  if (s.ok()) {
    for (int i = 0; i < n; ++i) ctx->set_output(i, loop->vars[i]);
    ctx->set_output(n, Tensor::Scalar<int32_t>(static_cast<int32_t>(loop->iteration)));
  }
  for (int i = 0; s.ok() && i < static_cast<int>(loop->history.size()); ++i) {
    const std::vector<Tensor>& rows = loop->history[i];
    // With no iteration the history has no rows, of the shape the variable entered with.
    TensorShape row = rows.empty() ? ctx->input(i).shape() : rows[0].shape();
    // A variable that enters empty and then keeps one shape (the row a growing TensorArray is
    // written in the body, whose element shape is known only when the step runs: Note [Growing
    // TensorArrays] in python_bindings/shardflow/tensor_array.py) keeps its history, with its
    // empty entering value as a row of zeros.
    const bool empty_first = rows.size() > 1 && rows[0].NumElements() == 0 &&
                             rows[0].shape().rank() == rows[1].shape().rank() &&
                             rows[1].NumElements() > 0;
    if (empty_first) row = rows[1].shape();
    // A variable whose shape invariant let it change shape (a sequence that grows while it is
    // decoded) cannot be stacked: its history has no rows, and the gradient, if one is asked
    // for, fails naming it (WhileGrad checks the rows against the iterations).
    const bool one_shape = std::all_of(rows.begin() + (empty_first ? 1 : 0), rows.end(),
                                       [&row](const Tensor& r) { return r.shape() == row; });
    const size_t kept = one_shape ? rows.size() : 0;
    TensorShape shape;
    shape.AddDim(static_cast<int64_t>(kept));
    for (int d = 0; d < row.rank(); ++d) shape.AddDim(row.dim(d));
    Tensor* out = nullptr;
    s = ctx->allocate_output(n + 1 + i, shape, &out);
    const size_t bytes = static_cast<size_t>(row.num_elements()) * DataTypeSize(types_[i]);
    for (size_t k = 0; s.ok() && k < kept; ++k) {
      char* dst = static_cast<char*>(out->raw_data()) + k * bytes;
      if (k == 0 && empty_first) {
        std::memset(dst, 0, bytes);
      } else if (bytes > 0) {
        std::memcpy(dst, rows[k].raw_data(), bytes);
      }
    }
  }
  if (!s.ok()) ctx->SetStatus(s);
  DoneCallback done = std::move(loop->done);
  delete loop;
  done();
}

REGISTER_KERNEL(KernelDef("While").Device(kDeviceCpu), WhileOp);

}  // namespace
}  // namespace shardflow
