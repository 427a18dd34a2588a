"""tf.estimator.experimental's early-stopping hooks: stop training when an evaluation metric
(what Estimator.evaluate wrote to estimator.eval_dir() at each evaluation, e.g. the ones
train_and_evaluate runs) has not improved for a number of steps, or has passed a threshold.

Example::

    hook = tf.estimator.experimental.stop_if_no_decrease_hook(
        est, "loss", max_steps_without_decrease=1000, min_steps=100)
    tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(input_fn, hooks=[hook]),
                                    eval_spec)
"""

import glob
import operator
import os

from shardflow.basic_hooks import SecondOrStepTimer
from shardflow.monitored_session import SessionRunArgs, SessionRunHook


def read_eval_metrics(eval_dir):
    """{global step: {metric: value}} from the event files in eval_dir (latest value of a
    metric at a step wins)."""
    from shardflow.summary_pb import summary_iterator
    out = {}
    for path in sorted(glob.glob(os.path.join(eval_dir, "events.out.tfevents.*"))):
        for event in summary_iterator(path):
            if not event.HasField("summary"):
                continue
            metrics = out.setdefault(int(event.step), {})
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    metrics[value.tag] = value.simple_value
    return dict(sorted(out.items()))


class _StopIfHook(SessionRunHook):
    """Checks, every run_every_secs (or run_every_steps) of training, whether should_stop(the
    evaluations so far) holds, and stops training when it does."""

    def __init__(self, estimator, should_stop, run_every_secs, run_every_steps):
        self._eval_dir = estimator.eval_dir()
        self._should_stop = should_stop
        self._timer = SecondOrStepTimer(every_secs=run_every_secs, every_steps=run_every_steps)
        self._global_step = None

    def begin(self):
        from shardflow.train import get_global_step
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("early stopping needs the global step (the Estimator makes it)")

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        step = int(run_values.results)
        if not self._timer.should_trigger_for_step(step):
            return
        self._timer.update_last_triggered_step(step)
        if self._should_stop(read_eval_metrics(self._eval_dir)):
            run_context.request_stop()


def _no_improvement_hook(estimator, metric_name, max_steps, min_steps, better,
                         run_every_secs, run_every_steps):
    def should_stop(evals):
        best_step, best = None, None
        last = None
        for step, metrics in evals.items():
            if metric_name not in metrics:
                continue
            last = step
            if best is None or better(metrics[metric_name], best):
                best_step, best = step, metrics[metric_name]
        return last is not None and last >= min_steps and last - best_step >= max_steps
    return _StopIfHook(estimator, should_stop, run_every_secs, run_every_steps)


def _threshold_hook(estimator, metric_name, threshold, passed, min_steps, run_every_secs,
                    run_every_steps):
    def should_stop(evals):
        return any(step >= min_steps and metric_name in m and passed(m[metric_name], threshold)
                   for step, m in evals.items())
    return _StopIfHook(estimator, should_stop, run_every_secs, run_every_steps)


def stop_if_no_decrease_hook(estimator, metric_name, max_steps_without_decrease, min_steps=0,
                             run_every_secs=60, run_every_steps=None):
    """Stops training once the newest evaluation is max_steps_without_decrease steps past the
    one with the lowest `metric_name` (and at least min_steps)."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_decrease, min_steps,
                                operator.lt, run_every_secs, run_every_steps)


def stop_if_no_increase_hook(estimator, metric_name, max_steps_without_increase, min_steps=0,
                             run_every_secs=60, run_every_steps=None):
    """As stop_if_no_decrease_hook, for a metric that should grow (accuracy)."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_increase, min_steps,
                                operator.gt, run_every_secs, run_every_steps)


def stop_if_higher_hook(estimator, metric_name, threshold, min_steps=0, run_every_secs=60,
                        run_every_steps=None):
    """Stops training once an evaluation (at min_steps or later) has metric_name > threshold."""
    return _threshold_hook(estimator, metric_name, threshold, operator.gt, min_steps,
                           run_every_secs, run_every_steps)


def stop_if_lower_hook(estimator, metric_name, threshold, min_steps=0, run_every_secs=60,
                       run_every_steps=None):
    """Stops training once an evaluation (at min_steps or later) has metric_name < threshold."""
    return _threshold_hook(estimator, metric_name, threshold, operator.lt, min_steps,
                           run_every_secs, run_every_steps)


__all__ = ["read_eval_metrics", "stop_if_higher_hook", "stop_if_lower_hook",
           "stop_if_no_decrease_hook", "stop_if_no_increase_hook"]
