// NumPy arrays <-> shardflow Tensors.
//
//   Tensor t = ArrayToTensor(obj, /*allow_zero_copy=*/true, &zero_copy);  // feed
//   py::object a = TensorToArray(std::move(out));                          // fetch
//
// Feeds: a C-contiguous, aligned, native-byte-order array of a supported dtype is wrapped without
// a copy (Tensor::WrapExternal); the Tensor holds a reference to the array, dropped (under the
// GIL) when the last Tensor sharing the buffer goes away. Anything else (lists, scalars,
// non-contiguous or byte-swapped arrays) is copied. Callers that may let the engine keep the
// buffer beyond the step pass allow_zero_copy = false (see Note [Feeds the engine may keep]).
//
// Fetches: a Tensor whose buffer nobody else refers to becomes an array that owns it (a capsule
// holds the Tensor), without a copy; otherwise (the buffer is also a variable's value, or a feed)
// the values are copied, so an array never changes behind the user's back.
//
// Supported dtypes: float32, float64, float16, int8, uint8, int32, int64, bool, and strings
// (bytes/str arrays, copied; fetched as object arrays of bytes). bfloat16 is fetched as float32.
//
// Thread safety: call with the GIL held.
#ifndef SHARDFLOW_PYTHON_BINDINGS_SRC_TENSOR_CONVERSION_H_
#define SHARDFLOW_PYTHON_BINDINGS_SRC_TENSOR_CONVERSION_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "core/framework/tensor.h"

namespace shardflow {
namespace python {

// Raises TypeError for unsupported dtypes and ValueError for ragged nested lists. `what` names
// the value in error messages (e.g. "feed for 'x:0'"). `*zero_copy` (may be null) tells whether
// the result wraps the array's memory.
Tensor ArrayToTensor(pybind11::handle value, bool allow_zero_copy, bool* zero_copy,
                     const char* what);

// Consumes `tensor`.
pybind11::object TensorToArray(Tensor tensor, bool* zero_copy = nullptr);

// The NumPy dtype of a DataType (TypeError for ones NumPy cannot hold).
pybind11::dtype NumpyDtype(DataType dtype);

}  // namespace python
}  // namespace shardflow

#endif  // SHARDFLOW_PYTHON_BINDINGS_SRC_TENSOR_CONVERSION_H_
