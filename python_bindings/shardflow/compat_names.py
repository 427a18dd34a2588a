"""More of TF 1.15's core namespace that TF1 programs and the libraries they import use:
deprecated spellings (arg_max, arg_min, floor_div, initialize_all_tables, ...), shape helpers
(dimension_value, dimension_at_index, ensure_shape), tf.repeat, tf.tensor_scatter_nd_update /
_add / _sub, unravel_index, switch_case, scalar_mul, grad_pass_through, vectorized_map,
tf.function in graph mode, and the switches of TF2 behaviour that a TF1 program turns off.

Example::

    y = sf.ensure_shape(x, [None, 28, 28, 1])          # checked when the graph runs
    z = sf.repeat(x, [1, 3, 2], axis=0)                 # row i repeated repeats[i] times
    t = sf.tensor_scatter_nd_update(t, [[0], [2]], [9.0, 7.0])

    @sf.function
    def step(x):                                        # graph mode: traced where it is called
        return sf.reduce_sum(x * x)

Each is made of existing ops, so gradients flow where TF's do (ensure_shape, repeat,
tensor_scatter_*, grad_pass_through's identity).
"""

import enum
import functools
import logging
import numbers
import re

import numpy as np

from shardflow import array_ops, check_ops, dtypes, errors, ops
from shardflow.array_composites import sequence_mask
from shardflow.array_ops import boolean_mask
from shardflow.framework import (Tensor, TensorShape, _UnknownDimension, control_dependencies,
                                 convert_to_tensor)
from shardflow.math_composites import rank, size


def arg_max(input, dimension=None, output_type=dtypes.int64, name=None):  # noqa: A002
    """TF1's old name of argmax (the axis called `dimension`); its third parameter is
    output_type, as TF1's tf.arg_max(input, dimension, output_type, name)."""
    return ops.argmax(input, dimension=dimension, name=name, output_type=output_type)


def arg_min(input, dimension=None, output_type=dtypes.int64, name=None):  # noqa: A002
    """TF1's old name of argmin: tf.arg_min(input, dimension, output_type, name)."""
    return array_ops.argmin(input, dimension=dimension, name=name, output_type=output_type)


def floor_div(x, y, name=None):
    return ops.floordiv(x, y, name=name)


def scalar_mul(scalar, x, name=None):
    """`scalar` (a number or a 0-d tensor) times `x`."""
    return ops.multiply(scalar, x, name=name)


def to_bfloat16(x, name="ToBFloat16"):
    return ops.cast(x, dtypes.bfloat16, name=name)


def parallel_stack(values, name="parallel_stack"):
    """tf.stack of tensors of known, equal shapes (TF1 copies them in parallel)."""
    return array_ops.stack(values, name=name)


def guarantee_const(input, name=None):  # noqa: A002
    """`input`, promised constant (no effect here beyond an identity)."""
    return ops.identity(input, name=name)


def dimension_value(dimension):
    """A dimension as an int (None when unknown), whether a Dimension or an int."""
    return getattr(dimension, "value", dimension)   # a Dimension, known or not, or an int


def dimension_at_index(shape, index):
    """Dimension `index` of `shape` as a Dimension (unknown past an unknown rank)."""
    shape = TensorShape(shape)
    if shape.ndims is None:
        return _UnknownDimension()
    return shape[index]


def get_logger():
    """The "tensorflow" logger of Python's logging (TF1's tf.get_logger)."""
    return logging.getLogger("tensorflow")


def initialize_all_tables(name="init_all_tables"):
    from shardflow.variables import tables_initializer
    return tables_initializer(name=name)


def initialize_local_variables():
    from shardflow.variables import local_variables_initializer
    return local_variables_initializer()


def convert_to_tensor_or_sparse_tensor(value, dtype=None, name=None):
    """A SparseTensor as it is, anything else as convert_to_tensor."""
    from shardflow.sparse_tensor import SparseTensor
    if isinstance(value, SparseTensor):
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def assert_variables_initialized(var_list=None):
    """An op that fails naming the uninitialized variables of `var_list` (default: all)."""
    from shardflow.state_composites import report_uninitialized_variables
    names = report_uninitialized_variables(var_list)
    return check_ops.assert_equal(size(names), 0, data=[names],
                                  message="variables not initialized:")


def ensure_shape(x, shape, name=None):
    """`x`, its static shape merged with `shape` (ValueError when they disagree); the
    dimensions `shape` knows and `x`'s static shape does not are checked when the graph runs
    (InvalidArgumentError naming both shapes)."""
    x = convert_to_tensor(x)
    want = TensorShape(shape)
    merged = x.shape.merge_with(want)   # ValueError on a static disagreement
    checks = []
    if want.ndims is not None:
        dims = want.as_list()
        if x.shape.ndims is None:
            checks.append(check_ops.assert_equal(
                rank(x), len(dims),
                message="Shape of tensor %s is not compatible with expected shape %s"
                % (x.name, dims)))
        known = x.shape.as_list() if x.shape.ndims is not None else [None] * len(dims)
        pick = [i for i, (d, k) in enumerate(zip(dims, known)) if d is not None and k is None]
        if pick:
            actual = array_ops.gather(ops.shape(x), np.array(pick, np.int32))
            checks.append(check_ops.assert_equal(
                actual, np.array([dims[i] for i in pick], np.int32),
                message="Shape of tensor %s is not compatible with expected shape %s"
                % (x.name, dims)))
    if checks:
        with control_dependencies(checks):
            out = ops.identity(x, name=name)
    else:
        out = ops.identity(x, name=name)
    out.set_shape(merged)
    return out


def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    """Each element of `input` along `axis` repeated `repeats` times (a number, or one count
    per element); axis None repeats the flattened input, as TF 1.15's tf.repeat / np.repeat."""
    x = convert_to_tensor(input)
    if axis is None:
        x, axis = ops.reshape(x, [-1]), 0
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("repeat needs an input of known rank")
    axis = axis % rank
    counts = repeats if isinstance(repeats, Tensor) else np.asarray(repeats)
    if not isinstance(counts, Tensor) and counts.ndim == 0:
        # One count: the axis's elements each broadcast `repeats` times, side by side.
        n = int(counts)
        expanded = ops.expand_dims(x, axis + 1)
        tiled = array_ops.tile(expanded, [1] * (axis + 1) + [n] + [1] * (rank - axis - 1))
        shape = ops.shape(x)
        dims = [shape[i] for i in range(rank)]
        dims[axis] = dims[axis] * n
        out = ops.reshape(tiled, dims, name=name)
        static = x.shape.as_list()
        static[axis] = None if static[axis] is None else static[axis] * n
        out.set_shape(static)
        return out
    # One count per element: gather the element indices, each repeated, in order.
    counts = ops.cast(convert_to_tensor(counts), dtypes.int32)
    longest = ops.reduce_max(ops.concat([ops.reshape(counts, [-1]), [0]], 0))
    mask = sequence_mask(counts, longest)                          # [elements, longest]
    positions = ops.expand_dims(array_ops.range(size(counts)), 1)
    index = ops.add(positions, ops.zeros_like(ops.cast(mask, dtypes.int32)))
    picked = boolean_mask(index, mask)                              # i repeated counts[i] times
    return array_ops.gather(x, picked, axis=axis, name=name)


def _scatter_like(tensor, indices, updates):
    from shardflow.array_ops import scatter_nd
    tensor = convert_to_tensor(tensor)
    if not tensor.shape.is_fully_defined():
        raise ValueError("tensor_scatter_nd_*: the tensor's shape must be known, got %s"
                         % tensor.shape)
    updates = ops.cast(convert_to_tensor(updates), tensor.dtype)
    return tensor, scatter_nd(indices, updates, tensor.shape.as_list()), updates


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """A copy of `tensor` with `updates` added at `indices` ([N, k] into its first k
    dimensions; duplicates add up)."""
    tensor, scattered, _ = _scatter_like(tensor, indices, updates)
    return ops.add(tensor, scattered, name=name)


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    tensor, scattered, _ = _scatter_like(tensor, indices, updates)
    return ops.subtract(tensor, scattered, name=name)


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of `tensor` with `updates` at `indices` (the rest unchanged)."""
    from shardflow.array_ops import scatter_nd
    tensor, scattered, updates = _scatter_like(tensor, indices, updates)
    hit = scatter_nd(indices, ops.ones_like(updates), tensor.shape.as_list())
    keep = ops.cast(ops.equal(hit, ops.zeros_like(hit)), tensor.dtype)
    return ops.add(ops.multiply(tensor, keep), scattered, name=name)


tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub
tensor_scatter_update = tensor_scatter_nd_update


def unravel_index(indices, dims, name=None):
    """The coordinates of flat `indices` in an array of shape `dims`: [len(dims)] for a
    scalar, [len(dims), N] for a vector of indices (np.unravel_index, stacked)."""
    flat = convert_to_tensor(indices)
    dims = ops.cast(convert_to_tensor(dims), flat.dtype)
    n = dims.shape.as_list()[0]
    if n is None:
        raise ValueError("unravel_index needs dims of known length")
    coords, rest = [], flat
    for i in reversed(range(n)):
        d = dims[i]
        coords.append(ops.floormod(rest, d))
        rest = ops.floordiv(rest, d)
    return array_ops.stack(coords[::-1], name=name)


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """The result of branch_fns[branch_index]() (a list, or a dict of index -> function);
    `default` (else the last branch) for an index outside them, as TF 1.15's tf.switch_case."""
    from shardflow.control_flow import case
    pairs = sorted(branch_fns.items()) if isinstance(branch_fns, dict) else \
        list(enumerate(branch_fns))
    if not pairs:
        raise ValueError("switch_case: branch_fns is empty")
    index = convert_to_tensor(branch_index)
    default = default or pairs[-1][1]
    return case([(ops.equal(index, k), fn) for k, fn in pairs], default=default,
                exclusive=True, name=name)


def grad_pass_through(f):
    """f, its gradient taken as the identity's (straight-through), as TF 1.15's."""
    @functools.wraps(f)
    def wrapped(x, *args, **kwargs):
        x = convert_to_tensor(x)
        y = f(x, *args, **kwargs)
        return ops.add(x, ops.stop_gradient(ops.subtract(y, x)))
    return wrapped


def vectorized_map(fn, elems):
    """fn over the first dimension of `elems`; TF falls back to a loop where it cannot
    vectorize, as map_fn does here."""
    from shardflow.functional_ops import map_fn
    return map_fn(fn, elems)


def function(func=None, input_signature=None, autograph=True, experimental_autograph_options=None,
             experimental_relax_shapes=False, experimental_compile=None):
    """TF 1.15's tf.function in graph mode: the Python function is traced into the graph where
    it is called (as TF1 graph code runs it), so its ops are the caller's. `input_signature`
    is checked against the arguments' dtypes and shapes; autograph is not applied (write
    tf.cond / tf.while_loop for tensor-dependent control flow)."""
    def decorate(fn):
        @functools.wraps(fn)
        def traced(*args, **kwargs):
            if input_signature is not None:
                _check_signature(fn, input_signature, args)
            return fn(*args, **kwargs)
        traced.python_function = fn
        traced.input_signature = input_signature
        return traced
    return decorate if func is None else decorate(func)


def _check_signature(fn, signature, args):
    if len(args) != len(signature):
        raise TypeError("%s takes %d arguments by its input_signature, got %d"
                        % (getattr(fn, "__name__", fn), len(signature), len(args)))
    for spec, arg in zip(signature, args):
        t = convert_to_tensor(arg, dtype=getattr(spec, "dtype", None))
        shape = getattr(spec, "shape", None)
        if shape is not None and not TensorShape(shape).is_compatible_with(t.shape):
            raise ValueError("%s: argument of shape %s does not fit the input_signature's %s"
                             % (getattr(fn, "__name__", fn), t.shape, shape))


def load_op_library(library_filename):
    """Custom TensorFlow op libraries (.so built against TensorFlow) cannot load here."""
    raise NotImplementedError(
        "load_op_library(%r): a TensorFlow custom-op library cannot load into shardflow (its "
        "kernels are built against TensorFlow's C++ API); write the op as a composition of "
        "shardflow ops, as a tf.py_func, or as a shardflow kernel (docs/ops.md)"
        % (library_filename,))


def load_library(library_location):
    """As load_op_library: a TensorFlow plugin library cannot load here."""
    return load_op_library(library_location)


load_file_system_library = load_op_library


def op_scope(values, name, default_name=None):
    """TF 0.x's spelling of name_scope(name, default_name, values)."""
    from shardflow.framework import name_scope
    return name_scope(name, default_name, values)


def variable_op_scope(values, name_or_scope, default_name=None, initializer=None,
                      regularizer=None, caching_device=None, partitioner=None,
                      custom_getter=None, reuse=None, dtype=None, use_resource=None,
                      constraint=None):
    """TF 0.x's spelling of variable_scope(name_or_scope, default_name, values, ...)."""
    import shardflow as sf
    return sf.variable_scope(name_or_scope, default_name=default_name, values=values,
                             initializer=initializer, regularizer=regularizer,
                             caching_device=caching_device, partitioner=partitioner,
                             custom_getter=custom_getter, reuse=reuse, dtype=dtype,
                             use_resource=use_resource, constraint=constraint)


def no_regularizer(_):
    """The regularizer that adds no loss (TF1's tf.no_regularizer): returns None."""
    return None


def sparse_matmul(a, b, transpose_a=False, transpose_b=False, a_is_sparse=False,
                  b_is_sparse=False, name=None):
    """TF1's tf.sparse_matmul: the product of two dense matrices, a_is_sparse / b_is_sparse
    being hints of mostly-zero operands; the value is matmul's."""
    return ops.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b, name=name)


def _real_only(what, x):
    x = convert_to_tensor(x)
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError("%s: shardflow has no complex dtypes; got a %s tensor"
                        % (what, x.dtype.name))
    return x


def real(input, name=None):  # noqa: A002
    """The real part: for a real tensor, the tensor itself (as TF1's tf.real)."""
    return ops.identity(_real_only("real", input), name=name)


def imag(input, name=None):  # noqa: A002
    """The imaginary part: for a real tensor, zeros of its shape (as TF1's tf.imag)."""
    return ops.zeros_like(_real_only("imag", input), name=name)


def conj(x, name=None):
    """The complex conjugate: for a real tensor, the tensor itself (as TF1's tf.conj)."""
    return ops.identity(_real_only("conj", x), name=name)


def enable_v2_behavior():
    raise NotImplementedError("enable_v2_behavior: shardflow runs TensorFlow 1.x graphs and "
                              "sessions; TF2's eager execution is not available")


def _no_op_switch(name):
    def switch():
        """Accepted: shardflow's graphs already behave so (TF1's semantics)."""
    switch.__name__ = name
    return switch


disable_v2_tensorshape = _no_op_switch("disable_v2_tensorshape")
enable_v2_tensorshape = _no_op_switch("enable_v2_tensorshape")
disable_control_flow_v2 = _no_op_switch("disable_control_flow_v2")
enable_control_flow_v2 = _no_op_switch("enable_control_flow_v2")
disable_tensor_equality = _no_op_switch("disable_tensor_equality")
enable_tensor_equality = _no_op_switch("enable_tensor_equality")


__all__ = ["arg_max", "arg_min", "assert_variables_initialized",
           "convert_to_tensor_or_sparse_tensor", "dimension_at_index", "dimension_value",
           "disable_control_flow_v2", "disable_tensor_equality", "disable_v2_tensorshape",
           "enable_control_flow_v2", "enable_tensor_equality", "enable_v2_behavior",
           "enable_v2_tensorshape", "ensure_shape", "floor_div", "function", "get_logger",
           "grad_pass_through", "guarantee_const", "initialize_all_tables",
           "initialize_local_variables", "load_file_system_library", "load_library",
           "load_op_library", "parallel_stack", "repeat", "scalar_mul", "switch_case",
           "tensor_scatter_add", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
           "tensor_scatter_nd_update", "tensor_scatter_sub", "tensor_scatter_update",
           "to_bfloat16", "unravel_index", "vectorized_map", "op_scope", "variable_op_scope",
           "no_regularizer", "sparse_matmul", "real", "imag", "conj",
           "required_space_to_batch_paddings"]


def string_strip(input, name=None):  # noqa: A002
    """TF1's old name of tf.strings.strip (leading and trailing whitespace removed)."""
    from shardflow.string_ops import strings
    return strings.strip(input, name=name)


__all__.append("string_strip")


class TensorSpec:
    """A tensor's shape and dtype (TF 1.14's tf.TensorSpec), for input signatures."""

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        self.shape = TensorShape(shape)
        self.dtype = dtypes.as_dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name or getattr(tensor, "op", None) and
                   tensor.op.name)

    def is_compatible_with(self, spec_or_tensor):
        return (self.dtype == spec_or_tensor.dtype and
                self.shape.is_compatible_with(spec_or_tensor.shape))

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self.dtype == other.dtype and
                self.shape.as_list() == other.shape.as_list() and self.name == other.name) \
            if self.shape.ndims is not None else self is other

    def __hash__(self):
        return hash((self.dtype, self.name))

    def __repr__(self):
        return "TensorSpec(shape=%s, dtype=%s, name=%r)" % (self.shape, self.dtype, self.name)


__all__.append("TensorSpec")


# ---- names other TF1 namespaces lack (attached by _attach_aliases) -------------------------


def _conv2d_backprop_input(input_sizes, filter=None, out_backprop=None,  # noqa: A002
                           strides=None, padding=None, use_cudnn_on_gpu=True,
                           data_format="NHWC", dilations=(1, 1, 1, 1), name=None,
                           filters=None):
    """tf.nn.conv2d_backprop_input: the gradient of conv2d with respect to its input, i.e.
    conv2d_transpose of `out_backprop` to `input_sizes`."""
    from shardflow import nn
    if list(dilations) != [1, 1, 1, 1]:
        raise ValueError("conv2d_backprop_input: dilations other than 1 are not supported")
    return nn.conv2d_transpose(out_backprop, filter if filter is not None else filters,
                               input_sizes, strides, padding, data_format=data_format,
                               name=name)


def _conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                            use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1),
                            name=None):
    """tf.nn.conv2d_backprop_filter: the gradient of conv2d(input, filter) with respect to a
    filter of shape `filter_sizes` [kh, kw, in, out], given the output's gradient."""
    from shardflow import nn
    if list(dilations) != [1, 1, 1, 1]:
        raise ValueError("conv2d_backprop_filter: dilations other than 1 are not supported")
    if data_format not in ("NHWC", None):
        raise ValueError("conv2d_backprop_filter: only data_format='NHWC' is supported")
    sizes = filter_sizes
    if not isinstance(sizes, Tensor):
        sizes = np.asarray(sizes, np.int32)
    out = ops._out("Conv2DBackpropFilter", [input, sizes, out_backprop],
                   {"strides": nn._four(strides, "strides"), "padding": nn._padding(padding)},
                   name)
    if not isinstance(filter_sizes, Tensor):
        out.set_shape([int(d) for d in filter_sizes])
    return out


class VariableSynchronization(enum.Enum):
    """TF1's tf.VariableSynchronization: when a distributed variable's copies are synced
    (accepted by get_variable / Variable; one process has one copy)."""
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """TF1's tf.VariableAggregation: how a distributed variable's updates combine (accepted
    by get_variable / Variable; one process has one copy)."""
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3       # TF1's older name of ONLY_FIRST_REPLICA (an alias)


def _num_replicas():
    from shardflow.distribute import get_replica_context
    context = get_replica_context()
    return getattr(context, "num_replicas_in_sync", 1) if context is not None else 1


def _compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """tf.nn.compute_average_loss: the sum of the (weighted) per-example losses over the
    global batch size (default: this replica's batch times the replicas in sync)."""
    loss = convert_to_tensor(per_example_loss)
    if sample_weight is not None:
        loss = ops.multiply(loss, ops.cast(sample_weight, loss.dtype))
    total = ops.reduce_sum(loss)
    if global_batch_size is None:
        batch = ops.cast(ops.shape(loss)[0], loss.dtype)
        return ops.divide(total, ops.multiply(batch, float(_num_replicas())))
    return ops.divide(total, ops.cast(global_batch_size, loss.dtype))


def _scale_regularization_loss(regularization_loss):
    """tf.nn.scale_regularization_loss: the sum divided by the replicas in sync."""
    total = ops.add_n(list(regularization_loss)) if isinstance(
        regularization_loss, (list, tuple)) else convert_to_tensor(regularization_loss)
    return ops.divide(total, float(_num_replicas()))


def _checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """tf.train.checkpoints_iterator: each new checkpoint of `checkpoint_dir` as it appears
    (at least min_interval_secs apart); after `timeout` seconds without one, stops (or asks
    timeout_fn whether to, when given), as an evaluation loop reads a training job's."""
    import time
    from shardflow.train import latest_checkpoint
    last = None
    while True:
        deadline = None if timeout is None else time.time() + timeout
        while True:
            path = latest_checkpoint(checkpoint_dir)
            if path is not None and path != last:
                break
            if deadline is not None and time.time() > deadline:
                path = None
                break
            time.sleep(min(1.0, max(0.05, float(min_interval_secs) or 1.0)))
        if path is None:
            if timeout_fn is None or timeout_fn():
                return
            continue
        started = time.time()
        last = path
        yield path
        rest = float(min_interval_secs) - (time.time() - started)
        if rest > 0:
            time.sleep(rest)


def _b64_encode(input, pad=False, name=None):  # noqa: A002
    """tf.io.encode_base64: web-safe base64 (- and _), without '=' padding unless pad."""
    import base64
    from shardflow import string_ops

    def encode(v):
        out = base64.urlsafe_b64encode(v if isinstance(v, bytes) else str(v).encode())
        return out if pad else out.rstrip(b"=")
    return string_ops._map(encode, input, dtypes.string, name or "EncodeBase64")


_B64_WEB_SAFE = re.compile(rb"[A-Za-z0-9_-]*")


def _b64_decode(input, name=None):  # noqa: A002
    """tf.io.decode_base64: web-safe base64, padded or not."""
    import base64
    import binascii

    from shardflow import string_ops

    def decode(v):
        # As TF's DecodeBase64: only the web-safe alphabet, '=' padding only at the end (and
        # optional); anything else is an error (Python's decoder skipped stray characters).
        v = v if isinstance(v, bytes) else str(v).encode()
        body = v.rstrip(b"=")
        if (len(v) - len(body) > 2 or _B64_WEB_SAFE.fullmatch(body) is None
                or len(body) % 4 == 1 or (len(v) != len(body) and len(v) % 4)):
            raise errors.InvalidArgumentError(
                "decode_base64: %r is not web-safe base64 (A-Z, a-z, 0-9, '-', '_', '=' "
                "padding at the end): Invalid character found in base64" % (v[:40],))
        try:
            return base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4))
        except (binascii.Error, ValueError) as e:
            raise errors.InvalidArgumentError("decode_base64: %r is not web-safe base64: %s"
                                              % (v[:40], e)) from None
    return string_ops._map(decode, input, dtypes.string, name or "DecodeBase64")


def _multiply_no_nan(x, y, name=None):
    """x * y, 0 where y is 0 even when x is inf or NaN (tf.math.multiply_no_nan)."""
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    product = ops.multiply(x, y)
    zero = ops.zeros_like(product)
    return array_ops.where(ops.equal(ops.add(y, zero), zero), zero, product, name=name)


def _reciprocal_no_nan(x, name=None):
    """1 / x, 0 where x is 0 (tf.math.reciprocal_no_nan)."""
    import shardflow as sf
    x = convert_to_tensor(x)
    return sf.div_no_nan(ops.ones_like(x), x, name=name)


def _matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
            name=None):
    """tf.linalg.matvec: a @ b for the vector(s) b (the last axis of b)."""
    import shardflow as sf
    product = sf.matmul(a, ops.expand_dims(b, -1), transpose_a=transpose_a or adjoint_a)
    return ops.squeeze(product, [-1], name=name)


def _adjoint(matrix, name=None):
    """The conjugate transpose of the last two axes (the transpose for real matrices)."""
    import shardflow as sf
    return sf.matrix_transpose(matrix, name=name)


def _normalize(tensor, ord="euclidean", axis=None, name=None):  # noqa: A002
    """(tensor / norm, norm) as tf.linalg.normalize."""
    import shardflow as sf
    norm = sf.norm(tensor, ord=ord, axis=axis, keepdims=True)
    return ops.divide(tensor, norm, name=name), norm


def _local_variable(initial_value, validate_shape=True, name=None, use_resource=None):
    """contrib.framework.local_variable: a non-trainable variable in LOCAL_VARIABLES."""
    import shardflow as sf
    return sf.Variable(initial_value, trainable=False, name=name,
                       collections=[sf.GraphKeys.LOCAL_VARIABLES])


# ---- tf.random.stateless_categorical: the same classes for the same seed, every run --------
# (stateless_uniform, _normal and _truncated_normal are native ops: shardflow/ops.py)


def _philox(key):
    """NumPy's Philox generator keyed by a [2] int seed."""
    key = np.asarray(key, dtype=np.int64).astype(np.uint64)
    return np.random.Generator(np.random.Philox(key=[int(key[0]), int(key[1])]))


def _stateless_categorical(logits, num_samples, seed, dtype=dtypes.int64, name=None):
    """num_samples class indices per row of `logits` [batch, classes]."""
    from shardflow.script_ops import py_func
    logits = convert_to_tensor(logits)
    seed = ops.cast(convert_to_tensor(seed), dtypes.int64)
    dt = dtypes.as_dtype(dtype)

    def run(values, key):
        generator = _philox(key)
        values = np.asarray(values, dtype=np.float64)
        p = np.exp(values - values.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        return np.stack([generator.choice(p.shape[1], size=int(num_samples), p=row)
                         for row in p]).astype(dt.as_numpy_dtype).reshape(len(p),
                                                                         int(num_samples))
    out = py_func(run, [logits, seed], dt, stateful=False,
                  name=name or "stateless_categorical")
    out.set_shape([logits.shape.as_list()[0] if logits.shape.ndims else None,
                   int(num_samples)])
    return out


def _stateless_multinomial(logits, num_samples, seed, output_dtype=dtypes.int64, name=None):
    """TF1's tf.random.stateless_multinomial: stateless_categorical with its dtype called
    output_dtype."""
    return _stateless_categorical(logits, num_samples, seed, dtype=output_dtype, name=name)


def required_space_to_batch_paddings(input_shape, block_shape, base_paddings=None,
                                     name=None):
    """TF1's tf.required_space_to_batch_paddings: (paddings, crops), both [N, 2] int32, such
    that input_shape + base_paddings plus the extra end padding is divisible by block_shape;
    crops [[0, extra], ...] undo that extra padding after batch_to_space_nd."""
    from shardflow.framework import name_scope
    with name_scope(name, "required_space_to_batch_paddings",
                    [input_shape, block_shape, base_paddings]):
        input_shape = ops.cast(convert_to_tensor(input_shape), dtypes.int32)
        block_shape = ops.cast(convert_to_tensor(block_shape), dtypes.int32)
        if base_paddings is None:
            base_paddings = ops.zeros(array_ops.stack([ops.shape(block_shape)[0], 2]),
                                      dtypes.int32)
        base_paddings = ops.cast(convert_to_tensor(base_paddings), dtypes.int32)
        pad_start, pad_end = base_paddings[:, 0], base_paddings[:, 1]
        full = input_shape + pad_start + pad_end
        extra = ops.floormod(block_shape - ops.floormod(full, block_shape), block_shape)
        paddings = array_ops.stack([pad_start, pad_end + extra], axis=1, name="paddings")
        crops = array_ops.stack([ops.zeros_like(extra), extra], axis=1, name="crops")
        return paddings, crops


def _path_to_str(path):
    """TF1's tf.compat.path_to_str: a PathLike object as its str, anything else unchanged."""
    if hasattr(path, "__fspath__"):
        path = path.__fspath__()
        return path.decode("utf-8") if isinstance(path, bytes) else path
    return path


def _attach_aliases():
    """Adds the names above, and TF1's other spellings of existing ones, to the namespaces
    that lacked them. Called once by shardflow/__init__.py."""
    import types

    import shardflow as sf
    from shardflow import candidate_sampling
    additions = {
        sf.nn: {"avg_pool2d": sf.nn.avg_pool, "max_pool2d": sf.nn.max_pool,
                "max_pool_v2": sf.nn.max_pool, "space_to_batch": sf.space_to_batch,
                "conv2d_backprop_input": _conv2d_backprop_input,
                "conv2d_backprop_filter": _conv2d_backprop_filter,
                "compute_average_loss": _compute_average_loss,
                "scale_regularization_loss": _scale_regularization_loss,
                "all_candidate_sampler": candidate_sampling.all_candidate_sampler,
                "learned_unigram_candidate_sampler":
                    candidate_sampling.learned_unigram_candidate_sampler,
                "compute_accidental_hits": candidate_sampling.compute_accidental_hits},
        sf.train: {"piecewise_constant_decay": sf.train.piecewise_constant,
                   "checkpoints_iterator": _checkpoints_iterator,
                   "queue_runner": types.SimpleNamespace(
                       QueueRunner=sf.train.QueueRunner,
                       add_queue_runner=sf.train.add_queue_runner,
                       start_queue_runners=sf.train.start_queue_runners)},
        sf.layers: {"InputSpec": sf.keras.layers.InputSpec},
        sf.random: {"stateless_uniform": ops.stateless_random_uniform,
                    "stateless_normal": ops.stateless_random_normal,
                    "stateless_truncated_normal": ops.stateless_truncated_normal,
                    "stateless_categorical": _stateless_categorical,
                    "stateless_multinomial": _stateless_multinomial,
                    "get_seed": sf.get_seed,
                    "multinomial": sf.multinomial,
                    "fixed_unigram_candidate_sampler": sf.nn.fixed_unigram_candidate_sampler,
                    "log_uniform_candidate_sampler": sf.nn.log_uniform_candidate_sampler,
                    "uniform_candidate_sampler": sf.nn.uniform_candidate_sampler},
        sf.io: {"PaddingFIFOQueue": sf.PaddingFIFOQueue,
                "RandomShuffleQueue": sf.RandomShuffleQueue, "QueueBase": sf.QueueBase,
                "match_filenames_once": sf.train.match_filenames_once,
                "is_tensor": sf.is_tensor, "encode_base64": _b64_encode,
                "decode_base64": _b64_decode},
        sf: {"encode_base64": _b64_encode, "decode_base64": _b64_decode,
             "OpError": errors.OpError,
             "VariableSynchronization": VariableSynchronization,
             "VariableAggregation": VariableAggregation,
             "manip": types.SimpleNamespace(
                 batch_to_space_nd=sf.batch_to_space_nd, gather_nd=sf.gather_nd,
                 reshape=sf.reshape, reverse=sf.reverse, roll=sf.roll, scatter_nd=sf.scatter_nd,
                 space_to_batch_nd=sf.space_to_batch_nd, tile=sf.tile),
             "queue": types.SimpleNamespace(
                 FIFOQueue=sf.FIFOQueue, PaddingFIFOQueue=sf.PaddingFIFOQueue,
                 RandomShuffleQueue=sf.RandomShuffleQueue, QueueBase=sf.QueueBase)},
        sf.math: {"multiply_no_nan": _multiply_no_nan, "reciprocal_no_nan": _reciprocal_no_nan,
                  "scalar_mul": scalar_mul, "real": real, "imag": imag, "conj": conj},
        sf.linalg: {"global_norm": sf.global_norm, "matvec": _matvec, "adjoint": _adjoint,
                    "normalize": _normalize, "tensor_diag": sf.diag,
                    "tensor_diag_part": sf.diag_part,
                    "cholesky_solve": getattr(sf, "cholesky_solve", None)},
        sf.debugging: {"assert_proper_iterable": sf.assert_proper_iterable},
        sf.compat: {"dimension_value": dimension_value,
                    "dimension_at_index": dimension_at_index, "path_to_str": _path_to_str,
                    "bytes_or_text_types": (bytes, str),
                    "integral_types": (numbers.Integral, np.integer),
                    "real_types": (numbers.Real, np.integer, np.floating),
                    "complex_types": (numbers.Complex, np.number)},
        sf.dtypes: {"cast": sf.cast, "saturate_cast": sf.saturate_cast,
                    "as_string": sf.as_string},
        sf.contrib.framework: {"is_tensor": sf.is_tensor,
                               "local_variable": _local_variable},
    }
    # TF 1.14's tf.io spellings of tf.image's codecs
    for name in ("decode_and_crop_jpeg", "decode_bmp", "decode_gif", "decode_image",
                 "decode_jpeg", "decode_png", "encode_jpeg", "encode_png", "extract_jpeg_shape",
                 "is_jpeg"):
        additions[sf.io][name] = getattr(sf.image, name, None)
    # TF1's top-level sparse_* spellings of tf.sparse's functions
    for name in ("maximum", "minimum", "merge", "reduce_max", "reduce_max_sparse",
                 "reduce_sum_sparse", "reset_shape", "softmax", "split", "to_indicator", "mask"):
        if hasattr(sf.sparse, name):
            additions[sf]["sparse_" + name] = getattr(sf.sparse, name)
    for namespace, names in additions.items():
        for name, value in names.items():
            if value is not None and not hasattr(namespace, name):
                setattr(namespace, name, value)
    if not hasattr(sf, "newaxis"):
        sf.newaxis = None                    # x[:, tf.newaxis] inserts a dimension of size 1
