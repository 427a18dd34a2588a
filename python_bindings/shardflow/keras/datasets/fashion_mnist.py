"""tf.keras.datasets.fashion_mnist, read from Debian's dataset-fashion-mnist package
(/usr/share/datasets/fashion-mnist) by shardflow's C++ loader; nothing is downloaded.

Example::

    (x_train, y_train), (x_test, y_test) = keras.datasets.fashion_mnist.load_data()
    x_train.shape, x_train.dtype        # (60000, 28, 28) uint8
"""

import numpy as np

from shardflow.datasets import fashion_mnist as _loader


def load_data(path=None):
    """((x_train, y_train), (x_test, y_test)) as Keras returns them: uint8 images
    (N, 28, 28) with values 0..255 and uint8 labels (N,), classes 0..9. `path` is the
    directory of the four idx files (default: the Debian package's). A missing file raises
    LookupError saying how to install the data."""
    (x_train, y_train), (x_test, y_test) = _loader.load(path, flat=True)

    def images(x):
        return np.rint(x * 255.0).astype(np.uint8).reshape(-1, 28, 28)

    return ((images(x_train), y_train.astype(np.uint8)),
            (images(x_test), y_test.astype(np.uint8)))
