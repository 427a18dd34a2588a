"""TF1 names composed in Python from the engine's ops, against NumPy: sequence_mask,
broadcast_to, meshgrid, tensordot, einsum, reverse_sequence, map_fn/scan/foldl/foldr,
reduce_std/reduce_variance, relu_layer, zero_fraction, orthogonal_initializer, tf.print,
multinomial/categorical, random_crop, tf.image, static and bidirectional RNNs and
tf.contrib.layers' layer functions. Gradients of the composites that carry them are checked
against central differences."""

import numpy as np
import pytest

import shardflow as tf

import grad_check  # tests/python/grad_check.py

RNG = np.random.RandomState(0)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


def check_gradient(fn, *x0s, **kwargs):
    grad_check.check_gradient(fn, *x0s, rng=RNG, **kwargs)


# ---- array composites ----------------------------------------------------------------------


def test_sequence_mask():
    lengths = np.array([1, 3, 0])
    expected = np.arange(4)[None, :] < lengths[:, None]
    np.testing.assert_array_equal(run(tf.sequence_mask(lengths, 4)), expected)
    np.testing.assert_array_equal(run(tf.sequence_mask(lengths)), expected[:, :3])
    f = run(tf.sequence_mask(tf.constant([[2], [1]]), 3, dtype=tf.float32))
    np.testing.assert_array_equal(f, [[[1, 1, 0]], [[1, 0, 0]]])
    assert f.dtype == np.float32


def test_broadcast_to_value_and_gradient():
    x = np.array([[1.0], [2.0]], np.float32)
    np.testing.assert_array_equal(run(tf.broadcast_to(x, [3, 2, 4])),
                                  np.broadcast_to(x, (3, 2, 4)))
    np.testing.assert_array_equal(run(tf.broadcast_to(tf.constant([True, False]), [2, 2])),
                                  [[True, False], [True, False]])
    check_gradient(lambda v: tf.broadcast_to(v, [2, 2, 3]), RNG.randn(2, 1))


def test_meshgrid_both_indexings():
    x, y, z = np.arange(3.0), np.arange(2.0) + 10, np.arange(4.0) - 5
    for indexing in ("xy", "ij"):
        got = run(tf.meshgrid(x, y, z, indexing=indexing))
        for g, e in zip(got, np.meshgrid(x, y, z, indexing=indexing)):
            np.testing.assert_array_equal(g, e)
    got = run(tf.meshgrid(x, y))
    for g, e in zip(got, np.meshgrid(x, y)):
        np.testing.assert_array_equal(g, e)


def test_reverse_sequence():
    x = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
    lengths = [3, 1]
    expected = x.copy()
    for b, n in enumerate(lengths):
        expected[b, :n] = x[b, :n][::-1]
    got = run(tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0))
    np.testing.assert_array_equal(got, expected)
    # TF1's older argument names, time-major layout.
    got = run(tf.reverse_sequence(np.transpose(x, [1, 0, 2]), lengths, seq_dim=0, batch_dim=1))
    np.testing.assert_array_equal(got, np.transpose(expected, [1, 0, 2]))
    check_gradient(lambda v: tf.reverse_sequence(v, [2, 3], seq_axis=1), RNG.randn(2, 3))


def test_random_crop():
    x = np.arange(5 * 6 * 2, dtype=np.float32).reshape(5, 6, 2)
    for crop in (run(tf.random_crop(x, [3, 4, 2], seed=3)),
                 run(tf.image.random_crop(x, [5, 2, 1]))):
        h, w, c = crop.shape
        found = any(np.array_equal(x[i:i + h, j:j + w, k:k + c], crop)
                    for i in range(6 - h) for j in range(7 - w) for k in range(3 - c))
        assert found
    with pytest.raises(ValueError, match="does not fit"):
        tf.random_crop(x, [6, 1, 1])


def test_multinomial_and_categorical():
    logits = np.log(np.array([[0.7, 0.2, 0.1], [0.0, 0.0, 1.0]], np.float32) + 1e-20)
    draws = run(tf.multinomial(logits, 2000, seed=7))
    assert draws.shape == (2, 2000) and draws.dtype == np.int64
    freq = np.bincount(draws[0], minlength=3) / 2000.0
    np.testing.assert_allclose(freq, [0.7, 0.2, 0.1], atol=0.05)
    assert (draws[1] == 2).all()
    draws = run(tf.random.categorical(logits, 5, dtype=tf.int32))
    assert draws.shape == (2, 5) and draws.dtype == np.int32


def test_print_returns_an_op_that_prints(capfd):
    x = tf.constant([1.0, 2.0])
    op = tf.print("value:", x)
    with tf.control_dependencies([op]):
        y = tf.identity(x) * 2
    np.testing.assert_array_equal(run(y), [2.0, 4.0])
    err = capfd.readouterr().err
    assert "value:" in err and "1" in err and "2" in err


# ---- tensordot and einsum ------------------------------------------------------------------


def test_tensordot_values_and_gradient():
    a, b = RNG.randn(2, 3, 4), RNG.randn(4, 3, 5)
    np.testing.assert_allclose(run(tf.tensordot(a, b, [[1, 2], [1, 0]])),
                               np.tensordot(a, b, [[1, 2], [1, 0]]), rtol=1e-12)
    np.testing.assert_allclose(run(tf.tensordot(a, b[:, 0], 1)), np.tensordot(a, b[:, 0], 1),
                               rtol=1e-12)
    np.testing.assert_allclose(run(tf.tensordot(a[0], b[0], 0)), np.tensordot(a[0], b[0], 0),
                               rtol=1e-12)
    check_gradient(lambda x, y: tf.tensordot(x, y, [[2], [0]]), RNG.randn(2, 2, 3),
                   RNG.randn(3, 2))


def test_tensordot_unknown_batch():
    x = tf.placeholder(tf.float32, [None, 3])
    w = np.ones((3, 2), np.float32)
    out = tf.tensordot(x, w, 1)
    v = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(run(out, {x: v}), v @ w)


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->i", [(2, 3), (2, 3)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ijk,kj->i", [(2, 3, 4), (4, 3)]),
    ("ij,k->i", [(2, 3), (4,)]),
    ("ij->ji", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("ijk->", [(2, 3, 4)]),
    ("ijk->kij", [(2, 3, 4)]),
])
def test_einsum_against_numpy(equation, shapes):
    operands = [RNG.randn(*s) for s in shapes]
    np.testing.assert_allclose(run(tf.einsum(equation, *operands)),
                               np.einsum(equation, *operands), rtol=1e-10, atol=1e-12)


def test_einsum_batch_known_only_at_run_time():
    a = tf.placeholder(tf.float64, [None, 3])
    b = tf.placeholder(tf.float64, [None, 3, 4])
    out = tf.einsum("bi,bij->bj", a, b)
    (da,) = tf.gradients(tf.reduce_sum(out), [a])
    av, bv = RNG.randn(2, 3), RNG.randn(2, 3, 4)
    got, grad = run([out, da], {a: av, b: bv})
    np.testing.assert_allclose(got, np.einsum("bi,bij->bj", av, bv), rtol=1e-10)
    np.testing.assert_allclose(grad, bv.sum(2), rtol=1e-10)


def test_einsum_gradient_and_refusals():
    check_gradient(lambda x, y: tf.einsum("bij,bjk->bki", x, y), RNG.randn(2, 2, 3),
                   RNG.randn(2, 3, 2))
    assert tf.linalg.einsum is tf.einsum
    for bad in ("ii->i", "...i...j,jk->...ik", "ij,jk,kl->il"):
        with pytest.raises(ValueError, match=bad.replace(".", r"\.")):
            tf.einsum(bad, *[np.ones((2, 2))] * (bad.split("->")[0].count(",") + 1))


# ---- map_fn, scan, foldl, foldr ------------------------------------------------------------


def test_map_fn_static_nested_and_gradient():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(run(tf.map_fn(lambda v: v * v, x)), x * x)
    a, b = run(tf.map_fn(lambda p: (p[0] + p[1], p[0] * 2.0), (x, x + 1), dtype=(tf.float32,
                                                                              tf.float32)))
    np.testing.assert_array_equal(a, 2 * x + 1)
    np.testing.assert_array_equal(b, 2 * x)
    check_gradient(lambda v: tf.map_fn(lambda r: tf.reduce_sum(r * r), v), RNG.randn(3, 2))


def test_map_fn_dynamic_leading_dimension():
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.map_fn(lambda v: tf.reduce_sum(v) * 2.0, x)
    (dx,) = tf.gradients(tf.reduce_sum(y * y), [x])
    v = np.arange(8, dtype=np.float32).reshape(4, 2)
    got, grad = run([y, dx], {x: v})
    np.testing.assert_allclose(got, v.sum(1) * 2)
    np.testing.assert_allclose(grad, np.repeat((8 * v.sum(1))[:, None], 2, axis=1))


def test_scan_and_folds():
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    np.testing.assert_array_equal(run(tf.scan(lambda a, v: a + v, x)), np.cumsum(x))
    np.testing.assert_array_equal(run(tf.scan(lambda a, v: a * v, x, initializer=2.0)),
                                  2 * np.cumprod(x))
    np.testing.assert_array_equal(run(tf.scan(lambda a, v: a + v, x, reverse=True)),
                                  np.cumsum(x[::-1])[::-1])
    np.testing.assert_allclose(run(tf.foldl(lambda a, v: a * 10 + v, x)), 1234.0)
    np.testing.assert_allclose(run(tf.foldr(lambda a, v: a * 10 + v, x)), 4321.0)
    np.testing.assert_allclose(run(tf.foldl(lambda a, v: a - v, x, initializer=0.0)), -10.0)
    p = tf.placeholder(tf.float32, [None])
    feed = {p: x}
    np.testing.assert_allclose(run(tf.scan(lambda a, v: a + v, p), feed), np.cumsum(x))
    np.testing.assert_allclose(run(tf.foldl(lambda a, v: a * 10 + v, p), feed), 1234.0)
    np.testing.assert_allclose(run(tf.foldr(lambda a, v: a * 10 + v, p), feed), 4321.0)


# ---- math and nn ---------------------------------------------------------------------------


def test_reduce_std_and_variance():
    x = RNG.randn(3, 4).astype(np.float32)
    np.testing.assert_allclose(run(tf.math.reduce_variance(x)), np.var(x), rtol=1e-5)
    np.testing.assert_allclose(run(tf.math.reduce_std(x, axis=1)), np.std(x, axis=1),
                               rtol=1e-5)
    np.testing.assert_allclose(run(tf.math.reduce_std(x, axis=0, keepdims=True)),
                               np.std(x, axis=0, keepdims=True), rtol=1e-5)
    check_gradient(lambda v: tf.math.reduce_std(v, axis=1), RNG.randn(2, 3))


def test_relu_layer_and_zero_fraction():
    x, w, b = RNG.randn(2, 3), RNG.randn(3, 4), RNG.randn(4)
    np.testing.assert_allclose(run(tf.nn.relu_layer(x, w, b)), np.maximum(x @ w + b, 0),
                               rtol=1e-12)
    np.testing.assert_allclose(run(tf.nn.zero_fraction(tf.constant([0.0, 1.0, 0.0, 3.0]))),
                               0.5)
    assert tf.math.zero_fraction is tf.nn.zero_fraction


@pytest.mark.parametrize("shape", [[4, 3], [3, 5], [2, 2, 6]])
def test_orthogonal_initializer(shape):
    v = tf.get_variable("w", shape, initializer=tf.orthogonal_initializer(gain=2.0, seed=1))
    w = tf.Variable(tf.initializers.orthogonal(seed=2)(shape, tf.float32))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b = s.run([v, w])
    for value, gain in ((a, 2.0), (b, 1.0)):
        m = value.reshape(-1, shape[-1])
        small = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
        np.testing.assert_allclose(small, gain ** 2 * np.eye(len(small)), atol=1e-5)


# ---- tf.image ------------------------------------------------------------------------------


def test_image_flips():
    img = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    batch = np.stack([img, img + 100])
    np.testing.assert_array_equal(run(tf.image.flip_left_right(img)), img[:, ::-1])
    np.testing.assert_array_equal(run(tf.image.flip_up_down(img)), img[::-1])
    np.testing.assert_array_equal(run(tf.image.flip_left_right(batch)), batch[:, :, ::-1])
    np.testing.assert_array_equal(run(tf.image.flip_up_down(batch)), batch[:, ::-1])
    seen = set()
    for seed in range(1, 9):
        out = run(tf.image.random_flip_left_right(img, seed=seed))
        assert np.array_equal(out, img) or np.array_equal(out, img[:, ::-1])
        seen.add(np.array_equal(out, img))
    assert seen == {True, False}
    out = run(tf.image.random_flip_up_down(batch, seed=3))
    for i in range(2):
        assert np.array_equal(out[i], batch[i]) or np.array_equal(out[i], batch[i, ::-1])


def test_per_image_standardization():
    batch = RNG.uniform(0, 255, size=(2, 3, 4, 3)).astype(np.float32)
    got = run(tf.image.per_image_standardization(batch))
    for i in range(2):
        x = batch[i]
        expected = (x - x.mean()) / max(x.std(), 1 / np.sqrt(x.size))
        np.testing.assert_allclose(got[i], expected, rtol=1e-4, atol=1e-5)
    flat = np.full((2, 2, 1), 7, np.uint8)
    np.testing.assert_allclose(run(tf.image.per_image_standardization(flat)), 0.0)


def test_convert_image_dtype():
    u8 = np.array([0, 1, 128, 255], np.uint8)
    np.testing.assert_allclose(run(tf.image.convert_image_dtype(u8, tf.float32)), u8 / 255.0,
                               rtol=1e-6)
    f = np.array([0.0, 0.5, 0.999, 1.0, 1.5, -0.2], np.float32)
    np.testing.assert_array_equal(run(tf.image.convert_image_dtype(f, tf.uint8,
                                                                   saturate=True)),
                                  [0, 127, 255, 255, 255, 0])
    np.testing.assert_array_equal(run(tf.image.convert_image_dtype(f[:4], tf.uint8)),
                                  [0, 127, 255, 255])
    np.testing.assert_array_equal(run(tf.image.convert_image_dtype(u8, tf.int32)),
                                  u8.astype(np.int64) * (2 ** 31 // 256))


def test_crops_and_pads():
    img = np.arange(6 * 4 * 2, dtype=np.float32).reshape(6, 4, 2)
    batch = np.stack([img, -img])
    np.testing.assert_array_equal(run(tf.image.crop_to_bounding_box(img, 1, 2, 3, 2)),
                                  img[1:4, 2:4])
    np.testing.assert_array_equal(run(tf.image.crop_to_bounding_box(batch, 1, 0, 2, 3)),
                                  batch[:, 1:3, 0:3])
    padded = run(tf.image.pad_to_bounding_box(img, 1, 2, 8, 7))
    expected = np.zeros((8, 7, 2), np.float32)
    expected[1:7, 2:6] = img
    np.testing.assert_array_equal(padded, expected)
    # Crop the height centrally (6 -> 4: offset 1), pad the width evenly (4 -> 7: offset 1).
    got = run(tf.image.resize_image_with_crop_or_pad(batch, 4, 7))
    expected = np.zeros((2, 4, 7, 2), np.float32)
    expected[:, :, 1:5] = batch[:, 1:5]
    np.testing.assert_array_equal(got, expected)
    # TF1: start = int((size - size * fraction) / 2).
    np.testing.assert_array_equal(run(tf.image.central_crop(img, 0.5)), img[1:5, 1:3])
    np.testing.assert_array_equal(run(tf.image.central_crop(batch, 0.34)), batch[:, 1:5, 1:3])
    with pytest.raises(ValueError, match="does not fit"):
        tf.image.crop_to_bounding_box(img, 4, 0, 3, 1)


def test_grayscale_and_brightness():
    rgb = RNG.uniform(0, 1, size=(2, 2, 3)).astype(np.float32)
    gray = run(tf.image.rgb_to_grayscale(rgb))
    np.testing.assert_allclose(gray, rgb @ np.array([[0.2989], [0.5870], [0.1140]]),
                               rtol=1e-5)
    u8 = np.array([[[10, 20, 30]]], np.uint8)
    expected = np.uint8((u8 / 255.0 @ np.array([0.2989, 0.5870, 0.1140]))[..., None] * 255.5)
    np.testing.assert_array_equal(run(tf.image.rgb_to_grayscale(u8)), expected)
    np.testing.assert_allclose(run(tf.image.adjust_brightness(rgb, 0.25)), rgb + 0.25,
                               rtol=1e-6)
    np.testing.assert_array_equal(run(tf.image.adjust_brightness(np.array([250], np.uint8),
                                                                 0.1)), [255])
    out = run(tf.image.random_brightness(rgb, 0.2, seed=5))
    delta = out - rgb
    np.testing.assert_allclose(delta, delta.flat[0], atol=1e-6)
    assert abs(delta.flat[0]) <= 0.2
    # Resizing is shardflow/image_resize.py's (tested in test_tf1_array_extras.py).
    from shardflow import image_resize
    assert tf.image.resize_images is image_resize.resize_images
    assert tf.image.resize_bicubic is image_resize.resize_bicubic


# ---- recurrent networks ---------------------------------------------------------------------


def test_static_rnn_matches_dynamic_rnn_and_trains():
    x = RNG.randn(2, 3, 4).astype(np.float32)
    lengths = np.array([3, 2], np.int32)
    inputs = [tf.constant(x[:, t]) for t in range(3)]
    cell = tf.nn.rnn_cell.BasicRNNCell(5)
    outs, state = tf.nn.static_rnn(cell, inputs, dtype=tf.float32, sequence_length=lengths)
    with tf.variable_scope("rnn", reuse=True):
        dyn_out, dyn_state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths,
                                               dtype=tf.float32)
    target = tf.constant(RNG.randn(2, 5).astype(np.float32))
    loss = tf.reduce_mean(tf.square(state - target))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    assert tf.contrib.rnn.static_rnn is tf.nn.static_rnn
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        o, st, do, ds = s.run([tf.stack(outs, 1), state, dyn_out, dyn_state])
        np.testing.assert_allclose(o, do, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(st, ds, rtol=1e-5, atol=1e-6)
        assert (o[1, 2] == 0).all()
        losses = [s.run([loss, train])[0] for _ in range(5)]
    assert losses[-1] < losses[0]


def _numpy_rnn(x, w, b, lengths, reverse):
    """tanh(W [x, h] + b) over x [batch, time, depth], each sequence to its length (reversed
    inside that length with `reverse`); outputs [batch, time, units] and final states."""
    batch, time, _ = x.shape
    units = b.shape[0]
    out = np.zeros((batch, time, units))
    final = np.zeros((batch, units))
    for i in range(batch):
        h = np.zeros(units)
        steps = range(lengths[i])
        for t in (reversed(steps) if reverse else steps):
            h = np.tanh(np.concatenate([x[i, t], h]) @ w + b)
            out[i, t] = h
        final[i] = h
    return out, final


def test_bidirectional_rnns_against_numpy():
    x = RNG.randn(2, 4, 3).astype(np.float32)
    lengths = np.array([4, 2], np.int32)
    fw, bw = tf.nn.rnn_cell.BasicRNNCell(2), tf.nn.rnn_cell.BasicRNNCell(2)
    (out_fw, out_bw), (st_fw, st_bw) = tf.nn.bidirectional_dynamic_rnn(
        fw, bw, x, sequence_length=lengths, dtype=tf.float32)
    outs, sfw, sbw = tf.nn.static_bidirectional_rnn(
        fw, bw, [x[:, t] for t in range(4)], dtype=tf.float32, sequence_length=lengths,
        scope="bidirectional_rnn")
    names = sorted(v.name for v in tf.global_variables())
    assert names == ["bidirectional_rnn/bw/basic_rnn_cell/bias:0",
                     "bidirectional_rnn/bw/basic_rnn_cell/kernel:0",
                     "bidirectional_rnn/fw/basic_rnn_cell/bias:0",
                     "bidirectional_rnn/fw/basic_rnn_cell/kernel:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        values = s.run([out_fw, out_bw, st_fw, st_bw, tf.stack(outs, 1), sfw, sbw])
        params = s.run({v.name: v for v in tf.global_variables()})
    w_fw, b_fw = (params["bidirectional_rnn/fw/basic_rnn_cell/%s:0" % n]
                  for n in ("kernel", "bias"))
    w_bw, b_bw = (params["bidirectional_rnn/bw/basic_rnn_cell/%s:0" % n]
                  for n in ("kernel", "bias"))
    e_out_fw, e_st_fw = _numpy_rnn(x, w_fw, b_fw, lengths, False)
    e_out_bw, e_st_bw = _numpy_rnn(x, w_bw, b_bw, lengths, True)
    for got, want in zip(values, [e_out_fw, e_out_bw, e_st_fw, e_st_bw,
                                  np.concatenate([e_out_fw, e_out_bw], 2), e_st_fw, e_st_bw]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ---- tf.contrib.layers ---------------------------------------------------------------------


def test_contrib_layers_build_a_small_cnn():
    images = tf.constant(RNG.randn(2, 6, 6, 1).astype(np.float32))
    h = tf.contrib.layers.conv2d(images, 3, [3, 3])
    assert h.shape.as_list() == [2, 6, 6, 3]
    p = tf.contrib.layers.max_pool2d(h, [2, 2])
    assert p.shape.as_list() == [2, 3, 3, 3]
    flat = tf.contrib.layers.flatten(p)
    assert flat.shape.as_list() == [2, 27]
    logits = tf.contrib.layers.fully_connected(flat, 4, activation_fn=None)
    hidden = tf.contrib.layers.fully_connected(flat, 4)
    weights = {v.op.name: v for v in tf.global_variables()}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        hv, pv, fv, lv, dv, w1, b1, w2, b2 = s.run(
            [h, p, flat, logits, hidden, weights["fully_connected/weights"],
             weights["fully_connected/biases"], weights["fully_connected_1/weights"],
             weights["fully_connected_1/biases"]])
    assert (hv >= 0).all() and (dv >= 0).all()            # ReLU by default
    np.testing.assert_allclose(pv, hv.reshape(2, 3, 2, 3, 2, 3).max(axis=(2, 4)))
    np.testing.assert_allclose(fv, pv.reshape(2, 27))
    np.testing.assert_allclose(lv, fv @ w1 + b1, rtol=1e-5, atol=1e-5)   # activation_fn=None
    np.testing.assert_allclose(dv, np.maximum(fv @ w2 + b2, 0), rtol=1e-5, atol=1e-5)
    with pytest.raises(AttributeError, match="fully_connected"):
        tf.contrib.layers.conv3d  # noqa: B018
