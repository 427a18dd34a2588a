"""TF1 indexing and tf.strided_slice (shardflow/strided_slice.py) against NumPy: static and
run-time shapes, tensor indices and bounds, clamping, negative steps, masks, gradients, the
errors TF1 raises, and that a fully static index stays one Slice op."""
import numpy as np
import pytest

import shardflow as tf

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

# Keys NumPy and TF1 agree on (basic indexing), static ints and slices only.
STATIC_KEYS = [
    np.s_[1], np.s_[-1], np.s_[:, -2], np.s_[1:], np.s_[:-1], np.s_[:, :-1], np.s_[-2:, 1:3],
    np.s_[::-1], np.s_[:, ::-2], np.s_[::2, 1, -1::-1], np.s_[:100, -100:, 3:0:-2],
    np.s_[5:], np.s_[:, 7:2], np.s_[..., 2], np.s_[..., ::3], np.s_[0, None, :, 1],
    np.s_[None, ..., None], np.s_[1, ..., -1], np.s_[-1:-4:-1, ::-3, 4:-6:-2],
    np.s_[...], np.s_[2:1], np.s_[:, 3:-5:-1],
]


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


@pytest.mark.parametrize("shape", [[3, 4, 5], [None, None, None], [None, 4, None]])
def test_static_keys_match_numpy(shape):
    x = tf.placeholder(tf.float32, shape)
    outs = [x[k] for k in STATIC_KEYS]
    got = run(outs, {x: A})
    for k, out, value in zip(STATIC_KEYS, outs, got):
        want = A[k]
        assert value.shape == want.shape, k
        np.testing.assert_array_equal(value, want, err_msg=str(k))
        static = out.shape.as_list()
        assert len(static) == want.ndim, k
        if shape == [3, 4, 5]:
            assert static == list(want.shape), k


@pytest.mark.parametrize("index_dtype", [tf.int32, tf.int64])
def test_tensor_indices_and_bounds(index_dtype):
    x = tf.placeholder(tf.float32, [None, None, None])
    i = tf.placeholder(index_dtype, [])
    n = tf.placeholder(index_dtype, [])
    cases = [
        (lambda t: t[i], lambda a, iv, nv: a[iv]),
        (lambda t: t[:, i], lambda a, iv, nv: a[:, iv]),
        (lambda t: t[:n], lambda a, iv, nv: a[:nv]),
        (lambda t: t[i:i + 2], lambda a, iv, nv: a[iv:iv + 2]),
        (lambda t: t[n::-1, i], lambda a, iv, nv: a[nv::-1, iv]),
        (lambda t: t[:, ::n], lambda a, iv, nv: a[:, ::nv]),
        (lambda t: t[i, n:, ::-1], lambda a, iv, nv: a[iv, nv:, ::-1]),
        (lambda t: t[..., i:n], lambda a, iv, nv: a[..., iv:nv]),
    ]
    outs = [make(x) for make, _ in cases]
    for iv, nv in [(0, 2), (2, 1), (-1, 3), (-3, -2), (1, 9), (2, -7)]:
        got = run(outs, {x: A, i: iv, n: nv})
        for (_, want_fn), value in zip(cases, got):
            want = want_fn(A, iv, nv)
            assert value.shape == want.shape, (iv, nv)
            np.testing.assert_array_equal(value, want)


def test_bounds_clamp_to_a_dimension_empty_at_run_time():
    x = tf.placeholder(tf.float32, [None, 3])
    keys = [np.s_[1:], np.s_[:-1], np.s_[::-1], np.s_[5:], np.s_[-2:], np.s_[:, 1:]]
    outs = [x[k] for k in keys]
    for rows in (0, 1, 4):
        a = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
        for k, value in zip(keys, run(outs, {x: a})):
            assert value.shape == a[k].shape, (rows, k)
            np.testing.assert_array_equal(value, a[k])


def test_static_shapes_follow_tf1():
    x = tf.placeholder(tf.float32, [None, 5])
    i = tf.placeholder(tf.int32, [])
    assert x[:, :-1].shape.as_list() == [None, 4]
    assert x[1:3].shape.as_list() == [None, 5]
    assert x[0].shape.as_list() == [5]
    assert x[i].shape.as_list() == [5]
    assert x[:, i].shape.as_list() == [None]
    assert x[:, ::-2].shape.as_list() == [None, 3]
    assert x[..., None, 1:].shape.as_list() == [None, 1, 4]
    assert x[:, 7:].shape.as_list() == [None, 0]
    assert x[:, i:].shape.as_list() == [None, None]
    assert tf.constant(3.0)[...].shape.as_list() == []


def test_a_static_index_stays_one_slice_op():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 5])
        before = len(g.get_operations())
        y = x[:, 1:-1]
        added = [op.type for op in g.get_operations()[before:] if op.type != "Const"]
    assert added == ["Slice"]
    assert y.shape.as_list() == [None, 3]


def test_strided_slice_masks_match_numpy():
    t = tf.constant(A)
    i = tf.placeholder(tf.int32, [])
    cases = [
        (tf.strided_slice(t, [0, 1], [2, 3]), A[0:2, 1:3]),
        (tf.strided_slice(t, [2, 0, 4], [0, 4, 0], [-1, 2, -2]), A[2:0:-1, 0:4:2, 4:0:-2]),
        (tf.strided_slice(t, [1, 3], [0, 0], begin_mask=1, end_mask=2), A[:0, 3:]),
        (tf.strided_slice(t, [0, 1], [0, 2], ellipsis_mask=1), A[..., 1:2]),
        (tf.strided_slice(t, [0, 0, 1], [0, 0, 2], new_axis_mask=2, shrink_axis_mask=1),
         A[0, None, 1:2]),
        (tf.strided_slice(t, [-1, 0, -1], [0, 0, 0], [1, 1, -1], end_mask=2,
                          shrink_axis_mask=1), A[-1, :, -1:0:-1]),
        (tf.strided_slice(t, tf.constant([1, 1]), tf.constant([3, 4]), tf.constant([1, 2])),
         A[1:3, 1:4:2]),
        (tf.strided_slice(t, [0, i], [3, i + 2]), A[0:3, 1:3]),
        (tf.strided_slice(t, [i], [0], [-1], end_mask=1), A[1::-1]),
    ]
    got = run([c[0] for c in cases], {i: 1})
    for (out, want), value in zip(cases, got):
        assert value.shape == want.shape, out.name
        np.testing.assert_array_equal(value, want)
    named = tf.strided_slice(t, [1], [2], name="rows")
    assert named.op.name == "rows"


def test_ptb_producer_slices_with_a_tensor_step_index():
    batch_size, num_steps = 2, 3
    raw = np.arange(20, dtype=np.int32)
    batch_len = raw.size // batch_size
    data = tf.reshape(tf.constant(raw)[0:batch_size * batch_len], [batch_size, batch_len])
    i = tf.placeholder(tf.int32, [])
    x = tf.strided_slice(data, [0, i * num_steps], [batch_size, (i + 1) * num_steps])
    y = tf.strided_slice(data, [0, i * num_steps + 1], [batch_size, (i + 1) * num_steps + 1])
    x.set_shape([batch_size, num_steps])
    grid = raw.reshape(batch_size, batch_len)
    with tf.Session() as sess:
        for step in range(3):
            xv, yv = sess.run([x, y], {i: step})
            np.testing.assert_array_equal(xv, grid[:, step * num_steps:(step + 1) * num_steps])
            np.testing.assert_array_equal(
                yv, grid[:, step * num_steps + 1:(step + 1) * num_steps + 1])


def test_gradients_through_negative_and_tensor_bounds():
    x = tf.placeholder(tf.float32, [None, None])
    i = tf.placeholder(tf.int32, [])
    a = np.random.RandomState(0).rand(5, 4).astype(np.float32)
    keys = [(np.s_[:, :-1], lambda t: t[:, :-1]), (np.s_[2:4, ::-1], lambda t: t[i:i + 2, ::-1]),
            (np.s_[-1], lambda t: t[-1]), (np.s_[1::2, 3], lambda t: t[1::2, i + 1]),
            (np.s_[3::-2], lambda t: t[i + 1::-2])]
    for key, make in keys:
        w = np.random.RandomState(1).rand(*a[key].shape).astype(np.float32)
        loss = tf.reduce_sum(tf.square(make(x)) * w)
        (g,) = tf.gradients(loss, [x])
        want = np.zeros_like(a)
        want[key] = 2 * a[key] * w
        np.testing.assert_allclose(run(g, {x: a, i: 2}), want, rtol=1e-6, err_msg=str(key))


def test_out_of_range_indices_and_bad_keys():
    x = tf.placeholder(tf.float32, [None, 4])
    i = tf.placeholder(tf.int32, [])
    with pytest.raises(IndexError, match="out of bounds"):
        x[:, 4]
    with pytest.raises(ValueError, match="out of bounds"):
        x[:, -5]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]
    with pytest.raises(ValueError, match="one ... at most"):
        x[..., 0, ...]
    with pytest.raises(TypeError, match="valid indices"):
        x[[0, 1]]
    with pytest.raises(TypeError, match="int32 or int64"):
        x[tf.constant(1.0)]
    a = np.zeros((3, 4), np.float32)
    for out, feed in [(x[i], {i: 3}), (x[i], {i: -4}), (x[:, i], {i: 4}), (x[-4], {}),
                      (x[3], {}), (x[::i], {i: 0})]:
        feed[x] = a
        with pytest.raises(tf.errors.InvalidArgumentError):
            run(out, feed)
    np.testing.assert_array_equal(run(x[i], {x: a + 1, i: -3}), np.ones(4))


def test_variables_and_scalars_index_the_same_way():
    v = tf.Variable(A[0])
    i = tf.placeholder(tf.int64, [])
    s = tf.constant(7.0)
    outs = [v[1:, -1], v[i, ::-1], v[..., None], s[...], s[None], s[tf.newaxis, ...]]
    (g,) = tf.gradients(tf.reduce_sum(v[i, ::-2]), [v])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(outs + [g], {i: -2})
    wants = [A[0][1:, -1], A[0][-2, ::-1], A[0][..., None], np.float32(7.0), np.array([7.0]),
             np.array([7.0])]
    for value, want in zip(got, wants):
        assert np.shape(value) == np.shape(want)
        np.testing.assert_array_equal(value, want)
    want_g = np.zeros_like(A[0])
    want_g[-2, ::-2] = 1
    np.testing.assert_array_equal(np.asarray(got[-1]), want_g)


def test_iterating_a_tensor_follows_tf1():
    """`for row in x` gives x's rows when dimension 0 is known; otherwise a TypeError (Python's
    fallback through __getitem__ never ended on an unknown dimension)."""
    with tf.Graph().as_default():
        x = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
        rows = list(x)
        assert len(rows) == 3
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(rows), np.arange(6).reshape(3, 2))
        a, b = tf.placeholder(tf.float32, [2, None])  # unpacking, as TF1 programs do
        assert a.shape.as_list() == [None]
        for bad, message in [(tf.placeholder(tf.float32, [None, 3]), "unknown first"),
                             (tf.placeholder(tf.float32), "unknown shape"),
                             (tf.constant(1.0), "scalar")]:
            with pytest.raises(TypeError, match=message):
                iter(bad)
