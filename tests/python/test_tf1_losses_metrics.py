"""TF1's tf.losses (with Reduction), the newer tf.metrics and tf.nn composites against NumPy."""
import numpy as np
import pytest

import shardflow as tf

R = tf.losses.Reduction


def _run(fetches, feed=None, local_init=False):
    with tf.Session() as s:
        if local_init:
            s.run(tf.local_variables_initializer())
        return s.run(fetches, feed)


def _reduce(per_element, weights, reduction):
    w = np.broadcast_to(np.asarray(weights, np.float64), per_element.shape)
    weighted = per_element * w
    if reduction == R.NONE:
        return weighted
    total = weighted.sum()
    if reduction == R.SUM:
        return total
    if reduction == R.MEAN:
        den = w.sum()
    elif reduction == R.SUM_OVER_BATCH_SIZE:
        den = per_element.size
    else:
        den = np.count_nonzero(w)
    return total / den if den else 0.0


def test_losses_against_numpy_for_every_reduction():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(4, 3)).astype(np.float32)
    p = rng.normal(size=(4, 3)).astype(np.float32)
    y01 = (rng.random((4, 3)) > 0.5).astype(np.float32)
    prob = rng.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
    w_col = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)      # [batch, 1]
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    yu, pu = unit(y), unit(p)
    err = np.abs(p - y)
    q = np.minimum(err, 1.5)
    cases = {   # name: (build(weights, reduction), per-element NumPy losses)
        "huber": (lambda w, r: tf.losses.huber_loss(y, p, w, delta=1.5, reduction=r),
                  0.5 * q ** 2 + 1.5 * (err - q)),
        "absdiff": (lambda w, r: tf.losses.absolute_difference(y, p, w, reduction=r), err),
        "mse": (lambda w, r: tf.losses.mean_squared_error(y, p, w, reduction=r), (p - y) ** 2),
        "cosine": (lambda w, r: tf.losses.cosine_distance(yu, pu, axis=1, weights=w,
                                                          reduction=r),
                   1 - np.sum(yu * pu, axis=1, keepdims=True)),
        "hinge": (lambda w, r: tf.losses.hinge_loss(y01, p, w, reduction=r),
                  np.maximum(0, 1 - (2 * y01 - 1) * p)),
        "log": (lambda w, r: tf.losses.log_loss(y01, prob, w, reduction=r),
                -y01 * np.log(prob + 1e-7) - (1 - y01) * np.log(1 - prob + 1e-7)),
        "sigmoid_xent": (lambda w, r: tf.losses.sigmoid_cross_entropy(y01, p, w, reduction=r),
                         np.maximum(p, 0) - p * y01 + np.log1p(np.exp(-np.abs(p)))),
        "weighted": (lambda w, r: tf.losses.compute_weighted_loss(tf.constant(err), w,
                                                                  reduction=r), err),
    }
    assert R.SUM_OVER_NONZERO_WEIGHTS == R.SUM_BY_NONZERO_WEIGHTS
    reductions = [R.NONE, R.SUM, R.MEAN, R.SUM_OVER_BATCH_SIZE, R.SUM_BY_NONZERO_WEIGHTS]
    g = tf.Graph()
    with g.as_default():
        built, want = {}, {}
        for name, (build, per) in cases.items():
            for weights in (1.0, 0.0, 2.5, w_col):
                for r in reductions:
                    key = (name, str(np.asarray(weights).tolist()), r)
                    built[key] = build(weights, r)
                    want[key] = _reduce(per.astype(np.float64), weights, r)
        # Each adds itself to LOSSES, as TF1's.
        assert tf.get_collection(tf.GraphKeys.LOSSES) == list(built.values())
        got = _run(built)
    for key, v in want.items():
        np.testing.assert_allclose(got[key], v, rtol=2e-5, atol=2e-6, err_msg=str(key))
    assert got[("huber", "0.0", R.SUM_BY_NONZERO_WEIGHTS)] == 0.0    # 0 / 0 is 0


def test_losses_default_reduction_and_scope():
    g = tf.Graph()
    with g.as_default():
        y = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
        p = np.array([0.5, 1.0, 4.0, 3.0], np.float32)
        w = np.array([1.0, 0.0, 1.0, 0.0], np.float32)
        # TF1's default: the sum over the elements with a non-zero weight / their number.
        loss = tf.losses.absolute_difference(y, p, weights=w, scope="abs")
        assert loss.name.startswith("abs/")
        sparse = tf.losses.sparse_softmax_cross_entropy(
            np.array([0, 1]), tf.constant([[2.0, 0.0], [0.0, 0.0]]), weights=[0.0, 3.0],
            reduction=R.SUM, loss_collection=None)
        assert len(tf.losses.get_losses()) == 1
        with pytest.raises(ValueError, match="reduction"):
            tf.losses.mean_squared_error(y, p, reduction="mean")
        got = _run([loss, sparse])
    np.testing.assert_allclose(got[0], (0.5 + 2.0) / 2, rtol=1e-6)
    np.testing.assert_allclose(got[1], 3.0 * np.log(2.0), rtol=1e-6)


def test_mean_pairwise_squared_error():
    rng = np.random.default_rng(1)
    y = rng.normal(size=(3, 2, 3)).astype(np.float32)
    p = rng.normal(size=(3, 2, 3)).astype(np.float32)
    w = np.array([1.0, 0.5, 2.0], np.float32)

    def pairwise(d):
        d = d.reshape(-1).astype(np.float64)
        n = d.size
        return np.sum((d[:, None] - d[None, :]) ** 2) / (n * (n - 1))

    per_row = np.array([pairwise(p[i] - y[i]) for i in range(3)])
    g = tf.Graph()
    with g.as_default():
        plain = tf.losses.mean_pairwise_squared_error(y, p)
        weighted = tf.losses.mean_pairwise_squared_error(y, p, weights=w)
        assert len(tf.losses.get_losses()) == 2
        got = _run([plain, weighted])
    np.testing.assert_allclose(got[0], per_row.sum(), rtol=1e-5)
    np.testing.assert_allclose(got[1], (per_row * w).sum(), rtol=1e-5)


def test_huber_loss_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    y = rng.normal(size=(5, 2)).astype(np.float64)
    p0 = y + np.array([[0.3, -2.0], [1.7, -0.4], [0.05, 3.0], [-1.2, 0.8], [2.5, -0.9]])
    w = rng.uniform(0.5, 2.0, (5, 1))
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float64, [5, 2])
        loss = tf.losses.huber_loss(tf.constant(y), p, weights=tf.constant(w), delta=1.0)
        grad, = tf.gradients(loss, [p])
        with tf.Session() as s:
            gv = s.run(grad, {p: p0})
            num = np.zeros_like(p0)
            h = 1e-6
            for i in np.ndindex(*p0.shape):
                up, dn = p0.copy(), p0.copy()
                up[i] += h
                dn[i] -= h
                num[i] = (s.run(loss, {p: up}) - s.run(loss, {p: dn})) / (2 * h)
    np.testing.assert_allclose(gv, num, rtol=1e-5, atol=1e-7)
    e = p0 - y
    np.testing.assert_allclose(gv, w * np.clip(e, -1, 1) / e.size, rtol=1e-10)


def _stream(metrics, placeholders, batches):
    """Runs every update_op on each batch; returns (updates of the last batch, final values)."""
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        for batch in batches:
            ups = s.run({k: v[1] for k, v in metrics.items()}, dict(zip(placeholders, batch)))
        return ups, s.run({k: v[0] for k, v in metrics.items()})


def test_classification_metrics_over_two_batches():
    rng = np.random.default_rng(3)
    nc = 4
    batches = []
    for _ in range(2):
        y = rng.integers(0, nc, 12)
        pred = np.where(rng.random(12) < 0.6, y, rng.integers(0, nc, 12))
        w = rng.choice([0.0, 1.0, 2.0], 12).astype(np.float32)
        batches.append((y, pred, w))
    batches[0][0][:] = np.minimum(batches[0][0], 2)    # class 3 only labelled in batch two
    g = tf.Graph()
    with g.as_default():
        y = tf.placeholder(tf.int64, [None])
        p = tf.placeholder(tf.int64, [None])
        w = tf.placeholder(tf.float32, [None])
        m = {
            "iou": tf.metrics.mean_iou(y, p, nc),
            "iou_w": tf.metrics.mean_iou(y, p, nc, weights=w),
            "pca": tf.metrics.mean_per_class_accuracy(y, p, nc),
            "pca_w": tf.metrics.mean_per_class_accuracy(y, p, nc, weights=w),
        }
        ups, final = _stream(m, [y, p, w], batches)
    ys = np.concatenate([b[0] for b in batches])
    ps = np.concatenate([b[1] for b in batches])
    ws = np.concatenate([b[2] for b in batches]).astype(np.float64)
    for suffix, wt in (("", np.ones_like(ws)), ("_w", ws)):
        cm = np.zeros((nc, nc))
        np.add.at(cm, (ys, ps), wt)
        union = cm.sum(0) + cm.sum(1) - np.diag(cm)
        iou = np.diag(cm)[union > 0] / union[union > 0]
        np.testing.assert_allclose(final["iou" + suffix], iou.mean(), rtol=1e-6)
        np.testing.assert_allclose(ups["iou" + suffix], cm)       # TF1: update returns the cm
        per_class = np.array([np.diag(cm)[c] / cm[c].sum() if cm[c].sum() else 0.0
                              for c in range(nc)])
        np.testing.assert_allclose(final["pca" + suffix], per_class.mean(), rtol=1e-6)
        np.testing.assert_allclose(ups["pca" + suffix], per_class, rtol=1e-6)


def _top_k_ref(labels, scores, k, class_id, weights):
    tp = fp = fn = 0.0
    for row, sc, wt in zip(labels, scores, weights):
        top = set(np.argsort(-sc, kind="stable")[:k].tolist())
        lab = set(np.atleast_1d(row).tolist())
        if class_id is not None:
            top, lab = top & {class_id}, lab & {class_id}
        tp += wt * len(top & lab)
        fp += wt * len(top - lab)
        fn += wt * len(lab - top)
    return tp / (tp + fp), tp / (tp + fn)


def test_precision_and_recall_at_k_over_two_batches():
    rng = np.random.default_rng(4)
    batches = []
    for _ in range(2):
        scores = rng.random((10, 5)).astype(np.float32)
        labels = np.stack([rng.permutation(5)[:2] for _ in range(10)]).astype(np.int64)
        w = rng.choice([0.0, 0.5, 1.0], 10).astype(np.float32)
        batches.append((labels, scores, w))
    g = tf.Graph()
    with g.as_default():
        y = tf.placeholder(tf.int64, [None, 2])
        s = tf.placeholder(tf.float32, [None, 5])
        w = tf.placeholder(tf.float32, [None])
        m = {}
        for k in (1, 3):
            for cid in (None, 2):
                m[("p", k, cid)] = tf.metrics.precision_at_k(y, s, k, class_id=cid, weights=w)
                m[("r", k, cid)] = tf.metrics.recall_at_k(y, s, k, class_id=cid, weights=w)
        m["p_sparse"] = tf.metrics.precision_at_k(y[:, 0], s, 2)
        m["r_sparse"] = tf.metrics.recall_at_k(y[:, 0], s, 2)
        _, final = _stream(m, [y, s, w], batches)
    labels = np.concatenate([b[0] for b in batches])
    scores = np.concatenate([b[1] for b in batches])
    ws = np.concatenate([b[2] for b in batches])
    for k in (1, 3):
        for cid in (None, 2):
            prec, rec = _top_k_ref(labels, scores, k, cid, ws)
            np.testing.assert_allclose(final[("p", k, cid)], prec, rtol=1e-6)
            np.testing.assert_allclose(final[("r", k, cid)], rec, rtol=1e-6)
    prec, rec = _top_k_ref(labels[:, 0], scores, 2, None, np.ones(len(labels)))
    np.testing.assert_allclose([final["p_sparse"], final["r_sparse"]], [prec, rec], rtol=1e-6)


def test_value_metrics_over_two_batches():
    rng = np.random.default_rng(5)
    batches = []
    for _ in range(2):
        lab = rng.normal(size=(6, 3)).astype(np.float32)
        pred = (lab + 0.3 * rng.normal(size=(6, 3))).astype(np.float32)
        norm = np.where(rng.random((6, 3)) < 0.2, 0.0, rng.uniform(0.5, 2, (6, 3)))
        w = rng.choice([0.0, 1.0, 3.0], (6, 1)).astype(np.float32)
        batches.append((lab, pred, norm.astype(np.float32), w))
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    g = tf.Graph()
    with g.as_default():
        lab = tf.placeholder(tf.float32, [6, 3])
        pred = tf.placeholder(tf.float32, [6, 3])
        norm = tf.placeholder(tf.float32, [6, 3])
        w = tf.placeholder(tf.float32, [6, 1])
        m = {
            "below": tf.metrics.percentage_below(pred, 0.2),
            "below_w": tf.metrics.percentage_below(pred, 0.2, weights=w),
            "tensor": tf.metrics.mean_tensor(pred),
            "tensor_w": tf.metrics.mean_tensor(pred, weights=w),
            "cos": tf.metrics.mean_cosine_distance(tf.nn.l2_normalize(lab, 1),
                                                   tf.nn.l2_normalize(pred, 1), dim=1),
            "cos_w": tf.metrics.mean_cosine_distance(tf.nn.l2_normalize(lab, 1),
                                                     tf.nn.l2_normalize(pred, 1), dim=1,
                                                     weights=w),
            "rel": tf.metrics.mean_relative_error(lab, pred, norm),
            "rel_w": tf.metrics.mean_relative_error(lab, pred, norm, weights=w),
        }
        ups, final = _stream(m, [lab, pred, norm, w], batches)
    L, P, N, W = (np.concatenate([b[i] for b in batches]).astype(np.float64) for i in range(4))
    Wb = np.broadcast_to(W, L.shape)
    rel = np.where(N == 0, 0.0, np.abs(L - P) / np.where(N == 0, 1, N))
    dots = np.sum(unit(L) * unit(P), axis=1, keepdims=True)
    want = {
        "below": np.mean(P < 0.2), "below_w": np.sum((P < 0.2) * Wb) / Wb.sum(),
        "tensor": (P[:6] + P[6:]) / 2,
        "tensor_w": (P[:6] * W[:6] + P[6:] * W[6:]) / np.maximum(W[:6] + W[6:], 1e-30)
        * ((W[:6] + W[6:]) > 0),
        "cos": 1 - dots.mean(), "cos_w": 1 - np.sum(dots * W) / W.sum(),
        "rel": rel.mean(), "rel_w": np.sum(rel * Wb) / Wb.sum(),
    }
    for k, v in want.items():
        np.testing.assert_allclose(final[k], v, rtol=1e-5, atol=1e-6, err_msg=k)
        np.testing.assert_allclose(ups[k], v, rtol=1e-5, atol=1e-6, err_msg=k)


def test_threshold_metrics_over_two_batches():
    rng = np.random.default_rng(6)
    batches = []
    for _ in range(2):
        y = rng.integers(0, 2, 40)
        sc = np.clip(0.4 * y + 0.6 * rng.random(40), 0, 1).astype(np.float32)
        w = rng.choice([0.0, 1.0, 2.0], 40).astype(np.float32)
        batches.append((y.astype(np.bool_), sc, w))
    th = [0.0, 0.25, 0.5, 0.9]
    g = tf.Graph()
    with g.as_default():
        y = tf.placeholder(tf.bool, [None])
        sc = tf.placeholder(tf.float32, [None])
        w = tf.placeholder(tf.float32, [None])
        m = {
            "tp": tf.metrics.true_positives_at_thresholds(y, sc, th),
            "fp": tf.metrics.false_positives_at_thresholds(y, sc, th, weights=w),
            "fn": tf.metrics.false_negatives_at_thresholds(y, sc, th),
            "tn": tf.metrics.true_negatives_at_thresholds(y, sc, th, weights=w),
            "sens": tf.metrics.sensitivity_at_specificity(y, sc, 0.7, num_thresholds=50),
            "spec": tf.metrics.specificity_at_sensitivity(y, sc, 0.8, weights=w,
                                                          num_thresholds=50),
        }
        _, final = _stream(m, [y, sc, w], batches)
    Y = np.concatenate([b[0] for b in batches])
    S = np.concatenate([b[1] for b in batches])
    W = np.concatenate([b[2] for b in batches])

    def counts(thresholds, wt):
        above = S[:, None] > np.asarray(thresholds, np.float32)[None, :]
        pos = Y[:, None]
        wt = wt[:, None]
        return {"tp": np.sum((above & pos) * wt, 0), "fp": np.sum((above & ~pos) * wt, 0),
                "fn": np.sum((~above & pos) * wt, 0), "tn": np.sum((~above & ~pos) * wt, 0)}

    ones = np.ones_like(W)
    np.testing.assert_allclose(final["tp"], counts(th, ones)["tp"])
    np.testing.assert_allclose(final["fp"], counts(th, W)["fp"])
    np.testing.assert_allclose(final["fn"], counts(th, ones)["fn"])
    np.testing.assert_allclose(final["tn"], counts(th, W)["tn"])
    eps = 1e-7
    grid = [-eps] + [(i + 1) / 49.0 for i in range(48)] + [1 + eps]
    c = counts(grid, ones)
    spec = c["tn"] / (c["tn"] + c["fp"] + eps)
    i = np.argmin(np.abs(spec - 0.7))
    np.testing.assert_allclose(final["sens"], c["tp"][i] / (c["tp"][i] + c["fn"][i] + eps),
                               rtol=1e-5)
    c = counts(grid, W)
    gap = np.abs(c["tp"] / (c["tp"] + c["fn"] + eps) - 0.8)
    i = np.flatnonzero(gap == gap.min())[-1]
    np.testing.assert_allclose(final["spec"], c["tn"][i] / (c["tn"][i] + c["fp"][i] + eps),
                               rtol=1e-5)


def test_nn_composites_against_numpy():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 4, 6, 3)).astype(np.float32)
    targets = np.array([0.0, 0.5, 1.0, 2.0, 7.0], np.float32)
    log_input = rng.normal(size=5).astype(np.float32)
    fw = rng.uniform(0.0, 2.0, (2, 4, 6, 1)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x)
        counts, m_ss, v_ss, shift = tf.nn.sufficient_statistics(xt, [0, 1, 2], shift=0.5)
        counts0, m0, v0, _ = tf.nn.sufficient_statistics(xt, [1], keepdims=True)
        out = {
            "crelu": tf.nn.crelu(xt),
            "poisson": tf.nn.log_poisson_loss(targets, log_input),
            "poisson_full": tf.nn.log_poisson_loss(targets, log_input, compute_full_loss=True),
            "stats": (counts, m_ss, v_ss),
            "stats0": (counts0, m0, v0),
            "moments": tf.nn.normalize_moments(counts, m_ss, v_ss, shift),
            "weighted": tf.nn.weighted_moments(xt, [0, 1, 2], fw),
            "weighted_keep": tf.nn.weighted_moments(xt, [1, 2], fw, keepdims=True),
            "bn": tf.nn.batch_norm_with_global_normalization(
                xt, np.float32([0.1, 0.2, 0.3]), np.float32([1.0, 2.0, 0.5]),
                np.float32([0.0, 1.0, -1.0]), np.float32([2.0, 0.5, 1.0]), 1e-3, True),
            "bn_unscaled": tf.nn.batch_norm_with_global_normalization(
                xt, np.float32([0.1, 0.2, 0.3]), np.float32([1.0, 2.0, 0.5]),
                np.float32([0.0, 1.0, -1.0]), np.float32([2.0, 0.5, 1.0]), 1e-3, False),
            "max": tf.nn.pool(xt, [2, 3], "MAX", "VALID", strides=[2, 3]),
            "avg": tf.nn.pool(xt, [2, 2], "AVG", "VALID", strides=[2, 2]),
            "max1d": tf.nn.pool(tf.constant(x[:, 0]), [2], "MAX", "VALID", strides=[2]),
        }
        with pytest.raises(ValueError, match="dilat"):
            tf.nn.pool(xt, [2, 2], "MAX", "VALID", dilation_rate=[2, 2])
        got = _run(out)
    np.testing.assert_allclose(got["crelu"], np.concatenate([np.maximum(x, 0),
                                                             np.maximum(-x, 0)], -1))
    base = np.exp(log_input) - log_input * targets
    t = targets.astype(np.float64)
    stirling = np.where(t > 1, t * np.log(np.maximum(t, 1)) - t
                        + 0.5 * np.log(2 * np.pi * np.maximum(t, 1)), 0.0)
    np.testing.assert_allclose(got["poisson"], base, rtol=1e-6)
    np.testing.assert_allclose(got["poisson_full"], base + stirling, rtol=1e-5)
    c, m, v = got["stats"]
    assert c == 48
    np.testing.assert_allclose(m, (x - 0.5).sum((0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(v, ((x - 0.5) ** 2).sum((0, 1, 2)), rtol=1e-5)
    c0, m0, v0 = got["stats0"]
    assert c0 == 4 and m0.shape == (2, 1, 6, 3)
    np.testing.assert_allclose(m0, x.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v0, (x ** 2).sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(got["moments"][0], x.mean((0, 1, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["moments"][1], x.var((0, 1, 2)), rtol=1e-4)
    wb = np.broadcast_to(fw, x.shape)
    for key, axes, keep in (("weighted", (0, 1, 2), False), ("weighted_keep", (1, 2), True)):
        wm = (wb * x).sum(axes, keepdims=True) / wb.sum(axes, keepdims=True)
        wv = (wb * (x - wm) ** 2).sum(axes, keepdims=True) / wb.sum(axes, keepdims=True)
        if not keep:
            wm, wv = wm.reshape(-1), wv.reshape(-1)
        np.testing.assert_allclose(got[key][0], wm, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[key][1], wv, rtol=1e-4, atol=1e-6)
    norm = (x - [0.1, 0.2, 0.3]) / np.sqrt(np.float32([1.0, 2.0, 0.5]) + 1e-3)
    np.testing.assert_allclose(got["bn"], norm * [2.0, 0.5, 1.0] + [0.0, 1.0, -1.0],
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["bn_unscaled"], norm + [0.0, 1.0, -1.0], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(got["max"], x.reshape(2, 2, 2, 2, 3, 3).max((2, 4)))
    np.testing.assert_allclose(got["avg"], x.reshape(2, 2, 2, 3, 2, 3).mean((2, 4)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["max1d"], x[:, 0].reshape(2, 3, 2, 3).max(2))


def test_precision_and_recall_at_top_k_take_ranked_class_ids():
    # Missing before (AttributeError): the at_k metrics of classes already ranked best first.
    scores = np.random.RandomState(3).rand(6, 5).astype(np.float32)
    labels = np.random.RandomState(4).randint(0, 5, size=(6, 1)).astype(np.int64)
    ranked = np.argsort(-scores, axis=1).astype(np.int64)
    with tf.Graph().as_default():
        pairs = [(tf.metrics.recall_at_top_k(labels, ranked, k=2)[1],
                  tf.metrics.recall_at_k(labels, scores, 2)[1]),
                 (tf.metrics.precision_at_top_k(labels, ranked[:, :3])[1],
                  tf.metrics.precision_at_k(labels, scores, 3)[1]),
                 (tf.metrics.recall_at_top_k(labels, ranked, k=2, class_id=1)[1],
                  tf.metrics.recall_at_k(labels, scores, 2, class_id=1)[1])]
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            for top, scored in pairs:
                a, b = sess.run([top, scored])
                np.testing.assert_allclose(a, b, equal_nan=True)
