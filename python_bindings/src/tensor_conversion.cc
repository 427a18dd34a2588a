#include "python_bindings/src/tensor_conversion.h"

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "python_bindings/src/status_exceptions.h"

namespace shardflow {
namespace python {
namespace {

namespace py = pybind11;

// DT_INVALID for dtypes without a zero-copy mapping (strings, objects, complex, ...).
DataType DataTypeOfNumpy(const py::dtype& dt) {
  if (dt.kind() == 'b' && dt.itemsize() == 1) return DT_BOOL;
  switch (dt.kind()) {
    case 'f':
      if (dt.itemsize() == 4) return DT_FLOAT;
      if (dt.itemsize() == 8) return DT_DOUBLE;
      if (dt.itemsize() == 2) return DT_HALF;
      break;
    case 'i':
      if (dt.itemsize() == 4) return DT_INT32;
      if (dt.itemsize() == 8) return DT_INT64;
      if (dt.itemsize() == 1) return DT_INT8;
      break;
    case 'u':
      if (dt.itemsize() == 1) return DT_UINT8;
      break;
    default:
      break;
  }
  return DT_INVALID;
}

TensorShape ShapeOf(const py::array& a) {
  TensorShape shape;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) shape.AddDim(a.shape(i));
  return shape;
}

// A tensor for `what`'s values; an allocation the allocator refuses (too large for its limit or
// for the machine) is a ResourceExhaustedError naming `what`, never an uninitialized tensor.
Tensor Allocate(DataType dtype, const TensorShape& shape, const char* what) {
  auto t = Tensor::Create(CpuAllocator(), dtype, shape);
  if (!t.ok()) {
    throw python::StatusError(
        absl::Status(t.status().code(), absl::StrCat(what, ": ", t.status().message())));
  }
  return std::move(t).value();
}

Tensor StringTensor(const py::array& a, const char* what) {
  Tensor t = Allocate(DT_STRING, ShapeOf(a), what);
  std::string* out = t.data<std::string>();
  py::list flat = a.attr("ravel")().attr("tolist")();
  for (size_t i = 0; i < flat.size(); ++i) {
    py::handle item = flat[i];
    if (py::isinstance<py::bytes>(item)) {
      out[i] = item.cast<std::string>();
    } else if (py::isinstance<py::str>(item)) {
      out[i] = item.cast<std::string>();  // UTF-8
    } else {
      throw py::type_error(absl::StrCat(what, ": a string tensor holds only bytes or str, not ",
                                        std::string(py::str(item.get_type().attr("__name__")))));
    }
  }
  return t;
}

}  // namespace

py::dtype NumpyDtype(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
      return py::dtype("float32");
    case DT_DOUBLE:
      return py::dtype("float64");
    case DT_HALF:
      return py::dtype("float16");
    case DT_INT8:
      return py::dtype("int8");
    case DT_UINT8:
      return py::dtype("uint8");
    case DT_INT32:
      return py::dtype("int32");
    case DT_INT64:
      return py::dtype("int64");
    case DT_BOOL:
      return py::dtype("bool");
    case DT_STRING:
      return py::dtype("object");
    default:
      throw py::type_error(
          absl::StrCat("NumPy has no dtype for shardflow's ", DataTypeString(dtype)));
  }
}

Tensor ArrayToTensor(py::handle value, bool allow_zero_copy, bool* zero_copy, const char* what) {
  if (zero_copy) *zero_copy = false;
  py::array a;
  if (py::isinstance<py::array>(value)) {
    a = py::reinterpret_borrow<py::array>(value);
  } else {
    try {
      a = py::array(py::module_::import("numpy").attr("asarray")(value));
    } catch (py::error_already_set& e) {
      throw py::value_error(absl::StrCat(what, ": cannot convert to an array: ", e.what()));
    }
  }
  const py::dtype dt = a.dtype();
  const char kind = dt.kind();
  if (kind == 'S' || kind == 'U' || kind == 'O') return StringTensor(a, what);
  DataType dtype = DataTypeOfNumpy(dt);
  if (dtype == DT_INVALID) {
    throw py::type_error(absl::StrCat(
        what, ": NumPy dtype ", std::string(py::str(dt.attr("name"))),
        " is not supported; use float32, float64, float16, int8, uint8, int32, int64, bool "
        "or strings"));
  }
  const bool native = dt.attr("isnative").cast<bool>();
  const int flags = py::detail::array_proxy(a.ptr())->flags;
  const bool contiguous = (flags & py::array::c_style) != 0;
  const bool aligned = (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
  if (allow_zero_copy && native && contiguous && aligned) {
    PyObject* owner = a.inc_ref().ptr();
    void* data = const_cast<void*>(a.data());
    if (zero_copy) *zero_copy = true;
    return Tensor::WrapExternal(dtype, ShapeOf(a), data, [owner]() {
      // The last reference may be dropped on an executor thread after the step.
      if (!Py_IsInitialized()) return;
      py::gil_scoped_acquire gil;
      Py_DECREF(owner);
    });
  }
  // Checked before NumPy copies a non-contiguous array (a broadcast view of 2^40 elements).
  Tensor t = Allocate(dtype, ShapeOf(a), what);
  py::array c = py::array::ensure(a, py::array::c_style);  // native order: numpy converts
  if (!c) {
    // ensure() clears NumPy's MemoryError and returns a null array.
    throw python::StatusError(absl::ResourceExhaustedError(
        absl::StrCat(what, ": out of memory copying a non-contiguous array of shape ",
                     t.shape().DebugString(), " into contiguous memory")));
  }
  if (!native) c = py::array(c.attr("astype")(dt.attr("newbyteorder")("=")));
  if (t.TotalBytes() > 0) std::memcpy(t.raw_data(), c.data(), t.TotalBytes());
  return t;
}

py::object TensorToArray(Tensor tensor, bool* zero_copy) {
  if (zero_copy) *zero_copy = false;
  std::vector<py::ssize_t> shape(tensor.shape().dims().begin(), tensor.shape().dims().end());
  if (tensor.dtype() == DT_STRING) {
    py::list items;
    const std::string* s = tensor.data<std::string>();
    for (int64_t i = 0; i < tensor.NumElements(); ++i) items.append(py::bytes(s[i]));
    py::module_ np = py::module_::import("numpy");
    py::tuple dims(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) dims[i] = py::int_(shape[i]);
    return np.attr("array")(items, "object").attr("reshape")(dims);
  }
  if (tensor.dtype() == DT_BFLOAT16) {
    py::array_t<float> out(shape);
    const bfloat16* in = tensor.data<bfloat16>();
    float* o = out.mutable_data();
    for (int64_t i = 0; i < tensor.NumElements(); ++i) o[i] = static_cast<float>(in[i]);
    return std::move(out);
  }
  py::dtype dt = NumpyDtype(tensor.dtype());
  if (tensor.RefCountIsOne() && tensor.raw_data() != nullptr) {
    // Nobody else can write this buffer: hand it to NumPy.
    auto* owned = new Tensor(std::move(tensor));
    py::capsule base(owned, [](void* p) { delete static_cast<Tensor*>(p); });
    if (zero_copy) *zero_copy = true;
    return py::array(dt, shape, owned->raw_data(), base);
  }
  py::array out(dt, shape);
  if (tensor.TotalBytes() > 0) {
    std::memcpy(out.mutable_data(), tensor.raw_data(), tensor.TotalBytes());
  }
  return std::move(out);
}

}  // namespace python
}  // namespace shardflow
