"""tf.metrics, tf.losses and tf.contrib.metrics against NumPy written from TF 1.15's documented
definitions: shapes TF1 squeezes or refuses (labels / weights [batch, 1]), TF1's epsilons."""
import numpy as np
import pytest

import shardflow as tf

LABELS = np.array([1, 0, 1, 1, 0, 1], np.int64)
PREDS = np.array([1, 1, 1, 0, 0, 0], np.int64)
W = np.array([1.0, 2.0, 3.0, 4.0, 0.0, 0.5], np.float32)


def _updates_then_values(pairs, feeds=(None,)):
    """Runs every update_op once per feed, then returns the values."""
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        for feed in feeds:
            s.run([u for _, u in pairs], feed)
        return s.run([v for v, _ in pairs])


def _weighted_mean(x, w):
    w = np.broadcast_to(w, x.shape)
    return float((x * w).sum() / w.sum())


def test_weights_of_shape_batch_1_weigh_each_row():
    # They were broadcast against [batch] values to [batch, batch]: every metric came out
    # unweighted (or counted each row batch times).
    col = W.reshape(-1, 1)
    hit = (LABELS == PREDS).astype(np.float64)
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)
    p = np.array([1.5, 2.0, 2.0, 5.0, 5.0, 3.0], np.float32)
    with tf.Graph().as_default():
        pairs = [tf.metrics.accuracy(LABELS, PREDS, weights=col),
                 tf.metrics.mean(y, weights=col),
                 tf.metrics.recall(LABELS, PREDS, weights=col),
                 tf.metrics.precision(LABELS, PREDS, weights=col),
                 tf.metrics.false_negatives(LABELS, PREDS, weights=col),
                 tf.metrics.mean_squared_error(y, p, weights=col),
                 tf.metrics.mean_absolute_error(y, p, weights=col)]
        got = _updates_then_values(pairs)
    tp = W[(LABELS == 1) & (PREDS == 1)].sum()
    fn = W[(LABELS == 1) & (PREDS == 0)].sum()
    fp = W[(LABELS == 0) & (PREDS == 1)].sum()
    want = [_weighted_mean(hit, W), _weighted_mean(y, W), tp / (tp + fn), tp / (tp + fp), fn,
            _weighted_mean((y - p) ** 2, W), _weighted_mean(np.abs(y - p), W)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_labels_of_shape_batch_1_against_predictions_of_shape_batch():
    # TF1 squeezes the trailing 1 (labels from a [None, 1] placeholder against argmax
    # predictions); shardflow refused them as 'different shapes'.
    scores = np.array([0.9, 0.2, 0.6, 0.4, 0.3, 0.1], np.float32)
    with tf.Graph().as_default():
        labels = tf.placeholder(tf.int64, [None, 1])
        pairs = [tf.metrics.accuracy(labels, PREDS),
                 tf.metrics.precision(labels, PREDS),
                 tf.metrics.mean_squared_error(labels, PREDS.astype(np.float32)),
                 tf.metrics.auc(labels, scores, num_thresholds=11)]
        got = _updates_then_values(pairs, [{labels: LABELS.reshape(-1, 1)}])
    with tf.Graph().as_default():
        want = _updates_then_values([tf.metrics.accuracy(LABELS, PREDS),
                                     tf.metrics.precision(LABELS, PREDS),
                                     tf.metrics.mean_squared_error(LABELS, PREDS),
                                     tf.metrics.auc(LABELS, scores, num_thresholds=11)])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[0] == pytest.approx(np.mean(LABELS == PREDS))


def test_shapes_of_unknown_rank_are_squeezed_when_the_step_runs():
    # Placeholders without a shape fed [batch, 1] labels and weights: TF1 squeezes them with
    # tf.cond; they were broadcast to [batch, batch].
    with tf.Graph().as_default():
        labels, preds = tf.placeholder(tf.int64), tf.placeholder(tf.int64)
        weights = tf.placeholder(tf.float32)
        pairs = [tf.metrics.accuracy(labels, preds, weights=weights),
                 tf.metrics.mean(tf.cast(preds, tf.float32), weights=weights)]
        got = _updates_then_values(pairs, [{labels: LABELS.reshape(-1, 1), preds: PREDS,
                                            weights: W.reshape(-1, 1)}])
    np.testing.assert_allclose(got, [_weighted_mean((LABELS == PREDS).astype(float), W),
                                     _weighted_mean(PREDS.astype(float), W)], rtol=1e-6)


def test_weights_of_shape_batch_weigh_rows_of_batch_by_d_values():
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    w = np.array([1.0, 0.0, 2.0, 3.0], np.float32)
    with tf.Graph().as_default():
        (got,) = _updates_then_values([tf.metrics.mean(values, weights=w)])
    assert got == pytest.approx(_weighted_mean(values, w[:, None]))


def test_weights_that_would_enlarge_the_values_are_a_value_error():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="weights can not be broadcast"):
            tf.metrics.mean(np.ones(3, np.float32), weights=np.ones((3, 3), np.float32))
        with pytest.raises(ValueError, match="weights can not be broadcast"):
            tf.metrics.accuracy(np.ones((4, 3)), np.ones((4, 3)), weights=np.ones(3))


def test_accuracy_of_class_scores_says_to_take_the_argmax():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"different shapes.*tf.argmax\(scores, 1\)"):
            tf.metrics.accuracy(np.array([1, 0]), np.zeros((2, 3), np.float32))


def test_a_collection_name_given_as_a_string_is_one_collection():
    # It was iterated letter by letter ('m', 'y', ...), as TF1's add_to_collections does not.
    with tf.Graph().as_default() as g:
        value, update = tf.metrics.mean([1.0, 2.0], metrics_collections="my_values",
                                        updates_collections=["my_updates", "my_updates"])
        assert g.get_collection("my_values") == [value]
        assert g.get_collection("my_updates") == [update]
        assert g.get_collection("m") == []


def _np_auc(labels, scores, weights, num_thresholds=200, curve="ROC",
            summation_method="trapezoidal", thresholds=None):
    """TF 1.15's tf.metrics.auc: thresholds in [0, 1] widened by 1e-7, rates with 1e-6."""
    if thresholds is None:
        inner = [(i + 1) / (num_thresholds - 1.0) for i in range(num_thresholds - 2)]
    else:
        inner = sorted(thresholds)
    th = np.array([-1e-7] + inner + [1 + 1e-7], np.float32).astype(np.float64)
    above = scores[None, :].astype(np.float64) > th[:, None]
    pos = labels.astype(bool)[None, :]
    w = np.broadcast_to(weights, scores.shape)[None, :].astype(np.float64)
    tp = (above & pos) @ w[0]
    fp = (above & ~pos) @ w[0]
    fn = (~above & pos) @ w[0]
    tn = (~above & ~pos) @ w[0]
    eps = 1e-6
    rec = (tp + eps) / (tp + fn + eps)
    if curve == "ROC":
        x, y = fp / (fp + tn + eps), rec
    else:
        x, y = rec, (tp + eps) / (tp + fp + eps)
    if summation_method == "minoring":
        h = np.minimum(y[:-1], y[1:])
    elif summation_method == "majoring":
        h = np.maximum(y[:-1], y[1:])
    else:
        h = (y[:-1] + y[1:]) / 2
    return float(((x[:-1] - x[1:]) * h).sum())


def test_auc_epsilons_and_thresholds_as_tf1():
    # Rates used 1e-7 where TF1's auc adds 1e-6 (visible with small weights); `thresholds`
    # was missing.
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 40)
    scores = rng.random(40).astype(np.float32)
    w = (rng.random(40) * 1e-4).astype(np.float32)
    cases = [dict(num_thresholds=50), dict(curve="PR", num_thresholds=50),
             dict(summation_method="minoring"), dict(summation_method="majoring"),
             dict(thresholds=[0.25, 0.5, 0.75])]
    with tf.Graph().as_default():
        lab = tf.placeholder(tf.int64, [None])
        sc = tf.placeholder(tf.float32, [None])
        wt = tf.placeholder(tf.float32, [None])
        pairs = [tf.metrics.auc(lab, sc, weights=wt, **kw) for kw in cases]
        feeds = [{lab: labels[:20], sc: scores[:20], wt: w[:20]},
                 {lab: labels[20:], sc: scores[20:], wt: w[20:]}]
        got = _updates_then_values(pairs, feeds)
    want = [_np_auc(labels, scores, w, **kw) for kw in cases]
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_auc_of_scores_outside_0_1_fails_the_step():
    # TF1 asserts predictions in [0, 1]; logits gave a silent, meaningless area.
    with tf.Graph().as_default():
        _, update = tf.metrics.auc([1, 0, 1], [2.5, -1.0, 0.3])
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"predictions must be in"):
                s.run(update)


def test_mean_iou_casts_float_ids_and_refuses_ids_out_of_range():
    labels = np.array([0, 1, 2, 2, 1], np.float32)
    preds = np.array([0.0, 2.0, 2.0, 1.0, 1.0], np.float32)
    with tf.Graph().as_default():
        (got,) = _updates_then_values([tf.metrics.mean_iou(labels, preds, 3)])
    cm = np.zeros((3, 3))
    for a, b in zip(labels.astype(int), preds.astype(int)):
        cm[a, b] += 1
    diag = np.diag(cm)
    union = cm.sum(0) + cm.sum(1) - diag
    assert got == pytest.approx(np.mean(diag / union))
    # Label 0 predicted 5 of 3 classes was counted silently as label 1 predicted 2.
    with tf.Graph().as_default():
        _, update = tf.metrics.mean_iou([0, 1], [5, 1], 3)
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="out of bound"):
                s.run(update)


def test_mean_relative_error_normalizer_of_shape_batch_1():
    y = np.array([1.0, 2.0, 4.0], np.float32)
    p = np.array([2.0, 2.0, 1.0], np.float32)
    norm = np.array([2.0, 0.0, 3.0], np.float32)
    with tf.Graph().as_default():
        (got,) = _updates_then_values(
            [tf.metrics.mean_relative_error(y, p, norm.reshape(-1, 1))])
    assert got == pytest.approx(np.mean([0.5, 0.0, 1.0]))


def test_mean_tensor_weights_of_shape_batch_weigh_rows():
    # TF1 expands weights [batch] against values [batch, d] to [batch, 1]; it was a
    # broadcast error (or, with d == batch, a silent per-column weighting).
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    b = np.array([[3.0, 0.0], [1.0, 1.0], [7.0, 2.0]], np.float32)
    wa, wb = np.array([1.0, 0.0, 3.0], np.float32), np.array([1.0, 2.0, 1.0], np.float32)
    with tf.Graph().as_default():
        values = tf.placeholder(tf.float32, [3, 2])
        w = tf.placeholder(tf.float32, [3])
        got = _updates_then_values([tf.metrics.mean_tensor(values, weights=w)],
                                   [{values: a, w: wa}, {values: b, w: wb}])[0]
    want = (a * wa[:, None] + b * wb[:, None]) / (wa + wb)[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_precision_and_recall_at_k_are_float64_as_tf1():
    labels = np.array([[0, 1], [1, 2], [2, -1]], np.int64)
    scores = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.3, 0.2, 0.5]], np.float32)
    with tf.Graph().as_default():
        pairs = [tf.metrics.precision_at_k(labels, scores, 1, weights=[1.0, 2.0, 0.5]),
                 tf.metrics.recall_at_k(labels, scores, 1, weights=[1.0, 2.0, 0.5]),
                 tf.metrics.sparse_precision_at_k(labels, scores, 2)]
        assert all(v.dtype == tf.float64 and u.dtype == tf.float64 for v, u in pairs)
        got = _updates_then_values(pairs)
    # top-1 is 0, 1, 2: all hits; each row's other label (the -1 pad too) is a recall miss;
    # the top-2 of row 2 is (2, 0): 0 is a miss.
    np.testing.assert_allclose(got, [1.0, 3.5 / (3.5 + 3.5), 5.0 / 6.0])


def _np_average_precision(labels, scores, k):
    top = np.argsort(-scores, kind="stable")[:k]
    relevant = np.array([t in labels for t in top], np.float64)
    return (np.cumsum(relevant) / np.arange(1, k + 1) * relevant).sum() / min(k, len(labels))


def test_average_precision_at_k_against_numpy():
    # tf.metrics.average_precision_at_k (and its sparse_ name, and contrib's streaming_sparse_
    # average_precision_at_k) were missing.
    labels = np.array([[0, 2], [1, -1], [3, 2]], np.int64)
    scores = np.array([[0.5, 0.1, 0.3, 0.1], [0.2, 0.1, 0.6, 0.1], [0.1, 0.2, 0.3, 0.4]],
                      np.float32)
    w = np.array([1.0, 2.0, 0.5])
    with tf.Graph().as_default():
        pairs = [tf.metrics.average_precision_at_k(labels, scores, 2),
                 tf.metrics.sparse_average_precision_at_k(labels, scores, 3, weights=w),
                 tf.contrib.metrics.streaming_sparse_average_precision_at_k(
                     scores, labels[:, 0], 1)]
        assert pairs[0][0].dtype == tf.float64
        got = _updates_then_values(pairs)
    ap2 = [_np_average_precision(a, b, 2) for a, b in zip(labels, scores)]
    ap3 = [_np_average_precision(a, b, 3) for a, b in zip(labels, scores)]
    ap1 = [_np_average_precision(a[:1], b, 1) for a, b in zip(labels, scores)]
    np.testing.assert_allclose(got, [np.mean(ap2), np.dot(ap3, w) / w.sum(), np.mean(ap1)])


def test_at_k_metrics_take_sparse_labels():
    # Rows with different numbers of labels come as a SparseTensor in TF1 programs; it was a
    # TypeError. Only the ids a row holds count (no padding).
    rows = [[0, 2], [1], [3, 1, 0]]
    scores = np.array([[0.5, 0.1, 0.3, 0.1], [0.2, 0.7, 0.1, 0.0], [0.1, 0.2, 0.3, 0.4]],
                      np.float32)
    indices = [[r, j] for r, row in enumerate(rows) for j in range(len(row))]
    with tf.Graph().as_default():
        sparse = tf.SparseTensor(indices, tf.constant([c for row in rows for c in row],
                                                      tf.int64), [3, 3])
        got = _updates_then_values([tf.metrics.recall_at_k(sparse, scores, 1),
                                    tf.metrics.precision_at_k(sparse, scores, 2),
                                    tf.metrics.recall_at_k(sparse, scores, 2, class_id=1),
                                    tf.metrics.average_precision_at_k(sparse, scores, 2)])
    tops = [np.argsort(-row, kind="stable") for row in scores]
    recall1 = sum(t[0] in r for t, r in zip(tops, rows)) / sum(map(len, rows))
    precision2 = sum(c in r for t, r in zip(tops, rows) for c in t[:2]) / 6.0
    ap2 = np.mean([_np_average_precision(r, c, 2) for r, c in zip(rows, scores)])
    np.testing.assert_allclose(got, [recall1, precision2, 1.0 / 2.0, ap2])


def test_at_k_metrics_of_batch_time_classes_scores():
    # TF1 takes predictions [D1, ..., DN, classes] (per-timestep recall@k); they failed the
    # step (broadcast error) for rank 3.
    rng = np.random.default_rng(0)
    scores = rng.random((2, 3, 5)).astype(np.float32)
    labels = rng.integers(0, 5, (2, 3))
    w = np.array([[1.0, 2.0, 0.0], [3.0, 1.0, 1.0]])
    top = np.argsort(-scores, axis=-1, kind="stable")[..., :2]
    hit = np.array([[labels[i, j] in top[i, j] for j in range(3)] for i in range(2)], float)
    ap = np.array([[_np_average_precision(labels[i, j:j + 1], scores[i, j], 2)
                    for j in range(3)] for i in range(2)])
    with tf.Graph().as_default():
        got = _updates_then_values([
            tf.metrics.recall_at_k(labels, scores, 2),
            tf.metrics.precision_at_k(labels[..., None], scores, 2, weights=w),
            tf.metrics.recall_at_k(labels, scores, 2, weights=w[:, :1]),
            tf.metrics.recall_at_top_k(labels, top, weights=w),
            tf.metrics.average_precision_at_k(labels, scores, 2)])
    np.testing.assert_allclose(got, [hit.mean(), (hit * w).sum() / (2 * w.sum()),
                                     (hit * w[:, :1]).sum() / (3 * w[:, 0].sum()),
                                     (hit * w).sum() / w.sum(), ap.mean()])


# ---- tf.losses ------------------------------------------------------------------------------


def test_losses_refuse_shapes_tf1_refuses():
    # labels [batch, 1] against predictions [batch] were broadcast to [batch, batch]; weights
    # [batch, 1] against per-row losses likewise: silently wrong losses.
    y = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    p = np.array([1.5, 2.0, 2.0, 5.0], np.float32)
    logits = np.zeros((4, 3), np.float32)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="same shape"):
            tf.losses.mean_squared_error(y.reshape(-1, 1), p)
        with pytest.raises(ValueError, match="same shape"):
            tf.losses.absolute_difference(y.reshape(-1, 1), p)
        with pytest.raises(ValueError, match="mean_squared_error: weights can not be broadcast"):
            tf.losses.mean_squared_error(y, p, weights=np.ones((4, 1), np.float32))
        with pytest.raises(ValueError, match=r"onehot_labels \[4, 3\] and logits \[4, 4\]"):
            tf.losses.softmax_cross_entropy(np.eye(3)[[0, 1, 2, 0]], np.zeros((4, 4)))
        with pytest.raises(ValueError, match="softmax_cross_entropy: weights can not be"):
            tf.losses.softmax_cross_entropy(np.eye(3)[[0, 1, 2, 0]], logits,
                                            weights=np.ones((4, 1), np.float32))
        with pytest.raises(ValueError, match=r"weights can not be broadcast.*weigh whole "
                                             r"rows give weights of shape \[3, 1\]"):
            tf.losses.sigmoid_cross_entropy(np.ones((3, 3)), np.zeros((3, 3), np.float32),
                                            weights=np.ones(3, np.float32))


def test_sparse_softmax_cross_entropy_squeezes_labels_and_weights_of_shape_batch_1():
    logits = np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3], [1.0, 1.0, 1.0], [0.0, 0.0, 3.0]],
                      np.float32)
    labels = np.array([0, 1, 2, 0])
    w = np.array([1.0, 0.0, 2.0, 3.0], np.float32)
    lse = np.log(np.exp(logits).sum(1))
    per_row = lse - logits[np.arange(4), labels]
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int64, [None, 1])
        loss = tf.losses.sparse_softmax_cross_entropy(ids, logits, weights=w.reshape(-1, 1))
        with tf.Session() as s:
            got = s.run(loss, {ids: labels.reshape(-1, 1)})
    assert got == pytest.approx((per_row * w).sum() / np.count_nonzero(w), rel=1e-5)


def test_sparse_softmax_cross_entropy_squeezes_shapes_of_unknown_rank():
    logits = np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3], [0.0, 0.0, 3.0]], np.float32)
    labels = np.array([0, 1, 0])
    w = np.array([1.0, 0.0, 3.0], np.float32)
    per_row = np.log(np.exp(logits).sum(1)) - logits[np.arange(3), labels]
    with tf.Graph().as_default():
        ids, weights = tf.placeholder(tf.int64), tf.placeholder(tf.float32)
        loss = tf.losses.sparse_softmax_cross_entropy(ids, logits, weights=weights)
        with tf.Session() as s:
            got = s.run(loss, {ids: labels.reshape(-1, 1), weights: w.reshape(-1, 1)})
    assert got == pytest.approx((per_row * w).sum() / 2, rel=1e-5)


def test_losses_of_an_empty_batch_are_zero_not_nan():
    # TF1 divides with div_no_nan; the plain mean of a batch of unknown size gave NaN.
    R = tf.losses.Reduction
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        losses = [tf.losses.mean_squared_error(x, x + 1.0),
                  tf.losses.absolute_difference(x, x, weights=2.0,
                                                reduction=R.SUM_OVER_BATCH_SIZE)]
        with tf.Session() as s:
            assert s.run(losses, {x: np.zeros(0, np.float32)}) == [0.0, 0.0]
            assert s.run(losses, {x: np.zeros(3, np.float32)}) == [1.0, 0.0]


# ---- tf.contrib.metrics ---------------------------------------------------------------------


def test_contrib_streaming_auc_takes_tf1_positional_arguments():
    # streaming_auc(p, l, None, 3) put 3 in metrics_collections (TypeError); TF1 contrib's
    # order is (predictions, labels, weights, num_thresholds, ...).
    scores = np.array([0.9, 0.2, 0.6, 0.4], np.float32)
    labels = np.array([1, 0, 1, 1])
    with tf.Graph().as_default():
        got = _updates_then_values([tf.contrib.metrics.streaming_auc(scores, labels, None, 3)])
    assert got[0] == pytest.approx(_np_auc(labels, scores, 1.0, num_thresholds=3), abs=1e-6)


def test_contrib_covariance_and_pearson_over_batches_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=30).astype(np.float32)
    y = (0.5 * x + rng.normal(size=30) + 100.0).astype(np.float32)
    w = rng.random(30).astype(np.float32)
    cm = tf.contrib.metrics
    with tf.Graph().as_default():
        px, py, pw = (tf.placeholder(tf.float32, [None]) for _ in range(3))
        pairs = [cm.streaming_covariance(px, py), cm.streaming_pearson_correlation(px, py),
                 cm.streaming_covariance(px, py, weights=pw),
                 cm.streaming_pearson_correlation(px, py, weights=pw)]
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            assert np.isnan(s.run(pairs[0][0]))     # NaN until the count passes 1
            for part in (slice(0, 10), slice(10, 11), slice(11, 30)):
                s.run([u for _, u in pairs], {px: x[part], py: y[part], pw: w[part]})
            got = s.run([v for v, _ in pairs])
    mx, my = (w * x).sum() / w.sum(), (w * y).sum() / w.sum()

    def wcov(a, ma, b, mb):
        return (w * (a - ma) * (b - mb)).sum() / (w.sum() - 1)
    want = [np.cov(x, y)[0, 1], np.corrcoef(x, y)[0, 1], wcov(x, mx, y, my),
            wcov(x, mx, y, my) / np.sqrt(wcov(x, mx, x, mx) * wcov(y, my, y, my))]
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_contrib_rates_f1_and_recall_at_k_match_numpy():
    cm = tf.contrib.metrics
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 50)
    scores = rng.random(50).astype(np.float32)
    hard = (scores > 0.5).astype(np.int64)
    logits = rng.normal(size=(50, 5)).astype(np.float32)
    ids = rng.integers(0, 5, 50)
    with tf.Graph().as_default():
        got = _updates_then_values([
            cm.streaming_false_positive_rate(hard, labels),
            cm.streaming_false_negative_rate(hard, labels),
            cm.f1_score(labels, scores, num_thresholds=21),
            cm.streaming_recall_at_k(logits, ids, 2),
            cm.streaming_sparse_recall_at_k(logits, ids, 2),
            cm.streaming_precision_at_thresholds(scores, labels, [0.3, 0.7])])
    pos, pred = labels == 1, hard == 1
    fp, tn = np.sum(pred & ~pos), np.sum(~pred & ~pos)
    fn, tp = np.sum(~pred & pos), np.sum(pred & pos)
    th = np.array([-1e-7] + [(i + 1) / 20.0 for i in range(19)] + [1 + 1e-7], np.float32)
    above = scores[None, :] > th[:, None]
    tps, fps, fns = (above & pos).sum(1), (above & ~pos).sum(1), (~above & pos).sum(1)
    p, r = tps / (tps + fps + 1e-7), tps / (tps + fns + 1e-7)
    top2 = np.argsort(-logits, axis=1)[:, :2]
    in_top = np.mean([ids[i] in top2[i] for i in range(50)])
    prec_at = [np.sum((scores > t) & pos) / (np.sum(scores > t) + 1e-7) for t in (0.3, 0.7)]
    np.testing.assert_allclose(got[:5], [fp / (fp + tn), fn / (fn + tp),
                                         np.max(2 * p * r / (p + r + 1e-7)), in_top, in_top],
                               rtol=1e-5)
    np.testing.assert_allclose(got[5], prec_at, rtol=1e-5)


def test_contrib_accuracy_refuses_mismatched_dtypes_as_tf1():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="dtypes of predictions and labels"):
            tf.contrib.metrics.accuracy(tf.constant([1, 0], tf.int64), tf.constant([1, 1]))
        acc = tf.contrib.metrics.accuracy(tf.constant([1, 0, 1]), tf.constant([1, 1, 1]),
                                          weights=tf.constant([1.0, 3.0, 0.0]))
        with tf.Session() as s:
            assert s.run(acc) == pytest.approx(0.25)


def test_contrib_cohen_kappa_and_count_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 40)
    b = np.where(rng.random(40) < 0.6, a, rng.integers(0, 3, 40))
    w = rng.random(40).astype(np.float32)

    def kappa(weights):
        cm = np.zeros((3, 3))
        np.add.at(cm, (a, b), weights)
        n = cm.sum()
        chance = (cm.sum(0) * cm.sum(1)).sum() / n
        return (np.trace(cm) - chance) / (n - chance)
    with tf.Graph().as_default():
        pairs = [tf.contrib.metrics.cohen_kappa(a[:20], b[:20], 3),
                 tf.contrib.metrics.cohen_kappa(a, b, 3, weights=w),
                 tf.contrib.metrics.count(np.ones((4, 2)), weights=np.array([1.0, 0.0, 2.0, 1.0]))]
        assert pairs[0][0].dtype == tf.float64
        got = _updates_then_values(pairs)
    np.testing.assert_allclose(got, [kappa(np.r_[np.ones(20), np.zeros(20)]), kappa(w), 8.0],
                               rtol=1e-6)


def test_contrib_set_operations_are_tf_sets():
    cm = tf.contrib.metrics
    with tf.Graph().as_default():
        a = tf.constant([[1, 2, 3], [4, 5, 6]], tf.int64)
        b = tf.constant([[2, 3, 9], [4, 7, 8]], tf.int64)
        with tf.Session() as s:
            sizes = s.run([cm.set_size(cm.set_intersection(a, b)),
                           cm.set_size(cm.set_union(a, b)),
                           cm.set_size(cm.set_difference(a, b)),
                           cm.set_size(cm.set_difference(a, b, aminusb=False))])
    np.testing.assert_array_equal(sizes, [[2, 1], [4, 5], [1, 2], [1, 2]])
