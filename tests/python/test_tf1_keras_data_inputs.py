"""keras.Model.fit/evaluate/predict on tf.data.Datasets and Python generators, as TF 1.15's
Keras (shardflow/keras/data_adapter.py): the same updates as the same batches given as arrays."""
import numpy as np
import pytest

import shardflow as tf
from shardflow import keras

X = np.random.RandomState(0).rand(60, 4).astype(np.float32)
Y = (X.sum(axis=1) > 2).astype(np.int32)


def model(seed=1):
    tf.reset_default_graph()
    keras.backend.clear_session()
    inp = keras.layers.Input(shape=(4,), name="features")
    h = keras.layers.Dense(8, activation="relu",
                           kernel_initializer=keras.initializers.glorot_uniform(seed))(inp)
    out = keras.layers.Dense(2, activation="softmax",
                             kernel_initializer=keras.initializers.glorot_uniform(seed + 1))(h)
    m = keras.Model(inp, out)
    m.compile(keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy",
              metrics=["accuracy"])
    return m


class CountBatches(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.per_epoch = []

    def on_epoch_begin(self, epoch, logs=None):
        self.per_epoch.append(0)

    def on_train_batch_end(self, batch, logs=None):
        self.per_epoch[-1] += 1


def test_dataset_training_equals_the_same_batches_as_arrays():
    arrays = model()
    arrays.fit(X, Y, batch_size=10, epochs=2, shuffle=False, verbose=0)
    want = arrays.get_weights()
    streamed = model()
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(10).repeat()
    counter = CountBatches()
    history = streamed.fit(ds, epochs=2, steps_per_epoch=6, verbose=0, callbacks=[counter])
    assert counter.per_epoch == [6, 6]
    assert sorted(history.history) == ["acc", "loss"]
    for got, w in zip(streamed.get_weights(), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    # A finite dataset without steps: each epoch is the whole dataset, restarted.
    finite = tf.data.Dataset.from_tensor_slices(({"features": X}, Y)).batch(25)
    counter = CountBatches()
    streamed.fit(finite, epochs=3, verbose=0, callbacks=[counter],
                 validation_data=tf.data.Dataset.from_tensor_slices((X, Y)).batch(30))
    assert counter.per_epoch == [3, 3, 3]
    assert "val_acc" in streamed.history.history
    np.testing.assert_allclose(
        streamed.evaluate(tf.data.Dataset.from_tensor_slices((X, Y)).batch(7), verbose=0),
        streamed.evaluate(X, Y, verbose=0), rtol=1e-5)
    np.testing.assert_allclose(
        streamed.predict(tf.data.Dataset.from_tensor_slices(X).batch(16)),
        streamed.predict(X), rtol=1e-6)


def test_generators_need_steps_and_may_end_early():
    m = model()

    def batches():
        for start in range(0, 60, 10):
            yield X[start:start + 10], Y[start:start + 10]

    history = m.fit_generator(batches(), steps_per_epoch=3, epochs=2, verbose=0,
                              validation_data=batches(), validation_steps=2)
    assert len(history.history["val_loss"]) == 2
    with pytest.raises(ValueError, match="steps"):
        m.fit(batches(), epochs=1, verbose=0)
    # A generator that ends early: TF 1.15 warns and stops training (not an error).
    gen = batches()
    for _ in range(4):
        next(gen)
    history = m.fit(gen, steps_per_epoch=5, epochs=3, verbose=0)
    assert len(history.history["loss"]) == 1
    loss, acc = m.evaluate_generator(batches(), steps=6)
    np.testing.assert_allclose([loss, acc], m.evaluate(X, Y, verbose=0), rtol=1e-5)
    assert m.predict_generator((X[s:s + 20] for s in range(0, 60, 20)), steps=3).shape == (60, 2)


def test_bad_stream_arguments_are_clear_errors():
    m = model()
    with pytest.raises(ValueError, match="steps_per_epoch is taken with"):
        m.fit(X, Y, steps_per_epoch=3, verbose=0)
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(10)
    with pytest.raises(ValueError, match="y and validation_split are not taken"):
        m.fit(ds, Y, verbose=0)
    with pytest.raises(ValueError, match="tuple"):
        m.fit(iter([{"a": X}]), steps_per_epoch=1, verbose=0)
