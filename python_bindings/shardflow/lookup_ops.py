"""TF1's lookup tables, the string <-> id maps of text input pipelines: tf.lookup (TF 1.15's
StaticHashTable, StaticVocabularyTable, KeyValueTensorInitializer, TextFileInitializer,
TextFileIndex) and tf.contrib.lookup (HashTable, IdTableWithHashBuckets, index_table_from_tensor,
index_table_from_file, index_to_string_table_from_tensor, index_to_string_table_from_file,
string_to_index, index_to_string, the TextFile*TableInitializers and the hasher specs), and
the tables ops change: tf.contrib.lookup.MutableHashTable and MutableDenseHashTable
(tf.lookup.experimental.DenseHashTable).

Example (words to ids, two buckets for the words not in the vocabulary)::

    words = sf.placeholder(sf.string, [None])
    table = sf.contrib.lookup.index_table_from_tensor(["the", "cat", "sat"], num_oov_buckets=2)
    ids = table.lookup(words)
    with sf.Session() as sess:
        sess.run(sf.tables_initializer())
        sess.run(ids, {words: ["cat", "dog", "the"]})   # [1, 3 or 4, 0]

    # In a tf.data pipeline: build the table outside the map function, initialize it first.
    vocab = sf.lookup.StaticHashTable(sf.lookup.TextFileInitializer(
        "vocab.txt", sf.string, sf.lookup.TextFileIndex.WHOLE_LINE,
        sf.int64, sf.lookup.TextFileIndex.LINE_NUMBER), default_value=0)
    ds = sf.data.TextLineDataset("train.txt").map(
        lambda line: vocab.lookup(sf.string_split([line]).values))

As the string ops (shardflow/string_ops.py), tables are PyFunc nodes running Python on the
client: they work in graphs run by this process and inside tf.data map functions, not on a
`shardflow server` process. A table's initializer is an op (in sf.GraphKeys.TABLE_INITIALIZERS,
so ``sess.run(sf.tables_initializer())`` runs it) that reads the keys and values tensors, or the
vocabulary file, when it runs. A lookup before that fails the step with FailedPreconditionError
"Table not initialized."; duplicate keys with different values fail the initializer with
FailedPreconditionError naming the key (TF's class and message; identical duplicate pairs are
accepted, as TF does); keys and values of different sizes, a column a line lacks or a field that
does not parse fail it with InvalidArgumentError; a missing vocabulary file with NotFoundError
naming the file. Lookups take keys of any shape (or a SparseTensor, whose values are looked up)
and give values of the same shape; an int64 table takes keys of any integer dtype.

Out-of-vocabulary buckets (StaticVocabularyTable, IdTableWithHashBuckets, num_oov_buckets=) are
``vocab_size + H(key) % num_oov_buckets`` with H TensorFlow's hash of the key's bytes (an integer
key: its decimal digits, as TF's as_string): FarmHash's Fingerprint64 (FastHashSpec, the
default), TF's legacy Hash64 (HasherSpec("legacy", None)) or SipHash-2-4 keyed by
StrongHashSpec's two integers; a word lands in the bucket TensorFlow puts it in.

Note [Table state]: TF keeps a table's contents in each session's resources. A PyFunc cannot tell
which session runs it (and lookups in tf.data map functions run in the pipeline's private
session), so here the contents belong to the table object: every session of the graph sees what
the last run of the initializer, in any session, loaded. Running the initializer again reloads
the table from its tensors or file (harmless when they are unchanged; where TF fails a second
initialization with different data, the new data replace the old). A table built inside a map
function is initialized by its first lookup there.
"""

import collections
import sys
import types

import numpy as np

from shardflow import dtypes, errors
from shardflow.framework import (GraphKeys, Tensor, _FuncGraph, convert_to_tensor,
                                 get_default_graph)
from shardflow.script_ops import py_func
from shardflow.tensor_util import constant_value


class TextFileIndex:
    """What a TextFileInitializer takes from each line for keys or values: WHOLE_LINE, the
    LINE_NUMBER (from 0), or an index >= 0: that field of the line split at `delimiter`."""
    WHOLE_LINE = -2
    LINE_NUMBER = -1


HasherSpec = collections.namedtuple("HasherSpec", ["hasher", "key"])
HasherSpec.__doc__ = """How out-of-vocabulary keys are hashed into buckets (tf.contrib.lookup's):
FastHashSpec (unkeyed) or StrongHashSpec(key) (keyed); see the module docstring for the hash."""
FastHashSpec = HasherSpec("fasthash", None)


class StrongHashSpec(HasherSpec):
    """A keyed hash: `key` is two integers, TF's SipHash-2-4 key."""
    __slots__ = ()

    def __new__(cls, key):
        if len(key) != 2:
            raise ValueError("key must have size 2, got %s." % len(key))
        if not all(isinstance(k, (int, np.integer)) for k in key):
            raise TypeError("Invalid key %s. Must be unsigned integer values." % (key,))
        return super().__new__(cls, "stronghash", key)


def _hash_key(hasher_spec):
    """TF's hash for `hasher_spec`: (kind, k0, k1) of _shardflow.string_hash64 (FastHashSpec:
    Fingerprint64, "legacy": TF's Hash64, StrongHashSpec(key): SipHash-2-4 keyed by key)."""
    if not isinstance(hasher_spec, HasherSpec):
        raise TypeError("hasher_spec must be of type HasherSpec, got %r" % (hasher_spec,))
    if hasher_spec.hasher == "fasthash":
        return ("fast", 0, 0)
    if hasher_spec.hasher == "legacy":
        return ("legacy", 0, 0)
    if hasher_spec.hasher == "stronghash":
        mask = (1 << 64) - 1
        return ("strong", int(hasher_spec.key[0]) & mask, int(hasher_spec.key[1]) & mask)
    raise ValueError("%s is not a supported hasher (fasthash, legacy or stronghash)"
                     % hasher_spec.hasher)


def _bucket(key, num_buckets, hash_key):
    """The out-of-vocabulary bucket of `key` (bytes, or an integer hashed as its digits, as
    TF's as_string), with TF's hash: TF's bucket."""
    from shardflow import _shardflow
    data = key if isinstance(key, bytes) else str(int(key)).encode()
    return _shardflow.string_hash64(data, *hash_key) % num_buckets


def _text(value):
    """A key or value as an error message shows it."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value)


def _np_dtype(dtype):
    return object if dtype == dtypes.string else dtype.as_numpy_dtype


def _check_key_dtype(dtype, what):
    if dtype != dtypes.string and not dtype.is_integer and not dtype.is_floating:
        raise TypeError("%s: keys must be strings or numbers, not %s" % (what, dtype.name))


_MISSING = object()


class _Contents:
    """A table's entries, loaded by its initializer: a dict for string keys, sorted arrays (found
    by binary search) for numeric ones. Never changed once built (a new load makes another)."""

    def __init__(self, keys, values, key_dtype, value_dtype):
        keys = np.asarray(keys, dtype=_np_dtype(key_dtype)).reshape(-1)
        values = np.asarray(values, dtype=_np_dtype(value_dtype)).reshape(-1)
        if keys.size != values.size:
            raise errors.InvalidArgumentError(
                "keys and values must have the same number of elements, got %d keys and %d "
                "values" % (keys.size, values.size))
        self._value_np = _np_dtype(value_dtype)
        self._dict = None
        if key_dtype == dtypes.string:
            table = {}
            for k, v in zip(keys.tolist(), values.tolist()):
                old = table.setdefault(k, v)
                if old is not v and old != v:
                    raise _duplicate(k, old, v)
            self._dict = table
            self.size = len(table)
            return
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
        if keys.size > 1:
            same = keys[1:] == keys[:-1]
            if same.any():
                at = np.nonzero(same)[0]
                differ = at[np.asarray(values[at + 1] != values[at], dtype=bool)]
                if differ.size:
                    i = differ[0]
                    raise _duplicate(keys[i], values[i], values[i + 1])
                keep = np.concatenate([[True], ~same])
                keys, values = keys[keep], values[keep]
        self._keys, self._values = keys, values
        self.size = int(keys.size)

    def find(self, keys, default):
        """(values, found) for the flat array `keys`: `default` where a key is missing."""
        if self._dict is not None:
            got = [self._dict.get(k, _MISSING) for k in keys.tolist()]
            found = np.fromiter((g is not _MISSING for g in got), dtype=bool, count=len(got))
            out = np.empty(len(got), dtype=self._value_np)
            out[:] = [default if g is _MISSING else g for g in got]
            return out, found
        if self._keys.size == 0:
            return (np.full(keys.shape, default, dtype=self._value_np),
                    np.zeros(keys.shape, dtype=bool))
        pos = np.minimum(np.searchsorted(self._keys, keys), self._keys.size - 1)
        found = self._keys[pos] == keys
        out = self._values[pos].copy()
        out[~found] = default
        return out, found


def _duplicate(key, old, new):
    return errors.FailedPreconditionError(
        "HashTable has different value for same key. Key %s has %s and trying to add value %s"
        % (_text(key), _text(old), _text(new)))


def _not_initialized(table):
    return errors.FailedPreconditionError(
        "Table not initialized. (%s: run its initializer first, e.g. "
        "sess.run(sf.tables_initializer()))" % table.name)


# ---- initializers -------------------------------------------------------------------------

class TableInitializerBase:
    """What fills a table when its initializer op runs: `key_dtype`, `value_dtype`, and
    initialize(table), which builds that op."""

    def __init__(self, key_dtype, value_dtype, graph):
        self._key_dtype = dtypes.as_dtype(key_dtype)
        self._value_dtype = dtypes.as_dtype(value_dtype)
        self._graph = graph

    key_dtype = property(lambda self: self._key_dtype, doc="The keys' dtype.")
    value_dtype = property(lambda self: self._value_dtype, doc="The values' dtype.")

    def initialize(self, table):
        """The op that loads this initializer's keys and values into `table` (a py_func with
        no outputs, reading its tensors or file each time it runs)."""
        inputs = self._inputs()
        key_dtype, value_dtype = self._key_dtype, self._value_dtype
        # A table built in a map function is loaded by its first lookup (Note [Table state]).
        once = isinstance(self._graph, _FuncGraph)

        def run(*arrays):
            if once and table._contents is not None:
                return []
            keys, values = self._load(*arrays)
            table._contents = _Contents(keys, values, key_dtype, value_dtype)
            return []
        return py_func(run, inputs, [], name="table_init")


class KeyValueTensorInitializer(TableInitializerBase):
    """Fills a table from a tensor of keys and a tensor of values of the same size (TF1's
    tf.lookup.KeyValueTensorInitializer); `key_dtype` / `value_dtype` convert Python values.

    Example::

        init = sf.lookup.KeyValueTensorInitializer(["a", "b"], sf.constant([1, 2], sf.int64))
        table = sf.lookup.StaticHashTable(init, default_value=-1)
    """

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        keys = convert_to_tensor(keys, dtype=key_dtype)
        values = convert_to_tensor(values, dtype=value_dtype)
        if keys.graph is not values.graph:
            raise ValueError("KeyValueTensorInitializer: keys and values are in different graphs")
        _check_key_dtype(keys.dtype, "KeyValueTensorInitializer")
        n_keys, n_values = keys.shape.num_elements(), values.shape.num_elements()
        if n_keys is not None and n_values is not None and n_keys != n_values:
            raise ValueError("KeyValueTensorInitializer: keys and values must have the same "
                             "number of elements, got %d keys and %d values" % (n_keys, n_values))
        super().__init__(keys.dtype, values.dtype, keys.graph)
        self._keys, self._values = keys, values
        self._name = name or "key_value_init"

    def _inputs(self):
        return [self._keys, self._values]

    def _load(self, keys, values):
        return keys, values


class TextFileInitializer(TableInitializerBase):
    """Fills a table from a text file, one entry per line (TF1's tf.lookup.TextFileInitializer).

    key_index / value_index: TextFileIndex.WHOLE_LINE (-2), TextFileIndex.LINE_NUMBER (-1,
        int64, from 0) or a field index >= 0 of the line split at `delimiter`; fields are parsed
        as key_dtype / value_dtype (a field that is not a number fails with InvalidArgumentError).
    vocab_size: the number of lines to read (the file must have that many), or None: all.
    filename: a string or a scalar string tensor, read when the initializer runs; lines end at
        "\\n" ("\\r\\n" too), a last newline does not start an empty line.

    Example (a vocabulary file "word<TAB>count" per line, words to line numbers)::

        init = sf.lookup.TextFileInitializer("vocab.tsv", sf.string, 0,
                                             sf.int64, sf.lookup.TextFileIndex.LINE_NUMBER)
    """

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index, vocab_size=None,
                 delimiter="\t", name=None):
        if isinstance(filename, str) and not filename:
            raise ValueError("Filename required for %s." % (name or "TextFileInitializer"))
        filename = convert_to_tensor(filename, dtype=dtypes.string)
        key_dtype, value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        if key_index < -2:
            raise ValueError("Invalid key index %s." % key_index)
        if key_index == TextFileIndex.LINE_NUMBER and key_dtype != dtypes.int64:
            raise ValueError("Signature mismatch. Keys must be dtype %s, got %s."
                             % (dtypes.int64.name, key_dtype.name))
        if (key_index == TextFileIndex.WHOLE_LINE and not key_dtype.is_integer
                and key_dtype != dtypes.string):
            raise ValueError("Signature mismatch. Keys must be integer or string, got %s."
                             % key_dtype.name)
        if value_index < -2:
            raise ValueError("Invalid value index %s." % value_index)
        if value_index == TextFileIndex.LINE_NUMBER and value_dtype != dtypes.int64:
            raise ValueError("Signature mismatch. Values must be dtype %s, got %s."
                             % (dtypes.int64.name, value_dtype.name))
        if value_index == TextFileIndex.WHOLE_LINE and value_dtype != dtypes.string:
            raise ValueError("Signature mismatch. Values must be dtype %s, got %s."
                             % (dtypes.string.name, value_dtype.name))
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError("Invalid vocab_size %s." % vocab_size)
        if not delimiter:
            raise ValueError("TextFileInitializer: the delimiter must not be empty")
        _check_key_dtype(key_dtype, "TextFileInitializer")
        super().__init__(key_dtype, value_dtype, filename.graph)
        self._filename = filename
        self._key_index, self._value_index = int(key_index), int(value_index)
        self._vocab_size = None if vocab_size is None else int(vocab_size)
        self._delimiter = delimiter if isinstance(delimiter, bytes) else delimiter.encode()
        self._name = name or "text_file_init"

    def _inputs(self):
        return [self._filename]

    def _load(self, filename):
        value = np.asarray(filename, dtype=object)
        if value.shape != ():
            raise errors.InvalidArgumentError("TextFileInitializer: the filename must be a "
                                              "scalar, got shape %s" % list(value.shape))
        name = value.item()
        path = (name if isinstance(name, bytes) else str(name).encode()).decode(
            "utf-8", "surrogateescape")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise errors.NotFoundError("TextFileInitializer: %s: no such file" % path) from None
        except PermissionError:
            raise errors.PermissionDeniedError("TextFileInitializer: %s: permission denied"
                                               % path) from None
        except OSError as e:
            raise errors.UnknownError("TextFileInitializer: %s: %s"
                                      % (path, e.strerror or e)) from None
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if self._vocab_size is not None:
            if len(lines) < self._vocab_size:
                raise errors.InvalidArgumentError(
                    "Invalid vocab_size in %s: expected %d but got %d"
                    % (path, self._vocab_size, len(lines)))
            lines = lines[:self._vocab_size]
        lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
        keys = self._column(lines, self._key_index, self._key_dtype, path)
        values = self._column(lines, self._value_index, self._value_dtype, path)
        return keys, values

    def _column(self, lines, index, dtype, path):
        if index == TextFileIndex.LINE_NUMBER:
            return np.arange(len(lines), dtype=np.int64)
        out = np.empty(len(lines), dtype=_np_dtype(dtype))
        for i, line in enumerate(lines):
            if index == TextFileIndex.WHOLE_LINE:
                field = line
            else:
                fields = line.split(self._delimiter)
                if index >= len(fields):
                    raise errors.InvalidArgumentError(
                        "Invalid number of columns in %s line %d (%s): expected at least %d, "
                        "got %d" % (path, i, _text(line), index + 1, len(fields)))
                field = fields[index]
            if dtype == dtypes.string:
                out[i] = field
                continue
            try:
                out[i] = int(field) if dtype.is_integer else float(field)
            except (ValueError, OverflowError):
                raise errors.InvalidArgumentError(
                    "%s line %d: field %r is not a valid %s" % (path, i, _text(field),
                                                                 dtype.name)) from None
        return out


class TextFileIdTableInitializer(TextFileInitializer):
    """A TextFileInitializer for a string (or integer) -> int64 id table: keys the whole line,
    values the line number by default (tf.contrib.lookup's)."""

    def __init__(self, filename, key_column_index=TextFileIndex.WHOLE_LINE,
                 value_column_index=TextFileIndex.LINE_NUMBER, vocab_size=None, delimiter="\t",
                 name="text_file_id_table_init", key_dtype=dtypes.string):
        super().__init__(filename, key_dtype, key_column_index, dtypes.int64,
                         value_column_index, vocab_size=vocab_size, delimiter=delimiter,
                         name=name)


class TextFileStringTableInitializer(TextFileInitializer):
    """A TextFileInitializer for an int64 id -> string table: keys the line number, values the
    whole line by default (tf.contrib.lookup's)."""

    def __init__(self, filename, key_column_index=TextFileIndex.LINE_NUMBER,
                 value_column_index=TextFileIndex.WHOLE_LINE, vocab_size=None, delimiter="\t",
                 name="text_file_string_table_init"):
        super().__init__(filename, dtypes.int64, key_column_index, dtypes.string,
                         value_column_index, vocab_size=vocab_size, delimiter=delimiter,
                         name=name)


class _IndexInitializer(TableInitializerBase):
    """The entries of a 1-D `mapping` and their positions: position -> entry (`reverse`) or
    entry -> position (index_table_from_tensor and index_to_string_table_from_tensor)."""

    def __init__(self, mapping, key_dtype, value_dtype, reverse):
        super().__init__(key_dtype, value_dtype, mapping.graph)
        self._mapping, self._reverse = mapping, reverse

    def _inputs(self):
        return [self._mapping]

    def _load(self, mapping):
        mapping = np.asarray(mapping).reshape(-1)
        positions = np.arange(mapping.size, dtype=np.int64)
        return (positions, mapping) if self._reverse else (mapping, positions)


# ---- tables -------------------------------------------------------------------------------

class LookupInterface:
    """What every table has: key_dtype, value_dtype, name, lookup(keys) and size()."""

    def __init__(self, key_dtype, value_dtype, name):
        self._key_dtype = dtypes.as_dtype(key_dtype)
        self._value_dtype = dtypes.as_dtype(value_dtype)
        self._name = name

    key_dtype = property(lambda self: self._key_dtype, doc="The keys' dtype.")
    value_dtype = property(lambda self: self._value_dtype, doc="The values' dtype.")
    name = property(lambda self: self._name, doc="The table's name (its name scope).")

    def __call__(self, keys, name=None):
        return self.lookup(keys, name=name)

    def _keys(self, keys):
        """`keys` as a tensor of a dtype this table takes (TypeError for another)."""
        if not isinstance(keys, Tensor):
            keys = convert_to_tensor(keys, dtype=self._key_dtype)
        ok = (keys.dtype == self._key_dtype
              or (self._key_dtype.is_integer and keys.dtype.is_integer))
        if not ok:
            raise TypeError("Signature mismatch. Keys must be dtype %s, got %s."
                            % (self._key_dtype.name, keys.dtype.name))
        return keys

    def _sparse_lookup(self, keys, name):
        """lookup() of a SparseTensor (or SparseTensorValue): its values looked up."""
        from shardflow.sparse_tensor import SparseTensor, convert_to_sparse
        sp = convert_to_sparse(keys, "keys")
        dims = None if sp.shape.ndims is None else sp.shape.as_list()
        return SparseTensor(sp.indices, self.lookup(sp.values, name=name), sp.dense_shape,
                            _static_dims=dims)

    def _op(self, fn, inputs, dtype, name, shape):
        """A py_func computing `fn`; in a map function, after the initializer of a table built
        there (Note [Table state])."""
        graph = inputs[0].graph if inputs else get_default_graph()
        deps = [op for op in self._init_ops() if op.graph is graph]
        with graph.as_default(), graph.control_dependencies(deps):
            out = py_func(fn, inputs, dtype, name=name)
        if isinstance(out, list):   # several outputs: the caller shapes them
            return out
        out.set_shape(shape)
        return out

    def _init_ops(self):
        return []


def _is_sparse(keys):
    from shardflow.sparse_tensor import SparseTensor, SparseTensorValue
    return isinstance(keys, (SparseTensor, SparseTensorValue))


class InitializableLookupTableBase(LookupInterface):
    """A table filled once by an initializer (TF1's base of HashTable)."""

    def __init__(self, default_value, initializer, name):
        if not isinstance(initializer, TableInitializerBase):
            raise TypeError("the initializer of a table is a KeyValueTensorInitializer or a "
                            "TextFileInitializer, not %r" % (initializer,))
        super().__init__(initializer.key_dtype, initializer.value_dtype, None)
        self._contents = None
        graph = initializer._graph
        with graph.as_default(), graph.name_scope(name) as scope:
            self._name = scope.rstrip("/").split("/")[-1]
            self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
            if self._default_value.shape.ndims not in (None, 0):
                raise ValueError("%s: default_value must be a scalar, got shape %s"
                                 % (self._name, self._default_value.shape.as_list()))
            self._initializer = initializer.initialize(self)
        graph.add_to_collection(GraphKeys.TABLE_INITIALIZERS, self._initializer)

    default_value = property(lambda self: self._default_value,
                             doc="The value of missing keys (a scalar tensor).")
    initializer = property(lambda self: self._initializer,
                           doc="The op that loads the table (in TABLE_INITIALIZERS).")
    init = property(lambda self: self._initializer, doc="TF1 contrib's name of `initializer`.")

    def _init_ops(self):
        return [self._initializer] if isinstance(self._initializer.graph, _FuncGraph) else []

    def size(self, name=None):
        """The number of entries, an int64 scalar tensor (0 before the initializer ran)."""
        def run():
            contents = self._contents
            return np.int64(0 if contents is None else contents.size)
        return self._op(run, [], dtypes.int64, name or "%s_Size" % self._name, [])

    def lookup(self, keys, name=None):
        """The values of `keys` (a tensor of any shape, or a SparseTensor), `default_value` for
        a missing key; fails the step with FailedPreconditionError before initialization."""
        if _is_sparse(keys):
            return self._sparse_lookup(keys, name)
        keys = self._keys(keys)
        default = constant_value(self._default_value)
        inputs = [keys] if default is not None else [keys, self._default_value]
        default = None if default is None else np.asarray(default).item()

        def run(k, *dflt):
            contents = self._contents
            if contents is None:
                raise _not_initialized(self)
            k = np.asarray(k)
            d = default if not dflt else np.asarray(dflt[0]).item()
            out, _ = contents.find(k.reshape(-1), d)
            return out.reshape(k.shape)
        return self._op(run, inputs, self._value_dtype, name or "%s_Lookup" % self._name,
                        keys.shape)


class StaticHashTable(InitializableLookupTableBase):
    """A table of fixed contents loaded by `initializer` (TF 1.15's tf.lookup.StaticHashTable;
    TF1 contrib's HashTable): lookup(keys) gives each key's value, `default_value` for a key that
    is not in it. The initializer runs with sf.tables_initializer() (or ``table.initializer``).

    Example::

        table = sf.lookup.StaticHashTable(
            sf.lookup.KeyValueTensorInitializer(["a", "b"], [1, 2], value_dtype=sf.int64), -1)
        ids = table.lookup(sf.constant([["a", "x"], ["b", "a"]]))   # [[1, -1], [2, 1]]
    """

    def __init__(self, initializer, default_value, name=None):
        super().__init__(default_value, initializer, name or "hash_table")

    def export(self, name=None):
        """(keys, values): the table's entries as two vectors (TF1's HashTable.export); fails
        the step with FailedPreconditionError before initialization."""
        key_np, value_np = _np_dtype(self._key_dtype), _np_dtype(self._value_dtype)

        def run():
            contents = self._contents
            if contents is None:
                raise _not_initialized(self)
            if contents._dict is not None:
                items = list(contents._dict.items())
                keys = np.empty(len(items), dtype=key_np)
                keys[:] = [k for k, _ in items]
                values = np.empty(len(items), dtype=value_np)
                values[:] = [v for _, v in items]
                return keys, values
            return contents._keys.astype(key_np), contents._values.astype(value_np)
        keys, values = self._op(run, [], [self._key_dtype, self._value_dtype],
                                name or "%s_Export" % self._name, None)
        keys.set_shape([None])
        values.set_shape([None])
        return keys, values


class HashTable(StaticHashTable):
    """TF1 contrib's tf.contrib.lookup.HashTable: StaticHashTable (`shared_name` is accepted;
    tables are never shared between graphs here)."""

    def __init__(self, initializer, default_value, shared_name=None, name=None):
        super().__init__(initializer, default_value, name=name)


class IdTableWithHashBuckets(LookupInterface):
    """Ids of `table` (a string or integer -> int64 table, or None), and for a key not in it
    ``table.size() + H(key) % num_oov_buckets`` (tf.contrib.lookup's; H in the module docstring,
    not TF's hash). With num_oov_buckets 0, a missing key gets the table's default value."""

    def __init__(self, table, num_oov_buckets, hasher_spec=FastHashSpec, name=None,
                 key_dtype=None):
        if table is not None:
            if not isinstance(table, InitializableLookupTableBase):
                raise TypeError("IdTableWithHashBuckets takes a StaticHashTable (or None), not "
                                "%r" % (table,))
            if table.value_dtype != dtypes.int64:
                raise TypeError("Invalid value dtype, expected %s but got %s."
                                % (dtypes.int64.name, table.value_dtype.name))
            table_key = table.key_dtype
            if key_dtype is not None and not (dtypes.as_dtype(key_dtype) == table_key or (
                    table_key.is_integer and dtypes.as_dtype(key_dtype).is_integer)):
                raise TypeError("Invalid key dtype, expected %s but got %s."
                                % (table_key.name, dtypes.as_dtype(key_dtype).name))
            key_dtype = table_key
        elif key_dtype is None:
            key_dtype = dtypes.string
        key_dtype = dtypes.as_dtype(key_dtype)
        if key_dtype != dtypes.string and not key_dtype.is_integer:
            raise TypeError("Invalid key dtype, expected string or integer, got %s."
                            % key_dtype.name)
        if num_oov_buckets is None or num_oov_buckets < 0:
            raise ValueError("num_oov_buckets must be >= 0, got %s." % num_oov_buckets)
        if table is None and num_oov_buckets == 0:
            raise ValueError("IdTableWithHashBuckets: with no table, num_oov_buckets must be > 0")
        self._hash_key = _hash_key(hasher_spec)
        graph = table.initializer.graph if table is not None else get_default_graph()
        with graph.as_default(), graph.name_scope(name or "hash_bucket") as scope:
            super().__init__(key_dtype, dtypes.int64, scope.rstrip("/").split("/")[-1])
            self._no_init = None if table is not None else _no_op("init")
        self._table = table
        self._num_oov_buckets = int(num_oov_buckets)

    @property
    def initializer(self):
        """The op that loads the vocabulary table (a no-op when there is none)."""
        return self._table.initializer if self._table is not None else self._no_init

    init = initializer

    def _init_ops(self):
        return self._table._init_ops() if self._table is not None else []

    def size(self, name=None):
        """The table's size plus num_oov_buckets, an int64 scalar tensor."""
        def run():
            contents = None if self._table is None else self._table._contents
            return np.int64((0 if contents is None else contents.size) + self._num_oov_buckets)
        return self._op(run, [], dtypes.int64, name or "%s_Size" % self._name, [])

    def lookup(self, keys, name=None):
        """The id of each key (a tensor of any shape, or a SparseTensor): its table id, else
        its bucket. Fails the step with FailedPreconditionError before initialization."""
        if _is_sparse(keys):
            return self._sparse_lookup(keys, name)
        keys = self._keys(keys)
        table, buckets, hash_key = self._table, self._num_oov_buckets, self._hash_key
        default = None
        inputs = [keys]
        if table is not None and not buckets:
            default = constant_value(table.default_value)
            if default is None:
                inputs.append(table.default_value)
            else:
                default = np.asarray(default).item()

        def run(k, *dflt):
            k = np.asarray(k)
            flat = k.reshape(-1)
            if table is None:
                out, found, size = np.zeros(flat.size, np.int64), np.zeros(flat.size, bool), 0
            else:
                contents = table._contents
                if contents is None:
                    raise _not_initialized(table)
                d = default if not dflt else np.asarray(dflt[0]).item()
                out, found = contents.find(flat, -1 if d is None else d)
                size = contents.size
            if buckets:
                missing = np.nonzero(~found)[0]
                values = flat[missing].tolist()
                out[missing] = [size + _bucket(v, buckets, hash_key) for v in values]
            return out.reshape(k.shape)
        return self._op(run, inputs, dtypes.int64, name or "%s_Lookup" % self._name, keys.shape)


def _no_op(name):
    from shardflow.ops import no_op
    return no_op(name=name)


class StaticVocabularyTable(IdTableWithHashBuckets):
    """A string (or int64) -> int64 id table loaded by `initializer`, with `num_oov_buckets`
    (> 0) ids for the keys not in it: ``vocab_size + H(key) % num_oov_buckets`` (TF 1.15's
    tf.lookup.StaticVocabularyTable; H in the module docstring: the bucket numbers differ from
    TensorFlow's, which hashes with Fingerprint64). `lookup_key_dtype`: an integer dtype the
    lookups use for an int64 table (any integer dtype is taken anyway).

    Example::

        init = sf.lookup.TextFileInitializer("vocab.txt", sf.string, -2, sf.int64, -1)
        table = sf.lookup.StaticVocabularyTable(init, num_oov_buckets=10)
        ids = table.lookup(words)    # in [0, vocab_size + 10)
    """

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None):
        if num_oov_buckets is None or num_oov_buckets <= 0:
            raise ValueError("oov_buckets must be > 0.")
        if not isinstance(initializer, TableInitializerBase):
            raise TypeError("StaticVocabularyTable takes a KeyValueTensorInitializer or a "
                            "TextFileInitializer, not %r" % (initializer,))
        if initializer.value_dtype != dtypes.int64:
            raise TypeError("Invalid value dtype, expected %s but got %s."
                            % (dtypes.int64.name, initializer.value_dtype.name))
        key = initializer.key_dtype
        if key != dtypes.string and not key.is_integer:
            raise TypeError("Invalid key dtype, expected string or integer, got %s." % key.name)
        table = StaticHashTable(initializer, -1, name=name)
        super().__init__(table, num_oov_buckets, FastHashSpec, name=table.name + "_buckets",
                         key_dtype=lookup_key_dtype)
        self._name = table.name


# ---- mutable tables -------------------------------------------------------------------------

def _py_key(key):
    """A NumPy key as the Python value a mutable table's dict is keyed by."""
    return key.item() if isinstance(key, np.generic) else key


def _with_width(keys, width):
    """The static shape (a list, None when unknown) of values for `keys`: keys' + `width`."""
    return None if keys.shape.ndims is None else keys.shape.as_list() + list(width)


class MutableHashTable(LookupInterface):
    """A table changed by ops, not filled by an initializer (TF1's
    tf.contrib.lookup.MutableHashTable): insert(keys, values) and remove(keys) are ops that
    change it when they run, lookup(keys) gives each key's value (`default_value` for a key
    not in it), export() all its (keys, values), size() their number. `default_value` fixes
    the values' shape: a scalar, or a vector for tables of vectors (lookup of keys of shape S
    gives S + value_shape). It starts empty; there is nothing for sf.tables_initializer().

    Example::

        table = sf.contrib.lookup.MutableHashTable(sf.string, sf.int64, default_value=-1)
        add = table.insert(sf.constant(["a", "b"]), sf.constant([1, 2], sf.int64))
        ids = table.lookup(sf.constant(["b", "x"]))      # after add ran: [2, -1]

    With checkpoint=True (the default), tf.train.Saver saves the entries as TF1 does, under
    "<table name>-keys" and "<table name>-values", and restore puts them back.

    Differences from TF1 (Note [Table state]): the entries belong to the table object, so every
    session of the graph sees them and a new session does not start with an empty table.
    """

    def __init__(self, key_dtype, value_dtype, default_value, shared_name=None,
                 name="MutableHashTable", checkpoint=True):
        super().__init__(key_dtype, value_dtype, None)
        _check_key_dtype(self._key_dtype, type(self).__name__)
        graph = get_default_graph()
        with graph.name_scope(name) as scope:
            self._name = scope.rstrip("/").split("/")[-1]
            self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
        # The name of TF1's table op ("outer/MutableHashTable"): its checkpoint entries' prefix.
        self._checkpoint_name = scope.rstrip("/")
        value_shape = self._default_value.shape
        if value_shape.ndims is None or value_shape.ndims > 1 or \
                None in value_shape.as_list():
            raise ValueError("%s: default_value must be a scalar or a vector of known size, got "
                             "shape %s" % (self._name, value_shape))
        self._value_shape = tuple(value_shape.as_list())
        self._entries = {}
        self._graph = graph
        if checkpoint:   # saved by a Saver of every global variable (TF1's SAVEABLE_OBJECTS)
            graph.__dict__.setdefault("_checkpointed_tables", []).append(self)

    default_value = property(lambda self: self._default_value,
                             doc="The value of missing keys (a scalar or vector tensor).")

    def _check_keys(self, flat):
        """Hook for the keys a lookup, insert or remove gets (flat NumPy array)."""

    def _values(self, values, keys, what):
        """`values` as a tensor of this table's dtype whose shape must be keys' + value_shape."""
        values = convert_to_tensor(values, dtype=self._value_dtype)
        if values.dtype != self._value_dtype:
            raise TypeError("Signature mismatch. Values must be dtype %s, got %s."
                            % (self._value_dtype.name, values.dtype.name))
        want = _with_width(keys, self._value_shape)
        got = None if values.shape.ndims is None else values.shape.as_list()
        if want is not None and got is not None and (len(got) != len(want) or any(
                a is not None and b is not None and a != b for a, b in zip(got, want))):
            raise ValueError("%s.%s: values of shape %s do not fit keys of shape %s and values "
                             "of shape %s" % (self._name, what, values.shape, keys.shape,
                                              list(self._value_shape)))
        return values

    def insert(self, keys, values, name=None):
        """The op that sets the value of each of `keys` (a key already there gets the new
        value); `values` has keys' shape + the value shape."""
        keys = self._keys(keys)
        values = self._values(values, keys, "insert")
        width = self._value_shape

        def run(k, v):
            k = np.asarray(k).reshape(-1)
            v = np.asarray(v).reshape((k.size,) + width)
            if v.shape[0] != k.size:
                raise errors.InvalidArgumentError(
                    "%s: %d keys but values for %d" % (self._name, k.size, v.shape[0]))
            self._check_keys(k)
            for key, value in zip(k.tolist(), v):
                self._entries[_py_key(key)] = value.copy()
            return []
        with self._graph.as_default():
            return py_func(run, [keys, values], [], name=name or "%s_insert" % self._name)

    def remove(self, keys, name=None):
        """The op that removes `keys` from the table (keys not in it are ignored)."""
        keys = self._keys(keys)

        def run(k):
            k = np.asarray(k).reshape(-1)
            self._check_keys(k)
            for key in k.tolist():
                self._entries.pop(_py_key(key), None)
            return []
        with self._graph.as_default():
            return py_func(run, [keys], [], name=name or "%s_remove" % self._name)

    def lookup(self, keys, name=None):
        """The values of `keys` (a tensor of any shape S, or a SparseTensor): S + the value
        shape, `default_value` for a key not in the table."""
        if _is_sparse(keys):
            if self._value_shape:
                raise ValueError("%s: a SparseTensor of keys needs scalar values" % self._name)
            return self._sparse_lookup(keys, name)
        keys = self._keys(keys)
        width, np_dtype = self._value_shape, _np_dtype(self._value_dtype)

        def run(k, default):
            k = np.asarray(k)
            flat = k.reshape(-1)
            self._check_keys(flat)
            out = np.empty((flat.size,) + width, dtype=np_dtype)
            default = np.asarray(default, dtype=np_dtype)
            for i, key in enumerate(flat.tolist()):
                out[i] = self._entries.get(_py_key(key), default)
            return out.reshape(k.shape + width)
        shape = _with_width(keys, width)
        with self._graph.as_default():
            out = py_func(run, [keys, self._default_value], self._value_dtype,
                          name=name or "%s_lookup_table_find" % self._name)
        out.set_shape(shape)
        return out

    def export(self, name=None):
        """(keys, values): every entry, keys [n] and values [n] + the value shape."""
        width = self._value_shape
        with self._graph.as_default():
            keys, values = py_func(self._entry_arrays, [], [self._key_dtype, self._value_dtype],
                                   name=name or "%s_lookup_table_export_values" % self._name)
        keys.set_shape([None])
        values.set_shape([None] + list(width))
        return keys, values

    def _entry_arrays(self):
        """(keys [n], values [n] + value shape): the entries as NumPy arrays."""
        items = list(self._entries.items())
        keys = np.empty(len(items), dtype=_np_dtype(self._key_dtype))
        keys[:] = [k for k, _ in items]
        values = np.empty((len(items),) + self._value_shape, dtype=_np_dtype(self._value_dtype))
        for i, (_, v) in enumerate(items):
            values[i] = v
        return keys, values

    def _checkpoint_tensors(self):
        """[(checkpoint name, ndarray)]: what a Saver writes of this table, as TF1's
        MutableHashTable saveable ("<name>-keys", "<name>-values")."""
        keys, values = self._entry_arrays()
        return [(self._checkpoint_name + "-keys", keys),
                (self._checkpoint_name + "-values", values)]

    def _restore_checkpoint_tensors(self, keys, values, save_path):
        """Replaces the entries by those a checkpoint holds (_checkpoint_tensors' arrays)."""
        keys = np.asarray(keys).reshape(-1)
        values = np.asarray(values)
        if values.shape != (keys.size,) + self._value_shape:
            raise errors.InvalidArgumentError(
                "table %s: %s holds %d keys and values of shape %s; the table's values have "
                "shape %s" % (self._checkpoint_name, save_path, keys.size, list(values.shape),
                              list(self._value_shape)))
        values = values.astype(_np_dtype(self._value_dtype), copy=False)
        self._check_keys(keys)
        self._entries = {_py_key(k): v.copy() for k, v in zip(keys.tolist(), values)}

    def size(self, name=None):
        """The number of entries, an int64 scalar tensor."""
        def run():
            return np.int64(len(self._entries))
        with self._graph.as_default():
            out = py_func(run, [], dtypes.int64, name=name or "%s_Size" % self._name)
        out.set_shape([])
        return out


class MutableDenseHashTable(MutableHashTable):
    """TF1's tf.contrib.lookup.MutableDenseHashTable (tf.lookup.experimental.DenseHashTable):
    a MutableHashTable whose keys may not be `empty_key` or `deleted_key` (TF's open
    addressing reserves them; using one fails the step with InvalidArgumentError, as TF1).
    initial_num_buckets is accepted and has no effect here."""

    def __init__(self, key_dtype, value_dtype, default_value, empty_key, deleted_key=None,
                 initial_num_buckets=None, shared_name=None, name="MutableDenseHashTable",
                 checkpoint=True):
        super().__init__(key_dtype, value_dtype, default_value, name=name,
                         checkpoint=checkpoint)
        reserved = []
        for what, key in (("empty_key", empty_key), ("deleted_key", deleted_key)):
            if key is None:
                continue
            value = constant_value(convert_to_tensor(key, dtype=self._key_dtype))
            if value is None:
                raise ValueError("%s: %s must be a constant" % (self._name, what))
            value = np.asarray(value).item()
            reserved.append((what, value.encode() if isinstance(value, str) else value))
        if len(reserved) == 2 and reserved[0][1] == reserved[1][1]:
            raise ValueError("%s: empty_key and deleted_key cannot be the same" % self._name)
        self._reserved = reserved

    def _check_keys(self, flat):
        for what, key in self._reserved:
            if np.any(flat == key):
                raise errors.InvalidArgumentError(
                    "Using the %s as a table key is not allowed (%s)"
                    % (what.replace("_", " "), self._name))


# ---- tf.contrib.lookup's functions ------------------------------------------------------

def _mapping_tensor(mapping, dtype, what):
    if mapping is None:
        raise ValueError("mapping must be specified.")
    keys = convert_to_tensor(mapping, dtype=None if isinstance(mapping, Tensor) else (
        dtype if dtype == dtypes.string else None))
    if keys.shape.ndims not in (None, 1):
        raise ValueError("%s: mapping must be a vector, got shape %s"
                         % (what, keys.shape.as_list()))
    return keys


def _check_oov(num_oov_buckets, vocab_size=None):
    if num_oov_buckets < 0:
        raise ValueError("num_oov_buckets must be greater or equal than 0, got %d."
                         % num_oov_buckets)
    if vocab_size is not None and vocab_size < 1:
        raise ValueError("vocab_size must be greater than 0, got %d." % vocab_size)


def index_table_from_tensor(mapping, num_oov_buckets=0, default_value=-1,
                            hasher_spec=FastHashSpec, dtype=dtypes.string, name=None):
    """A table of the ids of the entries of the 1-D `mapping` (their positions, int64), with
    `num_oov_buckets` ids after them for the other keys (hashed; see the module docstring), or
    `default_value` for them when there are none (TF1's tf.contrib.lookup's). `dtype`: the keys'
    dtype, sf.string or an integer dtype (integer keys become int64). Duplicate entries fail the
    initializer with FailedPreconditionError.

    Example::

        table = sf.contrib.lookup.index_table_from_tensor(["emerson", "lake", "palmer"])
        ids = table.lookup(sf.constant(["emerson", "lake", "tarkus"]))   # [0, 1, -1]
    """
    dtype = dtypes.as_dtype(dtype)
    if dtype != dtypes.string and not dtype.is_integer:
        raise TypeError("Only integer and string keys are supported.")
    _check_oov(num_oov_buckets)
    keys = _mapping_tensor(mapping, dtype, "index_table_from_tensor")
    if dtype.is_integer != keys.dtype.is_integer or (not dtype.is_integer
                                                     and keys.dtype != dtype):
        raise ValueError("Expected %s, got %s." % (dtype.name, keys.dtype.name))
    key_dtype = dtypes.int64 if dtype.is_integer else dtypes.string
    init = _IndexInitializer(keys, key_dtype, dtypes.int64, reverse=False)
    table = StaticHashTable(init, default_value, name=name)
    if num_oov_buckets:
        return IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec, key_dtype=dtype)
    return table


def index_table_from_file(vocabulary_file=None, num_oov_buckets=0, vocab_size=None,
                          default_value=-1, hasher_spec=FastHashSpec, key_dtype=dtypes.string,
                          name=None, key_column_index=TextFileIndex.WHOLE_LINE,
                          value_column_index=TextFileIndex.LINE_NUMBER, delimiter="\t"):
    """A table of the ids of the words of a vocabulary file (by default the whole line is the
    word and its line number, from 0, its id), with `num_oov_buckets` ids after them for other
    words, or `default_value` for them when there are none (TF1's tf.contrib.lookup's).
    `vocab_size`: read only that many lines. The file is read when the initializer runs; a
    missing one fails it with NotFoundError naming it.

    Example::

        table = sf.contrib.lookup.index_table_from_file("vocab.txt", num_oov_buckets=1)
        ids = table.lookup(sf.constant(["emerson", "lake", "tarkus"]))
    """
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    _check_oov(num_oov_buckets, vocab_size)
    key_dtype = dtypes.as_dtype(key_dtype)
    if key_dtype != dtypes.string and not key_dtype.is_integer:
        raise TypeError("Only integer and string keys are supported.")
    init = TextFileIdTableInitializer(
        vocabulary_file, key_column_index=key_column_index,
        value_column_index=value_column_index, vocab_size=vocab_size, delimiter=delimiter,
        key_dtype=dtypes.int64 if key_dtype.is_integer else dtypes.string)
    table = StaticHashTable(init, default_value, name=name)
    if num_oov_buckets:
        return IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec, key_dtype=key_dtype)
    return table


def index_to_string_table_from_tensor(mapping, default_value="UNK", name=None):
    """A table from int64 ids to the entries of the 1-D string `mapping` (id i: mapping[i]),
    `default_value` for an id out of range (TF1's tf.contrib.lookup's).

    Example::

        table = sf.contrib.lookup.index_to_string_table_from_tensor(["a", "b"])
        words = table.lookup(sf.constant([1, 0, 5], sf.int64))   # [b"b", b"a", b"UNK"]
    """
    values = _mapping_tensor(mapping, dtypes.string, "index_to_string_table_from_tensor")
    init = _IndexInitializer(values, dtypes.int64, values.dtype, reverse=True)
    return StaticHashTable(init, default_value, name=name)


def index_to_string_table_from_file(vocabulary_file, vocab_size=None, default_value="UNK",
                                    name=None, key_column_index=TextFileIndex.LINE_NUMBER,
                                    value_column_index=TextFileIndex.WHOLE_LINE,
                                    delimiter="\t"):
    """A table from int64 ids (line numbers, from 0) to the lines of a vocabulary file,
    `default_value` for an id out of range (TF1's tf.contrib.lookup's)."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    _check_oov(0, vocab_size)
    init = TextFileStringTableInitializer(
        vocabulary_file, key_column_index=key_column_index,
        value_column_index=value_column_index, vocab_size=vocab_size, delimiter=delimiter)
    return StaticHashTable(init, default_value, name=name)


def string_to_index(tensor, mapping, default_value=-1, name=None):
    """The positions of the strings of `tensor` in `mapping` (`default_value` when absent):
    index_table_from_tensor(mapping).lookup(tensor) (TF1's deprecated contrib function; the
    table's initializer is in TABLE_INITIALIZERS)."""
    table = index_table_from_tensor(mapping, default_value=default_value, name=name)
    return table.lookup(tensor)


def index_to_string(tensor, mapping, default_value="UNK", name=None):
    """The entries of `mapping` at the int64 ids of `tensor` (`default_value` out of range):
    index_to_string_table_from_tensor(mapping).lookup(tensor) (TF1's deprecated contrib
    function)."""
    table = index_to_string_table_from_tensor(mapping, default_value=default_value, name=name)
    return table.lookup(tensor)


def string_to_index_table_from_tensor(mapping, num_oov_buckets=0, default_value=-1,
                                      hasher_spec=FastHashSpec, name=None):
    """TF1's deprecated spelling of index_table_from_tensor (string keys)."""
    return index_table_from_tensor(mapping, num_oov_buckets, default_value, hasher_spec,
                                   name=name)


def string_to_index_table_from_file(vocabulary_file=None, num_oov_buckets=0, vocab_size=None,
                                    default_value=-1, hasher_spec=FastHashSpec, name=None):
    """TF1's deprecated spelling of index_table_from_file (string keys)."""
    return index_table_from_file(vocabulary_file, num_oov_buckets, vocab_size, default_value,
                                 hasher_spec, name=name)


# ---- the namespaces -----------------------------------------------------------------------

def _namespace(name, doc, names, missing):
    module = types.ModuleType(name, doc)
    module.__dict__.update({n: globals()[n] for n in names})
    module.__all__ = sorted(names)

    def __getattr__(attr):  # noqa: N807 (a module's __getattr__)
        raise AttributeError("shardflow has no %s.%s: %s" % (name.replace("shardflow", "tf"),
                                                              attr, missing))
    module.__getattr__ = __getattr__
    sys.modules[name] = module
    return module


DenseHashTable = MutableDenseHashTable   # tf.lookup.experimental's name

experimental = _namespace(
    "shardflow.lookup.experimental", "TF 1.15's tf.lookup.experimental.", ["DenseHashTable"],
    "it has DenseHashTable")

lookup = _namespace(
    "shardflow.lookup", "TF 1.15's tf.lookup (shardflow/lookup_ops.py).",
    ["KeyValueTensorInitializer", "StaticHashTable", "StaticVocabularyTable", "TextFileIndex",
     "TextFileInitializer", "experimental"],
    "it has StaticHashTable, StaticVocabularyTable, KeyValueTensorInitializer, "
    "TextFileInitializer, TextFileIndex and experimental.DenseHashTable (tf.contrib.lookup "
    "has the index_table_* functions and MutableHashTable)")

contrib_lookup = _namespace(
    "shardflow.contrib.lookup", "TF1's tf.contrib.lookup (shardflow/lookup_ops.py).",
    ["FastHashSpec", "HashTable", "HasherSpec", "IdTableWithHashBuckets",
     "InitializableLookupTableBase", "KeyValueTensorInitializer", "LookupInterface",
     "MutableDenseHashTable", "MutableHashTable",
     "StrongHashSpec", "TextFileIdTableInitializer", "TextFileIndex", "TextFileInitializer",
     "TextFileStringTableInitializer", "index_table_from_file", "index_table_from_tensor",
     "index_to_string", "index_to_string_table_from_file",
     "index_to_string_table_from_tensor", "string_to_index",
     "string_to_index_table_from_file", "string_to_index_table_from_tensor"],
    "shardflow carries its tables (HashTable, IdTableWithHashBuckets, MutableHashTable, "
    "MutableDenseHashTable, the index_table_* and index_to_string_table_* functions, "
    "string_to_index, index_to_string)")

__all__ = ["lookup"]
