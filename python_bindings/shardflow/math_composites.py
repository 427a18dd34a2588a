"""TF1 math functions composed from the engine's ops (and tested against NumPy):
reduce_logsumexp, reduce_variance, reduce_std, count_nonzero, norm, the to_float/to_int32/...
casts, size, rank, eye, linspace, log_sigmoid, div_no_nan, lbeta, and TF1's divisions div
(Python 2's /: floor division for integers), realdiv, truncatediv and truncatemod.

Example::

    lse = sf.reduce_logsumexp(logits, axis=1)          # stable: max + log(sum(exp(x - max)))
    n = sf.norm(w, axis=1, keepdims=True)              # euclidean norms of the rows
    identity = sf.eye(3)

Like Note [Composed array ops] in shardflow/array_ops.py, they need at build time what TF1's
kernels would take at run time where their composition must: eye's sizes and linspace's `num`
are Python ints.
"""

import math as _math

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.framework import Tensor, convert_to_tensor


def _reduction_args(axis, keepdims, reduction_indices, keep_dims, what):
    """TF1's two spellings of a reduction's arguments as one (axis, keepdims)."""
    if reduction_indices is not None:
        if axis is not None:
            raise ValueError("%s: give axis or reduction_indices (TF1's name for it), not both"
                             % what)
        axis = reduction_indices
    if keep_dims is not None:
        if keepdims is not None:
            raise ValueError("%s: give keepdims or keep_dims (TF1's name for it), not both"
                             % what)
        keepdims = keep_dims
    return axis, bool(keepdims)


def _floating(x, what):
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError("%s takes a floating-point tensor, got %s (%s); cast it first"
                        % (what, x.name, x.dtype.name))
    return x


def _is_finite(x):
    """x - x == 0: false for inf and NaN (without an IsFinite kernel)."""
    return ops.equal(ops.subtract(x, x), 0)


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                     keep_dims=None):
    """log(sum(exp(x))) over `axis`, as TF1's tf.reduce_logsumexp: computed as
    max + log(sum(exp(x - max))) so that large values do not overflow (the max is taken as 0
    where it is not finite, as TF1 does); the gradient is softmax(x) along `axis`."""
    axis, keepdims = _reduction_args(axis, keepdims, reduction_indices, keep_dims,
                                     "reduce_logsumexp")
    x = _floating(input_tensor, "reduce_logsumexp")
    raw_max = ops.reduce_max(x, axis=axis, keepdims=True)
    shift = ops.stop_gradient(array_ops.where(_is_finite(raw_max), raw_max,
                                              ops.zeros_like(raw_max)))
    total = ops.reduce_sum(ops.exp(ops.subtract(x, shift)), axis=axis, keepdims=keepdims)
    # The shift had keepdims=True; summing it over the same axes (each of size 1) gives it
    # the result's shape.
    return ops.add(ops.log(total), ops.reduce_sum(shift, axis=axis, keepdims=keepdims),
                   name=name)


def _cast_to(dtype, default_name):
    def fn(x, name=default_name):
        return ops.cast(x, dtype, name=name)
    fn.__doc__ = ("`x` cast to %s (TF1's tf.%s; the same as sf.cast(x, sf.%s))."
                  % (dtype.name, default_name, dtype.name))
    return fn


to_float = _cast_to(dtypes.float32, "ToFloat")
to_double = _cast_to(dtypes.float64, "ToDouble")
to_int32 = _cast_to(dtypes.int32, "ToInt32")
to_int64 = _cast_to(dtypes.int64, "ToInt64")
to_float.__name__, to_double.__name__ = "to_float", "to_double"
to_int32.__name__, to_int64.__name__ = "to_int32", "to_int64"


def _sparse(value):
    """`value` as a SparseTensor when it is one (or a SparseTensorValue), else None."""
    from shardflow.sparse_tensor import SparseTensor, SparseTensorValue, convert_to_sparse
    if isinstance(value, (SparseTensor, SparseTensorValue)):
        return convert_to_sparse(value, "input")
    return None


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The run-time shape of `input` as a 1-D tensor of `out_type`, as TF1's tf.shape: a
    SparseTensor's is its dense_shape (cast to `out_type`)."""
    sp = _sparse(input)
    if sp is not None:
        return ops.cast(sp.dense_shape, dtypes.as_dtype(out_type), name=name)
    return ops.shape(input, name=name, out_type=out_type)


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The number of elements of `input` as a scalar of `out_type`, as TF1's tf.size: a
    constant when the shape is known when the graph is built, else computed at run time. A
    SparseTensor's is the product of its dense_shape (every element, not the stored ones)."""
    sp = _sparse(input)
    if sp is not None:
        return ops.cast(ops.reduce_prod(sp.dense_shape), dtypes.as_dtype(out_type), name=name)
    x = convert_to_tensor(input)
    out_type = dtypes.as_dtype(out_type)
    if x.shape.is_fully_defined():
        n = x.shape.num_elements()
        if n > np.iinfo(out_type.as_numpy_dtype).max:
            raise ValueError("size: %s has %d elements, more than %s holds (out_type=tf.int64)"
                             % (x.name, n, out_type.name))
        return ops.constant(n, dtype=out_type, name=name)
    return ops.reduce_prod(ops.shape(x, out_type=out_type), name=name)


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of `input` as an int32 scalar, as TF1's tf.rank (a constant
    when the rank is known when the graph is built; a SparseTensor's is its dense rank)."""
    sp = _sparse(input)
    if sp is not None:
        if sp.shape.ndims is not None:
            return ops.constant(sp.shape.ndims, dtype=dtypes.int32, name=name)
        return ops.reshape(ops.shape(sp.dense_shape), [], name=name)
    x = convert_to_tensor(input)
    if x.shape.ndims is not None:
        return ops.constant(x.shape.ndims, dtype=dtypes.int32, name=name)
    return ops.reshape(ops.shape(ops.shape(x)), [], name=name)


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None, input=None):  # noqa: A002
    """The number of non-zero (for bool: true) elements over `axis`, as `dtype` (int64), as
    TF1's tf.count_nonzero."""
    if input is not None:
        if input_tensor is not None:
            raise ValueError("count_nonzero: give input_tensor or input (its newer name), "
                             "not both")
        input_tensor = input
    if input_tensor is None:
        raise ValueError("count_nonzero needs input_tensor")
    axis, keepdims = _reduction_args(axis, keepdims, reduction_indices, keep_dims,
                                     "count_nonzero")
    x = convert_to_tensor(input_tensor)
    if x.dtype == dtypes.string:
        raise TypeError("count_nonzero of strings is not supported")
    nonzero = x if x.dtype == dtypes.bool_ else ops.not_equal(x, 0)
    count = ops.reduce_sum(ops.cast(nonzero, dtypes.int64), axis=axis, keepdims=keepdims)
    dtype = dtypes.as_dtype(dtype)
    if dtype == dtypes.int64:
        return ops.identity(count, name=name)
    return ops.cast(count, dtype, name=name)


def _norm_axes(axis, rank_, what):
    """None (every dimension, as one vector), or a tuple of one or two int axes."""
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        raise TypeError("%s: axis must be an int or a pair of ints, not a tensor" % what)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if len(axes) not in (1, 2) or not all(isinstance(a, (int, np.integer)) for a in axes):
        raise ValueError("%s: axis must be an int or a pair of ints, got %r" % (what, axis))
    if len(axes) == 2 and rank_ is not None and axes[0] % rank_ == axes[1] % rank_:
        raise ValueError("%s: the two axes must differ, got %r" % (what, axis))
    return tuple(int(a) for a in axes)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None,  # noqa: A002
         keep_dims=None):
    """The vector or matrix norm of `tensor`, as TF1's tf.norm.

    `axis` None: the whole tensor as one vector; an int: vector norms along it; a pair: matrix
    norms over those two dimensions. `ord`: 'euclidean' (the default; the Frobenius norm of a
    matrix), 'fro', 1, 2 (vectors), np.inf or any p > 0 (vectors: sum(|x| ** p) ** (1/p));
    for matrices 'euclidean'/'fro', 1 (largest column sum of |x|) and np.inf (largest row
    sum). A matrix 2-norm needs the SVD, which the engine lacks: an error."""
    _, keepdims = _reduction_args(None, keepdims, None, keep_dims, "norm")
    x = _floating(tensor, "norm")
    axes = _norm_axes(axis, x.shape.ndims, "norm")
    matrix = axes is not None and len(axes) == 2
    if matrix:
        if ord not in ("euclidean", "fro", 1, np.inf):
            raise ValueError("norm: ord=%r is not supported for matrices; use 'euclidean', "
                             "'fro', 1 or np.inf" % (ord,))
    else:
        if ord == "fro":
            raise ValueError("norm: ord='fro' is for matrices (axis a pair of ints); use "
                             "'euclidean' for vectors")
        if ord != "euclidean" and (isinstance(ord, str) or isinstance(ord, bool) or
                                   not isinstance(ord, (int, float, np.number)) or ord <= 0):
            raise ValueError("norm: ord must be 'euclidean', 'fro', a number > 0 or np.inf, "
                             "got %r" % (ord,))
    reduce_axes = list(axes) if axes is not None else None
    if ord in ("euclidean", "fro") or (not matrix and ord == 2):
        return ops.sqrt(ops.reduce_sum(ops.square(x), axis=reduce_axes, keepdims=keepdims),
                        name=name)
    if matrix:
        # 1: the largest column sum (sum over the rows axis, then max over the columns);
        # inf: the largest row sum.
        rows, cols = axes if ord == 1 else (axes[1], axes[0])
        sums = ops.reduce_sum(ops.abs(x), axis=rows, keepdims=True)
        return ops.reduce_max(sums, axis=[rows, cols], keepdims=keepdims, name=name)
    if ord == np.inf:
        return ops.reduce_max(ops.abs(x), axis=reduce_axes, keepdims=keepdims, name=name)
    if ord == 1:
        return ops.reduce_sum(ops.abs(x), axis=reduce_axes, keepdims=keepdims, name=name)
    p = np.asarray(ord, dtype=x.dtype.as_numpy_dtype)
    total = ops.reduce_sum(ops.pow(ops.abs(x), p), axis=reduce_axes, keepdims=keepdims)
    return ops.pow(total, np.asarray(1.0 / p, dtype=p.dtype), name=name)


def _python_int(value, what, minimum=0):
    if isinstance(value, Tensor):
        raise ValueError("%s must be a Python int here (the engine builds it as a constant), "
                         "not a tensor" % what)
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise ValueError("%s must be an int >= %d, got %r" % (what, minimum, value))
    return int(value)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """An identity matrix [num_rows, num_columns] (square by default), repeated over
    `batch_shape` when given, as TF1's tf.eye; the sizes are Python ints."""
    rows = _python_int(num_rows, "eye: num_rows")
    cols = rows if num_columns is None else _python_int(num_columns, "eye: num_columns")
    value = np.eye(rows, cols, dtype=dtypes.as_dtype(dtype).as_numpy_dtype)
    if batch_shape is not None:
        batch = [_python_int(d, "eye: batch_shape") for d in batch_shape]
        value = np.broadcast_to(value, batch + [rows, cols]).copy()
    return ops.constant(value, name=name)


def linspace(start, stop, num, name=None):
    """`num` evenly spaced values from `start` to `stop`, both included, as TF1's tf.linspace
    (tf.lin_space). `start` and `stop` may be float scalar tensors; `num` is a Python int."""
    n = _python_int(num, "linspace: num", minimum=1)
    if not isinstance(start, Tensor) and not isinstance(stop, Tensor):
        return ops.constant(np.linspace(float(start), float(stop), n, dtype=np.float32),
                            name=name)
    like = start if isinstance(start, Tensor) else stop
    if not like.dtype.is_floating:
        raise TypeError("linspace: start and stop must be float32 or float64, not %s"
                        % like.dtype.name)
    start = convert_to_tensor(start, dtype=like.dtype) if not isinstance(start, Tensor) \
        else start
    stop = convert_to_tensor(stop, dtype=like.dtype) if not isinstance(stop, Tensor) else stop
    if n == 1:
        return ops.reshape(start, [1], name=name)
    # start * (1 - t) + stop * t: exactly start and stop at the ends.
    t = ops.constant(np.arange(n, dtype=like.dtype.as_numpy_dtype) / (n - 1))
    return ops.add(ops.multiply(ops.reshape(start, [1]), ops.subtract(1, t)),
                   ops.multiply(ops.reshape(stop, [1]), t), name=name)


lin_space = linspace


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = -softplus(-x), computed stably (TF1's tf.log_sigmoid)."""
    from shardflow import nn
    x = _floating(x, "log_sigmoid")
    return ops.negative(nn.softplus(ops.negative(x)), name=name)


def div_no_nan(x, y, name=None):
    """x / y, and 0 where y is 0 (TF1.13's tf.div_no_nan, tf.math.divide_no_nan); no NaN in
    the value or the gradient there."""
    y_t = convert_to_tensor(y, dtype=x.dtype if isinstance(x, Tensor) else None) \
        if not isinstance(y, Tensor) else y
    zero = ops.equal(y_t, 0)
    safe_y = array_ops.where_v2(zero, ops.ones_like(y_t), y_t)
    quotient = ops.divide(x, safe_y)
    return array_ops.where_v2(zero, ops.zeros_like(quotient), quotient, name=name)


divide_no_nan = div_no_nan


def divide(x, y, name=None):
    """x / y as Python 3 divides, as TF 1.15's tf.divide / tf.math.divide (x / y): integers
    give float64 (tf.divide(-7, 2) is -3.5); floats divide as they are."""
    return ops.truediv(x, y, name=name)


# ---- TF1's integer-aware divisions: div, realdiv, truncatediv, truncatemod ------------------


def _division_operands(x, y, what):
    """x and y as tensors of one dtype (a Python number or array takes the other's dtype)."""
    x, y = array_ops._literal_like_other(x, y)
    if x.dtype != y.dtype:
        raise TypeError("%s: x (%s) and y (%s) must have one dtype" % (what, x.dtype.name,
                                                                        y.dtype.name))
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError("%s takes numbers, not %s" % (what, x.dtype.name))
    return x, y


def div(x, y, name=None):
    """x / y with Python 2's semantics, as TF1's tf.div: integers are floor-divided (the
    FloorDiv op: ``tf.div(-7, 2) == -4``), floats divided exactly (Div). TF1 deprecates it in
    favour of tf.math.divide (/) and tf.math.floordiv (//), which say which one they mean."""
    x, y = _division_operands(x, y, "div")
    if x.dtype.is_integer:
        return ops.floordiv(x, y, name=name)
    return ops.divide(x, y, name=name)


def realdiv(x, y, name=None):
    """x / y for floating-point x and y, element-wise with broadcasting (TF1's tf.realdiv, the
    RealDiv op; here the Div op). Integers are refused, as TF1's RealDiv has no integer
    kernel: use tf.truediv, tf.floordiv or tf.truncatediv."""
    x, y = _division_operands(x, y, "realdiv")
    if not x.dtype.is_floating:
        raise TypeError("realdiv takes floating-point tensors, not %s; use truediv (a float "
                        "result), floordiv or truncatediv" % x.dtype.name)
    return ops.divide(x, y, name=name)


def _signs_differ(x, y):
    return ops.not_equal(ops.less(x, 0), ops.less(y, 0))


def truncatediv(x, y, name=None):
    """x / y rounded toward zero, as C does (TF1's tf.truncatediv, tf.math.truncatediv):
    ``truncatediv(-7, 2) == -3`` where floordiv gives -4. Integers use the Div op (which
    truncates; a zero divisor fails the step), int8 and uint8 through int32; floats give
    the quotient with its fraction dropped (trunc(x / y)), which TF1's kernel has no float
    version of."""
    x, y = _division_operands(x, y, "truncatediv")
    if x.dtype.is_integer:
        if x.dtype in (dtypes.int8, dtypes.uint8):
            q = ops.divide(ops.cast(x, dtypes.int32), ops.cast(y, dtypes.int32))
            return ops.cast(q, x.dtype, name=name)
        return ops.divide(x, y, name=name)
    q = ops.divide(x, y)
    return array_ops.where_v2(ops.less(q, 0), ops.ceil(q), ops.floor(q), name=name)


def truncatemod(x, y, name=None):
    """The remainder of truncatediv: x - truncatediv(x, y) * y, which has the sign of x (C's %
    and fmod; TF1's tf.truncatemod, tf.math.truncatemod): ``truncatemod(-7, 2) == -1`` where
    floormod gives 1. Computed from FloorMod, whose remainder has y's sign: where x and y
    have opposite signs and it is not 0, y is taken off it (for floats, fmod's value up to
    the rounding of that subtraction)."""
    x, y = _division_operands(x, y, "truncatemod")
    r = ops.floormod(x, y)
    adjust = ops.logical_and(ops.not_equal(r, 0), _signs_differ(x, y))
    return array_ops.where_v2(adjust, ops.subtract(r, y), r, name=name)


def lbeta(x, name=None):
    """log(|Beta(x)|) of the vectors on the last axis of `x`: the sum of lgamma(x) over that
    axis minus lgamma of the sum of x, as TF1's tf.lbeta / tf.math.lbeta (shape [...] for
    `x` [..., n]). An empty last axis gives -inf, as TF1.

    Example: ``sf.lbeta([1.0, 2.0])`` is log(B(1, 2)) = log(1/2).
    """
    x = _floating(x, "lbeta")
    log_prod_gamma_x = ops.reduce_sum(ops.lgamma(x), axis=[-1])
    log_gamma_sum_x = ops.lgamma(ops.reduce_sum(x, axis=[-1]))
    return ops.subtract(log_prod_gamma_x, log_gamma_sum_x, name=name)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The variance mean((x - mean(x)) ** 2) over `axis` (all of them when None), as TF's
    tf.math.reduce_variance (the population variance, as np.var)."""
    x = _floating(input_tensor, "reduce_variance")
    mean = ops.reduce_mean(x, axis=axis, keepdims=True)
    return ops.reduce_mean(ops.squared_difference(x, ops.stop_gradient(mean)), axis=axis,
                           keepdims=bool(keepdims), name=name)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The standard deviation sqrt(reduce_variance) over `axis`, as tf.math.reduce_std
    (np.std)."""
    return ops.sqrt(reduce_variance(input_tensor, axis=axis, keepdims=keepdims), name=name)



# ---- tf.math.xlogy and tf.math.xdivy --------------------------------------------------------


def _x_zero_safe(x, y, what):
    """x, y (one floating dtype), whether x is 0, and y with 1 where x is 0 (so that neither
    the value nor the gradient reads log(y) or 1 / y there)."""
    x, y = array_ops._literal_like_other(x, y)
    if x.dtype != y.dtype or not x.dtype.is_floating:
        raise TypeError("%s takes x and y of one floating-point dtype, got %s and %s"
                        % (what, x.dtype.name, y.dtype.name))
    zero = ops.equal(x, 0)
    return x, zero, array_ops.where_v2(zero, ops.ones_like(y), y)


def xlogy(x, y, name=None):
    """x * log(y), and 0 where x is 0 (whatever y is, 0 included), element-wise with
    broadcasting (TF 1.15's tf.math.xlogy). As TF's, the gradients are log(y) for x and
    x / y for y where x is not 0, and 0 for both where it is."""
    x, zero, safe_y = _x_zero_safe(x, y, "xlogy")
    product = ops.multiply(x, ops.log(safe_y))
    return array_ops.where_v2(zero, ops.zeros_like(product), product, name=name)


def xdivy(x, y, name=None):
    """x / y, and 0 where x is 0 (whatever y is, 0 included), element-wise with broadcasting
    (TF 1.15's tf.math.xdivy). As TF's, the gradients are 1 / y for x and -x / y**2 for y
    where x is not 0, and 0 for both where it is."""
    x, zero, safe_y = _x_zero_safe(x, y, "xdivy")
    quotient = ops.divide(x, safe_y)
    return array_ops.where_v2(zero, ops.zeros_like(quotient), quotient, name=name)

# ---- regularized incomplete gamma and beta functions --------------------------------------------
# Note [Incomplete gamma and beta]. NumPy in a PyFunc node, in float64: the power series of P(a,
# x) for x < a + 1 and the (modified Lentz) continued fraction of Q(a, x) otherwise; I_x(a, b)
# from its continued fraction, on x or (by symmetry) 1 - x, whichever converges fast (Numerical
# Recipes, 6.2 and 6.4). Arguments outside the domain (a <= 0, x < 0, x outside [0, 1]) give NaN,
# as TF's kernels. Gradients flow to x (the density), not to a or b.

_TINY = 1e-300
_EPS = 1e-16
_MAX_TERMS = 100000


def _gamma_prefix(a, x):
    return np.exp(a * np.log(x) - x - _math.lgamma(a))


def _igamma_one(a, x, upper):
    """P(a, x) (upper=False) or Q(a, x) of Python floats."""
    if not (a > 0) or not (x >= 0) or np.isnan(a) or np.isnan(x):
        return np.nan
    if x == 0:
        return 1.0 if upper else 0.0
    if np.isinf(x):
        return 0.0 if upper else 1.0
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(_MAX_TERMS):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * _EPS:
                break
        p = total * _gamma_prefix(a, x)
        return 1.0 - p if upper else p
    b = x + 1 - a
    c, d = 1 / _TINY, 1 / b
    h = d
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = _TINY if abs(d) < _TINY else d
        c = b + an / c
        c = _TINY if abs(c) < _TINY else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < _EPS:
            break
    q = _gamma_prefix(a, x) * h
    return q if upper else 1.0 - q


def _beta_fraction(a, b, x):
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (_TINY if abs(d) < _TINY else d)
    h = d
    for m in range(1, _MAX_TERMS):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (_TINY if abs(d) < _TINY else d)
            c = 1 + aa / c
            c = _TINY if abs(c) < _TINY else c
            delta = d * c
            h *= delta
        if abs(delta - 1) < _EPS:
            break
    return h


def _betainc_one(a, b, x):
    if not (a > 0 and b > 0 and 0 <= x <= 1):
        return np.nan
    if x == 0 or x == 1:
        return float(x)
    log_front = (_math.lgamma(a + b) - _math.lgamma(a) - _math.lgamma(b) + a * np.log(x)
                 + b * np.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return np.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - np.exp(log_front) * _beta_fraction(b, a, 1 - x) / b


def _special(what, fn, args, name, grad_x):
    """fn of the broadcast float tensors `args` (the last one x), element-wise in NumPy, as a
    PyFunc whose gradient to x is grad_x(*args) (None to the others)."""
    from shardflow.framework import get_default_graph
    from shardflow.gradients import RegisterGradient
    from shardflow.script_ops import py_func
    # The dtype of the tensors given, else of the NumPy float arrays given, else float32;
    # Python numbers and lists follow it.
    dtype = next((t.dtype for t in args if isinstance(t, Tensor) and t.dtype.is_floating),
                 None)
    if dtype is None:
        dtype = next((dtypes.as_dtype(np.asarray(t).dtype) for t in args
                      if isinstance(t, (np.ndarray, np.floating))
                      and np.asarray(t).dtype in (np.float32, np.float64)), dtypes.float32)
    tensors = [t if isinstance(t, Tensor) else convert_to_tensor(np.asarray(
        t, dtype.as_numpy_dtype)) for t in args]
    if dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError("%s takes float32 or float64, not %s" % (what, dtype.name))
    tensors = [ops.cast(t, dtype) if t.dtype != dtype else t for t in tensors]
    # The result's shape: the arguments broadcast (as a + b + ... of zeros).
    like = tensors[0]
    for t in tensors[1:]:
        like = ops.add(ops.multiply(like, 0.0), ops.multiply(t, 0.0))
    full = [ops.add(t, ops.zeros_like(like)) for t in tensors]

    def run(*arrays):
        out = np.vectorize(fn, otypes=[np.float64])(*[np.asarray(v, np.float64)
                                                      for v in arrays])
        return np.asarray(out, dtype.as_numpy_dtype)
    grad_name = "Sf%sGrad" % what.capitalize()
    if grad_name not in _REGISTERED:
        _REGISTERED.add(grad_name)

        @RegisterGradient(grad_name)
        def _grad(op, grad):
            inputs = list(op.inputs)
            return [None] * (len(inputs) - 1) + [ops.multiply(grad, grad_x(*inputs))]
    with get_default_graph().gradient_override_map({"PyFunc": grad_name}):
        out = py_func(run, full, dtype, stateful=False, name=name or what.capitalize())
    out.set_shape(like.shape)
    return out


_REGISTERED = set()


def _gamma_density(a, x):
    return ops.exp(ops.subtract(ops.subtract(ops.multiply(ops.subtract(a, 1.0), ops.log(x)), x),
                                ops.lgamma(a)))


def igamma(a, x, name=None):
    """The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a),
    element-wise with broadcasting, as TF1's tf.math.igamma / tf.igamma (Note [Incomplete
    gamma and beta]; the gradient flows to x only)."""
    return _special("igamma", lambda av, xv: _igamma_one(av, xv, False), [a, x], name,
                    _gamma_density)


def igammac(a, x, name=None):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), as TF1's
    tf.math.igammac / tf.igammac (the gradient flows to x only)."""
    return _special("igammac", lambda av, xv: _igamma_one(av, xv, True), [a, x], name,
                    lambda av, xv: ops.negative(_gamma_density(av, xv)))


def betainc(a, b, x, name=None):
    """The regularized incomplete beta function I_x(a, b), element-wise with broadcasting, as
    TF1's tf.math.betainc / tf.betainc (the gradient flows to x only: x^(a-1) (1-x)^(b-1) /
    B(a, b))."""
    def density(av, bv, xv):
        log_b = ops.subtract(ops.add(ops.lgamma(av), ops.lgamma(bv)), ops.lgamma(av + bv))
        return ops.exp(ops.subtract(
            ops.add(ops.multiply(ops.subtract(av, 1.0), ops.log(xv)),
                    ops.multiply(ops.subtract(bv, 1.0), ops.log1p(ops.negative(xv)))), log_b))
    return _special("betainc", _betainc_one, [a, b, x], name, density)


__all__ = ["betainc", "count_nonzero", "div", "div_no_nan", "eye", "igamma", "igammac", "lbeta",
           "lin_space", "linspace", "log_sigmoid", "norm", "rank", "realdiv", "reduce_logsumexp",
           "reduce_std", "reduce_variance", "size", "to_double", "to_float", "to_int32", "to_int64",
           "truncatediv", "truncatemod", "xdivy", "xlogy"]
