"""Array and math ops: each builds one node (or a few) in the default graph.

Example::

    x = sf.placeholder(sf.float32, [None, 3], name="x")
    w = sf.constant(np.ones((3, 2), np.float32))
    y = sf.reduce_mean(sf.square(sf.matmul(x, w)), axis=1)

Literals (Python numbers, lists, NumPy arrays) become constants; a Python number takes the dtype
of the other operand (``x * 2`` multiplies a float32 ``x`` by 2.0).
"""

import numpy as np

from shardflow import dtypes
from shardflow.framework import (Tensor, TensorShape, _InputList, _holds_tensor, _literal,
                                 _pack_list, _plain_dims, check_no_python_float,
                                 convert_to_tensor, get_default_graph)


def _graph_of(*values):
    default = get_default_graph()
    for v in values:
        g = getattr(v, "graph", None)
        if g is not None:
            # Inside a while_loop's function, outer tensors are captured into it.
            encloses = getattr(default, "_encloses", None)
            if g is not default and encloses is not None and encloses(g):
                return default
            return g
    return default


def _op(op_type, inputs, attrs=None, name=None):
    """Builds one op of a registered type in the graph of its inputs; returns the Operation."""
    return _graph_of(*inputs)._add_op(op_type, inputs, attrs, name)


def _out(op_type, inputs, attrs=None, name=None):
    return _op(op_type, inputs, attrs, name).outputs[0]


# ---- sources ------------------------------------------------------------------------------


def placeholder(dtype, shape=None, name=None):
    """A tensor whose value is fed at run time: ``sess.run(y, {x: array})``.

    `shape` may have None dimensions (any size) or be None (any shape).

    Example::

        x = sf.placeholder(sf.float32, [None, 784], name="images")
    """
    dt = dtypes.as_dtype(dtype)
    attrs = {"dtype": dt._enum, "shape": None if shape is None else _plain_dims(shape)}
    return _out("Placeholder", [], attrs, name)


def constant(value, dtype=None, shape=None, name=None, verify_shape=False):
    """A tensor with a fixed value. Python floats become float32, ints int32; NumPy arrays and
    scalars (np.float64(1.5)) keep their dtype, as TF1's. With verify_shape=True, a value whose
    shape is not `shape` is TF1's TypeError (no broadcast, no padding).

    Example::

        c = sf.constant([[1.0, 2.0]])                  # float32 [1, 2]
        z = sf.constant(0, dtype=sf.float32, shape=[2, 2])
    """
    if dtype is not None:
        want = dtypes.as_dtype(dtype).as_numpy_dtype
        check_no_python_float(value, dtypes.as_dtype(dtype))
        if np.issubdtype(want, np.integer) and not isinstance(value, (np.ndarray, np.generic)):
            _check_int_range(value, want)
        arr = np.asarray(value, dtype=want)
    elif isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype.kind in "OU":
            arr = _literal(value)
    else:
        arr = _literal(value)
    if shape is not None:
        shape = _plain_dims(shape)
        if verify_shape and tuple(arr.shape) != tuple(shape):
            raise TypeError("constant: expected a value of shape %s (verify_shape=True), got %s"
                            % (list(shape), list(arr.shape)))
        if arr.size == 1:
            if _is_large(shape):
                return _fill_static(shape, arr.reshape(()), name)
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        else:
            arr = _padded_to(arr, shape)
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make a scalar 1-d)
        arr = arr.copy(order="C")
    return _out("Const", [], {"value": arr, "dtype": dtypes.as_dtype(arr.dtype)._enum}, name)


def _padded_to(arr, shape):
    """`arr` in `shape`: as TF1's, fewer elements than the shape holds are padded with the last
    one (constant([1, 2], shape=[4]) is [1 2 2 2]); more are a ValueError."""
    size = int(np.prod(shape, dtype=np.int64))
    if 0 < arr.size < size:
        flat = arr.ravel()
        arr = np.concatenate([flat, np.full(size - arr.size, flat[-1], dtype=arr.dtype)])
    elif arr.size > size:
        raise ValueError("Too many elements provided. Needed at most %d, but received %d"
                         % (size, arr.size))
    return arr.reshape(shape)


def _check_int_range(value, want):
    """Python integers that `want` (an integer numpy type) cannot hold are a ValueError, as
    TF1's (numpy would wrap them around)."""
    try:
        ints = np.asarray(value)
    except (ValueError, OverflowError):
        return   # ragged or huge: np.asarray(value, want) reports it
    if ints.size == 0 or ints.dtype.kind not in "iuO":
        return
    info = np.iinfo(want)
    try:
        low, high = int(ints.min()), int(ints.max())
    except (TypeError, ValueError):
        return
    if low < info.min or high > info.max:
        raise ValueError("Can't convert Python int %d to a %s tensor: out of range [%d, %d]"
                         % (high if high > info.max else low, np.dtype(want).name, info.min,
                            info.max))


def zeros(shape, dtype=dtypes.float32, name=None):
    """A constant of zeros; with a tensor shape, or a list holding tensors
    (``sf.zeros([sf.shape(x)[0], 10])``), a Fill computed when the graph runs. String zeros
    are empty strings, as TF1's."""
    return _filled(shape, b"" if dtypes.as_dtype(dtype) == dtypes.string else 0, dtype, name)


def ones(shape, dtype=dtypes.float32, name=None):
    """A constant of ones (a Fill for a shape given by tensors, as zeros)."""
    return _filled(shape, 1, dtype, name)


def _filled(shape, value, dtype, name):
    if isinstance(shape, (int, np.integer)):
        shape = [int(shape)]  # tf.zeros(8), as TF1
    if isinstance(shape, Tensor) or (isinstance(shape, (list, tuple))
                                     and any(isinstance(d, Tensor) for d in shape)):
        value = np.asarray(value, dtype=dtypes.as_dtype(dtype).as_numpy_dtype)
        if isinstance(shape, Tensor):
            return fill(shape, value, name=name)
        dims = concat([reshape(cast(d, dtypes.int32) if isinstance(d, Tensor)
                               else np.int32(d), [1]) for d in shape], 0)
        out = fill(dims, value, name=name)
        out.set_shape([None if isinstance(d, Tensor) else int(d) for d in shape])
        return out
    return constant(value, dtype=dtype, shape=shape, name=name)


# A uniform constant of this many elements or more is a Fill (its shape and one value), as
# TF1's zeros/ones: the graph, sent to every task, does not carry all of its elements.
_LARGE_CONSTANT_ELEMENTS = 1000


def _is_large(dims):
    n = 1
    for d in dims:
        n *= int(d)
    return n >= _LARGE_CONSTANT_ELEMENTS


def _fill_static(dims, scalar, name):
    """Fill of the known shape `dims` with `scalar` (a 0-d array of the dtype wanted)."""
    big = any(int(d) > np.iinfo(np.int32).max for d in dims)
    out = fill(np.array([int(d) for d in dims], dtype=np.int64 if big else np.int32), scalar,
               name=name)
    out.set_shape([int(d) for d in dims])
    return out


def fill(dims, value, name=None):
    """A tensor of shape `dims` (a tensor or list) filled with `value`."""
    return _out("Fill", [dims, value], name=name)


def set_random_seed(seed):
    """TF1's graph-level seed: random ops built afterwards in the default graph without a seed
    of their own get seeds derived from it (the same program gives the same numbers)."""
    g = get_default_graph()
    g._graph_seed = int(seed)
    g._seed_counter = 0


def _op_seed(seed):
    """An op's seed: its own, else one derived from the graph's (set_random_seed), else 0
    (random)."""
    if seed:
        return int(seed)
    g = get_default_graph()
    if getattr(g, "_graph_seed", None) is None:
        return 0
    g._seed_counter += 1
    return (g._graph_seed * 1000003 + g._seed_counter) % (2 ** 31 - 1) or 1


def _shape_input(shape):
    """A shape argument: a tensor (e.g. sf.shape(x)) as it is, a list holding tensors
    ([sf.shape(x)[0], 10], as a VAE draws its noise) packed into one, else a list of ints."""
    if isinstance(shape, Tensor):
        return shape
    if isinstance(shape, (list, tuple)) and _holds_tensor(shape):
        return _pack_list(list(shape), dtypes.int32)
    return np.asarray(_plain_dims(shape), dtype=np.int32)


def _scaled(make_sample, scale, offset, default_scale, default_offset, name):
    """make_sample(name) * scale + offset, leaving out what is the default (a tensor never is);
    `name` goes to the last op."""
    scale_needed = isinstance(scale, Tensor) or scale != default_scale
    offset_needed = isinstance(offset, Tensor) or offset != default_offset
    if not scale_needed and not offset_needed:
        return make_sample(name)
    out = make_sample(None)
    if scale_needed:
        out = multiply(out, scale, name=None if offset_needed else name)
    if offset_needed:
        out = add(out, offset, name=name)
    return out


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform samples in [minval, maxval) (TF1's signature; maxval defaults to 1). A seed makes
    them reproducible; without one each run differs.

    Example: ``w = sf.Variable(sf.random_uniform([784, 10], -0.1, 0.1))``.
    """
    dt = dtypes.as_dtype(dtype)
    if dt in (dtypes.int32, dtypes.int64):
        return _random_integers(shape, minval, maxval, dt, seed, name)
    if not dt.is_floating:
        raise ValueError("random_uniform: dtype must be a float or int32/int64, not %s"
                         % dt.name)
    if maxval is None:
        maxval = 1
    attrs = {"dtype": dt._enum, "seed": _op_seed(seed)}
    width = (subtract(maxval, minval) if isinstance(maxval, Tensor) or isinstance(minval, Tensor)
             else maxval - minval)
    return _scaled(lambda n: _out("RandomUniform", [_shape_input(shape)], attrs, n), width,
                   minval, 1, 0, name)


def _random_integers(shape, minval, maxval, dt, seed, name):
    """random_uniform of int32/int64: integers in [minval, maxval), as TF1's (maxval must be
    given), from float64 uniforms scaled to the width and floored."""
    if maxval is None:
        raise ValueError("random_uniform: give maxval for an integer dtype (%s)" % dt.name)
    lo, hi = cast(minval, dt), cast(maxval, dt)
    if not isinstance(minval, Tensor) and not isinstance(maxval, Tensor) and \
            not int(maxval) > int(minval):
        raise ValueError("random_uniform: need minval < maxval, got [%r, %r)" % (minval, maxval))
    u = _out("RandomUniform", [_shape_input(shape)],
             {"dtype": dtypes.float64._enum, "seed": _op_seed(seed)}, None)
    width = cast(subtract(hi, lo), dtypes.float64)
    offset = minimum(cast(floor(multiply(u, width)), dt), subtract(subtract(hi, lo), cast(1, dt)))
    return add(offset, lo, name=name)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal samples with `mean` and `stddev` (TF1's signature)."""
    attrs = {"dtype": dtypes.as_dtype(dtype)._enum, "seed": _op_seed(seed)}
    return _scaled(lambda n: _out("RandomStandardNormal", [_shape_input(shape)], attrs, n),
                   stddev, mean, 1.0, 0.0, name)


def random_gamma(shape, alpha, beta=None, dtype=dtypes.float32, seed=None, name=None):
    """Gamma samples (TF1's tf.random_gamma / tf.random.gamma): shape + the broadcast shape of
    alpha and beta; out[i..., j...] ~ Gamma(alpha[j...], rate beta[j...]) (beta=None: 1).
    alpha (and beta) must be positive. No gradient flows to alpha or beta here."""
    dt = dtypes.as_dtype(dtype)
    if dt not in (dtypes.float32, dtypes.float64):
        raise ValueError("random_gamma: dtype must be float32 or float64, not %s" % dt.name)
    alpha = cast(alpha, dt) if isinstance(alpha, Tensor) else constant(alpha, dtype=dt)
    if beta is not None:
        beta = cast(beta, dt) if isinstance(beta, Tensor) else constant(beta, dtype=dt)
        alpha = add(alpha, zeros_like(beta))  # broadcast alpha to beta's shape, as TF
    attrs = {"seed": _op_seed(seed)}
    sample = _out("RandomGamma", [_shape_input(shape), alpha], attrs,
                  name if beta is None else None)
    return sample if beta is None else divide(sample, beta, name=name)


def random_poisson(lam, shape, dtype=dtypes.float32, seed=None, name=None):
    """Poisson samples (TF1's tf.random_poisson / tf.random.poisson, rate first): shape +
    lam.shape; out[i..., j...] ~ Poisson(lam[j...]) as `dtype` (float32, float64, int32,
    int64); lam must not be negative."""
    dt = dtypes.as_dtype(dtype)
    if dt not in (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64):
        raise ValueError("random_poisson: dtype must be float32, float64, int32 or int64, "
                         "not %s" % dt.name)
    if not isinstance(lam, Tensor):
        lam = constant(lam, dtype=dtypes.float64 if dt == dtypes.float64 else dtypes.float32)
    attrs = {"dtype": dt._enum, "seed": _op_seed(seed)}
    return _out("RandomPoissonV2", [_shape_input(shape), lam], attrs, name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal samples redrawn until within two standard deviations of `mean` (TF1's
    signature). Example: ``sf.truncated_normal([5, 5, 1, 32], stddev=0.1)``."""
    attrs = {"dtype": dtypes.as_dtype(dtype)._enum, "seed": _op_seed(seed)}
    return _scaled(lambda n: _out("TruncatedNormal", [_shape_input(shape)], attrs, n), stddev,
                   mean, 1.0, 0.0, name)


def _stateless(op_type, shape, seed, dtype, what, name=None):
    dt = dtypes.as_dtype(dtype)
    if dt not in (dtypes.float32, dtypes.float64):
        raise ValueError("%s of %s is not supported; draw float32 or float64 and sf.cast"
                         % (what, dt.name))
    if isinstance(seed, Tensor):
        if seed.shape.ndims is not None and seed.shape.as_list() != [2]:
            raise ValueError("%s: seed must be a pair of integers (shape [2]), got shape %s"
                             % (what, seed.shape))
        if not seed.dtype.is_integer:
            raise ValueError("%s: seed must be integers, not %s" % (what, seed.dtype.name))
    else:
        seed = np.asarray(seed)
        if seed.shape != (2,) or not np.issubdtype(seed.dtype, np.integer):
            raise ValueError("%s: seed must be a pair of integers (shape [2]), got %r"
                             % (what, seed.tolist()))
        seed = seed.astype(np.int64)
    return _out(op_type, [_shape_input(shape), seed], {"dtype": dt._enum}, name)


def stateless_random_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32,
                             name=None):
    """TF's tf.random.stateless_uniform (tf.contrib.stateless.stateless_random_uniform):
    samples in [minval, maxval) that are a function of `seed` (2 integers, or an int tensor
    [2]) and the shape: the same seed gives the same values in every run, session and process
    (not TensorFlow's values: another generator). Floats default to [0, 1); integers need
    maxval."""
    dt = dtypes.as_dtype(dtype)
    if dt.is_integer:
        if maxval is None:
            raise ValueError("stateless_uniform of integers needs maxval")
        u = _stateless("StatelessRandomUniform", shape, seed, dtypes.float64,
                       "stateless_uniform")
        low, high = (cast(v, dtypes.float64) if isinstance(v, Tensor) else
                     constant(float(v), dtype=dtypes.float64) for v in (minval, maxval))
        return cast(add(floor(multiply(u, subtract(high, low))), low), dt, name=name)
    if maxval is None:
        maxval = 1
    width = (subtract(maxval, minval) if isinstance(maxval, Tensor) or isinstance(minval, Tensor)
             else maxval - minval)
    return _scaled(lambda n: _stateless("StatelessRandomUniform", shape, seed, dt,
                                        "stateless_uniform", n), width, minval, 1, 0, name)


def stateless_random_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
    """TF's tf.random.stateless_normal: normal samples, a function of `seed` and the shape."""
    return _scaled(lambda n: _stateless("StatelessRandomNormal", shape, seed, dtype,
                                        "stateless_normal", n), stddev, mean, 1.0, 0.0, name)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                               name=None):
    """TF's tf.random.stateless_truncated_normal: normal samples within two standard
    deviations of `mean`, a function of `seed` and the shape."""
    return _scaled(lambda n: _stateless("StatelessTruncatedNormal", shape, seed, dtype,
                                        "stateless_truncated_normal", n), stddev, mean, 1.0,
                   0.0, name)


# ---- element-wise -------------------------------------------------------------------------


def _binary(op_type, doc):
    def fn(x, y, name=None):
        return _out(op_type, [x, y], name=name)
    fn.__doc__ = doc + "\n\nBroadcasts like NumPy. Example: ``sf.%s(x, 2.0)``." % op_type.lower()
    return fn


def _with_strings(fn, string_fn):
    """fn, or for string operands string_ops' PyFunc `string_fn` (the engine's kernels are
    numeric; TF1 runs Add, Equal and NotEqual on strings too)."""
    def dispatch(x, y, name=None):
        from shardflow import string_ops
        if string_ops.is_string_operand(x, y):
            return getattr(string_ops, string_fn)(x, y, name=name)
        return fn(x, y, name=name)
    dispatch.__doc__ = fn.__doc__.replace("\n\n", " Strings too (concatenated, compared).\n\n", 1)
    return dispatch


def _unary(op_type, doc):
    def fn(x, name=None):
        return _out(op_type, [x], name=name)
    fn.__doc__ = doc + "\n\nExample: ``y = sf.%s(x)``." % op_type.lower()
    return fn


def truediv(x, y, name=None):
    """x / y with true division, as Python 3 and TF1's ``/``: integer operands are converted to
    a float first, as TF1's table: int8 and uint8 to float32, int32 and int64 to float64
    (int32 / int32 is not truncated, also for two Python ints: 7 / 2 = 3.5); floats divide as
    they are. A Python float beside an integer tensor is a TypeError, as TF1's."""
    x, y = (convert_to_tensor(v) if hasattr(v, "_read_after") else v for v in (x, y))  # Variables
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = convert_to_tensor(x)
    dt = x.dtype if isinstance(x, Tensor) else y.dtype
    if dt.is_integer:
        check_no_python_float(y if isinstance(x, Tensor) else x, dt)
        wide = dtypes.float32 if dt in (dtypes.int8, dtypes.uint8) else dtypes.float64
        x, y = (cast(v if isinstance(v, Tensor) else constant(v, dtype=dt), wide)
                for v in (x, y))
    return _out("Div", [x, y], name=name)


floordiv = _binary("FloorDiv", "floor(x / y), element-wise, as Python's // (TF1's tf.floordiv).")
floormod = _binary("FloorMod", "x - floor(x / y) * y, element-wise, as Python's % (tf.floormod).")
mod = floormod
add = _with_strings(_binary("Add", "x + y, element-wise."), "string_add")
subtract = _binary("Sub", "x - y, element-wise.")
multiply = _binary("Mul", "x * y, element-wise.")
divide = _binary("Div", "x / y, element-wise.")
maximum = _binary("Maximum", "max(x, y), element-wise.")
minimum = _binary("Minimum", "min(x, y), element-wise.")
_pow_op = _binary("Pow", "x ** y, element-wise.")


def pow(x, y, name=None):  # noqa: A001 (shadows the builtin, as in TF)
    """x ** y, element-wise; integers too, as TF's kernel: exact, wrapping around on overflow
    (3 ** 21 in int32 is 1870418611), a negative exponent failing the step."""
    x, y = (convert_to_tensor(v) if hasattr(v, "_read_after") else v for v in (x, y))  # Variables
    dt = x.dtype if isinstance(x, Tensor) else (y.dtype if isinstance(y, Tensor) else None)
    if dt is not None and dt.is_integer:
        return _integer_pow(x, y, dt, name)
    return _pow_op(x, y, name=name)


def _integer_pow(x, y, dt, name):
    """x ** y of integers: the Pow kernel of int32 / int64 (exact, wrapping as TF's; a negative
    exponent fails the step 'Integers to negative integer powers are not allowed'); int8 and
    uint8 through int32 (its wrap-around, cast back, is theirs). Python floats are refused."""
    for v in (x, y):
        check_no_python_float(v, dt)
    x, y = (v if isinstance(v, Tensor) else constant(v, dtype=dt) for v in (x, y))
    if x.dtype != y.dtype:
        raise TypeError("pow: x (%s) and y (%s) must have one dtype" % (x.dtype.name,
                                                                        y.dtype.name))
    if dt in (dtypes.int32, dtypes.int64):
        return _pow_op(x, y, name=name)
    return cast(_pow_op(cast(x, dtypes.int32), cast(y, dtypes.int32)), dt, name=name)


def atan2(y, x, name=None):
    """atan2(y, x), element-wise: the angle in [-pi, pi] of the point (x, y). The parameters are
    named (y, x) as TF1's, so tf.atan2(y=a, x=b) is the angle of the point (b, a).

    Broadcasts like NumPy. Example: ``sf.atan2(sin_t, cos_t)``."""
    return _out("Atan2", [y, x], name=name)


squared_difference = _binary("SquaredDifference", "(x - y) ** 2, element-wise.")
equal = _with_strings(_binary("Equal", "x == y, element-wise (bool)."), "string_equal")
not_equal = _with_strings(_binary("NotEqual", "x != y, element-wise (bool)."),
                          "string_not_equal")
less = _binary("Less", "x < y, element-wise (bool).")
less_equal = _binary("LessEqual", "x <= y, element-wise (bool).")
greater = _binary("Greater", "x > y, element-wise (bool).")
greater_equal = _binary("GreaterEqual", "x >= y, element-wise (bool).")
bitwise_and = _binary("BitwiseAnd", "x & y on integers, element-wise (tf.bitwise.bitwise_and).")
bitwise_or = _binary("BitwiseOr", "x | y on integers, element-wise (tf.bitwise.bitwise_or).")
bitwise_xor = _binary("BitwiseXor", "x ^ y on integers, element-wise (tf.bitwise.bitwise_xor).")
left_shift = _binary("LeftShift", "x << y on integers, element-wise, the shift clamped to "
                     "[0, bits - 1] (tf.bitwise.left_shift).")
right_shift = _binary("RightShift", "x >> y on integers (arithmetic for signed types), the "
                      "shift clamped to [0, bits - 1] (tf.bitwise.right_shift).")
logical_and = _binary("LogicalAnd", "x and y, element-wise.")
logical_or = _binary("LogicalOr", "x or y, element-wise.")

invert = _unary("Invert", "~x on integers: every bit flipped (tf.bitwise.invert).")
population_count = _unary("PopulationCount", "The number of bits set in each integer, as uint8 "
                          "(TF's PopulationCount).")
negative = _unary("Neg", "-x.")
abs = _unary("Abs", "|x|.")  # noqa: A001
square = _unary("Square", "x * x.")
sign = _unary("Sign", "-1, 0 or 1.")
sqrt = _unary("Sqrt", "Square root.")
rsqrt = _unary("Rsqrt", "1 / sqrt(x).")
exp = _unary("Exp", "e ** x.")
log = _unary("Log", "Natural logarithm.")
tanh = _unary("Tanh", "Hyperbolic tangent.")
sigmoid = _unary("Sigmoid", "1 / (1 + exp(-x)).")
reciprocal = _unary("Reciprocal", "1 / x.")
floor = _unary("Floor", "The largest integer not above x (no gradient, as in TF1).")
ceil = _unary("Ceil", "The smallest integer not below x (no gradient, as in TF1).")
_float_round = _unary("Round", "x rounded to the nearest integer, halves to even.")


def round(x, name=None):  # noqa: A001 (shadows the builtin, as in TF)
    """x rounded to the nearest integer, halves to even (no gradient); integers unchanged."""
    x = convert_to_tensor(x)
    if x.dtype.is_integer:
        return identity(x, name=name)
    return _float_round(x, name=name)
sin = _unary("Sin", "Sine.")
cos = _unary("Cos", "Cosine.")
log1p = _unary("Log1p", "log(1 + x), accurate for small x.")
expm1 = _unary("Expm1", "e ** x - 1, accurate for small x.")
erf = _unary("Erf", "The error function.")
lgamma = _unary("Lgamma", "log |gamma(x)|, element-wise (its gradient is digamma).")
digamma = _unary("Digamma", "psi(x), the derivative of lgamma, element-wise (NaN at the poles "
                 "0, -1, -2, ...).")


def polygamma(a, x, name=None):
    """The a-th derivative of digamma at x, element-wise (tf.polygamma; a = 0 is digamma). `a`
    must hold non-negative whole numbers (else NaN) and has no gradient; the gradient in x is
    polygamma(a + 1, x). Example: ``sf.polygamma(1.0, x)`` (trigamma)."""
    return _out("Polygamma", [a, x], name=name)
tan = _unary("Tan", "Tangent, element-wise.")
asin = _unary("Asin", "Arcsine, element-wise.")
acos = _unary("Acos", "Arccosine, element-wise.")
atan = _unary("Atan", "Arctangent, element-wise.")
sinh = _unary("Sinh", "Hyperbolic sine, element-wise.")
cosh = _unary("Cosh", "Hyperbolic cosine, element-wise.")
asinh = _unary("Asinh", "Inverse hyperbolic sine, element-wise.")
acosh = _unary("Acosh", "Inverse hyperbolic cosine, element-wise.")
atanh = _unary("Atanh", "Inverse hyperbolic tangent, element-wise.")
is_nan = _unary("IsNan", "Whether x is NaN (bool).")
is_inf = _unary("IsInf", "Whether x is +Inf or -Inf (bool).")
is_finite = _unary("IsFinite", "Whether x is neither NaN nor infinite (bool).")
logical_not = _unary("LogicalNot", "not x.")
def identity(input, name=None):  # noqa: A002 (TF1's name)
    """The same value (a new node; useful to name or place a value)."""
    return _out("Identity", [input], name=name)


def stop_gradient(input, name=None):  # noqa: A002 (TF1's name)
    """The same value; gradients do not flow through it."""
    return _out("StopGradient", [input], name=name)
def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """Zeros of `tensor`'s shape, of its dtype or `dtype` (TF1's signature); empty strings
    for strings."""
    t = convert_to_tensor(tensor)
    if dtypes.string in (t.dtype, dtypes.as_dtype(dtype or t.dtype)):
        from shardflow import string_ops
        return string_ops.zeros_like_strings(t, dtype, name)
    return _like("ZerosLike", t, dtype, name)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """Ones of `tensor`'s shape, of its dtype or `dtype` (TF1's signature)."""
    return _like("OnesLike", tensor, dtype, name)


def _like(op_type, tensor, dtype, name):
    t = convert_to_tensor(tensor)
    if dtype is None or dtypes.as_dtype(dtype) == t.dtype:
        return _out(op_type, [t], name=name)
    return cast(_out(op_type, [t]), dtype, name=name)


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """TF1's tf.Print: `input_` unchanged; each time it runs, `message` and the first
    `summarize` (default 3) values of every tensor in `data` are written to standard error
    (only the first `first_n` runs when first_n is given). Use the result in place of
    `input_` so that the print runs::

        x = sf.Print(x, [sf.reduce_mean(x), sf.shape(x)], "x mean, shape: ")

    Each tensor prints in brackets as TF1's does: "[1 2 3...]", and a matrix row by row,
    "[[1 2][3 4]]" ("[[1 2][3...]...]" past `summarize` values) (Note [TF1's value summaries]
    in kernels/cpu/basic_ops.cc). The Print kernel writes the line, in the task that runs it."""
    message = "" if message is None else str(message)
    first_n = -1 if first_n is None else int(first_n)
    summarize = 3 if summarize is None else int(summarize)
    data = list(data) if isinstance(data, (list, tuple)) else [data]
    graph = _graph_of(input_, *data)
    attrs = {"message": message, "first_n": first_n, "summarize": summarize}
    return graph._add_op("Print", [input_, _InputList(data)], attrs, name).outputs[0]


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sums along `axis` (TF1's tf.cumsum): exclusive leaves out the element itself,
    reverse sums from the end. Example: ``sf.cumsum([1, 2, 3]) -> [1, 3, 6]``."""
    return _out("Cumsum", [x, _axis_input(axis)],
                {"exclusive": bool(exclusive), "reverse": bool(reverse)}, name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running products along `axis` (TF1's tf.cumprod / tf.math.cumprod): exclusive leaves out
    the element itself (the first is 1), reverse multiplies from the end. Example:
    ``sf.cumprod([1, 2, 3]) -> [1, 2, 6]``. Its gradient divides by x, as TF's (not defined
    where x is 0)."""
    return _out("Cumprod", [x, _axis_input(axis)],
                {"exclusive": bool(exclusive), "reverse": bool(reverse)}, name)


def reverse(tensor, axis, name=None):
    """`tensor` with its elements reversed along each dimension in `axis` (a list of ints, as
    TF1's tf.reverse / tf.reverse_v2)."""
    axis = [int(a) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    return _out("ReverseV2", [tensor, np.asarray(axis, np.int32)], None, name)


reverse_v2 = reverse


def add_n(inputs, name=None):
    """The sum of a list of tensors of one shape.

    Example::

        total = sf.add_n([a, b, c])
    """
    return _graph_of(*inputs)._add_op("AddN", [_InputList(inputs)], None, name).outputs[0]


def cast(x, dtype, name=None):
    """`x` converted to `dtype`. Example: ``sf.cast(labels, sf.float32)``. A SparseTensor
    gives a SparseTensor with its values converted (as TF1)."""
    from shardflow.sparse_tensor import SparseTensor
    if isinstance(x, SparseTensor):
        return SparseTensor(x.indices, cast(x.values, dtype, name), x.dense_shape)
    return _out("Cast", [x], {"DstT": dtypes.as_dtype(dtype)._enum}, name)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """Matrix product of two rank-2 tensors (also ``a @ b``), batched for higher ranks. TF1's
    signature: adjoint_a/b are transpose_a/b (no complex types here); the *_is_sparse hints
    change nothing.

    Example::

        y = sf.matmul(x, w)                  # [batch, in] x [in, out]
        g = sf.matmul(x, x, transpose_a=True)
    """
    if (transpose_a and adjoint_a) or (transpose_b and adjoint_b):
        raise ValueError("matmul: only one of transpose_a and adjoint_a (and of transpose_b "
                         "and adjoint_b) can be True")
    transpose_a, transpose_b = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
    a_t, b_t = convert_to_tensor(a), convert_to_tensor(b)
    if a_t.dtype in (dtypes.int8, dtypes.uint8) and a_t.dtype == b_t.dtype:
        # Through the int32 kernel: exact, and its wrap-around, cast back, is theirs.
        wide = matmul(cast(a_t, dtypes.int32), cast(b_t, dtypes.int32), transpose_a,
                      transpose_b)
        return cast(wide, a_t.dtype, name=name)
    ra, rb = a_t.shape.ndims, b_t.shape.ndims
    if ra is None or rb is None or ra > 2 or rb > 2:
        return _batch_matmul(a_t, b_t, transpose_a, transpose_b, name)
    return _out("MatMul", [a, b], {"transpose_a": transpose_a, "transpose_b": transpose_b},
                name)


def _batch_matmul(a, b, transpose_a, transpose_b, name):
    """matmul of rank-3 (or higher) tensors, TF1's batched matmul: [..., n, k] x [..., k, m],
    the batch dimensions broadcast (BatchMatMulV2). A batch times one matrix is one reshaped
    product (one GEMM instead of one per item). An input of unknown rank goes to
    BatchMatMulV2, which takes any rank >= 2 when the step runs, as TF1's."""
    if a.shape.ndims is None or b.shape.ndims is None:
        return _out("BatchMatMulV2", [a, b], {"adj_x": bool(transpose_a),
                                              "adj_y": bool(transpose_b)}, name)
    da, db = a.shape.as_list(), b.shape.as_list()
    if len(db) == 2 and not transpose_a:
        k = da[-1]
        flat = reshape(a, [-1, k if k is not None else -1])
        out = _out("MatMul", [flat, b], {"transpose_a": False, "transpose_b": transpose_b})
        m = db[0] if transpose_b else db[1]
        lead = [d if d is not None else -1 for d in da[:-1]]
        if lead.count(-1) <= 1:
            return reshape(out, lead + [m], name=name)
        dims = concat([shape(a)[:-1], constant([-1 if m is None else m])], 0)
        result = reshape(out, dims, name=name)
        result.set_shape(da[:-1] + [m])
        return result
    return _out("BatchMatMulV2", [a, b], {"adj_x": bool(transpose_a), "adj_y": bool(transpose_b)},
                name)


# ---- reductions ---------------------------------------------------------------------------


def _axis_value(axis):
    """`axis` as Python ints when it is a tensor the graph determines (tf.constant(1)); a
    tensor known only when the step runs stays one."""
    if isinstance(axis, Tensor):
        from shardflow.tensor_util import constant_value
        value = constant_value(axis)
        if value is not None:
            return np.asarray(value).tolist()
    return axis


def _axis_input(axis):
    """A single axis as an op input: an int32 scalar, or the run-time tensor cast to int32."""
    axis = _axis_value(axis)
    return cast(axis, dtypes.int32) if isinstance(axis, Tensor) else np.int32(axis)


def _refuse_repeated_axes(axis, rank):
    """A ValueError for an axis given twice (also as i and i - rank), as TF1's 'Axis 1
    specified more than once' (the reduction summed over it once)."""
    if rank is None:
        return
    seen = set()
    for a in np.asarray(axis).ravel().tolist():
        a = int(a)
        if -rank <= a < rank:
            if a % rank in seen:
                raise ValueError("Axis %d specified more than once" % a)
            seen.add(a % rank)


def _reduction(op_type, doc):
    def fn(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
           keep_dims=None):
        # TF1's spellings: reduction_indices for axis, keep_dims for keepdims.
        if reduction_indices is not None:
            if axis is not None:
                raise ValueError("give axis or reduction_indices (TF1's name for it), not both")
            axis = reduction_indices
        if keep_dims is not None:
            if keepdims is not None:
                raise ValueError("give keepdims or keep_dims (TF1's name for it), not both")
            keepdims = keep_dims
        keepdims = bool(keepdims)
        axis = _axis_value(axis)
        x = convert_to_tensor(input_tensor)
        if isinstance(axis, Tensor):       # known only when the step runs
            return _out(op_type, [x, cast(axis, dtypes.int32)], {"keep_dims": keepdims}, name)
        if axis is None:
            if x.shape.ndims is None:
                if keepdims:
                    raise ValueError("keepdims needs a known rank when axis is None")
                x = reshape(x, [-1])
                axis = [0]
            else:
                axis = list(range(x.shape.ndims))
        elif isinstance(axis, (int, np.integer)):
            axis = [int(axis)]
        _refuse_repeated_axes(axis, x.shape.ndims)
        return _out(op_type, [x, np.asarray(axis, dtype=np.int32)], {"keep_dims": keepdims},
                    name)
    fn.__doc__ = (doc + " over `axis` (an int, a list, or None for all dimensions).\n\n"
                  "Example::\n\n    m = sf.%s(x, axis=1, keepdims=True)\n"
                  % ("reduce_" + op_type.lower()))
    return fn


reduce_sum = _reduction("Sum", "Sum")
reduce_mean = _reduction("Mean", "Mean")
reduce_max = _reduction("Max", "Maximum")
reduce_min = _reduction("Min", "Minimum")
reduce_prod = _reduction("Prod", "Product")


def argmax(input, axis=None, name=None, dimension=None,  # noqa: A002
           output_type=dtypes.int64):
    """Index of the largest value along `axis` (TF1's order of arguments; `dimension` is its
    old name for axis).

    Example: ``predictions = sf.argmax(logits, axis=1, output_type=sf.int32)``.
    """
    if axis is not None and dimension is not None:
        raise ValueError("argmax: give axis or dimension, not both")
    axis = dimension if axis is None else axis
    if axis is None:
        axis = 0
    return _out("ArgMax", [input, _axis_input(axis)],
                {"output_type": dtypes.as_dtype(output_type)._enum}, name)


# ---- shapes -------------------------------------------------------------------------------


def reshape(tensor, shape, name=None):
    """`tensor` with another shape of the same element count; one dimension may be -1.

    Example: ``flat = sf.reshape(images, [-1, 784])``.
    """
    if isinstance(shape, (list, tuple)) and _holds_tensor(shape):
        # [sf.shape(x)[0], -1]: the dimensions packed when the graph runs; the ones given as
        # numbers stay known.
        known = [None if isinstance(d, Tensor) or d == -1 else int(d) for d in shape]
        packed = [cast(d, dtypes.int32) if isinstance(d, Tensor) else np.int32(d)
                  for d in shape]
        out = _out("Reshape", [tensor, _pack_list(packed, dtypes.int32)], name=name)
        out.set_shape(known)
        return out
    if not isinstance(shape, Tensor):
        dims = np.asarray(shape, dtype=np.int64)
        fits = dims.size == 0 or (dims.min() >= np.iinfo(np.int32).min and
                                  dims.max() <= np.iinfo(np.int32).max)
        shape = dims.astype(np.int32) if fits else dims   # int32 would wrap
    return _out("Reshape", [tensor, shape], name=name)


def transpose(a, perm=None, name=None, conjugate=False):
    """Permutes the dimensions (reverses them when `perm` is None). `conjugate` changes
    nothing: there are no complex types."""
    if perm is None:
        rank = convert_to_tensor(a).shape.ndims
        if rank is None:
            raise ValueError("transpose without perm needs a known rank")
        perm = list(reversed(range(rank)))
    perm = _axis_value(perm)   # a tensor known only when the step runs stays one
    if isinstance(perm, Tensor):
        return _out("Transpose", [a, perm], name=name)
    return _out("Transpose", [a, np.asarray(perm, dtype=np.int32)], name=name)


def concat(values, axis, name=None):
    """Joins tensors along `axis` (an int, or a scalar tensor). Example:
    ``sf.concat([a, b], axis=1)``."""
    return _graph_of(*values)._add_op("Concat", [_InputList(values), _axis_input(axis)], None,
                                      name).outputs[0]


def slice(input_, begin, size, name=None):  # noqa: A001
    """The part of `input_` starting at `begin` with `size` (-1: to the end). begin and size
    may be tensors, or lists holding some (known when the step runs), as TF1's."""
    def vector(v):
        if isinstance(v, Tensor):
            return v if v.dtype.base_dtype == dtypes.int32 else cast(v, dtypes.int32)
        if isinstance(v, (list, tuple)) and _holds_tensor(v):
            return _pack_list(v, dtypes.int32)
        return np.asarray(v, np.int32)
    return _out("Slice", [input_, vector(begin), vector(size)], name=name)


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The run-time shape of `input` as a 1-D tensor. As TF1's tf.shape(input, name=None,
    out_type=tf.int32): a second positional argument is the name."""
    return _out("Shape", [input], {"out_type": dtypes.as_dtype(out_type)._enum}, name)


shape_of = shape   # for functions whose argument is called shape


def _alias(value, old, old_name, new_name, what):
    """An argument given under its TF1 name `new_name` or its older `old_name`."""
    if old is not None:
        if value is not None:
            raise ValueError("%s: give %s or %s, not both" % (what, new_name, old_name))
        return old
    return value


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    """`input` with a dimension of size 1 inserted at `axis` (TF1's older name: dim)."""
    axis = _alias(axis, dim, "dim", "axis", "expand_dims")
    if axis is None:
        raise ValueError("expand_dims needs axis")
    return _out("ExpandDims", [input, _axis_input(axis)], name=name)


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    """`input` without dimensions of size 1 (only those in `axis`, when given; TF1's older
    name: squeeze_dims)."""
    axis = _alias(axis, squeeze_dims, "squeeze_dims", "axis", "squeeze")
    if axis is None:
        axis = []
    elif isinstance(axis, int):
        axis = [axis]
    return _out("Squeeze", [input], {"squeeze_dims": list(axis)}, name)


def no_op(name=None):
    """An op that does nothing; with control dependencies it groups other ops."""
    return get_default_graph()._add_op("NoOp", [], None, name)


def group(*inputs, name=None):
    """One op that runs all of `inputs` (ops or tensors, also in nested lists, tuples and
    dicts, as TF1 flattens them: ``tf.group(train_op, [global_step.assign(n)])``).

    Example: ``train = sf.group(update_w, update_b)``.
    """
    from shardflow.framework import control_dependencies

    def flat(values):
        for v in values:
            if isinstance(v, dict):
                yield from flat(v[k] for k in sorted(v))
            elif isinstance(v, (list, tuple)):
                yield from flat(v)
            else:
                yield v
    with control_dependencies(list(flat(inputs))):
        return no_op(name=name)


def placeholder_with_default(input, shape, name=None):  # noqa: A002
    """`input` unless a value is fed for the result (TF1's tf.placeholder_with_default).

    Example: ``keep_prob = sf.placeholder_with_default(1.0, [])`` (feed 0.5 when training).
    """
    value = convert_to_tensor(input)
    if shape is None:
        return identity(value, name=name)
    want = TensorShape(list(shape))
    if not want.is_compatible_with(value.shape):
        raise ValueError("placeholder_with_default: the default has shape %s, not %s"
                         % (value.shape.as_list(), list(shape)))
    # A Reshape to the default's own shape, that shape hidden from the graph's inference (and
    # from tensor_util.constant_value, which looks through an Identity: a fed value would be
    # folded away); then the shape given, which may be less specific than the default's
    # ([None, 3] for a default of [2, 3]): a feed of any shape that fits it is taken.
    hidden = reshape(value, stop_gradient(shape_of(value)))
    dims = want.as_list()
    if sum(d is None for d in dims) <= 1:
        return reshape(hidden, [-1 if d is None else d for d in dims], name=name)
    return _out("EnsureShape", [hidden], {"shape": dims}, name)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """`t` with values below `clip_value_min` raised to it and above `clip_value_max` lowered
    to it (the gradient flows where no clipping happened)."""
    return minimum(maximum(t, clip_value_min), clip_value_max, name=name)


def global_norm(t_list, name=None):
    """sqrt(sum of the squares of every element of every tensor in `t_list`)."""
    squares = [reduce_sum(square(t)) for t in t_list if t is not None]
    return sqrt(add_n(squares) if len(squares) > 1 else squares[0], name=name)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`t` scaled down so that its L2 norm (over `axes`, default all) is at most clip_norm."""
    from shardflow.array_ops import where_v2
    t = convert_to_tensor(t)
    # As TF's: the square root only of positive sums, so that an all-zero t (or row) has the
    # gradient 1, not NaN (sqrt's derivative at 0).
    l2sum = reduce_sum(square(t), axis=axes, keepdims=True)
    positive = greater(l2sum, 0)
    norm = where_v2(positive, sqrt(where_v2(positive, l2sum, ones_like(l2sum))), l2sum)
    clip_norm = cast(clip_norm, t.dtype) if isinstance(clip_norm, Tensor) else clip_norm
    return divide(multiply(t, clip_norm), maximum(norm, clip_norm), name=name)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """TF1's clip_by_global_norm: every tensor of `t_list` scaled by
    clip_norm / max(global_norm, clip_norm); returns (clipped list, global norm). None entries
    stay None."""
    norm = use_norm if use_norm is not None else global_norm(t_list)
    scale = divide(clip_norm, maximum(norm, clip_norm))
    clipped = [None if t is None else multiply(t, scale) for t in t_list]
    return clipped, norm


def check_numerics(tensor, message, name=None):
    """`tensor`, after checking it holds no NaN or Inf (the step fails naming `message`)."""
    return _out("CheckNumerics", [tensor], {"message": message}, name)



__all__ = [
    "stateless_random_normal",
    "stateless_random_uniform",
    "stateless_truncated_normal",
    "random_gamma",
    "random_poisson",
    "cumsum",
    "cumprod",
    "lgamma",
    "digamma",
    "polygamma",
    "reverse",
    "reverse_v2",
    "Print",
    "ceil",
    "cos",
    "erf",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "expm1",
    "floor",
    "is_finite",
    "is_inf",
    "is_nan",
    "log1p",
    "round",
    "sin",
    "abs",
    "add",
    "add_n",
    "argmax",
    "cast",
    "check_numerics",
    "clip_by_global_norm",
    "clip_by_norm",
    "clip_by_value",
    "global_norm",
    "placeholder_with_default",
    "concat",
    "constant",
    "divide",
    "equal",
    "exp",
    "expand_dims",
    "fill",
    "floordiv",
    "floormod",
    "mod",
    "greater",
    "greater_equal",
    "group",
    "identity",
    "less",
    "less_equal",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "no_op",
    "not_equal",
    "ones",
    "ones_like",
    "placeholder",
    "pow",
    "random_normal",
    "random_uniform",
    "reciprocal",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "reshape",
    "rsqrt",
    "set_random_seed",
    "shape",
    "sigmoid",
    "sign",
    "slice",
    "sqrt",
    "square",
    "squared_difference",
    "squeeze",
    "stop_gradient",
    "subtract",
    "tanh",
    "transpose",
    "truediv",
    "truncated_normal",
    "zeros",
    "zeros_like",
]
