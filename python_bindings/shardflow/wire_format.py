"""Protocol-buffer wire-format pieces for the modules that write TensorFlow's own messages by
hand (summaries and events: summary.py; serialize_tensor: parsing_ops.py; checkpoint indexes:
tf_checkpoint.py), and the masked CRC32C that TFRecords, event files and checkpoints carry."""

from shardflow.tfrecord import crc32c, masked_crc32c  # noqa: F401 (re-exported)


def varint(n):
    """`n` as a protobuf varint (negative numbers as their 64-bit two's complement)."""
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(data, pos, limit=None):
    """(value, position after it) of the varint at data[pos]; ValueError when it runs past
    `limit` (default the end) or past 10 bytes."""
    limit = len(data) if limit is None else limit
    shift = result = 0
    while True:
        if pos >= limit:
            raise ValueError("truncated varint (at byte %d)" % pos)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("a varint longer than 10 bytes")


def read_fields(data):
    """(number, wire type, value) of each field of a protobuf message: an int for varints,
    bytes for fixed64, fixed32 and length-delimited fields; ValueError on a truncated field
    or an unknown wire type."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        elif wire == 2:
            length, pos = read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        else:
            raise ValueError("unsupported wire type %d" % wire)
        if pos > len(data):
            raise ValueError("truncated field %d" % number)
        yield number, wire, value


__all__ = ["crc32c", "masked_crc32c", "read_fields", "read_varint", "varint"]
