"""tf.train.export_meta_graph / import_meta_graph (shardflow/meta_graph.py): a program that
never builds the model restores it from the meta graph and a checkpoint, runs it and trains on."""
import json

import numpy as np
import pytest

import shardflow as tf
from shardflow import meta_graph


def build_and_save(tmp_path):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y_ = tf.placeholder(tf.float32, [None, 1], name="y_")
        w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        b = tf.Variable(0.5, name="b")
        y = tf.identity(tf.matmul(x, w) + b, name="y")
        loss = tf.reduce_mean(tf.square(y - y_), name="loss")
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        tf.add_to_collection("train_op", train)
        tf.add_to_collection("outputs", y)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(w, [[1.0], [2.0], [3.0]]))
            path = saver.save(sess, str(tmp_path / "model"), global_step=7, write_state=True)
        meta_graph.export_meta_graph(path + ".meta")
        return path


def test_import_restores_variables_collections_and_trains_on(tmp_path):
    path = build_and_save(tmp_path)
    xv = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0]], np.float32)
    g = tf.Graph()
    with g.as_default():
        saver = meta_graph.import_meta_graph(path + ".meta")
        assert sorted(v.op.name for v in tf.global_variables()) == ["b", "global_step", "w"]
        assert sorted(v.op.name for v in tf.trainable_variables()) == ["b", "w"]
        y = g.get_tensor_by_name("y:0")
        assert tf.get_collection("outputs") == [y]
        train = tf.get_collection("train_op")[0]
        with tf.Session() as sess:
            saver.restore(sess, path)
            np.testing.assert_allclose(sess.run(y, {"x:0": xv}), [[6.5], [2.5]])
            assert sess.run(tf.train.get_global_step()) == 0   # saved before any step
            before = sess.run("loss:0", {"x:0": xv, "y_:0": [[0.0], [0.0]]})
            for _ in range(5):
                sess.run(train, {"x:0": xv, "y_:0": [[0.0], [0.0]]})
            after = sess.run("loss:0", {"x:0": xv, "y_:0": [[0.0], [0.0]]})
            assert after < before and sess.run(tf.train.get_global_step()) == 5


def test_import_under_a_scope_and_bad_files(tmp_path):
    path = build_and_save(tmp_path)
    g = tf.Graph()
    with g.as_default():
        meta_graph.import_meta_graph(path + ".meta", import_scope="restored")
        assert g.get_tensor_by_name("restored/y:0") is not None
        assert "restored/w" in [v.op.name for v in tf.global_variables()]
    bad = tmp_path / "bad.meta"
    bad.write_text("not json")
    with pytest.raises(tf.errors.DataLossError, match="not a shardflow meta graph"):
        meta_graph.import_meta_graph(str(bad))
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(tf.errors.DataLossError, match="format"):
        meta_graph.import_meta_graph(str(bad))
    # Regression: JSON nested past Python's recursion limit raised a bare RecursionError.
    bad.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(tf.errors.DataLossError, match="not a shardflow meta graph"):
        meta_graph.import_meta_graph(str(bad))
    with pytest.raises(tf.errors.NotFoundError):
        meta_graph.import_meta_graph(str(tmp_path / "missing.meta"))


def test_the_imported_saver_keeps_the_names_a_var_list_dict_gave(tmp_path):
    """A checkpoint written by Saver({"weights": w}) holds "weights": import_meta_graph's Saver
    restores it into w under that name (TF1 keeps the Saver in the meta graph), and a subset
    Saver's meta graph gives a Saver of that subset."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable([[1.0], [2.0]], name="w")
        tf.Variable(5.0, name="unsaved")
        tf.identity(tf.matmul(x, w), name="y")
        saver = tf.train.Saver({"weights": w})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "renamed"))
    assert [name for name, _ in tf.train.list_variables(path)] == ["weights"]
    g = tf.Graph()
    with g.as_default():
        imported = tf.train.import_meta_graph(path + ".meta")
        with tf.Session() as sess:
            imported.restore(sess, path)
            y = sess.run("y:0", {"x:0": np.array([[1.0, 1.0]], np.float32)})
    np.testing.assert_allclose(y, [[3.0]])
    # A damaged record is named.
    meta = json.load(open(path + ".meta"))
    meta["saver"] = {"variables": [["weights"]]}
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.DataLossError, match="saver record"):
            tf.train.import_meta_graph(meta)
