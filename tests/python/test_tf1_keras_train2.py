"""More of tf.keras's training API (shardflow/keras/): the callbacks LearningRateScheduler,
ReduceLROnPlateau, CSVLogger, TerminateOnNaN, TensorBoard, ProgbarLogger; the optimizers
Adadelta, Adamax, Nadam against NumPy; huber/KLD/cosine losses; top-k metrics; backend
functions; keras.utils.Sequence; to_json / model_from_json / clone_model."""

import csv
import glob
import os

import numpy as np
import pytest

import shardflow as tf
from shardflow import keras

K = keras.backend


@pytest.fixture(autouse=True)
def fresh_graph():
    K.clear_session()
    yield
    K.clear_session()


def _linear(optimizer, loss="mse"):
    """y = x @ w with w [3, 1] starting at ones, no bias."""
    model = keras.Sequential([keras.layers.Dense(1, use_bias=False, kernel_initializer="ones",
                                                 input_shape=(3,))])
    model.compile(optimizer=optimizer, loss=loss)
    return model


_X = np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 2.0], [-2.0, 0.5, 1.0], [1.0, 1.0, 1.0]],
              np.float32)
_Y = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)


def _grad(w):
    """The gradient of mean((x w - y)^2) over the batch."""
    return 2.0 / len(_X) * _X.T @ (_X @ w - _Y)


def _kernel(model):
    return model.get_weights()[0]


# ---- callbacks ---------------------------------------------------------------------------

def test_learning_rate_scheduler_changes_the_applied_update():
    model = _linear(keras.optimizers.SGD(lr=0.5))
    kernels = []
    record = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: kernels.append(_kernel(model)))
    sched = keras.callbacks.LearningRateScheduler(lambda epoch: [0.05, 0.0, 0.1][epoch])
    history = model.fit(_X, _Y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                        callbacks=[sched, record])
    w0 = np.ones((3, 1), np.float32)
    w1 = w0 - 0.05 * _grad(w0)
    np.testing.assert_allclose(kernels[0], w1, rtol=1e-5)
    np.testing.assert_array_equal(kernels[1], kernels[0])      # lr 0: no change
    np.testing.assert_allclose(kernels[2], w1 - 0.1 * _grad(w1), rtol=1e-5)
    np.testing.assert_allclose(history.history["lr"], [0.05, 0.0, 0.1], rtol=1e-6)
    assert K.get_value(model.optimizer.lr) == pytest.approx(0.1)


def test_learning_rate_scheduler_two_argument_schedule_and_set_value():
    model = _linear(keras.optimizers.Adam(lr=0.01))
    seen = []

    def schedule(epoch, lr):
        seen.append(lr)
        return lr * 0.5
    model.fit(_X, _Y, epochs=3, verbose=0,
              callbacks=[keras.callbacks.LearningRateScheduler(schedule)])
    np.testing.assert_allclose(seen, [0.01, 0.005, 0.0025], rtol=1e-6)
    K.set_value(model.optimizer.lr, 0.0)      # Keras's way to set it by hand
    before = _kernel(model)
    model.train_on_batch(_X, _Y)
    np.testing.assert_array_equal(_kernel(model), before)


def test_reduce_lr_on_plateau_lowers_lr_after_patience():
    model = _linear(keras.optimizers.SGD(lr=0.5))
    x = np.zeros_like(_X)                       # zero gradient: the loss never improves
    reduce = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.1, patience=2)
    history = model.fit(x, _Y, epochs=5, verbose=0, callbacks=[reduce])
    np.testing.assert_allclose(history.history["lr"], [0.5, 0.5, 0.5, 0.05, 0.05], rtol=1e-6)
    assert K.get_value(model.optimizer.lr) == pytest.approx(0.005)
    with pytest.raises(ValueError):
        keras.callbacks.ReduceLROnPlateau(factor=1.0)


def test_csv_logger_writes_one_row_per_epoch(tmp_path):
    path = str(tmp_path / "log.csv")
    model = _linear(keras.optimizers.SGD(lr=0.01))
    history = model.fit(_X, _Y, epochs=2, verbose=0, validation_data=(_X, _Y),
                        callbacks=[keras.callbacks.CSVLogger(path)])
    with open(path) as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["epoch", "loss", "val_loss"]
    assert [int(r[0]) for r in rows[1:]] == [0, 1]
    np.testing.assert_allclose([float(r[1]) for r in rows[1:]], history.history["loss"])
    np.testing.assert_allclose([float(r[2]) for r in rows[1:]], history.history["val_loss"])
    model.fit(_X, _Y, epochs=1, verbose=0,
              callbacks=[keras.callbacks.CSVLogger(path, separator=";", append=True)])
    with open(path) as f:
        lines = f.read().splitlines()
    assert len(lines) == 4 and lines[3].startswith("0;")


def test_terminate_on_nan_stops_at_the_first_bad_batch():
    model = _linear(keras.optimizers.SGD(lr=0.01))
    y = _Y.copy()
    y[:] = np.nan
    batches = []
    history = model.fit(_X, y, batch_size=1, epochs=5, shuffle=False, verbose=0,
                        callbacks=[keras.callbacks.TerminateOnNaN(),
                                   keras.callbacks.LambdaCallback(
                                       on_batch_end=lambda b, logs: batches.append(b))])
    assert batches == [0] and history.epoch == [0]


def test_tensorboard_writes_epoch_scalars(tmp_path):
    model = _linear(keras.optimizers.SGD(lr=0.01))
    history = model.fit(_X, _Y, epochs=3, verbose=0, validation_data=(_X, _Y),
                        callbacks=[keras.callbacks.TensorBoard(log_dir=str(tmp_path))])
    files = glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*"))
    assert len(files) == 1
    scalars, graphs = {}, 0
    for event in tf.train.summary_iterator(files[0]):
        graphs += bool(event.graph_def)
        for v in event.summary.value:
            scalars.setdefault(v.tag, {})[event.step] = v.simple_value
    assert graphs == 1
    assert sorted(scalars) == ["loss", "val_loss"]
    for tag in ("loss", "val_loss"):
        np.testing.assert_allclose([scalars[tag][s] for s in range(3)], history.history[tag],
                                   rtol=1e-6)


def test_progbar_logger_prints_epochs(capsys):
    model = _linear(keras.optimizers.SGD(lr=0.01))
    model.fit(_X, _Y, epochs=2, verbose=0, callbacks=[keras.callbacks.ProgbarLogger()])
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and "4/4 - loss:" in out


# ---- optimizers --------------------------------------------------------------------------

def _np_adadelta(steps, lr, rho=0.95, eps=1e-7):
    w = np.ones((3, 1))
    acc, upd = np.zeros_like(w), np.zeros_like(w)
    for _ in range(steps):
        g = _grad(w)
        acc = rho * acc + (1 - rho) * g ** 2
        u = np.sqrt(upd + eps) / np.sqrt(acc + eps) * g
        upd = rho * upd + (1 - rho) * u ** 2
        w = w - lr * u
    return w


def _np_adamax(steps, lr, b1=0.9, b2=0.999, eps=1e-7):
    w = np.ones((3, 1))
    m, u = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, steps + 1):
        g = _grad(w)
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g))
        w = w - lr / (1 - b1 ** t) * m / (u + eps)
    return w


def _np_nadam(steps, lr, b1=0.9, b2=0.999, eps=1e-7, decay=0.004):
    w = np.ones((3, 1))
    m, v, schedule = np.zeros_like(w), np.zeros_like(w), 1.0
    for t in range(1, steps + 1):
        g = _grad(w)
        mu_t = b1 * (1 - 0.5 * 0.96 ** (t * decay))
        mu_t1 = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * decay))
        schedule_new = schedule * mu_t
        schedule_next = schedule_new * mu_t1
        schedule = schedule_new
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        m_bar = (1 - mu_t) * g / (1 - schedule_new) + mu_t1 * m / (1 - schedule_next)
        w = w - lr * m_bar / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return w


def _np_amsgrad(steps, lr, b1=0.9, b2=0.999, eps=1e-7):
    w = np.ones((3, 1))
    m, v, vhat = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for t in range(1, steps + 1):
        g = _grad(w)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        vhat = np.maximum(vhat, v)
        w = w - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(vhat) + eps)
    return w


@pytest.mark.parametrize("make,reference", [
    # beta_2 = 0.5: v follows the shrinking gradients down, vhat keeps their maximum
    (lambda: keras.optimizers.Adam(lr=0.1, beta_2=0.5, amsgrad=True),
     lambda: _np_amsgrad(3, 0.1, b2=0.5)),
    (lambda: keras.optimizers.Adadelta(lr=1.0), lambda: _np_adadelta(3, 1.0)),
    (lambda: keras.optimizers.Adamax(lr=0.1), lambda: _np_adamax(3, 0.1)),
    (lambda: keras.optimizers.Nadam(lr=0.1), lambda: _np_nadam(3, 0.1)),
])
def test_optimizer_updates_match_numpy(make, reference):
    model = _linear(make())
    for _ in range(3):
        model.train_on_batch(_X, _Y)
    np.testing.assert_allclose(_kernel(model), reference(), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["adadelta", "adamax", "nadam"])
def test_optimizers_by_name_train_a_model(name):
    # fit shuffles with NumPy's global generator; seeded, the batch order (and the loss curve)
    # does not depend on what earlier tests drew (imdb.load_data seeds it, as Keras's).
    np.random.seed(0)
    rng = np.random.RandomState(0)
    x = rng.randn(64, 3).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    model = _linear(name)                      # Keras's defaults (lr 0.001)
    assert type(model.optimizer).__name__.lower() == name
    model.optimizer.lr = 1.0 if name == "adadelta" else 0.05
    losses = model.fit(x, y, batch_size=16, epochs=8, verbose=0).history["loss"]
    assert all(b < a for a, b in zip(losses, losses[1:]))
    # Adadelta starts with steps of about sqrt(epsilon) and speeds up slowly
    assert losses[-1] < (0.99 if name == "adadelta" else 0.5) * losses[0]


def _np_sgd(steps, lr_at):
    w = np.ones((3, 1))
    for t in range(steps):
        w = w - lr_at(t) * _grad(w)
    return w


schedules = keras.optimizers.schedules


@pytest.mark.parametrize("make,lr_at", [
    # Keras's time-based decay (RMSprop(lr=1e-4, decay=1e-6) in Keras's own examples)
    (lambda: keras.optimizers.SGD(lr=0.1, decay=0.5), lambda t: 0.1 / (1 + 0.5 * t)),
    (lambda: keras.optimizers.SGD(learning_rate=schedules.ExponentialDecay(
        0.1, decay_steps=2, decay_rate=0.5, staircase=True)), lambda t: 0.1 * 0.5 ** (t // 2)),
    (lambda: keras.optimizers.SGD(learning_rate=schedules.ExponentialDecay(0.1, 2, 0.5)),
     lambda t: 0.1 * 0.5 ** (t / 2)),
    (lambda: keras.optimizers.SGD(learning_rate=schedules.InverseTimeDecay(0.1, 1, 0.5)),
     lambda t: 0.1 / (1 + 0.5 * t)),
    (lambda: keras.optimizers.SGD(learning_rate=schedules.PolynomialDecay(
        0.1, 3, end_learning_rate=0.01, power=2.0)),
     lambda t: (0.1 - 0.01) * (1 - min(t, 3) / 3) ** 2 + 0.01),
    (lambda: keras.optimizers.SGD(learning_rate=schedules.PiecewiseConstantDecay(
        [1, 3], [0.1, 0.05, 0.01])), lambda t: 0.1 if t <= 1 else 0.05 if t <= 3 else 0.01),
])
def test_decay_and_learning_rate_schedules_follow_the_step_count(make, lr_at):
    model = _linear(make())
    for _ in range(5):
        model.train_on_batch(_X, _Y)
    np.testing.assert_allclose(_kernel(model), _np_sgd(5, lr_at), rtol=2e-5, atol=1e-6)
    assert K.get_value(model.optimizer.iterations) == 5
    assert model.optimizer.iterations in model.optimizer.variables()


@pytest.mark.parametrize("clip,lr_grad", [
    (dict(clipnorm=0.5), lambda g: g * min(1.0, 0.5 / np.linalg.norm(g))),
    (dict(clipvalue=0.3), lambda g: np.clip(g, -0.3, 0.3)),
])
def test_clipnorm_and_clipvalue_clip_each_gradient(clip, lr_grad):
    model = _linear(keras.optimizers.SGD(lr=0.1, **clip))
    w = np.ones((3, 1))
    for _ in range(3):
        model.train_on_batch(_X, _Y)
        w = w - 0.1 * lr_grad(_grad(w))
    np.testing.assert_allclose(_kernel(model), w, rtol=2e-5, atol=1e-6)
    assert np.abs(_grad(np.ones((3, 1)))).max() > 1   # the clipping mattered


def test_an_unknown_optimizer_argument_is_an_error_not_ignored():
    with pytest.raises(TypeError, match="clip_norm"):
        keras.optimizers.SGD(lr=0.1, clip_norm=1.0)
    with pytest.raises(ValueError, match="clipnorm"):
        keras.optimizers.Adam(clipnorm=-1)
    assert keras.optimizers.RMSprop(name="rms", clipvalue=1)._name == "rms"


def test_a_schedule_is_saved_with_the_model(tmp_path):
    lr = schedules.PiecewiseConstantDecay([2], [0.1, 0.01])
    model = _linear(keras.optimizers.SGD(learning_rate=lr, decay=0.1))
    model.save(str(tmp_path / "m.h5"))
    K.clear_session()
    loaded = keras.models.load_model(str(tmp_path / "m.h5"))
    assert isinstance(loaded.optimizer._schedule, schedules.PiecewiseConstantDecay)
    assert loaded.optimizer._schedule.get_config() == lr.get_config()
    assert loaded.optimizer.decay == 0.1
    with pytest.raises(ValueError, match="decay"):
        keras.optimizers.Adam(decay=-1.0)
    with pytest.raises(ValueError, match="2 boundaries need 3 values"):
        schedules.PiecewiseConstantDecay([1, 2], [0.1, 0.2])


# ---- losses and metrics ------------------------------------------------------------------

_T = np.array([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25]], np.float32)
_P = np.array([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1]], np.float32)


def _value(fn, *args):
    return K.eval(fn(*(tf.constant(a) for a in args)))


def test_losses_match_numpy():
    e = np.abs(_P - _T) * 4.0          # errors on both sides of delta=1
    quad = np.minimum(e, 1.0)
    np.testing.assert_allclose(_value(keras.losses.huber_loss, _T * 4, _P * 4),
                               np.mean(0.5 * quad ** 2 + (e - quad), axis=-1), rtol=1e-5)
    huber = keras.losses.Huber(delta=0.5)
    quad = np.minimum(e, 0.5)
    np.testing.assert_allclose(_value(huber, _T * 4, _P * 4),
                               np.mean(np.mean(0.5 * quad ** 2 + 0.5 * (e - quad), -1)),
                               rtol=1e-5)
    kld = np.sum(_T * np.log(_T / _P), axis=-1)
    for fn in (keras.losses.kullback_leibler_divergence, keras.losses.kld, keras.losses.KLD,
               keras.losses.get("kld")):
        np.testing.assert_allclose(_value(fn, _T, _P), kld, rtol=1e-5)
    cos = np.sum(_T * _P, -1) / np.linalg.norm(_T, axis=-1) / np.linalg.norm(_P, axis=-1)
    for fn in (keras.losses.cosine_similarity, keras.losses.cosine_proximity,
               keras.metrics.cosine_proximity, keras.losses.get("cosine_proximity")):
        np.testing.assert_allclose(_value(fn, _T, _P), -cos, rtol=1e-5)   # TF 1.15: negative


def test_string_losses_train():
    for loss in ("huber_loss", "kld", "cosine_proximity"):
        K.clear_session()
        model = keras.Sequential([keras.layers.Dense(3, activation="softmax",
                                                     input_shape=(3,))])
        model.compile(keras.optimizers.Adam(lr=0.05), loss=loss)
        history = model.fit(_T.repeat(8, 0), _T.repeat(8, 0), epochs=10, verbose=0)
        assert history.history["loss"][-1] < history.history["loss"][0], loss


def test_top_k_metrics():
    p = np.array([[0.1, 0.5, 0.3, 0.1], [0.4, 0.3, 0.2, 0.1], [0.05, 0.05, 0.1, 0.8]],
                 np.float32)
    labels = np.array([2, 3, 3])
    onehot = np.eye(4, dtype=np.float32)[labels]
    np.testing.assert_array_equal(
        _value(lambda a, b: keras.metrics.top_k_categorical_accuracy(a, b, k=2), onehot, p),
        [1, 0, 1])
    np.testing.assert_array_equal(
        _value(lambda a, b: keras.metrics.sparse_top_k_categorical_accuracy(a, b, k=1),
               labels.astype(np.int32), p), [0, 0, 1])
    model = keras.Sequential([keras.layers.Dense(4, activation="softmax", input_shape=(4,))])
    model.compile("sgd", "sparse_categorical_crossentropy",
                  metrics=["sparse_top_k_categorical_accuracy"])
    # 4 classes, k=5: every label is in the top 5
    loss, acc = model.evaluate(p, labels, verbose=0)
    assert acc == 1.0
    model.compile("sgd", "categorical_crossentropy", metrics=["top_k_categorical_accuracy"])
    assert model.metrics_names == ["loss", "top_k_categorical_accuracy"]


# ---- backend -----------------------------------------------------------------------------

def test_backend_function_and_ops():
    x = K.placeholder(shape=(None, 3))
    f = K.function([x], [K.sum(K.square(x)), K.mean(x, axis=0), K.max(x, axis=1),
                         K.min(x), K.sqrt(K.abs(x)), K.exp(K.log(K.abs(x) + 1.0))])
    a = _X
    out = f([a])
    np.testing.assert_allclose(out[0], np.sum(a ** 2), rtol=1e-5)
    np.testing.assert_allclose(out[1], a.mean(0), rtol=1e-5)
    np.testing.assert_allclose(out[2], a.max(1))
    np.testing.assert_allclose(out[3], a.min())
    np.testing.assert_allclose(out[4], np.sqrt(np.abs(a)), rtol=1e-6)
    np.testing.assert_allclose(out[5], np.abs(a) + 1.0, rtol=1e-5)

    v = K.variable(np.arange(6).reshape(2, 3))
    assert K.ndim(v) == 2 and K.eval(v).dtype == np.float32
    K.set_value(v, np.ones((2, 3)))
    np.testing.assert_array_equal(K.get_value(v), np.ones((2, 3)))
    c = K.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(K.eval(K.dot(c, K.transpose(c))), [[5, 11], [11, 25]])
    np.testing.assert_array_equal(K.eval(K.concatenate([c, c])).shape, (2, 4))
    np.testing.assert_array_equal(K.eval(K.stack([c, c], axis=0)).shape, (2, 2, 2))
    np.testing.assert_array_equal(K.eval(K.expand_dims(c, 0)).shape, (1, 2, 2))
    np.testing.assert_array_equal(K.eval(K.reshape(c, (4,))), [1, 2, 3, 4])
    np.testing.assert_array_equal(K.eval(K.shape(c)), [2, 2])
    np.testing.assert_array_equal(K.eval(K.zeros((2,))) + K.eval(K.ones((2,))), [1, 1])
    assert K.eval(K.cast(c, "int32")).dtype == np.int32
    np.testing.assert_allclose(K.eval(K.clip(c, 1.5, 3.5)), [[1.5, 2], [3, 3.5]])
    z = np.array([[-1.0, 0.0, 2.0]], np.float32)
    np.testing.assert_allclose(K.eval(K.relu(K.constant(z))), [[0, 0, 2]])
    np.testing.assert_allclose(K.eval(K.sigmoid(K.constant(z))), 1 / (1 + np.exp(-z)),
                               rtol=1e-6)
    np.testing.assert_allclose(K.eval(K.tanh(K.constant(z))), np.tanh(z), rtol=1e-6)
    np.testing.assert_allclose(K.eval(K.softmax(K.constant(z))),
                               np.exp(z) / np.exp(z).sum(), rtol=1e-6)
    np.testing.assert_allclose(
        K.eval(K.binary_crossentropy(K.constant(_T), K.constant(_P))),
        -(_T * np.log(_P) + (1 - _T) * np.log(1 - _P)), rtol=1e-5)
    np.testing.assert_allclose(
        K.eval(K.categorical_crossentropy(K.constant(_T), K.constant(_P))),
        -np.sum(_T * np.log(_P), -1), rtol=1e-5)


def test_backend_function_runs_updates_and_model_layers():
    model = _linear(keras.optimizers.SGD(lr=0.1))
    f = K.function([model.input], [model.output])
    np.testing.assert_allclose(f([_X])[0], _X.sum(1, keepdims=True), rtol=1e-6)
    counter = K.variable(0.0)
    step = K.function([], [], updates=[(counter, counter + 1.0)])
    step([])
    step([])
    assert K.get_value(counter) == 2.0


# ---- Sequence, JSON, clone ---------------------------------------------------------------

class _Batches(keras.utils.Sequence):
    def __init__(self, x, y, n):
        self.x, self.y, self.n, self.epochs = x, y, n, 0

    def __len__(self):
        return (len(self.x) + self.n - 1) // self.n

    def __getitem__(self, i):
        return self.x[i * self.n:(i + 1) * self.n], self.y[i * self.n:(i + 1) * self.n]

    def on_epoch_end(self):
        self.epochs += 1


def test_fit_on_a_sequence():
    rng = np.random.RandomState(1)
    x = rng.randn(40, 3).astype(np.float32)
    y = x @ np.array([[1.0], [-1.0], [2.0]], np.float32)
    seq = _Batches(x, y, 16)
    model = _linear(keras.optimizers.SGD(lr=0.05))
    history = model.fit(seq, epochs=6, verbose=0)
    assert seq.epochs == 6
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    np.testing.assert_allclose(history.history["loss"][-1],
                               np.mean((model.predict(x) - y) ** 2), rtol=0.5)
    history = model.fit_generator(seq, epochs=1, verbose=0)
    assert len(history.history["loss"]) == 1


def test_json_round_trip_and_clone_model():
    a = keras.layers.Input(shape=(3,))
    h = keras.layers.Dense(4, activation="relu")(a)
    out = keras.layers.Dense(2, activation="softmax")(h)
    model = keras.Model(a, out)
    text = model.to_json()
    rebuilt = keras.models.model_from_json(text)
    assert [type(layer).__name__ for layer in rebuilt.layers] == \
        [type(layer).__name__ for layer in model.layers]
    rebuilt.set_weights(model.get_weights())
    np.testing.assert_allclose(rebuilt.predict(_X), model.predict(_X), rtol=1e-6)

    seq = keras.Sequential([keras.layers.Dense(5, activation="tanh", input_shape=(3,)),
                            keras.layers.Dense(1)])
    clone = keras.models.clone_model(seq)
    assert clone is not seq and len(clone.weights) == len(seq.weights)
    assert not set(v.name for v in clone.weights) & set(v.name for v in seq.weights)
    assert not np.allclose(clone.get_weights()[0], seq.get_weights()[0])   # new weights
    clone.set_weights(seq.get_weights())
    np.testing.assert_allclose(clone.predict(_X), seq.predict(_X), rtol=1e-6)
    clone.compile("sgd", "mse")
    clone.fit(_X, _Y, epochs=1, verbose=0)
    assert not np.allclose(clone.get_weights()[0], seq.get_weights()[0])


def test_compile_takes_the_session_arguments_and_refuses_unknown_ones():
    # TF1 Keras passes compile's extra arguments to every step's session.run: a full trace
    # through options/run_metadata, extra fetches run along each step.
    run_metadata = tf.RunMetadata()
    calls = tf.Variable(0, name="calls")
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse", options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                  run_metadata=run_metadata, fetches=tf.assign_add(calls, 1),
                  experimental_run_tf_function=False)
    model.fit(_X, _Y, batch_size=2, epochs=1, verbose=0)
    assert K.get_value(calls) == 2
    assert any(len(d.node_stats) for d in run_metadata.step_stats.dev_stats)
    model.evaluate(_X, _Y, verbose=0)
    assert K.get_value(calls) == 3
    with pytest.raises(TypeError, match="metrcs"):   # was silently ignored
        model.compile("sgd", "mse", metrcs=["accuracy"])
    with pytest.raises(ValueError, match="run_eagerly"):
        model.compile("sgd", "mse", run_eagerly=True)


def test_backend_function_takes_the_session_arguments():
    x = K.placeholder(shape=(2,))
    calls = tf.Variable(0, name="fn_calls")
    run_metadata = tf.RunMetadata()
    f = K.function([x], [x * 2], options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                   run_metadata=run_metadata, fetches=[tf.assign_add(calls, 1)])
    np.testing.assert_allclose(f([np.array([1.0, 2.0], np.float32)])[0], [2.0, 4.0])
    assert K.get_value(calls) == 1 and len(run_metadata.step_stats.dev_stats)
    with pytest.raises(TypeError, match="optionz"):
        K.function([x], [x], optionz=None)


def test_fit_validation_freq_and_a_misspelled_argument():
    model = _linear(keras.optimizers.SGD(lr=0.01))
    history = model.fit(_X, _Y, batch_size=4, epochs=4, verbose=0, validation_data=(_X, _Y),
                        validation_freq=2, workers=4, use_multiprocessing=False)
    assert len(history.history["loss"]) == 4 and len(history.history["val_loss"]) == 2
    history = model.fit(_X, _Y, batch_size=4, epochs=3, verbose=0, validation_data=(_X, _Y),
                        validation_freq=[1, 3])
    assert len(history.history["val_loss"]) == 2
    with pytest.raises(TypeError, match="epoch"):     # trained one epoch, silently, before
        model.fit(_X, _Y, epoch=5, verbose=0)
    with pytest.raises(ValueError, match="validation_freq"):
        model.fit(_X, _Y, validation_freq=0, verbose=0)
