"""Still more TF 1.x names, checked by hand or against NumPy: tf.profiler (profile with
ProfileOptionBuilder's float_operation / trainable_variables_parameter, the op and graph views,
Profiler, advise, write_op_log), tf.keras.estimator.model_to_estimator,
tf.keras.wrappers.scikit_learn, tf.image.resize_image_with_pad, tf.saved_model.Builder,
tf.convert_to_tensor_or_indexed_slices, tf.strings.format, tf.io.parse_single_sequence_example
(and parse_sequence_example), keras.callbacks.BaseLogger."""

import json
import os

import numpy as np
import pytest

import shardflow as tf
from shardflow import keras

B = tf.profiler.ProfileOptionBuilder


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# ---- tf.profiler ------------------------------------------------------------------------------

MLP_FLOPS = {"layer1/MatMul": 2 * 64 * 784 * 512, "layer1/BiasAdd": 64 * 512,
             "layer2/MatMul": 2 * 64 * 512 * 10, "layer2/BiasAdd": 64 * 10}
MLP_PARAMS = {"w1": 784 * 512, "b1": 512, "w2": 512 * 10, "b2": 10}


def mlp(batch=64):
    """A 784-512-10 MLP whose variables start from constants (no initializer arithmetic)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [batch, 784], name="x")
        w1 = tf.Variable(np.zeros((784, 512), np.float32), name="w1")
        b1 = tf.Variable(np.zeros(512, np.float32), name="b1")
        w2 = tf.Variable(np.zeros((512, 10), np.float32), name="w2")
        b2 = tf.Variable(np.zeros(10, np.float32), name="b2")
        tf.Variable(0, trainable=False, name="step")
        with tf.name_scope("layer1"):
            h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
        with tf.name_scope("layer2"):
            y = tf.nn.bias_add(tf.matmul(h, w2), b2)
    return g, x, y


def traced_run(g, fetch, feed):
    """The RunMetadata of one traced run of `fetch` in graph `g`."""
    md = tf.RunMetadata()
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(fetch, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=md)
    return md


def quiet(options):
    return B(options).with_empty_output().build()


def test_profile_float_ops_of_an_mlp_equal_the_hand_count():
    g, _, _ = mlp()
    flops = tf.profiler.profile(g, options=quiet(B.float_operation()))
    assert flops.total_float_ops == sum(MLP_FLOPS.values())   # Relu counts 0, as in TF
    assert {c.name: c.float_ops for c in flops.children} == MLP_FLOPS
    assert [c.name for c in flops.children] == sorted(MLP_FLOPS, key=lambda k: -MLP_FLOPS[k])
    assert flops.total_parameters == 0      # variables have no FLOPs: not displayed, not counted


def test_profile_trainable_parameters_equal_the_hand_count():
    g, _, _ = mlp()
    params = tf.profiler.profile(g, options=quiet(B.trainable_variables_parameter()))
    assert params.total_parameters == sum(MLP_PARAMS.values())
    assert {c.name: c.parameters for c in params.children} == MLP_PARAMS   # not "step"
    assert params.total_float_ops == 0


def test_unknown_batch_dimension_skips_the_ops_until_a_trace_gives_the_shapes():
    g, x, y = mlp(batch=None)
    opts = quiet(B.float_operation())
    assert tf.profiler.profile(g, options=opts).total_float_ops == 0
    md = traced_run(g, y, {x: np.ones((8, 784), np.float32)})
    traced = tf.profiler.profile(g, run_meta=md, options=opts)
    assert traced.total_float_ops == sum(MLP_FLOPS.values()) // 8


def test_conv_pool_and_elementwise_flops():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 8, 8, 3])
        y = tf.nn.conv2d(x, tf.ones([3, 3, 3, 4]), [1, 1, 1, 1], "SAME", name="conv")
        tf.nn.max_pool(y, [1, 2, 2, 1], [1, 2, 2, 1], "VALID", name="pool")
        v = tf.placeholder(tf.float32, [1, 4, 4, 4, 2])
        tf.nn.conv3d(v, tf.ones([2, 2, 2, 2, 5]), [1, 1, 1, 1, 1], "VALID", name="conv3d")
        tf.add(tf.ones([3, 5]), 1.0, name="add")
        tf.nn.softmax(tf.ones([3, 5]), name="softmax")
        tf.add_n([tf.ones([2, 2])] * 3, name="addn")
        tf.reduce_sum(tf.ones([4, 6]), axis=1, name="sum")
    root = tf.profiler.profile(g, cmd="graph", options=quiet(B.float_operation()))
    got = {c.name: c.float_ops for c in root.children}
    assert got["conv"] == 2 * (2 * 8 * 8 * 4) * 3 * 3 * 3
    assert got["pool"] == 4 * (2 * 4 * 4 * 4)
    assert got["conv3d"] == 2 * (1 * 3 * 3 * 3 * 5) * 2 * 2 * 2 * 2
    assert got["add"] == 15 and got["softmax"] == 5 * 15
    assert got["addn"] == 2 * 4 and got["sum"] == 24 - 4


def test_op_view_filters_output_file_and_profiler_class(tmp_path):
    g, x, y = mlp()
    ops_view = tf.profiler.profile(g, cmd="op", options=quiet(B.float_operation()))
    assert {c.name: c.total_float_ops for c in ops_view.children} == {
        "MatMul": MLP_FLOPS["layer1/MatMul"] + MLP_FLOPS["layer2/MatMul"],
        "BiasAdd": MLP_FLOPS["layer1/BiasAdd"] + MLP_FLOPS["layer2/BiasAdd"]}
    assert sorted(n.name for n in ops_view.children[0].graph_nodes) == [
        "layer1/MatMul", "layer2/MatMul"]
    path = str(tmp_path / "flops.txt")
    opts = (B(B.float_operation()).with_node_names(hide_name_regexes=["layer2/.*"])
            .with_max_depth(5).order_by("name").select(["float_ops", "params"])
            .account_displayed_op_only(True).with_file_output(path).build())
    hidden = tf.profiler.profile(g, options=opts)
    assert hidden.total_float_ops == MLP_FLOPS["layer1/MatMul"] + MLP_FLOPS["layer1/BiasAdd"]
    text = open(path).read()
    assert "_TFProfRoot (--/" in text and "layer1/MatMul (51.38m/51.38m flops" in text
    assert "layer2" not in text
    profiler = tf.profiler.Profiler(g)
    md = traced_run(g, y, {x: np.ones((64, 784), np.float32)})
    profiler.add_step(1, md)
    for view in (profiler.profile_name_scope, profiler.profile_operations,
                 profiler.profile_graph, profiler.profile_python):
        assert view(quiet(B.float_operation())).total_float_ops == sum(MLP_FLOPS.values())
    timed = profiler.profile_name_scope(quiet(B.time_and_memory(min_micros=0, min_bytes=0)))
    assert timed.total_run_count > 0 and timed.total_requested_bytes > 0
    timed_reports = profiler.advise().checkers["ExpensiveOperationChecker"].reports
    assert timed_reports[0].startswith("top 1 operation type: ")   # ranked by time
    advice = tf.profiler.advise(g)         # no trace: op types ranked by FLOPs
    assert advice.checkers["ExpensiveOperationChecker"].reports[0].startswith(
        "top 1 operation type: MatMul, 52.04m flops (99.94%)")
    assert advice.checkers["JobChecker"].reports == []


def test_write_op_log_round_trip_and_op_log_flops(tmp_path):
    g, _, _ = mlp()
    path = tf.profiler.write_op_log(g, str(tmp_path))
    record = json.load(open(os.path.join(str(tmp_path), "tfprof_log")))
    entries = {e["name"]: e for e in record["log_entries"]}
    assert entries["layer1/MatMul"]["float_ops"] == MLP_FLOPS["layer1/MatMul"]
    assert "_trainable_variables" in entries["w1"]["types"]
    op_log = tf.profiler.read_op_log(path)
    op_log.log_entries.append(tf.profiler.OpLogProto.OpLogEntry("layer1/Relu", 7, ["Act"]))
    flops = tf.profiler.profile(g, op_log=op_log, options=quiet(B.float_operation()))
    assert flops.total_float_ops == sum(MLP_FLOPS.values()) + 7
    with pytest.raises(ValueError, match="unknown output"):
        tf.profiler.profile(g, options=dict(B.float_operation(), output="bogus"))


# ---- tf.keras.estimator.model_to_estimator ----------------------------------------------------

def toy_data():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 4).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int32)


def test_model_to_estimator_starts_from_the_keras_weights_and_trains(tmp_path):
    x, y = toy_data()
    keras.backend.clear_session()
    model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                              keras.layers.Dropout(0.1),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    ref_loss, ref_acc = model.evaluate(x, y, batch_size=64, verbose=0)
    est = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    inputs = tf.estimator.inputs

    def eval_fn(key):
        return inputs.numpy_input_fn({key: x}, y, batch_size=64, shuffle=False, num_epochs=1)

    before = est.evaluate(eval_fn("dense_input"))      # TF's name for a Sequential's input
    assert before["global_step"] == 0
    assert before["loss"] == pytest.approx(ref_loss, rel=1e-5)
    assert before["acc"] == pytest.approx(ref_acc)
    np.testing.assert_allclose(est.get_variable_value("dense/kernel"), model.get_weights()[0])
    est.train(inputs.numpy_input_fn({"dense_input": x}, y, batch_size=16, shuffle=True,
                                    num_epochs=None), steps=40)
    after = est.evaluate(eval_fn("dense_input"))
    assert after["global_step"] == 40 and after["loss"] < 0.5 * before["loss"]
    assert after["acc"] > 0.9
    preds = list(est.predict(inputs.numpy_input_fn({"dense_input": x}, batch_size=64,
                                                   shuffle=False, num_epochs=1)))
    assert len(preds) == 64 and set(preds[0]) == {"dense_1"}
    probs = np.stack([p["dense_1"] for p in preds])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    assert np.mean(probs.argmax(axis=1) == y) == pytest.approx(after["acc"])
    with pytest.raises(KeyError, match="input"):
        est.evaluate(eval_fn("pixels"))


def test_model_to_estimator_with_two_outputs(tmp_path):
    x, y = toy_data()
    target = x.sum(axis=1)
    keras.backend.clear_session()
    inp = keras.layers.Input(shape=(4,), name="x")
    h = keras.layers.Dense(8, activation="relu")(inp)
    model = keras.Model(inp, [keras.layers.Dense(2, activation="softmax", name="cls")(h),
                              keras.layers.Dense(1, name="reg")(h)])
    model.compile("adam", loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"},
                  loss_weights={"cls": 1.0, "reg": 0.5}, metrics={"cls": "accuracy"})
    loss, _, _, acc = model.evaluate(x, {"cls": y, "reg": target}, batch_size=64, verbose=0)
    est = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    results = est.evaluate(tf.estimator.inputs.numpy_input_fn(
        x, {"cls": y, "reg": target}, batch_size=64, shuffle=False))
    assert results["loss"] == pytest.approx(loss, rel=1e-5)
    assert results["cls_acc"] == pytest.approx(acc)


def test_model_to_estimator_needs_a_compiled_model():
    keras.backend.clear_session()
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    with pytest.raises(ValueError, match="compile"):
        keras.estimator.model_to_estimator(keras_model=model)
    with pytest.raises(ValueError, match="Either"):
        keras.estimator.model_to_estimator()


# ---- tf.keras.wrappers.scikit_learn -----------------------------------------------------------

def classifier_fn(hidden=8, loss="sparse_categorical_crossentropy"):
    model = keras.Sequential([keras.layers.Dense(hidden, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile(keras.optimizers.Adam(0.05), loss, metrics=["accuracy"])
    return model


def test_keras_classifier():
    from shardflow.keras.wrappers.scikit_learn import KerasClassifier
    rng = np.random.RandomState(1)
    x = rng.randn(90, 4).astype(np.float32)
    labels = np.array([10, 20, 30])[np.argmax(x[:, :3], axis=1)]
    keras.backend.clear_session()
    clf = KerasClassifier(classifier_fn, hidden=16, epochs=30, batch_size=30, verbose=0)
    assert clf.get_params() == {"hidden": 16, "epochs": 30, "batch_size": 30, "verbose": 0,
                                "build_fn": classifier_fn}
    clf.fit(x, labels)
    np.testing.assert_array_equal(clf.classes_, [10, 20, 30])
    pred = clf.predict(x)
    probs = clf.predict_proba(x)
    assert probs.shape == (90, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(pred, clf.classes_[probs.argmax(axis=1)])
    acc = clf.score(x, labels)
    assert acc == pytest.approx(np.mean(pred == labels)) and acc > 0.8
    copy = type(clf)(**clf.get_params())   # what sklearn.base.clone does
    assert copy.sk_params == clf.sk_params
    assert clf.set_params(epochs=2) is clf and clf.sk_params["epochs"] == 2
    with pytest.raises(ValueError, match="not a legal parameter"):
        KerasClassifier(classifier_fn, colour="red")
    onehot = KerasClassifier(classifier_fn, loss="categorical_crossentropy", epochs=2,
                             verbose=0)
    onehot.fit(x, labels)                  # integer labels one-hot encoded for the loss
    assert onehot.predict(x[:5]).shape == (5,)


def test_keras_regressor_and_binary_probabilities():
    from shardflow.keras.wrappers.scikit_learn import KerasClassifier, KerasRegressor
    rng = np.random.RandomState(2)
    x = rng.randn(64, 3).astype(np.float32)
    target = x @ np.array([1.0, -2.0, 0.5], np.float32)

    def linear():
        model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
        model.compile(keras.optimizers.SGD(0.1), "mse")
        return model

    keras.backend.clear_session()
    reg = KerasRegressor(linear, epochs=40, batch_size=16, verbose=0)
    reg.fit(x, target)
    pred = reg.predict(x)
    assert pred.shape == (64,)
    mse = float(np.mean((pred - target) ** 2))
    assert mse < 1e-3 and reg.score(x, target) == pytest.approx(-mse, rel=1e-3, abs=1e-6)

    def binary():
        model = keras.Sequential([keras.layers.Dense(1, activation="sigmoid",
                                                     input_shape=(3,))])
        model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
        return model

    clf = KerasClassifier(binary, epochs=1, verbose=0)
    clf.fit(x, (target > 0).astype(np.int32))
    probs = clf.predict_proba(x)
    assert probs.shape == (64, 2)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(clf.predict(x), (probs[:, 1] > 0.5).astype(np.int32))


# ---- small ones -------------------------------------------------------------------------------

def test_resize_image_with_pad():
    img = np.arange(32, dtype=np.float32).reshape(4, 8, 1)
    nearest = tf.image.ResizeMethod.NEAREST_NEIGHBOR
    same, shrunk, batch = run([
        tf.image.resize_image_with_pad(img, 8, 8),
        tf.image.resize_image_with_pad(img, 4, 4, method=nearest),
        tf.image.resize_image_with_pad(img[None], 6, 8, method=nearest)])
    want = np.zeros((8, 8, 1), np.float32)
    want[2:6] = img                        # ratio 1: no resize, two rows of zeros each side
    np.testing.assert_allclose(same, want)
    want = np.zeros((4, 4, 1), np.float32)
    want[1:3] = img[::2, ::2]              # ratio 2: 2x4, then one row of zeros each side
    np.testing.assert_array_equal(shrunk, want)
    want = np.zeros((1, 6, 8, 1), np.float32)
    want[0, 1:5] = img
    np.testing.assert_array_equal(batch, want)
    with pytest.raises(ValueError, match="positive"):
        tf.image.resize_image_with_pad(img, 0, 4)


def test_saved_model_builder_and_convert_to_tensor_or_indexed_slices():
    assert tf.saved_model.Builder is tf.saved_model.builder.SavedModelBuilder
    slices = tf.IndexedSlices(tf.ones([2, 3]), tf.constant([0, 2]), tf.constant([4, 3]))
    assert tf.convert_to_tensor_or_indexed_slices(slices) is slices
    sparse = tf.SparseTensor([[0, 1]], [2.0], [2, 2])
    assert tf.convert_to_tensor_or_indexed_slices(sparse) is sparse
    with pytest.raises(ValueError, match="dtype"):
        tf.convert_to_tensor_or_indexed_slices(slices, dtype=tf.int32)
    t = tf.convert_to_tensor_or_indexed_slices([1, 2], dtype=tf.float32)
    assert isinstance(t, tf.Tensor) and t.dtype == tf.float32
    np.testing.assert_array_equal(run(t), [1.0, 2.0])


def test_strings_format():
    fmt = tf.strings.format
    out = run([
        fmt("x: {}, n: {}", [tf.range(10), 3]),
        fmt("{}", tf.constant([[0.1, 1.0], [2.5, 1e-7]])),
        fmt("all: %s", tf.range(8), placeholder="%s", summarize=-1),
        fmt("{} and {}", [tf.constant(["a", "b"]), tf.constant(True)]),
        fmt("{}", tf.reshape(tf.range(24), [2, 3, 4]), summarize=1),
        fmt("{}", tf.constant(1.0 / 3.0, tf.float64)),
        fmt("no inputs", [])])
    assert out == [b"x: [0 1 2 ... 7 8 9], n: 3", b"[[0.1 1]\n [2.5 1e-07]]",
                   b"all: [0 1 2 3 4 5 6 7]", b"[a b] and 1",
                   b"[[[0 ... 3]\n  ...\n  [8 ... 11]]\n\n [[12 ... 15]\n  ...\n"
                   b"  [20 ... 23]]]", b"0.33333333333333331", b"no inputs"]
    with pytest.raises(ValueError, match="num placeholders in template and num inputs must "
                                         "match: 2 vs 1"):
        fmt("{} {}", tf.range(2))


def sequence_example(steps, weights, tags=(b"a", b"b")):
    t = tf.train
    return t.SequenceExample(
        context=t.Features(feature={
            "len": t.Feature(int64_list=t.Int64List(value=[len(steps)])),
            "tags": t.Feature(bytes_list=t.BytesList(value=list(tags)))}),
        feature_lists=t.FeatureLists(feature_list={
            "tok": t.FeatureList(feature=[t.Feature(int64_list=t.Int64List(value=s))
                                          for s in steps]),
            "w": t.FeatureList(feature=[t.Feature(float_list=t.FloatList(value=w))
                                        for w in weights])})).SerializeToString()


CONTEXT = {"len": tf.FixedLenFeature([], tf.int64), "tags": tf.VarLenFeature(tf.string),
           "opt": tf.FixedLenFeature([2], tf.float32, default_value=[1.0, 2.0])}
SEQUENCE = {"tok": tf.FixedLenSequenceFeature([2], tf.int64), "w": tf.VarLenFeature(tf.float32),
            "gone": tf.FixedLenSequenceFeature([], tf.float32, allow_missing=True)}


def test_parse_single_sequence_example():
    data = sequence_example([[1, 2], [5, 6], [9, 10]], [[0.5], [], [1.5, 2.5]])
    context, seq = tf.io.parse_single_sequence_example(data, CONTEXT, SEQUENCE)
    assert seq["tok"].shape.as_list() == [None, 2] and context["opt"].shape.as_list() == [2]
    context, seq = run([context, seq])
    assert context["len"] == 3
    np.testing.assert_array_equal(context["opt"], [1.0, 2.0])
    np.testing.assert_array_equal(context["tags"].indices, [[0], [1]])
    assert list(context["tags"].values) == [b"a", b"b"]
    np.testing.assert_array_equal(seq["tok"], [[1, 2], [5, 6], [9, 10]])
    assert seq["gone"].shape == (0,)
    np.testing.assert_array_equal(seq["w"].indices, [[0, 0], [2, 0], [2, 1]])
    np.testing.assert_array_equal(seq["w"].values, [0.5, 1.5, 2.5])
    np.testing.assert_array_equal(seq["w"].dense_shape, [3, 2])


def test_parse_sequence_example_pads_a_batch():
    data = [sequence_example([[1, 2]], [[0.5]]),
            sequence_example([[3, 4], [5, 6]], [[], [7.0]], tags=())]
    context, seq, lengths = run(tf.io.parse_sequence_example(
        tf.constant(data), {"len": CONTEXT["len"]},
        {"tok": SEQUENCE["tok"], "w": SEQUENCE["w"]}))
    np.testing.assert_array_equal(context["len"], [1, 2])
    np.testing.assert_array_equal(seq["tok"], [[[1, 2], [0, 0]], [[3, 4], [5, 6]]])
    np.testing.assert_array_equal(lengths["tok"], [1, 2])
    np.testing.assert_array_equal(seq["w"].indices, [[0, 0, 0], [1, 1, 0]])
    np.testing.assert_array_equal(seq["w"].dense_shape, [2, 2, 1])


def test_malformed_sequence_examples_are_refused():
    def parse(data, sequence=None):
        return tf.parse_single_sequence_example(
            tf.constant(data), sequence_features=sequence or {"tok": SEQUENCE["tok"]})
    good = sequence_example([[1, 2]], [[0.5]])
    cases = [(good[:-3], "truncated"),                       # a length past the end
             (b"\x12\x03\x0a\x09abc", "FeatureLists: truncated field 1"),
             (b"\x0b", "wire type"),
             (sequence_example([[1, 2, 3]], [[0.5]]), "Number of int64 values != expected"),
             (sequence_example([[1, 2]], [[0.5]]).replace(b"tok", b"tik"),
              "Feature list 'tok' is required")]
    for data, message in cases:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            run(parse(data))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Data types don't match"):
        run(parse(good, {"w": tf.FixedLenSequenceFeature([], tf.int64)}))
    with pytest.raises(ValueError, match="FixedLenSequenceFeature or VarLenFeature"):
        parse(good, {"tok": tf.FixedLenFeature([2], tf.int64)})


def test_base_logger_averages_the_batches():
    logger = keras.callbacks.BaseLogger(stateful_metrics=["auc"])
    logger.set_params({"metrics": ["loss", "auc"]})
    logger.on_epoch_begin(0)
    logger.on_batch_end(0, {"batch": 0, "size": 2, "loss": 1.0, "auc": 0.5})
    logger.on_batch_end(1, {"batch": 1, "size": 1, "loss": 4.0, "auc": 0.7})
    logs = {}
    logger.on_epoch_end(0, logs)
    assert logs == {"loss": pytest.approx(2.0), "auc": 0.7}
    assert isinstance(keras.callbacks.ProgbarLogger(), keras.callbacks.Callback)


def test_run_options_tf1_fields_and_partition_graphs():
    # TF1 programs set these; output_partition_graphs fills RunMetadata.partition_graphs.
    g, x, y = mlp()
    md = tf.RunMetadata()
    options = tf.RunOptions(output_partition_graphs=True, report_tensor_allocations_upon_oom=True,
                            inter_op_thread_pool=0)
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(y, {x: np.ones((64, 784), np.float32)}, options=options, run_metadata=md)
        graphs = md.partition_graphs
        assert len(graphs) == md.partition_graph_count >= 1
        nodes = {n.name: n for graph in graphs for n in graph.node}
        # What ran: after the graph optimizers (MatMul + BiasAdd + Relu fused, as TF's remapper).
        assert nodes["layer1/Relu"].op == "_FusedMatMul"
        assert nodes["layer1/Relu"].assigned_device.endswith("CPU:0")
        assert nodes["w1"].op == "VarHandleOp"
        for level in (tf.RunOptions.SOFTWARE_TRACE, tf.RunOptions.HARDWARE_TRACE):
            md = tf.RunMetadata()
            sess.run(y, {x: np.ones((64, 784), np.float32)},
                     options=tf.RunOptions(trace_level=level), run_metadata=md)
            assert md.step_stats.dev_stats
    with pytest.raises(ValueError, match="trace_level is RunOptions.NO_TRACE"):
        tf.RunOptions(trace_level=7)


def test_large_uniform_constants_are_fills_not_megabytes_of_graph():
    # As TF1's zeros/ones: a variable's tf.zeros([5000, 5000]) initial value was a 100 MB Const
    # in the GraphDef sent to every task; it is a Fill of its shape and one value now.
    g = tf.Graph()
    with g.as_default():
        z = tf.zeros([5000, 5000])
        o = tf.ones([3000, 300], dtype=tf.int64)
        c = tf.constant(2.5, shape=[1000, 1000])
        s = tf.constant("ab", shape=[1500])
        small = tf.zeros([10, 10])
        v = tf.Variable(tf.zeros([4000, 1000]))
        assert len(g.as_graph_def().SerializeToString()) < 100000
        assert (z.op.type, small.op.type) == ("Fill", "Const")
        assert z.shape.as_list() == [5000, 5000] and o.dtype == tf.int64
        np.testing.assert_array_equal(tf.get_static_value(c), np.full((1000, 1000), 2.5))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([tf.reduce_sum(z), tf.reduce_sum(o), tf.reduce_sum(c), s[7],
                            tf.reduce_sum(v)])
    assert got == [0.0, 900000, 2500000.0, b"ab", 0.0]


def test_constant_initializer_fills_as_tf1():
    g = tf.Graph()
    with g.as_default():
        big = tf.get_variable("big", [3000, 100], initializer=tf.constant_initializer(0.5))
        exact = tf.get_variable("exact", [2, 2], initializer=tf.constant_initializer([1, 2, 3, 4]))
        short = tf.get_variable("short", [2, 3], initializer=tf.constant_initializer([1, 2, 3]))
        with pytest.raises(ValueError, match="3 values do not fit shape"):
            tf.get_variable("long", [2], initializer=tf.constant_initializer([1, 2, 3]))
        assert len(g.as_graph_def().SerializeToString()) < 100000   # a Fill, not 300,000 floats
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([tf.reduce_sum(big), exact, short])
    assert got[0] == pytest.approx(150000.0, rel=1e-4)
    np.testing.assert_array_equal(got[1], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(got[2], [[1, 2, 3], [3, 3, 3]])   # the last value repeats


def test_integers_out_of_range_are_errors_not_wrapped():
    # numpy wraps them (tf.size of 2^40 elements was 0); TF1 refuses them.
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Can't convert Python int 1099511627776 to a int32"):
            tf.constant(2 ** 40, tf.int32)
        with pytest.raises(ValueError, match="out of range"):
            tf.constant([1, -2 ** 31 - 1], dtype=tf.int32)
        with pytest.raises(ValueError, match="more than int32 holds"):
            tf.size(tf.zeros([1 << 20, 1 << 20]))
        big = tf.size(tf.zeros([1 << 20, 1 << 20]), out_type=tf.int64)
        edge = tf.constant([2 ** 31 - 1, -2 ** 31], tf.int32)
        with tf.Session() as sess:
            assert sess.run(big) == 1 << 40   # the Fill itself never runs
            assert list(sess.run(edge)) == [2 ** 31 - 1, -2 ** 31]


def test_tile_takes_tensor_multiples_and_does_not_unroll():
    # tf.tile(x, [tf.shape(y)[0], 1]) was refused ("multiples as Python ints"), and each copy
    # was a graph input: tile(x, [2**30, 1]) built a list of 2**30 in the client.
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3])
        outs = [tf.tile(p, [tf.shape(p)[0], 2]), tf.tile(p, tf.constant([3, 1])),
                tf.tile(p, tf.placeholder_with_default(np.array([1, 2], np.int32), [2])),
                tf.tile(tf.constant([[True, False]]), [2, 2]), tf.tile(p, [0, 2])]
        assert outs[1].shape.as_list() == [None, 3] and outs[4].shape.as_list() == [0, 6]
        huge = tf.tile(p, [1 << 30, 1 << 30])
        assert huge.shape.as_list() == [None, 3 << 30]
        v = tf.Variable(x)
        weights = np.arange(36, dtype=np.float32).reshape(4, 9)
        grad = tf.gradients(tf.reduce_sum(tf.tile(v, [2, 3]) * weights), v)[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(outs + [grad], {p: x})
            with pytest.raises(tf.errors.ResourceExhaustedError, match="no allocator"):
                sess.run(huge, {p: x})
    want = [np.tile(x, [2, 2]), np.tile(x, [3, 1]), np.tile(x, [1, 2]),
            np.tile([[True, False]], [2, 2]), np.zeros((0, 6))]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[-1], sum(weights[i * 2:i * 2 + 2, j * 3:j * 3 + 3]
                                               for i in range(2) for j in range(3)))


def test_segment_counts_past_int32_are_refused_not_wrapped():
    # bincount(minlength=2**40) wrapped to 0 and returned 2 entries.
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="out of range"):
            tf.bincount([1], minlength=1 << 40)
        with pytest.raises(ValueError, match=r"num_segments must be in \[0, 2\^31\)"):
            tf.unsorted_segment_sum(tf.ones([2]), [0, 1], 1 << 40)
        with tf.Session() as sess:
            assert list(sess.run(tf.bincount([1, 1, 3], minlength=5))) == [0, 2, 0, 1, 0]


def test_session_make_callable_and_partial_run():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [])
        b = tf.placeholder(tf.float32, [], name="b")
        c = a * 2
        d = c + b
        with tf.Session() as sess:
            add = sess.make_callable(d, [a, b])
            assert add(1.0, 2.0) == 4.0 and add(2.0, 0.5) == 4.5
            both = sess.make_callable([c, d], [a, "b:0"], accept_options=True)
            md = tf.RunMetadata()
            assert both(1.0, 2.0, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                        run_metadata=md) == [2.0, 4.0]
            assert md.partition_graph_count >= 1
            assert sess.make_callable(tf.constant(3.0))() == 3.0
            with pytest.raises(TypeError, match="takes 2 feed values"):
                add(1.0)
            with pytest.raises(TypeError, match="accept_options=True"):
                add(1.0, 2.0, options=None)
            with pytest.raises(NotImplementedError, match="partial runs"):
                sess.partial_run_setup([c, d], [a, b])


def test_graph_finalize_collections_and_tf1_graph_members(tmp_path):
    # TF1's training loop guard: graph.finalize() after building, then the loop (an
    # iterator, summaries, a Saver, queue runners) adds nothing; adding an op is RuntimeError.
    g = tf.Graph()
    with g.as_default():
        data = tf.data.Dataset.from_tensor_slices(np.ones((20, 3), np.float32)).batch(5)
        it = data.make_initializable_iterator()
        x = it.get_next()
        pred = tf.layers.dense(x, 1, name="dense")
        loss = tf.reduce_mean(pred)
        tf.summary.scalar("loss", loss)
        merged = tf.summary.merge_all()
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        saver = tf.train.Saver()
        init = tf.global_variables_initializer()
        g.add_to_collections(["a", "b"], loss)
        g.get_collection_ref("a").append(pred)
        assert g.get_collection("a") == [loss, pred] and g.get_collection("b") == [loss]
        g.clear_collection("b")
        assert "b" not in g.get_all_collection_keys() and "a" in g.collections
        assert [op.name for op in x.consumers()][0] == "dense/MatMul"
        with tf.name_scope("outer"):
            assert g.get_name_scope() == tf.get_name_scope() == "outer"
            assert g.unique_name("w") == "outer/w" and g.unique_name("w") == "outer/w_1"
        assert g.as_graph_element("dense/MatMul:0") is pred.op.inputs[0]
        assert g.as_graph_element("dense/MatMul") is pred.op.inputs[0].op
        assert g.as_graph_element(step).op.type == "ReadVariableOp"
        assert pred.op.colocation_groups() == [("loc:@" + pred.op.name).encode()]
        tf.set_random_seed(5)
        assert g.seed == 5
        version = g.version
        g.finalize()
        assert g.finalized
        with tf.Session() as sess:
            sess.run([init, it.initializer])
            for _ in range(4):
                sess.run([train, merged])
            saver.restore(sess, saver.save(sess, str(tmp_path / "m"), global_step=step))
            assert sess.run(step) == 4 and sess.sess_str == ""
        with pytest.raises(RuntimeError, match="Graph is finalized and cannot be modified"):
            tf.constant(1.0)
        assert g.version == version
