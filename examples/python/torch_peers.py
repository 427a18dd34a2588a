#!/usr/bin/python3
"""The TF1 example programs' PyTorch equivalents, for side-by-side comparisons: the same model,
initialisation, optimizer, learning-rate schedule, batch size and batches (the same numpy
seeds), in Debian's python3-torch.

    /usr/bin/python3 examples/python/torch_peers.py deep_mnist --steps 300
    /usr/bin/python3 examples/python/torch_peers.py softmax_regression --steps 300
    /usr/bin/python3 examples/python/torch_peers.py scoped_mlp --steps 600
    /usr/bin/python3 examples/python/torch_peers.py char_lstm --steps 300

Each prints the line its shardflow counterpart prints last ("test accuracy X" or "final loss X").
Debian's PyTorch links the reference BLAS; put Debian's OpenBLAS first for speed:
LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp (tests/python/test_tf1_vs_torch.py
does).
"""
import argparse
import gzip
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
DATA = "/usr/share/datasets/fashion-mnist"


def load(kind):
    with gzip.open("%s/%s-images-idx3-ubyte.gz" % (DATA, kind)) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32)
    with gzip.open("%s/%s-labels-idx1-ubyte.gz" % (DATA, kind)) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return torch.from_numpy(x / 255.0), torch.from_numpy(y)


def accuracy(net, x, y):
    net.eval()
    with torch.no_grad():
        return (net(x).argmax(1) == y).float().mean().item()


def truncated(layer, stddev, bias):
    nn.init.trunc_normal_(layer.weight, std=stddev, a=-2 * stddev, b=2 * stddev)
    nn.init.constant_(layer.bias, bias)
    return layer


def deep_mnist(steps):
    """tf1_deep_mnist.py: two 5x5 conv + 2x2 max-pool blocks, fc 1024 with dropout 0.5, Adam
    1e-4, batch 50, truncated-normal(0.1) weights and 0.1 biases."""
    train_x, train_y = load("train")
    test_x, test_y = load("t10k")
    net = nn.Sequential(
        nn.Unflatten(1, (1, 28, 28)),
        truncated(nn.Conv2d(1, 32, 5, padding=2), 0.1, 0.1), nn.ReLU(), nn.MaxPool2d(2),
        truncated(nn.Conv2d(32, 64, 5, padding=2), 0.1, 0.1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), truncated(nn.Linear(7 * 7 * 64, 1024), 0.1, 0.1), nn.ReLU(),
        nn.Dropout(0.5), truncated(nn.Linear(1024, 10), 0.1, 0.1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        idx = torch.from_numpy(rng.integers(0, len(train_x), 50))
        net.train()
        loss = nn.functional.cross_entropy(net(train_x[idx]), train_y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("test accuracy %g" % accuracy(net, test_x, test_y))


def softmax_regression(steps):
    """tf1_softmax_regression.py: zero-initialised 784x10 softmax, SGD 0.5, batch 100."""
    train_x, train_y = load("train")
    test_x, test_y = load("t10k")
    net = nn.Linear(784, 10)
    nn.init.zeros_(net.weight)
    nn.init.zeros_(net.bias)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        idx = torch.from_numpy(rng.integers(0, len(train_x), 100))
        loss = nn.functional.cross_entropy(net(train_x[idx]), train_y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("test accuracy %g" % accuracy(net, test_x, test_y))


def scoped_mlp(steps, batch_size=64):
    """tf1_scoped_mlp.py: 784-256-128-10, truncated-normal(0.05) weights, momentum 0.9 at 0.1
    decayed by 0.9 every 100 steps (staircase), saved at half-time and restored."""
    import tempfile
    train_x, train_y = load("train")
    test_x, test_y = load("t10k")

    def make():
        net = nn.Sequential(truncated(nn.Linear(784, 256), 0.05, 0.0), nn.ReLU(),
                            truncated(nn.Linear(256, 128), 0.05, 0.0), nn.ReLU(),
                            truncated(nn.Linear(128, 10), 0.05, 0.0))
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.9)
        return net, opt, sched

    def train(net, opt, sched, rng, n):
        for _ in range(n):
            idx = torch.from_numpy(rng.integers(0, len(train_x), batch_size))
            loss = nn.functional.cross_entropy(net(train_x[idx]), train_y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()

    rng = np.random.default_rng(0)
    first = steps // 2
    net, opt, sched = make()
    train(net, opt, sched, rng, first)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.pt")
        torch.save({"net": net.state_dict(), "opt": opt.state_dict(),
                    "sched": sched.state_dict()}, path)
        net, opt, sched = make()
        state = torch.load(path)
    net.load_state_dict(state["net"])
    opt.load_state_dict(state["opt"])
    sched.load_state_dict(state["sched"])
    train(net, opt, sched, rng, steps - first)
    print("test accuracy %g" % accuracy(net, test_x, test_y))


def char_lstm(steps, text="/usr/share/common-licenses/GPL-3", batch_size=32, seq_len=40,
              hidden=128, embed=32, lr=0.01):
    """tf1_char_lstm.py: embedding (uniform +-0.1), one LSTM layer (forget-gate bias 1, as TF1's
    BasicLSTMCell adds), a softmax, Adam 0.01, gradients clipped to global norm 5; the same
    batches."""
    from tf1_char_lstm import batches, load_text
    data, chars = load_text(text)
    vocab = len(chars)
    torch.manual_seed(0)
    emb = nn.Embedding(vocab, embed)
    nn.init.uniform_(emb.weight, -0.1, 0.1)
    lstm = nn.LSTM(embed, hidden, batch_first=True)
    with torch.no_grad():                      # TF1's forget_bias=1.0 (PyTorch gates: i, f, g, o)
        lstm.bias_ih_l0.zero_()
        lstm.bias_hh_l0.zero_()
        lstm.bias_ih_l0[hidden:2 * hidden] = 1.0
    out = nn.Linear(hidden, vocab)
    params = list(emb.parameters()) + list(lstm.parameters()) + list(out.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    losses = []
    for bx, by in batches(data, batch_size, seq_len, steps):
        h, _ = lstm(emb(torch.from_numpy(bx).long()))
        loss = nn.functional.cross_entropy(out(h.reshape(-1, hidden)),
                                           torch.from_numpy(by).long().reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(params, 5.0)
        opt.step()
        losses.append(loss.item())
    print("final loss %.4f (mean of the last 20 steps)" % np.mean(losses[-20:]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("program", choices=["deep_mnist", "softmax_regression", "scoped_mlp",
                                       "char_lstm"])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    globals()[args.program](args.steps)


if __name__ == "__main__":
    main()
