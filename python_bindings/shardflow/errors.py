"""The exceptions the engine raises, one class per status code.

Each derives from :class:`OpError` (with ``code``, the status code's name) and from the built-in
exception a Python user expects, so ordinary ``except`` clauses work::

    try:
        sess.run(y, {x: wrong_shape})
    except ValueError as e:          # sf.errors.InvalidArgumentError
        print(e.code, e)             # INVALID_ARGUMENT <the engine's message>

=========================  ===========================  =======================
status code                class                        also a
=========================  ===========================  =======================
INVALID_ARGUMENT           InvalidArgumentError         ValueError
OUT_OF_RANGE               OutOfRangeError              ValueError
ALREADY_EXISTS             AlreadyExistsError           ValueError
NOT_FOUND                  NotFoundError                LookupError
FAILED_PRECONDITION        FailedPreconditionError      RuntimeError
CANCELLED / ABORTED        CancelledError/AbortedError  RuntimeError
DATA_LOSS/INTERNAL/UNKNOWN DataLossError/...            RuntimeError
DEADLINE_EXCEEDED          DeadlineExceededError        TimeoutError
UNIMPLEMENTED              UnimplementedError           NotImplementedError
RESOURCE_EXHAUSTED         ResourceExhaustedError       MemoryError
PERMISSION_DENIED          PermissionDeniedError        PermissionError
UNAUTHENTICATED            UnauthenticatedError         PermissionError
UNAVAILABLE                UnavailableError             ConnectionError
=========================  ===========================  =======================

The classes are created by the extension module (python_bindings/src/status_exceptions.cc, the
one place where a Status becomes an exception); this module re-exports them.
"""

from shardflow import _shardflow as _C

OpError = _C.OpError
InvalidArgumentError = _C.InvalidArgumentError
OutOfRangeError = _C.OutOfRangeError
AlreadyExistsError = _C.AlreadyExistsError
NotFoundError = _C.NotFoundError
FailedPreconditionError = _C.FailedPreconditionError
CancelledError = _C.CancelledError
AbortedError = _C.AbortedError
DataLossError = _C.DataLossError
InternalError = _C.InternalError
UnknownError = _C.UnknownError
DeadlineExceededError = _C.DeadlineExceededError
UnimplementedError = _C.UnimplementedError
ResourceExhaustedError = _C.ResourceExhaustedError
PermissionDeniedError = _C.PermissionDeniedError
UnauthenticatedError = _C.UnauthenticatedError
UnavailableError = _C.UnavailableError

__all__ = [name for name in dir() if name.endswith("Error")]
