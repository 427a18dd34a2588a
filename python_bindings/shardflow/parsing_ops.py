"""TF1's parsing ops: parse_single_example, parse_example, the feature specs FixedLenFeature,
VarLenFeature and FixedLenSequenceFeature, decode_raw, and serialize_tensor / parse_tensor.

Example::

    features = {"image": sf.FixedLenFeature([784], sf.float32),
                "label": sf.FixedLenFeature([], sf.int64),
                "tags": sf.VarLenFeature(sf.string)}
    ds = sf.data.TFRecordDataset("train.tfrecord")
    ds = ds.map(lambda r: sf.parse_single_example(r, features)["image"]).batch(32)

The ops are py_func nodes (shardflow/script_ops.py): they parse serialized tf.train.Example
protos (shardflow/example_pb.py) with NumPy in the client process, in a Session step or in a
Dataset.map function alike. FixedLenFeature results get their static shape (a Reshape to it).
VarLenFeature results are SparseTensors (shardflow/sparse_tensor.py) whose indices are [N, 1]
(single example) or [N, 2] (batch, position); a Dataset.map function cannot return a
SparseTensor yet, so convert it inside the function (sf.sparse.to_dense). A missing required
feature, a value of the wrong type or count, or bytes that are not an Example fail the step
with InvalidArgumentError naming the feature (or the example).
"""

import collections

import numpy as np

from shardflow import dtypes, errors, ops
from shardflow.example_pb import Example
from shardflow.framework import Tensor, convert_to_tensor
from shardflow.script_ops import py_func
from shardflow.wire_format import read_fields as _fields
from shardflow.wire_format import read_varint as _read_varint
from shardflow.wire_format import varint as _varint

_KINDS = {dtypes.float32: "float_list", dtypes.int64: "int64_list", dtypes.string: "bytes_list"}
_KIND_NAMES = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}


class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """A feature with a fixed number of values, parsed to a dense tensor of `shape`. Without a
    default_value it is required; the default is broadcast to `shape`."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """A feature with any number of items of `shape`, parsed to [num_items] + shape (a batch is
    padded with default_value, default 0 or b"", to its longest)."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature with any number of values, parsed to a SparseTensor."""


def _sparse_tensor_class():
    try:
        from shardflow.sparse_tensor import SparseTensor
        return SparseTensor
    except ImportError:  # pragma: no cover (older trees without sparse tensors)
        return None


# ---- specs -------------------------------------------------------------------------------------

class _Spec:
    """One feature to parse: key, kind ("dense", "sequence" or "sparse"), dtype, item shape,
    default (a NumPy array, or None when required)."""

    def __init__(self, key, feature):
        if not isinstance(key, str):
            raise TypeError("parse_example: feature keys are strings, not %r" % (key,))
        self.key = key
        if isinstance(feature, VarLenFeature):
            self.kind, self.shape = "sparse", []
        elif isinstance(feature, FixedLenSequenceFeature):
            self.kind = "sequence"
        elif isinstance(feature, FixedLenFeature):
            self.kind = "dense"
        else:
            raise TypeError("parse_example: feature %r is described by %r; use "
                            "sf.FixedLenFeature, sf.FixedLenSequenceFeature or "
                            "sf.VarLenFeature" % (key, feature))
        self.dtype = dtypes.as_dtype(feature.dtype)
        if self.dtype not in _KINDS:
            raise ValueError("parse_example: feature %r has dtype %s; Example features are "
                             "float32, int64 or string" % (key, self.dtype.name))
        self.list_kind = _KINDS[self.dtype]
        self.allow_missing = bool(getattr(feature, "allow_missing", False))
        self.default = None
        if self.kind == "sparse":
            return
        self.shape = self._shape(feature.shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        if self.kind == "sequence" and self.size == 0:
            raise ValueError("parse_example: FixedLenSequenceFeature %r has an empty item "
                             "shape %s" % (key, self.shape))
        default = feature.default_value
        if default is None and self.kind == "sequence":
            default = b"" if self.dtype == dtypes.string else 0
        if default is not None:
            default = np.asarray(default, dtype=self.dtype.as_numpy_dtype)
            target = self.shape if self.kind == "dense" else []
            if default.size == int(np.prod(target, dtype=np.int64)):
                default = default.reshape(target)
            try:
                self.default = np.broadcast_to(default, target)
            except ValueError:
                raise ValueError("parse_example: the default_value of feature %r has shape %s, "
                                 "which does not fit %s" % (key, list(default.shape), target)
                                 ) from None

    def _shape(self, shape):
        try:
            dims = [int(d) for d in (shape.as_list() if hasattr(shape, "as_list") else shape)]
        except TypeError:
            raise ValueError("parse_example: feature %r needs a fully known shape, not %r"
                             % (self.key, shape)) from None
        if any(d < 0 for d in dims):
            raise ValueError("parse_example: feature %r has a negative dimension in %s"
                             % (self.key, dims))
        return dims


def _specs(features):
    if not isinstance(features, dict) or not features:
        raise ValueError("parse_example: features must be a non-empty dict of feature key -> "
                         "FixedLenFeature/VarLenFeature, not %r" % (features,))
    return [_Spec(k, features[k]) for k in sorted(features)]


# ---- NumPy parsing (runs in the py_func) ----------------------------------------------------

def _decode(data, index):
    try:
        return Example.FromString(bytes(data))
    except Exception:  # noqa: BLE001 (DecodeError, or a message too deep)
        raise errors.InvalidArgumentError(
            "Could not parse example input %d as a tf.train.Example; value: %r"
            % (index, bytes(data)[:40])) from None


def _values(example, spec, index):
    """The values of spec's feature in `example` (a 1-D array), or None when it is absent."""
    feature_map = example.features.feature
    if spec.key not in feature_map:
        return None
    return _feature_array(feature_map[spec.key], spec, "Key: %s, Index: %d" % (spec.key, index))


def _feature_array(feature, spec, where):
    """One Feature's values as a 1-D array of spec's dtype; a kind other than spec's is an
    InvalidArgumentError starting with `where` (which feature of which example)."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return np.zeros([0], dtype=spec.dtype.as_numpy_dtype)
    if kind != spec.list_kind:
        raise errors.InvalidArgumentError(
            "%s. Data types don't match. Data type: %s but expected type: %s"
            % (where, _KIND_NAMES[kind], _KIND_NAMES[spec.list_kind]))
    values = getattr(feature, kind).value
    if spec.dtype == dtypes.string:
        out = np.empty([len(values)], dtype=object)
        out[:] = list(values)
        return out
    return np.asarray(values, dtype=spec.dtype.as_numpy_dtype).reshape(-1)


def _dense(spec, found, n):
    out = np.empty([n] + spec.shape, dtype=spec.dtype.as_numpy_dtype)
    for i, values in enumerate(found):
        if values is None:
            if spec.default is None:
                raise errors.InvalidArgumentError(
                    "Name: <unknown>, Feature: %s (data type: %s) is required but could not be "
                    "found (example %d); give it a default_value to make it optional"
                    % (spec.key, spec.dtype.name, i))
            out[i, ...] = spec.default
        elif values.size != spec.size:
            raise errors.InvalidArgumentError(
                "Key: %s, Index: %d. Number of %s values != expected. Values size: %d but "
                "output shape: %s" % (spec.key, i, _KIND_NAMES[spec.list_kind], values.size,
                                      spec.shape))
        else:
            # (out[i, ...]: for a scalar string feature, out[i] = <0-d array> would store the
            # array object itself in the object array)
            out[i, ...] = values.reshape(spec.shape)
    return [out]


def _sequence(spec, found, n):
    rows = []
    for i, values in enumerate(found):
        if values is None:
            if not spec.allow_missing:
                raise errors.InvalidArgumentError(
                    "Name: <unknown>, Feature: %s is required but could not be found (example "
                    "%d); FixedLenSequenceFeature(allow_missing=True) makes it optional"
                    % (spec.key, i))
            values = np.zeros([0], dtype=spec.dtype.as_numpy_dtype)
        if values.size % spec.size:
            raise errors.InvalidArgumentError(
                "Key: %s, Index: %d. Number of %s values is not a multiple of the item size %d "
                "(item shape %s)" % (spec.key, i, _KIND_NAMES[spec.list_kind], spec.size,
                                     spec.shape))
        rows.append(values.reshape([-1] + spec.shape))
    longest = max((len(r) for r in rows), default=0)
    out = np.empty([n, longest] + spec.shape, dtype=spec.dtype.as_numpy_dtype)
    out[...] = spec.default
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return [out]


def _sparse(spec, found, n):
    lists = [v if v is not None else np.zeros([0], spec.dtype.as_numpy_dtype) for v in found]
    lengths = [len(v) for v in lists]
    indices = np.zeros([sum(lengths), 2], dtype=np.int64)
    start = 0
    for i, length in enumerate(lengths):
        indices[start:start + length, 0] = i
        indices[start:start + length, 1] = np.arange(length)
        start += length
    if lists:
        values = np.concatenate(lists).astype(spec.dtype.as_numpy_dtype, copy=False)
    else:
        values = np.zeros([0], dtype=spec.dtype.as_numpy_dtype)
    return [indices, values, np.array([n, max(lengths, default=0)], dtype=np.int64)]


_BUILDERS = {"dense": _dense, "sequence": _sequence, "sparse": _sparse}


def _parse_batch(serialized, specs):
    """The flat outputs for a batch of serialized Examples (any array of bytes, flattened)."""
    records = np.asarray(serialized, dtype=object).reshape(-1)
    examples = [_decode(r, i) for i, r in enumerate(records)]
    out = []
    for spec in specs:
        found = [_values(e, spec, i) for i, e in enumerate(examples)]
        out.extend(_BUILDERS[spec.kind](spec, found, len(examples)))
    return out


def _unbatch(outputs, specs, k=0, dense_extra=0):
    """parse_single_example's outputs from a batch of one, reading outputs[k:]: a sparse
    feature's three (the batch index dropped), a dense feature's one (its row), then
    `dense_extra` more that are skipped (parse_sequence_example's lengths). Returns the values
    and the index after them."""
    out = []
    for spec in specs:
        if spec.kind == "sparse":
            indices, values, shape = outputs[k:k + 3]
            out.extend([indices[:, 1:].copy(), values, shape[1:].copy()])
            k += 3
        else:
            out.append(outputs[k][0])
            k += 1 + dense_extra
    return out, k


# ---- graph ops --------------------------------------------------------------------------------

def _tout(specs):
    tout = []
    for spec in specs:
        tout.extend([dtypes.int64, spec.dtype, dtypes.int64] if spec.kind == "sparse"
                    else [spec.dtype])
    return tout


def _results(tensors, specs, batch):
    """The dict of results, with static shapes where they are known; batch is None for one
    example, else the batch size (-1 when unknown)."""
    sparse_class = _sparse_tensor_class()
    lead = [] if batch is None else [batch]
    rank = 1 if batch is None else 2
    results, k = {}, 0
    for spec in specs:
        if spec.kind == "sparse":
            indices = ops.reshape(tensors[k], [-1, rank])
            values = ops.reshape(tensors[k + 1], [-1])
            shape = ops.reshape(tensors[k + 2], [rank])
            k += 3
            if sparse_class is not None:
                results[spec.key] = sparse_class(indices, values, shape)
            else:  # dense values (one example) without sparse tensors
                results[spec.key] = values
            continue
        t = tensors[k]
        k += 1
        if spec.kind == "dense":
            t = ops.reshape(t, lead + spec.shape)
        elif batch is None:
            t = ops.reshape(t, [-1] + spec.shape)
        elif batch != -1:
            t = ops.reshape(t, [batch, -1] + spec.shape)
        results[spec.key] = t
    return results


def _serialized(serialized, rank_ok, what):
    t = serialized if isinstance(serialized, Tensor) else convert_to_tensor(
        np.asarray(serialized, dtype=object))
    if t.dtype != dtypes.string:
        raise TypeError("%s: serialized must be a string tensor, not %s" % (what, t.dtype.name))
    if t.shape.ndims is not None and t.shape.ndims not in rank_ok:
        raise ValueError("%s: serialized must have rank %s, not shape %s"
                         % (what, " or ".join(map(str, rank_ok)), t.shape.as_list()))
    return t


def parse_single_example(serialized, features, name=None, example_names=None):
    """Parses one serialized tf.train.Example (a string scalar) into a dict of feature key ->
    Tensor (FixedLenFeature: `shape`; FixedLenSequenceFeature: [items] + shape) or SparseTensor
    (VarLenFeature: indices [N, 1], values [N], dense_shape [1])."""
    specs = _specs(features)
    t = _serialized(serialized, (0,), "parse_single_example")

    def parse(data):
        return _unbatch(_parse_batch(np.asarray(data, dtype=object).reshape(1), specs),
                        specs)[0]

    tensors = py_func(parse, [t], _tout(specs), stateful=False,
                      name=name or "ParseSingleExample")
    return _results(tensors, specs, None)


def parse_example(serialized, features, name=None, example_names=None):
    """Parses a batch of serialized tf.train.Examples (a string vector [B]) into a dict of
    feature key -> Tensor ([B] + shape; sequences [B, longest] + shape, padded) or SparseTensor
    (VarLenFeature: indices [N, 2] as (example, position), values [N], dense_shape
    [B, longest])."""
    specs = _specs(features)
    t = _serialized(serialized, (1,), "parse_example")
    batch = t.shape.as_list()[0] if t.shape.ndims == 1 else None
    tensors = py_func(lambda data: _parse_batch(data, specs), [t], _tout(specs), stateful=False,
                      name=name or "ParseExample")
    return _results(tensors, specs, -1 if batch is None else batch)


# ---- decode_raw ---------------------------------------------------------------------------------

_RAW_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.uint8,
              dtypes.int32, dtypes.int64)


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None,
               bytes=None):  # noqa: A002 (TF1's deprecated argument name)
    """Reinterprets each string of `input_bytes` as a vector of `out_type` numbers; the result
    has shape input_shape + [length / item size]. Every string must have the same length, a
    multiple of the item size (else InvalidArgumentError)."""
    if input_bytes is None:
        input_bytes = bytes
    if input_bytes is None or out_type is None:
        raise TypeError("decode_raw needs input_bytes and out_type")
    out_type = dtypes.as_dtype(out_type)
    if out_type not in _RAW_TYPES:
        raise TypeError("decode_raw: out_type %s is not one of %s"
                        % (out_type.name, ", ".join(d.name for d in _RAW_TYPES)))
    t = _serialized(input_bytes, range(64), "decode_raw")
    np_type = np.dtype(out_type.as_numpy_dtype).newbyteorder("<" if little_endian else ">")

    def decode(data):
        data = np.asarray(data, dtype=object)
        flat = [memoryview(d).tobytes() for d in data.reshape(-1)]
        lengths = {len(d) for d in flat}
        if len(lengths) > 1:
            raise errors.InvalidArgumentError(
                "DecodeRaw requires input strings to all be the same size, but the lengths are "
                "%s" % sorted(lengths))
        length = lengths.pop() if lengths else 0
        if length % np_type.itemsize:
            raise errors.InvalidArgumentError(
                "Input to DecodeRaw has length %d that is not a multiple of %d, the size of %s"
                % (length, np_type.itemsize, out_type.name))
        count = length // np_type.itemsize
        out = np.frombuffer(b"".join(flat), dtype=np_type).reshape(list(data.shape) + [count])
        return out.astype(out_type.as_numpy_dtype)

    out = py_func(decode, [t], out_type, stateful=False, name=name or "DecodeRaw")
    if t.shape.ndims is not None and t.shape.is_fully_defined():
        out = ops.reshape(out, t.shape.as_list() + [-1])
    return out


# ---- serialize_tensor / parse_tensor -------------------------------------------------------------
# Note [TensorProto wire format]. These write and read TensorFlow's own TensorProto encoding
# (tensorflow/core/framework/tensor.proto: dtype = 1, tensor_shape = 2 (dim = 2 {size = 1}),
# tensor_content = 4, string_val = 8), not shardflow's TensorProto (core/protos/tensor.proto,
# whose field numbers differ), so the bytes are those TF 1.15's SerializeTensor gives and
# ParseTensor takes. The DataType numbers are TF's (shardflow's dtype enums equal them).

def _field(number, wire, payload):
    return _varint(number << 3 | wire) + payload


def _length_delimited(number, data):
    return _field(number, 2, _varint(len(data)) + data)


def _tensor_proto_bytes(array, dtype):
    """TF's TensorProto serialization of `array` (what TF's SerializeTensor writes)."""
    out = _field(1, 0, _varint(dtype._enum))
    dims = b"".join(_length_delimited(2, _field(1, 0, _varint(int(d)))) if d else
                    _length_delimited(2, b"") for d in array.shape)
    out += _length_delimited(2, dims)
    if dtype == dtypes.string:
        for v in array.reshape(-1):
            out += _length_delimited(8, v if isinstance(v, bytes) else str(v).encode())
    elif array.size:
        np_type = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
        out += _length_delimited(4, np.ascontiguousarray(array, np_type).tobytes())
    return out


# TensorProto's typed value fields: field number -> (dtypes that use it, fixed NumPy type or
# None for varints).
_VAL_FIELDS = {5: ("float", "<f4"), 6: ("double", "<f8"), 7: ("int", None),
               10: ("int64", None), 11: ("bool", None), 13: ("half", None)}


# The most elements parse_tensor builds: a few bytes can declare any shape, and a lone value
# fills it (TF repeats the last value), so the shape is bounded before anything is allocated.
_MAX_PARSED_ELEMENTS = 1 << 31
# The most elements it fills from fewer values: a 17-byte proto would otherwise ask for 8 GiB.
_MAX_FILLED_ELEMENTS = 1 << 26


def _parse_tensor_proto(data, out_type):
    """The ndarray of TF TensorProto bytes `data`, which must hold `out_type`."""
    dtype_enum, dims, content, strings, vals = 0, [], None, [], []
    for number, wire, value in _fields(data):
        if number == 1:
            dtype_enum = value
        elif number == 2:
            for n2, _, dim in _fields(value):
                if n2 == 2:
                    size = 0
                    for n3, _, v in _fields(dim):
                        if n3 == 1:
                            size = v - (1 << 64) if v >= 1 << 63 else v
                    dims.append(size)
                elif n2 == 3 and value:
                    raise ValueError("the tensor's shape has an unknown rank")
        elif number == 4:
            content = value
        elif number == 8:
            strings.append(bytes(value))
        elif number in _VAL_FIELDS:
            kind, fixed = _VAL_FIELDS[number]
            if wire == 2 and fixed:
                vals.extend(np.frombuffer(value, fixed).tolist())
            elif wire == 2:
                pos = 0
                while pos < len(value):
                    v, pos = _read_varint(value, pos)
                    vals.append(v)
            elif fixed:
                vals.extend(np.frombuffer(value, fixed).tolist())
            else:
                vals.append(value)
    if dtype_enum != out_type._enum:
        try:
            parsed = dtypes.as_dtype(dtype_enum).name
        except Exception:  # noqa: BLE001 (a type shardflow lacks)
            parsed = "DataType %d" % dtype_enum
        raise errors.InvalidArgumentError(
            "Type mismatch between parsed tensor (%s) and dtype (%s)" % (parsed, out_type.name))
    if any(d < 0 for d in dims):
        raise errors.InvalidArgumentError("parse_tensor: the tensor's shape %s is not fully "
                                          "defined" % dims)
    count = 1
    for d in dims:   # Python ints: a hostile shape cannot overflow the count
        count *= d
    if count > _MAX_PARSED_ELEMENTS:
        raise errors.InvalidArgumentError(
            "parse_tensor: the shape %s holds %d elements, more than the %d parse_tensor "
            "makes" % (dims, count, _MAX_PARSED_ELEMENTS))
    if out_type == dtypes.string:
        values = strings
        np_type = object
    else:
        np_type = np.dtype(out_type.as_numpy_dtype)
        if content is not None:
            return np.frombuffer(bytes(content), np_type.newbyteorder("<")).astype(np_type)\
                .reshape(dims)
        values = vals
        if out_type == dtypes.float16 and values:   # half_val holds the bits
            values = np.array(values, np.uint16).view(np.float16).tolist()
        if out_type.is_integer and values:          # varints are two's complement uint64
            bits = 64 if out_type.name in ("int64", "uint64") else 32
            signed = np.issubdtype(np_type, np.signedinteger)
            values = [v - (1 << bits) if signed and v >= 1 << (bits - 1) else v
                      for v in (w & ((1 << bits) - 1) for w in values)]
    if len(values) == count:
        return np.array(values, dtype=np_type).reshape(dims)
    if values and len(values) < count:   # TF repeats the last value to fill the shape
        if count > _MAX_FILLED_ELEMENTS:
            raise errors.ResourceExhaustedError(
                "parse_tensor: the bytes hold %d values for the %d elements of shape %s, more "
                "than the %d parse_tensor fills by repeating the last value (a tensor "
                "serialized by serialize_tensor holds all its values)"
                % (len(values), count, dims, _MAX_FILLED_ELEMENTS))
        try:
            out = np.empty(count, dtype=np_type)
        except MemoryError:
            raise errors.ResourceExhaustedError(
                "parse_tensor: out of memory for the %d elements of shape %s (the bytes hold "
                "%d values; TF repeats the last to fill the shape)"
                % (count, dims, len(values))) from None
        out[:len(values)] = values
        out[len(values):] = values[-1]
        return out.reshape(dims)
    if not values and count == 0:
        return np.zeros(dims, dtype=np_type)
    raise errors.InvalidArgumentError("parse_tensor: %d values for shape %s"
                                      % (len(values), dims))


def serialize_tensor(tensor, name=None):
    """A string scalar holding `tensor` as TensorFlow's TensorProto bytes (TF1's
    tf.io.serialize_tensor): dtype, shape, then the values as tensor_content (little-endian)
    or, for strings, string_val (Note [TensorProto wire format]). A PyFunc node."""
    t = convert_to_tensor(tensor)
    dtype = t.dtype

    def run(a):
        return np.array(_tensor_proto_bytes(np.asarray(a), dtype), dtype=object)
    out = py_func(run, [t], dtypes.string, stateful=False, name=name or "SerializeTensor")
    out.set_shape([])
    return out


def parse_tensor(serialized, out_type, name=None):
    """The tensor in TensorProto bytes `serialized` (a string scalar), which must hold
    `out_type` (else InvalidArgumentError "Type mismatch ..."), as TF1's tf.io.parse_tensor.
    The shape is known only when the step runs. A PyFunc node."""
    out_type = dtypes.as_dtype(out_type)
    t = _serialized(serialized, (0,), "parse_tensor")

    def run(data):
        data = np.asarray(data, dtype=object).reshape(())[()]
        try:
            return _parse_tensor_proto(memoryview(data).tobytes(), out_type)
        except errors.OpError:
            raise
        except (ValueError, TypeError) as e:   # TypeError: a field of the wrong wire type
            raise errors.InvalidArgumentError("Could not parse `serialized` as TensorProto: %s"
                                              % e) from None
    return py_func(run, [t], out_type, stateful=False, name=name or "ParseTensor")


__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "decode_raw",
           "parse_example", "parse_single_example", "parse_tensor", "serialize_tensor"]
