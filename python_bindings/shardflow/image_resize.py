"""TF1's image resizing (tf.image.resize_images, resize_bilinear, resize_nearest_neighbor,
tf.image.resize), built from gathers and element-wise weights so gradients flow to the images.

Example::

    small = sf.placeholder(sf.float32, [None, 14, 14, 3])
    big = sf.image.resize_images(small, [28, 28])                       # bilinear, float32
    nearest = sf.image.resize_nearest_neighbor(small, [7, 7], align_corners=True)

The coordinate conventions are TF's: by default an output pixel i samples the input at
i * in / out; `align_corners` maps the corner pixels onto each other ((in - 1) / (out - 1));
`half_pixel_centers` (tf.image.resize's default, as in TF 2) samples at pixel centres.
resize_bicubic (TF's kernel: a = -0.75, or Keys' a = -0.5 with half_pixel_centers) and
resize_area are here as functions too, and as resize_images' / resize's methods. At the end:
tf.contrib.image's projective resampling (transform, rotate, translate,
angles_to_projective_transforms) and dense_image_warp.

Sizes known only when the step runs. Bilinear, nearest-neighbour and bicubic resizing also
take a size that is a tensor (`tf.shape(skip)[1:3]`, a segmentation decoder's upsampling to its
skip connection) and images whose height and width are unknown (a decoded JPEG): the sample
positions and weights are then computed in the graph, in float32 as TF's kernels do, instead
of in NumPy when the graph is built. Area resizing needs both sizes known when the graph is
built.
"""

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.array_ops import gather
from shardflow.framework import convert_to_tensor
from shardflow.tensor_util import constant_value


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


def _known(size):
    """`size` as a list of Python ints when the graph determines it, else None."""
    parts = [size] if hasattr(size, "op") else list(size)
    values = [constant_value(v) if hasattr(v, "op") else v for v in parts]
    if any(v is None for v in values):
        return None
    return np.concatenate([np.reshape(v, [-1]) for v in values]).tolist()


def _size(size, what, dynamic=False):
    """[height, width] as Python ints when the graph determines them; otherwise, for
    `dynamic` callers, an int32 [2] tensor."""
    if hasattr(size, "op") or (isinstance(size, (list, tuple)) and
                               any(hasattr(v, "op") for v in size)):
        known = _known(size)
        if known is None:
            if not dynamic:
                raise ValueError("%s: size must be known when the graph is built (two positive "
                                 "ints [height, width]); only bilinear and nearest-neighbour "
                                 "resizing, and bicubic, take a tensor size" % what)
            tensor = convert_to_tensor(size) if hasattr(size, "op") else array_ops.stack(
                [ops.cast(convert_to_tensor(v), dtypes.int32) for v in size])
            if not tensor.dtype.is_integer or tensor.shape.ndims not in (None, 1) or \
                    tensor.shape.as_list() not in (None, [2], [None]):
                raise ValueError("%s: size must be an int [2] tensor [height, width], got "
                                 "%s %s" % (what, tensor.dtype.name, tensor.shape))
            return ops.cast(tensor, dtypes.int32)
        size = known
    size = np.asarray(size).tolist()
    if not isinstance(size, list) or len(size) != 2 or \
            not all(isinstance(v, int) and v > 0 for v in size):
        raise ValueError("%s: size must be two positive ints [height, width], got %r"
                         % (what, size))
    return size


def _as_nhwc(images, what, dynamic=False):
    """The images as a batch, whether they were one image, and their height and width (None
    where unknown: only `dynamic` callers accept that)."""
    images = convert_to_tensor(images)
    rank = images.shape.ndims
    if rank not in (3, 4):
        raise ValueError("%s takes [height, width, channels] or [batch, height, width, "
                         "channels] images, got shape %s" % (what, images.shape))
    batched = images if rank == 4 else ops.expand_dims(images, 0)
    h, w = batched.shape.as_list()[1:3]
    if (h is None or w is None) and not dynamic:
        raise ValueError("%s needs the images' height and width known when the graph is built, "
                         "got shape %s (bilinear and nearest-neighbour resizing, and bicubic, do "
                         "not)"
                         % (what, images.shape))
    return batched, rank == 3, h, w


def _dynamic_scale(n_in, n_out, align_corners):
    """_scale for scalar int32 tensors: a float32 tensor."""
    f_in, f_out = ops.cast(n_in, dtypes.float32), ops.cast(n_out, dtypes.float32)
    if not align_corners:
        return f_in / f_out
    return array_ops.where_v2(n_out > 1, (f_in - 1.0) / ops.maximum(f_out - 1.0, 1.0),
                              f_in / f_out)


def _axis_shape(axis):
    shape = [1, 1, 1, 1]
    shape[axis] = -1
    return shape


def _bilinear_axis_dynamic(x, axis, n_in, n_out, align_corners, half_pixel_centers):
    scale = _dynamic_scale(n_in, n_out, align_corners)
    i = ops.cast(array_ops.range(n_out), dtypes.float32)
    pos = (i + 0.5) * scale - 0.5 if half_pixel_centers else i * scale
    low = ops.floor(pos)
    last = n_in - 1
    lower = ops.clip_by_value(ops.cast(low, dtypes.int32), 0, last)
    upper = ops.clip_by_value(ops.cast(ops.ceil(pos), dtypes.int32), 0, last)
    w = ops.reshape(pos - low, _axis_shape(axis))
    a, b = gather(x, lower, axis=axis), gather(x, upper, axis=axis)
    return a + (b - a) * w


def _nearest_axis_dynamic(x, axis, n_in, n_out, align_corners, half_pixel_centers):
    scale = _dynamic_scale(n_in, n_out, align_corners)
    i = ops.cast(array_ops.range(n_out), dtypes.float32)
    if half_pixel_centers:
        pos = ops.floor((i + 0.5) * scale)
    elif align_corners:
        pos = ops.floor(i * scale + 0.5)            # C's roundf: halves away from zero
    else:
        pos = ops.floor(i * scale)
    rows = ops.clip_by_value(ops.cast(pos, dtypes.int32), 0, n_in - 1)
    return gather(x, rows, axis=axis)


def _resize_dynamic(x, size, axis_fn, align_corners, half_pixel_centers):
    """x [batch, h, w, c] resized to `size` (ints or an int32 [2] tensor) with the sample
    positions computed in the graph."""
    from shardflow import check_ops
    shape = ops.shape(x)
    static = isinstance(size, list)
    out_h, out_w = (size if static else (size[0], size[1]))
    # TF's resize kernels' checks (an empty image gathered at index -1 and named GatherV2).
    checks = [check_ops._check(ops.logical_and(shape[1] > 0, shape[2] > 0),
                               "resize: input image must be of non-zero size", None,
                               "resize_input", [shape])]
    if not static:
        checks.append(check_ops._check(ops.logical_and(out_h > 0, out_w > 0),
                                       "resize: output dimensions must be positive", None,
                                       "resize_size", [size]))
    with x.graph.control_dependencies(checks):
        x = ops.identity(x)
        if not static:
            size = ops.identity(size)
            out_h, out_w = size[0], size[1]
    y = axis_fn(x, 1, shape[1], out_h, align_corners, half_pixel_centers)
    y = axis_fn(y, 2, shape[2], out_w, align_corners, half_pixel_centers)
    batch, _, _, channels = x.shape.as_list()
    y.set_shape([batch, out_h if static else None, out_w if static else None, channels])
    return y


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


def _separable(images, size, what, axis_fn, align_corners, half_pixel_centers, name):
    """Resizing one axis after the other with axis_fn (_bilinear_axis, _bicubic_axis); float32
    out."""
    dynamic_fn = _DYNAMIC.get(axis_fn)
    x, unbatch, h, w = _as_nhwc(images, what, dynamic_fn is not None)
    size = _size(size, what, dynamic_fn is not None)
    if x.dtype != dtypes.float32:
        x = ops.cast(x, dtypes.float32)
    if h is None or w is None or not isinstance(size, list):
        y = _resize_dynamic(x, size, dynamic_fn, align_corners, half_pixel_centers)
    else:
        y = axis_fn(x, 1, h, size[0], align_corners, half_pixel_centers)
        y = axis_fn(y, 2, w, size[1], align_corners, half_pixel_centers)
    if unbatch:
        y = ops.squeeze(y, [0])
    return ops.identity(y, name=name)


_DYNAMIC = {_bilinear_axis: _bilinear_axis_dynamic}


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """Bilinear resizing of NHWC images to size = [height, width]; float32 out."""
    return _separable(images, size, "resize_bilinear", _bilinear_axis, align_corners,
                      half_pixel_centers, name)


def _nearest_rows(n_in, n_out, align_corners, half_pixel_centers):
    scale = _scale(n_in, n_out, align_corners)
    i = np.arange(n_out, dtype=np.float64)
    if half_pixel_centers:
        pos = np.floor((i + 0.5) * scale)
    elif align_corners:
        pos = np.floor(i * scale + 0.5)             # C's roundf (TF's kernel), not half-even
    else:
        pos = np.floor(i * scale)
    return np.clip(pos, 0, n_in - 1).astype(np.int32)


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    """Nearest-neighbour resizing of NHWC images to size = [height, width]; dtype kept."""
    x, unbatch, h, w = _as_nhwc(images, "resize_nearest_neighbor", True)
    size = _size(size, "resize_nearest_neighbor", True)
    if h is None or w is None or not isinstance(size, list):
        y = _resize_dynamic(x, size, _nearest_axis_dynamic, align_corners, half_pixel_centers)
    else:
        y = gather(x, _nearest_rows(h, size[0], align_corners, half_pixel_centers), axis=1)
        y = gather(y, _nearest_rows(w, size[1], align_corners, half_pixel_centers), axis=2)
    if unbatch:
        y = ops.squeeze(y, [0])
    return ops.identity(y, name=name)


_CUBIC_TABLE_SIZE = 1024


def _cubic_weights(delta, a):
    """TF's Keys cubic coefficients for the 4 taps at offsets -1, 0, 1, 2 from a sample that
    lies `delta` past its lower neighbour, delta quantized to 1/1024 as TF's table is."""
    t = np.rint(delta * _CUBIC_TABLE_SIZE).astype(np.float64) / _CUBIC_TABLE_SIZE

    def near(x):     # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):      # 1 < |x| <= 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic_axis(x, axis, n_in, n_out, align_corners, half_pixel_centers):
    """TF's ResizeBicubic along one axis: a = -0.75 with clamped border taps (legacy), or
    a = -0.5 (Keys) with taps outside the image dropped and the rest renormalized
    (half_pixel_centers)."""
    scale = np.float32(_scale(n_in, n_out, align_corners))
    i = np.arange(n_out, dtype=np.float32)
    pos = (i + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel_centers else i * scale
    base = np.floor(pos)
    weights = _cubic_weights((pos - base).astype(np.float32), -0.5 if half_pixel_centers else -0.75)
    base = base.astype(np.int64)
    taps = [base + k for k in (-1, 0, 1, 2)]
    if half_pixel_centers:
        weights = [np.where((t >= 0) & (t < n_in), w, 0.0) for t, w in zip(taps, weights)]
        total = sum(weights)
        weights = [w / np.where(np.abs(total) > 0, total, 1.0) for w in weights]
    shape = [1, 1, 1, 1]
    shape[axis] = n_out
    out = None
    for t, w in zip(taps, weights):
        term = gather(x, np.clip(t, 0, n_in - 1).astype(np.int32), axis=axis) * \
            ops.constant(w.astype(np.float32).reshape(shape))
        out = term if out is None else out + term
    return out


def _bicubic_axis_dynamic(x, axis, n_in, n_out, align_corners, half_pixel_centers):
    """_bicubic_axis with the sizes scalar int32 tensors: the same float32 positions and
    1/1024-quantized Keys weights, computed in the graph."""
    scale = _dynamic_scale(n_in, n_out, align_corners)
    i = ops.cast(array_ops.range(n_out), dtypes.float32)
    pos = (i + 0.5) * scale - 0.5 if half_pixel_centers else i * scale
    base = ops.floor(pos)
    t = ops.round((pos - base) * float(_CUBIC_TABLE_SIZE)) / float(_CUBIC_TABLE_SIZE)
    a = -0.5 if half_pixel_centers else -0.75

    def near(v):
        return ((a + 2) * v - (a + 3)) * v * v + 1.0

    def far(v):
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
    weights = [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
    taps = [ops.cast(base, dtypes.int32) + k for k in (-1, 0, 1, 2)]
    if half_pixel_centers:
        weights = [w * ops.cast(ops.logical_and(tap >= 0, tap < n_in), dtypes.float32)
                   for tap, w in zip(taps, weights)]
        total = weights[0] + weights[1] + weights[2] + weights[3]
        total = array_ops.where_v2(ops.abs(total) > 0, total, ops.ones_like(total))
        weights = [w / total for w in weights]
    out = None
    for tap, w in zip(taps, weights):
        term = gather(x, ops.clip_by_value(tap, 0, n_in - 1), axis=axis) * \
            ops.reshape(w, _axis_shape(axis))
        out = term if out is None else out + term
    return out


_DYNAMIC[_bicubic_axis] = _bicubic_axis_dynamic


def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """Bicubic resizing of NHWC images to size = [height, width], as TF's ResizeBicubic
    (coordinates as resize_bilinear's); float32 out."""
    return _separable(images, size, "resize_bicubic", _bicubic_axis, align_corners,
                      half_pixel_centers, name)


def _area_matrix(n_in, n_out, align_corners):
    """[n_out, n_in]: output pixel o averages input [o * s, (o + 1) * s) (s = in / out), each
    input pixel weighted by its overlap, as TF's ResizeArea (float32 positions, clamped)."""
    scale = np.float32(_scale(n_in, n_out, align_corners))
    m = np.zeros([n_out, n_in], np.float64)
    for o in range(n_out):
        lo, hi = np.float32(o) * scale, np.float32(o + 1) * scale
        for i in range(int(np.floor(lo)), int(np.ceil(hi))):
            m[o, min(max(i, 0), n_in - 1)] += min(i + 1.0, hi) - max(float(i), lo)
    return (m / scale).astype(np.float32)


def _apply_along(x, matrix, axis):
    """x with dimension `axis` (1 or 2 of 4) replaced by matrix @ that dimension."""
    perm = [0, 2, 3, 1] if axis == 1 else [0, 1, 3, 2]
    moved = ops.transpose(x, perm)
    n_in = matrix.shape[1]
    flat = ops.matmul(ops.reshape(moved, [-1, n_in]), ops.constant(matrix.T.copy()))
    lead = ops.slice(ops.shape(moved), [0], [3])
    out = ops.reshape(flat, ops.concat([lead, [matrix.shape[0]]], 0))
    return ops.transpose(out, [0, 3, 1, 2] if axis == 1 else [0, 1, 3, 2])


def resize_area(images, size, align_corners=False, name=None):
    """Area (box-average) resizing of NHWC images to size = [height, width], as TF's
    ResizeArea: average pooling when the size divides the input evenly, pixel repetition when
    it is a whole multiple, overlap-weighted averages otherwise; float32 out."""
    x, unbatch, h, w = _as_nhwc(images, "resize_area")
    out_h, out_w = _size(size, "resize_area")
    if x.dtype != dtypes.float32:
        x = ops.cast(x, dtypes.float32)
    y = x
    if (out_h, out_w) != (h, w) or align_corners:
        y = _apply_along(y, _area_matrix(h, out_h, align_corners), 1)
        y = _apply_along(y, _area_matrix(w, out_w, align_corners), 2)
        channels = x.shape.as_list()[3]
        if channels is not None:            # keep the static shape through the reshapes
            y = ops.reshape(y, [-1, out_h, out_w, channels])
    if unbatch:
        y = ops.squeeze(y, [0])
    return ops.identity(y, name=name)


def _method(method):
    if isinstance(method, str):
        if method.lower() not in _METHOD_NAMES:
            raise ValueError("resize method %r: one of %s" % (method, sorted(_METHOD_NAMES)))
        method = _METHOD_NAMES[method.lower()]
    if method not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR,
                      ResizeMethod.BICUBIC, ResizeMethod.AREA):
        raise ValueError("unknown resize method %r" % (method,))
    return method


_DYNAMIC_METHODS = (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR, ResizeMethod.BICUBIC)


def _fit_aspect(images, size):
    """The size that fits in `size` keeping the images' aspect ratio, computed as TF's
    resize_images does: in float32, rounded half to even (a 7x14 image fit to 29x29 is 14x29:
    7 * (29 / 14) is 14.5 in float32)."""
    h, w = (np.float32(d) for d in convert_to_tensor(images).shape.as_list()[-3:-1])
    scale = min(np.float32(size[0]) / h, np.float32(size[1]) / w)
    return [max(1, int(np.round(h * scale))), max(1, int(np.round(w * scale)))]


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """TF1's tf.image.resize_images: bilinear, bicubic or area (float32 out) or nearest-neighbour
    (dtype kept). As TF1's, images whose height and width the graph knows to be `size` already
    are returned as they are (their dtype kept: uint8 stays uint8)."""
    method = _method(method)
    size = _size(size, "resize_images", method in _DYNAMIC_METHODS and not preserve_aspect_ratio)
    if not preserve_aspect_ratio and isinstance(size, list):
        x = convert_to_tensor(images)
        if x.shape.ndims in (3, 4) and x.shape.as_list()[-3:-1] == size:
            return ops.identity(x, name=name)
    if preserve_aspect_ratio:
        _as_nhwc(images, "resize_images")
        size = _fit_aspect(images, size)
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        return resize_nearest_neighbor(images, size, align_corners, name=name)
    if method == ResizeMethod.BICUBIC:
        return resize_bicubic(images, size, align_corners, name=name)
    if method == ResizeMethod.AREA:
        return resize_area(images, size, align_corners, name=name)
    return resize_bilinear(images, size, align_corners, name=name)


def resize(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
           preserve_aspect_ratio=False, name=None):
    """tf.image.resize in TF 1.15: resize_images itself (TF 1.x's conventions: no half-pixel
    centres, `align_corners`; nearest-neighbour keeps the dtype). TF 2's version is
    resize_images_v2 (half-pixel centres, float32 out)."""
    return resize_images(images, size, method, align_corners, preserve_aspect_ratio, name)


def resize_images_v2(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
                     antialias=False, name=None):
    """TF 2's tf.image.resize (tf.compat.v2): pixel centres, float32 out."""
    if antialias:
        raise ValueError("resize(antialias=True) is not available")
    method = _method(method)
    size = _size(size, "resize", method in _DYNAMIC_METHODS and not preserve_aspect_ratio)
    if preserve_aspect_ratio:
        _as_nhwc(images, "resize")
        size = _fit_aspect(images, size)
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        out = resize_nearest_neighbor(images, size, half_pixel_centers=True)
        return ops.cast(out, dtypes.float32, name=name)
    if method == ResizeMethod.BICUBIC:
        return resize_bicubic(images, size, half_pixel_centers=True, name=name)
    if method == ResizeMethod.AREA:
        return resize_area(images, size, name=name)
    return resize_bilinear(images, size, half_pixel_centers=True, name=name)


# ---- tf.contrib.image's projective transforms (rotate, translate, transform) ---------------


def _round_half_away(x):
    """C's std::round: halves away from zero."""
    return ops.sign(x) * ops.floor(ops.abs(x) + 0.5)


def transform(images, transforms, interpolation="NEAREST", output_shape=None, name=None):
    """tf.contrib.image.transform: each output pixel (x, y) of NHWC (or HWC, or HW) images
    samples the input at ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1,
    for transforms [a0, a1, a2, b0, b1, b2, c0, c1] ([8], or [batch, 8]); pixels off the
    image are 0. NEAREST rounds halves away from zero; BILINEAR weighs the 4 neighbours. The
    images' dtype is kept (TF1's ImageProjectiveTransform kernel)."""
    x = convert_to_tensor(images)
    rank = x.shape.ndims
    if rank not in (2, 3, 4):
        raise ValueError("transform takes [height, width], [height, width, channels] or [batch, "
                         "height, width, channels] images, got shape %s" % x.shape)
    mode = str(interpolation).upper()
    if mode not in ("NEAREST", "BILINEAR"):
        raise ValueError("transform: interpolation is 'NEAREST' or 'BILINEAR', got %r"
                         % (interpolation,))
    if output_shape is not None:
        raise ValueError("transform: output_shape (TF 2's) is not supported; the output has "
                         "the images' size")
    batch = x if rank == 4 else (ops.expand_dims(x, 0) if rank == 3 else
                                 ops.expand_dims(ops.expand_dims(x, 0), -1))
    t = ops.cast(convert_to_tensor(transforms), dtypes.float32)
    t = ops.reshape(t, [-1, 8])
    shape = ops.shape(batch)
    n, h, w, c = shape[0], shape[1], shape[2], shape[3]
    xs = ops.reshape(ops.cast(array_ops.range(w), dtypes.float32), [1, 1, -1])   # [1, 1, W]
    ys = ops.reshape(ops.cast(array_ops.range(h), dtypes.float32), [1, -1, 1])   # [1, H, 1]

    def col(k):
        return ops.reshape(t[:, k], [-1, 1, 1])                                   # [N|1, 1, 1]
    k = col(6) * xs + col(7) * ys + 1.0
    defined = ops.not_equal(k, 0.0)
    k = array_ops.where_v2(defined, k, ops.ones_like(k))
    in_x = (col(0) * xs + col(1) * ys + col(2)) / k                                # [N|1, H, W]
    in_y = (col(3) * xs + col(4) * ys + col(5)) / k
    in_x = in_x + ops.zeros(array_ops.stack([n, h, w]), dtypes.float32)           # one per image
    in_y = in_y + ops.zeros(array_ops.stack([n, h, w]), dtypes.float32)
    defined = ops.logical_and(defined, ops.ones(array_ops.stack([n, h, w]), dtypes.bool_))
    flat = ops.reshape(batch, array_ops.stack([-1, c]))
    base = ops.reshape(array_ops.range(n) * h * w, [-1, 1, 1])

    def read(iy, ix):
        """Pixels at integer (iy, ix) [N, H, W], 0 off the image: [N, H, W, C]."""
        iy, ix = ops.cast(iy, dtypes.int32), ops.cast(ix, dtypes.int32)
        inside = ops.logical_and(ops.logical_and(iy >= 0, iy < h),
                                 ops.logical_and(ix >= 0, ix < w))
        inside = ops.logical_and(inside, defined)
        lin = base + ops.clip_by_value(iy, 0, h - 1) * w + ops.clip_by_value(ix, 0, w - 1)
        values = gather(flat, lin)
        return array_ops.where_v2(ops.expand_dims(inside, -1), values, ops.zeros_like(values))
    if mode == "NEAREST":
        out = read(_round_half_away(in_y), _round_half_away(in_x))
    else:
        y0, x0 = ops.floor(in_y), ops.floor(in_x)
        wy, wx = ops.expand_dims(in_y - y0, -1), ops.expand_dims(in_x - x0, -1)

        def f(v):
            return ops.cast(v, dtypes.float32)
        top = f(read(y0, x0)) * (1.0 - wx) + f(read(y0, x0 + 1.0)) * wx
        bottom = f(read(y0 + 1.0, x0)) * (1.0 - wx) + f(read(y0 + 1.0, x0 + 1.0)) * wx
        out = top * (1.0 - wy) + bottom * wy
        out = ops.cast(out, x.dtype) if x.dtype != dtypes.float32 else out
    out.set_shape(batch.shape)
    if rank == 3:
        out = ops.squeeze(out, [0])
    elif rank == 2:
        out = ops.squeeze(out, [0, 3])
    return ops.identity(out, name=name)


def angles_to_projective_transforms(angles, image_height, image_width, name=None):
    """The transforms ([N, 8]) that rotate images counter-clockwise by `angles` (radians, a
    scalar or [N]) about their centre (tf.contrib.image.angles_to_projective_transforms)."""
    a = ops.cast(convert_to_tensor(angles), dtypes.float32)
    a = ops.reshape(a, [-1])
    h = ops.cast(convert_to_tensor(image_height), dtypes.float32)
    w = ops.cast(convert_to_tensor(image_width), dtypes.float32)
    cos, sin = ops.cos(a), ops.sin(a)
    x_offset = ((w - 1.0) - (cos * (w - 1.0) - sin * (h - 1.0))) / 2.0
    y_offset = ((h - 1.0) - (sin * (w - 1.0) + cos * (h - 1.0))) / 2.0
    zeros = ops.zeros_like(a)
    return array_ops.stack([cos, -sin, x_offset, sin, cos, y_offset, zeros, zeros], axis=1,
                           name=name)


def rotate(images, angles, interpolation="NEAREST", name=None):
    """tf.contrib.image.rotate: images rotated counter-clockwise by `angles` radians (one, or
    one per image) about their centres; pixels from off the image are 0."""
    x = convert_to_tensor(images)
    shape = ops.shape(x)
    rank = x.shape.ndims
    h, w = (shape[0], shape[1]) if rank in (2, 3) else (shape[1], shape[2])
    return transform(x, angles_to_projective_transforms(angles, h, w), interpolation, name=name)


def translate(images, translations, interpolation="NEAREST", name=None):
    """tf.contrib.image.translate: images shifted by translations [dx, dy] (or one per image);
    pixels from off the image are 0."""
    d = ops.reshape(ops.cast(convert_to_tensor(translations), dtypes.float32), [-1, 2])
    ones, zeros = ops.ones_like(d[:, 0]), ops.zeros_like(d[:, 0])
    t = array_ops.stack([ones, zeros, -d[:, 0], zeros, ones, -d[:, 1], zeros, zeros], axis=1)
    return transform(images, t, interpolation, name=name)


def dense_image_warp(image, flow, name=None):
    """tf.contrib.image.dense_image_warp: output[b, y, x] = image sampled bilinearly at
    (y - flow[b, y, x, 0], x - flow[b, y, x, 1]) for [batch, h, w, c] float images (h, w >= 2)
    and flow [batch, h, w, 2]; queries off the image take the edge's cells (the floor clamped
    to [0, size - 2] and the weights to [0, 1], as TF's interpolate_bilinear). Differentiable
    in the image and the flow."""
    x = convert_to_tensor(image)
    if x.shape.ndims != 4:
        raise ValueError("dense_image_warp takes [batch, height, width, channels] images, got "
                         "shape %s" % x.shape)
    fl = ops.cast(convert_to_tensor(flow), x.dtype)
    shape = ops.shape(x)
    n, h, w, c = shape[0], shape[1], shape[2], shape[3]
    rows = ops.reshape(ops.cast(array_ops.range(h), x.dtype), [1, -1, 1])
    cols = ops.reshape(ops.cast(array_ops.range(w), x.dtype), [1, 1, -1])
    flat = ops.reshape(x, array_ops.stack([-1, c]))
    base = ops.reshape(array_ops.range(n) * h * w, [-1, 1, 1])

    def axis(query, size):
        low = ops.minimum(ops.maximum(ops.floor(query), 0.0), ops.cast(size - 2, x.dtype))
        alpha = ops.minimum(ops.maximum(query - low, 0.0), 1.0)
        return ops.cast(low, dtypes.int32), ops.expand_dims(alpha, -1)
    y0, ay = axis(rows - fl[..., 0], h)
    x0, ax = axis(cols - fl[..., 1], w)

    def pick(yy, xx):
        return gather(flat, base + yy * w + xx)                         # [n, h, w, c]
    top_left, top_right = pick(y0, x0), pick(y0, x0 + 1)
    bottom_left, bottom_right = pick(y0 + 1, x0), pick(y0 + 1, x0 + 1)
    top = ax * (top_right - top_left) + top_left
    bottom = ax * (bottom_right - bottom_left) + bottom_left
    out = ay * (bottom - top) + top
    out.set_shape(x.shape)
    return ops.identity(out, name=name)


__all__ = ["ResizeMethod", "angles_to_projective_transforms", "dense_image_warp", "resize",
           "resize_area", "resize_bicubic", "resize_bilinear", "resize_images",
           "resize_images_v2", "resize_nearest_neighbor", "rotate", "transform", "translate"]
