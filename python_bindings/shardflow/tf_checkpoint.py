"""TensorFlow's own checkpoint format ("V2": `<prefix>.index` and `<prefix>.data-00000-of-00001`),
read wherever shardflow reads a checkpoint (Saver.restore, init_from_checkpoint, warm_start,
NewCheckpointReader, list_variables, Estimator warm starts), so that checkpoints written by
TensorFlow 1.x (a model zoo's, or a job's before it moved here) load as they are:

    saver.restore(sess, "/models/tf1/model.ckpt-20000")      # model.ckpt-20000.index beside it
    sf.train.init_from_checkpoint("/models/bert", {"bert/": "bert/"})

`write(prefix, items)` writes the format (whole tensors), so that a model trained here can go
back to TensorFlow (tf.train.Saver.restore, tf.train.load_variable).

The layout, from TensorFlow's tensor_bundle: the index is a LevelDB-format table (blocks of
prefix-compressed keys with restart points, each with a type byte and a masked CRC32C; a footer
with the index block's handle and a magic number) mapping "" to a BundleHeaderProto and each
tensor name to a BundleEntryProto (dtype, shape, shard, offset, size, masked CRC32C of the bytes;
for a partitioned variable, its slices instead, each stored under an encoded key). A data file
holds the tensors' bytes, little-endian; a string tensor is its lengths (varint64), a masked
CRC32C of them, then the bytes.

Every byte is untrusted: each length and offset is checked against what the file holds before
it is used, checksums are verified, and a damaged file is a DataLossError naming it and what
is wrong. Not read: Snappy-compressed index blocks (TensorFlow writes none), big-endian
bundles, and entries of types with no NumPy equivalent (resources, variants, quantized types;
left out with a warning). bfloat16 tensors read as float32.
"""

import os
import struct

import numpy as np

from shardflow import errors
from shardflow import tf_logging as logging
from shardflow.wire_format import masked_crc32c, read_fields, read_varint, varint

_MAGIC = 0xdb4775248b80fb57
_FOOTER = 48
_BLOCK_TRAILER = 5   # type byte and masked CRC32C

# TensorFlow's DataType enum -> NumPy (strings are object arrays of bytes).
_DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8,
           7: object, 8: np.complex64, 9: np.int64, 10: np.bool_, 14: "bfloat16",
           17: np.uint16, 18: np.complex128, 19: np.float16, 22: np.uint32, 23: np.uint64}


def is_tf_checkpoint(prefix):
    """Whether `prefix` names a TensorFlow checkpoint (its .index exists, it is no file)."""
    prefix = str(prefix)
    return not os.path.isfile(prefix) and os.path.isfile(prefix + ".index")


class _Corrupt(Exception):
    pass


def _varint(data, pos, limit=None):
    """(value, next position) of the varint at data[pos]."""
    try:
        return read_varint(data, pos, limit)
    except ValueError as e:
        raise _Corrupt(str(e)) from None


def _fields(data):
    """{field number: [values]} of a protobuf message: varints and fixed numbers as ints,
    length-delimited fields as bytes."""
    out = {}
    try:
        for number, wire, value in read_fields(data):
            if wire == 1:
                value = struct.unpack("<Q", value)[0]
            elif wire == 5:
                value = struct.unpack("<I", value)[0]
            out.setdefault(number, []).append(value)
    except ValueError as e:
        raise _Corrupt(str(e)) from None
    return out


def _int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _entry(raw):
    """A BundleEntryProto as a dict: dtype, shape (None for an unknown one), shard, offset,
    size, crc, slices ([(start, length) per dimension], length -1 for the whole dimension)."""
    f = _fields(raw)
    shape = None
    if 2 in f:
        s = _fields(f[2][-1])
        if not (s.get(3) and s[3][-1]):
            shape = [_int64(_fields(d).get(1, [0])[-1]) for d in s.get(2, [])]
    slices = []
    for sl in f.get(7, []):
        extents = []
        for e in _fields(sl).get(1, []):
            ef = _fields(e)
            extents.append((_int64(ef.get(1, [0])[-1]), _int64(ef.get(2, [-1])[-1])))
        slices.append(extents)
    return {"dtype": f.get(1, [0])[-1], "shape": shape, "shard": f.get(3, [0])[-1],
            "offset": _int64(f.get(4, [0])[-1]), "size": _int64(f.get(5, [0])[-1]),
            "crc": f.get(6, [0])[-1], "slices": slices}


def _block(data, offset, size, what):
    """The contents of the block at (offset, size), its checksum verified."""
    if offset < 0 or size < 0 or offset + size + _BLOCK_TRAILER > len(data):
        raise _Corrupt("the %s block (%d bytes at %d) lies past the file's %d bytes"
                       % (what, size, offset, len(data)))
    contents = data[offset:offset + size]
    kind = data[offset + size]
    stored = struct.unpack_from("<I", data, offset + size + 1)[0]
    if masked_crc32c(contents + bytes([kind])) != stored:
        raise _Corrupt("the %s block's checksum does not match" % what)
    if kind != 0:
        raise _Corrupt("the %s block is compressed (type %d); only uncompressed tables are "
                       "read" % (what, kind))
    return contents


def _block_entries(block):
    """(key, value) of each entry of a table block."""
    if len(block) < 4:
        raise _Corrupt("a block of %d bytes" % len(block))
    restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * restarts
    if end < 0:
        raise _Corrupt("a block's %d restart points do not fit it" % restarts)
    pos, key = 0, b""
    while pos < end:
        shared, pos = _varint(block, pos, end)
        unshared, pos = _varint(block, pos, end)
        length, pos = _varint(block, pos, end)
        if shared > len(key) or pos + unshared + length > end:
            raise _Corrupt("a table entry runs past its block")
        key = key[:shared] + bytes(block[pos:pos + unshared])
        pos += unshared
        yield key, bytes(block[pos:pos + length])
        pos += length


def _handle(data, pos):
    offset, pos = _varint(data, pos)
    size, pos = _varint(data, pos)
    return offset, size, pos


def _index_entries(index_path):
    with open(index_path, "rb") as f:
        data = f.read()
    if len(data) < _FOOTER:
        raise _Corrupt("%d bytes, fewer than a table's footer" % len(data))
    footer = len(data) - _FOOTER
    if struct.unpack_from("<Q", data, len(data) - 8)[0] != _MAGIC:
        raise _Corrupt("no table magic number at its end (not a TensorFlow checkpoint index)")
    _, _, pos = _handle(data, footer)               # the metaindex block: nothing needed
    offset, size, _ = _handle(data, pos)
    for _, value in _block_entries(_block(data, offset, size, "index")):
        block_offset, block_size, _ = _handle(value, 0)
        yield from _block_entries(_block(data, block_offset, block_size, "data"))


def _slice_key_name(key):
    """The tensor name in a slice's key (TensorFlow's OrderedCode: a 0, then the name with
    0x00 and 0xff escaped, ended by 0x00 0x01)."""
    out, pos = bytearray(), 1
    while pos + 1 < len(key):
        b, nxt = key[pos], key[pos + 1]
        if b == 0x00 and nxt == 0x01:
            return bytes(out)
        if b == 0x00 and nxt == 0xff:
            out.append(0x00)
            pos += 2
        elif b == 0xff and nxt == 0x00:
            out.append(0xff)
            pos += 2
        else:
            out.append(b)
            pos += 1
    raise _Corrupt("a slice key without its name's end")


class _DataFiles:
    def __init__(self, prefix, shards):
        self._prefix, self._shards, self._open = prefix, shards, {}

    def read(self, shard, offset, size):
        if not 0 <= shard < self._shards:
            raise _Corrupt("an entry in data shard %d of %d" % (shard, self._shards))
        f = self._open.get(shard)
        if f is None:
            path = "%s.data-%05d-of-%05d" % (self._prefix, shard, self._shards)
            try:
                f = self._open[shard] = open(path, "rb")
            except OSError as e:
                raise errors.NotFoundError("TensorFlow checkpoint %s: cannot open its data file "
                                           "%s: %s" % (self._prefix, path, e)) from None
        total = os.fstat(f.fileno()).st_size
        if offset < 0 or size < 0 or offset + size > total:
            raise _Corrupt("%d bytes at %d of a %d-byte data file" % (size, offset, total))
        f.seek(offset)
        return f.read(size)

    def close(self):
        for f in self._open.values():
            f.close()


def _value(entry, raw, name):
    """The ndarray an entry's bytes hold."""
    kind, shape = _DTYPES[entry["dtype"]], entry["shape"]
    if shape is None or any(d < 0 for d in shape):
        raise _Corrupt("tensor %s has shape %s" % (name, shape))
    count = 1
    for d in shape:
        count *= d
    if kind is object:
        return _strings(raw, count, entry["crc"], name).reshape(shape)
    if masked_crc32c(raw) != entry["crc"]:
        raise _Corrupt("tensor %s: its bytes do not match their checksum" % name)
    itemsize = 2 if kind == "bfloat16" else np.dtype(kind).itemsize
    if len(raw) != count * itemsize:
        raise _Corrupt("tensor %s of shape %s has %d bytes, not %d" % (
            name, shape, len(raw), count * itemsize))
    if kind == "bfloat16":   # the high halves of float32s
        halves = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return halves.view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=np.dtype(kind).newbyteorder("<")).astype(kind).reshape(
        shape)


def _strings(raw, count, stored_crc, name):
    lengths, pos, crc_input = [], 0, bytearray()
    for _ in range(count):
        n, pos = _varint(raw, pos)
        lengths.append(n)
        crc_input += struct.pack("<I", n) if n <= 0xffffffff else struct.pack("<Q", n)
    if pos + 4 > len(raw):
        raise _Corrupt("string tensor %s ends within its lengths" % name)
    length_crc = struct.unpack_from("<I", raw, pos)[0]
    if masked_crc32c(bytes(crc_input)) != length_crc:
        raise _Corrupt("string tensor %s: its lengths do not match their checksum" % name)
    crc_input += raw[pos:pos + 4]
    pos += 4
    if pos + sum(lengths) != len(raw):
        raise _Corrupt("string tensor %s holds %d bytes of strings, not %d"
                       % (name, len(raw) - pos, sum(lengths)))
    out = np.empty(count, dtype=object)
    for i, n in enumerate(lengths):
        out[i] = bytes(raw[pos:pos + n])
        pos += n
    if masked_crc32c(bytes(crc_input) + bytes(raw[pos - sum(lengths):pos])) != stored_crc:
        raise _Corrupt("string tensor %s: its bytes do not match their checksum" % name)
    return out


def read(prefix):
    """[(name, ndarray)] of every tensor of the TensorFlow checkpoint `prefix`, sorted by name
    (a partitioned variable's slices put together). NotFoundError without its files,
    DataLossError when they are damaged."""
    prefix = str(prefix)
    index = prefix + ".index"
    if not os.path.isfile(index):
        raise errors.NotFoundError("TensorFlow checkpoint %s: no index file %s" % (prefix,
                                                                                  index))
    files = None
    try:
        entries, slice_parts = {}, {}
        header = None
        for key, value in _index_entries(index):
            if key == b"":
                header = _fields(value)
            elif key[:1] == b"\x00":
                slice_parts.setdefault(_slice_key_name(key), []).append((key, _entry(value)))
            else:
                entries[key.decode("utf-8", "replace")] = _entry(value)
        if header is None:
            raise _Corrupt("no header entry")
        if header.get(2, [0])[-1] != 0:
            raise _Corrupt("a big-endian bundle")
        files = _DataFiles(prefix, max(1, header.get(1, [1])[-1]))
        out = []
        for name, entry in sorted(entries.items()):
            if not isinstance(entry["dtype"], int):
                raise _Corrupt("tensor %s's dtype field is not a number" % name)
            if entry["dtype"] not in _DTYPES:
                logging.warning("TensorFlow checkpoint %s: tensor %s is of TensorFlow type %d, "
                                "which has no NumPy equivalent; left out", prefix, name,
                                entry["dtype"])
                continue
            if entry["slices"]:
                out.append((name, _assembled(name, entry, slice_parts.get(name.encode(), []),
                                             files)))
            else:
                out.append((name, _value(entry, files.read(entry["shard"], entry["offset"],
                                                          entry["size"]), name)))
        return out
    except _Corrupt as e:
        raise errors.DataLossError("TensorFlow checkpoint %s is damaged: %s" % (prefix, e)) \
            from None
    finally:
        if files is not None:
            files.close()


def _assembled(name, entry, parts, files):
    """A partitioned variable's whole value from its slices. The slices' keys sort as their
    starts do (OrderedCode keeps the order), so the entry's slices, sorted by start, are the
    parts in key order."""
    shape = entry["shape"]
    if shape is None or any(d < 0 for d in shape):
        raise _Corrupt("partitioned tensor %s has shape %s" % (name, shape))
    slices = sorted(entry["slices"], key=lambda s: [st for st, _ in s])
    parts = sorted(parts, key=lambda p: p[0])
    if len(parts) != len(slices):
        raise _Corrupt("partitioned tensor %s lists %d slices but %d are stored"
                       % (name, len(slices), len(parts)))
    placed = []   # (index, value): every part read (each bounded by its file) first
    for extents, (_, part) in zip(slices, parts):
        if len(extents) != len(shape):
            raise _Corrupt("a slice of %s has %d dimensions, not %d" % (name, len(extents),
                                                                         len(shape)))
        index = []
        for (start, length), dim in zip(extents, shape):
            length = dim if length < 0 else length
            if start < 0 or start + length > dim:
                raise _Corrupt("a slice of %s lies outside its shape %s" % (name, shape))
            index.append(slice(start, start + length))
        value = _value(part, files.read(part["shard"], part["offset"], part["size"]), name)
        if list(value.shape) != [s.stop - s.start for s in index]:
            raise _Corrupt("a slice of %s holds shape %s for %s" % (name, list(value.shape),
                                                                    index))
        placed.append((tuple(index), value))
    count = 1
    for d in shape:
        count *= d
    if sum(v.size for _, v in placed) != count:
        raise _Corrupt("the slices of %s hold %d of its %d elements"
                       % (name, sum(v.size for _, v in placed), count))
    whole = np.zeros(shape, dtype=placed[0][1].dtype if placed else np.float32)
    covered = np.zeros(shape, dtype=bool)   # as many elements as the parts: two must not overlap
    for index, value in placed:
        if covered[index].any():
            raise _Corrupt("two slices of %s overlap (at %s)" % (name, index))
        covered[index] = True
        whole[index] = value
    return whole


# ---- writing -------------------------------------------------------------------------------


def _field(number, wire, payload):
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(payload & 0xffffffffffffffff)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + struct.pack("<I", payload)   # wire 5


_ENUMS = {np.dtype(v): k for k, v in _DTYPES.items() if v not in (object, "bfloat16")}


def _tensor_bytes(value):
    """(TensorFlow dtype, the bytes, their masked CRC32C) of an array."""
    if value.dtype == object or value.dtype.kind in "SU":
        items = [v.encode() if isinstance(v, str) else bytes(v) for v in value.ravel()]
        lengths = b"".join(varint(len(s)) for s in items)
        crc_input = b"".join(struct.pack("<I", len(s)) if len(s) <= 0xffffffff
                             else struct.pack("<Q", len(s)) for s in items)
        length_crc = struct.pack("<I", masked_crc32c(crc_input))
        data = b"".join(items)
        return 7, lengths + length_crc + data, masked_crc32c(crc_input + length_crc + data)
    kind = _ENUMS.get(value.dtype)
    if kind is None:
        raise ValueError("a TensorFlow checkpoint cannot hold %s" % value.dtype)
    raw = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()
    return kind, raw, masked_crc32c(raw)


def _table_block(entries):
    """A table block of (key, value) entries, each a restart point (no shared prefixes)."""
    encoded = [varint(0) + varint(len(k)) + varint(len(v)) + k + v for k, v in entries]
    offsets, pos = [], 0
    for e in encoded:
        offsets.append(pos)
        pos += len(e)
    restarts = b"".join(struct.pack("<I", o) for o in offsets) or struct.pack("<I", 0)
    return b"".join(encoded) + restarts + struct.pack("<I", max(1, len(entries)))


def write(prefix, items):
    """Writes [(name, array)] as the TensorFlow checkpoint `prefix` (`prefix`.index and
    `prefix`.data-00000-of-00001), which TensorFlow 1.x's tf.train.Saver restores."""
    prefix = str(prefix)
    data, index = bytearray(), []
    for name, value in sorted(items, key=lambda kv: kv[0]):
        value = np.asarray(value)
        kind, raw, crc = _tensor_bytes(value)
        dims = b"".join(_field(2, 2, _field(1, 0, d)) for d in value.shape)
        entry = (_field(1, 0, kind) + _field(2, 2, dims) + _field(4, 0, len(data)) +
                 _field(5, 0, len(raw)) + _field(6, 5, crc))
        index.append((name.encode(), entry))
        data += raw
    header = _field(1, 0, 1) + _field(3, 2, _field(1, 0, 1))   # one shard, little, version 1
    entries = [(b"", header)] + index
    out = bytearray()

    def add_block(contents):
        offset = len(out)
        out.extend(contents + b"\x00")
        out.extend(struct.pack("<I", masked_crc32c(bytes(contents) + b"\x00")))
        return varint(offset) + varint(len(contents))
    data_handle = add_block(_table_block(entries))
    meta_handle = add_block(_table_block([]))
    index_handle = add_block(_table_block([(entries[-1][0], data_handle)]))
    footer = meta_handle + index_handle
    out.extend(footer + b"\x00" * (40 - len(footer)) + struct.pack("<Q", _MAGIC))
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    for path, content in (("%s.data-00000-of-00001" % prefix, bytes(data)),
                          (prefix + ".index", bytes(out))):
        with open(path + ".tmp", "wb") as f:
            f.write(content)
        os.replace(path + ".tmp", path)


def read_checkpoint(path):
    """[(name, array)] of the checkpoint at `path`: shardflow's format, or TensorFlow's when
    `path` is the prefix of one."""
    from shardflow import _shardflow, errors
    try:
        if is_tf_checkpoint(path):
            return read(path)
        return _shardflow.load_checkpoint(str(path))
    except errors.OpError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, MemoryError,
            UnicodeDecodeError, struct.error) as e:
        # A crafted file can be well framed and checksummed and still describe something no
        # array can be (a rank of 33, 2^62 elements, a name that is not UTF-8): its error, not
        # the reader's.
        raise errors.DataLossError("checkpoint %s is damaged or not a checkpoint: %s: %s"
                                   % (path, type(e).__name__, e)) from None
