"""keras.backend's functions as custom layers, losses and metrics call them (K.argmax, K.equal,
K.switch, K.repeat_elements, K.ctc_batch_cost, ...): values against NumPy."""
import numpy as np
import pytest

import shardflow as tf

keras = tf.keras
K = keras.backend


@pytest.fixture(autouse=True)
def fresh_graph():
    K.clear_session()
    yield
    K.clear_session()


def ev(t, feed=None):
    return K.get_session().run(t, feed)


def test_math_reductions_and_comparisons():
    x = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
    t = K.constant(x)
    np.testing.assert_array_equal(ev(K.argmax(t)), x.argmax(-1))
    np.testing.assert_array_equal(ev(K.argmin(t, axis=0)), x.argmin(0))
    np.testing.assert_array_equal(ev(K.equal(K.argmax(t), K.constant([2, 1], "int64"))),
                                  [True, True])
    np.testing.assert_allclose(ev(K.var(t, axis=1)), x.var(1), rtol=1e-5)
    np.testing.assert_allclose(ev(K.std(t)), x.std(), rtol=1e-5)
    np.testing.assert_allclose(ev(K.prod(t, axis=1, keepdims=True)), x.prod(1, keepdims=True))
    np.testing.assert_allclose(ev(K.logsumexp(t, axis=1)), np.log(np.exp(x).sum(1)), rtol=1e-5)
    np.testing.assert_array_equal(ev(K.any(K.greater(t, 3.5), axis=1)), [False, True])
    np.testing.assert_array_equal(ev(K.all(K.greater(t, -3.0))), True)
    np.testing.assert_allclose(ev(K.l2_normalize(t, axis=-1)),
                               x / np.linalg.norm(x, axis=-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(ev(K.hard_sigmoid(t)), np.clip(0.2 * x + 0.5, 0, 1))
    np.testing.assert_allclose(ev(K.pow(t, 2)), x ** 2)
    np.testing.assert_allclose(ev(K.cumsum(t, axis=1)), x.cumsum(1))
    np.testing.assert_allclose(ev(K.elu(t, 0.5)), np.where(x > 0, x, 0.5 * (np.exp(x) - 1)),
                               rtol=1e-5)


def test_shapes_and_repeats():
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    p = K.placeholder(shape=(None, 3, 2))
    np.testing.assert_array_equal(ev(K.permute_dimensions(p, (0, 2, 1)), {p: x}),
                                  x.transpose(0, 2, 1))
    np.testing.assert_array_equal(ev(K.repeat_elements(p, 2, axis=1), {p: x}),
                                  np.repeat(x, 2, axis=1))
    assert K.int_shape(K.repeat_elements(p, 2, axis=1)) == (None, 6, 2)
    np.testing.assert_array_equal(ev(K.batch_flatten(p), {p: x}), x.reshape(2, -1))
    np.testing.assert_array_equal(ev(K.repeat(K.constant(x[:, 0]), 3)),
                                  np.repeat(x[:, None, 0], 3, axis=1))
    np.testing.assert_array_equal(ev(K.one_hot(K.constant([0, 2], "int32"), 3)),
                                  np.eye(3)[[0, 2]])
    np.testing.assert_array_equal(ev(K.squeeze(K.constant(x[:, :1]), 1)), x[:, 0])
    np.testing.assert_array_equal(ev(K.temporal_padding(K.constant(x), (1, 0))),
                                  np.pad(x, [(0, 0), (1, 0), (0, 0)]))
    img = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    np.testing.assert_array_equal(ev(K.resize_images(K.constant(img), 2, 2, "channels_last")),
                                  img.repeat(2, 1).repeat(2, 2))
    np.testing.assert_array_equal(ev(K.eye(3)), np.eye(3))


def test_switch_and_learning_phase():
    a, b = K.constant([1.0, 2.0]), K.constant([10.0, 20.0])
    flag = K.placeholder(shape=(), dtype="bool")
    chosen = K.switch(flag, lambda: a, lambda: b)
    assert ev(chosen, {flag: True}).tolist() == [1.0, 2.0]
    assert ev(chosen, {flag: False}).tolist() == [10.0, 20.0]
    assert ev(K.switch(K.constant([True, False], "bool"), a, b)).tolist() == [1.0, 20.0]
    per_row = K.switch(K.constant([True, False], "bool"), K.constant([[1.0, 2.0], [3.0, 4.0]]),
                       K.constant([[0.0, 0.0], [0.0, 0.0]]))
    assert ev(per_row).tolist() == [[1.0, 2.0], [0.0, 0.0]]
    phased = K.in_train_phase(a, b)
    assert ev(phased, {K.learning_phase(): True}).tolist() == [1.0, 2.0]
    assert ev(phased, {K.learning_phase(): False}).tolist() == [10.0, 20.0]
    assert K.in_train_phase(a, b, training=0) is b
    assert K.is_keras_tensor(keras.layers.Input((2,))) and not K.is_keras_tensor(a)


def test_updates_and_random():
    v = K.variable(np.zeros(2, np.float32))
    ev(K.update_add(v, K.constant([1.0, 2.0])))
    ev(K.moving_average_update(v, K.constant([11.0, 12.0]), 0.9))
    np.testing.assert_allclose(K.get_value(v), [0.9 + 1.1, 1.8 + 1.2], rtol=1e-6)
    r = ev(K.random_binomial((1000,), p=0.3, seed=1))
    assert set(np.unique(r)) <= {0.0, 1.0} and 0.2 < r.mean() < 0.4
    assert ev(K.random_normal((3, 4), seed=2)).shape == (3, 4)
    assert K.get_uid("dense") + 1 == K.get_uid("dense")
    assert K.tf is tf


def test_sparse_categorical_crossentropy_and_ctc_batch_cost():
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]], np.float32)
    got = ev(K.sparse_categorical_crossentropy(K.constant([[0], [2]], "int32"),
                                               K.constant(probs)))
    np.testing.assert_allclose(got, -np.log([0.7, 0.8]), rtol=1e-5)
    # CTC: two steps, classes {0, blank}; label [0] is "0-", "-0" or "00".
    y_pred = np.array([[[0.6, 0.4], [0.3, 0.7]]], np.float32)
    cost = ev(K.ctc_batch_cost(K.constant([[0]], "int32"), K.constant(y_pred),
                               K.constant([[2]], "int32"), K.constant([[1]], "int32")))
    p = 0.6 * 0.7 + 0.4 * 0.3 + 0.6 * 0.3
    np.testing.assert_allclose(cost, [[-np.log(p)]], rtol=1e-4)
    (decoded,), _ = K.ctc_decode(K.constant(y_pred), K.constant([2], "int32"))
    assert ev(decoded).tolist() == [[0]]
