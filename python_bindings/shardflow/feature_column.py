"""TF1's tf.feature_column: how the raw features of an input_fn become the model's tensors.

A column names a feature (a key of the features dict) and says what to make of it. Dense
columns (numeric, bucketized, indicator, embedding) become float32 [batch, n] tensors that
input_layer concatenates; categorical columns (identity, vocabulary list, bucketized) give ids
that indicator_column (one-hot), embedding_column (a trained table) or linear_model (one weight
per id) turn into numbers.

Example::

    age = sf.feature_column.numeric_column("age")
    kind = sf.feature_column.categorical_column_with_identity("kind", num_buckets=4)
    net = sf.feature_column.input_layer(
        features, [age, sf.feature_column.indicator_column(kind),
                   sf.feature_column.embedding_column(kind, dimension=2)])

Categorical features are dense int/string tensors of shape [batch] or [batch, n] (-1 or ""
missing) or rank-2 SparseTensors (as parse_example makes from make_parse_example_spec's
VarLenFeatures); columns turn both into dense int64 ids [batch, n], -1 where missing.

Hashing is TF's: out-of-vocabulary buckets of vocabulary columns, hashed columns and the
strings of crossed columns use FarmHash's Fingerprint64 (as sf.string_to_hash_bucket_fast) and
crossed_column combines with TF's FingerprintCat64, so every id is the one TF gives and a
TF-trained checkpoint's rows mean the same. Difference from TF1: an id outside
[0, num_buckets) counts as missing rather than being an error.
"""

import math

import numpy as np

from shardflow import dtypes, ops
from shardflow.array_ops import one_hot, where
from shardflow.framework import Tensor, convert_to_tensor, get_default_graph
from shardflow.variables import initializers


def _feature(features, key):
    if key not in features:
        raise ValueError("feature '%s' is not in the features dict (keys: %s)"
                         % (key, sorted(features)))
    x = features[key]
    if _is_sparse(x):
        raise ValueError("feature '%s' is a SparseTensor; only categorical columns take "
                         "sparse features (a numeric one needs a dense tensor)" % key)
    return x if isinstance(x, Tensor) else convert_to_tensor(np.asarray(x))


def _is_sparse(x):
    from shardflow.sparse_tensor import SparseTensor, SparseTensorValue
    return isinstance(x, (SparseTensor, SparseTensorValue))


def _sparse_rows(features, key, values_fn, default):
    """A SparseTensor feature (rank 2, e.g. from a VarLenFeature) as a dense [batch, n] tensor:
    `values_fn` maps its values (a vector), `default` fills the positions it has no entry at."""
    from shardflow.sparse_ops import sparse_tensor_to_dense
    from shardflow.sparse_tensor import SparseTensor, convert_to_sparse
    sp = convert_to_sparse(features[key], key)
    if sp.rank not in (None, 2):
        raise ValueError("sparse feature '%s' must have rank 2 ([batch, n]), not %d"
                         % (key, sp.rank))
    mapped = SparseTensor(sp.indices, values_fn(sp.values), sp.dense_shape,
                          _static_dims=sp.shape.as_list() if sp.rank else None)
    return sparse_tensor_to_dense(mapped, default_value=default, validate_indices=False)


def _raw_ids(features, key, to_ids):
    """int64 ids [batch, n] (-1: missing) of the categorical feature `key`: `to_ids` maps raw
    values to ids element-wise. A dense feature's missing entries ("" for strings, -1 for
    integers) and a SparseTensor's absent positions are -1: as TF1, which drops them before
    the lookup, so they reach neither a default_value nor an out-of-vocabulary bucket."""
    if key in features and _is_sparse(features[key]):
        return _sparse_rows(features, key, to_ids, -1)
    x = _as_rows(_feature(features, key))
    ids = to_ids(x)
    if x.dtype == dtypes.string or x.dtype.is_integer:
        ids = where(_is_missing(x, -1), _full(ids, -1), ids)
    return ids


def _is_missing(x, missing):
    """Bool mask of the entries of `x` equal to `missing` ("" for strings: by length)."""
    if x.dtype == dtypes.string:
        from shardflow.string_ops import strings
        return ops.equal(strings.length(x), 0)
    return ops.equal(x, ops.cast(ops.constant(np.array(missing)), x.dtype))


def _as_rows(x):
    """x as [batch, n]: a [batch] vector gets a second dimension of 1."""
    if x.shape.ndims == 1:
        return ops.expand_dims(x, 1)
    return x


def _full(ids, value):
    """An int64 tensor shaped as `ids`, every entry `value`."""
    return ops.add(ops.zeros_like(ids), ops.constant(np.array(value, np.int64)))


def _valid(ids, num_buckets):
    """ids outside [0, num_buckets) become -1 (missing)."""
    ok = ops.logical_and(ops.greater_equal(ids, ops.zeros_like(ids)),
                         ops.less(ids, _full(ids, num_buckets)))
    return where(ok, ids, _full(ids, -1))


class _Column:
    """Base of every column: `name` orders the columns of input_layer and names variables."""

    is_dense = False
    is_categorical = False

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self.name)


class NumericColumn(_Column):
    is_dense = True

    def __init__(self, key, shape, default_value, dtype, normalizer_fn):
        self.key = key
        self.shape = tuple(int(d) for d in shape)
        self.default_value = default_value
        self.dtype = dtype
        self.normalizer_fn = normalizer_fn

    @property
    def name(self):
        return self.key

    @property
    def dimension(self):
        return int(np.prod(self.shape))

    def _values(self, features):
        """The feature as float32 [batch, dimension], after normalizer_fn. batch is the
        feature's first dimension (as TF1's input_layer), so a feature of another shape than
        the column's fails the step rather than being regrouped into other examples."""
        from shardflow.array_ops import stack
        x = _feature(features, self.key)
        if x.dtype != dtypes.float32:
            x = ops.cast(x, dtypes.float32)
        if self.normalizer_fn is not None:
            x = self.normalizer_fn(x)
        batch = x.shape.as_list()[0] if x.shape.ndims else None
        if batch is not None and x.shape.is_fully_defined():
            if x.shape.num_elements() != batch * self.dimension:
                raise ValueError("numeric_column '%s' of shape %s: the feature's shape %s is "
                                 "not [batch] + %s" % (self.key, list(self.shape),
                                                       x.shape.as_list(), list(self.shape)))
            return ops.reshape(x, [batch, self.dimension])
        out = ops.reshape(x, stack([ops.shape(x)[0], self.dimension]))
        out.set_shape([batch, self.dimension])
        return out

    def _dense(self, features, state, trainable=True, weight_collections=None):
        return self._values(features)

    def _parse_example_spec(self):
        from shardflow.parsing_ops import FixedLenFeature
        return {self.key: FixedLenFeature(self.shape, self.dtype, self.default_value)}


def numeric_column(key, shape=(1,), default_value=None, dtype=dtypes.float32, normalizer_fn=None):
    """A number (or a fixed-shape block of numbers) per example, as float32."""
    if isinstance(shape, int):
        shape = (shape,)
    return NumericColumn(key, shape, default_value, dtypes.as_dtype(dtype), normalizer_fn)


class IdentityCategoricalColumn(_Column):
    is_categorical = True

    def __init__(self, key, num_buckets, default_value):
        self.key = key
        self.num_buckets = int(num_buckets)
        self.default_value = default_value

    @property
    def name(self):
        return self.key

    def _ids(self, features):
        return _raw_ids(features, self.key, self._ids_of)

    def _ids_of(self, ids):
        if not ids.dtype.is_integer:
            raise ValueError("Invalid input, not integer. key: %s dtype: %s"
                             % (self.key, ids.dtype.name))
        if ids.dtype != dtypes.int64:
            ids = ops.cast(ids, dtypes.int64)
        if self.default_value is not None:
            bad = ops.equal(_valid(ids, self.num_buckets), _full(ids, -1))
            ids = where(bad, _full(ids, self.default_value), ids)
        return _valid(ids, self.num_buckets)

    def _parse_example_spec(self):
        return {self.key: _var_len(dtypes.int64)}


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Integer ids in [0, num_buckets) used as they are."""
    if num_buckets < 1:
        raise ValueError("num_buckets must be positive, got %r" % (num_buckets,))
    return IdentityCategoricalColumn(key, num_buckets, default_value)


class VocabularyListCategoricalColumn(_Column):
    is_categorical = True

    def __init__(self, key, vocabulary_list, default_value, num_oov_buckets, dtype=None):
        self.key = key
        self.vocabulary_list = tuple(vocabulary_list)
        if dtype is None:
            dtype = dtypes.string if all(isinstance(v, (str, bytes)) for v in vocabulary_list) \
                else dtypes.int64
        self.dtype = dtypes.as_dtype(dtype)
        self.default_value = default_value
        self.num_oov_buckets = int(num_oov_buckets)

    @property
    def name(self):
        return self.key

    @property
    def num_buckets(self):
        return len(self.vocabulary_list) + self.num_oov_buckets

    def _lookup(self, values):
        table = self.__dict__.get("_table")
        if table is None:   # built once, not at every step (a vocabulary may be large)
            table = {(v.encode() if isinstance(v, str) else v): i
                     for i, v in enumerate(self.vocabulary_list)}
            self._table = table
        n, oov, default = len(self.vocabulary_list), self.num_oov_buckets, self.default_value
        out = np.empty(values.shape, np.int64)
        for index, v in np.ndenumerate(values):
            v = v.encode() if isinstance(v, str) else v
            v = v.item() if isinstance(v, np.generic) else v
            if v in table:
                out[index] = table[v]
            elif oov:
                out[index] = n + _string_hash64(v) % oov   # TF's fast hash of the text
            else:
                out[index] = default
        return out

    def _ids(self, features):
        return _raw_ids(features, self.key, self._ids_of)

    def _ids_of(self, x):
        from shardflow.script_ops import py_func
        if not (x.dtype == self.dtype or (x.dtype.is_integer and self.dtype.is_integer)):
            raise ValueError("Column dtype and SparseTensors dtype must be compatible. key: %s, "
                             "column dtype: %s, tensor dtype: %s"
                             % (self.key, self.dtype.name, x.dtype.name))
        ids = py_func(self._lookup, [x], dtypes.int64, stateful=False,
                      name="%s_lookup" % self.key)
        return ops.reshape(ids, ops.shape(x))

    def _parse_example_spec(self):
        return {self.key: _var_len(self.dtype)}


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1,
                                            num_oov_buckets=0):
    """Strings (or ints) looked up in `vocabulary_list`: the i-th entry is id i; others are
    `default_value` (-1: missing) or, with num_oov_buckets, one of that many extra ids."""
    if len(set(vocabulary_list)) != len(vocabulary_list):
        raise ValueError("vocabulary_list has duplicates: %r" % (vocabulary_list,))
    if num_oov_buckets and default_value != -1:
        raise ValueError("give default_value or num_oov_buckets, not both")
    return VocabularyListCategoricalColumn(key, vocabulary_list, default_value, num_oov_buckets,
                                           dtype)


class BucketizedColumn(_Column):
    is_dense = True
    is_categorical = True

    def __init__(self, source_column, boundaries):
        self.source_column = source_column
        self.boundaries = tuple(float(b) for b in boundaries)

    @property
    def name(self):
        return "%s_bucketized" % self.source_column.name

    @property
    def num_buckets(self):
        return self.source_column.dimension * (len(self.boundaries) + 1)

    def _bucket(self, features):
        """The bucket of each value, int64 [batch, dimension]."""
        x = self.source_column._values(features)
        bucket = ops.zeros_like(ops.cast(x, dtypes.int64))
        for b in self.boundaries:
            bucket = ops.add(bucket, ops.cast(ops.greater_equal(x, b), dtypes.int64))
        return bucket

    def _ids(self, features):
        width = len(self.boundaries) + 1
        offsets = np.arange(self.source_column.dimension, dtype=np.int64) * width
        return ops.add(self._bucket(features), ops.constant(offsets.reshape(1, -1)))

    def _dense(self, features, state, trainable=True, weight_collections=None):
        width = len(self.boundaries) + 1
        hot = one_hot(self._bucket(features), width, dtype=dtypes.float32)
        return ops.reshape(hot, [-1, self.source_column.dimension * width])

    def _parse_example_spec(self):
        return self.source_column._parse_example_spec()


def bucketized_column(source_column, boundaries):
    """A numeric column's values as buckets: (-inf, b0), [b0, b1), ..., [bn, inf); dense as a
    one-hot per value, categorical as ids."""
    if not isinstance(source_column, NumericColumn):
        raise ValueError("bucketized_column takes a numeric_column, not %r" % (source_column,))
    if list(boundaries) != sorted(boundaries) or len(set(boundaries)) != len(boundaries):
        raise ValueError("boundaries must be sorted and distinct, got %r" % (boundaries,))
    return BucketizedColumn(source_column, boundaries)


def _check_categorical(column, what):
    if not getattr(column, "is_categorical", False):
        raise ValueError("%s takes a categorical column, not %r" % (what, column))


class IndicatorColumn(_Column):
    is_dense = True

    def __init__(self, categorical_column):
        self.categorical_column = categorical_column

    @property
    def name(self):
        return "%s_indicator" % self.categorical_column.name

    def _dense(self, features, state, trainable=True, weight_collections=None):
        c = self.categorical_column
        hot = one_hot(c._ids(features), c.num_buckets, dtype=dtypes.float32)   # [b, n, buckets]
        weights = _weights(c, features)
        if weights is not None:   # TF1: a weighted column's indicator sums the weights
            hot = ops.multiply(hot, ops.expand_dims(weights, 2))
        out = ops.reduce_sum(hot, axis=1)
        out.set_shape([None, c.num_buckets])
        return out

    def _parse_example_spec(self):
        return self.categorical_column._parse_example_spec()


def indicator_column(categorical_column):
    """A categorical column as a multi-hot float vector of num_buckets entries."""
    _check_categorical(categorical_column, "indicator_column")
    return IndicatorColumn(categorical_column)


def _weights(column, features):
    """The float32 [batch, n] weights of a weighted categorical column, else None."""
    return column._weights(features) if hasattr(column, "_weights") else None


def _combine(ids, table, combiner, weights=None, max_norm=None):
    """The rows of `table` at `ids` ([batch, n], -1 missing) combined per example: "sum" is
    sum(w * row), "mean" that / sum(w), "sqrtn" that / sqrt(sum(w^2)); w = `weights` (a
    weighted column's, float32 [batch, n]; an id of weight <= 0 takes no part, as TF1's
    safe_embedding_lookup_sparse) or 1. `max_norm`: each row scaled down to that L2 norm
    first. Works on the flattened ids with a segment sum per example, so `n` (and even the
    rank's static knowledge) may be known only when the step runs (crossed columns, sparse
    features)."""
    from shardflow.array_ops import embedding_lookup, range as _range
    from shardflow.segment_ops import unsorted_segment_sum
    shape = ops.shape(ids)
    flat = ops.reshape(ids, [-1])
    present = ops.greater_equal(flat, ops.zeros_like(flat))
    # A PartitionedVariable table (a scope partitioner) is split as TF1's "div" layout.
    rows = embedding_lookup(table, where(present, flat, ops.zeros_like(flat)),
                            partition_strategy="div")                        # [b * n, d]
    if max_norm is not None:
        rows = ops.clip_by_norm(rows, max_norm, axes=[1])
    w = ops.cast(present, dtypes.float32)
    if weights is not None:
        weights = ops.reshape(weights, [-1])
        w = ops.multiply(w, ops.maximum(weights, ops.zeros_like(weights)))
    example = ops.floordiv(_range(ops.shape(flat)[0]), ops.maximum(shape[1], 1))
    batch = shape[0]
    total = unsorted_segment_sum(ops.multiply(rows, ops.expand_dims(w, 1)), example, batch)
    total.set_shape([None, _table_shape(table)[1]])
    if combiner == "sum":
        return total
    count = unsorted_segment_sum(ops.multiply(w, w) if combiner == "sqrtn" else w, example,
                                 batch)
    if combiner == "sqrtn":
        count = ops.sqrt(count)
    return ops.divide(total, ops.expand_dims(ops.maximum(count, 1e-12), 1))


def _add_to_collections(variable, collections):
    """Puts `variable` in each of `collections` (TF1's weight_collections) it is not in."""
    g = get_default_graph()
    for collection in collections or ():
        if not any(v is variable for v in g.get_collection(collection)):
            g.add_to_collection(collection, variable)


def _embedding_table(column, num_buckets, seed, trainable, weight_collections):
    """The [num_buckets, dimension] table of an embedding column: get_variable
    "embedding_weights" in the current variable scope, so a scope that reuses (towers,
    train and eval graphs built under one reuse=AUTO_REUSE scope) shares it, as TF1 (a
    scope partitioner makes it a PartitionedVariable). Its initializer is a sf.initializers
    one or a TF1-style function (shape, dtype) -> value (such as sf.constant_initializer's);
    default truncated normal, stddev 1/sqrt(dimension). It is trainable when the column and
    the caller (input_layer's `trainable`) both say so, is added to `weight_collections`, and
    with ckpt_to_load_from its initializer loads the checkpoint's tensor_name_in_ckpt (as
    TF1's init_from_checkpoint)."""
    from shardflow.variable_scope import get_variable
    shape = [num_buckets, column.dimension]
    init = column.initializer or initializers.truncated_normal(
        stddev=1.0 / math.sqrt(column.dimension), seed=seed)
    table = get_variable("embedding_weights", shape=shape, dtype=dtypes.float32,
                         initializer=init, trainable=column.trainable and trainable)
    for part in _parts(table):
        _add_to_collections(part, weight_collections)
    if column.ckpt_to_load_from is not None and not getattr(table, "_fc_from_ckpt", False):
        from shardflow.checkpoint_utils import init_from_checkpoint
        init_from_checkpoint(column.ckpt_to_load_from, {column.tensor_name_in_ckpt: table})
        table._fc_from_ckpt = True
    return table


def _parts(variable):
    """The Variables of `variable` (the parts of a PartitionedVariable, else itself)."""
    from shardflow.partitioned_variables import PartitionedVariable
    return list(variable) if isinstance(variable, PartitionedVariable) else [variable]


def _whole(variable):
    """A Variable, or a PartitionedVariable's parts joined along their first dimension."""
    parts = _parts(variable)
    return parts[0] if len(parts) == 1 else ops.concat(parts, 0)


def _table_shape(table):
    """The static shape (a list) of a table Variable or PartitionedVariable."""
    shape = table.shape
    return shape.as_list() if hasattr(shape, "as_list") else list(shape)


def _scope_name(column):
    """The variable scope a column's variables live in (TF1's _var_scope_name)."""
    return getattr(column, "shared_embedding_collection_name", None) or column.name


class EmbeddingColumn(_Column):
    is_dense = True

    def __init__(self, categorical_column, dimension, combiner, initializer, trainable,
                 ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None):
        self.categorical_column = categorical_column
        self.dimension = int(dimension)
        self.combiner = combiner
        self.initializer = initializer
        self.trainable = trainable
        self.ckpt_to_load_from = ckpt_to_load_from
        self.tensor_name_in_ckpt = tensor_name_in_ckpt
        self.max_norm = max_norm

    @property
    def name(self):
        return "%s_embedding" % self.categorical_column.name

    def _dense(self, features, state, trainable=True, weight_collections=None):
        from shardflow.ops import _op_seed
        c = self.categorical_column
        table = _embedding_table(self, c.num_buckets, _op_seed(0), trainable,
                                 weight_collections)
        state.extend(_parts(table))
        return _combine(c._ids(features), table, self.combiner, _weights(c, features),
                        self.max_norm)

    def _parse_example_spec(self):
        return self.categorical_column._parse_example_spec()


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    """A categorical column as a trained dense vector of `dimension` per id, combined over an
    example's ids by `combiner` ("mean", "sum" or "sqrtn"). `initializer`: a sf.initializers
    one (default truncated normal, stddev 1/sqrt(dimension)). `ckpt_to_load_from` and
    `tensor_name_in_ckpt`: the table starts from that checkpoint tensor. `max_norm`: each
    embedding is scaled down to that L2 norm before it is combined."""
    _check_categorical(categorical_column, "embedding_column")
    if combiner not in ("mean", "sum", "sqrtn"):
        raise ValueError("combiner must be 'mean', 'sum' or 'sqrtn', got %r" % (combiner,))
    _check_embedding_args(dimension, ckpt_to_load_from, tensor_name_in_ckpt)
    return EmbeddingColumn(categorical_column, dimension, combiner, initializer, trainable,
                           ckpt_to_load_from, tensor_name_in_ckpt, max_norm)


def _check_embedding_args(dimension, ckpt_to_load_from, tensor_name_in_ckpt):
    if dimension is None or dimension < 1:
        raise ValueError("Invalid dimension %r." % (dimension,))
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or "
                         "none of them.")


def _var_len(dtype):
    from shardflow.parsing_ops import VarLenFeature
    return VarLenFeature(dtypes.as_dtype(dtype))


# ---- hashed, vocabulary-file, weighted and crossed columns ----------------------------------

class HashedCategoricalColumn(_Column):
    is_categorical = True

    def __init__(self, key, hash_bucket_size, dtype):
        self.key = key
        self.hash_bucket_size = int(hash_bucket_size)
        self.dtype = dtype

    @property
    def name(self):
        return self.key

    @property
    def num_buckets(self):
        return self.hash_bucket_size

    def _ids(self, features):
        return _raw_ids(features, self.key, self._ids_of)

    def _ids_of(self, x):
        from shardflow.string_ops import as_string, string_to_hash_bucket_fast
        if x.dtype != dtypes.string:
            if not x.dtype.is_integer:
                raise ValueError("categorical_column_with_hash_bucket '%s': the feature is %s; "
                                 "it takes strings or integers" % (self.key, x.dtype.name))
            x = as_string(x)
        return string_to_hash_bucket_fast(x, self.hash_bucket_size)

    def _parse_example_spec(self):
        return {self.key: _var_len(self.dtype)}


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=dtypes.string):
    """Strings (or integers, as their decimal strings) hashed to ids in [0, hash_bucket_size)
    with sf.string_to_hash_bucket_fast (TF's Fingerprint64: TF's ids). A dense feature's ""
    (or -1) is missing."""
    if hash_bucket_size is None or hash_bucket_size < 1:
        raise ValueError("hash_bucket_size must be at least 1, got %r" % (hash_bucket_size,))
    dtype = dtypes.as_dtype(dtype)
    if dtype != dtypes.string and not dtype.is_integer:
        raise ValueError("dtype must be string or integer, got %s" % dtype.name)
    return HashedCategoricalColumn(key, hash_bucket_size, dtype)


class VocabularyFileCategoricalColumn(VocabularyListCategoricalColumn):
    def __init__(self, key, vocabulary_file, vocabulary_size, tokens, default_value,
                 num_oov_buckets, dtype):
        super().__init__(key, tokens, default_value, num_oov_buckets, dtype)
        self.vocabulary_file = vocabulary_file
        self.vocabulary_size = vocabulary_size


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None,
                                            num_oov_buckets=0, default_value=None,
                                            dtype=dtypes.string):
    """As categorical_column_with_vocabulary_list with the vocabulary read from a text file,
    one token per line (line i: id i; only the first `vocabulary_size` lines when given). The
    file is read when the column is made (TF1 reads it when the table is initialised)."""
    from shardflow.graph_io import gfile
    if not vocabulary_file:
        raise ValueError("Missing vocabulary_file in %s." % key)
    if not gfile.Exists(vocabulary_file):
        raise ValueError("vocabulary_file in %s does not exist." % key)
    if num_oov_buckets < 0:
        raise ValueError("Invalid num_oov_buckets %d in %s." % (num_oov_buckets, key))
    if default_value is not None and num_oov_buckets:
        raise ValueError("Can't specify both num_oov_buckets and default_value in %s." % key)
    dtype = dtypes.as_dtype(dtype)
    if dtype != dtypes.string and not dtype.is_integer:
        raise ValueError("dtype must be string or integer, got %s" % dtype.name)
    with gfile.GFile(vocabulary_file, "rb") as f:
        lines = f.read()
    if isinstance(lines, str):
        lines = lines.encode()
    tokens = [t.rstrip(b"\r") for t in lines.split(b"\n")]
    if tokens and tokens[-1] == b"":
        tokens.pop()
    if vocabulary_size is not None:
        if vocabulary_size < 1:
            raise ValueError("Invalid vocabulary_size in %s." % key)
        if vocabulary_size > len(tokens):
            raise ValueError("vocabulary_size %d in %s is larger than the %d lines of %s"
                             % (vocabulary_size, key, len(tokens), vocabulary_file))
        tokens = tokens[:vocabulary_size]
    if dtype != dtypes.string:
        tokens = [int(t) for t in tokens]
    if len(set(tokens)) != len(tokens):
        raise ValueError("vocabulary_file %s has duplicate tokens" % vocabulary_file)
    return VocabularyFileCategoricalColumn(
        key, vocabulary_file, len(tokens), tokens, -1 if default_value is None else default_value,
        num_oov_buckets, dtype)


class WeightedCategoricalColumn(_Column):
    is_categorical = True

    def __init__(self, categorical_column, weight_feature_key, dtype):
        self.categorical_column = categorical_column
        self.weight_feature_key = weight_feature_key
        self.dtype = dtype

    @property
    def name(self):
        return "%s_weighted_by_%s" % (self.categorical_column.name, self.weight_feature_key)

    @property
    def num_buckets(self):
        return self.categorical_column.num_buckets

    def _ids(self, features):
        return self.categorical_column._ids(features)

    def _weights(self, features):
        key = self.weight_feature_key
        if key in features and _is_sparse(features[key]):
            return _sparse_rows(features, key, lambda v: ops.cast(v, dtypes.float32), 0.0)
        w = _as_rows(_feature(features, key))
        return w if w.dtype == dtypes.float32 else ops.cast(w, dtypes.float32)

    def _parse_example_spec(self):
        spec = dict(self.categorical_column._parse_example_spec())
        spec[self.weight_feature_key] = _var_len(self.dtype)
        return spec


def weighted_categorical_column(categorical_column, weight_feature_key, dtype=dtypes.float32):
    """A categorical column whose ids each carry a weight: feature `weight_feature_key`, of the
    ids' shape (or a SparseTensor with the ids' indices). linear_model multiplies each id's
    weight by it; embedding/indicator columns weight the rows they combine."""
    _check_categorical(categorical_column, "weighted_categorical_column")
    if isinstance(categorical_column, (WeightedCategoricalColumn, CrossedColumn)) or \
            not hasattr(categorical_column, "key"):
        raise ValueError("weighted_categorical_column takes a categorical column of one "
                         "feature, not %r" % (categorical_column,))
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError("dtype %s is not float" % dtype.name)
    return WeightedCategoricalColumn(categorical_column, weight_feature_key, dtype)


_DEFAULT_HASH_KEY = 0xDECAFCAFFE   # TF's sparse_cross_hashed default
_MUL = 0xC6A4A7935BD1E995
_MASK = (1 << 64) - 1


def _shift_mix(v):
    return v ^ (v >> 47)


def _fingerprint_cat64(fp1, fp2):
    """TF's FingerprintCat64 (tensorflow/core/lib/hash/hash.h) on Python ints as uint64."""
    result = fp1 ^ _MUL
    result ^= (_shift_mix((fp2 * _MUL) & _MASK) * _MUL) & _MASK
    result = (result * _MUL) & _MASK
    result = (_shift_mix(result) * _MUL) & _MASK
    return _shift_mix(result)


def _string_hash64(value):
    """The 64-bit hash string_to_hash_bucket_fast takes modulo the bucket count: TF's
    Fingerprint64 of the bytes (of an integer's decimal text, as TF's as_string)."""
    from shardflow import _shardflow
    return _shardflow.string_hash64(value if isinstance(value, bytes) else str(value).encode())


def _cross_rows(hash_key, num_buckets, *parts):
    """The py_func body of crossed_column: parts are (values [b, n_i], present [b, n_i]) per
    key; each example's ids are the hashes of the cartesian product of its present values
    (the last key fastest), -1 padded to [b, prod n_i]."""
    import itertools
    pairs = [(np.asarray(parts[i]), np.asarray(parts[i + 1], bool))
             for i in range(0, len(parts), 2)]
    batch = pairs[0][0].shape[0]
    width = int(np.prod([v.shape[1] for v, _ in pairs], dtype=np.int64))
    out = np.full([batch, width], -1, np.int64)
    for row in range(batch):
        lists = []
        for values, present in pairs:
            vals = values[row][present[row]]
            lists.append([_string_hash64(v) if values.dtype == object else int(v) & _MASK
                          for v in vals])
        for k, combo in enumerate(itertools.product(*lists)):
            h = hash_key
            for v in combo:
                h = _fingerprint_cat64(h, v)
            out[row, k] = h % num_buckets
    return out


class CrossedColumn(_Column):
    is_categorical = True

    def __init__(self, keys, hash_bucket_size, hash_key):
        self.keys = tuple(keys)
        self.hash_bucket_size = int(hash_bucket_size)
        self.hash_key = hash_key

    @property
    def name(self):
        return "_X_".join(sorted(k if isinstance(k, str) else k.name for k in self.keys))

    @property
    def num_buckets(self):
        return self.hash_bucket_size

    def _leaves(self):
        out = []
        for k in self.keys:
            out.extend(k._leaves() if isinstance(k, CrossedColumn) else [k])
        return out

    def _part(self, features, key):
        """(values, present) [batch, n] of one leaf key."""
        if not isinstance(key, str):
            ids = key._ids(features)
            return ids, ops.greater_equal(ids, ops.zeros_like(ids))
        x = features.get(key)
        if x is not None and _is_sparse(x):
            from shardflow.sparse_tensor import convert_to_sparse
            values = convert_to_sparse(x, key).values
            if values.dtype == dtypes.string:
                to_int = _hash64_tensor
            else:
                def to_int(v):
                    return ops.cast(v, dtypes.int64)
            ints = _sparse_rows(features, key, to_int, 0)
            present = _sparse_rows(features, key,
                                   lambda v: ops.fill(ops.shape(v), 1.0), 0.0)
            return ints, ops.greater(present, 0.0)
        x = _as_rows(_feature(features, key))
        if x.dtype == dtypes.string:
            return x, ops.logical_not(_is_missing(x, ""))
        if not x.dtype.is_integer:
            raise ValueError("crossed_column: feature '%s' is %s; it takes strings or integers"
                             % (key, x.dtype.name))
        x = ops.cast(x, dtypes.int64)
        return x, ops.logical_not(_is_missing(x, -1))

    def _ids(self, features):
        from shardflow.script_ops import py_func
        inputs = []
        for key in self._leaves():
            inputs.extend(self._part(features, key))
        hash_key = _DEFAULT_HASH_KEY if self.hash_key is None else int(self.hash_key)

        def cross(*parts):
            return _cross_rows(hash_key, self.hash_bucket_size, *parts)
        ids = py_func(cross, inputs, dtypes.int64, stateful=False,
                      name="%s_cross" % self.name.replace("_X_", "_"))
        return _with_rank2(ids)

    def _parse_example_spec(self):
        spec = {}
        for key in self._leaves():
            spec.update({key: _var_len(dtypes.string)} if isinstance(key, str)
                        else key._parse_example_spec())
        return spec


def _with_rank2(t):
    t.set_shape([None, None])
    return t


def _hash64_tensor(values):
    """Each string's 64-bit hash (as string_to_hash_bucket_fast's, before the modulo) as an
    int64 tensor of the same bits."""
    from shardflow.script_ops import py_func

    def run(a):
        a = np.asarray(a, dtype=object)
        flat = [_string_hash64(v) for v in a.reshape(-1)]
        return np.array(flat, np.uint64).view(np.int64).reshape(a.shape)
    out = py_func(run, [values], dtypes.int64, stateful=False, name="hash64")
    out.set_shape(values.shape)
    return out


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """The crosses (cartesian product per example) of several categorical features, hashed
    to ids in [0, hash_bucket_size). `keys`: feature keys (raw string or integer features)
    and categorical columns other than hashed ones (crossed as their ids). Hashing is TF's
    sparse_cross_hashed: FingerprintCat64 chained from `hash_key` (default TF's
    0xDECAFCAFFE) over the integer values / ids and the strings' Fingerprint64, the last key
    varying fastest: TF's bucket ids.
    """
    keys = list(keys)
    if len(keys) < 2:
        raise ValueError("keys must be a list with length > 1. Given: %r" % (keys,))
    if hash_bucket_size is None or hash_bucket_size < 1:
        raise ValueError("hash_bucket_size must be > 1. hash_bucket_size: %r"
                         % (hash_bucket_size,))
    for k in keys:
        if not isinstance(k, (str, CrossedColumn)) and not getattr(k, "is_categorical", False):
            raise ValueError("Unsupported key type. All keys must be either string, or "
                             "categorical column except HashedCategoricalColumn. Given: %r"
                             % (k,))
        if isinstance(k, HashedCategoricalColumn):
            raise ValueError("categorical_column_with_hash_bucket is not supported for "
                             "crossing. Hashing before crossing will increase probability of "
                             "collision. Instead, use the feature name as a string. Given: %r"
                             % (k,))
    return CrossedColumn(keys, hash_bucket_size, hash_key)


# ---- shared embeddings and parse specs --------------------------------------------------------

class SharedEmbeddingColumn(EmbeddingColumn):
    def __init__(self, categorical_column, dimension, combiner, initializer, trainable,
                 collection_name, ckpt_to_load_from, tensor_name_in_ckpt, max_norm):
        super().__init__(categorical_column, dimension, combiner, initializer, trainable,
                         ckpt_to_load_from, tensor_name_in_ckpt, max_norm)
        self.shared_embedding_collection_name = collection_name

    @property
    def name(self):
        return "%s_shared_embedding" % self.categorical_column.name

    def _dense(self, features, state, trainable=True, weight_collections=None):
        from shardflow.ops import _op_seed
        c = self.categorical_column
        g = get_default_graph()
        shared = g.get_collection(self.shared_embedding_collection_name)
        if shared:
            table = shared[0]
            if _table_shape(table) != [c.num_buckets, self.dimension]:
                raise ValueError("shared embedding %s has shape %s; %s needs %s"
                                 % (self.shared_embedding_collection_name,
                                    _table_shape(table), self.name,
                                    [c.num_buckets, self.dimension]))
        else:
            table = _embedding_table(self, c.num_buckets, _op_seed(0), trainable,
                                     weight_collections)
            g.add_to_collection(self.shared_embedding_collection_name, table)
        state.extend(_parts(table))
        return _combine(c._ids(features), table, self.combiner, _weights(c, features),
                        self.max_norm)


def shared_embedding_columns(categorical_columns, dimension, combiner="mean", initializer=None,
                             shared_embedding_collection_name=None, ckpt_to_load_from=None,
                             tensor_name_in_ckpt=None, max_norm=None, trainable=True):
    """embedding_columns of several categorical columns (of one num_buckets) that share one
    embedding table; returns them in the order given. The table is made by the first of them
    a graph uses and found again under `shared_embedding_collection_name` (default: the
    sorted column names joined by "_", plus "_shared_embedding")."""
    columns = list(categorical_columns)
    if not columns:
        raise ValueError("categorical_columns must not be empty")
    for c in columns:
        _check_categorical(c, "shared_embedding_columns")
    if combiner not in ("mean", "sum", "sqrtn"):
        raise ValueError("combiner must be 'mean', 'sum' or 'sqrtn', got %r" % (combiner,))
    _check_embedding_args(dimension, ckpt_to_load_from, tensor_name_in_ckpt)
    sizes = {c.num_buckets for c in columns}
    if len(sizes) != 1:
        raise ValueError("To use shared_embedding_column, all sharing categorical_columns must "
                         "have the same number of buckets. Given: %s"
                         % [(c.name, c.num_buckets) for c in columns])
    name = shared_embedding_collection_name or \
        "_".join(sorted(c.name for c in columns)) + "_shared_embedding"
    return [SharedEmbeddingColumn(c, dimension, combiner, initializer, trainable, name,
                                  ckpt_to_load_from, tensor_name_in_ckpt, max_norm)
            for c in columns]


def make_parse_example_spec(feature_columns):
    """The dict of feature key -> FixedLenFeature / VarLenFeature that sf.parse_example needs
    for `feature_columns` (numeric: FixedLenFeature; categorical: VarLenFeature; weighted:
    also the weight's VarLenFeature)."""
    result = {}
    for column in feature_columns:
        if not isinstance(column, _Column):
            raise ValueError("All feature_columns must be _FeatureColumn instances. Given: %r"
                             % (column,))
        for key, spec in column._parse_example_spec().items():
            if key in result and result[key] != spec:
                raise ValueError("feature_columns contain different parse_spec for key %s. "
                                 "Given %s and %s" % (key, spec, result[key]))
            result[key] = spec
    return result


def _sorted_columns(feature_columns):
    columns = list(feature_columns)
    if not columns:
        raise ValueError("feature_columns must not be empty")
    for c in columns:
        if not isinstance(c, _Column):
            raise ValueError("not a feature column: %r (make one with sf.feature_column.*)" % (c,))
    names = [c.name for c in columns]
    if len(set(names)) != len(names):
        raise ValueError("two feature columns have one name: %s" % sorted(names))
    return sorted(columns, key=lambda c: c.name)


def input_layer(features, feature_columns, weight_collections=None, trainable=True,
                cols_to_vars=None, cols_to_output_tensors=None):
    """The dense columns' tensors for `features`, concatenated in the order of the columns'
    names (as TF1): float32 [batch, total width]. The variables (embedding tables) are
    get_variable ones in variable scopes "input_layer/<column>" (each scope's default name,
    as TF1), so a reusing enclosing scope shares them; they are trainable only with
    `trainable` (and the column's own), and are also put in the `weight_collections`.
    `cols_to_vars`, a dict, receives each column's variables; `cols_to_output_tensors` each
    column's tensor."""
    from shardflow.variable_scope import variable_scope
    outputs = []
    with variable_scope(None, default_name="input_layer"):
        for column in _sorted_columns(feature_columns):
            if not column.is_dense:
                raise ValueError("input_layer takes dense columns; wrap %r in indicator_column "
                                 "or embedding_column" % (column,))
            state = []
            with variable_scope(None, default_name=_scope_name(column)):
                outputs.append(column._dense(features, state, trainable, weight_collections))
            if cols_to_vars is not None:
                cols_to_vars[column] = state
            if cols_to_output_tensors is not None:
                cols_to_output_tensors[column] = outputs[-1]
    return outputs[0] if len(outputs) == 1 else ops.concat(outputs, 1)


def linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                 weight_collections=None, trainable=True, cols_to_vars=None):
    """A linear function of the columns: float32 [batch, units]. Numeric columns get a weight
    matrix, categorical ones (bucketized included) a weight per id summed by
    `sparse_combiner`; plus a bias. Variables (zeros at first): get_variable
    linear_model/<column>/weights and linear_model/bias_weights (the scopes' default names,
    as TF1), so a reusing enclosing scope shares them."""
    from shardflow.variable_scope import get_variable, variable_scope
    terms = []
    with variable_scope(None, default_name="linear_model"):
        for column in _sorted_columns(feature_columns):
            with variable_scope(None, default_name=_scope_name(column)):
                if column.is_categorical:
                    w = get_variable("weights", [column.num_buckets, units], dtypes.float32,
                                     initializers.zeros(), trainable=trainable)
                    terms.append(_combine(column._ids(features), w, sparse_combiner,
                                          _weights(column, features)))
                elif column.is_dense:
                    x = column._dense(features, [])
                    width = column.dimension if isinstance(column, NumericColumn) \
                        else int(x.shape.as_list()[-1])
                    w = get_variable("weights", [width, units], dtypes.float32,
                                     initializers.zeros(), trainable=trainable)
                    terms.append(ops.matmul(x, _whole(w)))
                else:
                    raise ValueError("linear_model cannot use %r" % (column,))
            for part in _parts(w):
                _add_to_collections(part, weight_collections)
            if cols_to_vars is not None:
                cols_to_vars[column] = _parts(w)
        bias = get_variable("bias_weights", [units], dtypes.float32, initializers.zeros(),
                            trainable=trainable)
        for part in _parts(bias):
            _add_to_collections(part, weight_collections)
        out = terms[0]
        for t in terms[1:]:
            out = ops.add(out, t)
        out = ops.add(out, _whole(bias))
    if cols_to_vars is not None:
        cols_to_vars["bias"] = _parts(bias)
    return out


__all__ = ["bucketized_column", "categorical_column_with_hash_bucket",
           "categorical_column_with_identity", "categorical_column_with_vocabulary_file",
           "categorical_column_with_vocabulary_list", "crossed_column", "embedding_column",
           "indicator_column", "input_layer", "linear_model", "make_parse_example_spec",
           "numeric_column", "shared_embedding_columns", "weighted_categorical_column"]
