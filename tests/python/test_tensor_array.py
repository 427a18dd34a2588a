"""tf.TensorArray (shardflow/tensor_array.py): in graph code and carried by while_loop, with
gradients to what was written."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_write_read_stack_gather_scatter_concat():
    ta = tf.TensorArray(tf.float32, size=3, element_shape=[2])
    ta = ta.write(0, [1.0, 2.0]).write(2, [5.0, 6.0])
    sc = tf.TensorArray(tf.float32, size=4).scatter([3, 1], [[1.0, 1.0], [2.0, 2.0]])
    un = tf.TensorArray(tf.float32, size=2).unstack(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    with tf.Session() as sess:
        stack, r2, g, scs, cat, size = sess.run(
            [ta.stack(), ta.read(2), ta.gather([2, 0]), sc.stack(), un.concat(), ta.size()])
    np.testing.assert_array_equal(stack, [[1, 2], [0, 0], [5, 6]])
    np.testing.assert_array_equal(r2, [5, 6])
    np.testing.assert_array_equal(g, [[5, 6], [1, 2]])
    np.testing.assert_array_equal(scs, [[0, 0], [2, 2], [0, 0], [1, 1]])
    np.testing.assert_array_equal(cat, [0, 1, 2, 3, 4, 5])
    assert size == 3
    with pytest.raises(ValueError, match="known when the graph is built"):
        tf.TensorArray(tf.float32, size=tf.placeholder(tf.int32, []))


def test_while_loop_collects_an_rnn_and_differentiates():
    steps, batch, units = 5, 2, 3
    x = tf.placeholder(tf.float32, [steps, batch, units])
    w = tf.Variable(np.eye(units, dtype=np.float32) * 0.5)
    ta = tf.TensorArray(tf.float32, size=steps, element_shape=[batch, units])

    def body(t, h, ta):
        h = tf.tanh(tf.gather(x, t) + tf.matmul(h, w))
        return t + 1, h, ta.write(t, h)
    _, _, out_ta = tf.while_loop(lambda t, h, ta: t < steps, body,
                                 [tf.constant(0), tf.zeros([batch, units]), ta])
    outputs = out_ta.stack()
    loss = tf.reduce_sum(tf.square(outputs))
    (gw,) = tf.gradients(loss, [w])
    xv = np.random.RandomState(0).randn(steps, batch, units).astype(np.float32)

    def numpy_loss(wv):
        h = np.zeros((batch, units))
        total = 0.0
        for t in range(steps):
            h = np.tanh(xv[t] + h @ wv)
            total += (h ** 2).sum()
        return total
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, lv, gv = sess.run([outputs, loss, gw], {x: xv})
    w0 = np.eye(units) * 0.5
    np.testing.assert_allclose(lv, numpy_loss(w0), rtol=1e-5)
    num = np.zeros_like(w0)
    for i in np.ndindex(*w0.shape):
        e = np.zeros_like(w0)
        e[i] = 1e-4
        num[i] = (numpy_loss(w0 + e) - numpy_loss(w0 - e)) / 2e-4
    np.testing.assert_allclose(gv, num, rtol=1e-3, atol=1e-4)
    assert got.shape == (steps, batch, units)
