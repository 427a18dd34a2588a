"""Core TF 1.15 behaviour that BERT, the NMT tutorial, input pipelines and Transformer code
rely on, each of which failed or differed before: tf.group of nested lists, py_func's scalar
arguments, get_variable from a tensor or a typed constant, feeds converted to the placeholder's
dtype, integer random_uniform, true division of Python ints, integer scatter_nd, label
smoothing of NumPy logits, fetching tf.unique, boolean_mask with an axis, einsum with '...'."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_group_flattens_nested_lists_as_bert_calls_it():
    a, b, c = tf.Variable(1.0), tf.Variable(2.0), tf.Variable(3.0)
    train_op = tf.group(a.assign(10.0), [b.assign(20.0)], {"c": c.assign(30.0)})
    both = tf.group([a.assign_add(1.0), b.assign_add(1.0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train_op)
        assert sess.run([a, b, c]) == [10.0, 20.0, 30.0]
        sess.run(both)
        assert sess.run([a, b]) == [11.0, 21.0]


def test_py_func_gets_scalars_as_bytes_and_numpy_scalars():
    seen = []

    def read(filename, label, row):
        seen.append((type(filename), type(label), type(row)))
        return np.float32(len(filename.decode()) + label + row.sum())

    out = tf.py_func(read, [tf.constant("abc.png"), tf.constant(2.0), tf.constant([1.0, 1.0])],
                     tf.float32)
    with tf.Session() as sess:
        assert sess.run(out) == 11.0
    assert seen == [(bytes, np.float32, np.ndarray)]
    data = tf.data.Dataset.from_tensor_slices(["a", "bcd"]).map(
        lambda f: tf.py_func(lambda s: np.int32(len(s.decode())), [f], tf.int32))
    value = data.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [sess.run(value), sess.run(value)] == [1, 3]


def test_get_variable_from_a_tensor_or_typed_constant():
    from_tensor = tf.get_variable("e", initializer=tf.constant([1.0, 2.0]))
    ints = tf.get_variable("i", initializer=np.array([1, 2], np.int32))
    listed = tf.get_variable("l", initializer=[3, 4])
    floats = tf.get_variable("f", initializer=[0.5, 1.5])
    assert from_tensor.shape.as_list() == [2] and from_tensor.dtype == tf.float32
    assert ints.dtype == tf.int32 and listed.dtype == tf.int32 and floats.dtype == tf.float32
    with pytest.raises(ValueError, match="do not give a shape"):
        tf.get_variable("bad", shape=[2], initializer=tf.constant([1.0, 2.0]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(from_tensor).tolist() == [1.0, 2.0]
        assert sess.run(listed).tolist() == [3, 4]


def test_feeds_convert_to_the_placeholder_dtype():
    ids = tf.placeholder(tf.int32, [3])
    words = tf.placeholder(tf.string, [None])
    with tf.Session() as sess:
        assert sess.run(ids * 2, {ids: np.array([1.0, 2.7, -1.5])}).tolist() == [2, 4, -2]
        with pytest.raises(TypeError, match="int32"):
            sess.run(ids, {ids: np.array(["a", "b", "c"])})
        assert sess.run(words, {words: ["x"]}).tolist() == [b"x"]


def test_integer_random_uniform():
    tf.set_random_seed(7)
    draws = tf.random_uniform([4000], minval=-3, maxval=5, dtype=tf.int32)
    wide = tf.random_uniform([10], 0, tf.constant(2, tf.int64), dtype=tf.int64)
    with tf.Session() as sess:
        values, w = sess.run([draws, wide])
    assert values.dtype == np.int32 and w.dtype == np.int64
    assert values.min() == -3 and values.max() == 4
    assert abs(np.bincount(values + 3).min() - 500) < 120          # about uniform
    assert set(w.tolist()) <= {0, 1}
    with pytest.raises(ValueError, match="maxval"):
        tf.random_uniform([3], dtype=tf.int32)


def test_truediv_scatter_nd_label_smoothing_unique_fetch():
    labels = np.eye(3, dtype=np.float32)
    smoothed = tf.losses.softmax_cross_entropy(labels, np.zeros((3, 3), np.float32),
                                               label_smoothing=0.1)
    sig = tf.losses.sigmoid_cross_entropy(labels, np.zeros((3, 3), np.float32))
    with tf.Session() as sess:
        assert sess.run(tf.truediv(7, 2)) == 3.5
        counts = sess.run(tf.scatter_nd([[1], [1], [3]], [5, 2, 1], [4]))
        assert counts.dtype == np.int32 and counts.tolist() == [0, 7, 0, 1]
        assert sess.run(smoothed) == pytest.approx(np.log(3.0), rel=1e-5)
        assert sess.run(sig) == pytest.approx(np.log(2.0), rel=1e-5)
        y, idx = sess.run(tf.unique(tf.constant([4, 4, 2, 4])))
        fetched = sess.run(tf.unique(tf.constant([1, 1])))
    assert y.tolist() == [4, 2] and idx.tolist() == [0, 0, 1, 0]
    assert fetched.y.tolist() == [1] and fetched.idx.tolist() == [0, 0]


def test_boolean_mask_with_an_axis():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    mask = np.array([[True, False, True, True], [False, True, False, False],
                     [True, True, True, False]])
    t = tf.constant(x)
    last = tf.boolean_mask(t, [True, False, True, False], axis=-1)
    grad = tf.gradients(tf.reduce_sum(tf.boolean_mask(t, [True, False, True], axis=1)), t)[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.boolean_mask(t, mask, axis=1)), x[:, mask])
        np.testing.assert_array_equal(sess.run(last), x[..., [0, 2]])
        np.testing.assert_array_equal(sess.run(grad)[0], [[1] * 4, [0] * 4, [1] * 4])


def test_einsum_with_an_ellipsis():
    rng = np.random.default_rng(0)
    a = rng.random((2, 5, 3, 4)).astype(np.float32)
    b = rng.random((2, 5, 4, 6)).astype(np.float32)
    cases = [("...ij,...jk->...ik", (a, b)), ("...ij->...ji", (a,)),
             ("bh...d,bh...e->bh...de", (a, a)), ("...j,jk", (a, b[0, 0])),
             ("i...->...", (a,))]
    with tf.Session() as sess:
        for equation, operands in cases:
            got = sess.run(tf.einsum(equation, *[tf.constant(o) for o in operands]))
            np.testing.assert_allclose(got, np.einsum(equation, *operands), rtol=1e-4,
                                       err_msg=equation)


def test_a_waiting_worker_says_what_it_waits_for(monkeypatch, caplog):
    """A non-chief worker whose chief has not initialised the model logs every 10 s what is
    still missing (silent for minutes before), a warning after a minute, then times out naming
    it."""
    import logging

    from shardflow import session_creators
    clock = [0.0]
    monkeypatch.setattr(session_creators.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(session_creators.time, "sleep",
                        lambda s: clock.__setitem__(0, clock[0] + s))
    tf.Variable(1.0, name="weights")
    creator = tf.train.WorkerSessionCreator(max_wait_secs=75)
    monkeypatch.setattr(logging.getLogger("shardflow"), "propagate", True)
    with caplog.at_level(logging.INFO, logger="shardflow"):
        with pytest.raises(tf.errors.DeadlineExceededError, match="weights"):
            creator.create_session()
    waits = [r for r in caplog.records if "Waiting for model to be ready" in r.getMessage()]
    assert 6 <= len(waits) <= 8
    assert all("weights" in r.getMessage() for r in waits)
    assert [r.levelname for r in waits].count("WARNING") == 1


class _Momentum(tf.train.Optimizer):
    """A TF1-style optimizer subclass: the base's (use_locking, name), slots, _prepare,
    _apply_dense."""

    def __init__(self, lr, momentum, use_locking=False, name="MyMomentum"):
        super(_Momentum, self).__init__(use_locking, name)
        self._lr, self._momentum = lr, momentum

    def _prepare(self):
        self._lr_t = tf.convert_to_tensor(self._lr, name="learning_rate")

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "m", self._name)

    def _apply_dense(self, grad, var):
        m = self.get_slot(var, "m")
        m_t = tf.assign(m, self._momentum * m + grad, use_locking=self._use_locking)
        return tf.assign_sub(var, self._lr_t * m_t, use_locking=self._use_locking).op


class _Adam(tf.train.Optimizer):
    """Adam written as TF1's: keyword base arguments, non-slot beta powers, _finish."""

    def __init__(self, lr=0.1, b1=0.9, b2=0.999, eps=1e-8, name="MyAdam"):
        super().__init__(use_locking=False, name=name)
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self.b1, "beta1_power", first)
        self._create_non_slot_variable(self.b2, "beta2_power", first)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name + "_1")

    def _apply_dense(self, grad, var):
        b1p = self._get_non_slot_variable("beta1_power", graph=var.graph)
        b2p = self._get_non_slot_variable("beta2_power", graph=var.graph)
        lr = self.lr * tf.sqrt(1 - b2p) / (1 - b1p)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = tf.assign(m, self.b1 * m + (1 - self.b1) * grad)
        v_t = tf.assign(v, self.b2 * v + (1 - self.b2) * tf.square(grad))
        return tf.assign_sub(var, lr * m_t / (tf.sqrt(v_t) + self.eps))

    def _finish(self, update_ops, name_scope):
        b1p, b2p = self._get_non_slot_variable("beta1_power"), \
            self._get_non_slot_variable("beta2_power")
        with tf.control_dependencies(update_ops):
            powers = [b1p.assign(b1p * self.b1), b2p.assign(b2p * self.b2)]
        return tf.group(*update_ops + powers, name=name_scope)


@pytest.mark.parametrize("custom, builtin", [
    (lambda: _Momentum(0.05, 0.9), lambda: tf.train.MomentumOptimizer(0.05, 0.9)),
    (lambda: _Adam(0.1), lambda: tf.train.AdamOptimizer(0.1))])
def test_optimizers_subclassed_as_tf1_match_the_builtin_ones(custom, builtin):
    x = np.random.RandomState(0).randn(32, 3).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    results = []
    for make in (custom, builtin):
        tf.reset_default_graph()
        w = tf.get_variable("w", initializer=np.ones((3, 1), np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        step = tf.train.get_or_create_global_step()
        opt = make()
        train = opt.minimize(loss, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(5):
                sess.run(train)
            results.append(sess.run(w))
            assert sess.run(step) == 5
        if make is custom:
            names = sorted(v.op.name for v in tf.global_variables())
            assert "w/%s" % opt._name in names          # TF1's slot names
            assert opt.get_slot(w, "m") is not None and opt.variables()
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_an_optimizer_overriding_apply_gradients_as_bert_does():
    class AdamWeightDecay(tf.train.Optimizer):
        def __init__(self, learning_rate, name="AdamWeightDecayOptimizer"):
            super(AdamWeightDecay, self).__init__(False, name)
            self.learning_rate = learning_rate

        def apply_gradients(self, grads_and_vars, global_step=None, name=None):
            updates = []
            for grad, param in grads_and_vars:
                m = tf.get_variable(param.op.name + "/adam_m", param.shape.as_list(),
                                    trainable=False, initializer=tf.zeros_initializer())
                new_m = 0.9 * m + 0.1 * grad
                updates += [param.assign(param - self.learning_rate * new_m), m.assign(new_m)]
            return tf.group(*updates, name=name)

    w = tf.get_variable("w", initializer=np.array([3.0], np.float32))
    loss = tf.reduce_sum(tf.square(w))
    step = tf.train.get_or_create_global_step()
    train = tf.group(AdamWeightDecay(0.5).minimize(loss, global_step=step),
                     [step.assign(step + 1)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        # grad 6, m = 0.6, w = 3 - 0.3
        assert sess.run(w)[0] == pytest.approx(2.7) and sess.run(step) == 1
    with pytest.raises(ValueError, match="name"):
        tf.train.Optimizer(False, None)


def test_causal_mask_of_a_length_known_only_when_the_step_runs():
    """A Transformer's decoder mask: tf.matrix_band_part(tf.ones([T, T]), -1, 0) with T =
    tf.shape(x)[1] (it needed the size when the graph was built)."""
    x = tf.placeholder(tf.float32, [None, None, 4])
    t = tf.shape(x)[1]
    causal = tf.matrix_band_part(tf.ones([t, t]), -1, 0)
    band = tf.linalg.band_part(tf.fill([2, t, t], np.inf), 1, tf.constant(0))
    scores = tf.matmul(x, x, transpose_b=True) * causal + (1.0 - causal) * -1e9
    with tf.Session() as sess:
        c, b, s = sess.run([causal, band, tf.nn.softmax(scores)], {x: np.ones((2, 3, 4))})
    np.testing.assert_array_equal(c, np.tril(np.ones((3, 3))))
    assert np.isinf(b[0, 1, 0]) and b[0, 0, 1] == 0 and b[0, 2, 0] == 0   # zeros, not inf * 0
    np.testing.assert_allclose(s[0, 0], [1, 0, 0], atol=1e-6)


def test_a_loop_variable_that_grows_under_its_shape_invariant():
    """Greedy decoding that concatenates each step's token (a Transformer's inference loop)
    runs with back_prop on (the default; it failed "loop variable changed shape"); a gradient
    through such a loop (its backward pass replays every variable's rows) fails naming it."""
    start = tf.placeholder(tf.int32, [None, 1])
    w = tf.Variable(2.0)

    def body(i, seq, acc):
        nxt = seq[:, -1:] + 1
        return i + 1, tf.concat([seq, nxt], 1), acc * w

    _, seq, acc = tf.while_loop(
        lambda i, s, a: i < 4, body, [tf.constant(0), start, tf.constant(1.0)],
        shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, None]),
                          tf.TensorShape([])])
    grad = tf.gradients(acc, w)[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, value = sess.run([seq, acc], {start: [[5], [7]]})
        np.testing.assert_array_equal(out, [[5, 6, 7, 8, 9], [7, 8, 9, 10, 11]])
        assert value == 16.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="loop variable 1 changed shape"):
            sess.run(grad, {start: [[5], [7]]})
    # the same loop with a variable that keeps its shape under a loose invariant trains
    _, kept = tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * w),
                            [tf.constant(0), tf.ones([2])],
                            shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
    kept_grad = tf.gradients(tf.reduce_sum(kept), w)[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(kept_grad) == pytest.approx(2 * 3 * 2.0 ** 2)


def test_reduce_prod_has_a_gradient_exact_at_zeros():
    from grad_check import check_gradient
    rng = np.random.default_rng(8)
    x = rng.uniform(0.5, 2.0, size=(2, 3, 4))
    for axis, keepdims in ((None, False), (1, False), ([0, 2], True), (-1, False)):
        check_gradient(lambda t: tf.reduce_prod(t, axis=axis, keepdims=keepdims), x, rng=rng,
                       rtol=1e-4, atol=1e-6)
    zeros = tf.constant([[0.0, 2.0, 3.0], [0.0, 0.0, 5.0]], tf.float64)
    grad = tf.gradients(tf.reduce_sum(tf.reduce_prod(zeros, axis=1)), zeros)[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grad), [[6, 0, 0], [0, 0, 0]])


def test_set_shape_with_several_unknown_dimensions_reaches_the_graph():
    """decode_png's [?, ?, 3] (and x.set_shape([None, None, 3])) is known to the ops built on
    it: resize_images after a cast no longer met a tensor of unknown rank."""
    pixels = np.random.default_rng(9).integers(0, 255, (30, 40, 3)).astype(np.uint8)
    image = tf.image.decode_png(tf.image.encode_png(tf.constant(pixels)), channels=3)
    as_float = tf.cast(image, tf.float32)
    assert as_float.shape.as_list() == [None, None, 3]
    resized = tf.image.resize_images(as_float, [24, 24])
    assert resized.shape.as_list() == [24, 24, 3]
    x = tf.placeholder(tf.float32)
    x.set_shape([None, None, 3])
    assert tf.identity(x).shape.as_list() == [None, None, 3]
    with tf.Session() as sess:
        assert sess.run(resized).shape == (24, 24, 3)
        assert sess.run(tf.identity(x), {x: np.ones((2, 5, 3))}).shape == (2, 5, 3)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(tf.identity(x), {x: np.ones((2, 2, 4))})


def test_dynamic_stitch_divide_resize_and_in_top_k_values_as_tf_1_15():
    """Silent differences a numerics sweep found: dynamic_stitch added repeated indices (the
    later one wins in TF), tf.divide of ints truncated (TF 1.15: true division), tf.image.resize
    used TF 2's half-pixel centres (TF 1.15: resize_images), in_top_k ignored NaN elsewhere in
    the row."""
    img = np.arange(4, dtype=np.float32).reshape(1, 1, 4, 1)
    stitched = tf.dynamic_stitch([tf.constant([0, 1]), tf.constant([1, 2])],
                                 [tf.constant([1.0, 2.0]), tf.constant([20.0, 30.0])])
    holes = tf.dynamic_stitch([tf.constant([[0, 1]]), tf.constant([3])],
                              [tf.constant([[[1, 2], [3, 4]]]), tf.constant([[7, 8]])])
    values = tf.constant([5.0, 6.0])
    grad = tf.gradients(tf.reduce_sum(tf.dynamic_stitch([tf.constant([0, 0])], [values])),
                        values)[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(stitched), [1, 20, 30])
        np.testing.assert_array_equal(sess.run(holes), [[1, 2], [3, 4], [0, 0], [7, 8]])
        np.testing.assert_array_equal(sess.run(grad), [0, 1])
        quotient = sess.run(tf.divide(tf.constant([-7, 7]), tf.constant([2, 2])))
        assert quotient.dtype == np.float64 and quotient.tolist() == [-3.5, 3.5]
        assert sess.run(tf.math.divide(7, 2)) == 3.5
        np.testing.assert_allclose(sess.run(tf.image.resize(img, [1, 8]))[0, 0, :, 0],
                                   [0, 0.5, 1, 1.5, 2, 2.5, 3, 3])
        assert sess.run(tf.image.resize(img.astype(np.int32), [1, 2],
                                        method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
                        ).dtype == np.int32
        hits = sess.run(tf.nn.in_top_k(tf.constant([[np.nan, 2.0], [1.0, 2.0]]),
                                       tf.constant([1, 1]), 1))
        assert hits.tolist() == [False, True]


def test_input_pipeline_details_as_tf_1_15():
    """() is a scalar shape in from_generator / padded_batch / from_structure; bytes with
    trailing NULs survive tf.constant; tf.double and tf.half; parse_example of a scalar string
    feature."""
    def gen():
        for i in range(4):
            yield i, list(range(i + 1))

    data = tf.data.Dataset.from_generator(gen, (tf.int32, tf.int32), ((), (None,)))
    batch = data.padded_batch(2, ((), (None,)), padding_values=(0, -1))
    first = batch.make_one_shot_iterator().get_next()
    assert tf.data.Iterator.from_structure((tf.int32, tf.int32), ((), (None,))
                                           ).output_shapes[0].as_list() == []
    example = tf.train.Example(features=tf.train.Features(feature={
        "s": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"hello"]))}))
    parsed = tf.parse_example([example.SerializeToString()] * 2,
                              {"s": tf.FixedLenFeature([], tf.string)})
    assert tf.double is tf.float64 and tf.half is tf.float16
    with tf.Session() as sess:
        ids, rows = sess.run(first)
        assert ids.tolist() == [0, 1] and rows.tolist() == [[0, -1], [0, 1]]
        assert sess.run(tf.constant(b"a\x00")) == b"a\x00"
        assert sess.run(tf.strings.length(tf.constant([b"a\x00", b"\n\x00"]))).tolist() == [2, 2]
        assert sess.run(parsed)["s"].tolist() == [b"hello", b"hello"]


def test_integer_one_hot_matmul_pow_round():
    """tf.one_hot(labels, 10, 1, 0) is int32 (its on/off values' dtype; it failed 'Mul expects
    float'); int32 matmul, pow and round work as on TF's CPU kernels."""
    with tf.Session() as sess:
        hot = sess.run(tf.one_hot([0, 2], 3, 1, 0))
        assert hot.dtype == np.int32 and hot.tolist() == [[1, 0, 0], [0, 0, 1]]
        assert sess.run(tf.one_hot([1], 2, on_value=5.0, off_value=-1.0)).tolist() == [[-1, 5]]
        prod = sess.run(tf.matmul(tf.constant([[1, 2], [3, 4]]), tf.constant([[5], [6]])))
        assert prod.dtype == np.int32 and prod.tolist() == [[17], [39]]
        assert sess.run(tf.matmul(tf.constant([[1, 2]], tf.int64), tf.constant([[3, 4]], tf.int64),
                                  transpose_b=True)).tolist() == [[11]]
        powers = sess.run(tf.pow(tf.constant([2, 3, -2]), 3))
        assert powers.dtype == np.int32 and powers.tolist() == [8, 27, -8]
        assert sess.run(tf.round(tf.constant([2, -3]))).tolist() == [2, -3]


def test_axes_as_tensors_xent_v2_axis_and_sorted_segment_ids():
    """A reduction / argmax / cumsum axis given as a tensor (a TypeError or 'setting an array
    element' before), softmax_cross_entropy_with_logits_v2 on axis 0, and segment_sum's check
    that its ids are sorted (unsorted ids gave plausible sums)."""
    axis = tf.placeholder(tf.int32, [])
    x = tf.constant([[1.0, 5.0], [3.0, 0.0]])
    labels = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    logits = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    with tf.Session() as sess:
        total, best, running, top = sess.run(
            [tf.reduce_sum(x, axis=axis), tf.argmax(x, axis=axis), tf.cumsum(x, axis=axis),
             tf.reduce_max(x, axis=tf.constant([0, 1]))], {axis: 1})
        assert total.tolist() == [6, 3] and best.tolist() == [1, 0] and top == 5
        assert running.tolist() == [[1, 6], [3, 3]]
        by_column = sess.run(tf.nn.softmax_cross_entropy_with_logits_v2(
            labels=labels, logits=logits, axis=0))
        by_row = sess.run(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels.T,
                                                                      logits=logits.T))
        np.testing.assert_allclose(by_column, by_row, rtol=1e-6)
        assert sess.run(tf.math.segment_sum([1.0, 2.0, 3.0], [0, 0, 1])).tolist() == [3, 3]
        with pytest.raises(tf.errors.InvalidArgumentError, match="not increasing"):
            sess.run(tf.math.segment_sum([1.0, 2.0, 3.0], [1, 0, 1]))


def test_string_variables():
    """tf.Variable(b'...') / tf.Variable('...') ('unknown data type bytes16' before)."""
    word = tf.Variable(b"ab\x00")
    words = tf.Variable(["a", "bc"])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(word) == b"ab\x00" and word.dtype == tf.string
        sess.run(words.assign([b"q", b"r"]))
        assert sess.run(words).tolist() == [b"q", b"r"]


def test_decode_csv_with_typed_tensor_defaults_and_required_columns():
    """record_defaults as TF writes them: typed constants, an empty one (or []) for a required
    column (a TypeError / ValueError before)."""
    with tf.Session() as sess:
        a, b, c = sess.run(tf.decode_csv(["1,2,x", "3,4,y"], [
            tf.constant([], tf.int32), tf.constant([0], tf.int64), [""]]))
        assert a.dtype == np.int32 and a.tolist() == [1, 3]
        assert b.dtype == np.int64 and b.tolist() == [2, 4] and c.tolist() == [b"x", b"y"]
        first, _ = sess.run(tf.decode_csv(["1.5,2"], [[], [0]]))
        assert first.dtype == np.float32 and first.tolist() == [1.5]
        with pytest.raises(tf.errors.InvalidArgumentError, match="required"):
            sess.run(tf.decode_csv([",2"], [[], [0]]))


def test_saver_details_and_summary_family(tmp_path):
    """Saver.save(latest_filename=) writes that state file (it overwrote 'checkpoint'),
    to_proto, a restore into a variable of another dtype fails naming it (the values were
    converted), and a summary's family prefixes its tag as TF 1.15's summary_scope."""
    a = tf.Variable([1.5, 2.0], name="a")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"), latest_filename="myckpt")
    assert tf.train.get_checkpoint_state(str(tmp_path), "myckpt") is not None
    assert not (tmp_path / "checkpoint").exists()
    assert saver.to_proto().max_to_keep == 5
    tf.reset_default_graph()
    tf.Variable([0, 0], name="a")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="float32 .* but int32"):
            tf.train.Saver().restore(sess, path)
    assert tf.summary.scalar("loss", tf.constant(1.0), family="train").name == \
        "train/train/loss"
    assert a is not None


def test_a_variables_name_fetches_and_feeds_its_value(tmp_path):
    # Regression: "w:0" named the handle (a string): sess.run("w:0") returned b'w', and a
    # graph restored by import_meta_graph could not fetch 'dense/kernel:0'.
    with tf.Graph().as_default() as g:
        w = tf.get_variable("w", initializer=np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
        y = tf.reduce_sum(w, name="y")
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        tf.layers.dense(x, 3, name="dense")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run("w:0"), [[1, 2], [3, 4]])
            np.testing.assert_array_equal(sess.run(w.name), [[1, 2], [3, 4]])
            t = g.get_tensor_by_name("w:0")
            assert t.dtype == tf.float32 and t.shape.as_list() == [2, 2]
            assert sess.run(tf.reduce_sum(t)) == 10.0
            assert sess.run(y, {"w:0": np.zeros([2, 2], np.float32)}) == 0.0
            assert sess.run(y) == 10.0  # the feed overrode one step only
            kernel = sess.run("dense/kernel:0")
            path = saver.save(sess, str(tmp_path / "model"))
    with tf.Graph().as_default() as g:
        restorer = tf.train.import_meta_graph(path + ".meta")
        with tf.Session() as sess:
            restorer.restore(sess, path)
            np.testing.assert_array_equal(sess.run("dense/kernel:0"), kernel)
            assert g.get_operation_by_name("w").type == "VarHandleOp"
