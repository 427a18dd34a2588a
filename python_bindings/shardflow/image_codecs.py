"""TF1's image codecs for tf.image (decode_jpeg, decode_png, decode_bmp, decode_gif,
decode_image, decode_and_crop_jpeg, extract_jpeg_shape, is_jpeg, encode_png, encode_jpeg,
adjust_jpeg_quality, random_jpeg_quality) as PyFunc nodes backed by Pillow; they run in the
process that built the graph (shardflow/script_ops.py) and have no gradient, as in TF1.

Example::

    raw = sf.io.read_file(path)                       # or a string tensor fed in
    img = sf.image.decode_png(raw, channels=3)        # uint8 [h, w, 3]
    png = sf.image.encode_png(img)                    # a scalar string

Images are uint8 (decode_image also converts to a float dtype). `channels` 0 keeps the file's
channels; 1, 3 or 4 converts (gray, RGB, RGBA). Decoded images'
height and width are unknown until run time (the channel count is known when given).
"""

import io

import numpy as np

from shardflow import dtypes, ops
from shardflow.framework import convert_to_tensor
from shardflow.script_ops import py_func

_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


def _pil():
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError("shardflow's image codecs need Pillow (pip install Pillow)") from e
    return Image


def _as_bytes(contents):
    value = contents.item() if isinstance(contents, np.ndarray) else contents
    return value if isinstance(value, bytes) else str(value).encode("latin-1")


def _to_array(img, channels, dtype):
    if channels:
        img = img.convert(_MODES[channels])
    elif img.mode not in ("L", "LA", "RGB", "RGBA", "I;16", "I"):   # LA: 2 channels, as TF
        img = img.convert("RGBA" if "A" in img.mode or "transparency" in img.info else "RGB")
    arr = np.asarray(img)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.dtype != np.uint8:       # 16-bit PNG: shardflow has no uint16, scaled to uint8
        arr = (arr.astype(np.uint32) // 257).astype(np.uint8)
    return arr


def _decode(contents, channels, dtype, formats, what, name, ratio=1):
    if channels not in (0, None, 1, 3, 4):
        raise ValueError("%s: channels must be 0, 1, 3 or 4, got %r" % (what, channels))
    image_mod = _pil()

    def run(raw):
        img = image_mod.open(io.BytesIO(_as_bytes(raw)))
        if formats and img.format not in formats:
            raise ValueError("%s: the contents are %s, not %s" % (what, img.format,
                                                                  "/".join(formats)))
        if ratio > 1 and img.format == "JPEG":
            # libjpeg's own downscaling while decoding (scale 1/ratio, sizes rounded up), as
            # TF's DecodeJpeg does with `ratio`.
            w, h = img.size     # (Pillow picks the largest scale whose size is >= asked)
            img.draft(img.mode, (max(1, w // ratio), max(1, h // ratio)))
        return _to_array(img, channels or 0, dtype)
    out = py_func(run, [convert_to_tensor(contents, dtype=dtypes.string)], dtype,
                  stateful=False, name=name or what)
    out.set_shape([None, None, channels or None])
    return out


# TF 1.x's DecodeJpeg, DecodePng and DecodeGif are one kernel that decodes whichever of these
# formats the bytes are (a PNG given to decode_jpeg decodes).
_TF1_DECODABLE = ("JPEG", "PNG", "GIF")


def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None):
    """A [h, w, channels] uint8 image from PNG bytes (16-bit PNGs scaled to 8 bits: shardflow
    has no uint16)."""
    if dtypes.as_dtype(dtype) != dtypes.uint8:
        raise ValueError("decode_png: dtype must be uint8 (shardflow has no uint16), got %r"
                         % (dtype,))
    return _decode(contents, channels, dtypes.uint8, _TF1_DECODABLE, "DecodePng", name)


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="", name=None):
    """A [h, w, channels] uint8 image from JPEG bytes; `ratio` 2, 4 or 8 downscales while
    decoding (libjpeg's scaled IDCT: ceil(h / ratio) x ceil(w / ratio)), as TF1's."""
    if ratio not in (1, 2, 4, 8):
        raise ValueError("decode_jpeg: ratio must be 1, 2, 4 or 8, got %r" % (ratio,))
    return _decode(contents, channels, dtypes.uint8, _TF1_DECODABLE, "DecodeJpeg", name,
                   int(ratio))


def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None,
                 expand_animations=True):
    """A [h, w, channels] image from PNG, JPEG, GIF (first frame) or BMP bytes; `dtype`
    uint8, or a float type (scaled to [0, 1) as convert_image_dtype does)."""
    dt = dtypes.as_dtype(dtype)
    image = _decode(contents, channels, dtypes.uint8, None, "DecodeImage",
                    name if dt == dtypes.uint8 else None)
    if dt == dtypes.uint8:
        return image
    from shardflow.image import convert_image_dtype
    return convert_image_dtype(image, dt, name=name)


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                         name=None):
    """decode_jpeg of the crop_window [y, x, height, width] of the image only (TF1's fused op
    that ResNet-style preprocessing feeds sample_distorted_bounding_box's crop); the window
    must lie in the image."""
    from shardflow import array_ops
    image = decode_jpeg(contents, channels=channels, ratio=ratio)
    window = ops.cast(convert_to_tensor(crop_window), dtypes.int32)
    shape = ops.shape(image)
    fits = array_ops.reduce_all(ops.logical_and(
        ops.greater_equal(window[:2], 0),
        ops.less_equal(window[:2] + window[2:], shape[:2])))
    from shardflow.check_ops import _check
    check = _check(ops.logical_and(fits, array_ops.reduce_all(ops.greater(window[2:], 0))),
                   "decode_and_crop_jpeg: the crop window must lie within the image",
                   None, "DecodeAndCropJpeg", [window, shape])
    with image.graph.control_dependencies([check]):
        begin = ops.concat([window[:2], [0]], 0)
        size = ops.concat([window[2:], [-1]], 0)
        out = ops.slice(image, begin, size, name=name)
    out.set_shape([None, None, channels or None])
    return out


def extract_jpeg_shape(contents, output_type=dtypes.int32, name=None):
    """The [height, width, channels] of a JPEG image without decoding it all."""
    image_mod = _pil()
    out_type = dtypes.as_dtype(output_type)

    def run(raw):
        img = image_mod.open(io.BytesIO(_as_bytes(raw)))
        if img.format != "JPEG":
            raise ValueError("extract_jpeg_shape: the contents are %s, not JPEG" % img.format)
        return np.array([img.height, img.width, len(img.getbands())],
                        out_type.as_numpy_dtype)
    out = py_func(run, [convert_to_tensor(contents, dtype=dtypes.string)], out_type,
                  stateful=False, name=name or "ExtractJpegShape")
    out.set_shape([3])
    return out


def is_jpeg(contents, name=None):
    """Whether the bytes start with JPEG's marker (FF D8 FF), as TF1's tf.image.is_jpeg."""
    def run(raw):
        return np.array(_as_bytes(raw)[:3] == b"\xff\xd8\xff")
    out = py_func(run, [convert_to_tensor(contents, dtype=dtypes.string)], dtypes.bool_,
                  stateful=False, name=name or "is_jpeg")
    out.set_shape([])
    return out


def decode_bmp(contents, channels=0, name=None):
    """A [h, w, channels] uint8 image from BMP bytes."""
    return _decode(contents, channels, dtypes.uint8, ("BMP",), "DecodeBmp", name)


def decode_gif(contents, name=None):
    """Every frame of a GIF: uint8 [num_frames, h, w, 3], as TF1's tf.image.decode_gif."""
    image_mod = _pil()

    def run(raw):
        img = image_mod.open(io.BytesIO(_as_bytes(raw)))
        if img.format != "GIF":
            raise ValueError("decode_gif: the contents are %s, not GIF" % img.format)
        frames = []
        for k in range(getattr(img, "n_frames", 1)):
            img.seek(k)
            frames.append(np.asarray(img.convert("RGB")))
        return np.stack(frames).astype(np.uint8)
    out = py_func(run, [convert_to_tensor(contents, dtype=dtypes.string)], dtypes.uint8,
                  stateful=False, name=name or "DecodeGif")
    out.set_shape([None, None, None, 3])
    return out


def adjust_jpeg_quality(image, jpeg_quality, name=None):
    """The [h, w, channels] image after a JPEG round trip at jpeg_quality (0 to 100, an int or
    an int32 scalar tensor), in its own dtype, as TF1's: converted to uint8
    (convert_image_dtype), encoded, decoded and converted back."""
    from shardflow.image import convert_image_dtype
    image_mod = _pil()
    x = convert_to_tensor(image)
    if x.shape.ndims not in (None, 3):
        raise ValueError("adjust_jpeg_quality takes a [height, width, channels] image, got shape "
                         "%s" % x.shape)
    quality = ops.cast(convert_to_tensor(jpeg_quality), dtypes.int32)

    def run(arr, q):
        arr = np.asarray(arr)
        if not 0 <= int(q) <= 100:
            raise ValueError("adjust_jpeg_quality: jpeg_quality must be in [0, 100], got %d"
                             % int(q))
        gray = arr.shape[2] == 1
        buf = io.BytesIO()
        image_mod.fromarray(arr[:, :, 0] if gray else arr).save(buf, format="JPEG",
                                                                quality=int(q))
        out = np.asarray(image_mod.open(io.BytesIO(buf.getvalue())))
        return (out[:, :, None] if gray else out).astype(np.uint8)
    as_uint8 = convert_image_dtype(x, dtypes.uint8)
    out = py_func(run, [as_uint8, quality], dtypes.uint8, stateful=False,
                  name=name or "AdjustJpegQuality")
    out.set_shape(x.shape)
    return convert_image_dtype(out, x.dtype)


def random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed=None):
    """adjust_jpeg_quality at a quality drawn uniformly from [min_jpeg_quality,
    max_jpeg_quality) each run (TF1's; 0 <= min < max <= 100)."""
    if not (0 <= min_jpeg_quality <= 100 and 0 <= max_jpeg_quality <= 100):
        raise ValueError("jpeg encoding range must be between 0 and 100.")
    if min_jpeg_quality >= max_jpeg_quality:
        raise ValueError("`min_jpeg_quality` must be less than `max_jpeg_quality`.")
    quality = ops.random_uniform([], int(min_jpeg_quality), int(max_jpeg_quality),
                                 dtype=dtypes.int32, seed=seed)
    return adjust_jpeg_quality(image, quality)


def _encode(image, fmt, options, what, name):
    image_mod = _pil()
    x = convert_to_tensor(image)
    if x.shape.ndims not in (None, 3) or (x.shape.ndims == 3 and
                                          x.shape.as_list()[2] not in (None, 1, 3, 4)):
        raise ValueError("%s takes a [height, width, channels] image with 1, 3 or 4 channels, "
                         "got shape %s" % (what, x.shape))

    def run(arr):
        arr = np.asarray(arr)
        if arr.shape[2] == 1:
            arr = arr[:, :, 0]
        buf = io.BytesIO()
        image_mod.fromarray(arr).save(buf, format=fmt, **options)
        return np.array(buf.getvalue(), dtype=object)
    out = py_func(run, [x], dtypes.string, stateful=False, name=name or what)
    out.set_shape([])
    return out


def encode_png(image, compression=-1, name=None):
    """PNG bytes (a scalar string) of a uint8 [h, w, channels] image."""
    level = 6 if compression in (-1, None) else int(compression)
    return _encode(image, "PNG", {"compress_level": level}, "EncodePng", name)


def encode_jpeg(image, format="", quality=95, progressive=False,  # noqa: A002
                optimize_size=False, chroma_downsampling=True, density_unit="in",
                x_density=300, y_density=300, xmp_metadata="", name=None):
    """JPEG bytes (a scalar string) of a uint8 [h, w, 1 or 3] image."""
    options = {"quality": int(quality), "progressive": bool(progressive),
               "optimize": bool(optimize_size), "dpi": (int(x_density), int(y_density)),
               "subsampling": 2 if chroma_downsampling else 0}
    return _encode(image, "JPEG", options, "EncodeJpeg", name)


__all__ = ["adjust_jpeg_quality", "decode_and_crop_jpeg", "decode_bmp", "decode_gif",
           "decode_image", "decode_jpeg", "decode_png", "encode_jpeg", "encode_png",
           "extract_jpeg_shape", "is_jpeg", "random_jpeg_quality"]
