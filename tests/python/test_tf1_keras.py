"""tf.keras in TF1 graph mode (shardflow/keras/): layers, Sequential and functional models,
compile/fit/evaluate/predict, weights, callbacks, utils and datasets."""

import os
import warnings

import numpy as np
import pytest

from shardflow import keras


@pytest.fixture(autouse=True)
def fresh_graph():
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


def _blobs(n=600, d=8, classes=3, seed=0):
    """A linearly separable classification problem."""
    rng = np.random.RandomState(seed)
    x = rng.randn(n, d).astype(np.float32)
    y = np.argmax(x @ rng.randn(d, classes), axis=1)
    return x, y


def _mlp(dropout=0.0):
    return keras.Sequential([
        keras.layers.Dense(32, activation="relu", input_shape=(8,)),
        keras.layers.Dropout(dropout),
        keras.layers.Dense(3, activation="softmax"),
    ])


def test_sequential_mlp_learns_with_fit_evaluate_predict():
    x, y = _blobs()
    model = _mlp(dropout=0.1)
    model.compile(optimizer=keras.optimizers.Adam(lr=0.01),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, batch_size=32, epochs=8, verbose=0, validation_split=0.2)
    assert sorted(history.history) == ["acc", "loss", "val_acc", "val_loss"]
    assert len(history.history["loss"]) == 8
    assert history.history["loss"][-1] < history.history["loss"][0]
    loss, acc = model.evaluate(x, y, verbose=0)
    assert acc > 0.93 and loss < 0.3
    assert model.metrics_names == ["loss", "acc"]
    probs = model.predict(x, batch_size=50)
    assert probs.shape == (600, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    assert np.mean(probs.argmax(axis=1) == y) == pytest.approx(acc, abs=1e-6)


def test_sequential_builds_on_first_fit_with_onehot_labels_and_sgd():
    x, y = _blobs(seed=1)
    model = keras.Sequential()
    model.add(keras.layers.Dense(16, activation="tanh"))
    model.add(keras.layers.Dense(3, activation="softmax"))
    assert not model.built
    model.compile(keras.optimizers.SGD(lr=0.5, momentum=0.5), "categorical_crossentropy",
                  metrics=["acc"])
    model.fit(x, keras.utils.to_categorical(y, 3), epochs=10, verbose=0)
    assert model.built and model.count_params() == 8 * 16 + 16 + 16 * 3 + 3
    assert model.evaluate(x, keras.utils.to_categorical(y), verbose=0)[1] > 0.9


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "rmsprop", "adagrad"])
def test_optimizer_names_and_regression_losses(optimizer):
    rng = np.random.RandomState(2)
    x = rng.randn(256, 4).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 0.5
    model = keras.Sequential([keras.layers.Dense(1, input_dim=4)])
    model.compile(optimizer, loss="mse", metrics=["mae"])
    before = model.evaluate(x, y, verbose=0)[0]
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    assert "mean_absolute_error" in history.history       # TF 1.15: the function's name
    assert model.evaluate(x, y, verbose=0)[0] < before


def test_functional_model_with_concatenate():
    rng = np.random.RandomState(3)
    xa = rng.randn(400, 4).astype(np.float32)
    xb = rng.randn(400, 6).astype(np.float32)
    y = ((xa[:, 0] + xb[:, 1] - xb[:, 2]) > 0).astype(np.float32)
    a = keras.layers.Input(shape=(4,))
    b = keras.layers.Input(shape=(6,))
    h = keras.layers.concatenate([keras.layers.Dense(8, activation="relu")(a), b])
    assert h.shape.as_list() == [None, 14]
    out = keras.layers.Dense(1, activation="sigmoid")(h)
    model = keras.Model(inputs=[a, b], outputs=out)
    assert [type(layer).__name__ for layer in model.layers] == \
        ["InputLayer", "InputLayer", "Dense", "Concatenate", "Dense"]
    model.compile(keras.optimizers.Adam(learning_rate=0.05), "binary_crossentropy",
                  metrics=["accuracy"])
    model.fit([xa, xb], y, epochs=10, batch_size=32, verbose=0, validation_data=([xa, xb], y))
    loss, acc = model.evaluate([xa, xb], y, verbose=0)
    assert acc > 0.9
    assert model.predict([xa, xb]).shape == (400, 1)


def test_layers_own_their_weights_and_share_them_across_calls():
    x = keras.layers.Input(shape=(5,))
    dense = keras.layers.Dense(3, name="shared")
    y1, y2 = dense(x), dense(keras.layers.Input(shape=(5,)))
    assert [v.op.name for v in dense.weights] == ["shared/kernel", "shared/bias"]
    assert dense.trainable_weights == dense.weights
    kernel, bias = dense.get_weights()
    assert kernel.shape == (5, 3) and not bias.any()
    dense.set_weights([np.ones((5, 3)), np.arange(3)])
    sess = keras.backend.get_session()
    ones = np.ones((2, 5), np.float32)
    np.testing.assert_allclose(sess.run(y1, {x: ones}), [[5, 6, 7]] * 2)
    dense.trainable = False
    assert dense.trainable_weights == [] and len(dense.non_trainable_weights) == 2
    assert y2.shape.as_list() == [None, 3]


def test_save_weights_and_load_weights_round_trip(tmp_path):
    x, y = _blobs(n=200)
    model = _mlp()
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x, y, epochs=2, verbose=0)
    expected = model.predict(x)
    path = str(tmp_path / "weights" / "mlp.ckpt")
    model.save_weights(path)

    keras.backend.clear_session()
    fresh = _mlp()
    assert not np.allclose(fresh.predict(x), expected)
    fresh.load_weights(path)
    np.testing.assert_allclose(fresh.predict(x), expected, rtol=1e-6)
    other = keras.Sequential([keras.layers.Dense(4, input_shape=(8,))])
    with pytest.raises(ValueError, match="holds 4 weights; the model has 2"):
        other.load_weights(path)


def test_dropout_is_active_in_fit_only():
    x = np.random.RandomState(4).randn(64, 8).astype(np.float32)
    model = _mlp(dropout=0.5)
    model.compile("sgd", "sparse_categorical_crossentropy")
    first, second = model.predict(x), model.predict(x)
    np.testing.assert_array_equal(first, second)
    k1, b1, k2, b2 = model.get_weights()
    logits = np.maximum(x @ k1 + b1, 0) @ k2 + b2
    softmax = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(first, softmax / softmax.sum(1, keepdims=True), rtol=1e-5)
    # Fed the training phase, the dropout layer zeroes about half of its inputs.
    dropout = model.layers[1]
    sess = keras.backend.get_session()
    dropped = sess.run(dropout.output, {model.input: x, keras.backend.learning_phase(): True})
    kept = sess.run(dropout.output, {model.input: x})
    live = kept != 0
    assert 0.3 < np.mean(dropped[live] == 0) < 0.7
    np.testing.assert_allclose(dropped[dropped != 0], 2 * kept[dropped != 0], rtol=1e-5)


def test_to_categorical():
    out = keras.utils.to_categorical([0, 2, 1, 2])
    np.testing.assert_array_equal(out, np.eye(3)[[0, 2, 1, 2]])
    assert out.dtype == np.float32
    assert keras.utils.to_categorical(np.array([[1], [3]]), num_classes=5).shape == (2, 5)
    with pytest.raises(ValueError):
        keras.utils.to_categorical([4], num_classes=3)


def test_early_stopping_stops_and_callbacks_see_the_epochs():
    x, y = _blobs(n=128)
    model = _mlp()
    model.compile(keras.optimizers.SGD(lr=1e-9), "sparse_categorical_crossentropy")
    seen = []
    stop = keras.callbacks.EarlyStopping(monitor="loss", min_delta=0.1, patience=2)
    record = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.append((epoch, sorted(logs))))
    history = model.fit(x, y, epochs=20, verbose=0, callbacks=[stop, record])
    assert len(history.history["loss"]) == 3 and history.epoch == [0, 1, 2]
    assert stop.stopped_epoch == 2 and model.stop_training
    assert seen == [(0, ["loss"]), (1, ["loss"]), (2, ["loss"])]


def test_summary_lists_layers_and_parameter_counts():
    model = _mlp()
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    for name, kind, params in (("dense", "Dense", 288), ("dropout", "Dropout", 0),
                               ("dense_1", "Dense", 99)):
        row = next(line for line in lines if line.startswith("%s (%s)" % (name, kind)))
        assert row.split()[-1] == str(params)
    assert "Total params: 387" in text and "Trainable params: 387" in text
    assert model.count_params() == 387

    a = keras.layers.Input(shape=(4,), name="a")
    out = keras.layers.Dense(2, name="head")(a)
    lines = []
    keras.Model(a, out).summary(print_fn=lines.append)
    head = next(line for line in lines if line.startswith("head (Dense)"))
    assert "(None, 2)" in head and "10" in head and head.endswith("a")


def test_conv_pool_batchnorm_model_and_its_moving_averages():
    rng = np.random.RandomState(5)
    x = rng.rand(64, 8, 8, 1).astype(np.float32)
    y = (x[:, :4].mean(axis=(1, 2, 3)) > x[:, 4:].mean(axis=(1, 2, 3))).astype(np.int64)
    model = keras.Sequential([
        keras.layers.Conv2D(4, 3, padding="same", activation="relu", input_shape=(8, 8, 1)),
        keras.layers.BatchNormalization(),
        keras.layers.MaxPooling2D(),
        keras.layers.AveragePooling2D(pool_size=(2, 2)),
        keras.layers.Flatten(),
        keras.layers.Dense(2, activation="softmax"),
    ])
    assert model.layers[2].output_shape == (None, 4, 4, 4)
    assert model.count_params() == (9 * 4 + 4) + 4 * 4 + (16 * 2 + 2)
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    bn = model.layers[1]
    assert len(bn.trainable_weights) == 2 and len(bn.non_trainable_weights) == 2
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    moving_mean = keras.backend.get_value(bn.moving_mean)
    assert np.abs(moving_mean).sum() > 0      # fit ran the updates
    keras.backend.get_session()
    model.predict(x)
    np.testing.assert_array_equal(keras.backend.get_value(bn.moving_mean), moving_mean)


def test_other_layers():
    ids = keras.layers.Input(shape=(5,), dtype="int32")
    emb = keras.layers.Embedding(10, 4)(ids)
    assert emb.shape.as_list() == [None, 5, 4]
    conv = keras.layers.Conv1D(3, 2, activation="relu")(emb)
    assert conv.shape.as_list() == [None, 4, 3]
    seq = keras.layers.LSTM(6, return_sequences=True)(emb)
    last = keras.layers.GRU(3)(seq)
    rnn = keras.layers.SimpleRNN(2)(emb)
    flat = keras.layers.Reshape((-1,))(emb)
    doubled = keras.layers.Lambda(lambda t: t * 2.0)(flat)
    summed = keras.layers.add([flat, doubled])
    act = keras.layers.Activation("sigmoid")(summed)
    model = keras.Model(ids, [seq, last, rnn, act])
    assert len(model.get_layer("lstm").weights) == 3        # kernel, recurrent_kernel, bias
    data = np.random.RandomState(6).randint(0, 10, size=(3, 5))
    s, l_, r, a = model.predict(data)
    assert s.shape == (3, 5, 6) and l_.shape == (3, 3) and r.shape == (3, 2)
    table = model.get_layer("embedding").get_weights()[0]
    np.testing.assert_allclose(a, 1 / (1 + np.exp(-3 * table[data].reshape(3, 20))),
                               rtol=1e-5)


def test_backend_session_and_learning_phase():
    K = keras.backend
    assert K.floatx() == "float32" and K.epsilon() == 1e-7
    phase = K.learning_phase()
    assert phase is K.learning_phase()
    sess = K.get_session()
    assert sess is K.get_session()
    assert sess.run(phase) == False  # noqa: E712 (a NumPy bool)
    dense = keras.layers.Dense(2, kernel_initializer="ones", input_dim=3)
    dense(keras.layers.Input(shape=(3,)))
    np.testing.assert_array_equal(K.get_value(dense.kernel), np.ones((3, 2)))   # initialised
    graph = sess.graph
    K.clear_session()
    assert K.get_session().graph is not graph
    assert keras.layers.Dense(1).name == "dense"
    K.set_learning_phase(1)
    x = keras.layers.Input(shape=(100,))
    drop = keras.layers.Dropout(0.5)(x)
    out = K.get_session().run(drop, {x: np.ones((1, 100), np.float32)})
    assert (out == 0).any()


def test_losses_metrics_activations_initializers_regularizers():
    K = keras.backend
    y_true = np.array([[0, 1], [1, 0]], np.float32)
    probs = np.array([[0.2, 0.8], [0.6, 0.4]], np.float32)
    sess = K.get_session()
    p = K.placeholder(shape=(None, 2))
    ce = sess.run(keras.losses.categorical_crossentropy(y_true, p), {p: probs})
    np.testing.assert_allclose(ce, -np.log([0.8, 0.6]), rtol=1e-5)
    acc = sess.run(keras.metrics.categorical_accuracy(y_true, p), {p: probs})
    np.testing.assert_array_equal(acc, [1, 1])
    assert keras.losses.get("mae") is keras.losses.mean_absolute_error
    assert keras.activations.get("linear")(p) is p
    with pytest.raises(ValueError, match="unknown activation"):
        keras.activations.get("swishy")
    dense = keras.layers.Dense(2, kernel_initializer=keras.initializers.Constant(0.5),
                               kernel_regularizer=keras.regularizers.l2(0.1))
    dense(keras.layers.Input(shape=(3,)))
    sess = K.get_session()
    np.testing.assert_allclose(sess.run(dense.losses[0]), 0.1 * 6 * 0.25, rtol=1e-6)
    for name in ("he_normal", "zeros", "ones", "glorot_uniform"):
        assert keras.initializers.get(name) is not None
    assert keras.initializers.RandomNormal(stddev=0.01) is not None


FASHION = "/usr/share/datasets/fashion-mnist"


@pytest.mark.skipif(not os.path.isdir(FASHION), reason="dataset-fashion-mnist not installed")
def test_fashion_mnist_load_data_shapes():
    (x_train, y_train), (x_test, y_test) = keras.datasets.fashion_mnist.load_data()
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    assert x_train.dtype == np.uint8 and y_train.dtype == np.uint8
    assert y_train.shape == (60000,) and set(np.unique(y_test)) == set(range(10))
    assert x_train.max() == 255
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (x_m, _), _ = keras.datasets.mnist.load_data()
    assert any("Fashion-MNIST" in str(w.message) for w in caught)
    assert x_m.shape == (60000, 28, 28)
