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

Differences from TF1: categorical features are dense int/string tensors of shape [batch] or
[batch, n] (no SparseTensor); an id outside [0, num_buckets) (or -1) counts as missing rather
than being an error; out-of-vocabulary buckets hash with CRC32, not TF's fingerprint64.
"""

import math
import zlib

import numpy as np

from shardflow import dtypes, ops
from shardflow.array_ops import one_hot, where
from shardflow.framework import Tensor, convert_to_tensor, get_default_graph
from shardflow.variables import Variable, initializers


def _feature(features, key):
    if key not in features:
        raise ValueError("feature '%s' is not in the features dict (keys: %s)"
                         % (key, sorted(features)))
    x = features[key]
    return x if isinstance(x, Tensor) else convert_to_tensor(np.asarray(x))


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
        """The feature as float32 [batch, dimension], after normalizer_fn."""
        x = _feature(features, self.key)
        if x.dtype != dtypes.float32:
            x = ops.cast(x, dtypes.float32)
        if self.normalizer_fn is not None:
            x = self.normalizer_fn(x)
        return ops.reshape(x, [-1, self.dimension])

    def _dense(self, features, state):
        return self._values(features)


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
        ids = _as_rows(_feature(features, self.key))
        if ids.dtype != dtypes.int64:
            ids = ops.cast(ids, dtypes.int64)
        if self.default_value is not None:
            bad = ops.equal(_valid(ids, self.num_buckets), _full(ids, -1))
            ids = where(bad, _full(ids, self.default_value), ids)
        return _valid(ids, self.num_buckets)


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Integer ids in [0, num_buckets) used as they are."""
    if num_buckets < 1:
        raise ValueError("num_buckets must be positive, got %r" % (num_buckets,))
    return IdentityCategoricalColumn(key, num_buckets, default_value)


class VocabularyListCategoricalColumn(_Column):
    is_categorical = True

    def __init__(self, key, vocabulary_list, default_value, num_oov_buckets):
        self.key = key
        self.vocabulary_list = tuple(vocabulary_list)
        self.default_value = default_value
        self.num_oov_buckets = int(num_oov_buckets)

    @property
    def name(self):
        return self.key

    @property
    def num_buckets(self):
        return len(self.vocabulary_list) + self.num_oov_buckets

    def _lookup(self, values):
        table = {(v.encode() if isinstance(v, str) else v): i
                 for i, v in enumerate(self.vocabulary_list)}
        n, oov, default = len(self.vocabulary_list), self.num_oov_buckets, self.default_value
        out = np.empty(values.shape, np.int64)
        for index, v in np.ndenumerate(values):
            v = v.encode() if isinstance(v, str) else v
            v = v.item() if isinstance(v, np.generic) else v
            if v in table:
                out[index] = table[v]
            elif oov:
                out[index] = n + zlib.crc32(v if isinstance(v, bytes) else str(v).encode()) % oov
            else:
                out[index] = default
        return out

    def _ids(self, features):
        from shardflow.script_ops import py_func
        x = _as_rows(_feature(features, self.key))
        ids = py_func(self._lookup, [x], dtypes.int64, stateful=False,
                      name="%s_lookup" % self.key)
        return ops.reshape(ids, ops.shape(x))


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1,
                                            num_oov_buckets=0):
    """Strings (or ints) looked up in `vocabulary_list`: the i-th entry is id i; others are
    `default_value` (-1: missing) or, with num_oov_buckets, one of that many extra ids."""
    if len(set(vocabulary_list)) != len(vocabulary_list):
        raise ValueError("vocabulary_list has duplicates: %r" % (vocabulary_list,))
    if num_oov_buckets and default_value != -1:
        raise ValueError("give default_value or num_oov_buckets, not both")
    return VocabularyListCategoricalColumn(key, vocabulary_list, default_value, num_oov_buckets)


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

    def _dense(self, features, state):
        width = len(self.boundaries) + 1
        hot = one_hot(self._bucket(features), width, dtype=dtypes.float32)
        return ops.reshape(hot, [-1, self.source_column.dimension * width])


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

    def _dense(self, features, state):
        c = self.categorical_column
        hot = one_hot(c._ids(features), c.num_buckets, dtype=dtypes.float32)   # [b, n, buckets]
        return ops.reduce_sum(hot, axis=1)


def indicator_column(categorical_column):
    """A categorical column as a multi-hot float vector of num_buckets entries."""
    _check_categorical(categorical_column, "indicator_column")
    return IndicatorColumn(categorical_column)


def _combine(ids, table, combiner):
    """The rows of `table` at `ids` ([batch, n], -1 missing) combined per example."""
    from shardflow.array_ops import embedding_lookup
    present = ops.greater_equal(ids, ops.zeros_like(ids))
    rows = embedding_lookup(table, where(present, ids, ops.zeros_like(ids)))  # [b, n, d]
    mask = ops.expand_dims(ops.cast(present, dtypes.float32), 2)
    total = ops.reduce_sum(ops.multiply(rows, mask), axis=1)
    if combiner == "sum":
        return total
    count = ops.reduce_sum(mask, axis=1)
    if combiner == "sqrtn":
        count = ops.sqrt(count)
    return ops.divide(total, ops.maximum(count, 1e-12))


class EmbeddingColumn(_Column):
    is_dense = True

    def __init__(self, categorical_column, dimension, combiner, initializer, trainable):
        self.categorical_column = categorical_column
        self.dimension = int(dimension)
        self.combiner = combiner
        self.initializer = initializer
        self.trainable = trainable

    @property
    def name(self):
        return "%s_embedding" % self.categorical_column.name

    def _dense(self, features, state):
        from shardflow.ops import _op_seed
        c = self.categorical_column
        g = get_default_graph()
        with g.name_scope(self.name):
            init = self.initializer or initializers.truncated_normal(
                stddev=1.0 / math.sqrt(self.dimension), seed=_op_seed(0))
            table = Variable(init, shape=[c.num_buckets, self.dimension],
                             name="embedding_weights", trainable=self.trainable)
        state.append(table)
        return _combine(c._ids(features), table, self.combiner)


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    """A categorical column as a trained dense vector of `dimension` per id, combined over an
    example's ids by `combiner` ("mean", "sum" or "sqrtn"). `initializer`: a sf.initializers
    one (default truncated normal, stddev 1/sqrt(dimension))."""
    _check_categorical(categorical_column, "embedding_column")
    if combiner not in ("mean", "sum", "sqrtn"):
        raise ValueError("combiner must be 'mean', 'sum' or 'sqrtn', got %r" % (combiner,))
    if ckpt_to_load_from is not None or max_norm is not None:
        raise NotImplementedError("embedding_column: ckpt_to_load_from and max_norm are not "
                                  "supported; use warm_start_from on the Estimator")
    return EmbeddingColumn(categorical_column, dimension, combiner, initializer, trainable)


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
                cols_to_vars=None):
    """The dense columns' tensors for `features`, concatenated in the order of the columns'
    names (as TF1): float32 [batch, total width]. `cols_to_vars`, a dict, receives each
    column's variables."""
    g = get_default_graph()
    outputs = []
    with g.name_scope("input_layer"):
        for column in _sorted_columns(feature_columns):
            if not column.is_dense:
                raise ValueError("input_layer takes dense columns; wrap %r in indicator_column "
                                 "or embedding_column" % (column,))
            state = []
            outputs.append(column._dense(features, state))
            if cols_to_vars is not None:
                cols_to_vars[column] = state
    return outputs[0] if len(outputs) == 1 else ops.concat(outputs, 1)


def linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                 weight_collections=None, trainable=True, cols_to_vars=None):
    """A linear function of the columns: float32 [batch, units]. Numeric columns get a weight
    matrix, categorical ones (bucketized included) a weight per id summed by
    `sparse_combiner`; plus a bias. Variables: linear_model/<column>/weights and
    linear_model/bias_weights."""
    g = get_default_graph()
    terms = []
    with g.name_scope("linear_model"):
        for column in _sorted_columns(feature_columns):
            with g.name_scope(column.name):
                if column.is_categorical:
                    w = Variable(np.zeros((column.num_buckets, units), np.float32),
                                 name="weights", trainable=trainable)
                    terms.append(_combine(column._ids(features), w, sparse_combiner))
                elif column.is_dense:
                    x = column._dense(features, [])
                    width = column.dimension if isinstance(column, NumericColumn) \
                        else int(x.shape.as_list()[-1])
                    w = Variable(np.zeros((width, units), np.float32), name="weights",
                                 trainable=trainable)
                    terms.append(ops.matmul(x, w))
                else:
                    raise ValueError("linear_model cannot use %r" % (column,))
            if cols_to_vars is not None:
                cols_to_vars[column] = [w]
        bias = Variable(np.zeros((units,), np.float32), name="bias_weights", trainable=trainable)
        out = terms[0]
        for t in terms[1:]:
            out = ops.add(out, t)
        out = ops.add(out, bias)
    if cols_to_vars is not None:
        cols_to_vars["bias"] = [bias]
    return out


__all__ = ["bucketized_column", "categorical_column_with_identity",
           "categorical_column_with_vocabulary_list", "embedding_column", "indicator_column",
           "input_layer", "linear_model", "numeric_column"]
