"""TF1's queue-based input pipelines: tf.FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue, the
readers (TextLineReader, WholeFileReader, FixedLengthRecordReader, TFRecordReader) and the
tf.train input producers and batchers, run by tf.train.QueueRunner threads.

Example (TF1's pattern)::

    filenames = sf.train.string_input_producer(["a.csv", "b.csv"], num_epochs=2)
    _, line = sf.TextLineReader().read(filenames)
    x, y = sf.decode_csv(line, record_defaults=[[0.0], [0]])    # or any ops on `line`
    xs, ys = sf.train.shuffle_batch([x, y], batch_size=32, capacity=200, min_after_dequeue=100)
    ...
    coord = sf.train.Coordinator()
    threads = sf.train.start_queue_runners(sess, coord)
    try:
        while not coord.should_stop():
            sess.run(train_op)
    except sf.errors.OutOfRangeError:
        pass                                           # the epochs are done
    finally:
        coord.request_stop()
    coord.join(threads)

Note [Queues in the client]. The queues live in the Python process that builds the graph: each
queue operation is a PyFunc node (shardflow/script_ops.py) calling a Python queue object with
TF1's semantics (capacity, blocking enqueues and dequeues, close with or without cancelling
pending enqueues, OutOfRangeError once closed and short of elements, CancelledError for an
enqueue into a closed queue). Session.run releases the GIL, so runner threads and the training
loop block and wake each other as with TF1's kernels. The price: such a queue cannot be shared
between processes (between-graph replication keeps a queue per worker, as TF1 programs usually
do), and its elements pass through NumPy. A FIFOQueue placed on a task this process does not
serve is the engine's own FIFOQueueV2 instead (the one the sync-replicas token
queue is): Note [Queues on other tasks] at _EngineQueue.
"""

import collections
import os
import re
import threading

import numpy as np

from shardflow import dtypes, errors
from shardflow import dtypes as _dtypes  # QueueBase's `dtypes` argument shadows the module
from shardflow.framework import TensorShape, convert_to_tensor
from shardflow.script_ops import py_func, step_aborted

_counter = collections.Counter()
_counter_lock = threading.Lock()


def _unique(prefix):
    with _counter_lock:
        _counter[prefix] += 1
        return "%s_%d" % (prefix, _counter[prefix] - 1)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


# Note [Queues per session]. TF1's queues, readers and epoch counters are resources of the
# session that runs them: a second session on the same graph (evaluating each new checkpoint in
# a fresh session, as TF1's eval loops do) starts with empty, open queues. Here they are Python
# objects, so each keeps one state per session: every queue PyFunc takes the graph's int64
# "session token" placeholder, which Session.run feeds with the session's own number.
def _session_token(graph):
    """The graph's session-token placeholder (made once, outside any control dependencies and
    device scope)."""
    token = graph.__dict__.get("_sf_session_token")
    if token is None:
        from shardflow import ops
        with graph.as_default(), graph.control_dependencies(None), graph.device(None):
            token = ops.placeholder(_dtypes.int64, [], name="queue_session_token")
        graph._sf_session_token = token
    return token


class _PerSession:
    """One state per session token, made by `make()` when a session first uses it."""

    def __init__(self, make):
        self._make = make
        self._states = {}
        self._lock = threading.Lock()

    def get(self, token):
        token = int(token)
        with self._lock:
            state = self._states.get(token)
            if state is None:
                state = self._states[token] = self._make()
            return state


class _State:
    """The Python side of one queue: elements (tuples of arrays) under a condition variable."""

    def __init__(self, name, capacity, dtypes_, shapes, shuffle_min=None, seed=None):
        self.name = name
        self.capacity = capacity
        self.dtypes = dtypes_
        self.shapes = shapes
        self.shuffle_min = shuffle_min
        self.rng = np.random.RandomState(seed)
        self.items = []
        self.closed = False
        self.cond = threading.Condition()

    def _full(self):
        return self.capacity is not None and 0 < self.capacity <= len(self.items)

    def _check(self, element):
        out = []
        for i, (value, dt) in enumerate(zip(element, self.dtypes)):
            value = np.asarray(value, dtype=dt.as_numpy_dtype)
            want = self.shapes[i] if self.shapes else None
            if want is not None and (len(want) != value.ndim or any(
                    w is not None and w != d for w, d in zip(want, value.shape))):
                raise errors.InvalidArgumentError(
                    "queue '%s': component %d has shape %s but the queue holds %s"
                    % (self.name, i, list(value.shape), list(want)))
            out.append(value)
        return tuple(out)

    def _give_up_if_aborted(self, what):
        # A step that was aborted while this waited (its deadline passed, it was cancelled):
        # leave the queue as it is, as TF1's cancelled queue kernels do, instead of adding or
        # taking an element for a step that is gone.
        if step_aborted():
            raise errors.CancelledError("%s '%s': the step was aborted while it waited"
                                        % (what, self.name))

    def enqueue(self, elements):
        elements = [self._check(e) for e in elements]
        with self.cond:
            for e in elements:
                while not self.closed and self._full():
                    self._give_up_if_aborted("enqueue into")
                    self.cond.wait(0.1)
                self._give_up_if_aborted("enqueue into")
                if self.closed:
                    raise errors.CancelledError(
                        "queue '%s' is closed; the enqueue was cancelled" % self.name)
                self.items.append(e)
                self.cond.notify_all()

    def _ready(self, n):
        if self.closed:
            return True
        need = n + (self.shuffle_min or 0)
        return len(self.items) >= need

    def dequeue(self, n, allow_smaller):
        with self.cond:
            while not self._ready(n):
                self._give_up_if_aborted("dequeue from")
                self.cond.wait(0.1)
            self._give_up_if_aborted("dequeue from")
            if len(self.items) < n and (not allow_smaller or not self.items or n is None):
                raise errors.OutOfRangeError(
                    "queue '%s' is closed and has insufficient elements (requested %d, current "
                    "size %d)" % (self.name, n, len(self.items)))
            count = min(n, len(self.items))
            taken = []
            for _ in range(count):
                i = self.rng.randint(len(self.items)) if self.shuffle_min is not None else 0
                taken.append(self.items.pop(i))
            self.cond.notify_all()
            return taken

    def close(self):
        # Enqueues still waiting for room fail too (CancelledError), whether or not the close
        # op asked to cancel them.
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def size(self):
        with self.cond:
            return len(self.items)


class QueueBase:
    """What the queues share: enqueue/enqueue_many/dequeue/dequeue_many/dequeue_up_to, close,
    size, is_closed, as TF1's tf.QueueBase."""

    _shuffle_min = None

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue", seed=None):
        self._dtypes = [_dtypes.as_dtype(d) for d in _as_list(dtypes)]
        if shapes is not None:
            shapes = [TensorShape(s).as_list() if not isinstance(s, TensorShape) or s.ndims is
                      not None else None for s in _as_list(shapes)]
            if len(shapes) != len(self._dtypes):
                raise ValueError("%s: %d shapes for %d dtypes" % (name, len(shapes),
                                                                 len(self._dtypes)))
        self._shapes = shapes
        self._names = list(names) if names is not None else None
        if self._names is not None and len(self._names) != len(self._dtypes):
            raise ValueError("%s: %d names for %d dtypes" % (name, len(self._names),
                                                            len(self._dtypes)))
        self._name = _unique(name)
        self._engine = _engine_queue(self, capacity, shared_name)
        if self._engine is None:
            from shardflow.framework import get_default_graph
            self._token = _session_token(get_default_graph())
            self._states = _PerSession(lambda: self._new_state(capacity, shapes, seed))

    def _new_state(self, capacity, shapes, seed):
        return _State(self._name, capacity, self._dtypes, shapes, self._shuffle_min, seed)

    @property
    def name(self):
        return self._name

    @property
    def dtypes(self):
        return list(self._dtypes)

    @property
    def shapes(self):
        return [TensorShape(s) for s in self._shapes] if self._shapes else None

    @property
    def names(self):
        return self._names

    def _flatten(self, vals, what):
        if isinstance(vals, dict):
            if self._names is None:
                raise ValueError("%s: a dict of values needs a queue made with names" % what)
            vals = [vals[n] for n in self._names]
        vals = [convert_to_tensor(v, dtype=d) for v, d in zip(_as_list(vals), self._dtypes)]
        if len(vals) != len(self._dtypes):
            raise ValueError("%s: %d values for a queue of %d components"
                             % (what, len(vals), len(self._dtypes)))
        return vals

    def enqueue(self, vals, name=None):
        """An op adding one element."""
        vals = self._flatten(vals, "enqueue")
        if self._engine is not None:
            return self._engine.enqueue("QueueEnqueueV2", vals[0], name or self._name +
                                        "_enqueue")
        states = self._states
        return py_func(lambda token, *v: states.get(token).enqueue([v]), [self._token] + vals,
                       [], name=name or self._name + "_enqueue")

    def enqueue_many(self, vals, name=None):
        """An op adding each slice along dimension 0 of the values as an element."""
        vals = self._flatten(vals, "enqueue_many")
        if self._engine is not None:
            return self._engine.enqueue("QueueEnqueueManyV2", vals[0], name or self._name +
                                        "_enqueue_many")
        states = self._states

        def run(token, *v):
            state = states.get(token)
            n = {len(x) for x in v}
            if len(n) != 1:
                raise errors.InvalidArgumentError(
                    "enqueue_many into '%s': components of different lengths %s"
                    % (state.name, sorted(n)))
            state.enqueue(list(zip(*v)))
        return py_func(run, [self._token] + vals, [], name=name or self._name + "_enqueue_many")

    def _outputs(self, tensors, batch):
        for i, t in enumerate(tensors):
            if self._shapes and self._shapes[i] is not None:
                t.set_shape(([batch] if batch is not False else []) + list(self._shapes[i]))
        if self._names is not None:
            return dict(zip(self._names, tensors))
        return tensors[0] if len(tensors) == 1 else tensors

    def _dequeue_op(self, n, allow_smaller, name):
        if self._engine is not None:
            return self._outputs([self._engine.dequeue(n, name)], False)
        states = self._states
        single = n is None

        def run(token):
            state = states.get(token)
            taken = state.dequeue(1 if single else int(n), allow_smaller)
            if single:
                return list(taken[0])
            return [np.stack([e[i] for e in taken]) if taken else
                    np.zeros([0] + list(state.shapes[i] or []), d.as_numpy_dtype)
                    for i, d in enumerate(state.dtypes)]
        out = py_func(run, [self._token], list(self._dtypes), name=name)
        return self._outputs(out, False if single else (None if allow_smaller else int(n)))

    def dequeue(self, name=None):
        """One element (waits for it; OutOfRangeError once the queue is closed and empty)."""
        return self._dequeue_op(None, False, name or self._name + "_dequeue")

    def dequeue_many(self, n, name=None):
        """n elements stacked along a new dimension 0 (waits for n)."""
        return self._dequeue_op(n, False, name or self._name + "_dequeue_many")

    def dequeue_up_to(self, n, name=None):
        """As dequeue_many, but once the queue is closed, what is left (at least one)."""
        return self._dequeue_op(n, True, name or self._name + "_dequeue_up_to")

    def close(self, cancel_pending_enqueues=False, name=None):
        """An op closing the queue: later enqueues, and those still waiting for room (with or
        without cancel_pending_enqueues), fail; dequeues drain what is left."""
        if self._engine is not None:
            return self._engine.simple("QueueCloseV2", name or self._name + "_close")
        states = self._states
        return py_func(lambda token: states.get(token).close(), [self._token], [],
                       name=name or self._name + "_close")

    def size(self, name=None):
        """An int32 scalar: the number of elements."""
        if self._engine is not None:
            out = self._engine.simple("QueueSizeV2", name or self._name + "_size").outputs[0]
            out.set_shape([])
            return out
        states = self._states
        out = py_func(lambda token: np.int32(states.get(token).size()), [self._token],
                      _dtypes.int32, name=name or self._name + "_size")
        out.set_shape([])
        return out

    def is_closed(self, name=None):
        if self._engine is not None:
            self._engine.refuse("is_closed()")
        states = self._states
        out = py_func(lambda token: np.bool_(states.get(token).closed), [self._token],
                      _dtypes.bool_, name=name or self._name + "_is_closed")
        out.set_shape([])
        return out



def _task_of(device):
    """(job, task) a device string names, or None when it names no job."""
    m = re.search(r"/job:([^/]+)", device or "")
    if m is None or m.group(1) == "localhost":
        return None
    t = re.search(r"/task:(\d+)", device)
    return m.group(1), int(t.group(1)) if t else 0


def _engine_queue(queue, capacity, shared_name):
    """An _EngineQueue for `queue` when it is placed on a task this process does not serve, or
    on one it serves under a `shared_name` (other processes' graphs may name it) and the
    engine's queue can hold it (Note [Queues on other tasks]); None for a Python queue."""
    from shardflow.cluster import _SERVERS
    from shardflow.framework import get_default_graph
    g = get_default_graph()
    device = g._device_for("FIFOQueueV2", queue._name)
    task = _task_of(device)
    if task is None:
        return None
    if task in {(s.job_name, s.task_index) for s in _SERVERS.values()}:
        if not shared_name or type(queue) is not FIFOQueue or len(queue._dtypes) != 1 or \
                queue._dtypes[0] == _dtypes.string:
            return None
    return _EngineQueue(queue, g, device, capacity, shared_name)


class _EngineQueue:
    """Note [Queues on other tasks]. A queue placed on a task this process does not serve
    (tf.device("/job:ps/task:0") in a worker's graph) cannot be a Python object here: it is the
    engine's FIFOQueueV2 on that task, shared by every graph that names it (`shared_name`, else
    the queue's name), as TF1's queues on a ps are. So is a queue with a `shared_name` on a task
    this process serves, when the engine's queue can hold it: the ps's own graph then meets the
    workers' in it. TF1's pattern of workers telling the ps they are done (a queue per ps task,
    `shared_name="done_queue%d"`, that the ps dequeues from before it exits) runs so. The
    engine's queue holds one numeric component; an enqueue into a full queue waits for room
    (as TF1's; closing the queue fails it), and dequeue_many, dequeue_up_to and is_closed are
    refused naming the limit."""

    def __init__(self, queue, graph, device, capacity, shared_name):
        self._what = "%s(%r) on %s" % (type(queue).__name__, queue._name, device)
        if type(queue) is not FIFOQueue:
            self.refuse("a %s" % type(queue).__name__)
        if len(queue._dtypes) != 1 or queue._dtypes[0] == _dtypes.string:
            self.refuse("components %s (it holds one numeric component)"
                        % [d.name for d in queue._dtypes])
        self._graph, self._device, self._dtype = graph, device, queue._dtypes[0]
        shape = queue._shapes[0] if queue._shapes else None
        with graph._device_scope(device):
            self._handle = graph._add_op("FIFOQueueV2", [], {
                "dtype": self._dtype._enum, "shape": shape,
                "capacity": -1 if capacity is None else int(capacity),
                "shared_name": shared_name or queue._name}, queue._name).outputs[0]

    def refuse(self, what):
        raise NotImplementedError(
            "%s: %s is not supported on a queue of another task (Note [Queues on other tasks] "
            "in shardflow/queue_ops.py: one numeric component; enqueue, enqueue_many, dequeue, "
            "size and close). Place the queue in this process's own task, or use one queue per "
            "component" % (self._what, what))

    def enqueue(self, op_type, value, name):
        with self._graph._device_scope(self._device):
            return self._graph._add_op(op_type, [self._handle, value],
                                       {"T": self._dtype._enum}, name)

    def dequeue(self, n, name):
        if n is not None:
            self.refuse("dequeue_many/dequeue_up_to")
        with self._graph._device_scope(self._device):
            return self._graph._add_op("QueueDequeueV2", [self._handle],
                                       {"T": self._dtype._enum}, name).outputs[0]

    def simple(self, op_type, name):
        with self._graph._device_scope(self._device):
            return self._graph._add_op(op_type, [self._handle], {}, name)


class FIFOQueue(QueueBase):
    """Elements leave in the order they came (tf.FIFOQueue)."""

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose dequeue_many pads each component to the longest element (unknown
    dimensions in `shapes` may differ between elements), as tf.PaddingFIFOQueue."""

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)

    def _new_state(self, capacity, shapes, seed):
        state = super()._new_state(capacity, shapes, seed)
        state._check = self._check_rank
        return state

    def _check_rank(self, element):
        out = []
        for i, (value, dt) in enumerate(zip(element, self._dtypes)):
            value = np.asarray(value, dtype=dt.as_numpy_dtype)
            want = self._shapes[i]
            if want is not None and len(want) != value.ndim:
                raise errors.InvalidArgumentError(
                    "queue '%s': component %d has rank %d but the queue holds rank %d"
                    % (self._name, i, value.ndim, len(want)))
            out.append(value)
        return tuple(out)

    def _dequeue_op(self, n, allow_smaller, name):
        if n is None:
            return super()._dequeue_op(n, allow_smaller, name)
        states = self._states

        def run(token):
            state = states.get(token)
            taken = state.dequeue(int(n), allow_smaller)
            out = []
            for i, d in enumerate(state.dtypes):
                parts = [e[i] for e in taken]
                shape = np.max([p.shape for p in parts], axis=0) if parts[0].ndim else ()
                batch = np.zeros([len(parts)] + list(shape), d.as_numpy_dtype)
                for j, p in enumerate(parts):
                    batch[(j,) + tuple(slice(0, s) for s in p.shape)] = p
                out.append(batch)
            return out
        out = py_func(run, [self._token], list(self._dtypes), name=name)
        for i, t in enumerate(out):
            t.set_shape([None if allow_smaller else int(n)] + list(self._shapes[i]))
        if self._names is not None:
            return dict(zip(self._names, out))
        return out[0] if len(out) == 1 else out


class RandomShuffleQueue(QueueBase):
    """Elements leave in random order; a dequeue waits until min_after_dequeue elements would
    remain (until the queue is closed), as tf.RandomShuffleQueue."""

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None, seed=None,
                 shared_name=None, name="random_shuffle_queue"):
        if min_after_dequeue >= capacity:
            raise ValueError("RandomShuffleQueue: min_after_dequeue (%d) must be below capacity "
                             "(%d)" % (min_after_dequeue, capacity))
        self._shuffle_min = int(min_after_dequeue)
        super().__init__(capacity, dtypes, shapes, names, shared_name, name, seed=seed)


# ---- readers --------------------------------------------------------------------------------


class _ReaderState:
    """One session's position in a reader's files."""

    def __init__(self):
        self.lock = threading.Lock()
        self.records = None   # the iterator over the current file's records
        self.file = None
        self.produced = 0
        self.completed = 0


class ReaderBase:
    """A reader takes filenames from a queue and yields (key, value) records: read, read_up_to,
    num_records_produced, num_work_units_completed, reset (TF1's tf.ReaderBase). Its position
    is per session (Note [Queues per session])."""

    def __init__(self, name=None):
        from shardflow.framework import get_default_graph
        self._name = name or _unique(type(self).__name__)
        self._token = _session_token(get_default_graph())
        self._states = _PerSession(_ReaderState)

    def _file_records(self, path):  # pragma: no cover (each reader overrides it)
        raise NotImplementedError

    def _keyed_records(self, path):
        """(key, value) of each record of `path`; the key as TF1's reader names it (by default
        "<file>:<record number from 0>", FixedLengthRecordReader's)."""
        for i, value in enumerate(self._file_records(path)):
            yield "%s:%d" % (path, i), value

    def _next(self, rs, queue_state):
        while True:
            if rs.records is None:
                (name,) = queue_state.dequeue(1, False)[0]
                rs.file = os.fsdecode(np.asarray(name).item())
                if not os.path.exists(rs.file):
                    raise errors.NotFoundError("%s: %s: no such file" % (self._name, rs.file))
                rs.records = iter(self._keyed_records(rs.file))
            try:
                key, value = next(rs.records)
            except StopIteration:
                rs.records = None
                rs.completed += 1
                continue
            rs.produced += 1
            return key.encode(), value

    def _queue_states(self, queue):
        states = getattr(queue, "_states", None)
        if states is None:
            raise TypeError("%s.read takes a queue of filenames (tf.train.string_input_producer "
                            "or tf.FIFOQueue), got %r" % (type(self).__name__, queue))
        return states

    def read(self, queue, name=None):
        """(key, value) string scalars: the next record, from the next file when one ends."""
        queue_states = self._queue_states(queue)

        def run(token):
            rs = self._states.get(token)
            with rs.lock:
                key, value = self._next(rs, queue_states.get(token))
            return [np.array(key, dtype=object), np.array(value, dtype=object)]
        key, value = py_func(run, [self._token], [dtypes.string, dtypes.string],
                             name=name or self._name)
        key.set_shape([])
        value.set_shape([])
        return key, value

    def read_up_to(self, queue, num_records, name=None):
        """Up to num_records (key, value) pairs as two string vectors."""
        queue_states = self._queue_states(queue)

        def run(token):
            rs, queue_state = self._states.get(token), queue_states.get(token)
            keys, values = [], []
            with rs.lock:
                for _ in range(int(num_records)):
                    try:
                        k, v = self._next(rs, queue_state)
                    except errors.OutOfRangeError:
                        if keys:
                            break
                        raise
                    keys.append(k)
                    values.append(v)
            return [np.array(keys, dtype=object), np.array(values, dtype=object)]
        keys, values = py_func(run, [self._token], [dtypes.string, dtypes.string],
                               name=name or self._name + "_up_to")
        keys.set_shape([None])
        values.set_shape([None])
        return keys, values

    def num_records_produced(self, name=None):
        return py_func(lambda token: np.int64(self._states.get(token).produced), [self._token],
                       dtypes.int64, name=name)

    def num_work_units_completed(self, name=None):
        return py_func(lambda token: np.int64(self._states.get(token).completed),
                       [self._token], dtypes.int64, name=name)

    def reset(self, name=None):
        def run(token):
            rs = self._states.get(token)
            with rs.lock:
                rs.records, rs.produced, rs.completed = None, 0, 0
        return py_func(run, [self._token], [], name=name)


class TextLineReader(ReaderBase):
    """The lines of each file (without the line end); skip_header_lines per file."""

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__(name)
        self._skip = int(skip_header_lines or 0)

    def _keyed_records(self, path):
        # TF1's key: "<file>:<line number from 1>", the skipped header lines counted.
        with open(path, "rb") as f:
            for i, line in enumerate(f):
                if i >= self._skip:
                    yield "%s:%d" % (path, i + 1), line.rstrip(b"\n").rstrip(b"\r")


class WholeFileReader(ReaderBase):
    """Each file's whole contents as one record (key: the file name)."""

    def _file_records(self, path):
        with open(path, "rb") as f:
            yield f.read()

    def _keyed_records(self, path):
        for value in self._file_records(path):
            yield path, value


class FixedLengthRecordReader(ReaderBase):
    """Records of record_bytes bytes after header_bytes, before footer_bytes, as TF1's."""

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None,
                 name=None, encoding=None):
        super().__init__(name)
        if record_bytes <= 0:
            raise ValueError("FixedLengthRecordReader: record_bytes must be positive")
        if hop_bytes or encoding:
            raise ValueError("FixedLengthRecordReader: hop_bytes and encoding are not supported")
        self._record = int(record_bytes)
        self._header = int(header_bytes or 0)
        self._footer = int(footer_bytes or 0)

    def _file_records(self, path):
        size = os.path.getsize(path)
        body = size - self._header - self._footer
        if body < 0 or body % self._record:
            raise errors.DataLossError(
                "FixedLengthRecordReader: %s has %d bytes, which is not header %d + a whole "
                "number of %d-byte records + footer %d"
                % (path, size, self._header, self._record, self._footer))
        with open(path, "rb") as f:
            f.seek(self._header)
            for _ in range(body // self._record):
                yield f.read(self._record)


class TFRecordReader(ReaderBase):
    """The records of TFRecord files (shardflow/tfrecord.py checks their CRCs)."""

    def __init__(self, name=None, options=None):
        super().__init__(name)
        self._options = options

    def _file_records(self, path):
        from shardflow import tfrecord
        return tfrecord.tf_record_iterator(path, self._options)

    def _keyed_records(self, path):
        # TF1's key: "<file>:<byte offset of the record>" in the (uncompressed) record stream;
        # each record is its length (8 bytes), the length's CRC, the data and the data's CRC.
        offset = 0
        for value in self._file_records(path):
            yield "%s:%d" % (path, offset), value
            offset += 16 + len(value)


# ---- input producers and batchers (tf.train.*) ----------------------------------------------


def _runner(queue, enqueue_ops):
    from shardflow.coordinator import QueueRunner, add_queue_runner
    qr = QueueRunner(queue, enqueue_ops)
    add_queue_runner(qr)
    return qr


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None,
                   capacity=32, shared_name=None, summary_name=None, name=None,
                   cancel_op=None):
    """A queue fed, by a QueueRunner, with the rows of input_tensor for num_epochs epochs (None:
    forever), each epoch shuffled when `shuffle`; after the last epoch the queue closes."""
    input_tensor = convert_to_tensor(input_tensor)
    shape = input_tensor.shape.as_list()[1:] if input_tensor.shape.ndims else None
    if element_shape is not None:
        shape = TensorShape(element_shape).as_list()
    q = FIFOQueue(capacity, [input_tensor.dtype], [shape] if shape is not None else None,
                  name=name or "input_producer")
    # The epochs done and the shuffling's generator, per session (Note [Queues per session]).
    counters = _PerSession(lambda: {"done": 0, "rng": np.random.RandomState(seed),
                                    "lock": threading.Lock()})

    def one_epoch(token, rows):
        epochs = counters.get(token)
        with epochs["lock"]:
            if num_epochs is not None and epochs["done"] >= num_epochs:
                raise errors.OutOfRangeError("input_producer '%s': %d epoch(s) done"
                                             % (q.name, num_epochs))
            epochs["done"] += 1
            order = (epochs["rng"].permutation(len(rows)) if shuffle
                     else np.arange(len(rows)))
        return np.asarray(rows)[order]

    epoch = py_func(one_epoch, [q._token, input_tensor], input_tensor.dtype,
                    name=q.name + "_epoch")
    _runner(q, [q.enqueue_many([epoch])])
    return q


def match_filenames_once(pattern, name=None):
    """TF1's tf.train.match_filenames_once: a local variable (initialised by
    local_variables_initializer) holding the files matching the glob `pattern` (or any of a
    list of them), sorted; typically the input of string_input_producer. Matched when the
    graph is built."""
    import glob as _glob
    from shardflow.framework import GraphKeys
    from shardflow.variables import Variable
    patterns = [pattern] if isinstance(pattern, (str, bytes)) else list(pattern)
    found = sorted({f for p in patterns
                    for f in _glob.glob(p.decode() if isinstance(p, bytes) else p)})
    from shardflow import ops
    value = ops.constant(np.array([f.encode() for f in found], dtype=object), dtypes.string)
    return Variable(value, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                    name=name or "matching_filenames")


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32,
                          shared_name=None, name=None, cancel_op=None):
    """A queue of the filenames in string_tensor, num_epochs times (None: forever), each epoch
    shuffled when `shuffle` (TF1's tf.train.string_input_producer)."""
    names = convert_to_tensor(string_tensor, dtype=dtypes.string)
    return input_producer(names, [], num_epochs, shuffle, seed, capacity, shared_name,
                          name=name or "input_producer")


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """A queue of the integers 0..limit-1, num_epochs times."""
    return input_producer(np.arange(int(limit), dtype=np.int32), [], num_epochs, shuffle, seed,
                          capacity, shared_name, name=name or "input_producer")


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """One row at a time of each tensor in tensor_list (the same row of each), num_epochs times:
    a list of tensors (TF1's tf.train.slice_input_producer)."""
    tensors = [convert_to_tensor(t) for t in tensor_list]
    n = {t.shape.as_list()[0] if t.shape.ndims else None for t in tensors}
    if len(n) != 1 or None in n:
        raise ValueError("slice_input_producer: the tensors need one known first dimension, got "
                         "%s" % [t.shape for t in tensors])
    q = range_input_producer(n.pop(), num_epochs, shuffle, seed, capacity, shared_name,
                             name or "input_producer")
    index = q.dequeue()
    from shardflow.array_ops import gather
    return [gather(t, index) for t in tensors]


def limit_epochs(tensor, num_epochs=None, name=None):
    """`tensor`, then OutOfRangeError once it has been evaluated num_epochs times."""
    if num_epochs is None:
        return tensor
    tensor = convert_to_tensor(tensor)
    count = {"n": 0}
    lock = threading.Lock()

    def run(value):
        with lock:
            if count["n"] >= num_epochs:
                raise errors.OutOfRangeError("limit_epochs: %d epoch(s) done" % num_epochs)
            count["n"] += 1
        return value
    out = py_func(run, [tensor], tensor.dtype, name=name or "limit_epochs")
    out.set_shape(tensor.shape)
    return out


def _component(t):
    from shardflow.sparse_tensor import SparseTensor
    return t if isinstance(t, SparseTensor) else convert_to_tensor(t)


def _structure(tensors):
    if isinstance(tensors, dict):
        keys = sorted(tensors)
        return keys, [_component(tensors[k]) for k in keys]
    return None, [_component(t) for t in _as_list(tensors)]


# Note [Batching SparseTensors]. tf.train.batch of a SparseTensor element (a VarLenFeature's)
# gives a SparseTensor batch, as TF1's. Its queue holds four components for it, the indices
# [n, rank], the values [n], the dense shape [rank] and n, in a padding queue; after the
# dequeue the padded rows are dropped and each entry's index gets its batch row first, the
# batch's dense shape being [rows] + the largest of the elements'.

def _split_sparse(flat):
    """(components for the queue, for each item of `flat` None or its SparseTensor's dtype)."""
    from shardflow import ops
    from shardflow.sparse_tensor import SparseTensor
    out, plan = [], []
    for t in flat:
        if isinstance(t, SparseTensor):
            indices = ops.cast(t.indices, _dtypes.int64)
            out += [indices, t.values, ops.cast(t.dense_shape, _dtypes.int64),
                    ops.cast(ops.shape(indices)[0], _dtypes.int64)]
            plan.append(t.values.dtype)
        else:
            out.append(t)
            plan.append(None)
    return out, plan


def _join_sparse(out, plan):
    """The dequeued components back as the elements' structure, SparseTensors rebuilt."""
    if all(p is None for p in plan):
        return out
    from shardflow import array_ops, ops
    from shardflow.sparse_tensor import SparseTensor
    joined, k = [], 0
    for p in plan:
        if p is None:
            joined.append(out[k])
            k += 1
            continue
        indices, values, shapes, counts = out[k:k + 4]
        k += 4
        longest = ops.shape(values)[1]
        rows = ops.shape(values)[0]
        keep = ops.less(ops.cast(ops.expand_dims(array_ops.range(longest), 0), _dtypes.int64),
                        ops.expand_dims(counts, 1))                       # [rows, longest]
        row_of = ops.cast(array_ops.tile(ops.expand_dims(array_ops.range(rows), 1),
                                         array_ops.stack([1, longest])), _dtypes.int64)
        picked = array_ops.boolean_mask(indices, keep)                    # [n, rank]
        batch_row = ops.expand_dims(array_ops.boolean_mask(row_of, keep), 1)
        joined.append(SparseTensor(
            ops.concat([batch_row, picked], 1), array_ops.boolean_mask(values, keep),
            ops.concat([ops.reshape(ops.cast(rows, _dtypes.int64), [1]),
                        ops.reduce_max(shapes, axis=0)], 0)))
    return joined


def _shapes(tensors, shapes, enqueue_many, dynamic_pad, what):
    if shapes is not None:
        return [TensorShape(s).as_list() for s in shapes]
    out = []
    for t in tensors:
        dims = t.shape.as_list() if t.shape.ndims is not None else None
        if dims is not None and enqueue_many:
            dims = dims[1:]
        if dims is None or (not dynamic_pad and any(d is None for d in dims)):
            raise ValueError("%s: all shapes must be fully defined (pass shapes=, or "
                             "dynamic_pad=True for unknown dimensions); got %s" % (what, t.shape))
        out.append(dims)
    return out


def _batch(tensors_list, batch_size, capacity, enqueue_many, shapes, dynamic_pad,
           allow_smaller_final_batch, name, queue_factory, threads_per_list,
           padding_factory=None):
    keys, first = _structure(tensors_list[0])
    first, plan = _split_sparse(first)
    sparse = any(p is not None for p in plan)
    if sparse and (enqueue_many or padding_factory is None or shapes is not None):
        raise NotImplementedError(
            "%s: a SparseTensor is batched by tf.train.batch / batch_join without "
            "enqueue_many or shapes (Note [Batching SparseTensors]); Dataset.batch batches "
            "them in every case" % name)
    shapes = _shapes(first, shapes, enqueue_many, dynamic_pad or sparse, name)
    q = (padding_factory if sparse else queue_factory)([t.dtype for t in first], shapes)
    enqueues = []
    for tensors in tensors_list:
        _, flat = _structure(tensors)
        flat, _ = _split_sparse(flat)
        op = q.enqueue_many(flat) if enqueue_many else q.enqueue(flat)
        enqueues.extend([op] * threads_per_list)
    _runner(q, enqueues)
    out = q.dequeue_up_to(batch_size) if allow_smaller_final_batch else \
        q.dequeue_many(batch_size)
    out = _join_sparse(out if isinstance(out, list) else [out], plan)
    if keys is not None:
        return dict(zip(keys, out))
    if isinstance(tensors_list[0], (list, tuple)) and len(out) > 1:
        return out
    # One tensor batched (also as a one-element list, tf.train.batch([image], n)) is one
    # tensor, as TF1's: its queue's dequeue of one component is a Tensor.
    return out[0]


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of batch_size from a FIFO queue that num_threads QueueRunner threads fill with
    `tensors` (a list or dict of tensors; SparseTensors batch to a SparseTensor, Note
    [Batching SparseTensors]), as TF1's tf.train.batch."""
    def padded(dts, shp):
        return PaddingFIFOQueue(capacity, dts, shp, name=name or "batch/padding_fifo_queue")

    def factory(dts, shp):
        if dynamic_pad:
            return padded(dts, shp)
        return FIFOQueue(capacity, dts, shp, name=name or "batch/fifo_queue")
    return _batch([tensors], batch_size, capacity, enqueue_many, shapes, dynamic_pad,
                  allow_smaller_final_batch, name or "batch", factory, int(num_threads),
                  padded)


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """As batch, with one QueueRunner thread per list of tensors in tensors_list."""
    def padded(dts, shp):
        return PaddingFIFOQueue(capacity, dts, shp,
                                name=name or "batch_join/padding_fifo_queue")

    def factory(dts, shp):
        if dynamic_pad:
            return padded(dts, shp)
        return FIFOQueue(capacity, dts, shp, name=name or "batch_join/fifo_queue")
    return _batch(list(tensors_list), batch_size, capacity, enqueue_many, shapes, dynamic_pad,
                  allow_smaller_final_batch, name or "batch_join", factory, 1, padded)


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    """Random batches from a RandomShuffleQueue holding at least min_after_dequeue elements
    after each dequeue (until its input ends), as TF1's tf.train.shuffle_batch."""
    def factory(dts, shp):
        return RandomShuffleQueue(capacity, min_after_dequeue, dts, shp, seed=seed,
                                  name=name or "shuffle_batch/random_shuffle_queue")
    return _batch([tensors], batch_size, capacity, enqueue_many, shapes, False,
                  allow_smaller_final_batch, name or "shuffle_batch", factory, int(num_threads))


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    """As shuffle_batch, with one QueueRunner thread per list of tensors."""
    def factory(dts, shp):
        return RandomShuffleQueue(capacity, min_after_dequeue, dts, shp, seed=seed,
                                  name=name or "shuffle_batch_join/random_shuffle_queue")
    return _batch(list(tensors_list), batch_size, capacity, enqueue_many, shapes, False,
                  allow_smaller_final_batch, name or "shuffle_batch_join", factory, 1)


__all__ = ["FIFOQueue", "FixedLengthRecordReader", "PaddingFIFOQueue", "QueueBase",
           "RandomShuffleQueue", "ReaderBase", "TFRecordReader", "TextLineReader",
           "WholeFileReader"]
