"""TF 1.15 core names added in shardflow/compat_names.py (old spellings, ensure_shape, repeat,
tensor_scatter_*, unravel_index, switch_case, grad_pass_through, tf.function in graph mode,
the TF2 switches) against NumPy, with their gradients where TF has them."""

import numpy as np
import pytest

import shardflow as tf


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_old_spellings_and_argmax_arguments():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        v = np.array([[1, 5, 2], [7, 0, 3]], np.float32)
        got = run([tf.arg_max(x, 1), tf.arg_min(x, dimension=1), tf.argmax(x, dimension=1),
                   tf.argmax(x, 1, "named"), tf.floor_div(7, 2), tf.scalar_mul(2.0, x),
                   tf.parallel_stack([x, x])], {x: v})
        assert [list(g) for g in got[:4]] == [[1, 0], [0, 1], [1, 0], [1, 0]]
        assert got[4] == 3 and got[5].tolist() == (2 * v).tolist()
        assert got[6].shape == (2, 2, 3) and tf.to_bfloat16(x).dtype == tf.bfloat16
        with pytest.raises(ValueError, match="axis or dimension"):
            tf.argmax(x, 1, dimension=1)
        assert tf.dimension_value(x.shape[1]) == 3 and tf.dimension_value(x.shape[0]) is None
        assert tf.dimension_value(4) == 4 and tf.dimension_at_index(x.shape, 1).value == 3
        assert tf.get_logger().name == "tensorflow"
        assert tf.initialize_all_tables().type == "NoOp"
        tf.disable_v2_tensorshape()
        tf.disable_control_flow_v2()
        with pytest.raises(NotImplementedError, match="TensorFlow 1.x graphs"):
            tf.enable_v2_behavior()
        with pytest.raises(NotImplementedError, match="custom-op library cannot load"):
            tf.load_op_library("zero_out.so")


def test_ensure_shape_checks_at_run_time_what_it_cannot_at_build_time():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.ensure_shape(x, [2, None])
        assert y.shape.as_list() == [2, 3]
        with pytest.raises(ValueError):
            tf.ensure_shape(x, [2, 4])   # disagrees with the static shape
        g = tf.gradients(tf.reduce_sum(y * 2.0), x)[0]
        with tf.Session() as sess:
            out, grad = sess.run([y, g], {x: np.ones((2, 3), np.float32)})
            assert out.shape == (2, 3) and (grad == 2.0).all()
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="not compatible with expected shape"):
                sess.run(y, {x: np.ones((5, 3), np.float32)})


def test_repeat_matches_numpy():
    a = np.array([[1, 2], [3, 4]], np.int32)
    cases = [(2, 0), ([2, 1], 1), (3, None), ([1, 0], 0)]
    with tf.Graph().as_default():
        got = run([tf.repeat(tf.constant(a), r, axis=ax) for r, ax in cases] +
                  [tf.repeat(tf.constant([1, 2, 3]), [1, 0, 2])])
        for out, (r, ax) in zip(got, cases):
            np.testing.assert_array_equal(out, np.repeat(a, r, axis=ax))
        np.testing.assert_array_equal(got[-1], [1, 3, 3])
        w = tf.Variable([1.0, 2.0])
        grad = tf.gradients(tf.reduce_sum(tf.repeat(w, [3, 1]) * [1., 2., 3., 4.]), w)[0]
        np.testing.assert_array_equal(run(grad), [6.0, 4.0])


def test_tensor_scatter_and_unravel_index_match_numpy():
    t = np.array([1., 2., 3., 4.], np.float32)
    with tf.Graph().as_default():
        got = run([tf.tensor_scatter_nd_update(t, [[0], [2]], [9., 7.]),
                   tf.tensor_scatter_nd_add(t, [[1], [1]], [1., 1.]),
                   tf.tensor_scatter_sub(t, [[3]], [4.]),
                   tf.unravel_index([5, 7], [3, 4]), tf.unravel_index(5, [3, 4])])
    np.testing.assert_array_equal(got[0], [9., 2., 7., 4.])
    np.testing.assert_array_equal(got[1], [1., 4., 3., 4.])
    np.testing.assert_array_equal(got[2], [1., 2., 3., 0.])
    np.testing.assert_array_equal(got[3], np.stack(np.unravel_index([5, 7], (3, 4))))
    np.testing.assert_array_equal(got[4], np.unravel_index(5, (3, 4)))


def test_switch_case_grad_pass_through_and_function():
    with tf.Graph().as_default():
        i = tf.placeholder(tf.int32, [])
        branches = [lambda: tf.constant(10), lambda: tf.constant(20)]
        chosen = tf.switch_case(i, branches)
        other = tf.switch_case(i, {0: lambda: tf.constant(1)}, default=lambda: tf.constant(-1))
        w = tf.Variable([1.4, 2.6])
        rounded = tf.grad_pass_through(tf.round)(w)
        g = tf.gradients(tf.reduce_sum(rounded * 3.0), w)[0]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def squares(a):
            return tf.reduce_sum(a * a)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert [sess.run(chosen, {i: k}) for k in (0, 1, 5)] == [10, 20, 20]
            assert [sess.run(other, {i: k}) for k in (0, 3)] == [1, -1]
            r, grad = sess.run([rounded, g])
            assert r.tolist() == [1.0, 3.0] and grad.tolist() == [3.0, 3.0]   # straight-through
            assert sess.run(squares(tf.constant([1., 2.]))) == 5.0
            assert sess.run(tf.vectorized_map(lambda r: r * 2, tf.constant([[1.], [2.]]))
                            ).tolist() == [[2.], [4.]]
            sess.run(tf.assert_variables_initialized([w]))
        with pytest.raises(ValueError, match="does not fit the input_signature"):
            squares(tf.constant([[1.0]]))


def test_other_namespaces_spellings(tmp_path):
    import threading
    import time
    with tf.Graph().as_default():
        x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
        pooled = tf.nn.max_pool2d(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        averaged = tf.nn.avg_pool2d(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        w = np.ones((2, 2, 1, 1), np.float32)
        dy = np.ones((1, 2, 2, 1), np.float32)
        dx = tf.nn.conv2d_backprop_input([1, 4, 4, 1], w, dy, [1, 2, 2, 1], "VALID")
        loss = tf.nn.compute_average_loss([1.0, 2.0, 3.0], global_batch_size=6)
        words = tf.io.encode_base64(tf.constant([b"hi?", b"\xff\xfe"]))
        back = tf.io.decode_base64(words)
        lr = tf.train.piecewise_constant_decay(tf.constant(5), [3], [0.1, 0.01])
        got = run([pooled, averaged, dx, loss, words, back, lr])
    np.testing.assert_array_equal(got[0].ravel(), [5, 7, 13, 15])
    np.testing.assert_array_equal(got[1].ravel(), [2.5, 4.5, 10.5, 12.5])
    np.testing.assert_array_equal(got[2].ravel(), np.ones(16))   # each input feeds one output
    assert got[3] == pytest.approx(1.0)
    assert list(got[4]) == [b"aGk_", b"__4"] and list(got[5]) == [b"hi?", b"\xff\xfe"]
    assert got[6] == pytest.approx(0.01)
    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = True
    ds = tf.data.Dataset.range(3).with_options(options)
    assert ds.options().experimental_optimization.map_parallelization is True
    assert tf.train.queue_runner.QueueRunner is tf.train.QueueRunner
    assert tf.io.RandomShuffleQueue is tf.RandomShuffleQueue
    # checkpoints_iterator: each new checkpoint as a training job writes it, then a timeout.
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "m-1"\n')
    (tmp_path / "m-1").write_bytes(b"x")

    def later():
        time.sleep(0.3)
        (tmp_path / "m-2").write_bytes(b"x")
        (tmp_path / "checkpoint").write_text('model_checkpoint_path: "m-2"\n')
    threading.Thread(target=later).start()
    seen = list(tf.train.checkpoints_iterator(str(tmp_path), timeout=1.5))
    assert seen == [str(tmp_path / "m-1"), str(tmp_path / "m-2")]


def test_math_linalg_and_contrib_framework_spellings():
    with tf.Graph().as_default():
        inf = np.float32(np.inf)
        a = np.array([[1., 2.], [3., 4.]], np.float32)
        local = tf.contrib.framework.local_variable(3.0, name="counter")
        normalized, norm = tf.linalg.normalize(tf.constant([3.0, 4.0]))
        got = run([tf.math.multiply_no_nan(tf.constant([inf, 2.0]), tf.constant([0.0, 3.0])),
                   tf.math.reciprocal_no_nan(tf.constant([0.0, 4.0])),
                   tf.linalg.matvec(a, tf.constant([1.0, 1.0])), tf.linalg.adjoint(a),
                   normalized, norm, tf.linalg.global_norm([tf.constant([3.0, 4.0])]),
                   tf.linalg.tensor_diag_part(a)])
        assert local in tf.local_variables() and local not in tf.trainable_variables()
        assert tf.contrib.framework.is_tensor(norm)
    assert got[0].tolist() == [0.0, 6.0] and got[1].tolist() == [0.0, 0.25]
    assert got[2].tolist() == [3.0, 7.0] and got[3].tolist() == a.T.tolist()
    np.testing.assert_allclose(got[4], [0.6, 0.8], rtol=1e-6)
    assert got[5].tolist() == [5.0] and got[6] == pytest.approx(5.0)
    assert got[7].tolist() == [1.0, 4.0]


def test_stateless_random_ops_repeat_for_a_seed():
    with tf.Graph().as_default():
        a = tf.random.stateless_uniform([2, 3], seed=[1, 2])
        b = tf.random.stateless_uniform([2, 3], seed=tf.constant([1, 2]))
        c = tf.random.stateless_uniform([2, 3], seed=[1, 3])
        normal = tf.random.stateless_normal([2000], seed=[7, 8], mean=1.0, stddev=2.0)
        truncated = tf.random.stateless_truncated_normal([2000], seed=[7, 8])
        ints = tf.random.stateless_uniform([50], seed=[1, 1], minval=3, maxval=6,
                                           dtype=tf.int32)
        classes = tf.random.stateless_categorical(tf.log([[1e-6, 1.0]]), 8, seed=[3, 4])
        assert a.shape.as_list() == [2, 3] and classes.shape.as_list() == [1, 8]
        with tf.Session() as sess:
            first = sess.run([a, b, c, normal, truncated, ints, classes])
            again = sess.run(a)
        with tf.Session() as sess:
            other_session = sess.run(a)
        with pytest.raises(ValueError, match="seed must be a pair"):
            tf.random.stateless_normal([2], seed=[1, 2, 3])
    np.testing.assert_array_equal(first[0], first[1])   # the same seed, as a list or tensor
    np.testing.assert_array_equal(first[0], again)
    np.testing.assert_array_equal(first[0], other_session)
    assert not np.array_equal(first[0], first[2])
    assert ((first[0] >= 0) & (first[0] < 1)).all()
    assert abs(first[3].mean() - 1.0) < 0.2 and abs(first[3].std() - 2.0) < 0.2
    assert np.abs(first[4]).max() <= 2.0
    assert set(first[5].tolist()) <= {3, 4, 5} and first[5].dtype == np.int32
    assert first[6].tolist() == [[1] * 8]


def test_gather_with_batch_dims_and_batch_gather():
    rng = np.random.RandomState(0)
    params = rng.randn(2, 3, 4, 5).astype(np.float32)
    indices = np.array([[[3, 0], [1, 1], [2, 3]], [[0, 0], [3, 2], [1, 0]]], np.int32)
    expected = np.stack([np.stack([params[b, j][indices[b, j]] for j in range(3)])
                         for b in range(2)])                     # [2, 3, 2, 5]
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3, 4, 5])            # batch known at run time
        got = tf.gather(p, indices, batch_dims=2)
        got2 = tf.batch_gather(p, indices)
        got1 = tf.gather(p[:, 0], indices[:, 0], batch_dims=1)
        grad = tf.gradients(tf.reduce_sum(tf.gather(p, indices, batch_dims=-1) * 2.0), p)[0]
        with tf.Session() as s:
            a, b, c, g = s.run([got, got2, got1, grad], {p: params})
    np.testing.assert_allclose(a, expected)
    np.testing.assert_allclose(b, expected)
    np.testing.assert_allclose(c, np.stack([params[i, 0][indices[i, 0]] for i in range(2)]))
    want = np.zeros_like(params)
    for bb in range(2):
        for j in range(3):
            for k in indices[bb, j]:
                want[bb, j, k] += 2.0                            # an index picked twice: twice
    np.testing.assert_allclose(g, want)
    with pytest.raises(ValueError, match="axis must be 1"):
        tf.gather(tf.zeros([2, 3, 4]), tf.zeros([2, 2], tf.int32), axis=2, batch_dims=1)
