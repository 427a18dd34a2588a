#!/usr/bin/env python3
"""Profile one training step of a model split over two CPU devices.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/profile_two_devices.py [--out DIR]

Writes DIR/step.json (open in ui.perfetto.dev: one row per device, arrows for every tensor that
crossed between them), DIR/placed.dot (render with `dot -Tsvg`) and prints the placement report.
"""

import argparse
import json
import os

import numpy as np

import shardflow as sf


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="profile_out")
    p.add_argument("--batch-size", type=int, default=128)
    a = p.parse_args()

    g = sf.Graph()
    with g.as_default():
        x = sf.placeholder(sf.float32, [None, 784], name="x")
        y = sf.placeholder(sf.int32, [None], name="y")
        model = sf.layers.Sequential([
            sf.layers.Dense(256, activation=sf.nn.relu, seed=1, device="/device:CPU:0"),
            sf.layers.Dense(256, activation=sf.nn.relu, seed=2, device="/device:CPU:1"),
            sf.layers.Dense(10, seed=3, device="/device:CPU:0"),
        ])
        loss = sf.reduce_mean(
            sf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x)))
        train = sf.train.MomentumOptimizer(0.01).minimize(loss)
        init = sf.global_variables_initializer()

    rng = np.random.default_rng(0)
    feeds = {x: rng.random((a.batch_size, 784), dtype=np.float32),
             y: rng.integers(0, 10, a.batch_size).astype(np.int32)}
    with sf.Session(graph=g, config=sf.ConfigProto(cpu_device_count=2)) as sess:
        sess.run(init)
        sess.run(train, feeds)  # the first step places and partitions the graph
        md = sf.RunMetadata()
        sess.run([loss, train], feeds,
                 options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE), run_metadata=md)

    os.makedirs(a.out, exist_ok=True)
    trace = sf.profiler.chrome_trace(md)
    with open(os.path.join(a.out, "step.json"), "w") as f:
        f.write(trace)
    with open(os.path.join(a.out, "placed.dot"), "w") as f:
        f.write(sf.profiler.to_dot(g, md))
    print(sf.profiler.placement_report(md))
    events = json.loads(trace)["traceEvents"]
    flows = sum(1 for e in events if e.get("ph") == "s")
    print("wrote %s/step.json (%d events, %d transfers between devices) and %s/placed.dot"
          % (a.out, len(events), flows, a.out))


if __name__ == "__main__":
    main()
