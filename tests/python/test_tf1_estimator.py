"""TF1's tf.estimator and tf.feature_column (shardflow/estimator/, shardflow/feature_column.py):
a model_fn Estimator that learns, checkpoints and continues; numpy_input_fn's batches;
input_layer against NumPy; canned DNN and linear estimators on small separable data."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import shardflow as tf
from shardflow import estimator, feature_column

SEED = 7


def _blobs(n=200, seed=0):
    """Two separable classes in 2-D: label 1 where x0 + x1 > 0 (kept away from the line)."""
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(4 * n, 2)).astype(np.float32)
    margin = x.sum(axis=1)
    x = x[np.abs(margin) > 0.3][:n]
    y = (x.sum(axis=1) > 0).astype(np.int64)
    return x, y


def _model_fn(features, labels, mode, params):
    logits = tf.layers.dense(features["x"], 2, name="logits")
    predictions = {"class": tf.argmax(logits, 1), "probabilities": tf.nn.softmax(logits)}
    if mode == estimator.ModeKeys.PREDICT:
        return estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    train_op = tf.train.GradientDescentOptimizer(params["lr"]).minimize(
        loss, global_step=tf.train.get_global_step())
    return estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, predictions=predictions,
        eval_metric_ops={"accuracy": tf.metrics.accuracy(labels, predictions["class"])})


def _dataset_fn(x, y, epochs, batch=20):
    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat(epochs).batch(batch)
    return input_fn


def test_model_fn_estimator_trains_evaluates_predicts_and_continues(tmp_path):
    x, y = _blobs()
    est = estimator.Estimator(_model_fn, model_dir=str(tmp_path), params={"lr": 0.5},
                              config=estimator.RunConfig(tf_random_seed=SEED))
    assert est.model_dir == str(tmp_path)
    before = est.evaluate(_dataset_fn(x, y, 1))          # no checkpoint: initial values
    assert before["global_step"] == 0
    est.train(_dataset_fn(x, y, 5))                      # 200 examples x 5 / 20 = 50 steps
    after = est.evaluate(_dataset_fn(x, y, 1))
    assert after["global_step"] == 50
    assert after["loss"] < before["loss"] * 0.7
    assert after["accuracy"] >= 0.95
    assert est.latest_checkpoint().endswith("model.ckpt-50")
    assert "logits/kernel" in est.get_variable_names()
    assert est.get_variable_value("logits/kernel").shape == (2, 2)
    assert int(est.get_variable_value("global_step")) == 50

    # A second train() starts from the checkpoint; steps stops it, max_steps caps the total.
    est.train(_dataset_fn(x, y, None), steps=7)
    assert int(est.get_variable_value("global_step")) == 57
    est.train(_dataset_fn(x, y, None), max_steps=60)
    assert int(est.get_variable_value("global_step")) == 60
    est.train(_dataset_fn(x, y, None), max_steps=60)     # already there: nothing runs
    assert int(est.get_variable_value("global_step")) == 60

    preds = list(est.predict(_dataset_fn(x[:30], y[:30], 1, batch=8)))
    assert len(preds) == 30
    assert preds[0]["probabilities"].shape == (2,)
    assert preds[0]["class"].shape == ()
    classes = np.array([p["class"] for p in preds])
    assert np.mean(classes == y[:30]) >= 0.9
    batches = list(est.predict(_dataset_fn(x[:30], y[:30], 1, batch=8), predict_keys="class",
                               yield_single_examples=False))
    assert [b["class"].shape for b in batches] == [(8,), (8,), (8,), (6,)]
    assert set(batches[0]) == {"class"}

    # evaluate(steps=) reads only that many batches.
    assert est.evaluate(_dataset_fn(x, y, 1), steps=2)["global_step"] == 60


def test_model_fn_signature_and_spec_checks(tmp_path):
    def no_features(inputs, labels):
        pass

    with pytest.raises(ValueError, match="features"):
        estimator.Estimator(no_features)
    with pytest.raises(ValueError, match="params"):
        estimator.Estimator(lambda features, labels, mode: None, params={"a": 1})
    with pytest.raises(ValueError, match="train_op"):
        estimator.EstimatorSpec(estimator.ModeKeys.TRAIN, loss=tf.constant(1.0))
    assert (estimator.ModeKeys.TRAIN, estimator.ModeKeys.EVAL,
            estimator.ModeKeys.PREDICT) == ("train", "eval", "infer")
    config = estimator.RunConfig(save_checkpoints_steps=10)
    assert config.save_checkpoints_secs is None and config.keep_checkpoint_max == 5
    assert estimator.RunConfig().save_checkpoints_secs == 600
    with pytest.raises(ValueError):
        estimator.RunConfig(save_checkpoints_steps=10, save_checkpoints_secs=5)

    # A model_fn naming only features/labels/mode and config gets just those.
    seen = {}

    def model_fn(features, mode, config):
        seen["config"] = config
        w = tf.Variable(np.zeros((1,), np.float32), name="w")
        loss = tf.reduce_sum(tf.square(features - w))
        return estimator.EstimatorSpec(mode, loss=loss, train_op=tf.train.GradientDescentOptimizer(
            0.1).minimize(loss, global_step=tf.train.get_global_step()), predictions=features)

    est = estimator.Estimator(model_fn, config=estimator.RunConfig(model_dir=str(tmp_path)))
    est.train(lambda: tf.data.Dataset.from_tensor_slices(np.ones((5, 1), np.float32)).batch(1))
    assert seen["config"].model_dir == str(tmp_path)
    assert int(est.get_variable_value("global_step")) == 5


def test_numpy_input_fn_batches_and_epochs():
    x = {"a": np.arange(10, dtype=np.float32), "b": np.arange(20, dtype=np.int64).reshape(10, 2)}
    y = np.arange(10, dtype=np.int64) * 10
    g = tf.Graph()
    with g.as_default():
        features, labels = estimator.inputs.numpy_input_fn(
            x, y, batch_size=4, num_epochs=2, shuffle=False)()
        with tf.Session() as sess:
            sizes, seen = [], []
            while True:
                try:
                    f, l_ = sess.run([features, labels])
                except tf.errors.OutOfRangeError:
                    break
                sizes.append(len(l_))
                np.testing.assert_array_equal(f["a"] * 10, l_)
                np.testing.assert_array_equal(f["b"][:, 0], f["a"] * 2)
                seen.extend(f["a"].tolist())
    assert sizes == [4, 4, 4, 4, 4]
    assert seen == list(range(10)) * 2

    with tf.Graph().as_default():
        tf.set_random_seed(3)
        features, labels = estimator.inputs.numpy_input_fn(
            x, y, batch_size=10, num_epochs=1, shuffle=True)()
        with tf.Session() as sess:
            f, l_ = sess.run([features, labels])
    assert sorted(f["a"].tolist()) == list(range(10)) and f["a"].tolist() != list(range(10))
    np.testing.assert_array_equal(f["a"] * 10, l_)

    with pytest.raises(ValueError, match="shuffle"):
        estimator.inputs.numpy_input_fn(x, y)
    with pytest.raises(ValueError, match="first dimension"):
        estimator.inputs.numpy_input_fn(x, y[:5], shuffle=False)


def test_feature_columns_input_layer_matches_numpy():
    fc = feature_column
    feats = {"age": np.array([[15.], [30.], [70.]], np.float32),
             "pos": np.array([[1, 2], [3, 4], [5, 6]], np.float32),
             "kind": np.array([0, 3, 1], np.int64),
             "color": np.array([b"red", b"blue", b"teal"])}
    age = fc.numeric_column("age")
    pos = fc.numeric_column("pos", shape=(2,), normalizer_fn=lambda t: t - 1.0)
    kind = fc.categorical_column_with_identity("kind", num_buckets=4)
    color = fc.categorical_column_with_vocabulary_list("color", ["red", "green", "blue"])
    age_buckets = fc.bucketized_column(age, boundaries=[18, 65])
    emb = fc.embedding_column(kind, dimension=3)
    with tf.Graph().as_default():
        cols_to_vars = {}
        # Given out of order: input_layer sorts the columns by name, as TF1.
        net = fc.input_layer(feats, [pos, fc.indicator_column(kind), emb, age, age_buckets,
                                     fc.indicator_column(color)], cols_to_vars=cols_to_vars)
        assert net.shape.as_list() == [3, 1 + 3 + 3 + 3 + 4 + 2]
        table = cols_to_vars[emb][0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, table_value = sess.run([net, table.value()])
    age_v = feats["age"]
    buckets = np.eye(3, dtype=np.float32)[[0, 1, 2]]
    color_hot = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0]], np.float32)
    # Order by name: age, age_bucketized, color_indicator, kind_embedding, kind_indicator, pos.
    want = np.concatenate([age_v, buckets, color_hot, table_value[feats["kind"]],
                           np.eye(4, dtype=np.float32)[feats["kind"]], feats["pos"] - 1.0], 1)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert table_value.shape == (4, 3)
    assert not np.allclose(table_value, 0)

    with pytest.raises(ValueError, match="indicator_column"):
        with tf.Graph().as_default():
            fc.input_layer(feats, [kind])


def test_feature_column_embedding_mean_and_linear_model():
    fc = feature_column
    ids = np.array([[0, 2], [1, -1]], np.int64)          # -1: missing
    kind = fc.categorical_column_with_identity("k", num_buckets=3)
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    with tf.Graph().as_default():
        emb = fc.embedding_column(kind, 2, initializer=tf.initializers.constant(0.0))
        cols = {}
        net = fc.input_layer({"k": ids}, [emb], cols_to_vars=cols)
        lin = fc.linear_model({"k": ids, "v": np.array([[2.], [3.]], np.float32)},
                              [kind, fc.numeric_column("v")], cols_to_vars=cols)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(cols[emb][0].assign(table))
            sess.run(cols[kind][0].assign(np.array([[1.], [10.], [100.]], np.float32)))
            sess.run(cols["bias"][0].assign(np.array([0.5], np.float32)))
            got, got_lin = sess.run([net, lin])
    np.testing.assert_allclose(got, [(table[0] + table[2]) / 2, table[1]])
    np.testing.assert_allclose(got_lin, [[101.5], [10.5]])   # v's weights start at 0


def _blob_input(x, y, epochs, shuffle, batch=20):
    return estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=batch, num_epochs=epochs,
                                           shuffle=shuffle)


def test_dnn_classifier_separates_blobs(tmp_path):
    x, y = _blobs(seed=1)
    columns = [feature_column.numeric_column("x", shape=(2,))]
    clf = estimator.DNNClassifier(hidden_units=[8, 8], feature_columns=columns,
                                  model_dir=str(tmp_path),
                                  config=estimator.RunConfig(tf_random_seed=SEED))
    clf.train(_blob_input(x, y, None, True), steps=150)
    result = clf.evaluate(_blob_input(x, y, 1, False))
    assert result["accuracy"] >= 0.95, result
    assert result["global_step"] == 150
    # TF 1.15's binary head: its metrics and prediction keys.
    assert set(result) == {"loss", "average_loss", "accuracy", "accuracy_baseline", "auc",
                           "auc_precision_recall", "precision", "recall", "label/mean",
                           "prediction/mean", "global_step"}, sorted(result)
    np.testing.assert_allclose(result["accuracy_baseline"],
                               max(result["label/mean"], 1 - result["label/mean"]), rtol=1e-6)
    assert 0.9 <= result["auc_precision_recall"] <= 1.0, result
    np.testing.assert_allclose(result["loss"], result["average_loss"] * 20, rtol=1e-4)
    preds = list(clf.predict(estimator.inputs.numpy_input_fn({"x": x[:5]}, shuffle=False)))
    assert len(preds) == 5
    assert set(preds[0]) == {"logits", "logistic", "probabilities", "class_ids", "classes",
                             "all_class_ids", "all_classes"}, sorted(preds[0])
    assert preds[0]["classes"][0] == str(preds[0]["class_ids"][0]).encode()
    assert list(preds[0]["all_class_ids"]) == [0, 1]
    assert list(preds[0]["all_classes"]) == [b"0", b"1"]
    assert preds[0]["probabilities"].shape == (2,) and preds[0]["class_ids"].shape == (1,)
    assert preds[0]["logits"].shape == (1,)
    np.testing.assert_allclose(preds[0]["probabilities"].sum(), 1.0, rtol=1e-5)
    assert "dnn/hiddenlayer_0/kernel" in clf.get_variable_names()
    # tf.estimator.add_metrics: the same model and checkpoint, one more metric in evaluate.
    def mean_class(labels, predictions):
        return {"mean_class": tf.metrics.mean(tf.cast(predictions["class_ids"], tf.float32))}
    more = estimator.add_metrics(clf, mean_class)
    again = more.evaluate(_blob_input(x, y, 1, False))
    assert again["accuracy"] == result["accuracy"] and again["global_step"] == 150
    np.testing.assert_allclose(again["mean_class"], np.mean(
        [p["class_ids"][0] for p in clf.predict(estimator.inputs.numpy_input_fn(
            {"x": x}, shuffle=False))]), rtol=1e-5)
    with pytest.raises(ValueError, match="labels, predictions, features and config"):
        estimator.add_metrics(clf, lambda logits: {})


def test_dnn_classifier_three_classes_and_regressors(tmp_path):
    rng = np.random.RandomState(2)
    centers = np.array([[0, 2], [2, -1], [-2, -1]], np.float32)
    y = rng.randint(0, 3, size=150).astype(np.int64)
    x = (centers[y] + 0.3 * rng.randn(150, 2)).astype(np.float32)
    columns = [feature_column.numeric_column("x", shape=2)]
    clf = estimator.DNNClassifier([8], columns, n_classes=3, optimizer="Adam",
                                  model_dir=str(tmp_path / "dnn3"),
                                  config=estimator.RunConfig(tf_random_seed=SEED))
    clf.train(_blob_input(x, y, None, True, batch=30), steps=100)
    result = clf.evaluate(_blob_input(x, y, 1, False, batch=30))
    assert result["accuracy"] >= 0.95, result
    probs = next(clf.predict(_blob_input(x[:3], None, 1, False)))["probabilities"]
    assert probs.shape == (3,)

    lin = estimator.LinearClassifier(columns, n_classes=3, model_dir=str(tmp_path / "lin"),
                                     config=estimator.RunConfig(tf_random_seed=SEED))
    lin.train(_blob_input(x, y, None, True, batch=30), steps=100)
    assert lin.evaluate(_blob_input(x, y, 1, False, batch=30))["accuracy"] >= 0.95

    target = (x @ np.array([1.5, -2.0], np.float32) + 0.5).astype(np.float32)
    reg = estimator.LinearRegressor(columns, optimizer=lambda: tf.train.AdamOptimizer(0.1),
                                    model_dir=str(tmp_path / "reg"),
                                    config=estimator.RunConfig(tf_random_seed=SEED))
    reg.train(_blob_input(x, target, None, True, batch=30), steps=200)
    out = reg.evaluate(_blob_input(x, target, 1, False, batch=30))
    assert out["average_loss"] < 0.01, out
    np.testing.assert_allclose(reg.get_variable_value("linear_model/x/weights").ravel(),
                               [1.5, -2.0], atol=0.1)
    dnn_reg = estimator.DNNRegressor([8], columns, model_dir=str(tmp_path / "dnnreg"),
                                     config=estimator.RunConfig(tf_random_seed=SEED))
    dnn_reg.train(_blob_input(x, target, None, True, batch=30), steps=50)
    first = next(dnn_reg.predict(_blob_input(x[:2], None, 1, False)))
    assert first["predictions"].shape == (1,)


def test_warm_start_and_temporary_model_dir(tmp_path):
    x, y = _blobs(n=60)
    source = estimator.Estimator(_model_fn, model_dir=str(tmp_path / "a"), params={"lr": 0.5},
                                 config=estimator.RunConfig(tf_random_seed=SEED))
    source.train(_dataset_fn(x, y, 2))
    warm = estimator.Estimator(_model_fn, params={"lr": 0.0}, warm_start_from=str(tmp_path / "a"))
    assert warm.model_dir and warm.model_dir != str(tmp_path / "a")
    warm.train(_dataset_fn(x, y, 1), steps=1)
    np.testing.assert_allclose(warm.get_variable_value("logits/kernel"),
                               source.get_variable_value("logits/kernel"))
    assert int(warm.get_variable_value("global_step")) == 1


def test_train_and_evaluate_in_stretches_with_exporters(tmp_path, monkeypatch):
    x, y = _blobs()

    class Exporter:
        def __init__(self):
            self.calls = []

        def export(self, est, export_path, checkpoint_path, eval_result, is_the_final_export):
            self.calls.append((checkpoint_path, int(eval_result["global_step"])))
            return checkpoint_path

    exporter = Exporter()
    est = estimator.Estimator(_model_fn, model_dir=str(tmp_path), params={"lr": 0.5},
                              config=estimator.RunConfig(tf_random_seed=SEED,
                                                         save_checkpoints_steps=10))
    train_spec = estimator.TrainSpec(_dataset_fn(x, y, None), max_steps=30)
    eval_spec = estimator.EvalSpec(_dataset_fn(x, y, 1), steps=None, exporters=exporter,
                                   throttle_secs=0)
    metrics, exports = estimator.train_and_evaluate(est, train_spec, eval_spec)
    assert metrics["global_step"] == 30 and metrics["accuracy"] >= 0.9
    # One evaluation per checkpoint (10, 20, 30), each handed to the exporter.
    assert [step for _, step in exporter.calls] == [10, 20, 30]
    assert exports == [exporter.calls[-1][0]] and exports[0].endswith("model.ckpt-30")
    # Again at max_steps: nothing to train, the checkpoint there is evaluated.
    metrics, _ = estimator.train_and_evaluate(est, train_spec, eval_spec)
    assert metrics["global_step"] == 30
    with pytest.raises(TypeError, match="TrainSpec"):
        estimator.train_and_evaluate(est, eval_spec, eval_spec)


def test_run_config_reads_the_task_from_tf_config(monkeypatch):
    cluster = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"],
               "ps": ["127.0.0.1:4"], "evaluator": ["127.0.0.1:5"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster,
                                                "task": {"type": "worker", "index": 1}}))
    c = estimator.RunConfig()
    assert (c.task_type, c.task_id, c.is_chief, c.num_worker_replicas, c.num_ps_replicas,
            c.master, c.global_id_in_cluster) == ("worker", 1, False, 3, 1,
                                                  "grpc://127.0.0.1:3", 2)
    assert c.cluster_spec.jobs == ["chief", "ps", "worker"]  # the evaluator is not in it
    assert c.session_config.device_filters == ["/job:ps", "/job:worker/task:1"]
    assert c._distributed
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster,
                                                "task": {"type": "chief", "index": 0}}))
    assert estimator.RunConfig().is_chief
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster,
                                                "task": {"type": "evaluator", "index": 0}}))
    c = estimator.RunConfig()
    assert not c.is_chief and c.master == "" and not c._distributed
    for bad, match in (({"cluster": cluster}, "no task type"),
                       ({"cluster": cluster, "task": {"type": "worker", "index": 5}},
                        "no task 5"),
                       ({"cluster": cluster, "task": {"type": "trainer", "index": 0}},
                        "'trainer' is not a job"),
                       # each was accepted and failed later, or named something else
                       ({"cluster": {"worker": ["127.0.0.1:99999"]},
                         "task": {"type": "worker", "index": 0}}, "port in 1-65535"),
                       ({"cluster": {"wor/ker": ["127.0.0.1:1234"]},
                         "task": {"type": "wor/ker", "index": 0}}, "is not a name"),
                       ({"cluster": cluster, "task": {"type": "worker", "index": 1.5}},
                        "not a whole number"),
                       ({"cluster": {"worker": "127.0.0.1:1"},
                         "task": {"type": "worker", "index": 0}}, "takes a list"),
                       ({"cluster": {"chief": ["a:1", "b:2"]},
                         "task": {"type": "chief", "index": 0}}, "2 chief tasks")):
        monkeypatch.setenv("TF_CONFIG", json.dumps(bad))
        with pytest.raises(ValueError, match=match):
            estimator.RunConfig()
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        estimator.RunConfig()


_DISTRIBUTED_PROGRAM = '''
import sys
import numpy as np
import shardflow as tf
from shardflow import estimator

class Count(tf.train.SessionRunHook):
    runs = 0
    def after_run(self, run_context, run_values):
        Count.runs += 1

def model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    if mode == estimator.ModeKeys.TRAIN:
        print("PLACED %s %s %r" % (w.device, (features["x"] * w).device,
                                   tf.distribute.get_strategy()), flush=True)
    pred = features["x"] * w + b
    loss = tf.reduce_mean(tf.square(pred - labels))
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss,
                                                     global_step=tf.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                   eval_metric_ops={"mae": tf.metrics.mean_absolute_error(
                                       labels, pred)})

def input_fn():
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x + 1)).repeat().batch(16)

strategy = None
if sys.argv[2] == "ParameterServerStrategy":
    strategy = tf.distribute.experimental.ParameterServerStrategy()
config = estimator.RunConfig(model_dir=sys.argv[1], save_checkpoints_steps=100,
                             train_distribute=strategy)
est = estimator.Estimator(model_fn, config=config)
metrics, _ = estimator.train_and_evaluate(
    est, estimator.TrainSpec(input_fn, max_steps=400, hooks=[Count()]),
    estimator.EvalSpec(input_fn, steps=4, start_delay_secs=0, throttle_secs=0))
import json
print("%s %d ran %d steps; metrics %s" % (
    config.task_type, config.task_id, Count.runs,
    json.dumps({k: float(v) for k, v in metrics.items()}) if metrics else None), flush=True)
'''


@pytest.mark.parametrize("strategy", ["none", "ParameterServerStrategy"])
def test_train_and_evaluate_runs_a_tf_config_cluster(tmp_path, strategy):
    # As Kubernetes' TFJob starts a TF1 estimator job: one process per task, each told its part
    # by TF_CONFIG; chief and worker train asynchronously through the ps, the evaluator
    # evaluates the chief's checkpoints until the one at max_steps. The same with TF 1.15's
    # ParameterServerStrategy as train_distribute (model_fn then runs under it).
    from cluster_util import free_port
    program = tmp_path / "program.py"
    program.write_text(_DISTRIBUTED_PROGRAM)
    model_dir = tmp_path / "model"
    cluster = {"chief": ["127.0.0.1:%d" % free_port()],
               "worker": ["127.0.0.1:%d" % free_port()],
               "ps": ["127.0.0.1:%d" % free_port()]}
    procs, logs = {}, {}
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tf.__file__)))
    for job in ("ps", "evaluator", "worker", "chief"):
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": job, "index": 0}})
        logs[job] = tmp_path / (job + ".log")
        procs[job] = subprocess.Popen([sys.executable, str(program), str(model_dir), strategy],
                                      env=env,
                                      stdout=open(logs[job], "w"), stderr=subprocess.STDOUT)
    try:
        for job in ("chief", "worker", "evaluator"):
            assert procs[job].wait(timeout=240) == 0, logs[job].read_text()
        runs = {}
        for job in ("chief", "worker"):
            m = re.search(job + r" 0 ran (\d+) steps; metrics None", logs[job].read_text())
            assert m, logs[job].read_text()
            runs[job] = int(m.group(1))
            # Variables on the ps, the model's other ops on the task itself.
            placed = re.search(r"PLACED (\S+) (\S+) (.*)", logs[job].read_text())
            assert placed.group(1) == "/job:ps/task:0", placed.group(0)
            assert placed.group(2) == "/job:%s/task:0" % job, placed.group(0)
            if strategy != "none":
                assert placed.group(3) == "ParameterServerStrategy(/job:ps/task:0)"
        # Both trained, on the shared global step (asynchronous: a step each run).
        assert runs["chief"] > 0 and runs["worker"] > 0, runs
        assert runs["chief"] + runs["worker"] >= 400, runs
        out = logs["evaluator"].read_text()
        m = re.search(r"evaluator 0 ran 0 steps; metrics (\{.*\})", out)
        assert m, out
        metrics = json.loads(m.group(1))
        assert metrics["global_step"] >= 400 and metrics["mae"] < 0.1, metrics
        assert (model_dir / "checkpoint").exists()  # the chief's
        assert procs["ps"].poll() is None  # a ps serves until it is stopped, as TF's
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


def test_evaluate_writes_eval_events_and_early_stopping_hooks(tmp_path):
    """evaluate writes its scalars to estimator.eval_dir() at the global step (TensorBoard's
    eval curves), and tf.estimator.experimental.stop_if_no_decrease_hook reads them: with a
    learning rate of 0 the loss never decreases after the first evaluation, so training stops
    max_steps_without_decrease steps after it instead of running to max_steps."""
    x, y = _blobs()
    est = estimator.Estimator(_model_fn, model_dir=str(tmp_path), params={"lr": 0.0},
                              config=estimator.RunConfig(tf_random_seed=SEED,
                                                         save_checkpoints_steps=5))
    est.train(_dataset_fn(x, y, None), steps=5)
    first = est.evaluate(_dataset_fn(x, y, 1))
    evals = estimator.experimental.read_eval_metrics(est.eval_dir())
    assert list(evals) == [5] and abs(evals[5]["loss"] - first["loss"]) < 1e-5
    hook = estimator.experimental.stop_if_no_decrease_hook(
        est, "loss", max_steps_without_decrease=10, run_every_secs=None, run_every_steps=1)
    train_spec = estimator.TrainSpec(_dataset_fn(x, y, None), max_steps=200, hooks=[hook])
    eval_spec = estimator.EvalSpec(_dataset_fn(x, y, 1), steps=None, throttle_secs=0)
    metrics, _ = estimator.train_and_evaluate(est, train_spec, eval_spec)
    assert 15 <= metrics["global_step"] < 200, metrics
    higher = estimator.experimental.stop_if_higher_hook(est, "loss", -1.0, run_every_secs=None,
                                                        run_every_steps=1)
    lower = estimator.experimental.stop_if_lower_hook(est, "loss", 100.0, run_every_secs=None,
                                                      run_every_steps=1)
    before = est.get_variable_value("global_step")
    est.train(_dataset_fn(x, y, None), steps=50, hooks=[lower])
    assert est.get_variable_value("global_step") - before <= 2   # stopped at once
    assert higher is not None


_MIRRORED_PROGRAM = '''
import json, sys
import numpy as np
import shardflow as tf
from shardflow import estimator

class Final(tf.train.SessionRunHook):
    def end(self, session):
        v = {v.op.name: v for v in tf.global_variables()}
        w, b = session.run([v["w"], v["b"]])
        print("FINAL " + json.dumps({"w": w.tolist(), "b": b.tolist()}), flush=True)

def model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [1], initializer=tf.constant_initializer(0.5))
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(features["x"] * w + b - labels))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

rank, workers = int(sys.argv[2]), int(sys.argv[3])
x = np.linspace(-1, 1, 64, dtype=np.float32)
contexts = []

def input_fn(input_context=None):
    # As TF 1.15's tutorial: the input context says which share is this worker's (worker i
    # takes rows [16 i, 16 i + 16) of each 32-row global batch); evaluation has none.
    r, n = (input_context.input_pipeline_id, input_context.num_input_pipelines) \
        if input_context is not None else (rank, workers)
    if input_context is not None:
        contexts.append([r, n, input_context.num_replicas_in_sync])
    rows = 32 // n
    xs = np.concatenate([x[k * 32 + r * rows:k * 32 + (r + 1) * rows] for k in range(2)])
    return tf.data.Dataset.from_tensor_slices(({"x": xs}, 2 * xs + 1)).repeat().batch(rows)

strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
config = estimator.RunConfig(model_dir=sys.argv[1], train_distribute=strategy,
                             save_checkpoints_steps=10)
est = estimator.Estimator(model_fn, config=config)
estimator.train_and_evaluate(est, estimator.TrainSpec(input_fn, max_steps=30, hooks=[Final()]),
                             estimator.EvalSpec(input_fn, steps=1))
print("REPLICAS %d" % strategy.num_replicas_in_sync, flush=True)
print("CONTEXTS " + json.dumps(contexts), flush=True)
'''


def _two_workers(jobs, env, argv):
    """Ranks 1 and 0 of a MultiWorkerMirroredStrategy cluster, each `sys.executable
    argv(rank)` with its TF_CONFIG: jobs "worker" (two worker tasks) or "chief+worker" (the
    chief is rank 0). Their outputs, rank 1's first, once both exited 0."""
    from cluster_util import free_port, run_together
    addresses = ["127.0.0.1:%d" % free_port(), "127.0.0.1:%d" % free_port()]
    cluster, tasks = {"worker": addresses}, {1: ("worker", 1), 0: ("worker", 0)}
    if jobs == "chief+worker":
        cluster, tasks = {"chief": addresses[:1], "worker": addresses[1:]}, \
            {1: ("worker", 0), 0: ("chief", 0)}
    return run_together([([sys.executable] + argv(rank), dict(env, TF_CONFIG=json.dumps({
        "cluster": cluster, "task": {"type": tasks[rank][0], "index": tasks[rank][1]}})))
        for rank in (1, 0)])


@pytest.mark.parametrize("jobs", ["worker", "chief+worker"])
def test_multi_worker_mirrored_strategy_trains_workers_as_one_process(tmp_path, jobs):
    # TF 1.15's multi-worker estimator: two worker processes (TF_CONFIG with one "worker" job,
    # or a "chief" and a "worker"), each on its half of every global batch, end with the same
    # weights as one process on the whole batches (SGD on the all-reduced mean gradient, from
    # rank 0's initial values).
    program = tmp_path / "program.py"
    program.write_text(_MIRRORED_PROGRAM)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tf.__file__)))
    env.pop("TF_CONFIG", None)

    def final(text):  # the last train() call's (local mode trains in stretches)
        found = re.findall(r"FINAL (\{.*\})", text)
        assert found, text
        return json.loads(found[-1])

    alone = subprocess.run([sys.executable, str(program), str(tmp_path / "alone"), "0", "1"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert "REPLICAS 1" in alone.stdout
    outs = _two_workers(jobs, env, lambda rank: [str(program), str(tmp_path / "model"),
                                                 str(rank), "2"])
    for out in outs:
        assert "REPLICAS 2" in out, out
    # input_fn(input_context): rank 1's output first; one pipeline per worker process.
    assert [json.loads(re.search(r"CONTEXTS (\[.*\])", o).group(1))[0] for o in outs] == \
        [[1, 2, 2], [0, 2, 2]]
    one, workers = final(alone.stdout), [final(o) for o in outs]
    assert workers[0] == workers[1]
    np.testing.assert_allclose(workers[0]["w"], one["w"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(workers[0]["b"], one["b"], rtol=1e-5, atol=1e-6)
    assert (tmp_path / "model" / "model.ckpt-30.meta").exists()  # worker 0 checkpoints
    with pytest.raises(ValueError, match="takes a \"worker\" job and optionally a \"chief\""):
        os.environ["TF_CONFIG"] = json.dumps({"cluster": {"ps": ["127.0.0.1:1"],
                                                          "worker": ["127.0.0.1:2"]},
                                              "task": {"type": "worker", "index": 0}})
        try:
            tf.distribute.experimental.MultiWorkerMirroredStrategy()
        finally:
            del os.environ["TF_CONFIG"]


_KERAS_MIRRORED_PROGRAM = '''
import json, sys
import numpy as np
import shardflow as tf

rank, workers = int(sys.argv[1]), int(sys.argv[2])
tf.set_random_seed(7 + rank)  # the workers start apart; fit starts from worker 0's values
rng = np.random.RandomState(0)
x = rng.randn(64, 4).astype(np.float32)
y = (x @ np.array([[1.0], [2.0], [-1.0], [0.5]], np.float32) + 0.3).astype(np.float32)
rows = 16 // workers  # worker i takes its share of each 16-row global batch
mine = np.concatenate([np.arange(k * 16 + rank * rows, k * 16 + (rank + 1) * rows)
                       for k in range(4)])
strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(3, activation="tanh", input_shape=(4,)),
                                 tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.SGD(0.05), "mse")
seen = []  # the rows of each batch this worker trained on
sizes = tf.keras.callbacks.LambdaCallback(on_batch_end=lambda b, logs: seen.append(logs["size"]))
if sys.argv[3] == "dataset":
    # TF 1.15's tutorial: every worker is given the same dataset of global batches; fit
    # takes this worker's share of each (as TF's auto-sharding).
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat()
    history = model.fit(data, epochs=3, steps_per_epoch=4, verbose=0, callbacks=[sizes])
else:
    history = model.fit(x[mine], y[mine], batch_size=rows, epochs=3, shuffle=False, verbose=0,
                        callbacks=[sizes])
print("FINAL " + json.dumps({"weights": [w.tolist() for w in model.get_weights()],
                             "loss": history.history["loss"], "rows": seen}), flush=True)
'''


@pytest.mark.parametrize("jobs,feed", [("worker", "arrays"), ("chief+worker", "arrays"),
                                       ("worker", "dataset")])
def test_keras_fit_under_multi_worker_mirrored_strategy_trains_workers_as_one_process(tmp_path,
                                                                                      jobs, feed):
    # TF 1.15's multi-worker Keras: each worker process builds and compiles the model in the
    # strategy's scope and fits on its share of every global batch; with SGD the workers end
    # with the weights of one process that fits the whole batches from worker 0's start. With
    # a "chief" job (Kubernetes' TFJob), the chief is rank 0 and the worker rank 1. Given a
    # Dataset of global batches, each worker takes its share of every batch itself.
    program = tmp_path / "keras_program.py"
    program.write_text(_KERAS_MIRRORED_PROGRAM)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tf.__file__)))
    env.pop("TF_CONFIG", None)
    alone = subprocess.run([sys.executable, str(program), "0", "1", feed], env=env,
                           capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    outs = _two_workers(jobs, env, lambda rank: [str(program), str(rank), "2", feed])
    one = json.loads(re.search(r"FINAL (\{.*\})", alone.stdout).group(1))
    workers = [json.loads(re.search(r"FINAL (\{.*\})", o).group(1)) for o in outs]
    for a, b in zip(workers[0]["weights"], workers[1]["weights"]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    for a, b in zip(workers[0]["weights"], one["weights"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert workers[0]["loss"][-1] < workers[0]["loss"][0]
    assert one["rows"] == [16] * 12 and workers[0]["rows"] == workers[1]["rows"] == [8] * 12


def test_estimator_trains_with_a_mirrored_strategy_over_two_devices(tmp_path):
    """RunConfig(train_distribute=MirroredStrategy([...2 devices])): model_fn built per
    replica, each on half of every batch, the gradients summed (each loss scaled by 1/2): the
    same weights as one device on the whole batches (plain SGD, a linear model)."""
    rng = np.random.RandomState(0)
    x = rng.randn(64, 3).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(8)

    def model_fn(features, labels, mode):
        pred = tf.layers.dense(features, 1, kernel_initializer=tf.zeros_initializer())
        loss = tf.losses.mean_squared_error(labels, pred)
        step = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step)

    weights = []
    for strategy in (None, tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])):
        est = tf.estimator.Estimator(model_fn, config=tf.estimator.RunConfig(
            model_dir=str(tmp_path / ("two" if strategy else "one")),
            train_distribute=strategy))
        est.train(input_fn)                          # 8 steps: one pass over the data
        assert est.get_variable_value("global_step") == 8
        weights.append(est.get_variable_value("dense/kernel"))
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="evaluates and predicts with one replica"):
        tf.estimator.RunConfig(eval_distribute=tf.distribute.MirroredStrategy(
            ["/cpu:0", "/cpu:1"]))
