"""TF1's tf.train.ProfilerHook: every few steps, a traced step written as a Chrome trace
(shardflow/profiler.py's chrome_trace) to "<output_dir>/timeline-<global step>.json".

Example::

    hook = sf.train.ProfilerHook(save_steps=100, output_dir="/tmp/train")
    with sf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
        ...                    # open a timeline-*.json in chrome://tracing or ui.perfetto.dev

Note [Tracing from a hook]. MonitoredSession runs each step with the caller's RunOptions and
does not merge a hook's SessionRunArgs.options (TF1's does), so this hook traces its steps by
wrapping the run method of the session it is given in after_create_session: on a step it
chose, a call without options runs with RunOptions(trace_level=FULL_TRACE) and a RunMetadata
the hook keeps. Steps where the caller passes options are not traced by the hook.
"""

import os

from shardflow.basic_hooks import SecondOrStepTimer, _global_step_read
from shardflow.monitored_session import SessionRunArgs, SessionRunHook


class ProfilerHook(SessionRunHook):
    """Writes a Chrome trace of a step every `save_steps` global steps or `save_secs` seconds
    (exactly one), the first at the first step. show_dataflow and show_memory are accepted (the
    trace always has the Send -> Recv flow arrows; memory is not traced)."""

    def __init__(self, save_steps=None, save_secs=None, output_dir="", show_dataflow=True,
                 show_memory=False):
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._show_dataflow = show_dataflow
        self._show_memory = show_memory

    def begin(self):
        self._next_step = None
        self._trace = False
        self._metadata = None
        self._global_step_tensor = _global_step_read("ProfilerHook")

    def after_create_session(self, session, coord):
        """Note [Tracing from a hook]."""
        from shardflow.session import RunMetadata, RunOptions
        plain_run = session.run

        def run(fetches, feed_dict=None, options=None, run_metadata=None):
            if self._trace and options is None and run_metadata is None:
                self._trace = False
                self._metadata = RunMetadata()
                return plain_run(fetches, feed_dict=feed_dict,
                                 options=RunOptions(trace_level=RunOptions.FULL_TRACE),
                                 run_metadata=self._metadata)
            return plain_run(fetches, feed_dict=feed_dict, options=options,
                             run_metadata=run_metadata)
        session.run = run

    def before_run(self, run_context):
        self._trace = self._next_step is None or \
            self._timer.should_trigger_for_step(self._next_step)
        self._metadata = None
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        from shardflow.profiler import write_chrome_trace
        step = int(run_values.results) + 1
        self._trace = False
        if self._metadata is not None:
            self._timer.update_last_triggered_step(step)
            os.makedirs(os.path.dirname(self._output_file) or ".", exist_ok=True)
            write_chrome_trace(self._metadata, self._output_file.format(step))
            self._metadata = None
        self._next_step = step + 1


__all__ = ["ProfilerHook"]
