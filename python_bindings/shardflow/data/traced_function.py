"""The function of a map or filter: traced once into a graph of its own, then run on NumPy values.

The user's function is called once, on placeholders shaped like one element, inside a function
graph of the graph that is the default when the dataset is built (framework._FuncGraph). A tensor
of that outer graph the function uses (a constant, a placeholder fed when the iterator is
initialized) is captured: it becomes a placeholder of the function graph, and its value is
computed in the user's session when an iterator is initialized and fed on every call. The
function graph runs in a private Session, one element per call.

Example::

    fn = TracedFunction(lambda x: sf.cast(x, sf.float32) / 255.0, structure, specs, "map")
    (y,) = fn(element, captured_values)

Note [Vectorised map]: when the function is element-wise (every op on the way from an argument
to a result is a cwise op, constants and captured values are scalars, and the arguments a result
reads have its shape), applying it to a whole batch gives the batch of its results, so
``ds.map(fn).batch(n)`` runs it once per batch instead of once per element
(dataset_ops.BatchDataset). batched() traces it again on batch-shaped placeholders for that.

Thread safety: calls may come from several threads (Session.run is thread safe).
"""

import threading

import numpy as np

from shardflow import ops
from shardflow.data import structure as nest
from shardflow.framework import Operation, Tensor, _FuncGraph, convert_to_tensor, \
    get_default_graph

# Ops that compute each output element from the same element of their inputs.
_ELEMENTWISE_OPS = frozenset((
    "Identity", "StopGradient", "Cast", "Add", "AddV2", "Sub", "Mul", "Div", "RealDiv",
    "FloorDiv", "FloorMod", "Maximum", "Minimum", "Pow", "SquaredDifference", "Neg", "Abs",
    "Square", "Sign", "Sqrt", "Rsqrt", "Exp", "Log", "Tanh", "Sigmoid", "Reciprocal", "Floor",
    "Ceil", "Round", "Sin", "Cos", "Log1p", "Expm1", "Erf", "Relu", "Relu6", "Elu", "Selu",
    "Softplus", "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
    "LogicalAnd", "LogicalOr", "LogicalNot", "IsNan", "IsInf", "IsFinite", "ZerosLike",
    "OnesLike"))


def _call(fn, args):
    """Calls `fn` on an element as TF1 does: a tuple spreads into arguments."""
    if type(args) is tuple:
        return fn(*args)
    return fn(args)


class TracedFunction:
    """`fn` of one element with `structure` and component `specs` ([(DType, TensorShape)]).

    output_structure / output_specs describe what it returns; captures lists the outer tensors
    whose values each call needs (pass them to __call__ as {tensor name: array}).
    """

    def __init__(self, fn, structure, specs, what):
        if not callable(fn):
            raise TypeError("Dataset.%s takes a function, not %r" % (what, fn))
        self._fn = fn
        self._what = what
        self._structure = structure
        self._specs = list(specs)
        self._outer = get_default_graph()
        (self._graph, self._args, self._outputs, self.output_structure,
         self._captured) = self._trace([shape for _, shape in self._specs])
        self.output_specs = [(t.dtype, t.shape) for t in self._outputs]
        self.captures = [outer for outer, _ in self._graph._captures]
        self._session = None
        self._lock = threading.Lock()
        self._batched = None  # False: not element-wise; else the batch-shaped TracedFunction

    def _trace(self, arg_shapes):
        graph = _FuncGraph(self._outer, "Dataset_" + self._what)
        with graph.as_default():
            args = [ops.placeholder(dtype, None if shape.ndims is None else shape.as_list(),
                                    name="arg%d" % i)
                    for i, ((dtype, _), shape) in enumerate(zip(self._specs, arg_shapes))]
            result = _call(self._fn, nest.pack_as(self._structure, args))
            result = nest.lists_to_tuples(result)
            outputs = [self._as_output(graph, r) for r in nest.flatten(result)]
        captured = [(outer.name, ph) for outer, ph in graph._captures]
        return graph, args, outputs, result, captured

    def _as_output(self, graph, value):
        if value is None or isinstance(value, Operation):
            raise TypeError("the function given to Dataset.%s returned %r; it must return "
                            "tensors (or values convertible to tensors)" % (self._what, value))
        if isinstance(value, Tensor) and value.graph is graph:
            return value
        tensor = convert_to_tensor(value)
        if tensor.graph is not graph:  # a tensor of the outer graph: captured
            tensor = ops.identity(graph._capture(tensor))
        return tensor

    def _run(self, feeds):
        session = self._session
        if session is None:
            with self._lock:
                if self._session is None:
                    from shardflow.session import Session
                    self._session = Session(graph=self._graph)
                session = self._session
        return session.run(tuple(self._outputs), feeds)

    def __call__(self, flat_element, captured_values):
        """The function's flat result (a tuple of arrays) for one flat element."""
        feeds = dict(zip(self._args, flat_element))
        for name, ph in self._captured:
            feeds[ph] = captured_values[name]
        # A scalar string comes back from Session.run as `bytes`; elements hold arrays (an
        # object array for strings, as the readers yield them), which batch() stacks.
        return tuple(np.array(v, dtype=object) if isinstance(v, (bytes, str)) else v
                     for v in self._run(feeds))

    # ---- Note [Vectorised map] ----------------------------------------------------------

    def batched(self):
        """This function traced on batches (a TracedFunction whose arguments have one more
        leading dimension), or None when it is not element-wise."""
        if self._batched is None:
            self._batched = self._trace_batched() if self._is_elementwise() else False
        return self._batched or None

    def _is_elementwise(self):
        handle = self._graph._handle
        arg_shapes = {t.op.name: t.shape for t in self._args}
        captured = {ph.op.name: ph.shape for _, ph in self._captured}
        for out in self._outputs:
            if not out.shape.is_fully_defined():
                return False
            reached_arg, stack, seen = False, [out.op.name], set()
            while stack:
                name = stack.pop()
                if name in seen:
                    continue
                seen.add(name)
                info = handle.node_info(name)
                if info["control_inputs"]:
                    return False
                if name in arg_shapes:
                    if arg_shapes[name] != out.shape:
                        return False
                    reached_arg = True
                elif name in captured or info["op"] == "Const":
                    if self._graph.get_tensor_by_name(name).shape != []:
                        return False
                elif info["op"] in _ELEMENTWISE_OPS:
                    stack.extend(i.partition(":")[0] for i in info["inputs"])
                else:
                    return False
            if not reached_arg:
                return False
        return True

    def _trace_batched(self):
        batched = TracedFunction.__new__(TracedFunction)
        batched.__dict__.update(self.__dict__)
        try:
            (batched._graph, batched._args, batched._outputs, _,
             batched._captured) = self._trace(
                 [nest.with_leading(None, shape) for _, shape in self._specs])
        except Exception:  # noqa: BLE001 (the per-element function stays correct)
            return False
        for out, (dtype, shape) in zip(batched._outputs, self.output_specs):
            if out.dtype != dtype or not nest.shapes_compatible(
                    out.shape, nest.with_leading(None, shape)):
                return False
        batched._session = None
        batched._lock = threading.Lock()
        batched._batched = False
        return batched
