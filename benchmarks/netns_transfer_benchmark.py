#!/usr/bin/python3
"""RecvTensor across two network namespaces joined by a veth pair (two emulated hosts on one
machine, no rate limit), over gRPC and over UCX with UCX_TLS=tcp, beside iperf3 on the same link,
in one run.

    /usr/bin/python3 benchmarks/netns_transfer_benchmark.py [build/bin/transfer_benchmark]
                     [--passes 3] [--rounds 5]                                (root)

Each pass runs iperf3 (one stream, 3 s) from host 0 to host 1, then, for each transport, a
serving transfer_benchmark on host 1 (--serve --bind) and a pulling one on host 0 (--connect),
the transports in turn. UCX_TLS=tcp: between namespaces of one machine UCX would otherwise find
shared memory and bypass the link. Prints the medians of the passes: 64 MB and 1 MB throughput as
a share of iperf3's, and the 4-byte round trip. Target (issue 15): UCX >= 80% of iperf3 for 64 MB.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUFFIX = str(os.getpid())
NS = [f"sfb_h0_{SUFFIX}", f"sfb_h1_{SUFFIX}"]
VETH = [f"sfbv0_{SUFFIX}"[:15], f"sfbv1_{SUFFIX}"[:15]]
SUBNET = f"10.232.{os.getpid() % 200 + 20}"
ADDR = [f"{SUBNET}.1", f"{SUBNET}.2"]


def sh(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def setup():
    for ns in NS:
        sh("ip", "netns", "add", ns)
    sh("ip", "link", "add", VETH[0], "type", "veth", "peer", "name", VETH[1])
    for i in range(2):
        sh("ip", "link", "set", VETH[i], "netns", NS[i])
        sh("ip", "netns", "exec", NS[i], "ip", "addr", "add", f"{ADDR[i]}/24", "dev", VETH[i])
        sh("ip", "netns", "exec", NS[i], "ip", "link", "set", VETH[i], "up")
        sh("ip", "netns", "exec", NS[i], "ip", "link", "set", "lo", "up")


def teardown():
    for ns in NS:
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split()
        for pid in pids:
            subprocess.run(["kill", "-9", pid])
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def in_ns(i, *cmd):
    return ["ip", "netns", "exec", NS[i], *cmd]


def iperf3():
    server = subprocess.Popen(in_ns(1, "iperf3", "-s", "-1", "-B", ADDR[1], "-p", "5399"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = subprocess.run(in_ns(0, "iperf3", "-c", ADDR[1], "-p", "5399", "-t", "3", "-J"),
                             capture_output=True, text=True, timeout=60)
        return json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"] / 8
    finally:
        server.kill()
        server.wait()


def transfer(binary, transport, rounds, env):
    server = subprocess.Popen(in_ns(1, binary, "--serve", f"--bind={ADDR[1]}",
                                    f"--transport={transport}"),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        line = server.stdout.readline().split()
        if len(line) != 3 or line[0] != "ADDRESS":
            raise RuntimeError(f"the serving transfer_benchmark did not start: {line}")
        out = subprocess.run(in_ns(0, binary, "--json", f"--transport={transport}",
                                   f"--connect={line[1]},{line[2]}", f"--rounds={rounds}"),
                             capture_output=True, text=True, timeout=600, env=env)
        if out.returncode != 0:
            raise RuntimeError(out.stderr[-800:])
        return json.loads(out.stdout)
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary", nargs="?",
                        default=os.path.join(ROOT, "build", "bin", "transfer_benchmark"))
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces)")
        return 77
    binary = os.path.abspath(args.binary)
    env = dict(os.environ, UCX_TLS="tcp")
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} vCPUs; two namespaces, one veth pair, no rate "
          f"limit; UCX_TLS=tcp; {args.passes} passes")
    setup()
    tcp, runs = [], {"grpc": [], "ucx": []}
    try:
        for i in range(args.passes):
            tcp.append(iperf3())
            order = ["grpc", "ucx"] if i % 2 == 0 else ["ucx", "grpc"]
            for t in order:
                runs[t].append(transfer(binary, t, args.rounds, env))
    finally:
        teardown()
    rate = statistics.median(tcp)
    print(f"iperf3 (one stream, veth): {rate / 1e9:.3f} GB/s "
          f"(passes: {', '.join(f'{x / 1e9:.2f}' for x in tcp)})")
    print(f"{'transport':<10} {'64MB':>10} {'GB/s':>6} {'vs iperf3':>9} {'1MB':>10} {'GB/s':>6} "
          f"{'4 B RTT':>10}  target")
    for t in ("grpc", "ucx"):
        m64 = statistics.median(r["64MB"]["median_s"] for r in runs[t])
        m1 = statistics.median(r["1MB"]["median_s"] for r in runs[t])
        rtt = statistics.median(r["rtt_4B"]["median_s"] for r in runs[t])
        gb = (64 << 20) / m64 / 1e9
        print(f"{t:<10} {m64 * 1e3:>7.1f} ms {gb:>6.2f} {100 * gb * 1e9 / rate:>8.0f}% "
              f"{m1 * 1e6:>7.0f} us {(1 << 20) / m1 / 1e9:>6.2f} {rtt * 1e6:>7.1f} us  "
              f"{'>= 80% of iperf3' if t == 'ucx' else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
