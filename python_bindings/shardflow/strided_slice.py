"""TF1's tf.strided_slice and tensor indexing (``x[1:, ::-1]``, ``x[i]``, ``x[:n]``,
``x[..., None]``), composed from existing ops.

Example::

    x = sf.placeholder(sf.float32, [None, None])
    i = sf.placeholder(sf.int32, [])
    x[:, :-1]        # [None, None]; the last column dropped, whatever the width at run time
    x[i, ::-1]       # row i (negative counts from the end), reversed
    sf.strided_slice(x, [0, i], [2, i + 3])   # as x[0:2, i:i + 3]

Note [Strided slices]. Each dimension's begin, size and stride are worked out as TF's
ValidateStridedSliceOp does: a negative index counts from the end, a masked (``None``) bound
takes the whole dimension in the stride's direction, and the rest are clamped to the dimension
like Python slicing (``x[1:]`` of an empty dimension is empty, ``x[:100]`` of a 5-long one is
all 5). An integer index drops its dimension, and one out of range fails: when the graph is
built where the size is known (IndexError, also a ValueError), else when the step runs
(InvalidArgumentError).

Where a dimension's begin and size are known when the graph is built, it is a constant part of
one Slice op (a stride other than 1 gathers constant rows) -- the graph indexing built before
tensor bounds existed, so static graphs and their speed stay as they were. A dimension whose
bounds depend on the run (a tensor index or bound, a negative or clamped bound on a size known
only at run time) gathers the rows ``begin + stride * k``, k < size, computed in the graph from
Shape with Maximum/Minimum/FloorDiv/Select and Fill+Cumsum for the range. GatherV2 has a
gradient for any indices, where Slice's needs a constant begin and size.
"""

import operator

import numpy as np

from shardflow import array_ops, check_ops, dtypes, ops, tensor_util
from shardflow.framework import Tensor, convert_to_tensor


class IndexOutOfRangeError(IndexError, ValueError):
    """An integer index outside a dimension whose size is known when the graph is built
    (IndexError, so that iteration stops, and ValueError, as TF1's shape inference raises)."""


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """input_[begin[0]:end[0]:strides[0], ...] as TF1's tf.strided_slice: begin, end and
    strides are lists (of ints or int scalar tensors) or int vectors of known length; bit i
    of a mask makes entry i the whole dimension (begin_mask / end_mask), ``...``
    (ellipsis_mask), a new dimension of size 1 (new_axis_mask) or the single index begin[i],
    dropping the dimension (shrink_axis_mask). Bounds are clamped as in Note [Strided
    slices]; strides may be negative and are never 0."""
    del var  # TF1 takes it to assign through the slice; the read is the same
    begin = _vector(begin, "begin")
    end = _vector(end, "end")
    strides = [1] * len(begin) if strides is None else _vector(strides, "strides")
    if not len(begin) == len(end) == len(strides):
        raise ValueError("strided_slice: begin, end and strides have %d, %d and %d entries; "
                         "give each one entry per index" % (len(begin), len(end), len(strides)))
    spec = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if ellipsis_mask & bit:
            spec.append(("ellipsis",))
        elif new_axis_mask & bit:
            spec.append(("new",))
        elif shrink_axis_mask & bit:
            spec.append(("index", b))
        else:
            spec.append(("range", None if begin_mask & bit else b,
                          None if end_mask & bit else e, s))
    out = _apply(input_, spec)
    return ops.identity(out, name=name) if name else out


def getitem(tensor, key):
    """``tensor[key]`` as TF1 (tf.strided_slice): ints and int scalar tensors (dropping the
    dimension), slices with int or tensor bounds and steps, ``...`` and ``None`` (a new
    dimension of size 1). See Note [Strided slices]."""
    if not isinstance(key, tuple):
        key = (key,)
    spec = []
    for k in key:
        if k is None:
            spec.append(("new",))
        elif k is Ellipsis:
            spec.append(("ellipsis",))
        elif isinstance(k, slice):
            step = 1 if k.step is None else _scalar(k.step, "a slice step")
            spec.append(("range", _scalar(k.start, "a slice bound"),
                         _scalar(k.stop, "a slice bound"), step))
        else:
            spec.append(("index", _scalar(k, "an index")))
    return _apply(tensor, spec)


def _scalar(v, what):
    """v as a Python int or an int scalar tensor (None passes)."""
    if v is None:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if _is_tensor(v):
        t = convert_to_tensor(v)
        static = tensor_util.constant_value(t)  # a Const: as the int it holds
        if static is not None and static.ndim == 0 and static.dtype.kind in "iu":
            return int(static)
        if t.dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError("%s must be an int32 or int64 tensor, not %s (%s)"
                            % (what, t.dtype.name, t.name))
        if t.shape.ndims is None:
            t = ops.reshape(t, [])
        elif t.shape.ndims != 0:
            raise TypeError("%s must be a scalar tensor, not %s of shape %s"
                            % (what, t.name, t.shape.as_list()))
        return t
    raise TypeError("only integers, slices, ellipsis (...), None (tf.newaxis) and scalar "
                    "int32/int64 tensors are valid indices, got %r as %s" % (v, what))


def _vector(v, what):
    """strided_slice's begin / end / strides as a list of Python ints and scalar tensors."""
    if _is_tensor(v):
        t = convert_to_tensor(v)
        dims = t.shape.as_list() if t.shape.ndims is not None else None
        if dims is None or len(dims) != 1 or dims[0] is None:
            raise ValueError("strided_slice: %s must be a vector of known length, got %r"
                             % (what, t))
        static = tensor_util.constant_value(t)
        if static is not None and static.dtype.kind in "iu":
            return [int(x) for x in static.reshape(-1)]
        return [_scalar(ops.reshape(ops.slice(t, [k], [1]), []), what)
                for k in range(dims[0])]
    if isinstance(v, np.ndarray):
        v = v.reshape(-1).tolist()
    if not isinstance(v, (list, tuple)):
        raise TypeError("strided_slice: %s must be a list or an int vector, got %r" % (what, v))
    return [_scalar(x, what) for x in v]


def _is_tensor(v):
    from shardflow.variables import Variable
    return isinstance(v, (Tensor, Variable))


class _IndexMath:
    """Scalar index arithmetic: on Python ints where both sides are known when the graph is
    built, else with graph ops in one int dtype (int64 where any index tensor is int64)."""

    def __init__(self, x, dtype):
        self._x = x
        self.dtype = dtype
        self._shape = None

    def dim(self, dims, d):
        """The size of dimension d: a Python int where known, else read from Shape."""
        if dims[d] is not None:
            return dims[d]
        if self._shape is None:
            self._shape = ops.shape(self._x, out_type=self.dtype)
        return ops.reshape(ops.slice(self._shape, [d], [1]), [])

    def tensor(self, v):
        if isinstance(v, Tensor):
            return v if v.dtype == self.dtype else ops.cast(v, self.dtype)
        return ops.constant(v, dtype=self.dtype)

    def _binary(self, py, graph_op, a, b):
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            return py(a, b)
        return graph_op(self.tensor(a), self.tensor(b))

    def add(self, a, b):
        return a if isinstance(b, int) and b == 0 else self._binary(
            operator.add, ops.add, a, b)

    def sub(self, a, b):
        return self._binary(operator.sub, ops.subtract, a, b)

    def mul(self, a, b):
        return a if isinstance(b, int) and b == 1 else self._binary(
            operator.mul, ops.multiply, a, b)

    def floordiv(self, a, b):
        return self._binary(operator.floordiv, ops.floordiv, a, b)

    def maximum(self, a, b):
        return self._binary(max, ops.maximum, a, b)

    def minimum(self, a, b):
        return self._binary(min, ops.minimum, a, b)

    def less(self, a, b):
        return self._binary(operator.lt, ops.less, a, b)

    def select(self, cond, a, b):
        if not isinstance(cond, Tensor):
            return a if cond else b
        if not isinstance(a, Tensor) and not isinstance(b, Tensor) and a == b:
            return a
        return array_ops.where(cond, self.tensor(a), self.tensor(b))

    def arange(self, n):
        """[0, 1, ..., n - 1]: a constant for a Python n, else Fill + exclusive Cumsum."""
        if not isinstance(n, Tensor):
            return np.arange(n, dtype=self.dtype.as_numpy_dtype)
        ones = ops.fill(ops.reshape(n, [1]), ops.constant(1, dtype=self.dtype))
        return ops.cumsum(ones, exclusive=True)


def _expand(spec, rank):
    """spec with its ``...`` (or the implicit one at the end) as whole-dimension ranges."""
    ellipses = [i for i, s in enumerate(spec) if s[0] == "ellipsis"]
    if len(ellipses) > 1:
        raise ValueError("an index may have one ... at most")
    named = sum(s[0] in ("index", "range") for s in spec)
    if named > rank:
        raise IndexError("too many indices for a tensor of rank %d (%d given)" % (rank, named))
    whole = [("range", None, None, 1)] * (rank - named)
    if ellipses:
        i = ellipses[0]
        return spec[:i] + whole + spec[i + 1:]
    return spec + whole


def _index_dtype(spec):
    for s in spec:
        for v in s[1:]:
            if isinstance(v, Tensor) and v.dtype == dtypes.int64:
                return dtypes.int64
    return dtypes.int32


def _plan_index(m, dims, d, v):
    """The plan for an integer index v on dimension d (kept as size 1, squeezed later)."""
    n = dims[d]
    if not isinstance(v, Tensor):
        if n is not None:
            k = v + n if v < 0 else v
            if not 0 <= k < n:
                raise IndexOutOfRangeError("index %d is out of bounds for dimension %d of "
                                           "size %d" % (v, d, n))
            return ("slice", k, 1)
        if v >= 0:
            return ("slice", v, 1)  # the Slice kernel rejects it at run time when v >= size
    size = m.dim(dims, d)
    k = m.select(m.less(v, 0), m.add(v, size), v)
    return ("gather", ops.reshape(m.tensor(k), [1]))  # GatherV2 rejects it when out of range


def _plan_range(m, dims, d, b, e, s):
    """The plan for begin:end:stride on dimension d, and its static size (None if unknown)."""
    n = dims[d]
    if isinstance(s, Tensor):
        check = check_ops._check(ops.not_equal(s, ops.constant(0, dtype=s.dtype)),
                                 "strided_slice: the stride of dimension %d is 0" % d, None,
                                 "StrideIsNonZero")
        with s.graph.control_dependencies([check]):
            s = ops.identity(s)
    elif s == 0:
        raise ValueError("slice step cannot be zero (dimension %d)" % d)
    if n is None and isinstance(s, int) and s == 1 and e is None and (
            b is None or isinstance(b, int) and b == 0):
        return ("slice", 0, -1), None  # the whole dimension
    forward = m.less(0, s)
    size_n = m.dim(dims, d)
    lo = m.select(forward, 0, -1)  # the clamping range: [0, n] forward, [-1, n - 1] backward
    hi = m.add(size_n, lo)

    def clamp(x, masked):
        if x is None:
            return masked
        if not isinstance(x, Tensor) and x >= 0 and forward is True and (
                x == 0 or not isinstance(hi, Tensor) and x <= hi):
            return x  # already inside [0, n]
        x = m.select(m.less(x, 0), m.add(x, size_n), x)
        return m.minimum(m.maximum(x, lo), hi)

    first = clamp(b, m.select(forward, lo, hi))
    stop = clamp(e, m.select(forward, hi, lo))
    if isinstance(s, int) and s == 1:
        size = m.maximum(m.sub(stop, first), 0)
    else:  # ceil((stop - first) / s) = -((first - stop) // s)
        size = m.maximum(m.sub(0, m.floordiv(m.sub(first, stop), s)), 0)
    if not isinstance(size, Tensor):
        if s == 1 and not isinstance(first, Tensor):
            return ("slice", first, size), size
        if not isinstance(first, Tensor):
            rows = np.arange(first, first + s * size, s, dtype=np.int32)
            return ("gather", rows), size
    rows = m.add(m.mul(m.tensor(m.arange(size)), s), first)
    return ("gather", m.tensor(rows)), size if not isinstance(size, Tensor) else None


def _apply(tensor, spec):
    x = convert_to_tensor(tensor)
    if x.shape.ndims is None:
        raise ValueError("indexing needs a tensor of known rank, got %r" % x)
    dims = x.shape.as_list()
    spec = _expand(list(spec), len(dims))
    m = _IndexMath(x, _index_dtype(spec))
    begin, size, gathers, squeeze, new_axes, static = [], [], [], [], [], []
    d = 0
    for s in spec:
        if s[0] == "new":
            new_axes.append(len(static))
            static.append(1)
            continue
        if s[0] == "index":
            plan = _plan_index(m, dims, d, s[1])
            squeeze.append(d)
        else:
            plan, known = _plan_range(m, dims, d, *s[1:])
            static.append(dims[d] if plan[0] == "slice" and plan[2] == -1 else known)
        if plan[0] == "slice":
            begin.append(plan[1])
            size.append(plan[2])
        else:
            begin.append(0)
            size.append(-1)
            gathers.append((d, plan[1]))
        d += 1
    out = x
    if not gathers or any(b != 0 or z != -1 for b, z in zip(begin, size)):
        out = ops.slice(out, begin, size)
    for axis, rows in gathers:
        out = array_ops.gather(out, rows, axis=axis)
    if squeeze:
        out = ops.squeeze(out, squeeze)
    for axis in new_axes:
        out = ops.expand_dims(out, axis)
    out.set_shape(static)
    return out
