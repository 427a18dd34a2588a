"""Two more TF 1.15 namespaces, built as shardflow.namespaces builds sf.math: sf.debugging
(the asserts of check_ops, check_numerics, is_finite / is_nan / is_inf) and sf.sysconfig
(get_include, get_lib, get_compile_flags, get_link_flags: where the package lies, for
building against it). Both are registered as "shardflow.debugging" / "shardflow.sysconfig".

Example::

    x = sf.debugging.check_numerics(logits, "logits")
    with sf.control_dependencies([sf.debugging.assert_rank(images, 4)]):
        ...
"""

import os
import sys
import types

from shardflow import check_ops, ops
from shardflow.namespaces import _namespace

# TF 1.15's tf.debugging name -> the name shardflow has it under.
_DEBUGGING_NAMES = {
    "Assert": "Assert",
    "assert_all_finite": "verify_tensor_all_finite",
    "assert_equal": "assert_equal",
    "assert_greater": "assert_greater",
    "assert_greater_equal": "assert_greater_equal",
    "assert_integer": "assert_integer",
    "assert_less": "assert_less",
    "assert_less_equal": "assert_less_equal",
    "assert_near": "assert_near",
    "assert_negative": "assert_negative",
    "assert_non_negative": "assert_non_negative",
    "assert_non_positive": "assert_non_positive",
    "assert_none_equal": "assert_none_equal",
    "assert_positive": "assert_positive",
    "assert_rank": "assert_rank",
    "assert_rank_at_least": "assert_rank_at_least",
    "assert_rank_in": "assert_rank_in",
    "assert_same_float_dtype": "assert_same_float_dtype",
    "assert_scalar": "assert_scalar",
    "assert_shapes": "assert_shapes",
    "assert_type": "assert_type",
    "check_numerics": "check_numerics",
    "is_finite": "is_finite",
    "is_inf": "is_inf",
    "is_nan": "is_nan",
    "is_non_decreasing": "is_non_decreasing",
    "is_numeric_tensor": "is_numeric_tensor",
    "is_strictly_increasing": "is_strictly_increasing",
}

debugging = _namespace(
    "shardflow.debugging", "TF1's tf.debugging: run-time asserts and numeric checks.",
    _DEBUGGING_NAMES, [check_ops, ops])


def _package_dir():
    return os.path.dirname(os.path.abspath(__file__))


def get_lib():
    """The directory of the shardflow package (where its extension module lies)."""
    return _package_dir()


def get_include():
    """The package's include directory when it has one, else the package's directory."""
    include = os.path.join(_package_dir(), "include")
    return include if os.path.isdir(include) else _package_dir()


def get_compile_flags():
    return ["-I%s" % get_include()]


def get_link_flags():
    return ["-L%s" % get_lib()]


sysconfig = types.ModuleType("shardflow.sysconfig", "TF1's tf.sysconfig: where the package "
                             "lies (get_include, get_lib, get_compile_flags, get_link_flags).")
sysconfig.get_include = get_include
sysconfig.get_lib = get_lib
sysconfig.get_compile_flags = get_compile_flags
sysconfig.get_link_flags = get_link_flags
sysconfig.__all__ = ["get_compile_flags", "get_include", "get_lib", "get_link_flags"]
sys.modules["shardflow.sysconfig"] = sysconfig

__all__ = ["debugging", "sysconfig"]
