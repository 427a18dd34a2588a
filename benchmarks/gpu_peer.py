#!/usr/bin/env python3
"""PyTorch on the same GPU work as build/bin/gpu_benchmark and `shardflow train --model cnn`.

Runs on the GPU machine with its python3 (PyTorch with CUDA) and prints three tables:

(a) MatMul n x n x n, n = 4096 and 8192: fp32 (TF32 off), TF32
    (torch.backends.cuda.matmul.allow_tf32 on) and bf16 (bf16 inputs and output), timed with
    CUDA events after 3 warm-up products over enough products for about 0.5 s. TFLOP/s =
    2 n^3 per product. A 1024^3 product against float64
    shows whether TF32 was really on or off.
(b) The element-wise chain of gpu_benchmark: 200 ops (x * 1.0001, + 0.1 alternating) on a [256]
    float tensor, eager: microseconds per op, with the result copied to the host every step and
    pipelined (one synchronize at the end).
(c) CNN training images/s, batch 128 and 512: the CNN of `shardflow train --model cnn`
    (tools/shardflow/models.cc: conv 5x5 1->32 SAME + bias + relu, max pool 2x2; conv 5x5 32->64
    SAME + bias + relu, max pool 2x2; dense 3136->1024 + relu; dense 1024->10; softmax cross
    entropy; Adam lr 1e-3) on one fixed batch of random 28x28x1 images and labels of 10 classes,
    as `shardflow train --synthetic` does. Rows: "host feed" copies the batch from host memory
    and reads the loss every step (what shardflow's synthetic run does), images/s from the median
    step after 2 warm-up steps; "on GPU" keeps the batch on the GPU and synchronizes once at the
    end (PyTorch's best case); both in strict fp32 (no TF32 anywhere, as shardflow's default), and
    "on GPU" once more with PyTorch's defaults (cuDNN TF32 on) and cudnn.benchmark.

usage: python3 gpu_peer.py [--quick] [--cnn-only] [--profile-cnn BATCH]
  --quick: small sizes, few steps; --cnn-only: only (c); --profile-cnn: PyTorch's per-kernel
  GPU times for the CNN's step (torch.profiler), nothing else
"""
import datetime
import statistics
import sys
import time
import warnings


def set_tf32(torch, matmul, cudnn=None):
    """TF32 for matrix products (the legacy switch the benchmark names; the precision API if it
    is gone) and for cuDNN convolutions (the same as matmul unless given)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.backends.cuda.matmul.allow_tf32 = matmul
        except Exception:  # a PyTorch without the legacy switch
            torch.set_float32_matmul_precision("high" if matmul else "highest")
        torch.backends.cudnn.allow_tf32 = matmul if cudnn is None else cudnn


def tf32_check(torch):
    """Relative error of a 1024^3 float32 product against float64 (~1e-6 strict, ~1e-3 TF32)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(1024, 1024, device="cuda", generator=g)
    b = torch.randn(1024, 1024, device="cuda", generator=g)
    exact = a.double() @ b.double()
    return ((a @ b).double() - exact).abs().max().item() / exact.abs().max().item()


def time_products(torch, a, b, count):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(count):
        torch.matmul(a, b)
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / 1000.0


def matmul_table(torch, sizes):
    print("(a) MatMul n x n x n (torch.matmul)")
    print("%-6s %6s %8s %12s  %s" % ("prec", "n", "products", "TFLOP/s", "note"))
    for prec in ("fp32", "tf32", "bf16"):
        set_tf32(torch, prec == "tf32")
        note = ""
        if prec != "bf16":
            err = tf32_check(torch)
            note = "relative error vs float64 %.1e (%s)" % (
                err, "TF32" if err > 1e-4 else "strict fp32")
        dtype = torch.bfloat16 if prec == "bf16" else torch.float32
        for n in sizes:
            a = torch.full((n, n), 0.01, device="cuda", dtype=dtype)
            b = torch.full((n, n), 0.01, device="cuda", dtype=dtype)
            time_products(torch, a, b, 3)
            one = time_products(torch, a, b, 1)
            count = max(5, min(500, int(0.5 / max(one, 1e-6))))
            secs = time_products(torch, a, b, count)
            tflops = 2.0 * n ** 3 * count / secs / 1e12
            print("%-6s %6d %8d %12.1f  %s" % (prec, n, count, tflops, note))
            sys.stdout.flush()
            del a, b
    set_tf32(torch, False)


def chain_table(torch, steps, ops=200):
    print("\n(b) eager chain of %d element-wise ops on a [256] float tensor, %d steps"
          % (ops, steps))
    print("%-8s %26s %26s" % ("device", "us/op (to host every step)", "us/op (pipelined, 1 sync)"))

    def step(x):
        for i in range(ops):
            x = x * 1.0001 if i % 2 == 0 else x + 0.1
        return x

    x0 = torch.ones(256, device="cuda")
    for _ in range(10):
        step(x0).cpu()
    t = time.perf_counter()
    for _ in range(steps):
        step(x0).cpu()
    each = (time.perf_counter() - t) / steps / ops * 1e6
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step(x0)
    torch.cuda.synchronize()
    pipelined = (time.perf_counter() - t) / steps / ops * 1e6
    print("%-8s %26.2f %26.2f" % ("GPU:0", each, pipelined))
    sys.stdout.flush()


def cnn(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Linear(1024, 10))


def cnn_rate(torch, batch, steps, host_feed, cudnn_tf32, benchmark, channels_last=False):
    """images/s: host_feed -> median step (copy in, loss.item()) after 2 warm-up steps; else the
    batch stays on the GPU and one synchronize ends the timed steps. Matrix products in strict
    fp32 (PyTorch's default); convolutions with TF32 if cudnn_tf32 (PyTorch's default).
    channels_last: activations and filters in NHWC, as shardflow keeps them (cuDNN's NHWC
    kernels instead of its NCHW ones)."""
    set_tf32(torch, False, cudnn_tf32)
    torch.backends.cudnn.benchmark = benchmark
    torch.manual_seed(1)
    net = cnn(torch).cuda()
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    if channels_last:
        net = net.to(memory_format=fmt)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(batch, 1, 28, 28)
    labels = torch.randint(0, 10, (batch,))
    if not host_feed:  # else pageable host memory, copied every step as shardflow feeds it
        images, labels = images.cuda(), labels.cuda()

    def train_step():
        x, y = (images.cuda(), labels.cuda()) if host_feed else (images, labels)
        if channels_last:
            x = x.contiguous(memory_format=fmt)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(5 if benchmark else 2):
        train_step().item()
    torch.cuda.synchronize()
    if host_feed:
        times = []
        for _ in range(steps):
            t = time.perf_counter()
            train_step().item()
            times.append(time.perf_counter() - t)
        rate = batch / statistics.median(times)
    else:
        t = time.perf_counter()
        for _ in range(steps):
            loss = train_step()
        loss.item()
        rate = batch * steps / (time.perf_counter() - t)
    set_tf32(torch, False)
    torch.backends.cudnn.benchmark = False
    return rate


def cnn_table(torch, batches, steps):
    print("\n(c) CNN training (shardflow's --model cnn, Adam lr 1e-3), synthetic 28x28x1, %d steps"
          % steps)
    rows = [("fp32, host feed + loss every step", True, False, False, False),
            ("fp32, host feed, channels_last (NHWC), cudnn.benchmark", True, False, True, True),
            ("fp32, host feed, cudnn.benchmark", True, False, True, False),
            ("fp32, batch on GPU, 1 sync", False, False, False, False),
            ("torch defaults (cuDNN TF32), cudnn.benchmark, on GPU", False, True, True, False)]
    print("%-54s %s" % ("PyTorch", " ".join("%14s" % ("batch %d" % b) for b in batches)))
    for name, host_feed, tf32, benchmark, nhwc in rows:
        rates = [cnn_rate(torch, b, steps, host_feed, tf32, benchmark, nhwc) for b in batches]
        print("%-54s %s" % (name, " ".join("%10.0f im/s" % r for r in rates)))
        sys.stdout.flush()


def cnn_profile(torch, batch, steps=10):
    """PyTorch's own per-kernel GPU times for the CNN's training step (torch.profiler, strict
    fp32, host feed), to set beside `shardflow train --synthetic --profile-step N`."""
    from torch.profiler import ProfilerActivity, profile
    set_tf32(torch, False, False)
    torch.manual_seed(1)
    net = cnn(torch).cuda()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    images, labels = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))

    def train_step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(images.cuda()), labels.cuda())
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(3):
        train_step()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            train_step()
    print("\n(d) PyTorch CNN training step at batch %d, GPU time per kernel over %d steps" %
          (batch, steps))
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=30,
                                    max_name_column_width=70))


def main():
    quick = "--quick" in sys.argv
    if "--profile-cnn" in sys.argv:
        import torch
        cnn_profile(torch, int(sys.argv[sys.argv.index("--profile-cnn") + 1]))
        return 0
    try:
        import torch
    except ImportError as e:
        print("gpu_peer.py: no PyTorch (%s); nothing to measure" % e)
        return 0
    if not torch.cuda.is_available():
        print("gpu_peer.py: PyTorch %s sees no CUDA GPU; nothing to measure" % torch.__version__)
        return 0
    props = torch.cuda.get_device_properties(0)
    now = datetime.datetime.now(datetime.timezone.utc)
    print("PyTorch peer, %s" % now.strftime("%Y-%m-%d %H:%M:%S UTC"))
    print("GPU: %s (sm_%d%d, %.1f GiB), PyTorch %s, CUDA %s, cuDNN %s\n" % (
        props.name, props.major, props.minor, props.total_memory / 2 ** 30, torch.__version__,
        torch.version.cuda, torch.backends.cudnn.version()))
    if "--cnn-only" not in sys.argv:
        matmul_table(torch, [1024, 2048] if quick else [4096, 8192])
        chain_table(torch, 50 if quick else 300)
    cnn_table(torch, [128, 512], 10 if quick else 40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
