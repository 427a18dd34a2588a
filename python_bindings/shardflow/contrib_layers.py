"""tf.contrib.layers under its TF1 names: the regularizers l1_regularizer, l2_regularizer,
l1_l2_regularizer, sum_regularizer and apply_regularization (shardflow.regularizers), the
initializers xavier_initializer (Glorot) and variance_scaling_initializer with contrib's own
signature (factor, mode 'FAN_IN'/'FAN_OUT'/'FAN_AVG', uniform), and the layer functions with
contrib's defaults (a ReLU activation, 'SAME' convolution padding) and variable names
(<scope>/weights, <scope>/biases, model variables): fully_connected, convolution /
convolution1d / convolution2d (conv1d, conv2d), conv2d_transpose, separable_conv2d,
bias_add, max_pool2d, avg_pool2d, flatten, layer_norm, batch_norm (over
sf.layers.BatchNormalization), embed_sequence, dropout, one_hot_encoding, softmax,
unit_norm; repeat and stack; optimize_loss; summarize_tensors, summarize_activations, ...
The layer functions take their defaults from sf.contrib.framework.arg_scope. 3-D
convolutions, channels-first data formats and the other contrib.layers names are refused.

Example::

    w = sf.get_variable("w", [784, 10], initializer=sf.contrib.layers.xavier_initializer(),
                        regularizer=sf.contrib.layers.l2_regularizer(1e-4))
    h = sf.contrib.layers.conv2d(images, 32, [5, 5])               # ReLU, SAME padding
    h = sf.contrib.layers.max_pool2d(h, [2, 2])
    logits = sf.contrib.layers.fully_connected(sf.contrib.layers.flatten(h), 10,
                                               activation_fn=None)
"""

import math

import numpy as np

from shardflow import dtypes, ops
from shardflow.contrib_framework import add_arg_scope
from shardflow.framework import GraphKeys, Tensor, convert_to_tensor, get_default_graph
from shardflow.regularizers import (apply_regularization, l1_l2_regularizer,  # noqa: F401
                                    l1_regularizer, l2_regularizer, sum_regularizer)
from shardflow.variable_scope import ones_initializer, zeros_initializer

_MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")


def _contrib_fans(shape):
    """contrib's fan-in and fan-out: [.., in, out] times the receptive field (a vector:
    its length for both; a scalar: 1)."""
    if not shape:
        return 1.0, 1.0
    fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
    fan_out = float(shape[-1])
    for d in shape[:-2]:
        fan_in *= float(d)
        fan_out *= float(d)
    return fan_in, fan_out


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                 dtype=dtypes.float32):
    """TF1's tf.contrib.layers.variance_scaling_initializer: values with variance
    factor / n, where n is the fan-in, the fan-out or their mean (`mode`); uniform in
    [-sqrt(3 factor / n), sqrt(3 factor / n)], else a truncated normal of stddev
    sqrt(1.3 factor / n). The default (2.0, FAN_IN) is He et al.'s initialisation. (The core
    sf.variance_scaling_initializer has TF1's other signature: scale, mode, distribution.)"""
    if not dtypes.as_dtype(dtype).is_floating:
        raise TypeError("variance_scaling_initializer: dtype must be a floating type, not %s"
                        % dtypes.as_dtype(dtype).name)
    if mode not in _MODES:
        raise TypeError("variance_scaling_initializer: unknown mode %r; use one of %s"
                        % (mode, ", ".join(_MODES)))
    default_dtype = dtype

    def initializer(shape, dtype=default_dtype, partition_info=None):
        dt = dtypes.as_dtype(dtype)
        if not dt.is_floating:
            raise TypeError("variance_scaling_initializer: cannot create a %s variable"
                            % dt.name)
        shape = list(shape)
        fan_in, fan_out = _contrib_fans(shape)
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return ops.random_uniform(shape, -limit, limit, dtype=dt, seed=seed)
        return ops.truncated_normal(shape, stddev=math.sqrt(1.3 * factor / n), dtype=dt,
                                    seed=seed)
    return initializer


def xavier_initializer(uniform=True, seed=None, dtype=dtypes.float32):
    """TF1's tf.contrib.layers.xavier_initializer (Glorot & Bengio 2010): uniform in
    [-sqrt(6 / (fan_in + fan_out)), +...], or (uniform=False) a truncated normal of variance
    1.3 * 2 / (fan_in + fan_out); variance_scaling_initializer(1.0, 'FAN_AVG', uniform)."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform, seed=seed,
                                        dtype=dtype)


xavier_initializer_conv2d = xavier_initializer


def _pair(v):
    return (int(v), int(v)) if isinstance(v, (int, float)) else tuple(int(d) for d in v)


def _default_relu():
    from shardflow import nn
    return nn.relu


# contrib's defaults, told apart from an explicit None: activation_fn sf.nn.relu (None means
# linear), biases_initializer zeros (None means no bias).
_DEFAULT = object()


def _model_weight(name, shape, dtype, initializer, regularizer, trainable,
                  variables_collections, kind):
    """A model variable <scope>/<name>, also in the collections variables_collections gives
    for `kind` ('weights' or 'biases'), as contrib's layers make theirs."""
    from shardflow.contrib_framework import model_variable
    return model_variable(name, shape=list(shape), dtype=dtype, initializer=initializer,
                          regularizer=regularizer, trainable=trainable,
                          collections=_collections(variables_collections)(kind))


def _finish(outputs, bias_shape, dtype, activation_fn, normalizer_fn, normalizer_params,
            biases_initializer, biases_regularizer, trainable, variables_collections):
    """contrib's tail of a layer, inside its variable scope: normalizer_fn (instead of the
    biases), else <scope>/biases unless biases_initializer is None; then the activation (a
    ReLU unless told otherwise)."""
    from shardflow import nn
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    elif biases_initializer is not None:
        init = zeros_initializer() if biases_initializer is _DEFAULT else biases_initializer
        biases = _model_weight("biases", bias_shape, dtype, init, biases_regularizer,
                               trainable, variables_collections, "biases")
        outputs = nn.bias_add(outputs, biases)
    act = _default_relu() if activation_fn is _DEFAULT else activation_fn
    return act(outputs) if act is not None else outputs


def _last_dim(x, what, min_rank=2):
    if x.shape.ndims is None or x.shape.ndims < min_rank:
        raise ValueError("%s: inputs %s must have rank >= %d, got shape %s"
                         % (what, x.name, min_rank, x.shape))
    n = x.shape.as_list()[-1]
    if n is None:
        raise ValueError("%s: the last dimension of inputs %s must be known, got shape %s"
                         % (what, x.name, x.shape))
    return n


@add_arg_scope
def fully_connected(inputs, num_outputs, activation_fn=_DEFAULT, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=None, weights_regularizer=None,
                    biases_initializer=_DEFAULT, biases_regularizer=None, reuse=None,
                    variables_collections=None, outputs_collections=None, trainable=True,
                    scope=None):
    """TF1's tf.contrib.layers.fully_connected: activation_fn(inputs @ weights + biases),
    a ReLU by default (activation_fn=None: linear); model variables <scope>/weights
    [in, num_outputs] (Xavier by default) and <scope>/biases (zeros; left out with
    biases_initializer=None or a normalizer_fn, which is applied instead), scope
    'fully_connected' (numbered _1, _2, ... when taken). Inputs of rank > 2 are multiplied
    along their last axis."""
    from shardflow import ops as _ops
    from shardflow.contractions import tensordot
    from shardflow.variable_scope import variable_scope
    if isinstance(num_outputs, bool) or not isinstance(num_outputs, int):
        raise ValueError("num_outputs type should be one of [<class 'int'>], got %s."
                         % type(num_outputs))
    x = convert_to_tensor(inputs)
    n_in = _last_dim(x, "fully_connected")
    with variable_scope(_scope_name(scope, "fully_connected", reuse), reuse=reuse):
        w = _model_weight("weights", [n_in, num_outputs], x.dtype,
                          weights_initializer or xavier_initializer(), weights_regularizer,
                          trainable, variables_collections, "weights")
        if x.shape.ndims == 2:
            y = _ops.matmul(x, w)
        else:
            y = tensordot(x, w, [[x.shape.ndims - 1], [0]])
            y.set_shape(x.shape.as_list()[:-1] + [num_outputs])
        y = _finish(y, [num_outputs], x.dtype, activation_fn, normalizer_fn,
                    normalizer_params, biases_initializer, biases_regularizer, trainable,
                    variables_collections)
    _add_to(outputs_collections, [y])
    return y


def _spatial(v, n, what):
    """An int or a sequence of n ints as a list of n ints."""
    if isinstance(v, int):
        return [v] * n
    v = [int(d) for d in v]
    if len(v) != n:
        raise ValueError("%s must be an int or a list of %d ints, got %r" % (what, n, v))
    return v


_CONV_FORMATS = (None, "NWC", "NCW", "NHWC", "NCHW", "NDHWC", "NCDHW")


def _convolution(inputs, num_outputs, kernel_size, stride, padding, data_format, rate,
                 activation_fn, normalizer_fn, normalizer_params, weights_initializer,
                 weights_regularizer, biases_initializer, biases_regularizer, reuse,
                 variables_collections, outputs_collections, trainable, scope, conv_dims):
    from shardflow import nn
    from shardflow.variable_scope import variable_scope
    if data_format not in _CONV_FORMATS:
        raise ValueError("Invalid data_format: %r" % (data_format,))
    if data_format is not None and data_format.startswith("NC"):
        raise ValueError("contrib.layers.convolution(data_format=%r): only channels-last "
                         "(NWC, NHWC) is supported; transpose the inputs" % (data_format,))
    x = convert_to_tensor(inputs)
    rank = x.shape.ndims
    if conv_dims is not None and conv_dims + 2 != rank:
        raise ValueError("Convolution expects input with rank %d, got %d"
                         % (conv_dims + 2, rank))
    if rank not in (3, 4):
        raise ValueError("contrib.layers.convolution: inputs of rank %s are not supported "
                         "(rank 3: 1-D, rank 4: 2-D convolution; no 3-D convolution here)"
                         % (rank,))
    dims = rank - 2
    ks = _spatial(kernel_size, dims, "kernel_size")
    strides = _spatial(stride, dims, "stride")
    rates = _spatial(rate, dims, "rate")
    if any(s != 1 for s in strides) and any(r != 1 for r in rates):
        raise ValueError("convolution: stride %r and rate %r: one of them must be 1"
                         % (stride, rate))
    n_in = _last_dim(x, "convolution", rank)
    with variable_scope(_scope_name(scope, "Conv", reuse), reuse=reuse):
        w = _model_weight("weights", ks + [n_in, num_outputs], x.dtype,
                          weights_initializer or xavier_initializer(), weights_regularizer,
                          trainable, variables_collections, "weights")
        if dims == 1:
            y = nn.conv1d(x, w, stride=strides[0], padding=padding.upper(),
                          dilations=rates[0])
        else:
            y = nn.conv2d(x, w, strides=[1] + strides + [1], padding=padding.upper(),
                          dilations=rates)
        y = _finish(y, [num_outputs], x.dtype, activation_fn, normalizer_fn,
                    normalizer_params, biases_initializer, biases_regularizer, trainable,
                    variables_collections)
    _add_to(outputs_collections, [y])
    return y


@add_arg_scope
def convolution(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
                rate=1, activation_fn=_DEFAULT, normalizer_fn=None, normalizer_params=None,
                weights_initializer=None, weights_regularizer=None,
                biases_initializer=_DEFAULT, biases_regularizer=None, reuse=None,
                variables_collections=None, outputs_collections=None, trainable=True,
                scope=None, conv_dims=None):
    """TF1's tf.contrib.layers.convolution: a 1-D (rank-3 inputs, NWC) or 2-D (rank 4, NHWC)
    convolution with `num_outputs` filters of `kernel_size`, `stride`, dilation `rate`,
    padding 'SAME' by default; model variables <scope>/weights [*kernel_size, in, out]
    (Xavier) and <scope>/biases (zeros; replaced by normalizer_fn when given), scope 'Conv';
    then activation_fn (a ReLU by default). No 3-D convolution and no channels-first
    data_format."""
    return _convolution(inputs, num_outputs, kernel_size, stride, padding, data_format, rate,
                        activation_fn, normalizer_fn, normalizer_params, weights_initializer,
                        weights_regularizer, biases_initializer, biases_regularizer, reuse,
                        variables_collections, outputs_collections, trainable, scope,
                        conv_dims)


def _fixed_dims_convolution(conv_dims, name):
    def fixed(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
              rate=1, activation_fn=_DEFAULT, normalizer_fn=None, normalizer_params=None,
              weights_initializer=None, weights_regularizer=None, biases_initializer=_DEFAULT,
              biases_regularizer=None, reuse=None, variables_collections=None,
              outputs_collections=None, trainable=True, scope=None):
        return _convolution(inputs, num_outputs, kernel_size, stride, padding, data_format,
                            rate, activation_fn, normalizer_fn, normalizer_params,
                            weights_initializer, weights_regularizer, biases_initializer,
                            biases_regularizer, reuse, variables_collections,
                            outputs_collections, trainable, scope, conv_dims)
    fixed.__name__ = fixed.__qualname__ = name
    fixed.__doc__ = ("TF1's tf.contrib.layers.%s: convolution(..., conv_dims=%d) (inputs of "
                     "rank %d); see convolution." % (name, conv_dims, conv_dims + 2))
    return add_arg_scope(fixed)


convolution1d = _fixed_dims_convolution(1, "convolution1d")
convolution2d = _fixed_dims_convolution(2, "convolution2d")
conv1d = convolution1d
conv2d = convolution2d


def _transposed_size(size, kernel, stride, padding):
    """conv2d_transpose's output length (TF's deconv_output_length); `size` an int or a
    scalar tensor."""
    if padding == "VALID":
        return size * stride + max(kernel - stride, 0)
    return size * stride


@add_arg_scope
def convolution2d_transpose(inputs, num_outputs, kernel_size, stride=1, padding="SAME",
                            data_format="NHWC", activation_fn=_DEFAULT, normalizer_fn=None,
                            normalizer_params=None, weights_initializer=None,
                            weights_regularizer=None, biases_initializer=_DEFAULT,
                            biases_regularizer=None, reuse=None, variables_collections=None,
                            outputs_collections=None, trainable=True, scope=None):
    """TF1's tf.contrib.layers.conv2d_transpose (NHWC): the transposed convolution
    (sf.nn.conv2d_transpose) with model variables <scope>/weights [kh, kw, num_outputs, in]
    (Xavier) and <scope>/biases, scope 'Conv2d_transpose'; the output is
    [N, H * s, W * s, num_outputs] with 'SAME' padding, H * s + max(kh - s, 0) with 'VALID'.
    Then normalizer_fn / activation_fn as conv2d."""
    from shardflow import nn
    from shardflow import ops as _ops
    from shardflow.variable_scope import variable_scope
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    if data_format != "NHWC":
        raise ValueError("contrib.layers.conv2d_transpose(data_format='NCHW') is not "
                         "supported; transpose the inputs to NHWC")
    x = convert_to_tensor(inputs)
    n_in = _last_dim(x, "conv2d_transpose", 4)
    ks = _spatial(kernel_size, 2, "kernel_size")
    strides = _spatial(stride, 2, "stride")
    padding = padding.upper()
    static = x.shape.as_list()
    dyn = _ops.shape(x)
    out_shape = [static[0] if static[0] is not None else dyn[0]]
    for i in (1, 2):
        size = static[i] if static[i] is not None else dyn[i]
        out_shape.append(_transposed_size(size, ks[i - 1], strides[i - 1], padding))
    out_shape.append(num_outputs)
    with variable_scope(_scope_name(scope, "Conv2d_transpose", reuse), reuse=reuse):
        w = _model_weight("weights", ks + [num_outputs, n_in], x.dtype,
                          weights_initializer or xavier_initializer(), weights_regularizer,
                          trainable, variables_collections, "weights")
        y = nn.conv2d_transpose(x, w, out_shape, strides=[1] + strides + [1],
                                padding=padding)
        y.set_shape([d if isinstance(d, int) else None for d in out_shape])
        y = _finish(y, [num_outputs], x.dtype, activation_fn, normalizer_fn,
                    normalizer_params, biases_initializer, biases_regularizer, trainable,
                    variables_collections)
    _add_to(outputs_collections, [y])
    return y


conv2d_transpose = convolution2d_transpose


@add_arg_scope
def separable_convolution2d(inputs, num_outputs, kernel_size, depth_multiplier=1, stride=1,
                            padding="SAME", data_format="NHWC", rate=1,
                            activation_fn=_DEFAULT, normalizer_fn=None, normalizer_params=None,
                            weights_initializer=None, pointwise_initializer=None,
                            weights_regularizer=None, biases_initializer=_DEFAULT,
                            biases_regularizer=None, reuse=None, variables_collections=None,
                            outputs_collections=None, trainable=True, scope=None):
    """TF1's tf.contrib.layers.separable_conv2d (NHWC): a depthwise convolution with model
    variable <scope>/depthwise_weights [kh, kw, in, depth_multiplier], then (num_outputs not
    None) a 1x1 convolution with <scope>/pointwise_weights [1, 1, in * depth_multiplier,
    num_outputs] (pointwise_initializer, default weights_initializer); <scope>/biases, or
    normalizer_fn, then activation_fn; scope 'SeparableConv2d'."""
    from shardflow import nn
    from shardflow.variable_scope import variable_scope
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    if data_format != "NHWC":
        raise ValueError("contrib.layers.separable_conv2d(data_format='NCHW') is not "
                         "supported; transpose the inputs to NHWC")
    x = convert_to_tensor(inputs)
    n_in = _last_dim(x, "separable_conv2d", 4)
    ks = _spatial(kernel_size, 2, "kernel_size")
    strides = [1] + _spatial(stride, 2, "stride") + [1]
    rates = _spatial(rate, 2, "rate")
    init = weights_initializer or xavier_initializer()
    with variable_scope(_scope_name(scope, "SeparableConv2d", reuse), reuse=reuse):
        dw = _model_weight("depthwise_weights", ks + [n_in, depth_multiplier], x.dtype, init,
                           weights_regularizer, trainable, variables_collections, "weights")
        if num_outputs is not None:
            pw = _model_weight("pointwise_weights", [1, 1, n_in * depth_multiplier,
                                                     num_outputs], x.dtype,
                               pointwise_initializer or init, weights_regularizer, trainable,
                               variables_collections, "weights")
            y = nn.separable_conv2d(x, dw, pw, strides, padding.upper(), rate=rates)
        else:
            num_outputs = n_in * depth_multiplier
            y = nn.depthwise_conv2d(x, dw, strides, padding.upper(), rate=rates)
        y = _finish(y, [num_outputs], x.dtype, activation_fn, normalizer_fn,
                    normalizer_params, biases_initializer, biases_regularizer, trainable,
                    variables_collections)
    _add_to(outputs_collections, [y])
    return y


separable_conv2d = separable_convolution2d


@add_arg_scope
def bias_add(inputs, activation_fn=None, initializer=zeros_initializer(), regularizer=None,
             reuse=None, variables_collections=None, outputs_collections=None, trainable=True,
             data_format="NHWC", scope=None):
    """TF1's tf.contrib.layers.bias_add: inputs plus a model variable <scope>/biases over
    the last dimension (zeros by default), then activation_fn (none by default); scope
    'BiasAdd'. Usable as a normalizer_fn."""
    from shardflow import nn
    from shardflow.variable_scope import variable_scope
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    if data_format != "NHWC":
        raise ValueError("contrib.layers.bias_add(data_format='NCHW') is not supported")
    x = convert_to_tensor(inputs)
    if x.shape.ndims is None:
        raise ValueError("Dims of shape must be known but is None")
    n = x.shape.as_list()[-1]
    if n is None:
        raise ValueError("`C` dimension must be known but is None")
    with variable_scope(_scope_name(scope, "BiasAdd", reuse), reuse=reuse):
        biases = _model_weight("biases", [n], x.dtype, initializer, regularizer, trainable,
                               variables_collections, "biases")
        y = nn.bias_add(x, biases)
        if activation_fn is not None:
            y = activation_fn(y)
    _add_to(outputs_collections, [y])
    return y


@add_arg_scope
def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """TF1's tf.contrib.layers.max_pool2d: max pooling over `kernel_size` windows moved by
    `stride` (2), padding 'VALID' by default (NHWC)."""
    from shardflow import layers
    if data_format != "NHWC":
        raise ValueError("contrib.layers.max_pool2d(data_format=%r): only NHWC is supported"
                         % (data_format,))
    return layers.MaxPool2D(_pair(kernel_size), strides=_pair(stride), padding=padding.upper(),
                            name=scope or "MaxPool2D")(inputs)


@add_arg_scope
def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """TF1's tf.contrib.layers.avg_pool2d: average pooling over `kernel_size` windows moved
    by `stride` (2), padding 'VALID' by default (NHWC; a 'SAME' window averages only the
    values inside the input)."""
    from shardflow import nn
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    if data_format != "NHWC":
        raise ValueError("contrib.layers.avg_pool2d(data_format='NCHW') is not supported")
    with get_default_graph().name_scope(scope or "AvgPool2D"):
        y = nn.avg_pool(inputs, list(_pair(kernel_size)), list(_pair(stride)),
                        padding=padding.upper())
    _add_to(outputs_collections, [y])
    return y


@add_arg_scope
def one_hot_encoding(labels, num_classes, on_value=1.0, off_value=0.0,
                     outputs_collections=None, scope=None):
    """TF1's tf.contrib.layers.one_hot_encoding: sf.one_hot(labels, num_classes) with
    on_value / off_value (float32 by default)."""
    from shardflow.array_ops import one_hot
    with get_default_graph().name_scope(scope or "OneHotEncoding"):
        labels = convert_to_tensor(labels)
        if labels.dtype == dtypes.int32:
            labels = ops.cast(labels, dtypes.int64)
        y = one_hot(labels, num_classes, on_value=on_value, off_value=off_value)
    _add_to(outputs_collections, [y])
    return y


@add_arg_scope
def softmax(logits, scope=None):
    """TF1's tf.contrib.layers.softmax: the softmax over the last dimension of N-D logits
    (N > 1; the last dimension must be known)."""
    from shardflow import nn
    x = convert_to_tensor(logits)
    n = _last_dim(x, "softmax")
    with get_default_graph().name_scope(scope or "softmax"):
        flat = nn.softmax(ops.reshape(x, [-1, n]))
        return ops.reshape(flat, x.shape.as_list() if x.shape.is_fully_defined()
                           else ops.shape(x))


@add_arg_scope
def unit_norm(inputs, dim, epsilon=1e-7, scope=None):
    """TF1's tf.contrib.layers.unit_norm: inputs / sqrt(epsilon + sum(inputs**2, dim))
    along axis `dim` (0 <= dim < rank)."""
    x = convert_to_tensor(inputs)
    if x.shape.ndims is None:
        raise ValueError("The input rank must be known.")
    if dim < 0 or dim >= x.shape.ndims:
        raise ValueError("dim must be positive but smaller than the input rank.")
    with get_default_graph().name_scope(scope or "UnitNorm"):
        lengths = ops.sqrt(ops.add(epsilon, ops.reduce_sum(ops.square(x), dim,
                                                           keepdims=True)))
        return ops.divide(x, lengths)


def _layer_name(layer, fallback):
    if hasattr(layer, "__name__"):
        return layer.__name__
    if hasattr(layer, "func") and hasattr(layer.func, "__name__"):
        return layer.func.__name__  # a functools.partial
    return fallback


def repeat(inputs, repetitions, layer, *args, **kwargs):
    """TF1's tf.contrib.layers.repeat: `layer` applied `repetitions` times with the same
    arguments, the i-th in scope <scope>/<scope>_<i> (scope: kwargs' 'scope', else
    'Repeat' outside and layer.__name__ inside). ``repeat(x, 2, conv2d, 64, [3, 3],
    scope='conv1')`` makes conv1/conv1_1/weights and conv1/conv1_2/weights."""
    from shardflow.variable_scope import variable_scope
    scope = kwargs.pop("scope", None)
    with variable_scope(_scope_name(scope, "Repeat", False)):
        outputs = convert_to_tensor(inputs)
        prefix = scope if scope is not None else _layer_name(layer, "repeat")
        for i in range(repetitions):
            kwargs["scope"] = prefix + "_" + str(i + 1)
            outputs = layer(outputs, *args, **kwargs)
        return outputs


def stack(inputs, layer, stack_args, **kwargs):
    """TF1's tf.contrib.layers.stack: `layer` applied once per entry of `stack_args` (a
    list; an entry is the layer's positional arguments after the inputs, or one of them),
    the i-th in scope <scope>/<scope>_<i>. ``stack(x, fully_connected, [32, 64],
    scope='fc')`` makes fc/fc_1/weights [in, 32] and fc/fc_2/weights [32, 64]."""
    from shardflow.variable_scope import variable_scope
    scope = kwargs.pop("scope", None)
    if not isinstance(stack_args, (list, tuple)):
        raise ValueError("stack_args need to be a list or tuple")
    with variable_scope(_scope_name(scope, "Stack", False)):
        outputs = convert_to_tensor(inputs)
        prefix = scope if scope is not None else _layer_name(layer, "stack")
        for i, layer_args in enumerate(stack_args):
            kwargs["scope"] = prefix + "_" + str(i + 1)
            if not isinstance(layer_args, (list, tuple)):
                layer_args = [layer_args]
            outputs = layer(outputs, *layer_args, **kwargs)
        return outputs


# ---- summaries (tf.contrib.layers.summarize_*) ----------------------------------------------

ACTIVATIONS = "activations"  # TF1's GraphKeys.ACTIVATIONS


def summarize_tensor(tensor, tag=None):
    """A scalar summary of a scalar tensor, a histogram summary otherwise; the tag defaults to
    the tensor's op name."""
    from shardflow import summary
    if tensor.shape.ndims == 0:
        return summary.scalar(tag or tensor.op.name, tensor)
    return summary.histogram(tag or tensor.op.name, tensor)


def summarize_tensors(tensors, summarizer=summarize_tensor):
    """summarizer(t) for each of `tensors`; returns the summaries."""
    return [summarizer(t) for t in tensors]


def summarize_collection(collection, name_filter=None, summarizer=summarize_tensor):
    """Summarizes the tensors of `collection` whose op name matches the regular expression
    `name_filter` (all when None)."""
    import re
    from shardflow.contrib_framework import get_variables
    found = get_variables(collection=collection)
    return summarize_tensors([t for t in found
                              if name_filter is None or re.match(name_filter, t.op.name)],
                             summarizer)


def summarize_activation(op):
    """A histogram '<op name>/activation' of `op` (an activation's output) and, for a Relu,
    Relu6 or Softplus, the scalar '<op name>/zeros': the fraction of its inputs below 0."""
    from shardflow import summary
    if op.op.type in ("Relu", "Softplus", "Relu6"):
        pre = op.op.inputs[0]
        summary.scalar("%s/zeros" % op.op.name, ops.reduce_mean(ops.cast(
            ops.less(pre, ops.cast(0.0, pre.dtype)), dtypes.float32)))
    return summary.histogram("%s/activation" % op.op.name, op)


def summarize_activations(name_filter=None, summarizer=summarize_activation):
    """summarize_activation for the tensors of the 'activations' collection (those a layer
    was given outputs_collections=['activations'] for)."""
    return summarize_collection(ACTIVATIONS, name_filter, summarizer)


def summarize_variables(name_filter=None):
    """Histograms (or scalars) of the global variables."""
    return summarize_collection(GraphKeys.GLOBAL_VARIABLES, name_filter)


@add_arg_scope
def flatten(inputs, outputs_collections=None, scope=None):
    """TF1's tf.contrib.layers.flatten: [batch, ...] -> [batch, everything else]."""
    from shardflow import layers
    return layers.flatten(inputs, name=scope or "Flatten")


def _unique_scope(default):
    """`default`, or default_1, default_2, ...: the first not yet entered in this entry of the
    current variable scope, as TF1's default scope names (Note [Default scope names] in
    shardflow/variable_scope.py)."""
    from shardflow.variable_scope import _unique_scope_name, get_variable_scope
    g = get_default_graph()
    return _unique_scope_name(get_variable_scope().name, default,
                              g.__dict__.setdefault("_variable_scope_counts", {}))


def _scope_name(scope, default, reuse):
    if scope is not None:
        return scope
    return default if reuse else _unique_scope(default)


def _add_to(collections, values):
    for c in collections or []:
        for v in values:
            get_default_graph().add_to_collection(c, v)


@add_arg_scope
def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """TF1's tf.contrib.layers.layer_norm (Ba et al. 2016): normalizes `inputs` over the
    axes from `begin_norm_axis` to the last (mean 0, variance 1, epsilon 1e-12), then
    gamma * x + beta with gamma and beta of shape inputs.shape[begin_params_axis:]
    (variables <scope>/beta and <scope>/gamma, scope 'LayerNorm' by default; also in
    MODEL_VARIABLES), then `activation_fn`."""
    x = convert_to_tensor(inputs)
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("layer_norm: inputs %s have unknown rank" % x.name)
    if begin_norm_axis < 0:
        begin_norm_axis += rank
    if begin_params_axis >= rank or begin_norm_axis >= rank:
        raise ValueError("layer_norm: begin_params_axis (%d) and begin_norm_axis (%d) must be "
                         "< rank(inputs) (%d)" % (begin_params_axis, begin_norm_axis, rank))
    params_shape = x.shape.as_list()[begin_params_axis:]
    if any(d is None for d in params_shape):
        raise ValueError("layer_norm: inputs %s have shape %s; dimensions %d: on must be known "
                         "(they are the parameters' shape)" % (x.name, x.shape,
                                                               begin_params_axis))
    return _normalized(x, list(range(begin_norm_axis, rank)), params_shape, center, scale,
                       1e-12, activation_fn, variables_collections, outputs_collections,
                       trainable, reuse, scope, "LayerNorm")


def _normalized(x, axes, params_shape, center, scale, epsilon, activation_fn,
                variables_collections, outputs_collections, trainable, reuse, scope,
                default_scope, reshape=None):
    """(x - mean) / sqrt(var + epsilon) over `axes` (of x reshaped to `reshape` if given, then
    back), times gamma plus beta (variables of params_shape under the scope), then
    activation_fn: instance and group normalization."""
    from shardflow import nn
    from shardflow.contrib_framework import model_variable
    from shardflow.variable_scope import variable_scope
    colls = _collections(variables_collections)
    with variable_scope(_scope_name(scope, default_scope, reuse), reuse=reuse):
        beta = gamma = None
        if center:
            beta = model_variable("beta", params_shape, dtype=x.dtype,
                                  initializer=zeros_initializer(), trainable=trainable,
                                  collections=colls("beta"))
        if scale:
            gamma = model_variable("gamma", params_shape, dtype=x.dtype,
                                   initializer=ones_initializer(), trainable=trainable,
                                   collections=colls("gamma"))
        h = x if reshape is None else ops.reshape(x, reshape)
        mean, variance = nn.moments(h, axes, keep_dims=True)
        h = (h - mean) * ops.rsqrt(variance + epsilon)
        if reshape is not None:
            h = ops.reshape(h, ops.shape(x))
            h.set_shape(x.shape)
        y = h
        if gamma is not None:
            y = y * gamma
        if beta is not None:
            y = y + beta
        if activation_fn is not None:
            y = activation_fn(y)
    _add_to(outputs_collections, [y])
    return y


def instance_norm(inputs, center=True, scale=True, epsilon=1e-6, activation_fn=None,
                  param_initializers=None, reuse=None, variables_collections=None,
                  outputs_collections=None, trainable=True, data_format="NHWC", scope=None):
    """TF1's tf.contrib.layers.instance_norm (Ulyanov et al. 2016; style transfer): each
    example's each channel normalized over its spatial positions, then gamma * x + beta per
    channel (<scope>/gamma, <scope>/beta; scope 'InstanceNorm'). Channels last."""
    if data_format not in ("NHWC", "NWC", "NDHWC", None):
        raise ValueError("instance_norm: only channels-last data (NHWC) is supported, not %r"
                         % (data_format,))
    if param_initializers:
        raise ValueError("instance_norm: param_initializers is not supported")
    x = convert_to_tensor(inputs)
    rank = x.shape.ndims
    if rank is None or rank < 3 or x.shape.as_list()[-1] is None:
        raise ValueError("instance_norm: inputs must have rank >= 3 and known channels, got "
                         "%s" % x.shape)
    return _normalized(x, list(range(1, rank - 1)), [x.shape.as_list()[-1]],
                       center, scale, epsilon, activation_fn, variables_collections,
                       outputs_collections, trainable, reuse, scope, "InstanceNorm")


def group_norm(inputs, groups=32, channels_axis=-1, reduction_axes=(-3, -2), center=True,
               scale=True, epsilon=1e-6, activation_fn=None, param_initializers=None,
               reuse=None, variables_collections=None, outputs_collections=None,
               trainable=True, scope=None, mean_close_to_zero=False):
    """TF1's tf.contrib.layers.group_norm (Wu and He 2018): the channels split into `groups`,
    each example's each group normalized over the spatial axes and its channels, then
    gamma * x + beta per channel (scope 'GroupNorm'). Channels last, reduction_axes the
    spatial ones before them."""
    if param_initializers:
        raise ValueError("group_norm: param_initializers is not supported")
    x = convert_to_tensor(inputs)
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or len(dims) < 3:
        raise ValueError("group_norm: inputs must have known rank >= 3, got %s" % x.shape)
    rank = len(dims)
    if channels_axis % rank != rank - 1 or sorted(a % rank for a in reduction_axes) != list(
            range(1, rank - 1)):
        raise ValueError("group_norm: channels last with the spatial axes reduced is supported "
                         "(channels_axis=-1, reduction_axes the axes between batch and "
                         "channels)")
    channels = dims[-1]
    if channels is None or channels % groups:
        raise ValueError("group_norm: %s channels do not split into %d groups"
                         % (channels, groups))
    split = ops.concat([ops.shape(x)[:-1], np.array([groups, channels // groups], np.int32)],
                       0)
    axes = list(range(1, rank - 1)) + [rank]
    return _normalized(x, axes, [channels], center, scale, epsilon,
                       activation_fn, variables_collections, outputs_collections, trainable,
                       reuse, scope, "GroupNorm", reshape=split)


def maxout(inputs, num_units, axis=-1, scope=None):
    """TF1's tf.contrib.layers.maxout (Goodfellow et al. 2013): the channels along `axis` split
    into num_units groups, each output the maximum of its group."""
    x = convert_to_tensor(inputs)
    dims = x.shape.as_list()
    axis = axis % len(dims)
    channels = dims[axis]
    if channels is None or channels % num_units:
        raise ValueError("maxout: number of features (%s) is not a multiple of num_units (%d)"
                         % (channels, num_units))
    with get_default_graph().name_scope(scope or "MaxOut"):
        shape = ops.concat([ops.shape(x)[:axis],
                            np.array([num_units, channels // num_units], np.int32),
                            ops.shape(x)[axis + 1:]], 0)
        out = ops.reduce_max(ops.reshape(x, shape), axis=axis + 1)
        out.set_shape(dims[:axis] + [num_units] + dims[axis + 1:])
        return out


def _collections(variables_collections):
    """contrib's variables_collections: a list for every variable, or a dict by name."""
    def of(name):
        if isinstance(variables_collections, dict):
            found = variables_collections.get(name)
            return [found] if isinstance(found, str) else list(found or [])
        return list(variables_collections or [])
    return of


@add_arg_scope
def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001,
               activation_fn=None, param_initializers=None, param_regularizers=None,
               updates_collections=GraphKeys.UPDATE_OPS, is_training=True, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               batch_weights=None, fused=None, data_format="NHWC",
               zero_debias_moving_mean=False, scope=None, renorm=False, renorm_clipping=None,
               renorm_decay=0.99, adjustment=None):
    """TF1's tf.contrib.layers.batch_norm over the channels (NHWC, or NCHW), as its fused kernel:
    model variables <scope>/beta (center), <scope>/gamma (scale; False by default),
    <scope>/moving_mean and moving_variance (scope 'BatchNorm'), made as TF1 makes them
    (param_initializers, param_regularizers for beta and gamma). With is_training (a bool or
    a bool tensor) the batch's moments normalise and the moving averages move by
    (1 - decay) towards them (the variance unbiased); the updates go to
    `updates_collections` (UPDATE_OPS; run them with the train op) or, with
    updates_collections=None, run before the output is returned. Otherwise the moving
    averages normalise. data_format="NCHW" normalises axis 1. renorm, batch_weights and
    zero_debias_moving_mean are not supported."""
    from shardflow import nn
    from shardflow.variable_scope import variable_scope
    for what, value in (("batch_weights", batch_weights), ("renorm", renorm),
                        ("zero_debias_moving_mean", zero_debias_moving_mean),
                        ("adjustment", adjustment)):
        if value:
            raise ValueError("contrib.layers.batch_norm(%s=...) is not supported" % what)
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("contrib.layers.batch_norm(data_format=%r): NHWC or NCHW"
                         % (data_format,))
    inits = dict(param_initializers or {})
    unknown = set(inits) - {"beta", "gamma", "moving_mean", "moving_variance"}
    if unknown:
        raise ValueError("batch_norm param_initializers: unknown keys %s (use beta, gamma, "
                         "moving_mean, moving_variance)" % sorted(unknown))
    regs = dict(param_regularizers or {})
    x = convert_to_tensor(inputs)
    if x.shape.ndims is None:
        raise ValueError("Inputs %s has undefined rank" % x.name)
    if data_format == "NCHW":
        # Channels moved last for the kernel, the output moved back; the variables are per
        # channel either way.
        x, restore = nn.channels_last(x, 1, "batch_norm")
    else:
        restore = None
    c = _last_dim(x, "batch_norm")
    g = get_default_graph()

    def param(name, default, trainable_param, reg=None):
        return _model_weight(name, [c], x.dtype, inits.get(name, default), reg,
                             trainable_param, variables_collections, name)

    with variable_scope(_scope_name(scope, "BatchNorm", reuse), reuse=reuse):
        beta = param("beta", zeros_initializer(), trainable, regs.get("beta")) if center \
            else ops.constant(np.zeros([c], x.dtype.as_numpy_dtype))
        gamma = param("gamma", ones_initializer(), trainable, regs.get("gamma")) if scale \
            else ops.constant(np.ones([c], x.dtype.as_numpy_dtype))
        moving_mean = param("moving_mean", zeros_initializer(), False)
        moving_variance = param("moving_variance", ones_initializer(), False)
        mm, mv = moving_mean.value(), moving_variance.value()
        if isinstance(is_training, Tensor) or is_training:
            y, batch_mean, batch_var = nn.fused_batch_norm(x, gamma, beta, epsilon=epsilon)
            batch_var = nn.moving_variance_update(x, batch_var)
            # A scalar (tf.placeholder(tf.bool) has no shape), so that y keeps x's shape.
            weight = ops.reshape(ops.cast(is_training, x.dtype), []) \
                if isinstance(is_training, Tensor) else None
            updates = []
            for moving, batch in ((moving_mean, batch_mean), (moving_variance, batch_var)):
                delta = ops.multiply(ops.subtract(batch, moving.value()), 1.0 - decay)
                if weight is not None:
                    delta = ops.multiply(delta, weight)
                updates.append(moving.assign_add(delta, read_value=False))
            if weight is not None:   # a fed flag: both paths, weighed by it
                y_eval = nn.fused_batch_norm(x, gamma, beta, mm, mv, epsilon=epsilon,
                                             is_training=False)[0]
                y = ops.add(ops.multiply(y, weight),
                            ops.multiply(y_eval, ops.subtract(1.0, weight)))
            if updates_collections is None:
                with g.control_dependencies(updates):
                    y = ops.identity(y)
            else:
                _add_to([updates_collections] if isinstance(updates_collections, str)
                        else list(updates_collections), updates)
        else:
            y = nn.fused_batch_norm(x, gamma, beta, mm, mv, epsilon=epsilon,
                                    is_training=False)[0]
        if restore is not None:
            y = restore(y)
        if activation_fn is not None:
            y = activation_fn(y)
    _add_to(outputs_collections, [y])
    return y


def dense_to_sparse(tensor, eos_token=0, outputs_collections=None, scope=None):
    """TF1's tf.contrib.layers.dense_to_sparse: a SparseTensor of the entries of `tensor` that
    are not `eos_token` (CTC programs turn padded label matrices into sparse labels with it)."""
    from shardflow.sparse_tensor import SparseTensor
    from shardflow import array_ops
    g = get_default_graph()
    with g.name_scope(scope or "dense_to_sparse"):
        tensor = convert_to_tensor(tensor)
        eos = ops.cast(convert_to_tensor(eos_token), tensor.dtype) if tensor.dtype != \
            dtypes.string else convert_to_tensor(eos_token)
        indices = array_ops.where(ops.not_equal(tensor, eos))
        values = array_ops.gather_nd(tensor, indices)
        shape = ops.cast(ops.shape(tensor), dtypes.int64)
        return SparseTensor(indices, values, shape)


def embed_sequence(ids, vocab_size=None, embed_dim=None, unique=False, initializer=None,
                   regularizer=None, trainable=True, scope=None, reuse=None):
    """TF1's tf.contrib.layers.embed_sequence: [batch, time] ids -> [batch, time, embed_dim]
    vectors from a [vocab_size, embed_dim] variable <scope>/embeddings (scope
    'EmbedSequence'; Glorot-uniform by default)."""
    from shardflow import nn
    from shardflow.contrib_framework import model_variable
    from shardflow.variable_scope import variable_scope
    if not (vocab_size and embed_dim):
        raise ValueError("embed_sequence needs vocab_size and embed_dim (both positive), got "
                         "%r and %r" % (vocab_size, embed_dim))
    with variable_scope(_scope_name(scope, "EmbedSequence", reuse), reuse=reuse):
        embeddings = model_variable("embeddings", [int(vocab_size), int(embed_dim)],
                                    initializer=initializer, regularizer=regularizer,
                                    trainable=trainable)
        return nn.embedding_lookup(embeddings, ids)


@add_arg_scope
def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True,
            outputs_collections=None, scope=None, seed=None):
    """TF1's tf.contrib.layers.dropout: with is_training (a bool or a bool tensor) each
    element is kept with probability keep_prob and scaled by 1 / keep_prob; the identity
    otherwise."""
    from shardflow import layers, nn
    g = get_default_graph()
    with g.name_scope(scope or "Dropout"):
        if isinstance(keep_prob, Tensor):
            if isinstance(is_training, Tensor):
                keep_prob = ops.subtract(1.0, ops.multiply(
                    ops.subtract(1.0, keep_prob),
                    ops.reshape(ops.cast(is_training, dtypes.float32), [])))
                y = nn.dropout(inputs, keep_prob, noise_shape=noise_shape, seed=seed)
            elif is_training:
                y = nn.dropout(inputs, keep_prob, noise_shape=noise_shape, seed=seed)
            else:
                y = ops.identity(inputs)
        else:
            y = layers.dropout(inputs, rate=1.0 - float(keep_prob), noise_shape=noise_shape,
                               seed=seed, training=is_training)
    _add_to(outputs_collections, [y])
    return y


OPTIMIZER_CLS_NAMES = ("Adagrad", "Adam", "Ftrl", "Momentum", "RMSProp", "SGD")
OPTIMIZER_SUMMARIES = ("learning_rate", "loss", "gradients", "gradient_norm",
                       "global_gradient_norm")


def _named_optimizer(name, lr):
    from shardflow import train
    make = {"Adagrad": train.AdagradOptimizer, "Adam": train.AdamOptimizer,
            "Ftrl": train.FtrlOptimizer, "RMSProp": train.RMSPropOptimizer,
            "SGD": train.GradientDescentOptimizer,
            "Momentum": lambda learning_rate: train.MomentumOptimizer(learning_rate, 0.9)}
    if name not in make:
        raise ValueError("optimize_loss: optimizer %r is not one of %s, an Optimizer or a "
                         "function of the learning rate" % (name, ", ".join(OPTIMIZER_CLS_NAMES)))
    return make[name](learning_rate=lr)


def optimize_loss(loss, global_step, learning_rate, optimizer, gradient_noise_scale=None,
                  gradient_multipliers=None, clip_gradients=None, learning_rate_decay_fn=None,
                  update_ops=None, variables=None, name=None, summaries=None,
                  colocate_gradients_with_ops=False, increment_global_step=True):
    """TF1's tf.contrib.layers.optimize_loss: the training op for `loss` — gradients of
    `variables` (default: the trainable ones), scaled by gradient_multipliers, noised by
    gradient_noise_scale, clipped (a float: by global norm; a function of grads_and_vars:
    applied), then applied by `optimizer` (a name of OPTIMIZER_CLS_NAMES, an Optimizer class
    or instance, or a function of the learning rate) after the UPDATE_OPS (or `update_ops`),
    with learning_rate_decay_fn(learning_rate, global_step) when given. Adds the `summaries`
    (default learning_rate, loss, global_gradient_norm). Returns the loss, computed after the
    update (as TF1's train tensor)."""
    from shardflow import summary, train
    from shardflow.ops import random_normal
    from shardflow.variables import trainable_variables
    g = get_default_graph()
    loss = convert_to_tensor(loss)
    if global_step is None:
        global_step = train.get_global_step()
    with g.name_scope(name or "OptimizeLoss"):
        if update_ops is None:
            update_ops = g.get_collection(GraphKeys.UPDATE_OPS)
        if update_ops:
            with g.control_dependencies(list(update_ops)):
                loss = ops.identity(loss)
        lr = None
        if learning_rate is not None:
            lr = learning_rate if isinstance(learning_rate, Tensor) else ops.constant(
                float(learning_rate), name="learning_rate")
            if learning_rate_decay_fn is not None:
                if global_step is None:
                    raise ValueError("optimize_loss: learning_rate_decay_fn needs a global_step")
                lr = learning_rate_decay_fn(lr, global_step)
        if isinstance(optimizer, str):
            if lr is None:
                raise ValueError("optimize_loss: a named optimizer needs a learning_rate")
            opt = _named_optimizer(optimizer, lr)
        elif isinstance(optimizer, type) and issubclass(optimizer, train.Optimizer):
            if lr is None:
                raise ValueError("optimize_loss: an Optimizer class needs a learning_rate")
            opt = optimizer(learning_rate=lr)
        elif isinstance(optimizer, train.Optimizer) or hasattr(optimizer, "apply_gradients"):
            opt = optimizer
        elif callable(optimizer):
            opt = optimizer(lr) if lr is not None else optimizer()
        else:
            raise ValueError("optimize_loss: optimizer must be a name, an Optimizer class or "
                             "instance, or a function; got %r" % (optimizer,))
        summaries = OPTIMIZER_SUMMARIES[:2] + ("global_gradient_norm",) \
            if summaries is None else tuple(summaries)
        if lr is not None and "learning_rate" in summaries:
            summary.scalar("learning_rate", lr)
        if "loss" in summaries:
            summary.scalar("loss", loss)
        var_list = list(variables) if variables is not None else trainable_variables()
        grads = opt.compute_gradients(loss, var_list=var_list)
        pairs = [(gr, v) for gr, v in grads if gr is not None]
        if not pairs:
            raise ValueError("optimize_loss: no variable has a gradient of the loss")
        if gradient_noise_scale is not None:
            pairs = [(ops.add(gr, ops.multiply(random_normal(ops.shape(gr)),
                                               float(gradient_noise_scale))), v)
                     for gr, v in pairs]
        if gradient_multipliers:
            by_name = {getattr(k, "name", k): m for k, m in gradient_multipliers.items()}
            pairs = [(ops.multiply(gr, float(by_name[v.name])) if v.name in by_name else gr,
                      v) for gr, v in pairs]
        if "global_gradient_norm" in summaries or "gradient_norm" in summaries:
            summary.scalar("global_norm/gradient_norm",
                           ops.global_norm([gr for gr, _ in pairs]))
        if isinstance(clip_gradients, (int, float)):
            clipped, _ = ops.clip_by_global_norm([gr for gr, _ in pairs],
                                                 float(clip_gradients))
            pairs = list(zip(clipped, [v for _, v in pairs]))
        elif callable(clip_gradients):
            pairs = list(clip_gradients(pairs))
        elif clip_gradients is not None:
            raise ValueError("optimize_loss: clip_gradients must be a number or a function, "
                             "got %r" % (clip_gradients,))
        update = opt.apply_gradients(pairs, global_step=global_step if increment_global_step
                                     else None, name="train")
        with g.control_dependencies([update]):
            return ops.identity(loss, name="train_op")


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.layers.%s: it carries %s. "
        "For other layers use sf.layers (conv3d, ...)" % (name, ", ".join(__all__)))


__all__ = ["ACTIVATIONS", "apply_regularization", "avg_pool2d", "batch_norm", "bias_add",
           "conv1d", "conv2d", "conv2d_transpose", "convolution", "convolution1d",
           "convolution2d", "convolution2d_transpose", "dense_to_sparse", "dropout",
           "embed_sequence",
           "flatten", "fully_connected", "group_norm", "instance_norm", "l1_l2_regularizer",
           "l1_regularizer", "l2_regularizer", "layer_norm", "max_pool2d", "maxout", "one_hot_encoding", "optimize_loss",
           "repeat", "separable_conv2d", "separable_convolution2d", "softmax", "stack",
           "sum_regularizer", "summarize_activation", "summarize_activations",
           "summarize_collection", "summarize_tensor", "summarize_tensors",
           "summarize_variables", "unit_norm", "variance_scaling_initializer",
           "xavier_initializer", "xavier_initializer_conv2d"]
