"""tf.contrib.opt.LazyAdamOptimizer (rows an embedding lookup did not read stay put; Adam's
formulas otherwise), tf.contrib.metrics' streaming metrics (predictions first) and
tf.contrib.layers.optimize_loss."""
import numpy as np
import pytest

import shardflow as tf


def adam(var, g, m, v, t, lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    return var - lr_t * m / (np.sqrt(v) + eps), m, v


def test_lazy_adam_moves_only_the_rows_read_and_matches_adam_there():
    e0 = np.random.RandomState(0).rand(5, 3)
    with tf.Graph().as_default():
        table = tf.Variable(e0.astype(np.float32))
        ids = tf.placeholder(tf.int32, [None])
        loss = tf.reduce_sum(tf.square(tf.nn.embedding_lookup(table, ids)))
        opt = tf.contrib.opt.LazyAdamOptimizer(0.1)
        train = opt.minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step_ids in ([0, 2], [2], [2, 4]):
                sess.run(train, {ids: step_ids})
            got = sess.run(table)
            assert opt.get_slot_names() == ["m", "v"]
    want = e0.copy()
    m, v = np.zeros_like(e0), np.zeros_like(e0)
    for t, step_ids in enumerate(([0, 2], [2], [2, 4]), start=1):
        g = np.zeros_like(e0)
        for i in step_ids:
            g[i] += 2 * want[i]
        rows = sorted(set(step_ids))
        new, m_new, v_new = adam(want, g, m, v, t)
        want[rows], m[rows], v[rows] = new[rows], m_new[rows], v_new[rows]
    np.testing.assert_allclose(got, want, atol=2e-5)
    np.testing.assert_array_equal(got[[1, 3]], e0[[1, 3]].astype(np.float32))


def test_streaming_metrics_take_predictions_first():
    with tf.Graph().as_default():
        preds = tf.placeholder(tf.int64, [None])
        labels = tf.placeholder(tf.int64, [None])
        acc, acc_up = tf.contrib.metrics.streaming_accuracy(preds, labels)
        prec, prec_up = tf.contrib.metrics.streaming_precision(preds, labels)
        mean, mean_up = tf.contrib.metrics.streaming_mean(tf.cast(preds, tf.float32))
        values, updates = tf.contrib.metrics.aggregate_metric_map(
            {"acc": (acc, acc_up), "mean": (mean, mean_up)})
        batch_acc = tf.contrib.metrics.accuracy(preds, labels, weights=[1.0, 0.0, 1.0])
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            for p, l in (([1, 0, 1], [1, 1, 1]), ([0, 0, 1], [0, 1, 1])):
                sess.run(list(updates.values()) + [prec_up], {preds: p, labels: l})
            got = sess.run([values["acc"], values["mean"], prec])
            one = sess.run(batch_acc, {preds: [1, 0, 0], labels: [1, 1, 1]})
    assert got[0] == pytest.approx(4 / 6) and got[1] == pytest.approx(3 / 6)
    assert got[2] == pytest.approx(1.0)       # every predicted positive was positive
    assert one == pytest.approx(0.5)


@pytest.mark.parametrize("optimizer", ["SGD", "Adam", "Adagrad", "Momentum", "RMSProp"])
def test_optimize_loss_trains_with_clipping_decay_and_summaries(optimizer):
    rng = np.random.RandomState(1)
    x_val = rng.rand(64, 3).astype(np.float32)
    y_val = x_val @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    with tf.Graph().as_default():
        x, y = tf.constant(x_val), tf.constant(y_val)
        w = tf.Variable(np.zeros((3, 1), np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        step = tf.train.get_or_create_global_step()
        train = tf.contrib.layers.optimize_loss(
            loss, step, 0.1, optimizer, clip_gradients=5.0,
            learning_rate_decay_fn=lambda lr, s: tf.train.exponential_decay(lr, s, 100, 0.96))
        summaries = tf.summary.merge_all()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss)
            for _ in range(60):
                last = sess.run(train)
            assert sess.run(step) == 60
            assert sess.run(summaries) is not None
    assert last < first * 0.5, (optimizer, first, last)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="not one of"):
            tf.contrib.layers.optimize_loss(tf.reduce_sum(tf.Variable([1.0])), None, 0.1,
                                            "Nope")


def test_contrib_framework_checkpoint_and_variable_helpers(tmp_path):
    """Transfer-learning code: tf.contrib.framework.get_variables_to_restore(exclude=...) and
    assign_from_checkpoint_fn restore a pretrained scope into a graph with a new head;
    filter_variables / get_unique_variable / get_variables_by_suffix find variables."""
    g = tf.Graph()
    with g.as_default():
        with tf.variable_scope("base"):
            w = tf.get_variable("w", [3, 2], initializer=tf.random_normal_initializer(seed=1))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            want = s.run(w)
            path = tf.train.Saver().save(s, str(tmp_path / "pre.ckpt"))
    fw = tf.contrib.framework
    with tf.Graph().as_default():
        with tf.variable_scope("base"):
            w2 = tf.get_variable("w", [3, 2])
        with tf.variable_scope("head"):
            h = tf.get_variable("w", [2, 1])
        restore = fw.get_variables_to_restore(exclude=["head"])
        assert [v.op.name for v in restore] == ["base/w"]
        init_fn = fw.assign_from_checkpoint_fn(path, restore)
        assert fw.get_unique_variable("head/w") is h
        assert [v.op.name for v in fw.filter_variables([w2, h], exclude_patterns=["head"])] \
            == ["base/w"]
        assert len(fw.get_variables_by_suffix("w")) == 2
        assert dict(fw.list_variables(path)) == {"base/w": [3, 2]}
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            init_fn(s)
            np.testing.assert_array_equal(s.run(w2), want)


def test_instance_group_norm_maxout_pool1d_sparse_segments_and_misc_names(tmp_path):
    """contrib.layers.instance_norm / group_norm / maxout against NumPy; tf.nn.max_pool1d /
    avg_pool1d; tf.sparse_segment_sum / mean; tf.add_to_collections; tf.AggregationMethod;
    tf.train.match_filenames_once feeding string_input_producer's names."""
    x = np.random.RandomState(0).randn(2, 4, 4, 8).astype(np.float32)
    (tmp_path / "b.txt").write_text("x")
    (tmp_path / "a.txt").write_text("y")
    g = tf.Graph()
    with g.as_default():
        t = tf.placeholder(tf.float32, [None, 4, 4, 8])
        inst = tf.contrib.layers.instance_norm(t)
        grp = tf.contrib.layers.group_norm(t, groups=2)
        mo = tf.contrib.layers.maxout(t, 4)
        assert grp.shape.as_list() == [None, 4, 4, 8] and mo.shape.as_list() == [None, 4, 4, 4]
        assert sorted(v.op.name for v in tf.trainable_variables()) == [
            "GroupNorm/beta", "GroupNorm/gamma", "InstanceNorm/beta", "InstanceNorm/gamma"]
        seq = tf.placeholder(tf.float32, [None, 6, 2])
        mp = tf.nn.max_pool1d(seq, 2, 2, "VALID")
        ap = tf.nn.avg_pool1d(seq, [1, 3, 1], [1, 3, 1], "VALID")
        data = tf.constant(np.arange(12.0).reshape(4, 3))
        ss = tf.sparse_segment_sum(data, [0, 2, 3], [0, 0, 1])
        sm = tf.sparse_segment_mean(data, [0, 2, 3], [0, 0, 1])
        tf.add_to_collections(["c1", "c2", "c1"], data)
        assert tf.get_collection("c1") == [data] and tf.get_collection("c2") == [data]
        (grad,) = tf.gradients(tf.reduce_sum(data * data), [data],
                               aggregation_method=tf.AggregationMethod.EXPERIMENTAL_TREE)
        files = tf.train.match_filenames_once(str(tmp_path / "*.txt"))
        sv = np.arange(24, dtype=np.float32).reshape(2, 6, 2)
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            a, b, m, p1, p2, v_ss, v_sm, names = s.run(
                [inst, grp, mo, mp, ap, ss, sm, files], {t: x, seq: sv})
    want = (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-6)
    np.testing.assert_allclose(a, want, rtol=1e-4, atol=1e-5)
    xg = x.reshape(2, 4, 4, 2, 4)
    want = (xg - xg.mean((1, 2, 4), keepdims=True)) / np.sqrt(xg.var((1, 2, 4), keepdims=True)
                                                              + 1e-6)
    np.testing.assert_allclose(b, want.reshape(x.shape), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(m, x.reshape(2, 4, 4, 4, 2).max(-1))
    np.testing.assert_array_equal(p1, sv.reshape(2, 3, 2, 2).max(2))
    np.testing.assert_allclose(p2, sv.reshape(2, 2, 3, 2).mean(2))
    assert v_ss.tolist() == [[6, 8, 10], [9, 10, 11]] and v_sm.tolist() == [[3, 4, 5],
                                                                           [9, 10, 11]]
    assert [n.decode() for n in names] == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    assert grad is not None
