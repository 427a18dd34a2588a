"""TF1's utility APIs around a model, as TF 1.15 behaves: RunMetadata.step_stats and
timeline.Timeline, tf.gfile, the run-time asserts and tf.Print, the session hooks and
tf.metrics' threshold metrics and AUC summations against NumPy."""
import json
import os

import numpy as np
import pytest

import shardflow as tf
from shardflow.python.client import timeline


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


def _traced_step():
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    w = tf.constant(np.ones((3, 4), np.float32), name="w")
    y = tf.nn.relu(tf.matmul(x, w, name="mm"), name="act")
    md = tf.RunMetadata()
    with tf.Session() as sess:
        out = sess.run(y, {x: np.ones((2, 3), np.float32)},
                       options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                       run_metadata=md)
    np.testing.assert_allclose(out, np.full((2, 4), 3.0))
    return md


def test_step_stats_have_tf1_fields():
    md = _traced_step()
    stats = md.step_stats
    assert [d.device for d in stats.dev_stats] == md.devices
    nodes = {ns.node_name: ns for d in stats.dev_stats for ns in d.node_stats}
    engine = {n["node"]: n for n in md.node_stats()}
    assert set(nodes) == set(engine)
    mm = nodes["mm"]
    assert mm.all_start_micros == engine["mm"]["start_micros"]
    assert mm.all_end_rel_micros == engine["mm"]["end_micros"] - engine["mm"]["start_micros"]
    assert mm.op_end_rel_micros == mm.all_end_rel_micros and mm.op_start_rel_micros == 0
    assert mm.all_start_nanos == 1000 * mm.all_start_micros
    assert mm.timeline_label.startswith("mm = MatMul(")
    assert "w" in mm.timeline_label
    assert nodes["act"].timeline_label == "act = Relu(mm:0)"
    out = mm.output[0].tensor_description
    assert [d.size for d in out.shape.dim] == [2, 4] and out.dtype == 1   # DT_FLOAT
    assert out.allocation_description.requested_bytes == 2 * 4 * 4
    # A TF-format message: it serializes and parses back.
    again = type(stats).FromString(stats.SerializeToString())
    assert again.dev_stats[0].node_stats[0].node_name == stats.dev_stats[0].node_stats[0].node_name
    assert tf.RunMetadata().step_stats.dev_stats == type(stats)().dev_stats   # untraced: empty


def test_timeline_gives_chrome_trace_json():
    md = _traced_step()
    assert tf.python.client.timeline is timeline
    trace = json.loads(timeline.Timeline(md.step_stats).generate_chrome_trace_format())
    events = trace["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {d + " Compute" for d in md.devices}
    ops = {e["args"]["name"]: e for e in events if e["ph"] == "X"}
    assert ops["mm"]["name"] == "MatMul" and ops["act"]["args"]["input0"] == "mm:0"
    mm = [ns for d in md.step_stats.dev_stats for ns in d.node_stats if ns.node_name == "mm"][0]
    assert (ops["mm"]["ts"], ops["mm"]["dur"]) == (mm.all_start_micros, mm.all_end_rel_micros)
    # mm -> act is drawn as a flow: a start and a step with one id.
    flows = [e for e in events if e.get("cat") == "DataFlow" and e["name"] == "mm:0"]
    assert sorted(e["ph"] for e in flows) == ["s", "t"] and flows[0]["id"] == flows[1]["id"]
    assert flows[0]["ts"] <= flows[1]["ts"]
    bare = json.loads(timeline.Timeline(md.step_stats).generate_chrome_trace_format(
        show_dataflow=False))
    assert not [e for e in bare["traceEvents"] if e.get("cat") == "DataFlow"]
    with pytest.raises(TypeError, match="StepStats"):
        timeline.Timeline(md)


def test_gfile_file_and_folder_operations(tmp_path):
    gfile = tf.gfile
    assert tf.io.gfile is gfile
    root = str(tmp_path / "a" / "b")
    gfile.MakeDirs(root)
    gfile.MakeDirs(root)                                     # exists: nothing
    assert gfile.IsDirectory(root) and tf.io.gfile.isdir(root)
    path = os.path.join(root, "f.txt")
    with gfile.GFile(path, "w") as f:
        f.write("hello\nworld\n")
    with gfile.GFile(path) as f:
        assert f.read() == "hello\nworld\n" and f.size() == 12
    with gfile.Open(path, "rb") as f:
        assert f.readlines() == [b"hello\n", b"world\n"]
    gfile.Copy(path, os.path.join(root, "g.txt"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.Copy(path, os.path.join(root, "g.txt"))
    gfile.Copy(path, os.path.join(root, "g.txt"), overwrite=True)
    assert gfile.ListDirectory(root) == ["f.txt", "g.txt"]
    assert gfile.Glob(os.path.join(root, "*.txt")) == [path, os.path.join(root, "g.txt")]
    st = gfile.Stat(path)
    assert st.length == 12 and not st.is_directory and st.mtime_nsec > 0
    gfile.MkDir(os.path.join(root, "sub"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.MkDir(os.path.join(root, "sub"))
    walked = list(gfile.Walk(str(tmp_path / "a")))
    assert walked[0] == (str(tmp_path / "a"), ["b"], [])
    assert walked[1] == (root, ["sub"], ["f.txt", "g.txt"])
    assert list(tf.io.gfile.walk(root, topdown=False))[-1][0] == root
    gfile.Rename(os.path.join(root, "g.txt"), os.path.join(root, "h.txt"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.Rename(path, os.path.join(root, "h.txt"))
    gfile.Remove(path)
    assert not gfile.Exists(path) and tf.io.gfile.exists(os.path.join(root, "h.txt"))
    # Missing paths raise TF's NotFoundError, which is also Python's FileNotFoundError.
    for call in (lambda: gfile.Remove(path), lambda: gfile.Stat(path),
                 lambda: gfile.GFile(path), lambda: gfile.ListDirectory(path),
                 lambda: gfile.DeleteRecursively(path)):
        with pytest.raises(tf.errors.NotFoundError):
            call()
        with pytest.raises(FileNotFoundError):
            call()
    gfile.DeleteRecursively(str(tmp_path / "a"))
    assert not gfile.Exists(str(tmp_path / "a"))
    assert list(gfile.Walk(str(tmp_path / "a"))) == []
    with pytest.raises(ValueError, match="not a local path"):
        gfile.Exists("gs://bucket/x")


def test_static_asserts_and_predicates():
    x = tf.placeholder(tf.float32, [None])
    with pytest.raises(TypeError, match="int32"):
        tf.assert_type(x, tf.int32)
    assert tf.assert_type(x, tf.float32).type == "NoOp"
    with pytest.raises(TypeError, match="integer"):
        tf.assert_integer(x)
    assert tf.assert_integer(tf.constant([1])).type == "NoOp"
    c = tf.constant(2.0)
    assert tf.assert_scalar(c) is c
    with pytest.raises(ValueError, match="scalar"):
        tf.assert_scalar(x)
    with pytest.raises(ValueError, match="at least 2"):
        tf.assert_rank_at_least(x, 2)
    with pytest.raises(ValueError, match=r"in \[0, 2\]"):
        tf.assert_rank_in(x, [0, 2])
    tf.assert_proper_iterable([x, x])
    for bad in (x, np.zeros(2), "ab", 3):
        with pytest.raises(TypeError, match="proper"):
            tf.assert_proper_iterable(bad)
    assert tf.is_numeric_tensor(x) and not tf.is_numeric_tensor(tf.constant(True))
    assert not tf.is_numeric_tensor(np.zeros(2))
    assert tf.assert_same_float_dtype([x, x]) == tf.float32
    with pytest.raises(ValueError):
        tf.assert_same_float_dtype([x, tf.constant(1.0, tf.float64)])
    for name in ("assert_near", "assert_rank_at_least", "assert_type", "assert_integer",
                 "assert_scalar", "is_strictly_increasing", "is_non_decreasing",
                 "is_numeric_tensor", "assert_equal", "assert_positive", "check_numerics"):
        assert callable(getattr(tf.debugging, name)), name


def test_run_time_asserts_fail_the_step():
    x = tf.placeholder(tf.float32, [None])
    u = tf.placeholder(tf.float32)
    near = tf.assert_near(x, x + 1e-7)
    far = tf.debugging.assert_near(x, x + 1e-3, message="too far")
    loose = tf.assert_near(x, x + 1e-3, atol=2e-3)
    at_least = tf.assert_rank_at_least(u, 2)
    rank_in = tf.debugging.assert_rank_in(u, [0, 2])
    checks = [tf.is_non_decreasing(x), tf.is_strictly_increasing(x)]
    with tf.Session() as sess:
        sess.run([near, loose], {x: [1.0, 100.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="too far"):
            sess.run(far, {x: [1.0, 100.0]})
        sess.run([at_least, rank_in], {u: np.zeros((2, 2))})
        with pytest.raises(tf.errors.InvalidArgumentError, match="at least 2"):
            sess.run(at_least, {u: np.zeros(3)})
        sess.run(rank_in, {u: 1.0})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"rank in \[0, 2\]"):
            sess.run(rank_in, {u: np.zeros(3)})
        for value, want in (([], [True, True]), ([5.0], [True, True]),
                            ([1.0, 2.0, 2.0], [True, False]), ([1.0, 2.0, 3.0], [True, True]),
                            ([2.0, 1.0], [False, False])):
            assert [bool(v) for v in sess.run(checks, {x: value})] == want, value
        for name in ("assert_equal", "assert_less", "assert_greater_equal"):
            with pytest.raises(tf.errors.InvalidArgumentError, match="said " + name):
                sess.run(getattr(tf.debugging, name)(x, 2.0, message="said " + name),
                         {x: [1.0, 3.0]})


def test_reduce_all_and_any_over_no_elements():
    b = tf.placeholder(tf.bool, [None, None])
    out = [tf.reduce_all(b), tf.reduce_any(b), tf.reduce_all(b, axis=1),
           tf.reduce_any(b, axis=0, keepdims=True)]
    with tf.Session() as sess:
        for v in (np.zeros((0, 3), bool), np.zeros((2, 0), bool),
                  np.array([[True, False], [True, True]])):
            got = sess.run(out, {b: v})
            want = [v.all(), v.any(), v.all(axis=1), v.any(axis=0, keepdims=True)]
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)


def test_print_and_check_numerics(capfd):
    x = tf.placeholder(tf.float32, [None])
    y = tf.Print(x, [x, tf.shape(x)], "x is: ") * 2.0
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: [1.0, 2.0]}), [2.0, 4.0])
        assert "x is: [1 2][2]" in capfd.readouterr().err
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad x"):
            sess.run(tf.check_numerics(x, "bad x"), {x: [1.0, np.nan]})
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.log(x)
        check = tf.add_check_numerics_ops()
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run([y, check], {x: [1.0]})[0], [0.0])
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run([y, check], {x: [-1.0]})


def test_stop_at_step_and_checkpoint_saver_hooks(tmp_path):
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(0.0, name="w")
    train = tf.group(w.assign_add(1.0), step.assign_add(1))
    saved = []

    class Listener(tf.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            saved.append(global_step_value)

    saver_hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=2,
                                              listeners=[Listener()])
    with tf.train.MonitoredTrainingSession(
            hooks=[tf.train.StopAtStepHook(last_step=5), saver_hook]) as sess:
        runs = 0
        while not sess.should_stop():
            sess.run(train)
            runs += 1
    assert runs == 5
    assert saved[0] == 0 and saved[-1] == 5 and 2 in saved and 4 in saved
    ckpt = tf.train.latest_checkpoint(str(tmp_path))
    assert ckpt.endswith("model.ckpt-5")
    assert tf.train.load_variable(ckpt, "w") == 5.0


def _tf1_auc(labels, scores, num_thresholds, curve, method):
    """TF 1.15's metrics_impl.auc in NumPy."""
    eps = 1e-7
    th = np.array([-eps] + [(i + 1) / (num_thresholds - 1.0)
                            for i in range(num_thresholds - 2)] + [1 + eps], np.float32)
    above = scores[:, None] > th[None, :]
    pos = labels[:, None].astype(bool)
    tp = np.sum(above & pos, 0).astype(np.float64)
    fp = np.sum(above & ~pos, 0).astype(np.float64)
    fn = np.sum(~above & pos, 0).astype(np.float64)
    tn = np.sum(~above & ~pos, 0).astype(np.float64)
    n = num_thresholds
    if curve == "PR" and method == "careful_interpolation":
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = np.maximum(p[:-1] - p[1:], 0)
        slope = np.divide(dtp, dp, out=np.zeros_like(dtp), where=dp != 0)
        intercept = tp[1:] - slope * p[1:]
        both = (p[:-1] > 0) & (p[1:] > 0)
        ratio = np.where(both, p[:-1] / np.where(both, p[1:], 1), 1.0)
        den = np.maximum(tp[1:] + fn[1:], 0)
        num = slope * (dtp + intercept * np.log(ratio))
        return np.sum(np.divide(num, den, out=np.zeros_like(num), where=den != 0))
    rec = (tp + eps) / (tp + fn + eps)
    if curve == "ROC":
        x, y = fp / (fp + tn + eps), rec
    else:
        x, y = rec, (tp + eps) / (tp + fp + eps)
    height = {"trapezoidal": (y[:n - 1] + y[1:]) / 2, "careful_interpolation":
              (y[:n - 1] + y[1:]) / 2, "minoring": np.minimum(y[:n - 1], y[1:]),
              "majoring": np.maximum(y[:n - 1], y[1:])}[method]
    return np.sum((x[:n - 1] - x[1:]) * height)


def test_auc_summations_and_threshold_metrics_match_tf1_formulas():
    rng = np.random.default_rng(3)
    batches = []
    for _ in range(3):
        labels = rng.integers(0, 2, 40)
        scores = np.clip(0.3 * labels + 0.7 * rng.random(40), 0, 1).astype(np.float32)
        batches.append((labels, scores))
    thresholds = [0.2, 0.5, 0.8]
    y = tf.placeholder(tf.int64, [None])
    p = tf.placeholder(tf.float32, [None])
    kinds = [(c, m) for c in ("ROC", "PR")
             for m in ("trapezoidal", "careful_interpolation", "minoring", "majoring")]
    aucs = {k: tf.metrics.auc(y, p, num_thresholds=50, curve=k[0], summation_method=k[1])
            for k in kinds}
    prec = tf.metrics.precision_at_thresholds(y, p, thresholds)
    rec = tf.metrics.recall_at_thresholds(y, p, thresholds)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for labels, scores in batches:
            sess.run([v[1] for v in aucs.values()] + [prec[1], rec[1]], {y: labels, p: scores})
        got = sess.run({k: v[0] for k, v in aucs.items()})
        got_prec, got_rec = sess.run([prec[0], rec[0]])
    labels = np.concatenate([b[0] for b in batches])
    scores = np.concatenate([b[1] for b in batches])
    for k in kinds:
        assert got[k] == pytest.approx(_tf1_auc(labels, scores, 50, *k), abs=2e-5), k
    above = scores[:, None] > np.array(thresholds)[None, :]
    tp = np.sum(above & (labels[:, None] == 1), 0)
    np.testing.assert_allclose(got_prec, tp / (np.sum(above, 0) + 1e-7), rtol=1e-5)
    np.testing.assert_allclose(got_rec, tp / (np.sum(labels == 1) + 1e-7), rtol=1e-5)
    with pytest.raises(ValueError, match="summation_method"):
        tf.metrics.auc(y, p, summation_method="simpson")
