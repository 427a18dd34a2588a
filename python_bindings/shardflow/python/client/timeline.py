"""TF1's tensorflow.python.client.timeline: a traced step's StepStats as Chrome trace-event
JSON (open it in chrome://tracing or ui.perfetto.dev).

Example::

    from shardflow.python.client import timeline
    md = sf.RunMetadata()
    sess.run(train_op, feeds, options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE),
             run_metadata=md)
    trace = timeline.Timeline(md.step_stats).generate_chrome_trace_format()
    open("timeline.json", "w").write(trace)

The trace has TF's layout: a process per device named "<device> Compute", a complete ("X")
event per node execution on the thread that ran it (name: the op, args: the node's name, op
and inputs, read from timeline_label "name = Op(a, b)"), and with show_dataflow a flow arrow
from each producer to the node that read its output. show_memory is accepted and adds
nothing (the engine does not record tensor lifetimes). sf.profiler.chrome_trace gives the
engine's own trace of the same step, with Send -> Recv arrows across devices.
"""

import json
import re

_LABEL = re.compile(r"(.*) = (.*)\((.*)\)")


def _parse_label(label, node_name):
    """(op, [inputs]) from a timeline_label "name = Op(a, b)"; ("unknown", []) otherwise."""
    match = _LABEL.match(label or "")
    if not match:
        return "unknown", []
    inputs = [i.strip() for i in match.group(3).split(",") if i.strip()]
    return match.group(2), inputs


class Timeline:
    """TF1's timeline.Timeline(step_stats, graph=None): `step_stats` is a StepStats, as
    ``run_metadata.step_stats`` gives; `graph` is accepted and not needed."""

    def __init__(self, step_stats, graph=None):
        if not hasattr(step_stats, "dev_stats"):
            raise TypeError("Timeline takes a StepStats (run_metadata.step_stats), not %r"
                            % (step_stats,))
        self._step_stats = step_stats
        self._graph = graph

    def generate_chrome_trace_format(self, show_dataflow=True, show_memory=False,
                                     op_time="schedule"):
        """The step as a Chrome trace JSON string (a {"traceEvents": [...]} object).
        `op_time` ("schedule", "gpu" or "all") is accepted; the engine records one span per
        node, so all three give the same events."""
        if op_time not in ("schedule", "gpu", "all"):
            raise ValueError("op_time is 'schedule', 'gpu' or 'all', not %r" % (op_time,))
        events = []
        produced = {}  # node name -> (pid, tid, end time) of its execution
        consumers = []  # (pid, tid, start time, [inputs])
        for pid, dev in enumerate(self._step_stats.dev_stats):
            events.append({"name": "process_name", "ph": "M", "pid": pid,
                           "args": {"name": "%s Compute" % dev.device}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                           "args": {"sort_index": pid}})
            for ns in dev.node_stats:
                op, inputs = _parse_label(ns.timeline_label, ns.node_name)
                start = ns.all_start_micros
                duration = max(ns.op_end_rel_micros, ns.all_end_rel_micros)
                args = {"name": ns.node_name, "op": op}
                for i, name in enumerate(inputs):
                    args["input%d" % i] = name
                tid = int(ns.thread_id)
                events.append({"ph": "X", "cat": "Op", "name": op, "pid": pid, "tid": tid,
                               "ts": start, "dur": duration, "args": args})
                produced.setdefault(ns.node_name, (pid, tid, start, duration))
                consumers.append((pid, tid, start, inputs))
        if show_dataflow:
            events.extend(self._flows(produced, consumers))
        return json.dumps({"traceEvents": events}, separators=(",", ":"))

    @staticmethod
    def _flows(produced, consumers):
        flows, flow_id = [], 0
        for pid, tid, start, inputs in consumers:
            for name in inputs:
                producer = produced.get(name.split(":")[0])
                if producer is None:
                    continue
                p_pid, p_tid, p_start, p_duration = producer
                if p_start + p_duration > start:
                    continue  # not a dependence this trace can show
                # The flow starts inside the producer's slice and ends where the consumer
                # starts ("bp": "e" binds it to the enclosing slice).
                flows.append({"ph": "s", "cat": "DataFlow", "name": name, "id": flow_id,
                              "pid": p_pid, "tid": p_tid, "ts": p_start + p_duration})
                flows.append({"ph": "t", "cat": "DataFlow", "name": name, "id": flow_id,
                              "pid": pid, "tid": tid, "ts": start, "bp": "e"})
                flow_id += 1
        return flows


__all__ = ["Timeline"]
