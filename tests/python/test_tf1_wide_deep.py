"""TF 1.15 wide & deep programs: the feature columns (hash bucket, crossed, vocabulary file,
weighted, shared embeddings, make_parse_example_spec), DNNLinearCombinedClassifier /
Regressor, tf.io.decode_csv, tf.io.serialize_tensor / parse_tensor and tf.sparse.concat /
fill_empty_rows / slice, against hand-computed and NumPy values."""

import csv
import io as _io
import itertools

import numpy as np
import pytest

import shardflow as tf

fc = tf.feature_column


def run(fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


def _hash64(s):
    """TF's Fingerprint64 (its documented to_hash_bucket_fast buckets are checked in the op
    conformance test and test_tf1_api_gaps2)."""
    from shardflow import _shardflow
    return _shardflow.string_hash64(s.encode())


_M = 0xC6A4A7935BD1E995
_MASK = (1 << 64) - 1


def _cat64(a, b):
    """TF's FingerprintCat64, written out from tensorflow/core/lib/hash/hash.h."""
    def mix(v):
        return v ^ (v >> 47)
    r = a ^ _M
    r ^= (mix((b * _M) & _MASK) * _M) & _MASK
    r = (r * _M) & _MASK
    r = (mix(r) * _M) & _MASK
    return mix(r)


def _cross(values, buckets, key=0xDECAFCAFFE):
    h = key
    for v in values:
        h = _cat64(h, v & _MASK)
    return h % buckets


# ---- feature columns --------------------------------------------------------------------------

def test_hash_bucket_column_matches_string_to_hash_bucket_fast():
    col = fc.categorical_column_with_hash_bucket("s", 10)
    icol = fc.categorical_column_with_hash_bucket("n", 7, dtype=tf.int64)
    feats = {"s": tf.constant([["a", "b"], ["c", ""]]), "n": tf.constant([3, -1, 12], tf.int64)}
    ids, nids = run([col._ids(feats), icol._ids(feats)])
    expect = [[_hash64("a") % 10, _hash64("b") % 10], [_hash64("c") % 10, -1]]
    np.testing.assert_array_equal(ids, expect)
    np.testing.assert_array_equal(nids, [[_hash64("3") % 7], [-1], [_hash64("12") % 7]])
    # indicator: multi-hot of the ids (the missing "" adds nothing)
    hot = run(fc.input_layer(feats, [fc.indicator_column(col)]))
    want = np.zeros((2, 10), np.float32)
    for r, row in enumerate(expect):
        for i in row:
            if i >= 0:
                want[r, i] += 1
    np.testing.assert_array_equal(hot, want)
    assert col.num_buckets == 10 and col.name == "s"
    with pytest.raises(ValueError):
        fc.categorical_column_with_hash_bucket("s", 0)


def test_hash_bucket_column_takes_a_sparse_feature():
    col = fc.categorical_column_with_hash_bucket("s", 50)
    sp = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], ["x", "y", "z"], [3, 2])
    ids = run(col._ids({"s": sp}))
    np.testing.assert_array_equal(ids, [[_hash64("x") % 50, -1],
                                        [_hash64("y") % 50, _hash64("z") % 50], [-1, -1]])


def test_crossed_column_hashes_as_sparse_cross_hashed():
    a = fc.categorical_column_with_identity("a", 5)
    b = fc.bucketized_column(fc.numeric_column("x"), [0.0, 10.0])
    feats = {"a": tf.constant([[1, 3], [4, -1]], tf.int64), "x": tf.constant([-2.0, 15.0]),
             "s": tf.constant([["p"], ["q"]])}
    cross = fc.crossed_column([a, b], 1000)
    cross_s = fc.crossed_column(["s", b], 97, hash_key=123)
    assert cross.name == "a_X_x_bucketized" and cross.num_buckets == 1000
    ids, sids = run([cross._ids(feats), cross_s._ids(feats)])
    # integer crosses: TF's FingerprintCat64 chain from 0xDECAFCAFFE, the last key fastest
    np.testing.assert_array_equal(ids, [[_cross([1, 0], 1000), _cross([3, 0], 1000)],
                                        [_cross([4, 2], 1000), -1]])
    np.testing.assert_array_equal(sids, [[_cross([_hash64("p"), 0], 97, 123)],
                                         [_cross([_hash64("q"), 2], 97, 123)]])
    # the linear model gives each crossed id one weight
    with pytest.raises(ValueError):
        fc.crossed_column(["s"], 10)
    with pytest.raises(ValueError):
        fc.crossed_column([fc.categorical_column_with_hash_bucket("s", 3), "x"], 10)


def test_vocabulary_file_column(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("red\ngreen\nblue\n")
    col = fc.categorical_column_with_vocabulary_file("c", str(path))
    oov = fc.categorical_column_with_vocabulary_file("c", str(path), num_oov_buckets=3)
    short = fc.categorical_column_with_vocabulary_file("c", str(path), vocabulary_size=2,
                                                       default_value=9)
    feats = {"c": tf.constant([["blue", "red"], ["pink", "green"]])}
    ids, oids, sids = run([col._ids(feats), oov._ids(feats), short._ids(feats)])
    np.testing.assert_array_equal(ids, [[2, 0], [-1, 1]])
    assert 3 <= oids[1, 0] < 6 and list(oids[0]) == [2, 0]
    np.testing.assert_array_equal(sids, [[9, 0], [9, 1]])
    assert col.num_buckets == 3 and oov.num_buckets == 6
    ints = tmp_path / "ints.txt"
    ints.write_text("10\n20\n")
    icol = fc.categorical_column_with_vocabulary_file("n", str(ints), dtype=tf.int64)
    np.testing.assert_array_equal(run(icol._ids({"n": tf.constant([20, 10, 5], tf.int64)})),
                                  [[1], [0], [-1]])
    with pytest.raises(ValueError):
        fc.categorical_column_with_vocabulary_file("c", str(tmp_path / "missing.txt"))


def test_weighted_column_in_linear_model_embedding_and_indicator():
    base = fc.categorical_column_with_identity("ids", 4)
    col = fc.weighted_categorical_column(base, "w")
    assert col.name == "ids_weighted_by_w"
    feats = {"ids": tf.constant([[0, 2], [3, -1]], tf.int64),
             "w": tf.constant([[2.0, 0.5], [3.0, 7.0]])}
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    emb = fc.embedding_column(col, 2, combiner="mean",
                              initializer=tf.constant_initializer(table))
    sq = fc.embedding_column(col, 2, combiner="sqrtn",
                             initializer=tf.constant_initializer(table))
    cols_to_vars = {}
    lin = fc.linear_model(feats, [col], cols_to_vars=cols_to_vars)
    weights = cols_to_vars[col][0]
    set_w = weights.assign(np.array([[1.0], [10.0], [100.0], [1000.0]], np.float32))
    fetches = [lin, fc.input_layer(feats, [emb]), fc.input_layer(feats, [sq]),
               fc.input_layer(feats, [fc.indicator_column(col)])]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(set_w)
        out_lin, out_emb, out_sq, hot = s.run(fetches)
    np.testing.assert_allclose(out_lin, [[2.0 * 1 + 0.5 * 100], [3.0 * 1000]])
    np.testing.assert_allclose(out_emb[0], (2 * table[0] + 0.5 * table[2]) / 2.5, rtol=1e-6)
    np.testing.assert_allclose(out_emb[1], table[3], rtol=1e-6)
    np.testing.assert_allclose(out_sq[0], (2 * table[0] + 0.5 * table[2]) / np.sqrt(4.25),
                               rtol=1e-6)
    np.testing.assert_allclose(hot, [[2, 0, 0.5, 0], [0, 0, 0, 3]])


def test_weighted_column_from_parsed_examples_and_its_gradient():
    col = fc.weighted_categorical_column(
        fc.categorical_column_with_vocabulary_list("word", ["a", "b", "c"]), "freq")
    spec = fc.make_parse_example_spec([col])
    assert spec == {"word": tf.VarLenFeature(tf.string), "freq": tf.VarLenFeature(tf.float32)}

    def example(words, freqs):
        return tf.train.Example(features=tf.train.Features(feature={
            "word": tf.train.Feature(bytes_list=tf.train.BytesList(value=words)),
            "freq": tf.train.Feature(float_list=tf.train.FloatList(value=freqs)),
        })).SerializeToString()
    records = np.array([example([b"c", b"a"], [2.0, 1.0]), example([], []),
                        example([b"b", b"zz", b"c"], [4.0, 8.0, 0.5])], dtype=object)
    feats = tf.parse_example(tf.constant(records), spec)
    table = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0]], np.float32)
    emb = fc.embedding_column(col, 2, combiner="mean",
                              initializer=tf.constant_initializer(table))
    cols_to_vars = {}
    out = fc.input_layer(feats, [emb], cols_to_vars=cols_to_vars)
    var = cols_to_vars[emb][0]
    grad = tf.gradients(tf.reduce_sum(out * tf.constant([[1.0, 2.0]] * 3)), var)[0]
    o, g = run([out, grad])
    # "zz" is out of vocabulary (missing): its weight counts for nothing
    np.testing.assert_allclose(o, [(2 * table[2] + table[0]) / 3, [0, 0],
                                   (4 * table[1] + 0.5 * table[2]) / 4.5], rtol=1e-6)
    # d/d table[id] = (the example's weight of id / its weight sum) * [1, 2]
    np.testing.assert_allclose(g, np.outer([1 / 3, 4 / 4.5, 2 / 3 + 0.5 / 4.5], [1, 2]),
                               rtol=1e-5)


def test_shared_embedding_columns_share_one_table():
    a = fc.categorical_column_with_identity("a", 3)
    b = fc.categorical_column_with_identity("b", 3)
    ea, eb = fc.shared_embedding_columns([a, b], 2, combiner="sum")
    assert ea.name == "a_shared_embedding" and eb.name == "b_shared_embedding"
    feats = {"a": tf.constant([0, 2], tf.int64), "b": tf.constant([[1, 2], [0, -1]], tf.int64)}
    cols_to_vars = {}
    net = fc.input_layer(feats, [ea, eb], cols_to_vars=cols_to_vars)
    assert cols_to_vars[ea][0] is cols_to_vars[eb][0]
    embedding_vars = [v for v in tf.trainable_variables()
                      if "a_b_shared_embedding/embedding_weights" in v.name]
    assert len(embedding_vars) == 1
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        table, out = s.run([cols_to_vars[ea][0], net])
    np.testing.assert_allclose(out, np.concatenate(
        [table[[0, 2]], [table[1] + table[2], table[0]]], 1), rtol=1e-6)
    with pytest.raises(ValueError):
        fc.shared_embedding_columns([a, fc.categorical_column_with_identity("c", 4)], 2)


def test_make_parse_example_spec_covers_every_column():
    num = fc.numeric_column("age", default_value=30.0)
    spec = fc.make_parse_example_spec([
        num, fc.bucketized_column(num, [18.0, 65.0]),
        fc.indicator_column(fc.categorical_column_with_vocabulary_list("edu", ["a", "b"])),
        fc.embedding_column(fc.categorical_column_with_hash_bucket("job", 10), 2),
        fc.weighted_categorical_column(fc.categorical_column_with_identity("id", 4), "wt"),
        fc.crossed_column(["country", fc.categorical_column_with_identity("k", 3)], 10),
    ])
    assert spec == {"age": tf.FixedLenFeature((1,), tf.float32, 30.0),
                    "edu": tf.VarLenFeature(tf.string), "job": tf.VarLenFeature(tf.string),
                    "id": tf.VarLenFeature(tf.int64), "wt": tf.VarLenFeature(tf.float32),
                    "country": tf.VarLenFeature(tf.string), "k": tf.VarLenFeature(tf.int64)}
    with pytest.raises(ValueError):
        fc.make_parse_example_spec([fc.numeric_column("x"),
                                    fc.categorical_column_with_identity("x", 3)])


# ---- wide & deep on a census-like dataset -----------------------------------------------------

_EDU = ["HS", "Bachelors", "Masters", "Doctorate"]
_JOBS = ["exec", "clerk", "sales", "tech", "farm"]


def _census(n, seed):
    rng = np.random.RandomState(seed)
    age = rng.uniform(18, 80, n).astype(np.float32)
    edu = rng.choice(_EDU, n)
    job = rng.choice(_JOBS, n)
    hours = rng.uniform(10, 60, n).astype(np.float32)
    score = ((age > 40).astype(int) + np.isin(edu, ["Masters", "Doctorate"]) +
             (job == "exec") + (hours > 45))
    label = (score >= 2).astype(np.int64)
    flip = rng.rand(n) < 0.05
    label[flip] = 1 - label[flip]
    return {"age": age, "education": edu.astype(object), "occupation": job.astype(object),
            "hours": hours}, label


def _columns():
    age = fc.numeric_column("age")
    hours = fc.numeric_column("hours")
    age_b = fc.bucketized_column(age, [30.0, 40.0, 50.0, 60.0])
    edu = fc.categorical_column_with_vocabulary_list("education", _EDU)
    job = fc.categorical_column_with_hash_bucket("occupation", 20)
    cross = fc.crossed_column([age_b, "education"], 50)
    wide = [age_b, edu, job, cross, hours]
    deep = [fc.numeric_column("age", normalizer_fn=lambda x: (x - 50.0) / 20.0),
            fc.numeric_column("hours", normalizer_fn=lambda x: (x - 35.0) / 15.0),
            fc.indicator_column(edu), fc.embedding_column(job, 3)]
    return wide, deep


def _dict_input_fn(features, labels):
    def input_fn():
        feats = {k: tf.constant(v) for k, v in features.items()}
        return feats, tf.constant(labels.reshape(-1, 1))
    return input_fn


def _predict_input_fn(features):
    """One pass over `features` (predict stops when the input ends)."""
    def input_fn():
        ds = tf.data.Dataset.from_tensor_slices(dict(features)).batch(128)
        return ds.make_one_shot_iterator().get_next()
    return input_fn


def _example_input_fn(features, labels, spec, with_labels=True):
    records = []
    for i in range(len(labels)):
        ex = tf.train.Example(features=tf.train.Features(feature={
            "age": tf.train.Feature(float_list=tf.train.FloatList(value=[features["age"][i]])),
            "hours": tf.train.Feature(
                float_list=tf.train.FloatList(value=[features["hours"][i]])),
            "education": tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[features["education"][i].encode()])),
            "occupation": tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[features["occupation"][i].encode()])),
        }))
        records.append(ex.SerializeToString())

    def input_fn():
        if not with_labels:   # one pass, in batches, for predict
            ds = tf.data.Dataset.from_tensor_slices(np.array(records, dtype=object))
            return tf.parse_example(ds.batch(128).make_one_shot_iterator().get_next(), spec)
        serialized = tf.constant(np.array(records, dtype=object))
        feats = tf.parse_example(serialized, spec)
        return feats, tf.constant(labels.reshape(-1, 1))
    return input_fn


def test_dnn_linear_combined_classifier_trains_evaluates_predicts(tmp_path):
    x, y = _census(400, 0)
    xt, yt = _census(200, 1)
    wide, deep = _columns()
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "wd"), linear_feature_columns=wide,
        dnn_feature_columns=deep, dnn_hidden_units=[8],
        dnn_optimizer=tf.train.AdagradOptimizer(0.1),
        config=tf.estimator.RunConfig(tf_random_seed=3))
    est.train(_dict_input_fn(x, y), steps=60)
    names = est.get_variable_names()
    assert any(n.startswith("dnn/") for n in names)
    assert any(n.startswith("linear/") for n in names)
    assert est.get_variable_value("global_step") == 60
    metrics = est.evaluate(_dict_input_fn(xt, yt), steps=1)
    assert metrics["accuracy"] > 0.8, metrics
    assert metrics["auc"] > 0.85, metrics
    preds = list(est.predict(_predict_input_fn(xt)))
    assert len(preds) == 200
    ids = np.array([p["class_ids"][0] for p in preds])
    assert abs(np.mean(ids == yt) - metrics["accuracy"]) < 1e-6
    np.testing.assert_allclose(preds[0]["probabilities"].sum(), 1.0, rtol=1e-5)

    # the same model fed tf.Examples parsed with make_parse_example_spec
    spec = fc.make_parse_example_spec(wide + deep)
    assert spec["education"] == tf.VarLenFeature(tf.string)
    est2 = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "wd_ex"), linear_feature_columns=wide,
        dnn_feature_columns=deep, dnn_hidden_units=[8],
        dnn_optimizer=tf.train.AdagradOptimizer(0.1),
        config=tf.estimator.RunConfig(tf_random_seed=3))
    est2.train(_example_input_fn(x, y, spec), steps=60)
    metrics2 = est2.evaluate(_example_input_fn(xt, yt, spec), steps=1)
    assert metrics2["accuracy"] > 0.8, metrics2
    # dense and parsed (sparse) features give one model: same predictions
    np.testing.assert_allclose(metrics2["accuracy"], metrics["accuracy"], atol=0.03)
    preds2 = list(est2.predict(_example_input_fn(xt, yt, spec, with_labels=False)))
    assert len(preds2) == 200


def test_dnn_linear_combined_defaults_and_errors(tmp_path):
    x, y = _census(100, 2)
    wide, _ = _columns()
    # linear only (Ftrl default); a regressor with both parts (Adagrad default at 0.001)
    est = tf.estimator.DNNLinearCombinedClassifier(model_dir=str(tmp_path / "w"),
                                                   linear_feature_columns=wide)
    est.train(_dict_input_fn(x, y), steps=3)
    assert not any(n.startswith("dnn/") for n in est.get_variable_names())
    reg = tf.estimator.DNNLinearCombinedRegressor(
        model_dir=str(tmp_path / "r"), linear_feature_columns=[fc.numeric_column("age")],
        dnn_feature_columns=[fc.numeric_column("hours")], dnn_hidden_units=[4])
    reg.train(_dict_input_fn(x, y.astype(np.float32)), steps=1)
    before_dnn = reg.get_variable_value("dnn/logits/bias")
    before_lin = reg.get_variable_value("linear/linear_model/bias_weights")
    reg.train(_dict_input_fn(x, y.astype(np.float32)), steps=1)
    assert not np.allclose(reg.get_variable_value("dnn/logits/bias"), before_dnn)
    assert not np.allclose(reg.get_variable_value("linear/linear_model/bias_weights"),
                           before_lin)
    out = reg.evaluate(_dict_input_fn(x, y.astype(np.float32)), steps=1)
    assert "average_loss" in out
    with pytest.raises(ValueError):
        tf.estimator.DNNLinearCombinedClassifier()
    with pytest.raises(ValueError):
        tf.estimator.DNNLinearCombinedClassifier(dnn_feature_columns=[fc.numeric_column("a")])


# ---- decode_csv, serialize_tensor / parse_tensor ----------------------------------------------

def test_decode_csv_matches_python_csv():
    lines = ['1,"a,b",2.5,x', '7,,0.25,"q ""r"""', '-3,plain,,z']
    rec = tf.placeholder(tf.string, [None])
    cols = tf.io.decode_csv(rec, record_defaults=[[0], ["dflt"], [9.5], [""]])
    got = run(cols, {rec: np.array(lines, dtype=object)})
    rows = list(csv.reader(_io.StringIO("\n".join(lines))))
    np.testing.assert_array_equal(got[0], [int(r[0]) for r in rows])
    assert [v.decode() for v in got[1]] == [r[1] or "dflt" for r in rows]
    np.testing.assert_allclose(got[2], [float(r[2]) if r[2] else 9.5 for r in rows])
    assert [v.decode() for v in got[3]] == [r[3] for r in rows]
    assert got[0].dtype == np.int32 and got[2].dtype == np.float32
    sel = tf.decode_csv(rec, [[0.0], [""]], select_cols=[2, 3], na_value="NA")
    a, b = run(sel, {rec: np.array(["x,y,NA,w", "1;2;3;4"], dtype=object)[:1]})
    np.testing.assert_allclose(a, [0.0])   # "NA" is the default
    assert list(b) == [b"w"]
    semi = run(tf.io.decode_csv(rec, [[0], [0]], field_delim=";", use_quote_delim=False),
               {rec: np.array(['3;"4"', "5;6"], dtype=object)[1:]})
    np.testing.assert_array_equal(semi, [[5], [6]])
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(cols, {rec: np.array(["1,2"], dtype=object)})


@pytest.mark.parametrize("value,dtype", [
    (np.array([1.0, 2.0], np.float32), tf.float32),
    (np.array(7, np.int32), tf.int32),
    (np.arange(6, dtype=np.int64).reshape(2, 3) - 3, tf.int64),
    (np.array([[b"a", b"bc"]], dtype=object), tf.string),
    (np.zeros((0, 2), np.float64), tf.float64),
])
def test_serialize_parse_tensor_round_trip(value, dtype):
    ph = tf.placeholder(dtype)
    s = tf.io.serialize_tensor(ph)
    back = tf.io.parse_tensor(s, dtype)
    data, out = run([s, back], {ph: value})
    np.testing.assert_array_equal(out, value)
    assert out.shape == value.shape


def test_serialize_tensor_writes_tf_tensorproto_bytes():
    # the bytes TF 1.15 gives: dtype, tensor_shape {dim {size}}, tensor_content / string_val
    s = run([tf.io.serialize_tensor(tf.constant([1.0, 2.0])),
             tf.io.serialize_tensor(tf.constant(7)),
             tf.io.serialize_tensor(tf.constant(["ab"]))])
    assert s[0] == b'\x08\x01\x12\x04\x12\x02\x08\x02"\x08\x00\x00\x80?\x00\x00\x00@'
    assert s[1] == b'\x08\x03\x12\x00"\x04\x07\x00\x00\x00'
    assert s[2] == b"\x08\x07\x12\x04\x12\x02\x08\x01B\x02ab"
    # typed value fields (as tf.make_tensor_proto writes small tensors) parse too:
    # int_val packed [5, -1] for an int32 [2]
    proto = b"\x08\x03\x12\x04\x12\x02\x08\x02:\x0b\x05\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
    np.testing.assert_array_equal(run(tf.io.parse_tensor(tf.constant(proto), tf.int32)),
                                  [5, -1])
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(tf.io.parse_tensor(tf.constant(s[1]), tf.float32))


def _varint(n):
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def test_parse_tensor_refuses_hostile_bytes():
    # A float [2^40, 2^40] shape with one float_val (TF fills a shape with its last value):
    # refused before anything is allocated.
    dim = b"\x08" + _varint(1 << 40)
    shape = (b"\x12" + _varint(len(dim)) + dim) * 2
    huge = b"\x08\x01\x12" + _varint(len(shape)) + shape + b"\x2d\x00\x00\x80\x3f"
    with pytest.raises(tf.errors.InvalidArgumentError, match="more than"):
        run(tf.io.parse_tensor(tf.constant(huge), tf.float32))
    for bad in (b"\x08" + b"\xff" * 12,            # a varint of 12 bytes
                b"\x08\x01\x22\x10\x00\x00",       # content shorter than it says
                b"\x08\x01\x12\x04\x12\x02\x08\x03\x22\x04\x00\x00\x80\x3f"):  # 1 value, shape [3]
        with pytest.raises(tf.errors.InvalidArgumentError):
            run(tf.io.parse_tensor(tf.constant(bad), tf.float32))


# ---- sparse ops -------------------------------------------------------------------------------

def _dense(v):
    out = np.zeros(v.dense_shape, v.values.dtype)
    for idx, val in zip(v.indices, v.values):
        out[tuple(idx)] = val
    return out


def test_sparse_concat_matches_numpy():
    rng = np.random.RandomState(0)
    a = rng.randint(0, 3, (3, 4)).astype(np.float32) * rng.rand(3, 4).astype(np.float32)
    b = rng.randint(0, 3, (3, 2)).astype(np.float32)
    c = rng.randint(0, 2, (2, 4)).astype(np.float32)
    sa, sb, sc = tf.sparse.from_dense(a), tf.sparse.from_dense(b), tf.sparse.from_dense(c)
    r1, r0 = run([tf.sparse.concat(1, [sa, sb]), tf.sparse_concat(0, [sa, sc])])
    np.testing.assert_array_equal(_dense(r1), np.concatenate([a, b], 1))
    np.testing.assert_array_equal(_dense(r0), np.concatenate([a, c], 0))
    for r in (r1, r0):   # row-major order
        lin = [np.ravel_multi_index(tuple(i), r.dense_shape) for i in r.indices]
        assert lin == sorted(lin)
    # expand_nonconcat_dim: the other dimension is the largest
    re = run(tf.sparse.concat(0, [sb, sc], expand_nonconcat_dim=True))
    want = np.zeros((5, 4), np.float32)
    want[:3, :2], want[3:] = b, c
    np.testing.assert_array_equal(re.dense_shape, [5, 4])
    np.testing.assert_array_equal(_dense(re), want)
    with pytest.raises(ValueError):
        tf.sparse.concat(0, [sa, sb])
    # strings, and the gradient to the values (each value moves to one place)
    s1 = tf.SparseTensor([[0, 2], [1, 0]], ["a", "b"], [2, 3])
    s2 = tf.SparseTensor([[0, 1]], ["d"], [2, 4])
    rs = run(tf.sparse.concat(1, [s1, s2]))
    np.testing.assert_array_equal(rs.indices, [[0, 2], [0, 4], [1, 0]])
    assert list(rs.values) == [b"a", b"d", b"b"]
    v1, v2 = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.float32, [1])
    out = tf.sparse.concat(1, [tf.SparseTensor([[0, 2], [1, 0]], v1, [2, 3]),
                               tf.SparseTensor([[0, 1]], v2, [2, 4])])
    w = tf.constant([1.0, 10.0, 100.0])
    g = run(tf.gradients(tf.reduce_sum(out.values * w), [v1, v2]),
            {v1: [1.0, 2.0], v2: [3.0]})
    np.testing.assert_allclose(g[0], [1.0, 100.0])
    np.testing.assert_allclose(g[1], [10.0])


def test_sparse_fill_empty_rows_matches_numpy():
    sp = tf.SparseTensor([[0, 1], [2, 0], [2, 3]], [5.0, 6.0, 7.0], [5, 4])
    out, empty = tf.sparse.fill_empty_rows(sp, -1.0)
    o, e = run([out, empty])
    np.testing.assert_array_equal(e, [False, True, False, True, True])
    np.testing.assert_array_equal(o.indices, [[0, 1], [1, 0], [2, 0], [2, 3], [3, 0], [4, 0]])
    np.testing.assert_array_equal(o.values, [5, -1, 6, 7, -1, -1])
    np.testing.assert_array_equal(o.dense_shape, [5, 4])
    so, se = run(tf.sparse.fill_empty_rows(
        tf.SparseTensor([[1, 0]], ["x"], [2, 2]), ""))
    assert list(so.values) == [b"", b"x"] and list(se) == [True, False]
    v = tf.placeholder(tf.float32, [3])
    filled, _ = tf.sparse.fill_empty_rows(tf.SparseTensor(sp.indices, v, [5, 4]), 0.0)
    g = run(tf.gradients(tf.reduce_sum(filled.values * tf.range(1.0, 7.0)), v),
            {v: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(g[0], [1.0, 3.0, 4.0])


def test_sparse_slice_matches_numpy():
    rng = np.random.RandomState(1)
    a = (rng.rand(4, 6) > 0.5) * np.arange(1, 25, dtype=np.float32).reshape(4, 6)
    sp = tf.sparse.from_dense(a)
    for start, size in [([0, 0], [2, 3]), ([1, 2], [3, 10]), ([3, 5], [5, 5]),
                        ([4, 0], [1, 1])]:
        r = run(tf.sparse.slice(sp, start, size))
        want = a[start[0]:start[0] + size[0], start[1]:start[1] + size[1]]
        np.testing.assert_array_equal(r.dense_shape, want.shape)
        np.testing.assert_array_equal(_dense(r), want)
    r3 = run(tf.sparse_slice(tf.SparseTensor([[0, 1, 2], [1, 1, 1]], [1, 2], [2, 3, 3]),
                             [1, 0, 1], [1, 2, 2]))
    np.testing.assert_array_equal(r3.indices, [[0, 1, 0]])
    np.testing.assert_array_equal(r3.dense_shape, [1, 2, 2])


def test_cross_product_order_is_last_key_fastest():
    feats = {"a": tf.constant([[1, 2]], tf.int64), "b": tf.constant([[7, 8, 9]], tf.int64)}
    ids = run(fc.crossed_column(["a", "b"], 10 ** 6)._ids(feats))
    want = [_cross(list(p), 10 ** 6) for p in itertools.product([1, 2], [7, 8, 9])]
    np.testing.assert_array_equal(ids, [want])
