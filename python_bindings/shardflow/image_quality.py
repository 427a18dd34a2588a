"""TF1's image measures and filters for tf.image: total_variation, psnr, ssim (single scale),
image_gradients and sobel_edges, composed from slices, convolutions and reductions so gradients
flow to the images.

Example::

    score = sf.image.ssim(a, b, max_val=1.0)          # [batch] for [batch, h, w, c] images
    db = sf.image.psnr(a, b, max_val=255)             # uint8 images: max_val scaled as TF1 does
    edges = sf.image.sobel_edges(batch)               # [batch, h, w, c, 2]: (dy, dx)

ssim uses TF1's 11x11 Gaussian window (sigma 1.5, VALID), one conv2d per channel; the images'
height and width must be at least filter_size. psnr and ssim convert integer images and max_val
to float32 in [0, 1] first, as TF1 does.
"""

import numpy as np

from shardflow import array_ops, dtypes, nn, ops
from shardflow.framework import convert_to_tensor


def _float_pair(img1, img2, max_val, what):
    from shardflow.image import convert_image_dtype
    a, b = convert_to_tensor(img1), convert_to_tensor(img2)
    if a.shape.ndims not in (3, 4) or b.shape.ndims != a.shape.ndims:
        raise ValueError("%s takes two images of the same rank, 3 or 4 ([batch,] height, width, "
                         "channels), got shapes %s and %s" % (what, a.shape, b.shape))
    if a.dtype != b.dtype:
        raise TypeError("%s: both images must have one dtype, got %s and %s"
                        % (what, a.dtype.name, b.dtype.name))
    max_val = ops.cast(convert_to_tensor(max_val), a.dtype)
    return (convert_image_dtype(a, dtypes.float32), convert_image_dtype(b, dtypes.float32),
            convert_image_dtype(max_val, dtypes.float32))


def total_variation(images, name=None):
    """The sum of absolute differences between neighbouring pixels (down and across): a scalar
    for one [h, w, c] image, a [batch] vector for [batch, h, w, c]."""
    x = convert_to_tensor(images)
    if x.shape.ndims == 3:
        dy = x[1:, :, :] - x[:-1, :, :]
        dx = x[:, 1:, :] - x[:, :-1, :]
        axes = None
    elif x.shape.ndims == 4:
        dy = x[:, 1:, :, :] - x[:, :-1, :, :]
        dx = x[:, :, 1:, :] - x[:, :, :-1, :]
        axes = [1, 2, 3]
    else:
        raise ValueError("total_variation takes 3-D or 4-D images, got shape %s" % x.shape)
    return ops.add(ops.reduce_sum(ops.abs(dy), axis=axes), ops.reduce_sum(ops.abs(dx), axis=axes),
                   name=name)


def psnr(a, b, max_val, name=None):
    """Peak signal-to-noise ratio in dB, 10 log10(max_val^2 / mse), per image (over the last
    three dimensions)."""
    a, b, max_val = _float_pair(a, b, max_val, "psnr")
    mse = ops.reduce_mean(ops.squared_difference(a, b), axis=[-3, -2, -1])
    return ops.subtract(20.0 * ops.log(max_val) / float(np.log(10.0)),
                        float(10.0 / np.log(10.0)) * ops.log(mse), name=name)


def _gaussian_window(size, sigma):
    """TF1's _fspecial_gauss: a [size, size] Gaussian summing to 1, as float32."""
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / 2.0
    g = np.square(coords) * np.float32(-0.5 / sigma ** 2)
    g = g[None, :] + g[:, None]
    g = np.exp(g - g.max())
    return (g / g.sum()).astype(np.float32)


def _per_channel_filter(x, window, channels):
    """Each channel of NHWC `x` convolved (VALID) with `window` [kh, kw] or [kh, kw, 1, k]."""
    w = window if window.ndim == 4 else window[:, :, None, None]
    if channels == 1:
        return nn.conv2d(x, w, strides=1, padding="VALID")
    parts = array_ops.split(x, channels, axis=3)
    return ops.concat([nn.conv2d(p, w, strides=1, padding="VALID") for p in parts], 3)


def _ssim_per_channel(a, b, max_val, filter_size, filter_sigma, k1, k2):
    """(ssim, cs) per image and channel ([batch, channels]) of NHWC float32 a and b: TF1's
    _ssim_per_channel (11x11 Gaussian window, VALID; cs the contrast-structure term)."""
    dims = a.shape.as_list()
    if dims[3] is None:
        raise ValueError("ssim needs the images' channels known when the graph is built, got "
                         "shape %s" % a.shape)
    size = int(filter_size)
    if None in dims[1:3]:       # known when the step runs: checked then, as TF1 does
        from shardflow.check_ops import _check
        shape = ops.shape(a)
        fits = ops.logical_and(shape[1] >= size, shape[2] >= size)
        with a.graph.control_dependencies([_check(
                fits, "ssim: the images must be at least filter_size=%d high and wide" % size,
                None, "ssim", [shape])]):
            a, b = ops.identity(a), ops.identity(b)
    elif dims[1] < size or dims[2] < size:
        raise ValueError("ssim: the images (%dx%d) must be at least filter_size=%d high and wide"
                         % (dims[1], dims[2], size))
    window = _gaussian_window(size, float(filter_sigma))
    channels = dims[3]

    def reducer(t):
        return _per_channel_filter(t, window, channels)
    c1 = ops.square(float(k1) * max_val)
    c2 = ops.square(float(k2) * max_val)
    mean0, mean1 = reducer(a), reducer(b)
    num0 = mean0 * mean1 * 2.0
    den0 = ops.square(mean0) + ops.square(mean1)
    luminance = (num0 + c1) / (den0 + c1)
    num1 = reducer(a * b) * 2.0
    den1 = reducer(ops.square(a) + ops.square(b))
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    return (ops.reduce_mean(luminance * cs, axis=[1, 2]), ops.reduce_mean(cs, axis=[1, 2]))


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
    """Structural similarity (single scale) of two images, averaged over positions and
    channels: a scalar for [h, w, c] images, [batch] for [batch, h, w, c] (TF1's
    tf.image.ssim). 1 for identical images."""
    a, b, max_val = _float_pair(img1, img2, max_val, "ssim")
    unbatch = a.shape.ndims == 3
    if unbatch:
        a, b = ops.expand_dims(a, 0), ops.expand_dims(b, 0)
    per_channel, _ = _ssim_per_channel(a, b, max_val, filter_size, filter_sigma, k1, k2)
    out = ops.reduce_mean(per_channel, axis=[-1])
    return ops.squeeze(out, [0]) if unbatch else out


def _repeat_last(x, axis):
    """NHWC `x` with its last row (axis 1) or column (axis 2) repeated once: a SYMMETRIC pad
    of 1 at the end of that axis."""
    last = x[:, -1:, :, :] if axis == 1 else x[:, :, -1:, :]
    return ops.concat([x, last], axis)


_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)   # Wang et al.'s


def ssim_multiscale(img1, img2, max_val, power_factors=_MSSSIM_WEIGHTS, filter_size=11,
                    filter_sigma=1.5, k1=0.01, k2=0.03):
    """Multi-scale SSIM (Wang, Simoncelli and Bovik 2003) as TF1's tf.image.ssim_multiscale:
    at each of len(power_factors) scales (the images halved by 2x2 average pooling between
    them, an odd height or width first padded by mirroring its last row or column), the
    contrast-structure term, and SSIM at the last; their relu'd weighted geometric mean,
    averaged over channels. [batch] (a scalar for one [h, w, c] image). The smallest scale
    must still be filter_size high and wide."""
    a, b, max_val = _float_pair(img1, img2, max_val, "ssim_multiscale")
    unbatch = a.shape.ndims == 3
    if unbatch:
        a, b = ops.expand_dims(a, 0), ops.expand_dims(b, 0)
    factors = [float(f) for f in power_factors]
    terms = []
    for k in range(len(factors)):
        if k > 0:
            # TF1 mirrors the last row (column) of an odd height (width) before pooling. A
            # size known only when the step runs gets its last row mirrored always: for an
            # even size, the VALID 2x2 pooling leaves that extra row out.
            h, w = a.shape.as_list()[1:3]
            for axis, size in ((1, h), (2, w)):
                if size is None or size % 2:
                    a, b = _repeat_last(a, axis), _repeat_last(b, axis)
            a = nn.avg_pool(a, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
            b = nn.avg_pool(b, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        per_channel, cs = _ssim_per_channel(a, b, max_val, filter_size, filter_sigma, k1, k2)
        terms.append(nn.relu(cs) if k < len(factors) - 1 else nn.relu(per_channel))
    stacked = array_ops.stack(terms, axis=-1)                       # [batch, channels, scales]
    weighted = ops.reduce_prod(ops.pow(stacked, np.asarray(factors, np.float32)), axis=[-1])
    out = ops.reduce_mean(weighted, axis=[-1])
    return ops.squeeze(out, [0]) if unbatch else out


def image_gradients(image):
    """(dy, dx) of [batch, h, w, c] images: the forward differences down and across, each the
    image's shape with zeros in the last row (dy) or column (dx)."""
    x = convert_to_tensor(image)
    if x.shape.ndims != 4:
        raise ValueError("image_gradients takes 4-D [batch, height, width, channels] images, got "
                         "shape %s" % x.shape)
    dy = x[:, 1:, :, :] - x[:, :-1, :, :]
    dx = x[:, :, 1:, :] - x[:, :, :-1, :]
    dy = array_ops.pad(dy, [[0, 0], [0, 1], [0, 0], [0, 0]])
    dx = array_ops.pad(dx, [[0, 0], [0, 0], [0, 1], [0, 0]])
    return dy, dx


_SOBEL = np.stack([np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float32),
                   np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32)], axis=-1)


def sobel_edges(image):
    """The Sobel responses (dy, dx) of each channel of [batch, h, w, c] float images, edges
    reflected: [batch, h, w, c, 2]. The channels (and the batch) may be known only when the
    step runs: they are folded together for one convolution; float16 is convolved in float32.
    The height and width must be known when the graph is built (the mirrored padding)."""
    x = convert_to_tensor(image)
    if x.shape.ndims != 4:
        raise ValueError("sobel_edges takes 4-D [batch, height, width, channels] images, got "
                         "shape %s" % x.shape)
    out_dtype = x.dtype if x.dtype.is_floating else dtypes.float32
    if x.dtype not in (dtypes.float32, dtypes.float64):   # the engine convolves these two
        x = ops.cast(x, dtypes.float32)
    padded = array_ops.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    shape = ops.shape(padded)
    planes = ops.reshape(ops.transpose(padded, [0, 3, 1, 2]),
                         array_ops.stack([-1, shape[1], shape[2], 1]))
    kernel = _SOBEL[:, :, None, :].astype(x.dtype.as_numpy_dtype)
    edges = nn.conv2d(planes, kernel, strides=1, padding="VALID")        # [b * c, h, w, 2]
    out_shape = ops.shape(x)
    edges = ops.reshape(edges, array_ops.stack([out_shape[0], out_shape[3], out_shape[1],
                                                out_shape[2], 2]))
    out = ops.transpose(edges, [0, 2, 3, 1, 4])
    out.set_shape(x.shape.as_list() + [2])
    return ops.cast(out, out_dtype) if out.dtype != out_dtype else out


__all__ = ["image_gradients", "psnr", "sobel_edges", "ssim", "ssim_multiscale", "total_variation"]
