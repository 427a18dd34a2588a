"""TF1's ways of changing a gradient: tf.RegisterGradient with Graph.gradient_override_map,
tf.custom_gradient, tf.NoGradient; each checked against the value the new gradient must give."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


@tf.RegisterGradient("TestReverseGrad")
def _reverse_grad(op, grad):
    return -2.0 * grad


def test_gradient_override_map_reverses_an_identity():
    x = tf.placeholder(tf.float32, [3])
    g = tf.get_default_graph()
    with g.gradient_override_map({"Identity": "TestReverseGrad"}):
        y = tf.identity(x)
    z = tf.identity(x)  # outside the map: its own gradient
    (dx,) = tf.gradients(tf.reduce_sum(y * y) + tf.reduce_sum(z), [x])
    with tf.Session() as sess:
        got = sess.run(dx, {x: [1.0, 2.0, 3.0]})
    # d/dx sum(y^2) = 2y, reversed and doubled by the override: -4x; plus 1 from z.
    np.testing.assert_allclose(got, [-3.0, -7.0, -11.0])


def test_guided_relu_style_override_sees_the_op():
    @tf.RegisterGradient("TestGuidedRelu")
    def _guided(op, grad):
        assert op.type == "Relu"
        return tf.where(grad > 0.0, grad * tf.cast(op.outputs[0] > 0.0, tf.float32),
                        tf.zeros_like(grad))

    x = tf.placeholder(tf.float32, [4])
    with tf.get_default_graph().gradient_override_map({"Relu": "TestGuidedRelu"}):
        y = tf.nn.relu(x)
    (dx,) = tf.gradients(y, [x], grad_ys=[tf.constant([1.0, -1.0, 1.0, 1.0])])
    with tf.Session() as sess:
        got = sess.run(dx, {x: [1.0, 2.0, -3.0, 4.0]})
    np.testing.assert_allclose(got, [1.0, 0.0, 0.0, 1.0])


def test_custom_gradient_clips_and_trains():
    @tf.custom_gradient
    def clip_grad(x):
        def grad(dy):
            return tf.clip_by_value(dy, -0.5, 0.5)
        return tf.identity(x), grad

    x = tf.placeholder(tf.float32, [3])
    y = clip_grad(x * 3.0)
    (dx,) = tf.gradients(tf.reduce_sum(y * y), [x])
    with tf.Session() as sess:
        yv, got = sess.run([y, dx], {x: [0.05, 1.0, -2.0]})
    np.testing.assert_allclose(yv, [0.15, 3.0, -6.0], rtol=1e-6)
    # dy = 2y, clipped to [-0.5, 0.5], then times 3 through x * 3.
    np.testing.assert_allclose(got, [0.9, 1.5, -1.5], rtol=1e-6)


def test_custom_gradient_two_arguments_and_a_straight_through_round():
    @tf.custom_gradient
    def round_st(x):
        return tf.round(x), lambda dy: dy  # straight-through estimator

    @tf.custom_gradient
    def mul(a, b):
        def grad(dy):
            return dy * b * 10.0, dy * a  # a's gradient scaled on purpose
        return a * b, grad

    a = tf.placeholder(tf.float32, [2])
    b = tf.placeholder(tf.float32, [2])
    r = round_st(a)
    m = mul(a, b)
    da, db, dr = tf.gradients(tf.reduce_sum(m), [a, b])[0], \
        tf.gradients(tf.reduce_sum(m), [b])[0], tf.gradients(tf.reduce_sum(r), [a])[0]
    with tf.Session() as sess:
        got = sess.run([r, da, db, dr], {a: [1.4, 2.6], b: [3.0, 4.0]})
    np.testing.assert_allclose(got[0], [1.0, 3.0])
    np.testing.assert_allclose(got[1], [30.0, 40.0])
    np.testing.assert_allclose(got[2], [1.4, 2.6], rtol=1e-6)
    np.testing.assert_allclose(got[3], [1.0, 1.0])


def test_custom_gradient_in_an_optimizer_step():
    @tf.custom_gradient
    def scale_grad(x):
        return tf.identity(x), lambda dy: dy * 0.0  # freezes what comes before

    w = tf.Variable([1.0, 2.0])
    loss = tf.reduce_sum(tf.square(scale_grad(w)))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [1.0, 2.0])


def test_errors_name_the_gradient():
    with pytest.raises(KeyError, match="TestReverseGrad"):
        tf.RegisterGradient("TestReverseGrad")(lambda op, g: g)
    x = tf.placeholder(tf.float32, [2])
    with tf.get_default_graph().gradient_override_map({"Identity": "NotRegisteredAnywhere"}):
        y = tf.identity(x)
    with pytest.raises(Exception, match="NotRegisteredAnywhere"):
        tf.gradients(tf.reduce_sum(y), [x])

    @tf.custom_gradient
    def bad(x):
        return tf.identity(x), lambda dy: [dy, dy]

    z = bad(x)
    with pytest.raises(Exception, match="returned 2 gradient"):
        tf.gradients(tf.reduce_sum(z), [x])
    with pytest.raises(TypeError):
        with tf.get_default_graph().gradient_override_map({"Identity": 3}):
            pass


def test_no_gradient_stops_the_path():
    tf.NoGradient("TestNoGradOpTypeThatIsNotUsed")
    tf.NotDifferentiable("TestOtherUnusedType")
    x = tf.placeholder(tf.float32, [2])
    (dx,) = tf.gradients(tf.reduce_sum(x * 2.0), [x])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dx, {x: [1.0, 1.0]}), [2.0, 2.0])
