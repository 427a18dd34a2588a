"""TF1's tensor_util: ``make_ndarray`` (a TensorProto's value as an ndarray),
``make_tensor_proto`` and ``constant_value`` / ``tf.get_static_value`` (a tensor's value when
the graph alone determines it: a Const, the Shape of a fully known shape, and what passes one
through unchanged), as library code uses them to decide things while building a graph. Also
importable as ``shardflow.python.framework.tensor_util`` and ``tf.contrib.util``."""

import numpy as np

from shardflow import dtypes


def make_ndarray(tensor):
    """The value of a TensorProto (shardflow's: dtype, shape, little-endian content or
    string_val) as a NumPy array."""
    dtype = dtypes.as_dtype(tensor.dtype)
    if tensor.shape.unknown_rank:
        raise ValueError("make_ndarray: the TensorProto has an unknown shape")
    shape = [int(d) for d in tensor.shape.dim]
    if any(d < 0 for d in shape):
        raise ValueError("make_ndarray: the TensorProto's shape %s is not fully known" % shape)
    count = int(np.prod(shape, dtype=np.int64))
    if dtype == dtypes.string:
        values = list(tensor.string_val)
        if len(values) == 1 and count != 1:
            values = values * count
        if len(values) != count:
            raise ValueError("make_ndarray: %d strings for shape %s" % (len(values), shape))
        return np.array(values, dtype=object).reshape(shape)
    np_dtype = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
    if len(tensor.content) != count * np_dtype.itemsize:
        raise ValueError("make_ndarray: %d bytes of content for %d %s values"
                         % (len(tensor.content), count, dtype.name))
    return np.frombuffer(tensor.content, dtype=np_dtype).astype(np_dtype.newbyteorder("="))\
        .reshape(shape)


def make_tensor_proto(values, dtype=None, shape=None, verify_shape=False,
                      allow_broadcast=False):
    """A TensorProto holding `values` (converted with NumPy; `dtype` and `shape` as in TF1).

    With `shape`, fewer values than the shape holds are padded with the last value (as TF1's
    proto, whose reader repeats the last value); more values are a ValueError. verify_shape:
    the values' own shape must be `shape` (TypeError otherwise). allow_broadcast: a scalar or
    one-element vector fills `shape`, other values must have its number of elements (TypeError
    otherwise), as TF1."""
    from shardflow.graph_io import TensorProto
    array = np.asarray(values, dtype=dtypes.as_dtype(dtype).as_numpy_dtype if dtype else None)
    if shape is not None:
        shape = [int(d) for d in shape]
        size = int(np.prod(shape, dtype=np.int64))
        if allow_broadcast:
            if array.shape not in ((1,), ()) and array.size != size:
                raise TypeError("Expected Tensor's shape: %s, got %s."
                                % (tuple(shape), array.shape))
        else:
            if verify_shape and array.shape != tuple(shape):
                raise TypeError("Expected Tensor's shape: %s, got %s."
                                % (tuple(shape), array.shape))
            if array.size > size:
                raise ValueError("Too many elements provided. Needed at most %d, but received "
                                 "%d" % (size, array.size))
        flat = array.reshape(-1)
        if size == 0:
            array = flat[:0].reshape(shape)
        elif flat.size == 0:
            raise ValueError("make_tensor_proto: no values to fill shape %s" % (tuple(shape),))
        elif flat.size < size:
            array = np.concatenate([flat, np.repeat(flat[-1:], size - flat.size)]).reshape(shape)
        else:
            array = flat.reshape(shape)
    proto = TensorProto()
    proto.dtype = dtypes.as_dtype(array.dtype)._enum
    proto.shape.dim.extend(array.shape)
    if array.dtype == object or array.dtype.kind in "SU":
        proto.string_val.extend(v if isinstance(v, bytes) else str(v).encode()
                                for v in array.reshape(-1))
    else:
        proto.content = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"))\
            .tobytes()
    return proto


_PASS_THROUGH = ("Identity", "StopGradient", "Snapshot", "PreventGradient")


def constant_value(tensor, partial=False):
    """The value of `tensor` as an ndarray when the graph alone determines it, else None: a
    Const, a Fill of constants, Shape/Size/Rank of a statically known shape, and
    Identity/StopGradient of one of those (TF1's tensor_util.constant_value; `partial` is
    accepted and ignored)."""
    from shardflow.framework import Tensor
    if not isinstance(tensor, Tensor):
        return np.asarray(tensor) if tensor is not None else None
    op = tensor.op
    kind = op.type
    if kind == "Const":
        return make_ndarray(op.get_attr("value"))
    if kind in _PASS_THROUGH:
        return constant_value(op.inputs[0])
    if kind == "Fill":   # sf.zeros / ones / constant of a large shape
        dims, value = constant_value(op.inputs[0]), constant_value(op.inputs[1])
        if dims is None or value is None:
            return None
        return np.full([int(d) for d in dims], value, dtype=tensor.dtype.as_numpy_dtype)
    if kind in ("Shape", "Size", "Rank"):
        shape = op.inputs[0].shape
        if kind == "Rank":
            return None if shape.ndims is None else np.array(shape.ndims, dtype=np.int32)
        if not shape.is_fully_defined():
            return None
        dims = shape.as_list()
        out_dtype = tensor.dtype.as_numpy_dtype
        if kind == "Shape":
            return np.array(dims, dtype=out_dtype)
        return np.array(int(np.prod(dims, dtype=np.int64)), dtype=out_dtype)
    return None


def int_or_tensor(value):
    """A size or offset as a Python int when the graph determines it (a constant, a static
    shape's Shape), else as a scalar int32 tensor the step computes."""
    from shardflow.framework import Tensor
    if isinstance(value, Tensor):
        known = constant_value(value)
        if known is None:
            from shardflow import ops
            return ops.cast(value, dtypes.int32)
        value = known
    return int(value)


def get_static_value(tensor, partial=False):
    """tf.get_static_value: constant_value under TF 1.15's later name."""
    return constant_value(tensor, partial)


__all__ = ["constant_value", "get_static_value", "make_ndarray", "make_tensor_proto"]
