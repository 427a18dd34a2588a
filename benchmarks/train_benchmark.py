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

ResNet-50 (the same rounds): training at batch 32 on synthetic 224x224x3 images, 1000 classes,
SGD with momentum 0.9 (`shardflow train --model resnet50 --synthetic` against torchvision's
resnet50), images/s from the median step after 2 warm-up steps; and inference at batch 1
(shardflow through its Python API, sf.applications.resnet50 in evaluation mode; torchvision's in
eval() under no_grad()), the median latency of --infer-runs runs after 3 warm-up runs.
Targets (issue 16): training >= 1.3x torchvision, inference latency >= 1.5x better.

usage: train_benchmark.py path/to/shardflow [--steps N] [--rounds R] [--resnet-steps N]
                          [--infer-runs N] [--only cnn,mlp,resnet50]
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


RESNET_BATCH = 32


def median_step(step, warmup, steps):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def torch_resnet(mode, steps):
    """torchvision's resnet50: training images/s at batch 32 (SGD, momentum 0.9) or inference
    latency in ms at batch 1."""
    import torch
    import torchvision
    torch.set_num_threads(THREADS)
    torch.manual_seed(1)
    net = torchvision.models.resnet50()
    if mode == "infer":
        net.eval()
        x = torch.randn(1, 3, 224, 224)

        def infer():
            with torch.no_grad():
                net(x)
        return 1000 * median_step(infer, 3, steps)
    x = torch.randn(RESNET_BATCH, 3, 224, 224)
    y = torch.randint(0, 1000, (RESNET_BATCH,))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()
    return RESNET_BATCH / median_step(step, 2, steps)


def shardflow_resnet_train(binary, steps):
    out = subprocess.run([binary, "train", "--model", "resnet50", "--synthetic", "--batch-size",
                          str(RESNET_BATCH), "--threads", str(THREADS), "--max-steps", str(steps + 2),
                          "--optimizer", "momentum", "--lr", "0.01"],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"resnet50 synthetic: ([0-9.]+) images/s", out).group(1))


def shardflow_resnet_infer(runs):
    """Latency in ms of sf.applications.resnet50 at batch 1, evaluation mode."""
    import numpy as np
    import shardflow as sf
    images = sf.placeholder(sf.float32, [1, 224, 224, 3], name="images")
    logits = sf.applications.resnet50()(images, training=False)
    config = sf.ConfigProto(intra_op_parallelism_threads=THREADS,
                            inter_op_parallelism_threads=THREADS)
    with sf.Session(config=config) as sess:
        sess.run(sf.global_variables_initializer())
        x = np.random.RandomState(1).randn(1, 224, 224, 3).astype(np.float32)
        return 1000 * median_step(lambda: sess.run(logits, {images: x}), 3, runs)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        model, batch, steps = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(torch_rate(model, batch, steps))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-resnet-worker":
        print(torch_resnet(sys.argv[2], int(sys.argv[3])))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--shardflow-infer-worker":
        print(shardflow_resnet_infer(int(sys.argv[2])))
        return
    binary = sys.argv[1]
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 100
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    resnet_steps = (int(sys.argv[sys.argv.index("--resnet-steps") + 1])
                    if "--resnet-steps" in sys.argv else 3)
    infer_runs = (int(sys.argv[sys.argv.index("--infer-runs") + 1])
                  if "--infer-runs" in sys.argv else 20)
    only = (sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv
            else ["cnn", "mlp", "resnet50"])
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
    for model in [m for m in ("cnn", "mlp") if m in only]:
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
    if "resnet50" in only:
        resnet_table(binary, rounds, resnet_steps, infer_runs, have_torch, env)


def resnet_table(binary, rounds, steps, runs, have_torch, env):
    py_env = dict(os.environ)
    py_env["PYTHONPATH"] = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(binary))),
                                        "python")

    def worker(*args, environ):
        out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                             env=environ, check=True).stdout
        return float(out.strip().splitlines()[-1])

    train, infer, torch_train, torch_infer = [], [], [], []
    for _ in range(rounds):
        train.append(shardflow_resnet_train(binary, steps))
        infer.append(worker("--shardflow-infer-worker", str(runs), environ=py_env))
        if have_torch:
            torch_train.append(worker("--torch-resnet-worker", "train", str(steps), environ=env))
            torch_infer.append(worker("--torch-resnet-worker", "infer", str(runs), environ=env))
    med = statistics.median
    print(f"\nResNet-50, {THREADS} threads; training: synthetic 224x224x3, batch {RESNET_BATCH}, "
          f"SGD momentum 0.9, median step of {steps} after 2 warm-up; inference: batch 1, "
          f"median of {runs} runs after 3 warm-up; median of {rounds} alternating rounds")
    print(f"{'':22s} {'shardflow':>10s} {'torchvision':>12s} {'ratio':>7s} {'target':>7s}")
    ours, theirs = med(train), med(torch_train) if torch_train else float("nan")
    print(f"{'train fp32 (img/s)':22s} {ours:10.2f} {theirs:12.2f} {ours / theirs:7.2f} "
          f"{'>= 1.3':>7s}")
    ours, theirs = med(infer), med(torch_infer) if torch_infer else float("nan")
    print(f"{'infer b1 fp32 (ms)':22s} {ours:10.1f} {theirs:12.1f} {theirs / ours:7.2f} "
          f"{'>= 1.5':>7s}")


if __name__ == "__main__":
    main()
