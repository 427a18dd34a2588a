"""The steps Keras's imdb and reuters load_data share, with Keras's exact semantics: reviews
or newswires are lists of word indices (1 the most frequent word), shifted by `index_from`,
started with `start_char`, filtered by `maxlen`, and cut to the `num_words` most frequent
words (minus the `skip_top` first) with `oov_char` in place of the words cut.

Example::

    seqs = prepare(raw, start_char=1, index_from=3)    # [[5, 8]] -> [[1, 8, 11]]
"""

import json
import operator

import numpy as np

from shardflow.keras.utils import get_file


def sequences(array, path, what):
    """The sequences of `array` (a 1-D array of lists or integer arrays, as Keras's files
    hold them) as lists of Python ints; anything else raises ValueError."""
    if not isinstance(array, np.ndarray) or array.ndim != 1:
        raise ValueError("%s is not %s: its sequences are not a 1-D array" % (path, what))
    try:
        return [[operator.index(w) for w in seq] for seq in array]
    except TypeError as e:
        raise ValueError("%s is not %s: a sequence is not a list of word indices (%s)"
                         % (path, what, e)) from None


def labels_of(array, count, path, what):
    """`array` checked as `count` integer labels."""
    if not isinstance(array, np.ndarray) or array.shape != (count,) or \
            not np.issubdtype(array.dtype, np.integer):
        raise ValueError("%s is not %s: %d sequences but labels of shape %s and type %s"
                         % (path, what, count, getattr(array, "shape", None),
                            getattr(array, "dtype", type(array).__name__)))
    return array


def prepare(seqs, start_char, index_from):
    """Each sequence's words shifted by index_from, after start_char (when not None)."""
    if start_char is not None:
        return [[start_char] + [w + index_from for w in x] for x in seqs]
    if index_from:
        return [[w + index_from for w in x] for x in seqs]
    return seqs


def remove_long(maxlen, seqs, labels):
    """The sequences shorter than maxlen (strictly, as Keras's _remove_long_seq) and their
    labels."""
    kept = [i for i, x in enumerate(seqs) if len(x) < maxlen]
    return [seqs[i] for i in kept], np.asarray(labels)[kept]


def limit_words(seqs, num_words, skip_top, oov_char):
    """Words outside [skip_top, num_words) replaced by oov_char, or dropped when it is None.
    num_words None (or 0) means the largest index in `seqs`, which, as in Keras, is then
    itself outside the range."""
    if not num_words:
        num_words = max(max(x) for x in seqs if x) if any(seqs) else 0
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in seqs]
    return [[w for w in x if skip_top <= w < num_words] for x in seqs]


def object_array(seqs):
    """A 1-D array of lists, the type Keras returns sequences in."""
    out = np.empty(len(seqs), dtype=object)
    for i, seq in enumerate(seqs):
        out[i] = seq
    return out


def check_kwargs(kwargs, num_words):
    """num_words, with Keras's legacy nb_words taken in its place; other unknown keyword
    arguments raise TypeError."""
    if "nb_words" in kwargs:
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError("Unrecognized keyword arguments: %s" % (kwargs,))
    return num_words


def shuffled(*arrays):
    """The arrays in the order of one np.random.shuffle of their indices: NumPy's global
    generator, which load_data seeds with np.random.seed(seed) as Keras does."""
    indices = np.arange(len(arrays[0]))
    np.random.shuffle(indices)
    return [a[indices] for a in arrays]


def load_word_index(fname, origin, what):
    """The word -> index dict of the JSON file `fname` in Keras's cache."""
    path = get_file(fname, origin=origin)
    with open(path) as f:
        try:
            index = json.load(f)
        except ValueError as e:
            raise ValueError("%s is not %s: %s" % (path, what, e)) from None
    if not isinstance(index, dict):
        raise ValueError("%s is not %s: not a JSON object of word -> index" % (path, what))
    return index
