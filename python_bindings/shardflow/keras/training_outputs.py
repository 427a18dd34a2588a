"""What keras.Model.compile's choices mean for each output of a model, as TF 1.15's Keras:

- `loss`: one loss for every output, a list (one per output) or a dict by output name (an
  output missing from the dict is not trained, as Keras);
- `loss_weights`: a list or dict of the same kind; the training loss is the weighted sum of the
  outputs' losses plus the regularization penalties;
- `metrics`: a list for every output, or a dict by output name (a metric or a list of them);
- the history names: "loss" and the metrics' names for one output; with several, "loss", then
  "<output>_loss" for each output with a loss, then "<output>_<metric>".

The targets, sample weights and class weights a fit/evaluate call gives are matched to the
outputs the same way (a list, a dict by output name, or, for one output, the array itself).

Example::

    model = keras.Model(inp, [classes, box])          # output layers "cls" and "box"
    model.compile("adam", loss={"cls": "sparse_categorical_crossentropy", "box": "mse"},
                  loss_weights={"cls": 1.0, "box": 0.5}, metrics={"cls": "accuracy"})
    model.fit(x, {"cls": labels, "box": boxes})       # history: loss, cls_loss, box_loss, cls_acc
"""

import numpy as np

from shardflow import dtypes, ops
from shardflow.keras import losses as losses_module
from shardflow.keras import metrics as metrics_module


def output_names(model):
    """The names Keras gives the model's outputs: their layers' names."""
    names = []
    for t in model.outputs:
        history = getattr(t, "_keras_history", None)
        names.append(history[0].name if history is not None else t.op.name)
    return names


def _per_output(value, names, what, default):
    """`value` spread over the outputs: a dict by name, a list of one per output, or one value
    for all; `default` for outputs a dict does not name."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError("compile: %s names %s, which are not outputs of the model (its "
                             "outputs: %s)" % (what, unknown, names))
        return [value.get(n, default) for n in names]
    if isinstance(value, (list, tuple)) and what != "metrics":
        if len(value) != len(names):
            raise ValueError("compile: %s has %d entries but the model has %d outputs (%s)"
                             % (what, len(value), len(names), names))
        return list(value)
    return [value] * len(names)


class Head:
    """One output's share of training: its loss function and weight, metrics, and (once
    built) the target and sample-weight placeholders and its loss tensor."""

    def __init__(self, name, loss, weight, metrics, temporal=False):
        self.name = name
        self.temporal = bool(temporal)  # sample weights per step: [batch, steps]
        self.loss_fn = losses_module.get(loss) if loss is not None else None
        self.weight = 1.0 if weight is None else float(weight)
        self.metric_ids = [m for m in (metrics if isinstance(metrics, (list, tuple))
                                       else [metrics]) if m is not None]
        self.target = self.weights = self.loss = None
        self.sparse = False
        self.user_defined = False
        self.out_rank = None

    def build(self, y_pred, index):
        """The placeholders and this output's weighted-mean loss (None without a loss)."""
        out_shape = y_pred.shape.as_list()
        self.out_rank = len(out_shape)
        self.sparse = self.loss_fn is not None and getattr(self.loss_fn, "fn", self.loss_fn) \
            is losses_module.sparse_categorical_crossentropy
        self.user_defined = _user_defined(self.loss_fn)
        suffix = "" if index == 0 else "_%d" % index
        if self.temporal and self.out_rank < 3:
            raise ValueError("compile: sample_weight_mode='temporal' needs an output of rank 3 "
                             "or more ([batch, steps, ...]); output %s has shape %s"
                             % (self.name, y_pred.shape))
        if self.sparse:  # class indices: the output's shape without its class axis
            self.target = ops.placeholder(dtypes.int32, [None] + out_shape[1:-1],
                                          name="target" + suffix)
        elif self.user_defined:  # TF 1.15: no assumption on its targets' shape
            self.target = ops.placeholder(y_pred.dtype, [None] * self.out_rank,
                                          name="target" + suffix)
        else:
            self.target = ops.placeholder(dtypes.float32, [None] + out_shape[1:],
                                          name="target" + suffix)
        # Per-sample weights (sample_weight x class_weight; ones when none are given), per
        # step when temporal, reduced as TF 1.15's Keras: sum(loss * w) / number of loss
        # elements.
        self.weights = ops.placeholder(dtypes.float32, [None, None] if self.temporal else [None],
                                       name="sample_weights" + suffix)
        if self.loss_fn is None:
            return None
        if isinstance(self.loss_fn, losses_module.Loss):
            self.loss = self.loss_fn(self.target, y_pred, sample_weight=self.weights)
        else:
            self.loss = losses_module.compute_weighted_loss(self.loss_fn(self.target, y_pred),
                                                            self.weights)
        return self.loss

    def default_weights(self, y):
        """Ones: one weight per sample, or per step when temporal."""
        return np.ones(y.shape[:2] if self.temporal else y.shape[:1], np.float32)

    def convert_targets(self, y):
        """Targets as this output's placeholder takes them."""
        y = np.asarray(y)
        if self.sparse:
            if y.ndim == self.out_rank and y.shape[-1] == 1:
                y = y[..., 0]                      # [batch, ..., 1] class indices
            if y.ndim != self.out_rank - 1:
                raise ValueError("output %s gives [batch, ..., classes] of rank %d: its sparse "
                                 "targets are class indices of rank %d, got shape %s"
                                 % (self.name, self.out_rank, self.out_rank - 1, y.shape))
            return y.astype(np.int32)
        if self.user_defined:  # as TF 1.15's: any dtype converts, a vector becomes [n, 1]
            y = y.astype(self.target.dtype.as_numpy_dtype, copy=False)
            return y[:, None] if y.ndim == 1 and self.out_rank != 1 else y
        y = y.astype(np.float32, copy=False)
        if y.ndim == self.out_rank - 1:
            y = y[..., None]
        return y


def _user_defined(loss_fn):
    """Whether compile's loss is the user's own function (TF 1.15's test: not a Loss object,
    or a LossFunctionWrapper of a function keras.losses does not have)."""
    if loss_fn is None:
        return False
    if isinstance(loss_fn, losses_module.LossFunctionWrapper):
        loss_fn = loss_fn.fn
    elif isinstance(loss_fn, losses_module.Loss):
        return False
    return getattr(losses_module, getattr(loss_fn, "__name__", ""), None) is not loss_fn


def make_heads(model, loss, loss_weights, metrics, sample_weight_mode=None):
    """One Head per output of `model` from compile()'s arguments."""
    names = output_names(model)
    modes = _per_output(sample_weight_mode, names, "sample_weight_mode", None)
    for mode in modes:
        if mode not in (None, "temporal"):
            raise ValueError("compile: sample_weight_mode is None or 'temporal', got %r"
                             % (mode,))
    losses = _per_output(loss, names, "loss", None)
    if all(v is None for v in losses) and not model.losses:
        raise ValueError("compile: no output has a loss (outputs: %s) and the model adds none "
                         "(model.add_loss)" % names)
    weights = _per_output(loss_weights, names, "loss_weights", None) \
        if loss_weights is not None else [None] * len(names)
    per_metrics = _per_output(metrics, names, "metrics", None) if metrics is not None \
        else [None] * len(names)
    return [Head(n, l_, w, m, mode == "temporal")
            for n, l_, w, m, mode in zip(names, losses, weights, per_metrics, modes)]


def history_names(heads, metric_names):
    """["loss", ...]: see the module docstring. `metric_names[i]` are head i's metric names."""
    if len(heads) == 1:
        return ["loss"] + list(metric_names[0])
    return (["loss"] + ["%s_loss" % h.name for h in heads if h.loss_fn is not None]
            + ["%s_%s" % (h.name, m) for h, names in zip(heads, metric_names) for m in names])


def split_by_output(value, heads, what):
    """A fit/evaluate argument given per output (targets, sample weights) as a list with one
    entry per head: a dict by output name, a list or tuple (several outputs), or the value
    itself (one output)."""
    names = [h.name for h in heads]
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError("%s names %s, which are not outputs of the model (its outputs: "
                             "%s)" % (what, unknown, names))
        return [value.get(n) for n in names]
    if len(heads) == 1:
        return [value]
    if not isinstance(value, (list, tuple)) or len(value) != len(heads):
        raise ValueError("the model has %d outputs (%s); give %s as a list of %d or a dict by "
                         "output name" % (len(heads), names, what, len(heads)))
    return list(value)


def class_weights_by_output(class_weight, heads):
    """class_weight as one dict (or None) per head: {class: weight} for a one-output model, a
    dict by output name of such dicts for several."""
    if not class_weight:
        return [None] * len(heads)
    if not isinstance(class_weight, dict):
        raise ValueError("class_weight must be a dict {class index: weight}, got %r"
                         % (class_weight,))
    names = [h.name for h in heads]
    if len(heads) > 1 or any(k in names for k in class_weight):
        return split_by_output(class_weight, heads, "class_weight")
    return [class_weight]


def metric_tensors(head, y_pred, graph):
    """(names, tensors, stateful flags, Metric objects) of head's metrics."""
    names, tensors, flags, stateful = [], [], [], []
    for m in head.metric_ids:
        name, fn = metrics_module.named(m, head.loss_fn, y_pred.shape.as_list())
        names.append(name)
        flags.append(isinstance(fn, metrics_module.Metric))
        if flags[-1]:
            if fn._graph is not graph:
                raise ValueError("metric %s was made in another graph than the model's; make "
                                 "it after the model's graph" % name)
            tensors.append(ops.cast(fn(head.target, y_pred), dtypes.float32))
            stateful.append(fn)
        else:
            tensors.append(ops.reduce_mean(ops.cast(fn(head.target, y_pred), dtypes.float32)))
    return names, tensors, flags, stateful
