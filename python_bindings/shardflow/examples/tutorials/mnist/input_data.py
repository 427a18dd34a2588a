"""TF1's tutorial MNIST reader (tensorflow.examples.tutorials.mnist.input_data, also
tf.contrib.learn.datasets.mnist): read_data_sets(train_dir) gives train, validation and test
DataSets with next_batch(), as the classic TF1 MNIST programs use them.

    from shardflow.examples.tutorials.mnist import input_data
    mnist = input_data.read_data_sets("/tmp/mnist", one_hot=True)
    xs, ys = mnist.train.next_batch(100)          # [100, 784] float32 in [0, 1], [100, 10]

Nothing is downloaded. The four MNIST files (train-images-idx3-ubyte.gz, ...) are read from
`train_dir` when they are there; otherwise the reader falls back to **Fashion-MNIST** from
Debian's dataset-fashion-mnist (the same format: 28x28 images, 10 classes, 60000/10000), with a
UserWarning every time, so that a program expecting digits is never silently given clothing.
Files are read and checked by shardflow's C++ loader (datasets/fashion_mnist.h).
"""

import collections
import os
import warnings

import numpy as np

from shardflow import dtypes
from shardflow.datasets import fashion_mnist as _loader

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])
_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
          "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


def dense_to_one_hot(labels_dense, num_classes):
    """Class indices [N] as one-hot rows [N, num_classes] (float64, as TF1's)."""
    labels_dense = np.asarray(labels_dense).reshape(-1)
    out = np.zeros((labels_dense.shape[0], num_classes))
    out[np.arange(labels_dense.shape[0]), labels_dense] = 1
    return out


class DataSet:
    """Images and labels with TF1's next_batch: shuffled at the start of every epoch (with
    shuffle=True), a batch that crosses the end of an epoch takes the rest of it and the start
    of the next."""

    def __init__(self, images, labels, fake_data=False, one_hot=False, dtype=dtypes.float32,
                 reshape=True, seed=None):
        dtype = dtypes.as_dtype(dtype)
        if dtype not in (dtypes.uint8, dtypes.float32):
            raise TypeError("DataSet: dtype must be uint8 or float32, got %s" % dtype.name)
        if fake_data:
            raise ValueError("DataSet: fake_data is not supported; give images and labels")
        if len(images) != len(labels):
            raise ValueError("DataSet: %d images but %d labels" % (len(images), len(labels)))
        images = np.asarray(images)
        if reshape:
            images = images.reshape(images.shape[0], -1)
        if dtype == dtypes.float32 and images.dtype == np.uint8:
            images = images.astype(np.float32) / 255.0
        elif dtype == dtypes.uint8 and images.dtype != np.uint8:
            images = np.rint(np.asarray(images) * 255.0).astype(np.uint8)
        self._images, self._labels = images, np.asarray(labels)
        self._num_examples = images.shape[0]
        self._epochs_completed = 0
        self._index_in_epoch = 0
        self._rng = np.random.RandomState(seed)

    images = property(lambda self: self._images)
    labels = property(lambda self: self._labels)
    num_examples = property(lambda self: self._num_examples)
    epochs_completed = property(lambda self: self._epochs_completed)

    def _shuffle(self):
        order = self._rng.permutation(self._num_examples)
        self._images, self._labels = self._images[order], self._labels[order]

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """The next `batch_size` (images, labels)."""
        if fake_data:
            raise ValueError("next_batch: fake_data is not supported")
        if batch_size <= 0 or self._num_examples == 0:
            raise ValueError("next_batch: batch_size must be positive and the DataSet not empty")
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            self._shuffle()
        if start + batch_size <= self._num_examples:
            self._index_in_epoch += batch_size
            end = self._index_in_epoch
            return self._images[start:end], self._labels[start:end]
        self._epochs_completed += 1
        rest_images, rest_labels = self._images[start:], self._labels[start:]
        if shuffle:
            self._shuffle()
        self._index_in_epoch = batch_size - len(rest_images)
        new_images = self._images[:self._index_in_epoch]
        new_labels = self._labels[:self._index_in_epoch]
        return (np.concatenate([rest_images, new_images]),
                np.concatenate([rest_labels, new_labels]))


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=dtypes.float32,
                   reshape=True, validation_size=5000, seed=None, source_url=None):
    """Datasets(train, validation, test): the first `validation_size` training examples are
    the validation set. See the module's text for where the data come from."""
    if fake_data:
        raise ValueError("read_data_sets: fake_data is not supported")
    have = train_dir and all(os.path.exists(os.path.join(train_dir, f)) for f in _FILES)
    if not have:
        warnings.warn("read_data_sets(%r): no MNIST files there and nothing is downloaded; "
                      "returning Fashion-MNIST (clothing, not digits) from %s"
                      % (train_dir, _loader.DEFAULT_DIR), UserWarning, stacklevel=2)
    (x_train, y_train), (x_test, y_test) = _loader.load(train_dir if have else None, flat=True)
    if not 0 <= validation_size <= len(x_train):
        raise ValueError("validation_size must be between 0 and %d, got %d"
                         % (len(x_train), validation_size))
    if one_hot:
        y_train, y_test = dense_to_one_hot(y_train, 10), dense_to_one_hot(y_test, 10)
    else:
        y_train, y_test = y_train.astype(np.uint8), y_test.astype(np.uint8)
    shape = (-1, 784) if reshape else (-1, 28, 28, 1)
    x_train, x_test = x_train.reshape(shape), x_test.reshape(shape)
    if dtypes.as_dtype(dtype) == dtypes.uint8:
        x_train = np.rint(x_train * 255.0).astype(np.uint8)
        x_test = np.rint(x_test * 255.0).astype(np.uint8)

    def make(x, y):
        return DataSet(x, y, dtype=dtype, reshape=reshape, seed=seed)

    return Datasets(train=make(x_train[validation_size:], y_train[validation_size:]),
                    validation=make(x_train[:validation_size], y_train[:validation_size]),
                    test=make(x_test, y_test))


def load_mnist(train_dir="MNIST-data"):
    """read_data_sets(train_dir), as tf.contrib.learn.datasets.mnist.load_mnist."""
    return read_data_sets(train_dir)
