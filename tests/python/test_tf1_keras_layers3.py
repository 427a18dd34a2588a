"""tf.keras layers and utilities of TF 1.15 beyond test_tf1_keras_layers2's: Minimum,
AveragePooling1D, Attention / AdditiveAttention, LocallyConnected1D, the generic RNN with
SimpleRNNCell / LSTMCell / GRUCell / StackedRNNCells / a custom cell, masks (Masking,
Embedding(mask_zero=True)) through the recurrent layers, initial_state; and the NumPy side:
preprocessing.text's Tokenizer, preprocessing.image's ImageDataGenerator and its flow, utils
(normalize, custom_object_scope), backend.image_data_format, activations.exponential. Values
against NumPy or by hand."""
import os

import numpy as np
import pytest
from grad_check import check_gradient

import shardflow as tf

keras = tf.keras
L = keras.layers


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


def rand(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def run(outputs, feed):
    return keras.backend.get_session().run(outputs, feed)


# ---- merge, pooling, locally connected -----------------------------------------------------


def test_minimum_and_1d_pooling():
    a, b, c = rand(2, 6, 3, seed=1), rand(2, 6, 3, seed=2), rand(2, 6, 3, seed=3)
    ia, ib, ic = (L.Input(shape=(6, 3)) for _ in range(3))
    y_min = L.Minimum()([ia, ib, ic])
    y_fn = L.minimum([ia, ib])
    avg = L.AveragePooling1D(pool_size=2)(ia)
    avg_same = L.AvgPool1D(pool_size=3, strides=2, padding="same")(ia)
    mx = L.MaxPooling1D(3, strides=1)(ia)
    got = run([y_min, y_fn, avg, avg_same, mx], {ia: a, ib: b, ic: c})
    np.testing.assert_array_equal(got[0], np.minimum(np.minimum(a, b), c))
    np.testing.assert_array_equal(got[1], np.minimum(a, b))
    np.testing.assert_allclose(got[2], a.reshape(2, 3, 2, 3).mean(axis=2), rtol=1e-6)
    # 'same', pool 3 stride 2 over 6 steps: windows [0, 1], [1, 2, 3], [3, 4, 5] (the pad
    # TF puts is 1 at the end: (ceil(6/2) - 1) * 2 + 3 - 6 = 1, all of it after)
    want_same = np.stack([a[:, 0:3].mean(1), a[:, 2:5].mean(1), a[:, 4:6].mean(1)], 1)
    np.testing.assert_allclose(got[3], want_same, rtol=1e-6)
    np.testing.assert_array_equal(got[4], np.stack([a[:, t:t + 3].max(1) for t in range(4)], 1))
    assert avg.shape.as_list() == [None, 3, 3] and L.AvgPool1D is L.AveragePooling1D


def test_locally_connected_1d_matches_numpy():
    x = rand(2, 7, 3)
    inp = L.Input(shape=(7, 3))
    layer = L.LocallyConnected1D(4, 3, strides=2, activation="relu")
    y = layer(inp)
    assert y.shape.as_list() == [None, 3, 4]
    kernel, bias = [w.shape.as_list() for w in layer.weights]
    assert kernel == [3, 9, 4] and bias == [3, 4]
    k = rand(3, 9, 4, seed=5)
    b = rand(3, 4, seed=6)
    layer.set_weights([k, b])
    want = np.stack([x[:, 2 * i:2 * i + 3].reshape(2, 9) @ k[i] + b[i] for i in range(3)], 1)
    np.testing.assert_allclose(run(y, {inp: x}), np.maximum(want, 0), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="valid"):
        L.LocallyConnected1D(4, 3, padding="same")


# ---- attention -------------------------------------------------------------------------------


def test_attention_matches_numpy_softmax_qk_v():
    q, v, k = rand(2, 3, 4, seed=1), rand(2, 5, 4, seed=2), rand(2, 5, 4, seed=3)
    iq, iv, ik = L.Input(shape=(3, 4)), L.Input(shape=(5, 4)), L.Input(shape=(5, 4))
    plain = L.Attention()([iq, iv])
    keyed = L.Attention()([iq, iv, ik])
    scaled_layer = L.Attention(use_scale=True)
    scaled = scaled_layer([iq, iv, ik])
    assert plain.shape.as_list() == [None, 3, 4] and len(scaled_layer.weights) == 1
    sess = keras.backend.get_session()
    scaled_layer.set_weights([np.float32(0.5)])
    got = sess.run([plain, keyed, scaled], {iq: q, iv: v, ik: k})

    def attend(q, k, v, scale=1.0):
        return softmax(scale * np.einsum("bqd,bvd->bqv", q, k)) @ v
    np.testing.assert_allclose(got[0], attend(q, v, v), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], attend(q, k, v), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], attend(q, k, v, 0.5), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="list of inputs"):
        L.Attention()(iq)
    with pytest.raises(ValueError, match="causal"):
        L.Attention(causal=True)


def test_attention_masks_and_additive_attention():
    q, v = rand(2, 3, 4, seed=1), rand(2, 5, 4, seed=2)
    q_mask = np.array([[1, 1, 0], [1, 1, 1]], bool)
    v_mask = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], bool)
    iq, iv = L.Input(shape=(3, 4)), L.Input(shape=(5, 4))
    qm, vm = tf.placeholder(tf.bool, [None, 3]), tf.placeholder(tf.bool, [None, 5])
    masked = L.Attention()([iq, iv], mask=[qm, vm])
    assert masked._keras_mask is not None
    add_layer = L.AdditiveAttention()
    additive = add_layer([iq, iv])
    add_plain = L.AdditiveAttention(use_scale=False)([iq, iv])
    scale = rand(4, seed=7)
    add_layer.set_weights([scale])
    got = run([masked, additive, add_plain], {iq: q, iv: v, qm: q_mask, vm: v_mask})
    scores = np.einsum("bqd,bvd->bqv", q, v) - 1e9 * (~v_mask[:, None, :])
    want = (softmax(scores) @ v) * q_mask[:, :, None]
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
    t = np.tanh(q[:, :, None, :] + v[:, None, :, :])
    np.testing.assert_allclose(got[1], softmax((t * scale).sum(-1)) @ v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], softmax(t.sum(-1)) @ v, rtol=1e-5, atol=1e-6)


def test_attention_gradient():
    rng = np.random.RandomState(3)

    def fn(q, v):
        return L.Attention()([q, v])
    check_gradient(fn, rng.randn(2, 2, 3), rng.randn(2, 3, 3), rng=rng, dtype=np.float32,
                   h=1e-2, rtol=2e-2, atol=2e-3)


# ---- recurrent ---------------------------------------------------------------------------------


def hard_sigmoid(x):
    return np.clip(0.2 * x + 0.5, 0.0, 1.0)


def np_lstm(x, kernel, recurrent, bias, h=None, c=None, mask=None):
    """Keras's LSTM (gates i, f, c, o; hard_sigmoid) over x [batch, time, depth]; with `mask`
    Keras's rule: a masked step keeps the state and repeats the previous output."""
    n = kernel.shape[1] // 4
    h = np.zeros((x.shape[0], n), np.float32) if h is None else h
    c = np.zeros((x.shape[0], n), np.float32) if c is None else c
    prev, outs = np.zeros_like(h), []
    for t in range(x.shape[1]):
        i, f, j, o = np.split(x[:, t] @ kernel + h @ recurrent + bias, 4, axis=1)
        c2 = c * hard_sigmoid(f) + hard_sigmoid(i) * np.tanh(j)
        h2 = np.tanh(c2) * hard_sigmoid(o)
        m = np.ones((x.shape[0], 1), bool) if mask is None else mask[:, t:t + 1]
        h, c, prev = np.where(m, h2, h), np.where(m, c2, c), np.where(m, h2, prev)
        outs.append(prev)
    return np.stack(outs, 1), h, c


def np_simple(x, kernel, recurrent, bias, mask=None):
    n = kernel.shape[1]
    h = np.zeros((x.shape[0], n), np.float32)
    outs = []
    for t in range(x.shape[1]):
        h2 = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
        h = h2 if mask is None else np.where(mask[:, t:t + 1], h2, h)
        outs.append(h)
    return np.stack(outs, 1), h


def test_rnn_lstm_cell_matches_lstm_and_numpy():
    x = rand(3, 5, 4)
    inp = L.Input(shape=(5, 4))
    lstm = L.LSTM(6, return_sequences=True, return_state=True)
    rnn = L.RNN(L.LSTMCell(6), return_sequences=True, return_state=True)
    ya, yb = lstm(inp), rnn(inp)
    assert [w.shape.as_list() for w in rnn.weights] == [[4, 24], [6, 24], [24]]
    kernel, recurrent = rand(4, 24, seed=4) * 0.5, rand(6, 24, seed=6) * 0.5
    bias = rand(24, seed=5) * 0.5
    lstm.set_weights([kernel, recurrent, bias])
    rnn.set_weights([kernel, recurrent, bias])
    ra, rb = run([ya, yb], {inp: x})
    seq, h, c = np_lstm(x, kernel, recurrent, bias)
    for got in (ra, rb):
        assert len(got) == 3
        np.testing.assert_allclose(got[0], seq, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1], h, rtol=1e-5, atol=1e-6)   # Keras's order: h, c
        np.testing.assert_allclose(got[2], c, rtol=1e-5, atol=1e-6)


def test_rnn_gru_and_simple_cells_match_their_layers():
    x = rand(2, 4, 3)
    inp = L.Input(shape=(4, 3))
    pairs = [(L.GRU(5), L.RNN(L.GRUCell(5))),
             (L.SimpleRNN(5, go_backwards=True), L.RNN(L.SimpleRNNCell(5), go_backwards=True))]
    outs = []
    for layer, rnn in pairs:
        outs += [layer(inp), rnn(inp)]
        rnn.set_weights(layer.get_weights())
    got = run(outs, {inp: x})
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[2], got[3], rtol=1e-6, atol=1e-7)
    kernel, recurrent, bias = pairs[1][0].get_weights()
    np.testing.assert_allclose(got[3], np_simple(x[:, ::-1], kernel, recurrent, bias)[1],
                               rtol=1e-5,
                               atol=1e-6)


def test_stacked_cells_and_a_custom_cell():
    class MinimalRNNCell(L.Layer):   # Keras's documentation example
        def __init__(self, units, **kwargs):
            self.units = units
            self.state_size = units
            super().__init__(**kwargs)

        def build(self, input_shape):
            self.kernel = self.add_weight("kernel", (int(input_shape[-1]), self.units))
            self.recurrent_kernel = self.add_weight("recurrent_kernel",
                                                    (self.units, self.units))

        def call(self, inputs, states):
            out = tf.matmul(inputs, self.kernel) + tf.matmul(states[0], self.recurrent_kernel)
            return out, [out]

    x = rand(2, 4, 3)
    inp = L.Input(shape=(None, 3))
    stacked = L.RNN([L.SimpleRNNCell(5), L.LSTMCell(2)], return_state=True)
    custom = L.RNN(MinimalRNNCell(2), return_sequences=True)
    ys, yc = stacked(inp), custom(inp)
    assert len(ys) == 4 and yc.shape.as_list() == [None, None, 2]
    got_s, got_c = run([ys, yc], {inp: x})
    k1, r1, b1, k2, r2, b2 = stacked.get_weights()
    seq1, h1 = np_simple(x, k1, r1, b1)
    _, h2, c2 = np_lstm(seq1, k2, r2, b2)
    for got, want in zip(got_s, [h2, h1, h2, c2]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    w, u = custom.get_weights()
    h, want = np.zeros((2, 2), np.float32), []
    for t in range(4):
        h = x[:, t] @ w + h @ u
        want.append(h)
    np.testing.assert_allclose(got_c, np.stack(want, 1), rtol=1e-5, atol=1e-6)


def test_masking_skips_steps_in_lstm_and_bidirectional():
    x = rand(3, 6, 4)
    mask = np.ones((3, 6), bool)
    mask[0, 4:] = False           # trailing padding
    mask[1, 1] = mask[1, 3] = False   # gaps
    mask[2, :2] = False           # leading padding
    x[~mask] = 0.0
    inp = L.Input(shape=(6, 4))
    masked = L.Masking(0.0)(inp)
    lstm = L.LSTM(3, return_sequences=True, return_state=True)
    seq, h, c = lstm(masked)
    assert seq._keras_mask is not None and h._keras_mask is None
    bi = L.Bidirectional(L.SimpleRNN(2), merge_mode="concat")
    y_bi = bi(masked)
    mask_got, *got = run([masked._keras_mask, seq, h, c, y_bi], {inp: x})
    np.testing.assert_array_equal(mask_got, mask)
    kernel, recurrent, bias = lstm.get_weights()
    for g, w in zip(got[:3], np_lstm(x, kernel, recurrent, bias, mask=mask)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    kf, rf, bf, kb, rb, bb = bi.get_weights()
    fwd = np_simple(x, kf, rf, bf, mask)[1]
    bwd = np_simple(x[:, ::-1], kb, rb, bb, mask[:, ::-1])[1]
    np.testing.assert_allclose(got[3], np.concatenate([fwd, bwd], 1), rtol=1e-5, atol=1e-6)


def test_embedding_mask_zero_feeds_the_rnn():
    ids = np.array([[3, 1, 4, 0, 0], [2, 0, 5, 0, 0]], np.int32)
    inp = L.Input(shape=(5,), dtype="int32")
    emb = L.Embedding(6, 3, mask_zero=True)
    e = emb(inp)
    layer = L.RNN(L.SimpleRNNCell(4), return_sequences=True)
    y = L.Dense(2)(layer(e))
    assert y._keras_mask is not None        # Dense passes the mask on, as Keras's
    got_e, got = run([e, layer.output], {inp: ids})
    kernel, recurrent, bias = layer.get_weights()
    np.testing.assert_allclose(got, np_simple(got_e, kernel, recurrent, bias, ids != 0)[0],
                               rtol=1e-5,
                               atol=1e-6)


def test_sequential_mask_matches_unpadded_and_merges_and_masks():
    model = keras.Sequential([L.Embedding(10, 4, mask_zero=True, input_shape=(None,)),
                              L.Dropout(0.5), L.LSTM(3)])
    padded = model.predict(np.array([[1, 2, 0, 0, 0], [3, 0, 0, 0, 0]]))
    np.testing.assert_allclose(padded[0], model.predict(np.array([[1, 2]]))[0], rtol=1e-6)
    np.testing.assert_allclose(padded[1], model.predict(np.array([[3]]))[0], rtol=1e-6)
    a, b = L.Input(shape=(4, 2)), L.Input(shape=(4, 3))
    ma, mb = L.Masking()(a), L.Masking(1.0)(b)
    masks = [L.Concatenate()([ma, b])._keras_mask, L.Add()([ma, ma])._keras_mask,
             L.Maximum()([ma, L.Dense(2)(mb)])._keras_mask]
    assert L.Dot(axes=2)([ma, ma])._keras_mask is None
    assert L.Dense(2)(a, mask=ma._keras_mask)._keras_mask is ma._keras_mask   # given by hand
    xa, xb = np.ones((1, 4, 2), np.float32), np.zeros((1, 4, 3), np.float32)
    xa[0, 1] = 0.0
    xb[0, 3] = 1.0
    got = run(masks, {a: xa, b: xb})
    np.testing.assert_array_equal(got[0], [[True, False, True, True]])
    np.testing.assert_array_equal(got[1], [[True, False, True, True]])
    np.testing.assert_array_equal(got[2], [[True, False, True, False]])


def test_initial_state_and_a_seq2seq_model_trains():
    enc_in, dec_in = L.Input(shape=(4, 3)), L.Input(shape=(5, 2))
    _, h, c = L.LSTM(6, return_state=True)(enc_in)
    dec = L.LSTM(6, return_sequences=True)
    seq = dec(dec_in, initial_state=[h, c])
    out = L.TimeDistributed(L.Dense(1))(seq)
    model = keras.Model([enc_in, dec_in], out)
    assert len(model.trainable_weights) == 8    # the encoder is found through the states
    xe, xd = rand(3, 4, 3, seed=1), rand(3, 5, 2, seed=2)
    he, ce = run([h, c], {enc_in: xe})
    kernel, recurrent, bias = dec.get_weights()
    want = np_lstm(xd, kernel, recurrent, bias, h=he, c=ce)[0]
    np.testing.assert_allclose(run(seq, {enc_in: xe, dec_in: xd}), want, rtol=1e-5, atol=1e-6)
    model.compile(keras.optimizers.Adam(0.05), "mse")
    target = rand(3, 5, 1, seed=3)
    before = model.evaluate([xe, xd], target, verbose=0)
    model.fit([xe, xd], target, epochs=40, verbose=0)
    assert model.evaluate([xe, xd], target, verbose=0) < 0.7 * before
    clone = keras.models.clone_model(model)   # its own weights, in the same graph
    assert len(clone.weights) == 8 and not set(map(id, clone.weights)) & set(map(id,
                                                                             model.weights))
    assert clone.predict([xe, xd]).shape == (3, 5, 1)


def test_model_of_new_layers_trains_and_saves(tmp_path):
    rng = np.random.RandomState(0)
    x = rng.randn(64, 6, 4).astype(np.float32)
    x[:, 4:][rng.rand(64) < 0.5] = 0.0
    y = (x.sum(axis=(1, 2)) > 0).astype(np.float32)[:, None]
    inp = L.Input(shape=(6, 4))
    m = L.Masking()(inp)
    seq = L.RNN(L.GRUCell(8), return_sequences=True)(m)
    att = L.Attention(use_scale=True)([seq, seq])
    pooled = L.AveragePooling1D(2)(L.Minimum()([att, seq]))
    local = L.LocallyConnected1D(2, 2)(pooled)
    out = L.Dense(1, activation="sigmoid")(L.Flatten()(local))
    model = keras.Model(inp, out)
    model.compile(keras.optimizers.Adam(0.02), "binary_crossentropy")
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    after = model.evaluate(x, y, verbose=0)
    assert after < 0.8 * before
    path = os.path.join(str(tmp_path), "m.h5")
    model.save(path)
    want = model.predict(x)
    keras.backend.clear_session()
    tf.reset_default_graph()
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x), want, rtol=1e-5, atol=1e-6)


# ---- utils, backend, activations ---------------------------------------------------------------


def test_normalize_exponential_and_image_data_format():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(keras.utils.normalize(x), [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_allclose(keras.utils.normalize(x, axis=0, order=1),
                               [[1.0, 1.0], [0.0, 0.0]])
    assert keras.backend.image_data_format() == "channels_last"
    t = tf.constant([0.0, 1.0, -2.0])
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(keras.activations.get("exponential")(t)),
                                   np.exp([0.0, 1.0, -2.0]), rtol=1e-6)


def test_custom_object_scope_reaches_load_model(tmp_path):
    class Doubler(L.Layer):
        def call(self, inputs):
            return inputs * 2.0

    def twice(t):
        return t * 2.0

    inp = L.Input(shape=(3,))
    model = keras.Model(inp, Doubler()(L.Dense(2)(inp)))
    path = os.path.join(str(tmp_path), "c.h5")
    model.save(path)
    x = rand(2, 3)
    want = model.predict(x)
    with pytest.raises(ValueError, match="custom_objects"):
        keras.models.load_model(path)
    with keras.utils.custom_object_scope({"Doubler": Doubler, "twice": twice}):
        loaded = keras.models.load_model(path)
        assert keras.activations.get("twice") is twice
    np.testing.assert_allclose(loaded.predict(x), want, rtol=1e-6)
    assert "Doubler" not in keras.utils.get_custom_objects()
    with pytest.raises(ValueError, match="unknown activation"):
        keras.activations.get("twice")


# ---- preprocessing.text ------------------------------------------------------------------------


def test_tokenizer_against_hand_counts():
    text = keras.preprocessing.text
    texts = ["The cat sat on the mat.", "The dog ate my homework!", "the cat"]
    tok = text.Tokenizer(num_words=5, oov_token="<unk>")
    tok.fit_on_texts(texts)
    # counts: the 4, cat 2, then sat on mat dog ate my homework (1 each, in order seen)
    assert tok.word_index == {"<unk>": 1, "the": 2, "cat": 3, "sat": 4, "on": 5, "mat": 6,
                              "dog": 7, "ate": 8, "my": 9, "homework": 10}
    assert tok.index_word[3] == "cat" and tok.word_counts["the"] == 4
    assert tok.word_docs["the"] == 3 and tok.document_count == 3
    # numbers >= num_words (5) become the oov token's 1
    assert tok.texts_to_sequences(["the cat sat on a mat"]) == [[2, 3, 4, 1, 1, 1]]
    assert tok.sequences_to_texts([[2, 3, 9]]) == ["the cat <unk>"]
    seqs = [[2, 3, 2, 7], []]
    np.testing.assert_array_equal(tok.sequences_to_matrix(seqs, "binary"),
                                  [[0, 0, 1, 1, 0], [0] * 5])
    np.testing.assert_array_equal(tok.sequences_to_matrix(seqs, "count"),
                                  [[0, 0, 2, 1, 0], [0] * 5])
    np.testing.assert_allclose(tok.sequences_to_matrix(seqs, "freq")[0], [0, 0, 0.5, 0.25, 0])
    tfidf = tok.sequences_to_matrix(seqs, "tfidf")[0]
    # index_docs: "the" (2) in 3 texts, "cat" (3) in 2
    np.testing.assert_allclose(tfidf, [0, 0, (1 + np.log(2)) * np.log(1 + 3 / 4),
                                       np.log(1 + 3 / 3), 0])
    np.testing.assert_array_equal(tok.texts_to_matrix(["cat cat dog"], "count"),
                                  [[0, 1, 0, 2, 0]])
    plain = text.Tokenizer()
    plain.fit_on_texts(texts)
    assert plain.texts_to_sequences(["The zebra ate"]) == [[1, 7]]
    assert plain.sequences_to_matrix([[1]]).shape == (1, 10)
    chars = text.Tokenizer(char_level=True)
    chars.fit_on_texts(["abca"])
    assert chars.word_index == {"a": 1, "b": 2, "c": 3}
    restored = text.tokenizer_from_json(tok.to_json())
    assert restored.texts_to_sequences(texts) == tok.texts_to_sequences(texts)
    with pytest.raises(ValueError, match="fit on some"):
        text.Tokenizer().sequences_to_matrix([[1]])


def test_text_functions():
    text = keras.preprocessing.text
    assert text.text_to_word_sequence("Hello, World!  a-b") == ["hello", "world", "a", "b"]
    assert text.text_to_word_sequence("A;B", filters="", lower=False, split=";") == ["A", "B"]
    import hashlib
    want = [int(hashlib.md5(w.encode()).hexdigest(), 16) % 9 + 1 for w in ["the", "cat"]]
    assert text.hashing_trick("The cat", 10, hash_function="md5") == want
    got = text.one_hot("a b a", 7)
    assert len(got) == 3 and got[0] == got[2] and all(1 <= i < 7 for i in got)


# ---- preprocessing.image -----------------------------------------------------------------------


def test_image_generator_flips_shifts_and_rescale():
    image = keras.preprocessing.image
    x = np.arange(2 * 4 * 5 * 3, dtype=np.float32).reshape(2, 4, 5, 3)
    gen = image.ImageDataGenerator(rescale=0.5)
    params = dict(gen.get_random_transform(x[0].shape), flip_horizontal=True,
                  flip_vertical=True)
    np.testing.assert_array_equal(gen.apply_transform(x[0], params), x[0, ::-1, ::-1])
    # a shift of 1 row and -2 columns: out[i, j] = x[i + 1, j - 2], the edges repeated
    rows = np.clip(np.arange(4) + 1, 0, 3)
    cols = np.clip(np.arange(5) - 2, 0, 4)
    np.testing.assert_array_equal(gen.apply_transform(x[0], {"tx": 1, "ty": -2}),
                                  x[0][rows][:, cols])
    # half a pixel: the mean of the two neighbours
    half = gen.apply_transform(x[0], {"tx": 0.5})
    np.testing.assert_allclose(half[:3], (x[0, :3] + x[0, 1:]) / 2)
    np.testing.assert_allclose(half[3], x[0, 3])
    np.testing.assert_array_equal(gen.standardize(x[0].copy()), x[0] * 0.5)
    shifted = image.ImageDataGenerator(width_shift_range=2, height_shift_range=0.5)
    np.random.seed(0)
    for _ in range(5):
        p = shifted.get_random_transform(x[0].shape)
        assert p["ty"] in (-1, 0, 1) and -2 <= p["tx"] <= 2
    with pytest.raises(ValueError, match="zoom_range"):
        image.ImageDataGenerator(zoom_range=[1, 2, 3])


def test_image_rotation_zoom_shear_and_fill_modes():
    """Keras 1.15's affine transform about its centre (h / 2 + 0.5, w / 2 + 0.5), resampled
    as scipy.ndimage.affine_transform (input = matrix @ output + offset): a 90-degree
    rotation, a zoom (bilinear between pixels), each fill mode past the edge, and the
    generator drawing rotations, shears and zooms reproducibly."""
    image = keras.preprocessing.image
    x = (10 * np.arange(5)[:, None] + np.arange(5)[None, :]).astype(np.float32)[..., None]
    rot = image.apply_affine_transform(x, theta=90)             # input (6 - c, r), clamped
    rows, cols = np.meshgrid(np.arange(5), np.arange(5), indexing="ij")
    np.testing.assert_allclose(rot[..., 0], x[np.minimum(6 - cols, 4), rows, 0], atol=1e-4)
    zoom = image.apply_affine_transform(x, zx=0.5, zy=0.5)    # input = 0.5 (out - 3) + 3
    np.testing.assert_allclose(zoom[..., 0], 10 * (0.5 * rows + 1.5) + (0.5 * cols + 1.5),
                               atol=1e-4)
    ramp = np.arange(5, dtype=np.float32).reshape(5, 1, 1)
    want = {"constant": [2, 3, 4, -1, -1], "nearest": [2, 3, 4, 4, 4],
            "reflect": [2, 3, 4, 4, 3], "wrap": [2, 3, 4, 1, 2]}
    for mode, values in want.items():
        got = image.apply_affine_transform(ramp, tx=2, fill_mode=mode, cval=-1)
        np.testing.assert_allclose(got.ravel(), values, err_msg=mode)
    nearest = image.apply_affine_transform(ramp, tx=0.6, order=0)
    np.testing.assert_array_equal(nearest.ravel(), [1, 2, 3, 4, 4])
    batch = np.random.RandomState(0).rand(6, 8, 8, 3).astype(np.float32)
    gen = image.ImageDataGenerator(rotation_range=30, shear_range=10, zoom_range=0.2,
                                   fill_mode="constant", cval=0.0)
    p = gen.get_random_transform(batch[0].shape, seed=3)
    assert p["theta"] != 0 and p["shear"] != 0 and 0.8 <= p["zx"] <= 1.2 and p["zy"] != p["zx"]
    a = next(iter(gen.flow(batch, np.arange(6), batch_size=3, seed=1)))
    b = next(iter(gen.flow(batch, np.arange(6), batch_size=3, seed=1)))
    assert a[0].shape == (3, 8, 8, 3) and a[0].dtype == np.float32
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.allclose(a[0], batch[a[1]])              # transformed
    with pytest.raises(ValueError, match="fill_mode"):
        image.ImageDataGenerator(fill_mode="mirror")


def test_image_generator_featurewise_fit_and_flow_batches():
    image = keras.preprocessing.image
    x = rand(10, 4, 4, 3) * 3 + 1
    y = np.arange(10)
    gen = image.ImageDataGenerator(featurewise_center=True, featurewise_std_normalization=True)
    gen.fit(x)
    np.testing.assert_allclose(gen.mean.ravel(), x.mean(axis=(0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(gen.std.ravel(), x.std(axis=(0, 1, 2)), rtol=1e-4)
    it = gen.flow(x, y, batch_size=4, shuffle=False)
    assert len(it) == 3
    bx, by = it[2]
    np.testing.assert_array_equal(by, [8, 9])
    np.testing.assert_allclose(bx, (x[8:] - gen.mean) / (gen.std + 1e-6), rtol=1e-5,
                               atol=1e-5)
    flipped = image.ImageDataGenerator(horizontal_flip=True)
    it = flipped.flow(x, y, batch_size=5, shuffle=True, seed=3)
    seen = []
    for i in range(len(it)):
        bx, by = it[i]
        for img, label in zip(bx, by):
            assert np.array_equal(img, x[label]) or np.array_equal(img, x[label][:, ::-1])
        seen.extend(by.tolist())
    assert sorted(seen) == list(range(10))
    assert next(it)[0].shape == (5, 4, 4, 3)
    with pytest.raises(ValueError, match="same length"):
        gen.flow(x, y[:3])


def test_fit_on_an_image_flow():
    rng = np.random.RandomState(0)
    x = rng.rand(64, 6, 6, 1).astype(np.float32) * 255
    y = (x[:, :, :, 0].mean(axis=(1, 2)) > 127.5).astype(np.float32)
    x[y == 1] += 40.0
    gen = keras.preprocessing.image.ImageDataGenerator(rescale=1 / 255.0, horizontal_flip=True,
                                                       vertical_flip=True)
    model = keras.Sequential([L.Flatten(input_shape=(6, 6, 1)),
                              L.Dense(1, activation="sigmoid")])
    model.compile(keras.optimizers.Adam(0.05), "binary_crossentropy")
    before = model.evaluate(x / 255.0, y, verbose=0)
    model.fit_generator(gen.flow(x, y, batch_size=16, seed=1), epochs=30, verbose=0)
    model.fit(gen.flow(x, y, batch_size=16), epochs=2, verbose=0)
    assert model.evaluate(x / 255.0, y, verbose=0) < 0.8 * before


def test_dense_features_put_feature_columns_under_a_keras_model():
    fc = tf.feature_column
    rng = np.random.RandomState(0)
    kinds = rng.choice([b"x", b"y", b"z"], (256, 1))
    ages = rng.rand(256, 1).astype(np.float32)
    y = (kinds[:, 0] == b"x").astype(np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        kind = fc.categorical_column_with_vocabulary_list("kind", ["x", "y", "z"])
        columns = [fc.numeric_column("age"), fc.embedding_column(kind, 2)]
        inputs = {"age": tf.keras.Input(shape=(1,), name="age"),
                  "kind": tf.keras.Input(shape=(1,), name="kind", dtype=tf.string)}
        features = tf.keras.layers.DenseFeatures(columns)
        hidden = features(inputs)
        assert hidden.shape.as_list() == [None, 3]   # age (1) + the embedding (2)
        out = tf.keras.layers.Dense(1, activation="sigmoid")(hidden)
        model = tf.keras.Model(inputs=inputs, outputs=out)
        model.compile(tf.keras.optimizers.Adam(0.05), "binary_crossentropy")
        assert any("embedding_weights" in w.name for w in features.trainable_weights)
        before = tf.keras.backend.get_value(features.trainable_weights[0])
        history = model.fit({"age": ages, "kind": kinds}, y, epochs=20, batch_size=64,
                            verbose=0)
        after = tf.keras.backend.get_value(features.trainable_weights[0])
        assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
        assert not np.allclose(before, after)   # the embedding trained
        p = model.predict({"age": ages[:4], "kind": np.array([[b"x"], [b"y"], [b"x"], [b"z"]])})
        assert p[0, 0] > 0.5 > p[1, 0] and p[2, 0] > 0.5 > p[3, 0]
        with pytest.raises(ValueError, match="dict of feature name"):
            features(inputs["age"])
