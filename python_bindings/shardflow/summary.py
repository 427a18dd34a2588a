"""TF1's tf.summary: scalar and histogram summaries (image, audio, text and tensor summaries
in summary_media.py), merge_all, and a FileWriter that writes TensorBoard's event files (the
graph included, and run metadata: TF's RunMetadata, with the step stats); summary_pb.py has the
Summary and Event messages and summary_iterator, which reads event files back.

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

Tags are made as TF 1.15's summary_scope makes them: the name cleaned (characters other than
letters, digits and "-/_." become "_", leading "/" dropped), then made unique as a name scope
(a second scalar("loss") is tagged "loss_1"). As TF's summary ops, a histogram of NaN or
infinite values and a scalar summary of a non-scalar fail the step with InvalidArgumentError.
"""

import os
import re
import socket
import struct
import threading
import time
import weakref

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


_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def _clean_tag(name):
    """TF 1.15's clean_tag: characters other than letters, digits, '_', '-', '/' and '.'
    become '_', leading '/' are dropped (logged at INFO when the name changes)."""
    if name is None:
        return None
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if cleaned != name:
        from shardflow import tf_logging
        tf_logging.info("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


def _tag(name, family=None):
    """The summary's tag, as TF 1.15's summary_scope makes it: the cleaned name (or
    "<family>/<name>") made unique as a name scope under the current one ("loss", then
    "loss_1", as an op of that name would be); with a family, prefixed by the family again so
    that TensorBoard files it under the family's tab ("fam/fam/loss")."""
    name, family = _clean_tag(name), _clean_tag(family)
    base = name if family is None else "%s/%s" % (family, name)
    scoped = get_default_graph().unique_name(base)
    return scoped if family is None else "%s/%s" % (family, scoped)


_NOT_NUMERIC = ("string", "bool", "variant", "resource")


def _check_numeric(kind, name, tensor):
    """A TypeError naming the summary when `tensor` is not a number type (TF's scalar and
    histogram summary ops take real numbers only)."""
    if tensor.dtype.name in _NOT_NUMERIC or tensor.dtype.name.startswith("complex"):
        raise TypeError("summary.%s(%r) takes a real number tensor, not %s (cast it first)"
                         % (kind, name, tensor.dtype.name))


def scalar(name, tensor, collections=None, family=None):
    """A summary of a scalar tensor's value (TensorBoard's scalars). A value that is not a
    scalar (a [1]-shaped one too) fails the step with InvalidArgumentError, as TF's
    ScalarSummary does; a string or bool tensor is a TypeError here."""
    tensor = convert_to_tensor(tensor)
    _check_numeric("scalar", name, tensor)
    tag = _tag(name, family)

    def serialize(values):
        value = np.asarray(values[0])
        if value.ndim != 0:
            from shardflow import errors
            raise errors.InvalidArgumentError(
                "tags and values not the same shape: [] != %s (tag '%s'): summary.scalar "
                "takes a scalar; reduce the tensor or use summary.histogram"
                % (list(value.shape), tag))
        return _bytes_field(1, _bytes_field(1, tag) + _float_field(2, float(value)))
    s = _Summary([tensor], serialize, tag)
    for c in collections or [SUMMARIES]:
        get_default_graph().add_to_collection(c, s)
    return s


def histogram(name, values, collections=None, family=None):
    """A histogram of a tensor's values (TensorBoard's histograms and distributions). A NaN or
    infinite value fails the step with InvalidArgumentError "Nan in summary histogram for:
    <tag>", as TF's HistogramSummary."""
    values = convert_to_tensor(values)
    _check_numeric("histogram", name, values)
    tag = _tag(name, family)

    def serialize(fetched):
        data = np.asarray(fetched[0], np.float64)
        if not np.isfinite(data).all():
            from shardflow import errors
            raise errors.InvalidArgumentError("Nan in summary histogram for: %s" % tag)
        return _bytes_field(1, _bytes_field(1, tag) + _bytes_field(5, _histogram(data)))
    s = _Summary([values], serialize, tag)
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
    run metadata (TF's RunMetadata: step stats, partition graphs) by tag.

    As TF1's, events reach the file every `flush_secs` seconds (a daemon thread flushes), once
    `max_queue` of them are waiting, and on flush() and close(). reopen() after close() goes on
    in a new event file. Thread safety: the methods may be called from several threads.

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
        self._logdir = logdir
        self._filename_suffix = filename_suffix or ""
        self._max_queue = max(int(max_queue), 1)
        self._flush_secs = float(flush_secs)
        self._lock = threading.Lock()
        self._closed = True
        self._open()
        if graph is not None:
            self.add_graph(graph)

    def _open(self):
        """A new event file with its file_version record, and the thread flushing it."""
        os.makedirs(self._logdir, exist_ok=True)
        self._path = os.path.join(self._logdir, "events.out.tfevents.%d.%s%s" % (
            int(time.time()), socket.gethostname(), self._filename_suffix))
        self._file = open(self._path, "ab")
        self._pending = 0       # events written since the last flush
        self._closed = False
        self._write_event(_bytes_field(3, "brain.Event:2"))
        self._stop_flushing = threading.Event()
        self._flusher = threading.Thread(
            target=_flush_every, args=(weakref.ref(self), self._stop_flushing, self._flush_secs),
            name="FileWriter flush", daemon=True)
        self._flusher.start()

    def reopen(self):
        """After close(): opens a new event file in the same directory (events go on there).
        Does nothing while the writer is open."""
        with self._lock:
            if not self._closed:
                return
        self._open()

    def get_logdir(self):
        return os.path.dirname(self._path)

    def _write_event(self, fields, step=None):
        event = _double_field(1, time.time())
        if step is not None:
            event += _int_field(2, step)
        event += fields
        header = struct.pack("<Q", len(event))
        record = header + struct.pack("<I", masked_crc32c(header)) + event + \
            struct.pack("<I", masked_crc32c(event))
        with self._lock:
            if self._closed:
                raise RuntimeError("the FileWriter is closed (reopen() opens a new event file)")
            self._file.write(record)
            self._pending += 1
            if self._pending >= self._max_queue:
                self._flush_locked()

    def _flush_locked(self):
        if not self._closed and self._pending:
            self._file.flush()
            self._pending = 0

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
        """The graph (a sf.Graph, a GraphDef or its bytes), for TensorBoard's graph view,
        written as TF's GraphDef (step_stats_pb.tf_graph_def: shardflow's own numbers its
        attrs' fields differently, and TensorBoard reads TF's schema)."""
        from shardflow.graph_io import _serialized
        from shardflow.step_stats_pb import tf_graph_def
        data = _serialized(graph, "FileWriter.add_graph")
        self._write_event(_bytes_field(4, tf_graph_def(data).SerializeToString()), global_step)

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """A step's run metadata under `tag` (TensorBoard's "Session runs"), as TF's
        RunMetadata: step_stats (shardflow/step_stats_pb.py) and the partition graphs."""
        from shardflow.step_stats_pb import tf_run_metadata
        data = tf_run_metadata(run_metadata).SerializeToString()
        tagged = _bytes_field(1, tag) + _bytes_field(2, data)
        self._write_event(_bytes_field(8, tagged), global_step)

    def flush(self):
        """Writes what is waiting to the file."""
        with self._lock:
            self._flush_locked()

    def close(self):
        """Flushes and closes the file and stops the flushing thread; reopen() opens a new
        file."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop_flushing.set()
            self._file.flush()
            self._file.close()
        if self._flusher is not threading.current_thread():
            self._flusher.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _flush_every(writer_ref, stop, secs):
    """FileWriter's flushing thread: flushes every `secs` seconds until `stop` is set or the
    writer is gone (it holds the writer weakly, so that an unclosed writer is still freed)."""
    while not stop.wait(secs):
        writer = writer_ref()
        if writer is None:
            return
        writer.flush()
        del writer


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
