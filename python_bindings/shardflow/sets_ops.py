"""TF1's tf.sets: set operations along the last dimension of dense tensors or SparseTensors,
with results as SparseTensors laid out as TF's (also under TF1's names set_intersection,
set_difference, set_union, set_size).

Example::

    a = sf.constant([[1, 2, 3], [4, 5, 4]])
    b = sf.constant([[3, 1, 9], [6, 6, 6]])
    sf.sets.intersection(a, b)     # indices [[0, 0], [0, 1]], values [1, 3], dense_shape [2, 2]
    sf.sets.size(sf.sparse.from_dense(a))                      # [3, 2]

Each row (the last dimension, for every index of the others) is a set: repeated values count
once. A result row holds its values in ascending order at positions 0, 1, ...; entries are in
row-major order and dense_shape is the group shape plus the largest result row. A SparseTensor
input's entries must have distinct indices (TF's canonical form; the order may be any). The
work compares every pair of values within a row, so it suits rows of up to a few thousand.
Integer and floating types only: the engine compares no strings.
"""

import sys

from shardflow import array_composites, array_ops, dtypes, ops, segment_ops
from shardflow.framework import convert_to_tensor
from shardflow.sparse_tensor import SparseTensor, SparseTensorValue, convert_to_sparse


def _dense_and_mask(x, what):
    """(values, present): x as a dense tensor [groups..., n] and a bool mask of the entries
    that belong to its sets (all of a dense tensor's; a SparseTensor's stored ones)."""
    if isinstance(x, (SparseTensor, SparseTensorValue)):
        from shardflow.sparse_ops import _full_linear
        sp = convert_to_sparse(x, what)
        _check_dtype(sp.dtype, what)
        linear, total, shape = _full_linear(sp)
        n_entries = array_composites.dim_size(sp.values, 0)
        slot = segment_ops.unsorted_segment_sum(array_composites.iota(n_entries) + 1,
                                                ops.cast(linear, dtypes.int32),
                                                ops.cast(total, dtypes.int32))
        padded = ops.concat([ops.zeros([1], sp.dtype), sp.values], 0)
        values = ops.reshape(array_ops.gather(padded, slot), shape)
        present = ops.reshape(ops.greater(slot, 0), shape)
        rank = sp.rank
    else:
        values = convert_to_tensor(x)
        _check_dtype(values.dtype, what)
        present = ops.greater(ops.ones_like(ops.cast(values, dtypes.int32)), 0)
        rank = values.shape.ndims
    if rank is None:
        raise ValueError("%s: the rank must be known when the graph is built" % what)
    if rank < 2:
        raise ValueError("%s: sets need rank >= 2 (groups, then the set's values); got rank %d"
                         % (what, rank))
    return values, present


def _check_dtype(dtype, what):
    if not (dtype.is_integer or dtype.is_floating):
        raise TypeError("%s: sets of %s are not supported (integer and floating types only)"
                        % (what, dtype.name))


def _pairs(x, y):
    """For x [..., n] and y [..., m]: x_i == y_j as [..., n, m]."""
    return ops.equal(ops.expand_dims(x, -1), ops.expand_dims(y, -2))


def _first(values, present):
    """Whether each present entry is the first of its value in its row."""
    n = array_composites.dim_size(values, -1)
    positions = array_composites.iota(n)
    earlier = ops.less(ops.expand_dims(positions, 0), ops.expand_dims(positions, 1))  # j < i
    dup = ops.logical_and(_pairs(values, values),
                          ops.logical_and(earlier, ops.expand_dims(present, -2)))
    return ops.logical_and(present, ops.logical_not(array_ops.reduce_any(dup, axis=-1)))


def _contained(values, other, other_present):
    """Whether each entry of `values` occurs among the present entries of `other`'s row."""
    hits = ops.logical_and(_pairs(values, other), ops.expand_dims(other_present, -2))
    return array_ops.reduce_any(hits, axis=-1)


def _to_sparse(values, keep):
    """The SparseTensor of the kept entries of each row of values [groups..., L], sorted
    ascending at positions 0, 1, ... (TF's layout of a set operation's result)."""
    smaller = ops.logical_and(ops.less(ops.expand_dims(values, -2),
                                       ops.expand_dims(values, -1)),
                              ops.expand_dims(keep, -2))                     # v_j < v_i, kept j
    place = ops.reduce_sum(ops.cast(smaller, dtypes.int32), axis=-1)        # [groups..., L]
    counts = ops.reduce_sum(ops.cast(keep, dtypes.int32), axis=-1)          # [groups...]
    flat_counts = ops.reshape(counts, [-1])
    starts = ops.cumsum(flat_counts, exclusive=True)
    group_shape = ops.shape(counts)
    row_of = ops.reshape(array_composites.iota(array_composites.dim_size(flat_counts, 0)),
                         ops.concat([group_shape, [1]], 0))
    row_of = row_of + ops.zeros_like(place)
    coords = array_ops.where(keep)                                           # [K, rank] int64
    kept_values = array_ops.boolean_mask(values, keep)
    kept_place = array_ops.boolean_mask(place, keep)
    slot = array_ops.gather(starts, array_ops.boolean_mask(row_of, keep)) + kept_place
    k = array_composites.dim_size(kept_values, 0)
    order = segment_ops.unsorted_segment_sum(array_composites.iota(k), slot, k)
    rank = values.shape.ndims
    group_coords = ops.slice(array_ops.gather(coords, order), [0, 0], [-1, rank - 1])
    indices = ops.concat([group_coords, ops.cast(ops.expand_dims(
        array_ops.gather(kept_place, order), 1), dtypes.int64)], 1)
    width = ops.reshape(ops.cast(ops.reduce_max(ops.concat([flat_counts, [0]], 0)),
                                 dtypes.int64), [1])
    dense_shape = ops.concat([ops.cast(group_shape, dtypes.int64), width], 0)
    return SparseTensor(indices, array_ops.gather(kept_values, order), dense_shape)


def _operands(a, b, what):
    va, pa = _dense_and_mask(a, what + " a")
    vb, pb = _dense_and_mask(b, what + " b")
    if va.dtype != vb.dtype:
        raise TypeError("%s: a and b have different dtypes, %s and %s"
                        % (what, va.dtype.name, vb.dtype.name))
    if va.shape.ndims != vb.shape.ndims:
        raise ValueError("%s: a and b have different ranks, %d and %d"
                         % (what, va.shape.ndims, vb.shape.ndims))
    return va, pa, vb, pb


def set_intersection(a, b, validate_indices=True):
    """The values of each row of `a` that are also in that row of `b` (TF1's
    tf.sets.intersection), as a SparseTensor."""
    va, pa, vb, pb = _operands(a, b, "set_intersection")
    return _to_sparse(va, ops.logical_and(_first(va, pa), _contained(va, vb, pb)))


def set_difference(a, b, aminusb=True, validate_indices=True):
    """The values of each row of `a` that are not in that row of `b` (b's not in a's with
    aminusb=False), as TF1's tf.sets.difference, as a SparseTensor."""
    va, pa, vb, pb = _operands(a, b, "set_difference")
    if not aminusb:
        va, pa, vb, pb = vb, pb, va, pa
    return _to_sparse(va, ops.logical_and(_first(va, pa),
                                          ops.logical_not(_contained(va, vb, pb))))


def set_union(a, b, validate_indices=True):
    """The values in each row of `a` or of `b` (TF1's tf.sets.union), as a SparseTensor."""
    va, pa, vb, pb = _operands(a, b, "set_union")
    values, present = ops.concat([va, vb], -1), ops.concat([pa, pb], -1)
    return _to_sparse(values, _first(values, present))


def set_size(a, validate_indices=True):
    """The number of distinct values in each row of the SparseTensor `a` (int32, of shape
    dense_shape[:-1]), as TF1's tf.sets.size."""
    if not isinstance(a, (SparseTensor, SparseTensorValue)):
        raise TypeError("Expected `SparseTensor`, got %s." % (a,))
    values, present = _dense_and_mask(a, "set_size")
    return ops.reduce_sum(ops.cast(_first(values, present), dtypes.int32), axis=-1)


intersection, difference, union, size = set_intersection, set_difference, set_union, set_size

__all__ = ["difference", "intersection", "set_difference", "set_intersection", "set_size",
           "set_union", "size", "union"]

# Importable as shardflow.sets (``from shardflow.sets import intersection``), as tf.sets.
sys.modules.setdefault("shardflow.sets", sys.modules[__name__])
