"""TF1's basic session-run hooks (tf.train.LoggingTensorHook, NanTensorHook, StepCounterHook,
SummarySaverHook, FinalOpsHook, FeedFnHook, GlobalStepWaiterHook) and the SecondOrStepTimer
they fire by. StopAtStepHook and CheckpointSaverHook are in monitored_session.py.

Each is a SessionRunHook: MonitoredSession (and MonitoredTrainingSession) calls begin() before
the session exists, after_create_session() once the model is ready, before_run()/after_run()
around every step and end() when training ends without an error.

Example::

    hooks = [sf.train.LoggingTensorHook({"loss": loss, "step": global_step}, every_n_iter=100),
             sf.train.NanTensorHook(loss)]
    with sf.train.MonitoredTrainingSession(hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train_op)

Messages go through sf.logging (logger "shardflow"), at INFO: call
``sf.logging.set_verbosity(sf.logging.INFO)`` to see them. Event files (SummarySaverHook,
StepCounterHook with an output_dir) are sf.summary.FileWriter's; hooks writing to one
directory share one writer, as TF1's SummaryWriterCache does.
"""

import os
import threading
import time

import numpy as np

from shardflow import tf_logging as logging
from shardflow.monitored_session import SessionRunArgs, SessionRunHook


class NanLossDuringTrainingError(RuntimeError):
    """Raised by NanTensorHook(fail_on_nan_loss=True) when the loss is NaN."""

    def __str__(self):
        return "NaN loss during training."


class SecondOrStepTimer:
    """Fires every `every_secs` seconds or every `every_steps` steps (exactly one of them).

    should_trigger_for_step(step) is true on the first call, then once the time or the steps
    have passed since update_last_triggered_step, which returns (seconds, steps) elapsed since
    the previous trigger ((None, None) the first time)."""

    def __init__(self, every_secs=None, every_steps=None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self):
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step):
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and \
                time.time() >= self._last_triggered_time + self._every_secs:
            return True
        if self._every_steps is not None and step >= self._last_triggered_step + self._every_steps:
            return True
        return False

    def update_last_triggered_step(self, step):
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed

    def last_triggered_step(self):
        return self._last_triggered_step


class _NeverTriggerTimer(SecondOrStepTimer):
    def __init__(self):
        self.reset()

    def should_trigger_for_step(self, step):
        return False


_writers = {}
_writers_lock = threading.Lock()


def _writer_for(logdir):
    """The FileWriter shared by every hook writing to `logdir` (TF1's SummaryWriterCache)."""
    from shardflow.summary import FileWriter
    key = os.path.abspath(logdir)
    with _writers_lock:
        writer = _writers.get(key)
        if writer is None or writer._closed:
            writer = _writers[key] = FileWriter(logdir)
        return writer


def _global_step_read(hook):
    """The tensor reading the graph's global step; a RuntimeError naming `hook` without one."""
    from shardflow.train import get_global_step
    from shardflow.variables import Variable
    step = get_global_step()
    if step is None:
        raise RuntimeError("Global step should be created to use %s: call "
                           "sf.train.get_or_create_global_step() before the session" % hook)
    return step.value() if isinstance(step, Variable) else step


def _as_fetch(graph, x):
    """A name ("loss" or "loss:0"), Variable or tensor as a tensor to fetch."""
    from shardflow.variables import Variable
    if isinstance(x, str):
        return graph.get_tensor_by_name(x if ":" in x else x + ":0")
    if isinstance(x, Variable):
        return x.value()
    return x


class LoggingTensorHook(SessionRunHook):
    """Logs the values of `tensors` (a list of tensors or names, or a dict tag -> tensor) every
    `every_n_iter` local steps or `every_n_secs` seconds, and at the end when `at_end`, as
    "tag = value, ... (0.123 sec)" at INFO; `formatter(dict tag -> value)` makes the message
    instead when given."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs "
                             "must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError("invalid every_n_iter=%s." % every_n_iter)
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors.keys())
        else:
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        self._tensors = tensors
        self._formatter = formatter
        self._timer = _NeverTriggerTimer() if only_at_end else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._log_at_end = at_end

    def begin(self):
        from shardflow.framework import get_default_graph
        self._timer.reset()
        self._iter_count = 0
        g = get_default_graph()
        self._current_tensors = {tag: _as_fetch(g, t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def _log_tensors(self, values):
        elapsed, _ = self._timer.update_last_triggered_step(self._iter_count)
        if self._formatter:
            logging.info(self._formatter(values))
            return
        with np.printoptions(suppress=True):
            stats = ", ".join("%s = %s" % (tag, values[tag]) for tag in self._tag_order)
        if elapsed is not None:
            logging.info("%s (%.3f sec)", stats, elapsed)
        else:
            logging.info("%s", stats)

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))


class NanTensorHook(SessionRunHook):
    """Checks `loss_tensor` every step: on NaN, raises NanLossDuringTrainingError
    (fail_on_nan_loss=True), or logs a warning and requests stop."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def begin(self):
        from shardflow.framework import get_default_graph
        self._fetch = _as_fetch(get_default_graph(), self._loss_tensor)

    def before_run(self, run_context):
        return SessionRunArgs(self._fetch)

    def after_run(self, run_context, run_values):
        if np.any(np.isnan(run_values.results)):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                logging.error(message)
                raise NanLossDuringTrainingError
            logging.warning(message)
            run_context.request_stop()


def _scalar_summary(tag, value):
    """A serialized Summary holding one simple_value (summary.proto's Summary.Value)."""
    from shardflow.summary import _bytes_field, _float_field
    return _bytes_field(1, _bytes_field(1, tag) + _float_field(2, float(value)))


class StepCounterHook(SessionRunHook):
    """Measures global steps per second every `every_n_steps` global steps (or `every_n_secs`
    seconds): logs "global_step/sec: N" at INFO and, with an output_dir or summary_writer,
    writes it as a scalar summary of that tag at the step."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None
        self._warned_stuck = False

    def begin(self):
        from shardflow.train import get_global_step
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _writer_for(self._output_dir)
        self._global_step_tensor = _global_step_read("StepCounterHook")
        self._summary_tag = get_global_step().op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + 1):
            # The read ran beside the step's update: read the step as it is now.
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(step)
                if elapsed_time is not None:
                    rate = elapsed_steps / max(elapsed_time, 1e-9)
                    if self._summary_writer is not None:
                        self._summary_writer.add_summary(
                            _scalar_summary(self._summary_tag, rate), step)
                    logging.info("%s: %g", self._summary_tag, rate)
        if stale == self._last_global_step and not self._warned_stuck:
            self._warned_stuck = True
            logging.warning("It seems that global step (tf.train.get_global_step) has not been "
                            "increased. Current value (could be stable): %d vs previous value: "
                            "%d. You could increase the global step by passing "
                            "tf.train.get_global_step() to Optimizer.apply_gradients or "
                            "Optimizer.minimize.", stale, self._last_global_step)
        self._last_global_step = stale

    def end(self, session):
        if self._summary_writer is not None:
            self._summary_writer.flush()


class SummarySaverHook(SessionRunHook):
    """Writes the value of `summary_op` (a summary, e.g. sf.summary.merge_all(), or a list of
    them), or of the scaffold's summary_op, every `save_steps` global steps or `save_secs`
    seconds (first at the first step), into event files in `output_dir` (or through
    `summary_writer`), at the global step after the step that computed it; a SessionLog START
    first, as TF1's."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _writer_for(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _global_step_read("SummarySaverHook")

    def _get_summary_op(self):
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context):
        self._request_summary = self._next_step is None or \
            self._timer.should_trigger_for_step(self._next_step)
        requests = {"global_step": self._global_step_tensor}
        if self._request_summary:
            summaries = self._get_summary_op()
            if summaries is not None:
                requests["summary"] = summaries
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        if not self._summary_writer:
            return
        step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            from shardflow.summary_pb import SessionLog
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), step)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", []):
                self._summary_writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session=None):
        if self._summary_writer:
            self._summary_writer.flush()


class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` (any fetches) with `final_ops_feed_dict` when the session ends;
    `final_ops_values` holds their values afterwards."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops,
                                                 feed_dict=self._final_ops_feed_dict)


class FeedFnHook(SessionRunHook):
    """Adds `feed_fn()` (a feed_dict) to every step's feeds."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class GlobalStepWaiterHook(SessionRunHook):
    """Holds this worker's first step until the global step reaches `wait_until_step` (other
    workers advance it), checking twice a second."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._global_step_tensor = _global_step_read("GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        logging.info("Waiting for global step %d before starting training.",
                     self._wait_until_step)
        last_logged = 0
        while True:
            step = int(run_context.session.run(self._global_step_tensor))
            if step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if step - last_logged > 1000:
                logging.info("Waiting for global step %d before starting training. Current "
                             "step is %d.", self._wait_until_step, step)
                last_logged = step
            time.sleep(0.5)
