"""The structure of a dataset's elements: nesting, component dtypes and shapes.

An element is a nested structure whose leaves are its components: tuples (and namedtuples) and
dicts nest, as in TF1's tf.data; anything else, a list included, is one component (a list is a
value, ``[1, 2, 3]`` one int32 vector). Inside the pipeline an element travels flat, as a tuple
of NumPy arrays in the order flatten() gives (dict keys sorted); a dataset keeps the structure
to pack it again for map functions and get_next().

Example::

    flat = flatten({"y": 1, "x": (2, 3)})      # [2, 3, 1]
    pack_as({"y": 0, "x": (0, 0)}, flat)        # {"x": (2, 3), "y": 1}
"""

import numpy as np

from shardflow import dtypes
from shardflow.framework import Tensor, TensorShape, _literal
from shardflow.variables import Variable


# Note [Sparse elements]. A SparseTensor in an element (what parse_example gives for a
# VarLenFeature, a map function's sparse result) is one leaf to the user and three components to
# the pipeline: its indices (int64 [N, rank]), values ([N]) and dense_shape (int64 [rank]), in
# that order, so that every transformation that moves components (shuffle, repeat, prefetch,
# zip, ...) moves it unchanged. The transformations that change shapes treat the three together
# (batch: row index before each index, dense shapes their elementwise maximum; unbatch: rows
# apart again), as TF1's do. In the pipeline a sparse value travels as a SparseTensorValue; a
# map function and get_next() see a SparseTensor.


def _is_sparse(value):
    from shardflow.sparse_tensor import SparseTensor, SparseTensorValue
    return isinstance(value, (SparseTensor, SparseTensorValue))


def _is_nested(value):
    return isinstance(value, (tuple, dict)) or _is_sparse(value)


def _children(value):
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    if _is_sparse(value):
        return [value.indices, value.values, value.dense_shape]
    return list(value)


def sparse_slots(structure, start=0):
    """The flat positions where the sparse leaves of `structure` begin (Note [Sparse
    elements]): components p, p+1, p+2 are one SparseTensor's indices, values, dense_shape."""
    if _is_sparse(structure):
        return [start]
    if not _is_nested(structure):
        return []
    out = []
    for child in _children(structure):
        out.extend(sparse_slots(child, start))
        start += len(flatten(child))
    return out


def public(structure, specs, what):
    """The element's structure as the user sees it (output_types, output_shapes,
    output_classes): `what` is "types", "shapes" or "classes"; a sparse leaf shows its values'
    dtype, its dense shape (rank known from its indices) and SparseTensor."""
    from shardflow.sparse_tensor import SparseTensor
    slots = set(sparse_slots(structure))
    leaves, i = [], 0
    while i < len(specs):
        dtype, shape = specs[i]
        if i in slots:
            index_shape = specs[i][1]
            rank = index_shape.as_list()[1] if index_shape.ndims == 2 else None
            leaves.append({"types": specs[i + 1][0],
                           "shapes": TensorShape(None if rank is None else [None] * rank),
                           "classes": SparseTensor}[what])
            i += 3
            continue
        leaves.append({"types": dtype, "shapes": shape, "classes": Tensor}[what])
        i += 1
    return _pack_public(structure, leaves)


def _pack_public(structure, leaves):
    it = iter(leaves)

    def build(node):
        if _is_sparse(node) or not _is_nested(node):
            return next(it)
        children = [build(c) for c in _children(node)]
        if isinstance(node, dict):
            return type(node)(zip(sorted(node), children))
        if hasattr(node, "_fields"):
            return type(node)(*children)
        return tuple(children)
    return build(structure)


def sparse_specs(dtype, shape):
    """The three component specs of a sparse leaf of values `dtype` and dense `shape`."""
    rank = shape.ndims
    return [(dtypes.int64, TensorShape([None, rank])), (dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


def sparse_placeholder_structure():
    """A sparse leaf for a structure (its components are filled in by pack_as)."""
    from shardflow.sparse_tensor import SparseTensorValue
    return SparseTensorValue(None, None, None)


def flatten(structure):
    """The leaves of `structure`, depth first (dict values in sorted key order)."""
    if not _is_nested(structure):
        return [structure]
    out = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def pack_as(structure, flat):
    """`flat` (a sequence of leaves) nested as `structure` is."""
    flat = list(flat)
    packed, used = _pack(structure, flat, 0)
    if used != len(flat):
        raise ValueError("a structure of %d components cannot hold %d values"
                         % (used, len(flat)))
    return packed


def _pack(structure, flat, start):
    if not _is_nested(structure):
        return flat[start], start + 1
    children = []
    for child in _children(structure):
        value, start = _pack(child, flat, start)
        children.append(value)
    if isinstance(structure, dict):
        return type(structure)(zip(sorted(structure), children)), start
    if _is_sparse(structure):
        from shardflow.sparse_tensor import SparseTensor, SparseTensorValue
        if any(isinstance(c, Tensor) for c in children):
            return SparseTensor(*children), start
        return SparseTensorValue(*children), start
    if hasattr(structure, "_fields"):  # namedtuple
        return type(structure)(*children), start
    return tuple(children), start


def same_structure(a, b):
    """Whether `a` and `b` nest alike (same kinds, lengths and dict keys)."""
    if _is_nested(a) != _is_nested(b):
        return False
    if not _is_nested(a):
        return True
    if isinstance(a, dict) != isinstance(b, dict) or _is_sparse(a) != _is_sparse(b):
        return False
    if isinstance(a, dict) and sorted(a) != sorted(b):
        return False
    ca, cb = _children(a), _children(b)
    return len(ca) == len(cb) and all(same_structure(x, y) for x, y in zip(ca, cb))


def lists_to_tuples(structure):
    """A map function's result with lists read as tuples (as TF 1.13+ does)."""
    if isinstance(structure, list):
        return tuple(lists_to_tuples(v) for v in structure)
    if isinstance(structure, dict):
        return type(structure)((k, lists_to_tuples(v)) for k, v in structure.items())
    if isinstance(structure, tuple) and not hasattr(structure, "_fields"):
        return tuple(lists_to_tuples(v) for v in structure)
    return structure


# ---- components ---------------------------------------------------------------------------


def as_component(value, dtype=None):
    """A component given by the user, as a NumPy array or a graph Tensor.

    Tensors (and variables, read) stay symbolic: they are evaluated when an iterator is
    initialized. Python numbers and lists take TF1's defaults (float32, int32); text becomes
    bytes objects (dtype string).
    """
    if isinstance(value, Variable):
        value = value.value()
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtypes.as_dtype(dtype):
            raise TypeError("tensor %s is %s, not %s"
                            % (value.name, value.dtype.name, dtypes.as_dtype(dtype).name))
        return value
    if dtype is not None:
        return to_array(value, dtypes.as_dtype(dtype))
    if isinstance(value, np.ndarray) and value.dtype.kind not in "SUO":
        return value
    if isinstance(value, np.ndarray) or np.asarray(value).dtype.kind in "SUO":
        return to_array(value, dtypes.string)
    return _literal(value)


def components_of(structure):
    """as_component of every leaf of `structure`; a sparse leaf's indices and dense_shape as
    int64 (Note [Sparse elements])."""
    out = [as_component(c) for c in flatten(structure)]
    for p in sparse_slots(structure):
        for k in (p, p + 2):
            if not isinstance(out[k], Tensor):
                out[k] = to_array(out[k], dtypes.int64)
        if isinstance(out[p], np.ndarray) and out[p].ndim == 2 and out[p].shape[0] == 0:
            out[p] = out[p].reshape(0, len(out[p + 2]))
    return out


def to_array(value, dtype):
    """`value` as an array of `dtype` (strings: an object array of bytes). A Tensor must have a
    value known when the graph is built (tf.constant(-1, tf.int64) as padded_batch's
    padding_values, as TF1 wants them)."""
    if isinstance(value, Tensor):
        from shardflow.tensor_util import constant_value
        known = constant_value(value)
        if known is None:
            raise ValueError("tf.data needs a value known when the graph is built here, not "
                             "the computed tensor %s; give a constant" % value.name)
        value = known
    if dtype == dtypes.string:
        arr = np.asarray(value, dtype=object)
        encode = np.frompyfunc(lambda s: s.encode() if isinstance(s, str) else bytes(s), 1, 1)
        if not arr.size:
            return arr
        # A 0-d input makes frompyfunc return the bare bytes, not an array.
        return np.asarray(encode(arr), dtype=object).reshape(arr.shape)
    want = dtype.as_numpy_dtype
    if isinstance(value, np.ndarray) and value.dtype == want:
        return value
    return np.asarray(value, dtype=want)


def dtype_of(component):
    if isinstance(component, Tensor):
        return component.dtype
    return dtypes.as_dtype(component.dtype)


def shape_of(component):
    if isinstance(component, Tensor):
        return component.shape
    return TensorShape(component.shape)


# ---- shapes -------------------------------------------------------------------------------


def shapes_up_to(structure, shapes):
    """The TensorShapes of `shapes` (nested as `structure`, the types or the elements, are)
    flat; where `structure` has a leaf, `shapes` holds one shape, which may itself be a
    tuple or list (``()`` is a scalar, ``(None,)`` a vector), as TF's nest.map_structure_up_to
    reads output_shapes. None when `shapes` does not nest as `structure`."""
    if not _is_nested(structure):
        return [as_shape(shapes)]
    if not _is_nested(shapes) or isinstance(structure, dict) != isinstance(shapes, dict):
        return None
    if isinstance(structure, dict) and sorted(structure) != sorted(shapes):
        return None
    ca, cb = _children(structure), _children(shapes)
    if len(ca) != len(cb):
        return None
    out = []
    for a, b in zip(ca, cb):
        flat = shapes_up_to(a, b)
        if flat is None:
            return None
        out.extend(flat)
    return out


def as_shape(shape):
    """A TensorShape from a TensorShape, a list/tuple of dims (None or -1 unknown) or None."""
    if isinstance(shape, TensorShape):
        return shape
    if shape is None:
        return TensorShape(None)
    return TensorShape(list(shape))


def is_compatible(shape, value_shape):
    """Whether a value of `value_shape` (a tuple) fits the static `shape`."""
    if shape.ndims is None:
        return True
    dims = shape.as_list()
    return len(dims) == len(value_shape) and all(
        d is None or d == v for d, v in zip(dims, value_shape))


def shapes_compatible(a, b):
    """Whether two static shapes could describe the same value."""
    if a.ndims is None or b.ndims is None:
        return True
    da, db = a.as_list(), b.as_list()
    return len(da) == len(db) and all(x is None or y is None or x == y for x, y in zip(da, db))


def most_specific_common(a, b):
    """The most specific shape that both `a` and `b` fit (None where they differ)."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def with_leading(dim, shape):
    """`shape` with one more leading dimension `dim` (None for unknown)."""
    if shape.ndims is None:
        return TensorShape(None)
    return TensorShape([dim] + shape.as_list())


def without_leading(shape):
    """`shape` without its first dimension (unknown rank stays unknown)."""
    if shape.ndims is None:
        return TensorShape(None)
    if shape.ndims == 0:
        raise ValueError("a scalar has no first dimension to slice or unbatch")
    return TensorShape(shape.as_list()[1:])


def describe(shape):
    """A shape as TF writes it in messages: [2,3], [?,3] or <unknown>."""
    if shape.ndims is None:
        return "<unknown>"
    return "[%s]" % ",".join("?" if d is None else str(d) for d in shape.as_list())
