"""Gradients and optimizers from Python: finite differences and known update rules."""

import numpy as np
import pytest

import shardflow as sf

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def fresh_graph():
    g = sf.Graph()
    with g.as_default():
        yield g


def numeric_grad(f, x, eps=1e-3):
    g = np.zeros_like(x, dtype=np.float64)
    for i in np.ndindex(x.shape):
        xp, xm = x.astype(np.float64), x.astype(np.float64)
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def check_gradient(build, x_value, rtol=2e-2, atol=2e-3):
    """build(x) -> scalar loss tensor; compares sf.gradients with central differences."""
    x = sf.placeholder(sf.float64, list(x_value.shape))
    loss = build(x)
    (dx,) = sf.gradients(loss, [x])
    with sf.Session() as sess:
        got = sess.run(dx, {x: x_value})
        want = numeric_grad(lambda v: float(sess.run(loss, {x: v})), x_value)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_known_gradient_of_a_quadratic():
    x = sf.placeholder(sf.float32, [3])
    y = sf.reduce_sum(x * x * 3.0)
    (dx,) = sf.gradients(y, [x])
    with sf.Session() as sess:
        out = sess.run(dx, {x: np.array([1, -2, 0.5], np.float32)})
    np.testing.assert_allclose(out, [6, -12, 3])


def test_gradient_of_matmul_relu_chain():
    w = RNG.standard_normal((4, 3))
    check_gradient(lambda x: sf.reduce_sum(sf.nn.relu(x @ sf.constant(w)) ** 2),
                   RNG.standard_normal((2, 4)))


def test_gradient_of_tanh_sigmoid_exp_mean():
    check_gradient(lambda x: sf.reduce_mean(sf.tanh(x) * sf.sigmoid(x) + sf.exp(x / 3)),
                   RNG.standard_normal((3, 3)))


def test_gradient_of_softmax_cross_entropy():
    labels = np.array([1, 0, 2], np.int32)
    check_gradient(
        lambda x: sf.reduce_mean(
            sf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x)),
        RNG.standard_normal((3, 4)))


def test_gradient_of_broadcast_division():
    check_gradient(lambda x: sf.reduce_sum(x / sf.constant(np.array([1.0, 2.0, 4.0]))),
                   RNG.standard_normal((2, 3)))


def test_gradient_of_unrelated_x_is_none():
    x = sf.placeholder(sf.float32, [2])
    z = sf.placeholder(sf.float32, [2])
    assert sf.gradients(sf.reduce_sum(x), [z]) == [None]


def test_gradients_with_respect_to_variables_and_grad_ys():
    w = sf.Variable(np.array([1.0, 2.0], np.float32), name="w")
    y = w * w
    (dw,) = sf.gradients(y, [w], grad_ys=[sf.constant([1.0, 10.0])])
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(dw), [2.0, 40.0])


def test_sgd_step_matches_the_update_rule():
    w0 = np.array([[1.0], [2.0]], np.float32)
    w = sf.Variable(w0, name="w")
    x = sf.placeholder(sf.float32, [None, 2])
    loss = sf.reduce_sum(x @ w)
    train = sf.train.GradientDescentOptimizer(0.5).minimize(loss)
    xv = np.array([[1.0, 3.0]], np.float32)
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        sess.run(train, {x: xv})
        np.testing.assert_allclose(sess.run(w), w0 - 0.5 * xv.T)


def test_momentum_and_adam_reduce_a_quadratic():
    for opt in (sf.train.MomentumOptimizer(0.05, momentum=0.9),
                sf.train.AdamOptimizer(0.1)):
        g = sf.Graph()
        with g.as_default():
            v = sf.Variable(np.array([3.0, -4.0], np.float32))
            loss = sf.reduce_sum(sf.square(v - 1.0))
            train = opt.minimize(loss)
            init = sf.global_variables_initializer()
            with sf.Session() as sess:
                sess.run(init)
                first = sess.run(loss)
                for _ in range(100):
                    sess.run(train)
                assert sess.run(loss) < 0.05 * first, type(opt).__name__


def test_adam_first_step_is_lr_times_sign():
    v = sf.Variable(np.array([1.0, -1.0], np.float32))
    loss = sf.reduce_sum(v * sf.constant([3.0, -0.5]))
    train = sf.train.AdamOptimizer(0.01).minimize(loss)
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(v), [1.0 - 0.01, -1.0 + 0.01], rtol=1e-4)


def test_learning_rate_placeholder_and_apply_gradients():
    v = sf.Variable(np.array([2.0], np.float32))
    lr = sf.placeholder(sf.float32, [])
    opt = sf.train.GradientDescentOptimizer(lr)
    loss = sf.reduce_sum(v * 4.0)
    train = opt.apply_gradients(opt.compute_gradients(loss))
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        sess.run(train, {lr: 0.25})
        np.testing.assert_allclose(sess.run(v), [1.0])


def test_variable_assign_and_assign_add():
    v = sf.Variable(np.zeros(3, np.float32))
    src = sf.placeholder(sf.float32, [3])
    assign = v.assign(src)
    inc = v.assign_add(sf.constant([1.0, 1.0, 1.0]))
    fed = np.array([1.0, 2.0, 3.0], np.float32)
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        sess.run(assign, {src: fed})
        # a feed that becomes a variable's value is copied (Note [Feeds the engine may keep])
        assert sf._shardflow._last_run_stats()["feeds_zero_copy"] == 0
        sess.run(inc)
        np.testing.assert_array_equal(sess.run(v), [2.0, 3.0, 4.0])
    # the fed array became no variable's memory: it is unchanged
    np.testing.assert_array_equal(fed, [1.0, 2.0, 3.0])


def test_second_derivatives_through_shapes_known_only_at_run_time():
    # Regression: with a None dimension the first gradient sums broadcasts with SumToShape,
    # which had no gradient: gradients of gradients (a WGAN-GP penalty over a placeholder
    # batch, a Hessian-vector product) failed "no gradient is registered for op 'SumToShape'".
    x = sf.placeholder(sf.float64, [None, 4])
    w = sf.constant(np.linspace(-1, 1, 4), sf.float64)
    y = sf.reduce_sum(sf.sin(x) * x * w + sf.maximum(x, 0.5) * 2.0)
    (g,) = sf.gradients(y, [x])
    penalty = sf.reduce_mean(sf.square(sf.sqrt(sf.reduce_sum(sf.square(g), axis=1)) - 1.0))
    (gg,) = sf.gradients(penalty, [x])
    (hv,) = sf.gradients(sf.reduce_sum(g * sf.ones_like(x)), [x])
    xv = np.random.RandomState(0).uniform(-2, 2, (3, 4))
    with sf.Session() as sess:
        got_hv, got_gg = sess.run([hv, gg], {x: xv})
    # d/dx of sum_j dy/dx_j: the Hessian is diagonal, w * (2 cos x - x sin x).
    np.testing.assert_allclose(got_hv, w_np(4) * (2 * np.cos(xv) - xv * np.sin(xv)), rtol=1e-9)
    eps = 1e-6

    def penalty_np(v):
        grad = np.sin(v) * w_np(4) + v * np.cos(v) * w_np(4) + 2.0 * (v > 0.5)
        return np.mean((np.sqrt((grad ** 2).sum(axis=1)) - 1.0) ** 2)
    numeric = np.zeros_like(xv)
    for idx in np.ndindex(*xv.shape):
        d = np.zeros_like(xv)
        d[idx] = eps
        numeric[idx] = (penalty_np(xv + d) - penalty_np(xv - d)) / (2 * eps)
    np.testing.assert_allclose(got_gg, numeric, rtol=1e-5, atol=1e-7)


def w_np(n):
    return np.linspace(-1, 1, n)


def test_compute_gradient_and_error_as_tf1s_gradient_checker():
    # tf.test.compute_gradient / compute_gradient_error were missing (AttributeError): TF1 test
    # code checks gradients with them. Jacobians are [x size, y size], row i = dy / dx_i.
    x = sf.constant([[1.0, 2.0], [3.0, 4.0]], dtype=sf.float64)
    w = sf.constant([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], dtype=sf.float64)
    y = sf.matmul(sf.square(x), w)
    with sf.Session():
        theoretical, numerical = sf.test.compute_gradient(x, [2, 2], y, [2, 3],
                                                          x_init_value=np.ones((2, 2)))
        assert theoretical.shape == (4, 6)
        # dy[0, j] / dx[0, 0] = 2 * x00 * w[0, j] with x = 1.
        np.testing.assert_allclose(theoretical[0, :3], [1.0, -2.0, 4.0])
        np.testing.assert_allclose(theoretical[0, 3:], 0.0)
        np.testing.assert_allclose(theoretical, numerical, atol=1e-6)
        err = sf.test.compute_gradient_error([x, w], [[2, 2], [2, 3]], y, [2, 3])
        assert err < 1e-6
        wrong = sf.stop_gradient(y) + sf.matmul(x, w)   # gradient says x, values say x^2
        assert sf.test.compute_gradient_error(x, [2, 2], wrong, [2, 3]) > 0.1
    with pytest.raises(ValueError, match="default session"):
        sf.test.compute_gradient(x, [2, 2], y, [2, 3])


def test_clip_by_norm_of_zeros_has_gradient_one_not_nan():
    # Regression: the norm was sqrt(sum(t * t)), whose derivative at 0 is inf, so an all-zero
    # tensor (or row) got NaN gradients; TF's clip_by_norm guards the root and gives 1.
    t = sf.constant([[0.0, 0.0], [3.0, 4.0]], dtype=sf.float64)
    clipped = sf.clip_by_norm(t, 1.0, axes=[1])
    (g,) = sf.gradients(sf.reduce_sum(clipped * sf.constant([[1.0, 1.0], [1.0, 0.0]],
                                                             dtype=sf.float64)), [t])
    with sf.Session() as sess:
        c, gv = sess.run([clipped, g])
    np.testing.assert_allclose(c, [[0, 0], [0.6, 0.8]])
    np.testing.assert_allclose(gv[0], [1.0, 1.0])
    assert np.all(np.isfinite(gv))


def test_float64_layers_and_batch_norm_for_gradient_checks():
    # Regression: tf.layers made float32 variables whatever the input (a float64 dense failed
    # "expects double but ... is float") and batch norm always used the float32-only fused
    # kernel; TF1's layers take the input's dtype and its non-fused batch norm takes float64.
    x = sf.placeholder(sf.float64, [4, 3])
    h = sf.layers.dense(x, 3, kernel_initializer=sf.constant_initializer(0.5))
    y = sf.layers.batch_normalization(h * sf.constant([1.0, 2.0, 3.0], sf.float64) + x,
                                      training=True)
    assert y.dtype == sf.float64
    assert all(v.dtype == sf.float64 for v in sf.global_variables())
    xv = np.random.RandomState(3).uniform(-1, 1, (4, 3))
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        out = sess.run(y, {x: xv})
        np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-9)
        err = sf.test.compute_gradient_error(x, [4, 3], y, [4, 3], x_init_value=xv, delta=1e-6)
    assert err < 1e-5


def test_float64_convolution_and_pooling_for_gradient_checks():
    # Conv2D, its backprops, MaxPool, AvgPool and their gradients had float32 kernels only
    # (oneDNN); a float64 CNN gradient check failed "attr 'T' is double; allowed: float".
    x = sf.placeholder(sf.float64, [2, 6, 5, 3])
    h = sf.layers.conv2d(x, 4, 3, strides=2, padding="same",
                         kernel_initializer=sf.constant_initializer(0.1))
    w = sf.constant(np.random.RandomState(1).randn(2, 2, 3, 2))
    v = sf.nn.max_pool(sf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"), [1, 2, 2, 1], [1, 1, 1, 1],
                       "SAME")
    a = sf.nn.avg_pool(x, [1, 3, 2, 1], [1, 2, 2, 1], "SAME")
    xv = np.random.RandomState(0).randn(2, 6, 5, 3)
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        for y, shape in ((h, [2, 3, 3, 4]), (v, [2, 5, 4, 2]), (a, [2, 3, 3, 3])):
            err = sf.test.compute_gradient_error(x, [2, 6, 5, 3], y, shape, x_init_value=xv,
                                                 delta=1e-6)
            assert err < 1e-6, (y.name, err)
        # The float64 kernels agree with the float32 ones.
        x32 = sf.cast(x, sf.float32)
        v32 = sf.nn.max_pool(sf.nn.conv2d(x32, sf.cast(w, sf.float32), [1, 1, 1, 1], "VALID"),
                             [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
        got64, got32 = sess.run([v, v32], {x: xv})
    np.testing.assert_allclose(got64, got32, rtol=1e-4, atol=1e-4)


def test_v1_softmax_cross_entropy_takes_labels_in_the_logits_dtype():
    # Regression: NumPy float64 one-hot labels with float32 logits were refused ("insert a
    # Cast"); TF converts the labels to the logits' dtype. Also tf.image.resize_images_v2.
    logits = sf.constant([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    loss = sf.nn.softmax_cross_entropy_with_logits(labels=np.eye(3)[[0, 2]], logits=logits)
    loss64 = sf.nn.softmax_cross_entropy_with_logits(
        labels=sf.constant(np.eye(3)[[0, 2]]), logits=logits)
    assert loss.dtype == sf.float32 and callable(sf.image.resize_images_v2)
    with sf.Session() as sess:
        got, got64 = sess.run([loss, loss64])
    np.testing.assert_allclose(got, [2.407606, np.log(3.0)], rtol=1e-5)
    np.testing.assert_allclose(got64, got)
