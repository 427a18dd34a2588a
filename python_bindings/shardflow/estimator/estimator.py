"""TF1's tf.estimator.Estimator: train, evaluate and predict a model given by a model_fn, with
checkpoints in model_dir carrying the model from one call to the next.

Each call builds a fresh graph: the global step, input_fn()'s tensors, then model_fn(features,
labels, mode, params, config) (only the arguments its signature names). train() runs in a
MonitoredTrainingSession that restores model_dir's newest checkpoint and saves new ones;
evaluate() and predict() restore it (or, without one, start from the initial values, as TF1).

Example::

    def model_fn(features, labels, mode):
        logits = sf.layers.dense(features["x"], 2)
        loss = sf.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = sf.train.AdamOptimizer(0.01).minimize(
            loss, global_step=sf.train.get_global_step())
        return sf.estimator.EstimatorSpec(
            mode, loss=loss, train_op=train_op, predictions={"class": sf.argmax(logits, 1)},
            eval_metric_ops={"accuracy": sf.metrics.accuracy(labels, sf.argmax(logits, 1))})

    est = sf.estimator.Estimator(model_fn, model_dir="/tmp/model")
    est.train(lambda: dataset_fn().repeat(3).batch(32), steps=1000)
    print(est.evaluate(lambda: dataset_fn().batch(32)))    # {'accuracy': ..., 'loss': ...}

Not supported: distribution strategies, evaluation summaries in
model_dir/eval, saving_listeners.
"""

import inspect
import os
import tempfile

import numpy as np

from shardflow import tf_logging as logging
from shardflow.estimator.model_fn import EstimatorSpec, ModeKeys, RunConfig
from shardflow.framework import Graph, Tensor
from shardflow.monitored_session import (CheckpointSaverHook, MonitoredTrainingSession,
                                         SessionRunHook, StopAtStepHook)
from shardflow.warm_starting_util import WarmStartSettings
from shardflow.warm_starting_util import warm_start as warm_start_variables


def _arg_names(fn):
    return list(inspect.signature(fn).parameters)


def _checkpoint_values(path):
    """{name: array} of the checkpoint at `path`."""
    from shardflow.tf_checkpoint import read_checkpoint
    return dict(read_checkpoint(path))


class _RestoreHook(SessionRunHook):
    """After the initializers ran: restores `path` (when not None) with `saver`."""

    def __init__(self, saver, path):
        self._saver = saver
        self._path = path

    def after_create_session(self, session, coord):
        if self._path is not None:
            self._saver.restore(session, self._path)


def _in_process_replicas(strategy):
    """Whether `strategy` replicates model_fn over several devices of this process."""
    if strategy is None or strategy.num_replicas_in_sync <= 1:
        return False
    return not getattr(strategy.extended, "experimental_between_graph", False)


def _session_config_for(session_config, strategy):
    """`session_config`; with none given and a strategy over '/cpu:N' devices, one that has
    those CPU devices (TF wants device_count={"CPU": n} given by hand)."""
    if session_config is not None or strategy is None:
        return session_config
    cpus = [int(d.rsplit(":", 1)[1]) for d in strategy.extended.worker_devices
            if ":CPU:" in d.upper()]
    if not cpus or max(cpus) == 0:
        return None
    from shardflow.session import ConfigProto
    return ConfigProto(cpu_device_count=max(cpus) + 1)


def _between_graph(config):
    """config.train_distribute when it replicates across processes (MultiWorkerMirrored- or
    ParameterServerStrategy: one replica per worker process), else None."""
    strategy = getattr(config, "train_distribute", None)
    extended = getattr(strategy, "extended", None)
    return strategy if getattr(extended, "experimental_between_graph", False) else None


class _BroadcastHook(SessionRunHook):
    """After the variables exist (initialised or restored): every worker takes worker 0's."""

    def __init__(self, num_workers, rank, device):
        self._n, self._rank, self._device = num_workers, rank, device

    def begin(self):
        from shardflow.distribute import broadcast_variables
        from shardflow.framework import device
        from shardflow.variables import global_variables
        with device(self._device):
            self._op = broadcast_variables(global_variables(), self._n, rank=self._rank)

    def after_create_session(self, session, coord):
        session.run(self._op)


# This process's server for its TF_CONFIG task, by (job, task): started by the first
# distributed train() (or train_and_evaluate) and kept for the process's life, as TF1's.
_task_servers = {}


def _task_server(config):
    from shardflow.cluster import Server
    key = (config.task_type, config.task_id)
    if key not in _task_servers:
        _task_servers[key] = Server(config.cluster_spec, job_name=config.task_type,
                                    task_index=config.task_id)
    return _task_servers[key]


def _kept_checkpoints(model_dir):
    """The checkpoints the "checkpoint" state file of model_dir lists that still exist."""
    kept = []
    try:
        with open(os.path.join(model_dir, "checkpoint")) as f:
            for line in f:
                if line.startswith("all_model_checkpoint_paths:"):
                    name = line.split(":", 1)[1].strip().strip('"')
                    path = name if os.path.isabs(name) else os.path.join(model_dir, name)
                    if os.path.exists(path):
                        kept.append(path)
    except FileNotFoundError:
        pass
    return kept


class Estimator:
    """A model (model_fn) with a checkpoint directory (model_dir; a new temporary directory
    when None). `params` (a dict) goes to model_fn's `params`, `config` (a RunConfig) to its
    `config`. `warm_start_from`: a checkpoint or a directory whose newest checkpoint gives the
    trainable variables their first values when model_dir has no checkpoint yet, or a
    WarmStartSettings choosing which variables, from which names and vocabularies
    (shardflow/warm_starting_util.py).

    Thread safety: one call at a time per Estimator."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        if not callable(model_fn):
            raise TypeError("model_fn must be a function, not %r" % (model_fn,))
        args = _arg_names(model_fn)
        if "features" not in args:
            raise ValueError("model_fn %s must take an argument named 'features'" % model_fn)
        if params is not None and "params" not in args:
            raise ValueError("params were given but model_fn %s has no 'params' argument"
                             % model_fn)
        config = config if config is not None else RunConfig()
        if not isinstance(config, RunConfig):
            raise ValueError("config must be a sf.estimator.RunConfig, not %r" % (config,))
        if model_dir is not None and config.model_dir is not None and \
                os.path.abspath(model_dir) != os.path.abspath(config.model_dir):
            raise ValueError("model_dir %r differs from config.model_dir %r"
                             % (model_dir, config.model_dir))
        model_dir = model_dir or config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp(prefix="sf_estimator_")
            logging.warning("Using temporary folder as model directory: %s", model_dir)
        self._model_dir = model_dir
        self._config = config.replace(model_dir=model_dir)
        self._model_fn = model_fn
        self._model_fn_args = args
        self._params = dict(params or {})
        if warm_start_from is not None and not isinstance(warm_start_from, WarmStartSettings):
            warm_start_from = WarmStartSettings(str(warm_start_from))
        self._warm_start_from = warm_start_from

    @property
    def model_dir(self):
        return self._model_dir

    @property
    def config(self):
        return self._config

    @property
    def params(self):
        return dict(self._params)

    @property
    def model_fn(self):
        return self._model_fn

    # ---- checkpoints ----------------------------------------------------------------------

    def latest_checkpoint(self):
        """The newest checkpoint in model_dir, or None."""
        from shardflow.train import latest_checkpoint
        return latest_checkpoint(self._model_dir)

    def _latest_values(self):
        path = self.latest_checkpoint()
        if path is None:
            raise ValueError("model_dir %s has no checkpoint yet: train() first"
                             % self._model_dir)
        return _checkpoint_values(path)

    def get_variable_names(self):
        """The names of the variables in the newest checkpoint."""
        return sorted(self._latest_values())

    def get_variable_value(self, name):
        """A variable's value (NumPy) in the newest checkpoint."""
        values = self._latest_values()
        if name not in values:
            raise ValueError("no variable '%s' in %s (it has: %s)"
                             % (name, self.latest_checkpoint(), ", ".join(sorted(values))))
        return values[name]

    # ---- graph building -------------------------------------------------------------------

    def _call_input_fn(self, input_fn, mode, strategy=None):
        """input_fn's (features, labels); with an in-process strategy of several replicas,
        PerReplica values: each replica takes its slice of every batch of the Dataset input_fn
        returns."""
        from shardflow.data import Dataset
        args = _arg_names(input_fn)
        kwargs = {}
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = self._config
        if "input_context" in args:
            kwargs["input_context"] = self._input_context(mode)
        result = input_fn(**kwargs)
        if strategy is not None:
            if not isinstance(result, Dataset):
                raise ValueError("with train_distribute=%r the input_fn must return a "
                                 "tf.data.Dataset (its batches are split between the "
                                 "replicas), not %r" % (strategy, result))
            result = strategy.experimental_distribute_dataset(result) \
                .make_one_shot_iterator().get_next()
        elif isinstance(result, Dataset):
            result = result.make_one_shot_iterator().get_next()
        if isinstance(result, (tuple, list)) and len(result) == 2:
            return result[0], result[1]
        return result, None

    def _input_context(self, mode):
        """What an input_fn(..., input_context) is told, as TF 1.15's estimator: None without
        a distribution strategy for `mode`; between worker processes (MultiWorkerMirrored- or
        ParameterServerStrategy) one input pipeline per worker, this worker's id its rank (the
        chief first), so that `dataset.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)`
        gives each worker its own share; in one process, one pipeline."""
        from shardflow.distribute.input_lib import InputContext
        config = self._config
        strategy = config.train_distribute if mode == ModeKeys.TRAIN else config.eval_distribute
        if strategy is None:
            return None
        if mode == ModeKeys.TRAIN and _between_graph(config) is not None and \
                config._distributed and config.task_type in ("chief", "master", "worker"):
            workers = config.num_worker_replicas
            return InputContext(workers, config.global_id_in_cluster,
                                strategy.num_replicas_in_sync)
        return InputContext(1, 0, strategy.num_replicas_in_sync)

    def _build(self, input_fn, mode, device_fn=None, strategy=None):
        """A new graph holding the global step, the inputs and model_fn's spec for `mode`
        (under `device_fn`, a device or device function, when given; model_fn in `strategy`'s
        replica context when given)."""
        import contextlib

        from shardflow.framework import device
        from shardflow.ops import set_random_seed
        from shardflow.train import get_or_create_global_step
        if device_fn is None:
            device_fn = self._config.device_fn   # RunConfig(device_fn=...)
        g = Graph()
        with g.as_default(), (device(device_fn) if device_fn is not None
                              else contextlib.nullcontext()):
            if self._config.tf_random_seed is not None:
                set_random_seed(self._config.tf_random_seed)
            global_step = get_or_create_global_step()
            if _in_process_replicas(strategy):
                features, labels = self._call_input_fn(input_fn, mode, strategy)
                spec = self._call_model_fn_per_replica(strategy, features, labels, mode)
                return g, global_step, spec
            features, labels = self._call_input_fn(input_fn, mode)
            if strategy is not None:
                spec = strategy.extended.call_for_each_replica(
                    self._call_model_fn, (features, labels, mode))
            else:
                spec = self._call_model_fn(features, labels, mode)
        return g, global_step, spec

    def _call_model_fn_per_replica(self, strategy, features, labels, mode):
        """model_fn built once per replica of an in-process strategy (MirroredStrategy over
        several devices), each on its share of the batch, as TF 1.15's distributed Estimator:
        the optimizer sums the replicas' gradients (each replica's loss scaled by 1 / N) and
        updates once; the spec's loss is the replicas' losses summed, its train_op all of
        theirs, its hooks every replica's."""
        from shardflow.distribute.values import ReduceOp
        specs = []

        def replica_fn(f, lab):
            spec = self._call_model_fn(f, lab, mode)
            specs.append(spec)
            return spec.loss, spec.train_op
        loss, train_op = strategy.extended.call_for_each_replica(replica_fn, (features, labels))
        hooks = [h for spec in specs for h in spec.training_hooks]
        chief_hooks = [h for spec in specs for h in spec.training_chief_hooks]
        return EstimatorSpec(mode, loss=strategy.reduce(ReduceOp.SUM, loss),
                             train_op=strategy.group(train_op), training_hooks=hooks,
                             training_chief_hooks=chief_hooks,
                             scaffold=specs[0].scaffold if specs else None)

    def _call_model_fn(self, features, labels, mode):
        """model_fn's EstimatorSpec for `mode`, built in the default graph."""
        kwargs = {"features": features}
        if "labels" in self._model_fn_args:
            kwargs["labels"] = labels
        elif labels is not None and mode != ModeKeys.PREDICT:
            raise ValueError("input_fn gave labels but model_fn has no 'labels' argument")
        if "mode" in self._model_fn_args:
            kwargs["mode"] = mode
        if "params" in self._model_fn_args:
            kwargs["params"] = self.params
        if "config" in self._model_fn_args:
            kwargs["config"] = self._config
        spec = self._model_fn(**kwargs)
        if not isinstance(spec, EstimatorSpec):
            raise ValueError("model_fn must return a sf.estimator.EstimatorSpec, got %r"
                             % (spec,))
        return spec

    def _restore_hook(self, checkpoint_path=None, warm_start=False):
        """A Saver of the graph's variables and the hook restoring `checkpoint_path` (default:
        the newest in model_dir). With `warm_start` and no checkpoint to restore, the variables
        warm_start_from chooses start from its checkpoint (their initializers load it)."""
        from shardflow.train import Saver
        from shardflow.variables import global_variables
        path = checkpoint_path or self.latest_checkpoint()
        if warm_start and path is None and self._warm_start_from is not None:
            warm_start_variables(*self._warm_start_from)
        saver = Saver(max_to_keep=self._config.keep_checkpoint_max,
                      keep_checkpoint_every_n_hours=self._config.keep_checkpoint_every_n_hours) \
            if global_variables() else None
        return saver, _RestoreHook(saver, path)

    # ---- train ----------------------------------------------------------------------------

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains until input_fn's data runs out (OutOfRangeError), `steps` more steps, or the
        global step reaches `max_steps`; checkpoints go to model_dir, and each
        CheckpointSaverListener of `saving_listeners` is called around each save (on the
        chief). Returns self."""
        if steps is not None and max_steps is not None:
            raise ValueError("train takes steps or max_steps, not both")
        if steps is not None and steps <= 0:
            raise ValueError("steps must be positive, got %r" % (steps,))
        if max_steps is not None and max_steps <= 0:
            raise ValueError("max_steps must be positive, got %r" % (max_steps,))
        from shardflow.monitored_session import CheckpointSaverListener
        saving_listeners = list(saving_listeners or [])
        for listener in saving_listeners:
            if not isinstance(listener, CheckpointSaverListener):
                raise TypeError("saving_listeners should be a list of CheckpointSaverListener, "
                                "given: %r" % (listener,))
        if max_steps is not None:
            path = self.latest_checkpoint()
            if path is not None and int(_checkpoint_values(path).get("global_step", 0)) >= \
                    max_steps:
                logging.info("Skipping training since max_steps has already saved.")
                return self
        from shardflow.distribute.multi_worker import MultiWorkerMirroredStrategy
        config = self._config
        master, device_fn = "", None
        between = _between_graph(config)  # model_fn runs under it
        strategy = between if isinstance(between, MultiWorkerMirroredStrategy) else None
        local = config.train_distribute if _in_process_replicas(config.train_distribute) \
            else None
        if local is not None and config._distributed:
            raise NotImplementedError(
                "train_distribute=%r replicates within this process; in a TF_CONFIG cluster "
                "use MultiWorkerMirroredStrategy or ParameterServerStrategy" % (local,))
        if config._distributed:
            # A task of a TF_CONFIG cluster (RunConfig): through this task's server, variables
            # on the ps tasks, the rest here; the chief initialises, restores and checkpoints,
            # the others wait for it (MonitoredTrainingSession). Under MultiWorkerMirrored-
            # Strategy every worker has its own variables: it initialises (and restores) them
            # itself, takes worker 0's values, and its gradients are averaged with the others'.
            from shardflow.cluster import replica_device_setter
            master = _task_server(config).target
            device_fn = "/job:%s/task:%d" % (config.task_type, config.task_id)
            if config.num_ps_replicas > 0 and strategy is None:
                device_fn = replica_device_setter(cluster=config.cluster_spec,
                                                  worker_device=device_fn)
            if config.device_fn is not None:
                device_fn = config.device_fn    # RunConfig(device_fn=...) overrides, as TF's
        # Under ParameterServerStrategy too model_fn runs in its replica context (variables on
        # the ps as without it).
        g, global_step, spec = self._build(input_fn, ModeKeys.TRAIN, device_fn,
                                           local if local is not None else between)
        with g.as_default():
            from shardflow import summary
            from shardflow.basic_hooks import (LoggingTensorHook, NanTensorHook,
                                               SummarySaverHook)
            all_hooks = list(hooks or []) + list(spec.training_hooks)
            if steps is not None or max_steps is not None:
                all_hooks.append(StopAtStepHook(num_steps=steps, last_step=max_steps))
            all_hooks.append(NanTensorHook(spec.loss))
            if self._config.log_step_count_steps:
                all_hooks.append(LoggingTensorHook({"loss": spec.loss, "step": global_step},
                                                   every_n_iter=self._config.log_step_count_steps))
            saver, restore = self._restore_hook(warm_start=True)
            if config.is_chief:
                saver.recover_last_checkpoints(_kept_checkpoints(self._model_dir))
            chief_hooks = list(spec.training_chief_hooks) + [CheckpointSaverHook(
                self._model_dir, save_secs=self._config.save_checkpoints_secs,
                save_steps=self._config.save_checkpoints_steps, saver=saver,
                listeners=saving_listeners)]
            if self._config.save_summary_steps:
                summary.scalar("loss", spec.loss)
                chief_hooks.append(SummarySaverHook(save_steps=self._config.save_summary_steps,
                                                    output_dir=self._model_dir,
                                                    summary_op=summary.merge_all()))
            # Restoring (and, between workers, taking worker 0's values) first: it must
            # precede StopAtStepHook's reading of the global step.
            first = [restore] if config.is_chief or strategy is not None else []
            if strategy is not None and config._distributed:
                first.append(_BroadcastHook(config.num_worker_replicas,
                                            config.global_id_in_cluster, device_fn))
            loss = None
            with MonitoredTrainingSession(
                    master=master, is_chief=config.is_chief or strategy is not None,
                    hooks=first + (chief_hooks if config.is_chief else []) + all_hooks,
                    config=_session_config_for(config.session_config, local)) as sess:
                while not sess.should_stop():
                    _, loss = sess.run([spec.train_op, spec.loss])
            if loss is not None:
                logging.info("Loss for final step: %s.", loss)
        return self

    # ---- evaluate -------------------------------------------------------------------------

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Runs the model's eval_metric_ops over input_fn's data (until it runs out, or for
        `steps` batches) with the newest checkpoint (or `checkpoint_path`); returns a dict of
        their values plus "loss" (the mean of the batches' losses) and "global_step"."""
        from shardflow import metrics
        from shardflow.basic_hooks import FinalOpsHook
        if steps is not None and steps <= 0:
            raise ValueError("steps must be positive, got %r" % (steps,))
        g, global_step, spec = self._build(input_fn, ModeKeys.EVAL)
        with g.as_default():
            pairs = dict(spec.eval_metric_ops)
            if "loss" not in pairs:
                pairs["loss"] = metrics.mean(spec.loss, name="mean_loss")
            updates = [u for _, u in pairs.values()]
            final_ops = {k: v for k, (v, _) in pairs.items()}
            final_ops["global_step"] = global_step.value()
            final = FinalOpsHook(final_ops)
            path = checkpoint_path or self.latest_checkpoint()
            if path is None:
                logging.info("Could not find trained model in model_dir: %s, running "
                             "initialization to evaluate.", self._model_dir)
            _, restore = self._restore_hook(path)
            all_hooks = [restore] + list(hooks or []) + list(spec.evaluation_hooks) + [final]
            done = 0
            with MonitoredTrainingSession(hooks=all_hooks,
                                          config=self._config.session_config) as sess:
                while not sess.should_stop() and (steps is None or done < steps):
                    sess.run(updates)
                    done += 1
        results = dict(final.final_ops_values)
        logging.info("Saving dict for global step %d: %s", int(results["global_step"]),
                     ", ".join("%s = %s" % (k, results[k]) for k in sorted(results)))
        self._write_eval_summary(results, name)
        return results

    def eval_dir(self, name=None):
        """Where evaluate(name=...) writes its metrics as TensorBoard scalars: model_dir/eval
        (eval_<name> for a named evaluation), as TF1's."""
        return os.path.join(self._model_dir, "eval_" + name if name else "eval")

    def _write_eval_summary(self, results, name):
        """The scalar results at their global step, for TensorBoard and the early-stopping
        hooks (tf.estimator.experimental.stop_if_no_decrease_hook)."""
        from shardflow.summary import FileWriter
        from shardflow.summary_pb import Summary
        values = [Summary.Value(tag=k, simple_value=float(v)) for k, v in sorted(results.items())
                  if k != "global_step" and np.ndim(v) == 0 and np.isfinite(float(v))]
        writer = FileWriter(self.eval_dir(name))
        try:
            writer.add_summary(Summary(value=values), int(results["global_step"]))
        finally:
            writer.close()

    # ---- predict --------------------------------------------------------------------------

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields the model's predictions over input_fn's data (labels are ignored): one dict
        (or array, when predictions is one tensor) per example, or per batch when
        yield_single_examples is False. `predict_keys`: the keys of the dict to keep."""
        g, _, spec = self._build(input_fn, ModeKeys.PREDICT)
        with g.as_default():
            predictions = spec.predictions
            if isinstance(predictions, dict):
                predictions = dict(predictions)
                if predict_keys is not None:
                    keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
                    missing = [k for k in keys if k not in predictions]
                    if missing:
                        raise ValueError("predict_keys %s are not in the predictions (%s)"
                                         % (missing, sorted(predictions)))
                    predictions = {k: predictions[k] for k in keys}
            elif not isinstance(predictions, Tensor):
                raise ValueError("predictions must be a tensor or a dict of them, got %r"
                                 % (predictions,))
            path = checkpoint_path or self.latest_checkpoint()
            if path is None:
                logging.info("Could not find trained model in model_dir: %s, running "
                             "initialization to predict.", self._model_dir)
            _, restore = self._restore_hook(path)
            all_hooks = [restore] + list(hooks or []) + list(spec.prediction_hooks)
            session = MonitoredTrainingSession(hooks=all_hooks,
                                               config=self._config.session_config)
        # The caller runs between the yields: the default graph is not held meanwhile.
        with session as sess:
            while not sess.should_stop():
                batch = sess.run(predictions)
                if not yield_single_examples:
                    yield batch
                    continue
                for example in _split_batch(batch):
                    yield example

    # ---- export -----------------------------------------------------------------------------

    def export_savedmodel(self, export_dir_base, serving_input_receiver_fn, assets_extra=None,
                          as_text=False, checkpoint_path=None, strip_default_attrs=False):
        """Writes the model for serving to export_dir_base/<timestamp> (a SavedModel, see
        sf.saved_model) and returns that path (bytes, as TF1): the graph of
        serving_input_receiver_fn()'s receiver and model_fn in PREDICT mode, the variables of
        `checkpoint_path` (default: the newest in model_dir) and one signature per
        EstimatorSpec.export_outputs entry (default: the predictions, 'serving_default')."""
        from shardflow.estimator import export as _export
        from shardflow.ops import group, set_random_seed
        from shardflow.saved_model import SavedModelBuilder, tag_constants
        from shardflow.session import Session
        from shardflow.train import Saver, get_or_create_global_step
        from shardflow.variables import local_variables_initializer, tables_initializer
        if not callable(serving_input_receiver_fn):
            raise ValueError("export_savedmodel: serving_input_receiver_fn must be a function, "
                             "got %r" % (serving_input_receiver_fn,))
        path = checkpoint_path or self.latest_checkpoint()
        if path is None:
            raise ValueError("Couldn't find trained model at %s: train() before exporting"
                             % self._model_dir)
        g = Graph()
        with g.as_default():
            if self._config.tf_random_seed is not None:
                set_random_seed(self._config.tf_random_seed)
            get_or_create_global_step()
            receiver = serving_input_receiver_fn()
            if not isinstance(receiver, _export.ServingInputReceiver):
                raise ValueError("serving_input_receiver_fn must return a "
                                 "sf.estimator.export.ServingInputReceiver, got %r"
                                 % (receiver,))
            spec = self._call_model_fn(receiver.features, None, ModeKeys.PREDICT)
            signatures = _export.signature_def_map(receiver, spec.export_outputs,
                                                   spec.predictions)
            saver = Saver()
            init = group(local_variables_initializer(), tables_initializer(),
                         name="legacy_init_op")
            export_dir = _export.new_export_dir(export_dir_base)
            temp_dir = os.path.join(os.path.dirname(export_dir),
                                    "temp-" + os.path.basename(export_dir))
            with Session(graph=g, config=self._config.session_config) as sess:
                saver.restore(sess, path)
                builder = SavedModelBuilder(temp_dir)
                builder.add_meta_graph_and_variables(sess, [tag_constants.SERVING], signatures,
                                                     main_op=init)
                builder.save(as_text)
        _export.copy_assets_extra(assets_extra, temp_dir)
        os.rename(temp_dir, export_dir)
        logging.info("SavedModel written to: %s", export_dir)
        return os.fsencode(export_dir)

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra=None,
                           as_text=False, checkpoint_path=None, experimental_mode="infer"):
        """export_savedmodel's TF 1.13+ name (the PREDICT graph; other experimental_mode
        values are not supported)."""
        if experimental_mode != ModeKeys.PREDICT:
            raise NotImplementedError("export_saved_model(experimental_mode=%r): only the "
                                      "PREDICT graph is exported" % (experimental_mode,))
        return self.export_savedmodel(export_dir_base, serving_input_receiver_fn,
                                      assets_extra=assets_extra, as_text=as_text,
                                      checkpoint_path=checkpoint_path)


def _split_batch(batch):
    """The examples of one batch of predictions (a dict of arrays or an array)."""
    arrays = batch if isinstance(batch, dict) else {None: batch}
    sizes = set()
    for key, value in arrays.items():
        value = np.asarray(value)
        if value.ndim == 0:
            raise ValueError("prediction %r is a scalar: it has no batch dimension to split "
                             "(use yield_single_examples=False)" % (key,))
        sizes.add(value.shape[0])
    if len(sizes) != 1:
        raise ValueError("predictions have different batch sizes %s; use "
                         "yield_single_examples=False" % sorted(sizes))
    for i in range(sizes.pop()):
        if isinstance(batch, dict):
            yield {k: np.asarray(v)[i] for k, v in batch.items()}
        else:
            yield np.asarray(batch)[i]


def add_metrics(estimator, metric_fn):
    """TF1's tf.estimator.add_metrics (tf.contrib.estimator.add_metrics): an Estimator like
    `estimator` (same model, model_dir and config) whose evaluation also reports the metrics
    metric_fn returns, a dict of name -> (value, update_op) as eval_metric_ops. metric_fn takes
    any of `labels`, `predictions` (the model's), `features` and `config`, by name."""
    wanted = _arg_names(metric_fn)
    unknown = set(wanted) - {"labels", "predictions", "features", "config"}
    if unknown:
        raise ValueError("add_metrics: metric_fn takes labels, predictions, features and "
                         "config only, not %s" % ", ".join(sorted(unknown)))

    def model_fn(features, labels, mode, config):
        spec = estimator._call_model_fn(features, labels, mode)
        if mode != ModeKeys.EVAL:
            return spec
        given = {"labels": labels, "predictions": spec.predictions, "features": features,
                 "config": config}
        extra = metric_fn(**{k: given[k] for k in wanted})
        if not isinstance(extra, dict):
            raise TypeError("add_metrics: metric_fn must return a dict of name -> (value, "
                            "update_op), not %r" % (extra,))
        metrics = dict(spec.eval_metric_ops or {})
        metrics.update(extra)
        return spec._replace(eval_metric_ops=metrics)
    return Estimator(model_fn, model_dir=estimator.model_dir, config=estimator.config,
                     warm_start_from=estimator._warm_start_from)
