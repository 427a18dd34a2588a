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

import os
import time
import types

import numpy as np

from shardflow import dtypes
from shardflow.framework import GraphKeys, Tensor, convert_to_tensor, get_default_graph
from shardflow.gradients import gradients
from shardflow.variables import Variable, global_variables, trainable_variables


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
        with g.name_scope(name or self._name):
            op_name = g._handle.minimize(
                self._kind, self._params, self._lr_tensor._ref if self._lr_tensor is not None else None,
                loss._ref, self._var_handles(var_list), g._ctx())
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
            raise ValueError("apply_gradients: no variable has a gradient")
        if self._kind is None:
            return self._apply_in_python(pairs, global_step, name)
        g = get_default_graph() if not pairs else pairs[0][1].graph
        before = self._variables_before(g)
        with g.name_scope(name or self._name):
            op_name = g._handle.apply_gradients(
                self._kind, self._params, self._lr_tensor._ref if self._lr_tensor is not None else None,
                [(convert_to_tensor(gr)._ref, v.handle.op.name) for gr, v in pairs], g._ctx())
        self._record_variables(g, before)
        return _count_step(_apply_constraints(g.get_operation_by_name(op_name),
                                              [v for _, v in pairs]), global_step)


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
                    g.device(var.device or None):
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
                    g.device(device):
                store[key] = Variable(initial_value, name=name, trainable=False)
        return store[key]

    def _get_non_slot_variable(self, name, graph=None):
        return self.__dict__.get("_non_slots", {}).get((name, graph or get_default_graph()))

    def _non_slot_variables(self):
        return list(self.__dict__.get("_non_slots", {}).values())

    @staticmethod
    def _variables_before(g):
        return {v.name for v in global_variables(graph=g)}

    def _record_variables(self, g, before):
        self._engine_variables += [v for v in global_variables(graph=g) if v.name not in before]

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
            op = v.op.name
            if op == base or (op.startswith(base + "_") and op[len(base) + 1:].isdigit()):
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
    _slot_suffixes = {"m": "Adam_m", "v": "Adam_v"}

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(learning_rate, name, beta1=float(beta1), beta2=float(beta2),
                         epsilon=float(epsilon))


class RMSPropOptimizer(Optimizer):
    """TF1's RMSProp: ms = decay * ms + (1 - decay) * grad^2 (ms starts at 1);
    mom = momentum * mom + learning_rate * grad / sqrt(ms + epsilon); var -= mom.

    Example: ``sf.train.RMSPropOptimizer(0.001).minimize(loss)``.
    """

    _kind = "rmsprop"
    _slot_suffixes = {"rms": "RMSProp", "momentum": "Momentum"}

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


class Saver:
    """Saves and restores variables, as TensorFlow 1.x's ``tf.train.Saver``.

    Files use shardflow's checkpoint format (runtime/checkpoint.h: checksummed, written
    atomically), the same as ``shardflow train`` and the C++ Saver. Beside them, a ``checkpoint``
    state file names the latest (``latest_checkpoint`` reads it), and only the newest
    ``max_to_keep`` checkpoints written by this Saver are kept.

    Example::

        saver = sf.train.Saver()
        path = saver.save(sess, "/tmp/model/model.ckpt", global_step=step)   # .../model.ckpt-100
        saver.restore(sess, sf.train.latest_checkpoint("/tmp/model"))

    `var_list`: the variables (default: every global variable), or a dict name -> variable to
    save them under other names.
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=None, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        """TF1's arguments. `reshape`: restore a value into a variable of another shape with as
        many elements. `keep_checkpoint_every_n_hours`: besides the newest max_to_keep, keep one
        checkpoint per that many hours instead of deleting it. `allow_empty`: with no variables,
        save and restore do nothing (else ValueError). `pad_step_number`: "-00000100" instead
        of "-100". `filename`: the default save_path of save(). Accepted with no effect here:
        `sharded` (one file per checkpoint: every variable's value comes to this process
        anyway), `restore_sequentially`, `saver_def`, `builder`, `defer_build`,
        `write_version` (one format), `save_relative_paths` (the state file always names
        checkpoints relative to its directory)."""
        from shardflow.ops import group, placeholder
        g = get_default_graph()
        self._entries = _saver_entries(var_list, g)
        if not self._entries and not allow_empty:
            raise ValueError("Saver: no variables to save (allow_empty=True for a Saver that "
                             "does nothing)")
        names = [n for n, _ in self._entries]
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise ValueError("Saver: at least two variables have the same name: %s (var_list "
                             "holds a variable twice, or two under one key)" % ", ".join(twice))
        # Flat, one per engine variable (the parts of a partitioned one each count).
        self._names = [n for n, parts in self._entries for _ in parts]
        self._vars = [v for _, parts in self._entries for v in parts]
        self._max_to_keep = int(max_to_keep or 0)
        self._keep_every_secs = float(keep_checkpoint_every_n_hours) * 3600.0
        self._next_keep_time = time.time() + self._keep_every_secs
        self._reshape = bool(reshape)
        self._pad_step_number = bool(pad_step_number)
        self._filename = filename
        self._kept = []   # (path, time written), oldest first
        if not self._entries:
            self._feeds, self._restore_op = [], None
            return
        with g.name_scope(name or "save"):
            self._feeds = [placeholder(v.dtype, None if reshape else _dims(v),
                                       name="restore_%d" % i)
                           for i, v in enumerate(self._vars)]
            self._restore_op = group(*[v.assign(p, read_value=False)
                                       for v, p in zip(self._vars, self._feeds)],
                                     name="restore_all")

    @property
    def last_checkpoints(self):
        """The paths of the checkpoints this Saver keeps, oldest first (TF1's property)."""
        return [p for p, _ in self._kept]

    def set_last_checkpoints(self, last_checkpoints):
        """Makes this Saver manage (and in time delete) these checkpoint paths, oldest first."""
        self._kept = [(p, time.time()) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        """As set_last_checkpoints, with (path, timestamp) pairs."""
        self._kept = [(p, float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths):
        """Takes over checkpoints a previous Saver wrote (those that still exist), e.g. those
        of get_checkpoint_state(dir).all_model_checkpoint_paths after a restart."""
        self._kept = [(p, os.path.getmtime(p)) for p in checkpoint_paths if os.path.exists(p)]

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False,
                          export_scope=None, clear_devices=False, clear_extraneous_savers=False,
                          strip_default_attrs=False, save_debug_info=False):
        """The default graph as a meta graph file (shardflow/meta_graph.py), as
        tf.train.export_meta_graph."""
        from shardflow.meta_graph import export_meta_graph
        return export_meta_graph(filename, collection_list=collection_list, as_text=as_text,
                                 export_scope=export_scope, clear_devices=clear_devices,
                                 saver_def=self._variable_names())

    def _variable_names(self):
        """What the meta graph records of this Saver (meta_graph.py's "saver"): each
        checkpoint name and the handle op of its variable, so that import_meta_graph's Saver
        reads the checkpoint under the same names (a var_list dict renames variables)."""
        return {"variables": [[name, v.op.name] for name, v in zip(self._names, self._vars)]}

    def as_saver_def(self):
        """A SaverDef describing this Saver (TF1's; fields for the record, not a protobuf)."""
        return SaverDef(max_to_keep=self._max_to_keep,
                        keep_checkpoint_every_n_hours=self._keep_every_secs / 3600.0)

    to_proto = as_saver_def     # TF1's other name

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        """Writes every variable's value to `save_path` (with "-<global_step>" appended when
        given; a Variable or tensor is evaluated) and returns the path written. Beside it, with
        write_meta_graph, `<path>.meta`: the graph, its variables and collections, for
        tf.train.import_meta_graph (shardflow/meta_graph.py)."""
        from shardflow import _shardflow
        if save_path is None:
            save_path = self._filename
        if save_path is None:
            raise ValueError("Saver.save: no save_path (and no filename given to the Saver)")
        if not self._vars:
            return None  # allow_empty: nothing to save
        if global_step is not None:
            if not isinstance(global_step, (int, np.integer)):
                global_step = sess.run(global_step)
            save_path = ("%s-%08d" if self._pad_step_number else "%s-%d") % (save_path,
                                                                           int(global_step))
        values = iter(sess.run([v.value() for v in self._vars]))
        tensors = []
        for name, parts in self._entries:
            info = parts[0]._get_save_slice_info()
            if info is None:
                tensors.append((name, next(values)))
                continue
            whole = None   # a partitioned variable: its parts make up the whole
            for part in parts:
                value = next(values)
                if whole is None:
                    whole = np.empty(info.full_shape, dtype=value.dtype)
                whole[part._get_save_slice_info().index()] = value
            tensors.append((name, whole))
        directory = os.path.dirname(save_path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        _shardflow.save_checkpoint(save_path, tensors)
        if write_meta_graph:
            from shardflow.meta_graph import export_meta_graph
            export_meta_graph(save_path + "." + meta_graph_suffix, graph=sess.graph,
                              saver_def=self._variable_names())
        self._kept = [(p, t) for p, t in self._kept if p != save_path]
        self._kept.append((save_path, time.time()))
        while self._max_to_keep > 0 and len(self._kept) > self._max_to_keep:
            old, written = self._kept.pop(0)
            if written >= self._next_keep_time:
                # keep_checkpoint_every_n_hours: this one stays (and is no longer managed).
                self._next_keep_time += self._keep_every_secs
                continue
            for path in (old, old + "." + meta_graph_suffix):
                if os.path.exists(path):
                    os.remove(path)
        if write_state:
            _write_checkpoint_state(directory or ".", save_path, self.last_checkpoints,
                                    latest_filename)
        return save_path

    def restore(self, sess, save_path):
        """Sets every variable from the checkpoint at `save_path`: one shardflow wrote, or one
        TensorFlow wrote (`save_path`.index beside it; shardflow/tf_checkpoint.py). Errors:
        NotFoundError (no file, or a variable missing from it, naming them),
        InvalidArgumentError (a dtype or shape that is not the variable's), DataLossError (a
        damaged file)."""
        from shardflow import errors
        from shardflow.tf_checkpoint import read_checkpoint
        if save_path is None:
            raise ValueError("Saver.restore: save_path is None (latest_checkpoint found none?)")
        if not self._vars:
            return  # allow_empty: nothing to restore
        loaded = dict(read_checkpoint(save_path))   # shardflow's format or TensorFlow's
        missing = [name for name, parts in self._entries if name not in loaded and not (
            parts[0]._get_save_slice_info() is not None and
            all(part._shared_name in loaded for part in parts))]
        if missing:
            raise errors.NotFoundError(
                "checkpoint %s has no variable(s) %s" % (save_path, ", ".join(missing)))
        feed = {}
        feeds = iter(self._feeds)
        for name, parts in self._entries:
            placeholders = [next(feeds) for _ in parts]
            info = parts[0]._get_save_slice_info()
            if info is None:
                feed[placeholders[0]] = self._checked(name, parts[0], loaded[name], save_path)
            elif name in loaded:
                whole = loaded[name]
                if list(whole.shape) != info.full_shape:
                    raise errors.InvalidArgumentError(
                        "partitioned variable '%s' has shape %s in %s but %s in the model"
                        % (name, list(whole.shape), save_path, info.full_shape))
                for part, p in zip(parts, placeholders):
                    feed[p] = whole[part._get_save_slice_info().index()]
            else:
                # Written before partitioned variables were saved whole: one tensor per part.
                for part, p in zip(parts, placeholders):
                    feed[p] = self._checked(part._shared_name, part, loaded[part._shared_name],
                                            save_path)
        sess.run(self._restore_op, feed_dict=feed)

    def _checked(self, name, v, value, save_path):
        """`value` from the checkpoint for variable `v`, reshaped when the Saver may; errors
        name a shape that does not fit."""
        from shardflow import errors
        have = dtypes.as_dtype(value.dtype) if value.dtype.kind not in "SUO" else dtypes.string
        if have != v.dtype and not (v.dtype == dtypes.bfloat16 and have == dtypes.float32):
            raise errors.InvalidArgumentError(
                "variable '%s' is %s in %s but %s in the model (a checkpoint's values are not "
                "converted)" % (name, have.name, save_path, v.dtype.name))
        want = _dims(v)
        if self._reshape and want is not None and None not in want:
            if int(np.prod(want)) != value.size:
                raise errors.InvalidArgumentError(
                    "variable '%s' has %d elements in %s but %d in the model (reshape=True "
                    "needs as many)" % (name, value.size, save_path, int(np.prod(want))))
            value = value.reshape(want)
        if want is not None and (len(want) != value.ndim or any(
                w is not None and w != d for w, d in zip(want, value.shape))):
            raise errors.InvalidArgumentError(
                "variable '%s' has shape %s in %s but %s in the model"
                % (name, list(value.shape), save_path, want))
        return value


def _saver_entries(var_list, g):
    """[(checkpoint name, [variables])] for a Saver's var_list: a variable alone, or the parts
    of a partitioned variable (each with its SaveSliceInfo) written as one whole under the
    partitioned variable's name, as TF1's. var_list: None (every global variable), a list of
    variables and PartitionedVariables, or a dict name -> a variable, a PartitionedVariable or
    a list of one partitioned variable's parts."""
    from shardflow.partitioned_variables import PartitionedVariable
    from shardflow.variables import Variable, global_variables
    if var_list is None:
        var_list = global_variables(g)
    entries, sliced = [], {}

    def add(name, v, key):
        if isinstance(v, PartitionedVariable):
            for part in v:
                add(name if key else v.name, part, key)
            return
        if not isinstance(v, Variable):
            raise TypeError("Saver: var_list holds Variables (or PartitionedVariables), not %r"
                            % (v,))
        info = v._get_save_slice_info()
        if info is None:
            entries.append((name if key else v._shared_name, [v]))
            return
        full = name if key else info.full_name
        if full not in sliced:
            sliced[full] = []
            entries.append((full, sliced[full]))
        sliced[full].append(v)

    if isinstance(var_list, dict):
        for name, v in sorted(var_list.items()):
            if isinstance(v, (list, tuple)):
                for part in v:
                    if not isinstance(part, Variable) or part._get_save_slice_info() is None:
                        raise ValueError("Saver: var_list['%s'] is a list, so it holds the "
                                         "parts of one partitioned variable; %r is not one"
                                         % (name, part))
                    add(name, part, True)
            else:
                add(name, v, True)
    else:
        for v in var_list:
            add(None, v, False)
    for name, parts in sliced.items():
        _check_parts(name, parts)
    return entries


def _check_parts(name, parts):
    """The parts saved as `name` make up one whole: same full shape, each inside it, none
    overlapping, all of it covered."""
    infos = [p._get_save_slice_info() for p in parts]
    full = infos[0].full_shape
    for p, info in zip(parts, infos):
        if info.full_shape != full or len(info.var_offset) != len(full) or any(
                o < 0 or o + n > d for o, n, d in zip(info.var_offset, info.var_shape, full)):
            raise ValueError("Saver: part %s of '%s' does not lie inside its shape %s (offset "
                             "%s, shape %s)" % (p.op.name, name, full, info.var_offset,
                                                info.var_shape))
    for i, a in enumerate(infos):
        for b in infos[i + 1:]:
            if all(ao < bo + bn and bo < ao + an for ao, an, bo, bn in
                   zip(a.var_offset, a.var_shape, b.var_offset, b.var_shape)):
                raise ValueError("Saver: two parts of '%s' overlap (%s and %s)"
                                 % (name, a.spec, b.spec))
    if sum(int(np.prod(i.var_shape)) for i in infos) != int(np.prod(full)):
        raise ValueError("Saver: the parts given of partitioned variable '%s' (%s) do not make "
                         "up its shape %s; give all of them (or the PartitionedVariable)"
                         % (name, ", ".join(p.op.name for p in parts), full))


class SaverDef:
    """TF1's tf.train.SaverDef, for its version constants (Saver(write_version=SaverDef.V2)) and
    as_saver_def(); shardflow writes one checkpoint format whatever the version."""
    LEGACY = 0
    V1 = 1
    V2 = 2

    def __init__(self, max_to_keep=5, keep_checkpoint_every_n_hours=10000.0, version=V2):
        self.max_to_keep = max_to_keep
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self.version = version


def _dims(v):
    """A variable's dimensions as a list (None entries unknown), or None for an unknown rank."""
    try:
        return v.shape.as_list()
    except ValueError:
        return None


def _write_checkpoint_state(directory, latest, kept, latest_filename=None):
    """The "checkpoint" file (or `latest_filename`) TensorFlow writes beside checkpoints (text
    format)."""
    lines = ['model_checkpoint_path: "%s"' % os.path.basename(latest)]
    lines += ['all_model_checkpoint_paths: "%s"' % os.path.basename(p) for p in kept]
    state = os.path.join(directory, latest_filename or "checkpoint")
    with open(state + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(state + ".tmp", state)


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The path of the newest checkpoint a Saver wrote in `checkpoint_dir` (its state file
    `latest_filename`, default "checkpoint"), or None."""
    state = os.path.join(checkpoint_dir, latest_filename or "checkpoint")
    try:
        with open(state) as f:
            for line in f:
                if line.startswith("model_checkpoint_path:"):
                    name = line.split(":", 1)[1].strip().strip('"')
                    path = name if os.path.isabs(name) else os.path.join(checkpoint_dir, name)
                    # TensorFlow's checkpoints are <path>.index and <path>.data-*.
                    exists = os.path.exists(path) or os.path.exists(path + ".index")
                    return path if exists else None
    except FileNotFoundError:
        return None
    return None


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
from shardflow.training_util import assert_global_step, maybe_batch  # noqa: E402,F401
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

# tf.train.experimental (TF 1.14, 1.15): the mixed-precision graph rewrite's switch and loss
# scaling (shardflow/loss_scale.py).
experimental = types.SimpleNamespace(
    enable_mixed_precision_graph_rewrite=_mixed_precision.enable_mixed_precision_graph_rewrite,
    disable_mixed_precision_graph_rewrite=_mixed_precision.disable_mixed_precision_graph_rewrite,
    MixedPrecisionLossScaleOptimizer=_loss_scale.MixedPrecisionLossScaleOptimizer,
    LossScale=_loss_scale.LossScale, FixedLossScale=_loss_scale.FixedLossScale,
    DynamicLossScale=_loss_scale.DynamicLossScale)
