"""TF1 names of tf.nn, tf.layers and tf.nn.rnn_cell composed in Python, against NumPy:
candidate samplers, nce_loss and sampled_softmax_loss (values and a word2vec-style skip-gram
that trains with each), conv1d, depthwise and separable convolutions, tf.layers' 1-D layers
and class forms, and the RNN cell wrappers."""

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


# ---- candidate samplers --------------------------------------------------------------------


def log_uniform_p(k, range_max):
    return np.log((k + 2.0) / (k + 1.0)) / np.log(range_max + 1.0)


TRUE = np.array([[0, 3], [7, 9]], np.int64)


def test_log_uniform_sampler_with_replacement_follows_p():
    n, r = 20000, 10
    sampled, true_count, sampled_count = run(
        tf.nn.log_uniform_candidate_sampler(TRUE, 2, n, False, r, seed=1))
    assert sampled.dtype == np.int64 and sampled.shape == (n,)
    assert sampled.min() >= 0 and sampled.max() < r
    p = log_uniform_p(np.arange(r), r)
    np.testing.assert_allclose(np.bincount(sampled, minlength=r) / n, p, atol=0.015)
    np.testing.assert_allclose(true_count, n * log_uniform_p(TRUE, r), rtol=1e-5)
    np.testing.assert_allclose(sampled_count, n * log_uniform_p(sampled, r), rtol=1e-5)


def test_log_uniform_sampler_unique():
    r, n = 10, 4
    out = tf.nn.log_uniform_candidate_sampler(TRUE, 2, n, True, r)
    firsts = []
    with tf.Session() as s:
        for _ in range(300):
            sampled, true_count, sampled_count = s.run(out)
            assert len(set(sampled.tolist())) == n and 0 <= sampled.min() and sampled.max() < r
            firsts.append(sampled[0])
    # 1 - (1 - P) ** n (TF1 puts its number of tries for n).
    np.testing.assert_allclose(true_count, 1 - (1 - log_uniform_p(TRUE, r)) ** n, rtol=1e-5)
    np.testing.assert_allclose(sampled_count, 1 - (1 - log_uniform_p(sampled, r)) ** n,
                               rtol=1e-5)
    # The first pick of Gumbel-top-k is a draw from P.
    np.testing.assert_allclose(np.bincount(firsts, minlength=r)[:3] / 300.0,
                               log_uniform_p(np.arange(3), r), atol=0.08)


def test_uniform_sampler():
    sampled, true_count, sampled_count = run(
        tf.nn.uniform_candidate_sampler(TRUE, 2, 12000, False, 6, seed=2))
    np.testing.assert_allclose(np.bincount(sampled, minlength=6) / 12000.0, np.full(6, 1 / 6.),
                               atol=0.02)
    np.testing.assert_allclose(true_count, np.full([2, 2], 2000.0), rtol=1e-6)
    np.testing.assert_allclose(sampled_count, np.full([12000], 2000.0), rtol=1e-6)
    sampled, true_count, _ = run(tf.nn.uniform_candidate_sampler(TRUE, 2, 5, True, 12, seed=3))
    assert sorted(set(sampled.tolist())) == sorted(sampled.tolist()) and len(sampled) == 5
    np.testing.assert_allclose(true_count, 1 - (1 - 1 / 12.0) ** 5, rtol=1e-5)


def test_fixed_unigram_sampler():
    counts = [1.0, 4.0, 9.0, 0.0, 16.0]
    p = np.concatenate([[0.0], np.sqrt(counts) / np.sqrt(counts).sum()])  # 1 reserved id
    sampled, true_count, _ = run(tf.nn.fixed_unigram_candidate_sampler(
        [[1], [5]], 1, 20000, False, 6, distortion=0.5, num_reserved_ids=1, unigrams=counts,
        seed=4))
    np.testing.assert_allclose(np.bincount(sampled, minlength=6) / 20000.0, p, atol=0.015)
    np.testing.assert_allclose(true_count, 20000 * p[[[1], [5]]], rtol=1e-5)
    sampled, _, _ = run(tf.nn.fixed_unigram_candidate_sampler(
        [[1]], 1, 4, True, 6, num_reserved_ids=1, unigrams=counts, seed=5))
    assert sorted(sampled.tolist()) == [1, 2, 3, 5]   # the ids of nonzero probability


# ---- nce_loss and sampled_softmax_loss -----------------------------------------------------


def sampled_logits_np(w, b, labels, x, sampled, true_count, sampled_count, remove_hits):
    true_logits = np.einsum("bd,btd->bt", x, w[labels]) + b[labels] - np.log(true_count)
    sampled_logits = x @ w[sampled].T + b[sampled] - np.log(sampled_count)
    if remove_hits:
        hit = (labels[:, :, None] == sampled[None, None, :]).any(axis=1)
        sampled_logits = np.where(hit, -np.finfo(np.float64).max, sampled_logits)
    num_true = labels.shape[1]
    targets = np.concatenate([np.full(true_logits.shape, 1.0 / num_true),
                              np.zeros(sampled_logits.shape)], 1)
    return np.concatenate([true_logits, sampled_logits], 1), targets


def loss_case():
    w = RNG.randn(12, 4)
    b = RNG.randn(12)
    x = RNG.randn(3, 4)
    labels = np.array([[1, 5], [2, 7], [0, 3]], np.int64)
    sampled = np.array([5, 9, 3, 11, 0], np.int64)                # hits in rows 0 and 2
    true_count = RNG.uniform(0.1, 1.0, size=[3, 2])
    sampled_count = RNG.uniform(0.1, 1.0, size=[5])
    return w, b, labels, x, (sampled, true_count, sampled_count)


@pytest.mark.parametrize("remove_hits", [False, True])
def test_nce_loss_matches_numpy(remove_hits):
    w, b, labels, x, values = loss_case()
    got = run(tf.nn.nce_loss(tf.constant(w), tf.constant(b), labels, tf.constant(x), 5, 12,
                             num_true=2, sampled_values=values,
                             remove_accidental_hits=remove_hits))
    z, t = sampled_logits_np(w, b, labels, x, *values, remove_hits)
    expected = (np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z)))).sum(axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-10)


@pytest.mark.parametrize("remove_hits", [False, True])
def test_sampled_softmax_loss_matches_numpy(remove_hits):
    w, b, labels, x, values = loss_case()
    got = run(tf.nn.sampled_softmax_loss(tf.constant(w), tf.constant(b), labels,
                                         tf.constant(x), 5, 12, num_true=2,
                                         sampled_values=values,
                                         remove_accidental_hits=remove_hits))
    z, t = sampled_logits_np(w, b, labels, x, *values, remove_hits)
    m = z.max(axis=1, keepdims=True)
    log_softmax = z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(got, -(t * log_softmax).sum(axis=1), rtol=1e-10)


def test_sampled_losses_gradient():
    w, b, labels, x, values = loss_case()
    check_gradient(lambda wv, xv: tf.nn.nce_loss(wv, tf.constant(b), labels, xv, 5, 12, 2,
                                                 values), w, x)
    check_gradient(lambda wv, xv: tf.nn.sampled_softmax_loss(wv, tf.constant(b), labels, xv,
                                                             5, 12, 2, values), w, x)


@pytest.mark.parametrize("loss_fn", [tf.nn.nce_loss, tf.nn.sampled_softmax_loss])
def test_skip_gram_trains(loss_fn):
    vocab, dim, batch = 50, 8, 64
    rng = np.random.RandomState(1)
    corpus = np.concatenate([np.arange(vocab)] * 20)                # each word's next is k + 1
    tf.set_random_seed(7)
    embeddings = tf.Variable(tf.random_uniform([vocab, dim], -1.0, 1.0, seed=1))
    out_w = tf.Variable(tf.truncated_normal([vocab, dim], stddev=1.0 / np.sqrt(dim), seed=2))
    out_b = tf.Variable(tf.zeros([vocab]))
    center = tf.placeholder(tf.int32, [batch])
    context = tf.placeholder(tf.int64, [batch, 1])
    embed = tf.nn.embedding_lookup(embeddings, center)
    loss = tf.reduce_mean(loss_fn(out_w, out_b, context, embed, num_sampled=8,
                                  num_classes=vocab))
    full_logits = tf.matmul(embed, out_w, transpose_b=True) + out_b
    full_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.reshape(context, [-1]), logits=full_logits))
    train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        losses, full = [], []
        for step in range(100):
            i = rng.randint(0, len(corpus) - 1, size=batch)
            feed = {center: corpus[i], context: corpus[i + 1][:, None]}
            full.append(s.run(full_loss, feed))
            losses.append(s.run([loss, train], feed)[0])
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])
    assert np.mean(full[-10:]) < 0.75 * np.mean(full[:10])     # the true softmax learns too


# The convolution kernels take float32 only.
FLOAT32_GRADIENT = dict(h=1e-2, rtol=1e-3, atol=1e-3, dtype=np.float32)


# ---- convolutions --------------------------------------------------------------------------


def pad_amounts(size, k, stride, padding):
    if padding == "VALID":
        return (size - k) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + k - size, 0) // 2


def conv1d_np(x, w, stride, padding):
    n, width, _ = x.shape
    k, _, c_out = w.shape
    out, before = pad_amounts(width, k, stride, padding)
    xp = np.zeros((n, width + 2 * k, x.shape[2]))
    xp[:, before:before + width] = x
    y = np.zeros((n, out, c_out))
    for i in range(out):
        y[:, i] = np.einsum("nkc,kco->no", xp[:, i * stride:i * stride + k], w)
    return y


def depthwise_np(x, w, stride, padding):
    n, h, wd, c = x.shape
    kh, kw, _, mult = w.shape
    oh, bh = pad_amounts(h, kh, stride, padding)
    ow, bw = pad_amounts(wd, kw, stride, padding)
    xp = np.zeros((n, h + 2 * kh, wd + 2 * kw, c))
    xp[:, bh:bh + h, bw:bw + wd] = x
    y = np.zeros((n, oh, ow, c, mult))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * stride:i * stride + kh, j * stride:j * stride + kw]
            y[:, i, j] = np.einsum("nhwc,hwcm->ncm", patch, w)
    return y.reshape(n, oh, ow, c * mult)


@pytest.mark.parametrize("stride,padding", [(1, "SAME"), (2, "SAME"), (2, "VALID")])
def test_conv1d_matches_numpy(stride, padding):
    x, w = RNG.randn(2, 9, 3).astype(np.float32), RNG.randn(3, 3, 4).astype(np.float32)
    got = run(tf.nn.conv1d(tf.constant(x), tf.constant(w), stride, padding))
    np.testing.assert_allclose(got, conv1d_np(x, w, stride, padding), rtol=1e-5, atol=1e-5)


def test_conv1d_gradient():
    check_gradient(lambda x, w: tf.nn.conv1d(x, w, 2, "SAME"), RNG.randn(1, 5, 2),
                   RNG.randn(3, 2, 2), **FLOAT32_GRADIENT)


@pytest.mark.parametrize("stride,padding", [(1, "SAME"), (2, "VALID")])
def test_depthwise_and_separable_conv2d_match_numpy(stride, padding):
    x, dw, pw = (RNG.randn(*shape).astype(np.float32)
                 for shape in ([2, 6, 5, 3], [3, 3, 3, 2], [1, 1, 6, 4]))
    strides = [1, stride, stride, 1]
    got = run(tf.nn.depthwise_conv2d(tf.constant(x), tf.constant(dw), strides, padding))
    expected = depthwise_np(x, dw, stride, padding)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    got = run(tf.nn.separable_conv2d(tf.constant(x), tf.constant(dw), tf.constant(pw), strides,
                                     padding))
    np.testing.assert_allclose(got, expected @ pw[0, 0], rtol=1e-5, atol=1e-5)


def test_separable_conv2d_gradient():
    check_gradient(lambda x, dw, pw: tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME"),
                   RNG.randn(1, 3, 3, 2), RNG.randn(2, 2, 2, 2), RNG.randn(1, 1, 4, 2),
                   **FLOAT32_GRADIENT)


# ---- tf.layers -----------------------------------------------------------------------------


def test_layers_conv1d_and_class_reuse():
    x = tf.constant(RNG.randn(2, 7, 3).astype(np.float32))
    layer = tf.layers.Conv1D(4, 3, strides=2, padding="same", name="c1")
    y1, y2 = layer(x), layer(x)
    assert [v.shape.as_list() for v in layer.weights] == [[3, 3, 4], [4]]
    assert layer.trainable_variables == layer.variables and len(tf.global_variables()) == 2
    y3 = tf.layers.conv1d(x, 5, 2, activation=tf.nn.relu, name="c2")       # 'valid'
    assert y3.shape.as_list() == [2, 6, 5]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b, kernel, bias, xv = s.run([y1, y2, layer.kernel, layer.bias, x])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, conv1d_np(xv, kernel, 2, "SAME") + bias, rtol=1e-5,
                               atol=1e-5)


def pool1d_np(x, k, stride, reduce):
    out = (x.shape[1] - k) // stride + 1
    return np.stack([reduce(x[:, i * stride:i * stride + k], axis=1) for i in range(out)], 1)


def test_pooling1d_matches_numpy():
    x = RNG.randn(2, 9, 3).astype(np.float32)
    got = run([tf.layers.max_pooling1d(tf.constant(x), 3, 2),
               tf.layers.average_pooling1d(tf.constant(x), 2, 2),
               tf.layers.MaxPooling1D(2)(tf.constant(x)),
               tf.layers.AveragePooling1D(3, 1, padding="same")(tf.constant(x))])
    np.testing.assert_allclose(got[0], pool1d_np(x, 3, 2, np.max))
    np.testing.assert_allclose(got[1], pool1d_np(x, 2, 2, np.mean), rtol=1e-6)
    np.testing.assert_allclose(got[2], pool1d_np(x, 2, 2, np.max))
    padded = np.concatenate([np.full((2, 1, 3), np.nan), x, np.full((2, 1, 3), np.nan)], 1)
    np.testing.assert_allclose(got[3], pool1d_np(padded, 3, 1, np.nanmean), rtol=1e-5)


def test_layers_has_tf1_class_forms():
    for name in ("Conv1D", "Conv2D", "Conv2DTranspose", "Dense", "Dropout", "Flatten",
                 "BatchNormalization", "MaxPooling1D", "MaxPooling2D", "AveragePooling1D",
                 "AveragePooling2D"):
        assert isinstance(getattr(tf.layers, name), type), name
    x = tf.constant(RNG.randn(1, 4, 4, 2).astype(np.float32))
    got = run(tf.layers.MaxPooling2D(2, 2)(x))
    np.testing.assert_array_equal(got, run(x).reshape(1, 2, 2, 2, 2, 2).max(axis=(2, 4)))
    bn = tf.layers.BatchNormalization()
    bn(tf.constant(RNG.randn(3, 2).astype(np.float32)))
    assert len(bn.weights) == 4 and len(bn.trainable_weights) == 2
    assert len(bn.non_trainable_variables) == 2


# ---- RNN cell wrappers ---------------------------------------------------------------------


def lstm_case():
    x = tf.constant(RNG.randn(4, 5, 3).astype(np.float32))
    cell = tf.nn.rnn_cell.BasicLSTMCell(6)
    plain, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="r")
    return x, cell, plain


def test_dropout_wrapper_keep_one_is_the_cell():
    x, cell, plain = lstm_case()
    wrapped, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.DropoutWrapper(cell), x,
                                       dtype=tf.float32, scope="r")
    assert isinstance(state, tf.nn.rnn_cell.LSTMStateTuple)
    keep = tf.placeholder(tf.float32, [])          # a fed keep probability, as in training code
    fed, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.DropoutWrapper(cell, keep, keep, keep), x,
                               dtype=tf.float32, scope="r")
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b, c = s.run([plain, wrapped, fed], {keep: 1.0})
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, c, rtol=1e-6)


def test_dropout_wrapper_drops_outputs():
    x, cell, plain = lstm_case()
    wrapped, _ = tf.nn.dynamic_rnn(
        tf.contrib.rnn.DropoutWrapper(cell, output_keep_prob=0.5, seed=3), x,
        dtype=tf.float32, scope="r")
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b = s.run([plain, wrapped])
    dropped = b == 0
    assert 0.3 < dropped.mean() < 0.7
    # Output dropout leaves the recurrence alone: the kept values are the cell's, doubled.
    np.testing.assert_allclose(b[~dropped], 2 * a[~dropped], rtol=1e-6)


def test_dropout_wrapper_state_keeps_lstm_c():
    x = tf.constant(RNG.randn(4, 3).astype(np.float32))
    cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(50), state_keep_prob=0.5)
    _, (c, h) = cell(x, cell.zero_state(4, tf.float32))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        c, h = s.run([c, h])
    assert (c == 0).mean() < 0.05 and 0.3 < (h == 0).mean() < 0.7


def test_residual_and_device_wrappers():
    x = tf.constant(RNG.randn(4, 5, 6).astype(np.float32))
    cell = tf.nn.rnn_cell.GRUCell(6)
    plain, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="g")
    res, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.ResidualWrapper(cell), x, dtype=tf.float32,
                               scope="g")
    dev_cell = tf.contrib.rnn.DeviceWrapper(tf.nn.rnn_cell.BasicRNNCell(6), "/device:CPU:0")
    out, state = dev_cell(x[:, 0], dev_cell.zero_state(4, tf.float32))
    assert "CPU:0" in out.op.device and "CPU:0" in state.op.device
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b, xv, o = s.run([plain, res, x, out])
    np.testing.assert_allclose(b, a + xv, rtol=1e-6)
    assert o.shape == (4, 6)


def test_nn_convolution_depthwise_native_and_space_to_depth():
    rng = np.random.RandomState(7)
    x2 = rng.rand(1, 5, 5, 2).astype(np.float32)
    w2 = rng.rand(3, 3, 2, 4).astype(np.float32)
    x1 = rng.rand(2, 7, 3).astype(np.float32)
    w1 = rng.rand(2, 3, 4).astype(np.float32)
    wd = rng.rand(3, 3, 2, 2).astype(np.float32)
    with tf.Graph().as_default():
        got = tf.Session().run([
            tf.nn.convolution(x2, w2, "SAME"),
            tf.nn.conv2d(x2, w2, [1, 1, 1, 1], "SAME"),
            tf.nn.convolution(x2, w2, "VALID", strides=[2, 2]),
            tf.nn.conv2d(x2, w2, [1, 2, 2, 1], "VALID"),
            tf.nn.convolution(x2, w2, "SAME", dilation_rate=[2, 2]),
            tf.nn.atrous_conv2d(x2, w2, 2, "SAME"),
            tf.nn.convolution(x1, w1, "VALID"),
            tf.nn.conv1d(x1, w1, 1, "VALID"),
            tf.nn.depthwise_conv2d_native(x2, wd, [1, 1, 1, 1], "SAME"),
            tf.nn.depthwise_conv2d(x2, wd, [1, 1, 1, 1], "SAME"),
            tf.nn.depth_to_space(tf.nn.space_to_depth(tf.constant(x2[:, :4, :4]), 2), 2)])
    for a, b in zip(got[0:10:2], got[1:10:2]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # A dilated 1-D convolution: width-only dilation, checked by hand at one output.
    with tf.Graph().as_default():
        y = tf.Session().run(tf.nn.convolution(x1, w1, "VALID", dilation_rate=[2]))
    assert y.shape == (2, 5, 4)
    np.testing.assert_allclose(y[0, 0], x1[0, 0] @ w1[0] + x1[0, 2] @ w1[1], rtol=1e-5)
    np.testing.assert_allclose(got[10], x2[:, :4, :4])


def test_max_pool_with_argmax_and_segnet_unpooling():
    """tf.nn.max_pool_with_argmax: values as max_pool, argmax flat indices (per image, or over
    the batch), gradients as max_pool's; unpooling by scatter_nd puts each maximum back."""
    rng = np.random.RandomState(4)
    x = rng.rand(2, 4, 6, 3).astype(np.float32)
    xt = tf.constant(x)
    pooled, where = tf.nn.max_pool_with_argmax(xt, [1, 2, 2, 1], [1, 2, 2, 1], "SAME",
                                               include_batch_in_index=True)
    _, where32 = tf.nn.max_pool_with_argmax(xt, [1, 2, 2, 1], [1, 2, 2, 1], "SAME",
                                            Targmax=tf.int32)
    unpooled = tf.reshape(tf.scatter_nd(tf.reshape(where, [-1, 1]), tf.reshape(pooled, [-1]),
                                        [x.size]), x.shape)
    grads = tf.gradients(tf.reduce_sum(pooled * pooled), xt)[0]
    ref = tf.gradients(tf.reduce_sum(tf.nn.max_pool(xt, 2, 2, "SAME") ** 2), xt)[0]
    with tf.Session() as sess:
        p, w, w32, u, g, r = sess.run([pooled, where, where32, unpooled, grads, ref])
    assert where.dtype == tf.int64 and where32.dtype == tf.int32
    np.testing.assert_array_equal(x.reshape(-1)[w.reshape(-1)], p.reshape(-1))
    np.testing.assert_array_equal(w32, w % (4 * 6 * 3))
    np.testing.assert_array_equal(u[u != 0], x[u != 0])
    assert (u != 0).sum() == p.size
    np.testing.assert_allclose(g, r)


def test_sampled_losses_take_sharded_weights_as_tf1():
    # Regression: a list of weight shards (a PartitionedVariable, word2vec over several ps
    # tasks) was refused "sharded weights are not supported"; TF looks the rows up with
    # embedding_lookup's partition_strategy. Sharded and whole tables give the same losses.
    rng = np.random.RandomState(0)
    w, b = rng.randn(10, 4).astype(np.float32), rng.randn(10).astype(np.float32)
    inputs = tf.constant(rng.randn(3, 4).astype(np.float32))
    labels = tf.constant([[1], [7], [4]], tf.int64)
    sampled = (tf.constant([0, 3, 9], tf.int64), tf.ones([3, 1]), tf.ones([3]))
    shards = {"mod": ([w[0::2], w[1::2]], [b[0::2], b[1::2]]),
              "div": ([w[:5], w[5:]], [b[:5], b[5:]])}
    with tf.Session() as sess:
        for fn in (tf.nn.nce_loss, tf.nn.sampled_softmax_loss):
            whole = fn(tf.constant(w), tf.constant(b), labels, inputs, 3, 10,
                       sampled_values=sampled)
            want = sess.run(whole)
            for strategy, (ws, bs) in shards.items():
                got = sess.run(fn([tf.constant(s) for s in ws], [tf.constant(s) for s in bs],
                                  labels, inputs, 3, 10, sampled_values=sampled,
                                  partition_strategy=strategy))
                np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=strategy)
