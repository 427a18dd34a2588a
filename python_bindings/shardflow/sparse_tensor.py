"""TF1's sparse tensors: ``SparseTensor`` (three dense tensors standing for one sparse value),
``SparseTensorValue`` (what a session returns for one, and takes as its feed) and
``sparse_placeholder``.

Example::

    sp = sf.sparse_placeholder(sf.float32, shape=[None, 5])
    dense = sf.sparse.to_dense(sp)
    value = sf.SparseTensorValue(indices=[[0, 1], [2, 4]], values=[1.0, 2.0], dense_shape=[3, 5])
    sess.run(dense, {sp: value})                 # [3, 5] with two entries set
    sess.run(sp, {sp: value})                    # a SparseTensorValue of NumPy arrays

A SparseTensor is a plain Python object over three graph tensors: `indices` (int64 [N, rank],
the coordinates of the N stored entries), `values` ([N], any dtype) and `dense_shape` (int64
[rank]). The ops that read one (shardflow/sparse_ops.py) are compositions of dense ops, so
gradients flow to `values` wherever they flow through those ops. Most of them need the rank to
be known when the graph is built (from `indices`' second dimension or `dense_shape`'s length).
"""

import collections

import numpy as np

from shardflow import dtypes, ops
from shardflow.framework import Tensor, TensorShape, convert_to_tensor

SparseTensorValue = collections.namedtuple("SparseTensorValue",
                                           ["indices", "values", "dense_shape"])
SparseTensorValue.__doc__ = """A sparse value in NumPy: indices [N, rank], values [N],
dense_shape [rank] (what ``sess.run`` returns for a SparseTensor; a feed for one)."""


def _int64_tensor(value, what):
    """`value` as an int64 tensor (int32 tensors are cast; Python lists become constants)."""
    if isinstance(value, Tensor):
        if value.dtype == dtypes.int64:
            return value
        if not value.dtype.is_integer:
            raise TypeError("SparseTensor: %s must be an integer tensor, got %s (%s)"
                            % (what, value.name, value.dtype.name))
        return ops.cast(value, dtypes.int64)
    return ops.constant(np.asarray(value, dtype=np.int64))


class SparseTensor:
    """A sparse tensor: the entries `values` at the coordinates `indices` of a tensor of shape
    `dense_shape`; every other entry is zero (or the default value of the op reading it).

    indices: int64 [N, rank] (int32 is cast); the ops that need a particular order (row-major,
        as TF1's canonical form) say so, and sf.sparse.reorder gives it.
    values: [N] of any dtype.
    dense_shape: int64 [rank]; a Python list (its known sizes become the static `shape`) or a
        tensor.

    Tensors are not copied: ``sp.values`` is the tensor given, so ``sf.gradients(loss,
    sp.values)`` works. ``sess.run(sp)`` returns a SparseTensorValue.
    """

    def __init__(self, indices, values, dense_shape, _static_dims=None):
        self._indices = _int64_tensor(indices, "indices")
        self._values = convert_to_tensor(values)
        self._dense_shape = _int64_tensor(dense_shape, "dense_shape")
        if _static_dims is None and not isinstance(dense_shape, Tensor):
            _static_dims = [int(d) for d in np.asarray(dense_shape).reshape(-1)]
        if _static_dims is None:
            rank = self._dense_shape.shape.as_list()[0] if self._dense_shape.shape.ndims else None
            if rank is None and self._indices.shape.ndims == 2:
                rank = self._indices.shape.as_list()[1]
            _static_dims = None if rank is None else [None] * rank
        self._shape = TensorShape(_static_dims)
        if self._indices.shape.ndims not in (None, 2):
            raise ValueError("SparseTensor: indices must be [N, rank], got shape %s"
                             % self._indices.shape.as_list())
        if self._values.shape.ndims not in (None, 1):
            raise ValueError("SparseTensor: values must be a vector [N], got shape %s"
                             % self._values.shape.as_list())

    @classmethod
    def from_value(cls, sparse_tensor_value):
        """A SparseTensor of constants for a SparseTensorValue (or a SparseTensor as it is)."""
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        indices, values, dense_shape = sparse_tensor_value
        return cls(indices, values, dense_shape)

    indices = property(lambda self: self._indices, doc="int64 [N, rank]: the coordinates.")
    values = property(lambda self: self._values, doc="[N]: the stored entries.")
    dense_shape = property(lambda self: self._dense_shape, doc="int64 [rank]: the full shape.")
    dtype = property(lambda self: self._values.dtype, doc="The values' dtype.")
    shape = property(lambda self: self._shape,
                     doc="The static dense shape (a TensorShape; None for unknown sizes).")
    op = property(lambda self: self._values.op, doc="The op making `values` (as in TF1).")
    graph = property(lambda self: self._values.graph)

    def get_shape(self):
        return self._shape

    @property
    def rank(self):
        """The static rank (None when unknown)."""
        return self._shape.ndims

    def eval(self, feed_dict=None, session=None):
        """The SparseTensorValue of this tensor in `session` (default: the default session)."""
        from shardflow.session import _session_for
        return _session_for(session).run(self, feed_dict)

    def _feeds(self, value):
        """[(tensor, array)] feeding this tensor's three parts with `value` (a
        SparseTensorValue or an (indices, values, dense_shape) tuple)."""
        if isinstance(value, SparseTensor):
            raise TypeError("feed a SparseTensorValue (NumPy arrays) for a SparseTensor, not "
                            "another SparseTensor")
        try:
            indices, values, dense_shape = value
        except (TypeError, ValueError):
            raise TypeError("the feed for a SparseTensor is a SparseTensorValue or an "
                            "(indices, values, dense_shape) tuple, not %r" % (value,)) from None
        indices = np.asarray(indices, dtype=np.int64)
        if indices.ndim == 1 and indices.size == 0:
            indices = indices.reshape(0, len(np.asarray(dense_shape).reshape(-1)))
        return [(self._indices, indices), (self._values, values),
                (self._dense_shape, np.asarray(dense_shape, dtype=np.int64))]

    def _cwise(self, y, op, what):
        """A SparseTensor of these indices whose values are `op`(values, y at each entry's
        coordinates), `y` a dense tensor broadcast to the dense shape (TF1's
        sparse_dense_cwise_mul / _div behind ``sp * y`` and ``sp / y``)."""
        from shardflow.array_ops import gather_nd
        y = convert_to_tensor(y, dtype=self.dtype)
        rank, y_rank = self.rank, y.shape.ndims
        if y_rank == 0:
            picked = y
        else:
            if rank is None or y_rank is None:
                raise ValueError("SparseTensor %s a dense tensor needs both ranks known" % what)
            if y_rank > rank:
                raise ValueError("SparseTensor %s: the dense operand (rank %d) must broadcast "
                                 "to the SparseTensor's rank %d" % (what, y_rank, rank))
            cols = self._indices[:, rank - y_rank:]
            # Right-aligned broadcasting: a size-1 dimension of y is read at 0.
            wide = ops.cast(ops.not_equal(ops.shape(y), 1), dtypes.int64)
            picked = gather_nd(y, ops.multiply(cols, ops.expand_dims(wide, 0)))
        return SparseTensor(self._indices, op(self._values, picked), self._dense_shape,
                            _static_dims=None if rank is None else self._shape.as_list())

    def __mul__(self, y):
        """``sp * y``: each stored value times y there (y dense, broadcast to sp's shape), a
        SparseTensor of sp's indices, as TF1."""
        return self._cwise(y, ops.multiply, "*")

    def __truediv__(self, y):
        """``sp / y``: each stored value divided by y there (y dense, broadcast), as TF1."""
        return self._cwise(y, ops.divide, "/")

    __div__ = __truediv__

    def __repr__(self):
        return "SparseTensor(indices=%r, values=%r, dense_shape=%r)" % (
            self._indices, self._values, self._dense_shape)


def convert_to_sparse(value, what="sp_input"):
    """`value` as a SparseTensor (a SparseTensorValue becomes constants)."""
    if isinstance(value, SparseTensor):
        return value
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    raise TypeError("%s must be a SparseTensor or SparseTensorValue, not %r" % (what, value))


def sparse_placeholder(dtype, shape=None, name=None):
    """A SparseTensor fed as a whole (TF1's tf.sparse_placeholder): placeholders for `values`
    ([None] of `dtype`) and `indices` (int64 [None, rank]); `dense_shape` is a constant when
    `shape` is fully known, else a placeholder (int64 [rank]). Feed a SparseTensorValue (or an
    (indices, values, dense_shape) tuple) for it: ``sess.run(y, {sp: value})``.

    `shape`: None (any rank), or a list whose None entries are sizes known only when fed.
    """
    prefix = (name + "/") if name else ""
    static = None if shape is None else [None if d is None or getattr(d, "value", 0) is None
                                         else int(d) for d in shape]
    rank = None if static is None else len(static)
    if static is not None and None not in static:
        dense_shape = ops.constant(np.asarray(static, np.int64),
                                   name=(prefix + "shape") if name else None)
    else:
        dense_shape = ops.placeholder(dtypes.int64, [rank],
                                      name=(prefix + "shape") if name else None)
    values = ops.placeholder(dtype, [None], name=(prefix + "values") if name else None)
    indices = ops.placeholder(dtypes.int64, [None, rank],
                              name=(prefix + "indices") if name else None)
    return SparseTensor(indices, values, dense_shape, _static_dims=static)


__all__ = ["SparseTensor", "SparseTensorValue", "convert_to_sparse", "sparse_placeholder"]
