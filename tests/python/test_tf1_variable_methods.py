"""TF1's Variable members and state updates that TF1 programs reach: initialized_value and
initial_value, count_up_to (an atomic kernel), the scatter family (mul/div/max/min, batch
updates, and updates that leave inf/NaN rows alone), and moving averages that start from a
restored value."""
import os

import numpy as np
import pytest

import shardflow as tf


def test_initialized_value_starts_one_variable_from_another():
    with tf.Graph().as_default():
        w = tf.Variable(tf.random_normal([4], seed=3), name="w")
        w2 = tf.Variable(w.initialized_value() * 2.0, name="w2")
        assert w.initial_value.dtype == tf.float32
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())     # one run initialises both
            a, b = sess.run([w, w2])
            np.testing.assert_allclose(b, 2.0 * a)
            sess.run(w.assign([1.0, 2.0, 3.0, 4.0]))
            # Initialized: the current value, not the initial one.
            np.testing.assert_allclose(sess.run(w.initialized_value()), [1, 2, 3, 4])


def test_count_up_to_increments_atomically_then_stops():
    with tf.Graph().as_default():
        c = tf.Variable(0, name="c")
        up = c.count_up_to(3)
        c64 = tf.Variable(np.int64(7), name="c64")
        up64 = tf.count_up_to(c64, 9)
        with pytest.raises(TypeError, match="int32 or int64"):
            tf.count_up_to(tf.Variable(0.0), 3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert [sess.run(up) for _ in range(3)] == [0, 1, 2]
            with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 3"):
                sess.run(up)
            assert sess.run(c) == 3                          # left at the limit
            assert sess.run(up64) == 7 and sess.run(c64) == 8
            assert up64.dtype == tf.int64


def test_scatter_update_leaves_other_rows_alone_and_takes_the_last_duplicate():
    with tf.Graph().as_default():
        e = tf.Variable(np.array([[1., 2.], [np.nan, np.inf], [np.inf, 6.]], np.float32))
        fix = tf.scatter_update(e, [1, 1], [[7., 8.], [9., 10.]])
        nd = tf.Variable(np.array([np.nan, 1., np.inf], np.float32))
        fix_nd = tf.scatter_nd_update(nd, [[0]], [5.])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(fix), [[1, 2], [9, 10], [np.inf, 6]])
            np.testing.assert_array_equal(sess.run(fix_nd), [5, 1, np.inf])


def test_scatter_mul_div_max_min_and_variable_methods():
    with tf.Graph().as_default():
        m = tf.Variable(np.array([[1., 2.], [3., 4.]], np.float32))
        mul = tf.scatter_mul(m, [0, 0], [[2., 3.], [2., 1.]])
        div = tf.scatter_div(m, [1], [[3., 8.]])
        hi = tf.scatter_max(m, [1, 1], [[10., 0.], [-1., 5.]])
        lo = tf.scatter_min(m, [0], [[0., 100.]])
        v = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
        slices = tf.IndexedSlices(tf.constant([[10., 10.]]), tf.constant([2]))
        add = v.scatter_add(slices)
        rows = v.sparse_read([2, 0])
        b = tf.Variable(np.zeros([2, 3], np.float32))
        batch = tf.batch_scatter_update(b, [[0, 2], [1, 1]], [[1., 2.], [3., 4.]])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(mul), [[4, 6], [3, 4]])
            np.testing.assert_allclose(sess.run(div), [[4, 6], [1, 0.5]])
            np.testing.assert_allclose(sess.run(hi), [[4, 6], [10, 5]])
            np.testing.assert_allclose(sess.run(lo), [[0, 6], [10, 5]])
            np.testing.assert_allclose(sess.run(add), [[0, 1], [2, 3], [14, 15]])
            np.testing.assert_allclose(sess.run(rows), [[14, 15], [0, 1]])
            np.testing.assert_allclose(sess.run(batch), [[1, 0, 2], [0, 4, 0]])


def test_moving_average_starts_from_a_restored_value(tmp_path):
    path = os.path.join(str(tmp_path), "model")
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        saver = tf.train.Saver([w])
        with tf.Session() as sess:
            sess.run(w.initializer)
            sess.run(w.assign([10.0, 20.0]))
            saver.save(sess, path)
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        ema = tf.train.ExponentialMovingAverage(0.9)
        update = ema.apply([w])
        with tf.Session() as sess:
            tf.train.Saver([w]).restore(sess, path)          # fine-tuning: restore, then
            sess.run(tf.variables_initializer([ema.average(w)]))   # start the averages
            np.testing.assert_allclose(sess.run(ema.average(w)), [10, 20])
            sess.run(w.assign([0.0, 0.0]))
            sess.run(update)
            np.testing.assert_allclose(sess.run(ema.average(w)), [9, 18], rtol=1e-6)


def _numpy_adam(w, grad_fn, steps, lr=0.1, b1=0.9, b2=0.999, eps=1e-8, m=None, v=None, t0=0):
    m = np.zeros_like(w) if m is None else m
    v = np.zeros_like(w) if v is None else v
    for t in range(t0 + 1, t0 + steps + 1):
        g = grad_fn(w)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
    return w, m, v


def test_adam_and_rmsprop_state_has_tf1_names_and_values(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        adam = tf.train.AdamOptimizer(0.1)
        step = adam.minimize(tf.reduce_sum(w * w))
        names = sorted(v.op.name for v in tf.global_variables())
        assert names == ["beta1_power", "beta2_power", "w", "w/Adam", "w/Adam_1"]
        b1, b2 = adam._get_beta_accumulators()
        assert (adam.get_slot(w, "m").op.name, adam.get_slot(w, "v").op.name) == \
            ("w/Adam", "w/Adam_1")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(step)
            got_w, got_m, got_v, p1, p2 = sess.run([w, adam.get_slot(w, "m"),
                                                    adam.get_slot(w, "v"), b1, b2])
            tf.train.Saver().save(sess, str(tmp_path / "tf1"))
    want_w, want_m, want_v = _numpy_adam(np.float32([1, 2]), lambda x: 2 * x, 3)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-5)
    np.testing.assert_allclose([got_m, got_v], [want_m, want_v], rtol=1e-4)
    np.testing.assert_allclose([p1, p2], [0.9 ** 4, 0.999 ** 4], rtol=1e-6)   # TF1's beta^(t+1)
    # A checkpoint with TF1's names (w, w/Adam, w/Adam_1, beta1_power, beta2_power) resumes
    # the optimizer where it was: three more steps equal six in one go.
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        step = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(w * w))
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, str(tmp_path / "tf1"))
            for _ in range(3):
                sess.run(step)
            np.testing.assert_allclose(sess.run(w), _numpy_adam(np.float32([1, 2]),
                                                                lambda x: 2 * x, 6)[0], rtol=1e-5)
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        tf.train.RMSPropOptimizer(0.1, momentum=0.9).minimize(tf.reduce_sum(w * w))
        assert sorted(v.op.name for v in tf.global_variables()) == \
            ["w", "w/RMSProp", "w/RMSProp_1"]


def test_layers_inherit_the_custom_getter_and_partitioner_of_their_variable_scope():
    seen = []

    def float32_storage(getter, name, *args, **kwargs):
        seen.append(name)
        return getter(name, *args, **kwargs)

    with tf.Graph().as_default():
        with tf.variable_scope("net", custom_getter=float32_storage):
            tf.layers.dense(tf.zeros([2, 3]), 4, name="fc")
        with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(2)):
            tf.layers.dense(tf.zeros([2, 6]), 4, name="proj")
        parts = [v.op.name for v in tf.global_variables() if v.op.name.startswith("emb/")]
    assert seen == ["net/fc/kernel", "net/fc/bias"]
    assert "emb/proj/kernel/part_0" in parts and "emb/proj/kernel/part_1" in parts, parts
