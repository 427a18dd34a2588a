"""Profiler outputs for one traced step, and TF1's model analysis (profile, Profiler,
ProfileOptionBuilder, advise, write_op_log: shardflow/profiler_model.py).

Example::

    md = sf.RunMetadata()
    sess.run(train_op, feeds, options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE),
             run_metadata=md)
    open("step.json", "w").write(sf.profiler.chrome_trace(md))   # open in ui.perfetto.dev
    print(sf.profiler.placement_report(md))                      # time and bytes per device
    open("placed.dot", "w").write(sf.profiler.to_dot(sess.graph, md))

The formats are those of the C++ profiler (runtime/profiler.h; docs/profiling.md).
"""

from shardflow import _shardflow as _C


def _check(md):
    if not isinstance(md, _C.RunMetadata):
        raise TypeError("expected a sf.RunMetadata, not %r" % (md,))


def chrome_trace(run_metadata):
    """The step as Chrome trace-event JSON (a str): one process per device, a slice per op,
    a flow arrow for every Send -> Recv."""
    _check(run_metadata)
    return _C.chrome_trace_json(run_metadata)


def placement_report(run_metadata):
    """Per-device busy/idle time, bytes in/out and the busiest ops, as text tables."""
    _check(run_metadata)
    return _C.placement_report(run_metadata)


def to_dot(graph, run_metadata=None):
    """The placed graph as Graphviz DOT, one coloured cluster per device; edges that cross
    devices are bold and labelled with their bytes. Render with ``dot -Tsvg``."""
    if run_metadata is not None:
        _check(run_metadata)
    return _C.placed_graph_dot(graph._handle, run_metadata)


def dot_to_svg(dot):
    """Renders DOT with Graphviz's `dot` (RuntimeError naming the package when missing)."""
    return _C.dot_to_svg(dot)


def write_chrome_trace(run_metadata, path):
    """Writes chrome_trace(run_metadata) to `path`."""
    with open(path, "w") as f:
        f.write(chrome_trace(run_metadata))


# TF1's model analysis (tf.profiler.profile, Profiler, ProfileOptionBuilder, ...):
# shardflow/profiler_model.py, profiler_options.py and profiler_flops.py.
from shardflow.profiler_model import (ALL_ADVICE, AdviceProto, GraphNodeProto,  # noqa: E402,F401
                                      MultiGraphNodeProto, OpLogProto, Profiler, advise,
                                      profile, read_op_log, write_op_log)
from shardflow.profiler_options import ProfileOptionBuilder  # noqa: E402,F401

__all__ = ["ALL_ADVICE", "AdviceProto", "GraphNodeProto", "MultiGraphNodeProto", "OpLogProto",
           "ProfileOptionBuilder", "Profiler", "advise", "chrome_trace", "dot_to_svg",
           "placement_report", "profile", "read_op_log", "to_dot", "write_chrome_trace",
           "write_op_log"]
