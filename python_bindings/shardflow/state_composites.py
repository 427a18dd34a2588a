"""TF1's module-level state and graph helpers: tf.assign & co., the scatter updates of variables,
tf.tuple / tf.identity_n, tf.make_template, tf.colocate_with, tf.container, tf.get_seed,
tf.get_collection_ref, tf.model_variables, tf.is_variable_initialized,
tf.report_uninitialized_variables, tf.add_check_numerics_ops and tf.hessians.

Example::

    v = sf.Variable(np.zeros([4, 2], np.float32))
    inc = sf.scatter_add(v, [0, 2], [[1, 1], [2, 2]])       # rows 0 and 2 grow
    step = sf.assign_add(counter, 1)

    scale = sf.make_template("scale", lambda x: x * sf.get_variable("w", [], initializer=...))
    a, b = scale(x1), scale(x2)                              # one variable "scale/w", shared

The scatter updates are read-modify-write composites (a scatter-add of the updates into zeros of
the variable's shape, then one assignment), so like TF1's they are not atomic across concurrent
steps; scatter_update with an index repeated takes its last row (TF1: one of them), and
scatter_nd_update the sum. tf.count_up_to is an atomic kernel (ResourceCountUpTo).
"""

import contextlib
import re

import numpy as np

from shardflow import dtypes, ops
from shardflow.framework import (GraphKeys, Tensor, convert_to_tensor,
                                 get_default_graph)
from shardflow.array_ops import stack
from shardflow.segment_ops import unsorted_segment_sum
from shardflow.variables import Variable, global_variables, local_variables


def _var(ref, what):
    if not isinstance(ref, Variable):
        raise TypeError("%s: ref must be a variable (sf.Variable / get_variable), got %r"
                        % (what, ref))
    return ref


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """ref = value; the result holds the new value (TF1's tf.assign)."""
    return _var(ref, "assign").assign(value, name=name)


def assign_add(ref, value, use_locking=None, name=None):
    """ref += value; the result holds the new value."""
    return _var(ref, "assign_add").assign_add(value, name=name)


def assign_sub(ref, value, use_locking=None, name=None):
    """ref -= value; the result holds the new value."""
    return _var(ref, "assign_sub").assign_sub(value, name=name)


def _rows(ref, indices, updates, what):
    """(int32 row ids, update rows of the variable's row shape, the number of rows)."""
    ref = _var(ref, what)
    dims = ref.shape.as_list()
    if not dims or dims[0] is None:
        raise ValueError("%s needs a variable with a known first dimension, got %s"
                         % (what, ref.shape))
    ids = convert_to_tensor(indices)
    ids = ops.cast(ids, dtypes.int32) if ids.dtype != dtypes.int32 else ids
    updates = ops.cast(convert_to_tensor(updates), ref.dtype)
    rows = ops.reshape(updates, [-1] + dims[1:])
    return ops.reshape(ids, [-1]), rows, dims[0]


def scatter_add(ref, indices, updates, use_locking=None, name=None):
    """ref[indices[i], ...] += updates[i, ...] (repeated indices add up)."""
    ids, rows, n = _rows(ref, indices, updates, "scatter_add")
    return ref.assign_add(unsorted_segment_sum(rows, ids, n), name=name)


def scatter_sub(ref, indices, updates, use_locking=None, name=None):
    """ref[indices[i], ...] -= updates[i, ...]."""
    ids, rows, n = _rows(ref, indices, updates, "scatter_sub")
    return ref.assign_sub(unsorted_segment_sum(rows, ids, n), name=name)


def scatter_update(ref, indices, updates, use_locking=None, name=None):
    """ref[indices[i], ...] = updates[i, ...]; other rows keep their values (also inf or NaN
    ones); an index given twice takes its last row."""
    ids, rows, n = _rows(ref, indices, updates, "scatter_update")
    return ref.assign(_overwrite_rows(ref.value(), ids, rows, n), name=name)


def _overwrite_rows(value, ids, rows, n):
    """`value` (n rows) with row ids[i] replaced by rows[i], the last i for an id given twice;
    selected, not masked, so untouched inf or NaN rows stay as they are."""
    from shardflow.array_ops import gather, where
    from shardflow.array_ops import range as range_
    from shardflow.segment_ops import unsorted_segment_max
    last = unsorted_segment_max(range_(ops.shape(ids)[0]), ids, n)   # untouched: lowest int32
    return where(ops.greater_equal(last, 0), gather(rows, ops.maximum(last, 0)), value)


def scatter_mul(ref, indices, updates, use_locking=None, name=None):
    """ref[indices[i], ...] *= updates[i, ...] (an index given twice multiplies twice)."""
    from shardflow.segment_ops import unsorted_segment_prod
    ids, rows, n = _rows(ref, indices, updates, "scatter_mul")
    return ref.assign(ops.multiply(ref.value(), unsorted_segment_prod(rows, ids, n)), name=name)


def scatter_div(ref, indices, updates, use_locking=None, name=None):
    """ref[indices[i], ...] /= updates[i, ...]."""
    from shardflow.segment_ops import unsorted_segment_prod
    ids, rows, n = _rows(ref, indices, updates, "scatter_div")
    return ref.assign(ops.divide(ref.value(), unsorted_segment_prod(rows, ids, n)), name=name)


def _scatter_extreme(ref, indices, updates, name, what, segment_fn, pick):
    from shardflow.array_ops import where
    ids, rows, n = _rows(ref, indices, updates, what)
    hit = ops.greater(unsorted_segment_sum(ops.ones_like(ids), ids, n), 0)
    best = segment_fn(rows, ids, n)
    return ref.assign(where(hit, pick(ref.value(), best), ref.value()), name=name)


def scatter_max(ref, indices, updates, use_locking=None, name=None):
    """ref[indices[i], ...] = max(ref[indices[i], ...], updates[i, ...])."""
    from shardflow.segment_ops import unsorted_segment_max
    return _scatter_extreme(ref, indices, updates, name, "scatter_max", unsorted_segment_max,
                            ops.maximum)


def scatter_min(ref, indices, updates, use_locking=None, name=None):
    """ref[indices[i], ...] = min(ref[indices[i], ...], updates[i, ...])."""
    from shardflow.segment_ops import unsorted_segment_min
    return _scatter_extreme(ref, indices, updates, name, "scatter_min", unsorted_segment_min,
                            ops.minimum)


def batch_scatter_update(ref, indices, updates, use_locking=True, name=None):
    """TF1's tf.batch_scatter_update: ref[b, indices[b, j]] = updates[b, j] for a variable of
    shape [B, N, ...], indices [B, J] and updates [B, J, ...]."""
    ref = _var(ref, "batch_scatter_update")
    dims = ref.shape.as_list()
    if len(dims) < 2 or dims[0] is None or dims[1] is None:
        raise ValueError("batch_scatter_update needs a variable of known shape [batch, n, ...], "
                         "got %s" % ref.shape)
    ids = ops.cast(convert_to_tensor(indices), dtypes.int32)
    if ids.shape.ndims != 2:
        raise ValueError("batch_scatter_update: indices must be [batch, count], got shape %s"
                         % ids.shape)
    from shardflow.array_ops import range as range_
    flat = ops.reshape(ops.add(ids, ops.reshape(range_(dims[0]) * dims[1], [-1, 1])), [-1])
    updates = ops.reshape(ops.cast(convert_to_tensor(updates), ref.dtype), [-1] + dims[2:])
    value = ops.reshape(ref.value(), [-1] + dims[2:])
    new = _overwrite_rows(value, flat, updates, dims[0] * dims[1])
    return ref.assign(ops.reshape(new, dims), name=name)


def count_up_to(ref, limit, name=None):
    """TF1's tf.count_up_to: atomically increments the scalar int32/int64 variable `ref` and
    returns its value before; once that value has reached `limit` the run fails with
    OutOfRangeError (what ends a queue runner's loop) and `ref` stays as it is."""
    ref = _var(ref, "count_up_to")
    if ref.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError("count_up_to needs an int32 or int64 variable, got %s (%s)"
                        % (ref.name, ref.dtype.name))
    if ref.shape.ndims not in (None, 0):
        raise ValueError("count_up_to needs a scalar variable, got %s of shape %s"
                         % (ref.name, ref.shape))
    g = ref.graph
    with g._device_scope(ref.device):
        return ops._out("ResourceCountUpTo", [ref.handle], {"limit": int(limit),
                                                             "T": ref.dtype._enum}, name)


def _nd(ref, indices, updates, what):
    ref = _var(ref, what)
    shape = ref.shape.as_list()
    if any(d is None for d in shape):
        raise ValueError("%s needs a variable of known shape, got %s" % (what, ref.shape))
    from shardflow.array_ops import scatter_nd
    return ref, shape, lambda u: scatter_nd(indices, ops.cast(convert_to_tensor(u), ref.dtype),
                                            shape)


def scatter_nd_add(ref, indices, updates, use_locking=None, name=None):
    """ref[indices[i]] += updates[i] with indices [N, k] into the first k dimensions."""
    ref, _, scatter = _nd(ref, indices, updates, "scatter_nd_add")
    return ref.assign_add(scatter(updates), name=name)


def scatter_nd_sub(ref, indices, updates, use_locking=None, name=None):
    """ref[indices[i]] -= updates[i]."""
    ref, _, scatter = _nd(ref, indices, updates, "scatter_nd_sub")
    return ref.assign_sub(scatter(updates), name=name)


def scatter_nd_update(ref, indices, updates, use_locking=None, name=None):
    """ref[indices[i]] = updates[i]; the other elements keep their values (also inf or NaN
    ones)."""
    from shardflow.array_ops import where
    ref, _, scatter = _nd(ref, indices, updates, "scatter_nd_update")
    hit = scatter(ops.ones_like(ops.cast(convert_to_tensor(updates), ref.dtype)))
    return ref.assign(where(ops.not_equal(hit, 0), scatter(updates), ref.value()), name=name)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001 (TF1's name)
    """The tensors, each passed on only once all of them (and control_inputs) are computed."""
    tensors = list(tensors)
    gating = [t for t in tensors if t is not None] + list(control_inputs or [])
    if not gating:
        return tensors
    gate = ops.group(*gating, name=name)
    out = []
    with get_default_graph().control_dependencies([gate]):
        for t in tensors:
            out.append(None if t is None else
                       (ops.identity(t) if isinstance(t, Tensor) else gate))
    return out


def identity_n(input, name=None):  # noqa: A002
    """Each of a list of tensors through its own Identity."""
    return [ops.identity(t, name=None if name is None else "%s_%d" % (name, i))
            for i, t in enumerate(input)]


def get_collection_ref(key):
    """The default graph's collection `key` itself (a list: appending to it adds to the
    collection), as TF1's tf.get_collection_ref."""
    return get_default_graph()._collections.setdefault(key, [])


def model_variables(scope=None):
    """The MODEL_VARIABLES collection (variables made by tf.contrib.framework.model_variable)."""
    return get_default_graph().get_collection("model_variables", scope)


def get_seed(op_seed):
    """(graph seed, op seed) as TF1's tf.get_seed: (None, None) when neither is set; an op seed
    without a graph seed pairs with the default graph seed 87654321."""
    g = get_default_graph()
    graph_seed = getattr(g, "_graph_seed", None)
    if graph_seed is None:
        return (None, None) if op_seed is None else (87654321, int(op_seed))
    if op_seed is None:
        op_seed = len(g.get_operations())
    return int(graph_seed), int(op_seed)


@contextlib.contextmanager
def colocate_with(op, ignore_existing=False):
    """Ops made inside join `op`'s colocation group (an Operation, Tensor or Variable; None with
    ignore_existing=True leaves every group): they get TF1's `_class` attr ["loc:@<op>"], which
    the placer honours, and `op`'s device when it has one. The device scopes around do not
    apply inside, as TF1's (a device scope opened inside still does). ignore_existing=True
    drops the colocations of the colocate_with blocks around."""
    g = get_default_graph()
    if op is None and not ignore_existing:
        raise ValueError("Trying to reset colocation (op is None) but ignore_existing is not "
                         "True")
    target = getattr(op, "op", op)   # a Tensor's or a Variable's op
    names = [] if ignore_existing else list(g._colocation_stack)
    if target is not None and getattr(target, "graph", None) is g and target.name not in names:
        names.append(target.name)
    dev = getattr(op, "device", "") or "" if op is not None else ""
    saved = g._colocation_stack
    g._colocation_stack = names
    try:
        if dev or names:
            with g._device_scope(dev):
                yield
        else:
            yield   # a target in an enclosing graph (a loop body's): the scopes around stay
    finally:
        g._colocation_stack = saved


@contextlib.contextmanager
def container(container_name):
    """Accepted for TF1 compatibility: shardflow keeps one resource container per session."""
    yield container_name


def is_variable_initialized(variable):
    """A bool tensor: whether `variable` has a value."""
    return _var(variable, "is_variable_initialized").is_initialized()


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """A string vector with the names of the variables in var_list (default: global and local
    variables) that have no value yet; empty when all are initialized."""
    from shardflow.array_ops import boolean_mask
    if var_list is None:
        var_list = global_variables() + local_variables()
    if not var_list:
        return ops.constant(np.array([], dtype=object), dtype=dtypes.string, name=name)
    names = ops.constant(np.array([v.op.name.encode() for v in var_list], dtype=object),
                         dtype=dtypes.string)
    ready = stack([v.is_initialized() for v in var_list])
    return boolean_mask(names, ops.logical_not(ready), name=name)


def add_check_numerics_ops():
    """A group of CheckNumerics over every floating-point tensor of the default graph made so
    far (TF1's tf.add_check_numerics_ops): running it fails the step naming the first tensor
    that holds a NaN or Inf."""
    g = get_default_graph()
    checks = []
    for op in g.get_operations():
        if op.type in ("CheckNumerics", "VarHandleOp", "_Arg", "_Retval") or \
                getattr(op, "_in_function", False):
            continue
        for t in op.outputs:
            if t.dtype.is_floating:
                with g.control_dependencies(checks[-1:]):
                    checks.append(ops.check_numerics(t, "%s : Tensor had NaN or Inf values"
                                                     % t.name).op)
    return ops.group(*checks, name="CheckNumerics") if checks else ops.no_op()


def hessians(ys, xs, name="hessians", colocate_gradients_with_ops=False, gate_gradients=False,
             aggregation_method=None):
    """For each x, the Hessian of sum(ys) with respect to x: shape x.shape + x.shape (x must be
    of known shape; one gradient of the gradient per element of x)."""
    from shardflow.gradients import gradients
    xs = xs if isinstance(xs, (list, type(()))) else [xs]
    out = []
    for x in xs:
        xt = x.value() if isinstance(x, Variable) else convert_to_tensor(x)
        dims = xt.shape.as_list()
        if any(d is None for d in dims):
            raise ValueError("hessians needs xs of known shape, got %s" % xt.shape)
        (g,) = gradients(ys, [x])
        if g is None:
            out.append(None)
            continue
        flat = ops.reshape(g, [-1])
        n = int(np.prod(dims)) if dims else 1
        rows = []
        for i in range(n):
            (h,) = gradients(flat[i], [x])
            rows.append(ops.zeros_like(xt) if h is None else h)
        out.append(ops.reshape(stack(rows), dims + dims, name=name if len(xs) == 1 else None))
    return out


class Template:
    """What make_template returns (TF1's Template): calling it runs func_ inside its variable
    scope, creating the variables the first time and reusing them after. ``variables`` and
    ``trainable_variables`` list the variables under that scope; ``variable_scope`` is None
    until the scope exists (the first call, or construction with create_scope_now_)."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None,
                 custom_getter=None, kwargs=None):
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError("make_template: custom_getter_ must be callable, got %r"
                             % (custom_getter,))
        self._name = name
        self._func = func
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._kwargs = dict(kwargs or {})
        self._variable_scope = None
        self.__name__ = name
        if create_scope_now:
            from shardflow.variable_scope import variable_scope
            with variable_scope(unique_name, default_name=name,
                                custom_getter=custom_getter) as scope:
                self._variable_scope = scope

    def __call__(self, *args, **more):
        from shardflow.variable_scope import variable_scope
        merged = dict(self._kwargs)
        merged.update(more)
        if self._variable_scope is None:
            with variable_scope(self._unique_name, default_name=self._name,
                                custom_getter=self._custom_getter) as scope:
                self._variable_scope = scope
                self._called = True
                return self._func(*args, **merged)
        # A scope made at construction (create_scope_now_) has no variables yet: the first
        # call creates them there; later calls reuse them.
        reuse = True if self._called else None
        self._called = True
        with variable_scope(self._variable_scope, reuse=reuse,
                            custom_getter=self._custom_getter):
            return self._func(*args, **merged)

    _called = False

    @property
    def name(self):
        return self._name

    @property
    def func(self):
        return self._func

    @property
    def variable_scope(self):
        return self._variable_scope

    @property
    def variable_scope_name(self):
        return None if self._variable_scope is None else self._variable_scope.name

    def _scope_collection(self, key):
        if self._variable_scope is None:
            return []
        return get_default_graph().get_collection(key, re.escape(self.variable_scope_name + "/"))

    @property
    def variables(self):
        """The global variables under the template's scope (TF1's Template.variables)."""
        return self._scope_collection(GraphKeys.GLOBAL_VARIABLES)

    global_variables = variables

    @property
    def trainable_variables(self):
        return self._scope_collection(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self):
        trainable = self.trainable_variables
        return [v for v in self.variables if not any(v is t for t in trainable)]

    @property
    def local_variables(self):
        return self._scope_collection(GraphKeys.LOCAL_VARIABLES)


def make_template(name_, func_, create_scope_now_=False, unique_name_=None,
                  custom_getter_=None, **kwargs):
    """A Template calling func_(*args, **kwargs) inside variable_scope(name_): the first call
    creates the variables (get_variable), later calls reuse them (TF1's tf.make_template).
    Templates named alike get scopes "t", "t_1", ... (unique_name_ names it exactly);
    custom_getter_ is the scope's custom getter on every call."""
    return Template(name_, func_, create_scope_now_, unique_name_, custom_getter_, kwargs)


__all__ = ["add_check_numerics_ops", "assign", "assign_add", "assign_sub",
           "batch_scatter_update", "colocate_with", "container", "count_up_to",
           "get_collection_ref", "get_seed", "hessians", "identity_n", "is_variable_initialized",
           "make_template", "model_variables", "report_uninitialized_variables", "scatter_add",
           "scatter_div", "scatter_max", "scatter_min", "scatter_mul", "scatter_nd_add",
           "scatter_nd_sub", "scatter_nd_update", "scatter_sub", "scatter_update", "tuple"]
