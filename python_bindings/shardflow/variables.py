"""Variables: state that persists across the steps of a session, and their initial values.

Example::

    w = sf.Variable(sf.initializers.glorot_uniform(seed=1), shape=[784, 10], name="w")
    b = sf.Variable(np.zeros(10, np.float32), name="b")
    logits = x @ w + b
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        sess.run(w.assign(np.ones((784, 10), np.float32)))
"""

import numpy as np

from shardflow import dtypes
from shardflow.framework import (GraphKeys, Tensor, _FuncGraph, _TensorOperators, _literal,
                                 _plain_dims, _to_input, get_default_graph)


class Initializer:
    """An initial value computed in the graph from a shape and dtype (see sf.initializers).
    Called as TF1's initializers: ``init(shape, dtype=None, partition_info=None)``; `dtype`
    defaults to the one it was made with."""

    # The variance-scaling form of the fan-scaled kinds: (scale, mode, distribution).
    _SCALING = {"glorot_uniform": (1.0, "fan_avg", "uniform"),
                "glorot_normal": (1.0, "fan_avg", "truncated_normal"),
                "he_uniform": (2.0, "fan_in", "uniform"),
                "he_normal": (2.0, "fan_in", "truncated_normal")}

    def __init__(self, kind, seed=0, value=0.0, dtype=dtypes.float32, mean=0.0):
        self.kind = kind
        self.seed = int(seed or 0)
        array = np.asarray(value)
        # A list of values (tf.initializers.constant([1, 2, 3])) is built in Python.
        self.value = float(value) if array.size == 1 and array.dtype.kind in "biuf" else value
        self.dtype = dtypes.as_dtype(dtype)
        self.mean = float(mean)

    def __call__(self, shape, dtype=None, name=None, partition_info=None):
        from shardflow import ops
        from shardflow.ops import _op_seed
        from shardflow.variable_scope import Constant, VarianceScaling
        g = get_default_graph()
        dtype = dtypes.as_dtype(dtype or self.dtype)
        if self.kind == "constant" and not isinstance(self.value, float):
            with g.name_scope(name or self.kind):
                return Constant(self.value)(shape, dtype)
        if partition_info is not None and self.kind in self._SCALING:
            # A part of a partitioned variable: scaled by the whole's fans, as TF1's.
            scaling = VarianceScaling(*self._SCALING[self.kind], seed=self.seed or None)
            with g.name_scope(name or self.kind):
                return scaling(shape, dtype, partition_info=partition_info)
        # Without a seed of its own, one derived from the graph's (tf.set_random_seed), as
        # every random op: the same program starts from the same weights.
        random = self.kind not in ("zeros", "constant")
        seed = _op_seed(self.seed) if random else self.seed
        # The engine's random ops draw float32 and float64: half precision is drawn in float32.
        draw = dtypes.float32 if random and dtype in (dtypes.float16, dtypes.bfloat16) else dtype
        with g.name_scope(name or self.kind):
            ref = g._handle.initializer(self.kind, _plain_dims(shape), seed, draw._enum,
                                        self.value, g._ctx())
            value = g.get_operation_by_name(ref.node).outputs[ref.index]
            if self.mean:
                value = ops.add(value, ops.constant(self.mean, dtype=draw))
            if draw != dtype:
                value = ops.cast(value, dtype)
        return value

    def __repr__(self):
        return "sf.initializers.%s(seed=%d)" % (self.kind, self.seed)


class initializers:  # noqa: N801 (a namespace, spelled like TensorFlow's module)
    """Initial values for variables and layers, with TF 1.15's tf.initializers signatures.

    Example::

        sf.Variable(sf.initializers.he_normal(seed=3), shape=[5, 5, 1, 32])
    """

    @staticmethod
    def zeros(dtype=dtypes.float32):
        return Initializer("zeros", dtype=dtype)

    @staticmethod
    def constant(value=0, dtype=dtypes.float32, verify_shape=False):
        if verify_shape:
            from shardflow.variable_scope import Constant
            return Constant(value, dtype=dtype, verify_shape=True)
        return Initializer("constant", value=value, dtype=dtype)

    @staticmethod
    def glorot_uniform(seed=None, dtype=dtypes.float32):
        return Initializer("glorot_uniform", seed, dtype=dtype)

    @staticmethod
    def glorot_normal(seed=None, dtype=dtypes.float32):
        return Initializer("glorot_normal", seed, dtype=dtype)

    @staticmethod
    def he_uniform(seed=None):
        return Initializer("he_uniform", seed)

    @staticmethod
    def he_normal(seed=None):
        return Initializer("he_normal", seed)

    @staticmethod
    def truncated_normal(mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        """TF1's argument order: mean first (tf.initializers.truncated_normal(0.0, 0.02))."""
        return Initializer("truncated_normal", seed, value=stddev, dtype=dtype, mean=mean)

    @staticmethod
    def orthogonal(gain=1.0, seed=None, dtype=dtypes.float32):
        """A random orthogonal matrix times `gain` (sf.orthogonal_initializer)."""
        from shardflow.variable_scope import orthogonal_initializer
        return orthogonal_initializer(gain=gain, seed=seed)

    # TF1's tf.initializers also names the ops that initialise variables and tables.
    @staticmethod
    def global_variables():
        """The op that initialises every global variable (sf.global_variables_initializer)."""
        return global_variables_initializer()

    @staticmethod
    def local_variables():
        """The op that initialises the local variables (sf.local_variables_initializer)."""
        return local_variables_initializer()

    @staticmethod
    def variables(var_list, name="init"):
        """The op that initialises `var_list` (sf.variables_initializer)."""
        return variables_initializer(var_list, name=name)

    @staticmethod
    def tables(name="init_all_tables"):
        """The op that initialises the graph's lookup tables (sf.tables_initializer)."""
        return tables_initializer(name=name)


class Variable(_TensorOperators):
    """A tensor whose value persists across steps and that optimizers update.

    `initial_value` is a Tensor, an array-like, a callable returning one, or an Initializer
    (then `shape` is required). Use it like a tensor (``x @ w``); ``value()`` is the read.

    Example::

        v = sf.Variable(0.0, name="counter")
        inc = v.assign_add(1.0)
    """

    constraint = None   # applied by optimizers after each update (TF1's `constraint`)
    _hidden = False     # in no collection of variables (see __init__)

    def __init__(self, initial_value=None, trainable=None, collections=None,
                 validate_shape=True, caching_device=None, name=None, variable_def=None,
                 dtype=None, expected_shape=None, import_scope=None, constraint=None,
                 use_resource=None, synchronization=None, aggregation=None, shape=None):
        # TF1's signature and argument order (tf.Variable(0, False) is not trainable).
        # Every variable is a resource variable (use_resource); caching_device,
        # synchronization and aggregation change nothing in one process; validate_shape and
        # expected_shape are accepted.
        if variable_def is not None or import_scope is not None:
            raise NotImplementedError("Variable(variable_def=...): re-create variables from a "
                                      "MetaGraphDef with sf.train.import_meta_graph")
        if initial_value is None:
            raise ValueError("Variable needs an initial_value")
        trainable = True if trainable is None else bool(trainable)
        if constraint is not None and not callable(constraint):
            raise ValueError("Variable: constraint must be a function of the variable, not %r"
                             % (constraint,))
        self.constraint = constraint
        g = get_default_graph()
        outermost = getattr(g, "_outermost", None)
        if outermost is not None:
            # Created inside a while_loop's function: the variable lives outside the loop (as
            # in TF1) and the function captures its value.
            with outermost().as_default():
                self.__init__(initial_value, trainable=trainable, collections=collections,
                              name=name, dtype=dtype, constraint=constraint, shape=shape)
            return
        # A device function (sf.train.replica_device_setter) places the variable as a whole:
        # its handle, initial value, read and every later user go where it says.
        place_shape, place_dtype = shape, dtype
        if shape is None and not isinstance(initial_value, (Tensor, Initializer)) \
                and not callable(initial_value):
            literal = np.asarray(initial_value)
            place_shape = literal.shape
            place_dtype = dtype or (dtypes.string if literal.dtype.kind in "SUO"
                                    else dtypes.as_dtype(literal.dtype.name))
        elif shape is None and isinstance(initial_value, Tensor) and \
                initial_value.shape.is_fully_defined():
            # get_variable's initializer output, tf.zeros([...]): the strategy balancing the
            # ps tasks by bytes (GreedyLoadBalancingStrategy) needs the size.
            place_shape = initial_value.shape.as_list()
            place_dtype = dtype or initial_value.dtype
        device = g._device_for("VarHandleOp", name or "Variable", place_shape,
                               dtypes.as_dtype(place_dtype) if place_dtype is not None else None)
        # As TF1's init_scope: the initializer runs nothing of the control_dependencies open
        # here (a variable made under them, by a layer or a cell, initializes on its own).
        with g._device_scope(device), g.control_dependencies(None):
            self._build(g, initial_value, name, trainable, dtype, shape)
        self._device = device
        collections = list(collections) if collections is not None else [GraphKeys.GLOBAL_VARIABLES]
        self._local = GraphKeys.LOCAL_VARIABLES in collections
        # collections=[] (or only collections of one's own): in neither GLOBAL_VARIABLES nor
        # LOCAL_VARIABLES, so no Saver, global_variables_initializer() or global_variables()
        # sees it, as in TF1 (its preloaded-data pattern feeds the initializer itself).
        self._hidden = not self._local and GraphKeys.GLOBAL_VARIABLES not in collections
        for c in collections:
            if c != GraphKeys.GLOBAL_VARIABLES:
                g.add_to_collection(c, self)

    def _build(self, g, initial_value, name, trainable, dtype, shape):
        if isinstance(initial_value, Initializer):
            if shape is None:
                raise ValueError("a Variable initialised by %r needs a shape" % initial_value)
            initial_value = initial_value(shape, dtype or dtypes.float32,
                                          name=(name or "Variable") + "/initial_value")
        elif callable(initial_value):
            initial_value = initial_value()
        if not isinstance(initial_value, Tensor):
            if dtype is not None:
                initial_value = np.asarray(initial_value,
                                           dtype=dtypes.as_dtype(dtype).as_numpy_dtype)
            elif isinstance(initial_value, np.generic) and initial_value.dtype.kind in "fiub":
                initial_value = np.asarray(initial_value)   # np.float64(1.5) stays float64
            initial_value = _literal(initial_value)
            if shape is not None:
                initial_value = np.broadcast_to(initial_value, _plain_dims(shape)).copy()
        handle, read, init_name, shared_name = g._handle.create_variable(
            _to_input(g, initial_value), bool(trainable), g._ctx(name or "Variable"))
        self._attach(g, handle, read, init_name, shared_name, trainable)

    def _attach(self, g, handle, read, init_name, shared_name, trainable):
        """Points this Variable at the engine's variable and registers it with `g`."""
        self.graph = g
        # TF1's names: the variable "<name>:0" (its value), its op "<name>"; checkpoints and
        # shared state use the bare shared name.
        self._shared_name = shared_name
        self.name = shared_name + ":0"
        self.trainable = bool(trainable)
        self._handle_op = g._operation(handle.node, [handle])
        self._read = g._operation(read.node, [read]).outputs[0]
        self.initializer = g.get_operation_by_name(init_name)
        g._variables.append(self)

    @property
    def device(self):
        """The device the variable requests ('' = any)."""
        return self._device

    @property
    def op(self):
        """The variable's op (its handle; ``v.op.name`` is the name without ":0")."""
        return self._handle_op

    def get_shape(self):
        return self.shape

    @property
    def handle(self):
        """The VarHandleOp's output (a string scalar naming the variable)."""
        return self._handle_op.outputs[0]

    def value(self):
        """The variable's value in a step: its ReadVariableOp; under `control_dependencies` a
        read of its own that waits for them, as TF1's (``with tf.control_dependencies([update]):
        tf.identity(v)`` or ``v.read_value()`` is the value after the update; the shared read
        would have been taken before it). sf.gradients and minimize with respect to the variable
        count such reads too."""
        from shardflow.framework import get_default_graph
        g = get_default_graph()
        if not g._control_inputs:
            return self._read
        if g is not self.graph:
            if not isinstance(g, _FuncGraph) or not g._encloses(self.graph):
                return self._read
            # In a loop body or cond branch: a read there, after the dependencies (an assign
            # of the same body), through the captured handle; the body's own value, not
            # differentiated with respect to the variable (Note [Recomputing a function for
            # its gradient]).
            return self._new_read(g)
        value = self._new_read(g, self._handle_op.name + "/read_value")
        self.__dict__.setdefault("_extra_reads", []).append(value)
        return value

    def _new_read(self, g=None, name=None):
        """A ReadVariableOp of its own in `g` (default: the default graph), on the variable's
        device and of its shape: it runs after the control dependencies open there (the
        variable's own read is shared by every user, so no dependency orders it)."""
        from shardflow.framework import get_default_graph
        from shardflow.ops import _out
        g = g or get_default_graph()
        with g._device_scope(self._device):
            value = _out("ReadVariableOp", [self.handle], {"dtype": self.dtype._enum}, name)
            value.set_shape(self.shape)  # (a Reshape: with the read, on its device)
        return value

    read_value = value

    @property
    def dtype(self):
        return self._read.dtype

    @property
    def shape(self):
        return self._read.shape

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Sets the variable to `value`. As in TF1, the result is a tensor holding the new value
        (fetching it runs the assignment and returns the value); with read_value=False, the
        assignment op itself."""
        from shardflow.ops import _op
        self._note_assignment()
        with self.graph._device_scope(self._device):
            op = _op("AssignVariableOp", [self.handle, value], {"dtype": self.dtype._enum}, name)
        return self._read_after(op) if read_value else op

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        """Adds `delta` to the variable; the result as for assign."""
        from shardflow.ops import _op
        self._note_assignment()
        with self.graph._device_scope(self._device):
            op = _op("AssignAddVariableOp", [self.handle, delta], {"dtype": self.dtype._enum},
                     name)
        return self._read_after(op) if read_value else op

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        """Subtracts `delta` from the variable; the result as for assign."""
        from shardflow import ops
        return self.assign_add(ops.negative(delta), name=name, read_value=read_value)

    def _note_assignment(self):
        """Records on the loop bodies and branches being built that they change this variable:
        their reads of it are then taken afresh each call (Note [Variables read in a loop or
        branch] in shardflow/control_flow.py)."""
        g = get_default_graph()
        while isinstance(g, _FuncGraph):
            assigned = g.__dict__.setdefault("_assigned_variables", {})
            assigned[id(self)] = self
            g = g._outer

    def _read_after(self, op):
        g = op.graph  # a cond branch or loop body when the update is made inside one
        with g.control_dependencies([op]):
            return self._new_read(g, op.name + "/value")

    def is_initialized(self, name=None):
        """A bool tensor: whether the variable has a value (on its device)."""
        from shardflow.ops import _out
        with self.graph._device_scope(self._device):
            return _out("VarIsInitializedOp", [self.handle], None, name)

    @property
    def initial_value(self):
        """The tensor the initializer assigns."""
        return self.initializer.inputs[1]

    def initialized_value(self):
        """The value once the variable is initialized, else its initial value, as TF1's (to
        start one variable from another: ``tf.Variable(w.initialized_value() * 2.0)``; both
        initializers can run in one global_variables_initializer run)."""
        from shardflow.control_flow import cond
        from shardflow.core_extras import init_scope
        with init_scope():
            return cond(self.is_initialized(), self._new_read, lambda: self.initial_value)

    def count_up_to(self, limit):
        """tf.count_up_to(self, limit): the value before an atomic increment (OutOfRange at
        `limit`)."""
        from shardflow.state_composites import count_up_to
        return count_up_to(self, limit)

    def sparse_read(self, indices, name=None):
        """The rows `indices` of the variable (tf.gather of its value)."""
        from shardflow.array_ops import gather
        return gather(self.value(), indices, name=name)

    def gather_nd(self, indices, name=None):
        from shardflow.array_ops import gather_nd
        return gather_nd(self.value(), indices, name=name)

    def _scatter(self, what, *args, **kwargs):
        import shardflow.state_composites as state
        return getattr(state, what)(self, *args, **kwargs)

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        """self[sparse_delta.indices] += sparse_delta.values (an IndexedSlices)."""
        return self._scatter("scatter_add", sparse_delta.indices, sparse_delta.values, name=name)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_sub", sparse_delta.indices, sparse_delta.values, name=name)

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_update", sparse_delta.indices, sparse_delta.values,
                             name=name)

    def scatter_mul(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_mul", sparse_delta.indices, sparse_delta.values, name=name)

    def scatter_div(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_div", sparse_delta.indices, sparse_delta.values, name=name)

    def scatter_max(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_max", sparse_delta.indices, sparse_delta.values, name=name)

    def scatter_min(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_min", sparse_delta.indices, sparse_delta.values, name=name)

    def batch_scatter_update(self, sparse_delta, use_locking=True, name=None):
        return self._scatter("batch_scatter_update", sparse_delta.indices, sparse_delta.values,
                             name=name)

    def scatter_nd_add(self, indices, updates, name=None):
        return self._scatter("scatter_nd_add", indices, updates, name=name)

    def scatter_nd_sub(self, indices, updates, name=None):
        return self._scatter("scatter_nd_sub", indices, updates, name=name)

    def scatter_nd_update(self, indices, updates, name=None):
        return self._scatter("scatter_nd_update", indices, updates, name=name)

    def eval(self, session=None):
        """The current value (runs the read in `session` or the default session)."""
        return self._read.eval(session=session)

    def load(self, value, session=None):
        """Writes `value` (of the variable's shape) into the variable in `session` (or the
        default session), as TF1's Variable.load. The first call adds one placeholder and an
        assignment beside the variable, which later calls feed."""
        from shardflow import ops
        from shardflow.session import _session_for
        if getattr(self, "_loader", None) is None:
            g = self.graph
            with g.as_default(), g.control_dependencies(None), g.name_scope(
                    self.op.name + "/load/"):
                fed = ops.placeholder(self.dtype, self.shape, name="value")
                self._loader = (fed, self.assign(fed, read_value=False))
        fed, assign = self._loader
        _session_for(session).run(assign, {fed: value})

    class SaveSliceInfo:
        """Where a part of a partitioned variable lies in the whole (TF1's
        Variable.SaveSliceInfo): Savers write the whole under `full_name` and each part reads
        its slice back, whatever the partitioning when it was saved."""

        def __init__(self, full_name=None, full_shape=None, var_offset=None, var_shape=None):
            self.full_name = full_name
            self.full_shape = [int(d) for d in full_shape]
            self.var_offset = [int(d) for d in var_offset]
            self.var_shape = [int(d) for d in var_shape]

        @property
        def spec(self):
            """TF1's text form: "<full shape> <offset>,<length>:..."."""
            return " ".join(str(d) for d in self.full_shape) + " " + ":".join(
                "%d,%d" % (o, n) for o, n in zip(self.var_offset, self.var_shape))

        def index(self):
            """The numpy index of this part in the whole."""
            return tuple(slice(o, o + n) for o, n in zip(self.var_offset, self.var_shape))

    _save_slice_info = None   # set on the parts of a PartitionedVariable

    def _set_save_slice_info(self, save_slice_info):
        self._save_slice_info = save_slice_info

    def _get_save_slice_info(self):
        return self._save_slice_info

    def __repr__(self):
        return "<sf.Variable '%s' shape=%s dtype=%s>" % (
            self.name, self.shape.as_list() if self.shape.ndims is not None else "<unknown>",
            self.dtype.name)


def _adopt_engine_variables(g):
    """Wraps the variables the C++ side made (optimizer slots: Adam's m and v, momentum
    accumulators) as Variables, so that global_variables and the Saver see them as TF1's do."""
    known = {v.op.name for v in g._variables}
    for handle_name in g._handle.variables(False):
        if handle_name in known:
            continue
        v = Variable.__new__(Variable)
        v._attach(g, *g._handle.variable_info(handle_name))
        v._device = v._handle_op.device
        v._local = False


def _scope_and_graph(scope, graph):
    """TF1 takes a scope filter first; shardflow's own callers pass a graph there."""
    if scope is not None and not isinstance(scope, str):
        return None, scope
    return scope, graph


def _in_scope(variables, scope):
    """The variables whose name the regular expression `scope` matches at its start (TF1's
    filter, as get_collection's)."""
    if scope is None:
        return variables
    import re
    pattern = re.compile(scope)
    return [v for v in variables if pattern.match(v.name)]


def global_variables(scope=None, graph=None):
    """Every variable of the graph, optimizer slots included, but local ones (those made with
    collections=[sf.GraphKeys.LOCAL_VARIABLES]: per-worker state such as a replica's step);
    with `scope`, those whose name it matches at the start, as TF1's tf.global_variables."""
    scope, graph = _scope_and_graph(scope, graph)
    g = graph or get_default_graph()
    if not isinstance(g, _FuncGraph):
        _adopt_engine_variables(g)
    return _in_scope([v for v in g._variables if not v._local and not v._hidden], scope)


def local_variables(scope=None, graph=None):
    """The graph's local variables (collections=[sf.GraphKeys.LOCAL_VARIABLES]), filtered by
    `scope` as global_variables."""
    scope, graph = _scope_and_graph(scope, graph)
    return _in_scope([v for v in (graph or get_default_graph())._variables if v._local], scope)


def variables_initializer(var_list, name="init"):
    """One op that runs the initializers of `var_list`."""
    from shardflow.ops import group, no_op
    if not var_list:
        return no_op(name=name)
    return group(*[v.initializer for v in var_list], name=name)


def local_variables_initializer():
    """One op that initialises the local variables."""
    return variables_initializer(local_variables(), name="init_local")


def tables_initializer(name="init_all_tables"):
    """One op that runs the ops in the sf.GraphKeys.TABLE_INITIALIZERS collection (those that
    initialise lookup tables), or a no-op when there are none, as TF1's tf.tables_initializer.

    Example::

        sess.run([sf.global_variables_initializer(), sf.tables_initializer()])
    """
    from shardflow.framework import get_collection
    from shardflow.ops import group, no_op
    table_inits = get_collection(GraphKeys.TABLE_INITIALIZERS)
    if not table_inits:
        return no_op(name=name)
    return group(*table_inits, name=name)


def trainable_variables(scope=None, graph=None):
    """The trainable Variables of the graph, filtered by `scope` as global_variables
    (``sf.trainable_variables("discriminator")``)."""
    scope, graph = _scope_and_graph(scope, graph)
    g = graph or get_default_graph()
    global_variables(None, g)   # adopts the engine's variables
    # TF1 adds a trainable variable to TRAINABLE_VARIABLES whatever collections it names.
    return _in_scope([v for v in g._variables if v.trainable and not v._local], scope)


def global_variables_initializer(name=None):
    """One op that runs every variable's initializer (optimizer slots included).

    Example::

        sess.run(sf.global_variables_initializer())
    """
    g = get_default_graph()
    global_variables(g)   # adopts the engine's variables
    if any(v._hidden for v in g._variables):
        # The engine's op runs every variable's initializer; leave out those in no
        # collection of variables (collections=[]), as TF1's.
        from shardflow.ops import group
        op = group(*[v.initializer for v in g._variables if not v._hidden],
                   name=name or "init")
    else:
        op = g.get_operation_by_name(g._handle.initialize_all_variables(g._ctx(name)))
    # Variables tf.train.import_meta_graph brought in are unknown to the engine's op: their
    # initializers run with it, as TF1's (import, initialize, then restore a part).
    imported = [v.initializer for v in global_variables(g) if getattr(v, "_imported", False)]
    if imported:
        from shardflow.ops import group
        op = group(op, *imported, name=op.name + "_with_imported")
    # Variables tf.train.init_from_checkpoint maps load the checkpoint after their initializer.
    from shardflow.checkpoint_utils import with_checkpoint_initializers
    return with_checkpoint_initializers(op, g)


def initialize_all_variables():
    """TF1's deprecated spelling of global_variables_initializer()."""
    return global_variables_initializer()


def initialize_variables(var_list, name="init"):
    """TF1's deprecated spelling of variables_initializer()."""
    return variables_initializer(var_list, name=name)


def all_variables():
    """TF1's deprecated spelling of global_variables()."""
    return global_variables()
