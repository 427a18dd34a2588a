"""TF1's tf.io.parse_single_sequence_example and tf.io.parse_sequence_example: serialized
tf.train.SequenceExample protos (context Features plus feature_lists, one Feature per time step)
parsed into tensors.

Example::

    context, sequence = sf.io.parse_single_sequence_example(
        record,
        context_features={"length": sf.FixedLenFeature([], sf.int64)},
        sequence_features={"tokens": sf.FixedLenSequenceFeature([], sf.int64),
                           "tags": sf.VarLenFeature(sf.string)})
    # context["length"]: [];  sequence["tokens"]: [time];  sequence["tags"]: SparseTensor
    #   with indices (time step, position) and dense_shape [time, longest step]

context_features take FixedLenFeature (a dense tensor of its shape; required unless it has a
default_value) and VarLenFeature (a SparseTensor); sequence_features take
FixedLenSequenceFeature (every step holds exactly its shape's number of values; a missing
feature list is an error unless allow_missing, which gives zero steps) and VarLenFeature.
parse_sequence_example does a batch (a string vector): dense results get a leading batch
dimension, sequences are padded with zeros (b"" for strings) to the longest, sparse indices
start with the example, and a third dict gives each FixedLenSequenceFeature's lengths.

The bytes are decoded by python3-protobuf's parser (the classes of shardflow/example_pb.py),
which checks every length and tag read from them against the bytes that remain: bytes that
are not a SequenceExample (truncated, a length past the end, a bad wire type) fail the step
with InvalidArgumentError naming the example, as does a value of the wrong type or count.
PyFunc nodes, as parsing_ops.py's parsers: they run in the client process.
"""

import types

import numpy as np

from shardflow import dtypes, errors, ops
from shardflow.example_pb import SequenceExample
from shardflow.parsing_ops import (_KIND_NAMES, _Spec, _dense, _fields, _serialized,
                                   _feature_array, _sparse, _sparse_tensor_class, _unbatch,
                                   _values)
from shardflow.script_ops import py_func


def _specs(features, allowed, what):
    """The _Specs of one dict of features, sorted by key; `allowed` the kinds it may hold."""
    if features is None:
        return []
    if not isinstance(features, dict):
        raise ValueError("%s must be a dict of feature key -> feature spec, not %r"
                         % (what, features))
    specs = [_Spec(k, features[k]) for k in sorted(features)]
    for spec in specs:
        if spec.kind not in allowed:
            raise ValueError("%s: feature %r is a %s; %s takes %s" % (
                what, spec.key, type(features[spec.key]).__name__, what,
                " or ".join(_ALLOWED_NAMES[k] for k in allowed)))
    return specs


_ALLOWED_NAMES = {"dense": "FixedLenFeature", "sequence": "FixedLenSequenceFeature",
                  "sparse": "VarLenFeature"}


# ---- NumPy parsing (runs in the py_func) ----------------------------------------------------

# The message fields of SequenceExample and what it nests (field number -> message), for
# saying where malformed bytes break the wire format.
_SCHEMA = {"SequenceExample": {1: "Features", 2: "FeatureLists"},
           "Features": {1: "Features.FeatureEntry"}, "Features.FeatureEntry": {2: "Feature"},
           "FeatureLists": {1: "FeatureLists.FeatureListEntry"},
           "FeatureLists.FeatureListEntry": {2: "FeatureList"}, "FeatureList": {1: "Feature"},
           "Feature": {}}


def _malformation(data, message="SequenceExample"):
    """Where `data` breaks the protobuf wire format (a tag, a varint or a length that runs
    past the end, a bad wire type), walking the nested messages; None when it does not."""
    try:
        for number, wire, value in _fields(data):
            nested = _SCHEMA[message].get(number)
            if nested is not None and wire == 2:
                found = _malformation(value, nested)
                if found:
                    return found
    except ValueError as e:
        return "%s: %s" % (message, e)
    return None


def _decode(data, index):
    data = memoryview(data).tobytes()
    try:
        return SequenceExample.FromString(data)
    except Exception as e:  # noqa: BLE001 (DecodeError, a message too deep)
        why = _malformation(data) or str(e)
        raise errors.InvalidArgumentError(
            "Could not parse example input %d as a tf.train.SequenceExample (%s); value: %r"
            % (index, why, data[:40])) from None


def _step_values(feature, spec, example, step):
    """The values of one time step's Feature as a 1-D array."""
    return _feature_array(feature, spec, "Name: <unknown>, Feature list: %s, Index: %d, step %d"
                          % (spec.key, example, step))


def _steps(seq, spec, index):
    """The per-step value arrays of spec's feature list in `seq` (None when it is absent)."""
    lists = seq.feature_lists.feature_list
    if spec.key not in lists:
        return None
    return [_step_values(f, spec, index, t) for t, f in enumerate(lists[spec.key].feature)]


def _dense_steps(spec, found):
    """[batch, longest] + shape (padded with the spec's default) and the lengths."""
    rows = []
    for i, steps in enumerate(found):
        if steps is None:
            if not spec.allow_missing:
                raise errors.InvalidArgumentError(
                    "Name: <unknown>, Feature list '%s' is required but could not be found "
                    "(example %d); FixedLenSequenceFeature(allow_missing=True) makes it "
                    "optional" % (spec.key, i))
            steps = []
        for t, values in enumerate(steps):
            if values.size != spec.size:
                raise errors.InvalidArgumentError(
                    "Name: <unknown>, Key: %s, Index: %d, step %d. Number of %s values != "
                    "expected. values size: %d but output shape: %s"
                    % (spec.key, i, t, _KIND_NAMES[spec.list_kind], values.size, spec.shape))
        rows.append([v.reshape(spec.shape) for v in steps])
    longest = max((len(r) for r in rows), default=0)
    out = np.empty([len(rows), longest] + spec.shape, dtype=spec.dtype.as_numpy_dtype)
    out[...] = spec.default
    for i, r in enumerate(rows):
        for t, v in enumerate(r):
            out[i, t] = v
    return [out, np.array([len(r) for r in rows], dtype=np.int64)]


def _sparse_steps(spec, found):
    """indices [N, 3] (example, step, position), values [N], dense_shape [3]."""
    indices, values = [], []
    longest_steps = longest_values = 0
    for i, steps in enumerate(found):
        steps = steps or []
        longest_steps = max(longest_steps, len(steps))
        for t, v in enumerate(steps):
            longest_values = max(longest_values, len(v))
            indices.extend((i, t, k) for k in range(len(v)))
            values.append(v)
    index_array = np.array(indices, dtype=np.int64).reshape(-1, 3)
    value_array = np.concatenate(values).astype(spec.dtype.as_numpy_dtype, copy=False) \
        if values else np.zeros([0], dtype=spec.dtype.as_numpy_dtype)
    shape = np.array([len(found), longest_steps, longest_values], dtype=np.int64)
    return [index_array, value_array, shape]


def _parse_batch(serialized, context_specs, sequence_specs):
    """The flat outputs for a batch of serialized SequenceExamples: per context spec its
    parse_example outputs, per sequence spec (values, lengths) or (indices, values, shape)."""
    records = np.asarray(serialized, dtype=object).reshape(-1)
    examples = [_decode(r, i) for i, r in enumerate(records)]
    contexts = [types.SimpleNamespace(features=e.context) for e in examples]
    out = []
    for spec in context_specs:
        found = [_values(c, spec, i) for i, c in enumerate(contexts)]
        out.extend(_dense(spec, found, len(examples)) if spec.kind == "dense"
                   else _sparse(spec, found, len(examples)))
    for spec in sequence_specs:
        found = [_steps(e, spec, i) for i, e in enumerate(examples)]
        out.extend(_dense_steps(spec, found) if spec.kind == "sequence"
                   else _sparse_steps(spec, found))
    return out


def _unbatch_sequence(outputs, context_specs, sequence_specs):
    """parse_single_sequence_example's outputs from a batch of one (the sequence lengths
    after each dense sequence feature are not returned for one example)."""
    context, k = _unbatch(outputs, context_specs)
    return context + _unbatch(outputs, sequence_specs, k, dense_extra=1)[0]


# ---- graph ops --------------------------------------------------------------------------------

def _tout(context_specs, sequence_specs, batch):
    tout = []
    for spec in context_specs + sequence_specs:
        if spec.kind == "sparse":
            tout.extend([dtypes.int64, spec.dtype, dtypes.int64])
        else:
            tout.append(spec.dtype)
            if spec.kind == "sequence" and batch:
                tout.append(dtypes.int64)
    return tout


def _results(tensors, context_specs, sequence_specs, batch):
    """(context, sequences, lengths) dicts with static shapes where known; batch is None for
    one example, else the batch size (-1 when unknown)."""
    sparse_class = _sparse_tensor_class()
    lead = [] if batch is None else [batch]
    context, sequences, lengths, k = {}, {}, {}, 0

    def sparse(rank):
        nonlocal k
        indices = ops.reshape(tensors[k], [-1, rank])
        values = ops.reshape(tensors[k + 1], [-1])
        shape = ops.reshape(tensors[k + 2], [rank])
        k += 3
        return sparse_class(indices, values, shape)

    for spec in context_specs:
        if spec.kind == "sparse":
            context[spec.key] = sparse(1 + len(lead))
        else:
            context[spec.key] = ops.reshape(tensors[k], lead + spec.shape)
            k += 1
    for spec in sequence_specs:
        if spec.kind == "sparse":
            sequences[spec.key] = sparse(2 + len(lead))
            continue
        values = tensors[k]
        if batch is None:
            values = ops.reshape(values, [-1] + spec.shape)
        elif batch != -1:
            values = ops.reshape(values, [batch, -1] + spec.shape)
        sequences[spec.key] = values
        k += 1
        if batch is not None:
            lengths[spec.key] = ops.reshape(tensors[k], [batch])
            k += 1
    return context, sequences, lengths


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
                                  example_name=None, name=None):
    """Parses one serialized tf.train.SequenceExample (a string scalar) into (context dict,
    feature-list dict): FixedLenFeature -> its shape, FixedLenSequenceFeature -> [steps] +
    shape, VarLenFeature -> SparseTensor (context: indices [N, 1]; feature lists: indices
    [N, 2] as (step, position))."""
    context_specs = _specs(context_features, ("dense", "sparse"), "context_features")
    sequence_specs = _specs(sequence_features, ("sequence", "sparse"), "sequence_features")
    if not context_specs and not sequence_specs:
        raise ValueError("parse_single_sequence_example: give context_features or "
                         "sequence_features")
    t = _serialized(serialized, (0,), "parse_single_sequence_example")

    def parse(data):
        batch = _parse_batch(np.asarray(data, dtype=object).reshape(1), context_specs,
                             sequence_specs)
        return _unbatch_sequence(batch, context_specs, sequence_specs)

    tensors = py_func(parse, [t], _tout(context_specs, sequence_specs, False), stateful=False,
                      name=name or "ParseSingleSequenceExample")
    context, sequences, _ = _results(tensors, context_specs, sequence_specs, None)
    return context, sequences


def parse_sequence_example(serialized, context_features=None, sequence_features=None,
                           example_names=None, name=None):
    """Parses a batch of serialized SequenceExamples (a string vector [B]) into (context dict,
    feature-list dict, lengths dict): context values get a leading [B]; feature lists are
    [B, longest] + shape (zero-padded) or SparseTensors with indices (example, step,
    position); lengths maps each FixedLenSequenceFeature key to its [B] step counts."""
    context_specs = _specs(context_features, ("dense", "sparse"), "context_features")
    sequence_specs = _specs(sequence_features, ("sequence", "sparse"), "sequence_features")
    if not context_specs and not sequence_specs:
        raise ValueError("parse_sequence_example: give context_features or sequence_features")
    t = _serialized(serialized, (1,), "parse_sequence_example")
    batch = t.shape.as_list()[0] if t.shape.ndims == 1 else None
    tensors = py_func(lambda data: _parse_batch(data, context_specs, sequence_specs), [t],
                      _tout(context_specs, sequence_specs, True), stateful=False,
                      name=name or "ParseSequenceExample")
    return _results(tensors, context_specs, sequence_specs, -1 if batch is None else batch)


__all__ = ["parse_sequence_example", "parse_single_sequence_example"]
