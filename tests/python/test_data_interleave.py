"""tf.data's flat_map, interleave, window and experimental.parallel_interleave
(shardflow/data/interleave.py): TF's element orders, datasets made from each element (files,
tensors, fed values), windows read through flat_map, and the errors."""

import numpy as np
import pytest

import shardflow as tf
from shardflow.data import Dataset


def _all(dataset, feed=None):
    it = dataset.make_initializable_iterator()
    nxt = it.get_next()
    out = []
    with tf.Session() as sess:
        sess.run(it.initializer, feed)
        while True:
            try:
                out.append(sess.run(nxt))
            except tf.errors.OutOfRangeError:
                return out


def _ints(values):
    return [np.asarray(v).tolist() for v in values]


def test_interleave_follows_tfs_order():
    with tf.Graph().as_default():
        # The example in TF's Dataset.interleave documentation.
        ds = Dataset.range(1, 6).interleave(
            lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2, block_length=4)
        assert _ints(_all(ds)) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                                   3, 3, 4, 4, 5, 5, 5, 5, 5, 5]
        # Inner datasets of different lengths (x copies of x): a finished one frees its slot.
        ds = Dataset.range(1, 5).interleave(
            lambda x: Dataset.from_tensors(x).repeat(x), cycle_length=2)
        assert _ints(_all(ds)) == [1, 2, 2, 3, 3, 4, 3, 4, 4, 4]
        assert ds.output_types == tf.int64 and ds.output_shapes.as_list() == []


def test_flat_map_with_tensors_built_from_each_element():
    with tf.Graph().as_default():
        ds = Dataset.range(4).flat_map(
            lambda x: Dataset.from_tensor_slices(tf.range(x) * 10))
        assert _ints(_all(ds)) == [0, 0, 10, 0, 10, 20]
        ds = Dataset.range(1, 4).flat_map(lambda x: Dataset.range(x, 2 * x))
        assert _ints(_all(ds)) == [1, 2, 3, 3, 4, 5]
        # A tuple element spreads into arguments; the inner dataset has a map of its own.
        ds = Dataset.from_tensor_slices((np.array([1, 2], np.int32),
                                         np.array([5., 7.], np.float32)))
        ds = ds.flat_map(lambda n, v: Dataset.from_tensors((n, v)).repeat(n)
                         .map(lambda a, b: (a * 2, b + 0.5)))
        got = [(int(a), float(b)) for a, b in _all(ds)]
        assert got == [(2, 5.5), (4, 7.5), (4, 7.5)]
        # A placeholder of the enclosing graph, fed when the iterator is initialized.
        offset = tf.placeholder(tf.int64, [])
        ds = Dataset.range(3).flat_map(lambda x: Dataset.from_tensors(x + offset).repeat(2))
        assert _ints(_all(ds, {offset: 100})) == [100, 100, 101, 101, 102, 102]


def _write(path, records):
    with tf.python_io.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)


def test_interleave_tfrecord_files_and_parallel_interleave(tmp_path):
    names = []
    for f in range(3):
        path = tmp_path / ("part-%d.tfrecord" % f)
        _write(path, [b"f%d-r%d" % (f, r) for r in range(f + 2)])
        names.append(str(path))
    with tf.Graph().as_default():
        files = Dataset.from_tensor_slices(names)
        ds = files.interleave(tf.data.TFRecordDataset, cycle_length=2)
        assert [np.asarray(v, dtype=object).item() for v in _all(ds)] == [
            b"f0-r0", b"f1-r0", b"f0-r1", b"f1-r1", b"f1-r2", b"f2-r0", b"f2-r1", b"f2-r2",
            b"f2-r3"]
        ds = files.apply(tf.data.experimental.parallel_interleave(
            lambda f: tf.data.TFRecordDataset(f).map(tf.strings.length), cycle_length=3,
            block_length=2))
        assert _ints(_all(ds)) == [5] * 9
        ds = Dataset.list_files(str(tmp_path / "*.tfrecord"), shuffle=False).flat_map(
            tf.data.TFRecordDataset)
        assert len(_all(ds)) == 9
        missing = Dataset.from_tensor_slices([str(tmp_path / "nope.tfrecord")]).interleave(
            tf.data.TFRecordDataset, cycle_length=1)
        with pytest.raises(tf.errors.NotFoundError, match="nope.tfrecord"):
            _all(missing)


def test_window_read_through_flat_map():
    with tf.Graph().as_default():
        ds = Dataset.range(7).window(3, shift=2).flat_map(lambda w: w.batch(3))
        assert _ints(_all(ds)) == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
        ds = Dataset.range(7).window(3, shift=2, drop_remainder=True).flat_map(
            lambda w: w.batch(3))
        assert _ints(_all(ds)) == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
        ds = Dataset.range(10).window(3, shift=3, stride=2, drop_remainder=True).flat_map(
            lambda w: w.batch(3))
        assert _ints(_all(ds)) == [[0, 2, 4], [3, 5, 7]]
        # A sliding window over (feature, label) pairs, as for sequence models.
        pairs = Dataset.zip((Dataset.range(5), Dataset.range(5).map(lambda v: v * 10)))
        ds = pairs.window(2, shift=1, drop_remainder=True).flat_map(
            lambda a, b: Dataset.zip((a.batch(2), b.batch(2))))
        got = [(_ints([a])[0], _ints([b])[0]) for a, b in _all(ds)]
        assert got == [([0, 1], [0, 10]), ([1, 2], [10, 20]), ([2, 3], [20, 30]),
                       ([3, 4], [30, 40])]


def test_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="must return a Dataset"):
            Dataset.range(3).flat_map(lambda x: x + 1)
        with pytest.raises(ValueError, match="cycle_length must be positive"):
            Dataset.range(3).interleave(lambda x: Dataset.from_tensors(x), cycle_length=0)
        with pytest.raises(TypeError, match="read it with flat_map"):
            Dataset.range(3).window(2).batch(2)
        with pytest.raises(TypeError, match="read it with flat_map"):
            Dataset.range(3).window(2).make_one_shot_iterator()


def test_group_by_window_and_bucket_by_sequence_length():
    exp = tf.data.experimental
    with tf.Graph().as_default():
        ds = Dataset.range(10).apply(exp.group_by_window(
            lambda x: x % 2, lambda key, group: group.batch(3), window_size=3))
        # A full group goes on at once; the open ones at the end, in the order they opened.
        assert _ints(_all(ds)) == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]
        ds = Dataset.range(10).apply(exp.group_by_window(
            lambda x: x % 3,
            lambda key, group: group.batch(10).map(lambda b: tf.reduce_sum(b) + key * 1000),
            window_size_func=lambda key: key + 1))
        assert _ints(_all(ds)) == [0, 3, 1005, 6, 2015, 9, 1007]

        lengths = [1, 5, 2, 7, 3, 12, 4, 1, 9]

        def gen():
            for n in lengths:
                yield np.arange(1, n + 1, dtype=np.int32), n
        sentences = Dataset.from_generator(gen, (tf.int32, tf.int32), ([None], []))
        ds = sentences.apply(exp.bucket_by_sequence_length(
            lambda tokens, n: tf.shape(tokens)[0], [4, 8], [2, 2, 2]))
        batches = _all(ds)
        assert [(t.shape, n.tolist()) for t, n in batches] == [
            ((2, 2), [1, 2]), ((2, 7), [5, 7]), ((2, 3), [3, 1]), ((2, 12), [12, 9]),
            ((1, 4), [4])]
        np.testing.assert_array_equal(batches[0][0], [[1, 0], [1, 2]])   # padded with 0
        ds = sentences.apply(exp.bucket_by_sequence_length(
            lambda tokens, n: tf.shape(tokens)[0], [4, 8, 13], [2, 2, 2, 2],
            pad_to_bucket_boundary=True, drop_remainder=True))
        assert [t.shape for t, _ in _all(ds)] == [(2, 3), (2, 7), (2, 3), (2, 12)]
        with pytest.raises(ValueError, match="len\\(bucket_batch_sizes\\)"):
            sentences.apply(exp.bucket_by_sequence_length(lambda t, n: n, [4], [2]))
        with pytest.raises(TypeError, match="key_func must return a scalar int64"):
            Dataset.range(3).apply(exp.group_by_window(lambda x: tf.cast(x, tf.float32),
                                                       lambda k, g: g, window_size=2))


def test_sample_choose_and_enumerate():
    exp = tf.data.experimental
    with tf.Graph().as_default():
        mixed = exp.sample_from_datasets([Dataset.range(50), Dataset.range(100, 150)],
                                         [0.5, 0.5], seed=3)
        got = _ints(_all(mixed))
        # Every element of both, each dataset in its own order, interleaved at random.
        assert sorted(got) == list(range(50)) + list(range(100, 150))
        assert [v for v in got if v < 100] == list(range(50))
        assert got != sorted(got)
        assert got == _ints(_all(exp.sample_from_datasets(
            [Dataset.range(50), Dataset.range(100, 150)], [0.5, 0.5], seed=3)))
        only_first = exp.sample_from_datasets([Dataset.range(3), Dataset.range(10, 13)],
                                              [1.0, 0.0], seed=1)
        assert _ints(_all(only_first)) == [0, 1, 2]    # ends: no weight is left
        choices = Dataset.from_tensor_slices(np.array([0, 1, 1, 0, 1, 1, 0, 0], np.int64))
        chosen = exp.choose_from_datasets([Dataset.range(3), Dataset.range(10, 13)], choices)
        assert _ints(_all(chosen)) == [0, 10, 11, 1, 12, 2]
        pairs = _all(Dataset.range(3).apply(exp.enumerate_dataset(5)))
        assert [(int(i), int(v)) for i, v in pairs] == [(5, 0), (6, 1), (7, 2)]
        with pytest.raises(ValueError, match="weights"):
            exp.sample_from_datasets([Dataset.range(3)], [-1.0])


def test_contrib_data_spellings():
    with tf.Graph().as_default():
        ds = Dataset.range(7).apply(tf.contrib.data.batch_and_drop_remainder(3))
        assert _ints(_all(ds)) == [[0, 1, 2], [3, 4, 5]]
        assert ds.output_shapes.as_list() == [3]
        ds = Dataset.range(3).apply(tf.contrib.data.parallel_interleave(
            lambda x: Dataset.from_tensors(x).repeat(2), cycle_length=3))
        assert _ints(_all(ds)) == [0, 1, 2, 0, 1, 2]
        assert tf.contrib.data.shuffle_and_repeat is tf.data.experimental.shuffle_and_repeat


def test_window_with_a_shift_past_its_span_and_group_flush_order():
    # Regression: window(2, shift=4) gave [0,1],[2,3],... (elements never read were taken as
    # the next window's start); TF's window k starts at element k * shift. Groups still open
    # at the end of group_by_window's input went on in the order they opened; TF's in
    # ascending key order.
    def windows(ds):
        rows = []
        it = ds.make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            while True:
                try:
                    rows.append(sess.run(it).tolist())
                except tf.errors.OutOfRangeError:
                    return rows
    base = tf.data.Dataset.range(10)
    assert windows(base.window(2, shift=4).flat_map(lambda w: w.batch(2))) == \
        [[0, 1], [4, 5], [8, 9]]
    assert windows(base.window(1, shift=3).flat_map(lambda w: w.batch(1))) == \
        [[0], [3], [6], [9]]
    keys = tf.data.Dataset.from_tensor_slices(np.array([2, 0, 1, 2, 0], np.int64))
    grouped = keys.apply(tf.data.experimental.group_by_window(
        lambda k: k, lambda key, ds: ds.batch(5), window_size=5))
    assert windows(grouped) == [[0, 0], [1], [2, 2]]
