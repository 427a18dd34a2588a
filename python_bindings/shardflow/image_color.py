"""TF1's colour adjustments for tf.image: RGB <-> HSV, contrast, saturation, hue, gamma and
grayscale_to_rgb, composed from element-wise ops so gradients flow to the images (TF1 registers
none for AdjustContrastv2, AdjustSaturation or AdjustHue; here they come for free).

Example::

    hsv = sf.image.rgb_to_hsv(rgb)                     # float images, last dimension 3
    img = sf.image.random_hue(img, 0.08, seed=1)       # hue shifted by up to 0.08 of a turn
    img = sf.image.adjust_contrast(img, 1.5)           # per image and channel, about the mean

Images are [..., height, width, 3] for the HSV-based ops. Integer images are converted to float32
([0, 1)) first and converted back afterwards, saturating, as TF1 does; float16/float32 images are
used as they are and not clipped (except hue and saturation, whose HSV round trip keeps [0, 1]).
"""

from shardflow import dtypes, ops
from shardflow.array_ops import stack, tile, unstack, where_v2
from shardflow.framework import Tensor, convert_to_tensor


def _to_float(image):
    """`image` as a tensor, float32 unless it already is float16/float32, and its dtype."""
    x = convert_to_tensor(image)
    if x.dtype in (dtypes.float16, dtypes.float32):
        return x, x.dtype
    from shardflow.image import convert_image_dtype
    return convert_image_dtype(x, dtypes.float32), x.dtype


def _from_float(x, dtype, name=None):
    from shardflow.image import convert_image_dtype
    return convert_image_dtype(x, dtype, saturate=True, name=name)


def _scalar(value, like):
    """A Python number or a tensor as a scalar of `like`'s dtype."""
    if isinstance(value, Tensor):
        return ops.cast(value, like.dtype) if value.dtype != like.dtype else value
    return ops.constant(float(value), dtype=like.dtype)


def _rgb(images, what):
    x = convert_to_tensor(images)
    if x.shape.ndims is not None and x.shape.as_list()[-1] not in (None, 3):
        raise ValueError("%s: the last dimension must be the 3 channels (RGB or HSV), got shape "
                         "%s" % (what, x.shape))
    if not x.dtype.is_floating:
        raise TypeError("%s takes float images (use convert_image_dtype first), not %s"
                        % (what, x.dtype.name))
    return x


def _per_pixel(x, fn, what, name):
    """fn (on [..., 3] with the 3 known) applied to x; when x's rank or last dimension is
    known only when the step runs (a py_func's output, as TF1's kernels take), on x as
    [pixels, 3], the last dimension checked to be 3 then."""
    if x.shape.ndims is not None and x.shape.as_list()[-1] == 3:
        return fn(x, name)
    from shardflow.check_ops import _check
    shape = ops.shape(x)
    last = shape[-1]
    with x.graph.control_dependencies([_check(
            ops.equal(last, 3), "%s: the last dimension must be the 3 channels" % what, None,
            what, [shape])]):
        flat = ops.reshape(x, [-1, 3])
    out = ops.reshape(fn(flat, None), shape, name=name)
    out.set_shape(x.shape)
    return out


def rgb_to_hsv(images, name=None):
    """Hue, saturation and value in [0, 1] of float RGB images in [0, 1] (TF1's kernel: hue
    is 0 where the pixel is gray, saturation 0 where it is black)."""
    return _per_pixel(_rgb(images, "rgb_to_hsv"), _rgb_to_hsv, "rgb_to_hsv", name)


def _rgb_to_hsv(x, name):
    r, g, b = unstack(x, axis=-1)
    value = ops.reduce_max(x, axis=-1)
    chroma = ops.subtract(value, ops.reduce_min(x, axis=-1))
    zero = ops.zeros_like(value)
    safe_value = where_v2(ops.greater(value, 0.0), value, ops.ones_like(value))
    saturation = where_v2(ops.greater(value, 0.0), ops.divide(chroma, safe_value), zero)
    has_hue = ops.greater(chroma, 0.0)
    norm = ops.divide(1.0 / 6.0, where_v2(has_hue, chroma, ops.ones_like(chroma)))
    hue = where_v2(ops.equal(r, value), norm * (g - b),
                   where_v2(ops.equal(g, value), norm * (b - r) + 2.0 / 6.0,
                            norm * (r - g) + 4.0 / 6.0))
    hue = where_v2(has_hue, hue, zero)
    hue = where_v2(ops.less(hue, 0.0), hue + 1.0, hue)
    return stack([hue, saturation, value], axis=-1, name=name)


def hsv_to_rgb(images, name=None):
    """Float RGB images from hue, saturation and value in [0, 1] (TF1's kernel)."""
    return _per_pixel(_rgb(images, "hsv_to_rgb"), _hsv_to_rgb, "hsv_to_rgb", name)


def _hsv_to_rgb(x, name):
    h, s, v = unstack(x, axis=-1)
    dh = h * 6.0

    def ramp(t):
        return ops.clip_by_value(t, 0.0, 1.0)
    dr = ramp(ops.abs(dh - 3.0) - 1.0)
    dg = ramp(2.0 - ops.abs(dh - 2.0))
    db = ramp(2.0 - ops.abs(dh - 4.0))
    grey = 1.0 - s
    return stack([v * (grey + s * dr), v * (grey + s * dg), v * (grey + s * db)], axis=-1,
                 name=name)


# TF1's colour-space matrices: out[..., j] = sum_i images[..., i] * K[i][j].
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _mix_channels(images, kernel, what, name):
    x = _rgb(images, what)
    k = ops.constant(kernel, dtype=x.dtype)                      # [3 in, 3 out]
    return ops.reduce_sum(ops.multiply(ops.expand_dims(x, -1), k), axis=-2, name=name)


def rgb_to_yiq(images, name=None):
    """Float RGB images to YIQ (NTSC: luma, in-phase, quadrature), TF1's matrix."""
    return _mix_channels(images, _RGB_TO_YIQ, "rgb_to_yiq", name)


def yiq_to_rgb(images, name=None):
    """YIQ images back to RGB (TF1's inverse matrix)."""
    return _mix_channels(images, _YIQ_TO_RGB, "yiq_to_rgb", name)


def rgb_to_yuv(images, name=None):
    """Float RGB images to YUV (BT.601 luma and chroma), TF1's matrix."""
    return _mix_channels(images, _RGB_TO_YUV, "rgb_to_yuv", name)


def yuv_to_rgb(images, name=None):
    """YUV images back to RGB (TF1's inverse matrix)."""
    return _mix_channels(images, _YUV_TO_RGB, "yuv_to_rgb", name)


def grayscale_to_rgb(images, name=None):
    """The single channel of `images` (last dimension 1) repeated into 3."""
    x = convert_to_tensor(images)
    if x.shape.ndims is None or x.shape.ndims < 2 or x.shape.as_list()[-1] != 1:
        raise ValueError("grayscale_to_rgb: the last dimension must be 1, got shape %s"
                         % x.shape)
    return tile(x, [1] * (x.shape.ndims - 1) + [3], name=name)


def adjust_contrast(images, contrast_factor, name=None):
    """(x - mean) * contrast_factor + mean, with the mean taken over each image's height and
    width, per channel ([..., height, width, channels])."""
    x, orig = _to_float(images)
    if x.shape.ndims is not None and x.shape.ndims < 3:
        raise ValueError("adjust_contrast takes images of rank 3 or more, got shape %s"
                         % x.shape)
    mean = ops.reduce_mean(x, axis=[-3, -2], keepdims=True)
    adjusted = (x - mean) * _scalar(contrast_factor, x) + mean
    return _from_float(adjusted, orig, name=name)


def _uniform_factor(lower, upper, seed, what):
    if upper <= lower:
        raise ValueError("%s: upper must be > lower, got [%r, %r]" % (what, lower, upper))
    if lower < 0:
        raise ValueError("%s: lower must be non-negative, got %r" % (what, lower))
    return ops.random_uniform([], float(lower), float(upper), seed=seed)


def random_contrast(image, lower, upper, seed=None):
    """adjust_contrast by a factor drawn uniformly in [lower, upper)."""
    return adjust_contrast(image, _uniform_factor(lower, upper, seed, "random_contrast"))


def adjust_saturation(image, saturation_factor, name=None):
    """The image with its HSV saturation multiplied by saturation_factor (clipped to [0, 1])."""
    x, orig = _to_float(image)

    def saturate(pixels, _):
        h, s, v = unstack(_rgb_to_hsv(pixels, None), axis=-1)
        s = ops.clip_by_value(s * _scalar(saturation_factor, s), 0.0, 1.0)
        return _hsv_to_rgb(stack([h, s, v], axis=-1), None)
    return _from_float(_per_pixel(_rgb(x, "adjust_saturation"), saturate, "adjust_saturation",
                                  None), orig, name=name)


def random_saturation(image, lower, upper, seed=None):
    """adjust_saturation by a factor drawn uniformly in [lower, upper)."""
    return adjust_saturation(image, _uniform_factor(lower, upper, seed, "random_saturation"))


def adjust_hue(image, delta, name=None):
    """The image with delta (in [-1, 1], a fraction of a turn) added to its HSV hue, wrapped
    into [0, 1)."""
    if not isinstance(delta, Tensor) and not -1.0 <= float(delta) <= 1.0:
        raise ValueError("adjust_hue: delta must be in [-1, 1], got %r" % (delta,))
    x, orig = _to_float(image)

    def rotate(pixels, _):
        h, s, v = unstack(_rgb_to_hsv(pixels, None), axis=-1)
        h = h + _scalar(delta, h)
        h = h - ops.floor(ops.stop_gradient(h))
        return _hsv_to_rgb(stack([h, s, v], axis=-1), None)
    return _from_float(_per_pixel(_rgb(x, "adjust_hue"), rotate, "adjust_hue", None), orig,
                       name=name)


def random_hue(image, max_delta, seed=None):
    """adjust_hue by a delta drawn uniformly in [-max_delta, max_delta), max_delta in
    [0, 0.5]."""
    if not 0.0 <= max_delta <= 0.5:
        raise ValueError("random_hue: max_delta must be in [0, 0.5], got %r" % (max_delta,))
    delta = ops.random_uniform([], -float(max_delta), float(max_delta), seed=seed)
    return adjust_hue(image, delta)


def adjust_gamma(image, gamma=1, gain=1):
    """gain * image ** gamma, computed in float ([0, 1) for integer images) and converted back
    (saturating). gamma must be non-negative."""
    if not isinstance(gamma, Tensor) and float(gamma) < 0:
        raise ValueError("adjust_gamma: gamma must be a non-negative real number, got %r"
                         % (gamma,))
    x, orig = _to_float(image)
    adjusted = _scalar(gain, x) * ops.pow(x, _scalar(gamma, x))
    return _from_float(adjusted, orig)


__all__ = ["adjust_contrast", "adjust_gamma", "adjust_hue", "adjust_saturation",
           "grayscale_to_rgb", "hsv_to_rgb", "random_contrast", "random_hue",
           "random_saturation", "rgb_to_hsv", "rgb_to_yiq", "rgb_to_yuv", "yiq_to_rgb",
           "yuv_to_rgb"]
