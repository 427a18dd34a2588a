"""tf.estimator.experimental: the early-stopping hooks (estimator/early_stopping.py) and
make_early_stopping_hook, the names TF 1.15 has there that shardflow supports.

Example::

    hook = tf.estimator.experimental.make_early_stopping_hook(est, lambda: should_stop[0],
                                                              run_every_secs=None,
                                                              run_every_steps=100)
"""

from shardflow.estimator.early_stopping import (_StopIfHook, read_eval_metrics,  # noqa: F401
                                                stop_if_higher_hook, stop_if_lower_hook,
                                                stop_if_no_decrease_hook,
                                                stop_if_no_increase_hook)


def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60,
                             run_every_steps=None):
    """A hook that stops training once should_stop_fn() (no arguments) is true, asked every
    run_every_secs seconds or run_every_steps steps (only one of them), as TF 1.15's."""
    if run_every_secs is not None and run_every_steps is not None:
        raise ValueError("Only one of run_every_secs and run_every_steps can be set.")
    return _StopIfHook(estimator, lambda evals: should_stop_fn(), run_every_secs,
                       run_every_steps)


__all__ = ["make_early_stopping_hook", "read_eval_metrics", "stop_if_higher_hook",
           "stop_if_lower_hook", "stop_if_no_decrease_hook", "stop_if_no_increase_hook"]
