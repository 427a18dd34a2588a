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


def _last_dim_may_be_one(x):
    """Whether x may have a last dimension of size 1 (its rank or that dimension unknown)."""
    if x.shape.ndims is None:
        return True
    dims = x.shape.as_list()
    return bool(dims) and dims[-1] in (None, 1)


def _rank_difference(a, b):
    """rank(a) - rank(b) as an int32 tensor, known when the step runs."""
    from shardflow.math_composites import rank
    return ops.subtract(rank(a), rank(b))


def _squeeze_last_if(condition, x):
    """x without its last dimension where `condition` (a bool scalar tensor) holds."""
    from shardflow.control_flow import cond
    return cond(condition, lambda: ops.squeeze(x, [-1]), lambda: x)


def _squeeze_labels_or_predictions(labels, predictions, expected_rank_diff=0):
    """labels and predictions, the one whose rank is one more than expected (rank(predictions)
    - rank(labels) is expected_rank_diff) losing its last dimension when that is 1 (labels
    [batch, 1] against predictions [batch]), as TF1's
    confusion_matrix.remove_squeezable_dimensions; when a rank is unknown until the step runs,
    the step decides (tf.cond), as in TF1."""
    labels_rank, predictions_rank = labels.shape.ndims, predictions.shape.ndims
    if labels_rank is not None and predictions_rank is not None:
        diff = predictions_rank - labels_rank
        if diff == expected_rank_diff + 1 and _last_dim_may_be_one(predictions):
            predictions = ops.squeeze(predictions, [-1])
        elif diff == expected_rank_diff - 1 and _last_dim_may_be_one(labels):
            labels = ops.squeeze(labels, [-1])
        return labels, predictions
    diff = _rank_difference(predictions, labels)
    if _last_dim_may_be_one(predictions):
        predictions = _squeeze_last_if(ops.equal(diff, expected_rank_diff + 1), predictions)
    if _last_dim_may_be_one(labels):
        labels = _squeeze_last_if(ops.equal(diff, expected_rank_diff - 1), labels)
    return labels, predictions


def _remove_squeezable_dimensions(predictions, labels, weights):
    """TF1's metrics_impl._remove_squeezable_dimensions: labels or predictions lose a trailing
    dimension of size 1 when their ranks differ by one; then weights lose their last dimension
    when their rank is one more than predictions' (weights [batch, 1] against [batch]) or gain
    one when it is one less (weights [batch] against values [batch, d] weigh whole rows); the
    step decides where a rank is unknown. Returns (predictions, labels, weights), tensors
    (labels and weights may be None)."""
    from shardflow.control_flow import cond
    from shardflow.math_composites import rank
    predictions = _tensor(predictions)
    if labels is not None:
        labels, predictions = _squeeze_labels_or_predictions(_tensor(labels), predictions)
    if weights is None:
        return predictions, labels, None
    weights = _tensor(weights)
    weights_rank, predictions_rank = weights.shape.ndims, predictions.shape.ndims
    if weights_rank == 0:
        return predictions, labels, weights
    if weights_rank is not None and predictions_rank is not None:
        if weights_rank == predictions_rank + 1 and _last_dim_may_be_one(weights):
            weights = ops.squeeze(weights, [-1])
        elif weights_rank == predictions_rank - 1:
            weights = ops.expand_dims(weights, -1)
        return predictions, labels, weights
    w = weights
    diff = _rank_difference(w, predictions)

    def expand():
        return cond(ops.equal(diff, -1), lambda: ops.expand_dims(w, -1), lambda: w)

    def adjust():
        if not _last_dim_may_be_one(w):
            return expand()
        return cond(ops.equal(diff, 1), lambda: ops.squeeze(w, [-1]), expand)
    weights = cond(ops.equal(rank(w), 0), lambda: w, adjust)
    return predictions, labels, weights


def _check_broadcastable(weights, values, what):
    """ValueError unless `weights` has rank 0, or values' rank with each dimension 1 or
    values' (TF1's weights_broadcast_ops.assert_broadcastable, on static shapes): weights
    never enlarge the values they weigh."""
    w_rank, v_rank = weights.shape.ndims, values.shape.ndims
    if w_rank is None or v_rank is None or w_rank == 0:
        return
    w_dims, v_dims = weights.shape.as_list(), values.shape.as_list()
    ok = w_rank == v_rank and all(w is None or v is None or w == 1 or w == v
                                  for w, v in zip(w_dims, v_dims))
    if not ok:
        raise ValueError("%s: weights can not be broadcast to values: weights %s, values %s "
                         "(weights must be a scalar or of the values' rank, each dimension 1 "
                         "or the values')" % (what, w_dims, v_dims))


def _weights_like(values, weights, what="metric"):
    """weights (None: 1) broadcast to values' shape, as values' dtype (TF1's
    broadcast_weights)."""
    if weights is None:
        return ops.ones_like(values)
    weights = _tensor(weights, values.dtype)
    _check_broadcastable(weights, values, what)
    return ops.multiply(ops.ones_like(values), weights)


def _collection_names(names):
    """A collection name, or several (TF1's add_to_collections: a string is one name)."""
    if not names:
        return ()
    return (names,) if isinstance(names, str) else tuple(dict.fromkeys(names))


def _collect(value, update, metrics_collections, updates_collections):
    for c in _collection_names(metrics_collections):
        add_to_collection(c, value)
    for c in _collection_names(updates_collections):
        add_to_collection(c, update)
    return value, update


def _check_same_shape(a, b, what):
    sa, sb = a.shape, b.shape
    if sa.ndims is not None and sb.ndims is not None:
        la, lb = sa.as_list(), sb.as_list()
        ok = len(la) == len(lb) and all(x is None or y is None or x == y for x, y in zip(la, lb))
        if not ok:
            hint = (" (for class scores [batch, classes], pass tf.argmax(scores, 1) as the "
                    "predictions)" if what == "accuracy" and len(lb) == len(la) + 1 else "")
            raise ValueError("%s: labels %s and predictions %s have different shapes%s"
                             % (what, la, lb, hint))


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of every element of `values` seen so far."""
    g = get_default_graph()
    with g.name_scope(name or "mean"):
        values = _tensor(values, dtypes.float32)
        values, _, weights = _remove_squeezable_dimensions(values, None, weights)
        w = _weights_like(values, weights, name or "mean")
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
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    _check_same_shape(labels, predictions, "accuracy")
    if labels.dtype != predictions.dtype:
        predictions = ops.cast(predictions, labels.dtype)
    hits = ops.cast(ops.equal(labels, predictions), dtypes.float32)
    return mean(hits, weights, metrics_collections, updates_collections, name or "accuracy")


def _float_pair(labels, predictions, weights, what):
    """(labels, predictions, weights) as float32 labels and predictions of one shape, after
    TF1's _remove_squeezable_dimensions."""
    labels, predictions = _tensor(labels, dtypes.float32), _tensor(predictions, dtypes.float32)
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    _check_same_shape(labels, predictions, what)
    return labels, predictions, weights


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    labels, predictions, weights = _float_pair(labels, predictions, weights, "mean_squared_error")
    return mean(ops.squared_difference(labels, predictions), weights, metrics_collections,
                updates_collections, name or "mean_squared_error")


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    labels, predictions, weights = _float_pair(labels, predictions, weights, "mean_absolute_error")
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
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    _check_same_shape(labels, predictions, name)
    w = _weights_like(ops.cast(labels, dtypes.float32), weights, name)
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


_COUNT_NAMES = {"tp": "true_positives", "fp": "false_positives", "fn": "false_negatives",
                "tn": "true_negatives"}


def _counts_at_thresholds(labels, predictions, weights, thresholds, kinds, what):
    """Running weighted counts, one per threshold, of the true/false positives/negatives of
    binary labels against scores `predictions` (positive: score > threshold), in the caller's
    name scope; returns ({kind: value [T]}, {kind: update [T]})."""
    from shardflow import check_ops
    scores = _tensor(predictions, dtypes.float32)
    in_range = [check_ops.assert_greater_equal(scores, 0.0,
                                               message="predictions must be in [0, 1]"),
                check_ops.assert_less_equal(scores, 1.0, message="predictions must be in [0, 1]")]
    with control_dependencies(in_range):
        scores = ops.identity(scores)
    scores, labels, weights = _remove_squeezable_dimensions(scores, _as_bool(_tensor(labels)),
                                                            weights)
    _check_same_shape(labels, scores, what)
    w = ops.reshape(_weights_like(scores, weights, what), [-1, 1])
    scores = ops.reshape(scores, [-1, 1])
    positive = ops.reshape(ops.cast(labels, dtypes.float32), [-1, 1])
    thresholds = np.asarray(thresholds, np.float32).reshape(-1)
    above = ops.cast(ops.greater(scores, ops.constant(thresholds.reshape(1, -1))),
                     dtypes.float32)                                   # [n, thresholds]
    per_row = {
        "tp": lambda: ops.multiply(above, ops.multiply(positive, w)),
        "fp": lambda: ops.multiply(above, ops.multiply(ops.subtract(1.0, positive), w)),
        "fn": lambda: ops.multiply(ops.subtract(1.0, above), ops.multiply(positive, w)),
        "tn": lambda: ops.multiply(ops.subtract(1.0, above),
                                   ops.multiply(ops.subtract(1.0, positive), w)),
    }
    values, updates = {}, {}
    for kind in kinds:
        var = _metric_variable([len(thresholds)], _COUNT_NAMES[kind])
        updates[kind] = var.assign_add(ops.reduce_sum(per_row[kind](), axis=0))
        values[kind] = var.value()
    return values, updates


def interpolated_pr_auc(tp, fp, fn, num_thresholds):
    """The area under the PR curve from counts at num_thresholds thresholds (vectors), as TF1's
    interpolate_pr_auc (Davis & Goadrich 2006): precision is linear in the number of predicted
    positives between two thresholds. Also keras.metrics.AUC's 'interpolation'."""
    n = num_thresholds

    def head(v):
        return ops.slice(v, [0], [n - 1])

    def tail(v):
        return ops.slice(v, [1], [n - 1])

    dtp = ops.subtract(head(tp), tail(tp))
    p = ops.add(tp, fp)
    slope = _div_no_nan(dtp, ops.maximum(ops.subtract(head(p), tail(p)), 0.0))
    intercept = ops.subtract(tail(tp), ops.multiply(slope, tail(p)))
    both = ops.logical_and(ops.greater(head(p), 0.0), ops.greater(tail(p), 0.0))
    ratio = where(both, _div_no_nan(head(p), ops.maximum(tail(p), 0.0)), ops.ones_like(tail(p)))
    step = ops.multiply(slope, ops.add(dtp, ops.multiply(intercept, ops.log(ratio))))
    return ops.reduce_sum(_div_no_nan(step, ops.maximum(ops.add(tail(tp), tail(fn)), 0.0)))


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """Area under the ROC (or PR) curve of scores `predictions` in [0, 1] (others fail the
    step) against binary labels, from counts at `num_thresholds` thresholds evenly spaced in
    [0, 1] (or at the sorted `thresholds` given, with -1e-7 and 1 + 1e-7 added), with TF1's
    tf.metrics.auc formulas: rates are (tp + 1e-6) / (tp + fn + 1e-6) and
    fp / (fp + tn + 1e-6) (precision as recall), summed by "trapezoidal", "minoring" or
    "majoring" rectangles; "careful_interpolation" interpolates the PR curve as TF1 does (the
    ROC curve by trapezoids)."""
    if curve not in ("ROC", "PR"):
        raise ValueError("auc: curve must be 'ROC' or 'PR', got %r" % (curve,))
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring",
                                "majoring"):
        raise ValueError("auc: summation_method is 'trapezoidal', 'careful_interpolation', "
                         "'minoring' or 'majoring', not %r" % (summation_method,))
    if thresholds is not None:
        thresholds = [-1e-7] + sorted(float(t) for t in thresholds) + [1.0 + 1e-7]
        num_thresholds = len(thresholds)
    else:
        thresholds = _default_thresholds(num_thresholds, "auc")
    thresholds = np.array(thresholds, np.float32)
    n, eps = num_thresholds, 1e-6   # TF1's auc: 1e-7 beyond [0, 1], 1e-6 in the rates
    g = get_default_graph()
    with g.name_scope(name or "auc"):
        values, updates = _counts_at_thresholds(labels, predictions, weights, thresholds,
                                                ("tp", "fp", "fn", "tn"), "auc")

        def head(v):
            return ops.slice(v, [0], [n - 1])

        def tail(v):
            return ops.slice(v, [1], [n - 1])

        def area(c):
            tp, fp, fn, tn = c["tp"], c["fp"], c["fn"], c["tn"]
            if curve == "PR" and summation_method == "careful_interpolation":
                return interpolated_pr_auc(tp, fp, fn, n)
            recall = ops.divide(ops.add(tp, eps), ops.add(ops.add(tp, fn), eps))
            if curve == "ROC":
                x = ops.divide(fp, ops.add(ops.add(fp, tn), eps))
                y = recall
            else:
                x = recall
                y = ops.divide(ops.add(tp, eps), ops.add(ops.add(tp, fp), eps))
            dx = ops.subtract(head(x), tail(x))
            if summation_method == "minoring":
                height = ops.minimum(head(y), tail(y))
            elif summation_method == "majoring":
                height = ops.maximum(head(y), tail(y))
            else:
                height = ops.multiply(ops.add(head(y), tail(y)), 0.5)
            return ops.reduce_sum(ops.multiply(dx, height))

        value = area(values)
        update = area(updates)
    return _collect(value, update, metrics_collections, updates_collections)


# ---- more of TF1's tf.metrics -------------------------------------------------------------


def _at_thresholds(kind, labels, predictions, thresholds, weights, metrics_collections,
                   updates_collections, name):
    g = get_default_graph()
    with g.name_scope(name or _COUNT_NAMES[kind] + "_at_thresholds"):
        values, updates = _counts_at_thresholds(labels, predictions, weights, thresholds,
                                                (kind,), _COUNT_NAMES[kind] + "_at_thresholds")
    return _collect(values[kind], updates[kind], metrics_collections, updates_collections)


def true_positives_at_thresholds(labels, predictions, thresholds, weights=None,
                                 metrics_collections=None, updates_collections=None, name=None):
    """For each of `thresholds`, the weighted count of positive labels whose score
    `predictions` is above it (TF1's tf.metrics.true_positives_at_thresholds): a [T] value."""
    return _at_thresholds("tp", labels, predictions, thresholds, weights, metrics_collections,
                          updates_collections, name)


def false_positives_at_thresholds(labels, predictions, thresholds, weights=None,
                                  metrics_collections=None, updates_collections=None, name=None):
    """For each threshold, the weighted count of negative labels scored above it."""
    return _at_thresholds("fp", labels, predictions, thresholds, weights, metrics_collections,
                          updates_collections, name)


def false_negatives_at_thresholds(labels, predictions, thresholds, weights=None,
                                  metrics_collections=None, updates_collections=None, name=None):
    """For each threshold, the weighted count of positive labels scored at or below it."""
    return _at_thresholds("fn", labels, predictions, thresholds, weights, metrics_collections,
                          updates_collections, name)


def true_negatives_at_thresholds(labels, predictions, thresholds, weights=None,
                                 metrics_collections=None, updates_collections=None, name=None):
    """For each threshold, the weighted count of negative labels scored at or below it."""
    return _at_thresholds("tn", labels, predictions, thresholds, weights, metrics_collections,
                          updates_collections, name)


def _ratio_at_thresholds(other, labels, predictions, thresholds, weights, metrics_collections,
                         updates_collections, scope):
    """tp / (tp + `other` + 1e-7) for each threshold (precision: other "fp"; recall: "fn")."""
    with get_default_graph().name_scope(scope):
        values, updates = _counts_at_thresholds(labels, predictions, weights, thresholds,
                                                ("tp", other), scope)

        def compute(c):
            return ops.divide(c["tp"], ops.add(ops.add(c["tp"], c[other]), 1e-7))
        value, update = compute(values), compute(updates)
    return _collect(value, update, metrics_collections, updates_collections)


def precision_at_thresholds(labels, predictions, thresholds, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """For each of `thresholds`, tp / (tp + fp + 1e-7) of the scores above it, as TF1's
    tf.metrics.precision_at_thresholds: a [T] value."""
    return _ratio_at_thresholds("fp", labels, predictions, thresholds, weights,
                                metrics_collections, updates_collections,
                                name or "precision_at_thresholds")


def recall_at_thresholds(labels, predictions, thresholds, weights=None,
                         metrics_collections=None, updates_collections=None, name=None):
    """For each of `thresholds`, tp / (tp + fn + 1e-7), as TF1's
    tf.metrics.recall_at_thresholds: a [T] value."""
    return _ratio_at_thresholds("fn", labels, predictions, thresholds, weights,
                                metrics_collections, updates_collections,
                                name or "recall_at_thresholds")


def _default_thresholds(num_thresholds, what):
    if num_thresholds < 2:
        raise ValueError("%s: num_thresholds must be at least 2, got %d"
                         % (what, num_thresholds))
    eps = 1e-7
    return [-eps] + [(i + 1) / (num_thresholds - 1.0)
                     for i in range(num_thresholds - 2)] + [1.0 + eps]


def sensitivity_at_specificity(labels, predictions, specificity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The sensitivity tp / (tp + fn) at the threshold (of `num_thresholds` in [0, 1]) whose
    specificity tn / (tn + fp) is nearest `specificity` (the first such), as TF1's
    tf.metrics.sensitivity_at_specificity (with its 1e-7 in each denominator)."""
    if not 0 <= specificity <= 1:
        raise ValueError("sensitivity_at_specificity: specificity must be in [0, 1], got %r"
                         % (specificity,))
    thresholds = _default_thresholds(num_thresholds, "sensitivity_at_specificity")
    from shardflow.array_ops import gather
    eps = 1e-7

    def compute(c):
        tp, fn, tn, fp = c["tp"], c["fn"], c["tn"], c["fp"]
        specificities = ops.divide(tn, ops.add(ops.add(tn, fp), eps))
        gap = ops.abs(ops.subtract(specificities, float(specificity)))
        index = ops.argmax(ops.negative(gap), axis=0, output_type=dtypes.int32)
        tp_at, fn_at = gather(tp, index), gather(fn, index)
        return ops.divide(tp_at, ops.add(ops.add(tp_at, fn_at), eps))

    g = get_default_graph()
    with g.name_scope(name or "sensitivity_at_specificity"):
        values, updates = _counts_at_thresholds(labels, predictions, weights, thresholds,
                                                ("tp", "fn", "tn", "fp"),
                                                "sensitivity_at_specificity")
        value, update = compute(values), compute(updates)
    return _collect(value, update, metrics_collections, updates_collections)


def specificity_at_sensitivity(labels, predictions, sensitivity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The specificity tn / (tn + fp) at the threshold whose sensitivity tp / (tp + fn) is
    nearest `sensitivity` (the last such: the highest threshold), as TF1's
    tf.metrics.specificity_at_sensitivity (with its 1e-7 in each denominator)."""
    if not 0 <= sensitivity <= 1:
        raise ValueError("specificity_at_sensitivity: sensitivity must be in [0, 1], got %r"
                         % (sensitivity,))
    thresholds = _default_thresholds(num_thresholds, "specificity_at_sensitivity")
    from shardflow.array_ops import gather
    eps = 1e-7

    def compute(c):
        tp, fn, tn, fp = c["tp"], c["fn"], c["tn"], c["fp"]
        sensitivities = ops.divide(tp, ops.add(ops.add(tp, fn), eps))
        gap = ops.abs(ops.subtract(sensitivities, float(sensitivity)))
        at_min = ops.cast(ops.equal(gap, ops.reduce_min(gap)), dtypes.int32)
        # The first index where the running count of minima peaks: the last minimum.
        index = ops.argmax(ops.cumsum(at_min), axis=0, output_type=dtypes.int32)
        tn_at, fp_at = gather(tn, index), gather(fp, index)
        return ops.divide(tn_at, ops.add(ops.add(tn_at, fp_at), eps))

    g = get_default_graph()
    with g.name_scope(name or "specificity_at_sensitivity"):
        values, updates = _counts_at_thresholds(labels, predictions, weights, thresholds,
                                                ("tp", "fn", "tn", "fp"),
                                                "specificity_at_sensitivity")
        value, update = compute(values), compute(updates)
    return _collect(value, update, metrics_collections, updates_collections)


def percentage_below(values, threshold, weights=None, metrics_collections=None,
                     updates_collections=None, name=None):
    """The (weighted) share of the elements of `values` below `threshold`."""
    values = _tensor(values, dtypes.float32)
    below = ops.cast(ops.less(values, float(threshold)), dtypes.float32)
    return mean(below, weights, metrics_collections, updates_collections,
                name or "percentage_below_threshold")


def mean_relative_error(labels, predictions, normalizer, weights=None,
                        metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of |labels - predictions| / normalizer, an element counting 0
    where normalizer is 0 (TF1's tf.metrics.mean_relative_error)."""
    labels, predictions, weights = _float_pair(labels, predictions, weights,
                                               "mean_relative_error")
    abs_error = ops.abs(ops.subtract(labels, predictions))
    normalizer, _ = _squeeze_labels_or_predictions(_tensor(normalizer, dtypes.float32),
                                                   predictions)
    _check_broadcastable(normalizer, abs_error, "mean_relative_error (normalizer)")
    normalizer = ops.multiply(normalizer, ops.ones_like(abs_error))
    zero = ops.equal(normalizer, 0.0)
    safe = where(zero, ops.ones_like(normalizer), normalizer)
    relative = where(zero, ops.zeros_like(abs_error), ops.divide(abs_error, safe))
    return mean(relative, weights, metrics_collections, updates_collections,
                name or "mean_relative_error")


def mean_cosine_distance(labels, predictions, dim, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    """1 - the (weighted) mean over the vectors along `dim` of sum(labels * predictions, dim),
    for unit-normalized labels and predictions (TF1's tf.metrics.mean_cosine_distance;
    weights broadcast to the sums, which keep `dim` as a dimension of size 1)."""
    labels, predictions, weights = _float_pair(labels, predictions, weights,
                                               "mean_cosine_distance")
    dots = ops.reduce_sum(ops.multiply(labels, predictions), axis=[dim], keepdims=True)
    value, update = mean(dots, weights, None, None, name or "mean_cosine_distance")
    return _collect(ops.subtract(1.0, value), ops.subtract(1.0, update), metrics_collections,
                    updates_collections)


def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None,
                name=None):
    """The element-wise (weighted) running mean of `values`, whose shape must be fully known
    (TF1's tf.metrics.mean_tensor); an element with no weight yet is 0."""
    g = get_default_graph()
    with g.name_scope(name or "mean"):
        values = _tensor(values, dtypes.float32)
        shape = values.shape.as_list() if values.shape.ndims is not None else None
        if shape is None or any(d is None for d in shape):
            raise ValueError("mean_tensor needs values of a fully known shape, got %s"
                             % (values.shape,))
        values, _, weights = _remove_squeezable_dimensions(values, None, weights)
        w = _weights_like(values, weights, "mean_tensor")
        total = _metric_variable(shape, "total_tensor")
        count = _metric_variable(shape, "count_tensor")
        add_total = total.assign_add(ops.multiply(values, w))
        add_count = count.assign_add(w)
        value = _div_no_nan(total.value(), count.value())
        with control_dependencies([add_total, add_count]):
            update = _div_no_nan(ops.identity(add_total), ops.identity(add_count))
    return _collect(value, update, metrics_collections, updates_collections)


def _flat_class_ids(x, what):
    """x flattened to int32 class ids; other numbers are cast (truncated), as TF1's casts."""
    x = _tensor(x)
    if x.dtype == dtypes.string:
        raise TypeError("%s: labels and predictions must be class ids, got strings" % what)
    return ops.reshape(ops.cast(x, dtypes.int32), [-1])


def _confusion_update(labels, predictions, num_classes, weights, what):
    """This batch's [num_classes, num_classes] weighted confusion counts (rows: labels,
    columns: predictions) as float64; a class id outside [0, num_classes) fails the step, as
    TF1's confusion_matrix."""
    from shardflow.segment_ops import confusion_matrix
    labels = _flat_class_ids(labels, what)
    predictions = _flat_class_ids(predictions, what)
    w = ops.cast(_weights_like(ops.cast(labels, dtypes.float32),
                               None if weights is None else ops.reshape(
                                   _tensor(weights, dtypes.float32), [-1]), what),
                 dtypes.float64)
    return confusion_matrix(labels, predictions, num_classes, dtype=dtypes.float64, weights=w)


def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The mean over the classes of intersection / union (tp / (tp + fp + fn)) of integer
    class ids in [0, num_classes), from a running confusion matrix (TF1's
    tf.metrics.mean_iou): classes never seen nor predicted are left out of the mean. As in
    TF1, update_op returns the updated [num_classes, num_classes] float64 confusion matrix
    (rows: labels, columns: predictions)."""
    num_classes = int(num_classes)
    if num_classes < 1:
        raise ValueError("mean_iou: num_classes must be positive, got %d" % num_classes)
    g = get_default_graph()
    with g.name_scope(name or "mean_iou"):
        batch_cm = _confusion_update(labels, predictions, num_classes, weights, "mean_iou")
        total_cm = _metric_variable([num_classes, num_classes], "total_confusion_matrix",
                                    dtypes.float64)
        update = total_cm.assign_add(batch_cm)
        cm = ops.cast(total_cm.value(), dtypes.float32)
        predicted = ops.reduce_sum(cm, axis=0)
        actual = ops.reduce_sum(cm, axis=1)
        diag = ops.reduce_sum(ops.multiply(cm, np.eye(num_classes, dtype=np.float32)), axis=1)
        union = ops.subtract(ops.add(predicted, actual), diag)
        valid = ops.reduce_sum(ops.cast(ops.greater(union, 0.0), dtypes.float32))
        iou = _div_no_nan(diag, union)
        value = _div_no_nan(ops.reduce_sum(iou), valid)
    return _collect(value, update, metrics_collections, updates_collections)


def mean_per_class_accuracy(labels, predictions, num_classes, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """The mean over all `num_classes` classes of the share of each class's labels predicted
    right (a class not seen yet counts 0), as TF1's tf.metrics.mean_per_class_accuracy; as in
    TF1, update_op returns the [num_classes] per-class accuracies after the batch."""
    from shardflow.segment_ops import unsorted_segment_sum
    num_classes = int(num_classes)
    g = get_default_graph()
    with g.name_scope(name or "mean_accuracy"):
        labels = _flat_class_ids(labels, "mean_per_class_accuracy")
        predictions = _flat_class_ids(predictions, "mean_per_class_accuracy")
        w = _weights_like(ops.cast(labels, dtypes.float32),
                          None if weights is None
                          else ops.reshape(_tensor(weights, dtypes.float32), [-1]),
                          "mean_per_class_accuracy")
        correct = ops.multiply(ops.cast(ops.equal(labels, predictions), dtypes.float32), w)
        total = _metric_variable([num_classes], "total")
        count = _metric_variable([num_classes], "count")
        add_total = total.assign_add(unsorted_segment_sum(w, labels, num_classes))
        add_count = count.assign_add(unsorted_segment_sum(correct, labels, num_classes))
        value = ops.reduce_mean(_div_no_nan(count.value(), total.value()))
        update = _div_no_nan(add_count, add_total)
    return _collect(value, update, metrics_collections, updates_collections)


def _class_id_labels(labels, what):
    """Labels as int32 class ids [batch, num_labels] ([batch] gains a dimension), and None; or,
    for a SparseTensor [batch, num_labels] (rows of different lengths, as TF1 takes), its
    dense form padded with -1 and the bool [batch, num_labels] mask of the ids it holds."""
    from shardflow.sparse_ops import sparse_tensor_to_dense
    from shardflow.sparse_tensor import SparseTensor
    present = None
    if isinstance(labels, SparseTensor):
        if not labels.dtype.is_integer:
            raise TypeError("%s: labels must be integer class ids, got %s"
                            % (what, labels.dtype.name))
        ones = SparseTensor(labels.indices, ops.ones_like(ops.cast(labels.values, dtypes.int32)),
                            labels.dense_shape)
        present = ops.cast(sparse_tensor_to_dense(ones, 0), dtypes.bool_)
        labels = sparse_tensor_to_dense(labels, -1)
    labels = _tensor(labels)
    if not labels.dtype.is_integer:
        raise TypeError("%s: labels must be integer class ids, got %s"
                        % (what, labels.dtype.name))
    return ops.cast(labels, dtypes.int32), present


def _flatten_rows(x, last):
    """x [D1, ..., DN, last] as [D1 * ... * DN, last]."""
    if x.shape.ndims == 2:
        return x
    return ops.reshape(x, ops.concat([[-1], ops.shape(x)[-1:]], 0) if last is None
                       else [-1, last])


def _ranked_rows(labels, predictions, k, what, top=None):
    """The k best classes and the labels of each row (every dimension but the last):
    (top [rows, k], labels [rows, num_labels], the mask [rows, num_labels] of a SparseTensor's
    ids or None, float64 ones [D1, ..., DN]). `predictions` are scores [D1, ..., DN, classes]
    or, given as `top`, class ids best first [D1, ..., DN, >= k]; `labels` are class ids
    [D1, ..., DN] or [D1, ..., DN, num_labels], or a SparseTensor of the latter."""
    from shardflow.nn import top_k
    labels, present = _class_id_labels(labels, what)
    if top is None:
        top = top_k(_tensor(predictions, dtypes.float32), k).indices
    else:   # the classes given, best first (the first k of each row, all of them without k)
        top = ops.cast(_tensor(top), dtypes.int32)
        if k is not None:
            top = top[..., :k]
    rank = top.shape.ndims
    if rank is None or rank < 2:
        raise ValueError("%s needs predictions [batch, ..., classes] of known rank, got %s"
                         % (what, top.shape))
    if labels.shape.ndims == rank - 1:
        labels = ops.expand_dims(labels, -1)
        present = None if present is None else ops.expand_dims(present, -1)
    rows = ops.ones_like(ops.reduce_sum(ops.cast(top, dtypes.float64), axis=-1))
    width = labels.shape.as_list()[-1] if labels.shape.ndims is not None else None
    top = _flatten_rows(top, top.shape.as_list()[-1])
    labels = _flatten_rows(labels, width)
    present = None if present is None else _flatten_rows(present, width)
    return top, labels, present, rows


def _row_weights(rows, weights, what):
    """Per-row weights (None: 1) broadcast to the rows' shape [D1, ..., DN] and flattened, as
    float64 (a trailing dimension of 1 is dropped, a missing one added, as TF1's)."""
    if weights is None:
        return ops.reshape(rows, [-1])
    _, _, weights = _remove_squeezable_dimensions(rows, None, _tensor(weights, dtypes.float64))
    return ops.reshape(_weights_like(rows, weights, what), [-1])


def _top_k_hits(labels, predictions, k, class_id, what, top=None):
    """Per row (_ranked_rows), (hits, misses_pred, misses_label, rows) as float32 [rows]:
    the top-k classes of `predictions` that are among the row's `labels` (distinct within a
    row), the top-k classes that are not, and the labels not in the top k; only class
    `class_id` counted when given."""
    from shardflow.array_ops import reduce_any
    top, labels, present, rows = _ranked_rows(labels, predictions, k, what, top)
    match = ops.equal(ops.expand_dims(top, 2), ops.expand_dims(labels, 1))  # [b, k, labels]
    top_in_labels = reduce_any(match, axis=2)                            # [batch, k]
    label_in_top = reduce_any(match, axis=1)                             # [batch, labels]
    if class_id is not None:
        top_is = ops.equal(top, int(class_id))
        label_is = ops.equal(labels, int(class_id))
    else:
        top_is = ops.equal(top, top)
        label_is = ops.equal(labels, labels)
    if present is not None:
        label_is = ops.logical_and(label_is, present)

    def count(mask):
        return ops.reduce_sum(ops.cast(mask, dtypes.float32), axis=1)

    hits = count(ops.logical_and(top_in_labels, top_is))
    false_pos = count(ops.logical_and(ops.logical_not(top_in_labels), top_is))
    false_neg = count(ops.logical_and(ops.logical_not(label_in_top), label_is))
    return hits, false_pos, false_neg, rows


def _at_k(labels, predictions, k, class_id, weights, other, what, name, metrics_collections,
          updates_collections, top=None):
    g = get_default_graph()
    with g.name_scope(name or what):
        hits, false_pos, false_neg, rows = _top_k_hits(labels, predictions, k, class_id,
                                                       what, top)
        misses = false_pos if other == "fp" else false_neg
        # As TF1's, the counts and the value are float64.
        hits, misses = ops.cast(hits, dtypes.float64), ops.cast(misses, dtypes.float64)
        w = _row_weights(rows, weights, what)
        at = "at_%d" % k if k is not None else "at_k"
        tp = _metric_variable([], "true_positive_" + at, dtypes.float64)
        no = _metric_variable([], ("false_positive_" if other == "fp" else "false_negative_")
                              + at, dtypes.float64)
        add_tp = tp.assign_add(ops.reduce_sum(ops.multiply(hits, w)))
        add_no = no.assign_add(ops.reduce_sum(ops.multiply(misses, w)))
        # TF1 divides plainly here: 0 / 0 is NaN (e.g. class_id never in the top k).
        value = ops.divide(tp.value(), ops.add(tp.value(), no.value()))
        update = ops.divide(add_tp, ops.add(add_tp, add_no))
    return _collect(value, update, metrics_collections, updates_collections)


def precision_at_k(labels, predictions, k, class_id=None, weights=None,
                   metrics_collections=None, updates_collections=None, name=None):
    """Of the k highest-scoring classes of each row of `predictions` [batch, classes], the
    (weighted) share that are among the row's labels ([batch] or [batch, num_labels] class
    ids, or a SparseTensor [batch, num_labels]); with class_id, of the rows that have it in
    their top k, the share labelled with it. As TF1's tf.metrics.precision_at_k (also
    sparse_precision_at_k): `weights` per row; a float64 value, NaN before anything counts."""
    return _at_k(labels, predictions, k, class_id, weights, "fp", "precision_at_%d" % k,
                 name, metrics_collections, updates_collections)


sparse_precision_at_k = precision_at_k    # TF1's deprecated name


def recall_at_k(labels, predictions, k, class_id=None, weights=None,
                metrics_collections=None, updates_collections=None, name=None):
    """Of the labels of each row ([batch] or [batch, num_labels] class ids, or a SparseTensor
    [batch, num_labels]), the (weighted) share that are among the row's k highest-scoring
    classes of `predictions`; with class_id, of the rows labelled with it, the share that have
    it in their top k. As TF1's tf.metrics.recall_at_k: `weights` per row; a float64 value,
    NaN before anything counts."""
    return _at_k(labels, predictions, k, class_id, weights, "fn", "recall_at_%d" % k,
                 name, metrics_collections, updates_collections)


def _average_precision(top, labels, present):
    """Per row, as float64 [rows]: the sum over the ranks i <= k where the i-th class of
    `top` [rows, k] is among the row's `labels` [rows, num_labels] of (labels among the first
    i) / i, divided by min(k, labels per row) (TF1's AveP: a dense tensor's last dimension,
    pads included; the ids a SparseTensor's row holds, `present`)."""
    from shardflow.array_ops import reduce_any
    k = top.shape.as_list()[-1]
    match = ops.equal(ops.expand_dims(top, 2), ops.expand_dims(labels, 1))   # [b, k, labels]
    relevant = ops.cast(reduce_any(match, axis=2), dtypes.float64)           # [b, k]
    ranks = ops.constant(np.arange(1, k + 1, dtype=np.float64))
    precision_sum = ops.reduce_sum(
        ops.multiply(ops.divide(ops.cumsum(relevant, axis=1), ranks), relevant), axis=1)
    if present is None:
        num_labels = ops.cast(ops.shape(labels)[-1], dtypes.float64)
    else:   # a SparseTensor's: the ids each row holds
        num_labels = ops.reduce_sum(ops.cast(present, dtypes.float64), axis=1)
    return ops.divide(precision_sum, ops.minimum(num_labels, float(k)))


def average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None,
                           updates_collections=None, name=None):
    """The running (weighted) mean over rows of the average precision of the k
    highest-scoring classes of `predictions` [batch, classes] against the row's labels
    ([batch] or [batch, num_labels] class ids), as TF1's tf.metrics.average_precision_at_k
    (also sparse_average_precision_at_k): per row, the sum of precision@i over the ranks i
    that hit a label, divided by min(k, num_labels); `weights` per row; float64, 0 before
    anything counts."""
    if k < 1:
        raise ValueError("average_precision_at_k: k must be at least 1, got %r" % (k,))
    what = "average_precision_at_k"
    g = get_default_graph()
    with g.name_scope(name or "average_precision_at_%d" % k):
        top, labels, present, rows = _ranked_rows(labels, predictions, k, what)
        ap = _average_precision(top, labels, present)
        w = _row_weights(rows, weights, what)
        total = _metric_variable([], "total", dtypes.float64)
        count = _metric_variable([], "max", dtypes.float64)
        add_total = total.assign_add(ops.reduce_sum(ops.multiply(ap, w)))
        add_count = count.assign_add(ops.reduce_sum(w))
        value = _div_no_nan(total.value(), count.value())
        update = _div_no_nan(add_total, add_count)
    return _collect(value, update, metrics_collections, updates_collections)


sparse_average_precision_at_k = average_precision_at_k    # TF1's deprecated name


def precision_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                       metrics_collections=None, updates_collections=None, name=None):
    """precision_at_k of classes already ranked: `predictions_idx` [batch, >= k] class ids,
    best first (the first k of each row, all of them without k), as TF1's."""
    return _at_k(labels, None, k, class_id, weights, "fp", "precision_at_top_k", name,
                 metrics_collections, updates_collections, top=predictions_idx)


def recall_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                    metrics_collections=None, updates_collections=None, name=None):
    """recall_at_k of classes already ranked: `predictions_idx` [batch, >= k] class ids, best
    first (the first k of each row, all of them without k), as TF1's."""
    return _at_k(labels, None, k, class_id, weights, "fn", "recall_at_top_k", name,
                 metrics_collections, updates_collections, top=predictions_idx)


__all__ = ["accuracy", "auc", "average_precision_at_k", "false_negatives",
           "false_negatives_at_thresholds", "false_positives", "false_positives_at_thresholds",
           "mean", "mean_absolute_error", "mean_cosine_distance", "mean_iou",
           "mean_per_class_accuracy", "mean_relative_error", "mean_squared_error", "mean_tensor",
           "percentage_below", "precision", "precision_at_k", "precision_at_thresholds",
           "precision_at_top_k", "recall", "recall_at_k", "recall_at_thresholds",
           "recall_at_top_k", "root_mean_squared_error", "sensitivity_at_specificity",
           "sparse_average_precision_at_k", "sparse_precision_at_k",
           "specificity_at_sensitivity", "true_negatives", "true_negatives_at_thresholds",
           "true_positives", "true_positives_at_thresholds"]
