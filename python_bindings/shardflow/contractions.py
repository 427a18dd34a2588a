"""tf.tensordot and tf.einsum, lowered to transpose, reshape, matmul and reduce_sum (so
their gradients are those of these ops).

Example::

    y = sf.tensordot(x, w, axes=[[2], [0]])          # [b, t, d] . [d, k] -> [b, t, k]
    y = sf.einsum("bij,bjk->bik", a, b)              # a batched matmul
    s = sf.einsum("ij->j", m)                        # column sums

einsum covers one or two operands whose indices each appear at most once per operand,
without "..." (what TF1 programs mostly write); anything else is a ValueError naming the
equation. Dimensions may be unknown when the graph is built: their sizes are read at run time.
Batch indices (in both operands and the output) become one MatMul per batch item when their
sizes are known, else a broadcast product summed over the contracted size.
"""

import string

from shardflow import dtypes, ops
from shardflow.array_composites import dim_size, shape_of
from shardflow.framework import Tensor, convert_to_tensor


def _product(dims):
    """The product of Python ints and int32 scalar tensors (an int when all are ints)."""
    static = 1
    dynamic = None
    for d in dims:
        if isinstance(d, Tensor):
            dynamic = d if dynamic is None else ops.multiply(dynamic, d)
        else:
            static *= int(d)
    if dynamic is None:
        return static
    return ops.multiply(dynamic, static) if static != 1 else dynamic


def _known_rank(x, what):
    x = convert_to_tensor(x)
    if x.shape.ndims is None:
        raise ValueError("%s needs operands of known rank, got %r" % (what, x))
    return x


def _transpose_if_needed(x, perm):
    return x if perm == list(range(len(perm))) else ops.transpose(x, perm)


def _contract(a, b, batch, free_a, contract_a, free_b, contract_b):
    """Sum over the paired axes contract_a / contract_b of a and b, matching their `batch`
    axis pairs; the result is [batch..., free_a..., free_b...] (axes of a, then b)."""
    batch_a, batch_b = [p[0] for p in batch], [p[1] for p in batch]
    a_t = _transpose_if_needed(a, batch_a + free_a + contract_a)
    b_t = _transpose_if_needed(b, batch_b + contract_b + free_b)
    batch_dims = [dim_size(a, i) for i in batch_a]
    free_a_dims = [dim_size(a, i) for i in free_a]
    free_b_dims = [dim_size(b, i) for i in free_b]
    k = _product([dim_size(a, i) for i in contract_a])
    m, n = _product(free_a_dims), _product(free_b_dims)
    if not batch:
        product = ops.matmul(ops.reshape(a_t, shape_of([m, k])),
                             ops.reshape(b_t, shape_of([k, n])))
    else:
        size = _product(batch_dims)
        a_m = ops.reshape(a_t, shape_of([size, m, k]))
        b_m = ops.reshape(b_t, shape_of([size, k, n]))
        if isinstance(size, int):
            product = ops.matmul(a_m, b_m)        # one MatMul per batch item
        else:
            # A batch known only at run time: [B, m, k, 1] * [B, 1, k, n] summed over k.
            product = ops.reduce_sum(ops.multiply(ops.expand_dims(a_m, 3),
                                                  ops.expand_dims(b_m, 1)), axis=2)
    return ops.reshape(product, shape_of(batch_dims + free_a_dims + free_b_dims))


def tensordot(a, b, axes, name=None):
    """TF1's tf.tensordot: the sum of a * b over a's axes axes[0] paired with b's axes[1]
    (an int N: a's last N with b's first N); the result has a's other dimensions, then b's."""
    a = _known_rank(a, "tensordot")
    b = _known_rank(b, "tensordot")
    ra, rb = a.shape.ndims, b.shape.ndims
    if isinstance(axes, Tensor):
        raise ValueError("tensordot: axes must be an int or a pair of lists of ints, not a "
                         "tensor")
    if isinstance(axes, int):
        if not 0 <= axes <= min(ra, rb):
            raise ValueError("tensordot: axes=%d is out of range for ranks %d and %d"
                             % (axes, ra, rb))
        axes_a, axes_b = list(range(ra - axes, ra)), list(range(axes))
    else:
        if len(axes) != 2:
            raise ValueError("tensordot: axes must be an int or a pair of lists, got %r"
                             % (axes,))
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, int) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, int) else list(axes_b)
        if len(axes_a) != len(axes_b):
            raise ValueError("tensordot: %d axes of a paired with %d of b (%r)"
                             % (len(axes_a), len(axes_b), axes))
        axes_a = [int(i) % ra for i in axes_a]
        axes_b = [int(i) % rb for i in axes_b]
    for i, j in zip(axes_a, axes_b):
        da, db = a.shape.as_list()[i], b.shape.as_list()[j]
        if da is not None and db is not None and da != db:
            raise ValueError("tensordot: a's axis %d (size %d) is paired with b's axis %d "
                             "(size %d)" % (i, da, j, db))
    free_a = [i for i in range(ra) if i not in axes_a]
    free_b = [i for i in range(rb) if i not in axes_b]
    out = _contract(a, b, [], free_a, axes_a, free_b, axes_b)
    return ops.identity(out, name=name)


def _expand_ellipsis(equation, inputs):
    """The equation with each '...' written out as letters it does not use: as many as the
    operand's rank has beyond its named indices, the operands' ellipses aligned at the right
    (as TF's broadcasting; their sizes must agree). The output's '...' (or, without '->', the
    output's front) takes them all."""
    eq = equation.replace(" ", "")
    if "..." not in eq:
        return equation
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(inputs) or any(t.count("...") > 1 for t in terms + [out]):
        return equation                       # _parse names the problem
    used = {c for c in eq if c.isalpha()}
    fresh = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in used]
    counts = []
    for term, x in zip(terms, inputs):
        if "..." in term:
            rank = _known_rank(x, "einsum(%r)" % equation).shape.ndims
            n = rank - (len(term) - 3)
            if n < 0:
                raise ValueError("einsum(%r): operand %r has rank %d, fewer dimensions than it "
                                 "names" % (equation, term, rank))
            counts.append(n)
        else:
            counts.append(0)
    width = max(counts)
    letters = "".join(fresh[:width])
    terms = [t.replace("...", letters[width - n:]) for t, n in zip(terms, counts)]
    if arrow:
        out = out.replace("...", letters)
    else:
        named = "".join(c for t in terms for c in t if c not in letters)
        out = letters + "".join(sorted(c for c in set(named) if named.count(c) == 1))
    return ",".join(terms) + "->" + out


def _parse(equation, count):
    """(input index strings, output index string) of an einsum equation; a ValueError naming
    it for what this lowering does not cover."""
    eq = equation.replace(" ", "")
    if "." in eq:
        raise ValueError("einsum(%r): an ellipsis ('...') at most once per operand" % equation)
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs = eq
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    inputs = lhs.split(",")
    if len(inputs) != count:
        raise ValueError("einsum(%r): the equation names %d operands but %d were given"
                         % (equation, len(inputs), count))
    if count not in (1, 2):
        raise ValueError("einsum(%r): only one or two operands are supported; chain einsums "
                         "for more" % equation)
    for term in inputs + [out]:
        if not term.isalpha() and term:
            raise ValueError("einsum(%r): indices must be letters" % equation)
        if len(set(term)) != len(term):
            raise ValueError("einsum(%r): an index repeated within one operand (a trace or a "
                             "diagonal) is not supported" % equation)
    for c in out:
        if c not in "".join(inputs):
            raise ValueError("einsum(%r): output index %r appears in no input"
                             % (equation, c))
    return inputs, out


def einsum(equation, *inputs, **kwargs):
    """TF1's tf.einsum for one operand ("ij->ji", "ij->j", "ij->") and two operands
    ("ij,jk->ik", "bij,bjk->bik", "i,j->ij", "ij,ij->i", ...); indices only in the output's
    absence are summed. Lowered to reduce_sum, transpose, reshape and matmul."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("einsum: unexpected arguments %s" % ", ".join(sorted(kwargs)))
    terms, out = _parse(_expand_ellipsis(equation, inputs), len(inputs))
    operands = []
    for term, x in zip(terms, inputs):
        x = _known_rank(x, "einsum(%r)" % equation)
        if x.shape.ndims != len(term):
            raise ValueError("einsum(%r): operand %r has rank %d, not %d"
                             % (equation, term, x.shape.ndims, len(term)))
        operands.append(x)
    # Sum first the indices only one operand has and the output lacks.
    reduced = []
    for i, (term, x) in enumerate(zip(terms, operands)):
        others = "".join(t for j, t in enumerate(terms) if j != i)
        drop = [k for k, c in enumerate(term) if c not in out and c not in others]
        if drop:
            x = ops.reduce_sum(x, axis=drop)
            term = "".join(c for k, c in enumerate(term) if k not in drop)
        reduced.append((term, x))
    if len(reduced) == 1:
        term, x = reduced[0]
        result, have = x, term
    else:
        (ta, a), (tb, b) = reduced
        if a.dtype != b.dtype:
            raise ValueError("einsum(%r): operands are %s and %s; cast one"
                             % (equation, a.dtype.name, b.dtype.name))
        batch = [c for c in ta if c in tb and c in out]
        contract = [c for c in ta if c in tb and c not in out]
        free_a = [c for c in ta if c not in tb]
        free_b = [c for c in tb if c not in ta]
        for c in batch + contract:
            da, db = a.shape.as_list()[ta.index(c)], b.shape.as_list()[tb.index(c)]
            if da is not None and db is not None and da != db:
                raise ValueError("einsum(%r): index %r has size %d in one operand and %d in "
                                 "the other" % (equation, c, da, db))
        if not contract and not batch and not free_a and not free_b:
            result, have = ops.multiply(a, b), ""
        else:
            result = _contract(a, b, [(ta.index(c), tb.index(c)) for c in batch],
                               [ta.index(c) for c in free_a], [ta.index(c) for c in contract],
                               [tb.index(c) for c in free_b], [tb.index(c) for c in contract])
            have = "".join(batch + free_a + free_b)
    if result.dtype == dtypes.bool_:
        raise ValueError("einsum(%r): bool operands are not supported" % equation)
    perm = [have.index(c) for c in out]
    return ops.identity(_transpose_if_needed(result, perm), name=name)


__all__ = ["einsum", "tensordot"]
