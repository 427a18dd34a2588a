"""TF1's variable scopes: ``get_variable`` with sharing by name, and its initializers.

Example::

    def layer(x, n_out):
        w = sf.get_variable("w", [x.shape[1].value, n_out],
                            initializer=sf.truncated_normal_initializer(stddev=0.1))
        b = sf.get_variable("b", [n_out], initializer=sf.constant_initializer(0.1))
        return sf.nn.relu(sf.matmul(x, w) + b)

    with sf.variable_scope("tower"):
        y1 = layer(x1, 10)                      # creates tower/w, tower/b
    with sf.variable_scope("tower", reuse=True):
        y2 = layer(x2, 10)                      # the same variables

As in TF1: inside ``variable_scope("s")`` a variable is named "s/<name>" whatever name_scope
is open; ``reuse=True`` requires that it exists (and has the same shape), reuse False (the
default, inherited from the enclosing scope) that it does not, ``reuse=sf.AUTO_REUSE`` either;
``scope.reuse_variables()`` turns reuse on for the rest of the block. The scope also opens a
name scope of the same name for the ops built inside (a new one, "s_1", when the name scope "s"
was used before, also when a captured scope object is re-entered; none with
``auxiliary_name_scope=False``).

Note [Default scope names]. ``variable_scope(None, default_name="block")`` and the layers of
tf.contrib.layers/slim without a ``scope`` name their scope as TF1 does: "block" the first time
in an entry of the enclosing variable scope, then "block_1", "block_2", ... Each scope counts
how often it was entered; leaving a scope entered by name sets the counts of the scopes inside
it back to zero, so a function that opens ``variable_scope("D", reuse=sf.AUTO_REUSE)`` and
builds unnamed layers finds the same layers (D/fully_connected, ...) on every call, while two
unnamed blocks in one entry get two sets of variables. Re-entering a captured scope object
restores the counts on leaving, as TF1's ``_pure_variable_scope``.
"""

import contextlib

import numpy as np

from shardflow import dtypes
from shardflow.framework import get_default_graph

AUTO_REUSE = "AUTO_REUSE"


class VariableScope:
    """What ``variable_scope(...)`` yields: its name, reuse, default initializer and default
    regularizer."""

    def __init__(self, name, reuse, initializer=None, regularizer=None, partitioner=None,
                 custom_getter=None, dtype=None):
        self.name = name
        self.reuse = reuse
        self.initializer = initializer
        self.regularizer = regularizer
        self.partitioner = partitioner
        self.custom_getter = custom_getter
        self.dtype = dtype
        self.original_name_scope = name + "/" if name else ""

    def set_partitioner(self, partitioner):
        self.partitioner = partitioner

    def set_initializer(self, initializer):
        self.initializer = initializer

    def set_regularizer(self, regularizer):
        self.regularizer = regularizer

    def reuse_variables(self):
        """Reuse variables for the rest of this scope's block."""
        self.reuse = True

    def __repr__(self):
        return "<sf.VariableScope '%s' reuse=%r>" % (self.name, self.reuse)


def _stack(g):
    if not hasattr(g, "_variable_scopes"):
        g._variable_scopes = [VariableScope("", False)]
        g._variable_store = {}
    return g._variable_scopes


def get_variable_scope():
    """The innermost variable scope (the root one, named "", outside any)."""
    return _stack(get_default_graph())[-1]


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                   reuse=None, dtype=None, use_resource=None, constraint=None,
                   auxiliary_name_scope=True):
    """Enters a variable scope (and a name scope of the same name); see the module's text.
    `name_or_scope` may be a VariableScope (re-entered by its full name). `initializer`,
    `regularizer`, `partitioner` (shardflow/partitioned_variables.py) and `dtype` are the
    defaults of get_variable inside (inherited by inner scopes); `custom_getter(getter, name,
    *args, **kwargs)` wraps get_variable inside (nested getters compose, as TF1).
    `caching_device`, `use_resource` and `constraint` are accepted (resource variables always;
    no caching devices; constraints are not applied)."""
    g = get_default_graph()
    stack = _stack(g)
    outer = stack[-1]
    counts = g.__dict__.setdefault("_variable_scope_counts", {})
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
        inherit = name_or_scope.reuse
        name_scope = full.rsplit("/", 1)[-1]
    else:
        name = name_or_scope if name_or_scope is not None else default_name
        if not name:
            raise ValueError("variable_scope needs a name (or default_name)")
        if name_or_scope is None and reuse is not True:
            name = _unique_scope_name(outer.name, default_name, counts)
        full = outer.name + "/" + name if outer.name else name
        inherit = outer.reuse
        name_scope = (full.rsplit("/", 1)[-1] if name_or_scope is not None
                      else default_name)
    if reuse is None or reuse is False:
        reuse = True if inherit is True else (inherit if inherit == AUTO_REUSE else False)
    if isinstance(name_or_scope, VariableScope):
        initializer = initializer or name_or_scope.initializer
        regularizer = regularizer or name_or_scope.regularizer
        partitioner = partitioner or name_or_scope.partitioner
        dtype = dtype or name_or_scope.dtype
    getter = outer.custom_getter
    if custom_getter is not None:
        if not callable(custom_getter):
            raise ValueError("custom_getter must be callable, got %r" % (custom_getter,))
        if getter is not None:
            inner_getter, outer_getter = custom_getter, getter

            def getter(get, *args, **kwargs):  # the inner scope's getter wraps the outer's
                return inner_getter(lambda *a, **k: outer_getter(get, *a, **k), *args, **kwargs)
        else:
            getter = custom_getter
    scope = VariableScope(full, reuse, initializer or outer.initializer,
                          regularizer or outer.regularizer, partitioner or outer.partitioner,
                          getter, dtype or outer.dtype)
    # Unnamed layers are counted afresh in each entry of a scope (Note [Layer variables and
    # variable scopes] in shardflow/layers.py).
    g.__dict__.setdefault("_layer_name_counts", {})[full] = {}
    # Note [Default scope names]: how often each scope was entered, so that default names
    # count up (block, block_1, ...) and start again inside each entry of the enclosing scope.
    counts[full] = counts.get(full, 0) + 1
    saved = dict(counts) if isinstance(name_or_scope, VariableScope) else None
    if not auxiliary_name_scope:
        name_scope = g._name_scope + "/" if g._name_scope else None
    stack.append(scope)
    try:
        with g.name_scope(name_scope) as opened:
            if auxiliary_name_scope and not isinstance(name_or_scope, VariableScope):
                scope.original_name_scope = opened
            yield scope
    finally:
        stack.pop()
        if saved is not None:
            counts.clear()
            counts.update(saved)
        else:
            for k in counts:
                if k.startswith(full + "/"):
                    counts[k] = 0


def _unique_scope_name(outer, default_name, counts):
    """`default_name`, or default_name_1, _2, ...: the first not yet entered in this entry of
    the variable scope `outer` (Note [Default scope names])."""
    prefix = outer + "/" if outer else ""
    name, i = default_name, 0
    while counts.get(prefix + name, 0) > 0:
        i += 1
        name = "%s_%d" % (default_name, i)
    return name


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=True, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """The variable "<scope>/<name>": created (from `initializer`, else the scope's, else
    Glorot uniform for floats and zeros otherwise) or, when the scope reuses, the existing one.

    `regularizer` (else the scope's): a function of the new variable whose result, unless
    None, goes to GraphKeys.REGULARIZATION_LOSSES, as in TF1 (on creation only, not on reuse).
    `partitioner` (else the scope's): a PartitionedVariable of parts "<name>/part_<i>"
    (shardflow/partitioned_variables.py). `custom_getter` (and the scopes'): called as
    getter(get_variable, name, shape=..., ...) instead. `caching_device`, `validate_shape`,
    `synchronization`, `aggregation` are accepted (no effect here). `constraint`: a function
    of the variable's value giving its projected value, which optimizers assign after each
    update (as TF1's), e.g. ``lambda w: sf.clip_by_norm(w, 1.0, axes=[0])``.
    """
    if constraint is not None and not callable(constraint):
        raise ValueError("get_variable: constraint must be a function, not %r" % (constraint,))
    scope = _stack(get_default_graph())[-1]
    kwargs = dict(shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                  trainable=trainable, collections=collections, partitioner=partitioner)
    getters = [g for g in (scope.custom_getter, custom_getter) if g is not None]
    if not getters:
        return _constrained(_get_variable(name, **kwargs), constraint)
    get = _get_variable
    for getter in getters:  # the call's own getter innermost, the scopes' around it

        def get(n, *args, _getter=getter, _get=get, **kw):
            return _getter(_get, n, *args, **kw)
    return _constrained(get(name, **kwargs), constraint)


def _constrained(variable, constraint):
    """`variable` carrying `constraint` (a variable found again keeps the one it has)."""
    if constraint is not None and getattr(variable, "constraint", None) is None and \
            hasattr(variable, "_read_after"):
        variable.constraint = constraint
    return variable


def _get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                  trainable=True, collections=None, partitioner=None, _part=False):
    """get_variable's work; `_part`: a part of a partitioned variable (never partitioned)."""
    from shardflow.variables import Variable
    g = get_default_graph()
    scope = _stack(g)[-1]
    if dtype is None:
        dtype = scope.dtype
    if partitioner is None and not _part:
        partitioner = scope.partitioner
    if partitioner is not None and not _part:
        return _get_partitioned(name, shape, dtype, initializer, regularizer, trainable,
                                collections, partitioner)
    full = scope.name + "/" + name if scope.name else name
    # In a while_loop's function the variable is made (or found) in the outermost graph, as
    # TF1 lifts a loop's variables out of it.
    g = g._outermost() if hasattr(g, "_outermost") else g
    _stack(g)
    store = g._variable_store
    if full in store:
        if scope.reuse is False:
            raise ValueError(
                "Variable %s already exists, disallowed. Did you mean to set reuse=True or "
                "reuse=sf.AUTO_REUSE in variable_scope?" % full)
        v = store[full]
        if shape is not None and v.shape.as_list() != list(shape):
            raise ValueError("Trying to share variable %s, but specified shape %s and found "
                             "shape %s." % (full, list(shape), v.shape.as_list()))
        return v
    if scope.reuse is True:
        raise ValueError("Variable %s does not exist, or was not created with get_variable(). "
                         "Did you mean to set reuse=sf.AUTO_REUSE in variable_scope?" % full)
    dt = dtypes.as_dtype(dtype or dtypes.float32)
    init = initializer if initializer is not None else scope.initializer
    from shardflow.framework import Tensor
    if initializer is not None and (isinstance(initializer, Tensor) or
                                    not callable(initializer)):
        # A constant or tensor initializer: its value (and, for float32, the default, its
        # dtype: TF1 makes an int32 variable from [1, 2]); no shape besides its own.
        if shape is not None and isinstance(initializer, Tensor):
            raise ValueError("get_variable('%s'): the initializer is a tensor, so do not give "
                             "a shape" % full)
        if dt == dtypes.float32:
            dt = initializer.dtype if isinstance(initializer, Tensor) else \
                dtypes.as_dtype(_constant_dtype(initializer))
    if init is None:
        init = glorot_uniform_initializer() if dt.is_floating else zeros_initializer()
    if callable(init) and not hasattr(init, "shape"):
        if shape is None:
            raise ValueError("get_variable('%s') needs a shape to use its initializer" % full)
        prefix = scope.name + "/" if scope.name else None
        # As TF1's init_scope: the initial value depends on no control_dependencies around.
        with g.as_default(), g.control_dependencies(None), g.name_scope(prefix):
            value = init(list(shape), dt)
    elif isinstance(init, Tensor):
        from shardflow import ops
        value = init if init.dtype == dt else ops.cast(init, dt)
    else:
        value = np.asarray(init, dtype=dt.as_numpy_dtype)
        if shape is not None:
            value = np.broadcast_to(value, list(shape)).copy()
    prefix = scope.name + "/" if scope.name else None
    with g.as_default(), g.control_dependencies(None), g.name_scope(prefix):
        v = Variable(value, name=name, trainable=trainable, dtype=dt, collections=collections)
    store[full] = v
    if regularizer is None:
        regularizer = scope.regularizer
    if regularizer is not None:
        from shardflow.regularizers import add_regularization_loss
        add_regularization_loss(v, regularizer)
    return v


def _constant_dtype(value):
    """The dtype TF1 gives a constant: NumPy's for arrays and NumPy scalars; int32 for Python
    ints, float32 for Python floats."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    array = np.asarray(value)
    if array.dtype.kind in "iu":
        return np.int32
    if array.dtype.kind == "f":
        return np.float32
    return array.dtype


def _get_partitioned(name, shape, dtype, initializer, regularizer, trainable, collections,
                     partitioner):
    """get_variable with a partitioner: the parts are ordinary variables (made or reused as
    above), the PartitionedVariable is kept in the graph's store beside them."""
    from shardflow.partitioned_variables import create_partitioned_variable
    g = get_default_graph()
    scope = _stack(g)[-1]
    full = scope.name + "/" + name if scope.name else name
    outer = g._outermost() if hasattr(g, "_outermost") else g
    _stack(outer)
    partitioned = outer.__dict__.setdefault("_partitioned_store", {})
    if full in partitioned and scope.reuse is not False:
        pv = partitioned[full]
        if shape is not None and list(shape) != pv.shape.as_list():
            raise ValueError("Trying to share partitioned variable %s, but specified shape %s "
                             "and found shape %s." % (full, list(shape), pv.shape.as_list()))
        return pv
    if shape is None:
        raise ValueError("get_variable('%s') with a partitioner needs a shape" % full)
    dt = dtypes.as_dtype(dtype or dtypes.float32)
    prefix = name.rsplit("/", 1)[0] + "/" if "/" in name else ""

    def make_part(part_name, part_shape, part_init):
        return _get_variable(prefix + part_name, shape=part_shape, dtype=dt,
                             initializer=part_init, regularizer=regularizer,
                             trainable=trainable, collections=collections, _part=True)
    # The parts live under the variable's own name: "<scope>/<name>/part_<i>".
    pv = create_partitioned_variable(make_part, full, shape, dt, partitioner, initializer)
    partitioned[full] = pv
    return pv


# ---- initializers: callables (shape, dtype) -> tensor, as TF1's ------------------------------


def _initializer(build):
    def make(*args, **kwargs):
        def init(shape, dtype=dtypes.float32, partition_info=None):
            return build(list(shape), dtypes.as_dtype(dtype), *args, **kwargs)
        return init
    return make


@_initializer
def zeros_initializer(shape, dtype):
    from shardflow import ops
    return ops.zeros(shape, dtype=dtype)


@_initializer
def ones_initializer(shape, dtype):
    from shardflow import ops
    return ops.ones(shape, dtype=dtype)


@_initializer
def constant_initializer(shape, dtype, value=0):
    from shardflow import ops
    value = np.asarray(value, dtype.as_numpy_dtype)
    if value.size == 1:   # a large shape is a Fill (ops.constant), not every element
        return ops.constant(value.reshape(()), dtype=dtype, shape=shape)
    n = int(np.prod(shape))
    if 0 < value.size <= n:
        # TF1's: the values in order, the last one repeated to fill the shape.
        flat = np.concatenate([value.ravel(), np.repeat(value.ravel()[-1:], n - value.size)])
        return ops.constant(flat.reshape(shape))
    raise ValueError("constant_initializer: %d values do not fit shape %s (at most %d)"
                     % (value.size, list(shape), n))


@_initializer
def truncated_normal_initializer(shape, dtype, mean=0.0, stddev=1.0, seed=None):
    from shardflow import ops
    return ops.truncated_normal(shape, mean=mean, stddev=stddev, dtype=dtype, seed=seed)


@_initializer
def random_normal_initializer(shape, dtype, mean=0.0, stddev=1.0, seed=None):
    from shardflow import ops
    return ops.random_normal(shape, mean=mean, stddev=stddev, dtype=dtype, seed=seed)


@_initializer
def random_uniform_initializer(shape, dtype, minval=0.0, maxval=None, seed=None):
    from shardflow import ops
    return ops.random_uniform(shape, minval, 1.0 if maxval is None else maxval, dtype=dtype,
                              seed=seed)


def _fans(shape):
    if len(shape) < 2:
        return shape[0] if shape else 1, shape[0] if shape else 1
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


@_initializer
def glorot_uniform_initializer(shape, dtype, seed=None):
    from shardflow import ops
    fan_in, fan_out = _fans(shape)
    limit = float(np.sqrt(6.0 / (fan_in + fan_out)))
    return ops.random_uniform(shape, -limit, limit, dtype=dtype, seed=seed)


@_initializer
def glorot_normal_initializer(shape, dtype, seed=None):
    from shardflow import ops
    fan_in, fan_out = _fans(shape)
    return ops.truncated_normal(shape, stddev=float(np.sqrt(2.0 / (fan_in + fan_out))),
                                dtype=dtype, seed=seed)


@_initializer
def variance_scaling_initializer(shape, dtype, scale=1.0, mode="fan_in",
                                 distribution="truncated_normal", seed=None):
    from shardflow import ops
    fan_in, fan_out = _fans(shape)
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[mode]
    if distribution in ("uniform",):
        limit = float(np.sqrt(3.0 * scale / n))
        return ops.random_uniform(shape, -limit, limit, dtype=dtype, seed=seed)
    stddev = float(np.sqrt(scale / n)) / (0.87962566103423978
                                          if distribution == "truncated_normal" else 1.0)
    return ops.truncated_normal(shape, stddev=stddev, dtype=dtype, seed=seed)


@_initializer
def orthogonal_initializer(shape, dtype, gain=1.0, seed=None):
    """TF1's tf.orthogonal_initializer (tf.initializers.orthogonal): a random orthogonal
    matrix times `gain`; a shape of rank > 2 is [..., n] flattened to [prod(...), n], whose
    rows (or columns, if fewer) are orthonormal. The matrix is drawn with NumPy (QR of a
    normal matrix, signs fixed as TF does) when the graph is built, from `seed` when given,
    and kept in the graph as a constant: every run of the initializer gives the same value."""
    from shardflow import ops
    if len(shape) < 2:
        raise ValueError("orthogonal_initializer needs a shape of rank >= 2, got %r" % (shape,))
    if not dtype.is_floating:
        raise TypeError("orthogonal_initializer: dtype must be floating, not %s" % dtype.name)
    rows, cols = int(np.prod(shape[:-1])), int(shape[-1])
    rng = np.random.RandomState(seed)
    a = rng.normal(size=(max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    value = (float(gain) * q).reshape(shape).astype(dtype.as_numpy_dtype)
    return ops.constant(value)


__all__ = [
    "AUTO_REUSE", "VariableScope", "constant_initializer", "get_variable", "get_variable_scope",
    "glorot_normal_initializer", "glorot_uniform_initializer", "ones_initializer",
    "orthogonal_initializer",
    "random_normal_initializer", "random_uniform_initializer", "truncated_normal_initializer",
    "variable_scope", "variance_scaling_initializer", "zeros_initializer",
]
