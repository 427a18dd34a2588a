"""TF1's higher-order functions over the first dimension of tensors: map_fn, scan, foldl and
foldr.

Example::

    squares = sf.map_fn(lambda v: v * v, x)                           # row by row
    running = sf.scan(lambda acc, v: acc + v, x)                      # sf.cumsum(x, 0)
    total = sf.foldl(lambda acc, v: acc + v, x, initializer=0.0)

`elems` may be a tensor or a nested list/tuple/dict of tensors of one leading size; fn gets
(and map_fn/scan may return) the same kind of structure. When the leading size is known when
the graph is built, fn is applied to each slice in the graph (unrolled: one copy of fn's ops
per element, as TF1's results, with gradients). When it is known only at run time the
functions run in one while_loop (Note [While as a function call] in
ops/control_flow_ops.cc); map_fn and scan then read their results from the loop's history of a
loop variable, as dynamic_rnn does, and need at least one element.
"""

from shardflow import array_ops, ops
from shardflow.control_flow import _build_while, _flatten, _pack
from shardflow.framework import convert_to_tensor, name_scope


def _flat_elems(elems, what):
    """`elems` flattened to tensors, and their leading size (an int, or None when unknown)."""
    flat = [convert_to_tensor(e) for e in _flatten(elems)]
    if not flat:
        raise ValueError("%s: elems is empty" % what)
    sizes = set()
    for e in flat:
        if e.shape.ndims == 0:
            raise ValueError("%s: elems must have a first dimension, got the scalar %s"
                             % (what, e.name))
        sizes.add(e.shape.as_list()[0] if e.shape.ndims is not None else None)
    known = sizes - {None}
    if len(known) > 1:
        raise ValueError("%s: the tensors of elems have different first dimensions %s"
                         % (what, sorted(known)))
    return flat, (known.pop() if known and None not in sizes else None)


def _leading(flat):
    """The run-time leading size of the first tensor of `flat` (an int32 scalar)."""
    return ops.shape(flat[0])[0]


def _slice(elems, flat, i):
    """elems[i] for every tensor, in elems' structure (i an int or an int32 scalar tensor)."""
    return _pack(elems, [array_ops.gather(e, i) for e in flat])


def _stack(results):
    """[per-element results] (each the same structure) as one structure of stacked tensors."""
    flats = [[convert_to_tensor(r) for r in _flatten(res)] for res in results]
    stacked = [array_ops.stack([f[k] for f in flats]) for k in range(len(flats[0]))]
    return _pack(results[0], stacked)


def _unstacked(flat, n, reverse=False):
    """For each element index, the list of slices of every tensor of `flat`."""
    parts = [array_ops.unstack(e, num=n) for e in flat]
    order = range(n - 1, -1, -1) if reverse else range(n)
    return [(i, [p[i] for p in parts]) for i in order]


def _history(loop_op, n_vars, index):
    """The values loop variable `index` had entering each iteration of a While op."""
    return loop_op.outputs[n_vars + 1 + index]


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None):
    """TF1's tf.map_fn: [fn(elems[0]), fn(elems[1]), ...] stacked. `dtype` (the structure of
    fn's outputs when it differs from elems') is accepted; the structure fn returns is used.
    parallel_iterations and swap_memory are accepted and ignored."""
    with name_scope(name or "map"):
        flat, n = _flat_elems(elems, "map_fn")
        if n is not None:
            if n == 0:
                raise ValueError("map_fn over zero elements: the result's shape is unknown")
            return _stack([fn(_pack(elems, s)) for _, s in _unstacked(flat, n)])
        size = _leading(flat)
        first = fn(_slice(elems, flat, 0))
        first_flat = [convert_to_tensor(r) for r in _flatten(first)]

        def cond(t, *outs):
            return ops.less(t, size)

        def body(t, *outs):
            nxt = ops.add(t, 1)
            res = fn(_slice(elems, flat, ops.minimum(nxt, ops.subtract(size, 1))))
            return [nxt] + [convert_to_tensor(r) for r in _flatten(res)]

        op, count, _ = _build_while(cond, body, [ops.constant(0)] + first_flat, back_prop=True,
                                 name="while")
        outs = [_history(op, count, 1 + k) for k in range(len(first_flat))]
        return _pack(first, outs)


def scan(fn, elems, initializer=None, parallel_iterations=None, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """TF1's tf.scan: a_i = fn(a_{i-1}, elems[i]), starting from `initializer` (default:
    elems[0], which is then also the first result); returns [a_0, a_1, ...] stacked (with
    reverse, from the last element back, results in elems' order)."""
    with name_scope(name or "scan"):
        flat, n = _flat_elems(elems, "scan")
        if n is not None:
            steps = _unstacked(flat, n, reverse)
            if initializer is None:
                if n == 0:
                    raise ValueError("scan over zero elements needs an initializer")
                (i0, s0), steps = steps[0], steps[1:]
                acc = _pack(elems, s0)
                results = [(i0, acc)]
            else:
                acc, results = initializer, []
            for i, s in steps:
                acc = fn(acc, _pack(elems, s))
                results.append((i, acc))
            if not results:
                raise ValueError("scan over zero elements: the result's shape is unknown")
            results.sort(key=lambda r: r[0])
            return _stack([r for _, r in results])
        if reverse:
            # Over the elements reversed, the results reversed back into elems' order.
            backwards = _pack(elems, [ops.reverse(e, [0]) for e in flat])
            result = scan(fn, backwards, initializer, back_prop=back_prop, name="reverse")
            return _pack(result, [ops.reverse(r, [0]) for r in _flatten(result)])
        size = _leading(flat)
        first = _slice(elems, flat, 0) if initializer is None \
            else fn(initializer, _slice(elems, flat, 0))
        first_flat = [convert_to_tensor(r) for r in _flatten(first)]

        def cond(t, *acc):
            return ops.less(t, size)

        def body(t, *acc):
            nxt = ops.add(t, 1)
            res = fn(_pack(first, list(acc)),
                     _slice(elems, flat, ops.minimum(nxt, ops.subtract(size, 1))))
            return [nxt] + [convert_to_tensor(r) for r in _flatten(res)]

        op, count, _ = _build_while(cond, body, [ops.constant(0)] + first_flat,
                                 back_prop=True, name="while")
        outs = [_history(op, count, 1 + k) for k in range(len(first_flat))]
        return _pack(first, outs)


def _fold(fn, elems, initializer, reverse, what):
    flat, n = _flat_elems(elems, what)
    if n is not None:
        steps = _unstacked(flat, n, reverse)
        if initializer is None:
            if n == 0:
                raise ValueError("%s over zero elements needs an initializer" % what)
            acc, steps = _pack(elems, steps[0][1]), steps[1:]
        else:
            acc = initializer
        for _, s in steps:
            acc = fn(acc, _pack(elems, s))
        return acc
    size = _leading(flat)

    def index(t):
        return ops.subtract(ops.subtract(size, 1), t) if reverse else t

    if initializer is None:
        acc0, t0 = _slice(elems, flat, index(ops.constant(0))), ops.constant(1)
    else:
        acc0, t0 = initializer, ops.constant(0)
    acc_flat = [convert_to_tensor(a) for a in _flatten(acc0)]

    def cond(t, *acc):
        return ops.less(t, size)

    def body(t, *acc):
        res = fn(_pack(acc0, list(acc)), _slice(elems, flat, index(t)))
        return [ops.add(t, 1)] + [convert_to_tensor(r) for r in _flatten(res)]

    op, count, _ = _build_while(cond, body, [t0] + acc_flat, back_prop=True, name="while")
    return _pack(acc0, list(op.outputs[1:count]))


def foldl(fn, elems, initializer=None, parallel_iterations=None, back_prop=True,
          swap_memory=False, name=None):
    """TF1's tf.foldl: fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1])
    (initializer defaults to elems[0], folding the rest)."""
    with name_scope(name or "foldl"):
        return _fold(fn, elems, initializer, False, "foldl")


def foldr(fn, elems, initializer=None, parallel_iterations=None, back_prop=True,
          swap_memory=False, name=None):
    """TF1's tf.foldr: foldl from the last element back (initializer defaults to the last
    element)."""
    with name_scope(name or "foldr"):
        return _fold(fn, elems, initializer, True, "foldr")


__all__ = ["foldl", "foldr", "map_fn", "scan"]
