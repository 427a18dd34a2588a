"""Sessions on a cluster from Python: two `shardflow server` processes on loopback, a graph split
over their tasks with sf.device, results equal to a local session, training, profiling, and
errors for an unreachable master."""

import contextlib
import json
import os
import time

import numpy as np
import pytest

import shardflow as sf

from cluster_util import BINARY, free_port, start_servers, stop_servers, write_cluster


def ucx_built():
    """Whether `shardflow server --transport ucx` gets UCX (a build without it falls back)."""
    return os.path.exists(os.path.join(os.path.dirname(BINARY), "..", "distributed",
                                       "CMakeFiles", "shardflow_ucx.dir"))


# Every test below runs with tensors over each transport: the default (auto: shared memory
# between these two local tasks), gRPC and UCX (docs/distributed.md, "Choosing a transport").
@pytest.fixture(scope="module", params=["auto", "grpc", "ucx"])
def cluster(tmp_path_factory, request):
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    spec = tmp_path_factory.mktemp("cluster") / "cluster.json"
    ports = write_cluster(spec)
    procs, lines = start_servers(spec, 2, "--transport", request.param, banner=True)
    if request.param == "grpc" or ucx_built():
        over = {"auto": "ucx with this host's tasks"}.get(request.param, request.param)
        for line in lines:
            assert "tensors over %s" % over in line, line
    yield f"grpc://127.0.0.1:{ports[0]}"
    stop_servers(procs)


def split_graph(distributed=True):
    def on(task):
        return sf.device(f"/job:worker/task:{task}") if distributed else contextlib.nullcontext()

    g = sf.Graph()
    with g.as_default():
        with on(0):
            x = sf.placeholder(sf.float32, [4, 3], name="x")
        with on(1):
            w = sf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, name="w")
            h = sf.nn.relu(x @ w)
        with on(0):
            loss = sf.reduce_sum(h * h)
        train = sf.train.AdamOptimizer(0.01).minimize(loss)
        init = sf.global_variables_initializer()
    return g, x, loss, train, init


def test_split_graph_runs_and_trains_like_a_local_session(cluster):
    xv = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    results = {}
    for target in ["", cluster]:
        g, x, loss, train, init = split_graph(distributed=bool(target))
        with sf.Session(target, graph=g, config=sf.ConfigProto(intra_op_threads=1)) as sess:
            sess.run(init)
            curve = [sess.run([loss, train], {x: xv})[0] for _ in range(5)]
        results[target or "local"] = np.array(curve)
    assert results[cluster][-1] < results[cluster][0]
    np.testing.assert_array_equal(results["local"], results[cluster])


def test_profile_of_a_distributed_step_has_both_tasks(cluster):
    g, x, loss, train, init = split_graph()
    with sf.Session(cluster, graph=g) as sess:
        sess.run(init)
        md = sf.RunMetadata()
        sess.run(loss, {x: np.ones((4, 3), np.float32)},
                 options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE), run_metadata=md)
    trace = json.loads(sf.profiler.chrome_trace(md))
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert any("task:0" in n for n in names) and any("task:1" in n for n in names)
    starts = sorted(e["id"] for e in trace["traceEvents"] if e.get("ph") == "s")
    ends = sorted(e["id"] for e in trace["traceEvents"] if e.get("ph") == "f")
    assert starts and starts == ends


def test_an_unreachable_master_is_an_unavailable_error():
    g = sf.Graph()
    with g.as_default():
        c = sf.constant(1.0)
    port = free_port()
    with pytest.raises(sf.errors.UnavailableError) as e:
        with sf.Session(f"grpc://127.0.0.1:{port}", graph=g) as sess:
            sess.run(c)
    assert f"127.0.0.1:{port}" in str(e.value)
    assert isinstance(e.value, ConnectionError)


def test_in_process_servers_move_tensors_over_ucx_as_tf1s_grpc_plus_verbs_did():
    ports = [free_port(), free_port()]
    spec = sf.train.ClusterSpec({"worker": ["127.0.0.1:%d" % p for p in ports]})
    # TF1's spelling on one task, ConfigProto's on the other.
    servers = [sf.train.Server(spec, job_name="worker", task_index=0, protocol="grpc+ucx"),
               sf.train.Server(spec, job_name="worker", task_index=1,
                               config=sf.ConfigProto(transport="ucx"))]
    xv = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    results = {}
    try:
        for target in ["", servers[0].target]:
            g, x, loss, train, init = split_graph(distributed=bool(target))
            with sf.Session(target, graph=g) as sess:
                sess.run(init)
                results[target or "local"] = [sess.run([loss, train], {x: xv})[0]
                                              for _ in range(4)]
    finally:
        for s in servers:
            s.stop()
    np.testing.assert_array_equal(results["local"], results[servers[0].target])
    # TF1's other data planes get an error that names the one shardflow has.
    with pytest.raises(ValueError, match=r"grpc\+ucx"):
        sf.train.Server(spec, job_name="worker", task_index=0, protocol="grpc+verbs")
    with pytest.raises(ValueError, match="'grpc' or 'ucx'"):
        sf.ConfigProto(transport="verbs")


def test_device_filters_keep_a_workers_session_to_the_ps_and_itself():
    # TF1's between-graph setup: worker 0's session filters to the ps and itself, so it neither
    # waits for worker 1 (never started here) nor places anything there.
    ports = [free_port() for _ in range(3)]
    spec = sf.train.ClusterSpec({"ps": ["127.0.0.1:%d" % ports[0]],
                                 "worker": ["127.0.0.1:%d" % p for p in ports[1:]]})
    ps = sf.train.Server(spec, job_name="ps", task_index=0)
    # Without filters a session here would wait this long for worker 1 before leaving it out.
    worker = sf.train.Server(spec, job_name="worker", task_index=0, connect_timeout=120)
    try:
        g = sf.Graph()
        with g.as_default():
            with sf.device("/job:ps/task:0"):
                v = sf.Variable([1.0, 2.0], name="v")
            with sf.device("/job:worker/task:0"):
                y = v * 3.0
            init = sf.global_variables_initializer()
        config = sf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:0"])
        start = time.monotonic()
        with sf.Session(worker.target, graph=g, config=config) as sess:
            sess.run(init)
            np.testing.assert_allclose(sess.run(y), [3.0, 6.0])
        assert time.monotonic() - start < 60, "the session waited for the filtered-out worker"
        # As TF1 programs fill the proto's repeated field: appended after construction.
        appended = sf.ConfigProto()
        appended.device_filters.append("/job:ps")
        appended.device_filters.append("/job:worker/task:0")
        with sf.Session(worker.target, graph=g, config=appended) as sess:
            sess.run(init)
            np.testing.assert_allclose(sess.run(y), [3.0, 6.0])
        with pytest.raises(sf.errors.InvalidArgumentError, match="no task of the cluster matches"):
            with sf.Session(worker.target, graph=g,
                            config=sf.ConfigProto(device_filters=["/job:chief"])) as sess:
                sess.run(init)
        with pytest.raises(sf.errors.InvalidArgumentError, match="'/job:ps/task:x' is not a"):
            with sf.Session(worker.target, graph=g,
                            config=sf.ConfigProto(device_filters=["/job:ps/task:x"])) as sess:
                sess.run(init)
        # A graph (placed whole) that pins a node to a filtered-out task is refused by name.
        with g.as_default():
            with sf.device("/job:worker/task:1"):
                elsewhere = v * 5.0
        with pytest.raises(sf.errors.InvalidArgumentError,
                           match="task:1 is left out by the session's device_filters"):
            with sf.Session(worker.target, graph=g, config=config) as sess:
                sess.run(elsewhere)
        with pytest.raises(TypeError, match="device names"):
            sf.ConfigProto(device_filters=[3])
        # From the client, so bounded: a flood of filters is refused, the server serves on.
        with pytest.raises(sf.errors.InvalidArgumentError, match="at most 256"):
            with sf.Session(worker.target, graph=g,
                            config=sf.ConfigProto(device_filters=["/job:ps"] * 300)) as sess:
                sess.run(init)
    finally:
        worker.stop()
        ps.stop()


@pytest.mark.parametrize("remote", [False, True])
def test_operation_timeout_in_ms_bounds_every_run(remote):
    server = sf.train.Server.create_local_server() if remote else None
    try:
        g = sf.Graph()
        with g.as_default():
            q = sf.FIFOQueue(2, sf.float32)
            dequeue = q.dequeue()  # nothing is ever enqueued: it would wait forever
            enqueue = q.enqueue(1.0)
        target = server.target if remote else ""
        with sf.Session(target, graph=g,
                        config=sf.ConfigProto(operation_timeout_in_ms=300)) as sess:
            with pytest.raises(sf.errors.DeadlineExceededError, match="300 ms"):
                sess.run(dequeue)
            # RunOptions' own limit wins over the session's.
            with pytest.raises(sf.errors.DeadlineExceededError, match="150 ms"):
                sess.run(dequeue, options=sf.RunOptions(timeout_in_ms=150))
            sess.run(enqueue)
            assert sess.run(dequeue) == 1.0
    finally:
        if server is not None:
            server.stop()


def test_cluster_spec_round_trips_through_tf1s_cluster_def():
    spec = sf.train.ClusterSpec({"ps": ["127.0.0.1:2222"],
                                 "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]})
    cluster_def = spec.as_cluster_def()
    assert [j.name for j in cluster_def.job] == ["ps", "worker"]
    assert cluster_def.job[1].tasks == {0: "127.0.0.1:2223", 1: "127.0.0.1:2224"}
    assert sf.train.ClusterSpec(cluster_def) == spec
    assert spec and not sf.train.ClusterSpec({})
    port = free_port()
    server = sf.train.Server(sf.train.ClusterSpec({"local": ["127.0.0.1:%d" % port]})
                             .as_cluster_def(), job_name="local", task_index=0)
    try:
        with sf.Graph().as_default() as g:
            c = sf.constant(2.0) * 3.0
        with sf.Session(server.target, graph=g) as sess:
            assert sess.run(c) == 6.0
    finally:
        server.stop()


def test_session_reset_clears_the_clusters_variables_and_queues(cluster):
    # TF1's tf.Session.reset(target): variables and queues live on the tasks across sessions
    # until then; after it, the next session finds them uninitialised (and the queue empty).
    def build():
        g = sf.Graph()
        with g.as_default():
            with sf.device("/job:worker/task:0"):
                a = sf.Variable(1.0, name="reset_a")
            with sf.device("/job:worker/task:1"):
                b = sf.Variable(2.0, name="reset_b")
                queue = sf.FIFOQueue(4, sf.float32, shared_name="reset_q")
            ops = dict(init=sf.global_variables_initializer(), bump=[a.assign_add(1.0),
                       b.assign_add(1.0)], uninit=sf.report_uninitialized_variables(),
                       enqueue=queue.enqueue(5.0), size=queue.size())
        return g, ops
    g, ops = build()
    with sf.Session(cluster, graph=g) as sess:
        sess.run(ops["init"])
        sess.run(ops["bump"])
        sess.run(ops["enqueue"])
    g, ops = build()
    with sf.Session(cluster, graph=g) as sess:  # state outlives the session, as in TF1
        assert list(sess.run(ops["uninit"])) == []
        assert sess.run(ops["bump"]) == [3.0, 4.0]
        assert sess.run(ops["size"]) == 1
    sf.Session.reset(cluster)
    g, ops = build()
    with sf.Session(cluster, graph=g) as sess:
        assert sorted(n.decode() for n in sess.run(ops["uninit"])) == ["reset_a", "reset_b"]
        assert sess.run(ops["size"]) == 0
    # A container other than the default one holds nothing here; too many names are refused.
    sf.Session.reset(cluster, containers=["experiment"])
    with pytest.raises(sf.errors.InvalidArgumentError, match="at most 64"):
        sf.Session.reset(cluster, containers=["c%d" % i for i in range(65)])
    with pytest.raises(TypeError, match="list of container names"):
        sf.Session.reset(cluster, containers="experiment")
    sf.Session.reset("")  # a local target: nothing shared to reset


def test_session_reset_names_a_task_that_is_down(tmp_path):
    spec = tmp_path / "cluster.json"
    ports = write_cluster(spec)
    procs = start_servers(spec, 2)
    procs[1].kill()
    procs[1].wait()
    try:
        with pytest.raises(sf.errors.UnavailableError, match="task:1"):
            sf.Session.reset(f"grpc://127.0.0.1:{ports[0]}")
        # device_filters leave the dead task out
        sf.Session.reset(f"grpc://127.0.0.1:{ports[0]}",
                         config=sf.ConfigProto(device_filters=["/job:worker/task:0"]))
    finally:
        stop_servers(procs[:1])


def test_ops_without_a_device_run_on_the_masters_own_task():
    # As TF1's: a session opened at a task's server places ops that request no device on that
    # task (before, on the first device of the cluster, task 0's, from every task's session).
    ports = [free_port(), free_port()]
    cluster = sf.train.ClusterSpec({"worker": ["127.0.0.1:%d" % p for p in ports]})
    servers = [sf.train.Server(cluster, job_name="worker", task_index=i) for i in range(2)]
    try:
        for task, server in enumerate(servers):
            g = sf.Graph()
            with g.as_default():
                x = sf.constant(2.0, name="x")
                y = sf.multiply(x, 3.0, name="y")
            md = sf.RunMetadata()
            with sf.Session(server.target, graph=g) as sess:
                assert sess.run(y, options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE),
                                run_metadata=md) == 6.0
            assert "/task:%d/" % task in md.placement["y"], md.placement
    finally:
        for server in servers:
            server.stop()


def test_plaintext_beyond_loopback_is_asked_for_by_argument_or_SHARDFLOW_PLAINTEXT(monkeypatch):
    # Refused before anything listens or connects; across real (emulated) hosts, with
    # SHARDFLOW_PLAINTEXT=1 and an unchanged TF1 program: tests/distributed/netns_test.py.
    monkeypatch.delenv("SHARDFLOW_PLAINTEXT", raising=False)
    cluster = sf.train.ClusterSpec({"worker": [f"10.255.255.1:{free_port()}"]})
    with pytest.raises(sf.errors.FailedPreconditionError, match="SHARDFLOW_PLAINTEXT=1"):
        sf.train.Server(cluster, job_name="worker", task_index=0)
    g = sf.Graph()
    with g.as_default():
        sf.constant(1.0)
    with pytest.raises(sf.errors.FailedPreconditionError, match="plaintext=True"):
        sf.Session("grpc://10.255.255.1:2222", graph=g)
    assert not sf.ConfigProto().plaintext and sf.ConfigProto(plaintext=True).plaintext
    monkeypatch.setenv("SHARDFLOW_PLAINTEXT", "1")
    assert sf.ConfigProto().plaintext and not sf.ConfigProto(plaintext=False).plaintext
    monkeypatch.setenv("SHARDFLOW_PLAINTEXT", "sometimes")
    with pytest.raises(ValueError, match="SHARDFLOW_PLAINTEXT is 'sometimes'"):
        sf.ConfigProto()
    with pytest.raises(ValueError, match="SHARDFLOW_PLAINTEXT"):
        sf.train.Server(cluster, job_name="worker", task_index=0)
    # A loopback server's target is its own address.
    monkeypatch.delenv("SHARDFLOW_PLAINTEXT")
    port = free_port()
    server = sf.train.Server(sf.train.ClusterSpec({"worker": [f"127.0.0.1:{port}"]}),
                             job_name="worker", task_index=0)
    assert server.target == f"grpc://127.0.0.1:{port}"


@pytest.mark.parametrize("value", ["-5", "0", "soon", "inf"])
def test_a_bad_SHARDFLOW_CONNECT_TIMEOUT_is_an_error_naming_it(monkeypatch, value):
    monkeypatch.setenv("SHARDFLOW_CONNECT_TIMEOUT", value)   # -5 fell back to 30 s silently
    cluster = sf.train.ClusterSpec({"worker": [f"127.0.0.1:{free_port()}"]})
    with pytest.raises(ValueError, match="SHARDFLOW_CONNECT_TIMEOUT is '%s'" % value):
        sf.train.Server(cluster, job_name="worker", task_index=0)
    monkeypatch.delenv("SHARDFLOW_CONNECT_TIMEOUT")
    with pytest.raises(ValueError, match="connect_timeout"):
        sf.train.Server(cluster, job_name="worker", task_index=0, connect_timeout=0)
