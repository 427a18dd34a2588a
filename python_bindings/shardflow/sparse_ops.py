"""TF1's sparse ops, composed from dense ones, and the sf.sparse namespace (tf.sparse).

Example::

    sp = sf.SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0], dense_shape=[3, 4])
    sf.sparse.to_dense(sp)                        # [3, 4]: 1 at (0, 0), 2 at (1, 2)
    sf.sparse.sparse_dense_matmul(sp, w)          # [3, w's columns], without the dense [3, 4]
    sf.sparse.reduce_sum(sp, axis=1)              # [3]

Note [Sparse ops as compositions]. The engine has no sparse kernels; each op here is a few
dense ops over `indices` and `values`: an entry's row-major linear position within the dense
shape (int64 arithmetic on the index columns), then a scatter-add of the values to those
positions (unsorted_segment_sum, i.e. GatherV2Grad) or a gather by them. So gradients flow to
`values` (and to the dense operand of sparse_dense_matmul), and the work is O(N) in the stored
entries, except:
- to_dense / sparse_to_dense build the dense result (as in TF1). Repeated indices add up
  (TF1 with validate_indices=True rejects them); an index outside dense_shape fails the step
  when validate_indices is true.
- reorder sorts the entries' row-major positions with a stable top_k over all of them
  (O(N log N)); concat, fill_empty_rows, add, transpose and merge sort their result
  with it.
- to_dense, sparse_dense_matmul (rank 2), reorder, retain and reshape (to a new shape of
  known length) take a rank known only at run time (tf.sparse_placeholder(dtype) with no
  shape); reduce_sum over given axes, add of two SparseTensors and transpose need it when the
  graph is built. Sizes may be known only at run time everywhere.
- values must be numbers or bool where they are added (the scatter-add is not defined for
  strings); to_dense gathers strings instead, and the ops that only move entries (reorder,
  retain, slice, concat, split, reshape, transpose, fill_empty_rows) take any dtype.
"""

import sys
import types

import numpy as np

from shardflow import array_ops, dtypes, ops, segment_ops
from shardflow.framework import Tensor, control_dependencies, convert_to_tensor
from shardflow.sparse_tensor import (SparseTensor, SparseTensorValue, convert_to_sparse,
                                     sparse_placeholder)


def _i64(value):
    return np.asarray(value, dtype=np.int64)


def _rank(sp, what):
    rank = sp.shape.ndims
    if rank is None:
        raise ValueError("%s needs a SparseTensor of known rank: give dense_shape as a list, or "
                         "indices of a known [N, rank] shape" % what)
    return rank


def _dims(sp, rank=None):
    """The dense sizes: Python ints where the static shape knows them, else int64 scalars.
    `rank`: the rank an op requires, for a SparseTensor whose rank is known only when fed."""
    static = sp.shape.as_list() if sp.shape.ndims is not None else [None] * rank
    return [d if d is not None else sp.dense_shape[i] for i, d in enumerate(static)]


def _static(sp):
    """The static sizes of `sp` as a list (None: unknown), or None for an unknown rank."""
    return None if sp.rank is None else sp.shape.as_list()


def _rank2(sp, what):
    """Checks that `sp` is a matrix (or of a rank known only when fed, taken to be 2)."""
    if sp.rank not in (None, 2):
        raise ValueError("%s: the SparseTensor must have rank 2, not %d" % (what, sp.rank))
    return _dims(sp, 2)


def _product(dims):
    """The product of `dims` (Python ints and int64 scalars): an int when all are ints."""
    known = int(np.prod([d for d in dims if not isinstance(d, Tensor)], dtype=np.int64))
    out = None
    for d in dims:
        if isinstance(d, Tensor):
            out = d if out is None else ops.multiply(out, d)
    if out is None:
        return known
    return out if known == 1 else ops.multiply(out, _i64(known))


def _as_i64_tensor(d):
    return d if isinstance(d, Tensor) else ops.constant(_i64(d))


def _shape_of(dims):
    """A reshape target for `dims`: a list of ints (-1 for the one size known only at run
    time, which keeps the others in the static shape), else an int32 tensor."""
    unknown = [d for d in dims if isinstance(d, Tensor)]
    if not unknown:
        return [int(d) for d in dims]
    if len(unknown) == 1 and all(d > 0 for d in dims if not isinstance(d, Tensor)):
        return [-1 if isinstance(d, Tensor) else int(d) for d in dims]
    return ops.cast(array_ops.stack([_as_i64_tensor(d) for d in dims]), dtypes.int32)


def _column(indices, axis):
    return indices[:, axis]


def _linear_index(indices, dims, axes):
    """The row-major position (int64 [N]) of each entry's coordinates along `axes` within a
    block of sizes dims[axes]."""
    linear = None
    for k, axis in enumerate(axes):
        stride = _product([dims[a] for a in axes[k + 1:]])
        term = _column(indices, axis)
        if isinstance(stride, Tensor) or stride != 1:
            term = ops.multiply(term, stride if isinstance(stride, Tensor) else _i64(stride))
        linear = term if linear is None else ops.add(linear, term)
    return linear


def _full_linear(sp):
    """(linear, total, shape): each entry's row-major position in the whole dense shape, the
    number of dense entries, and the dense shape as a reshape target. Works for a rank known
    only at run time (strides as products over a triangular mask of dense_shape)."""
    if sp.rank is not None:
        dims = _dims(sp)
        return (_linear_index(sp.indices, dims, list(range(sp.rank))), _product(dims),
                _shape_of(dims))
    shape = sp.dense_shape
    position = ops.cumsum(ops.ones_like(shape))
    later = ops.greater(ops.expand_dims(position, 0), ops.expand_dims(position, 1))
    strides = ops.reduce_prod(array_ops.where_v2(later, ops.expand_dims(shape, 0), _i64(1)),
                              axis=1)
    linear = ops.reduce_sum(ops.multiply(sp.indices, ops.expand_dims(strides, 0)), axis=1)
    return linear, ops.reduce_prod(shape), ops.cast(shape, dtypes.int32)


def _bounds_check(sp, what):
    """The op that fails the step when a coordinate of `sp` lies outside its dense_shape."""
    from shardflow.check_ops import _check
    outside = ops.logical_or(ops.less(sp.indices, _i64(0)),
                             ops.greater_equal(sp.indices, ops.expand_dims(sp.dense_shape, 0)))
    count = ops.reduce_sum(ops.cast(outside, dtypes.float32))
    return _check(ops.equal(count, 0.0), "%s: an index of the SparseTensor lies outside its "
                  "dense_shape" % what, None, what + "_bounds")


def _scatter(values, linear, total):
    """A vector of `total` entries: the sum of the `values` sent to each position."""
    return segment_ops.unsorted_segment_sum(values, linear, total)


# ---- to and from dense ----------------------------------------------------------------------


def sparse_tensor_to_dense(sp_input, default_value=0, validate_indices=True, name=None):
    """The dense tensor of `sp_input`: its values at its indices, `default_value` elsewhere
    (TF1's tf.sparse_tensor_to_dense / tf.sparse.to_dense). Repeated indices add up (strings:
    the last one wins); with validate_indices an index outside dense_shape fails the step.
    Gradients flow to values. Strings (tf.string_split's) are gathered, not added: their
    default_value 0 means ""."""
    sp = convert_to_sparse(sp_input)
    linear, total, shape = _full_linear(sp)
    if validate_indices:
        with control_dependencies([_bounds_check(sp, "sparse_tensor_to_dense")]):
            linear = ops.identity(linear)
    if sp.dtype == dtypes.string:
        return ops.reshape(_gather_dense(sp, default_value, linear, total), shape, name=name)
    dense = _scatter(sp.values, linear, total)
    if not (isinstance(default_value, (int, float, np.number)) and default_value == 0):
        hit = _scatter(ops.ones_like(ops.cast(sp.values, dtypes.float32)), linear, total)
        default = ops.cast(convert_to_tensor(default_value), sp.dtype)
        dense = array_ops.where_v2(ops.greater(hit, 0.0), dense, default)
    return ops.reshape(dense, shape, name=name)


def _gather_dense(sp, default_value, linear, total):
    """The flat dense vector of a SparseTensor of strings (which cannot be added): each
    position takes the value of the last entry there, else `default_value` (a gather from
    [default, values...] by the entry number each position got, 0 for none)."""
    count = ops.shape(sp.values)[0]
    number = ops.add(array_ops.range(count), np.int32(1))
    slot = ops.maximum(segment_ops.unsorted_segment_max(number, linear, total), np.int32(0))
    if isinstance(default_value, (int, float)) and default_value == 0:
        default_value = b""   # the default's 0 (TF 2's None): the empty string
    default = ops.reshape(convert_to_tensor(default_value, dtype=dtypes.string), [1])
    return array_ops.gather(ops.concat([default, sp.values], 0), slot)


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    """TF1's tf.sparse_to_dense: a dense tensor of `output_shape` with `sparse_values` (a
    vector, or a scalar for every index) at `sparse_indices` ([N, rank], or [N] for a vector,
    or a scalar) and `default_value` elsewhere. As sparse_tensor_to_dense otherwise."""
    indices = convert_to_tensor(sparse_indices)
    if indices.shape.ndims == 0:
        indices = ops.reshape(indices, [1, 1])
    elif indices.shape.ndims == 1:
        indices = ops.expand_dims(indices, 1)
    values = convert_to_tensor(sparse_values)
    if values.shape.ndims == 0:
        values = ops.fill(ops.slice(ops.shape(indices), [0], [1]), values)
    sp = SparseTensor(indices, values, output_shape)
    return sparse_tensor_to_dense(sp, default_value, validate_indices, name=name)


def from_dense(tensor, name=None):
    """The SparseTensor of the non-zero entries of `tensor` (known rank), in row-major order
    (TF's tf.sparse.from_dense)."""
    x = convert_to_tensor(tensor)
    if x.shape.ndims is None:
        raise ValueError("from_dense needs a tensor of known rank, got %r" % x)
    mask = ops.not_equal(x, ops.zeros_like(x))
    indices = array_ops.where(mask)
    values = array_ops.boolean_mask(x, mask, name=name)
    return SparseTensor(indices, values, ops.cast(ops.shape(x), dtypes.int64),
                        _static_dims=x.shape.as_list())


# ---- arithmetic -----------------------------------------------------------------------------


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """sp_a @ b for a rank-2 SparseTensor `sp_a` and a dense matrix `b` (TF1's
    tf.sparse_tensor_dense_matmul / tf.sparse.sparse_dense_matmul), without building sp_a
    densely: the rows of b picked by the entries' column indices, scaled by the values, summed
    per row index. adjoint_a / adjoint_b transpose the operands (no complex types). Gradients
    flow to sp_a.values and b. Repeated indices add up."""
    sp = convert_to_sparse(sp_a, "sp_a")
    dims = _rank2(sp, "sparse_tensor_dense_matmul")
    b = convert_to_tensor(b)
    if b.shape.ndims != 2:
        raise ValueError("sparse_tensor_dense_matmul: b must be a matrix, got shape %s" % b.shape)
    if b.dtype != sp.dtype:
        raise TypeError("sparse_tensor_dense_matmul: sp_a is %s but b is %s"
                        % (sp.dtype.name, b.dtype.name))
    if adjoint_b:
        b = ops.transpose(b)
    row_axis, col_axis = (1, 0) if adjoint_a else (0, 1)
    rows = _column(sp.indices, row_axis)
    cols = _column(sp.indices, col_axis)
    picked = array_ops.gather(b, cols)
    weighted = ops.multiply(picked, ops.expand_dims(sp.values, 1))
    return segment_ops.unsorted_segment_sum(weighted, rows, dims[row_axis], name=name)


def _axes_list(axis, rank, what):
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = []
    for a in axes:
        if not -rank <= int(a) < rank:
            raise ValueError("%s: axis %d is out of range for rank %d" % (what, a, rank))
        out.append(int(a) % rank)
    return sorted(set(out))


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None,
                      name=None):
    """The sum of `sp_input`'s entries over `axis` (Python ints; None: all), as a dense tensor
    (TF1's tf.sparse_reduce_sum / tf.sparse.reduce_sum); keepdims keeps the reduced
    dimensions as size 1. Gradients flow to values."""
    sp = convert_to_sparse(sp_input)
    axis = reduction_axes if axis is None else axis
    keep = bool(keepdims or keep_dims)
    if axis is None:
        total = ops.reduce_sum(sp.values)
        if keep:
            return ops.reshape(total, [1] * _rank(sp, "sparse_reduce_sum"), name=name)
        return ops.identity(total, name=name)
    rank = _rank(sp, "sparse_reduce_sum")
    axes = _axes_list(axis, rank, "sparse_reduce_sum")
    kept = [d for d in range(rank) if d not in axes]
    dims = _dims(sp)
    if not kept:
        total = ops.reduce_sum(sp.values)
        return ops.reshape(total, [1] * rank if keep else [], name=name)
    linear = _linear_index(sp.indices, dims, kept)
    sums = _scatter(sp.values, linear, _product([dims[d] for d in kept]))
    out_dims = [1 if d in axes else dims[d] for d in range(rank)] if keep else \
        [dims[d] for d in kept]
    return ops.reshape(sums, _shape_of(out_dims), name=name)


def _coalesce(indices, values, like):
    """(sp, repeats): a SparseTensor of `like`'s dense shape with one entry per distinct
    coordinate of `indices` (the values of repeats added), and a bool vector, true for its
    entries that more than one of `indices` gave."""
    dims = _dims(like)
    linear = _linear_index(indices, dims, list(range(len(dims))))
    unique, idx = segment_ops.unique(linear)
    count = ops.shape(unique)[0]
    summed = segment_ops.unsorted_segment_sum(values, idx, count)
    hits = segment_ops.unsorted_segment_sum(ops.ones_like(ops.cast(idx, dtypes.float32)), idx,
                                            count)
    return (SparseTensor(_unravel(unique, dims), summed, like.dense_shape,
                         _static_dims=like.shape.as_list()), ops.greater(hits, 1.5))


def _unravel(linear, dims):
    """The [N, rank] int64 coordinates of row-major positions `linear` in a block of `dims`."""
    cols = []
    for d in range(len(dims)):
        stride = _product(dims[d + 1:])
        col = linear
        if isinstance(stride, Tensor) or stride != 1:
            col = ops.floordiv(col, stride if isinstance(stride, Tensor) else _i64(stride))
        if d > 0:
            col = ops.floormod(col, dims[d] if isinstance(dims[d], Tensor) else _i64(dims[d]))
        cols.append(col)
    return array_ops.stack(cols, axis=1)


def sparse_add(a, b, threshold=None, thresh=None, name=None):
    """a + b (TF1's tf.sparse_add / tf.sparse.add, (a, b, threshold, thresh): `thresh` is the
    older name of `threshold`, default 0). A SparseTensor plus a dense tensor is the dense sum.
    Two SparseTensors (of one dense shape) give a SparseTensor with one entry per coordinate
    either has (in row-major order), dropping the sums (coordinates both have) whose magnitude
    is below `threshold`; an entry only one operand has stays, however small (as TF1).
    Gradients flow to the values and the dense operand."""
    if threshold is not None and thresh is not None:
        raise ValueError("sparse_add: give threshold or thresh, not both")
    thresh = threshold if threshold is not None else (thresh if thresh is not None else 0)
    a_sparse = isinstance(a, (SparseTensor, SparseTensorValue))
    b_sparse = isinstance(b, (SparseTensor, SparseTensorValue))
    if not a_sparse and not b_sparse:
        return ops.add(a, b, name=name)
    if a_sparse != b_sparse:
        sp, dense = (a, b) if a_sparse else (b, a)
        return ops.add(sparse_tensor_to_dense(sp), dense, name=name)
    a, b = convert_to_sparse(a, "a"), convert_to_sparse(b, "b")
    if a.dtype != b.dtype:
        raise TypeError("sparse_add: a is %s but b is %s" % (a.dtype.name, b.dtype.name))
    rank = _rank(a, "sparse_add")
    if b.rank is not None and b.rank != rank:
        raise ValueError("sparse_add: a has rank %d but b has rank %d" % (rank, b.rank))
    static = [x if x is not None else y for x, y in zip(a.shape.as_list(), b.shape.as_list())] \
        if b.rank is not None else a.shape.as_list()
    like = SparseTensor(a.indices, a.values, a.dense_shape, _static_dims=static)
    summed, both = _coalesce(ops.concat([a.indices, b.indices], 0),
                             ops.concat([a.values, b.values], 0), like)
    if isinstance(thresh, Tensor) or thresh:
        # As TF1's SparseAdd kernel: only a sum (a coordinate both operands have) is dropped
        # for a magnitude below thresh; an entry of one operand alone is kept as it is.
        big = ops.greater_equal(ops.abs(summed.values), ops.cast(thresh, summed.dtype))
        summed = sparse_retain(summed, ops.logical_or(ops.logical_not(both), big))
    return reorder(summed, name=name)


# ---- structure --------------------------------------------------------------------------------


def reorder(sp_input, name=None):
    """`sp_input` with its entries in row-major order of their indices, as TF1's
    tf.sparse.reorder / tf.sparse_reorder (entries with one coordinate keep their order): a
    stable sort of their row-major positions, O(N log N) (Note [Sparse ops as
    compositions]). Gradients flow to values."""
    from shardflow.nn import top_k
    sp = convert_to_sparse(sp_input)
    linear = _full_linear(sp)[0]
    # top_k of -position - 1 (no overflow: positions are >= 0) puts the smallest position
    # first, and ties in their order: a stable ascending sort, as sf.argsort (which an
    # empty vector trips up).
    flipped = ops.expand_dims(ops.subtract(ops.negative(linear), _i64(1)), 0)
    order = ops.reshape(top_k(flipped, ops.shape(linear)[0])[1], [-1])
    return SparseTensor(array_ops.gather(sp.indices, order),
                        array_ops.gather(sp.values, order, name=name),
                        sp.dense_shape, _static_dims=_static(sp))


def sparse_retain(sp_input, to_retain):
    """The entries of `sp_input` where the bool vector `to_retain` [N] is true (TF1's
    tf.sparse_retain / tf.sparse.retain); the dense shape stays."""
    sp = convert_to_sparse(sp_input)
    keep = convert_to_tensor(to_retain)
    if keep.dtype != dtypes.bool_:
        raise TypeError("sparse_retain: to_retain must be bool, not %s" % keep.dtype.name)
    return SparseTensor(array_ops.boolean_mask(sp.indices, keep),
                        array_ops.boolean_mask(sp.values, keep), sp.dense_shape,
                        _static_dims=_static(sp))


def sparse_reshape(sp_input, shape, name=None):
    """`sp_input` as a SparseTensor of dense shape `shape` (a list with at most one -1, or an
    int64 tensor of known length), each entry keeping its row-major position (TF1's
    tf.sparse_reshape / tf.sparse.reshape)."""
    sp = convert_to_sparse(sp_input)
    linear, total, _ = _full_linear(sp)
    if isinstance(shape, Tensor):
        if shape.shape.ndims != 1 or shape.shape.as_list()[0] is None:
            raise ValueError("sparse_reshape: a shape tensor needs a known length")
        shape = ops.cast(shape, dtypes.int64)
        new = [shape[i] for i in range(shape.shape.as_list()[0])]
    else:
        new = [d if isinstance(d, Tensor) else int(d) for d in shape]
    unknown = [i for i, d in enumerate(new) if isinstance(d, Tensor) or d < 0]
    static_unknown = [i for i, d in enumerate(new) if not isinstance(d, Tensor) and d < 0]
    if len(static_unknown) > 1:
        raise ValueError("sparse_reshape: at most one -1 in %r" % (shape,))
    if static_unknown:
        i = static_unknown[0]
        rest = _product([d for j, d in enumerate(new) if j != i])
        if isinstance(total, Tensor) or isinstance(rest, Tensor):
            new[i] = ops.floordiv(_as_i64_tensor(total), _as_i64_tensor(rest))
        else:
            if rest == 0 or total % rest:
                raise ValueError("sparse_reshape: %d entries do not fit %r" % (total, shape))
            new[i] = total // rest
    elif unknown:  # tensor sizes, one of which may be -1 at run time
        sizes = [_as_i64_tensor(d) for d in new]
        known = _product([array_ops.where(ops.less(d, _i64(0)), _i64(1), d) for d in sizes])
        missing = ops.floordiv(_as_i64_tensor(total), known)
        new = [array_ops.where(ops.less(d, _i64(0)), missing, d) for d in sizes]
    if not isinstance(total, Tensor) and not any(isinstance(d, Tensor) for d in new) \
            and _product(new) != total:
        raise ValueError("sparse_reshape: a dense shape of %d entries cannot become %r"
                         % (total, shape))
    static = [None if isinstance(d, Tensor) else int(d) for d in new]
    dense_shape = (_i64(static) if None not in static
                   else array_ops.stack([_as_i64_tensor(d) for d in new]))
    return SparseTensor(ops.identity(_unravel(linear, new), name=name), sp.values, dense_shape,
                        _static_dims=static)


def sparse_transpose(sp_input, perm=None, name=None):
    """`sp_input` with its dimensions permuted by `perm` (Python ints; None: reversed), in
    row-major order again (TF1's tf.sparse_transpose / tf.sparse.transpose)."""
    sp = convert_to_sparse(sp_input)
    rank = _rank(sp, "sparse_transpose")
    perm = list(range(rank))[::-1] if perm is None else [int(p) % rank for p in perm]
    if sorted(perm) != list(range(rank)):
        raise ValueError("sparse_transpose: perm %r is not a permutation of %d axes"
                         % (perm, rank))
    indices = array_ops.gather(sp.indices, np.asarray(perm, np.int32), axis=1)
    dense_shape = array_ops.gather(sp.dense_shape, np.asarray(perm, np.int32))
    static = [sp.shape.as_list()[p] for p in perm]
    return reorder(SparseTensor(indices, sp.values, dense_shape, _static_dims=static), name=name)


def sparse_concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None,
                  expand_nonconcat_dims=None):
    """The SparseTensors `sp_inputs` (one rank, known when the graph is built) joined along
    `axis` (TF1's tf.sparse_concat / tf.sparse.concat): each input's entries shift along axis
    by the sizes of the inputs before it; the result is in row-major order. The other
    dimensions must agree, unless expand_nonconcat_dim(s), which takes their maximum.
    Gradients flow to the values. The ordering is reorder's (Note [Sparse ops as
    compositions])."""
    if concat_dim is not None:
        axis = concat_dim
    expand = bool(expand_nonconcat_dim or expand_nonconcat_dims)
    inputs = [convert_to_sparse(sp, "sp_inputs") for sp in sp_inputs]
    if not inputs:
        raise ValueError("sparse_concat: sp_inputs is empty")
    rank = _rank(inputs[0], "sparse_concat")
    for sp in inputs[1:]:
        if _rank(sp, "sparse_concat") != rank:
            raise ValueError("sparse_concat: inputs of ranks %d and %d" % (rank, sp.rank))
        if sp.dtype != inputs[0].dtype:
            raise TypeError("sparse_concat: inputs of dtypes %s and %s"
                            % (inputs[0].dtype.name, sp.dtype.name))
    if not -rank <= int(axis) < rank:
        raise ValueError("sparse_concat: axis %d is out of range for rank %d" % (axis, rank))
    axis = int(axis) % rank
    one_hot_axis = _i64([1 if d == axis else 0 for d in range(rank)])
    indices, values, checks = [], [], []
    offset = None
    for sp in inputs:
        idx = sp.indices
        if offset is not None:
            idx = ops.add(idx, ops.expand_dims(ops.multiply(one_hot_axis, offset), 0))
        indices.append(idx)
        values.append(sp.values)
        size = sp.dense_shape[axis]
        offset = size if offset is None else ops.add(offset, size)
    shapes = array_ops.stack([sp.dense_shape for sp in inputs])      # [inputs, rank]
    if expand:
        other = ops.reduce_max(shapes, axis=0)
    else:
        other = inputs[0].dense_shape
        from shardflow.check_ops import _check
        same = array_ops.reduce_all(ops.logical_or(
            ops.equal(shapes, ops.expand_dims(other, 0)),
            ops.expand_dims(ops.cast(one_hot_axis, dtypes.bool_), 0)))
        checks.append(_check(same, "sparse_concat: the inputs' dense shapes differ outside "
                             "the concat axis %d (expand_nonconcat_dim allows it)" % axis,
                             None, "sparse_concat_shapes"))
    dense_shape = ops.add(ops.multiply(ops.subtract(_i64(1), one_hot_axis), other),
                          ops.multiply(one_hot_axis, offset))
    statics = [sp.shape.as_list() for sp in inputs]
    static = []
    for d in range(rank):
        sizes = [s[d] for s in statics]
        if None in sizes:
            static.append(None)
        elif d == axis:
            static.append(sum(sizes))
        elif expand:
            static.append(max(sizes))
        else:
            if len(set(sizes)) != 1:
                raise ValueError("sparse_concat: dimension %d differs between inputs (%s); "
                                 "expand_nonconcat_dim=True takes the largest" % (d, sizes))
            static.append(sizes[0])
    with control_dependencies(checks):
        joined = SparseTensor(ops.concat(indices, 0), ops.identity(ops.concat(values, 0)),
                              dense_shape, _static_dims=static)
    return reorder(joined, name=name)


def sparse_fill_empty_rows(sp_input, default_value, name=None):
    """(output, empty_row_indicator) as TF1's tf.sparse.fill_empty_rows: each row (index
    along dimension 0) of `sp_input` without entries gets one, `default_value` at
    [row, 0, ..., 0]; empty_row_indicator is bool [rows], true for those. Output in row-major
    order (sorted by reorder). Gradients flow to the values."""
    sp = convert_to_sparse(sp_input)
    rank = _rank(sp, "sparse_fill_empty_rows")
    rows = sp.dense_shape[0]
    count = segment_ops.unsorted_segment_sum(
        ops.ones_like(ops.cast(_column(sp.indices, 0), dtypes.float32)),
        _column(sp.indices, 0), rows)
    empty = ops.equal(count, 0.0)
    new_rows = array_ops.where(empty)                               # [k, 1] int64
    if rank > 1:
        zeros = ops.zeros_like(new_rows)
        new_rows = ops.concat([new_rows] + [zeros] * (rank - 1), 1)
    default = ops.cast(convert_to_tensor(default_value), sp.dtype)
    fill = ops.fill(ops.slice(ops.shape(new_rows), [0], [1]), default)
    filled = SparseTensor(ops.concat([sp.indices, new_rows], 0),
                          ops.concat([sp.values, fill], 0), sp.dense_shape,
                          _static_dims=_static(sp))
    return reorder(filled, name=name), ops.identity(empty, name=None)


def sparse_slice(sp_input, start, size, name=None):
    """The entries of `sp_input` with start <= index < start + size in every dimension,
    shifted by -start (TF1's tf.sparse.slice / tf.sparse_slice); dense shape
    max(min(start + size, shape) - start, 0). Order kept; gradients flow to the values."""
    sp = convert_to_sparse(sp_input)
    start = ops.cast(convert_to_tensor(start), dtypes.int64)
    size = ops.cast(convert_to_tensor(size), dtypes.int64)
    end = ops.add(start, size)
    inside = array_ops.reduce_all(ops.logical_and(
        ops.greater_equal(sp.indices, ops.expand_dims(start, 0)),
        ops.less(sp.indices, ops.expand_dims(end, 0))), axis=1)
    kept = array_ops.boolean_mask(sp.indices, inside)
    dense_shape = ops.maximum(ops.subtract(ops.minimum(end, sp.dense_shape), start), _i64(0))
    return SparseTensor(ops.subtract(kept, ops.expand_dims(start, 0)),
                        array_ops.boolean_mask(sp.values, inside, name=name), dense_shape,
                        _static_dims=None if sp.rank is None else [None] * sp.rank)


# ---- reductions and element-wise ops over the stored entries ------------------------------


def _groups(sp, axes):
    """(group, count): each entry's group (int64 [N], the row-major position of its
    coordinates along `axes`; all 0 when `axes` is empty) and the number of groups."""
    if not axes:
        return ops.zeros_like(_column(sp.indices, 0)), 1
    dims = _dims(sp)
    return _linear_index(sp.indices, dims, axes), _product([dims[a] for a in axes])


def sparse_reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None,
                      name=None):
    """The maximum of `sp_input`'s stored entries over `axis` (Python ints; None: all), as a
    dense tensor (TF1's tf.sparse_reduce_max / tf.sparse.reduce_max): the implicit zeros take no
    part (all-negative entries give a negative maximum), and a group without entries gives 0,
    as TF1's kernel. keepdims keeps the reduced dimensions as size 1."""
    sp = convert_to_sparse(sp_input)
    axis = reduction_axes if axis is None else axis
    keep = bool(keepdims or keep_dims)
    rank = _rank(sp, "sparse_reduce_max")
    axes = list(range(rank)) if axis is None else _axes_list(axis, rank, "sparse_reduce_max")
    kept = [d for d in range(rank) if d not in axes]
    group, count = _groups(sp, kept)
    top = segment_ops.unsorted_segment_max(sp.values, group, count)
    hits = _scatter(ops.ones_like(ops.cast(sp.values, dtypes.float32)), group, count)
    top = array_ops.where_v2(ops.greater(hits, 0.0), top, ops.zeros_like(top))
    dims = _dims(sp)
    out_dims = [1 if d in axes else dims[d] for d in range(rank)] if keep else \
        [dims[d] for d in kept]
    return ops.reshape(top, _shape_of(out_dims), name=name)


def sparse_softmax(sp_input, name=None):
    """The softmax of `sp_input` (rank >= 2) over its last dimension, over the stored entries
    only (the implicit zeros take no part), as TF1's tf.sparse_softmax / tf.sparse.softmax:
    a SparseTensor with sp_input's indices. Gradients flow to the values."""
    sp = convert_to_sparse(sp_input)
    rank = _rank(sp, "sparse_softmax")
    if rank < 2:
        raise ValueError("sparse_softmax: sp_input must have rank >= 2, not %d" % rank)
    if not sp.dtype.is_floating:
        raise TypeError("sparse_softmax takes float values, not %s" % sp.dtype.name)
    group, count = _groups(sp, list(range(rank - 1)))
    top = ops.stop_gradient(segment_ops.unsorted_segment_max(sp.values, group, count))
    e = ops.exp(ops.subtract(sp.values, array_ops.gather(top, group)))
    total = _scatter(e, group, count)
    values = ops.divide(e, array_ops.gather(total, group), name=name)
    return SparseTensor(sp.indices, values, sp.dense_shape, _static_dims=_static(sp))


def _elementwise(a, b, pick, what):
    """A SparseTensor of the union of a's and b's coordinates (row-major order), `pick` of the
    two values at each (0 for a coordinate one of them lacks)."""
    a, b = convert_to_sparse(a, "sp_a"), convert_to_sparse(b, "sp_b")
    if a.dtype != b.dtype:
        raise TypeError("%s: sp_a is %s but sp_b is %s" % (what, a.dtype.name, b.dtype.name))
    rank = _rank(a, what)
    if b.rank is not None and b.rank != rank:
        raise ValueError("%s: sp_a has rank %d but sp_b has rank %d" % (what, rank, b.rank))
    like = SparseTensor(a.indices, a.values, a.dense_shape, _static_dims=_static(a))
    indices = ops.concat([a.indices, b.indices], 0)
    only_a, _ = _coalesce(indices, ops.concat([a.values, ops.zeros_like(b.values)], 0), like)
    only_b, _ = _coalesce(indices, ops.concat([ops.zeros_like(a.values), b.values], 0), like)
    both = SparseTensor(only_a.indices, pick(only_a.values, only_b.values), a.dense_shape,
                        _static_dims=_static(a))
    return reorder(both)


def sparse_maximum(sp_a, sp_b, name=None):
    """The element-wise maximum of two SparseTensors of one shape (TF1's tf.sparse_maximum /
    tf.sparse.maximum): an entry at each coordinate either has, a missing one counting as 0."""
    return _elementwise(sp_a, sp_b, lambda x, y: ops.maximum(x, y, name=name), "sparse_maximum")


def sparse_minimum(sp_a, sp_b, name=None):
    """The element-wise minimum of two SparseTensors of one shape (TF1's tf.sparse_minimum /
    tf.sparse.minimum), a missing entry counting as 0."""
    return _elementwise(sp_a, sp_b, lambda x, y: ops.minimum(x, y, name=name), "sparse_minimum")


# ---- splitting, merging, indicators -----------------------------------------------------------


def sparse_split(keyword_required=None, sp_input=None, num_split=None, axis=None, name=None,
                 split_dim=None):
    """`sp_input` cut along `axis` into `num_split` SparseTensors (TF1's tf.sparse_split /
    tf.sparse.split, keyword arguments only): the first size % num_split pieces are one
    longer; each keeps its entries (indices shifted) in their order."""
    if keyword_required is not None:
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None:
        raise ValueError("sp_input is required")
    if num_split is None:
        raise ValueError("num_split is required")
    axis = split_dim if axis is None else axis
    if axis is None:
        raise ValueError("axis is required")
    sp = convert_to_sparse(sp_input)
    rank = _rank(sp, "sparse_split")
    axis = _axes_list(axis, rank, "sparse_split")[0]
    n = int(num_split)
    size = _dims(sp)[axis]
    statics = sp.shape.as_list()
    pieces = []
    for i in range(n):
        if isinstance(size, Tensor):
            base, extra = ops.floordiv(size, _i64(n)), ops.floormod(size, _i64(n))
            start = ops.add(ops.multiply(base, _i64(i)), ops.minimum(extra, _i64(i)))
            length = ops.add(base, ops.cast(ops.less(_i64(i), extra), dtypes.int64))
            static_len = None
        else:
            base, extra = divmod(size, n)
            start, length = i * base + min(i, extra), base + (1 if i < extra else 0)
            static_len = length
        axis_hot = [1 if d == axis else 0 for d in range(rank)]
        begin = ops.multiply(_as_i64_tensor(start), _i64(axis_hot))
        sizes = array_ops.where_v2(ops.cast(_i64(axis_hot), dtypes.bool_),
                                   _as_i64_tensor(length), sp.dense_shape)
        piece = sparse_slice(sp, begin, sizes)
        static = list(statics)
        static[axis] = static_len
        pieces.append(SparseTensor(piece.indices, piece.values, piece.dense_shape,
                                   _static_dims=static))
    return pieces


def sparse_to_indicator(sp_input, vocab_size, name=None):
    """A dense bool tensor: sp_input's shape with its last dimension replaced by `vocab_size`,
    true at [i..., id] for each stored id (an integer value in [0, vocab_size)) of row i...
    (TF1's tf.sparse_to_indicator / tf.sparse.to_indicator); an id out of range fails the
    step."""
    sp = convert_to_sparse(sp_input)
    if not sp.dtype.is_integer:
        raise TypeError("sparse_to_indicator takes integer ids, not %s" % sp.dtype.name)
    merged = sparse_merge(sp, None, vocab_size, already_sorted=True)
    hits = sparse_tensor_to_dense(merged, validate_indices=True)
    out = ops.greater(hits, 0.0, name=name)
    out.set_shape(merged.shape.as_list())
    return out


def sparse_merge(sp_ids, sp_values, vocab_size, name=None, already_sorted=False):
    """The SparseTensor whose last dimension is indexed by ids (TF1's tf.sparse_merge): entry
    k of `sp_ids`, at [i..., j] with id v, becomes [i..., v] with value sp_values.values[k]
    (sp_values: a SparseTensor of sp_ids' indices; None: 1.0). The dense shape is sp_ids'
    with the last size `vocab_size` (an int or an int64 scalar). Sorted into row-major order
    unless already_sorted."""
    ids = convert_to_sparse(sp_ids, "sp_ids")
    rank = _rank(ids, "sparse_merge")
    if not ids.dtype.is_integer:
        raise TypeError("sparse_merge: sp_ids must hold integer ids, not %s" % ids.dtype.name)
    if isinstance(vocab_size, (list, tuple)):
        raise NotImplementedError("sparse_merge: a list of vocab_size (several sp_ids) is not "
                                  "supported; give one sp_ids and one vocab_size")
    values = ops.ones_like(ops.cast(ids.values, dtypes.float32)) if sp_values is None else \
        convert_to_sparse(sp_values, "sp_values").values
    column = ops.expand_dims(ops.cast(ids.values, dtypes.int64), 1)
    indices = ops.concat([ids.indices[:, :rank - 1], column], 1) if rank > 1 else column
    vocab = ops.reshape(_as_i64_tensor(vocab_size), [1])
    dense_shape = ops.concat([ops.slice(ids.dense_shape, [0], [rank - 1]), vocab], 0)
    static = ids.shape.as_list()[:-1] + [None if isinstance(vocab_size, Tensor)
                                         else int(vocab_size)]
    merged = SparseTensor(indices, values, dense_shape, _static_dims=static)
    if already_sorted:
        return merged
    return reorder(merged, name=name)


def sparse_expand_dims(sp_input, axis=None, name=None):
    """`sp_input` with a dimension of size 1 inserted at `axis` (a Python int in
    [-rank - 1, rank]; None: -1, the end), as TF's tf.sparse.expand_dims."""
    sp = convert_to_sparse(sp_input)
    rank = _rank(sp, "sparse.expand_dims")
    axis = -1 if axis is None else int(axis)
    if not -rank - 1 <= axis <= rank:
        raise ValueError("sparse.expand_dims: axis %d is out of range for rank %d"
                         % (axis, rank))
    axis %= rank + 1
    zero = ops.zeros_like(sp.indices[:, :1])
    indices = ops.concat([sp.indices[:, :axis], zero, sp.indices[:, axis:]], 1)
    dense_shape = ops.concat([ops.slice(sp.dense_shape, [0], [axis]), _i64([1]),
                              ops.slice(sp.dense_shape, [axis], [rank - axis])], 0)
    static = sp.shape.as_list()
    return SparseTensor(ops.identity(indices, name=name), sp.values, dense_shape,
                        _static_dims=static[:axis] + [1] + static[axis:])


def sparse_eye(num_rows, num_columns=None, dtype=dtypes.float32, name=None):
    """The [num_rows, num_columns] identity matrix as a SparseTensor (Python ints), as TF's
    tf.sparse.eye."""
    rows = int(num_rows)
    cols = rows if num_columns is None else int(num_columns)
    diag = np.arange(min(rows, cols), dtype=np.int64)
    return SparseTensor(np.stack([diag, diag], 1).reshape(-1, 2),
                        ops.constant(np.ones(diag.size, dtypes.as_dtype(dtype).as_numpy_dtype),
                                     name=name), [rows, cols])


# ---- reductions to a SparseTensor, reset_shape, mask -------------------------------------------


def _reduce_to_sparse(sp_input, axis, keepdims, reduction_axes, keep_dims, name, what, combine):
    """`combine` (an unsorted segment reduction) of the stored entries of each group of
    coordinates outside `axis`, as a SparseTensor with one entry per group that has entries
    (row-major order), as TF1's SparseReduce{Max,Sum}Sparse."""
    sp = convert_to_sparse(sp_input)
    axis = reduction_axes if axis is None else axis
    keep = bool(keepdims or keep_dims)
    rank = _rank(sp, what)
    axes = list(range(rank)) if axis is None else _axes_list(axis, rank, what)
    kept = [d for d in range(rank) if d not in axes]
    dims = _dims(sp)
    group, _ = _groups(sp, kept)
    unique, idx = segment_ops.unique(group)
    values = combine(sp.values, idx, ops.shape(unique)[0])
    if kept:
        coords = _unravel(unique, [dims[d] for d in kept])
    else:
        coords = ops.expand_dims(unique, 1)[:, :0]
    if keep:
        zero = ops.zeros_like(ops.expand_dims(unique, 1))
        columns, k = [], 0
        for d in range(rank):
            if d in axes:
                columns.append(zero)
            else:
                columns.append(coords[:, k:k + 1])
                k += 1
        coords = ops.concat(columns, 1)
    out_dims = [1 if d in axes else dims[d] for d in range(rank)] if keep else \
        [dims[d] for d in kept]
    shape = array_ops.stack([_as_i64_tensor(d) for d in out_dims]) if out_dims else \
        ops.constant(np.zeros(0, np.int64))
    static = [None if isinstance(d, Tensor) else int(d) for d in out_dims]
    out = SparseTensor(coords, values, shape, _static_dims=static)
    if not kept:   # one group at most: nothing to order
        return SparseTensor(ops.identity(coords), ops.identity(values, name=name), shape,
                            _static_dims=static)
    return reorder(out, name=name)


def sparse_reduce_max_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None, name=None):
    """The maximum of `sp_input`'s stored entries over `axis` (None: all) as a SparseTensor
    with an entry for each group that has entries (TF1's tf.sparse_reduce_max_sparse /
    tf.sparse.reduce_max_sparse; the implicit zeros take no part)."""
    return _reduce_to_sparse(sp_input, axis, keepdims, reduction_axes, keep_dims, name,
                             "sparse_reduce_max_sparse", segment_ops.unsorted_segment_max)


def sparse_reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None, name=None):
    """The sum of `sp_input`'s entries over `axis` (None: all) as a SparseTensor with an entry
    for each group that has entries, a zero sum too (TF1's tf.sparse_reduce_sum_sparse /
    tf.sparse.reduce_sum_sparse). Gradients flow to the values."""
    return _reduce_to_sparse(sp_input, axis, keepdims, reduction_axes, keep_dims, name,
                             "sparse_reduce_sum_sparse", segment_ops.unsorted_segment_sum)


def sparse_reset_shape(sp_input, new_shape=None):
    """`sp_input` with dense_shape `new_shape` (TF1's tf.sparse.reset_shape /
    tf.sparse_reset_shape): of the same rank and no smaller in any dimension (checked when the
    step runs, InvalidArgumentError). Without new_shape, the tight bounding box of the stored
    entries: each index's largest value + 1 (0 for no entries)."""
    from shardflow.check_ops import _check
    sp = convert_to_sparse(sp_input)
    if new_shape is None:
        ones = ops.ones_like(sp.indices[:1])
        tight = ops.reduce_max(ops.concat([ops.add(sp.indices, ones),
                                           ops.subtract(ones, ones)], 0), axis=0)
        return SparseTensor(sp.indices, sp.values, tight,
                            _static_dims=None if sp.rank is None else [None] * sp.rank)
    static = None
    if not isinstance(new_shape, Tensor):
        static = [int(d) for d in np.asarray(new_shape).reshape(-1)]
    shape = _int64_vector(new_shape)
    if shape.shape.ndims is not None and shape.shape.ndims != 1:
        raise ValueError("sparse_reset_shape: new_shape must be a vector, got shape %s"
                         % (shape.shape,))
    n = shape.shape.as_list()[0]
    if sp.rank is not None and n is not None and n != sp.rank:
        raise ValueError("sparse_reset_shape: new_shape has %d dimensions but sp_input has "
                         "rank %d" % (n, sp.rank))
    if static is not None and sp.rank is not None:
        for d, (old, new) in enumerate(zip(sp.shape.as_list(), static)):
            if old is not None and new < old:
                raise ValueError("sparse_reset_shape: new_shape %s is smaller than the dense "
                                 "shape %s in dimension %d" % (static, sp.shape, d))
    check = _check(array_ops.reduce_all(ops.greater_equal(shape, sp.dense_shape)),
                   "sparse_reset_shape: new_shape must be >= sp_input.dense_shape in every "
                   "dimension", None, "sparse_reset_shape",
                   ["new_shape: ", shape, "dense_shape: ", sp.dense_shape])
    with control_dependencies([check]):
        shape = ops.identity(shape)
    return SparseTensor(sp.indices, sp.values, shape, _static_dims=static)


def _int64_vector(value):
    if isinstance(value, Tensor):
        return value if value.dtype == dtypes.int64 else ops.cast(value, dtypes.int64)
    return ops.constant(_i64(value).reshape(-1))


def sparse_mask(a, mask_indices, name=None):
    """The IndexedSlices `a` without its slices whose index is in `mask_indices` (TF1's
    tf.sparse.mask / tf.sparse_mask), in a's order."""
    from shardflow.core_extras import IndexedSlices
    from shardflow.patch_ops import setdiff1d
    if not isinstance(a, IndexedSlices):
        raise TypeError("sparse_mask: a must be an IndexedSlices, not %r" % (a,))
    indices, kept = setdiff1d(a.indices, mask_indices)
    values = array_ops.gather(a.values, kept, name=name)
    return IndexedSlices(values, indices, a.dense_shape)


# ---- serialization ----------------------------------------------------------------------------


def _serialize_parts(*arrays):
    """Each array as a serialized TensorProto (bytes)."""
    from shardflow.tensor_util import make_tensor_proto
    return [make_tensor_proto(np.asarray(a)).SerializeToString() for a in arrays]


def _parse_proto(data):
    from shardflow.graph_io import TensorProto
    from shardflow.tensor_util import make_ndarray
    proto = TensorProto()
    proto.ParseFromString(bytes(data))
    return make_ndarray(proto)


def _string_only(out_type, what):
    if dtypes.as_dtype(out_type) != dtypes.string:
        raise NotImplementedError("%s: out_type %s; shardflow has no variant tensors, use "
                                  "out_type=tf.string" % (what, dtypes.as_dtype(out_type).name))


def serialize_sparse(sp_input, name=None, out_type=dtypes.string):
    """`sp_input` as a string vector [3]: its indices, values and dense_shape, each a
    serialized TensorProto (TF1's tf.serialize_sparse / tf.io.serialize_sparse)."""
    from shardflow.script_ops import py_func
    _string_only(out_type, "serialize_sparse")
    sp = convert_to_sparse(sp_input)

    def run(indices, values, shape):
        return np.array(_serialize_parts(indices, values, shape), dtype=object)
    out = py_func(run, [sp.indices, sp.values, sp.dense_shape], dtypes.string,
                  name=name or "SerializeSparse")
    out.set_shape([3])
    return out


def serialize_many_sparse(sp_input, name=None, out_type=dtypes.string):
    """`sp_input` (rank >= 2) as a string matrix [N, 3], N its first size: row i holds the
    SparseTensor sp_input[i] (rank one less) as serialize_sparse does (TF1's
    tf.serialize_many_sparse); deserialize_many_sparse joins the rows back."""
    from shardflow.script_ops import py_func
    _string_only(out_type, "serialize_many_sparse")
    sp = convert_to_sparse(sp_input)
    if sp.rank is not None and sp.rank < 2:
        raise ValueError("serialize_many_sparse: sp_input must have rank >= 2, not %d"
                         % sp.rank)

    def run(indices, values, shape):
        indices, values = np.asarray(indices).reshape(-1, len(shape)), np.asarray(values)
        out = np.empty([int(shape[0]), 3], dtype=object)
        for row in range(int(shape[0])):
            mine = indices[:, 0] == row
            out[row] = _serialize_parts(indices[mine][:, 1:], values[mine],
                                        np.asarray(shape[1:], np.int64))
        return out
    out = py_func(run, [sp.indices, sp.values, sp.dense_shape], dtypes.string,
                  name=name or "SerializeManySparse")
    out.set_shape([sp.shape.as_list()[0] if sp.rank is not None else None, 3])
    return out


def deserialize_many_sparse(serialized_sparse, dtype, rank=None, name=None):
    """The SparseTensor of the [N, 3] SparseTensors `serialized_sparse` (serialize_many_sparse's
    or serialize_sparse's rows stacked), each row one index of the new first dimension; the
    other sizes are the largest over the rows (TF1's tf.deserialize_many_sparse). `rank`: the
    rank of the result (that of the serialized ones + 1)."""
    from shardflow.script_ops import py_func
    dtype = dtypes.as_dtype(dtype)
    serialized = convert_to_tensor(serialized_sparse)

    def run(data):
        data = np.asarray(data, dtype=object).reshape(-1, 3)
        indices, values, shapes = [], [], []
        for row in range(data.shape[0]):
            idx, val, shape = (_parse_proto(d) for d in data[row])
            if dtypes.as_dtype(val.dtype) != dtype:
                raise ValueError("deserialize_many_sparse: row %d holds %s values, not %s"
                                 % (row, dtypes.as_dtype(val.dtype).name, dtype.name))
            if rank is not None and len(shape) + 1 != int(rank):
                raise ValueError("deserialize_many_sparse: row %d has rank %d, not %d"
                                 % (row, len(shape), int(rank) - 1))
            if shapes and len(shape) != len(shapes[0]):
                raise ValueError("deserialize_many_sparse: row %d has rank %d, row 0 %d"
                                 % (row, len(shape), len(shapes[0])))
            idx = np.asarray(idx, np.int64).reshape(-1, len(shape))
            indices.append(np.concatenate([np.full([len(idx), 1], row, np.int64), idx], 1))
            values.append(val.reshape(-1))
            shapes.append(np.asarray(shape, np.int64))
        r = (int(rank) - 1) if rank is not None else (len(shapes[0]) if shapes else 0)
        dense = np.concatenate([[data.shape[0]], np.max(shapes, 0) if shapes
                                else np.zeros(r, np.int64)]).astype(np.int64)
        idx = np.concatenate(indices, 0) if indices else np.zeros([0, r + 1], np.int64)
        val = np.concatenate(values) if values else \
            np.zeros(0, dtype.as_numpy_dtype)
        return idx, val.astype(dtype.as_numpy_dtype), dense
    idx, val, shape = py_func(run, [serialized], [dtypes.int64, dtype, dtypes.int64],
                              name=name or "DeserializeManySparse")
    idx.set_shape([None, None if rank is None else int(rank)])
    val.set_shape([None])
    shape.set_shape([None if rank is None else int(rank)])
    return SparseTensor(idx, val, shape,
                        _static_dims=None if rank is None else [None] * int(rank))


# ---- crosses ------------------------------------------------------------------------------------


def _cross_columns(inputs, what):
    """The py_func inputs and a layout for `inputs` (SparseTensors and dense [batch, k]
    tensors of int64 or strings), the SparseTensors first, then the dense ones (as TF's
    SparseCross kernel takes them)."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("%s: inputs must be a non-empty list of SparseTensors and tensors"
                        % what)
    sparse_in, dense_in = [], []
    for x in inputs:
        if isinstance(x, (SparseTensor, SparseTensorValue)):
            sparse_in.append(convert_to_sparse(x, "inputs"))
        else:
            dense_in.append(convert_to_tensor(x))
    tensors, layout = [], []
    for sp in sparse_in:
        if sp.rank not in (None, 2):
            raise ValueError("%s: SparseTensor inputs must have rank 2, not %d" % (what, sp.rank))
        values = sp.values
        if values.dtype.is_integer and values.dtype != dtypes.int64:
            values = ops.cast(values, dtypes.int64)
        if values.dtype not in (dtypes.int64, dtypes.string):
            raise TypeError("%s: values must be int64 or string, not %s"
                            % (what, values.dtype.name))
        tensors += [sp.indices, values, sp.dense_shape]
        layout.append("sparse")
    for x in dense_in:
        if x.shape.ndims not in (None, 2):
            raise ValueError("%s: dense inputs must be [batch, k], got %s" % (what, x.shape))
        if x.dtype.is_integer and x.dtype != dtypes.int64:
            x = ops.cast(x, dtypes.int64)
        if x.dtype not in (dtypes.int64, dtypes.string):
            raise TypeError("%s: values must be int64 or string, not %s" % (what, x.dtype.name))
        tensors.append(x)
        layout.append("dense")
    return tensors, layout


def _cross_rows(arrays, layout):
    """Per batch row, the list of each column's features (bytes or ints), in order."""
    columns, k, batch = [], 0, None
    for kind in layout:
        if kind == "sparse":
            indices, values, shape = arrays[k:k + 3]
            k += 3
            n = int(shape[0])
            rows = [[] for _ in range(n)]
            for (r, _), v in zip(np.asarray(indices).reshape(-1, 2), np.asarray(values)):
                rows[int(r)].append(v)
        else:
            dense = np.asarray(arrays[k])
            k += 1
            n = dense.shape[0]
            rows = [list(dense[r]) for r in range(n)]
        if batch is not None and n != batch:
            raise ValueError("sparse cross: the inputs have batch sizes %d and %d" % (batch, n))
        batch = n
        columns.append(rows)
    return columns, batch


def _run_cross(inputs, what, feature, combine, out_dtype, name):
    import itertools
    from shardflow.script_ops import py_func
    tensors, layout = _cross_columns(inputs, what)

    def run(*arrays):
        columns, batch = _cross_rows(arrays, layout)
        indices, values, width = [], [], 0
        for r in range(batch):
            crosses = [combine([feature(v) for v in combo])
                       for combo in itertools.product(*[col[r] for col in columns])]
            indices += [[r, j] for j in range(len(crosses))]
            values += crosses
            width = max(width, len(crosses))
        return (np.array(indices, np.int64).reshape(-1, 2),
                np.array(values, dtype=object if out_dtype == dtypes.string else np.int64),
                np.array([batch, width], np.int64))
    idx, val, shape = py_func(run, tensors, [dtypes.int64, out_dtype, dtypes.int64],
                              name=name or "SparseCross")
    idx.set_shape([None, 2])
    val.set_shape([None])
    shape.set_shape([2])
    return SparseTensor(idx, val, shape)


def _as_text(v):
    return v if isinstance(v, bytes) else str(int(v)).encode()


def sparse_cross(inputs, name=None):
    """The crosses of `inputs` (SparseTensors and dense [batch, k] tensors, int64 or string)
    per batch row: every combination of one feature of each input, joined by "_X_" (integers
    in decimal), as TF1's tf.sparse.cross. A SparseTensor [batch, most crosses] of strings;
    the SparseTensor inputs come first in each cross, then the dense ones (as TF's kernel),
    the last input varying fastest; a row where an input has no feature has no crosses."""
    return _run_cross(inputs, "sparse_cross", _as_text, lambda parts: b"_X_".join(parts),
                      dtypes.string, name)


def sparse_cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """sparse_cross's crosses as int64 hashes (TF1's tf.sparse.cross_hashed, the hashing of
    tf.feature_column.crossed_column): FingerprintCat64 of hash_key (TF's 0xDECAFCAFFE by
    default) with each feature's hash in turn (a string's FarmHash Fingerprint64, an
    integer's own value), then modulo num_buckets when it is positive (else modulo 2^63 - 1)."""
    from shardflow.feature_column import (_DEFAULT_HASH_KEY, _MASK, _fingerprint_cat64,
                                          _string_hash64)
    key = _DEFAULT_HASH_KEY if hash_key is None else int(hash_key)
    modulo = int(num_buckets) if num_buckets and int(num_buckets) > 0 else (1 << 63) - 1

    def feature(v):
        return _string_hash64(v) if isinstance(v, bytes) else int(v) & _MASK

    def combine(hashes):
        h = key
        for v in hashes:
            h = _fingerprint_cat64(h, v)
        return h % modulo
    return _run_cross(inputs, "sparse_cross_hashed", feature, combine, dtypes.int64,
                      name or "SparseCrossHashed")


# ---- the tf.sparse namespace ------------------------------------------------------------------

# TF 1.15's tf.sparse names: those shardflow has, and the others (named in the error).
_SPARSE_NAMES = {
    "SparseTensor": SparseTensor, "add": sparse_add, "from_dense": from_dense,
    "concat": sparse_concat, "fill_empty_rows": sparse_fill_empty_rows,
    "slice": sparse_slice, "matmul": sparse_tensor_dense_matmul, "placeholder": sparse_placeholder,
    "reduce_sum": sparse_reduce_sum, "reorder": reorder, "reshape": sparse_reshape,
    "retain": sparse_retain, "sparse_dense_matmul": sparse_tensor_dense_matmul,
    "to_dense": sparse_tensor_to_dense, "transpose": sparse_transpose,
    "reduce_max": sparse_reduce_max, "softmax": sparse_softmax, "maximum": sparse_maximum,
    "minimum": sparse_minimum, "split": sparse_split, "to_indicator": sparse_to_indicator,
    "merge": sparse_merge, "expand_dims": sparse_expand_dims, "eye": sparse_eye,
    "segment_sum": segment_ops.sparse_segment_sum,
    "segment_mean": segment_ops.sparse_segment_mean,
    "segment_sqrt_n": segment_ops.sparse_segment_sqrt_n,
    "reduce_max_sparse": sparse_reduce_max_sparse, "reduce_sum_sparse": sparse_reduce_sum_sparse,
    "reset_shape": sparse_reset_shape, "mask": sparse_mask, "cross": sparse_cross,
    "cross_hashed": sparse_cross_hashed,
}
_SPARSE_MISSING = ("SparseConditionalAccumulator",)


def _sparse_namespace():
    module = types.ModuleType("shardflow.sparse", "TF1's tf.sparse: SparseTensor and the ops "
                              "on it (shardflow/sparse_ops.py).")
    module.__dict__.update(_SPARSE_NAMES)
    module.__all__ = sorted(_SPARSE_NAMES)

    def __getattr__(attr):  # noqa: N807 (PEP 562)
        if attr.startswith("__"):
            raise AttributeError(attr)
        known = " (TF1 has it; shardflow does not yet)" if attr in _SPARSE_MISSING else ""
        raise AttributeError("module 'shardflow.sparse' has no attribute '%s'%s; it has: %s"
                             % (attr, known, ", ".join(module.__all__)))
    module.__getattr__ = __getattr__
    sys.modules[module.__name__] = module
    return module


sparse = _sparse_namespace()

sparse_reorder = reorder  # TF1's top-level spelling

__all__ = ["SparseTensor", "SparseTensorValue", "deserialize_many_sparse", "from_dense",
           "reorder", "serialize_many_sparse", "serialize_sparse", "sparse", "sparse_add",
           "sparse_concat", "sparse_fill_empty_rows", "sparse_mask", "sparse_maximum",
           "sparse_merge", "sparse_minimum", "sparse_placeholder", "sparse_reduce_max",
           "sparse_reduce_max_sparse", "sparse_reduce_sum", "sparse_reduce_sum_sparse",
           "sparse_reset_shape",
           "sparse_reorder", "sparse_reshape", "sparse_retain", "sparse_slice",
           "sparse_softmax", "sparse_split", "sparse_tensor_dense_matmul",
           "sparse_tensor_to_dense", "sparse_to_dense", "sparse_to_indicator",
           "sparse_transpose"]
