"""Convolutions composed from Conv2D, as TF1's tf.nn.conv1d, tf.nn.depthwise_conv2d and
tf.nn.separable_conv2d; they train through their inputs and filters with Conv2D's gradients.

conv1d is one Conv2D over a height of 1. depthwise_conv2d runs one Conv2D per input channel
(its [kh, kw, 1, multiplier] slice of the filter) and concatenates the results, so the graph
grows with the number of channels: meant for the few channels of small models (tens, not
hundreds).

Example::

    y = sf.nn.conv1d(x, w, stride=1, padding="SAME")             # x [N, W, C], w [k, C, out]
    z = sf.nn.separable_conv2d(images, depthwise, pointwise, strides=[1, 1, 1, 1],
                               padding="SAME")
"""

from shardflow import array_ops, ops


def _no_dilation(what, rate, dilations):
    for v in (rate, dilations):
        if v is not None and list(v if isinstance(v, (list, tuple)) else [v]) not in (
                [1], [1, 1], [1, 1, 1], [1, 1, 1, 1]):
            raise ValueError("%s: dilated convolutions (rate/dilations %r) are not supported"
                             % (what, v))


def _stride_1d(stride, what):
    if isinstance(stride, int):
        return stride
    s = list(stride)
    if len(s) == 1:
        return int(s[0])
    if len(s) == 3 and s[0] == 1 and s[2] == 1:
        return int(s[1])
    raise ValueError("%s: stride must be an int, [s] or [1, s, 1], not %r" % (what, stride))


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """1-D convolution of `value` [batch, width, in] (NWC) with `filters` [k, in, out], as
    TF1's tf.nn.conv1d: a Conv2D over a height of 1. `stride` an int (or [1, s, 1]),
    `padding` 'SAME' or 'VALID'; returns [batch, out_width, out].

    Example::

        y = sf.nn.conv1d(x, w, stride=2, padding="VALID")   # x [N, 10, 3], w [3, 3, 8]
    """
    from shardflow.nn import conv2d
    value = value if value is not None else input
    if value is None or filters is None or stride is None or padding is None:
        raise ValueError("conv1d needs value, filters, stride and padding")
    if data_format not in (None, "NWC"):
        raise ValueError("conv1d(data_format=%r): only NWC ([batch, width, channels]) is "
                         "supported; from NCW: sf.transpose(x, [0, 2, 1])" % (data_format,))
    _no_dilation("conv1d", None, dilations)
    s = _stride_1d(stride, "conv1d")
    x = ops.expand_dims(ops.convert_to_tensor(value), 1)
    w = ops.expand_dims(ops.convert_to_tensor(filters), 0)
    y = conv2d(x, w, strides=[1, 1, s, 1], padding=padding)
    return ops.squeeze(y, [1], name=name)


def _channels(x, what):
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or len(dims) != 4 or dims[3] is None:
        raise ValueError("%s takes NHWC input with a known number of channels, got shape %s"
                         % (what, x.shape))
    return dims[3]


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """Each input channel c of NHWC `input` convolved with its own filters
    filter[:, :, c, :] ([kh, kw, in, multiplier]); output channel c * multiplier + m is
    channel c's m-th result, as TF1's tf.nn.depthwise_conv2d. One Conv2D per input channel
    (see the module docstring).

    Example::

        y = sf.nn.depthwise_conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")  # w [3,3,C,2]
    """
    from shardflow.nn import _nhwc, conv2d
    _nhwc(data_format, "depthwise_conv2d")
    _no_dilation("depthwise_conv2d", rate, dilations)
    x = ops.convert_to_tensor(input)
    w = ops.convert_to_tensor(filter)
    channels = _channels(x, "depthwise_conv2d")
    if w.shape.ndims != 4 or w.shape.as_list()[2] not in (None, channels):
        raise ValueError("depthwise_conv2d: filter must be [kh, kw, %d, multiplier], got %s"
                         % (channels, w.shape))
    if channels == 1:
        return conv2d(x, w, strides=strides, padding=padding, name=name)
    xs = array_ops.split(x, channels, axis=3)
    ws = array_ops.split(w, channels, axis=2)
    parts = [conv2d(xc, wc, strides=strides, padding=padding) for xc, wc in zip(xs, ws)]
    return ops.concat(parts, 3, name=name)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, name=None, data_format=None, dilations=None):
    """depthwise_conv2d(input, depthwise_filter) followed by a 1x1 convolution with
    `pointwise_filter` [1, 1, in * multiplier, out], as TF1's tf.nn.separable_conv2d
    (`strides` apply to the depthwise step).

    Example::

        y = sf.nn.separable_conv2d(x, dw, pw, strides=[1, 1, 1, 1], padding="SAME")
    """
    from shardflow.nn import conv2d
    pw = ops.convert_to_tensor(pointwise_filter)
    if pw.shape.ndims != 4 or pw.shape.as_list()[:2] != [1, 1]:
        raise ValueError("separable_conv2d: pointwise_filter must be [1, 1, in * multiplier, "
                         "out], got %s" % (pw.shape,))
    depthwise = depthwise_conv2d(input, depthwise_filter, strides, padding, rate,
                                 data_format=data_format, dilations=dilations)
    return conv2d(depthwise, pw, strides=1, padding="VALID", name=name)


__all__ = ["conv1d", "depthwise_conv2d", "separable_conv2d"]
