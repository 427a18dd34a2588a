#!/usr/bin/python3
"""RecvTensor throughput and round trip beside raw TCP (iperf3, one stream), in one run.

    /usr/bin/python3 benchmarks/transfer_benchmark.py [build-dist/bin/transfer_benchmark]

Runs iperf3 -s / iperf3 -c 127.0.0.1 (one stream, 5 s) and then transfer_benchmark --json
(two processes on loopback), and prints one table: GB/s for 4 KB, 1 MB and 64 MB tensors, each as
a share of iperf3's rate, and the median round trip of a 4-byte tensor. Exit status 0 when both
ran, whatever the numbers (the targets are printed beside them).
"""
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def iperf3_bytes_per_s(port=5299, seconds=5):
    if shutil.which("iperf3") is None:
        return None, "iperf3 not installed (apt-get install -y iperf3)"
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds),
                              "-P", "1", "-J"], capture_output=True, text=True, timeout=60)
        report = json.loads(out.stdout)
        return report["end"]["sum_received"]["bits_per_second"] / 8, None
    finally:
        server.kill()
        server.wait()


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build-dist", "bin",
                                                                "transfer_benchmark")
    if not os.path.exists(binary):
        binary = os.path.join(ROOT, "build", "bin", "transfer_benchmark")
    tcp, why = iperf3_bytes_per_s()
    out = subprocess.run([binary, "--json"], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        return 1
    results = json.loads(out.stdout)
    print(f"machine: {os.cpu_count()} CPUs; loopback; one TCP connection each")
    if tcp is None:
        print(f"iperf3: {why}")
    else:
        print(f"iperf3 -c 127.0.0.1 -P 1: {tcp / 1e9:.3f} GB/s")
    print(f"{'tensor':<8} {'median':>12} {'GB/s':>8} {'vs iperf3':>10}   target")
    for name in ("4KB", "1MB", "64MB"):
        r = results[name]
        rate = r["bytes"] / r["median_s"]
        ratio = f"{100 * rate / tcp:.0f}%" if tcp else "n/a"
        target = ">= 80% of iperf3" if name == "64MB" else ""
        print(f"{name:<8} {r['median_s'] * 1e6:>9.1f} us {rate / 1e9:>8.3f} {ratio:>10}   {target}")
    rtt = results["rtt_4B"]
    print(f"{'4 B RTT':<8} {rtt['median_s'] * 1e6:>9.1f} us {'':>8} {'':>10}   <= 100 us"
          f" (min {rtt['min_s'] * 1e6:.1f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
