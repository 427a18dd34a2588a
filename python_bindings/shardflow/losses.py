"""TF1's tf.losses: per-element losses weighted and reduced (by default to a scalar, the sum
over the elements with a non-zero weight divided by their number), added to the LOSSES
collection.

Example::

    loss = sf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    robust = sf.losses.huber_loss(y_true, y_pred, delta=2.0,
                                  reduction=sf.losses.Reduction.SUM)
    total = sf.losses.get_total_loss()
"""

import numpy as np

from shardflow import dtypes, nn, ops
from shardflow.array_ops import where
from shardflow.framework import GraphKeys, convert_to_tensor, get_default_graph
from shardflow.math_composites import div_no_nan

LOSSES = GraphKeys.LOSSES
REGULARIZATION_LOSSES = GraphKeys.REGULARIZATION_LOSSES


class Reduction(object):
    """How a tf.losses function reduces its weighted per-element losses (TF1's
    tf.losses.Reduction):

    NONE: the weighted losses, unreduced (their shape).
    SUM: their sum.
    MEAN: their sum / the sum of the weights (broadcast to the losses).
    SUM_OVER_BATCH_SIZE: their sum / the number of elements.
    SUM_BY_NONZERO_WEIGHTS (SUM_OVER_NONZERO_WEIGHTS): their sum / the number of elements
        whose weight is not 0; the default, as TF1's.
    A sum divided by 0 is 0.
    """

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError("invalid loss reduction %r; use one of sf.losses.Reduction's: %s"
                             % (key, ", ".join(sorted(set(cls.all())))))


def _is_python_scalar(w):
    return isinstance(w, (int, float, np.number)) and not isinstance(w, bool)


def _float_input(x, what):
    """x as a floating tensor (non-float inputs become float32, as TF1's casts)."""
    if isinstance(x, (list, tuple, int, float, np.ndarray, np.number)):
        x = np.asarray(x)
        if not np.issubdtype(x.dtype, np.floating):
            x = x.astype(np.float32)
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        x = ops.cast(x, dtypes.float32)
    return x


def _num_present(losses, weights, per_batch=False):
    """The number of elements of `losses` whose (broadcast) weight is not 0, as losses' dtype:
    a scalar, or per batch row ([batch, 1, ...]) when per_batch."""
    if _is_python_scalar(weights):
        present = ops.ones_like(losses) if weights != 0 else ops.zeros_like(losses)
    else:
        w = _float_input(weights, "weights")
        if w.dtype != losses.dtype:
            w = ops.cast(w, losses.dtype)
        nonzero = ops.cast(ops.not_equal(w, ops.zeros_like(w)), losses.dtype)
        present = ops.multiply(ops.ones_like(losses), nonzero)
    if not per_batch:
        return ops.reduce_sum(present)
    axes = list(range(1, losses.shape.ndims))
    return ops.reduce_sum(present, axis=axes, keepdims=True) if axes else present


def _weights_as(weights, losses):
    """weights as a Python number, or as a tensor of losses' dtype."""
    if _is_python_scalar(weights):
        return weights
    w = _float_input(weights, "weights")
    return ops.cast(w, losses.dtype) if w.dtype != losses.dtype else w


def _check_broadcastable(weights, losses, what):
    """ValueError unless tensor `weights` has rank 0, or losses' rank with each dimension 1 or
    losses' (TF1's weights_broadcast_ops.assert_broadcastable on static shapes): weights
    [batch, 1] against per-row losses [batch] would otherwise make [batch, batch]."""
    w_rank, l_rank = weights.shape.ndims, losses.shape.ndims
    if w_rank is None or l_rank is None or w_rank == 0:
        return
    w_dims, l_dims = weights.shape.as_list(), losses.shape.as_list()
    if w_rank != l_rank or any(w is not None and v is not None and w != 1 and w != v
                               for w, v in zip(w_dims, l_dims)):
        hint = ("; to weigh whole rows give weights of shape %s"
                % ([w_dims[0] if w_dims else None] + [1] * (l_rank - 1))
                if w_rank == l_rank - 1 and l_rank > 1 else "")
        raise ValueError("%s: weights can not be broadcast to values: weights %s, losses %s "
                         "(weights must be a scalar or of the losses' rank, each dimension 1 "
                         "or the losses'%s)" % (what, w_dims, l_dims, hint))


class _maybe_scope(object):
    """name_scope(scope) when a scope is given; else names stay as they are."""

    def __init__(self, scope):
        self._cm = get_default_graph().name_scope(scope) if scope else None

    def __enter__(self):
        return self._cm.__enter__() if self._cm is not None else None

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc) if self._cm is not None else False


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, name=None):
    """`losses` times `weights` (a scalar or a tensor broadcastable to losses), reduced as
    `reduction` says (a Reduction; by default the sum over the number of non-zero weights),
    added to `loss_collection` (LOSSES; None adds it nowhere), as TF1's
    tf.losses.compute_weighted_loss. The result has losses' dtype; `name` names it."""
    with _maybe_scope(scope):
        return _weighted_loss(losses, weights, loss_collection, reduction, name)


def _known_nonempty(x):
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    return dims is not None and all(d is not None and d > 0 for d in dims)


def _weighted_loss(losses, weights, loss_collection, reduction, name,
                   what="compute_weighted_loss"):
    """compute_weighted_loss inside the caller's scope; `what` names the loss in errors."""
    Reduction.validate(reduction)
    losses = _float_input(losses, "losses")
    if weights is None:
        weights = 1.0
    w = _weights_as(weights, losses)
    if not _is_python_scalar(w):
        _check_broadcastable(w, losses, what)
    weighted = losses if _is_python_scalar(w) and w == 1.0 else ops.multiply(losses, w)
    if reduction == Reduction.NONE:
        loss = ops.identity(weighted, name=name) if name else weighted
    elif reduction == Reduction.SUM:
        loss = ops.reduce_sum(weighted, name=name)
    elif (_is_python_scalar(w) and w != 0 and _known_nonempty(losses) and reduction in (
            Reduction.SUM_OVER_BATCH_SIZE, Reduction.SUM_BY_NONZERO_WEIGHTS)):
        # Every element counts: the plain mean (the graph unweighted losses always had).
        loss = ops.reduce_mean(weighted, name=name)
    else:   # as TF1, a sum over no elements (an empty batch) is 0, not NaN
        if reduction == Reduction.MEAN:
            den = ops.reduce_sum(ops.multiply(ops.ones_like(losses), w))
        elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
            den = ops.reduce_sum(ops.ones_like(losses))
        else:
            den = _num_present(losses, w)
        loss = div_no_nan(ops.reduce_sum(weighted), den, name=name)
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)
    return loss


_DEFAULT = Reduction.SUM_BY_NONZERO_WEIGHTS


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=LOSSES, reduction=_DEFAULT, name=None):
    """(predictions - labels) ** 2, weighted and reduced (compute_weighted_loss); labels and
    predictions must have one shape, as TF1's."""
    with _maybe_scope(scope):
        labels, predictions = _pair(labels, predictions, "mean_squared_error")
        per_element = ops.squared_difference(predictions, labels)
        return _weighted_loss(per_element, weights, loss_collection, reduction, name,
                              "mean_squared_error")


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=LOSSES, reduction=_DEFAULT, name=None):
    """|predictions - labels|, weighted and reduced (compute_weighted_loss); labels and
    predictions must have one shape, as TF1's."""
    with _maybe_scope(scope):
        labels, predictions = _pair(labels, predictions, "absolute_difference")
        per_element = ops.abs(ops.subtract(predictions, labels))
        return _weighted_loss(per_element, weights, loss_collection, reduction, name,
                              "absolute_difference")


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=LOSSES, reduction=_DEFAULT, name=None):
    """Cross-entropy of softmax(logits) against one-hot (or soft) labels, per row; weights
    (a scalar or [batch]) and reduction as compute_weighted_loss."""
    with _maybe_scope(scope):
        logits = ops.convert_to_tensor(logits)
        onehot_labels = ops.cast(onehot_labels, logits.dtype)
        _check_same_shape(onehot_labels, logits, "softmax_cross_entropy",
                          ("onehot_labels", "logits"))
        if label_smoothing:
            classes = logits.shape.as_list()[-1]
            classes = float(classes) if classes is not None else \
                ops.cast(ops.shape(logits)[-1], logits.dtype)
            onehot_labels = ops.add(ops.multiply(onehot_labels, 1.0 - label_smoothing),
                                    label_smoothing / classes)
        per_row = nn.softmax_cross_entropy_with_logits(labels=onehot_labels, logits=logits)
        return _weighted_loss(per_row, weights, loss_collection, reduction, name,
                              "softmax_cross_entropy")


def _squeeze_class_ids(labels, logits, weights):
    """TF1's losses _remove_squeezable_dimensions(expected_rank_diff=1): class ids of
    logits' rank ([batch, 1] against [batch, classes]) lose their last dimension of size 1,
    then weights one rank above them lose theirs; where a rank is unknown until the step runs,
    the step decides, as TF1."""
    from shardflow.metrics import (_last_dim_may_be_one, _rank_difference, _squeeze_last_if,
                                   _squeeze_labels_or_predictions)
    labels, logits = _squeeze_labels_or_predictions(convert_to_tensor(labels),
                                                    convert_to_tensor(logits), 1)
    if weights is None or _is_python_scalar(weights):
        return labels, logits, weights
    weights = convert_to_tensor(weights)
    l_rank, w_rank = labels.shape.ndims, weights.shape.ndims
    if l_rank is not None and w_rank is not None:
        if w_rank == l_rank + 1:
            weights = ops.squeeze(weights, [-1])
    elif _last_dim_may_be_one(weights):
        weights = _squeeze_last_if(ops.equal(_rank_difference(weights, labels), 1), weights)
    return labels, logits, weights


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=LOSSES, reduction=_DEFAULT, name=None):
    """Cross-entropy of softmax(logits) against class indices, per row; weights and
    reduction as compute_weighted_loss. As TF1's, labels [batch, 1] and weights [batch, 1]
    lose their last dimension."""
    with _maybe_scope(scope):
        labels, logits, weights = _squeeze_class_ids(labels, logits, weights)
        per_row = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return _weighted_loss(per_row, weights, loss_collection, reduction, name,
                              "sparse_softmax_cross_entropy")


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=LOSSES, reduction=_DEFAULT, name=None):
    """Sigmoid cross-entropy of logits against labels in [0, 1] of the same shape (TF1's
    tf.losses.sigmoid_cross_entropy; label_smoothing moves them toward 1/2), weighted and
    reduced (compute_weighted_loss)."""
    with _maybe_scope(scope):
        logits = ops.convert_to_tensor(logits)
        labels = ops.cast(multi_class_labels, logits.dtype)
        if label_smoothing:
            labels = ops.add(ops.multiply(labels, 1.0 - label_smoothing), 0.5 * label_smoothing)
        per_element = nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        return _weighted_loss(per_element, weights, loss_collection, reduction, name,
                              "sigmoid_cross_entropy")


def _pair(labels, predictions, what):
    """(labels, predictions) as float tensors of predictions' dtype and compatible shapes."""
    predictions = _float_input(predictions, what)
    labels = _float_input(labels, what)
    if labels.dtype != predictions.dtype:
        labels = ops.cast(labels, predictions.dtype)
    _check_same_shape(labels, predictions, what)
    return labels, predictions


def _check_same_shape(labels, predictions, what, names=("labels", "predictions")):
    """ValueError unless the static shapes of labels and predictions may be one, as TF1's
    assert_is_compatible_with."""
    a, b = labels.shape, predictions.shape
    if a.ndims is not None and b.ndims is not None and (
            a.ndims != b.ndims or any(p is not None and q is not None and p != q
                                      for p, q in zip(a.as_list(), b.as_list()))):
        raise ValueError("%s: %s %s and %s %s must have the same shape"
                         % (what, names[0], a.as_list(), names[1], b.as_list()))


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=LOSSES, reduction=_DEFAULT, name=None):
    """0.5 * e ** 2 where |e| <= delta, else delta * (|e| - 0.5 * delta), for
    e = predictions - labels (TF1's tf.losses.huber_loss), weighted and reduced
    (compute_weighted_loss)."""
    with _maybe_scope(scope):
        labels, predictions = _pair(labels, predictions, "huber_loss")
        abs_error = ops.abs(ops.subtract(predictions, labels))
        quadratic = ops.minimum(abs_error, np.asarray(delta, predictions.dtype.as_numpy_dtype))
        linear = ops.subtract(abs_error, quadratic)
        per_element = ops.add(ops.multiply(ops.square(quadratic), 0.5),
                              ops.multiply(linear, float(delta)))
        return _weighted_loss(per_element, weights, loss_collection, reduction, name,
                              "huber_loss")


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=LOSSES, reduction=_DEFAULT, dim=None, name=None):
    """1 - sum(labels * predictions, axis) (kept as a dimension of size 1) for unit-normalized
    labels and predictions, as TF1's tf.losses.cosine_distance (`dim` is its older name for
    axis), weighted and reduced (compute_weighted_loss)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("cosine_distance: give axis or dim (its older name), not both")
        axis = dim
    if axis is None:
        raise ValueError("cosine_distance needs axis, the dimension the vectors lie along")
    with _maybe_scope(scope):
        labels, predictions = _pair(labels, predictions, "cosine_distance")
        dots = ops.reduce_sum(ops.multiply(labels, predictions), axis=[axis], keepdims=True)
        per_vector = ops.subtract(1.0, dots)
        return _weighted_loss(per_vector, weights, loss_collection, reduction, name,
                              "cosine_distance")


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=LOSSES,
               reduction=_DEFAULT, name=None):
    """max(0, 1 - (2 * labels - 1) * logits) for labels in {0, 1} (TF1's
    tf.losses.hinge_loss), weighted and reduced (compute_weighted_loss)."""
    with _maybe_scope(scope):
        labels, logits = _pair(labels, logits, "hinge_loss")
        signs = ops.subtract(ops.multiply(labels, 2.0), 1.0)
        per_element = nn.relu(ops.subtract(1.0, ops.multiply(signs, logits)))
        return _weighted_loss(per_element, weights, loss_collection, reduction, name,
                              "hinge_loss")


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=LOSSES, reduction=_DEFAULT, name=None):
    """-labels * log(predictions + epsilon) - (1 - labels) * log(1 - predictions + epsilon)
    for probabilities `predictions` (TF1's tf.losses.log_loss), weighted and reduced
    (compute_weighted_loss)."""
    with _maybe_scope(scope):
        labels, predictions = _pair(labels, predictions, "log_loss")
        eps = np.asarray(epsilon, predictions.dtype.as_numpy_dtype)
        positive = ops.multiply(labels, ops.log(ops.add(predictions, eps)))
        negative = ops.multiply(ops.subtract(1.0, labels),
                                ops.log(ops.add(ops.subtract(1.0, predictions), eps)))
        per_element = ops.negative(ops.add(positive, negative))
        return _weighted_loss(per_element, weights, loss_collection, reduction, name,
                              "log_loss")


def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None,
                                loss_collection=LOSSES, name=None):
    """For each batch row, the mean of (d_i - d_j) ** 2 over the ordered pairs i != j of its
    elements with non-zero weight, d = predictions - labels; times the row's weight and
    summed over the rows (TF1's tf.losses.mean_pairwise_squared_error: no reduction
    argument). `weights` is a scalar, [batch] or [batch, 1, ...]; a row with fewer than two
    elements adds 0."""
    with _maybe_scope(scope):
        labels, predictions = _pair(labels, predictions, "mean_pairwise_squared_error")
        diffs = ops.subtract(predictions, labels)
        rank = diffs.shape.ndims
        if rank is None or rank < 2:
            raise ValueError("mean_pairwise_squared_error needs [batch, ...] inputs of known "
                             "rank >= 2, got %s" % (diffs.shape,))
        w = _weights_as(weights, diffs)
        if not _is_python_scalar(w) and w.shape.ndims == 1:
            w = ops.reshape(w, [-1] + [1] * (rank - 1))
        axes = list(range(1, rank))
        present = _num_present(diffs, w, per_batch=True)        # [batch, 1, ...]
        sum_squares = ops.reduce_sum(ops.square(diffs), axis=axes, keepdims=True)
        term1 = ops.multiply(div_no_nan(sum_squares, ops.maximum(ops.subtract(present, 1.0),
                                                                 0.0)), 2.0)
        sum_diff = ops.reduce_sum(diffs, axis=axes, keepdims=True)
        pairs = ops.maximum(ops.multiply(present, ops.subtract(present, 1.0)), 0.0)
        term2 = ops.multiply(div_no_nan(ops.square(sum_diff), pairs), 2.0)
        weighted = ops.subtract(term1, term2)
        if not (_is_python_scalar(w) and w == 1.0):
            weighted = ops.multiply(weighted, w)
        total = ops.reduce_sum(weighted)
        loss = where(ops.greater(ops.reduce_sum(present), 0.0), total, ops.zeros_like(total),
                     name=name)
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)
    return loss


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
