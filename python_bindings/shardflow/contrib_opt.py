"""tf.contrib.opt's decoupled weight decay (Loshchilov & Hutter, "Decoupled Weight Decay
Regularization"), as TF 1.15's DecoupledWeightDecayExtension: AdamWOptimizer,
MomentumWOptimizer and extend_with_decoupled_weight_decay(any sf.train optimizer class); and
LazyAdamOptimizer, NadamOptimizer and ModelAverageOptimizer.

Each step first shrinks every decayed variable, var -= weight_decay * var, then applies the
wrapped optimizer's update with the gradients computed from the variables' values before the
shrink. As in TF1 the decay is not multiplied by the learning rate: when the learning rate
follows a schedule, give weight_decay the same schedule (a tensor) yourself.

Example::

    opt = sf.contrib.opt.AdamWOptimizer(weight_decay=1e-4, learning_rate=1e-3)
    train_op = opt.minimize(loss, decay_var_list=[w])     # default: every trained variable
"""

import numpy as np

from shardflow import ops
from shardflow.array_ops import reduce_any, where_v2
from shardflow.composite_optimizers import _CompositeOptimizer, _group_after
from shardflow.framework import Tensor, convert_to_tensor
from shardflow.train import AdamOptimizer, MomentumOptimizer, _count_step
from shardflow.variables import Variable


class DecoupledWeightDecayExtension:
    """Mixed in before an sf.train optimizer: minimize / apply_gradients decay the variables
    (those of decay_var_list when given) before the optimizer's update."""

    def __init__(self, weight_decay, **kwargs):
        if not isinstance(weight_decay, Tensor) and not callable(weight_decay):
            weight_decay = float(weight_decay)
        self._weight_decay = weight_decay
        self._decay_var_list = None
        super().__init__(**kwargs)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=None,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None, decay_var_list=None):
        if grad_loss is not None:
            raise ValueError("%s.minimize(grad_loss=...) is not supported" % type(self).__name__)
        grads_and_vars = self.compute_gradients(loss, var_list=var_list)
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name,
                                    decay_var_list=decay_var_list)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None,
                        decay_var_list=None):
        pairs = [(convert_to_tensor(gr), v) for gr, v in grads_and_vars if gr is not None]
        if not pairs:
            raise ValueError("apply_gradients: No gradients provided for any variable "
                             "(no variable has a gradient)")
        decayed = None if decay_var_list is None else {id(v) for v in decay_var_list}
        g = pairs[0][1].graph
        decays = []
        with g.as_default(), g.name_scope((name or self._name) + "_decay"):
            # The shrink waits for the gradients (computed from the old values); the update
            # waits for the shrink.
            with g.control_dependencies([gr for gr, _ in pairs]):
                for _, v in pairs:
                    if decayed is None or id(v) in decayed:
                        decays.append(v.assign_sub(ops.multiply(self._decay(v), v.value()),
                                                   read_value=False))
            if decays:
                with g.control_dependencies(decays):
                    pairs = [(ops.identity(gr), v) for gr, v in pairs]
        return super().apply_gradients(pairs, global_step=global_step, name=name)

    def _decay(self, v):
        wd = self._weight_decay() if callable(self._weight_decay) else self._weight_decay
        if isinstance(wd, Tensor):
            return wd if wd.dtype == v.dtype else ops.cast(wd, v.dtype)
        return np.asarray(wd, v.dtype.as_numpy_dtype)


class AdamWOptimizer(DecoupledWeightDecayExtension, AdamOptimizer):
    """Adam with decoupled weight decay: var -= weight_decay * var, then Adam's step."""

    def __init__(self, weight_decay, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, use_locking=False, name="AdamW"):
        super().__init__(weight_decay, learning_rate=learning_rate, beta1=beta1, beta2=beta2,
                         epsilon=epsilon, name=name)


class MomentumWOptimizer(DecoupledWeightDecayExtension, MomentumOptimizer):
    """Momentum with decoupled weight decay: var -= weight_decay * var, then the momentum
    step."""

    def __init__(self, weight_decay, learning_rate, momentum, use_locking=False,
                 name="MomentumW", use_nesterov=False):
        super().__init__(weight_decay, learning_rate=learning_rate, momentum=momentum,
                         use_nesterov=use_nesterov, name=name)


class LazyAdamOptimizer(_CompositeOptimizer):
    """TF1's tf.contrib.opt.LazyAdamOptimizer: Adam whose moments and variable move only in the
    rows the gradient touches. TF gets those rows from an IndexedSlices gradient (an
    embedding lookup's); shardflow's gradients are dense, so a row here is touched when its
    gradient is not all zero (the rows an embedding lookup did not read). For other variables
    (every row has a gradient) it is Adam. Slots "m" (<var>/LazyAdam) and "v"
    (<var>/LazyAdam_1); beta1_power and beta2_power are shared, as TF's::

        lr_t = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)
        m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2   (touched rows only)
        var -= lr_t m / (sqrt(v) + epsilon)                             (touched rows only)
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="LazyAdam"):
        super().__init__(learning_rate, name)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)
        self._slot_specs = (("m", name, None), ("v", name, None))
        self._powers = None

    def _create_slots(self, g, var):
        if self._powers is None:
            with g.control_dependencies(None), g.name_scope(None):
                self._powers = (Variable(np.float32(self._beta1), name="beta1_power",
                                         trainable=False),
                                Variable(np.float32(self._beta2), name="beta2_power",
                                         trainable=False))
        super()._create_slots(g, var)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        update = super().apply_gradients(grads_and_vars, None, name)
        b1, b2 = self._powers
        with update.graph.as_default(), update.graph.control_dependencies([update]):
            advance = ops.group(b1.assign(ops.multiply(b1.value(), self._beta1),
                                          read_value=False),
                                b2.assign(ops.multiply(b2.value(), self._beta2),
                                          read_value=False))
        return _count_step(advance, global_step)

    def variables(self):
        """The slots and the shared beta1_power / beta2_power, as TF1's: re-initializing them
        resets the optimizer completely (the powers were left out, keeping the old bias
        correction)."""
        return sorted(super().variables() + list(self._powers or ()), key=lambda v: v.name)

    def _apply_dense(self, grad, var):
        rank = var.shape.ndims
        if rank is None:
            raise ValueError("LazyAdamOptimizer needs the rank of %s" % var.op.name)
        b1p, b2p = (ops.cast(p.value(), var.dtype) for p in self._powers)
        lr = ops.divide(ops.multiply(self._lr(var.dtype), ops.sqrt(ops.subtract(1.0, b2p))),
                        ops.subtract(1.0, b1p))
        touched = ops.not_equal(grad, ops.zeros_like(grad))
        if rank > 1:  # a row is touched as a whole ([rows, 1, ...] broadcasts in where_v2)
            touched = reduce_any(touched, axis=list(range(1, rank)), keepdims=True)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_new = where_v2(touched, ops.add(ops.multiply(m.value(), self._beta1),
                                          ops.multiply(grad, 1.0 - self._beta1)), m.value())
        v_new = where_v2(touched, ops.add(ops.multiply(v.value(), self._beta2),
                                          ops.multiply(ops.square(grad), 1.0 - self._beta2)),
                         v.value())
        step = ops.divide(ops.multiply(lr, m_new), ops.add(ops.sqrt(v_new), self._epsilon))
        delta = where_v2(touched, ops.negative(step), ops.zeros_like(step))
        return _group_after([m.assign(m_new, read_value=False),
                             v.assign(v_new, read_value=False)], var, delta=delta)


class NadamOptimizer(LazyAdamOptimizer):
    """TF1's tf.contrib.opt.NadamOptimizer: Adam with Nesterov momentum (TF's ApplyAdam with
    use_nesterov), every row updated. Slots "m" (<var>/Adam) and "v" (<var>/Adam_1) and the
    shared beta1_power / beta2_power, as TF's (it subclasses AdamOptimizer there)::

        lr_t = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)
        m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
        var -= lr_t (beta1 m + (1 - beta1) g) / (sqrt(v) + epsilon)
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)

    def _apply_dense(self, grad, var):
        b1p, b2p = (ops.cast(p.value(), var.dtype) for p in self._powers)
        lr = ops.divide(ops.multiply(self._lr(var.dtype), ops.sqrt(ops.subtract(1.0, b2p))),
                        ops.subtract(1.0, b1p))
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_new = ops.add(ops.multiply(m.value(), self._beta1),
                        ops.multiply(grad, 1.0 - self._beta1))
        v_new = ops.add(ops.multiply(v.value(), self._beta2),
                        ops.multiply(ops.square(grad), 1.0 - self._beta2))
        m_bar = ops.add(ops.multiply(m_new, self._beta1), ops.multiply(grad, 1.0 - self._beta1))
        step = ops.divide(ops.multiply(lr, m_bar), ops.add(ops.sqrt(v_new), self._epsilon))
        return _group_after([m.assign(m_new, read_value=False),
                             v.assign(v_new, read_value=False)], var,
                            delta=ops.negative(step))


def extend_with_decoupled_weight_decay(base_optimizer):
    """A subclass of `base_optimizer` (an sf.train optimizer class) with decoupled weight
    decay, as TF 1.15's: its constructor takes weight_decay first, then the base's keyword
    arguments; minimize and apply_gradients take decay_var_list."""

    class OptimizerWithDecoupledWeightDecay(DecoupledWeightDecayExtension, base_optimizer):
        def __init__(self, weight_decay, *args, **kwargs):
            super().__init__(weight_decay, *args, **kwargs)

    OptimizerWithDecoupledWeightDecay.__name__ = \
        "%sWithDecoupledWeightDecay" % base_optimizer.__name__
    return OptimizerWithDecoupledWeightDecay


class ModelAverageCustomGetter:
    """TF1's ModelAverageCustomGetter, for ``variable_scope(custom_getter=...)``: each worker's
    variables are its own, on `worker_device`, and local (each worker initialises them; the
    chief's values are then taken by every worker: ModelAverageOptimizer's hook). TF1 also kept
    a global copy on the ps; here the average travels by ring all-reduce between the workers."""

    def __init__(self, worker_device):
        self._worker_device = worker_device

    def __call__(self, getter, name, trainable=True, collections=None, *args, **kwargs):
        from shardflow.framework import GraphKeys, device
        with device(self._worker_device):
            return getter(name, *args, trainable=trainable,
                          collections=[GraphKeys.LOCAL_VARIABLES] +
                          ([GraphKeys.TRAINABLE_VARIABLES] if trainable else []), **kwargs)


class ModelAverageOptimizer:
    """TF1's tf.contrib.opt.ModelAverageOptimizer (DL4J-style parameter averaging): `opt`
    updates this worker's own variables every step; every `interval_steps` steps the workers'
    variables are replaced by their mean (sf.distribute.ParameterAveragingHook: ring all-reduce
    between the `num_worker` workers, no parameter server; `ps_device` is accepted and unused).
    Give every worker ``opt.make_session_run_hook(is_chief)``. The other attributes are `opt`'s.
    """

    def __init__(self, opt, num_worker, is_chief, ps_device="/job:ps/replica:0",
                 interval_steps=100):
        if int(num_worker) < 1:
            raise ValueError("ModelAverageOptimizer: num_worker must be at least 1, not %r"
                             % (num_worker,))
        self._opt = opt
        self._num_worker = int(num_worker)
        self._is_chief = bool(is_chief)
        self._interval = int(interval_steps)
        self._var_list = None

    def __getattr__(self, name):
        return getattr(self._opt, name)

    def compute_gradients(self, loss, var_list=None, **kwargs):
        if var_list is None:  # ModelAverageCustomGetter's variables are local and trainable
            from shardflow.variables import local_variables, trainable_variables
            var_list = trainable_variables() + [v for v in local_variables() if v.trainable]
        return self._opt.compute_gradients(loss, var_list=var_list, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        self._var_list = [v for g, v in grads_and_vars if g is not None]
        return self._opt.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def minimize(self, loss, global_step=None, var_list=None, name=None, **kwargs):
        return self.apply_gradients(self.compute_gradients(loss, var_list=var_list, **kwargs),
                                    global_step=global_step, name=name)

    def make_session_run_hook(self, is_chief=None, num_tokens=-1):
        """The hook that averages the trained variables every interval_steps (and starts every
        worker from the chief's values)."""
        from shardflow.distribute.parameter_averaging import ParameterAveragingHook
        if self._var_list is None:
            raise ValueError("ModelAverageOptimizer: call minimize (or apply_gradients) before "
                             "make_session_run_hook")
        chief = self._is_chief if is_chief is None else bool(is_chief)
        return ParameterAveragingHook(self._num_worker, 0 if chief else 1, self._interval,
                                      var_list=self._var_list)


def __getattr__(name):
    raise AttributeError("shardflow has no tf.contrib.opt.%s; it has %s (other optimizers: "
                         "sf.train)" % (name, ", ".join(__all__)))


__all__ = ["AdamWOptimizer", "DecoupledWeightDecayExtension", "LazyAdamOptimizer",
           "ModelAverageCustomGetter", "ModelAverageOptimizer", "MomentumWOptimizer",
           "NadamOptimizer", "extend_with_decoupled_weight_decay"]
