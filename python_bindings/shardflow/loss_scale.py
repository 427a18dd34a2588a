"""Loss scaling for float16 training, as TF1 programs ask for it:

    opt = sf.train.experimental.MixedPrecisionLossScaleOptimizer(
        sf.train.AdamOptimizer(1e-3), loss_scale="dynamic")        # TF 1.14, 1.15
    opt = sf.contrib.mixed_precision.LossScaleOptimizer(
        sf.train.AdamOptimizer(1e-3),
        sf.contrib.mixed_precision.ExponentialUpdateLossScaleManager(2 ** 15, 2000))  # TF 1.5+

The loss is multiplied by the scale before differentiating and every gradient divided by it
after, so that small float16 gradients do not flush to zero. A dynamic scale skips a step
whose gradients are not all finite (no variable, slot or global step changes) and lowers the
scale; after enough finite steps in a row it raises it. The scale and the count of good steps
are non-trainable variables (saved in checkpoints, as TF's).
"""

import numpy as np

from shardflow import dtypes, ops
from shardflow.core_extras import IndexedSlices
from shardflow.framework import Tensor, convert_to_tensor


def _scaled(grad, factor):
    if grad is None:
        return None
    if isinstance(grad, IndexedSlices):
        return IndexedSlices(ops.multiply(grad.values, ops.cast(factor, grad.values.dtype)),
                             grad.indices, grad.dense_shape)
    grad = convert_to_tensor(grad)
    return ops.multiply(grad, ops.cast(factor, grad.dtype))


def all_finite(grads):
    """A bool scalar: whether every element of every gradient (None skipped) is finite."""
    from shardflow.array_ops import reduce_all
    checks = []
    for g in grads:
        if g is None:
            continue
        values = g.values if isinstance(g, IndexedSlices) else convert_to_tensor(g)
        checks.append(reduce_all(ops.is_finite(values)))
    if not checks:
        return ops.constant(True)
    out = checks[0]
    for c in checks[1:]:
        out = ops.logical_and(out, c)
    return out


def _state_variable(name, value, dtype):
    from shardflow.variables import GraphKeys, Variable
    return Variable(np.asarray(value, dtype.as_numpy_dtype), trainable=False, name=name,
                    collections=[GraphKeys.GLOBAL_VARIABLES])


# ---- tf.train.experimental's LossScale ------------------------------------------------------


class LossScale:
    """TF 1.14's tf.train.experimental.LossScale: __call__() is the scale (a float32 scalar
    tensor); update(grads) gives (an op that updates the scale, a bool tensor: whether to
    apply these gradients)."""

    def __call__(self):
        raise NotImplementedError

    def update(self, grads):
        raise NotImplementedError


class FixedLossScale(LossScale):
    """A scale that never changes; every step is applied."""

    def __init__(self, loss_scale_value):
        if isinstance(loss_scale_value, Tensor) or not isinstance(
                loss_scale_value, (int, float, np.number)) or isinstance(loss_scale_value, bool):
            raise ValueError("FixedLossScale takes a Python number, not %r"
                             % (loss_scale_value,))
        if loss_scale_value < 1:
            raise ValueError("FixedLossScale: the loss scale must be at least 1, got %r"
                             % (loss_scale_value,))
        self._value = float(loss_scale_value)

    def __call__(self):
        return ops.constant(self._value, dtype=dtypes.float32)

    def update(self, grads):
        return ops.no_op(), ops.constant(True)

    def get_config(self):
        return {"loss_scale_value": self._value}


class DynamicLossScale(LossScale):
    """Starts at initial_loss_scale; a step with a non-finite gradient is skipped and divides
    the scale by multiplier (never below 1); increment_period finite steps in a row multiply
    it. TF 1.14's defaults."""

    def __init__(self, initial_loss_scale=2 ** 15, increment_period=2000, multiplier=2.0):
        if not initial_loss_scale >= 1:
            raise ValueError("DynamicLossScale: initial_loss_scale must be at least 1, got %r"
                             % (initial_loss_scale,))
        if int(increment_period) < 1:
            raise ValueError("DynamicLossScale: increment_period must be at least 1, got %r"
                             % (increment_period,))
        if not multiplier > 1:
            raise ValueError("DynamicLossScale: multiplier must be above 1, got %r"
                             % (multiplier,))
        self.initial_loss_scale = float(initial_loss_scale)
        self.increment_period = int(increment_period)
        self.multiplier = float(multiplier)
        self._scale = None
        self._good_steps = None

    def _variables(self):
        if self._scale is None:
            self._scale = _state_variable("current_loss_scale", self.initial_loss_scale,
                                          dtypes.float32)
            self._good_steps = _state_variable("good_steps", 0, dtypes.int64)
        return self._scale, self._good_steps

    def __call__(self):
        return self._variables()[0].value()

    def update(self, grads):
        scale, good = self._variables()
        finite = all_finite(grads)
        count = ops.add(good.value(), np.int64(1))
        grow = ops.logical_and(finite, ops.greater_equal(count, np.int64(self.increment_period)))
        from shardflow.array_ops import where
        new_good = where(finite, where(grow, ops.zeros_like(count), count), ops.zeros_like(count))
        lowered = ops.maximum(ops.divide(scale.value(), self.multiplier), 1.0)
        new_scale = where(grow, ops.multiply(scale.value(), self.multiplier),
                          where(finite, scale.value(), lowered))
        update = ops.group(scale.assign(new_scale, read_value=False),
                           good.assign(new_good, read_value=False))
        return update, finite

    def get_config(self):
        return {"initial_loss_scale": self.initial_loss_scale,
                "increment_period": self.increment_period, "multiplier": self.multiplier}


def _as_loss_scale(loss_scale):
    if isinstance(loss_scale, LossScale):
        return loss_scale
    if loss_scale == "dynamic":
        return DynamicLossScale()
    if isinstance(loss_scale, (int, float, np.number)) and not isinstance(loss_scale, bool):
        return FixedLossScale(loss_scale)
    raise ValueError("loss_scale is 'dynamic', a number or a LossScale, not %r" % (loss_scale,))


# Note [Skipping a step]. A dynamic loss scale skips a step whose gradients are not all finite:
# TF builds the wrapped optimizer's update inside a cond. shardflow's optimizers build their
# updates in the variables' graph, not in a cond's branch, so the update runs every step and a
# skipped step is undone instead: every variable the update writes (the variables, the slots
# and step counts it made) is read before any of its writes (control edges from those reads to
# the update's writing ops) and assigned back afterwards when the step is skipped; the global
# step counts applied steps only. A skipped step therefore changes no variable, slot or global
# step, as TF's; an applied one costs a read and an assign more per state variable.


def _writers_of(g, applied, before_ops):
    """The ops built since `before_ops` (names) from which `applied` is reached and that
    write a variable."""
    writes = ("Assign", "Apply", "Scatter")
    found, stack, seen = [], [applied.name], set()
    while stack:
        name = stack.pop()
        if name in seen or name in before_ops:
            continue
        seen.add(name)
        info = g._handle.node_info(name)
        if any(w in info["op"] for w in writes) and info["op"] != "VarIsInitializedOp":
            found.append(name)
        stack.extend(i.partition(":")[0].lstrip("^") for i in info["inputs"])
        stack.extend(c.lstrip("^") for c in info["control_inputs"])
    return found


class _ScalingOptimizer:
    """compute_gradients of the scaled loss, unscaled; apply_gradients only when the scale says
    so (Note [Skipping a step]). Other attributes are the wrapped optimizer's."""

    def __init__(self, opt, name):
        from shardflow.train import Optimizer
        if not isinstance(opt, Optimizer):
            raise ValueError("%s wraps a sf.train.Optimizer (e.g. sf.train.AdamOptimizer(1e-3)),"
                             " not %r" % (name, opt))
        self._optimizer = opt
        self._name = name

    _may_skip = True   # whether a step can be skipped (a fixed scale applies every step)

    def _scale(self):
        raise NotImplementedError

    def _update(self, grads):
        raise NotImplementedError

    def compute_gradients(self, loss, var_list=None, gate_gradients=1, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        scale = self._scale()
        loss = convert_to_tensor(loss)
        scaled = ops.multiply(loss, ops.cast(scale, loss.dtype))
        pairs = self._optimizer.compute_gradients(
            scaled, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        inverse = ops.divide(1.0, scale)
        return [(_scaled(g, inverse), v) for g, v in pairs]

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The wrapped optimizer's update when the scale says to apply these gradients, else
        nothing: Note [Skipping a step]."""
        pairs = list(grads_and_vars)
        update_scale, should_apply = self._update([g for g, _ in pairs])
        if not self._may_skip:
            return ops.group(self._optimizer.apply_gradients(pairs, global_step, name),
                             update_scale)
        from shardflow.array_ops import where
        from shardflow.variables import Variable, global_variables
        pairs = [(g, v) for g, v in pairs if g is not None]
        if not pairs:
            raise ValueError("%s.apply_gradients: No gradients provided for any variable "
                             "(no variable has a gradient)" % self._name)
        g = pairs[0][1].graph
        before_vars = {v.name for v in global_variables(graph=g)}
        before_ops = set(g._handle.node_names())
        applied = self._optimizer.apply_gradients(pairs, None, name)
        created = [v for v in global_variables(graph=g) if v.name not in before_vars]
        state = [v for _, v in pairs] + created
        writers = _writers_of(g, applied, before_ops)
        with g.as_default(), g.name_scope((name or self._name) + "_skip"):
            with g.control_dependencies(None):
                snapshots = [v._new_read() for v in state]
            for snap in snapshots:
                for op_name in writers:
                    g._handle.add_control_edge(snap.op.name, op_name)
            with g.control_dependencies([applied]):
                kept = [v.assign(where(should_apply, v._new_read(), snap), read_value=False)
                        for v, snap in zip(state, snapshots)]
            step = ops.group(*kept)
            if global_step is not None:
                if not isinstance(global_step, Variable):
                    raise TypeError("global_step is a Variable "
                                    "(sf.train.get_or_create_global_step()), not %r"
                                    % (global_step,))
                with g.control_dependencies([step]):
                    step = global_step.assign_add(ops.cast(should_apply, global_step.dtype),
                                                  read_value=False)
            return ops.group(step, update_scale)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        pairs = self.compute_gradients(loss, var_list, gate_gradients, aggregation_method,
                                       colocate_gradients_with_ops, grad_loss)
        if not any(g is not None for g, _ in pairs):
            raise ValueError("%s: no variable has a gradient of the loss" % self._name)
        return self.apply_gradients(pairs, global_step, name)

    def __getattr__(self, attr):
        return getattr(self.__dict__["_optimizer"], attr)


class MixedPrecisionLossScaleOptimizer(_ScalingOptimizer):
    """TF 1.14's tf.train.experimental.MixedPrecisionLossScaleOptimizer(opt, loss_scale):
    loss_scale is "dynamic" (a DynamicLossScale), a number (a FixedLossScale) or a
    LossScale."""

    def __init__(self, opt, loss_scale):
        super().__init__(opt, "MixedPrecisionLossScaleOptimizer")
        self._loss_scale = _as_loss_scale(loss_scale)
        self._may_skip = not isinstance(self._loss_scale, FixedLossScale)

    def _scale(self):
        return self._loss_scale()

    def _update(self, grads):
        return self._loss_scale.update(grads)

    @property
    def loss_scale(self):
        return self._loss_scale


# ---- tf.contrib.mixed_precision ---------------------------------------------------------------


class LossScaleManager:
    """TF1's tf.contrib.mixed_precision.LossScaleManager: get_loss_scale() (a float32 scalar
    tensor) and update_loss_scale(finite_grads) (an op)."""

    def get_loss_scale(self):
        raise NotImplementedError

    def update_loss_scale(self, finite_grads):
        raise NotImplementedError


class FixedLossScaleManager(LossScaleManager):
    def __init__(self, loss_scale):
        if not loss_scale >= 1:
            raise ValueError("FixedLossScaleManager: loss_scale must be at least 1, got %r"
                             % (loss_scale,))
        self._value = float(loss_scale)

    def get_loss_scale(self):
        return ops.constant(self._value, dtype=dtypes.float32)

    def update_loss_scale(self, finite_grads):
        return ops.no_op()


class ExponentialUpdateLossScaleManager(LossScaleManager):
    """Multiplies the scale by incr_ratio after incr_every_n_steps finite steps in a row, and
    by decr_ratio (never below 1) after decr_every_n_nan_or_inf steps with non-finite
    gradients in a row, as TF1's."""

    def __init__(self, init_loss_scale, incr_every_n_steps, decr_every_n_nan_or_inf=2,
                 incr_ratio=2, decr_ratio=0.8):
        if not init_loss_scale >= 1:
            raise ValueError("ExponentialUpdateLossScaleManager: init_loss_scale must be at "
                             "least 1, got %r" % (init_loss_scale,))
        if not incr_ratio > 1 or not 0 < decr_ratio < 1:
            raise ValueError("ExponentialUpdateLossScaleManager: incr_ratio must be above 1 and "
                             "decr_ratio in (0, 1), got %r and %r" % (incr_ratio, decr_ratio))
        if int(incr_every_n_steps) < 1 or int(decr_every_n_nan_or_inf) < 1:
            raise ValueError("ExponentialUpdateLossScaleManager: the step counts must be at "
                             "least 1")
        self._incr_every = int(incr_every_n_steps)
        self._decr_every = int(decr_every_n_nan_or_inf)
        self._incr_ratio = float(incr_ratio)
        self._decr_ratio = float(decr_ratio)
        self._scale = _state_variable("loss_scale", float(init_loss_scale), dtypes.float32)
        self._good = _state_variable("good_steps", 0, dtypes.int64)
        self._bad = _state_variable("bad_steps", 0, dtypes.int64)

    def get_loss_scale(self):
        return self._scale.value()

    def update_loss_scale(self, finite_grads):
        from shardflow.array_ops import where
        finite = convert_to_tensor(finite_grads)
        zero = np.int64(0)
        good = where(finite, ops.add(self._good.value(), np.int64(1)), ops.constant(zero))
        bad = where(finite, ops.constant(zero), ops.add(self._bad.value(), np.int64(1)))
        grow = ops.greater_equal(good, np.int64(self._incr_every))
        shrink = ops.greater_equal(bad, np.int64(self._decr_every))
        scale = self._scale.value()
        new_scale = where(grow, ops.multiply(scale, self._incr_ratio),
                          where(shrink, ops.maximum(ops.multiply(scale, self._decr_ratio), 1.0),
                                scale))
        return ops.group(
            self._scale.assign(new_scale, read_value=False),
            self._good.assign(where(grow, ops.constant(zero), good), read_value=False),
            self._bad.assign(where(shrink, ops.constant(zero), bad), read_value=False))


class LossScaleOptimizer(_ScalingOptimizer):
    """TF1's tf.contrib.mixed_precision.LossScaleOptimizer(opt, loss_scale_manager)."""

    def __init__(self, opt, loss_scale_manager):
        super().__init__(opt, "LossScaleOptimizer")
        if not isinstance(loss_scale_manager, LossScaleManager):
            raise ValueError("LossScaleOptimizer takes a LossScaleManager "
                             "(FixedLossScaleManager, ExponentialUpdateLossScaleManager), not %r"
                             % (loss_scale_manager,))
        self._manager = loss_scale_manager

    def _scale(self):
        return self._manager.get_loss_scale()

    def _update(self, grads):
        finite = all_finite(grads)
        return self._manager.update_loss_scale(finite), finite


__all__ = ["DynamicLossScale", "ExponentialUpdateLossScaleManager", "FixedLossScale",
           "FixedLossScaleManager", "LossScale", "LossScaleManager", "LossScaleOptimizer",
           "MixedPrecisionLossScaleOptimizer"]
