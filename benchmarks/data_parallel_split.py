#!/usr/bin/python3
"""Where a data-parallel step's time goes (the seeds' second question): per strategy and network,
the median step split into compute, communication and waiting, against the compute-only step.

    /usr/bin/python3 benchmarks/data_parallel_split.py [build/bin/shardflow]
        [--models mlp cnn] [--networks loopback 10gbit 1gbit] [--steps 60] [--out DIR]
        [--rounds 1] [--transport auto|grpc|ucx] [--replication between-graph|in-graph]

Two workers (and, for ps-async and ps-sync, one ps task), one `shardflow train --cluster --job
--task` process per task (allreduce and averaging with --replication between-graph, the default
here: each worker trains from its own graph), 1 thread each, 64 examples per worker and step,
Adam. The chief runs with --step-stats, which traces every step and splits its wall time
(Note [Step time split] in tools/shardflow/train_report.h): compute = some kernel of the step
ran; communication = tensors were crossing between tasks and nothing computed (what the network
cost that computation did not hide); waiting = the rest (sync tokens, a slower peer, RPC
overhead). Medians over the steps after the first 10. "compute-only" is the same model and batch
in one process with no strategy (the step a worker would take alone; "x alone" = step / that).
"no-comm" is the two-worker
deployment with no communication (averaging every 10^9 steps: both processes compute on the same
cores): "x no-comm" = step / that, the overlap figure (issue 12: allreduce
of the CNN on 10 Gbit/s at most 1.15x its compute-only step). Strategies allreduce-fp16 and
allreduce-bf16 (not run unless named) are allreduce with `--compression fp16|bf16`: the gradients
cross the network in half precision.

Networks: loopback (all tasks on 127.0.0.1), or emulated hosts (root): one network namespace per
task, each joined to a bridge (in a namespace of its own) by a veth pair whose both ends are
rate limited with tc tbf (10 Gbit/s or 1 Gbit/s). Without root the emulated rows are skipped.

The floor lines (emulated hosts, iperf3 installed): what moving a strategy's bytes costs the
machine's CPU, whoever moves them. iperf3 sends and receives on the same link (both directions
at once, an idle machine, busy time from /proc/stat) to price a MB; the strategy's bytes on the
wire per step come from the hosts' interface counters. In no-comm every core computes, so that
CPU, spread over the cores, is the least the step can grow by: "at best Fx no-comm" is the
bound any transport meets on this machine (Note in docs/benchmarks.md, "Where the step time
goes").

Prints a table and writes DIR/data_parallel_split.png (stacked bars; Debian's
python3-matplotlib). Every process is bounded in time; namespaces are removed at the end.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# "no-comm": the two workers of allreduce/averaging with no communication at all (averaging
# every 10^9 steps): the compute-only step of this deployment (two processes sharing the
# machine, the chief feeding both), the baseline the overlap target compares with.
STRATEGIES = ["no-comm", "allreduce", "averaging", "ps-async", "ps-sync"]
BATCH = 64
SUFFIX = str(os.getpid())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sh(*args, check=True):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r


def busy_ms():
    """CPU time (ms) all cores have spent not idle since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) * 1000.0 / os.sysconf("SC_CLK_TCK")


class Hosts:
    """`count` emulated hosts behind a bridge, each uplink and downlink at `rate`; or loopback."""

    def __init__(self, count, rate=None):
        self.rate = rate
        self.ns = [f"sfb{i}_{SUFFIX}" for i in range(count)] if rate else [None] * count
        self.bridge_ns = f"sfbr_{SUFFIX}"
        subnet = f"10.232.{os.getpid() % 200 + 20}"
        self.addr = [f"{subnet}.{i + 1}" for i in range(count)] if rate else ["127.0.0.1"] * count
        if not rate:
            return
        sh("ip", "netns", "add", self.bridge_ns)
        sh("ip", "netns", "exec", self.bridge_ns, "ip", "link", "add", "br0", "type", "bridge")
        sh("ip", "netns", "exec", self.bridge_ns, "ip", "link", "set", "br0", "up")
        for i, ns in enumerate(self.ns):
            host, port = f"sfh{i}_{SUFFIX}"[:15], f"sfp{i}_{SUFFIX}"[:15]
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", host, "type", "veth", "peer", "name", port)
            sh("ip", "link", "set", host, "netns", ns)
            sh("ip", "link", "set", port, "netns", self.bridge_ns)
            sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{self.addr[i]}/24", "dev", host)
            sh("ip", "netns", "exec", ns, "ip", "link", "set", host, "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            sh("ip", "netns", "exec", self.bridge_ns, "ip", "link", "set", port, "master", "br0")
            sh("ip", "netns", "exec", self.bridge_ns, "ip", "link", "set", port, "up")
            for where, dev in ((ns, host), (self.bridge_ns, port)):
                sh("ip", "netns", "exec", where, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
                   "rate", rate, "burst", "1mb" if rate == "10gbit" else "256kb",
                   "latency", "50ms")

    def command(self, i, argv):
        return argv if self.ns[i] is None else ["ip", "netns", "exec", self.ns[i]] + argv

    def tx_bytes(self, i):
        """Bytes host i has sent on its link so far (emulated hosts only)."""
        dev = f"sfh{i}_{SUFFIX}"[:15]
        out = sh("ip", "netns", "exec", self.ns[i], "cat",
                 f"/sys/class/net/{dev}/statistics/tx_bytes")
        return int(out.stdout)

    def cpu_ms_per_mb(self, mb=2000):
        """The whole machine's CPU time (ms) per MB that iperf3 moves between hosts 0 and 1,
        both directions at once, on an otherwise idle machine: what the kernel's network stack
        and this link's emulation (veth, bridge, tbf) cost per byte for the leanest sender and
        receiver there are. Busy time from /proc/stat, so softirqs and ksoftirqd count too."""
        port = "5399"
        server = subprocess.Popen(self.command(1, ["iperf3", "-s", "-1", "-p", port]),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        before = busy_ms()
        r = subprocess.run(self.command(0, ["iperf3", "-c", self.addr[1], "-p", port, "--bidir",
                                            "-n", f"{mb // 2}M", "-J"]),
                           capture_output=True, text=True, timeout=300)
        after = busy_ms()
        server.wait(timeout=30)
        end = json.loads(r.stdout)["end"]
        moved = (end["sum_received"]["bytes"] + end["sum_received_bidir_reverse"]["bytes"]) / 1e6
        return (after - before) / moved

    def close(self):
        if not self.rate:
            return
        for ns in self.ns + [self.bridge_ns]:
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                sh("kill", "-9", pid, check=False)
            sh("ip", "netns", "del", ns, check=False)


def medians(path):
    rows = [json.loads(line) for line in open(path)]
    rows = rows[10:] if len(rows) > 20 else rows
    keys = ("wall_ms", "compute_ms", "communication_ms", "waiting_ms")
    return {k: statistics.median(r[k] for r in rows) for k in keys}


def run_strategy(cli, hosts, strategy, model, steps, workdir, replication="between-graph",
                 transport="auto"):
    """Median split of the chief's steps."""
    every, compression = "10", "none"
    if strategy == "no-comm":
        strategy, every = "averaging", str(10**9)
    if strategy.startswith("allreduce-"):
        strategy, compression = strategy.split("-", 1)
    ps = strategy.startswith("ps-")
    tasks = ([("worker", 0, 0), ("worker", 1, 1)] + ([("ps", 0, 2)] if ps else []))
    port = free_port() if hosts.rate is None else 2300
    spec = {"worker": [], "ps": []}
    for job, task, host in tasks:
        addr = hosts.addr[host]
        spec[job].append(f"{addr}:{free_port() if hosts.rate is None else port + host}")
    if not ps:
        del spec["ps"]
    tag = f"{strategy}-{every}-{compression}-{model}"
    cluster = os.path.join(workdir, f"{tag}.json")
    with open(cluster, "w") as f:
        json.dump(spec, f)
    stats = os.path.join(workdir, f"{tag}.jsonl")
    common = [cli, "train", "--model", model, "--strategy", strategy, "--cluster", cluster,
              "--plaintext", "--threads", "1", "--batch-size", str(BATCH), "--max-steps",
              str(steps), "--progress=false", "--checkpoint-dir",
              os.path.join(workdir, f"ckpt-{tag}"), "--checkpoint-every-secs", "0",
              "--average-every", every, "--transport", transport,
              "--compression", compression] + (
                  [] if ps else ["--replication", replication])
    # Between emulated hosts UCX must use TCP: it would otherwise find shared memory and CMA
    # between namespaces of one machine and bypass the rate-limited link.
    env = dict(os.environ, UCX_TLS="tcp") if hosts.rate else None
    procs = []
    for job, task, host in sorted(tasks, key=lambda t: (t[0] == "worker" and t[1] == 0)):
        extra = ["--step-stats", stats] if (job, task) == ("worker", 0) else []
        procs.append(subprocess.Popen(
            hosts.command(host, common + ["--job", job, "--task", str(task)] + extra),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
    sent = [hosts.tx_bytes(h) for _, _, h in tasks] if hosts.rate else None
    outputs = []
    for p in procs:
        try:
            outputs.append(p.communicate(timeout=900)[0])
        except subprocess.TimeoutExpired:
            p.kill()
            outputs.append(p.communicate()[0])
    if any(p.returncode != 0 for p in procs):
        raise RuntimeError("\n".join(o[-800:] for o in outputs))
    split = medians(stats)
    if sent is not None:
        # Every task's bytes on the wire per step (setup and the first broadcast included).
        total = sum(hosts.tx_bytes(h) - b for (_, _, h), b in zip(tasks, sent))
        split["wire_mb_per_step"] = total / 1e6 / steps
    return split


def compute_only(cli, model, steps, workdir):
    stats = os.path.join(workdir, f"alone-{model}.jsonl")
    subprocess.run([cli, "train", "--model", model, "--threads", "1", "--batch-size", str(BATCH),
                    "--max-steps", str(steps), "--progress=false", "--checkpoint-dir",
                    os.path.join(workdir, f"ckpt-alone-{model}"), "--checkpoint-every-secs", "0",
                    "--step-stats", stats], check=True, capture_output=True, timeout=900)
    return medians(stats)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cli", nargs="?", default=os.path.join(ROOT, "build", "bin", "shardflow"))
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"])
    parser.add_argument("--networks", nargs="+", default=["loopback", "10gbit", "1gbit"])
    parser.add_argument("--strategies", nargs="+", default=STRATEGIES,
                        choices=STRATEGIES + ["allreduce-fp16", "allreduce-bf16"])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat everything this many times and print medians: the machine's "
                        "speed drifts from minute to minute, ratios are taken within a round")
    parser.add_argument("--out", default=".")
    parser.add_argument("--replication", default="between-graph",
                        choices=["between-graph", "in-graph"],
                        help="allreduce and averaging: every worker trains from its own graph "
                        "(as DDP), or the chief drives both replicas from one graph")
    parser.add_argument("--transport", default="auto", choices=["auto", "grpc", "ucx"],
                        help="the tasks' data plane (docs/distributed.md 'Choosing a transport'); "
                        "UCX runs with UCX_TLS=tcp between emulated hosts")
    args = parser.parse_args()
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} vCPUs, {time.strftime('%Y-%m-%d')}; 2 workers x 1 "
          f"thread, {BATCH} examples per worker and step, Adam; medians of steps 11-{args.steps}")
    emulate = os.geteuid() == 0 and shutil.which("tc") is not None
    header = (f"{'network':<9} {'model':<5} {'strategy':<16} {'step ms':>8} {'compute':>8} "
              f"{'comm':>8} {'waiting':>8} {'x alone':>8} {'x no-comm':>9}")

    def line(network, m, strategy, s, ratio, vs):
        vs = f"{vs:>9.2f}" if vs else f"{'':>9}"
        return (f"{network:<9} {m:<5} {strategy:<16} {s['wall_ms']:>8.2f} "
                f"{s['compute_ms']:>8.2f} {s['communication_ms']:>8.2f} "
                f"{s['waiting_ms']:>8.2f} {ratio:>8.2f} {vs}")
    # Per (network, model, strategy): each round's split and its ratios to that round's
    # compute-only and no-comm steps (the machine's speed drifts between rounds; ratios are
    # taken within a round, side by side).
    splits, vs_alone, vs_base, alones = {}, {}, {}, {m: [] for m in args.models}
    floors = {}  # (network, model, strategy) -> the network's CPU floor, as x no-comm
    with tempfile.TemporaryDirectory() as workdir:
        for r in range(args.rounds):
            if args.rounds > 1:
                print(f"round {r + 1}/{args.rounds}")
            print(header)
            alone = {m: compute_only(args.cli, m, args.steps, workdir) for m in args.models}
            for m in args.models:
                alones[m].append(alone[m])
                print(line("-", m, "compute-only", alone[m], 1, None))
            for network in args.networks:
                if network != "loopback" and not emulate:
                    print(f"{network:<9} (skipped: emulated hosts need root and tc)")
                    continue
                hosts = Hosts(3, None if network == "loopback" else network)
                try:
                    for m in args.models:
                        # Every other round runs the strategies in reverse order, so a drift
                        # of the machine's speed within a round does not favour one of them.
                        order = args.strategies if r % 2 == 0 else args.strategies[::-1]
                        got = {strategy: run_strategy(args.cli, hosts, strategy, m, args.steps,
                                                      workdir, args.replication, args.transport)
                               for strategy in order}
                        base = got["no-comm"]["wall_ms"] if "no-comm" in got else None
                        for strategy in args.strategies:
                            s, key = got[strategy], (network, m, strategy)
                            splits.setdefault(key, []).append(s)
                            vs_alone.setdefault(key, []).append(s["wall_ms"] /
                                                                alone[m]["wall_ms"])
                            if base:
                                vs_base.setdefault(key, []).append(s["wall_ms"] / base)
                            print(line(network, m, strategy, s, vs_alone[key][-1],
                                       base and s["wall_ms"] / base), flush=True)
                        if base and hosts.rate and shutil.which("iperf3"):
                            per_mb = hosts.cpu_ms_per_mb(2000 if network == "10gbit" else 500)
                            for strategy in args.strategies:
                                mb = got[strategy].get("wire_mb_per_step", 0)
                                if strategy == "no-comm" or not mb:
                                    continue
                                # Every core computes in no-comm: the network's CPU per step,
                                # shared by the cores, is the least the step can grow by.
                                floor = 1 + per_mb * mb / os.cpu_count() / base
                                floors.setdefault((network, m, strategy), []).append(floor)
                                print(f"{'':<9} {m:<5} {strategy:<16} floor: {mb:.1f} MB on "
                                      f"the wire a step x {per_mb:.3f} ms of CPU per MB "
                                      f"(iperf3, this link) = at best {floor:.2f}x no-comm",
                                      flush=True)
                finally:
                    hosts.close()
    med = statistics.median
    alone = {m: {k: med(a[k] for a in alones[m]) for k in alones[m][0]} for m in args.models}
    rows = [(key[0], key[1], key[2], {k: med(x[k] for x in v) for k in v[0]},
             med(vs_alone[key])) for key, v in splits.items()]
    if args.rounds > 1:
        print(f"\nmedians of {args.rounds} rounds (ratios: the median of each round's own)")
        print(header)
        for m in args.models:
            print(line("-", m, "compute-only", alone[m], 1, None))
        for network, m, strategy, s, ratio in rows:
            key = (network, m, strategy)
            print(line(network, m, strategy, s, ratio,
                       med(vs_base[key]) if key in vs_base else None))
        for (network, m, strategy), f in floors.items():
            print(f"{network:<9} {m:<5} {strategy:<16} floor: at best {med(f):.2f}x no-comm "
                  f"(the network's CPU per step on this machine's cores)")
    plot(rows, alone, args.out)
    return 0


def plot(rows, alone, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: apt-get install python3-matplotlib)")
        return
    models = sorted({r[1] for r in rows})
    if not models:
        return
    fig, axes = plt.subplots(1, len(models), figsize=(7 * len(models), 5), squeeze=False)
    for ax, m in zip(axes[0], models):
        mine = [r for r in rows if r[1] == m]
        labels = ["alone"] + [f"{r[0]}\n{r[2]}" for r in mine]
        splits = [alone[m]] + [r[3] for r in mine]
        bottom = [0.0] * len(splits)
        for key, color in (("compute_ms", "tab:blue"), ("communication_ms", "tab:orange"),
                           ("waiting_ms", "tab:gray")):
            values = [s[key] for s in splits]
            ax.bar(range(len(splits)), values, bottom=bottom, color=color,
                   label=key.replace("_ms", ""))
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_xticks(range(len(splits)))
        ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("median step time (ms)")
        ax.set_title(f"{m}: 2 workers x {BATCH} examples")
        ax.legend()
    path = os.path.join(out, "data_parallel_split.png")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    print(f"plot: {path}")


if __name__ == "__main__":
    sys.exit(main())
