"""tf.contrib.seq2seq attention (shardflow/seq2seq_attention.py): Bahdanau and Luong scores with
memory_sequence_length masking, AttentionWrapper driven by dynamic_rnn (alignment_history,
attention_layer_size, output_attention) against a NumPy re-run with the same variables, a
finite-difference gradient, and tile_batch."""
import numpy as np
import pytest

import shardflow as tf

seq2seq = tf.contrib.seq2seq


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _variables(sess):
    return {v.name.split(":")[0]: sess.run(v) for v in tf.global_variables()}


def _find(values, suffix):
    (key,) = [k for k in values if k.endswith(suffix)]
    return values[key]


def _numpy_decoder(v, memory, lengths, inputs, mechanism, layer_size):
    """The wrapper over a BasicRNNCell, step by step, from the variables' values `v`."""
    batch, mem_time, _ = memory.shape
    mask = np.arange(mem_time)[None, :] < lengths[:, None]
    values = memory * mask[:, :, None]
    keys = values @ _find(v, "memory_layer/kernel")
    h = np.zeros((batch, _find(v, "basic_rnn_cell/bias").shape[0]))
    attention = np.zeros((batch, layer_size))
    outputs, history = [], []
    for t in range(inputs.shape[1]):
        x = np.concatenate([inputs[:, t], attention, h], 1)
        h = np.tanh(x @ _find(v, "basic_rnn_cell/kernel") + _find(v, "basic_rnn_cell/bias"))
        if mechanism == "bahdanau":
            q = h @ _find(v, "query_layer/kernel")
            score = (_find(v, "attention_v") * np.tanh(keys + q[:, None])).sum(-1)
        else:
            score = (keys * h[:, None]).sum(-1) * _find(v, "attention_g")
        align = _softmax(np.where(mask, score, -np.inf))
        context = (align[:, :, None] * values).sum(1)
        attention = np.concatenate([h, context], 1) @ _find(v, "attention_layer/kernel")
        outputs.append(attention)
        history.append(align)
    return np.stack(outputs, 1), np.stack(history), h


@pytest.mark.parametrize("mechanism", ["bahdanau", "luong"])
def test_attention_wrapper_in_dynamic_rnn_matches_numpy(mechanism):
    rng = np.random.RandomState(0)
    batch, mem_time, depth, units, steps, layer_size = 3, 5, 4, 6, 4, 3
    memory_v = rng.randn(batch, mem_time, depth).astype(np.float32)
    lengths_v = np.array([5, 2, 3], np.int32)
    inputs_v = rng.randn(batch, steps, 2).astype(np.float32)
    memory = tf.placeholder(tf.float32, [None, None, depth])
    lengths = tf.placeholder(tf.int32, [None])
    inputs = tf.placeholder(tf.float32, [None, None, 2])
    if mechanism == "bahdanau":
        attention = seq2seq.BahdanauAttention(units, memory, memory_sequence_length=lengths)
    else:
        attention = seq2seq.LuongAttention(units, memory, memory_sequence_length=lengths,
                                           scale=True)
    cell = seq2seq.AttentionWrapper(tf.nn.rnn_cell.BasicRNNCell(units), attention,
                                    attention_layer_size=layer_size, alignment_history=True)
    initial = cell.zero_state(tf.shape(inputs)[0], tf.float32)
    initial = initial.clone(cell_state=tf.zeros_like(initial.cell_state))
    outputs, final = tf.nn.dynamic_rnn(cell, inputs, initial_state=initial)
    assert isinstance(final, seq2seq.AttentionWrapperState)
    history = final.alignment_history.stack()
    feed = {memory: memory_v, lengths: lengths_v, inputs: inputs_v}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, hist, align, h, time = sess.run(
            [outputs, history, final.alignments, final.cell_state, final.time], feed)
        v = _variables(sess)
    want_out, want_hist, want_h = _numpy_decoder(v, memory_v, lengths_v, inputs_v, mechanism,
                                                 layer_size)
    np.testing.assert_allclose(out, want_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(hist, want_hist, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(align, want_hist[-1], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(h, want_h, rtol=1e-4, atol=1e-5)
    assert time == steps
    assert np.all(hist[:, 1, 2:] == 0) and np.all(hist[:, 2, 3:] == 0)   # masked positions


def test_attention_gradient_matches_finite_differences_and_output_cell():
    rng = np.random.RandomState(1)
    memory_v = rng.randn(2, 3, 4)
    memory = tf.Variable(memory_v.astype(np.float64))
    attention = seq2seq.LuongAttention(4, memory, memory_sequence_length=[3, 2])
    cell = seq2seq.AttentionWrapper(tf.nn.rnn_cell.GRUCell(4), attention,
                                    output_attention=False)
    assert cell.output_size == 4
    inputs = tf.constant(rng.randn(2, 3, 1))
    outputs, final = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float64)
    loss = tf.reduce_sum(tf.square(outputs)) + tf.reduce_sum(final.attention)
    (grad,) = tf.gradients(loss, [memory])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g = sess.run(grad)
        num = np.zeros_like(memory_v)
        for i in np.ndindex(*memory_v.shape):
            vals = []
            for sign in (1, -1):
                e = np.zeros_like(memory_v)
                e[i] = sign * 1e-5
                sess.run(memory.assign(memory_v + e))
                vals.append(sess.run(loss))
            num[i] = (vals[0] - vals[1]) / 2e-5
    np.testing.assert_allclose(g, num, rtol=1e-4, atol=1e-6)
    assert np.all(g[1, 2] == 0)                      # past memory_sequence_length


def test_tile_batch():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    state = tf.nn.rnn_cell.LSTMStateTuple(tf.constant(x), tf.constant(x + 10))
    tiled = seq2seq.tile_batch(state, 3)
    with tf.Session() as sess:
        c, h = sess.run(tiled)
    np.testing.assert_array_equal(c, np.repeat(x, 3, axis=0))
    np.testing.assert_array_equal(h, np.repeat(x + 10, 3, axis=0))
    assert isinstance(tiled, tf.nn.rnn_cell.LSTMStateTuple)


def test_tile_batch_keeps_what_is_known_of_the_shape():
    """The encoder's outputs [batch, time, depth] with batch and time unknown: the tiled memory
    keeps its depth, so an attention mechanism built on it (beam search) can make its layers."""
    g = tf.Graph()
    with g.as_default():
        memory = tf.placeholder(tf.float32, [None, None, 4])
        tiled = seq2seq.tile_batch(memory, 3)
        assert tiled.shape.as_list() == [None, None, 4]
        assert (tiled * 2.0).shape.as_list() == [None, None, 4]  # the engine knows it too
        seq2seq.LuongAttention(4, tiled, memory_sequence_length=tf.fill([tf.shape(tiled)[0]], 2))
        v = np.arange(2 * 5 * 4, dtype=np.float32).reshape(2, 5, 4)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(tiled, {memory: v}), np.repeat(v, 3, axis=0))


def test_attention_wrapper_with_several_mechanisms():
    """A list of mechanisms, each with its own attention layer (attention_layer,
    attention_layer_1, as TF's uniquified layers; the second one's kernel already existed)."""
    tf.reset_default_graph()
    batch, steps = 4, 5
    memory = tf.random_normal([batch, steps, 16], seed=1)
    lengths = tf.fill([batch], steps)
    mechanisms = [tf.contrib.seq2seq.LuongAttention(16, memory, memory_sequence_length=lengths),
                  tf.contrib.seq2seq.BahdanauAttention(16, memory,
                                                       memory_sequence_length=lengths)]
    cell = tf.contrib.seq2seq.AttentionWrapper(tf.nn.rnn_cell.GRUCell(16), mechanisms,
                                               attention_layer_size=[8, 6])
    out, _ = tf.nn.dynamic_rnn(cell, tf.random_normal([batch, 3, 6], seed=2),
                               initial_state=cell.zero_state(batch, tf.float32))
    names = [v.op.name for v in tf.global_variables()]
    assert "rnn/attention_wrapper/attention_layer/kernel" in names
    assert "rnn/attention_wrapper/attention_layer_1/kernel" in names
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out).shape == (batch, 3, 14)


def test_variable_names_are_tf1s_so_its_checkpoints_restore():
    # Regression: the mechanisms' variables lived under "BahdanauAttention/..." (their name);
    # TF 1.15 names them memory_layer/kernel where the mechanism is made and
    # attention_wrapper/bahdanau_attention/... (or luong_attention) where it is called.
    tf.reset_default_graph()
    memory = tf.random_normal([2, 5, 8], seed=1)
    for kind in ("bahdanau", "luong"):
        with tf.variable_scope("decoder_" + kind):
            mechanism = (tf.contrib.seq2seq.BahdanauAttention(8, memory, normalize=True)
                         if kind == "bahdanau" else
                         tf.contrib.seq2seq.LuongAttention(8, memory, scale=True))
            cell = tf.contrib.seq2seq.AttentionWrapper(tf.nn.rnn_cell.GRUCell(8), mechanism,
                                                       attention_layer_size=8)
            tf.nn.dynamic_rnn(cell, tf.random_normal([2, 3, 4], seed=2),
                              initial_state=cell.zero_state(2, tf.float32))
    names = {v.op.name for v in tf.global_variables()}
    inner = "decoder_bahdanau/rnn/attention_wrapper/bahdanau_attention/"
    assert {"decoder_bahdanau/memory_layer/kernel", inner + "query_layer/kernel",
            inner + "attention_v", inner + "attention_g", inner + "attention_b",
            "decoder_luong/memory_layer/kernel",
            "decoder_luong/rnn/attention_wrapper/luong_attention/attention_g"} <= names, names
