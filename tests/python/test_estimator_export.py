"""Estimator.export_savedmodel, tf.estimator.export (receivers, export outputs, exporters) and
tf.contrib.predictor: an exported model serves the same predictions as Estimator.predict, in
this process and in a fresh one that has no model code."""

import os
import subprocess
import sys

import numpy as np
import pytest

import shardflow as tf
from shardflow import estimator

SEED = 11


def _data(n=160, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(n, 3)).astype(np.float32)
    y = (x[:, 0] - x[:, 1] > 0).astype(np.int64)
    return x, y


def _model_fn(features, labels, mode, params):
    logits = tf.layers.dense(features["x"], 2, name="logits")
    probabilities = tf.nn.softmax(logits)
    classes = tf.argmax(logits, 1)
    predictions = {"class": classes, "probabilities": probabilities}
    if mode == estimator.ModeKeys.PREDICT:
        outputs = None
        if params.get("export_outputs"):
            outputs = {
                "serving_default": estimator.export.PredictOutput(predictions),
                "scores": estimator.export.ClassificationOutput(scores=probabilities),
                "margin": estimator.export.RegressionOutput(logits[:, 1] - logits[:, 0])}
        return estimator.EstimatorSpec(mode, predictions=predictions, export_outputs=outputs)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(
        loss, global_step=tf.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                   eval_metric_ops={"accuracy": tf.metrics.accuracy(labels,
                                                                                    classes)})


def _input_fn(x, y, epochs):
    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat(epochs).batch(20)
    return input_fn


def _serving_fn():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    return estimator.export.ServingInputReceiver({"x": x}, {"x": x})


def _trained(tmp_path, **params):
    x, y = _data()
    est = estimator.Estimator(_model_fn, model_dir=str(tmp_path / "model"), params=params,
                              config=estimator.RunConfig(tf_random_seed=SEED))
    est.train(_input_fn(x, y, 3))
    return est, x


def _predicted(est, x):
    fn = estimator.inputs.numpy_input_fn({"x": x}, shuffle=False)
    out = list(est.predict(fn))
    return (np.array([p["class"] for p in out]), np.stack([p["probabilities"] for p in out]))


def test_export_serves_the_estimators_predictions(tmp_path):
    est, x = _trained(tmp_path, export_outputs=True)
    classes, probabilities = _predicted(est, x)
    path = est.export_savedmodel(str(tmp_path / "export"), _serving_fn,
                                 assets_extra={"vocab/readme.txt": __file__})
    assert isinstance(path, bytes)                      # as TF1
    assert os.path.dirname(path.decode()) == str(tmp_path / "export")
    assert os.path.basename(path.decode()).isdigit()
    assert os.path.isfile(os.path.join(path.decode(), "assets.extra", "vocab", "readme.txt"))
    assert tf.saved_model.contains_saved_model(path)

    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], path)
        sigs = meta.signature_def
        assert sorted(sigs) == ["margin", "scores", "serving_default"]
        default = sigs["serving_default"]
        assert sorted(default.inputs) == ["x"]
        assert sorted(default.outputs) == ["class", "probabilities"]
        out = sess.run({k: v.name for k, v in default.outputs.items()},
                       {default.inputs["x"].name: x})
        np.testing.assert_array_equal(out["class"], classes)
        np.testing.assert_allclose(out["probabilities"], probabilities, rtol=1e-5, atol=1e-6)
        # A float receiver: the classify/regress outputs are served as predict signatures.
        assert sigs["scores"].method_name == "tensorflow/serving/predict"
        assert sorted(sigs["scores"].outputs) == ["scores"]
        margin = sess.run(sigs["margin"].outputs["outputs"].name,
                          {sigs["margin"].inputs["x"].name: x})
        logit_gap = np.log(probabilities[:, 1]) - np.log(probabilities[:, 0])
        np.testing.assert_allclose(margin, logit_gap, rtol=1e-4, atol=1e-4)

    predict = tf.contrib.predictor.from_saved_model(path)
    out = predict({"x": x})
    np.testing.assert_array_equal(out["class"], classes)
    assert set(predict.feed_tensors) == {"x"}
    with pytest.raises(ValueError, match="unknown inputs"):
        predict({"x": x, "y": x})
    with pytest.raises(tf.errors.NotFoundError, match="no signature 'nope'"):
        tf.contrib.predictor.from_saved_model(path, signature_def_key="nope")
    # A second export gets a new directory; the first stays.
    path2 = est.export_saved_model(str(tmp_path / "export"), _serving_fn)
    assert path2 != path and os.path.isdir(path.decode())


def test_export_loads_in_a_fresh_process_without_model_code(tmp_path):
    est, x = _trained(tmp_path)
    classes, probabilities = _predicted(est, x)
    path = est.export_savedmodel(str(tmp_path / "export"), _serving_fn).decode()
    np.save(str(tmp_path / "x.npy"), x)
    script = (
        "import numpy as np, shardflow as tf\n"
        "p = tf.contrib.predictor.from_saved_model(%r)\n"
        "out = p({'x': np.load(%r)})\n"
        "np.save(%r, out['probabilities'])\n"
        % (path, str(tmp_path / "x.npy"), str(tmp_path / "p.npy")))
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    np.testing.assert_allclose(np.load(str(tmp_path / "p.npy")), probabilities, rtol=1e-5,
                               atol=1e-6)


def test_raw_and_parsing_receivers_and_predictor_from_estimator(tmp_path):
    est, x = _trained(tmp_path)
    classes, _ = _predicted(est, x)
    raw = estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 3])}, default_batch_size=None)
    predict = tf.contrib.predictor.from_estimator(est, raw)
    np.testing.assert_array_equal(predict({"x": x})["class"], classes)

    spec = {"x": tf.FixedLenFeature([3], tf.float32)}
    parsing = estimator.export.build_parsing_serving_input_receiver_fn(spec)
    path = est.export_savedmodel(str(tmp_path / "parsing"), parsing)
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row.tolist()))}))
        .SerializeToString() for row in x[:10]]
    # The parsing receiver is a PyFunc: its export serves in the process that wrote it.
    predict = tf.contrib.predictor.from_saved_model(path)
    assert set(predict.feed_tensors) == {"examples"}
    np.testing.assert_array_equal(predict({"examples": examples})["class"], classes[:10])


def test_exporters_in_train_and_evaluate(tmp_path):
    x, y = _data()
    config = estimator.RunConfig(tf_random_seed=SEED, save_checkpoints_steps=8)
    est = estimator.Estimator(_model_fn, model_dir=str(tmp_path / "model"), params={},
                              config=config)
    latest = estimator.LatestExporter("latest", _serving_fn, exports_to_keep=2)
    final = estimator.FinalExporter("final", _serving_fn)
    best_calls = []

    def better(best, current):
        best_calls.append((best["global_step"], current["global_step"]))
        return current["loss"] < best["loss"]
    best = estimator.BestExporter("best", _serving_fn, compare_fn=better, exports_to_keep=None)
    train_spec = estimator.TrainSpec(_input_fn(x, y, None), max_steps=32)
    eval_spec = estimator.EvalSpec(_input_fn(x, y, 1), steps=None,
                                   exporters=[latest, final, best], throttle_secs=0)
    metrics, exports = estimator.train_and_evaluate(est, train_spec, eval_spec)
    assert metrics["global_step"] == 32
    export_root = os.path.join(str(tmp_path / "model"), "export")
    # Four evaluations (steps 8, 16, 24, 32): latest kept the newest two, final wrote once.
    assert len(os.listdir(os.path.join(export_root, "latest"))) == 2
    assert len(os.listdir(os.path.join(export_root, "final"))) == 1
    assert len(best_calls) == 3                # the first evaluation exports unasked
    assert len(exports) == 3 and isinstance(exports[0], bytes) and isinstance(exports[1], bytes)
    predict = tf.contrib.predictor.from_saved_model(exports[1])     # the final export
    assert predict({"x": x})["class"].shape == (len(x),)


def test_export_errors(tmp_path):
    est = estimator.Estimator(_model_fn, model_dir=str(tmp_path / "model"), params={})
    with pytest.raises(ValueError, match="Couldn't find trained model"):
        est.export_savedmodel(str(tmp_path / "e"), _serving_fn)
    est, _ = _trained(tmp_path)
    with pytest.raises(ValueError, match="ServingInputReceiver"):
        est.export_savedmodel(str(tmp_path / "e"), lambda: {"x": None})
    with pytest.raises(ValueError, match="serving_input_receiver_fn must be a function"):
        est.export_savedmodel(str(tmp_path / "e"), None)
    with pytest.raises(ValueError, match="ClassificationOutput needs"):
        estimator.export.ClassificationOutput()
    with pytest.raises(ValueError, match="TensorServingInputReceiver"):
        estimator.export.TensorServingInputReceiver({"x": tf.constant(1.0)}, tf.constant(1.0))
    # Nothing half-written is left behind.
    assert not os.path.exists(str(tmp_path / "e")) or os.listdir(str(tmp_path / "e")) == []


def test_canned_classifier_exports_tf115s_signatures(tmp_path):
    """A DNNClassifier exported with a parsing receiver (serialized Examples) has TF 1.15's
    signatures: serving_default and classification classify ('scores' = the probabilities,
    'classes' = every class id as a string), regression regresses the logistic, predict has
    every prediction; the classify signature serves Examples through the predictor."""
    rng = np.random.RandomState(0)
    data = rng.rand(60, 4).astype(np.float32)
    labels = (data.sum(1) > 2).astype(np.int32)
    cols = [tf.feature_column.numeric_column("x", shape=[4])]
    est = tf.estimator.DNNClassifier(hidden_units=[8], feature_columns=cols,
                                     model_dir=str(tmp_path / "model"))
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": data}, labels)).repeat()
              .batch(10), steps=10)
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(cols))
    path = est.export_saved_model(str(tmp_path / "export"), receiver)
    with tf.Session(graph=tf.Graph()) as sess:
        sigs = tf.saved_model.loader.load(sess, ["serve"], path).signature_def
    assert sorted(sigs) == ["classification", "predict", "regression", "serving_default"]
    for key in ("serving_default", "classification"):
        assert sigs[key].method_name == "tensorflow/serving/classify"
        assert sorted(sigs[key].inputs) == ["inputs"]
        assert sorted(sigs[key].outputs) == ["classes", "scores"]
    assert sigs["regression"].method_name == "tensorflow/serving/regress"
    assert {"probabilities", "class_ids", "classes", "logistic"} <= set(sigs["predict"].outputs)
    example = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=list(data[0])))}))
    out = tf.contrib.predictor.from_saved_model(path)(
        {"inputs": [example.SerializeToString()]})
    assert out["classes"].tolist() == [[b"0", b"1"]]
    want = next(iter(est.predict(lambda: tf.data.Dataset.from_tensor_slices(
        {"x": data[:1]}).batch(1))))["probabilities"]
    np.testing.assert_allclose(out["scores"][0], want, rtol=1e-5)
