"""`shardflow train --strategy ps-sync|ps-async --cluster F --job ps|worker --task N`: one process
per task, variables on the ps task. With plain SGD, two synchronous workers on 32 rows each end
with the parameters one worker gets on the 64 rows together; asynchronous workers train and report
staleness; a worker killed mid-training fails the others within 10 s naming it, and the job
restarted with --resume continues from the chief's last checkpoint; a dead ps is named too;
--step-stats splits each step's time; bad set-ups are clear errors."""

import json
import os
import re
import signal
import subprocess
import time

import numpy as np
import pytest

from cluster_util import BINARY, free_port

pytestmark = pytest.mark.skipif(not os.access(BINARY, os.X_OK), reason=f"{BINARY} is not built")


def ps_cluster(tmp_path, workers=2, ps=1):
    spec = {"ps": [f"127.0.0.1:{free_port()}" for _ in range(ps)],
            "worker": [f"127.0.0.1:{free_port()}" for _ in range(workers)]}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(spec))
    return str(path), spec


def start_job(tmp_path, cluster, spec, strategy, *flags, log_tag="", chief_flags=()):
    """Every task of `spec` as its own `shardflow train` process; {(job, task): Popen}."""
    procs = {}
    for job in ("ps", "worker"):
        for task in range(len(spec[job])):
            log = open(tmp_path / f"{job}{task}{log_tag}.log", "w")
            procs[(job, task)] = subprocess.Popen(
                [BINARY, "train", "--model", "mlp", "--strategy", strategy, "--cluster", cluster,
                 "--job", job, "--task", str(task), "--threads", "1", "--progress=false",
                 "--checkpoint-dir", str(tmp_path / "ckpt"), *flags,
                 *(chief_flags if (job, task) == ("worker", 0) else ())],
                stdout=log, stderr=subprocess.STDOUT, text=True)
    return procs


def finish(procs, tmp_path, timeout=300, log_tag=""):
    """Waits for every process; returns {(job, task): (returncode, output)}."""
    deadline = time.monotonic() + timeout
    out = {}
    try:
        for key, p in procs.items():
            p.wait(timeout=max(1, deadline - time.monotonic()))
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    for (job, task), p in procs.items():
        out[(job, task)] = (p.returncode, (tmp_path / f"{job}{task}{log_tag}.log").read_text())
    return out


def checkpoint(path):
    from shardflow import _shardflow
    return {k: np.asarray(v) for k, v in _shardflow.load_checkpoint(path)}


SGD = ["--optimizer", "sgd", "--lr", "0.05", "--lr-decay", "none", "--max-steps", "20"]


@pytest.mark.parametrize("devices", [1, 2])
def test_sync_workers_take_the_step_of_one_worker_on_their_rows_together(tmp_path, devices):
    """With --devices 2 each worker's layers are also split over two devices of its task (model
    parallelism inside a replica): the same parameters."""
    cluster, spec = ps_cluster(tmp_path)
    results = finish(start_job(tmp_path, cluster, spec, "ps-sync", "--batch-size", "32",
                               "--devices", str(devices), "--log-placement", *SGD), tmp_path)
    for key, (code, text) in results.items():
        assert code == 0, f"{key}: {text}"
    chief = results[("worker", 0)][1]
    assert "synchronous parameter servers, 2 workers, 32 examples each" in chief, chief
    assert "global batch 64" in chief and "stale gradients dropped: 0" in chief, chief
    assert "worker 1: trained 20 steps" in results[("worker", 1)][1]
    worker1 = results[("worker", 1)][1]
    # Placement: the model on the worker (both its devices with --devices 2), variables on ps.
    assert re.search(r"\S+/weights \(VarHandleOp\) -> /job:ps/replica:0/task:0", worker1), \
        worker1[:3000]
    used = set(re.findall(r"-> (/job:worker/replica:0/task:1/device:CPU:\d)", worker1))
    assert len(used) == devices, used
    assert "serving until they finish" in results[("ps", 0)][1]
    assert "the chief says training is done" in results[("ps", 0)][1]
    single_dir = tmp_path / "single"
    r = subprocess.run([BINARY, "train", "--model", "mlp", "--threads", "1", "--progress=false",
                        "--batch-size", "64", "--checkpoint-dir", str(single_dir), *SGD],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    ps = checkpoint(str(tmp_path / "ckpt" / "model.ckpt-20"))
    one = checkpoint(str(single_dir / "model.ckpt-20"))
    assert ps["global_step"] == 20
    model = [k for k in one if not k.startswith("_meta/")]
    assert len(model) >= 6
    for name in model:
        # The mean of the two workers' gradients is the gradient of the mean loss of the 64 rows.
        np.testing.assert_allclose(ps[name], one[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_async_workers_train_and_report_staleness(tmp_path):
    cluster, spec = ps_cluster(tmp_path, workers=2, ps=2)
    results = finish(start_job(tmp_path, cluster, spec, "ps-async", "--batch-size", "64",
                               "--max-steps", "300"), tmp_path)
    for key, (code, text) in results.items():
        assert code == 0, f"{key}: {text}"
    chief = results[("worker", 0)][1]
    assert "asynchronous parameter servers" in chief, chief
    # Variables balanced over the two ps tasks.
    assert re.search(r"variables: \d+ on /job:ps/replica:0/task:0/device:CPU:0, \d+ on "
                     r"/job:ps/replica:0/task:1", chief), chief
    m = re.search(r"staleness: ([0-9.]+) updates of other workers per step on average", chief)
    assert m, chief
    assert 0 < float(m.group(1)) < 10  # the other worker's updates land in between
    accuracy = float(re.search(r"test accuracy ([0-9.]+)%", chief).group(1))
    assert accuracy > 75, chief


def test_killed_worker_fails_the_chief_within_10_s_and_the_job_resumes(tmp_path):
    cluster, spec = ps_cluster(tmp_path)
    flags = ["--batch-size", "32", "--epochs", "4", "--checkpoint-every-steps", "100",
             "--checkpoint-every-secs", "0"]
    procs = start_job(tmp_path, cluster, spec, "ps-sync", *flags)
    index = tmp_path / "ckpt" / "checkpoint"
    deadline = time.monotonic() + 120
    while not index.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert index.exists(), (tmp_path / "worker0.log").read_text()
    time.sleep(1)
    procs[("worker", 1)].send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    procs[("worker", 0)].wait(timeout=60)
    elapsed = time.monotonic() - killed_at
    results = finish(procs, tmp_path, timeout=30)
    code, chief = results[("worker", 0)]
    assert code != 0, chief
    assert "task /job:worker/replica:0/task:1" in chief and "stopped answering" in chief, chief
    assert elapsed < 10, f"{elapsed:.1f} s: {chief}"
    # The ps leaves with the workers, with an error: they never said training was done, so a
    # cluster manager restarts it with them.
    code, ps_log = results[("ps", 0)]
    assert code != 0 and "before training was done" in ps_log, ps_log
    saved = int(re.findall(r"model\.ckpt-(\d+)", index.read_text())[-1])
    assert saved >= 100
    # The launcher restarts the job: the chief restores, the other worker follows it.
    results = finish(start_job(tmp_path, cluster, spec, "ps-sync", *flags, "--resume",
                               "--max-steps", "50", log_tag="-again"), tmp_path, log_tag="-again")
    for key, (code, text) in results.items():
        assert code == 0, f"{key}: {text}"
    chief = results[("worker", 0)][1]
    assert f"resumed from {tmp_path / 'ckpt'}/model.ckpt-{saved}" in chief, chief
    assert f"worker 1 starts at global step {saved}" in results[("worker", 1)][1]
    assert f"model.ckpt-{saved + 50}" in chief, chief


def test_dead_ps_is_named(tmp_path):
    cluster, spec = ps_cluster(tmp_path, workers=1)
    procs = start_job(tmp_path, cluster, spec, "ps-async", "--epochs", "20")
    time.sleep(5)
    assert procs[("worker", 0)].poll() is None, (tmp_path / "worker0.log").read_text()
    procs[("ps", 0)].send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    procs[("worker", 0)].wait(timeout=60)
    elapsed = time.monotonic() - killed_at
    code, text = finish(procs, tmp_path)[("worker", 0)]
    assert code != 0 and "/job:ps/replica:0/task:0" in text, text
    assert elapsed < 10, f"{elapsed:.1f} s: {text}"


def test_step_stats_split_each_step(tmp_path):
    cluster, spec = ps_cluster(tmp_path)
    stats = tmp_path / "steps.jsonl"
    procs = start_job(tmp_path, cluster, spec, "ps-sync", "--max-steps", "30",
                      chief_flags=["--step-stats", str(stats)])
    results = finish(procs, tmp_path)
    for key, (code, text) in results.items():
        assert code == 0, f"{key}: {text}"
    lines = [json.loads(l) for l in stats.read_text().splitlines()]
    assert len(lines) == 30
    for s in lines:
        parts = s["compute_ms"] + s["communication_ms"] + s["waiting_ms"]
        assert abs(parts - s["wall_ms"]) < 1e-3 * max(1, s["wall_ms"]), s
        assert s["compute_ms"] > 0 and s["communication_ms"] > 0, s
    assert "step time (median of" in results[("worker", 0)][1]


@pytest.mark.parametrize("flags,message", [
    (["--strategy", "ps-sync"], "--strategy ps-sync runs one process per task"),
    (["--strategy", "ps-async", "--job", "worker", "--task", "0", "--cluster", "WORKERS_ONLY"],
     "has jobs [worker]"),
    (["--strategy", "ps-async", "--job", "chief", "--task", "0", "--cluster", "PS"],
     "--job chief"),
    (["--strategy", "ps-gossip"], "unknown --strategy 'ps-gossip'"),
])
def test_bad_set_ups_are_clear_errors(tmp_path, flags, message):
    workers_only = tmp_path / "w.json"
    workers_only.write_text(json.dumps({"worker": [f"127.0.0.1:{free_port()}"]}))
    ps, _ = ps_cluster(tmp_path)
    flags = [{"WORKERS_ONLY": str(workers_only), "PS": ps}.get(f, f) for f in flags]
    r = subprocess.run([BINARY, "train", "--model", "mlp", *flags], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and message in r.stderr, r.stderr


def _start_tasks(tmp_path, spec, per_task_flags):
    """One `shardflow train` per (job, task) of per_task_flags; {(job, task): Popen}."""
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(spec))
    procs = {}
    for (job, task), flags in per_task_flags.items():
        log = open(tmp_path / f"{job}{task}.log", "w")
        procs[(job, task)] = subprocess.Popen(
            [BINARY, "train", "--model", "mlp", "--cluster", str(cluster), "--job", job,
             "--task", str(task), "--threads", "1", "--progress=false", "--max-steps", "20",
             "--checkpoint-dir", str(tmp_path / "ckpt"), *flags],
            stdout=log, stderr=subprocess.STDOUT, text=True)
    return procs


@pytest.mark.parametrize("second", [["--batch-size", "32"], ["--strategy", "averaging"],
                                    ["--model", "cnn"]])
def test_tasks_started_with_different_training_flags_fail_naming_the_flag(tmp_path, second):
    # Regression: between-graph ranks with another --strategy or --model waited in a collective
    # forever; another --batch-size trained silently on a wrong global batch and exited 0.
    spec = {"worker": [f"127.0.0.1:{free_port()}" for _ in range(2)]}
    base = ["--strategy", "allreduce", "--replication", "between-graph"]
    procs = _start_tasks(tmp_path, spec, {("worker", 0): base, ("worker", 1): base + second})
    start = time.monotonic()
    results = finish(procs, tmp_path, timeout=120)
    assert time.monotonic() - start < 90
    for (job, task), (code, log) in results.items():
        assert code not in (0, None), log
        assert second[0] in log and "same training flags" in log, log


def test_a_second_job_beside_the_workers_is_refused_for_allreduce(tmp_path):
    # Regression: with TF_CONFIG's "chief" (or a "ps") job, task 0 of each job trained as a
    # chief, two trainers writing one checkpoint directory.
    spec = {"chief": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}"]}
    procs = _start_tasks(tmp_path, spec, {("chief", 0): ["--strategy", "allreduce"],
                                          ("worker", 0): ["--strategy", "allreduce"]})
    for (job, task), (code, log) in finish(procs, tmp_path, timeout=60).items():
        assert code not in (0, None), log
        assert "has jobs [chief, worker]" in log and "serving on" not in log, log
    assert not (tmp_path / "ckpt").exists() or not os.listdir(tmp_path / "ckpt")


def test_ps_strategies_under_a_launcher_of_one_job_say_where_a_ps_job_comes_from():
    # It said "the cluster file auto has jobs [worker]": mpirun/srun/torchrun give one job.
    env = dict(os.environ, OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="1",
               OMPI_COMM_WORLD_LOCAL_RANK="0", OMPI_COMM_WORLD_LOCAL_SIZE="1")
    env.pop("TF_CONFIG", None)
    r = subprocess.run([BINARY, "train", "--cluster", "auto", "--strategy", "ps-async",
                        "--port-base", str(free_port())], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0
    assert "the launcher gave has jobs [worker]" in r.stderr and "TF_CONFIG" in r.stderr, r.stderr
