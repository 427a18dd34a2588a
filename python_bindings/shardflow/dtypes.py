"""Element types of tensors: ``sf.float32``, ``sf.int32``, ...

Example::

    x = sf.placeholder(sf.float32, [None, 3])
    x.dtype            # sf.float32
    x.dtype.name       # 'float32'
"""

import builtins

import numpy as np

from shardflow import _shardflow as _C


class DType:
    """One element type. Compare with ``==``; ``as_numpy_dtype`` gives the NumPy type."""

    def __init__(self, enum, name, numpy_dtype):
        self._enum = enum
        self.name = name
        self.as_numpy_dtype = numpy_dtype

    @property
    def is_floating(self):
        return self.name in ("float32", "float64", "float16", "bfloat16")

    @property
    def size(self):
        """Bytes per element (string: 8, a pointer's worth)."""
        return {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1,
                "int32": 4, "int64": 8, "bool": 1}.get(self.name, 8)

    @property
    def base_dtype(self):
        return self

    @property
    def is_integer(self):
        return self.name in ("int8", "uint8", "int32", "int64")

    def __eq__(self, other):
        try:
            return self._enum == as_dtype(other)._enum
        except (TypeError, ValueError):
            return False

    def __hash__(self):
        return hash(self._enum)

    def __repr__(self):
        return "sf." + self.name

    def __str__(self):
        return "<dtype: %r>" % self.name   # as TF1's


def _make(name, numpy_dtype):
    return DType(_C.parse_dtype(name), name, numpy_dtype)


float32 = _make("float32", np.float32)
float64 = _make("float64", np.float64)
float16 = _make("float16", np.float16)
bfloat16 = _make("bfloat16", np.float32)  # NumPy has none; fetched as float32
double, half = float64, float16   # TF1's other names
int8 = _make("int8", np.int8)
uint8 = _make("uint8", np.uint8)
int32 = _make("int32", np.int32)
int64 = _make("int64", np.int64)
bool_ = _make("bool", np.bool_)
string = _make("string", np.object_)

_BY_ENUM = {d._enum: d for d in (float32, float64, float16, bfloat16, int8, uint8, int32,
                                  int64, bool_, string)}
_BY_NUMPY = {np.dtype(np.float32): float32, np.dtype(np.float64): float64,
             np.dtype(np.float16): float16, np.dtype(np.int8): int8,
             np.dtype(np.uint8): uint8, np.dtype(np.int32): int32,
             np.dtype(np.int64): int64, np.dtype(np.bool_): bool_}


def as_dtype(type_value):
    """Converts a DType, a name ('float32'), a NumPy dtype or a Python type to a DType
    (`type_value`, TF1's parameter name).

    Example::

        sf.as_dtype("float32") == sf.float32
        sf.as_dtype(np.int64) == sf.int64
    """
    value = type_value
    # builtins.bool: this module's own `bool` (tf.dtypes.bool, defined below) is a DType.
    if isinstance(value, DType):
        return value
    if isinstance(value, int) and not isinstance(value, builtins.bool):
        if value in _BY_ENUM:
            return _BY_ENUM[value]
        raise ValueError("%d is not a dtype enum value" % value)
    if isinstance(value, str):
        if value == "bool":
            return bool_
        return _BY_ENUM[_C.parse_dtype(value)]
    if value is float:
        return float32
    if value is int:
        return int32
    if value is builtins.bool:
        return bool_
    if value in (str, bytes):
        return string
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError("cannot interpret %r as a dtype" % (value,)) from None
    if npd.kind in "SUO":
        return string
    if npd in _BY_NUMPY:
        return _BY_NUMPY[npd]
    raise TypeError("NumPy dtype %s has no shardflow dtype" % npd)


bool = bool_  # noqa: A001 (tf.dtypes.bool; as_dtype uses builtins.bool)
