#!/usr/bin/env python3
"""Compares the Google Benchmark binaries of two builds side by side, in one run.

    benchmarks/compare_builds.py BASE_BUILD_DIR NEW_BUILD_DIR [--rounds 5] \
        [--binaries executor_benchmark matmul_benchmark towers_benchmark]

Each round runs every binary of both builds, alternating which build goes first, so that the
machine's drift (this VM gives 1.0-2.0 effective cores from minute to minute) falls on both
alike. Prints, per benchmark, the median real time of each build over the rounds and the ratio
new/base (below 1.0 = the new build is faster). Use it to check that a refactor costs nothing:
the ratios should sit within the rounds' spread around 1.0.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(binary, extra):
    with tempfile.NamedTemporaryFile(suffix=".json") as out_file:
        out = subprocess.run([binary, "--benchmark_repetitions=1", "--benchmark_out_format=json",
                              f"--benchmark_out={out_file.name}"] + extra,
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            sys.exit(f"{binary} failed ({out.returncode}):\n{out.stderr[-2000:]}")
        data = json.load(open(out_file.name))
    times = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
        times[b["name"]] = b["real_time"] * scale
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--binaries", nargs="+",
                        default=["executor_benchmark", "matmul_benchmark", "towers_benchmark"])
    parser.add_argument("--benchmark_args", nargs="*", default=[],
                        help="passed to every binary (e.g. --benchmark_filter=...)")
    args = parser.parse_args()
    results = {}  # (binary, name) -> {"base": [...], "new": [...]}
    for r in range(args.rounds):
        order = [("base", args.base), ("new", args.new)]
        if r % 2:
            order.reverse()
        for binary in args.binaries:
            for label, build in order:
                path = os.path.join(build, "bin", binary)
                for name, t in run(path, args.benchmark_args).items():
                    results.setdefault((binary, name), {"base": [], "new": []})[label].append(t)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{'benchmark':52s} {'base us':>11s} {'new us':>11s} {'new/base':>9s} {'spread':>8s}")
    for (binary, name), v in sorted(results.items()):
        if not v["base"] or not v["new"]:
            continue
        b, n = statistics.median(v["base"]), statistics.median(v["new"])
        spread = (max(v["base"]) - min(v["base"])) / b if b else 0
        print(f"{binary + ':' + name:52.52s} {b:11.1f} {n:11.1f} {n / b:9.3f} {spread:7.1%}")


if __name__ == "__main__":
    main()
