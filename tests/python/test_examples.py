"""Runs each example under examples/python the way its README says (with small step counts)."""

import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

EXAMPLES = os.path.join(REPO_ROOT, "examples", "python")
HAVE_DATA = os.path.exists("/usr/share/datasets/fashion-mnist")


def run_example(name, *args):
    import shardflow
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(shardflow.__file__))
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], env=env,
                          capture_output=True, text=True, timeout=300, check=True).stdout


def test_basic_graph():
    out = run_example("basic_graph.py")
    assert "y = [0. 3. 4.]" in out


@pytest.mark.skipif(not HAVE_DATA, reason="apt-get install dataset-fashion-mnist")
def test_train_mlp_runs_a_few_steps_on_two_devices():
    out = run_example("train_mlp.py", "--max-steps", "30", "--epochs", "1",
                      "--devices", "/device:CPU:0,/device:CPU:1")
    assert "step 30/30" in out and "test accuracy:" in out
    accuracy = float(out.split("test accuracy:")[1].split("%")[0])
    assert accuracy > 50  # 30 Adam steps already learn something


def test_profile_two_devices(tmp_path):
    out = run_example("profile_two_devices.py", "--out", str(tmp_path), "--batch-size", "16")
    assert (tmp_path / "step.json").stat().st_size > 0
    assert (tmp_path / "placed.dot").read_text().startswith("digraph")
    assert "transfers between devices" in out and " 0 transfers" not in out

@pytest.mark.skipif(not HAVE_DATA, reason="apt-get install dataset-fashion-mnist")
def test_tf1_queue_cnn_trains_from_fixed_length_records(tmp_path):
    # string_input_producer -> FixedLengthRecordReader -> decode_raw -> shuffle_batch, run by the
    # queue runners a MonitoredTrainingSession starts; then evaluation from its checkpoint.
    out = run_example("tf1_queue_cnn.py", "--steps", "120", "--workdir", str(tmp_path))
    assert "trained 120 steps" in out, out
    accuracy = float(out.split("test accuracy")[1].split()[0])
    assert accuracy > 0.6, out     # ~0.80 after 200 steps (2026-11-27)


# The TF1 tutorials run beside PyTorch in test_tf1_vs_torch.py (ctest: python/tf1_vs_torch).


@pytest.mark.skipif(not HAVE_DATA, reason="apt-get install dataset-fashion-mnist")
def test_between_graph_allreduce_two_workers_learn_what_one_process_learns():
    """Two worker processes x 32 examples, gradients all-reduced (Horovod style), see the same
    global batches as one process x 64: with SGD, the same test accuracy."""
    import shardflow
    from cluster_util import free_port
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(shardflow.__file__))
    workers = ",".join("127.0.0.1:%d" % free_port() for _ in range(2))
    script = os.path.join(EXAMPLES, "between_graph_allreduce.py")
    procs = [subprocess.Popen([sys.executable, script, "--workers", workers, "--task", str(t),
                               "--steps", "300", "--batch-size", "32"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for t in (1, 0)]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, out + err
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    alone = run_example("between_graph_allreduce.py", "--steps", "300", "--batch-size", "64")
    accuracy = [float(o.split("test accuracy:")[1].split("%")[0]) for o in (outs[1], alone)]
    assert accuracy[1] > 70, alone
    assert abs(accuracy[0] - accuracy[1]) < 0.5, (outs, alone)
