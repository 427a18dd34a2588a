"""Dilated (atrous) convolutions: tf.nn.conv2d(dilations=...), tf.nn.atrous_conv2d, conv1d and
depthwise/separable with a rate, tf.layers/keras dilation_rate — against a direct NumPy
dilated convolution, and their gradients against finite differences."""
import numpy as np
import pytest

import shardflow as tf
from grad_check import check_gradient


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def reference(x, w, rh, rw, padding):
    """Direct dilated convolution, NHWC x [N, H, W, C], w [kh, kw, C, K], stride 1."""
    n, h, wd, c = x.shape
    kh, kw, _, k = w.shape
    eh, ew = (kh - 1) * rh + 1, (kw - 1) * rw + 1
    if padding == "SAME":
        th, tw = eh - 1, ew - 1
        x = np.pad(x, [(0, 0), (th // 2, th - th // 2), (tw // 2, tw - tw // 2), (0, 0)])
    oh, ow = x.shape[1] - eh + 1, x.shape[2] - ew + 1
    out = np.zeros((n, oh, ow, k))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i * rh:i * rh + oh, j * rw:j * rw + ow, :]
            out += np.einsum("nhwc,ck->nhwk", patch, w[i, j])
    return out


@pytest.mark.parametrize("shape,kernel,rates,padding", [
    ((2, 9, 9, 3), (3, 3), (2, 2), "SAME"),
    ((1, 10, 7, 2), (3, 3), (2, 3), "SAME"),
    ((2, 11, 11, 1), (3, 2), (3, 3), "VALID"),
    ((1, 10, 8, 2), (5, 5), (2, 1), "VALID"),
])
def test_conv2d_dilations_match_numpy(shape, kernel, rates, padding):
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal(shape).astype(np.float32)
    w0 = rng.standard_normal(kernel + (shape[3], 4)).astype(np.float32)
    x = tf.placeholder(tf.float32, shape)
    y = tf.nn.conv2d(x, tf.constant(w0), strides=[1, 1, 1, 1], padding=padding,
                     dilations=[1, rates[0], rates[1], 1])
    want = reference(x0.astype(np.float64), w0.astype(np.float64), rates[0], rates[1], padding)
    assert y.shape.as_list() == list(want.shape)
    with tf.Session() as sess:
        got = sess.run(y, {x: x0})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_atrous_conv2d_and_its_gradients():
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((1, 7, 6, 2))
    w0 = rng.standard_normal((3, 3, 2, 2))
    with tf.Session() as sess:
        got = sess.run(tf.nn.atrous_conv2d(tf.constant(x0.astype(np.float32)),
                                           tf.constant(w0.astype(np.float32)), 2, "SAME"))
    np.testing.assert_allclose(got, reference(x0, w0, 2, 2, "SAME"), rtol=1e-4, atol=1e-4)
    check_gradient(lambda x, w: tf.nn.atrous_conv2d(x, w, rate=2, padding="SAME"), x0, w0,
                   rng=rng, h=1e-2, rtol=2e-2, atol=2e-2, dtype=np.float32)
    check_gradient(lambda x, w: tf.nn.atrous_conv2d(x, w, rate=2, padding="VALID"), x0, w0,
                   rng=rng, h=1e-2, rtol=2e-2, atol=2e-2, dtype=np.float32)


def test_conv1d_depthwise_and_separable_with_a_rate():
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((2, 12, 3)).astype(np.float32)
    w0 = rng.standard_normal((3, 3, 5)).astype(np.float32)
    y = tf.nn.conv1d(tf.constant(x0), tf.constant(w0), stride=1, padding="SAME", dilations=2)
    want = reference(x0[:, None].astype(np.float64), w0[None].astype(np.float64), 1, 2,
                     "SAME")[:, 0]
    img = rng.standard_normal((1, 8, 8, 2)).astype(np.float32)
    dw = rng.standard_normal((3, 3, 2, 1)).astype(np.float32)
    d = tf.nn.depthwise_conv2d(tf.constant(img), tf.constant(dw), [1, 1, 1, 1], "SAME", rate=[2, 2])
    want_d = np.concatenate([reference(img[..., c:c + 1].astype(np.float64),
                                       dw[:, :, c:c + 1].astype(np.float64), 2, 2, "SAME")
                             for c in range(2)], axis=3)
    pw = rng.standard_normal((1, 1, 2, 3)).astype(np.float32)
    sep = tf.nn.separable_conv2d(tf.constant(img), tf.constant(dw), tf.constant(pw),
                                 [1, 1, 1, 1], "SAME", rate=[2, 2])
    with tf.Session() as sess:
        got, got_d, got_sep = sess.run([y, d, sep])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_d, want_d, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_sep, np.einsum("nhwc,ck->nhwk", want_d, pw[0, 0]),
                               rtol=1e-4, atol=1e-4)


def test_layers_and_keras_dilation_rate_train():
    rng = np.random.default_rng(4)
    x0 = rng.standard_normal((4, 10, 10, 1)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 10, 10, 1])
    h = tf.layers.conv2d(x, 3, 3, padding="same", dilation_rate=2, name="dil")
    k = tf.keras.layers.Conv2D(2, 3, dilation_rate=(2, 2), padding="valid")(h)
    assert h.shape.as_list() == [None, 10, 10, 3]
    assert k.shape.as_list() == [None, 6, 6, 2]
    loss = tf.reduce_mean(tf.square(k))
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    kernel = [v for v in tf.global_variables() if v.name.startswith("dil/kernel")][0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(loss, {x: x0})
        w_before = sess.run(kernel)
        for _ in range(5):
            sess.run(train, {x: x0})
        assert sess.run(loss, {x: x0}) < before
        assert not np.allclose(sess.run(kernel), w_before)


def test_bad_dilations_are_clear_errors():
    x = tf.placeholder(tf.float32, [1, 8, 8, 1])
    w = tf.constant(np.ones((3, 3, 1, 1), np.float32))
    with pytest.raises(ValueError, match="strides 1"):
        tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME", dilations=[1, 2, 2, 1])
    with pytest.raises(ValueError, match="rate"):
        tf.nn.atrous_conv2d(x, w, rate=0, padding="SAME")
    with pytest.raises(ValueError, match="known"):
        tf.nn.atrous_conv2d(tf.placeholder(tf.float32, [1, None, 8, 1]), w, 2, "SAME")
    with pytest.raises(ValueError, match="covers more"):
        tf.nn.atrous_conv2d(tf.placeholder(tf.float32, [1, 4, 4, 1]), w, 3, "VALID")
