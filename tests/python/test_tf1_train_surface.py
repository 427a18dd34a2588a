"""TF1's tf.train surface beyond optimizers and Saver: learning-rate schedules against their
formulas in NumPy, the global-step helpers, the basic hooks seen through MonitoredSession and
MonitoredTrainingSession runs (logged lines, NaN losses, event files read back), Scaffold and
the session creators, and the checkpoint utilities (list_variables, load_variable, readers,
init_from_checkpoint under a new scope) on checkpoints written by tf.train.Saver."""

import glob
import logging
import struct

import numpy as np
import pytest

import shardflow as tf


def _graph():
    g = tf.Graph()
    return g, g.as_default()


# ---- schedules ------------------------------------------------------------------------------


def _values(make, steps):
    """The schedule's value at each step (the step fed through an int64 placeholder)."""
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        lr = make(step)
        with tf.Session() as sess:
            return np.array([sess.run(lr, {step: s}) for s in steps])


STEPS = [0, 1, 3, 7, 10, 15, 20, 31, 45]


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_inverse_time_and_natural_exp_decay_follow_tf_formulas(staircase):
    s = np.array(STEPS, np.float64)
    p = np.floor(s / 10) if staircase else s / 10
    got = _values(lambda g: tf.train.exponential_decay(0.1, g, 10, 0.5, staircase), STEPS)
    np.testing.assert_allclose(got, 0.1 * 0.5 ** p, rtol=1e-5)
    got = _values(lambda g: tf.train.inverse_time_decay(0.1, g, 10, 0.5, staircase), STEPS)
    np.testing.assert_allclose(got, 0.1 / (1 + 0.5 * p), rtol=1e-5)
    got = _values(lambda g: tf.train.natural_exp_decay(0.1, g, 10, 0.5, staircase), STEPS)
    np.testing.assert_allclose(got, 0.1 * np.exp(-0.5 * p), rtol=1e-5)


@pytest.mark.parametrize("cycle", [False, True])
def test_polynomial_decay_with_and_without_cycle(cycle):
    s = np.array(STEPS, np.float64)
    if cycle:
        steps = 10 * np.where(s == 0, 1.0, np.ceil(s / 10))
        p = s / steps
    else:
        p = np.minimum(s, 10) / 10
    want = (0.1 - 0.01) * (1 - p) ** 2 + 0.01
    got = _values(lambda g: tf.train.polynomial_decay(0.1, g, 10, 0.01, power=2.0, cycle=cycle),
                  STEPS)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_piecewise_constant_gives_each_value_exactly_and_keeps_int_values():
    got = _values(lambda g: tf.train.piecewise_constant(g, [5, 10], [0.1, 0.01, 0.001]), STEPS)
    want = [0.1 if s <= 5 else 0.01 if s <= 10 else 0.001 for s in STEPS]
    np.testing.assert_array_equal(got, np.array(want, np.float32))
    ints = _values(lambda g: tf.train.piecewise_constant(g, [3], [7, 9]), [2, 3, 4])
    assert ints.tolist() == [7, 7, 9] and ints.dtype.kind == "i"
    with pytest.raises(ValueError, match="one more value"):
        tf.train.piecewise_constant(tf.constant(1), [1, 2], [0.1, 0.2])


def test_cosine_decay_and_linear_cosine_decay():
    s = np.minimum(np.array(STEPS, np.float64), 20)
    want = 0.1 * ((1 - 0.1) * 0.5 * (1 + np.cos(np.pi * s / 20)) + 0.1)
    got = _values(lambda g: tf.train.cosine_decay(0.1, g, 20, alpha=0.1), STEPS)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    linear = (20 - s) / 20
    cosine = 0.5 * (1 + np.cos(np.pi * 2 * 0.5 * s / 20))
    want = 0.1 * ((0.0 + linear) * cosine + 0.001)
    got = _values(lambda g: tf.train.linear_cosine_decay(0.1, g, 20), STEPS)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def _restarts(step, first, t_mul, m_mul, alpha):
    fraction = step / first
    if t_mul == 1.0:
        i = np.floor(fraction)
        fraction -= i
    else:
        i = np.floor(np.log(1 - fraction * (1 - t_mul)) / np.log(t_mul))
        sum_r = (1 - t_mul ** i) / (1 - t_mul)
        fraction = (fraction - sum_r) / t_mul ** i
    cosine = 0.5 * m_mul ** i * (1 + np.cos(np.pi * fraction))
    return (1 - alpha) * cosine + alpha


@pytest.mark.parametrize("t_mul,m_mul", [(2.0, 0.5), (1.0, 1.0)])
def test_cosine_decay_restarts(t_mul, m_mul):
    want = 0.1 * _restarts(np.array(STEPS, np.float64), 5, t_mul, m_mul, 0.05)
    got = _values(lambda g: tf.train.cosine_decay_restarts(0.1, g, 5, t_mul, m_mul, 0.05),
                  STEPS)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    # Each period starts again from learning_rate * m_mul ** i.
    assert got[STEPS.index(15)] == pytest.approx(0.1 * ((1 - 0.05) * m_mul ** (
        2 if t_mul == 2.0 else 3) + 0.05), rel=1e-4)  # periods [0,5) [5,15) [15,35)


# ---- global step --------------------------------------------------------------------------


def test_global_step_helpers():
    with tf.Graph().as_default() as g:
        assert tf.train.get_global_step() is None
        step = tf.train.create_global_step()
        assert tf.train.get_global_step() is step and tf.train.get_or_create_global_step() is step
        assert step.op.name == "global_step" and step.dtype == tf.int64 and not step.trainable
        with pytest.raises(ValueError):
            tf.train.create_global_step()
        inc = step.assign_add(3)
        with tf.Session() as sess:
            sess.run(step.initializer)
            sess.run(inc)
            assert tf.train.global_step(sess, step) == 3
            assert isinstance(tf.train.global_step(sess, step), int)
            assert tf.train.global_step(sess, "global_step/read:0") == 3
        assert tf.train.get_global_step(g) is step
    with tf.Graph().as_default():
        # TF1 also finds an integer variable named "global_step" outside the collection.
        v = tf.Variable(0, name="global_step", trainable=False, dtype=tf.int64)
        assert tf.train.get_global_step() is v


# ---- hooks --------------------------------------------------------------------------------


def _model():
    """A global step, a loss fed through `x` and a train op stepping it."""
    step = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [], name="x")
    w = tf.Variable(1.0, name="w")
    loss = tf.square(w * x, name="loss")
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
    return step, x, w, loss, train


def test_logging_tensor_hook_logs_every_n_iter_and_at_end(caplog):
    caplog.set_level(logging.INFO, logger="shardflow")
    with tf.Graph().as_default():
        step, x, w, loss, train = _model()
        hook = tf.train.LoggingTensorHook({"loss": loss, "step": step}, every_n_iter=2)
        at_end = tf.train.LoggingTensorHook({"w": w, "step": "global_step/read"}, at_end=True)
        named = tf.train.LoggingTensorHook(["loss"], every_n_iter=3,
                                           formatter=lambda v: "custom %.1f" % v["loss"])
        with tf.train.MonitoredSession(hooks=[hook, named, at_end]) as sess:
            for _ in range(5):
                sess.run(train, {x: 2.0})
    lines = [r.getMessage() for r in caplog.records if r.name == "shardflow"]
    steps = [l for l in lines if l.startswith("loss = ")]
    # Local iterations 0, 2, 4 (the step read beside the update).
    assert len(steps) == 3, lines
    # The step is read beside its update: it may be one ahead.
    read = [int(l.split("step = ")[1].split()[0]) for l in steps]
    assert all(r - i in (0, 1) for r, i in zip(read, (0, 2, 4))), lines
    assert steps[0].startswith("loss = 4.0, ") and "sec)" in steps[1] and "sec)" not in steps[0]
    ends = [l for l in lines if l.startswith("step = ")]
    assert len(ends) == 1 and ends[0].startswith("step = 5, w = 0.") and "sec)" not in ends[0]
    # The loss of local iteration 3: (2 w)**2 with w = 0.92**3 after three updates.
    assert [l for l in lines if l.startswith("custom")] == ["custom 4.0", "custom 2.4"]
    with pytest.raises(ValueError):
        tf.train.LoggingTensorHook([loss], every_n_iter=2, every_n_secs=1)


def test_nan_tensor_hook_raises_or_stops():
    for fail in (True, False):
        with tf.Graph().as_default():
            step, x, w, loss, train = _model()
            hook = tf.train.NanTensorHook(loss, fail_on_nan_loss=fail)
            sess = tf.train.MonitoredTrainingSession(hooks=[hook])
            sess.run(train, {x: 1.0})
            assert not sess.should_stop()
            if fail:
                with pytest.raises(tf.train.NanLossDuringTrainingError,
                                   match="NaN loss during training"):
                    sess.run(train, {x: np.nan})
            else:
                sess.run(train, {x: np.nan})
                assert sess.should_stop()
            sess.close()


def _events(logdir):
    """[(step, [(tag, simple_value)])] of every event with a summary in `logdir`'s files."""
    def varint(data, i):
        shift = result = 0
        while True:
            b = data[i]
            i += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return result, i

    def fields(data):
        out, i = [], 0
        while i < len(data):
            key, i = varint(data, i)
            wire = key & 7
            if wire == 0:
                value, i = varint(data, i)
            elif wire == 1:
                value, i = struct.unpack("<d", data[i:i + 8])[0], i + 8
            elif wire == 5:
                value, i = struct.unpack("<f", data[i:i + 4])[0], i + 4
            else:
                n, i = varint(data, i)
                value, i = data[i:i + n], i + n
            out.append((key >> 3, value))
        return out

    out = []
    for path in sorted(glob.glob(str(logdir / "events.out.tfevents.*"))):
        data, i = open(path, "rb").read(), 0
        while i < len(data):
            (length,) = struct.unpack("<Q", data[i:i + 8])
            event = dict(fields(data[i + 12:i + 12 + length]))
            i += 16 + length
            if 5 in event:
                values = [dict(fields(v)) for n, v in fields(event[5]) if n == 1]
                out.append((event.get(2, 0), [(v[1].decode(), v.get(2)) for v in values]))
    return out


def test_summary_saver_hook_writes_the_summary_every_save_steps(tmp_path):
    with tf.Graph().as_default():
        step, x, w, loss, train = _model()
        summary = tf.summary.scalar("loss", loss)
        hook = tf.train.SummarySaverHook(save_steps=2, output_dir=str(tmp_path),
                                         summary_op=summary)
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for i in range(5):
                sess.run(train, {x: float(i)})
    events = _events(tmp_path)
    # Written at the first step and then every 2 global steps, at the step after the update.
    assert [e[0] for e in events] == [1, 3, 5]
    assert events[0][1] == [("loss_1", 0.0)]     # as TF's summary_scope: op "loss" exists
    assert events[1][1][0][0] == "loss_1" and events[1][1][0][1] == pytest.approx(
        4.0 * 0.98 ** 2, rel=1e-3)  # w after two updates at x=0 and x=1 ... then squared
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1, output_dir=str(tmp_path))


def test_step_counter_hook_logs_and_writes_steps_per_second(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="shardflow")
    with tf.Graph().as_default():
        step, x, w, loss, train = _model()
        hook = tf.train.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path))
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(6):
                sess.run(train, {x: 1.0})
    rates = [e for e in _events(tmp_path) if e[1][0][0] == "global_step/sec"]
    assert [e[0] for e in rates] == [3, 5] and all(e[1][0][1] > 0 for e in rates)
    assert sum(r.getMessage().startswith("global_step/sec: ") for r in caplog.records) == 2


def test_monitored_training_session_writes_summaries_and_step_rate_to_checkpoint_dir(tmp_path):
    with tf.Graph().as_default():
        step, x, w, loss, train = _model()
        tf.summary.scalar("loss", loss)
        with tf.train.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path), save_summaries_steps=2, log_step_count_steps=2,
                hooks=[tf.train.StopAtStepHook(last_step=4)]) as sess:
            while not sess.should_stop():
                sess.run(train, {x: 1.0})
    tags = {tag for _, values in _events(tmp_path) for tag, _ in values}
    assert tags == {"loss_1", "global_step/sec"}     # TF's tag: the op "loss" exists
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-4")


def test_final_ops_feed_fn_and_global_step_waiter_hooks():
    with tf.Graph().as_default():
        step, x, w, loss, train = _model()
        final = tf.train.FinalOpsHook([w, step])
        feeds = iter([1.0, 2.0, 3.0])
        feed = tf.train.FeedFnHook(lambda: {x: next(feeds)})
        waiter = tf.train.GlobalStepWaiterHook(0)
        with tf.train.MonitoredSession(hooks=[final, feed, waiter]) as sess:
            for _ in range(3):
                sess.run(train)
        w_end, step_end = final.final_ops_values
        want = 1.0
        for v in (1.0, 2.0, 3.0):
            want -= 0.01 * 2 * want * v * v
        assert step_end == 3 and w_end == pytest.approx(want, rel=1e-5)


def test_second_or_step_timer():
    timer = tf.train.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(0)
    assert timer.update_last_triggered_step(0) == (None, None)
    assert not timer.should_trigger_for_step(2) and timer.should_trigger_for_step(3)
    elapsed, steps = timer.update_last_triggered_step(3)
    assert steps == 3 and elapsed >= 0 and timer.last_triggered_step() == 3
    with pytest.raises(ValueError):
        tf.train.SecondOrStepTimer()


# ---- sessions -----------------------------------------------------------------------------


def test_scaffold_init_fn_then_restore_from_checkpoint_dir(tmp_path):
    with tf.Graph().as_default():
        step, x, w, loss, train = _model()
        calls = []

        def init_fn(scaffold, sess):
            calls.append(scaffold)
            sess.run(w.assign(5.0))
        scaffold = tf.train.Scaffold(init_fn=init_fn)
        creator = tf.train.ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=str(tmp_path))
        with tf.train.MonitoredSession(session_creator=creator) as sess:
            assert calls == [scaffold] and sess.run(w) == 5.0
            sess.run(train, {x: 1.0})
            scaffold.saver.save(sess._tf_sess(), str(tmp_path / "model.ckpt"), global_step=step)
        assert scaffold.finalized and scaffold.summary_op is None
        # A checkpoint now: restored, and init_fn is not called again.
        with tf.train.SingularMonitoredSession(
                scaffold=tf.train.Scaffold(init_fn=init_fn),
                checkpoint_dir=str(tmp_path)) as sess:
            assert len(calls) == 1 and sess.run(step) == 1
            assert sess.run(w) == pytest.approx(5.0 - 0.01 * 2 * 5.0)
            raw = sess.raw_session()
            assert isinstance(raw, tf.Session) and raw.run(step) == 1


def test_monitored_session_stops_runs_step_fn_and_ends_quietly_on_out_of_range():
    with tf.Graph().as_default():
        step, x, w, loss, train = _model()
        ended = []

        class EndHook(tf.train.SessionRunHook):
            def end(self, session):
                ended.append(int(session.run(step)))
        with tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(num_steps=3),
                                              EndHook()]) as sess:
            n = 0
            while not sess.should_stop():
                sess.run(train, {x: 1.0})
                n += 1
        assert n == 3 and ended == [3] and sess.should_stop()
        with tf.train.MonitoredSession() as sess:
            got = sess.run_step_fn(lambda ctx: ctx.run_with_hooks(train, {x: 1.0}) or
                                   ctx.session.run(step))
            assert got == 1 and not sess.should_stop()  # a new session: initialised again
            assert sess.run_step_fn(lambda ctx: ctx.request_stop()) is None
            assert sess.should_stop()
        with tf.train.MonitoredSession(hooks=[EndHook()]) as sess:
            raise tf.errors.OutOfRangeError(None, None, "end of input")
        assert ended == [3, 0]


def test_monitored_training_session_uses_the_scaffold():
    with tf.Graph().as_default():
        step, x, w, loss, train = _model()
        scaffold = tf.train.Scaffold(init_fn=lambda scaffold, sess: sess.run(w.assign(2.5)))
        with tf.train.MonitoredTrainingSession(scaffold=scaffold) as sess:
            assert sess.run(w) == 2.5
        # A worker whose variables nobody initialises waits, then names them.
        with pytest.raises(tf.errors.DeadlineExceededError, match="w"):
            tf.train.MonitoredTrainingSession(is_chief=False, max_wait_secs=0.2)
        creator = tf.train.WorkerSessionCreator(max_wait_secs=0.1)
        with pytest.raises(tf.errors.DeadlineExceededError, match="global_step"):
            creator.create_session()


# ---- checkpoints --------------------------------------------------------------------------


def _write_checkpoint(directory):
    """A checkpoint with old/w (2x3), old/b (3) and other/v, written by tf.train.Saver."""
    with tf.Graph().as_default():
        with tf.variable_scope("old"):
            w = tf.get_variable("w", [2, 3], initializer=tf.constant_initializer(
                np.arange(6, dtype=np.float32).reshape(2, 3)))
            b = tf.get_variable("b", [3], initializer=tf.constant_initializer([7, 8, 9]))
        tf.Variable(42, name="other/v", dtype=tf.int64)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(directory / "model.ckpt"), global_step=7)
    del w, b
    return path


def test_list_and_load_variables_and_the_reader(tmp_path):
    path = _write_checkpoint(tmp_path)
    assert tf.train.checkpoint_exists(path) and not tf.train.checkpoint_exists(path + "x")
    for where in (str(tmp_path), path):
        assert tf.train.list_variables(where) == [("old/b", [3]), ("old/w", [2, 3]),
                                                  ("other/v", [])]
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path), "old/w:0"),
                                  np.arange(6).reshape(2, 3))
    reader = tf.train.NewCheckpointReader(path)
    assert reader.has_tensor("old/b") and not reader.has_tensor("old/c")
    assert reader.get_variable_to_shape_map() == {"old/b": [3], "old/w": [2, 3], "other/v": []}
    assert reader.get_variable_to_dtype_map()["other/v"] == tf.int64
    assert reader.get_tensor("other/v") == 42
    with pytest.raises(tf.errors.NotFoundError, match="old/c"):
        reader.get_tensor("old/c")
    assert tf.train.load_checkpoint(str(tmp_path)).get_tensor("old/b").tolist() == [7, 8, 9]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == path and state.all_model_checkpoint_paths == [path]
    assert tf.train.get_checkpoint_state(str(tmp_path / "none")) is None
    with pytest.raises(tf.errors.NotFoundError):
        tf.train.list_variables(str(tmp_path / "none"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="Couldn't find"):
        tf.train.list_variables(str(tmp_path / "empty"))


def _new_model():
    with tf.variable_scope("new"):
        w = tf.get_variable("w", shape=[2, 3], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", shape=[3], initializer=tf.zeros_initializer())
    v = tf.Variable(0, name="v", dtype=tf.int64)
    keep = tf.Variable(np.float32(-1.0), name="keep")
    return w, b, v, keep


def test_init_from_checkpoint_loads_values_under_a_new_scope(tmp_path):
    _write_checkpoint(tmp_path)
    with tf.Graph().as_default():
        w, b, v, keep = _new_model()
        tf.train.init_from_checkpoint(str(tmp_path), {"old/": "new/", "other/v": "v"})
        with tf.Session() as sess:
            sess.run(tf.variables_initializer(tf.global_variables()))
            np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(2, 3))
            assert sess.run(b).tolist() == [7, 8, 9] and sess.run(v) == 42
            assert sess.run(keep) == -1.0
        # The scaffold's default init op (MonitoredSession) runs them too.
        with tf.train.MonitoredSession() as sess:
            assert sess.run(b).tolist() == [7, 8, 9] and sess.run(v) == 42


def test_init_from_checkpoint_one_variable_and_errors(tmp_path):
    path = _write_checkpoint(tmp_path)
    with tf.Graph().as_default():
        w, b, v, keep = _new_model()
        tf.train.init_from_checkpoint(path, {"old/b": b})
        with tf.Session() as sess:
            sess.run(b.initializer)
            assert sess.run(b).tolist() == [7, 8, 9]
        with pytest.raises(ValueError, match="old/missing is not found"):
            tf.train.init_from_checkpoint(path, {"old/missing": "new/w"})
        with pytest.raises(ValueError, match="Shape of variable new/b"):
            tf.train.init_from_checkpoint(path, {"old/w": "new/b"})
        with pytest.raises(ValueError, match="scope only"):
            tf.train.init_from_checkpoint(path, {"old/w": "new/"})


def test_init_from_checkpoint_through_global_variables_initializer(tmp_path):
    _write_checkpoint(tmp_path)
    with tf.Graph().as_default():
        w, b, v, keep = _new_model()
        tf.train.init_from_checkpoint(str(tmp_path), {"old/": "new/"})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(b).tolist() == [7, 8, 9]


def test_a_chief_restores_before_it_initialises_so_a_failed_restore_initialises_nothing(tmp_path):
    # Regression: the chief ran the init op before restoring; when the restore then failed
    # (the model gained a variable), the variables on the ps already had values and the
    # non-chief workers, waiting for that, trained from scratch and exited 0.
    server = tf.train.Server.create_local_server()
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        with tf.Session() as sess:   # in process: the server's variables stay without values
            sess.run(w.initializer)
            path = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    with tf.Graph().as_default():
        tf.Variable([0.0, 0.0], name="w")
        tf.Variable(5.0, name="extra")
        creator = tf.train.ChiefSessionCreator(master=server.target,
                                               checkpoint_filename_with_path=path)
        with pytest.raises(tf.errors.NotFoundError, match="extra"):
            creator.create_session()
        with tf.Session(server.target) as sess:
            left = sorted(n.decode() for n in sess.run(tf.report_uninitialized_variables()))
        assert left == ["extra", "w"]
    with tf.Graph().as_default():
        w = tf.Variable([0.0, 0.0], name="w")
        slot = tf.Variable(7.0, name="made_after")   # not in the checkpoint: initialised
        saver = tf.train.Saver([w])
        scaffold = tf.train.Scaffold(saver=saver)
        sess = tf.train.ChiefSessionCreator(scaffold=scaffold, master=server.target,
                                            checkpoint_filename_with_path=path).create_session()
        np.testing.assert_array_equal(sess.run(w), [1.0, 2.0])
        assert sess.run(slot) == 7.0
        sess.close()


def test_a_restarted_job_keeps_max_to_keep_checkpoints_on_disk(tmp_path):
    # Regression: a restarted chief's Saver did not take over the checkpoints listed beside the
    # one it restored, so each restart left the earlier run's files behind for ever.
    import glob
    import os
    d = str(tmp_path)
    for last in (60, 120):
        with tf.Graph().as_default():
            step = tf.train.get_or_create_global_step()
            w = tf.Variable(0.0)
            train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.square(w - 1),
                                                                    global_step=step)
            with tf.train.MonitoredTrainingSession(
                    checkpoint_dir=d, save_checkpoint_steps=10, save_summaries_steps=None,
                    hooks=[tf.train.StopAtStepHook(last_step=last)]) as sess:
                while not sess.should_stop():
                    sess.run(train)
    on_disk = sorted(int(f.rsplit("-", 1)[1].split(".")[0])
                     for f in glob.glob(d + "/model.ckpt-*") if not f.endswith(".meta"))
    listed = [os.path.basename(p)
              for p in tf.train.get_checkpoint_state(d).all_model_checkpoint_paths]
    assert on_disk == [80, 90, 100, 110, 120]
    assert listed == ["model.ckpt-%d" % n for n in on_disk]
