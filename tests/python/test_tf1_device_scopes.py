"""TF 1.15's device scopes: nested tf.device scopes merge (the inner one's parts win), device
functions see the op being built (full name, type, node_def, inputs) and what the scopes inside
them asked for, replica_device_setter merges that into the ps or worker device, and devices are
spelt canonically ('/job:worker/task:1/device:CPU:0'). docs/placement.md."""
import random
import socket

import numpy as np
import pytest

import shardflow as tf


def _port():
    """A free loopback port in 23000-23999 (the range these tests may use)."""
    for port in random.sample(range(23000, 24000), 1000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 23000-23999")


def _device_of(fn):
    g = tf.Graph()
    with g.as_default():
        return fn().device


def test_nested_string_scopes_merge_into_the_canonical_spelling():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:1"):
            with tf.device("/cpu:0"):
                nested = tf.constant(1.0, name="nested")
            with tf.device(""):                        # TF1's null merge: changes nothing
                same = tf.constant(1.0)
            with tf.device("/job:ps"):                 # the inner job wins, the task stays
                ps = tf.constant(1.0)
            with tf.device(None):                      # None clears every scope around it
                free = tf.constant(1.0)
        with tf.device("/gpu:0"):
            gpu = tf.constant(1.0)
        with tf.device("/job:worker/cpu:1"):
            worker_cpu = tf.constant(1.0)
        with tf.device(tf.DeviceSpec(job="ps", task=0)), tf.device("/device:CPU:0"):
            spec = tf.constant(1.0)
        with tf.device("cpu:0"):                       # no leading '/', as TF1's DeviceSpec
            no_slash = tf.constant(1.0)
    assert nested.op.device == nested.device == "/job:worker/task:1/device:CPU:0"
    assert same.device == "/job:worker/task:1"
    assert ps.device == "/job:ps/task:1"
    assert free.device == ""
    assert gpu.device == "/device:GPU:0"
    assert worker_cpu.device == "/job:worker/device:CPU:1"
    assert spec.device == "/job:ps/task:0/device:CPU:0"
    assert no_slash.device == "/device:CPU:0"
    node = {n.name: n for n in g.as_graph_def().node}["nested"]
    assert node.device == "/job:worker/task:1/device:CPU:0"


def test_an_op_without_a_leading_slash_device_runs():
    g = tf.Graph()
    with g.as_default(), tf.device("cpu:0"):
        c = tf.constant(1.0) + 1.0
    with tf.Session(graph=g) as sess:
        assert sess.run(c) == 2.0


def test_an_inner_cpu_scope_keeps_the_outer_task_when_the_step_runs():
    ports = [_port(), _port()]
    while ports[1] == ports[0]:
        ports[1] = _port()
    cluster = tf.train.ClusterSpec({"worker": ["127.0.0.1:%d" % p for p in ports]})
    servers = [tf.train.Server(cluster, job_name="worker", task_index=i) for i in range(2)]
    try:
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:worker/task:1"), tf.device("/cpu:0"):
                y = tf.multiply(tf.constant(2.0), 3.0, name="y")
        md = tf.RunMetadata()
        with tf.Session(servers[0].target, graph=g) as sess:
            assert sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                            run_metadata=md) == 6.0
        assert md.placement["y"] == "/job:worker/replica:0/task:1/device:CPU:0"
    finally:
        for s in servers:
            s.stop()


def test_device_functions_and_string_scopes_apply_innermost_first():
    seen = []

    def record(op):
        seen.append(op.device)
        return "/cpu:1"

    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:1"), tf.device(record):
            a = tf.constant(1.0)          # the function's device, merged into the outer scope
        with tf.device(record), tf.device("/job:ps/gpu:0"):
            b = tf.constant(1.0)          # the function sees the inner scope's device
        with tf.device(record):
            c = tf.constant(1.0)          # a function's string is kept as it is (as TF1's)
        with tf.device(lambda op: tf.DeviceSpec(device_type="CPU", device_index=0)):
            d = tf.constant(1.0)
        with tf.device(record), tf.device(None):
            e = tf.constant(1.0)
    assert a.device == "/job:worker/task:1/device:CPU:1"
    assert seen[1] == "/job:ps/device:GPU:0" and b.device == "/cpu:1"
    assert c.device == "/cpu:1"
    assert d.device == "/device:CPU:0"
    assert e.device == "" and len(seen) == 3


def test_device_functions_see_the_full_name_type_node_def_and_inputs():
    seen = {}

    def record(op):
        seen[op.name] = op
        return "/cpu:1" if op.name.startswith("tower1/") else "/cpu:0"

    g = tf.Graph()
    with g.as_default(), tf.device(record):
        with tf.name_scope("tower1"):
            c = tf.constant([[1.0]], name="c")
            m = tf.matmul(c, c)
        first = tf.add(m, 1.0)
        second = tf.add(m, 2.0)
        tf.cast(second, tf.int32, name="cast")
        tf.add_n([first, second], name="sum")
        x = tf.zeros([1, 4])
        for _ in range(2):
            x = tf.layers.dense(x, 4)
    assert (c.device, m.device, first.device) == ("/cpu:1", "/cpu:1", "/cpu:0")
    assert (first.op.name, second.op.name) == ("Add", "Add_1")
    assert {"tower1/c", "tower1/MatMul", "Add", "Add_1", "dense/kernel",
            "dense_1/kernel"} <= set(seen)
    add = seen["Add_1"]
    assert add.type == "Add" and add.node_def.op == "Add" and add.node_def.name == "Add_1"
    assert [t.name for t in add.inputs] == ["tower1/MatMul:0"]
    assert list(add.node_def.input) == ["tower1/MatMul:0"]
    assert seen["cast"].node_def.attr["DstT"].type == tf.int32._enum
    assert [t.name for t in seen["sum"].inputs] == ["Add:0", "Add_1:0"]     # a list input
    assert seen["dense_1/kernel"].type == "VarHandleOp"


def test_the_multi_gpu_assign_to_device_pattern_reads_node_def():
    ps_ops = ["Variable", "VariableV2", "VarHandleOp"]

    def assign_to_device(device, ps_device="/cpu:0"):
        def _assign(op):
            node_def = op if isinstance(op, tf.NodeDef) else op.node_def
            return ps_device if node_def.op in ps_ops else device
        return _assign

    g = tf.Graph()
    with g.as_default(), tf.device(assign_to_device("/cpu:1")):
        w = tf.Variable(tf.zeros([2]), name="w")
        y = w * 2.0
    assert (w.op.device, y.op.device) == ("/cpu:0", "/cpu:1")


def test_hashing_strategies_see_full_variable_names():
    cluster = tf.train.ClusterSpec({"ps": ["h:1", "h:2", "h:3", "h:4"], "worker": ["h:5"]})
    g = tf.Graph()
    with g.as_default():
        x = tf.zeros([1, 8])
        with tf.device(tf.train.replica_device_setter(
                cluster=cluster, ps_strategy=lambda op: len(op.name) % 4)):
            for _ in range(3):
                x = tf.layers.dense(x, 8)
        got = {v.op.name: v.op.device for v in tf.global_variables()}
    assert got["dense/kernel"] == "/job:ps/task:0"       # len 12
    assert got["dense_1/kernel"] == "/job:ps/task:2"     # len 14
    assert got["dense_2/bias"] == "/job:ps/task:0"       # len 12


def test_replica_device_setter_merges_an_inner_cpu_scope():
    cluster = tf.train.ClusterSpec({"ps": ["h:1"], "worker": ["h:2", "h:3"]})
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:1",
                                                      cluster=cluster)):
            with tf.device("/cpu:0"):          # CIFAR-10's _variable_on_cpu, PTB's embedding
                emb = tf.get_variable("emb", initializer=tf.zeros([3]))
                lookup = tf.identity(emb, name="lookup")
            upd = tf.assign_add(emb, tf.ones([3]))
            with tf.device("/job:worker/task:0"):   # a job of its own: no ps task chosen
                other = tf.get_variable("other", [2])
    assert emb.op.device == "/job:ps/task:0/device:CPU:0"
    assert lookup.op.device == "/job:worker/task:1/device:CPU:0"
    assert upd.op.device == emb.op.device
    assert other.op.device == "/job:worker/task:0"


def test_replica_device_setter_ps_ops_name_the_variable_family():
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(
                ps_tasks=2, ps_ops=["Variable", "VariableV2"])):
            v = tf.Variable(1.0, name="v")
            w = tf.get_variable("w", [2])
            y = v * 2.0
    assert (v.op.device, w.op.device) == ("/job:ps/task:0", "/job:ps/task:1")
    assert y.op.device == "/job:worker"


class _Momentum(tf.train.Optimizer):
    """A TF1-style optimizer written in Python: a slot and a non-slot variable."""

    def __init__(self):
        super().__init__(False, "MyMomentum")

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
        self._create_non_slot_variable(0.0, "count", colocate_with=var_list[0])

    def _apply_dense(self, grad, var):
        m = self.get_slot(var, "m")
        return tf.assign_sub(var, 0.1 * tf.assign(m, 0.9 * m + grad)).op


@pytest.mark.parametrize("add_slots", [
    lambda w: _Momentum().minimize(tf.reduce_sum(w * w)),
    lambda w: tf.train.AdadeltaOptimizer(0.1).minimize(tf.reduce_sum(w * w)),
    lambda w: tf.train.ExponentialMovingAverage(0.9).apply([w])])
def test_optimizer_slots_stay_with_their_variable_and_take_no_ps_turn(add_slots):
    # TF1 makes slots (and moving averages) under colocate_with(var), which replaces the device
    # functions around: the ps strategy is not asked, so the next variable takes the next task.
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=3)):
            w = tf.Variable(np.zeros(3, np.float32), name="w")
            add_slots(w)
            tf.Variable(0.0, name="after")
        handles = {op.name: op.device for op in g.get_operations() if op.type == "VarHandleOp"}
    assert len(handles) >= 3 and w.device == "/job:ps/task:0", handles
    assert {n: d for n, d in handles.items() if d != w.device} == {"after": "/job:ps/task:1"}


def test_colocate_with_replaces_the_device_scopes_around_it():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="v")
        with tf.device("/job:worker/task:1/cpu:0"), tf.colocate_with(v):
            near = tf.identity(v.value(), name="near")
    assert near.op.device == "/job:ps/task:0"


def test_small_device_api_differences():
    with pytest.raises(ValueError, match="multiple device types"):
        tf.DeviceSpec.from_string("/cpu:0/cpu:1")
    spec = tf.DeviceSpec.from_string("/job:ps/task:1")
    assert spec.parse_from_string("/gpu:0").to_string() == "/device:GPU:0"   # all parts reset
    no_ps = tf.train.ClusterSpec({"worker": ["h:1"]})
    assert tf.train.replica_device_setter(cluster=no_ps) is None
    assert tf.train.replica_device_setter(ps_tasks=0) is None
    assert tf.ConfigProto(device_count={"TPU": 2, "CPU": 2}).cpu_device_count == 2
    cpus = tf.config.experimental.list_physical_devices("CPU")
    assert cpus[0].name == "/physical_device:CPU:0" and cpus[0].device_type == "CPU"
    assert tf.config.experimental.list_physical_devices()[0] == cpus[0]
    logical = tf.config.experimental.list_logical_devices("CPU")
    assert logical[0].name.endswith("/device:CPU:0") and logical[0].device_type == "CPU"
    tf.config.experimental.set_memory_growth(cpus[0], True)
