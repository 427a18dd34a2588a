"""Random ops inside cond branches and while_loop bodies (Note [Random ops in functions] in
shardflow/framework.py): their gradients recompute the function, and the recomputation must draw
the numbers of the forward pass. Before, `tf.cond(is_training, lambda: tf.nn.dropout(h, 0.5),
lambda: h)` and a DropoutWrapper inside dynamic_rnn could not be differentiated at all."""
import numpy as np
import pytest

import shardflow as sf


@pytest.fixture(autouse=True)
def fresh_graph():
    sf.reset_default_graph()
    yield


def test_dropout_in_cond_gradient_is_the_forward_mask():
    x = sf.placeholder(sf.float64, [6, 5])
    training = sf.placeholder_with_default(True, [])
    h = sf.cond(training, lambda: sf.nn.dropout(x, 0.5), lambda: x)
    dx, = sf.gradients(sf.reduce_sum(h), x)
    xv = np.arange(1.0, 31.0).reshape(6, 5)
    with sf.Session() as s:
        outs = [s.run([h, dx], {x: xv}) for _ in range(3)]
        same = s.run(h, {x: xv, training: False})
    for hv, dv in outs:
        mask = hv / xv
        assert set(np.unique(mask)) <= {0.0, 2.0}
        np.testing.assert_array_equal(dv, mask)        # the gradient uses the forward mask
    # Every run draws a new mask, as TF1's dropout does.
    assert not np.array_equal(outs[0][0], outs[1][0]) or not np.array_equal(outs[1][0],
                                                                            outs[2][0])
    np.testing.assert_array_equal(same, xv)


def test_dropout_in_while_body_each_iteration_draws_its_own_mask():
    x = sf.placeholder(sf.float64, [40])

    def body(i, acc):
        return i + 1, acc + sf.nn.dropout(x, 0.5)

    _, acc = sf.while_loop(lambda i, acc: i < 3, body, [0, sf.zeros_like(x)])
    dx, = sf.gradients(sf.reduce_sum(acc), x)
    xv = np.linspace(1.0, 2.0, 40)
    with sf.Session() as s:
        accv, dxv = s.run([acc, dx], {x: xv})
    kept = accv / xv / 2.0            # how many of the 3 iterations kept each element
    np.testing.assert_allclose(kept, np.round(kept), atol=1e-12)
    np.testing.assert_allclose(dxv, accv / xv, rtol=1e-12)
    # Iterations drew different masks: some elements were kept once or twice, not 0 or 3 times.
    assert np.any((np.round(kept) == 1) | (np.round(kept) == 2))


def test_nested_loops_and_conds_gradient_matches_forward():
    x = sf.placeholder(sf.float64, [30])
    training = sf.placeholder_with_default(True, [])

    def inner_body(j, acc):
        d = sf.cond(training, lambda: sf.nn.dropout(x, 0.5), lambda: x)
        return j + 1, acc + d

    def outer_body(i, acc):
        _, inner = sf.while_loop(lambda j, a: j < 2, inner_body, [0, sf.zeros_like(x)])
        return i + 1, acc + inner

    _, acc = sf.while_loop(lambda i, a: i < 3, outer_body, [0, sf.zeros_like(x)])
    dx, = sf.gradients(sf.reduce_sum(acc), x)
    xv = np.linspace(1.0, 3.0, 30)
    with sf.Session() as s:
        accv, dxv = s.run([acc, dx], {x: xv})
    np.testing.assert_allclose(dxv, accv / xv, rtol=1e-12)
    kept = np.round(accv / xv / 2.0)
    assert kept.min() >= 0 and kept.max() <= 6 and len(np.unique(kept)) > 2


def test_random_uniform_in_loop_body_gradient():
    """A noise term drawn in the body (RandomUniform): the gradient sees the same noise."""
    w = sf.Variable(np.float64(1.5))

    def body(i, acc):
        noise = sf.random_uniform([], dtype=sf.float64)
        return i + 1, acc + noise * w * w

    _, acc = sf.while_loop(lambda i, a: i < 4, body, [0, sf.constant(0.0, sf.float64)])
    dw, = sf.gradients(acc, w)
    with sf.Session() as s:
        s.run(sf.global_variables_initializer())
        accv, dwv = s.run([acc, dw])
    # acc = w^2 * sum(noise) so d acc / dw = 2 acc / w.
    assert dwv == pytest.approx(2 * accv / 1.5, rel=1e-12)


def test_dropout_wrapper_cell_in_a_loop_gradient_check():
    """Numeric gradient check of a DropoutWrapper cell stepped by while_loop (as dynamic_rnn
    steps it), the graph's random key fed so that every run draws the same masks."""
    x = sf.placeholder(sf.float64, [4, 3, 2])     # [time, batch, depth]
    cell = sf.nn.rnn_cell.DropoutWrapper(sf.nn.rnn_cell.BasicRNNCell(3, dtype=sf.float64),
                                         input_keep_prob=0.7, output_keep_prob=0.6,
                                         state_keep_prob=0.8)

    def body(t, state, acc):
        out, state = cell(sf.gather(x, t), state)
        return t + 1, state, acc + sf.reduce_sum(out * out)

    _, _, loss = sf.while_loop(lambda t, s, a: t < 4, body,
                               [0, sf.zeros([3, 3], sf.float64),
                                sf.constant(0.0, sf.float64)])
    dx, = sf.gradients(loss, x)
    key = sf.get_default_graph()._rng_draw
    rng = np.random.RandomState(0)
    xv = rng.randn(4, 3, 2)
    with sf.Session() as s:
        s.run(sf.global_variables_initializer())
        feed = {x: xv, key: 12345}
        analytic = s.run(dx, feed)
        assert s.run(loss, feed) == s.run(loss, feed)
        assert s.run(loss, {x: xv, key: 54321}) != s.run(loss, feed)  # masks follow the key
        numeric = np.zeros_like(xv)
        eps = 1e-6
        for idx in np.ndindex(*xv.shape):
            for sign in (1, -1):
                xp = xv.copy()
                xp[idx] += sign * eps
                numeric[idx] += sign * s.run(loss, {x: xp, key: 12345}) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)
    assert np.any(analytic == 0)    # inputs the input mask dropped get no gradient


def test_lstm_with_dropout_wrapper_trains():
    """The TF1 pattern: MultiRNNCell of DropoutWrapper(LSTMCell) under dynamic_rnn, Adam."""
    sf.set_random_seed(3)
    rng = np.random.RandomState(1)
    xs = rng.randn(64, 6, 4).astype(np.float32)
    ys = (xs[:, :, 0].sum(axis=1) > 0).astype(np.int32)
    x = sf.placeholder(sf.float32, [None, 6, 4])
    y = sf.placeholder(sf.int32, [None])
    keep = sf.placeholder_with_default(1.0, [])
    cells = [sf.nn.rnn_cell.DropoutWrapper(sf.nn.rnn_cell.LSTMCell(16), output_keep_prob=keep)
             for _ in range(2)]
    out, _ = sf.nn.dynamic_rnn(sf.nn.rnn_cell.MultiRNNCell(cells), x, dtype=sf.float32)
    logits = sf.layers.dense(out[:, -1], 2)
    loss = sf.reduce_mean(sf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train = sf.train.AdamOptimizer(0.02).minimize(loss)
    with sf.Session() as s:
        s.run(sf.global_variables_initializer())
        first = s.run(loss, {x: xs, y: ys})
        for _ in range(60):
            s.run(train, {x: xs, y: ys, keep: 0.8})
        last = s.run(loss, {x: xs, y: ys})
    assert last < 0.5 * first


def test_layers_and_keras_dropout_under_a_training_tensor():
    x = sf.placeholder(sf.float32, [8, 10])
    training = sf.placeholder_with_default(False, [])
    h = sf.layers.dropout(sf.layers.dense(x, 10), rate=0.5, training=training)
    k = sf.keras.layers.Dropout(0.5)(h, training=training)
    opt = sf.train.GradientDescentOptimizer(0.1).minimize(sf.reduce_sum(k * k))
    with sf.Session() as s:
        s.run(sf.global_variables_initializer())
        xv = np.ones((8, 10), np.float32)
        s.run(opt, {x: xv, training: True})
        a, b = s.run(k, {x: xv}), s.run(k, {x: xv})
        np.testing.assert_array_equal(a, b)          # inference: no dropout
        t = s.run(k, {x: xv, training: True})
        assert np.any(t == 0)


def test_graph_seed_makes_runs_repeatable():
    def build():
        sf.reset_default_graph()
        sf.set_random_seed(7)
        x = sf.constant(np.ones(50))
        h = sf.cond(sf.constant(True), lambda: sf.nn.dropout(x, 0.5), lambda: x)
        return h

    runs = []
    for _ in range(2):
        h = build()
        with sf.Session() as s:
            runs.append([s.run(h) for _ in range(2)])
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert not np.array_equal(runs[0][0], runs[0][1])


def test_dataset_map_random_ops_stay_per_element():
    """A dataset's function is never recomputed: its random ops stay stateful, every element
    draws anew (not one key per run)."""
    ds = sf.data.Dataset.range(6).map(lambda i: sf.random_uniform([3]))
    it = ds.make_one_shot_iterator().get_next()
    with sf.Session() as s:
        rows = [s.run(it) for _ in range(6)]
    assert len({tuple(r) for r in rows}) == 6


def test_stateless_random_ops():
    a = sf.random.stateless_uniform([4, 3], seed=[1, 2], minval=-1.0, maxval=1.0)
    b = sf.random.stateless_uniform([4, 3], seed=sf.constant([1, 2], sf.int64),
                                    minval=-1.0, maxval=1.0)
    c = sf.random.stateless_normal([1000], seed=[3, 4], dtype=sf.float64)
    d = sf.contrib.stateless.stateless_truncated_normal([1000], seed=[3, 4], stddev=2.0)
    with sf.Session() as s:
        av, av2, bv, cv, dv = s.run([a, a, b, c, d])
    np.testing.assert_array_equal(av, av2)
    np.testing.assert_array_equal(av, bv)
    assert av.min() >= -1 and av.max() < 1
    assert abs(cv.mean()) < 0.15 and 0.85 < cv.std() < 1.15
    assert np.abs(dv).max() <= 4.0
    with pytest.raises(ValueError, match="seed must be a pair of integers"):
        sf.random.stateless_uniform([2], seed=[1, 2, 3])
    with pytest.raises(ValueError, match="not supported"):
        sf.random.stateless_normal([2], seed=[1, 2], dtype=sf.int32)
