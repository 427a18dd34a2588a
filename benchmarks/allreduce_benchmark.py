#!/usr/bin/python3
"""All-reduce of float32 tensors between 2 processes on loopback: shardflow against PyTorch's
torch.distributed.all_reduce with gloo (Debian's python3-torch), side by side in one run.

    /usr/bin/python3 benchmarks/allreduce_benchmark.py [build/bin/shardflow]
                     [--sizes-mib 1 16 64] [--iters 10] [--rounds 3] [--transports auto grpc ucx]

shardflow: two `shardflow server` processes (tasks 0 and 1 of one cluster, one CPU device and
one thread each, as gloo's two processes) and a client (this script, through the Python package)
whose graph has a CollectiveReduce (sum) on each task of a tensor that lives there; the client
fetches nothing large. The time of one all-reduce is the CollectiveReduce node's own span in
the step's trace (RunOptions FULL_TRACE: from the op starting to its result being complete),
the larger of the two tasks'; step overhead (the client's RunStep, RunGraph on each task) is
printed beside it. gloo: two processes (torch.multiprocessing), all_reduce(SUM) of a tensor of
the same size, timed around the call after a barrier, the larger of the two ranks.

Each transport (--transports: the default "auto", UCX's shared memory between tasks of one
host; gRPC's RecvTensor; UCX's data plane with every peer; docs/distributed.md "Choosing a
transport") gets its own pair of servers. The rounds alternate between them and gloo,
so all see the same machine; each round's median over
--iters calls is kept, and the table gives the median of the rounds, as algorithm bandwidth
(bytes of the tensor / time) and the ratio to gloo. Target (issue 12): >= 1.5x gloo at 16 and
64 MiB. Exit status 0 whatever the numbers.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- gloo ----------------------------------------------------------------------------------

GLOO_WORKER = r"""
import os, statistics, sys, time, json
import torch, torch.distributed as dist
rank, port, sizes, iters = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank, world_size=2)
out = {}
for mib in sizes:
    t = torch.ones(mib * (1 << 20) // 4, dtype=torch.float32)
    dist.all_reduce(t)  # warm-up (connections, buffers)
    times = []
    for _ in range(iters):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(t)
        times.append(time.perf_counter() - start)
    out[mib] = times
print(json.dumps(out))
"""


def run_gloo(sizes, iters):
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, "-c", GLOO_WORKER, str(r), port, json.dumps(sizes),
                               str(iters)], stdout=subprocess.PIPE, text=True) for r in range(2)]
    results = [json.loads(p.communicate(timeout=600)[0]) for p in procs]
    # Per call, the slower rank's time.
    return {mib: statistics.median(max(a, b) for a, b in zip(results[0][str(mib)],
                                                              results[1][str(mib)]))
            for mib in sizes}


# ---- shardflow -----------------------------------------------------------------------------

def start_servers(cli, workdir, transport):
    ports = [free_port(), free_port()]
    cluster = {"worker": ["127.0.0.1:%d" % p for p in ports]}
    path = os.path.join(workdir, "cluster_%s.json" % transport)
    with open(path, "w") as f:
        json.dump(cluster, f)
    procs = []
    for task in range(2):
        procs.append(subprocess.Popen(
            [cli, "server", "--cluster", path, "--job", "worker", "--task", str(task),
             "--threads", "1", "--log-level", "warning", "--transport", transport],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    deadline = time.time() + 30
    for port in ports:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError("shardflow server did not start: " +
                                       procs[0].stderr.read())
                time.sleep(0.1)
    return procs, ports


def run_shardflow(sf, ports, sizes, iters):
    out = {}
    for mib in sizes:
        g = sf.Graph()
        with g.as_default():
            reduced = []
            for task in range(2):
                with sf.device("/job:worker/replica:0/task:%d/device:CPU:0" % task):
                    v = sf.Variable(sf.fill([mib * (1 << 20) // 4], 1.0 + task), name="v%d_%dmib" % (task, mib))
                    r = sf.collective_ops.all_reduce(v.value(), 2, group_key=1,
                                                     instance_key=1, name="allreduce%d" % task)
                    reduced.append(sf.reduce_sum(sf.slice(r, [0], [1])))
            init = sf.global_variables_initializer()
        with sf.Session("grpc://127.0.0.1:%d" % ports[0], graph=g) as sess:
            sess.run(init)
            check = sess.run(reduced)
            assert all(abs(c - 3.0) < 1e-6 for c in check), check
            opts = sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE)
            op_times, step_times = [], []
            sess.run(reduced)  # warm-up
            for _ in range(iters):
                md = sf.RunMetadata()
                start = time.perf_counter()
                sess.run(reduced, options=opts, run_metadata=md)
                step_times.append(time.perf_counter() - start)
                spans = [(n["end_micros"] - n["start_micros"]) * 1e-6 for n in md.node_stats()
                         if n["op"] == "CollectiveReduce"]
                op_times.append(max(spans))
        out[mib] = (statistics.median(op_times), statistics.median(step_times))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cli", nargs="?", default=os.path.join(ROOT, "build", "bin", "shardflow"))
    parser.add_argument("--sizes-mib", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transports", nargs="+", default=["auto", "grpc", "ucx"])
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.cli))),
                                    "python"))
    import shardflow as sf  # noqa: E402 (the build tree's package)

    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} vCPUs; load {open('/proc/loadavg').read().split()[:3]}")
    names = ["shardflow " + t for t in args.transports] + ["gloo"]
    times = {n: {m: [] for m in args.sizes_mib} for n in names}
    steps = {n: {m: [] for m in args.sizes_mib} for n in names}
    with tempfile.TemporaryDirectory() as workdir:
        servers = {}
        try:
            for t in args.transports:
                servers[t] = start_servers(args.cli, workdir, t)
            for r in range(args.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                for n in order:
                    if n == "gloo":
                        for m, t in run_gloo(args.sizes_mib, args.iters).items():
                            times[n][m].append(t)
                        continue
                    ports = servers[n.split()[1]][1]
                    for m, (op, step) in run_shardflow(sf, ports, args.sizes_mib,
                                                       args.iters).items():
                        times[n][m].append(op)
                        steps[n][m].append(step)
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            for procs, _ in servers.values():
                for p in procs:
                    p.terminate()
                    p.wait(timeout=30)
    print(f"\nall-reduce (sum) of float32 between 2 processes on loopback; medians of "
          f"{args.rounds} rounds x {args.iters} calls; GB/s = tensor bytes / time "
          f"(shardflow: the CollectiveReduce op's span; its whole step in parentheses)")
    header = f"{'size':>7}"
    for n in names:
        header += f" {n:>22}"
    print(header + "  vs gloo" + ("  ucx/grpc" if {"grpc", "ucx"} <= set(args.transports) else ""))
    for m in args.sizes_mib:
        size = m * (1 << 20)
        med = {n: statistics.median(times[n][m]) for n in names}
        line = f"{m:>4} MiB"
        for n in names:
            extra = f" ({statistics.median(steps[n][m]) * 1e3:.1f})" if steps[n][m] else ""
            line += f" {med[n] * 1e3:>7.2f} ms{extra:>8} {size / med[n] / 1e9:>4.1f}"
        ratios = ", ".join(f"{n.split()[-1]} {med['gloo'] / med[n]:.2f}x" for n in names
                           if n != "gloo")
        line += "  " + ratios
        if {"grpc", "ucx"} <= set(args.transports):
            line += f"  {med['shardflow grpc'] / med['shardflow ucx']:.2f}x"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
