"""More TF 1.x names, checked against NumPy: tf.contrib.crf (log-likelihood, log-normalizer and
decoding against brute-force enumeration of the tag sequences, gradients against finite
differences, training), keras.layers.Bidirectional and TimeDistributed (values, fit, save and
load), tf.string_to_hash_bucket_fast / _strong, tf.math.xlogy / xdivy (values and gradients
at x == 0), tf.math.is_non_decreasing / is_strictly_increasing, tf.timestamp, tf.no_gradient
and tf.register_tensor_conversion_function."""

import itertools
import os
import time

import numpy as np
import pytest

import shardflow as tf
from shardflow import keras

crf = tf.contrib.crf


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# ---- tf.contrib.crf ---------------------------------------------------------------------------

NUM_TAGS, MAX_LEN = 3, 3
RNG = np.random.RandomState(7)
UNARY = RNG.randn(3, MAX_LEN, NUM_TAGS)
TRANSITIONS = RNG.randn(NUM_TAGS, NUM_TAGS)
TAGS = np.array([[0, 2, 1], [1, 1, 0], [2, 0, 0]], np.int32)
LENGTHS = np.array([3, 2, 1], np.int32)


def path_score(unary, transitions, tags, length):
    return (sum(unary[t, tags[t]] for t in range(length))
            + sum(transitions[tags[t - 1], tags[t]] for t in range(1, length)))


def all_paths(length):
    return list(itertools.product(range(NUM_TAGS), repeat=length))


def brute_log_likelihood(unary, transitions, tags, lengths):
    out = []
    for b, n in enumerate(lengths):
        if n == 0:
            out.append(0.0)
            continue
        log_z = np.log(sum(np.exp(path_score(unary[b], transitions, p, n))
                           for p in all_paths(n)))
        out.append(path_score(unary[b], transitions, tags[b], n) - log_z)
    return np.array(out)


def brute_viterbi(unary, transitions, length):
    return max(all_paths(length), key=lambda p: path_score(unary, transitions, p, length))


@pytest.mark.parametrize("static", [True, False])
def test_crf_log_likelihood_matches_enumeration(static):
    with tf.Graph().as_default():
        if static:
            x, tags, lengths = (tf.constant(UNARY), tf.constant(TAGS), tf.constant(LENGTHS))
            feed = None
        else:
            x = tf.placeholder(tf.float64, [None, None, NUM_TAGS])
            tags = tf.placeholder(tf.int32, [None, None])
            lengths = tf.placeholder(tf.int32, [None])
            feed = {x: UNARY, tags: TAGS, lengths: LENGTHS}
        trans = tf.constant(TRANSITIONS)
        ll, returned = crf.crf_log_likelihood(x, tags, lengths, trans)
        assert returned is trans
        parts = [crf.crf_sequence_score(x, tags, lengths, trans),
                 crf.crf_log_norm(x, lengths, trans),
                 crf.crf_unary_score(tags, lengths, x),
                 crf.crf_binary_score(tags, lengths, trans)]
        got, (score, log_norm, unary, binary) = run([ll, parts], feed)
    np.testing.assert_allclose(got, brute_log_likelihood(UNARY, TRANSITIONS, TAGS, LENGTHS),
                               rtol=1e-10)
    for b, n in enumerate(LENGTHS):
        assert unary[b] == pytest.approx(sum(UNARY[b, t, TAGS[b, t]] for t in range(n)))
        assert binary[b] == pytest.approx(
            sum(TRANSITIONS[TAGS[b, t - 1], TAGS[b, t]] for t in range(1, n)))
    np.testing.assert_allclose(score, unary + binary, rtol=1e-12)
    np.testing.assert_allclose(score - log_norm, got, rtol=1e-12)


def test_crf_single_step_and_empty_sequences():
    unary = UNARY[:, :1]
    with tf.Graph().as_default():
        ll, _ = crf.crf_log_likelihood(tf.constant(unary), TAGS[:, :1], [1, 0, 1],
                                       tf.constant(TRANSITIONS))
        log_norm = crf.crf_log_norm(tf.constant(UNARY), [3, 0, 2], tf.constant(TRANSITIONS))
        got, norms = run([ll, log_norm])
    expected = brute_log_likelihood(unary, TRANSITIONS, TAGS[:, :1], [1, 0, 1])
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert got[1] == 0.0 and norms[1] == 0.0  # a length of 0: score and log Z are 0


@pytest.mark.parametrize("static", [True, False])
def test_crf_gradients_match_finite_differences(static):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, UNARY.shape if static else [None, None, NUM_TAGS])
        trans = tf.placeholder(tf.float64, TRANSITIONS.shape)
        ll, _ = crf.crf_log_likelihood(x, TAGS, LENGTHS, trans)
        dx, dt = run(tf.gradients(tf.reduce_sum(ll), [x, trans]), {x: UNARY, trans: TRANSITIONS})

    def numeric(array, f, h=1e-6):
        out = np.zeros_like(array)
        for idx in np.ndindex(*array.shape):
            e = np.zeros_like(array)
            e[idx] = h
            out[idx] = (f(array + e) - f(array - e)) / (2 * h)
        return out
    num_dx = numeric(UNARY, lambda u: brute_log_likelihood(u, TRANSITIONS, TAGS, LENGTHS).sum())
    num_dt = numeric(TRANSITIONS, lambda t: brute_log_likelihood(UNARY, t, TAGS, LENGTHS).sum())
    np.testing.assert_allclose(dx, num_dx, atol=1e-7)
    np.testing.assert_allclose(dt, num_dt, atol=1e-7)
    assert np.all(dx[1, 2] == 0) and np.all(dx[2, 1:] == 0)  # past the lengths


def test_crf_training_raises_the_likelihood():
    with tf.Graph().as_default():
        with tf.variable_scope("tagger"):
            logits = tf.Variable(UNARY.astype(np.float32) * 0.1)
            ll, trans = crf.crf_log_likelihood(logits, TAGS, LENGTHS)
        assert trans.op.name == "tagger/transitions" and trans.shape.as_list() == [3, 3]
        loss = tf.reduce_mean(-ll)
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run(loss)]
            for _ in range(5):
                sess.run(step)
                losses.append(sess.run(loss))
    assert all(b < a for a, b in zip(losses, losses[1:])), losses


def test_viterbi_and_crf_decode_match_enumeration():
    lengths = np.array([3, 2, 1, 0], np.int32)
    unary = np.concatenate([UNARY, RNG.randn(1, MAX_LEN, NUM_TAGS)]).astype(np.float32)
    trans = TRANSITIONS.astype(np.float32)
    for b, n in enumerate(lengths[:3]):
        tags, score = crf.viterbi_decode(unary[b, :n], trans)
        best = brute_viterbi(unary[b], trans, n)
        assert tags == list(best)
        assert score == pytest.approx(path_score(unary[b], trans, best, n), rel=1e-5)
    with tf.Graph().as_default():
        pots = tf.placeholder(tf.float32, [None, None, NUM_TAGS])
        seq_len = tf.placeholder(tf.int32, [None])
        decoded, best_score = crf.crf_decode(pots, tf.constant(trans), seq_len)
        (grad,) = tf.gradients(tf.reduce_sum(best_score), [pots])
        tags, scores, grad = run([decoded, best_score, grad], {pots: unary, seq_len: lengths})
    assert tags.dtype == np.int32 and tags.shape == (4, MAX_LEN)
    for b, n in enumerate(lengths):
        n_eff = max(n, 1)  # TF decodes a length of 0 as its first step
        best = brute_viterbi(unary[b], trans, n_eff)
        np.testing.assert_array_equal(tags[b], list(best) + [0] * (MAX_LEN - n_eff))
        assert scores[b] == pytest.approx(path_score(unary[b], trans, best, n_eff), rel=1e-5)
        # d best_score / d potentials: 1 on the decoded path.
        expected = np.zeros((MAX_LEN, NUM_TAGS), np.float32)
        expected[np.arange(n_eff), best] = 1
        np.testing.assert_array_equal(grad[b], expected)


def test_crf_forward_rnn_cell_step():
    with tf.Graph().as_default():
        cell = crf.CrfForwardRnnCell(tf.constant(TRANSITIONS))
        out, state = cell(tf.constant(UNARY[:, 1]), tf.constant(UNARY[:, 0]))
        got = run(out)
    alpha = UNARY[:, 0][:, :, None] + TRANSITIONS[None]
    expected = UNARY[:, 1] + np.log(np.exp(alpha).sum(axis=1))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert cell.state_size == cell.output_size == NUM_TAGS


# ---- keras.layers.Bidirectional and TimeDistributed -------------------------------------------


def simple_rnn(x, kernel, recurrent, bias):
    h = np.zeros((x.shape[0], bias.shape[0]), np.float32)
    outs = []
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
        outs.append(h)
    return np.stack(outs, 1)


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_matches_numpy(merge_mode):
    x = RNG.randn(2, 4, 3).astype(np.float32)
    with tf.Graph().as_default():
        inp = keras.layers.Input(shape=(4, 3))
        layer = keras.layers.Bidirectional(keras.layers.SimpleRNN(5, return_sequences=True),
                                           merge_mode=merge_mode)
        y = layer(inp)
        last = keras.layers.Bidirectional(keras.layers.SimpleRNN(5), merge_mode=merge_mode)(inp)
        assert len(layer.trainable_weights) == 6
        assert layer.forward_layer.name.startswith("forward_simple_rnn")
        assert layer.backward_layer.go_backwards and not layer.forward_layer.go_backwards
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            (fk, fr, fb, bk, br, bb), got, got_last = sess.run([layer.weights, y, last],
                                                               {inp: x})
    fwd = simple_rnn(x, fk, fr, fb)
    bwd = simple_rnn(x[:, ::-1], bk, br, bb)[:, ::-1]  # run backwards, put back in time order
    merged = {"concat": lambda a, b: np.concatenate([a, b], -1), "sum": np.add,
              "mul": np.multiply, "ave": lambda a, b: (a + b) / 2,
              None: lambda a, b: [a, b]}[merge_mode]
    np.testing.assert_allclose(got, merged(fwd, bwd), rtol=1e-5, atol=1e-6)
    if merge_mode == "concat":
        assert got_last.shape == (2, 10)  # the last outputs: forward's at t=3, backward's at t=0


def test_bidirectional_return_state_and_backward_layer():
    with tf.Graph().as_default():
        inp = keras.layers.Input(shape=(4, 3))
        outs = keras.layers.Bidirectional(keras.layers.LSTM(2, return_state=True))(inp)
        assert len(outs) == 5 and outs[0].shape.as_list() == [None, 4]
        back = keras.layers.GRU(2, go_backwards=True, name="my_back")
        layer = keras.layers.Bidirectional(keras.layers.GRU(2), backward_layer=back)
        layer(inp)
        assert layer.backward_layer is back and back.name == "my_back"
    with pytest.raises(ValueError, match="merge mode"):
        keras.layers.Bidirectional(keras.layers.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="go_backwards"):
        keras.layers.Bidirectional(keras.layers.LSTM(2), backward_layer=keras.layers.LSTM(2))


def test_time_distributed_matches_numpy():
    x = RNG.randn(2, 4, 3).astype(np.float32)
    with tf.Graph().as_default():
        for time_steps in (4, None):
            inp = keras.layers.Input(shape=(time_steps, 3))
            layer = keras.layers.TimeDistributed(keras.layers.Dense(5, activation="relu"))
            y = layer(inp)
            assert y.shape.as_list()[0] is None and y.shape.as_list()[2] == 5
            assert [v.op.name.split("/")[-1] for v in layer.trainable_weights] == \
                ["kernel", "bias"]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                (kernel, bias), got = sess.run([layer.weights, y], {inp: x})
            np.testing.assert_allclose(got, np.maximum(x @ kernel + bias, 0), rtol=1e-5,
                                       atol=1e-6)


def test_wrappers_in_a_sequential_model_fit_save_and_load(tmp_path):
    rng = np.random.RandomState(0)
    x = rng.randn(32, 5, 3).astype(np.float32)
    y = (x.sum(axis=(1, 2)) > 0).astype(np.float32)[:, None]
    path = os.path.join(str(tmp_path), "model.h5")
    with tf.Graph().as_default():
        model = keras.Sequential([
            keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True),
                                       input_shape=(5, 3)),
            keras.layers.TimeDistributed(keras.layers.Dense(2)),
            keras.layers.Bidirectional(keras.layers.GRU(3), merge_mode="sum"),
            keras.layers.Dense(1, activation="sigmoid")])
        model.compile(keras.optimizers.Adam(0.05), "binary_crossentropy")
        losses = model.fit(x, y, epochs=2, batch_size=8, verbose=0).history["loss"]
        assert losses[1] < losses[0]
        assert model.layers[0].output_shape == (None, 5, 8)
        assert model.layers[1].output_shape == (None, 5, 2)
        assert model.layers[2].output_shape == (None, 3)
        # 2 LSTMs (kernel, bias), the Dense, 2 GRUs (gates and candidate), the last Dense
        assert len(model.trainable_weights) == 4 + 2 + 8 + 2
        names = [v.op.name for v in model.weights]
        assert names[0].startswith("bidirectional") and "forward_lstm" in names[0]
        expected = model.predict(x[:4])
        model.save(path)
    with tf.Graph().as_default():
        loaded = keras.models.load_model(path)
        np.testing.assert_allclose(loaded.predict(x[:4]), expected, rtol=1e-6)


# ---- string hashing -------------------------------------------------------------------------


def test_string_to_hash_bucket():
    # TensorFlow's hashes: its documented examples give the same buckets here.
    words = [[b"the", b"cat"], [b"sat", b"the"]]
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None, 2])
        fast = tf.string_to_hash_bucket_fast(s, 7)
        assert fast.dtype == tf.int64 and fast.shape.as_list() == [None, 2]
        outs = run([fast, tf.strings.to_hash_bucket_fast(s, 7),
                    tf.string_to_hash_bucket_strong(s, 1000, [1, 2]),
                    tf.strings.to_hash_bucket_strong(s, 1000, [3, 4]),
                    tf.string_to_hash_bucket(s, 7), tf.strings.to_hash_bucket(s, 7),
                    tf.string_to_hash_bucket_fast("solo", 1)], {s: words})
        docs = run([tf.strings.to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3),
                    tf.strings.to_hash_bucket_strong(["Hello", "TF"], 3, [1, 2]),
                    tf.strings.to_hash_bucket(["Hello", "TensorFlow", "2.x"], 3)])
    for got in outs[:2] + outs[4:6]:
        assert got.dtype == np.int64 and got.shape == (2, 2)
        assert got[0, 0] == got[1, 1] and got.min() >= 0 and got.max() < 7
    np.testing.assert_array_equal(outs[0], outs[1])
    assert outs[2][0, 0] == outs[2][1, 1] and not np.array_equal(outs[2], outs[3])
    assert outs[6] == 0
    assert [d.tolist() for d in docs] == [[0, 2, 2], [2, 0], [2, 0, 1]]
    with pytest.raises(ValueError):
        tf.string_to_hash_bucket_strong(["a"], 10, [1])


# ---- math and framework odds and ends ---------------------------------------------------------


def test_xlogy_and_xdivy_values_and_gradients():
    xv = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])
    yv = np.array([0.0, 2.0, 0.5])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [2, 3])
        y = tf.placeholder(tf.float64, [3])
        xl, xd = tf.math.xlogy(x, y), tf.math.xdivy(x, y)
        grads = tf.gradients(xl, [x, y]) + tf.gradients(xd, [x, y])
        (vl, vd), (glx, gly, gdx, gdy) = run([[xl, xd], grads], {x: xv, y: yv})
        lit = run(tf.math.xlogy(tf.constant([0.0, 2.0]), 0.0))
    nz = xv != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(vl, np.where(nz, xv * np.log(yv), 0.0), rtol=1e-12)
        np.testing.assert_allclose(vd, np.where(nz, xv / yv, 0.0), rtol=1e-12)
        np.testing.assert_allclose(glx, np.where(nz, np.log(yv) + 0 * xv, 0.0), rtol=1e-12)
        np.testing.assert_allclose(gly, np.where(nz, xv / yv, 0.0).sum(0), rtol=1e-12)
        np.testing.assert_allclose(gdx, np.where(nz, 1 / yv + 0 * xv, 0.0), rtol=1e-12)
        np.testing.assert_allclose(gdy, np.where(nz, -xv / yv ** 2, 0.0).sum(0), rtol=1e-12)
    assert lit[0] == 0.0 and lit[1] == -np.inf
    with pytest.raises(TypeError):
        tf.math.xlogy(tf.constant([1, 2]), tf.constant([1, 2]))


def test_monotonic_checks_timestamp_and_no_gradient():
    with tf.Graph().as_default():
        got = run([tf.math.is_non_decreasing([1, 2, 2, 3]),
                   tf.math.is_strictly_increasing([1, 2, 2, 3]),
                   tf.is_strictly_increasing([[1, 2], [3, 4]]),
                   tf.is_non_decreasing([3, 1])])
        assert [bool(v) for v in got] == [True, False, True, False]
        stamp = tf.timestamp()
        assert stamp.dtype == tf.float64 and stamp.shape.as_list() == []
        with tf.Session() as sess:
            before = time.time()
            first = sess.run(stamp)
            second = sess.run(stamp)
            after = time.time()
    assert before - 1e-3 <= first <= second <= after + 1e-3
    assert tf.no_gradient is tf.NotDifferentiable
    with pytest.raises(TypeError):
        tf.no_gradient(None)


class Meters:
    def __init__(self, value):
        self.value = value


class Feet(Meters):
    pass


def test_register_tensor_conversion_function():
    seen = []

    def to_tensor(m, dtype=None, name=None, as_ref=False):
        seen.append(as_ref)
        return tf.constant(m.value, dtype=dtype or tf.float32, name=name)

    def feet_first(m, dtype=None, name=None, as_ref=False):
        if not isinstance(m, Feet):
            return NotImplemented
        return tf.constant(m.value * 0.3048, dtype=dtype or tf.float32, name=name)

    tf.register_tensor_conversion_function(Meters, to_tensor)
    tf.register_tensor_conversion_function(Meters, feet_first, priority=10)
    with tf.Graph().as_default():
        t = tf.convert_to_tensor(Meters(2.0))
        assert t.dtype == tf.float32 and seen == [False]
        got = run([t, tf.add(Meters(3.0), 1.0), tf.constant(1.0) + Feet(10.0),
                   tf.convert_to_tensor(Meters(4.0), dtype=tf.float64)])
        np.testing.assert_allclose(got, [2.0, 4.0, 4.048, 4.0], rtol=1e-6)
        tf.register_tensor_conversion_function(
            Feet, lambda m, dtype=None, name=None, as_ref=False: tf.constant([1, 2]), priority=1)
        with pytest.raises(RuntimeError, match="incompatible dtype"):
            tf.convert_to_tensor(Feet(1.0), dtype=tf.float32)
    with pytest.raises(TypeError):
        tf.register_tensor_conversion_function(float, to_tensor)
    with pytest.raises(TypeError):
        tf.register_tensor_conversion_function("Meters", to_tensor)
