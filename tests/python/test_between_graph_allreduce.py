"""Between-graph collectives from Python (issue 12, Horovod/DDP style): two worker processes, each
with its own sf.train.Server and its own graph holding only its members, meet in every step:
collective_ops directly (all-reduce, broadcast from task 0, all-gather), and
sf.distribute.AllReduceOptimizer + broadcast_variables, whose two workers on half a batch each
end with the parameters one process reaches on the whole batch (plain SGD), also with the
gradients sent as float16 or bfloat16 (Compression)."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import shardflow as sf
from cluster_util import free_port, run_together

WORKER = r"""
import json, sys
import numpy as np
import shardflow as sf
from shardflow import collective_ops

cluster, i, mode, out = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
server = sf.train.Server(cluster, job_name="worker", task_index=i)
n = len(cluster["worker"])
if mode == "raw":
    with sf.device("/job:worker/task:%d" % i):
        step = sf.placeholder(sf.float32, [])
        total = collective_ops.all_reduce(sf.fill([1000], step + i + 1.0), n, 3, 1)
        v = sf.reshape(step * (i + 1), [1])
        if i == 0:
            b = collective_ops.broadcast_send(v, [1], sf.float32, n, 3, 2)
        else:
            b = collective_ops.broadcast_recv([1], sf.float32, n, 3, 2)
        g = collective_ops.all_gather(v, n, 3, 3)
    got = []
    with sf.Session(server.target) as sess:
        for s in range(4):
            got.append(np.concatenate([r.ravel() for r in sess.run([total, b, g], {step: s})]))
    np.save(out, np.stack(got))
else:
    rng = np.random.RandomState(0)
    xs = rng.randn(8, 64, 5).astype(np.float32)
    ys = rng.randn(8, 64, 1).astype(np.float32)
    with sf.device("/job:worker/task:%d" % i):
        x = sf.placeholder(sf.float32, [None, 5])
        y = sf.placeholder(sf.float32, [None, 1])
        # Each worker starts from its own random values: the broadcast makes them worker 0's.
        w = sf.Variable(sf.random_normal([5, 1], seed=i + 1), name="w")
        bias = sf.Variable(sf.zeros([1]) + float(i), name="b")
        loss = sf.reduce_mean(sf.square(sf.matmul(x, w) + bias - y))
        opt = sf.distribute.AllReduceOptimizer(sf.train.GradientDescentOptimizer(0.1), n,
                                               bucket_bytes=int(sys.argv[5]),
                                               compression=sys.argv[6])
        train = opt.minimize(loss)
        sync = sf.distribute.broadcast_variables([w, bias], n, rank=i)
    with sf.Session(server.target) as sess:
        sess.run(sf.global_variables_initializer())
        sess.run(sync)
        start = sess.run(w)
        half = 64 // n
        for s in range(8):
            sess.run(train, {x: xs[s, i * half:(i + 1) * half], y: ys[s, i * half:(i + 1) * half]})
        np.save(out, np.concatenate([start.ravel(), sess.run(w).ravel(), sess.run(bias)]))
print("worker", i, "done", flush=True)
"""


def run_workers(tmp_path, mode, *extra):
    cluster = {"worker": ["127.0.0.1:%d" % free_port() for _ in range(2)]}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(sf.__file__))
    outs = [str(tmp_path / ("%s-%d.npy" % (mode, i))) for i in range(2)]
    run_together([([sys.executable, "-c", WORKER, json.dumps(cluster), str(i), mode, outs[i],
                    *extra], env) for i in range(2)], timeout=120)
    return [np.load(o) for o in outs]


def test_collective_ops_between_two_worker_processes(tmp_path):
    a, b = run_workers(tmp_path, "raw")
    for s in range(4):
        expected = np.concatenate([np.full(1000, 2 * s + 3.0), [s], [s, 2 * s]])
        np.testing.assert_allclose(a[s], expected)
        np.testing.assert_allclose(b[s], expected)


@pytest.mark.parametrize("bucket_bytes,compression,tol", [
    (0, "none", 1e-5), (4 << 20, "none", 1e-5), (4 << 20, "fp16", 2e-3), (0, "bf16", 1e-2)])
def test_all_reduce_optimizer_matches_one_process_on_the_whole_batch(tmp_path, bucket_bytes,
                                                                     compression, tol):
    a, b = run_workers(tmp_path, "train", str(bucket_bytes), compression)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)  # the replicas stay equal
    # One process, the whole batch, from worker 0's initial values.
    rng = np.random.RandomState(0)
    xs = rng.randn(8, 64, 5).astype(np.float32)
    ys = rng.randn(8, 64, 1).astype(np.float32)
    w = a[:5].reshape(5, 1).astype(np.float64)
    bias = 0.0
    for s in range(8):
        err = xs[s] @ w + bias - ys[s]
        w -= 0.1 * 2 * xs[s].T @ err / 64
        bias -= 0.1 * 2 * err.mean()
    np.testing.assert_allclose(a[5:10], w.ravel(), rtol=10 * tol, atol=tol)
    np.testing.assert_allclose(a[10], bias, rtol=10 * tol, atol=tol)


@pytest.mark.parametrize("compression,wire", [(sf.distribute.Compression.fp16, sf.float16),
                                              ("bf16", sf.bfloat16), (None, sf.float32)])
def test_compression_sends_the_gradients_in_half_precision(compression, wire):
    g = sf.Graph()
    with g.as_default(), sf.device("/job:worker/task:0"):
        w = sf.Variable(sf.ones([3, 2]))
        opt = sf.distribute.AllReduceOptimizer(sf.train.GradientDescentOptimizer(0.1), 2,
                                               compression=compression)
        opt.minimize(sf.reduce_sum(w * w))
    reduces = [op for op in g.get_operations() if op.type == "CollectiveReduce"]
    assert reduces and all(op.inputs[0].dtype == wire for op in reduces)


def test_unknown_compression_is_refused():
    with pytest.raises(ValueError, match="compression must be.*fp16"):
        sf.distribute.AllReduceOptimizer(sf.train.GradientDescentOptimizer(0.1), 2,
                                         compression="int8")


def test_the_optimizer_asks_for_the_workers_device():
    g = sf.Graph()
    with g.as_default():
        v = sf.Variable([1.0])
        opt = sf.distribute.AllReduceOptimizer(sf.train.GradientDescentOptimizer(0.1), 2)
        with pytest.raises(ValueError, match="under sf.device"):
            opt.minimize(sf.reduce_sum(v * v))
        with pytest.raises(ValueError, match="rank 2 must be in"):
            sf.distribute.broadcast_variables([v], 2, rank=2)


_AVERAGING = r"""
import json, sys
import numpy as np
import shardflow as tf
rank, workers, interval = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ports = [int(p) for p in sys.argv[4].split(",")]
rng = np.random.RandomState(0)
x = rng.randn(96, 4).astype(np.float32)
y = (x @ np.array([[1.0], [2.0], [-1.0], [0.5]], np.float32) + 0.3).astype(np.float32)
rows = 16 // workers
master, device = "", ""
if workers > 1:
    cluster = tf.train.ClusterSpec({"worker": ["127.0.0.1:%d" % p for p in ports]})
    server = tf.train.Server(cluster, job_name="worker", task_index=rank)
    master, device = server.target, "/job:worker/task:%d" % rank
tf.set_random_seed(3 + rank)  # the workers start apart; the hook starts them from the chief's
with tf.device(device):
    xs = tf.placeholder(tf.float32, [None, 4])
    ys = tf.placeholder(tf.float32, [None, 1])
with tf.variable_scope("model", custom_getter=tf.contrib.opt.ModelAverageCustomGetter(device)):
    with tf.device(device):
        w = tf.get_variable("w", [4, 1])
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(xs, w) + b - ys))
        opt = tf.contrib.opt.ModelAverageOptimizer(tf.train.GradientDescentOptimizer(0.1), workers,
                                                   is_chief=rank == 0, interval_steps=interval)
        train = opt.minimize(loss)
hook = opt.make_session_run_hook(rank == 0)
# MonitoredTrainingSession's own ops have no device: they run on this worker's task (the
# master's own), as TF1's, so the workers' collectives stay apart.
with tf.train.MonitoredTrainingSession(master=master, is_chief=rank == 0, hooks=[hook]) as sess:
    for k in range(6):
        rows_k = np.arange(k * 16 + rank * rows, k * 16 + (rank + 1) * rows)
        sess.run(train, {xs: x[rows_k], ys: y[rows_k]})
    wv, bv = sess.run([w, b])
print("FINAL " + json.dumps({"w": wv.ravel().tolist(), "b": bv.tolist(),
                             "locals": len(tf.local_variables()), "averages": hook.averages}),
      flush=True)
"""


@pytest.mark.parametrize("interval", [1, 3])
def test_model_average_optimizer_averages_the_workers_parameters(tmp_path, interval):
    # TF1's tf.contrib.opt.ModelAverageOptimizer (DL4J-style parameter averaging, here by ring
    # all-reduce between the workers): each worker trains its own copy (ModelAverageCustomGetter)
    # on half of every batch with SGD and the copies are averaged every `interval` runs. Every
    # run averaged is one process on the whole batches; every third run, the workers still end
    # equal (their last run averaged), elsewhere than the one process.
    program = tmp_path / "averaging.py"
    program.write_text(_AVERAGING)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(sf.__file__)))
    alone = subprocess.run([sys.executable, str(program), "0", "1", "1", "0"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    ports = "%d,%d" % (free_port(), free_port())
    outs = run_together([([sys.executable, str(program), str(rank), "2", str(interval), ports],
                          env) for rank in (1, 0)], timeout=120)
    final = [json.loads(re.search(r"FINAL (\{.*\})", o).group(1)) for o in outs]
    one = json.loads(re.search(r"FINAL (\{.*\})", alone.stdout).group(1))
    assert final[0]["w"] == final[1]["w"] and final[0]["b"] == final[1]["b"]
    assert final[0]["locals"] == 2 and final[0]["averages"] == 7 // interval
    if interval == 1:
        np.testing.assert_allclose(final[0]["w"], one["w"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(final[0]["b"], one["b"], rtol=1e-5, atol=1e-6)
    else:
        assert not np.allclose(final[0]["w"], one["w"], rtol=1e-5, atol=1e-6)
