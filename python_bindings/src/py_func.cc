// PyFunc: TF1's tf.py_func, a graph node that calls a Python function on NumPy arrays.
//
//   y = sf.py_func(lambda a: np.sort(a), [x], sf.float32)
//
// The op and its CPU kernel live in the extension (not in libshardflow): only a process with
// Python can run them. The node names its function by a token (attr "token"); the Python side
// (shardflow/script_ops.py) keeps token -> callable and its `_call(token, args)` calls it and
// returns a list of arrays. The kernel takes the GIL (sessions release it while a step runs), hands
// the inputs over as arrays (copies: the function may keep or change them), and checks what comes
// back against Tout: the number of results and each dtype. An exception in the function fails the
// step with its type and message (an sf.errors exception with its own status code, so that
// OutOfRangeError ends an input as in TF1); the process and the session carry on.
//
// Where Python is absent (a `shardflow server` process), the kernel is not registered and
// placement reports the op as one no device there can run.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_def.h"
#include "core/framework/op_kernel.h"
#include "core/framework/rendezvous.h"
#include "core/framework/shape_inference.h"
#include "python_bindings/src/status_exceptions.h"
#include "python_bindings/src/tensor_conversion.h"

namespace shardflow {
namespace python {
namespace {

namespace py = pybind11;

absl::Status PyFuncShape(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, TensorShape::Unknown());
  return absl::OkStatus();
}

// The status code a shardflow error (an sf.errors.OpError: its class attribute `code` names the
// code, e.g. "OUT_OF_RANGE") stands for; kOk for any other exception.
absl::StatusCode CodeOf(const py::object& value) {
  if (!value || !py::hasattr(value, "code")) return absl::StatusCode::kOk;
  py::object code = value.attr("code");
  if (!py::isinstance<py::str>(code)) return absl::StatusCode::kOk;
  const std::string name = code.cast<std::string>();
  for (int c = 1; c <= 16; ++c) {
    if (absl::StatusCodeToString(static_cast<absl::StatusCode>(c)) == name) {
      return static_cast<absl::StatusCode>(c);
    }
  }
  return absl::StatusCode::kOk;
}

// Asynchronous: each call runs on a thread of its own, so a function that waits (a dequeue from
// a queue of shardflow/queue_ops.py, waiting for a QueueRunner's enqueue) never holds one of the
// executor's threads, which the step that would wake it may need.
class PyFuncOp : public AsyncOpKernel {
 public:
  explicit PyFuncOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    absl::Status s = c->GetAttr("token", &token_);
    if (!s.ok()) c->SetStatus(s);
    tout_ = c->output_types();
  }

  bool IsExpensive() const override { return false; }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    std::thread([this, ctx, done = std::move(done)] {
      Call(ctx);
      done();
    }).detach();
  }

 private:
  void Call(OpKernelContext* ctx) {
    if (!Py_IsInitialized()) {
      ctx->SetStatus(absl::FailedPreconditionError(
          absl::StrCat("PyFunc '", name(), "': the Python interpreter has shut down")));
      return;
    }
    // Set (without the GIL) when the step is aborted; outlives this call, as the rendezvous
    // keeps its abort callbacks.
    auto aborted_flag = std::make_shared<std::atomic<bool>>(false);
    if (ctx->rendezvous() != nullptr) {
      ctx->rendezvous()->OnAbort(
          [aborted_flag](const absl::Status&) { aborted_flag->store(true); });
    }
    py::gil_scoped_acquire gil;
    try {
      py::list args;
      for (int i = 0; i < ctx->num_inputs(); ++i) {
        Tensor shared = ctx->input(i);  // shares the buffer, so the array gets a copy
        args.append(TensorToArray(std::move(shared)));
      }
      // Whether the step was aborted (a deadline, a cancelled or failed step) while the function
      // runs: a function that waits (a queue's dequeue) polls it and gives up, instead of
      // taking an element for a step that is gone. Read without the GIL on the C++ side.
      py::cpp_function aborted([flag = aborted_flag] { return flag->load(); });
      py::object results =
          py::module_::import("shardflow.script_ops").attr("_call")(token_, args, aborted);
      py::list items = results.cast<py::list>();
      if (static_cast<int>(items.size()) != static_cast<int>(tout_.size())) {
        ctx->SetStatus(absl::InvalidArgumentError(
            absl::StrCat("PyFunc '", name(), "': the function returned ", items.size(),
                         " value(s) but Tout lists ", tout_.size(),
                         "; return one array per Tout entry (a list or tuple for several)")));
        return;
      }
      for (size_t i = 0; i < items.size(); ++i) {
        const std::string what = absl::StrCat("result ", i, " of PyFunc '", name(), "'");
        Tensor t = ArrayToTensor(items[i], /*allow_zero_copy=*/false, nullptr, what.c_str());
        if (t.dtype() != tout_[i]) {
          ctx->SetStatus(absl::InvalidArgumentError(absl::StrCat(
              "PyFunc '", name(), "': result ", i, " is ", DataTypeString(t.dtype()),
              " but Tout says ", DataTypeString(tout_[i]),
              "; convert it in the function (e.g. np.asarray(v, np.float32)) or change Tout")));
          return;
        }
        ctx->set_output(static_cast<int>(i), std::move(t));
      }
    } catch (py::error_already_set& e) {
      // A shardflow error raised by the function (sf.errors.OutOfRangeError at the end of an
      // input, CancelledError from a closed queue) keeps its status code and message, so
      // Session.run raises the same class; anything else is an invalid argument with the
      // Python type, message and traceback.
      absl::StatusCode code = CodeOf(e.value());
      if (code != absl::StatusCode::kOk) {
        ctx->SetStatus(absl::Status(
            code, absl::StrCat("PyFunc '", name(), "': ", py::str(e.value()).cast<std::string>())));
      } else {
        ctx->SetStatus(absl::InvalidArgumentError(
            absl::StrCat("PyFunc '", name(), "': the Python function raised ", e.what())));
      }
    } catch (std::exception& e) {  // conversions: TypeError, ValueError, StatusError
      ctx->SetStatus(absl::InvalidArgumentError(absl::StrCat("PyFunc '", name(), "': ", e.what())));
    }
  }

  std::string token_;
  DataTypeVector tout_;
};

}  // namespace

REGISTER_OP("PyFunc")
    .Input("input: Tin")
    .Output("output: Tout")
    .Attr("token: string")
    .Attr("Tin: list(type) = []")
    .Attr("Tout: list(type) = []")
    .SetIsStateful()
    .SetShapeFn(PyFuncShape)
    .Doc(
        "Calls the Python function registered under `token` (TF1's tf.py_func) on the inputs as "
        "NumPy arrays; its results, one per Tout entry, are the outputs. Runs only in a process "
        "with Python (the shardflow package).");

REGISTER_KERNEL(KernelDef("PyFunc").Device(kDeviceCpu), PyFuncOp);

}  // namespace python
}  // namespace shardflow
