"""Exponential moving averages of variables and tensors, as TF1's
tf.train.ExponentialMovingAverage.

Example (evaluate with averaged weights, as TF1 programs do)::

    train_op = sf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    ema = sf.train.ExponentialMovingAverage(0.999, num_updates=step)
    with sf.control_dependencies([train_op]):
        train_and_average = ema.apply(sf.trainable_variables())
    ...
    restore = sf.train.Saver(ema.variables_to_restore())   # loads each average into its var

Each apply() gives every variable a shadow variable "<var>/<name>" (not trainable; in
GLOBAL_VARIABLES and, for Variables, MOVING_AVERAGE_VARIABLES) that starts at the variable's
initial value; the returned op does shadow -= (1 - decay) * (shadow - value), with decay
min(decay, (1 + num_updates) / (10 + num_updates)) when num_updates is given. The value is read
when the op runs, after whatever the caller's control_dependencies name (the train step), as
TF1's. A Tensor's shadow starts at zero; with zero_debias=True it is zero-debiased (biased /
(1 - decay ** t)), as TF1 does (only for tensors: a variable's shadow is never debiased).
"""

import contextlib
import numbers

from shardflow import dtypes, ops
from shardflow.framework import GraphKeys, Tensor, get_default_graph
from shardflow.variables import Variable, global_variables, trainable_variables


def _fresh_read(v):
    """A new read of Variable `v`, so that it runs after the control dependencies open now."""
    return v._new_read(v.graph)


def _colocated(g, v):
    device = getattr(v, "device", "")
    return g._device_scope(device) if device else contextlib.nullcontext()  # colocate_with


def _outermost(g):
    """The graph variables are made in: `g`, or the one around a cond branch or loop body."""
    return g._outermost() if hasattr(g, "_outermost") else g


def moving_average_variables(scope=None):
    """The variables that ExponentialMovingAverage.apply() averages, those whose names match
    `scope` (a regex, from the start) when given (TF1's tf.moving_average_variables)."""
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def _debiased_update(g, shadow, value, one_minus_decay):
    """shadow = biased / (1 - decay ** t), biased = decay * biased + (1 - decay) * value,
    t counting the updates: TF1's zero debiasing (the variables "<shadow>/biased" and
    "<shadow>/local_step" beside the shadow)."""
    outer = _outermost(g)
    with outer.as_default(), outer.control_dependencies(None), _colocated(outer, shadow), \
            outer.name_scope(shadow.op.name + "/"):
        biased = Variable(ops.zeros(shadow.shape.as_list(), dtype=shadow.dtype),
                          name="biased", trainable=False)
        step = Variable(ops.zeros([], dtype=shadow.dtype), name="local_step",
                        trainable=False)
    new_biased = biased.assign_sub(ops.multiply(ops.subtract(biased.value(), value),
                                                one_minus_decay))
    new_step = step.assign_add(ops.ones([], dtype=shadow.dtype))
    decay = ops.subtract(1.0, one_minus_decay)
    return shadow.assign(ops.divide(new_biased, ops.subtract(1.0, ops.pow(decay, new_step))),
                         read_value=False)


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """TF1's moving_averages.assign_moving_average (tensorflow.python.training): an op making
    variable -= (variable - value) * (1 - decay), or with zero_debias (the default, as TF1's)
    variable = biased / (1 - decay ** t) from a zero-started biased average, which hand-written
    batch norms use for their moving statistics."""
    g = variable.graph
    with g.name_scope(name or "AssignMovingAvg"):
        one_minus_decay = ops.subtract(1.0, ops.cast(decay, variable.dtype))
        value = ops.cast(value, variable.dtype)
        if zero_debias:
            return variable._read_after(_debiased_update(g, variable, value, one_minus_decay))
        delta = ops.multiply(ops.subtract(variable.value(), value), one_minus_decay)
        return variable.assign_sub(delta)


class ExponentialMovingAverage:
    """TF1's tf.train.ExponentialMovingAverage: see the module's text.

    `decay`: a float in [0, 1] (or a scalar tensor); `num_updates`: None, an int, or an int
    tensor / Variable (usually the global step) that lowers the decay early in training.
    """

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        if not isinstance(decay, Tensor):
            if isinstance(decay, bool) or not isinstance(decay, numbers.Real):
                raise TypeError("ExponentialMovingAverage: decay must be a float or a scalar "
                                "tensor, not %r" % (decay,))
            if not 0.0 <= decay <= 1.0:
                raise ValueError("ExponentialMovingAverage: decay must be in [0, 1], got %r"
                                 % (decay,))
        if not name or not isinstance(name, str):
            raise ValueError("ExponentialMovingAverage: name must be a non-empty string")
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = bool(zero_debias)
        self._name = name
        self._averages = {}

    @property
    def name(self):
        return self._name

    def _decay_tensor(self):
        """The decay for this apply(), as a float32 scalar tensor."""
        decay = self._decay
        decay = ops.cast(decay, dtypes.float32) if isinstance(decay, Tensor) \
            else ops.constant(float(decay), dtype=dtypes.float32)
        if self._num_updates is None:
            return decay
        n = self._num_updates
        if isinstance(n, Variable):
            n = _fresh_read(n)
        n = ops.cast(n, dtypes.float32) if isinstance(n, Tensor) \
            else ops.constant(float(n), dtype=dtypes.float32)
        return ops.minimum(decay, ops.divide(ops.add(n, 1.0), ops.add(n, 10.0)))

    def _check(self, var):
        if not isinstance(var, (Variable, Tensor)):
            raise TypeError("ExponentialMovingAverage.apply: var_list holds Variables and "
                            "Tensors, not %r" % (var,))
        if not var.dtype.is_floating:
            raise TypeError("ExponentialMovingAverage.apply: %s is %s; the variables must be "
                            "half, bfloat16, float or double" % (var.name, var.dtype.name))
        if var in self._averages:
            raise ValueError("ExponentialMovingAverage.apply: a moving average of %s is "
                             "already computed" % var.name)
        if isinstance(var, Tensor) and not var.shape.is_fully_defined():
            raise ValueError("ExponentialMovingAverage.apply: tensor %s needs a fully known "
                             "shape (its average is a variable), got %s" % (var.name, var.shape))

    def _make_shadow(self, g, var):
        """The shadow variable "<var>/<name>", built outside any control dependencies and in
        the outermost graph (as TF1's init_scope, also when apply() is called in a cond
        branch) so that initializing it runs nothing else."""
        g = _outermost(g)
        with g.as_default(), g.control_dependencies(None), _colocated(g, var), \
                g.name_scope(var.op.name + "/"):
            if isinstance(var, Variable):
                initial = var.initialized_value()   # as TF1: restored values carry over
            else:
                initial = ops.zeros(var.shape.as_list(), dtype=var.dtype)
            shadow = Variable(initial, name=self._name, trainable=False)
            if isinstance(var, Variable):
                g.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
        return shadow

    def _debiased_update(self, g, shadow, value, one_minus_decay):
        return _debiased_update(g, shadow, value, one_minus_decay)

    def apply(self, var_list=None):
        """Creates the shadow variables of `var_list` (default: the trainable variables) and
        returns one op that updates them all; a second apply() of the same variable is an
        error, as in TF1."""
        if var_list is None:
            var_list = trainable_variables()
        var_list = list(var_list)
        for var in var_list:
            self._check(var)
        if len(set(map(id, var_list))) != len(var_list):
            raise ValueError("ExponentialMovingAverage.apply: var_list holds a variable twice")
        g = var_list[0].graph if var_list else get_default_graph()
        for var in var_list:
            self._averages[var] = self._make_shadow(g, var)
        updates = []
        with g.name_scope(self._name):
            decay = self._decay_tensor()
            for var in var_list:
                shadow = self._averages[var]
                value = _fresh_read(var) if isinstance(var, Variable) else var
                one_minus_decay = ops.subtract(1.0, ops.cast(decay, var.dtype))
                with _colocated(g, shadow):
                    # As TF1's: only a Tensor's zero-started shadow is debiased, and only with
                    # zero_debias=True; a Variable's starts at its value and never is.
                    if self._zero_debias and isinstance(var, Tensor):
                        updates.append(self._debiased_update(g, shadow, value,
                                                             one_minus_decay))
                    else:
                        delta = ops.multiply(ops.subtract(shadow.value(), value),
                                             one_minus_decay)
                        updates.append(shadow.assign_sub(delta, read_value=False))
            return ops.group(*updates, name="update")

    def average(self, var):
        """The shadow Variable of `var`, or None when apply() was not called for it."""
        return self._averages.get(var)

    def average_name(self, var):
        """The name of `var`'s shadow variable ("<var>/<name>"), as saved in checkpoints; also
        for a `var` not averaged yet (the name apply() would give it)."""
        if var in self._averages:
            return self._averages[var].op.name
        return var.op.name + "/" + self._name

    def variables_to_restore(self, moving_avg_variables=None):
        """{checkpoint name: variable} that loads each averaged variable from its average and
        every other global variable from itself, for ``sf.train.Saver(...)``, as TF1's."""
        if moving_avg_variables is None:
            moving_avg_variables = trainable_variables() + moving_average_variables()
        unique = []
        for v in moving_avg_variables:
            if all(v is not u for u in unique):
                unique.append(v)
        name_map = {self.average_name(v): v for v in unique}
        averaged = {v.name for v in unique}
        for v in global_variables():
            if v.name not in averaged and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map


__all__ = ["assign_moving_average", "ExponentialMovingAverage", "moving_average_variables"]
