"""TensorFlow 1.x idioms that used to differ (issue 14, "What was found"), each checked against
TF1's behaviour: random ops with mean/stddev/minval/maxval, reductions with reduction_indices and
keep_dims, tf.nn.dropout's second argument as keep_prob (and a keep_prob placeholder), true
division of integers, InteractiveSession as the default session, assign that can be fetched,
and a placeholder of another graph refused."""
import numpy as np
import pytest

import shardflow as tf


def run(t, feed=None, graph=None):
    with tf.Session(graph=graph or tf.get_default_graph()) as s:
        return s.run(t, feed)


def test_random_ops_take_tf1_arguments():
    g = tf.Graph()
    with g.as_default():
        n = tf.random_normal([20000], mean=5.0, stddev=2.0, seed=1)
        t = tf.truncated_normal([20000], stddev=0.1, seed=2)
        u = tf.random_uniform([20000], -1, 3, seed=3)
        scale = tf.placeholder(tf.float32, [])
        v = tf.random_uniform([1000], minval=0.0, maxval=scale, seed=4)
        with tf.Session() as s:
            n_, t_, u_, v_ = s.run([n, t, u, v], {scale: 10.0})
    assert abs(n_.mean() - 5) < 0.1 and abs(n_.std() - 2) < 0.1
    assert abs(t_.std() - 0.088) < 0.01 and np.abs(t_).max() <= 0.2  # within 2 stddev
    assert u_.min() >= -1 and u_.max() < 3 and abs(u_.mean() - 1) < 0.05
    assert v_.max() < 10 and v_.max() > 9


def test_reductions_take_reduction_indices_and_keep_dims():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        a = tf.reduce_sum(x, reduction_indices=[1])
        b = tf.reduce_mean(x, reduction_indices=0, keep_dims=True)
        c = tf.reduce_max(x, 1, keepdims=True)
        out = run([a, b, c], graph=g)
    np.testing.assert_allclose(out[0], [3, 7])
    np.testing.assert_allclose(out[1], [[2, 3]])
    np.testing.assert_allclose(out[2], [[2], [4]])
    with pytest.raises(ValueError, match="reduction_indices"):
        tf.reduce_sum(tf.constant([1.0]), axis=0, reduction_indices=0)


def test_dropout_second_argument_is_keep_prob_and_may_be_a_placeholder():
    g = tf.Graph()
    with g.as_default():
        x = tf.ones([100000])
        kept = tf.nn.dropout(x, 0.9, seed=1)           # TF1: keep 90%
        keep_prob = tf.placeholder(tf.float32)
        fed = tf.nn.dropout(x, keep_prob, seed=2)
        by_rate = tf.nn.dropout(x, rate=0.25, seed=3)
        with tf.Session() as s:
            k = s.run(kept)
            half = s.run(fed, {keep_prob: 0.5})
            whole = s.run(fed, {keep_prob: 1.0})
            r = s.run(by_rate)
    assert abs((k > 0).mean() - 0.9) < 0.01
    np.testing.assert_allclose(k[k > 0], 1 / 0.9, rtol=1e-5)
    assert abs((half > 0).mean() - 0.5) < 0.01 and np.allclose(half[half > 0], 2.0)
    np.testing.assert_array_equal(whole, np.ones(100000))   # evaluation: keep_prob 1
    assert abs((r > 0).mean() - 0.75) < 0.01
    with pytest.raises(ValueError, match="exactly one"):
        tf.nn.dropout(x)


def test_integer_division_is_true_division():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(7)
        b = tf.constant(2)
        q = a / b
        assert q.dtype == tf.float64
        f = tf.constant(7.0) / 2
        out = run([q, a / 2, 7 / b, f], graph=g)
    assert out[0] == 3.5 and out[1] == 3.5 and out[2] == 3.5 and out[3] == 3.5


def test_interactive_session_is_the_default():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([1.0, 2.0]) * 3
        sess = tf.InteractiveSession(graph=g)
        try:
            np.testing.assert_allclose(x.eval(), [3, 6])
            assert tf.get_default_session() is sess
        finally:
            sess.close()
        assert tf.get_default_session() is not sess


def test_assign_can_be_fetched():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0)
        plus = v.assign_add(2.0)
        to = v.assign(10.0)
        minus = v.assign_sub(4.0)
        op = v.assign(0.0, read_value=False)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            assert s.run(plus) == 3.0
            assert s.run(to) == 10.0
            assert s.run(minus) == 6.0
            assert s.run(op) is None and s.run(v.value()) == 0.0


def test_minimize_is_an_operation_with_run():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(1.0)
        loss = tf.square(w)
        step = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            with s.as_default():
                step.run()
            assert s.run(w.value()) == pytest.approx(0.5)


def test_feeding_a_placeholder_of_another_graph_is_an_error():
    other = tf.Graph()
    with other.as_default():
        stranger = tf.placeholder(tf.float32, [], name="x")
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        y = x * 2
        with tf.Session() as s:
            assert s.run(y, {x: 2.0}) == 4.0
            with pytest.raises(ValueError, match="another graph"):
                s.run(y, {stranger: 2.0})


def test_config_proto_takes_tf1_fields():
    config = tf.ConfigProto(device_count={"CPU": 2}, inter_op_parallelism_threads=1,
                            intra_op_parallelism_threads=1, allow_soft_placement=True)
    config.gpu_options.allow_growth = True  # TF1 code sets it; no effect without a GPU
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(1.0)
        with tf.Session(config=config) as s:
            devices = s.list_devices()
            assert s.run(c) == 1.0
    assert sum("CPU:" in d for d in devices) == 2
    assert tf.ConfigProto(device_count={"GPU": 0}).gpu_device_count == -1  # no GPU device
    assert tf.ConfigProto(device_count={"GPU": 2}).gpu_device_count == 2
    with pytest.raises(ValueError, match="GPU"):
        tf.ConfigProto(device_count={"GPU": -1})


def test_conv2d_and_pooling_take_tf1_arguments():
    g = tf.Graph()
    with g.as_default():
        x = tf.ones([1, 4, 4, 1])
        w = tf.ones([2, 2, 1, 1])
        y = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME", data_format="NHWC")
        z = tf.nn.conv2d(x, filter=w, strides=[1, 2, 2, 1], padding="VALID")
        p = tf.nn.max_pool(y, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME",
                           data_format="NHWC")
        out = run([y, z, p], graph=g)
    assert out[0].shape == (1, 4, 4, 1) and out[1].shape == (1, 2, 2, 1)
    np.testing.assert_allclose(out[1], 4.0)
    with pytest.raises(ValueError, match="NHWC only"):
        tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME", data_format="NCHW")


def test_static_shapes_are_dimensions():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 784])
    shape = x.get_shape()
    assert shape[1].value == 784 and shape[1] == 784 and int(shape[1]) == 784
    assert shape[0].value is None and shape[0] == None  # noqa: E711 (TF1's Dimension(None))
    assert shape.as_list() == [None, 784] and shape[1:] == [784]
    assert [d.value for d in shape] == [None, 784]


def test_error_texts_speak_to_python_users():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0)
        with tf.Session() as s:
            with pytest.raises(tf.errors.FailedPreconditionError,
                               match=r"sf\.global_variables_initializer\(\)"):
                s.run(v.value())
        with pytest.raises(ValueError, match="cannot parse '/bogus:x'"):
            with tf.device("/bogus:x"):     # as TF1's DeviceSpec, when the scope is entered
                pass
        with tf.device(lambda op: "/bogus:x"):     # a device function's string is kept as is
            c = tf.constant(1.0)
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="requests a device: malformed device name"):
                s.run(c)


def test_variable_scope_and_get_variable_share_by_name():
    g = tf.Graph()
    with g.as_default():
        def layer(x):
            w = tf.get_variable("w", [2, 3], initializer=tf.truncated_normal_initializer(
                stddev=0.1, seed=1))
            b = tf.get_variable("b", [3], initializer=tf.constant_initializer(0.5))
            return tf.matmul(x, w) + b, w
        x = tf.ones([1, 2])
        with tf.variable_scope("tower"):
            y1, w1 = layer(x)
        with tf.variable_scope("tower", reuse=True):
            y2, w2 = layer(x)
        with tf.variable_scope("tower") as scope:
            scope.reuse_variables()
            _, w3 = layer(x)
        with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
            a1 = tf.get_variable("v", [1], initializer=tf.zeros_initializer())
        with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
            a2 = tf.get_variable("v", [1])
        assert w1 is w2 is w3 and a1 is a2
        assert w1.name.split(":")[0] == "tower/w"
        with tf.variable_scope("outer"):
            with tf.variable_scope("inner"):
                nested = tf.get_variable("z", [2], initializer=tf.ones_initializer())
        assert nested.name.split(":")[0] == "outer/inner/z"
        with pytest.raises(ValueError, match="already exists, disallowed"):
            with tf.variable_scope("tower"):
                layer(x)
        with pytest.raises(ValueError, match="does not exist"):
            with tf.variable_scope("nowhere", reuse=True):
                tf.get_variable("w", [1])
        with pytest.raises(ValueError, match="specified shape"):
            with tf.variable_scope("tower", reuse=True):
                tf.get_variable("w", [5, 5])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            a, b = s.run([y1, y2])
        np.testing.assert_allclose(a, b)


def test_learning_rate_schedules_follow_the_global_step():
    g = tf.Graph()
    with g.as_default():
        step = tf.train.get_or_create_global_step()
        smooth = tf.train.exponential_decay(0.1, step, 10, 0.5)
        stairs = tf.train.exponential_decay(0.1, step, 10, 0.5, staircase=True)
        pieces = tf.train.piecewise_constant(step, [5, 15], [1.0, 0.5, 0.1])
        inverse = tf.train.inverse_time_decay(1.0, step, 10, 1.0)
        set_step = step.assign(tf.placeholder(tf.int64, [], name="s"))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = {}
            for k in (0, 5, 15, 25):
                s.run(set_step, {"s:0": k})
                got[k] = s.run([smooth, stairs, pieces, inverse])
    np.testing.assert_allclose(got[15][0], 0.1 * 0.5 ** 1.5, rtol=1e-5)
    np.testing.assert_allclose(got[15][1], 0.05, rtol=1e-6)
    np.testing.assert_allclose(got[25][1], 0.025, rtol=1e-6)
    assert [got[k][2] for k in (0, 5, 15, 25)] == pytest.approx([1.0, 1.0, 0.5, 0.1])
    np.testing.assert_allclose(got[5][3], 1 / 1.5, rtol=1e-6)


def test_clipping_norms_losses_and_normalization_match_numpy():
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((4, 3)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(xv)
        a, b = tf.constant([3.0, 4.0]), tf.constant([12.0])
        clipped, norm = tf.clip_by_global_norm([a, b, None], 6.5)
        mean, var = tf.nn.moments(x, axes=[0])
        bn = tf.nn.batch_normalization(x, mean, var, offset=1.0, scale=2.0,
                                       variance_epsilon=1e-3)
        out = run([tf.clip_by_value(x, -0.5, 0.5), norm, clipped[0], clipped[1],
                   tf.clip_by_norm(a, 1.0), tf.nn.l2_loss(x),
                   tf.nn.xw_plus_b(x, tf.ones([3, 2]), tf.constant([1.0, 2.0])), mean, var, bn,
                   tf.losses.mean_squared_error(tf.zeros([4, 3]), x),
                   tf.losses.sparse_softmax_cross_entropy(tf.constant([0, 1, 2, 0]), x)],
                  graph=g)
    np.testing.assert_allclose(out[0], np.clip(xv, -0.5, 0.5))
    assert out[1] == pytest.approx(13.0)
    np.testing.assert_allclose(out[2], [1.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(out[3], [6.0], rtol=1e-6)
    np.testing.assert_allclose(out[4], [0.6, 0.8], rtol=1e-6)
    assert out[5] == pytest.approx((xv ** 2).sum() / 2, rel=1e-5)
    np.testing.assert_allclose(out[6], xv @ np.ones((3, 2)) + [1, 2], rtol=1e-5)
    np.testing.assert_allclose(out[7], xv.mean(0), rtol=1e-5)
    np.testing.assert_allclose(out[8], xv.var(0), rtol=1e-4)
    np.testing.assert_allclose(out[9], (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-3) * 2 + 1,
                               rtol=1e-4, atol=1e-5)
    assert out[10] == pytest.approx((xv ** 2).mean(), rel=1e-5)
    logp = xv - np.log(np.exp(xv).sum(1, keepdims=True))
    assert out[11] == pytest.approx(-np.mean(logp[np.arange(4), [0, 1, 2, 0]]), rel=1e-5)


def test_placeholder_with_default_and_graph_seeds():
    g = tf.Graph()
    with g.as_default():
        keep = tf.placeholder_with_default(1.0, [])
        y = keep * 2
        with tf.Session() as s:
            assert s.run(y) == 2.0 and s.run(y, {keep: 0.25}) == 0.5

    def draw():
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(42)
            r = tf.random_normal([5])
            u = tf.random_uniform([5])
            with tf.Session() as s:
                return s.run([r, u])
    first, second = draw(), draw()
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[0], first[1])


def test_functional_layers():
    g = tf.Graph()
    with g.as_default():
        # Seeded: with an unlucky draw of the conv kernel the ReLU left as few as 8 of the 128
        # features alive on an all-ones image (CI, 2026-11-29), too few to see dropout's rate.
        tf.set_random_seed(3)
        images = tf.placeholder(tf.float32, [None, 8, 8, 1])
        training = tf.placeholder(tf.bool, [])
        h = tf.layers.conv2d(images, 4, 3, padding="same", activation=tf.nn.relu, name="conv")
        h = tf.layers.max_pooling2d(h, 2, 2)
        h = tf.layers.flatten(h)
        h = tf.layers.dropout(h, rate=0.5, training=training)
        logits = tf.layers.dense(h, 3, kernel_initializer=tf.glorot_uniform_initializer(),
                                 name="logits")
        names = sorted(v.name.split(":")[0] for v in tf.trainable_variables())
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            ones = np.ones((2, 8, 8, 1), np.float32)
            a = s.run(logits, {images: ones, training: False})
            b = s.run(logits, {images: ones, training: False})
            c = s.run(h, {images: ones, training: True})
            kept = s.run(h, {images: ones, training: False})
    assert a.shape == (2, 3)
    np.testing.assert_array_equal(a, b)  # no dropout when not training
    live = kept != 0
    assert live.sum() > 10
    assert 0.25 < (c[live] == 0).mean() < 0.75   # about half dropped while training
    np.testing.assert_allclose(c[live & (c != 0)], 2 * kept[live & (c != 0)], rtol=1e-5)
    assert names == ["conv/bias", "conv/kernel", "logits/bias", "logits/kernel"]


def test_array_ops_and_indexing_match_numpy():
    xv = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(xv)
        cases = [
            (x[:, 1], xv[:, 1]), (x[1], xv[1]), (x[-1, 1:3, :2], xv[-1, 1:3, :2]),
            (x[..., 2], xv[..., 2]), (x[0, None, :, 1], xv[0, None, :, 1]),
            (tf.shape(x)[2], 4),
            (tf.one_hot([0, 2, 5], 3), np.eye(3, dtype=np.float32)[[0, 2]].tolist() + [[0, 0, 0]]),
            (tf.one_hot([1], 2, on_value=5.0, off_value=-1.0), [[-1.0, 5.0]]),
            (tf.gather(x, [1, 0, 1]), xv[[1, 0, 1]]),
            (tf.nn.embedding_lookup(tf.constant(xv[0]), [[2], [0]]), xv[0][[[2], [0]]]),
            (tf.stack([x[0], x[1]], axis=1), np.stack([xv[0], xv[1]], axis=1)),
            (tf.unstack(x, axis=2)[3], xv[:, :, 3]),
            (tf.split(x, [1, -1], axis=1)[1], xv[:, 1:]),
            (tf.tile(x[:, :1], [1, 2, 1]), np.tile(xv[:, :1], [1, 2, 1])),
            (tf.range(2, 11, 3), np.arange(2, 11, 3)),
            (tf.where(x > 10, x, -x), np.where(xv > 10, xv, -xv)),
            (tf.pad(x[0], [[1, 0], [0, 2]]), np.pad(xv[0], [[1, 0], [0, 2]])),
            (tf.argmin(x, 2), xv.argmin(2)),
            (tf.reduce_any(x > 20, reduction_indices=[2]), (xv > 20).any(2)),
            (tf.reduce_all(x >= 1, axis=None), (xv >= 1).all()),
        ]
        got = run([c[0] for c in cases], graph=g)
    for (tensor, want), value in zip(cases, got):
        np.testing.assert_allclose(value, want, err_msg=tensor.name)
    # A step on a dimension unknown when the graph is built works out its rows at run time.
    with g.as_default():
        u = tf.placeholder(tf.float32, [None, 4])
        strided = u[::2]
    np.testing.assert_array_equal(run(strided, {u: xv[0]}, graph=g), xv[0][::2])


def test_where_reads_only_the_chosen_value_and_broadcasts():
    xv = np.array([[-1.0, -2.0, 2.0], [4.0, -3.0, 0.5]], np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        # The safe-log idiom: log(x) is NaN where x < 0 and must not leak (at x == 0 the
        # gradient is 0 * inf = NaN, in TF1 too, so the inputs avoid it).
        safe = tf.where(x > 0, tf.log(x), tf.zeros_like(x))
        grad = tf.gradients(tf.reduce_sum(safe), [x])[0]
        rows = tf.where(tf.constant([True, False]), x, -x)          # TF1: a row per element
        bcast = tf.where_v2(x > 1, x, 0.0)                          # scalar e, broadcast
        lit = tf.where(x > 0, 1.0, x)                               # literal t takes x's dtype
        with tf.Session() as s:
            out = s.run([safe, grad, rows, bcast, lit], {x: xv})
    assert [o.op.type for o in (safe, rows, bcast)] == ["Select", "Select", "SelectV2"]
    positive = xv > 0
    np.testing.assert_allclose(out[0], np.where(positive, np.log(np.where(positive, xv, 1)), 0))
    np.testing.assert_allclose(out[1], np.where(positive, 1 / np.where(positive, xv, 1), 0))
    assert np.all(np.isfinite(out[1]))
    np.testing.assert_array_equal(out[2], np.stack([xv[0], -xv[1]]))
    np.testing.assert_array_equal(out[3], np.where(xv > 1, xv, 0))
    np.testing.assert_array_equal(out[4], np.where(positive, 1, xv))
    with pytest.raises(TypeError, match="must be bool"):
        tf.where(tf.constant([1.0]), tf.constant([1.0]), tf.constant([2.0]))


def test_floor_division_and_modulo_follow_python():
    a_v = np.array([7, -7, 7, -7, 0], np.int32)
    b_v = np.array([2, 2, -2, -2, 3], np.int32)
    g = tf.Graph()
    with g.as_default():
        a, b = tf.constant(a_v), tf.constant(b_v)
        f = tf.constant([7.5, -7.5]) // 2.0
        out = run([a // b, a % b, tf.floordiv(a, 3), tf.mod(a, 3), f, tf.constant(-7.5) % 2.0],
                  graph=g)
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
                s.run(a // tf.constant(0))
    np.testing.assert_array_equal(out[0], a_v // b_v)
    np.testing.assert_array_equal(out[1], a_v % b_v)
    np.testing.assert_array_equal(out[2], a_v // 3)
    np.testing.assert_array_equal(out[3], a_v % 3)
    np.testing.assert_allclose(out[4], [3.0, -4.0])
    assert out[5] == pytest.approx(0.5)


def test_gathered_and_indexed_values_carry_gradients():
    g = tf.Graph()
    with g.as_default():
        table = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
        picked = tf.gather(table, [2, 2, 0])
        loss = tf.reduce_sum(picked) + tf.reduce_sum(table[1] * 10)
        grad = tf.gradients(loss, [table.value()])[0]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            gv = s.run(grad)
    np.testing.assert_allclose(gv, [[1, 1], [10, 10], [2, 2]])


@pytest.mark.parametrize("kind", ["rmsprop", "rmsprop_momentum", "adagrad"])
def test_rmsprop_and_adagrad_follow_tf1s_update_rules(kind):
    target = np.array([1.0, -2.0, 3.0], np.float32)
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(np.zeros(3, np.float32))
        loss = tf.reduce_sum(tf.square(w - target))
        if kind == "adagrad":
            opt = tf.train.AdagradOptimizer(0.5, initial_accumulator_value=0.1)
        else:
            opt = tf.train.RMSPropOptimizer(0.1, decay=0.9, epsilon=1e-6,
                                            momentum=0.5 if kind.endswith("momentum") else 0.0)
        step = opt.minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = []
            for _ in range(3):
                s.run(step)
                got.append(s.run(w.value()))
    # The same rules in NumPy.
    wv = np.zeros(3, np.float64)
    ms, mom, acc = np.ones(3), np.zeros(3), np.full(3, 0.1)
    for i in range(3):
        grad = 2 * (wv - target)
        if kind == "adagrad":
            acc += grad ** 2
            wv -= 0.5 * grad / np.sqrt(acc)
        else:
            ms = 0.9 * ms + 0.1 * grad ** 2
            mom = (0.5 if kind.endswith("momentum") else 0.0) * mom + 0.1 * grad / np.sqrt(
                ms + 1e-6)
            wv -= mom
        np.testing.assert_allclose(got[i], wv, rtol=1e-5, atol=1e-6)


def test_batched_matmul_and_top_k_match_numpy():
    rng = np.random.default_rng(1)
    av = rng.standard_normal((3, 2, 4)).astype(np.float32)
    bv = rng.standard_normal((3, 4, 5)).astype(np.float32)
    mv = rng.standard_normal((4, 5)).astype(np.float32)
    xv = np.array([[1.0, 5.0, 3.0, 5.0], [0.5, -1.0, 2.0, 0.0]], np.float32)
    g = tf.Graph()
    with g.as_default():
        a, b = tf.constant(av), tf.constant(bv)
        p = tf.placeholder(tf.float32, [None, 2, 4])
        values, indices = tf.nn.top_k(tf.constant(xv), k=3)
        with tf.Session() as s:
            out = s.run([tf.matmul(a, b), tf.matmul(a, tf.constant(mv)), tf.matmul(p, mv),
                         values, indices], {p: av})
    np.testing.assert_allclose(out[0], av @ bv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1], av @ mv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[2], av @ mv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[3], [[5, 5, 3], [2, 0.5, 0]])
    np.testing.assert_array_equal(out[4], [[1, 3, 2], [2, 0, 3]])


def test_attention_matmuls_with_unknown_batch_and_their_gradients():
    """tf.matmul of two batches whose batch size is unknown (Transformer attention: [b, h, t, d]
    x [b, h, d, t]), with broadcasting batch dimensions, and a rank-3 input with two unknown
    leading dimensions times a matrix (a dense layer on [batch, time, depth]); one
    BatchMatMulV2 node each, not one MatMul per item."""
    rng = np.random.default_rng(2)
    qv = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    kv = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    wv = rng.standard_normal((1, 4, 6)).astype(np.float32)
    mv = rng.standard_normal((4, 6)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        q = tf.placeholder(tf.float32, [None, 3, None, 4])
        k = tf.placeholder(tf.float32, [None, 3, None, 4])
        scores = tf.matmul(q, k, transpose_b=True)
        assert scores.shape.as_list() == [None, 3, None, None]
        w = tf.constant(wv)
        x = tf.placeholder(tf.float32, [None, None, 4])
        broadcast = tf.matmul(x, w)               # [b, t, 4] x [1, 4, 6]
        dense = tf.matmul(x, tf.constant(mv))     # two unknown leading dimensions
        assert dense.shape.as_list() == [None, None, 6]
        loss = tf.reduce_sum(tf.nn.softmax(scores) * 0.5) + tf.reduce_sum(broadcast ** 2)
        gq, gk, gx = tf.gradients(loss, [q, k, x])
        assert sum(op.type == "BatchMatMulV2" for op in g.get_operations()) >= 2
        with tf.Session() as s:
            got = s.run([scores, broadcast, dense, gx], {q: qv, k: kv, x: qv[0]})
    np.testing.assert_allclose(got[0], qv @ np.swapaxes(kv, -1, -2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], qv[0] @ wv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], qv[0] @ mv, rtol=1e-5, atol=1e-5)
    # d sum(y^2) / dx = 2 y w^T (the softmax term does not depend on x).
    np.testing.assert_allclose(got[3], 2 * (qv[0] @ wv) @ np.swapaxes(wv, -1, -2), rtol=1e-4,
                               atol=1e-4)
    with g.as_default():
        with pytest.raises(ValueError, match="inner dimensions differ"):
            tf.matmul(q, tf.placeholder(tf.float32, [None, 3, 5, 4]))
        # Shapes known only when fed: the kernel refuses them, naming both.
        a = tf.placeholder(tf.float32, [None, None, None])
        bad = tf.matmul(a, tf.placeholder(tf.float32, [None, None, None]))
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError, match="cannot be broadcast"):
                s.run(bad, {a: np.zeros((2, 3, 4)), bad.op.inputs[1]: np.zeros((3, 4, 5))})
            with pytest.raises(tf.errors.InvalidArgumentError, match="inner dimensions differ"):
                s.run(bad, {a: np.zeros((2, 3, 4)), bad.op.inputs[1]: np.zeros((2, 5, 4))})


def test_shapes_built_from_tf_shape_keep_what_is_known():
    """tf.reshape(x, [tf.shape(x)[0], tf.shape(x)[1], heads, depth]) (multi-head attention's
    split and merge) and tf.fill([tf.shape(x)[0], 3], ...): the result's shape has the numbers
    and the dims of x the graph knows, also for the ops after it (a dense layer needs them)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, None, 32])
        b, t = tf.shape(x)[0], tf.shape(x)[1]
        heads = tf.transpose(tf.reshape(x, [b, t, 4, 8]), [0, 2, 1, 3])
        assert heads.shape.as_list() == [None, 4, None, 8]
        merged = tf.reshape(tf.transpose(heads, [0, 2, 1, 3]), [b, t, 32])
        assert (merged + 1.0).shape.as_list() == [None, None, 32]
        y = tf.layers.dense(merged, 5)
        assert y.shape.as_list() == [None, None, 5]
        also = tf.reshape(x, tf.concat([tf.shape(x)[:-1], [2, 16]], 0))
        assert also.shape.as_list() == [None, None, 2, 16]
        filled = tf.fill([tf.shape(x)[0], 3], 1.0)
        assert filled.shape.as_list() == [None, 3]
        known = tf.placeholder(tf.float32, [None, 6, 32])
        assert tf.reshape(known, [tf.shape(known)[0], -1, 8]).shape.as_list() == [None, None, 8]
        assert tf.reshape(known, [tf.shape(known)[0], tf.shape(known)[1], 32]).shape.as_list() \
            == [None, 6, 32]
        v = np.arange(2 * 3 * 32, dtype=np.float32).reshape(2, 3, 32)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = s.run([merged, also, filled], {x: v})
    np.testing.assert_array_equal(got[0], v)
    np.testing.assert_array_equal(got[1], v.reshape(2, 3, 2, 16))
    np.testing.assert_array_equal(got[2], np.ones((2, 3)))


def test_cross_entropy_of_sequence_logits():
    """Logits [batch, time, classes] (a sequence model): the per-step losses, as TF1; the
    gradient flows back through them."""
    rng = np.random.default_rng(3)
    lv = rng.standard_normal((2, 3, 4)).astype(np.float32)
    yv = rng.integers(0, 4, (2, 3)).astype(np.int32)
    g = tf.Graph()
    with g.as_default():
        logits = tf.placeholder(tf.float32, [None, None, 4])
        labels = tf.placeholder(tf.int32, [None, None])
        sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        dense = tf.nn.softmax_cross_entropy_with_logits(labels=tf.one_hot(labels, 4),
                                                        logits=logits)
        assert sparse.shape.as_list() == [None, None] and dense.shape.as_list() == [None, None]
        (grad,) = tf.gradients(tf.reduce_sum(sparse), [logits])
        with tf.Session() as s:
            a, b, gv = s.run([sparse, dense, grad], {logits: lv, labels: yv})
    p = np.exp(lv) / np.exp(lv).sum(-1, keepdims=True)
    want = -np.log(np.take_along_axis(p, yv[..., None], -1))[..., 0]
    np.testing.assert_allclose(a, want, rtol=1e-5)
    np.testing.assert_allclose(b, want, rtol=1e-5)
    np.testing.assert_allclose(gv, p - np.eye(4)[yv], rtol=1e-5, atol=1e-6)


def test_split_and_slice_of_a_batch_known_only_when_fed():
    """Multi-tower code: tf.split(x, 2) of a [None, d] batch, and tf.slice with tensor bounds;
    a batch the split does not divide fails the step with a message."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        a, b = tf.split(x, 2)
        assert a.shape.as_list() == [None, 3]
        last = tf.slice(x, [tf.shape(x)[0] - 1, 0], [1, -1])
        v = np.arange(12, dtype=np.float32).reshape(4, 3)
        with tf.Session() as s:
            got = s.run([a, b, last], {x: v})
            with pytest.raises(tf.errors.InvalidArgumentError, match="not divisible into 2"):
                s.run(a, {x: v[:3]})
    np.testing.assert_array_equal(got[0], v[:2])
    np.testing.assert_array_equal(got[1], v[2:])
    np.testing.assert_array_equal(got[2], v[3:])


def test_a_fed_training_flag_or_keep_prob_keeps_the_shape():
    """tf.placeholder(tf.bool) / tf.placeholder(tf.float32) have unknown rank; the layers they
    switch (batch norm, dropout) still give x's shape, so a dense layer can follow (a GAN's
    generator, the MNIST tutorial's keep_prob)."""
    g = tf.Graph()
    with g.as_default():
        is_train = tf.placeholder(tf.bool)
        keep_prob = tf.placeholder(tf.float32)
        h = tf.placeholder(tf.float32, [None, 32])
        for y in (tf.layers.batch_normalization(h, training=is_train),
                  tf.layers.dropout(h, 0.5, training=is_train), tf.nn.dropout(h, keep_prob),
                  tf.nn.dropout(h, rate=1.0 - keep_prob)):
            assert y.shape.as_list() == [None, 32], y
        out = tf.layers.dense(tf.nn.dropout(h, keep_prob), 4)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            assert s.run(out, {h: np.ones((3, 32)), keep_prob: 1.0}).shape == (3, 4)


def test_learning_rate_in_a_variable_or_a_numpy_number():
    """The PTB tutorial's lr = tf.Variable(0.0, trainable=False) updated by tf.assign between
    epochs: each step reads its current value; np.float32 rates are numbers."""
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(1.0)
        lr = tf.Variable(0.0, trainable=False)
        step = tf.train.GradientDescentOptimizer(lr).minimize(w * 1.0)
        new_lr = tf.placeholder(tf.float32, [])
        update = tf.assign(lr, new_lr)
        tf.train.MomentumOptimizer(np.float32(0.1), np.float64(0.9)).minimize(w * 2.0)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(step)
            assert s.run(w) == 1.0          # lr 0
            s.run(update, {new_lr: 0.5})
            s.run(step)
            assert s.run(w) == 0.5          # w -= 0.5 * d(w)/dw


def test_gradients_stop_gradients_unconnected_and_optimizer_arguments():
    """tf.gradients(stop_gradients=...) holds those tensors constant (TF1's example: a = 0,
    b = 2a, d(a + b)/d(a, b) = (1, 1)), unconnected_gradients='zero', and the TF1 arguments
    of minimize / compute_gradients (colocate_gradients_with_ops, gate_gradients, grad_loss)."""
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(0.0)
        b = 2 * a
        ga, gb = tf.gradients(a + b, [a, b], stop_gradients=[a, b])
        full = tf.gradients(a + b, [a])[0]
        x = tf.Variable(3.0)
        unused = tf.Variable(1.0)
        none, zero = tf.gradients(x * x, [unused, unused], unconnected_gradients="none")[0], \
            tf.gradients(x * x, unused, unconnected_gradients=tf.UnconnectedGradients.ZERO)[0]
        assert none is None
        opt = tf.train.GradientDescentOptimizer(0.1)
        step = opt.minimize(x * x, colocate_gradients_with_ops=True,
                            gate_gradients=tf.train.Optimizer.GATE_NONE, aggregation_method=None)
        pairs = opt.compute_gradients(x * x, [x], grad_loss=tf.constant(0.5))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            assert s.run([ga, gb, full, zero]) == [1.0, 1.0, 3.0, 0.0]
            assert s.run(pairs[0][0]) == 3.0            # 0.5 * 2x
            s.run(step)
            assert abs(s.run(x) - 2.4) < 1e-6


def test_session_config_boilerplate_and_device_lib():
    """TF1 scripts' session setup: device_count, thread counts, GPU options,
    graph_options.optimizer_options (opt_level L0 turns constant folding and CSE off unless
    rewrite_options says otherwise; XLA's jit level is accepted); device_lib lists devices."""
    from shardflow.python.client import device_lib
    cfg = tf.ConfigProto(device_count={"GPU": 0}, inter_op_parallelism_threads=2,
                         intra_op_parallelism_threads=1, allow_soft_placement=True,
                         gpu_options=tf.GPUOptions(allow_growth=True))
    cfg.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.ON_1
    assert cfg._to_c().rewrite_options["constant_folding"] == tf.RewriterConfig.DEFAULT
    cfg.graph_options.optimizer_options.opt_level = tf.OptimizerOptions.L0
    toggles = cfg._to_c().rewrite_options
    assert toggles["constant_folding"] == toggles["common_subgraph_elimination"] == \
        tf.RewriterConfig.OFF
    cfg.graph_options.rewrite_options.constant_folding = tf.RewriterConfig.ON
    assert cfg._to_c().rewrite_options["constant_folding"] == tf.RewriterConfig.ON
    g = tf.Graph()
    with g.as_default(), tf.Session(config=cfg) as s:
        assert s.run(tf.constant(2) * 3) == 6
    devices = device_lib.list_local_devices()
    assert devices[0].name == "/device:CPU:0" and devices[0].device_type == "CPU"
    assert [d.name for d in devices if d.device_type == "GPU"] == (
        [tf.test.gpu_device_name()] if tf.test.gpu_device_name() else [])


def test_cond_and_case_select_like_tf1():
    g = tf.Graph()
    with g.as_default():
        flag = tf.placeholder(tf.bool, [])
        k = tf.placeholder(tf.int32, [])
        x = tf.Variable(3.0)
        y = tf.cond(flag, lambda: x * 2.0, lambda: x - 1.0)
        pair = tf.cond(flag, lambda: (x, tf.constant(1)), lambda: (-x, tf.constant(2)))
        picked = tf.case([(tf.equal(k, 0), lambda: tf.constant(10.0)),
                          (tf.equal(k, 1), lambda: tf.constant(20.0))],
                         default=lambda: tf.constant(30.0))
        grad = tf.gradients(y, [x.value()])[0]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            assert s.run(y, {flag: True}) == 6.0 and s.run(y, {flag: False}) == 2.0
            assert s.run(grad, {flag: True}) == 2.0 and s.run(grad, {flag: False}) == 1.0
            v, i = s.run(pair, {flag: False})
            assert v == -3.0 and i == 2
            assert [s.run(picked, {k: j}) for j in (0, 1, 5)] == [10.0, 20.0, 30.0]


def test_cond_runs_only_the_branch_taken_side_effects_included():
    g = tf.Graph()
    with g.as_default():
        flag = tf.placeholder(tf.bool, [])
        counter = tf.Variable(0.0)
        bump = tf.cond(flag, lambda: counter.assign_add(1.0), lambda: counter.assign_add(10.0))
        # TF1's classic: an update run only in training, returned through a control dependency.
        table = tf.constant([1.0, 2.0, 3.0])
        index = tf.placeholder(tf.int32, [])
        # The branch not taken would fail (index out of range): it never runs.
        safe = tf.cond(index < 3, lambda: tf.gather(table, index), lambda: tf.constant(-1.0))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            assert s.run(bump, {flag: True}) == 1.0
            assert s.run(bump, {flag: False}) == 11.0
            assert s.run(counter) == 11.0
            assert s.run(safe, {index: 2}) == 3.0 and s.run(safe, {index: 7}) == -1.0
            op = tf.cond(flag, lambda: tf.group(counter.assign(5.0)), lambda: tf.no_op())
            s.run(op, {flag: False})
            assert s.run(counter) == 11.0
            s.run(op, {flag: True})
            assert s.run(counter) == 5.0


def test_static_shapes_can_be_passed_where_shapes_go():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.placeholder(tf.float32, shape=x.get_shape())      # TensorShape with None
        w = tf.Variable(tf.zeros(tf.TensorShape([3, 2])))
        z = tf.zeros(w.get_shape()) + tf.ones(list(w.shape))
        r = tf.reshape(tf.matmul(y, w), [-1, w.shape[1]])
        assert y.shape.as_list() == [None, 3]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = s.run([z, r], {y: np.ones((2, 3), np.float32)})
    np.testing.assert_allclose(out[0], np.ones((3, 2)))
    assert out[1].shape == (2, 2)


def test_softmax_cross_entropy_v2_matches_v1_and_trains_the_labels():
    rng = np.random.default_rng(3)
    zv = rng.normal(size=(4, 5)).astype(np.float32)
    lv = rng.dirichlet(np.ones(5), size=4).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        z = tf.constant(zv)
        labels = tf.constant(lv)
        v1 = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=z)
        v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=z)
        dz1, dl1 = tf.gradients(tf.reduce_sum(v1), [z, labels])
        dz2, dl2 = tf.gradients(tf.reduce_sum(v2), [z, labels])
        a, b, gz1, gz2, gl2 = run([v1, v2, dz1, dz2, dl2], graph=g)
    assert dl1 is None                      # v1: no gradient to the labels, as in TF1
    np.testing.assert_allclose(a, b, rtol=1e-5)
    np.testing.assert_allclose(gz1, gz2, rtol=1e-4, atol=1e-6)
    log_softmax = zv - np.log(np.exp(zv).sum(1, keepdims=True))
    np.testing.assert_allclose(gl2, -log_softmax, rtol=1e-5)


def test_rounding_trigonometric_and_float_class_ops_match_numpy():
    xv = np.array([-2.5, -0.5, 0.5, 1.5, 2.25, 1e-7], np.float32)
    special = np.array([1.0, np.inf, -np.inf, np.nan, 0.0, -3.0], np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(xv)
        sp = tf.constant(special)
        outs = run([tf.floor(x), tf.ceil(x), tf.round(x), tf.sin(x), tf.cos(x), tf.log1p(tf.abs(x)),
                    tf.expm1(x), tf.erf(x), tf.is_nan(sp), tf.is_inf(sp), tf.is_finite(sp),
                    tf.gradients(tf.reduce_sum(tf.sin(x) + tf.log1p(tf.abs(x))), [x])[0]],
                   graph=g)
        assert tf.gradients(tf.reduce_sum(tf.floor(x)), [x]) == [None]   # TF1: no gradient
    import math
    want = [np.floor(xv), np.ceil(xv), np.round(xv), np.sin(xv), np.cos(xv), np.log1p(np.abs(xv)),
            np.expm1(xv), np.array([math.erf(v) for v in xv], np.float32), np.isnan(special),
            np.isinf(special), np.isfinite(special),
            np.cos(xv) + np.sign(xv) / (1 + np.abs(xv))]
    for got, w in zip(outs, want):
        np.testing.assert_allclose(got, w, rtol=2e-6, atol=1e-7)
    assert outs[2].tolist() == [-2.0, -0.0, 0.0, 2.0, 2.0, 0.0]     # halves to even


def test_print_passes_its_input_through_and_writes_the_data(capfd):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3])
        y = tf.Print(x, [tf.reduce_sum(x), x], "sum and x: ", summarize=2) * 2
        once = tf.Print(x, [x], "once: ", first_n=1)
        dx = tf.gradients(tf.reduce_sum(y), [x])[0]
        with tf.Session() as s:
            out, grad = s.run([y, dx], {x: [1.0, 2.0, 3.0]})
            for _ in range(3):
                s.run(once, {x: [4.0, 5.0, 6.0]})
    np.testing.assert_allclose(out, [2, 4, 6])
    np.testing.assert_allclose(grad, [2, 2, 2])
    err = capfd.readouterr().err
    assert "sum and x: [6][1 2...]" in err, err
    assert err.count("once: ") == 1, err


def test_boolean_mask_and_one_argument_where():
    xv = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    mv = np.array([[True, False, True], [False, False, True]])
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3, 2])
        m = tf.placeholder(tf.bool, [None, 3])
        picked = tf.boolean_mask(x, m)
        loss = tf.reduce_sum(tf.square(picked))
        dx = tf.gradients(loss, [x])[0]
        coords = tf.where(m)
        none = tf.where(tf.constant([False, False]))
        with tf.Session() as s:
            p, d, c, n = s.run([picked, dx, coords, none], {x: xv, m: mv})
    np.testing.assert_array_equal(p, xv[mv])
    np.testing.assert_array_equal(d, 2 * xv * mv[:, :, None])
    np.testing.assert_array_equal(c, np.argwhere(mv))
    assert c.dtype == np.int64 and n.shape == (0, 1)
    assert picked.shape.as_list() == [None, 2]
    with pytest.raises(TypeError, match="must be bool"):
        tf.boolean_mask(tf.constant([1.0]), tf.constant([1]))


def test_cumsum_and_reverse_match_numpy():
    xv = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(xv)
        outs = run([tf.cumsum(x, axis=1), tf.cumsum(x, 0, exclusive=True),
                    tf.cumsum(x, 1, reverse=True), tf.cumsum(tf.constant([1, 2, 3])),
                    tf.reverse(x, [1]), tf.reverse_v2(x, axis=[0, 1]),
                    tf.gradients(tf.reduce_sum(tf.cumsum(x, 1) * x), [x])[0]], graph=g)
    np.testing.assert_array_equal(outs[0], np.cumsum(xv, 1))
    np.testing.assert_array_equal(outs[1], np.cumsum(xv, 0) - xv)
    np.testing.assert_array_equal(outs[2], np.cumsum(xv[:, ::-1], 1)[:, ::-1])
    np.testing.assert_array_equal(outs[3], [1, 3, 6])
    np.testing.assert_array_equal(outs[4], xv[:, ::-1])
    np.testing.assert_array_equal(outs[5], xv[::-1, ::-1])
    # d/dx_k sum_j cumsum_j * x_j = cumsum_k + sum_{j >= k} x_j
    np.testing.assert_allclose(outs[6], np.cumsum(xv, 1) + np.cumsum(xv[:, ::-1], 1)[:, ::-1])


def test_conv2d_transpose_and_lrn():
    rng = np.random.default_rng(5)
    xv = rng.normal(size=(2, 3, 3, 4)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [None, 3, 3, 4])
        up = tf.layers.conv2d_transpose(x, 2, 3, strides=2, padding="same")
        valid = tf.layers.conv2d_transpose(x, 2, 3, strides=2, padding="valid")
        w = tf.constant(rng.normal(size=(3, 3, 2, 4)).astype(np.float32))
        by_hand = tf.nn.conv2d_transpose(x, w, [2, 6, 6, 2], strides=2, padding="SAME")
        # conv2d_transpose is the gradient of conv2d with respect to its input.
        probe = tf.placeholder(tf.float32, [2, 6, 6, 2])
        fwd = tf.nn.conv2d(probe, w, strides=2, padding="SAME")
        as_grad = tf.gradients(fwd, [probe], grad_ys=[x])[0]
        n = tf.nn.lrn(x, depth_radius=1, bias=1.0, alpha=0.5, beta=0.75)
        loss = tf.reduce_mean(tf.square(up)) + tf.reduce_mean(n)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            u, v, a, b, nv = s.run([up, valid, by_hand, as_grad, n],
                                   {x: xv, probe: np.zeros((2, 6, 6, 2), np.float32)})
            before = s.run(loss, {x: xv})
            for _ in range(5):
                s.run(train, {x: xv})
            after = s.run(loss, {x: xv})
    assert u.shape == (2, 6, 6, 2) and v.shape == (2, 7, 7, 2)
    assert up.shape.as_list() == [None, 6, 6, 2]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    sq = np.square(xv)
    window = sq + np.concatenate([sq[..., 1:], 0 * sq[..., :1]], -1) + \
        np.concatenate([0 * sq[..., :1], sq[..., :-1]], -1)
    np.testing.assert_allclose(nv, xv / (1 + 0.5 * window) ** 0.75, rtol=1e-5)
    assert after < before


def test_gather_nd_and_scatter_nd_match_numpy():
    pv = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    g = tf.Graph()
    with g.as_default():
        params = tf.placeholder(tf.float32, [2, 3, 4])
        idx = tf.placeholder(tf.int32, [None, 2])
        picked = tf.gather_nd(params, idx)                      # rows params[i, j]
        elems = tf.gather_nd(params, [[[0, 1, 2]], [[1, 2, 3]]])  # single elements, [2, 1]
        dparams = tf.gradients(tf.reduce_sum(picked * 2.0), [params])[0]
        upd = tf.placeholder(tf.float32, [3, 4])
        scattered = tf.scatter_nd([[0, 1], [1, 2], [0, 1]], upd, [2, 3, 4])
        dupd = tf.gradients(tf.reduce_sum(scattered * params), [upd])[0]
        with tf.Session() as s:
            iv = np.array([[0, 1], [1, 2], [0, 1]], np.int32)
            uv = np.arange(12, dtype=np.float32).reshape(3, 4)
            p, e, dp, sc, du = s.run([picked, elems, dparams, scattered, dupd],
                                     {params: pv, idx: iv, upd: uv})
            with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
                s.run(picked, {params: pv, idx: [[0, 3]]})   # j = 3 >= 3: not another row
    np.testing.assert_array_equal(p, pv[iv[:, 0], iv[:, 1]])
    np.testing.assert_array_equal(e, [[pv[0, 1, 2]], [pv[1, 2, 3]]])
    want_dp = np.zeros_like(pv)
    np.add.at(want_dp, (iv[:, 0], iv[:, 1]), 2.0)
    np.testing.assert_array_equal(dp, want_dp)
    want_sc = np.zeros((2, 3, 4), np.float32)
    np.add.at(want_sc, (iv[:, 0], iv[:, 1]), uv)
    np.testing.assert_array_equal(sc, want_sc)
    np.testing.assert_array_equal(du, pv[iv[:, 0], iv[:, 1]])
    assert picked.shape.as_list() == [None, 4]


def test_gather_nd_and_scatter_nd_with_sizes_known_when_the_step_runs():
    """The last output of each sequence of a dynamic_rnn, as TF1 programs pick it: params
    [None, time, units], indices built from tf.shape; scatter_nd to tf.shape(x)."""
    g = tf.Graph()
    with g.as_default():
        out = tf.placeholder(tf.float32, [None, None, 3])
        lengths = tf.placeholder(tf.int32, [None])
        idx = tf.stack([tf.range(tf.shape(out)[0]), lengths - 1], axis=1)
        last = tf.gather_nd(out, idx)
        dout = tf.gradients(tf.reduce_sum(last), out)[0]
        back = tf.scatter_nd(idx, last, tf.shape(out))
        back_list = tf.scatter_nd(idx, last, [tf.shape(out)[0], tf.shape(out)[1], 3])
        ov = np.arange(30, dtype=np.float32).reshape(2, 5, 3)
        with tf.Session() as s:
            lv, dv, bv, bl = s.run([last, dout, back, back_list], {out: ov, lengths: [5, 2]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
                s.run(last, {out: ov, lengths: [6, 1]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
                s.run(back, {out: ov, lengths: [0, 1]})    # index -1
    np.testing.assert_array_equal(lv, [ov[0, 4], ov[1, 1]])
    want = np.zeros_like(ov)
    want[0, 4] = want[1, 1] = 1
    np.testing.assert_array_equal(dv, want)
    np.testing.assert_array_equal(bv, want * ov)
    np.testing.assert_array_equal(bl, want * ov)
    assert last.shape.as_list() == [None, 3]


def test_numpy_scalars_keep_their_dtype():
    # As TF1's: tf.constant(np.float64(1.5)) is float64, tf.Variable(np.int64(2)) int64; Python
    # numbers stay float32 / int32, and a NumPy scalar beside a tensor takes the tensor's type.
    g = tf.Graph()
    with g.as_default():
        assert tf.constant(np.float64(1.5)).dtype == tf.float64
        assert tf.constant(np.int64(3)).dtype == tf.int64
        assert tf.constant(1.5).dtype == tf.float32
        assert tf.Variable(np.float64(1.5)).dtype == tf.float64
        assert tf.Variable(np.int64(2)).dtype == tf.int64
        assert tf.Variable(1.5).dtype == tf.float32
        x = tf.placeholder(tf.float32, [2])
        assert (x * np.sqrt(2.0)).dtype == tf.float32


def test_tensorflow_python_module_paths():
    # TF1 programs import tensorflow.python's modules directly; shardflow.python stands for
    # them: collective_ops is the collective ops module, the others take their names from the
    # public API, and a name none has is an AttributeError naming the module.
    import importlib
    from shardflow import collective_ops as public
    from shardflow.python.ops import collective_ops, math_ops, nn_ops, state_ops
    from shardflow.python.framework import ops, dtypes
    from shardflow.python.training import server_lib, device_setter, basic_session_run_hooks
    from shardflow.python.platform import tf_logging
    assert collective_ops is public
    assert math_ops.reduce_sum is tf.reduce_sum and nn_ops.relu is tf.nn.relu
    assert state_ops.assign is tf.assign and ops.get_default_graph is tf.get_default_graph
    assert dtypes.float32 is tf.float32 and tf_logging.info is tf.logging.info
    assert server_lib.Server is tf.train.Server
    assert device_setter.replica_device_setter is tf.train.replica_device_setter
    assert basic_session_run_hooks.StopAtStepHook is tf.train.StopAtStepHook
    assert importlib.import_module("shardflow.python.ops.array_ops").reshape is tf.reshape
    with pytest.raises(AttributeError, match="shardflow.python.ops.math_ops has no 'nope'"):
        math_ops.nope
    with tf.Graph().as_default():
        x = tf.constant([[1.0, -2.0]])
        y = nn_ops.relu(math_ops.matmul(x, tf.ones([2, 2])))
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(y), [[0.0, 0.0]])


def test_device_spec_and_list_devices_attributes():
    spec = tf.DeviceSpec(job="ps", task=1, device_type="cpu", device_index=0)
    assert spec.to_string() == "/job:ps/task:1/device:CPU:0"
    parsed = tf.DeviceSpec.from_string("/job:worker/replica:0/task:2/gpu:1")
    assert (parsed.job, parsed.replica, parsed.task, parsed.device_type,
            parsed.device_index) == ("worker", 0, 2, "GPU", 1)
    assert tf.DeviceSpec.from_string("/device:CPU:*").device_index is None
    merged = tf.DeviceSpec.from_string("/job:ps").make_merged_spec("/task:3/cpu:0")
    assert merged.to_string() == "/job:ps/task:3/device:CPU:0"
    with pytest.raises(ValueError, match="cannot parse '/job:ps/task:x'"):
        tf.DeviceSpec.from_string("/job:ps/task:x")
    with tf.Graph().as_default():
        with tf.device(tf.DeviceSpec(device_type="CPU", device_index=0)):
            c = tf.constant(1.0)
        assert c.device == "/device:CPU:0"
        with tf.Session() as sess:
            devices = sess.list_devices()
    assert devices[0].name == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert devices[0].device_type == "CPU" and "CPU:0" in devices[0]


def test_graph_seed_makes_keras_and_initializer_weights_reproducible():
    # Regression: sf.initializers' kinds (Keras's default glorot_uniform, he_normal, ...) took
    # seed 0 (random) without a seed of their own, ignoring tf.set_random_seed.
    def weights():
        with tf.Graph().as_default():
            tf.set_random_seed(3)
            layer = tf.keras.layers.Dense(4, kernel_initializer="he_normal")
            layer.build(tf.TensorShape([None, 5]))
            dense = tf.keras.layers.Dense(2)
            dense.build(tf.TensorShape([None, 3]))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                return sess.run([layer.kernel, dense.kernel])
    first, second = weights(), weights()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0][:3, :2], first[1])  # each op its own seed


def test_layer_build_takes_a_tuple_as_tf1_code_passes_it():
    model = tf.keras.Sequential([tf.keras.layers.Dense(3)])
    model.build((None, 5))
    assert model.count_params() == 18
    conv = tf.keras.layers.Conv2D(2, 3)
    conv.build((None, 8, 8, 1))
    assert conv.kernel.shape == [3, 3, 1, 2]

    class Custom(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", shape=(input_shape[-1], 4))
            super().build(input_shape)

        def call(self, x):
            return tf.matmul(x, self.w)
    custom = Custom()
    custom.build((None, 7))
    assert custom.w.shape == [7, 4]
    tf.keras.layers.Concatenate().build([(None, 2), (None, 3)])


def test_contrib_batch_norm_and_dropout_under_an_unshaped_training_flag():
    # tf.placeholder(tf.bool) has no shape; the layers' outputs keep their input's shape, so
    # a conv2d_transpose after them (DCGAN's generator) can be built.
    g = tf.Graph()
    with g.as_default():
        training = tf.placeholder(tf.bool)
        x = tf.placeholder(tf.float32, [None, 7, 7, 8])
        y = tf.contrib.layers.batch_norm(x, is_training=training)
        d = tf.contrib.layers.dropout(y, keep_prob=tf.constant(0.5), is_training=training)
        assert y.shape.as_list() == [None, 7, 7, 8]
        assert d.shape.as_list() == [None, 7, 7, 8]
        up = tf.layers.conv2d_transpose(d, 4, 3, strides=2, padding="same")
        assert up.shape.as_list() == [None, 14, 14, 4]
