"""Neural-network ops: activations, convolution, pooling, losses, dropout.

The activations and losses that TF1 has as kernels of their own (softplus, elu, sigmoid cross
entropy, ...) are composed here from the engine's ops, in forms that stay finite for large |x|
in value and gradient: Note [Stable composites] below.

Images are NHWC ([batch, height, width, channels]); filters are [height, width, in, out].
conv1d, depthwise_conv2d and separable_conv2d are composed from Conv2D (conv_composites.py);
the candidate samplers, nce_loss and sampled_softmax_loss live in candidate_sampling.py, the
CTC loss and decoders in ctc_ops.py.

Example::

    h = sf.nn.relu(sf.nn.conv2d(images, filters, strides=1, padding="SAME"))
    p = sf.nn.max_pool(h, ksize=2, strides=2, padding="VALID")
    loss = sf.reduce_mean(sf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z))
"""

import collections

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow import rnn_cell  # noqa: F401 (sf.nn.rnn_cell.BasicLSTMCell, ...)
from shardflow.ops import _op, _out, sigmoid, tanh  # noqa: F401 (re-exported)
from shardflow.rnn_cell import (bidirectional_dynamic_rnn, dynamic_rnn,  # noqa: F401
                                raw_rnn, static_bidirectional_rnn, static_rnn)
from shardflow.candidate_sampling import (fixed_unigram_candidate_sampler,  # noqa: F401
                                          log_uniform_candidate_sampler, nce_loss,
                                          sampled_softmax_loss, uniform_candidate_sampler)
from shardflow.ctc_ops import (ctc_beam_search_decoder, ctc_greedy_decoder,  # noqa: F401
                               ctc_loss, ctc_loss_v2)
from shardflow.nn3d import (avg_pool3d, conv3d, conv3d_transpose,  # noqa: F401
                            max_pool3d)
from shardflow.conv_composites import (_rates, atrous_conv2d, dilated_conv2d,  # noqa: F401
                                       conv1d, depthwise_conv2d,
                                       separable_conv2d)
from shardflow.sparse_embedding import (embedding_lookup_sparse,  # noqa: F401
                                        safe_embedding_lookup_sparse)


def relu(features, name=None):
    """max(features, 0). Example: ``h = sf.nn.relu(sf.matmul(x, w) + b)``."""
    return _out("Relu", [features], name=name)


def _along(op_type, logits, axis, dim, name, what):
    """op_type (along the last dimension) applied along `axis`: moved last and back."""
    from shardflow import ops
    from shardflow.framework import convert_to_tensor
    axis = ops._alias(axis, dim, "dim", "axis", what)
    logits = convert_to_tensor(logits)
    rank = logits.shape.ndims
    if axis is None or axis == -1 or (rank is not None and axis == rank - 1):
        return _out(op_type, [logits], name=name)
    if rank is None:
        raise ValueError("%s(axis=%r) needs logits of known rank" % (what, axis))
    if not -rank <= axis < rank:
        raise ValueError("%s: axis %r is out of range for rank %d" % (what, axis, rank))
    perm = _axis_last(axis, rank)
    back = [perm.index(d) for d in range(rank)]
    return ops.transpose(_out(op_type, [ops.transpose(logits, perm)]), back, name=name)


def _axis_last(axis, rank):
    """The permutation that moves dimension `axis` last, the others in order."""
    axis %= rank
    return [d for d in range(rank) if d != axis] + [axis]


def softmax(logits, axis=None, name=None, dim=None):
    """exp(logits) / sum(exp(logits)) along `axis` (default the last; TF1's older name:
    dim)."""
    return _along("Softmax", logits, axis, dim, name, "softmax")


def log_softmax(logits, axis=None, name=None, dim=None):
    """log(softmax(logits)) along `axis` (default the last), computed stably."""
    return _along("LogSoftmax", logits, axis, dim, name, "log_softmax")


def bias_add(value, bias, data_format=None, name=None):
    """`value` plus the vector `bias` along the last dimension (data_format "NHWC" or None),
    or along dimension 1 ("NCHW", "NCW", "NCDHW")."""
    if data_format is None or not str(data_format).startswith("NC"):
        return _out("BiasAdd", [value, bias], name=name)
    from shardflow import ops
    from shardflow.framework import convert_to_tensor
    value = convert_to_tensor(value)
    rank = value.shape.ndims
    if rank is None or rank < 2:
        raise ValueError("bias_add(data_format=%r) needs a value of known rank >= 2"
                         % (data_format,))
    return ops.add(value, ops.reshape(bias, [-1] + [1] * (rank - 2)), name=name)


def _four(v, what):
    """An int, a pair (h, w) or a full [1, h, w, 1] list as the 4-element form."""
    if isinstance(v, int):
        return [1, v, v, 1]
    v = list(v)
    if len(v) == 2:
        return [1, v[0], v[1], 1]
    if len(v) == 4:
        return v
    raise ValueError("%s takes an int, [h, w] or [1, h, w, 1], not %r" % (what, v))


def _padding(p):
    if not isinstance(p, str):
        raise TypeError("padding must be 'SAME' or 'VALID', not %r" % (p,))
    return p.upper()


def _nhwc(data_format, what):
    if data_format not in (None, "NHWC"):
        raise ValueError(
            "%s(data_format=%r): shardflow's CPU kernels take NHWC only; give NHWC input (from "
            "NCHW: sf.transpose(x, [0, 2, 3, 1])) and leave data_format out or 'NHWC'"
            % (what, data_format))


def moving_variance_update(x, batch_variance):
    """The variance a batch-normalization layer's moving average takes from a batch of `x`
    (channels last): the fused kernel's unbiased one for 4-D inputs, the biased one otherwise,
    as TF1's layers, which use the fused kernel only for images and nn.moments elsewhere."""
    from shardflow.math_composites import size
    if x.shape.ndims == 4:
        return batch_variance
    count = ops.divide(ops.cast(size(x), batch_variance.dtype),
                       ops.cast(ops.shape(x)[-1], batch_variance.dtype))
    return ops.multiply(batch_variance, ops.divide(ops.subtract(count, 1.0),
                                                   ops.maximum(count, 1.0)))


def channels_last(x, axis, what):
    """(x with dimension `axis` moved last, a function moving it back in a result of x's
    shape): for layers that normalise over another axis than the last (NCHW's channels)."""
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("%s over axis %r needs inputs of known rank, got %s" % (what, axis, x))
    if not -rank <= axis < rank:
        raise ValueError("%s: axis %r is out of range for inputs of rank %d" % (what, axis, rank))
    axis %= rank
    if axis == rank - 1:
        return x, lambda y: y
    perm = [d for d in range(rank) if d != axis] + [axis]
    back = [perm.index(d) for d in range(rank)]
    return ops.transpose(x, perm), lambda y: ops.transpose(y, back)


def conv2d(input, filters=None, strides=1, padding="SAME", use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=None, name=None, filter=None):  # noqa: A002
    """2-D convolution of NHWC `input` with [h, w, in, out] `filters`.

    `strides` is an int, [h, w] or [1, h, w, 1]; `padding` 'SAME' or 'VALID'.

    Example::

        y = sf.nn.conv2d(x, w, strides=1, padding="SAME")   # x [N,28,28,1], w [5,5,1,32]
    """
    if filters is None:
        filters = filter  # TF1's name for it
    if filters is None:
        raise ValueError("conv2d needs filters (TF1: filter)")
    _nhwc(data_format, "conv2d")
    rates = _rates(dilations, "conv2d")
    if rates != (1, 1):
        if _four(strides, "strides") != [1, 1, 1, 1]:
            raise ValueError("conv2d: dilations %r need strides 1 (as in TF), got strides %r"
                             % (dilations, strides))
        return dilated_conv2d(input, filters, rates, _padding(padding), name=name)
    return _out("Conv2D", [input, filters],
                {"strides": _four(strides, "strides"), "padding": _padding(padding)}, name)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None, filters=None,
                     dilations=None):
    """TF1's tf.nn.conv2d_transpose (the gradient of conv2d with respect to its input, used to
    upsample): `value` [N, h, w, in] with `filter` [kh, kw, out, in] to `output_shape`
    [N, H, W, out] (a list or an int32 tensor). Trains through both (docs/python.md). TF 1.15's
    other names input= / filters= are accepted; dilations other than 1 are refused."""
    filter = filter if filter is not None else filters  # noqa: A001
    value = value if value is not None else input
    if dilations is not None and any(int(d) != 1 for d in _four(dilations, "dilations")):
        raise NotImplementedError("conv2d_transpose: dilations other than 1 are not supported "
                                  "(got %r)" % (dilations,))
    if filter is None or output_shape is None or strides is None:
        raise ValueError("conv2d_transpose needs value, filter, output_shape and strides")
    _nhwc(data_format, "conv2d_transpose")
    from shardflow.framework import Tensor
    parts = None
    if not isinstance(output_shape, Tensor):
        parts = list(output_shape)
        if any(isinstance(p, Tensor) for p in parts):
            output_shape = array_ops.stack([
                ops.cast(p, dtypes.int32) if isinstance(p, Tensor)
                else ops.constant(int(p), dtype=dtypes.int32) for p in parts])
        else:
            output_shape = np.asarray(parts, np.int32)
    static = None
    if parts is not None and len(parts) == 4 and isinstance(parts[0], Tensor) and \
            not any(isinstance(p, Tensor) for p in parts[1:]):
        static = [-1] + [int(p) for p in parts[1:]]
    y = _out("Conv2DBackpropInput", [output_shape, filter, value],
             {"strides": _four(strides, "strides"), "padding": _padding(padding)},
             None if static else name)
    # A batch known only at run time: keep the known dimensions in the static shape.
    return ops.reshape(y, static, name=name) if static else y


def lrn(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, name=None):  # noqa: A002
    """TF1's tf.nn.lrn / local_response_normalization over the channels of NHWC `input`:
    input / (bias + alpha * sum of squares over 2 * depth_radius + 1 channels) ** beta."""
    return _out("LRN", [input], {"depth_radius": int(depth_radius), "bias": float(bias),
                                 "alpha": float(alpha), "beta": float(beta)}, name)


local_response_normalization = lrn


def _pool_input(value, input, ksize, strides, what):  # noqa: A002
    """TF 1.15's max_pool / avg_pool take the input as value= or input=."""
    if value is None:
        value = input
    elif input is not None:
        raise ValueError("%s: give value or input, not both" % what)
    if value is None or ksize is None or strides is None:
        raise ValueError("%s needs value (or input), ksize and strides" % what)
    return value


def max_pool(value=None, ksize=None, strides=None, padding="VALID", data_format="NHWC",
             name=None, input=None):  # noqa: A002
    """Max pooling; `ksize` and `strides` are ints, [h, w] or [1, h, w, 1].

    Example: ``p = sf.nn.max_pool(h, ksize=2, strides=2, padding="VALID")``.
    """
    value = _pool_input(value, input, ksize, strides, "max_pool")
    _nhwc(data_format, "max_pool")
    return _out("MaxPool", [value], {"ksize": _four(ksize, "ksize"),
                                     "strides": _four(strides, "strides"),
                                     "padding": _padding(padding)}, name)


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC",  # noqa: A002
                         Targmax=None, name=None, output_dtype=None,  # noqa: N803
                         include_batch_in_index=False):
    """TF1's tf.nn.max_pool_with_argmax: (max_pool's output, argmax), argmax the flat index
    (y * width + x) * channels + c of each maximum in its image (plus batch * height * width *
    channels with include_batch_in_index), int64 unless Targmax/output_dtype say int32. The
    output trains (its gradient goes to the argmax positions); the argmax has no gradient.

    Example (SegNet-style unpooling)::

        pooled, where = sf.nn.max_pool_with_argmax(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME",
                                                   include_batch_in_index=True)
    """
    _nhwc(data_format, "max_pool_with_argmax")
    index_dtype = dtypes.as_dtype(output_dtype or Targmax or dtypes.int64)
    if index_dtype not in (dtypes.int32, dtypes.int64):
        raise ValueError("max_pool_with_argmax: Targmax must be int32 or int64, not %s"
                         % index_dtype.name)
    op = _op("MaxPoolWithArgmax", [input],
             {"ksize": _four(ksize, "ksize"), "strides": _four(strides, "strides"),
              "padding": _padding(padding), "Targmax": index_dtype,
              "include_batch_in_index": bool(include_batch_in_index)}, name=name)
    return op.outputs[0], op.outputs[1]


def _pool1d(pool, x, ksize, strides, padding, data_format, name):
    """A 1-D pooling of [batch, width, channels] as the 2-D one of [batch, 1, width, ...]."""
    if data_format not in ("NWC", "NHWC", None):
        raise ValueError("1-D pooling takes data_format 'NWC', not %r" % (data_format,))

    def one(v, what):
        v = list(v) if isinstance(v, (list, tuple)) else [v]
        if len(v) == 3:
            v = v[1:2]
        if len(v) != 1:
            raise ValueError("1-D pooling: %s must be an int or a list of 1 or 3, got %r"
                             % (what, v))
        return [1, 1, int(v[0]), 1]
    y = pool(ops.expand_dims(x, 1), one(ksize, "ksize"), one(strides, "strides"), padding)
    return ops.squeeze(y, [1], name=name)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Max pooling of [batch, width, channels] (TF1's tf.nn.max_pool1d)."""
    return _pool1d(max_pool, input, ksize, strides, padding, data_format, name)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Average pooling of [batch, width, channels] (TF1's tf.nn.avg_pool1d)."""
    return _pool1d(avg_pool, input, ksize, strides, padding, data_format, name)


def avg_pool(value=None, ksize=None, strides=None, padding="VALID", data_format="NHWC",
             name=None, input=None):  # noqa: A002
    """Average pooling; arguments as in max_pool."""
    value = _pool_input(value, input, ksize, strides, "avg_pool")
    _nhwc(data_format, "avg_pool")
    return _out("AvgPool", [value], {"ksize": _four(ksize, "ksize"),
                                     "strides": _four(strides, "strides"),
                                     "padding": _padding(padding)}, name)


def _per_row(op_type, labels, logits, sparse, name):
    """The cross-entropy kernels take [rows, classes]; as TF1, logits of another rank
    ([batch, time, classes]: a sequence model) are flattened to rows, and the losses come back in
    the logits' leading dimensions."""
    from shardflow.framework import convert_to_tensor
    logits, labels = convert_to_tensor(logits), convert_to_tensor(labels)
    dims = logits.shape.as_list() if logits.shape.ndims is not None else None
    if dims is None or len(dims) == 2:
        return _op(op_type, [logits, labels], name=name).outputs[0]
    if not dims:
        raise ValueError("%s: logits must have rank >= 1 ([..., classes]), got a scalar"
                         % op_type)
    classes = -1 if dims[-1] is None else dims[-1]
    flat = _op(op_type, [ops.reshape(logits, [-1, classes]),
                         ops.reshape(labels, [-1] if sparse else [-1, classes])]).outputs[0]
    out = ops.reshape(flat, ops.shape(logits)[:-1], name=name)
    out.set_shape(dims[:-1])
    return out


def softmax_cross_entropy_with_logits(labels=None, logits=None, dim=-1, name=None, axis=None,
                                      _sentinel=None):
    """Per-row cross-entropy between softmax(logits) and the distributions `labels`, both
    [batch, classes] (or [..., classes]); returns [batch] (the leading dimensions).

    Example::

        loss = sf.reduce_mean(sf.nn.softmax_cross_entropy_with_logits(labels=onehot, logits=z))
    """
    axis = dim if axis is None else axis
    if labels is None or logits is None:
        raise ValueError("softmax_cross_entropy_with_logits needs labels and logits")
    from shardflow.framework import convert_to_tensor
    logits = convert_to_tensor(logits)
    labels = _labels_in_dtype_of(labels, logits)
    rank = logits.shape.ndims
    if axis not in (-1, None) and not (rank is not None and axis == rank - 1):
        from shardflow import ops
        if rank is None:
            raise ValueError("softmax_cross_entropy_with_logits(dim=%r) needs logits of known "
                             "rank" % (axis,))
        perm = _axis_last(axis, rank)
        labels = ops.transpose(labels, perm)
        logits = ops.transpose(logits, perm)
    return _per_row("SoftmaxCrossEntropyWithLogits", labels, logits, False, name)


def _labels_in_dtype_of(labels, logits):
    """Dense labels in the logits' dtype, as TF's (NumPy float64 one-hots with float32 logits
    were refused "insert a Cast"); a Variable's value is read."""
    from shardflow import ops as _ops
    from shardflow.framework import Tensor, convert_to_tensor
    from shardflow.variables import Variable
    if isinstance(labels, Variable):
        labels = labels.value()
    if not isinstance(labels, Tensor):
        return convert_to_tensor(np.asarray(labels, logits.dtype.as_numpy_dtype))
    return labels if labels.dtype == logits.dtype else _ops.cast(labels, logits.dtype)


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    """TF1's tf.nn.softmax_cross_entropy_with_logits_v2: the per-row cross-entropy
    -sum(labels * log_softmax(logits)) over `axis` (any dimension; `dim` is its older name,
    default -1), with gradients to the labels too (v1 stops them). Where labels are a constant
    or fed, prefer softmax_cross_entropy_with_logits (one fused kernel)."""
    if dim is not None:
        if axis is not None and axis != dim:
            raise ValueError("softmax_cross_entropy_with_logits_v2: give axis or dim, not both")
        axis = dim
    from shardflow import ops as _ops
    from shardflow.framework import convert_to_tensor
    logits = convert_to_tensor(logits)
    labels = _labels_in_dtype_of(labels, logits)
    if axis is None:
        axis = -1
    return _ops.negative(_ops.reduce_sum(_ops.multiply(labels, log_softmax(logits, axis=axis)),
                                         axis=axis), name=name)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """Per-row cross-entropy of softmax(logits) [batch, classes] against class indices
    `labels` (int32 or int64, [batch]); returns [batch]. Logits [..., classes] with labels of
    their leading dimensions (a sequence model's [batch, time]) give losses of that shape.

    Example::

        loss = sf.reduce_mean(
            sf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z))
    """
    return _per_row("SparseSoftmaxCrossEntropyWithLogits", labels, logits, True, name)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """TF1's tf.nn.dropout: each element of `x` kept with probability `keep_prob` (the second
    argument, as in TF1) and scaled by 1 / keep_prob, else zeroed. Give `rate` = 1 - keep_prob
    instead if you prefer TF2's spelling (one of the two). Either may be a tensor, e.g. a
    ``keep_prob`` placeholder fed 0.5 for training and 1.0 for evaluation. `noise_shape`
    (broadcastable to x's shape) shares one mask along dimensions of size 1. A seed makes the
    masks reproducible.

    Example::

        keep_prob = sf.placeholder(sf.float32)
        h_drop = sf.nn.dropout(h_fc1, keep_prob)
    """
    from shardflow import ops
    from shardflow.framework import Tensor
    if (keep_prob is None) == (rate is None):
        raise ValueError("dropout needs keep_prob (TF1: the probability of keeping an element) "
                         "or rate (= 1 - keep_prob), exactly one of them")
    if keep_prob is not None and not isinstance(keep_prob, Tensor):
        if not 0 < keep_prob <= 1:
            raise ValueError("dropout keep_prob must be in (0, 1], got %r" % (keep_prob,))
        rate = 1.0 - float(keep_prob)
        keep_prob = None
    if rate is not None and not isinstance(rate, Tensor):
        if not 0 <= rate < 1:
            raise ValueError("dropout rate must be in [0, 1), got %r" % (rate,))
        if noise_shape is None:
            return _op("Dropout", [x], {"rate": float(rate), "seed": ops._op_seed(seed)},
                       name).outputs[0]
        keep_prob = 1.0 - float(rate)
    elif rate is not None:
        keep_prob = ops.subtract(1.0, rate)
    # A tensor keep_prob (or a noise_shape): mask = [uniform < keep_prob], x * mask / keep_prob.
    x = ops.convert_to_tensor(x)
    if isinstance(keep_prob, Tensor):
        # A scalar (as TF1 requires), so the result keeps x's shape: keep_prob is often a
        # tf.placeholder(tf.float32) of unknown rank.
        keep_prob = ops.reshape(ops.cast(keep_prob, x.dtype), [])
    shape = ops.shape(x) if noise_shape is None else noise_shape
    uniform = ops.random_uniform(shape, dtype=x.dtype, seed=seed)
    mask = ops.cast(ops.less(uniform, keep_prob), x.dtype)
    return ops.multiply(ops.divide(x, keep_prob), mask, name=name)


def l2_loss(t, name=None):
    """sum(t ** 2) / 2 (TF1's tf.nn.l2_loss, e.g. weight decay)."""
    from shardflow import ops
    return ops.multiply(ops.reduce_sum(ops.square(t)), 0.5, name=name)


def xw_plus_b(x, weights, biases, name=None):
    """matmul(x, weights) + biases."""
    from shardflow import ops
    return bias_add(ops.matmul(x, weights), biases, name=name)


def relu_layer(x, weights, biases, name=None):
    """relu(matmul(x, weights) + biases) (TF1's tf.nn.relu_layer)."""
    return relu(xw_plus_b(x, weights, biases), name=name)


def zero_fraction(value, name=None):
    """The fraction of the elements of `value` that are zero, as a float32 scalar (TF1's
    tf.nn.zero_fraction, e.g. to summarize the sparsity of ReLU outputs)."""
    value = ops.convert_to_tensor(value)
    zero = ops.equal(value, ops.constant(0, dtype=value.dtype))
    return ops.reduce_mean(ops.cast(zero, dtypes.float32), name=name)


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of `x` over `axes`, as TF1's tf.nn.moments."""
    from shardflow import ops
    keep = bool(keepdims if keepdims is not None else keep_dims)
    mean = ops.reduce_mean(x, axis=list(axes), keepdims=True)
    variance = ops.reduce_mean(ops.squared_difference(x, ops.stop_gradient(mean)),
                               axis=list(axes), keepdims=True)
    if not keep:
        mean = ops.squeeze(mean, list(axes))
        variance = ops.squeeze(variance, list(axes))
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) / sqrt(variance + variance_epsilon) * scale + offset (offset and scale may be
    None), as TF1's tf.nn.batch_normalization."""
    from shardflow import ops
    inv = ops.rsqrt(ops.add(variance, variance_epsilon))
    if scale is not None:
        inv = ops.multiply(inv, scale)
    y = ops.multiply(ops.subtract(x, mean), inv)
    return ops.add(y, offset, name=name) if offset is not None else ops.identity(y, name=name)


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None):
    """Batch normalisation over the last dimension (channels; the second with
    data_format="NCHW"), as TF1's tf.nn.fused_batch_norm: returns (y, mean, variance). In
    training the batch's statistics are used and returned (the variance unbiased, for moving
    averages); otherwise `mean` and `variance` are.

    Example::

        y, batch_mean, batch_var = sf.nn.fused_batch_norm(x, gamma, beta)
    """
    from shardflow import ops
    if data_format == "NCHW":
        # Channels moved last for the kernel and back (the statistics are per channel alike).
        x, restore = channels_last(ops.convert_to_tensor(x), 1, "fused_batch_norm")
        y, m, v = fused_batch_norm(x, scale, offset, mean, variance, epsilon, "NHWC",
                                   is_training, name)
        return restore(y), m, v
    _nhwc(data_format, "fused_batch_norm")
    x = ops.convert_to_tensor(x)
    if x.dtype != dtypes.float32:
        # The kernel is float32's; other floating types (float64 gradient checks, float16)
        # take the same formulas composed from element-wise ops and reductions, as TF1's
        # non-fused batch norm.
        return _composed_batch_norm(x, scale, offset, mean, variance, epsilon, is_training,
                                    name)
    if is_training:
        empty = ops.constant(np.zeros([0], np.float32))
        mean = empty if mean is None else mean
        variance = empty if variance is None else variance
    elif mean is None or variance is None:
        raise ValueError("fused_batch_norm(is_training=False) needs mean and variance")
    op = _op("FusedBatchNorm", [x, scale, offset, mean, variance],
             {"epsilon": float(epsilon), "is_training": bool(is_training)}, name)
    return op.outputs[0], op.outputs[1], op.outputs[2]


def _composed_batch_norm(x, scale, offset, mean, variance, epsilon, is_training, name):
    """fused_batch_norm's (y, mean, variance) from element-wise ops and reductions over every
    axis but the last; in training the returned variance is the unbiased one, as the kernel's."""
    from shardflow import ops
    if x.shape.ndims is None:
        raise ValueError("fused_batch_norm of %s needs an input of known rank" % x.dtype.name)
    axes = list(range(x.shape.ndims - 1))
    scale, offset = (ops.cast(v, x.dtype) for v in (scale, offset))
    if is_training:
        mean = ops.reduce_mean(x, axis=axes)
        biased = ops.reduce_mean(ops.square(ops.subtract(x, mean)), axis=axes)
        count = ops.cast(ops.reduce_prod(ops.shape(x)[:-1]), x.dtype)
        variance = ops.multiply(biased, ops.divide(count, ops.maximum(count - 1.0, 1.0)))
    else:
        if mean is None or variance is None:
            raise ValueError("fused_batch_norm(is_training=False) needs mean and variance")
        mean, variance = ops.cast(mean, x.dtype), ops.cast(variance, x.dtype)
        biased = variance
    inv = ops.multiply(ops.rsqrt(ops.add(biased, epsilon)), scale)
    y = ops.add(ops.multiply(ops.subtract(x, mean), inv), offset, name=name)
    return y, mean, variance


def sigmoid(x, name=None):
    from shardflow import ops
    return ops.sigmoid(x, name=name)


def tanh(x, name=None):
    from shardflow import ops
    return ops.tanh(x, name=name)


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """TF1's tf.nn.embedding_lookup (shardflow.array_ops.embedding_lookup): one table, or
    shards (a list, or a PartitionedVariable) with partition_strategy "mod" or "div"."""
    from shardflow.array_ops import embedding_lookup as lookup
    return lookup(params, ids, partition_strategy=partition_strategy, name=name,
                  max_norm=max_norm)


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002
    """The k largest entries of the last dimension and their indices (int32), largest first
    (ties: the lower index first; NaN above every number), as TF1's tf.nn.top_k; returns
    (values, indices). One TopKV2 op (a partial sort per row: O(n log k)); `k` may be a
    scalar int32 tensor. The values' gradient goes back to the positions they came from."""
    from shardflow import dtypes, ops
    from shardflow.framework import Tensor
    x = ops.convert_to_tensor(input)
    if x.shape.ndims == 0:
        raise ValueError("top_k: input must have at least one dimension, got a scalar")
    if isinstance(k, Tensor):
        if not k.dtype.is_integer:
            raise TypeError("top_k: k must be an integer, not %s" % k.dtype.name)
        k = k if k.dtype == dtypes.int32 else ops.cast(k, dtypes.int32)
    else:
        if int(k) != k:
            raise TypeError("top_k: k must be an int, not %r" % (k,))
        n = x.shape.as_list()[-1] if x.shape.ndims is not None else None
        if k < 0 or (n is not None and k > n):
            raise ValueError("top_k: k=%d is not in [0, %s] (the size of the last dimension)"
                             % (k, n))
        k = np.array(int(k), np.int32)
    op = ops._op("TopKV2", [x, k], {"sorted": bool(sorted)}, name or "TopKV2")
    return TopKV2(op.outputs[0], op.outputs[1])


class TopKV2(collections.namedtuple("TopKV2", ["values", "indices"])):
    """top_k's result: a (values, indices) pair, also as .values and .indices (as TF1's)."""


# ---- activations and losses composed from the engine's ops -----------------------------------
#
# Note [Stable composites]. Each is built so that neither its value nor its gradient overflows:
# exp() only ever sees a value <= 0 (exp(-|x|), or exp(minimum(x, 0)) in a branch that where()
# does not choose for x > 0: where() passes a zero gradient to the unchosen branch, but
# 0 * inf is NaN, so that branch's input is clamped first). Where TF1's kernels define the
# gradient at a kink (x = 0), the same where() conditions give the same value.


def _float_tensor(x, what):
    x = ops.convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError("%s takes a floating-point tensor, got %s (%s); cast it first"
                        % (what, x.name, x.dtype.name))
    return x


def _like(value, x):
    """A Python number as a scalar of x's dtype (a float64 graph keeps all its digits)."""
    from shardflow.framework import Tensor
    from shardflow.variables import Variable
    if isinstance(value, (Tensor, Variable)):
        return value
    return np.asarray(value, dtype=x.dtype.as_numpy_dtype)


def _relu_and_softplus_of_neg_abs(x):
    """(max(x, 0), log1p(exp(-|x|))): the two stable parts of softplus(x), as TF1 builds
    them (where(x >= 0, ...)), so that the gradient at x = 0 is TF1's (sigmoid(0) = 0.5)."""
    nonnegative = ops.greater_equal(x, 0)
    relu_x = array_ops.where(nonnegative, x, ops.zeros_like(x))
    neg_abs = array_ops.where(nonnegative, ops.negative(x), x)
    return relu_x, ops.log1p(ops.exp(neg_abs))


def softplus(features, name=None):
    """log(exp(features) + 1), as TF1's tf.nn.softplus, computed as
    max(x, 0) + log(1 + exp(-|x|)) so that it neither overflows nor loses small values; the
    gradient is sigmoid(x)."""
    x = _float_tensor(features, "softplus")
    relu_x, tail = _relu_and_softplus_of_neg_abs(x)
    return ops.add(relu_x, tail, name=name)


def softsign(features, name=None):
    """features / (|features| + 1), as TF1's tf.nn.softsign."""
    x = _float_tensor(features, "softsign")
    return ops.divide(x, ops.add(ops.abs(x), 1), name=name)


def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, else alpha * features (TF1's tf.nn.leaky_relu; any alpha, and
    the gradient at 0 is alpha, as TF1's kernel)."""
    x = _float_tensor(features, "leaky_relu")
    return array_ops.where(ops.greater(x, 0), x, ops.multiply(x, _like(alpha, x)), name=name)


def relu6(features, name=None):
    """min(max(features, 0), 6), as TF1's tf.nn.relu6 (the gradient is 1 strictly between 0
    and 6, else 0, as TF1's kernel)."""
    x = _float_tensor(features, "relu6")
    return array_ops.where(ops.less(x, 6), relu(x), 6.0, name=name)


def _exp_minus_one_below_zero(x):
    """exp(x) - 1 for x <= 0, with x clamped to <= 0 so that the branch where() does not take
    (x > 0) has a finite gradient (Note [Stable composites])."""
    return ops.subtract(ops.exp(ops.minimum(x, 0)), 1)


def elu(features, name=None):
    """features where positive, else exp(features) - 1, as TF1's tf.nn.elu."""
    x = _float_tensor(features, "elu")
    return array_ops.where(ops.greater(x, 0), x, _exp_minus_one_below_zero(x), name=name)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(features, name=None):
    """scale * elu with alpha (scale 1.0507..., alpha 1.6732..., Klambauer et al. 2017), as
    TF1's tf.nn.selu."""
    x = _float_tensor(features, "selu")
    inner = array_ops.where(ops.greater(x, 0), x,
                            ops.multiply(_exp_minus_one_below_zero(x), _like(_SELU_ALPHA, x)))
    return ops.multiply(inner, _like(_SELU_SCALE, x), name=name)


def swish(features, name=None):
    """features * sigmoid(features) (TF1.15's tf.nn.swish)."""
    x = _float_tensor(features, "swish")
    return ops.multiply(x, ops.sigmoid(x), name=name)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x ** 2, axis), epsilon)), as TF1's tf.nn.l2_normalize: `axis` an int
    or list (None: every dimension; `dim` is TF1's older name for it)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("l2_normalize: give axis or dim (its older name), not both")
        axis = dim
    x = _float_tensor(x, "l2_normalize")
    square_sum = ops.reduce_sum(ops.square(x), axis=axis, keepdims=True)
    return ops.multiply(x, ops.rsqrt(ops.maximum(square_sum, _like(epsilon, x))), name=name)


def _labels_like(labels, logits, what, label_name):
    """`labels` as a tensor of logits' dtype and a compatible shape, else a clear error."""
    from shardflow.framework import Tensor
    from shardflow.variables import Variable
    if labels is None or logits is None:
        raise ValueError("%s needs both %s= and logits=" % (what, label_name))
    logits = _float_tensor(logits, what)
    if not isinstance(labels, (Tensor, Variable)):
        labels = np.asarray(labels, dtype=logits.dtype.as_numpy_dtype)
    labels = ops.convert_to_tensor(labels)
    if labels.dtype != logits.dtype:
        raise TypeError("%s: %s (%s) must have the dtype of logits (%s); cast it first"
                        % (what, label_name, labels.dtype.name, logits.dtype.name))
    a, b = labels.shape, logits.shape
    if a.ndims is not None and b.ndims is not None and (
            a.ndims != b.ndims or any(p is not None and q is not None and p != q
                                      for p, q in zip(a.as_list(), b.as_list()))):
        raise ValueError("%s: logits and %s must have the same shape (%s vs %s)"
                         % (what, label_name, b.as_list(), a.as_list()))
    return labels, logits


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """Element-wise -z * log(sigmoid(x)) - (1 - z) * log(1 - sigmoid(x)) for labels z and
    logits x of one shape, as TF1's tf.nn.sigmoid_cross_entropy_with_logits: computed as
    max(x, 0) - x * z + log(1 + exp(-|x|)), finite for any x, with the gradient
    sigmoid(x) - z. Pass the arguments by name (labels=, logits=), as TF1 requires."""
    if _sentinel is not None:
        raise ValueError("sigmoid_cross_entropy_with_logits: pass labels= and logits= by name")
    z, x = _labels_like(labels, logits, "sigmoid_cross_entropy_with_logits", "labels")
    relu_x, tail = _relu_and_softplus_of_neg_abs(x)
    return ops.add(ops.subtract(relu_x, ops.multiply(x, z)), tail, name=name)


def weighted_cross_entropy_with_logits(targets=None, logits=None, pos_weight=None, name=None,
                                       labels=None):
    """sigmoid cross entropy with the positive term weighted by `pos_weight`:
    -pos_weight * z * log(sigmoid(x)) - (1 - z) * log(1 - sigmoid(x)), as TF1's
    tf.nn.weighted_cross_entropy_with_logits, computed stably as
    (1 - z) * x + (1 + (pos_weight - 1) * z) * (log(1 + exp(-|x|)) + max(-x, 0)).
    `labels` is TF1.14's name for `targets` (give one)."""
    what = "weighted_cross_entropy_with_logits"
    if labels is not None:
        if targets is not None:
            raise ValueError("%s: give targets or labels (its newer name), not both" % what)
        targets = labels
    if pos_weight is None:
        raise ValueError("%s needs pos_weight" % what)
    z, x = _labels_like(targets, logits, what, "targets")
    log_weight = ops.add(ops.multiply(ops.subtract(_like(pos_weight, x), 1), z), 1)
    nonnegative = ops.greater_equal(x, 0)
    neg_abs = array_ops.where(nonnegative, ops.negative(x), x)
    relu_neg = array_ops.where(nonnegative, ops.zeros_like(x), ops.negative(x))
    tail = ops.add(ops.log1p(ops.exp(neg_abs)), relu_neg)
    return ops.add(ops.multiply(ops.subtract(1, z), x), ops.multiply(log_weight, tail),
                   name=name)


def in_top_k(predictions, targets, k, name=None):
    """A bool [batch]: whether targets[i] is among the k largest of predictions[i]
    ([batch, classes], float; the number of classes must be known), as TF1's tf.nn.in_top_k:
    classes tied with the target's value count as within the top k (the target is in when
    fewer than k classes are strictly larger), and a row with a non-finite prediction or a
    target outside [0, classes) is never in."""
    p = _float_tensor(predictions, "in_top_k")
    if p.shape.ndims != 2 or p.shape.as_list()[1] is None:
        raise ValueError("in_top_k: predictions must be [batch, classes] with classes known, "
                         "got %s" % (p.shape,))
    targets = ops.convert_to_tensor(targets)
    if not targets.dtype.is_integer:
        raise TypeError("in_top_k: targets must be int32 or int64, not %s" % targets.dtype.name)
    from shardflow.framework import Tensor
    if not isinstance(k, Tensor) and int(k) != k:
        raise TypeError("in_top_k: k must be an int, not %r" % (k,))
    hot = ops.cast(array_ops.one_hot(targets, p.shape.as_list()[1]), dtypes.bool_)
    target_value = ops.reduce_sum(array_ops.where_v2(hot, p, ops.zeros_like(p)), axis=1)
    larger = ops.reduce_sum(ops.cast(ops.greater(p, ops.expand_dims(target_value, 1)),
                                     dtypes.int32), axis=1)
    k = ops.cast(k, dtypes.int32) if isinstance(k, Tensor) else int(k)
    # TF's kernel: a row with any non-finite prediction is never in (inf - inf, NaN: NaN)
    finite = array_ops.reduce_all(ops.equal(ops.subtract(p, p), 0), axis=1)
    in_range = array_ops.reduce_any(hot, axis=1)
    return ops.logical_and(ops.logical_and(ops.less(larger, k), finite), in_range, name=name)


# ---- more of TF1's tf.nn, composed --------------------------------------------------------


def crelu(features, name=None, axis=-1):
    """concat([relu(features), relu(-features)], axis), as TF1's tf.nn.crelu: twice the size
    along `axis`."""
    x = _float_tensor(features, "crelu")
    return ops.concat([relu(x), relu(ops.negative(x))], axis, name=name)


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """Element-wise exp(log_input) - log_input * targets, the negative log-likelihood of
    `targets` under a Poisson of rate exp(log_input) up to a constant, as TF1's
    tf.nn.log_poisson_loss; compute_full_loss adds Stirling's approximation of log(targets!),
    targets * log(targets) - targets + 0.5 * log(2 * pi * targets), where targets > 1."""
    log_input = _float_tensor(log_input, "log_poisson_loss")
    targets, log_input = _labels_like(targets, log_input, "log_poisson_loss", "targets")
    result = ops.subtract(ops.exp(log_input), ops.multiply(log_input, targets))
    if not compute_full_loss:
        return ops.identity(result, name=name)
    # Only targets > 1 reach the logs (others take log(1) = 0 in the unused branch), so
    # neither the value nor the gradient to targets sees log(0).
    above_one = ops.greater(targets, 1.0)
    safe = array_ops.where(above_one, targets, ops.ones_like(targets))
    stirling = ops.add(ops.subtract(ops.multiply(safe, ops.log(safe)), safe),
                       ops.multiply(ops.log(ops.multiply(safe, _like(2 * np.pi, safe))), 0.5))
    return ops.add(result, array_ops.where(above_one, stirling, ops.zeros_like(targets)),
                   name=name)


def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """(count, sum of x - shift, sum of (x - shift) ** 2, shift) over `axes`, as TF1's
    tf.nn.sufficient_statistics (count as a scalar of x's dtype; the sums of x and x ** 2 when
    shift is None); normalize_moments turns them into a mean and variance."""
    x = _float_tensor(x, "sufficient_statistics")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    axes = [int(a) for a in axes]
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is not None and all(dims[a] is not None for a in axes):
        counts = ops.constant(np.prod([dims[a] for a in axes]), dtype=x.dtype)
    else:
        shape = ops.cast(ops.shape(x), x.dtype)
        counts = ops.reduce_prod(array_ops.gather(shape, axes))
    if shift is not None:
        shift = ops.convert_to_tensor(_like(shift, x))
        m_ss, v_ss = ops.subtract(x, shift), ops.squared_difference(x, shift)
    else:
        m_ss, v_ss = x, ops.square(x)
    return (counts, ops.reduce_sum(m_ss, axis=axes, keepdims=keep),
            ops.reduce_sum(v_ss, axis=axes, keepdims=keep), shift)


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """(mean, variance) from sufficient_statistics' (counts, mean_ss, variance_ss, shift), as
    TF1's tf.nn.normalize_moments: the variance is the biased one (divided by counts)."""
    divisor = ops.reciprocal(counts)
    shifted_mean = ops.multiply(mean_ss, divisor)
    mean = ops.add(shifted_mean, shift) if shift is not None else shifted_mean
    variance = ops.subtract(ops.multiply(variance_ss, divisor), ops.square(shifted_mean))
    return mean, variance


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """The mean and variance of `x` over `axes` with each element counted
    `frequency_weights` times (broadcastable to x), as TF1's tf.nn.weighted_moments:
    mean = sum(w * x) / sum(w), variance = sum(w * (x - mean) ** 2) / sum(w)."""
    x = _float_tensor(x, "weighted_moments")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    axes = [int(a) for a in axes]
    w = ops.convert_to_tensor(_like(frequency_weights, x))
    if w.dtype != x.dtype:
        w = ops.cast(w, x.dtype)
    weighted_sum = ops.reduce_sum(ops.multiply(w, x), axis=axes, keepdims=True)
    sum_of_weights = ops.reduce_sum(ops.add(w, ops.zeros_like(x)), axis=axes, keepdims=True)
    divisor = ops.reciprocal(sum_of_weights)
    mean = ops.multiply(weighted_sum, divisor)
    variance = ops.multiply(ops.reduce_sum(ops.multiply(w, ops.squared_difference(x, mean)),
                                           axis=axes, keepdims=True), divisor)
    if not keep:
        mean, variance = ops.squeeze(mean, axes), ops.squeeze(variance, axes)
    return mean, variance


def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None,
                                         variance_epsilon=None,
                                         scale_after_normalization=None, name=None,
                                         input=None, mean=None, variance=None):  # noqa: A002
    """TF1's tf.nn.batch_norm_with_global_normalization: batch_normalization(t, m, v, beta,
    gamma if scale_after_normalization else None, variance_epsilon); `input`, `mean` and
    `variance` are TF1's other names for t, m and v."""
    t = input if t is None else t
    m = mean if m is None else m
    v = variance if v is None else v
    if t is None or m is None or v is None or variance_epsilon is None or \
            scale_after_normalization is None:
        raise ValueError("batch_norm_with_global_normalization needs t, m, v, beta, gamma, "
                         "variance_epsilon and scale_after_normalization")
    return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                               variance_epsilon, name=name)


def convolution(input, filter=None, padding=None, strides=None,  # noqa: A002
                dilation_rate=None, name=None, data_format=None, filters=None,
                dilations=None):
    """TF1's tf.nn.convolution for 1-D ([batch, width, in] with [k, in, out] filters), 2-D
    (NHWC with [h, w, in, out]) and 3-D (NDHWC) input: conv1d, conv2d or conv3d, with
    `strides` and `dilation_rate` one int per spatial dimension (dilations need strides 1, as
    TF)."""
    filters = filters if filters is not None else filter
    if filters is None or padding is None:
        raise ValueError("convolution needs filter and padding")
    dilation_rate = dilation_rate if dilation_rate is not None else dilations
    x = ops.convert_to_tensor(input)
    rank = x.shape.ndims
    if rank == 3:
        if data_format not in (None, "NWC"):
            raise ValueError("convolution: data_format %r is not supported (NWC)" % data_format)
        stride = 1 if strides is None else list(strides)[0]
        rate = 1 if dilation_rate is None else list(dilation_rate)[0]
        if rate != 1:
            # A width-only dilated 2-D convolution over a height of 1.
            y = conv2d(ops.expand_dims(x, 1), ops.expand_dims(ops.convert_to_tensor(filters), 0),
                       strides=1, padding=padding, dilations=[1, 1, rate, 1])
            return ops.squeeze(y, [1], name=name)
        return conv1d(x, filters, stride=stride, padding=padding, name=name)
    if rank == 4:
        if data_format not in (None, "NHWC"):
            raise ValueError("convolution: data_format %r is not supported (NHWC)"
                             % data_format)
        s = [1, 1] if strides is None else list(strides)
        d = None if dilation_rate is None else [1] + list(dilation_rate) + [1]
        return conv2d(x, filters, strides=[1] + s + [1], padding=padding, dilations=d,
                      name=name)
    if rank == 5:
        s = [1, 1, 1] if strides is None else list(strides)
        d = None if dilation_rate is None else [1] + list(dilation_rate) + [1]
        return conv3d(x, filters, strides=[1] + s + [1], padding=padding, dilations=d,
                      data_format=data_format, name=name)
    raise ValueError("convolution supports 1-D, 2-D and 3-D input (rank 3, 4 or 5), got rank %s"
                     % rank)


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=None, name=None):
    """TF1's tf.nn.depthwise_conv2d_native: depthwise_conv2d with [1, s, s, 1] strides."""
    rate = None if dilations is None else list(dilations)[1:3]
    return depthwise_conv2d(input, filter, strides, padding, rate=rate, name=name,
                            data_format=data_format)


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """tf.nn.space_to_depth (tf.space_to_depth)."""
    from shardflow.matrix_composites import space_to_depth as s2d
    return s2d(input, block_size, name=name, data_format=data_format)


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """tf.nn.depth_to_space (tf.depth_to_space)."""
    from shardflow.matrix_composites import depth_to_space as d2s
    return d2s(input, block_size, name=name, data_format=data_format)


def pool(input, window_shape, pooling_type, padding, dilation_rate=None,  # noqa: A002
         strides=None, name=None, data_format=None, dilations=None):
    """TF1's tf.nn.pool for 1-D ([batch, width, channels]), 2-D (NHWC) and 3-D (NDHWC) input,
    by max_pool / avg_pool (max_pool3d / avg_pool3d): `pooling_type` 'MAX' or 'AVG',
    `window_shape` and `strides` one int per spatial dimension (strides default 1).
    `dilations` is TF 1.15's other name of dilation_rate; dilated pooling (a rate above 1) is
    not supported."""
    if dilations is not None:          # TF 1.15's other name of dilation_rate
        if dilation_rate is not None:
            raise ValueError("pool: give dilation_rate or dilations, not both")
        dilation_rate = dilations
    x = ops.convert_to_tensor(input)
    window_shape = [int(d) for d in window_shape]
    n = len(window_shape)
    strides = [1] * n if strides is None else [int(s) for s in strides]
    rates = [1] * n if dilation_rate is None else [int(r) for r in dilation_rate]
    if n not in (1, 2, 3):
        raise ValueError("pool: shardflow pools 1-D, 2-D or 3-D input, got window_shape %r"
                         % (window_shape,))
    if len(strides) != n or len(rates) != n:
        raise ValueError("pool: window_shape %r, strides %r and dilation_rate %r must have "
                         "one entry per spatial dimension" % (window_shape, strides, rates))
    if any(r != 1 for r in rates):
        raise ValueError("pool(dilation_rate=%r): dilated pooling is not supported; use "
                         "dilation_rate=None" % (rates,))
    if data_format not in (None, "NWC", "NHWC", "NDHWC"):
        _nhwc(data_format, "pool")
    kinds = {"MAX": max_pool, "AVG": avg_pool}
    if n == 3:
        kinds = {"MAX": max_pool3d, "AVG": avg_pool3d}
    if pooling_type not in kinds:
        raise ValueError("pool: pooling_type must be 'MAX' or 'AVG', got %r" % (pooling_type,))
    if x.shape.ndims is not None and x.shape.ndims != n + 2:
        raise ValueError("pool: %d-D pooling needs input of rank %d, got %s"
                         % (n, n + 2, x.shape))
    if n >= 2:
        return kinds[pooling_type](x, window_shape, strides, padding, name=name)
    pooled = kinds[pooling_type](ops.expand_dims(x, 1), [1, window_shape[0]],
                                 [1, strides[0]], padding)
    return ops.squeeze(pooled, [1], name=name)


