"""TF1's tf.train.ProfilerHook: every few steps, a traced step written as a Chrome trace
(shardflow/profiler.py's chrome_trace) to "<output_dir>/timeline-<global step>.json".

Example::

    hook = sf.train.ProfilerHook(save_steps=100, output_dir="/tmp/train")
    with sf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
        ...                    # open a timeline-*.json in chrome://tracing or ui.perfetto.dev

Note [Tracing from a hook]. On a step it chose, the hook's before_run returns
SessionRunArgs(options=RunOptions(trace_level=FULL_TRACE)); MonitoredSession merges those options
with the caller's (Note [Hooks' run options] in monitored_session.py), so the step is traced
whatever options the caller passed, and after_run writes run_values.run_metadata. (Before
MonitoredSession merged hooks' options, this hook wrapped the session's run method and missed
the steps the caller passed options to.)
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
        self._global_step_tensor = _global_step_read("ProfilerHook")

    def before_run(self, run_context):
        """Note [Tracing from a hook]."""
        from shardflow.session import RunOptions
        self._trace = self._next_step is None or \
            self._timer.should_trigger_for_step(self._next_step)
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._trace else None
        return SessionRunArgs(self._global_step_tensor, options=options)

    def after_run(self, run_context, run_values):
        from shardflow.profiler import write_chrome_trace
        step = int(run_values.results) + 1
        if self._trace:
            self._timer.update_last_triggered_step(step)
            os.makedirs(os.path.dirname(self._output_file) or ".", exist_ok=True)
            write_chrome_trace(run_values.run_metadata, self._output_file.format(step))
        self._trace = False
        self._next_step = step + 1


__all__ = ["ProfilerHook"]
