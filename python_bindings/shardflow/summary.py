"""TF1's tf.summary: scalar and histogram summaries (image, audio, text and tensor summaries
in summary_media.py), merge_all, and a FileWriter that writes TensorBoard's event files (the
graph included, and run metadata such as device placement); summary_pb.py has the Summary and
Event messages and summary_iterator, which reads event files back.

Example::

    tf.summary.scalar("loss", loss)
    tf.summary.histogram("weights", w)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter("/tmp/logs", sess.graph)
    summary, _ = sess.run([merged, train_op], feed)
    writer.add_summary(summary, step)
    writer.close()

Note [Summaries on the client]. A summary here is a fetchable object, not an op: running it
fetches the tensors it summarizes and serializes a `Summary` protocol buffer (TensorFlow's
summary.proto, fields written by hand below) in the client, so ``sess.run(merged)`` returns the
same bytes TF1's summary ops return and FileWriter.add_summary takes them. Histograms use
TensorFlow's default buckets (edges growing by 10% from 1e-12, mirrored for negatives). Event
files are TFRecord files: per record, the length (uint64 little-endian), its masked CRC-32C, the
serialized Event and its masked CRC-32C.
"""

import os
import socket
import struct
import time

import numpy as np

from shardflow.framework import convert_to_tensor, get_default_graph
from shardflow.wire_format import crc32c, masked_crc32c  # noqa: F401 (crc32c: re-exported)
from shardflow.wire_format import varint as _varint

SUMMARIES = "summaries"

# ---- protocol buffer wire format (the few fields summaries and events use) -----------------


def _key(field, wire):
    return _varint((field << 3) | wire)


def _bytes_field(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _key(field, 2) + _varint(len(data)) + data


def _double_field(field, value):
    return _key(field, 1) + struct.pack("<d", value)


def _float_field(field, value):
    return _key(field, 5) + struct.pack("<f", value)


def _int_field(field, value):
    return _key(field, 0) + _varint(int(value))


def _packed_doubles(field, values):
    return _bytes_field(field, b"".join(struct.pack("<d", v) for v in values))


# ---- summaries -----------------------------------------------------------------------------

def _bucket_limits():
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0.0] + pos + [float("inf")]


_LIMITS = np.array(_bucket_limits())


def _histogram(values):
    values = np.asarray(values, np.float64).ravel()
    out = b""
    if values.size == 0:
        return _double_field(1, 0) + _double_field(2, 0) + _double_field(3, 0)
    counts = np.bincount(np.searchsorted(_LIMITS, values, side="left"),
                         minlength=len(_LIMITS))[:len(_LIMITS)]
    used = np.nonzero(counts)[0]
    lo, hi = max(used[0] - 1, 0), min(used[-1] + 1, len(_LIMITS) - 1)
    out += _double_field(1, values.min()) + _double_field(2, values.max())
    out += _double_field(3, float(values.size)) + _double_field(4, float(values.sum()))
    out += _double_field(5, float((values * values).sum()))
    out += _packed_doubles(6, _LIMITS[lo:hi + 1]) + _packed_doubles(7, counts[lo:hi + 1])
    return out


class _Summary:
    """A fetchable summary (Note [Summaries on the client]): `tensors` to fetch, and how their
    values become a serialized Summary."""

    def __init__(self, tensors, serialize, name):
        self.tensors = tensors
        self._serialize = serialize
        self.name = name

    def _encode(self, values):
        return self._serialize(values)

    def __repr__(self):
        return "<sf.summary %s>" % self.name


def _tag(name, family=None):
    """The summary's tag: its name under the current name scope; with a family, TF 1.15's
    summary_scope: the scope "<family>/<name>" prefixed by the family again, so that
    TensorBoard files it under the family's tab ("fam/fam/loss")."""
    scope = get_default_graph()._name_scope
    base = name if family is None else "%s/%s" % (family, name)
    scoped = scope + "/" + base if scope else base
    return scoped if family is None else "%s/%s" % (family, scoped)


def scalar(name, tensor, collections=None, family=None):
    """A summary of a scalar tensor's value (TensorBoard's scalars)."""
    tensor = convert_to_tensor(tensor)
    tag = _tag(name, family)
    s = _Summary([tensor], lambda v: _bytes_field(1, _bytes_field(1, tag) + _float_field(
        2, float(np.asarray(v[0]).reshape(())))), tag)
    for c in collections or [SUMMARIES]:
        get_default_graph().add_to_collection(c, s)
    return s


def histogram(name, values, collections=None, family=None):
    """A histogram of a tensor's values (TensorBoard's histograms and distributions)."""
    values = convert_to_tensor(values)
    tag = _tag(name, family)
    s = _Summary([values], lambda v: _bytes_field(1, _bytes_field(1, tag) + _bytes_field(
        5, _histogram(v[0]))), tag)
    for c in collections or [SUMMARIES]:
        get_default_graph().add_to_collection(c, s)
    return s


def merge(inputs, collections=None, name=None):
    """One summary holding all of `inputs` (summaries)."""
    inputs = list(inputs)
    tensors, spans = [], []
    for s in inputs:
        spans.append((len(tensors), len(tensors) + len(s.tensors)))
        tensors.extend(s.tensors)

    def serialize(values):
        return b"".join(s._encode(values[a:b]) for s, (a, b) in zip(inputs, spans))
    merged = _Summary(tensors, serialize, name or "merged")
    for c in collections or []:
        get_default_graph().add_to_collection(c, merged)
    return merged


def merge_all(key=SUMMARIES, scope=None, name=None):
    """Every summary of the collection `key` merged into one (None when there are none)."""
    found = get_default_graph().get_collection(key)
    if scope:
        found = [s for s in found if s.name.startswith(scope)]
    return merge(found, name=name) if found else None


# ---- FileWriter ----------------------------------------------------------------------------

class FileWriter:
    """Writes TensorBoard event files into `logdir`: the graph (when given), summaries by step,
    run metadata (placement, step stats) by tag.

    Example::

        writer = sf.summary.FileWriter("/tmp/logs", sess.graph)
        writer.add_summary(sess.run(merged), global_step=step)
    """

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix="", session=None):
        if session is not None:
            raise NotImplementedError("FileWriter(session=...) writes through a TF2 summary "
                                      "writer; give logdir only")
        if graph is None and graph_def is not None:
            graph = graph_def     # TF 1.0's spelling: add_graph takes a GraphDef too
        filename_suffix = filename_suffix or ""
        os.makedirs(logdir, exist_ok=True)
        self._path = os.path.join(logdir, "events.out.tfevents.%d.%s%s" % (
            int(time.time()), socket.gethostname(), filename_suffix))
        self._file = open(self._path, "ab")
        self._closed = False
        self._write_event(_bytes_field(3, "brain.Event:2"))
        if graph is not None:
            self.add_graph(graph)

    def get_logdir(self):
        return os.path.dirname(self._path)

    def _write_event(self, fields, step=None):
        if self._closed:
            raise RuntimeError("the FileWriter is closed")
        event = _double_field(1, time.time())
        if step is not None:
            event += _int_field(2, step)
        event += fields
        header = struct.pack("<Q", len(event))
        self._file.write(header + struct.pack("<I", masked_crc32c(header)) + event +
                         struct.pack("<I", masked_crc32c(event)))

    def add_summary(self, summary, global_step=None):
        """`summary`: the bytes of a fetched summary (or merged summary)."""
        if isinstance(summary, _Summary):
            raise TypeError("add_summary takes the value of sess.run(summary), not the summary")
        if isinstance(summary, np.ndarray):
            summary = summary.item()
        if hasattr(summary, "SerializeToString"):  # a sf.summary.Summary message
            summary = summary.SerializeToString()
        self._write_event(_bytes_field(5, bytes(summary)), global_step)

    def add_event(self, event):
        """Writes `event` (a sf.summary.Event message) as it is."""
        self._write_event(event.SerializeToString())

    def add_session_log(self, session_log, global_step=None):
        """A SessionLog (START, STOP, CHECKPOINT) at `global_step`."""
        self._write_event(_bytes_field(7, session_log.SerializeToString()), global_step)

    def add_graph(self, graph, global_step=None):
        """The graph (a sf.Graph, a GraphDef or its bytes), for TensorBoard's graph view."""
        from shardflow.graph_io import _serialized
        data = _serialized(graph, "FileWriter.add_graph")
        self._write_event(_bytes_field(4, data), global_step)

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """A step's run metadata (device placement, step stats) under `tag`."""
        tagged = _bytes_field(1, tag) + _bytes_field(2, run_metadata.SerializeToString())
        self._write_event(_bytes_field(8, tagged), global_step)

    def flush(self):
        self._file.flush()

    def close(self):
        if not self._closed:
            self._file.flush()
            self._file.close()
            self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FileWriterCache:
    """One FileWriter per log directory, shared with the hooks that write there (TF1's
    tf.summary.FileWriterCache; basic_hooks.py keeps the writers)."""

    @staticmethod
    def get(logdir):
        """The FileWriter of `logdir`, made on first use."""
        from shardflow.basic_hooks import _writer_for
        return _writer_for(logdir)

    @staticmethod
    def clear():
        """Closes every cached writer and forgets them."""
        from shardflow.basic_hooks import _writers, _writers_lock
        with _writers_lock:
            writers = list(_writers.values())
            _writers.clear()
        for writer in writers:
            writer.close()


# Images, audio, text and tensors (summary_media.py); the protobuf messages (summary_pb.py).
from shardflow.summary_media import audio, image, tensor_summary, text  # noqa: E402
from shardflow.summary_pb import (Event, SessionLog, Summary,  # noqa: E402
                                  SummaryDescription, SummaryMetadata, TaggedRunMetadata,
                                  summary_iterator)

__all__ = ["Event", "FileWriter", "FileWriterCache", "SessionLog", "Summary",
           "SummaryDescription", "SummaryMetadata", "TaggedRunMetadata", "audio", "histogram",
           "image", "merge", "merge_all", "scalar", "summary_iterator", "tensor_summary",
           "text"]
