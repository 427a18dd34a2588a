"""TF1's image resizing (tf.image.resize_images, resize_bilinear, resize_nearest_neighbor,
tf.image.resize), built from gathers and element-wise weights so gradients flow to the images.

Example::

    small = sf.placeholder(sf.float32, [None, 14, 14, 3])
    big = sf.image.resize_images(small, [28, 28])                       # bilinear, float32
    nearest = sf.image.resize_nearest_neighbor(small, [7, 7], align_corners=True)

The coordinate conventions are TF's: by default an output pixel i samples the input at
i * in / out; `align_corners` maps the corner pixels onto each other ((in - 1) / (out - 1));
`half_pixel_centers` (tf.image.resize's default, as in TF 2) samples at pixel centres. The input's
height and width must be known when the graph is built; the batch may be unknown. Bicubic and
area resizing are not available.
"""

import numpy as np

from shardflow import dtypes, ops
from shardflow.array_ops import gather
from shardflow.framework import convert_to_tensor


class ResizeMethod:
    """tf.image.ResizeMethod."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_METHOD_NAMES = {"bilinear": 0, "nearest": 1, "bicubic": 2, "area": 3}


def _scale(n_in, n_out, align_corners):
    if align_corners and n_out > 1:
        return (n_in - 1) / float(n_out - 1)
    return n_in / float(n_out)


def _size(size, what):
    size = np.asarray(size).tolist() if not hasattr(size, "op") else None
    if size is None or len(size) != 2 or not all(isinstance(s, int) and s > 0 for s in size):
        raise ValueError("%s: size must be two positive Python ints [height, width], got %r"
                         % (what, size))
    return size


def _as_nhwc(images, what):
    images = convert_to_tensor(images)
    rank = images.shape.ndims
    if rank not in (3, 4):
        raise ValueError("%s takes [height, width, channels] or [batch, height, width, "
                         "channels] images, got shape %s" % (what, images.shape))
    batched = images if rank == 4 else ops.expand_dims(images, 0)
    h, w = batched.shape.as_list()[1:3]
    if h is None or w is None:
        raise ValueError("%s needs the images' height and width known when the graph is built, "
                         "got shape %s" % (what, images.shape))
    return batched, rank == 3, h, w


def _bilinear_axis(x, axis, n_in, n_out, align_corners, half_pixel_centers):
    scale = _scale(n_in, n_out, align_corners)
    i = np.arange(n_out, dtype=np.float64)
    pos = (i + 0.5) * scale - 0.5 if half_pixel_centers else i * scale
    low = np.floor(pos)
    lerp = (pos - low).astype(np.float32)
    lower = np.clip(low, 0, n_in - 1).astype(np.int32)
    upper = np.clip(np.ceil(pos), 0, n_in - 1).astype(np.int32)
    shape = [1, 1, 1, 1]
    shape[axis] = n_out
    w = ops.constant(lerp.reshape(shape))
    a, b = gather(x, lower, axis=axis), gather(x, upper, axis=axis)
    return a + (b - a) * w


def resize_bilinear(images, size, align_corners=False, half_pixel_centers=False, name=None):
    """Bilinear resizing of NHWC images to size = [height, width]; float32 out."""
    x, unbatch, h, w = _as_nhwc(images, "resize_bilinear")
    out_h, out_w = _size(size, "resize_bilinear")
    if x.dtype != dtypes.float32:
        x = ops.cast(x, dtypes.float32)
    y = _bilinear_axis(x, 1, h, out_h, align_corners, half_pixel_centers)
    y = _bilinear_axis(y, 2, w, out_w, align_corners, half_pixel_centers)
    if unbatch:
        y = ops.squeeze(y, [0])
    return ops.identity(y, name=name)


def _nearest_rows(n_in, n_out, align_corners, half_pixel_centers):
    scale = _scale(n_in, n_out, align_corners)
    i = np.arange(n_out, dtype=np.float64)
    if half_pixel_centers:
        pos = np.floor((i + 0.5) * scale)
    elif align_corners:
        pos = np.round(i * scale)
    else:
        pos = np.floor(i * scale)
    return np.clip(pos, 0, n_in - 1).astype(np.int32)


def resize_nearest_neighbor(images, size, align_corners=False, half_pixel_centers=False,
                            name=None):
    """Nearest-neighbour resizing of NHWC images to size = [height, width]; dtype kept."""
    x, unbatch, h, w = _as_nhwc(images, "resize_nearest_neighbor")
    out_h, out_w = _size(size, "resize_nearest_neighbor")
    y = gather(x, _nearest_rows(h, out_h, align_corners, half_pixel_centers), axis=1)
    y = gather(y, _nearest_rows(w, out_w, align_corners, half_pixel_centers), axis=2)
    if unbatch:
        y = ops.squeeze(y, [0])
    return ops.identity(y, name=name)


def _method(method):
    if isinstance(method, str):
        if method.lower() not in _METHOD_NAMES:
            raise ValueError("resize method %r: one of %s" % (method, sorted(_METHOD_NAMES)))
        method = _METHOD_NAMES[method.lower()]
    if method in (ResizeMethod.BICUBIC, ResizeMethod.AREA):
        raise ValueError("resize method %r (bicubic, area) is not available; use BILINEAR or "
                         "NEAREST_NEIGHBOR" % (method,))
    if method not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR):
        raise ValueError("unknown resize method %r" % (method,))
    return method


def _fit_aspect(images, size):
    h, w = convert_to_tensor(images).shape.as_list()[-3:-1]
    scale = min(size[0] / float(h), size[1] / float(w))
    return [max(1, int(round(h * scale))), max(1, int(round(w * scale)))]


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """TF1's tf.image.resize_images: bilinear (float32 out) or nearest-neighbour (dtype kept)."""
    method = _method(method)
    size = _size(size, "resize_images")
    if preserve_aspect_ratio:
        _as_nhwc(images, "resize_images")
        size = _fit_aspect(images, size)
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        return resize_nearest_neighbor(images, size, align_corners, name=name)
    return resize_bilinear(images, size, align_corners, name=name)


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None):
    """tf.image.resize (TF 1.14+, TF 2's conventions): pixel centres, float32 out."""
    if antialias:
        raise ValueError("resize(antialias=True) is not available")
    method = _method(method)
    size = _size(size, "resize")
    if preserve_aspect_ratio:
        _as_nhwc(images, "resize")
        size = _fit_aspect(images, size)
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        out = resize_nearest_neighbor(images, size, half_pixel_centers=True)
        return ops.cast(out, dtypes.float32, name=name)
    return resize_bilinear(images, size, half_pixel_centers=True, name=name)


__all__ = ["ResizeMethod", "resize", "resize_bilinear", "resize_images",
           "resize_nearest_neighbor"]
