"""Profiling from Python: Chrome trace JSON with matching flow events, placement report, DOT."""

import json

import numpy as np
import pytest

import shardflow as sf


@pytest.fixture(scope="module")
def traced():
    g = sf.Graph()
    with g.as_default():
        x = sf.placeholder(sf.float32, [None, 16], name="x")
        with sf.device("/device:CPU:0"):
            h = sf.layers.Dense(32, activation=sf.nn.relu, seed=1, name="first")(x)
        with sf.device("/device:CPU:1"):
            y = sf.layers.Dense(4, seed=2, name="second")(h)
        loss = sf.reduce_mean(y * y)
        train = sf.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = sf.global_variables_initializer()
    md = sf.RunMetadata()
    with sf.Session(graph=g, config=sf.ConfigProto(cpu_device_count=2)) as sess:
        sess.run(init)
        sess.run([loss, train], {x: np.ones((8, 16), np.float32)},
                 options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE), run_metadata=md)
    return g, md


def test_metadata_has_stats_for_both_devices(traced):
    _, md = traced
    assert len(md.devices) == 2
    assert {n.split("device:")[-1] for n in md.devices} == {"CPU:0", "CPU:1"}
    stats = md.node_stats()
    assert all(s["end_micros"] >= s["start_micros"] for s in stats)
    # Fused away by the graph optimizer, the MatMuls still report where they were placed.
    assert md.placement["first/MatMul"].endswith("CPU:0")
    assert md.placement["second/MatMul"].endswith("CPU:1")
    assert md.placement["first/Relu"].endswith("CPU:0")
    # it round-trips as a protobuf
    copy = sf.RunMetadata()
    copy.ParseFromString(md.SerializeToString())
    assert copy.placement == md.placement


def test_chrome_trace_is_valid_json_with_matching_flows(traced):
    _, md = traced
    trace = json.loads(sf.profiler.chrome_trace(md))
    events = trace["traceEvents"]
    names = {e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert any("CPU:0" in n for n in names) and any("CPU:1" in n for n in names)
    slices = [e for e in events if e.get("ph") == "X"]
    # The graph optimizer fused first/MatMul + BiasAdd + Relu into one node named after the Relu.
    assert any(e["name"] == "first/Relu" and e["cat"] == "_FusedMatMul" for e in slices)
    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    finishes = {e["id"]: e for e in events if e.get("ph") == "f"}
    assert starts, "no Send -> Recv flow in a two-device step"
    assert set(starts) == set(finishes)
    for i, s in starts.items():
        f = finishes[i]
        assert f["ts"] >= s["ts"]
        assert s["pid"] != f["pid"]  # the arrow goes from one device to the other


def test_placement_report_names_both_devices(traced):
    _, md = traced
    report = sf.profiler.placement_report(md)
    assert "CPU:0" in report and "CPU:1" in report


def test_dot_has_a_cluster_per_device(traced):
    g, md = traced
    dot = sf.profiler.to_dot(g, md)
    assert dot.lstrip().startswith("digraph")
    assert dot.count("subgraph \"cluster_") == 2
    assert "first/Relu" in dot  # the fused first layer (docs/optimizer.md)
    # without metadata: the requested devices
    assert "digraph" in sf.profiler.to_dot(g)


def test_profiler_rejects_other_objects():
    with pytest.raises(TypeError):
        sf.profiler.chrome_trace({"not": "metadata"})
