"""TF1 summaries read back (image, scalar via summary_iterator), Supervisor, SessionManager,
ProximalAdagrad / AdagradDA against NumPy, checkpoint-state helpers, noisy_linear_cosine_decay,
ProfilerHook."""

import glob
import os
import struct

import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def _events(logdir):
    out = []
    for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        out.extend(tf.train.summary_iterator(path))
    return out


def test_image_and_scalar_summaries_round_trip(tmp_path):
    images = tf.placeholder(tf.float32, [None, 4, 5, 3])
    tf.summary.image("pics", images, max_outputs=2)
    tf.summary.scalar("loss", tf.reduce_mean(images))
    merged = tf.summary.merge_all()
    data = np.random.RandomState(0).rand(3, 4, 5, 3).astype(np.float32)
    with tf.Session() as sess:
        value = sess.run(merged, {images: data})
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_summary(value, global_step=7)
    writer.add_summary(tf.summary.Summary(value=[tf.summary.Summary.Value(
        tag="acc", simple_value=0.25)]), global_step=8)
    writer.close()
    events = _events(str(tmp_path))
    assert events[0].file_version == "brain.Event:2"
    first = events[1]
    assert first.step == 7 and first.wall_time > 0
    tags = [v.tag for v in first.summary.value]
    assert tags == ["pics/image/0", "pics/image/1", "loss"]
    img = first.summary.value[0].image
    assert (img.width, img.height, img.colorspace) == (5, 4, 3)
    png = img.encoded_image_string
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (5, 4)  # IHDR width, height
    assert first.summary.value[2].simple_value == pytest.approx(data.mean(), rel=1e-5)
    assert events[2].step == 8 and events[2].summary.value[0].simple_value == 0.25
    # The Summary class reads what summary.py writes.
    parsed = tf.summary.Summary()
    parsed.ParseFromString(value)
    assert len(parsed.value) == 3


def test_uint8_image_pixels_and_text_audio(tmp_path):
    pixels = np.arange(2 * 3 * 1, dtype=np.uint8).reshape(1, 2, 3, 1) * 40
    tf.summary.image("gray", tf.constant(pixels))
    tf.summary.text("note", tf.constant("hello"))
    tf.summary.audio("wave", tf.constant(np.zeros((1, 8), np.float32)), sample_rate=8000)
    with tf.Session() as sess:
        summary = tf.summary.Summary.FromString(sess.run(tf.summary.merge_all()))
    import zlib
    png = summary.value[0].image.encoded_image_string
    idat = png.index(b"IDAT")
    length = struct.unpack(">I", png[idat - 4:idat])[0]
    rows = zlib.decompress(png[idat + 4:idat + 4 + length])
    assert rows == b"\x00" + bytes(pixels[0, 0, :, 0]) + b"\x00" + bytes(pixels[0, 1, :, 0])
    assert summary.value[0].tag == "gray/image/0"   # max_outputs 3: numbered, as TF
    text = summary.value[1]
    assert text.metadata.plugin_data.plugin_name == "text"
    assert list(text.tensor.string_val) == [b"hello"]
    audio = summary.value[2].audio
    assert audio.encoded_audio_string[:4] == b"RIFF" and audio.length_frames == 8
    assert audio.content_type == "audio/wav" and audio.sample_rate == 8000


def _tiny_model():
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(np.zeros(2, np.float32), name="w")
    loss = tf.reduce_sum(tf.square(w - tf.constant([1.0, 2.0])))
    tf.summary.scalar("loss", loss)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return step, w, train


def test_supervisor_trains_checkpoints_and_resumes(tmp_path):
    logdir = str(tmp_path)
    step, w, train = _tiny_model()
    sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0.2, save_summaries_secs=0.2)
    with sv.managed_session() as sess:
        for _ in range(5):
            sess.run(train)
        for _ in range(50):   # the checkpoint thread saves within 0.2 s
            if tf.train.latest_checkpoint(logdir):
                break
            import time
            time.sleep(0.05)
        sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
        trained = sess.run(w)
        assert tf.train.global_step(sess, step) == 5
    assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-5")
    assert os.path.exists(os.path.join(logdir, "graph.pbtxt"))   # the chief writes it, as TF1
    assert sv.should_stop()
    events = _events(logdir)
    logs = [e.session_log.status for e in events if e.HasField("session_log")]
    assert logs[0] == tf.summary.SessionLog.START and logs[-1] == tf.summary.SessionLog.STOP

    with tf.Graph().as_default():
        step, w, train = _tiny_model()
        sv = tf.train.Supervisor(logdir=logdir, save_model_secs=None, summary_op=None)
        calls = []

        def step_fn(sess):
            calls.append(sess.run(train))
            if len(calls) == 2:
                sv.request_stop()
        with sv.managed_session() as sess:
            assert tf.train.global_step(sess, step) == 5
            np.testing.assert_allclose(sess.run(w), trained)
        tf.train.basic_train_loop(sv, step_fn)
        assert len(calls) == 2


def test_supervisor_reraises_errors_from_the_block(tmp_path):
    _tiny_model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=None)
    with pytest.raises(ValueError, match="boom"):
        with sv.managed_session():
            raise ValueError("boom")


def test_session_manager_restores_from_checkpoint(tmp_path):
    w = tf.Variable(np.array([1.0, 2.0], np.float32), name="w")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(w.assign([5.0, 6.0]))
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=3)
    init = tf.global_variables_initializer()
    sm = tf.train.SessionManager()
    sess = sm.prepare_session("", init_op=init, saver=saver, checkpoint_dir=str(tmp_path))
    np.testing.assert_allclose(sess.run(w), [5.0, 6.0])
    sess.close()
    empty = str(tmp_path / "empty")
    sess = sm.prepare_session("", init_op=init, saver=saver, checkpoint_dir=empty)
    np.testing.assert_allclose(sess.run(w), [1.0, 2.0])
    sess.close()
    sess, ok = sm.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert ok
    np.testing.assert_allclose(sess.run(w), [5.0, 6.0])
    sess.close()
    sess, ok = sm.recover_session("", saver=saver, checkpoint_dir=empty)
    assert not ok
    sess.close()
    with pytest.raises(RuntimeError, match="not initialized"):
        sm.prepare_session("", init_op=None, saver=saver, checkpoint_dir=empty)


def _two_steps(opt, grads_of, w0):
    w = tf.Variable(w0, name="w")
    target = tf.constant(np.array([0.3, -2.0, 0.05], np.float32))
    loss = tf.reduce_sum(tf.square(w - target))
    step = tf.train.get_or_create_global_step()
    train = opt(step).minimize(loss, global_step=step)
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(2):
            sess.run(train)
            out.append(sess.run(w))
    return out, np.array([0.3, -2.0, 0.05], np.float32)


@pytest.mark.parametrize("l1,l2", [(0.0, 0.0), (0.05, 0.1)])
def test_proximal_adagrad_matches_numpy(l1, l2):
    w0 = np.array([1.0, -1.0, 0.0], np.float32)
    got, target = _two_steps(lambda _: tf.train.ProximalAdagradOptimizer(
        0.5, initial_accumulator_value=0.1, l1_regularization_strength=l1,
        l2_regularization_strength=l2), None, w0)
    var, accum = w0.astype(np.float64), np.full(3, 0.1)
    for i in range(2):
        grad = 2 * (var - target)
        accum = accum + grad * grad
        lr = 0.5 / np.sqrt(accum)
        prox = var - lr * grad
        if l1 > 0:
            prox = np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0)
        var = prox / (1 + lr * l2)
        np.testing.assert_allclose(got[i], var, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("l1,l2", [(0.0, 0.0), (0.1, 0.2)])
def test_adagrad_da_matches_numpy(l1, l2):
    w0 = np.array([1.0, -1.0, 0.0], np.float32)
    got, target = _two_steps(lambda step: tf.train.AdagradDAOptimizer(
        0.5, step, initial_gradient_squared_accumulator_value=0.1,
        l1_regularization_strength=l1, l2_regularization_strength=l2), None, w0)
    var, g_acc, gg_acc = w0.astype(np.float64), np.zeros(3), np.full(3, 0.1)
    for i in range(2):
        t = i + 1
        grad = 2 * (var - target)
        g_acc, gg_acc = g_acc + grad, gg_acc + grad * grad
        num = g_acc if l1 == 0 else np.sign(g_acc) * np.maximum(np.abs(g_acc) - l1 * t, 0)
        var = -0.5 * num / (l2 * t * 0.5 + np.sqrt(gg_acc))
        np.testing.assert_allclose(got[i], var, rtol=1e-5, atol=1e-6)


def test_optimizer_slot_names():
    w = tf.Variable(np.ones(2, np.float32), name="v")
    step = tf.train.get_or_create_global_step()
    opt = tf.train.AdagradDAOptimizer(0.1, step)
    opt.minimize(tf.reduce_sum(w * w))
    assert opt.get_slot(w, "gradient_accumulator").op.name == "v/AdagradDA"
    assert opt.get_slot(w, "gradient_squared_accumulator").op.name == "v/AdagradDA_1"
    opt = tf.train.ProximalAdagradOptimizer(0.1)
    opt.minimize(tf.reduce_sum(w * w))
    assert opt.get_slot(w, "accumulator").op.name == "v/ProximalAdagrad"


def test_checkpoint_state_helpers(tmp_path):
    d = str(tmp_path)
    for name in ("model.ckpt-1", "model.ckpt-2", "model.ckpt-2.meta"):
        (tmp_path / name).write_bytes(b"x")
    paths = [os.path.join(d, "model.ckpt-1"), os.path.join(d, "model.ckpt-2")]
    proto = tf.train.generate_checkpoint_state_proto(d, paths[1], paths[:1])
    assert proto.all_model_checkpoint_paths == paths
    rel = tf.train.generate_checkpoint_state_proto("rel", "rel/model.ckpt-3")
    assert rel.model_checkpoint_path == "model.ckpt-3"
    tf.train.update_checkpoint_state(d, paths[1], paths)
    state = tf.train.get_checkpoint_state(d)
    assert state.model_checkpoint_path == paths[1]
    assert state.all_model_checkpoint_paths == paths
    assert tf.train.latest_checkpoint(d) == paths[1]
    mtimes = tf.train.get_checkpoint_mtimes(paths + [os.path.join(d, "missing")])
    assert len(mtimes) == 2 and all(m > 0 for m in mtimes)
    tf.train.remove_checkpoint(paths[1])
    assert sorted(os.listdir(d)) == ["checkpoint", "model.ckpt-1"]


def test_assert_global_step_and_noisy_decay():
    step = tf.train.get_or_create_global_step()
    tf.train.assert_global_step(step)
    with pytest.raises(TypeError):
        tf.train.assert_global_step(tf.constant(1.0))
    tf.set_random_seed(1)
    quiet = tf.train.noisy_linear_cosine_decay(0.1, step, 100, initial_variance=0.0)
    plain = tf.train.linear_cosine_decay(0.1, step, 100)
    noisy = tf.train.noisy_linear_cosine_decay(0.1, step, 100, initial_variance=1.0)
    with tf.Session() as sess:
        sess.run(step.initializer)
        sess.run(step.assign(30))
        a, b, c1, c2 = sess.run([quiet, plain, noisy, noisy])
    assert a == pytest.approx(b, rel=1e-6)
    assert np.isfinite(c1) and c1 != pytest.approx(b)


def test_profiler_hook_writes_chrome_trace(tmp_path):
    step, _, train = _tiny_model()
    hook = tf.train.ProfilerHook(save_steps=2, output_dir=str(tmp_path))
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        for _ in range(3):
            sess.run(train)
    traces = sorted(os.listdir(str(tmp_path)))
    assert len(traces) == 2 and all(t.startswith("timeline-") for t in traces)
    import json
    assert "traceEvents" in json.loads((tmp_path / traces[0]).read_text())


def test_file_writer_cache():
    tf.summary.FileWriterCache.clear()
    import tempfile
    d = tempfile.mkdtemp()
    a = tf.summary.FileWriterCache.get(d)
    assert tf.summary.FileWriterCache.get(d) is a
    tf.summary.FileWriterCache.clear()
    assert a._closed and tf.summary.FileWriterCache.get(d) is not a
    tf.summary.FileWriterCache.clear()


def test_decay_schedules_take_a_float64_rate_and_tensor_decay_steps():
    # Regression: a float64 learning rate failed "insert a Cast" in every *_decay schedule and
    # a tensor decay_steps raised "float() argument must be ... not 'Tensor'".
    step = tf.constant(5)
    rate = tf.constant(0.1, tf.float64)
    steps = tf.placeholder(tf.int32, [])
    schedules = [tf.train.exponential_decay(rate, step, 10, 0.5),
                 tf.train.polynomial_decay(rate, step, steps, 0.01),
                 tf.train.cosine_decay(rate, step, steps),
                 tf.train.exponential_decay(0.1, step, steps, 0.5, staircase=True)]
    assert [s.dtype for s in schedules[:3]] == [tf.float64] * 3
    with tf.Session() as sess:
        got = sess.run(schedules, {steps: 10})
    np.testing.assert_allclose(got, [0.1 * 0.5 ** 0.5, (0.1 - 0.01) * 0.5 + 0.01,
                                     0.1 * 0.5 * (1 + np.cos(np.pi * 0.5)), 0.1], rtol=1e-6)
