"""Trains the Fashion-MNIST MLP from Python: at least 86% test accuracy after 2 epochs
(the C++ `shardflow train --model mlp` recipe: 784-512-512-10, Adam 1e-3, cosine decay,
batch 64). Its own ctest entry, python/train_mlp_accuracy."""

import os
import sys

import pytest

from conftest import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "examples", "python"))


@pytest.mark.skipif(not os.path.exists("/usr/share/datasets/fashion-mnist"),
                    reason="apt-get install dataset-fashion-mnist")
def test_mlp_reaches_86_percent_in_two_epochs():
    import train_mlp
    accuracy = train_mlp.train(epochs=2, batch_size=64, lr=1e-3)
    assert accuracy >= 0.86, accuracy
