"""TF1's string ops: tf.decode_csv, tf.as_string, tf.string_to_number, tf.string_join,
tf.substr, tf.regex_replace, tf.string_split, tf.string_to_hash_bucket_fast / _strong (and
tf.string_to_hash_bucket), tf.strings.* (join, split, length, lower, upper, strip, to_number,
to_hash_bucket*, regex_full_match; format is shardflow/string_format.py's), tf.reduce_join,
and the file ops tf.read_file, tf.write_file and tf.matching_files.

Example (a CSV input pipeline)::

    lines = sf.data.TextLineDataset("train.csv").skip(1)
    def parse(line):
        x1, x2, label = sf.decode_csv(line, record_defaults=[[0.0], [0.0], [0]])
        return sf.stack([x1, x2]), label
    features, labels = lines.map(parse).batch(32).make_one_shot_iterator().get_next()

The engine has no string kernels beyond moving strings around, so each op is a PyFunc node
(shardflow/script_ops.py) running NumPy/Python on the client: they work in graphs run by this
process and inside tf.data map functions, not on a `shardflow server` process. Bad input (a
field that is not a number, a wrong number of columns) fails the step with
InvalidArgumentError naming the field.
"""

import hashlib
import re
import struct
import types

import numpy as np

from shardflow import dtypes, errors
from shardflow.framework import convert_to_tensor
from shardflow.script_ops import py_func
from shardflow.string_format import string_format


def _strings(x):
    t = convert_to_tensor(x, dtype=dtypes.string) if not hasattr(x, "dtype") else x
    if t.dtype != dtypes.string:
        raise TypeError("expected a string tensor, got %s" % t.dtype.name)
    return t


def _bytes(v):
    return v if isinstance(v, bytes) else str(v).encode()


def _map(fn, x, out_dtype, name, shape_same=True):
    """An element-wise op over a string tensor."""
    x = _strings(x)
    np_dtype = object if out_dtype == dtypes.string else out_dtype.as_numpy_dtype

    def run(a):
        a = np.asarray(a, dtype=object)
        flat = [fn(v) for v in a.reshape(-1)]
        return np.array(flat, dtype=np_dtype).reshape(a.shape)
    out = py_func(run, [x], out_dtype, name=name)
    if shape_same:
        out.set_shape(x.shape)
    return out


_REQUIRED = object()   # a column without a default (record_defaults [] or an empty tensor)


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """One tensor per column of the CSV `records` (a string tensor of lines), typed and
    defaulted by record_defaults: [[0.0], [0], [""], []] or typed constants such as
    tf.constant([0], tf.int64) (an empty default, [] (float32) or tf.constant([], tf.int32):
    the column is required, and a record without it fails the step)."""
    records = _strings(records)
    defaults = []
    from shardflow.framework import Tensor
    from shardflow.tensor_util import constant_value
    for i, d in enumerate(record_defaults):
        if isinstance(d, Tensor):
            # TF's form: a typed tensor, a scalar default or an empty vector for a required
            # column (tf.constant([], tf.int32)).
            known = constant_value(d)
            if known is None:
                raise ValueError("decode_csv: record_defaults[%d] must be known when the graph "
                                 "is built (a constant), got %s" % (i, d.name))
            known = np.asarray(known).reshape(-1)
            if known.size == 0:
                defaults.append((d.dtype, _REQUIRED))
                continue
            value = known[0]
            dt = d.dtype
            defaults.append((dt, _bytes(value) if dt == dtypes.string else
                             (float(value) if dt.is_floating else int(value))))
            continue
        if isinstance(d, (list, tuple)) and len(d) == 0:
            defaults.append((dtypes.float32, _REQUIRED))   # [] is an empty float32, as TF's
            continue
        value = d[0] if isinstance(d, (list, tuple)) else np.asarray(d).reshape(-1)[0]
        if isinstance(value, (bytes, str, np.bytes_, np.str_)):
            defaults.append((dtypes.string, _bytes(value)))
        elif isinstance(value, (float, np.floating)):
            # Python floats are float32, as TF1 makes them; a NumPy float64 stays float64.
            defaults.append((dtypes.float64 if isinstance(value, np.float64) else dtypes.float32,
                             float(value)))
        elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            defaults.append((dtypes.int64 if isinstance(value, np.int64) else dtypes.int32,
                             int(value)))
        else:
            raise TypeError("decode_csv: record_defaults[%d] = %r: a number, a string or []"
                            % (i, d))
    cols = list(select_cols) if select_cols is not None else None
    quote = '"' if use_quote_delim else None
    na = _bytes(na_value)

    def split(line):
        text = line.decode()
        if quote is None:
            return [f.encode() for f in text.split(field_delim)]
        import csv
        return [f.encode() for f in next(csv.reader([text], delimiter=field_delim,
                                                    quotechar=quote))] if text else [b""]

    def run(lines):
        lines = np.asarray(lines, dtype=object)
        outs = [np.empty(lines.shape, dtype=object if dt == dtypes.string else
                         dt.as_numpy_dtype) for dt, _ in defaults]
        for idx, line in np.ndenumerate(lines):
            fields = split(_bytes(line))
            if cols is not None:
                if max(cols) >= len(fields):
                    raise errors.InvalidArgumentError(
                        "decode_csv: record %r has %d fields; select_cols asks for column %d"
                        % (line, len(fields), max(cols)))
                fields = [fields[c] for c in cols]
            if len(fields) != len(defaults):
                raise errors.InvalidArgumentError(
                    "decode_csv: expect %d fields but have %d in record %r"
                    % (len(defaults), len(fields), line))
            for c, (field, (dt, default)) in enumerate(zip(fields, defaults)):
                if field == b"" or field == na:
                    if default is _REQUIRED:
                        raise errors.InvalidArgumentError(
                            "decode_csv: field %d is required but missing in record %r"
                            % (c, line))
                    outs[c][idx] = default
                elif dt == dtypes.string:
                    outs[c][idx] = field
                else:
                    try:
                        outs[c][idx] = float(field) if dt.is_floating else int(field)
                    except ValueError:
                        raise errors.InvalidArgumentError(
                            "decode_csv: field %d of record %r is %r, not a %s"
                            % (c, line, field, dt.name)) from None
        return outs
    out = py_func(run, [records], [dt for dt, _ in defaults], name=name or "DecodeCSV")
    for t in out:
        t.set_shape(records.shape)
    return out


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",
              name=None):  # noqa: A002
    """Each number as a string (tf.as_string)."""
    x = convert_to_tensor(input)

    def fmt(v):
        if isinstance(v, (float, np.floating)):
            if precision >= 0:
                s = ("%." + str(precision) + ("e" if scientific else "f")) % v
            else:
                s = "%g" % v if shortest else "%f" % v
        elif isinstance(v, (bool, np.bool_)):
            s = "true" if v else "false"
        else:
            s = str(v)
        if width > 0:
            s = s.rjust(width, fill or " ")
        return s.encode()

    def run(a):
        a = np.asarray(a)
        return np.array([fmt(v) for v in a.reshape(-1)], dtype=object).reshape(a.shape)
    out = py_func(run, [x], dtypes.string, name=name or "AsString")
    out.set_shape(x.shape)
    return out


def string_to_number(string_tensor, out_type=dtypes.float32, name=None):
    """Each string parsed as a number of out_type (InvalidArgumentError when one is not)."""
    out_type = dtypes.as_dtype(out_type)

    def parse(v):
        try:
            return float(v) if out_type.is_floating else int(v)
        except ValueError:
            raise errors.InvalidArgumentError("StringToNumberOp could not correctly convert "
                                              "string: %r" % (v,)) from None
    return _map(parse, string_tensor, out_type, name or "StringToNumber")


def string_join(inputs, separator="", name=None):
    """The element-wise concatenation of string tensors (scalars broadcast)."""
    inputs = [_strings(x) for x in inputs]
    sep = _bytes(separator)

    def run(*parts):
        parts = np.broadcast_arrays(*[np.asarray(p, dtype=object) for p in parts])
        out = np.empty(parts[0].shape, dtype=object)
        for idx in np.ndindex(*out.shape):
            out[idx] = sep.join(_bytes(p[idx]) for p in parts)
        return out
    return py_func(run, inputs, dtypes.string, name=name or "StringJoin")


def reduce_join(inputs, axis=None, keep_dims=False, separator="", name=None,
                reduction_indices=None, keepdims=None):
    """Joins the strings along `axis` (all when None)."""
    x = _strings(inputs)
    axis = reduction_indices if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    sep = _bytes(separator)

    def run(a):
        a = np.asarray(a, dtype=object)
        if axis is None:
            out = np.array(sep.join(_bytes(v) for v in a.reshape(-1)), dtype=object)
            return out.reshape([1] * a.ndim) if keep else out
        out = np.apply_along_axis(lambda r: sep.join(_bytes(v) for v in r), int(axis), a)
        out = np.asarray(out, dtype=object)
        return np.expand_dims(out, int(axis)) if keep else out
    return py_func(run, [x], dtypes.string, name=name or "ReduceJoin")


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002
    """input[pos:pos + len] of each string (Python ints pos and len)."""
    p, n = int(pos), int(len)
    return _map(lambda v: _bytes(v)[p:p + n], input, dtypes.string, name or "Substr")


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Each string with the matches of `pattern` (RE2 syntax; Python's re here) replaced."""
    rx = re.compile(_bytes(pattern))
    rewrite = re.sub(rb"\\(\d)", rb"\\g<\1>", _bytes(rewrite))
    count = 0 if replace_global else 1
    return _map(lambda v: rx.sub(rewrite, _bytes(v), count=count), input, dtypes.string,
                name or "RegexReplace")


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string matches `pattern`."""
    rx = re.compile(_bytes(pattern))
    return _map(lambda v: rx.fullmatch(_bytes(v)) is not None, input, dtypes.bool_,
                name or "RegexFullMatch")


def string_split(source, delimiter=" ", skip_empty=True, sep=None):
    """The tokens of each string of the vector `source`, as a SparseTensor [rows, max tokens]
    (tf.string_split; each character of `delimiter` splits, as TF1's)."""
    from shardflow.sparse_tensor import SparseTensor
    source = _strings(source)
    delim = _bytes(sep if sep is not None else delimiter)

    def run(a):
        a = np.asarray(a, dtype=object).reshape(-1)
        indices, values, width = [], [], 0
        for r, s in enumerate(a):
            s = _bytes(s)
            if delim:
                tokens = re.split(b"[" + re.escape(delim) + b"]", s)
            else:
                tokens = [s[i:i + 1] for i in range(len(s))]
            if skip_empty:
                tokens = [t for t in tokens if t]
            for c, t in enumerate(tokens):
                indices.append([r, c])
                values.append(t)
            width = max(width, len(tokens))
        return [np.array(indices, dtype=np.int64).reshape(-1, 2),
                np.array(values, dtype=object), np.array([len(a), width], dtype=np.int64)]
    idx, vals, shape = py_func(run, [source], [dtypes.int64, dtypes.string, dtypes.int64],
                               name="StringSplit")
    idx.set_shape([None, 2])
    vals.set_shape([None])
    shape.set_shape([2])
    return SparseTensor(idx, vals, shape)


def _length(input, name=None, unit="BYTE"):  # noqa: A002
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError("strings.length: unit BYTE or UTF8_CHAR")
    fn = (lambda v: len(_bytes(v))) if unit == "BYTE" else (lambda v: len(_bytes(v).decode()))
    return _map(fn, input, dtypes.int32, name or "StringLength")


def _split_v2(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """tf.strings.split (TF 1.14+): whitespace runs when sep is None; a SparseTensor here."""
    if sep is None:
        return string_split(input, " \t\n\r", skip_empty=True)
    return string_split(input, sep, skip_empty=False)


def _hash_buckets(input, num_buckets, key, name):  # noqa: A002
    num_buckets = int(num_buckets)
    if num_buckets < 1:
        raise ValueError("string_to_hash_bucket: num_buckets must be >= 1, got %d" % num_buckets)

    def bucket(v):
        digest = hashlib.blake2b(_bytes(v), digest_size=8, key=key).digest()
        return int.from_bytes(digest, "little") % num_buckets
    return _map(bucket, input, dtypes.int64, name)


def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """Each string hashed to an int64 bucket in [0, num_buckets), of the input's shape (TF1's
    tf.string_to_hash_bucket_fast, tf.strings.to_hash_bucket_fast). The hash is the first 8
    bytes, little-endian, of the BLAKE2b digest of the string's bytes, modulo num_buckets: the
    same for a string in every run and process (and the bucket sf.lookup tables put an
    out-of-vocabulary string in), but not TensorFlow's FarmHash Fingerprint64, so bucket
    numbers differ from TensorFlow's."""
    return _hash_buckets(input, num_buckets, b"", name or "StringToHashBucketFast")


def string_to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """As string_to_hash_bucket_fast with a keyed hash (TF1's tf.string_to_hash_bucket_strong,
    tf.strings.to_hash_bucket_strong): `key` is two non-negative integers (TF's SipHash key),
    whose 16 bytes (little-endian uint64s) key BLAKE2b here, so that the buckets cannot be
    predicted without the key. Bucket numbers differ from TensorFlow's SipHash ones."""
    if len(key) != 2:
        raise ValueError("string_to_hash_bucket_strong: key must have size 2, got %d"
                         % len(key))
    if not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0
               for k in key):
        raise ValueError("string_to_hash_bucket_strong: key must be two non-negative "
                         "integers, got %r" % (key,))
    packed = struct.pack("<QQ", int(key[0]) & (2 ** 64 - 1), int(key[1]) & (2 ** 64 - 1))
    return _hash_buckets(input, num_buckets, packed, name or "StringToHashBucketStrong")


def string_to_hash_bucket(string_tensor=None, num_buckets=None, name=None,
                          input=None):  # noqa: A002
    """TF1's tf.string_to_hash_bucket (tf.strings.to_hash_bucket), which TF computes with an
    older hash than the _fast version: here the same hash as string_to_hash_bucket_fast (see
    there; bucket numbers differ from TensorFlow's). `input` is TF 1.15's other name for
    string_tensor."""
    if input is not None:
        if string_tensor is not None:
            raise ValueError("string_to_hash_bucket: give string_tensor or input, not both")
        string_tensor = input
    if string_tensor is None or num_buckets is None:
        raise TypeError("string_to_hash_bucket needs string_tensor and num_buckets")
    return _hash_buckets(string_tensor, num_buckets, b"", name or "StringToHashBucket")


strings = types.ModuleType("shardflow.strings", "TF1's tf.strings (shardflow/string_ops.py).")
strings.__dict__.update({
    "join": string_join, "length": _length, "reduce_join": reduce_join, "format": string_format,
    "regex_full_match": regex_full_match, "regex_replace": regex_replace, "split": _split_v2,
    "substr": substr, "to_number": string_to_number, "as_string": as_string,
    "to_hash_bucket": string_to_hash_bucket, "to_hash_bucket_fast": string_to_hash_bucket_fast,
    "to_hash_bucket_strong": string_to_hash_bucket_strong,
    "lower": lambda input, name=None, encoding="": _map(  # noqa: A006
        lambda v: _bytes(v).lower(), input, dtypes.string, name or "StringLower"),
    "upper": lambda input, name=None, encoding="": _map(  # noqa: A006
        lambda v: _bytes(v).upper(), input, dtypes.string, name or "StringUpper"),
    "strip": lambda input, name=None: _map(  # noqa: A006
        lambda v: _bytes(v).strip(), input, dtypes.string, name or "StringStrip"),
})

__all__ = ["as_string", "decode_csv", "matching_files", "read_file", "reduce_join",
           "regex_full_match", "regex_replace", "string_join", "string_split", "string_to_number",
           "string_to_hash_bucket", "string_to_hash_bucket_fast", "string_to_hash_bucket_strong",
           "strings", "substr", "write_file"]


def _path(filename, what):
    value = np.asarray(filename, dtype=object)
    if value.shape != ():
        raise errors.InvalidArgumentError("%s: filename must be a scalar, got shape %s"
                                          % (what, list(value.shape)))
    return _bytes(value.item()).decode("utf-8", "surrogateescape")


def read_file(filename, name=None):
    """The whole contents of the file named by the scalar string `filename`, as a scalar string
    (TF1's tf.read_file and tf.io.read_file), read each time the op runs. A missing or unreadable
    file fails the step with NotFoundError (PermissionDenied...) naming the file. Example: an
    input pipeline of PNG files::

        files = sf.data.Dataset.from_tensor_slices(paths)
        images = files.map(lambda f: sf.image.decode_png(sf.read_file(f), channels=1))
    """
    def run(filename_value):
        path = _path(filename_value, "read_file")
        try:
            with open(path, "rb") as f:
                return np.array(f.read(), dtype=object)
        except FileNotFoundError:
            raise errors.NotFoundError("read_file: %s: no such file" % path) from None
        except PermissionError:
            raise errors.PermissionDeniedError("read_file: %s: permission denied" % path) from None
        except OSError as e:
            raise errors.UnknownError("read_file: %s: %s" % (path, e.strerror or e)) from None
    out = py_func(run, [_strings(filename)], dtypes.string, stateful=True,
                  name=name or "ReadFile")
    out.set_shape([])
    return out


def write_file(filename, contents, name=None):
    """Writes the scalar string `contents` to the file `filename` (replacing it; the directory
    must exist), as TF1's tf.write_file / tf.io.write_file; returns the Operation. Errors name
    the file."""
    def run(filename_value, contents_value):
        path = _path(filename_value, "write_file")
        data = np.asarray(contents_value, dtype=object)
        if data.shape != ():
            raise errors.InvalidArgumentError("write_file: contents must be a scalar, got shape %s"
                                              % list(data.shape))
        try:
            with open(path, "wb") as f:
                f.write(_bytes(data.item()))
        except FileNotFoundError:
            raise errors.NotFoundError("write_file: %s: the directory does not exist"
                                       % path) from None
        except PermissionError:
            raise errors.PermissionDeniedError("write_file: %s: permission denied"
                                               % path) from None
        except OSError as e:
            raise errors.UnknownError("write_file: %s: %s" % (path, e.strerror or e)) from None
        return []
    return py_func(run, [_strings(filename), _strings(contents)], [], stateful=True,
                   name=name or "WriteFile")


def matching_files(pattern, name=None):
    """The sorted names of the files that match `pattern` (a glob: ``*``, ``?``, ``[...]``;
    a string, or a vector of them whose matches are merged), as a string vector, as TF1's
    tf.matching_files / tf.io.matching_files. The file system is read each time the op runs;
    no match gives an empty vector (tf.data.Dataset.list_files, which globs when the graph is
    built, refuses that). Local paths only, as sf.gfile.

    Example: ``files = sf.matching_files(os.path.join(data_dir, "train-*.tfrecord"))``.
    """
    from shardflow import gfile

    def run(pattern_value):
        patterns = np.asarray(pattern_value, dtype=object)
        if patterns.ndim > 1:
            raise errors.InvalidArgumentError("matching_files: pattern must be a scalar or a "
                                              "vector, got shape %s" % list(patterns.shape))
        paths = [_bytes(p).decode("utf-8", "surrogateescape") for p in patterns.reshape(-1)]
        found = gfile.Glob(paths)
        out = np.empty(len(found), dtype=object)
        out[:] = [path.encode("utf-8", "surrogateescape") for path in found]
        return out
    out = py_func(run, [_strings(pattern)], dtypes.string, stateful=True,
                  name=name or "MatchingFiles")
    out.set_shape([None])
    return out
