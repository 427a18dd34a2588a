"""TF 1.15's signatures of common functions: argument names, older aliases (dim,
squeeze_dims, keep_dims), positional order (tf.Variable(0, False), tf.nn.softmax(x, 1)). Each
of these was a TypeError, or silently meant another argument, before."""
import os

import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_family_along_an_axis():
    xv = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)
    x = tf.constant(xv)
    outs = [tf.nn.softmax(x, 1), tf.nn.softmax(x, dim=1), tf.nn.softmax(x, axis=-1),
            tf.nn.log_softmax(x, axis=0),
            tf.nn.softmax_cross_entropy_with_logits(labels=tf.nn.softmax(x, 1), logits=x,
                                                    dim=1)]
    with tf.Session() as s:
        a, b, c, d, e = s.run(outs)
    np.testing.assert_allclose(a, _softmax(xv, 1), atol=1e-6)
    np.testing.assert_allclose(b, _softmax(xv, 1), atol=1e-6)
    np.testing.assert_allclose(c, _softmax(xv, 2), atol=1e-6)
    np.testing.assert_allclose(d, np.log(_softmax(xv, 0)), atol=1e-5)
    p = _softmax(xv, 1)
    np.testing.assert_allclose(e, -(p * np.log(p)).sum(1), atol=1e-5)
    with pytest.raises(ValueError, match="not both"):
        tf.nn.softmax(x, axis=1, dim=1)


def test_shape_functions_take_their_older_names():
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    e = tf.expand_dims(x, dim=1)
    assert e.shape.as_list() == [2, 1, 3]
    assert tf.squeeze(e, squeeze_dims=[1]).shape.as_list() == [2, 3]
    assert tf.transpose(x, conjugate=True).shape.as_list() == [3, 2]
    assert tf.zeros_like(x, dtype=tf.int32).dtype == tf.int32
    assert tf.ones_like(tensor=x).dtype == tf.float32
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(tf.one_hot([0, 2], 3, axis=0)),
                                      [[1, 0], [0, 0], [0, 1]])
        np.testing.assert_array_equal(s.run(tf.matmul(x, x, adjoint_b=True)),
                                      s.run(x) @ s.run(x).T)
        y = tf.constant(np.ones((1, 3, 2, 2), np.float32))
        np.testing.assert_array_equal(
            s.run(tf.nn.bias_add(y, [1.0, 2.0, 3.0], data_format="NCHW"))[0, :, 0, 0],
            [2, 3, 4])
        z = tf.constant(np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2))   # NCHW
        np.testing.assert_array_equal(s.run(tf.layers.flatten(z, data_format="channels_first")),
                                      [[0, 4, 1, 5, 2, 6, 3, 7]])
    with pytest.raises(ValueError, match="only one of transpose_a and adjoint_a"):
        tf.matmul(x, x, transpose_a=True, adjoint_a=True)


def test_variable_and_optimizers_take_tf1_positional_order():
    v = tf.Variable(0, False)                     # TF1: trainable is the second argument
    assert v not in tf.trainable_variables()
    w = tf.Variable(np.ones(2, np.float32), validate_shape=False, caching_device="/cpu:0",
                    use_resource=True, name="w")
    assert w.op.name == "w" and w in tf.trainable_variables()
    with pytest.raises(NotImplementedError, match="import_meta_graph"):
        tf.Variable(variable_def=object())
    loss = tf.reduce_sum(w * w)
    opts = [tf.train.GradientDescentOptimizer(0.1, use_locking=True),
            tf.train.MomentumOptimizer(0.1, 0.9, False, "M", True),   # ..., name, use_nesterov
            tf.train.AdamOptimizer(0.1, 0.9, 0.999, 1e-8, True, "A")]
    assert opts[1]._params["use_nesterov"] is True and opts[1]._name == "M"
    assert opts[2]._name == "A"
    steps = [o.minimize(loss) for o in opts]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(steps)
        assert s.run(w)[0] < 1


def test_batch_normalization_regularizers_and_unsupported_options():
    x = tf.placeholder(tf.float32, [None, 4])
    tf.layers.batch_normalization(x, gamma_regularizer=tf.contrib.layers.l2_regularizer(0.5),
                                  beta_regularizer=tf.contrib.layers.l2_regularizer(0.5),
                                  gamma_constraint=lambda g: tf.clip_by_value(g, 0, 2))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert sorted(s.run(losses)) == [0.0, 1.0]     # 0.5 * sum(1^2 * 4) / 2; beta zeros
    with pytest.raises(NotImplementedError, match="renorm"):
        tf.layers.batch_normalization(x, renorm=True)


def test_name_scope_collections_identity_and_writer_take_tf1_arguments(tmp_path):
    x = tf.constant(1.0)
    with tf.name_scope(None, "MyOp", [x]) as scope:      # library functions' idiom
        y = tf.identity(input=x)
    assert scope == "MyOp/" and y.name == "MyOp/Identity:0"
    with tf.name_scope("given", "unused") as scope:
        pass
    assert scope == "given/"
    with pytest.raises(ValueError, match="name and default_name"):
        tf.name_scope(None, None, [x])
    assert tf.stop_gradient(input=x).op.type == "StopGradient"
    v = tf.Variable(1.0)
    assert tf.get_collection(key=tf.GraphKeys.GLOBAL_VARIABLES) == [v]
    writer = tf.summary.FileWriter(str(tmp_path), graph_def=tf.get_default_graph().as_graph_def())
    writer.close()
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(str(tmp_path)))
    dense = tf.layers.Dense(3, None, True, None, tf.ones_initializer())   # bias_initializer 5th
    out = dense(tf.zeros([1, 2]))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(s.run(out), [[1, 1, 1]])


def test_estimator_run_config_and_cells_take_tf1_arguments(tmp_path):
    calls = []

    def device_fn(op):
        calls.append(op.type)
        return ""

    config = tf.estimator.RunConfig(str(tmp_path), None, 100, None, 600,
                                    None, 3, 2, device_fn=device_fn, protocol="grpc")
    assert config.keep_checkpoint_max == 3 and config.keep_checkpoint_every_n_hours == 2
    assert config.replace(keep_checkpoint_max=4).device_fn is device_fn
    with pytest.raises(ValueError, match="protocol"):
        tf.estimator.RunConfig(protocol="mpi")
    chief_hook_ran = []

    class Hook(tf.train.SessionRunHook):
        def begin(self):
            chief_hook_ran.append(True)

    def model_fn(features, labels, mode):
        loss = tf.reduce_sum(tf.layers.dense(features, 1))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss,
                                                               tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step,
                                          training_chief_hooks=[Hook()])
    est = tf.estimator.Estimator(model_fn, config=config)
    est.train(lambda: tf.data.Dataset.from_tensors(np.ones((2, 3), np.float32)).repeat(3))
    assert chief_hook_ran and "MatMul" in calls   # the device function placed model_fn's ops
    with pytest.raises(NotImplementedError, match="PREDICT"):
        est.export_saved_model(str(tmp_path / "export"), None, experimental_mode="train")
    tf.reset_default_graph()
    cell = tf.nn.rnn_cell.GRUCell(3, kernel_initializer=tf.ones_initializer(),
                                  bias_initializer=tf.zeros_initializer())
    out, _ = tf.nn.dynamic_rnn(cell, tf.ones([1, 2, 2]), dtype=tf.float32)
    cols = {}
    numeric = tf.feature_column.numeric_column("x")
    net = tf.feature_column.input_layer({"x": tf.ones([2, 1])}, [numeric],
                                        cols_to_output_tensors=cols)
    checked = tf.debugging.assert_all_finite(x=tf.ones([2]), message="finite")
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        kernels = [v for v in tf.global_variables() if v.op.name.endswith("kernel")]
        assert all((s.run(k) == 1).all() for k in kernels)
        assert s.run(cols[numeric]).tolist() == [[1.0], [1.0]] and s.run(net).shape == (2, 1)
        assert s.run(checked).tolist() == [1.0, 1.0]
        assert s.run(out).shape == (1, 2, 3)


def test_layer_classes_take_tf1_arguments():
    x = tf.placeholder(tf.float32, [None, 2, 2, 2])
    training = tf.placeholder_with_default(False, [])
    drop = tf.layers.Dropout(0.5, noise_shape=[1, 1, 1, 2])(x, training=training)
    flat = tf.layers.Flatten(data_format="channels_first")(x)
    with pytest.raises(ValueError, match="channels_last"):
        tf.layers.Conv2D(4, 3, data_format="channels_first")
    conv = tf.layers.Conv2D(4, 1, data_format="channels_last")(x)
    xv = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(s.run(drop, {x: xv}), xv)        # not training
        masked = s.run(drop, {x: xv + 1, training: True})
        kept = masked[0, :, :, :] != 0
        assert (kept == kept[0, 0]).all()            # noise_shape: one draw per channel
        np.testing.assert_array_equal(s.run(flat, {x: xv}),
                                      [[0, 4, 1, 5, 2, 6, 3, 7]])
        assert s.run(conv, {x: xv}).shape == (1, 2, 2, 4)


def test_random_shapes_known_when_the_step_runs():
    # A VAE's noise: tf.random_normal([tf.shape(mu)[0], latent]) was a TypeError; so was
    # tf.random_crop(x, [tf.shape(x)[0], 5, 5, 8]).
    mu = tf.placeholder(tf.float32, [None, 3])
    x = tf.placeholder(tf.float32, [None, 7, 7, 8])
    eps = tf.random_normal([tf.shape(mu)[0], 3])
    uniform = tf.random_uniform((tf.shape(mu)[0], 2), maxval=5.0)
    crop = tf.random_crop(x, [tf.shape(x)[0], 5, 5, 8])
    too_big = tf.random_crop(x, [tf.shape(x)[0], 9, 5, 8])
    with tf.Session() as s:
        assert s.run(eps, {mu: np.zeros((4, 3))}).shape == (4, 3)
        assert s.run(uniform, {mu: np.zeros((5, 3))}).max() < 5
        assert s.run(crop, {x: np.ones((2, 7, 7, 8))}).shape == (2, 5, 5, 8)
        with pytest.raises(tf.errors.InvalidArgumentError, match="does not fit"):
            s.run(too_big, {x: np.ones((2, 7, 7, 8))})
