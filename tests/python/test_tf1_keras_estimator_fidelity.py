"""TF 1.15 fidelity of tf.keras and tf.estimator details that training programs depend on:
Keras RMSprop's update (slots at zero, momentum, centered), checkpoints written during
Estimator.train holding the step they are named after, Keras layer names numbered per graph,
user-defined losses fed integer labels, Sequential's '<layer>_input' name, and the hook and
parse-spec names under tf.estimator."""

import time

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


_X = np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 2.0], [-2.0, 0.5, 1.0], [1.0, 1.0, 1.0]],
              np.float32)
_Y = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)


def _np_rmsprop(steps, lr=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    """TF 1.15's OptimizerV2 RMSprop on mean((x w - y)^2), w [3, 1] from ones."""
    w = np.ones((3, 1))
    rms, mg, mom = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    x, y = _X.astype(np.float64), _Y.astype(np.float64)
    for _ in range(steps):
        g = 2 * x.T @ (x @ w - y) / len(x)
        rms = rho * rms + (1 - rho) * g * g
        denom = rms
        if centered:
            mg = rho * mg + (1 - rho) * g
            denom = rms - mg * mg
        if momentum > 0:
            mom = momentum * mom + lr * g / np.sqrt(denom + epsilon)
            w = w - mom
        else:
            w = w - lr * g / (np.sqrt(denom) + epsilon)
    return w


@pytest.mark.parametrize("kwargs", [
    {}, dict(lr=0.01, rho=0.8), dict(momentum=0.9), dict(centered=True),
    dict(momentum=0.5, centered=True, epsilon=1e-3), "rmsprop"])
def test_keras_rmsprop_follows_tf115_optimizer_v2(kwargs):
    """RMSprop's accumulator starts at 0 (it was tf.train's, starting at 1: early steps were
    about lr*g instead of lr/sqrt(1-rho)); momentum= and centered= are taken."""
    opt = kwargs if isinstance(kwargs, str) else keras.optimizers.RMSprop(**kwargs)
    model = keras.Sequential([keras.layers.Dense(1, use_bias=False, kernel_initializer="ones",
                                                 input_shape=(3,))])
    model.compile(optimizer=opt, loss="mse")
    for _ in range(4):
        model.train_on_batch(_X, _Y)
    want = _np_rmsprop(4, **({} if isinstance(kwargs, str) else kwargs))
    np.testing.assert_allclose(model.get_weights()[0], want, rtol=2e-5, atol=1e-7)
    slots = sorted(v.op.name for v in model.optimizer.variables()
                   if v.op.name.startswith("dense/"))
    extra = dict(kwargs) if isinstance(kwargs, dict) else {}
    assert slots == sorted(["dense/kernel/rms"] +
                           (["dense/kernel/momentum"] if extra.get("momentum") else []) +
                           (["dense/kernel/mg"] if extra.get("centered") else []))


def test_checkpoints_saved_while_training_hold_the_step_they_are_named_after(tmp_path):
    """CheckpointSaverHook read the global step beside the train op (before its update) and
    saved after it: model.ckpt-20 held global_step 21. As TF1's, it reads the step again after
    the update, so ckpt-N holds the variables after exactly N steps."""
    x = np.arange(40, dtype=np.float32).reshape(40, 1) / 40

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) - labels))
        # a slow step, so that the hook's read of the global step runs before the update
        slow = tf.py_func(lambda: time.sleep(0.02) or np.float32(0), [], tf.float32)
        with tf.control_dependencies([slow]):
            train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
                loss, tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x)).repeat().batch(4)

    config = tf.estimator.RunConfig(save_checkpoints_steps=3, keep_checkpoint_max=20)
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path), config=config)
    est.train(input_fn, steps=10)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    steps = [int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths]
    assert steps == [0, 3, 6, 9, 10]
    for path, step in zip(state.all_model_checkpoint_paths, steps):
        assert tf.train.load_variable(path, "global_step") == step


def test_keras_layer_names_are_numbered_per_graph(tmp_path):
    """Keras's default layer names counted across graphs ('dense_2' in the second graph), so an
    Estimator whose model_fn builds Keras layers could not evaluate after train ('checkpoint
    has no variable dense_2/kernel'). As TF 1.15's, each graph starts again at 'dense'."""
    x = np.random.RandomState(0).rand(20, 4).astype(np.float32)
    y = (x[:, 0] > 0.5).astype(np.int32)

    def model_fn(features, labels, mode):
        logits = keras.layers.Dense(2)(keras.layers.Dense(8, activation="relu")(features["x"]))
        loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = tf.estimator.Estimator(model_fn, str(tmp_path))
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(5), steps=2)
    assert "dense_1/kernel" in est.get_variable_names()
    assert "dense_2/kernel" not in est.get_variable_names()
    got = est.evaluate(lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(5))
    assert got["global_step"] == 2
    for _ in range(2):
        with tf.Graph().as_default():
            assert [keras.layers.Dense(1).name for _ in range(2)] == ["dense", "dense_1"]
            assert K.get_uid("dense") == 3
    tf.reset_default_graph()
    assert keras.layers.Dense(1).name == "dense"
    assert keras.layers.Dense(1).name == "dense_1"
    K.clear_session()
    assert keras.layers.Dense(1).name == "dense"


@pytest.mark.parametrize("shape", [(32,), (32, 1)])
def test_a_user_defined_loss_takes_integer_class_targets(shape):
    """A user's loss wrapping sparse_categorical_crossentropy fed int labels failed at fit
    ('expected float of shape [?,3] but got [32,1]'): the target was shaped for the output.
    As TF 1.15's, a user-defined loss's target is any [None, None] and any dtype converts."""
    rng = np.random.RandomState(1)
    x = rng.rand(32, 6).astype(np.float32)
    y = rng.randint(0, 3, 32)

    def my_loss(y_true, y_pred):
        return keras.losses.sparse_categorical_crossentropy(y_true, y_pred)

    model = keras.Sequential([keras.layers.Dense(3, activation="softmax", input_shape=(6,))])
    model.compile("sgd", loss=my_loss, metrics=["sparse_categorical_accuracy"])
    history = model.fit(x, y.reshape(shape), batch_size=8, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    p = model.predict(x).astype(np.float64)
    want = -np.log(p[np.arange(32), y]).mean()
    loss, acc = model.evaluate(x, y.reshape(shape), batch_size=32, verbose=0)
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    np.testing.assert_allclose(acc, (p.argmax(1) == y).mean())
    dataset = tf.data.Dataset.from_tensor_slices((x, y.reshape(shape))).batch(8)
    np.testing.assert_allclose(model.evaluate(dataset, verbose=0)[0], want, rtol=1e-5)


def test_a_sequentials_input_is_named_after_its_first_layer(tmp_path):
    """Sequential's implicit input was 'input_1'; TF 1.15 names it '<first layer>_input', the
    key the 'Estimators from Keras models' tutorial feeds by."""
    rng = np.random.RandomState(2)
    x, y = rng.rand(16, 4).astype(np.float32), rng.randint(0, 3, 16)
    model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(3)])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="sgd")
    assert model.input_names == ["dense_input"]
    assert model.input.name == "dense_input:0"
    model.fit({"dense_input": x}, y, epochs=1, verbose=0)
    est = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"dense_input": x}, y)).batch(8),
              steps=2)
    flat = keras.Sequential([keras.layers.Flatten(input_shape=(2, 2)), keras.layers.Dense(1)])
    assert flat.input_names == ["flatten_input"]


def test_tf_estimator_has_tf115s_hook_names_and_parse_specs():
    """The session-run hooks TF 1.15 exports under tf.estimator were only under tf.train;
    classifier/regressor_parse_example_spec, make_early_stopping_hook and Model.reset_states
    were missing; tf.estimator.experimental showed os, glob and operator."""
    for name in ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues",
                 "LoggingTensorHook", "StopAtStepHook", "CheckpointSaverHook",
                 "CheckpointSaverListener", "SummarySaverHook", "StepCounterHook",
                 "NanTensorHook", "NanLossDuringTrainingError", "ProfilerHook", "FinalOpsHook",
                 "FeedFnHook", "GlobalStepWaiterHook", "SecondOrStepTimer"]:
        assert getattr(tf.estimator, name) is getattr(tf.train, name), name
    public = [n for n in dir(tf.estimator.experimental) if not n.startswith("_")]
    assert not {"os", "glob", "operator"} & set(public)
    assert callable(tf.estimator.experimental.make_early_stopping_hook)
    with pytest.raises(ValueError, match="Only one of"):
        tf.estimator.experimental.make_early_stopping_hook(None, lambda: True, 10, 10)

    columns = [tf.feature_column.numeric_column("age"),
               tf.feature_column.numeric_column("xy", shape=(2,))]
    spec = tf.estimator.classifier_parse_example_spec(columns, "clicked", weight_column="w")
    assert sorted(spec) == ["age", "clicked", "w", "xy"]
    assert spec["clicked"] == tf.FixedLenFeature((1,), tf.int64)
    assert spec["w"] == tf.FixedLenFeature((1,), tf.float32)
    spec = tf.estimator.regressor_parse_example_spec(columns, "price", label_dimension=3,
                                                     label_default=0.0)
    assert spec["price"] == tf.FixedLenFeature((3,), tf.float32, 0.0)
    with pytest.raises(ValueError, match="label should not be used as feature"):
        tf.estimator.classifier_parse_example_spec(columns, "age")

    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    model.reset_states()   # no stateful layers: nothing to do, as TF 1.15's


def test_fit_on_a_dataset_counts_steps_in_its_epoch_line(capsys):
    """fit(verbose=2) on a Dataset printed the samples seen ('16/16'); TF 1.15's progress bar
    counts the steps of a Dataset ('4/4'), the samples of arrays."""
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse")
    x, y = np.ones((16, 3), np.float32), np.ones((16, 1), np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat()
    model.fit(dataset, steps_per_epoch=4, epochs=1, verbose=2)
    assert "\n4/4 - loss:" in capsys.readouterr().out
    model.fit(x, y, batch_size=4, epochs=1, verbose=2)
    assert "\n16/16 - loss:" in capsys.readouterr().out


def test_baseline_estimators_learn_the_label_mean_and_class_distribution(tmp_path):
    """BaselineClassifier / BaselineRegressor (missing): one bias 'baseline/bias' for every
    example, whatever its features, as TF 1.15's."""
    rng = np.random.RandomState(3)
    x = rng.rand(100, 2).astype(np.float32)
    y_reg = (3.0 + 0.1 * rng.randn(100, 1)).astype(np.float32)
    y_cls = (np.arange(100) % 10 < 7).astype(np.int64)

    def input_fn(y, epochs=None):
        return lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat(epochs).batch(10)

    reg = tf.estimator.BaselineRegressor(model_dir=str(tmp_path / "reg"))
    reg.train(input_fn(y_reg), steps=300)
    assert reg.get_variable_value("baseline/bias").shape == (1,)
    preds = [p["predictions"] for p in reg.predict(input_fn(y_reg, 1))]
    np.testing.assert_allclose(np.ravel(preds), y_reg.mean(), atol=0.05)

    clf = tf.estimator.BaselineClassifier(model_dir=str(tmp_path / "cls"))
    clf.train(input_fn(y_cls), steps=300)
    probs = [p["probabilities"] for p in clf.predict(input_fn(y_cls, 1))]
    np.testing.assert_allclose(np.asarray(probs)[:, 1], 0.7, atol=0.05)
