"""Dense linear algebra (NumPy in PyFunc nodes, gradients as graph ops): values against NumPy,
gradients against finite differences, a model that trains through logdet."""
import numpy as np
import pytest

import shardflow as tf
from grad_check import check_gradient


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def spd(rng, n, batch=()):
    m = rng.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def test_values_match_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3, 2))
    s = spd(rng, 4)
    ops = [tf.matrix_inverse(a), tf.matrix_determinant(a), tf.matrix_solve(a, b),
           tf.matrix_triangular_solve(a, b, lower=True), tf.cholesky(s), tf.linalg.logdet(s),
           tf.linalg.slogdet(a)[1], tf.linalg.solve(a, b, adjoint=True)]
    assert ops[0].shape.as_list() == [2, 3, 3] and ops[1].shape.as_list() == [2]
    with tf.Session() as sess:
        got = sess.run(ops)
    np.testing.assert_allclose(got[0], np.linalg.inv(a), rtol=1e-10)
    np.testing.assert_allclose(got[1], np.linalg.det(a), rtol=1e-10)
    np.testing.assert_allclose(got[2], np.linalg.solve(a, b), rtol=1e-10)
    np.testing.assert_allclose(got[3], np.linalg.solve(np.tril(a), b), rtol=1e-10)
    np.testing.assert_allclose(got[4], np.linalg.cholesky(s), rtol=1e-10)
    np.testing.assert_allclose(got[5], np.linalg.slogdet(s)[1], rtol=1e-10)
    np.testing.assert_allclose(got[6], np.linalg.slogdet(a)[1], rtol=1e-10)
    np.testing.assert_allclose(got[7], np.linalg.solve(np.swapaxes(a, -1, -2), b), rtol=1e-10)
    assert tf.linalg.inv is tf.matrix_inverse and tf.linalg.det is tf.matrix_determinant


def test_gradients_against_finite_differences():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2))
    check_gradient(tf.matrix_inverse, a, rng=rng)
    check_gradient(tf.matrix_determinant, a, rng=rng)
    check_gradient(lambda x: tf.log_matrix_determinant(x)[1], a, rng=rng)
    check_gradient(tf.matrix_solve, a, b, rng=rng)
    check_gradient(lambda x, y: tf.matrix_triangular_solve(x, y, lower=True), a, b, rng=rng)
    check_gradient(lambda x, y: tf.matrix_triangular_solve(x, y, lower=False, adjoint=True),
                   a, b, rng=rng)
    # Cholesky of a symmetric input: differentiate through its symmetric part.
    s0 = spd(rng, 3)
    check_gradient(lambda x: tf.cholesky(0.5 * (x + tf.transpose(x))), s0, rng=rng)
    check_gradient(lambda x: tf.linalg.logdet(0.5 * (x + tf.transpose(x))), s0, rng=rng)


def test_svd_and_qr():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 3))
    s, u, v = tf.svd(a)
    q, r = tf.qr(a)
    only_s = tf.svd(a, compute_uv=False)
    with tf.Session() as sess:
        sv, uv, vv, qv, rv, ov = sess.run([s, u, v, q, r, only_s])
    np.testing.assert_allclose(uv @ np.diag(sv) @ vv.T, a, atol=1e-10)
    np.testing.assert_allclose(ov, np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(qv @ rv, a, atol=1e-10)
    assert u.shape.as_list() == [4, 3] and v.shape.as_list() == [3, 3]
    # The singular values' gradient is u v^T (test_tf1_image_random_fidelity checks the rest).
    x = tf.placeholder(tf.float64, [4, 3])
    g, = tf.gradients(tf.reduce_sum(tf.svd(x, compute_uv=False)), [x])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: a}), uv @ vv.T, atol=1e-8)


def test_training_through_logdet_fits_a_covariance():
    # Maximum likelihood of a zero-mean Gaussian: the covariance L L^T + eps I approaches the
    # sample covariance.
    rng = np.random.default_rng(4)
    data = rng.multivariate_normal([0, 0], [[2.0, 0.6], [0.6, 1.0]], size=500)
    x = tf.constant(data)
    raw = tf.Variable(np.eye(2))
    lower = tf.matrix_band_part(raw, -1, 0)
    cov = tf.matmul(lower, lower, transpose_b=True) + 1e-6 * np.eye(2)
    inv = tf.matrix_inverse(cov)
    nll = 0.5 * tf.linalg.logdet(cov) + 0.5 * tf.reduce_mean(
        tf.reduce_sum(tf.matmul(x, inv) * x, axis=1))
    train = tf.train.AdamOptimizer(0.05).minimize(nll)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(300):
            sess.run(train)
        got = sess.run(cov)
    np.testing.assert_allclose(got, np.cov(data.T, bias=True), atol=0.05)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="N, N"):
        tf.matrix_inverse(tf.constant(np.ones((2, 3))))
    with pytest.raises(TypeError, match="float32 or float64"):
        tf.cholesky(tf.constant(np.ones((2, 2), np.int32)))
    with tf.Session() as sess:
        with pytest.raises(Exception):
            sess.run(tf.cholesky(tf.constant(-np.eye(2))))  # not positive definite


def test_lstsq_and_eigh_against_numpy():
    rng = np.random.RandomState(11)
    tall, wide = rng.randn(7, 3), rng.randn(3, 6)
    b_tall, b_wide = rng.randn(7, 2), rng.randn(3, 2)
    with tf.Graph().as_default():
        x_tall = tf.linalg.lstsq(tf.constant(tall), tf.constant(b_tall))
        x_wide = tf.matrix_solve_ls(tf.constant(wide), tf.constant(b_wide), l2_regularizer=0.0)
        x_reg = tf.matrix_solve_ls(tf.constant(tall), tf.constant(b_tall), l2_regularizer=0.5)
        sym = tall.T @ tall
        e, v = tf.linalg.eigh(tf.constant(sym))
        vals = tf.self_adjoint_eigvals(tf.constant(sym))
        with tf.Session() as sess:
            got = sess.run([x_tall, x_wide, x_reg, e, v, vals])
    np.testing.assert_allclose(got[0], np.linalg.lstsq(tall, b_tall, rcond=None)[0], atol=1e-10)
    # Underdetermined: the minimum-norm solution, as NumPy's.
    np.testing.assert_allclose(got[1], np.linalg.lstsq(wide, b_wide, rcond=None)[0], atol=1e-10)
    np.testing.assert_allclose(got[2], np.linalg.solve(tall.T @ tall + 0.5 * np.eye(3),
                                                       tall.T @ b_tall), atol=1e-10)
    np.testing.assert_allclose(got[3], np.linalg.eigvalsh(sym), atol=1e-10)
    np.testing.assert_allclose(sym @ got[4], got[4] * got[3], atol=1e-9)
    np.testing.assert_allclose(got[5], got[3], atol=1e-12)
    with tf.Graph().as_default():
        check_gradient(lambda a, b: tf.linalg.lstsq(a, b), tall, b_tall, rng=rng)
        check_gradient(lambda a, b: tf.matrix_solve_ls(a, b, l2_regularizer=0.3), wide, b_wide,
                       rng=rng)
        slow = tf.matrix_solve_ls(tf.constant(tall), tf.constant(b_tall), fast=False)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(slow), got[0], atol=1e-10)   # the least squares
