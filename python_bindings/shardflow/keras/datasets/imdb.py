"""tf.keras.datasets.imdb: the IMDB movie reviews (25,000 to train on, 25,000 to test, labelled
0 negative or 1 positive), each a list of word indices, read as Keras reads them from its cache:
~/.keras/datasets/imdb.npz and imdb_word_index.json, through keras.utils.get_file. Nothing is
downloaded here: without the file, load_data() fails saying where to put it. The file's
object arrays are read without unpickling anything but NumPy arrays (npz_reader.py).

Example::

    (x_train, y_train), (x_test, y_test) = keras.datasets.imdb.load_data(num_words=10000)
    x_train[0][:3]      # [1, 14, 22]: start_char, then the words shifted by index_from
"""

import numpy as np

from shardflow.keras.datasets import npz_reader, word_sequences as ws
from shardflow.keras.utils import get_file

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_WHAT = "the IMDB data (Keras's imdb.npz)"


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113,
              start_char=1, oov_char=2, index_from=3, **kwargs):
    """((x_train, y_train), (x_test, y_test)) as Keras's imdb.load_data: x a 1-D array of
    lists of word indices, y an array of 0/1 labels, each split shuffled with `seed`
    (np.random.seed, as Keras).

    A word of index i (1 the most frequent) becomes i + index_from; each review starts with
    start_char (None: no start, and then index_from 0 leaves the indices as stored). With
    maxlen, reviews of maxlen words or more (start_char included) are dropped. Indices
    outside [skip_top, num_words) become oov_char, or are dropped when oov_char is None;
    num_words None means the largest index, which Keras itself treats as outside. Unlike
    TF 1.15, which filtered the two splits together and then cut them at the unfiltered
    training size, maxlen filters each split on its own (TF 2's fix)."""
    num_words = ws.check_kwargs(kwargs, num_words)
    path = get_file(path, origin=ORIGIN + "imdb.npz")
    arrays = npz_reader.read_npz(path, _WHAT, objects=True)
    x_train, y_train, x_test, y_test = npz_reader.require(
        arrays, ("x_train", "y_train", "x_test", "y_test"), path, _WHAT)
    y_train = ws.labels_of(y_train, len(x_train), path, _WHAT)
    y_test = ws.labels_of(y_test, len(x_test), path, _WHAT)
    np.random.seed(seed)
    x_train, y_train = ws.shuffled(x_train, y_train)
    x_test, y_test = ws.shuffled(x_test, y_test)
    x_train = ws.prepare(ws.sequences(x_train, path, _WHAT), start_char, index_from)
    x_test = ws.prepare(ws.sequences(x_test, path, _WHAT), start_char, index_from)
    if maxlen:
        x_train, y_train = ws.remove_long(maxlen, x_train, y_train)
        x_test, y_test = ws.remove_long(maxlen, x_test, y_test)
        if not x_train or not x_test:
            raise ValueError("After filtering for sequences shorter than maxlen=%s, no "
                             "sequence was kept. Increase maxlen." % (maxlen,))
    xs = ws.limit_words(x_train + x_test, num_words, skip_top, oov_char)
    idx = len(x_train)
    return ((ws.object_array(xs[:idx]), np.array(y_train)),
            (ws.object_array(xs[idx:]), np.array(y_test)))


def get_word_index(path="imdb_word_index.json"):
    """The word -> index dict of the reviews (index 1 the most frequent word; add
    load_data's index_from to find a word in its sequences), from Keras's cache."""
    return ws.load_word_index(path, ORIGIN + "imdb_word_index.json",
                              "the IMDB word index (Keras's imdb_word_index.json)")
