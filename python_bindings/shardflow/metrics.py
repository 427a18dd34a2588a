"""Streaming metrics, as TF1's tf.metrics: each returns (value, update_op).

The running totals live in local variables (collections LOCAL_VARIABLES and METRIC_VARIABLES,
so sf.local_variables_initializer() resets them and a Saver does not save them). Run update_op
on each batch, then read value; update_op itself returns the value after that batch::

    acc, acc_update = sf.metrics.accuracy(labels=y, predictions=sf.argmax(logits, 1))
    sess.run(sf.local_variables_initializer())
    for batch in test_batches:
        sess.run(acc_update, {x: batch.x, y: batch.y})
    print(sess.run(acc))

`weights` (broadcastable to the values) weigh each element; a weight of 0 leaves it out.
A metric over no elements is 0 (TF1's div_no_nan), not NaN.
"""

import numpy as np

from shardflow import dtypes, ops
from shardflow.array_ops import where
from shardflow.framework import (GraphKeys, Tensor, add_to_collection, control_dependencies,
                                 convert_to_tensor, get_default_graph)
from shardflow.variables import Variable

METRIC_VARIABLES = "metric_variables"
GraphKeys.METRIC_VARIABLES = METRIC_VARIABLES


def _tensor(x, dtype=None):
    if isinstance(x, Variable):
        x = x.value()
    if not isinstance(x, Tensor):
        x = convert_to_tensor(np.asarray(x) if dtype is None
                              else np.asarray(x, dtype.as_numpy_dtype))
    if dtype is not None and x.dtype != dtype:
        x = ops.cast(x, dtype)
    return x


def _metric_variable(shape, name, dtype=dtypes.float32):
    return Variable(np.zeros(shape, dtype.as_numpy_dtype), name=name, trainable=False,
                    dtype=dtype, collections=[GraphKeys.LOCAL_VARIABLES, METRIC_VARIABLES])


def _div_no_nan(num, den):
    """num / den, and 0 where den is 0."""
    safe = where(ops.greater(den, 0.0), den, ops.ones_like(den))
    return where(ops.greater(den, 0.0), ops.divide(num, safe), ops.zeros_like(num))


def _weights_like(values, weights):
    if weights is None:
        return ops.ones_like(values)
    return ops.multiply(ops.ones_like(values), _tensor(weights, values.dtype))


def _collect(value, update, metrics_collections, updates_collections):
    for c in metrics_collections or ():
        add_to_collection(c, value)
    for c in updates_collections or ():
        add_to_collection(c, update)
    return value, update


def _check_same_shape(a, b, what):
    sa, sb = a.shape, b.shape
    if sa.ndims is not None and sb.ndims is not None:
        la, lb = sa.as_list(), sb.as_list()
        ok = len(la) == len(lb) and all(x is None or y is None or x == y for x, y in zip(la, lb))
        if not ok:
            raise ValueError("%s: labels %s and predictions %s have different shapes"
                             % (what, la, lb))


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of every element of `values` seen so far."""
    g = get_default_graph()
    with g.name_scope(name or "mean"):
        values = _tensor(values, dtypes.float32)
        w = _weights_like(values, weights)
        total = _metric_variable([], "total")
        count = _metric_variable([], "count")
        add_total = total.assign_add(ops.reduce_sum(ops.multiply(values, w)))
        add_count = count.assign_add(ops.reduce_sum(w))
        value = _div_no_nan(total.value(), count.value())
        with control_dependencies([add_total, add_count]):
            update = _div_no_nan(ops.identity(add_total), ops.identity(add_count))
    return _collect(value, update, metrics_collections, updates_collections)


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The share of elements where predictions equal labels (e.g. class indices from argmax)."""
    labels = _tensor(labels)
    predictions = _tensor(predictions)
    _check_same_shape(labels, predictions, "accuracy")
    if labels.dtype != predictions.dtype:
        predictions = ops.cast(predictions, labels.dtype)
    hits = ops.cast(ops.equal(labels, predictions), dtypes.float32)
    return mean(hits, weights, metrics_collections, updates_collections, name or "accuracy")


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    labels, predictions = _tensor(labels, dtypes.float32), _tensor(predictions, dtypes.float32)
    _check_same_shape(labels, predictions, "mean_squared_error")
    return mean(ops.squared_difference(labels, predictions), weights, metrics_collections,
                updates_collections, name or "mean_squared_error")


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    labels, predictions = _tensor(labels, dtypes.float32), _tensor(predictions, dtypes.float32)
    _check_same_shape(labels, predictions, "mean_absolute_error")
    return mean(ops.abs(ops.subtract(labels, predictions)), weights, metrics_collections,
                updates_collections, name or "mean_absolute_error")


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    value, update = mean_squared_error(labels, predictions, weights, None, None,
                                       name or "root_mean_squared_error")
    return _collect(ops.sqrt(value), ops.sqrt(update), metrics_collections, updates_collections)


def _as_bool(x):
    """x as bool: non-zero is true."""
    return x if x.dtype == dtypes.bool_ else ops.not_equal(x, ops.zeros_like(x))


def _counts(labels, predictions, weights, kinds, name):
    """Running weighted counts of true/false positives/negatives for binary labels and
    predictions (non-zero is true); returns {kind: (value, update)}."""
    labels, predictions = _as_bool(_tensor(labels)), _as_bool(_tensor(predictions))
    _check_same_shape(labels, predictions, name)
    w = _weights_like(ops.cast(labels, dtypes.float32), weights)
    out = {}
    g = get_default_graph()
    with g.name_scope(name):
        for kind in kinds:
            want_label = kind in ("tp", "fn")
            want_pred = kind in ("tp", "fp")
            hit = ops.logical_and(
                ops.equal(labels, ops.constant(want_label)),
                ops.equal(predictions, ops.constant(want_pred)))
            var = _metric_variable([], {"tp": "true_positives", "fp": "false_positives",
                                        "fn": "false_negatives", "tn": "true_negatives"}[kind])
            update = var.assign_add(ops.reduce_sum(ops.multiply(ops.cast(hit, dtypes.float32), w)))
            out[kind] = (var.value(), update)
    return out


def true_positives(labels, predictions, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    v, u = _counts(labels, predictions, weights, ["tp"], name or "true_positives")["tp"]
    return _collect(v, u, metrics_collections, updates_collections)


def false_positives(labels, predictions, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    v, u = _counts(labels, predictions, weights, ["fp"], name or "false_positives")["fp"]
    return _collect(v, u, metrics_collections, updates_collections)


def false_negatives(labels, predictions, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    v, u = _counts(labels, predictions, weights, ["fn"], name or "false_negatives")["fn"]
    return _collect(v, u, metrics_collections, updates_collections)


def true_negatives(labels, predictions, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    v, u = _counts(labels, predictions, weights, ["tn"], name or "true_negatives")["tn"]
    return _collect(v, u, metrics_collections, updates_collections)


def _ratio_metric(labels, predictions, weights, other, name, metrics_collections,
                  updates_collections):
    c = _counts(labels, predictions, weights, ["tp", other], name)
    (tp, tp_up), (o, o_up) = c["tp"], c[other]
    value = _div_no_nan(tp, ops.add(tp, o))
    update = _div_no_nan(tp_up, ops.add(tp_up, o_up))
    return _collect(value, update, metrics_collections, updates_collections)


def precision(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
    """true positives / (true positives + false positives), for binary labels and predictions."""
    return _ratio_metric(labels, predictions, weights, "fp", name or "precision",
                         metrics_collections, updates_collections)


def recall(labels, predictions, weights=None, metrics_collections=None,
           updates_collections=None, name=None):
    """true positives / (true positives + false negatives), for binary labels and predictions."""
    return _ratio_metric(labels, predictions, weights, "fn", name or "recall",
                         metrics_collections, updates_collections)


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal"):
    """Area under the ROC (or PR) curve of scores `predictions` in [0, 1] against binary
    labels, from counts at `num_thresholds` thresholds (TF1's tf.metrics.auc, trapezoidal)."""
    if curve not in ("ROC", "PR"):
        raise ValueError("auc: curve must be 'ROC' or 'PR', got %r" % (curve,))
    if summation_method not in ("trapezoidal", "careful_interpolation"):
        raise ValueError("auc: summation_method %r is not supported (trapezoidal)"
                         % (summation_method,))
    if num_thresholds < 2:
        raise ValueError("auc: num_thresholds must be at least 2, got %d" % num_thresholds)
    eps = 1e-7
    thresholds = np.array([-eps] + [(i + 1) / (num_thresholds - 1.0)
                                    for i in range(num_thresholds - 2)] + [1.0 + eps], np.float32)
    g = get_default_graph()
    with g.name_scope(name or "auc"):
        labels = _as_bool(_tensor(labels))
        scores = ops.reshape(_tensor(predictions, dtypes.float32), [-1, 1])
        positive = ops.reshape(ops.cast(labels, dtypes.float32), [-1, 1])
        w = ops.reshape(_weights_like(ops.cast(labels, dtypes.float32), weights), [-1, 1])
        above = ops.cast(ops.greater(scores, ops.constant(thresholds.reshape(1, -1))),
                         dtypes.float32)                                   # [n, thresholds]
        counts = {
            "tp": ops.multiply(above, ops.multiply(positive, w)),
            "fp": ops.multiply(above, ops.multiply(ops.subtract(1.0, positive), w)),
            "fn": ops.multiply(ops.subtract(1.0, above), ops.multiply(positive, w)),
            "tn": ops.multiply(ops.subtract(1.0, above),
                               ops.multiply(ops.subtract(1.0, positive), w)),
        }
        values, updates = {}, {}
        for kind, per_row in counts.items():
            var = _metric_variable([num_thresholds], {"tp": "true_positives",
                                                      "fp": "false_positives",
                                                      "fn": "false_negatives",
                                                      "tn": "true_negatives"}[kind])
            updates[kind] = var.assign_add(ops.reduce_sum(per_row, axis=0))
            values[kind] = var.value()

        def area(c):
            tp, fp, fn, tn = c["tp"], c["fp"], c["fn"], c["tn"]
            tpr = _div_no_nan(tp, ops.add(tp, fn))
            if curve == "ROC":
                x = _div_no_nan(fp, ops.add(fp, tn))
                y = tpr
            else:
                x = tpr
                y = _div_no_nan(tp, ops.add(tp, fp))
            n = num_thresholds
            dx = ops.subtract(ops.slice(x, [0], [n - 1]), ops.slice(x, [1], [n - 1]))
            mid = ops.multiply(ops.add(ops.slice(y, [0], [n - 1]), ops.slice(y, [1], [n - 1])),
                               0.5)
            return ops.reduce_sum(ops.multiply(dx, mid))

        value = area(values)
        update = area(updates)
    return _collect(value, update, metrics_collections, updates_collections)


__all__ = ["accuracy", "auc", "false_negatives", "false_positives", "mean",
           "mean_absolute_error", "mean_squared_error", "precision", "recall",
           "root_mean_squared_error", "true_negatives", "true_positives"]
