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

import re
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


# AsString's fill characters: printf flags ("-" left-justifies, "0" pads with zeros after the
# sign, "+" and " " put a sign or a space before non-negative numbers, "#" the alternate form).
_AS_STRING_FILLS = ("", " ", "+", "-", "0", "#")


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",
              name=None):  # noqa: A002
    """Each number as a string (tf.as_string), formatted by printf as TF's AsString: the
    format is "%" + fill + width (when width > -1) + "." + precision (when precision > -1) +
    "d" for integers, or "g" (shortest) / "e" (scientific) / "f" for floats; bools are
    "true"/"false". Example: as_string(-5, width=4, fill="0") is "-005", as_string(5,
    width=3, fill="-") is "5  ", as_string(12.0, scientific=True) is "1.200000e+01".
    Options TF refuses (precision, scientific or shortest for integers, both scientific and
    shortest, a fill that is not one of "", " ", "+", "-", "0", "#") raise
    InvalidArgumentError when the graph is built."""
    x = convert_to_tensor(input)
    floating = x.dtype.is_floating
    if not floating and (scientific or shortest):
        raise errors.InvalidArgumentError("as_string: scientific and shortest format not "
                                          "supported for datatype %s" % x.dtype.name)
    if not floating and precision > -1:
        raise errors.InvalidArgumentError("as_string: precision not supported for datatype %s"
                                          % x.dtype.name)
    if scientific and shortest:
        raise errors.InvalidArgumentError("as_string: Cannot select both scientific and "
                                          "shortest notation")
    if fill not in _AS_STRING_FILLS:
        raise errors.InvalidArgumentError(
            "as_string: Fill argument not supported: %r; use one of %s (printf flags)"
            % (fill, ", ".join(repr(f) for f in _AS_STRING_FILLS)))
    spec = "%" + ("%s%d" % (fill, width) if width > -1 else "")
    spec += ".%d" % precision if precision > -1 else ""
    spec += ("g" if shortest else "e" if scientific else "f") if floating else "d"

    def fmt(v):
        if isinstance(v, (bool, np.bool_)):
            return b"true" if v else b"false"
        return (spec % (float(v) if floating else int(v))).encode()

    def run(a):
        a = np.asarray(a)
        return np.array([fmt(v) for v in a.reshape(-1)], dtype=object).reshape(a.shape)
    out = py_func(run, [x], dtypes.string, name=name or "AsString")
    out.set_shape(x.shape)
    return out


# What TF's StringToNumber accepts (tensorflow/core/platform/numbers.cc): integers are
# safe_strto32/64 (ASCII whitespace around an optional "-" and decimal digits, no "+"); floats
# are double-conversion's StringToDouble with leading/trailing whitespace, hex ("0x1A") and
# case-insensitive "inf"/"nan", and strings of 32 bytes or more are refused.
_INT_SYNTAX = re.compile(rb"\s*-?[0-9]+\s*")
_FLOAT_SYNTAX = re.compile(
    rb"\s*[+-]?(?:inf|nan|0x[0-9a-f]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?)\s*",
    re.IGNORECASE)
_FLOAT_MAX_BYTES = 31


def _parse_number(text, out_type):
    """`text` (bytes) as a Python number of out_type, or None where TF refuses it."""
    if out_type.is_floating:
        if not text or len(text) > _FLOAT_MAX_BYTES:
            return None
        if not text.strip():
            return 0.0   # double-conversion's empty-string value, as TF
        if not _FLOAT_SYNTAX.fullmatch(text):
            return None
        body = text.strip().lower()
        sign = -1.0 if body.startswith(b"-") else 1.0
        digits = body.lstrip(b"+-")
        return sign * int(digits, 16) if digits.startswith(b"0x") else float(body)
    if not _INT_SYNTAX.fullmatch(text):
        return None
    value = int(text)
    info = np.iinfo(out_type.as_numpy_dtype)
    return value if info.min <= value <= info.max else None


def string_to_number(string_tensor=None, out_type=dtypes.float32, name=None,
                     input=None):  # noqa: A002
    """Each string parsed as a number of out_type, as TF's StringToNumber: a value outside
    out_type's range ("3000000000" for int32), or Python-only syntax ("1_000", "+5" for ints,
    "infinity"), fails the step with InvalidArgumentError. `input`: TF1's other name for
    string_tensor."""
    if input is not None:
        if string_tensor is not None:
            raise ValueError("string_to_number: give string_tensor or input, not both")
        string_tensor = input
    if string_tensor is None:
        raise ValueError("string_to_number needs string_tensor (or input)")
    out_type = dtypes.as_dtype(out_type)

    def parse(v):
        value = _parse_number(_bytes(v), out_type)
        if value is None:
            raise errors.InvalidArgumentError("StringToNumberOp could not correctly convert "
                                              "string: %r (to %s)" % (v, out_type.name))
        return value
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


def _is_trail_byte(b):
    return b & 0xC0 == 0x80


def _utf8_forward(s, count, at):
    """(the byte position `count` UTF-8 characters after byte `at` of `s`, capped at its end;
    whether it had that many), as TF's ForwardNUTF8CharPositions."""
    counted = 0
    while counted < count and at < len(s):
        at += 1
        while at < len(s) and _is_trail_byte(s[at]):
            at += 1
        counted += 1
    return at, counted == count


def _utf8_back(s, count, at):
    """As _utf8_forward, backwards from byte `at` (BackNUTF8CharPositions)."""
    counted = 0
    while counted < count and at > 0:
        at -= 1
        while at > 0 and _is_trail_byte(s[at]):
            at -= 1
        counted += 1
    return at, counted == count


def _substr_one(s, pos, length, utf8):
    """s[pos:pos + length] as TF's Substr kernel, or None where pos is out of range."""
    if not utf8:
        start = pos + len(s) if pos < 0 else pos
        if not 0 <= start <= len(s):
            return None
        return s[start:] if length < 0 else s[start:start + length]   # size_t(length < 0)
    if pos >= 0:
        start, ok = _utf8_forward(s, pos, 0)
        if not ok:
            return None
        return s[start:_utf8_forward(s, length, start)[0]]
    skip = max(0, -pos - length)
    end, ok = _utf8_back(s, skip, len(s))
    if not ok:
        return None
    start, ok = _utf8_back(s, -pos - skip, end)
    return s[start:end] if ok else None


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002
    """The substrings input[pos:pos + len] (tf.substr, tf.strings.substr), as TF's Substr:
    `pos` and `len` are integers or integer tensors of one shape (scalars, the input's shape,
    or one that broadcasts with it); a negative pos counts from the end; a pos outside
    [-size, size] fails the step with InvalidArgumentError; unit "UTF8_CHAR" counts UTF-8
    characters instead of bytes. Example: ``substr(s, 1, 2, unit="UTF8_CHAR")`` of "héllo" is
    "él"."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError("substr: unit must be 'BYTE' or 'UTF8_CHAR', got %r" % (unit,))
    from shardflow.framework import Tensor
    x = _strings(input)
    given = [v.dtype for v in (pos, len) if isinstance(v, Tensor)]
    pos_t, len_t = (v if isinstance(v, Tensor) else convert_to_tensor(
        v, dtype=given[0] if given else None) for v in (pos, len))
    for what, t in (("pos", pos_t), ("len", len_t)):
        if not t.dtype.is_integer:
            raise TypeError("substr: %s must be an integer tensor, got %s" % (what, t.dtype.name))
    if not pos_t.shape.is_compatible_with(len_t.shape):
        raise ValueError("substr: pos and len should have the same shape, got %s vs. %s"
                         % (pos_t.shape, len_t.shape))
    utf8 = unit == "UTF8_CHAR"

    def run(a, p, n):
        a, p, n = (np.asarray(v, dtype=object) for v in (a, p, n))
        if p.shape != n.shape:
            raise errors.InvalidArgumentError("substr: pos and len should have the same "
                                              "shape, got %s vs. %s" % (p.shape, n.shape))
        try:
            a, p, n = np.broadcast_arrays(a, p, n)
        except ValueError:
            raise errors.InvalidArgumentError("substr: Incompatible shapes: %s vs. %s"
                                              % (a.shape, p.shape)) from None
        out = np.empty(a.shape, dtype=object)
        for i, idx in enumerate(np.ndindex(*a.shape)):
            piece = _substr_one(_bytes(a[idx]), int(p[idx]), int(n[idx]), utf8)
            if piece is None:
                raise errors.InvalidArgumentError(
                    "substr: pos %d out of range for string %r at index %d"
                    % (int(p[idx]), _bytes(a[idx]), i))
            out[idx] = piece
        return out
    out = py_func(run, [x, pos_t, len_t], dtypes.string, name=name or "Substr")
    from shardflow.core_extras import broadcast_static_shape
    out.set_shape(broadcast_static_shape(x.shape, pos_t.shape))
    return out


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Each string with the matches of `pattern` replaced by `rewrite`, as TF1's: RE2 syntax
    (a C++ kernel with RE2, linear in the string's length), ``\\1`` .. ``\\9`` in `rewrite`
    name the groups and ``\\0`` the whole match; only the first match unless
    `replace_global`. `pattern` and `rewrite` may be string tensors (scalars)."""
    from shardflow.ops import _out
    x = _strings(input)
    return _out("RegexReplace", [x, _strings(pattern), _strings(rewrite)],
                {"replace_global": bool(replace_global)}, name=name or "RegexReplace")


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string matches `pattern` (RE2 syntax, a C++ kernel with RE2)."""
    from shardflow.ops import _out
    return _out("RegexFullMatch", [_strings(input), _strings(pattern)],
                name=name or "RegexFullMatch")


def _split_to_sparse(source, tokenize, name):
    """A SparseTensor [rows, most tokens] of tokenize(bytes) of each string of `source`."""
    from shardflow.sparse_tensor import SparseTensor
    source = _strings(source)

    def run(a):
        a = np.asarray(a, dtype=object).reshape(-1)
        indices, values, width = [], [], 0
        for r, s in enumerate(a):
            tokens = tokenize(_bytes(s))
            for c, t in enumerate(tokens):
                indices.append([r, c])
                values.append(t)
            width = max(width, len(tokens))
        return [np.array(indices, dtype=np.int64).reshape(-1, 2),
                np.array(values, dtype=object), np.array([len(a), width], dtype=np.int64)]
    idx, vals, shape = py_func(run, [source], [dtypes.int64, dtypes.string, dtypes.int64],
                               name=name)
    idx.set_shape([None, 2])
    vals.set_shape([None])
    shape.set_shape([2])
    return SparseTensor(idx, vals, shape)


def string_split(source, sep=None, skip_empty=True, delimiter=None,
                 result_type="SparseTensor", name=None):
    """The tokens of each string of the vector `source`, as a SparseTensor [rows, max tokens]
    (TF1's tf.string_split: each character of `sep` splits, a space by default; `delimiter`
    is its older name). result_type='RaggedTensor' is refused: shardflow has no
    RaggedTensor."""
    if sep is not None and delimiter is not None:
        raise ValueError("string_split: give sep or delimiter, not both")
    if result_type != "SparseTensor":
        raise NotImplementedError("string_split: result_type %r; shardflow has no "
                                  "RaggedTensor, use result_type='SparseTensor'" % (result_type,))
    sep = sep if sep is not None else delimiter
    delim = _bytes(sep if sep is not None else " ")

    def tokenize(s):
        if delim:
            tokens = re.split(b"[" + re.escape(delim) + b"]", s)
        else:
            tokens = [s[i:i + 1] for i in range(len(s))]
        return [t for t in tokens if t] if skip_empty else tokens
    return _split_to_sparse(source, tokenize, name or "StringSplit")


def _length(input, name=None, unit="BYTE"):  # noqa: A002
    """The length of each string in bytes, or in UTF-8 characters (the bytes that are not
    continuation bytes, as TF: invalid UTF-8 is counted, not refused)."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError("strings.length: unit BYTE or UTF8_CHAR")
    if unit == "BYTE":
        return _map(lambda v: len(_bytes(v)), input, dtypes.int32, name or "StringLength")
    return _map(lambda v: sum(not _is_trail_byte(b) for b in _bytes(v)), input, dtypes.int32,
                name or "StringLength")


_WHITESPACE = b" \t\n\v\f\r"


def _split_v2_tokens(s, sep, maxsplit):
    """The pieces of `s` as TF's StringSplitV2 (Python's str.split; at most maxsplit splits
    when it is positive, none when it is 0)."""
    if maxsplit == 0:
        return [s]
    if sep:
        return s.split(sep, maxsplit if maxsplit > 0 else -1)
    pieces = []
    text = s.lstrip(_WHITESPACE)
    while text:
        end = next((i for i, b in enumerate(text) if b in _WHITESPACE), len(text))
        pieces.append(text[:end])
        text = text[end:].lstrip(_WHITESPACE)
        if len(pieces) == maxsplit:
            pieces.append(text)   # TF keeps the rest, an empty one too
            break
    return pieces


def _split_v2(input=None, sep=None, maxsplit=-1, result_type="SparseTensor",  # noqa: A002
              source=None, name=None):
    """tf.strings.split (TF 1.15's StringSplitV2, Python's str.split): `sep` is one whole
    separator ("xabyabz" split on "ab" is x, y, z) and empty pieces stay ("a,,b" on ",": a, "",
    b); without sep (None or "") runs of whitespace split and empty pieces go; at most
    `maxsplit` splits ("a,b,c" with maxsplit=1: a, "b,c"). Returns a SparseTensor [rows, most
    pieces] of a string vector; `source` is TF's other name for `input`."""
    if source is not None:
        if input is not None:
            raise ValueError("strings.split: give input or source, not both")
        input = source
    if result_type != "SparseTensor":
        raise NotImplementedError("strings.split: result_type %r; shardflow has no "
                                  "RaggedTensor, use result_type='SparseTensor'" % (result_type,))
    sep = _bytes(sep) if sep is not None else b""
    maxsplit = int(maxsplit)
    return _split_to_sparse(input, lambda s: _split_v2_tokens(s, sep, maxsplit),
                            name or "StringSplitV2")


def _hash_buckets(op_type, input, num_buckets, name, **attrs):  # noqa: A002
    """One of the engine's hash-bucket ops (TensorFlow's hash functions, kernels/cpu/
    string_hash_ops.cc) on a string tensor of any shape."""
    num_buckets = int(num_buckets)
    if num_buckets < 1:
        raise ValueError("string_to_hash_bucket: num_buckets must be >= 1, got %d" % num_buckets)
    input = convert_to_tensor(input)  # noqa: A001
    if input.dtype != dtypes.string:
        raise TypeError("%s needs a string tensor, got %s" % (op_type, input.dtype.name))
    from shardflow import ops
    return ops._out(op_type, [input], dict(attrs, num_buckets=num_buckets), name)


def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """Each string hashed to an int64 bucket in [0, num_buckets), of the input's shape (TF1's
    tf.string_to_hash_bucket_fast, tf.strings.to_hash_bucket_fast): FarmHash's
    Fingerprint64 of its bytes modulo num_buckets, TensorFlow's hash, so the buckets are
    TensorFlow's (["Hello", "TensorFlow", "2.x"] in 3 buckets: [0, 2, 2])."""
    return _hash_buckets("StringToHashBucketFast", input, num_buckets, name)


def string_to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """As string_to_hash_bucket_fast with TensorFlow's keyed hash (TF1's
    tf.string_to_hash_bucket_strong, tf.strings.to_hash_bucket_strong): SipHash-2-4 keyed by
    `key`, two non-negative integers (["Hello", "TF"], 3 buckets, key [1, 2]: [2, 0])."""
    if len(key) != 2:
        raise ValueError("string_to_hash_bucket_strong: key must have size 2, got %d"
                         % len(key))
    if not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0
               for k in key):
        raise ValueError("string_to_hash_bucket_strong: key must be two non-negative "
                         "integers, got %r" % (key,))
    # The attr holds int64s: a key word at or above 2^63 keeps its bits.
    words = [int(np.array(int(k) & (2 ** 64 - 1), np.uint64).view(np.int64)) for k in key]
    return _hash_buckets("StringToHashBucketStrong", input, num_buckets, name, key=words)


def string_to_hash_bucket(string_tensor=None, num_buckets=None, name=None,
                          input=None):  # noqa: A002
    """TF1's tf.string_to_hash_bucket (tf.strings.to_hash_bucket): TensorFlow's older Hash64
    of each string modulo num_buckets (["Hello", "TensorFlow", "2.x"] in 3: [2, 0, 1]).
    `input` is TF 1.15's other name for string_tensor."""
    if input is not None:
        if string_tensor is not None:
            raise ValueError("string_to_hash_bucket: give string_tensor or input, not both")
        string_tensor = input
    if string_tensor is None or num_buckets is None:
        raise TypeError("string_to_hash_bucket needs string_tensor and num_buckets")
    return _hash_buckets("StringToHashBucket", string_tensor, num_buckets, name)


def _change_case(input, encoding, method, name):  # noqa: A002
    """tf.strings.lower/upper: ASCII letters only (encoding ""), or every letter of the UTF-8
    text (encoding "utf-8"), as TF's StringLower/StringUpper."""
    if encoding not in ("", "utf-8"):
        raise ValueError("strings.%s: encoding must be '' or 'utf-8', got %r" % (method, encoding))
    if encoding:
        fn = (lambda v: getattr(_bytes(v).decode("utf-8"), method)().encode("utf-8"))
    else:
        fn = (lambda v: getattr(_bytes(v), method)())
    return _map(fn, input, dtypes.string, name)


# ---- string forms of TF1's generic ops (equal, add, where, zeros_like), which TF runs on
# strings; ops.py and array_ops.py dispatch here for string operands.

def is_string_operand(*values):
    """Whether one of `values` is a string tensor, a str/bytes, or a NumPy array of them."""
    for v in values:
        if isinstance(v, (str, bytes, np.bytes_, np.str_)):
            return True
        if isinstance(v, np.ndarray) and v.dtype.kind in "SU":
            return True
        dt = getattr(v, "dtype", None)
        if isinstance(dt, dtypes.DType) and dt == dtypes.string:
            return True
    return False


def _broadcast_strings(fn, inputs, out_dtype, name):
    """fn over the broadcast elements (bytes) of the string tensors `inputs`."""
    from shardflow.core_extras import broadcast_static_shape
    inputs = [_strings(v) for v in inputs]
    np_dtype = object if out_dtype == dtypes.string else out_dtype.as_numpy_dtype
    static = inputs[0].shape
    for t in inputs[1:]:
        static = broadcast_static_shape(static, t.shape)

    def run(*arrays):
        arrays = [np.asarray(a, dtype=object) for a in arrays]
        try:
            arrays = np.broadcast_arrays(*arrays)
        except ValueError:
            raise errors.InvalidArgumentError("%s: Incompatible shapes: %s" % (
                name, " vs. ".join(str(list(a.shape)) for a in arrays))) from None
        out = np.empty(arrays[0].shape, dtype=np_dtype)
        for idx in np.ndindex(*out.shape):
            out[idx] = fn(*[_bytes(a[idx]) for a in arrays])
        return out
    out = py_func(run, inputs, out_dtype, name=name)
    out.set_shape(static)
    return out


def string_equal(x, y, name=None):
    """x == y element-wise for strings (broadcast), as TF's Equal on strings."""
    return _broadcast_strings(lambda a, b: a == b, [x, y], dtypes.bool_, name or "Equal")


def string_not_equal(x, y, name=None):
    """x != y element-wise for strings (broadcast), as TF's NotEqual on strings."""
    return _broadcast_strings(lambda a, b: a != b, [x, y], dtypes.bool_, name or "NotEqual")


def string_add(x, y, name=None):
    """x + y for strings: their concatenation, element-wise (broadcast), as TF1's Add."""
    return _broadcast_strings(lambda a, b: a + b, [x, y], dtypes.string, name or "Add")


def string_select(condition, x, y, rows=False, name=None):
    """x where the bool `condition` is true, else y, for string tensors (tf.where /
    where_v2): broadcast, or with `rows` (TF1's Select) a vector condition picks whole rows
    of higher-rank x and y."""
    from shardflow.core_extras import broadcast_static_shape
    x, y = _strings(x), _strings(y)
    static = broadcast_static_shape(x.shape, y.shape)
    if not (rows and condition.shape.ndims == 1 and static.ndims not in (None, 1)):
        static = broadcast_static_shape(static, condition.shape)

    def run(c, a, b):
        c = np.asarray(c, dtype=bool)
        a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
        if rows and c.ndim == 1 and max(a.ndim, b.ndim) > 1:
            c = c.reshape(c.shape + (1,) * (max(a.ndim, b.ndim) - 1))
        try:
            c, a, b = np.broadcast_arrays(c, a, b)
        except ValueError:
            raise errors.InvalidArgumentError(
                "where: condition %s, x %s and y %s do not broadcast"
                % (list(c.shape), list(a.shape), list(b.shape))) from None
        out = np.empty(a.shape, dtype=object)
        out[...] = np.where(c, a, b)
        return out
    out = py_func(run, [condition, x, y], dtypes.string, name=name or "Select")
    out.set_shape(static)
    return out


def zeros_like_strings(tensor, dtype=None, name=None):
    """tf.zeros_like where `tensor` or `dtype` is a string: empty strings (or zeros of a
    numeric `dtype`) of `tensor`'s shape, as TF1's (the engine's ZerosLike is numeric)."""
    from shardflow import ops
    dtype = dtypes.as_dtype(dtype or tensor.dtype)
    zero = b"" if dtype == dtypes.string else 0
    out = ops.fill(ops.shape(tensor), np.asarray(zero, dtype=dtype.as_numpy_dtype), name=name)
    out.set_shape(tensor.shape)
    return out


strings = types.ModuleType("shardflow.strings", "TF1's tf.strings (shardflow/string_ops.py).")
strings.__dict__.update({
    "join": string_join, "length": _length, "reduce_join": reduce_join, "format": string_format,
    "regex_full_match": regex_full_match, "regex_replace": regex_replace, "split": _split_v2,
    "substr": substr, "to_number": string_to_number, "as_string": as_string,
    "to_hash_bucket": string_to_hash_bucket, "to_hash_bucket_fast": string_to_hash_bucket_fast,
    "to_hash_bucket_strong": string_to_hash_bucket_strong,
    "lower": lambda input, name=None, encoding="": _change_case(  # noqa: A006
        input, encoding, "lower", name or "StringLower"),
    "upper": lambda input, name=None, encoding="": _change_case(  # noqa: A006
        input, encoding, "upper", name or "StringUpper"),
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
