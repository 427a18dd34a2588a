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


__all__ = ["crc32c", "masked_crc32c", "varint"]
