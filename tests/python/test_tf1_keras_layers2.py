"""tf.keras layers beyond the basic ones: advanced activations, noise, shape, merge (Dot),
Conv2DTranspose / SeparableConv2D / DepthwiseConv2D and LayerNormalization; forward values
against NumPy, training-only layers as the identity at inference, training, and saving."""
import numpy as np
import pytest

import shardflow as tf

keras = tf.keras
L = keras.layers


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


def rand(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def forward(layer, x, training=False):
    """The layer's output on x, in a one-layer Sequential (training: the learning phase fed)."""
    model = keras.Sequential()
    model.add(L.InputLayer(input_shape=x.shape[1:]))
    model.add(layer)
    sess = keras.backend.get_session()
    feed = {model.input: x}
    if training:
        feed[keras.backend.learning_phase()] = True
    return sess.run(model.output, feed)


def test_activation_layers():
    x = rand(4, 3, 5)
    np.testing.assert_allclose(forward(L.LeakyReLU(), x), np.where(x >= 0, x, 0.3 * x),
                               rtol=1e-6)
    np.testing.assert_allclose(forward(L.ELU(alpha=0.5), x),
                               np.where(x > 0, x, 0.5 * (np.exp(x) - 1)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(forward(L.ReLU(), x), np.maximum(x, 0))
    np.testing.assert_allclose(forward(L.ReLU(max_value=0.5), x), np.clip(x, 0, 0.5))
    want = np.where(x >= 0.8, 0.8, np.where(x > 0.2, x, 0.1 * (x - 0.2)))
    np.testing.assert_allclose(forward(L.ReLU(0.8, negative_slope=0.1, threshold=0.2), x), want,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(forward(L.ReLU(negative_slope=0.1), x),
                               np.where(x > 0, x, 0.1 * x), rtol=1e-6)
    np.testing.assert_allclose(forward(L.ThresholdedReLU(theta=0.5), x), np.where(x > 0.5, x, 0))
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(forward(L.Softmax(), x), e / e.sum(-1, keepdims=True), rtol=1e-5)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(forward(L.Softmax(axis=1), x), e / e.sum(1, keepdims=True),
                               rtol=1e-5)
    prelu = L.PReLU(shared_axes=[1])
    np.testing.assert_allclose(forward(prelu, x), np.maximum(x, 0))  # alpha starts at 0
    assert prelu.get_weights()[0].shape == (1, 5)
    alpha = np.linspace(0.1, 0.5, 5).reshape(1, 5).astype(np.float32)
    prelu.set_weights([alpha])
    out = keras.backend.get_session().run(prelu.output, {prelu.input: x})
    np.testing.assert_allclose(out, np.where(x >= 0, x, alpha * x), rtol=1e-6)


def test_noise_layers_are_the_identity_at_inference_and_noisy_in_training():
    x = np.abs(rand(64, 4, 4, 8)) + 0.5
    for layer in (L.GaussianNoise(0.5), L.GaussianDropout(0.3), L.AlphaDropout(0.3),
                  L.SpatialDropout2D(0.5), L.ActivityRegularization(l1=0.1)):
        np.testing.assert_array_equal(forward(layer, x), x)
        keras.backend.clear_session()
    noise = forward(L.GaussianNoise(0.5), x, training=True) - x
    assert abs(noise.std() - 0.5) < 0.05 and abs(noise.mean()) < 0.05
    ratio = forward(L.GaussianDropout(0.2), x, training=True) / x
    assert abs(ratio.mean() - 1) < 0.05 and abs(ratio.std() - 0.5) < 0.05
    rate = 0.3
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * rate
    out = forward(L.AlphaDropout(rate), x, training=True)
    kept = np.isclose(out, a * x + b, rtol=1e-5)
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(out[~kept], a * alpha_p + b, rtol=1e-5)
    out = forward(L.SpatialDropout2D(0.5), x, training=True)
    dropped = (out == 0).all(axis=(1, 2))              # whole channels
    assert 0.35 < dropped.mean() < 0.65
    live = np.broadcast_to(~dropped[:, None, None, :], out.shape)
    np.testing.assert_allclose(out[live], 2 * x[live], rtol=1e-5)
    seq = rand(32, 6, 10)
    out = forward(L.SpatialDropout1D(0.5), seq, training=True)
    zero = out == 0
    assert (zero.all(axis=1) == zero.any(axis=1)).all() and 0.3 < zero.mean() < 0.7


def test_activity_regularization_adds_to_the_model_losses():
    x = rand(8, 5)
    model = keras.Sequential([L.Dense(3, input_shape=(5,)), L.ActivityRegularization(0.1, 0.2)])
    assert len(model.losses) == 1
    sess = keras.backend.get_session()
    h, penalty = sess.run([model.output, model.losses[0]], {model.input: x})
    want = (0.1 * np.abs(h).sum() + 0.2 * np.square(h).sum()) / 8
    np.testing.assert_allclose(penalty, want, rtol=1e-5)


def test_shape_layers():
    x = rand(2, 3, 4)
    img = rand(2, 3, 4, 2)
    np.testing.assert_array_equal(forward(L.Permute((2, 1)), x), x.transpose(0, 2, 1))
    v = rand(2, 5)
    np.testing.assert_array_equal(forward(L.RepeatVector(3), v), np.stack([v] * 3, 1))
    np.testing.assert_array_equal(forward(L.ZeroPadding1D((1, 2)), x),
                                  np.pad(x, [(0, 0), (1, 2), (0, 0)]))
    np.testing.assert_array_equal(forward(L.ZeroPadding2D(((1, 0), (2, 1))), img),
                                  np.pad(img, [(0, 0), (1, 0), (2, 1), (0, 0)]))
    np.testing.assert_array_equal(forward(L.ZeroPadding2D(), img),
                                  np.pad(img, [(0, 0), (1, 1), (1, 1), (0, 0)]))
    np.testing.assert_array_equal(forward(L.Cropping1D((1, 1)), x), x[:, 1:2])
    np.testing.assert_array_equal(forward(L.Cropping2D(((1, 0), (1, 2))), img), img[:, 1:, 1:2])
    np.testing.assert_array_equal(forward(L.UpSampling1D(2), x), x.repeat(2, 1))
    np.testing.assert_array_equal(forward(L.UpSampling2D((2, 3)), img),
                                  img.repeat(2, 1).repeat(3, 2))
    np.testing.assert_allclose(forward(L.UpSampling2D(2, interpolation="bilinear"), img),
                               bilinear(img, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(forward(L.GlobalMaxPooling1D(), x), x.max(1))
    np.testing.assert_allclose(forward(L.GlobalAveragePooling1D(), x), x.mean(1), rtol=1e-6)
    np.testing.assert_allclose(forward(L.GlobalMaxPooling2D(), img), img.max((1, 2)))


def bilinear(img, s):
    """NumPy bilinear resize by an integer factor, half-pixel centers (TF's resize v2)."""
    def axis_weights(n):
        src = (np.arange(n * s) + 0.5) / s - 0.5
        lo = np.floor(src)
        frac = src - lo
        lo_i = np.clip(lo, 0, n - 1).astype(int)
        hi_i = np.clip(lo + 1, 0, n - 1).astype(int)
        m = np.zeros((n * s, n))
        np.add.at(m, (np.arange(n * s), lo_i), 1 - frac)
        np.add.at(m, (np.arange(n * s), hi_i), frac)
        return m
    mh, mw = axis_weights(img.shape[1]), axis_weights(img.shape[2])
    return np.einsum("ih,bhwc,jw->bijc", mh, img, mw)


def test_dot_merge_layer():
    a, b = rand(4, 5), rand(4, 5, seed=1)
    xa, xb = L.Input(shape=(5,)), L.Input(shape=(5,))
    out = L.Dot(axes=1)([xa, xb])
    cos = L.dot([xa, xb], axes=-1, normalize=True)
    sess = keras.backend.get_session()
    got, got_cos = sess.run([out, cos], {xa: a, xb: b})
    np.testing.assert_allclose(got, (a * b).sum(1, keepdims=True), rtol=1e-5)
    na, nb = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1,
                                                                              keepdims=True)
    np.testing.assert_allclose(got_cos, (na * nb).sum(1, keepdims=True), rtol=1e-5)
    p, q = rand(4, 3, 5), rand(4, 5, 2, seed=2)
    xp, xq = L.Input(shape=(3, 5)), L.Input(shape=(5, 2))
    out = L.Dot(axes=(2, 1))([xp, xq])
    r = rand(4, 3, 2, seed=3)
    xr = L.Input(shape=(3, 2))
    out2 = L.Dot(axes=1)([xp, xr])       # contract the 3s: [4, 5, 2]
    got, got2 = sess.run([out, out2], {xp: p, xq: q, xr: r})
    np.testing.assert_allclose(got, p @ q, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got2, np.einsum("bik,bij->bkj", p, r), rtol=1e-5, atol=1e-6)
    model = keras.Model([xa, xb], L.Dot(axes=1)([xa, xb]))
    assert model.output.shape.as_list() == [None, 1]


def test_conv_layers_forward():
    x = rand(2, 5, 6, 3)
    sess = keras.backend.get_session()
    layer = L.Conv2DTranspose(4, (3, 2), strides=(2, 2), padding="valid", use_bias=True,
                              bias_initializer="ones")
    out = forward(layer, x)
    k, bias = layer.get_weights()
    assert k.shape == (3, 2, 4, 3) and out.shape == (2, 11, 12, 4)
    want = np.zeros((2, 11, 12, 4), np.float32)
    for i in range(5):
        for j in range(6):
            want[:, 2 * i:2 * i + 3, 2 * j:2 * j + 2] += np.einsum("bc,hwfc->bhwf", x[:, i, j], k)
    np.testing.assert_allclose(out, want + bias, rtol=1e-4, atol=1e-5)
    assert forward(L.Conv2DTranspose(2, 3, strides=2, padding="same"), x).shape == (2, 10, 12, 2)

    layer = L.DepthwiseConv2D((2, 3), depth_multiplier=2, activation="relu",
                              bias_initializer="ones")
    out = forward(layer, x)
    dk, db = layer.get_weights()
    assert dk.shape == (2, 3, 3, 2) and db.shape == (6,)
    dw = depthwise(x, dk)
    np.testing.assert_allclose(out, np.maximum(dw + db, 0), rtol=1e-4, atol=1e-5)

    layer = L.SeparableConv2D(5, 3, padding="same", depth_multiplier=2)
    out = forward(layer, x)
    dk, pk, b = layer.get_weights()
    padded = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    want = np.einsum("bhwc,cf->bhwf", depthwise(padded, dk), pk[0, 0]) + b
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    del sess


def depthwise(x, k):
    """NumPy 'valid' depthwise convolution: channel c * m + j from x[..., c] and k[..., c, j]."""
    kh, kw, c, m = k.shape
    oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    out = np.zeros((x.shape[0], oh, ow, c, m), np.float32)
    for a in range(kh):
        for b in range(kw):
            out += x[:, a:a + oh, b:b + ow, :, None] * k[a, b]
    return out.reshape(x.shape[0], oh, ow, c * m)


def test_layer_normalization_forward():
    x = rand(4, 3, 6) * 3 + 1
    layer = L.LayerNormalization()
    out = forward(layer, x)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-4)
    gamma, beta = np.arange(1, 7, dtype=np.float32), np.full(6, 0.5, np.float32)
    layer.set_weights([gamma, beta])
    got = keras.backend.get_session().run(layer.output, {layer.input: x})
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-3) * gamma + beta,
                               rtol=1e-4, atol=1e-4)
    out = forward(L.LayerNormalization(axis=[1, 2], epsilon=1e-5, center=False), x)
    mean, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)


def image_data():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 6, 6, 2).astype(np.float32)
    y = (x[..., 0].mean((1, 2)) > x[..., 1].mean((1, 2))).astype(np.int32)
    return x, y


def conv_model(head="flatten"):
    layers = [
        L.ZeroPadding2D(1, input_shape=(6, 6, 2)),
        L.DepthwiseConv2D(3, depth_multiplier=2),
        L.PReLU(shared_axes=[1, 2]),
        L.SeparableConv2D(4, 3, padding="same"),
        L.LayerNormalization(),
        L.SpatialDropout2D(0.1),
        L.Conv2DTranspose(3, 2, strides=2),
        L.LeakyReLU(0.1),
        L.Cropping2D(((1, 1), (1, 1))),
    ]
    if head == "flatten":
        layers += [L.Flatten()]
    else:
        layers += [L.GlobalMaxPooling2D(), L.GaussianNoise(0.01), L.ActivityRegularization(1e-3),
                   L.RepeatVector(2), L.Permute((2, 1)), L.GlobalAveragePooling1D()]
    return keras.Sequential(layers + [L.Dense(2, activation="softmax")])


def test_new_layers_train_in_a_sequential_model():
    x, y = image_data()
    model = conv_model()
    model.compile(keras.optimizers.Adam(lr=0.01), "sparse_categorical_crossentropy")
    before = model.get_weights()
    loss0 = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < loss0 - 0.05
    after = model.get_weights()
    names = [w.name for w in model.weights]
    for name, b, a in zip(names, before, after):
        assert not np.allclose(a, b), name    # every weight (PReLU alpha, conv, norm) trained
    assert any("p_re_lu/alpha" in n for n in names)
    assert any("layer_normalization/gamma" in n for n in names)


def test_save_and_load_round_trip(tmp_path):
    x, y = image_data()
    model = conv_model(head="pooling")
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x, y, epochs=1, batch_size=32, verbose=0)
    want = model.predict(x[:8])
    path = str(tmp_path / "model.h5")
    model.save(path)
    keras.backend.clear_session()
    tf.reset_default_graph()
    loaded = keras.models.load_model(path)
    assert [type(l).__name__ for l in loaded.layers] == [type(l).__name__ for l in model.layers]
    np.testing.assert_allclose(loaded.predict(x[:8]), want, rtol=1e-4, atol=1e-5)
    assert loaded.layers[2].shared_axes == [1, 2]
    loaded.fit(x, y, epochs=1, batch_size=32, verbose=0)


def test_two_models_from_the_same_code_own_their_weights():
    # A DQN's online and target networks: named layers built twice in one graph get their own
    # weights ("fc1_1/kernel"), as TF1's tf.keras; tf.layers would refuse the second.
    def net():
        return tf.keras.Sequential([
            tf.keras.layers.Dense(4, activation="relu", input_shape=(3,), name="fc1"),
            tf.keras.layers.Dense(2, name="out")])
    x = np.random.RandomState(2).rand(5, 3).astype(np.float32)
    with tf.Graph().as_default():
        online, target = net(), net()
        assert [w.name for w in target.weights] == ["fc1_1/kernel:0", "fc1_1/bias:0",
                                                    "out_1/kernel:0", "out_1/bias:0"]
        online.compile("adam", "mse")
        online.fit(x, np.ones((5, 2)), epochs=2, verbose=0)
        assert not np.allclose(online.predict(x), target.predict(x))
        target.set_weights(online.get_weights())
        np.testing.assert_allclose(online.predict(x), target.predict(x), rtol=1e-6)
        with pytest.raises(ValueError, match="already exists"):
            tf.layers.dense(tf.constant(x), 4, name="fc1")     # tf.layers still refuses


def test_batch_norm_without_scale_or_center_makes_no_gamma_or_beta():
    """As TF1: scale=False makes no gamma (was a gamma fixed at 1), center=False no beta."""
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.batch_normalization(x, scale=False, training=True, name="bn")
    names = sorted(v.op.name for v in tf.global_variables())
    assert names == ["bn/beta", "bn/moving_mean", "bn/moving_variance"]
    layer = keras.layers.BatchNormalization(center=False)
    layer(keras.layers.Input(shape=(3,)))
    assert [w.op.name.rsplit("/", 1)[1] for w in layer.weights] == [
        "gamma", "moving_mean", "moving_variance"]
    xv = np.random.RandomState(0).randn(8, 3).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y, {x: xv})
    np.testing.assert_allclose(out, (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-3), atol=1e-5)


def test_a_deep_residual_chain_builds_and_clones_quickly():
    """Regression: Model found its layers by a walk that pushed a tensor once per path, so
    every residual Add doubled the work (InceptionV3 and DenseNet never finished)."""
    tf.reset_default_graph()
    keras.backend.clear_session()
    inp = keras.layers.Input(shape=(4,))
    h = inp
    for _ in range(40):                                       # 2^40 paths to the input
        h = keras.layers.Add()([h, keras.layers.Dense(4)(h)])
    model = keras.Model(inp, h)
    assert len(model.layers) == 81
    assert len(keras.models.clone_model(model).layers) == 81


def test_backend_batch_dot_as_keras():
    """K.batch_dot in attention written with Lambda layers: [b, m, n] . [b, p, n] along (2, 2),
    the default axes (x's last, y's second-to-last) and two vectors per example; unknown batch."""
    K = keras.backend
    x, y, v = rand(3, 4, 5), rand(3, 6, 5, seed=1), rand(3, 5, seed=2)
    xs = tf.placeholder(tf.float32, [None, 4, 5])
    ys = tf.placeholder(tf.float32, [None, 6, 5])
    vs = tf.placeholder(tf.float32, [None, 5])
    scores = K.batch_dot(xs, ys, axes=[2, 2])
    assert K.int_shape(scores) == (None, 4, 6)
    default = K.batch_dot(xs, tf.transpose(ys, [0, 2, 1]))
    pair = K.batch_dot(vs, vs, axes=1)
    got = K.get_session().run([scores, default, pair], {xs: x, ys: y, vs: v})
    np.testing.assert_allclose(got[0], np.einsum("bmn,bpn->bmp", x, y), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], np.einsum("bmn,bpn->bmp", x, y), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], (v * v).sum(1, keepdims=True), rtol=1e-5)
