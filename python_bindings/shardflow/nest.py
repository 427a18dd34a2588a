"""TF1's tf.nest (also tf.contrib.framework.nest): nested structures of lists, tuples,
namedtuples and dicts, flattened and rebuilt.

Example::

    flat = sf.nest.flatten({"b": [1, 2], "a": (3,)})             # [3, 1, 2]
    sf.nest.pack_sequence_as({"b": [0, 0], "a": (0,)}, flat)       # {"b": [1, 2], "a": (3,)}
    sf.nest.map_structure(lambda t: t * 2, (x, [y, z]))

As in TF, lists, tuples, namedtuples and mappings (dicts, OrderedDicts, defaultdicts) are
sequences; everything else (strings, tensors, arrays, None) is a leaf. A mapping's values are
visited in the order of its sorted keys; packing gives back the mapping's own key order and
type. (tf.data's element structures treat a list as one value: shardflow/data/structure.py.)
"""

import collections.abc


def is_sequence(seq):
    """Whether `seq` is a list, tuple, namedtuple or mapping (not a string), as TF1's
    tf.nest.is_nested / tf.contrib.framework.nest.is_sequence."""
    if isinstance(seq, (str, bytes)):
        return False
    return isinstance(seq, (list, tuple, collections.abc.Mapping))


is_nested = is_sequence


def _sorted_keys(mapping):
    try:
        return sorted(mapping)
    except TypeError:
        raise TypeError("nest only supports dicts with sortable keys, got %r" % (mapping,))


def _children(seq):
    if isinstance(seq, collections.abc.Mapping):
        return [seq[k] for k in _sorted_keys(seq)]
    return list(seq)


def _sequence_like(instance, args):
    """A sequence of instance's type holding `args` (mapping values in sorted-key order)."""
    if isinstance(instance, collections.abc.Mapping):
        result = dict(zip(_sorted_keys(instance), args))
        if isinstance(instance, collections.defaultdict):
            out = collections.defaultdict(instance.default_factory)
            for key in instance:
                out[key] = result[key]
            return out
        return type(instance)((key, result[key]) for key in instance)
    if isinstance(instance, tuple) and hasattr(instance, "_fields"):
        return type(instance)(*args)
    return type(instance)(args)


def flatten(structure, expand_composites=False):
    """The leaves of `structure`, depth first (a leaf gives [leaf])."""
    if not is_sequence(structure):
        return [structure]
    out = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def _pack(structure, flat, start):
    if not is_sequence(structure):
        return flat[start], start + 1
    children = []
    for child in _children(structure):
        value, start = _pack(child, flat, start)
        children.append(value)
    return _sequence_like(structure, children), start


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """`flat_sequence` (a list) nested as `structure` is; ValueError when the counts differ,
    TypeError when flat_sequence is not a sequence, as TF's."""
    if not is_sequence(flat_sequence):
        raise TypeError("flat_sequence must be a sequence, got %r" % (flat_sequence,))
    flat = list(flat_sequence)
    if not is_sequence(structure):
        if len(flat) != 1:
            raise ValueError("Structure is a scalar but len(flat_sequence) == %d > 1"
                             % len(flat))
        return flat[0]
    expected = len(flatten(structure))
    if expected != len(flat):
        raise ValueError("Could not pack sequence. Structure had %d elements, but "
                         "flat_sequence had %d elements.  Structure: %s, flat_sequence: %s."
                         % (expected, len(flat), structure, flat))
    return _pack(structure, flat, 0)[0]


def _kind(seq):
    if isinstance(seq, collections.abc.Mapping):
        return dict
    return type(seq)


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raises ValueError when `nest1` and `nest2` do not nest alike (sequence or leaf,
    lengths, mapping keys), and, with check_types, TypeError when their sequences' types
    differ (a list against a tuple), as TF's tf.nest.assert_same_structure."""
    n1, n2 = len(flatten(nest1)), len(flatten(nest2))
    if n1 != n2:
        raise ValueError("The two structures don't have the same number of elements.\n\n"
                         "First structure (%d elements): %s\n\nSecond structure (%d "
                         "elements): %s" % (n1, nest1, n2, nest2))
    _assert_same(nest1, nest2, check_types)


def _assert_same(a, b, check_types):
    if is_sequence(a) != is_sequence(b):
        raise ValueError("The two structures don't have the same nested structure.\n\n"
                         "First structure: %s\n\nSecond structure: %s" % (a, b))
    if not is_sequence(a):
        return
    if check_types and type(a) is not type(b):
        mappings = isinstance(a, collections.abc.Mapping) and isinstance(
            b, collections.abc.Mapping)
        if not mappings:
            raise TypeError("The two structures don't have the same sequence type. First "
                            "structure has type %s, while second structure has type %s."
                            % (type(a), type(b)))
    if isinstance(a, collections.abc.Mapping) != isinstance(b, collections.abc.Mapping) or \
            (isinstance(a, collections.abc.Mapping) and set(a) != set(b)):
        raise ValueError("The two dictionaries don't have the same set of keys. First "
                         "structure has keys %s, while second structure has keys %s."
                         % (list(a), list(b)))
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        raise ValueError("The two structures don't have the same sequence length. Input "
                         "structure has length %d, while shallow structure has length %d."
                         % (len(ca), len(cb)))
    for x, y in zip(ca, cb):
        _assert_same(x, y, check_types)


def map_structure(func, *structure, **kwargs):
    """func applied to the leaves of the structures (all nesting alike), packed as the first
    one, as TF's tf.nest.map_structure; keyword check_types (default True)."""
    if not callable(func):
        raise TypeError("func must be callable, got: %s" % func)
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types = kwargs.pop("check_types", True)
    kwargs.pop("expand_composites", None)
    if kwargs:
        raise ValueError("Only valid keyword arguments are `check_types` and "
                         "`expand_composites`, not: `%s`" % "`, `".join(kwargs))
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    flats = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*leaves) for leaves in zip(*flats)])


__all__ = ["assert_same_structure", "flatten", "is_nested", "is_sequence", "map_structure",
           "pack_sequence_as"]
