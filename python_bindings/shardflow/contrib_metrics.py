"""tf.contrib.metrics: TF1's streaming metrics, which take (predictions, labels) where tf.metrics
takes (labels, predictions); each returns tf.metrics' (value, update_op) with its local
variables. Also accuracy (not streaming), aggregate_metrics and aggregate_metric_map.

Example::

    acc, update = sf.contrib.metrics.streaming_accuracy(predictions, labels)
    names_to_values, names_to_updates = sf.contrib.metrics.aggregate_metric_map({
        "accuracy": sf.contrib.metrics.streaming_accuracy(predictions, labels),
        "auc": sf.contrib.metrics.streaming_auc(probabilities, labels)})
"""

from shardflow import dtypes, metrics, ops


def _swapped(metric):
    def streaming(predictions, labels, weights=None, metrics_collections=None,
                  updates_collections=None, name=None, **kwargs):
        return metric(labels, predictions, weights=weights,
                      metrics_collections=metrics_collections,
                      updates_collections=updates_collections, name=name, **kwargs)
    streaming.__name__ = "streaming_" + metric.__name__
    streaming.__doc__ = ("tf.metrics.%s with TF1 contrib's argument order (predictions, labels, "
                         "...); returns (value, update_op)." % metric.__name__)
    return streaming


streaming_accuracy = _swapped(metrics.accuracy)
streaming_auc = _swapped(metrics.auc)
streaming_precision = _swapped(metrics.precision)
streaming_recall = _swapped(metrics.recall)
streaming_mean_squared_error = _swapped(metrics.mean_squared_error)
streaming_mean_absolute_error = _swapped(metrics.mean_absolute_error)
streaming_root_mean_squared_error = _swapped(metrics.root_mean_squared_error)
streaming_true_positives = _swapped(metrics.true_positives)
streaming_false_positives = _swapped(metrics.false_positives)
streaming_true_negatives = _swapped(metrics.true_negatives)
streaming_false_negatives = _swapped(metrics.false_negatives)


def streaming_mean(values, weights=None, metrics_collections=None, updates_collections=None,
                   name=None):
    """tf.metrics.mean: the running (weighted) mean of `values`; (value, update_op)."""
    return metrics.mean(values, weights=weights, metrics_collections=metrics_collections,
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


def accuracy(predictions, labels, weights=None, name=None):
    """The fraction of predictions equal to labels in this batch (not streaming), weighted by
    `weights` when given."""
    correct = ops.cast(ops.equal(predictions, labels), dtypes.float32)
    if weights is None:
        return ops.reduce_mean(correct, name=name)
    weights = ops.cast(weights, dtypes.float32)
    return ops.divide(ops.reduce_sum(ops.multiply(correct, weights)), ops.reduce_sum(weights),
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


__all__ = ["accuracy", "aggregate_metric_map", "aggregate_metrics", "streaming_accuracy",
           "streaming_auc", "streaming_false_negatives", "streaming_false_positives",
           "streaming_mean", "streaming_mean_absolute_error", "streaming_mean_iou",
           "streaming_mean_relative_error", "streaming_mean_squared_error",
           "streaming_precision", "streaming_recall", "streaming_root_mean_squared_error",
           "streaming_true_negatives", "streaming_true_positives"]
