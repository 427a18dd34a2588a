"""tf.keras.metrics: functions of (y_true, y_pred) giving one value per example (the model
averages them over each batch and, weighted by batch size, over the epoch), and TF 1.15's
stateful Metric classes (Mean, AUC, Precision, ...), whose running state lives in local
variables (collections LOCAL_VARIABLES and METRIC_VARIABLES).

Example::

    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.compile("adam", "binary_crossentropy",
                  metrics=[keras.metrics.AUC(), keras.metrics.Precision()])  # 'auc', 'precision'

A Metric in graph mode: ``update_state(y_true, y_pred, sample_weight=None)`` returns the
update op, ``result()`` the value tensor (of the state when run), ``reset_states()`` sets the
state to zero in keras.backend.get_session(); ``m(y_true, y_pred)`` is the update followed
by the result, as Keras. Its variables are made with the object, in the default graph; run
``m.reset_states()`` (or an initializer of ``m.variables``) before the first update.
In compile(metrics=[...]) the model resets them at the start of each epoch and of each
evaluation, and reports the result after the last batch under ``m.name``.
"""

import re

import numpy as np

from shardflow import dtypes, nn, ops
from shardflow.framework import get_default_graph
from shardflow.keras import backend as K
from shardflow.keras import losses as _losses


def _as_float(b):
    return ops.cast(b, dtypes.float32)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    pred = _as_float(ops.greater(y_pred, threshold))
    return ops.reduce_mean(_as_float(ops.equal(ops.cast(y_true, dtypes.float32), pred)), axis=-1)


def categorical_accuracy(y_true, y_pred):
    return _as_float(ops.equal(ops.argmax(y_true, axis=-1), ops.argmax(y_pred, axis=-1)))


def sparse_categorical_accuracy(y_true, y_pred):
    """1 where the class index y_true is y_pred's argmax over its last axis (any rank)."""
    predicted = ops.argmax(y_pred, axis=-1)
    labels = ops.cast(ops.reshape(y_true, ops.shape(predicted)), dtypes.int64)
    return _as_float(ops.equal(labels, predicted))


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
    """The accuracy Keras means by 'accuracy'/'acc' for this loss (a function or a loss
    object) and output."""
    loss_fn = getattr(loss_fn, "fn", loss_fn)
    if loss_fn is _losses.sparse_categorical_crossentropy:
        return sparse_categorical_accuracy
    if loss_fn is _losses.binary_crossentropy or (output_shape and output_shape[-1] == 1):
        return binary_accuracy
    return categorical_accuracy


def named(identifier, loss_fn=None, output_shape=None):
    """(history name, function) for a metric name, function or Metric object (whose name is
    its `name`), as TF 1.15's Keras names them: 'accuracy' and 'acc' are 'acc'; other strings
    are named by the function they stand for ('mae' is 'mean_absolute_error')."""
    if isinstance(identifier, Metric):
        return identifier.name, identifier
    if identifier in ("accuracy", "acc"):
        return "acc", accuracy_for(loss_fn, output_shape)
    if callable(identifier):
        return getattr(identifier, "__name__", "metric"), identifier
    fn = _BY_NAME.get(identifier)
    if fn is None:
        raise ValueError("unknown metric %r; known: accuracy, acc, %s"
                         % (identifier, ", ".join(sorted(_BY_NAME))))
    return fn.__name__, fn


def get(identifier):
    """The metric function (or Metric object) for `identifier`, as tf.keras.metrics.get:
    'accuracy' is the `accuracy` function."""
    if identifier in ("accuracy", "acc"):
        return accuracy
    return named(identifier)[1]


def accuracy(y_true, y_pred):
    """1.0 where y_pred equals y_true (element-wise; tf.keras.metrics.accuracy)."""
    y_pred = ops.convert_to_tensor(y_pred)
    y_true = ops.cast(ops.convert_to_tensor(y_true), y_pred.dtype)
    return _as_float(ops.equal(y_true, y_pred))


mean_absolute_percentage_error = mape = _losses.mean_absolute_percentage_error
mean_squared_logarithmic_error = msle = _losses.mean_squared_logarithmic_error
hinge = _losses.hinge
squared_hinge = _losses.squared_hinge
categorical_hinge = _losses.categorical_hinge
logcosh = _losses.logcosh
poisson = _losses.poisson


# ---- stateful metrics -----------------------------------------------------------------------


def _snake(name):
    name = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _div_no_nan(num, den):
    from shardflow.math_composites import div_no_nan
    return div_no_nan(num, den)


def _match_weight(values, sample_weight):
    """sample_weight made broadcastable to `values` as TF 1.15 does (a rank one more ending in
    1 is squeezed, a lower rank is expanded at the end), then broadcast to its shape."""
    w = ops.cast(ops.convert_to_tensor(sample_weight), values.dtype)
    rv, rw = values.shape.ndims, w.shape.ndims
    if rv is not None and rw is not None and rw > 0:
        if rw - rv == 1:
            w = ops.squeeze(w, [-1])
        else:
            for _ in range(rv - rw):             # per-sample weights of per-pixel values
                w = ops.expand_dims(w, -1)
    return ops.multiply(w, ops.ones_like(values))


class Metric:
    """Base class of the stateful metrics: subclasses make their state with add_weight in
    __init__ and define update_state(...) (returning the update op) and result()."""

    def __init__(self, name=None, dtype=None, **kwargs):
        if kwargs:
            raise TypeError("%s: unknown keyword argument(s) %s"
                            % (type(self).__name__, ", ".join(sorted(kwargs))))
        # Unnamed metrics are named as Keras layers: 'auc', 'auc_1', ...
        self.name = name or K.unique_name(_snake(type(self).__name__))
        self._scope = None
        self._dtype = dtypes.as_dtype(dtype or K.floatx())
        self._graph = get_default_graph()
        self._weights = []
        self._after = None
        self._reset = None
        self.stateful = True

    @property
    def dtype(self):
        return self._dtype

    @property
    def variables(self):
        return list(self._weights)

    weights = variables

    def add_weight(self, name, shape=(), dtype=None, initializer=None):
        """A zero-initialised state variable "<metric name>/<name>" (a local variable)."""
        from shardflow.metrics import _metric_variable
        if initializer not in (None, "zeros"):
            raise ValueError("Metric.add_weight: only zeros initializers are supported")
        g = self._graph
        with g.as_default(), g.control_dependencies(None), g.name_scope(None), \
                g.name_scope(self._scope or self.name) as scope:
            self._scope = scope   # every weight under one scope
            v = _metric_variable(list(shape), name, dtypes.as_dtype(dtype or self._dtype))
        self._weights.append(v)
        return v

    def _value(self, var):
        """The variable's value: after the pending update inside __call__, else its read."""
        return var.value() if self._after is None else var._read_after(self._after)

    def update_state(self, *args, **kwargs):
        raise NotImplementedError

    def result(self):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        """Updates the state with this batch and returns the result after the update."""
        update = self.update_state(*args, **kwargs)
        self._after = update
        try:
            return self.result()
        finally:
            self._after = None

    def _reset_op(self):
        """One op setting every state variable to zero (built once)."""
        if self._reset is None:
            g = self._graph
            with g.as_default(), g.control_dependencies(None), g.name_scope(None):
                self._reset = ops.group(*[
                    v.assign(np.zeros(v.shape.as_list(), v.dtype.as_numpy_dtype),
                             read_value=False) for v in self._weights],
                    name=self.name + "_reset")
        return self._reset

    def reset_states(self):
        """Sets the state to zero, in keras.backend.get_session()."""
        if self._graph is not get_default_graph():
            raise ValueError("%s: the metric's variables are in another graph than the "
                             "default one" % self.name)
        K.get_session().run(self._reset_op())

    def get_config(self):
        return {"name": self.name, "dtype": self._dtype.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _Reduce(Metric):
    """total (and count) of the (weighted) values; Sum and Mean."""

    _mean = True

    def __init__(self, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_weight("total")
        if self._mean:
            self.count = self.add_weight("count")

    def update_state(self, values, sample_weight=None):
        values = ops.cast(ops.convert_to_tensor(values), self._dtype)
        if sample_weight is not None:
            w = _match_weight(values, sample_weight)
            values = ops.multiply(values, w)
        update_total = self.total.assign_add(ops.reduce_sum(values), read_value=False)
        if not self._mean:
            return update_total
        if sample_weight is None:
            num = ops.cast(ops.reduce_prod(ops.shape(values)), self._dtype)
        else:
            num = ops.reduce_sum(w)
        with self._graph.control_dependencies([update_total]):
            update_count = self.count.assign_add(num, read_value=False)
        return ops.group(update_total, update_count)

    def result(self):
        if not self._mean:
            return ops.identity(self._value(self.total))
        return _div_no_nan(self._value(self.total), self._value(self.count))


class Sum(_Reduce):
    """The (weighted) sum of every value seen."""

    _mean = False

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)


class Mean(_Reduce):
    """The (weighted) mean of every value seen: sum(w * x) / sum(w)."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)`` over every example seen."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(ops.convert_to_tensor(y_true), self._dtype)
        y_pred = ops.cast(ops.convert_to_tensor(y_pred), self._dtype)
        y_pred, y_true = _losses._match_ranks(y_pred, y_true)
        matches = self._fn(y_true, y_pred, **self._fn_kwargs)
        return super().update_state(matches, sample_weight)

    def get_config(self):
        return dict(self._fn_kwargs, **super().get_config())


def _accuracy(y_true, y_pred):
    """1 where y_pred equals y_true (element-wise)."""
    return _as_float(ops.equal(y_true, ops.cast(y_pred, y_true.dtype)))


def _wrapped(class_name, fn, default_name, doc, **defaults):
    """A MeanMetricWrapper subclass taking name, dtype and `defaults` (in TF 1.15's order:
    name first, then dtype, then the function's arguments)."""
    names = list(defaults)

    def __init__(self, name=default_name, dtype=None, **kwargs):
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            raise TypeError("%s got an unexpected keyword argument %r"
                            % (class_name, unknown[0]))
        fn_kwargs = {k: kwargs.get(k, defaults[k]) for k in names}
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype, **fn_kwargs)
        for k, v in fn_kwargs.items():
            setattr(self, k, v)

    return type(class_name, (MeanMetricWrapper,), {"__init__": __init__, "__doc__": doc,
                                                    "__module__": __name__})


Accuracy = _wrapped("Accuracy", _accuracy, "accuracy",
                    "How often y_pred equals y_true (element-wise).")
BinaryAccuracy = _wrapped("BinaryAccuracy", binary_accuracy, "binary_accuracy",
                          "How often (y_pred > threshold) equals y_true.", threshold=0.5)
CategoricalAccuracy = _wrapped("CategoricalAccuracy", categorical_accuracy,
                               "categorical_accuracy",
                               "How often argmax(y_pred) equals argmax(y_true) (one-hot).")
SparseCategoricalAccuracy = _wrapped("SparseCategoricalAccuracy", sparse_categorical_accuracy,
                                     "sparse_categorical_accuracy",
                                     "How often argmax(y_pred) equals the class index y_true.")
TopKCategoricalAccuracy = _wrapped("TopKCategoricalAccuracy", top_k_categorical_accuracy,
                                   "top_k_categorical_accuracy",
                                   "How often the one-hot class is in y_pred's top k.", k=5)
SparseTopKCategoricalAccuracy = _wrapped(
    "SparseTopKCategoricalAccuracy", sparse_top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy", "How often the class index is in y_pred's top k.",
    k=5)
MeanSquaredError = _wrapped("MeanSquaredError", mean_squared_error, "mean_squared_error",
                            "The mean of (y_true - y_pred)^2.")
MeanAbsoluteError = _wrapped("MeanAbsoluteError", mean_absolute_error, "mean_absolute_error",
                             "The mean of |y_true - y_pred|.")
MeanAbsolutePercentageError = _wrapped(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error", "The mean of mean_absolute_percentage_error.")
MeanSquaredLogarithmicError = _wrapped(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "The mean of mean_squared_logarithmic_error.")
BinaryCrossentropy = _wrapped("BinaryCrossentropy", binary_crossentropy, "binary_crossentropy",
                              "The mean binary cross-entropy.", from_logits=False,
                              label_smoothing=0)
CategoricalCrossentropy = _wrapped("CategoricalCrossentropy", categorical_crossentropy,
                                   "categorical_crossentropy",
                                   "The mean categorical cross-entropy.", from_logits=False,
                                   label_smoothing=0)
SparseCategoricalCrossentropy = _wrapped(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy", "The mean sparse categorical cross-entropy.",
    from_logits=False)
Hinge = _wrapped("Hinge", hinge, "hinge", "The mean hinge loss.")
SquaredHinge = _wrapped("SquaredHinge", squared_hinge, "squared_hinge",
                        "The mean squared hinge loss.")
CategoricalHinge = _wrapped("CategoricalHinge", categorical_hinge, "categorical_hinge",
                            "The mean categorical hinge loss.")
LogCoshError = _wrapped("LogCoshError", logcosh, "logcosh", "The mean log-cosh error.")
Poisson = _wrapped("Poisson", poisson, "poisson", "The mean Poisson loss.")
KLDivergence = _wrapped("KLDivergence", kullback_leibler_divergence,
                        "kullback_leibler_divergence", "The mean KL divergence.")


class RootMeanSquaredError(Mean):
    """sqrt of the (weighted) mean of (y_true - y_pred)^2 over every element seen."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(ops.convert_to_tensor(y_true), self._dtype)
        y_pred = ops.cast(ops.convert_to_tensor(y_pred), self._dtype)
        y_pred, y_true = _losses._match_ranks(y_pred, y_true)
        return super().update_state(ops.squared_difference(y_pred, y_true), sample_weight)

    def result(self):
        return ops.sqrt(super().result())


# ---- confusion-matrix metrics ---------------------------------------------------------------


_NEG_INF = -1e10


def _filter_top_k(x, k):
    """x with all but its k largest entries along the last axis set to -1e10."""
    _, idx = nn.top_k(x, k, sorted=False)
    from shardflow import one_hot
    mask = ops.reduce_sum(one_hot(idx, x.shape.as_list()[-1], axis=-1), axis=-2)
    return ops.add(ops.multiply(x, mask), ops.multiply(_NEG_INF, ops.subtract(1.0, mask)))


def _confusion_increments(kinds, y_true, y_pred, thresholds, top_k=None, class_id=None,
                          sample_weight=None):
    """This batch's weighted counts at each threshold (TF 1.15's
    update_confusion_matrix_variables): a prediction is positive where y_pred > threshold, a
    label where y_true is non-zero; {kind: [T] float32} for kinds of "tp", "fp", "tn", "fn"."""
    y_true = ops.cast(ops.convert_to_tensor(y_true), dtypes.float32)
    y_pred = ops.cast(ops.convert_to_tensor(y_pred), dtypes.float32)
    y_pred, y_true = _losses._match_ranks(y_pred, y_true)
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        y_true = y_true[..., class_id]
        y_pred = y_pred[..., class_id]
    t = np.asarray(thresholds, np.float32).reshape(1, -1)
    pred = ops.reshape(y_pred, [-1, 1])
    label = ops.cast(ops.not_equal(ops.reshape(y_true, [-1, 1]), 0.0), dtypes.float32)
    above = ops.cast(ops.greater(pred, ops.constant(t)), dtypes.float32)     # [n, T]
    if sample_weight is not None:
        w = ops.reshape(_match_weight(y_pred, sample_weight), [-1, 1])
        label_w, nolabel_w = ops.multiply(label, w), ops.multiply(ops.subtract(1.0, label), w)
    else:
        label_w, nolabel_w = label, ops.subtract(1.0, label)
    rows = {"tp": lambda: ops.multiply(above, label_w),
            "fp": lambda: ops.multiply(above, nolabel_w),
            "fn": lambda: ops.multiply(ops.subtract(1.0, above), label_w),
            "tn": lambda: ops.multiply(ops.subtract(1.0, above), nolabel_w)}
    return {kind: ops.reduce_sum(rows[kind](), axis=0) for kind in kinds}


def _thresholds(thresholds, default):
    if thresholds is None:
        return [default]
    values = [float(t) for t in (thresholds if isinstance(thresholds, (list, tuple, np.ndarray))
                                 else [thresholds])]
    if any(not 0.0 <= t <= 1.0 for t in values):
        raise ValueError("Threshold values must be in [0, 1]. Invalid values: %s" % values)
    return values


_VARIABLE_NAMES = {"tp": "true_positives", "fp": "false_positives", "tn": "true_negatives",
                   "fn": "false_negatives"}


class _ConfusionCounts(Metric):
    """Running counts of `kinds` at each threshold."""

    _kinds = ()

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.top_k, self.class_id = top_k, class_id
        self.thresholds = _thresholds(thresholds, 0.5 if top_k is None else _NEG_INF)
        self._counts = {}
        for kind in self._kinds:
            self._counts[kind] = self.add_weight(_VARIABLE_NAMES[kind],
                                                 shape=(len(self.thresholds),))
            setattr(self, _VARIABLE_NAMES[kind], self._counts[kind])

    def update_state(self, y_true, y_pred, sample_weight=None):
        incs = _confusion_increments(self._kinds, y_true, y_pred, self.thresholds, self.top_k,
                                     self.class_id, sample_weight)
        return ops.group(*[self._counts[k].assign_add(incs[k], read_value=False)
                           for k in self._kinds])

    def _scalar_if_one(self, x):
        return ops.reshape(x, []) if len(self.thresholds) == 1 else x

    def get_config(self):
        return dict(super().get_config(), thresholds=self.thresholds)


def _condition_count(class_name, kind, doc):
    def __init__(self, thresholds=None, name=None, dtype=None):
        _ConfusionCounts.__init__(self, thresholds, name=name, dtype=dtype)

    def result(self):
        return self._scalar_if_one(ops.identity(self._value(self._counts[kind])))

    return type(class_name, (_ConfusionCounts,), {
        "__init__": __init__, "result": result, "_kinds": (kind,), "__doc__": doc,
        "__module__": __name__})


TruePositives = _condition_count(
    "TruePositives", "tp", "The weighted count of positive labels with y_pred > threshold "
    "(a scalar for one threshold, else one per threshold; default 0.5).")
FalsePositives = _condition_count(
    "FalsePositives", "fp", "The weighted count of negative labels with y_pred > threshold.")
TrueNegatives = _condition_count(
    "TrueNegatives", "tn", "The weighted count of negative labels with y_pred <= threshold.")
FalseNegatives = _condition_count(
    "FalseNegatives", "fn", "The weighted count of positive labels with y_pred <= threshold.")


class Precision(_ConfusionCounts):
    """tp / (tp + fp) at each threshold (0 where nothing is predicted positive); with top_k,
    only each row's k largest predictions count; with class_id, only that column."""

    _kinds = ("tp", "fp")

    def result(self):
        tp, fp = self._value(self.true_positives), self._value(self.false_positives)
        return self._scalar_if_one(_div_no_nan(tp, ops.add(tp, fp)))

    def get_config(self):
        return dict(super().get_config(), top_k=self.top_k, class_id=self.class_id)


class Recall(Precision):
    """tp / (tp + fn) at each threshold (0 where there is no positive label)."""

    _kinds = ("tp", "fn")

    def result(self):
        tp, fn = self._value(self.true_positives), self._value(self.false_negatives)
        return self._scalar_if_one(_div_no_nan(tp, ops.add(tp, fn)))


class AUC(Metric):
    """Area under the ROC or PR curve from counts at `num_thresholds` thresholds spread
    evenly over [0, 1] (the end ones -1e-7 and 1 + 1e-7; or `thresholds` plus those two),
    as TF 1.15's tf.keras.metrics.AUC: summation_method 'interpolation' sums trapezoids (for
    'PR', the Davis & Goadrich interpolation), 'minoring'/'majoring' lower/upper rectangles."""

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None):
        curve = str(curve).upper()
        if curve not in ("ROC", "PR"):
            raise ValueError('Invalid AUC curve value "%s".' % curve)
        summation_method = str(summation_method).lower()
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError('Invalid AUC summation method value "%s".' % summation_method)
        super().__init__(name=name, dtype=dtype)
        self.curve, self.summation_method = curve, summation_method
        eps = K.epsilon()
        if thresholds is not None:
            inner = sorted(_thresholds(thresholds, 0.5))
            self.num_thresholds = len(inner) + 2
        else:
            if num_thresholds <= 1:
                raise ValueError("`num_thresholds` must be > 1.")
            self.num_thresholds = int(num_thresholds)
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        self.thresholds = [0.0 - eps] + inner + [1.0 + eps]
        for kind in ("tp", "fp", "tn", "fn"):
            setattr(self, _VARIABLE_NAMES[kind],
                    self.add_weight(_VARIABLE_NAMES[kind], shape=(self.num_thresholds,)))

    def update_state(self, y_true, y_pred, sample_weight=None):
        incs = _confusion_increments(("tp", "fp", "tn", "fn"), y_true, y_pred,
                                     self.thresholds, sample_weight=sample_weight)
        return ops.group(*[getattr(self, _VARIABLE_NAMES[k]).assign_add(incs[k],
                                                                       read_value=False)
                           for k in ("tp", "fp", "tn", "fn")])

    def result(self):
        n = self.num_thresholds
        tp, fp = self._value(self.true_positives), self._value(self.false_positives)
        tn, fn = self._value(self.true_negatives), self._value(self.false_negatives)

        def head(v):
            return ops.slice(v, [0], [n - 1])

        def tail(v):
            return ops.slice(v, [1], [n - 1])

        if self.curve == "PR" and self.summation_method == "interpolation":
            from shardflow.metrics import interpolated_pr_auc
            return interpolated_pr_auc(tp, fp, fn, n)
        recall = _div_no_nan(tp, ops.add(tp, fn))
        if self.curve == "ROC":
            x, y = _div_no_nan(fp, ops.add(fp, tn)), recall
        else:
            x, y = recall, _div_no_nan(tp, ops.add(tp, fp))
        if self.summation_method == "interpolation":
            heights = ops.multiply(ops.add(head(y), tail(y)), 0.5)
        elif self.summation_method == "minoring":
            heights = ops.minimum(head(y), tail(y))
        else:
            heights = ops.maximum(head(y), tail(y))
        return ops.reduce_sum(ops.multiply(ops.subtract(head(x), tail(x)), heights))

    def get_config(self):
        return dict(super().get_config(), num_thresholds=self.num_thresholds,
                    curve=self.curve, summation_method=self.summation_method)


class MeanIoU(Metric):
    """The mean over classes of tp / (tp + fp + fn) from a running confusion matrix of class
    ids y_true, y_pred in [0, num_classes) (classes absent from both are left out)."""

    def __init__(self, num_classes, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.num_classes = int(num_classes)
        self.total_cm = self.add_weight("total_confusion_matrix",
                                        shape=(self.num_classes, self.num_classes),
                                        dtype=dtypes.float64)

    def update_state(self, y_true, y_pred, sample_weight=None):
        from shardflow.metrics import _confusion_update
        labels = ops.cast(ops.cast(ops.convert_to_tensor(y_true), self._dtype), dtypes.int32)
        preds = ops.cast(ops.cast(ops.convert_to_tensor(y_pred), self._dtype), dtypes.int32)
        w = None
        if sample_weight is not None:
            w = ops.reshape(ops.cast(ops.convert_to_tensor(sample_weight), dtypes.float32),
                            [-1])
        cm = _confusion_update(labels, preds, self.num_classes, w, "MeanIoU")
        return self.total_cm.assign_add(cm, read_value=False)

    def result(self):
        cm = ops.cast(self._value(self.total_cm), self._dtype)
        predicted = ops.reduce_sum(cm, axis=0)
        actual = ops.reduce_sum(cm, axis=1)
        diag = ops.reduce_sum(ops.multiply(cm, np.eye(self.num_classes, dtype=np.float32)),
                              axis=1)
        union = ops.subtract(ops.add(predicted, actual), diag)
        valid = ops.reduce_sum(ops.cast(ops.not_equal(union, 0.0), self._dtype))
        return _div_no_nan(ops.reduce_sum(_div_no_nan(diag, union)), valid)

    def get_config(self):
        return dict(super().get_config(), num_classes=self.num_classes)


_BY_NAME = {
    "mse": mse, "mae": mae, "mean_squared_error": mse, "mean_absolute_error": mae,
    "mape": mean_absolute_percentage_error, "mean_absolute_percentage_error":
    mean_absolute_percentage_error, "msle": mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
    "binary_accuracy": binary_accuracy, "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "binary_crossentropy": binary_crossentropy,
    "top_k_categorical_accuracy": top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy,
    "kullback_leibler_divergence": kullback_leibler_divergence, "kld": kld,
    "cosine_proximity": cosine_proximity, "cosine": cosine_proximity, "hinge": hinge,
    "squared_hinge": squared_hinge, "categorical_hinge": categorical_hinge, "logcosh": logcosh}
