"""TF1's AdadeltaOptimizer, FtrlOptimizer and ProximalGradientDescentOptimizer (composed in
Python, shardflow/composite_optimizers.py) against NumPy re-implementations of TF1's kernels,
step by step; their slots (names, initial values, get_slot, the Saver); minimize with a global
step; and tf.train.Coordinator / LooperThread / start_queue_runners / QueueRunner."""
import threading
import time

import numpy as np
import pytest

import shardflow as tf
from shardflow import errors

# A small least-squares problem: loss = 0.5 * |x @ w - y|^2, gradient x^T (x @ w - y).
X = np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 2.0], [-1.5, 0.5, 1.0], [2.0, 1.0, 0.5]])
Y = np.array([1.0, -2.0, 0.5, 3.0])
W0 = np.array([0.3, -0.2, 0.8])
STEPS = 5


def np_grad(w):
    return X.T @ (X @ w - Y)


# ---- TF1's kernels in NumPy (float64); each takes (w, grad, state) -> (w, state) ----------


def np_adadelta(lr, rho=0.95, eps=1e-8):
    def step(w, g, s):
        accum = rho * s.get("accum", 0.0) + (1 - rho) * g * g
        update = np.sqrt(s.get("accum_update", 0.0) + eps) / np.sqrt(accum + eps) * g
        accum_update = rho * s.get("accum_update", 0.0) + (1 - rho) * update * update
        return w - lr * update, {"accum": accum, "accum_update": accum_update}
    return step


def np_ftrl(lr, power=-0.5, init=0.1, l1=0.0, l2=0.0, shrinkage=0.0, beta=0.0):
    l2 = l2 + beta / (2 * lr)

    def step(w, g, s):
        accum = s.get("accum", np.full_like(w, init))
        linear = s.get("linear", np.zeros_like(w))
        g_s = g + 2 * shrinkage * w
        accum_new = accum + g * g
        linear = linear + g_s - (accum_new ** -power - accum ** -power) / lr * w
        quadratic = accum_new ** -power / lr + 2 * l2
        w = np.where(np.abs(linear) > l1, (np.sign(linear) * l1 - linear) / quadratic, 0.0)
        return w, {"accum": accum_new, "linear": linear}
    return step


def np_proximal(lr, l1=0.0, l2=0.0):
    def step(w, g, s):
        prox = w - lr * g
        if l1 > 0:
            prox = np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0.0)
        return prox / (1 + lr * l2), s
    return step


CASES = {
    "adadelta": (lambda: tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
                 np_adadelta(1.0, rho=0.9, eps=1e-6)),
    "adadelta_defaults": (lambda: tf.train.AdadeltaOptimizer(), np_adadelta(0.001)),
    "ftrl": (lambda: tf.train.FtrlOptimizer(0.5), np_ftrl(0.5)),
    "ftrl_l1_l2": (lambda: tf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.5,
                                                  l2_regularization_strength=0.2),
                   np_ftrl(0.5, l1=0.5, l2=0.2)),
    "ftrl_power": (lambda: tf.train.FtrlOptimizer(0.3, learning_rate_power=-0.7,
                                                  initial_accumulator_value=0.5,
                                                  l1_regularization_strength=0.1),
                   np_ftrl(0.3, power=-0.7, init=0.5, l1=0.1)),
    "ftrl_shrinkage_beta": (lambda: tf.train.FtrlOptimizer(
        0.5, l2_regularization_strength=0.1, l2_shrinkage_regularization_strength=0.3,
        beta=0.2), np_ftrl(0.5, l2=0.1, shrinkage=0.3, beta=0.2)),
    "proximal": (lambda: tf.train.ProximalGradientDescentOptimizer(0.05),
                 np_proximal(0.05)),
    "proximal_l1_l2": (lambda: tf.train.ProximalGradientDescentOptimizer(
        0.05, l1_regularization_strength=2.0, l2_regularization_strength=0.5),
        np_proximal(0.05, l1=2.0, l2=0.5)),
}


def regression_graph(dtype=np.float32):
    w = tf.Variable(W0.astype(dtype), name="w")
    pred = tf.reshape(tf.matmul(tf.constant(X.astype(dtype)), tf.reshape(w, [3, 1])), [4])
    loss = 0.5 * tf.reduce_sum(tf.square(pred - Y.astype(dtype)))
    return w, loss


def trajectory(make_opt, dtype=np.float32, steps=STEPS, feed_lr=None):
    g = tf.Graph()
    with g.as_default():
        w, loss = regression_graph(dtype)
        if feed_lr is None:
            opt = make_opt()
            feed = None
        else:
            lr = tf.placeholder(tf.float32, [])
            opt = make_opt(lr)
            feed = {lr: feed_lr}
        train = opt.minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for _ in range(steps):
                s.run(train, feed)
                out.append(s.run(w.value()))
    return out


def np_trajectory(step, steps=STEPS):
    w, state, out = W0.copy(), {}, []
    for _ in range(steps):
        w, state = step(w, np_grad(w), state)
        out.append(w)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_step_matches_tf1s_update(case):
    make_opt, np_step = CASES[case]
    for got, want in zip(trajectory(make_opt), np_trajectory(np_step)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_l1_makes_ftrl_and_proximal_weights_exactly_zero():
    # Strong l1 sets every weight to 0 (the dense problem's gradients are small).
    for make_opt in (lambda: tf.train.FtrlOptimizer(0.5, l1_regularization_strength=100.0),
                     lambda: tf.train.ProximalGradientDescentOptimizer(
                         0.05, l1_regularization_strength=100.0)):
        np.testing.assert_array_equal(trajectory(make_opt, steps=2)[-1], np.zeros(3))


def test_float64_variables_and_a_fed_learning_rate():
    got = trajectory(lambda: tf.train.AdadeltaOptimizer(1.0), dtype=np.float64)
    for g_, want in zip(got, np_trajectory(np_adadelta(1.0))):
        assert g_.dtype == np.float64
        np.testing.assert_allclose(g_, want, rtol=1e-10)
    got = trajectory(lambda lr: tf.train.FtrlOptimizer(lr, l1_regularization_strength=0.1),
                     feed_lr=0.5)
    for g_, want in zip(got, np_trajectory(np_ftrl(0.5, l1=0.1))):
        np.testing.assert_allclose(g_, want, rtol=1e-5, atol=1e-6)


def test_slots_have_tf1s_names_and_initial_values():
    g = tf.Graph()
    with g.as_default():
        w, loss = regression_graph()
        ada = tf.train.AdadeltaOptimizer(1.0)
        ftrl = tf.train.FtrlOptimizer(0.1, initial_accumulator_value=0.25)
        named = tf.train.FtrlOptimizer(0.1, accum_name="acc", linear_name="lin", name="F2")
        prox = tf.train.ProximalGradientDescentOptimizer(0.1)
        assert ada.get_slot_names() == []
        ops = [o.minimize(loss) for o in (ada, ftrl, named, prox)]
        assert ada.get_slot_names() == ["accum", "accum_update"]
        assert ftrl.get_slot_names() == ["accum", "linear"]
        assert prox.get_slot_names() == [] and prox.variables() == []
        assert ada.get_slot(w, "accum").op.name == "w/Adadelta"
        assert ada.get_slot(w, "accum_update").op.name == "w/Adadelta_1"
        assert ftrl.get_slot(w, "accum").op.name == "w/Ftrl"
        assert ftrl.get_slot(w, "linear").op.name == "w/Ftrl_1"
        assert named.get_slot(w, "accum").op.name == "w/acc"
        assert named.get_slot(w, "linear").op.name == "w/lin"
        assert ada.get_slot(w, "nope") is None
        assert [v.op.name for v in ftrl.variables()] == ["w/Ftrl", "w/Ftrl_1"]
        slots = ada.variables() + ftrl.variables() + named.variables()
        assert all(not v.trainable for v in slots)
        assert {v.name for v in slots} <= {v.name for v in tf.global_variables()}
        assert [v.name for v in tf.trainable_variables()] == ["w:0"]
        # A second minimize reuses the slots.
        ada.minimize(loss)
        assert len(ada.variables()) == 2
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(s.run(ftrl.get_slot(w, "accum").value()),
                                          np.full(3, 0.25, np.float32))
            np.testing.assert_array_equal(s.run(ada.get_slot(w, "accum").value()), np.zeros(3))
            s.run(ops[0])
            assert np.all(s.run(ada.get_slot(w, "accum").value()) > 0)


@pytest.mark.parametrize("make_opt", [
    # Adadelta's first steps are about sqrt(epsilon) long: a larger epsilon starts it faster.
    lambda: tf.train.AdadeltaOptimizer(1.0, epsilon=1e-4),
    CASES["ftrl_l1_l2"][0], CASES["proximal_l1_l2"][0]], ids=["adadelta", "ftrl", "proximal"])
def test_minimize_counts_global_step_and_lowers_the_loss(make_opt):
    g = tf.Graph()
    with g.as_default():
        w, loss = regression_graph()
        step = tf.train.get_or_create_global_step()
        train = make_opt().minimize(loss, global_step=step)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run(loss)
            for _ in range(30):
                s.run(train)
            assert s.run(step) == 30
            assert s.run(loss) < 0.5 * first


def test_apply_gradients_and_compute_gradients():
    g = tf.Graph()
    with g.as_default():
        w, loss = regression_graph()
        opt = tf.train.FtrlOptimizer(0.5)
        step = tf.train.get_or_create_global_step()
        grads = opt.compute_gradients(loss)
        assert [v for _, v in grads] == [w]
        train = opt.apply_gradients(grads, global_step=step)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(train)
            np.testing.assert_allclose(s.run(w.value()), np_trajectory(np_ftrl(0.5), 1)[0],
                                       rtol=1e-5)
            assert s.run(step) == 1
        with pytest.raises(ValueError, match="No gradients provided for any variable"):
            opt.apply_gradients([(None, w)])


def test_bad_hyperparameters_are_rejected():
    with pytest.raises(ValueError, match="learning_rate_power"):
        tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l1_regularization_strength"):
        tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match="l2_regularization_strength"):
        tf.train.ProximalGradientDescentOptimizer(0.1, l2_regularization_strength=-1.0)
    with pytest.raises(TypeError, match="rho"):
        tf.train.AdadeltaOptimizer(0.1, rho="0.9")
    with pytest.raises(TypeError, match="learning_rate"):
        tf.train.AdadeltaOptimizer("fast")


def test_saver_keeps_slots_so_training_resumes_exactly(tmp_path):
    def build():
        w, loss = regression_graph()
        opt = tf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.1)
        return w, opt, opt.minimize(loss)

    want = np_trajectory(np_ftrl(0.5, l1=0.1), steps=5)[-1]
    g = tf.Graph()
    with g.as_default():
        w, opt, train = build()
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(3):
                s.run(train)
            path = saver.save(s, str(tmp_path / "model.ckpt"))
    from shardflow import _shardflow
    assert {"w", "w/Ftrl", "w/Ftrl_1"} <= {n for n, _ in _shardflow.load_checkpoint(path)}
    g = tf.Graph()
    with g.as_default():
        w, opt, train = build()
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            saver.restore(s, path)
            for _ in range(2):
                s.run(train)
            np.testing.assert_allclose(s.run(w.value()), want, rtol=1e-5, atol=1e-6)


# ---- Coordinator, LooperThread, queue runners ---------------------------------------------


def test_threads_stop_when_a_stop_is_requested():
    coord = tf.train.Coordinator()
    counts = [0, 0]

    def work(i):
        while not coord.should_stop():
            counts[i] += 1
            time.sleep(0.001)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    assert not coord.should_stop()
    time.sleep(0.02)
    coord.request_stop()
    assert coord.should_stop()
    coord.join(threads, stop_grace_period_secs=10)
    assert coord.joined
    assert not any(t.is_alive() for t in threads)
    assert all(c > 0 for c in counts)


def test_join_re_raises_the_exception_a_thread_reported():
    coord = tf.train.Coordinator()

    def bad():
        with coord.stop_on_exception():
            raise KeyError("from the thread")

    def good():
        while not coord.should_stop():
            time.sleep(0.001)

    threads = [threading.Thread(target=bad), threading.Thread(target=good)]
    for t in threads:
        t.start()
    with pytest.raises(KeyError, match="from the thread"):
        coord.join(threads, stop_grace_period_secs=10)
    assert not threads[1].is_alive()
    with pytest.raises(KeyError):
        coord.raise_requested_exception()
    # Only the first report is kept; a clean stop (end of input) is not an error.
    coord.clear_stop()
    assert not coord.should_stop() and not coord.joined
    coord.request_stop(errors.OutOfRangeError("end of input"))
    coord.request_stop(ValueError("later"))
    coord.join([])
    coord.clear_stop()
    coord.request_stop(ValueError("first"))
    coord.request_stop(ValueError("second"))
    with pytest.raises(ValueError, match="first"):
        coord.join([])


def test_wait_for_stop_times_out_and_join_names_stragglers():
    coord = tf.train.Coordinator()
    start = time.monotonic()
    assert coord.wait_for_stop(0.05) is False
    assert time.monotonic() - start >= 0.04
    threading.Timer(0.02, coord.request_stop).start()
    assert coord.wait_for_stop(10.0) is True
    release = threading.Event()
    stuck = threading.Thread(target=release.wait, name="stuck-reader")
    stuck.start()
    try:
        with pytest.raises(RuntimeError, match="stuck-reader"):
            coord.join([stuck], stop_grace_period_secs=0.05)
        coord.clear_stop()
        coord.request_stop()
        coord.join([stuck], stop_grace_period_secs=0.05, ignore_live_threads=True)
    finally:
        release.set()
        stuck.join()


def test_looper_thread_calls_its_target_until_stopped():
    coord = tf.train.Coordinator()
    calls = []
    looper = tf.train.LooperThread.loop(coord, 0.005, target=calls.append, args=(1,))
    time.sleep(0.05)
    coord.request_stop()
    coord.join(stop_grace_period_secs=10)  # the looper registered itself
    assert not looper.is_alive() and len(calls) >= 2
    coord.clear_stop()
    failing = tf.train.LooperThread.loop(coord, None, target=lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        coord.join([failing], stop_grace_period_secs=10)


def test_start_queue_runners_without_queues_starts_nothing():
    # A graph with tf.data or feed_dict inputs has no queue runners: nothing to start
    # (queue-fed pipelines are tested in test_queues.py).
    g = tf.Graph()
    with g.as_default(), tf.Session() as s:
        coord = tf.train.Coordinator()
        assert tf.train.start_queue_runners() == []
        assert tf.train.start_queue_runners(sess=s, coord=coord) == []
        coord.request_stop()
        coord.join(tf.train.start_queue_runners(sess=s, coord=coord))
    with pytest.raises(ValueError, match="needs a queue"):
        tf.train.QueueRunner(None, [])


def test_centered_rmsprop_against_numpy():
    """RMSPropOptimizer(centered=True) (was refused): TF1's ApplyCenteredRMSProp."""
    tf.reset_default_graph()
    w0 = np.array([1.0, -2.0, 0.5], np.float32)
    w = tf.Variable(w0, name="w")
    opt = tf.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.5, epsilon=1e-6, centered=True)
    train = opt.minimize(tf.reduce_sum(w * w * w))
    assert [v.op.name for v in opt.variables()] == ["w/RMSProp", "w/RMSProp_1", "w/RMSProp_2"]
    assert opt.get_slot(w, "mg").op.name == "w/RMSProp_1"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        got = sess.run(w)
    ms, mg, mom, x = np.ones(3), np.zeros(3), np.zeros(3), w0.astype(np.float64)
    for _ in range(3):
        g = 3 * x * x
        ms = 0.9 * ms + 0.1 * g * g
        mg = 0.9 * mg + 0.1 * g
        mom = 0.5 * mom + 0.01 * g / np.sqrt(ms - mg * mg + 1e-6)
        x = x - mom
    np.testing.assert_allclose(got, x, rtol=1e-5)


@pytest.mark.parametrize("make,slots", [
    (lambda: tf.train.AdamOptimizer(0.1), ["m", "v"]),
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), ["momentum"]),
    (lambda: tf.train.RMSPropOptimizer(0.1, momentum=0.9), ["momentum", "rms"]),
    (lambda: tf.train.AdagradOptimizer(0.1), ["accumulator"])])
def test_engine_optimizers_give_their_slots_and_variables(make, slots):
    """get_slot_names/get_slot/variables, as TF1's; re-initialising opt.variables() resets the
    optimizer's state (the pattern for restarting Adam)."""
    tf.reset_default_graph()
    w = tf.Variable([1.0, 2.0], name="w")
    b = tf.Variable(0.5, name="b")
    opt = make()
    assert opt.variables() == [] and opt.get_slot(w, slots[0]) is None
    train = opt.minimize(tf.reduce_sum(w * w) + b * b)
    assert opt.get_slot_names() == slots
    for name in slots:
        for var in (w, b):
            slot = opt.get_slot(var, name)
            assert slot is not None and slot in opt.variables()
            assert slot.shape.as_list() == var.shape.as_list()
    assert opt.get_slot(w, "nonexistent") is None
    assert not set(opt.variables()) & set(tf.trainable_variables())
    first = opt.get_slot(w, slots[0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fresh = sess.run(first)
        sess.run(train)
        assert not np.allclose(sess.run(first), fresh)
        sess.run(tf.variables_initializer(opt.variables()))
        np.testing.assert_allclose(sess.run(first), fresh)


def test_a_gradient_of_another_shape_is_refused_by_every_optimizer():
    # Regression: RMSProp, Ftrl, Adadelta, ProximalGD, ProximalAdagrad and LazyAdam broadcast a
    # scalar or [1] gradient over a [2] variable and updated every element; TF1's update ops'
    # shape functions refuse it (GD, Adam, Momentum and Adagrad here already did).
    for make in (lambda: tf.train.RMSPropOptimizer(0.1), lambda: tf.train.FtrlOptimizer(0.1),
                 lambda: tf.train.AdadeltaOptimizer(0.1),
                 lambda: tf.train.ProximalAdagradOptimizer(0.1),
                 lambda: tf.contrib.opt.LazyAdamOptimizer(0.1),
                 lambda: tf.train.GradientDescentOptimizer(0.1)):
        with tf.Graph().as_default():
            v = tf.Variable([1.0, 2.0])
            with pytest.raises(ValueError, match="incompatible"):
                make().apply_gradients([(tf.constant([0.5]), v)])


def test_lazy_adam_variables_include_its_beta_powers():
    # Regression: variables() left out beta1_power/beta2_power, so re-initializing it (the
    # documented way to reset an optimizer) kept the old bias correction.
    with tf.Graph().as_default():
        w = tf.Variable([1.0, -2.0], name="w")
        opt = tf.contrib.opt.LazyAdamOptimizer(0.1)
        step = opt.minimize(tf.reduce_sum(w))
        names = sorted(v.op.name for v in opt.variables())
        assert names == ["beta1_power", "beta2_power", "w/LazyAdam", "w/LazyAdam_1"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            first = sess.run(w)
            sess.run(step)
            sess.run([tf.variables_initializer(opt.variables()), w.initializer])
            sess.run(step)
            np.testing.assert_allclose(sess.run(w), first, rtol=1e-6)
