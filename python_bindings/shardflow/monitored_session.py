"""MonitoredSession, MonitoredTrainingSession and session hooks, as TensorFlow 1.x's tf.train
ones (the basic hooks are in basic_hooks.py, Scaffold and the session creators in
session_creators.py).

The chief initialises the variables, or restores them from the latest checkpoint in
`checkpoint_dir` (so a job restarted after a failure goes on from there), and saves checkpoints
periodically and at the end; the other workers wait until every variable has a value. Hooks see
each step: StopAtStepHook ends training at a global step, SyncReplicasOptimizer's hook runs
synchronous training.

Example::

    global_step = sf.train.get_or_create_global_step()
    train_op = opt.minimize(loss, global_step=global_step)
    with sf.train.MonitoredTrainingSession(
            master=server.target, is_chief=(task_index == 0), checkpoint_dir="/tmp/train",
            hooks=[sf.train.StopAtStepHook(last_step=1000)]) as sess:
        while not sess.should_stop():
            sess.run(train_op, feed_dict={x: images, y: labels})
"""

import os
import time

from shardflow import errors


class SessionRunArgs:
    """What a hook adds to a step: fetches (any structure sess.run takes), feeds, and
    `options` (a RunOptions) merged into the step's (see _merge_run_options)."""

    def __init__(self, fetches, feed_dict=None, options=None):
        self.fetches = fetches
        self.feed_dict = feed_dict
        self.options = options


class SessionRunContext:
    """What a hook knows about the step: the caller's args and the session; `request_stop()`
    ends training after this step."""

    def __init__(self, original_args, session):
        self.original_args = original_args
        self.session = session
        self._stop_requested = False

    def request_stop(self):
        self._stop_requested = True

    @property
    def stop_requested(self):
        return self._stop_requested


class SessionRunValues:
    """The values of a hook's fetches for the step; `options`, the step's RunOptions (the
    caller's merged with every hook's), and `run_metadata`, the step's RunMetadata (traced when
    the options asked for it)."""

    def __init__(self, results, options=None, run_metadata=None):
        self.results = results
        self.options = options
        self.run_metadata = run_metadata


class SessionRunHook:
    """Base class of hooks: override what you need.

    Order: begin() before the session exists (add ops here); after_create_session(session,
    coord) once the variables are ready; before_run(run_context) -> SessionRunArgs or None and
    after_run(run_context, run_values) around every step; end(session) when training ends
    normally."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


class StopAtStepHook(SessionRunHook):
    """Stops training when the global step reaches `last_step` (or `num_steps` past the step the
    session started at)."""

    def __init__(self, num_steps=None, last_step=None):
        if (num_steps is None) == (last_step is None):
            raise ValueError("StopAtStepHook takes exactly one of num_steps and last_step")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self):
        from shardflow.train import get_global_step
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("StopAtStepHook needs a global step: create it with "
                               "sf.train.get_or_create_global_step()")
        self._read = self._global_step.value()

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = int(session.run(self._read)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._read)

    def after_run(self, run_context, run_values):
        # The read ran beside the step's update: it may be one behind; ask again near the end.
        if int(run_values.results) + 1 >= self._last_step:
            if int(run_context.session.run(self._read)) >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Told around each save of a CheckpointSaverHook: begin(), before_save(session, step),
    after_save(session, step) (return True to end training), end(session, step)."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint every `save_secs` seconds or `save_steps` global steps, once the
    session is ready and at the end (files "<checkpoint_dir>/model.ckpt-<global step>"), with
    `saver`, else the scaffold's, else a Saver of every global variable. As TF1's, it also
    writes <checkpoint_dir>/graph.pbtxt and, in checkpoint_dir's event file, the graph and a
    SessionLog CHECKPOINT for each save."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None):
        if save_secs is None and save_steps is None:
            raise ValueError("CheckpointSaverHook takes save_secs or save_steps")
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._dir = checkpoint_dir
        self._save_secs = save_secs
        self._save_steps = save_steps
        self._saver = saver
        self._scaffold = scaffold
        self._listeners = list(listeners or [])
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._last_time = None
        self._last_step = None

    def begin(self):
        from shardflow.train import Saver, get_global_step
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("CheckpointSaverHook needs a global step: create it with "
                               "sf.train.get_or_create_global_step()")
        if self._saver is None and self._scaffold is None:
            self._saver = Saver()
        self._read = self._global_step.value()
        for listener in self._listeners:
            listener.begin()
        from shardflow.basic_hooks import _writer_for
        self._summary_writer = _writer_for(self._dir)

    def _save(self, session, step):
        """Saves; True when a listener asks to end training."""
        saver = self._saver if self._saver is not None else self._scaffold.saver
        for listener in self._listeners:
            listener.before_save(session, step)
        saver.save(session, self._path, global_step=step)
        from shardflow.summary_pb import SessionLog
        self._summary_writer.add_session_log(
            SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._path), step)
        self._last_time = time.monotonic()
        self._last_step = step
        stop = False
        for listener in self._listeners:
            stop = bool(listener.after_save(session, step)) or stop
        return stop

    def after_create_session(self, session, coord):
        """As TF1's: the graph as <checkpoint_dir>/graph.pbtxt and as a graph event in the
        directory's event file (the hooks have built their ops by now), then a first save."""
        from shardflow.framework import get_default_graph
        from shardflow.graph_io import write_graph
        graph = getattr(session, "graph", None) or get_default_graph()
        write_graph(graph, self._dir, "graph.pbtxt")
        self._summary_writer.add_graph(graph)
        self._save(session, int(session.run(self._read)))

    def before_run(self, run_context):
        return SessionRunArgs(self._read)

    def _due(self, step):
        if step == self._last_step:
            return False
        return (self._save_steps is not None and step >= self._last_step + self._save_steps) or \
            (self._save_secs is not None and time.monotonic() - self._last_time >= self._save_secs)

    def after_run(self, run_context, run_values):
        # As TF1's: the step read beside the train op may be stale (read before its update),
        # so when a save may be due the step is read again, after the update, and saved under
        # that number: model.ckpt-N holds the variables after exactly N steps.
        if self._due(int(run_values.results) + 1):
            step = int(run_context.session.run(self._read))
            if self._due(step) and self._save(run_context.session, step):
                run_context.request_stop()

    def end(self, session):
        step = int(session.run(self._read))
        if step != self._last_step:
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)
        self._summary_writer.flush()


def _merge_run_options(options, hook_options):
    """The step's RunOptions: the caller's `options` merged with the hooks' (Note [Hooks' run
    options]); None when there are none. Neither is changed.

    Note [Hooks' run options]. As TF1's _HookedSession, a hook's SessionRunArgs(options=...)
    joins the step's options: the highest trace_level, timeout_in_ms and inter_op_thread_pool,
    and output_partition_graphs, report_tensor_allocations_upon_oom and check_numerics when
    any asks; debug_options from the first that gives them. When the caller or a hook gave
    options, the step runs with a RunMetadata (the caller's, else a new one), and every hook's
    after_run gets it as run_values.run_metadata (a traced step's stats when a hook asked for
    FULL_TRACE: ProfilerHook traces so). Unlike TF1's, the caller's RunOptions is not
    modified: the merge is a new one."""
    if not hook_options:
        return options
    from shardflow.session import RunOptions
    merged = RunOptions()
    for o in ([options] if options is not None else []) + list(hook_options):
        merged.trace_level = max(merged.trace_level, o.trace_level)
        merged.timeout_in_ms = max(merged.timeout_in_ms, int(o.timeout_in_ms))
        merged.inter_op_thread_pool = max(merged.inter_op_thread_pool,
                                          int(o.inter_op_thread_pool))
        merged.output_partition_graphs |= bool(o.output_partition_graphs)
        merged.report_tensor_allocations_upon_oom |= bool(
            o.report_tensor_allocations_upon_oom)
        merged.check_numerics |= bool(getattr(o, "check_numerics", False))
        if merged.debug_options is None:
            merged.debug_options = o.debug_options
        if merged.experimental is None:
            merged.experimental = getattr(o, "experimental", None)
    return merged


class _StopRequested(Exception):
    pass


class StepContext:
    """What run_step_fn's step_fn gets: `session` (the raw session), run_with_hooks(...) (a
    step with every hook, as MonitoredSession.run) and request_stop() (ends training and
    leaves step_fn)."""

    def __init__(self, session, run_with_hooks_fn):
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self):
        return self._session

    def run_with_hooks(self, *args, **kwargs):
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self):
        raise _StopRequested()


class MonitoredSession:
    """A session that runs hooks around each step, made ready by `session_creator` (default
    ChiefSessionCreator(): initialise, or restore a checkpoint). Calls each hook's begin(),
    then creates the session, then after_create_session(); end() on a normal close. Leaving
    the ``with`` block after sf.errors.OutOfRangeError (end of input) or StopIteration ends
    training quietly.

    Recovery, as TF1's: a step that fails with sf.errors.AbortedError (a task of the cluster
    restarted since the session was created: its state is gone) closes the session, creates a
    new one with the session creator (the chief restores the latest checkpoint, the others
    wait for the model) and runs the step again; after _MAX_RECOVERIES in a row without a step
    between them, the error is raised. A task that is down fails the step UNAVAILABLE within
    the peer watch's bound instead (restart the job: it resumes from the checkpoint).

    Example::

        with sf.train.MonitoredSession(hooks=[sf.train.StopAtStepHook(last_step=100)]) as s:
            while not s.should_stop():
                s.run(train_op)
    """

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        from shardflow.session_creators import ChiefSessionCreator
        self._hooks = list(hooks or [])
        self._should_stop = False
        self._closed = False
        self._stop_grace_period_secs = stop_grace_period_secs
        for h in self._hooks:
            h.begin()
        self._creator = session_creator or ChiefSessionCreator()
        self._recoveries = 0   # in a row, without a step between them
        self._create()

    _MAX_RECOVERIES = 3

    def _create(self):
        """A session from the creator, after_create_session of every hook, the queue runners
        started (as TF1, with the session)."""
        from shardflow.coordinator import Coordinator, start_queue_runners
        self._coord = Coordinator()
        self._sess = self._creator.create_session()
        self._threads = []
        try:
            for h in self._hooks:
                h.after_create_session(self._sess, self._coord)
            self._threads = start_queue_runners(sess=self._sess, coord=self._coord)
        except BaseException:
            self._coord.request_stop()
            self._sess.close()
            raise

    def _stop_session(self):
        """Stops the queue runners and closes the session (hooks are not ended)."""
        self._coord.request_stop()
        if self._threads:
            try:
                self._coord.join(self._threads, self._stop_grace_period_secs,
                                 ignore_live_threads=True)
            except Exception as e:  # noqa: BLE001 (an input thread's error at shutdown)
                from shardflow import tf_logging
                tf_logging.warning("MonitoredSession: a queue runner failed: %s", e)
        self._sess.close()

    def _recover(self, error):
        """A new session after `error` (ABORTED), or `error` raised after too many."""
        from shardflow import tf_logging
        self._recoveries += 1
        if self._recoveries > self._MAX_RECOVERIES:
            raise error
        tf_logging.warning(
            "MonitoredSession: %s. A task of the cluster restarted (or was preempted): this "
            "session is closed and a new one created (recovery %d of at most %d in a row).",
            error, self._recoveries, self._MAX_RECOVERIES)
        try:
            self._stop_session()
        except errors.OpError:
            pass  # the old session's cleanup is best effort
        self._create()

    @property
    def graph(self):
        return self._sess.graph

    def _tf_sess(self):
        return self._sess

    def should_stop(self):
        return self._should_stop or self._closed or self._coord.should_stop()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs one step with every hook; returns `fetches`' values (recovering from an
        AbortedError, see the class's text)."""
        if self._closed:
            raise RuntimeError("Run called on a closed %s" % type(self).__name__)
        return self._recovering(lambda: self._run_once(fetches, feed_dict, options,
                                                       run_metadata))

    def _recovering(self, attempt):
        """attempt()'s value, after as many recoveries from an AbortedError as it takes (at
        most _MAX_RECOVERIES in a row)."""
        while True:
            try:
                result = attempt()
            except errors.AbortedError as e:
                self._recover(e)
                continue
            self._recoveries = 0
            return result

    def _run_once(self, fetches, feed_dict, options, run_metadata):
        from shardflow.session import RunMetadata, RunOptions
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        hook_args = [h.before_run(context) for h in self._hooks]
        feeds = dict(feed_dict or {})
        hook_fetches = {}
        hook_options = []
        for i, args in enumerate(hook_args):
            if args is None:
                continue
            if args.fetches is not None:
                hook_fetches[i] = args.fetches
            for k, v in (args.feed_dict or {}).items():
                if k in feeds:
                    raise RuntimeError("Same tensor is fed by a SessionRunHook and user (or "
                                       "two hooks): %r" % (k,))
                feeds[k] = v
            if args.options is not None:
                hook_options.append(args.options)
        # Note [Hooks' run options].
        step_options = _merge_run_options(options, hook_options)
        if run_metadata is None and (options is not None or hook_options):
            run_metadata = RunMetadata()
        out = self._sess.run({"caller": fetches, "hooks": hook_fetches}, feed_dict=feeds,
                             options=step_options, run_metadata=run_metadata)
        values_options = step_options if step_options is not None else RunOptions()
        values_metadata = run_metadata if run_metadata is not None else RunMetadata()
        for i, h in enumerate(self._hooks):
            h.after_run(context, SessionRunValues(out["hooks"].get(i), values_options,
                                                  values_metadata))
        if context.stop_requested:
            self._should_stop = True
        return out["caller"]

    def run_step_fn(self, step_fn):
        """step_fn(StepContext)'s value (None when it called request_stop(), which ends
        training). An AbortedError from step_fn recovers as run() does and calls step_fn again
        with the new session."""
        try:
            return self._recovering(lambda: step_fn(StepContext(self._sess, self.run)))
        except _StopRequested:
            self._should_stop = True
            return None

    def close(self):
        self._close(normal=True)

    def _close(self, normal):
        if self._closed:
            return
        self._closed = True
        try:
            if normal:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            self._stop_session()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # OutOfRange (input exhausted, token queue closed) ends training normally.
        quiet = exc_type is not None and issubclass(exc_type, (errors.OutOfRangeError,
                                                               StopIteration))
        self._close(exc_type is None or quiet)
        return quiet


class SingularMonitoredSession(MonitoredSession):
    """A MonitoredSession for one process: a ChiefSessionCreator of `scaffold` (restoring
    from `checkpoint_dir` or `checkpoint_filename_with_path`), and raw_session() for the
    session itself."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        from shardflow.session_creators import ChiefSessionCreator
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self):
        """The session without hooks."""
        return self._sess


class MonitoredTrainingSession(MonitoredSession):
    """A MonitoredSession for training, on one machine or as one task of a cluster (see the
    module's text). `master` is "" (in process) or a server's target; `config` a
    sf.ConfigProto; `scaffold` a sf.train.Scaffold (default: a new one).

    The chief (is_chief=True) runs ChiefSessionCreator: the initializers, then the latest
    checkpoint in `checkpoint_dir` when there is one. With a checkpoint_dir it saves every
    `save_checkpoint_secs` (600 when neither it nor `save_checkpoint_steps` is given) or
    `save_checkpoint_steps`; with a checkpoint_dir or `summary_dir`, it writes the scaffold's
    summary_op (sf.summary.merge_all()) every `save_summaries_steps` (100 when neither it nor
    `save_summaries_secs` is given; 0 for none) and global_step/sec every
    `log_step_count_steps` there. The others (WorkerSessionCreator) wait up to `max_wait_secs`
    for the chief to initialise every variable, then raise an error naming those still
    without a value. Hooks run in the order: `hooks`, `chief_only_hooks`, then the step
    counter, summary and checkpoint hooks.
    """

    def __init__(self, master="", is_chief=True, checkpoint_dir=None, scaffold=None, hooks=None,
                 chief_only_hooks=None, save_checkpoint_secs=None, save_summaries_steps=None,
                 save_summaries_secs=None, config=None, stop_grace_period_secs=120,
                 log_step_count_steps=100, max_wait_secs=7200, save_checkpoint_steps=None,
                 summary_dir=None):
        from shardflow.basic_hooks import StepCounterHook, SummarySaverHook
        from shardflow.session_creators import (ChiefSessionCreator, Scaffold,
                                                WorkerSessionCreator)
        scaffold = scaffold or Scaffold()
        all_hooks = list(hooks or [])
        if not is_chief:
            creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                           max_wait_secs=max_wait_secs)
            super().__init__(creator, all_hooks, stop_grace_period_secs)
            return
        all_hooks += list(chief_only_hooks or [])
        summary_dir = summary_dir or checkpoint_dir
        if summary_dir:
            if save_summaries_steps is None and save_summaries_secs is None:
                save_summaries_steps = 100
            if log_step_count_steps and log_step_count_steps > 0:
                all_hooks.append(StepCounterHook(every_n_steps=log_step_count_steps,
                                                 output_dir=summary_dir))
            if (save_summaries_steps or 0) > 0 or (save_summaries_secs or 0) > 0:
                all_hooks.append(SummarySaverHook(
                    save_steps=save_summaries_steps or None,
                    save_secs=None if save_summaries_steps else save_summaries_secs,
                    output_dir=summary_dir, scaffold=scaffold))
        if checkpoint_dir:
            if save_checkpoint_secs is None and save_checkpoint_steps is None:
                save_checkpoint_secs = 600
            all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_checkpoint_secs,
                                                 save_checkpoint_steps, scaffold=scaffold))
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir)
        super().__init__(creator, all_hooks, stop_grace_period_secs)
