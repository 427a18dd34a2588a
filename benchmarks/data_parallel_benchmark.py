#!/usr/bin/python3
"""Data-parallel training of the MLP on 2 processes x 1 thread, global batch 128: shardflow's
`train --strategy allreduce` against PyTorch DistributedDataParallel with gloo, in one run.

    /usr/bin/python3 benchmarks/data_parallel_benchmark.py [build/bin/shardflow]
                     [--steps 200] [--rounds 3] [--transport auto|grpc|ucx]
                     [--replication between-graph|in-graph]

shardflow, between-graph (the default, as DDP and Horovod run): two `shardflow train --task N
--replication between-graph --threads 1 --batch-size 64` processes (tasks 0 and 1 on loopback),
each with its own graph and its own 64 rows per step; only the gradients cross, by the ring
all-reduce between them. In-graph: two `shardflow server --threads 1` processes hold a replica
each and a third process, `shardflow train --cluster ...`, drives both from one graph (it feeds
each replica its rows and runs the master). PyTorch: two processes, torch.set_num_threads(1),
DDP over gloo, 64 rows each, the same MLP (784-512-512-10, ReLU), Adam lr 1e-3, Fashion-MNIST.
Both are timed after 10 warm-up steps, in global examples per second. PyTorch runs with Debian's
OpenBLAS when libopenblas0-openmp is installed (as benchmarks/train_benchmark.py). Rounds
alternate; the table shows medians. Target (issue 12): >= 1.5x DDP. Exit status 0 whatever the
numbers.
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
PER_PROCESS_BATCH = 64

DDP_WORKER = r"""
import gzip, sys, time
import numpy as np, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
rank, port, steps, batch = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)
torch.manual_seed(1)
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank, world_size=2)
with gzip.open("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz") as f:
    images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32) / 255
with gzip.open("/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz") as f:
    labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
nn = torch.nn
net = DDP(nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 10)))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
order = np.random.default_rng(1).permutation(len(labels))
def step(i):
    start = ((2 * i + rank) * batch) % (len(labels) - batch)
    idx = order[start:start + batch]
    opt.zero_grad()
    loss_fn(net(torch.from_numpy(images[idx])), torch.from_numpy(labels[idx])).backward()
    opt.step()
for i in range(10):
    step(i)
dist.barrier()
t0 = time.perf_counter()
for i in range(steps):
    step(10 + i)
dist.barrier()
elapsed = time.perf_counter() - t0
if rank == 0:
    print(steps * 2 * batch / elapsed)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ddp_rate(steps):
    env = dict(os.environ)
    if os.path.isdir(OPENBLAS):
        env["LD_LIBRARY_PATH"] = OPENBLAS + ":" + env.get("LD_LIBRARY_PATH", "")
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, "-c", DDP_WORKER, str(r), port, str(steps),
                               str(PER_PROCESS_BATCH)], stdout=subprocess.PIPE, text=True, env=env)
             for r in range(2)]
    outs = [p.communicate(timeout=1800)[0] for p in procs]
    return float(outs[0].strip().splitlines()[-1])


def start_servers(cli, workdir, transport="auto"):
    ports = [free_port(), free_port()]
    path = os.path.join(workdir, "cluster.json")
    with open(path, "w") as f:
        json.dump({"worker": ["127.0.0.1:%d" % p for p in ports]}, f)
    procs = []
    for task in range(2):
        p = subprocess.Popen([cli, "server", "--cluster", path, "--task", str(task), "--threads",
                              "1", "--log-level", "warning", "--transport", transport],
                             stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError("shardflow server did not start: " + line)
        procs.append(p)
    return procs, path


def shardflow_rate(cli, spec, steps, workdir):
    out = subprocess.run([cli, "train", "--model", "mlp", "--strategy", "allreduce", "--cluster",
                          spec, "--batch-size", str(PER_PROCESS_BATCH), "--threads", "1",
                          "--max-steps", str(steps + 10), "--lr-decay", "none", "--progress=false",
                          "--checkpoint-dir", os.path.join(workdir, "ckpt-%d" % time.time_ns()),
                          "--checkpoint-every-secs", "0"],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"([0-9.]+) examples/s after the first", out).group(1))


def between_graph_rate(cli, steps, workdir, transport="auto"):
    path = os.path.join(workdir, "between-%d.json" % time.time_ns())
    with open(path, "w") as f:
        json.dump({"worker": ["127.0.0.1:%d" % free_port() for _ in range(2)]}, f)
    common = ["train", "--model", "mlp", "--strategy", "allreduce", "--cluster", path,
              "--replication", "between-graph", "--batch-size", str(PER_PROCESS_BATCH),
              "--threads", "1", "--max-steps", str(steps + 10), "--lr-decay", "none",
              "--progress=false", "--checkpoint-every-secs", "0", "--transport", transport,
              "--log-level", "warning"]
    ckpt = os.path.join(workdir, "ckpt-%d" % time.time_ns())
    procs = [subprocess.Popen([cli, *common, "--task", str(t), "--checkpoint-dir", ckpt + str(t)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for t in range(2)]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=1800)
            if p.returncode != 0:
                raise RuntimeError("shardflow train failed: " + err[-2000:])
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return float(re.search(r"([0-9.]+) examples/s after the first", outs[0]).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cli", nargs="?", default=os.path.join(ROOT, "build", "bin", "shardflow"))
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transport", default="auto", choices=["auto", "grpc", "ucx"],
                        help="the servers' data plane (the ring's chunks); gRPC stays the "
                        "control plane and the client's feeds")
    parser.add_argument("--replication", default="between-graph",
                        choices=["between-graph", "in-graph"],
                        help="between-graph: one training process per task, as DDP; in-graph: "
                        "two servers driven by one client")
    args = parser.parse_args()
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    import torch
    print(f"machine: {cpu}, {os.cpu_count()} vCPUs; PyTorch {torch.__version__} with "
          f"{'OpenBLAS' if os.path.isdir(OPENBLAS) else 'the reference BLAS'}")
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as workdir:
        between = args.replication == "between-graph"
        procs, spec = ([], None) if between else start_servers(args.cli, workdir, args.transport)
        try:
            for r in range(args.rounds):
                ours.append(between_graph_rate(args.cli, args.steps, workdir, args.transport)
                            if between else shardflow_rate(args.cli, spec, args.steps, workdir))
                theirs.append(ddp_rate(args.steps))
                print(f"round {r + 1}/{args.rounds}: shardflow {ours[-1]:.0f}, DDP "
                      f"{theirs[-1]:.0f} examples/s", file=sys.stderr)
        finally:
            for p in procs:
                p.terminate()
                p.wait(timeout=30)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"\nMLP, 2 processes x 1 thread, global batch {2 * PER_PROCESS_BATCH}, Adam; "
          f"{args.steps} timed steps; median of {args.rounds} alternating rounds; "
          f"shardflow {args.replication}, tasks' tensors over {args.transport}")
    print(f"{'':10s} {'examples/s':>11s}")
    print(f"{'shardflow':10s} {a:11.0f}   (rounds: {', '.join(f'{x:.0f}' for x in ours)})")
    print(f"{'DDP gloo':10s} {b:11.0f}   (rounds: {', '.join(f'{x:.0f}' for x in theirs)})")
    print(f"ratio {a / b:.2f}x   target >= 1.5x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
