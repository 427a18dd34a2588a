"""tf.keras.datasets.reuters: 11,228 Reuters newswires in 46 topics, each a list of word
indices, read as Keras reads them from its cache: ~/.keras/datasets/reuters.npz and
reuters_word_index.json, through keras.utils.get_file. Nothing is downloaded here: without the
file, load_data() fails saying where to put it. The file's object arrays are read without
unpickling anything but NumPy arrays (npz_reader.py).

Example::

    (x_train, y_train), (x_test, y_test) = keras.datasets.reuters.load_data(num_words=10000)
"""

import numpy as np

from shardflow.keras.datasets import npz_reader, word_sequences as ws
from shardflow.keras.utils import get_file

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_WHAT = "the Reuters data (Keras's reuters.npz)"


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2,
              seed=113, start_char=1, oov_char=2, index_from=3, **kwargs):
    """((x_train, y_train), (x_test, y_test)) as Keras's reuters.load_data: the newswires
    shuffled with `seed` (np.random.seed, as Keras), prepared as imdb.load_data describes
    (index_from, start_char, maxlen, num_words, skip_top, oov_char), then the last
    `test_split` of them (of those maxlen kept) held out as the test split."""
    num_words = ws.check_kwargs(kwargs, num_words)
    path = get_file(path, origin=ORIGIN + "reuters.npz")
    arrays = npz_reader.read_npz(path, _WHAT, objects=True)
    xs, labels = npz_reader.require(arrays, ("x", "y"), path, _WHAT)
    labels = ws.labels_of(labels, len(xs), path, _WHAT)
    np.random.seed(seed)
    xs, labels = ws.shuffled(xs, labels)
    xs = ws.prepare(ws.sequences(xs, path, _WHAT), start_char, index_from)
    if maxlen:
        xs, labels = ws.remove_long(maxlen, xs, labels)
    xs = ws.limit_words(xs, num_words, skip_top, oov_char)
    idx = int(len(xs) * (1 - test_split))
    return ((ws.object_array(xs[:idx]), np.array(labels[:idx])),
            (ws.object_array(xs[idx:]), np.array(labels[idx:])))


def get_word_index(path="reuters_word_index.json"):
    """The word -> index dict of the newswires, from Keras's cache."""
    return ws.load_word_index(path, ORIGIN + "reuters_word_index.json",
                              "the Reuters word index (Keras's reuters_word_index.json)")
