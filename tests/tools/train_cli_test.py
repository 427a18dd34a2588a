#!/usr/bin/python3
"""`shardflow train` behaviour end to end: determinism, resume, and clear errors for bad input.

usage: train_cli_test.py path/to/shardflow
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

BINARY = sys.argv[1]
results = []


def run(*flags):
    return subprocess.run([BINARY, "train", "--progress=false", *flags], capture_output=True, text=True)


def check(name, condition, detail=""):
    results.append(condition)
    print(f"{'ok  ' if condition else 'FAIL'} {name}{'' if condition else ': ' + detail}")


def losses(tmp, tag, *flags):
    trace = os.path.join(tmp, tag)
    r = run("--model", "mlp", "--max-steps", "40", "--checkpoint-dir", trace, "--trace-dir", trace, *flags)
    assert r.returncode == 0, r.stderr
    return np.load(os.path.join(trace, "losses.npy"))


with tempfile.TemporaryDirectory() as tmp:
    a = losses(tmp, "a", "--seed", "5", "--threads", "2")
    b = losses(tmp, "b", "--seed", "5", "--threads", "2")
    c = losses(tmp, "c", "--seed", "6", "--threads", "2")
    check("same seed and threads give the same loss curve", np.array_equal(a, b), f"{a[:3]} vs {b[:3]}")
    check("another seed gives another curve", not np.array_equal(a, c))

    # Resume: 1 epoch, then --resume --epochs 2 continues at epoch 2 and ends with a checkpoint.
    ckpt = os.path.join(tmp, "resume")
    first = run("--model", "mlp", "--epochs", "1", "--checkpoint-dir", ckpt)
    second = run("--model", "mlp", "--epochs", "2", "--resume", "--checkpoint-dir", ckpt)
    check("resume continues from the saved epoch",
          first.returncode == 0 and second.returncode == 0 and "1 epoch(s), 937 steps done" in second.stdout,
          second.stdout + second.stderr)
    check("resume trains only the remaining epoch", "trained 937 steps" in second.stdout, second.stdout)

    # A checkpoint from another model is refused, naming the problem.
    other = run("--model", "cnn", "--resume", "--max-steps", "1", "--checkpoint-dir", ckpt)
    check("checkpoint from another model is a clear error",
          other.returncode == 1 and "written for --model mlp" in other.stderr, other.stderr)

    # A corrupt checkpoint is refused, never half-loaded.
    path = os.path.join(ckpt, "model.ckpt")
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(path, "wb").write(bytes(data))
    corrupt = run("--model", "mlp", "--resume", "--checkpoint-dir", ckpt)
    check("corrupt checkpoint is a clear error naming the variable",
          corrupt.returncode == 1 and "checksum" in corrupt.stderr and "variable" in corrupt.stderr,
          corrupt.stderr)

    # A diverging run stops at the step and names the first op with a non-finite value.
    nan = run("--model", "mlp", "--optimizer", "sgd", "--lr", "1e9", "--lr-decay", "none",
              "--max-steps", "50", "--checkpoint-dir", os.path.join(tmp, "nan"))
    check("NaN/Inf loss stops with the step and the first bad op",
          nan.returncode == 1 and "training stopped at step" in nan.stderr and "node '" in nan.stderr,
          nan.stderr)

    missing = run("--data-dir", os.path.join(tmp, "nowhere"), "--checkpoint-dir", os.path.join(tmp, "m"))
    check("missing data set names the package", missing.returncode == 1 and "dataset-fashion-mnist" in missing.stderr,
          missing.stderr)

unknown = run("--epoch", "3")
check("unknown flag is rejected with a suggestion", unknown.returncode == 2 and "--epochs" in unknown.stderr,
      unknown.stderr)
bad_model = run("--model", "resnet", "--max-steps", "1")
check("unknown model lists the known ones", bad_model.returncode == 1 and "cnn or mlp" in bad_model.stderr,
      bad_model.stderr)
help_text = run("--help")
check("--help explains every flag", help_text.returncode == 0 and all(
    f"--{f}" in help_text.stdout for f in ["model", "batch-size", "epochs", "optimizer", "lr", "threads",
                                            "checkpoint-dir", "resume", "seed"]), help_text.stdout)

# shardflow profile: a step split over 2 CPU devices gives a valid trace with a row per device and
# a Send->Recv arrow per transfer, and a placement report listing both links.
with tempfile.TemporaryDirectory() as tmp:
    prof = subprocess.run([BINARY, "profile", "--model", "mlp", "--steps", "2", "--out", tmp],
                          capture_output=True, text=True)
    ok = prof.returncode == 0
    if ok:
        import json
        events = json.load(open(os.path.join(tmp, "trace.json")))["traceEvents"]
        processes = {e["pid"] for e in events if e.get("ph") == "X"}
        starts = sorted(e["id"] for e in events if e.get("ph") == "s")
        ends = sorted(e["id"] for e in events if e.get("ph") == "f")
        report = open(os.path.join(tmp, "placement.txt")).read()
        ok = len(processes) == 2 and starts and starts == ends and report.count(" -> ") == 2
    check("profile writes a two-device trace with matched Send->Recv flows and a report", ok,
          prof.stdout + prof.stderr)

# shardflow place: the cost policy splits the towers over two devices and simulates the step;
# --explain states the constraints and the reason; errors name the way out.
def place(*flags):
    return subprocess.run([BINARY, "place", *flags], capture_output=True, text=True)


towers = place("--model", "towers", "--devices", "2", "--simulate")
lines = [l for l in towers.stdout.splitlines() if l.strip().startswith("/job:") and "nodes" in l]
check("place splits the two towers over both devices and simulates the step",
      towers.returncode == 0 and len(lines) == 2 and all(int(l.split()[1]) > 0 for l in lines)
      and "simulated step time" in towers.stdout and "util" in towers.stdout,
      towers.stdout + towers.stderr)
explain = place("--model", "cnn", "--explain", "dense1/MatMul")
check("place --explain names the group, kernels, feasible devices and the reason",
      explain.returncode == 0 and all(k in explain.stdout for k in [
          "colocation group", "kernels for:", "feasible devices:", "placed on:", "why (cost)"]),
      explain.stdout + explain.stderr)
logged = place("--model", "mlp", "--log-placement", "--policy", "constraints")
check("place --log-placement prints one line per node",
      logged.returncode == 0 and logged.stderr.count(" -> /job:localhost") > 50, logged.stderr[-500:])
with tempfile.TemporaryDirectory() as tmp:
    cluster = os.path.join(tmp, "cluster.json")
    with open(cluster, "w") as f:
        f.write('{"devices": [{"name": "/job:w/replica:0/task:0/device:CPU:0", "gflops": 200},'
                ' {"name": "/job:w/replica:0/task:1/device:CPU:0", "gflops": 50}],'
                ' "links": [{"src": "/job:w/replica:0/task:0/device:CPU:0",'
                ' "dst": "/job:w/replica:0/task:1/device:CPU:0", "gbps": 1, "latency_us": 100}]}')
    described = place("--model", "mlp", "--cluster", cluster, "--simulate")
    check("place --cluster FILE uses the described devices",
          described.returncode == 0 and "/job:w/replica:0/task:1/device:CPU:0" in described.stdout,
          described.stdout + described.stderr)
    with open(cluster, "w") as f:
        f.write('{"devices": [')
    broken = place("--model", "mlp", "--cluster", cluster)
    check("a malformed cluster file is an error naming the file",
          broken.returncode == 1 and cluster in broken.stderr, broken.stderr)
missing = place("--model", "mlp", "--explain", "no/such/node")
check("--explain of an unknown node says so", missing.returncode == 1 and "no node named" in missing.stderr,
      missing.stderr)

failed = results.count(False)
print(f"{len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
