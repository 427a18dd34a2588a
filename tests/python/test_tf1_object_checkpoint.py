"""tf.train.Checkpoint and CheckpointManager in graph mode (shardflow/object_checkpoint.py):
values keyed by object paths, so a rebuilt program restores them whatever its graph names."""
import os

import numpy as np
import pytest

import shardflow as tf
from shardflow import keras

X = np.random.RandomState(0).rand(32, 3).astype(np.float32)
Y = X.sum(axis=1, keepdims=True)


def build(extra_layers=0):
    """A compiled Keras model and a global step in a fresh graph; `extra_layers` unused Dense
    layers built first shift the graph's names (dense_1, ...) without changing the objects."""
    tf.reset_default_graph()
    keras.backend.clear_session()
    for _ in range(extra_layers):
        keras.layers.Dense(2)(tf.placeholder(tf.float32, [None, 3]))
    model = keras.Sequential([keras.layers.Dense(4, activation="relu", input_shape=(3,)),
                              keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(0.01), "mse")
    return model, tf.train.get_or_create_global_step()


def test_manager_keeps_the_last_and_a_rebuilt_model_restores_everything(tmp_path):
    model, step = build()
    model.fit(X, Y, epochs=3, verbose=0)
    sess = keras.backend.get_session()
    sess.run(step.assign(7))
    ckpt = tf.train.Checkpoint(model=model, step=step)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    paths = [manager.save() for _ in range(3)]
    assert [os.path.basename(p) for p in paths] == ["ckpt-1", "ckpt-2", "ckpt-3"]
    assert manager.checkpoints == paths[1:] and manager.latest_checkpoint == paths[2]
    assert not os.path.exists(paths[0])
    assert tf.train.latest_checkpoint(str(tmp_path)) == paths[2]
    want_pred, want_weights = model.predict(X[:4]), model.get_weights()
    keys = [name for name, _ in tf.train.list_variables(paths[2])]
    assert "model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert any(".OPTIMIZER_SLOT" in k for k in keys)

    model2, step2 = build(extra_layers=2)     # other graph names, same objects
    model2.fit(X[:4], Y[:4], epochs=1, verbose=0)  # makes the optimizer's slots
    ckpt2 = tf.train.Checkpoint(model=model2, step=step2)
    status = ckpt2.restore(tf.train.CheckpointManager(ckpt2, str(tmp_path), 2).latest_checkpoint)
    status.assert_consumed().run_restore_ops()
    sess2 = keras.backend.get_session()
    assert sess2.run(step2) == 7 and sess2.run(ckpt2.save_counter) == 3
    for got, want in zip(model2.get_weights(), want_weights):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(model2.predict(X[:4]), want_pred, rtol=1e-6)


def test_tf_train_optimizer_and_variables_in_a_session(tmp_path):
    def program():
        tf.reset_default_graph()
        w = tf.Variable([1.0, 2.0], name="w")
        opt = tf.train.MomentumOptimizer(0.1, 0.9)
        train = opt.minimize(tf.reduce_sum(w * w))
        return w, opt, train

    w, opt, train = program()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        path = tf.train.Checkpoint(weights={"w": w}, optimizer=opt).write(
            str(tmp_path / "one"))
        want_w, want_m = sess.run([w, opt.get_slot(w, "momentum")])
    w, opt, train = program()
    ckpt = tf.train.Checkpoint(weights={"w": w}, optimizer=opt)
    with tf.Session() as sess:
        ckpt.restore(path).initialize_or_restore()
        np.testing.assert_array_equal(sess.run(w), want_w)
        np.testing.assert_array_equal(sess.run(opt.get_slot(w, "momentum")), want_m)


def test_partial_matches_and_bad_files(tmp_path):
    tf.reset_default_graph()
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Checkpoint(a=a).save(str(tmp_path / "ck"))
        status = tf.train.Checkpoint(a=a, b=b).restore(path)
        with pytest.raises(AssertionError, match="b/.ATTRIBUTES"):
            status.assert_consumed()
        with pytest.raises(AssertionError, match="b/"):
            status.assert_existing_objects_matched()
        status.assert_nontrivial_match()
        sess.run(a.assign(5.0))
        status.run_restore_ops()
        assert sess.run(a) == 1.0
        with pytest.raises(AssertionError):
            tf.train.Checkpoint(b=b).restore(path).assert_nontrivial_match()
        with pytest.raises(tf.errors.NotFoundError):
            tf.train.Checkpoint(a=a).restore(str(tmp_path / "missing"))
        (tmp_path / "junk").write_bytes(b"\x00garbage" * 10)
        with pytest.raises(tf.errors.OpError):
            tf.train.Checkpoint(a=a).restore(str(tmp_path / "junk"))
        tf.train.Checkpoint(a=a).restore(None).initialize_or_restore(sess)
    with pytest.raises(ValueError, match="max_to_keep"):
        tf.train.CheckpointManager(tf.train.Checkpoint(a=a), str(tmp_path), max_to_keep=0)
