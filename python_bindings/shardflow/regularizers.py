"""Weight regularizers, as TF1's tf.contrib.layers.l1_regularizer / l2_regularizer / ...: each
returns a function of a weight tensor that gives a scalar penalty (or None when disabled).

Handed to ``sf.get_variable(regularizer=...)``, ``sf.variable_scope(regularizer=...)`` or the
``kernel_regularizer=``/``bias_regularizer=`` of ``sf.layers.dense``/``conv2d``, the penalty of
each new variable goes to the collection ``sf.GraphKeys.REGULARIZATION_LOSSES``, which
``sf.losses.get_regularization_loss()`` sums (and ``sf.losses.get_total_loss()`` adds).

Example::

    reg = sf.contrib.layers.l2_regularizer(1e-4)
    h = sf.layers.dense(x, 128, activation=sf.nn.relu, kernel_regularizer=reg)
    loss = data_loss + sf.losses.get_regularization_loss()
"""

import contextlib
import numbers

import numpy as np

from shardflow import ops
from shardflow.framework import GraphKeys, Tensor, get_default_graph


def _check_scale(scale, what):
    """TF1's checks: a Python scale must be a float (an int is refused) and not negative."""
    if isinstance(scale, Tensor):
        return
    if isinstance(scale, bool) or isinstance(scale, numbers.Integral):
        raise ValueError("%s cannot be an integer: %r (write %r.0)" % (what, scale, scale))
    if not isinstance(scale, numbers.Real):
        raise TypeError("%s must be a float or a scalar tensor, not %r" % (what, scale))
    if scale < 0.0:
        raise ValueError("Setting a scale less than 0 on a regularizer: %g (%s)" % (scale, what))


def _disabled(scale):
    return not isinstance(scale, Tensor) and scale == 0.0


def _scaled(penalty, scale, weights, scope, default_scope, name):
    """scale * penalty() in the name scope `scope`; a Python scale in the weights' dtype."""
    if not isinstance(scale, Tensor):
        scale = np.asarray(scale, dtype=weights.dtype.as_numpy_dtype)
    g = get_default_graph()
    with g.name_scope(scope or default_scope):
        return ops.multiply(penalty(), scale, name=name)


def l1_regularizer(scale, scope=None):
    """A function weights -> scale * sum(|weights|) (TF1's l1_regularizer); a scale of 0.0
    gives one that returns None (no penalty), as in TF1."""
    _check_scale(scale, "scale")
    if _disabled(scale):
        return lambda _: None

    def l1(weights, name=None):
        return _scaled(lambda: ops.reduce_sum(ops.abs(weights)), scale, weights, scope,
                       "l1_regularizer", name)
    return l1


def l2_regularizer(scale, scope=None):
    """A function weights -> scale * sum(weights ** 2) / 2 (TF1's l2_regularizer: scale times
    tf.nn.l2_loss, note the half); a scale of 0.0 gives one that returns None."""
    _check_scale(scale, "scale")
    if _disabled(scale):
        return lambda _: None

    def l2(weights, name=None):
        return _scaled(lambda: ops.multiply(ops.reduce_sum(ops.square(weights)), 0.5), scale,
                       weights, scope, "l2_regularizer", name)
    return l2


def sum_regularizer(regularizer_list, scope=None):
    """A function weights -> the sum of the penalties of `regularizer_list` (those that give
    None are left out; None when all do), as TF1's sum_regularizer."""
    regularizer_list = [r for r in regularizer_list if r is not None]
    if not regularizer_list:
        return None

    def regularize(weights):
        g = get_default_graph()
        with g.name_scope(scope or "sum_regularizer"):
            penalties = [p for p in (r(weights) for r in regularizer_list) if p is not None]
            if not penalties:
                return None
            return ops.add_n(penalties) if len(penalties) > 1 else penalties[0]
    return regularize


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """l1_regularizer(scale_l1) + l2_regularizer(scale_l2), as TF1's l1_l2_regularizer (a zero
    scale leaves its part out)."""
    _check_scale(scale_l1, "scale_l1")
    _check_scale(scale_l2, "scale_l2")
    scope = scope or "l1_l2_regularizer"
    if _disabled(scale_l1):
        return l2_regularizer(scale_l2, scope)
    if _disabled(scale_l2):
        return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def apply_regularization(regularizer, weights_list=None):
    """The sum of `regularizer` over `weights_list` (default: the graph's
    GraphKeys.WEIGHTS collection), added to REGULARIZATION_LOSSES and returned, as TF1's
    apply_regularization."""
    if not callable(regularizer):
        raise TypeError("apply_regularization: regularizer must be a function of the weights, "
                        "not %r" % (regularizer,))
    if not weights_list:
        weights_list = get_default_graph().get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("apply_regularization: no weights to regularize (pass weights_list)")
    g = get_default_graph()
    with g.name_scope("get_regularization_penalty"):
        penalties = [p for p in (regularizer(w) for w in weights_list) if p is not None]
        if not penalties:
            total = ops.constant(0.0)
        else:
            total = ops.add_n(penalties) if len(penalties) > 1 else ops.identity(penalties[0])
    g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total


def add_regularization_loss(variable, regularizer):
    """Applies `regularizer` to a new `variable` under the name scope
    '<variable>/Regularizer' (on the variable's device) and adds the penalty, unless None, to
    GraphKeys.REGULARIZATION_LOSSES, as TF1's get_variable and layers do. Returns it."""
    if regularizer is None:
        return None
    if not callable(regularizer):
        raise TypeError("a regularizer is a function of the weights (e.g. "
                        "sf.contrib.layers.l2_regularizer(1e-4)), not %r" % (regularizer,))
    g = variable.graph
    device = g._device_scope(variable.device) if variable.device else \
        contextlib.nullcontext()   # as TF1's colocate_with(variable)
    with g.as_default(), device, g.name_scope(variable.op.name + "/Regularizer/"):
        loss = regularizer(variable)
    if loss is not None:
        g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return loss


__all__ = ["apply_regularization", "l1_l2_regularizer", "l1_regularizer", "l2_regularizer",
           "sum_regularizer"]
