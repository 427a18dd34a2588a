"""TF1's sparse tensors (shardflow/sparse_tensor.py, sparse_ops.py, sparse_embedding.py) against
NumPy: SparseTensor / SparseTensorValue / sparse_placeholder, feeding and fetching them in a
session, to_dense, sparse_to_dense, sparse_dense_matmul (values and gradients), reduce_sum,
add, reorder, from_dense, retain, reshape, transpose, the tf.sparse namespace, and
nn.embedding_lookup_sparse / safe_embedding_lookup_sparse (values and gradients)."""

import sys

import numpy as np
import pytest

import shardflow as tf
from shardflow import sparse_embedding, sparse_ops
from shardflow.sparse_tensor import SparseTensor, SparseTensorValue, sparse_placeholder

RNG = np.random.RandomState(0)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


def dense_of(indices, values, shape):
    out = np.zeros(shape, np.asarray(values).dtype)
    for idx, v in zip(np.asarray(indices), values):
        out[tuple(idx)] += v
    return out


# A 3x4 matrix with five entries, in row-major order.
IDX = np.array([[0, 1], [0, 3], [1, 0], [2, 2], [2, 3]], np.int64)
VAL = np.array([1.5, -2.0, 3.0, 0.5, 4.0], np.float32)
SHAPE = [3, 4]


def test_sparse_tensor_attributes():
    sp = SparseTensor(IDX.astype(np.int32), VAL, SHAPE)
    assert sp.indices.dtype == tf.int64 and sp.dense_shape.dtype == tf.int64
    assert sp.dtype == tf.float32
    assert sp.shape == [3, 4] and sp.get_shape().as_list() == [3, 4]
    assert sp.op is sp.values.op and sp.graph is tf.get_default_graph()
    ph = sparse_placeholder(tf.float32, shape=[None, 5], name="sp")
    assert ph.shape.as_list() == [None, 5] and ph.values.name == "sp/values:0"
    assert sparse_placeholder(tf.float32).shape.ndims is None
    value = SparseTensorValue(IDX, VAL, SHAPE)
    assert value.indices is IDX and value.dense_shape == SHAPE


def test_fetch_returns_sparse_tensor_value_in_nested_structures():
    sp = SparseTensor(IDX, VAL, SHAPE)
    dense = tf.constant([1.0])
    out = run({"sp": sp, "both": [sp, dense]})
    value = out["sp"]
    assert isinstance(value, SparseTensorValue)
    np.testing.assert_array_equal(value.indices, IDX)
    np.testing.assert_array_equal(value.values, VAL)
    np.testing.assert_array_equal(value.dense_shape, SHAPE)
    assert isinstance(out["both"][0], SparseTensorValue)
    np.testing.assert_array_equal(out["both"][1], [1.0])


def test_feed_sparse_placeholder_with_value_or_tuple():
    sp = sparse_placeholder(tf.float32)
    doubled = SparseTensor(sp.indices, sp.values * 2.0, sp.dense_shape)
    with tf.Session() as s:
        got = s.run(doubled, {sp: SparseTensorValue(IDX, VAL, SHAPE)})
        np.testing.assert_array_equal(got.values, VAL * 2)
        np.testing.assert_array_equal(got.dense_shape, SHAPE)
        got = s.run(sp, {sp: (IDX.tolist(), VAL.tolist(), SHAPE)})  # plain lists convert
        np.testing.assert_array_equal(got.indices, IDX)
        assert got.indices.dtype == np.int64 and got.values.dtype == np.float32
        assert isinstance(sp.eval({sp: (IDX, VAL, SHAPE)}, session=s), SparseTensorValue)
        with pytest.raises(TypeError, match="SparseTensorValue"):
            s.run(sp.values, {sp: VAL})


def test_feed_placeholder_with_known_shape():
    sp = sparse_placeholder(tf.float32, shape=SHAPE)
    dense = sparse_ops.sparse_tensor_to_dense(sp)
    assert dense.shape.as_list() == SHAPE
    np.testing.assert_array_equal(run(dense, {sp: (IDX, VAL, SHAPE)}), dense_of(IDX, VAL, SHAPE))


def test_to_dense_against_numpy():
    sp = sparse_placeholder(tf.float32, shape=[None, None])
    with tf.Session() as s:
        for shape in ([3, 4], [5, 6]):
            got = s.run(sparse_ops.sparse_tensor_to_dense(sp), {sp: (IDX, VAL, shape)})
            np.testing.assert_array_equal(got, dense_of(IDX, VAL, shape))
        got = s.run(sparse_ops.sparse.to_dense(sp, default_value=-1.0), {sp: (IDX, VAL, SHAPE)})
        want = dense_of(IDX, VAL, SHAPE)
        want[want == 0] = -1
        np.testing.assert_array_equal(got, want)
        empty = (np.zeros((0, 2), np.int64), np.zeros(0, np.float32), [2, 2])
        np.testing.assert_array_equal(s.run(sparse_ops.sparse_tensor_to_dense(sp), {sp: empty}),
                                      np.zeros((2, 2)))
        with pytest.raises(tf.errors.InvalidArgumentError, match="outside its dense_shape"):
            s.run(sparse_ops.sparse_tensor_to_dense(sp), {sp: ([[0, 4]], [1.0], SHAPE)})


def test_placeholder_of_unknown_rank():
    """tf.sparse_placeholder(dtype) with no shape: the rank is known only when fed."""
    sp = sparse_placeholder(tf.float32)
    b = tf.constant(RNG.normal(size=(4, 2)).astype(np.float32))
    outs = [sparse_ops.sparse_tensor_to_dense(sp), sparse_ops.sparse_tensor_dense_matmul(sp, b),
            sparse_ops.reorder(sp), sparse_ops.sparse_reshape(sp, [-1])]
    perm = [4, 1, 3, 0, 2]
    with tf.Session() as s:
        dense, product, ordered, flat = s.run(outs, {sp: (IDX[perm], VAL[perm], SHAPE)})
        three = s.run(outs[0], {sp: ([[1, 0, 2]], [5.0], [2, 2, 3])})
        b0 = s.run(b)
    np.testing.assert_array_equal(dense, dense_of(IDX, VAL, SHAPE))
    np.testing.assert_allclose(product, dense_of(IDX, VAL, SHAPE) @ b0, rtol=1e-6)
    np.testing.assert_array_equal(ordered.indices, IDX)
    np.testing.assert_array_equal(flat.indices[:, 0], (IDX[perm] @ [4, 1]))
    np.testing.assert_array_equal(three, dense_of([[1, 0, 2]], [5.0], [2, 2, 3]))


def test_to_dense_three_dims_and_ints():
    idx = np.array([[0, 1, 2], [1, 0, 0], [1, 2, 1]], np.int64)
    val = np.array([7, 8, 9], np.int32)
    got = run(sparse_ops.sparse_tensor_to_dense(SparseTensor(idx, val, [2, 3, 3])))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, dense_of(idx, val, [2, 3, 3]))


def test_to_dense_and_reduce_sum_gradients_reach_values():
    values = tf.placeholder(tf.float64, [None])
    sp = SparseTensor(IDX, values, SHAPE)
    c = RNG.normal(size=SHAPE)
    from_dense = tf.reduce_sum(sparse_ops.sparse_tensor_to_dense(sp, default_value=1.0) *
                               tf.constant(c))
    row_sums = tf.reduce_sum(sparse_ops.sparse_reduce_sum(sp, axis=1) * tf.constant(c[:, 0]))
    grads = tf.gradients(from_dense, [values]) + tf.gradients(row_sums, [values])
    got = run(grads, {values: VAL.astype(np.float64)})
    np.testing.assert_allclose(got[0], c[IDX[:, 0], IDX[:, 1]], rtol=1e-12)
    np.testing.assert_allclose(got[1], c[IDX[:, 0], 0], rtol=1e-12)


def test_sparse_to_dense():
    got = run(sparse_ops.sparse_to_dense(IDX, SHAPE, VAL, default_value=0.25))
    want = dense_of(IDX, VAL, SHAPE)
    want[want == 0] = 0.25
    np.testing.assert_array_equal(got, want)
    got = run(sparse_ops.sparse_to_dense([1, 3], [5], 2.0))  # a vector, one value for all
    np.testing.assert_array_equal(got, [0, 2, 0, 2, 0])


@pytest.mark.parametrize("adjoint_a,adjoint_b", [(False, False), (True, False), (False, True),
                                                 (True, True)])
def test_sparse_dense_matmul_against_numpy(adjoint_a, adjoint_b):
    a = dense_of(IDX, VAL.astype(np.float64), SHAPE)
    a_op = a.T if adjoint_a else a
    b = RNG.normal(size=(a_op.shape[1], 2))
    b_in = b.T if adjoint_b else b
    sp = sparse_placeholder(tf.float64, shape=[None, None])
    out = sparse_ops.sparse_tensor_dense_matmul(sp, tf.constant(b_in), adjoint_a=adjoint_a,
                                                adjoint_b=adjoint_b)
    got = run(out, {sp: (IDX, VAL.astype(np.float64), SHAPE)})
    np.testing.assert_allclose(got, a_op @ b, rtol=1e-12)


def test_sparse_dense_matmul_gradients():
    values = tf.placeholder(tf.float64, [None])
    b = tf.placeholder(tf.float64, [4, 2])
    sp = SparseTensor(IDX, values, SHAPE)
    out = sparse_ops.sparse.sparse_dense_matmul(sp, b)
    g = RNG.normal(size=(3, 2))
    loss = tf.reduce_sum(out * tf.constant(g))
    d_values, d_b = tf.gradients(loss, [values, b])
    b0 = RNG.normal(size=(4, 2))
    v0 = VAL.astype(np.float64)
    got_v, got_b = run([d_values, d_b], {values: v0, b: b0})
    # loss = sum_k v_k * <b[col_k], g[row_k]>: d/dv_k = <b[col_k], g[row_k]>; d/db = A^T g.
    np.testing.assert_allclose(got_v, np.sum(b0[IDX[:, 1]] * g[IDX[:, 0]], axis=1), rtol=1e-12)
    np.testing.assert_allclose(got_b, dense_of(IDX, v0, SHAPE).T @ g, rtol=1e-12)


def test_reduce_sum_against_numpy():
    idx = np.array([[0, 1, 2], [1, 0, 0], [1, 2, 1], [1, 2, 2]], np.int64)
    val = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    shape = [2, 3, 3]
    dense = dense_of(idx, val, shape)
    sp = sparse_placeholder(tf.float32, shape=[2, None, 3])
    cases = [(None, False), (None, True), (0, False), (1, True), (-1, False), ((0, 2), False),
             ([0, 1, 2], True)]
    outs = [sparse_ops.sparse_reduce_sum(sp, axis=a, keepdims=k) for a, k in cases]
    got = run(outs, {sp: (idx, val, shape)})
    for (axis, keep), value in zip(cases, got):
        want = np.sum(dense, axis=None if axis is None else tuple(np.atleast_1d(axis)),
                      keepdims=keep)
        np.testing.assert_allclose(value, want, err_msg="axis=%r keepdims=%r" % (axis, keep))
    assert outs[2].shape.as_list() == [None, 3]  # the sizes known statically stay


def test_sparse_add_dense_and_sparse():
    sp = SparseTensor(IDX, VAL, SHAPE)
    d = RNG.normal(size=SHAPE).astype(np.float32)
    want = dense_of(IDX, VAL, SHAPE) + d
    np.testing.assert_allclose(run(sparse_ops.sparse_add(sp, tf.constant(d))), want)
    np.testing.assert_allclose(run(sparse_ops.sparse.add(tf.constant(d), sp)), want)
    other = SparseTensor([[2, 3], [0, 0], [1, 0]], np.array([1.0, 5.0, -3.0], np.float32), SHAPE)
    total = sparse_ops.sparse_add(sp, other)
    value = run(total)
    want = np.array([[0, 0], [0, 1], [0, 3], [1, 0], [2, 2], [2, 3]])
    np.testing.assert_array_equal(value.indices, want)  # one per coordinate, row-major
    np.testing.assert_allclose(value.values, [5.0, 1.5, -2.0, 0.0, 0.5, 5.0])
    kept = run(sparse_ops.sparse_add(sp, other, thresh=0.1))
    assert [1, 0] not in kept.indices.tolist() and len(kept.values) == 5


def test_reorder_sorts_row_major_and_moves_values():
    perm = np.array([3, 0, 4, 2, 1])
    sp = sparse_placeholder(tf.float32, shape=SHAPE)
    ordered = sparse_ops.sparse.reorder(sp)
    value = run(ordered, {sp: (IDX[perm], VAL[perm], SHAPE)})
    np.testing.assert_array_equal(value.indices, IDX)
    np.testing.assert_array_equal(value.values, VAL)
    (grad,) = tf.gradients(tf.reduce_sum(ordered.values * tf.constant(np.arange(5.0,
                                                                                dtype=np.float32))),
                           [sp.values])
    got = run(grad, {sp: (IDX[perm], VAL[perm], SHAPE)})
    np.testing.assert_array_equal(got, np.arange(5.0)[np.argsort(np.argsort(perm))])


def test_from_dense_round_trip():
    d = np.array([[0, 1.5, 0], [2.0, 0, 0], [0, 0, -1.0]], np.float32)
    sp = sparse_ops.sparse.from_dense(tf.constant(d))
    assert sp.shape == [3, 3]
    value, back = run([sp, sparse_ops.sparse_tensor_to_dense(sp)])
    np.testing.assert_array_equal(value.indices, np.argwhere(d != 0))
    np.testing.assert_array_equal(value.values, d[d != 0])
    np.testing.assert_array_equal(back, d)


def test_retain_reshape_transpose():
    sp = SparseTensor(IDX, VAL, SHAPE)
    kept = run(sparse_ops.sparse_retain(sp, np.array([True, False, True, False, True])))
    np.testing.assert_array_equal(kept.indices, IDX[[0, 2, 4]])
    np.testing.assert_array_equal(kept.values, VAL[[0, 2, 4]])
    dense = dense_of(IDX, VAL, SHAPE)
    reshaped = sparse_ops.sparse.reshape(sp, [2, -1])
    assert reshaped.shape == [2, 6]
    np.testing.assert_array_equal(run(sparse_ops.sparse_tensor_to_dense(reshaped)),
                                  dense.reshape(2, 6))
    ph = sparse_placeholder(tf.float32, shape=[None, None])
    dyn = sparse_ops.sparse_reshape(ph, [-1, 2])
    got = run([sparse_ops.sparse_tensor_to_dense(dyn), dyn.dense_shape], {ph: (IDX, VAL, SHAPE)})
    np.testing.assert_array_equal(got[0], dense.reshape(-1, 2))
    np.testing.assert_array_equal(got[1], [6, 2])
    transposed = run(sparse_ops.sparse.transpose(sp))
    np.testing.assert_array_equal(transposed.dense_shape, [4, 3])
    np.testing.assert_array_equal(dense_of(transposed.indices, transposed.values, [4, 3]),
                                  dense.T)
    assert transposed.indices.tolist() == sorted(transposed.indices.tolist())


def test_sparse_namespace_module():
    assert sys.modules["shardflow.sparse"] is sparse_ops.sparse
    for name in ("to_dense", "reduce_sum", "sparse_dense_matmul", "from_dense", "reorder",
                 "add", "placeholder", "SparseTensor"):
        assert hasattr(sparse_ops.sparse, name), name
    if hasattr(tf, "SparseTensor"):  # once __init__.py imports the names
        assert tf.sparse.SparseTensor is tf.SparseTensor
    with pytest.raises(AttributeError, match="TF1 has it; shardflow does not yet"):
        sparse_ops.sparse.SparseConditionalAccumulator  # noqa: B018


# ---- embedding_lookup_sparse ------------------------------------------------------------------

# Rows: 0 -> ids {1, 3} (weights 2, 0.5); 1 -> {} (empty); 2 -> {0, 0, 4} (1, 1, 3).
EMB_IDX = np.array([[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]], np.int64)
EMB_IDS = np.array([1, 3, 0, 0, 4], np.int64)
EMB_W = np.array([2.0, 0.5, 1.0, 1.0, 3.0])
EMB_SHAPE = [3, 3]


def numpy_lookup(table, weights, combiner):
    out = np.zeros((3, table.shape[1]))
    for row in range(3):
        k = EMB_IDX[:, 0] == row
        if not k.any():
            continue
        w = weights[k]
        total = (table[EMB_IDS[k]] * w[:, None]).sum(0)
        out[row] = {"sum": total, "mean": total / w.sum(),
                    "sqrtn": total / np.sqrt((w ** 2).sum())}[combiner]
    return out


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_lookup_sparse_values_and_gradient(combiner, weighted):
    table0 = RNG.normal(size=(5, 2))
    table = tf.placeholder(tf.float64, [5, 2])
    sp_ids = SparseTensor(EMB_IDX, EMB_IDS, EMB_SHAPE)
    sp_w = SparseTensor(EMB_IDX, EMB_W, EMB_SHAPE) if weighted else None
    out = sparse_embedding.embedding_lookup_sparse(table, sp_ids, sp_w, combiner=combiner)
    g = RNG.normal(size=(3, 2))
    (grad,) = tf.gradients(tf.reduce_sum(out * tf.constant(g)), [table])
    got, got_grad = run([out, grad], {table: table0})
    weights = EMB_W if weighted else np.ones(5)
    np.testing.assert_allclose(got, numpy_lookup(table0, weights, combiner), rtol=1e-12)
    # The result is linear in the table: its gradient is the lookup's weights per id.
    want_grad = np.zeros_like(table0)
    for k in range(5):
        row = EMB_IDX[k, 0]
        w = weights[EMB_IDX[:, 0] == row]
        scale = {"sum": 1.0, "mean": 1.0 / w.sum(), "sqrtn": 1.0 / np.sqrt((w ** 2).sum())}
        want_grad[EMB_IDS[k]] += weights[k] * scale[combiner] * g[row]
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-12)


def test_embedding_lookup_sparse_fed_ids():
    table0 = RNG.normal(size=(5, 3)).astype(np.float32)
    sp_ids = sparse_placeholder(tf.int64)
    out = sparse_embedding.embedding_lookup_sparse(tf.constant(table0), sp_ids, None,
                                                   combiner="mean")
    got = run(out, {sp_ids: (EMB_IDX, EMB_IDS, EMB_SHAPE)})
    np.testing.assert_allclose(got, numpy_lookup(table0, np.ones(5), "mean"), rtol=1e-6)


def test_embedding_lookup_sparse_variable_max_norm_and_bad_combiner():
    table0 = np.array([[3.0, 4.0], [0.3, 0.4], [1.0, 0.0], [0.0, 2.0], [6.0, 8.0]], np.float32)
    table = tf.Variable(table0)
    sp_ids = SparseTensor(EMB_IDX, EMB_IDS, EMB_SHAPE)
    out = sparse_embedding.embedding_lookup_sparse(table, sp_ids, None, combiner="sum",
                                                   max_norm=1.0)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got = s.run(out)
    clipped = table0 / np.maximum(np.linalg.norm(table0, axis=1, keepdims=True), 1.0)
    np.testing.assert_allclose(got, numpy_lookup(clipped, np.ones(5), "sum"), rtol=1e-6)
    with pytest.raises(ValueError, match="combiner"):
        sparse_embedding.embedding_lookup_sparse(table, sp_ids, None, combiner="max")


def test_safe_embedding_lookup_sparse():
    table0 = RNG.normal(size=(5, 2))
    ids = EMB_IDS.copy()
    ids[1] = -1  # dropped
    weights = EMB_W.copy()
    weights[4] = 0.0  # dropped
    sp_ids = SparseTensor(EMB_IDX, ids, EMB_SHAPE)
    sp_w = SparseTensor(EMB_IDX, weights, EMB_SHAPE)
    out = sparse_embedding.safe_embedding_lookup_sparse(tf.constant(table0), sp_ids, sp_w,
                                                        combiner="mean", default_id=4)
    got = run(out)
    np.testing.assert_allclose(got[0], table0[1])          # only id 1 (weight 2) is left
    np.testing.assert_allclose(got[1], table0[4])          # empty row: default_id
    np.testing.assert_allclose(got[2], table0[0])          # ids 0, 0 with weights 1, 1
    no_default = run(sparse_embedding.safe_embedding_lookup_sparse(tf.constant(table0), sp_ids))
    np.testing.assert_allclose(no_default[1], [0.0, 0.0])
    # Rank 3 ids [2, 3, ids]: the result is [2, 3, dim].
    idx3 = np.array([[0, 0, 0], [0, 2, 0], [0, 2, 1], [1, 1, 0]], np.int64)
    sp3 = SparseTensor(idx3, np.array([1, 2, 3, 4], np.int64), [2, 3, 2])
    got3 = run(sparse_embedding.safe_embedding_lookup_sparse(tf.constant(table0), sp3,
                                                             combiner="sum"))
    want3 = np.zeros((2, 3, 2))
    want3[0, 0] = table0[1]
    want3[0, 2] = table0[2] + table0[3]
    want3[1, 1] = table0[4]
    np.testing.assert_allclose(got3, want3, rtol=1e-12)
