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

sf.train also holds, re-exported from their own modules, the Saver (saver.py), the hooks and
sessions of monitored training, input queues, learning-rate schedules and the cluster API.
"""

import types

import numpy as np

from shardflow import dtypes
from shardflow.framework import GraphKeys, Tensor, convert_to_tensor, get_default_graph
from shardflow.gradients import gradients
from shardflow.variables import Variable, global_variables, trainable_variables


def _check_gradient_shapes(pairs):
    """A gradient whose static shape cannot be its variable's is a ValueError naming both, as
    TF1's update ops' shape functions (some update kernels would broadcast a scalar or [1]
    gradient over every element)."""
    for grad, var in pairs:
        shape = getattr(grad, "shape", None)
        if shape is None or not hasattr(shape, "is_compatible_with"):
            continue
        if not shape.is_compatible_with(var.shape):
            raise ValueError("apply_gradients: the gradient of %s has shape %s, which is not the "
                             "variable's %s (Shapes %s and %s are incompatible)"
                             % (var.op.name, shape, var.shape, shape, var.shape))


class Optimizer:
    """Base class; use GradientDescentOptimizer, MomentumOptimizer, AdamOptimizer, ... (their
    updates are built by the engine; AdadeltaOptimizer, FtrlOptimizer and
    ProximalGradientDescentOptimizer are composed in Python: composite_optimizers.py).

    Subclass it as TF1's (Note [Optimizers written in Python]): ``Optimizer.__init__(self,
    use_locking, name)``, then ``_create_slots(var_list)`` (with ``_zeros_slot``,
    ``_get_or_make_slot``, ``_create_non_slot_variable``), ``_prepare()``,
    ``_apply_dense(grad, var)`` (or ``_resource_apply_dense``) and ``_finish(update_ops,
    name)``; or override ``apply_gradients`` itself (BERT's AdamWeightDecayOptimizer)."""

    _kind = None
    # Slot name (TF1's) -> the suffix the engine names its variable with ("<var>/<suffix>").
    _slot_suffixes = {}

    def __init__(self, learning_rate=None, name=None, use_locking=None, **params):
        self._engine_variables = []  # what this optimizer's updates made (slots, step counts)
        self._lr_tensor = None
        if isinstance(learning_rate, bool) or (learning_rate is None and self._kind is None):
            # TF1's base-class signature Optimizer(use_locking, name): a subclass written in
            # Python (Note [Optimizers written in Python]).
            if not name:
                raise ValueError("Must specify the optimizer name")
            self._use_locking = bool(learning_rate if use_locking is None else use_locking)
            self._params, self._name = dict(params), name
            self._py_slots, self._non_slots = {}, {}
            return
        self._use_locking = bool(use_locking)
        if isinstance(learning_rate, Variable):
            learning_rate = learning_rate.value()  # read at every step (tf.assign(lr, ...))
        if isinstance(learning_rate, np.generic) and np.issubdtype(type(learning_rate),
                                                                    np.number):
            learning_rate = learning_rate.item()   # np.float32(0.1)
        if isinstance(learning_rate, Tensor):
            self._lr_tensor = learning_rate
            learning_rate = 0.0
        elif not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool):
            raise TypeError("learning_rate must be a number, a scalar tensor or a Variable, "
                            "not %r" % (learning_rate,))
        self._params = dict(params, learning_rate=float(learning_rate))
        self._name = name

    def _var_handles(self, var_list):
        if var_list is None:
            return []      # the engine's default: every trainable variable
        var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize: var_list is empty (a scope that "
                             "matched no variable in tf.get_collection?)")
        handles = []
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError("var_list holds Variables, not %r" % (v,))
            handles.append(v.handle.op.name)
        return handles

    # TF1's gate_gradients values (accepted; the engine orders the updates after every
    # gradient either way).
    GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """An op that takes one optimisation step on `loss` for `var_list` (default: every
        trainable variable of the graph, including those created in C++), then adds one to
        `global_step` when given (a Variable, e.g. get_or_create_global_step()). grad_loss
        weights the loss's gradient; gate_gradients, aggregation_method and
        colocate_gradients_with_ops are accepted (backward ops are on their forward ops'
        devices)."""
        loss = convert_to_tensor(loss)
        # A variable also read by read_value() under control dependencies: sf.gradients counts
        # those reads, the engine's minimize only the variable's own read.
        extra_reads = any(getattr(v, "__dict__", {}).get("_extra_reads") for v in (
            var_list if var_list is not None else trainable_variables(loss.graph)))
        if _replica_context_of_many() is not None or grad_loss is not None or extra_reads or \
                self._kind is None:
            return self.apply_gradients(self.compute_gradients(loss, var_list,
                                                               grad_loss=grad_loss),
                                        global_step, name)
        g = loss.graph
        before = self._variables_before(g)
        op_name = g._handle.minimize(
            self._kind, self._params, self._lr_tensor._ref if self._lr_tensor is not None else None,
            loss._ref, self._var_handles(var_list), g._ctx(), self._update_scope(g, name))
        self._record_variables(g, before)
        variables = trainable_variables(g) if var_list is None else list(var_list)
        return _count_step(_apply_constraints(g.get_operation_by_name(op_name), variables),
                           global_step)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """[(gradient, variable)] for `var_list` (default: the trainable Variables); grad_loss
        weights the loss's gradient. In a tf.distribute replica function of N > 1 replicas
        the loss is scaled by 1/N first, as TF1's (each replica's loss is taken to be a mean;
        apply_gradients sums over them)."""
        var_list = trainable_variables(convert_to_tensor(loss).graph) if var_list is None \
            else list(var_list)
        replica = _replica_context_of_many()
        if replica is not None:
            loss = convert_to_tensor(loss) * (1.0 / replica.num_replicas_in_sync)
        return list(zip(gradients(loss, var_list, grad_ys=grad_loss), var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """An op that updates each variable with its gradient (pairs with a None gradient are
        skipped), then adds one to `global_step` when given. In a tf.distribute replica function
        of several replicas, each gradient is summed over the replicas and the update made once
        (a merge_call), as TF1's."""
        replica = _replica_context_of_many()
        if replica is not None:
            return replica.merge_call(self._apply_summed,
                                      args=(list(grads_and_vars), global_step, name))
        pairs = [(g_, v) for g_, v in grads_and_vars if g_ is not None]
        if not pairs:
            raise ValueError("apply_gradients: No gradients provided for any variable (no "
                             "variable has a gradient)")
        _check_gradient_shapes(pairs)
        if self._kind is None:
            return self._apply_in_python(pairs, global_step, name)
        g = get_default_graph() if not pairs else pairs[0][1].graph
        before = self._variables_before(g)
        op_name = g._handle.apply_gradients(
            self._kind, self._params, self._lr_tensor._ref if self._lr_tensor is not None else None,
            [(convert_to_tensor(gr)._ref, v.handle.op.name) for gr, v in pairs], g._ctx(),
            self._update_scope(g, name))
        self._record_variables(g, before)
        return _count_step(_apply_constraints(g.get_operation_by_name(op_name),
                                              [v for _, v in pairs]), global_step)

    def _slice_slots_of_parts(self, variables):
        """The slots of a partitioned variable's parts are parts too, as TF1's: "m/emb/Adagrad"
        saved whole (a part's slot lies where the part does), so that a checkpoint restores
        into another number of partitions, optimizer state included."""
        for var in variables:
            info = var._get_save_slice_info() if hasattr(var, "_get_save_slice_info") else None
            if info is None:
                continue
            for name, suffix in self._slot_suffixes.items():
                slot = self.get_slot(var, name)
                if slot is not None and slot._get_save_slice_info() is None and \
                        slot.shape.as_list() == info.var_shape:
                    slot._set_save_slice_info(Variable.SaveSliceInfo(
                        info.full_name + "/" + suffix, info.full_shape, info.var_offset,
                        info.var_shape))


    # ---- Note [Optimizers written in Python] ---------------------------------------------------
    # A subclass that calls Optimizer.__init__(self, use_locking, name) (TF1's base signature)
    # has no engine kind: minimize and apply_gradients build its update in Python as TF1's
    # base class does. Slots are created first, outside any control dependencies, beside their
    # variable and named "<var>/<op_name>" (TF1's names, so a Saver stores them as TF does);
    # then _prepare(), one _apply_dense (else _resource_apply_dense) per variable under
    # "<name>/update_<var>", and _finish, after which global_step is incremented. Variables'
    # constraints apply after the update, as for the engine's optimizers.

    def _apply_in_python(self, pairs, global_step, name):
        for _, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError("%s.apply_gradients: the pairs are (gradient, Variable), not "
                                "(..., %r)" % (type(self).__name__, v))
        g = pairs[0][1].graph
        var_list = [v for _, v in pairs]
        dense = type(self)._apply_dense is not Optimizer._apply_dense
        with g.as_default():
            with g.control_dependencies(None):
                self._create_slots(var_list)
            scope = name or self._name
            with g.name_scope(scope):
                self._prepare()
                updates = []
                for grad, var in pairs:
                    with g.device(var.device or None), g.name_scope("update_" + var.op.name):
                        grad = convert_to_tensor(grad)
                        updates.append(self._apply_dense(grad, var) if dense
                                       else self._resource_apply_dense(grad, var))
                update = self._finish(updates, scope)
        return _count_step(_apply_constraints(update, var_list), global_step)

    def _create_slots(self, var_list):
        """Subclasses make their slots here (TF1's hook)."""

    def _prepare(self):
        """Subclasses turn their hyperparameters into tensors here (TF1's hook)."""

    def _apply_dense(self, grad, var):
        raise NotImplementedError("%s: define _apply_dense(grad, var) (or "
                                  "_resource_apply_dense)" % type(self).__name__)

    def _resource_apply_dense(self, grad, handle):
        raise NotImplementedError("%s: define _apply_dense(grad, var) (or "
                                  "_resource_apply_dense)" % type(self).__name__)

    def _apply_sparse(self, grad, var):
        raise NotImplementedError("gradients here are dense: define _apply_dense")

    def _finish(self, update_ops, name_scope):
        from shardflow.ops import group
        return group(*update_ops, name=name_scope)

    def _call_if_callable(self, param):
        return param() if callable(param) else param

    def _slot_dict(self, slot_name):
        return self.__dict__.setdefault("_py_slots", {}).setdefault(slot_name, {})

    def _get_or_make_slot(self, var, val, slot_name, op_name):
        """The slot `slot_name` of `var`, made from the value `val` on first use."""
        slots = self._slot_dict(slot_name)
        if var not in slots:
            g = var.graph
            with g.as_default(), g.control_dependencies(None), g.name_scope(None), \
                    g._device_scope(var.device):   # colocated with var, as TF1's slots
                slots[var] = Variable(val, name="%s/%s" % (var.op.name, op_name),
                                      trainable=False)
        return slots[var]

    def _get_or_make_slot_with_initializer(self, var, initializer, shape, dtype, slot_name,
                                           op_name):
        from shardflow.framework import TensorShape
        if slot_name in self.__dict__.get("_py_slots", {}) and \
                var in self._py_slots[slot_name]:
            return self._py_slots[slot_name][var]
        g = var.graph
        with g.as_default(), g.control_dependencies(None):
            dims = TensorShape(shape).as_list() if not isinstance(shape, list) else shape
            value = initializer(dims, dtypes.as_dtype(dtype))
        return self._get_or_make_slot(var, value, slot_name, op_name)

    def _zeros_slot(self, var, slot_name, op_name):
        """A slot of zeros shaped and typed as `var` (TF1's _zeros_slot)."""
        if var in self._slot_dict(slot_name):
            return self._slot_dict(slot_name)[var]
        g = var.graph
        with g.as_default(), g.control_dependencies(None), g.name_scope(None):
            dims = var.shape.as_list()
            if None in dims:        # shaped like its initial value, not read (maybe unset)
                from shardflow.ops import zeros_like
                value = zeros_like(var.initializer.inputs[1])
            else:
                value = np.zeros(dims, var.dtype.as_numpy_dtype)
        return self._get_or_make_slot(var, value, slot_name, op_name)

    def _create_non_slot_variable(self, initial_value, name, colocate_with):
        """A variable of the optimizer itself (Adam's beta1_power), one per graph."""
        g = colocate_with.graph if hasattr(colocate_with, "graph") else get_default_graph()
        store = self.__dict__.setdefault("_non_slots", {})
        key = (name, g)
        if key not in store:
            device = getattr(colocate_with, "device", None) or None
            with g.as_default(), g.control_dependencies(None), g.name_scope(None), \
                    g._device_scope(device):   # as TF1's colocate_with
                store[key] = Variable(initial_value, name=name, trainable=False)
        return store[key]

    def _get_non_slot_variable(self, name, graph=None):
        return self.__dict__.get("_non_slots", {}).get((name, graph or get_default_graph()))

    def _non_slot_variables(self):
        return list(self.__dict__.get("_non_slots", {}).values())

    def _update_scope(self, g, name):
        """The unique name scope ("Adam", "Adam_1", ...) the engine builds this call's updates
        under, as TF1's apply_gradients does; its gradients and shared state (Adam's
        beta1_power / beta2_power) go in the scope around, as TF1's."""
        with g.name_scope(name or self._name) as scope:
            pass
        return scope.rstrip("/").rsplit("/", 1)[-1]

    @staticmethod
    def _variables_before(g):
        return {v.name for v in global_variables(graph=g)}

    def _record_variables(self, g, before):
        self._engine_variables += [v for v in global_variables(graph=g) if v.name not in before]
        self._slice_slots_of_parts(global_variables(graph=g))

    def get_slot_names(self):
        """TF1's names of this optimizer's slots ("m" and "v" for Adam, "momentum", "rms",
        "accumulator", ...), sorted."""
        return sorted(set(self._slot_suffixes) | set(self.__dict__.get("_py_slots", {})))

    def get_slot(self, var, name):
        """The slot Variable `name` (see get_slot_names) the updates made for `var`, or None
        (e.g. before minimize). A variable updated by several minimize calls of this optimizer
        has a slot per call; the first is returned."""
        own = self.__dict__.get("_py_slots", {}).get(name, {})
        if var in own:
            return own[var]
        suffix = self._slot_suffixes.get(name)
        if suffix is None:
            return None
        base = "%s/%s" % (var.op.name, suffix)
        for v in self._engine_variables:
            if v.op.name == base:
                return v
        taken = {"%s/%s" % (var.op.name, other) for other in self._slot_suffixes.values()}
        for v in self._engine_variables:    # a later minimize call's: "<var>/Adam_2"
            op = v.op.name
            if op.startswith(base + "_") and op[len(base) + 1:].isdigit() and op not in taken:
                return v
        return None

    def variables(self):
        """Every variable this optimizer's updates made (slots and step counts), in creation
        order, as TF1's Optimizer.variables() (e.g. to re-initialise the optimizer's state:
        sf.variables_initializer(opt.variables()))."""
        made = [v for slots in self.__dict__.get("_py_slots", {}).values()
                for v in slots.values()] + self._non_slot_variables()
        return list(self._engine_variables) + made

    def _apply_summed(self, strategy, grads_and_vars, global_step, name):
        """apply_gradients' merge_fn: each PerReplica gradient summed on its variable's
        device, then one update."""
        from shardflow.distribute.values import ReduceOp
        summed = [(None if g_ is None else
                   strategy.extended.reduce_to(ReduceOp.SUM, g_, v.device or None), v)
                  for g_, v in grads_and_vars]
        return self.apply_gradients(summed, global_step, name)


def _replica_context_of_many():
    """The ReplicaContext of the tf.distribute replica function being built when the strategy
    has more than one replica, else None."""
    from shardflow.distribute import context
    replica = context.get_replica_context()
    return replica if replica is not None and replica.num_replicas_in_sync > 1 else None


def _apply_constraints(update, variables):
    """`update`, then each of `variables` that carries a constraint (tf.get_variable's or a
    layer's `constraint`, or a Keras layer's `_keras_constraint`) set to constraint(its value
    after the update), as TF1's optimizers do; `update` itself when none does."""
    constrained = [(v, getattr(v, "_keras_constraint", None) or getattr(v, "constraint", None))
                   for v in variables if isinstance(v, Variable)]
    constrained = [(v, c) for v, c in constrained if c is not None]
    if not constrained:
        return update
    from shardflow.ops import group
    g = update.graph
    with g.as_default(), g.control_dependencies([update]):
        assigns = [v.assign(c(v._read_after(update)), read_value=False)
                   for v, c in constrained]
        return group(update, *assigns)


def _count_step(update, global_step):
    """`update`, then global_step += 1 (the returned op) when a global step is given."""
    if global_step is None:
        return update
    if not isinstance(global_step, Variable):
        raise TypeError("global_step is a Variable (sf.train.get_or_create_global_step()), "
                        "not %r" % (global_step,))
    from shardflow.framework import control_dependencies
    with control_dependencies([update]):
        return global_step.assign_add(np.array(1, global_step.dtype.as_numpy_dtype),
                                      name="increment_global_step", read_value=False)


def get_global_step(graph=None):
    """The graph's global step: the Variable of the GLOBAL_STEP collection, else (as TF1) the
    integer variable or tensor named "global_step"; None when there is none. More than one in the
    collection is a TypeError."""
    g = graph or get_default_graph()
    steps = g.get_collection(GraphKeys.GLOBAL_STEP)
    if len(steps) > 1:
        raise TypeError("there are %d global steps in the GLOBAL_STEP collection; a graph has "
                        "one" % len(steps))
    if steps:
        return steps[0]
    for v in g._variables:  # tf.Variable(0, name="global_step") outside the collection
        if v.op.name == "global_step" and v.dtype.is_integer:
            return v
    if not g._handle.has_node("global_step"):
        return None
    tensor = g.get_tensor_by_name("global_step:0")
    return tensor if tensor.dtype.is_integer else None


def create_global_step(graph=None):
    """Creates the global step: an int64 scalar Variable named "global_step", not trainable,
    starting at 0 (under replica_device_setter it lives on a ps task)."""
    g = graph or get_default_graph()
    if get_global_step(g) is not None:
        raise ValueError("the graph has a global step already")
    with g.as_default(), g.name_scope(None):
        step = Variable(0, name="global_step", trainable=False, dtype=dtypes.int64)
    g.add_to_collection(GraphKeys.GLOBAL_STEP, step)
    return step


def get_or_create_global_step(graph=None):
    """The global step, created on first call.

    Example::

        global_step = sf.train.get_or_create_global_step()
        train_op = opt.minimize(loss, global_step=global_step)
    """
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def global_step(sess, global_step_tensor):
    """The global step's value as an int (`global_step_tensor`: the Variable, a tensor, or
    its name)."""
    if isinstance(global_step_tensor, str) and ":" not in global_step_tensor:
        global_step_tensor += ":0"
    return int(sess.run(global_step_tensor))


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad.

    Example: ``sf.train.GradientDescentOptimizer(0.1).minimize(loss)``.
    """

    _kind = "sgd"

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(learning_rate, name)


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= learning_rate * accum (Nesterov if asked).

    Example: ``sf.train.MomentumOptimizer(0.01, momentum=0.9).minimize(loss)``.
    """

    _kind = "momentum"
    _slot_suffixes = {"momentum": "Momentum"}

    def __init__(self, learning_rate, momentum=0.9, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(learning_rate, name, momentum=float(momentum),
                         use_nesterov=bool(use_nesterov))


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba) with bias correction.

    Example: ``sf.train.AdamOptimizer(1e-3).minimize(loss)``.
    """

    _kind = "adam"
    _slot_suffixes = {"m": "Adam", "v": "Adam_1"}

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(learning_rate, name, beta1=float(beta1), beta2=float(beta2),
                         epsilon=float(epsilon))

    def _get_beta_accumulators(self):
        """(beta1_power, beta2_power): TF1's variables holding beta1^t and beta2^t (None
        before minimize)."""
        found = {}
        for v in self._engine_variables:
            base = v.op.name.rsplit("/", 1)[-1]
            for key in ("beta1_power", "beta2_power"):
                if key not in found and (base == key or base.startswith(key + "_")):
                    found[key] = v
        return found.get("beta1_power"), found.get("beta2_power")


class RMSPropOptimizer(Optimizer):
    """TF1's RMSProp: ms = decay * ms + (1 - decay) * grad^2 (ms starts at 1);
    mom = momentum * mom + learning_rate * grad / sqrt(ms + epsilon); var -= mom.

    Example: ``sf.train.RMSPropOptimizer(0.001).minimize(loss)``.
    """

    _kind = "rmsprop"
    _slot_suffixes = {"rms": "RMSProp", "momentum": "RMSProp_1"}

    def __new__(cls, *args, **kwargs):
        if cls is RMSPropOptimizer and kwargs.get("centered", len(args) > 5 and args[5]):
            from shardflow.composite_optimizers import CenteredRMSPropOptimizer
            return CenteredRMSPropOptimizer(*args, **kwargs)  # (not an instance: no __init__)
        return super().__new__(cls)

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        # centered=True: CenteredRMSPropOptimizer (composite_optimizers.py), made by __new__.
        super().__init__(learning_rate, name, decay=float(decay), momentum=float(momentum),
                         epsilon=float(epsilon))


class AdagradOptimizer(Optimizer):
    """TF1's Adagrad: accum += grad^2 (accum starts at initial_accumulator_value);
    var -= learning_rate * grad / sqrt(accum)."""

    _kind = "adagrad"
    _slot_suffixes = {"accumulator": "Adagrad"}

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0:
            raise ValueError("initial_accumulator_value must be positive, got %r"
                             % (initial_accumulator_value,))
        super().__init__(learning_rate, name,
                         initial_accumulator_value=float(initial_accumulator_value))


# Checkpoints (saver.py), under sf.train as in TensorFlow.
from shardflow.saver import Saver, SaverDef, latest_checkpoint  # noqa: E402,F401


# TF1's distributed training API (between-graph replication), under sf.train as in TensorFlow.
from shardflow.cluster import (ClusterDef, ClusterSpec, GreedyLoadBalancingStrategy,  # noqa
                               JobDef, Server, ServerDef, replica_device_setter)
from shardflow.monitored_session import (CheckpointSaverHook, CheckpointSaverListener,  # noqa: E402,F401,E501
                                         MonitoredSession, MonitoredTrainingSession,
                                         SessionRunArgs, SessionRunContext, SessionRunHook,
                                         SessionRunValues, SingularMonitoredSession, StepContext,
                                         StopAtStepHook)
from shardflow.basic_hooks import (FeedFnHook, FinalOpsHook, GlobalStepWaiterHook,  # noqa: E402,F401,E501
                                   LoggingTensorHook, NanLossDuringTrainingError, NanTensorHook,
                                   SecondOrStepTimer, StepCounterHook, SummarySaverHook)
from shardflow.session_creators import (ChiefSessionCreator, Scaffold,  # noqa: E402,F401
                                        SessionCreator, WorkerSessionCreator)
# Learning-rate schedules, tensors of the global step.
from shardflow.learning_rate_decay import (cosine_decay, cosine_decay_restarts,  # noqa: E402,F401,E501
                                           exponential_decay, inverse_time_decay,
                                           linear_cosine_decay, natural_exp_decay,
                                           piecewise_constant, polynomial_decay)
# Reading checkpoints, and initialising variables from one.
from shardflow.checkpoint_utils import (CheckpointReader, CheckpointState,  # noqa: E402,F401
                                        NewCheckpointReader, checkpoint_exists,
                                        get_checkpoint_state, init_from_checkpoint,
                                        list_variables, load_checkpoint, load_variable)
from shardflow.sync_replicas import SyncReplicasOptimizer  # noqa: E402,F401
from shardflow.graph_io import write_graph  # noqa: E402,F401 (tf.train.write_graph)
from shardflow.moving_averages import ExponentialMovingAverage  # noqa: E402,F401
# TF1 optimizers composed from element-wise ops, with get_slot / get_slot_names.
from shardflow.composite_optimizers import (AdadeltaOptimizer, FtrlOptimizer,  # noqa: E402,F401
                                            ProximalGradientDescentOptimizer)
# Thread coordination and TF1's queue-fed input pipelines (shardflow/queue_ops.py).
from shardflow.coordinator import (Coordinator, LooperThread, QueueRunner,  # noqa: E402,F401
                                   add_queue_runner, start_queue_runners)
from shardflow.queue_ops import (batch, batch_join, input_producer,  # noqa: E402,F401
                                 limit_epochs, match_filenames_once, range_input_producer,
                                 shuffle_batch,
                                 shuffle_batch_join, slice_input_producer,
                                 string_input_producer)
# Meta graphs: the graph, variables and collections, restored without the model's code.
from shardflow.meta_graph import export_meta_graph, import_meta_graph  # noqa: E402,F401
# tf.train.Example and its protobuf messages (TensorFlow's wire format; shardflow/example_pb.py).
from shardflow.example_pb import (BytesList, Example, Feature, FeatureList,  # noqa: E402,F401
                                  FeatureLists, Features, FloatList, Int64List, SequenceExample)
# Supervisor and SessionManager (TF1's older session wrappers), ProfilerHook, the rest of
# training_util and of the checkpoint-state helpers, reading event files back.
from shardflow.supervisor import Supervisor, basic_train_loop  # noqa: E402,F401
from shardflow.session_manager import SessionManager  # noqa: E402,F401
from shardflow.profiler_hook import ProfilerHook  # noqa: E402,F401
from shardflow.training_util import assert_global_step  # noqa: E402,F401
from shardflow.checkpoint_utils import (generate_checkpoint_state_proto,  # noqa: E402,F401
                                        get_checkpoint_mtimes, remove_checkpoint,
                                        update_checkpoint_state)
from shardflow.composite_optimizers import (AdagradDAOptimizer,  # noqa: E402,F401
                                            ProximalAdagradOptimizer)
from shardflow.learning_rate_decay import noisy_linear_cosine_decay  # noqa: E402,F401
from shardflow.summary_pb import summary_iterator  # noqa: E402,F401
from shardflow.object_checkpoint import Checkpoint, CheckpointManager  # noqa: E402,F401
from shardflow import mixed_precision as _mixed_precision  # noqa: E402
from shardflow.warm_starting_util import VocabInfo, warm_start  # noqa: E402,F401

from shardflow import loss_scale as _loss_scale  # noqa: E402


def _kept(tensors, keep_input, enqueue_many, what):
    """`tensors` (a tensor, or a list, tuple or dict of them) cut to the examples that
    `keep_input` keeps, as a batch of 0 or more examples for enqueue_many: with
    enqueue_many=False keep_input is a scalar bool (is this example kept?), else a bool
    vector with one entry per example, as TF1's tf.train.maybe_batch."""
    from shardflow import array_ops, ops
    keep = ops.cast(convert_to_tensor(keep_input), dtypes.bool_)
    if keep.shape.ndims not in (None, 1 if enqueue_many else 0):
        raise ValueError("%s: keep_input must be a %s bool, got shape %s"
                         % (what, "vector" if enqueue_many else "scalar", keep.shape))

    def cut(t):
        if not isinstance(t, Tensor):
            try:
                t = convert_to_tensor(t)
            except (TypeError, ValueError):
                raise NotImplementedError("%s: only dense tensors can be filtered by a "
                                          "keep_input tensor, got %r" % (what, t))
        if enqueue_many:
            return array_ops.boolean_mask(t, keep)
        return array_ops.boolean_mask(ops.expand_dims(t, 0), ops.reshape(keep, [1]))
    if isinstance(tensors, dict):
        return {k: cut(v) for k, v in tensors.items()}
    if isinstance(tensors, (list, tuple)):
        return type(tensors)(cut(t) for t in tensors)
    return cut(tensors)


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32,
                enqueue_many=False, shapes=None, dynamic_pad=False,
                allow_smaller_final_batch=False, shared_name=None, name=None):
    """TF1's tf.train.maybe_batch: tf.train.batch of the examples `keep_input` keeps (a
    Python bool, a scalar bool tensor, or with enqueue_many a bool vector per example)."""
    if keep_input is not True:
        tensors = _kept(tensors, keep_input, enqueue_many, "maybe_batch")
        enqueue_many = True
    return batch(tensors, batch_size, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
                 allow_smaller_final_batch, shared_name, name)


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False,
                     shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                     shared_name=None, name=None):
    """TF1's tf.train.maybe_batch_join: batch_join of the examples `keep_input` keeps."""
    if keep_input is not True:
        tensors_list = [_kept(t, keep_input, enqueue_many, "maybe_batch_join")
                        for t in tensors_list]
        enqueue_many = True
    return batch_join(tensors_list, batch_size, capacity, enqueue_many, shapes, dynamic_pad,
                      allow_smaller_final_batch, shared_name, name)


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                        num_threads=1, seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    """TF1's tf.train.maybe_shuffle_batch: shuffle_batch of the examples `keep_input`
    keeps."""
    if keep_input is not True:
        tensors = _kept(tensors, keep_input, enqueue_many, "maybe_shuffle_batch")
        enqueue_many = True
    return shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads, seed,
                         enqueue_many, shapes, allow_smaller_final_batch, shared_name, name)


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input,
                             seed=None, enqueue_many=False, shapes=None,
                             allow_smaller_final_batch=False, shared_name=None, name=None):
    """TF1's tf.train.maybe_shuffle_batch_join: shuffle_batch_join of the examples
    `keep_input` keeps."""
    if keep_input is not True:
        tensors_list = [_kept(t, keep_input, enqueue_many, "maybe_shuffle_batch_join")
                        for t in tensors_list]
        enqueue_many = True
    return shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed,
                              enqueue_many, shapes, allow_smaller_final_batch, shared_name,
                              name)

# tf.train.experimental (TF 1.14, 1.15): the mixed-precision graph rewrite's switch and loss
# scaling (shardflow/loss_scale.py).
experimental = types.SimpleNamespace(
    enable_mixed_precision_graph_rewrite=_mixed_precision.enable_mixed_precision_graph_rewrite,
    disable_mixed_precision_graph_rewrite=_mixed_precision.disable_mixed_precision_graph_rewrite,
    MixedPrecisionLossScaleOptimizer=_loss_scale.MixedPrecisionLossScaleOptimizer,
    LossScale=_loss_scale.LossScale, FixedLossScale=_loss_scale.FixedLossScale,
    DynamicLossScale=_loss_scale.DynamicLossScale)
