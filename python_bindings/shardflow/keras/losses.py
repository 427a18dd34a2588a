"""tf.keras.losses: per-example losses of (y_true, y_pred), and `get` for Keras's names.

`y_pred` are the model's outputs (probabilities after a softmax or sigmoid). As TF 1.15's
Keras backend does, when `y_pred` is the output of a Softmax (Sigmoid) op the cross-entropy
is computed from that op's input, the logits, which is exact where the log of a clipped
probability is not.

Example: ``model.compile("adam", loss="sparse_categorical_crossentropy")`` or
``loss=keras.losses.mean_squared_error``, ``loss="huber_loss"``, ``loss=keras.losses.Huber(2.)``.

Sign convention (TF 1.15's): ``cosine_similarity``, ``cosine_proximity`` and ``cosine`` are
all the *negative* cosine of y_true and y_pred (-1 when they point the same way), so that
minimising the loss aligns them.
"""

from shardflow import dtypes, nn, ops
from shardflow.keras import backend as K


def _clipped_log(p):
    return ops.log(ops.clip_by_value(p, K.epsilon(), 1.0 - K.epsilon()))


def _logits_of(y_pred, op_type):
    return y_pred.op.inputs[0] if getattr(y_pred.op, "type", None) == op_type else None


def categorical_crossentropy(y_true, y_pred, from_logits=False):
    """-sum(y_true * log(y_pred)) over the last axis; y_true one-hot (or soft)."""
    y_true = ops.cast(y_true, y_pred.dtype)
    logits = y_pred if from_logits else _logits_of(y_pred, "Softmax")
    if logits is not None:
        return nn.softmax_cross_entropy_with_logits(labels=y_true, logits=logits)
    y_pred = ops.divide(y_pred, ops.reduce_sum(y_pred, axis=-1, keepdims=True))
    return ops.negative(ops.reduce_sum(ops.multiply(y_true, _clipped_log(y_pred)), axis=-1))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False):
    """-log(y_pred[y_true]); y_true class indices of shape [batch] (or [batch, 1])."""
    labels = ops.cast(ops.reshape(y_true, [-1]), dtypes.int32)
    logits = y_pred if from_logits else _logits_of(y_pred, "Softmax")
    if logits is None:
        logits = _clipped_log(y_pred)   # softmax(log p) = p for p that sums to one
    return nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def binary_crossentropy(y_true, y_pred, from_logits=False):
    """The mean over the last axis of the sigmoid cross-entropy."""
    y_true = ops.cast(y_true, y_pred.dtype)
    logits = y_pred if from_logits else _logits_of(y_pred, "Sigmoid")
    if logits is None:
        p = ops.clip_by_value(y_pred, K.epsilon(), 1.0 - K.epsilon())
        logits = ops.log(ops.divide(p, ops.subtract(1.0, p)))
    return ops.reduce_mean(nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=logits),
                           axis=-1)


def mean_squared_error(y_true, y_pred):
    return ops.reduce_mean(ops.squared_difference(y_pred, ops.cast(y_true, y_pred.dtype)),
                           axis=-1)


def mean_absolute_error(y_true, y_pred):
    return ops.reduce_mean(ops.abs(ops.subtract(y_pred, ops.cast(y_true, y_pred.dtype))),
                           axis=-1)


def huber_loss(y_true, y_pred, delta=1.0):
    """The mean over the last axis of 0.5 * e^2 where |e| <= delta, else
    0.5 * delta^2 + delta * (|e| - delta); e = y_pred - y_true."""
    abs_error = ops.abs(ops.subtract(y_pred, ops.cast(y_true, y_pred.dtype)))
    quadratic = ops.minimum(abs_error, delta)
    linear = ops.subtract(abs_error, quadratic)
    return ops.reduce_mean(ops.add(ops.multiply(0.5, ops.square(quadratic)),
                                   ops.multiply(delta, linear)), axis=-1)


class Huber:
    """huber_loss with `delta` as a loss object: ``loss=keras.losses.Huber(delta=2.0)``;
    calling it gives the mean over the batch (Keras's SUM_OVER_BATCH_SIZE reduction)."""

    def __init__(self, delta=1.0, reduction=None, name="huber_loss"):
        self.delta = float(delta)
        self.__name__ = self.name = name

    def __call__(self, y_true, y_pred, sample_weight=None):
        if sample_weight is not None:
            raise ValueError("Huber: sample_weight is not supported")
        return ops.reduce_mean(huber_loss(y_true, y_pred, self.delta))


def kullback_leibler_divergence(y_true, y_pred):
    """sum(y_true * log(y_true / y_pred)) over the last axis, both clipped to [epsilon, 1]."""
    y_true = ops.clip_by_value(ops.cast(y_true, y_pred.dtype), K.epsilon(), 1.0)
    y_pred = ops.clip_by_value(y_pred, K.epsilon(), 1.0)
    return ops.reduce_sum(ops.multiply(y_true, ops.log(ops.divide(y_true, y_pred))), axis=-1)


def cosine_proximity(y_true, y_pred, axis=-1):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred)) over `axis`: the negative cosine
    (TF 1.15's sign for keras.losses.cosine_proximity / cosine_similarity / cosine)."""
    y_true = nn.l2_normalize(ops.cast(y_true, y_pred.dtype), axis=axis)
    y_pred = nn.l2_normalize(y_pred, axis=axis)
    return ops.negative(ops.reduce_sum(ops.multiply(y_true, y_pred), axis=axis))


cosine_similarity = cosine = cosine_proximity
kld = KLD = kullback_leibler_divergence
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error

_BY_NAME = {"categorical_crossentropy": categorical_crossentropy,
            "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
            "binary_crossentropy": binary_crossentropy, "mean_squared_error": mean_squared_error,
            "mse": mean_squared_error, "mean_absolute_error": mean_absolute_error,
            "mae": mean_absolute_error, "huber_loss": huber_loss,
            "kullback_leibler_divergence": kullback_leibler_divergence,
            "kld": kullback_leibler_divergence, "KLD": kullback_leibler_divergence,
            "cosine_proximity": cosine_proximity, "cosine_similarity": cosine_proximity,
            "cosine": cosine_proximity}


def get(identifier):
    """The loss function named `identifier`, or `identifier` itself when it is callable."""
    if callable(identifier):
        return identifier
    fn = _BY_NAME.get(identifier)
    if fn is None:
        raise ValueError("unknown loss %r; known: %s" % (identifier, ", ".join(sorted(_BY_NAME))))
    return fn
