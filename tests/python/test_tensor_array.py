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


def _numerical_grad(f, x0, eps=1e-3):
    num = np.zeros_like(x0)
    for i in np.ndindex(*x0.shape):
        e = np.zeros_like(x0)
        e[i] = eps
        num[i] = (f(x0 + e) - f(x0 - e)) / (2 * eps)
    return num


def test_dynamic_size_array_grows_in_a_while_loop_and_differentiates():
    # TF1's idiom: an array of size 0 that the loop grows, one write per step, then stack().
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.Variable(np.array([0.5, -1.0, 2.0], np.float32))
    n = tf.shape(x)[0]
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, clear_after_read=False,
                        infer_shape=True)
    ids = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[])

    def body(i, h, ta, ids):
        h = tf.tanh(tf.gather(x, i) * w + h)
        return i + 1, h, ta.write(i, h * 2.0), ids.write(i, i * i)
    _, _, ta, ids = tf.while_loop(lambda i, *_: i < n, body,
                                  [tf.constant(0), tf.zeros([3]), ta, ids])
    out, squares = ta.stack(), ids.stack()
    assert out.shape.as_list() == [None, 3]
    loss = tf.reduce_sum(out * out)
    (gw,) = tf.gradients(loss, [w])
    xv = np.random.RandomState(1).randn(4, 3).astype(np.float32)

    def numpy_out(wv, xv=xv):
        h, rows = np.zeros(3), []
        for row in xv:
            h = np.tanh(row * wv + h)
            rows.append(h * 2.0)
        return np.array(rows).reshape(-1, 3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, sq, gv, size = sess.run([out, squares, gw, ta.size()], {x: xv})
        empty, empty_grad = sess.run([out, gw], {x: np.zeros((0, 3), np.float32)})
    w0 = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(got, numpy_out(w0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(sq, [0, 1, 4, 9])
    assert size == 4
    num = _numerical_grad(lambda wv: (numpy_out(wv) ** 2).sum(), w0)
    np.testing.assert_allclose(gv, num, rtol=1e-3, atol=1e-4)
    assert empty.shape == (0, 3)                       # no iteration: an empty array
    np.testing.assert_array_equal(empty_grad, [0, 0, 0])


def test_tensor_size_array_read_in_a_loop_and_written_sparsely():
    # size from the data (a tensor): unstack the inputs, read them in the loop, and write
    # every other step into a second array; the rows not written stay zero.
    x = tf.placeholder(tf.float32, [None, 2])
    n = tf.shape(x)[0]
    inputs = tf.TensorArray(tf.float32, size=n).unstack(x)
    out = tf.TensorArray(tf.float32, size=n, element_shape=[2])

    def body(t, acc, out):
        acc = acc + inputs.read(t)
        return t + 2, acc, out.write(t, acc)
    _, acc, out = tf.while_loop(lambda t, acc, out: t < n, body,
                                [tf.constant(0), tf.zeros([2]), out], back_prop=False)
    xv = np.arange(10, dtype=np.float32).reshape(5, 2)
    with tf.Session() as sess:
        got, total = sess.run([out.stack(), acc], {x: xv})
    np.testing.assert_allclose(total, xv[0] + xv[2] + xv[4])
    np.testing.assert_allclose(got, [xv[0], [0, 0], xv[0] + xv[2], [0, 0],
                                     xv[0] + xv[2] + xv[4]])


def test_dynamic_size_array_outside_loops_grows_past_its_size():
    ta = tf.TensorArray(tf.float32, size=1, dynamic_size=True)
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    ta = ta.write(3, v * 3.0).write(0, v)
    ta = ta.scatter([5, 1], [[7.0, 8.0], [9.0, 10.0]])
    stacked = ta.stack()
    (gv,) = tf.gradients(tf.reduce_sum(stacked * stacked), [v])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, size, third, g = sess.run([stacked, ta.size(), ta.read(3), gv])
    np.testing.assert_allclose(got, [[1, 2], [9, 10], [0, 0], [3, 6], [0, 0], [7, 8]])
    assert size == 6
    np.testing.assert_allclose(third, [3, 6])
    np.testing.assert_allclose(g, 2 * np.array([1.0, 2.0]) * (1 + 9))


def test_dynamic_size_array_in_a_loop_is_refused_where_it_cannot_work():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=[2])
    with pytest.raises(ValueError, match="reads and writes"):
        tf.while_loop(lambda i, ta: i < 3,
                      lambda i, ta: (i + 1, ta.write(i, ta.read(0))), [0, ta])
    with pytest.raises(ValueError, match="one write per"):
        tf.while_loop(lambda i, ta: i < 3,
                      lambda i, ta: (i + 1, ta.write(i, [1.0, 2.0]).write(i, [3.0, 4.0])),
                      [0, ta])
    # Rows of a size known only when the step runs are taken (as TF1's); of unknown rank not.
    unknown = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    x = tf.placeholder(tf.float32, [None])
    _, grown = tf.while_loop(lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i, x)),
                             [0, unknown])
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(grown.stack(), {x: [1.0, 2.0]}), [[1, 2]] * 3)
    anything = tf.placeholder(tf.float32)
    with pytest.raises(ValueError, match="element_shape"):
        tf.while_loop(lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i, anything)),
                      [0, tf.TensorArray(tf.float32, size=0, dynamic_size=True)])


def test_fixed_size_array_without_element_shape_in_a_loop():
    """TF1 code gives a size and no element_shape (tf.TensorArray(tf.float32, size=5)) and fills
    it in a while_loop: the array grows as a dynamic one, padded to its size."""
    def body(i, ta):
        return i + 1, ta.write(i, tf.cast(i, tf.float32) ** 2)
    _, ta = tf.while_loop(lambda i, ta: i < 5, body, [0, tf.TensorArray(tf.float32, size=5)])
    short = tf.TensorArray(tf.float32, size=4).write(1, [1.0, 2.0])
    with tf.Session() as s:
        got, size, padded = s.run([ta.stack(), ta.size(), short.stack()])
    np.testing.assert_allclose(got, [0, 1, 4, 9, 16])
    assert size == 5
    np.testing.assert_allclose(padded, [[0, 0], [1, 2], [0, 0], [0, 0]])
