"""tf.contrib.seq2seq beam search (shardflow/seq2seq_beam_search.py): one step against TF1's own
worked examples, gather_tree, BeamSearchDecoder + dynamic_decode against a hypothesis-list beam
search in NumPy over the same fixed weights (with and without a length penalty), beam width 1
against greedy decoding through an AttentionWrapper, and a tiny attention model that learns to
reverse its input with TrainingHelper, then decodes it greedily and with beams."""
import numpy as np
import pytest

import shardflow as tf
from shardflow.seq2seq_beam_search import _beam_search_step

seq2seq = tf.contrib.seq2seq


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _tf1_step_logits(eos_case):
    """The logits of TF1's beam_search_decoder_test TestBeamStep (batch 2, beam 3, vocab 5)."""
    logits = np.full([2, 3, 5], 0.0001, np.float32)
    logits[0, 0, 2], logits[0, 0, 3], logits[0, 1, 3], logits[0, 1, 4] = 1.9, 2.1, 3.1, 0.9
    logits[1, 0, 1], logits[1, 1, 2] = 0.5, 5.7 if eos_case else 2.7
    logits[1, 2, 2], logits[1, 2, 3] = 1.0 if eos_case else 10.0, 0.2
    return logits


@pytest.mark.parametrize("eos_case", [False, True])
def test_one_step_matches_tf1_worked_example(eos_case):
    logits = _tf1_step_logits(eos_case)
    if eos_case:
        lengths = np.array([[2, 1, 2], [2, 2, 1]], np.int64)
        finished = np.array([[False, True, False], [False, False, True]])
    else:
        lengths, finished = np.full([2, 3], 2, np.int64), np.zeros([2, 3], bool)
    log_probs = np.log(np.full([2, 3], 1.0 / 3, np.float32))
    state = seq2seq.BeamSearchDecoderState(tf.zeros([6, 2]), tf.constant(log_probs),
                                           tf.constant(finished), tf.constant(lengths), ())
    out, nxt = _beam_search_step(tf.constant(logits), tf.zeros([6, 2]), state, 3, 0, 0.6)
    with tf.Session() as sess:
        out, nxt = sess.run([out, nxt])
    step = _log_softmax(logits.astype(np.float64))
    if eos_case:
        np.testing.assert_array_equal(out.parent_ids, [[1, 0, 0], [1, 2, 0]])
        np.testing.assert_array_equal(out.predicted_ids, [[0, 3, 2], [2, 0, 1]])
        np.testing.assert_array_equal(nxt.lengths, [[1, 3, 3], [3, 1, 3]])
        np.testing.assert_array_equal(nxt.finished, [[True, False, False], [False, True, False]])
        added = [[0, step[0, 0, 3], step[0, 0, 2]], [step[1, 1, 2], 0, step[1, 0, 1]]]
    else:
        np.testing.assert_array_equal(out.parent_ids, [[1, 0, 0], [2, 1, 0]])
        np.testing.assert_array_equal(out.predicted_ids, [[3, 3, 2], [2, 2, 1]])
        np.testing.assert_array_equal(nxt.lengths, np.full([2, 3], 3))
        assert not nxt.finished.any()
        added = [[step[0, 1, 3], step[0, 0, 3], step[0, 0, 2]],
                 [step[1, 2, 2], step[1, 1, 2], step[1, 0, 1]]]
    want = np.log(1.0 / 3) + np.array(added)
    np.testing.assert_allclose(nxt.log_probs, want, rtol=1e-5)
    penalty = ((5.0 + nxt.lengths) / 6.0) ** 0.6
    np.testing.assert_allclose(out.scores, want / penalty, rtol=1e-5)


def test_step_with_more_beams_than_words_keeps_dead_beams_at_minus_inf():
    """TF1's TestLargeBeamStep: beam 8 over a vocabulary of 5, only beam 0 alive."""
    alive = np.arange(8)[None, :] == 0
    state = seq2seq.BeamSearchDecoderState(
        tf.zeros([16, 2]), tf.constant(np.where(alive, 0.0, -np.inf).astype(np.float32)),
        tf.constant(~alive.repeat(2, 0)), tf.constant(np.where(alive, 2, 0).repeat(2, 0)), ())
    logits = np.full([2, 8, 5], 0.0001, np.float32)
    logits[0, 0, 2], logits[0, 0, 3], logits[1, 0, 1] = 1.9, 2.1, 0.5
    out, nxt = _beam_search_step(tf.constant(logits), tf.zeros([16, 2]), state, 8, 0, 0.6)
    with tf.Session() as sess:
        out, nxt = sess.run([out, nxt])
    assert out.predicted_ids[0, 0] == 3 and out.predicted_ids[0, 1] == 2
    assert out.predicted_ids[1, 0] == 1
    assert np.all(np.isneginf(nxt.log_probs[:, -3:])) and np.all(nxt.lengths[:, -3:] == 0)
    assert np.all(np.isfinite(nxt.log_probs[:, :-3])) and np.all(nxt.lengths[:, :-3] > 0)
    for b in range(2):   # the five live candidates are five different words of beam 0
        assert sorted(out.predicted_ids[b, :5]) == [0, 1, 2, 3, 4]


def test_gather_tree():
    # TF1's example: [max_time 3, batch 1, beam 3].
    ids = np.array([[[1, 2, 3]], [[4, 5, 6]], [[7, 8, 9]]], np.int32)
    parents = np.array([[[0, 0, 0]], [[0, 1, 1]], [[2, 1, 2]]], np.int32)
    want = [[[2, 2, 2]], [[6, 5, 6]], [[7, 8, 9]]]
    # Two batch entries: the second walked from step 2 (of 4); the first beam of the first is
    # cut at its first end token 0 ([1, 0, 8, 2] followed back).
    ids2 = np.array([[[1, 2], [3, 4]], [[5, 0], [6, 7]], [[8, 9], [1, 1]], [[2, 2], [4, 4]]],
                    np.int32)
    parents2 = np.array([[[0, 0], [0, 0]], [[0, 0], [1, 0]], [[1, 0], [1, 0]],
                         [[0, 1], [0, 0]]], np.int32)
    want2 = np.array([[[1, 1], [3, 4]], [[0, 5], [7, 6]], [[0, 9], [1, 1]], [[0, 2], [0, 0]]])
    unknown = tf.placeholder(tf.int32, [None, None, None])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(seq2seq.gather_tree(ids, parents, [3], 10)), want)
        np.testing.assert_array_equal(
            sess.run(seq2seq.gather_tree(unknown, parents, [3], 10), {unknown: ids}), want)
        np.testing.assert_array_equal(
            sess.run(seq2seq.gather_tree(ids2, parents2, [4, 3], 0)), want2)
        np.testing.assert_array_equal(
            sess.run(seq2seq.gather_tree(unknown, parents2, [4, 3], 0), {unknown: ids2}), want2)


def _numpy_beam_search(step_fn, state, start, beam, end, steps, penalty, stop=True):
    """Beam search over hypotheses kept as Python lists, by TF1's rules (see the module doc of
    seq2seq_beam_search.py); step_fn(state, token) -> (next state, log probabilities). Runs
    `steps` steps, or (stop) until every beam has finished. Returns (ids [time, beam], the
    last step's scores, lengths)."""
    hyps = [([], 0.0, False, 0, state)]           # tokens, log p, finished, length, state
    for _ in range(steps):
        cands = []
        for tokens, logp, done, length, h in hyps:
            if done:
                cands.append((tokens + [end], logp, True, length, h, length))
                continue
            h2, step_logp = step_fn(h, tokens[-1] if tokens else start)
            for v in range(len(step_logp)):
                cands.append((tokens + [v], logp + step_logp[v], v == end, length + 1, h2,
                              length + (v != end)))           # the length it is scored with
        score = [c[1] / (((5.0 + c[5]) / 6.0) ** penalty) for c in cands]
        order = sorted(range(len(cands)), key=lambda i: -score[i])[:beam]
        hyps = [cands[i][:5] for i in order]
        final_scores = [score[i] for i in order]
        if stop and all(h[2] for h in hyps):
            break
    ids = np.array([h[0] for h in hyps]).T
    return ids, np.array(final_scores), np.array([h[3] for h in hyps])


@pytest.mark.parametrize("penalty,seed", [(0.0, 3), (1.0, 3), (1.0, 5), (0.6, 7)])
def test_beam_search_decoder_matches_numpy_beam_search(penalty, seed):
    tf.set_random_seed(seed)
    rng = np.random.RandomState(seed)
    batch, beam, vocab, units, depth, end, steps = 2, 3, 5, 4, 3, 1, 8
    embedding = rng.randn(vocab, depth).astype(np.float32)
    start_state = rng.randn(batch, units).astype(np.float32)
    cell = tf.nn.rnn_cell.BasicRNNCell(units)
    # The end token favoured, so that the beams finish at different steps before the last.
    layer = tf.layers.Dense(vocab, name="proj",
                            kernel_initializer=tf.random_normal_initializer(stddev=1.5),
                            bias_initializer=tf.constant_initializer(3 * np.eye(vocab)[end]))
    decoder = seq2seq.BeamSearchDecoder(
        cell, embedding, tf.fill([batch], 0), end, seq2seq.tile_batch(start_state, beam), beam,
        output_layer=layer, length_penalty_weight=penalty)
    outputs, final_state, lengths = seq2seq.dynamic_decode(decoder, maximum_iterations=steps)
    assert isinstance(outputs, seq2seq.FinalBeamDecoderOutput)
    assert isinstance(final_state, seq2seq.BeamSearchDecoderState)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, n, h = sess.run([outputs, lengths, final_state.cell_state])
        v = {x.name.split(":")[0]: sess.run(x) for x in tf.global_variables()}
    kernel, bias = v["decoder/basic_rnn_cell/kernel"], v["decoder/basic_rnn_cell/bias"]

    def step_fn(h_prev, token):
        h_new = np.tanh(np.concatenate([embedding[token], h_prev]) @ kernel + bias)
        return h_new, _log_softmax(h_new @ v["decoder/proj/kernel"] + v["decoder/proj/bias"])

    # The batch runs until each of its entries has finished: the entries that finished first
    # go on repeating their end tokens (and are scored with them) until then.
    ran = max(_numpy_beam_search(step_fn, start_state[b], 0, beam, end, steps, penalty)[0]
              .shape[0] for b in range(batch))
    assert got.predicted_ids.shape == (batch, ran, beam) and ran == n.max()
    assert ran < steps              # TF1's loop stopped before maximum_iterations
    for b in range(batch):
        ids, scores, hyp_lengths = _numpy_beam_search(step_fn, start_state[b], 0, beam, end,
                                                      ran, penalty, stop=False)
        np.testing.assert_array_equal(got.predicted_ids[b], ids)
        np.testing.assert_allclose(got.beam_search_decoder_output.scores[b, -1], scores,
                                   rtol=1e-4)
        np.testing.assert_array_equal(n[b], hyp_lengths)
    assert h.shape == (batch, beam, units)          # the final cell state, split by beam


def _attention_decoder(memory, encoder_state, units):
    """A GRU decoder with Luong attention over `memory`, as a TF1 NMT program builds it
    (within the caller's variable scope)."""
    attention = seq2seq.LuongAttention(units, memory, scale=True)
    cell = seq2seq.AttentionWrapper(tf.nn.rnn_cell.GRUCell(units), attention,
                                    attention_layer_size=units)
    batch = tf.shape(memory)[0]
    return cell, cell.zero_state(batch, tf.float32).clone(cell_state=encoder_state)


def test_attention_model_learns_to_reverse_and_decodes_greedily_and_with_beams():
    tf.set_random_seed(4)
    vocab, start, end, steps, units, beam, batch = 8, 0, 1, 4, 32, 3, 64
    rng = np.random.RandomState(4)
    src = rng.randint(2, vocab, size=(batch, steps)).astype(np.int32)
    target = np.concatenate([src[:, ::-1], np.full((batch, 1), end, np.int32)], 1)
    dec_in = np.concatenate([np.full((batch, 1), start, np.int32), src[:, ::-1]], 1)
    emb = tf.get_variable("emb", [vocab, 16], initializer=tf.random_uniform_initializer(-1, 1))
    memory, enc_state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(units, name="enc"),
                                          tf.nn.embedding_lookup(emb, src), dtype=tf.float32,
                                          scope="encoder")
    proj = tf.layers.Dense(vocab, name="proj")
    with tf.variable_scope("decoder") as scope:
        cell, initial = _attention_decoder(memory, enc_state, units)
        helper = seq2seq.TrainingHelper(tf.nn.embedding_lookup(emb, dec_in), [steps + 1] * batch)
        train_out, _, _ = seq2seq.dynamic_decode(
            seq2seq.BasicDecoder(cell, helper, initial, output_layer=proj), scope=scope)
    loss = seq2seq.sequence_loss(train_out.rnn_output, target, tf.ones([batch, steps + 1]))
    train = tf.train.AdamOptimizer(0.02).minimize(loss)
    trained = {v.name for v in tf.trainable_variables()}
    with tf.variable_scope("decoder", reuse=True) as scope:
        greedy = seq2seq.GreedyEmbeddingHelper(emb, tf.fill([batch], start), end)
        greedy_out, _, greedy_len = seq2seq.dynamic_decode(
            seq2seq.BasicDecoder(cell, greedy, initial, output_layer=proj),
            maximum_iterations=steps + 3, scope=scope)
    # Each new mechanism in an entry of the decoder's scope of its own: as TF1's layers, a
    # second memory_layer made in one entry would be memory_layer_1.
    with tf.variable_scope("decoder", reuse=True) as scope:
        # Beam search: the memory and the encoder state tiled beam times, a new mechanism
        # over the tiled memory sharing the trained variables.
        tiled_cell, tiled_initial = _attention_decoder(
            seq2seq.tile_batch(memory, beam), seq2seq.tile_batch(enc_state, beam), units)
        beam_out, beam_state, beam_len = seq2seq.dynamic_decode(
            seq2seq.BeamSearchDecoder(tiled_cell, emb, tf.fill([batch], start), end,
                                      tiled_initial, beam, output_layer=proj),
            maximum_iterations=steps + 3, scope=scope)
    with tf.variable_scope("decoder", reuse=True) as scope:
        one_cell, one_initial = _attention_decoder(memory, enc_state, units)
        one_out, _, _ = seq2seq.dynamic_decode(
            seq2seq.BeamSearchDecoder(one_cell, emb, tf.fill([batch], start), end,
                                      one_initial, 1, output_layer=proj),
            maximum_iterations=steps + 3, scope=scope)
    assert {v.name for v in tf.trainable_variables()} == trained     # all shared
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(150):
            sess.run(train)
        last, ids, n, beams, scores, lengths, one = sess.run(
            [loss, greedy_out.sample_id, greedy_len, beam_out.predicted_ids,
             beam_out.beam_search_decoder_output.scores, beam_len, one_out.predicted_ids])
    assert last < 0.1 * first
    assert (ids[:, :steps + 1] == target).all(1).mean() > 0.9
    assert (n == steps + 1).mean() > 0.9
    assert beams.shape[0] == batch and beams.shape[2] == beam
    assert (beams[:, :steps + 1, 0] == target).all(1).mean() > 0.9       # the best beam
    assert np.all(np.diff(scores[:, -1], axis=1) <= 0)                    # sorted beams
    assert (lengths[:, 0] == steps + 1).mean() > 0.9
    # A beam of one is greedy decoding (up to its end token, after which it repeats it).
    for b in range(batch):
        stop = list(ids[b]).index(end) + 1 if end in ids[b] else ids.shape[1]
        np.testing.assert_array_equal(one[b, :stop, 0], ids[b, :stop])


def test_range_zeros_and_top_k_the_decoder_builds_on():
    """sf.range with tensor bounds, sf.zeros/ones with tensor shapes, and top_k over -inf and
    integer entries (each taken once, ties to the lower index)."""
    n = tf.placeholder(tf.int32, [])
    x = tf.placeholder(tf.float32, [None, 3])
    scores = tf.constant([[1.0, -np.inf, 3.0, 3.0, -np.inf, 0.0]])
    with tf.Session() as sess:
        r = sess.run([tf.range(n), tf.range(n, -1, -3), tf.range(tf.cast(n, tf.float32) / 2),
                      tf.range(-n)], {n: 0})
        assert [v.tolist() for v in r] == [[], [0], [], []]
        r = sess.run([tf.range(n), tf.range(2, n), tf.range(n, -1, -3), tf.range(1, n, 2),
                      tf.range(tf.cast(n, tf.float32) / 2)], {n: 7})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Requires start <= limit"):
            sess.run(tf.range(-n), {n: 7})   # as TF's Range: not an empty range
        z, o = sess.run([tf.zeros(tf.shape(x)), tf.ones([tf.shape(x)[0], 2], tf.int64)],
                        {x: np.ones([4, 3])})
        top = sess.run(tf.nn.top_k(scores, 6))
        top_int = sess.run(tf.nn.top_k(tf.constant([[5, 1, 5, -2]]), 3))
    for got, want in zip(r, [np.arange(7), np.arange(2, 7), np.arange(7, -1, -3),
                             np.arange(1, 7, 2), np.arange(3.5)]):
        np.testing.assert_array_equal(got, want)
    assert r[4].dtype == np.float32 and r[0].dtype == np.int32
    np.testing.assert_array_equal(z, np.zeros([4, 3]))
    np.testing.assert_array_equal(o, np.ones([4, 2]))
    assert o.dtype == np.int64 and tf.ones([tf.shape(x)[0], 2]).shape.as_list() == [None, 2]
    np.testing.assert_array_equal(top.indices, [[2, 3, 0, 5, 1, 4]])
    np.testing.assert_array_equal(top.values, [[3, 3, 1, 0, -np.inf, -np.inf]])
    np.testing.assert_array_equal(top_int.indices, [[0, 2, 1]])
    np.testing.assert_array_equal(top_int.values, [[5, 5, 1]])
