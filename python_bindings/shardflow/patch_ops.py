"""TF1's patch and block rearrangements composed from the engine's ops, with gradients through
them: tf.extract_image_patches (tf.image.extract_patches), tf.space_to_batch_nd /
tf.batch_to_space_nd (and tf.space_to_batch / tf.batch_to_space) for NHWC images, and
tf.setdiff1d.

Example::

    patches = sf.extract_image_patches(images, ksizes=[1, 3, 3, 1], strides=[1, 2, 2, 1],
                                       rates=[1, 1, 1, 1], padding="VALID")
    blocks = sf.space_to_batch_nd(images, [2, 2], [[0, 0], [0, 0]])   # [4N, H/2, W/2, C]

extract_image_patches is one Conv2D with a 0/1 filter that copies each window position into its
own channel ([kh * kw * C] channels, ordered row, column, channel as in TF), dilated by
`rates`; the image's channels and the window must be known when the graph is built.
"""

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.conv_composites import _pad_hw
from shardflow.framework import convert_to_tensor


def _pair(v, what):
    v = list(v)
    if len(v) != 4 or v[0] != 1 or v[3] != 1:
        raise ValueError("%s must be [1, h, w, 1], got %r" % (what, v))
    return int(v[1]), int(v[2])


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None,
                          name=None, sizes=None):
    """Every kh x kw window (dilated by `rates`, every `strides`) of NHWC `images` as one vector
    of kh * kw * C values: [N, out_h, out_w, kh * kw * C], as TF1's
    tf.extract_image_patches (`sizes` is TF2's name for ksizes)."""
    from shardflow.nn import conv2d
    ksizes = ksizes if ksizes is not None else sizes
    if ksizes is None or strides is None or rates is None or padding is None:
        raise ValueError("extract_image_patches needs ksizes, strides, rates and padding")
    kh, kw = _pair(ksizes, "extract_image_patches ksizes")
    sh, sw = _pair(strides, "extract_image_patches strides")
    rh, rw = _pair(rates, "extract_image_patches rates")
    x = convert_to_tensor(images)
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or len(dims) != 4 or dims[3] is None:
        raise ValueError("extract_image_patches takes NHWC images with known channels, got %s"
                         % (x.shape,))
    c = dims[3]
    eye = np.zeros((kh, kw, c, kh * kw * c), dtype=x.dtype.as_numpy_dtype)
    for i in range(kh):
        for j in range(kw):
            for k in range(c):
                eye[i, j, k, (i * kw + j) * c + k] = 1
    if (rh, rw) == (1, 1):
        return conv2d(x, ops.constant(eye), strides=[1, sh, sw, 1], padding=padding, name=name)
    # Dilated windows: every position (stride 1), then every stride-th of them, starting where
    # TF's windows start (SAME pads the dilated window as a stride-1 pass would not: recompute).
    padding = padding.upper()
    if padding == "SAME" and (sh, sw) != (1, 1):
        h, w = dims[1], dims[2]
        if h is None or w is None:
            raise ValueError("extract_image_patches with rates and strides needs the height and "
                             "width known, got %s" % (x.shape,))
        eh, ew = (kh - 1) * rh + 1, (kw - 1) * rw + 1
        oh, ow = -(-h // sh), -(-w // sw)
        ph, pw = max((oh - 1) * sh + eh - h, 0), max((ow - 1) * sw + ew - w, 0)
        x = _pad_hw(x, ph // 2, ph - ph // 2, pw // 2, pw - pw // 2)
        padding = "VALID"
    y = conv2d(x, ops.constant(eye), strides=1, padding=padding, dilations=[1, rh, rw, 1])
    if (sh, sw) == (1, 1):
        return ops.identity(y, name=name)
    every = slice(None)
    y = array_ops.getitem(y, (every, slice(None, None, sh), slice(None, None, sw), every))
    return ops.identity(y, name=name)


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002
    """NHWC `input` zero-padded by `paddings` ([[top, bottom], [left, right]]) and cut into
    block_shape[0] * block_shape[1] interleaved sub-images stacked along the batch:
    [bh * bw * N, (H + pads) / bh, (W + pads) / bw, C], as TF1's tf.space_to_batch_nd for two
    spatial dimensions (batch index (i * bw + j) * N + n holds rows i::bh, columns j::bw)."""
    x = convert_to_tensor(input)
    bh, bw = [int(b) for b in np.asarray(block_shape).reshape(-1)]
    (top, bottom), (left, right) = np.asarray(paddings, dtype=np.int64).reshape(2, 2).tolist()
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or len(dims) != 4 or None in dims[1:]:
        raise ValueError("space_to_batch_nd takes NHWC input with known height, width and "
                         "channels, got %s" % (x.shape,))
    h, w, c = dims[1] + top + bottom, dims[2] + left + right, dims[3]
    if bh < 1 or bw < 1 or h % bh or w % bw:
        raise ValueError("space_to_batch_nd: the padded size %dx%d must divide by block_shape %r"
                         % (h, w, (bh, bw)))
    if top or bottom or left or right:
        x = _pad_hw(x, top, bottom, left, right)
    x = ops.reshape(x, [-1, h // bh, bh, w // bw, bw, c])
    x = ops.transpose(x, [2, 4, 0, 1, 3, 5])
    return ops.reshape(x, [-1, h // bh, w // bw, c], name=name)


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002
    """The inverse of space_to_batch_nd: [bh * bw * N, h, w, C] interleaved back into
    [N, h * bh, w * bw, C], then `crops` ([[top, bottom], [left, right]]) removed."""
    x = convert_to_tensor(input)
    bh, bw = [int(b) for b in np.asarray(block_shape).reshape(-1)]
    (top, bottom), (left, right) = np.asarray(crops, dtype=np.int64).reshape(2, 2).tolist()
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or len(dims) != 4 or None in dims[1:]:
        raise ValueError("batch_to_space_nd takes [blocks * N, h, w, C] input with known h, w "
                         "and C, got %s" % (x.shape,))
    h, w, c = dims[1], dims[2], dims[3]
    if dims[0] is not None and dims[0] % (bh * bw):
        raise ValueError("batch_to_space_nd: batch %d does not divide by the %d blocks"
                         % (dims[0], bh * bw))
    x = ops.reshape(x, [bh, bw, -1, h, w, c])
    x = ops.transpose(x, [2, 3, 0, 4, 1, 5])
    x = ops.reshape(x, [-1, h * bh, w * bw, c])
    if not (top or bottom or left or right):
        return ops.identity(x, name=name)
    return ops.slice(x, [0, top, left, 0], [-1, h * bh - top - bottom, w * bw - left - right, c],
                     name=name)


def _block_size(block_size, block_shape, what):
    """TF1's block_size, or block_shape (its newer name, also an int: a square block)."""
    if block_shape is not None:
        if block_size is not None:
            raise ValueError("%s: give block_size or block_shape, not both" % what)
        block_size = block_shape
    if block_size is None:
        raise ValueError("%s needs block_size (or block_shape)" % what)
    return int(block_size)


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):  # noqa: A002
    """TF1's tf.space_to_batch: space_to_batch_nd with a square block of side block_size
    (block_shape: its newer name)."""
    size = _block_size(block_size, block_shape, "space_to_batch")
    return space_to_batch_nd(input, [size, size], paddings, name=name)


def batch_to_space(input, crops, block_size=None, name=None, block_shape=None):  # noqa: A002
    """TF1's tf.batch_to_space: batch_to_space_nd with a square block of side block_size
    (block_shape: its newer name)."""
    size = _block_size(block_size, block_shape, "batch_to_space")
    return batch_to_space_nd(input, [size, size], crops, name=name)


def setdiff1d(x, y, index_dtype=dtypes.int32, name=None):
    """The values of 1-D `x` that are not in 1-D `y`, in x's order, and their indices in x:
    (out, idx), as TF1's tf.setdiff1d."""
    x = convert_to_tensor(x)
    y = convert_to_tensor(y, dtype=x.dtype)
    if x.shape.ndims not in (None, 1) or y.shape.ndims not in (None, 1):
        raise ValueError("setdiff1d takes 1-D x and y, got %s and %s" % (x.shape, y.shape))
    keep = ops.logical_not(array_ops.reduce_any(
        ops.equal(ops.expand_dims(x, 1), ops.expand_dims(y, 0)), axis=1))
    idx = ops.cumsum(ops.ones_like(ops.cast(keep, dtypes.int32))) - 1
    idx = ops.cast(idx, index_dtype)
    out = array_ops.boolean_mask(x, keep, name=name)
    return out, array_ops.boolean_mask(idx, keep)


__all__ = ["batch_to_space", "batch_to_space_nd", "extract_image_patches", "setdiff1d",
           "space_to_batch", "space_to_batch_nd"]
