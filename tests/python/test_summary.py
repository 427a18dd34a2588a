"""tf.summary and FileWriter: the event file read back record by record (lengths, masked CRC-32C
of each header and payload), every Event decoded with a small protobuf reader, and checked:
the file version, the graph, scalars by step, a histogram's count and sum, run metadata with
the placement."""
import glob
import struct

import numpy as np

import shardflow as tf
from shardflow.summary import masked_crc32c


def fields(data):
    """Protobuf wire fields of `data` as (number, wire type, value)."""
    out, i = [], 0
    while i < len(data):
        key, i = varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(data, i)
        elif wire == 1:
            value, i = struct.unpack("<d", data[i:i + 8])[0], i + 8
        elif wire == 5:
            value, i = struct.unpack("<f", data[i:i + 4])[0], i + 4
        elif wire == 2:
            n, i = varint(data, i)
            value, i = data[i:i + n], i + n
        else:
            raise AssertionError("wire type %d" % wire)
        out.append((number, wire, value))
    return out


def varint(data, i):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def records(path):
    data = open(path, "rb").read()
    i, out = 0, []
    while i < len(data):
        header = data[i:i + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[i + 8:i + 12])[0] == masked_crc32c(header)
        payload = data[i + 12:i + 12 + length]
        assert struct.unpack("<I", data[i + 12 + length:i + 16 + length])[0] == \
            masked_crc32c(payload)
        out.append(payload)
        i += 16 + length
    return out


def test_crc32c_known_value():
    # CRC-32C of "123456789" is 0xE3069283 (RFC 3720's check value).
    from shardflow.summary import crc32c
    assert crc32c(b"123456789") == 0xE3069283


def test_summaries_and_event_files_read_back(tmp_path):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        loss = tf.reduce_mean(tf.square(x))
        with tf.name_scope("train"):
            tf.summary.scalar("loss", loss)
        tf.summary.histogram("x", x)
        merged = tf.summary.merge_all()
        with tf.Session() as sess:
            writer = tf.summary.FileWriter(str(tmp_path), sess.graph)
            for step in range(3):
                values = np.arange(4, dtype=np.float32) + step
                md = tf.RunMetadata()
                summary = sess.run(merged, {x: values},
                                   options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                                   run_metadata=md)
                assert isinstance(summary, bytes)
                writer.add_summary(summary, global_step=step)
            writer.add_run_metadata(md, "step2", global_step=2)
            writer.close()
            graph_bytes = sess.graph_def.SerializeToString()
    files = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    assert len(files) == 1
    events = [dict((n, v) for n, _, v in fields(r)) for r in records(files[0])]
    assert events[0][3] == b"brain.Event:2"
    # The graph as a serialized GraphDef (its nodes by name).
    assert b"Placeholder" in events[1][4] and b"Square" in events[1][4]
    assert b"Placeholder" in graph_bytes
    scalars, histos = {}, {}
    for e in events[2:5]:
        for number, _, value in fields(e[5]):
            assert number == 1
            v = dict((n, val) for n, _, val in fields(value))
            if 2 in v:
                scalars[(v[1], e[2])] = v[2]
            else:
                histos[(v[1], e[2])] = dict((n, val) for n, _, val in fields(v[5]))
    for step in range(3):
        want = np.mean((np.arange(4) + step) ** 2)
        assert abs(scalars[(b"train/loss", step)] - want) < 1e-4
        h = histos[(b"x", step)]
        assert h[3] == 4 and h[4] == sum(np.arange(4) + step) and h[1] == step
    tagged = dict((n, v) for n, _, v in fields(events[5][8]))
    assert tagged[1] == b"step2"
    # TF's RunMetadata: step_stats (field 1) with a DeviceStepStats per device.
    step_stats = dict((n, v) for n, _, v in fields(tagged[2]))[1]
    assert [n for n, _, _ in fields(step_stats)][0] == 1
