"""Parameter-server training from Python, as TF1 programs write it (issue 12): the TF1-style
example (examples/python/between_graph_ps.py) as 1 ps + 2 worker processes, synchronous and
asynchronous, against the same program on one worker; resume from the chief's checkpoint after a
worker is killed; and in process: replica_device_setter's placement, variables shared between
two graphs, and the bad-input errors (a worker's variable that disagrees with the ps's, a ps that
never comes up, replicas_to_aggregate larger than the workers)."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import shardflow as sf
from cluster_util import BINARY, free_port, start_server, start_servers, write_cluster
from conftest import REPO_ROOT

EXAMPLE = os.path.join(REPO_ROOT, "examples", "python", "between_graph_ps.py")
HAVE_DATA = os.path.exists("/usr/share/datasets/fashion-mnist")
needs_data = pytest.mark.skipif(not HAVE_DATA, reason="apt-get install dataset-fashion-mnist")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(sf.__file__))
    return env


def _start(args, log):
    return subprocess.Popen([sys.executable, EXAMPLE, *args], env=_env(), stdout=log,
                            stderr=subprocess.STDOUT, text=True)


class Job:
    """1 ps + `workers` worker processes of the example on free loopback ports."""

    def __init__(self, tmp_path, workers=2, extra=()):
        self.ports = [free_port() for _ in range(1 + workers)]
        self.common = ["--ps", "127.0.0.1:%d" % self.ports[0],
                       "--workers", ",".join("127.0.0.1:%d" % p for p in self.ports[1:]),
                       *extra]
        self.logs = {}
        self.procs = {}
        self.tmp = tmp_path
        self._launch("ps", 0)
        for task in range(workers - 1, -1, -1):  # the chief last: the others wait for it
            self._launch("worker", task)

    def _launch(self, job, task):
        name = "%s%d" % (job, task)
        path = self.tmp / ("%s-%d.log" % (name, len(self.logs)))
        self.logs[name] = path
        self.procs[name] = _start([*self.common, "--job", job, "--task", str(task)],
                                  open(path, "w"))

    def output(self, name):
        return self.logs[name].read_text()

    def wait_workers(self, timeout=240):
        for name, p in self.procs.items():
            if name.startswith("worker"):
                assert p.wait(timeout=timeout) == 0, self.output(name)

    def kill_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


def _accuracy(text):
    m = re.search(r"test accuracy: ([0-9.]+)%", text)
    assert m, text
    return float(m.group(1))


@pytest.fixture(scope="module")
def single_worker_accuracy():
    out = subprocess.run([sys.executable, EXAMPLE, "--steps", "800"], env=_env(),
                         capture_output=True, text=True, timeout=300, check=True).stdout
    return _accuracy(out)


@needs_data
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_one_ps_two_workers_train_to_the_single_worker_accuracy(tmp_path, mode,
                                                                single_worker_accuracy):
    job = Job(tmp_path, extra=["--steps", "800"] + (["--async"] if mode == "async" else []))
    try:
        job.wait_workers()
        chief = job.output("worker0")
        acc = _accuracy(chief)
        print("%s: 1 ps + 2 workers %.2f%%, one worker %.2f%%" % (mode, acc,
                                                                   single_worker_accuracy))
        # Asynchronous updates are computed on parameters a few updates old, more so when the
        # machine is loaded, and the chief evaluates whatever the ps holds when it stops, possibly
        # mid-update from the other worker (ctest -j2 on 2 vCPUs: 75.8-83% seen at 800 steps,
        # 82-83% alone; CI on 2026-11-26 saw 75.77% against 83.44%). A broken async path (lost
        # or garbled updates) stays near 10-60%, well below the bound.
        assert acc >= single_worker_accuracy - (3.0 if mode == "sync" else 11.0), chief
        assert "worker 1: global step" in job.output("worker1")
    finally:
        job.kill_all()


@needs_data
def test_a_restarted_job_resumes_from_the_chiefs_last_checkpoint(tmp_path):
    ckpt = tmp_path / "ckpt"
    extra = ["--steps", "100000", "--checkpoint-dir", str(ckpt), "--save-steps", "50"]
    job = Job(tmp_path, extra=extra)
    try:
        deadline = time.monotonic() + 120
        while not re.search(r"global step [3-9]\d\d", job.output("worker0")):
            assert time.monotonic() < deadline, job.output("worker0")
            assert job.procs["worker0"].poll() is None, job.output("worker0")
            time.sleep(0.2)
        job.procs["worker1"].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        # The chief's synchronous step does not wait for the dead worker's gradients: it fails
        # within 10 s, naming it (the sync hook watches the other tasks).
        code = job.procs["worker0"].wait(timeout=60)
        elapsed = time.monotonic() - killed
        chief = job.output("worker0")
        assert code != 0 and "task /job:worker/replica:0/task:1" in chief, chief[-3000:]
        assert elapsed < 10, "%.1f s: %s" % (elapsed, chief[-3000:])
    finally:
        job.kill_all()  # a launcher restarts the whole job
    latest = sf.train.latest_checkpoint(str(ckpt))
    assert latest is not None
    saved_step = int(latest.rsplit("-", 1)[1])
    assert saved_step >= 250
    extra[1] = str(saved_step + 200)
    job = Job(tmp_path, extra=extra)
    try:
        job.wait_workers()
        chief = job.output("worker0")
        # The chief restored the checkpoint's step; the other worker may already have made the
        # first update by the time the chief reads it (the first tokens let steps start).
        start = int(re.search(r"worker 0 starts at global step (\d+)", chief).group(1))
        assert saved_step <= start <= saved_step + 2, chief
        assert _accuracy(chief) > 70, chief
        assert sf.train.latest_checkpoint(str(ckpt)).endswith("-%d" % (saved_step + 200))
    finally:
        job.kill_all()


@needs_data
def test_a_restarted_worker_rejoins_an_asynchronous_job(tmp_path):
    # A worker killed and started again at its address is a new process: the ps must pull its
    # gradients from the new one. Under the default transport ("auto": UCX shared memory with
    # tasks on this host) the ps's endpoint to the dead process waited forever (Note [Restarted
    # peers] in distributed/ucx/ucx_data_plane.cc); the restarted worker hung in its first step.
    job = Job(tmp_path, extra=["--steps", "100000", "--async"])
    try:
        deadline = time.monotonic() + 120
        while "worker 1: global step" not in job.output("worker1"):
            assert time.monotonic() < deadline, job.output("worker1")
            assert job.procs["worker1"].poll() is None, job.output("worker1")
            time.sleep(0.2)
        job.procs["worker1"].send_signal(signal.SIGKILL)
        job.procs["worker1"].wait(timeout=10)
        job._launch("worker", 1)
        deadline = time.monotonic() + 90
        while "worker 1: global step" not in job.output("worker1"):
            assert time.monotonic() < deadline, "the restarted worker made no step: " + \
                job.output("worker1")[-3000:]
            assert job.procs["worker1"].poll() is None, job.output("worker1")
            time.sleep(0.2)
        assert job.procs["worker0"].poll() is None, job.output("worker0")   # still training
    finally:
        job.kill_all()


# ---- in process ----------------------------------------------------------------------------


def _cluster(ps=1, workers=1):
    return sf.train.ClusterSpec({
        "ps": ["127.0.0.1:%d" % free_port() for _ in range(ps)],
        "worker": ["127.0.0.1:%d" % free_port() for _ in range(workers)]})


def test_replica_device_setter_puts_variables_on_the_ps_round_robin_or_by_bytes():
    cluster = _cluster(ps=2)
    g = sf.Graph()
    with g.as_default(), sf.device(sf.train.replica_device_setter(
            cluster=cluster, worker_device="/job:worker/task:0")):
        a = sf.Variable(np.zeros((100, 100), np.float32), name="a")
        b = sf.Variable(np.zeros(3, np.float32), name="b")
        c = sf.Variable(np.zeros(3, np.float32), name="c")
        y = a.value() * 2.0
        assign = b.assign(np.ones(3, np.float32))
    assert [v.device for v in (a, b, c)] == ["/job:ps/task:0", "/job:ps/task:1",
                                             "/job:ps/task:0"]
    assert a.value().op.device == "/job:ps/task:0"
    assert assign.device == "/job:ps/task:1"
    assert y.op.device == "/job:worker/task:0"
    g = sf.Graph()
    with g.as_default(), sf.device(sf.train.replica_device_setter(
            cluster=cluster, ps_strategy=sf.train.GreedyLoadBalancingStrategy(2))):
        big = sf.Variable(np.zeros((100, 100), np.float32), name="big")
        small = [sf.Variable(np.zeros(3, np.float32), name="s%d" % i) for i in range(3)]
    assert big.device == "/job:ps/task:0"
    assert [v.device for v in small] == ["/job:ps/task:1"] * 3
    # Every variable an optimizer makes lives on a ps too: its slots with their variables, and
    # Adam's beta powers with the first variable (as TF1's), so that the chief's
    # initialisation covers them and the workers share one count.
    g = sf.Graph()
    with g.as_default(), sf.device(sf.train.replica_device_setter(
            cluster=cluster, worker_device="/job:worker/task:1")):
        w = sf.Variable(np.zeros(3, np.float32), name="w")
        u = sf.Variable(np.zeros(3, np.float32), name="u")
        sf.train.AdamOptimizer(0.1).minimize(sf.reduce_sum(w * w + u * u),
                                             global_step=sf.train.get_or_create_global_step())
    handles = {op.name: op.device for op in g.get_operations() if op.type == "VarHandleOp"}
    assert handles["beta1_power"] == handles["beta2_power"] == w.device, handles
    assert all(d.startswith("/job:ps/") for d in handles.values()), handles


def test_two_graphs_share_the_ps_variables_and_a_disagreeing_shape_is_named():
    cluster = _cluster()
    ps = sf.train.Server(cluster, "ps", 0)
    worker = sf.train.Server(cluster, "worker", 0)
    setter = sf.train.replica_device_setter(cluster=cluster, worker_device="/job:worker/task:0")
    g1 = sf.Graph()
    with g1.as_default(), sf.device(setter):
        w = sf.Variable(np.full((2, 2), 3.0, np.float32), name="w")
        init = sf.global_variables_initializer()
    with sf.Session(worker.target, graph=g1) as sess:
        sess.run(init)
    g2 = sf.Graph()
    with g2.as_default(), sf.device(sf.train.replica_device_setter(cluster=cluster)):
        w2 = sf.Variable(np.zeros((2, 2), np.float32), name="w")  # not initialised here
    with sf.Session(worker.target, graph=g2) as sess:
        np.testing.assert_array_equal(sess.run(w2), np.full((2, 2), 3.0))
    g3 = sf.Graph()
    with g3.as_default(), sf.device(sf.train.replica_device_setter(cluster=cluster)):
        w3 = sf.Variable(np.zeros((2, 5), np.float32), name="w")
    with sf.Session(worker.target, graph=g3) as sess:
        with pytest.raises(sf.errors.InvalidArgumentError, match=r"variable 'w'.*\[2,2\].*\[2,5\]"):
            sess.run(w3)
    worker.stop()
    ps.stop()


def test_a_ps_that_never_comes_up_is_named_after_a_bounded_wait():
    cluster = _cluster()
    worker = sf.train.Server(cluster, "worker", 0, connect_timeout=1)
    g = sf.Graph()
    with g.as_default(), sf.device(sf.train.replica_device_setter(cluster=cluster)):
        v = sf.Variable(np.zeros(2, np.float32), name="v")
        init = sf.global_variables_initializer()
    start = time.monotonic()
    with sf.Session(worker.target, graph=g) as sess:
        with pytest.raises(sf.errors.OpError, match=r"/job:ps/replica:0/task:0"):
            sess.run(init)
    assert time.monotonic() - start < 30
    del v
    worker.stop()


def test_replicas_to_aggregate_larger_than_the_workers_is_refused():
    with pytest.raises(ValueError, match="replicas_to_aggregate"):
        sf.train.SyncReplicasOptimizer(sf.train.GradientDescentOptimizer(0.1),
                                       replicas_to_aggregate=3, total_num_replicas=2)


def test_a_server_for_a_task_the_cluster_lacks_is_refused():
    cluster = _cluster()
    with pytest.raises(ValueError, match="task 3"):
        sf.train.Server(cluster, "worker", 3)
    with pytest.raises(ValueError, match="no job 'chief'"):
        sf.train.Server(cluster, "chief", 0)


def test_sync_replicas_in_one_process_with_sgd_matches_the_mean_gradient():
    """One worker, replicas_to_aggregate=1: each step applies exactly its own gradient, so the
    parameters equal plain SGD's after the same steps."""
    cluster = _cluster()
    ps = sf.train.Server(cluster, "ps", 0)
    worker = sf.train.Server(cluster, "worker", 0)
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(5, 8, 3)).astype(np.float32)

    def build(sync):
        g = sf.Graph()
        with g.as_default(), sf.device(sf.train.replica_device_setter(
                cluster=cluster, worker_device="/job:worker/task:0") if sync else None):
            x = sf.placeholder(sf.float32, [None, 3])
            w = sf.Variable(np.ones((3, 1), np.float32), name="w_sync" if sync else "w")
            loss = sf.reduce_mean(sf.square(x @ w - 1.0))
            step = sf.train.get_or_create_global_step()
            opt = sf.train.GradientDescentOptimizer(0.1)
            hooks = [sf.train.StopAtStepHook(last_step=len(xs))]
            if sync:
                opt = sf.train.SyncReplicasOptimizer(opt, 1, 1)
                hooks.append(opt.make_session_run_hook(True, num_tokens=0))
            train = opt.minimize(loss, global_step=step)
        return g, x, w, step, train, hooks

    results = []
    for sync in (False, True):
        g, x, w, step, train, hooks = build(sync)
        with g.as_default(), sf.train.MonitoredTrainingSession(
                master=worker.target if sync else "", is_chief=True, hooks=hooks) as sess:
            i = 0
            while not sess.should_stop():
                sess.run(train, {x: xs[i]})
                i += 1
            results.append((sess.run(w), sess.run(step), i))
    (w_plain, s_plain, n_plain), (w_sync, s_sync, n_sync) = results
    assert n_plain == n_sync == len(xs) and s_plain == s_sync == len(xs)
    np.testing.assert_allclose(w_sync, w_plain, rtol=1e-5)
    worker.stop()
    ps.stop()


def test_tasks_started_with_different_cluster_specs_are_refused_naming_the_task():
    p0, w0, w1 = free_port(), free_port(), free_port()
    ps = sf.train.Server({"ps": ["127.0.0.1:%d" % p0], "worker": ["127.0.0.1:%d" % w0]}, "ps", 0)
    worker = sf.train.Server({"ps": ["127.0.0.1:%d" % p0],
                              "worker": ["127.0.0.1:%d" % w0, "127.0.0.1:%d" % w1]},
                             "worker", 0, connect_timeout=1)
    g = sf.Graph()
    with g.as_default(), sf.device(sf.train.replica_device_setter(ps_tasks=1)):
        v = sf.Variable(np.zeros(2, np.float32), name="v")
    with sf.Session(worker.target, graph=g) as sess:
        with pytest.raises(sf.errors.FailedPreconditionError,
                           match=r"task /job:ps/replica:0/task:0 was started with another "
                                 r"cluster spec.*/job:worker/replica:0/task:1"):
            sess.run(v.initializer)
    worker.stop()
    ps.stop()


SUPERVISOR_EXAMPLE = os.path.join(REPO_ROOT, "examples", "python", "tf1_mnist_replica.py")


@needs_data
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_supervisor_era_program_with_adam_trains_on_two_workers(tmp_path, mode):
    # Regressions, each of which stopped this TF1 program: Adam's step count was made on the
    # worker's own device, so worker 1 waited forever for the chief to initialise it; an int32
    # global step (tf.Variable(0)) failed SyncReplicasOptimizer's int64 token queue;
    # ready_for_local_init_op, get_chief_queue_runner and ConfigProto(device_filters=...) were
    # missing.
    ports = [free_port() for _ in range(3)]
    common = ["--ps_hosts=127.0.0.1:%d" % ports[0],
              "--worker_hosts=127.0.0.1:%d,127.0.0.1:%d" % (ports[1], ports[2]),
              "--train_steps=300"] + (["--sync_replicas"] if mode == "sync" else [])
    procs, logs = {}, {}
    for job, task in (("ps", 0), ("worker", 1), ("worker", 0)):
        name = "%s%d" % (job, task)
        logs[name] = tmp_path / (name + ".log")
        procs[name] = subprocess.Popen(
            [sys.executable, SUPERVISOR_EXAMPLE, *common, "--job_name=" + job,
             "--task_index=%d" % task], env=_env(), stdout=open(logs[name], "w"),
            stderr=subprocess.STDOUT, text=True)
    try:
        for name in ("worker0", "worker1"):
            assert procs[name].wait(timeout=240) == 0, logs[name].read_text()
        for name in ("worker0", "worker1"):
            out = logs[name].read_text()
            assert _accuracy(out) >= 75.0, out
            steps = int(re.search(r"trained [0-9.]+ s, (\d+) local steps", out).group(1))
            assert steps >= 50, out  # both workers trained, neither waited it out
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


def test_greedy_load_balancing_sees_the_size_of_get_variable_and_tensor_initial_values():
    # Regression: variables made by get_variable (an initializer's tensor) or from a tensor
    # (tf.zeros) reached the strategy with no shape and counted 4 bytes each, so a big and a
    # small variable could share a ps task while another held almost nothing.
    g = sf.Graph()
    strategy = sf.contrib.training.GreedyLoadBalancingStrategy(
        2, sf.contrib.training.byte_size_load_fn)
    with g.as_default(), sf.device(sf.train.replica_device_setter(ps_tasks=2,
                                                                  ps_strategy=strategy)):
        big = sf.get_variable("big", [100, 10])
        small = [sf.get_variable("s1", [10, 1]), sf.get_variable("s2", [1]),
                 sf.Variable(sf.zeros([5]), name="s3")]
    assert big.device == "/job:ps/task:0"
    assert [v.device for v in small] == ["/job:ps/task:1"] * 3
    assert strategy._loads == [4000, 40 + 4 + 20]


_DONE_QUEUE_PROGRAM = '''
import sys
import shardflow as tf
ps, workers, job, task = sys.argv[1], sys.argv[2].split(","), sys.argv[3], int(sys.argv[4])
cluster = tf.train.ClusterSpec({"ps": [ps], "worker": workers})
server = tf.train.Server(cluster, job_name=job, task_index=task)

def done_queue():
    with tf.device("/job:ps/task:0"):
        return tf.FIFOQueue(len(workers), tf.int32, shared_name="done_queue0")

if job == "ps":  # serves until every worker says it is done, then exits
    queue = done_queue()
    with tf.Session(server.target, config=tf.ConfigProto(device_filters=["/job:ps"])) as sess:
        got = sorted(int(sess.run(queue.dequeue())) for _ in workers)
    print("PS DONE", got, flush=True)
else:
    with tf.device(tf.train.replica_device_setter(
            cluster=cluster, worker_device="/job:worker/task:%d" % task)):
        w = tf.Variable(0.0, name="w")
        step = tf.train.get_or_create_global_step()
        train = tf.group(w.assign_add(1.0), tf.assign_add(step, 1))
    say_done = done_queue().enqueue(task + 10)
    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % task])
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=task == 0,
                                           config=config,
                                           hooks=[tf.train.StopAtStepHook(last_step=40)]) as s:
        while not s.should_stop():
            s.run(train)
    with tf.Session(server.target, config=config) as sess:
        sess.run(say_done)
        print("WORKER DONE", sess.run(w), flush=True)
'''


def test_workers_tell_the_ps_they_are_done_through_a_shared_queue(tmp_path):
    # TF1's way to let parameter servers exit: a FIFOQueue on each ps with a shared_name, into
    # which each worker enqueues when it is done, and from which the ps's own session dequeues
    # once per worker. The queue lives on the ps (the engine's FIFOQueueV2), so the ps's graph
    # and the workers' graphs meet in it; before, each process had a Python queue of its own
    # and the ps waited forever.
    program = tmp_path / "done.py"
    program.write_text(_DONE_QUEUE_PROGRAM)
    ps = "127.0.0.1:%d" % free_port()
    workers = ",".join("127.0.0.1:%d" % free_port() for _ in range(2))
    procs, logs = {}, {}
    for job, task in (("ps", 0), ("worker", 1), ("worker", 0)):
        name = "%s%d" % (job, task)
        logs[name] = tmp_path / (name + ".log")
        procs[name] = subprocess.Popen(
            [sys.executable, str(program), ps, workers, job, str(task)], env=_env(),
            stdout=open(logs[name], "w"), stderr=subprocess.STDOUT, text=True)
    try:
        for name in ("worker0", "worker1", "ps0"):
            assert procs[name].wait(timeout=120) == 0, logs[name].read_text()
        assert "PS DONE [10, 11]" in logs["ps0"].read_text()
        for name in ("worker0", "worker1"):
            assert "WORKER DONE" in logs[name].read_text()
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


def test_a_queue_on_another_task_is_the_engines_and_says_what_it_cannot_hold():
    with sf.Graph().as_default() as g:
        with sf.device("/job:ps/task:1"):
            q = sf.FIFOQueue(4, sf.float32, shapes=[[2]], shared_name="work")
            size = q.size()
        ops = {op.type: op for op in g.get_operations()}
        assert ops["FIFOQueueV2"].device == "/job:ps/task:1"
        assert size.op.type == "QueueSizeV2" and size.shape == []
        assert q.dequeue().shape == [2]
        enq = q.enqueue_many(sf.zeros([3, 2]))
        assert enq.type == "QueueEnqueueManyV2" and enq.device == "/job:ps/task:1"
        for make, match in ((lambda: sf.FIFOQueue(2, [sf.float32, sf.int32]), "components"),
                            (lambda: sf.FIFOQueue(2, sf.string), "components"),
                            (lambda: sf.PaddingFIFOQueue(2, sf.float32, [[None]]),
                             "PaddingFIFOQueue"),
                            (lambda: q.dequeue_many(2), "dequeue_many")):
            with sf.device("/job:ps/task:1"), pytest.raises(NotImplementedError, match=match):
                make()
        # Without a job, or with one this process serves and no shared_name: a Python queue.
        local = sf.FIFOQueue(2, [sf.float32, sf.int32])
        assert local.dequeue()[0].op.type == "PyFunc"


def test_server_def_local_server_and_a_ps_device_with_a_device_type():
    server = sf.train.Server.create_local_server()
    d = server.server_def
    assert (d.job_name, d.task_index, d.protocol) == ("local", 0, "grpc")
    assert sf.train.ClusterSpec(d.cluster).as_dict() == {"local": [server.target[7:]]}
    with sf.Graph().as_default():
        with sf.device("/job:local/task:0"):  # TF1's create_local_server job
            c = sf.constant(2.0) * 3.0
        with sf.Session(server.target) as sess:
            assert sess.run(c) == 6.0
    late = sf.train.Server.create_local_server(start=False)  # TF1's start=False, then start()
    target = late.target
    late.start()
    assert late.target == target
    with sf.Graph().as_default():
        with sf.Session(late.target) as sess:
            assert sess.run(sf.constant(5.0)) == 5.0
    late.stop()
    with pytest.raises(ValueError, match="no task 3"):  # a ServerDef is taken apart
        sf.train.Server(sf.train.ServerDef(cluster={"w": ["127.0.0.1:1"]}, job_name="w",
                                           task_index=3))
    with sf.Graph().as_default():
        with sf.device(sf.train.replica_device_setter(ps_tasks=2, ps_device="/job:ps/cpu:0",
                                                      worker_device="/job:worker/task:0")):
            a, b = sf.Variable(1.0), sf.Variable(2.0)
        assert (a.device, b.device) == ("/job:ps/task:0/device:CPU:0",
                                        "/job:ps/task:1/device:CPU:0")


@pytest.mark.parametrize("through", ["run", "run_step_fn"])
def test_monitored_training_session_recovers_when_a_task_restarts(tmp_path, through):
    """TF1's recovery: task 1 (holding the variables, as a ps) is restarted between two steps;
    the next step is ABORTED (the task's state is gone), and MonitoredTrainingSession closes
    the session, creates a new one (restoring the latest checkpoint) and goes on, whether the
    step is sess.run or a run_step_fn step_fn on the raw session."""
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    spec = tmp_path / "cluster.json"
    ports = write_cluster(spec)
    procs = start_servers(spec, 2)
    try:
        with sf.Graph().as_default():
            with sf.device("/job:worker/task:1"):
                w = sf.Variable(np.zeros(3, np.float32), name="w")
                step = sf.train.get_or_create_global_step()
            with sf.device("/job:worker/task:0"):
                loss = sf.reduce_sum(sf.square(w - np.array([1.0, 2.0, 3.0], np.float32)))
            train = sf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
            seen, restarted = [], False
            with sf.train.MonitoredTrainingSession(
                    master=f"grpc://127.0.0.1:{ports[0]}", checkpoint_dir=str(tmp_path / "ckpt"),
                    save_checkpoint_steps=5, save_summaries_steps=0,
                    hooks=[sf.train.StopAtStepHook(last_step=20)]) as sess:
                while not sess.should_stop():
                    if through == "run":
                        _, at = sess.run([train, step])
                    else:   # the raw session meets the restart first, then the hooked step
                        _, at = sess.run_step_fn(lambda context: (
                            context.session.run(step), context.run_with_hooks([train, step]))[1])
                    seen.append(int(at))
                    if at == 12 and not restarted:   # checkpoints of steps 5 and 10 exist
                        procs[1].kill()
                        procs[1].wait()
                        procs[1] = start_server(spec, 1)[0]
                        restarted = True
                final = sess.run(step)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    # After the restart the session restored step 10's checkpoint (the step after it reads 10
    # or 11, as the increment and the read fall) and trained on to 20.
    assert final == 20, seen
    resumed = seen.index(12) + 1
    assert seen[resumed] in (10, 11), seen



_SYNC_PROGRAM = '''
import sys, time
import numpy as np
import shardflow as tf
job, task, ps, workers, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
cluster = tf.train.ClusterSpec({"ps": [ps], "worker": workers.split(",")})
server = tf.train.Server(cluster, job_name=job, task_index=task)
if job == "ps":
    server.join()
with tf.device(tf.train.replica_device_setter(cluster=cluster,
                                              worker_device="/job:worker/task:%d" % task)):
    x = tf.placeholder(tf.float32, [None, 4])
    w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                         replicas_to_aggregate=1 if mode == "backup" else 2,
                                         total_num_replicas=2)
    train_op = opt.minimize(loss, global_step=step)
last = 20 if (mode == "backup" and task == 1) else (300 if mode == "backup" else 30)
hooks = [opt.make_session_run_hook(task == 0), tf.train.StopAtStepHook(last_step=last)]
with tf.train.MonitoredTrainingSession(master=server.target, is_chief=task == 0,
                                       hooks=hooks) as sess:
    while not sess.should_stop():
        sess.run(train_op, {x: np.ones([8, 4], np.float32)})
        if mode == "backup" and task == 0:
            time.sleep(0.03)   # the chief goes on for seconds after worker 1 has left
    if task == 0 and mode == "evaluate":
        time.sleep(6)   # an evaluation that outlasts the other worker's exit
    print("w=%s" % sess.run(w).ravel(), flush=True)
'''


@pytest.mark.parametrize("mode", ["backup", "evaluate"])
def test_sync_chief_outlives_workers_that_finish_normally(tmp_path, mode):
    # Regressions: with a backup worker (1 of 2 aggregated) a worker that stopped early failed
    # the chief ("stopped answering ... the step cannot finish without it"); with 2 of 2, the
    # chief's read after training failed once the other worker had exited normally.
    program = tmp_path / "sync.py"
    program.write_text(_SYNC_PROGRAM)
    ports = [free_port() for _ in range(3)]
    ps, workers = "127.0.0.1:%d" % ports[0], "127.0.0.1:%d,127.0.0.1:%d" % tuple(ports[1:])
    procs = {}
    for job, task in (("ps", 0), ("worker", 1), ("worker", 0)):
        log = open(tmp_path / ("%s%d.log" % (job, task)), "w")
        procs[(job, task)] = subprocess.Popen(
            [sys.executable, str(program), job, str(task), ps, workers, mode], env=_env(),
            stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        for task in (1, 0):
            code = procs[("worker", task)].wait(timeout=120)
            out = (tmp_path / ("worker%d.log" % task)).read_text()
            assert code == 0 and "w=" in out, out
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


def test_random_strategy_places_by_a_hash_of_the_name_as_tf1():
    import hashlib
    cluster = sf.train.ClusterSpec({"ps": ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"],
                                    "worker": ["127.0.0.1:4"]})
    strategy = sf.contrib.training.RandomStrategy(3, seed=1)
    with sf.Graph().as_default():
        with sf.device(sf.train.replica_device_setter(cluster=cluster, ps_strategy=strategy)):
            variables = [sf.get_variable("v%d" % i, [2]) for i in range(8)]
    want = [int(hashlib.md5(("v%d_1" % i).encode()).hexdigest(), 16) % 3 for i in range(8)]
    assert [v.device for v in variables] == ["/job:ps/task:%d" % t for t in want]
    with pytest.raises(ValueError, match="at least one ps task"):
        sf.contrib.training.RandomStrategy(0)
