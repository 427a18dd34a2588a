"""TF 1.15 fidelity of the recurrent API: cells of one's own (RNNCell subclasses as TF1 programs
write them), cell scope names, and values against NumPy references of TF1's equations."""
import numpy as np

import shardflow as tf


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


class TanhCell(tf.nn.rnn_cell.RNNCell):
    """A TF1-style cell of one's own: h' = tanh([x, h] @ w)."""

    def __init__(self, num_units, reuse=None):
        super(TanhCell, self).__init__(_reuse=reuse)
        self._n = num_units

    @property
    def state_size(self):
        return self._n

    @property
    def output_size(self):
        return self._n

    def call(self, inputs, state):
        w = tf.get_variable("w", [inputs.shape[1].value + self._n, self._n],
                            initializer=tf.constant_initializer(0.1))
        out = tf.tanh(tf.matmul(tf.concat([inputs, state], 1), w))
        return out, out


class BuiltCell(TanhCell):
    """The same cell making its variable in build() with add_variable (TF 1.15's style)."""

    def __init__(self, num_units, name=None):
        tf.nn.rnn_cell.RNNCell.__init__(self, name=name)
        self._n = num_units

    def build(self, inputs_shape):
        self._w = self.add_variable("kernel", [inputs_shape[-1].value + self._n, self._n],
                                    initializer=tf.constant_initializer(0.1))
        self.built = True

    def call(self, inputs, state):
        out = tf.tanh(tf.matmul(tf.concat([inputs, state], 1), self._w))
        return out, out


class OldStyleCell(tf.nn.rnn_cell.RNNCell):
    """TF 1.0's style: __call__ overridden, variables made with get_variable on every call."""

    def __init__(self, num_units):
        self._n = num_units

    @property
    def state_size(self):
        return self._n

    @property
    def output_size(self):
        return self._n

    def __call__(self, inputs, state, scope=None):
        with tf.variable_scope(scope or "old_cell"):
            w = tf.get_variable("w", [inputs.shape[1].value + self._n, self._n],
                                initializer=tf.constant_initializer(0.1))
            out = tf.tanh(tf.matmul(tf.concat([inputs, state], 1), w))
        return out, out


def _numpy_tanh_rnn(x, units):
    h = np.zeros((x.shape[0], units))
    w = np.full((x.shape[2] + units, units), 0.1)
    outs = []
    for t in range(x.shape[1]):
        h = np.tanh(np.concatenate([x[:, t], h], 1) @ w)
        outs.append(h)
    return np.stack(outs, 1), h


def test_cells_of_ones_own_run_in_dynamic_and_static_rnn():
    x_val = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)
    want_out, want_state = _numpy_tanh_rnn(x_val, 5)
    for make, name in ((lambda: TanhCell(5), "rnn/tanh_cell/w:0"),
                       (lambda: BuiltCell(5), "rnn/built_cell/kernel:0"),
                       (lambda: OldStyleCell(5), "rnn/old_cell/w:0")):
        tf.reset_default_graph()
        x = tf.constant(x_val)
        out, state = tf.nn.dynamic_rnn(make(), x, dtype=tf.float32)
        assert [v.name for v in tf.trainable_variables()] == [name]
        got_out, got_state = _run([out, state])
        np.testing.assert_allclose(got_out, want_out, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_state, want_state, rtol=1e-5, atol=1e-6)
        tf.reset_default_graph()
        outs, state = tf.nn.static_rnn(make(), tf.unstack(tf.constant(x_val), axis=1),
                                       dtype=tf.float32)
        assert [v.name for v in tf.trainable_variables()] == [name]
        np.testing.assert_allclose(_run(state), want_state, rtol=1e-5, atol=1e-6)


def test_two_cells_in_one_scope_get_unique_scopes_and_cells_list_their_variables():
    tf.reset_default_graph()
    x = tf.ones([2, 4])
    c1, c2 = tf.nn.rnn_cell.BasicLSTMCell(3), tf.nn.rnn_cell.BasicLSTMCell(3)
    c1(x, c1.zero_state(2, tf.float32))
    c2(x, c2.get_initial_state(inputs=x))
    assert [v.name for v in tf.trainable_variables()] == [
        "basic_lstm_cell/kernel:0", "basic_lstm_cell/bias:0",
        "basic_lstm_cell_1/kernel:0", "basic_lstm_cell_1/bias:0"]
    assert [v.name for v in c2.trainable_variables] == ["basic_lstm_cell_1/kernel:0",
                                                        "basic_lstm_cell_1/bias:0"]
    assert [v.name for v in c1.variables] == ["basic_lstm_cell/kernel:0",
                                              "basic_lstm_cell/bias:0"]
    wrapped = tf.nn.rnn_cell.DropoutWrapper(c1, output_keep_prob=0.5)
    assert [v.name for v in wrapped.trainable_variables] == ["basic_lstm_cell/kernel:0",
                                                             "basic_lstm_cell/bias:0"]
    # A scope re-entered with reuse=True and a new cell finds the first cell's variables.
    tf.reset_default_graph()
    x = tf.ones([2, 3, 4])
    with tf.variable_scope("enc"):
        a, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(3), x, dtype=tf.float32)
    with tf.variable_scope("enc", reuse=True):
        b, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(3), x, dtype=tf.float32)
    assert len(tf.trainable_variables()) == 2
    got_a, got_b = _run([a, b])
    np.testing.assert_array_equal(got_a, got_b)


def test_attention_probability_fn_takes_the_scores_alone():
    """TF1 calls probability_fn(score) (tf.nn.softmax, sparsemax, a lambda of one argument);
    it was called with (score, previous alignments) and softmax took those as its axis."""
    memory_val = np.random.RandomState(1).randn(2, 5, 4).astype(np.float32)
    got = {}
    for key, fn in (("default", None), ("softmax", tf.nn.softmax),
                    ("hard", lambda s: tf.one_hot(tf.argmax(s, -1), 5))):
        tf.reset_default_graph()
        memory = tf.constant(memory_val)
        with tf.variable_scope("s", initializer=tf.random_normal_initializer(seed=3)):
            mechanism = tf.contrib.seq2seq.LuongAttention(
                4, memory, memory_sequence_length=[5, 3], probability_fn=fn)
            cell = tf.contrib.seq2seq.AttentionWrapper(tf.nn.rnn_cell.GRUCell(4), mechanism)
            _, state = tf.nn.dynamic_rnn(cell, tf.ones([2, 3, 2]),
                                         initial_state=cell.zero_state(2, tf.float32))
        got[key] = _run(state.alignments)
    np.testing.assert_allclose(got["softmax"], got["default"], rtol=1e-6)
    np.testing.assert_allclose(got["default"].sum(1), [1, 1], rtol=1e-5)
    assert (got["default"][1, 3:] == 0).all()
    np.testing.assert_array_equal(got["hard"], np.eye(5)[got["default"].argmax(1)])


def _numpy_basic_rnn(x, units, w=0.1, steps=None):
    h = np.zeros((x.shape[0], units))
    outs, states = [], []
    for t in range(steps or x.shape[1]):
        h = np.tanh(np.concatenate([x[:, t], h], 1) @ np.full((x.shape[2] + units, units), w))
        outs.append(h)
        states.append(h)
    return np.stack(outs, 1), states


def test_training_helper_decodes_max_length_steps_and_imputes_only_when_asked():
    """TF1's dynamic_decode with TrainingHelper runs max(sequence_length) steps (at most
    maximum_iterations), whatever the padded input length; past a sequence's length the cell
    keeps reading its inputs (impute_finished=False: real outputs, the state moves on) unless
    impute_finished=True (zeros, the state kept at the length)."""
    x_val = np.random.RandomState(3).randn(2, 5, 3).astype(np.float32)
    outs, states = _numpy_basic_rnn(x_val, 4)
    lengths_val = np.array([3, 2], np.int32)
    for impute in (False, True):
        for lengths_feed in (False, True):
            for max_iter in (None, 2):
                tf.reset_default_graph()
                lengths = (tf.placeholder(tf.int32, [2]) if lengths_feed
                           else tf.constant(lengths_val))
                helper = tf.contrib.seq2seq.TrainingHelper(tf.constant(x_val), lengths)
                cell = tf.nn.rnn_cell.BasicRNNCell(4)
                decoder = tf.contrib.seq2seq.BasicDecoder(cell, helper, cell.zero_state(
                    2, tf.float32))
                with tf.variable_scope("d", initializer=tf.constant_initializer(0.1)):
                    out, state, final_len = tf.contrib.seq2seq.dynamic_decode(
                        decoder, impute_finished=impute, maximum_iterations=max_iter)
                got_out, got_state, got_len = _run(
                    [out.rnn_output, state, final_len],
                    {lengths: lengths_val} if lengths_feed else None)
                n = 3 if max_iter is None else 2
                want_len = np.minimum(lengths_val, n)
                np.testing.assert_array_equal(got_len, want_len)
                want = outs[:, :n].copy()
                want_state = states[n - 1].copy()
                if impute:
                    for b, k in enumerate(want_len):
                        want[b, k:] = 0
                        want_state[b] = states[k - 1][b]
                assert got_out.shape == (2, n, 4)
                np.testing.assert_allclose(got_out, want, rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(got_state, want_state, rtol=1e-5, atol=1e-6)


def test_lstm_state_is_tuple_false_concatenates_c_and_h():
    """TF1's deprecated state_is_tuple=False (old tutorials): the LSTM state is
    concat([c, h], 1), MultiRNNCell's the concatenation of its cells' states; the values are
    the tuple state's (it raised ValueError)."""
    x_val = np.random.RandomState(5).randn(2, 3, 4).astype(np.float32)
    got = {}
    for as_tuple in (True, False):
        tf.reset_default_graph()
        with tf.variable_scope("m", initializer=tf.random_normal_initializer(seed=7)):
            cells = [tf.nn.rnn_cell.BasicLSTMCell(3, state_is_tuple=as_tuple),
                     tf.nn.rnn_cell.LSTMCell(5, num_proj=2, use_peepholes=True,
                                             state_is_tuple=as_tuple)]
            cell = tf.nn.rnn_cell.MultiRNNCell(cells, state_is_tuple=as_tuple)
            assert cell.state_size == (((3, 3), (5, 2)) if as_tuple else 3 + 3 + 5 + 2)
            out, state = tf.nn.dynamic_rnn(cell, tf.constant(x_val), dtype=tf.float32)
        got[as_tuple] = _run([out, state])
    np.testing.assert_allclose(got[False][0], got[True][0], rtol=1e-6)
    (c1, h1), (c2, h2) = got[True][1]
    np.testing.assert_allclose(got[False][1], np.concatenate([c1, h1, c2, h2], 1), rtol=1e-6)
    assert got[False][1].shape == (2, 13)


class _LoopedDecoder(tf.contrib.seq2seq.BasicDecoder):
    """A Decoder of one's own (here BasicDecoder's steps): dynamic_decode runs its
    initialize/step protocol in a while_loop, as TF1's does for every decoder."""


def test_dynamic_decode_runs_any_decoder_and_helper_as_tf1():
    """Custom Decoder subclasses, CustomHelper and InferenceHelper (Tacotron-style decoders)
    were refused with TypeError; dynamic_decode now runs TF1's loop for them, with the same
    outputs, state, lengths and gradients as the built-in paths."""
    s2s = tf.contrib.seq2seq
    x_val = np.random.RandomState(6).randn(2, 5, 3).astype(np.float32)
    for impute in (False, True):
        tf.reset_default_graph()
        cell = tf.nn.rnn_cell.GRUCell(4)
        init = cell.zero_state(2, tf.float32)
        with tf.variable_scope("v", initializer=tf.random_normal_initializer(seed=1)):
            layer = tf.layers.Dense(6)
            helper = s2s.TrainingHelper(tf.constant(x_val), [4, 2])
            runs = [s2s.dynamic_decode(make(cell, helper, init, layer), impute_finished=impute)
                    for make in (s2s.BasicDecoder, _LoopedDecoder)]
        grads = [tf.gradients(tf.reduce_sum(out.rnn_output ** 2), tf.trainable_variables())
                 for out, _, _ in runs]
        (fast, looped), (fast_g, looped_g) = _run([runs, grads])
        np.testing.assert_allclose(looped[0].rnn_output, fast[0].rnn_output, rtol=1e-5)
        np.testing.assert_array_equal(looped[0].sample_id, fast[0].sample_id)
        np.testing.assert_allclose(looped[1], fast[1], rtol=1e-5)
        np.testing.assert_array_equal(looped[2], [4, 2])
        np.testing.assert_array_equal(fast[2], [4, 2])
        for a, b in zip(looped_g, fast_g):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
        if impute:
            assert (looped[0].rnn_output[1, 2:] == 0).all()
    # CustomHelper feeding each output back in, finished after 3 steps.
    tf.reset_default_graph()
    cell = tf.nn.rnn_cell.BasicRNNCell(3)
    helper = s2s.CustomHelper(
        lambda: (tf.tile([False], [2]), tf.constant([[0.5, 0.1, 0.0], [0.1, 0.1, 0.1]])),
        lambda time, outputs, state: tf.tile([0], [2]),
        lambda time, outputs, state, sample_ids: (tf.tile([time + 1 >= 3], [2]), outputs,
                                                  state))
    with tf.variable_scope("v", initializer=tf.constant_initializer(0.2)):
        out, _, lengths = s2s.dynamic_decode(
            s2s.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32)))
    got, got_len = _run([out.rnn_output, lengths])
    h, x, want = np.zeros((2, 3)), np.array([[0.5, 0.1, 0.0], [0.1, 0.1, 0.1]]), []
    for _ in range(3):
        h = np.tanh(np.concatenate([x, h], 1) @ np.full((6, 3), 0.2))
        x = h
        want.append(h)
    np.testing.assert_allclose(got, np.stack(want, 1), rtol=1e-5)
    np.testing.assert_array_equal(got_len, [3, 3])
    # InferenceHelper: the sample is the output itself; a row ends when its first unit > 0.1.
    tf.reset_default_graph()
    cell = tf.nn.rnn_cell.BasicRNNCell(3)
    helper = s2s.InferenceHelper(lambda o: o, [3], tf.float32,
                                 tf.constant([[0.5, 0.1, 0.0], [0.1, 0.1, 0.1]]),
                                 lambda sample: sample[:, 0] > 0.1)
    with tf.variable_scope("v", initializer=tf.constant_initializer(0.2)):
        out, _, lengths = s2s.dynamic_decode(
            s2s.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32)),
            maximum_iterations=4)
    got, ids, got_len = _run([out.rnn_output, out.sample_id, lengths])
    h, x, want = np.zeros((2, 3)), np.array([[0.5, 0.1, 0.0], [0.1, 0.1, 0.1]]), []
    for _ in range(4):
        h = np.tanh(np.concatenate([x, h], 1) @ np.full((6, 3), 0.2))
        x = h
        want.append(h)
    want = np.stack(want, 1)
    ends = [int(np.argmax(want[b, :, 0] > 0.1)) + 1 if (want[b, :, 0] > 0.1).any() else 4
            for b in range(2)]
    np.testing.assert_array_equal(got_len, ends)
    np.testing.assert_allclose(got[:, :max(ends)], want[:, :max(ends)], rtol=1e-5)
    np.testing.assert_allclose(ids, got, rtol=0)


def _conv_same(x, kernel):
    """A stride-1 "SAME" 2-D convolution in NumPy: x [b, h, w, c], kernel [kh, kw, c, o]."""
    kh, kw = kernel.shape[:2]
    xp = np.pad(x, ((0, 0), ((kh - 1) // 2, kh // 2), ((kw - 1) // 2, kw // 2), (0, 0)))
    out = np.zeros(x.shape[:3] + kernel.shape[3:])
    for i in range(x.shape[1]):
        for j in range(x.shape[2]):
            out[:, i, j] = np.einsum("bhwc,hwco->bo", xp[:, i:i + kh, j:j + kw], kernel)
    return out


def test_conv_lstm_cell_in_dynamic_rnn_over_frames():
    """tf.contrib.rnn.ConvLSTMCell (missing) over [batch, time, h, w, c] frames: dynamic_rnn
    refused inputs of rank > 3; TF1 runs any rank, with sequence_length."""
    rng = np.random.RandomState(7)
    x_val = rng.randn(2, 3, 5, 4, 2).astype(np.float32)
    for skip in (False, True):
        tf.reset_default_graph()
        cell = tf.contrib.rnn.ConvLSTMCell(2, [5, 4, 2], 3, [3, 3], skip_connection=skip)
        out, state = tf.nn.dynamic_rnn(cell, tf.constant(x_val), sequence_length=[3, 2],
                                       dtype=tf.float32)
        assert out.shape.as_list() == [2, 3, 5, 4, 5 if skip else 3]
        grads = tf.gradients(tf.reduce_sum(out), tf.trainable_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            params = {}
            for v in tf.global_variables():
                params[v.name] = (rng.randn(*v.shape.as_list()) * 0.3).astype(np.float32)
                v.load(params[v.name], sess)
            got_out, got_state, got_grads = sess.run([out, state, grads])
        assert sorted(params) == ["rnn/conv_lstm_cell/biases:0", "rnn/conv_lstm_cell/kernel:0"]
        assert all(np.abs(g).sum() > 0 for g in got_grads)
        c, h = np.zeros((2, 5, 4, 3)), np.zeros((2, 5, 4, 5 if skip else 3))
        outs = []
        for t in range(3):
            gates = (_conv_same(np.concatenate([x_val[:, t], h], -1),
                                params["rnn/conv_lstm_cell/kernel:0"])
                     + params["rnn/conv_lstm_cell/biases:0"])
            i, j, f, o = np.split(gates, 4, -1)
            new_c = sigmoid(f + 1) * c + sigmoid(i) * np.tanh(j)
            new_h = np.tanh(new_c) * sigmoid(o)
            if skip:
                new_h = np.concatenate([new_h, x_val[:, t]], -1)
            live = (t < np.array([3, 2]))[:, None, None, None]
            c, h = np.where(live, new_c, c), np.where(live, new_h, h)
            outs.append(np.where(live, new_h, 0))
        np.testing.assert_allclose(got_out, np.stack(outs, 1), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got_state.c, c, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got_state.h, h, rtol=1e-4, atol=1e-5)
    tf.reset_default_graph()
    cell = tf.contrib.rnn.Conv2DLSTMCell(input_shape=[5, 4, 2], output_channels=3,
                                         kernel_shape=[3, 3])
    tf.nn.dynamic_rnn(cell, tf.constant(x_val), dtype=tf.float32)
    assert [v.name for v in tf.trainable_variables()] == [
        "rnn/conv_2d_lstm_cell/kernel:0", "rnn/conv_2d_lstm_cell/biases:0"]


class PairCell(tf.nn.rnn_cell.RNNCell):
    """Reads a pair of inputs and emits a pair of outputs: h' = tanh([a, b, h] @ w),
    outputs (h', sum(h'))."""

    @property
    def state_size(self):
        return 3

    @property
    def output_size(self):
        return (3, 1)

    def call(self, inputs, state):
        a, b = inputs
        w = tf.get_variable("w", [5 + 3, 3], initializer=tf.constant_initializer(0.1))
        h = tf.tanh(tf.matmul(tf.concat([a, b, state], 1), w))
        return (h, tf.reduce_sum(h, 1, keepdims=True)), h


def test_dynamic_rnn_nested_inputs_and_outputs():
    """TF1's dynamic_rnn flattens nested inputs and outputs; a cell emitting a tuple failed
    with a Concat error and tuple inputs were read as one stacked tensor."""
    rng = np.random.RandomState(9)
    a_val = rng.randn(2, 4, 2).astype(np.float32)
    b_val = rng.randn(2, 4, 3).astype(np.float32)
    tf.reset_default_graph()
    (out, total), state = tf.nn.dynamic_rnn(PairCell(), (tf.constant(a_val), tf.constant(b_val)),
                                            sequence_length=[4, 2], dtype=tf.float32)
    assert out.shape.as_list() == [2, 4, 3] and total.shape.as_list() == [2, 4, 1]
    got_out, got_total, got_state = _run([out, total, state])
    want, _ = _numpy_tanh_rnn(np.concatenate([a_val, b_val], 2), 3)
    want[1, 2:] = 0
    np.testing.assert_allclose(got_out, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_total[..., 0], want.sum(2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state, [want[0, 3], want[1, 1]], rtol=1e-5, atol=1e-6)


def test_scheduled_sampling_helpers():
    """ScheduledEmbeddingTrainingHelper / ScheduledOutputTrainingHelper (missing): with
    probability 0 they are TrainingHelper; with 1 every next input is the embedding of the
    drawn id / the output itself."""
    s2s = tf.contrib.seq2seq
    rng = np.random.RandomState(10)
    x_val = rng.randn(2, 4, 3).astype(np.float32)
    emb_val = rng.randn(5, 3).astype(np.float32)

    def decode(make_helper, inputs, output_layer=None, units=4, scope="d"):
        cell = tf.nn.rnn_cell.BasicRNNCell(units)
        with tf.variable_scope(scope, initializer=tf.constant_initializer(0.1)):
            out, _, lengths = s2s.dynamic_decode(s2s.BasicDecoder(
                cell, make_helper(tf.constant(inputs)), cell.zero_state(2, tf.float32),
                output_layer))
        return out, lengths

    # A layer whose logits always pick id 1: its embedding is every sampled next input.
    def picker():
        return tf.layers.Dense(5, kernel_initializer=tf.zeros_initializer(),
                               bias_initializer=tf.constant_initializer([0, 50, 0, 0, 0]))

    for prob in (0.0, 1.0):
        tf.reset_default_graph()
        out, _ = decode(lambda x: s2s.ScheduledEmbeddingTrainingHelper(
            x, [4, 3], tf.constant(emb_val), prob, seed=1), x_val, picker())
        fed = x_val.copy()
        if prob:
            fed[:, 1:] = emb_val[1]
        want, _ = decode(lambda x: s2s.TrainingHelper(x, [4, 3]), fed, picker(), scope="e")
        got_out, want_out = _run([out, want])
        np.testing.assert_allclose(got_out.rnn_output, want_out.rnn_output, rtol=1e-5)
        np.testing.assert_array_equal(got_out.sample_id,
                                      np.full([2, 4], 1 if prob else -1))
    for prob in (0.0, 1.0):
        tf.reset_default_graph()
        out, lengths = decode(lambda x: s2s.ScheduledOutputTrainingHelper(x, [4, 3], prob),
                              x_val, units=3)
        got, got_len = _run([out, lengths])
        if prob:
            h, x, want = np.zeros((2, 3)), x_val[:, 0], []
            for _ in range(4):
                h = np.tanh(np.concatenate([x, h], 1) @ np.full((6, 3), 0.1))
                x = h
                want.append(h)
            want = np.stack(want, 1)
        else:
            want, _ = _numpy_basic_rnn(x_val, 3)
        np.testing.assert_allclose(got.rnn_output, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got.sample_id, np.full([2, 4], bool(prob)))
        np.testing.assert_array_equal(got_len, [4, 3])


def test_beam_search_with_a_tensor_bound_runs_in_a_loop():
    """The NMT tutorial bounds beam search with a tensor (round(2 * source length));
    dynamic_decode refused it (Python ints only) and now runs TF1's while_loop, matching the
    unrolled decode: ids, scores, final log probs and lengths, with and without attention,
    also when every beam ends before the bound."""
    s2s = tf.contrib.seq2seq
    rng = np.random.RandomState(12)
    vocab, units, batch, beam = 6, 4, 2, 3
    emb = rng.randn(vocab, units).astype(np.float32)
    memory = rng.randn(batch, 5, units).astype(np.float32)
    for attention, end_bias in ((False, 0.0), (True, 0.0), (False, 8.0)):
        tf.reset_default_graph()
        with tf.variable_scope("x", initializer=tf.random_normal_initializer(seed=3)):
            cell = tf.nn.rnn_cell.LSTMCell(units)
            if attention:
                mechanism = s2s.LuongAttention(
                    units, s2s.tile_batch(tf.constant(memory), beam),
                    memory_sequence_length=s2s.tile_batch(tf.constant([5, 3]), beam))
                cell = s2s.AttentionWrapper(cell, mechanism, attention_layer_size=units)
            layer = tf.layers.Dense(vocab, bias_initializer=tf.constant_initializer(
                [0, 0, 0, 0, 0, end_bias]))
            runs = []
            for bound in (6, tf.constant(6)):
                decoder = s2s.BeamSearchDecoder(
                    cell, tf.constant(emb), tf.constant([0, 1]), 5,
                    cell.zero_state(batch * beam, tf.float32), beam, output_layer=layer,
                    length_penalty_weight=0.7)
                out, state, lengths = s2s.dynamic_decode(decoder, maximum_iterations=bound)
                runs.append((out, state.log_probs, lengths))
        (unrolled, looped) = _run(runs)
        np.testing.assert_array_equal(looped[0].predicted_ids, unrolled[0].predicted_ids)
        np.testing.assert_allclose(looped[0].beam_search_decoder_output.scores,
                                   unrolled[0].beam_search_decoder_output.scores, rtol=1e-5)
        np.testing.assert_allclose(looped[1], unrolled[1], rtol=1e-5)
        np.testing.assert_array_equal(looped[2], unrolled[2])
        if end_bias:
            assert looped[0].predicted_ids.shape[1] < 6


def test_lstm_block_fused_cell_is_lstm_cell_over_time_major_inputs():
    """tf.contrib.rnn.LSTMBlockFusedCell, TimeReversedFusedRNN and FusedRNNCellAdaptor
    (DeepSpeech's layers; missing): the fused cell equals LSTMCell run by dynamic_rnn
    (time-major, sequence_length, peepholes, cell_clip) with the same weights, its
    variables named <lstm_fused_cell>/kernel, bias, w_*_diag as TF1's."""
    x_val = np.random.RandomState(13).randn(4, 3, 2).astype(np.float32)
    lengths = [4, 2, 0]
    for peep, clip in ((False, None), (True, 0.3)):
        tf.reset_default_graph()
        x = tf.constant(x_val)
        with tf.variable_scope("m", initializer=tf.random_normal_initializer(seed=5)):
            fw = tf.contrib.rnn.LSTMBlockFusedCell(3, use_peephole=peep, cell_clip=clip)
            fused = fw(x, dtype=tf.float32, sequence_length=lengths)
            bw = tf.contrib.rnn.TimeReversedFusedRNN(
                tf.contrib.rnn.LSTMBlockFusedCell(3, use_peephole=peep, cell_clip=clip))
            fused_bw = bw(x, dtype=tf.float32, sequence_length=lengths)
        fused_names = [v.name for v in tf.trainable_variables()]
        assert fused_names[:2] == ["m/lstm_fused_cell/kernel:0", "m/lstm_fused_cell/bias:0"]
        assert ("m/lstm_fused_cell_1/w_o_diag:0" in fused_names) == peep

        def cell():
            return tf.nn.rnn_cell.LSTMCell(3, use_peepholes=peep, cell_clip=clip)

        with tf.variable_scope("r"):
            ref = tf.nn.dynamic_rnn(cell(), x, sequence_length=lengths, dtype=tf.float32,
                                    time_major=True)
            (_, ref_bw_out), (_, ref_bw_state) = tf.nn.bidirectional_dynamic_rnn(
                cell(), cell(), x, sequence_length=lengths, dtype=tf.float32, time_major=True)
            adaptor = tf.contrib.rnn.FusedRNNCellAdaptor(cell(), use_dynamic_rnn=True)
            adapted = adaptor(x, dtype=tf.float32, sequence_length=lengths, scope="adapted")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = {v.name: sess.run(v) for v in tf.trainable_variables()}
            for v in tf.trainable_variables():
                leaf = v.name.split("/")[-1]
                if v.name.startswith(("r/rnn/", "r/adapted/")):
                    v.load(values["m/lstm_fused_cell/" + leaf], sess)
                elif v.name.startswith("r/bidirectional_rnn/bw/"):
                    v.load(values["m/lstm_fused_cell_1/" + leaf], sess)
            got, want, got_bw, want_bw, got_adapted = sess.run(
                [fused, ref, fused_bw, (ref_bw_out, ref_bw_state), adapted])
        for a, b in ((got, want), (got_bw, want_bw), (got_adapted, want)):
            np.testing.assert_allclose(a[0], b[0], rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(a[1].c, b[1].c, rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(a[1].h, b[1].h, rtol=1e-6, atol=1e-7)
        assert (got[0][2:, 1] == 0).all() and (got[1].h[2] == 0).all()


def _numpy_gru(params, prefix, x, h):
    r, u = np.split(sigmoid(np.concatenate([x, h], 1) @ params[prefix + "gates/kernel"]
                            + params[prefix + "gates/bias"]), 2, 1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ params[prefix + "candidate/kernel"]
                + params[prefix + "candidate/bias"])
    return u * h + (1 - u) * c


def _load_random(sess, rng):
    params = {}
    for v in tf.trainable_variables():
        params[v.name[:-2]] = np.asarray(rng.randn(*v.shape.as_list()) * 0.4, np.float32)
        v.load(params[v.name[:-2]], sess)
    return params


def test_legacy_embedding_attention_seq2seq_and_buckets_as_tf1():
    """tf.contrib.legacy_seq2seq's models (the translate tutorial's embedding_attention_seq2seq
    and model_with_buckets; missing) against NumPy, with TF1's variable names; the
    OutputProjectionWrapper's cell lives under its scope, as TF1's core_rnn_cell."""
    ls = tf.contrib.legacy_seq2seq
    rng = np.random.RandomState(14)
    batch, enc_steps, dec_steps, enc_vocab, dec_vocab, emb, units = 2, 3, 2, 5, 6, 4, 3
    enc_ids = rng.randint(0, enc_vocab, (enc_steps, batch))
    dec_ids = rng.randint(0, dec_vocab, (dec_steps, batch))
    tf.reset_default_graph()
    enc = [tf.constant(i, tf.int32) for i in enc_ids]
    dec = [tf.constant(i, tf.int32) for i in dec_ids]
    outs, state = ls.embedding_attention_seq2seq(enc, dec, tf.nn.rnn_cell.GRUCell(units),
                                                 enc_vocab, dec_vocab, emb)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        p = _load_random(sess, rng)
        got, got_state = sess.run([outs, state])
    top, dec_scope = "embedding_attention_seq2seq/", \
        "embedding_attention_seq2seq/embedding_attention_decoder/"
    att = dec_scope + "attention_decoder/"
    h, enc_outs = np.zeros((batch, units)), []
    for ids in enc_ids:
        h = _numpy_gru(p, top + "rnn/embedding_wrapper/gru_cell/",
                       p[top + "rnn/embedding_wrapper/embedding"][ids], h)
        enc_outs.append(h)
    states = np.stack(enc_outs, 1)
    features = states @ p[att + "AttnW_0"].reshape(units, units)
    reads, want = np.zeros((batch, units)), []
    for ids in dec_ids:
        x = (np.concatenate([p[dec_scope + "embedding"][ids], reads], 1) @ p[att + "kernel"]
             + p[att + "bias"])
        h = _numpy_gru(p, att + "output_projection_wrapper/gru_cell/", x, h)
        cell_out = (h @ p[att + "output_projection_wrapper/kernel"]
                    + p[att + "output_projection_wrapper/bias"])
        y = h @ p[att + "Attention_0/kernel"] + p[att + "Attention_0/bias"]
        score = (p[att + "AttnV_0"] * np.tanh(features + y[:, None])).sum(2)
        weights = np.exp(score - score.max(1, keepdims=True))
        weights /= weights.sum(1, keepdims=True)
        reads = (weights[..., None] * states).sum(1)
        want.append(np.concatenate([cell_out, reads], 1) @ p[att + "AttnOutputProjection/kernel"]
                    + p[att + "AttnOutputProjection/bias"])
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_state, h, rtol=1e-4, atol=1e-5)
    # Buckets share one set of weights; a decoding graph (feed_previous) reuses them.
    tf.reset_default_graph()
    enc = [tf.constant(i, tf.int32) for i in rng.randint(0, enc_vocab, (3, batch))]
    dec = [tf.constant(i, tf.int32) for i in rng.randint(0, dec_vocab, (3, batch))]
    weights = [tf.ones([batch]) for _ in range(3)]
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(units) for _ in range(2)])
    losses = {}
    for feed_previous in (False, True):
        with tf.variable_scope("m", reuse=True if feed_previous else None):
            _, losses[feed_previous] = ls.model_with_buckets(
                enc, dec, dec, weights, [(2, 2), (3, 3)],
                lambda x, y: ls.embedding_attention_seq2seq(
                    x, y, cell, enc_vocab, dec_vocab, emb, feed_previous=feed_previous))
    names = [v.name for v in tf.trainable_variables()]
    assert len(names) == 28 and len(set(names)) == 28
    assert "m/embedding_attention_seq2seq/rnn/embedding_wrapper/multi_rnn_cell/cell_1/" \
        "gru_cell/gates/kernel:0" in names
    got = _run([losses[False], losses[True]])
    assert all(np.isfinite(v) and v > 0 for v in np.ravel(got))


def test_legacy_basic_and_tied_rnn_seq2seq():
    ls = tf.contrib.legacy_seq2seq
    rng = np.random.RandomState(15)
    enc_val = rng.randn(3, 2, 2).astype(np.float32)
    dec_val = rng.randn(2, 2, 2).astype(np.float32)
    for fn, enc_prefix, dec_prefix in (
            (ls.basic_rnn_seq2seq, "basic_rnn_seq2seq/rnn/gru_cell/",
             "basic_rnn_seq2seq/rnn_decoder/gru_cell/"),
            (ls.tied_rnn_seq2seq, "combined_tied_rnn_seq2seq/tied_rnn_seq2seq/gru_cell/",
             "combined_tied_rnn_seq2seq/tied_rnn_seq2seq/gru_cell/")):
        tf.reset_default_graph()
        outs, state = fn([tf.constant(x) for x in enc_val], [tf.constant(x) for x in dec_val],
                         tf.nn.rnn_cell.GRUCell(3))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            p = _load_random(sess, rng)
            got, got_state = sess.run([outs, state])
        assert len(p) == (4 if fn is ls.tied_rnn_seq2seq else 8)
        h = np.zeros((2, 3))
        for x in enc_val:
            h = _numpy_gru(p, enc_prefix, x, h)
        want = []
        for x in dec_val:
            h = _numpy_gru(p, dec_prefix, x, h)
            want.append(h)
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_state, h, rtol=1e-5, atol=1e-6)


def test_cell_reuse_argument_shares_the_variables_of_that_name():
    """BasicLSTMCell(reuse=True) (the PTB model's eval cell) and reuse=tf.AUTO_REUSE find the
    variables a first cell made, as TF1's layers (reuse=True raised 'already exists')."""
    tf.reset_default_graph()
    x = tf.constant(np.random.RandomState(16).randn(2, 3, 4).astype(np.float32))
    with tf.variable_scope("Model"):
        a, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(3, reuse=False), x,
                                 dtype=tf.float32)
    with tf.variable_scope("Model"):
        b, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(3, reuse=True), x,
                                 dtype=tf.float32)
        c, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(3, reuse=tf.AUTO_REUSE), x,
                                 dtype=tf.float32, scope="other")
        d, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(3, reuse=tf.AUTO_REUSE), x,
                                 dtype=tf.float32, scope="other")
    assert [v.name for v in tf.trainable_variables()] == [
        "Model/rnn/basic_lstm_cell/kernel:0", "Model/rnn/basic_lstm_cell/bias:0",
        "Model/other/lstm_cell/kernel:0", "Model/other/lstm_cell/bias:0"]
    got = _run([a, b, c, d])
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_array_equal(got[2], got[3])


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _brute_ctc(logits, label, blank):
    """-log of the summed probability of every path of `logits` [time, classes] that
    collapses (repeats merged, blanks dropped) to `label`."""
    import itertools
    logp, total = _log_softmax(logits.astype(np.float64)), -np.inf
    for path in itertools.product(range(logits.shape[1]), repeat=logits.shape[0]):
        seq = [c for k, c in enumerate(path) if (k == 0 or c != path[k - 1]) and c != blank]
        if seq == list(label):
            total = np.logaddexp(total, sum(logp[t, c] for t, c in enumerate(path)))
    return -total


def test_ctc_loss_empty_labels_and_ctc_loss_v2():
    """A batch row with no labels made ctc_loss's step fail (a NumPy shape error); TF1 scores
    it as all blanks. ctc_loss_v2 (TF 1.15's, dense labels with label_length and a blank
    index, or sparse labels) against a brute-force sum over the paths."""
    rng = np.random.RandomState(17)
    lg = rng.randn(3, 4, 4).astype(np.float32)              # [batch, time, classes]
    tf.reset_default_graph()
    labels = tf.SparseTensor(np.array([[0, 0], [0, 1]], np.int64), np.array([1, 2], np.int32),
                             [3, 2])
    loss = tf.nn.ctc_loss(labels, tf.constant(lg), [4, 3, 2], time_major=False)
    want = [_brute_ctc(lg[0], [1, 2], 3), _brute_ctc(lg[1, :3], [], 3),
            _brute_ctc(lg[2, :2], [], 3)]
    np.testing.assert_allclose(_run(loss), want, rtol=1e-5)
    from shardflow.ctc_ops import ctc_loss_v2     # tf.nn.ctc_loss_v2 once nn.py imports it
    for blank, dense in ((0, [[1, 2, 0], [3, 3, 0], [2, 1, 3]]),
                         (-1, [[1, 2, 0], [0, 0, 1], [2, 1, 0]])):
        tf.reset_default_graph()
        x = tf.constant(lg)
        loss = ctc_loss_v2(tf.constant(dense), x, [2, 2, 3], [4, 3, 2],
                           logits_time_major=False, blank_index=blank)
        finite = tf.where(tf.is_finite(loss), loss, tf.zeros_like(loss))
        got, grad = _run([loss, tf.gradients(tf.reduce_sum(finite), x)[0]])
        lengths = [2, 2, 3]
        want = [_brute_ctc(lg[b, :[4, 3, 2][b]], dense[b][:lengths[b]], blank % 4)
                for b in range(3)]
        np.testing.assert_allclose(got, want, rtol=1e-5)
        assert np.isinf(got[2]) and (grad[2] == 0).all() and np.isfinite(grad).all()
    tf.reset_default_graph()
    sparse = tf.SparseTensor(np.array([[0, 0], [0, 1], [1, 0]], np.int64),
                             np.array([1, 2, 3], np.int64), [3, 2])
    loss = ctc_loss_v2(sparse, tf.constant(lg.transpose(1, 0, 2)), None, [4, 3, 2],
                       blank_index=0)
    np.testing.assert_allclose(_run(loss), [_brute_ctc(lg[0], [1, 2], 0),
                                            _brute_ctc(lg[1, :3], [3], 0),
                                            _brute_ctc(lg[2, :2], [], 0)], rtol=1e-5)


def test_gru_block_cell_variable_names_and_values():
    """TF1's GRUBlockCell names its variables after its kernel's arguments (gru_cell/w_c is
    the gates' kernel, w_ru the candidate's: TF1's own swap) and GRUBlockCellV2 as GRUCell;
    both compute GRUCell's values (GRUBlockCell had GRUCell's names, so TF1 checkpoints of
    it did not load)."""
    tf.reset_default_graph()
    x = tf.constant(np.random.RandomState(21).randn(2, 3, 4).astype(np.float32))
    outs = {}
    for make, scope in ((tf.contrib.rnn.GRUBlockCell, "v1"),
                        (tf.contrib.rnn.GRUBlockCellV2, "v2"), (tf.nn.rnn_cell.GRUCell, "ref")):
        outs[scope] = tf.nn.dynamic_rnn(make(5), x, dtype=tf.float32, scope=scope)[0]
    shapes = {v.name: v.shape.as_list() for v in tf.trainable_variables()}
    assert {k: v for k, v in shapes.items() if k.startswith("v1/")} == {
        "v1/gru_cell/w_c:0": [9, 10], "v1/gru_cell/b_ru:0": [10],
        "v1/gru_cell/w_ru:0": [9, 5], "v1/gru_cell/b_c:0": [5]}
    assert "v2/gru_cell/gates/kernel:0" in shapes
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ref = {v.name.split("/", 1)[1]: sess.run(v) for v in tf.trainable_variables()
               if v.name.startswith("ref/")}
        block_names = {"gru_cell/w_c:0": "gru_cell/gates/kernel:0",
                       "gru_cell/b_ru:0": "gru_cell/gates/bias:0",
                       "gru_cell/w_ru:0": "gru_cell/candidate/kernel:0",
                       "gru_cell/b_c:0": "gru_cell/candidate/bias:0"}
        for v in tf.trainable_variables():
            leaf = v.name.split("/", 1)[1]
            if not v.name.startswith("ref/"):
                v.load(ref[block_names.get(leaf, leaf)], sess)
        got = sess.run(outs)
    np.testing.assert_allclose(got["v1"], got["ref"], rtol=1e-6)
    np.testing.assert_allclose(got["v2"], got["ref"], rtol=1e-6)


def test_raw_rnn_matches_dynamic_rnn():
    """raw_rnn (TF1's tf.nn.raw_rnn, missing) driven by TF1's documented loop_fn reading a
    TensorArray of inputs: outputs (zeros past each length) and final state as
    dynamic_rnn's with sequence_length."""
    from shardflow.rnn_cell import raw_rnn           # tf.nn.raw_rnn once nn.py imports it
    x_val = np.random.RandomState(22).randn(5, 3, 2).astype(np.float32)
    tf.reset_default_graph()
    with tf.variable_scope("s", initializer=tf.random_normal_initializer(seed=1)):
        inputs, lengths = tf.constant(x_val), tf.constant([5, 2, 3])
        inputs_ta = tf.TensorArray(tf.float32, size=5).unstack(inputs)
        cell = tf.nn.rnn_cell.LSTMCell(4)

        def loop_fn(time, cell_output, cell_state, loop_state):
            state = cell.zero_state(3, tf.float32) if cell_output is None else cell_state
            finished = time >= lengths
            next_input = tf.cond(tf.reduce_all(finished), lambda: tf.zeros([3, 2]),
                                 lambda: inputs_ta.read(time))
            return finished, next_input, state, cell_output, None

        outputs_ta, final_state, loop_state = raw_rnn(cell, loop_fn)
        outputs = outputs_ta.stack()
    assert loop_state is None
    with tf.variable_scope("s", reuse=True):
        want = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(4), inputs, sequence_length=lengths,
                                 dtype=tf.float32, time_major=True)
    got, got_state, (want_out, want_state) = _run([outputs, final_state, want])
    np.testing.assert_allclose(got, want_out, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_state.c, want_state.c, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_state.h, want_state.h, rtol=1e-6, atol=1e-7)


def test_monotonic_attention():
    """tf.contrib.seq2seq's monotonic attention (missing): monotonic_attention against the
    recurrence q_j = (1 - p_{j-1}) q_{j-1} + prev_j, a_j = p_j q_j; hard mode; hardmax; the
    Bahdanau/Luong monotonic mechanisms in an AttentionWrapper (recursive == parallel, TF1's
    variable names, all mass on entry 0 at first)."""
    s2s = tf.contrib.seq2seq
    rng = np.random.RandomState(23)
    p, prev = rng.rand(2, 5), rng.dirichlet(np.ones(5), 2)
    want = np.zeros_like(p)
    for b in range(2):
        q = 0.0
        for j in range(5):
            q = (1 - p[b, j - 1]) * q + prev[b, j] if j else prev[b, 0]
            want[b, j] = p[b, j] * q
    tf.reset_default_graph()
    hard_p = np.array([[1., 1., 0., 0., 1.], [0., 0., 0., 1., 0.]])
    got = _run([s2s.monotonic_attention(tf.constant(p), tf.constant(prev), "recursive"),
                s2s.monotonic_attention(tf.constant(p), tf.constant(prev), "parallel"),
                s2s.monotonic_attention(tf.constant(hard_p), tf.constant(np.eye(5)[[1, 3]]),
                                        "hard"),
                s2s.hardmax(tf.constant([[1., 3., 2.], [0., -1., -2.]]))])
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    np.testing.assert_allclose(got[1], want, rtol=1e-9)
    np.testing.assert_array_equal(got[2], np.eye(5)[[1, 3]])
    np.testing.assert_array_equal(got[3], [[0, 1, 0], [1, 0, 0]])
    memory = rng.randn(2, 5, 3).astype(np.float32)
    for cls, kwargs, scope in ((s2s.BahdanauMonotonicAttention, {"normalize": True},
                                "bahdanau_monotonic_attention"),
                               (s2s.LuongMonotonicAttention, {"scale": True},
                                "luong_monotonic_attention")):
        histories = []
        for mode in ("parallel", "recursive"):
            tf.reset_default_graph()
            with tf.variable_scope("m", initializer=tf.random_normal_initializer(seed=2)):
                mechanism = cls(4, tf.constant(memory), memory_sequence_length=[5, 3],
                                mode=mode, score_bias_init=-1.0, **kwargs)
                cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(4), mechanism,
                                            alignment_history=True)
                initial = cell.zero_state(2, tf.float32)
                _, state = tf.nn.dynamic_rnn(cell, tf.ones([2, 3, 2]), initial_state=initial)
            names = [v.name for v in tf.trainable_variables()]
            assert "m/rnn/attention_wrapper/%s/attention_score_bias:0" % scope in names
            first, history = _run([initial.alignments, state.alignment_history.stack()])
            np.testing.assert_array_equal(first, np.eye(5)[[0, 0]])
            assert (history[:, 1, 3:] == 0).all() and (history.sum(-1) <= 1 + 1e-6).all()
            histories.append(history)
        np.testing.assert_allclose(histories[0], histories[1], rtol=1e-4, atol=1e-6)


def test_stack_bidirectional_rnn_static_equals_dynamic():
    """tf.contrib.rnn.stack_bidirectional_rnn (the static version; missing): TF1's names
    (stack_bidirectional_rnn/cell_<i>/fw/...) and the dynamic version's values."""
    x_val = np.random.RandomState(24).randn(3, 4, 2).astype(np.float32)
    lengths = [4, 2, 3]
    tf.reset_default_graph()

    def cells():
        return [tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.GRUCell(2)]

    with tf.variable_scope("a"):
        static_out, _, static_bw = tf.contrib.rnn.stack_bidirectional_rnn(
            cells(), cells(), tf.unstack(tf.constant(x_val), axis=1), dtype=tf.float32,
            sequence_length=lengths)
    with tf.variable_scope("b"):
        dynamic_out, _, dynamic_bw = tf.contrib.rnn.stack_bidirectional_dynamic_rnn(
            cells(), cells(), tf.constant(x_val), dtype=tf.float32, sequence_length=lengths)
    names = [v.name for v in tf.trainable_variables() if v.name.startswith("a/")]
    assert names[0] == "a/stack_bidirectional_rnn/cell_0/fw/gru_cell/gates/kernel:0"
    assert names[-1] == "a/stack_bidirectional_rnn/cell_1/bw/gru_cell/candidate/bias:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        dynamic_vars = {v.name[2:].replace("/bidirectional_rnn", ""): v
                        for v in tf.trainable_variables() if v.name.startswith("b/")}
        for v in tf.trainable_variables():
            if v.name.startswith("a/"):
                dynamic_vars[v.name[2:]].load(sess.run(v), sess)
        got = sess.run([tf.stack(static_out, 1), dynamic_out, static_bw, dynamic_bw])
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6)
    np.testing.assert_allclose(np.array(got[2][1]), np.array(got[3][1]), rtol=1e-6)


def test_greedy_decode_impute_finished():
    """GreedyEmbeddingHelper with impute_finished=True (ignored before): as TF1's loop, a
    finished row's later outputs and sample ids are zeros and its state stays at its
    finishing step; without it the row decodes on. Checked against a NumPy greedy decoder."""
    s2s = tf.contrib.seq2seq
    rng = np.random.RandomState(84)
    emb = rng.randn(5, 3)
    params = [rng.randn(7, 8) * 0.5, rng.randn(8) * 0.5, rng.randn(7, 4) * 0.5,
              rng.randn(4) * 0.5, rng.randn(4, 5), rng.randn(5)]
    h, x, logits, states, ids = np.zeros((3, 4)), emb[[0, 1, 2]], [], [], []
    for _ in range(5):
        r, u = np.split(sigmoid(np.concatenate([x, h], 1) @ params[0] + params[1]), 2, 1)
        c = np.tanh(np.concatenate([x, r * h], 1) @ params[2] + params[3])
        h = u * h + (1 - u) * c
        logits.append(h @ params[4] + params[5])
        states.append(h)
        ids.append(logits[-1].argmax(1))
        x = emb[ids[-1]]
    logits, ids, lengths = np.stack(logits, 1), np.stack(ids, 1), [5, 1, 2]
    for impute in (False, True):
        tf.reset_default_graph()
        cell = tf.nn.rnn_cell.GRUCell(4)
        helper = s2s.GreedyEmbeddingHelper(tf.constant(emb, tf.float32), tf.constant([0, 1, 2]),
                                           3)
        decoder = s2s.BasicDecoder(cell, helper, cell.zero_state(3, tf.float32),
                                   tf.layers.Dense(5))
        out, state, got_len = s2s.dynamic_decode(decoder, maximum_iterations=6,
                                                 impute_finished=impute)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for v, value in zip(tf.trainable_variables(), params):
                v.load(value, sess)
            got_out, got_state, got_lengths = sess.run([out, state, got_len])
        want_out, want_ids, want_state = logits.copy(), ids.copy(), states[-1].copy()
        if impute:
            for b, n in enumerate(lengths):
                want_out[b, n:], want_ids[b, n:], want_state[b] = 0, 0, states[n - 1][b]
        np.testing.assert_array_equal(got_lengths, lengths)
        np.testing.assert_allclose(got_out.rnn_output, want_out, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(got_out.sample_id, want_ids)
        np.testing.assert_allclose(got_state, want_state, rtol=1e-4, atol=1e-5)


def test_inference_decoding_with_an_unknown_batch_size():
    """The NMT tutorial's inference graphs: a placeholder batch and a tensor bound
    (round(2 * max source length)), greedy decoding keeping the alignment history. Greedy
    and beam-search dynamic_decode failed when the graph was built ('TensorArray ... row of
    shape (?, 7) ... element shape must be known'); they now match the unrolled decode (a
    Python int bound) of the same weights."""
    s2s = tf.contrib.seq2seq
    rng = np.random.RandomState(27)
    vocab, units = 7, 4
    tf.reset_default_graph()
    src = tf.placeholder(tf.int32, [None, None])
    src_len = tf.placeholder(tf.int32, [None])
    emb = tf.get_variable("emb", [vocab, units])
    enc_out, enc_state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(units),
                                           tf.nn.embedding_lookup(emb, src),
                                           sequence_length=src_len, dtype=tf.float32)
    bound = tf.cast(tf.round(tf.cast(tf.reduce_max(src_len), tf.float32) * 2.0), tf.int32)
    batch = tf.shape(src)[0]
    results = []
    for beam in (None, 3):
        for max_iter in (bound, 10):
            with tf.variable_scope("decoder", reuse=tf.AUTO_REUSE):
                memory, lengths, state = enc_out, src_len, enc_state
                if beam:
                    memory, lengths, state = [s2s.tile_batch(t, beam)
                                              for t in (enc_out, src_len, enc_state)]
                mechanism = s2s.LuongAttention(units, memory, memory_sequence_length=lengths)
                cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(units), mechanism,
                                            attention_layer_size=units,
                                            alignment_history=not beam)
                initial = cell.zero_state(batch * (beam or 1), tf.float32).clone(
                    cell_state=state)
                layer = tf.layers.Dense(vocab, name="proj")
                if beam:
                    decoder = s2s.BeamSearchDecoder(cell, emb, tf.fill([batch], 1), 2, initial,
                                                    beam, output_layer=layer)
                else:
                    decoder = s2s.BasicDecoder(cell, s2s.GreedyEmbeddingHelper(
                        emb, tf.fill([batch], 1), 2), initial, output_layer=layer)
                out, state, out_len = s2s.dynamic_decode(decoder, maximum_iterations=max_iter)
            results.append((out.predicted_ids if beam else out.sample_id, out_len))
            if not beam and max_iter is bound:
                history = state.alignment_history.stack()
    feed = {src: rng.randint(3, vocab, (2, 5)), src_len: [5, 3]}
    (greedy_loop, greedy_unrolled, beam_loop, beam_unrolled), alignments = _run(
        [results, history], feed)
    steps = greedy_loop[0].shape[1]
    assert alignments.shape == (steps, 2, 5)
    np.testing.assert_allclose(alignments.sum(-1), np.ones((steps, 2)), rtol=1e-5)
    assert (alignments[:, 1, 3:] == 0).all()
    for looped, unrolled in ((greedy_loop, greedy_unrolled), (beam_loop, beam_unrolled)):
        np.testing.assert_array_equal(looped[0], unrolled[0])
        np.testing.assert_array_equal(looped[1], unrolled[1])
