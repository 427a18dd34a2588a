"""Symbolic differentiation.

Example::

    x = sf.placeholder(sf.float32, [3])
    y = sf.reduce_sum(x * x)
    (dx,) = sf.gradients(y, [x])      # 2 * x
"""

from shardflow.framework import convert_to_tensor, get_default_graph
from shardflow.variables import Variable


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def gradients(ys, xs, grad_ys=None, name=None):
    """The gradients of sum(ys) with respect to each of `xs` (tensors or Variables).

    Returns a list with one Tensor per x, or None where ys do not depend on x. `grad_ys`
    weights each y (default: ones).

    Example::

        loss = sf.reduce_mean(sf.square(x @ w - y))
        dw, db = sf.gradients(loss, [w, b])
    """
    ys = [convert_to_tensor(y) for y in _as_list(ys)]
    xs = [x.value() if isinstance(x, Variable) else convert_to_tensor(x) for x in _as_list(xs)]
    gys = [] if grad_ys is None else [convert_to_tensor(g) for g in _as_list(grad_ys)]
    g = ys[0].graph if ys else get_default_graph()
    with g.name_scope(name or "gradients"):
        refs = g._handle.gradients([y._ref for y in ys], [x._ref for x in xs],
                                   [t._ref for t in gys], g._ctx())
    out = []
    for r in refs:
        out.append(None if r is None else g.get_operation_by_name(r.node).outputs[r.index])
    return out

