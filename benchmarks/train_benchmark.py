#!/usr/bin/python3
"""Training throughput: shardflow vs PyTorch, same models, batch sizes, optimizer and threads.

Trains the CNN and the MLP of `shardflow train` at batch 64 and 128 with 2 threads, Adam (lr 1e-3),
on Fashion-MNIST, and prints images/s side by side with their ratio. PyTorch runs when Debian's
python3-torch is installed; Debian's PyTorch links the reference BLAS, so this script re-runs
itself with Debian's OpenBLAS (libopenblas0-openmp) on LD_LIBRARY_PATH when that is installed, and
says which BLAS the peer used. Both sides are timed after 10 warm-up steps.

Each configuration runs ROUNDS times, alternating shardflow and PyTorch so that both see the
same machine (these VMs have noisy neighbours); the table shows medians.

A bf16 column runs shardflow with `--precision bf16` (bfloat16 mixed precision; on a processor
without native bfloat16 the product inputs are only rounded and the fp32 kernels run, so it shows
the cost of the casts, not a speed-up). A third column runs shardflow with its graph optimizer off (`--graph-optimizer off`: no folding,
no MatMul/Conv2D + bias + activation fusion), in the same rounds, to show what the optimizer buys.
Targets (issue 16): fp32 at batch 128, CNN and MLP >= 1.6x PyTorch; bf16 CNN >= 1.6x fp32.
The last column states each as a share of the fp32 matmul ceiling measured in the same rounds:
FLOPs per image x img/s / the best dnnl_sgemm GFLOP/s (n = 1024, build/bin/matmul_benchmark).

ResNet-50 (the same rounds): training at batch 32 on synthetic 224x224x3 images, 1000 classes,
SGD with momentum 0.9 (`shardflow train --model resnet50 --synthetic` against torchvision's
resnet50), images/s from the median step after 2 warm-up steps; and inference at batch 1
(shardflow through its Python API, sf.applications.resnet50 in evaluation mode; torchvision's in
eval() under no_grad()), the median latency of --infer-runs runs after 3 warm-up runs; and the
same frozen (shardflow: sf.graph_util.convert_variables_to_constants, as TF1 deploys a model;
PyTorch: TorchScript frozen and optimize_for_inference).
With native bfloat16 (or --bf16-resnet), bf16 rows too: `--precision bf16` against PyTorch's
torch.cpu.amp.autocast(dtype=torch.bfloat16) (skipped otherwise: PyTorch's bf16 convolutions fall
back to reference kernels there and take minutes per step).
Targets (issue 16): training >= 1.3x torchvision, inference latency >= 1.5x better.

usage: train_benchmark.py path/to/shardflow [--steps N] [--rounds R] [--resnet-steps N]
                          [--infer-runs N] [--only cnn,mlp,resnet50] [--bf16-resnet]
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


def native_bf16():
    """Whether the processor multiplies bfloat16 natively (AVX512-BF16 or AMX-BF16)."""
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    return " avx512_bf16" in flags or " amx_bf16" in flags


# Multiply-add FLOPs per training image (forward, weight gradients, and input gradients but the
# first layer's), counting the matmuls and convolutions only:
# MLP 784-512-512-10: 2*(784*512 + 512*512 + 512*10) * 2 + 2*(512*512 + 512*10);
# CNN: conv 5x5 1->32 at 28x28, conv 5x5 32->64 at 14x14, dense 3136->1024, 1024->10.
FLOPS_PER_IMAGE = {
    "mlp": 2 * (784 * 512 + 512 * 512 + 512 * 10) * 2 + 2 * (512 * 512 + 512 * 10),
    "cnn": 2 * (784 * 32 * 25 + 196 * 64 * 800 + 3136 * 1024 + 1024 * 10) * 2
           + 2 * (196 * 64 * 800 + 3136 * 1024 + 1024 * 10),
}


def sgemm_gflops(binary):
    """The fp32 matmul ceiling here and now: the best dnnl_sgemm GFLOP/s at n = 1024 with the
    same threads (build/bin/matmul_benchmark, beside the shardflow binary), or None."""
    bench = os.path.join(os.path.dirname(os.path.abspath(binary)), "matmul_benchmark")
    if not os.path.exists(bench):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sgemm.json")
        subprocess.run([bench, "--benchmark_filter=BM_DnnlSgemm/1024", "--benchmark_min_time=0.3",
                        "--benchmark_out=" + out, "--benchmark_out_format=json"],
                       capture_output=True, check=True,
                       env=dict(os.environ, OMP_NUM_THREADS=str(THREADS)))
        import json
        with open(out) as f:
            runs = [b["GFLOP/s"] for b in json.load(f)["benchmarks"]
                    if b.get("run_type") == "iteration"]
    return max(runs) if runs else None


def shardflow_rate(binary, model, batch, steps, graph_optimizer="on", precision="fp32"):
    with tempfile.TemporaryDirectory() as ckpt:
        out = subprocess.run([binary, "train", "--model", model, "--batch-size", str(batch),
                              "--threads", str(THREADS), "--max-steps", str(steps + 10), "--lr-decay", "none",
                              "--checkpoint-dir", ckpt, "--progress=false",
                              "--graph-optimizer", graph_optimizer, "--precision", precision],
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


def torch_resnet(mode, steps, precision="fp32"):
    """torchvision's resnet50: training images/s at batch 32 (SGD, momentum 0.9) or inference
    latency in ms at batch 1; bf16 under torch.cpu.amp.autocast."""
    import contextlib
    import torch
    import torchvision
    amp = (torch.cpu.amp.autocast(dtype=torch.bfloat16) if precision == "bf16"
           else contextlib.nullcontext())
    torch.set_num_threads(THREADS)
    torch.manual_seed(1)
    net = torchvision.models.resnet50()
    if mode in ("infer", "infer-frozen"):
        net.eval()
        x = torch.randn(1, 3, 224, 224)
        if mode == "infer-frozen":
            # TorchScript frozen and optimised for inference (batch norm folded, oneDNN layouts).
            with torch.no_grad(), amp:
                net = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(net)))

        def infer():
            with torch.no_grad(), amp:
                net(x)
        return 1000 * median_step(infer, 3, steps)
    x = torch.randn(RESNET_BATCH, 3, 224, 224)
    y = torch.randint(0, 1000, (RESNET_BATCH,))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        with amp:
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
    return RESNET_BATCH / median_step(step, 2, steps)


def shardflow_resnet_train(binary, steps, precision="fp32"):
    out = subprocess.run([binary, "train", "--model", "resnet50", "--synthetic", "--batch-size",
                          str(RESNET_BATCH), "--threads", str(THREADS), "--max-steps", str(steps + 2),
                          "--optimizer", "momentum", "--lr", "0.01", "--precision", precision],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"resnet50 synthetic: ([0-9.]+) images/s", out).group(1))


def shardflow_resnet_infer(runs, precision="fp32", frozen=False):
    """Latency in ms of sf.applications.resnet50 at batch 1, evaluation mode; `frozen`: after
    sf.graph_util.convert_variables_to_constants, as TF1 programs deploy a model."""
    import numpy as np
    import shardflow as sf
    images = sf.placeholder(sf.float32, [1, 224, 224, 3], name="images")
    logits = sf.identity(sf.applications.resnet50()(images, training=False), name="logits")
    rewrite = sf.RewriterConfig(auto_mixed_precision_onednn_bfloat16=(
        sf.RewriterConfig.ON if precision == "bf16" else sf.RewriterConfig.DEFAULT))
    config = sf.ConfigProto(intra_op_parallelism_threads=THREADS,
                            inter_op_parallelism_threads=THREADS,
                            graph_options=sf.GraphOptions(rewrite_options=rewrite))
    x = np.random.RandomState(1).randn(1, 224, 224, 3).astype(np.float32)
    with sf.Session(config=config) as sess:
        sess.run(sf.global_variables_initializer())
        if not frozen:
            return 1000 * median_step(lambda: sess.run(logits, {images: x}), 3, runs)
        graph_def = sf.graph_util.convert_variables_to_constants(
            sess, sess.graph.as_graph_def(), ["logits"])
    with sf.Graph().as_default() as g:
        out, = sf.import_graph_def(graph_def, return_elements=["logits:0"], name="")
        feed = g.get_tensor_by_name("images:0")
        with sf.Session(config=config) as sess:
            return 1000 * median_step(lambda: sess.run(out, {feed: x}), 3, runs)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        model, batch, steps = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(torch_rate(model, batch, steps))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-resnet-worker":
        print(torch_resnet(sys.argv[2], int(sys.argv[3]), sys.argv[4]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--shardflow-infer-worker":
        print(shardflow_resnet_infer(int(sys.argv[2]), sys.argv[3], sys.argv[4] == "frozen"))
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
          f"{'PyTorch img/s':>14s} {'ratio':>7s} {'target':>7s} {'bf16 img/s':>11s} "
          f"{'bf16/fp32':>9s} {'of sgemm':>8s}")
    ceilings = []
    bf16_note = ("native bfloat16" if native_bf16() else
                 "no native bfloat16 here: bf16 rounds inputs, fp32 kernels")
    for model in [m for m in ("cnn", "mlp") if m in only]:
        for batch in (64, 128):
            ours_runs, plain_runs, theirs_runs, bf16_runs = [], [], [], []
            for _ in range(rounds):
                ceiling = sgemm_gflops(binary)
                if ceiling:
                    ceilings.append(ceiling)
                ours_runs.append(shardflow_rate(binary, model, batch, steps))
                plain_runs.append(shardflow_rate(binary, model, batch, steps, "off"))
                bf16_runs.append(shardflow_rate(binary, model, batch, steps, precision="bf16"))
                if have_torch:
                    out = subprocess.run([sys.executable, __file__, "--torch-worker", model, str(batch),
                                          str(steps)], capture_output=True, text=True, env=env,
                                         check=True).stdout
                    theirs_runs.append(float(out.strip().splitlines()[-1]))
            ours = statistics.median(ours_runs)
            plain = statistics.median(plain_runs)
            theirs = statistics.median(theirs_runs) if theirs_runs else None
            bf16 = statistics.median(bf16_runs)
            target = ">= 1.6" if batch == 128 else "-"
            share = (FLOPS_PER_IMAGE[model] * ours / 1e9 / max(ceilings)) if ceilings else None
            print(f"{model:5s} {batch:5d} {ours:16.0f} {plain:16.0f} {theirs or float('nan'):14.0f} "
                  f"{(ours / theirs) if theirs else float('nan'):7.2f} {target:>7s} {bf16:11.0f} "
                  f"{bf16 / ours:9.2f} {share * 100 if share else float('nan'):7.0f}%")
    if [m for m in ("cnn", "mlp") if m in only]:
        print(f"bf16: {bf16_note}; target bf16/fp32 >= 1.6 for the CNN")
        if ceilings:
            print(f"of sgemm: FLOPs per image (matmuls and convolutions: mlp "
                  f"{FLOPS_PER_IMAGE['mlp'] / 1e6:.2f} M, cnn {FLOPS_PER_IMAGE['cnn'] / 1e6:.1f} M) "
                  f"x img/s / the best dnnl_sgemm n=1024 rate of the run, "
                  f"{max(ceilings):.0f} GFLOP/s ({THREADS} threads; rounds "
                  f"{', '.join(f'{c:.0f}' for c in ceilings)})")
    if "resnet50" in only:
        resnet_table(binary, rounds, resnet_steps, infer_runs, have_torch, env,
                     "--bf16-resnet" in sys.argv or native_bf16())


def resnet_table(binary, rounds, steps, runs, have_torch, env, bf16):
    py_env = dict(os.environ)
    py_env["PYTHONPATH"] = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(binary))),
                                        "python")

    def worker(*args, environ):
        out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                             env=environ, check=True).stdout
        return float(out.strip().splitlines()[-1])

    precisions = ["fp32", "bf16"] if bf16 else ["fp32"]
    results = {(p, k): [] for p in precisions for k in (
        "train", "infer", "frozen", "torch_train", "torch_infer", "torch_frozen")}
    for _ in range(rounds):
        for p in precisions:
            results[(p, "train")].append(shardflow_resnet_train(binary, steps, p))
            results[(p, "infer")].append(
                worker("--shardflow-infer-worker", str(runs), p, "variables", environ=py_env))
            results[(p, "frozen")].append(
                worker("--shardflow-infer-worker", str(runs), p, "frozen", environ=py_env))
            if have_torch:
                results[(p, "torch_train")].append(
                    worker("--torch-resnet-worker", "train", str(steps), p, environ=env))
                results[(p, "torch_infer")].append(
                    worker("--torch-resnet-worker", "infer", str(runs), p, environ=env))
                results[(p, "torch_frozen")].append(
                    worker("--torch-resnet-worker", "infer-frozen", str(runs), p, environ=env))

    def med(p, k):
        values = results[(p, k)]
        return statistics.median(values) if values else float("nan")

    print(f"\nResNet-50, {THREADS} threads; training: synthetic 224x224x3, batch {RESNET_BATCH}, "
          f"SGD momentum 0.9, median step of {steps} after 2 warm-up; inference: batch 1, "
          f"median of {runs} runs after 3 warm-up; median of {rounds} alternating rounds")
    if not bf16:
        print("bf16 rows skipped: no native bfloat16 on this processor (--bf16-resnet forces them)")
    print(f"{'':22s} {'shardflow':>10s} {'torchvision':>12s} {'ratio':>7s} {'target':>7s}")
    for p in precisions:
        ours, theirs = med(p, "train"), med(p, "torch_train")
        print(f"{'train ' + p + ' (img/s)':22s} {ours:10.2f} {theirs:12.2f} {ours / theirs:7.2f} "
              f"{'>= 1.3':>7s}")
        ours, theirs = med(p, "infer"), med(p, "torch_infer")
        print(f"{'infer b1 ' + p + ' (ms)':22s} {ours:10.1f} {theirs:12.1f} {theirs / ours:7.2f} "
              f"{'>= 1.5':>7s}")
        ours, theirs = med(p, "frozen"), med(p, "torch_frozen")
        print(f"{'  frozen (ms)':22s} {ours:10.1f} {theirs:12.1f} {theirs / ours:7.2f} "
              f"{'>= 1.5':>7s}")
    print("frozen: shardflow after sf.graph_util.convert_variables_to_constants; PyTorch "
          "torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(net)))")


if __name__ == "__main__":
    main()
