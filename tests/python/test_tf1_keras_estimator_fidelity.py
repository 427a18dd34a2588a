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
