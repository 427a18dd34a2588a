"""tf.keras.losses: per-example loss functions of (y_true, y_pred), the loss classes (Loss
objects that reduce them to a scalar), Reduction, and `get`/`serialize`/`deserialize`.

`y_pred` are the model's outputs (probabilities after a softmax or sigmoid). As TF 1.15's
Keras backend does, when `y_pred` is the output of a Softmax (Sigmoid) op the cross-entropy
is computed from that op's input, the logits, which is exact where the log of a clipped
probability is not.

Example: ``model.compile("adam", loss="sparse_categorical_crossentropy")`` or
``loss=keras.losses.mean_squared_error``, ``loss="huber_loss"``, ``loss=keras.losses.Huber(2.)``,
``loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)``.

A Loss object called as ``loss(y_true, y_pred, sample_weight=None)`` gives, as TF 1.15's,
the per-example losses times `sample_weight` (broadcast; a [batch] weight is expanded to the
losses' rank), reduced by `reduction`: Reduction.SUM_OVER_BATCH_SIZE (the default, also for
AUTO) divides their sum by their number of elements, SUM sums, NONE keeps them.

Sign convention (TF 1.15's): ``cosine_similarity``, ``cosine_proximity`` and ``cosine`` are
all the *negative* cosine of y_true and y_pred (-1 when they point the same way), so that
minimising the loss aligns them.
"""

import numpy as np

from shardflow import dtypes, nn, ops
from shardflow.keras import backend as K


def _clipped_log(p):
    return ops.log(ops.clip_by_value(p, K.epsilon(), 1.0 - K.epsilon()))


def _logits_of(y_pred, op_type):
    return y_pred.op.inputs[0] if getattr(y_pred.op, "type", None) == op_type else None


def _num_classes(y_true, dtype):
    n = y_true.shape.as_list()[-1] if y_true.shape.ndims else None
    if n is not None:
        return float(n)
    return ops.reduce_sum(ops.ones_like(y_true), axis=-1, keepdims=True)  # fed at run time


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0):
    """-sum(y_true * log(y_pred)) over the last axis; y_true one-hot (or soft). With
    label_smoothing s, y_true becomes y_true * (1 - s) + s / num_classes first."""
    y_true = ops.cast(y_true, y_pred.dtype)
    if label_smoothing:
        s = float(label_smoothing)
        y_true = ops.add(ops.multiply(y_true, 1.0 - s),
                         ops.divide(s, _num_classes(y_true, y_pred.dtype)))
    logits = y_pred if from_logits else _logits_of(y_pred, "Softmax")
    if logits is not None:
        return nn.softmax_cross_entropy_with_logits(labels=y_true, logits=logits)
    y_pred = ops.divide(y_pred, ops.reduce_sum(y_pred, axis=-1, keepdims=True))
    return ops.negative(ops.reduce_sum(ops.multiply(y_true, _clipped_log(y_pred)), axis=-1))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False):
    """-log(y_pred[y_true]) over the last axis of y_pred ([batch, classes], or [batch, steps,
    ..., classes] for sequence outputs); y_true class indices of y_pred's shape without its
    last axis (or with a last axis of 1). The loss has that shape."""
    labels = ops.cast(ops.reshape(y_true, [-1]), dtypes.int32)
    logits = y_pred if from_logits else _logits_of(y_pred, "Softmax")
    if logits is None:
        logits = _clipped_log(y_pred)   # softmax(log p) = p for p that sums to one
    rank = y_pred.shape.ndims
    if rank is None or rank <= 2:
        return nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    classes = y_pred.shape.as_list()[-1]
    flat = ops.reshape(logits, [-1, classes if classes is not None else ops.shape(logits)[-1]])
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=flat)
    return ops.reshape(loss, ops.shape(y_pred)[:-1])


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0):
    """The mean over the last axis of the sigmoid cross-entropy. With label_smoothing s,
    y_true becomes y_true * (1 - s) + 0.5 * s first."""
    y_true = ops.cast(y_true, y_pred.dtype)
    if label_smoothing:
        s = float(label_smoothing)
        y_true = ops.add(ops.multiply(y_true, 1.0 - s), 0.5 * s)
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


def mean_absolute_percentage_error(y_true, y_pred):
    """100 * mean(|(y_true - y_pred) / max(|y_true|, epsilon)|) over the last axis."""
    y_true = ops.cast(y_true, y_pred.dtype)
    diff = ops.abs(ops.divide(ops.subtract(y_true, y_pred),
                              ops.maximum(ops.abs(y_true), K.epsilon())))
    return ops.multiply(100.0, ops.reduce_mean(diff, axis=-1))


def mean_squared_logarithmic_error(y_true, y_pred):
    """mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))^2) over the last axis."""
    y_true = ops.cast(y_true, y_pred.dtype)
    first = ops.log(ops.add(ops.maximum(y_pred, K.epsilon()), 1.0))
    second = ops.log(ops.add(ops.maximum(y_true, K.epsilon()), 1.0))
    return ops.reduce_mean(ops.squared_difference(first, second), axis=-1)


def _maybe_convert_labels(y_true):
    """Labels that are all 0 or 1 become -1 or 1 (decided on the fed values, as TF 1.15)."""
    is_binary = ops.reduce_min(ops.cast(ops.logical_or(ops.equal(y_true, 0.0),
                                                       ops.equal(y_true, 1.0)), y_true.dtype))
    # y_true when not binary; 2 * y_true - 1 = y_true + (y_true - 1) when binary
    return ops.add(y_true, ops.multiply(is_binary, ops.subtract(y_true, 1.0)))


def hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0)) over the last axis; y_true in {-1, 1} (or {0, 1},
    converted)."""
    y_true = _maybe_convert_labels(ops.cast(y_true, y_pred.dtype))
    return ops.reduce_mean(ops.maximum(ops.subtract(1.0, ops.multiply(y_true, y_pred)), 0.0),
                           axis=-1)


def squared_hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0)^2) over the last axis (labels as for hinge)."""
    y_true = _maybe_convert_labels(ops.cast(y_true, y_pred.dtype))
    return ops.reduce_mean(ops.square(ops.maximum(
        ops.subtract(1.0, ops.multiply(y_true, y_pred)), 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """max(0, max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1) over the last axis."""
    y_true = ops.cast(y_true, y_pred.dtype)
    pos = ops.reduce_sum(ops.multiply(y_true, y_pred), axis=-1)
    neg = ops.reduce_max(ops.multiply(ops.subtract(1.0, y_true), y_pred), axis=-1)
    return ops.maximum(0.0, ops.add(ops.subtract(neg, pos), 1.0))


def logcosh(y_true, y_pred):
    """mean(log(cosh(y_pred - y_true))) over the last axis, computed as
    x + softplus(-2x) - log(2) so that large errors do not overflow."""
    x = ops.subtract(y_pred, ops.cast(y_true, y_pred.dtype))
    return ops.reduce_mean(ops.subtract(ops.add(x, nn.softplus(ops.multiply(-2.0, x))),
                                        float(np.log(2.0))), axis=-1)


def poisson(y_true, y_pred):
    """mean(y_pred - y_true * log(y_pred + epsilon)) over the last axis."""
    y_true = ops.cast(y_true, y_pred.dtype)
    return ops.reduce_mean(ops.subtract(y_pred, ops.multiply(
        y_true, ops.log(ops.add(y_pred, K.epsilon())))), axis=-1)


cosine_similarity = cosine = cosine_proximity
kld = KLD = kullback_leibler_divergence
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
log_cosh = logcosh


# ---- loss objects ---------------------------------------------------------------------------


class Reduction:
    """How a Loss object reduces the weighted per-example losses (TF 1.15's ReductionV2)."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError("Invalid Reduction Key %s." % (key,))


def _rank(t):
    return t.shape.ndims


def _squeeze_last(t):
    return ops.squeeze(t, [-1])


def _match_ranks(y_pred, y_true):
    """TF 1.15's squeeze_or_expand_dimensions(y_pred, y_true): where the ranks differ by one
    and the longer one ends in a dimension of 1, that dimension goes (static ranks only);
    a [batch, classes] y_pred against [batch] class indices stays."""
    rp, rt = _rank(y_pred), _rank(y_true)
    if rp is None or rt is None:
        return y_pred, y_true
    if rp - rt != 1 or y_pred.shape.as_list()[-1] == 1:
        if rp - rt == 1 and y_pred.shape.as_list()[-1] == 1:
            y_pred = _squeeze_last(y_pred)
        elif rt - rp == 1 and y_true.shape.as_list()[-1] == 1:
            y_true = _squeeze_last(y_true)
    return y_pred, y_true


def compute_weighted_loss(losses, sample_weight=None, reduction=Reduction.SUM_OVER_BATCH_SIZE):
    """losses * sample_weight reduced by `reduction` (TF 1.15's losses_utils): a weight of
    rank one more (ending in 1) is squeezed, of lower rank is expanded at the end (per-sample
    weights of per-element losses), then it broadcasts; SUM_OVER_BATCH_SIZE divides the sum
    by the number of weighted elements."""
    Reduction.validate(reduction)
    if reduction == Reduction.AUTO:
        reduction = Reduction.SUM_OVER_BATCH_SIZE
    losses = ops.convert_to_tensor(losses)
    input_dtype = losses.dtype
    losses = ops.cast(losses, dtypes.float32)
    if sample_weight is None:
        weighted = losses
    else:
        w = ops.cast(ops.convert_to_tensor(sample_weight), dtypes.float32)
        rl, rw = _rank(losses), _rank(w)
        if rl is not None and rw is not None:
            if rw - rl == 1 and w.shape.as_list()[-1] == 1:
                w = _squeeze_last(w)
            else:
                # Per-sample weights of per-pixel losses (a segmentation or autoencoder's
                # [batch, h, w] losses): each weight covers its sample's elements.
                for _ in range(rl - rw):
                    w = ops.expand_dims(w, -1)
        weighted = ops.multiply(losses, w)
    if reduction == Reduction.NONE:
        loss = weighted
    else:
        loss = ops.reduce_sum(weighted)
        if reduction == Reduction.SUM_OVER_BATCH_SIZE:
            count = ops.cast(ops.reduce_prod(ops.shape(weighted)), dtypes.float32)
            loss = _div_no_nan(loss, count)
    return ops.cast(loss, input_dtype)


def _div_no_nan(num, den):
    from shardflow.math_composites import div_no_nan
    return div_no_nan(num, den)


class Loss:
    """Base class of the loss objects: subclasses define ``call(y_true, y_pred)`` giving the
    per-example losses; calling the object weighs and reduces them."""

    def __init__(self, reduction=Reduction.AUTO, name=None):
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name
        self.__name__ = name or type(self).__name__

    def __call__(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.convert_to_tensor(y_pred)
        y_true = ops.convert_to_tensor(y_true)
        g = y_pred.graph
        with g.as_default(), g.name_scope(self.__name__):
            return compute_weighted_loss(self.call(y_true, y_pred), sample_weight,
                                         self.reduction)

    def call(self, y_true, y_pred):
        raise NotImplementedError("subclasses of Loss define call(y_true, y_pred)")

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A Loss object around a per-example function ``fn(y_true, y_pred, **kwargs)``."""

    def __init__(self, fn, reduction=Reduction.AUTO, name=None, **kwargs):
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_pred, y_true = _match_ranks(y_pred, y_true)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return dict(self._fn_kwargs, **super().get_config())


def _wrapper(class_name, fn, default_name, doc, **defaults):
    """A LossFunctionWrapper subclass whose constructor takes `defaults` (in order), then
    reduction and name, as TF 1.15's loss classes."""
    names = list(defaults)

    def __init__(self, *args, **kwargs):
        if len(args) > len(names) + 2:
            raise TypeError("%s takes at most %d positional arguments"
                            % (class_name, len(names) + 2))
        values = dict(zip(names + ["reduction", "name"], args))
        for k in kwargs:
            if k in values:
                raise TypeError("%s got multiple values for argument %r" % (class_name, k))
            if k not in names + ["reduction", "name"]:
                raise TypeError("%s got an unexpected keyword argument %r" % (class_name, k))
        values.update(kwargs)
        fn_kwargs = {k: values.get(k, defaults[k]) for k in names}
        LossFunctionWrapper.__init__(self, fn, reduction=values.get("reduction",
                                                                    Reduction.AUTO),
                                     name=values.get("name", default_name), **fn_kwargs)
        for k, v in fn_kwargs.items():
            setattr(self, k, v)

    return type(class_name, (LossFunctionWrapper,), {"__init__": __init__, "__doc__": doc,
                                                      "__module__": __name__})


MeanSquaredError = _wrapper("MeanSquaredError", mean_squared_error, "mean_squared_error",
                            "mean((y_true - y_pred)^2) over the last axis, reduced.")
MeanAbsoluteError = _wrapper("MeanAbsoluteError", mean_absolute_error, "mean_absolute_error",
                             "mean(|y_true - y_pred|) over the last axis, reduced.")
MeanAbsolutePercentageError = _wrapper(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error", "mean_absolute_percentage_error, reduced.")
MeanSquaredLogarithmicError = _wrapper(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "mean_squared_logarithmic_error, reduced.")
BinaryCrossentropy = _wrapper(
    "BinaryCrossentropy", binary_crossentropy, "binary_crossentropy",
    "binary_crossentropy(y_true, y_pred, from_logits, label_smoothing), reduced.",
    from_logits=False, label_smoothing=0)
CategoricalCrossentropy = _wrapper(
    "CategoricalCrossentropy", categorical_crossentropy, "categorical_crossentropy",
    "categorical_crossentropy(y_true, y_pred, from_logits, label_smoothing) of one-hot "
    "labels, reduced.", from_logits=False, label_smoothing=0)
SparseCategoricalCrossentropy = _wrapper(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy",
    "sparse_categorical_crossentropy(y_true, y_pred, from_logits) of class indices, reduced.",
    from_logits=False)
Hinge = _wrapper("Hinge", hinge, "hinge", "hinge, reduced.")
SquaredHinge = _wrapper("SquaredHinge", squared_hinge, "squared_hinge",
                        "squared_hinge, reduced.")
CategoricalHinge = _wrapper("CategoricalHinge", categorical_hinge, "categorical_hinge",
                            "categorical_hinge, reduced.")
Poisson = _wrapper("Poisson", poisson, "poisson", "poisson, reduced.")
LogCosh = _wrapper("LogCosh", logcosh, "logcosh", "logcosh, reduced.")
KLDivergence = _wrapper("KLDivergence", kullback_leibler_divergence,
                        "kullback_leibler_divergence", "kullback_leibler_divergence, reduced.")
Huber = _wrapper("Huber", huber_loss, "huber_loss",
                 "huber_loss(y_true, y_pred, delta), reduced: ``keras.losses.Huber(2.0)``.",
                 delta=1.0)
CosineSimilarity = _wrapper(
    "CosineSimilarity", cosine_similarity, "cosine_similarity",
    "cosine_similarity(y_true, y_pred, axis), reduced (TF 1.15's sign: the negative cosine).",
    axis=-1)


_BY_NAME = {"categorical_crossentropy": categorical_crossentropy,
            "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
            "binary_crossentropy": binary_crossentropy, "mean_squared_error": mean_squared_error,
            "mse": mean_squared_error, "MSE": mean_squared_error,
            "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
            "MAE": mean_absolute_error, "huber_loss": huber_loss,
            "mean_absolute_percentage_error": mean_absolute_percentage_error,
            "mape": mean_absolute_percentage_error, "MAPE": mean_absolute_percentage_error,
            "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
            "msle": mean_squared_logarithmic_error, "MSLE": mean_squared_logarithmic_error,
            "hinge": hinge, "squared_hinge": squared_hinge,
            "categorical_hinge": categorical_hinge, "logcosh": logcosh, "log_cosh": logcosh,
            "poisson": poisson,
            "kullback_leibler_divergence": kullback_leibler_divergence,
            "kld": kullback_leibler_divergence, "KLD": kullback_leibler_divergence,
            "cosine_proximity": cosine_proximity, "cosine_similarity": cosine_proximity,
            "cosine": cosine_proximity}
_CLASSES = {c.__name__: c for c in (
    Loss, LossFunctionWrapper, MeanSquaredError, MeanAbsoluteError,
    MeanAbsolutePercentageError, MeanSquaredLogarithmicError, BinaryCrossentropy,
    CategoricalCrossentropy, SparseCategoricalCrossentropy, Hinge, SquaredHinge,
    CategoricalHinge, Poisson, LogCosh, KLDivergence, Huber, CosineSimilarity)}


def serialize(loss):
    """A loss function's name, or {'class_name', 'config'} of a loss object."""
    if isinstance(loss, Loss):
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    name = getattr(loss, "__name__", None)
    if name is None:
        raise ValueError("cannot serialize %r" % (loss,))
    return name


def deserialize(name, custom_objects=None):
    """The loss a name or a serialize() dict stands for (custom_objects first)."""
    custom_objects = custom_objects or {}
    if isinstance(name, dict):
        class_name = name.get("class_name")
        cls = custom_objects.get(class_name) or _CLASSES.get(class_name)
        if cls is None or class_name in ("Loss", "LossFunctionWrapper"):
            raise ValueError("Unknown loss function: %s" % (class_name,))
        return cls.from_config(name.get("config", {}))
    if name in custom_objects:
        return custom_objects[name]
    if name in _CLASSES and name not in ("Loss", "LossFunctionWrapper"):
        return _CLASSES[name]()
    fn = _BY_NAME.get(name)
    if fn is None:
        raise ValueError("unknown loss %r; known: %s" % (name, ", ".join(sorted(_BY_NAME))))
    return fn


def get(identifier):
    """The loss a name, a serialize() dict, a function or a Loss object stands for (None
    stays None)."""
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret loss function identifier: %r" % (identifier,))
