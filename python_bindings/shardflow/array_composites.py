"""More TF1 array and sampling functions composed from the engine's ops (and tested against
NumPy): sequence_mask, broadcast_to, meshgrid, reverse_sequence, random_crop,
multinomial (tf.random.categorical) and tf.print.

Example::

    mask = sf.sequence_mask([1, 3], maxlen=4)            # [[T, F, F, F], [T, T, T, F]]
    rev = sf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)
    draws = sf.multinomial(logits, 5)                     # [batch, 5] int64 class ids
    print_op = sf.print("loss:", loss)                    # prints when run

As Note [Composed array ops] in shardflow/array_ops.py says, each is a few existing ops, so
gradients flow where TF1's would (broadcast_to, meshgrid and reverse_sequence; random_crop's
offsets are drawn at run time, so its slice has no gradient).
"""

import builtins

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.framework import Tensor, convert_to_tensor


def iota(n, dtype=dtypes.int32):
    """[0, 1, ..., n - 1] as a 1-D tensor of `dtype`; `n` is a Python int or a scalar
    tensor (its length is then known only at run time)."""
    if not isinstance(n, Tensor):
        return ops.constant(np.arange(int(n)), dtype=dtype)
    ones = ops.fill(ops.reshape(ops.cast(n, dtypes.int32), [1]), ops.constant(1, dtype=dtype))
    return ops.cumsum(ones, exclusive=True)


def dim_size(x, axis):
    """Dimension `axis` of `x`: a Python int when known when the graph is built, else an int32
    scalar tensor read at run time."""
    d = x.shape.as_list()[axis] if x.shape.ndims is not None else None
    return d if d is not None else ops.shape(x)[axis]


def shape_of(dims):
    """A list of Python ints and int32 scalar tensors as a shape argument: the list itself
    when every entry is an int, else a 1-D int32 tensor."""
    if all(not isinstance(d, Tensor) for d in dims):
        return [int(d) for d in dims]
    return array_ops.stack([ops.cast(d, dtypes.int32) if isinstance(d, Tensor)
                            else ops.constant(int(d), dtype=dtypes.int32) for d in dims])


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool_, name=None):
    """TF1's tf.sequence_mask: mask[..., j] = j < lengths[...], of shape lengths.shape +
    [maxlen] (maxlen defaults to the largest length), cast to `dtype`.

    Example: ``sf.sequence_mask([1, 3, 2], 5)`` is [[T, F, F, F, F], [T, T, T, F, F],
    [T, T, F, F, F]]."""
    lengths = convert_to_tensor(lengths)
    if not lengths.dtype.is_integer:
        raise TypeError("sequence_mask: lengths must be int32 or int64, not %s"
                        % lengths.dtype.name)
    if maxlen is None:
        maxlen = ops.reduce_max(lengths)
    positions = iota(maxlen, lengths.dtype)
    mask = ops.less(positions, ops.expand_dims(lengths, -1))
    dtype = dtypes.as_dtype(dtype)
    if dtype == dtypes.bool_:
        return ops.identity(mask, name=name)
    return ops.cast(mask, dtype, name=name)


def broadcast_to(input, shape, name=None):  # noqa: A002
    """`input` broadcast to `shape` (a list of ints or a 1-D int tensor) by NumPy's rules, as
    TF1.13's tf.broadcast_to; the gradient sums over the broadcast dimensions."""
    x = convert_to_tensor(input)
    if not isinstance(shape, Tensor):
        shape = [int(d) for d in shape]
    if x.dtype == dtypes.bool_:
        return ops.logical_or(x, ops.fill(shape, False), name=name)
    zero = ops.constant(0, dtype=x.dtype)
    return ops.add(x, ops.fill(shape, zero), name=name)


def meshgrid(*args, **kwargs):
    """TF1's tf.meshgrid: N-D coordinate grids from N 1-D tensors. indexing='xy' (the
    default, Cartesian) gives outputs of shape [len(y), len(x), ...]; 'ij' (matrix) gives
    [len(x), len(y), ...]; as np.meshgrid."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("meshgrid: unexpected arguments %s" % ", ".join(sorted(kwargs)))
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: indexing must be 'xy' or 'ij', got %r" % (indexing,))
    values = [ops.reshape(convert_to_tensor(a), [-1]) for a in args]
    n = len(values)
    sizes = [dim_size(v, 0) for v in values]
    order = list(builtins.range(n))
    if indexing == "xy" and n > 1:
        order[0], order[1] = 1, 0            # output axis k holds input order[k]
    full = shape_of([sizes[i] for i in order])
    outputs = []
    for i, v in enumerate(values):
        dims = [1] * n
        dims[order.index(i)] = -1
        outputs.append(broadcast_to(ops.reshape(v, dims), full,
                                    name=None if name is None else "%s_%d" % (name, i)))
    return outputs


def _perm_to_front(rank, first, second):
    """A permutation that puts axes `first` and `second` in front, the others after in order,
    and its inverse."""
    perm = [first, second] + [a for a in builtins.range(rank) if a not in (first, second)]
    return perm, [perm.index(a) for a in builtins.range(rank)]


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    """TF1's tf.reverse_sequence: for each b along `batch_axis` (default 0), the first
    seq_lengths[b] slices along `seq_axis` reversed and the rest left as they are. (seq_dim
    and batch_dim are TF1's older names.) Gradients flow to `input`; the rank must be known."""
    if seq_axis is None:
        seq_axis = seq_dim
    elif seq_dim is not None:
        raise ValueError("reverse_sequence: give seq_axis or seq_dim (its older name), not both")
    if batch_axis is None:
        batch_axis = 0 if batch_dim is None else batch_dim
    elif batch_dim is not None:
        raise ValueError("reverse_sequence: give batch_axis or batch_dim (its older name), "
                         "not both")
    if seq_axis is None:
        raise ValueError("reverse_sequence needs seq_axis (the time dimension)")
    x = convert_to_tensor(input)
    if x.shape.ndims is None:
        raise ValueError("reverse_sequence needs a tensor of known rank, got %r" % x)
    rank = x.shape.ndims
    seq_axis, batch_axis = seq_axis % rank, batch_axis % rank
    if seq_axis == batch_axis:
        raise ValueError("reverse_sequence: seq_axis and batch_axis must differ, both are %d"
                         % seq_axis)
    perm, inverse = _perm_to_front(rank, batch_axis, seq_axis)
    front = ops.transpose(x, perm) if perm != list(builtins.range(rank)) else x
    batch, time = dim_size(front, 0), dim_size(front, 1)
    lengths = ops.reshape(ops.cast(seq_lengths, dtypes.int32), [-1, 1])
    # TF's kernel fails the step on a length past the time dimension or below 0 (here a row
    # read another batch entry's elements, or stayed as it was).
    from shardflow.check_ops import _check
    from shardflow.framework import control_dependencies
    fits = array_ops.reduce_all(ops.logical_and(ops.greater_equal(lengths, 0),
                                                ops.less_equal(lengths, time)))
    check = _check(fits, "reverse_sequence: seq_lengths must lie in [0, input.dims(%d)] "
                   "(TF: 'seq_lens(i) > input.dims(%d)' or '< 0')" % (seq_axis, seq_axis),
                   None, "reverse_sequence")
    with control_dependencies([check]):
        lengths = ops.identity(lengths)
    t = ops.reshape(iota(time), [1, -1])
    source = array_ops.where_v2(ops.less(t, lengths), ops.subtract(ops.subtract(lengths, 1), t),
                                ops.multiply(t, ops.ones_like(lengths)))
    rows = ops.multiply(ops.reshape(iota(batch), [-1, 1]), time)
    linear = ops.reshape(ops.add(rows, source), [-1])
    rest = front.shape.as_list()[2:]
    if None in rest:
        rest_shape = ops.slice(ops.shape(front), [2], [-1])
        flat = ops.reshape(front, ops.concat([[-1], rest_shape], 0))
        out_shape = ops.concat([shape_of([batch, time]), rest_shape], 0)
    else:
        flat = ops.reshape(front, [-1] + rest)
        out_shape = shape_of([batch, time] + rest)
    out = ops.reshape(array_ops.gather(flat, linear), out_shape)
    out = ops.transpose(out, inverse, name=name) if perm != list(builtins.range(rank)) \
        else ops.identity(out, name=name)
    out.set_shape(x.shape)      # the dimensions known of the input (a depth an RNN cell needs)
    return out


def random_crop(value, size, seed=None, name=None):
    """A slice of `value` of shape `size` (Python ints, one per dimension, or sizes known when
    the step runs: a tensor, or a list holding some) at an offset drawn uniformly where it
    fits, as TF1's tf.random_crop (tf.image.random_crop). The offsets are drawn at run time;
    the crop has no gradient; a size that does not fit fails the step."""
    x = convert_to_tensor(value)
    from shardflow.framework import _holds_tensor, _pack_list
    dynamic = isinstance(size, Tensor) or (isinstance(size, (list, tuple)) and
                                           _holds_tensor(size))
    if dynamic:
        # Sizes known when the step runs ([tf.shape(x)[0], 24, 24, 3]).
        if x.shape.ndims is None:
            raise ValueError("random_crop with a size tensor needs a value of known rank")
        rank = x.shape.ndims
        size_in = ops.cast(size if isinstance(size, Tensor)
                           else _pack_list(list(size), dtypes.int32), dtypes.int32)
    else:
        size = [int(s) for s in size]
        rank = len(size)
        if x.shape.ndims is not None:
            if len(size) != x.shape.ndims:
                raise ValueError("random_crop: size %r has %d dimensions, the value has %d"
                                 % (size, len(size), x.shape.ndims))
            for d, (n, s) in enumerate(zip(x.shape.as_list(), size)):
                if n is not None and s > n:
                    raise ValueError("random_crop: size %r does not fit in the value's shape "
                                     "%s (dimension %d)" % (size, x.shape, d))
        size_in = np.asarray(size, np.int32)
    room = ops.cast(ops.add(ops.subtract(ops.shape(x), size_in), 1), dtypes.float32)
    u = ops.random_uniform([rank], seed=seed)
    offset = ops.cast(ops.floor(ops.multiply(u, room)), dtypes.int32)
    offset = ops.minimum(offset, ops.cast(ops.subtract(room, 1.0), dtypes.int32))
    if dynamic:   # checked when the graph is built otherwise
        from shardflow.check_ops import _check
        from shardflow.framework import control_dependencies
        check = _check(array_ops.reduce_all(ops.greater_equal(room, 1.0)),
                       "random_crop: the size does not fit in the value's shape", None,
                       "random_crop_fits")
        with control_dependencies([check]):
            offset = ops.identity(offset)
    return ops._out("Slice", [x, offset, size_in], name=name)


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=dtypes.int64):
    """TF1's tf.multinomial (tf.random.categorical): `num_samples` class indices per row of
    `logits` ([batch, classes], unnormalized log-probabilities), drawn independently; the
    result is [batch, num_samples] of `output_dtype`. Sampled by the Gumbel-max trick:
    argmax(logits - log(-log(u))) with u uniform."""
    logits = convert_to_tensor(logits)
    if logits.shape.ndims not in (None, 2):
        raise ValueError("multinomial: logits must be [batch, classes], got %s" % logits.shape)
    if not logits.dtype.is_floating:
        raise TypeError("multinomial: logits must be floating point, not %s"
                        % logits.dtype.name)
    output_dtype = dtypes.as_dtype(output_dtype)
    if output_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError("multinomial: output_dtype must be int32 or int64, not %s"
                        % output_dtype.name)
    if isinstance(num_samples, Tensor):
        raise ValueError("multinomial: num_samples must be a Python int here, not a tensor")
    num_samples = int(num_samples)
    batch, classes = dim_size(logits, 0), dim_size(logits, 1)
    tiny = float(np.finfo(logits.dtype.as_numpy_dtype).tiny)
    u = ops.random_uniform(shape_of([batch, num_samples, classes]), tiny, 1.0,
                           dtype=logits.dtype, seed=seed)
    gumbel = ops.negative(ops.log(ops.negative(ops.log(u))))
    scores = ops.add(ops.expand_dims(ops.stop_gradient(logits), 1), gumbel)
    return ops.argmax(scores, axis=2, output_type=output_dtype, name=name)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """tf.random.categorical (TF 1.13+): multinomial with the newer argument order; `dtype`
    (int64 by default) is the indices' type."""
    return multinomial(logits, num_samples, seed=seed, name=name,
                       output_dtype=dtypes.int64 if dtype is None else dtype)


def _print_writer(output_stream):
    """How tf.print writes a line to `output_stream`: sys.stdout, sys.stderr (the streams as
    they are when the line is written), "stdout", "stderr", a logging function or level of
    sf.logging or Python's logging ("log(info)", "log(warning)", "log(error)" too), or
    "file://<path>" (appended to). ValueError for others, as TF's."""
    import logging
    import sys
    from shardflow import tf_logging
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        path = output_stream[len("file://"):]

        def to_file(text):
            with open(path, "a") as f:
                f.write(text)
        return to_file
    levels = {"log(info)": logging.INFO, "log(warning)": logging.WARNING,
              "log(error)": logging.ERROR}
    named = {"stdout": "stdout", "stderr": "stderr"}
    for func, level in ((tf_logging.info, logging.INFO), (tf_logging.warning, logging.WARNING),
                        (getattr(tf_logging, "warn", None), logging.WARNING),
                        (tf_logging.error, logging.ERROR), (logging.info, logging.INFO),
                        (logging.warning, logging.WARNING), (logging.error, logging.ERROR)):
        if func is not None and output_stream is func:
            output_stream = level
    if output_stream is sys.stdout or output_stream is sys.__stdout__:
        output_stream = "stdout"
    elif output_stream is sys.stderr or output_stream is sys.__stderr__:
        output_stream = "stderr"
    if isinstance(output_stream, str) and output_stream in levels:
        output_stream = levels[output_stream]
    if isinstance(output_stream, int) and output_stream in levels.values():
        level = output_stream

        def to_log(text):
            tf_logging.log(level, "%s", text.rstrip("\n"))
        return to_log
    if isinstance(output_stream, str) and output_stream in named:
        which = named[output_stream]

        def to_stream(text):
            stream = getattr(sys, which)
            stream.write(text)
            stream.flush()
        return to_stream
    raise ValueError("Unsupported output stream, logging level, or file. %s. Supported streams "
                     "are sys.stdout, sys.stderr, tf.logging.info, tf.logging.warning, "
                     "tf.logging.error. File needs to be in the form of 'file://<filepath>'."
                     % (output_stream,))


def print_v2(*inputs, **kwargs):
    """TF 1.13's tf.print: an op that, each time it runs, writes `inputs` separated by `sep`
    and followed by `end` (os.linesep) to `output_stream` (sys.stderr; sys.stdout, a logging
    function or "file://<path>"). Run it, or make other ops depend on it::

        with sf.control_dependencies([sf.print("step", step, "loss", {"l": loss})]):
            train = optimizer.minimize(loss)

    As TF's: a string prints as it is; a tensor as tf.strings.format prints it (its first and
    last `summarize` elements of each dimension, "[0 1 2 ... 7 8 9]"; None or -1: all); any
    other value, and lists, tuples and dicts holding tensors, as pprint.pformat writes them with
    each tensor's value in its place. A PyFunc node (shardflow/script_ops.py): the line is
    written by the client process."""
    import os
    import pprint
    import sys
    from shardflow import nest
    from shardflow.script_ops import py_func
    from shardflow.sparse_tensor import SparseTensor
    from shardflow.string_format import summarize_value
    from shardflow.variables import Variable
    output_stream = kwargs.pop("output_stream", sys.stderr)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", os.linesep)
    name = kwargs.pop("name", None)
    if kwargs:
        raise ValueError("Unrecognized keyword arguments for tf.print: %s" % kwargs)
    write = _print_writer(output_stream)
    summarize = -1 if summarize is None or summarize < 0 else int(summarize)

    def is_tensor(x):
        return isinstance(x, (Tensor, Variable, SparseTensor))
    free_text = " ".join(pprint.pformat(x) for x in nest.map_structure(
        lambda x: "" if is_tensor(x) else x, list(inputs)))
    placeholder = "{}"
    rng = np.random.RandomState(5)
    while placeholder in free_text:
        placeholder += str(rng.randint(0, 10))
    tensors, templates = [], []
    for value in inputs:
        if isinstance(value, str):
            templates.append(value)
            continue
        pieces = []
        for x in nest.flatten(value):
            if isinstance(x, SparseTensor):
                tensors.extend([x.indices, x.values, x.dense_shape])
                pieces.append("SparseTensor(indices={0}, values={0}, shape={0})".format(
                    placeholder))
            elif is_tensor(x):
                tensors.append(x)
                pieces.append(placeholder)
            else:
                pieces.append(x)
        templates.append(pprint.pformat(nest.pack_sequence_as(value, pieces)))
    template = sep.join(templates).replace("'" + placeholder + "'", placeholder)
    parts = [p.encode() for p in template.split(placeholder)]
    end = end.encode() if isinstance(end, str) else bytes(end)

    def write_line(*values):
        out = [parts[0]]
        for value, part in zip(values, parts[1:]):
            out.append(summarize_value(value, summarize))
            out.append(part)
        out.append(end)
        write(b"".join(out).decode("utf-8", "replace"))
        return []
    return py_func(write_line, tensors, [], stateful=True, name=name or "PrintV2")

__all__ = ["broadcast_to", "categorical", "meshgrid", "multinomial", "print_v2",
           "random_crop", "reverse_sequence", "sequence_mask"]
