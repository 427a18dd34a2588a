"""Graphs, tensors and operations, and the context managers that shape how ops are built.

Example::

    import shardflow as sf

    g = sf.Graph()
    with g.as_default():
        with sf.name_scope("layer1"), sf.device("/device:CPU:0"):
            x = sf.placeholder(sf.float32, [None, 3], name="x")
            y = sf.matmul(x, sf.constant([[1.0], [2.0], [3.0]]))
    y.name        # 'layer1/MatMul:0'
    y.shape       # TensorShape([None, 1])
    y.op.device   # '/device:CPU:0'
"""

import contextlib
import threading

import numpy as np

from shardflow import _shardflow as _C
from shardflow import dtypes
from shardflow.device_spec import DeviceSpec


class Dimension(int):
    """One known dimension of a static shape, as TF1's tf.Dimension: an int that also has
    ``.value`` (``x.get_shape()[1].value``)."""

    @property
    def value(self):
        return int(self)

    def __repr__(self):
        return "Dimension(%d)" % int(self)


class _UnknownDimension:
    """An unknown dimension (TF1's Dimension(None)): ``.value`` is None; it equals None."""

    value = None

    def __eq__(self, other):
        return other is None or isinstance(other, _UnknownDimension)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(None)

    def __index__(self):
        raise TypeError("the dimension is unknown (None); it has no integer value")

    __int__ = __index__

    def __repr__(self):
        return "Dimension(None)"


def _plain_dims(shape):
    """A shape as a list of ints and None (from a TensorShape, its Dimensions, or a list)."""
    if isinstance(shape, TensorShape):
        return shape.as_list()
    return [None if d is None or getattr(d, "value", 0) is None else int(d) for d in shape]


class TensorShape:
    """A static shape: a list of dimensions (None = unknown), or an unknown rank.

    Compares equal to lists and tuples: ``x.shape == [None, 784]``. Indexing gives TF1's
    Dimension: ``x.shape[1] == 784`` and ``x.get_shape()[1].value``; ``as_list()`` gives plain
    ints and None.
    """

    def __init__(self, dims):
        self._dims = None if dims is None else [
            None if d is None or getattr(d, "value", 0) is None or int(d) < 0 else int(d)
            for d in dims]

    @property
    def ndims(self):
        """The rank, or None when unknown."""
        return None if self._dims is None else len(self._dims)

    rank = ndims

    @property
    def dims(self):
        """TF1's TensorShape.dims: a list of Dimension objects (Dimension(None) for unknown
        ones), or None for an unknown rank."""
        if self._dims is None:
            return None
        return [_UnknownDimension() if d is None else Dimension(d) for d in self._dims]

    def as_list(self):
        """The dimensions as a list (None for unknown ones); ValueError for an unknown rank."""
        if self._dims is None:
            raise ValueError("as_list() is not defined on a shape of unknown rank")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        """The element count, or None unless fully defined."""
        if not self.is_fully_defined():
            return None
        return int(np.prod(self._dims, dtype=np.int64))

    def __len__(self):
        return len(self.as_list())

    def __getitem__(self, i):
        dims = self.as_list()
        if isinstance(i, slice):
            return TensorShape(dims[i])
        d = dims[i]
        return _UnknownDimension() if d is None else Dimension(d)

    def __iter__(self):
        return (_UnknownDimension() if d is None else Dimension(d) for d in self.as_list())

    def __eq__(self, other):
        if isinstance(other, TensorShape):
            return self._dims == other._dims
        if other is None:
            return self._dims is None
        try:
            return self._dims is not None and self._dims == list(other)
        except TypeError:
            return False

    def merge_with(self, other):
        """The most specific shape compatible with both (ValueError when they disagree)."""
        other = other if isinstance(other, TensorShape) else TensorShape(other)
        if self._dims is None:
            return TensorShape(other._dims)
        if other._dims is None:
            return TensorShape(self._dims)
        if len(self._dims) != len(other._dims):
            raise ValueError("shapes %s and %s are not compatible (ranks differ)"
                             % (self, other))
        out = []
        for a, b in zip(self._dims, other._dims):
            if a is not None and b is not None and a != b:
                raise ValueError("shapes %s and %s are not compatible" % (self, other))
            out.append(a if a is not None else b)
        return TensorShape(out)

    def is_compatible_with(self, other):
        try:
            self.merge_with(other)
            return True
        except ValueError:
            return False

    def __repr__(self):
        return "TensorShape(%s)" % ("<unknown>" if self._dims is None else self._dims)

    def __str__(self):
        """As TF1 prints shapes: "(?, 3)", "(3,)", "()", "<unknown>"."""
        if self._dims is None:
            return "<unknown>"
        dims = ["?" if d is None else str(d) for d in self._dims]
        return "(%s,)" % dims[0] if len(dims) == 1 else "(%s)" % ", ".join(dims)


class Operation:
    """A node of the graph. Run it as a target: ``sess.run(train_op)``."""

    def __init__(self, graph, name, outputs):
        self.graph = graph
        self.name = name
        self.outputs = [Tensor(graph, ref, self) for ref in outputs]

    def _info(self):
        return self.graph._handle.node_info(self.name)

    @property
    def type(self):
        """The op type, e.g. 'MatMul'."""
        return self._info()["op"]

    @property
    def device(self):
        """The requested device ('' = any)."""
        return self._info()["device"]

    @property
    def inputs(self):
        """The tensors feeding this op, in order."""
        return [self.graph._tensor_by_name(n) for n in self._info()["inputs"]]

    @property
    def control_inputs(self):
        return [self.graph.get_operation_by_name(n) for n in self._info()["control_inputs"]]

    @property
    def node_def(self):
        """The op's NodeDef message (shardflow.graph_io's protos: name, op, input, device,
        attr)."""
        from shardflow.graph_io import _protos
        node = _protos().NodeDef()
        node.ParseFromString(bytes(self.graph._handle.node_def(self.name)))
        return node

    def get_attr(self, name):
        """The value of attr `name`, as TF1 gives it: bytes for strings, int, float, bool, a
        DType, a TensorShape, a TensorProto (tf.make_ndarray reads it) or a list of those;
        ValueError when the op has no such attr."""
        node = self.node_def
        if name not in node.attr:
            raise ValueError("No attr named '%s' in NodeDef %s (op %s)"
                             % (name, self.name, node.op))
        return _attr_value(node.attr[name])

    def values(self):
        """The op's outputs, as a tuple."""
        return tuple(self.outputs)

    @property
    def op_def(self):
        """What TF1's OpDef of this op is asked for most: its `name` (the op type)."""
        import types
        return types.SimpleNamespace(name=self.type)

    @property
    def traceback(self):
        """Where the op was built: not recorded here (an empty list)."""
        return []

    def colocation_groups(self):
        """TF1's colocation group names of this op: those its `_class` attr lists (what
        tf.colocate_with writes), else its own (b"loc:@<name>")."""
        node = self.node_def
        if "_class" in node.attr and node.attr["_class"].list.s:
            return sorted(set(node.attr["_class"].list.s))
        return [("loc:@" + self.name).encode()]

    def run(self, feed_dict=None, session=None):
        """Runs this op in `session` (default: the current default session)."""
        from shardflow.session import _session_for
        _session_for(session).run(self, feed_dict)

    def __repr__(self):
        return "<sf.Operation '%s' type=%s>" % (self.name, self.type)

    def __str__(self):
        """The op's NodeDef in text form, as TF1 prints an Operation."""
        return str(self.node_def)


def _shape_of_proto(shape):
    return TensorShape(None if shape.unknown_rank else
                       [None if d < 0 else int(d) for d in shape.dim])


def _attr_value(attr):
    """A Python value of an AttrValue message, as TF1's Operation.get_attr returns it."""
    kind = attr.WhichOneof("value")
    if kind == "s":
        return attr.s
    if kind in ("i", "f", "b"):
        return getattr(attr, kind)
    if kind == "type":
        return dtypes.as_dtype(attr.type)
    if kind == "shape":
        return _shape_of_proto(attr.shape)
    if kind == "tensor":
        return attr.tensor
    if kind == "func":
        return attr.func
    if kind == "list":
        lst = attr.list
        if lst.s:
            return list(lst.s)
        if lst.i:
            return list(lst.i)
        if lst.f:
            return list(lst.f)
        if lst.b:
            return list(lst.b)
        if lst.type:
            return [dtypes.as_dtype(t) for t in lst.type]
        if lst.shape:
            return [_shape_of_proto(s) for s in lst.shape]
        return []
    return None


class _TensorOperators:
    """Operators shared by Tensor and Variable: ``+ - * / // @ ** -x abs(x) < <= > >=``, and
    on bools ``& | ^ ~`` (logical_and / or / xor / not, as TF 1.15's; not bitwise on ints). The
    binary operators name their op as TF1's do ("add", "mul", "truediv", ...: ``x * 2`` is
    "mul:0")."""

    def __and__(self, other):
        from shardflow import ops
        return ops.logical_and(self, other, name="and")

    def __rand__(self, other):
        from shardflow import ops
        return ops.logical_and(other, self, name="and")

    def __or__(self, other):
        from shardflow import ops
        return ops.logical_or(self, other, name="or")

    def __ror__(self, other):
        from shardflow import ops
        return ops.logical_or(other, self, name="or")

    def __xor__(self, other):
        from shardflow.core_extras import logical_xor
        return logical_xor(self, other, name="xor")

    def __rxor__(self, other):
        from shardflow.core_extras import logical_xor
        return logical_xor(other, self, name="xor")

    def __invert__(self):
        from shardflow import ops
        return ops.logical_not(self)

    def __add__(self, other):
        from shardflow import ops
        return ops.add(self, other, name="add")

    def __radd__(self, other):
        from shardflow import ops
        return ops.add(other, self, name="add")

    def __sub__(self, other):
        from shardflow import ops
        return ops.subtract(self, other, name="sub")

    def __rsub__(self, other):
        from shardflow import ops
        return ops.subtract(other, self, name="sub")

    def __mul__(self, other):
        from shardflow import ops
        return ops.multiply(self, other, name="mul")

    def __rmul__(self, other):
        from shardflow import ops
        return ops.multiply(other, self, name="mul")

    def __truediv__(self, other):
        from shardflow import ops
        return ops.truediv(self, other, name="truediv")

    def __rtruediv__(self, other):
        from shardflow import ops
        return ops.truediv(other, self, name="truediv")

    def __matmul__(self, other):
        from shardflow import ops
        return ops.matmul(self, other, name="matmul")

    def __rmatmul__(self, other):
        from shardflow import ops
        return ops.matmul(other, self, name="matmul")

    def __pow__(self, other):
        from shardflow import ops
        return ops.pow(self, other, name="pow")

    def __rpow__(self, other):
        from shardflow import ops
        return ops.pow(other, self, name="pow")

    def __neg__(self):
        from shardflow import ops
        return ops.negative(self)

    def __getitem__(self, key):
        """TF1 indexing, ``x[:, 1]``, ``x[i, ::-1]`` (shardflow.strided_slice.getitem)."""
        from shardflow.strided_slice import getitem
        return getitem(self, key)

    def __iter__(self):
        """Rows along dimension 0, when its size is known when the graph is built (TF1's rule:
        otherwise a TypeError, where Python's fallback through __getitem__ would never end)."""
        dims = self.shape.as_list() if self.shape.ndims is not None else None
        if dims is None:
            raise TypeError("Cannot iterate over a tensor with unknown shape.")
        if not dims:
            raise TypeError("Cannot iterate over a scalar tensor.")
        if dims[0] is None:
            raise TypeError("Cannot iterate over a tensor with unknown first dimension "
                            "(use tf.unstack with num=, or tf.map_fn).")
        return (self[i] for i in range(dims[0]))

    def __floordiv__(self, other):
        from shardflow import ops
        return ops.floordiv(self, other, name="floordiv")

    def __rfloordiv__(self, other):
        from shardflow import ops
        return ops.floordiv(other, self, name="floordiv")

    def __mod__(self, other):
        from shardflow import ops
        return ops.floormod(self, other, name="mod")

    def __rmod__(self, other):
        from shardflow import ops
        return ops.floormod(other, self, name="mod")

    def __abs__(self):
        from shardflow import ops
        return ops.abs(self)

    def __lt__(self, other):
        from shardflow import ops
        return ops.less(self, other)

    def __le__(self, other):
        from shardflow import ops
        return ops.less_equal(self, other)

    def __gt__(self, other):
        from shardflow import ops
        return ops.greater(self, other)

    def __ge__(self, other):
        from shardflow import ops
        return ops.greater_equal(self, other)

    def experimental_ref(self):
        """A hashable reference to this tensor (or variable) whose deref() gives it back (TF
        1.15's Tensor.experimental_ref, for dict keys and sets)."""
        return _Reference(self)

    # Tensors are graph nodes: == and hash stay identity-based (use sf.equal for values).
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("a symbolic tensor has no truth value; run it in a Session first")


class _Reference:
    """What experimental_ref() returns: equal for the same tensor, hashable, deref()."""
    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj

    def deref(self):
        return self._obj

    def __eq__(self, other):
        return isinstance(other, _Reference) and other._obj is self._obj

    def __hash__(self):
        return id(self._obj)

    def __repr__(self):
        return "<Reference wrapping %r>" % (self._obj,)


class Tensor(_TensorOperators):
    """One output of an Operation: a symbolic value, computed by ``Session.run``.

    Example::

        x = sf.placeholder(sf.float32, [2])
        y = x * 2 + 1                      # operators build ops
        sess.run(y, {x: [1, 2]})           # array([3., 5.], dtype=float32)
    """

    def __init__(self, graph, ref, op):
        self.graph = graph
        self._ref = ref
        self.op = op
        self.name = ref.name
        self.value_index = ref.index
        self.dtype = dtypes.as_dtype(ref.dtype)
        self.shape = TensorShape(ref.shape)

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        """Merges `shape` into the static shape, as TF1's Tensor.set_shape (ValueError when they
        disagree). The engine learns it through an op this Tensor then stands for: a Reshape
        when at most one dimension stays unknown, else an EnsureShape of the partial shape
        (image.set_shape([None, None, 3]) after decode_jpeg); the step fails if the value's
        shape does not fit."""
        merged = self.shape.merge_with(shape)
        if merged == self.shape or merged.ndims is None:
            return
        dims = merged.as_list()
        from shardflow import ops
        with self.graph.as_default(), self.graph.control_dependencies(None):
            if sum(d is None for d in dims) <= 1:
                r = ops.reshape(self, [-1 if d is None else d for d in dims],
                                name=self.op.name + "/set_shape")
            else:
                r = ops._out("EnsureShape", [self], {"shape": dims},
                             self.op.name + "/set_shape")
        self._ref, self.op, self.name, self.value_index = r._ref, r.op, r.name, 0
        self.shape = merged

    @property
    def device(self):
        """The device its op asks for (TF1's Tensor.device)."""
        return self.op.device

    def consumers(self):
        """The ops that take this tensor as an input, in the order they were built."""
        return [op for op in self.graph.get_operations()
                if self.name in op._info()["inputs"]]

    def eval(self, feed_dict=None, session=None):
        """Runs the tensor in `session` (default: the current default session)."""
        from shardflow.session import _session_for
        return _session_for(session).run(self, feed_dict)

    def __repr__(self):
        return "<sf.Tensor '%s' shape=%s dtype=%s>" % (self.name, self.shape, self.dtype.name)

    def __str__(self):
        """As TF1 prints a tensor: Tensor("mul:0", shape=(?, 3), dtype=float32)."""
        return "Tensor(\"%s\"%s, dtype=%s%s)" % (
            self.name, ", shape=%s" % self.shape if self.shape.ndims is not None else "",
            self.dtype.name, ", device=%s" % self.device if self.device else "")


class Graph:
    """A dataflow graph. Ops are added to the default graph; ``as_default()`` changes it.

    Example::

        g = sf.Graph()
        with g.as_default():
            c = sf.constant(3.0)
        assert c.graph is g

    A failed op (bad shapes, unknown attr, ...) raises and leaves the graph as it was, so
    building can go on.

    Thread safety: build a graph from one thread at a time.
    """

    def __init__(self):
        self._handle = _C.GraphHandle()
        self._name_scope = ""
        self._used_scopes = set()
        self._device = ""
        self._device_fn = None
        self._control_inputs = []
        self._ops = {}
        self._variables = []
        self._collections = {}
        self._gradient_override_map = {}
        self._finalized = False
        self._unfeedable, self._unfetchable = set(), set()

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map):
        """Ops of the given types built inside take the gradient registered (sf.RegisterGradient)
        under the mapped name instead of their own, as in TF1::

            @sf.RegisterGradient("ReverseGrad")
            def _reverse(op, grad):
                return -grad
            with g.gradient_override_map({"Identity": "ReverseGrad"}):
                y = sf.identity(x)
        """
        if not isinstance(op_type_map, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in op_type_map.items()):
            raise TypeError("gradient_override_map takes a dict of op type -> gradient name "
                            "strings, not %r" % (op_type_map,))
        old = self._gradient_override_map
        self._gradient_override_map = dict(old, **op_type_map)
        try:
            yield
        finally:
            self._gradient_override_map = old

    @contextlib.contextmanager
    def as_default(self):
        """Makes this the default graph inside the ``with`` block."""
        _stack().append(self)
        try:
            yield self
        finally:
            _stack().pop()

    # ---- context managers -----------------------------------------------------------------

    def _unique_scope(self, name):
        return self.unique_name(name)

    @contextlib.contextmanager
    def name_scope(self, name):
        """Ops built inside are named '<scope>/<name>'. A name used before gets a suffix
        ('dense', 'dense_1'); a name ending in '/' re-enters that exact scope; None or ''
        returns to the top level."""
        old = self._name_scope
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self._unique_scope(name)
        self._name_scope = new
        try:
            yield new + "/" if new else ""
        finally:
            self._name_scope = old

    def device(self, device_name_or_function):
        """Ops built inside request a device: a name ('/device:CPU:1', '/job:worker/task:1',
        'gpu:0') or a DeviceSpec, merged with the scopes around it as TF1's (the inner one's
        parts win, the others are inherited: '/job:worker/task:1' then '/cpu:0' is
        '/job:worker/task:1/device:CPU:0'; '' changes nothing), or a function of the op being
        built that returns one (a string or DeviceSpec; sf.train.replica_device_setter). None
        clears every scope around it. Note [Device scopes]."""
        d = device_name_or_function
        if d is None:
            return self._device_scope("")
        if callable(d):
            outer = self._device_fn
            if outer is None and self._device:
                outer = _DeviceScopes(None, spec=DeviceSpec.from_string(self._device))
            return self._device_scope("", _DeviceScopes(outer, fn=d))
        if isinstance(d, DeviceSpec):
            spec = d.replace()
        elif isinstance(d, str):
            spec = DeviceSpec.from_string(d)
        else:
            raise TypeError("device takes a device name string, a DeviceSpec, a function or "
                            "None, not %r" % (d,))
        if not spec.to_string():
            return self._device_scope(self._device, self._device_fn)   # TF1's null merge
        if self._device_fn is not None:
            return self._device_scope("", _DeviceScopes(self._device_fn, spec=spec))
        merged = DeviceSpec.from_string(self._device).make_merged_spec(spec)
        return self._device_scope(merged.to_string())

    @contextlib.contextmanager
    def _device_scope(self, device_name, device_fn=None):
        """Replaces the device scopes (not merged): what colocation with a variable uses."""
        old = self._device, self._device_fn
        self._device = device_name or ""
        self._device_fn = device_fn
        try:
            yield
        finally:
            self._device, self._device_fn = old

    def _device_for(self, op_type, name="", shape=None, dtype=None, inputs=(), attrs=None):
        """The device an op of `op_type` built now requests."""
        if self._device_fn is None:
            return _on_base_device(self._device)
        op = _OpToPlace(op_type, self._next_op_name(name or op_type), shape, dtype, inputs,
                        attrs, self)
        return _on_base_device(self._device_fn(op))

    def _next_op_name(self, name):
        """The name the engine will give an op named `name` built now (scoped, made unique as
        Graph::UniqueName does), for device functions."""
        if not name:
            return ""
        full = self._name_scope + "/" + name if self._name_scope else name
        if not self._handle.has_node(full):
            return full
        k = 1
        while self._handle.has_node("%s_%d" % (full, k)):
            k += 1
        return "%s_%d" % (full, k)

    # ---- finalizing (TF1's: no op may be added afterwards) ---------------------------------

    def finalize(self):
        """No op may be added from now on (RuntimeError): TF1's guard against a training loop
        that grows the graph step by step."""
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    def _unsafe_unfinalize(self):
        self._finalized = False

    # ---- collections (as TF1's tf.add_to_collection / tf.get_collection) ------------------

    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        """`value` added to each collection of `names` (one name or a list)."""
        for name in ([names] if isinstance(names, str) else set(names)):
            self.add_to_collection(name, value)

    def get_collection_ref(self, name):
        """The collection `name` itself: a list that adding to changes the collection."""
        return self._collections.setdefault(name, [])

    def clear_collection(self, name):
        self._collections.pop(name, None)

    def get_all_collection_keys(self):
        return [k for k, v in self._collections.items() if v]

    @property
    def collections(self):
        return self.get_all_collection_keys()

    def get_collection(self, name, scope=None):
        """The collection `name` (a copy); with `scope`, only the items that have a name
        matched at its start by that regular expression, as TF1's get_collection."""
        items = list(self._collections.get(name, []))
        if name in _VARIABLE_COLLECTIONS:
            # The variables themselves are tracked by the graph (and the C++ side, for optimizer
            # slots), not appended here: tf.get_collection(TRAINABLE_VARIABLES, scope="d")
            # lists them as TF1's does, then anything added to the collection by hand.
            from shardflow import variables as _variables
            derived = getattr(_variables, _VARIABLE_COLLECTIONS[name])(self)
            items = derived + [x for x in items if not any(x is d for d in derived)]
        if scope is None:
            return items
        import re
        pattern = re.compile(scope)
        return [v for v in items if isinstance(getattr(v, "name", None), str)
                and pattern.match(v.name)]

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Ops built inside run after every op (or tensor's op) in `control_inputs`;
        None clears the dependencies."""
        old = self._control_inputs
        if control_inputs is None:
            self._control_inputs = []
        else:
            names = []
            for c in control_inputs:
                op = _as_operation(c)
                if op.graph is not self:
                    if isinstance(self, _FuncGraph) and self._encloses(op.graph):
                        # An op around a loop body or branch: the While or If op waits for
                        # it instead (control_flow._hoisted), as TF1 allows.
                        self.__dict__.setdefault("_hoisted_control_inputs", []).append(op)
                        continue
                    raise ValueError("control input %s is from another graph" % op.name)
                names.append(op.name)
            self._control_inputs = old + names
        try:
            yield
        finally:
            self._control_inputs = old

    def _ctx(self, name=None, op_type="", device=None, inputs=(), attrs=None):
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified (adding %s%s); build "
                               "every op before the graph is finalized (MonitoredSession, "
                               "Supervisor and graph.finalize() do it)"
                               % (op_type or "an op", " '%s'" % name if name else ""))
        if name is not None and not isinstance(name, str):
            raise TypeError("name must be a string, not %r" % (name,))
        if device is None:
            device = self._device_for(op_type, name or "", inputs=inputs, attrs=attrs)
        return _C.BuildContext(name or "", self._name_scope, device, list(self._control_inputs),
                               list(self._colocation_stack))

    # ---- building -------------------------------------------------------------------------

    _rng_mode = None   # Note [Random ops in functions]: set on cond branches and loop bodies
    _colocation_stack = ()   # names of the ops tf.colocate_with asks new ops to join (_class)

    def _add_op(self, op_type, inputs, attrs=None, name=None):
        """Adds one op of a registered type; returns the Operation."""
        if self._rng_mode is not None and op_type in _STATELESS_TWIN:
            return _add_stateless_random(self, op_type, inputs, attrs, name)
        if op_type in _ONE_DTYPE_OPS:
            _refuse_float_literals(inputs)
        if any(_is_float64_tensor(i) for i in inputs):
            # Python floats beside a float64 tensor keep their float64 value (as TF converts
            # them to the tensor's dtype), rather than _literal's float32.
            inputs = [_float64_literal(i) for i in inputs]
        refs = [_to_input(self, i) for i in inputs]
        device = None
        if self._device_fn is not None:
            # An op that uses a variable (an accumulator, a queue) runs where that lives, as
            # TF's colocation does, whatever the device function says.
            device = next((i.op.device for i in inputs if isinstance(i, Tensor)
                           and i.op.type in _RESOURCE_HANDLE_OPS), None)
        override = self._gradient_override_map.get(op_type)
        outer = getattr(self, "_outer", None)
        while override is None and outer is not None:
            # A loop body or branch takes the overrides of the graphs around it (TF1 code
            # enters gradient_override_map on the graph it got from get_default_graph()).
            override = outer._gradient_override_map.get(op_type)
            outer = getattr(outer, "_outer", None)
        if override is not None:
            attrs = dict(attrs or {}, _gradient_op_type=override)
        op_name, outputs = self._handle.add_op(op_type, refs, attrs or {},
                                               self._ctx(name, op_type, device, inputs, attrs))
        op = Operation(self, op_name, outputs)
        self._ops[op_name] = op
        return op

    def _operation(self, name, outputs=()):
        op = self._ops.get(name)
        if op is None:
            op = Operation(self, name, outputs)
            self._ops[name] = op
        return op

    # ---- TF1's other Graph members ---------------------------------------------------------

    @contextlib.contextmanager
    def container(self, container_name):
        """Accepted for TF1 compatibility (Graph.container): shardflow keeps one resource
        container per session."""
        yield container_name

    def colocate_with(self, op, ignore_existing=False):
        """Ops built inside go where `op` is (tf.colocate_with)."""
        from shardflow.state_composites import colocate_with
        return colocate_with(op, ignore_existing)

    def unique_name(self, name, mark_as_used=True):
        """`name` under the current name scope, made unique ("x", "x_1", ...)."""
        full = self._name_scope + "/" + name if self._name_scope else name
        base, k = full, 0
        while full in self._used_scopes or self._handle.has_node(full):
            k += 1
            full = "%s_%d" % (base, k)
        if mark_as_used:
            self._used_scopes.add(full)
        return full

    def get_name_scope(self):
        """The current name scope ("" at the top)."""
        return self._name_scope

    @property
    def seed(self):
        """The graph-level random seed (tf.set_random_seed), or None."""
        return getattr(self, "_graph_seed", None)

    @seed.setter
    def seed(self, value):
        self._graph_seed = None if value is None else int(value)

    @property
    def version(self):
        """Grows as ops are added (TF1's: the number of ops so far)."""
        return len(self._handle.node_names())

    @property
    def building_function(self):
        return False

    def switch_to_thread_local(self):
        """Accepted: a graph's scopes are built from one thread at a time here anyway."""

    def prevent_feeding(self, tensor):
        self._unfeedable.add(_as_tensor_name(tensor))

    def prevent_fetching(self, op):
        self._unfetchable.add(_as_operation(op).name)

    def is_feedable(self, tensor):
        return _as_tensor_name(tensor) not in self._unfeedable

    def is_fetchable(self, tensor_or_op):
        return _as_operation(tensor_or_op).name not in self._unfetchable

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        """The Tensor or Operation `obj` names ("x:0", "x") or is."""
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
            raise ValueError("'%s' names an operation; a tensor is expected" % obj)
        if isinstance(obj, Tensor) and allow_tensor or isinstance(obj, Operation) and \
                allow_operation:
            if obj.graph is not self:
                raise ValueError("%s is not an element of this graph" % obj.name)
            return obj
        converted = getattr(obj, "value", None)
        if callable(converted) and allow_tensor:   # a Variable
            return self.as_graph_element(converted(), allow_tensor, allow_operation)
        raise TypeError("cannot take %r as an element of the graph" % (obj,))

    def create_op(self, op_type, inputs, dtypes=None, input_types=None, name=None, attrs=None,
                  op_def=None, compute_shapes=True, compute_device=True):
        """TF1's low-level op builder: one op of a registered type (its attrs a dict of
        Python values); the Operation."""
        return self._add_op(op_type, list(inputs), attrs, name)

    # ---- queries --------------------------------------------------------------------------

    def get_operations(self):
        """Every op of the graph, in the order they were added."""
        return [self.get_operation_by_name(n) for n in self._handle.node_names()]

    def get_operation_by_name(self, name):
        """The op named `name` (LookupError when there is none)."""
        if name in self._ops:
            return self._ops[name]
        info = self._handle.node_info(name)
        refs = [self._handle.output_ref(name, i) for i in range(info["num_outputs"])]
        return self._operation(name, refs)

    def get_tensor_by_name(self, name):
        """The tensor 'op:index' (or 'op', meaning output 0). A variable's name ("w:0") is its
        value, as TF1's: the tensor that reads it (fetching it gives the value, feeding it
        overrides the value for one step), not the handle its op outputs."""
        t = self._tensor_by_name(name)
        if t.value_index == 0 and t.op.type == "VarHandleOp":
            for v in self._variables:
                if v.op.name == t.op.name:
                    return v._read
        return t

    def _tensor_by_name(self, name):
        """The tensor 'op:index' itself (a variable's handle for "w:0")."""
        op_name, _, index = name.partition(":")
        op = self.get_operation_by_name(op_name)
        i = int(index) if index else 0
        if not 0 <= i < len(op.outputs):
            raise ValueError("op '%s' has %d output(s); '%s' does not exist"
                             % (op_name, len(op.outputs), name))
        return op.outputs[i]

    def as_graph_def(self, from_version=None, add_shapes=False):
        """The graph as a GraphDef message (sf.GraphDef, python3-protobuf; shardflow.graph_io):
        its nodes with their ops, inputs, devices and attrs, as the C++ API and the `shardflow`
        CLI read it. ``.SerializeToString()`` gives the bytes."""
        from shardflow.graph_io import graph_def_from_bytes
        return graph_def_from_bytes(self._handle.as_graph_def())

    def _as_graph_def_bytes(self):
        """The serialized GraphDef, without python3-protobuf."""
        return self._handle.as_graph_def()

    @property
    def graph_def_versions(self):
        raise AttributeError("shardflow GraphDefs carry no versions (graph.as_graph_def())")

    @property
    def num_nodes(self):
        return self._handle.num_nodes

    def __repr__(self):
        return "<sf.Graph with %d nodes>" % self.num_nodes


class _FuncGraph(Graph):
    """The graph of a function: a while_loop's cond or body (shardflow/control_flow.py).

    Ops built while it is the default graph go into it; a tensor of an enclosing graph that one
    of them uses is captured: it becomes a Placeholder here (an argument of the function) and
    the loop passes the outer tensor in. Variables created inside are created in the outermost
    graph (as TF1 lifts them out of a loop) and read there.
    """

    def __init__(self, outer, name_prefix):
        super().__init__()
        self._outer = outer
        self._name_scope = name_prefix
        self._used_scopes.add(name_prefix)
        self._captures = []       # [(outer tensor, placeholder)] in the order they were taken
        self._capture_of = {}     # (id(outer graph), outer tensor name) -> placeholder
        self._rng_mode = None     # "branch" or "loop": Note [Random ops in functions]
        self._rng_key = None
        if hasattr(outer, "_variable_scopes"):  # variable scopes go on inside the function
            self._variable_scopes = list(outer._variable_scopes)
            self._variable_store = outer._variable_store

    def _outermost(self):
        g = self
        while isinstance(g, _FuncGraph):
            g = g._outer
        return g

    def _encloses(self, graph):
        g = self._outer
        while g is not None:
            if g is graph:
                return True
            g = getattr(g, "_outer", None)
        return False

    def _function_random_key(self):
        """A branch's key: the enclosing graph's, captured; a loop body's: a placeholder that
        while_loop makes one more loop variable (Note [Random ops in functions])."""
        if self._rng_key is None:
            if self._rng_mode == "loop":
                saved = self._control_inputs, self._device, self._device_fn
                self._control_inputs, self._device, self._device_fn = [], "", None
                try:
                    from shardflow import dtypes, ops
                    with self.as_default():
                        self._rng_key = ops.placeholder(dtypes.int64, shape=[],
                                                        name="random_key")
                finally:
                    self._control_inputs, self._device, self._device_fn = saved
            else:
                self._rng_key = self._capture(_random_key(self._outer))
        return self._rng_key

    def _capture(self, tensor):
        key = (id(tensor.graph), tensor.name)
        if key in self._capture_of:
            return self._capture_of[key]
        if not self._encloses(tensor.graph):
            raise ValueError("tensor %s is from another graph" % tensor.name)
        inner = tensor
        if tensor.graph is not self._outer:
            inner = self._outer._capture(tensor)  # through the enclosing function
        saved = self._control_inputs, self._device, self._device_fn
        self._control_inputs, self._device, self._device_fn = [], "", None
        try:
            from shardflow import ops
            with self.as_default():
                ph = ops.placeholder(tensor.dtype, shape=_shape_or_none(tensor),
                                     name="captured_%d" % len(self._captures))
        finally:
            self._control_inputs, self._device, self._device_fn = saved
        self._captures.append((inner, ph))
        self._capture_of[key] = ph
        self._capture_of[(id(inner.graph), inner.name)] = ph
        return ph


# Note [Random ops in functions]. The gradients of cond and while_loop recompute the branch or
# the body from the values that entered it (Note [Recomputing a function for its gradient] in
# ops/control_flow_ops.cc), so a random op there must draw the same numbers the second time:
# the dropout mask of the gradient must be the mask of the forward pass. In a cond branch and in
# the body of a while_loop with back_prop, Dropout, RandomUniform, RandomStandardNormal and
# TruncatedNormal are therefore built as their stateless twins, whose seed input is (the
# function's random key, a number unique to the op in the graph). The key is a tensor:
#   - the outermost graph (and a dataset's function, whose random ops stay stateful: each
#     element draws anew and nothing recomputes them) draws one fresh key per run, one stateful
#     RandomUniform (seeded from the graph seed when there is one);
#   - a cond branch captures the key of the graph around it;
#   - a while body carries it as one more loop variable, which starts from a stateless draw
#     keyed by the key around the loop (so nested loops do not repeat each other's keys) and
#     adds 1 per iteration: every iteration draws new numbers, and the gradient reads the key
#     an iteration had from the loop's history like any other loop variable.
# So each run of the step draws new masks, as TF1's do, and `tf.cond(is_training, lambda:
# tf.nn.dropout(h, 0.5), lambda: h)` and a DropoutWrapper inside dynamic_rnn train.
_STATELESS_TWIN = {"Dropout": "StatelessDropout", "RandomUniform": "StatelessRandomUniform",
                   "RandomStandardNormal": "StatelessRandomNormal",
                   "TruncatedNormal": "StatelessTruncatedNormal"}


def _random_key(g):
    """The int64 scalar key of g's random ops (Note [Random ops in functions])."""
    if g._rng_mode is not None:
        return g._function_random_key()
    key = getattr(g, "_rng_draw", None)
    if key is None:
        from shardflow import dtypes, ops
        saved = g._control_inputs
        g._control_inputs = []
        try:
            with g.as_default():
                u = ops.random_uniform([], dtype=dtypes.float64, name="random_key")
                key = ops.cast(ops.multiply(u, 2.0 ** 52), dtypes.int64)
        finally:
            g._control_inputs = saved
        g._rng_draw = key
    return key


def _stateless_seed(g, key, seed=0):
    """[key, a number unique to the op in the outermost graph] (with the op's own seed mixed
    in), an int64 tensor of g."""
    from shardflow import array_ops, dtypes, ops
    top = g._outermost() if isinstance(g, _FuncGraph) else g
    top._stateless_ops = getattr(top, "_stateless_ops", 0) + 1
    unique = (int(seed or 0) * 1000003 + top._stateless_ops) % (2 ** 62)
    with g.as_default():
        return array_ops.stack([ops.cast(key, dtypes.int64),
                                ops.constant(unique, dtype=dtypes.int64)])


def _add_stateless_random(g, op_type, inputs, attrs, name):
    attrs = dict(attrs or {})
    seed = attrs.pop("seed", 0)
    attrs.pop("seed2", None)
    seed_t = _stateless_seed(g, _random_key(g), seed)
    return g._add_op(_STATELESS_TWIN[op_type], list(inputs) + [seed_t], attrs, name)


def _loop_random_key_start(g):
    """The first key of a loop body built in g: a stateless draw keyed by g's key."""
    import numpy as np
    from shardflow import dtypes, ops
    seed_t = _stateless_seed(g, _random_key(g))
    with g.as_default():
        u = g._add_op("StatelessRandomUniform", [np.asarray([], np.int32), seed_t],
                      {"dtype": dtypes.float64._enum}).outputs[0]
        return ops.cast(ops.multiply(u, 2.0 ** 52), dtypes.int64)


def _shape_or_none(tensor):
    shape = tensor.get_shape()
    return None if shape.ndims is None else [d if d is None else int(d) for d in shape.as_list()]


_local = threading.local()
_global_default_graph = [None]


def _stack():
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_default_graph():
    """The graph new ops go into: the innermost ``g.as_default()``, else a global graph."""
    stack = _stack()
    if stack:
        return stack[-1]
    if _global_default_graph[0] is None:
        _global_default_graph[0] = Graph()
    return _global_default_graph[0]


def reset_default_graph():
    """Replaces the global default graph with an empty one."""
    if _stack():
        raise RuntimeError("reset_default_graph() inside a `with g.as_default()` block")
    _global_default_graph[0] = Graph()


def name_scope(name, default_name=None, values=None):
    """``with sf.name_scope("dense"):`` — names ops 'dense/...' in the default graph. TF1's
    signature: `default_name` when `name` is None (``with tf.name_scope(name, "MyOp", [x,
    y]):``, as library functions write it); the graph is the one of the tensors in `values`
    when they have one."""
    if name is None and default_name is None and values is not None:
        raise ValueError("name_scope: at least one of name and default_name must be given")
    g = get_default_graph()
    for v in values or ():
        if isinstance(v, Tensor):
            if not isinstance(g, _FuncGraph) and v.graph is not g:
                g = v.graph
            break
    return g.name_scope(default_name if name is None else name)


def get_name_scope():
    """The default graph's current name scope ("" at the top), as TF1's tf.get_name_scope."""
    return get_default_graph().get_name_scope()


# Ops whose output names state on their device (core/framework/op_names.h).
_RESOURCE_HANDLE_OPS = ("VarHandleOp", "ResourceConditionalAccumulator", "FIFOQueueV2")


class _OpToPlace:
    """What a device function is told about the op being built, as TF1's Operation: its full
    `name` ('tower1/MatMul', 'dense_1/kernel', 'Add_1'), `type`, `device` (what the scopes
    inside this one asked for), `inputs`, `graph`, `node_def` (name, op, device, input and the
    attrs of simple types) and, for a variable, `shape` and `dtype`."""

    def __init__(self, op_type, name, shape=None, dtype=None, inputs=(), attrs=None,
                 graph=None):
        self.type = op_type
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.inputs = [t for t in _flat(inputs) if isinstance(t, Tensor)]
        self.graph = graph
        self.device = ""
        self._attrs = attrs or {}

    @property
    def node_def(self):
        from shardflow.graph_io import _protos
        node = _protos().NodeDef(name=self.name, op=self.type, device=self.device,
                                 input=[t.name for t in self.inputs])
        for key, value in self._attrs.items():
            _set_simple_attr(node.attr[key], value, key)
        return node

    def get_attr(self, name):
        if name not in self._attrs:
            raise ValueError("No attr named '%s' in NodeDef %s" % (name, self.name))
        return self._attrs[name]

    def __repr__(self):
        return "<op to place: %s %r>" % (self.type or "?", self.name)


def _flat(items):
    for i in items:
        if isinstance(i, _InputList):
            yield from _flat(i.items)
        elif isinstance(i, (list, tuple)):
            yield from _flat(i)
        else:
            yield i


# Attrs that hold a dtype, which the op builders pass as its enum number.
_TYPE_ATTRS = frozenset(("T", "dtype", "DstT", "SrcT", "out_type", "output_type", "Tidx",
                         "Tindices", "Tparams", "Tout", "index_type"))


def _set_simple_attr(attr, value, name=""):
    """Fills AttrValue `attr` from a Python attr value of a simple type (others stay empty)."""
    if isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int) and name in _TYPE_ATTRS:
        attr.type = value
    elif isinstance(value, int):
        attr.i = value
    elif isinstance(value, float):
        attr.f = value
    elif isinstance(value, str):
        attr.s = value.encode()
    elif hasattr(value, "_enum"):
        attr.type = value._enum
    elif isinstance(value, (list, tuple)) and all(type(v) is int for v in value):
        attr.list.i.extend(value)


class _DeviceScopes:
    """The tf.device scopes open now that hold a function, innermost first (Note [Device
    scopes]): each a merge of `spec` or a device function `fn`, and the scopes around it."""

    __slots__ = ("outer", "spec", "fn")

    def __init__(self, outer, spec=None, fn=None):
        self.outer, self.spec, self.fn = outer, spec, fn

    def __call__(self, op):
        """The device of `op` (an _OpToPlace); sets op.device scope by scope on the way."""
        scope = self
        while scope is not None:
            if scope.fn is None:
                merged = scope.spec.make_merged_spec(DeviceSpec.from_string(op.device))
                op.device = merged.to_string()
            else:
                op.device = _device_string(scope.fn(op))
            scope = scope.outer
        return op.device


def _device_string(device):
    if device is None:
        return ""
    if isinstance(device, DeviceSpec):
        return device.to_string()
    if not isinstance(device, str):
        raise TypeError("a device function returned %r; it returns a device name string or a "
                        "DeviceSpec" % (device,))
    return device


# Note [Device scopes]
# As TF 1.15's device function stack: tf.device(None) starts afresh; a string or DeviceSpec scope
# merges (DeviceSpec.make_merged_spec: the inner scope's parts win, unspecified parts come from
# outside); a function scope is called with the op, whose .device holds what the scopes inside
# it gave, and its result (a string, kept as it is, or a DeviceSpec) replaces that
# (replica_device_setter merges it itself, so an inner '/cpu:0' only sets the device type of a
# variable it sends to '/job:ps/task:0'). While only strings are open, Graph._device holds their
# merged canonical spelling ('/job:worker/task:1/device:CPU:0'); once a function is open,
# Graph._device_fn is the chain of _DeviceScopes that runs for every op. Graph._device_scope
# replaces all of it, as TF1's colocate_with does (a variable's own ops, optimizer slots).


# A task every op built without a job requests (shardflow.horovod's init: this rank's task), or
# "" for none.
_base_device = ""


def _set_base_device(device):
    global _base_device
    _base_device = device or ""


def _on_base_device(device):
    if not _base_device or device.startswith("/job:"):
        return device
    return _base_device + device  # "/gpu:0" -> "/job:worker/task:1/gpu:0"


def device(device_name_or_function):
    """``with sf.device("/device:CPU:1"):`` — ops built inside request that device (or the
    device a function of the op returns, e.g. sf.train.replica_device_setter(...)).

    Example::

        with sf.device("/job:worker/task:1/device:CPU:0"):
            h = sf.nn.relu(sf.matmul(x, w))
    """
    return get_default_graph().device(device_name_or_function)


def add_to_collection(name, value):
    """Adds `value` to the default graph's collection `name`."""
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    """Adds `value` to each of the default graph's collections `names` (a name or a list;
    each collection once)."""
    names = [names] if isinstance(names, str) else list(dict.fromkeys(names))
    for name in names:
        add_to_collection(name, value)


def get_collection(key, scope=None):
    """The default graph's collection `key` (a list; empty when none); with `scope`, only the
    items whose name starts with a match of that regular expression (TF1's filter)."""
    return get_default_graph().get_collection(key, scope)


# Collections whose members are the graph's variables (Graph.get_collection).
_VARIABLE_COLLECTIONS = {"variables": "global_variables",
                         "trainable_variables": "trainable_variables",
                         "local_variables": "local_variables"}


class GraphKeys:
    """Names of the standard collections, as TF1's tf.GraphKeys."""

    GLOBAL_STEP = "global_step"
    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    # Batch normalisation's moving-average updates: run them with the train op, as in TF1
    # (``with sf.control_dependencies(sf.get_collection(sf.GraphKeys.UPDATE_OPS)): ...``).
    UPDATE_OPS = "update_ops"
    # Losses: sf.losses.* add theirs to LOSSES; a variable's regularizer penalty (get_variable,
    # layers' kernel_regularizer=) goes to REGULARIZATION_LOSSES. get_total_loss sums both.
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    # The variables ExponentialMovingAverage.apply() keeps averages of.
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    # Weights and biases for apply_regularization's default (filled by the caller, as in TF1
    # where contrib layers add theirs).
    WEIGHTS = "weights"
    BIASES = "biases"
    # Variables of the model proper (contrib.framework.model_variable; contrib.layers' own).
    MODEL_VARIABLES = "model_variables"
    # Summaries (summary.SUMMARIES, the default collection of sf.summary.scalar etc.).
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    # Ops that initialise lookup tables; sf.tables_initializer() groups them (TF1's name).
    TABLE_INITIALIZERS = "table_initializer"
    # A Scaffold's ops and saver, and the train op (TF1's names).
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    SAVERS = "savers"
    TRAIN_OP = "train_op"


def control_dependencies(control_inputs):
    """``with sf.control_dependencies([a]):`` — ops built inside run after `a`."""
    return get_default_graph().control_dependencies(control_inputs)


def _as_tensor_name(x):
    return x if isinstance(x, str) else x.name


def _as_operation(x):
    if isinstance(x, Operation):
        return x
    if isinstance(x, Tensor):
        return x.op
    from shardflow.variables import Variable
    if isinstance(x, Variable):
        return x._read.op
    raise TypeError("expected an Operation or Tensor, got %r" % (x,))


# Ops whose inputs all have the one dtype T: a literal beside a tensor takes the tensor's dtype.
_ONE_DTYPE_OPS = frozenset([
    "Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "DivNoNan", "FloorDiv", "FloorMod",
    "TruncateDiv", "TruncateMod", "Maximum", "Minimum", "Pow", "SquaredDifference", "Atan2",
    "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"])


def _refuse_float_literals(inputs):
    """A TypeError when a Python float literal (also 2.0) stands beside an integer tensor of
    one of _ONE_DTYPE_OPS, as TF1's (x_int32 * 2.5 converts 2.5 to int32 and refuses): it was
    silently truncated to the tensor's dtype."""
    dtype = next((i.dtype for i in inputs if (isinstance(i, Tensor) or hasattr(i, "_read_after"))
                  and i.dtype.is_integer), None)
    if dtype is not None:
        for i in inputs:
            check_no_python_float(i, dtype)


def check_no_python_float(value, dtype):
    """TF1's make_tensor_proto rule: a Python float, or a list holding a non-integer, does not
    become an integer tensor (TypeError "Expected int32, got 2.5 of type 'float' instead.").
    NumPy arrays and scalars are cast, as TF's (np.asarray(value, dtype))."""
    if not dtype.is_integer or isinstance(value, np.generic):
        return
    if isinstance(value, float):
        bad = value
    elif isinstance(value, (list, tuple)) and not _holds_tensor(value):
        try:
            flat = np.asarray(value, dtype=object).ravel()
        except ValueError:   # ragged: the conversion reports it
            return
        bad = next((v for v in flat if isinstance(v, (float, np.floating))), None)
        if bad is None:
            return
    else:
        return
    raise TypeError("Expected %s, got %r of type '%s' instead." % (dtype.name, bad,
                                                                   type(bad).__name__))


def _is_float64_tensor(value):
    """Whether `value` is a float64 Tensor or Variable (a Variable has _read_after)."""
    return (isinstance(value, Tensor) or hasattr(value, "_read_after")) and \
        value.dtype is dtypes.float64


def _float64_literal(value):
    """`value` as a float64 array when it is a Python float (or a list of numbers holding
    one), else `value` itself."""
    if isinstance(value, (float, np.floating)) and not isinstance(value, bool):
        return np.asarray(value, dtype=np.float64)
    if isinstance(value, (list, tuple)) and value and \
            all(isinstance(v, (int, float, np.integer, np.floating)) and
                not isinstance(v, bool) for v in value) and \
            any(isinstance(v, (float, np.floating)) for v in value):
        return np.asarray(value, dtype=np.float64)
    return value


def _literal(value):
    """A Python value or array as an array for a Const: floats become float32, ints int32."""
    if isinstance(value, np.ndarray):
        return value
    arr = np.asarray(value)
    if arr.dtype.kind == "S":
        # Python bytes as objects: NumPy's fixed-width bytes drop trailing NUL bytes (a
        # serialized proto ending in 0 would lose them).
        exact = np.empty(arr.shape, dtype=object)
        exact[...] = value if arr.ndim == 0 else np.array(value, dtype=object).reshape(arr.shape)
        return exact
    if arr.dtype == np.float64:
        return arr.astype(np.float32)
    if arr.dtype == np.int64:
        if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31):
            return arr.astype(np.int32)
    if arr.dtype.kind == "O":
        raise TypeError("cannot convert %r to a tensor" % (value,))
    return arr


def _to_input(graph, x):
    """An op input: a tensor's reference, a list of inputs (list arguments), or a literal."""
    if isinstance(x, Tensor):
        if x.graph is not graph:
            if isinstance(graph, _FuncGraph) and graph._encloses(x.graph):
                return graph._capture(x)._ref
            raise ValueError("tensor %s is from another graph" % x.name)
        return x._ref
    from shardflow.variables import Variable
    if isinstance(x, Variable):
        return _to_input(graph, x.value())
    if isinstance(x, _InputList):
        return [_to_input(graph, i) for i in x.items]
    if isinstance(x, Operation):
        raise TypeError("op %s was given where a tensor is needed; use %s.outputs[0]"
                        % (x.name, x.name))
    if _conversion_registry:
        with graph.as_default():
            converted = _registered_conversion(x, None, None)
        if converted is not None:
            return _to_input(graph, converted)
    if _holds_tensor(x):
        with graph.as_default():
            return _to_input(graph, _pack_list(x, None))
    return _literal(x)


# register_tensor_conversion_function's entries: (priority, order of registration, base_type,
# conversion_func), sorted.
_conversion_registry = []
_conversion_lock = threading.Lock()
# The types whose values are always constants (TF's _UNCONVERTIBLE_TYPES).
_CONSTANT_TYPES = (bool, int, float, np.generic, np.ndarray)


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    """Makes convert_to_tensor (and every op taking a tensor) convert instances of
    `base_type` (a type or a tuple of types) with ``conversion_func(value, dtype=None,
    name=None, as_ref=False)``, as TF1's tf.register_tensor_conversion_function. The
    function returns a Tensor, or NotImplemented to let the next one try; functions are tried
    in ascending `priority`, then in the order they were registered, before shardflow's own
    rules (lists, NumPy arrays). Tensors and Variables are never given to them; Python
    numbers and NumPy scalars and arrays cannot be registered (a TypeError, as TF's).

    Example::

        class Meters:
            def __init__(self, v):
                self.v = v
        sf.register_tensor_conversion_function(
            Meters, lambda m, dtype=None, name=None, as_ref=False:
            sf.constant(m.v, dtype=dtype or sf.float32, name=name))
        y = sf.add(Meters(3.0), 1.0)        # 4.0
    """
    types = base_type if isinstance(base_type, tuple) else (base_type,)
    if not types or not all(isinstance(t, type) for t in types):
        raise TypeError("base_type must be a type or a tuple of types.")
    if any(issubclass(t, _CONSTANT_TYPES) for t in types):
        raise TypeError("Cannot register conversions for Python numeric types and NumPy "
                        "scalars and arrays.")
    if not callable(conversion_func):
        raise TypeError("conversion_func must be callable.")
    with _conversion_lock:
        _conversion_registry.append((int(priority), len(_conversion_registry), base_type,
                                     conversion_func))
        _conversion_registry.sort(key=lambda entry: entry[:2])


def _registered_conversion(value, dtype, name):
    """`value` converted by the first registered function for its type that does not return
    NotImplemented; None when none does (or the value is a Tensor, a Variable or a
    constant's Python number or NumPy value)."""
    from shardflow.variables import Variable
    if isinstance(value, (Tensor, Variable, Operation, _InputList) + _CONSTANT_TYPES):
        return None
    for _, _, base_type, conversion_func in list(_conversion_registry):
        if not isinstance(value, base_type):
            continue
        result = conversion_func(value, dtype=dtype, name=name, as_ref=False)
        if result is NotImplemented:
            continue
        if isinstance(result, Variable):
            result = result.value()
        if not isinstance(result, Tensor):
            raise RuntimeError("Conversion function %r for type %s returned non-Tensor: %r"
                               % (conversion_func, base_type, result))
        if dtype is not None and result.dtype != dtypes.as_dtype(dtype):
            raise RuntimeError("Conversion function %r for type %s returned incompatible dtype: "
                               "requested = %s, actual = %s"
                               % (conversion_func, base_type, dtypes.as_dtype(dtype).name,
                                  result.dtype.name))
        return result
    return None


def _preferred(value, preferred_dtype):
    """preferred_dtype, or TypeError when a Python/NumPy `value` would lose its value in it."""
    preferred = dtypes.as_dtype(preferred_dtype)
    if _holds_tensor(value) or getattr(value, "dtype", None) is not None and \
            not isinstance(value, np.ndarray) and not isinstance(value, np.generic):
        return preferred
    array = np.asarray(value)
    if array.dtype.kind in "fc" and not preferred.is_floating:
        raise TypeError("a float value is not %s" % preferred.name)
    if array.dtype.kind in "iub" and preferred.is_integer:
        info = np.iinfo(preferred.as_numpy_dtype)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise TypeError("out of %s's range" % preferred.name)
    if array.dtype.kind in "SUO" and preferred != dtypes.string:
        raise TypeError("a string is not %s" % preferred.name)
    return preferred


def _holds_tensor(value):
    """Whether `value` is a (nested) list or tuple with a Tensor or Variable in it."""
    from shardflow.variables import Variable
    return isinstance(value, (list, tuple)) and any(
        isinstance(v, (Tensor, Variable)) or _holds_tensor(v) for v in value)


def _pack_list(value, dtype):
    """A list holding tensors as one tensor (TF1's auto-packing, ``sf.concat([x, [t]], 0)``):
    its items stacked, Python numbers in the tensors' dtype."""
    from shardflow.array_ops import stack
    from shardflow.variables import Variable
    items = [convert_to_tensor(v, dtype) if isinstance(v, (Tensor, Variable)) or
             _holds_tensor(v) else v for v in value]
    if dtype is None:
        dtype = next(v.dtype for v in items if isinstance(v, Tensor))
    return stack([convert_to_tensor(v, dtype) for v in items])


class _InputList:
    """Marks an argument that is a list of tensors (AddN, Concat)."""

    def __init__(self, items):
        self.items = list(items)


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None, dtype_hint=None):
    """A Tensor for `value`: tensors pass through, anything else becomes a constant.
    `preferred_dtype` (TF2's name: `dtype_hint`) is tried when no dtype is given, and left
    when `value` cannot be that type without loss (TF1's rule: 1 becomes float32 with
    preferred_dtype=float32, 1.5 stays float32 with preferred_dtype=int32).

    Example::

        t = sf.convert_to_tensor([1.0, 2.0])   # float32 [2]
    """
    preferred_dtype = preferred_dtype if preferred_dtype is not None else dtype_hint
    if dtype is None and preferred_dtype is not None and not isinstance(value, Tensor):
        try:
            return convert_to_tensor(value, _preferred(value, preferred_dtype), name)
        except (TypeError, ValueError):
            pass
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtypes.as_dtype(dtype):
            raise ValueError("tensor %s has dtype %s, not %s"
                             % (value.name, value.dtype.name, dtypes.as_dtype(dtype).name))
        return value
    from shardflow.variables import Variable
    if isinstance(value, Variable):
        return value.value()
    if _conversion_registry:
        converted = _registered_conversion(value, dtype, name)
        if converted is not None:
            return converted
    if _holds_tensor(value):
        packed = _pack_list(value, dtype)
        if name is None:
            return packed
        from shardflow import ops
        return ops.identity(packed, name=name)
    from shardflow import ops
    return ops.constant(value, dtype=dtype, name=name)
