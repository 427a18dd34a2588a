"""tf.keras.datasets.cifar10, read as Keras reads it: from cifar-10-batches-py (the CIFAR-10
Python batches) under ~/.keras/datasets, through keras.utils.get_file. Nothing is downloaded
here: without the data on the machine, load_data() fails saying where to put it.
"""

import os
import pickle

import numpy as np

from shardflow.keras.utils import get_file

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"


class _BatchUnpickler(pickle.Unpickler):
    """A CIFAR batch is a pickle, and a file is untrusted: only the classes a batch holds
    (NumPy arrays and dtypes) may be named; any other is refused instead of imported."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy", "ndarray"),
                ("numpy", "dtype"), ("numpy.core.multiarray", "scalar")}

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError("a CIFAR-10 batch does not name %s.%s" % (module, name))
        return super().find_class(module, name)


def _batch(path):
    with open(path, "rb") as f:
        try:
            d = _BatchUnpickler(f, encoding="bytes").load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as e:
            raise ValueError("%s is not a CIFAR-10 batch: %s" % (path, e)) from None
    if not isinstance(d, dict) or b"data" not in d or b"labels" not in d:
        raise ValueError("%s is not a CIFAR-10 batch (no data and labels)" % path)
    data = np.asarray(d[b"data"], dtype=np.uint8)
    if data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError("%s is not a CIFAR-10 batch (data of shape %s)" % (path, data.shape))
    labels = np.asarray(d[b"labels"], dtype=np.uint8).reshape(-1, 1)
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 images (N, 32, 32, 3), labels (N, 1),
    50000 and 10000 of them, as Keras's cifar10.load_data()."""
    path = get_file("cifar-10-batches-py", origin=ORIGIN, untar=True)
    parts = [_batch(os.path.join(path, "data_batch_%d" % i)) for i in range(1, 6)]
    x_train = np.concatenate([p[0] for p in parts])
    y_train = np.concatenate([p[1] for p in parts])
    x_test, y_test = _batch(os.path.join(path, "test_batch"))
    return (x_train, y_train), (x_test, y_test)
