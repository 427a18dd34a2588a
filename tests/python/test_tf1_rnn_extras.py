"""LSTMCell's peepholes, cell clipping and projection against NumPy; tf.contrib.rnn's
LSTMBlockCell, GRUBlockCell, OutputProjectionWrapper and stack_bidirectional_dynamic_rnn."""
import numpy as np
import pytest

import shardflow as tf


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_lstm(x, params, units, peep, clip, proj, proj_clip):
    batch, steps, _ = x.shape
    c = np.zeros((batch, units))
    h = np.zeros((batch, proj or units))
    outs = []
    for t in range(steps):
        gates = np.concatenate([x[:, t], h], 1) @ params["kernel"] + params["bias"]
        i, j, f, o = np.split(gates, 4, axis=1)
        f = f + 1.0
        if peep:
            f = f + params["w_f_diag"] * c
            i = i + params["w_i_diag"] * c
        c = c * sigmoid(f) + sigmoid(i) * np.tanh(j)
        if clip is not None:
            c = np.clip(c, -clip, clip)
        if peep:
            o = o + params["w_o_diag"] * c
        h = np.tanh(c) * sigmoid(o)
        if proj:
            h = h @ params["projection/kernel"]
            if proj_clip is not None:
                h = np.clip(h, -proj_clip, proj_clip)
        outs.append(h)
    return np.stack(outs, 1), c, h


@pytest.mark.parametrize("peep,clip,proj,proj_clip", [(True, None, None, None),
                                                      (True, 0.3, 3, 0.2),
                                                      (False, None, 2, None)])
def test_lstm_cell_peepholes_clip_and_projection_match_numpy(peep, clip, proj, proj_clip):
    x = np.random.RandomState(0).randn(2, 4, 3).astype(np.float32)
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.LSTMCell(5, use_peepholes=peep, cell_clip=clip, num_proj=proj,
                                       proj_clip=proj_clip,
                                       initializer=tf.random_uniform_initializer(-0.7, 0.7))
        out, state = tf.nn.dynamic_rnn(cell, tf.constant(x), dtype=tf.float32)
        grads = tf.gradients(tf.reduce_sum(out), tf.trainable_variables())
        assert cell.output_size == (proj or 5)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            params = {v.name[len("rnn/lstm_cell/"):-2]: sess.run(v)
                      for v in tf.trainable_variables()}
            got_out, got_state, got_grads = sess.run([out, state, grads])
    want_out, want_c, want_h = numpy_lstm(x.astype(np.float64), params, 5, peep, clip, proj,
                                          proj_clip)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_state.c, want_c, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_state.h, want_h, rtol=1e-4, atol=1e-5)
    assert all(g is not None and np.all(np.isfinite(g)) for g in got_grads)


def test_contrib_rnn_block_cells_projection_and_stacked_bidirectional():
    x = np.random.RandomState(1).randn(3, 5, 4).astype(np.float32)
    lengths = np.array([5, 3, 1])
    with tf.Graph().as_default():
        inputs = tf.constant(x)
        block_out, _ = tf.nn.dynamic_rnn(tf.contrib.rnn.LSTMBlockCell(6), inputs,
                                         dtype=tf.float32, scope="block")
        gru_out, _ = tf.nn.dynamic_rnn(tf.contrib.rnn.GRUBlockCellV2(6), inputs,
                                       dtype=tf.float32, scope="gru")
        projected, _ = tf.nn.dynamic_rnn(
            tf.contrib.rnn.OutputProjectionWrapper(tf.nn.rnn_cell.GRUCell(6), 2,
                                                   activation=tf.nn.relu),
            inputs, dtype=tf.float32, scope="proj")
        outputs, fw, bw = tf.contrib.rnn.stack_bidirectional_dynamic_rnn(
            [tf.nn.rnn_cell.GRUCell(4), tf.nn.rnn_cell.GRUCell(3)],
            [tf.nn.rnn_cell.GRUCell(4), tf.nn.rnn_cell.GRUCell(3)], inputs,
            sequence_length=lengths, dtype=tf.float32)
        names = sorted(v.name for v in tf.trainable_variables())
        loss = tf.reduce_sum(outputs) + tf.reduce_sum(projected)
        grads = tf.gradients(loss, tf.trainable_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            b, g, p, o, g_all = sess.run([block_out, gru_out, projected, outputs,
                                          [gr for gr in grads if gr is not None]])
    assert b.shape == (3, 5, 6) and g.shape == (3, 5, 6)
    assert p.shape == (3, 5, 2) and p.min() >= 0.0
    assert o.shape == (3, 5, 6) and len(fw) == 2 and len(bw) == 2
    np.testing.assert_array_equal(o[2, 1:], 0.0)      # past each sequence's length
    assert "block/lstm_cell/kernel:0" in names and "gru/gru_cell/gates/kernel:0" in names
    assert "proj/output_projection_wrapper/kernel:0" in names
    assert "stack_bidirectional_rnn/cell_1/bidirectional_rnn/bw/gru_cell/candidate/kernel:0" \
        in names
    assert len(g_all) > 0 and all(np.all(np.isfinite(v)) for v in g_all)
    with pytest.raises(ValueError, match="as many forward"):
        tf.contrib.rnn.stack_bidirectional_dynamic_rnn([tf.nn.rnn_cell.GRUCell(2)], [], x)


def test_legacy_seq2seq_and_feeding_an_lstm_state_tuple():
    """char-rnn's pieces: contrib.legacy_seq2seq.sequence_loss_by_example (per example, the
    weighted mean over the steps) and sequence_loss, rnn_decoder with a loop_function feeding
    outputs back, and Session.run fed a nested tuple of state tensors as one key."""
    legacy = tf.contrib.legacy_seq2seq
    rng = np.random.RandomState(4)
    lv = [rng.randn(2, 3).astype(np.float32) for _ in range(2)]
    tv = [np.array([0, 2]), np.array([1, 1])]
    wv = [np.array([1.0, 1.0], np.float32), np.array([1.0, 0.0], np.float32)]
    g = tf.Graph()
    with g.as_default():
        per_example = legacy.sequence_loss_by_example(
            [tf.constant(x) for x in lv], [tf.constant(t) for t in tv],
            [tf.constant(w) for w in wv])
        total = legacy.sequence_loss([tf.constant(x) for x in lv], [tf.constant(t) for t in tv],
                                     [tf.constant(w) for w in wv])
        cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(3) for _ in range(2)])
        state0 = cell.zero_state(1, tf.float32)
        calls = []

        def loop(prev, i):
            calls.append(i)
            return prev * 0.5
        outs, state = legacy.rnn_decoder([tf.ones([1, 3])] * 3, state0, cell, loop_function=loop)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got, got_total = s.run([per_example, total])
            first = s.run(state)
            # The final state fed back as the initial one: a nested tuple key.
            again = s.run(outs[0], {state0: first})
            assert again.shape == (1, 3) and not np.allclose(again, s.run(outs[0]))
    xent = [-np.log(np.exp(x)[np.arange(2), t] / np.exp(x).sum(1)) for x, t in zip(lv, tv)]
    want = (xent[0] * wv[0] + xent[1] * wv[1]) / (wv[0] + wv[1])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(got_total, want.sum() / 2, rtol=1e-5)
    assert calls == [1, 2] and len(outs) == 3
    with pytest.raises(ValueError, match="tuple of the same structure"):
        with tf.Session(graph=g) as s:
            s.run(outs[0], {state0: first[0]})


def test_variational_dropout_wrapper_keeps_one_mask_over_the_steps():
    """DropoutWrapper(variational_recurrent=True) (was refused): the units an output mask drops
    are the same at every step and for every example of a run, and differ between runs."""
    tf.reset_default_graph()
    tf.set_random_seed(3)
    cell = tf.nn.rnn_cell.DropoutWrapper(
        tf.nn.rnn_cell.BasicLSTMCell(16), input_keep_prob=0.7, output_keep_prob=0.5,
        state_keep_prob=0.6, variational_recurrent=True, input_size=4, dtype=tf.float32)
    x = tf.placeholder(tf.float32, [3, 6, 4])
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    grads = tf.gradients(tf.reduce_sum(out), tf.trainable_variables())
    feed = {x: np.ones((3, 6, 4), np.float32)}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        masks = []
        for _ in range(4):
            dropped = sess.run(out, feed) == 0
            np.testing.assert_array_equal(dropped.all(axis=(0, 1)), dropped.any(axis=(0, 1)))
            masks.append(dropped.any(axis=(0, 1)))
        assert any((m != masks[0]).any() for m in masks[1:])
        assert all(g.shape for g in sess.run(grads, feed))
    with pytest.raises(ValueError, match="input_size"):
        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(2), input_keep_prob=0.5,
                                      variational_recurrent=True, dtype=tf.float32)
