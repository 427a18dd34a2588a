#include "python_bindings/src/status_exceptions.h"

#include <map>
#include <string>

namespace shardflow {
namespace python {
namespace {

namespace py = pybind11;

struct ErrorClass {
  absl::StatusCode code;
  const char* class_name;
  PyObject* builtin;  // the built-in exception it also derives from
};

// Filled once by RegisterStatusErrors; the classes live as long as the module (never freed).
std::map<absl::StatusCode, PyObject*>& ErrorTypes() {
  static auto* types = new std::map<absl::StatusCode, PyObject*>();
  return *types;
}
PyObject* g_op_error = nullptr;

}  // namespace

void RegisterStatusErrors(py::module_& m) {
  const ErrorClass classes[] = {
      {absl::StatusCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError},
      {absl::StatusCode::kOutOfRange, "OutOfRangeError", PyExc_ValueError},
      {absl::StatusCode::kAlreadyExists, "AlreadyExistsError", PyExc_ValueError},
      {absl::StatusCode::kNotFound, "NotFoundError", PyExc_LookupError},
      {absl::StatusCode::kFailedPrecondition, "FailedPreconditionError", PyExc_RuntimeError},
      {absl::StatusCode::kCancelled, "CancelledError", PyExc_RuntimeError},
      {absl::StatusCode::kAborted, "AbortedError", PyExc_RuntimeError},
      {absl::StatusCode::kDataLoss, "DataLossError", PyExc_RuntimeError},
      {absl::StatusCode::kInternal, "InternalError", PyExc_RuntimeError},
      {absl::StatusCode::kUnknown, "UnknownError", PyExc_RuntimeError},
      {absl::StatusCode::kDeadlineExceeded, "DeadlineExceededError", PyExc_TimeoutError},
      {absl::StatusCode::kUnimplemented, "UnimplementedError", PyExc_NotImplementedError},
      {absl::StatusCode::kResourceExhausted, "ResourceExhaustedError", PyExc_MemoryError},
      {absl::StatusCode::kPermissionDenied, "PermissionDeniedError", PyExc_PermissionError},
      {absl::StatusCode::kUnauthenticated, "UnauthenticatedError", PyExc_PermissionError},
      {absl::StatusCode::kUnavailable, "UnavailableError", PyExc_ConnectionError},
  };
  py::dict base_dict;
  base_dict["code"] = py::none();
  g_op_error = PyErr_NewExceptionWithDoc(
      "shardflow.errors.OpError",
      "Base class of every error the engine reports; `code` names the status code "
      "(e.g. 'INVALID_ARGUMENT').",
      PyExc_Exception, base_dict.ptr());
  if (g_op_error == nullptr) throw py::error_already_set();
  m.attr("OpError") = py::handle(g_op_error);
  for (const ErrorClass& c : classes) {
    py::dict dict;
    dict["code"] = absl::StatusCodeToString(c.code);
    py::tuple bases = py::make_tuple(py::handle(g_op_error), py::handle(c.builtin));
    std::string qualified = std::string("shardflow.errors.") + c.class_name;
    std::string doc = "The engine reported " + absl::StatusCodeToString(c.code) + ".";
    PyObject* type =
        PyErr_NewExceptionWithDoc(qualified.c_str(), doc.c_str(), bases.ptr(), dict.ptr());
    if (type == nullptr) throw py::error_already_set();
    ErrorTypes()[c.code] = type;
    m.attr(c.class_name) = py::handle(type);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      auto it = ErrorTypes().find(e.code());
      PyObject* type = it != ErrorTypes().end() ? it->second : g_op_error;
      PyErr_SetString(type, e.what());
    }
  });
}

}  // namespace python
}  // namespace shardflow
