"""tf.contrib.metrics: TF1's streaming metrics, which take (predictions, labels) where tf.metrics
takes (labels, predictions); each returns tf.metrics' (value, update_op) with its local
variables, and takes TF 1.15 contrib's arguments in its order (positional calls such as
streaming_auc(p, l, None, 100) mean what they meant there). Also accuracy (not streaming),
f1_score, confusion_matrix, aggregate_metrics and aggregate_metric_map.

Example::

    acc, update = sf.contrib.metrics.streaming_accuracy(predictions, labels)
    names_to_values, names_to_updates = sf.contrib.metrics.aggregate_metric_map({
        "accuracy": sf.contrib.metrics.streaming_accuracy(predictions, labels),
        "pearson": sf.contrib.metrics.streaming_pearson_correlation(scores, targets)})
"""

import numpy as np

from shardflow import dtypes, metrics, ops
from shardflow.array_ops import where
from shardflow.framework import get_default_graph


def _swapped(metric):
    def streaming(predictions, labels, weights=None, metrics_collections=None,
                  updates_collections=None, name=None):
        return metric(labels, predictions, weights=weights,
                      metrics_collections=metrics_collections,
                      updates_collections=updates_collections, name=name)
    streaming.__name__ = "streaming_" + metric.__name__
    streaming.__doc__ = ("tf.metrics.%s with TF1 contrib's argument order (predictions, labels, "
                         "weights, ...); returns (value, update_op)." % metric.__name__)
    return streaming


streaming_accuracy = _swapped(metrics.accuracy)
streaming_precision = _swapped(metrics.precision)
streaming_recall = _swapped(metrics.recall)
streaming_mean_squared_error = _swapped(metrics.mean_squared_error)
streaming_mean_absolute_error = _swapped(metrics.mean_absolute_error)
streaming_root_mean_squared_error = _swapped(metrics.root_mean_squared_error)
streaming_true_positives = _swapped(metrics.true_positives)
streaming_false_positives = _swapped(metrics.false_positives)
streaming_true_negatives = _swapped(metrics.true_negatives)
streaming_false_negatives = _swapped(metrics.false_negatives)


def streaming_auc(predictions, labels, weights=None, num_thresholds=200,
                  metrics_collections=None, updates_collections=None, curve="ROC", name=None,
                  summation_method="trapezoidal"):
    """tf.metrics.auc with (predictions, labels, weights, num_thresholds, ...)."""
    return metrics.auc(labels, predictions, weights=weights, num_thresholds=num_thresholds,
                       metrics_collections=metrics_collections,
                       updates_collections=updates_collections, curve=curve, name=name,
                       summation_method=summation_method)


def streaming_mean(values, weights=None, metrics_collections=None, updates_collections=None,
                   name=None):
    """tf.metrics.mean: the running (weighted) mean of `values`; (value, update_op)."""
    return metrics.mean(values, weights=weights, metrics_collections=metrics_collections,
                        updates_collections=updates_collections, name=name)


def streaming_mean_tensor(values, weights=None, metrics_collections=None,
                          updates_collections=None, name=None):
    """tf.metrics.mean_tensor: the element-wise running (weighted) mean of `values`."""
    return metrics.mean_tensor(values, weights=weights, metrics_collections=metrics_collections,
                               updates_collections=updates_collections, name=name)


def streaming_percentage_less(values, threshold, weights=None, metrics_collections=None,
                              updates_collections=None, name=None):
    """tf.metrics.percentage_below: the (weighted) share of `values` below `threshold`."""
    return metrics.percentage_below(values, threshold, weights=weights,
                                    metrics_collections=metrics_collections,
                                    updates_collections=updates_collections, name=name)


def streaming_mean_iou(predictions, labels, num_classes, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """tf.metrics.mean_iou with (predictions, labels, num_classes)."""
    return metrics.mean_iou(labels, predictions, num_classes, weights=weights,
                            metrics_collections=metrics_collections,
                            updates_collections=updates_collections, name=name)


def streaming_mean_relative_error(predictions, labels, normalizer, weights=None,
                                  metrics_collections=None, updates_collections=None, name=None):
    """tf.metrics.mean_relative_error with (predictions, labels, normalizer)."""
    return metrics.mean_relative_error(labels, predictions, normalizer, weights=weights,
                                       metrics_collections=metrics_collections,
                                       updates_collections=updates_collections, name=name)


def streaming_mean_cosine_distance(predictions, labels, dim, weights=None,
                                   metrics_collections=None, updates_collections=None,
                                   name=None):
    """tf.metrics.mean_cosine_distance with (predictions, labels, dim)."""
    return metrics.mean_cosine_distance(labels, predictions, dim, weights=weights,
                                        metrics_collections=metrics_collections,
                                        updates_collections=updates_collections, name=name)


def streaming_precision_at_thresholds(predictions, labels, thresholds, weights=None,
                                      metrics_collections=None, updates_collections=None,
                                      name=None):
    """tf.metrics.precision_at_thresholds with (predictions, labels, thresholds)."""
    return metrics.precision_at_thresholds(labels, predictions, thresholds, weights=weights,
                                           metrics_collections=metrics_collections,
                                           updates_collections=updates_collections, name=name)


def streaming_recall_at_thresholds(predictions, labels, thresholds, weights=None,
                                   metrics_collections=None, updates_collections=None,
                                   name=None):
    """tf.metrics.recall_at_thresholds with (predictions, labels, thresholds)."""
    return metrics.recall_at_thresholds(labels, predictions, thresholds, weights=weights,
                                        metrics_collections=metrics_collections,
                                        updates_collections=updates_collections, name=name)


def streaming_sensitivity_at_specificity(predictions, labels, specificity, weights=None,
                                         num_thresholds=200, metrics_collections=None,
                                         updates_collections=None, name=None):
    """tf.metrics.sensitivity_at_specificity with (predictions, labels, specificity)."""
    return metrics.sensitivity_at_specificity(
        labels, predictions, specificity, weights=weights, num_thresholds=num_thresholds,
        metrics_collections=metrics_collections, updates_collections=updates_collections,
        name=name)


def streaming_specificity_at_sensitivity(predictions, labels, sensitivity, weights=None,
                                         num_thresholds=200, metrics_collections=None,
                                         updates_collections=None, name=None):
    """tf.metrics.specificity_at_sensitivity with (predictions, labels, sensitivity)."""
    return metrics.specificity_at_sensitivity(
        labels, predictions, sensitivity, weights=weights, num_thresholds=num_thresholds,
        metrics_collections=metrics_collections, updates_collections=updates_collections,
        name=name)


def streaming_sparse_precision_at_k(predictions, labels, k, class_id=None, weights=None,
                                    metrics_collections=None, updates_collections=None,
                                    name=None):
    """tf.metrics.precision_at_k with (predictions, labels, k)."""
    return metrics.precision_at_k(labels, predictions, k, class_id=class_id, weights=weights,
                                  metrics_collections=metrics_collections,
                                  updates_collections=updates_collections, name=name)


def streaming_sparse_recall_at_k(predictions, labels, k, class_id=None, weights=None,
                                 metrics_collections=None, updates_collections=None,
                                 name=None):
    """tf.metrics.recall_at_k with (predictions, labels, k)."""
    return metrics.recall_at_k(labels, predictions, k, class_id=class_id, weights=weights,
                               metrics_collections=metrics_collections,
                               updates_collections=updates_collections, name=name)


def streaming_sparse_average_precision_at_k(predictions, labels, k, weights=None,
                                            metrics_collections=None,
                                            updates_collections=None, name=None):
    """tf.metrics.average_precision_at_k with (predictions, labels, k)."""
    return metrics.average_precision_at_k(labels, predictions, k, weights=weights,
                                          metrics_collections=metrics_collections,
                                          updates_collections=updates_collections, name=name)


def streaming_sparse_precision_at_top_k(top_k_predictions, labels, class_id=None, weights=None,
                                        metrics_collections=None, updates_collections=None,
                                        name=None):
    """tf.metrics.precision_at_top_k with (top_k_predictions, labels)."""
    return metrics.precision_at_top_k(labels, top_k_predictions, class_id=class_id,
                                      weights=weights, metrics_collections=metrics_collections,
                                      updates_collections=updates_collections, name=name)


def streaming_recall_at_k(predictions, labels, k, weights=None, metrics_collections=None,
                          updates_collections=None, name=None):
    """The running (weighted) share of rows whose label (a class id) is among the k highest
    scores of `predictions` [batch, classes] (ties count as in), as TF1's deprecated
    tf.contrib.metrics.streaming_recall_at_k: streaming_mean of nn.in_top_k."""
    from shardflow import nn
    hits = ops.cast(nn.in_top_k(predictions, labels, k), dtypes.float32)
    return metrics.mean(hits, weights, metrics_collections, updates_collections,
                        name or "recall_at_%d" % k)


def _rate(kind, other, predictions, labels, weights, metrics_collections, updates_collections,
          name, default_name):
    """`kind` / (`kind` + `other`) of the running counts (0 before any), TF1's
    false_positive_rate (fp, tn) and false_negative_rate (fn, tp)."""
    with get_default_graph().name_scope(name or default_name):
        counts = metrics._counts(labels, predictions, weights, [kind, other], "counts")
        (k, k_up), (o, o_up) = counts[kind], counts[other]
        value = metrics._div_no_nan(k, ops.add(k, o))
        update = metrics._div_no_nan(k_up, ops.add(k_up, o_up))
    return metrics._collect(value, update, metrics_collections, updates_collections)


def streaming_false_positive_rate(predictions, labels, weights=None, metrics_collections=None,
                                  updates_collections=None, name=None):
    """fp / (fp + tn) of binary predictions and labels (non-zero is true), as TF1's."""
    return _rate("fp", "tn", predictions, labels, weights, metrics_collections,
                 updates_collections, name, "false_positive_rate")


def streaming_false_negative_rate(predictions, labels, weights=None, metrics_collections=None,
                                  updates_collections=None, name=None):
    """fn / (fn + tp) of binary predictions and labels (non-zero is true), as TF1's."""
    return _rate("fn", "tp", predictions, labels, weights, metrics_collections,
                 updates_collections, name, "false_negative_rate")


def _covariance(predictions, labels, weights, name):
    """(value, update) of the unbiased running covariance (comoment / (count - 1), NaN while
    count <= 1), merging each batch's comoment into the running one (Chan et al.:
    C_AB = C_A + C_B + (mean_A(x) - mean_B(x)) (mean_A(y) - mean_B(y)) n_A n_B / n_AB);
    weights are frequency weights, their sum the count. `weights` is None or already
    broadcast to labels."""
    def var(var_name):
        return metrics._metric_variable([], var_name)

    with get_default_graph().name_scope(name):
        count, mean_x, mean_y, comoment = (var("count"), var("mean_prediction"),
                                           var("mean_label"), var("comoment"))
        if weights is None:
            n_b = ops.reduce_sum(ops.ones_like(labels))
            sum_x, sum_y = ops.reduce_sum(predictions), ops.reduce_sum(labels)
        else:
            n_b = ops.reduce_sum(weights)
            sum_x = ops.reduce_sum(ops.multiply(predictions, weights))
            sum_y = ops.reduce_sum(ops.multiply(labels, weights))
        n_ab = count.assign_add(n_b)
        n_a = ops.subtract(n_ab, n_b)
        batch_mean_x = metrics._div_no_nan(sum_x, n_b)
        batch_mean_y = metrics._div_no_nan(sum_y, n_b)
        step_x = metrics._div_no_nan(ops.multiply(ops.subtract(batch_mean_x, mean_x.value()),
                                                  n_b), n_ab)
        step_y = metrics._div_no_nan(ops.multiply(ops.subtract(batch_mean_y, mean_y.value()),
                                                  n_b), n_ab)
        prev_mean_x = ops.subtract(mean_x.assign_add(step_x), step_x)
        prev_mean_y = ops.subtract(mean_y.assign_add(step_y), step_y)
        residuals = ops.multiply(ops.subtract(predictions, batch_mean_x),
                                 ops.subtract(labels, batch_mean_y))
        if weights is not None:
            residuals = ops.multiply(residuals, weights)
        batch_comoment = ops.reduce_sum(residuals)
        merge = ops.multiply(ops.multiply(ops.subtract(prev_mean_x, batch_mean_x),
                                          ops.subtract(prev_mean_y, batch_mean_y)),
                             metrics._div_no_nan(ops.multiply(n_a, n_b), n_ab))
        new_comoment = comoment.assign_add(ops.add(batch_comoment, merge))

        def unbiased(c, n):
            nan = ops.add(ops.zeros_like(c), np.float32("nan"))
            return where(ops.less_equal(n, 1.0), nan,
                                 ops.divide(c, ops.subtract(n, 1.0)))
        return unbiased(comoment.value(), count.value()), unbiased(new_comoment, n_ab)


def _float_pair(predictions, labels, weights, what):
    labels, predictions, weights = metrics._float_pair(labels, predictions, weights, what)
    if weights is not None:
        weights = metrics._weights_like(labels, weights, what)
    return predictions, labels, weights


def streaming_covariance(predictions, labels, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    """The unbiased sample covariance of `predictions` and `labels` over every batch so far
    (NaN until the count passes 1), as TF1's tf.contrib.metrics.streaming_covariance;
    `weights` are frequency weights (their sum is the count)."""
    predictions, labels, weights = _float_pair(predictions, labels, weights,
                                               "streaming_covariance")
    value, update = _covariance(predictions, labels, weights, name or "covariance")
    return metrics._collect(value, update, metrics_collections, updates_collections)


def streaming_pearson_correlation(predictions, labels, weights=None, metrics_collections=None,
                                  updates_collections=None, name=None):
    """Pearson's r of `predictions` and `labels` over every batch so far:
    cov(p, l) / (sqrt(var(p)) sqrt(var(l))) of streaming_covariance's, as TF1's
    tf.contrib.metrics.streaming_pearson_correlation (weights are frequency weights)."""
    predictions, labels, weights = _float_pair(predictions, labels, weights,
                                               "streaming_pearson_correlation")
    with get_default_graph().name_scope(name or "pearson_r"):
        cov, cov_up = _covariance(predictions, labels, weights, "covariance")
        var_p, var_p_up = _covariance(predictions, predictions, weights, "variance_predictions")
        var_l, var_l_up = _covariance(labels, labels, weights, "variance_labels")
        value = ops.divide(cov, ops.multiply(ops.sqrt(var_p), ops.sqrt(var_l)))
        update = ops.divide(cov_up, ops.multiply(ops.sqrt(var_p_up), ops.sqrt(var_l_up)))
    return metrics._collect(value, update, metrics_collections, updates_collections)


def f1_score(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
             updates_collections=None, name=None):
    """The best F1 = 2 p r / (p + r + 1e-7) over `num_thresholds` thresholds in [0, 1] of
    scores `predictions` against binary labels, p = tp / (tp + fp + 1e-7) and
    r = tp / (tp + fn + 1e-7), as TF1's tf.contrib.metrics.f1_score (labels first, as there)."""
    if num_thresholds < 2:
        raise ValueError("f1_score: num_thresholds must be at least 2, got %d"
                         % num_thresholds)
    eps = 1e-7
    thresholds = metrics._default_thresholds(num_thresholds, "f1_score")

    def best(c):
        tp = c["tp"]
        p = ops.divide(tp, ops.add(ops.add(tp, c["fp"]), eps))
        r = ops.divide(tp, ops.add(ops.add(tp, c["fn"]), eps))
        f1 = ops.divide(ops.multiply(ops.multiply(p, r), 2.0), ops.add(ops.add(p, r), eps))
        return ops.reduce_max(f1)

    with get_default_graph().name_scope(name or "f1"):
        values, updates = metrics._counts_at_thresholds(labels, predictions, weights, thresholds,
                                                        ("tp", "fp", "fn"), "f1_score")
        value, update = best(values), best(updates)
    return metrics._collect(value, update, metrics_collections, updates_collections)


def count(values, weights=None, metrics_collections=None, updates_collections=None,
          name=None):
    """The running number of elements of `values` (the sum of their weights, when given), as
    TF1's tf.contrib.metrics.count; (value, update_op)."""
    with get_default_graph().name_scope(name or "count"):
        values = metrics._tensor(values, dtypes.float32)
        values, _, weights = metrics._remove_squeezable_dimensions(values, None, weights)
        w = metrics._weights_like(values, weights, "count")
        total = metrics._metric_variable([], "count")
        update = total.assign_add(ops.reduce_sum(w))
    return metrics._collect(total.value(), update, metrics_collections, updates_collections)


def cohen_kappa(labels, predictions_idx, num_classes, weights=None, metrics_collections=None,
                updates_collections=None, name=None):
    """Cohen's kappa (po - pe) / (n - pe) of class ids `labels` and `predictions_idx` in
    [0, num_classes) over every batch so far: po the (weighted) agreements, n all of them, pe
    the agreements expected by chance, sum over the classes of row total * column total / n
    (TF1's tf.contrib.metrics.cohen_kappa; float64, 0 before anything counts)."""
    num_classes = int(num_classes)
    if num_classes < 2:
        raise ValueError("cohen_kappa: num_classes must be at least 2, got %d" % num_classes)
    with get_default_graph().name_scope(name or "cohen_kappa"):
        cm = metrics._metric_variable([num_classes, num_classes], "counts_in_table",
                                      dtypes.float64)
        update_cm = cm.assign_add(metrics._confusion_update(labels, predictions_idx,
                                                            num_classes, weights,
                                                            "cohen_kappa"))

        def kappa(table):
            n = ops.reduce_sum(table)
            agree = ops.reduce_sum(ops.multiply(table, np.eye(num_classes)))
            chance = metrics._div_no_nan(
                ops.reduce_sum(ops.multiply(ops.reduce_sum(table, axis=0),
                                            ops.reduce_sum(table, axis=1))), n)
            return metrics._div_no_nan(ops.subtract(agree, chance), ops.subtract(n, chance))
        value, update = kappa(cm.value()), kappa(update_cm)
    return metrics._collect(value, update, metrics_collections, updates_collections)


def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32, name=None,
                     weights=None):
    """tf.confusion_matrix (TF1's tf.contrib.metrics.confusion_matrix)."""
    from shardflow.segment_ops import confusion_matrix as core
    return core(labels, predictions, num_classes=num_classes, dtype=dtype, name=name,
                weights=weights)


def set_difference(a, b, aminusb=True, validate_indices=True):
    """tf.sets.difference (TF1's tf.contrib.metrics.set_difference)."""
    from shardflow import sets_ops
    return sets_ops.difference(a, b, aminusb=aminusb, validate_indices=validate_indices)


def set_intersection(a, b, validate_indices=True):
    """tf.sets.intersection (TF1's tf.contrib.metrics.set_intersection)."""
    from shardflow import sets_ops
    return sets_ops.intersection(a, b, validate_indices=validate_indices)


def set_union(a, b, validate_indices=True):
    """tf.sets.union (TF1's tf.contrib.metrics.set_union)."""
    from shardflow import sets_ops
    return sets_ops.union(a, b, validate_indices=validate_indices)


def set_size(a, validate_indices=True):
    """tf.sets.size (TF1's tf.contrib.metrics.set_size)."""
    from shardflow import sets_ops
    return sets_ops.size(a, validate_indices=validate_indices)


def accuracy(predictions, labels, weights=None, name=None):
    """The fraction of predictions equal to labels in this batch (not streaming), weighted by
    `weights` when given, as TF1's: labels bool, integer or string, of predictions' dtype."""
    predictions, labels = ops.convert_to_tensor(predictions), ops.convert_to_tensor(labels)
    if not (labels.dtype.is_integer or labels.dtype in (dtypes.bool_, dtypes.string)):
        raise ValueError("accuracy: labels should have bool, integer, or string dtype, not %s"
                         % labels.dtype.name)
    if labels.dtype != predictions.dtype:
        raise ValueError("accuracy: dtypes of predictions and labels should match, got "
                         "predictions %s and labels %s" % (predictions.dtype.name,
                                                           labels.dtype.name))
    correct = ops.cast(ops.equal(predictions, labels), dtypes.float32)
    if weights is None:
        return ops.reduce_mean(correct, name=name)
    weights = ops.cast(weights, dtypes.float32)
    total = ops.multiply(weights, ops.ones_like(correct))
    return ops.divide(ops.reduce_sum(ops.multiply(correct, weights)), ops.reduce_sum(total),
                      name=name)


def aggregate_metrics(*value_update_tuples):
    """[(value, update), ...] -> ([values], [updates])."""
    if not value_update_tuples:
        raise ValueError("aggregate_metrics needs at least one (value, update_op) pair")
    values, updates = zip(*value_update_tuples)
    return list(values), list(updates)


def aggregate_metric_map(names_to_tuples):
    """{name: (value, update)} -> ({name: value}, {name: update})."""
    return ({k: v for k, (v, _) in names_to_tuples.items()},
            {k: u for k, (_, u) in names_to_tuples.items()})


def __getattr__(name):
    raise AttributeError("shardflow has no tf.contrib.metrics.%s; it has %s (and tf.metrics)"
                         % (name, ", ".join(__all__)))


__all__ = ["accuracy", "aggregate_metric_map", "aggregate_metrics", "cohen_kappa",
           "confusion_matrix", "count", "f1_score", "set_difference", "set_intersection",
           "set_size", "set_union", "streaming_accuracy", "streaming_auc",
           "streaming_covariance",
           "streaming_false_negative_rate", "streaming_false_negatives",
           "streaming_false_positive_rate", "streaming_false_positives", "streaming_mean",
           "streaming_mean_absolute_error", "streaming_mean_cosine_distance",
           "streaming_mean_iou", "streaming_mean_relative_error", "streaming_mean_squared_error",
           "streaming_mean_tensor", "streaming_pearson_correlation",
           "streaming_percentage_less", "streaming_precision",
           "streaming_precision_at_thresholds", "streaming_recall", "streaming_recall_at_k",
           "streaming_recall_at_thresholds", "streaming_root_mean_squared_error",
           "streaming_sensitivity_at_specificity", "streaming_sparse_average_precision_at_k",
           "streaming_sparse_precision_at_k",
           "streaming_sparse_precision_at_top_k", "streaming_sparse_recall_at_k",
           "streaming_specificity_at_sensitivity", "streaming_true_negatives",
           "streaming_true_positives"]
