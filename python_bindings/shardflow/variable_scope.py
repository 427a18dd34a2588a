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

    def set_dtype(self, dtype):
        self.dtype = dtype

    def set_custom_getter(self, custom_getter):
        self.custom_getter = custom_getter

    def set_caching_device(self, caching_device):
        """Accepted (no caching devices here)."""

    def set_use_resource(self, use_resource):
        """Accepted (every variable is a resource variable)."""

    def reuse_variables(self):
        """Reuse variables for the rest of this scope's block."""
        self.reuse = True

    def get_collection(self, name):
        """The collection `name`'s items under this scope ("<scope>/..."), as TF1's."""
        from shardflow.framework import get_collection
        return get_collection(name, self.name + "/" if self.name else None)

    def global_variables(self):
        """The global variables made under this scope (``scope.trainable_variables()`` for a
        GAN's discriminator, say)."""
        from shardflow.framework import GraphKeys
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def trainable_variables(self):
        from shardflow.framework import GraphKeys
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def local_variables(self):
        from shardflow.framework import GraphKeys
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

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
    (shardflow/partitioned_variables.py). `custom_getter` (else the scopes'): called as
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
    # The call's own custom_getter replaces the scopes', as TF1's VariableScope.get_variable.
    getter = custom_getter if custom_getter is not None else scope.custom_getter
    if getter is None:
        return _constrained(_get_variable(name, **kwargs), constraint)
    # As TF1's, a custom getter sees the variable's full name ("net/fc/kernel") and hands a
    # full name to the getter it wraps.
    prefix = scope.name + "/" if scope.name else ""

    def true_getter(full_name, *args, **kw):
        relative = full_name[len(prefix):] if full_name.startswith(prefix) else full_name
        return _get_variable(relative, *args, **kw)
    return _constrained(getter(true_getter, prefix + name, **kwargs), constraint)


def _constrained(variable, constraint):
    """`variable` carrying `constraint` (a variable found again keeps the one it has)."""
    if constraint is not None and getattr(variable, "constraint", None) is None and \
            hasattr(variable, "_read_after"):
        variable.constraint = constraint
    return variable


def _get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                  trainable=True, collections=None, partitioner=None, _part=False,
                  _partition_info=None):
    """get_variable's work; `_part`: a part of a partitioned variable (never partitioned),
    `_partition_info` (a _PartitionInfo) where it lies in the whole, for its initializer."""
    from shardflow.variables import Variable
    g = get_default_graph()
    scope = _stack(g)[-1]
    shape = _as_dims(shape)
    explicit_dtype = None if _part else dtype   # the caller's, not the scope's
    if dtype is None:
        dtype = scope.dtype
    if partitioner is None and not _part:
        partitioner = scope.partitioner
    if partitioner is not None and not _part and not (shape is not None and
                                                     len(shape) == 0):   # TF1: no scalars
        return _get_partitioned(name, shape, dtype, initializer, regularizer, trainable,
                                collections, partitioner, explicit_dtype)
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
        if shape is not None and not _compatible(shape, v.shape.as_list()):
            raise ValueError("Trying to share variable %s, but specified shape %s and found "
                             "shape %s." % (full, list(shape), v.shape.as_list()))
        if dtype is not None and dtypes.as_dtype(dtype) != v.dtype:
            raise ValueError("Trying to share variable %s, but specified dtype %s and found "
                             "dtype %s." % (full, dtypes.as_dtype(dtype).name, v.dtype.name))
        return v
    if scope.reuse is True:
        raise ValueError("Variable %s does not exist, or was not created with get_variable(). "
                         "Did you mean to set reuse=sf.AUTO_REUSE in variable_scope?" % full)
    dt = dtypes.as_dtype(dtype or dtypes.float32)
    init = initializer if initializer is not None else scope.initializer
    from shardflow.framework import Tensor
    if initializer is not None and (isinstance(initializer, Tensor) or
                                    not callable(initializer)):
        # A constant or tensor initializer: its value and its dtype (TF1 makes an int32
        # variable from [1, 2]); no shape besides its own.
        if shape is not None and isinstance(initializer, Tensor):
            raise ValueError("get_variable('%s'): the initializer is a tensor, so do not give "
                             "a shape" % full)
        if not _part:   # (a part takes its partitioned variable's dtype)
            dt = _value_dtype(full, initializer, explicit_dtype)
    if init is None:
        init = glorot_uniform_initializer() if dt.is_floating else zeros_initializer()
    if isinstance(init, type):   # initializer=sf.zeros_initializer: TF1 makes one
        init = init()
    if callable(init) and not hasattr(init, "shape"):
        if shape is None:
            raise ValueError("get_variable('%s') needs a shape to use its initializer" % full)
        if None in shape:
            raise ValueError("Shape of a new variable (%s) must be fully defined, but instead "
                             "was %s." % (full, shape))
        prefix = scope.name + "/" if scope.name else None
        dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
        # As TF1's init_scope: the initial value depends on no control_dependencies around.
        with g.as_default(), g.control_dependencies(None), g.name_scope(prefix):
            value = _call_initializer(init, dims, dt, _partition_info)
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


def _as_dims(shape):
    """get_variable's shape as a list of ints and Nones (None: no shape; an int: [int], as
    TF1's TensorShape(3)); ValueError for a shape of unknown rank."""
    if shape is None:
        return None
    if hasattr(shape, "as_list"):
        if getattr(shape, "ndims", 0) is None:
            raise ValueError("get_variable: the shape has an unknown rank")
        shape = shape.as_list()
    if isinstance(shape, (int, np.integer)):
        return [int(shape)]
    dims = []
    for d in shape:
        d = getattr(d, "value", d)   # a Dimension
        dims.append(None if d is None else int(d))
    return dims


def _compatible(given, found):
    """Whether the shape given to get_variable fits the variable's (None: any size)."""
    return len(given) == len(found) and all(
        a is None or b is None or a == b for a, b in zip(given, found))


def _call_initializer(init, shape, dtype, partition_info):
    """init(shape, dtype), with partition_info=... for a part of a partitioned variable, as
    TF1 calls initializers, when `init` takes it (a function of (shape, dtype) still works)."""
    if partition_info is not None and _takes_partition_info(init):
        return init(shape, dtype, partition_info=partition_info)
    return init(shape, dtype)


def _takes_partition_info(function):
    import inspect
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "partition_info" or p.kind == p.VAR_KEYWORD for p in parameters)


def _value_dtype(full, initializer, explicit_dtype):
    """The dtype of a variable made from a value (a constant or a tensor): the value's, as
    TF1's; a dtype given with it must be that one (TF1's ValueError: np.zeros(3) is float64,
    [1, 2] int32)."""
    from shardflow.framework import Tensor
    have = initializer.dtype if isinstance(initializer, Tensor) else \
        dtypes.as_dtype(_constant_dtype(initializer))
    if explicit_dtype is not None and dtypes.as_dtype(explicit_dtype) != have:
        raise ValueError("Initializer type '%s' and explicit dtype '%s' don't match (variable "
                         "%s; convert the value, e.g. np.asarray(value, np.float32))"
                         % (have.name, dtypes.as_dtype(explicit_dtype).name, full))
    return have


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
                     partitioner, explicit_dtype=None):
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
        if shape is not None and not _compatible(shape, pv.shape.as_list()):
            raise ValueError("Trying to share partitioned variable %s, but specified shape %s "
                             "and found shape %s." % (full, list(shape), pv.shape.as_list()))
        return pv
    if shape is None:
        raise ValueError("get_variable('%s') with a partitioner needs a shape" % full)
    dt = dtypes.as_dtype(dtype or dtypes.float32)
    if initializer is not None and not callable(initializer):
        dt = _value_dtype(full, initializer, explicit_dtype)
    prefix = name.rsplit("/", 1)[0] + "/" if "/" in name else ""

    def make_part(part_name, part_shape, part_init, part_offset):
        return _get_variable(prefix + part_name, shape=part_shape, dtype=dt,
                             initializer=part_init, regularizer=regularizer,
                             trainable=trainable, collections=collections, _part=True,
                             _partition_info=_PartitionInfo(shape, part_offset))
    # The parts live under the variable's own name: "<scope>/<name>/part_<i>".
    pv = create_partitioned_variable(make_part, full, shape, dt, partitioner, initializer)
    partitioned[full] = pv
    return pv


# ---- initializers: TF1's init_ops classes ------------------------------------------------


class _PartitionInfo:
    """What get_variable tells the initializer of one part of a partitioned variable (TF1's
    _PartitionInfo): the whole's shape and the part's offset in it. Fan-scaled initializers
    (Glorot, variance scaling) scale by the whole's shape, as TF1's."""

    def __init__(self, full_shape, var_offset):
        if hasattr(full_shape, "as_list"):
            full_shape = full_shape.as_list()
        self.full_shape = [int(d) for d in full_shape]
        self.var_offset = [int(d) for d in var_offset]

    def single_offset(self, shape):
        """The offset along the one split dimension."""
        axis = self.single_slice_dim(shape)
        return 0 if axis is None else self.var_offset[axis]

    def single_slice_dim(self, shape):
        """The dimension along which the part is a slice (None when it is the whole)."""
        for i, (d, full) in enumerate(zip(shape, self.full_shape)):
            if int(d) != full:
                return i
        return None


class _Initializer:
    """TF1's init_ops.Initializer: made with its options and a default dtype, called as
    ``init(shape, dtype=None, partition_info=None)`` for the initial value (a tensor).
    get_variable also takes the class itself (``initializer=sf.zeros_initializer``)."""

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    _random = True   # draws random numbers (Zeros, Ones, Constant and Orthogonal do not)

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = [int(d) for d in (shape.as_list() if hasattr(shape, "as_list") else shape)]
        dtype = dtypes.as_dtype(dtype or self.dtype)
        if self._random and dtype in (dtypes.float16, dtypes.bfloat16):
            # The engine's random ops draw float32 and float64: a half-precision variable's
            # initial value is drawn in float32 and cast (TF1 draws in half directly).
            from shardflow import ops
            return ops.cast(self._build(dims, dtypes.float32, partition_info), dtype)
        return self._build(dims, dtype, partition_info)

    def _build(self, shape, dtype, partition_info):
        raise NotImplementedError

    def get_config(self):
        return {k: (v.name if isinstance(v, dtypes.DType) else v)
                for k, v in self.__dict__.items()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Zeros(_Initializer):
    """TF1's tf.zeros_initializer."""

    _random = False

    def _build(self, shape, dtype, partition_info):
        from shardflow import ops
        return ops.zeros(shape, dtype=dtype)


class Ones(_Initializer):
    """TF1's tf.ones_initializer."""

    _random = False

    def _build(self, shape, dtype, partition_info):
        from shardflow import ops
        return ops.ones(shape, dtype=dtype)


class Constant(_Initializer):
    """TF1's tf.constant_initializer: `value` (a scalar fills the shape; a list gives the
    values in order, the last one repeated to fill it, unless verify_shape)."""

    _random = False

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        super().__init__(dtype)
        self.value = value
        self.verify_shape = bool(verify_shape)

    def _build(self, shape, dtype, partition_info):
        from shardflow import ops
        value = np.asarray(self.value, dtype.as_numpy_dtype)
        if self.verify_shape and list(value.shape) != list(shape):
            raise TypeError("constant_initializer: expected a value of shape %s, got %s "
                            "(verify_shape=True)" % (list(shape), list(value.shape)))
        if value.size == 1:   # a large shape is a Fill (ops.constant), not every element
            return ops.constant(value.reshape(()), dtype=dtype, shape=shape)
        n = int(np.prod(shape))
        if 0 < value.size <= n:
            # TF1's: the values in order, the last one repeated to fill the shape.
            flat = np.concatenate([value.ravel(),
                                   np.repeat(value.ravel()[-1:], n - value.size)])
            return ops.constant(flat.reshape(shape))
        raise ValueError("constant_initializer: %d values do not fit shape %s (at most %d)"
                         % (value.size, list(shape), n))


class RandomUniform(_Initializer):
    """TF1's tf.random_uniform_initializer: uniform in [minval, maxval) (maxval None: 1)."""

    def __init__(self, minval=0, maxval=None, seed=None, dtype=dtypes.float32):
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def _build(self, shape, dtype, partition_info):
        from shardflow import ops
        return ops.random_uniform(shape, self.minval, 1.0 if self.maxval is None else
                                  self.maxval, dtype=dtype, seed=self.seed)


class RandomNormal(_Initializer):
    """TF1's tf.random_normal_initializer."""

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def _build(self, shape, dtype, partition_info):
        from shardflow import ops
        return ops.random_normal(shape, mean=self.mean, stddev=self.stddev, dtype=dtype,
                                 seed=self.seed)


class TruncatedNormal(RandomNormal):
    """TF1's tf.truncated_normal_initializer: normal, redrawn beyond two stddevs."""

    def _build(self, shape, dtype, partition_info):
        from shardflow import ops
        return ops.truncated_normal(shape, mean=self.mean, stddev=self.stddev, dtype=dtype,
                                    seed=self.seed)


def _fans(shape):
    if len(shape) < 2:
        return shape[0] if shape else 1, shape[0] if shape else 1
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


# scipy.stats.truncnorm.std(a=-2, b=2): a normal cut at two stddevs has this stddev.
_TRUNCATED_STDDEV = 0.87962566103423978


class VarianceScaling(_Initializer):
    """TF1's tf.variance_scaling_initializer: variance scale / n, n the fan in, out or their
    mean ("fan_avg") of the shape (of the whole, for a part of a partitioned variable);
    "truncated_normal" (or "normal") draws a truncated normal whose stddev after truncation is
    sqrt(scale / n), "untruncated_normal" a normal, "uniform" uniform in +-sqrt(3 scale / n)."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=dtypes.float32):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float.")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError("Invalid `mode` argument: %r" % (mode,))
        distribution = distribution.lower()
        if distribution not in ("normal", "uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError("Invalid `distribution` argument: %r" % (distribution,))
        super().__init__(dtype)
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def _build(self, shape, dtype, partition_info):
        from shardflow import ops
        fan_in, fan_out = _fans(partition_info.full_shape if partition_info is not None
                                else shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[
            self.mode]
        scale = float(self.scale) / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            return ops.truncated_normal(shape, stddev=float(np.sqrt(scale)) / _TRUNCATED_STDDEV,
                                        dtype=dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return ops.random_normal(shape, stddev=float(np.sqrt(scale)), dtype=dtype,
                                     seed=self.seed)
        limit = float(np.sqrt(3.0 * scale))
        return ops.random_uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)


class GlorotUniform(VarianceScaling):
    """TF1's tf.glorot_uniform_initializer: uniform in +-sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """TF1's tf.glorot_normal_initializer: a truncated normal of stddev (after truncation)
    sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


class Orthogonal(_Initializer):
    """TF1's tf.orthogonal_initializer (tf.initializers.orthogonal): a random orthogonal
    matrix times `gain`; a shape of rank > 2 is [..., n] flattened to [prod(...), n], whose
    rows (or columns, if fewer) are orthonormal. The matrix is drawn with NumPy (QR of a
    normal matrix, signs fixed as TF does) when the graph is built, from `seed` when given,
    and kept in the graph as a constant: every run of the initializer gives the same value."""

    _random = False

    def __init__(self, gain=1.0, seed=None, dtype=dtypes.float32):
        super().__init__(dtype)
        self.gain, self.seed = gain, seed

    def _build(self, shape, dtype, partition_info):
        from shardflow import ops
        if len(shape) < 2:
            raise ValueError("orthogonal_initializer needs a shape of rank >= 2, got %r"
                             % (shape,))
        if not dtype.is_floating:
            raise TypeError("orthogonal_initializer: dtype must be floating, not %s"
                            % dtype.name)
        rows, cols = int(np.prod(shape[:-1])), int(shape[-1])
        rng = np.random.RandomState(self.seed)
        a = rng.normal(size=(max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q *= np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        value = (float(self.gain) * q).reshape(shape).astype(dtype.as_numpy_dtype)
        return ops.constant(value)


# TF1's names (tf.zeros_initializer and the others are these classes).
zeros_initializer, ones_initializer, constant_initializer = Zeros, Ones, Constant
random_uniform_initializer, random_normal_initializer = RandomUniform, RandomNormal
truncated_normal_initializer, variance_scaling_initializer = TruncatedNormal, VarianceScaling
glorot_uniform_initializer, glorot_normal_initializer = GlorotUniform, GlorotNormal
orthogonal_initializer = Orthogonal


__all__ = [
    "AUTO_REUSE", "VariableScope", "constant_initializer", "get_variable", "get_variable_scope",
    "glorot_normal_initializer", "glorot_uniform_initializer", "ones_initializer",
    "orthogonal_initializer",
    "random_normal_initializer", "random_uniform_initializer", "truncated_normal_initializer",
    "variable_scope", "variance_scaling_initializer", "zeros_initializer",
]
