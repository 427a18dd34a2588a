"""Segment reductions and partitioning, as TF1's tf.math.unsorted_segment_sum & co., built on
GatherV2Grad (the scatter-add of tf.gather's gradient), so gradients flow through all of them.

Example::

    data = sf.constant([[1., 2.], [3., 4.], [5., 6.]])
    sf.unsorted_segment_sum(data, [0, 1, 0], num_segments=2)   # [[6, 8], [3, 4]]
    sf.dynamic_partition(data, [1, 0, 1], 2)                    # [[[3, 4]], [[1, 2], [5, 6]]]

Segment ids must lie in [0, num_segments): unlike TF1, a negative id is an error when the step
runs rather than a row silently dropped. dynamic_stitch adds rows that two indices send to the
same place (TF1 keeps the last); with distinct indices, as after dynamic_partition, they agree.
"""

import numpy as np

from shardflow import dtypes, ops
from shardflow.array_ops import boolean_mask, gather
from shardflow.framework import convert_to_tensor


def _int32(x):
    x = convert_to_tensor(x)
    return x if x.dtype == dtypes.int32 else ops.cast(x, dtypes.int32)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """out[i] = sum of data[j...] over the j with segment_ids[j...] == i; out has shape
    [num_segments] + data.shape[segment_ids.ndim:]."""
    data = convert_to_tensor(data)
    ids = _int32(segment_ids)
    k = ids.shape.ndims
    if k is None:
        raise ValueError("unsorted_segment_sum needs segment_ids of known rank")
    integer = not data.dtype.is_floating
    values = ops.cast(data, dtypes.float64) if integer else data
    rest_dims = data.shape.as_list()[k:] if data.shape.ndims is not None else None
    if rest_dims is not None and all(d is not None for d in rest_dims):
        rest = np.asarray(rest_dims, np.int32)
        rows = ops.reshape(values, [-1] + rest_dims)
    else:
        rest = ops.slice(ops.shape(data), [k], [-1])
        rows = ops.reshape(values, ops.concat([np.array([-1], np.int32), rest], 0))
    if isinstance(num_segments, (int, np.integer)) and isinstance(rest, np.ndarray):
        out_shape = np.concatenate([[int(num_segments)], rest]).astype(np.int32)
    else:
        out_shape = ops.concat([ops.reshape(_int32(num_segments), [1]), _int32(rest)], 0)
    out = ops._out("GatherV2Grad", [rows, ops.reshape(ids, [-1]), 0, out_shape], None,
                   None if integer else name)
    return ops.cast(out, data.dtype, name=name) if integer else out


def _counts_like(segment_ids, num_segments, data):
    """How many ids each segment has, shaped to broadcast against the segment sums."""
    ids = _int32(segment_ids)
    counts = unsorted_segment_sum(ops.ones_like(ops.cast(ids, data.dtype)), ids, num_segments)
    extra = data.shape.ndims - ids.shape.ndims
    return ops.reshape(counts, [-1] + [1] * extra)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The mean of each segment's rows (0 for an empty segment)."""
    data = convert_to_tensor(data)
    total = unsorted_segment_sum(data, segment_ids, num_segments)
    counts = _counts_like(segment_ids, num_segments, data)
    return ops.divide(total, ops.maximum(counts, ops.ones_like(counts)), name=name)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """Each segment's sum divided by the square root of its number of rows."""
    data = convert_to_tensor(data)
    total = unsorted_segment_sum(data, segment_ids, num_segments)
    counts = _counts_like(segment_ids, num_segments, data)
    return ops.divide(total, ops.sqrt(ops.maximum(counts, ops.ones_like(counts))), name=name)


def _sorted_count(segment_ids):
    ids = _int32(segment_ids)
    if ids.shape.ndims != 1:
        raise ValueError("segment_* ops take a vector of sorted segment ids")
    return ops.reduce_max(ids) + 1


def segment_sum(data, segment_ids, name=None):
    """unsorted_segment_sum with sorted ids and num_segments = the last id + 1."""
    return unsorted_segment_sum(data, segment_ids, _sorted_count(segment_ids), name=name)


def segment_mean(data, segment_ids, name=None):
    """unsorted_segment_mean with sorted ids and num_segments = the last id + 1."""
    return unsorted_segment_mean(data, segment_ids, _sorted_count(segment_ids), name=name)


def dynamic_partition(data, partitions, num_partitions, name=None):
    """num_partitions tensors: the rows of `data` whose partition id is 0, 1, ... in order."""
    data = convert_to_tensor(data)
    partitions = _int32(partitions)
    return [boolean_mask(data, ops.equal(partitions, p),
                         name=None if name is None else "%s_%d" % (name, p))
            for p in range(int(num_partitions))]


def dynamic_stitch(indices, data, name=None):
    """merged[indices[m][i...]] = data[m][i...]; merged has max(index) + 1 rows."""
    if len(indices) != len(data) or not indices:
        raise ValueError("dynamic_stitch takes as many index tensors as data tensors (>= 1)")
    flat_ids, rows = [], []
    for idx, d in zip(indices, data):
        idx, d = _int32(idx), convert_to_tensor(d)
        rest = d.shape.as_list()[idx.shape.ndims:]
        if any(x is None for x in rest):
            raise ValueError("dynamic_stitch needs the sizes of data's trailing dimensions")
        flat_ids.append(ops.reshape(idx, [-1]))
        rows.append(ops.reshape(d, [-1] + rest))
    ids = ops.concat(flat_ids, 0)
    return unsorted_segment_sum(ops.concat(rows, 0), ids, ops.reduce_max(ids) + 1, name=name)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32, name=None):
    """How often each value 0..max(arr) occurs in `arr` (or the sum of its `weights`)."""
    arr = _int32(arr)
    flat = ops.reshape(arr, [-1])
    n = ops.reduce_max(flat) + 1
    if minlength is not None:
        n = ops.maximum(n, int(minlength))
    if maxlength is not None:
        n = ops.minimum(n, int(maxlength))
        keep = ops.less(flat, n)
        flat = boolean_mask(flat, keep)
    w = (ops.ones_like(ops.cast(flat, dtypes.float64)) if weights is None
         else ops.reshape(ops.cast(convert_to_tensor(weights), dtypes.float64), [-1]))
    if weights is not None and maxlength is not None:
        w = boolean_mask(w, keep)
    dtype = dtypes.as_dtype(dtype) if weights is None else convert_to_tensor(weights).dtype
    return ops.cast(unsorted_segment_sum(w, flat, n), dtype, name=name)


def histogram_fixed_width(values, value_range, nbins=100, dtype=dtypes.int32, name=None):
    """Counts of `values` in nbins equal bins over value_range = [lo, hi] (values outside go to
    the first or last bin), as TF1's tf.histogram_fixed_width."""
    values = ops.cast(ops.reshape(convert_to_tensor(values), [-1]), dtypes.float64)
    value_range = ops.cast(convert_to_tensor(value_range), dtypes.float64)
    lo, hi = value_range[0], value_range[1]
    bins = ops.floor((values - lo) / (hi - lo) * float(nbins))
    bins = ops.cast(ops.clip_by_value(bins, 0.0, float(nbins - 1)), dtypes.int32)
    counts = unsorted_segment_sum(ops.ones_like(values), bins, int(nbins))
    return ops.cast(counts, dtype, name=name)


def unique(x, out_idx=dtypes.int32, name=None):
    """(y, idx): the distinct values of the vector x in order of first appearance, and where
    each element's value sits in y (x == gather(y, idx)), as TF1's tf.unique. Also as
    ``y, idx = sf.unique(x)`` (a named tuple with fields y and idx)."""
    x = convert_to_tensor(x)
    op = ops._op("Unique", [x], {"out_idx": dtypes.as_dtype(out_idx)._enum}, name)
    return UniqueResult(op.outputs[0], op.outputs[1])


class UniqueResult(tuple):
    """tf.unique's result: (y, idx), also as .y and .idx."""

    def __new__(cls, y, idx):
        return super().__new__(cls, (y, idx))

    y = property(lambda self: self[0])
    idx = property(lambda self: self[1])


__all__ = ["bincount", "dynamic_partition", "dynamic_stitch", "histogram_fixed_width",
           "segment_mean", "segment_sum", "unique", "unsorted_segment_mean",
           "unsorted_segment_sqrt_n", "unsorted_segment_sum"]
