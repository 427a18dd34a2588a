"""Names of TF 1.15's core namespace that TF1 programs use and that are compositions of the
engine's ops: element-wise math (logical_xor, rint, erfc, erfinv, polyval, saturate_cast),
shapes (shape_n, broadcast_static_shape, broadcast_dynamic_shape), sorting and searching
(sort, argsort, searchsorted, roll, invert_permutation, unique_with_counts,
histogram_fixed_width_bins), norms and sums (reduce_euclidean_norm, clip_by_average_norm,
accumulate_n), IndexedSlices and is_tensor, init_scope, get_local_variable,
enable/disable_resource_variables, py_function, and the initializers TF1 has under
tf.initializers and tf.keras.initializers that shardflow lacked.

Example::

    s = sf.sort(x, direction="DESCENDING")              # along the last axis
    i = sf.searchsorted(edges, values, side="right")
    y = sf.roll(x, shift=sf.placeholder(sf.int32, []), axis=1)

Each is a few existing ops, so gradients flow where TF1's do (sort, roll, polyval, erfc,
erfinv, reduce_euclidean_norm, clip_by_average_norm). sort, argsort and searchsorted compare
every pair of entries along the axis (time and memory grow with its size squared), which suits
the axes TF1 programs sort (scores, a few thousand at most); NaNs are not ordered.
"""

import collections
import contextlib

import numpy as np

from shardflow import array_composites, array_ops, check_ops, dtypes, ops, segment_ops
from shardflow.framework import (Tensor, TensorShape, convert_to_tensor, get_default_graph,
                                 register_tensor_conversion_function)
from shardflow.tensor_util import get_static_value

# ---- element-wise ----------------------------------------------------------------------------


def logical_xor(x, y, name="LogicalXor"):
    """x XOR y, element-wise on bools (broadcasting), as TF1's tf.math.logical_xor."""
    return ops.logical_and(ops.logical_or(x, y), ops.logical_not(ops.logical_and(x, y)),
                           name=name)


def rint(x, name=None):
    """x rounded to the nearest integer, halves to even (TF1's tf.math.rint; as tf.round)."""
    return ops.round(x, name=name)


def saturate_cast(value, dtype, name=None):
    """`value` cast to `dtype`, first clamped to dtype's range where value's dtype reaches
    beyond it, as TF1's tf.saturate_cast (TF's clamps are in value's dtype, as here)."""
    value = convert_to_tensor(value)
    dtype = dtypes.as_dtype(dtype)
    lo_in, hi_in = _limits(value.dtype)
    lo_out, hi_out = _limits(dtype)
    if lo_in < lo_out:
        value = ops.maximum(value, np.asarray(lo_out).astype(value.dtype.as_numpy_dtype))
    if hi_in > hi_out:
        value = ops.minimum(value, np.asarray(hi_out).astype(value.dtype.as_numpy_dtype))
    return ops.cast(value, dtype, name=name)


def _limits(dtype):
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    if np_dtype == np.bool_:
        return 0, 1
    info = np.iinfo(np_dtype) if np_dtype.kind in "iu" else np.finfo(np_dtype)
    return info.min, info.max


def _erfc64(x):
    """erfc of a float64 tensor: 1 - erf(x) below 2.5 (no cancellation there: erfc >= 4e-4,
    relative error < 1e-13), else the continued fraction
    erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))), 30 terms
    (relative error < 2e-13 for x >= 2.5). The other branch's input is clamped so that its
    gradient stays finite (Note [Stable composites] in shardflow/nn.py)."""
    small = ops.less(x, 2.5)
    tail_x = ops.maximum(x, 2.5)
    f = tail_x
    for k in range(30, 0, -1):
        f = tail_x + (k / 2.0) / f
    # (A 0-d float64 array: a Python float or NumPy scalar becomes a float32 literal first.)
    tail = ops.exp(-ops.square(tail_x)) * np.asarray(1.0 / np.sqrt(np.pi)) / f
    return array_ops.where(small, 1.0 - ops.erf(ops.minimum(x, 2.5)), tail)


def _float64(x, what):
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError("%s takes a floating-point tensor, got %s (%s)"
                        % (what, x.name, x.dtype.name))
    return x, ops.cast(x, dtypes.float64)


def erfc(x, name=None):
    """The complementary error function 1 - erf(x), accurate where it is small (large x), as
    TF1's tf.math.erfc; computed in float64 and cast back. Its gradient is
    -2 / sqrt(pi) * exp(-x^2) (to the accuracy of the composition)."""
    x, x64 = _float64(x, "erfc")
    return ops.cast(_erfc64(x64), x.dtype, name=name)


def erfinv(x, name=None):
    """The inverse of erf on (-1, 1) (+-inf at +-1, NaN outside), as TF's tf.math.erfinv.
    Giles' single-precision approximation ("Approximating the erfinv function", 2010) refined
    by three Newton steps in float64 on erf (|x| < 0.5) or log(erfc) (nearer 1, where
    1 - |x| keeps its digits), so float32 and float64 results are accurate to their
    precision. The gradient, sqrt(pi) / 2 * exp(erfinv(x)^2), comes from the Newton steps."""
    x, y = _float64(x, "erfinv")
    a = ops.abs(y)
    inside = ops.less(a, 1.0)
    a_safe = array_ops.where(inside, a, ops.zeros_like(a) + 0.5)
    w = -ops.log((1.0 - a_safe) * (1.0 + a_safe))
    w1 = ops.minimum(w, 5.0) - 2.5
    p1 = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        p1 = c + p1 * w1
    w2 = ops.sqrt(ops.maximum(w, 5.0)) - 3.0
    p2 = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        p2 = c + p2 * w2
    r = ops.stop_gradient(array_ops.where(ops.less(w, 5.0), p1, p2) * a_safe)
    # Newton on erf(r) = y below 0.5 (signed, so that the gradient at 0 is right); above, on
    # log(erfc(r)) = log(1 - |y|), which is nearly quadratic in r, so that the steps converge
    # in the tail too.
    use_erf = ops.less(a_safe, 0.5)
    two_over_sqrt_pi = np.asarray(2.0 / np.sqrt(np.pi))
    y_small = array_ops.where(use_erf, y, ops.zeros_like(y))
    r_small = array_ops.where(use_erf, array_ops.where(ops.less(y, 0.0), -r, r),
                              ops.zeros_like(r))
    log_rest = ops.log(1.0 - ops.maximum(a_safe, 0.5))
    for _ in range(3):
        r_small = r_small - (ops.erf(r_small) - y_small) / (
            two_over_sqrt_pi * ops.exp(-ops.square(r_small)))
        c = _erfc64(r)
        r = r - (log_rest - ops.log(c)) * c / (two_over_sqrt_pi * ops.exp(-ops.square(r)))
    out = array_ops.where(use_erf, r_small, array_ops.where(ops.less(y, 0.0), -r, r))
    inf = ops.sign(y) * np.inf
    out = array_ops.where(inside, out,
                          array_ops.where(ops.equal(a, 1.0), inf, ops.zeros_like(y) + np.nan))
    return ops.cast(out, x.dtype, name=name)


def polyval(coeffs, x, name=None):
    """coeffs[0] * x^(n-1) + ... + coeffs[n-1] by Horner's rule, as TF1's tf.math.polyval
    (`coeffs` a list of tensors or numbers; an empty list gives zeros like x)."""
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError("Argument coeffs must be list type found {}.".format(type(coeffs)))
    x = convert_to_tensor(x)
    if not coeffs:
        return ops.zeros_like(x, name=name)
    coeffs = [convert_to_tensor(c, dtype=x.dtype) if not isinstance(c, Tensor) else c
              for c in coeffs]
    p = coeffs[0]
    for c in coeffs[1:]:
        p = c + p * x
    return ops.identity(p, name=name)


# ---- shapes ----------------------------------------------------------------------------------


def shape_n(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The shapes of the tensors in `input`, a list of 1-D tensors (TF1's tf.shape_n)."""
    return [ops.shape(x, out_type=out_type) for x in input]


def broadcast_static_shape(shape_x, shape_y):
    """The TensorShape that broadcasting shapes `shape_x` and `shape_y` gives (unknown
    dimensions stay unknown unless the other side fixes them); ValueError when they are
    incompatible, as TF1's tf.broadcast_static_shape."""
    sx, sy = TensorShape(shape_x), TensorShape(shape_y)
    if sx.ndims is None or sy.ndims is None:
        return TensorShape(None)
    a, b = sx.as_list(), sy.as_list()
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out = []
    for da, db in zip(a, b):
        if da is None or db is None:
            known = db if da is None else da
            out.append(known if known is not None and known > 1 else None)
        elif da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise ValueError("Incompatible shapes for broadcasting: %s and %s" % (sx, sy))
    return TensorShape(out)


def broadcast_dynamic_shape(shape_x, shape_y):
    """The broadcast of two 1-D integer shape tensors, computed when the graph runs (a step
    whose shapes are incompatible fails with InvalidArgumentError), as TF1's
    tf.broadcast_dynamic_shape."""
    sx, sy = convert_to_tensor(shape_x), convert_to_tensor(shape_y)
    if sx.dtype != sy.dtype:
        sy = ops.cast(sy, sx.dtype)
    rx, ry = ops.shape(sx)[0], ops.shape(sy)[0]
    rank = ops.maximum(rx, ry)

    def pad(s, r):
        ones = ops.fill(ops.reshape(rank - r, [1]), ops.constant(1, dtype=s.dtype))
        return ops.concat([ones, s], 0)
    a, b = pad(sx, rx), pad(sy, ry)
    ok = array_ops.reduce_all(ops.logical_or(ops.equal(a, b), ops.logical_or(
        ops.equal(a, 1), ops.equal(b, 1))))
    check = check_ops.Assert(ok, ["Incompatible shapes for broadcasting:", sx, sy])
    with get_default_graph().control_dependencies([check]):
        return array_ops.where(ops.equal(a, 1), b, a)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """`a` with its last two dimensions swapped (TF1's tf.matrix_transpose, as
    tf.linalg.matrix_transpose)."""
    from shardflow.namespaces import _matrix_transpose
    return _matrix_transpose(a, name=name, conjugate=conjugate)


# ---- sums and norms --------------------------------------------------------------------------


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(x^2)) over `axis` (all axes when None), as TF's tf.math.reduce_euclidean_norm;
    integer inputs give the truncated root in their dtype, as TF's kernel."""
    x = convert_to_tensor(input_tensor)
    if x.dtype.is_integer:
        x64 = ops.cast(x, dtypes.float64)
        norm = ops.sqrt(ops.reduce_sum(ops.square(x64), axis=axis, keepdims=keepdims))
        return ops.cast(ops.floor(norm), x.dtype, name=name)
    return ops.sqrt(ops.reduce_sum(ops.square(x), axis=axis, keepdims=keepdims), name=name)


def clip_by_average_norm(t, clip_norm, name=None):
    """`t` scaled so that its L2 norm divided by its number of elements is at most
    `clip_norm`, as TF1's tf.clip_by_average_norm:
    t * clip_norm * min(size(t) / ||t||, 1 / clip_norm)."""
    t = convert_to_tensor(t)
    n = ops.cast(array_composites.dim_size(ops.reshape(t, [-1]), 0), t.dtype) \
        if t.shape.num_elements() is None else np.asarray(t.shape.num_elements(),
                                                          t.dtype.as_numpy_dtype)
    l2norm_inv = ops.rsqrt(ops.reduce_sum(t * t))
    clip_norm = ops.cast(convert_to_tensor(clip_norm), t.dtype) \
        if isinstance(clip_norm, Tensor) else np.asarray(clip_norm, t.dtype.as_numpy_dtype)
    return ops.identity(t * clip_norm * ops.minimum(l2norm_inv * n, 1.0 / clip_norm), name=name)


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The element-wise sum of the tensors in `inputs` (same shape and dtype), as TF1's
    tf.math.accumulate_n; `shape` and `tensor_dtype`, when given, must match them."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype "
                         "and shape")
    inputs = [convert_to_tensor(x) for x in inputs]
    if any(x.dtype != inputs[0].dtype for x in inputs):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype "
                         "and shape")
    if tensor_dtype is not None and dtypes.as_dtype(tensor_dtype) != inputs[0].dtype:
        raise TypeError("tensor_dtype is {}, but input is of type {}".format(
            dtypes.as_dtype(tensor_dtype).name, inputs[0].dtype.name))
    shape = TensorShape(shape)
    for x in inputs:
        if not shape.is_compatible_with(x.shape):
            raise ValueError("shape of input %s is %s, not compatible with %s"
                             % (x.name, x.shape, shape))
    if len(inputs) == 1:
        return ops.identity(inputs[0], name=name)
    return ops.add_n(inputs, name=name)


# ---- sorting and searching -------------------------------------------------------------------


def _rows(x, axis, what):
    """x with `axis` moved last and the rest flattened: (rows [B, n], perm, transposed)."""
    if x.shape.ndims is None:
        raise ValueError("%s needs a tensor of known rank" % what)
    rank = x.shape.ndims
    if rank == 0:
        raise ValueError("%s needs a tensor of rank >= 1" % what)
    axis = int(axis) + rank if int(axis) < 0 else int(axis)
    if not 0 <= axis < rank:
        raise ValueError("%s: axis %d is out of range for rank %d" % (what, axis, rank))
    perm = [d for d in range(rank) if d != axis] + [axis]
    moved = x if axis == rank - 1 else ops.transpose(x, perm)
    n = array_composites.dim_size(moved, -1)
    # The row count is the product of the other sizes, not -1: with n == 0 (an empty axis)
    # reshape cannot infer a -1.
    lead = [array_composites.dim_size(moved, d) for d in range(rank - 1)]
    rows = 1
    if any(isinstance(d, Tensor) for d in lead):
        rows = ops.reduce_prod(ops.shape(moved)[:-1])
    else:
        rows = int(np.prod(lead, dtype=np.int64))
    return ops.reshape(moved, array_composites.shape_of([rows, n])), moved, perm


def _back(rows, moved, perm, name):
    out = ops.reshape(rows, ops.shape(moved))
    out.set_shape(moved.shape)
    if perm == list(range(len(perm))):
        return ops.identity(out, name=name)
    inverse = list(np.argsort(perm))
    return ops.transpose(out, inverse, name=name)


def _ranked(rows, descending):
    """top_k over the whole last dimension of rows [B, n]: (values, indices), largest first,
    or smallest first when not descending (top_k of an order-reversed copy: -x for floats,
    -x - 1 for integers, which cannot overflow; unsigned and small integers via int32/int64).
    Equal entries keep their order either way, as TF's top_k-based sort."""
    from shardflow import nn
    n = array_composites.dim_size(rows, 1)
    n = ops.cast(n, dtypes.int32) if isinstance(n, Tensor) else n
    if descending:
        return nn.top_k(rows, n)
    dtype = rows.dtype
    if dtype.is_floating:
        values, indices = nn.top_k(ops.negative(rows), n)
        return ops.negative(values), indices
    wide = dtypes.int64 if dtype == dtypes.int64 else dtypes.int32
    flipped = ops.subtract(ops.negative(ops.cast(rows, wide)), ops.cast(1, wide))
    values, indices = nn.top_k(flipped, n)
    return ops.cast(ops.subtract(ops.negative(values), ops.cast(1, wide)), dtype), indices


def _direction(direction):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError("Unknown direction: {}".format(direction))
    return direction == "DESCENDING"


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The indices (int32) that sort `values` along `axis`, as TF's tf.argsort (top_k over the
    axis: O(n log n)); equal entries keep their order."""
    descending = _direction(direction)
    x = convert_to_tensor(values)
    rows, moved, perm = _rows(x, axis, "argsort")
    _, order = _ranked(rows, descending)
    return _back(order, moved, perm, name)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis`, as TF's tf.sort (top_k over the axis: O(n log n)); the
    gradient goes back to each entry's place."""
    descending = _direction(direction)
    x = convert_to_tensor(values)
    rows, moved, perm = _rows(x, axis, "sort")
    ordered, _ = _ranked(rows, descending)
    return _back(ordered, moved, perm, name)


def searchsorted(sorted_sequence, values, side="left", out_type=dtypes.int32, name=None):
    """Where each of `values` would go in `sorted_sequence` to keep it sorted, along the last
    dimension (the leading dimensions of both are batch dimensions and must match), as TF's
    tf.searchsorted: side="left" counts the entries < v, "right" those <= v."""
    if side not in ("left", "right"):
        raise ValueError("side must be 'left' or 'right', got %r" % (side,))
    seq = convert_to_tensor(sorted_sequence)
    v = convert_to_tensor(values, dtype=seq.dtype) if not isinstance(values, Tensor) \
        else values
    before = ops.less if side == "left" else ops.less_equal
    hits = before(ops.expand_dims(seq, -2), ops.expand_dims(v, -1))   # [..., k, m]
    return ops.reduce_sum(ops.cast(hits, dtypes.as_dtype(out_type)), axis=-1, name=name)


def _static_ints(value, what):
    if isinstance(value, Tensor):
        static = get_static_value(value)
        if static is None:
            raise ValueError("roll: %s must be known when the graph is built (a constant), "
                             "got %s" % (what, value.name))
        value = static
    return [int(a) for a in np.reshape(np.asarray(value), [-1])]


def roll(input, shift, axis, name=None):  # noqa: A002
    """`input` with its elements shifted by `shift` places along `axis` (wrapping around),
    as TF's tf.roll. shift and axis are ints or 1-D lists of equal length; `shift` may be a
    tensor fed at run time; `axis` must be known when the graph is built. An axis named twice
    is shifted by the sum. Gradients flow back through the shifts."""
    x = convert_to_tensor(input)
    if x.shape.ndims is None:
        raise ValueError("roll needs a tensor of known rank")
    axes = _static_ints(axis, "axis")
    scalar_shift = not isinstance(shift, Tensor) and np.ndim(shift) == 0
    if isinstance(shift, Tensor):
        scalar_shift = shift.shape.ndims == 0
    if not scalar_shift and not isinstance(shift, Tensor) and len(np.reshape(shift, [-1])) \
            != len(axes):
        raise ValueError("roll: shift and axis must have the same length")
    out = x
    for k, ax in enumerate(axes):
        if not -x.shape.ndims <= ax < x.shape.ndims:
            raise ValueError("roll: axis %d is out of range for rank %d" % (ax, x.shape.ndims))
        ax = ax % x.shape.ndims
        if isinstance(shift, Tensor):
            s = ops.cast(shift if scalar_shift else shift[k], dtypes.int32)
        else:
            s = int(shift) if scalar_shift else int(np.reshape(shift, [-1])[k])
        n = array_composites.dim_size(x, ax)
        source = ops.floormod(array_composites.iota(n) - s, n)
        out = array_ops.gather(out, source, axis=ax)
    return ops.identity(out, name=name)


def invert_permutation(x, name=None):
    """y with y[x[i]] = i for the permutation x (a 1-D int32/int64 vector), as TF1's
    tf.invert_permutation; a step whose x is not a permutation of 0..n-1 fails with
    InvalidArgumentError."""
    x = convert_to_tensor(x)
    if not x.dtype.is_integer or x.shape.ndims not in (None, 1):
        raise ValueError("invert_permutation takes a 1-D int32 or int64 vector, got %s (%s)"
                         % (x.shape, x.dtype.name))
    n = array_composites.dim_size(x, 0)
    positions = array_composites.iota(n, x.dtype)
    in_range = array_ops.reduce_all(ops.logical_and(ops.greater_equal(x, 0), ops.less(x, n)))
    check_range = check_ops.Assert(in_range, ["invert_permutation: x is not a permutation:", x])
    with get_default_graph().control_dependencies([check_range]):
        safe = ops.identity(x)
    counts = segment_ops.unsorted_segment_sum(ops.ones_like(safe), safe, n)
    check_once = check_ops.Assert(array_ops.reduce_all(ops.equal(counts, 1)),
                                  ["invert_permutation: x is not a permutation:", x])
    with get_default_graph().control_dependencies([check_once]):
        return ops.identity(segment_ops.unsorted_segment_sum(positions, safe, n), name=name)


UniqueWithCounts = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    """(y, idx, count): tf.unique's y and idx and how often each of y occurs in x, as TF1's
    tf.unique_with_counts (count of dtype out_idx)."""
    y, idx = segment_ops.unique(x, out_idx=out_idx)
    n = array_composites.dim_size(y, 0)
    count = segment_ops.unsorted_segment_sum(ops.ones_like(idx), idx, n)
    return UniqueWithCounts(y, idx, ops.identity(count, name=name))


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=dtypes.int32, name=None):
    """The bin (0 .. nbins - 1) of each of `values` among nbins equal bins over value_range =
    [lo, hi] (values outside go to the first or last bin), of values' shape, as TF1's
    tf.histogram_fixed_width_bins; computed in values' dtype as TF."""
    values = convert_to_tensor(values)
    value_range = ops.cast(convert_to_tensor(value_range), values.dtype)
    flat = ops.reshape(values, [-1])
    scaled = (flat - value_range[0]) / (value_range[1] - value_range[0])
    nbins_f = ops.cast(convert_to_tensor(nbins), values.dtype) if isinstance(nbins, Tensor) \
        else np.asarray(nbins, values.dtype.as_numpy_dtype)
    indices = ops.floor(nbins_f * scaled)
    indices = ops.clip_by_value(indices, 0.0 * nbins_f, nbins_f - 1)
    return ops.reshape(ops.cast(indices, dtype), ops.shape(values), name=name)


# ---- IndexedSlices, is_tensor ----------------------------------------------------------------


class IndexedSlices:
    """A sparse set of slices of a dense tensor (TF1's tf.IndexedSlices): dense[indices[i]] =
    values[i], other rows zero, dense_shape (optional) the dense tensor's shape. shardflow's
    gradients are dense tensors, so IndexedSlices appear only where a program makes them; ops
    taking a tensor convert one to its dense value (repeated indices add up), as TF's."""

    def __init__(self, values, indices, dense_shape=None):
        self._values = convert_to_tensor(values)
        self._indices = convert_to_tensor(indices)
        self._dense_shape = None if dense_shape is None else convert_to_tensor(dense_shape)

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)
    name = property(lambda self: self._values.name)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)
    device = property(lambda self: self._values.device)

    def __neg__(self):
        return IndexedSlices(ops.negative(self._values), self._indices, self._dense_shape)

    def __repr__(self):
        return "IndexedSlices(indices=%s, values=%s%s)" % (
            self._indices, self._values,
            "" if self._dense_shape is None else ", dense_shape=%s" % self._dense_shape)


def _indexed_slices_to_dense(value, dtype=None, name=None, as_ref=False):
    if value.dense_shape is None:
        raise ValueError("Tensor conversion requested for IndexedSlices without dense_shape: %s"
                         % (value,))
    if dtype is not None and dtypes.as_dtype(dtype) != value.dtype:
        raise ValueError("Tensor conversion requested dtype %s for IndexedSlices with dtype %s"
                         % (dtypes.as_dtype(dtype).name, value.dtype.name))
    rows = ops.cast(value.dense_shape[0], dtypes.int32)
    dense = segment_ops.unsorted_segment_sum(value.values, value.indices, rows)
    return ops.reshape(dense, ops.cast(value.dense_shape, dtypes.int32), name=name)


register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_dense)


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    """`value` itself when it is an IndexedSlices or a SparseTensor (ValueError when `dtype`
    is given and differs from its dtype), else convert_to_tensor(value, dtype, name), as
    TF1's tf.convert_to_tensor_or_indexed_slices."""
    from shardflow.sparse_tensor import SparseTensor
    if isinstance(value, (IndexedSlices, SparseTensor)):
        if dtype is not None and dtypes.as_dtype(dtype) != value.dtype:
            raise ValueError("Tensor conversion requested dtype %s for Tensor with dtype %s: %r"
                             % (dtypes.as_dtype(dtype).name, value.dtype.name, value))
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def is_tensor(x):
    """Whether `x` is a tensor-like graph value (Tensor, Variable, SparseTensor,
    IndexedSlices), not a Python or NumPy value, as TF1's tf.is_tensor."""
    from shardflow.sparse_tensor import SparseTensor
    from shardflow.variables import Variable
    return isinstance(x, (Tensor, Variable, SparseTensor, IndexedSlices)) or \
        bool(getattr(x, "is_tensor_like", False))


# ---- graph construction helpers --------------------------------------------------------------


@contextlib.contextmanager
def init_scope():
    """TF1's tf.init_scope in graph mode: ops built inside go into the outermost graph (out
    of a while_loop's or cond's function), under the current name scope, with no control
    dependencies (so initialisers built inside never wait on the ops around them)."""
    g = get_default_graph()
    outer = g._outermost() if hasattr(g, "_outermost") else g
    scope = g._name_scope
    with outer.as_default(), outer.name_scope(scope + "/" if scope else None), \
            outer.control_dependencies(None):
        yield


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, caching_device=None,
                       partitioner=None, validate_shape=True, use_resource=None,
                       custom_getter=None, constraint=None, synchronization=None,
                       aggregation=None):
    """tf.get_variable for a local variable, as TF1's tf.get_local_variable: in
    GraphKeys.LOCAL_VARIABLES (and `collections`), never trainable, so it is left out of
    global_variables and the Saver and set by local_variables_initializer."""
    from shardflow.framework import GraphKeys
    from shardflow.variable_scope import get_variable
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=False, collections=collections,
                        caching_device=caching_device, partitioner=partitioner,
                        validate_shape=validate_shape, use_resource=use_resource,
                        custom_getter=custom_getter, constraint=constraint,
                        synchronization=synchronization, aggregation=aggregation)


def enable_resource_variables():
    """Nothing to do: shardflow's variables are always resource variables (a VarHandleOp,
    read with ReadVariableOp and set with AssignVariableOp, as TF's ResourceVariable), which
    is what TF1's tf.enable_resource_variables asks for."""


def disable_resource_variables():
    """Nothing to do, and nothing changes: shardflow has only resource variables (TF1's
    reference variables do not exist here); accepted so that programs calling it run."""


def resource_variables_enabled():
    """True: shardflow's variables are always resource variables."""
    return True


class _EagerArray(np.ndarray):
    """An input of a py_function: a NumPy array that also answers .numpy(), as the eager
    tensors TF1's py_function passes do."""

    def numpy(self):
        plain = self.view(np.ndarray)
        return plain[()] if plain.ndim == 0 else plain


def py_function(func, inp, Tout, name=None):  # noqa: N803 (TF1's argument name)
    """TF1's tf.py_function over shardflow's py_func: `func` gets its inputs as NumPy arrays
    that also have .numpy() (TF passes eager tensors) and returns NumPy values or Python
    numbers; the result is one Tensor, or a list when `Tout` is a list. Unlike TF's, the
    node has no gradient and `func` cannot run shardflow ops eagerly (shardflow has no eager
    mode)."""
    from shardflow.script_ops import py_func

    def call(*args):
        result = func(*[np.asarray(a).view(_EagerArray) for a in args])
        if isinstance(result, (list, tuple)):
            return [np.asarray(r) for r in result]
        return result if result is None else np.asarray(result)
    return py_func(call, inp, Tout, stateful=True, name=name or "EagerPyFunc")


# ---- initializers ----------------------------------------------------------------------------


def _fans(shape):
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    receptive = float(np.prod(shape[:-2])) if len(shape) > 2 else 1.0
    return shape[-2] * receptive, shape[-1] * receptive


class _Init:
    """An initializer: a callable (shape, dtype=None, partition_info=None) -> tensor, with
    its arguments kept (get_config), as TF1's init_ops classes."""

    def __init__(self, dtype=dtypes.float32, **config):
        self.dtype = dtypes.as_dtype(dtype)
        self._config = config

    def get_config(self):
        return dict(self._config, dtype=self.dtype.name)

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class VarianceScaling(_Init):
    """TF 1.15's tf.initializers.variance_scaling (tf.keras.initializers.VarianceScaling):
    samples of variance scale / n, n the fan_in, fan_out or their mean; distribution
    "truncated_normal" (its stddev corrected by 0.8796..., as TF; "normal" is its old name),
    "untruncated_normal" or "uniform" (in +-sqrt(3 scale / n))."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=dtypes.float32):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float.")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError("Invalid `mode` argument:", mode)
        distribution = distribution.lower()
        if distribution not in ("normal", "uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError("Invalid `distribution` argument:", distribution)
        super().__init__(dtype, scale=scale, mode=mode, distribution=distribution, seed=seed)
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtypes.as_dtype(dtype or self.dtype)
        shape = [int(d) for d in shape]
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        scale = self.scale / max(1.0, n[self.mode])
        if self.distribution in ("normal", "truncated_normal"):
            return ops.truncated_normal(shape, 0.0, float(np.sqrt(scale)) / .87962566103423978,
                                        dtype=dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return ops.random_normal(shape, 0.0, float(np.sqrt(scale)), dtype=dtype,
                                     seed=self.seed)
        limit = float(np.sqrt(3.0 * scale))
        return ops.random_uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)


def lecun_normal(seed=None):
    """LeCun normal: truncated normal of variance 1 / fan_in (TF 1.15's
    tf.initializers.lecun_normal)."""
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    """LeCun uniform: uniform in +-sqrt(3 / fan_in) (tf.initializers.lecun_uniform)."""
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


class UniformUnitScaling(_Init):
    """TF1's tf.uniform_unit_scaling_initializer: uniform in +-sqrt(3 / input_size) * factor,
    input_size the product of all dimensions but the last (at least 1)."""

    def __init__(self, factor=1.0, seed=None, dtype=dtypes.float32):
        super().__init__(dtype, factor=factor, seed=seed)
        self.factor, self.seed = factor, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtypes.as_dtype(dtype or self.dtype)
        shape = [int(d) for d in shape]
        input_size = max(float(np.prod(shape[:-1])) if shape else 1.0, 1.0)
        limit = float(np.sqrt(3.0 / input_size) * self.factor)
        return ops.random_uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)


class Identity(_Init):
    """TF1's tf.initializers.identity (tf.keras.initializers.Identity): gain times the
    identity matrix; the shape must be 2-D (a ValueError otherwise, as TF's)."""

    def __init__(self, gain=1.0, dtype=dtypes.float32):
        super().__init__(dtype, gain=gain)
        self.gain = gain

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtypes.as_dtype(dtype or self.dtype)
        shape = [int(d) for d in shape]
        if len(shape) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices.")
        return ops.constant(self.gain * np.eye(*shape), dtype=dtype)


uniform_unit_scaling_initializer = UniformUnitScaling
identity_initializer = Identity

# The names tf.initializers (TF 1.15) has that shardflow's sf.initializers lacked, and those
# tf.keras.initializers has; shardflow/__init__.py adds them to both.
INITIALIZER_NAMES = {
    "identity": Identity, "lecun_normal": lecun_normal, "lecun_uniform": lecun_uniform,
    "uniform_unit_scaling": UniformUnitScaling, "variance_scaling": VarianceScaling,
}
KERAS_INITIALIZER_NAMES = {
    "Identity": Identity, "identity": Identity, "VarianceScaling": VarianceScaling,
    "lecun_normal": lecun_normal, "lecun_uniform": lecun_uniform,
}


__all__ = ["IndexedSlices", "accumulate_n", "argsort", "broadcast_dynamic_shape",
           "broadcast_static_shape", "clip_by_average_norm",
           "convert_to_tensor_or_indexed_slices", "disable_resource_variables",
           "enable_resource_variables", "erfc", "get_local_variable",
           "histogram_fixed_width_bins", "identity_initializer", "init_scope",
           "invert_permutation", "is_tensor", "logical_xor", "matrix_transpose", "py_function",
           "resource_variables_enabled", "rint", "roll", "saturate_cast", "searchsorted",
           "shape_n", "sort", "uniform_unit_scaling_initializer", "unique_with_counts"]


def _attach_to_namespaces():
    """Adds the initializers above to sf.initializers and sf.keras.initializers (with
    tf.initializers' ones / random_normal / random_uniform, which it lacked) and sf.nest to
    sf.contrib.framework. Called once by shardflow/__init__.py, after those exist."""
    from shardflow import contrib_framework, nest
    from shardflow.keras import initializers as keras_initializers
    from shardflow.variable_scope import (ones_initializer, random_normal_initializer,
                                          random_uniform_initializer)
    from shardflow.variables import initializers
    names = dict(INITIALIZER_NAMES, ones=ones_initializer, random_normal=random_normal_initializer,
                 random_uniform=random_uniform_initializer)
    for name, make in names.items():
        if not hasattr(initializers, name):
            setattr(initializers, name, staticmethod(make))
    for name, make in KERAS_INITIALIZER_NAMES.items():
        if not hasattr(keras_initializers, name):
            setattr(keras_initializers, name, make)
    for name in ("identity", "lecun_normal", "lecun_uniform"):
        keras_initializers._BY_NAME.setdefault(name, KERAS_INITIALIZER_NAMES[name])
    contrib_framework.nest = nest
