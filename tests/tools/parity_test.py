#!/usr/bin/python3
"""Parity: 100 training steps of the MLP in shardflow against the same steps in NumPy (float64).

Runs `shardflow train` with --trace-dir, which writes the initial weights, every batch and every
step's loss as .npy files; replays the same model, weights, optimizer, learning rate and batch
order in NumPy and checks that the losses of the first 50 steps agree to 1e-4 relative and the
loss after 100 steps to 1e-3 (SGD) or 5e-3 (Adam, whose float32 rounding grows; see main).

usage: parity_test.py path/to/shardflow
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIPPED: NumPy is not installed (apt-get install python3-numpy)")
    sys.exit(77)

STEPS = 100


def run_shardflow(binary, trace_dir, optimizer, lr):
    cmd = [binary, "train", "--model", "mlp", "--optimizer", optimizer, "--lr", str(lr),
           "--batch-size", "64", "--max-steps", str(STEPS), "--lr-decay", "none", "--seed", "3", "--threads", "2",
           "--trace-dir", trace_dir, "--checkpoint-dir", os.path.join(trace_dir, "ckpt"),
           "--progress=false"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    load = lambda name: np.load(os.path.join(trace_dir, name + ".npy"))
    layers = [(load("init_dense1__weights"), load("init_dense1__bias")),
              (load("init_dense2__weights"), load("init_dense2__bias")),
              (load("init_logits__weights"), load("init_logits__bias"))]
    return layers, load("images"), load("labels"), load("losses")


PIXEL_MEAN, PIXEL_STDDEV = 0.2860, 0.3530  # the model standardises its input (models.cc)


def forward_backward(params, x, y):
    """Mean softmax cross-entropy of the 784-512-512-10 ReLU MLP and its gradients."""
    (w1, b1), (w2, b2), (w3, b3) = params
    x = (x - PIXEL_MEAN) * (1 / PIXEL_STDDEV)
    h1 = np.maximum(x @ w1 + b1, 0)
    h2 = np.maximum(h1 @ w2 + b2, 0)
    logits = h2 @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    n = x.shape[0]
    loss = -log_probs[np.arange(n), y].mean()
    d_logits = np.exp(log_probs)
    d_logits[np.arange(n), y] -= 1
    d_logits /= n
    d_h2 = (d_logits @ w3.T) * (h2 > 0)
    d_h1 = (d_h2 @ w2.T) * (h1 > 0)
    grads = [(x.T @ d_h1, d_h1.sum(0)), (h1.T @ d_h2, d_h2.sum(0)), (h2.T @ d_logits, d_logits.sum(0))]
    return loss, grads


def replay(layers, images, labels, optimizer, lr):
    params = [[w.astype(np.float64), b.astype(np.float64)] for w, b in layers]
    m = [[np.zeros_like(p) for p in layer] for layer in params]
    v = [[np.zeros_like(p) for p in layer] for layer in params]
    losses = []
    # TF1's Adam keeps beta1^t and beta2^t in float32 variables, multiplied once a step.
    powers = np.float32(0.9), np.float32(0.999)
    for step in range(STEPS):
        x = images[step * 64:(step + 1) * 64].astype(np.float64)
        y = labels[step * 64:(step + 1) * 64]
        loss, grads = forward_backward(params, x, y)
        losses.append(loss)
        for i, layer in enumerate(params):
            for j in range(2):
                g = grads[i][j]
                if optimizer == "sgd":
                    layer[j] -= lr * g
                else:  # adam, beta1 0.9, beta2 0.999, epsilon 1e-8
                    m[i][j] = 0.9 * m[i][j] + 0.1 * g
                    v[i][j] = 0.999 * v[i][j] + 0.001 * g * g
                    lr_t = lr * np.sqrt(1 - np.float64(powers[1])) / (1 - np.float64(powers[0]))
                    layer[j] -= lr_t * m[i][j] / (np.sqrt(v[i][j]) + 1e-8)
        powers = powers[0] * np.float32(0.9), powers[1] * np.float32(0.999)
    return np.array(losses)


def main():
    binary = sys.argv[1]
    failures = 0
    for optimizer, lr in (("sgd", 0.05), ("adam", 0.001)):
        with tempfile.TemporaryDirectory() as trace_dir:
            layers, images, labels, ours = run_shardflow(binary, trace_dir, optimizer, lr)
        assert images.shape == (STEPS * 64, 784) and ours.shape == (STEPS,), (images.shape, ours.shape)
        reference = replay(layers, images, labels, optimizer, lr)
        rel = abs(ours[-1] - reference[-1]) / abs(reference[-1])
        worst = np.max(np.abs(ours - reference) / np.abs(reference))
        # The first 50 steps agree to float32 rounding; later, Adam's division by sqrt(v)
        # amplifies the float32-against-float64 rounding of the replay (step 57 onwards here,
        # 1e-3 by step 100 on 2026-11-30), so its last step is held to 5e-3.
        early = np.max(np.abs(ours[:50] - reference[:50]) / np.abs(reference[:50]))
        ok = early < 1e-4 and rel < (1e-3 if optimizer == "sgd" else 5e-3)
        failures += not ok
        print(f"{optimizer:5s} lr {lr}: loss after {STEPS} steps shardflow {ours[-1]:.6f} "
              f"numpy {reference[-1]:.6f} relative difference {rel:.2e} (first 50 steps "
              f"{early:.2e}, worst step {worst:.2e}) {'OK' if ok else 'FAIL'}")
    print(f"{2 - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
