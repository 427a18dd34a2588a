"""keras.datasets.imdb, reuters and boston_housing read from Keras's cache: tiny files in Keras's
formats, checked against hand-computed results of Keras's semantics (index_from, start_char,
num_words/skip_top/oov_char, maxlen, seed, test_split); a clear error without the data; and
.npz files whose pickles name anything but NumPy arrays refused without running them."""

import json
import os
import zipfile

import numpy as np
import pytest

import shardflow as tf


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = tmp_path / "home" / ".keras" / "datasets"
    folder.mkdir(parents=True)
    return folder


def _objects(seqs):
    out = np.empty(len(seqs), dtype=object)
    for i, s in enumerate(seqs):
        out[i] = list(s)
    return out


# Labels are distinct so that a sequence can be found after the shuffle by its label.
IMDB_TRAIN = {0: [1, 2, 3], 1: [4, 5], 2: [6, 7, 8, 9], 3: [10]}
IMDB_TEST = {4: [2, 2], 5: [9, 1, 1, 1, 1]}


def _write_imdb(folder):
    np.savez(folder / "imdb.npz",
             x_train=_objects(IMDB_TRAIN.values()), y_train=np.array(list(IMDB_TRAIN)),
             x_test=_objects(IMDB_TEST.values()), y_test=np.array(list(IMDB_TEST)))


def _by_label(x, y):
    assert x.dtype == object and x.ndim == 1 and len(x) == len(y)
    assert all(isinstance(seq, list) for seq in x)
    return {int(label): seq for seq, label in zip(x, y)}


def test_imdb_defaults_shift_start_and_shuffle_as_keras(cache):
    _write_imdb(cache)
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.imdb.load_data()
    # index_from 3 and start_char 1; num_words None is the largest index (13), which Keras
    # itself treats as out of range: [10] -> [1, 13] -> [1, 2].
    assert _by_label(x_train, y_train) == {0: [1, 4, 5, 6], 1: [1, 7, 8],
                                           2: [1, 9, 10, 11, 12], 3: [1, 2]}
    assert _by_label(x_test, y_test) == {4: [1, 5, 5], 5: [1, 12, 4, 4, 4, 4]}
    # The order: one np.random.seed(113), then a shuffle of each split.
    rng = np.random.RandomState(113)
    train_order, test_order = np.arange(4), np.arange(2)
    rng.shuffle(train_order)
    rng.shuffle(test_order)
    np.testing.assert_array_equal(y_train, train_order)
    np.testing.assert_array_equal(y_test, 4 + test_order)
    (_, y_other), _ = tf.keras.datasets.imdb.load_data(seed=7)
    order = np.arange(4)
    np.random.RandomState(7).shuffle(order)
    np.testing.assert_array_equal(y_other, order)


def test_imdb_num_words_skip_top_oov_and_maxlen(cache):
    _write_imdb(cache)
    imdb = tf.keras.datasets.imdb
    (x, y), (xt, yt) = imdb.load_data(num_words=8)
    assert _by_label(x, y) == {0: [1, 4, 5, 6], 1: [1, 7, 2], 2: [1, 2, 2, 2, 2], 3: [1, 2]}
    assert _by_label(xt, yt) == {4: [1, 5, 5], 5: [1, 2, 4, 4, 4, 4]}
    # skip_top also covers start_char (1 < 2), as in Keras; oov_char=None drops the words.
    (x, y), _ = imdb.load_data(num_words=8, skip_top=2, oov_char=None)
    assert _by_label(x, y) == {0: [4, 5, 6], 1: [7], 2: [], 3: []}
    (x, y), _ = imdb.load_data(num_words=8, skip_top=5, oov_char=9)
    assert _by_label(x, y)[0] == [9, 9, 5, 6]
    # maxlen keeps sequences strictly shorter, start_char included; each split on its own.
    (x, y), (xt, yt) = imdb.load_data(maxlen=4)
    assert _by_label(x, y) == {1: [1, 7, 8], 3: [1, 2]}
    assert _by_label(xt, yt) == {4: [1, 5, 5]}
    with pytest.raises(ValueError, match="Increase maxlen"):
        imdb.load_data(maxlen=2)
    # Without start_char and index_from the stored indices come back (the largest, 10,
    # still out of range with num_words None).
    (x, y), _ = imdb.load_data(start_char=None, index_from=0)
    assert _by_label(x, y) == {0: [1, 2, 3], 1: [4, 5], 2: [6, 7, 8, 9], 3: [2]}
    with pytest.raises(TypeError, match="Unrecognized"):
        imdb.load_data(num_word=5)


def test_reuters_test_split_after_maxlen(cache):
    seqs = {10: [1, 2], 11: [3], 12: [4, 5, 6, 7], 13: [2, 2, 2], 14: [5]}
    np.savez(cache / "reuters.npz", x=_objects(seqs.values()), y=np.array(list(seqs)))
    (x, y), (xt, yt) = tf.keras.datasets.reuters.load_data(num_words=7)
    order = np.arange(5)
    np.random.RandomState(113).shuffle(order)
    np.testing.assert_array_equal(np.concatenate([y, yt]), 10 + order)
    assert len(x) == 4 and len(xt) == 1          # int(5 * 0.8)
    got = _by_label(np.concatenate([x, xt]), np.concatenate([y, yt]))
    assert got == {10: [1, 4, 5], 11: [1, 6], 12: [1, 2, 2, 2, 2], 13: [1, 5, 5, 5],
                   14: [1, 2]}
    (x, y), (xt, yt) = tf.keras.datasets.reuters.load_data(maxlen=4, test_split=0.5)
    kept = _by_label(np.concatenate([x, xt]), np.concatenate([y, yt]))
    assert sorted(kept) == [10, 11, 14] and len(x) == 1 and len(xt) == 2


def test_boston_housing_split_and_seed(cache):
    x = np.arange(10 * 13, dtype=np.float64).reshape(10, 13)
    y = np.arange(10, dtype=np.float64) * 1.5
    np.savez(cache / "boston_housing.npz", x=x, y=y)
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.boston_housing.load_data()
    order = np.arange(10)
    np.random.RandomState(113).shuffle(order)
    assert x_train.shape == (8, 13) and x_test.shape == (2, 13) and x_train.dtype == np.float64
    np.testing.assert_array_equal(x_train, x[order[:8]])
    np.testing.assert_array_equal(y_test, y[order[8:]])
    (x_train, _), (x_test, _) = tf.keras.datasets.boston_housing.load_data(test_split=0.5)
    assert len(x_train) == 5 and len(x_test) == 5
    with pytest.raises(ValueError, match="test_split"):
        tf.keras.datasets.boston_housing.load_data(test_split=1.0)


def test_word_indexes_and_missing_files(cache):
    for name in ("imdb", "reuters"):
        with pytest.raises(FileNotFoundError, match="no internet.*%s.npz" % name):
            getattr(tf.keras.datasets, name).load_data()
        with pytest.raises(FileNotFoundError, match="%s_word_index.json" % name):
            getattr(tf.keras.datasets, name).get_word_index()
        (cache / ("%s_word_index.json" % name)).write_text(json.dumps({"the": 1, "a": 2}))
        assert getattr(tf.keras.datasets, name).get_word_index() == {"the": 1, "a": 2}
    with pytest.raises(FileNotFoundError, match="boston_housing.npz"):
        tf.keras.datasets.boston_housing.load_data()


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/shardflow_npz_pickle_ran",))


def test_hostile_and_malformed_files_are_refused(cache):
    marker = "/tmp/shardflow_npz_pickle_ran"
    if os.path.exists(marker):
        os.remove(marker)
    evil = np.empty(1, dtype=object)
    evil[0] = _Evil()
    np.savez(cache / "imdb.npz", x_train=evil, y_train=np.array([0]),
             x_test=_objects([[1]]), y_test=np.array([1]))
    with pytest.raises(ValueError, match="names posix.system|names os.system"):
        tf.keras.datasets.imdb.load_data()
    assert not os.path.exists(marker)
    # Numbers where words should be, labels that do not match, a member that is not .npy.
    np.savez(cache / "imdb.npz", x_train=_objects([["a"]]), y_train=np.array([0]),
             x_test=_objects([[1]]), y_test=np.array([1]))
    with pytest.raises(ValueError, match="not a list of word indices"):
        tf.keras.datasets.imdb.load_data()
    np.savez(cache / "reuters.npz", x=_objects([[1], [2]]), y=np.array([0]))
    with pytest.raises(ValueError, match="labels of shape"):
        tf.keras.datasets.reuters.load_data()
    with zipfile.ZipFile(cache / "reuters.npz", "w") as z:
        z.writestr("x.py", "print(1)")
    with pytest.raises(ValueError, match="not an .npy array"):
        tf.keras.datasets.reuters.load_data()
    (cache / "boston_housing.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not an .npz"):
        tf.keras.datasets.boston_housing.load_data()
    # Boston's arrays are numbers: an object array there is refused, pickle or not.
    np.savez(cache / "boston_housing.npz", x=_objects([[1.0]]), y=np.array([1.0]))
    with pytest.raises(ValueError, match="Python objects"):
        tf.keras.datasets.boston_housing.load_data()
