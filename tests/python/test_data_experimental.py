"""tf.data.experimental's additions (shardflow/data: iterator_ops get_single_element,
scan_ops, filtering, readers, cardinality, passthrough, options): values checked against NumPy
or by hand, as TF 1.15 gives them, and the errors."""

import gzip

import numpy as np
import pytest

import shardflow as tf

Dataset = tf.data.Dataset
exp = tf.data.experimental


@pytest.fixture(autouse=True)
def fresh_graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def drain(dataset, feed=None, limit=1000):
    it = dataset.make_initializable_iterator()
    nxt = it.get_next()
    out = []
    with tf.Session() as sess:
        sess.run(it.initializer, feed)
        for _ in range(limit):
            try:
                out.append(sess.run(nxt))
            except tf.errors.OutOfRangeError:
                return out
    return out


def ints(values):
    return [np.asarray(v).tolist() for v in values]


# ---- get_single_element, reduce, cardinality ----------------------------------------------


def test_get_single_element_is_computed_on_every_run():
    x = tf.placeholder(tf.int64, [None])
    a, b = exp.get_single_element(Dataset.from_tensor_slices(x).map(lambda v: (v, v * 2))
                                  .batch(10))
    assert a.dtype == tf.int64 and b.shape.as_list() == [None]
    with tf.Session() as sess:
        got = sess.run([a, b], {x: [1, 2, 3]})
        assert got[0].tolist() == [1, 2, 3] and got[1].tolist() == [2, 4, 6]
        assert sess.run(b, {x: [5]}).tolist() == [10]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Dataset was empty."):
            sess.run(a, {x: np.zeros([0], np.int64)})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Dataset had more than one element."):
            sess.run(exp.get_single_element(Dataset.range(2)))
        # A dict element, and a random op inside: drawn afresh each run.
        d = exp.get_single_element(Dataset.from_tensors({"k": tf.constant(3.0)}))
        assert sess.run(d) == {"k": 3.0}
        r = exp.get_single_element(Dataset.range(1).map(
            lambda v: tf.random_uniform([4])))
        assert not np.array_equal(sess.run(r), sess.run(r))
    with pytest.raises(TypeError, match="tf.data.Dataset"):
        exp.get_single_element(tf.constant(1))


def test_reduce():
    x = tf.placeholder(tf.float32, [None])
    total = Dataset.from_tensor_slices(x).reduce(np.float32(0), lambda s, v: s + v)
    count_and_max = Dataset.range(1, 6).reduce(
        (np.int64(0), np.int64(-1)), lambda s, v: (s[0] + 1, tf.maximum(s[1], v)))
    # The state's shape grows: TF relaxes it to [None] and traces again.
    concat = Dataset.range(4).reduce(np.zeros([0], np.int64),
                                     lambda s, v: tf.concat([s, [v]], 0))
    assert concat.shape.as_list() == [None]
    with tf.Session() as sess:
        values = np.array([1.5, 2.0, 4.25], np.float32)
        assert sess.run(total, {x: values}) == pytest.approx(values.sum())
        assert sess.run(total, {x: np.zeros([0], np.float32)}) == 0.0
        assert sess.run(count_and_max) == (5, 5)
        assert sess.run(concat).tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="dtypes must match"):
        Dataset.range(3).reduce(0, lambda s, v: tf.cast(s, tf.int64) + v)  # int32 -> int64
    with pytest.raises(TypeError, match="structure of the initial"):
        Dataset.range(3).reduce(np.int64(0), lambda s, v: (s, v))


def test_cardinality():
    cases = [
        (Dataset.range(10), 10), (Dataset.range(10).batch(3), 4),
        (Dataset.range(10).batch(3, drop_remainder=True), 3),
        (Dataset.range(10).repeat(), exp.INFINITE_CARDINALITY),
        (Dataset.range(10).repeat(3).take(25), 25), (Dataset.range(10).skip(4), 6),
        (Dataset.range(10).filter(lambda v: v > 3), exp.UNKNOWN_CARDINALITY),
        (Dataset.range(10).shard(3, 1), 3), (Dataset.range(10).map(lambda v: v * 2), 10),
        (Dataset.zip((Dataset.range(4), Dataset.range(7).repeat())), 4),
        (Dataset.range(3).concatenate(Dataset.range(5)), 8),
        (Dataset.from_tensors([1, 2]), 1), (Dataset.range(0).repeat(), 0),
        (Dataset.range(9).shuffle(4).padded_batch(2, [], drop_remainder=False), 5),
        (exp.Counter(), exp.INFINITE_CARDINALITY),
        (Dataset.range(10).apply(exp.take_while(lambda v: v < 3)), exp.UNKNOWN_CARDINALITY),
    ]
    assert exp.INFINITE_CARDINALITY == -1 and exp.UNKNOWN_CARDINALITY == -2
    tensors = [exp.cardinality(ds) for ds, _ in cases]
    assert all(t.dtype == tf.int64 and t.shape.as_list() == [] for t in tensors)
    x = tf.placeholder(tf.int32, [None])
    batched = exp.cardinality(Dataset.from_tensor_slices(x).batch(4))
    with tf.Session() as sess:
        assert sess.run(tensors) == [n for _, n in cases]
        assert sess.run(batched, {x: np.arange(9)}) == 3
    with pytest.raises(TypeError, match="takes a Dataset"):
        exp.cardinality([1, 2])


# ---- Options ------------------------------------------------------------------------------


def test_options():
    options = tf.data.Options()
    assert options.experimental_optimization.map_fusion is None
    options.experimental_optimization.map_fusion = True
    options.experimental_threading.private_threadpool_size = 4
    assert isinstance(options.experimental_optimization, exp.OptimizationOptions)
    assert isinstance(options.experimental_threading, exp.ThreadingOptions)
    assert isinstance(options.experimental_distribute, exp.DistributeOptions)
    ds = Dataset.range(3).with_options(options)
    other = tf.data.Options()
    other.experimental_deterministic = False
    ds2 = ds.map(lambda v: v + 1).with_options(other)
    got = ds2.options()
    assert got.experimental_optimization.map_fusion is True
    assert got.experimental_threading.private_threadpool_size == 4
    assert got.experimental_deterministic is False
    assert Dataset.range(3).options() == tf.data.Options()  # the input is not changed
    assert ints(drain(ds2)) == [1, 2, 3]
    conflicting = tf.data.Options()
    conflicting.experimental_optimization.map_fusion = False
    with pytest.raises(ValueError, match="Cannot merge incompatible values"):
        ds.with_options(conflicting)
    with pytest.raises(AttributeError, match="Cannot set the property map_fusin"):
        options.experimental_optimization.map_fusin = True
    with pytest.raises(TypeError, match="must be of type bool"):
        options.experimental_deterministic = 1
    with pytest.raises(TypeError, match="must be of type int"):
        options.experimental_threading.private_threadpool_size = True
    with pytest.raises(TypeError, match="tf.data.Options"):
        Dataset.range(3).with_options({"experimental_deterministic": True})


# ---- scan, take_while, ignore_errors, filter_for_shard ------------------------------------


def test_scan():
    values = np.array([3, 1, 4, 1, 5], np.int64)
    ds = Dataset.from_tensor_slices(values).apply(
        exp.scan(np.int64(0), lambda s, v: (s + v, (s + v, s * 10))))
    got = drain(ds)
    assert [int(a) for a, _ in got] == np.cumsum(values).tolist()
    assert [int(b) for _, b in got] == (np.concatenate([[0], np.cumsum(values)[:-1]]) * 10
                                        ).tolist()
    # A tensor initial state (fed with the initializer) and a tuple element, not spread.
    start = tf.placeholder(tf.float32, [])
    ds = Dataset.zip((Dataset.range(3), Dataset.range(3))).apply(
        exp.scan(start, lambda s, pair: (s * 2.0, s + tf.cast(pair[0] + pair[1], tf.float32))))
    assert [float(v) for v in drain(ds, {start: 1.0})] == [1.0, 4.0, 8.0]
    # A growing state relaxes to an unknown dimension.
    ds = Dataset.range(3).apply(exp.scan(np.zeros([0], np.int64),
                                         lambda s, v: (tf.concat([s, [v]], 0), tf.size(s))))
    assert ints(drain(ds)) == [0, 1, 2]
    with pytest.raises(TypeError, match="must return a pair"):
        Dataset.range(3).apply(exp.scan(np.int64(0), lambda s, v: s + v))
    with pytest.raises(TypeError, match="dtypes must match"):
        Dataset.range(3).apply(exp.scan(0.0, lambda s, v: (v, v)))


def test_take_while_and_filter_for_shard():
    ds = Dataset.from_tensor_slices(np.array([1, 3, 5, 2, 7], np.int32)).apply(
        exp.take_while(lambda v: tf.equal(v % 2, 1)))
    assert ints(drain(ds)) == [1, 3, 5]
    ds = Dataset.range(10).apply(exp.filter_for_shard(3, 2))
    assert ints(drain(ds)) == [2, 5, 8]
    with pytest.raises(TypeError, match="scalar bool"):
        Dataset.range(3).apply(exp.take_while(lambda v: v + 1))
    with pytest.raises(ValueError, match="index must be < num_shards"):
        exp.filter_for_shard(2, 2)
    with pytest.raises(ValueError, match="num_shards must be >= 1"):
        exp.filter_for_shard(0, 0)
    with pytest.raises(TypeError, match="Python int"):
        exp.filter_for_shard(2.0, 0)


def test_ignore_errors_drops_bad_records():
    records = np.array([b"1.5", b"oops", b"2.5", b"", b"4"], dtype=object)
    ds = Dataset.from_tensor_slices(records).map(
        lambda r: tf.string_to_number(r, tf.float32))
    with pytest.raises(tf.errors.InvalidArgumentError):
        drain(ds)
    got = drain(ds.apply(exp.ignore_errors()))
    assert [float(v) for v in got] == [1.5, 2.5, 4.0]
    # Below a shuffle and followed by a batch; a failing filter predicate drops too.
    checked = Dataset.range(8).map(
        lambda v: tf.check_numerics(1.0 / tf.cast(v % 4, tf.float32), "v"))
    got = drain(checked.shuffle(8, seed=1).apply(exp.ignore_errors()).batch(3))
    assert sorted(float(x) for b in got for x in b) == pytest.approx(
        sorted([1.0, 0.5, 1 / 3.] * 2))
    odd = Dataset.range(5).filter(lambda v: tf.check_numerics(
        1.0 / tf.cast(v, tf.float32), "v") > 0.3)
    assert ints(drain(odd.apply(exp.ignore_errors()))) == [1, 2, 3]
    # A map after ignore_errors still raises.
    with pytest.raises(tf.errors.InvalidArgumentError):
        drain(Dataset.from_tensor_slices(records).apply(exp.ignore_errors()).map(
            lambda r: tf.string_to_number(r, tf.float32)))


# ---- group_by_reducer ---------------------------------------------------------------------


def test_group_by_reducer():
    reducer = exp.Reducer(init_func=lambda key: (tf.constant(0, tf.int64),
                                                 tf.constant(0, tf.int64)),
                          reduce_func=lambda state, v: (state[0] + v, state[1] + 1),
                          finalize_func=lambda total, count: (total, count))
    ds = Dataset.range(10).apply(exp.group_by_reducer(lambda v: v % 3, reducer))
    got = sorted((int(t), int(c)) for t, c in drain(ds))
    expected = sorted((int(np.arange(10)[np.arange(10) % 3 == k].sum()),
                       int((np.arange(10) % 3 == k).sum())) for k in range(3))
    assert got == expected
    # The key reaches init_func; the finalized value is a single tensor.
    reducer = exp.Reducer(lambda key: key * 100, lambda s, v: s + v, lambda s: s)
    ds = Dataset.range(6).apply(exp.group_by_reducer(lambda v: v // 3, reducer))
    assert ints(drain(ds)) == [0 + 1 + 2, 100 + 3 + 4 + 5]
    with pytest.raises(TypeError, match="key_func"):
        Dataset.range(3).apply(exp.group_by_reducer(lambda v: tf.cast(v, tf.float32),
                                                    reducer))
    with pytest.raises(TypeError, match="callable"):
        exp.Reducer(0, lambda s, v: s, lambda s: s)


# ---- rejection_resample -------------------------------------------------------------------


def test_rejection_resample_balances_classes():
    rng = np.random.RandomState(0)
    labels = (rng.rand(4000) < 0.8).astype(np.int32)  # 80% class 1
    data = np.arange(4000, dtype=np.int64)
    ds = Dataset.from_tensor_slices((data, labels)).apply(exp.rejection_resample(
        lambda x, y: y, target_dist=[0.5, 0.5], initial_dist=[0.2, 0.8], seed=3))
    assert ds.output_types == (tf.int32, (tf.int64, tf.int32))
    got = drain(ds, limit=5000)
    # (Once the ~800 elements of class 0 are used up, only the unfiltered stream is left, as
    # in TF; the first 1500 follow the target.)
    classes = np.array([int(c) for c, _ in got[:1500]])
    assert all(int(c) == int(y) and labels[int(x)] == int(y) for c, (x, y) in got)
    assert abs(classes.mean() - 0.5) < 0.05 and len(got) > 1500
    # Without initial_dist the distribution is estimated as the data goes by.
    ds = Dataset.from_tensor_slices((data, labels)).apply(exp.rejection_resample(
        lambda x, y: y, target_dist=[0.5, 0.5], seed=3))
    classes = np.array([int(c) for c, _ in drain(ds, limit=1500)])
    assert abs(classes.mean() - 0.5) < 0.08
    # A target equal to the data's distribution keeps every element (as TF: no filtering).
    ds = Dataset.from_tensor_slices((data[:10], labels[:10])).apply(exp.rejection_resample(
        lambda x, y: y, target_dist=[0.2, 0.8], initial_dist=[0.2, 0.8]))
    assert [int(x) for _, (x, _) in drain(ds)] == list(range(10))
    bad = Dataset.from_tensor_slices((data[:3], np.array([0, 5, 1], np.int32))).apply(
        exp.rejection_resample(lambda x, y: y, target_dist=[0.5, 0.5], seed=1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="class 5"):
        drain(bad)
    with pytest.raises(TypeError, match="class_func"):
        Dataset.range(3).apply(exp.rejection_resample(
            lambda x: tf.cast(x, tf.float32), target_dist=[0.5, 0.5]))


# ---- Counter, RandomDataset, passthroughs -------------------------------------------------


def test_counter_random_and_passthroughs():
    assert ints(drain(exp.Counter().take(3))) == [0, 1, 2]
    ds = exp.Counter(start=5, step=-2).take(3)
    assert ds.output_types == tf.int64 and ints(drain(ds)) == [5, 3, 1]
    floats = drain(exp.Counter(0.5, 0.25, dtype=tf.float32).take(3))
    assert [float(v) for v in floats] == [0.5, 0.75, 1.0] and floats[0].dtype == np.float32
    first = ints(drain(exp.RandomDataset(seed=7).take(50)))
    assert first == ints(drain(exp.RandomDataset(seed=7).take(50)))
    assert first != ints(drain(exp.RandomDataset(seed=8).take(50)))
    assert all(0 <= v < 2 ** 32 for v in first) and len(set(first)) == 50
    assert exp.RandomDataset(1).output_types == tf.int64
    ds = Dataset.range(4)
    for transformation in (exp.copy_to_device("/gpu:0"), exp.prefetch_to_device("/gpu:0", 2),
                           exp.latency_stats("lat"), exp.bytes_produced_stats("b")):
        assert ints(drain(ds.apply(transformation))) == [0, 1, 2, 3]
    aggregator = exp.StatsAggregator()
    options = tf.data.Options()
    options.experimental_stats.aggregator = aggregator
    assert ds.with_options(options).options().experimental_stats.aggregator is aggregator
    with tf.Session() as sess:
        assert sess.run(aggregator.get_summary()) == b""
    with pytest.raises(TypeError, match="device name"):
        exp.prefetch_to_device(0)
    with pytest.raises(TypeError, match="Python int"):
        exp.RandomDataset(seed=1.5)


# ---- CSV ----------------------------------------------------------------------------------


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_csv_dataset(tmp_path):
    a = _write(tmp_path / "a.csv", 'x,y,name\n1,2.5,"a, b"\n,3.5,"say ""hi"""\n4,,\n')
    b = _write(tmp_path / "b.csv", "x,y,name\n7,8,z\n")
    ds = exp.CsvDataset([a, b], [[0], [0.0], ["?"]], header=True)
    assert ds.output_types == (tf.int32, tf.float32, tf.string)
    got = [(int(x), float(y), n) for x, y, n in drain(ds)]
    assert got == [(1, 2.5, b"a, b"), (0, 3.5, b'say "hi"'), (4, 0.0, b"?"), (7, 8.0, b"z")]
    # select_cols, a na_value, a dtype as a required column, another delimiter.
    c = _write(tmp_path / "c.txt", "1|NA|x\n2|5|y\n")
    ds = exp.CsvDataset(c, [tf.int64, np.float64(-1)], field_delim="|", na_value="NA",
                        select_cols=[0, 1])
    assert ds.output_types == (tf.int64, tf.float64)
    assert [(int(i), float(v)) for i, v in drain(ds)] == [(1, -1.0), (2, 5.0)]
    # use_quote_delim=False keeps quotes as characters; gzip files.
    g = tmp_path / "g.csv.gz"
    with gzip.open(str(g), "wt") as f:
        f.write('"q",1\n')
    ds = exp.CsvDataset(str(g), [[""], [0]], compression_type="GZIP", use_quote_delim=False)
    assert [(s, int(v)) for s, v in drain(ds)] == [(b'"q"', 1)]
    # Filenames from a placeholder, read through flat_map.
    names = tf.placeholder(tf.string, [None])
    ds = Dataset.from_tensor_slices(names).flat_map(
        lambda f: exp.CsvDataset(f, [[0], [0.0], [""]], header=True))
    assert len(drain(ds, {names: [b, a]})) == 4


def test_csv_dataset_errors(tmp_path):
    a = _write(tmp_path / "a.csv", "1,2\n3,\n")
    ds = exp.CsvDataset(a, [[0], tf.constant([], tf.int32)])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Field 1 is required but missing in .*a\.csv, line 2"):
        drain(ds)
    ds = exp.CsvDataset(a, [[0], [0], [0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 3 fields but have 2"):
        drain(ds)
    bad = _write(tmp_path / "bad.csv", "1,x\n")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Field 1 in .*bad\.csv, line 1 is not a valid int32: x"):
        drain(exp.CsvDataset(bad, [[0], [0]]))
    big = _write(tmp_path / "big.csv", "3000000000\n")
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a valid int32"):
        drain(exp.CsvDataset(big, [[0]]))
    assert ints(drain(exp.CsvDataset(big, [[np.int64(0)]]))) == [[3000000000]]
    with pytest.raises(tf.errors.NotFoundError, match="nope.csv"):
        drain(exp.CsvDataset(str(tmp_path / "nope.csv"), [[0]]))
    with pytest.raises(ValueError, match="same length"):
        exp.CsvDataset(a, [[0]], select_cols=[0, 1])
    with pytest.raises(ValueError, match="strictly increasing"):
        exp.CsvDataset(a, [[0], [0]], select_cols=[1, 0])
    with pytest.raises(TypeError, match="a CSV column is one of"):
        exp.CsvDataset(a, [[True]])
    with pytest.raises(ValueError, match="one value"):
        exp.CsvDataset(a, [[1, 2]])


def test_make_csv_dataset(tmp_path):
    rows = [(i, i * 0.5, "w%d" % i, i % 2, 10 ** 10 + i) for i in range(10)]
    text = "n,f,word,label,big\n" + "".join("%d,%s,%s,%d,%d\n" % r for r in rows)
    _write(tmp_path / "d1.csv", text)
    pattern = str(tmp_path / "d*.csv")
    ds = exp.make_csv_dataset(pattern, batch_size=4, label_name="label", num_epochs=1,
                              shuffle=False)
    features, label = ds.output_types
    assert features == {"n": tf.int32, "f": tf.float32, "word": tf.string, "big": tf.int64}
    assert label == tf.int32
    got = drain(ds)
    assert [len(b[1]) for b in got] == [4, 4, 2]
    assert np.concatenate([b[0]["f"] for b in got]).tolist() == [r[1] for r in rows]
    assert np.concatenate([b[1] for b in got]).tolist() == [r[3] for r in rows]
    assert np.concatenate([b[0]["big"] for b in got]).tolist() == [r[4] for r in rows]
    # Defaults given, columns selected by name; repeated without end: full batches only.
    ds = exp.make_csv_dataset(pattern, batch_size=3, column_defaults=[[0], [""]],
                              select_columns=["word", "n"], shuffle=True, shuffle_seed=5)
    assert ds.output_shapes["n"].as_list() == [3]
    batches = [b for b in drain(ds, limit=7)]
    seen = np.concatenate([b["n"] for b in batches]).tolist()
    assert set(seen) <= set(range(10)) and len(batches) == 7
    assert all(w == b"w%d" % n for b in batches for n, w in zip(b["n"], b["word"]))
    # Type inference falls back to string; missing values become 0 / "".
    _write(tmp_path / "e.csv", "a,b\n1,x\n,2.5\n")
    ds = exp.make_csv_dataset(str(tmp_path / "e.csv"), 2, num_epochs=1, shuffle=False)
    assert ds.output_types == {"a": tf.int32, "b": tf.string}
    (batch,) = drain(ds)
    assert batch["a"].tolist() == [1, 0] and batch["b"].tolist() == [b"x", b"2.5"]
    with pytest.raises(ValueError, match="No files match"):
        exp.make_csv_dataset(str(tmp_path / "none*.csv"), 2)
    with pytest.raises(ValueError, match="label_name"):
        exp.make_csv_dataset(pattern, 2, label_name="nope")
    with pytest.raises(ValueError, match="without a header"):
        exp.make_csv_dataset(pattern, 2, header=False)
    with pytest.raises(ValueError, match="not a valid column index or name"):
        exp.make_csv_dataset(pattern, 2, select_columns=["n", "zz"])


# ---- Example records ----------------------------------------------------------------------


def _example(i):
    return tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, i + 0.5])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 3]))})
    ).SerializeToString()


def test_parse_example_dataset_and_batched_features(tmp_path):
    for f in range(2):
        with tf.python_io.TFRecordWriter(str(tmp_path / ("r%d.tfrecord" % f))) as w:
            for i in range(5):
                w.write(_example(f * 5 + i))
    features = {"x": tf.FixedLenFeature([2], tf.float32),
                "label": tf.FixedLenFeature([], tf.int64)}
    records = np.array([_example(i) for i in range(5)], dtype=object)
    ds = Dataset.from_tensor_slices(records).batch(2).apply(
        exp.parse_example_dataset(features))
    got = drain(ds)
    assert [b["x"].shape for b in got] == [(2, 2), (2, 2), (1, 2)]
    assert np.concatenate([b["label"] for b in got]).tolist() == [0, 1, 2, 0, 1]
    ds = exp.make_batched_features_dataset(str(tmp_path / "r*.tfrecord"), 4, features,
                                           label_key="label", num_epochs=1, shuffle=False)
    got = drain(ds)
    assert [len(b[1]) for b in got] == [4, 4, 2]
    x = np.concatenate([b[0]["x"] for b in got])
    np.testing.assert_allclose(x, [[i, i + 0.5] for i in range(10)])
    assert np.concatenate([b[1] for b in got]).tolist() == [i % 3 for i in range(10)]
    assert set(got[0][0]) == {"x"}
    ds = exp.make_batched_features_dataset(str(tmp_path / "r*.tfrecord"), 3, features,
                                           shuffle=True, shuffle_seed=2)
    assert ds.output_shapes["x"].as_list() == [3, 2]
    labels = np.concatenate([b["label"] for b in drain(ds, limit=20)])
    assert len(labels) == 60 and set(labels.tolist()) == {0, 1, 2}
    with pytest.raises(TypeError, match="vectors of strings"):
        Dataset.from_tensor_slices(records).apply(exp.parse_example_dataset(features))
    with pytest.raises(TypeError, match="non-empty dict of features"):
        exp.parse_example_dataset({})
    with pytest.raises(ValueError, match="label_key"):
        exp.make_batched_features_dataset(str(tmp_path / "r*.tfrecord"), 2, features,
                                          label_key="y")


def test_csv_dataset_damaged_files(tmp_path):
    # A file that is not the gzip it claims to be, a truncated gzip stream, and a field longer
    # than the csv module's bound: errors naming the file, no crash.
    fake = _write(tmp_path / "fake.csv.gz", "1,2\n")
    with pytest.raises(tf.errors.DataLossError, match="fake.csv.gz"):
        drain(exp.CsvDataset(fake, [[0], [0]], compression_type="GZIP"))
    whole = gzip.compress(b"1,2\n" * 1000)
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(tf.errors.DataLossError, match="cut.csv.gz"):
        drain(exp.CsvDataset(str(cut), [[0], [0]], compression_type="GZIP"))
    huge = _write(tmp_path / "huge.csv", '"' + "x" * (1 << 20) + '",1\n')
    with pytest.raises(tf.errors.InvalidArgumentError, match="huge.csv, line 1"):
        drain(exp.CsvDataset(huge, [[""], [0]]))
