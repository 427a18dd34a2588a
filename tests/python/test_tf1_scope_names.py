"""Variable and name scopes as TF 1.15 names them, which GAN, siamese and slim programs rely on
to share (or not share) weights: default_name made unique per entry of the enclosing scope,
unnamed contrib/slim layers found again when a reusing scope is re-entered, captured scopes
re-entered under a new name scope, auxiliary_name_scope=False, make_template's unique names
(Note [Default scope names] in shardflow/variable_scope.py)."""
import numpy as np
import pytest

import shardflow as tf

slim = tf.contrib.slim


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def names(prefix=""):
    return sorted(v.name for v in tf.global_variables() if v.name.startswith(prefix))


def block(x, scope=None):
    with tf.variable_scope(scope, default_name="block"):
        return tf.matmul(x, tf.get_variable("w", [3, 3]))


def test_default_name_is_made_unique_so_two_blocks_do_not_share_weights():
    x = tf.ones([1, 3])
    with tf.variable_scope("net", reuse=tf.AUTO_REUSE):
        block(block(x))
    assert names() == ["net/block/w:0", "net/block_1/w:0"]
    block(x)
    block(x)
    assert names("block") == ["block/w:0", "block_1/w:0"]
    # A scope entered by name starts its default names again each time it is entered.
    for _ in range(2):
        with tf.variable_scope("twice", reuse=tf.AUTO_REUSE):
            block(x)
    assert names("twice") == ["twice/block/w:0"]


def test_unnamed_contrib_layers_are_found_again_when_a_reusing_scope_is_reentered():
    x = tf.ones([2, 3])

    def disc(x, reuse):
        with tf.variable_scope("D", reuse=reuse):
            h = tf.contrib.layers.fully_connected(x, 4)
            h = slim.fully_connected(h, 4)
            return tf.layers.dense(h, 1)

    a = disc(x, tf.AUTO_REUSE)
    b = disc(x * 2.0, tf.AUTO_REUSE)
    c = disc(x, True)
    assert names() == ["D/dense/bias:0", "D/dense/kernel:0",
                       "D/fully_connected/biases:0", "D/fully_connected/weights:0",
                       "D/fully_connected_1/biases:0", "D/fully_connected_1/weights:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        va, vc = sess.run([a, c])
        np.testing.assert_allclose(va, vc)
        assert sess.run(b).shape == (2, 1)


def test_slim_conv_with_batch_norm_reused_as_a_gan_discriminator():
    x = tf.zeros([1, 4, 4, 3])

    def disc(x, reuse):
        with tf.variable_scope("disc", reuse=reuse):
            return slim.conv2d(x, 4, [3, 3], normalizer_fn=slim.batch_norm, scope="conv1")

    disc(x, False)
    disc(x, True)
    assert names() == ["disc/conv1/BatchNorm/beta:0", "disc/conv1/BatchNorm/moving_mean:0",
                       "disc/conv1/BatchNorm/moving_variance:0", "disc/conv1/weights:0"]


def test_captured_scope_reentered_under_a_new_name_scope_and_auxiliary_name_scope():
    x = tf.ones([1], name="x")
    with tf.variable_scope("outer") as sc:
        w = tf.get_variable("w", [1])
        assert sc.original_name_scope == "outer/"
    with tf.variable_scope(sc, reuse=True):
        assert tf.get_variable("w", [1]) is w
        assert tf.identity(x, name="o").name == "outer_1/o:0"
    with tf.variable_scope("outer", auxiliary_name_scope=False) as again:
        assert tf.identity(x, name="o2").name == "o2:0"
        with tf.name_scope(again.original_name_scope):
            assert tf.identity(x, name="c").name == "outer/c:0"


def test_make_template_scopes_are_unique_and_reused():
    x = tf.ones([1, 3])
    a = tf.make_template("t", lambda x: tf.layers.dense(x, 2))
    b = tf.make_template("t", lambda x: slim.fully_connected(x, 2))
    a(x), a(x), b(x), b(x)
    assert names() == ["t/dense/bias:0", "t/dense/kernel:0",
                       "t_1/fully_connected/biases:0", "t_1/fully_connected/weights:0"]
