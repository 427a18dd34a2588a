"""TF1's tf.nn.embedding_lookup_sparse and tf.nn.safe_embedding_lookup_sparse: the embeddings
of each row's ids in a SparseTensor, weighted and combined per row.

Example::

    # Two examples with the ids {1, 3} and {0}: sp_ids is [2, any] with entries (0, 0)=1,
    # (0, 1)=3, (1, 0)=0.
    sp_ids = sf.SparseTensor([[0, 0], [0, 1], [1, 0]], np.array([1, 3, 0], np.int64), [2, 2])
    emb = sf.nn.embedding_lookup_sparse(table, sp_ids, None, combiner="mean")   # [2, dim]

Built as embedding_lookup(params, ids) and a segment sum by each entry's row
(shardflow/segment_ops.py), so the gradient reaches params as the gather's (a dense tensor of
params' shape). One
difference from TF1: the result has one row per row of sp_ids' dense shape (TF1's
embedding_lookup_sparse stops at the last row that has an id); rows without ids are zeros.
"""

import numpy as np

from shardflow import array_ops, dtypes, ops, segment_ops
from shardflow.framework import convert_to_tensor
from shardflow.sparse_ops import _dims, _rank2, sparse_reshape, sparse_retain
from shardflow.sparse_tensor import convert_to_sparse

_COMBINERS = ("sum", "mean", "sqrtn")


def _table(params, what):
    """(params, first): `params` as embedding_lookup takes it (one table, or the list of shards
    of a table split along its rows: a list or a PartitionedVariable), and its first shard as
    a tensor (for the rank and dtype, which every shard shares)."""
    from shardflow.partitioned_variables import PartitionedVariable
    if isinstance(params, PartitionedVariable):
        params = list(params)
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("%s: params is an empty list" % what)
        params = list(params) if len(params) > 1 else params[0]
    first = convert_to_tensor(params[0] if isinstance(params, list) else params)
    if first.shape.ndims is None or first.shape.ndims < 1:
        raise ValueError("%s needs params of known rank >= 1, got %r" % (what, first))
    return params, first


def _rows_of(sp, what):
    """Each entry's row (int32 [N]) and the number of rows of a [batch, ids] SparseTensor (of
    rank 2, or of a rank known only when fed)."""
    return ops.cast(sp.indices[:, 0], dtypes.int32), _rank2(sp, what)[0]


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None,
                            combiner="mean", max_norm=None):
    """Row r of the result combines the embeddings params[id] of the ids in row r of `sp_ids`
    (a rank-2 SparseTensor of int ids), each scaled by its weight in `sp_weights` (a
    SparseTensor with the same indices, or None for weight 1):
    "sum": sum of w * e; "mean": that divided by the sum of the weights; "sqrtn": divided by
    the square root of the sum of the squared weights. A row without ids gives zeros.
    max_norm clips each embedding to that L2 norm first. The result is
    [sp_ids' rows] + params.shape[1:]; gradients flow to params (and the weights).
    `params` may be a table sharded along its rows (a list of tensors or variables, or a
    PartitionedVariable), laid out by `partition_strategy` as in sf.nn.embedding_lookup."""
    if combiner is None:
        combiner = "mean"
    if combiner not in _COMBINERS:
        raise ValueError("embedding_lookup_sparse: combiner must be one of %s, not %r"
                         % (", ".join(_COMBINERS), combiner))
    params, first = _table(params, "embedding_lookup_sparse")
    sp_ids = convert_to_sparse(sp_ids, "sp_ids")
    rows, num_rows = _rows_of(sp_ids, "embedding_lookup_sparse")
    embeddings = array_ops.embedding_lookup(params, sp_ids.values, partition_strategy,
                                            max_norm=max_norm)
    rank = first.shape.ndims
    if sp_weights is None:
        reduce = {"sum": segment_ops.unsorted_segment_sum,
                  "mean": segment_ops.unsorted_segment_mean,
                  "sqrtn": segment_ops.unsorted_segment_sqrt_n}[combiner]
        return reduce(embeddings, rows, num_rows, name=name)
    weights = convert_to_sparse(sp_weights, "sp_weights").values
    if weights.dtype != first.dtype:
        raise TypeError("embedding_lookup_sparse: sp_weights are %s but params are %s"
                        % (weights.dtype.name, first.dtype.name))
    column = [-1] + [1] * (rank - 1)
    total = segment_ops.unsorted_segment_sum(
        ops.multiply(embeddings, ops.reshape(weights, column)), rows, num_rows)
    if combiner == "sum":
        return ops.identity(total, name=name)
    if combiner == "mean":
        scale = segment_ops.unsorted_segment_sum(weights, rows, num_rows)
    else:
        scale = ops.sqrt(segment_ops.unsorted_segment_sum(ops.square(weights), rows, num_rows))
    # A row without ids has total 0 and scale 0: divide by 1 there (0, not NaN).
    scale = array_ops.where(ops.equal(scale, ops.zeros_like(scale)), ops.ones_like(scale),
                            scale)
    return ops.divide(total, ops.reshape(scale, column), name=name)


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner="mean", default_id=None, name=None,
                                 partition_strategy="div", max_norm=None):
    """embedding_lookup_sparse that first drops ids < 0 (and weights <= 0), and gives a row
    without ids params[default_id] (zeros when default_id is None), as TF1's
    tf.nn.safe_embedding_lookup_sparse. sparse_ids of rank > 2 ([d0, ..., dk, ids]) give
    [d0, ..., dk] + params.shape[1:]."""
    params, first = _table(embedding_weights, "safe_embedding_lookup_sparse")
    sp_ids = convert_to_sparse(sparse_ids, "sparse_ids")
    sp_weights = None if sparse_weights is None else convert_to_sparse(sparse_weights,
                                                                        "sparse_weights")
    rank = sp_ids.rank
    if rank is not None and rank < 2:
        raise ValueError("safe_embedding_lookup_sparse: sparse_ids needs a rank >= 2, not %d"
                         % rank)
    batch_shape = None
    if rank is not None and rank > 2:  # an unknown rank is taken to be 2
        batch_shape = ops.slice(sp_ids.dense_shape, [0], [rank - 1])
        dims = _dims(sp_ids)
        flat = [-1, dims[-1]]
        sp_ids = sparse_reshape(sp_ids, flat)
        if sp_weights is not None:
            sp_weights = sparse_reshape(sp_weights, flat)
    keep = ops.greater_equal(sp_ids.values, ops.zeros_like(sp_ids.values))
    if sp_weights is not None:
        keep = ops.logical_and(keep, ops.greater(sp_weights.values,
                                                 ops.zeros_like(sp_weights.values)))
        sp_weights = sparse_retain(sp_weights, keep)
    sp_ids = sparse_retain(sp_ids, keep)
    out = embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy,
                                  combiner=combiner, max_norm=max_norm)
    if default_id is not None:
        rows, num_rows = _rows_of(sp_ids, "safe_embedding_lookup_sparse")
        counts = segment_ops.unsorted_segment_sum(ops.ones_like(ops.cast(rows, dtypes.float32)),
                                                  rows, num_rows)
        empty = ops.reshape(ops.equal(counts, 0.0), [-1] + [1] * (first.shape.ndims - 1))
        fallback = array_ops.embedding_lookup(params, np.asarray(int(default_id), np.int64),
                                              partition_strategy, max_norm=max_norm)
        out = array_ops.where_v2(empty, fallback, out)
    if batch_shape is not None:
        shape = ops.concat([ops.cast(batch_shape, dtypes.int32),
                            ops.slice(ops.shape(first), [1], [-1])], 0)
        out = ops.reshape(out, shape)
    return ops.identity(out, name=name)


__all__ = ["embedding_lookup_sparse", "safe_embedding_lookup_sparse"]
