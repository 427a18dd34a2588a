"""TF 1.15's public API as its golden files (tensorflow/tools/api/golden/v1/*.pbtxt) list it:
parameter order of the functions TF1 programs call positionally, keyword names they pass, and
names of the core namespaces that were missing. Each test asserts values."""

import inspect

import numpy as np
import pytest

import shardflow as tf


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def _positional(fn):
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.kind == p.POSITIONAL_OR_KEYWORD]


# --- parameter order and names (golden argspecs) ------------------------------------------

GOLDEN_ORDER = [
    (lambda: tf.atan2, ["y", "x", "name"]),
    (lambda: tf.math.atan2, ["y", "x", "name"]),
    (lambda: tf.shape, ["input", "name", "out_type"]),
    (lambda: tf.arg_max, ["input", "dimension", "output_type", "name"]),
    (lambda: tf.arg_min, ["input", "dimension", "output_type", "name"]),
    (lambda: tf.gather, ["params", "indices", "validate_indices", "name", "axis", "batch_dims"]),
    (lambda: tf.gather_nd, ["params", "indices", "name", "batch_dims"]),
    (lambda: tf.constant, ["value", "dtype", "shape", "name", "verify_shape"]),
    (lambda: tf.nn.softmax_cross_entropy_with_logits_v2, ["labels", "logits", "axis", "name",
                                                          "dim"]),
    (lambda: tf.concat, ["values", "axis", "name"]),
    (lambda: tf.split, ["value", "num_or_size_splits", "axis", "num", "name"]),
    (lambda: tf.reduce_sum, ["input_tensor", "axis", "keepdims", "name", "reduction_indices",
                             "keep_dims"]),
    (lambda: tf.nn.moments, ["x", "axes", "shift", "name", "keep_dims"]),
    (lambda: tf.layers.dense, ["inputs", "units", "activation", "use_bias"]),
    (lambda: tf.nn.max_pool, ["value", "ksize", "strides", "padding", "data_format", "name"]),
    (lambda: tf.nn.conv2d, ["input"]),
]


@pytest.mark.parametrize("get_fn,want", GOLDEN_ORDER)
def test_parameter_order_is_tf1s(get_fn, want):
    assert _positional(get_fn())[:len(want)] == want


def test_atan2_takes_y_then_x_by_keyword_too():
    y, x = np.float32([1.0, -1.0, 0.5]), np.float32([0.0, 2.0, -3.0])
    got = _run([tf.atan2(y, x), tf.atan2(y=y, x=x), tf.atan2(x=x, y=y)])
    for g in got:
        np.testing.assert_allclose(g, np.arctan2(y, x), rtol=1e-6)


def test_shape_second_positional_is_the_name():
    with tf.Graph().as_default():
        x = tf.zeros([2, 3])
        s = tf.shape(x, "batch_shape")
        assert s.name.startswith("batch_shape")
        assert s.dtype == tf.int32
        np.testing.assert_array_equal(_run(s), [2, 3])
        np.testing.assert_array_equal(_run(tf.shape(x, out_type=tf.int64)), [2, 3])


def test_arg_max_third_positional_is_output_type():
    x = np.float32([[1, 5, 2], [7, 0, 3]])
    with tf.Graph().as_default():
        a, b = tf.arg_max(x, 1, tf.int32), tf.arg_min(x, 1, tf.int32)
        assert a.dtype == tf.int32 and b.dtype == tf.int32
        np.testing.assert_array_equal(_run(a), [1, 0])
        np.testing.assert_array_equal(_run(b), [0, 1])


def test_gather_keeps_axis_as_a_keyword():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(_run(tf.gather(x, [2, 0], axis=1)), x[:, [2, 0]])
    np.testing.assert_array_equal(_run(tf.gather(x, [2, 0])), x[[2, 0]])
    # TF1's third positional parameter is validate_indices (ignored), not axis
    np.testing.assert_array_equal(_run(tf.gather(x, [2, 0], True)), x[[2, 0]])


def test_gather_nd_batch_dims():
    p = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    i = np.array([[[0, 1], [2, 3]], [[1, 0], [0, 2]]], np.int32)
    want = np.array([[p[0, 0, 1], p[0, 2, 3]], [p[1, 1, 0], p[1, 0, 2]]])
    np.testing.assert_array_equal(_run(tf.gather_nd(p, i, batch_dims=1)), want)
    j = np.array([[1], [2]], np.int64)
    np.testing.assert_array_equal(_run(tf.gather_nd(p, j, batch_dims=1)), p[[0, 1], [1, 2]])
    with tf.Graph().as_default():
        pp = tf.placeholder(tf.float32, [None, 3, 4])
        ii = tf.placeholder(tf.int32, [None, 2, 2])
        out = tf.gather_nd(pp, ii, batch_dims=1)
        np.testing.assert_array_equal(_run(out, {pp: p, ii: i}), want)
        g = tf.gradients(tf.reduce_sum(out), pp)[0]
        grad = _run(g, {pp: p, ii: i})
        want_grad = np.zeros_like(p)
        for b in range(2):
            for r in range(2):
                want_grad[b, i[b, r, 0], i[b, r, 1]] += 1
        np.testing.assert_array_equal(grad, want_grad)


def test_constant_verify_shape():
    with pytest.raises(TypeError, match="verify_shape"):
        tf.constant([1.0, 2.0], shape=[3], verify_shape=True)
    with pytest.raises(TypeError):
        tf.constant(1.0, shape=[2], verify_shape=True)
    np.testing.assert_array_equal(
        _run(tf.constant([[1, 2]], shape=[1, 2], verify_shape=True)), [[1, 2]])
    np.testing.assert_array_equal(_run(tf.constant([1, 2], shape=[4])), [1, 2, 2, 2])


def test_softmax_cross_entropy_v2_dim():
    logits = np.float32([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])      # [3, 2]; classes on axis 0
    labels = np.float32([[0.2, 1.0], [0.3, 0.0], [0.5, 0.0]])
    e = np.exp(logits - logits.max(0))
    want = -(labels * np.log(e / e.sum(0))).sum(0)
    got = _run(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, dim=0))
    np.testing.assert_allclose(got, want, rtol=1e-5)


# --- missing names ------------------------------------------------------------------------

def test_newaxis():
    x = np.float32([[1, 2], [3, 4]])
    assert tf.newaxis is None
    with tf.Graph().as_default():
        t = tf.constant(x)
        np.testing.assert_array_equal(_run(t[:, tf.newaxis]), x[:, np.newaxis])
        np.testing.assert_array_equal(_run(t[tf.newaxis, ..., tf.newaxis]),
                                      x[np.newaxis, ..., np.newaxis])


def test_real_imag_conj_of_real_tensors():
    x = np.float32([[1.5, -2.0]])
    got = _run([tf.real(x), tf.imag(x), tf.conj(x), tf.math.real(x), tf.math.imag(x),
                tf.math.conj(x)])
    for g, w in zip(got, [x, 0 * x, x, x, 0 * x, x]):
        np.testing.assert_array_equal(g, w)


def test_sparse_matmul_is_matmul():
    a = np.float32([[1, 0], [0, 2], [3, 0]])
    b = np.float32([[1, 2, 0], [0, 0, 4]])
    np.testing.assert_allclose(_run(tf.sparse_matmul(a, b, a_is_sparse=True)), a @ b)
    np.testing.assert_allclose(_run(tf.sparse_matmul(a, a, transpose_a=True)), a.T @ a)


def test_old_scope_spellings_and_no_regularizer():
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with tf.op_scope([x], "outer", "default"):
            y = tf.identity(x, name="y")
        assert y.name == "outer/y:0"
        with tf.variable_op_scope([x], None, "vs"):
            v = tf.get_variable("w", [2], initializer=tf.ones_initializer())
        assert v.name == "vs/w:0"
        assert tf.no_regularizer(v) is None
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(v), [1, 1])


def test_manip_queue_and_operror_namespaces():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(_run(tf.manip.roll(x, 1, 1)), np.roll(x, 1, 1))
    np.testing.assert_array_equal(_run(tf.manip.tile(x, [1, 2])), np.tile(x, [1, 2]))
    assert tf.OpError is tf.errors.OpError
    with tf.Graph().as_default():
        q = tf.queue.FIFOQueue(3, tf.float32, shapes=[[]])
        with tf.Session() as sess:
            sess.run(q.enqueue_many([[1.0, 2.0]]))
            assert sess.run(q.dequeue()) == 1.0


def test_top_level_sparse_spellings():
    sp = tf.SparseTensorValue(indices=[[0, 0], [0, 2], [1, 1]], values=np.float32([1, 5, 3]),
                              dense_shape=[2, 3])
    np.testing.assert_array_equal(_run(tf.sparse_reduce_max(sp, 1)), [5, 3])
    soft = _run(tf.sparse_tensor_to_dense(tf.sparse_softmax(sp)))
    e = np.exp([1.0, 5.0])
    np.testing.assert_allclose(soft, [[e[0] / e.sum(), 0, e[1] / e.sum()], [0, 1, 0]], rtol=1e-6)


# --- tf.layers classes: TF1's parameter order and defaults ---------------------------------

def _conv_valid(x, k):
    """NHWC 'VALID' cross-correlation in NumPy."""
    n, h, w, _ = x.shape
    kh, kw, _, co = k.shape
    out = np.zeros((n, h - kh + 1, w - kw + 1, co), np.float32)
    for i in range(h - kh + 1):
        for j in range(w - kw + 1):
            out[:, i, j, :] = np.tensordot(x[:, i:i + kh, j:j + kw, :], k, axes=3)
    return out


def test_layers_conv2d_defaults_to_valid_padding_as_tf1():
    rng = np.random.RandomState(0)
    x = rng.rand(2, 6, 5, 2).astype(np.float32)
    with tf.Graph().as_default():
        layer = tf.layers.Conv2D(3, 3)
        y = layer(tf.constant(x))
        assert y.shape.as_list() == [2, 4, 3, 3]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, kernel, bias = sess.run([y, layer.kernel, layer.bias])
    np.testing.assert_allclose(got, _conv_valid(x, kernel) + bias, rtol=1e-5, atol=1e-6)


def test_layers_conv2d_positional_parameters():
    x = np.zeros((1, 7, 7, 2), np.float32)
    with tf.Graph().as_default():
        # (filters, kernel_size, strides, padding, data_format, dilation_rate, activation)
        y = tf.layers.Conv2D(4, 3, (1, 1), "valid", "channels_last", (2, 2), tf.nn.relu)(x)
        assert y.shape.as_list() == [1, 3, 3, 4]
        z = tf.layers.Conv2D(4, 3, 2, "same")(x)
        assert z.shape.as_list() == [1, 4, 4, 4]
        t = tf.layers.Conv2DTranspose(3, 3)(x)                     # 'valid': (7 - 1) + 3
        assert t.shape.as_list() == [1, 9, 9, 3]
        u = tf.layers.Conv2DTranspose(3, 3, 2, "same", "channels_last", tf.nn.relu)(x)
        assert u.shape.as_list() == [1, 14, 14, 3]
        with pytest.raises(ValueError, match="channels_last"):
            tf.layers.Conv2D(4, 3, data_format="channels_first")


def test_layers_pooling_takes_data_format():
    x = np.arange(32, dtype=np.float32).reshape(1, 4, 4, 2)
    with tf.Graph().as_default():
        avg = tf.layers.AveragePooling2D(2, 2, "valid", "channels_last")(x)
        mx = tf.layers.MaxPooling2D(2, 2, data_format="channels_last")(x)
        got_avg, got_max = _run([avg, mx])
        with pytest.raises(ValueError, match="channels_last"):
            tf.layers.AveragePooling2D(2, 2, data_format="channels_first")
    blocks = x.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 3, 2, 4, 5).reshape(1, 2, 2, 4, 2)
    np.testing.assert_allclose(got_avg, blocks.mean(3))
    np.testing.assert_allclose(got_max, blocks.max(3))


# --- names of tf.random, tf.linalg and tf.debugging ------------------------------------------

def test_random_linalg_debugging_names():
    assert tf.random.get_seed(5) == tf.get_seed(5)
    with tf.Graph().as_default():
        s = tf.random.stateless_multinomial([[0.0, 50.0], [50.0, 0.0]], 3, [1, 2],
                                            output_dtype=tf.int32)
        assert s.dtype == tf.int32
        np.testing.assert_array_equal(_run(s), [[1, 1, 1], [0, 0, 0]])
    a = np.float64([[4.0, 2.0], [2.0, 3.0]])
    rhs = np.float64([[1.0], [2.0]])
    chol = np.linalg.cholesky(a)
    np.testing.assert_allclose(_run(tf.linalg.cholesky_solve(chol, rhs)),
                               np.linalg.solve(a, rhs), rtol=1e-10)
    tf.debugging.assert_proper_iterable([1, 2])
    with pytest.raises(TypeError):
        tf.debugging.assert_proper_iterable("abc")


def test_nn_conv2d_backprop_filter():
    rng = np.random.RandomState(1)
    x = rng.rand(2, 5, 6, 3).astype(np.float32)
    dy = rng.rand(2, 2, 2, 4).astype(np.float32)                   # VALID, strides 2, 2x3 kernel
    want = np.zeros((2, 3, 3, 4), np.float32)
    for a in range(2):
        for b in range(3):
            patch = x[:, a:a + 3:2, b:b + 4:2, :]                   # [2, 2, 2, 3]
            want[a, b] = np.tensordot(patch, dy, axes=([0, 1, 2], [0, 1, 2]))
    got = _run(tf.nn.conv2d_backprop_filter(x, [2, 3, 3, 4], dy, [1, 2, 2, 1], "VALID"))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_variable_synchronization_and_aggregation_enums():
    assert tf.VariableAggregation.ONLY_FIRST_TOWER is tf.VariableAggregation.ONLY_FIRST_REPLICA
    with tf.Graph().as_default():
        v = tf.get_variable("v", [2], initializer=tf.zeros_initializer(),
                            synchronization=tf.VariableSynchronization.ON_READ,
                            aggregation=tf.VariableAggregation.SUM)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(v), [0, 0])


def test_io_codecs_dtypes_and_compat_names():
    import pathlib
    assert tf.io.decode_jpeg is tf.image.decode_jpeg
    assert tf.io.encode_png is tf.image.encode_png
    # (tf.dtypes.bool is not set: it would shadow the builtin bool inside dtypes.py)
    np.testing.assert_array_equal(_run(tf.dtypes.cast(np.float32([1.7, -2.2]), tf.int32)),
                                  [1, -2])
    np.testing.assert_array_equal(
        _run(tf.dtypes.saturate_cast(np.float32([300.0, -5.0]), tf.uint8)), [255, 0])
    assert tf.compat.path_to_str(pathlib.Path("/a/b")) == "/a/b"
    assert tf.compat.path_to_str("x") == "x"
    assert tf.compat.dimension_value(tf.Dimension(3)) == 3
    assert tf.compat.dimension_at_index(tf.TensorShape([2, None]), 0) == 2
    assert isinstance(np.int64(3), tf.compat.integral_types)
    assert isinstance(2.5, tf.compat.real_types)
    assert isinstance(b"x", tf.compat.bytes_or_text_types)


def test_layers_separable_conv1d():
    rng = np.random.RandomState(0)
    x = rng.rand(2, 7, 3).astype(np.float32)
    with tf.Graph().as_default():
        y = tf.layers.separable_conv1d(x, 4, 3, 2, "valid", depth_multiplier=2, name="sep")
        shapes = {v.name: v.shape.as_list() for v in tf.global_variables()}
        assert shapes == {"sep/depthwise_kernel:0": [3, 3, 2],
                          "sep/pointwise_kernel:0": [1, 6, 4], "sep/bias:0": [4]}
        assert isinstance(tf.layers.SeparableConv1D(2, 3), tf.layers.Layer)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, dk, pk, b = sess.run([y] + tf.global_variables())
    depthwise = np.zeros((2, 3, 6), np.float32)
    for i in range(3):
        patch = x[:, 2 * i:2 * i + 3, :]
        for c in range(3):
            for m in range(2):
                depthwise[:, i, c * 2 + m] = (patch[:, :, c] * dk[:, c, m]).sum(1)
    np.testing.assert_allclose(got, depthwise @ pk[0] + b, rtol=1e-5, atol=1e-6)


def _drain(fetch, setup=None):
    """Every batch of a queue pipeline with num_epochs=1, until OutOfRange."""
    out = []
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            while True:
                out.append(sess.run(fetch))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    return out


def test_train_maybe_batch_family_filters_examples():
    with tf.Graph().as_default():
        x = tf.train.range_input_producer(10, num_epochs=1, shuffle=False).dequeue()
        even = tf.equal(tf.mod(x, 2), 0)
        got = _drain(tf.train.maybe_batch([x], even, 2, allow_smaller_final_batch=True))
        assert [b.tolist() for b in got] == [[0, 2], [4, 6], [8]]
    with tf.Graph().as_default():
        rows = tf.constant(np.arange(6, dtype=np.float32).reshape(6, 1))
        kept = tf.train.maybe_batch({"v": rows}, [True, False, True, True, False, True], 4,
                                    enqueue_many=True)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            np.testing.assert_array_equal(sess.run(kept)["v"].ravel(), [0, 2, 3, 5])
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    with tf.Graph().as_default():
        x = tf.train.range_input_producer(10, num_epochs=1, shuffle=False).dequeue()
        got = _drain(tf.train.maybe_shuffle_batch([x * 10], 3, 20, 0, tf.less(x, 5), seed=1,
                                                  allow_smaller_final_batch=True))
        assert sorted(np.concatenate(got).tolist()) == [0, 10, 20, 30, 40]
    with tf.Graph().as_default():
        # each list's enqueue runs the producer's dequeue: the lists share its 6 elements
        x = tf.train.range_input_producer(6, num_epochs=1, shuffle=False).dequeue()
        got = _drain(tf.train.maybe_batch_join([[x], [x + 100]], tf.greater(x, 3), 2,
                                               allow_smaller_final_batch=True))
        assert sorted(v % 100 for v in np.concatenate(got).tolist()) == [4, 5]
        assert tf.train.maybe_shuffle_batch_join is not None


def test_nn_tf115_keyword_spellings():
    x = np.arange(32, dtype=np.float32).reshape(1, 4, 4, 2)
    blocks = x.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 3, 2, 4, 5).reshape(1, 2, 2, 4, 2)
    got = _run([tf.nn.max_pool(input=x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                               padding="VALID"),
                tf.nn.avg_pool(input=x, ksize=2, strides=2, padding="VALID"),
                tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
                tf.nn.pool(x, [2, 2], "MAX", "VALID", strides=[2, 2], dilations=[1, 1])])
    for g, w in zip(got, [blocks.max(3), blocks.mean(3), blocks.max(3), blocks.max(3)]):
        np.testing.assert_allclose(g, w)
    with pytest.raises(ValueError, match="not both"):
        tf.nn.max_pool(x, 2, 2, input=x)
    w = np.ones((2, 2, 3, 2), np.float32)
    up = tf.nn.conv2d_transpose(input=x, filters=w, output_shape=[1, 8, 8, 3],
                                strides=[1, 2, 2, 1], dilations=[1, 1, 1, 1])
    np.testing.assert_allclose(_run(up)[0, ::2, ::2, 0], x.sum(-1)[0])
    with pytest.raises(NotImplementedError, match="dilations"):
        tf.nn.conv2d_transpose(x, w, [1, 8, 8, 3], [1, 2, 2, 1], dilations=2)


def test_required_space_to_batch_paddings():
    paddings, crops = _run(tf.required_space_to_batch_paddings([5, 7], [2, 3], [[1, 0], [0, 2]]))
    # 5 + 1 = 6 divides by 2: no extra; 7 + 2 = 9 divides by 3: none; check an uneven case too
    np.testing.assert_array_equal(paddings, [[1, 0], [0, 2]])
    np.testing.assert_array_equal(crops, [[0, 0], [0, 0]])
    paddings, crops = _run(tf.required_space_to_batch_paddings([5, 7], [2, 3]))
    np.testing.assert_array_equal(paddings, [[0, 1], [0, 2]])
    np.testing.assert_array_equal(crops, [[0, 1], [0, 2]])


def test_unsorted_segment_reductions_drop_negative_ids():
    d = np.float32([[1, 2], [3, -4], [5, 6], [-7, 8]])
    fmax = np.finfo(np.float32).max
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int32, [4])
        data = tf.constant(d)
        outs = [tf.unsorted_segment_sum(data, ids, 3), tf.unsorted_segment_max(data, ids, 3),
                tf.unsorted_segment_min(data, ids, 3), tf.unsorted_segment_prod(data, ids, 3),
                tf.unsorted_segment_mean(data, ids, 3),
                tf.unsorted_segment_sqrt_n(data, ids, 3)]
        grad = tf.gradients(tf.reduce_sum(outs[0]) + tf.reduce_sum(outs[1]), data)[0]
        const_ids = tf.unsorted_segment_sum(d, [0, -1, 1, 1], 2)
        with tf.Session() as sess:
            got = sess.run(outs + [grad, const_ids], {ids: [2, -1, 0, -5]})
            with pytest.raises(tf.errors.InvalidArgumentError, match=">= 0"):
                sess.run(tf.segment_sum(data, ids), {ids: [-1, 0, 0, 1]})
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(outs[0], {ids: [0, 3, 0, 0]})            # >= num_segments: an error
    want = [[[5, 6], [0, 0], [1, 2]], [[5, 6], [-fmax, -fmax], [1, 2]],
            [[5, 6], [fmax, fmax], [1, 2]], [[5, 6], [1, 1], [1, 2]],
            [[5, 6], [0, 0], [1, 2]], [[5, 6], [0, 0], [1, 2]],
            [[2, 2], [0, 0], [2, 2], [0, 0]], [[1, 2], [-2, 14]]]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)
