"""Segment reductions and partitioning, as TF1's tf.math.unsorted_segment_sum & co., built on
GatherV2Grad (the scatter-add of tf.gather's gradient), so gradients flow through all of them.

Example::

    data = sf.constant([[1., 2.], [3., 4.], [5., 6.]])
    sf.unsorted_segment_sum(data, [0, 1, 0], num_segments=2)   # [[6, 8], [3, 4]]
    sf.dynamic_partition(data, [1, 0, 1], 2)                    # [[[3, 4]], [[1, 2], [5, 6]]]

Segment ids must be less than num_segments (an error when the step runs otherwise); a row whose
id is negative is dropped by the unsorted reductions, as TF1's (sf.unsorted_segment_sum(x,
[0, -1, 1], 2) sums rows 0 and 2 only; its gradient is 0). dynamic_stitch adds rows that two
indices send to the same place (TF1 keeps the last); with distinct indices, as after
dynamic_partition, they agree.

unsorted_segment_max / min / prod (and the sorted segment_max / min / prod) are kernels
(UnsortedSegmentMax/Min/Prod, ops/segment_ops.cc): one pass over the data, gradients as TF's
(ties share the gradient of a max or min). An empty segment gives the reduction's identity (the
dtype's lowest value for max, its highest for min, 1 for prod), as TF1; in the sorted max and
min, 0.

bincount and confusion_matrix (tf.math.bincount, tf.math.confusion_matrix) count with
unsorted_segment_sum.
"""

import collections

import numpy as np

from shardflow import check_ops, dtypes, ops
from shardflow.array_ops import boolean_mask, reduce_all, where_v2
from shardflow.framework import Tensor, control_dependencies, convert_to_tensor


def _int32(x):
    """x as int32 (the kernels' ids). int64 values past int32's range fail the step rather than
    wrap around onto a valid id (2^40 became segment 0)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return convert_to_tensor(int(x), dtype=dtypes.int32)   # out of range: ValueError
    x = convert_to_tensor(x)
    if x.dtype == dtypes.int64:
        low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
        fits = ops.logical_and(reduce_all(ops.greater_equal(x, np.int64(low))),
                               reduce_all(ops.less_equal(x, np.int64(high))))
        check = check_ops._check(fits, "an int64 id or index is out of range: ids must lie in "
                                 "[0, num_segments) (num_segments < 2^31)", None, "ids")
        with control_dependencies([check]):
            x = ops.identity(x)
    return x if x.dtype == dtypes.int32 else ops.cast(x, dtypes.int32)


def _drop_negative_ids(data, segment_ids, identity):
    """(data, ids) with each row whose id is negative replaced by the reduction's `identity`
    and sent to segment 0, which it leaves unchanged: TF1's unsorted segment reductions drop
    such rows. Constant ids with no negative one are returned as they are."""
    if not isinstance(segment_ids, Tensor):
        arr = np.asarray(segment_ids)
        if arr.dtype.kind in "iu" and (arr.size == 0 or arr.min() >= 0):
            return data, segment_ids
    ids = _int32(segment_ids)
    k = ids.shape.ndims
    if k is None or data.shape.ndims is None:
        return data, ids         # unknown ranks: out-of-range ids fail in the kernel
    dropped = ops.less(ids, 0)
    rows = ops.reshape(dropped, ops.concat([ops.shape(ids),
                                            np.ones([data.shape.ndims - k], np.int32)], 0))
    fill = ops.cast(ops.constant(identity), data.dtype)
    data = where_v2(rows, ops.zeros_like(data) + fill, data)
    return data, where_v2(dropped, ops.zeros_like(ids), ids)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """out[i] = sum of data[j...] over the j with segment_ids[j...] == i; out has shape
    [num_segments] + data.shape[segment_ids.ndim:]. Rows with a negative id are dropped."""
    data = convert_to_tensor(data)
    data, segment_ids = _drop_negative_ids(data, segment_ids, 0)
    ids = _int32(segment_ids)
    k = ids.shape.ndims
    if k is None:
        raise ValueError("unsorted_segment_sum needs segment_ids of known rank")
    if isinstance(num_segments, (int, np.integer)) and not \
            0 <= int(num_segments) <= np.iinfo(np.int32).max:
        raise ValueError("unsorted_segment_sum: num_segments must be in [0, 2^31), got %d"
                         % int(num_segments))
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


def _segment_kernel(op_type, data, segment_ids, num_segments, what, name):
    """The UnsortedSegment{Max,Min,Prod} kernel of `data`; int8 and uint8 go through int32."""
    data = convert_to_tensor(data)
    if not (data.dtype.is_floating or data.dtype.is_integer):
        raise TypeError("%s takes numbers, not %s" % (what, data.dtype.name))
    dtype = data.dtype
    if dtype in (dtypes.int8, dtypes.uint8):
        data = ops.cast(data, dtypes.int32)
    info = np.finfo if data.dtype.is_floating else np.iinfo
    identity = {"UnsortedSegmentMax": info(data.dtype.as_numpy_dtype).min,
                "UnsortedSegmentMin": info(data.dtype.as_numpy_dtype).max}.get(op_type, 1)
    data, segment_ids = _drop_negative_ids(data, segment_ids, identity)
    out = ops._out(op_type, [data, _int32(segment_ids), _int32(num_segments)], None,
                   None if data.dtype != dtype else name)
    if data.dtype == dtype:
        return out
    # An empty segment's int32 identity, clipped to the narrow type's (every value is in range).
    info = np.iinfo(dtype.as_numpy_dtype)
    if op_type == "UnsortedSegmentMax":
        out = ops.maximum(out, int(info.min))
    elif op_type == "UnsortedSegmentMin":
        out = ops.minimum(out, int(info.max))
    return ops.cast(out, dtype, name=name)


def _zero_where_empty(out, data, segment_ids, num_segments, name):
    """`out` with the rows of segments that no id names set to 0 (TF1's sorted segment_max/min)."""
    data = convert_to_tensor(data)
    if data.shape.ndims is None:
        raise ValueError("segment_max and segment_min need data of known rank")
    ids = _int32(segment_ids)
    counts = ops._out("UnsortedSegmentSum", [ops.ones_like(ids), ids, _int32(num_segments)])
    has_rows = ops.reshape(ops.greater(counts, 0), [-1] + [1] * (data.shape.ndims - 1))
    return where_v2(has_rows, out, ops.zeros_like(out), name=name)


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """out[i] = the maximum of data[j...] over the j with segment_ids[j...] == i, as TF1's
    tf.math.unsorted_segment_max; an empty segment gives the dtype's lowest value (-FLT_MAX
    for float32, INT_MIN for int32), as TF1."""
    return _segment_kernel("UnsortedSegmentMax", data, segment_ids, num_segments,
                           "unsorted_segment_max", name)


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """out[i] = the minimum of segment i's rows (tf.math.unsorted_segment_min); an empty
    segment gives the dtype's highest value, as TF1."""
    return _segment_kernel("UnsortedSegmentMin", data, segment_ids, num_segments,
                           "unsorted_segment_min", name)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """out[i] = the product of segment i's rows (tf.math.unsorted_segment_prod); an empty
    segment gives 1, as TF1."""
    return _segment_kernel("UnsortedSegmentProd", data, segment_ids, num_segments,
                           "unsorted_segment_prod", name)


def _sorted_count(segment_ids):
    """The last id + 1, once the step has checked that the ids do not decrease (TF's segment
    kernels fail "segment ids are not increasing"; unsorted ids gave plausible sums here)."""
    ids = _int32(segment_ids)
    if ids.shape.ndims != 1:
        raise ValueError("segment_* ops take a vector of sorted segment ids")
    sorted_ok = check_ops._check(check_ops.is_non_decreasing(ids),
                                 "segment ids are not increasing (segment_* take sorted ids; "
                                 "use unsorted_segment_* for others)", None, "segment_ids")
    # (the unsorted reductions drop rows of negative ids; the sorted ones refuse them, as TF1)
    non_negative = check_ops._check(reduce_all(ops.greater_equal(ids, 0)),
                                    "segment ids must be >= 0", None, "segment_ids")
    with control_dependencies([sorted_ok, non_negative]):
        return ops.reduce_max(ids) + 1


def segment_sum(data, segment_ids, name=None):
    """unsorted_segment_sum with sorted ids and num_segments = the last id + 1."""
    return unsorted_segment_sum(data, segment_ids, _sorted_count(segment_ids), name=name)


def segment_mean(data, segment_ids, name=None):
    """unsorted_segment_mean with sorted ids and num_segments = the last id + 1."""
    return unsorted_segment_mean(data, segment_ids, _sorted_count(segment_ids), name=name)


def segment_max(data, segment_ids, name=None):
    """The maximum of each segment of sorted ids (num_segments = the last id + 1), as TF1's
    tf.math.segment_max: a segment without rows gives 0."""
    num = _sorted_count(segment_ids)
    out = _segment_kernel("UnsortedSegmentMax", data, segment_ids, num, "segment_max", None)
    return _zero_where_empty(out, data, segment_ids, num, name)


def segment_min(data, segment_ids, name=None):
    """The minimum of each segment of sorted ids, as TF1's tf.math.segment_min (0 for a
    segment without rows)."""
    num = _sorted_count(segment_ids)
    out = _segment_kernel("UnsortedSegmentMin", data, segment_ids, num, "segment_min", None)
    return _zero_where_empty(out, data, segment_ids, num, name)


def segment_prod(data, segment_ids, name=None):
    """The product of each segment of sorted ids, as TF1's tf.math.segment_prod (1 for a
    segment without rows)."""
    return _segment_kernel("UnsortedSegmentProd", data, segment_ids,
                           _sorted_count(segment_ids), "segment_prod", name)


def dynamic_partition(data, partitions, num_partitions, name=None):
    """num_partitions tensors: the rows of `data` whose partition id is 0, 1, ... in order."""
    data = convert_to_tensor(data)
    partitions = _int32(partitions)
    n = int(num_partitions)
    fits = reduce_all(ops.logical_and(ops.greater_equal(partitions, 0), ops.less(partitions, n)))
    check = check_ops._check(fits, "dynamic_partition: a partition id is not in [0, %d) (TF: "
                             "'partitions[i] = p is not in [0, %d)')" % (n, n), None,
                             "partitions")
    with control_dependencies([check]):
        partitions = ops.identity(partitions)
    return [boolean_mask(data, ops.equal(partitions, p),
                         name=None if name is None else "%s_%d" % (name, p))
            for p in range(n)]


def dynamic_stitch(indices, data, name=None):
    """merged[indices[m][i...]] = data[m][i...]; merged has max(index) + 1 rows. An index
    given more than once takes the value given last (in the order of the lists), as TF's;
    an index given none is zeros. The gradient reaches the values that were kept."""
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
    values = ops.concat(rows, 0)
    from shardflow.array_ops import gather, range as _range
    n = ops.reduce_max(ids) + 1
    # The last position that writes each index (-2^31 for an index none writes).
    last = unsorted_segment_max(_range(ops.shape(ids)[0]), ids, n)
    present = ops.greater_equal(last, 0)
    picked = gather(values, ops.maximum(last, 0))
    mask = ops.reshape(present, ops.concat([ops.reshape(n, [1]),
                                            ops.ones_like(ops.shape(picked)[1:])], 0))
    return where_v2(mask, picked, ops.zeros_like(picked), name=name)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32, name=None):
    """How often each value 0, 1, ... occurs in the non-negative integers `arr` (any shape), or
    the sum of the `weights` (arr's shape) at those places, as TF1's tf.bincount /
    tf.math.bincount. The result has max(arr) + 1 entries (0 for an empty arr), at least
    `minlength` and at most `maxlength` (values from maxlength on are not counted); its dtype
    is `dtype` without weights, the weights' dtype with them.

    Example: ``sf.bincount([1, 1, 3], minlength=5) -> [0, 2, 0, 1, 0]``.
    """
    arr = _int32(arr)
    flat = ops.reshape(arr, [-1])
    # max(arr) + 1, and 0 for an empty arr (the engine's Max refuses an empty input).
    n = ops.reduce_max(ops.concat([flat, np.array([-1], np.int32)], 0)) + 1
    if minlength is not None:
        n = ops.maximum(n, _int32(minlength))
    if maxlength is not None:
        n = ops.minimum(n, _int32(maxlength))
        keep = ops.less(flat, n)
        flat = boolean_mask(flat, keep)
    w = (ops.ones_like(ops.cast(flat, dtypes.float64)) if weights is None
         else ops.reshape(ops.cast(convert_to_tensor(weights), dtypes.float64), [-1]))
    if weights is not None and maxlength is not None:
        w = boolean_mask(w, keep)
    dtype = dtypes.as_dtype(dtype) if weights is None else convert_to_tensor(weights).dtype
    return ops.cast(unsorted_segment_sum(w, flat, n), dtype, name=name)


def _static_size(x):
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    return None if dims is None or None in dims else int(np.prod(dims, dtype=np.int64))


def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32, name=None,
                     weights=None):
    """The [num_classes, num_classes] matrix whose entry [i, j] counts the samples with label i
    and prediction j (or sums their `weights`), as TF1's tf.confusion_matrix /
    tf.math.confusion_matrix (same argument order). `labels` and `predictions` are integer
    class ids of one size (a trailing dimension of 1 on either is fine: they are flattened);
    without `num_classes` it is max(labels, predictions) + 1, computed when the step runs.
    Negative ids, and ids not below num_classes, fail the step (InvalidArgumentError), as TF1.

    Example::

        sf.confusion_matrix([1, 2, 4], [2, 2, 4])    # 5x5: [1, 2] = [2, 2] = [4, 4] = 1
    """
    labels = ops.reshape(_int32(labels), [-1])
    predictions = ops.reshape(_int32(predictions), [-1])
    n_labels, n_predictions = _static_size(labels), _static_size(predictions)
    if n_labels is not None and n_predictions is not None and n_labels != n_predictions:
        raise ValueError("confusion_matrix: %d labels but %d predictions"
                         % (n_labels, n_predictions))
    checks = [check_ops.assert_non_negative(labels, message="`labels` contains negative values"),
              check_ops.assert_non_negative(predictions,
                                            message="`predictions` contains negative values")]
    if num_classes is None:
        n = ops.maximum(ops.reduce_max(labels), ops.reduce_max(predictions)) + 1
    else:
        n = _int32(num_classes)
        checks += [check_ops.assert_less(labels, n, message="`labels` out of bound"),
                   check_ops.assert_less(predictions, n, message="`predictions` out of bound")]
    if isinstance(num_classes, (int, np.integer)):
        shape = [int(num_classes), int(num_classes)]
    else:
        shape = ops.concat([ops.reshape(n, [1]), ops.reshape(n, [1])], 0)
    with control_dependencies(checks):
        cell = ops.add(ops.multiply(labels, n), predictions)
    dtype = dtypes.as_dtype(dtype)
    if weights is None:
        values = ops.ones_like(ops.cast(labels, dtype))
    else:
        values = ops.reshape(ops.cast(convert_to_tensor(weights), dtype), [-1])
    counts = unsorted_segment_sum(values, cell, ops.multiply(n, n))
    return ops.reshape(counts, shape, name=name)


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


class UniqueResult(collections.namedtuple("Unique", ["y", "idx"])):
    """tf.unique's result: (y, idx), also as .y and .idx (a named tuple, as TF1's: a session
    fetches it as one)."""


def _sparse_segment(reduce, data, indices, segment_ids, num_segments, name):
    from shardflow.array_ops import gather
    rows = gather(data, indices)
    n = _sorted_count(segment_ids) if num_segments is None else num_segments
    return reduce(rows, segment_ids, n, name=name)


def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None):
    """The sum of data[indices[i]] over each segment segment_ids[i] (sorted ids; TF1's
    tf.sparse.segment_sum, the reduction of embedding_lookup_sparse)."""
    return _sparse_segment(unsorted_segment_sum, data, indices, segment_ids, num_segments, name)


def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None):
    """sparse_segment_sum divided by each segment's number of rows."""
    return _sparse_segment(unsorted_segment_mean, data, indices, segment_ids, num_segments,
                           name)


def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None):
    """sparse_segment_sum divided by the square root of each segment's number of rows."""
    return _sparse_segment(unsorted_segment_sqrt_n, data, indices, segment_ids, num_segments,
                           name)


__all__ = ["bincount", "confusion_matrix", "dynamic_partition", "dynamic_stitch",
           "histogram_fixed_width", "segment_max", "segment_mean", "segment_min", "segment_prod",
           "segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n", "sparse_segment_sum",
           "unique", "unsorted_segment_max", "unsorted_segment_mean",
           "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_sqrt_n",
           "unsorted_segment_sum"]
