"""TF 1.15's tf.distribute strategies (shardflow/distribute/strategy.py and the modules it
names): MirroredStrategy with Keras and Estimators, in-graph replicas over two CPU devices
(experimental_run_v2, reduce, all_reduce, merge_call, distributed datasets) against values
computed by hand, the current-strategy functions, and the errors for what is not supported."""

import numpy as np
import pytest

import shardflow as tf
from shardflow import estimator, keras

TWO_CPUS = tf.ConfigProto(device_count={"CPU": 2})
SUM, MEAN = tf.distribute.ReduceOp.SUM, tf.distribute.ReduceOp.MEAN


@pytest.fixture(autouse=True)
def fresh_graph():
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


def _blobs(n=96, d=4, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, d).astype(np.float32)
    y = (x @ rng.randn(d) > 0).astype(np.int64)
    return x, y


# ---- Keras and Estimators under a strategy --------------------------------------------------


def _keras_weights(strategy):
    keras.backend.clear_session()
    x, y = _blobs()

    def build():
        init = keras.initializers.glorot_uniform
        model = keras.Sequential([
            keras.layers.Dense(8, activation="relu", input_shape=(4,),
                               kernel_initializer=init(seed=1)),
            keras.layers.Dense(2, activation="softmax", kernel_initializer=init(seed=2))])
        model.compile(keras.optimizers.Adam(lr=0.05), "sparse_categorical_crossentropy",
                      metrics=["acc"])
        return model

    if strategy is None:
        model = build()
    else:
        with strategy.scope():
            model = build()
            assert tf.distribute.get_strategy() is strategy
    history = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    return model.get_weights(), history.history["loss"]


def test_keras_under_mirrored_strategy_trains_as_without_it():
    plain_weights, plain_loss = _keras_weights(None)
    strategy = tf.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 1
    assert strategy.extended.worker_devices == ("/device:CPU:0",)
    weights, loss = _keras_weights(strategy)
    assert plain_loss[-1] < plain_loss[0]
    np.testing.assert_allclose(loss, plain_loss, rtol=1e-6)
    for a, b in zip(weights, plain_weights):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    weights, _ = _keras_weights(tf.distribute.MirroredStrategy(devices=["/cpu:0"]))
    np.testing.assert_allclose(weights[0], plain_weights[0], rtol=1e-6, atol=1e-7)


def _model_fn(features, labels, mode):
    assert tf.distribute.get_replica_context().num_replicas_in_sync == 1
    logits = tf.layers.dense(features["x"], 2, name="logits",
                             kernel_initializer=tf.glorot_uniform_initializer(seed=1))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(
        loss, global_step=tf.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                   predictions={"class": tf.argmax(logits, 1)})


def _input_fn():
    x, y = _blobs()
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat(2).batch(16)


def test_estimator_with_run_config_train_distribute_trains(tmp_path):
    kernels = []
    for i, strategy in enumerate([None, tf.distribute.MirroredStrategy()]):
        config = estimator.RunConfig(tf_random_seed=5, train_distribute=strategy,
                                     eval_distribute=strategy)
        assert config.train_distribute is strategy and config.eval_distribute is strategy
        assert config.replace(save_summary_steps=10).train_distribute is strategy
        est = estimator.Estimator(_model_fn, model_dir=str(tmp_path / str(i)), config=config)
        before = est.evaluate(_input_fn, steps=3)["loss"]
        est.train(_input_fn)
        assert int(est.get_variable_value("global_step")) == 12
        assert est.evaluate(_input_fn, steps=3)["loss"] < before
        kernels.append(est.get_variable_value("logits/kernel"))
    np.testing.assert_allclose(kernels[0], kernels[1], rtol=1e-6)


def test_run_config_refuses_several_eval_replicas_and_other_objects():
    # Training takes several replicas (test_tf1_estimator.py); evaluation one.
    with pytest.raises(NotImplementedError, match="one replica"):
        estimator.RunConfig(eval_distribute=tf.distribute.MirroredStrategy(["/cpu:0",
                                                                            "/cpu:1"]))
    with pytest.raises(ValueError, match="eval_distribute"):
        estimator.RunConfig(eval_distribute="mirrored")


# ---- the current strategy and replica context -----------------------------------------------


def test_get_strategy_and_replica_context_inside_and_outside_scopes():
    default = tf.distribute.get_strategy()
    assert not tf.distribute.has_strategy()
    ctx = tf.distribute.get_replica_context()
    assert ctx.replica_id_in_sync_group == 0 and ctx.num_replicas_in_sync == 1
    assert ctx.all_reduce(SUM, 3.0) == 3.0                      # identity with one replica
    assert tf.distribute.get_cross_replica_context() is None

    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope() as entered:
        assert entered is strategy
        assert tf.distribute.get_strategy() is strategy and tf.distribute.has_strategy()
        assert tf.distribute.get_replica_context() is None      # cross-replica, as TF
        assert tf.distribute.in_cross_replica_context()
        v = tf.Variable(1.0, name="v")
        with strategy.scope():                                  # re-entering is fine
            pass
        with pytest.raises(RuntimeError, match="Mixing"):
            with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
                pass
    assert tf.distribute.get_strategy() is default
    assert isinstance(v, tf.Variable) and v in tf.global_variables()

    seen = {}

    def fn():
        ctx = tf.distribute.get_replica_context()
        seen["strategy"] = tf.distribute.get_strategy()
        seen["merge"] = ctx.merge_call(
            lambda s, a: (s, tf.distribute.get_replica_context(), a), args=(7,))
        return ctx.replica_id_in_sync_group

    replica_id = strategy.experimental_run_v2(fn)
    assert seen["strategy"] is strategy
    assert seen["merge"] == (strategy, None, 7)
    with tf.Session() as sess:
        assert sess.run(replica_id) == 0
    assert replica_id.op.device == "/device:CPU:0"
    assert strategy.experimental_local_results(replica_id) == (replica_id,)
    assert strategy.unwrap(5) == (5,)


# ---- two replicas on two CPU devices ---------------------------------------------------------


def test_run_and_reduce_on_two_cpu_devices_give_the_values_by_hand():
    strategy = tf.distribute.MirroredStrategy(devices=["/cpu:0", "/cpu:1"])
    assert strategy.num_replicas_in_sync == 2
    xv = np.arange(12, dtype=np.float32).reshape(4, 3)
    with strategy.scope():
        w = tf.Variable(np.array([1.0, -1.0, 2.0], np.float32), name="w")
    x = tf.data.Dataset.from_tensors(xv)
    it = strategy.experimental_distribute_dataset(x).make_initializable_iterator()

    def fn(rows):
        ctx = tf.distribute.get_replica_context()
        b = tf.get_variable("b", [], initializer=tf.constant_initializer(0.5))
        y = tf.reduce_sum(rows * w, axis=1) + b
        scale = tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32)
        return {"y": y * scale, "total": ctx.all_reduce(SUM, tf.reduce_sum(y)),
                "mean": ctx.all_reduce(MEAN, tf.reduce_sum(y))}

    out = strategy.experimental_run_v2(fn, args=(it.get_next(),))
    y = out["y"]
    assert isinstance(y, tf.distribute.values.PerReplica)
    assert [t.op.device for t in y.values] == ["/device:CPU:0", "/device:CPU:1"]
    assert y.values[1].name.startswith("replica_1/")
    assert sorted(v.op.name for v in tf.global_variables()) == ["b", "w"]   # shared
    fetches = {"local": strategy.experimental_local_results(y),
               "sum": strategy.reduce(SUM, y, axis=None),
               "mean": strategy.reduce(MEAN, y, axis=None),
               "sum0": strategy.reduce(SUM, y, axis=0),
               "mean0": strategy.reduce("mean", y, axis=0),
               "total": strategy.experimental_local_results(out["total"]),
               "all_mean": strategy.reduce(MEAN, out["mean"], axis=None)}
    with tf.Session(config=TWO_CPUS) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(it.initializer)
        got = sess.run(fetches)

    full = xv @ np.array([1.0, -1.0, 2.0], np.float32) + 0.5      # [4.5, 10.5, 16.5, 22.5]
    r0, r1 = full[:2] * 1, full[2:] * 2                           # rows 0-1, rows 2-3 (x2)
    np.testing.assert_allclose(got["local"][0], r0)
    np.testing.assert_allclose(got["local"][1], r1)
    np.testing.assert_allclose(got["sum"], r0 + r1)
    np.testing.assert_allclose(got["mean"], (r0 + r1) / 2)
    np.testing.assert_allclose(got["sum0"], r0.sum() + r1.sum())
    np.testing.assert_allclose(got["mean0"], (r0.sum() + r1.sum()) / 4)
    assert got["total"][0] == got["total"][1] == pytest.approx(full.sum())
    assert got["all_mean"] == pytest.approx(full.sum() / 2)


def test_two_replicas_training_loop_equals_one_device_on_the_global_batch():
    """TF1's custom loop: per-replica gradients of loss / global batch, summed, applied once;
    the same parameters as one device on the whole batch."""
    rng = np.random.RandomState(1)
    xv = rng.randn(32, 3).astype(np.float32)
    yv = (xv @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    results = []
    for devices in (["/cpu:0"], ["/cpu:0", "/cpu:1"]):
        keras.backend.clear_session()
        strategy = tf.distribute.MirroredStrategy(devices)
        with strategy.scope():
            w = tf.Variable(tf.zeros([3, 1]), name="w")
            b = tf.Variable(0.0, name="b")
        ds = tf.data.Dataset.from_tensor_slices((xv, yv)).batch(8)
        it = strategy.make_dataset_iterator(ds)

        def grads(x, y):
            loss = tf.reduce_sum(tf.square(tf.matmul(x, w) + b - y)) / 8.0
            return tf.gradients(loss, [w, b])

        per_replica = strategy.experimental_run_v2(grads, args=it.get_next())
        summed = [strategy.reduce(SUM, g, axis=None) for g in per_replica]
        train = tf.train.GradientDescentOptimizer(0.1).apply_gradients(zip(summed, [w, b]))
        with tf.Session(config=TWO_CPUS) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(it.initialize())
            for _ in range(4):
                sess.run(train)
            results.append(sess.run([w, b]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)
    assert abs(results[0][1]) > 0.01                                # it did train


@pytest.mark.parametrize("make_opt", [lambda: tf.train.GradientDescentOptimizer(0.1),
                                      lambda: tf.train.AdamOptimizer(0.05)])
def test_optimizer_inside_the_replica_function_updates_once_with_the_mean(make_opt):
    """TF1.15's custom loop with the optimizer inside fn: each replica's loss (a mean over its
    examples) scaled by 1/replicas, gradients summed in a merge_call, one update per step (and
    one global-step increment); equal to one device on the global batch."""
    rng = np.random.RandomState(2)
    xv = rng.randn(32, 3).astype(np.float32)
    yv = (xv @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    results = []
    for devices in (["/cpu:0"], ["/cpu:0", "/cpu:1"]):
        keras.backend.clear_session()
        strategy = tf.distribute.MirroredStrategy(devices)
        with strategy.scope():
            w = tf.Variable(tf.zeros([3, 1]), name="w")
            b = tf.Variable(0.0, name="b")
            step = tf.train.get_or_create_global_step()
            opt = make_opt()
        ds = tf.data.Dataset.from_tensor_slices((xv, yv)).batch(8)
        it = strategy.make_dataset_iterator(ds)

        def train_step(x, y):
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            train_op = opt.minimize(loss, global_step=step)
            with tf.control_dependencies([train_op]):
                return tf.identity(loss)

        per_replica_loss = strategy.experimental_run_v2(train_step, args=it.get_next())
        mean_loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica_loss, axis=None)
        with tf.Session(config=TWO_CPUS) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(it.initialize())
            for _ in range(4):
                sess.run(mean_loss)
            results.append(sess.run([w, b, step]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)
    assert results[0][2] == results[1][2] == 4
    assert abs(results[0][1]) > 0.01                                # it did train


def test_input_fn_iterator_gives_each_replica_an_element_in_turn():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    contexts = []

    def input_fn(ctx):
        contexts.append(ctx)
        batch = ctx.get_per_replica_batch_size(4)
        return tf.data.Dataset.range(8).batch(batch)

    it = strategy.make_input_fn_iterator(input_fn)
    assert contexts[0].num_replicas_in_sync == 2 and contexts[0].input_pipeline_id == 0
    with pytest.raises(ValueError, match="not divisible"):
        contexts[0].get_per_replica_batch_size(5)
    values = strategy.experimental_local_results(it.get_next())
    with tf.Session(config=TWO_CPUS) as sess:
        sess.run(it.initialize())
        first, second = sess.run(values), sess.run(values)
    assert [list(v) for v in first] == [[0, 1], [2, 3]]
    assert [list(v) for v in second] == [[4, 5], [6, 7]]


def test_replica_errors_name_the_cause():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with pytest.raises(ValueError, match="replica 1 .* variables of its own: replica_1/own"):
        strategy.experimental_run_v2(lambda: tf.Variable(1.0, name="own"))

    calls = []

    def uneven():                       # replica 0 all-reduces, replica 1 does not
        calls.append(1)
        if len(calls) == 2:
            return tf.constant(0.0)
        return tf.distribute.get_replica_context().all_reduce(SUM, tf.constant(1.0))

    with pytest.raises(RuntimeError, match="same merge_calls"):
        strategy.experimental_run_v2(uneven)

    def failing():
        raise KeyError("inside the replica")

    with pytest.raises(KeyError, match="inside the replica"):
        strategy.experimental_run_v2(failing)
    with pytest.raises(ValueError, match="cannot be reduced"):
        strategy.reduce(SUM, tf.constant(1.0), axis=None)   # the same on both replicas
    with pytest.raises(TypeError, match="ReduceOp"):
        strategy.reduce("max", tf.constant(1.0))
    with pytest.raises(RuntimeError, match="cross-replica"):
        strategy.experimental_run_v2(lambda: strategy.reduce(SUM, tf.constant(1.0)))


# ---- bad input and what is not supported -----------------------------------------------------


def test_bad_devices_are_named():
    with pytest.raises(ValueError, match="unknown device '/tpu:0'"):
        tf.distribute.MirroredStrategy(["/cpu:0", "/tpu:0"])
    with pytest.raises(ValueError, match="'/job:worker/task:1/cpu:0'.*AllReduceOptimizer"):
        tf.distribute.MirroredStrategy(["/job:worker/task:1/cpu:0"])
    with pytest.raises(ValueError, match="named twice"):
        tf.distribute.MirroredStrategy(["/cpu:0", "/device:CPU:0"])
    with pytest.raises(ValueError, match="at least one"):
        tf.distribute.MirroredStrategy([])
    with pytest.raises(TypeError, match=r"devices=\['/cpu:0'\]"):
        tf.distribute.MirroredStrategy("/cpu:0")
    with pytest.raises(ValueError, match="unknown device 'cpu'"):
        tf.distribute.OneDeviceStrategy("cpu")
    if not tf.test.is_gpu_available():
        with pytest.raises(ValueError, match="'/device:GPU:0'.* 0 GPU"):
            tf.distribute.MirroredStrategy(["/gpu:0"])
    assert tf.distribute.MirroredStrategy(
        ["/job:localhost/replica:0/task:0/device:cpu:1", "CPU:0"]).extended.worker_devices == (
        "/device:CPU:1", "/device:CPU:0")


def test_unsupported_strategies_say_what_to_use_and_contrib_alias():
    # Without TF_CONFIG ParameterServerStrategy is one replica on this process
    # (test_tf1_estimator.py trains a chief, a worker and a ps with it).
    assert tf.distribute.experimental.ParameterServerStrategy().num_replicas_in_sync == 1
    # Without TF_CONFIG the multi-worker strategies are one worker (tests/python/
    # test_tf1_estimator.py trains two worker processes with them).
    for cls in (tf.distribute.experimental.MultiWorkerMirroredStrategy,
                tf.contrib.distribute.CollectiveAllReduceStrategy):
        assert cls().num_replicas_in_sync == 1
    with pytest.raises(NotImplementedError, match="MirroredStrategy"):
        tf.distribute.experimental.TPUStrategy()
    strategy = tf.contrib.distribute.MirroredStrategy(num_gpus=0)
    assert isinstance(strategy, tf.distribute.MirroredStrategy)
    assert strategy.extended.worker_devices == ("/device:CPU:0",)
    assert tf.contrib.distribute.MirroredStrategy(
        cross_device_ops=tf.distribute.HierarchicalCopyAllReduce()).num_replicas_in_sync == 1
    one = tf.contrib.distribute.OneDeviceStrategy("/cpu:0")
    assert one.experimental_run_v2(lambda: tf.constant(2.0)).op.device == "/device:CPU:0"


def test_parameter_server_strategy_places_variables_on_the_ps():
    # TF 1.15's ParameterServerStrategy given a cluster (configure, or a cluster resolver as
    # TF_CONFIG gives): variables made in its scope go round-robin to the ps tasks, the rest to
    # this worker; it is one replica per worker.
    cluster = {"ps": ["127.0.0.1:1", "127.0.0.1:2"], "worker": ["127.0.0.1:3", "127.0.0.1:4"]}
    strategy = tf.distribute.experimental.ParameterServerStrategy()
    strategy.configure(cluster_spec=cluster, task_type="worker", task_id=1)
    with tf.Graph().as_default():
        with strategy.scope():
            a = tf.Variable(1.0, name="a")
            b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
            c = a * b
            assert tf.distribute.get_strategy() is strategy
        assert (a.device, b.device) == ("/job:ps/task:0", "/job:ps/task:1")
        assert c.device == "/job:worker/task:1"
        assert strategy.num_replicas_in_sync == 1
        assert strategy.extended.parameter_devices == ("/job:ps/task:0", "/job:ps/task:1")
        assert strategy.extended.worker_devices == ("/job:worker/task:1",)
        assert not strategy.extended.should_checkpoint  # worker 1; worker 0 is the chief
        with strategy.scope():
            model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
            with pytest.raises(NotImplementedError, match="model_to_estimator"):
                model.compile("sgd", "mse")
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type="worker", task_id=0)
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    assert strategy.extended.should_checkpoint
    with tf.Graph().as_default(), strategy.scope():
        assert tf.Variable(0.0).device == "/job:ps/task:0"
    for cluster_spec, task_type, match in (({"worker": ["127.0.0.1:3"]}, "worker", "no \"ps\""),
                                           (cluster, "ps", "task_type is 'ps'"),
                                           (cluster, "worker", "no task worker:7")):
        with pytest.raises(ValueError, match=match):
            tf.distribute.experimental.ParameterServerStrategy().configure(
                cluster_spec=cluster_spec, task_type=task_type, task_id=7)
    with pytest.raises(NotImplementedError, match="a worker process per GPU"):
        tf.contrib.distribute.ParameterServerStrategy(num_gpus_per_worker=2)


def test_simple_cluster_resolver():
    cluster = tf.train.ClusterSpec({"ps": ["h:1"], "worker": ["h:2", "h:3"]})
    r = tf.contrib.cluster_resolver.SimpleClusterResolver(cluster, master="h:2",
                                                          task_type="worker", task_id=1,
                                                          rpc_layer="grpc")
    assert r.cluster_spec().as_dict() == cluster.as_dict()
    assert (r.task_type, r.task_id, r.master()) == ("worker", 1, "grpc://h:2")
    assert r.master("worker", 1) == "grpc://h:3" and r.num_tasks("worker") == 2
    r.task_type, r.task_id = "ps", 0
    assert r.num_tasks() == 1
    r = tf.distribute.cluster_resolver.SimpleClusterResolver({"worker": ["h:2"]})
    assert r.master() == "" and r.master("worker", 0, rpc_layer="") == "h:2"
    # num_accelerators is TF's method (it was an attribute): what was given, or this machine's.
    r = tf.distribute.cluster_resolver.SimpleClusterResolver({"worker": ["h:2"]},
                                                             num_accelerators={"GPU": 2})
    assert r.num_accelerators() == {"GPU": 2}
    here = tf.distribute.cluster_resolver.TFConfigClusterResolver().num_accelerators()
    assert here == {} or set(here) == {"GPU"}   # this machine's GPUs (none in CI)
