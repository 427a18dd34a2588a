"""tf.data.experimental's file readers: CsvDataset, make_csv_dataset, parse_example_dataset
and make_batched_features_dataset.

Example::

    ds = sf.data.experimental.make_csv_dataset("train-*.csv", batch_size=32,
                                               label_name="label", num_epochs=1)
    features, label = ds.make_one_shot_iterator().get_next()   # {"x": [32], ...}, [32]

CSV is read with Python's csv module (quoted fields may hold the delimiter, newlines and
doubled quotes); blank lines are skipped. A missing field (empty, or na_value) takes its
column's default; a column without one makes that an InvalidArgumentError naming the file and
the line.
"""

import collections
import csv
import gzip
import io
import os
import zlib

import numpy as np

from shardflow import dtypes, errors
from shardflow.data import structure as nest
from shardflow.data.dataset_ops import Dataset, _UnaryDataset
from shardflow.data.sources import _filenames_component, _paths
from shardflow.framework import Tensor, TensorShape

_CSV_TYPES = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64, dtypes.string)
_INT_RANGES = {dtypes.int32: (-2 ** 31, 2 ** 31 - 1), dtypes.int64: (-2 ** 63, 2 ** 63 - 1)}


def _record_default(i, value):
    """(DType, default array or None for a required column) of record_defaults[i]."""
    if isinstance(value, dtypes.DType):
        dtype, array = dtypes.as_dtype(value), None
    else:
        if isinstance(value, Tensor):
            array = nest.to_array(value, value.dtype)
            dtype = value.dtype
        else:
            if isinstance(value, np.generic) or isinstance(value, (list, tuple)) and \
                    len(value) == 1 and isinstance(value[0], np.generic):
                value = np.asarray(value)  # keeps a NumPy scalar's dtype, as TF
            component = nest.as_component(value)
            array, dtype = np.asarray(component), nest.dtype_of(component)
        if array.ndim > 1 or array.size > 1:
            raise ValueError("CsvDataset: record_defaults[%d] = %r: each default is a scalar "
                             "or one value ([0.0]); [] of a dtype (or the dtype) makes the "
                             "column required" % (i, value))
        array = array.reshape(-1)[0] if array.size else None
    if dtype not in _CSV_TYPES:
        raise TypeError("CsvDataset: record_defaults[%d] has type %s; a CSV column is one of %s"
                        % (i, dtype.name, ", ".join(t.name for t in _CSV_TYPES)))
    return dtype, array


def _convert(field, dtype, where):
    """A field's value as a 0-d array of dtype (`where` names it in errors)."""
    if dtype == dtypes.string:
        return np.array(field.encode("utf-8", "surrogateescape"), dtype=object)
    try:
        if dtype in _INT_RANGES:
            value = int(field)
            low, high = _INT_RANGES[dtype]
            if not low <= value <= high:
                raise ValueError(field)
        else:
            value = float(field)
    except ValueError:
        raise errors.InvalidArgumentError("%s is not a valid %s: %s"
                                          % (where, dtype.name, field)) from None
    return np.array(value, dtype=dtype.as_numpy_dtype)


def _open_text(path, compression, what):
    """A text stream of `path` (decompressed) for the csv module."""
    if not os.path.exists(path):
        raise errors.NotFoundError("%s: %s: no such file" % (what, path))
    try:
        if compression == "GZIP":
            with gzip.open(path, "rb") as f:
                data = f.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
            if compression == "ZLIB":
                data = zlib.decompress(data)
    except (OSError, EOFError, zlib.error) as e:
        raise errors.DataLossError("%s: %s: cannot decompress it as %s (%s)"
                                   % (what, path, compression, e)) from None
    return io.StringIO(data.decode("utf-8", "surrogateescape"), newline="")


def _csv_reader(stream, field_delim, use_quote_delim):
    if use_quote_delim:
        return csv.reader(stream, delimiter=field_delim, quotechar='"', doublequote=True)
    return csv.reader(stream, delimiter=field_delim, quoting=csv.QUOTE_NONE)


class CsvDataset(Dataset):
    """tf.data.experimental.CsvDataset: the records of CSV files, one tuple of scalars (one per
    selected column, typed by record_defaults) per line, file after file.

    record_defaults: per column a default ([0.0], 0, "", a scalar tensor) or a required column
    ([] of a dtype, e.g. sf.constant([], sf.int64), or the dtype itself); the types are int32,
    int64, float32, float64, string. header skips each file's first line; select_cols
    (increasing column indices) picks columns. compression_type: None, "", "GZIP" or "ZLIB";
    buffer_size is accepted (files are read whole).
    """

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None,
                 header=False, field_delim=",", use_quote_delim=True, na_value="",
                 select_cols=None):
        from shardflow import tfrecord
        self._compression = tfrecord.TFRecordOptions.get_compression_type_string(
            compression_type)
        if buffer_size is not None and (isinstance(buffer_size, bool) or
                                        not isinstance(buffer_size, int) or buffer_size <= 0):
            raise ValueError("CsvDataset: buffer_size must be a positive int or None, not %r"
                             % (buffer_size,))
        if not isinstance(field_delim, str) or len(field_delim) != 1:
            raise ValueError("CsvDataset: field_delim must be one character, not %r"
                             % (field_delim,))
        if not isinstance(na_value, str):
            raise TypeError("CsvDataset: na_value must be a string, not %r" % (na_value,))
        defaults = [_record_default(i, d) for i, d in enumerate(record_defaults)]
        if not defaults:
            raise ValueError("CsvDataset: record_defaults needs one entry per column")
        if select_cols is not None:
            select_cols = [int(c) for c in select_cols]
            if any(c < 0 for c in select_cols) or select_cols != sorted(set(select_cols)):
                raise ValueError("CsvDataset: select_cols must be non-negative and strictly "
                                 "increasing, not %s" % select_cols)
            if len(select_cols) != len(defaults):
                raise ValueError("CsvDataset: record_defaults (%d) and select_cols (%d) must "
                                 "have the same length" % (len(defaults), len(select_cols)))
        self._defaults, self._select = defaults, select_cols
        self._header, self._delim = bool(header), field_delim
        self._quote, self._na = bool(use_quote_delim), na_value
        self._filenames = _filenames_component(filenames)
        self._structure = tuple(range(len(defaults)))
        self._specs = [(dtype, TensorShape([])) for dtype, _ in defaults]

    def _tensors(self):
        return [self._filenames] if isinstance(self._filenames, Tensor) else []

    def _reader(self, ctx):
        for path in _paths(ctx, self._filenames):
            yield from self._records(path)

    def _records(self, path):
        rows = _csv_reader(_open_text(path, self._compression, "CsvDataset"), self._delim,
                           self._quote)
        columns = self._select or range(len(self._defaults))
        record = 0
        try:
            for row in rows:
                if not row:
                    continue
                record += 1
                if self._header and record == 1:
                    continue
                where = "%s, line %d" % (path, rows.line_num)
                if len(row) < columns[-1] + 1 or self._select is None and \
                        len(row) > len(columns):
                    raise errors.InvalidArgumentError(
                        "Expect %d fields but have %d in record %d (%s)"
                        % (len(columns), len(row), record - self._header, where))
                yield tuple(self._value(row[c], c, j, where) for j, c in enumerate(columns))
        except csv.Error as e:
            raise errors.InvalidArgumentError("CsvDataset: %s, line %d: %s"
                                              % (path, rows.line_num, e)) from None

    def _value(self, field, column, j, where):
        dtype, default = self._defaults[j]
        if field == "" or field == self._na:
            if default is None:
                raise errors.InvalidArgumentError(
                    "Field %d is required but missing in %s; give record_defaults[%d] a "
                    "default to fill it" % (column, where, j))
            return np.array(default, dtype=object if dtype == dtypes.string
                            else dtype.as_numpy_dtype)
        return _convert(field, dtype, "Field %d in %s" % (column, where))


# ---- make_csv_dataset ---------------------------------------------------------------------


def _file_names(file_pattern):
    from shardflow import gfile
    patterns = file_pattern if isinstance(file_pattern, list) else [file_pattern]
    if not patterns:
        raise ValueError("File pattern is empty.")
    names = []
    for pattern in patterns:
        names.extend(gfile.Glob(pattern))
    if not names:
        raise ValueError("No files match %s." % (file_pattern,))
    return sorted(names)


def _header_row(path, field_delim, use_quote_delim):
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
        row = next(_csv_reader(f, field_delim, use_quote_delim), None)
    if row is None:
        raise ValueError("Received StopIteration when reading the header line of %s.  Empty "
                         "file?" % path)
    return row


def _infer_column_names(names, field_delim, use_quote_delim):
    columns = _header_row(names[0], field_delim, use_quote_delim)
    for name in names[1:]:
        if _header_row(name, field_delim, use_quote_delim) != columns:
            raise ValueError("Files have different column names in the header row (%s and %s)."
                             % (names[0], name))
    return columns


def _select_indices(select_columns, column_names):
    positions = {n: i for i, n in enumerate(column_names)}
    indices = []
    for v in select_columns:
        if isinstance(v, int):
            if not 0 <= v < len(column_names):
                raise ValueError("Column index %d specified in select_columns out of valid "
                                 "range." % v)
            indices.append(v)
        elif v in positions:
            indices.append(positions[v])
        else:
            raise ValueError("Value '%s' specified in select_columns not a valid column index "
                             "or name." % (v,))
    result = sorted(set(indices))
    if len(result) != len(indices):
        raise ValueError("select_columns contains duplicate columns")
    return result


def _is_int(text, dtype):
    try:
        low, high = _INT_RANGES[dtype]
        return low <= int(text) <= high
    except ValueError:
        return False


def _is_float(text, np_type):
    try:
        with np.errstate(over="ignore"):
            return bool(np_type(text) < np.inf)
    except ValueError:
        return False


_INFERENCE = [(dtypes.int32, lambda s: _is_int(s, dtypes.int32)),
              (dtypes.int64, lambda s: _is_int(s, dtypes.int64)),
              (dtypes.float32, lambda s: _is_float(s, np.float32)),
              (dtypes.float64, lambda s: _is_float(s, np.float64)),
              (dtypes.string, lambda s: True)]


def _infer_type(text, na_value, previous):
    """TF's rule: the least permissive of int32, int64, float32, float64, string that holds
    `text` and is no less permissive than the type inferred so far."""
    if text in ("", na_value):
        return previous
    order = [t for t, _ in _INFERENCE]
    for i, (dtype, holds) in enumerate(_INFERENCE):
        if holds(text) and (previous is None or previous in order[:i + 1]):
            return dtype
    return dtypes.string


def _infer_column_defaults(names, num_cols, field_delim, use_quote_delim, na_value, header,
                           num_rows, select):
    columns = select if select is not None else range(num_cols)
    inferred = [None] * len(columns)
    seen = 0
    for path in names:
        with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
            rows = _csv_reader(f, field_delim, use_quote_delim)
            if header:
                next(rows, None)
            for row in rows:
                if num_rows is not None and seen >= num_rows:
                    break
                if len(row) != num_cols:
                    raise ValueError("Problem inferring types: CSV row has different number "
                                     "of fields than expected (%s, line %d: %d, not %d)."
                                     % (path, rows.line_num, len(row), num_cols))
                seen += 1
                for j, c in enumerate(columns):
                    inferred[j] = _infer_type(row[c], na_value, inferred[j])
    inferred = [t or dtypes.string for t in inferred]
    return [[""] if t == dtypes.string else np.zeros([1], t.as_numpy_dtype) for t in inferred]


def _shuffle_and_repeat(dataset, num_epochs, shuffle, buffer_size, seed):
    if num_epochs != 1 and shuffle:
        return dataset.shuffle(buffer_size, seed).repeat(num_epochs)
    if shuffle:
        return dataset.shuffle(buffer_size, seed)
    if num_epochs != 1:
        return dataset.repeat(num_epochs)
    return dataset


class _Restructured(_UnaryDataset):
    """The same flat components packed as `structure` (no function run)."""

    def __init__(self, input_dataset, structure):
        super().__init__(input_dataset)
        self._structure = structure

    def _reader(self, ctx):
        return self._input._reader(ctx)

    def _cardinality(self, ctx):
        return self._input._cardinality(ctx)


def _features_and_label(dataset, column_names, label_name):
    """Batches of columns as (features dict, label) or a features dict, as TF's map_fn."""
    features = collections.OrderedDict((n, i) for i, n in enumerate(column_names))
    if label_name is None:
        structure = features
        order = sorted(column_names)
    else:
        features.pop(label_name)
        structure = (features, 0)
        order = sorted(features) + [label_name]
    index = {n: i for i, n in enumerate(column_names)}
    picked = _Picked(dataset, [index[n] for n in order])
    return _Restructured(picked, structure)


class _Picked(_UnaryDataset):
    """Components reordered: component k is the input's component indices[k]."""

    def __init__(self, input_dataset, indices):
        super().__init__(input_dataset)
        self._indices = list(indices)
        self._structure = tuple(range(len(indices)))
        self._specs = [input_dataset._specs[i] for i in indices]

    def _reader(self, ctx):
        for element in self._input._reader(ctx):
            yield tuple(element[i] for i in self._indices)

    def _cardinality(self, ctx):
        return self._input._cardinality(ctx)


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                     label_name=None, select_columns=None, field_delim=",",
                     use_quote_delim=True, na_value="", header=True, num_epochs=None,
                     shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=1, sloppy=False,
                     num_rows_for_inference=100, compression_type=None, ignore_errors=False):
    """Batches of CSV records as (features dict, label) (or a features dict without
    label_name), as TF 1.15's make_csv_dataset: column names from the header unless given,
    types inferred from the first num_rows_for_inference rows unless column_defaults are
    given, files in random order and records shuffled unless shuffle=False, repeated
    num_epochs times (None: without end, with full batches only). num_parallel_reads > 1
    reads files in turn (interleave); prefetch_buffer_size and sloppy change nothing here."""
    names = _file_names(file_pattern)
    if column_names is None:
        if not header:
            raise ValueError("Cannot infer column names without a header line.")
        column_names = _infer_column_names(names, field_delim, use_quote_delim)
    column_names = list(column_names)
    if len(column_names) != len(set(column_names)):
        raise ValueError("Cannot have duplicate column names.")
    if select_columns is not None:
        select_columns = _select_indices(list(select_columns), column_names)
    if column_defaults is not None:
        column_defaults = list(column_defaults)  # a DType: a required column, as CsvDataset
    else:
        column_defaults = _infer_column_defaults(
            names, len(column_names), field_delim, use_quote_delim, na_value, header,
            num_rows_for_inference, select_columns)
    if select_columns is not None and len(column_defaults) != len(select_columns):
        raise ValueError("If specified, column_defaults and select_columns must have same "
                         "length.")
    if select_columns is not None and len(column_names) > len(select_columns):
        column_names = [column_names[i] for i in select_columns]
    if label_name is not None and label_name not in column_names:
        raise ValueError("`label_name` provided must be one of the columns (%s), not %r."
                         % (", ".join(column_names), label_name))
    if len(column_names) != len(column_defaults):
        raise ValueError("make_csv_dataset: %d column names but %d column defaults"
                         % (len(column_names), len(column_defaults)))

    def file_to_dataset(filename):
        ds = CsvDataset(filename, column_defaults, compression_type=compression_type,
                        header=header, field_delim=field_delim, use_quote_delim=use_quote_delim,
                        na_value=na_value, select_cols=select_columns)
        if ignore_errors:
            from shardflow.data.filtering import IgnoreErrorsDataset
            ds = IgnoreErrorsDataset(ds)
        return ds

    files = Dataset.from_tensor_slices(np.array([n.encode() for n in names], dtype=object))
    if shuffle:
        files = files.shuffle(len(names), shuffle_seed)
    dataset = files.interleave(file_to_dataset, cycle_length=num_parallel_reads or 1)
    dataset = _shuffle_and_repeat(dataset, num_epochs, shuffle, shuffle_buffer_size,
                                  shuffle_seed)
    dataset = dataset.batch(batch_size, drop_remainder=num_epochs is None)
    return _features_and_label(dataset, column_names, label_name)


# ---- Example records ----------------------------------------------------------------------


def _feature_dict(features, what):
    if not isinstance(features, dict) or not features:
        raise TypeError("%s takes a non-empty dict of features, not %r" % (what, features))


def parse_example_dataset(features, num_parallel_calls=1):
    """For Dataset.apply on a dataset of string vectors (batches of serialized Examples):
    sf.parse_example(batch, features) of each, a dict of tensors (SparseTensors for
    VarLenFeature and SparseFeature)."""
    _feature_dict(features, "parse_example_dataset")

    def apply(dataset):
        from shardflow.parsing_ops import parse_example
        specs = dataset._specs
        if len(specs) != 1 or specs[0][0] != dtypes.string or \
                specs[0][1].ndims not in (1, None):
            raise TypeError("Input dataset should be a dataset of vectors of strings (batches "
                            "of serialized Examples), not %r" % (dataset.output_types,))
        return dataset.map(lambda serialized: parse_example(serialized, features))
    return apply


def make_batched_features_dataset(file_pattern, batch_size, features, reader=None,
                                  label_key=None, reader_args=None, num_epochs=None,
                                  shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                                  prefetch_buffer_size=None, reader_num_threads=1,
                                  parser_num_threads=1, sloppy_ordering=False,
                                  drop_final_batch=False):
    """Batches of parsed Examples read from the files matching file_pattern (reader: default
    TFRecordDataset), as a features dict, or (features, label) with label_key, as TF 1.15's
    make_batched_features_dataset. Files in random order and records shuffled unless
    shuffle=False; repeated num_epochs times (None: without end, full batches only)."""
    from shardflow.data.sources import TFRecordDataset
    _feature_dict(features, "make_batched_features_dataset")
    if label_key is not None and label_key not in features:
        raise ValueError("The `label_key` provided (%r) must be one of the `features` keys."
                         % (label_key,))
    reader = reader or TFRecordDataset
    reader_args = list(reader_args or [])
    dataset = Dataset.list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed)
    dataset = dataset.interleave(lambda filename: reader(filename, *reader_args),
                                 cycle_length=reader_num_threads or 1)
    if [d for d, _ in dataset._specs] == [dtypes.string, dtypes.string]:
        dataset = dataset.map(lambda _, v: v)
    dataset = _shuffle_and_repeat(dataset, num_epochs, shuffle, shuffle_buffer_size,
                                  shuffle_seed)
    dataset = dataset.batch(batch_size, drop_remainder=drop_final_batch or num_epochs is None)
    dataset = dataset.apply(parse_example_dataset(features, parser_num_threads))
    if label_key is not None:
        dataset = dataset.map(lambda x: (x, x.pop(label_key)))
    return dataset
