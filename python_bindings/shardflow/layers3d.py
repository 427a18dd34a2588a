"""TF1's 3-D layers over NDHWC volumes ([batch, depth, height, width, channels]): tf.layers.Conv3D,
Conv3DTranspose, MaxPooling3D, AveragePooling3D and their functions conv3d, conv3d_transpose,
max_pooling3d, average_pooling3d (padding 'valid' by default, as TF1).

Example::

    h = sf.layers.conv3d(clips, 16, 3, padding="same", activation=sf.nn.relu)
    h = sf.layers.max_pooling3d(h, 2, 2)
"""

from shardflow import nn, nn3d, ops
from shardflow.layers import Conv2D, Layer, _last_dim, _layer_kwargs


def _triple(v, what):
    """An int, or a list or tuple of 3 ints."""
    if isinstance(v, int):
        return (v, v, v)
    v = tuple(int(e) for e in v)
    if len(v) != 3:
        raise ValueError("%s takes an int or 3 ints, not %r" % (what, v))
    return v


def _channels_last(data_format, what):
    if data_format not in ("channels_last", "NDHWC", None):
        raise ValueError("%s(data_format=%r): only channels_last (NDHWC) is supported"
                         % (what, data_format))


class Conv3D(Conv2D):
    """3-D convolution of NDHWC inputs, plus a bias and an optional activation. The kernel is
    [kd, kh, kw, in_channels, filters]; regularizers and constraints as for Dense.

    Example: ``h = sf.layers.Conv3D(16, 3, padding="same", activation=sf.nn.relu)(clips)``.
    """

    _default_name = "conv3d"

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1, 1), activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 seed=0, device=None, **kwargs):
        _layer_kwargs(kwargs, type(self).__name__)
        _channels_last(data_format, type(self).__name__)
        super().__init__(filters, 1, padding=padding.upper(), activation=activation,
                         use_bias=use_bias, kernel_initializer=kernel_initializer, seed=seed,
                         name=name, device=device, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable)
        what = type(self).__name__
        self.kernel_size = _triple(kernel_size, what + " kernel_size")
        self.strides = _triple(strides, what + " strides")
        self.dilation_rate = _triple(dilation_rate, what + " dilation_rate")

    def _kernel_shape(self, c_in):
        return list(self.kernel_size) + [c_in, self.filters]

    def build(self, input_shape):
        c_in = _last_dim(input_shape, type(self).__name__)
        self.kernel = self.add_variable(
            "kernel", self._kernel_shape(c_in), self.kernel_initializer,
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_variable("bias", [self.filters], self.bias_initializer,
                                          regularizer=self.bias_regularizer,
                                          constraint=self.bias_constraint)

    def _convolve(self, x):
        return nn3d.conv3d(x, self.kernel, strides=self.strides, padding=self.padding,
                           dilations=self.dilation_rate)

    def call(self, x, training=False):
        y = self._convolve(x)
        if self.use_bias:
            y = nn.bias_add(y, self.bias)
        return self.activation(y) if self.activation else y


class Conv3DTranspose(Conv3D):
    """Transposed 3-D convolution of NDHWC inputs (sf.nn.conv3d_transpose): the output is
    `strides` times larger ('same'; 'valid' adds max(kernel_size - strides, 0)). The kernel is
    [kd, kh, kw, filters, in_channels], as in TF1."""

    _default_name = "conv3d_transpose"

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, seed=0, device=None,
                 **kwargs):
        _layer_kwargs(kwargs, type(self).__name__)
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, seed=seed, device=device)

    def _kernel_shape(self, c_in):
        return list(self.kernel_size) + [self.filters, c_in]

    def _convolve(self, x):
        dims = x.shape.as_list()
        out = []
        for i in range(3):
            size, k, st = dims[i + 1], self.kernel_size[i], self.strides[i]
            if size is None:
                raise ValueError("Conv3DTranspose needs the input's depth, height and width, "
                                 "got %r" % (dims,))
            out.append(size * st if self.padding == "SAME" else size * st + max(k - st, 0))
        batch = dims[0] if dims[0] is not None else ops.shape(x)[0]
        return nn3d.conv3d_transpose(x, self.kernel, [batch] + out + [self.filters],
                                     strides=self.strides, padding=self.padding)


class _Pool3D(Layer):
    """A pooling window over NDHWC inputs; subclasses name the nn3d function."""

    def __init__(self, pool_size, strides=None, padding="valid", data_format="channels_last",
                 name=None, device=None, **kwargs):
        _layer_kwargs(kwargs, type(self).__name__)
        _channels_last(data_format, type(self).__name__)
        super().__init__(name, device)
        self.pool_size = _triple(pool_size, type(self).__name__ + " pool_size")
        self.strides = self.pool_size if strides is None else \
            _triple(strides, type(self).__name__ + " strides")
        self.padding = padding.upper()

    def call(self, x, training=False):
        return self._pool(x, self.pool_size, self.strides, self.padding)


class MaxPooling3D(_Pool3D):
    """Max pooling of NDHWC inputs. Example: ``p = sf.layers.MaxPooling3D(2, 2)(h)``."""

    _default_name = "max_pooling3d"
    _pool = staticmethod(nn3d.max_pool3d)


class AveragePooling3D(_Pool3D):
    """Average pooling of NDHWC inputs (padded positions not counted)."""

    _default_name = "average_pooling3d"
    _pool = staticmethod(nn3d.avg_pool3d)


MaxPool3D, AveragePool3D = MaxPooling3D, AveragePooling3D


def conv3d(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """TF1's tf.layers.conv3d: variables <name>/kernel [kd, kh, kw, in, filters] and
    <name>/bias."""
    layer = Conv3D(filters, kernel_size, strides=strides, padding=padding,
                   data_format=data_format, dilation_rate=dilation_rate, activation=activation,
                   use_bias=use_bias, kernel_initializer=kernel_initializer,
                   bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                   bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                   kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                   trainable=trainable, name=name)
    layer._reuse = reuse
    return layer(inputs)


def conv3d_transpose(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """TF1's tf.layers.conv3d_transpose: kernel [kd, kh, kw, filters, in]."""
    layer = Conv3DTranspose(filters, kernel_size, strides=strides, padding=padding,
                            data_format=data_format, activation=activation, use_bias=use_bias,
                            kernel_initializer=kernel_initializer,
                            bias_initializer=bias_initializer,
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer,
                            kernel_constraint=kernel_constraint,
                            bias_constraint=bias_constraint, trainable=trainable, name=name)
    layer._reuse = reuse
    return layer(inputs)


def max_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """TF1's tf.layers.max_pooling3d."""
    return MaxPooling3D(pool_size, strides, padding, data_format, name=name)(inputs)


def average_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """TF1's tf.layers.average_pooling3d."""
    return AveragePooling3D(pool_size, strides, padding, data_format, name=name)(inputs)
