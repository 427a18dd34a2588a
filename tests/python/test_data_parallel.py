"""`shardflow train --strategy allreduce|averaging`: replicas on two `shardflow server` processes
(one per task, gradients averaged with the ring all-reduce between the processes) follow the same
loss curve as two replicas on two devices of one process, and as one model on the global batch;
parameter averaging after every step follows it too; between-graph replication (one training
process per task, each with its own graph) ends with the same parameters as in-graph; an unknown
strategy is a clear error (the ps strategies: test_ps_cli.py)."""

import json
import os
import subprocess

import numpy as np
import pytest

from cluster_util import BINARY, free_port, start_servers, stop_servers, write_cluster


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    path = tmp_path_factory.mktemp("cluster") / "cluster.json"
    write_cluster(path)
    procs = start_servers(path, 2, "--log-level", "warning")
    yield str(path)
    stop_servers(procs)


def train(tmp_path, tag, *flags):
    out = str(tmp_path / tag)
    r = subprocess.run([BINARY, "train", "--model", "mlp", "--max-steps", "20", "--progress=false",
                        "--threads", "1", "--optimizer", "sgd", "--lr", "0.05",
                        "--checkpoint-dir", out, "--trace-dir", out, *flags],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    return r.stdout, np.load(os.path.join(out, "losses.npy"))


def test_allreduce_across_two_processes_matches_two_local_devices_and_one_model(spec, tmp_path):
    out, across = train(tmp_path, "tasks", "--strategy", "allreduce", "--cluster", spec,
                        "--batch-size", "32")
    assert "gradients all-reduced over 2 replicas" in out and "global batch 64" in out, out
    _, local = train(tmp_path, "devices", "--strategy", "allreduce", "--devices", "2",
                     "--batch-size", "32")
    _, single = train(tmp_path, "single", "--batch-size", "64")
    assert len(across) == len(local) == len(single) == 20
    np.testing.assert_allclose(across, local, rtol=1e-4, atol=1e-5)
    # The mean of the replicas' gradients is the gradient of the global batch's mean loss.
    np.testing.assert_allclose(across, single, rtol=1e-3, atol=1e-4)
    assert across[-1] < across[0]
    # Parameter averaging after every step is, with SGD, gradient averaging.
    out, averaged = train(tmp_path, "averaging", "--strategy", "averaging", "--average-every",
                          "1", "--cluster", spec, "--batch-size", "32")
    assert "parameters averaged every 1 steps over 2 replicas" in out, out
    np.testing.assert_allclose(averaged, across, rtol=1e-4, atol=1e-5)
    # Every 5 steps: another curve, still learning.
    _, sparse = train(tmp_path, "averaging5", "--strategy", "averaging", "--average-every", "5",
                      "--devices", "2", "--batch-size", "32")
    assert sparse[-1] < sparse[0] and not np.allclose(sparse, across)


def between_graph(tmp_path, tag, *flags, steps=20, cluster=None):
    """Two `train --task N --replication between-graph` processes; the chief's checkpoint folder
    and both outputs."""
    path = tmp_path / f"{(cluster or tag)}.json"
    path.write_text(json.dumps({"worker": [f"127.0.0.1:{free_port()}" for _ in range(2)]}))
    common = ["train", "--model", "mlp", "--cluster", str(path), "--replication",
              "between-graph", "--threads", "1", "--optimizer", "sgd", "--lr", "0.05",
              "--batch-size", "32", "--max-steps", str(steps), "--progress=false",
              "--log-level", "warning", *flags]
    out = tmp_path / tag
    procs = [subprocess.Popen([BINARY, *common, "--task", str(t), "--checkpoint-dir",
                               str(out) + ("" if t == 0 else "-worker")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for t in range(2)]
    outs = []
    try:
        for p in procs:
            o, e = p.communicate(timeout=300)
            assert p.returncode == 0, o + e
            outs.append(o)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return str(out), outs


def assert_same_parameters(a, b, step=20):
    import shardflow as sf
    a, b = f"{a}/model.ckpt-{step}", f"{b}/model.ckpt-{step}"  # the CLI names them so
    theirs = {n for n, _ in sf.train.list_variables(b)}
    names = [n for n, _ in sf.train.list_variables(a) if n in theirs]
    assert len(names) >= 6, (names, theirs)  # the MLP's weights and biases at least
    for n in names:
        x, y = np.asarray(sf.train.load_variable(a, n)), np.asarray(sf.train.load_variable(b, n))
        if x.dtype.kind == "f":
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5, err_msg=n)
        else:  # the step counters and the position
            np.testing.assert_array_equal(x, y, err_msg=n)


def test_between_graph_replication_ends_with_the_parameters_of_in_graph(tmp_path):
    """Each task trains its own replica from its own graph; only the gradients cross (the ring
    between the two processes). After 20 SGD steps the chief's checkpoint equals in-graph
    replication's (two devices of one process); parameter averaging after every step too."""
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    chief, outs = between_graph(tmp_path, "between", "--strategy", "allreduce")
    assert "gradients all-reduced over 2 replicas" in outs[0] and "global batch 64" in outs[0]
    assert "worker 1: trained 20 steps" in outs[1], outs[1]
    train(tmp_path, "in-graph", "--strategy", "allreduce", "--devices", "2", "--batch-size", "32")
    assert_same_parameters(chief, str(tmp_path / "in-graph"))
    averaged, outs = between_graph(tmp_path, "averaged", "--strategy", "averaging",
                                   "--average-every", "1")
    assert "parameters averaged every 1 steps over 2 replicas" in outs[0], outs[0]
    assert_same_parameters(averaged, chief)


def test_between_graph_allreduce_with_half_precision_gradients(tmp_path):
    """--compression fp16|bf16: the gradients cross the network in half precision (fused into
    64 KiB buckets here); the parameters after 20 steps stay within that rounding of float32's."""
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    exact, _ = between_graph(tmp_path, "exact", "--strategy", "allreduce")
    import shardflow as sf
    step = f"{exact}/model.ckpt-20"
    for compression, tol in [("fp16", 2e-3), ("bf16", 2e-2)]:
        chief, outs = between_graph(tmp_path, compression, "--strategy", "allreduce",
                                    "--compression", compression, "--bucket-bytes", "65536")
        assert f"gradients all-reduced in {compression} over 2 replicas" in outs[0], outs[0]
        theirs = f"{chief}/model.ckpt-20"
        weights = [n for n, shape in sf.train.list_variables(step) if len(shape) == 2]
        assert len(weights) >= 3, weights
        for n in weights:
            np.testing.assert_allclose(sf.train.load_variable(theirs, n),
                                       sf.train.load_variable(step, n), atol=tol, err_msg=n)
    r = subprocess.run([BINARY, "train", "--strategy", "allreduce", "--compression", "int8",
                        "--max-steps", "1", "--checkpoint-dir", str(tmp_path / "bad")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "unknown --compression 'int8'" in r.stderr, r.stderr


def test_between_graph_resumes_from_the_chiefs_checkpoint(tmp_path):
    """30 steps, then the same job again with --auto-resume for 20 more: every task continues
    from the chief's checkpoint and position (broadcast to the others), and step 50's parameters
    are those of 50 steps in one go."""
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    flags = ["--strategy", "allreduce", "--auto-resume", "--lr-decay", "none",
             "--checkpoint-every-secs", "0"]
    resumed, _ = between_graph(tmp_path, "resumed", *flags, steps=30)
    _, outs = between_graph(tmp_path, "resumed", *flags, steps=20, cluster="again")
    assert "resumed from" in outs[0] and "30 steps done" in outs[0], outs[0]
    assert "worker 1: trained 20 steps" in outs[1], outs[1]
    straight, _ = between_graph(tmp_path, "straight", *flags, steps=50)
    assert_same_parameters(resumed, straight, step=50)


def test_between_graph_needs_a_task_and_a_replicating_strategy(tmp_path):
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    for flags, words in [(["--replication", "sideways"], "unknown --replication 'sideways'"),
                         (["--replication", "between-graph", "--strategy", "allreduce"],
                          "needs --strategy allreduce or averaging and --cluster with --task N")]:
        r = subprocess.run([BINARY, "train", "--max-steps", "1", "--checkpoint-dir",
                            str(tmp_path), *flags], capture_output=True, text=True, timeout=120)
        assert r.returncode != 0 and words in r.stderr, r.stderr


def test_a_killed_replica_task_fails_training_naming_it_within_10_s(tmp_path):
    """SIGKILL one of the two server processes mid-training: `train` stops within 10 s with an
    error naming the task, and does not hang."""
    import signal
    import time
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    ports = [free_port(), free_port()]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"worker": [f"127.0.0.1:{p}" for p in ports]}))
    servers = []
    try:
        for task in range(2):
            p = subprocess.Popen([BINARY, "server", "--cluster", str(path), "--task", str(task),
                                  "--threads", "1", "--log-level", "warning"],
                                 stdout=subprocess.PIPE, text=True)
            servers.append(p)
            assert "listening on" in p.stdout.readline()
        trainer = subprocess.Popen(
            [BINARY, "train", "--model", "mlp", "--strategy", "allreduce", "--cluster", str(path),
             "--batch-size", "32", "--epochs", "5", "--progress=false", "--threads", "1",
             "--checkpoint-dir", str(tmp_path / "ckpt"), "--checkpoint-every-secs", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(4)  # training is under way
        assert trainer.poll() is None, trainer.communicate()
        servers[1].send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        try:
            out, err = trainer.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            trainer.kill()
            pytest.fail("training hung after a replica's task was killed")
        elapsed = time.monotonic() - killed_at
        assert trainer.returncode != 0, out
        assert "task:1" in err, err
        assert elapsed < 10, f"{elapsed:.1f} s: {err}"
    finally:
        for p in servers:
            if p.poll() is None:
                p.kill()
            p.wait()


def job_losses(tmp_path, *flags):
    """`train --cluster F --task 1` serves its task until the chief says training is done;
    `--task 0` serves task 0 and trains. Started in either order (the chief first here, task 1 a moment later);
    both exit 0. The chief's loss curve."""
    import time
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    tmp_path.mkdir(exist_ok=True)
    ports = [free_port(), free_port()]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"worker": [f"127.0.0.1:{p}" for p in ports]}))
    common = ["--model", "mlp", "--strategy", "allreduce", "--cluster", str(path), "--threads",
              "1", "--optimizer", "sgd", "--lr", "0.05", "--batch-size", "32", "--max-steps", "20",
              "--progress=false", *flags]
    out = str(tmp_path / "chief")
    chief = subprocess.Popen([BINARY, "train", *common, "--task", "0", "--checkpoint-dir", out,
                              "--trace-dir", out], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    worker = subprocess.Popen([BINARY, "train", *common, "--task", "1"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        chief_out, chief_err = chief.communicate(timeout=300)
        worker_out, worker_err = worker.communicate(timeout=60)
    finally:
        for p in (chief, worker):
            if p.poll() is None:
                p.kill()
    assert chief.returncode == 0, chief_err
    assert "gradients all-reduced over 2 replicas" in chief_out, chief_out
    assert worker.returncode == 0, worker_err
    assert "the chief says training is done" in worker_out, worker_out
    losses = np.load(os.path.join(out, "losses.npy"))
    assert len(losses) == 20 and losses[-1] < losses[0]
    return losses


def test_one_process_per_task_with_job_and_task(tmp_path):
    """...and with --devices 2 each replica's layers are split over two devices of its task
    (model parallelism inside a replica): the same curve."""
    one = job_losses(tmp_path / "one")
    two = job_losses(tmp_path / "two", "--devices", "2")
    np.testing.assert_allclose(two, one, rtol=1e-4, atol=1e-5)


def test_a_task_not_in_the_cluster_file_is_refused(tmp_path):
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"worker": [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]}))
    r = subprocess.run([BINARY, "train", "--cluster", str(path), "--task", "2"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "has no such task (job worker has 2 task(s))" in r.stderr, r.stderr


def test_unknown_strategy_is_an_error(tmp_path):
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    for strategy, words in [("ring", "unknown --strategy 'ring'")]:
        r = subprocess.run([BINARY, "train", "--strategy", strategy, "--max-steps", "1",
                            "--checkpoint-dir", str(tmp_path)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode != 0 and words in r.stderr, r.stderr


def test_a_task_whose_chief_dies_exits_with_an_error(tmp_path):
    """The chief SIGKILLed mid-training: task 1 (serving it) leaves with an error, not 0, so that
    a cluster manager restarts it with the job instead of counting it as finished."""
    import signal
    import time
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"worker": [f"127.0.0.1:{free_port()}" for _ in range(2)]}))
    common = ["--model", "mlp", "--strategy", "allreduce", "--cluster", str(path), "--threads",
              "1", "--batch-size", "32", "--epochs", "5", "--progress=false",
              "--checkpoint-dir", str(tmp_path / "ckpt")]
    worker = subprocess.Popen([BINARY, "train", *common, "--task", "1"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    chief = subprocess.Popen([BINARY, "train", *common, "--task", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(4)
        assert chief.poll() is None, chief.communicate()
        chief.send_signal(signal.SIGKILL)
        out, err = worker.communicate(timeout=30)
    finally:
        for p in (chief, worker):
            if p.poll() is None:
                p.kill()
            p.wait()
    assert worker.returncode != 0, out + err
    assert "before training was done" in err, err


def test_between_graph_a_killed_worker_fails_the_chief_naming_it_within_10_s(tmp_path):
    """SIGKILL worker 1 of a between-graph job mid-training: the chief's next step fails within
    10 s with an error naming task 1, and nothing hangs."""
    import signal
    import time
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"worker": [f"127.0.0.1:{free_port()}" for _ in range(2)]}))
    common = [BINARY, "train", "--model", "mlp", "--strategy", "allreduce", "--cluster",
              str(path), "--replication", "between-graph", "--batch-size", "32", "--threads", "1",
              "--epochs", "5", "--progress=false", "--checkpoint-every-secs", "0"]
    procs = [subprocess.Popen(common + ["--task", str(t), "--checkpoint-dir",
                                        str(tmp_path / f"ckpt{t}")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for t in (1, 0)]
    worker, chief = procs
    try:
        time.sleep(5)  # training is under way
        assert chief.poll() is None, chief.communicate()
        worker.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        try:
            out, err = chief.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("the chief hung after worker 1 was killed")
        elapsed = time.monotonic() - killed_at
        assert chief.returncode != 0, out
        assert "task:1" in err, err
        assert elapsed < 10, f"{elapsed:.1f} s: {err}"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()


def test_strategy_none_with_devices_splits_the_model_by_layer(tmp_path):
    # Regression: --strategy none --devices 2 (documented as one model split over the devices by
    # layer) put every node on CPU:0 and only halved the threads. The layers now go to both
    # devices, and the losses equal those of one device (the same model and batches).
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is not built")
    out = str(tmp_path / "split")
    r = subprocess.run([BINARY, "train", "--model", "mlp", "--max-steps", "20", "--progress=false",
                        "--threads", "1", "--optimizer", "sgd", "--lr", "0.05", "--devices", "2",
                        "--log-placement", "--checkpoint-dir", out, "--trace-dir", out],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    split = np.load(os.path.join(out, "losses.npy"))
    _, single = train(tmp_path, "single", "--devices", "1")
    log = r.stdout + r.stderr
    assert "/device:CPU:1" in log, log[-2000:]
    placed = [line for line in log.splitlines() if "MatMul (" in line]
    assert {line.rsplit(":", 1)[-1] for line in placed} == {"0", "1"}, placed
    np.testing.assert_allclose(split, single, rtol=1e-5)
