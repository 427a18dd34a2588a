"""tf.keras.callbacks: hooks that Model.fit calls around epochs and batches (History,
LambdaCallback, EarlyStopping, ModelCheckpoint, LearningRateScheduler, ReduceLROnPlateau,
CSVLogger, TerminateOnNaN, TensorBoard, BaseLogger, ProgbarLogger).

Example::

    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=2)
    save = keras.callbacks.ModelCheckpoint("ckpt/w.{epoch:02d}-{val_loss:.2f}.h5",
                                           save_best_only=True, save_weights_only=True)
    history = model.fit(x, y, epochs=50, validation_split=0.2, callbacks=[stop, save])
    history.history["loss"]          # one value per epoch run
"""

import collections
import csv
import os

import numpy as np


class Callback:
    """Base class. `model` and `params` ({'epochs', 'steps', 'samples', 'verbose',
    'metrics'}) are set before training; the hooks receive a `logs` dict."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_batch_begin(self, batch, logs=None):
        pass

    def on_batch_end(self, batch, logs=None):
        pass

    # TF 1.14+'s spellings of the batch hooks in fit.
    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs)

    # evaluate's (and fit's validation) and predict's hooks, as TF 1.14+.
    def on_test_begin(self, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass

    def on_test_batch_begin(self, batch, logs=None):
        pass

    def on_test_batch_end(self, batch, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass

    def on_predict_batch_begin(self, batch, logs=None):
        pass

    def on_predict_batch_end(self, batch, logs=None):
        pass


def call_hooks(callbacks, hook, *args):
    """Calls `hook` of each callback that has it (duck-typed callbacks may lack the newer
    hooks)."""
    for cb in callbacks or ():
        fn = getattr(cb, hook, None)
        if fn is not None:
            fn(*args)


class History(Callback):
    """Records each epoch's logs: ``history.history['loss']`` is a list, one per epoch;
    ``history.epoch`` the epoch numbers. Model.fit returns it."""

    def on_train_begin(self, logs=None):
        self.epoch = []
        self.history = {}

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


class LambdaCallback(Callback):
    """A callback from functions: on_epoch_begin(epoch, logs), on_epoch_end(epoch, logs),
    on_batch_begin(batch, logs), on_batch_end(batch, logs), on_train_begin(logs),
    on_train_end(logs)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None,
                 on_batch_end=None, on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        for name, fn in (("on_epoch_begin", on_epoch_begin), ("on_epoch_end", on_epoch_end),
                         ("on_batch_begin", on_batch_begin), ("on_batch_end", on_batch_end),
                         ("on_train_begin", on_train_begin), ("on_train_end", on_train_end)):
            if fn is not None:
                setattr(self, name, fn)


class EarlyStopping(Callback):
    """Stops fit when `monitor` has not improved by more than `min_delta` for `patience`
    epochs (sets model.stop_training); `stopped_epoch` is the epoch it stopped after.
    `mode` 'min', 'max' or 'auto' (max for names containing 'acc'); with
    `restore_best_weights` the weights of the best epoch are put back at the end."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False):
        super().__init__()
        self.monitor = monitor
        self.patience = int(patience)
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        if mode not in ("auto", "min", "max"):
            raise ValueError("EarlyStopping mode is 'auto', 'min' or 'max', not %r" % (mode,))
        if mode == "max" or (mode == "auto" and "acc" in monitor):
            self.monitor_op = np.greater
            self.min_delta = abs(min_delta)
        else:
            self.monitor_op = np.less
            self.min_delta = -abs(min_delta)

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best_weights = None
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            import warnings
            warnings.warn("EarlyStopping: the logs have no %r (they have %s)"
                          % (self.monitor, ", ".join(sorted(logs or {}))))
            return
        if self.monitor_op(current - self.min_delta, self.best):
            self.best = current
            self.wait = 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print("Epoch %05d: early stopping" % (self.stopped_epoch + 1))


class ModelCheckpoint(Callback):
    """Saves the model at the end of every `period`-th epoch, as Keras's ModelCheckpoint:
    `filepath` is formatted with the epoch (counted from 1) and the epoch's logs
    (``"w.{epoch:02d}-{val_loss:.2f}.h5"``), then written by model.save_weights
    (save_weights_only) or model.save. With save_best_only the model is saved only when
    `monitor` improved on the best value so far ('min' or 'max' by `mode`; 'auto' is max for
    names with 'acc', else min), so a fixed filepath holds the best model. `save_freq` is
    Keras 1.15's other spelling of the period: only 'epoch' is supported."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", period=1, save_freq="epoch"):
        super().__init__()
        if save_freq != "epoch":
            raise ValueError("ModelCheckpoint(save_freq=%r): only 'epoch' is supported; use "
                             "period= to save every few epochs" % (save_freq,))
        self.filepath = str(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = bool(save_best_only)
        self.save_weights_only = bool(save_weights_only)
        self.period = int(period)
        self.epochs_since_last_save = 0
        if mode not in ("auto", "min", "max"):
            import warnings
            warnings.warn("ModelCheckpoint mode %r is unknown, fallback to auto mode." % (mode,),
                          RuntimeWarning)
            mode = "auto"
        if mode == "max" or (mode == "auto" and ("acc" in monitor
                                                  or monitor.startswith("fmeasure"))):
            self.monitor_op, self.best = np.greater, -np.inf
        else:
            self.monitor_op, self.best = np.less, np.inf

    def _save(self, filepath):
        if self.save_weights_only:
            self.model.save_weights(filepath, overwrite=True)
        else:
            self.model.save(filepath, overwrite=True)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self.epochs_since_last_save += 1
        if self.epochs_since_last_save < self.period:
            return
        self.epochs_since_last_save = 0
        filepath = self.filepath.format(epoch=epoch + 1, **logs)
        if not self.save_best_only:
            if self.verbose > 0:
                print("\nEpoch %05d: saving model to %s" % (epoch + 1, filepath))
            self._save(filepath)
            return
        current = logs.get(self.monitor)
        if current is None:
            import warnings
            warnings.warn("Can save best model only with %s available, skipping."
                          % self.monitor, RuntimeWarning)
            return
        if self.monitor_op(current, self.best):
            if self.verbose > 0:
                print("\nEpoch %05d: %s improved from %0.5f to %0.5f, saving model to %s"
                      % (epoch + 1, self.monitor, self.best, current, filepath))
            self.best = current
            self._save(filepath)
        elif self.verbose > 0:
            print("\nEpoch %05d: %s did not improve from %0.5f"
                  % (epoch + 1, self.monitor, self.best))


def _optimizer_of(callback, who):
    optimizer = getattr(callback.model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "_get_lr"):
        raise ValueError('%s: the optimizer must have a "lr" attribute (compile the model '
                         'with a keras.optimizers optimizer)' % who)
    return optimizer


class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate at the start of each epoch to
    ``schedule(epoch)`` (or ``schedule(epoch, lr)`` with the current rate); the rate is the
    Variable the training step reads, so the updates that follow use it.

    Example::

        sched = keras.callbacks.LearningRateScheduler(lambda epoch: 0.1 * 0.5 ** epoch)
        model.fit(x, y, epochs=5, callbacks=[sched])   # history.history["lr"] per epoch
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = _optimizer_of(self, "LearningRateScheduler")
        try:
            lr = self.schedule(epoch, optimizer._get_lr())
        except TypeError:  # a schedule of the epoch alone (Keras's old signature)
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, np.floating, int, np.integer)):
            raise ValueError('The output of the "schedule" function should be float, not %r'
                             % (lr,))
        optimizer.lr = float(lr)
        if self.verbose > 0:
            print("\nEpoch %05d: LearningRateScheduler reducing learning rate to %s."
                  % (epoch + 1, lr))

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = self.model.optimizer._get_lr()


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by `factor` (not below `min_lr`) when `monitor` has not
    improved by more than `min_delta` for `patience` epochs, then waits `cooldown` epochs
    before counting again. `mode` as EarlyStopping's ('auto': max for names with 'acc').
    Adds the rate to the epoch's logs as 'lr'."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0, **kwargs):
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0.")
        if "epsilon" in kwargs:   # Keras's older name of min_delta
            min_delta = kwargs.pop("epsilon")
        self.monitor, self.factor, self.min_lr = monitor, float(factor), float(min_lr)
        self.min_delta, self.patience, self.cooldown = float(min_delta), int(patience), cooldown
        self.verbose = verbose
        if mode not in ("auto", "min", "max"):
            import warnings
            warnings.warn("Learning Rate Plateau Reducing mode %s is unknown, fallback to auto "
                          "mode." % (mode,), RuntimeWarning)
            mode = "auto"
        self.mode = mode
        self._reset()

    def _reset(self):
        if self.mode == "min" or (self.mode == "auto" and "acc" not in self.monitor):
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        optimizer = _optimizer_of(self, "ReduceLROnPlateau")
        logs["lr"] = optimizer._get_lr()
        current = logs.get(self.monitor)
        if current is None:
            import warnings
            warnings.warn("Reduce LR on plateau conditioned on metric `%s` which is not "
                          "available. Available metrics are: %s"
                          % (self.monitor, ",".join(sorted(logs))), RuntimeWarning)
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = optimizer._get_lr()
                if old_lr > self.min_lr:
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    optimizer.lr = new_lr
                    if self.verbose > 0:
                        print("\nEpoch %05d: ReduceLROnPlateau reducing learning rate to %s."
                              % (epoch + 1, new_lr))
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


class CSVLogger(Callback):
    """Writes one CSV row per epoch to `filename`: 'epoch' then the logs' keys, sorted
    (header from the first epoch); with `append` rows are added to an existing file (no
    second header)."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = str(filename)
        self.sep = separator
        self.append = append
        self.writer = None
        self.keys = None
        self.csv_file = None

    def on_train_begin(self, logs=None):
        self.append_header = True
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename) as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        else:
            mode = "w"
        self.csv_file = open(self.filename, mode, newline="")
        self.writer, self.keys = None, None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}

        def handle_value(k):
            if isinstance(k, str):
                return k
            if np.ndim(k) > 0:
                return '"[%s]"' % (", ".join(map(str, k)))
            return k

        if self.keys is None:
            self.keys = sorted(logs.keys())
        if self.model.stop_training:  # the epoch ended training: absent values are NA
            logs = dict((k, logs[k]) if k in logs else (k, "NA") for k in self.keys)
        if self.writer is None:
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys,
                                         delimiter=self.sep)
            if self.append_header:
                self.writer.writeheader()
        row = collections.OrderedDict({"epoch": epoch})
        row.update((key, handle_value(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file is not None:
            self.csv_file.close()
        self.writer = None


class TerminateOnNaN(Callback):
    """Stops training (model.stop_training) when a batch's loss is NaN or infinite."""

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and (np.isnan(loss) or np.isinf(loss)):
            print("Batch %d: Invalid loss, terminating training" % batch)
            self.model.stop_training = True


class TensorBoard(Callback):
    """Writes the epoch logs ('loss', metrics, 'val_*', 'lr') as scalar summaries, step =
    epoch, to an event file in `log_dir` through tf.summary.FileWriter (read them back with
    tf.train.summary_iterator or TensorBoard). With write_graph the graph is written too;
    with update_freq='batch' (or a number of batches) batch losses are written as
    'batch_<name>' by step; with histogram_freq N, a histogram of every weight each N-th
    epoch. Gradients, images and embeddings are not written (write_grads, write_images or
    embeddings_freq other than 0/False is a ValueError)."""

    def __init__(self, log_dir="./logs", histogram_freq=0, batch_size=32, write_graph=True,
                 write_grads=False, write_images=False, embeddings_freq=0,
                 embeddings_layer_names=None, embeddings_metadata=None, embeddings_data=None,
                 update_freq="epoch", profile_batch=2, **kwargs):
        super().__init__()
        if write_grads or write_images or embeddings_freq:
            raise ValueError("TensorBoard: gradients, images and embeddings are not written "
                             "here; scalars, weight histograms (histogram_freq) and the graph")
        if histogram_freq < 0:
            raise ValueError("TensorBoard: histogram_freq must be >= 0, got %r"
                             % (histogram_freq,))
        self.histogram_freq = int(histogram_freq)
        self.log_dir = str(log_dir)
        self.write_graph = write_graph
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.writer = None
        self._seen = 0

    def _write(self, logs, step, prefix=""):
        from shardflow import summary
        values = [summary.Summary.Value(tag=prefix + name, simple_value=float(value))
                  for name, value in sorted(logs.items())
                  if name not in ("batch", "size") and np.ndim(value) == 0]
        if values:
            self.writer.add_summary(summary.Summary(value=values), global_step=step)

    def on_train_begin(self, logs=None):
        from shardflow import summary
        from shardflow.keras import backend as K
        self.writer = summary.FileWriter(self.log_dir)
        if self.write_graph:
            self.writer.add_graph(K.get_session().graph)
        self._seen = 0

    def on_batch_end(self, batch, logs=None):
        if self.update_freq == "epoch" or self.writer is None:
            return
        self._seen += 1
        if self._seen % int(self.update_freq) == 0:
            self._write(logs or {}, self._seen, prefix="batch_")

    def on_epoch_end(self, epoch, logs=None):
        self._write(logs or {}, epoch)
        if self.histogram_freq and (epoch + 1) % self.histogram_freq == 0:
            self._write_histograms(epoch)
        self.writer.flush()

    def _write_histograms(self, epoch):
        """A histogram of each weight's values (tag: its variable's name), as TF 1.15's
        callback writes with histogram_freq."""
        from shardflow.keras import backend as K
        from shardflow.summary import _bytes_field, _histogram
        weights = [w for layer in self.model.layers for w in getattr(layer, "weights", [])]
        if not weights:
            return
        values = K.batch_get_value(weights)
        data = b"".join(_bytes_field(1, _bytes_field(1, w.name.replace(":", "_")) +
                                     _bytes_field(5, _histogram(v)))
                        for w, v in zip(weights, values))
        self.writer.add_summary(data, global_step=epoch)

    def on_train_end(self, logs=None):
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class BaseLogger(Callback):
    """Averages the batches' metrics over each epoch, weighted by batch size, and writes the
    averages into the epoch's logs (for the names in params['metrics']); stateful_metrics are
    taken from the last batch instead, as TF 1.15's BaseLogger (which fit adds itself there;
    shardflow's fit computes the epoch averages already, so this is for callbacks that
    subclass or call it)."""

    def __init__(self, stateful_metrics=None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or [])
        self.seen = 0
        self.totals = {}

    def on_epoch_begin(self, epoch, logs=None):
        self.seen = 0
        self.totals = {}

    def on_batch_end(self, batch, logs=None):
        logs = logs or {}
        batch_size = logs.get("size", 0)
        num_steps = logs.get("num_steps", 1)
        self.seen += batch_size * num_steps
        for k, v in logs.items():
            if k in self.stateful_metrics:
                self.totals[k] = v
            else:
                self.totals[k] = self.totals.get(k, 0) + v * batch_size

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        for k in self.params.get("metrics", []):
            if k in self.totals:
                logs[k] = self.totals[k] if k in self.stateful_metrics else \
                    self.totals[k] / max(self.seen, 1)


class ProgbarLogger(Callback):
    """Prints each epoch's line as fit(verbose=1) does: 'Epoch i/n', then 'samples -
    loss: ... - acc: ...' (fit prints these itself when verbose; this callback is for
    fit(verbose=0, callbacks=[ProgbarLogger()]))."""

    def __init__(self, count_mode="samples", stateful_metrics=None):
        super().__init__()
        self.count_mode = count_mode

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        n = self.params.get("samples")
        print("Epoch %d/%d" % (epoch + 1, self.params.get("epochs", epoch + 1)))
        print("%s/%s - %s" % (n, n, " - ".join("%s: %.4f" % (k, v) for k, v in logs.items()
                                              if np.ndim(v) == 0)))
