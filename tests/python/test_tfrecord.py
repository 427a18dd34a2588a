"""TFRecord files and tf.train.Example (shardflow/example_pb.py, tfrecord.py, parsing_ops.py,
data/sources.py's TFRecordDataset and FixedLengthRecordDataset)."""

import gzip
import struct

import numpy as np
import pytest

import shardflow as tf
from shardflow import example_pb, parsing_ops, tfrecord
from shardflow.data import FixedLengthRecordDataset, TFRecordDataset

pb = example_pb


def _example(x, label, tags):
    return pb.Example(features=pb.Features(feature={
        "x": pb.Feature(float_list=pb.FloatList(value=x)),
        "label": pb.Feature(int64_list=pb.Int64List(value=[label])),
        "tags": pb.Feature(bytes_list=pb.BytesList(value=tags)),
    })).SerializeToString()


def _write(path, records, options=None):
    with tfrecord.TFRecordWriter(str(path), options) as w:
        for r in records:
            w.write(r)
    return str(path)


def test_example_serializes_to_tensorflows_bytes():
    ex = pb.Example(features=pb.Features(feature={
        "x": pb.Feature(float_list=pb.FloatList(value=[1.0]))}))
    # Example.features (1, LEN 15) > Features.feature map entry (1, LEN 13) > key (1) "x",
    # value (2, LEN 8) > Feature.float_list (2, LEN 6) > FloatList.value packed (1, LEN 4) 1.0f
    expected = bytes.fromhex("0a0f" "0a0d" "0a0178" "1208" "1206" "0a04" "0000803f")
    assert ex.SerializeToString() == expected
    assert pb.Example.FromString(expected) == ex
    # int64 values are packed varints (two's complement, 10 bytes for -1); bytes are not packed
    f = pb.Feature(int64_list=pb.Int64List(value=[1, 300, -1]))
    assert f.SerializeToString() == bytes.fromhex("1a0f0a0d01ac02" + "ff" * 9 + "01")
    f = pb.Feature(bytes_list=pb.BytesList(value=[b"ab", b""]))
    assert f.SerializeToString() == bytes.fromhex("0a060a0261620a00")
    seq = pb.SequenceExample()
    seq.feature_lists.feature_list["a"].feature.add().bytes_list.value.append(b"hi")
    assert seq.SerializeToString() == bytes.fromhex("120f0a0d0a016112080a060a040a026869")
    assert pb.Example.DESCRIPTOR.full_name == "tensorflow.Example"
    assert [(f.name, f.number) for f in pb.Feature.DESCRIPTOR.fields] == [
        ("bytes_list", 1), ("float_list", 2), ("int64_list", 3)]


def test_crc32c_and_record_framing():
    assert tfrecord.crc32c(b"123456789") == 0xE3069283
    assert tfrecord.crc32c(b"") == 0
    data = b"hello"
    framed = tfrecord.encode_record(data)
    assert len(framed) == 8 + 4 + len(data) + 4
    assert struct.unpack("<Q", framed[:8])[0] == len(data)
    crc = tfrecord.crc32c(data)
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    assert struct.unpack("<I", framed[-4:])[0] == masked
    assert struct.unpack("<I", framed[8:12])[0] == tfrecord.masked_crc32c(framed[:8])


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_write_read_round_trip(tmp_path, compression):
    records = [b"", b"a", bytes(range(256)) * 3, b"last"]
    options = tfrecord.TFRecordOptions(compression)
    path = _write(tmp_path / "r.tfrecord", records, options)
    assert list(tfrecord.tf_record_iterator(path, options)) == records
    raw = open(path, "rb").read()
    if compression == "GZIP":
        assert raw[:2] == b"\x1f\x8b"
        assert gzip.decompress(raw) == b"".join(tfrecord.encode_record(r) for r in records)
    elif compression is None:
        assert raw == b"".join(tfrecord.encode_record(r) for r in records)
    assert tfrecord.TFRecordOptions.get_compression_type_string(options) == (compression or "")
    assert tfrecord.TFRecordOptions(tfrecord.TFRecordCompressionType.GZIP).compression_type \
        == "GZIP"


def test_damaged_files_are_data_loss_naming_file_and_offset(tmp_path):
    records = [b"first record", b"second record"]
    good = open(_write(tmp_path / "good.tfrecord", records), "rb").read()
    second = 16 + len(records[0])

    def read(name, data):
        path = tmp_path / name
        path.write_bytes(data)
        return list(tfrecord.tf_record_iterator(str(path)))

    flipped = bytearray(good)
    flipped[second + 12 + 3] ^= 0x01  # in the second record's data
    with pytest.raises(tf.errors.DataLossError, match=r"flip\.tfrecord.*offset %d" % second):
        read("flip.tfrecord", bytes(flipped))
    flipped = bytearray(good)
    flipped[2] ^= 0x40  # in the first record's length
    with pytest.raises(tf.errors.DataLossError, match=r"length.*offset 0"):
        read("len.tfrecord", bytes(flipped))
    for cut in (len(good) - 1, second + 5, second + 14):
        with pytest.raises(tf.errors.DataLossError, match="trunc.tfrecord"):
            read("trunc.tfrecord", good[:cut])
    # a length with a valid CRC but far past the end: an error, not a huge allocation
    header = struct.pack("<Q", 1 << 60)
    bogus = header + struct.pack("<I", tfrecord.masked_crc32c(header)) + b"xy"
    with pytest.raises(tf.errors.DataLossError, match="past the end"):
        read("huge.tfrecord", bogus)
    gz = tmp_path / "bad.gz"
    gz.write_bytes(gzip.compress(good)[:-12])
    with pytest.raises(tf.errors.DataLossError):
        list(tfrecord.tf_record_iterator(str(gz), "GZIP"))
    with pytest.raises(tf.errors.NotFoundError):
        list(tfrecord.tf_record_iterator(str(tmp_path / "missing")))
    # through a dataset, the step fails with the same error
    path = tmp_path / "flip2.tfrecord"
    path.write_bytes(good[:-1])
    with tf.Graph().as_default():
        nxt = TFRecordDataset(str(path)).make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            assert sess.run(nxt) == records[0]
            with pytest.raises(tf.errors.DataLossError, match="flip2.tfrecord"):
                sess.run(nxt)


FEATURES = {"x": parsing_ops.FixedLenFeature([2], tf.float32),
            "label": parsing_ops.FixedLenFeature([], tf.int64),
            "weight": parsing_ops.FixedLenFeature([], tf.float32, default_value=1.0)}


def test_tfrecord_dataset_map_parse_batch_trains(tmp_path):
    rng = np.random.RandomState(0)
    xs = rng.randn(40, 2).astype(np.float32)
    w_true = np.array([2.0, -3.0], np.float32)
    ys = (xs @ w_true > 0).astype(np.int64)
    files = [_write(tmp_path / ("part%d.tfrecord" % k),
                    [_example(xs[i], ys[i], []) for i in range(k, 40, 2)], "GZIP")
             for k in range(2)]
    with tf.Graph().as_default():
        ds = TFRecordDataset(files, compression_type="GZIP", num_parallel_reads=2)

        def parse(record):
            f = parsing_ops.parse_single_example(record, FEATURES)
            return f["x"], f["label"], f["weight"]

        ds = ds.map(parse).batch(8).repeat(30)
        assert ds.output_shapes[0].as_list() == [None, 2]
        assert ds.output_shapes[1].as_list() == [None]
        x, label, weight = ds.make_one_shot_iterator().get_next()
        w = tf.Variable(tf.zeros([2, 1]))
        logits = tf.reshape(tf.matmul(x, w), [-1])
        loss = tf.reduce_mean(weight * tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.cast(label, tf.float32), logits=logits))
        train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            xb, lb, wb = sess.run([x, label, weight])
            # num_parallel_reads=2 takes one record from each file in turn: rows 0, 1, 2, ...
            np.testing.assert_allclose(xb, xs[:8])
            np.testing.assert_array_equal(lb, ys[:8])
            np.testing.assert_array_equal(wb, np.ones(8, np.float32))
            losses = []
            while True:
                try:
                    losses.append(sess.run([train, loss])[1])
                except tf.errors.OutOfRangeError:
                    break
        assert len(losses) == 30 * 5 - 1
        assert losses[-1] < 0.5 * losses[0]


def test_parse_example_batch_varlen_and_errors():
    batch = [_example([1, 2], 0, [b"a"]), _example([3, 4], 1, []),
             _example([5, 6], 2, [b"b", b"c"])]
    features = dict(FEATURES, tags=parsing_ops.VarLenFeature(tf.string),
                    missing=parsing_ops.FixedLenFeature([2], tf.int64, default_value=[7, 8]))
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None])
        out = parsing_ops.parse_example(s, features)
        assert out["x"].shape.as_list() == [None, 2]
        assert out["missing"].shape.as_list() == [None, 2]
        one = tf.placeholder(tf.string, [])
        single = parsing_ops.parse_single_example(one, features)
        assert single["x"].shape.as_list() == [2] and single["label"].shape.as_list() == []
        bad_type = parsing_ops.parse_single_example(
            one, {"label": parsing_ops.FixedLenFeature([], tf.float32)})
        bad_len = parsing_ops.parse_single_example(
            one, {"x": parsing_ops.FixedLenFeature([3], tf.float32)})
        with tf.Session() as sess:
            x, label, missing, idx, vals, shape = sess.run(
                [out["x"], out["label"], out["missing"], out["tags"].indices,
                 out["tags"].values, out["tags"].dense_shape],
                {s: np.array(batch, dtype=object)})
            np.testing.assert_array_equal(x, [[1, 2], [3, 4], [5, 6]])
            np.testing.assert_array_equal(label, [0, 1, 2])
            np.testing.assert_array_equal(missing, [[7, 8]] * 3)
            np.testing.assert_array_equal(idx, [[0, 0], [2, 0], [2, 1]])
            assert list(vals) == [b"a", b"b", b"c"]
            np.testing.assert_array_equal(shape, [3, 2])
            idx, vals, shape = sess.run([single["tags"].indices, single["tags"].values,
                                         single["tags"].dense_shape], {one: batch[2]})
            np.testing.assert_array_equal(idx, [[0], [1]])
            np.testing.assert_array_equal(shape, [2])
            with pytest.raises(tf.errors.InvalidArgumentError, match="label.*float"):
                sess.run(bad_type, {one: batch[0]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Key: x.*size: 2"):
                sess.run(bad_len, {one: batch[0]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Feature: label .*required"):
                sess.run(single["x"], {one: pb.Example().SerializeToString()})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse"):
                sess.run(single["x"], {one: b"\xff\xff not an example"})
    with pytest.raises(ValueError, match="float32, int64 or string"):
        parsing_ops.parse_single_example(b"", {"x": parsing_ops.FixedLenFeature([], tf.int32)})


def test_fixed_len_sequence_feature_pads_the_batch():
    batch = [_example([1, 2, 3, 4], 0, []), _example([5, 6], 1, [])]
    with tf.Graph().as_default():
        out = parsing_ops.parse_example(
            tf.constant(np.array(batch, dtype=object)),
            {"x": parsing_ops.FixedLenSequenceFeature([2], tf.float32, default_value=-1.0)})
        assert out["x"].shape.as_list() == [2, None, 2]
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(out["x"]),
                                          [[[1, 2], [3, 4]], [[5, 6], [-1, -1]]])


def test_decode_raw():
    values = np.array([[1, -2, 300], [4, 5, 6]], dtype=np.int32)
    with tf.Graph().as_default():
        little = tf.constant(np.array([r.tobytes() for r in values], dtype=object))
        big = tf.constant(np.array([r.astype(">i4").tobytes() for r in values], dtype=object))
        a = parsing_ops.decode_raw(little, tf.int32)
        b = parsing_ops.decode_raw(big, tf.int32, little_endian=False)
        c = parsing_ops.decode_raw(tf.constant(b"\x01\xff"), tf.uint8)
        uneven = parsing_ops.decode_raw(tf.constant(np.array([b"ab", b"abcd"], dtype=object)),
                                        tf.uint8)
        odd = parsing_ops.decode_raw(tf.constant(b"abc"), tf.float32)
        assert a.shape.as_list() == [2, None]
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(a), values)
            np.testing.assert_array_equal(sess.run(b), values)
            out = sess.run(c)
            assert out.dtype == np.uint8 and list(out) == [1, 255]
            with pytest.raises(tf.errors.InvalidArgumentError, match="same size"):
                sess.run(uneven)
            with pytest.raises(tf.errors.InvalidArgumentError, match="multiple of 4"):
                sess.run(odd)


def test_fixed_length_record_dataset(tmp_path):
    body = np.arange(30, dtype=np.uint8).reshape(5, 6)
    path = tmp_path / "data.bin"
    path.write_bytes(b"HDR" + body.tobytes() + b"abc" + b"FT")  # 3 trailing bytes: dropped
    gz = tmp_path / "data.bin.gz"
    gz.write_bytes(gzip.compress(body.tobytes()))
    with tf.Graph().as_default():
        ds = FixedLengthRecordDataset([str(path)], 6, header_bytes=3, footer_bytes=2)
        ds = ds.map(lambda r: parsing_ops.decode_raw(r, tf.uint8)).batch(10)
        nxt = ds.make_one_shot_iterator().get_next()
        plain = FixedLengthRecordDataset(str(gz), 6, compression_type="GZIP")
        nxt_gz = plain.make_one_shot_iterator().get_next()
        small = FixedLengthRecordDataset(str(path), 4, header_bytes=30, footer_bytes=30)
        nxt_small = small.make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(nxt), body)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(nxt)
            assert sess.run(nxt_gz) == body[0].tobytes()
            with pytest.raises(tf.errors.InvalidArgumentError, match="fewer than"):
                sess.run(nxt_small)


def test_native_crc32c_matches_the_python_table():
    from shardflow import _shardflow
    assert _shardflow.crc32c(b"123456789") == 0xE3069283
    data = bytes(range(256)) * 37 + b"tail"
    assert _shardflow.crc32c(data) == tfrecord._crc32c_python(data)
    assert tfrecord.crc32c is _shardflow.crc32c
