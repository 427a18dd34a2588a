"""Horovod's Keras API (horovod.keras and horovod.tensorflow.keras), importable as
``shardflow.horovod.keras`` and ``shardflow.horovod.tensorflow.keras``:

    import shardflow as tf
    import shardflow.horovod.keras as hvd

    hvd.init()
    model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                  optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01 * hvd.size())))
    callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                 hvd.callbacks.MetricAverageCallback(),
                 hvd.callbacks.LearningRateWarmupCallback(warmup_epochs=3, verbose=1)]
    model.fit(x, y, batch_size=64, epochs=10, callbacks=callbacks,
              verbose=1 if hvd.rank() == 0 else 0)

The ranks, the launchers and DistributedOptimizer are shardflow.horovod's (its module text says
how they map); here, as in Horovod's Keras flavour, allreduce / allgather / broadcast take a
value and return the result as an array (run in the Keras session), broadcast_global_variables
runs at once, load_model wraps the loaded model's optimizer, and `callbacks` holds the
training callbacks.
"""

import types

import numpy as np

from shardflow import horovod as _hvd
from shardflow.horovod import (Average, Compression, DistributedOptimizer, Sum,  # noqa: F401
                               ccl_built, cross_rank, cross_size, ddl_built, gloo_built,
                               gloo_enabled, init, is_initialized, local_rank, local_size,
                               mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank,
                               shutdown, size)
from shardflow.keras import backend as K
from shardflow.keras.callbacks import Callback


def _run(build, value):
    """build(tensor of `value`) run in the Keras session, as an array."""
    import shardflow as sf
    session = K.get_session()
    with session.graph.as_default():
        out = build(sf.convert_to_tensor(np.asarray(value) if not isinstance(value, sf.Tensor)
                                         else value))
    return session.run(out)


def allreduce(value, name=None, average=True, prescale_factor=1.0, postscale_factor=1.0,
              op=None, compression=Compression.none):
    """`value` averaged (or with op=Sum / average=False, summed) over the ranks, as an array.
    prescale_factor and postscale_factor multiply before and after the reduction."""
    if op is None:
        op = Average if average else Sum

    def build(t):
        import shardflow as sf
        if prescale_factor != 1.0:
            t = sf.multiply(t, sf.cast(prescale_factor, t.dtype))
        t = _hvd.allreduce(t, op=op, name=name)
        if postscale_factor != 1.0:
            t = sf.multiply(t, sf.cast(postscale_factor, t.dtype))
        return t
    return _run(build, value)


def allgather(value, name=None):
    """The ranks' values concatenated along dimension 0, in rank order, as an array."""
    return _run(lambda t: _hvd.allgather(t, name=name), value)


def broadcast(value, root_rank, name=None):
    """root_rank's value on every rank, as an array."""
    return _run(lambda t: _hvd.broadcast(t, root_rank, name=name), value)


def broadcast_global_variables(root_rank):
    """Every rank takes root_rank's values of the Keras session's global variables, now."""
    session = K.get_session()
    with session.graph.as_default():
        op = _hvd.broadcast_global_variables(root_rank)
    session.run(op)


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none):
    """keras.models.load_model, its optimizer wrapped in DistributedOptimizer (so training
    resumed from a checkpoint averages gradients over the ranks again)."""
    from shardflow.keras import models
    objects = dict(custom_objects or {})
    for optimizer_class in custom_optimizers or []:
        objects[optimizer_class.__name__] = optimizer_class
    model = models.load_model(filepath, custom_objects=objects or None)
    if getattr(model, "optimizer", None) is not None:
        DistributedOptimizer(model.optimizer, compression=compression)
    return model


class BroadcastGlobalVariablesCallback(Callback):
    """At the start of training every rank takes root_rank's variables (the same initial
    weights everywhere)."""

    def __init__(self, root_rank, device=""):
        super().__init__()
        self.root_rank = root_rank

    def on_train_begin(self, logs=None):
        broadcast_global_variables(self.root_rank)


class MetricAverageCallback(Callback):
    """At the end of each epoch, each metric in the logs becomes its mean over the ranks
    (every rank must log the same metrics)."""

    def __init__(self, device=""):
        super().__init__()
        self._ops = {}

    def on_epoch_end(self, epoch, logs=None):
        import shardflow as sf
        if logs is None or size() == 1:
            return
        session = K.get_session()
        for key in sorted(logs):  # the same order on every rank
            if key not in self._ops:
                with session.graph.as_default():
                    fed = sf.placeholder(sf.float32, [], name="metric_" + key)
                    self._ops[key] = (fed, _hvd.allreduce(fed))
            fed, mean = self._ops[key]
            logs[key] = float(session.run(mean, {fed: float(logs[key])}))


class LearningRateScheduleCallback(Callback):
    """Between start_epoch and end_epoch, the learning rate is initial_lr * multiplier(epoch):
    with `staircase`, set at each epoch's first batch from the whole epoch number; without, at
    every batch from the fractional epoch (epoch + batch / steps_per_epoch). A number as
    multiplier is constant (staircase). With `momentum_correction`, an optimizer whose momentum
    is a variable has it scaled by new_lr / old_lr for that batch (Goyal et al.'s correction);
    shardflow's Keras optimizers keep momentum a constant, so it applies only to custom ones.
    initial_lr defaults to the optimizer's rate when training starts; steps_per_epoch to the
    samples over the batch size of fit."""

    def __init__(self, initial_lr=None, multiplier=1.0, start_epoch=0, end_epoch=None,
                 staircase=True, momentum_correction=True, steps_per_epoch=None, verbose=0):
        super().__init__()
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase if callable(multiplier) else True
        self.multiplier = multiplier if callable(multiplier) else (lambda epoch: multiplier)
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.verbose = verbose
        self.current_epoch = None
        self._restore_momentum = None

    def _optimizer(self):
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None or not hasattr(optimizer, "_get_lr"):
            raise ValueError("%s: compile the model with a keras.optimizers optimizer (one with "
                             "a learning rate)" % type(self).__name__)
        return optimizer

    def on_train_begin(self, logs=None):
        if self.initial_lr is None:
            self.initial_lr = self._optimizer()._get_lr()
        if not self.staircase and not self.steps_per_epoch:
            if self.params.get("steps"):
                self.steps_per_epoch = int(self.params["steps"])
            elif self.params.get("samples") and self.params.get("batch_size"):
                self.steps_per_epoch = max(1, int(np.ceil(self.params["samples"] /
                                                          self.params["batch_size"])))
            else:
                raise ValueError("%s: cannot tell the steps per epoch; pass steps_per_epoch"
                                 % type(self).__name__)

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def _active(self):
        return self.current_epoch >= self.start_epoch and (
            self.end_epoch is None or self.current_epoch < self.end_epoch)

    def _adjust(self, epoch):
        optimizer = self._optimizer()
        old_lr = optimizer._get_lr()
        new_lr = float(self.initial_lr * self.multiplier(epoch))
        optimizer.lr = new_lr
        momentum = getattr(optimizer, "momentum", None)
        if self.momentum_correction and old_lr and hasattr(momentum, "assign"):
            self._restore_momentum = K.get_value(momentum)
            K.set_value(momentum, self._restore_momentum * new_lr / old_lr)

    def on_batch_begin(self, batch, logs=None):
        if self.current_epoch is None or not self._active():
            return
        if self.staircase:
            if batch == 0:
                self._adjust(self.current_epoch)
        else:
            self._adjust(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_batch_end(self, batch, logs=None):
        if self._restore_momentum is not None:
            K.set_value(self._optimizer().momentum, self._restore_momentum)
            self._restore_momentum = None

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = self._optimizer()._get_lr()


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Goyal et al.'s gradual warm-up, as Horovod's: over the first `warmup_epochs` the rate
    rises batch by batch from initial_lr / size() to initial_lr (the rate for the whole
    global batch), so that training with many ranks does not diverge early."""

    def __init__(self, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None,
                 verbose=0, initial_lr=None):
        def multiplier(epoch):
            # Counted to the end of the batch, so each epoch ends on a round number.
            epoch += 1.0 / self.steps_per_epoch
            return 1.0 / size() * (epoch * (size() - 1) / warmup_epochs + 1)
        super().__init__(initial_lr=initial_lr, multiplier=multiplier, start_epoch=0,
                         end_epoch=warmup_epochs, staircase=False,
                         momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch, verbose=verbose)

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0:
            print("\nEpoch %d: finished gradual learning rate warmup to %g."
                  % (epoch + 1, self._optimizer()._get_lr()))


callbacks = types.SimpleNamespace(
    BroadcastGlobalVariablesCallback=BroadcastGlobalVariablesCallback,
    MetricAverageCallback=MetricAverageCallback,
    LearningRateScheduleCallback=LearningRateScheduleCallback,
    LearningRateWarmupCallback=LearningRateWarmupCallback)

__all__ = ["Average", "Compression", "DistributedOptimizer", "Sum", "allgather", "allreduce",
           "broadcast", "broadcast_global_variables", "callbacks", "ccl_built", "cross_rank",
           "cross_size", "ddl_built", "gloo_built", "gloo_enabled", "init", "is_initialized",
           "load_model", "local_rank", "local_size", "mpi_built", "mpi_enabled",
           "mpi_threads_supported", "nccl_built", "rank", "shutdown", "size"]
