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
// step with its type and message; the process and the session carry on.
//
// Where Python is absent (a `shardflow server` process), the kernel is not registered and
// placement reports the op as one no device there can run.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_def.h"
#include "core/framework/op_kernel.h"
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

class PyFuncOp : public OpKernel {
 public:
  explicit PyFuncOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("token", &token_);
    if (!s.ok()) c->SetStatus(s);
    tout_ = c->output_types();
  }

  void Compute(OpKernelContext* ctx) override {
    if (!Py_IsInitialized()) {
      ctx->SetStatus(absl::FailedPreconditionError(
          absl::StrCat("PyFunc '", name(), "': the Python interpreter has shut down")));
      return;
    }
    py::gil_scoped_acquire gil;
    try {
      py::list args;
      for (int i = 0; i < ctx->num_inputs(); ++i) {
        Tensor shared = ctx->input(i);  // shares the buffer, so the array gets a copy
        args.append(TensorToArray(std::move(shared)));
      }
      py::object results = py::module_::import("shardflow.script_ops").attr("_call")(token_, args);
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
      ctx->SetStatus(absl::InvalidArgumentError(
          absl::StrCat("PyFunc '", name(), "': the Python function raised ", e.what())));
    } catch (std::exception& e) {  // conversions: TypeError, ValueError, StatusError
      ctx->SetStatus(absl::InvalidArgumentError(absl::StrCat("PyFunc '", name(), "': ", e.what())));
    }
  }

 private:
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
