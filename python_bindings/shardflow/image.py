"""TF1's tf.image: flips, crops, pads, dtype conversion, standardization, grayscale and
brightness, composed from the engine's ops. Images are [height, width, channels] (3-D) or
batches of them [batch, height, width, channels] (4-D, NHWC).

Example::

    img = sf.image.convert_image_dtype(uint8_img, sf.float32)     # [0, 255] -> [0, 1]
    img = sf.image.random_flip_left_right(img, seed=1)
    img = sf.image.resize_image_with_crop_or_pad(img, 24, 24)
    img = sf.image.per_image_standardization(img)

The crops and pads take Python ints for offsets and sizes and need the height and width known
when the graph is built (random_crop draws its offset at run time). Resizing (resize_images,
resize_bilinear, resize_nearest_neighbor, resize, ResizeMethod) is shardflow/image_resize.py's,
re-exported here. Colour adjustments are shardflow/image_color.py's, measures and filters
(ssim, psnr, sobel_edges, ...) image_quality.py's, box ops image_boxes.py's and the codecs
image_codecs.py's (Pillow; absent from tf.image when Pillow is not installed).
"""

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.array_composites import random_crop  # noqa: F401 (tf.image.random_crop)
from shardflow.framework import Tensor, control_dependencies, convert_to_tensor
from shardflow.image_boxes import (combined_non_max_suppression,  # noqa: F401
                                   crop_and_resize, draw_bounding_boxes, extract_glimpse,
                                   non_max_suppression, non_max_suppression_overlaps,
                                   non_max_suppression_padded, non_max_suppression_with_scores,
                                   sample_distorted_bounding_box)
from shardflow.image_color import (adjust_contrast, adjust_gamma, adjust_hue,  # noqa: F401
                                   adjust_saturation, grayscale_to_rgb, hsv_to_rgb,
                                   random_contrast, random_hue, random_saturation, rgb_to_hsv,
                                   rgb_to_yiq, rgb_to_yuv, yiq_to_rgb, yuv_to_rgb)
from shardflow.image_quality import (image_gradients, psnr, sobel_edges, ssim,  # noqa: F401
                                     ssim_multiscale, total_variation)
from shardflow.check_ops import _check
from shardflow.tensor_util import int_or_tensor
from shardflow.patch_ops import extract_image_patches  # noqa: F401 (tf.image.extract_...)
from shardflow.image_resize import (ResizeMethod, resize, resize_area,  # noqa: F401
                                    resize_bicubic, resize_bilinear, resize_images,
                                    resize_images_v2, resize_nearest_neighbor)


def _image(image, what, unknown_rank_as_3d=False):
    """`image` as a tensor of rank 3 or 4, and whether it is a batch. With
    `unknown_rank_as_3d` (TF1's flips, transpose and rot90), a tensor of unknown rank (a
    py_func's output) is taken as one [height, width, channels] image, as TF1 does."""
    x = convert_to_tensor(image)
    if x.shape.ndims is None and unknown_rank_as_3d:
        x = ops.identity(x)
        x.set_shape([None, None, None])
    if x.shape.ndims not in (3, 4):
        raise ValueError("%s takes a 3-D [height, width, channels] or 4-D [batch, height, "
                         "width, channels] image, got shape %s" % (what, x.shape))
    return x, x.shape.ndims == 4


def _hw(x, batched, what):
    """The static height and width of an image."""
    dims = x.shape.as_list()[1:3] if batched else x.shape.as_list()[0:2]
    if None in dims:
        raise ValueError("%s needs the image's height and width known when the graph is built, "
                         "got shape %s" % (what, x.shape))
    return dims


def flip_left_right(image):
    """The image mirrored horizontally (along its width)."""
    x, batched = _image(image, "flip_left_right", True)
    return ops.reverse(x, [2 if batched else 1])


def flip_up_down(image):
    """The image mirrored vertically (along its height)."""
    x, batched = _image(image, "flip_up_down", True)
    return ops.reverse(x, [1 if batched else 0])


def _random_flip(image, seed, axis_in_image, what):
    x, batched = _image(image, what, True)
    if batched:
        draw = ops.random_uniform(ops.reshape(ops.shape(x)[0], [1]), seed=seed)
        flip = ops.reshape(ops.less(draw, 0.5), [-1, 1, 1, 1])
        return array_ops.where_v2(flip, ops.reverse(x, [axis_in_image + 1]), x)
    flip = ops.less(ops.random_uniform([], seed=seed), 0.5)
    return array_ops.where_v2(flip, ops.reverse(x, [axis_in_image]), x)


def random_flip_left_right(image, seed=None):
    """The image mirrored horizontally with probability 1/2 (each image of a batch drawn on
    its own)."""
    return _random_flip(image, seed, 1, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """The image mirrored vertically with probability 1/2 (each image of a batch drawn on its
    own)."""
    return _random_flip(image, seed, 0, "random_flip_up_down")


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1 / sqrt(N)) over each image's N values, as float32: zero
    mean and unit variance per image (TF1's tf.image.per_image_standardization)."""
    x = convert_to_tensor(image)
    if x.shape.ndims is not None:       # unknown rank (a py_func's output): each image's last 3
        x, batched = _image(x, "per_image_standardization")
    x = ops.cast(x, dtypes.float32) if x.dtype != dtypes.float32 else x
    axes = [-3, -2, -1]
    dims = x.shape.as_list()[-3:] if x.shape.ndims is not None else [None]
    if None in dims:
        count = ops.cast(ops.reduce_prod(ops.shape(x)[-3:]), dtypes.float32)
        floor = ops.rsqrt(count)
    else:
        floor = float(1.0 / np.sqrt(np.prod(dims)))
    mean = ops.reduce_mean(x, axis=axes, keepdims=True)
    centered = ops.subtract(x, mean)
    stddev = ops.sqrt(ops.reduce_mean(ops.square(centered), axis=axes, keepdims=True))
    return ops.divide(centered, ops.maximum(stddev, floor))


def _range_max(dt):
    """The largest value of an integer dtype (the scale of its images)."""
    return int(np.iinfo(dt.as_numpy_dtype).max)


def _saturate_cast(x, dt):
    """x cast to dt, clamped first to dt's range (TF1's saturate_cast)."""
    if dt.is_integer:
        info = np.iinfo(dt.as_numpy_dtype)
        lo, hi = info.min, info.max
        if x.dtype.is_floating:
            lo, hi = float(lo), float(hi)
            if dt.size >= 4:       # the float nearest the top may round above it
                hi = float(np.nextafter(np.float32(hi), np.float32(0)))
        x = ops.clip_by_value(x, ops.cast(lo, x.dtype), ops.cast(hi, x.dtype))
    return ops.cast(x, dt)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """TF1's tf.image.convert_image_dtype: floating images hold [0, 1), integer ones
    [0, MAX]; converting scales between them (uint8 -> float: x / 255; float -> uint8:
    x * 255.5 cast, clamped first with `saturate`). Between two integer types the values are
    scaled by the ratio of their ranges; between floats it is a cast."""
    x = convert_to_tensor(image)
    dt = dtypes.as_dtype(dtype)
    src = x.dtype
    if not (src.is_integer or src.is_floating) or not (dt.is_integer or dt.is_floating):
        raise TypeError("convert_image_dtype: images are integer or floating, not %s -> %s"
                        % (src.name, dt.name))
    if src == dt:
        return ops.identity(x, name=name)
    if src.is_integer and dt.is_integer:
        in_max, out_max = _range_max(src), _range_max(dt)
        if in_max > out_max:
            scale = (in_max + 1) // (out_max + 1)
            return ops.cast(ops.floordiv(x, ops.cast(scale, src)), dt, name=name)
        scale = (out_max + 1) // (in_max + 1)
        return ops.multiply(ops.cast(x, dt), ops.cast(scale, dt), name=name)
    if src.is_floating and dt.is_floating:
        return ops.cast(x, dt, name=name)
    if src.is_integer:
        return ops.multiply(ops.cast(x, dt), 1.0 / _range_max(src), name=name)
    scaled = ops.multiply(x, _range_max(dt) + 0.5)
    if saturate:
        return ops.identity(_saturate_cast(scaled, dt), name=name)
    return ops.cast(scaled, dt, name=name)


def _hw_any(x, batched):
    """The image's height and width: Python ints where the graph knows them, scalar int32
    tensors where only the step does (a decoded JPEG)."""
    dims = x.shape.as_list()[1:3] if batched else x.shape.as_list()[0:2]
    if None not in dims:
        return dims
    run_shape = ops.shape(x)
    first = 1 if batched else 0
    return [d if d is not None else run_shape[first + k] for k, d in enumerate(dims)]


def _is_tensor(v):
    return isinstance(v, Tensor)


def _sizes(values):
    """Python ints, or scalar int32 tensors for those the graph does not determine."""
    return [int_or_tensor(v) for v in values]


def _max(a, b):
    return ops.maximum(a, b) if _is_tensor(a) or _is_tensor(b) else max(a, b)


def _min(a, b):
    return ops.minimum(a, b) if _is_tensor(a) or _is_tensor(b) else min(a, b)


def _f64(v):
    return ops.cast(v, dtypes.float64)


def _static(v):
    return None if _is_tensor(v) else v


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The [target_height, target_width] window whose top-left corner is at (offset_height,
    offset_width). Ints that must fit the image, checked when the graph is built; when the
    image's size or the window is known only when the step runs (tensors), the step's slice
    checks it."""
    x, batched = _image(image, "crop_to_bounding_box")
    h, w = _hw_any(x, batched)
    oh, ow, th, tw = _sizes((offset_height, offset_width, target_height, target_width))
    if not any(_is_tensor(v) for v in (h, w, oh, ow, th, tw)):
        if oh < 0 or ow < 0 or th <= 0 or tw <= 0 or oh + th > h or ow + tw > w:
            raise ValueError("crop_to_bounding_box: a %dx%d window at (%d, %d) does not fit a "
                             "%dx%d image" % (th, tw, oh, ow, h, w))
    if batched:
        out = ops.slice(x, [0, oh, ow, 0], [-1, th, tw, -1])
    else:
        out = ops.slice(x, [oh, ow, 0], [th, tw, -1])
    out.set_shape(x.shape.as_list()[:1] * batched + [_static(th), _static(tw)] +
                  x.shape.as_list()[-1:])
    return out


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The image placed at (offset_height, offset_width) in a [target_height, target_width]
    image of zeros. Ints, checked when the graph is built; tensors (or an image whose size is
    known only when the step runs) are checked by the step (a negative padding fails it)."""
    x, batched = _image(image, "pad_to_bounding_box")
    h, w = _hw_any(x, batched)
    oh, ow, th, tw = _sizes((offset_height, offset_width, target_height, target_width))
    after_h, after_w = th - oh - h, tw - ow - w
    if not any(_is_tensor(v) for v in (oh, ow, after_h, after_w)) and \
            (oh < 0 or ow < 0 or after_h < 0 or after_w < 0):
        raise ValueError("pad_to_bounding_box: a %dx%d image at (%d, %d) does not fit in "
                         "%dx%d" % (h, w, oh, ow, th, tw))
    known = x.shape.as_list()
    paddings = [[oh, after_h], [ow, after_w], [0, 0]]
    if batched:
        paddings = [[0, 0]] + paddings
    if any(_is_tensor(v) for v in (oh, ow, after_h, after_w)):
        fits = ops.greater_equal(ops.reduce_min(array_ops.stack(
            [ops.cast(v, dtypes.int32) for v in (oh, ow, after_h, after_w)])), 0)
        with control_dependencies([_check(fits, "pad_to_bounding_box: the image at its offset "
                                          "does not fit in the target size", None,
                                          "pad_to_bounding_box")]):
            x = ops.identity(x)
    out = array_ops.pad(x, paddings)
    out.set_shape(known[:1] * batched + [_static(th), _static(tw)] + known[-1:])
    return out


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """The image cropped (centrally) or padded with zeros (evenly) to [target_height,
    target_width], as TF1's tf.image.resize_image_with_crop_or_pad; the image's size may be
    known only when the step runs."""
    x, batched = _image(image, "resize_image_with_crop_or_pad")
    h, w = _hw_any(x, batched)
    th, tw = _sizes((target_height, target_width))
    if (not _is_tensor(th) and th <= 0) or (not _is_tensor(tw) and tw <= 0):
        raise ValueError("resize_image_with_crop_or_pad: the target size must be positive, "
                         "got %sx%s" % (th, tw))
    cropped = crop_to_bounding_box(x, _max(h - th, 0) // 2, _max(w - tw, 0) // 2, _min(th, h),
                                   _min(tw, w))
    return pad_to_bounding_box(cropped, _max(th - h, 0) // 2, _max(tw - w, 0) // 2, th, tw)


resize_with_crop_or_pad = resize_image_with_crop_or_pad


def resize_image_with_pad(image, target_height, target_width, method=ResizeMethod.BILINEAR,
                          align_corners=False):
    """The image resized (resize_images with `method`) to fit [target_height, target_width]
    keeping its aspect ratio, then padded with zeros to that size (centred; TF1's
    tf.image.resize_image_with_pad, whose float64 arithmetic this follows: the scale is
    max(width / target_width, height / target_height), sizes and offsets floored). The image's
    size and the targets may be known only when the step runs (then bilinear or
    nearest-neighbour only)."""
    x, batched = _image(image, "resize_image_with_pad")
    h, w = _hw_any(x, batched)
    th, tw = _sizes((target_height, target_width))
    if (not _is_tensor(th) and th <= 0) or (not _is_tensor(tw) and tw <= 0):
        raise ValueError("resize_image_with_pad: the target size must be positive, got %sx%s"
                         % (th, tw))
    if any(_is_tensor(v) for v in (h, w, th, tw)):
        # A decoded JPEG (size known when the step runs) or tensor targets: the same float64
        # arithmetic in the graph; bilinear or nearest-neighbour resizing.
        f_h, f_w, f_th, f_tw = (_f64(v) for v in (h, w, th, tw))
        ratio = ops.maximum(f_w / f_tw, f_h / f_th)
        rh, rw = f_h / ratio, f_w / ratio
        size = array_ops.stack([ops.cast(ops.floor(rh), dtypes.int32),
                                ops.cast(ops.floor(rw), dtypes.int32)])
        pad_h, pad_w = (ops.maximum(ops.cast(ops.floor((t - r) / 2.0), dtypes.int32), 0)
                        for t, r in ((f_th, rh), (f_tw, rw)))
        resized = resize_images(x, size, method, align_corners=align_corners)
        return pad_to_bounding_box(resized, pad_h, pad_w, th, tw)
    ratio = max(float(w) / tw, float(h) / th)
    resized_h, resized_w = float(h) / ratio, float(w) / ratio
    pad_h = max(0, int(np.floor((th - resized_h) / 2)))
    pad_w = max(0, int(np.floor((tw - resized_w) / 2)))
    resized = resize_images(x, [int(np.floor(resized_h)), int(np.floor(resized_w))], method,
                            align_corners=align_corners)
    return pad_to_bounding_box(resized, pad_h, pad_w, th, tw)



def central_crop(image, central_fraction):
    """The central `central_fraction` (in (0, 1]) of the image's height and width, as TF1's
    tf.image.central_crop; the image's size may be known only when the step runs."""
    x, batched = _image(image, "central_crop")
    fraction = float(central_fraction)
    if not 0.0 < fraction <= 1.0:
        raise ValueError("central_crop: central_fraction must be in (0, 1], got %r"
                         % (central_fraction,))
    if fraction == 1.0:
        return x
    h, w = _hw_any(x, batched)
    start_h, start_w = (
        ops.cast((_f64(d) - _f64(d) * fraction) / 2, dtypes.int32)
        if _is_tensor(d) else int((d - d * fraction) / 2) for d in (h, w))
    return crop_to_bounding_box(x, start_h, start_w, h - 2 * start_h, w - 2 * start_w)


def rgb_to_grayscale(images, name=None):
    """One channel of luma, 0.2989 R + 0.5870 G + 0.1140 B, in the images' dtype (TF1's
    weights; the last dimension of `images` is the 3 RGB channels)."""
    x = convert_to_tensor(images)
    if x.shape.ndims is not None and x.shape.as_list()[-1] not in (None, 3):
        raise ValueError("rgb_to_grayscale: the last dimension must be 3 (RGB), got shape %s"
                         % x.shape)
    flt = convert_image_dtype(x, dtypes.float32)
    weights = np.asarray([0.2989, 0.5870, 0.1140], np.float32)
    gray = ops.reduce_sum(ops.multiply(flt, weights), axis=-1, keepdims=True)
    return convert_image_dtype(gray, x.dtype, name=name)


def adjust_brightness(image, delta):
    """image + delta, computed in float ([0, 1) for integer images) and converted back to
    the image's dtype (saturating)."""
    x = convert_to_tensor(image)
    flt = convert_image_dtype(x, dtypes.float32) if not x.dtype.is_floating else x
    adjusted = ops.add(flt, ops.cast(delta, flt.dtype) if isinstance(delta, Tensor)
                       else float(delta))
    return convert_image_dtype(adjusted, x.dtype, saturate=True)


def random_brightness(image, max_delta, seed=None):
    """adjust_brightness by a delta drawn uniformly in [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("random_brightness: max_delta must be non-negative, got %r"
                         % (max_delta,))
    delta = ops.random_uniform([], -float(max_delta), float(max_delta), seed=seed)
    return adjust_brightness(image, delta)


def transpose_image(image):
    """The image with its height and width swapped."""
    x, batched = _image(image, "transpose_image", True)
    return ops.transpose(x, [0, 2, 1, 3] if batched else [1, 0, 2])


transpose = transpose_image


def rot90(image, k=1, name=None):
    """The image rotated counter-clockwise by k quarter turns, as np.rot90 on its height and
    width. k is a Python int or, as in TF1 (random rotation augmentation), an int32 scalar
    tensor: then the rotation is chosen when the step runs."""
    x, batched = _image(image, "rot90", True)
    if isinstance(k, Tensor):
        from shardflow.control_flow import case
        turns = ops.floormod(ops.cast(k, dtypes.int32), 4)
        out = case([(ops.equal(turns, j), lambda j=j: rot90(x, j)) for j in range(1, 4)],
                   default=lambda: ops.identity(x), exclusive=True)
        dims = x.shape.as_list()
        h_axis = 1 if batched else 0
        if dims[h_axis] != dims[h_axis + 1]:
            dims[h_axis] = dims[h_axis + 1] = None
        out.set_shape(dims)
        return ops.identity(out, name=name)
    k = int(k) % 4
    h_axis = 1 if batched else 0
    if k == 0:
        return ops.identity(x, name=name)
    if k == 2:
        return ops.reverse(x, [h_axis, h_axis + 1], name=name)
    if k == 1:
        return transpose_image(ops.reverse(x, [h_axis + 1]))
    return ops.reverse(transpose_image(x), [h_axis + 1], name=name)


try:
    import PIL  # noqa: F401
    from shardflow.image_codecs import (adjust_jpeg_quality, decode_and_crop_jpeg,  # noqa
                                        decode_bmp, decode_gif, decode_image, decode_jpeg,
                                        decode_png, encode_jpeg, encode_png, extract_jpeg_shape,
                                        is_jpeg, random_jpeg_quality)
    _CODECS = ["adjust_jpeg_quality", "decode_and_crop_jpeg", "decode_bmp", "decode_gif",
               "decode_image", "decode_jpeg", "decode_png", "encode_jpeg", "encode_png",
               "extract_jpeg_shape", "is_jpeg", "random_jpeg_quality"]
except ImportError:
    _CODECS = []


_NOT_HERE = ("adjust_jpeg_quality", "decode_and_crop_jpeg", "decode_bmp", "decode_gif",
             "decode_image", "decode_jpeg", "decode_png", "encode_jpeg", "encode_png",
             "extract_jpeg_shape", "is_jpeg", "random_jpeg_quality")


def __getattr__(name):  # noqa: N807 (PEP 562)
    if name.startswith("__"):
        raise AttributeError(name)
    known = (" (TF1 has it; shardflow's image codecs need Pillow: pip install Pillow)"
             if name in _NOT_HERE else "")
    raise AttributeError("module 'shardflow.image' has no attribute '%s'%s; it has: %s"
                         % (name, known, ", ".join(__all__)))


__all__ = ["ResizeMethod", "adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue",
           "adjust_saturation", "central_crop", "combined_non_max_suppression",
           "convert_image_dtype", "crop_and_resize",
           "crop_to_bounding_box", "draw_bounding_boxes", "extract_glimpse", "flip_left_right",
           "flip_up_down",
           "grayscale_to_rgb", "hsv_to_rgb", "image_gradients", "non_max_suppression",
           "non_max_suppression_overlaps", "non_max_suppression_padded",
           "non_max_suppression_with_scores",
           "pad_to_bounding_box", "per_image_standardization", "psnr", "random_brightness",
           "random_contrast", "random_crop", "random_flip_left_right", "random_flip_up_down",
           "random_hue", "random_saturation", "resize", "resize_area", "resize_bicubic",
           "resize_bilinear", "resize_image_with_crop_or_pad", "resize_image_with_pad",
           "resize_images", "resize_images_v2",
           "resize_nearest_neighbor", "resize_with_crop_or_pad", "rgb_to_grayscale", "rgb_to_hsv",
           "rgb_to_yiq", "rgb_to_yuv", "rot90", "sample_distorted_bounding_box", "sobel_edges",
           "ssim", "ssim_multiscale", "total_variation", "transpose", "transpose_image",
           "yiq_to_rgb", "yuv_to_rgb"] + _CODECS


extract_patches = extract_image_patches  # TF 1.15's tf.image.extract_patches
