"""More TF 1.15 namespaces, built as shardflow.namespaces builds sf.math: sf.debugging
(the asserts of check_ops, check_numerics, is_finite / is_nan / is_inf), sf.sysconfig
(get_include, get_lib, get_compile_flags, get_link_flags: where the package lies, for
building against it) and sf.version (VERSION, GIT_VERSION, COMPILER_VERSION,
GRAPH_DEF_VERSION and its MIN_CONSUMER / MIN_PRODUCER, which the package's top level also
has, as TF1's tf.VERSION & co.). They are registered as "shardflow.debugging",
"shardflow.sysconfig" and "shardflow.version".

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



# ---- tf.version ---------------------------------------------------------------------------

# The GraphDef.version the engine writes (Graph::ToGraphDef) and, since import_graph_def checks
# no version, the oldest producer and consumer it works with.
GRAPH_DEF_VERSION = 1
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
# TF reports "unknown" for a build without git information; shardflow's build records none.
GIT_VERSION = "unknown"


def _compiler_version(path):
    """The compiler that built the ELF shared object `path`, from its .comment section (GCC
    and Clang write "GCC: (Debian 12.2.0-14) 12.2.0" or "clang version 16.0.6" there), as the
    compiler's own version string (__VERSION__: "12.2.0"); "unknown" when it cannot be read."""
    import struct
    try:
        with open(path, "rb") as f:
            header = f.read(64)
            if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
                return "unknown"  # not a 64-bit little-endian ELF file
            shoff, = struct.unpack_from("<Q", header, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 0x3A)
            f.seek(shoff)
            table = f.read(shentsize * shnum)
            sections = [struct.unpack_from("<IIQQQQ", table, i * shentsize)
                        for i in range(shnum)]
            _, _, _, _, names_offset, names_size = sections[shstrndx]
            f.seek(names_offset)
            names = f.read(names_size)
            for name_index, _, _, _, offset, size in sections:
                if names[name_index:names.index(b"\0", name_index)] == b".comment":
                    f.seek(offset)
                    comments = f.read(size).split(b"\0")
                    break
            else:
                return "unknown"
    except (OSError, ValueError, IndexError, struct.error):
        return "unknown"
    for comment in comments:
        text = comment.decode("utf-8", "replace").strip()
        if text.startswith("GCC:"):
            return text.rsplit(" ", 1)[-1]
        if "clang version" in text:
            return text[text.index("clang version"):]
    return "unknown"


def _make_version(package_version):
    """The sf.version module for the package's version string."""
    from shardflow import _shardflow
    version = types.ModuleType("shardflow.version", "TF1's tf.version: VERSION (the package's "
                               "version), GIT_VERSION, COMPILER_VERSION, GRAPH_DEF_VERSION, "
                               "GRAPH_DEF_VERSION_MIN_CONSUMER, GRAPH_DEF_VERSION_MIN_PRODUCER.")
    version.VERSION = package_version
    version.GIT_VERSION = GIT_VERSION
    version.COMPILER_VERSION = _compiler_version(_shardflow.__file__)
    version.GRAPH_DEF_VERSION = GRAPH_DEF_VERSION
    version.GRAPH_DEF_VERSION_MIN_CONSUMER = GRAPH_DEF_VERSION_MIN_CONSUMER
    version.GRAPH_DEF_VERSION_MIN_PRODUCER = GRAPH_DEF_VERSION_MIN_PRODUCER
    version.__all__ = ["COMPILER_VERSION", "GIT_VERSION", "GRAPH_DEF_VERSION",
                       "GRAPH_DEF_VERSION_MIN_CONSUMER", "GRAPH_DEF_VERSION_MIN_PRODUCER",
                       "VERSION"]
    sys.modules["shardflow.version"] = version
    return version


__all__ = ["debugging", "sysconfig"]
