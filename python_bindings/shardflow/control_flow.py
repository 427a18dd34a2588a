"""TF1's tf.cond and tf.case, for branches without side effects.

Note [cond without control flow]. The engine has no Switch/Merge yet (issue 14's control flow
is still to come). Until then `cond(pred, true_fn, false_fn)` builds both branches and selects
between their results element-wise, with a cast of `pred`: the value is TF1's, gradients flow to
the branch that was taken, and placement and profiling see ordinary ops. What differs from TF1:
both branches run, so a branch that changes state (assign, an optimizer step, a queue) would
change it in either case; that is refused (the error names the op), as is a pair of branches
whose results differ in structure. A non-finite value in the branch not taken still poisons the
gradient (0 * inf), as with tf.where.
"""

from shardflow import dtypes, ops
from shardflow.framework import Operation, convert_to_tensor, get_default_graph

_STATEFUL = ("Assign", "ResourceApply", "Queue", "ResourceAccumulator", "Collective", "Save",
             "Restore")


def _build(fn, what):
    g = get_default_graph()
    before = set(g._handle.node_names())
    result = fn()
    for name in g._handle.node_names():
        if name in before:
            continue
        op_type = g.get_operation_by_name(name).type
        if op_type.startswith(_STATEFUL):
            raise ValueError(
                "cond: the %s branch builds '%s' (%s), which changes state; shardflow's cond runs "
                "both branches (Note [cond without control flow] in shardflow/control_flow.py), "
                "so move the update out of the branch, e.g. compute the value with cond and "
                "assign it after" % (what, name, op_type))
    return result


def _flatten(x):
    if isinstance(x, (list, tuple)):
        out = []
        for item in x:
            out.extend(_flatten(item))
        return out
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _flatten(x[k])]
    return [x]


def _pack(structure, flat):
    it = iter(flat)

    def rebuild(x):
        if isinstance(x, tuple):
            return tuple(rebuild(i) for i in x)
        if isinstance(x, list):
            return [rebuild(i) for i in x]
        if isinstance(x, dict):
            return {k: rebuild(x[k]) for k in sorted(x)}
        return next(it)
    return rebuild(structure)


def _select(pred, a, b):
    if isinstance(a, Operation) or isinstance(b, Operation) or a is None or b is None:
        raise ValueError("cond: both branches must return tensors (got %r and %r)" % (a, b))
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    if a.dtype != b.dtype:
        raise ValueError("cond: the branches return %s and %s" % (a.dtype.name, b.dtype.name))
    if a.dtype.is_floating:
        take = ops.cast(pred, a.dtype)
        return ops.add(ops.multiply(take, a), ops.multiply(ops.subtract(1, take), b))
    # Integers and bools: select through a float mask, then back.
    take = ops.cast(pred, dtypes.float64)
    mixed = ops.add(ops.multiply(take, ops.cast(a, dtypes.float64)),
                    ops.multiply(ops.subtract(1.0, take), ops.cast(b, dtypes.float64)))
    return ops.cast(mixed, a.dtype)


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """TF1's tf.cond for branches without side effects (Note [cond without control flow]):
    the value of true_fn() where `pred` (a scalar bool tensor) is true, else of false_fn().

    Example: ``h = tf.cond(is_training, lambda: tf.nn.dropout(h, 0.5), lambda: h)``.
    """
    true_fn = true_fn or fn1
    false_fn = false_fn or fn2
    if true_fn is None or false_fn is None:
        raise ValueError("cond needs true_fn and false_fn")
    pred = convert_to_tensor(pred)
    if pred.dtype != dtypes.bool_:
        raise TypeError("cond: pred must be a bool tensor, not %s" % pred.dtype.name)
    if pred.shape.ndims not in (None, 0):
        raise ValueError("cond: pred must be a scalar, got shape %s" % pred.shape.as_list())
    a = _build(true_fn, "true")
    b = _build(false_fn, "false")
    flat_a, flat_b = _flatten(a), _flatten(b)
    if len(flat_a) != len(flat_b):
        raise ValueError("cond: the branches return different structures (%d and %d values)"
                         % (len(flat_a), len(flat_b)))
    chosen = [_select(pred, x, y) for x, y in zip(flat_a, flat_b)]
    if name and len(chosen) == 1:
        chosen = [ops.identity(chosen[0], name=name)]
    return _pack(a, chosen)


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """TF1's tf.case: the first pair whose predicate is true, else `default` (same rules as
    cond: every branch is built and must be free of side effects)."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else \
        list(pred_fn_pairs)
    if default is None:
        if not pairs:
            raise ValueError("case needs pairs or a default")
        pairs, (_, default) = pairs[:-1], pairs[-1]
    result_fn = default
    for pred, fn in reversed(pairs):
        result_fn = (lambda p, f, rest: lambda: cond(p, f, rest))(pred, fn, result_fn)
    return result_fn()


__all__ = ["case", "cond"]
