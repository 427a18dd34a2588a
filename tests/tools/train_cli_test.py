#!/usr/bin/python3
"""`shardflow train` behaviour end to end: determinism, checkpoints and resume (also after SIGKILL),
and clear errors for bad input.

usage: train_cli_test.py path/to/shardflow
"""
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import zlib

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


def index(ckpt_dir):
    """The checkpoint names the index lists, oldest first."""
    with open(os.path.join(ckpt_dir, "checkpoint")) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def corrupt(path):
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(path, "wb").write(bytes(data))


def read_checkpoint(path):
    """[(name, raw variable bytes without their crc)] of a runtime/checkpoint.h file, version 1."""
    data = open(path, "rb").read()
    assert data[:8] == b"SFCKPT01", path
    count = struct.unpack_from("<Q", data, 12)[0]
    pos, entries = 24, []
    for _ in range(count):
        start = pos
        (name_len,) = struct.unpack_from("<I", data, pos)
        name = data[pos + 4:pos + 4 + name_len].decode()
        pos += 4 + name_len + 4
        (rank,) = struct.unpack_from("<I", data, pos)
        pos += 4 + 8 * rank
        (size,) = struct.unpack_from("<Q", data, pos)
        pos += 8 + size
        entries.append((name, data[start:pos]))
        pos += 4
    return entries


def write_checkpoint(path, entries):
    header = b"SFCKPT01" + struct.pack("<IQ", 1, len(entries))
    out = header + struct.pack("<I", zlib.crc32(header))
    for _, raw in entries:
        out += raw + struct.pack("<I", zlib.crc32(raw))
    out += b"SFCKTAIL" + struct.pack("<I", zlib.crc32(out))
    open(path, "wb").write(out)


def train_until_killed(ckpt_dir, kill_after_step, *flags):
    """Trains on a pseudo-terminal (so the bar shows every step), SIGKILLs the process once the
    bar shows `kill_after_step`, and returns the last step the bar showed."""
    master, slave = pty.openpty()
    p = subprocess.Popen([BINARY, "train", "--checkpoint-dir", ckpt_dir, *flags],
                         stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)
    out, killed = b"", False
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            p.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the process is gone and its output drained
            break
        if not chunk:
            break
        out += chunk
        steps = [int(s) for s in re.findall(rb"step (\d+)/\d+", out)]
        if not killed and steps and steps[-1] >= kill_after_step:
            p.send_signal(signal.SIGKILL)
            killed = True
    p.wait()
    os.close(master)
    steps = [int(s) for s in re.findall(rb"step (\d+)/\d+", out)]
    return (steps[-1] if steps else -1), p.returncode


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

    check("epoch ends are checkpoints named by step, listed in the index",
          index(ckpt) == ["model.ckpt-937", "model.ckpt-1874"]
          and f"checkpoint {ckpt}/model.ckpt-1874" in second.stdout, f"{index(ckpt)} {second.stdout}")

    # A checkpoint from another model is refused, naming the problem.
    other = run("--model", "cnn", "--resume", "--max-steps", "1", "--checkpoint-dir", ckpt)
    check("checkpoint from another model is a clear error",
          other.returncode == 1 and "written for --model mlp" in other.stderr, other.stderr)

    # The single model.ckpt of earlier versions (no _meta/epoch_step, no _meta/batch_size) still
    # resumes, at the start of the epoch it recorded; the new series starts beside it.
    legacy = os.path.join(tmp, "legacy")
    os.makedirs(legacy)
    entries = [e for e in read_checkpoint(os.path.join(ckpt, "model.ckpt-937"))
               if e[0] not in ("_meta/epoch_step", "_meta/batch_size")]
    write_checkpoint(os.path.join(legacy, "model.ckpt"), entries)
    old = run("--model", "mlp", "--epochs", "2", "--resume", "--max-steps", "3", "--checkpoint-dir", legacy)
    check("a model.ckpt of earlier versions still resumes",
          old.returncode == 0 and f"resumed from {legacy}/model.ckpt: 1 epoch(s), 937 steps done\n" in old.stdout
          and index(legacy) == ["model.ckpt-940"] and os.path.exists(os.path.join(legacy, "model.ckpt")),
          old.stdout + old.stderr)

    # No readable checkpoint at all: refused, never half-loaded, naming each file and the way out.
    for name in index(ckpt):
        corrupt(os.path.join(ckpt, name))
    broken = run("--model", "mlp", "--resume", "--checkpoint-dir", ckpt)
    check("corrupt checkpoints are a clear error naming the variable and the way out",
          broken.returncode == 1 and "checksum" in broken.stderr and "variable" in broken.stderr
          and "model.ckpt-937" in broken.stderr and "model.ckpt-1874" in broken.stderr
          and "without --resume" in broken.stderr, broken.stderr)
    empty = run("--model", "mlp", "--resume", "--checkpoint-dir", os.path.join(tmp, "none"))
    check("--resume without a checkpoint says so", empty.returncode == 1 and "no checkpoint" in empty.stderr,
          empty.stderr)

    # Every N steps, keeping the last K; the final checkpoint is not written twice.
    series = os.path.join(tmp, "series")
    every = ("--model", "mlp", "--checkpoint-every-steps", "10", "--keep-checkpoints", "3",
             "--checkpoint-dir", series)
    r = run(*every, "--max-steps", "50")
    check("a checkpoint every N steps, only the last K kept",
          r.returncode == 0 and index(series) == ["model.ckpt-30", "model.ckpt-40", "model.ckpt-50"]
          and sorted(os.listdir(series)) == ["checkpoint", "model.ckpt-30", "model.ckpt-40", "model.ckpt-50"],
          f"{os.listdir(series)} {r.stderr}")

    # A damaged latest checkpoint: resume from the one before, with a warning naming the file;
    # the damaged one leaves the series at the next checkpoint.
    corrupt(os.path.join(series, "model.ckpt-50"))
    r = run(*every, "--resume", "--max-steps", "5")
    check("a corrupt latest checkpoint falls back to the previous one, with a warning",
          r.returncode == 0 and "model.ckpt-50" in r.stderr and "checksum" in r.stderr
          and f"resuming from '{series}/model.ckpt-40'" in r.stderr
          and f"resumed from {series}/model.ckpt-40: 0 epoch(s), 40 steps done" in r.stdout
          and index(series) == ["model.ckpt-30", "model.ckpt-40", "model.ckpt-45"]
          and not os.path.exists(os.path.join(series, "model.ckpt-50")),
          f"{os.listdir(series)} {r.stdout} {r.stderr}")

    timed = os.path.join(tmp, "timed")
    r = run("--model", "mlp", "--max-steps", "4", "--checkpoint-every-secs", "1e-9", "--keep-checkpoints", "10",
            "--checkpoint-dir", timed)
    check("--checkpoint-every-secs checkpoints when the time is up",
          r.returncode == 0 and index(timed) == [f"model.ckpt-{i}" for i in (1, 2, 3, 4)], r.stderr)
    bad = run("--keep-checkpoints", "0")
    check("--keep-checkpoints 0 is refused", bad.returncode == 1 and "--keep-checkpoints" in bad.stderr,
          bad.stderr)

    # SIGKILL mid-epoch loses at most N steps; --resume continues at the next step with the same
    # batches and learning rate, so the losses equal those of the uninterrupted run `a`.
    killed_dir = os.path.join(tmp, "killed")
    seen, code = train_until_killed(killed_dir, 15, "--model", "mlp", "--seed", "5", "--threads", "2",
                                    "--checkpoint-every-steps", "10")
    saved = int(index(killed_dir)[-1].split("-")[-1]) if os.path.exists(os.path.join(killed_dir, "checkpoint")) else -1
    check("SIGKILL mid-epoch loses at most --checkpoint-every-steps steps",
          code == -signal.SIGKILL and 0 < saved <= seen <= saved + 10 and saved < len(a),
          f"exit {code}, last step shown {seen}, latest checkpoint {saved}")
    if 0 < saved < len(a):
        trace = os.path.join(tmp, "killed_trace")
        r = run("--model", "mlp", "--seed", "5", "--threads", "2", "--resume", "--checkpoint-dir", killed_dir,
                "--trace-dir", trace, "--max-steps", str(len(a) - saved))
        b2 = np.load(os.path.join(trace, "losses.npy")) if r.returncode == 0 else np.zeros(0)
        check("resume after SIGKILL continues mid-epoch with the same batches, weights and lr",
              f"{saved} steps done, continuing epoch 1 at step {saved + 1}/937" in r.stdout
              and np.array_equal(b2, a[saved:]), f"{r.stdout} {r.stderr} {b2[:3]} vs {a[saved:saved + 3]}")

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
bad_model = run("--model", "vgg16", "--max-steps", "1")
check("unknown model lists the known ones",
      bad_model.returncode == 1 and "cnn, mlp, resnet, resnet18 or resnet50" in bad_model.stderr,
      bad_model.stderr)
# --synthetic: one fixed batch of random images, images/s from the median step after warm-up.
synthetic = run("--model", "resnet18", "--synthetic", "--batch-size", "2", "--max-steps", "4",
                "--optimizer", "momentum")
check("--synthetic trains ResNet-18 on 224x224x3 images of 1000 classes and reports images/s",
      synthetic.returncode == 0 and "224x224x3 images, 1000 classes, batch 2" in synthetic.stdout
      and re.search(r"resnet18 synthetic: [0-9.]+ images/s \(median step [0-9.]+ ms over 2 steps",
                    synthetic.stdout) is not None, synthetic.stdout + synthetic.stderr)
losses = [float(v) for v in re.findall(r"step \d+: loss ([0-9.]+)", synthetic.stdout)]
check("--synthetic steps train (the loss on the fixed batch falls)",
      len(losses) == 4 and losses[-1] < losses[0], synthetic.stdout)
small = run("--model", "resnet", "--synthetic", "--batch-size", "8", "--max-steps", "2")
check("--synthetic with a Fashion-MNIST-sized model", small.returncode == 0 and
      "28x28x1 images, 10 classes, batch 8" in small.stdout, small.stdout + small.stderr)
bad_precision = run("--precision", "fp8", "--max-steps", "1")
check("--precision takes fp32 or bf16",
      bad_precision.returncode == 1 and "unknown --precision 'fp8'" in bad_precision.stderr,
      bad_precision.stderr)
bf16 = run("--model", "mlp", "--synthetic", "--precision", "bf16", "--batch-size", "16",
           "--max-steps", "3")
check("--precision bf16 trains (bfloat16 mixed precision)",
      bf16.returncode == 0 and "bf16" in bf16.stdout and "images/s" in bf16.stdout,
      bf16.stdout + bf16.stderr)
bad_synthetic = run("--model", "resnet", "--synthetic", "--strategy", "allreduce", "--devices", "2")
check("--synthetic refuses a data-parallel strategy",
      bad_synthetic.returncode == 1 and "--synthetic measures one model" in bad_synthetic.stderr,
      bad_synthetic.stderr)
help_text = run("--help")
check("--help explains every flag", help_text.returncode == 0 and all(
    f"--{f}" in help_text.stdout for f in ["model", "batch-size", "epochs", "optimizer", "lr", "threads",
                                            "checkpoint-dir", "checkpoint-every-steps",
                                            "checkpoint-every-secs", "keep-checkpoints", "resume",
                                            "seed"]), help_text.stdout)


# The flag parser (CLI11 behind tools/shardflow/flags.h): both spellings, booleans, an empty
# --name=, errors that name the flag, --help and --log-level on every command.
def cli(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True)


spelled = cli("place", "--model=towers", "--devices", "2", "--simulate=false", "--cluster=",
              "--log-level=warning")
check("--name=value, --name value, --flag=false and an empty --name= parse",
      spelled.returncode == 0 and "placed" in spelled.stdout and "simulated" not in spelled.stdout,
      spelled.stdout + spelled.stderr)
bad_value = run("--epochs", "two")
check("a malformed value names the flag and the value",
      bad_value.returncode == 2 and "--epochs" in bad_value.stderr and "'two'" in bad_value.stderr,
      bad_value.stderr)
bad_level = cli("server", "--log-level", "debug")
check("--log-level takes info, warning or error",
      bad_level.returncode == 2 and "--log-level" in bad_level.stderr and "warning" in bad_level.stderr,
      bad_level.stderr)
helps = {c: cli(c, "--help") for c in ["train", "profile", "place", "server"]}
check("every command has --help listing --log-level",
      all(h.returncode == 0 and f"usage: shardflow {c}" in h.stdout and "--log-level" in h.stdout
          for c, h in helps.items()), str({c: h.stdout[:200] for c, h in helps.items()}))
unknown_command = cli("trian")
check("an unknown command is refused, listing the commands",
      unknown_command.returncode == 2 and "unknown command 'trian'" in unknown_command.stderr
      and "server" in unknown_command.stderr, unknown_command.stderr)

# SHARDFLOW_PLAINTEXT is --plaintext's default (as for Python servers and sessions), so a launch
# script can say it once for every task; a value that is no boolean fails naming it, unless the
# flag itself is given.
with tempfile.TemporaryDirectory() as tmp:
    import json
    import socket
    spec = os.path.join(tmp, "cluster.json")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    json.dump({"worker": [f"0.0.0.0:{free}"]}, open(spec, "w"))
    serve = [BINARY, "server", "--cluster", spec, "--job", "worker", "--task", "0"]

    def server_with(env_value, *flags):
        env = dict(os.environ)
        env.pop("SHARDFLOW_PLAINTEXT", None)
        if env_value is not None:
            env["SHARDFLOW_PLAINTEXT"] = env_value
        p = subprocess.Popen(serve + list(flags), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        try:
            out, _ = p.communicate(timeout=3)
            return p.returncode, out
        except subprocess.TimeoutExpired:   # serving: it started
            p.kill()
            return None, p.communicate()[0]

    refused = server_with(None)
    check("a server on a non-loopback address without TLS is refused, naming SHARDFLOW_PLAINTEXT",
          refused[0] not in (0, None) and "SHARDFLOW_PLAINTEXT=1" in refused[1], str(refused))
    served = server_with("1")
    check("SHARDFLOW_PLAINTEXT=1 lets it serve plaintext", served[0] is None, str(served))
    off = server_with("yes", "--plaintext=false")
    check("--plaintext=false wins over SHARDFLOW_PLAINTEXT", off[0] not in (0, None), str(off))
    bad = server_with("maybe")
    check("a SHARDFLOW_PLAINTEXT that is no boolean names it",
          bad[0] == 2 and "SHARDFLOW_PLAINTEXT is 'maybe'" in bad[1], str(bad))
    flag_wins = server_with("maybe", "--plaintext")
    check("...unless --plaintext is given", flag_wins[0] is None, str(flag_wins))

# A bad flag given to a task of a multi-process job fails before the task serves (it printed
# "serving on" and then failed, or waited for the rest of the cluster first).
with tempfile.TemporaryDirectory() as tmp:
    import json
    import socket
    ports = []
    for _ in range(2):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
    spec = os.path.join(tmp, "cluster.json")
    json.dump({"worker": [f"127.0.0.1:{ports[0]}"], "ps": [f"127.0.0.1:{ports[1]}"]},
              open(spec, "w"))
    for flags, named in ((["--strategy", "ps-bogus"], "--strategy"),
                         (["--strategy", "ps-sync", "--batch-size", "0"], "--batch-size"),
                         (["--strategy", "averaging", "--average-every", "0"], "--average-every"),
                         (["--strategy", "ps-async", "--epochs", "-1"], "--epochs")):
        for job in ("worker", "ps"):
            try:
                r = subprocess.run([BINARY, "train", "--cluster", spec, "--job", job, "--task",
                                    "0", *flags], capture_output=True, text=True, timeout=20)
                out, code = r.stdout + r.stderr, r.returncode
            except subprocess.TimeoutExpired as e:
                out, code = str(e.stdout) + str(e.stderr), None
            check(f"{' '.join(flags)} on the {job} fails before serving, naming {named}",
                  code not in (0, None) and named in out and "serving on" not in out, out)

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
