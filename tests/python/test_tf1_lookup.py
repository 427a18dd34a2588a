"""TF1's lookup tables (shardflow/lookup_ops.py): tf.lookup.StaticHashTable,
StaticVocabularyTable and their initializers, tf.contrib.lookup's index_table_* and
index_to_string_table_* functions, tables_initializer, tables in tf.data pipelines, errors."""

import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _bucket(word, vocab_size, num_buckets):
    """The documented out-of-vocabulary id: vocab_size + Fingerprint64(key) % num_buckets."""
    from shardflow import _shardflow
    return vocab_size + _shardflow.string_hash64(word) % num_buckets


def test_static_hash_table_default_shape_and_properties():
    init = tf.lookup.KeyValueTensorInitializer(["a", "b", "c"], [1, 2, 3], value_dtype=tf.int64)
    table = tf.lookup.StaticHashTable(init, default_value=-1)
    keys = tf.constant([["a", "x"], ["c", "b"]])
    out = table.lookup(keys)
    assert out.dtype == tf.int64 and out.shape.as_list() == [2, 2]
    assert table.key_dtype == tf.string and table.value_dtype == tf.int64
    assert table.name == "hash_table" and table.init is table.initializer
    assert table.initializer in tf.get_collection(tf.GraphKeys.TABLE_INITIALIZERS)
    other = tf.contrib.lookup.HashTable(
        tf.contrib.lookup.KeyValueTensorInitializer([1, 2], ["one", "two"],
                                                    key_dtype=tf.int64), "?")
    assert other.name == "hash_table_1" and other.value_dtype == tf.string
    words = other.lookup(tf.constant([2, 7, 1], tf.int64))
    with tf.Session() as sess:
        assert sess.run(table.size()) == 0
        sess.run(tf.tables_initializer())  # both tables
        np.testing.assert_array_equal(sess.run(out), [[1, -1], [3, 2]])
        assert sess.run(table.default_value) == -1
        assert sess.run(table.size()) == 3
        assert list(sess.run(words)) == [b"two", b"?", b"one"]
        sess.run(tf.tables_initializer())  # again: harmless
        np.testing.assert_array_equal(sess.run(out), [[1, -1], [3, 2]])


def test_index_table_from_tensor_default_and_oov_buckets():
    vocab = ["the", "cat", "sat", "on", "mat"]
    words = tf.placeholder(tf.string, [None])
    plain = tf.contrib.lookup.index_table_from_tensor(vocab, default_value=-7)
    hashed = tf.contrib.lookup.index_table_from_tensor(vocab, num_oov_buckets=3)
    query = ["cat", "dog", "the", "zebra", "mat", "dog"]
    ids_plain, ids_hashed = plain.lookup(words), hashed.lookup(words)
    runs = []
    for _ in range(2):
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            a, b, n = sess.run([ids_plain, ids_hashed, hashed.size()], {words: query})
            runs.append(b)
    np.testing.assert_array_equal(a, [1, -7, 0, -7, 4, -7])
    assert n == 8
    assert list(b[[0, 2, 4]]) == [1, 0, 4]
    assert all(5 <= i < 8 for i in b[[1, 3, 5]]) and b[1] == b[5]
    assert list(b[[1, 3]]) == [_bucket(b"dog", 5, 3), _bucket(b"zebra", 5, 3)]
    np.testing.assert_array_equal(runs[0], runs[1])
    # A fresh graph (as another process would build) gives the same buckets.
    tf.reset_default_graph()
    table = tf.contrib.lookup.index_table_from_tensor(vocab, num_oov_buckets=3)
    ids = table.lookup(tf.constant(query))
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(sess.run(ids), runs[0])
    strong = tf.contrib.lookup.index_table_from_tensor(
        vocab, num_oov_buckets=1000, hasher_spec=tf.contrib.lookup.StrongHashSpec((1, 2)))
    assert strong.lookup(tf.constant(["dog"])).dtype == tf.int64
    # TensorFlow's buckets: its documented to_hash_bucket_fast(["Hello", "TensorFlow"], 3) is
    # [0, 2], so after a vocabulary of 2 they are ids 2 and 4.
    with tf.Graph().as_default():
        two = tf.contrib.lookup.index_table_from_tensor(["a", "b"], num_oov_buckets=3)
        ids = two.lookup(tf.constant(["Hello", "TensorFlow", "b"]))
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            assert sess.run(ids).tolist() == [2, 4, 1]


def test_static_vocabulary_table_and_int64_keys():
    init = tf.lookup.KeyValueTensorInitializer(
        tf.constant([10, 20, 30], tf.int64), tf.constant([0, 1, 2], tf.int64))
    table = tf.lookup.StaticVocabularyTable(init, num_oov_buckets=4)
    ids = table.lookup(tf.constant([30, 99, 10, 12345], tf.int64))
    ints = tf.contrib.lookup.index_table_from_tensor(tf.constant([7, 3, 5], tf.int64),
                                                     dtype=tf.int64)
    int_ids = ints.lookup(tf.constant([[5, 3], [4, 7]], tf.int64))
    narrow = ints.lookup(tf.constant([3, 7], tf.int32))  # any integer dtype
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        v, size = sess.run([ids, table.size()])
        assert size == 7
        assert v[0] == 2 and v[2] == 0
        assert v[1] == _bucket(b"99", 3, 4) and v[3] == _bucket(b"12345", 3, 4)
        np.testing.assert_array_equal(sess.run(int_ids), [[2, 1], [-1, 0]])
        np.testing.assert_array_equal(sess.run(narrow), [1, 0])
    with pytest.raises(ValueError, match="oov_buckets must be > 0"):
        tf.lookup.StaticVocabularyTable(init, num_oov_buckets=0)
    with pytest.raises(TypeError, match="Keys must be dtype int64, got string"):
        table.lookup(tf.constant(["a"]))


def test_vocabulary_files_whole_line_and_columns(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_bytes(b"emerson\r\nlake\npalmer\n")
    counts = tmp_path / "counts.tsv"
    counts.write_text("apple\t7\nbanana\t3\ncherry\t11\n")
    words = tf.constant(["lake", "tarkus", "emerson", "palmer"])
    by_line = tf.contrib.lookup.index_table_from_file(str(vocab))
    first_two = tf.contrib.lookup.index_table_from_file(str(vocab), vocab_size=2,
                                                        num_oov_buckets=1)
    count_table = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(str(counts), tf.string, 0, tf.int64, 1), -1)
    whole = tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
        str(counts), tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
        tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER), -1)
    to_word = tf.contrib.lookup.index_to_string_table_from_file(str(vocab))
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(sess.run(by_line.lookup(words)), [1, -1, 0, 2])
        np.testing.assert_array_equal(sess.run(first_two.lookup(words)), [1, 2, 0, 2])
        np.testing.assert_array_equal(
            sess.run(count_table.lookup(tf.constant(["cherry", "apple", "kiwi"]))), [11, 7, -1])
        np.testing.assert_array_equal(
            sess.run(whole.lookup(tf.constant(["banana\t3", "banana"]))), [1, -1])
        assert list(sess.run(to_word.lookup(tf.constant([2, 0, 3], tf.int64)))) == [
            b"palmer", b"emerson", b"UNK"]


def test_index_to_string_and_contrib_functions():
    table = tf.contrib.lookup.index_to_string_table_from_tensor(["a", "b", "c"],
                                                               default_value="?")
    words = table.lookup(tf.constant([[2, 0], [9, 1]], tf.int64))
    ids = tf.contrib.lookup.string_to_index(tf.constant(["c", "z"]), ["a", "b", "c"])
    back = tf.contrib.lookup.index_to_string(tf.constant([1], tf.int64), ["a", "b"])
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        assert sess.run(words).tolist() == [[b"c", b"a"], [b"?", b"b"]]
        np.testing.assert_array_equal(sess.run(ids), [2, -1])
        assert list(sess.run(back)) == [b"b"]


def test_sparse_keys_are_looked_up_by_value():
    table = tf.contrib.lookup.index_table_from_tensor(["x", "y"])
    sp = tf.string_split(tf.constant(["y x", "q"]))
    out = table.lookup(sp)
    assert isinstance(out, tf.SparseTensor)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        value = sess.run(out)
    np.testing.assert_array_equal(value.values, [1, 0, -1])
    np.testing.assert_array_equal(value.indices, [[0, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(value.dense_shape, [2, 2])


def test_lookup_in_a_dataset_map_pipeline():
    vocab = tf.contrib.lookup.index_table_from_tensor(["<pad>", "a", "b", "c"],
                                                      num_oov_buckets=1)
    lines = ["a b", "c x a", "b"]
    ds = tf.data.Dataset.from_tensor_slices(lines).map(
        lambda line: vocab.lookup(tf.string_split([line]).values))
    ds = ds.padded_batch(3, padded_shapes=[None])
    it = ds.make_initializable_iterator()
    batch = it.get_next()
    one_shot = tf.data.Dataset.from_tensor_slices(lines).map(
        lambda line: vocab.lookup(tf.strings.split([line]).values)).make_one_shot_iterator()
    first = one_shot.get_next()
    expected = [[1, 2, 0], [3, 4, 1], [2, 0, 0]]
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())  # before the iterators are used, as in TF1
        sess.run(it.initializer)
        np.testing.assert_array_equal(sess.run(batch), expected)
        np.testing.assert_array_equal(sess.run(first), [1, 2])
    # Without the table's initializer the pipeline fails as the lookup does.
    tf.reset_default_graph()
    vocab = tf.contrib.lookup.index_table_from_tensor(["a"])
    it = tf.data.Dataset.from_tensor_slices(["a"]).map(vocab.lookup).make_one_shot_iterator()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="Table not initialized"):
            sess.run(it.get_next())


def test_table_built_inside_a_map_function():
    def to_ids(word):
        table = tf.contrib.lookup.index_table_from_tensor(["a", "b"])
        return table.lookup(word)
    it = tf.data.Dataset.from_tensor_slices(["b", "z", "a"]).map(
        to_ids).make_one_shot_iterator()
    x = it.get_next()
    with tf.Session() as sess:
        assert [sess.run(x) for _ in range(3)] == [1, -1, 0]


def test_initializer_reads_its_tensors_each_run():
    keys = tf.placeholder(tf.string, [None])
    values = tf.placeholder(tf.int64, [None])
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), 0)
    out = table.lookup(tf.constant(["k"]))
    with tf.Session() as sess:
        sess.run(table.initializer, {keys: ["k"], values: [5]})
        assert sess.run(out)[0] == 5
        sess.run(table.initializer, {keys: ["k", "j"], values: [6, 7]})  # reloads
        assert sess.run(out)[0] == 6 and sess.run(table.size()) == 2
        with pytest.raises(tf.errors.InvalidArgumentError, match="2 keys and 1 values"):
            sess.run(table.initializer, {keys: ["a", "b"], values: [1]})
        # The contents belong to the table object (Note [Table state] in lookup_ops.py): a
        # second session of the graph sees them.
        with tf.Session() as other:
            assert other.run(out)[0] == 6


def test_default_value_fed_at_run_time():
    default = tf.placeholder(tf.int64, [])
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        ["a"], tf.constant([1], tf.int64)), default)
    out = table.lookup(tf.constant(["a", "b"]))
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(sess.run(out, {default: 42}), [1, 42])


def test_errors():
    with pytest.raises(ValueError, match="3 keys and 2 values"):
        tf.lookup.KeyValueTensorInitializer(["a", "b", "c"], [1, 2])
    table = tf.contrib.lookup.index_table_from_tensor(["a", "b", "a"])
    ids = table.lookup(tf.constant(["a"]))
    same = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        ["a", "a", "b"], tf.constant([1, 1, 2], tf.int64)), -1)  # identical pairs: accepted
    missing = tf.contrib.lookup.index_table_from_file("/nonexistent/vocab.txt")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="Table not initialized"):
            sess.run(ids)
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="different value for same key. Key a has 0 and trying to "
                                 "add value 2"):
            sess.run(table.initializer)
        with pytest.raises(tf.errors.NotFoundError, match="/nonexistent/vocab.txt"):
            sess.run(missing.initializer)
        sess.run(same.initializer)
        np.testing.assert_array_equal(sess.run(same.lookup(tf.constant(["a", "b"]))), [1, 2])
    with pytest.raises(TypeError, match="Keys must be dtype string, got int64"):
        table.lookup(tf.constant([1], tf.int64))
    with pytest.raises(ValueError, match="Keys must be dtype int64"):
        tf.lookup.TextFileInitializer("v.txt", tf.string, tf.lookup.TextFileIndex.LINE_NUMBER,
                                      tf.int64, 0)


def test_file_format_errors(tmp_path):
    path = tmp_path / "v.tsv"
    path.write_text("a\t1\nb\n")
    short = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(str(path), tf.string, 0, tf.int64, 1), -1)
    too_many = tf.contrib.lookup.index_table_from_file(str(path), vocab_size=5)
    path2 = tmp_path / "w.tsv"
    path2.write_text("a\tone\n")
    bad = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(str(path2), tf.string, 0, tf.int64, 1), -1)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid number of columns"):
            sess.run(short.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="expected 5 but got 2"):
            sess.run(too_many.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="'one' is not a valid int64"):
            sess.run(bad.initializer)


def test_namespaces():
    import shardflow.lookup as lookup_module
    assert lookup_module is tf.lookup and tf.compat.v1.lookup is tf.lookup
    assert tf.lookup.TextFileIndex.WHOLE_LINE == -2
    assert tf.lookup.TextFileIndex.LINE_NUMBER == -1
    assert tf.contrib.lookup.HashTable is not tf.lookup.StaticHashTable
    assert issubclass(tf.contrib.lookup.HashTable, tf.lookup.StaticHashTable)
    assert "lookup" in tf.contrib.__all__


def test_monitored_training_session_initializes_tables(tmp_path):
    # TF1's Scaffold groups tables_initializer into its default local_init_op: a table works in a
    # MonitoredTrainingSession (and a restart from its checkpoint) with no explicit call.
    for _ in range(2):
        with tf.Graph().as_default():
            table = tf.contrib.lookup.index_table_from_tensor(tf.constant(["a", "b", "c"]))
            ids = table.lookup(tf.constant(["c", "a", "zz"]))
            step = tf.train.get_or_create_global_step()
            inc = tf.assign_add(step, 1)
            with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                                   save_checkpoint_secs=None) as sess:
                np.testing.assert_array_equal(sess.run(ids), [2, 0, -1])
                sess.run(inc)
