#!/usr/bin/python3
"""RecvTensor throughput and round trip over each transport, beside raw TCP (iperf3, one stream),
in one run.

    /usr/bin/python3 benchmarks/transfer_benchmark.py [build/bin/transfer_benchmark]
                     [--passes N] [--transports grpc,ucx] [--destination] [--baseline OTHER]
                     [--no-torch-rpc]

Alternates N times (default 3) between iperf3 -c 127.0.0.1 (one stream, 3 s) and
transfer_benchmark --json --transport=T for each transport T (two processes on loopback; the sizes
take turns inside it; the transports take turns between passes), so that all see the same
machine; PyTorch RPC (TensorPipe, benchmarks/torch_rpc_benchmark.py) takes its turn too, when
torch imports. Prints one table per transport: the median over the passes of each pass's median
time, GB/s for 4 KB, 1 MB and 64 MB tensors as a share of iperf3's median rate, the spread of the
passes, the median round trip of a 4-byte tensor (back to back, as ping-pong benchmarks measure
it) and a 4-byte pull right after a step (both tasks idle for a gRPC round trip before it); then
UCX against gRPC and PyTorch RPC. With --destination
each transport also runs pulling into a given tensor (RecvArgs::destination, as the ring
all-reduce does). The load average is printed before and after: on a shared machine the figures
move with it. Exit status 0 when all ran, whatever the numbers (the targets are printed beside
them). With --baseline, every pass also runs OTHER_BINARY (e.g. a build of the previous commit,
gRPC) and a table shows it: before and after from the same passes.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def iperf3_bytes_per_s(port=5299, seconds=3):
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds),
                              "-P", "1", "-J"], capture_output=True, text=True, timeout=60)
        report = json.loads(out.stdout)
        return report["end"]["sum_received"]["bits_per_second"] / 8
    finally:
        server.kill()
        server.wait()


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


TARGETS = {
    "grpc": {"64MB": ">= 80% of iperf3", "rtt": "<= 100 us"},
    "ucx": {"64MB": ">= 4 GB/s, >= 2x grpc", "rtt": "<= 30 us"},
}
ROWS = [("4KB", "4KB"), ("1MB", "1MB"), ("64MB", "64MB")]
LATENCY_ROWS = [("rtt_4B", "4 B RTT", "rtt"), ("4B_idle", "4 B idle", None)]


def print_table(name, runs, rate):
    targets = TARGETS.get(name.split()[0], {})
    print(f"{name}:")
    print(f"{'tensor':<8} {'median':>12} {'GB/s':>8} {'vs iperf3':>10}   {'passes (median us)':<28}"
          f" target")
    for size_name, _ in ROWS:
        times = [r[size_name]["median_s"] for r in runs]
        median = statistics.median(times)
        size = runs[0][size_name]["bytes"]
        ratio = f"{100 * size / median / rate:.0f}%" if rate else "n/a"
        spread = ", ".join(f"{t * 1e6:.0f}" for t in times)
        print(f"{size_name:<8} {median * 1e6:>9.1f} us {size / median / 1e9:>8.3f} {ratio:>10}   "
              f"{spread:<28} {targets.get(size_name, '')}")
    for key, label, target in LATENCY_ROWS:
        if key not in runs[0]:
            continue
        rtt = [r[key]["median_s"] for r in runs]
        best = min(r[key]["min_s"] for r in runs)
        spread = ", ".join(f"{t * 1e6:.0f}" for t in rtt)
        print(f"{label:<8} {statistics.median(rtt) * 1e6:>9.1f} us {'':>8} {'':>10}   "
              f"{spread:<28} {targets.get(target, '')} (min {best * 1e6:.1f} us)")


def median_of(runs, size_name):
    return statistics.median(r[size_name]["median_s"] for r in runs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary", nargs="?",
                        default=os.path.join(ROOT, "build", "bin", "transfer_benchmark"))
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--transports", default="grpc,ucx",
                        help="comma-separated: grpc, ucx (a build without UCX runs ucx as grpc)")
    parser.add_argument("--destination", action="store_true",
                        help="also pull into a given tensor (as collectives do)")
    parser.add_argument("--baseline", help="another transfer_benchmark to run in every pass")
    parser.add_argument("--no-torch-rpc", action="store_true", help="leave PyTorch RPC out")
    args = parser.parse_args()
    binary = args.binary
    if not os.path.exists(binary):
        binary = os.path.join(ROOT, "build-dist", "bin", "transfer_benchmark")
    have_iperf3 = shutil.which("iperf3") is not None
    configs = []  # (name, command)
    for t in [t for t in args.transports.split(",") if t]:
        configs.append((t, [binary, "--json", "--transport=" + t]))
        if args.destination:
            configs.append((t + " into destination",
                            [binary, "--json", "--transport=" + t, "--destination"]))
    if args.baseline:
        configs.append(("baseline " + args.baseline, [args.baseline, "--json"]))
    if not args.no_torch_rpc and subprocess.run(
            ["/usr/bin/python3", "-c", "import torch.distributed.rpc"],
            capture_output=True).returncode == 0:
        configs.append(("torch rpc", ["/usr/bin/python3",
                                      os.path.join(ROOT, "benchmarks", "torch_rpc_benchmark.py"),
                                      "--json"]))
    print(f"machine: {os.cpu_count()} CPUs, load average {load_average()}; loopback; "
          f"{args.passes} alternating passes")
    tcp = []
    runs = {name: [] for name, _ in configs}
    for i in range(args.passes):
        if have_iperf3:
            tcp.append(iperf3_bytes_per_s())
        k = i % len(configs)  # a different configuration goes first in each pass
        for name, command in configs[k:] + configs[:k]:
            out = subprocess.run(command, capture_output=True, text=True, timeout=600)
            if out.returncode != 0:
                print(name + ":", out.stderr, file=sys.stderr)
                return 1
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    rate = statistics.median(tcp) if tcp else None
    if rate is None:
        print("iperf3: not installed (apt-get install -y iperf3)")
    else:
        spread = ", ".join(f"{x / 1e9:.2f}" for x in tcp)
        print(f"iperf3 -c 127.0.0.1 -P 1: {rate / 1e9:.3f} GB/s (passes: {spread})")
    for name, _ in configs:
        print_table(name, runs[name], rate)
    for peer, label in (("grpc", "grpc"), ("torch rpc", "PyTorch RPC")):
        if peer in runs and "ucx" in runs:
            p, u = runs[peer], runs["ucx"]
            print("ucx vs %s: 64MB %.2fx faster, 1MB %.2fx, 4 B round trip %.2fx shorter"
                  % (label, median_of(p, "64MB") / median_of(u, "64MB"),
                     median_of(p, "1MB") / median_of(u, "1MB"),
                     median_of(p, "rtt_4B") / median_of(u, "rtt_4B")))
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
