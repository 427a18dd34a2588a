"""TF 1.15 op semantics a probe found different in shardflow: Python floats truncated into
integer tensors, integer pow and matmul, range's element count, out-of-range lengths, ids and
split sizes, true division of small integers, and TF1 code that was refused (a partial
placeholder_with_default shape, & | ^ ~ on bools, tensor axes, numeric tf.where, a constant
padded to its shape)."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


# ---- silent wrong values ------------------------------------------------------------------

def test_python_float_into_an_int_tensor_is_a_type_error():
    x = tf.placeholder(tf.int32, [2])
    builders = [
        lambda: x * 2.5, lambda: 2.5 * x, lambda: tf.add(x, 1.5), lambda: tf.maximum(x, 0.5),
        lambda: tf.clip_by_value(x, 0.5, 1.5), lambda: x < 2.5, lambda: x ** 2.0,
        lambda: x / 2.5, lambda: x - [1, 2.0], lambda: tf.constant(1.5, tf.int32),
        lambda: tf.constant([1, 2.0], tf.int64), lambda: tf.convert_to_tensor(1.5, tf.int32)]
    for build in builders:
        with pytest.raises(TypeError, match="Expected int(32|64), got .* of type 'float'"):
            build()
    # NumPy floats are cast, as TF's; Python ints convert
    ys = [x * 2, tf.constant(np.array([1.7, 2.2]), tf.int32), x + np.float64(3.9),
          tf.cast(1.5, tf.int32), tf.zeros([2], tf.int32) + 1]
    out = run(ys, {x: [1, 2]})
    for got, want in zip(out, [[2, 4], [1, 2], [4, 5], 1, [1, 1]]):
        np.testing.assert_array_equal(got, want)


def test_integer_pow_wraps_and_refuses_negative_exponents():
    b = tf.placeholder(tf.int32, [3])
    e = tf.placeholder(tf.int32, [3])
    wide = tf.placeholder(tf.int64, [1])
    assert run(tf.pow(tf.constant([3]), 21))[0] == 1870418611
    assert run(wide ** 41, {wide: [3]})[0] == (3 ** 41 + 2 ** 63) % 2 ** 64 - 2 ** 63
    np.testing.assert_array_equal(run(tf.pow(b, e), {b: [2, -3, 5], e: [10, 3, 0]}),
                                  [1024, -27, 1])
    assert run(tf.pow(tf.constant([3], tf.uint8), 5))[0] == 3 ** 5 % 256
    for y in (tf.pow(b, e), b ** -2):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Integers to negative integer powers are not allowed"):
            run(y, {b: [2, 1, -1], e: [-1, 1, 1]})


def test_integer_matmul_is_exact_and_wraps():
    a = tf.placeholder(tf.int64, [1, 1])
    c = tf.placeholder(tf.int32, [1, 2])
    d = tf.placeholder(tf.int32, [2, 1])
    wrapped = ((2 ** 40 + 1) ** 2 + 2 ** 63) % 2 ** 64 - 2 ** 63   # int64 wrap-around
    assert run(tf.matmul(a, a), {a: [[2 ** 40 + 1]]})[0, 0] == wrapped
    assert run(tf.matmul(a, tf.constant([[2 ** 20 + 1]], tf.int64)),
               {a: [[2 ** 40 + 1]]})[0, 0] == (2 ** 40 + 1) * (2 ** 20 + 1)
    assert run(tf.matmul(c, d), {c: [[65536, 1]], d: [[65536], [3]]})[0, 0] == 3


def test_range_counts_in_the_output_dtype():
    got = run([tf.range(1, 1.3, 0.1), tf.range(0.1, 0.4, 0.1), tf.range(0, 2.1, 0.7),
               tf.range(10, 1, -3), tf.range(5, 5)])
    np.testing.assert_allclose(got[0], [1.0, 1.1, 1.2], rtol=1e-6)
    np.testing.assert_allclose(got[1], [0.1, 0.2, 0.3], rtol=1e-6)
    np.testing.assert_allclose(got[2], [0.0, 0.7, 1.4], rtol=1e-6)
    np.testing.assert_array_equal(got[3], [10, 7, 4])
    assert got[0].dtype == np.float32 and got[3].dtype == np.int32 and got[4].size == 0
    for bad in [lambda: tf.range(5, 1), lambda: tf.range(0, 5, -1), lambda: tf.range(0, 1, 0)]:
        with pytest.raises(ValueError, match="Requires"):
            bad()
    with pytest.raises(TypeError, match="Expected int32"):
        tf.range(0, 5.5, dtype=tf.int32)


def test_reverse_sequence_lengths_out_of_range_fail_the_step():
    x = tf.placeholder(tf.int32, [2, 4])
    lengths = tf.placeholder(tf.int32, [2])
    y = tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)
    rows = [[1, 2, 3, 4], [5, 6, 7, 8]]
    np.testing.assert_array_equal(run(y, {x: rows, lengths: [4, 2]}),
                                  [[4, 3, 2, 1], [6, 5, 7, 8]])
    for bad in ([5, 1], [-1, 1]):
        with pytest.raises(tf.errors.InvalidArgumentError, match="seq_lengths must lie in"):
            run(y, {x: rows, lengths: bad})


def test_split_sizes_must_sum_to_the_dimension():
    with pytest.raises(ValueError, match="must sum to dimension 0 \\(5\\)"):
        tf.split(tf.placeholder(tf.float32, [5]), [1, 2])
    x = tf.placeholder(tf.float32, [None])
    parts = tf.split(x, [1, 2])
    np.testing.assert_array_equal(run(parts, {x: [0, 1, 2]})[1], [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="must sum to dimension 0"):
        run(parts, {x: np.arange(5)})


def test_dynamic_partition_id_out_of_range_fails_the_step():
    d = tf.placeholder(tf.int32, [2])
    p = tf.placeholder(tf.int32, [2])
    parts = tf.dynamic_partition(d, p, 2)
    got = run(parts, {d: [10, 20], p: [1, 0]})
    assert got[0].tolist() == [20] and got[1].tolist() == [10]
    for bad in ([2, 0], [-1, 0]):
        with pytest.raises(tf.errors.InvalidArgumentError, match="not in \\[0, 2\\)"):
            run(parts, {d: [10, 20], p: bad})


def test_int64_segment_ids_past_int32_fail_rather_than_wrap():
    ids = tf.placeholder(tf.int64, [2])
    total = tf.unsorted_segment_sum(tf.ones([2]), ids, 3)
    np.testing.assert_array_equal(run(total, {ids: [0, 2]}), [1, 0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        run(total, {ids: [0, 2 ** 40]})


def test_true_division_of_small_ints_is_float32():
    a = tf.placeholder(tf.uint8, [1])
    b = tf.placeholder(tf.int8, [1])
    c = tf.placeholder(tf.int32, [1])
    assert (a / a).dtype == tf.float32 and (b / 2).dtype == tf.float32
    assert (c / c).dtype == tf.float64 and (tf.cast(c, tf.int64) / 2).dtype == tf.float64
    np.testing.assert_allclose(run(b / 2, {b: [-7]}), [-3.5])


def test_matmul_of_unknown_rank_is_batched_when_run():
    a = tf.placeholder(tf.float32, None)
    b = tf.placeholder(tf.float32, None)
    got = run(tf.matmul(a, b), {a: np.ones((4, 2, 3)), b: np.ones((4, 3, 5))})
    np.testing.assert_array_equal(got, np.full((4, 2, 5), 3.0))
    got = run(tf.matmul(a, b), {a: np.ones((2, 3)), b: np.ones((3, 5))})
    np.testing.assert_array_equal(got, np.full((2, 5), 3.0))


# ---- refused valid TF1 code ---------------------------------------------------------------

def test_placeholder_with_default_takes_a_less_specific_shape():
    x = tf.placeholder_with_default(np.zeros((2, 3), np.float32), shape=[None, 3])
    assert x.shape.as_list() == [None, 3]
    y = x + 1
    assert run(y).shape == (2, 3)
    np.testing.assert_array_equal(run(y, {x: np.ones((5, 3))}), np.full((5, 3), 2.0))
    # a fed value is not folded away as a constant
    perm = tf.placeholder_with_default([0, 1], [2])
    z = tf.transpose(tf.reshape(tf.range(6), [2, 3]), tf.concat([perm, [2]], 0)[:2])
    assert run(z, {perm: [1, 0]}).shape == (3, 2)
    with pytest.raises(ValueError, match="the default has shape"):
        tf.placeholder_with_default(np.zeros((2, 3)), shape=[None, 4])


def test_bool_operators_are_logical_ops():
    a = tf.placeholder(tf.bool, [2])
    b = tf.placeholder(tf.bool, [2])
    got = run([a & b, a | b, a ^ b, ~a, True & a], {a: [True, False], b: [True, True]})
    assert [g.tolist() for g in got] == [[True, False], [True, True], [False, True],
                                         [False, True], [True, False]]


def test_tensor_valued_axis_perm_and_depth():
    x = tf.placeholder(tf.float32, [2, 3])
    axis = tf.placeholder_with_default(1, [])
    feed = {x: np.arange(6).reshape(2, 3)}
    assert run(tf.concat([x, x], axis), feed).shape == (2, 6)
    assert run(tf.concat([x, x], axis), {x: feed[x], axis: 0}).shape == (4, 3)
    assert run(tf.transpose(x, tf.placeholder_with_default([1, 0], [2])), feed).shape == (3, 2)
    assert run(tf.expand_dims(x, tf.placeholder_with_default(0, [])), feed).shape == (1, 2, 3)
    depth = tf.placeholder_with_default(3, [])
    np.testing.assert_array_equal(run(tf.one_hot([1, 2], depth)), [[0, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="depth must be non-negative"):
        tf.one_hot([0], -1)


def test_where_of_numbers_gives_the_nonzero_coordinates():
    np.testing.assert_array_equal(run(tf.where(tf.constant([0., 3., 0., -1.]))), [[1], [3]])
    np.testing.assert_array_equal(run(tf.where(tf.constant([[0, 2], [1, 0]]))),
                                  [[0, 1], [1, 0]])


def test_constant_pads_a_short_list_with_its_last_element():
    np.testing.assert_array_equal(run(tf.constant([1, 2], shape=[4])), [1, 2, 2, 2])
    np.testing.assert_array_equal(run(tf.constant([1., 2., 3.], shape=[2, 2])),
                                  [[1, 2], [3, 3]])
    with pytest.raises(ValueError, match="Too many elements provided"):
        tf.constant([1, 2, 3], shape=[2])


def test_minor_argument_errors():
    with pytest.raises(ValueError, match="Axis 1 specified more than once"):
        tf.reduce_sum(tf.ones([2, 3]), axis=[1, 1])
    with pytest.raises(ValueError, match="specified more than once"):
        tf.reduce_sum(tf.ones([2, 3]), axis=[1, -1])
    with pytest.raises(ValueError, match="num_lower must be negative or less or equal"):
        tf.matrix_band_part(tf.ones([2, 2]), 10, -5)


def test_asserts_fail_with_tf1s_message_and_the_values():
    # Regression: asserts were CheckNumerics of a NaN, so every failure ended "tensor of shape []
    # holds NaN at element 0" and printed no values. They are Assert ops now, as TF1's.
    x = tf.placeholder(tf.int32, [None], name="x")
    y = tf.constant([1, 3], name="y")
    eq = tf.assert_equal(x, y, message="shapes differ")
    pos = tf.assert_positive(x)
    big = tf.Assert(tf.reduce_all(x < 3), ["x is", x, tf.reshape(tf.range(6), [2, 3])],
                    summarize=4)
    lengths = tf.placeholder(tf.int32, [1])
    rev = tf.reverse_sequence(tf.ones([1, 2]), lengths, seq_axis=1, batch_axis=0)
    with tf.Session() as sess:
        sess.run([eq, pos], {x: [1, 3]})
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(eq, {x: [1, 2]})
        assert ("assertion failed: [shapes differ] [Condition x == y did not hold element-wise:]"
                " [x (x:0) = ] [1 2] [y (y:0) = ] [1 3]") in str(e.value)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[x \(x:0\) = \] \[0 -1 5\]"):
            sess.run(pos, {x: [0, -1, 5]})
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(big, {x: [1, 2, 3, 4, 5]})
        assert "assertion failed: [x is] [1 2 3 4...] [[0 1 2][3...]...]" in str(e.value)
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(rev, {lengths: [3]})
        assert "reverse_sequence" in str(e.value) and "NaN" not in str(e.value)


def test_bitwise_namespace_and_integer_kernels():
    # tf.bitwise was missing (AttributeError); integer pow and matmul were computed in float64
    # (saturating, inexact above 2^53). All are engine kernels now.
    a = tf.constant([12, -1, 5], tf.int32)
    b = tf.constant([10, 3, 1], tf.int32)
    big = tf.constant([[2 ** 53 + 1, 1]], tf.int64)
    with tf.Session() as sess:
        got = sess.run([tf.bitwise.bitwise_and(a, b), tf.bitwise.bitwise_or(a, b),
                        tf.bitwise.bitwise_xor(a, b), tf.bitwise.invert(a),
                        tf.bitwise.left_shift(a, b), tf.bitwise.right_shift(a, b)])
        assert [g.tolist() for g in got] == [[8, 3, 1], [14, -1, 5], [6, -4, 4],
                                             [-13, 0, -6], [12288, -8, 10], [0, -1, 2]]
        assert sess.run(tf.bitwise.invert(tf.constant([0, 5], tf.uint8))).tolist() == [255, 250]
        assert sess.run(tf.pow(tf.constant(3), 21)) == 1870418611
        assert sess.run(tf.matmul(big, tf.constant([[3], [1]], tf.int64)))[0, 0] == \
            3 * (2 ** 53 + 1) + 1


def test_range_of_tensors_checks_as_tf_and_gather_takes_a_tensor_axis():
    # Regression: a zero delta fed at run time failed as an integer division by zero (or asked
    # Fill for 2^63 floats), bounds in the wrong order gave an empty range silently, and
    # gather(axis=<tensor>) raised "a symbolic tensor has no truth value".
    a, b, d = (tf.placeholder(tf.int32, []) for _ in range(3))
    f = tf.placeholder(tf.float32, [])
    r, rf = tf.range(a, b, d), tf.range(0.0, f, 1.0)
    axis = tf.placeholder(tf.int32, [])
    g = tf.gather(tf.constant([[0, 1, 2], [3, 4, 5]]), [2, 0], axis=axis)
    with tf.Session() as sess:
        assert sess.run(r, {a: 10, b: 0, d: -4}).tolist() == [10, 6, 2]
        for feed, text in [((0, 5, 0), "Requires delta != 0"),
                           ((5, 1, 1), "Requires start <= limit when delta > 0"),
                           ((0, 5, -1), "Requires start >= limit when delta < 0")]:
            with pytest.raises(tf.errors.InvalidArgumentError, match=text):
                sess.run(r, dict(zip((a, b, d), feed)))
        with pytest.raises(tf.errors.InvalidArgumentError, match="a finite range"):
            sess.run(rf, {f: np.inf})
        assert sess.run(g, {axis: 1}).tolist() == [[2, 0], [5, 3]]


def test_second_derivative_through_relu_is_zeros_not_none():
    # As TF1's ReluGrad gradient: zeros for the features (WGAN-GP's penalty through a relu).
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        b = tf.Variable([0.5, -0.5, 1.0])
        g = tf.gradients(tf.reduce_sum(tf.nn.relu(x * 2.0 + b)), x)[0]
        gb, = tf.gradients(tf.reduce_sum(tf.square(g)), [b])
        assert gb is not None
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(gb, {x: [1.0, -1.0, 0.0]}), [0, 0, 0])
