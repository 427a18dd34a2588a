"""tf.nn.ctc_loss, ctc_greedy_decoder and ctc_beam_search_decoder (shardflow/ctc_ops.py),
checked against sums over every alignment of tiny inputs."""
import itertools

import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _collapse(path, blank, merge_repeated):
    out = []
    for k, c in enumerate(path):
        if c == blank or (merge_repeated and k > 0 and c == path[k - 1]):
            continue
        out.append(c)
    return tuple(out)


def _label_probs(logits, merge_repeated=True):
    """{label sequence: probability}, summing every path of one [T, C] sequence."""
    probs = _softmax(logits.astype(np.float64))
    steps, classes = logits.shape
    out = {}
    for path in itertools.product(range(classes), repeat=steps):
        label = _collapse(path, classes - 1, merge_repeated)
        out[label] = out.get(label, 0.0) + np.prod([probs[t, c] for t, c in enumerate(path)])
    return out


def _sparse(rows):
    indices = [(b, k) for b, r in enumerate(rows) for k in range(len(r))]
    values = [c for r in rows for c in r]
    return tf.SparseTensorValue(np.array(indices, np.int64).reshape(-1, 2),
                                np.array(values, np.int32),
                                [len(rows), max(len(r) for r in rows)])


def test_ctc_loss_is_minus_log_of_the_sum_over_alignments_and_its_gradient():
    rng = np.random.RandomState(0)
    steps, batch, classes = 4, 3, 4                 # blank = 3
    logits_v = rng.randn(steps, batch, classes)
    rows = [[0, 1], [2, 2], [1]]
    lengths = np.array([4, 4, 3], np.int32)
    logits = tf.Variable(logits_v.astype(np.float32))
    labels = tf.sparse_placeholder(tf.int32)
    seq_len = tf.placeholder(tf.int32, [batch])
    losses = {merge: tf.nn.ctc_loss(labels, logits, seq_len, ctc_merge_repeated=merge)
              for merge in (True, False)}
    weights = np.array([1.0, 2.0, -0.5], np.float32)
    (grad,) = tf.gradients(tf.reduce_sum(losses[True] * weights), [logits])
    feed = {labels: _sparse(rows), seq_len: lengths}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, got_plain, g = sess.run([losses[True], losses[False], grad], feed)

    def brute(x, merge=True):
        out = []
        for b, r in enumerate(rows):
            out.append(-np.log(_label_probs(x[:lengths[b], b], merge).get(tuple(r), 0.0)))
        return np.array(out)
    np.testing.assert_allclose(got, brute(logits_v), rtol=1e-5)
    np.testing.assert_allclose(got_plain, brute(logits_v, merge=False), rtol=1e-5)
    num = np.zeros_like(logits_v)
    for i in np.ndindex(*logits_v.shape):
        e = np.zeros_like(logits_v)
        e[i] = 1e-4
        num[i] = ((brute(logits_v + e) - brute(logits_v - e)) @ weights) / 2e-4
    np.testing.assert_allclose(g, num, rtol=1e-3, atol=1e-4)
    assert np.all(g[3, 2] == 0)                     # past row 2's sequence length


def test_ctc_loss_options_batch_major_collapse_and_too_long_labels():
    rng = np.random.RandomState(1)
    x = rng.randn(2, 3, 3).astype(np.float32)        # [batch, time, classes], blank = 2
    labels = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]], [1, 1, 0, 0, 0], [2, 3])
    seq_len = [3, 3]
    collapsed = tf.nn.ctc_loss(labels, x, seq_len, preprocess_collapse_repeated=True,
                               time_major=False)
    skipped = tf.nn.ctc_loss(labels, x, seq_len, time_major=False,
                             ignore_longer_outputs_than_inputs=True)
    failing = tf.nn.ctc_loss(labels, x, seq_len, time_major=False)
    with tf.Session() as sess:
        c, s = sess.run([collapsed, skipped])
        with pytest.raises(tf.errors.OpError, match="not enough time"):
            sess.run(failing)
    np.testing.assert_allclose(c[0], -np.log(_label_probs(x[0])[(1,)]), rtol=1e-5)
    np.testing.assert_allclose(c[1], -np.log(_label_probs(x[1])[(0,)]), rtol=1e-5)
    np.testing.assert_allclose(s[0], -np.log(_label_probs(x[0])[(1, 1)]), rtol=1e-5)
    assert s[1] == 0                                 # [0, 0, 0] needs 5 steps, has 3


def test_ctc_decoders():
    rng = np.random.RandomState(2)
    x = rng.randn(5, 2, 3).astype(np.float32)        # blank = 2
    x[:, 1] = np.log(np.array([[.7, .2, .1], [.1, .1, .8], [.6, .3, .1], [.6, .3, .1],
                               [.1, .8, .1]]))
    seq_len = [5, 4]
    (greedy,), neg_sum = tf.nn.ctc_greedy_decoder(x, seq_len)
    beams, log_probs = tf.nn.ctc_beam_search_decoder(x, seq_len, beam_width=64, top_paths=2,
                                                     merge_repeated=False)
    with tf.Session() as sess:
        g, ns, b0, b1, lp = sess.run([greedy, neg_sum, beams[0], beams[1], log_probs])
    best = x.argmax(-1)
    expected = [list(_collapse(best[:n, b], 2, True)) for b, n in enumerate(seq_len)]
    assert expected[1] == [0, 0]                     # 0 blank 0 0 -> 0 0 (step 4 cut off)
    dense = np.zeros(g.dense_shape, np.int64)
    dense[tuple(g.indices.T)] = g.values
    np.testing.assert_array_equal(g.dense_shape, [2, max(len(e) for e in expected)])
    for b, e in enumerate(expected):
        assert list(g.values[g.indices[:, 0] == b]) == e
    np.testing.assert_allclose(ns[:, 0], [-x[:5, 0].max(-1).sum(), -x[:4, 1].max(-1).sum()],
                               rtol=1e-6)
    for b, n in enumerate(seq_len):                  # a wide beam finds the exact top two
        ranked = sorted(_label_probs(x[:n, b]).items(), key=lambda kv: -kv[1])
        for k, found in enumerate((b0, b1)):
            assert tuple(found.values[found.indices[:, 0] == b]) == ranked[k][0]
            np.testing.assert_allclose(lp[b, k], np.log(ranked[k][1]), rtol=1e-5)


def test_a_tiny_model_learns_with_ctc_loss():
    rng = np.random.RandomState(3)
    steps, batch, feat, classes = 6, 4, 5, 4         # blank = 3
    inputs = rng.randn(steps, batch, feat).astype(np.float32)
    rows = [[0, 1], [2], [1, 1], [0, 2, 1]]
    w = tf.Variable(rng.randn(feat, classes).astype(np.float32) * 0.1)
    b = tf.Variable(np.zeros(classes, np.float32))
    logits = tf.reshape(tf.matmul(tf.reshape(inputs, [-1, feat]), w) + b,
                        [steps, batch, classes])
    u = tf.Variable(rng.randn(steps, batch, classes).astype(np.float32) * 0.1)
    loss = tf.reduce_mean(tf.nn.ctc_loss(_sparse_tensor(rows), logits + u, [steps] * batch))
    train = tf.train.AdamOptimizer(0.1).minimize(loss)
    (decoded,), _ = tf.nn.ctc_greedy_decoder(logits + u, [steps] * batch)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(150):
            sess.run(train)
        last, d = sess.run([loss, decoded])
    assert last < 0.1 * first
    for r, row in enumerate(rows):
        assert list(d.values[d.indices[:, 0] == r]) == row


def _sparse_tensor(rows):
    v = _sparse(rows)
    return tf.SparseTensor(v.indices, v.values, v.dense_shape)


def test_edit_distance_as_tf1():
    """TF1's documented example: hypothesis [[a], [b]] x ... against truth; normalized by the
    truth's length, inf where only the hypothesis has a sequence, 0 where neither has one."""
    hyp = tf.SparseTensorValue([[0, 0, 0], [1, 0, 0]], np.array([b"a", b"b"], object),
                               [2, 1, 1])
    truth = tf.SparseTensorValue([[0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 1, 0]],
                                 np.array([b"a", b"b", b"c", b"a"], object), [2, 2, 2])
    g = tf.Graph()
    with g.as_default():
        h = tf.SparseTensor.from_value(hyp)
        d = tf.edit_distance(h, tf.SparseTensor.from_value(truth))
        raw = tf.edit_distance(h, tf.SparseTensor.from_value(truth), normalize=False)
        ints = tf.edit_distance(tf.cast(tf.SparseTensor([[0, 0], [0, 1]], [1, 2], [1, 3]),
                                        tf.int32),
                                tf.SparseTensor([[0, 0], [0, 1], [0, 2]], tf.constant([1, 3, 2]),
                                                [1, 3]))
        with tf.Session() as s:
            got, got_raw, got_ints = s.run([d, raw, ints])
    np.testing.assert_allclose(got, [[np.inf, 1.0], [0.5, 1.0]])
    np.testing.assert_allclose(got_raw, [[1, 1], [1, 1]])
    np.testing.assert_allclose(got_ints, [1 / 3])  # 1 2 -> 1 3 2: one insertion
    with pytest.raises(TypeError, match="cast one"):
        tf.edit_distance(tf.SparseTensor([[0, 0]], [1], [1, 1]),
                         tf.SparseTensor([[0, 0]], [1.0], [1, 1]))
