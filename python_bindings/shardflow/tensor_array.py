"""TF1's tf.TensorArray for graph code and while_loop bodies: write/read/stack/unstack/gather/
scatter/concat/size, with gradients to what was written.

Example (a loop collecting one row per step)::

    ta = sf.TensorArray(sf.float32, size=n_steps, element_shape=[batch, units])
    def body(t, h, ta):
        h = sf.tanh(sf.matmul(x[t], w) + sf.matmul(h, u))
        return t + 1, h, ta.write(t, h)
    _, _, ta = sf.while_loop(lambda t, h, ta: t < n_steps, body, [0, h0, ta])
    outputs = ta.stack()                                   # [n_steps, batch, units]

Note [TensorArray as a buffer]. The array is one tensor of shape [size] + element_shape that a
while_loop carries like any loop variable (control_flow.py flattens a TensorArray to it and
rebuilds it inside the body); write(i, v) is a masked update of row i and read(i) a gather, so
gradients are the ordinary ones of those ops. Hence: `size` must be known when the array is made
(a Python int or a constant), and so must the element shape (element_shape=, or the first
write / unstack outside a loop). dynamic_size=True is accepted only with such a size, taken as
the capacity (a write past it fails the step). Each write costs O(size x element): meant for the
loop lengths of RNN-style code, not for very long loops.
"""

import numpy as np

from shardflow import dtypes, ops
from shardflow.framework import TensorShape, convert_to_tensor


def _static_int(x, what):
    if isinstance(x, (int, np.integer)):
        return int(x)
    raise ValueError("TensorArray: %s must be known when the graph is built (a Python int); got "
                     "%r (Note [TensorArray as a buffer] in shardflow/tensor_array.py)" % (what, x))


class TensorArray:
    """A fixed-size array of tensors of one dtype and shape (see the module's text)."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None,
                 _value=None):
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name or tensor_array_name or "TensorArray"
        if _value is not None:
            self._value = _value
            dims = _value.shape.as_list()
            self._size, self._element_shape = dims[0], dims[1:]
            return
        if size is None:
            raise ValueError("TensorArray needs a size here (dynamic_size arrays need an upper "
                             "bound as size; Note [TensorArray as a buffer])")
        self._size = _static_int(size, "size")
        self._value = None
        self._element_shape = None
        if element_shape is not None:
            shape = TensorShape(element_shape)
            if shape.ndims is not None and all(d is not None for d in shape.as_list()):
                self._element_shape = shape.as_list()
                self._value = ops.zeros([self._size] + self._element_shape, dtype=self._dtype)

    # ---- the buffer -------------------------------------------------------------------------

    def _ensure(self, element, what):
        if self._value is not None:
            return
        dims = element.shape.as_list() if element.shape.ndims is not None else None
        if dims is None or any(d is None for d in dims):
            raise ValueError("TensorArray.%s: the element shape must be known (give "
                             "element_shape= when making the array); got %s"
                             % (what, element.shape))
        self._element_shape = dims
        self._value = ops.zeros([self._size] + dims, dtype=self._dtype)

    def _with(self, value):
        return TensorArray(self._dtype, name=self._name, _value=value)

    @property
    def dtype(self):
        return self._dtype

    @property
    def flow(self):
        """The buffer tensor ([size] + element shape); what a while_loop carries."""
        if self._value is None:
            raise ValueError("TensorArray: nothing written yet and no element_shape")
        return self._value

    @property
    def handle(self):
        return self.flow

    def size(self, name=None):
        """The number of elements (an int32 scalar)."""
        return ops.constant(np.int32(self._size), name=name)

    def identity(self):
        return self

    def close(self, name=None):
        return ops.no_op(name=name)

    # ---- element access ---------------------------------------------------------------------

    def write(self, index, value, name=None):
        """A new TensorArray with element `index` set to `value`."""
        value = convert_to_tensor(value, dtype=self._dtype)
        self._ensure(value, "write")
        index = ops.cast(convert_to_tensor(index), dtypes.int32)
        from shardflow.array_ops import one_hot
        mask = ops.reshape(one_hot(index, self._size, dtype=self._dtype),
                           [self._size] + [1] * len(self._element_shape))
        new = self._value * (1 - mask) + mask * ops.expand_dims(value, 0)
        return self._with(ops.identity(new, name=name))

    def read(self, index, name=None):
        """Element `index`."""
        from shardflow.array_ops import gather
        return gather(self.flow, ops.cast(convert_to_tensor(index), dtypes.int32), name=name)

    def stack(self, name=None):
        """All elements as one tensor [size] + element shape."""
        return ops.identity(self.flow, name=name)

    def gather(self, indices, name=None):
        """The elements at `indices`, stacked."""
        from shardflow.array_ops import gather
        return gather(self.flow, ops.cast(convert_to_tensor(indices), dtypes.int32), name=name)

    def concat(self, name=None):
        """The elements joined along their first dimension."""
        dims = self.flow.shape.as_list()
        return ops.reshape(self.flow, [-1] + dims[2:], name=name)

    def unstack(self, value, name=None):
        """A TensorArray whose elements are the rows of `value` (its size must match)."""
        value = convert_to_tensor(value, dtype=self._dtype)
        dims = value.shape.as_list() if value.shape.ndims else None
        if not dims or dims[0] is None:
            raise ValueError("TensorArray.unstack needs a value with a known first dimension, "
                             "got %s" % value.shape)
        if dims[0] != self._size:
            raise ValueError("TensorArray.unstack: %d rows for an array of size %d"
                             % (dims[0], self._size))
        return self._with(ops.identity(value, name=name))

    def scatter(self, indices, value, name=None):
        """A new TensorArray with element indices[k] set to value[k]."""
        value = convert_to_tensor(value, dtype=self._dtype)
        dims = value.shape.as_list()
        self._ensure(ops.zeros(dims[1:], dtype=self._dtype), "scatter")
        from shardflow.segment_ops import unsorted_segment_sum
        idx = ops.reshape(ops.cast(convert_to_tensor(indices), dtypes.int32), [-1])
        placed = unsorted_segment_sum(value, idx, self._size)
        hit = unsorted_segment_sum(ops.ones_like(ops.cast(idx, self._dtype)), idx, self._size)
        keep = ops.reshape(ops.cast(ops.equal(hit, 0), self._dtype),
                           [self._size] + [1] * len(self._element_shape))
        return self._with(ops.identity(self._value * keep + placed, name=name))

    def split(self, value, lengths, name=None):
        """A new TensorArray of value's pieces along dimension 0 (equal lengths only here)."""
        lengths = [int(n) for n in np.asarray(lengths).reshape(-1)]
        if len(set(lengths)) != 1 or len(lengths) != self._size:
            raise ValueError("TensorArray.split: %d equal lengths needed, got %r"
                             % (self._size, lengths))
        value = convert_to_tensor(value, dtype=self._dtype)
        dims = value.shape.as_list()
        return self._with(ops.reshape(value, [self._size, lengths[0]] + dims[1:], name=name))

    def __repr__(self):
        return "<sf.TensorArray size=%d dtype=%s>" % (self._size, self._dtype.name)


__all__ = ["TensorArray"]
