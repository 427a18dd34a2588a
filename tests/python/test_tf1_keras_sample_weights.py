"""tf.keras sample_weight and class_weight (shardflow/keras/models.py): fit, evaluate,
train_on_batch, test_on_batch, validation data and Sequences weigh each sample's loss as TF
1.15's Keras does, sum(loss * w) / number of samples, with loss functions and loss objects."""

import numpy as np
import pytest

import shardflow as tf

keras = tf.keras


@pytest.fixture(autouse=True)
def fresh_session():
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


def _linear_model(loss, units=1, optimizer=None):
    model = keras.Sequential([keras.layers.Dense(units, input_shape=(2,), use_bias=False)])
    model.compile(optimizer or keras.optimizers.SGD(0.0), loss=loss)
    kernel = np.arange(2 * units, dtype=np.float32).reshape(2, units) / 4.0
    model.set_weights([kernel])
    return model, kernel


def test_evaluate_and_test_on_batch_weigh_each_sample():
    rng = np.random.RandomState(0)
    x = rng.randn(10, 2).astype(np.float32)
    y = rng.randn(10, 1).astype(np.float32)
    w = rng.uniform(0, 2, 10).astype(np.float32)
    model, kernel = _linear_model("mse")
    per_sample = ((x @ kernel - y) ** 2).mean(axis=1)
    weighted = (per_sample * w).sum() / 10
    np.testing.assert_allclose(model.evaluate(x, y, sample_weight=w, batch_size=10, verbose=0),
                               weighted, rtol=1e-5)
    np.testing.assert_allclose(model.test_on_batch(x, y, sample_weight=w), weighted, rtol=1e-5)
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=10, verbose=0),
                               per_sample.mean(), rtol=1e-5)
    # Batches of 4: each batch's weighted mean, combined by batch size as Keras logs them.
    batched = sum((per_sample[s:s + 4] * w[s:s + 4]).sum() for s in (0, 4, 8)) / 10
    np.testing.assert_allclose(model.evaluate(x, y, sample_weight=w, batch_size=4, verbose=0),
                               batched, rtol=1e-5)
    with pytest.raises(ValueError, match="vector of 10 weights"):
        model.evaluate(x, y, sample_weight=np.ones(3), verbose=0)


def test_class_weight_with_a_loss_object_and_sparse_targets():
    rng = np.random.RandomState(1)
    x = rng.randn(12, 2).astype(np.float32)
    y = np.array([0, 1, 2] * 4)
    model, kernel = _linear_model(keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                  units=3)
    logits = x @ kernel
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    per_sample = -logp[np.arange(12), y]
    class_weight = {0: 0.0, 1: 1.0, 2: 3.0}
    want = (per_sample * np.array([class_weight[c] for c in y])).sum() / 12
    # SGD(0): the step changes nothing, so the batch's loss is the weighted loss at `kernel`.
    np.testing.assert_allclose(model.train_on_batch(x, y, class_weight=class_weight), want,
                               rtol=1e-5)
    both = model.train_on_batch(x, y, sample_weight=np.full(12, 0.5), class_weight=class_weight)
    np.testing.assert_allclose(both, want * 0.5, rtol=1e-5)
    with pytest.raises(ValueError, match=r"classes \[2\] exist in the data"):
        model.train_on_batch(x, y, class_weight={0: 1.0, 1: 1.0})


def test_fit_with_weights_learns_what_the_weights_ask_for():
    # Two clusters with contradicting labels: the weighted one wins.
    x = np.array([[1.0, 0.0]] * 20 + [[1.0, 0.0]] * 20, np.float32)
    y = np.array([[1.0]] * 20 + [[0.0]] * 20, np.float32)
    w = np.array([1.0] * 20 + [0.0] * 20, np.float32)
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,), activation="sigmoid")])
    model.compile(keras.optimizers.SGD(1.0), loss="binary_crossentropy")
    history = model.fit(x, y, sample_weight=w, epochs=20, batch_size=8, verbose=0,
                        validation_data=(x, y, w))
    assert model.predict(x[:1])[0, 0] > 0.9
    assert history.history["val_loss"][-1] < 0.1
    # class_weight on one-hot targets: class 1 counts, class 0 does not.
    onehot = np.eye(2, dtype=np.float32)[(y[:, 0]).astype(int)]
    model2 = keras.Sequential([keras.layers.Dense(2, input_shape=(2,), activation="softmax")])
    model2.compile(keras.optimizers.SGD(1.0), loss="categorical_crossentropy")
    model2.fit(x, onehot, class_weight={0: 0.0, 1: 1.0}, epochs=20, batch_size=8, verbose=0,
               validation_split=0.25)
    assert model2.predict(x[:1])[0].argmax() == 1


def test_a_sequence_may_give_sample_weights():
    x = np.array([[1.0, 0.0]] * 16, np.float32)
    y = np.array([[1.0], [0.0]] * 8, np.float32)
    w = np.array([1.0, 0.0] * 8, np.float32)

    class Batches(keras.utils.Sequence):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            rows = slice(4 * i, 4 * i + 4)
            return x[rows], y[rows], w[rows]
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,), activation="sigmoid")])
    model.compile(keras.optimizers.SGD(1.0), loss="binary_crossentropy")
    model.fit(Batches(), epochs=20, verbose=0)
    assert model.predict(x[:1])[0, 0] > 0.9
