#!/usr/bin/python3
"""Two tasks on two emulated hosts: network namespaces joined by a veth pair whose link is rate
limited with tc tbf. `shardflow train --cluster` runs model-parallel from host 0 and must give
the same loss curve as a local run; `--strategy allreduce` across the hosts must give the curve
of two local replicas; `--strategy ps-sync` with a ps and a worker on host 0 and a worker on host
1 (one process per task) must end with the parameters of one local worker on both workers' rows;
a task killed on host 1 must fail the next step within the bound with an error naming it.
With `--transport ucx` the tasks move tensors over UCX with UCX_TLS=tcp (without it UCX would
find shared memory between namespaces of one machine and bypass the link under test). The
default, `--transport auto`, is the tasks' own default: shared memory between tasks of one
namespace (the ps and worker 0 of the ps-sync run), gRPC over the link between namespaces.

usage: netns_test.py path/to/shardflow [--transport auto|grpc|ucx]
       (root; exits 77 = skipped without namespaces)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BINARY = os.path.abspath(sys.argv[1])
TRANSPORT = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--transport" else "auto"
# Every shardflow process here: the tasks' data plane, over TCP only.
TRANSPORT_FLAGS = ["--transport", TRANSPORT]
ENV = dict(os.environ, UCX_TLS="tcp") if TRANSPORT == "ucx" else dict(os.environ)
SUFFIX = str(os.getpid())
NS = [f"sf_h0_{SUFFIX}", f"sf_h1_{SUFFIX}"]
VETH = [f"sfv0_{SUFFIX}"[:15], f"sfv1_{SUFFIX}"[:15]]
SUBNET = f"10.231.{os.getpid() % 200 + 20}"
ADDR = [f"{SUBNET}.1", f"{SUBNET}.2"]
RATE = "400mbit"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(f"{'ok  ' if condition else 'FAIL'} {name}{'' if condition else ': ' + detail}")


def sh(*args, check_rc=True):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(77)


def setup():
    if os.geteuid() != 0:
        skip("needs root to create network namespaces")
    if shutil.which("ip") is None or shutil.which("tc") is None:
        skip("needs iproute2 (ip, tc)")
    try:
        for ns in NS:
            sh("ip", "netns", "add", ns)
    except RuntimeError as e:
        teardown()
        skip(f"cannot create network namespaces here ({e})")
    sh("ip", "link", "add", VETH[0], "type", "veth", "peer", "name", VETH[1])
    for i in range(2):
        sh("ip", "link", "set", VETH[i], "netns", NS[i])
        sh("ip", "netns", "exec", NS[i], "ip", "addr", "add", f"{ADDR[i]}/24", "dev", VETH[i])
        sh("ip", "netns", "exec", NS[i], "ip", "link", "set", VETH[i], "up")
        sh("ip", "netns", "exec", NS[i], "ip", "link", "set", "lo", "up")
        sh("ip", "netns", "exec", NS[i], "tc", "qdisc", "add", "dev", VETH[i], "root", "tbf",
           "rate", RATE, "burst", "256kb", "latency", "100ms")


def teardown():
    for ns in NS:
        sh("ip", "netns", "pids", ns, check_rc=False)
        pids = sh("ip", "netns", "pids", ns, check_rc=False).stdout.split()
        for pid in pids:
            sh("kill", "-9", pid, check_rc=False)
        sh("ip", "netns", "del", ns, check_rc=False)


def start_task(spec, task):
    p = subprocess.Popen(["ip", "netns", "exec", NS[task], BINARY, "server", "--cluster", spec,
                          "--task", str(task), "--threads", "1", "--plaintext", *TRANSPORT_FLAGS],
                         stdout=subprocess.PIPE, text=True, env=ENV)
    line = p.stdout.readline()
    if "listening on" not in line:
        raise RuntimeError(f"task {task} did not start: {line}")
    if TRANSPORT == "ucx" and "tensors over ucx" not in line:
        print(f"note: task {task} fell back to gRPC (no UCX in this build?): {line.strip()}")
    return p


def link_bytes():
    """Bytes host 0's end of the link has sent and received."""
    read = sh("ip", "netns", "exec", NS[0], "cat", f"/sys/class/net/{VETH[0]}/statistics/tx_bytes",
              f"/sys/class/net/{VETH[0]}/statistics/rx_bytes").stdout.split()
    return sum(int(x) for x in read)


def train(tmp, tag, *flags, ns=None):
    out = os.path.join(tmp, tag)
    cmd = [BINARY, "train", "--model", "mlp", "--max-steps", "30", "--progress=false",
           "--checkpoint-dir", out, "--trace-dir", out, *flags]
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=ENV)
    return r, os.path.join(out, "losses.npy")


def ps_sync_across_hosts(tmp, np):
    """ps and worker 0 on host 0, worker 1 on host 1; SGD; the chief's checkpoint against one
    local worker on the 64 rows of both."""
    spec = os.path.join(tmp, "ps_cluster.json")
    with open(spec, "w") as f:
        json.dump({"ps": [f"{ADDR[0]}:2230"], "worker": [f"{ADDR[0]}:2231", f"{ADDR[1]}:2231"]},
                  f)
    sgd = ["--optimizer", "sgd", "--lr", "0.05", "--lr-decay", "none", "--max-steps", "20",
           "--model", "mlp", "--threads", "1", "--progress=false"]
    ckpt = os.path.join(tmp, "ps_ckpt")
    procs = []
    start = time.time()
    for job, task, ns in (("ps", 0, NS[0]), ("worker", 1, NS[1]), ("worker", 0, NS[0])):
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", ns, BINARY, "train", "--strategy", "ps-sync", "--cluster",
             spec, "--plaintext", "--job", job, "--task", str(task), "--batch-size", "32",
             "--checkpoint-dir", ckpt, *TRANSPORT_FLAGS, *sgd], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env=ENV))
    outputs = []
    for p in procs:
        try:
            outputs.append(p.communicate(timeout=300)[0])
        except subprocess.TimeoutExpired:
            p.kill()
            outputs.append(p.communicate()[0])
    took = time.time() - start
    ok = all(p.returncode == 0 for p in procs)
    check(f"ps-sync training across two emulated hosts runs ({took:.1f} s)", ok,
          "\n".join(o[-600:] for o in outputs))
    if not ok:
        return
    single = os.path.join(tmp, "ps_single")
    r = subprocess.run([BINARY, "train", "--batch-size", "64", "--checkpoint-dir", single, *sgd],
                       capture_output=True, text=True, timeout=300)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(BINARY)), "python"))
    try:
        from shardflow import _shardflow
    except ImportError as e:
        print(f"note: parameters not compared (no Python bindings: {e})")
        return
    a = dict(_shardflow.load_checkpoint(os.path.join(ckpt, "model.ckpt-20")))
    b = dict(_shardflow.load_checkpoint(os.path.join(single, "model.ckpt-20")))
    names = [k for k in b if not k.startswith("_meta/")]
    same = r.returncode == 0 and names and all(
        np.allclose(np.asarray(a[k]), np.asarray(b[k]), rtol=1e-4, atol=1e-6) for k in names)
    check(f"its parameters equal one local worker's on the global batch ({RATE} link)", same,
          r.stderr[-400:])


# A TF1 client on host 0 runs a step on both hosts, host 1 drops off the network, and the client
# closes its session: the master's CleanupGraph calls to host 1 get no answer (no reset comes
# from a vanished host, a reconnect's SYN is never answered).
CLOSE_CLIENT = """
import sys, time
import shardflow as tf
with tf.device("/job:worker/task:1"):
    a = tf.random.uniform([64, 64], seed=1)
with tf.device("/job:worker/task:0"):
    b = tf.reduce_sum(tf.matmul(a, a))
sess = tf.Session(sys.argv[1])
sess.run(b)
sess.run(tf.reduce_sum(a))
print("ready", flush=True)
sys.stdin.readline()
start = time.time()
sess.close()
print(f"closed {time.time() - start:.2f}", flush=True)
"""


def python_env(what):
    """The environment of a TF1 program run from this build (plaintext gRPC between the hosts
    asked for as an unchanged program would: SHARDFLOW_PLAINTEXT=1); None, with a note, when the
    build has no Python package."""
    python_dir = os.path.join(os.path.dirname(os.path.dirname(BINARY)), "python")
    if not os.path.isdir(os.path.join(python_dir, "shardflow")):
        print(f"note: {what} not checked (no Python package at {python_dir})")
        return None
    return dict(ENV, PYTHONPATH=python_dir, SHARDFLOW_PLAINTEXT="1")


def tf1_between_graph_across_hosts(tmp):
    """examples/python/between_graph_ps.py, a TF1 program (ClusterSpec, Server,
    replica_device_setter, SyncReplicasOptimizer, MonitoredTrainingSession) unchanged: its ps
    and worker 0 on host 0, worker 1 on host 1."""
    env = python_env("TF1 between-graph training across the hosts")
    if env is None:
        return
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                           "python", "between_graph_ps.py")
    cluster = ["--ps", f"{ADDR[0]}:2250", "--workers", f"{ADDR[0]}:2251,{ADDR[1]}:2251",
               "--steps", "60", "--checkpoint-dir", os.path.join(tmp, "tf1_ckpt")]
    procs = []
    start = time.time()
    try:
        for job, task, ns in (("ps", 0, NS[0]), ("worker", 1, NS[1]), ("worker", 0, NS[0])):
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, "/usr/bin/python3", example, *cluster, "--job", job,
                 "--task", str(task)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=env))
        outs = []
        for p in procs[1:]:
            try:
                outs.append(p.communicate(timeout=240))
            except subprocess.TimeoutExpired:
                p.kill()
                outs.append(p.communicate())
    finally:
        for p in procs:
            p.kill()
            p.wait()
    took = time.time() - start
    chief_out, chief_err = outs[1]
    accuracy = [line for line in chief_out.splitlines() if "test accuracy" in line]
    ok = all(p.returncode == 0 for p in procs[1:]) and accuracy
    check(f"a TF1 program (1 ps + 2 workers, SyncReplicasOptimizer) trains across the hosts "
          f"({took:.1f} s{', ' + accuracy[0].split(';')[1].strip() if accuracy else ''})",
          bool(ok) and float(accuracy[0].split()[-1].rstrip("%")) > 50,
          f"worker 1: {outs[0][1][-300:]} chief: {chief_err[-400:]}")


def close_with_a_lost_host():
    env = python_env("session close")
    if env is None:
        return
    client = subprocess.Popen(["ip", "netns", "exec", NS[0], "/usr/bin/python3", "-c",
                               CLOSE_CLIENT, f"grpc://{ADDR[0]}:2222"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        ready = client.stdout.readline()
        if "ready" not in ready:
            client.kill()
            check("a session on both hosts runs", False, client.communicate()[1][-400:])
            return
        sh("ip", "netns", "exec", NS[1], "ip", "link", "set", VETH[1], "down")
        time.sleep(1)
        client.stdin.write("close\n")
        client.stdin.flush()
        try:
            out, err = client.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            client.kill()
            out, err = client.communicate()
        closed = [line for line in out.splitlines() if line.startswith("closed")]
        took = float(closed[0].split()[1]) if closed else float("inf")
        check(f"closing a session whose other host vanished takes at most 7 s ({took:.1f} s)",
              client.returncode == 0 and took <= 7, f"rc {client.returncode}: {err[-400:]}")
    finally:
        sh("ip", "netns", "exec", NS[1], "ip", "link", "set", VETH[1], "up")


def main():
    import numpy as np
    print(f"tensors between the tasks over {TRANSPORT}"
          + (" (UCX_TLS=tcp)" if TRANSPORT == "ucx" else ""))
    setup()
    tasks = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            spec = os.path.join(tmp, "cluster.json")
            with open(spec, "w") as f:
                json.dump({"worker": [f"{ADDR[0]}:2222", f"{ADDR[1]}:2222"]}, f)
            tasks = [start_task(spec, 0), start_task(spec, 1)]
            local, local_losses = train(tmp, "local", "--threads", "1")
            start = time.time()
            dist, dist_losses = train(tmp, "dist", "--cluster", spec, "--plaintext", ns=NS[0])
            took = time.time() - start
            ok = local.returncode == 0 and dist.returncode == 0
            check("model-parallel training across two emulated hosts runs", ok,
                  local.stderr + dist.stderr)
            if ok:
                a, b = np.load(local_losses), np.load(dist_losses)
                check(f"its loss curve equals the local one (30 steps over a {RATE} link, "
                      f"{took:.1f} s)", a.shape == b.shape and np.allclose(a, b, rtol=1e-5),
                      f"{a[:5]} vs {b[:5]}")
            # Data parallel across the hosts: a replica on each, gradients all-reduced over
            # the rate-limited link; with SGD the same curve as two replicas on two local devices.
            dp = ["--strategy", "allreduce", "--batch-size", "32", "--optimizer", "sgd",
                  "--lr", "0.05"]
            local_dp, local_dp_losses = train(tmp, "local_dp", "--threads", "1", "--devices", "2",
                                              *dp)
            start, crossed = time.time(), link_bytes()
            dist_dp, dist_dp_losses = train(tmp, "dist_dp", "--cluster", spec, "--plaintext", *dp,
                                            ns=NS[0])
            took, crossed = time.time() - start, link_bytes() - crossed
            ok = local_dp.returncode == 0 and dist_dp.returncode == 0
            check("all-reduce training across two emulated hosts runs", ok,
                  local_dp.stderr + dist_dp.stderr)
            if ok:
                a, b = np.load(local_dp_losses), np.load(dist_dp_losses)
                check(f"its loss curve equals two local replicas' (30 steps over a {RATE} link, "
                      f"{took:.1f} s)", a.shape == b.shape and np.allclose(a, b, rtol=1e-4),
                      f"{a[:5]} vs {b[:5]}")
                # The gradients crossed the link (each step's all-reduce moves the MLP's
                # gradients both ways): shared memory between the namespaces would bypass it.
                check(f"the gradients crossed the emulated link ({crossed / 1e6:.1f} MB)",
                      crossed > 30 * 1e6, f"{crossed} bytes")
            ps_sync_across_hosts(tmp, np)
            tf1_between_graph_across_hosts(tmp)
            # Host 1 becomes unreachable in the middle of training (its link goes down, no
            # reset reaches anyone): the step fails naming task 1 within the bound.
            out = os.path.join(tmp, "cut")
            long_run = subprocess.Popen(
                ["ip", "netns", "exec", NS[0], BINARY, "train", "--model", "mlp", "--max-steps",
                 "100000", "--progress=false", "--checkpoint-dir", out, "--cluster", spec,
                 "--plaintext"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=ENV)
            time.sleep(4)
            cut = time.time()
            sh("ip", "netns", "exec", NS[1], "ip", "link", "set", VETH[1], "down")
            try:
                _, err = long_run.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                long_run.kill()
                _, err = long_run.communicate()
            took = time.time() - cut
            check(f"an unreachable host fails the step naming its task within 10 s ({took:.1f} s)",
                  long_run.returncode not in (0, None) and "task:1" in err and took <= 10,
                  f"rc {long_run.returncode} after {took:.1f} s: {err[-400:]}")
            sh("ip", "netns", "exec", NS[1], "ip", "link", "set", VETH[1], "up")
            close_with_a_lost_host()
            # Kill the task on host 1: the next training run fails naming it, within the bound.
            tasks[1].kill()
            tasks[1].wait()
            start = time.time()
            dead, _ = train(tmp, "dead", "--cluster", spec, "--plaintext", ns=NS[0])
            took = time.time() - start
            check("a dead task on the other host is an error naming it, within 10 s",
                  dead.returncode != 0 and "task:1" in dead.stderr and took < 15,
                  f"rc {dead.returncode} after {took:.1f} s: {dead.stderr[-400:]}")
    finally:
        for t in tasks:
            t.terminate()
        teardown()
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
