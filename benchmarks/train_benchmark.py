#!/usr/bin/python3
"""Training throughput: shardflow vs PyTorch, same models, batch sizes, optimizer and threads.

Trains the CNN and the MLP of `shardflow train` at batch 64 and 128 with 2 threads, Adam (lr 1e-3),
on Fashion-MNIST, and prints images/s side by side with their ratio. PyTorch runs when Debian's
python3-torch is installed; Debian's PyTorch links the reference BLAS, so this script re-runs
itself with Debian's OpenBLAS (libopenblas0-openmp) on LD_LIBRARY_PATH when that is installed, and
says which BLAS the peer used. Both sides are timed after 10 warm-up steps.

Each configuration runs ROUNDS times, alternating shardflow and PyTorch so that both see the
same machine (these VMs have noisy neighbours); the table shows medians.

A third column runs shardflow with its graph optimizer off (`--graph-optimizer off`: no folding,
no MatMul/Conv2D + bias + activation fusion), in the same rounds, to show what the optimizer buys.
Targets (issue 16): fp32 at batch 128, CNN and MLP >= 1.6x PyTorch.

usage: train_benchmark.py path/to/shardflow [--steps N] [--rounds R]
"""
import statistics
import os
import re
import subprocess
import sys
import tempfile
import time

OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
THREADS = 2


def shardflow_rate(binary, model, batch, steps, graph_optimizer="on"):
    with tempfile.TemporaryDirectory() as ckpt:
        out = subprocess.run([binary, "train", "--model", model, "--batch-size", str(batch),
                              "--threads", str(THREADS), "--max-steps", str(steps + 10), "--lr-decay", "none",
                              "--checkpoint-dir", ckpt, "--progress=false",
                              "--graph-optimizer", graph_optimizer],
                             capture_output=True, text=True, check=True).stdout
    return float(re.search(r"([0-9.]+) examples/s after the first", out).group(1))


def torch_rate(model, batch, steps):
    import gzip
    import numpy as np
    import torch
    torch.set_num_threads(THREADS)
    torch.manual_seed(1)
    with gzip.open("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32) / 255
    with gzip.open("/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    nn = torch.nn
    if model == "mlp":
        net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                            nn.Linear(512, 10))
        shape = (-1, 784)
    else:
        net = nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Linear(1024, 10))
        shape = (-1, 1, 28, 28)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    order = np.random.default_rng(1).permutation(len(labels))

    def step(i):
        idx = order[(i * batch) % (len(labels) - batch):][:batch]
        x = torch.from_numpy(images[idx].reshape(shape))
        y = torch.from_numpy(labels[idx])
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()

    for i in range(10):
        step(i)
    start = time.perf_counter()
    for i in range(steps):
        step(10 + i)
    return steps * batch / (time.perf_counter() - start)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        model, batch, steps = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(torch_rate(model, batch, steps))
        return
    binary = sys.argv[1]
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 100
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    env = dict(os.environ)
    blas = "reference BLAS (Debian default)"
    if os.path.isdir(OPENBLAS):
        env["LD_LIBRARY_PATH"] = OPENBLAS + ":" + env.get("LD_LIBRARY_PATH", "")
        blas = "OpenBLAS (libopenblas0-openmp)"
    print(f"training throughput, {THREADS} threads, Adam lr 1e-3, Fashion-MNIST; "
          f"{steps} timed steps after 10 warm-up steps; median of {rounds} alternating rounds")
    print(f"PyTorch: {torch.__version__ + ' with ' + blas if have_torch else 'not installed (apt-get install python3-torch)'}")
    print(f"{'model':5s} {'batch':>5s} {'shardflow img/s':>16s} {'(optimizer off)':>16s} "
          f"{'PyTorch img/s':>14s} {'ratio':>7s} {'target':>7s}")
    for model in ("cnn", "mlp"):
        for batch in (64, 128):
            ours_runs, plain_runs, theirs_runs = [], [], []
            for _ in range(rounds):
                ours_runs.append(shardflow_rate(binary, model, batch, steps))
                plain_runs.append(shardflow_rate(binary, model, batch, steps, "off"))
                if have_torch:
                    out = subprocess.run([sys.executable, __file__, "--torch-worker", model, str(batch),
                                          str(steps)], capture_output=True, text=True, env=env,
                                         check=True).stdout
                    theirs_runs.append(float(out.strip().splitlines()[-1]))
            ours = statistics.median(ours_runs)
            plain = statistics.median(plain_runs)
            theirs = statistics.median(theirs_runs) if theirs_runs else None
            target = ">= 1.6" if batch == 128 else "-"
            print(f"{model:5s} {batch:5d} {ours:16.0f} {plain:16.0f} {theirs or float('nan'):14.0f} "
                  f"{(ours / theirs) if theirs else float('nan'):7.2f} {target:>7s}")


if __name__ == "__main__":
    main()
