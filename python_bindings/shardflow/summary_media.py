"""TF1's tf.summary.image, audio, text and tensor_summary (the encoders: PNG and WAV, in pure
Python). Each makes a fetchable summary, as summary.scalar does (Note [Summaries on the
client] in summary.py): the tensor is fetched and its value encoded into Summary.Value messages
(summary_pb.py) in the client.

Example::

    sf.summary.image("inputs", images, max_outputs=2)   # tags "inputs/image/0", ".../1"
    sf.summary.audio("wave", clips, sample_rate=16000)   # float32 [batch, frames(, channels)]
    sf.summary.text("note", sf.constant("hello"))
    merged = sf.summary.merge_all()

Images follow TF's image summary op: uint8 as they are; floats rescaled per image, by
255 / max when no value is negative, else by 127 / max|value| around 128 (then truncated to
uint8); non-finite pixels painted bad_color (red). Audio is 16-bit PCM WAV: each sample,
clipped to [-1, 1], times 32768, rounded.
"""

import io
import struct
import wave
import zlib

import numpy as np

from shardflow.framework import convert_to_tensor, get_default_graph
from shardflow.summary import SUMMARIES, _Summary, _tag
from shardflow.summary_pb import Summary, SummaryMetadata, TensorProto, TensorShapeProto

# TensorFlow's DataType enum values (types.proto), by NumPy dtype name.
_DATA_TYPE = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
              "int64": 9, "bool": 10, "uint16": 17, "float16": 19, "uint32": 22, "uint64": 23}
_DT_STRING = 7


def encode_png(pixels):
    """PNG bytes of a uint8 array [height, width, channels] (channels 1, 2, 3 or 4)."""
    pixels = np.ascontiguousarray(pixels, np.uint8)
    height, width, channels = pixels.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}.get(channels)
    if color_type is None:
        raise ValueError("encode_png: an image has 1, 2, 3 or 4 channels, not %d" % channels)
    rows = np.concatenate([np.zeros((height, 1), np.uint8),   # filter type 0 on every row
                           pixels.reshape(height, width * channels)], axis=1)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def encode_wav(samples, sample_rate):
    """16-bit PCM WAV bytes of float samples [frames, channels] in [-1, 1]."""
    samples = np.asarray(samples, np.float32)
    pcm = np.clip(np.round(samples * 32768.0), -32768, 32767).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(samples.shape[1])
        w.setsampwidth(2)
        w.setframerate(int(sample_rate))
        w.writeframes(pcm.tobytes())
    return out.getvalue()


def _to_uint8(image, bad_color):
    """One image [h, w, c] as uint8, as TF's image summary op rescales floats."""
    if image.dtype == np.uint8:
        return image
    image = image.astype(np.float32)
    finite = np.isfinite(image).all(axis=-1)
    values = image[finite]
    lo = values.min() if values.size else 0.0
    hi = values.max() if values.size else 0.0
    if lo < 0:
        top = max(abs(lo), abs(hi))
        scale, offset = (0.0 if top < 1e-6 else 127.0 / top), 128.0
    else:
        scale, offset = (0.0 if hi < 1e-6 else 255.0 / hi), 0.0
    with np.errstate(invalid="ignore"):
        out = (image * scale + offset).astype(np.uint8)
    out[~finite] = bad_color[:image.shape[-1]]
    return out


def _register(summary, collections):
    for c in collections or [SUMMARIES]:
        get_default_graph().add_to_collection(c, summary)
    return summary


def _numbered(tag, kind, max_outputs, count):
    """The tags of `count` items, as TF's image and audio summary ops: "<tag>/<kind>" when
    max_outputs is 1, else "<tag>/<kind>/<i>" (however many the batch holds)."""
    return ["%s/%s" % (tag, kind)] if max_outputs == 1 else \
        ["%s/%s/%d" % (tag, kind, i) for i in range(count)]


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """Images of a 4-D tensor [batch, height, width, channels] (channels 1, 3 or 4; uint8, or
    float rescaled as the module says): the first `max_outputs`, as PNGs tagged
    "<name>/image" when max_outputs is 1, else "<name>/image/<i>" (as TF's)."""
    tensor = convert_to_tensor(tensor)
    shape = tensor.shape
    if shape.ndims is not None and shape.ndims != 4:
        raise ValueError("summary.image(%r): the tensor is [batch, height, width, channels], "
                         "not of rank %d" % (name, shape.ndims))
    tag = _tag(name, family)
    bad_color = np.array([255, 0, 0, 255], np.uint8)

    def serialize(values):
        batch = np.asarray(values[0])[:max_outputs]
        if batch.ndim != 4 or batch.shape[-1] not in (1, 3, 4):
            raise ValueError("summary.image(%r): got a value of shape %s; want [batch, height, "
                             "width, 1|3|4]" % (name, list(batch.shape)))
        out = Summary()
        for t, img in zip(_numbered(tag, "image", max_outputs, len(batch)), batch):
            pixels = _to_uint8(img, bad_color)
            out.value.add(tag=t, image=Summary.Image(
                height=img.shape[0], width=img.shape[1], colorspace=img.shape[2],
                encoded_image_string=encode_png(pixels)))
        return out.SerializeToString()
    return _register(_Summary([tensor], serialize, tag), collections)


def audio(name, tensor, sample_rate, max_outputs=3, collections=None, family=None):
    """Audio clips of a float tensor [batch, frames] or [batch, frames, channels] with values
    in [-1, 1], at `sample_rate` Hz (a number or scalar tensor): the first `max_outputs`, as
    WAV files tagged "<name>/audio" when max_outputs is 1, else "<name>/audio/<i>"."""
    tensor = convert_to_tensor(tensor)
    tag = _tag(name, family)
    fetches = [tensor]
    if not isinstance(sample_rate, (int, float)):
        fetches.append(convert_to_tensor(sample_rate))

    def serialize(values):
        batch = np.asarray(values[0], np.float32)[:max_outputs]
        rate = float(np.asarray(values[1])) if len(values) > 1 else float(sample_rate)
        if batch.ndim == 2:
            batch = batch[:, :, None]
        if batch.ndim != 3:
            raise ValueError("summary.audio(%r): the tensor is [batch, frames(, channels)], "
                             "not of shape %s" % (name, list(batch.shape)))
        out = Summary()
        for t, clip in zip(_numbered(tag, "audio", max_outputs, len(batch)), batch):
            out.value.add(tag=t, audio=Summary.Audio(
                sample_rate=rate, num_channels=clip.shape[1], length_frames=clip.shape[0],
                encoded_audio_string=encode_wav(clip, rate), content_type="audio/wav"))
        return out.SerializeToString()
    return _register(_Summary(fetches, serialize, tag), collections)


def make_tensor_proto(value):
    """A TensorProto of an ndarray: strings in string_val, other types in tensor_content
    (little-endian), as TF's summary ops write them."""
    value = np.asarray(value)
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in value.shape])
    if value.dtype.kind in "OSU":
        flat = [v if isinstance(v, bytes) else str(v).encode() for v in value.ravel()]
        return TensorProto(dtype=_DT_STRING, tensor_shape=shape, string_val=flat)
    dtype = _DATA_TYPE.get(value.dtype.name)
    if dtype is None:
        raise TypeError("a tensor summary of dtype %s is not supported" % value.dtype.name)
    content = value.astype(value.dtype.newbyteorder("<")).tobytes()
    return TensorProto(dtype=dtype, tensor_shape=shape, tensor_content=content)


def tensor_summary(name, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family=None, display_name=None):
    """The whole value of `tensor` as a TensorProto, tagged `name`; `summary_metadata` (a
    SummaryMetadata) or display_name / summary_description describe it."""
    tensor = convert_to_tensor(tensor)
    tag = _tag(name, family)
    metadata = SummaryMetadata()
    if summary_metadata is not None:
        metadata.CopyFrom(summary_metadata)
    if display_name is not None:
        metadata.display_name = display_name
    if summary_description is not None:
        metadata.summary_description = summary_description

    def serialize(values):
        out = Summary()
        out.value.add(tag=tag, metadata=metadata, tensor=make_tensor_proto(values[0]))
        return out.SerializeToString()
    return _register(_Summary([tensor], serialize, tag), collections)


def text(name, tensor, collections=None):
    """A string tensor as text for TensorBoard's text plugin (a tensor summary whose metadata
    names the "text" plugin)."""
    tensor = convert_to_tensor(tensor)
    if tensor.dtype.name != "string":
        raise ValueError("summary.text(%r) takes a string tensor, not %s" % (
            name, tensor.dtype.name))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name, tensor, collections=collections, summary_metadata=metadata)


__all__ = ["audio", "encode_png", "encode_wav", "image", "make_tensor_proto", "tensor_summary",
           "text"]
