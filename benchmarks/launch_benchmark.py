#!/usr/bin/python3
"""Launch and recovery times of `shardflow train --cluster auto`, 4 tasks on this machine:

    /usr/bin/python3 benchmarks/launch_benchmark.py [build/bin/shardflow]

For each launcher (OpenMPI's mpirun; torchrun-style variables, as torchrun or a job script sets
them; TF_CONFIG) it starts 4 data-parallel tasks (MLP, allreduce, batch 32 each) and measures
(a) launch to the end of the first training step (the chief's `--profile-step 1` line);
(b) with a task SIGKILLed mid-training: death to the chief's exit with an error naming it (for
mpirun, to mpirun's exit: it ends every rank itself), and a restart of the same command with
--auto-resume to its first step after restoring the checkpoint ("training resumed").
Prints a table. Bounded: every process has a timeout; ports are loopback only.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = 4


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def watch(proc, pattern, found):
    """Records the time `pattern` first appears in proc's stdout."""
    for line in proc.stdout:
        if pattern in line and "at" not in found:
            found["at"] = time.monotonic()
        found.setdefault("lines", []).append(line)


def launch(kind, cli, workdir, extra, tag=""):
    """Starts the job; returns (procs, chief) (only the chief trains and writes --step-stats)."""
    base = 21000 + (os.getpid() % 200) * 20
    args = [cli, "train", "--cluster", "auto", "--strategy", "allreduce", "--model", "mlp",
            "--batch-size", "32", "--threads", "1", "--progress=false", "--profile-step", "1",
            "--checkpoint-dir", os.path.join(workdir, f"ckpt-{kind}{tag}"),
            "--checkpoint-every-steps", "50", "--checkpoint-every-secs", "0", "--auto-resume",
            "--port-base", str(base), *extra]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "SLURM_"))}
    if kind == "mpirun":
        p = subprocess.Popen(
            ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "oob_tcp_if_include",
             "lo", "--mca", "btl_tcp_if_include", "lo", "-x", "SHARDFLOW_BENCH=1", "-np",
             str(TASKS), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=clean)
        return [p], p
    procs = []
    master = free_port()
    ports = [free_port() for _ in range(TASKS)]
    for rank in range(TASKS):
        env = dict(clean)
        if kind == "torchrun":
            env.update(RANK=str(rank), WORLD_SIZE=str(TASKS), LOCAL_RANK=str(rank),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(master))
        else:
            env["TF_CONFIG"] = json.dumps({
                "cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                "task": {"type": "worker", "index": rank}})
        procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, env=env))
    return procs, procs[0]


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()


def victim_pid(kind, procs):
    if kind != "mpirun":
        return procs[TASKS - 1].pid
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if b"SHARDFLOW_BENCH=1" in env and f"OMPI_COMM_WORLD_RANK={TASKS - 1}".encode() in env:
            return int(pid)
    return None


def measure(kind, cli, workdir):
    # (a) launch to the first step.
    start = time.monotonic()
    procs, chief = launch(kind, cli, workdir, ["--max-steps", "20"], tag="-first")
    found = {}
    t = threading.Thread(target=watch, args=(chief, "profile of step 1", found), daemon=True)
    t.start()
    for p in procs:
        p.wait(timeout=300)
    t.join(timeout=10)
    first_step = found.get("at", float("nan")) - start
    # (b) a task killed mid-training, then the same command again.
    procs, chief = launch(kind, cli, workdir, ["--epochs", "5"])
    found = {}
    t = threading.Thread(target=watch, args=(chief, "model.ckpt", found), daemon=True)
    t.start()
    ckpt = os.path.join(workdir, f"ckpt-{kind}", "checkpoint")
    deadline = time.monotonic() + 120
    while not os.path.exists(ckpt) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    pid = victim_pid(kind, procs)
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    chief.wait(timeout=120)
    to_error = time.monotonic() - killed
    error_named = any(f"task:{TASKS - 1}" in line or "exited on signal" in line
                      for line in found.get("lines", []))
    stop(procs)
    if to_error > 10:
        print("".join(found.get("lines", [])[-8:]))
    restart = time.monotonic()
    stats = os.path.join(workdir, f"steps-{kind}.jsonl")
    procs, chief = launch(kind, cli, workdir, ["--max-steps", "5", "--step-stats", stats])
    found = {}
    t = threading.Thread(target=watch, args=(chief, "resumed from", found), daemon=True)
    t.start()
    first = float("nan")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        if os.path.exists(stats) and os.path.getsize(stats) > 0:
            first = time.monotonic() - restart
            break
        time.sleep(0.01)
    for p in procs:
        p.wait(timeout=300)
    t.join(timeout=10)
    return first_step, to_error, error_named, first, "at" in found


def main():
    cli = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bin", "shardflow")
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} vCPUs, {time.strftime('%Y-%m-%d')}; {TASKS} tasks, "
          "MLP allreduce, loopback")
    print(f"{'launcher':<10} {'launch->1st step':>17} {'death->error':>13} {'named':>6} "
          f"{'restart->1st step':>18} {'resumed':>8}")
    kinds = ["torchrun", "TF_CONFIG"] + (["mpirun"] if shutil.which("mpirun") else [])
    with tempfile.TemporaryDirectory() as workdir:
        for kind in kinds:
            a, b, named, c, resumed = measure(kind, cli, workdir)
            print(f"{kind:<10} {a:>16.2f}s {b:>12.2f}s {str(named):>6} {c:>17.2f}s "
                  f"{str(resumed):>8}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
