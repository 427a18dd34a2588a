"""TF1 ops that ordinary training programs reach for, composed in Python from the engine's ops:
nn activations and sigmoid losses (values and gradients against NumPy, also where naive forms
overflow), l2_normalize, in_top_k, reduce_logsumexp, norm, casts and shape helpers, and the
run-time asserts. The program-level API (regularizers, ExponentialMovingAverage, tf.logging,
tf.app.flags, namespaces) is in test_tf1_program_api.py."""

import numpy as np
import pytest

import shardflow as tf
from shardflow import errors

# Logits from far below to far above zero: exp(1000) overflows float32 and float64 alike.
WIDE = np.array([-1000.0, -80.0, -20.0, -3.0, -0.5, 0.0, 0.5, 3.0, 20.0, 80.0, 1000.0])


def run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


def sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def value_and_grad(fn, x, dtype=np.float32):
    """fn(x) and d sum(fn(x)) / dx, built in a fresh graph."""
    g = tf.Graph()
    with g.as_default():
        xt = tf.placeholder(tf.as_dtype(dtype), x.shape)
        y = fn(xt)
        (dx,) = tf.gradients(tf.reduce_sum(y), [xt])
        with tf.Session() as s:
            return s.run([y, dx], {xt: x.astype(dtype)})


def check_finite_differences(fn, x0, h=1e-6, rtol=1e-5, atol=1e-8):
    """The engine's gradient of sum(fn(x) * c) (c random) against central differences of the
    engine's own forward pass, in float64."""
    rng = np.random.RandomState(0)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, x0.shape)
        out = fn(x)
        c = tf.constant(rng.uniform(0.5, 1.5, size=out.shape.as_list()))
        y = tf.reduce_sum(out * c)
        (dx,) = tf.gradients(y, [x])
        with tf.Session() as s:
            analytic = s.run(dx, {x: x0})
            numeric = np.zeros_like(x0)
            for i in np.ndindex(*x0.shape):
                up, down = x0.copy(), x0.copy()
                up[i] += h
                down[i] -= h
                numeric[i] = (s.run(y, {x: up}) - s.run(y, {x: down})) / (2 * h)
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol)


# ---- tf.nn activations -----------------------------------------------------------------------

SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name: (function, NumPy value, NumPy gradient with TF1's value at the kinks)
ACTIVATIONS = {
    "softplus": (tf.nn.softplus, lambda x: np.logaddexp(0, x), sigmoid),
    "softsign": (tf.nn.softsign, lambda x: x / (1 + np.abs(x)), lambda x: 1 / (1 + np.abs(x)) ** 2),
    "leaky_relu": (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x),
                   lambda x: np.where(x > 0, 1.0, 0.2)),
    "leaky_relu_1.5": (lambda x: tf.nn.leaky_relu(x, alpha=1.5),
                       lambda x: np.where(x > 0, x, 1.5 * x), lambda x: np.where(x > 0, 1.0, 1.5)),
    "relu6": (tf.nn.relu6, lambda x: np.clip(x, 0, 6), lambda x: ((x > 0) & (x < 6)) * 1.0),
    "elu": (tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
            lambda x: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0)))),
    "selu": (tf.nn.selu, lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(np.minimum(x, 0))),
             lambda x: SELU_S * np.where(x > 0, 1.0, SELU_A * np.exp(np.minimum(x, 0)))),
    "swish": (tf.nn.swish, lambda x: x * sigmoid(x),
              lambda x: sigmoid(x) + x * sigmoid(x) * (1 - sigmoid(x))),
    "log_sigmoid": (tf.log_sigmoid, lambda x: -np.logaddexp(0, -x), lambda x: sigmoid(-x)),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_and_gradients_match_numpy_for_any_magnitude(name):
    fn, ref, dref = ACTIVATIONS[name]
    x = np.concatenate([WIDE, [6.0, 7.0]])
    y, dy = value_and_grad(fn, x)
    assert np.all(np.isfinite(y)) and np.all(np.isfinite(dy)), (y, dy)
    np.testing.assert_allclose(y, ref(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dy, dref(x), rtol=1e-5, atol=1e-6)
    y64, dy64 = value_and_grad(fn, x, np.float64)
    np.testing.assert_allclose(y64, ref(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dy64, dref(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["softplus", "softsign", "elu", "selu", "log_sigmoid"])
def test_activation_gradients_match_finite_differences(name):
    fn = ACTIVATIONS[name][0]
    x0 = np.array([[-4.0, -1.3, -0.2], [0.3, 1.7, 5.0]])
    check_finite_differences(fn, x0)


def test_activations_refuse_integer_input():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="softplus.*int32"):
            tf.nn.softplus(tf.constant([1, 2]))


# ---- sigmoid losses ----------------------------------------------------------------------------


def test_sigmoid_cross_entropy_is_stable_and_its_gradient_is_sigmoid_minus_labels():
    rng = np.random.RandomState(1)
    x = WIDE
    z = rng.uniform(0, 1, size=x.shape)
    z[0], z[-1] = 0.0, 1.0
    g = tf.Graph()
    with g.as_default():
        logits = tf.placeholder(tf.float64, x.shape)
        labels = tf.constant(z)
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        d_logits, d_labels = tf.gradients(tf.reduce_sum(loss), [logits, labels])
        value, dx, dz = run([loss, d_logits, d_labels], {logits: x})
    # (The engine's Exp gives a denormal rather than 0 far below its range: hence atol.)
    np.testing.assert_allclose(value, np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))),
                               rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(dx, sigmoid(x) - z, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(dz, -x)
    m = np.abs(x) < 30   # where the textbook form is still computable (and less exact)
    naive = -z[m] * np.log(sigmoid(x[m])) - (1 - z[m]) * np.log(1 - sigmoid(x[m]))
    np.testing.assert_allclose(value[m], naive, rtol=1e-6)


def test_sigmoid_cross_entropy_float32_and_errors():
    with tf.Graph().as_default():
        x = tf.constant(WIDE.astype(np.float32))
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=np.zeros(WIDE.shape), logits=x)
        (dx,) = tf.gradients(tf.reduce_sum(loss), [x])
        value, grad = run([loss, dx])
        np.testing.assert_allclose(value, np.logaddexp(0, WIDE), rtol=1e-6, atol=1e-37)
        np.testing.assert_allclose(grad, sigmoid(WIDE), rtol=1e-6, atol=1e-7)
        with pytest.raises(ValueError, match="same shape"):
            tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros([3]), logits=tf.zeros([2]))
        with pytest.raises(ValueError, match="by name"):
            tf.nn.sigmoid_cross_entropy_with_logits(tf.zeros([2]), tf.zeros([2]))
        with pytest.raises(ValueError, match="labels= and logits="):
            tf.nn.sigmoid_cross_entropy_with_logits(logits=tf.zeros([2]))
        with pytest.raises(TypeError, match="dtype of logits"):
            tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros([2], tf.float64),
                                                    logits=tf.zeros([2]))


def test_weighted_cross_entropy_weighs_the_positive_term():
    x = WIDE
    z = np.linspace(0, 1, x.size)
    q = 3.0
    g = tf.Graph()
    with g.as_default():
        logits = tf.placeholder(tf.float64, x.shape)
        loss = tf.nn.weighted_cross_entropy_with_logits(targets=tf.constant(z), logits=logits,
                                                        pos_weight=q)
        same = tf.nn.weighted_cross_entropy_with_logits(labels=tf.constant(z), logits=logits,
                                                        pos_weight=1.0)
        plain = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(z), logits=logits)
        (dx,) = tf.gradients(tf.reduce_sum(loss), [logits])
        value, grad, same_v, plain_v = run([loss, dx, same, plain], {logits: x})
    weight = 1 + (q - 1) * z
    np.testing.assert_allclose(value, (1 - z) * x + weight * (np.log1p(np.exp(-np.abs(x)))
                                                              + np.maximum(-x, 0)), rtol=1e-12)
    np.testing.assert_allclose(grad, (1 - z) - weight * sigmoid(-x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(same_v, plain_v, rtol=1e-12, atol=1e-12)
    m = np.abs(x) < 30
    naive = -q * z[m] * np.log(sigmoid(x[m])) - (1 - z[m]) * np.log(1 - sigmoid(x[m]))
    np.testing.assert_allclose(value[m], naive, rtol=1e-6)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="pos_weight"):
            tf.nn.weighted_cross_entropy_with_logits(targets=tf.zeros([2]), logits=tf.zeros([2]))


def test_losses_sigmoid_cross_entropy_is_the_mean_and_is_collected():
    with tf.Graph().as_default():
        labels = np.array([[0, 1], [1, 1]], np.float32)
        logits = np.array([[-2.0, 0.5], [3.0, -1.0]], np.float32)
        loss = tf.losses.sigmoid_cross_entropy(labels, tf.constant(logits))
        assert tf.losses.get_losses() == [loss]
        expected = np.mean(np.maximum(logits, 0) - logits * labels
                           + np.log1p(np.exp(-np.abs(logits))))
        np.testing.assert_allclose(run(loss), expected, rtol=1e-6)


def test_sigmoid_losses_match_finite_differences():
    z = np.array([[0.0, 0.3, 1.0], [1.0, 0.5, 0.0]])
    x0 = np.array([[-4.0, -0.7, 0.2], [0.9, 2.5, 6.0]])
    check_finite_differences(
        lambda x: tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(z), logits=x), x0)
    check_finite_differences(
        lambda x: tf.nn.weighted_cross_entropy_with_logits(tf.constant(z), x, 2.5), x0)


# ---- l2_normalize, in_top_k --------------------------------------------------------------------


def test_l2_normalize_along_an_axis_all_axes_and_a_zero_row():
    x = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [1.0, -2.0, 2.0]])
    with tf.Graph().as_default():
        t = tf.constant(x)
        rows, whole, by_dim = run([tf.nn.l2_normalize(t, axis=1), tf.nn.l2_normalize(t),
                                   tf.nn.l2_normalize(t, dim=0)])
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(rows, x / np.maximum(norms, 1e-6))
    assert np.all(rows[1] == 0)          # epsilon: zeros, not NaN
    np.testing.assert_allclose(whole, x / np.linalg.norm(x))
    np.testing.assert_allclose(by_dim, x / np.maximum(np.linalg.norm(x, axis=0), 1e-6))
    check_finite_differences(lambda v: tf.nn.l2_normalize(v, axis=1),
                             np.array([[0.3, -1.2, 2.0], [1.5, 0.4, -0.7]]))
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="axis or dim"):
            tf.nn.l2_normalize(tf.zeros([2]), axis=0, dim=0)


def in_top_k_reference(p, t, k):
    out = []
    for row, target in zip(p, t):
        if not 0 <= target < row.size or not np.isfinite(row[target]):
            out.append(False)
        else:
            out.append(int(np.sum(row > row[target])) < k)
    return np.array(out)


def test_in_top_k_counts_ties_as_in_and_refuses_bad_targets():
    p = np.array([[0.1, 0.5, 0.5, 0.2],
                  [4.0, 3.0, 2.0, 1.0],
                  [4.0, 3.0, 2.0, 1.0],
                  [1.0, np.inf, 0.0, 2.0],
                  [1.0, np.nan, 0.0, 2.0],
                  [1.0, 2.0, 3.0, 4.0]], np.float32)
    t = np.array([2, 1, 3, 1, 1, 7], np.int32)
    with tf.Graph().as_default():
        preds = tf.constant(p)
        for k in (1, 2, 3, 4):
            got = run(tf.nn.in_top_k(preds, tf.constant(t), k))
            np.testing.assert_array_equal(got, in_top_k_reference(p, t, k))
        kt = tf.placeholder(tf.int32, [])
        np.testing.assert_array_equal(run(tf.math.in_top_k(preds, tf.constant(t, tf.int64), kt),
                                          {kt: 2}), in_top_k_reference(p, t, 2))
        with pytest.raises(TypeError, match="targets"):
            tf.nn.in_top_k(preds, tf.constant(t.astype(np.float32)), 1)
        with pytest.raises(TypeError, match="k must be an int"):
            tf.nn.in_top_k(preds, tf.constant(t), 1.5)


# ---- math composites ---------------------------------------------------------------------------


def test_reduce_logsumexp_is_stable_and_its_gradient_is_softmax():
    x = np.array([[1000.0, 1000.0, 999.0], [-1000.0, -1001.0, -999.5], [0.5, -0.2, 3.0]])
    g = tf.Graph()
    with g.as_default():
        t = tf.placeholder(tf.float64, x.shape)
        rows = tf.reduce_logsumexp(t, axis=1)
        kept = tf.reduce_logsumexp(t, 1, keepdims=True)
        whole = tf.reduce_logsumexp(t)
        old = tf.reduce_logsumexp(t, reduction_indices=[0], keep_dims=True)
        (d,) = tf.gradients(tf.reduce_sum(rows), [t])
        r, k, w, o, grad = run([rows, kept, whole, old, d], {t: x})
    m = x.max(axis=1, keepdims=True)
    expected = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))
    np.testing.assert_allclose(r, expected[:, 0], rtol=1e-12)
    np.testing.assert_allclose(k, expected, rtol=1e-12)
    assert k.shape == (3, 1) and np.ndim(w) == 0 and o.shape == (1, 3)
    np.testing.assert_allclose(w, np.logaddexp.reduce(x.ravel()), rtol=1e-12)
    np.testing.assert_allclose(o, np.logaddexp.reduce(x, axis=0)[None], rtol=1e-12)
    np.testing.assert_allclose(grad, np.exp(x - expected), rtol=1e-12)
    with tf.Graph().as_default():
        minus_inf = run(tf.reduce_logsumexp(tf.constant([[-np.inf, -np.inf], [0.0, -np.inf]]),
                                            axis=1))
    assert minus_inf[0] == -np.inf and minus_inf[1] == 0.0


def test_casts_size_rank_and_count_nonzero():
    x = np.array([[1.5, 0.0, -2.0], [0.0, 0.0, 3.0]], np.float32)
    with tf.Graph().as_default():
        t = tf.constant(x)
        f, d, i32, i64 = tf.to_float(tf.constant([1, 2])), tf.to_double(t), tf.to_int32(t), \
            tf.to_int64(t)
        assert (f.dtype, d.dtype, i32.dtype, i64.dtype) == (tf.float32, tf.float64, tf.int32,
                                                            tf.int64)
        ph = tf.placeholder(tf.float32, [None, 3])
        unknown = tf.placeholder(tf.float32)
        out = run([f, d, i32, i64, tf.size(t), tf.size(ph), tf.size(ph, out_type=tf.int64),
                   tf.rank(t), tf.rank(unknown)],
                  {ph: np.zeros((4, 3), np.float32), unknown: np.zeros((2, 1, 5), np.float32)})
        np.testing.assert_array_equal(out[0], [1.0, 2.0])
        np.testing.assert_array_equal(out[2], x.astype(np.int32))
        assert out[3].dtype == np.int64
        assert out[4:] == [6, 12, 12, 2, 3]
        counts = run([tf.count_nonzero(t), tf.count_nonzero(t, axis=1),
                      tf.count_nonzero(t, 0, keepdims=True, dtype=tf.int32),
                      tf.count_nonzero(tf.constant([True, False, True])),
                      tf.count_nonzero(tf.constant([[0, 7], [5, 0]]), reduction_indices=[1])])
    assert counts[0] == 3 and counts[0].dtype == np.int64
    np.testing.assert_array_equal(counts[1], [2, 1])
    np.testing.assert_array_equal(counts[2], [[1, 0, 2]])
    assert counts[2].dtype == np.int32
    assert counts[3] == 2
    np.testing.assert_array_equal(counts[4], [1, 1])


def test_norm_matches_numpy():
    rng = np.random.RandomState(3)
    x = rng.randn(3, 4)
    with tf.Graph().as_default():
        t = tf.constant(x)
        got = run([tf.norm(t), tf.norm(t, axis=1), tf.norm(t, ord=1, axis=0),
                   tf.norm(t, ord=np.inf, axis=-1, keepdims=True), tf.norm(t, ord=3, axis=1),
                   tf.norm(t, ord=2, axis=1), tf.norm(t, ord="fro", axis=[0, 1]),
                   tf.norm(t, ord=1, axis=(0, 1)), tf.norm(t, ord=np.inf, axis=(0, 1)),
                   tf.norm(t, ord=1), tf.linalg.norm(t, axis=0, keep_dims=True)])
        with pytest.raises(ValueError, match="not supported for matrices"):
            tf.norm(t, ord=2, axis=[0, 1])
        with pytest.raises(ValueError, match="for matrices"):
            tf.norm(t, ord="fro", axis=1)
        with pytest.raises(ValueError, match="ord must be"):
            tf.norm(t, ord=-1)
        with pytest.raises(ValueError, match="pair of ints"):
            tf.norm(t, axis=[0, 1, 2])
    expected = [np.linalg.norm(x), np.linalg.norm(x, axis=1), np.linalg.norm(x, 1, axis=0),
                np.linalg.norm(x, np.inf, axis=-1, keepdims=True), np.linalg.norm(x, 3, axis=1),
                np.linalg.norm(x, 2, axis=1), np.linalg.norm(x, "fro"), np.linalg.norm(x, 1),
                np.linalg.norm(x, np.inf), np.abs(x).sum(),
                np.linalg.norm(x, axis=0, keepdims=True)]
    for g_, e in zip(got, expected):
        np.testing.assert_allclose(g_, e, rtol=1e-12)


def test_eye_and_linspace():
    with tf.Graph().as_default():
        start = tf.placeholder(tf.float64, [])
        got = run([tf.eye(3), tf.eye(2, 4, dtype=tf.int32), tf.eye(2, batch_shape=[3]),
                   tf.linspace(0.0, 1.0, 5), tf.lin_space(start, 3.0, 4),
                   tf.linspace(start, 2.0, 1)], {start: -1.0})
        with pytest.raises(ValueError, match="num"):
            tf.linspace(0.0, 1.0, 0)
        with pytest.raises(ValueError, match="Python int"):
            tf.eye(tf.constant(3))
    np.testing.assert_array_equal(got[0], np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(got[1], np.eye(2, 4, dtype=np.int32))
    np.testing.assert_array_equal(got[2], np.broadcast_to(np.eye(2), (3, 2, 2)))
    np.testing.assert_allclose(got[3], np.linspace(0, 1, 5))
    assert got[3].dtype == np.float32
    np.testing.assert_allclose(got[4], np.linspace(-1, 3, 4), rtol=1e-15)
    assert got[4][0] == -1.0 and got[4][-1] == 3.0 and got[4].dtype == np.float64
    np.testing.assert_array_equal(got[5], [-1.0])


def test_div_no_nan_is_zero_where_the_divisor_is_zero_with_finite_gradients():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0, 3.0])
        y = tf.constant([0.0, 4.0, 0.0])
        q = tf.math.divide_no_nan(x, y)
        dx, dy = tf.gradients(tf.reduce_sum(q), [x, y])
        q_, dx_, dy_ = run([q, dx, dy])
    np.testing.assert_allclose(q_, [0.0, 0.5, 0.0])
    np.testing.assert_allclose(dx_, [0.0, 0.25, 0.0])
    np.testing.assert_allclose(dy_, [0.0, -2.0 / 16, 0.0])


# ---- asserts -----------------------------------------------------------------------------------


def test_asserts_pass_or_fail_the_step_at_run_time():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [None])
        b = tf.placeholder(tf.float32, [None])
        check = tf.assert_equal(a, b, message="a and b differ")
        with tf.control_dependencies([check]):
            total = tf.identity(tf.reduce_sum(a))
        with tf.Session() as s:
            assert s.run(total, {a: [1.0, 2.0], b: [1.0, 2.0]}) == 3.0
            with pytest.raises(errors.InvalidArgumentError, match="a and b differ"):
                s.run(total, {a: [1.0, 2.0], b: [1.0, 2.5]})
            cases = [
                (tf.assert_positive(a), [1.0, 0.5], [1.0, 0.0]),
                (tf.assert_non_negative(a), [0.0, 2.0], [-1.0, 2.0]),
                (tf.assert_negative(a), [-1.0], [0.0]),
                (tf.assert_non_positive(a), [0.0, -3.0], [0.1]),
                (tf.assert_less(a, 2.0), [1.0, 1.5], [2.0]),
                (tf.assert_less_equal(a, 2.0), [2.0], [2.5]),
                (tf.assert_greater(a, 0), [0.5], [0.0]),
                (tf.assert_greater_equal(a, 0), [0.0], [-0.5]),
                (tf.assert_none_equal(a, 1.0), [2.0, 3.0], [2.0, 1.0]),
                (tf.Assert(tf.reduce_all(a > 0), [a]), [1.0], [-1.0]),
            ]
            for op, good, bad in cases:
                s.run(op, {a: good})
                with pytest.raises(errors.InvalidArgumentError, match="did not hold|assertion"):
                    s.run(op, {a: bad})
        with pytest.raises(ValueError, match="rank 2"):
            tf.assert_rank(a, 2)
        tf.assert_rank(a, 1)
        with pytest.raises(TypeError, match="bool"):
            tf.Assert(tf.constant(1.0), [])


def test_assert_rank_checks_at_run_time_when_the_rank_is_unknown():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        check = tf.assert_rank(x, 2, message="want a matrix")
        with tf.Session() as s:
            s.run(check, {x: np.zeros((2, 3), np.float32)})
            with pytest.raises(errors.InvalidArgumentError, match="want a matrix"):
                s.run(check, {x: np.zeros(3, np.float32)})
