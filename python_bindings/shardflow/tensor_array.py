"""TF1's tf.TensorArray for graph code and while_loop bodies: write/read/stack/unstack/gather/
scatter/concat/size, with gradients to what was written.

Example (a loop collecting one row per step)::

    ta = sf.TensorArray(sf.float32, size=n_steps, element_shape=[batch, units])
    def body(t, h, ta):
        h = sf.tanh(sf.matmul(x[t], w) + sf.matmul(h, u))
        return t + 1, h, ta.write(t, h)
    _, _, ta = sf.while_loop(lambda t, h, ta: t < n_steps, body, [0, h0, ta])
    outputs = ta.stack()                                   # [n_steps, batch, units]

Note [TensorArray as a buffer]. A fixed-size array (`size` a Python int, dynamic_size off) is
one tensor of shape [size] + element_shape that a while_loop carries like any loop variable
(control_flow.py flattens the array to it and rebuilds it inside the body); write(i, v) selects
v for row i and the old rows elsewhere (SelectV2, so an inf or NaN written stays in its row:
no multiplying by a mask) and read(i) is a gather, so gradients are the ordinary ones of those
ops. Every element has one shape: a write of another static shape is a ValueError, as TF1's.
Its element shape must be known (element_shape=): each write costs O(size x element), meant for
the loop lengths of RNN-style code. Without element_shape a fixed size grows as below, padded to
at least `size` rows (TF1 code often gives no element_shape).

Note [Growing TensorArrays]. With dynamic_size=True, or a size that is a tensor, the array
grows: outside loops every write places its row into a buffer padded to max(size, index + 1).
A while_loop does not carry such an array (its length changes per iteration, and a loop
variable's history must keep one shape, Note [While as a function call]); instead the loop
carries the row written in the iteration and its index, two loop variables of fixed shape, and
after the loop the rows, read from the loop's history, are placed into the array as it entered
the loop (control_flow._build_while). So inside a loop body such an array takes one write per
iteration (of one element shape, which may be known only when the step runs: the row then
enters the loop empty and the While kernel keeps the history after it), reads see the array as it
entered the loop, and a body may not both read and write it; give a fixed size and an
element_shape with every dimension for that (a fixed size alone still grows).
`clear_after_read` and `infer_shape` are accepted: elements may be read more than once.
"""

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.framework import TensorShape, convert_to_tensor


def _int32(x):
    return ops.cast(convert_to_tensor(x), dtypes.int32)


def _count_up(n):
    """[0, 1, ..., n - 1] for an int32 scalar tensor n (tf.range takes Python numbers only)."""
    return ops.cumsum(ops.fill(ops.reshape(n, [1]), 1), exclusive=True)


def _known(dims):
    return dims is not None and all(d is not None for d in dims)


def _rows_where(chosen, new, old, rank):
    """new where the bool vector `chosen` is true, else old, row by row (rank: of one row)."""
    return array_ops.where_v2(ops.reshape(chosen, [-1] + [1] * rank), new, old)


class _LoopState:
    """What a while_loop body did with one growing array (Note [Growing TensorArrays])."""

    def __init__(self):
        self.read = False


class TensorArray:
    """An array of tensors of one dtype and shape (see the module's text)."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None,
                 _value=None):
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name or tensor_array_name or "TensorArray"
        self._loop = None        # a _LoopState inside a while_loop body (growing arrays only)
        self._pending = None     # (index, value) written in this iteration of that body
        self._element_shape = None
        if element_shape is not None and TensorShape(element_shape).ndims is not None:
            self._element_shape = TensorShape(element_shape).as_list()
        if _value is not None:
            self._dynamic = bool(dynamic_size)
            self._set_value(_value)
            return
        if size is None:
            if not dynamic_size:
                raise ValueError("TensorArray needs a size (or dynamic_size=True)")
            size = 0
        # A fixed size without a known element shape grows as a dynamic array does (its rows
        # padded to `size`), so that a while_loop can carry it before anything is written.
        self._dynamic = (bool(dynamic_size) or not isinstance(size, (int, np.integer))
                         or not _known(self._element_shape))
        self._value = None
        if self._dynamic:
            self._size = None
            self._min_size = int(size) if isinstance(size, (int, np.integer)) else _int32(size)
            return
        self._size = int(size)
        if _known(self._element_shape):
            self._value = ops.zeros([self._size] + self._element_shape, dtype=self._dtype)

    def _set_value(self, value):
        self._value = value
        dims = value.shape.as_list() if value.shape.ndims is not None else None
        self._size = None if self._dynamic or dims is None else dims[0]
        self._min_size = 0
        if dims is not None and self._element_shape is None:
            self._element_shape = dims[1:]

    def _with(self, value):
        return TensorArray(self._dtype, name=self._name, dynamic_size=self._dynamic,
                           element_shape=self._element_shape, _value=value)

    # ---- a fixed-size buffer (Note [TensorArray as a buffer]) -------------------------------

    def _ensure(self, element, what):
        if self._value is not None:
            return
        dims = element.shape.as_list() if element.shape.ndims is not None else None
        if not _known(dims):
            raise ValueError("TensorArray.%s: the element shape must be known (give "
                             "element_shape= when making the array); got %s"
                             % (what, element.shape))
        self._element_shape = dims
        self._value = ops.zeros([self._size] + dims, dtype=self._dtype)

    # ---- a growing array (Note [Growing TensorArrays]) --------------------------------------

    def _place(self, indices, rows):
        """The array with rows[k] at indices[k] (int32 [K]; rows [K] + element shape), grown
        to max(size, max(indices) + 1)."""
        from shardflow.segment_ops import unsorted_segment_sum
        elem = rows.shape.as_list()[1:] if rows.shape.ndims is not None else None
        elem_dims = ops.shape(rows)[1:]
        if self._value is None:
            have = self._min_size
        else:
            have = ops.shape(self._value)[0]
        size = ops.maximum(ops.maximum(have, self._min_size),
                           ops.reduce_max(ops.concat([indices + 1, ops.zeros([1], dtypes.int32)],
                                                     0)))
        if self._value is None:
            zero = ops.constant(0, dtype=self._dtype)
            base = ops.fill(ops.concat([ops.reshape(size, [1]), elem_dims], 0), zero)
        else:
            # Rows 0..have-1 in place (a segment sum, as Concat's gradient needs sizes).
            base = unsorted_segment_sum(self._value, _count_up(have), size)
        # A row at index -1 (from a loop that ran no iteration) goes to a spare row, `size`.
        rank = len(elem) if elem is not None else rows.shape.ndims - 1
        missing = ops.cast(ops.less(indices, 0), dtypes.int32)
        at = indices + missing * (size + 1)
        in_place = _count_up(size)
        placed = array_ops.gather(unsorted_segment_sum(rows, at, size + 1), in_place)
        hits = array_ops.gather(unsorted_segment_sum(ops.ones_like(at), at, size + 1), in_place)
        value = _rows_where(ops.greater(hits, 0), placed, base, rank)
        if _known(elem):
            value = ops.reshape(value, [-1] + elem)
        return self._with(value)

    def _first(self, n):
        """This array cut to its first n elements (n an int or an int32 scalar)."""
        return self._with(array_ops.gather(self._contents("_first"), _count_up(_int32(n))))

    def _entering_loop(self):
        """This array as a while_loop body (or cond) sees it."""
        inner = TensorArray(self._dtype, name=self._name, dynamic_size=True,
                            element_shape=self._element_shape, size=0)
        inner._value, inner._min_size, inner._loop = self._value, self._min_size, _LoopState()
        return inner

    def _in_loop(self, what):
        if self._loop is not None:
            raise ValueError("TensorArray.%s inside a while_loop body: an array with "
                             "dynamic_size (or a tensor size) takes only one write per "
                             "iteration there; give a fixed size and a fully known "
                             "element_shape to do more (Note [Growing TensorArrays] in "
                             "shardflow/tensor_array.py)" % what)

    def _contents(self, what):
        if self._loop is not None:
            self._loop.read = True
        if self._value is not None:
            return self._value
        if self._dynamic and _known(self._element_shape):
            dims = ops.concat([ops.reshape(_int32(self._min_size), [1]),
                               ops.constant(np.array(self._element_shape, np.int32))], 0)
            return ops.reshape(ops.fill(dims, ops.constant(0, dtype=self._dtype)),
                               [-1] + self._element_shape)
        raise ValueError("TensorArray.%s: nothing written yet and no element_shape" % what)

    # ---- the array --------------------------------------------------------------------------

    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        return TensorShape(self._element_shape)

    @property
    def flow(self):
        """The contents as one tensor ([size] + element shape)."""
        return self._contents("flow")

    @property
    def handle(self):
        return self.flow

    def size(self, name=None):
        """The number of elements (an int32 scalar)."""
        if not self._dynamic:
            return ops.constant(np.int32(self._size), name=name)
        self._in_loop("size")
        if self._value is None:
            return ops.identity(_int32(self._min_size), name=name)
        return ops.identity(ops.shape(self._value)[0], name=name)

    def identity(self):
        return self

    def close(self, name=None):
        return ops.no_op(name=name)

    # ---- element access ---------------------------------------------------------------------

    def _check_element(self, dims, what):
        """Raises ValueError, as TF1's, where static shape `dims` cannot be an element's."""
        if dims is None or self._element_shape is None:
            return
        want = self._element_shape
        if len(dims) != len(want) or any(a is not None and b is not None and a != b
                                         for a, b in zip(dims, want)):
            raise ValueError("TensorArray.%s: inconsistent shapes: saw shape %s but expected %s "
                             "(every element of TensorArray %s has one shape)"
                             % (what, dims, want, self._name))

    def write(self, index, value, name=None):
        """A new TensorArray with element `index` set to `value`."""
        value = convert_to_tensor(value, dtype=self._dtype)
        index = _int32(index)
        self._check_element(value.shape.as_list() if value.shape.ndims is not None else None,
                            "write")
        if self._loop is not None:
            if self._pending is not None:
                self._in_loop("write (a second one)")
            out = TensorArray(self._dtype, name=self._name, dynamic_size=True, size=0,
                              element_shape=self._element_shape)
            out._value, out._min_size, out._loop = self._value, self._min_size, self._loop
            out._pending = (index, value)
            return out
        if self._dynamic:
            return self._place(ops.reshape(index, [1]), ops.expand_dims(value, 0))
        self._ensure(value, "write")
        chosen = ops.equal(_count_up(ops.constant(np.int32(self._size))), index)
        new = _rows_where(chosen, ops.expand_dims(value, 0), self._value,
                          len(self._element_shape))
        return self._with(ops.identity(new, name=name))

    def read(self, index, name=None):
        """Element `index`."""
        return array_ops.gather(self._contents("read"), _int32(index), name=name)

    def stack(self, name=None):
        """All elements as one tensor [size] + element shape."""
        self._in_loop("stack")
        return ops.identity(self._contents("stack"), name=name)

    def gather(self, indices, name=None):
        """The elements at `indices`, stacked."""
        return array_ops.gather(self._contents("gather"), _int32(indices), name=name)

    def concat(self, name=None):
        """The elements joined along their first dimension."""
        self._in_loop("concat")
        flow = self._contents("concat")
        return ops.reshape(flow, [-1] + flow.shape.as_list()[2:], name=name)

    def unstack(self, value, name=None):
        """A TensorArray whose elements are the rows of `value`."""
        self._in_loop("unstack")
        value = convert_to_tensor(value, dtype=self._dtype)
        dims = value.shape.as_list() if value.shape.ndims else None
        if self._dynamic:
            if value.shape.ndims == 0:
                raise ValueError("TensorArray.unstack needs a value with a first dimension")
            return self._with(ops.identity(value, name=name))
        if not dims or dims[0] is None:
            raise ValueError("TensorArray.unstack needs a value with a known first dimension, "
                             "got %s" % value.shape)
        if dims[0] != self._size:
            raise ValueError("TensorArray.unstack: %d rows for an array of size %d"
                             % (dims[0], self._size))
        return self._with(ops.identity(value, name=name))

    def scatter(self, indices, value, name=None):
        """A new TensorArray with element indices[k] set to value[k]."""
        self._in_loop("scatter")
        value = convert_to_tensor(value, dtype=self._dtype)
        idx = ops.reshape(_int32(indices), [-1])
        if value.shape.ndims:
            self._check_element(value.shape.as_list()[1:], "scatter")
        if self._dynamic:
            return self._place(idx, value)
        dims = value.shape.as_list()
        self._ensure(ops.zeros(dims[1:], dtype=self._dtype), "scatter")
        from shardflow.segment_ops import unsorted_segment_sum
        placed = unsorted_segment_sum(value, idx, self._size)
        hit = unsorted_segment_sum(ops.ones_like(idx), idx, self._size)
        new = _rows_where(ops.greater(hit, 0), placed, self._value, len(self._element_shape))
        return self._with(ops.identity(new, name=name))

    def split(self, value, lengths, name=None):
        """A new TensorArray of value's pieces along dimension 0 (equal lengths only here)."""
        self._in_loop("split")
        lengths = [int(n) for n in np.asarray(lengths).reshape(-1)]
        count = len(lengths) if self._dynamic else self._size
        if len(set(lengths)) != 1 or len(lengths) != count:
            raise ValueError("TensorArray.split: %d equal lengths needed, got %r"
                             % (count, lengths))
        value = convert_to_tensor(value, dtype=self._dtype)
        dims = value.shape.as_list()
        return self._with(ops.reshape(value, [count, lengths[0]] + dims[1:], name=name))

    def __repr__(self):
        size = "dynamic" if self._dynamic else self._size
        return "<sf.TensorArray size=%s dtype=%s>" % (size, self._dtype.name)


__all__ = ["TensorArray"]
