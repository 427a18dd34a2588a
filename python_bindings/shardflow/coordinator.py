"""TF1's thread coordination (``sf.train.Coordinator``, ``LooperThread``) and its queue-runner
entry points.

``QueueRunner``, ``add_queue_runner`` and ``start_queue_runners`` drive TF1's queue-fed input
pipelines (shardflow/queue_ops.py: tf.FIFOQueue, the readers, tf.train.batch, shuffle_batch,
string_input_producer, ...); with tf.data or feed_dict inputs there are none to start and
``start_queue_runners`` returns ``[]``.

Example (TF1's pattern for the caller's own threads)::

    coord = sf.train.Coordinator()
    threads = [threading.Thread(target=work, args=(coord,)) for _ in range(4)]
    for t in threads:
        t.start()
    ...                      # inside work(): with coord.stop_on_exception():
    coord.request_stop()     #                    while not coord.should_stop(): ...
    coord.join(threads)      # re-raises an exception a thread reported

Thread safety: every Coordinator method may be called from any thread.
"""

import contextlib
import sys
import threading
import time

from shardflow import errors, tf_logging


class Coordinator:
    """Tells a set of threads when to stop, and carries the first exception one of them reports
    back to the thread that calls join(), as TF1's tf.train.Coordinator.

    Exceptions of `clean_stop_exception_types` (default: OutOfRangeError, the end of the input)
    stop the threads without being reported.
    """

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None  # (type, value, traceback) of the first reported error
        self._joined = False
        self._registered_threads = set()

    def _filter_exception(self, ex):
        value = ex[1] if isinstance(ex, tuple) else ex
        return None if isinstance(value, self._clean_stop_exception_types) else ex

    def request_stop(self, ex=None):
        """Asks the threads to stop. `ex` (an exception, or a sys.exc_info() tuple) is recorded
        for join() to re-raise, unless an earlier one was or it is a clean-stop type. After
        join(), a reported exception is raised here at once."""
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined and ex is not None:
                if isinstance(ex, tuple):
                    raise ex[1].with_traceback(ex[2])
                raise ex
            if self._stop_event.is_set():
                return
            if ex is not None and self._exc_info_to_raise is None:
                if isinstance(ex, tuple):
                    exc_info = ex
                elif isinstance(ex, BaseException):
                    exc_info = (type(ex), ex, ex.__traceback__)
                else:
                    exc_info = None
                if exc_info is None or len(exc_info) != 3 or exc_info[1] is None:
                    exc_info = _as_exc_info(ValueError(
                        "request_stop(ex=%r): ex must be an exception or a sys.exc_info() "
                        "tuple" % (ex,)))
                tf_logging.get_logger().info("Error reported to Coordinator: %s", exc_info[1])
                self._exc_info_to_raise = exc_info
            self._stop_event.set()

    def clear_stop(self):
        """Forgets the stop request and the recorded exception, so threads may start again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self):
        """True once a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """Inside the block, an exception is reported with request_stop(ex=...) and does not
        propagate (the thread's function then returns)."""
        try:
            yield
        except BaseException:  # noqa: B902 (TF1 reports every exception, SystemExit included)
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None):
        """Waits until a stop is requested or `timeout` seconds pass (None: no limit); True
        when a stop was requested."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        """Adds `thread` to those join() waits for."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits until every thread (`threads` and the registered ones) has ended, or a stop is
        requested and then `stop_grace_period_secs` more have passed. Re-raises the exception
        request_stop recorded; else raises RuntimeError naming the threads still running
        (logged instead with ignore_live_threads=True)."""
        with self._lock:
            threads = list(self._registered_threads.union(threads or ()))
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(0.1):
            pass
        grace_end = time.monotonic() + stop_grace_period_secs
        for t in threads:
            if t.is_alive():  # a thread never started cannot be joined
                t.join(max(0.0, grace_end - time.monotonic()))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise is not None:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)
            if stragglers:
                message = "Coordinator stopped with threads still running: %s" % " ".join(
                    stragglers)
                if not ignore_live_threads:
                    raise RuntimeError(message)
                tf_logging.get_logger().info(message)

    @property
    def joined(self):
        """True after join() returned or raised (until clear_stop())."""
        return self._joined

    def raise_requested_exception(self):
        """Raises the exception request_stop recorded, if any."""
        with self._lock:
            if self._exc_info_to_raise is not None:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)


def _as_exc_info(exception):
    try:
        raise exception
    except type(exception):
        return sys.exc_info()


class LooperThread(threading.Thread):
    """A daemon thread that calls `target(*args, **kwargs)` (or run_loop()) every
    `timer_interval_secs` seconds (back to back when None) until `coord` says stop, reporting an
    exception to it; registered with `coord` so that coord.join() waits for it. As TF1's."""

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError("LooperThread: coord must be a Coordinator, not %r" % (coord,))
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._loop_target = target
        if target is None and (args or kwargs):
            raise ValueError("LooperThread: args and kwargs need a target")
        self._loop_args = tuple(args or ())
        self._loop_kwargs = dict(kwargs or {})
        coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        """Starts a LooperThread calling `target` and returns it."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.monotonic()
                while not self._coord.wait_for_stop(max(0.0, next_time - time.monotonic())):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        """Called once in the thread before the first run_loop()."""

    def stop_loop(self):
        """Called once in the thread after the last run_loop()."""

    def run_loop(self):
        """One iteration: calls the target."""
        if self._loop_target is not None:
            self._loop_target(*self._loop_args, **self._loop_kwargs)


_QUEUE_RUNNERS = "queue_runners"  # tf.GraphKeys.QUEUE_RUNNERS


class QueueRunner:
    """Threads that run a queue's enqueue ops until the input ends, as TF1's
    tf.train.QueueRunner (queues: shardflow/queue_ops.py, Note [Queues in the client]).

    Each enqueue op gets a thread running it in a loop. When every thread has stopped on
    OutOfRangeError (the input's epochs are done) the queue is closed, so dequeues drain what is
    left and then raise OutOfRangeError; when the coordinator asks to stop, the queue is closed
    with its pending enqueues cancelled, so no thread stays blocked. Other errors are reported to
    the coordinator (coord.join re-raises them).
    """

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        if queue_runner_def is not None:
            raise ValueError("QueueRunner: queue_runner_def (a protobuf) is not supported")
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner needs a queue and at least one enqueue op")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else \
            queue.close(cancel_pending_enqueues=True)
        self._closed_types = tuple(queue_closed_exception_types or
                                   (errors.OutOfRangeError, errors.CancelledError))
        self._lock = threading.Lock()
        self._runs = 0
        self._exceptions = []

    @property
    def queue(self):
        return self._queue

    @property
    def enqueue_ops(self):
        return list(self._enqueue_ops)

    @property
    def exceptions_raised(self):
        return list(self._exceptions)

    @property
    def name(self):
        return self._queue.name

    def _run(self, sess, enqueue_op, coord):
        decremented = False
        try:
            while coord is None or not coord.should_stop():
                try:
                    sess.run(enqueue_op)
                except (RuntimeError, errors.FailedPreconditionError) as e:
                    if "session was closed" not in str(e) and "closed Session" not in str(e):
                        raise
                    return   # the session was closed under the runner (a script ending)
                except self._closed_types:
                    with self._lock:
                        self._runs -= 1
                        decremented = True
                        last = self._runs == 0
                    if last:
                        try:
                            sess.run(self._close_op)
                        except Exception as e:  # noqa: BLE001 (reported below)
                            tf_logging.vlog(1, "QueueRunner: ignored close error %s", e)
                    return
        except Exception as e:  # noqa: BLE001 (handed to the coordinator)
            with self._lock:
                self._exceptions.append(e)
            if coord is not None:
                coord.request_stop(e)
            else:
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs -= 1

    def _cancel_on_stop(self, sess, coord):
        coord.wait_for_stop()
        try:
            sess.run(self._cancel_op)
        except Exception as e:  # noqa: BLE001 (the session may be closed by now)
            tf_logging.vlog(1, "QueueRunner: ignored cancel error %s", e)

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """The runner's threads (one per enqueue op, plus one that cancels the queue when the
        coordinator stops); started when `start`."""
        with self._lock:
            self._runs = len(self._enqueue_ops)
            self._exceptions = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name="QueueRunner-%s-%d" % (self.name, i))
                   for i, op in enumerate(self._enqueue_ops)]
        if coord is not None:
            threads.append(threading.Thread(target=self._cancel_on_stop, args=(sess, coord),
                                            daemon=True, name="QueueRunnerCancel-" + self.name))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        _note_runner_threads(sess, threads)
        return threads


# Note [Runner threads at exit]. A script that starts queue runners and ends without closing its
# session or joining them (TF1's daemon runner threads let it) would leave the interpreter's
# finalization racing threads still inside a step (SIGABRT, "PyThreadState_Get: the function
# must be called with the GIL held"). At exit their sessions are closed first, which cancels
# the steps they wait in, and they are given a moment to return.
_runner_threads = []
_runner_lock = threading.Lock()


def _note_runner_threads(sess, threads):
    import weakref
    with _runner_lock:
        if not _runner_threads:
            import atexit
            atexit.register(_stop_runner_threads)
        _runner_threads.extend((weakref.ref(sess), t) for t in threads)


def _stop_runner_threads():
    with _runner_lock:
        entries = list(_runner_threads)
        _runner_threads.clear()
    live = [(ref(), t) for ref, t in entries if t.is_alive()]
    for sess in {id(sess): sess for sess, _ in live if sess is not None}.values():
        try:
            sess.close()
        except Exception:  # noqa: BLE001 (closed already, or its server is gone)
            pass
    deadline = time.monotonic() + 5.0
    for _, t in live:
        t.join(max(0.0, deadline - time.monotonic()))


def add_queue_runner(qr, collection=_QUEUE_RUNNERS):
    """Adds a QueueRunner to the default graph's collection (default QUEUE_RUNNERS)."""
    from shardflow.framework import get_default_graph
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=_QUEUE_RUNNERS):
    """Starts the threads of every QueueRunner in the session graph's collection; returns them
    (an empty list when the graph has none, e.g. with tf.data or feed_dict inputs)."""
    from shardflow.session import get_default_session
    sess = sess if sess is not None else get_default_session()
    if sess is None:
        raise ValueError("start_queue_runners: no session given and no default session")
    threads = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


__all__ = ["Coordinator", "LooperThread", "QueueRunner", "add_queue_runner",
           "start_queue_runners"]
