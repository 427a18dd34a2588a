"""Layer options TF 1.15 programs use that shardflow refused before: batch normalization over
another axis than the last (channels_first / NCHW models: tf.layers, Keras, contrib/slim),
Keras BatchNormalization's beta/gamma regularizers, and Variable.load."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def _nchw_reference(xv, eps):
    mean = xv.mean((0, 2, 3), keepdims=True)
    var = xv.var((0, 2, 3), keepdims=True)
    return (xv - mean) / np.sqrt(var + eps)


def test_batch_norm_over_the_channels_of_nchw_inputs():
    xv = (np.random.RandomState(0).randn(4, 3, 5, 6) * 2 + 1).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 3, 5, 6])
    training = tf.placeholder(tf.bool, [])
    y_layers = tf.layers.batch_normalization(x, axis=1, training=training, momentum=0.5)
    y_contrib = tf.contrib.layers.batch_norm(x, data_format="NCHW", is_training=True,
                                             decay=0.5)
    y_nhwc = tf.layers.batch_normalization(tf.transpose(x, [0, 2, 3, 1]), training=True)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    moving = [v for v in tf.global_variables() if v.name == "batch_normalization/moving_mean:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b, c = s.run([y_layers, y_contrib, y_nhwc], {x: xv, training: True})
        ref = _nchw_reference(xv, 1e-3)
        np.testing.assert_allclose(a, ref, atol=1e-5)
        np.testing.assert_allclose(b, ref, atol=1e-5)
        np.testing.assert_allclose(c.transpose(0, 3, 1, 2), ref, atol=1e-5)
        s.run(updates, {x: xv, training: True})
        np.testing.assert_allclose(s.run(moving[0]), 0.5 * xv.mean((0, 2, 3)), rtol=1e-5)
        # Inference normalises each channel with the moving statistics, broadcast over H, W.
        inferred = s.run(y_layers, {x: xv, training: False})
        assert inferred.shape == xv.shape
    assert [v.shape.as_list() for v in tf.trainable_variables()][:2] == [[3], [3]]


def test_keras_channels_first_batch_norm_trains_with_regularizers():
    xv = np.random.RandomState(1).randn(32, 2, 4, 4).astype(np.float32) * 3 + 2
    yv = xv.mean((1, 2, 3)).reshape(-1, 1)
    tf.set_random_seed(1)
    model = tf.keras.Sequential([
        tf.keras.layers.BatchNormalization(axis=1, input_shape=(2, 4, 4),
                                           gamma_regularizer="l2", beta_regularizer="l1"),
        tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
    assert len(model.losses) == 2
    model.compile("sgd", "mse")
    history = model.fit(xv, yv, epochs=3, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert [w.shape for w in model.layers[0].get_weights()] == [(2,)] * 4


def test_variable_load_writes_a_value_in_the_session():
    v = tf.Variable([1.0, 2.0], name="v")
    with tf.Session() as s:
        s.run(v.initializer)
        v.load([3.0, 4.0], s)
        np.testing.assert_array_equal(s.run(v), [3.0, 4.0])
        with s.as_default():
            v.load(np.array([5.0, 6.0]))
            np.testing.assert_array_equal(v.eval(), [5.0, 6.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
            v.load([1.0, 2.0, 3.0], s)


def test_moving_variance_of_dense_inputs_is_the_biased_one_as_tf1s():
    # Regression: every batch norm updated moving_variance with the fused kernel's unbiased
    # variance; TF1's layers use the fused kernel only for 4-D inputs and nn.moments' biased
    # variance otherwise ([[0], [1], [2], [3]] with momentum 0: 1.25, not 1.667).
    dense = tf.constant([[0.0], [1.0], [2.0], [3.0]])
    image = tf.reshape(dense, [1, 2, 2, 1])
    tf.layers.batch_normalization(dense, momentum=0.0, training=True, name="dense")
    tf.layers.batch_normalization(image, momentum=0.0, training=True, name="image")
    tf.contrib.layers.batch_norm(dense, decay=0.0, is_training=True, scope="contrib")
    moving = {v.op.name.split("/")[0]: v for v in tf.global_variables()
              if v.op.name.endswith("moving_variance")}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
        np.testing.assert_allclose(s.run(moving["dense"]), [1.25], rtol=1e-6)
        np.testing.assert_allclose(s.run(moving["contrib"]), [1.25], rtol=1e-6)
        np.testing.assert_allclose(s.run(moving["image"]), [5.0 / 3.0], rtol=1e-6)
