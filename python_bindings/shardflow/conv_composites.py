"""Convolutions composed from Conv2D (and DepthwiseConv2dNative), as TF1's tf.nn.conv1d,
tf.nn.depthwise_conv2d and tf.nn.separable_conv2d; they train through inputs and filters.

conv1d is one Conv2D over a height of 1. Dilated convolutions (conv2d's dilations,
atrous_conv2d, a rate in depthwise/separable_conv2d) are a Conv2D over the input cut into
interleaved sub-images, as TF computes atrous convolution (dilated_conv2d). depthwise_conv2d is
one DepthwiseConv2dNative op (its own kernel, dilations included).

Example::

    y = sf.nn.conv1d(x, w, stride=1, padding="SAME")             # x [N, W, C], w [k, C, out]
    z = sf.nn.separable_conv2d(images, depthwise, pointwise, strides=[1, 1, 1, 1],
                               padding="SAME")
"""

from shardflow import array_ops, ops


def _rates(dilations, what):
    """(rate_h, rate_w) from an int, [h, w] or [1, h, w, 1]."""
    if dilations is None:
        return 1, 1
    if isinstance(dilations, int):
        return dilations, dilations
    d = [int(v) for v in dilations]
    if len(d) == 2:
        return d[0], d[1]
    if len(d) == 4 and d[0] == 1 and d[3] == 1:
        return d[1], d[2]
    raise ValueError("%s: dilations must be an int, [h, w] or [1, h, w, 1], not %r"
                     % (what, dilations))


def dilated_conv2d(value, filters, rates, padding, name=None):
    """Conv2D of NHWC `value` with [kh, kw, in, out] `filters` dilated by rates (rate_h, rate_w),
    stride 1, as TF's atrous convolution computes it: the padded input is cut into
    rate_h * rate_w interleaved sub-images stacked along the batch (space to batch, from pad,
    reshape and transpose), each convolved with the undilated filter (VALID), and the results
    interleaved back (batch to space) and cropped. Trains through both inputs. The input's
    height and width must be known when the graph is built."""
    rh, rw = rates
    if rh < 1 or rw < 1:
        raise ValueError("dilated convolution: rates must be >= 1, got %r" % (rates,))
    x = ops.convert_to_tensor(value)
    w = ops.convert_to_tensor(filters)
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    wdims = w.shape.as_list() if w.shape.ndims is not None else None
    if dims is None or len(dims) != 4 or dims[1] is None or dims[2] is None or dims[3] is None:
        raise ValueError("dilated convolution: the input must be NHWC with known height, width "
                         "and channels when the graph is built, got shape %s" % (x.shape,))
    if wdims is None or len(wdims) != 4 or None in wdims:
        raise ValueError("dilated convolution: filters must be [kh, kw, in, out] with a known "
                         "shape, got %s" % (w.shape,))
    h, wd, c = dims[1], dims[2], dims[3]
    kh, kw, k_out = wdims[0], wdims[1], wdims[3]
    padding = padding.upper() if isinstance(padding, str) else padding
    if padding == "SAME":
        th, tw = (kh - 1) * rh, (kw - 1) * rw
        top, left = th // 2, tw // 2
        bottom, right = th - top, tw - left
    elif padding == "VALID":
        top = bottom = left = right = 0
    else:
        raise ValueError("dilated convolution: padding must be 'SAME' or 'VALID', not %r"
                         % (padding,))
    hp, wp = h + top + bottom, wd + left + right
    out_h, out_w = hp - (kh - 1) * rh, wp - (kw - 1) * rw
    if out_h < 1 or out_w < 1:
        raise ValueError("dilated convolution: a %dx%d filter dilated by %r covers more than "
                         "the %dx%d input (VALID)" % (kh, kw, rates, h, wd))
    # Extra rows/columns at the end so that the padded size divides by the rate.
    eh, ew = (-hp) % rh, (-wp) % rw
    hq, wq = (hp + eh) // rh, (wp + ew) // rw
    x = _pad_hw(x, top, bottom + eh, left, right + ew)
    x = ops.reshape(x, [-1, hq, rh, wq, rw, c])
    x = ops.transpose(x, [2, 4, 0, 1, 3, 5])            # [rh, rw, N, hq, wq, C]
    x = ops.reshape(x, [-1, hq, wq, c])
    from shardflow.nn import conv2d
    y = conv2d(x, w, strides=1, padding="VALID")        # [rh*rw*N, sh, sw, out]
    sh, sw = hq - kh + 1, wq - kw + 1
    y = ops.reshape(y, [rh, rw, -1, sh, sw, k_out])
    y = ops.transpose(y, [2, 3, 0, 4, 1, 5])            # [N, sh, rh, sw, rw, out]
    batch = dims[0] if dims[0] is not None else -1
    y = ops.reshape(y, [batch, sh * rh, sw * rw, k_out])
    return ops.slice(y, [0, 0, 0, 0], [batch, out_h, out_w, k_out], name=name)


def _pad_hw(x, top, bottom, left, right):
    """NHWC `x` (known H, W, C; any batch) with zero rows and columns around it; the static
    shape stays known."""
    def zeros(like, axis, n):
        # One zero row (or column) of `like`, repeated n times along `axis`.
        size = [-1, -1, -1, -1]
        size[axis] = 1
        one = ops.zeros_like(ops.slice(like, [0, 0, 0, 0], size))
        multiples = [1, 1, 1, 1]
        multiples[axis] = n
        return array_ops.tile(one, multiples) if n > 1 else one

    for axis, before, after in ((1, top, bottom), (2, left, right)):
        if before or after:
            parts = ([zeros(x, axis, before)] if before else []) + [x] + (
                [zeros(x, axis, after)] if after else [])
            x = ops.concat(parts, axis)
    return x


def atrous_conv2d(value, filters, rate, padding, name=None):
    """TF1's tf.nn.atrous_conv2d: `value` [N, H, W, in] with `filters` [kh, kw, in, out]
    dilated by `rate` (an int), stride 1, padding 'SAME' or 'VALID'.

    Example::

        y = sf.nn.atrous_conv2d(x, w, rate=2, padding="SAME")   # a 3x3 filter sees 5x5
    """
    if not isinstance(rate, int) or rate < 1:
        raise ValueError("atrous_conv2d: rate must be a positive int, got %r" % (rate,))
    return dilated_conv2d(value, filters, (rate, rate), padding, name=name)


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
    rate = 1
    if dilations is not None:
        d = list(dilations) if isinstance(dilations, (list, tuple)) else [dilations]
        if len(d) not in (1, 3) or (len(d) == 3 and (d[0] != 1 or d[2] != 1)):
            raise ValueError("conv1d: dilations must be an int, [d] or [1, d, 1], not %r"
                             % (dilations,))
        rate = int(d[0] if len(d) == 1 else d[1])
    s = _stride_1d(stride, "conv1d")
    x = ops.expand_dims(ops.convert_to_tensor(value), 1)
    w = ops.expand_dims(ops.convert_to_tensor(filters), 0)
    y = conv2d(x, w, strides=[1, 1, s, 1], padding=padding, dilations=[1, 1, rate, 1])
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
    channel c's m-th result, as TF1's tf.nn.depthwise_conv2d: one DepthwiseConv2dNative op
    (kernels/cpu/depthwise_conv_ops.cc; strides and the rate together, unlike TF, which
    wants strides 1 with a rate).

    Example::

        y = sf.nn.depthwise_conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")  # w [3,3,C,2]
    """
    from shardflow.nn import _four, _nhwc, _padding
    _nhwc(data_format, "depthwise_conv2d")
    if rate is not None and dilations is not None:
        raise ValueError("depthwise_conv2d takes rate or dilations, not both")
    d = _rates(rate if rate is not None else dilations, "depthwise_conv2d")
    x = ops.convert_to_tensor(input)
    w = ops.convert_to_tensor(filter)
    channels = _channels(x, "depthwise_conv2d")
    if w.shape.ndims != 4 or w.shape.as_list()[2] not in (None, channels):
        raise ValueError("depthwise_conv2d: filter must be [kh, kw, %d, multiplier], got %s"
                         % (channels, w.shape))
    return ops._out("DepthwiseConv2dNative", [x, w],
                    {"strides": _four(strides, "strides"), "padding": _padding(padding),
                     "dilations": [1, d[0], d[1], 1]}, name)


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


__all__ = ["atrous_conv2d", "conv1d", "depthwise_conv2d", "dilated_conv2d", "separable_conv2d"]
