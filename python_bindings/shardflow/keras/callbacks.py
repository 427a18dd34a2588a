"""tf.keras.callbacks: hooks that Model.fit calls around epochs and batches (History,
LambdaCallback, EarlyStopping, ModelCheckpoint).

Example::

    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=2)
    save = keras.callbacks.ModelCheckpoint("ckpt/w.{epoch:02d}-{val_loss:.2f}.h5",
                                           save_best_only=True, save_weights_only=True)
    history = model.fit(x, y, epochs=50, validation_split=0.2, callbacks=[stop, save])
    history.history["loss"]          # one value per epoch run
"""

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
