"""tf.contrib.layers under its TF1 names: the regularizers l1_regularizer, l2_regularizer,
l1_l2_regularizer, sum_regularizer and apply_regularization (shardflow.regularizers), the
initializers xavier_initializer (Glorot) and variance_scaling_initializer with contrib's own
signature (factor, mode 'FAN_IN'/'FAN_OUT'/'FAN_AVG', uniform), and the layer functions
fully_connected, conv2d, max_pool2d and flatten (thin wrappers over sf.layers, with contrib's
defaults: a ReLU activation, 'SAME' convolution padding). Other contrib.layers names are
refused with the core API to use instead.

Example::

    w = sf.get_variable("w", [784, 10], initializer=sf.contrib.layers.xavier_initializer(),
                        regularizer=sf.contrib.layers.l2_regularizer(1e-4))
    h = sf.contrib.layers.conv2d(images, 32, [5, 5])               # ReLU, SAME padding
    h = sf.contrib.layers.max_pool2d(h, [2, 2])
    logits = sf.contrib.layers.fully_connected(sf.contrib.layers.flatten(h), 10,
                                               activation_fn=None)
"""

import math

from shardflow import dtypes, ops
from shardflow.regularizers import (apply_regularization, l1_l2_regularizer,  # noqa: F401
                                    l1_regularizer, l2_regularizer, sum_regularizer)

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


def _activation(fn, normalizer_fn, normalizer_params):
    """contrib's order: the layer's output, then normalizer_fn (which replaces the bias), then
    the activation."""
    def apply(x):
        if normalizer_fn is not None:
            x = normalizer_fn(x, **(normalizer_params or {}))
        return fn(x) if fn is not None else x
    return apply


def _pair(v):
    return (int(v), int(v)) if isinstance(v, (int, float)) else tuple(int(d) for d in v)


def _default_relu():
    from shardflow import nn
    return nn.relu


# contrib's defaults, told apart from an explicit None: activation_fn sf.nn.relu (None means
# linear), biases_initializer zeros (None means no bias).
_DEFAULT = object()


def fully_connected(inputs, num_outputs, activation_fn=_DEFAULT, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=None, weights_regularizer=None,
                    biases_initializer=_DEFAULT, biases_regularizer=None, reuse=None,
                    variables_collections=None, outputs_collections=None, trainable=True,
                    scope=None):
    """TF1's tf.contrib.layers.fully_connected: activation_fn(inputs @ weights + biases),
    a ReLU by default (activation_fn=None: linear); weights Xavier-initialized by default;
    biases_initializer=None or a normalizer_fn leaves out the bias. A dense layer of
    sf.layers (variables <scope>/kernel and <scope>/bias)."""
    from shardflow import layers
    act = _default_relu() if activation_fn is _DEFAULT else activation_fn
    use_bias = biases_initializer is not None and normalizer_fn is None
    layer = layers.Dense(num_outputs, activation=_activation(act, normalizer_fn,
                                                             normalizer_params),
                         use_bias=use_bias,
                         kernel_initializer=weights_initializer or xavier_initializer(),
                         bias_initializer=None if biases_initializer is _DEFAULT
                         else biases_initializer,
                         kernel_regularizer=weights_regularizer,
                         bias_regularizer=biases_regularizer,
                         name=scope or "fully_connected")
    return layer(inputs)


def conv2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
           rate=1, activation_fn=_DEFAULT, normalizer_fn=None, normalizer_params=None,
           weights_initializer=None, weights_regularizer=None, biases_initializer=_DEFAULT,
           biases_regularizer=None, reuse=None, variables_collections=None,
           outputs_collections=None, trainable=True, scope=None):
    """TF1's tf.contrib.layers.conv2d (NHWC): activation_fn(conv(inputs) + biases) with
    `num_outputs` filters of `kernel_size`, `stride` and padding 'SAME' by default, a ReLU
    by default; weights Xavier-initialized. Dilation (rate > 1) is not supported."""
    from shardflow import layers
    if data_format not in (None, "NHWC"):
        raise ValueError("contrib.layers.conv2d(data_format=%r): only NHWC is supported"
                         % (data_format,))
    if _pair(rate) != (1, 1):
        raise ValueError("contrib.layers.conv2d(rate=%r): dilated convolution is not "
                         "supported" % (rate,))
    act = _default_relu() if activation_fn is _DEFAULT else activation_fn
    use_bias = biases_initializer is not None and normalizer_fn is None
    layer = layers.Conv2D(num_outputs, _pair(kernel_size), strides=_pair(stride),
                          padding=padding.upper(),
                          activation=_activation(act, normalizer_fn, normalizer_params),
                          use_bias=use_bias,
                          kernel_initializer=weights_initializer or xavier_initializer(),
                          bias_initializer=None if biases_initializer is _DEFAULT
                          else biases_initializer,
                          kernel_regularizer=weights_regularizer,
                          bias_regularizer=biases_regularizer, name=scope or "Conv")
    return layer(inputs)


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


def flatten(inputs, outputs_collections=None, scope=None):
    """TF1's tf.contrib.layers.flatten: [batch, ...] -> [batch, everything else]."""
    from shardflow import layers
    return layers.flatten(inputs, name=scope or "Flatten")


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.layers.%s: it carries contrib.layers' regularizers, "
        "initializers and the layers fully_connected, conv2d, max_pool2d and flatten (%s). "
        "For other layers use sf.layers (dense, conv2d, batch_normalization, dropout, ...)"
        % (name, ", ".join(__all__)))


__all__ = ["apply_regularization", "conv2d", "flatten", "fully_connected", "l1_l2_regularizer",
           "l1_regularizer", "l2_regularizer", "max_pool2d", "sum_regularizer",
           "variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d"]
