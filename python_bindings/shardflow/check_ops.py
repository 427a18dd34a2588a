"""Run-time assertions, as TF1's tf.assert_equal / assert_positive / tf.Assert / ...: each
returns an op that fails the step (InvalidArgumentError) when its condition does not hold.

Example::

    check = sf.assert_equal(sf.shape(x)[0], sf.shape(y)[0], message="batch sizes differ")
    with sf.control_dependencies([check]):
        loss = sf.identity(loss)

Note [Asserts through CheckNumerics]. The engine has no Assert kernel, so an assertion is a
CheckNumerics of a scalar that is 0.0 when the condition holds and NaN when it does not: the
step then fails with InvalidArgumentError carrying the assertion's message, followed by
CheckNumerics' own words ("tensor of shape [] holds NaN ..."). Unlike TF1 the error does not
print the tensors' values (`data` and `summarize` are accepted and not printed), and a
condition is not evaluated when the graph is built, only when the op runs.
"""

from shardflow import array_ops, dtypes, ops
from shardflow.framework import Tensor, convert_to_tensor, get_default_graph


def _check(condition, message, name, default_name):
    """The op that fails the step with `message` unless the bool scalar `condition` holds."""
    condition = convert_to_tensor(condition)
    if condition.dtype != dtypes.bool_:
        raise TypeError("%s: the condition must be bool, not %s" % (default_name,
                                                                     condition.dtype.name))
    g = condition.graph if isinstance(condition, Tensor) else get_default_graph()
    with g.name_scope(name or default_name):
        poison = array_ops.where(condition, 0.0, float("nan"))
        return ops.check_numerics(poison, message).op


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
        return _check(holds, _message(message, "Condition x %s y did not hold element-wise: "
                                      "x (%s), y (%s)" % (symbol, x.name, y.name)),
                      name, default_name)
    fn.__name__ = default_name
    fn.__doc__ = ("An op that fails the step (InvalidArgumentError naming `message`) unless "
                  "x %s y for every element (broadcasting), as TF1's tf.%s. See Note [Asserts "
                  "through CheckNumerics]." % (symbol, default_name))
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
        return _check(holds, _message(message, "Condition x %s did not hold element-wise: x (%s)"
                                      % (text, x.name)), name, default_name)
    fn.__name__ = default_name
    fn.__doc__ = ("An op that fails the step (InvalidArgumentError naming `message`) unless "
                  "every element of x is %s, as TF1's tf.%s. See Note [Asserts through "
                  "CheckNumerics]." % (text, default_name))
    return fn


assert_positive = _sign_check(ops.greater, "> 0", "assert_positive")
assert_negative = _sign_check(ops.less, "< 0", "assert_negative")
assert_non_negative = _sign_check(ops.greater_equal, ">= 0", "assert_non_negative")
assert_non_positive = _sign_check(ops.less_equal, "<= 0", "assert_non_positive")


def assert_rank(x, rank, message=None, name=None):
    """TF1's tf.assert_rank: a ValueError now when x's rank is known and differs; an op that
    checks at run time when it is not known (a no-op when it is and matches)."""
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
                  name, "assert_rank")


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 (TF1's name)
    """An op that fails the step unless the bool scalar `condition` is true, as TF1's
    tf.Assert. The error names the tensors of `data` but does not print their values (Note
    [Asserts through CheckNumerics])."""
    names = ", ".join(getattr(d, "name", repr(d)) for d in (data or []))
    return _check(condition, "assertion failed: [%s]" % names, name, "Assert")


def verify_tensor_all_finite(t, msg, name=None):
    """`t`, after checking it holds no NaN or Inf (TF1's tf.verify_tensor_all_finite; the step
    fails naming `msg`)."""
    return ops.check_numerics(t, msg, name=name)


__all__ = ["Assert", "assert_equal", "assert_greater", "assert_greater_equal", "assert_less",
           "assert_less_equal", "assert_negative", "assert_non_negative", "assert_non_positive",
           "assert_none_equal", "assert_positive", "assert_rank", "verify_tensor_all_finite"]
