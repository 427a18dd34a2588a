"""TF1 optimizers composed in Python from element-wise ops and slot variables: centered RMSProp,
Adadelta, FTRL, proximal gradient descent, proximal Adagrad and Adagrad dual averaging
(``sf.train.AdadeltaOptimizer``, ``FtrlOptimizer``, ``ProximalGradientDescentOptimizer``,
``ProximalAdagradOptimizer``, ``AdagradDAOptimizer``).

Example::

    opt = sf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01)
    train_op = opt.minimize(loss, global_step=sf.train.get_or_create_global_step())
    opt.get_slot(w, "accum")        # the Variable "w/Ftrl"; opt.get_slot_names() == [...]

Each update is TF1's kernel (ApplyAdadelta, ApplyFtrl / ApplyFtrlV2,
ApplyProximalGradientDescent) written out in the variable's dtype, reading every state variable
once and assigning it once per step. Slots are non-trainable variables named as TF1 names them
("<var>/<optimizer name>", then "<var>/<optimizer name>_1" for the second slot), built beside
their variable (its device) and outside any control dependencies, so
``sf.global_variables_initializer()`` sets them and a ``sf.train.Saver`` saves and restores them
under TF1's names. Unlike the engine's optimizers (ops/training.h), there is no fused kernel:
a step costs a handful of element-wise ops per variable.

Thread safety: build from one thread at a time, as the graph.
"""

import contextlib
import numbers

from shardflow import ops
from shardflow.array_ops import where
from shardflow.framework import Tensor, convert_to_tensor
from shardflow.train import Optimizer, _apply_constraints, _count_step
from shardflow.variables import Variable


def _number(owner, name, value):
    """`value` as a float, or a TypeError naming the argument (tensors are not taken here)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s: %s must be a number, not %r" % (owner, name, value))
    return float(value)


def _colocated(g, v):
    return g._device_scope(v.device) if v.device else contextlib.nullcontext()  # colocate_with


class _CompositeOptimizer(Optimizer):
    """An optimizer whose per-variable update `_apply_dense` builds from graph ops.

    Subclasses set `_slot_specs`: (slot name, variable name, initial value or None for zeros),
    in the order TF1 creates them (which decides the "_1" suffix).
    """

    _slot_specs = ()

    def __init__(self, learning_rate, name):
        super().__init__(learning_rate, name)
        self._slots = {}  # slot name -> {Variable: its slot Variable}

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """An op that takes one step on `loss` for `var_list` (default: the trainable
        variables), then adds one to `global_step` when given."""
        return self.apply_gradients(self.compute_gradients(loss, var_list=var_list,
                                                           grad_loss=grad_loss),
                                    global_step=global_step, name=name)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """An op that updates each variable from its gradient (pairs with a None gradient are
        skipped), creating its slots on first use; then adds one to `global_step` when given."""
        owner = type(self).__name__
        pairs = [(gr, v) for gr, v in grads_and_vars if gr is not None]
        if not pairs:
            raise ValueError("%s.apply_gradients: No gradients provided for any variable "
                             "(no variable has a gradient)" % owner)
        for _, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError("%s.apply_gradients: the pairs are (gradient, Variable), not "
                                "(..., %r)" % (owner, v))
        from shardflow.train import _check_gradient_shapes
        _check_gradient_shapes(pairs)
        g = pairs[0][1].graph
        with g.as_default():
            for _, var in pairs:
                self._create_slots(g, var)
            updates = []
            with g.name_scope(name or self._name):
                for grad, var in pairs:
                    grad = convert_to_tensor(grad)
                    if grad.dtype != var.dtype:
                        raise TypeError("%s: the gradient of %s is %s but the variable is %s"
                                        % (owner, var.op.name, grad.dtype.name, var.dtype.name))
                    with _colocated(g, var), g.name_scope("update_" + var.op.name):
                        updates.append(self._apply_dense(grad, var))
                update = ops.group(*updates, name="update")
        return _count_step(_apply_constraints(update, [v for _, v in pairs]), global_step)

    def _create_slots(self, g, var):
        if all(var in self._slots.get(slot, {}) for slot, _, _ in self._slot_specs):
            return
        with g.control_dependencies(None), _colocated(g, var), g.name_scope(var.op.name + "/"):
            # Shaped like the initial value, not the current one: initializers run together,
            # so reading the variable here could see it uninitialized.
            initial = var.initializer.inputs[1]
            for slot, var_name, value in self._slot_specs:
                fill = ops.zeros_like(initial) if value is None \
                    else ops.add(ops.zeros_like(initial), value)
                self._slots.setdefault(slot, {})[var] = Variable(fill, name=var_name,
                                                                 trainable=False)

    def _apply_dense(self, grad, var):
        raise NotImplementedError

    def _lr(self, dtype):
        """The learning rate as a scalar of `dtype` (a float, or the tensor given)."""
        if self._lr_tensor is None:
            return ops.constant(self._params["learning_rate"], dtype=dtype)
        return self._lr_tensor if self._lr_tensor.dtype == dtype \
            else ops.cast(self._lr_tensor, dtype)

    def get_slot(self, var, name):
        """The slot Variable `name` of `var` (e.g. "accum"), or None."""
        return self._slots.get(name, {}).get(var)

    def get_slot_names(self):
        """The names of the slots made so far, sorted (TF1's: empty before minimize)."""
        return sorted(self._slots)

    def variables(self):
        """The optimizer's slot Variables, sorted by name."""
        out = [v for per_var in self._slots.values() for v in per_var.values()]
        return sorted(out, key=lambda v: v.name)


def _group_after(slot_updates, var, new_value=None, delta=None):
    """Sets the slots, then `var` (to new_value, or by adding delta); one op for all."""
    with var.graph.control_dependencies(slot_updates):
        if new_value is not None:
            return var.assign(new_value, read_value=False)
        return var.assign_add(delta, read_value=False)


class CenteredRMSPropOptimizer(_CompositeOptimizer):
    """TF1's RMSPropOptimizer(centered=True) (ApplyCenteredRMSProp), which
    ``sf.train.RMSPropOptimizer(..., centered=True)`` makes::

        ms   = decay * ms + (1 - decay) * grad^2         (ms starts at 1)
        mg   = decay * mg + (1 - decay) * grad           (mg starts at 0)
        mom  = momentum * mom + learning_rate * grad / sqrt(ms - mg^2 + epsilon)
        var -= mom

    Slots "rms" ("<var>/RMSProp"), "mg" ("<var>/RMSProp_1") and "momentum"
    ("<var>/RMSProp_2"), in TF1's order.
    """

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=True, name="RMSProp"):
        super().__init__(learning_rate, name)
        owner = "RMSPropOptimizer"
        self._decay = _number(owner, "decay", decay)
        self._momentum = _number(owner, "momentum", momentum)
        self._epsilon = _number(owner, "epsilon", epsilon)
        self._slot_specs = (("rms", name, 1.0), ("mg", name, None), ("momentum", name, None))

    def _apply_dense(self, grad, var):
        ms, mg, mom = (self.get_slot(var, n) for n in ("rms", "mg", "momentum"))
        keep = self._decay
        ms_new = ops.add(ops.multiply(ms.value(), keep), ops.multiply(ops.square(grad), 1 - keep))
        mg_new = ops.add(ops.multiply(mg.value(), keep), ops.multiply(grad, 1 - keep))
        denom = ops.add(ops.subtract(ms_new, ops.square(mg_new)), self._epsilon)
        mom_new = ops.add(ops.multiply(mom.value(), self._momentum),
                          ops.multiply(self._lr(var.dtype), ops.multiply(grad, ops.rsqrt(denom))))
        slots = [ms.assign(ms_new, read_value=False), mg.assign(mg_new, read_value=False),
                 mom.assign(mom_new, read_value=False)]
        return _group_after(slots, var, delta=ops.negative(mom_new))


class AdadeltaOptimizer(_CompositeOptimizer):
    """TF1's Adadelta (Zeiler 2012) with its learning rate::

        accum        = rho * accum + (1 - rho) * grad^2
        update       = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad
        accum_update = rho * accum_update + (1 - rho) * update^2
        var         -= learning_rate * update

    Slots "accum" ("<var>/Adadelta") and "accum_update" ("<var>/Adadelta_1"), starting at 0.
    Note TF1's default learning rate 0.001 moves slowly; Zeiler's paper uses 1.0.
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(learning_rate, name)
        self._rho = _number("AdadeltaOptimizer", "rho", rho)
        self._epsilon = _number("AdadeltaOptimizer", "epsilon", epsilon)
        self._slot_specs = (("accum", name, None), ("accum_update", name, None))

    def _apply_dense(self, grad, var):
        accum, accum_update = self.get_slot(var, "accum"), self.get_slot(var, "accum_update")
        rho, eps = self._rho, self._epsilon
        accum_new = ops.add(ops.multiply(accum.value(), rho),
                            ops.multiply(ops.square(grad), 1.0 - rho))
        update = ops.multiply(ops.multiply(ops.sqrt(ops.add(accum_update.value(), eps)),
                                           ops.rsqrt(ops.add(accum_new, eps))), grad)
        accum_update_new = ops.add(ops.multiply(accum_update.value(), rho),
                                   ops.multiply(ops.square(update), 1.0 - rho))
        slot_updates = [accum.assign(accum_new, read_value=False),
                        accum_update.assign(accum_update_new, read_value=False)]
        return _group_after(slot_updates, var,
                            delta=ops.negative(ops.multiply(self._lr(var.dtype), update)))


class FtrlOptimizer(_CompositeOptimizer):
    """TF1's FTRL-Proximal (McMahan et al. 2013), as its ApplyFtrl / ApplyFtrlV2 kernels::

        g_s       = grad + 2 * l2_shrinkage * var
        accum_new = accum + grad^2
        linear   += g_s - (accum_new^-p - accum^-p) / learning_rate * var   (p: learning_rate_power)
        quadratic = accum_new^-p / learning_rate + 2 * l2
        var       = (sign(linear) * l1 - linear) / quadratic  if |linear| > l1  else 0
        accum     = accum_new

    where l2 is l2_regularization_strength + beta / (2 * learning_rate). Slots "accum"
    ("<var>/Ftrl", or accum_name; starts at initial_accumulator_value) and "linear"
    ("<var>/Ftrl_1", or linear_name; starts at 0).
    """

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0, beta=None):
        super().__init__(learning_rate, name)
        args = {"learning_rate_power": learning_rate_power,
                "initial_accumulator_value": initial_accumulator_value,
                "l1_regularization_strength": l1_regularization_strength,
                "l2_regularization_strength": l2_regularization_strength,
                "l2_shrinkage_regularization_strength": l2_shrinkage_regularization_strength,
                "beta": 0.0 if beta is None else beta}
        args = {k: _number("FtrlOptimizer", k, v) for k, v in args.items()}
        if args["learning_rate_power"] > 0:
            raise ValueError("FtrlOptimizer: learning_rate_power is %g; it must be negative or "
                             "zero (TF1's default is -0.5)" % args["learning_rate_power"])
        for k in ("initial_accumulator_value", "l1_regularization_strength",
                  "l2_regularization_strength", "l2_shrinkage_regularization_strength", "beta"):
            if args[k] < 0:
                raise ValueError("FtrlOptimizer: %s is %g; it must be positive or zero"
                                 % (k, args[k]))
        self._power = args["learning_rate_power"]
        self._l1 = args["l1_regularization_strength"]
        self._l2 = args["l2_regularization_strength"]
        self._l2_shrinkage = args["l2_shrinkage_regularization_strength"]
        self._beta = args["beta"]
        self._slot_specs = (("accum", accum_name or name, args["initial_accumulator_value"]),
                            ("linear", linear_name or name, None))

    def _power_of(self, accum):
        """accum ** -learning_rate_power (a square root for TF1's default -0.5, as its kernel)."""
        if self._power == -0.5:
            return ops.sqrt(accum)
        return ops.pow(accum, -self._power)

    def _apply_dense(self, grad, var):
        accum, linear = self.get_slot(var, "accum"), self.get_slot(var, "linear")
        lr = self._lr(var.dtype)
        w = var.value()
        l2 = self._l2 if self._beta == 0 else \
            ops.add(self._l2, ops.divide(self._beta, ops.multiply(lr, 2.0)))
        shrunk = grad if self._l2_shrinkage == 0 else \
            ops.add(grad, ops.multiply(w, 2.0 * self._l2_shrinkage))
        accum_new = ops.add(accum.value(), ops.square(grad))
        power_new = self._power_of(accum_new)
        sigma = ops.divide(ops.subtract(power_new, self._power_of(accum.value())), lr)
        linear_new = ops.add(linear.value(), ops.subtract(shrunk, ops.multiply(sigma, w)))
        quadratic = ops.add(ops.divide(power_new, lr), ops.multiply(l2, 2.0)
                            if isinstance(l2, Tensor) else 2.0 * l2)
        shrunk_var = ops.divide(ops.subtract(ops.multiply(ops.sign(linear_new), self._l1),
                                             linear_new), quadratic)
        new_var = where(ops.greater(ops.abs(linear_new), self._l1), shrunk_var,
                        ops.zeros_like(shrunk_var))
        slot_updates = [linear.assign(linear_new, read_value=False),
                        accum.assign(accum_new, read_value=False)]
        return _group_after(slot_updates, var, new_value=new_var)


class ProximalGradientDescentOptimizer(_CompositeOptimizer):
    """TF1's proximal gradient descent (FOBOS; Duchi & Singer 2009), no slots::

        prox = var - learning_rate * grad
        var  = sign(prox) * max(|prox| - learning_rate * l1, 0) / (1 + learning_rate * l2)

    (prox / (1 + learning_rate * l2) when l1 is 0, as TF1's kernel).
    """

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="ProximalGradientDescent"):
        super().__init__(learning_rate, name)
        owner = "ProximalGradientDescentOptimizer"
        self._l1 = _number(owner, "l1_regularization_strength", l1_regularization_strength)
        self._l2 = _number(owner, "l2_regularization_strength", l2_regularization_strength)
        for k, v in (("l1_regularization_strength", self._l1),
                     ("l2_regularization_strength", self._l2)):
            if v < 0:
                raise ValueError("%s: %s is %g; it must be positive or zero" % (owner, k, v))

    def _apply_dense(self, grad, var):
        lr = self._lr(var.dtype)
        prox = ops.subtract(var.value(), ops.multiply(lr, grad))
        shrink = ops.add(ops.multiply(lr, self._l2), 1.0)
        if self._l1 > 0:
            prox = ops.multiply(ops.sign(prox), ops.maximum(
                ops.subtract(ops.abs(prox), ops.multiply(lr, self._l1)), 0.0))
        return var.assign(ops.divide(prox, shrink), read_value=False)


class ProximalAdagradOptimizer(_CompositeOptimizer):
    """TF1's proximal Adagrad (ApplyProximalAdagrad)::

        accum += grad^2
        lr_t   = learning_rate / sqrt(accum)
        prox   = var - lr_t * grad
        var    = sign(prox) * max(|prox| - lr_t * l1, 0) / (1 + lr_t * l2)

    (prox / (1 + lr_t * l2) when l1 is 0). Slot "accumulator" ("<var>/ProximalAdagrad"),
    starting at initial_accumulator_value.
    """

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalAdagrad"):
        super().__init__(learning_rate, name)
        owner = "ProximalAdagradOptimizer"
        init = _number(owner, "initial_accumulator_value", initial_accumulator_value)
        if init <= 0:
            raise ValueError("%s: initial_accumulator_value is %g; it must be positive"
                             % (owner, init))
        self._l1, self._l2 = _regularization(owner, l1_regularization_strength,
                                             l2_regularization_strength)
        self._slot_specs = (("accumulator", name, init),)

    def _apply_dense(self, grad, var):
        accum = self.get_slot(var, "accumulator")
        accum_new = ops.add(accum.value(), ops.square(grad))
        lr = ops.multiply(self._lr(var.dtype), ops.rsqrt(accum_new))
        prox = ops.subtract(var.value(), ops.multiply(lr, grad))
        if self._l1 > 0:
            prox = ops.multiply(ops.sign(prox), ops.maximum(
                ops.subtract(ops.abs(prox), ops.multiply(lr, self._l1)), 0.0))
        new_var = ops.divide(prox, ops.add(ops.multiply(lr, self._l2), 1.0))
        return _group_after([accum.assign(accum_new, read_value=False)], var, new_value=new_var)


class AdagradDAOptimizer(_CompositeOptimizer):
    """TF1's Adagrad dual averaging (ApplyAdagradDA), for sparse linear models::

        g_acc  += grad
        gg_acc += grad^2
        var     = -learning_rate * sign(g_acc) * max(|g_acc| - l1 * T, 0)
                  / (l2 * T * learning_rate + sqrt(gg_acc))

    (with l1 = 0: -learning_rate * g_acc / (...)), where T is `global_step` + 1, read as the
    step runs (minimize(global_step=...) adds one after the update). Slots
    "gradient_accumulator" ("<var>/AdagradDA", starting at 0) and
    "gradient_squared_accumulator" ("<var>/AdagradDA_1", starting at
    initial_gradient_squared_accumulator_value).
    """

    def __init__(self, learning_rate, global_step, initial_gradient_squared_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="AdagradDA"):
        super().__init__(learning_rate, name)
        owner = "AdagradDAOptimizer"
        if global_step is None:
            raise ValueError("%s needs global_step (sf.train.get_or_create_global_step())"
                             % owner)
        init = _number(owner, "initial_gradient_squared_accumulator_value",
                       initial_gradient_squared_accumulator_value)
        if init <= 0:
            raise ValueError("%s: initial_gradient_squared_accumulator_value is %g; it must be "
                             "positive" % (owner, init))
        self._global_step = global_step
        self._l1, self._l2 = _regularization(owner, l1_regularization_strength,
                                             l2_regularization_strength)
        self._slot_specs = (("gradient_accumulator", name, None),
                            ("gradient_squared_accumulator", name, init))

    def _apply_dense(self, grad, var):
        g_acc = self.get_slot(var, "gradient_accumulator")
        gg_acc = self.get_slot(var, "gradient_squared_accumulator")
        step = self._global_step.value() if isinstance(self._global_step, Variable) \
            else convert_to_tensor(self._global_step)
        t = ops.add(ops.cast(step, var.dtype), 1.0)
        lr = self._lr(var.dtype)
        g_new = ops.add(g_acc.value(), grad)
        gg_new = ops.add(gg_acc.value(), ops.square(grad))
        numerator = g_new if self._l1 <= 0 else ops.multiply(ops.sign(g_new), ops.maximum(
            ops.subtract(ops.abs(g_new), ops.multiply(t, self._l1)), 0.0))
        denominator = ops.add(ops.multiply(ops.multiply(t, lr), self._l2), ops.sqrt(gg_new))
        new_var = ops.divide(ops.multiply(ops.negative(lr), numerator), denominator)
        slot_updates = [g_acc.assign(g_new, read_value=False),
                        gg_acc.assign(gg_new, read_value=False)]
        return _group_after(slot_updates, var, new_value=new_var)


def _regularization(owner, l1, l2):
    """(l1, l2) as floats, each positive or zero (else a ValueError naming it)."""
    out = []
    for k, v in (("l1_regularization_strength", l1), ("l2_regularization_strength", l2)):
        v = _number(owner, k, v)
        if v < 0:
            raise ValueError("%s: %s is %g; it must be positive or zero" % (owner, k, v))
        out.append(v)
    return tuple(out)


__all__ = ["AdadeltaOptimizer", "AdagradDAOptimizer", "FtrlOptimizer",
           "ProximalAdagradOptimizer", "ProximalGradientDescentOptimizer"]
