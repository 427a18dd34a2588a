"""MonitoredTrainingSession and session hooks, as TensorFlow 1.x's tf.train ones.

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
from shardflow.framework import get_default_graph


class SessionRunArgs:
    """What a hook adds to a step: fetches (any structure sess.run takes) and feeds."""

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
    """The values of a hook's fetches for the step."""

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


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint every `save_secs` seconds or `save_steps` global steps, once the
    session is ready and at the end (files "<checkpoint_dir>/model.ckpt-<global step>")."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt"):
        if save_secs is None and save_steps is None:
            raise ValueError("CheckpointSaverHook takes save_secs or save_steps")
        self._dir = checkpoint_dir
        self._save_secs = save_secs
        self._save_steps = save_steps
        self._saver = saver
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._last_time = None
        self._last_step = None

    def begin(self):
        from shardflow.train import Saver, get_global_step
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("CheckpointSaverHook needs a global step: create it with "
                               "sf.train.get_or_create_global_step()")
        if self._saver is None:
            self._saver = Saver()
        self._read = self._global_step.value()

    def _save(self, session, step):
        self._saver.save(session, self._path, global_step=step)
        self._last_time = time.monotonic()
        self._last_step = step

    def after_create_session(self, session, coord):
        self._save(session, int(session.run(self._read)))

    def before_run(self, run_context):
        return SessionRunArgs(self._read)

    def after_run(self, run_context, run_values):
        step = int(run_values.results)
        due = (self._save_steps is not None and step >= self._last_step + self._save_steps) or \
            (self._save_secs is not None and time.monotonic() - self._last_time >= self._save_secs)
        if due and step != self._last_step:
            self._save(run_context.session, step)

    def end(self, session):
        step = int(session.run(self._read))
        if step != self._last_step:
            self._save(session, step)


class MonitoredTrainingSession:
    """A session for training, on one machine or as one task of a cluster (see the module's
    text). `master` is "" (in process) or a server's target; `config` a sf.ConfigProto.

    The chief (is_chief=True) restores from sf.train.latest_checkpoint(checkpoint_dir) when
    there is one, else runs the initializers; with a checkpoint_dir it saves every
    `save_checkpoint_secs` (default 600) or `save_checkpoint_steps`. The others wait up to
    `max_wait_secs` for the chief to initialise every variable, then raise an error naming those
    still without a value. Leaving the ``with`` block after sf.errors.OutOfRangeError (e.g. a
    closed token queue) ends training quietly.
    """

    def __init__(self, master="", is_chief=True, checkpoint_dir=None, scaffold=None, hooks=None,
                 chief_only_hooks=None, save_checkpoint_secs=None, save_summaries_steps=None,
                 save_summaries_secs=None, config=None, stop_grace_period_secs=120,
                 log_step_count_steps=100, max_wait_secs=7200, save_checkpoint_steps=None):
        from shardflow.session import Session
        from shardflow.train import Saver, latest_checkpoint
        from shardflow.variables import (global_variables, global_variables_initializer,
                                         local_variables_initializer)
        if scaffold is not None:
            raise ValueError("MonitoredTrainingSession: scaffold is not supported")
        g = get_default_graph()
        self._hooks = list(hooks or [])
        if is_chief:
            self._hooks += list(chief_only_hooks or [])
        if is_chief and checkpoint_dir:
            if save_checkpoint_secs is None and save_checkpoint_steps is None:
                save_checkpoint_secs = 600
            self._hooks.append(CheckpointSaverHook(checkpoint_dir, save_checkpoint_secs,
                                                   save_checkpoint_steps))
        for h in self._hooks:
            h.begin()
        variables = global_variables(g)
        init_op = global_variables_initializer()
        local_init_op = local_variables_initializer()
        ready = [v.is_initialized() for v in variables]
        restore_saver = Saver() if is_chief and checkpoint_dir and variables else None
        self._should_stop = False
        self._closed = False
        self._sess = Session(master, graph=g, config=config)
        try:
            if is_chief:
                # Every variable (optimizer slots included) gets a value, then the checkpoint's.
                self._sess.run(init_op)
                path = latest_checkpoint(checkpoint_dir) if checkpoint_dir else None
                if path is not None and restore_saver is not None:
                    restore_saver.restore(self._sess, path)
            else:
                self._wait_until_ready(variables, ready, max_wait_secs)
            self._sess.run(local_init_op)
            for h in self._hooks:
                h.after_create_session(self._sess, None)
        except BaseException:
            self._sess.close()
            raise

    def _wait_until_ready(self, variables, ready, max_wait_secs):
        deadline = time.monotonic() + max_wait_secs
        delay = 0.05
        while True:
            try:
                flags = self._sess.run(ready) if ready else []
                if all(bool(f) for f in flags):
                    return
                missing = [v.name for v, f in zip(variables, flags) if not f]
            except (errors.UnavailableError, errors.DeadlineExceededError) as e:
                missing = ["(a task did not answer: %s)" % e]
            if time.monotonic() >= deadline:
                raise errors.DeadlineExceededError(
                    "waited %d s for the chief to initialise the model; still without a value: "
                    "%s. Start the chief (is_chief=True) or raise max_wait_secs"
                    % (max_wait_secs, ", ".join(missing[:10])))
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    @property
    def graph(self):
        return self._sess.graph

    def should_stop(self):
        return self._should_stop or self._closed

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs one step with every hook; returns `fetches`' values."""
        if self._closed:
            raise RuntimeError("run() on a closed MonitoredTrainingSession")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        hook_args = [h.before_run(context) for h in self._hooks]
        feeds = dict(feed_dict or {})
        hook_fetches = {}
        for i, args in enumerate(hook_args):
            if args is None:
                continue
            if args.fetches is not None:
                hook_fetches[i] = args.fetches
            for k, v in (args.feed_dict or {}).items():
                if k in feeds:
                    raise RuntimeError("a hook feeds %r, which is fed already" % (k,))
                feeds[k] = v
        out = self._sess.run({"caller": fetches, "hooks": hook_fetches}, feed_dict=feeds,
                             options=options, run_metadata=run_metadata)
        for i, h in enumerate(self._hooks):
            h.after_run(context, SessionRunValues(out["hooks"].get(i), options, run_metadata))
        if context.stop_requested:
            self._should_stop = True
        return out["caller"]

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
            self._sess.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # OutOfRange (input exhausted, token queue closed) ends training normally.
        normal = exc_type is None or issubclass(exc_type, errors.OutOfRangeError)
        self._close(normal)
        return exc_type is not None and issubclass(exc_type, errors.OutOfRangeError)
