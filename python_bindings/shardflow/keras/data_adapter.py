"""Batches for keras.Model.fit/evaluate/predict from what TF 1.15's Keras takes besides arrays:
a keras.utils.Sequence, a tf.data.Dataset of (inputs, targets[, sample weights]) batches, or a
Python generator of such tuples.

A Dataset is read through an iterator in Keras's session (its graph must be the model's); a
generator with next(). Each epoch is `steps` batches (steps_per_epoch, validation_steps,
evaluate/predict's steps): for a Sequence its length by default; for a Dataset, without steps,
the whole dataset, started again each epoch (a repeated dataset then needs steps), with steps,
the next `steps` batches; for a generator steps are required (it never ends by itself). The
first batch, read to build the model, is the first batch of the first epoch.

Example::

    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000).batch(32).repeat()
    model.fit(ds, epochs=5, steps_per_epoch=len(x) // 32)
"""

import numpy as np

from shardflow import errors
from shardflow.data.iterator_ops import Iterator


class BatchStream:
    """Batches (a tuple: inputs, targets, and maybe sample weights) of one source."""

    def __init__(self, source, steps, what, inputs_only=False, shard=None, restart=False,
                 stop_when_short=False):
        """`inputs_only` (predict): a batch may be the inputs alone (not a tuple). `shard`:
        (index, count) of a worker among `count` (MultiWorkerMirroredStrategy): a Dataset's
        batches are global ones, and this worker takes its share of each, rows [index * b //
        count, (index + 1) * b // count), as TF's auto-sharding of a Dataset across workers.
        `restart` (fit's validation data): a Dataset starts again each epoch even with steps,
        as TF 1.15 reinitializes the validation iterator after each validation. With
        `stop_when_short` (fit's training data) a Dataset or Python generator that ends before
        `steps` batches ends the epoch and sets `ran_out` (TF 1.15 then stops training with a
        warning); otherwise that raises OutOfRangeError."""
        from shardflow.data.dataset_ops import Dataset
        self._restart_always = bool(restart)
        self._generator = hasattr(source, "__next__") and not isinstance(
            source, (Dataset, Iterator, TensorSource))
        self._stop_when_short = bool(stop_when_short) and (isinstance(source, Dataset) or
                                                           self._generator)
        self.ran_out = False
        from shardflow.keras.utils import Sequence
        self._sequence = source if isinstance(source, Sequence) else None
        self._next = self._restart = None
        self._started = False
        self._inputs_only = inputs_only
        self._pending = []
        self.steps = None if steps is None else int(steps)
        if self.steps is not None and self.steps <= 0:
            raise ValueError("%s: steps must be positive, got %r" % (what, steps))
        if self._sequence is not None:
            if len(source) < 1:
                raise ValueError("%s: the Sequence has no batches" % what)
            if self.steps is not None and self.steps > len(source):
                raise ValueError("%s: %d steps but the Sequence has %d batches"
                                 % (what, self.steps, len(source)))
        elif isinstance(source, Dataset):
            from shardflow.keras import backend as K
            iterator = source.make_initializable_iterator()
            element = iterator.get_next()
            session = K.get_session()
            session.run(iterator.initializer)
            if shard is not None and shard[1] > 1:
                self._next = lambda: _share(session.run(element), *shard)
            else:
                self._next = lambda: session.run(element)
            # Without steps an epoch is the whole dataset: it starts again each epoch.
            self._restart = lambda: session.run(iterator.initializer)
        elif isinstance(source, Iterator) or isinstance(source, TensorSource):
            # A tf.data Iterator (its get_next), or tensors a pipeline gives each run (fit(x,
            # y) on get_next()'s tensors): TF 1.15 takes them with steps_per_epoch.
            if self.steps is None:
                raise ValueError("%s: an iterator or tensors give batches without end, so give "
                                 "steps (steps_per_epoch, validation_steps or steps)" % what)
            from shardflow.keras import backend as K
            element = source.get_next() if isinstance(source, Iterator) else source.tensors
            session = K.get_session()
            self._next = lambda: session.run(element)
        elif hasattr(source, "__next__"):
            if self.steps is None:
                raise ValueError("%s: a generator never ends, so give steps (steps_per_epoch, "
                                 "validation_steps or steps)" % what)
            self._next = lambda: next(source)
        else:
            raise TypeError("%s takes arrays, a keras.utils.Sequence, a tf.data.Dataset or a "
                            "generator, not %r" % (what, type(source).__name__))
        self._what = what

    def _read(self):
        """The next batch of a Dataset or generator; None at its end."""
        try:
            batch = self._next()
        except (StopIteration, errors.OutOfRangeError):
            return None
        if self._inputs_only and not isinstance(batch, tuple):
            return (batch,)
        if isinstance(batch, dict):
            raise ValueError("%s: a batch must be a tuple (inputs, targets[, sample "
                             "weights]), got a dict; map the dataset to (features, labels)"
                             % self._what)
        if not isinstance(batch, (tuple, list)) or len(batch) not in (1, 2, 3):
            raise ValueError("%s: a batch must be a tuple (inputs, targets[, sample weights]), "
                             "got %r" % (self._what, type(batch).__name__))
        return tuple(batch)

    def peek(self):
        """The first batch (it stays the first of the first epoch)."""
        if self._sequence is not None:
            return tuple(self._sequence[0])
        if not self._pending:
            batch = self._read()
            if batch is None:
                raise ValueError("%s: the data gave no batch" % self._what)
            self._pending.append(batch)
        return self._pending[0]

    def epoch(self, shuffle=False):
        """The batches of one epoch."""
        if self._sequence is not None:
            n = self.steps or len(self._sequence)
            order = np.random.permutation(len(self._sequence))[:n] if shuffle else range(n)
            for i in order:
                yield tuple(self._sequence[int(i)])
            return
        if self._started and self._restart is not None and (self.steps is None or
                                                            self._restart_always):
            self._restart()
        self._started = True
        count = 0
        while self.steps is None or count < self.steps:
            batch = self._pending.pop(0) if self._pending else self._read()
            if batch is None:
                if self.steps is not None and self._stop_when_short and count > 0:
                    from shardflow import tf_logging
                    what = "dataset iterator" if self._generator else "dataset"
                    tf_logging.warning(
                        "Your %s ran out of data; interrupting training. Make sure that "
                        "your %s can generate at least `steps_per_epoch * epochs` "
                        "batches. You may need to use the repeat() function when building "
                        "your dataset." % (what, "iterator" if self._generator else "dataset"))
                    self.ran_out = True
                    return
                if self.steps is not None:
                    raise errors.OutOfRangeError(
                        None, None, "%s: the data ended after %d of %d steps; repeat() the "
                        "dataset or give fewer steps" % (self._what, count, self.steps))
                return
            count += 1
            yield batch

    def end_of_epoch(self):
        if self._sequence is not None:
            self._sequence.on_epoch_end()


def _share(batch, index, count):
    """Worker `index`'s rows of every array in `batch` (nested tuples, lists, dicts)."""
    if isinstance(batch, dict):
        return {k: _share(v, index, count) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(_share(v, index, count) for v in batch)
    batch = np.asarray(batch)
    if batch.ndim == 0:
        return batch
    rows = batch.shape[0]
    return batch[index * rows // count:(index + 1) * rows // count]


class TensorSource:
    """fit/evaluate/predict's x (and y) given as tensors that yield a new batch each run
    (an input pipeline's get_next()): one element, (x, y) or x."""

    def __init__(self, x, y=None):
        self.tensors = x if y is None else (x, y)


def holds_tensors(x):
    """Whether `x` is a graph tensor, or a list, tuple or dict of them."""
    from shardflow.framework import Tensor
    if isinstance(x, Tensor):
        return True
    if isinstance(x, dict):
        return bool(x) and all(isinstance(v, Tensor) for v in x.values())
    return isinstance(x, (list, tuple)) and bool(x) and all(isinstance(v, Tensor) for v in x)


def is_stream(x):
    """Whether fit/evaluate/predict should read `x` as a BatchStream."""
    from shardflow.data.dataset_ops import Dataset
    from shardflow.keras.utils import Sequence
    return isinstance(x, (Sequence, Dataset, Iterator, TensorSource)) or \
        (hasattr(x, "__next__") and not isinstance(x, np.ndarray))
