"""SparseTensor elements in tf.data (Note [Sparse elements] in shardflow/data/structure.py):
what parse_example gives for a VarLenFeature, a map function's sparse result, slices of a
SparseTensor; batched, unbatched, shuffled and read by iterators as TF1's."""
import numpy as np
import pytest

import shardflow as sf


@pytest.fixture(autouse=True)
def fresh_graph():
    sf.reset_default_graph()
    yield


def _records(tmp_path, n=10):
    path = str(tmp_path / "var.tfrecords")
    with sf.python_io.TFRecordWriter(path) as w:
        for i in range(n):
            ex = sf.train.Example(features=sf.train.Features(feature={
                "tok": sf.train.Feature(int64_list=sf.train.Int64List(
                    value=list(range(10 * i, 10 * i + i % 4 + 1)))),
                "word": sf.train.Feature(bytes_list=sf.train.BytesList(
                    value=[b"a", b"b", b"c"][:i % 3 + 1])),
                "label": sf.train.Feature(int64_list=sf.train.Int64List(value=[int(i % 3 == 0)]))}))
            w.write(ex.SerializeToString())
    return path


SPEC = {"tok": sf.VarLenFeature(sf.int64), "word": sf.VarLenFeature(sf.string),
        "label": sf.FixedLenFeature([], sf.int64)}


def _run_all(next_element, limit=100):
    out = []
    with sf.Session() as s:
        for _ in range(limit):
            try:
                out.append(s.run(next_element))
            except sf.errors.OutOfRangeError:
                return out
    raise AssertionError("the dataset did not end")


def test_parse_example_after_batch_gives_sparse_features(tmp_path):
    ds = sf.data.TFRecordDataset(_records(tmp_path)).batch(4).map(
        lambda s: sf.parse_example(s, SPEC))
    assert ds.output_classes == {"label": sf.Tensor, "tok": sf.SparseTensor,
                                 "word": sf.SparseTensor}
    assert ds.output_types == {"label": sf.int64, "tok": sf.int64, "word": sf.string}
    assert ds.output_shapes["tok"].as_list() == [None, None]
    features = ds.make_one_shot_iterator().get_next()
    assert isinstance(features["tok"], sf.SparseTensor)
    batches = _run_all(features)
    assert [len(b["label"]) for b in batches] == [4, 4, 2]
    first = batches[0]["tok"]
    np.testing.assert_array_equal(first.dense_shape, [4, 4])
    np.testing.assert_array_equal(first.values, [0, 10, 11, 20, 21, 22, 30, 31, 32, 33])
    assert batches[0]["word"].values.tolist() == [b"a", b"a", b"b", b"a", b"b", b"c", b"a"]


def test_map_returns_sparse_then_batch_unbatch_shuffle(tmp_path):
    ds = sf.data.TFRecordDataset(_records(tmp_path)).map(
        lambda s: (sf.parse_single_example(s, SPEC)["tok"], sf.constant(1)))
    batched = ds.batch(3)
    assert batched.output_shapes[0].as_list() == [None, None]
    b = _run_all(batched.make_one_shot_iterator().get_next())
    np.testing.assert_array_equal(b[0][0].dense_shape, [3, 3])   # longest of lengths 1, 2, 3
    np.testing.assert_array_equal(b[0][0].indices,
                                  [[0, 0], [1, 0], [1, 1], [2, 0], [2, 1], [2, 2]])
    np.testing.assert_array_equal(b[3][0].dense_shape, [1, 2])  # the last one: element 9
    sf.reset_default_graph()
    ds = sf.data.TFRecordDataset(_records(tmp_path)).map(
        lambda s: sf.parse_single_example(s, SPEC)["tok"])
    again = ds.batch(4).apply(sf.data.experimental.unbatch())
    rows = _run_all(again.make_one_shot_iterator().get_next())
    assert len(rows) == 10
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(row.values, list(range(10 * i, 10 * i + i % 4 + 1)))
        # unbatch keeps the batch's dense shape (padded to the longest row), as TF1's
        assert row.indices.shape == (i % 4 + 1, 1)
    sf.reset_default_graph()
    ds = sf.data.TFRecordDataset(_records(tmp_path)).map(
        lambda s: sf.parse_single_example(s, SPEC)["tok"])
    mixed = ds.shuffle(10, seed=3).repeat(2).take(15).prefetch(2)
    got = _run_all(mixed.make_one_shot_iterator().get_next())
    assert len(got) == 15
    assert sorted(int(r.values[0]) for r in got[:10]) == list(range(0, 100, 10))


def test_map_and_filter_take_sparse_arguments(tmp_path):
    ds = sf.data.TFRecordDataset(_records(tmp_path)).map(
        lambda s: sf.parse_single_example(s, SPEC))
    ds = ds.filter(lambda f: sf.size(f["tok"].values) > 2)
    ds = ds.map(lambda f: (sf.sparse.to_dense(f["tok"]), sf.sparse.reduce_sum(f["tok"])))
    got = _run_all(ds.make_one_shot_iterator().get_next())
    assert [int(total) for _, total in got] == [sum(range(10 * i, 10 * i + i % 4 + 1))
                                                for i in range(10) if i % 4 + 1 > 2]


def test_from_tensor_slices_of_a_sparse_tensor():
    value = sf.SparseTensorValue(indices=[[0, 1], [2, 0], [2, 3]], values=[1.5, 2.5, 3.5],
                                 dense_shape=[3, 4])
    ds = sf.data.Dataset.from_tensor_slices(value)
    assert ds.output_classes is sf.SparseTensor and ds.output_types == sf.float32
    rows = _run_all(ds.make_one_shot_iterator().get_next())
    assert len(rows) == 3
    np.testing.assert_array_equal(rows[0].indices, [[1]])
    np.testing.assert_array_equal(rows[1].indices.shape, (0, 1))
    np.testing.assert_array_equal(rows[2].values, [2.5, 3.5])
    np.testing.assert_array_equal(rows[2].dense_shape, [4])
    sf.reset_default_graph()
    sp = sf.SparseTensor(indices=[[0, 0], [1, 1]], values=[7, 8], dense_shape=[2, 2])
    ds = sf.data.Dataset.from_sparse_tensor_slices(sp)
    rows = _run_all(ds.make_one_shot_iterator().get_next())
    assert [r.values.tolist() for r in rows] == [[7], [8]]
    with pytest.raises(TypeError, match="takes a SparseTensor"):
        sf.data.Dataset.from_sparse_tensor_slices([1, 2])


def test_reinitializable_iterator_over_sparse_datasets(tmp_path):
    path = _records(tmp_path)
    train = sf.data.TFRecordDataset(path).batch(5).map(lambda s: sf.parse_example(s, SPEC))
    valid = sf.data.TFRecordDataset(path).batch(2).map(lambda s: sf.parse_example(s, SPEC))
    it = sf.data.Iterator.from_structure(train.output_types, train.output_shapes,
                                         output_classes=train.output_classes)
    feats = it.get_next()
    dense = sf.sparse.to_dense(feats["tok"], default_value=-1)
    with sf.Session() as s:
        s.run(it.make_initializer(train))
        assert s.run(dense).shape == (5, 4)
        s.run(it.make_initializer(valid))
        np.testing.assert_array_equal(s.run(dense), [[0, -1], [10, 11]])


def test_padded_batch_of_sparse_is_refused(tmp_path):
    ds = sf.data.TFRecordDataset(_records(tmp_path)).map(
        lambda s: sf.parse_single_example(s, SPEC)["tok"])
    with pytest.raises(TypeError, match="padded_batch does not pad SparseTensor"):
        ds.padded_batch(2, padded_shapes=[None])


def test_feature_columns_train_on_sparse_string_features(tmp_path):
    """An input_fn as TF1 programs write it: batched records, parse_example, a vocabulary
    column over a VarLen string feature, an embedding, a linear model trained on it."""
    ds = sf.data.TFRecordDataset(_records(tmp_path, 40)).repeat().batch(8).map(
        lambda s: sf.parse_example(s, SPEC))
    features = ds.make_one_shot_iterator().get_next()
    words = sf.feature_column.categorical_column_with_vocabulary_list("word", ["a", "b", "c"])
    net = sf.feature_column.input_layer(
        features, [sf.feature_column.embedding_column(words, 4),
                   sf.feature_column.indicator_column(words)])
    logits = sf.layers.dense(net, 2)
    loss = sf.losses.sparse_softmax_cross_entropy(features["label"], logits)
    train = sf.train.AdamOptimizer(0.05).minimize(loss)
    with sf.Session() as s:
        s.run([sf.global_variables_initializer(), sf.tables_initializer()])
        first = s.run(loss)
        for _ in range(60):
            s.run(train)
        last = s.run(loss)
    assert np.isfinite(first) and last < 0.3 < first   # the word list decides the label


def test_parse_example_dataset_and_make_batched_features_with_varlen(tmp_path):
    path = _records(tmp_path)
    exp = sf.data.experimental
    ds = sf.data.TFRecordDataset(path).batch(5).apply(exp.parse_example_dataset(SPEC))
    got = _run_all(ds.make_one_shot_iterator().get_next())
    np.testing.assert_array_equal(got[1]["tok"].dense_shape, [5, 4])
    sf.reset_default_graph()
    ds = exp.make_batched_features_dataset(path, 4, SPEC, label_key="label", num_epochs=1,
                                           shuffle=False)
    features, labels = ds.make_one_shot_iterator().get_next()
    assert isinstance(features["word"], sf.SparseTensor)
    got = _run_all((features, labels))
    assert [len(lab) for _, lab in got] == [4, 4, 2]


def test_dense_to_sparse_batch():
    ds = sf.data.Dataset.range(1, 6).map(lambda n: sf.fill([sf.cast(n, sf.int32)], n))
    sparse = ds.apply(sf.data.experimental.dense_to_sparse_batch(2, [5]))
    assert sparse.output_classes is sf.SparseTensor and sparse.output_types == sf.int64
    got = _run_all(sparse.make_one_shot_iterator().get_next())
    np.testing.assert_array_equal(got[0].indices, [[0, 0], [1, 0], [1, 1]])
    np.testing.assert_array_equal(got[0].values, [1, 2, 2])
    np.testing.assert_array_equal(got[0].dense_shape, [2, 5])
    np.testing.assert_array_equal(got[2].dense_shape, [1, 5])
    np.testing.assert_array_equal(got[2].values, [5] * 5)
    sf.reset_default_graph()
    ds = sf.data.Dataset.range(1, 6).map(lambda n: sf.fill([sf.cast(n, sf.int32)], n))
    too_long = ds.apply(sf.data.experimental.dense_to_sparse_batch(5, [3]))
    with sf.Session() as s:
        with pytest.raises(sf.errors.InvalidArgumentError, match="does not fit row_shape"):
            s.run(too_long.make_one_shot_iterator().get_next())
    longest = ds.apply(sf.data.experimental.dense_to_sparse_batch(5, [-1]))
    with sf.Session() as s:
        np.testing.assert_array_equal(
            s.run(longest.make_one_shot_iterator().get_next()).dense_shape, [5, 5])


def test_canned_estimator_reads_sparse_features_from_its_input_fn(tmp_path):
    path = _records(tmp_path, 40)

    def input_fn():
        ds = sf.data.TFRecordDataset(path).repeat().batch(8).map(
            lambda s: sf.parse_example(s, SPEC))
        return ds.map(lambda f: ({"word": f["word"]}, f["label"]))

    words = sf.feature_column.categorical_column_with_vocabulary_list("word", ["a", "b", "c"])
    est = sf.estimator.DNNClassifier([4], [sf.feature_column.embedding_column(words, 3)],
                                     model_dir=str(tmp_path / "model"))
    est.train(input_fn, steps=10)
    metrics = est.evaluate(input_fn, steps=2)
    assert metrics["global_step"] == 10 and np.isfinite(metrics["loss"])

