#!/usr/bin/python3
"""How the number of workers changes accuracy and loss, per data-parallel strategy (the seeds'
first question), at equal per-worker batch.

    /usr/bin/python3 benchmarks/data_parallel_accuracy.py [build/bin/shardflow]
                     [--model mlp] [--epochs 2] [--workers 1 2 4] [--out DIR]
                     [--strategies allreduce averaging ps-sync ps-async]

For each strategy and each number of workers W, trains with 64 examples per worker and step
(global batch 64·W, so W workers take 1/W of the steps per epoch) for --epochs epochs with the
default Adam and cosine decay, and prints the test accuracy, the mean training loss of the last
50 steps and the wall time. allreduce and averaging (every 10 steps): `shardflow train
--strategy S --devices W` (W replicas in one process: the same arithmetic as W processes).
ps-sync and ps-async: one ps and W worker processes on loopback (`--cluster --job --task`); the
loss curve is the chief's (its own 64 rows per step). Writes DIR/data_parallel_loss.png (loss
per example seen, one curve per run; Debian's python3-matplotlib) when matplotlib is installed.
Replicas share this machine's cores, so the time column says nothing about scaling across hosts:
benchmarks/allreduce_benchmark.py and data_parallel_benchmark.py measure the network side.
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 64


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ps(args, strategy, workers, out_dir):
    """One ps and `workers` worker processes; the chief's output."""
    cluster = os.path.join(out_dir, "cluster.json")
    os.makedirs(out_dir, exist_ok=True)
    with open(cluster, "w") as f:
        json.dump({"ps": [f"127.0.0.1:{free_port()}"],
                   "worker": [f"127.0.0.1:{free_port()}" for _ in range(workers)]}, f)
    procs = []
    for job, task in [("ps", 0)] + [("worker", t) for t in range(workers - 1, -1, -1)]:
        procs.append(subprocess.Popen(
            args + ["--strategy", strategy, "--cluster", cluster, "--job", job, "--task",
                    str(task), "--threads", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=3600)[0] for p in procs]
    for p, o in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(o)
    return outputs[-1]


def run(cli, model, epochs, strategy, workers, workdir):
    out_dir = os.path.join(workdir, f"{strategy}-{workers}")
    args = [cli, "train", "--model", model, "--epochs", str(epochs), "--batch-size", str(BATCH),
            "--progress=false", "--checkpoint-dir", out_dir, "--trace-dir", out_dir,
            "--checkpoint-every-secs", "0"]
    start = time.perf_counter()
    if strategy.startswith("ps-"):
        out = run_ps(args, strategy, workers, out_dir)
    else:
        if workers > 1 or strategy != "allreduce":
            args += ["--strategy", strategy, "--devices", str(workers)]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    seconds = time.perf_counter() - start
    accuracy = float(re.search(r"test accuracy ([0-9.]+)%", out).group(1))
    losses = np.load(os.path.join(out_dir, "losses.npy"))
    return accuracy, losses, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cli", nargs="?", default=os.path.join(ROOT, "build", "bin", "shardflow"))
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--out", default=".")
    parser.add_argument("--strategies", nargs="+",
                        default=["allreduce", "averaging", "ps-sync", "ps-async"])
    args = parser.parse_args()
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} vCPUs; {args.model}, {args.epochs} epochs, "
          f"batch {BATCH} per worker, Adam 1e-3 with cosine decay")
    print(f"{'strategy':<22} {'workers':>7} {'global batch':>12} {'steps':>6} {'test acc':>9} "
          f"{'loss (last 50)':>15} {'time':>7}")
    curves = []
    with tempfile.TemporaryDirectory() as workdir:
        for strategy in args.strategies:
            for w in args.workers:
                if strategy == "averaging" and w == 1:
                    continue  # one worker averages nothing: the allreduce row
                acc, losses, secs = run(args.cli, args.model, args.epochs, strategy, w, workdir)
                label = strategy if strategy != "averaging" else "averaging (every 10)"
                print(f"{label:<22} {w:>7} {BATCH * w:>12} {len(losses):>6} {acc:>8.2f}% "
                      f"{losses[-50:].mean():>15.4f} {secs:>6.1f}s")
                curves.append((f"{label}, {w} worker(s)", w, losses))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: apt-get install python3-matplotlib)")
        return 0
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, w, losses in curves:
        smooth = np.convolve(losses, np.ones(20) / 20, mode="valid")
        ax.plot((np.arange(len(smooth)) + 20) * BATCH * w, smooth, label=label)
    ax.set_xlabel("training examples seen")
    ax.set_ylabel("training loss (moving average of 20 steps)")
    ax.set_title(f"{args.model}: data-parallel workers and strategies, {BATCH} examples per worker")
    ax.legend()
    path = os.path.join(args.out, "data_parallel_loss.png")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
