"""TF 1.15 core names composed in shardflow/core_extras.py, nest.py and sets_ops.py, against
NumPy (or TF's documented results): element-wise math, shapes, sort/argsort/searchsorted/roll,
sets, IndexedSlices, tf.nest, init_scope, local variables, py_function and initializers."""

import collections
import math

import numpy as np
import pytest

import shardflow as tf

import grad_check  # tests/python/grad_check.py

RNG = np.random.RandomState(0)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


def check_gradient(fn, *x0s, **kwargs):
    grad_check.check_gradient(fn, *x0s, rng=RNG, **kwargs)


# ---- element-wise ----------------------------------------------------------------------------


def test_logical_xor_rint_saturate_cast():
    a = tf.placeholder(tf.bool, [None])
    b = tf.placeholder(tf.bool, [None])
    x = tf.placeholder(tf.float32, [None])
    big = tf.placeholder(tf.float64, [None])
    xs = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7], np.float32)
    bigs = np.array([-1e10, -3.0, 0.0, 7.9, 300.0, 1e10])
    av, bv = np.array([True, True, False, False]), np.array([True, False, True, False])
    out = run([tf.logical_xor(a, b), tf.math.logical_xor(a, b), tf.rint(x), tf.math.rint(x),
               tf.saturate_cast(big, tf.uint8), tf.saturate_cast(big, tf.int32)],
              {a: av, b: bv, x: xs, big: bigs})
    np.testing.assert_array_equal(out[0], np.logical_xor(av, bv))
    np.testing.assert_array_equal(out[1], np.logical_xor(av, bv))
    np.testing.assert_array_equal(out[2], np.rint(xs))
    np.testing.assert_array_equal(out[3], np.rint(xs))
    np.testing.assert_array_equal(out[4], np.array([0, 0, 0, 7, 255, 255], np.uint8))
    assert out[4].dtype == np.uint8
    np.testing.assert_array_equal(out[5], [-2 ** 31, -3, 0, 7, 300, 2 ** 31 - 1])


def test_erfc_accurate_in_the_tail_and_its_gradient():
    xs = np.array([-3.0, -1.0, 0.0, 0.3, 1.0, 2.4, 2.6, 4.0, 6.0, 10.0, 26.0])
    x64 = tf.placeholder(tf.float64, [None])
    x32 = tf.placeholder(tf.float32, [None])
    y64, y32 = run([tf.erfc(x64), tf.math.erfc(x32)], {x64: xs, x32: xs.astype(np.float32)})
    ref = np.array([math.erfc(v) for v in xs])
    np.testing.assert_allclose(y64, ref, rtol=1e-12)
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32, ref.astype(np.float32), rtol=2e-6)
    g = run(tf.gradients(tf.reduce_sum(tf.erfc(x64)), x64)[0], {x64: xs})
    np.testing.assert_allclose(g, -2 / np.sqrt(np.pi) * np.exp(-xs ** 2), rtol=1e-9,
                               atol=1e-300)


def _erfinv_reference(y):
    """erfinv by bisection on math.erf / math.erfc (float64)."""
    if y == 0:
        return 0.0
    if abs(y) >= 1:
        return math.copysign(math.inf, y) if abs(y) == 1 else math.nan
    a, lo, hi = abs(y), 0.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        too_small = math.erf(mid) < a if a < 0.5 else math.erfc(mid) > 1 - a
        lo, hi = (mid, hi) if too_small else (lo, mid)
    return math.copysign((lo + hi) / 2, y)


def test_erfinv_float64_float32_edges_and_gradient():
    ys = np.array([-0.999999999, -0.9, -0.5, -0.1, 0.0, 1e-5, 0.3, 0.49, 0.51, 0.99, 0.9999999,
                   1 - 1e-15])
    y64 = tf.placeholder(tf.float64, [None])
    y32 = tf.placeholder(tf.float32, [None])
    out64, out32, edges = run(
        [tf.math.erfinv(y64), tf.math.erfinv(y32), tf.math.erfinv(tf.constant([1.0, -1.0, 1.5]))],
        {y64: ys, y32: ys[:-1].astype(np.float32)})
    ref = np.array([_erfinv_reference(v) for v in ys])
    np.testing.assert_allclose(out64, ref, rtol=1e-11, atol=1e-300)
    ref32 = np.array([_erfinv_reference(float(v)) for v in ys[:-1].astype(np.float32)])
    np.testing.assert_allclose(out32, ref32, rtol=2e-6)
    assert edges[0] == np.inf and edges[1] == -np.inf and np.isnan(edges[2])
    g = run(tf.gradients(tf.reduce_sum(tf.math.erfinv(y64)), y64)[0], {y64: ys[1:-2]})
    np.testing.assert_allclose(g, np.sqrt(np.pi) / 2 * np.exp(ref[1:-2] ** 2), rtol=1e-8)


def test_polyval_values_and_gradient():
    x = tf.placeholder(tf.float32, [None])
    c = tf.placeholder(tf.float32, [])
    xs = np.array([-2.0, 0.5, 3.0], np.float32)
    out = run([tf.math.polyval([c, 2.0, -1.0, 4.0], x), tf.math.polyval([], x),
               tf.math.polyval([3.0], x)], {x: xs, c: 1.5})
    np.testing.assert_allclose(out[0], np.polyval([1.5, 2.0, -1.0, 4.0], xs), rtol=1e-6)
    np.testing.assert_array_equal(out[1], np.zeros(3))
    assert float(out[2]) == 3.0
    with pytest.raises(ValueError):
        tf.math.polyval(np.array([1.0, 2.0]), x)
    coeffs = RNG.randn(3)
    check_gradient(lambda v: tf.math.polyval([coeffs[0], coeffs[1], coeffs[2]], v),
                   RNG.randn(4))


# ---- shapes ----------------------------------------------------------------------------------


def test_shape_n_and_broadcast_shapes():
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.int32, [None])
    sa, sb = tf.shape_n([a, b])
    got = run([sa, sb], {a: np.zeros((2, 3)), b: np.zeros(5, np.int32)})
    assert got[0].tolist() == [2, 3] and got[1].tolist() == [5]
    assert tf.broadcast_static_shape(tf.TensorShape([None, 1, 3]),
                                     tf.TensorShape([4, 3])).as_list() == [None, 4, 3]
    assert tf.broadcast_static_shape(tf.TensorShape([2, 1]),
                                     tf.TensorShape([5])).as_list() == [2, 5]
    with pytest.raises(ValueError):
        tf.broadcast_static_shape(tf.TensorShape([2, 3]), tf.TensorShape([4]))
    x = tf.placeholder(tf.int32, [None])
    y = tf.placeholder(tf.int32, [None])
    out = tf.broadcast_dynamic_shape(x, y)
    with tf.Session() as s:
        for sx, sy in [([2, 1, 3], [4, 3]), ([1], [5, 6]), ([7, 1], [7, 2]), ([], [3])]:
            got = s.run(out, {x: sx, y: sy})
            np.testing.assert_array_equal(got, np.broadcast(np.zeros(sx), np.zeros(sy)).shape)
        with pytest.raises(tf.errors.InvalidArgumentError):
            s.run(out, {x: [2, 3], y: [4]})


def test_matrix_transpose_top_level():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    xv = RNG.randn(4, 2, 3).astype(np.float32)
    got = run([tf.matrix_transpose(x), tf.linalg.matrix_transpose(x)], {x: xv})
    np.testing.assert_array_equal(got[0], np.swapaxes(xv, -1, -2))
    np.testing.assert_array_equal(got[1], np.swapaxes(xv, -1, -2))


# ---- sums and norms --------------------------------------------------------------------------


def test_reduce_euclidean_norm_clip_by_average_norm_accumulate_n():
    x = tf.placeholder(tf.float32, [None, 3])
    xv = RNG.randn(4, 3).astype(np.float32)
    out = run([tf.math.reduce_euclidean_norm(x), tf.math.reduce_euclidean_norm(x, 1, True),
               tf.math.reduce_euclidean_norm(tf.constant([[3, 4], [1, 1]]), 1)], {x: xv})
    np.testing.assert_allclose(out[0], np.sqrt((xv ** 2).sum()), rtol=1e-6)
    np.testing.assert_allclose(out[1], np.sqrt((xv ** 2).sum(1, keepdims=True)), rtol=1e-6)
    np.testing.assert_array_equal(out[2], [5, 1])
    for clip in (0.05, 10.0):
        got = run(tf.clip_by_average_norm(x, clip), {x: xv})
        avg = np.sqrt((xv ** 2).sum()) / xv.size
        want = xv * clip / avg if avg > clip else xv
        np.testing.assert_allclose(got, want, rtol=1e-5)
    a, b = tf.placeholder(tf.float32, [2]), tf.constant([1.0, 2.0])
    got = run([tf.accumulate_n([a, b, b]), tf.math.accumulate_n([a], shape=[2])],
              {a: [5.0, 6.0]})
    np.testing.assert_array_equal(got[0], [7.0, 10.0])
    np.testing.assert_array_equal(got[1], [5.0, 6.0])
    with pytest.raises(ValueError):
        tf.accumulate_n([])
    with pytest.raises(ValueError):
        tf.accumulate_n([a], shape=[3])


# ---- sorting and searching -------------------------------------------------------------------


def test_sort_and_argsort_with_fed_shapes_ties_and_axes():
    x = tf.placeholder(tf.float32, [None, None])
    xv = np.array([[3.0, 1.0, 2.0, 1.0, 5.0], [0.0, -1.0, 0.0, 7.0, 0.0]], np.float32)
    out = run([tf.sort(x), tf.sort(x, direction="DESCENDING"), tf.argsort(x),
               tf.argsort(x, direction="DESCENDING", stable=True), tf.sort(x, axis=0),
               tf.argsort(x, axis=0, direction="DESCENDING")], {x: xv})
    np.testing.assert_array_equal(out[0], np.sort(xv, -1))
    np.testing.assert_array_equal(out[1], -np.sort(-xv, -1))
    np.testing.assert_array_equal(out[2], np.argsort(xv, -1, kind="stable"))
    np.testing.assert_array_equal(out[3], np.argsort(-xv, -1, kind="stable"))
    np.testing.assert_array_equal(out[4], np.sort(xv, 0))
    np.testing.assert_array_equal(out[5], np.argsort(-xv, 0, kind="stable"))
    assert out[2].dtype == np.int32
    i = tf.placeholder(tf.int32, [2, 3, 4])
    iv = RNG.randint(-3, 3, size=(2, 3, 4)).astype(np.int32)
    got = run([tf.sort(i, axis=1), tf.argsort(i, axis=-1)], {i: iv})
    np.testing.assert_array_equal(got[0], np.sort(iv, 1))
    np.testing.assert_array_equal(got[1], np.argsort(iv, -1, kind="stable"))
    with pytest.raises(ValueError):
        tf.sort(x, direction="UP")


def test_sort_gradient():
    v = RNG.randn(2, 4)
    check_gradient(lambda t: tf.sort(t, direction="DESCENDING"), v)
    check_gradient(lambda t: tf.sort(t, axis=0), v)


def test_searchsorted_left_right_and_batched():
    seq = tf.placeholder(tf.float32, [None])
    vals = tf.placeholder(tf.float32, [None])
    sv = np.array([1.0, 2.0, 2.0, 3.0, 5.0], np.float32)
    vv = np.array([0.0, 2.0, 2.5, 5.0, 9.0], np.float32)
    left, right = run([tf.searchsorted(seq, vals), tf.searchsorted(seq, vals, side="right")],
                      {seq: sv, vals: vv})
    np.testing.assert_array_equal(left, np.searchsorted(sv, vv, "left"))
    np.testing.assert_array_equal(right, np.searchsorted(sv, vv, "right"))
    s2 = tf.placeholder(tf.int32, [None, 4])
    v2 = tf.placeholder(tf.int32, [None, 3])
    s2v = np.sort(RNG.randint(0, 10, size=(3, 4)), 1).astype(np.int32)
    v2v = RNG.randint(-1, 11, size=(3, 3)).astype(np.int32)
    got = run(tf.searchsorted(s2, v2, side="right", out_type=tf.int64), {s2: s2v, v2: v2v})
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [np.searchsorted(s2v[r], v2v[r], "right")
                                        for r in range(3)])


def test_roll_static_fed_shift_several_axes_and_gradient():
    x = tf.placeholder(tf.float32, [None, None])
    shift = tf.placeholder(tf.int32, [])
    shifts = tf.placeholder(tf.int32, [2])
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = tf.roll(x, shift, axis=1)
    out2 = tf.roll(x, shifts, axis=[0, 1])
    with tf.Session() as s:
        for k in (-5, -1, 0, 3, 9):
            np.testing.assert_array_equal(s.run(out, {x: xv, shift: k}), np.roll(xv, k, 1))
        np.testing.assert_array_equal(s.run(out2, {x: xv, shifts: [1, -2]}),
                                      np.roll(xv, (1, -2), (0, 1)))
        np.testing.assert_array_equal(s.run(tf.roll(x, [1, 2], [1, 1]), {x: xv}),
                                      np.roll(xv, 3, 1))
    check_gradient(lambda t: tf.roll(t, 2, 0), RNG.randn(3, 2))


def test_invert_permutation_and_unique_with_counts():
    p = tf.placeholder(tf.int32, [None])
    inv, inv_math = tf.invert_permutation(p), tf.math.invert_permutation(p)
    with tf.Session() as s:
        pv = np.array([3, 0, 4, 1, 2], np.int32)
        np.testing.assert_array_equal(s.run(inv, {p: pv}), np.argsort(pv))
        np.testing.assert_array_equal(s.run(inv_math, {p: pv}), np.argsort(pv))
        with pytest.raises(tf.errors.InvalidArgumentError):
            s.run(inv, {p: [0, 0, 1]})
        with pytest.raises(tf.errors.InvalidArgumentError):
            s.run(inv, {p: [0, 3, 1]})
    x = tf.placeholder(tf.int32, [None])
    xv = np.array([1, 1, 2, 4, 4, 4, 7, 8, 8], np.int32)
    y, idx, count = run(tf.unique_with_counts(x), {x: xv})
    np.testing.assert_array_equal(y, [1, 2, 4, 7, 8])
    np.testing.assert_array_equal(idx, [0, 0, 1, 2, 2, 2, 3, 4, 4])
    np.testing.assert_array_equal(count, [2, 1, 3, 1, 2])
    result = tf.unique_with_counts(x, out_idx=tf.int64)
    assert result.count.dtype == tf.int64 and result.idx.dtype == tf.int64


def test_histogram_fixed_width_bins():
    v = tf.placeholder(tf.float32, [None, 2])
    vv = np.array([[-1.0, 0.0], [1.5, 2.0], [5.0, 15.0]], np.float32)
    got = run(tf.histogram_fixed_width_bins(v, [0.0, 5.0], nbins=5), {v: vv})
    np.testing.assert_array_equal(got, [[0, 0], [1, 2], [4, 4]])
    assert got.dtype == np.int32


# ---- sets ------------------------------------------------------------------------------------


def _np_set_op(a_rows, b_rows, op):
    """TF's SparseTensorValue for a set op over lists of rows (lists of values)."""
    results = [sorted(op(set(ra), set(rb))) for ra, rb in zip(a_rows, b_rows)]
    indices = [[r, j] for r, row in enumerate(results) for j in range(len(row))]
    values = [v for row in results for v in row]
    width = max([len(row) for row in results] + [0])
    return np.array(indices, np.int64).reshape(-1, 2), np.array(values), [len(results), width]


def _check_sparse(got, want):
    np.testing.assert_array_equal(got.indices, want[0])
    np.testing.assert_array_equal(got.values, want[1])
    np.testing.assert_array_equal(got.dense_shape, want[2])


def test_sets_on_dense_fed_tensors():
    a = tf.placeholder(tf.int32, [None, None])
    b = tf.placeholder(tf.int32, [None, None])
    av = np.array([[5, 1, 3, 1], [4, 5, 4, 9], [2, 2, 2, 2]], np.int32)
    bv = np.array([[3, 1, 9], [6, 6, 6], [7, 2, 0]], np.int32)
    ops_ = [tf.sets.intersection(a, b), tf.sets.difference(a, b),
            tf.sets.difference(a, b, aminusb=False), tf.sets.union(a, b),
            tf.sets.set_intersection(a, b)]
    got = run(ops_, {a: av, b: bv})
    _check_sparse(got[0], _np_set_op(av, bv, lambda x, y: x & y))
    _check_sparse(got[1], _np_set_op(av, bv, lambda x, y: x - y))
    _check_sparse(got[2], _np_set_op(av, bv, lambda x, y: y - x))
    _check_sparse(got[3], _np_set_op(av, bv, lambda x, y: x | y))
    _check_sparse(got[4], _np_set_op(av, bv, lambda x, y: x & y))
    # Empty result rows everywhere: dense_shape [groups, 0].
    empty = run(tf.sets.intersection(a, b), {a: [[1, 2]], b: [[3, 4]]})
    assert empty.values.size == 0 and empty.dense_shape.tolist() == [1, 0]


def test_sets_rank3_and_sparse_inputs_and_size():
    a = tf.constant(RNG.randint(0, 4, size=(2, 2, 5)).astype(np.int64))
    b = tf.constant(RNG.randint(0, 4, size=(2, 2, 3)).astype(np.int64))
    av, bv, got = run([a, b, tf.sets.union(a, b)])
    results = [sorted(set(av[i, j]) | set(bv[i, j])) for i in range(2) for j in range(2)]
    want_idx = [[i, j, k] for i in range(2) for j in range(2)
                for k in range(len(results[2 * i + j]))]
    np.testing.assert_array_equal(got.indices, want_idx)
    np.testing.assert_array_equal(got.values, [v for row in results for v in row])
    assert got.dense_shape.tolist() == [2, 2, max(len(r) for r in results)]
    # Sparse sets (entries out of order) against a dense one; set sizes.
    sp = tf.sparse_placeholder(tf.int32, shape=[3, 4])
    spv = tf.SparseTensorValue(indices=[[2, 0], [0, 1], [0, 0], [0, 3], [2, 2]],
                               values=[7, 3, 5, 3, 8], dense_shape=[3, 4])
    dense = tf.constant([[3, 3, 0], [1, 2, 0], [8, 9, 9]])
    rows = [[5, 3, 3], [], [7, 8]]
    got = run([tf.sets.intersection(sp, dense), tf.sets.difference(dense, sp),
               tf.sets.size(sp), tf.sets.set_size(sp)], {sp: spv})
    dense_rows = [[3, 3, 0], [1, 2, 0], [8, 9, 9]]
    _check_sparse(got[0], _np_set_op(rows, dense_rows, lambda x, y: x & y))
    _check_sparse(got[1], _np_set_op(dense_rows, rows, lambda x, y: x - y))
    np.testing.assert_array_equal(got[2], [2, 0, 2])
    assert got[2].dtype == np.int32
    with pytest.raises(TypeError):
        tf.sets.size(dense)
    with pytest.raises(TypeError):
        tf.sets.union(tf.constant([["a"]]), tf.constant([["b"]]))


# ---- IndexedSlices, is_tensor, nest ----------------------------------------------------------


def test_indexed_slices_convert_to_dense_and_is_tensor():
    values = tf.placeholder(tf.float32, [None, 2])
    indices = tf.placeholder(tf.int32, [None])
    s = tf.IndexedSlices(values, indices, dense_shape=tf.constant([4, 2]))
    assert s.values is values and s.indices is indices and s.dtype == tf.float32
    dense = tf.convert_to_tensor(s)
    doubled = tf.multiply(s, 2.0)
    vv = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    got = run([dense, doubled], {values: vv, indices: [3, 0, 3]})
    want = np.zeros((4, 2), np.float32)
    np.add.at(want, [3, 0, 3], vv)
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(got[1], 2 * want)
    with pytest.raises(ValueError):
        tf.convert_to_tensor(tf.IndexedSlices(values, indices))
    v = tf.Variable(1.0)
    assert tf.is_tensor(values) and tf.is_tensor(v) and tf.is_tensor(s)
    assert tf.is_tensor(tf.SparseTensor([[0]], [1.0], [2]))
    assert not tf.is_tensor(np.zeros(2)) and not tf.is_tensor(3.0) and not tf.is_tensor([1])


def test_nest_flatten_pack_map_and_assert():
    point = collections.namedtuple("Point", ["x", "y"])
    structure = {"b": [1, (2, 3)], "a": point(4, {"z": 5, "y": 6}), "c": "text"}
    flat = tf.nest.flatten(structure)
    assert flat == [4, 6, 5, 1, 2, 3, "text"]
    packed = tf.nest.pack_sequence_as(structure, [v * 10 if isinstance(v, int) else v
                                                  for v in flat])
    assert packed == {"b": [10, (20, 30)], "a": point(40, {"z": 50, "y": 60}), "c": "text"}
    assert list(packed) == ["b", "a", "c"] and isinstance(packed["a"], point)
    ordered = collections.OrderedDict([("z", 1), ("a", 2)])
    assert tf.nest.flatten(ordered) == [2, 1]
    assert list(tf.nest.pack_sequence_as(ordered, [8, 9]).items()) == [("z", 9), ("a", 8)]
    assert tf.nest.map_structure(lambda u, w: u + w, [1, (2, 3)], [10, (20, 30)]) == \
        [11, (22, 33)]
    assert tf.nest.flatten(None) == [None] and tf.nest.flatten(np.zeros(3))[0].shape == (3,)
    assert tf.nest.is_nested([1]) and not tf.nest.is_nested("ab")
    assert tf.contrib.framework.nest.is_sequence((1,))
    tf.nest.assert_same_structure([1, (2, 3)], [4, (5, 6)])
    with pytest.raises(ValueError):
        tf.nest.assert_same_structure([1, 2], [1, [2, 3]])
    with pytest.raises(TypeError):
        tf.nest.assert_same_structure([1, 2], (1, 2))
    tf.nest.assert_same_structure([1, 2], (1, 2), check_types=False)
    with pytest.raises(ValueError):
        tf.nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(ValueError):
        tf.nest.pack_sequence_as([1, 2], [1])
    # Tensors are leaves: a structure of tensors runs as one fetch.
    t = tf.constant(2.0)
    doubled = tf.nest.map_structure(lambda u: u * 2.0, {"t": t, "pair": (t, t)})
    assert run(doubled) == {"t": 4.0, "pair": (4.0, 4.0)}


# ---- graph construction helpers --------------------------------------------------------------


def test_init_scope_clears_control_dependencies_and_lifts_out_of_loops():
    a = tf.constant(1.0, name="a")
    with tf.name_scope("outer"):
        with tf.control_dependencies([a]):
            with tf.init_scope():
                free = tf.constant(2.0, name="free")
            bound = tf.constant(3.0, name="bound")
    assert free.op.control_inputs == [] and free.op.name == "outer/free"
    assert [op.name for op in bound.op.control_inputs] == ["a"]
    made = []

    def body(i):
        with tf.init_scope():
            made.append(tf.constant(5.0, name="lifted"))
        return i + 1
    tf.while_loop(lambda i: i < 3, body, [tf.constant(0)])
    assert made[0].graph is tf.get_default_graph()
    assert run(made[0]) == 5.0


def test_get_local_variable_and_resource_variable_toggles():
    with tf.variable_scope("scope"):
        v = tf.get_local_variable("counter", shape=[2], initializer=tf.zeros_initializer())
    assert v.name.startswith("scope/counter")
    assert v in tf.local_variables() and v not in tf.global_variables()
    assert v not in tf.trainable_variables()
    assert tf.enable_resource_variables() is None and tf.disable_resource_variables() is None
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        s.run(v.assign_add([1.0, 2.0]))
        np.testing.assert_array_equal(s.run(v), [1.0, 2.0])


def test_py_function_single_and_list_tout():
    x = tf.placeholder(tf.float32, [None])
    seen = []

    def f(t):
        seen.append(type(t.numpy()))
        return np.sort(t.numpy())[::-1] * 2

    def g(t, u):
        return [t + u, np.int32(t.size)]
    y = tf.py_function(f, [x], tf.float32)
    pair = tf.py_function(g, [x, x], [tf.float32, tf.int32])
    out = run([y, pair], {x: [1.0, 3.0, 2.0]})
    np.testing.assert_array_equal(out[0], [6.0, 4.0, 2.0])
    np.testing.assert_array_equal(out[1][0], [2.0, 6.0, 4.0])
    assert out[1][1] == 3 and seen[0] is np.ndarray


# ---- initializers ----------------------------------------------------------------------------


def _sample(init, shape):
    return run(init(shape, tf.float32))


def test_initializers_statistics_and_identity():
    shape = [200, 300]
    for make, bound, truncated in [
            (tf.initializers.lecun_uniform(seed=1), np.sqrt(3 / 200.0), False),
            (tf.keras.initializers.lecun_uniform(seed=2), np.sqrt(3 / 200.0), False),
            (tf.uniform_unit_scaling_initializer(factor=2.0, seed=3), 2 * np.sqrt(3 / 200.0),
             False),
            (tf.initializers.uniform_unit_scaling(seed=3), np.sqrt(3 / 200.0), False),
            (tf.initializers.variance_scaling(2.0, "fan_out", "uniform", seed=4),
             np.sqrt(6 / 300.0), False),
            (tf.initializers.lecun_normal(seed=5), np.sqrt(1 / 200.0), True),
            (tf.keras.initializers.lecun_normal(seed=6), np.sqrt(1 / 200.0), True),
            (tf.initializers.variance_scaling(1.0, "fan_avg", "untruncated_normal", seed=7),
             np.sqrt(1 / 250.0), None)]:
        v = _sample(make, shape)
        if truncated is False:      # uniform in +-bound: std bound / sqrt(3)
            assert np.abs(v).max() <= bound + 1e-6
            np.testing.assert_allclose(v.std(), bound / np.sqrt(3), rtol=0.03)
        else:                       # stddev `bound` (truncated: corrected to keep it)
            np.testing.assert_allclose(v.std(), bound, rtol=0.03)
            if truncated:
                assert np.abs(v).max() <= 2 * bound / 0.87962566103423978 + 1e-6
    for ident in (tf.initializers.identity(gain=2.0), tf.identity_initializer(2.0),
                  tf.keras.initializers.Identity(gain=2.0)):
        np.testing.assert_array_equal(_sample(ident, [2, 3]), 2 * np.eye(2, 3))
    with pytest.raises(ValueError):
        tf.initializers.identity()([2, 2, 2])
    w = tf.get_variable("w", [3, 3], initializer=tf.initializers.identity())
    assert tf.keras.initializers.get("lecun_normal") is not None
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(s.run(w), np.eye(3))
    ones = run(tf.initializers.ones()([2], tf.float32))
    np.testing.assert_array_equal(ones, [1.0, 1.0])


# ---- top_k as one op (TopKV2) and the sorts built on it ----------------------------------------


def _topk_reference(x, k):
    """NumPy: the k largest along the last axis, largest first, ties by the lower index."""
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order


def test_top_k_is_one_op_matching_numpy_with_ties_and_a_fed_k():
    rng = np.random.RandomState(5)
    x = rng.randint(0, 6, size=(4, 3, 40)).astype(np.float32)     # many ties
    k = tf.placeholder(tf.int32, [])
    xt = tf.constant(x)
    values, indices = tf.nn.top_k(xt, k)
    assert [op.type for op in tf.get_default_graph().get_operations()].count("TopKV2") == 1
    for kk in (1, 7, 40):
        got_v, got_i = run([values, indices], {k: kk})
        want_v, want_i = _topk_reference(x, kk)
        np.testing.assert_array_equal(got_v, want_v)
        np.testing.assert_array_equal(got_i, want_i)
    static = tf.nn.top_k(xt, 5)
    assert static.values.shape.as_list() == [4, 3, 5] and static.indices.dtype == tf.int32
    ints = run(tf.nn.top_k(tf.constant([[5, 1, 5, -2]], tf.int64), 3))
    np.testing.assert_array_equal(ints.values, [[5, 5, 1]])
    np.testing.assert_array_equal(ints.indices, [[0, 2, 1]])
    with_nan = run(tf.nn.top_k(tf.constant([1.0, np.nan, 3.0]), 2))
    assert np.isnan(with_nan.values[0]) and with_nan.values[1] == 3.0   # NaN ranks highest
    with pytest.raises(ValueError, match="k=4 is not in"):
        tf.nn.top_k(tf.constant([1.0, 2.0, 3.0]), 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="k=9"):
        run(tf.nn.top_k(xt[0, 0, :8], k), {k: 9})


def test_top_k_gradient_goes_to_the_chosen_positions():
    x = tf.constant(np.array([[0.3, 0.9, 0.1, 0.5], [2.0, -1.0, 4.0, 3.0]], np.float32))
    values, _ = tf.nn.top_k(x, 2)
    loss = tf.reduce_sum(values * tf.constant([[1.0, 10.0]]))
    np.testing.assert_array_equal(run(tf.gradients(loss, x)[0]),
                                  [[0, 1, 0, 10], [0, 0, 1, 10]])


def test_sort_and_argsort_scale_and_stay_stable():
    rng = np.random.RandomState(3)
    big = rng.randn(200000).astype(np.float32)           # an O(n^2) sort could not do this
    np.testing.assert_array_equal(run(tf.sort(big)), np.sort(big))
    np.testing.assert_array_equal(run(tf.sort(big, direction="DESCENDING")), np.sort(big)[::-1])
    ties = rng.randint(0, 4, size=(3, 50)).astype(np.int32)
    ties[0, :3] = np.iinfo(np.int32).min                  # -x - 1 must not overflow
    ties[1, :3] = np.iinfo(np.int32).max
    for direction, sign in (("ASCENDING", 1), ("DESCENDING", -1)):
        got = run(tf.argsort(ties, axis=1, direction=direction))
        np.testing.assert_array_equal(got, np.argsort(sign * ties.astype(np.int64), axis=1,
                                                      kind="stable"))
    np.testing.assert_array_equal(run(tf.sort(ties, axis=0)), np.sort(ties, axis=0))
    small = tf.constant(np.array([[3, 1, 2]], np.uint8))
    np.testing.assert_array_equal(run(tf.sort(small)), [[1, 2, 3]])


# ---- random_gamma and random_poisson (RandomGamma, RandomPoissonV2) ---------------------------


def test_random_gamma_and_poisson_shapes_and_moments():
    a = tf.random_gamma([40000], [0.5, 2.0, 9.0], seed=1)
    b = tf.random.gamma([40000, 2], 3.0, beta=[1.0, 4.0], dtype=tf.float64, seed=2)
    p = tf.random_poisson([0.0, 1.5, 30.0], [40000], seed=3)
    q = tf.random.poisson(4.0, [3, 4], dtype=tf.int32, seed=4)
    assert a.shape.as_list() == [40000, 3] and b.shape.as_list() == [40000, 2, 2]
    assert p.shape.as_list() == [40000, 3] and p.dtype == tf.float32 and q.dtype == tf.int32
    av, bv, pv, qv = run([a, b, p, q])
    np.testing.assert_allclose(av.mean(0), [0.5, 2.0, 9.0], rtol=0.05)
    np.testing.assert_allclose(av.var(0), [0.5, 2.0, 9.0], rtol=0.1)
    # Gamma(3, rate beta): mean 3 / beta, variance 3 / beta^2.
    np.testing.assert_allclose(bv.reshape(-1, 2).mean(0), [3.0, 0.75], rtol=0.05)
    np.testing.assert_allclose(bv.reshape(-1, 2).var(0), [3.0, 3.0 / 16], rtol=0.1)
    assert bv.dtype == np.float64 and (av > 0).all()
    np.testing.assert_array_equal(pv[:, 0], 0)
    np.testing.assert_allclose(pv[:, 1:].mean(0), [1.5, 30.0], rtol=0.05)
    np.testing.assert_allclose(pv[:, 1:].var(0), [1.5, 30.0], rtol=0.1)
    assert (pv == np.round(pv)).all() and qv.shape == (3, 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="alpha must be positive"):
        run(tf.random_gamma([2], [1.0, -1.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="rate must not be negative"):
        run(tf.random_poisson(tf.constant([-2.0]), [2]))
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        tf.random_gamma([2], 1.0, dtype=tf.int32)


def test_random_poisson_of_huge_or_infinite_rates_answers():
    # Regression: std::poisson_distribution never returned for rates beyond int64 (a 200-byte
    # request wedged a server's task, which then ignored SIGTERM); infinite alphas likewise.
    pv = run(tf.random.poisson([1e30, 5e18, 0.0], [3], seed=1))
    np.testing.assert_allclose(pv[:, :2], [[1e30, 5e18]] * 3, rtol=1e-6)
    np.testing.assert_array_equal(pv[:, 2], 0)
    for lam, dtype, match in ((1e10, tf.int32, "too large"), (1e19, tf.int64, "too large"),
                              (float("inf"), tf.float32, "finite"),
                              (float("nan"), tf.float32, "finite")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=match):
            run(tf.random.poisson([lam], [2], dtype=dtype))
    with pytest.raises(tf.errors.InvalidArgumentError, match="alpha must be finite"):
        run(tf.random_gamma([2], float("inf")))
