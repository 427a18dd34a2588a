"""The namespaces TF 1.13-1.15 programs use beside the top level: sf.math, sf.linalg,
sf.random and sf.compat (with compat.v1, the package itself).

Example::

    import shardflow as tf
    y = tf.math.log(tf.math.maximum(x, 1e-6))
    n = tf.linalg.norm(w, axis=1)
    r = tf.random.uniform([2, 3], seed=1)

    import shardflow.compat.v1 as tf              # code written for TF 1.15's compat.v1
    tf.disable_v2_behavior()                      # a no-op: shardflow builds graphs, as TF1

Each namespace is filled once, when shardflow is imported, with the names TF1 has there that
shardflow has (looked up in shardflow.ops first, then the composed modules), so an op added to
shardflow.ops later (floor, sin, is_nan, ...) appears in sf.math without a change here; a name
shardflow lacks raises an AttributeError that says so. The modules are registered as
"shardflow.math" etc., so ``from shardflow.math import log`` works; inside the package
``import math`` / ``import random`` still get Python's own modules (absolute imports).
"""

import sys
import types

from shardflow import (array_composites, array_ops, check_ops, contractions, core_extras,
                       linalg_ops, math_composites, matrix_composites, nn, ops, segment_ops)

# TF 1.15's tf.math (and the names TF1 also spells there), looked up in this order of modules.
_MATH_NAMES = (
    "abs", "accumulate_n", "acos", "acosh", "add", "add_n", "argmax", "argmin", "asin", "asinh",
    "atan", "atan2", "atanh", "betainc", "bincount", "ceil", "confusion_matrix", "cos", "cosh",
    "count_nonzero", "cumprod", "cumsum", "digamma", "divide", "divide_no_nan", "equal", "erf",
    "erfc", "erfinv", "exp", "expm1", "floor", "floordiv", "floormod", "greater",
    "greater_equal", "igamma", "igammac", "in_top_k", "invert_permutation",
    "is_finite", "is_inf", "is_nan", "is_non_decreasing", "is_strictly_increasing",
    "l2_normalize", "lbeta", "less", "less_equal", "lgamma", "log",
    "log1p", "log_sigmoid", "log_softmax", "logical_and", "logical_not", "logical_or",
    "logical_xor", "maximum", "minimum", "mod", "multiply", "negative", "not_equal", "polygamma",
    "polyval", "pow", "reciprocal", "reduce_all", "reduce_any", "reduce_euclidean_norm",
    "reduce_logsumexp", "reduce_max",
    "reduce_mean", "reduce_min", "reduce_prod", "reduce_std", "reduce_sum", "reduce_variance",
    "rint", "round", "rsqrt", "scalar_mul", "segment_max", "segment_mean", "segment_min",
    "segment_prod", "segment_sum", "sigmoid", "sign", "sin", "sinh", "softmax", "softplus",
    "softsign", "sqrt", "square", "squared_difference", "subtract", "tan", "tanh", "top_k",
    "truediv", "truncatediv", "truncatemod", "unsorted_segment_max", "unsorted_segment_mean",
    "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_sqrt_n",
    "unsorted_segment_sum", "xdivy", "xlogy", "zero_fraction",
)

_LINALG_NAMES = (
    "adjoint", "band_part", "cholesky", "cross", "det", "diag", "diag_part", "einsum", "eye",
    "inv", "l2_normalize", "logdet", "lu", "matmul", "matrix_transpose", "matvec", "norm",
    "qr", "set_diag", "slogdet", "solve", "svd", "tensordot", "trace", "transpose",
    "triangular_solve", "lstsq", "eigh", "eigvalsh", "cholesky_solve", "expm", "logm",
    "sqrtm",
)

# tf.random's name -> the name shardflow (as TF1's top level) has it under.
_RANDOM_NAMES = {
    "categorical": "categorical",
    "gamma": "random_gamma",
    "normal": "random_normal",
    "poisson": "random_poisson",
    "set_random_seed": "set_random_seed",
    "set_seed": "set_random_seed",
    "shuffle": "random_shuffle",
    "truncated_normal": "truncated_normal",
    "uniform": "random_uniform",
}


def _matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """`a` with its last two dimensions swapped (tf.linalg.matrix_transpose /
    tf.linalg.transpose; the rank must be known)."""
    if conjugate:
        raise ValueError("matrix_transpose(conjugate=True): shardflow has no complex types")
    a = ops.convert_to_tensor(a)
    if a.shape.ndims is None or a.shape.ndims < 2:
        raise ValueError("matrix_transpose needs a tensor of known rank >= 2, got %s"
                         % (a.shape,))
    perm = list(range(a.shape.ndims - 2)) + [a.shape.ndims - 1, a.shape.ndims - 2]
    return ops.transpose(a, perm, name=name)


_EXTRA = {"matrix_transpose": _matrix_transpose, "transpose": _matrix_transpose,
          "band_part": matrix_composites.matrix_band_part,
          "diag": matrix_composites.matrix_diag, "diag_part": matrix_composites.matrix_diag_part,
          "set_diag": matrix_composites.matrix_set_diag,
          "inv": linalg_ops.matrix_inverse, "det": linalg_ops.matrix_determinant,
          "slogdet": linalg_ops.log_matrix_determinant, "solve": linalg_ops.matrix_solve,
          "triangular_solve": linalg_ops.matrix_triangular_solve,
          "lstsq": linalg_ops.matrix_solve_ls, "eigh": linalg_ops.self_adjoint_eig,
          "sqrtm": linalg_ops.matrix_square_root,
          "eigvalsh": linalg_ops.self_adjoint_eigvals}


def _lookup(name, sources):
    for source in sources:
        value = source.get(name) if isinstance(source, dict) else getattr(source, name, None)
        if value is not None:
            return value
    return None


def _namespace(full_name, doc, names, sources):
    """A module `full_name` holding those of `names` ({exposed: looked-up} or a sequence)
    that `sources` have; reading any other attribute is an AttributeError that says which
    TF1 names shardflow lacks."""
    module = types.ModuleType(full_name, doc)
    mapping = names if isinstance(names, dict) else {n: n for n in names}
    found = {}
    for exposed, looked_up in mapping.items():
        value = _lookup(looked_up, sources)
        if value is not None:
            found[exposed] = value
    module.__dict__.update(found)
    module.__all__ = sorted(found)
    short = full_name.replace("shardflow.", "")

    def __getattr__(attr):  # noqa: N807 (PEP 562)
        if attr.startswith("__"):
            raise AttributeError(attr)
        known = " (TF1 has it; shardflow does not yet)" if attr in mapping else ""
        raise AttributeError("module 'shardflow.%s' has no attribute '%s'%s; it has: %s"
                             % (short, attr, known, ", ".join(module.__all__)))
    module.__getattr__ = __getattr__
    sys.modules[full_name] = module
    return module


math = _namespace(  # noqa: A001 (sf.math, as tf.math; the package imports Python's math absolutely)
    "shardflow.math", "TF1's tf.math: element-wise math, reductions and comparisons.",
    _MATH_NAMES, [ops, math_composites, array_ops, nn, array_composites, segment_ops,
                  check_ops, core_extras])
math.divide = math_composites.divide   # true division (ops.divide is the engine's Div)
linalg = _namespace(
    "shardflow.linalg", "TF1's tf.linalg: matmul, norm, eye, l2_normalize, matrix_transpose, "
    "inv, det, slogdet, logdet, solve, triangular_solve, cholesky, svd, qr.",
    _LINALG_NAMES, [_EXTRA, ops, math_composites, contractions, nn, matrix_composites,
                    linalg_ops])
bitwise = _namespace(
    "shardflow.bitwise", "TF1's tf.bitwise: and, or, xor, invert and shifts of integers.",
    ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"], [ops])
random = _namespace(
    "shardflow.random", "TF1's tf.random: uniform, normal, truncated_normal, set_random_seed "
    "(and set_seed, its TF2 name), categorical.", _RANDOM_NAMES,
    [ops, array_composites, matrix_composites])


# ---- tf.compat ----------------------------------------------------------------------------


def as_bytes(bytes_or_text, encoding="utf-8"):
    """`bytes_or_text` as bytes (text encoded), as TF1's tf.compat.as_bytes."""
    if isinstance(bytes_or_text, (bytes, bytearray)):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    raise TypeError("as_bytes: expected bytes or str, not %r" % (bytes_or_text,))


def as_text(bytes_or_text, encoding="utf-8"):
    """`bytes_or_text` as str (bytes decoded), as TF1's tf.compat.as_text (as_str)."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, (bytes, bytearray)):
        return bytes(bytes_or_text).decode(encoding)
    raise TypeError("as_text: expected bytes or str, not %r" % (bytes_or_text,))


def as_str_any(value):
    """str(value), decoding bytes (TF1's tf.compat.as_str_any)."""
    return as_text(value) if isinstance(value, (bytes, bytearray)) else str(value)


def disable_v2_behavior():
    """Nothing to do: shardflow has TF1's behaviour only (graphs and sessions); accepted so
    that code written for TF 1.15's compat.v1 runs."""


def disable_eager_execution():
    """Nothing to do: shardflow always builds graphs (TF1's graph mode)."""


def enable_eager_execution(config=None, device_policy=None, execution_mode=None):
    """Refused: shardflow runs TF1 graphs in sessions only and has no eager mode. Raises
    NotImplementedError (a RuntimeError) saying to remove the call, rather than letting the
    program go on to expect eager tensors."""
    raise NotImplementedError(
        "tf.enable_eager_execution(): shardflow runs TF1 graphs (built, then run with "
        "tf.Session) only and has no eager execution; remove the enable_eager_execution() "
        "call and run the graph in a session")


def executing_eagerly():
    """False: shardflow always builds graphs and runs them in sessions."""
    return False


compat = types.ModuleType("shardflow.compat", "TF1's tf.compat: v1 (the package itself), "
                          "as_bytes, as_text, as_str, as_str_any.")
compat.as_bytes = as_bytes
compat.as_text = compat.as_str = as_text
compat.as_str_any = as_str_any
compat.__all__ = ["as_bytes", "as_str", "as_str_any", "as_text", "v1"]
# compat.v1 is the package itself (being imported now: the module object that its import
# goes on to fill).
compat.v1 = sys.modules["shardflow"]
sys.modules["shardflow.compat"] = compat
sys.modules["shardflow.compat.v1"] = compat.v1


__all__ = ["compat", "disable_eager_execution", "disable_v2_behavior", "enable_eager_execution",
           "executing_eagerly", "linalg", "math", "random"]
