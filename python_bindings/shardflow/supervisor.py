"""TF1's tf.train.Supervisor (the session wrapper before MonitoredTrainingSession) and
basic_train_loop.

Example::

    sv = sf.train.Supervisor(logdir="/tmp/train", save_model_secs=60)
    with sv.managed_session() as sess:       # restored from /tmp/train when it has a checkpoint
        while not sv.should_stop():
            sess.run(train_op)

The chief's session comes from a SessionManager (session_manager.py: a ChiefSessionCreator of
the Supervisor's ops), the others wait for it. With a logdir, the chief writes the graph and a
SessionLog START into its event files, and its standard services are LooperThreads of the
Supervisor's Coordinator: summaries every save_summaries_secs, global_step/sec beside them, a
checkpoint "<logdir>/model.ckpt-<step>" every save_model_secs; the graph's queue runners start
too. An argument left at USE_DEFAULT takes the default; None turns the thing off. As TF1's,
there is no checkpoint at stop(): save with ``sv.saver.save(sess, sv.save_path,
global_step=sv.global_step)`` if you need one.

Thread safety: should_stop/request_stop may be called from any thread (the Coordinator's).
"""

import contextlib
import os
import time

from shardflow import tf_logging as logging
from shardflow.framework import get_default_graph

USE_DEFAULT = 0


class Supervisor:
    """See the module text."""

    USE_DEFAULT = USE_DEFAULT

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT,
                 is_chief=True, init_op=USE_DEFAULT, init_feed_dict=None,
                 local_init_op=USE_DEFAULT, logdir=None, summary_op=USE_DEFAULT,
                 saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs=120,
                 save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120,
                 checkpoint_basename="model.ckpt", session_manager=None,
                 summary_writer=USE_DEFAULT, init_fn=None, local_init_run_options=None):
        from shardflow.checkpoint_utils import with_checkpoint_initializers
        from shardflow.coordinator import Coordinator
        from shardflow.session_creators import INIT_OP, LOCAL_INIT_OP, Scaffold, _default_saver
        from shardflow.session_manager import SessionManager
        from shardflow.summary import merge_all
        from shardflow.train import get_global_step
        from shardflow.variables import global_variables_initializer

        def pick(value, make):
            return make() if value is USE_DEFAULT else value
        self._graph = graph or get_default_graph()
        with self._graph.as_default():
            self._init_op = pick(init_op, lambda: Scaffold.get_or_default(
                "init_op", INIT_OP,
                lambda: with_checkpoint_initializers(global_variables_initializer())))
            self._local_init_op = pick(local_init_op, lambda: Scaffold.get_or_default(
                "local_init_op", LOCAL_INIT_OP, Scaffold.default_local_init_op))
            self._ready_op = None if ready_op is USE_DEFAULT else ready_op
            self._ready_for_local_init_op = None if ready_for_local_init_op is USE_DEFAULT \
                else ready_for_local_init_op
            self._summary_op = pick(summary_op, merge_all)
            self._saver = pick(saver, _default_saver)
            self._global_step = pick(global_step, lambda: get_global_step(self._graph))
        self._is_chief = is_chief
        self._init_feed_dict = init_feed_dict
        self._init_fn = init_fn
        self._logdir = logdir
        self._save_summaries_secs = save_summaries_secs
        self._save_model_secs = save_model_secs
        self._stop_grace_secs = stop_grace_secs
        self._save_path = os.path.join(logdir, checkpoint_basename) if logdir else None
        self._coord = Coordinator()
        self._started_threads = []
        self._summary_writer = None
        if is_chief and logdir:
            from shardflow.summary import FileWriter
            self._summary_writer = FileWriter(logdir) if summary_writer is USE_DEFAULT \
                else summary_writer
        elif summary_writer is not USE_DEFAULT:
            self._summary_writer = summary_writer
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=self._graph,
            recovery_wait_secs=recovery_wait_secs)

    # ---- what it holds ----
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    is_chief = property(lambda self: self._is_chief)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    # ---- sessions ----
    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False,
                                    max_wait_secs=7200, start_standard_services=True):
        """The chief: a session initialised or restored from logdir's newest checkpoint, then
        (start_standard_services) the services and queue runners; the others: a session once
        the chief made the model ready."""
        if self._coord.should_stop():
            self._coord.clear_stop()
        if self._summary_writer is not None and self._summary_writer._closed and self._logdir:
            from shardflow.summary import FileWriter  # stop() closed it: a new file, as TF1's
            self._summary_writer = FileWriter(self._logdir)
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver,
                checkpoint_dir=self._logdir, wait_for_checkpoint=wait_for_checkpoint,
                max_wait_secs=max_wait_secs, config=config,
                init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            if self._logdir:
                # As TF1's chief: the graph as logdir/graph.pbtxt.
                from shardflow.graph_io import write_graph
                write_graph(self._graph, self._logdir, "graph.pbtxt")
            if start_standard_services:
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config,
                                                          max_wait_secs=max_wait_secs)
        if start_standard_services:
            self.start_queue_runners(sess)
        return sess

    def start_standard_services(self, sess):
        """Writes the graph and SessionLog START to the event files; starts the summary and
        checkpoint threads (those whose interval and op exist). Returns the threads."""
        from shardflow.summary_pb import SessionLog
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because "
                               "only chief supervisors can write events.")
        threads = []
        if self._summary_writer is not None:
            step = self._step(sess)
            self._summary_writer.add_graph(self._graph)
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), step)
            if self._save_summaries_secs:
                threads.append(self.loop(self._save_summaries_secs, self._write_summaries,
                                         args=(sess,)))
        if self._saver is not None and self._save_path and self._save_model_secs:
            threads.append(self.loop(self._save_model_secs, self._save_checkpoint,
                                     args=(sess,)))
        return threads

    def start_queue_runners(self, sess, queue_runners=None):
        """Starts the graph's queue runners (or `queue_runners`) under the coordinator."""
        from shardflow.coordinator import start_queue_runners
        if queue_runners is None:
            threads = start_queue_runners(sess=sess, coord=self._coord)
        else:
            threads = []
            for qr in queue_runners:
                threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True,
                                                 start=True))
        self._started_threads.extend(threads)
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None):
        """A LooperThread of the coordinator calling target(*args, **kwargs) every
        timer_interval_secs seconds, started."""
        from shardflow.coordinator import LooperThread
        looper = LooperThread.loop(self._coord, timer_interval_secs, target, args, kwargs)
        self._started_threads.append(looper)
        return looper

    def _step(self, sess):
        if self._global_step is None:
            return None
        from shardflow.train import global_step
        return global_step(sess, self._global_step)

    def _write_summaries(self, sess):
        step = self._step(sess)
        if self._summary_op is not None:
            self.summary_computed(sess, sess.run(self._summary_op), step)
        rate = self._rate(step)
        if rate is not None and self._global_step is not None:
            from shardflow.basic_hooks import _scalar_summary
            tag = getattr(self._global_step, "op", None)
            tag = (tag.name if tag is not None else "global_step") + "/sec"
            self._summary_writer.add_summary(_scalar_summary(tag, rate), step)

    def _rate(self, step):
        """Global steps per second since the previous call (None the first time)."""
        now, last = time.monotonic(), getattr(self, "_last_rate_point", None)
        self._last_rate_point = (now, step)
        if last is None or step is None or now <= last[0]:
            return None
        return (step - last[1]) / (now - last[0])

    def _save_checkpoint(self, sess):
        from shardflow.summary_pb import SessionLog
        path = self._saver.save(sess, self._save_path, global_step=self._global_step)
        if self._summary_writer is not None:
            self._summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=path), self._step(sess))

    def summary_computed(self, sess, summary, global_step=None):
        """Writes `summary` (a fetched summary) at global_step (default: the global step's
        value now)."""
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer (a Supervisor with "
                               "a logdir, as the chief).")
        if global_step is None and self._global_step is not None:
            global_step = self._step(sess)
        self._summary_writer.add_summary(summary, global_step)

    # ---- stopping ----
    def should_stop(self):
        return self._coord.should_stop()

    def request_stop(self, ex=None):
        """Asks every thread to stop; `ex` is re-raised by stop() (unless OutOfRangeError)."""
        self._coord.request_stop(ex=ex)

    def stop_on_exception(self):
        return self._coord.stop_on_exception()

    def wait_for_stop(self):
        self._coord.wait_for_stop()

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        """Stops and joins the services and queue runners (re-raising an exception given to
        request_stop), then writes SessionLog STOP and closes the summary writer."""
        from shardflow.summary_pb import SessionLog
        self._coord.request_stop()
        try:
            self._coord.join(list(threads or []) + self._started_threads,
                             stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            self._started_threads = []
            if close_summary_writer and self._summary_writer is not None and \
                    not self._summary_writer._closed:
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True,
                        close_summary_writer=True):
        """A context manager for a prepared session (prepare_or_wait_for_session): an
        exception in the block stops the services and is re-raised by stop(), unless it is
        OutOfRangeError (the end of the input), which ends training quietly; the session
        closes at the end."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 (reported to the coordinator, raised by stop)
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    try:
                        sess.close()
                    except Exception as e:  # noqa: BLE001
                        logging.warning("Supervisor: closing the session failed: %s", e)


def basic_train_loop(supervisor, train_step_fn, args=None, kwargs=None, master=""):
    """Calls train_step_fn(session, *args, **kwargs) in a managed session until the
    supervisor should stop (train_step_fn may call supervisor.request_stop())."""
    with supervisor.managed_session(master) as sess:
        while not supervisor.should_stop():
            train_step_fn(sess, *(args or ()), **(kwargs or {}))


__all__ = ["Supervisor", "basic_train_loop"]
