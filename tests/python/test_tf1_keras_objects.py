"""tf.keras loss and metric classes and constraints (shardflow/keras/losses.py, metrics.py,
constraints.py) against NumPy: every loss class (from_logits, label_smoothing, sample_weight,
reductions), the new loss functions and their gradients, the stateful metrics over two
batches (AUC against a NumPy trapezoid on the same thresholds), compile/fit/evaluate with
loss and metric objects, and max_norm / non_neg / unit_norm / min_max_norm constraints."""

import numpy as np
import pytest

import shardflow as tf
from shardflow import keras

from grad_check import check_gradient

K = keras.backend
EPS = 1e-7


@pytest.fixture(autouse=True)
def fresh_graph():
    K.clear_session()
    yield
    K.clear_session()


def _run(t, feed=None):
    return K.get_session().run(t, feed)


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# ---- NumPy references (per example, reduced over the last axis) ----------------------------


def _np_bce(y, p):
    p = np.clip(p, EPS, 1 - EPS)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(-1)


def _np_hinge_labels(y):
    return 2 * y - 1 if np.all((y == 0) | (y == 1)) else y


def _np_logcosh(y, p):
    return np.log(np.cosh(p - y)).mean(-1)


NP_FUNCTIONS = {
    "mean_squared_error": lambda y, p: ((y - p) ** 2).mean(-1),
    "mean_absolute_error": lambda y, p: np.abs(y - p).mean(-1),
    "mean_absolute_percentage_error":
        lambda y, p: 100 * np.abs((y - p) / np.maximum(np.abs(y), EPS)).mean(-1),
    "mean_squared_logarithmic_error":
        lambda y, p: ((np.log(np.maximum(p, EPS) + 1) - np.log(np.maximum(y, EPS) + 1)) ** 2)
        .mean(-1),
    "hinge": lambda y, p: np.maximum(1 - _np_hinge_labels(y) * p, 0).mean(-1),
    "squared_hinge": lambda y, p: (np.maximum(1 - _np_hinge_labels(y) * p, 0) ** 2).mean(-1),
    "categorical_hinge": lambda y, p: np.maximum(
        0, ((1 - y) * p).max(-1) - (y * p).sum(-1) + 1),
    "logcosh": _np_logcosh,
    "poisson": lambda y, p: (p - y * np.log(p + EPS)).mean(-1),
    "kullback_leibler_divergence": lambda y, p: (
        np.clip(y, EPS, 1) * np.log(np.clip(y, EPS, 1) / np.clip(p, EPS, 1))).sum(-1),
}


def _data(rng, kind, shape=(6, 4)):
    """(y_true, y_pred) suited to a loss: positive for logs, one-hot/probabilities for KLD."""
    if kind in ("kullback_leibler_divergence", "categorical_hinge"):
        y = np.eye(shape[-1])[rng.randint(0, shape[-1], shape[0])]
        return y.astype(np.float32), _softmax(rng.randn(*shape)).astype(np.float32)
    if kind in ("hinge", "squared_hinge"):
        return rng.randint(0, 2, shape).astype(np.float32), rng.randn(*shape).astype(np.float32)
    if kind in ("poisson", "mean_squared_logarithmic_error"):
        return rng.rand(*shape).astype(np.float32) * 3, rng.rand(*shape).astype(np.float32) * 3
    return rng.randn(*shape).astype(np.float32), rng.randn(*shape).astype(np.float32)


CLASSES = [("MeanSquaredError", "mean_squared_error"),
           ("MeanAbsoluteError", "mean_absolute_error"),
           ("MeanAbsolutePercentageError", "mean_absolute_percentage_error"),
           ("MeanSquaredLogarithmicError", "mean_squared_logarithmic_error"),
           ("Hinge", "hinge"), ("SquaredHinge", "squared_hinge"),
           ("CategoricalHinge", "categorical_hinge"), ("LogCosh", "logcosh"),
           ("Poisson", "poisson"), ("KLDivergence", "kullback_leibler_divergence")]


@pytest.mark.parametrize("cls_name,fn_name", CLASSES)
def test_loss_classes_match_numpy(cls_name, fn_name):
    rng = np.random.RandomState(1)
    y, p = _data(rng, fn_name)
    w = rng.rand(6).astype(np.float32)
    per = NP_FUNCTIONS[fn_name](y.astype(np.float64), p.astype(np.float64))
    cls = getattr(keras.losses, cls_name)
    obj = cls()
    assert obj.name == fn_name and obj.reduction == keras.losses.Reduction.AUTO
    fn = getattr(keras.losses, fn_name)
    out = _run([fn(tf.constant(y), tf.constant(p)), obj(y, tf.constant(p)),
                obj(y, tf.constant(p), sample_weight=w),
                cls(reduction=keras.losses.Reduction.SUM)(y, tf.constant(p), sample_weight=w),
                cls(reduction="none")(y, tf.constant(p), sample_weight=w)])
    np.testing.assert_allclose(out[0], per, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[1], per.mean(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[2], (per * w).sum() / 6, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[3], (per * w).sum(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[4], per * w, rtol=1e-4, atol=1e-5)


def test_hinge_keeps_signed_labels_and_aliases():
    y = np.array([[-1.0, 1.0, 1.0], [1.0, -1.0, 1.0]], np.float32)
    p = np.array([[0.3, -0.2, 2.0], [0.5, 0.1, -1.0]], np.float32)
    want = np.maximum(1 - y * p, 0).mean(-1)
    np.testing.assert_allclose(_run(keras.losses.hinge(y, tf.constant(p))), want, rtol=1e-6)
    assert keras.losses.mape is keras.losses.mean_absolute_percentage_error
    assert keras.losses.msle is keras.losses.mean_squared_logarithmic_error
    assert keras.losses.get("logcosh") is keras.losses.logcosh
    assert keras.losses.get("poisson") is keras.losses.poisson


def test_crossentropy_classes():
    rng = np.random.RandomState(2)
    z = rng.randn(5, 4).astype(np.float32)
    labels = rng.randint(0, 4, 5)
    onehot = np.eye(4, dtype=np.float32)[labels]
    w = rng.rand(5).astype(np.float32)
    logp = np.log(_softmax(z.astype(np.float64)))
    sce = -logp[np.arange(5), labels]
    s = 0.2
    smooth = onehot * (1 - s) + s / 4
    cce_smooth = -(smooth * logp).sum(-1)
    yb = rng.randint(0, 2, (5, 4)).astype(np.float32)
    bce = _np_bce(yb, _sigmoid(z.astype(np.float64)))
    bce_smooth = _np_bce(yb * (1 - s) + 0.5 * s, _sigmoid(z.astype(np.float64)))
    L = keras.losses
    out = _run([
        L.SparseCategoricalCrossentropy(from_logits=True)(labels, tf.constant(z)),
        L.SparseCategoricalCrossentropy()(labels[:, None], tf.nn.softmax(tf.constant(z)), w),
        L.CategoricalCrossentropy(from_logits=True, label_smoothing=s)(onehot, tf.constant(z)),
        L.CategoricalCrossentropy()(onehot, tf.constant(_softmax(z))),
        L.BinaryCrossentropy(from_logits=True)(yb, tf.constant(z)),
        L.BinaryCrossentropy(label_smoothing=s)(yb, tf.constant(_sigmoid(z))),
        L.categorical_crossentropy(onehot, tf.constant(z), from_logits=True,
                                   label_smoothing=s),
    ])
    np.testing.assert_allclose(out[0], sce.mean(), rtol=1e-5)
    np.testing.assert_allclose(out[1], (sce * w).sum() / 5, rtol=1e-4)
    np.testing.assert_allclose(out[2], cce_smooth.mean(), rtol=1e-5)
    np.testing.assert_allclose(out[3], sce.mean(), rtol=1e-4)
    np.testing.assert_allclose(out[4], bce.mean(), rtol=1e-5)
    np.testing.assert_allclose(out[5], bce_smooth.mean(), rtol=1e-4)
    np.testing.assert_allclose(out[6], cce_smooth, rtol=1e-5)


def test_huber_and_cosine_classes():
    rng = np.random.RandomState(3)
    y, p = rng.randn(4, 3).astype(np.float32) * 2, rng.randn(4, 3).astype(np.float32) * 2
    e = np.abs(p - y)
    d = 1.5
    huber = np.where(e <= d, 0.5 * e ** 2, 0.5 * d ** 2 + d * (e - d)).mean(-1)
    cos = -(y * p).sum(-1) / np.linalg.norm(y, axis=-1) / np.linalg.norm(p, axis=-1)
    out = _run([keras.losses.Huber(delta=d)(y, tf.constant(p), sample_weight=[1., 2., 0., 1.]),
                keras.losses.CosineSimilarity()(y, tf.constant(p))])
    np.testing.assert_allclose(out[0], (huber * [1, 2, 0, 1]).sum() / 4, rtol=1e-5)
    np.testing.assert_allclose(out[1], cos.mean(), rtol=1e-5)


def test_loss_get_serialize_and_errors():
    obj = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
    config = keras.losses.serialize(obj)
    assert config["class_name"] == "CategoricalCrossentropy"
    back = keras.losses.get(config)
    assert isinstance(back, keras.losses.CategoricalCrossentropy)
    assert back.from_logits is True and back.label_smoothing == 0.1
    assert keras.losses.serialize(keras.losses.hinge) == "hinge"
    assert isinstance(keras.losses.get("Hinge"), keras.losses.Hinge)
    assert keras.losses.get(None) is None
    with pytest.raises(ValueError):
        keras.losses.MeanSquaredError(reduction="mean")
    with pytest.raises(ValueError):
        keras.losses.get("no_such_loss")


@pytest.mark.parametrize("fn_name", ["mean_absolute_percentage_error",
                                     "mean_squared_logarithmic_error", "hinge",
                                     "squared_hinge", "categorical_hinge", "logcosh", "poisson"])
def test_loss_function_gradients(fn_name):
    rng = np.random.RandomState(4)
    y, p = _data(rng, fn_name, (3, 4))
    if fn_name in ("hinge", "squared_hinge", "categorical_hinge"):
        p = p + np.sign(p) * 0.1  # keep away from the kinks
    fn = getattr(keras.losses, fn_name)
    check_gradient(lambda t: fn(tf.constant(y.astype(np.float64)), t), p, rng=rng,
                   rtol=1e-4, atol=1e-6)


# ---- stateful metrics -----------------------------------------------------------------------


def _two_batches(metric, batches, extra=()):
    """Runs metric(y_true, y_pred[, sample_weight]) on each batch; returns the results after
    each update and result() at the end."""
    yt = tf.placeholder(tf.float32, [None] + list(batches[0][0].shape[1:]))
    yp = tf.placeholder(tf.float32, [None] + list(batches[0][1].shape[1:]))
    sw = tf.placeholder(tf.float32, [None]) if len(batches[0]) > 2 else None
    out = metric(yt, yp, sample_weight=sw) if sw is not None else metric(yt, yp)
    metric.reset_states()
    after = []
    for b in batches:
        feed = {yt: b[0], yp: b[1]}
        if sw is not None:
            feed[sw] = b[2]
        after.append(_run(out, feed))
    return after, _run(metric.result())


def test_mean_and_sum():
    m, s = keras.metrics.Mean(), keras.metrics.Sum()
    v = tf.placeholder(tf.float32, [None])
    w = tf.placeholder(tf.float32, [None])
    up_m, up_s = m.update_state(v, sample_weight=w), s.update_state(v)
    m.reset_states()
    s.reset_states()
    a, wa, b = np.array([1., 2., 3.]), np.array([1., 0., 2.]), np.array([4., 5.])
    _run([up_m, up_s], {v: a, w: wa})
    _run([up_m, up_s], {v: b, w: [1., 1.]})
    got_m, got_s = _run([m.result(), s.result()])
    np.testing.assert_allclose(got_m, (1 + 6 + 4 + 5) / 5.0, rtol=1e-6)
    np.testing.assert_allclose(got_s, 15.0)
    assert m.name == "mean" and s.name == "sum"
    s.reset_states()
    assert _run(s.result()) == 0.0
    assert all(v in tf.local_variables() for v in m.variables)


def test_accuracy_metrics():
    rng = np.random.RandomState(5)
    p1, p2 = rng.rand(5, 4).astype(np.float32), rng.rand(3, 4).astype(np.float32)
    c1, c2 = rng.randint(0, 4, 5), rng.randint(0, 4, 3)
    o1, o2 = np.eye(4, dtype=np.float32)[c1], np.eye(4, dtype=np.float32)[c2]
    allp, allc = np.concatenate([p1, p2]), np.concatenate([c1, c2])
    # categorical / sparse / top-k
    _, r = _two_batches(keras.metrics.CategoricalAccuracy(), [(o1, p1), (o2, p2)])
    np.testing.assert_allclose(r, (allp.argmax(-1) == allc).mean(), rtol=1e-6)
    _, r = _two_batches(keras.metrics.SparseCategoricalAccuracy(),
                        [(c1[:, None].astype(np.float32), p1),
                         (c2[:, None].astype(np.float32), p2)])
    np.testing.assert_allclose(r, (allp.argmax(-1) == allc).mean(), rtol=1e-6)
    top2 = np.argsort(-allp, -1)[:, :2]
    _, r = _two_batches(keras.metrics.TopKCategoricalAccuracy(k=2), [(o1, p1), (o2, p2)])
    np.testing.assert_allclose(r, np.mean([c in t for c, t in zip(allc, top2)]), rtol=1e-6)
    # binary accuracy with a threshold, sample weights
    y1, y2 = rng.randint(0, 2, (5, 1)).astype(np.float32), rng.randint(0, 2, (3, 1)).astype(
        np.float32)
    q1, q2 = rng.rand(5, 1).astype(np.float32), rng.rand(3, 1).astype(np.float32)
    w1, w2 = rng.rand(5).astype(np.float32), rng.rand(3).astype(np.float32)
    hits = (np.concatenate([q1, q2])[:, 0] > 0.3) == np.concatenate([y1, y2])[:, 0]
    w = np.concatenate([w1, w2])
    after, r = _two_batches(keras.metrics.BinaryAccuracy(threshold=0.3),
                            [(y1, q1, w1), (y2, q2, w2)])
    np.testing.assert_allclose(after[0], (hits[:5] * w1).sum() / w1.sum(), rtol=1e-5)
    np.testing.assert_allclose(r, (hits * w).sum() / w.sum(), rtol=1e-5)
    # element-wise Accuracy
    a1, a2 = np.array([[1.], [2.], [3.]], np.float32), np.array([[4.], [0.]], np.float32)
    _, r = _two_batches(keras.metrics.Accuracy(),
                        [(a1, np.array([[1.], [0.], [3.]], np.float32)),
                         (a2, np.array([[4.], [1.]], np.float32))])
    np.testing.assert_allclose(r, 3 / 5.0)


def test_regression_metrics():
    rng = np.random.RandomState(6)
    b = [(rng.randn(4, 3).astype(np.float32), rng.randn(4, 3).astype(np.float32))
         for _ in range(2)]
    y = np.concatenate([x[0] for x in b])
    p = np.concatenate([x[1] for x in b])
    _, r = _two_batches(keras.metrics.MeanSquaredError(), b)
    np.testing.assert_allclose(r, ((y - p) ** 2).mean(), rtol=1e-5)
    _, r = _two_batches(keras.metrics.MeanAbsoluteError(), b)
    np.testing.assert_allclose(r, np.abs(y - p).mean(), rtol=1e-5)
    _, r = _two_batches(keras.metrics.RootMeanSquaredError(), b)
    np.testing.assert_allclose(r, np.sqrt(((y - p) ** 2).mean()), rtol=1e-5)


def _np_counts(y, p, thresholds, w=None):
    w = np.ones_like(p) if w is None else w
    above = p[:, None] > np.asarray(thresholds)[None, :]
    pos = (y != 0)[:, None]
    ww = w[:, None]
    return {"tp": ((above & pos) * ww).sum(0),
            "fp": ((above & ~pos) * ww).sum(0), "fn": ((~above & pos) * ww).sum(0),
            "tn": ((~above & ~pos) * ww).sum(0)}


def _binary_batches(rng, n=(7, 9)):
    out = []
    for k in n:
        out.append((rng.randint(0, 2, (k, 1)).astype(np.float32),
                    rng.rand(k, 1).astype(np.float32), rng.rand(k).astype(np.float32)))
    return out


def test_confusion_metrics():
    rng = np.random.RandomState(7)
    b = _binary_batches(rng)
    y = np.concatenate([x[0] for x in b])[:, 0]
    p = np.concatenate([x[1] for x in b])[:, 0]
    w = np.concatenate([x[2] for x in b])
    c = _np_counts(y, p, [0.5], w)
    for cls, kind in [(keras.metrics.TruePositives, "tp"), (keras.metrics.FalsePositives, "fp"),
                      (keras.metrics.TrueNegatives, "tn"), (keras.metrics.FalseNegatives, "fn")]:
        after, r = _two_batches(cls(), b)
        assert np.shape(r) == ()
        np.testing.assert_allclose(r, c[kind][0], rtol=1e-5)
    th = [0.2, 0.5, 0.8]
    c = _np_counts(y, p, th, w)
    _, r = _two_batches(keras.metrics.TruePositives(thresholds=th), b)
    np.testing.assert_allclose(r, c["tp"], rtol=1e-5)
    _, r = _two_batches(keras.metrics.Precision(thresholds=th), b)
    np.testing.assert_allclose(r, c["tp"] / (c["tp"] + c["fp"]), rtol=1e-5)
    _, r = _two_batches(keras.metrics.Recall(thresholds=th), b)
    np.testing.assert_allclose(r, c["tp"] / (c["tp"] + c["fn"]), rtol=1e-5)
    c1 = _np_counts(y, p, [0.5])
    _, r = _two_batches(keras.metrics.Precision(), [x[:2] for x in b])
    np.testing.assert_allclose(r, c1["tp"][0] / (c1["tp"][0] + c1["fp"][0]), rtol=1e-5)
    assert keras.metrics.Precision().name.startswith("precision")
    with pytest.raises(ValueError):
        keras.metrics.Recall(thresholds=[1.5])


def test_precision_top_k_and_class_id():
    y = np.array([[0, 1, 1, 0], [1, 0, 0, 1]], np.float32)
    p = np.array([[0.9, 0.8, 0.3, 0.1], [0.2, 0.7, 0.6, 0.65]], np.float32)
    # top 2 of each row: {0, 1} and {1, 3}: tp = 1 + 1, fp = 1 + 1
    _, r = _two_batches(keras.metrics.Precision(top_k=2), [(y, p)])
    np.testing.assert_allclose(r, 0.5)
    # class 3 only: predictions 0.1 (label 0), 0.65 (label 1) at 0.5: tp 1, fp 0, fn 0
    _, r = _two_batches(keras.metrics.Recall(class_id=3), [(y, p)])
    np.testing.assert_allclose(r, 1.0)


def _np_auc(y, p, w, n, curve):
    th = [-EPS] + [(i + 1) / (n - 1.0) for i in range(n - 2)] + [1 + EPS]
    c = _np_counts(y, p, th, w)
    tp, fp, fn, tn = c["tp"], c["fp"], c["fn"], c["tn"]

    def div(a, b):
        return np.where(b > 0, a / np.where(b > 0, b, 1), 0.0)
    if curve == "ROC":
        x, yy = div(fp, fp + tn), div(tp, tp + fn)
        return np.sum((x[:-1] - x[1:]) * (yy[:-1] + yy[1:]) / 2)
    # TF's PR interpolation (Davis & Goadrich)
    dtp = tp[:-1] - tp[1:]
    pp = tp + fp
    slope = div(dtp, np.maximum(pp[:-1] - pp[1:], 0))
    intercept = tp[1:] - slope * pp[1:]
    ratio = np.where((pp[:-1] > 0) & (pp[1:] > 0), div(pp[:-1], np.maximum(pp[1:], 0)), 1.0)
    return np.sum(div(slope * (dtp + intercept * np.log(ratio)),
                      np.maximum(tp[1:] + fn[1:], 0)))


@pytest.mark.parametrize("curve", ["ROC", "PR"])
def test_auc(curve):
    rng = np.random.RandomState(8)
    b = _binary_batches(rng, (30, 25))
    y = np.concatenate([x[0] for x in b])[:, 0]
    p = np.concatenate([x[1] for x in b])[:, 0]
    w = np.concatenate([x[2] for x in b])
    for n in (200, 7):
        after, r = _two_batches(keras.metrics.AUC(num_thresholds=n, curve=curve), b)
        np.testing.assert_allclose(after[0], _np_auc(y[:30], p[:30], w[:30], n, curve),
                                   rtol=1e-4)
        np.testing.assert_allclose(r, _np_auc(y, p, w, n, curve), rtol=1e-4)
    if curve == "ROC":  # many thresholds: the exact ROC AUC (probability of a right order)
        pos, neg = p[y == 1], p[y == 0]
        wpos, wneg = w[y == 1], w[y == 0]
        exact = (wpos[:, None] * wneg[None, :] * (pos[:, None] > neg[None, :])).sum() / (
            wpos.sum() * wneg.sum())
        _, r = _two_batches(keras.metrics.AUC(num_thresholds=2000), b)
        np.testing.assert_allclose(r, exact, atol=2e-3)
    with pytest.raises(ValueError):
        keras.metrics.AUC(curve="XY")


def test_mean_iou():
    y1, p1 = np.array([0, 1, 2, 1], np.float32), np.array([0, 1, 1, 1], np.float32)
    y2, p2 = np.array([2, 0], np.float32), np.array([2, 2], np.float32)
    y, p = np.concatenate([y1, y2]).astype(int), np.concatenate([p1, p2]).astype(int)
    cm = np.zeros((3, 3))
    np.add.at(cm, (y, p), 1)
    inter = np.diag(cm)
    union = cm.sum(0) + cm.sum(1) - inter
    metric = keras.metrics.MeanIoU(num_classes=3)
    assert metric.name == "mean_io_u"
    _, r = _two_batches(metric, [(y1, p1), (y2, p2)])
    np.testing.assert_allclose(r, np.mean(inter / union), rtol=1e-6)


def test_call_accumulates_and_reset():
    m = keras.metrics.MeanAbsoluteError()
    yt, yp = tf.placeholder(tf.float32, [None, 1]), tf.placeholder(tf.float32, [None, 1])
    out = m(yt, yp)
    m.reset_states()
    assert _run(out, {yt: [[0.], [0.]], yp: [[1.], [3.]]}) == 2.0
    assert _run(out, {yt: [[0.]], yp: [[5.]]}) == 3.0
    m.reset_states()
    assert _run(out, {yt: [[0.]], yp: [[7.]]}) == 7.0


# ---- compile / fit / evaluate with objects --------------------------------------------------


def test_model_with_loss_and_metric_objects():
    rng = np.random.RandomState(9)
    x = rng.randn(96, 4).astype(np.float32)
    y = (x[:, 0] - x[:, 2] > 0).astype(np.int32)
    model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(2)])
    xent = keras.metrics.SparseCategoricalCrossentropy(name="xent", from_logits=True)
    model.compile(keras.optimizers.Adam(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy", keras.metrics.SparseCategoricalAccuracy(), xent])
    assert model.metrics_names == ["loss", "acc", "sparse_categorical_accuracy", "xent"]
    hist = model.fit(x, y, batch_size=16, epochs=4, verbose=0, validation_split=0.25)
    h = hist.history
    for key in ("loss", "acc", "sparse_categorical_accuracy", "xent", "val_loss",
                "val_sparse_categorical_accuracy", "val_xent"):
        assert len(h[key]) == 4, key
    assert h["loss"][-1] < h["loss"][0]
    # the stateful accuracy over an epoch equals the size-weighted mean of the batch ones
    np.testing.assert_allclose(h["sparse_categorical_accuracy"], h["acc"], atol=1e-6)
    np.testing.assert_allclose(h["val_sparse_categorical_accuracy"], h["val_acc"], atol=1e-6)
    np.testing.assert_allclose(h["val_xent"], h["val_loss"], rtol=1e-5)
    # evaluate resets the state: its values are those of the whole set in one pass
    logits = model.predict(x)
    loss, acc, sacc, xent_value = model.evaluate(x, y, batch_size=20, verbose=0)
    logp = np.log(_softmax(logits.astype(np.float64)))
    np.testing.assert_allclose(loss, -logp[np.arange(96), y].mean(), rtol=1e-4)
    np.testing.assert_allclose(xent_value, loss, rtol=1e-5)
    np.testing.assert_allclose(sacc, (logits.argmax(-1) == y).mean(), rtol=1e-6)
    again = model.evaluate(x, y, batch_size=32, verbose=0)
    np.testing.assert_allclose(again, [loss, acc, sacc, xent_value], rtol=1e-5)
    assert 0.5 < acc <= 1.0


def test_model_binary_loss_object_picks_binary_accuracy():
    rng = np.random.RandomState(10)
    x = rng.randn(64, 3).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(1, activation="sigmoid", input_shape=(3,))])
    model.compile(keras.optimizers.SGD(0.5), loss=keras.losses.BinaryCrossentropy(),
                  metrics=["accuracy", keras.metrics.AUC(), keras.metrics.Precision()])
    h = model.fit(x, y, batch_size=16, epochs=3, verbose=0).history
    assert h["loss"][-1] < h["loss"][0]
    loss, acc, auc_value, prec = model.evaluate(x, y, verbose=0)
    p = model.predict(x)[:, 0]
    np.testing.assert_allclose(acc, ((p > 0.5) == y[:, 0]).mean(), rtol=1e-6)
    np.testing.assert_allclose(auc_value, _np_auc(y[:, 0], p, np.ones(64), 200, "ROC"),
                               rtol=1e-4)
    pred = p > 0.5
    np.testing.assert_allclose(prec, (pred & (y[:, 0] > 0)).sum() / max(pred.sum(), 1),
                               rtol=1e-5)
    # train_on_batch reports the batch alone (state reset after each call)
    model.train_on_batch(x[:8], y[:8])
    out = model.train_on_batch(x[8:16], y[8:16])
    assert len(out) == 4
    # test_on_batch(reset_metrics=False) accumulates: two halves give the whole set's AUC
    full = model.evaluate(x, y, verbose=0)
    first = model.test_on_batch(x[:32], y[:32])
    model.reset_metrics()
    np.testing.assert_allclose(model.test_on_batch(x[:32], y[:32], reset_metrics=False),
                               first, rtol=1e-6)
    both = model.test_on_batch(x[32:], y[32:], reset_metrics=False)
    np.testing.assert_allclose(both[2:], full[2:], rtol=1e-5)


# ---- constraints -----------------------------------------------------------------------------


def test_constraint_functions():
    rng = np.random.RandomState(11)
    w = rng.randn(4, 3).astype(np.float32) * 2
    norms = np.sqrt((w ** 2).sum(0, keepdims=True))
    C = keras.constraints
    out = _run([C.max_norm(1.5)(tf.constant(w)), C.NonNeg()(tf.constant(w)),
                C.unit_norm()(tf.constant(w)), C.MinMaxNorm(1.0, 2.0, rate=0.5)(tf.constant(w)),
                C.MaxNorm(1.0, axis=1)(tf.constant(w))])
    np.testing.assert_allclose(out[0], w * np.clip(norms, 0, 1.5) / (norms + EPS), rtol=1e-5)
    np.testing.assert_allclose(out[1], np.maximum(w, 0))
    np.testing.assert_allclose(out[2], w / (norms + EPS), rtol=1e-5)
    desired = 0.5 * np.clip(norms, 1.0, 2.0) + 0.5 * norms
    np.testing.assert_allclose(out[3], w * desired / (norms + EPS), rtol=1e-5)
    rn = np.sqrt((w ** 2).sum(1, keepdims=True))
    np.testing.assert_allclose(out[4], w * np.clip(rn, 0, 1) / (rn + EPS), rtol=1e-5)
    assert isinstance(C.get("max_norm"), C.MaxNorm)
    assert isinstance(C.get({"class_name": "UnitNorm", "config": {"axis": 1}}), C.UnitNorm)
    assert C.get(None) is None
    with pytest.raises(ValueError):
        C.get(3)


def test_max_norm_dense_and_non_neg_bias_after_fit():
    rng = np.random.RandomState(12)
    x = rng.randn(64, 5).astype(np.float32) * 3
    y = x @ rng.randn(5, 3).astype(np.float32) * 4 - 2.0
    layer = keras.layers.Dense(3, input_shape=(5,), kernel_initializer="ones",
                               kernel_constraint=keras.constraints.max_norm(0.7),
                               bias_constraint="non_neg")
    model = keras.Sequential([layer])
    model.compile(keras.optimizers.SGD(0.05), loss=keras.losses.MeanSquaredError())
    assert isinstance(layer.kernel_constraint, keras.constraints.MaxNorm)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    kernel, bias = layer.get_weights()
    assert np.all(np.linalg.norm(kernel, axis=0) <= 0.7 + 1e-5)
    assert np.all(bias >= 0)
    # a wrapped tf.train optimizer applies them too
    model.compile(tf.train.GradientDescentOptimizer(0.05), loss="mse")
    layer.set_weights([np.ones((5, 3), np.float32) * 2, -np.ones(3, np.float32)])
    model.train_on_batch(x[:16], y[:16])
    kernel, bias = layer.get_weights()
    assert np.all(np.linalg.norm(kernel, axis=0) <= 0.7 + 1e-5)
    assert np.all(bias >= 0)


def test_conv_and_embedding_constraints():
    conv = keras.layers.Conv2D(2, 3, kernel_constraint=keras.constraints.UnitNorm(
        axis=[0, 1, 2]), input_shape=(6, 6, 1))
    emb = keras.layers.Embedding(10, 4, embeddings_constraint=keras.constraints.NonNeg(),
                                 input_length=3)
    m1 = keras.Sequential([conv, keras.layers.Flatten(), keras.layers.Dense(1)])
    m1.compile("sgd", "mse")
    m1.train_on_batch(np.random.RandomState(0).randn(4, 6, 6, 1), np.ones((4, 1)))
    k = conv.get_weights()[0]
    np.testing.assert_allclose(np.sqrt((k ** 2).sum((0, 1, 2))), 1.0, rtol=1e-4)
    m2 = keras.Sequential([emb, keras.layers.Flatten(), keras.layers.Dense(1)])
    m2.compile(keras.optimizers.SGD(1.0), "mse")
    m2.train_on_batch(np.array([[1, 2, 3], [4, 5, 6]]), np.array([[-50.], [50.]]))
    assert np.all(emb.get_weights()[0] >= 0)
    c1 = keras.layers.Conv1D(2, 2, kernel_constraint="max_norm", input_shape=(5, 2))
    assert isinstance(c1.kernel_constraint, keras.constraints.MaxNorm)


def test_get_updates_for_the_tensor_a_model_was_called_on():
    # TF1's pattern for a Keras model called on a tensor of one's own: run the batch norm's
    # updates for that call only (model.updates also holds those made on the model's own Input
    # placeholder, which would then need feeding).
    g = tf.Graph()
    with g.as_default():
        model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)),
                                     tf.keras.layers.BatchNormalization(momentum=0.5)])
        x = tf.placeholder(tf.float32, [None, 3])
        y = model(x, training=True)
        mine = model.get_updates_for(x)
        assert len(mine) == 2 and all(u in model.updates for u in mine)
        assert model.get_updates_for(None) == []
        assert model.layers[1].get_updates_for(x) == mine
        with tf.control_dependencies(mine):
            step = tf.identity(tf.reduce_sum(y))
        moving_mean = model.layers[1].moving_mean
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(step, {x: np.ones((5, 3), np.float32)})  # only x is fed
        assert np.abs(sess.run(moving_mean)).sum() > 0
