"""tf.layers variables live in variable scopes, as TF1's (Note [Layer variables and variable
scopes] in shardflow/layers.py). Regression: a layer named "conv1" inside
variable_scope("net", reuse=True) made new variables net_1/conv1/... instead of reusing
net/conv1/..., so an evaluation tower computed with untrained weights."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def model(images):
    net = tf.layers.conv2d(images, 4, 3, padding="same", activation=tf.nn.relu, name="conv1")
    net = tf.layers.flatten(tf.layers.max_pooling2d(net, 2, 2))
    net = tf.layers.dense(net, 8, activation=tf.nn.relu)        # unnamed: dense
    return tf.layers.dense(net, 3)                               # unnamed: dense_1


def test_reused_scope_shares_named_and_unnamed_layers():
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    with tf.variable_scope("net"):
        a = model(x)
    with tf.variable_scope("net", reuse=True):
        b = model(x)
    names = [v.op.name for v in tf.global_variables()]
    assert names == ["net/conv1/kernel", "net/conv1/bias", "net/dense/kernel", "net/dense/bias",
                     "net/dense_1/kernel", "net/dense_1/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        xv = np.random.rand(2, 8, 8, 1).astype(np.float32)
        av, bv = sess.run([a, b], {x: xv})
    np.testing.assert_array_equal(av, bv)


def test_reuse_argument_auto_reuse_and_errors():
    x = tf.placeholder(tf.float32, [None, 3])
    y1 = tf.layers.dense(x, 2, name="shared")
    y2 = tf.layers.dense(x, 2, name="shared", reuse=True)
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        z1 = tf.layers.dense(x, 2, name="d")
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        z2 = tf.layers.dense(x, 2, name="d")
    assert len(tf.global_variables()) == 4
    with pytest.raises(ValueError, match="already exists"):
        tf.layers.dense(x, 2, name="shared")
    with pytest.raises(ValueError, match="does not exist"):
        with tf.variable_scope("fresh", reuse=True):
            tf.layers.dense(x, 2, name="never_made")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        xv = np.ones((1, 3), np.float32)
        r = sess.run([y1, y2, z1, z2], {x: xv})
    np.testing.assert_array_equal(r[0], r[1])
    np.testing.assert_array_equal(r[2], r[3])


def test_layer_objects_nest_their_layers_and_keep_their_variables():
    x = tf.placeholder(tf.float32, [None, 3])
    layer = tf.layers.Dense(2, name="proj")
    layer(x)
    layer(x)                                    # built once
    with tf.variable_scope("outer"):
        tf.layers.dense(x, 2)
    assert [v.op.name for v in tf.global_variables()] == [
        "proj/kernel", "proj/bias", "outer/dense/kernel", "outer/dense/bias"]


def test_variable_collections_by_scope_and_empty_var_list():
    # Regression: tf.get_collection(TRAINABLE_VARIABLES, scope="discriminator") returned [] and
    # minimize(var_list=[]) then trained every variable (a GAN's discriminator step moved the
    # generator too).
    x = tf.placeholder(tf.float32, [None, 2])
    with tf.variable_scope("generator"):
        g = tf.layers.dense(x, 2)
    with tf.variable_scope("discriminator"):
        d = tf.layers.dense(g, 1)
    local = tf.Variable(0, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="counter")
    d_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="discriminator")
    assert [v.op.name for v in d_vars] == ["discriminator/dense/kernel", "discriminator/dense/bias"]
    assert len(tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)) == 4
    assert tf.get_collection(tf.GraphKeys.LOCAL_VARIABLES) == [local]
    loss = tf.reduce_mean(tf.square(d))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=d_vars)
    with pytest.raises(ValueError, match="No variables to optimize"):
        tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, var_list=tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="nothing"))
    g_kernel = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="generator")[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(g_kernel)
        sess.run(step, {x: np.ones((4, 2), np.float32)})
        np.testing.assert_array_equal(sess.run(g_kernel), before)   # the generator did not move


def test_contrib_layers_reuse_their_scope():
    x = tf.placeholder(tf.float32, [None, 3])
    tf.contrib.layers.fully_connected(x, 2, scope="fc")
    tf.contrib.layers.fully_connected(x, 2, scope="fc", reuse=True)
    images = tf.placeholder(tf.float32, [None, 4, 4, 1])
    tf.contrib.layers.conv2d(images, 2, 3, scope="conv")
    tf.contrib.layers.conv2d(images, 2, 3, scope="conv", reuse=True)
    assert [v.op.name for v in tf.global_variables()] == [
        "fc/weights", "fc/biases", "conv/weights", "conv/biases"]


def test_unnamed_tf_layers_after_keras_layers_take_free_names():
    """Regression: tf.layers.dense after a Keras Dense in one graph failed with "Variable
    dense/kernel already exists" (the two count their default names apart); TF1 builds both."""
    from shardflow import keras
    x = tf.placeholder(tf.float32, [None, 4])
    keras.layers.Dense(3)(x)
    y = tf.layers.dense(x, 2)
    keras.layers.Dense(3)(x)
    names = [v.name for v in tf.global_variables()]
    assert len(names) == len(set(names)) == 6
    assert y.shape.as_list() == [None, 2]
    assert "dense_1/kernel:0" in names
    kernel = [v for v in tf.global_variables() if v.name == "dense_1/kernel:0"][0]
    assert kernel.shape.as_list() == [4, 2]


def test_tf_layers_classes_refuse_a_keyword_they_do_not_understand():
    # Conv1D, the pooling and 3-D classes swallowed any keyword (a misspelled one included)
    for make in (lambda **k: tf.layers.Conv1D(4, 3, **k),
                 lambda **k: tf.layers.MaxPooling2D(2, 2, **k),
                 lambda **k: tf.layers.MaxPooling1D(2, 2, **k),
                 lambda **k: tf.layers.Conv3D(4, 3, **k),
                 lambda **k: tf.layers.MaxPooling3D(2, 2, **k)):
        with pytest.raises(TypeError, match="not understood: paddding"):
            make(paddding="same")
        make(dtype=tf.float32, _reuse=None)   # TF1's base Layer arguments
    with pytest.raises(ValueError, match="float32"):
        tf.layers.Conv1D(4, 3, dtype=tf.float16)
