"""Horovod's TF1 API (shardflow.horovod): a Horovod-style program run as 2 ranks started with
torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) trains to the same weights as
one process on the ranks' batches together; the ranks start from rank 0's variables
(BroadcastGlobalVariablesHook); allreduce (average, sum), allgather and broadcast from a root
other than 0; and the same program without a launcher is one rank."""

import json
import os
import random
import subprocess
import sys
import time

import numpy as np

import shardflow as sf
from cluster_util import run_together

PROGRAM = r'''
import json, sys
import numpy as np
import shardflow as tf
import shardflow.horovod as hvd

hvd.init()
r, n = hvd.rank(), hvd.size()
GLOBAL = 32
rng = np.random.RandomState(0)
X = rng.randn(20 * GLOBAL, 4).astype(np.float32)
Y = X @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + 0.25
x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
# Each rank starts from its own values; the hook gives everyone rank 0's.
w = tf.get_variable("w", [4, 1], initializer=tf.random_normal_initializer(seed=r + 1))
b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
gs = tf.train.get_or_create_global_step()
train = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1)).minimize(
    loss, global_step=gs)
checks = [hvd.allreduce(tf.constant(float(r + 1))),
          hvd.allreduce(tf.constant(float(r + 1)), op=hvd.Sum),
          hvd.allgather(tf.constant([r, r])),
          hvd.broadcast(tf.constant(10.0 * r), root_rank=n - 1)]
hooks = [hvd.BroadcastGlobalVariablesHook(0), tf.train.StopAtStepHook(last_step=20)]
per = GLOBAL // n
with tf.train.MonitoredTrainingSession(checkpoint_dir=sys.argv[1] if r == 0 else None,
                                       hooks=hooks, save_checkpoint_steps=10) as sess:
    step = 0
    while not sess.should_stop():
        lo = step * GLOBAL + r * per  # rank r's share of the global batch
        sess.run(train, {x: X[lo:lo + per], y: Y[lo:lo + per]})
        step += 1
    out = sess.run(checks)
    wf, bf = sess.run([w, b])
print("RESULT " + json.dumps({
    "rank": r, "size": n, "local_rank": hvd.local_rank(), "local_size": hvd.local_size(),
    "w": wf.ravel().tolist(), "b": bf.tolist(), "steps": step,
    "checks": [float(out[0]), float(out[1]), np.asarray(out[2]).tolist(), float(out[3])]}),
    flush=True)
'''


def _env(extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CONFIG", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                        "MASTER_PORT") and not k.startswith(("OMPI_", "SLURM_", "PMI"))}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(sf.__file__))
    env.update(extra)
    return env


def _result(text):
    line = [l for l in text.splitlines() if l.startswith("RESULT ")]
    assert line, text
    return json.loads(line[-1][len("RESULT "):])


def _run_two_ranks(*args):
    """`args` run as ranks 0 and 1 (torchrun's variables); their RESULTs, by rank."""
    coordinator = random.randint(30000, 50000)
    outs = run_together([([sys.executable, *map(str, args)], _env({
        "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(coordinator),
        "SHARDFLOW_PORT_BASE": str(coordinator + 10)})) for rank in (1, 0)])
    return sorted((_result(o) for o in outs), key=lambda r: r["rank"])


def test_two_ranks_train_like_one_process_on_both_batches(tmp_path):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    alone = subprocess.run([sys.executable, str(program), str(tmp_path / "alone")],
                           env=_env({}), capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    one = _result(alone.stdout)
    assert one["size"] == 1 and one["checks"] == [1.0, 1.0, [0, 0], 0.0]

    ranks = _run_two_ranks(program, tmp_path / "ckpt")
    assert [r["rank"] for r in ranks] == [0, 1]
    assert all(r["size"] == 2 and r["local_size"] == 2 and r["steps"] == 20 for r in ranks)
    assert [r["local_rank"] for r in ranks] == [0, 1]
    # allreduce: mean and sum of 1 and 2; allgather in rank order; rank 1's 10.0 to everyone.
    assert all(r["checks"] == [1.5, 3.0, [0, 0, 1, 1], 10.0] for r in ranks), ranks
    # Equal replicas, equal to one process on the 32-row batches the ranks split (SGD on the
    # mean of two 16-row gradients), starting from rank 0's (= the lone process's) values.
    np.testing.assert_allclose(ranks[0]["w"], ranks[1]["w"], rtol=0, atol=0)
    np.testing.assert_allclose(ranks[0]["w"], one["w"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ranks[0]["b"], one["b"], rtol=1e-4, atol=1e-5)
    assert (tmp_path / "ckpt" / "checkpoint").exists()  # rank 0's checkpoints


def test_a_broken_launcher_environment_is_named():
    bad = subprocess.run([sys.executable, "-c", "import shardflow.horovod as hvd; hvd.init()"],
                         env=_env({"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                                   "MASTER_PORT": "29500"}),
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "RANK" in bad.stderr, bad.stderr
    bad = subprocess.run([sys.executable, "-c", "import shardflow.horovod as hvd; hvd.init()"],
                         env=_env({"SHARDFLOW_PORT_BASE": "99999"}),
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "SHARDFLOW_PORT_BASE" in bad.stderr, bad.stderr


KERAS_PROGRAM = r'''
import json
import numpy as np
import shardflow as tf
import shardflow.horovod.keras as hvd   # Horovod's Keras flavour (horovod.keras)
import shardflow.horovod.tensorflow as hvd_tf

hvd.init()
keras = tf.keras
rng = np.random.RandomState(hvd.rank())  # each rank its own data and initial weights
x = rng.randn(256, 8).astype(np.float32)
y = (x[:, 0] - x[:, 1] > 0).astype(np.int32)
model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                          keras.layers.Dense(2, activation="softmax")])
opt = hvd.DistributedOptimizer(keras.optimizers.Adam(0.01 * hvd.size()))
model.compile(loss="sparse_categorical_crossentropy", optimizer=opt, metrics=["accuracy"])
history = model.fit(x, y, batch_size=32, epochs=3, verbose=0,
                    callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                               hvd.callbacks.MetricAverageCallback(),
                               hvd.callbacks.LearningRateWarmupCallback(warmup_epochs=2)])
print("RESULT " + json.dumps({
    "rank": hvd.rank(), "loss": history.history["loss"], "lr": history.history["lr"],
    "weights": [w.ravel().tolist() for w in model.get_weights()],
    "same_module": hvd_tf.rank is hvd.rank, "cross": [hvd.cross_rank(), hvd.cross_size()],
    "mean": hvd.allreduce(np.float32(hvd.rank() + 1)).tolist(),
    "sum": hvd.allreduce([hvd.rank() + 1.0], average=False).tolist(),
    "gathered": hvd.allgather(np.array([hvd.rank()], np.int32)).tolist(),
    "from_1": hvd.broadcast(np.float32(10 * hvd.rank()), 1).tolist()}), flush=True)
'''


def test_keras_fit_with_horovods_optimizer_and_callbacks_keeps_ranks_equal(tmp_path):
    # horovod.keras' pattern: a Keras optimizer wrapped in DistributedOptimizer, rank 0's
    # weights broadcast when fit starts, the epoch's metrics averaged over the ranks.
    program = tmp_path / "keras_program.py"
    program.write_text(KERAS_PROGRAM)
    ranks = _run_two_ranks(program)
    assert ranks[0]["weights"] == ranks[1]["weights"]  # started equal, stepped equally
    assert ranks[0]["loss"] == ranks[1]["loss"]  # each epoch's loss averaged over the ranks
    assert ranks[0]["loss"][-1] < ranks[0]["loss"][0]
    # Warm-up over 2 epochs from 0.02 / 2 ranks, batch by batch, to 0.02 at the second's end.
    for r in ranks:
        np.testing.assert_allclose(r["lr"], [0.015, 0.02, 0.02], rtol=1e-5)
        assert r["same_module"] and r["cross"] == [0, 1]   # one node
        assert (r["mean"], r["sum"], r["gathered"], r["from_1"]) == (1.5, [3.0], [0, 1], 10.0)


FOREVER = r'''
import numpy as np
import shardflow as tf
import shardflow.horovod as hvd

hvd.init()
x = tf.placeholder(tf.float32, [None, 4])
loss = tf.reduce_mean(tf.square(tf.layers.dense(x, 1)))
train = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.01)).minimize(loss)
steps = 0
with tf.train.MonitoredTrainingSession(hooks=[hvd.BroadcastGlobalVariablesHook(0)]) as sess:
    while True:
        sess.run(train, {x: np.ones((8, 4), np.float32)})
        steps += 1
        if steps == 20:
            print("TRAINING", flush=True)
'''


def test_a_killed_rank_fails_the_others_naming_it_within_10_s(tmp_path):
    # Under the default transport the ranks' all-reduce pulls travel over UCX shared memory,
    # where nothing reports a dead peer: rank 0 waited on the killed rank 1 forever (only a
    # warning after a minute). Now the waiting pull asks the peer (Note [Silent peers] in
    # distributed/ucx/ucx_data_plane.cc) and the step fails, naming the lost task.
    program = tmp_path / "forever.py"
    program.write_text(FOREVER)
    coordinator = random.randint(30000, 50000)
    procs, logs = {}, {}
    for rank in (1, 0):
        logs[rank] = open(tmp_path / ("rank%d.log" % rank), "w+")
        procs[rank] = subprocess.Popen(
            [sys.executable, str(program)], stdout=logs[rank], stderr=subprocess.STDOUT,
            env=_env({"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
                      "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(coordinator),
                      "SHARDFLOW_PORT_BASE": str(coordinator + 10)}))
    try:
        deadline = time.monotonic() + 120
        while "TRAINING" not in (tmp_path / "rank1.log").read_text():
            assert time.monotonic() < deadline, (tmp_path / "rank1.log").read_text()[-2000:]
            assert procs[1].poll() is None, (tmp_path / "rank1.log").read_text()[-2000:]
            time.sleep(0.2)
        procs[1].kill()
        killed = time.monotonic()
        code = procs[0].wait(timeout=60)
        elapsed = time.monotonic() - killed
        text = (tmp_path / "rank0.log").read_text()
        assert code != 0 and "task /job:worker/replica:0/task:1 is lost" in text, text[-3000:]
        assert elapsed < 10, "%.1f s: %s" % (elapsed, text[-3000:])
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
