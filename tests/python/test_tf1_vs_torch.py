"""TF1 programs, unchanged but for `import shardflow as tf`, beside the same programs in PyTorch
(examples/python/torch_peers.py: same model, initialisation, optimizer, schedule and batches).

Each test prints a side-by-side line and asserts that shardflow's result is within a margin of
PyTorch's (both train a few hundred steps; runs differ in their random initial weights and
dropout masks, so the margin is a few points of accuracy or a few hundredths of a nat).
ctest: python/tf1_vs_torch; skips without python3-torch or the dataset."""

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

EXAMPLES = os.path.join(REPO_ROOT, "examples", "python")
OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
HAVE_DATA = os.path.exists("/usr/share/datasets/fashion-mnist")

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

pytestmark = pytest.mark.skipif(not HAVE_TORCH, reason="apt-get install python3-torch")


def run(script, *args):
    import shardflow
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(shardflow.__file__))
    if script == "torch_peers.py" and os.path.isdir(OPENBLAS):
        env["LD_LIBRARY_PATH"] = OPENBLAS + ":" + env.get("LD_LIBRARY_PATH", "")
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *args], env=env,
                          capture_output=True, text=True, timeout=600, check=True).stdout


def figure(out, label):
    m = re.search(label + r" ([0-9.]+)", out)
    assert m, out
    return float(m.group(1))


def side_by_side(program, label, sf_value, torch_value):
    print("\n%-20s %-14s shardflow %.4f   PyTorch %.4f" % (program, label, sf_value,
                                                         torch_value))


@pytest.mark.skipif(not HAVE_DATA, reason="apt-get install dataset-fashion-mnist")
def test_deep_mnist_matches_pytorch():
    steps = "300"
    ours = figure(run("tf1_deep_mnist.py", "--steps", steps), "test accuracy")
    theirs = figure(run("torch_peers.py", "deep_mnist", "--steps", steps), "test accuracy")
    side_by_side("deep MNIST", "test accuracy", ours, theirs)
    assert ours > 0.7 and ours >= theirs - 0.04


@pytest.mark.skipif(not HAVE_DATA, reason="apt-get install dataset-fashion-mnist")
def test_softmax_regression_matches_pytorch():
    steps = "300"
    ours = figure(run("tf1_softmax_regression.py", "--steps", steps), "test accuracy")
    theirs = figure(run("torch_peers.py", "softmax_regression", "--steps", steps),
                    "test accuracy")
    side_by_side("softmax regression", "test accuracy", ours, theirs)
    assert ours > 0.7 and ours >= theirs - 0.03


@pytest.mark.skipif(not HAVE_DATA, reason="apt-get install dataset-fashion-mnist")
def test_scoped_mlp_with_saver_and_decay_matches_pytorch(tmp_path):
    out = run("tf1_scoped_mlp.py", "--steps", "600", "--checkpoint-dir", str(tmp_path))
    assert "restored at step 300, learning rate 0.0729" in out, out   # 0.1 * 0.9^3
    assert "global step 600" in out
    assert (tmp_path / "checkpoint").exists()
    ours = figure(out, "test accuracy")
    theirs = figure(run("torch_peers.py", "scoped_mlp", "--steps", "600"), "test accuracy")
    side_by_side("scoped MLP + Saver", "test accuracy", ours, theirs)
    assert ours > 0.75 and ours >= theirs - 0.03


def test_char_lstm_matches_pytorch():
    steps = "200"
    out = run("tf1_char_lstm.py", "--steps", steps, "--sample", "80")
    ours = figure(out, "final loss")
    sample = out.split("sample:\n", 1)[1]
    assert len(sample.rstrip("\n")) >= 81
    theirs = figure(run("torch_peers.py", "char_lstm", "--steps", steps), "final loss")
    side_by_side("char LSTM", "loss (nats/char)", ours, theirs)
    # A uniform guess over ~80 characters costs ln(80) = 4.4 nats; both learn far below it.
    assert ours < 2.6 and ours <= theirs + 0.15
