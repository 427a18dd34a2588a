"""tf.while_loop as TF1 programs use it (issue 14): results, structures, shape invariants,
maximum_iterations, variables made in the body, nested loops, gradients against finite
differences, training through a loop, a body split across two devices (same numbers, body ops
on their device in the trace) and clear errors."""
import numpy as np
import pytest

import shardflow as tf


def test_counter_and_structures():
    g = tf.Graph()
    with g.as_default():
        n = tf.placeholder(tf.int32, [])
        i = tf.while_loop(lambda i: i < n, lambda i: i + 2, [tf.constant(0)])
        pair = tf.while_loop(lambda i, p: i < 3,
                             lambda i, p: (i + 1, (p[0] * 2.0, p[1] + 1.0)),
                             (0, (tf.constant(1.0), tf.constant(0.0))))
        capped = tf.while_loop(lambda i: i < 100, lambda i: i + 1, [0], maximum_iterations=7)
        with tf.Session() as s:
            assert s.run(i, {n: 9}) == 10
            assert s.run(i, {n: 0}) == 0
            k, (p0, p1) = s.run(pair)
            assert (k, p0, p1) == (3, 8.0, 3.0)
            assert s.run(capped) == 7


def test_shape_invariants_let_a_variable_grow():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([1.0])
        _, out = tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.concat([x, x], 0)),
                               [0, x], shape_invariants=[tf.TensorShape([]),
                                                         tf.TensorShape([None])],
                               back_prop=False)
        # Without an invariant the change is refused when the graph is built, as TF1's; one
        # known only when the step runs (a placeholder's) fails the step.
        with pytest.raises(ValueError, match="shape_invariants"):
            tf.while_loop(lambda x: tf.reduce_sum(x) < 10, lambda x: tf.concat([x, x], 0), [x])
        n = tf.placeholder(tf.int32, [])
        bad = tf.while_loop(lambda x: tf.reduce_sum(x) < 10,
                            lambda x: tf.tile(x, tf.reshape(n, [1])), [x])
        with tf.Session() as s:
            assert s.run(out).tolist() == [1.0] * 8
            with pytest.raises(tf.errors.InvalidArgumentError, match="shape_invariants"):
                s.run(bad, {n: 2})


def rnn_graph(device_for_body=None):
    """h_t = tanh(h_{t-1} W + x_t) over 5 steps; W a variable, xs fed."""
    g = tf.Graph()
    with g.as_default():
        xs = tf.placeholder(tf.float64, [5, 3])
        w = tf.Variable(np.linspace(-0.5, 0.5, 9).reshape(3, 3), dtype=tf.float64, name="w")

        def body(t, h):
            if device_for_body:
                with tf.device(device_for_body):
                    z = tf.matmul(tf.reshape(h, [1, 3]), w)
            else:
                z = tf.matmul(tf.reshape(h, [1, 3]), w)
            return t + 1, tf.tanh(tf.reshape(z, [3]) + tf.gather(xs, t))

        _, h = tf.while_loop(lambda t, h: t < 5, body,
                             [tf.constant(0), tf.zeros([3], tf.float64)])
        loss = tf.reduce_sum(h * h)
        dw, dxs = tf.gradients(loss, [w, xs])
        init = tf.global_variables_initializer()
    return g, xs, w, loss, dw, dxs, init


def test_gradients_match_finite_differences():
    g, xs, w, loss, dw, dxs, init = rnn_graph()
    rng = np.random.RandomState(0)
    x0 = rng.uniform(-1, 1, (5, 3))
    with tf.Session(graph=g) as s:
        s.run(init)
        dw_, dxs_ = s.run([dw, dxs], {xs: x0})
        w0 = s.run(w)
        eps = 1e-6
        for idx in [(0, 0), (1, 2), (2, 1)]:
            up, down = w0.copy(), w0.copy()
            up[idx] += eps
            down[idx] -= eps
            s.run(w.assign(up))
            lu = s.run(loss, {xs: x0})
            s.run(w.assign(down))
            ld = s.run(loss, {xs: x0})
            assert abs((lu - ld) / (2 * eps) - dw_[idx]) < 1e-6
        s.run(w.assign(w0))
        for idx in [(0, 1), (4, 2)]:
            up, down = x0.copy(), x0.copy()
            up[idx] += eps
            down[idx] -= eps
            numeric = (s.run(loss, {xs: up}) - s.run(loss, {xs: down})) / (2 * eps)
            assert abs(numeric - dxs_[idx]) < 1e-6


def test_a_body_split_across_two_devices_gives_the_same_result():
    x0 = np.random.RandomState(1).uniform(-1, 1, (5, 3))
    results = []
    for device in (None, "/cpu:1"):
        g, xs, w, loss, dw, dxs, init = rnn_graph(device)
        md = tf.RunMetadata()
        with tf.Session(graph=g, config=tf.ConfigProto(cpu_device_count=2)) as s:
            s.run(init)
            results.append(s.run([loss, dw, dxs], {xs: x0},
                                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                                 run_metadata=md))
        matmuls = [st for st in md.node_stats() if st["op"] == "MatMul"
                   and st["node"].startswith("while/body")]
        # Five iterations forward, each on the device the body asked for.
        assert len(matmuls) == 5
        want = "CPU:1" if device else "CPU:0"
        assert all(st["device"].endswith(want) for st in matmuls), matmuls
    for a, b in zip(results[0], results[1]):
        np.testing.assert_array_equal(a, b)


def test_training_through_a_loop_and_nested_loops():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(2.0)

        def outer_body(i, acc):
            inner = tf.while_loop(lambda j, a: j < 2, lambda j, a: (j + 1, a * w), [0, acc])[1]
            return i + 1, inner

        # acc = w^(2*3) = w^6
        _, y = tf.while_loop(lambda i, a: i < 3, outer_body, [0, tf.constant(1.0)])
        (dw,) = tf.gradients(y, [w])
        loss = tf.square(y - 1.0)
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            y_, dw_ = s.run([y, dw])
            assert y_ == pytest.approx(64.0) and dw_ == pytest.approx(6 * 32.0)
            s.run(w.assign(1.05))
            first = s.run(loss)
            for _ in range(20):
                s.run(train)
            assert s.run(loss) < first * 0.1


def test_variables_made_in_the_body_live_outside_the_loop():
    g = tf.Graph()
    with g.as_default():
        def body(i, x):
            with tf.variable_scope("cell", reuse=tf.AUTO_REUSE):
                k = tf.get_variable("k", [], initializer=tf.constant_initializer(3.0))
            return i + 1, x * k

        _, y = tf.while_loop(lambda i, x: i < 2, body, [0, tf.constant(1.0)])
        names = [v.name for v in tf.global_variables()]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            assert s.run(y) == 9.0
    assert names == ["cell/k:0"]


def test_errors_say_what_to_change():
    g = tf.Graph()
    with g.as_default():
        with pytest.raises(ValueError, match="2 values for 1 loop variables"):
            tf.while_loop(lambda i: i < 3, lambda i: (i, i), [0])
        with pytest.raises(ValueError, match="bool scalar"):
            tf.while_loop(lambda i: i, lambda i: i + 1, [0])
        x = tf.constant(2.0)
        y = tf.while_loop(lambda v: v < 10, lambda v: v * x, [x], back_prop=False)
        assert tf.gradients(y, [x]) == [None]      # as TF1's: no path back through the loop


def numpy_lstm(x, c, h, kernel, bias, forget_bias=1.0):
    """TF1's BasicLSTMCell over x [batch, time, depth], in NumPy."""
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    outs = []
    for t in range(x.shape[1]):
        gates = np.concatenate([x[:, t], h], 1) @ kernel + bias
        i, j, f, o = np.split(gates, 4, axis=1)
        c = c * sig(f + forget_bias) + sig(i) * np.tanh(j)
        h = np.tanh(c) * sig(o)
        outs.append(h)
    return np.stack(outs, 1), c, h


def test_dynamic_rnn_lstm_matches_numpy_and_its_gradients_finite_differences():
    rng = np.random.default_rng(3)
    xv = rng.normal(size=(2, 5, 3))
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [2, 5, 3])
        cell = tf.nn.rnn_cell.BasicLSTMCell(4)
        outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
        assert outputs.shape.as_list() == [2, 5, 4]
        assert isinstance(state, tf.nn.rnn_cell.LSTMStateTuple)
        names = sorted(v.op.name for v in tf.trainable_variables())
        assert names == ["rnn/basic_lstm_cell/bias", "rnn/basic_lstm_cell/kernel"]
        kernel = [v for v in tf.trainable_variables() if "kernel" in v.op.name][0]
        # A loss on every output and on the final state: gradients through the history too.
        loss = tf.reduce_sum(outputs * outputs) + tf.reduce_sum(state.c)
        gx, gk = tf.gradients(loss, [x, kernel])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            kv, bv = s.run([kernel, [v for v in tf.trainable_variables() if "bias" in
                                     v.op.name][0]])
            out, c, h, dx, dk = s.run([outputs, state.c, state.h, gx, gk], {x: xv})
            want, wc, wh = numpy_lstm(xv, np.zeros((2, 4)), np.zeros((2, 4)), kv, bv)
            np.testing.assert_allclose(out, want, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(c, wc, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(h, wh, rtol=1e-9, atol=1e-12)

            def f(xs):
                o, cc, _ = numpy_lstm(xs, np.zeros((2, 4)), np.zeros((2, 4)), kv, bv)
                return (o * o).sum() + cc.sum()
            eps, num = 1e-6, np.zeros_like(xv)
            for idx in np.ndindex(*xv.shape):
                d = np.zeros_like(xv)
                d[idx] = eps
                num[idx] = (f(xv + d) - f(xv - d)) / (2 * eps)
            np.testing.assert_allclose(dx, num, rtol=1e-5, atol=1e-7)
            k_idx = (1, 6)
            dkv = np.zeros_like(kv)
            dkv[k_idx] = eps

            def fk(k):
                o, cc, _ = numpy_lstm(xv, np.zeros((2, 4)), np.zeros((2, 4)), k, bv)
                return (o * o).sum() + cc.sum()
            assert abs(dk[k_idx] - (fk(kv + dkv) - fk(kv - dkv)) / (2 * eps)) < 1e-6


def test_dynamic_rnn_final_state_is_exactly_the_last_output():
    """Regression: the state past a sequence's end was carried as o + keep·(n − o), an ulp off
    n for some values, so the final state differed from the output it stopped at (seen on a
    CI machine with other matmul rounding)."""
    rng = np.random.default_rng(11)
    batch, steps = 24, 6
    xv = rng.normal(size=(batch, steps, 3)).astype(np.float32) * 3
    lengths = rng.integers(1, steps + 1, size=batch).astype(np.int32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, None, 3])
        n = tf.placeholder(tf.int32, [None])
        outputs, state = tf.nn.dynamic_rnn(tf.contrib.rnn.BasicRNNCell(7), x,
                                           sequence_length=n, dtype=tf.float32)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out, st = s.run([outputs, state], {x: xv, n: lengths})
    last = out[np.arange(batch), lengths - 1]
    np.testing.assert_array_equal(st, last)


def test_dynamic_rnn_sequence_length_gru_and_stacked_cells():
    rng = np.random.default_rng(4)
    xv = rng.normal(size=(3, 4, 2)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, None, 2])
        lengths = tf.placeholder(tf.int32, [None])
        cells = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(3),
                                             tf.contrib.rnn.BasicRNNCell(5)])
        outputs, state = tf.nn.dynamic_rnn(cells, x, sequence_length=lengths, dtype=tf.float32)
        names = sorted(v.op.name for v in tf.trainable_variables())
        assert "rnn/multi_rnn_cell/cell_0/gru_cell/gates/kernel" in names, names
        train = tf.train.AdamOptimizer(0.01).minimize(tf.reduce_sum(tf.square(outputs)))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out, (s0, s1) = s.run([outputs, state], {x: xv, lengths: [4, 2, 0]})
            assert out.shape == (3, 4, 5)
            # Past a sequence's length its outputs are zeros and its state stops there.
            assert np.all(out[1, 2:] == 0) and np.all(out[2] == 0) and np.any(out[1, :2] != 0)
            np.testing.assert_array_equal(s1[1], out[1, 1])
            assert np.all(s0[2] == 0) and np.all(s1[2] == 0)
            before = s.run(tf.reduce_sum(tf.square(outputs)), {x: xv, lengths: [4, 4, 4]})
            for _ in range(20):
                s.run(train, {x: xv, lengths: [4, 4, 4]})
            after = s.run(tf.reduce_sum(tf.square(outputs)), {x: xv, lengths: [4, 4, 4]})
            assert after < before


def test_cond_inside_a_loop_and_a_loop_inside_cond():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [])
        # Collatz-like: halve when even-ish, else 3x+1, counting steps; cond inside the body.
        def body(i, v):
            v2 = tf.cond(tf.equal(tf.floormod(v, 2.0), 0.0), lambda: v / 2.0,
                         lambda: 3.0 * v + 1.0)
            return i + 1, v2
        steps, _ = tf.while_loop(lambda i, v: v > 1.0, body, [0, x])
        power = tf.cond(x > 0, lambda: tf.while_loop(lambda i, a: i < 3,
                                                     lambda i, a: (i + 1, a * x), [0, 1.0])[1],
                        lambda: tf.constant(0.0))
        dpower = tf.gradients(power, x)[0]
        with tf.Session() as s:
            assert s.run(steps, {x: 6.0}) == 8  # 6 3 10 5 16 8 4 2 1
            assert s.run(power, {x: 2.0}) == 8.0 and s.run(power, {x: -2.0}) == 0.0
            assert s.run(dpower, {x: 2.0}) == 12.0 and s.run(dpower, {x: -2.0}) == 0.0


def test_a_gradient_through_stateful_random_ops_in_a_body_is_refused():
    """Dropout and the uniform/normal draws are built stateless in a body (their gradient is
    tested in test_random_in_functions.py); a random op without a stateless twin is refused."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3])
        _, y = tf.while_loop(lambda i, v: i < 2,
                             lambda i, v: (i + 1, tf.nn.dropout(v, 0.5)), [0, x])
        assert tf.gradients(y, x)[0] is not None
        _, z = tf.while_loop(lambda i, v: i < 2,
                             lambda i, v: (i + 1, v * tf.random_gamma([3], 2.0)), [0, x])
        with pytest.raises(ValueError, match="draw different numbers.*outside the loop"):
            tf.gradients(z, x)


def test_maximum_iterations_as_a_tensor():
    # Decoders bound their loops by a run-time length (tf.shape(x)[1]); it was a TypeError.
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, None])
        n = tf.shape(x)[1]
        single = tf.while_loop(lambda i: i < 100, lambda i: i + 1, tf.constant(0),
                               maximum_iterations=n)
        pair = tf.while_loop(lambda i, a: i < 100, lambda i, a: (i + 1, a * 2.0), [0, 1.0],
                             maximum_iterations=n)
        early = tf.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, a + 1.0),
                              (0, tf.constant(0.0)), maximum_iterations=n)
        w = tf.Variable(1.5)
        power = tf.while_loop(lambda i, a: True, lambda i, a: (i + 1, a * w),
                              [0, tf.constant(1.0)], maximum_iterations=n)[1]
        dw = tf.gradients(power, w)[0]
        array = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        _, array = tf.while_loop(lambda i, t: i < 100,
                                 lambda i, t: (i + 1, t.write(i, tf.cast(i, tf.float32))),
                                 [0, array], maximum_iterations=n)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            feed = {x: np.zeros((1, 5))}
            assert s.run(single, feed) == 5
            assert s.run(pair, feed) == [5, 32.0]
            assert s.run(early, feed) == (2, 2.0)                 # cond ends it first
            assert s.run([power, dw], feed) == [1.5 ** 5, 5 * 1.5 ** 4]
            assert s.run(array.stack(), feed).tolist() == [0, 1, 2, 3, 4]
            assert s.run(single, {x: np.zeros((1, 2))}) == 2
