"""tf.saved_model (shardflow/saved_model.py): simple_save / SavedModelBuilder export a graph and
its variables; loader.load brings them back into an empty graph without the model's code."""
import numpy as np
import pytest

import shardflow as tf
from shardflow import saved_model


def export(tmp_path, use_builder=False):
    export_dir = str(tmp_path / "export" / "1")
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable([[1.0], [-1.0]], name="w")
        y = tf.nn.relu(tf.matmul(x, w), name="y")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(w, [[2.0], [3.0]]))
            if use_builder:
                b = saved_model.builder.SavedModelBuilder(export_dir)
                sig = saved_model.signature_def_utils.predict_signature_def({"in": x}, {"out": y})
                b.add_meta_graph_and_variables(sess, [saved_model.tag_constants.SERVING],
                                               signature_def_map={"predict": sig})
                b.save()
            else:
                saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})
    return export_dir


@pytest.mark.parametrize("use_builder", [False, True])
def test_export_then_load_in_a_fresh_graph(tmp_path, use_builder):
    export_dir = export(tmp_path, use_builder)
    key, i, o = ("predict", "in", "out") if use_builder else ("serving_default", "x", "y")
    assert saved_model.contains_saved_model(export_dir)
    with tf.Session(graph=tf.Graph()) as sess:
        meta = saved_model.loader.load(sess, [saved_model.tag_constants.SERVING], export_dir)
        sig = meta.signature_def[key]
        out = sess.run(sig.outputs[o].name, {sig.inputs[i].name: [[1.0, 1.0], [1.0, -2.0]]})
    np.testing.assert_allclose(out, [[5.0], [0.0]])


def test_errors(tmp_path):
    export_dir = export(tmp_path)
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.AlreadyExistsError, match="already exists"):
            saved_model.simple_save(sess, export_dir, {}, {})
        with pytest.raises(RuntimeError, match="tags"):
            saved_model.loader.load(sess, ["train"], export_dir)
        with pytest.raises(tf.errors.NotFoundError, match="saved_model.json"):
            saved_model.loader.load(sess, ["serve"], str(tmp_path))


def test_a_saved_model_json_with_wrong_fields_is_data_loss_naming_it(tmp_path):
    # Regression: valid JSON with a null or missing field raised TypeError, KeyError or
    # AttributeError (or "stat: path should be string"); a directory there IsADirectoryError.
    import json
    import os
    import shutil
    good = export(tmp_path)
    record = json.load(open(os.path.join(good, "saved_model.json")))
    cases = {"tags": None, "meta_graph": None, "signature_def": None, "init_op": 3}
    for field, value in cases.items():
        broken = str(tmp_path / ("broken_" + field))
        shutil.copytree(good, broken)
        with open(os.path.join(broken, "saved_model.json"), "w") as f:
            json.dump(dict(record, **{field: value}), f)
        with tf.Session(graph=tf.Graph()) as sess:
            with pytest.raises(tf.errors.DataLossError, match="'%s'" % field):
                saved_model.loader.load(sess, ["serve"], broken)
    as_dir = str(tmp_path / "as_dir")
    shutil.copytree(good, as_dir)
    os.remove(os.path.join(as_dir, "saved_model.json"))
    os.mkdir(os.path.join(as_dir, "saved_model.json"))
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(tf.errors.DataLossError, match="cannot read"):
            saved_model.loader.load(sess, ["serve"], as_dir)
