"""TF1's tf.losses: losses that are scalar means, added to the LOSSES collection.

Example::

    loss = sf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    total = sf.losses.get_total_loss()
"""

from shardflow import nn, ops
from shardflow.framework import GraphKeys, get_default_graph

LOSSES = GraphKeys.LOSSES
REGULARIZATION_LOSSES = GraphKeys.REGULARIZATION_LOSSES


def _finish(per_example, weights, loss_collection, name):
    if weights is not None and not (isinstance(weights, (int, float)) and weights == 1.0):
        per_example = ops.multiply(per_example, weights)
    loss = ops.reduce_mean(per_example, name=name)
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)
    return loss


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=LOSSES, name=None):
    """mean((predictions - labels) ** 2)."""
    return _finish(ops.squared_difference(predictions, labels), weights, loss_collection, name)


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=LOSSES, name=None):
    """mean(|predictions - labels|)."""
    return _finish(ops.abs(ops.subtract(predictions, labels)), weights, loss_collection, name)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=LOSSES, name=None):
    """Mean cross-entropy of softmax(logits) against one-hot (or soft) labels."""
    if label_smoothing:
        classes = float(logits.shape.as_list()[-1])
        onehot_labels = ops.add(ops.multiply(onehot_labels, 1.0 - label_smoothing),
                                label_smoothing / classes)
    return _finish(nn.softmax_cross_entropy_with_logits(labels=onehot_labels, logits=logits),
                   weights, loss_collection, name)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=LOSSES, name=None):
    """Mean cross-entropy of softmax(logits) against class indices."""
    return _finish(nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits),
                   weights, loss_collection, name)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=LOSSES, name=None):
    """Mean sigmoid cross-entropy of logits against labels in [0, 1] of the same shape (TF1's
    tf.losses.sigmoid_cross_entropy; label_smoothing moves them toward 1/2)."""
    labels = ops.cast(multi_class_labels, logits.dtype)
    if label_smoothing:
        labels = ops.add(ops.multiply(labels, 1.0 - label_smoothing), 0.5 * label_smoothing)
    return _finish(nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits),
                   weights, loss_collection, name)


def add_loss(loss, loss_collection=LOSSES):
    """Adds `loss` to `loss_collection` (LOSSES), for get_losses and get_total_loss."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=LOSSES):
    """The losses added to `loss_collection` (those whose name matches `scope`, when given)."""
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    """The penalties in GraphKeys.REGULARIZATION_LOSSES, as TF1: one per regularized variable
    (get_variable(regularizer=), layers' kernel_regularizer=, ...), filtered by `scope`."""
    return get_default_graph().get_collection(REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of get_regularization_losses(scope), or a 0.0 constant when there are none, as
    TF1's tf.losses.get_regularization_loss."""
    losses = get_regularization_losses(scope)
    if not losses:
        return ops.constant(0.0, name=name)
    return ops.add_n(losses, name=name) if len(losses) > 1 else ops.identity(losses[0], name=name)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of every loss in the LOSSES collection (and the regularization losses), as
    TF1's tf.losses.get_total_loss; an error when there are none."""
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("get_total_loss: no losses were added (use sf.losses.*)")
    return ops.add_n(losses, name=name) if len(losses) > 1 else ops.identity(losses[0], name=name)
