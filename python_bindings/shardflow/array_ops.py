"""TF1 array ops built from the engine's existing ops (and tested against NumPy): one_hot,
gather / nn.embedding_lookup, stack, unstack, split, tile, range, where (three arguments), pad,
argmin, reduce_any, reduce_all; tensor indexing (``x[:, 1]``) is in strided_slice.py.

Note [Composed array ops]. Except gather (the engine's GatherV2 kernel, any axis, rows
scattered back by GatherV2Grad), these are a few existing ops each, so that TF1 programs run,
gradients flow, and placement works unchanged. The price: shapes must be known where a TF1
kernel would take them at run time (split, unstack, tile and pad need the static shape of the
dimensions they touch; range needs Python numbers). Each raises a clear error where its
composition cannot do what TF1 does.
"""

import builtins

import numpy as np

from shardflow import dtypes, ops
from shardflow.framework import (Tensor, _literal, check_no_python_float, convert_to_tensor,
                                 get_default_graph)


def _static_dims(x, what):
    x = convert_to_tensor(x)
    if x.shape.ndims is None:
        raise ValueError("%s needs a tensor of known rank, got %r" % (what, x))
    return x, x.shape.as_list()


def _axis(axis, rank, what):
    if not -rank <= axis < rank:
        raise ValueError("%s: axis %d is out of range for rank %d" % (what, axis, rank))
    return axis % rank


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """[..., depth] with on_value where the last index equals the position, off_value
    elsewhere (TF1's tf.one_hot); `axis` puts the depth dimension elsewhere (indices [N] and
    axis 0 give [depth, N]). Indices out of [0, depth) give all off_value."""
    if dtype is None:
        # TF's rule: the dtype of on_value / off_value when given (tf.one_hot(labels, 10, 1, 0)
        # is int32), else float32.
        given = [v for v in (on_value, off_value) if v is not None]
        dtype = convert_to_tensor(given[0]).dtype if given else dtypes.float32
    dt = dtypes.as_dtype(dtype)
    indices = convert_to_tensor(indices)
    rank = indices.shape.ndims
    if axis not in (None, -1) and (rank is None or not 0 <= axis <= rank):
        raise ValueError("one_hot(axis=%r): the axis must be -1 or in [0, %s] for indices of "
                         "rank %s" % (axis, rank, rank))
    depth = ops._axis_value(depth)   # a tensor known only when the step runs stays one
    if isinstance(depth, Tensor):
        positions = range(ops.cast(depth, indices.dtype))
    elif int(depth) < 0:
        raise ValueError("one_hot: depth must be non-negative, got: %d" % int(depth))
    else:
        positions = ops.constant(np.arange(int(depth), dtype=indices.dtype.as_numpy_dtype))
    hot = ops.cast(ops.equal(ops.expand_dims(indices, -1), positions), dt)
    if on_value is not None or off_value is not None:
        on = ops.cast(1 if on_value is None else on_value, dt)
        off = ops.cast(0 if off_value is None else off_value, dt)
        hot = ops.add(ops.multiply(hot, ops.subtract(on, off)), off)
    if axis not in (None, -1) and axis != rank:
        perm = list(builtins.range(axis)) + [rank] + list(builtins.range(axis, rank))
        return ops.transpose(hot, perm, name=name)
    return ops.identity(hot, name=name)


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """Slices of `params` along `axis` at `indices`, as TF1's tf.gather (the GatherV2 op) with
    TF1's parameter order (params, indices, validate_indices, name, axis, batch_dims): give the
    axis by name, tf.gather(x, i, axis=1); validate_indices is ignored, as TF1 ignores it.
    the result's shape is params.shape[:axis] + indices.shape + params.shape[axis+1:];
    gradients flow to params (an index picked twice gets both). An index out of range is an
    error when the step runs. With `batch_dims` b (TF 1.14), the first b dimensions of params
    and indices are batch dimensions and each batch entry gathers from its own slice (axis
    defaults to b and must be b)."""
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    if not indices.dtype.is_integer:
        raise TypeError("gather: indices must be int32 or int64, not %s" % indices.dtype.name)
    if batch_dims:
        return _batch_gather(params, indices, batch_dims, axis, name)
    # A tensor axis (known only when the step runs) is an input as it is.
    return ops._out("GatherV2", [params, indices, ops._axis_input(0 if axis is None else axis)],
                    None, name)


def _batch_gather(params, indices, batch_dims, axis, name):
    """gather with batch dimensions: the batch entries flattened into one, each entry's
    indices offset to its slice of the flattened params, one GatherV2, the shape restored."""
    if indices.shape.ndims is None or params.shape.ndims is None:
        raise ValueError("gather(batch_dims=...) needs params and indices of known rank")
    b = int(batch_dims)
    if b < 0:
        b += indices.shape.ndims
    if not 0 < b <= indices.shape.ndims or b >= params.shape.ndims:
        raise ValueError("gather: batch_dims=%d is out of range for indices of rank %d and "
                         "params of rank %d" % (batch_dims, indices.shape.ndims,
                                                params.shape.ndims))
    if axis is not None and int(axis) % params.shape.ndims != b:
        raise ValueError("gather: with batch_dims=%d, axis must be %d (the first dimension "
                         "after the batch), got %d" % (b, b, axis))
    p_shape, i_shape = ops.shape(params, out_type=indices.dtype), \
        ops.shape(indices, out_type=indices.dtype)
    batch = ops.reduce_prod(p_shape[:b])
    n = p_shape[b]
    flat_params = ops.reshape(params, ops.concat([ops.reshape(batch * n, [1]), p_shape[b + 1:]],
                                                 0))
    # n * (0, 1, ..., batch - 1), for a batch known only when the step runs
    offsets = ops.reshape(ops.cumsum(ops.fill(ops.reshape(batch, [1]), n), exclusive=True),
                          [-1, 1])
    flat_indices = ops.add(ops.reshape(indices, stack([batch, -1])), offsets)
    rows = ops._out("GatherV2", [flat_params, ops.reshape(flat_indices, [-1]), 0], None, None)
    return ops.reshape(rows, ops.concat([i_shape, p_shape[b + 1:]], 0), name=name)


def batch_gather(params, indices, name=None):
    """TF 1.13's tf.batch_gather: gather(params, indices, batch_dims=rank(indices) - 1)."""
    indices = convert_to_tensor(indices)
    if indices.shape.ndims is None or indices.shape.ndims < 2:
        raise ValueError("batch_gather: indices need a known rank of 2 or more (batch "
                         "dimensions, then the indices of each batch entry)")
    return gather(params, indices, batch_dims=indices.shape.ndims - 1, name=name)


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """TF1's tf.nn.embedding_lookup: the rows of `params` at `ids`. `params` is one table, or a
    table sharded along its rows: a list of tensors/variables or a PartitionedVariable
    (shardflow/partitioned_variables.py), with TF1's `partition_strategy`: "mod" (id i in shard
    i % n, row i // n) or "div" (contiguous ranges; the first total % n shards one row longer,
    the layout of sf.fixed_size_partitioner). Sharded, the shards are concatenated in the
    strategy's order and gathered from (gradients reach every shard). `max_norm`: rows whose L2
    norm exceeds it are scaled down to it, as TF1."""
    from shardflow.partitioned_variables import PartitionedVariable
    if isinstance(params, PartitionedVariable):
        params = list(params)
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("embedding_lookup: params is an empty list")
        params = list(params) if len(params) > 1 else params[0]
    if isinstance(params, list):
        table, ids = _sharded_table(params, ids, partition_strategy)
    else:
        table = params
    rows = gather(table, ids, name=None if max_norm is not None else name)
    if max_norm is None:
        return rows
    rank = rows.shape.ndims
    ids_rank = convert_to_tensor(ids).shape.ndims
    if rank is None or ids_rank is None:
        raise ValueError("embedding_lookup(max_norm=...) needs ids and params of known rank")
    axes = list(builtins.range(ids_rank, rank))
    norm = ops.sqrt(ops.reduce_sum(ops.square(rows), axis=axes, keepdims=True))
    scale = ops.minimum(ops.ones_like(norm), ops.divide(max_norm, ops.maximum(norm, 1e-30)))
    return ops.multiply(rows, scale, name=name)


def _sharded_table(shards, ids, strategy):
    """The shards as one table, and ids as rows of it, for embedding_lookup's strategies."""
    if strategy not in ("mod", "div"):
        raise ValueError("embedding_lookup: partition_strategy must be 'mod' or 'div', got %r"
                         % (strategy,))
    shards = [convert_to_tensor(s) for s in shards]
    sizes = [s.shape.as_list()[0] if s.shape.ndims else None for s in shards]
    if any(n is None for n in sizes):
        raise ValueError("embedding_lookup over shards needs each shard's number of rows when "
                         "the graph is built, got %s" % sizes)
    n = len(shards)
    ids = convert_to_tensor(ids)
    if strategy == "div":
        total = sum(sizes)
        per, extras = total // n, total % n
        want = [per + (1 if i < extras else 0) for i in builtins.range(n)]
        if sizes != want:
            raise ValueError("embedding_lookup(partition_strategy='div'): shards of %s rows, "
                             "but 'div' over %d rows needs %s (the first total %% n one longer)"
                             % (sizes, total, want))
        return ops.concat(shards, 0), ids   # contiguous ranges in order: ids are the rows
    # "mod": id i lives in shard i % n at row i // n; shard s starts at offset[s] of the concat.
    offsets = np.cumsum([0] + sizes[:-1]).astype(np.int64)
    wide = ops.cast(ids, dtypes.int64)
    shard = ops.floormod(wide, np.int64(n))
    rows = ops.add(gather(ops.constant(offsets), shard), ops.floordiv(wide, np.int64(n)))
    return ops.concat(shards, 0), rows


def stack(values, axis=0, name=None):
    """Tensors of one shape joined along a new dimension `axis` (TF1's tf.stack)."""
    values = [convert_to_tensor(v) for v in values]
    rank = values[0].shape.ndims
    if axis < 0:
        if rank is None:
            raise ValueError("stack with a negative axis needs a known rank")
        axis += rank + 1
    return ops.concat([ops.expand_dims(v, axis) for v in values], axis, name=name)


def unstack(value, num=None, axis=0, name=None):
    """The slices of `value` along `axis` (whose size must be known), as TF1's tf.unstack."""
    value, dims = _static_dims(value, "unstack")
    axis = _axis(axis, len(dims), "unstack")
    n = dims[axis] if dims[axis] is not None else num
    if n is None:
        raise ValueError("unstack needs the size of axis %d (pass num=)" % axis)
    out = []
    for i in builtins.range(n):
        begin = [0] * len(dims)
        begin[axis] = i
        size = [-1] * len(dims)
        size[axis] = 1
        out.append(ops.squeeze(ops.slice(value, begin, size), [axis]))
    return out


def _split_unknown(value, n, axis, rank):
    """split into n equal pieces along an axis whose size is known only when the step runs (a
    batch split across towers): each piece is a Slice at i * (size // n); the step fails,
    naming the sizes, when n does not divide the size (as TF's Split)."""
    from shardflow.check_ops import assert_equal
    size = ops.shape(value)[axis]
    piece = size // n
    check = assert_equal(size % n, 0, message="split: dimension %d is not divisible into %d "
                         "pieces" % (axis, n))
    with get_default_graph().control_dependencies([check]):
        piece = ops.identity(piece)
    out = []
    for i in builtins.range(n):
        begin = ops.concat([ops.zeros([axis], dtypes.int32), ops.reshape(piece * i, [1]),
                            ops.zeros([rank - axis - 1], dtypes.int32)], 0)
        size_v = ops.concat([ops.fill([axis], -1), ops.reshape(piece, [1]),
                             ops.fill([rank - axis - 1], -1)], 0)
        part = ops.slice(value, begin, size_v)
        dims = value.shape.as_list()
        part.set_shape(dims[:axis] + [None] + dims[axis + 1:])
        out.append(part)
    return out


def _split_sizes_unknown(value, sizes, axis, rank):
    """split into pieces of the given sizes along an axis whose size is known only when the step
    runs: the Slices of the known-size case, after a check that the sizes add up to the
    dimension (TF's SplitV fails the step; here the rest was dropped silently)."""
    from shardflow.check_ops import assert_equal
    check = assert_equal(ops.shape(value)[axis], int(builtins.sum(sizes)),
                         message="split: size_splits %s must sum to dimension %d"
                         % (sizes, axis))
    with get_default_graph().control_dependencies([check]):
        value = ops.identity(value)
    out, offset = [], 0
    for s in sizes:
        begin = [0] * rank
        begin[axis] = offset
        size = [-1] * rank
        size[axis] = s
        out.append(ops.slice(value, begin, size))
        offset += s
    return out


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """Pieces of `value` along `axis`: `num_or_size_splits` equal ones, or pieces of the given
    sizes (one may be -1), as TF1's tf.split."""
    value, dims = _static_dims(value, "split")
    axis = _axis(axis, len(dims), "split")
    total = dims[axis]
    if isinstance(num_or_size_splits, int):
        if num_or_size_splits < 1:
            raise ValueError("split: num_or_size_splits must be >= 1, got %d"
                             % num_or_size_splits)
        if total is None:
            return _split_unknown(value, num_or_size_splits, axis, len(dims))
        if total % num_or_size_splits:
            raise ValueError("split: dimension %d (%d) is not divisible into %d"
                             % (axis, total, num_or_size_splits))
        sizes = [total // num_or_size_splits] * num_or_size_splits
    else:
        sizes = list(num_or_size_splits)
        if -1 in sizes:
            if total is None:
                raise ValueError("split: a -1 size needs dimension %d to be known" % axis)
            sizes[sizes.index(-1)] = total - sum(s for s in sizes if s != -1)
        elif total is not None and sum(sizes) != total:
            raise ValueError("split: size_splits %s must sum to dimension %d (%d), they sum to "
                             "%d" % (list(num_or_size_splits), axis, total, sum(sizes)))
        elif total is None:
            return _split_sizes_unknown(value, sizes, axis, len(dims))
    out, offset = [], 0
    for s in sizes:
        begin = [0] * len(dims)
        begin[axis] = offset
        size = [-1] * len(dims)
        size[axis] = s
        out.append(ops.slice(value, begin, size))
        offset += s
    return out


def tile(input, multiples, name=None):  # noqa: A002
    """`input` repeated `multiples[i]` times along dimension i, as tf.tile. `multiples`: a
    list of ints or scalar tensors, or a 1-D int tensor (``sf.tile(x, [sf.shape(y)[0], 1])``).
    Built as a broadcast: x as [1, d0, 1, d1, ...] broadcast to [m0, d0, m1, d1, ...], then
    [m0 * d0, m1 * d1, ...] (out[k * d + j] = x[j]); the gradient sums the copies."""
    x, dims = _static_dims(input, "tile")
    rank = len(dims)
    if isinstance(multiples, Tensor):
        from shardflow.tensor_util import constant_value
        known = constant_value(multiples)
        if known is not None and known.ndim == 1:
            multiples = [int(v) for v in known]
    if isinstance(multiples, Tensor):
        if multiples.shape.ndims != 1 or multiples.shape.as_list()[0] not in (None, rank):
            raise ValueError("tile: multiples must be a 1-D tensor of %d values (the rank of "
                             "input), got shape %s" % (rank, multiples.shape))
        m = ops.cast(multiples, dtypes.int32)
        multiples = [m[i] for i in builtins.range(rank)]
    else:
        multiples = list(multiples)
        if len(multiples) != rank:
            raise ValueError("tile: %d multiples for rank %d" % (len(multiples), rank))
    static = [None if isinstance(mi, Tensor) else int(mi) for mi in multiples]
    if any(mi is not None and mi < 0 for mi in static):
        raise ValueError("tile: multiples must not be negative, got %s" % (static,))
    if all(mi == 1 for mi in static):
        return ops.identity(x, name=name)
    from shardflow.array_composites import broadcast_to
    shape = ops.shape(x)
    dyn_dims = [d if d is not None else shape[i] for i, d in enumerate(dims)]

    def vector(items):   # int64 when a known dimension passes int32 (it would wrap)
        big = any(not isinstance(v, Tensor) and int(v) > np.iinfo(np.int32).max
                  for v in items)
        np_type, sf_type = (np.int64, dtypes.int64) if big else (np.int32, dtypes.int32)
        if not any(isinstance(v, Tensor) for v in items):
            return np.array([int(v) for v in items], dtype=np_type)
        return stack([ops.cast(v, sf_type) if isinstance(v, Tensor) else np_type(v)
                      for v in items])
    expanded = ops.reshape(x, vector([v for d in dyn_dims for v in (1, d)]))
    spread = broadcast_to(expanded, vector([v for mi, d in zip(multiples, dyn_dims)
                                           for v in (mi, d)]))
    out = ops.reshape(spread, vector([mi * d for mi, d in zip(multiples, dyn_dims)]),
                      name=name)
    out.set_shape([0 if mi == 0 or d == 0 else None if mi is None or d is None else mi * d
                   for mi, d in zip(static, dims)])
    return out


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """[start, start + delta, ...) below `limit`, as TF1's tf.range. With Python numbers it is
    a constant; with tensor bounds (``sf.range(sf.shape(x)[0])``) it is computed when the graph
    runs."""
    if limit is None:
        start, limit = 0, start
    if any(isinstance(v, Tensor) for v in (start, limit, delta)):
        return _range_of_tensors(start, limit, delta, dtype, name)
    return ops.constant(_range_values(start, limit, delta, dtype), name=name)


def _range_values(start, limit, delta, dtype):
    """range() of Python numbers as TF's Range kernel computes it, in the output dtype (float32
    for floats, int32 for ints, int64 past int32): ceil(|(limit - start) / delta|) elements,
    each the previous plus delta (np.arange counts in float64: range(1, 1.3, 0.1) had 1.3)."""
    if dtype is not None:
        dt = dtypes.as_dtype(dtype)
        for v in (start, limit, delta):
            check_no_python_float(v, dt)
    else:   # TF's: the widest of the arguments' dtypes, int32 < int64 < float32 < float64
        order = [np.int32, np.int64, np.float32, np.float64]
        dt = dtypes.as_dtype(builtins.max(
            (v.dtype.type if isinstance(v, np.generic) else _literal(v).dtype.type
             for v in (start, limit, delta)),
            key=lambda t: order.index(t) if t in order else 0))
    kind = dt.as_numpy_dtype
    start, limit, delta = kind(start), kind(limit), kind(delta)
    if delta == 0:
        raise ValueError("range: Requires delta != 0: %s" % delta)
    if delta > 0 and start > limit:
        raise ValueError("range: Requires start <= limit when delta > 0: %s/%s"
                         % (start, limit))
    if delta < 0 and start < limit:
        raise ValueError("range: Requires start >= limit when delta < 0: %s/%s"
                         % (start, limit))
    if dt.is_integer:
        size = (builtins.abs(int(limit) - int(start)) + builtins.abs(int(delta)) - 1) // \
            builtins.abs(int(delta))
        return (int(start) + int(delta) * np.arange(size, dtype=np.int64)).astype(kind)
    size = int(np.ceil(np.abs((limit - start) / delta)))
    steps = np.full(size, delta, dtype=kind)
    if size:
        steps[0] = start
    return np.add.accumulate(steps, dtype=kind)


def _range_of_tensors(start, limit, delta, dtype, name):
    """range() when a bound is a tensor: start + delta * [0, 1, ..., n) with n = ceil((limit -
    start) / delta), at least 0, the positions a running sum of ones."""
    values = [convert_to_tensor(v) for v in (start, limit, delta)]
    if dtype is None:
        floating = [v.dtype for v in values if v.dtype.is_floating]
        dtype = floating[0] if floating else values[0].dtype
        if not floating and any(v.dtype == dtypes.int64 for v in values):
            dtype = dtypes.int64
    dt = dtypes.as_dtype(dtype)
    start, limit, delta = [ops.cast(v, dt) for v in values]
    # TF's Range checks, when the step runs (a zero delta divided by zero; an infinite bound
    # asked Fill for 2^63 elements).
    from shardflow import check_ops
    zero = ops.constant(0, dt)
    checks = [
        check_ops._check(ops.not_equal(delta, zero), "range: Requires delta != 0", None,
                         "range_delta", [delta]),
        check_ops._check(ops.logical_or(ops.less_equal(delta, zero),
                                        ops.less_equal(start, limit)),
                         "range: Requires start <= limit when delta > 0", None, "range_order",
                         [start, limit]),
        check_ops._check(ops.logical_or(ops.greater_equal(delta, zero),
                                        ops.greater_equal(start, limit)),
                         "range: Requires start >= limit when delta < 0", None, "range_order",
                         [start, limit])]
    if dt.is_floating:
        count = ops.ceil(ops.divide(ops.subtract(limit, start), delta))
        checks.append(check_ops._check(
            ops.less(ops.abs(count), ops.constant(2.0 ** 62, dt)),
            "range: Requires ((limit - start) / delta) <= 2^62 (a finite range)", None,
            "range_size", [start, limit, delta]))
    else:   # ceil of the integer division, for either sign of delta
        with get_default_graph().control_dependencies(checks[:1]):
            count = ops.negative(ops.floordiv(ops.subtract(start, limit), delta))
    with get_default_graph().control_dependencies(checks):
        count = ops.maximum(ops.cast(count, dtypes.int64), 0)   # int32 would wrap past 2^31
    positions = ops.cumsum(ops.fill(ops.reshape(count, [1]), ops.constant(1, dt)),
                           exclusive=True)
    return ops.add(start, ops.multiply(delta, positions), name=name)


def _literal_like_other(x, y):
    """x and y as tensors; a literal (Python number, list, array) takes the other operand's
    dtype. Two tensors are converted as they are (callers check that their dtypes agree)."""
    from shardflow.variables import Variable

    def is_tensor(v):
        return isinstance(v, (Tensor, Variable))
    like = x if is_tensor(x) else (y if is_tensor(y) else None)
    dtype = like.dtype if like is not None else None
    x = convert_to_tensor(x) if is_tensor(x) else convert_to_tensor(x, dtype=dtype)
    y = convert_to_tensor(y) if is_tensor(y) else convert_to_tensor(y, dtype=x.dtype)
    return x, y


def _select_operands(condition, x, y):
    """condition as a bool tensor; x and y as tensors of one dtype (a literal takes the other's)."""
    x, y = _literal_like_other(x, y)
    if y.dtype != x.dtype:
        raise ValueError("tensor %s has dtype %s, not %s" % (y.name, y.dtype.name, x.dtype.name))
    condition = convert_to_tensor(condition)
    if condition.dtype != dtypes.bool_:
        raise TypeError("where's condition must be bool, got %s (%s); compare it first, e.g. "
                        "sf.greater(c, 0)" % (condition.name, condition.dtype.name))
    return condition, x, y


def where(condition, x=None, y=None, name=None):
    """x where `condition` is true, else y (both given), as TF1's three-argument tf.where (the
    Select op): x and y have one shape and `condition` has it too, or is a vector choosing
    whole rows of x's first dimension, or a scalar. Where shapes differ otherwise, they are
    broadcast as tf.where_v2 does. Only the chosen value is read, so ``sf.where(x > 0,
    sf.log(x), sf.zeros_like(x))`` has no NaN; gradients flow to x and y where each is chosen.
    With only `condition`: the coordinates of its true elements, [count, rank] int64 in
    row-major order (the Where op)."""
    if x is None and y is None:
        # Numbers too, as TF 1.15's: the coordinates of the non-zero elements.
        condition = convert_to_tensor(condition)
        if condition.dtype not in (dtypes.bool_, dtypes.float32, dtypes.float64, dtypes.int8,
                                   dtypes.uint8, dtypes.int32, dtypes.int64):
            condition = ops.not_equal(condition, ops.zeros_like(condition))
        return ops._out("Where", [condition], None, name)
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither (the coordinates of the true "
                         "elements)")
    condition, x, y = _select_operands(condition, x, y)
    if x.dtype == dtypes.string:   # no string Select kernel: string_ops' PyFunc
        from shardflow import string_ops
        return string_ops.string_select(condition, x, y, rows=True, name=name)
    cs, xs, ys = (t.shape.as_list() if t.shape.ndims is not None else None
                  for t in (condition, x, y))
    row_vector = cs is not None and xs is not None and len(cs) == 1 and len(xs) > 1
    same = xs is not None and xs == ys and None not in xs and cs is not None and (
        len(cs) == 0 or cs == xs)
    if row_vector or same:
        return ops._out("Select", [condition, x, y], name=name)
    return ops._out("SelectV2", [condition, x, y], name=name)


def where_v2(condition, x=None, y=None, name=None):
    """x where `condition` is true, else y, with all three broadcast like NumPy (TF's
    tf.where_v2 / TF2's tf.where; the SelectV2 op)."""
    if x is None or y is None:
        raise ValueError("where_v2(condition) (the indices of true elements) is not supported; "
                         "give where_v2(condition, x, y)")
    condition, x, y = _select_operands(condition, x, y)
    if x.dtype == dtypes.string:
        from shardflow import string_ops
        return string_ops.string_select(condition, x, y, name=name)
    return ops._out("SelectV2", [condition, x, y], name=name)


def boolean_mask(tensor, mask, name=None, axis=None):
    """The elements (rows) of `tensor` where `mask` is true, as TF1's tf.boolean_mask: `mask`
    (bool, known rank k) covers tensor's first k dimensions (or the k dimensions from `axis`);
    the result is [count] + tensor.shape[k:] (tensor.shape[:axis] + [count] +
    tensor.shape[axis + k:]). Gradients flow to the picked elements."""
    tensor = convert_to_tensor(tensor)
    mask = convert_to_tensor(mask)
    if mask.dtype != dtypes.bool_:
        raise TypeError("boolean_mask: mask must be bool, got %s" % mask.dtype.name)
    k = mask.shape.ndims
    if k is None or k == 0:
        raise ValueError("boolean_mask: the mask needs a known rank of at least 1")
    axis = 0 if axis is None else int(axis)
    rank = tensor.shape.ndims
    if rank is not None and axis + k > rank:
        raise ValueError("boolean_mask: a rank-%d mask from axis %d does not fit a rank-%d "
                         "tensor" % (k, axis, rank))
    if axis < 0:
        if rank is None:
            raise ValueError("boolean_mask: a negative axis needs the tensor's rank")
        axis += rank
    picked = ops.reshape(ops._out("Where", [ops.reshape(mask, [-1])]), [-1])
    if axis != 0:
        # The k masked dimensions from `axis` merged into one, then the picked entries of it.
        dims = tensor.shape.as_list() if rank is not None else None
        if dims is not None and None not in dims:
            merged = ops.reshape(tensor, dims[:axis] + [-1] + dims[axis + k:])
        else:
            run = ops.shape(tensor)
            merged = ops.reshape(tensor, ops.concat([ops.slice(run, [0], [axis]), [-1],
                                                     ops.slice(run, [axis + k], [-1])], 0))
        return gather(merged, picked, axis=axis, name=name)
    rest = tensor.shape.as_list()[k:] if rank is not None else None
    if rest is not None and None not in rest:
        flat = ops.reshape(tensor, [-1] + rest)
    else:
        flat = ops.reshape(tensor, ops.concat([[-1], ops.slice(ops.shape(tensor), [k], [-1])], 0))
    return gather(flat, picked, name=name)


def _nd_linear_indices(indices, dims, what):
    """Row-major linear positions of the D-tuples `indices` [..., D] in a block of `dims` (D
    Python ints, or an int64 tensor [D] when some are known only when the step runs), and the
    op that fails the step when a coordinate is out of [0, dims[d]) — a linear position alone
    would silently read another element."""
    from shardflow.check_ops import _check
    idx = ops.cast(indices, dtypes.int64)
    if isinstance(dims, Tensor):
        depth = dims.shape.as_list()[0]
        sizes = [ops.reshape(ops.slice(dims, [d], [1]), []) for d in builtins.range(depth)]
        strides = [np.int64(1)]
        for d in builtins.range(depth - 1, 0, -1):
            strides.insert(0, ops.multiply(strides[0], sizes[d]))
        strides = stack([ops.cast(convert_to_tensor(t), dtypes.int64) for t in strides])
        shown = "the params' shape"
    else:
        strides = np.asarray([int(np.prod(dims[d + 1:], dtype=np.int64))
                              for d in builtins.range(len(dims))], np.int64)
        dims = np.asarray(dims, np.int64)
        shown = "the dimensions %s" % dims.tolist()
    linear = ops.reduce_sum(ops.multiply(idx, strides), axis=-1)
    inside = ops.logical_and(
        reduce_all(ops.greater_equal(idx, np.int64(0))),
        reduce_all(ops.less(idx, dims)))
    check = _check(inside, "%s: an index is out of range for %s" % (what, shown), None,
                   what + "_bounds")
    return linear, check


def _nd_depth(indices, what):
    depth = indices.shape.as_list()[-1] if indices.shape.ndims else None
    if depth is None:
        raise ValueError("%s: the indices' last dimension (the index depth) must be known"
                         % what)
    if not indices.dtype.is_integer:
        raise TypeError("%s: indices must be int32 or int64, not %s" % (what, indices.dtype.name))
    return depth


def _rows(value, dims, depth):
    """`value` as [prod(dims[:depth])] + dims[depth:] (dims: its static shape, None where
    unknown)."""
    if None not in dims:
        block = int(np.prod(dims[:depth], dtype=np.int64))
        return ops.reshape(value, [block] + dims[depth:])
    tail = ops.slice(ops.shape(value), [depth], [-1])
    return ops.reshape(value, ops.concat([[-1], tail], 0))


def gather_nd(params, indices, name=None, batch_dims=0):
    """TF1's tf.gather_nd: `indices` [..., D] picks slices params[i0, ..., iD-1], giving
    indices.shape[:-1] + params.shape[D:]. params needs a known rank of at least D; its sizes
    may be known only when the step runs. An index out of range fails the step. Gradients flow
    to params. With `batch_dims` b, the first b dimensions of params and indices are batch
    dimensions: each batch entry indexes its own slice of params (TF 1.14's batch_dims)."""
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    if batch_dims:
        indices = _with_batch_coordinates(indices, batch_dims, params)
    depth = _nd_depth(indices, "gather_nd")
    dims = params.shape.as_list() if params.shape.ndims is not None else None
    if dims is None or len(dims) < depth:
        raise ValueError("gather_nd: params need a known rank of at least the index depth %d, "
                         "got shape %r" % (depth, dims))
    block = dims[:depth]
    if None in block:
        block = ops.cast(ops.slice(ops.shape(params), [0], [depth]), dtypes.int64)
    linear, check = _nd_linear_indices(indices, block, "gather_nd")
    from shardflow.framework import control_dependencies
    with control_dependencies([check]):
        linear = ops.identity(linear)
    return gather(_rows(params, dims, depth), linear, name=name)


def _with_batch_coordinates(indices, batch_dims, params):
    """`indices` [B1..Bb, ..., D] with each entry's batch position (i1..ib) put before its
    index, [B1..Bb, ..., b + D]: gather_nd of that on params reads the entry's own batch slice.
    """
    rank = indices.shape.ndims
    b = int(batch_dims)
    if rank is None or params.shape.ndims is None:
        raise ValueError("gather_nd(batch_dims=...) needs params and indices of known rank")
    if b < 0 or b >= rank or b >= params.shape.ndims:
        raise ValueError("gather_nd: batch_dims=%d must be at least 0 and less than the rank of "
                         "indices (%d) and of params (%d)" % (b, rank, params.shape.ndims))
    sizes = ops.shape(indices, out_type=indices.dtype)
    zeros = ops.expand_dims(ops.zeros_like(ops.reduce_sum(indices, -1)), -1)  # [..., 1]
    coordinates = []
    for d in builtins.range(b):
        along = [1] * rank
        along[d] = -1
        steps = range(0, sizes[d], 1, dtype=indices.dtype)
        coordinates.append(ops.add(zeros, ops.reshape(steps, along)))
    return ops.concat(coordinates + [indices], -1)


def scatter_nd(indices, updates, shape, name=None):
    """TF1's tf.scatter_nd: zeros of `shape` (a list of ints, or an int tensor such as
    tf.shape(x)) with each updates slice added at the position its index [..., D] names
    (repeated indices add up). Floating or integer updates (integers are added in float64:
    exact while the sums stay within 2**53); an index out of range fails the step. Gradients
    flow to floating updates."""
    indices = convert_to_tensor(indices)
    updates = convert_to_tensor(updates)
    if updates.dtype in (dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.int8):
        wide = scatter_nd(indices, ops.cast(updates, dtypes.float64), shape)
        return ops.cast(wide, updates.dtype, name=name)
    if not updates.dtype.is_floating:
        raise TypeError("scatter_nd: updates must be numbers, not %s" % updates.dtype.name)
    depth = _nd_depth(indices, "scatter_nd")
    from shardflow.framework import control_dependencies
    if isinstance(shape, Tensor) or (isinstance(shape, (list, tuple)) and builtins.any(
            isinstance(d, Tensor) for d in shape)):
        shape = ops.cast(shape if isinstance(shape, Tensor) else stack(
            [ops.cast(convert_to_tensor(d), dtypes.int64) for d in shape]), dtypes.int64)
        rank = shape.shape.as_list()[0] if shape.shape.ndims == 1 else None
        if rank is None:
            raise ValueError("scatter_nd: the shape tensor needs a known length")
        if depth > rank:
            raise ValueError("scatter_nd: index depth %d is more than the %d dimensions of "
                             "the shape" % (depth, rank))
        linear, check = _nd_linear_indices(indices, ops.slice(shape, [0], [depth]),
                                           "scatter_nd")
        tail = ops.slice(shape, [depth], [-1])
        rows = ops.reshape(updates, ops.concat([[np.int64(-1)], tail], 0))
        block = ops.reduce_prod(ops.slice(shape, [0], [depth]), keepdims=True)
        with control_dependencies([check]):
            linear = ops.reshape(linear, [-1])
        out = ops._out("GatherV2Grad", [rows, linear, np.int32(0),
                                        ops.cast(ops.concat([block, tail], 0), dtypes.int32)])
        return ops.reshape(out, shape, name=name)
    dims = [int(d) for d in shape]
    if depth > len(dims):
        raise ValueError("scatter_nd: index depth %d is more than the %d dimensions of %r"
                         % (depth, len(dims), dims))
    linear, check = _nd_linear_indices(indices, dims[:depth], "scatter_nd")
    rest = dims[depth:]
    block = int(np.prod(dims[:depth], dtype=np.int64))
    rows = ops.reshape(updates, [-1] + rest)
    with control_dependencies([check]):
        linear = ops.reshape(linear, [-1])
    out = ops._out("GatherV2Grad", [rows, linear, np.int32(0),
                                    np.asarray([block] + rest, np.int32)])
    return ops.reshape(out, dims, name=name)


def _pad_amounts(paddings, rank):
    """pad's paddings as [[before, after]] * rank: Python ints where the graph determines
    them, scalar int32 tensors where only the step does."""
    from shardflow.tensor_util import constant_value, int_or_tensor
    if isinstance(paddings, Tensor):
        known = constant_value(paddings)
        if known is None:
            if paddings.shape.ndims is not None and paddings.shape.as_list() not in (
                    [rank, 2], [None, 2]):
                raise ValueError("pad: paddings must be [%d, 2] for rank %d, got shape %s"
                                 % (rank, rank, paddings.shape))
            amounts = ops.cast(paddings, dtypes.int32)
            return [[amounts[i, 0], amounts[i, 1]] for i in builtins.range(rank)]
        paddings = known
    rows = [list(row) for row in paddings] if isinstance(paddings, (list, tuple)) else \
        np.asarray(paddings).tolist()
    if len(rows) != rank or any(len(row) != 2 for row in rows):
        raise ValueError("pad: paddings must be [%d, 2] for rank %d, got %r"
                         % (rank, rank, paddings))
    return [[int_or_tensor(n) for n in row] for row in rows]


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """`tensor` with paddings[i] = [before, after] values added along dimension i, as TF1's
    tf.pad: mode CONSTANT (`constant_values`), REFLECT (mirrored without the edge row: [1 2 3]
    -> 2 1 2 3 2) or SYMMETRIC (with it: 1 1 2 3 3). Gradients flow through every mode. The
    other dimensions may be known only when the step runs (a batch of None), and in CONSTANT
    mode so may the paddings (a tensor, or tensors in the list)."""
    mode = mode.upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError("pad(mode=%r): one of CONSTANT, REFLECT, SYMMETRIC" % (mode,))
    value, dims = _static_dims(tensor, "pad")
    paddings = _pad_amounts(paddings, len(dims))
    if mode != "CONSTANT":
        if any(isinstance(n, Tensor) for row in paddings for n in row):
            raise ValueError("pad(mode=%r) needs paddings known when the graph is built" % mode)
        return ops.identity(_mirror_pad(value, paddings, mode), name=name)
    out = value
    for axis, (before, after) in enumerate(paddings):
        if not isinstance(before, Tensor) and not isinstance(after, Tensor) and \
                before == 0 and after == 0:
            continue
        shape = out.shape.as_list()
        dynamic = any(d is None for i, d in enumerate(shape) if i != axis)
        parts = []
        for n in (before, after):
            if not isinstance(n, Tensor) and not n:
                parts.append(None)
            elif dynamic or isinstance(n, Tensor):
                # Sizes known only when the step runs (a batch of None, a padding tensor): a
                # fill of the run-time shape with this axis replaced by n.
                run_shape = ops.shape(out)
                amount = ops.reshape(n, [1]) if isinstance(n, Tensor) else [int(n)]
                block = ops.concat([ops.slice(run_shape, [0], [axis]), amount,
                                    ops.slice(run_shape, [axis + 1], [-1])], 0)
                parts.append(ops.fill(block, ops.constant(constant_values, dtype=out.dtype)))
            else:
                block = list(shape)
                block[axis] = int(n)
                parts.append(ops.constant(np.full(block, constant_values,
                                                  out.dtype.as_numpy_dtype)))
        pieces = [p for p in (parts[0], out, parts[1]) if p is not None]
        out = ops.concat(pieces, axis)
    return ops.identity(out, name=name)


def _mirror_pad(value, paddings, mode):
    """pad's REFLECT and SYMMETRIC modes: per dimension, the mirrored rows gathered and
    concatenated on each side (sizes may be known only when the step runs)."""
    dims = value.shape.as_list()
    if len(paddings) != len(dims):
        raise ValueError("pad: %d paddings for rank %d" % (len(paddings), len(dims)))
    out = value
    skip = 1 if mode == "REFLECT" else 0
    for axis, (before, after) in enumerate(paddings):
        before, after = int(before), int(after)
        if before == 0 and after == 0:
            continue
        if before < 0 or after < 0:
            raise ValueError("pad(mode=%r): paddings %r for dimension %d must be >= 0"
                             % (mode, [before, after], axis))
        n = out.shape.as_list()[axis]
        left = np.arange(before, 0, -1) - 1 + skip
        if n is None:
            # A size known only when the step runs: the mirrored rows from a run-time range.
            # Paddings beyond the size (above n - 1 for REFLECT) fail the step in the gather.
            n = ops.shape(out)[axis]
            rows = ops.concat([ops.constant(left.astype(np.int32)), range(n),
                               ops.subtract(n - 1 - skip,
                                            ops.constant(np.arange(after, dtype=np.int32)))],
                              0)
        else:
            if max(before, after) > n - skip:
                raise ValueError("pad(mode=%r): paddings %r for dimension %d of size %d must "
                                 "be in [0, %d]" % (mode, [before, after], axis, n, n - skip))
            rows = np.concatenate([left, np.arange(n),
                                   n - 1 - skip - np.arange(after)]).astype(np.int32)
        out = gather(out, rows, axis=axis)
    return out


def argmin(input, axis=None, name=None, dimension=None,  # noqa: A002
           output_type=dtypes.int64):
    """Index of the smallest value along `axis` (argmax of the negation; TF1's arguments)."""
    return ops.argmax(ops.negative(input), axis=axis, dimension=dimension,
                      output_type=output_type, name=name)


def reduce_any(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Logical or over `axis` (TF1's tf.reduce_any); false over no elements."""
    # A count of the true elements (a Sum is defined over an empty axis, a Max is not).
    x = ops.cast(ops.cast(input_tensor, dtypes.bool_), dtypes.float32)
    count = ops.reduce_sum(x, axis=axis, keepdims=keepdims,
                           reduction_indices=reduction_indices, keep_dims=keep_dims)
    return ops.greater(count, 0.0, name=name)


def reduce_all(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Logical and over `axis` (TF1's tf.reduce_all); true over no elements."""
    # A count of the false elements, as in reduce_any.
    x = ops.cast(ops.logical_not(ops.cast(input_tensor, dtypes.bool_)), dtypes.float32)
    count = ops.reduce_sum(x, axis=axis, keepdims=keepdims,
                           reduction_indices=reduction_indices, keep_dims=keep_dims)
    return ops.equal(count, 0.0, name=name)


def getitem(tensor, key):
    """``tensor[key]`` (TF1's basic indexing): shardflow.strided_slice.getitem."""
    from shardflow.strided_slice import getitem as strided_getitem
    return strided_getitem(tensor, key)


__all__ = ["argmin", "boolean_mask", "embedding_lookup", "gather", "gather_nd", "one_hot",
           "pad", "range", "scatter_nd",
           "reduce_all", "reduce_any", "split", "stack", "tile", "unstack", "where", "where_v2"]
