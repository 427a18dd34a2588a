// The one place where absl::Status becomes a Python exception.
//
//   ThrowIfError(session->Run(...));          // inside a binding: raises e.g. ValueError
//   SF_PY_ASSIGN_OR_THROW(Dataset d, LoadFashionMnist(dir));
//
// Every non-OK code has its own exception class in `shardflow.errors`, derived from
// `shardflow.errors.OpError` (which carries `.code`, the code's name) and from the built-in
// Python exception a Python user expects for it:
//
//   INVALID_ARGUMENT, OUT_OF_RANGE, ALREADY_EXISTS  -> ValueError
//   NOT_FOUND                                       -> LookupError
//   FAILED_PRECONDITION, CANCELLED, ABORTED,
//   DATA_LOSS, INTERNAL, UNKNOWN                    -> RuntimeError
//   DEADLINE_EXCEEDED                               -> TimeoutError
//   UNIMPLEMENTED                                   -> NotImplementedError
//   RESOURCE_EXHAUSTED                              -> MemoryError
//   PERMISSION_DENIED, UNAUTHENTICATED              -> PermissionError
//   UNAVAILABLE                                     -> ConnectionError
//
// The exception's message is the engine's message, unchanged.
#ifndef SHARDFLOW_PYTHON_BINDINGS_SRC_STATUS_EXCEPTIONS_H_
#define SHARDFLOW_PYTHON_BINDINGS_SRC_STATUS_EXCEPTIONS_H_

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "absl/status/status.h"

namespace shardflow {
namespace python {

// Carries a non-OK status from C++ code to the translator registered by RegisterStatusErrors.
class StatusError : public std::runtime_error {
 public:
  explicit StatusError(const absl::Status& status)
      : std::runtime_error(std::string(status.message())), code_(status.code()) {}
  absl::StatusCode code() const { return code_; }

 private:
  absl::StatusCode code_;
};

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

#define SF_PY_CONCAT_INNER(a, b) a##b
#define SF_PY_CONCAT(a, b) SF_PY_CONCAT_INNER(a, b)
#define SF_PY_ASSIGN_OR_THROW(lhs, expr) \
  SF_PY_ASSIGN_OR_THROW_IMPL(SF_PY_CONCAT(sf_py_statusor_, __LINE__), lhs, expr)
#define SF_PY_ASSIGN_OR_THROW_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  ::shardflow::python::ThrowIfError(tmp.status()); \
  lhs = std::move(tmp).value()

// Creates the exception classes as attributes of `m` (OpError, InvalidArgumentError, ...) and
// registers the translator for StatusError. Call once, from the module's init.
void RegisterStatusErrors(pybind11::module_& m);

}  // namespace python
}  // namespace shardflow

#endif  // SHARDFLOW_PYTHON_BINDINGS_SRC_STATUS_EXCEPTIONS_H_
