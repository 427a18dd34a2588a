"""Run-time assertions, as TF1's tf.assert_equal / assert_positive / tf.Assert / ...: each
returns an op that fails the step (InvalidArgumentError) when its condition does not hold.

Example::

    check = sf.assert_equal(sf.shape(x)[0], sf.shape(y)[0], message="batch sizes differ")
    with sf.control_dependencies([check]):
        loss = sf.identity(loss)

Each is an Assert op (kernels/cpu/basic_ops.cc), as TF1's: when the condition does not hold
the step fails with InvalidArgumentError "assertion failed: [message] [Condition x == y did not
hold element-wise:] [x (x:0) = ] [1 2] [y (y:0) = ] [1 3]", each piece of `data` in brackets
and each tensor's first `summarize` values (default 3). A condition is evaluated when the op
runs, not when the graph is built.
"""

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.framework import (Tensor, _InputList, control_dependencies, convert_to_tensor,
                                 get_default_graph, name_scope)


def _check(condition, message, name, default_name, data=(), summarize=None):
    """The Assert op that fails the step unless the bool scalar `condition` holds, printing
    `message` (when given) and then each item of `data` (strings and tensors)."""
    condition = convert_to_tensor(condition)
    if condition.dtype != dtypes.bool_:
        raise TypeError("%s: the condition must be bool, not %s" % (default_name,
                                                                     condition.dtype.name))
    g = condition.graph if isinstance(condition, Tensor) else get_default_graph()
    summarize = 3 if summarize is None else int(summarize)
    if summarize < 0:
        raise ValueError("%s: summarize must be >= 0, got %d" % (default_name, summarize))
    with g.name_scope(name or default_name):
        items = ([message] if message else []) + list(data or ())
        tensors = [d if isinstance(d, Tensor) else convert_to_tensor(d) for d in items]
        return g._add_op("Assert", [condition, _InputList(tensors)],
                         {"summarize": summarize}, "Assert")


def _operands(x, y, what):
    x, y = array_ops._literal_like_other(x, y)
    if x.dtype != y.dtype:
        raise TypeError("%s: x (%s) and y (%s) must have one dtype" % (what, x.dtype.name,
                                                                        y.dtype.name))
    return x, y


def _message(message, text):
    return "%s: %s" % (message, text) if message else text


def _comparison(compare, symbol, default_name):
    def fn(x, y, data=None, summarize=None, message=None, name=None):
        x, y = _operands(x, y, default_name)
        holds = array_ops.reduce_all(compare(x, y))
        if data is None:   # TF1's default data
            data = ["Condition x %s y did not hold element-wise:" % symbol,
                    "x (%s) = " % x.name, x, "y (%s) = " % y.name, y]
        return _check(holds, message, name, default_name, data, summarize)
    fn.__name__ = default_name
    fn.__doc__ = ("An Assert op that fails the step (InvalidArgumentError with `message`, x "
                  "and y) unless x %s y for every element (broadcasting), as TF1's tf.%s."
                  % (symbol, default_name))
    return fn


assert_equal = _comparison(ops.equal, "==", "assert_equal")
assert_none_equal = _comparison(ops.not_equal, "!=", "assert_none_equal")
assert_less = _comparison(ops.less, "<", "assert_less")
assert_less_equal = _comparison(ops.less_equal, "<=", "assert_less_equal")
assert_greater = _comparison(ops.greater, ">", "assert_greater")
assert_greater_equal = _comparison(ops.greater_equal, ">=", "assert_greater_equal")


def _sign_check(compare, text, default_name):
    def fn(x, data=None, summarize=None, message=None, name=None):
        x = convert_to_tensor(x)
        holds = array_ops.reduce_all(compare(x, 0))
        if data is None:   # TF1's default data
            data = ["Condition x %s did not hold element-wise:" % text, "x (%s) = " % x.name, x]
        return _check(holds, message, name, default_name, data, summarize)
    fn.__name__ = default_name
    fn.__doc__ = ("An Assert op that fails the step (InvalidArgumentError with `message` and "
                  "x) unless every element of x is %s, as TF1's tf.%s." % (text, default_name))
    return fn


assert_positive = _sign_check(ops.greater, "> 0", "assert_positive")
assert_negative = _sign_check(ops.less, "< 0", "assert_negative")
assert_non_negative = _sign_check(ops.greater_equal, ">= 0", "assert_non_negative")
assert_non_positive = _sign_check(ops.less_equal, "<= 0", "assert_non_positive")


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    """TF1's tf.assert_rank: a ValueError now when x's rank is known and differs; an op that
    checks at run time when it is not known (a no-op when it is and matches). `data` and
    `summarize`: what the run-time check prints when it fails (TF1's default: the message)."""
    from shardflow.math_composites import rank as rank_of
    x = convert_to_tensor(x)
    if isinstance(rank, Tensor):
        raise TypeError("assert_rank: rank must be a Python int")
    if x.shape.ndims is not None:
        if x.shape.ndims != int(rank):
            raise ValueError(_message(message, "%s must have rank %d, its shape is %s"
                                      % (x.name, int(rank), x.shape)))
        return ops.no_op(name=name)
    return _check(ops.equal(rank_of(x), int(rank)),
                  _message(message, "%s must have rank %d" % (x.name, int(rank))),
                  name, "assert_rank", data, summarize)


def _rank_check(x, holds_for, text, message, name, default_name, data=None, summarize=None):
    """A ValueError now when x's rank is known and `holds_for(rank)` is false, a no-op when it
    is true, and a run-time check when the rank is unknown."""
    from shardflow.math_composites import rank as rank_of
    x = convert_to_tensor(x)
    if x.shape.ndims is not None:
        if not holds_for(x.shape.ndims):
            raise ValueError(_message(message, "%s must have rank %s, its shape is %s"
                                      % (x.name, text, x.shape)))
        return ops.no_op(name=name)
    return _check(holds_for(rank_of(x)), _message(message, "%s must have rank %s"
                                                  % (x.name, text)), name, default_name,
                  data, summarize)


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    """TF1's tf.assert_rank_at_least (checked now when x's rank is known, else at run time)."""
    rank = int(rank)
    return _rank_check(x, lambda r: r >= rank, "at least %d" % rank, message, name,
                       "assert_rank_at_least", data, summarize)


def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    """TF1's tf.assert_rank_in: x's rank is one of `ranks` (Python ints)."""
    ranks = [int(r) for r in ranks]

    def holds_for(r):
        if isinstance(r, int):
            return r in ranks
        return array_ops.reduce_any(ops.equal(r, ranks))
    return _rank_check(x, holds_for, "in %s" % ranks, message, name, "assert_rank_in", data,
                       summarize)


def _is_size(entry):
    return isinstance(entry, (int, np.integer)) and not isinstance(entry, bool)


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """TF 1.15's tf.debugging.assert_shapes: each (tensor, shape) of `shapes` (a list of pairs
    or a dict) has that shape. A shape's entries are sizes (ints), None or '.' (any size), or
    other hashable names (a symbolic size: every entry of that name, over all tensors, must
    be one size). A first entry `...` or '*' leaves the outer dimensions free (only the inner
    ones are checked). A scalar and a shape () both count as one dimension of size 1.

    What the static shapes already contradict is a ValueError now; the rest is checked when
    the returned op runs (InvalidArgumentError), as TF1."""
    from shardflow.math_composites import rank as rank_of
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    checks = []
    known = {}   # symbol -> (size: int or int32 scalar, tensor name)
    with name_scope(name or "assert_shapes"):
        for x, spec in pairs:
            x = convert_to_tensor(x)
            spec = list(spec)
            inner = bool(spec) and (spec[0] is Ellipsis or (isinstance(spec[0], str)
                                                           and spec[0] == "*"))
            if inner:
                spec = spec[1:]
            if not spec and not inner:
                spec = [1]
            text = ", ".join(["..."] * inner + ["." if e is None else str(e) for e in spec])
            what = _message(message, "%s must have shape (%s)" % (x.name, text))
            ndims = x.shape.ndims
            deps = []
            if ndims is not None:
                ndims = max(ndims, 1)
                if (ndims < len(spec)) if inner else (ndims != len(spec)):
                    raise ValueError("%s, its shape is %s" % (what, x.shape))
                static = x.shape.as_list() or [1]
                dims = static[ndims - len(spec):]
                dims = [d if d is not None else ops.shape(x)[ndims - len(spec) + i]
                        for i, d in enumerate(dims)]
            else:
                r = ops.maximum(rank_of(x), 1)
                holds = ops.greater_equal(r, len(spec)) if inner else ops.equal(r, len(spec))
                deps = [_check(holds, what, None, "rank", data, summarize)]
                with control_dependencies(deps):
                    padded = ops.concat([ops.constant([1], dtypes.int32), ops.shape(x)], 0)
                    dims = [padded[i - len(spec)] for i in range(len(spec))]
            checks.extend(deps)
            for entry, d in zip(spec, dims):
                if entry is None or (isinstance(entry, str) and entry == "."):
                    continue
                if _is_size(entry):
                    want = int(entry)
                elif entry in known:
                    want = known[entry][0]
                else:
                    known[entry] = (d, x.name)
                    continue
                if not isinstance(want, Tensor) and not isinstance(d, Tensor):
                    if want != d:
                        raise ValueError("%s, its shape is %s (dimension %s is %d, not %d)"
                                         % (what, x.shape, entry, d, want))
                    continue
                checks.append(_check(ops.equal(d, want), "%s (dimension %s)" % (what, entry),
                                     None, "dimension", data, summarize))
        if not checks:
            return ops.no_op(name="no_checks")
        return ops.group(*checks)


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None,
                name=None):
    """TF1's tf.assert_near: |x - y| <= atol + rtol * |y| element-wise; rtol and atol default
    to 10 machine epsilons of the dtype (float32: 1.19e-6, float64: 2.2e-15)."""
    x, y = _operands(x, y, "assert_near")
    if not x.dtype.is_floating:
        raise TypeError("assert_near: x and y must be floating point, not %s" % x.dtype.name)
    eps = 10 * float(np.finfo(x.dtype.as_numpy_dtype).eps)
    rtol = eps if rtol is None else rtol
    atol = eps if atol is None else atol
    tolerance = ops.cast(atol, x.dtype) + ops.cast(rtol, x.dtype) * ops.abs(y)
    holds = array_ops.reduce_all(ops.less_equal(ops.abs(x - y), tolerance))
    if data is None:   # TF1's default data
        data = ["x and y not equal to tolerance rtol = %s, atol = %s" % (rtol, atol),
                "x (%s) = " % x.name, x, "y (%s) = " % y.name, y]
    return _check(holds, message, name, "assert_near", data, summarize)


def assert_type(tensor, tf_type, message=None, name=None):
    """TF1's tf.assert_type: a TypeError now unless `tensor` has dtype `tf_type`; a no-op."""
    tensor = convert_to_tensor(tensor)
    if tensor.dtype != dtypes.as_dtype(tf_type):
        raise TypeError(_message(message, "%s must be of type %s, not %s"
                                 % (tensor.name, dtypes.as_dtype(tf_type).name,
                                    tensor.dtype.name)))
    return ops.no_op(name=name or "statically_determined_correct_type")


def assert_integer(x, message=None, name=None):
    """TF1's tf.assert_integer: a TypeError now unless x's dtype is an integer; a no-op."""
    x = convert_to_tensor(x)
    if not x.dtype.is_integer:
        raise TypeError(_message(message, "Expected integer type for %s, not %s"
                                 % (x.name, x.dtype.name)))
    return ops.no_op(name=name)


def assert_scalar(tensor, name=None, message=None):
    """TF1's tf.assert_scalar: `tensor` itself, after a ValueError now unless its static shape
    is a scalar's (an unknown rank is refused too, as TF1 does)."""
    tensor = convert_to_tensor(tensor)
    if tensor.shape.ndims != 0:
        raise ValueError(_message(message, "Expected scalar shape for %s, saw shape: %s."
                                  % (tensor.name, tensor.shape)))
    return tensor


def assert_proper_iterable(values):
    """TF1's tf.assert_proper_iterable: a TypeError for a Tensor, an ndarray, a string or
    anything not iterable (the mistakes that make "for v in values" go wrong)."""
    from shardflow.sparse_tensor import SparseTensor
    if isinstance(values, (Tensor, SparseTensor, np.ndarray, str, bytes)) or not hasattr(
            values, "__iter__"):
        raise TypeError("Expected argument 'values' to be a 'proper' iterable, not %r"
                        % type(values).__name__)


def assert_same_float_dtype(tensors=None, dtype=None):
    """TF1's tf.assert_same_float_dtype: the one floating dtype of `tensors` (and `dtype`),
    float32 when there is none; ValueError when they differ or one is not floating."""
    found = dtypes.as_dtype(dtype) if dtype is not None else None
    for t in tensors or []:
        if found is None:
            found = t.dtype
        elif t.dtype != found:
            raise ValueError("%s has dtype %s, expected %s" % (t.name, t.dtype.name,
                                                               found.name))
    if found is None:
        return dtypes.float32
    if not found.is_floating:
        raise ValueError("Expected floating point type, got %s" % found.name)
    return found


def is_numeric_tensor(tensor):
    """TF1's tf.is_numeric_tensor: a Tensor of a number type (not bool or string)."""
    return isinstance(tensor, Tensor) and (tensor.dtype.is_floating or tensor.dtype.is_integer)


def _monotonic(x, compare, name, default_name):
    x = convert_to_tensor(x)
    if not is_numeric_tensor(x):
        raise TypeError("%s: x must be numeric, not %s" % (default_name, x.dtype.name))
    with x.graph.name_scope(name or default_name):
        from shardflow.math_composites import size
        flat = ops.reshape(x, [-1])
        # flat[1:] and flat[:-1] by gathers: the size may be known only at run time, and 0.
        n = ops.maximum(size(flat), 1)
        head = array_ops.gather(flat, array_ops.range(n - 1))
        tail = array_ops.gather(flat, array_ops.range(1, n))
        return array_ops.reduce_all(compare(tail, head))


def is_non_decreasing(x, name=None):
    """TF1's tf.is_non_decreasing: a bool scalar, true when x (read flat, row-major) never
    decreases; true for fewer than two elements."""
    return _monotonic(x, ops.greater_equal, name, "is_non_decreasing")


def is_strictly_increasing(x, name=None):
    """TF1's tf.is_strictly_increasing: as is_non_decreasing, each element above the last."""
    return _monotonic(x, ops.greater, name, "is_strictly_increasing")


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 (TF1's name)
    """An op that fails the step unless the bool scalar `condition` is true, as TF1's
    tf.Assert: InvalidArgumentError "assertion failed: [..] [..]" with each item of `data`
    (strings and tensors; a tensor's first `summarize` values, default 3) in brackets."""
    return _check(condition, None, name, "Assert", list(data or ()), summarize)


def verify_tensor_all_finite(t=None, msg=None, name=None, x=None, message=None):
    """`t`, after checking it holds no NaN or Inf (TF1's tf.verify_tensor_all_finite and
    tf.debugging.assert_all_finite, also with TF2's names x and message; the step fails naming
    `msg`)."""
    t = ops._alias(t, x, "x", "t", "verify_tensor_all_finite")
    msg = ops._alias(msg, message, "message", "msg", "verify_tensor_all_finite")
    if t is None or msg is None:
        raise ValueError("verify_tensor_all_finite needs a tensor (t) and a message (msg)")
    return ops.check_numerics(t, msg, name=name)


__all__ = ["Assert", "assert_equal", "assert_greater", "assert_greater_equal", "assert_integer",
           "assert_less", "assert_less_equal", "assert_near", "assert_negative",
           "assert_non_negative", "assert_non_positive", "assert_none_equal", "assert_positive",
           "assert_proper_iterable", "assert_rank", "assert_rank_at_least", "assert_rank_in",
           "assert_shapes",
           "assert_same_float_dtype", "assert_scalar", "assert_type", "is_non_decreasing",
           "is_numeric_tensor", "is_strictly_increasing", "verify_tensor_all_finite"]
