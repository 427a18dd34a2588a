"""Optimizers: ``minimize(loss)`` adds the gradients and one update per variable.

Example::

    loss = sf.reduce_mean(sf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z))
    train_op = sf.train.AdamOptimizer(1e-3).minimize(loss)
    sess.run(sf.global_variables_initializer())
    for images, labels in batches:
        sess.run(train_op, {x: images, y: labels})

The learning rate may be a float or a float32 scalar tensor (e.g. a placeholder fed each step,
for a schedule). Optimizer state (momentum, Adam's moments and step) lives in non-trainable
variables that ``sf.global_variables_initializer()`` initialises — create it after minimize().
"""

from shardflow.framework import Tensor, convert_to_tensor, get_default_graph
from shardflow.gradients import gradients
from shardflow.variables import Variable, trainable_variables


class Optimizer:
    """Base class; use GradientDescentOptimizer, MomentumOptimizer or AdamOptimizer."""

    _kind = None

    def __init__(self, learning_rate, name, **params):
        self._lr_tensor = None
        if isinstance(learning_rate, Tensor):
            self._lr_tensor = learning_rate
            learning_rate = 0.0
        elif not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool):
            raise TypeError("learning_rate must be a number or a scalar tensor, not %r"
                            % (learning_rate,))
        self._params = dict(params, learning_rate=float(learning_rate))
        self._name = name

    def _var_handles(self, var_list):
        if var_list is None:
            return []
        handles = []
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError("var_list holds Variables, not %r" % (v,))
            handles.append(v.handle.op.name)
        return handles

    def minimize(self, loss, var_list=None, name=None):
        """An op that takes one optimisation step on `loss` for `var_list` (default: every
        trainable variable of the graph, including those created in C++)."""
        loss = convert_to_tensor(loss)
        g = loss.graph
        with g.name_scope(name or self._name):
            op_name = g._handle.minimize(
                self._kind, self._params, self._lr_tensor._ref if self._lr_tensor is not None else None,
                loss._ref, self._var_handles(var_list), g._ctx())
        return g.get_operation_by_name(op_name)

    def compute_gradients(self, loss, var_list=None):
        """[(gradient, variable)] for `var_list` (default: the trainable Variables)."""
        var_list = trainable_variables(convert_to_tensor(loss).graph) if var_list is None \
            else list(var_list)
        return list(zip(gradients(loss, var_list), var_list))

    def apply_gradients(self, grads_and_vars, name=None):
        """An op that updates each variable with its gradient (pairs with a None gradient are
        skipped)."""
        pairs = [(g_, v) for g_, v in grads_and_vars if g_ is not None]
        if not pairs:
            raise ValueError("apply_gradients: no variable has a gradient")
        g = get_default_graph() if not pairs else pairs[0][1].graph
        with g.name_scope(name or self._name):
            op_name = g._handle.apply_gradients(
                self._kind, self._params, self._lr_tensor._ref if self._lr_tensor is not None else None,
                [(convert_to_tensor(gr)._ref, v.handle.op.name) for gr, v in pairs], g._ctx())
        return g.get_operation_by_name(op_name)


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad.

    Example: ``sf.train.GradientDescentOptimizer(0.1).minimize(loss)``.
    """

    _kind = "sgd"

    def __init__(self, learning_rate, name="GradientDescent"):
        super().__init__(learning_rate, name)


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= learning_rate * accum (Nesterov if asked).

    Example: ``sf.train.MomentumOptimizer(0.01, momentum=0.9).minimize(loss)``.
    """

    _kind = "momentum"

    def __init__(self, learning_rate, momentum=0.9, use_nesterov=False, name="Momentum"):
        super().__init__(learning_rate, name, momentum=float(momentum),
                         use_nesterov=bool(use_nesterov))


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba) with bias correction.

    Example: ``sf.train.AdamOptimizer(1e-3).minimize(loss)``.
    """

    _kind = "adam"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, name="Adam"):
        super().__init__(learning_rate, name, beta1=float(beta1), beta2=float(beta2),
                         epsilon=float(epsilon))
