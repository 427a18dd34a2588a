"""TF 1.15's warm-starting (shardflow/warm_starting_util.py): tf.train.warm_start choosing
variables by expression, list or object, under other names, with vocabularies remapped by word
(rows or columns, OOV buckets, backup initializer), partitioned variables; Estimator's
warm_start_from with WarmStartSettings."""

import numpy as np
import pytest

import shardflow as tf
from shardflow import estimator


def _save(tmp_path, build):
    """Runs `build` in a new graph, initialises, saves; returns {name: value} and the path."""
    with tf.Graph().as_default():
        variables = build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = {v.op.name: sess.run(v) for v in variables}
            path = tf.train.Saver().save(sess, str(tmp_path / "old" / "model"))
    return values, path


def _old_model():
    with tf.variable_scope("net"):
        w = tf.get_variable("w", [3, 2], initializer=tf.random_normal_initializer(seed=1))
        b = tf.get_variable("b", [2], initializer=tf.constant_initializer(5.0))
        steps = tf.get_variable("steps", [], initializer=tf.constant_initializer(9.0),
                                trainable=False)
    return [w, b, steps]


def _run_init(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


def test_warm_start_chooses_variables_by_expression_list_or_object(tmp_path):
    old, path = _save(tmp_path, _old_model)
    # The default ".*": every trainable variable; non-trainable ones keep their initializer.
    with tf.Graph().as_default():
        with tf.variable_scope("net"):
            w = tf.get_variable("w", [3, 2], initializer=tf.zeros_initializer())
            b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
            steps = tf.get_variable("steps", [], initializer=tf.zeros_initializer(),
                                    trainable=False)
        tf.train.warm_start(str(tmp_path / "old"))
        got = _run_init([w, b, steps])
    np.testing.assert_array_equal(got[0], old["net/w"])
    np.testing.assert_array_equal(got[1], old["net/b"])
    assert got[2] == 0.0
    # A list of expressions reaches non-trainable variables; a list of Variables, just those.
    for choose in (["net/st"], "objects"):
        with tf.Graph().as_default():
            with tf.variable_scope("net"):
                b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
                steps = tf.get_variable("steps", [], initializer=tf.zeros_initializer(),
                                        trainable=False)
            tf.train.warm_start(path, [steps] if choose == "objects" else choose)
            got = _run_init([b, steps])
        assert list(got[0]) == [0.0, 0.0] and got[1] == 9.0


def test_warm_start_under_other_names_and_its_errors(tmp_path):
    old, path = _save(tmp_path, _old_model)
    with tf.Graph().as_default():
        kernel = tf.get_variable("dense/kernel", [3, 2], initializer=tf.zeros_initializer())
        tf.train.warm_start(path, "dense", var_name_to_prev_var_name={"dense/kernel": "net/w"})
        np.testing.assert_array_equal(_run_init(kernel), old["net/w"])
    with tf.Graph().as_default():
        tf.get_variable("other", [3, 2])
        with pytest.raises(ValueError, match="Tensor other is not found"):
            tf.train.warm_start(path)
    with tf.Graph().as_default():
        tf.get_variable("net/w", [3, 2])
        with pytest.raises(ValueError, match="names variables not warm-started: nothing"):
            tf.train.warm_start(path, var_name_to_prev_var_name={"nothing": "net/w"})
    with tf.Graph().as_default():
        tf.get_variable("net/w", [4, 2])
        with pytest.raises(ValueError, match="Shape of variable net/w"):
            tf.train.warm_start(path)


def _vocab(tmp_path, name, words):
    path = tmp_path / name
    path.write_text("".join(w + "\n" for w in words))
    return str(path)


def test_vocabulary_rows_and_columns_move_with_their_words(tmp_path):
    old_words = ["apple", "banana", "cherry", "date"]
    new_words = ["cherry", "fig", "apple", "grape"]

    def build():
        emb = tf.get_variable("emb", [5, 2], initializer=tf.random_normal_initializer(seed=3))
        out = tf.get_variable("out", [2, 4], initializer=tf.random_normal_initializer(seed=4))
        return [emb, out]
    old, path = _save(tmp_path, build)
    old_vocab = _vocab(tmp_path, "old.txt", old_words)
    new_vocab = _vocab(tmp_path, "new.txt", new_words)
    with tf.Graph().as_default():
        emb = tf.get_variable("emb", [5, 2], initializer=tf.constant_initializer(-1.0))
        out = tf.get_variable("out", [2, 3], initializer=tf.constant_initializer(-2.0))
        tf.train.warm_start(path, var_name_to_vocab_info={
            # rows: the four new words and one OOV bucket; new rows from the backup.
            "emb": tf.estimator.VocabInfo(new_vocab, 4, 1, old_vocab,
                                          backup_initializer=tf.constant_initializer(7.0)),
            # columns: the first three new words, from the first three old ones.
            "out": tf.estimator.VocabInfo(new_vocab, 3, 0, old_vocab, old_vocab_size=3,
                                          axis=1)})
        got_emb, got_out = _run_init([emb, out])
    want_emb = np.full((5, 2), 7.0, np.float32)
    want_emb[0], want_emb[2] = old["emb"][2], old["emb"][0]   # cherry, apple
    np.testing.assert_array_equal(got_emb, want_emb)
    want_out = np.zeros((2, 3), np.float32)                   # no backup: zeros, as TF1's
    want_out[:, 0], want_out[:, 2] = old["out"][:, 2], old["out"][:, 0]
    np.testing.assert_array_equal(got_out, want_out)
    with tf.Graph().as_default():
        tf.get_variable("emb", [6, 2])
        with pytest.raises(ValueError, match=r"needs 5 along axis 0 \(4 words \+ 1 OOV"):
            tf.train.warm_start(path, "emb", var_name_to_vocab_info={
                "emb": tf.estimator.VocabInfo(new_vocab, 4, 1, old_vocab)})
    with tf.Graph().as_default():
        tf.get_variable("emb", [5, 2])
        with pytest.raises(ValueError, match="has 4 words, fewer than the 9 asked"):
            tf.train.warm_start(path, "emb", var_name_to_vocab_info={
                "emb": tf.estimator.VocabInfo(new_vocab, 9, 0, old_vocab)})


def test_partitioned_variables_warm_start_whole_with_a_vocabulary(tmp_path):
    words = ["w%d" % i for i in range(6)]

    def build():
        return list(tf.get_variable("emb", [6, 3], partitioner=tf.fixed_size_partitioner(2),
                                    initializer=tf.random_normal_initializer(seed=5)))
    old, path = _save(tmp_path, build)
    whole = np.concatenate([old["emb/part_0"], old["emb/part_1"]], 0)
    new_words = list(reversed(words))
    with tf.Graph().as_default():
        emb = tf.get_variable("emb", [6, 3], partitioner=tf.fixed_size_partitioner(3))
        tf.train.warm_start(path, var_name_to_vocab_info={"emb": tf.estimator.VocabInfo(
            _vocab(tmp_path, "new.txt", new_words), 6, 0, _vocab(tmp_path, "old.txt", words))})
        got = np.concatenate(_run_init(list(emb)), 0)
    np.testing.assert_array_equal(got, whole[::-1])


def _model_fn(features, labels, mode, params):
    logits = tf.layers.dense(features["x"], 2, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    train_op = tf.train.GradientDescentOptimizer(params["lr"]).minimize(
        loss, global_step=tf.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_estimator_warm_starts_what_its_settings_choose(tmp_path):
    rng = np.random.RandomState(0)
    x = rng.rand(40, 3).astype(np.float32)
    y = (x.sum(1) > 1.5).astype(np.int64)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(10)
    source = estimator.Estimator(_model_fn, model_dir=str(tmp_path / "a"), params={"lr": 0.5},
                                 config=estimator.RunConfig(tf_random_seed=1))
    source.train(input_fn, steps=4)
    settings = estimator.WarmStartSettings(str(tmp_path / "a"), vars_to_warm_start="logits/bias")
    warm = estimator.Estimator(_model_fn, model_dir=str(tmp_path / "b"), params={"lr": 0.0},
                               warm_start_from=settings,
                               config=estimator.RunConfig(tf_random_seed=2))
    warm.train(input_fn, steps=1)
    np.testing.assert_array_equal(warm.get_variable_value("logits/bias"),
                                  source.get_variable_value("logits/bias"))
    assert not np.array_equal(warm.get_variable_value("logits/kernel"),
                              source.get_variable_value("logits/kernel"))
    # A checkpoint of its own wins over warm-starting: training continues from it.
    warm._params["lr"] = 0.5
    warm.train(input_fn, steps=2)
    assert int(warm.get_variable_value("global_step")) == 3
