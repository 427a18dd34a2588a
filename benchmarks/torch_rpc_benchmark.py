#!/usr/bin/python3
"""PyTorch RPC (TensorPipe) between two processes on loopback: the peer transfer_benchmark is
compared with, in the same JSON shape.

    /usr/bin/python3 benchmarks/torch_rpc_benchmark.py [--json] [--rounds N]

Process 0 calls rpc_sync on process 1 for a uint8 tensor of 4 B, 4 KB, 1 MB or 64 MB that
process 1 made once (so only the transfer is timed, as transfer_benchmark times only RecvTensor);
rtt_4B calls are back to back, as transfer_benchmark's rtt_4B pulls are. The sizes take turns in
every round (default 15): 100 calls of 4 B and of 4 KB, 20 of 1 MB, 2 of 64 MB. One intra-op
thread per process, as the shardflow tasks it is compared with.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

SIZES = [("rtt_4B", 4, 100), ("4KB", 4 << 10, 100), ("1MB", 1 << 20, 20), ("64MB", 64 << 20, 2)]
_TENSORS = {}


def fetch(n):
    """Runs on process 1: the tensor of n bytes, made on first use."""
    import torch
    if n not in _TENSORS:
        _TENSORS[n] = torch.arange(n, dtype=torch.int64).to(torch.uint8)
    return _TENSORS[n]


def _worker(rank, port, rounds, queue):
    import torch
    import torch.distributed.rpc as rpc
    torch.set_num_threads(1)
    options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=4,
                                              init_method=f"tcp://127.0.0.1:{port}")
    rpc.init_rpc(f"w{rank}", rank=rank, world_size=2, rpc_backend_options=options)
    if rank == 0:
        times = {name: [] for name, _, _ in SIZES}
        for name, n, _ in SIZES:  # warm-up: the peer makes its tensors, connections open
            for _ in range(3):
                assert rpc.rpc_sync("w1", fetch, args=(n,)).numel() == n
        for _ in range(rounds):
            for name, n, calls in SIZES:
                for _ in range(calls):
                    start = time.perf_counter()
                    t = rpc.rpc_sync("w1", fetch, args=(n,))
                    times[name].append(time.perf_counter() - start)
                    if t.numel() != n:
                        raise RuntimeError(f"{name}: got {t.numel()} bytes")
        queue.put({name: {"bytes": n, "iterations": len(times[name]),
                          "median_s": statistics.median(times[name]), "min_s": min(times[name])}
                   for name, n, _ in SIZES})
    rpc.shutdown()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_worker, args=(r, port, args.rounds, queue)) for r in range(2)]
    for p in procs:
        p.start()
    result = queue.get(timeout=600)
    for p in procs:
        p.join(timeout=60)
    if args.json:
        print(json.dumps(result))
    else:
        for name, r in result.items():
            print(f"{name:<8} {r['bytes']:>10} {r['median_s'] * 1e6:>10.1f} us "
                  f"{r['bytes'] / r['median_s'] / 1e9:>8.3f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
