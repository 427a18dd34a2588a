"""tf.contrib.layers' regularizers and initializers under their TF1 names:
l1_regularizer, l2_regularizer, l1_l2_regularizer, sum_regularizer, apply_regularization
(shardflow.regularizers), xavier_initializer (Glorot) and variance_scaling_initializer with
contrib's own signature (factor, mode 'FAN_IN'/'FAN_OUT'/'FAN_AVG', uniform). The rest of
tf.contrib.layers (its layer functions) is refused with the core API to use instead.

Example::

    w = sf.get_variable("w", [784, 10], initializer=sf.contrib.layers.xavier_initializer(),
                        regularizer=sf.contrib.layers.l2_regularizer(1e-4))
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


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.layers.%s: it carries only contrib.layers' regularizers "
        "and initializers (%s). For layers use sf.layers (dense, conv2d, batch_normalization, "
        "flatten, ...)" % (name, ", ".join(__all__)))


__all__ = ["apply_regularization", "l1_l2_regularizer", "l1_regularizer", "l2_regularizer",
           "sum_regularizer", "variance_scaling_initializer", "xavier_initializer",
           "xavier_initializer_conv2d"]
