"""TF1's matrix and layout helpers composed from the engine's ops: tf.matrix_diag,
tf.matrix_diag_part (tf.diag_part for a matrix), tf.matrix_set_diag, tf.matrix_band_part,
tf.diag, tf.trace, tf.cross, tf.space_to_depth, tf.depth_to_space, and tf.random_shuffle.

Example::

    band = sf.matrix_band_part(scores, -1, 0)          # lower triangle (a causal mask)
    blocks = sf.space_to_depth(images, 2)               # [N, H, W, C] -> [N, H/2, W/2, 4C]

The matrix helpers need the last two dimensions known when the graph is built (their masks
are constants), but for matrix_band_part, which computes its band in the graph when the size
or the band is known only when the step runs; gradients flow through all but random_shuffle.
"""

import numpy as np

from shardflow import ops
from shardflow.framework import Tensor, convert_to_tensor


def _last_two(x, what):
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or len(dims) < 2 or dims[-1] is None or dims[-2] is None:
        raise ValueError("%s needs a tensor of rank >= 2 with its last two dimensions known, "
                         "got %s" % (what, x.shape))
    return dims[-2], dims[-1]


def matrix_band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """Each innermost matrix with the entries outside the band zeroed: kept where
    (num_lower < 0 or i - j <= num_lower) and (num_upper < 0 or j - i <= num_upper)."""
    x = convert_to_tensor(input)
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or len(dims) < 2:
        raise ValueError("matrix_band_part needs a tensor of rank >= 2, got %s" % x.shape)
    if dims[-1] is None or dims[-2] is None or isinstance(num_lower, Tensor) or \
            isinstance(num_upper, Tensor):
        return _band_part_at_run_time(x, num_lower, num_upper, name)
    m, n = dims[-2], dims[-1]
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    lo, hi = int(num_lower), int(num_upper)
    if lo > m or hi > n:   # TF's kernel refuses them
        raise ValueError("matrix_band_part: num_lower must be negative or less or equal to "
                         "number of rows (%d) got: %d; num_upper likewise for the columns "
                         "(%d) got: %d" % (m, lo, n, hi))
    keep = ((lo < 0) | (i - j <= lo)) & ((hi < 0) | (j - i <= hi))
    return _masked(x, keep, name)


def _masked(x, keep, name=None):
    """x where the constant boolean [M, N] mask `keep` holds, zero elsewhere: a Select, not a
    multiply, so an inf or NaN outside the mask gives 0 as TF's kernels do (inf * 0 is NaN)."""
    from shardflow.array_ops import where_v2
    return where_v2(ops.constant(keep), x, ops.zeros_like(x), name=name)


def _band_part_at_run_time(x, num_lower, num_upper, name):
    """matrix_band_part when the matrices' size (a Transformer's causal mask over tf.shape(x)[1]
    steps) or the band is known only when the step runs: the band is computed in the graph and
    the entries outside it set to zero (not multiplied: inf outside the band gives 0, as TF)."""
    from shardflow import array_ops, dtypes
    shape = ops.shape(x)
    m, n = shape[-2], shape[-1]
    i = ops.expand_dims(array_ops.range(m), 1)
    j = ops.expand_dims(array_ops.range(n), 0)
    lo = ops.cast(num_lower, dtypes.int32)
    hi = ops.cast(num_upper, dtypes.int32)
    keep = ops.logical_and(ops.logical_or(ops.less(lo, 0), ops.less_equal(i - j, lo)),
                           ops.logical_or(ops.less(hi, 0), ops.less_equal(j - i, hi)))
    return array_ops.where_v2(keep, x, ops.zeros_like(x), name=name)


def matrix_diag_part(input, name=None):  # noqa: A002
    """The main diagonal of each innermost matrix: [..., min(M, N)]."""
    x = convert_to_tensor(input)
    m, n = _last_two(x, "matrix_diag_part")
    k = min(m, n)
    out = ops.reduce_sum(_masked(x, np.eye(m, n, dtype=bool)), axis=-1)
    if k < m:
        from shardflow.array_ops import getitem
        out = getitem(out, (Ellipsis, slice(0, k)))
    return ops.identity(out, name=name)


def matrix_diag(diagonal, name=None):
    """Matrices with `diagonal`'s last dimension on their main diagonal: [..., N] -> [..., N, N]."""
    d = convert_to_tensor(diagonal)
    dims = d.shape.as_list() if d.shape.ndims is not None else None
    if not dims or dims[-1] is None:
        raise ValueError("matrix_diag needs the size of the last dimension, got %s" % d.shape)
    # [..., 1, N] broadcast over the rows: row i, column j holds diagonal[j], kept where i == j.
    return _masked(ops.expand_dims(d, -2), np.eye(dims[-1], dtype=bool), name)


def diag(diagonal, name=None):
    """A matrix with the vector `diagonal` on its diagonal (tf.diag, rank 1 input)."""
    d = convert_to_tensor(diagonal)
    if d.shape.ndims != 1:
        raise ValueError("diag takes a vector here (rank 1), got %s" % d.shape)
    return matrix_diag(d, name=name)


def diag_part(input, name=None):  # noqa: A002
    """The diagonal of a square matrix (tf.diag_part, rank 2 input)."""
    x = convert_to_tensor(input)
    if x.shape.ndims != 2:
        raise ValueError("diag_part takes a matrix here (rank 2), got %s" % x.shape)
    return matrix_diag_part(x, name=name)


def trace(x, name=None):
    """The sum of each innermost matrix's diagonal."""
    return ops.reduce_sum(matrix_diag_part(x), axis=-1, name=name)


def matrix_set_diag(input, diagonal, name=None):  # noqa: A002
    """`input` [..., M, N] with the main diagonal of each innermost matrix replaced by
    `diagonal` [..., min(M, N)], as TF1's tf.matrix_set_diag (tf.linalg.set_diag). A Select
    between the two under a constant eye mask: the off-diagonal values are kept exactly and
    gradients flow to both."""
    from shardflow.array_ops import _literal_like_other, where_v2
    x, d = _literal_like_other(input, diagonal)
    m, n = _last_two(x, "matrix_set_diag")
    k = min(m, n)
    if d.dtype != x.dtype:
        raise TypeError("matrix_set_diag: diagonal is %s but input is %s"
                        % (d.dtype.name, x.dtype.name))
    if d.shape.ndims is not None and (d.shape.ndims != x.shape.ndims - 1 or
                                      d.shape.as_list()[-1] not in (None, k)):
        raise ValueError("matrix_set_diag: diagonal must be [..., %d] for input %s, got %s"
                         % (k, x.shape, d.shape))
    if n > k:  # a wide matrix: the diagonal padded with zeros to N columns (never selected)
        from shardflow.array_ops import pad
        d = pad(d, [[0, 0]] * (d.shape.ndims - 1) + [[0, n - k]])
    on_diagonal = np.eye(m, n, dtype=bool)
    # [..., 1, N] broadcast over the rows: row i, column j holds diagonal[j], kept where i == j.
    return where_v2(ops.constant(on_diagonal), ops.expand_dims(d, -2), x, name=name)


def cross(a, b, name=None):
    """The cross product of the 3-vectors on the last axis of `a` and `b` (batched, shapes
    [..., 3] that broadcast), as TF1's tf.cross / tf.linalg.cross."""
    from shardflow.array_ops import _literal_like_other, getitem, stack
    a, b = _literal_like_other(a, b)
    if a.dtype != b.dtype:
        raise TypeError("cross: a (%s) and b (%s) must have one dtype"
                        % (a.dtype.name, b.dtype.name))
    for v, what in ((a, "a"), (b, "b")):
        if v.shape.ndims is None or v.shape.ndims < 1 or v.shape.as_list()[-1] not in (None, 3):
            raise ValueError("cross: %s must be [..., 3], got %s" % (what, v.shape))
    a0, a1, a2 = [getitem(a, (Ellipsis, i)) for i in range(3)]
    b0, b1, b2 = [getitem(b, (Ellipsis, i)) for i in range(3)]
    return stack([ops.subtract(ops.multiply(a1, b2), ops.multiply(a2, b1)),
                  ops.subtract(ops.multiply(a2, b0), ops.multiply(a0, b2)),
                  ops.subtract(ops.multiply(a0, b1), ops.multiply(a1, b0))], axis=-1,
                 name=name)


def _nhwc(x, what):
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or len(dims) != 4 or any(d is None for d in dims[1:]):
        raise ValueError("%s takes NHWC images with known height, width and channels, got %s"
                         % (what, x.shape))
    return dims[1:]


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Blocks of block_size x block_size pixels moved into channels: [N, H, W, C] ->
    [N, H/b, W/b, b*b*C], as TF1's tf.space_to_depth."""
    if data_format != "NHWC":
        raise ValueError("space_to_depth: only NHWC")
    x = convert_to_tensor(input)
    h, w, c = _nhwc(x, "space_to_depth")
    b = int(block_size)
    if b < 2 or h % b or w % b:
        raise ValueError("space_to_depth: block_size %d must be >= 2 and divide height %d and "
                         "width %d" % (b, h, w))
    y = ops.reshape(x, [-1, h // b, b, w // b, b, c])
    y = ops.transpose(y, [0, 1, 3, 2, 4, 5])
    return ops.reshape(y, [-1, h // b, w // b, b * b * c], name=name)


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """The inverse of space_to_depth: [N, H, W, C] -> [N, H*b, W*b, C/(b*b)]."""
    if data_format != "NHWC":
        raise ValueError("depth_to_space: only NHWC")
    x = convert_to_tensor(input)
    h, w, c = _nhwc(x, "depth_to_space")
    b = int(block_size)
    if b < 2 or c % (b * b):
        raise ValueError("depth_to_space: block_size %d must be >= 2 with block_size^2 dividing "
                         "the %d channels" % (b, c))
    y = ops.reshape(x, [-1, h, w, b, b, c // (b * b)])
    y = ops.transpose(y, [0, 1, 3, 2, 4, 5])
    return ops.reshape(y, [-1, h * b, w * b, c // (b * b)], name=name)


def random_shuffle(value, seed=None, name=None):
    """`value` with its rows (dimension 0) in a random order, a new one each run. As TF1's: a
    seed (the op's, or the graph's from set_random_seed) gives the same sequence of orders in
    every session. The order is that of float64 uniform keys drawn by the engine's seeded
    RandomUniform (per session, as TF's kernels), sorted by top_k."""
    from shardflow import array_ops, dtypes, nn
    x = convert_to_tensor(value)
    if x.shape.ndims == 0:
        return ops.identity(x, name=name)
    rows = x.shape.as_list()[0] if x.shape.ndims is not None else None
    count = rows if rows is not None else ops.shape(x)[0]
    keys = ops.random_uniform(ops.reshape(count, [1]) if rows is None else [rows],
                              dtype=dtypes.float64, seed=seed)
    order = nn.top_k(keys, k=count, sorted=True).indices
    return array_ops.gather(x, order, name=name or "RandomShuffle")


__all__ = ["cross", "depth_to_space", "diag", "diag_part", "matrix_band_part", "matrix_diag",
           "matrix_diag_part", "matrix_set_diag", "random_shuffle", "space_to_depth", "trace"]
