#!/usr/bin/python3
"""The Python overhead of Session.run: one small feed (float32 [16]) and one small fetch (x * 2)
through `sess.run(y, {x: a})`, against the same Session::Run from C++ (python_overhead_cpp).

Rounds alternate C++ and Python so both see the same machine; the table shows medians.
Target (issue 6): overhead <= 10 us per call.

usage: PYTHONPATH=build/python /usr/bin/python3 benchmarks/python_overhead.py
           [--build-dir build] [--calls 20000] [--rounds 7]
"""

import argparse
import os
import statistics
import subprocess
import time

import numpy as np

import shardflow as sf


def cpp_round(binary, calls, threads):
    out = subprocess.run([binary, "--calls", str(calls), "--rounds", "1", "--threads",
                          str(threads)], capture_output=True, text=True, check=True).stdout
    return float(out.split("median_us_per_call")[1])


def python_session(threads):
    g = sf.Graph()
    with g.as_default():
        x = sf.placeholder(sf.float32, [16], name="x")
        y = sf.multiply(x, 2.0, name="y")
    sess = sf.Session(graph=g, config=sf.ConfigProto(inter_op_threads=threads,
                                                     intra_op_threads=threads))
    a = np.arange(16, dtype=np.float32)
    for _ in range(1000):
        sess.run(y, {x: a})
    return sess, x, y, a


def python_round(sess, x, y, a, calls):
    run = sess.run
    start = time.perf_counter()
    for _ in range(calls):
        out = run(y, {x: a})
    elapsed = time.perf_counter() - start
    assert out[3] == 6.0
    return elapsed / calls * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default=os.environ.get("SHARDFLOW_BUILD_DIR", "build"))
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    binary = os.path.join(a.build_dir, "bin", "python_overhead_cpp")
    sess, x, y, arr = python_session(a.threads)
    cpp, py = [], []
    for _ in range(a.rounds):
        cpp.append(cpp_round(binary, a.calls, a.threads))
        py.append(python_round(sess, x, y, arr, a.calls))
    c, q = statistics.median(cpp), statistics.median(py)
    print("sess.run with one float32[16] feed and one fetch; %d calls x %d alternating rounds"
          % (a.calls, a.rounds))
    print("%-28s %10s" % ("", "us/call"))
    print("%-28s %10.2f   (rounds: %s)" % ("C++ Session::Run", c,
                                          " ".join("%.2f" % v for v in cpp)))
    print("%-28s %10.2f   (rounds: %s)" % ("Python sess.run", q,
                                          " ".join("%.2f" % v for v in py)))
    print("%-28s %10.2f   target <= 10" % ("Python overhead", q - c))


if __name__ == "__main__":
    main()
