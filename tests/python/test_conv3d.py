"""3-D convolution and pooling (tf.nn.conv3d, conv3d_transpose, max_pool3d, avg_pool3d, their
layers in tf.layers and tf.keras.layers) against NumPy references computed in float64."""
import numpy as np
import pytest

import shardflow as tf
from shardflow import keras
from shardflow.ops import _out


def ref_conv3d(x, w, strides, padding, rates=(1, 1, 1)):
    """Cross-correlation of NDHWC x with [kd, kh, kw, in, out] w, TF's SAME / VALID rules."""
    n = x.shape[0]
    spans = [(k - 1) * r + 1 for k, r in zip(w.shape[:3], rates)]
    outs, pads = [], []
    for size, span, s in zip(x.shape[1:4], spans, strides):
        if padding == "SAME":
            o = -(-size // s)
            total = max((o - 1) * s + span - size, 0)
            pads.append((total // 2, total - total // 2))
        else:
            o = (size - span) // s + 1
            pads.append((0, 0))
        outs.append(o)
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    y = np.zeros([n] + outs + [w.shape[4]])
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            for k in range(w.shape[2]):
                z0, y0, x0 = i * rates[0], j * rates[1], k * rates[2]
                patch = xp[:, z0:z0 + outs[0] * strides[0]:strides[0],
                           y0:y0 + outs[1] * strides[1]:strides[1],
                           x0:x0 + outs[2] * strides[2]:strides[2], :]
                y += patch @ w[i, j, k]
    return y


def ref_pool3d(x, k, s, padding, reduce):
    outs, pads = [], []
    for size, kk, st in zip(x.shape[1:4], k, s):
        if padding == "SAME":
            o = -(-size // st)
            pads.append(max((o - 1) * st + kk - size, 0) // 2)
        else:
            o = (size - kk) // st + 1
            pads.append(0)
        outs.append(o)
    y = np.zeros([x.shape[0]] + outs + [x.shape[4]])
    for a in range(outs[0]):
        for b in range(outs[1]):
            for c in range(outs[2]):
                z0, y0, x0 = a * s[0] - pads[0], b * s[1] - pads[1], c * s[2] - pads[2]
                win = x[:, max(z0, 0):z0 + k[0], max(y0, 0):y0 + k[1], max(x0, 0):x0 + k[2], :]
                y[:, a, b, c, :] = reduce(win.reshape(x.shape[0], -1, x.shape[4]), axis=1)
    return y


CONV_CASES = [((2, 5, 6, 7, 3), (3, 3, 2, 3, 4), (1, 1, 1), "SAME", (1, 1, 1)),
              ((1, 6, 5, 7, 2), (2, 3, 3, 2, 3), (2, 1, 2), "VALID", (1, 1, 1)),
              ((1, 7, 7, 6, 2), (3, 2, 2, 2, 2), (1, 1, 1), "SAME", (2, 1, 2))]


@pytest.mark.parametrize("xs,ws,strides,padding,rates", CONV_CASES)
def test_conv3d_values_and_gradients(xs, ws, strides, padding, rates):
    rng = np.random.RandomState(sum(xs))
    x = rng.randn(*xs).astype(np.float32)
    w = rng.randn(*ws).astype(np.float32)
    dy_shape = ref_conv3d(x, w, strides, padding, rates).shape
    dy = rng.randn(*dy_shape).astype(np.float32)
    tf.reset_default_graph()
    xt, wt = tf.constant(x), tf.constant(w)
    y = tf.nn.conv3d(xt, wt, strides=[1, *strides, 1], padding=padding,
                     dilations=[1, *rates, 1])
    assert y.shape.as_list() == list(dy_shape)
    gx, gw = tf.gradients(tf.reduce_sum(y * dy), [xt, wt])
    with tf.Session() as sess:
        yv, gxv, gwv = sess.run([y, gx, gw])
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    np.testing.assert_allclose(yv, ref_conv3d(x64, w64, strides, padding, rates), atol=1e-4)
    # The gradient of sum(conv(x, w) * dy) is linear in x and w: check it through the
    # reference by contracting with the basis directions (each entry's derivative).
    flat_gx = np.zeros(x.size)
    for i in rng.choice(x.size, 12, replace=False):
        e = np.zeros(x.size)
        e[i] = 1
        flat_gx[i] = np.sum(ref_conv3d(e.reshape(x.shape), w64, strides, padding, rates) * dy64)
        assert gxv.reshape(-1)[i] == pytest.approx(flat_gx[i], abs=1e-3)
    for i in rng.choice(w.size, 8, replace=False):
        e = np.zeros(w.size)
        e[i] = 1
        want = np.sum(ref_conv3d(x64, e.reshape(w.shape), strides, padding, rates) * dy64)
        assert gwv.reshape(-1)[i] == pytest.approx(want, abs=1e-3)


def test_conv3d_transpose_is_the_adjoint_of_conv3d():
    rng = np.random.RandomState(3)
    x = rng.randn(2, 6, 6, 4, 2).astype(np.float32)
    w = rng.randn(3, 3, 3, 2, 5).astype(np.float32)
    v = rng.randn(2, 3, 3, 2, 5).astype(np.float32)
    tf.reset_default_graph()
    fwd = tf.nn.conv3d(tf.constant(x), tf.constant(w), [1, 2, 2, 2, 1], "SAME")
    back = tf.nn.conv3d_transpose(tf.constant(v), tf.constant(w), [2, 6, 6, 4, 2],
                                  [1, 2, 2, 2, 1], "SAME")
    with tf.Session() as sess:
        f, b = sess.run([fwd, back])
    assert b.shape == x.shape
    # <conv(x), v> == <x, conv^T(v)>
    assert np.sum(f * v) == pytest.approx(np.sum(x * b), rel=1e-4)


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_pool3d_values_and_gradients(padding):
    rng = np.random.RandomState(5)
    # Distinct values, so each window has one maximum.
    x = (rng.permutation(2 * 5 * 6 * 7 * 3) * 0.01).reshape(2, 5, 6, 7, 3).astype(np.float32)
    k, s = (2, 3, 2), (2, 2, 1)
    tf.reset_default_graph()
    xt = tf.constant(x)
    mp = tf.nn.max_pool3d(xt, [1, *k, 1], [1, *s, 1], padding)
    ap = tf.nn.avg_pool3d(xt, [1, *k, 1], [1, *s, 1], padding)
    pooled = tf.nn.pool(xt, k, "MAX", padding, strides=s)
    gm = tf.gradients(tf.reduce_sum(mp), xt)[0]
    ga = tf.gradients(tf.reduce_sum(ap), xt)[0]
    with tf.Session() as sess:
        m, a, p, gmv, gav = sess.run([mp, ap, pooled, gm, ga])
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(m, ref_pool3d(x64, k, s, padding, np.max), atol=1e-6)
    np.testing.assert_allclose(a, ref_pool3d(x64, k, s, padding, np.mean), atol=1e-5)
    np.testing.assert_array_equal(p, m)
    # Max: each window's gradient (1) lands on its maximum; the counts per input position.
    counts = np.zeros(x.size)
    ref = ref_pool3d(x64, k, s, padding, np.max)
    for value in ref.reshape(-1):
        counts[np.flatnonzero(np.isclose(x64.reshape(-1), value))] += 1
    np.testing.assert_allclose(gmv.reshape(-1), counts)
    # Average: the gradient of the total mean mass is the sum over windows of 1 / count; its
    # total equals the number of windows.
    assert gav.sum() == pytest.approx(ref.size, rel=1e-5)


def test_max_pool3d_gradient_goes_to_the_first_maximum():
    x = np.zeros((1, 2, 2, 2, 1), np.float32)  # every position ties
    tf.reset_default_graph()
    xt = tf.constant(x)
    g = tf.gradients(tf.reduce_sum(tf.nn.max_pool3d(xt, 2, 2, "VALID")), xt)[0]
    with tf.Session() as sess:
        gv = sess.run(g)
    assert gv.reshape(-1).tolist() == [1, 0, 0, 0, 0, 0, 0, 0]


def test_bad_input_is_refused_with_a_clear_error():
    tf.reset_default_graph()
    with pytest.raises(ValueError, match="NDHWC"):
        tf.nn.conv3d(tf.zeros([1, 2, 4, 4, 4]), tf.zeros([1, 1, 1, 2, 2]), [1] * 5, "SAME",
                     data_format="NCDHW")
    with pytest.raises(Exception, match="channels"):
        tf.nn.conv3d(tf.zeros([1, 4, 4, 4, 3]), tf.zeros([1, 1, 1, 2, 2]), [1] * 5, "SAME")
    with pytest.raises(Exception, match="strides"):
        tf.nn.conv3d(tf.zeros([1, 4, 4, 4, 2]), tf.zeros([1, 1, 1, 2, 2]), [2, 1, 1, 1, 1],
                     "SAME")
    # Sizes from a feed (no build-time check): a huge or inconsistent input_sizes fails the
    # step with an error naming it, and the session still runs.
    sizes = tf.placeholder(tf.int32, [5])
    w = tf.zeros([2, 2, 2, 1, 1])
    dy = tf.zeros([1, 1, 1, 1, 1])
    dx = _out("Conv3DBackpropInputV2", [sizes, w, dy],
              {"strides": [1, 1, 1, 1, 1], "padding": "VALID"}, None)
    ok = tf.reduce_sum(dy)
    with tf.Session() as sess:
        for bad in ([1, 2**30, 2**30, 2**30, 1], [1, 3, 3, 3, 1], [1, -2, 2, 2, 1]):
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(dx, {sizes: bad})
        assert sess.run(dx, {sizes: [1, 2, 2, 2, 1]}).shape == (1, 2, 2, 2, 1)
        assert sess.run(ok) == 0


def test_tf_layers_3d_variables_and_shapes():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 8, 8, 8, 1])
    h = tf.layers.conv3d(x, 4, 3, padding="same", activation=tf.nn.relu, name="c1")
    h = tf.layers.max_pooling3d(h, 2, 2)
    h = tf.layers.average_pooling3d(h, 2, 2)
    u = tf.layers.conv3d_transpose(h, 2, 3, strides=2, padding="same", name="up")
    conv = tf.nn.convolution(x, tf.ones([2, 2, 2, 1, 1]), "VALID", strides=[2, 2, 2])
    assert h.shape.as_list() == [None, 2, 2, 2, 4]
    assert u.shape.as_list() == [None, 4, 4, 4, 2]
    assert conv.shape.as_list() == [None, 4, 4, 4, 1]
    shapes = {v.name: v.shape.as_list() for v in tf.trainable_variables()}
    assert shapes == {"c1/kernel:0": [3, 3, 3, 1, 4], "c1/bias:0": [4],
                      "up/kernel:0": [3, 3, 3, 2, 4], "up/bias:0": [2]}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(conv, {x: np.ones([1, 8, 8, 8, 1])})
    np.testing.assert_allclose(out, 8.0)


def test_keras_3d_model_trains_and_round_trips():
    tf.reset_default_graph()
    rng = np.random.RandomState(0)
    x = rng.rand(32, 4, 6, 6, 1).astype(np.float32)
    y = (x[:, :2].mean(axis=(1, 2, 3, 4)) > x[:, 2:].mean(axis=(1, 2, 3, 4))).astype(np.int32)
    layers = keras.layers
    model = keras.Sequential([
        layers.Conv3D(4, 3, activation="relu", padding="same", input_shape=(4, 6, 6, 1)),
        layers.MaxPooling3D(2), layers.ZeroPadding3D(1), layers.Cropping3D(((1, 0), (0, 1), 1)),
        layers.UpSampling3D((1, 2, 1)), layers.Conv3DTranspose(2, 2, strides=2),
        layers.AveragePooling3D(2), layers.GlobalMaxPooling3D(), layers.Dense(2)])
    assert model.output_shape == (None, 2)
    assert [tuple(layer.output_shape) for layer in model.layers[:7]] == [
        (None, 4, 6, 6, 4), (None, 2, 3, 3, 4), (None, 4, 5, 5, 4), (None, 3, 4, 3, 4),
        (None, 3, 8, 3, 4), (None, 6, 16, 6, 2), (None, 3, 8, 3, 2)]
    model.compile(keras.optimizers.Adam(0.01),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    first = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < first
    clone = keras.models.model_from_json(model.to_json())
    assert [type(layer).__name__ for layer in clone.layers] == [
        type(layer).__name__ for layer in model.layers]
