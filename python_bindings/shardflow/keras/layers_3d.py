"""Keras's 3-D layers over NDHWC volumes ([batch, depth, height, width, channels]): Conv3D,
Conv3DTranspose, MaxPooling3D, AveragePooling3D, GlobalMaxPooling3D, GlobalAveragePooling3D,
UpSampling3D, ZeroPadding3D and Cropping3D (channels_last only; padding 'valid' by default).

Example::

    model = keras.Sequential([
        keras.layers.Conv3D(8, 3, activation="relu", input_shape=(16, 32, 32, 1)),
        keras.layers.MaxPooling3D(2),
        keras.layers.GlobalAveragePooling3D(),
        keras.layers.Dense(10, activation="softmax")])
"""

from shardflow import layers3d as _tf3
from shardflow import ops
from shardflow.keras import initializers
from shardflow.keras.layers import (Layer, _activation, _crop, _GlobalPooling, _pair, _padding,
                                    _repeat, _zero_pad)


class Conv3D(Layer, _tf3.Conv3D):
    """3-D convolution of NDHWC inputs; kernel [kd, kh, kw, in, filters]."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        _tf3.Conv3D.__init__(self, filters, kernel_size, strides=strides,
                             padding=_padding(padding), data_format=data_format,
                             dilation_rate=dilation_rate, activation=_activation(activation),
                             use_bias=use_bias,
                             kernel_initializer=initializers.get(kernel_initializer),
                             bias_initializer=initializers.get(bias_initializer),
                             kernel_regularizer=kernel_regularizer,
                             bias_regularizer=bias_regularizer,
                             activity_regularizer=activity_regularizer)
        self._keras_init(kwargs)
        self._set_constraints(kernel=kernel_constraint, bias=bias_constraint)


class Conv3DTranspose(Layer, _tf3.Conv3DTranspose):
    """Transposed 3-D convolution of NDHWC inputs (sf.nn.conv3d_transpose): the output is
    `strides` times larger ('same'; 'valid' adds max(kernel_size - strides, 0)). The kernel is
    [kd, kh, kw, filters, in_channels]."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 output_padding=None, data_format=None, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        if output_padding is not None:
            raise ValueError("Conv3DTranspose: output_padding is not supported")
        _tf3.Conv3DTranspose.__init__(
            self, filters, kernel_size, strides=strides, padding=_padding(padding),
            data_format=data_format, activation=_activation(activation), use_bias=use_bias,
            kernel_initializer=initializers.get(kernel_initializer),
            bias_initializer=initializers.get(bias_initializer),
            kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer)
        self._keras_init(kwargs)
        self._set_constraints(kernel=kernel_constraint, bias=bias_constraint)


class MaxPooling3D(Layer, _tf3.MaxPooling3D):
    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        _tf3.MaxPooling3D.__init__(self, pool_size, strides, _padding(padding), data_format)
        self._keras_init(kwargs)


class AveragePooling3D(Layer, _tf3.AveragePooling3D):
    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        _tf3.AveragePooling3D.__init__(self, pool_size, strides, _padding(padding),
                                       data_format)
        self._keras_init(kwargs)


class GlobalMaxPooling3D(_GlobalPooling):
    """NDHWC -> [batch, channels]: the maximum over depth, height and width."""
    _rank, _reduce = 5, staticmethod(ops.reduce_max)


class GlobalAveragePooling3D(_GlobalPooling):
    """NDHWC -> [batch, channels]: the mean over depth, height and width."""
    _rank, _reduce = 5, staticmethod(ops.reduce_mean)


def _triples(value, what):
    """Three (before, after) pairs from an int, 3 ints, or 3 pairs."""
    if isinstance(value, int):
        return ((value, value),) * 3
    value = tuple(value)
    if len(value) != 3:
        raise ValueError("%s takes an int, 3 ints or 3 pairs of ints, not %r" % (what, value))
    return tuple(_pair(v, what) for v in value)


class ZeroPadding3D(Layer):
    """Adds zeros around NDHWC volumes: `padding` an int, 3 ints (both sides of depth, height,
    width) or 3 (before, after) pairs."""

    def __init__(self, padding=(1, 1, 1), data_format=None, **kwargs):
        _tf3._channels_last(data_format, "ZeroPadding3D")
        super().__init__(**kwargs)
        self.padding = _triples(padding, "ZeroPadding3D padding")

    def call(self, inputs):
        for axis, (before, after) in enumerate(self.padding, start=1):
            inputs = _zero_pad(inputs, axis, before, after)
        return inputs


class Cropping3D(Layer):
    """Removes the borders of NDHWC volumes: `cropping` as ZeroPadding3D's padding."""

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        _tf3._channels_last(data_format, "Cropping3D")
        super().__init__(**kwargs)
        self.cropping = _triples(cropping, "Cropping3D cropping")

    def call(self, inputs):
        for axis, (before, after) in enumerate(self.cropping, start=1):
            inputs = _crop(inputs, axis, before, after)
        return inputs


class UpSampling3D(Layer):
    """Repeats each voxel of NDHWC volumes `size` = (depth, rows, columns) times (or an int)."""

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        _tf3._channels_last(data_format, "UpSampling3D")
        super().__init__(**kwargs)
        self.size = _tf3._triple(size, "UpSampling3D size")

    def call(self, inputs):
        for axis, n in enumerate(self.size, start=1):
            inputs = _repeat(inputs, axis, n)
        return inputs


Convolution3D, Convolution3DTranspose = Conv3D, Conv3DTranspose
MaxPool3D, AvgPool3D = MaxPooling3D, AveragePooling3D
GlobalMaxPool3D, GlobalAvgPool3D = GlobalMaxPooling3D, GlobalAveragePooling3D
