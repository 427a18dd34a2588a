"""tf.keras.optimizers for graph mode: Keras's names and arguments over shardflow's
tf.train optimizers (whose updates the engine builds).

Example::

    model.compile(optimizer=keras.optimizers.SGD(lr=0.1, momentum=0.9), loss="mse")
    model.compile(optimizer="adam", loss="mse")           # Adam with Keras's defaults

Each takes ``lr=`` (TF 1.x Keras) or ``learning_rate=``: a number, or a
keras.optimizers.schedules schedule of the step count. ``decay`` is Keras's time-based decay:
step t updates with lr / (1 + decay * t). ``optimizer.iterations`` is the int64 step count
Variable (once the training step is built); each step adds one after its update. ``clipnorm``
clips each gradient to that norm and ``clipvalue`` its elements, as TF 1.15's tf.keras; an
argument none of these is a TypeError (it was once ignored).

The learning rate is a float until the model's training step is built; from then on
``optimizer.lr`` is a non-trainable float32 Variable that the step reads, so
``keras.backend.set_value(model.optimizer.lr, 0.01)`` (what LearningRateScheduler and
ReduceLROnPlateau do) changes the updates that follow. Adadelta is TF1's kernel
(composite_optimizers.py); Adamax and Nadam are Keras's update rules composed from
element-wise ops, with a step counter of their own that t is read from.

After each step, every weight that carries a keras.constraints constraint (a layer's
``kernel_constraint``) is set to constraint(weight), as Keras does.
"""

import numpy as np

from shardflow import ops, train
from shardflow.keras import schedules
from shardflow.composite_optimizers import AdadeltaOptimizer, _CompositeOptimizer, _group_after
from shardflow.framework import get_default_graph
from shardflow.variables import Variable


class Optimizer:
    """Base class: ``get_updates(loss, params)`` gives the op of one step."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from shardflow.keras import saving
        saving.record_init(cls)  # model.save writes the optimizer's arguments

    def __init__(self, lr, learning_rate, decay, default, clipnorm=None, clipvalue=None,
                 name=None, **unknown):
        if unknown:
            raise TypeError("%s: unexpected argument(s) %s (Keras's optimizers take their own "
                            "hyperparameters, lr/learning_rate, decay, clipnorm, clipvalue and "
                            "name)" % (type(self).__name__, ", ".join(sorted(unknown))))
        if lr is not None and learning_rate is not None:
            raise ValueError("give lr= or learning_rate=, not both")
        for arg, value in (("clipnorm", clipnorm), ("clipvalue", clipvalue)):
            if value is not None and (isinstance(value, bool) or
                                      not isinstance(value, (int, float)) or not value > 0):
                raise ValueError("%s(%s=%r): a positive number" % (type(self).__name__, arg,
                                                                   value))
        self.clipnorm = None if clipnorm is None else float(clipnorm)
        self.clipvalue = None if clipvalue is None else float(clipvalue)
        self._name = name
        value = lr if lr is not None else learning_rate
        self._schedule = None
        if isinstance(value, schedules.LearningRateSchedule):
            self._schedule, value = value, None
        self._lr_value = float(default if value is None else value)
        self._lr_var = None
        self._iterations = None
        try:
            self.decay = float(decay)
        except (TypeError, ValueError):
            raise TypeError("%s(decay=%r): a number" % (type(self).__name__, decay)) from None
        if not self.decay >= 0:
            raise ValueError("%s(decay=%r): Keras's time-based decay is 0 or more"
                             % (type(self).__name__, decay))

    @property
    def lr(self):
        """The learning rate: the float32 Variable the step reads once the model is compiled
        (keras.backend.get_value / set_value it; a float before)."""
        return self._lr_var if self._lr_var is not None else self._lr_value

    @lr.setter
    def lr(self, value):
        if isinstance(value, Variable):
            self._lr_var = value
            return
        self._lr_value = float(value)
        if self._lr_var is not None and self._lr_var.graph is get_default_graph():
            from shardflow.keras import backend as K
            K.set_value(self._lr_var, self._lr_value)

    learning_rate = lr

    def _get_lr(self):
        """The current learning rate as a float."""
        if self._lr_var is None or self._lr_var.graph is not get_default_graph():
            return self._lr_value
        from shardflow.keras import backend as K
        return float(K.get_value(self._lr_var))

    def _tf_optimizer(self, lr):
        raise NotImplementedError

    def _clip(self, grad):
        """TF 1.15's tf.keras clipping: each gradient's own norm to at most clipnorm, then each
        element into [-clipvalue, clipvalue]."""
        if self.clipnorm is not None:
            grad = ops.clip_by_norm(grad, self.clipnorm)
        if self.clipvalue is not None:
            grad = ops.clip_by_value(grad, -self.clipvalue, self.clipvalue)
        return grad

    @property
    def iterations(self):
        """The steps taken: an int64 Variable once the training step is built, else None."""
        return self._iterations

    def _make_variables(self, g):
        """The learning rate and step count as variables of graph `g` (compile makes them, so
        that K.set_value(model.optimizer.lr, ...) works before fit, as in TF 1.15)."""
        if self._lr_var is None or self._lr_var.graph is not g:
            with g.as_default(), g.control_dependencies(None), g.name_scope(None):
                self._lr_var = Variable(np.float32(self._lr_value), trainable=False,
                                        name=type(self).__name__ + "_lr")
                self._iterations = Variable(np.int64(0), trainable=False,
                                            name=type(self).__name__ + "_iterations")

    def get_updates(self, loss, params):
        g = loss.graph
        self._make_variables(g)
        with g.as_default():
            t = self._iterations.value()
            lr = self._schedule(t) if self._schedule is not None else self._lr_var.value()
            if self.decay:
                lr = ops.divide(lr, ops.add(1.0, ops.multiply(
                    self.decay, ops.cast(t, lr.dtype))))
            self._updates = self._tf_optimizer(lr)
            # the constraints are applied by minimize/apply_gradients (train._apply_constraints)
            if self.clipnorm is None and self.clipvalue is None:
                step = self._updates.minimize(loss, var_list=params)
            else:
                pairs = self._updates.compute_gradients(loss, var_list=params)
                step = self._updates.apply_gradients(
                    [(None if gr is None else self._clip(gr), v) for gr, v in pairs])
            with g.control_dependencies([step]):
                return self._iterations.assign_add(np.int64(1), read_value=False)

    def variables(self):
        """The optimizer's variables: its learning rate, step count and what its updates made
        (slots, step counts); empty before the training step is built."""
        if self._lr_var is None:
            return []
        made = self._updates.variables() if getattr(self, "_updates", None) is not None else []
        own = [self._lr_var, self._iterations]
        return own + [v for v in made if all(v is not o for o in own)]

    @property
    def weights(self):
        return self.variables()


class SGD(Optimizer):
    def __init__(self, lr=None, momentum=0.0, decay=0.0, nesterov=False, learning_rate=None,
                 **kwargs):
        super().__init__(lr, learning_rate, decay, 0.01, **kwargs)
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _tf_optimizer(self, lr):
        if self.momentum or self.nesterov:
            return train.MomentumOptimizer(lr, self.momentum, use_nesterov=self.nesterov,
                                           name="SGD")
        return train.GradientDescentOptimizer(lr, name="SGD")


class Adam(Optimizer):
    """Adam; with amsgrad=True Keras's AMSGrad (Reddi et al. 2018), t = step + 1::

        m = beta_1 * m + (1 - beta_1) * g;   v = beta_2 * v + (1 - beta_2) * g^2
        vhat = max(vhat, v)
        var -= lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(vhat) + epsilon)
    """

    def __init__(self, lr=None, beta_1=0.9, beta_2=0.999, epsilon=None, decay=0.0,
                 amsgrad=False, learning_rate=None, **kwargs):
        super().__init__(lr, learning_rate, decay, 0.001, **kwargs)
        self.amsgrad = bool(amsgrad)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)

    def _tf_optimizer(self, lr):
        if self.amsgrad:
            return _AmsgradUpdate(lr, self.beta_1, self.beta_2, self.epsilon)
        return train.AdamOptimizer(lr, self.beta_1, self.beta_2, self.epsilon, name="Adam")


class _RMSpropUpdate(_CompositeOptimizer):
    """TF 1.15's Keras RMSprop (OptimizerV2); every slot starts at 0, unlike tf.train's."""

    def __init__(self, lr, rho, momentum, epsilon, centered):
        super().__init__(lr, "RMSprop")
        self._rho, self._momentum, self._epsilon = rho, momentum, epsilon
        self._centered = centered
        # TF 1.15's slot order and names: "<var>/rms", "<var>/momentum", "<var>/mg"
        self._slot_specs = (("rms", "rms", None),) + \
            ((("momentum", "momentum", None),) if momentum > 0 else ()) + \
            ((("mg", "mg", None),) if centered else ())

    def _apply_dense(self, grad, var):
        rho, eps = self._rho, self._epsilon
        rms = self.get_slot(var, "rms")
        rms_new = ops.add(ops.multiply(rms.value(), rho), ops.multiply(ops.square(grad), 1 - rho))
        slots = [rms.assign(rms_new, read_value=False)]
        denom = rms_new
        if self._centered:
            mg = self.get_slot(var, "mg")
            mg_new = ops.add(ops.multiply(mg.value(), rho), ops.multiply(grad, 1 - rho))
            slots.append(mg.assign(mg_new, read_value=False))
            denom = ops.subtract(rms_new, ops.square(mg_new))
        lr = self._lr(var.dtype)
        if self._momentum > 0:
            # the ApplyRMSProp / ApplyCenteredRMSProp kernels: epsilon inside the square root
            mom = self.get_slot(var, "momentum")
            mom_new = ops.add(ops.multiply(mom.value(), self._momentum),
                              ops.multiply(lr, ops.multiply(grad, ops.rsqrt(
                                  ops.add(denom, eps)))))
            slots.append(mom.assign(mom_new, read_value=False))
            return _group_after(slots, var, delta=ops.negative(mom_new))
        # without momentum, composed: epsilon outside the square root
        step = ops.divide(ops.multiply(lr, grad), ops.add(ops.sqrt(denom), eps))
        return _group_after(slots, var, delta=ops.negative(step))


class RMSprop(Optimizer):
    """RMSprop as TF 1.15's tf.keras (OptimizerV2); "rms" (and "momentum", "mg") start at 0::

        rms = rho * rms + (1 - rho) * g^2
        mg  = rho * mg + (1 - rho) * g                  (centered=True only)
        denom = rms - mg^2 if centered else rms
        momentum == 0:  var -= lr * g / (sqrt(denom) + epsilon)
        momentum > 0:   mom = momentum * mom + lr * g / sqrt(denom + epsilon);  var -= mom
    """

    def __init__(self, lr=None, rho=0.9, momentum=0.0, epsilon=None, centered=False,
                 decay=0.0, learning_rate=None, **kwargs):
        super().__init__(lr, learning_rate, decay, 0.001, **kwargs)
        self.rho = float(rho)
        self.momentum = float(momentum)
        if not 0 <= self.momentum <= 1:
            raise ValueError("RMSprop(momentum=%r): a number in [0, 1]" % (momentum,))
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)
        self.centered = bool(centered)

    def _tf_optimizer(self, lr):
        return _RMSpropUpdate(lr, self.rho, self.momentum, self.epsilon, self.centered)


class Adagrad(Optimizer):
    def __init__(self, lr=None, epsilon=None, decay=0.0, learning_rate=None,
                 initial_accumulator_value=0.1, **kwargs):
        super().__init__(lr, learning_rate, decay, 0.01, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)

    def _tf_optimizer(self, lr):
        return train.AdagradOptimizer(lr, self.initial_accumulator_value, name="Adagrad")


class TFOptimizer(Optimizer):
    """Wraps a tf.train optimizer (compile() does this for one passed directly)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self._iterations = None

    @property
    def lr(self):
        return getattr(self.optimizer, "_params", {}).get("learning_rate")

    @lr.setter
    def lr(self, value):
        raise ValueError("the learning rate of a wrapped tf.train optimizer cannot be set; "
                         "give it a tensor learning rate, or use a keras.optimizers one")

    learning_rate = lr

    def _get_lr(self):
        return self.lr

    def get_updates(self, loss, params):
        return self.optimizer.minimize(loss, var_list=params)  # constraints applied there

    def variables(self):
        return list(self.optimizer.variables())


class Adadelta(Optimizer):
    """Adadelta as TF 1.15's tf.keras (its ApplyAdadelta kernel, with the learning rate)::

        accum        = rho * accum + (1 - rho) * g^2
        update       = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * g
        accum_update = rho * accum_update + (1 - rho) * update^2
        var         -= lr * update
    """

    def __init__(self, lr=None, rho=0.95, epsilon=None, decay=0.0, learning_rate=None,
                 **kwargs):
        super().__init__(lr, learning_rate, decay, 0.001, **kwargs)
        self.rho = float(rho)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)

    def _tf_optimizer(self, lr):
        return AdadeltaOptimizer(lr, rho=self.rho, epsilon=self.epsilon, name="Adadelta")


class _Stepped(_CompositeOptimizer):
    """A composite optimizer with Keras's shared step counter: `_apply_dense` reads
    t = iterations + 1; after every variable is updated, `_advance()` moves the shared state
    (iterations += 1, ...)."""

    def __init__(self, lr, name, hyper, shared):
        super().__init__(lr, name)
        self._hyper = hyper
        self._shared_init = shared     # (name, initial value) of the shared scalars
        self._shared = None
        self._slot_specs = (("m", name, None), ("v", name, None))

    def _create_slots(self, g, var):
        if self._shared is None:
            with g.control_dependencies(None), g.name_scope(None):
                self._shared = {n: Variable(np.float32(v), name="%s_%s" % (self._name, n),
                                            trainable=False) for n, v in self._shared_init}
        super()._create_slots(g, var)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        update = super().apply_gradients(grads_and_vars, None, name)
        with update.graph.as_default(), update.graph.control_dependencies([update]):
            advance = ops.group(*self._advance())
        return train._count_step(advance, global_step)

    def _t(self, dtype):
        return ops.cast(ops.add(self._shared["iterations"].value(), 1.0), dtype)

    def _advance(self):
        it = self._shared["iterations"]
        return [it.assign(ops.add(it.value(), 1.0), read_value=False)]


class _AdamaxUpdate(_Stepped):
    def __init__(self, lr, beta_1, beta_2, epsilon):
        super().__init__(lr, "Adamax", (beta_1, beta_2, epsilon), [("iterations", 0.0)])

    def _apply_dense(self, grad, var):
        b1, b2, eps = self._hyper
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        t = self._t(var.dtype)
        lr_t = ops.divide(self._lr(var.dtype), ops.subtract(1.0, ops.pow(
            ops.constant(b1, dtype=var.dtype), t)))
        m_new = ops.add(ops.multiply(m.value(), b1), ops.multiply(grad, 1.0 - b1))
        v_new = ops.maximum(ops.multiply(v.value(), b2), ops.abs(grad))
        step = ops.divide(ops.multiply(lr_t, m_new), ops.add(v_new, eps))
        return _group_after([m.assign(m_new, read_value=False),
                             v.assign(v_new, read_value=False)], var, delta=ops.negative(step))


class _AmsgradUpdate(_Stepped):
    def __init__(self, lr, beta_1, beta_2, epsilon):
        super().__init__(lr, "Adam", (beta_1, beta_2, epsilon), [("iterations", 0.0)])
        self._slot_specs = (("m", "Adam", None), ("v", "Adam", None), ("vhat", "Adam", None))

    def _apply_dense(self, grad, var):
        b1, b2, eps = self._hyper
        m, v, vhat = (self.get_slot(var, n) for n in ("m", "v", "vhat"))
        t = self._t(var.dtype)
        lr_t = ops.multiply(self._lr(var.dtype), ops.divide(
            ops.sqrt(ops.subtract(1.0, ops.pow(ops.constant(b2, dtype=var.dtype), t))),
            ops.subtract(1.0, ops.pow(ops.constant(b1, dtype=var.dtype), t))))
        m_new = ops.add(ops.multiply(m.value(), b1), ops.multiply(grad, 1.0 - b1))
        v_new = ops.add(ops.multiply(v.value(), b2), ops.multiply(ops.square(grad), 1.0 - b2))
        vhat_new = ops.maximum(vhat.value(), v_new)
        step = ops.divide(ops.multiply(lr_t, m_new), ops.add(ops.sqrt(vhat_new), eps))
        return _group_after([m.assign(m_new, read_value=False),
                             v.assign(v_new, read_value=False),
                             vhat.assign(vhat_new, read_value=False)], var,
                            delta=ops.negative(step))


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm), Keras's update with t = step + 1::

        m = beta_1 * m + (1 - beta_1) * g
        v = max(beta_2 * v, |g|)
        var -= lr / (1 - beta_1^t) * m / (v + epsilon)
    """

    def __init__(self, lr=None, beta_1=0.9, beta_2=0.999, epsilon=None, decay=0.0,
                 learning_rate=None, **kwargs):
        super().__init__(lr, learning_rate, decay, 0.001, **kwargs)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)

    def _tf_optimizer(self, lr):
        self._update = _AdamaxUpdate(lr, self.beta_1, self.beta_2, self.epsilon)
        return self._update


class _NadamUpdate(_Stepped):
    def __init__(self, lr, beta_1, beta_2, epsilon, schedule_decay):
        super().__init__(lr, "Nadam", (beta_1, beta_2, epsilon, schedule_decay),
                         [("iterations", 0.0), ("m_schedule", 1.0)])

    def _momentum_cache(self, t, dtype):
        b1, _, _, decay = self._hyper
        return ops.multiply(b1, ops.subtract(1.0, ops.multiply(0.5, ops.pow(
            ops.constant(0.96, dtype=dtype), ops.multiply(t, decay)))))

    def _apply_dense(self, grad, var):
        b1, b2, eps, _ = self._hyper
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        t = self._t(var.dtype)
        mc_t = self._momentum_cache(t, var.dtype)
        mc_t1 = self._momentum_cache(ops.add(t, 1.0), var.dtype)
        schedule = ops.cast(self._shared["m_schedule"].value(), var.dtype)
        schedule_new = ops.multiply(schedule, mc_t)
        schedule_next = ops.multiply(schedule_new, mc_t1)
        g_prime = ops.divide(grad, ops.subtract(1.0, schedule_new))
        m_new = ops.add(ops.multiply(m.value(), b1), ops.multiply(grad, 1.0 - b1))
        m_prime = ops.divide(m_new, ops.subtract(1.0, schedule_next))
        v_new = ops.add(ops.multiply(v.value(), b2), ops.multiply(ops.square(grad), 1.0 - b2))
        v_prime = ops.divide(v_new, ops.subtract(1.0, ops.pow(
            ops.constant(b2, dtype=var.dtype), t)))
        m_bar = ops.add(ops.multiply(ops.subtract(1.0, mc_t), g_prime),
                        ops.multiply(mc_t1, m_prime))
        step = ops.divide(ops.multiply(self._lr(var.dtype), m_bar),
                          ops.add(ops.sqrt(v_prime), eps))
        return _group_after([m.assign(m_new, read_value=False),
                             v.assign(v_new, read_value=False)], var, delta=ops.negative(step))

    def _advance(self):
        s = self._shared["m_schedule"]
        t = self._t(s.dtype)
        return super()._advance() + [
            s.assign(ops.multiply(s.value(), self._momentum_cache(t, s.dtype)),
                     read_value=False)]


class Nadam(Optimizer):
    """Nesterov Adam, Keras's update (Dozat 2016) with t = step + 1::

        mu_t = beta_1 * (1 - 0.5 * 0.96^(t * schedule_decay))
        m_schedule_t = m_schedule_(t-1) * mu_t                  (shared; starts at 1)
        m = beta_1 m + (1 - beta_1) g;   v = beta_2 v + (1 - beta_2) g^2
        m_bar = (1 - mu_t) g / (1 - m_schedule_t) + mu_(t+1) m / (1 - m_schedule_t mu_(t+1))
        var -= lr * m_bar / (sqrt(v / (1 - beta_2^t)) + epsilon)
    """

    def __init__(self, lr=None, beta_1=0.9, beta_2=0.999, epsilon=None, schedule_decay=0.004,
                 learning_rate=None, **kwargs):
        super().__init__(lr, learning_rate, 0.0, 0.001, **kwargs)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)
        self.schedule_decay = float(schedule_decay)

    def _tf_optimizer(self, lr):
        self._update = _NadamUpdate(lr, self.beta_1, self.beta_2, self.epsilon,
                                    self.schedule_decay)
        return self._update


sgd, adam, rmsprop, adagrad = SGD, Adam, RMSprop, Adagrad
adadelta, adamax, nadam = Adadelta, Adamax, Nadam
_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad,
            "adadelta": Adadelta, "adamax": Adamax, "nadam": Nadam}


def get(identifier):
    """A Keras optimizer from a name ('sgd', 'adam', 'rmsprop', 'adagrad', 'adadelta',
    'adamax', 'nadam': Keras's defaults), a Keras optimizer, or a tf.train optimizer."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, train.Optimizer) or hasattr(identifier, "minimize"):
        return TFOptimizer(identifier)
    make = _BY_NAME.get(str(identifier).lower())
    if make is None:
        raise ValueError("unknown optimizer %r; known: %s, a keras.optimizers instance or a "
                         "tf.train optimizer" % (identifier, ", ".join(sorted(_BY_NAME))))
    return make()
