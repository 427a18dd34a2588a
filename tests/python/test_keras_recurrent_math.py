"""tf.keras's LSTM, GRU and SimpleRNN compute Keras's arithmetic with Keras's weights
(kernel / recurrent_kernel / bias, gates i f c o and z r h, recurrent_activation hard_sigmoid
by default as TF 1.15), checked against NumPy; dropout and recurrent_dropout act in training
only; the layers' initializers, regularizers and constraints are used (they were ignored)."""
import numpy as np
import pytest

import shardflow as tf

keras = tf.keras
L = keras.layers
K = keras.backend


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    K.clear_session()
    tf.set_random_seed(5)
    yield


def hard_sigmoid(x):
    return np.clip(0.2 * x + 0.5, 0.0, 1.0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_rnn(kind, x, weights, rec=hard_sigmoid, reset_after=False):
    kernel, recurrent = weights[0], weights[1]
    bias = weights[2] if len(weights) > 2 else np.zeros(kernel.shape[1], np.float32)
    u = recurrent.shape[0]
    h = np.zeros((x.shape[0], u), np.float32)
    c = np.zeros_like(h)
    outs = []
    for t in range(x.shape[1]):
        xt = x[:, t]
        if kind == "lstm":
            z = xt @ kernel + h @ recurrent + bias
            i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
            c = rec(f) * c + rec(i) * np.tanh(g)
            h = rec(o) * np.tanh(c)
        elif kind == "gru":
            b_in, b_rec = (bias[0], bias[1]) if reset_after else (bias, np.zeros_like(bias))
            xz, xr, xh = ((xt @ kernel + b_in)[:, k * u:(k + 1) * u] for k in range(3))
            hu = h @ recurrent + b_rec
            z = rec(xz + hu[:, :u])
            r = rec(xr + hu[:, u:2 * u])
            if reset_after:
                hh = np.tanh(xh + r * hu[:, 2 * u:])
            else:
                hh = np.tanh(xh + (r * h) @ recurrent[:, 2 * u:])
            h = z * h + (1 - z) * hh
        else:
            h = np.tanh(xt @ kernel + h @ recurrent + bias)
        outs.append(h)
    return np.stack(outs, 1)


@pytest.mark.parametrize("layer, kind, rec, reset_after", [
    (lambda: L.LSTM(4, return_sequences=True), "lstm", hard_sigmoid, False),
    (lambda: L.LSTM(4, return_sequences=True, recurrent_activation="sigmoid"), "lstm", sigmoid,
     False),
    (lambda: L.GRU(4, return_sequences=True), "gru", hard_sigmoid, False),
    (lambda: L.GRU(4, return_sequences=True, reset_after=True, recurrent_activation="sigmoid"),
     "gru", sigmoid, True),
    (lambda: L.SimpleRNN(4, return_sequences=True), "simple", None, False)])
def test_layers_match_numpy_with_keras_weights(layer, kind, rec, reset_after):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 6)).astype(np.float32)
    rnn = layer()
    inp = L.Input((5, 6))
    model = keras.Model(inp, rnn(inp))
    gates = {"lstm": 4, "gru": 3, "simple": 1}[kind]
    shapes = [w.shape for w in rnn.get_weights()]
    assert shapes[:2] == [(6, 4 * gates), (4, 4 * gates)]
    assert [v.name.split("/")[-1] for v in rnn.weights] == [
        "kernel:0", "recurrent_kernel:0", "bias:0"]
    weights = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in shapes]
    rnn.set_weights(weights)
    got = model.predict(x)
    np.testing.assert_allclose(got, numpy_rnn(kind, x, weights, rec, reset_after), rtol=1e-4,
                               atol=1e-5)


def test_defaults_unit_forget_bias_and_initializers():
    lstm = L.LSTM(3, kernel_initializer="zeros", recurrent_initializer="zeros")
    gru = L.GRU(2, use_bias=False)
    inp = L.Input((4, 2))
    keras.Model(inp, [lstm(inp), gru(inp)])
    kernel, recurrent, bias = lstm.get_weights()
    assert not kernel.any() and not recurrent.any()
    np.testing.assert_array_equal(bias, [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    assert len(gru.get_weights()) == 2
    assert lstm.recurrent_activation is keras.activations.hard_sigmoid


def test_dropout_only_in_training_and_the_masks_hold_over_time():
    x = np.ones((64, 6, 5), np.float32)
    rnn = L.SimpleRNN(8, dropout=0.5, recurrent_dropout=0.5, return_sequences=True,
                      kernel_initializer="ones", recurrent_initializer="zeros")
    inp = L.Input((6, 5))
    out = rnn(inp)
    f = K.function([inp, K.learning_phase()], [out])
    test = f([x, 0])[0]
    train = f([x, 1])[0]
    np.testing.assert_allclose(test, np.tanh(5.0) * np.ones_like(test), rtol=1e-5)
    assert not np.allclose(train, test)
    # recurrent kernel zero: each step sees only x * mask, the same mask at every step
    np.testing.assert_allclose(train[:, 0], train[:, -1], rtol=1e-6)
    # inputs kept with probability 1/2, scaled by 2: the mean of x W stays 5
    pre = np.arctanh(np.clip(train[:, 0], -0.999999, 0.999999))
    assert 3.5 < pre.mean() < 6.5


def test_regularizers_and_constraints_are_used():
    x = np.random.default_rng(1).standard_normal((16, 4, 3)).astype(np.float32)
    y = np.ones((16, 1), np.float32)
    lstm = L.LSTM(2, kernel_regularizer=keras.regularizers.l2(0.1),
                  recurrent_constraint=keras.constraints.max_norm(0.5))
    model = keras.Sequential([lstm, L.Dense(1)])
    model.build((None, 4, 3))
    assert len(model.losses) == 1
    model.compile("sgd", "mse")
    model.fit(x, y, epochs=2, verbose=0)
    recurrent = lstm.get_weights()[1]
    assert np.all(np.linalg.norm(recurrent, axis=0) <= 0.5 + 1e-5)


def test_imdb_style_model_trains():
    rng = np.random.default_rng(2)
    x = rng.integers(1, 50, size=(128, 12))
    y = (x[:, :3].sum(1) > 75).astype(np.float32)
    model = keras.Sequential([L.Embedding(50, 8, input_length=12),
                              L.LSTM(16, dropout=0.2, recurrent_dropout=0.2),
                              L.Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, epochs=8, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
