"""tf.keras.datasets.boston_housing: 506 Boston suburbs, 13 features each and the median
house price (in $1000s), read as Keras reads them from its cache
(~/.keras/datasets/boston_housing.npz) through keras.utils.get_file. Nothing is downloaded
here: without the file, load_data() fails saying where to put it.

Example::

    (x_train, y_train), (x_test, y_test) = keras.datasets.boston_housing.load_data()
    x_train.shape       # (404, 13)
"""

import numpy as np

from shardflow.keras.datasets import npz_reader
from shardflow.keras.utils import get_file

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/boston_housing.npz"
_WHAT = "the Boston housing data (Keras's boston_housing.npz)"


def load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """((x_train, y_train), (x_test, y_test)) as Keras's boston_housing.load_data: the rows
    shuffled with `seed` (np.random.seed, as Keras), the last `test_split` of them held
    out; float64 features (N, 13) and prices (N,)."""
    if not 0 <= test_split < 1:
        raise ValueError("test_split must be in [0, 1), got %r" % (test_split,))
    path = get_file(path, origin=ORIGIN)
    x, y = npz_reader.require(npz_reader.read_npz(path, _WHAT), ("x", "y"), path, _WHAT)
    if x.ndim != 2 or y.shape != (len(x),):
        raise ValueError("%s is not %s: x of shape %s and y of shape %s"
                         % (path, _WHAT, x.shape, y.shape))
    np.random.seed(seed)
    indices = np.arange(len(x))
    np.random.shuffle(indices)
    x, y = x[indices], y[indices]
    idx = int(len(x) * (1 - test_split))
    return (np.array(x[:idx]), np.array(y[:idx])), (np.array(x[idx:]), np.array(y[idx:]))
