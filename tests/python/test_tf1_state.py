"""TF1's module-level state and graph helpers (shardflow/state_composites.py): tf.assign & co.,
scatter updates, tuple/identity_n, make_template, colocate_with, get_seed, report_uninitialized_
variables, add_check_numerics_ops, hessians."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_assign_and_scatter_updates():
    v = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2))
    c = tf.Variable(0)
    m = tf.Variable(np.zeros([2, 3], np.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(tf.assign_add(c, 5)) == 5
        assert sess.run(tf.assign_sub(c, 2)) == 3
        assert sess.run(tf.assign(c, 9)) == 9
        np.testing.assert_array_equal(sess.run(tf.scatter_add(v, [0, 2, 0], [[1, 1], [2, 2], [3, 3]])),
                                      [[4, 5], [2, 3], [6, 7], [6, 7]])
        np.testing.assert_array_equal(sess.run(tf.scatter_sub(v, [3], [[6, 7]])),
                                      [[4, 5], [2, 3], [6, 7], [0, 0]])
        np.testing.assert_array_equal(sess.run(tf.scatter_update(v, [1, 3], [[9, 9], [8, 8]])),
                                      [[4, 5], [9, 9], [6, 7], [8, 8]])
        np.testing.assert_array_equal(sess.run(tf.scatter_nd_update(m, [[0, 1], [1, 2]], [5., 6.])),
                                      [[0, 5, 0], [0, 0, 6]])
        np.testing.assert_array_equal(sess.run(tf.scatter_nd_add(m, [[0, 1]], [1.])),
                                      [[0, 6, 0], [0, 0, 6]])
    with pytest.raises(TypeError, match="must be a variable"):
        tf.assign(tf.constant(1.0), 2.0)


def test_tuple_identity_n_collection_ref_and_colocation():
    a, b = tf.constant(1.0), tf.constant(2.0)
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0).op
    ta, tb = tf.tuple([a, b], control_inputs=[inc])
    ia, ib = tf.identity_n([a, b])
    ref = tf.get_collection_ref("my_things")
    ref.append(a)
    assert tf.get_collection("my_things") == [a]
    with tf.device("/cpu:0"):
        anchor = tf.constant(3.0)
    with tf.colocate_with(anchor):
        near = tf.constant(4.0)
    assert "CPU:0" in near.op.device.upper()
    with tf.container("c1"):
        pass
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run([ta, tb, ia, ib]) == [1.0, 2.0, 1.0, 2.0]
        assert sess.run(v) == 1.0   # the tuple's outputs waited for inc


def test_make_template_shares_variables():
    def scale(x):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(3.0))
        return x * w
    t = tf.make_template("scale", scale)
    y1, y2 = t(tf.constant(1.0)), t(tf.constant(2.0))
    assert [v.op.name for v in tf.global_variables()] == ["scale/w"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run([y1, y2]) == [3.0, 6.0]


def test_seeds_uninitialized_report_and_check_numerics():
    assert tf.get_seed(None) == (None, None)
    tf.set_random_seed(7)
    assert tf.get_seed(3) == (7, 3)
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    report = tf.report_uninitialized_variables()
    x = tf.placeholder(tf.float32, [2])
    y = tf.log(x)
    check = tf.add_check_numerics_ops()
    with tf.Session() as sess:
        assert list(sess.run(report)) == [b"a", b"b"]
        sess.run(a.initializer)
        assert list(sess.run(report)) == [b"b"]
        assert sess.run(tf.is_variable_initialized(a))
        sess.run(b.initializer)
        assert list(sess.run(report)) == []
        sess.run([y, check], {x: [1.0, 2.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="NaN or Inf"):
            sess.run([y, check], {x: [-1.0, 2.0]})


def test_hessians():
    x = tf.placeholder(tf.float32, [3])
    a = np.array([[2., 1, 0], [1, 3, 1], [0, 1, 4]], np.float32)
    y = 0.5 * tf.reduce_sum(x * tf.reshape(tf.matmul(tf.constant(a), tf.reshape(x, [3, 1])), [3]))
    cube = tf.reduce_sum(x * x * x)
    (h,) = tf.hessians(y, x)
    (hc,) = tf.hessians(cube, x)
    with tf.Session() as sess:
        hv, hcv = sess.run([h, hc], {x: [1.0, 2.0, -1.0]})
    np.testing.assert_allclose(hv, a, rtol=1e-5)
    np.testing.assert_allclose(hcv, np.diag([6.0, 12.0, -6.0]), rtol=1e-5)


@pytest.mark.parametrize("remote", [False, True])
def test_seeded_random_ops_continue_across_fetch_signatures(remote):
    """As TF1 (its sessions share stateful kernels): the k-th run of a seeded random op gives
    its k-th draw whatever else the run fetches; a new session starts the sequence again.
    Regression: a second signature replayed the first draws."""
    tf.reset_default_graph()
    server = tf.train.Server.create_local_server() if remote else None
    r = tf.random_uniform([3], seed=5)
    c = tf.constant(1.0)
    runs = []
    for _ in range(2):
        with tf.Session(server.target if remote else "") as sess:
            runs.append([sess.run(r), sess.run([r, c])[0], sess.run(r)])
    first, second, third = runs[0]
    assert not np.array_equal(first, second) and not np.array_equal(second, third)
    for a, b in zip(runs[0], runs[1]):
        np.testing.assert_array_equal(a, b)


def test_read_value_under_control_dependencies_reads_after_them():
    # TF1's idiom: the value after an update, and the update runs whenever it is fetched;
    # gradients and minimize count such a read as a read of the variable.
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0)
        update = tf.assign_add(v, 5.0)
        with tf.control_dependencies([update]):
            after = v.read_value()
        before = v.read_value()               # no dependencies: the variable's own read
        loss = after * 3.0 + v * 2.0
        dv = tf.gradients(loss, v)[0]
        train = tf.train.GradientDescentOptimizer(0.1).minimize(after * 3.0)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(after) == 6.0
            assert sess.run(after) == 11.0
            assert sess.run(before) == 11.0
            assert sess.run(dv) == 5.0             # (its graph reads `after`: +5, as TF1's)
            assert sess.run(before) == 16.0
            sess.run(train)                        # +5, then -0.1 * 3
            assert abs(sess.run(before) - 20.7) < 1e-5


def test_a_variable_used_under_control_dependencies_is_read_after_them():
    # tf.identity(v) / v + 0 under control_dependencies([update]) returned the value before
    # the update on every run (the variable's shared read did not wait); TF1 reads after.
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.zeros(100000, np.float32))
        update = tf.assign_add(v, np.ones(100000, np.float32))
        with tf.control_dependencies([update]):
            ident = tf.identity(v)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert [sess.run(ident)[0] for _ in range(20)] == list(range(1, 21))
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.zeros(1000, np.float32))
        update = tf.assign_add(v, np.ones(1000, np.float32))
        with tf.control_dependencies([update]):
            plus = v + 0.0
        w = tf.Variable(2.0)
        x = tf.placeholder(tf.float32, [])
        with tf.control_dependencies([tf.assert_positive(x)]):
            loss = w * w * x                      # a model built under an assert
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert [sess.run(plus)[0] for _ in range(20)] == list(range(1, 21))
            sess.run(train, {x: 1.0})             # d(w^2)/dw = 4: 2 - 0.4
            assert abs(sess.run(w) - 1.6) < 1e-6


def test_a_loop_body_reads_the_variable_it_just_assigned():
    # Inside a while_loop body, a read under the body's assign sees it (1 + 2 + 3), as TF1's;
    # the value captured from outside the loop (0 each time) was read before.
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(0.0)

        def body(i, acc):
            with tf.control_dependencies([v.assign_add(1.0)]):
                return i + 1, acc + v.read_value()
        _, acc = tf.while_loop(lambda i, a: i < 3, body, [0, 0.0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(acc) == 6.0
            assert sess.run(v.value()) == 3.0


def test_compute_gradients_under_control_dependencies():
    # The CIFAR-10 tutorial's pattern: gradients computed under the loss averages' update. The
    # model's reads of the variables are the shared ones; the gradients must find them.
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(2.0)
        loss = w * w
        averages = tf.train.ExponentialMovingAverage(0.9)
        update = averages.apply([loss])
        with tf.control_dependencies([update]):
            grads = tf.train.GradientDescentOptimizer(0.1).compute_gradients(loss)
            dw = tf.gradients(loss, [w], stop_gradients=[w])[0]
        step = tf.train.GradientDescentOptimizer(0.1).apply_gradients(grads)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(grads[0][0]) == 4.0 and sess.run(dw) == 4.0
            sess.run(step)
            assert abs(sess.run(w.value()) - 1.6) < 1e-6
