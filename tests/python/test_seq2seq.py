"""tf.contrib.seq2seq: sequence_loss against NumPy, and a tiny encoder-decoder that learns to copy
short sequences with TrainingHelper, then decodes them greedily with GreedyEmbeddingHelper."""
import numpy as np
import pytest

import shardflow as tf

seq2seq = tf.contrib.seq2seq


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def _weighted_xent(seed):
    """(weights, NumPy's weighted cross-entropy [2, 3], sequence_loss's tensor arguments) of
    random logits [2, 3, 4]."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((2, 3, 4)).astype(np.float32)
    targets = np.array([[1, 0, 3], [2, 2, 0]], np.int32)
    weights = np.array([[1, 1, 0], [1, 0.5, 1]], np.float32)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    xent = -np.log(np.take_along_axis(p, targets[..., None], -1))[..., 0] * weights
    args = (tf.constant(logits), tf.constant(targets), tf.constant(weights))
    return weights, xent, args


def test_sequence_loss_matches_numpy():
    weights, xent, args = _weighted_xent(1)
    with tf.Session() as sess:
        both, per_step, per_seq, none = sess.run([
            seq2seq.sequence_loss(*args), seq2seq.sequence_loss(*args,
                                                                 average_across_timesteps=False),
            seq2seq.sequence_loss(*args, average_across_batch=False),
            seq2seq.sequence_loss(*args, average_across_timesteps=False,
                                  average_across_batch=False)])
    np.testing.assert_allclose(both, xent.sum() / weights.sum(), rtol=1e-5)
    np.testing.assert_allclose(per_step, xent.sum(0) / weights.sum(0), rtol=1e-5)
    np.testing.assert_allclose(per_seq, xent.sum(1) / weights.sum(1), rtol=1e-5)
    np.testing.assert_allclose(none, xent, rtol=1e-5)


def test_sequence_loss_sums_over_nonzero_weights():
    """TF 1.15's sum_over_timesteps / sum_over_batch divide the weighted sum by the number of
    non-zero weights, and softmax_loss_function is the eighth argument."""
    weights, xent, args = _weighted_xent(3)
    calls = []

    def custom(labels, logits):
        calls.append(1)
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)

    with tf.Session() as sess:
        both, per_step, per_seq, positional = sess.run([
            seq2seq.sequence_loss(*args, False, False, True, True),
            seq2seq.sequence_loss(*args, average_across_timesteps=False,
                                  average_across_batch=False, sum_over_batch=True),
            seq2seq.sequence_loss(*args, average_across_timesteps=False,
                                  average_across_batch=False, sum_over_timesteps=True),
            seq2seq.sequence_loss(*args, True, True, False, False, custom)])
    nonzero = (weights != 0).astype(np.float32)
    np.testing.assert_allclose(both, xent.sum() / nonzero.sum(), rtol=1e-5)
    np.testing.assert_allclose(per_step, xent.sum(0) / nonzero.sum(0), rtol=1e-5)
    np.testing.assert_allclose(per_seq, xent.sum(1) / nonzero.sum(1), rtol=1e-5)
    np.testing.assert_allclose(positional, xent.sum() / weights.sum(), rtol=1e-5)
    assert calls == [1]
    with pytest.raises(ValueError, match="sum_over_timesteps"):
        seq2seq.sequence_loss(*args, sum_over_timesteps=True)


def test_copy_task_trains_and_decodes_greedily():
    vocab, start, end, steps = 6, 0, 1, 3
    rng = np.random.default_rng(2)
    src = rng.integers(2, vocab, size=(64, steps)).astype(np.int32)
    dec_in = np.concatenate([np.full((64, 1), start, np.int32), src], 1)        # GO x1 x2 x3
    dec_out = np.concatenate([src, np.full((64, 1), end, np.int32)], 1)         # x1 x2 x3 EOS
    emb = tf.get_variable("emb", [vocab, 16], initializer=tf.random_uniform_initializer(-1, 1))
    enc_cell = tf.nn.rnn_cell.GRUCell(32, name="enc")
    _, enc_state = tf.nn.dynamic_rnn(enc_cell, tf.nn.embedding_lookup(emb, src), dtype=tf.float32,
                                     scope="encoder")
    cell = tf.nn.rnn_cell.GRUCell(32, name="dec")
    out_layer = tf.layers.Dense(vocab, name="proj")
    helper = seq2seq.TrainingHelper(tf.nn.embedding_lookup(emb, dec_in), [steps + 1] * 64)
    train_dec = seq2seq.BasicDecoder(cell, helper, enc_state, output_layer=out_layer)
    outputs, _, lengths = seq2seq.dynamic_decode(train_dec)
    assert outputs.rnn_output.shape.as_list() == [64, steps + 1, vocab]
    loss = seq2seq.sequence_loss(outputs.rnn_output, dec_out, tf.ones([64, steps + 1]))
    train = tf.train.AdamOptimizer(0.02).minimize(loss)
    greedy = seq2seq.GreedyEmbeddingHelper(emb, tf.fill([64], start), end)
    infer, _, infer_len = seq2seq.dynamic_decode(
        seq2seq.BasicDecoder(cell, greedy, enc_state, output_layer=out_layer),
        maximum_iterations=steps + 1)
    # The NMT tutorial's inference: end token and bound are tensors (a while_loop that stops
    # once every sequence has emitted the end token, at most twice the source length).
    bound = tf.cast(tf.round(tf.cast(tf.shape(src)[1], tf.float32) * 2.0), tf.int32)
    looped = seq2seq.GreedyEmbeddingHelper(emb, tf.fill([64], start), tf.constant(end))
    loop_out, _, loop_len = seq2seq.dynamic_decode(
        seq2seq.BasicDecoder(cell, looped, enc_state, output_layer=out_layer),
        maximum_iterations=bound)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(300):
            sess.run(train)
        last, ids, n = sess.run([loss, infer.sample_id, infer_len])
        loop_ids, loop_n, loop_logits = sess.run([loop_out.sample_id, loop_len,
                                                  loop_out.rnn_output])
    assert last < 0.2 * first
    assert (ids == dec_out).mean() > 0.9
    assert (n == steps + 1).mean() > 0.9
    # the same decoding, stopped when all are done (<= 2 * steps), not padded to the bound
    assert steps + 1 <= loop_ids.shape[1] <= 2 * steps
    assert loop_logits.shape == (64, loop_ids.shape[1], vocab)
    np.testing.assert_array_equal(loop_ids[:, :steps + 1], ids)
    np.testing.assert_array_equal(loop_n, n)


def test_errors():
    with pytest.raises(TypeError):
        seq2seq.BasicDecoder(None, object(), None)
    helper = seq2seq.GreedyEmbeddingHelper(tf.zeros([3, 2]), [0, 0], 1)
    seq2seq.BasicDecoder(tf.nn.rnn_cell.GRUCell(2), helper, tf.zeros([2, 2]))


def test_greedy_decoding_with_an_int_bound_ends_when_every_sequence_has():
    # Regression: with maximum_iterations a Python int the unrolled decoder always returned
    # that many steps; TF1's loop stops once every sequence emitted end_token.
    with tf.Graph().as_default():
        emb = tf.get_variable("emb", [10, 8])
        cell = tf.nn.rnn_cell.LSTMCell(16)
        bias = np.zeros(10, np.float32)
        bias[2] = 100.0   # the end token wins every step
        proj = tf.layers.Dense(10, kernel_initializer=tf.zeros_initializer(),
                               bias_initializer=tf.constant_initializer(bias))
        helper = tf.contrib.seq2seq.GreedyEmbeddingHelper(emb, tf.fill([3], 1), 2)
        decoder = tf.contrib.seq2seq.BasicDecoder(cell, helper, cell.zero_state(3, tf.float32),
                                                  output_layer=proj)
        out, state, lengths = tf.contrib.seq2seq.dynamic_decode(decoder, maximum_iterations=5)
        one_step, _ = cell(emb[1:2] * tf.ones([3, 1]), cell.zero_state(3, tf.float32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            ids, logits, got, want, lens = sess.run([out.sample_id, out.rnn_output, state.h,
                                                     one_step, lengths])
    assert ids.shape == (3, 1) and logits.shape == (3, 1, 10)
    np.testing.assert_array_equal(lens, [1, 1, 1])
    np.testing.assert_allclose(got, want, rtol=1e-6)   # the state after the one step that ran


def test_sample_embedding_helper_draws_from_the_softmax():
    # Missing before (AttributeError): sampling decoders (text generation) draw each id.
    with tf.Graph().as_default():
        emb = tf.get_variable("emb", [6, 4])
        cell = tf.nn.rnn_cell.GRUCell(8)
        bias = np.array([0.0, 0.0, 3.0, 3.0, 0.0, -50.0], np.float32)   # 5 is never drawn
        proj = tf.layers.Dense(6, kernel_initializer=tf.zeros_initializer(),
                               bias_initializer=tf.constant_initializer(bias))
        outs = {}
        for kind, steps in (("sample", 40), ("cold", 40), ("loop", tf.constant(40))):
            helper = tf.contrib.seq2seq.SampleEmbeddingHelper(
                emb, tf.fill([50], 0), 5, softmax_temperature=0.01 if kind == "cold" else None,
                seed=3)
            decoder = tf.contrib.seq2seq.BasicDecoder(cell, helper, cell.zero_state(50, tf.float32),
                                                      output_layer=proj)
            with tf.variable_scope("d", reuse=tf.AUTO_REUSE):
                outs[kind] = tf.contrib.seq2seq.dynamic_decode(decoder,
                                                               maximum_iterations=steps)[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run({k: v.sample_id for k, v in outs.items()})
    for ids in got.values():
        assert ids.shape == (50, 40) and ids.max() < 5
    counts = np.bincount(got["sample"].ravel(), minlength=6) / got["sample"].size
    want = np.exp(bias) / np.exp(bias).sum()
    np.testing.assert_allclose(counts, want, atol=0.03)
    assert set(np.unique(got["cold"])) <= {2, 3}   # nearly the argmax at a low temperature
