"""TensorFlow's checkpoint format (shardflow/tf_checkpoint.py): every dtype read back as written;
Saver.restore, latest_checkpoint, init_from_checkpoint and list_variables on a TensorFlow
checkpoint; a partitioned variable stored as slices (TensorFlow's encoded slice keys) restored
into another partitioning; damaged files are DataLossError naming what is wrong."""

import os
import struct

import numpy as np
import pytest

import shardflow as tf
from shardflow import tf_checkpoint as tc


def _items():
    return [("dense/kernel", np.arange(6, dtype=np.float32).reshape(2, 3)),
            ("dense/bias", np.array([0.5, -1.5, 2.0], np.float32)),
            ("global_step", np.array(7, np.int64)),
            ("words", np.array([b"a", b"", b"xyz" * 100], dtype=object)),
            ("flags", np.array([True, False])), ("half", np.ones(3, np.float16)),
            ("d", np.array([[1.5]], np.float64)), ("i8", np.array([-3, 4], np.int8)),
            ("empty", np.zeros((0, 4), np.float32))]


def test_every_dtype_reads_back_as_written(tmp_path):
    prefix = str(tmp_path / "model.ckpt-7")
    tc.write(prefix, _items())
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt-7.data-00000-of-00001",
                                            "model.ckpt-7.index"]
    assert tc.is_tf_checkpoint(prefix) and not tc.is_tf_checkpoint(prefix + ".index")
    got = dict(tc.read(prefix))
    for name, value in _items():
        assert got[name].dtype == value.dtype and got[name].shape == value.shape, name
        np.testing.assert_array_equal(got[name], value)


def test_saver_and_readers_take_a_tensorflow_checkpoint(tmp_path):
    # As a TF1 job leaves it: the checkpoint files and TF's "checkpoint" state file.
    tc.write(str(tmp_path / "model.ckpt-7"), _items())
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-7"\n'
                                         'all_model_checkpoint_paths: "model.ckpt-7"\n')
    path = tf.train.latest_checkpoint(str(tmp_path))
    assert path == str(tmp_path / "model.ckpt-7") and tf.train.checkpoint_exists(path)
    assert dict(tf.train.list_variables(str(tmp_path)))["dense/kernel"] == [2, 3]
    reader = tf.train.NewCheckpointReader(path)
    assert reader.get_tensor("global_step") == 7
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        y = tf.layers.dense(x, 3, name="dense")
        step = tf.train.get_or_create_global_step()
        with tf.Session() as sess:
            tf.train.Saver([v for v in tf.global_variables()]).restore(sess, path)
            out, s = sess.run([y, step], {x: [[1.0, 1.0]]})
    np.testing.assert_allclose(out, [[3.5, 3.5, 9.0]])   # [1, 1] @ kernel + bias
    assert s == 7
    with tf.Graph().as_default():
        kernel = tf.get_variable("model/kernel", [2, 3])
        tf.train.init_from_checkpoint(str(tmp_path), {"dense/kernel": "model/kernel"})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(kernel), _items()[0][1])
    # And back: what shardflow writes this way is a TensorFlow checkpoint again.
    with tf.Graph().as_default():
        v = tf.Variable(np.full((2, 2), 3.0, np.float32), name="v")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tc.write(str(tmp_path / "out" / "m"), [("v", sess.run(v))])
    assert tf.train.load_variable(str(tmp_path / "out" / "m"), "v").sum() == 12.0


def _signed(n):
    """TensorFlow's OrderedCode of a small signed number (|n| < 64): one byte."""
    assert -64 <= n < 64
    return bytes([(0x80 ^ n) & 0xff])


def _slice_key(name, extents):
    escaped = name.encode().replace(b"\xff", b"\xff\x00").replace(b"\x00", b"\x00\xff")
    return (b"\x00" + escaped + b"\x00\x01" + bytes([1, len(extents)]) +
            b"".join(_signed(s) + _signed(n) for s, n in extents))


def _write_sliced(prefix, name, whole, rows_per_part, starts=None):
    """A checkpoint of `whole` as TensorFlow writes a partitioned variable: a full entry
    listing the slices, each slice under its encoded key (at `starts`, if given, instead of
    every rows_per_part rows)."""
    data, entries, slices = bytearray(), [], b""
    for start in starts or range(0, whole.shape[0], rows_per_part):
        part = whole[start:start + rows_per_part]
        _, raw, crc = tc._tensor_bytes(part)
        dims = b"".join(tc._field(2, 2, tc._field(1, 0, d)) for d in part.shape)
        entries.append((_slice_key(name, [(start, len(part)), (0, -1)]),
                        tc._field(1, 0, 1) + tc._field(2, 2, dims) +
                        tc._field(4, 0, len(data)) + tc._field(5, 0, len(raw)) +
                        tc._field(6, 5, crc)))
        data += raw
        extent = tc._field(1, 2, tc._field(1, 0, start) + tc._field(2, 0, len(part)))
        slices += tc._field(7, 2, extent + tc._field(1, 2, b""))
    dims = b"".join(tc._field(2, 2, tc._field(1, 0, d)) for d in whole.shape)
    full = (name.encode(), tc._field(1, 0, 1) + tc._field(2, 2, dims) + slices)
    header = (b"", tc._field(1, 0, 1) + tc._field(3, 2, tc._field(1, 0, 1)))
    table = sorted([header, full] + entries)
    out = bytearray()

    def block(contents):
        offset = len(out)
        out.extend(contents + b"\x00" + struct.pack("<I", tc.masked_crc32c(contents + b"\x00")))
        return tc.varint(offset) + tc.varint(len(contents))
    handle = block(tc._table_block(table))
    meta = block(tc._table_block([]))
    index = block(tc._table_block([(table[-1][0], handle)]))
    out.extend((meta + index).ljust(40, b"\x00") + struct.pack("<Q", tc._MAGIC))
    with open(prefix + ".index", "wb") as f:
        f.write(out)
    with open(prefix + ".data-00000-of-00001", "wb") as f:
        f.write(data)


def test_a_partitioned_variables_slices_restore_into_another_partitioning(tmp_path):
    whole = np.arange(30, dtype=np.float32).reshape(10, 3)
    prefix = str(tmp_path / "sliced")
    _write_sliced(prefix, "emb", whole, rows_per_part=4)   # slices of 4, 4 and 2 rows
    np.testing.assert_array_equal(dict(tc.read(prefix))["emb"], whole)
    with tf.Graph().as_default():
        emb = tf.get_variable("emb", [10, 3], partitioner=tf.fixed_size_partitioner(2))
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, prefix)
            np.testing.assert_array_equal(np.concatenate(sess.run(list(emb)), 0), whole)
    # Regression: slices that overlap (rows 3-4 twice, rows 8-9 never) as many elements as the
    # whole were read as a value with zeros in it.
    overlap = str(tmp_path / "overlap")
    _write_sliced(overlap, "emb", whole, rows_per_part=5, starts=[0, 3])
    with pytest.raises(tf.errors.DataLossError, match="overlap"):
        tc.read(overlap)


def test_damaged_tensorflow_checkpoints_are_data_loss_naming_the_problem(tmp_path):
    prefix = str(tmp_path / "m")
    tc.write(prefix, _items())
    data = prefix + ".data-00000-of-00001"
    raw = bytearray(open(data, "rb").read())
    raw[0] ^= 0x40   # a bit of "d", the first tensor by name
    open(data, "wb").write(bytes(raw))
    with pytest.raises(tf.errors.DataLossError,
                       match="tensor d: its bytes do not match their checksum"):
        tc.read(prefix)
    tc.write(prefix, _items())
    index = bytearray(open(prefix + ".index", "rb").read())
    for damage, match in ((lambda b: b[:30], "fewer than a table's footer"),
                          (lambda b: b[:-1] + b"\x00", "no table magic number"),
                          (lambda b: bytes([b[0] ^ 1]) + b[1:], "checksum does not match")):
        open(prefix + ".index", "wb").write(damage(bytes(index)))
        with pytest.raises(tf.errors.DataLossError, match=match):
            tf.train.NewCheckpointReader(prefix)
    tc.write(prefix, _items())
    os.remove(data)
    with pytest.raises(tf.errors.NotFoundError, match="cannot open its data file"):
        tc.read(prefix)
    # A data file shorter than the entries say.
    tc.write(prefix, _items())
    open(data, "r+b").truncate(10)
    with pytest.raises(tf.errors.DataLossError, match="bytes at .* of a 10-byte data file"):
        tc.read(prefix)


def test_random_damage_is_data_loss_or_a_correct_read(tmp_path):
    # Every byte of both files is untrusted: 300 random mutations (bytes flipped, files cut)
    # end in a DataLossError or in the values written, never in another exception.
    prefix = str(tmp_path / "m")
    tc.write(prefix, _items())
    paths = [prefix + ".index", prefix + ".data-00000-of-00001"]
    originals = [open(p, "rb").read() for p in paths]
    want = dict(_items())
    rng = np.random.RandomState(0)
    for trial in range(300):
        which = rng.randint(2)
        raw = bytearray(originals[which])
        if rng.rand() < 0.2:
            raw = raw[:rng.randint(len(raw))]
        else:
            for _ in range(rng.randint(1, 4)):
                raw[rng.randint(len(raw))] ^= 1 << rng.randint(8)
        open(paths[which], "wb").write(bytes(raw))
        try:
            got = dict(tc.read(prefix))
        except tf.errors.DataLossError:
            pass
        else:
            for name, value in want.items():
                np.testing.assert_array_equal(got[name], value)
        open(paths[which], "wb").write(originals[which])
