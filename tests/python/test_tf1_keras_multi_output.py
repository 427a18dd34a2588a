"""Keras models with several outputs (shardflow/keras/training_outputs.py): losses, loss weights,
metrics, targets and sample weights per output, as TF 1.15's Keras; checked against the losses
computed by hand from predict()."""
import numpy as np
import pytest

import shardflow as tf
from shardflow import keras

RNG = np.random.RandomState(0)
X = RNG.rand(64, 4).astype(np.float32)
LABELS = (X[:, 0] * 3).astype(np.int64).clip(0, 2)
TARGET = X.sum(axis=1, keepdims=True).astype(np.float32)


def two_heads():
    tf.reset_default_graph()
    keras.backend.clear_session()
    inp = keras.layers.Input(shape=(4,), name="inp")
    h = keras.layers.Dense(16, activation="relu")(inp)
    cls = keras.layers.Dense(3, activation="softmax", name="cls")(h)
    reg = keras.layers.Dense(1, name="reg")(h)
    return keras.Model(inp, [cls, reg])


def by_hand(model, weights=(1.0, 0.5)):
    probs, pred = model.predict(X)
    xent = -np.log(probs[np.arange(len(X)), LABELS]).mean()
    mse = ((pred - TARGET) ** 2).mean()
    acc = (probs.argmax(axis=1) == LABELS).mean()
    return [weights[0] * xent + weights[1] * mse, xent, mse, acc]


@pytest.mark.parametrize("style", ["dict", "list"])
def test_losses_weights_and_metrics_per_output(style):
    model = two_heads()
    if style == "dict":
        model.compile("adam", loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"},
                      loss_weights={"cls": 1.0, "reg": 0.5}, metrics={"cls": "accuracy"})
        y = {"cls": LABELS, "reg": TARGET}
    else:
        model.compile("adam", loss=["sparse_categorical_crossentropy", "mse"],
                      loss_weights=[1.0, 0.5], metrics={"cls": ["accuracy"]})
        y = [LABELS, TARGET]
    assert model.output_names == ["cls", "reg"]
    assert model.metrics_names == ["loss", "cls_loss", "reg_loss", "cls_acc"]
    before = model.evaluate(X, y, batch_size=64, verbose=0)
    np.testing.assert_allclose(before, by_hand(model), rtol=1e-5)
    history = model.fit(X, y, epochs=20, batch_size=16, verbose=0, validation_split=0.25)
    assert sorted(history.history) == sorted(
        ["loss", "cls_loss", "reg_loss", "cls_acc", "val_loss", "val_cls_loss",
         "val_reg_loss", "val_cls_acc"])
    after = model.evaluate(X, y, batch_size=64, verbose=0)
    np.testing.assert_allclose(after, by_hand(model), rtol=1e-5)
    assert after[0] < before[0]
    batch = [v[:8] for v in y] if style == "list" else {k: v[:8] for k, v in y.items()}
    assert len(model.train_on_batch(X[:8], batch)) == 4
    with pytest.raises(ValueError, match="different numbers of samples"):
        model.train_on_batch(X[:8], y)


def test_one_loss_for_all_outputs_sample_weights_and_an_untrained_output():
    tf.reset_default_graph()
    keras.backend.clear_session()
    inp = keras.layers.Input(shape=(4,))
    a = keras.layers.Dense(1, name="a")(inp)
    b = keras.layers.Dense(1, name="b")(inp)
    model = keras.Model(inp, [a, b])
    model.compile("sgd", loss="mse")                      # the same loss for both
    w = np.zeros(64, np.float32)
    w[:32] = 2.0
    got = model.evaluate(X, [TARGET, 2 * TARGET], sample_weight={"a": w}, batch_size=64,
                         verbose=0)
    pa, pb = model.predict(X)
    want_a = (2.0 * ((pa - TARGET) ** 2)[:32]).sum() / 64
    want_b = ((pb - 2 * TARGET) ** 2).mean()
    np.testing.assert_allclose(got, [want_a + want_b, want_a, want_b], rtol=1e-5)
    # An output left out of the loss dict is not trained and needs no targets.
    model.compile("sgd", loss={"a": "mse"})
    kernel_b = model.get_layer("b").get_weights()[0].copy()
    model.fit(X, {"a": TARGET}, epochs=2, verbose=0)
    np.testing.assert_array_equal(model.get_layer("b").get_weights()[0], kernel_b)
    assert model.metrics_names == ["loss", "a_loss"]


def test_bad_per_output_arguments_name_the_outputs(tmp_path):
    model = two_heads()
    with pytest.raises(ValueError, match="not outputs of the model"):
        model.compile("adam", loss={"nope": "mse"})
    with pytest.raises(ValueError, match="2 outputs"):
        model.compile("adam", loss=["mse"])
    model.compile("adam", loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"})
    with pytest.raises(ValueError, match="2 outputs"):
        model.fit(X, LABELS, verbose=0)
    with pytest.raises(ValueError, match="reg"):
        model.fit(X, {"cls": LABELS}, verbose=0)
    # Saved with its per-output compile arguments, loaded and trained again.
    model.compile("adam", loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"},
                  loss_weights={"cls": 2.0, "reg": 1.0})
    model.fit(X, {"cls": LABELS, "reg": TARGET}, epochs=1, verbose=0)
    path = str(tmp_path / "two_heads.json")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.loss_weights == {"cls": 2.0, "reg": 1.0}
    np.testing.assert_allclose(loaded.evaluate(X, [LABELS, TARGET], verbose=0, batch_size=64),
                               model.evaluate(X, [LABELS, TARGET], verbose=0, batch_size=64),
                               rtol=1e-5)


def sequence_model():
    tf.reset_default_graph()
    keras.backend.clear_session()
    return keras.Sequential([keras.layers.Embedding(12, 6, input_length=5),
                             keras.layers.LSTM(8, return_sequences=True),
                             keras.layers.Dense(12, activation="softmax")])


def test_sparse_targets_per_step_and_temporal_sample_weights():
    """Sequence outputs [batch, steps, classes] with sparse class targets [batch, steps] (or
    [batch, steps, 1]), as a char-RNN or tagger; sample_weight_mode='temporal' weighs each
    step (a padding mask), as TF 1.15's Keras."""
    rng = np.random.RandomState(3)
    x = rng.randint(0, 12, (16, 5))
    y = np.roll(x, -1, axis=1)
    mask = (rng.rand(16, 5) > 0.3).astype(np.float32)
    model = sequence_model()
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"],
                  sample_weight_mode="temporal")
    loss, acc = model.evaluate(x, y[..., None], sample_weight=mask, batch_size=16, verbose=0)
    probs = model.predict(x)
    picked = probs.reshape(-1, 12)[np.arange(80), y.reshape(-1)].reshape(16, 5)
    assert loss == pytest.approx((-np.log(picked) * mask).sum() / 80, rel=1e-5)
    assert acc == pytest.approx((probs.argmax(-1) == y).mean(), rel=1e-6)
    before = model.evaluate(x, y, verbose=0)[0]
    model.fit(x, y, sample_weight=mask, epochs=20, batch_size=8, verbose=0)
    assert model.evaluate(x, y, verbose=0)[0] < before
    with pytest.raises(ValueError, match="temporal"):
        model.fit(x, y, sample_weight=np.ones(16), epochs=1, verbose=0)
    with pytest.raises(ValueError, match="class indices of rank 2"):
        model.fit(x, y.reshape(-1), epochs=1, verbose=0)
    # Without the temporal mode, per-sample weights weigh every step of the sample.
    plain = sequence_model()
    plain.compile("sgd", "sparse_categorical_crossentropy")
    w = np.arange(16, dtype=np.float32)
    probs = plain.predict(x)
    picked = probs.reshape(-1, 12)[np.arange(80), y.reshape(-1)].reshape(16, 5)
    assert plain.evaluate(x, y, sample_weight=w, batch_size=16, verbose=0) == pytest.approx(
        (-np.log(picked) * w[:, None]).sum() / 80, rel=1e-5)
