"""`shardflow train --cluster auto` under the launchers people use: OpenMPI's mpirun (3 ranks,
the same loss curve as one process on the global batch, and a killed rank's job resumed from its
checkpoint), torchrun-style variables, TF_CONFIG (a ps-sync job), and a Kubernetes indexed Job's
pod environment (root: each pod in its own network namespace, its hostname resolved through a
private /etc/hosts). Launch-to-first-step times are printed (pytest -s)."""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest

from cluster_util import BINARY, free_port

pytestmark = pytest.mark.skipif(not os.access(BINARY, os.X_OK), reason=f"{BINARY} is not built")
MPIRUN = shutil.which("mpirun")
needs_mpi = pytest.mark.skipif(MPIRUN is None, reason="apt-get install openmpi-bin")
SGD = ["--model", "mlp", "--optimizer", "sgd", "--lr", "0.05", "--lr-decay", "none",
       "--threads", "1", "--progress=false"]


def mpirun(n, *args, timeout=300):
    return subprocess.run(
        [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--mca", "oob_tcp_if_include", "lo",
         "--mca", "btl_tcp_if_include", "lo", "-np", str(n), BINARY, *args],
        capture_output=True, text=True, timeout=timeout)


def port_base():
    """A base port whose neighbours are likely free too."""
    return 20000 + (os.getpid() * 7 + int(time.time())) % 20000


def losses_of(directory):
    return np.load(os.path.join(directory, "losses.npy"))


@needs_mpi
def test_mpirun_three_ranks_train_as_one_process_on_the_global_batch(tmp_path):
    out = str(tmp_path / "mpi")
    start = time.monotonic()
    r = mpirun(3, "train", "--strategy", "allreduce", "--cluster", "auto", "--port-base",
               str(port_base()), "--batch-size", "32", "--max-steps", "30", "--checkpoint-dir",
               out, "--trace-dir", out, *SGD)
    took = time.monotonic() - start
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("cluster from OpenMPI") == 3, r.stdout
    assert "gradients all-reduced over 3 replicas" in r.stdout and "global batch 96" in r.stdout
    single = str(tmp_path / "single")
    s = subprocess.run([BINARY, "train", "--batch-size", "96", "--max-steps", "30",
                        "--checkpoint-dir", single, "--trace-dir", single, *SGD],
                       capture_output=True, text=True, timeout=300)
    assert s.returncode == 0, s.stderr
    np.testing.assert_allclose(losses_of(out), losses_of(single), rtol=1e-3, atol=1e-4)
    print(f"mpirun -np 3: launch to the end of 30 steps in {took:.1f} s")


@needs_mpi
def test_mpirun_accuracy_matches_one_process(tmp_path):
    common = ["--model", "mlp", "--threads", "1", "--progress=false", "--epochs", "1"]
    r = mpirun(3, "train", "--strategy", "allreduce", "--cluster", "auto", "--port-base",
               str(port_base()), "--batch-size", "32", "--checkpoint-dir",
               str(tmp_path / "mpi"), *common, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    s = subprocess.run([BINARY, "train", "--batch-size", "96", "--checkpoint-dir",
                        str(tmp_path / "one"), *common],
                       capture_output=True, text=True, timeout=600)
    acc = [float(re.search(r"test accuracy ([0-9.]+)%", t).group(1)) for t in (r.stdout, s.stdout)]
    print(f"1 epoch, global batch 96: mpirun -np 3 {acc[0]:.2f}%, one process {acc[1]:.2f}%")
    assert abs(acc[0] - acc[1]) < 1.0, (r.stdout, s.stdout)


def rank_pid(parent_pid, rank):
    """The pid of MPI rank `rank` among mpirun's children (from its environment)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"shardflow" in cmd and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env and \
                f"SHARDFLOW_TEST_JOB={parent_pid}".encode() in env:
            return int(pid)
    return None


@needs_mpi
def test_a_killed_rank_ends_the_job_and_mpirun_again_resumes_from_the_checkpoint(tmp_path):
    ckpt = tmp_path / "ckpt"
    base = port_base()
    args = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--mca", "oob_tcp_if_include", "lo",
            "--mca", "btl_tcp_if_include", "lo", "-x", f"SHARDFLOW_TEST_JOB={os.getpid()}",
            "-np", "3", BINARY, "train", "--strategy", "allreduce", "--cluster", "auto",
            "--port-base", str(base), "--batch-size", "32", "--epochs", "3",
            "--checkpoint-every-steps", "100", "--checkpoint-every-secs", "0", "--checkpoint-dir",
            str(ckpt), *SGD]
    log = open(tmp_path / "first.log", "w")
    job = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        index = ckpt / "checkpoint"
        deadline = time.monotonic() + 120
        while not index.exists() and time.monotonic() < deadline and job.poll() is None:
            time.sleep(0.2)
        assert index.exists(), (tmp_path / "first.log").read_text()
        victim = rank_pid(os.getpid(), 2)
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        job.wait(timeout=60)
        ended = time.monotonic() - killed
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    first = (tmp_path / "first.log").read_text()
    assert job.returncode != 0, first
    assert ended < 10, f"{ended:.1f} s"
    saved = int(re.findall(r"model\.ckpt-(\d+)", index.read_text())[-1])
    assert saved >= 100
    # The manager restarts the job: the chief resumes from the last checkpoint.
    again = mpirun(3, *args[args.index(BINARY) + 1:], "--resume", "--max-steps", "50")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"resumed from {ckpt}/model.ckpt-{saved}" in again.stdout, again.stdout
    assert f"model.ckpt-{saved + 50}" in again.stdout
    print(f"rank 2 killed: job ended {ended:.1f} s later; resumed at step {saved}")


def run_ranks(tmp_path, envs, *args, timeout=300):
    """One `shardflow train --cluster auto` process per environment; [(code, output)]."""
    procs = []
    for i, extra in enumerate(envs):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OMPI_", "SLURM_", "PMIX_")) and k not in (
                   "TF_CONFIG", "RANK", "WORLD_SIZE", "JOB_COMPLETION_INDEX")}
        env.update(extra)
        log = open(tmp_path / f"rank{i}.log", "w")
        procs.append(subprocess.Popen([BINARY, "train", "--cluster", "auto", *args], env=env,
                                      stdout=log, stderr=subprocess.STDOUT, text=True))
    out = []
    for i, p in enumerate(procs):
        try:
            p.wait(timeout=timeout)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        out.append((p.returncode, (tmp_path / f"rank{i}.log").read_text()))
    return out


def test_torchrun_variables(tmp_path):
    master = free_port()
    base = port_base()
    envs = [{"RANK": str(r), "WORLD_SIZE": "2", "LOCAL_RANK": str(r), "MASTER_ADDR": "127.0.0.1",
             "MASTER_PORT": str(master)} for r in range(2)]
    results = run_ranks(tmp_path, envs, "--strategy", "allreduce", "--port-base", str(base),
                        "--batch-size", "32", "--max-steps", "20",
                        "--checkpoint-dir", str(tmp_path / "ckpt"), *SGD)
    for code, text in results:
        assert code == 0, text
    assert "cluster from torchrun" in results[0][1]
    assert "gradients all-reduced over 2 replicas" in results[0][1], results[0][1]


def test_tf_config_ps_sync_job(tmp_path):
    ports = [free_port() for _ in range(3)]
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"],
               "worker": [f"127.0.0.1:{ports[1]}", f"127.0.0.1:{ports[2]}"]}
    envs = [{"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": job, "index": i}})}
            for job, i in (("ps", 0), ("worker", 1), ("worker", 0))]
    results = run_ranks(tmp_path, envs, "--strategy", "ps-sync", "--batch-size", "32",
                        "--max-steps", "20", "--checkpoint-dir", str(tmp_path / "ckpt"), *SGD)
    for code, text in results:
        assert code == 0, text
    chief = results[2][1]
    assert "cluster from TF_CONFIG: this is task worker:0" in chief, chief
    assert "synchronous parameter servers, 2 workers" in chief, chief


def test_a_broken_environment_is_named(tmp_path):
    results = run_ranks(tmp_path, [{"TF_CONFIG": "{not json"}], "--max-steps", "1",
                        "--checkpoint-dir", str(tmp_path / "ckpt"), *SGD, timeout=60)
    assert results[0][0] != 0 and "TF_CONFIG is not a JSON object" in results[0][1]
    results = run_ranks(tmp_path, [{"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "2"}],
                        "--max-steps", "1", "--checkpoint-dir", str(tmp_path / "ckpt"), *SGD,
                        timeout=60)
    assert results[0][0] != 0 and "OMPI_COMM_WORLD_RANK=5 is not below" in results[0][1]
    # Rank 1 of 2 whose rank 0 never comes: a bounded wait naming the coordinator.
    results = run_ranks(tmp_path, [{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                                    "MASTER_PORT": str(free_port())}],
                        "--rendezvous-timeout", "2", "--max-steps", "1",
                        "--checkpoint-dir", str(tmp_path / "ckpt"), *SGD, timeout=60)
    assert results[0][0] != 0 and "could not reach the rendezvous" in results[0][1], results


# ---- a Kubernetes indexed Job's pods, emulated -----------------------------------------------

def have_netns():
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("unshare") is None:
        return False
    name = f"sfk_probe_{os.getpid()}"
    ok = subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode == 0
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return ok


@contextlib.contextmanager
def kubernetes_pods(tmp_path, pods):
    """Network namespaces for `pods` pods of an indexed Job `mnist` behind the headless Service
    `train` (each its own IP, all on port 2222, as pods), joined by a bridge; yields
    start(i, command, env) -> Popen, which runs `command` (a shell line) in pod i with the
    pod's variables and a private /etc/hosts resolving `mnist-<i>.train` (a mount namespace per
    pod; the machine's file is not touched)."""
    suffix = str(os.getpid())
    bridge_ns = f"sfkb_{suffix}"
    subnet = f"10.233.{os.getpid() % 200 + 20}"
    names = [f"sfk{i}_{suffix}" for i in range(pods)]
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n" + "".join(
        f"{subnet}.{i + 1} mnist-{i}.train mnist-{i}\n" for i in range(pods)))

    def sh(*a):
        subprocess.run(list(a), check=True, capture_output=True)

    def start(i, command, env):
        env = dict(env, PATH=os.environ["PATH"], JOB_COMPLETION_INDEX=str(i),
                   SHARDFLOW_NUM_TASKS=str(pods), SHARDFLOW_SERVICE="train",
                   HOSTNAME=f"mnist-{i}", GRPC_DNS_RESOLVER="native")
        log = open(tmp_path / f"pod{i}.log", "w")
        return subprocess.Popen(
            ["ip", "netns", "exec", names[i], "unshare", "--mount", "sh", "-c",
             f"mount --bind {hosts} /etc/hosts && exec {command}"], env=env, stdout=log,
            stderr=subprocess.STDOUT)
    try:
        sh("ip", "netns", "add", bridge_ns)
        sh("ip", "netns", "exec", bridge_ns, "ip", "link", "add", "br0", "type", "bridge")
        sh("ip", "netns", "exec", bridge_ns, "ip", "link", "set", "br0", "up")
        for i, ns in enumerate(names):
            a, b = f"sfka{i}_{suffix}"[:15], f"sfkp{i}_{suffix}"[:15]
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
            sh("ip", "link", "set", a, "netns", ns)
            sh("ip", "link", "set", b, "netns", bridge_ns)
            sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{subnet}.{i + 1}/24", "dev", a)
            sh("ip", "netns", "exec", ns, "ip", "link", "set", a, "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            sh("ip", "netns", "exec", bridge_ns, "ip", "link", "set", b, "master", "br0")
            sh("ip", "netns", "exec", bridge_ns, "ip", "link", "set", b, "up")
        yield start
    finally:
        for ns in names + [bridge_ns]:
            for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                      text=True).stdout.split():
                subprocess.run(["kill", "-9", pid], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def wait_for_pods(tmp_path, procs):
    for p in procs:
        try:
            p.wait(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    logs = [(tmp_path / f"pod{i}.log").read_text() for i in range(len(procs))]
    for p, text in zip(procs, logs):
        assert p.returncode == 0, text
    return logs


@pytest.mark.skipif(not have_netns(), reason="needs root and network namespaces")
def test_kubernetes_indexed_job_pods(tmp_path):
    """Three pods of the indexed Job, `shardflow train --cluster auto` in each."""
    with kubernetes_pods(tmp_path, 3) as start_pod:
        begin = time.monotonic()
        procs = [start_pod(i, f"{BINARY} train --cluster auto --strategy allreduce --plaintext "
                           f"--batch-size 32 --max-steps 20 --checkpoint-dir {tmp_path}/ckpt{i} "
                           + " ".join(SGD), {}) for i in range(3)]
        logs = wait_for_pods(tmp_path, procs)
        took = time.monotonic() - begin
    assert "cluster from Kubernetes: this is task worker:0" in logs[0], logs[0]
    assert "mnist-2.train:2222" in logs[0]
    assert "gradients all-reduced over 3 replicas" in logs[0], logs[0]
    print(f"3 emulated pods: launch to the end of 20 steps in {took:.1f} s")


@pytest.mark.skipif(not have_netns(), reason="needs root and network namespaces")
def test_kubernetes_pods_run_an_unchanged_horovod_program(tmp_path):
    """examples/python/horovod_mnist.py in two pods: hvd.init() finds its rank from the pod's
    variables, the ranks meet across the (emulated) hosts in plaintext asked for by
    SHARDFLOW_PLAINTEXT=1 (the program does not say), and train as one."""
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                           "python", "horovod_mnist.py")
    python_dir = os.path.join(os.path.dirname(os.path.dirname(BINARY)), "python")
    env = {"PYTHONPATH": python_dir, "SHARDFLOW_PLAINTEXT": "1"}
    with kubernetes_pods(tmp_path, 2) as start_pod:
        procs = [start_pod(i, f"/usr/bin/python3 {example} --steps 60", env) for i in range(2)]
        logs = wait_for_pods(tmp_path, procs)
    accuracy = re.findall(r"test accuracy[^0-9]*([0-9.]+)", logs[0])
    assert accuracy and float(accuracy[-1]) > 50, logs[0]
