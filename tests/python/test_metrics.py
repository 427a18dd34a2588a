"""sf.metrics (TF1's tf.metrics): streaming values over several batches against NumPy."""
import numpy as np
import pytest

import shardflow as tf


def _batches(n=3, size=50, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        labels = rng.integers(0, 2, size)
        scores = np.clip(0.35 * labels + rng.random(size) * 0.65, 0, 1).astype(np.float32)
        yield labels.astype(np.int64), scores


def test_streaming_metrics_match_numpy_over_batches():
    g = tf.Graph()
    with g.as_default():
        y = tf.placeholder(tf.int64, [None])
        p = tf.placeholder(tf.float32, [None])
        w = tf.placeholder(tf.float32, [None])
        pred = tf.cast(p > 0.5, tf.int64)
        m = {
            "accuracy": tf.metrics.accuracy(y, pred),
            "weighted_accuracy": tf.metrics.accuracy(y, pred, weights=w),
            "mean": tf.metrics.mean(p),
            "precision": tf.metrics.precision(y, pred),
            "recall": tf.metrics.recall(y, pred),
            "mse": tf.metrics.mean_squared_error(tf.cast(y, tf.float32), p),
            "rmse": tf.metrics.root_mean_squared_error(tf.cast(y, tf.float32), p),
            "mae": tf.metrics.mean_absolute_error(tf.cast(y, tf.float32), p),
            "tp": tf.metrics.true_positives(y, pred),
            "auc": tf.metrics.auc(y, p),
        }
        # Metric state is local: not trained, not saved.
        assert not tf.trainable_variables() and not tf.global_variables()
        assert len(tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)) == len(tf.local_variables())
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            assert s.run(m["accuracy"][0]) == 0.0      # nothing seen yet: 0, not NaN
            ys, ps, ws = [], [], []
            for i, (lv, sv) in enumerate(_batches()):
                wv = np.where(np.arange(len(lv)) % 3 == 0, 0.0, 1.0).astype(np.float32)
                ups = s.run({k: v[1] for k, v in m.items()}, {y: lv, p: sv, w: wv})
                ys.append(lv), ps.append(sv), ws.append(wv)
            final = s.run({k: v[0] for k, v in m.items()})
            # Resetting the local variables starts over.
            s.run(tf.local_variables_initializer())
            assert s.run(m["mean"][0]) == 0.0
    yv, pv, wv = np.concatenate(ys), np.concatenate(ps), np.concatenate(ws)
    pred_v = (pv > 0.5).astype(np.int64)
    tp = np.sum((pred_v == 1) & (yv == 1))
    want = {
        "accuracy": np.mean(pred_v == yv),
        "weighted_accuracy": np.sum((pred_v == yv) * wv) / np.sum(wv),
        "mean": np.mean(pv),
        "precision": tp / np.sum(pred_v == 1),
        "recall": tp / np.sum(yv == 1),
        "mse": np.mean((yv - pv) ** 2),
        "rmse": np.sqrt(np.mean((yv - pv) ** 2)),
        "mae": np.mean(np.abs(yv - pv)),
        "tp": tp,
    }
    for k, v in want.items():
        assert final[k] == pytest.approx(v, rel=1e-5), k
        assert ups[k] == pytest.approx(v, rel=1e-5), k     # update_op returns the new value
    # ROC AUC exactly: the chance that a positive outscores a negative (ties count half).
    pos, neg = pv[yv == 1], pv[yv == 0]
    exact = (np.sum(pos[:, None] > neg[None, :]) + 0.5 * np.sum(pos[:, None] == neg[None, :])) \
        / (len(pos) * len(neg))
    assert final["auc"] == pytest.approx(exact, abs=0.01)
    assert 0.7 < final["auc"] < 1.0


def test_metrics_bad_input_is_a_clear_error():
    g = tf.Graph()
    with g.as_default():
        with pytest.raises(ValueError, match="different shapes"):
            tf.metrics.accuracy(tf.constant([1, 2, 3]), tf.constant([[1, 2, 3]]))
        with pytest.raises(ValueError, match="curve"):
            tf.metrics.auc(tf.constant([1]), tf.constant([0.5]), curve="XY")
