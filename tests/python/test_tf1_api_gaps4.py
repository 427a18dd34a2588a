"""TF 1.15 API gaps found by other helpers, checked by hand or against NumPy: the sparse names
at the top level, tf.shape / size / rank of a SparseTensor, sort of an empty vector,
tf.linalg.cholesky_solve, padding of run-time sizes, assert_rank's data / summarize and
tf.debugging.assert_shapes, block_shape of space_to_batch, string_split's sep / result_type,
string_to_number(input=), as_dtype(type_value=) and tf.dtypes.bool, make_tensor_proto's
verify_shape / allow_broadcast."""

import math

import numpy as np
import pytest

import shardflow as tf


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# ---- top-level names --------------------------------------------------------------------------

def test_sparse_names_at_the_top_level():
    for name in ("sparse_softmax", "sparse_maximum", "sparse_minimum", "sparse_split",
                 "sparse_reduce_max", "sparse_to_indicator", "sparse_merge"):
        assert getattr(tf, name) is getattr(tf.sparse, name.replace("sparse_", "", 1))
    sp = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 3.0, 2.0], [2, 3])
    soft, top = run([tf.sparse_tensor_to_dense(tf.sparse_softmax(sp)),
                     tf.sparse_reduce_max(sp, axis=1)])
    e = np.exp([1.0, 3.0])
    np.testing.assert_allclose(soft, [[e[0] / e.sum(), 0, e[1] / e.sum()], [0, 1, 0]], rtol=1e-6)
    np.testing.assert_allclose(top, [3.0, 2.0])


def test_linalg_cholesky_solve():
    a = np.array([[4.0, 2.0], [2.0, 3.0]])
    rhs = np.array([[1.0], [2.0]])
    x = run(tf.linalg.cholesky_solve(tf.cholesky(tf.constant(a)), tf.constant(rhs)))
    np.testing.assert_allclose(x, np.linalg.solve(a, rhs), rtol=1e-10)


# ---- shape, size and rank of a SparseTensor ---------------------------------------------------

def test_shape_size_rank_of_a_sparse_tensor():
    sp = tf.SparseTensor([[0, 1], [2, 3]], [1.0, 2.0], [3, 5])
    shape, shape64, size, rank = run([tf.shape(sp), tf.shape(sp, out_type=tf.int64),
                                      tf.size(sp), tf.rank(sp)])
    assert shape.dtype == np.int32 and shape.tolist() == [3, 5]
    assert shape64.dtype == np.int64 and shape64.tolist() == [3, 5]
    assert size == 15 and rank == 2
    ph = tf.sparse_placeholder(tf.float32)
    value = tf.SparseTensorValue([[0, 1, 1]], [1.0], [2, 3, 4])
    shape, size, rank = run([tf.shape(ph), tf.size(ph), tf.rank(ph)], {ph: value})
    assert shape.tolist() == [2, 3, 4] and size == 24 and rank == 3
    assert run(tf.shape(tf.zeros([2, 3]))).tolist() == [2, 3]


# ---- sort ---------------------------------------------------------------------------------------

def test_sort_and_argsort_of_empty_tensors():
    x = tf.placeholder(tf.float32, [None])
    m = tf.placeholder(tf.float32, [None, None])
    empty = np.zeros(0, np.float32)
    s, a = run([tf.sort(tf.constant(empty)), tf.argsort(tf.constant(empty))])
    assert s.shape == (0,) and a.shape == (0,) and a.dtype == np.int32
    s, a = run([tf.sort(x), tf.argsort(x)], {x: empty})
    assert s.shape == (0,) and a.shape == (0,)
    assert run(tf.sort(m, axis=0), {m: np.zeros((0, 3), np.float32)}).shape == (0, 3)
    assert run(tf.sort(m, axis=1), {m: np.zeros((2, 0), np.float32)}).shape == (2, 0)
    s, a = run([tf.sort(x), tf.argsort(x, direction="DESCENDING")], {x: [3.0, 1.0, 2.0]})
    assert s.tolist() == [1.0, 2.0, 3.0] and a.tolist() == [0, 2, 1]
    np.testing.assert_array_equal(run(tf.sort(m, axis=1), {m: [[3.0, 1.0], [0.0, -1.0]]}),
                                  [[1.0, 3.0], [-1.0, 0.0]])


# ---- check_ops ----------------------------------------------------------------------------------

def test_assert_rank_takes_data_and_summarize():
    u = tf.placeholder(tf.float32)
    check = tf.assert_rank(u, 2, data=["rank is wrong", u], summarize=2)
    at_least = tf.assert_rank_at_least(u, 1, None, 3, "m")
    rank_in = tf.debugging.assert_rank_in(u, [2, 3], data=[u])
    with tf.Session() as sess:
        sess.run([check, at_least, rank_in], {u: np.zeros((2, 2))})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"rank is wrong\] \[0 0\.\.\.\]"):
            sess.run(check, {u: np.zeros(4)})
    with pytest.raises(ValueError):
        tf.assert_rank(tf.zeros([2]), 2, data=["x"], summarize=1)


def test_assert_shapes():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 4])
    u = tf.placeholder(tf.float32)
    ok = tf.debugging.assert_shapes([(x, ("N", 3)), (y, ("N", "D")), (tf.constant(1.0), ())])
    inner = tf.debugging.assert_shapes({u: (..., "N", 4), y: ("N", ".")})
    with tf.Session() as sess:
        sess.run(ok, {x: np.zeros((2, 3)), y: np.zeros((2, 4))})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"must have shape \(N, D\) \(dimension N\)"):
            sess.run(ok, {x: np.zeros((2, 3)), y: np.zeros((3, 4))})
        sess.run(inner, {u: np.zeros((5, 2, 4)), y: np.zeros((2, 4))})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(inner, {u: np.zeros((5, 3, 4)), y: np.zeros((2, 4))})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(inner, {u: np.zeros(4), y: np.zeros((2, 4))})
    with pytest.raises(ValueError, match="dimension 4 is 3"):
        tf.debugging.assert_shapes([(x, ("N", 4))])
    with pytest.raises(ValueError, match="dimension N is 3, not 2"):
        tf.debugging.assert_shapes([(tf.zeros([2, 3]), ("N", "Q")), (tf.zeros([3]), ("N",))])
    with pytest.raises(ValueError):
        tf.debugging.assert_shapes([(tf.zeros([2, 3]), ("N",))])


# ---- space_to_batch -----------------------------------------------------------------------------

def test_space_to_batch_block_shape():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    a = tf.space_to_batch(x, [[0, 0], [0, 0]], block_shape=2)
    back = tf.batch_to_space(a, [[0, 0], [0, 0]], block_shape=2)
    old = tf.space_to_batch(x, [[0, 0], [0, 0]], 2)
    ra, rb, rold = run([a, back, old])
    assert ra[:, :, :, 0].tolist() == [[[0, 2], [8, 10]], [[1, 3], [9, 11]],
                                       [[4, 6], [12, 14]], [[5, 7], [13, 15]]]
    np.testing.assert_array_equal(rb, x)
    np.testing.assert_array_equal(rold, ra)


# ---- strings ------------------------------------------------------------------------------------

def test_string_split_sep_result_type_name():
    a = tf.string_split(["a b,c", "d"], sep=", ", name="split")
    b = tf.string_split(["a,,b"], ",", False)
    c = tf.string_split(["x y"], result_type="SparseTensor")
    ra, rb, rc = run([a, b, c])
    assert ra.values.tolist() == [b"a", b"b", b"c", b"d"] and ra.dense_shape.tolist() == [2, 3]
    assert rb.values.tolist() == [b"a", b"", b"b"]
    assert rc.values.tolist() == [b"x", b"y"]
    with pytest.raises(NotImplementedError, match="RaggedTensor"):
        tf.string_split(["a"], result_type="RaggedTensor")


def test_string_to_number_input():
    np.testing.assert_allclose(run(tf.string_to_number(input=["1.5", "2"])), [1.5, 2.0])
    assert run(tf.string_to_number(["7"], tf.int32)).tolist() == [7]


# ---- dtypes and tensor_util ---------------------------------------------------------------------

def test_as_dtype_type_value_and_dtypes_bool():
    assert tf.dtypes.bool == tf.bool
    assert tf.as_dtype(type_value=bool) == tf.bool
    assert tf.as_dtype(np.bool_) == tf.bool and tf.as_dtype("bool") == tf.bool
    assert tf.as_dtype(3) == tf.int32 and tf.as_dtype(int) == tf.int32
    assert tf.dtypes.as_dtype(float) == tf.float32
    with pytest.raises(TypeError):
        tf.as_dtype(object())


def test_make_tensor_proto_verify_shape_allow_broadcast():
    assert tf.make_ndarray(tf.make_tensor_proto([1, 2], shape=[4])).tolist() == [1, 2, 2, 2]
    np.testing.assert_array_equal(
        tf.make_ndarray(tf.make_tensor_proto(5.0, shape=[2, 2], allow_broadcast=True)),
        np.full((2, 2), 5.0))
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.make_tensor_proto([1, 2], shape=[4], verify_shape=True)
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.make_tensor_proto([1, 2], shape=[4], allow_broadcast=True)
    with pytest.raises(ValueError, match="Too many elements"):
        tf.make_tensor_proto([1, 2, 3], shape=[2])
    assert tf.make_ndarray(tf.make_tensor_proto([[1, 2]], shape=[2], allow_broadcast=True))\
        .tolist() == [1, 2]


# ---- pad ----------------------------------------------------------------------------------------

def test_mirror_pad_of_run_time_sizes():
    x = tf.placeholder(tf.float32, [None, None, None, 3])
    v = np.random.RandomState(0).rand(2, 4, 5, 3).astype(np.float32)
    p = [[0, 0], [2, 1], [1, 2], [0, 0]]
    reflect, symmetric = tf.pad(x, p, "REFLECT"), tf.pad(x, p, "SYMMETRIC")
    assert reflect.shape.as_list() == [None, None, None, 3]
    grad = tf.gradients(tf.reduce_sum(reflect * reflect), x)[0]
    static = tf.constant(v)
    grad_static = tf.gradients(tf.reduce_sum(tf.pad(static, p, "REFLECT") ** 2), static)[0]
    edges = tf.image.sobel_edges(x)
    with tf.Session() as sess:
        r, s, g, gs, e, es = sess.run([reflect, symmetric, grad, grad_static, edges,
                                       tf.image.sobel_edges(static)], {x: v})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(reflect, {x: v[:, :2]})   # REFLECT by 2 needs a size of at least 3
    np.testing.assert_array_equal(r, np.pad(v, p, "reflect"))
    np.testing.assert_array_equal(s, np.pad(v, p, "symmetric"))
    np.testing.assert_allclose(g, gs, rtol=1e-6)
    np.testing.assert_allclose(e, es, rtol=1e-5, atol=1e-6)


# ---- sparse -------------------------------------------------------------------------------------

SP_INDICES = [[0, 0], [0, 2], [1, 1], [2, 0], [2, 2]]
SP_VALUES = [1.0, -3.0, 2.0, 4.0, -4.0]


def sp_example():
    return tf.SparseTensor(SP_INDICES, SP_VALUES, [4, 3])


def test_sparse_add_threshold_order():
    a = tf.SparseTensor([[0, 0], [0, 1]], [1.0, 0.25], [1, 2])
    b = tf.SparseTensor([[0, 0], [0, 1]], [1.0, -0.2], [1, 2])
    # TF1's third argument is threshold: the sum 0.05 at (0, 1) is dropped.
    out = run(tf.sparse_add(a, b, 0.1))
    assert out.indices.tolist() == [[0, 0]] and out.values.tolist() == [2.0]
    assert run(tf.sparse.add(a, b, thresh=0.1)).values.tolist() == [2.0]
    assert len(run(tf.sparse_add(a, b)).values) == 2
    with pytest.raises(ValueError):
        tf.sparse_add(a, b, threshold=0.1, thresh=0.1)


def test_sparse_reduce_to_sparse():
    sp = sp_example()
    mx, sm, sm_keep, sm0, total = run([
        tf.sparse.reduce_max_sparse(sp, axis=1), tf.sparse_reduce_sum_sparse(sp, 1),
        tf.sparse.reduce_sum_sparse(sp, 1, keepdims=True),
        tf.sparse.reduce_sum_sparse(sp, 0), tf.sparse.reduce_sum_sparse(sp)])
    # Row 3 has no entries, so no output entry (not a 0); the sum 0 of row 2 is kept.
    assert mx.indices.tolist() == [[0], [1], [2]] and mx.values.tolist() == [1.0, 2.0, 4.0]
    assert mx.dense_shape.tolist() == [4]
    assert sm.values.tolist() == [-2.0, 2.0, 0.0]
    assert sm_keep.indices.tolist() == [[0, 0], [1, 0], [2, 0]]
    assert sm_keep.dense_shape.tolist() == [4, 1]
    assert sm0.indices.tolist() == [[0], [1], [2]] and sm0.values.tolist() == [5.0, 2.0, -7.0]
    assert total.values.tolist() == [0.0] and total.dense_shape.tolist() == []
    assert tf.sparse_reduce_max_sparse is tf.sparse.reduce_max_sparse


def test_sparse_reset_shape():
    sp = sp_example()
    tight, bigger = run([tf.sparse.reset_shape(sp), tf.sparse_reset_shape(sp, [5, 6])])
    assert tight.dense_shape.tolist() == [3, 3] and tight.indices.tolist() == SP_INDICES
    assert bigger.dense_shape.tolist() == [5, 6]
    smaller = tf.sparse.reset_shape(sp, tf.constant([3, 3], tf.int64))
    with pytest.raises(tf.errors.InvalidArgumentError, match="new_shape must be >="):
        run(smaller)
    with pytest.raises(ValueError):
        tf.sparse.reset_shape(sp, [3, 3])
    with pytest.raises(ValueError):
        tf.sparse.reset_shape(sp, [5, 5, 5])


def test_sparse_mask():
    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                              tf.constant([12, 26, 37]), tf.constant([40, 2]))
    masked = tf.sparse.mask(slices, [12, 37])
    assert isinstance(masked, tf.IndexedSlices)
    values, indices = run([masked.values, masked.indices])
    assert values.tolist() == [[3.0, 4.0]] and indices.tolist() == [26]
    assert tf.sparse_mask is tf.sparse.mask


def test_serialize_and_deserialize_sparse():
    sp = sp_example()
    one = tf.serialize_sparse(sp)
    many = tf.serialize_many_sparse(sp)
    assert one.shape.as_list() == [3] and many.shape.as_list() == [4, 3]
    back = tf.deserialize_many_sparse(many, tf.float32, rank=2)
    twice = tf.deserialize_many_sparse(tf.stack([one, one]), tf.float32)
    strings = tf.serialize_many_sparse(tf.SparseTensor([[0, 1], [1, 0]], ["a", "b"], [2, 2]))
    b, t, s = run([back, twice, tf.deserialize_many_sparse(strings, tf.string)])
    assert b.indices.tolist() == SP_INDICES and b.values.tolist() == SP_VALUES
    assert b.dense_shape.tolist() == [4, 3]
    assert t.dense_shape.tolist() == [2, 4, 3]
    assert t.indices.tolist() == [[0] + i for i in SP_INDICES] + [[1] + i for i in SP_INDICES]
    assert s.indices.tolist() == [[0, 1], [1, 0]] and s.values.tolist() == [b"a", b"b"]
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(tf.deserialize_many_sparse(many, tf.int64))


def test_sparse_cross():
    st = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], ["a", "b", "c"], [2, 2])
    it = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([1, 2, 3], tf.int64), [2, 2])
    dense = tf.constant([["x"], ["y"]])
    empty_row = tf.SparseTensor([[0, 0]], ["z"], [2, 1])
    crossed, hashed, partial = run([tf.sparse.cross([dense, st, it]),
                                    tf.sparse.cross_hashed([st, it], num_buckets=100),
                                    tf.sparse.cross([st, empty_row])])
    # The SparseTensors come first (as TF's kernel), the last input varies fastest.
    assert crossed.values.tolist() == [b"a_X_1_X_x", b"a_X_2_X_x", b"b_X_3_X_y", b"c_X_3_X_y"]
    assert crossed.indices.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert crossed.dense_shape.tolist() == [2, 2]
    assert hashed.indices.tolist() == crossed.indices.tolist()
    assert all(0 <= v < 100 for v in hashed.values)
    assert partial.values.tolist() == [b"a_X_z"] and partial.dense_shape.tolist() == [2, 1]


def test_sparse_cross_hashed_matches_tensorflow():
    def one(value):
        return tf.SparseTensor([[0, 0]], [value], [1, 1])
    inputs = [one("batch1-FC1-F1"), one("batch1-FC2-F1"), one("batch1-FC3-F1")]
    default, keyed = run([tf.sparse.cross_hashed(inputs).values,
                          tf.sparse.cross_hashed(inputs, hash_key=0xDECAFCAFFE + 1).values])
    # TF's sparse_cross_op_test: the values that guard against hashing changes.
    assert default.tolist() == [1971693436396284976]
    assert keyed.tolist() == [4847552627144134031]


# ---- candidate sampling -------------------------------------------------------------------------

def test_all_candidate_sampler():
    true = tf.constant([[1, 3], [0, 2]], tf.int64)
    sampled, true_count, sampled_count = run(tf.nn.all_candidate_sampler(true, 2, 5, True))
    assert sampled.tolist() == [0, 1, 2, 3, 4]
    assert true_count.tolist() == [[1.0, 1.0], [1.0, 1.0]] and sampled_count.tolist() == [1.0] * 5


def test_learned_unigram_candidate_sampler_learns_the_true_classes():
    true = tf.constant([[1, 1], [1, 1]], tf.int64)
    sampler = tf.nn.learned_unigram_candidate_sampler(true, 2, 3, False, 4, seed=1)
    unique = tf.nn.learned_unigram_candidate_sampler(true, 2, 3, True, 4, seed=2)
    with tf.Session() as sess:
        first = sess.run(sampler)
        second = sess.run(sampler)   # class 1 now counts 1 + 4 of 8
        draws = [sess.run(unique)[0] for _ in range(5)]
        many = np.concatenate([sess.run(sampler)[0] for _ in range(300)])
    np.testing.assert_allclose(first[1], np.full((2, 2), 3 * 0.25))
    np.testing.assert_allclose(second[1], np.full((2, 2), 3 * 5 / 8))
    expected = [3 * (5 / 8 if k == 1 else 1 / 8) for k in second[0]]
    np.testing.assert_allclose(second[2], expected)
    assert all(len(set(d.tolist())) == 3 for d in draws)
    assert all(0 <= k < 4 for k in many) and np.mean(many == 1) > 0.9


def test_compute_accidental_hits():
    true = tf.constant([[1, 3], [0, 2]], tf.int64)
    indices, ids, weights = run(tf.nn.compute_accidental_hits(
        true, tf.constant([3, 0, 5, 3], tf.int64), num_true=2))
    # (row, position of the last equal sampled candidate), in row-major order of true.
    assert indices.tolist() == [0, 1] and indices.dtype == np.int32
    assert ids.tolist() == [3, 1]
    assert weights.tolist() == [-np.finfo(np.float32).max] * 2


# ---- linalg: expm, sqrtm, logm ------------------------------------------------------------------

def expm_taylor(m, squarings=8, terms=60):
    m = m / 2.0 ** squarings
    out, term = np.eye(len(m)), np.eye(len(m))
    for k in range(1, terms):
        term = term @ m / k
        out = out + term
    for _ in range(squarings):
        out = out @ out
    return out


def numeric_grad(sess, loss, x, at, eps=1e-6):
    out = np.zeros_like(at)
    for i in np.ndindex(*at.shape):
        d = np.zeros_like(at)
        d[i] = eps
        out[i] = (sess.run(loss, {x: at + d}) - sess.run(loss, {x: at - d})) / (2 * eps)
    return out


def test_linalg_expm_values_and_gradients():
    rs = np.random.RandomState(0)
    a = rs.randn(3, 3)
    batch = np.stack([a, 8 * a, np.zeros((3, 3))])
    out = run(tf.linalg.expm(tf.constant(batch)))
    for m, e in zip(batch, out):
        np.testing.assert_allclose(e, expm_taylor(m), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(run(tf.linalg.expm(tf.constant(a, tf.float32))),
                               expm_taylor(a), rtol=1e-5)
    x = tf.placeholder(tf.float64, [3, 3])
    w = rs.randn(3, 3)
    loss = tf.reduce_sum(tf.linalg.expm(x) * w)
    grad = tf.gradients(loss, x)[0]
    second = tf.gradients(tf.reduce_sum(grad * w), x)[0]
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad, {x: a}), numeric_grad(sess, loss, x, a),
                                   rtol=1e-6, atol=1e-6)
        assert sess.run(second, {x: a}).shape == (3, 3)   # differentiable again


def test_linalg_sqrtm_and_logm():
    rs = np.random.RandomState(1)
    a = rs.randn(3, 3)
    spd = a @ a.T + 3 * np.eye(3)
    root, log = run([tf.linalg.sqrtm(tf.constant(spd)), tf.linalg.logm(tf.constant(spd))])
    np.testing.assert_allclose(root @ root, spd, rtol=1e-12, atol=1e-12)
    e, v = np.linalg.eigh(spd)
    np.testing.assert_allclose(root, (v * np.sqrt(e)) @ v.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(log, (v * np.log(e)) @ v.T, rtol=1e-10, atol=1e-12)
    # A non-symmetric matrix with positive eigenvalues: expm(logm(b)) == b.
    b = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [0.5, 0.0, 1.5]])
    back = run(tf.linalg.expm(tf.linalg.logm(tf.constant(b))))
    np.testing.assert_allclose(back, b, rtol=1e-10, atol=1e-12)
    assert tf.matrix_square_root is tf.linalg.sqrtm
    x = tf.placeholder(tf.float64, [3, 3])
    w = rs.randn(3, 3)
    loss = tf.reduce_sum(tf.linalg.sqrtm(x) * w)
    grad = tf.gradients(loss, x)[0]
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad, {x: spd}), numeric_grad(sess, loss, x, spd),
                                   rtol=1e-5, atol=1e-7)
        with pytest.raises(tf.errors.InvalidArgumentError, match="logm has no gradient"):
            sess.run(tf.gradients(tf.reduce_sum(tf.linalg.logm(x)), x)[0], {x: spd})


# ---- igamma, igammac, betainc -------------------------------------------------------------------

def poisson_tail(n, x):
    """Q(n, x) for an integer n: the probability of fewer than n Poisson(x) events."""
    return sum(np.exp(k * np.log(x) - x - math.lgamma(k + 1)) for k in range(n))


def test_igamma_igammac():
    a = np.array([1.0, 0.5, 3.0, 10.0, 100.0, 100.0, 0.1])
    x = np.array([2.0, 0.7, 4.5, 3.0, 110.0, 80.0, 20.0])
    p, q = run([tf.igamma(a, x), tf.math.igammac(a, x)])
    expected_q = [np.exp(-2.0), math.erfc(math.sqrt(0.7)), poisson_tail(3, 4.5),
                  poisson_tail(10, 3.0), poisson_tail(100, 110.0), poisson_tail(100, 80.0)]
    np.testing.assert_allclose(q[:6], expected_q, rtol=1e-10)
    np.testing.assert_allclose(p + q, np.ones(7), rtol=1e-12)
    assert q[6] < 1e-9
    assert tf.math.igamma is tf.igamma and tf.math.igammac is tf.igammac
    edge = run(tf.igamma([-1.0, 1.0, 1.0, 2.0], [1.0, -1.0, 0.0, np.inf]))
    assert np.isnan(edge[0]) and np.isnan(edge[1]) and edge[2] == 0.0 and edge[3] == 1.0
    broadcast = run(tf.igamma(tf.constant([[1.0], [2.0]]), tf.constant([1.0, 2.0, 3.0])))
    assert broadcast.shape == (2, 3) and broadcast.dtype == np.float32
    np.testing.assert_allclose(broadcast[0], 1 - np.exp(-np.array([1.0, 2.0, 3.0])), rtol=1e-6)
    xs = tf.placeholder(tf.float64, [3])
    grad = tf.gradients(tf.reduce_sum(tf.igamma(2.0, xs) - tf.igammac(2.0, xs)), xs)[0]
    v = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(run(grad, {xs: v}), 2 * v * np.exp(-v), rtol=1e-10)


def test_betainc():
    out = run(tf.math.betainc([2.0, 0.5, 5.0, 30.0], [3.0, 0.5, 1.0, 40.0],
                              [0.3, 0.25, 0.9, 0.45]))
    x = 0.3
    i23 = sum(math.comb(4, j) * x ** j * (1 - x) ** (4 - j) for j in range(2, 5))
    # I_x(30, 40) = P(at least 30 successes of 69 trials of probability x).
    big = sum(math.comb(69, j) * 0.45 ** j * 0.55 ** (69 - j) for j in range(30, 70))
    np.testing.assert_allclose(out, [i23, 1 / 3, 0.9 ** 5, big], rtol=1e-6)
    edge = run(tf.betainc(1.0, 1.0, [1.5, 0.0, 1.0]))
    assert np.isnan(edge[0]) and edge[1:].tolist() == [0.0, 1.0]
    assert tf.betainc is tf.math.betainc


def test_gamma_and_beta_cdf():
    gamma = tf.distributions.Gamma(concentration=[1.0, 3.0], rate=[2.0, 0.5])
    beta = tf.distributions.Beta([2.0, 0.5], [3.0, 0.5])
    x = tf.placeholder(tf.float32, [2])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(gamma.cdf([1.0, 4.0])),
                                   [1 - np.exp(-2.0), 1 - 5 * np.exp(-2.0)], rtol=1e-6)
        np.testing.assert_allclose(sess.run(beta.cdf([0.3, 0.25])), [0.3483, 1 / 3], rtol=1e-6)
        grad = tf.gradients(tf.reduce_sum(gamma.cdf(x)), x)[0]
        np.testing.assert_allclose(sess.run(grad, {x: [1.0, 4.0]}),
                                   sess.run(gamma.prob([1.0, 4.0])), rtol=1e-5)


def test_student_t_and_poisson_cdf():
    student = tf.distributions.StudentT(df=[1.0, 1.0, 3.0], loc=0.0, scale=[1.0, 2.0, 1.0])
    poisson = tf.contrib.distributions.Poisson(rate=[2.0, 2.0])
    t, p = run([student.cdf([1.0, -2.0, 0.5]), poisson.cdf([1.0, 2.5])])
    s = 0.5 / math.sqrt(3.0)   # df = 3: 1/2 + (s / (1 + s^2) + atan(s)) / pi at x = 0.5
    np.testing.assert_allclose(t, [0.75, 0.25, 0.5 + (s / (1 + s * s) + math.atan(s)) / math.pi],
                               rtol=1e-6)
    np.testing.assert_allclose(p, [3 * math.exp(-2.0), 5 * math.exp(-2.0)], rtol=1e-6)


def test_dense_to_sparse_and_nn_names_for_ctc_programs():
    # tf.contrib.layers.dense_to_sparse (padded labels to CTC's SparseTensor), tf.nn.ctc_loss_v2
    # and tf.nn.raw_rnn were missing (AttributeError).
    with tf.Graph().as_default():
        labels = tf.constant([[1, 0, 2], [0, 0, 3]])
        sp = tf.contrib.layers.dense_to_sparse(labels)
        words = tf.contrib.layers.dense_to_sparse(tf.constant([["a", "<eos>"]]), eos_token="<eos>")
        with tf.Session() as sess:
            v, w = sess.run([sp, words])
    assert v.indices.tolist() == [[0, 0], [0, 2], [1, 2]] and v.values.tolist() == [1, 2, 3]
    assert v.dense_shape.tolist() == [2, 3] and w.values.tolist() == [b"a"]
    assert callable(tf.nn.ctc_loss_v2) and callable(tf.nn.raw_rnn)
