"""Symbolic differentiation.

Example::

    x = sf.placeholder(sf.float32, [3])
    y = sf.reduce_sum(x * x)
    (dx,) = sf.gradients(y, [x])      # 2 * x
"""

import functools
import itertools
import threading

from shardflow import _shardflow as _C
from shardflow.framework import _InputList, convert_to_tensor, get_default_graph
from shardflow.variables import Variable

# name -> the Python gradient function registered under it (RegisterGradient).
_python_gradients = {}
# The graph sf.gradients is differentiating, for the Python gradient functions it calls.
_active = threading.local()
_custom_ids = itertools.count()


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def gradients(ys, xs, grad_ys=None, name=None, colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None,
              unconnected_gradients="none"):
    """The gradients of sum(ys) with respect to each of `xs` (tensors or Variables).

    Returns a list with one Tensor per x, or None where ys do not depend on x (zeros with
    unconnected_gradients="zero"). `grad_ys` weights each y (default: ones). The ops of
    `stop_gradients` pass no gradient to their inputs, as if they were constants (TF1's).
    colocate_gradients_with_ops, gate_gradients and aggregation_method are accepted: the
    backward ops are on their forward ops' devices either way.

    Example::

        loss = sf.reduce_mean(sf.square(x @ w - y))
        dw, db = sf.gradients(loss, [w, b])
    """
    ys = [convert_to_tensor(y) for y in _as_list(ys)]
    given = _as_list(xs)
    # A Variable's gradient is that of its read, plus those of the reads read_value() made
    # under control dependencies (variables.py).
    xs, owner, primary = [], [], []
    for i, x in enumerate(given):
        reads = [x._read] + x.__dict__.get("_extra_reads", []) if isinstance(x, Variable) \
            else [convert_to_tensor(x)]
        primary.append(reads[0])
        if not _differentiable(reads[0].dtype):
            continue      # as TF1's: an integer (or bool, string) x gets no gradient
        xs.extend(reads)
        owner.extend([i] * len(reads))
    gys = [] if grad_ys is None else [convert_to_tensor(g) for g in _as_list(grad_ys)]
    stops = [s._read if isinstance(s, Variable) else convert_to_tensor(s)
             for s in _as_list(stop_gradients or [])]
    unconnected = getattr(unconnected_gradients, "value", unconnected_gradients)
    if unconnected not in ("none", "zero"):
        raise ValueError("gradients: unconnected_gradients must be 'none' or 'zero', not %r"
                         % (unconnected_gradients,))
    g = ys[0].graph if ys else get_default_graph()
    outer = getattr(_active, "graph", None)
    _active.graph = g
    try:
        with g.name_scope(name or "gradients"):
            refs = g._handle.gradients([y._ref for y in ys], [x._ref for x in xs],
                                       [t._ref for t in gys], [t._ref for t in stops], g._ctx())
    finally:
        _active.graph = outer
    found = [None] * len(given)
    for i, r in zip(owner, refs):
        if r is None:
            continue
        grad = g.get_operation_by_name(r.node).outputs[r.index]
        if found[i] is None:
            found[i] = grad
        else:
            from shardflow import ops
            with g.name_scope(name or "gradients"):
                found[i] = ops.add(found[i], grad)
    return [grad if grad is not None else
            (None if unconnected == "none" else _zeros_like(x))
            for x, grad in zip(primary, found)]


def _differentiable(dtype):
    return dtype.is_floating or dtype.name.startswith("complex")


def _zeros_like(x):
    from shardflow import ops
    return ops.zeros_like(x)


class AggregationMethod:
    """TF1's tf.AggregationMethod, for gradients(aggregation_method=...): accepted; the engine
    adds a tensor's gradients with one AddN."""
    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class UnconnectedGradients:
    """TF1's tf.UnconnectedGradients: what gradients gives for an x that ys do not depend on."""
    NONE = "none"
    ZERO = "zero"


def _call_python_gradient(grad_name, node, grads):
    """Called by the C++ differentiation for a node whose gradient is `grad_name`."""
    g = getattr(_active, "graph", None) or get_default_graph()
    try:
        op = g.get_operation_by_name(node)
    except Exception:
        if "/forward/" not in node:
            raise
        raise NotImplementedError(
            "the Python gradient '%s' is asked for inside the gradient of a while_loop body or "
            "cond branch ('%s'), which the engine builds itself: Python gradients "
            "(RegisterGradient, gradient_override_map, custom_gradient, ops whose gradient is "
            "Python's) run only outside while_loop, cond and dynamic_rnn; move the op out of "
            "the loop or cond, or give it a C++ gradient (docs/python.md, control flow)"
            % (grad_name, node)) from None
    dys = [g.get_operation_by_name(n).outputs[i] for n, i in grads]
    out = _python_gradients[grad_name](op, *dys)
    if not isinstance(out, (list, tuple)):
        out = [out]
    if len(out) != len(op.inputs):
        raise ValueError("the gradient '%s' of %s (%s) returned %d gradient(s) for %d input(s)"
                         % (grad_name, node, op.type, len(out), len(op.inputs)))
    result = []
    for t in out:
        if t is None:
            result.append(None)
        else:
            t = convert_to_tensor(t)
            result.append((t.op.name, t.value_index))
    return result


class RegisterGradient(object):
    """Registers a Python gradient function under a name, as TF1's tf.RegisterGradient::

        @sf.RegisterGradient("ClipGrad")
        def _clip(op, grad):          # one grad per output of op
            return sf.clip_by_value(grad, -1.0, 1.0)   # one per input (None: no gradient)

    The name is an op type (for ops registered from Python) or a name that
    Graph.gradient_override_map maps op types to. Registering a name twice is a KeyError.
    """

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError("RegisterGradient takes the op type as a string, not %r" % (op_type,))
        self._op_type = op_type

    def __call__(self, f):
        if self._op_type in _python_gradients:
            raise KeyError("Registering two gradient with name '%s'!" % self._op_type)
        _python_gradients[self._op_type] = f
        _C.register_python_gradient(self._op_type,
                                    functools.partial(_call_python_gradient, self._op_type))
        return f


def NoGradient(op_type):  # noqa: N802 (TF1's name)
    """Declares that ops of `op_type` have no gradient (their inputs get none)."""
    if not isinstance(op_type, str):
        raise TypeError("NoGradient takes the op type as a string, not %r" % (op_type,))
    _C.register_no_gradient(op_type)


NotDifferentiable = NoGradient
no_gradient = NoGradient  # TF 1.15's tf.no_gradient


def custom_gradient(f):
    """Decorator: `f(*xs)` returns `(y, grad_fn)` and sf.gradients then uses `grad_fn(dy)`
    (one dy per result) for the gradients of the xs instead of differentiating f, as TF1's
    tf.custom_gradient::

        @sf.custom_gradient
        def clip_gradient(x):
            def grad(dy):
                return sf.clip_by_norm(dy, 1.0)
            return sf.identity(x), grad

    grad_fn returns one gradient per x (a tensor, or a list for several xs). The gradient of
    variables that f reads inside is not supported (pass them as arguments instead).
    """
    @functools.wraps(f)
    def decorated(*args):
        g = get_default_graph()
        xs = [convert_to_tensor(a) for a in args]
        result, grad_fn = f(*xs)
        single = not isinstance(result, (list, tuple))
        ys = [convert_to_tensor(r) for r in ([result] if single else result)]
        name = "CustomGradient-%d" % next(_custom_ids)

        def _grad(op, *grads):
            dxs = grad_fn(*grads[:len(ys)])
            dxs = list(dxs) if isinstance(dxs, (list, tuple)) else [dxs]
            if len(dxs) != len(xs):
                raise ValueError("custom_gradient: %s's gradient function returned %d "
                                 "gradient(s) for %d argument(s)"
                                 % (getattr(f, "__name__", "f"), len(dxs), len(xs)))
            # No gradient into f's results (f is not differentiated); the arguments' come
            # from grad_fn.
            return [None] * len(ys) + dxs

        RegisterGradient(name)(_grad)
        with g.gradient_override_map({"IdentityN": name}):
            outs = g._add_op("IdentityN", [_InputList(ys + xs)],
                             {"T": [t.dtype._enum for t in ys + xs]}, name="IdentityN").outputs
        outs = list(outs[:len(ys)])
        return outs[0] if single else outs
    return decorated
