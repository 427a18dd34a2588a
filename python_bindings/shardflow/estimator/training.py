"""TF1's tf.estimator.TrainSpec, EvalSpec and train_and_evaluate (TF 1.4+), run locally: train,
evaluate after each stretch of training, until the train spec's max_steps.

Example::

    train_spec = sf.estimator.TrainSpec(train_input_fn, max_steps=1000)
    eval_spec = sf.estimator.EvalSpec(eval_input_fn, steps=None, throttle_secs=60)
    metrics, _ = sf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)

How it runs (as TF's local mode): training goes in stretches that end at a checkpoint (every
RunConfig.save_checkpoints_steps steps when that is set, else one stretch to max_steps); after
a stretch the newest checkpoint is evaluated with eval_spec (input_fn, steps, name, hooks) and
handed to eval_spec's exporters, when eval_spec.throttle_secs have passed since the last
evaluation (and always at max_steps). When max_steps is
None, training runs until train_spec.input_fn's data runs out, then evaluates once. Returns
(the last evaluation's metrics, the exporters' results), as TF 1.13+.

Distributed (a TF_CONFIG cluster, RunConfig), as TF's distributed mode: a "ps" task serves its
variables until the process is stopped (server.join()); "chief" and "worker" tasks train
through their servers until the global step reaches max_steps (variables on the ps tasks,
asynchronous updates; the chief initialises, restores and checkpoints into model_dir, the
workers wait for it) and return (None, None); an "evaluator" task evaluates each new checkpoint
in model_dir (at least throttle_secs apart, the first after start_delay_secs) and hands it to
the exporters, until one at max_steps, and returns its metrics and exports.
"""

import os
import time


class TrainSpec:
    """What train_and_evaluate trains on: `input_fn`, up to `max_steps` (None: until the input
    runs out), with `hooks`."""

    def __init__(self, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        if not callable(input_fn):
            raise TypeError("TrainSpec: input_fn must be callable, got %r" % (input_fn,))
        if max_steps is not None and int(max_steps) <= 0:
            raise ValueError("TrainSpec: max_steps must be positive, got %r" % (max_steps,))
        self.input_fn = input_fn
        self.max_steps = None if max_steps is None else int(max_steps)
        self.hooks = tuple(hooks or ())
        self.saving_listeners = tuple(saving_listeners or ())


class EvalSpec:
    """How train_and_evaluate evaluates: `input_fn` for `steps` batches (None: until the input
    runs out), under `name`, with `hooks`; `exporters` get each evaluation; evaluations start
    after `start_delay_secs` and are at least `throttle_secs` apart."""

    def __init__(self, input_fn, steps=100, name=None, hooks=None, exporters=None,
                 start_delay_secs=120, throttle_secs=600):
        if not callable(input_fn):
            raise TypeError("EvalSpec: input_fn must be callable, got %r" % (input_fn,))
        if steps is not None and int(steps) <= 0:
            raise ValueError("EvalSpec: steps must be positive or None, got %r" % (steps,))
        if throttle_secs < 0 or start_delay_secs < 0:
            raise ValueError("EvalSpec: start_delay_secs and throttle_secs must not be negative")
        self.input_fn = input_fn
        self.steps = None if steps is None else int(steps)
        self.name = name
        self.hooks = tuple(hooks or ())
        if exporters is None:
            exporters = ()
        elif not isinstance(exporters, (list, tuple)):
            exporters = (exporters,)
        self.exporters = tuple(exporters)
        self.start_delay_secs = start_delay_secs
        self.throttle_secs = throttle_secs


def _global_step(estimator):
    from shardflow.estimator.estimator import _checkpoint_values
    path = estimator.latest_checkpoint()
    return 0 if path is None else int(_checkpoint_values(path).get("global_step", 0))


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains `estimator` on train_spec and evaluates it on eval_spec after each stretch of
    training (the module's docstring); returns (metrics, export_results)."""
    if not isinstance(train_spec, TrainSpec):
        raise TypeError("train_and_evaluate: train_spec must be a TrainSpec, got %r"
                        % (train_spec,))
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError("train_and_evaluate: eval_spec must be an EvalSpec, got %r" % (eval_spec,))
    config = estimator.config
    stride = getattr(config, "save_checkpoints_steps", None)
    metrics, exports = None, []

    def evaluate(final, checkpoint_path=None):
        nonlocal metrics, exports
        checkpoint_path = checkpoint_path or estimator.latest_checkpoint()
        metrics = estimator.evaluate(eval_spec.input_fn, steps=eval_spec.steps,
                                     hooks=list(eval_spec.hooks), name=eval_spec.name,
                                     checkpoint_path=checkpoint_path)
        exports = []
        for exporter in eval_spec.exporters:
            export = getattr(exporter, "export", None)
            if export is not None:
                # As TF: each exporter writes under model_dir/export/<its name>.
                path = os.path.join(estimator.model_dir, "export",
                                    getattr(exporter, "name", None) or "exporter")
                exports.append(export(estimator, path, checkpoint_path, metrics, final))

    if config.task_type == "evaluator" and config.cluster_spec:
        _evaluate_checkpoints(estimator, train_spec, eval_spec, evaluate)
        return metrics, exports
    if config._distributed:
        if config.task_type == "ps":
            from shardflow.estimator.estimator import _task_server
            _task_server(config).join()  # serves until the process is stopped
            return None, None
        estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks),
                        max_steps=train_spec.max_steps)
        return None, None
    if train_spec.max_steps is None:
        estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks))
        evaluate(True)
        return metrics, exports
    last_eval = None
    while True:
        step = _global_step(estimator)
        if step >= train_spec.max_steps:
            break
        target = min(train_spec.max_steps, step + int(stride)) if stride else train_spec.max_steps
        estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks), max_steps=target)
        reached = _global_step(estimator)
        if reached == step:
            break  # the input ran out before another step
        # Short of the stretch's target: a hook stopped training (early stopping) or the input
        # ran out; either ends training, as TF's one train() call would end.
        stopped = reached < target
        # As TF's local mode: an evaluation per new checkpoint, at least throttle_secs apart,
        # and always one at max_steps (or where training stopped).
        done = reached >= train_spec.max_steps or stopped
        if done or last_eval is None or time.time() - last_eval >= eval_spec.throttle_secs:
            evaluate(done)
            last_eval = time.time()
        if stopped:
            break
    if metrics is None:
        evaluate(True)  # already past max_steps: evaluate the checkpoint there
    return metrics, exports


def _evaluate_checkpoints(estimator, train_spec, eval_spec, evaluate):
    """The evaluator task: each new checkpoint in model_dir, at least throttle_secs apart,
    until one at max_steps (forever when max_steps is None, as TF's)."""
    from shardflow.estimator.estimator import _checkpoint_values
    time.sleep(eval_spec.start_delay_secs)
    last_path, last_eval = None, None
    while True:
        path = estimator.latest_checkpoint()
        wait = 0 if last_eval is None else eval_spec.throttle_secs - (time.time() - last_eval)
        if path is None or path == last_path or wait > 0:
            time.sleep(min(max(wait, 0.2), 1.0))
            continue
        step = int(_checkpoint_values(path).get("global_step", 0))
        final = train_spec.max_steps is not None and step >= train_spec.max_steps
        last_eval = time.time()
        evaluate(final, path)
        last_path = path
        if final:
            return
