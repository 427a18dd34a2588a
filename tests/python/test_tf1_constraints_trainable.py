"""TF1's variable constraints and tf.layers' trainable=False: get_variable(constraint=...),
Variable(constraint=...) and the layers' kernel_constraint/bias_constraint are projections
every optimizer applies after its update; a layer made with trainable=False keeps its
variables out of TRAINABLE_VARIABLES (and so out of minimize)."""

import numpy as np
import pytest

import shardflow as tf


def _clip01(t):
    return tf.clip_by_value(t, 0.0, 1.0)


@pytest.mark.parametrize("make_opt", [
    lambda: tf.train.GradientDescentOptimizer(0.1),
    lambda: tf.train.AdamOptimizer(0.1),             # the engine's own update
    lambda: tf.train.FtrlOptimizer(0.1),             # a composite (Python-built) update
    lambda: tf.train.MomentumOptimizer(0.1, 0.9),
])
@pytest.mark.parametrize("use_apply_gradients", [False, True])
def test_constraints_are_applied_after_each_update(make_opt, use_apply_gradients):
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=np.array([0.2, 0.5, 0.9], np.float32),
                            constraint=_clip01)
        w = tf.Variable(np.array([[3.0, 0.0], [4.0, 1.0]], np.float32),
                        constraint=lambda t: tf.clip_by_norm(t, 1.0, axes=[0]))
        free = tf.Variable(np.array([0.5], np.float32))
        loss = tf.reduce_sum(tf.square(v - 5.0)) + tf.reduce_sum(w * 3.0) + \
            tf.reduce_sum(tf.square(free - 5.0))
        opt = make_opt()
        step = opt.apply_gradients(opt.compute_gradients(loss)) if use_apply_gradients \
            else opt.minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(20):
                sess.run(step)
            vv, wv, fv = sess.run([v, w, free])
    assert v.constraint is _clip01
    assert (vv >= 0).all() and (vv <= 1.0).all() and vv[2] == 1.0   # pushed up, clipped at 1
    assert (np.linalg.norm(wv, axis=0) <= 1.0 + 1e-5).all()
    assert fv[0] > 0.5                                           # unconstrained: moves freely


def test_one_step_is_the_projection_of_the_plain_update():
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=np.array([0.2, 0.95], np.float32),
                            constraint=_clip01)
        loss = tf.reduce_sum(tf.square(v - 5.0))
        step = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            got = sess.run(v)
    plain = np.array([0.2, 0.95]) - 0.01 * 2 * (np.array([0.2, 0.95]) - 5.0)
    np.testing.assert_allclose(got, np.clip(plain, 0, 1), rtol=1e-6)   # [0.296, 1.0]


def test_layer_constraints():
    rng = np.random.RandomState(0)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 6])
        max_norm = (lambda t: tf.clip_by_norm(t, 0.3, axes=[0]))
        h = tf.layers.dense(x, 5, kernel_constraint=max_norm,
                            bias_constraint=lambda b: tf.maximum(b, 0.0), name="fc")
        img = tf.reshape(x, [-1, 1, 6, 1])
        whole_norm = (lambda t: tf.clip_by_norm(t, 0.3))
        c = tf.layers.conv2d(img, 3, (1, 3), kernel_constraint=whole_norm, name="conv")
        seq = tf.reshape(x, [-1, 6, 1])
        c1 = tf.layers.conv1d(seq, 2, 3, kernel_constraint=whole_norm, name="conv1d")
        loss = -tf.reduce_sum(h) - tf.reduce_sum(c) - tf.reduce_sum(c1)
        step = tf.train.AdamOptimizer(0.1).minimize(loss)
        by_name = {v.op.name: v for v in tf.global_variables()}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(5):
                sess.run(step, {x: rng.rand(8, 6).astype(np.float32)})
            kernel, bias, conv, conv1 = sess.run([by_name["fc/kernel"], by_name["fc/bias"],
                                                  by_name["conv/kernel"],
                                                  by_name["conv1d/kernel"]])
    assert (np.linalg.norm(kernel, axis=0) <= 0.3 + 1e-5).all()
    assert (bias >= 0).all()
    assert np.linalg.norm(conv) <= 0.3 + 1e-5 and np.linalg.norm(conv1) <= 0.3 + 1e-5
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="constraint must be a function"):
            tf.get_variable("bad", [2], constraint="max_norm")
        with pytest.raises(ValueError, match="kernel_constraint must be a function"):
            tf.layers.Dense(2, kernel_constraint=3)


def test_layers_with_trainable_false():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        frozen = tf.layers.dense(x, 3, trainable=False, name="frozen")
        img = tf.reshape(x, [-1, 2, 2, 1])
        tf.layers.conv2d(img, 2, 1, trainable=False, name="frozen_conv")
        tf.layers.conv2d_transpose(img, 2, 1, trainable=False, name="frozen_deconv")
        tf.layers.Dense(2, trainable=False, name="frozen_class")(x)
        live = tf.layers.dense(frozen, 1, name="live")
        trainable = sorted(v.op.name for v in tf.trainable_variables())
        assert trainable == ["live/bias", "live/kernel"]
        assert len(tf.global_variables()) == 10
        # minimize leaves the frozen layer alone.
        step = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(live))
        frozen_kernel = [v for v in tf.global_variables() if v.op.name == "frozen/kernel"][0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(frozen_kernel)
            sess.run(step, {x: np.ones((2, 4), np.float32)})
            np.testing.assert_array_equal(sess.run(frozen_kernel), before)


def test_conv2d_takes_tf1s_positional_order():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5, 5, 1])
        # inputs, filters, kernel_size, strides, padding, data_format, dilation_rate, activation
        y = tf.layers.conv2d(x, 2, 3, (1, 1), "same", "channels_last", (2, 2), tf.nn.relu)
        assert y.shape.as_list() == [None, 5, 5, 2]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = sess.run(y, {x: np.random.RandomState(1).randn(1, 5, 5, 1)})
        assert (out >= 0).all()
