"""tf.keras.metrics as functions of (y_true, y_pred) giving one value per example; the model
averages them over each batch and, weighted by batch size, over the epoch.

Example: ``model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])``.
"""

from shardflow import dtypes, nn, ops
from shardflow.keras import losses as _losses


def _as_float(b):
    return ops.cast(b, dtypes.float32)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    pred = _as_float(ops.greater(y_pred, threshold))
    return ops.reduce_mean(_as_float(ops.equal(ops.cast(y_true, dtypes.float32), pred)), axis=-1)


def categorical_accuracy(y_true, y_pred):
    return _as_float(ops.equal(ops.argmax(y_true, axis=-1), ops.argmax(y_pred, axis=-1)))


def sparse_categorical_accuracy(y_true, y_pred):
    labels = ops.cast(ops.reshape(y_true, [-1]), dtypes.int64)
    return _as_float(ops.equal(labels, ops.argmax(y_pred, axis=-1)))


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1 where the class of one-hot y_true is among the k largest of y_pred (tf.nn.in_top_k:
    ties with the true class's score count as in)."""
    return _as_float(nn.in_top_k(y_pred, ops.cast(ops.argmax(y_true, axis=-1), dtypes.int32),
                                 k))


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """top_k_categorical_accuracy for class indices y_true ([batch] or [batch, 1])."""
    return _as_float(nn.in_top_k(y_pred, ops.cast(ops.reshape(y_true, [-1]), dtypes.int32),
                                 k))


mean_squared_error = mse = _losses.mean_squared_error
mean_absolute_error = mae = _losses.mean_absolute_error
categorical_crossentropy = _losses.categorical_crossentropy
sparse_categorical_crossentropy = _losses.sparse_categorical_crossentropy
binary_crossentropy = _losses.binary_crossentropy
kullback_leibler_divergence = kld = KLD = _losses.kullback_leibler_divergence
cosine_proximity = cosine = _losses.cosine_proximity   # TF 1.15's sign: the negative cosine


def accuracy_for(loss_fn, output_shape):
    """The accuracy Keras means by 'accuracy'/'acc' for this loss and output."""
    if loss_fn is _losses.sparse_categorical_crossentropy:
        return sparse_categorical_accuracy
    if loss_fn is _losses.binary_crossentropy or (output_shape and output_shape[-1] == 1):
        return binary_accuracy
    return categorical_accuracy


def get(identifier, loss_fn=None, output_shape=None):
    """(history name, function) for a metric name or function; 'accuracy' and 'acc' are both
    named 'acc', as TF 1.x's Keras names them."""
    if identifier in ("accuracy", "acc"):
        return "acc", accuracy_for(loss_fn, output_shape)
    if callable(identifier):
        return getattr(identifier, "__name__", "metric"), identifier
    known = {"mse": mse, "mae": mae, "mean_squared_error": mse, "mean_absolute_error": mae,
             "binary_accuracy": binary_accuracy, "categorical_accuracy": categorical_accuracy,
             "sparse_categorical_accuracy": sparse_categorical_accuracy,
             "categorical_crossentropy": categorical_crossentropy,
             "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
             "binary_crossentropy": binary_crossentropy,
             "top_k_categorical_accuracy": top_k_categorical_accuracy,
             "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy,
             "kullback_leibler_divergence": kullback_leibler_divergence,
             "cosine_proximity": cosine_proximity}
    if identifier not in known:
        raise ValueError("unknown metric %r; known: accuracy, acc, %s"
                         % (identifier, ", ".join(sorted(known))))
    return identifier, known[identifier]
