"""TF 1.15 fidelity of feature columns, sparse ops, sparse embeddings and lookup tables
(shardflow/feature_column.py, sparse_ops.py, sparse_embedding.py, lookup_ops.py): the values
TF1 programs get, checked against hand-computed / NumPy references from TF's documented
semantics and kernels."""

import numpy as np
import pytest

import shardflow as tf

fc = tf.feature_column


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def run(fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(tf.tables_initializer())
        return s.run(fetches, feed)


def values_of(sp):
    return sp.indices.tolist(), sp.values.tolist(), sp.dense_shape.tolist()


# ---- feature columns: a dense feature's -1 / "" is dropped before the lookup ----------------

def test_identity_column_default_value_skips_missing_ids():
    # TF1 drops a dense feature's -1 before replacing out-of-range ids by default_value.
    col = fc.categorical_column_with_identity("a", 4, default_value=0)
    out = fc.input_layer({"a": tf.constant([[1, -1], [5, 2]], tf.int64)},
                         [fc.indicator_column(col)])
    np.testing.assert_array_equal(run(out), [[0, 1, 0, 0], [1, 0, 1, 0]])


def test_vocabulary_list_oov_buckets_skip_missing_strings():
    col = fc.categorical_column_with_vocabulary_list("s", ["a", "b"], num_oov_buckets=1)
    out = fc.input_layer({"s": tf.constant([["a", ""], ["z", "b"]])}, [fc.indicator_column(col)])
    np.testing.assert_array_equal(run(out), [[1, 0, 0], [0, 1, 1]])


def test_vocabulary_list_default_value_skips_missing_strings():
    col = fc.categorical_column_with_vocabulary_list("s", ["a", "b"], default_value=1)
    out = fc.input_layer({"s": tf.constant([["a", ""], ["z", "a"]])}, [fc.indicator_column(col)])
    np.testing.assert_array_equal(run(out), [[1, 0], [1, 1]])


def test_integer_vocabulary_oov_buckets_skip_minus_one():
    col = fc.categorical_column_with_vocabulary_list("i", [10, 20], num_oov_buckets=1)
    out = fc.input_layer({"i": tf.constant([[10, -1], [7, 20]], tf.int64)},
                         [fc.indicator_column(col)])
    np.testing.assert_array_equal(run(out), [[1, 0, 0], [0, 1, 1]])


def test_vocabulary_file_default_value_skips_missing_strings(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("x\ny\nz\n")
    col = fc.categorical_column_with_vocabulary_file("v", str(path), default_value=0)
    emb = fc.embedding_column(col, 1, combiner="mean",
                              initializer=tf.constant_initializer([[1.0], [2.0], [4.0]]))
    out = fc.input_layer({"v": tf.constant([["z", ""], ["q", "y"]])}, [emb])
    # Row 0: only "z" (4); row 1: "q" -> default 0 (1) and "y" (2): mean 1.5.
    np.testing.assert_allclose(run(out), [[4.0], [1.5]])


# ---- sparse_add's thresh ----------------------------------------------------------------------

def test_sparse_add_thresh_drops_only_small_sums():
    # TF1's SparseAdd kernel applies thresh to the coordinates both operands have; an entry of
    # one operand alone is copied however small.
    a = tf.SparseTensor([[0, 0], [1, 1]], [1.0, 0.05], [2, 2])
    b = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [-1.0, 3.0, 0.01], [2, 2])
    idx, val, shape = values_of(run(tf.sparse_add(a, b, thresh=0.1)))
    assert idx == [[0, 1], [1, 0], [1, 1]]
    np.testing.assert_allclose(val, [3.0, 0.01, 0.05], rtol=1e-6)
    assert shape == [2, 2]
    idx, val, _ = values_of(run(tf.sparse.add(a, b, threshold=tf.constant(0.1))))
    assert idx == [[0, 1], [1, 0], [1, 1]]
    a = tf.SparseTensor([[0, 0], [1, 1]], [1.0, 0.5], [2, 2])
    b = tf.SparseTensor([[0, 0], [1, 1]], [-0.95, 0.5], [2, 2])
    idx, val, _ = values_of(run(tf.sparse_add(a, b, thresh=0.1)))
    assert idx == [[1, 1]] and val == [1.0]


# ---- embedding_lookup_sparse over a sharded table ---------------------------------------------

FULL = np.arange(20, dtype=np.float32).reshape(10, 2)


def shards(strategy):
    if strategy == "mod":
        return [tf.constant(FULL[i::3]) for i in range(3)]
    return [tf.constant(FULL[0:4]), tf.constant(FULL[4:7]), tf.constant(FULL[7:10])]


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_safe_embedding_lookup_sparse_over_shards(strategy):
    ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [3, 0]], np.array([1, 8, 0, -1], np.int64),
                          [4, 2])
    weights = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [3, 0]],
                              np.array([1., 3., 2., .5], np.float32), [4, 2])
    out = tf.nn.safe_embedding_lookup_sparse(shards(strategy), ids, weights, combiner="mean",
                                             default_id=9, partition_strategy=strategy)
    want = np.stack([(FULL[1] + 3 * FULL[8]) / 4, FULL[0], FULL[9], FULL[9]])
    np.testing.assert_allclose(run(out), want, rtol=1e-6)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_sparse_over_shards_with_max_norm(strategy):
    ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], np.array([1, 8, 0], np.int64), [3, 2])
    out = tf.nn.embedding_lookup_sparse(shards(strategy), ids, None, combiner="sum",
                                        partition_strategy=strategy, max_norm=3.0)

    def clip(v):
        return v * min(1.0, 3.0 / np.linalg.norm(v))
    want = np.stack([clip(FULL[1]) + clip(FULL[8]), clip(FULL[0]), 0 * FULL[0]])
    np.testing.assert_allclose(run(out), want, rtol=1e-5)


def test_embedding_lookup_sparse_over_partitioned_variable():
    with tf.variable_scope("emb"):
        table = tf.get_variable("t", [10, 2], partitioner=tf.fixed_size_partitioner(3))
    ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], np.array([1, 9, 4], np.int64), [2, 2])
    out = tf.nn.embedding_lookup_sparse(table, ids, None, combiner="sum",
                                        partition_strategy="div")
    got, full = run([out, tf.concat(list(table), 0)])
    np.testing.assert_allclose(got, [full[1] + full[9], full[4]], rtol=1e-6)
    grads = tf.gradients(tf.reduce_sum(out), list(table))
    assert all(g is not None for g in grads)


# ---- mutable tables -------------------------------------------------------------------------

def test_mutable_hash_table_insert_lookup_remove_export():
    table = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, default_value=-1)
    insert = table.insert(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64))
    found = table.lookup(tf.constant([["b", "x"], ["a", "a"]]))
    assert found.shape.as_list() == [2, 2]
    keys, values = table.export()
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(found), [[-1, -1], [-1, -1]])
        assert s.run(table.size()) == 0
        s.run(insert)
        np.testing.assert_array_equal(s.run(found), [[2, -1], [1, 1]])
        k, v = s.run([keys, values])
        assert dict(zip(k.tolist(), v.tolist())) == {b"a": 1, b"b": 2}
        s.run(table.remove(tf.constant(["a"])))
        s.run(table.insert(tf.constant(["b"]), tf.constant([5], tf.int64)))
        np.testing.assert_array_equal(s.run(found), [[5, -1], [-1, -1]])
        assert s.run(table.size()) == 1


def test_mutable_hash_table_of_vectors():
    table = tf.contrib.lookup.MutableHashTable(tf.int64, tf.float32, [0.0, -1.0])
    insert = table.insert(tf.constant([3, 4], tf.int64), tf.constant([[1., 2.], [3., 4.]]))
    found = table.lookup(tf.constant([4, 9], tf.int64))
    assert found.shape.as_list() == [2, 2]
    with tf.Session() as s:
        s.run(insert)
        np.testing.assert_array_equal(s.run(found), [[3, 4], [0, -1]])
    with pytest.raises(ValueError):
        table.insert(tf.constant([3], tf.int64), tf.constant([1.0]))


def test_dense_hash_table_refuses_its_empty_key():
    table = tf.lookup.experimental.DenseHashTable(tf.int64, tf.int64, default_value=-1,
                                                  empty_key=0, deleted_key=-1)
    assert isinstance(table, tf.contrib.lookup.MutableDenseHashTable)
    insert = table.insert(tf.constant([5, 6], tf.int64), tf.constant([50, 60], tf.int64))
    with tf.Session() as s:
        s.run(insert)
        np.testing.assert_array_equal(s.run(table.lookup(tf.constant([6, 7], tf.int64))),
                                      [60, -1])
        with pytest.raises(tf.errors.InvalidArgumentError, match="empty key"):
            s.run(table.insert(tf.constant([0], tf.int64), tf.constant([1], tf.int64)))


# ---- tf.sparse ops TF1 programs reach -------------------------------------------------------

SP = ([[0, 0], [0, 2], [1, 1], [2, 0], [2, 3]], [1.0, 2.0, -3.0, 0.5, -1.0], [4, 4])


def test_sparse_reduce_max_ignores_implicit_zeros():
    sp = tf.SparseTensor(*SP)
    got = run([tf.sparse.reduce_max(sp), tf.sparse.reduce_max(sp, 1),
               tf.sparse.reduce_max(sp, 0, keepdims=True)])
    assert got[0] == 2.0
    np.testing.assert_array_equal(got[1], [2.0, -3.0, 0.5, 0.0])   # an empty row: 0
    np.testing.assert_array_equal(got[2], [[1.0, -3.0, 2.0, -1.0]])


def test_sparse_softmax_over_stored_entries_and_its_gradient():
    values = tf.constant(SP[1])
    out = tf.sparse.softmax(tf.SparseTensor(SP[0], values, SP[2]))
    grad = tf.gradients(tf.reduce_sum(out.values * tf.constant([1., 0., 0., 0., 0.])),
                        values)[0]
    got, g = run([out, grad])
    row0 = np.exp([1., 2.]) / np.exp([1., 2.]).sum()
    row2 = np.exp([.5, -1.]) / np.exp([.5, -1.]).sum()
    assert got.indices.tolist() == SP[0]
    np.testing.assert_allclose(got.values, np.concatenate([row0, [1.0], row2]), rtol=1e-6)
    np.testing.assert_allclose(g, [row0[0] * row0[1], -row0[0] * row0[1], 0, 0, 0],
                               rtol=1e-5, atol=1e-7)


def test_sparse_maximum_minimum_count_missing_entries_as_zero():
    a = tf.SparseTensor([[0], [2]], [-1.0, 5.0], [4])
    b = tf.SparseTensor([[1], [2]], [3.0, 2.0], [4])
    hi, lo = run([tf.sparse.maximum(a, b), tf.sparse.minimum(a, b)])
    assert hi.indices.tolist() == [[0], [1], [2]] and hi.values.tolist() == [0.0, 3.0, 5.0]
    assert lo.indices.tolist() == [[0], [1], [2]] and lo.values.tolist() == [-1.0, 0.0, 2.0]


def test_sparse_split_gives_the_first_pieces_the_extra_entries():
    pieces = tf.sparse.split(sp_input=tf.SparseTensor(*SP), num_split=3, axis=1)
    assert [p.shape.as_list() for p in pieces] == [[4, 2], [4, 1], [4, 1]]
    got = [values_of(p) for p in run(pieces)]
    assert got[0] == ([[0, 0], [1, 1], [2, 0]], [1.0, -3.0, 0.5], [4, 2])
    assert got[1] == ([[0, 0]], [2.0], [4, 1])
    assert got[2] == ([[2, 0]], [-1.0], [4, 1])
    ph = tf.sparse_placeholder(tf.float32, [None, None])
    second = tf.sparse.split(sp_input=ph, num_split=2, axis=0)[1]
    got = run(second, {ph: tf.SparseTensorValue([[0, 0], [2, 1], [4, 0]], [1., 2., 3.],
                                                [5, 2])})
    assert values_of(got) == ([[1, 0]], [3.0], [2, 2])
    with pytest.raises(ValueError, match="Keyword arguments"):
        tf.sparse.split(tf.SparseTensor(*SP), 2, 1)


def test_sparse_to_indicator_and_merge():
    ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], tf.constant([3, 1, 0], tf.int64), [3, 2])
    weights = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [.5, .25, 2.], [3, 2])
    merged = tf.sparse.merge(ids, weights, 5)
    assert merged.shape.as_list() == [3, 5]
    indicator, merged = run([tf.sparse.to_indicator(ids, 4), merged])
    np.testing.assert_array_equal(indicator, [[0, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]])
    assert indicator.dtype == bool
    assert values_of(merged) == ([[0, 1], [0, 3], [2, 0]], [0.25, 0.5, 2.0], [3, 5])


def test_sparse_expand_dims_and_eye():
    ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [3, 1, 0], [3, 2])
    front, back, eye = run([tf.sparse.expand_dims(ids, 0), tf.sparse.expand_dims(ids, -1),
                            tf.sparse.eye(2, 3)])
    assert values_of(front)[0] == [[0, 0, 0], [0, 0, 1], [0, 2, 0]]
    assert values_of(front)[2] == [1, 3, 2]
    assert values_of(back)[0] == [[0, 0, 0], [0, 1, 0], [2, 0, 0]]
    assert values_of(eye) == ([[0, 0], [1, 1]], [1.0, 1.0], [2, 3])


# ---- embedding columns: input_layer's trainable / weight_collections, max_norm, checkpoints ---

TABLE = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], np.float32)


def test_input_layer_trainable_false_freezes_embedding_tables():
    col = fc.embedding_column(fc.categorical_column_with_identity("a", 3), 2)
    fc.input_layer({"a": tf.constant([[0]], tf.int64)}, [col], trainable=False,
                   weight_collections=["mine"])
    assert tf.trainable_variables() == []
    assert [v.name for v in tf.get_collection("mine")] == \
        ["input_layer/a_embedding/embedding_weights:0"]
    assert len(tf.global_variables()) == 1


def test_linear_model_weight_collections():
    fc.linear_model({"x": tf.constant([[1.0]])}, [fc.numeric_column("x")],
                    weight_collections=["lin"])
    assert [v.name for v in tf.get_collection("lin")] == \
        ["linear_model/x/weights:0", "linear_model/bias_weights:0"]


def test_embedding_column_max_norm():
    col = fc.embedding_column(fc.categorical_column_with_identity("a", 3), 2, combiner="sum",
                              initializer=tf.constant_initializer(TABLE), max_norm=1.0)
    out = fc.input_layer({"a": tf.constant([[0, 1], [2, -1]], tf.int64)}, [col])
    # Rows of norm 5 and 10 are scaled to norm 1; the row of norm 0.5 stays.
    np.testing.assert_allclose(run(out), [[0.6 + 0.3, 0.8 + 0.4], [0.6, 0.8]], rtol=1e-6)


def test_shared_embedding_columns_max_norm():
    a, b = fc.shared_embedding_columns(
        [fc.categorical_column_with_identity("a", 3), fc.categorical_column_with_identity("b", 3)],
        2, initializer=tf.constant_initializer(TABLE), max_norm=1.0)
    out = fc.input_layer({"a": tf.constant([[0]], tf.int64), "b": tf.constant([[1]], tf.int64)},
                         [a, b])
    np.testing.assert_allclose(run(out), [[0.6, 0.8, 0.3, 0.4]], rtol=1e-6)


def test_embedding_column_ckpt_to_load_from(tmp_path):
    with tf.Graph().as_default():
        tf.Variable(TABLE, name="old/emb")
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            path = saver.save(s, str(tmp_path / "model.ckpt"))
    col = fc.embedding_column(fc.categorical_column_with_identity("a", 3), 2, combiner="sum",
                              ckpt_to_load_from=path, tensor_name_in_ckpt="old/emb")
    out = fc.input_layer({"a": tf.constant([[2], [0]], tf.int64)}, [col])
    np.testing.assert_allclose(run(out), TABLE[[2, 0]])
    with pytest.raises(ValueError, match="both"):
        fc.embedding_column(fc.categorical_column_with_identity("a", 3), 2,
                            ckpt_to_load_from=path)


def test_weighted_embedding_ignores_non_positive_weights():
    # TF1's safe_embedding_lookup_sparse drops ids whose weight is <= 0: T0, not 2*T0 - T2.
    ids = fc.weighted_categorical_column(fc.categorical_column_with_identity("a", 3), "w")
    col = fc.embedding_column(ids, 2, combiner="mean", initializer=tf.constant_initializer(TABLE))
    out = fc.input_layer({"a": tf.constant([[0, 2]], tf.int64),
                          "w": tf.constant([[2.0, -1.0]])}, [col])
    np.testing.assert_allclose(run(out), [TABLE[0]], rtol=1e-6)


def test_categorical_columns_refuse_features_of_another_dtype():
    # TF1 raises; a float feature was cast to ids, an int feature of a string vocabulary
    # matched nothing.
    ident = fc.categorical_column_with_identity("a", 3)
    with pytest.raises(ValueError, match="not integer"):
        fc.input_layer({"a": tf.constant([[1.7]])}, [fc.indicator_column(ident)])
    vocab = fc.categorical_column_with_vocabulary_list("s", ["1", "2"])
    with pytest.raises(ValueError, match="must be compatible"):
        fc.input_layer({"s": tf.constant([[1]], tf.int64)}, [fc.indicator_column(vocab)])
    ints = fc.categorical_column_with_vocabulary_list("i", [3, 4])
    out = fc.input_layer({"i": tf.constant([[4]], tf.int32)}, [fc.indicator_column(ints)])
    np.testing.assert_array_equal(run(out), [[0, 1]])


def test_sparse_tensor_times_and_divided_by_a_dense_tensor():
    # TF1's SparseTensor.__mul__ / __truediv__ (sparse_dense_cwise_mul/div): y broadcast to
    # the dense shape, read at each stored entry; the result keeps sp's indices.
    values = tf.constant([2.0, 4.0])
    sp = tf.SparseTensor([[0, 0], [1, 2]], values, [2, 3])
    outs = [sp * 3.0, sp * tf.constant([[1., 2., 3.]]), sp * np.array([[10.], [100.]], np.float32),
            sp / 2.0, sp / tf.constant([[1., 2., 8.], [1., 1., 2.]])]
    got = run(outs)
    assert [g.values.tolist() for g in got] == [[6, 12], [2, 12], [20, 400], [1, 2], [2, 2]]
    assert all(g.indices.tolist() == [[0, 0], [1, 2]] for g in got)
    assert outs[0].shape.as_list() == [2, 3]
    grad = tf.gradients(tf.reduce_sum((sp * 3.0).values), values)[0]
    np.testing.assert_array_equal(run(grad), [3.0, 3.0])


def test_string_sparse_tensor_to_dense():
    # The TF1 text pipeline: string_split -> to_dense (-> a lookup table).
    words = tf.string_split(tf.constant(["a b c", "d", ""]))
    padded = tf.sparse_tensor_to_dense(words, default_value="")
    marked = tf.sparse.to_dense(words, default_value=b"<pad>")
    table = tf.contrib.lookup.index_table_from_tensor(["a", "b", "c", "d"])
    ids = table.lookup(tf.sparse.to_dense(words))
    got = run([padded, marked, ids,
               tf.sparse_to_dense([[0, 1]], [2, 2], ["x"], default_value="?")])
    assert got[0].tolist() == [[b"a", b"b", b"c"], [b"d", b"", b""], [b"", b"", b""]]
    assert got[1].tolist()[1] == [b"d", b"<pad>", b"<pad>"]
    np.testing.assert_array_equal(got[2], [[0, 1, 2], [3, -1, -1], [-1, -1, -1]])
    assert got[3].tolist() == [[b"?", b"x"], [b"?", b"?"]]


def test_hash_table_export():
    strings = tf.contrib.lookup.HashTable(tf.contrib.lookup.KeyValueTensorInitializer(
        ["b", "a"], tf.constant([2, 1], tf.int64)), -1)
    ints = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        tf.constant([7, 3], tf.int64), [0.5, 1.5]), -1.0)
    (sk, sv), (ik, iv) = run([strings.export(), ints.export()])
    assert dict(zip(sk.tolist(), sv.tolist())) == {b"a": 1, b"b": 2}
    assert dict(zip(ik.tolist(), iv.tolist())) == {3: 1.5, 7: 0.5}


# ---- feature-column variables are get_variable ones: reuse and partitioners --------------------

def test_input_layer_and_linear_model_share_variables_under_reuse():
    # TF1 builds them with get_variable in default-named scopes: two towers built under one
    # reuse=AUTO_REUSE scope share the embedding and the linear weights.
    ids = fc.categorical_column_with_identity("a", 3)
    emb = fc.embedding_column(ids, 2, initializer=tf.constant_initializer(TABLE))
    features = {"a": tf.constant([[1]], tf.int64)}
    outs = []
    for _ in range(2):
        with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
            outs.append((fc.input_layer(features, [emb]), fc.linear_model(features, [ids])))
    assert sorted(v.name for v in tf.global_variables()) == [
        "model/input_layer/a_embedding/embedding_weights:0",
        "model/linear_model/a/weights:0", "model/linear_model/bias_weights:0"]
    emb_var = tf.global_variables()[0]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(tf.assign(emb_var, TABLE * 2))
        first, second = s.run([outs[0][0], outs[1][0]])
    np.testing.assert_allclose(first, [TABLE[1] * 2])
    np.testing.assert_allclose(second, first)


def test_input_layer_without_reuse_makes_new_variables():
    col = fc.embedding_column(fc.categorical_column_with_identity("a", 3), 2)
    features = {"a": tf.constant([[1]], tf.int64)}
    fc.input_layer(features, [col])
    fc.input_layer(features, [col])
    assert [v.name for v in tf.global_variables()] == [
        "input_layer/a_embedding/embedding_weights:0",
        "input_layer_1/a_embedding/embedding_weights:0"]


def test_embedding_and_linear_model_under_a_scope_partitioner():
    ids = fc.categorical_column_with_identity("a", 5)
    emb = fc.embedding_column(ids, 2, combiner="sum")
    features = {"a": tf.constant([[0, 4], [3, -1]], tf.int64), "x": tf.constant([[1.0, 2.0]])}
    cols = {}
    with tf.variable_scope("m", partitioner=tf.fixed_size_partitioner(2)):
        out = fc.input_layer(features, [emb], cols_to_vars=cols)
        lin = fc.linear_model({"x": features["x"]}, [fc.numeric_column("x", shape=(2,))])
    assert [v.shape.as_list() for v in cols[emb]] == [[3, 2], [2, 2]]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got_full = s.run(tf.concat(cols[emb], 0))
        got, got_lin = s.run([out, lin])
    np.testing.assert_allclose(got, [got_full[0] + got_full[4], got_full[3]])
    np.testing.assert_allclose(got_lin, [[0.0]])


def test_mutable_hash_table_lookup_in_a_dataset_map():
    table = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, default_value=-1)
    insert = table.insert(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64))
    words = tf.data.Dataset.from_tensor_slices(tf.constant(["a", "z", "b"]))
    ids = words.map(table.lookup).make_one_shot_iterator().get_next()
    with tf.Session() as s:
        s.run(insert)
        assert [s.run(ids) for _ in range(3)] == [1, -1, 2]


def test_numeric_column_keeps_the_batch_dimension():
    # TF1's input_layer reshapes to (batch, n) with batch the feature's first dimension: a
    # [4] feature for a shape-(2,) column fails instead of becoming two examples.
    col = fc.numeric_column("x", shape=(2,))
    with pytest.raises(ValueError, match="not \\[batch\\]"):
        fc.input_layer({"x": tf.constant([1., 2., 3., 4.])}, [col])
    ph = tf.placeholder(tf.float32, [None])
    out = fc.input_layer({"x": ph}, [col])
    assert out.shape.as_list() == [None, 2]
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(out, {ph: [1., 2., 3., 4.]})
    grid = tf.placeholder(tf.float32, [None, 2, 3])
    out = fc.input_layer({"g": grid}, [fc.numeric_column("g", shape=(2, 3))])
    np.testing.assert_array_equal(run(out, {grid: np.ones((1, 2, 3))}), np.ones((1, 6)))


# ---- reorder is a sort, not a pairwise comparison -----------------------------------------------

def test_reorder_sorts_many_entries_stably():
    rng = np.random.RandomState(0)
    n = 50000   # the pairwise comparison this replaces needed N^2 (2.5e9) entries of memory
    linear = rng.choice(1000 * 1000, n, replace=False)
    idx = np.stack([linear // 1000, linear % 1000], 1)
    values = tf.constant(rng.rand(n).astype(np.float32))
    out = tf.sparse_reorder(tf.SparseTensor(idx, values, [1000, 1000]))
    grad = tf.gradients(tf.reduce_sum(out.values * tf.range(n, dtype=tf.float32)), values)[0]
    got, g = run([out, grad])
    order = np.argsort(linear)
    np.testing.assert_array_equal(got.indices, idx[order])
    np.testing.assert_array_equal(g[order], np.arange(n))
    # Repeated coordinates keep their order; an empty SparseTensor stays empty.
    dup = tf.SparseTensor([[1, 0], [0, 1], [1, 0], [0, 1]], [1., 2., 3., 4.], [2, 2])
    empty = tf.sparse_placeholder(tf.float32)
    got, none = run([tf.sparse.reorder(dup), tf.sparse.reorder(empty)],
                    {empty: tf.SparseTensorValue(np.zeros((0, 3), np.int64), [], [2, 2, 2])})
    assert got.values.tolist() == [2., 4., 1., 3.]
    assert none.indices.shape == (0, 3) and none.values.size == 0


def test_vocabulary_list_table_is_built_once():
    # The vocabulary's dict was rebuilt at every step (145 ms a step for 200000 words).
    class Counting(tuple):
        iterations = 0

        def __iter__(self):
            Counting.iterations += 1
            return super().__iter__()
    col = fc.categorical_column_with_vocabulary_list("w", ["a", "b", "c"])
    col.vocabulary_list = Counting(col.vocabulary_list)
    words = tf.placeholder(tf.string, [None, 2])
    out = fc.input_layer({"w": words}, [fc.indicator_column(col)])
    with tf.Session() as s:
        for _ in range(3):
            got = s.run(out, {words: [["c", "x"], ["a", "b"]]})
    np.testing.assert_array_equal(got, [[0, 0, 1], [1, 1, 0]])
    assert Counting.iterations == 1
