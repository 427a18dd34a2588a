"""TF1's tf.estimator.inputs: input_fns over NumPy arrays, built on sf.data.

Example::

    input_fn = sf.estimator.inputs.numpy_input_fn(
        {"x": x_train}, y_train, batch_size=32, num_epochs=None, shuffle=True)
    estimator.train(input_fn, steps=1000)

The data stays in the client process (sf.data.Dataset.from_tensor_slices); `queue_capacity`
is the shuffle buffer and `num_threads` is accepted for TF1's signature only.
"""

import numpy as np


def _as_arrays(value, what):
    if isinstance(value, dict):
        if not value:
            raise ValueError("%s must not be an empty dict" % what)
        return {k: np.asarray(v) for k, v in value.items()}
    return np.asarray(value)


def _lengths(value):
    if isinstance(value, dict):
        return {k: (len(v) if v.ndim else None) for k, v in value.items()}
    return {None: len(value) if value.ndim else None}


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                   num_threads=1):
    """An input_fn giving (features, labels) batches of `x` (a dict of arrays, or an array)
    and `y` (an array, a dict of arrays or None: features only), first dimensions the
    examples. `num_epochs` None repeats forever; `shuffle` (required, a bool) shuffles with a
    buffer of `queue_capacity` examples (seeded by the graph's seed, e.g. RunConfig's
    tf_random_seed). The last batch of the last epoch may be smaller."""
    if not isinstance(shuffle, bool):
        raise ValueError("shuffle must be provided and explicitly set as boolean (it is "
                         "recommended to set it as True for training); got %r" % (shuffle,))
    if batch_size <= 0:
        raise ValueError("batch_size must be positive, got %r" % (batch_size,))
    if num_epochs is not None and num_epochs <= 0:
        raise ValueError("num_epochs must be None or positive, got %r" % (num_epochs,))
    features = _as_arrays(x, "x")
    labels = None if y is None else _as_arrays(y, "y")
    if isinstance(features, dict) and isinstance(labels, dict) and \
            set(features) & set(labels):
        raise ValueError("x and y share keys %s" % sorted(set(features) & set(labels)))
    lengths = dict(_lengths(features))
    if labels is not None:
        lengths.update({("y", k): n for k, n in _lengths(labels).items()})
    if None in lengths.values() or len(set(lengths.values())) != 1:
        raise ValueError("every array of x and y needs one first dimension, the number of "
                         "examples; got %s" % lengths)

    def input_fn():
        from shardflow.data import Dataset
        data = features if labels is None else (features, labels)
        ds = Dataset.from_tensor_slices(data)
        if shuffle:
            ds = ds.shuffle(queue_capacity)
        ds = ds.repeat(num_epochs).batch(batch_size)
        element = ds.make_one_shot_iterator().get_next()
        return element

    return input_fn
