"""TF 1.15's tf.profiler model analysis: profile(), Profiler, advise() and write_op_log() over a
graph's ops, with FLOPs from static shapes (shardflow/profiler_flops.py), parameters from the
variables, and time and bytes from a traced RunMetadata when one is given.

Example (TF1's FLOP-counting idiom)::

    g = tf.get_default_graph()
    flops = tf.profiler.profile(g, options=tf.profiler.ProfileOptionBuilder.float_operation())
    print(flops.total_float_ops)
    params = tf.profiler.profile(
        g, options=tf.profiler.ProfileOptionBuilder.trainable_variables_parameter())
    print(params.total_parameters)

The result is a GraphNodeProto ("scope" and "graph" views) or MultiGraphNodeProto ("op" and
"code" views) with TF's field names: name, float_ops / total_float_ops, parameters /
total_parameters, exec_micros / total_exec_micros, requested_bytes / total_requested_bytes,
run_count / total_run_count and children (graph_nodes for the op view). As TF, a node is shown
when its own values pass the options' min_* filters and its name the show/hide regexes;
account_displayed_op_only counts only shown ops in the totals, and account_type_regexes
matches an op's type or "_trainable_variables" (a trainable variable's op).

How it differs from TF's: the "graph" view lists the shown ops flat under the root (TF nests them
by inputs), and the "code" view groups by op type as the "op" view does (shardflow keeps no
Python tracebacks of ops); pprof output is a text report. An op whose shapes are unknown when
the graph is built counts no FLOPs (logged, as TF does), unless a traced RunMetadata recorded
them (or they follow from recorded ones: profiler_flops.propagate_shapes). Not thread safe.
"""

import json
import os
import re

from shardflow import tf_logging as logging
from shardflow.profiler_flops import IncompleteShapeError, op_flops, propagate_shapes
from shardflow.profiler_options import TRAINABLE_VARIABLES, ProfileOptionBuilder

_ROOT = "_TFProfRoot"
_OP_LOG_FILE = "tfprof_log"
_DEFAULT = object()


class GraphNodeProto:
    """One node of a profile (TF's tfprof GraphNodeProto): an op or a name scope with its own
    values and the totals of what its subtree accounts for."""

    _FIELDS = ("float_ops", "parameters", "exec_micros", "requested_bytes", "run_count")

    def __init__(self, name, own=None, total=None, children=None):
        self.name = name
        for i, field in enumerate(self._FIELDS):
            setattr(self, field, int(own[i]) if own else 0)
            setattr(self, "total_" + field, int(total[i]) if total else 0)
        self.children = list(children or [])
        self.total_definition_count = 0
        self.definition_count = 0
        self.devices = []
        self.shapes = []
        self._scope_only = False     # a name scope with no op of its name: shown as "--"

    def __repr__(self):
        return "<%s %r total_float_ops=%d total_parameters=%d children=%d>" % (
            type(self).__name__, self.name, self.total_float_ops, self.total_parameters,
            len(self.children))


class MultiGraphNodeProto(GraphNodeProto):
    """A node of the "op" view: one op type, with the ops of that type as graph_nodes."""

    def __init__(self, name, own=None, total=None, children=None, graph_nodes=None):
        super().__init__(name, own, total, children)
        self.graph_nodes = list(graph_nodes or [])


class AdviceProto:
    """What advise() found: checkers maps a checker's name to a Checker whose `reports` are
    lines of advice."""

    class Checker:
        def __init__(self, reports=None):
            self.reports = list(reports or [])

        def __repr__(self):
            return "<AdviceProto.Checker reports=%r>" % (self.reports,)

    def __init__(self, checkers=None):
        self.checkers = dict(checkers or {})

    def __repr__(self):
        return "<AdviceProto checkers=%s>" % sorted(self.checkers)


class OpLogProto:
    """Extra per-op information for profile(op_log=...) and write_op_log: log_entries, each
    with name, float_ops and types (TF's OpLogEntry fields)."""

    class OpLogEntry:
        def __init__(self, name="", float_ops=0, types=()):
            self.name = name
            self.float_ops = int(float_ops)
            self.types = list(types)

    def __init__(self, log_entries=None):
        self.log_entries = list(log_entries or [])
        self.id_to_string = {}


# ---- per-op statistics ----------------------------------------------------------------------

class _OpStat:
    __slots__ = ("name", "types", "values")

    def __init__(self, name, types, values):
        self.name = name
        self.types = types          # the op's type and account types
        self.values = values        # [float_ops, parameters, exec_micros, bytes, run_count]


_ARG_NODE = re.compile(r"^_arg_(.+)_(\d+)$")


def _traced(run_meta):
    """({tensor name: shape}, {node: [micros, bytes, count]}) of a traced RunMetadata."""
    shapes, nodes = {}, {}
    if run_meta is None:
        return shapes, nodes
    try:
        step_stats = run_meta.step_stats
    except Exception as e:  # noqa: BLE001 (python3-protobuf missing: no shapes, no bytes)
        logging.warning("profile: the RunMetadata's step_stats cannot be read (%s); its times "
                        "and shapes are left out", e)
        return shapes, nodes
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            name = ns.node_name
            m = _ARG_NODE.match(name)
            if m:  # a fed placeholder runs as _arg_<name>_<feed index>
                name = m.group(1)
            entry = nodes.setdefault(name, [0, 0, 0])
            entry[0] += int(ns.op_end_rel_micros or ns.all_end_rel_micros)
            entry[2] += 1
            for out in ns.output:
                desc = out.tensor_description
                shapes["%s:%d" % (name, out.slot)] = [int(d.size) for d in desc.shape.dim]
                entry[1] += int(desc.allocation_description.requested_bytes)
    return shapes, nodes


def _op_log_entries(op_log):
    """{op name: (float_ops, types)} of an OpLogProto, an object with log_entries, or a dict
    {name: {"float_ops": n, "types": [...]}}."""
    if op_log is None:
        return {}
    if isinstance(op_log, dict):
        return {name: (int(e.get("float_ops", 0)), list(e.get("types", [])))
                for name, e in op_log.items()}
    entries = getattr(op_log, "log_entries", None)
    if entries is None:
        raise TypeError("op_log must be a tf.profiler.OpLogProto (or a dict of op name -> "
                        "{'float_ops', 'types'}), not %r" % (op_log,))
    return {e.name: (int(getattr(e, "float_ops", 0)), list(getattr(e, "types", [])))
            for e in entries}


def _op_stats(graph, run_meta=None, op_log=None):
    """One _OpStat per op of `graph`, in graph order."""
    from shardflow.variables import global_variables, local_variables
    shapes, traced = _traced(run_meta)
    extra = _op_log_entries(op_log)
    variables = {}
    for v in global_variables(graph=graph) + local_variables(graph=graph):
        variables[v.op.name] = v
    graph_ops = graph.get_operations()
    if shapes:
        propagate_shapes(graph_ops, shapes)
    stats, incomplete = [], 0
    for op in graph_ops:
        try:
            flops = op_flops(op, shapes) or 0
        except IncompleteShapeError:
            flops = 0
            incomplete += 1
        types = [op.type]
        params = 0
        v = variables.get(op.name)
        if v is not None:
            dims = v.shape.as_list() if v.shape.ndims is not None else None
            if dims is not None and None not in dims:
                params = 1
                for d in dims:
                    params *= int(d)
            if v.trainable:
                types.append(TRAINABLE_VARIABLES)
        if op.name in extra:
            logged_flops, logged_types = extra[op.name]
            if logged_flops > 0:
                flops = logged_flops
            types.extend(t for t in logged_types if t not in types)
        micros, nbytes, count = traced.get(op.name, (0, 0, 0))
        stats.append(_OpStat(op.name, types, [flops, params, micros, nbytes, count]))
    if incomplete:
        logging.info("%d ops have no flops stats due to incomplete shapes.", incomplete)
    return stats


# ---- filters ----------------------------------------------------------------------------------

class _Filter:
    """The options' show and account rules."""

    def __init__(self, options):
        self.options = options
        self._show = [re.compile(r) for r in options.get("show_name_regexes", [".*"])]
        self._hide = [re.compile(r) for r in options.get("hide_name_regexes", [])]
        accounts = list(options.get("account_type_regexes", [".*"]))
        self._all_types = accounts == [".*"]
        self._accounts = [re.compile(r) for r in accounts]
        self.max_depth = int(options.get("max_depth", 100))
        micros = max(options.get("min_micros", 0), options.get("min_accelerator_micros", 0),
                     options.get("min_cpu_micros", 0))
        self._mins = [options.get("min_float_ops", 0), options.get("min_params", 0), micros,
                      options.get("min_bytes", 0), options.get("min_occurrence", 0)]
        self.displayed_only = bool(options.get("account_displayed_op_only", False))

    def shows(self, name, values, depth=0):
        if name == _ROOT:
            return True
        if depth > self.max_depth:
            return False
        if any(v < m for v, m in zip(values, self._mins)):
            return False
        if not any(r.fullmatch(name) for r in self._show):
            return False
        return not any(r.fullmatch(name) for r in self._hide)

    def type_matches(self, op_type):
        return self._all_types or any(r.fullmatch(op_type) for r in self._accounts)

    def kept(self, stat):
        """Whether the op's types are accounted (a node is kept in a view when it or one of
        its descendants is, as TF's Account step)."""
        return any(self.type_matches(t) for t in stat.types)

    def accounts(self, stat, depth=0):
        """Whether the op's values go into the totals."""
        return self.kept(stat) and (not self.displayed_only
                                    or self.shows(stat.name, stat.values, depth))


def _sort(nodes, order_by):
    if order_by in (None, "name"):
        return sorted(nodes, key=lambda n: n.name)
    field = {"params": "parameters", "micros": "exec_micros", "accelerator_micros":
             "exec_micros", "cpu_micros": "exec_micros", "bytes": "requested_bytes",
             "peak_bytes": "requested_bytes", "residual_bytes": "requested_bytes",
             "output_bytes": "requested_bytes", "occurrence": "run_count"}.get(order_by, order_by)
    if field not in GraphNodeProto._FIELDS:
        return sorted(nodes, key=lambda n: n.name)
    return sorted(nodes, key=lambda n: (-getattr(n, "total_" + field), n.name))


def _add(a, b):
    return [x + y for x, y in zip(a, b)]


_ZERO = [0, 0, 0, 0, 0]


# ---- views -----------------------------------------------------------------------------------

def _scope_view(stats, flt, order_by, flat=False):
    """The name-scope tree (or, with flat, the ops under the root) as GraphNodeProtos."""
    by_name = {s.name: s for s in stats}
    kids = {_ROOT: []}
    for s in stats:
        parts = s.name.split("/")
        parent = _ROOT
        for i in range(1, len(parts) + 1):
            name = "/".join(parts[:i]) if not flat else s.name
            if name not in kids:
                kids[name] = []
                kids[parent].append(name)
            parent = name
            if flat:
                break

    def build(name, depth):
        """(shown protos for this subtree, accounted totals of the subtree); ([], None) when
        nothing in the subtree is accounted."""
        stat = by_name.get(name)
        kept = stat is not None and flt.kept(stat)
        own = stat.values if stat is not None else _ZERO
        total = own if kept and flt.accounts(stat, depth) else _ZERO
        shown = []
        for child in kids.get(name, []):
            protos, child_total = build(child, depth + 1)
            if child_total is not None:
                kept = True
                shown.extend(protos)
                total = _add(total, child_total)
        if not kept and name != _ROOT:
            return [], None
        if flt.shows(name, own, depth):
            node = GraphNodeProto(name, own, total, _sort(shown, order_by))
            node._scope_only = stat is None
            return [node], total
        return shown, total

    protos, _ = build(_ROOT, 0)
    return protos[0]


def _op_view(stats, flt, order_by):
    """Op types under the root, each a MultiGraphNodeProto of its accounted ops."""
    groups = {}
    total = _ZERO
    for s in stats:
        if not flt.accounts(s):
            continue
        total = _add(total, s.values)
        for t in s.types:
            if flt.type_matches(t):
                groups.setdefault(t, []).append(s)
    children = []
    for op_type, members in groups.items():
        values = _ZERO
        for s in members:
            values = _add(values, s.values)
        if flt.shows(op_type, values, 1):
            nodes = [GraphNodeProto(s.name, s.values, s.values) for s in members]
            children.append(MultiGraphNodeProto(op_type, values, values,
                                                graph_nodes=_sort(nodes, order_by)))
    root = MultiGraphNodeProto(_ROOT, None, total, _sort(children, order_by))
    root._scope_only = True
    return root


# ---- output ----------------------------------------------------------------------------------

def _number(n):
    for limit, suffix in ((1e9, "b"), (1e6, "m"), (1e3, "k")):
        if n >= limit:
            return "%.2f%s" % (n / limit, suffix)
    return "%d" % n


def _time(us):
    if us >= 1e6:
        return "%.2fsec" % (us / 1e6)
    if us >= 1e3:
        return "%.2fms" % (us / 1e3)
    return "%dus" % us


def _memory(b):
    for limit, suffix in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if b >= limit:
            return "%.2f%s" % (b / limit, suffix)
    return "%dB" % b


_COLUMNS = {"float_ops": ("# float_ops", "float_ops", lambda n: _number(n), " flops"),
            "params": ("# parameters", "parameters", lambda n: _number(n), " params"),
            "micros": ("total execution time", "exec_micros", _time, ""),
            "bytes": ("requested bytes", "requested_bytes", _memory, ""),
            "occurrence": ("occurrence", "run_count", lambda n: "%d" % n, "")}


def _report(root, options):
    cols = [c for c in options.get("select", []) if c in _COLUMNS] or ["float_ops"]
    lines = ["node name | " + " | ".join(_COLUMNS[c][0] for c in cols)]

    def cell(node, col):
        _, field, fmt, unit = _COLUMNS[col]
        own = "--" if getattr(node, "_scope_only", False) else fmt(getattr(node, field))
        return "%s/%s%s" % (own, fmt(getattr(node, "total_" + field)), unit)

    def walk(node, indent):
        lines.append("%s%s (%s)" % ("  " * indent, node.name,
                                    ", ".join(cell(node, c) for c in cols)))
        for child in node.children:
            walk(child, indent + 1)
        for child in getattr(node, "graph_nodes", []) if node.name != _ROOT else []:
            walk(child, indent + 1)
    walk(root, 0)
    return "\n".join(lines) + "\n"


def _output_target(output):
    """(kind, {key: value}) of an options' output string such as 'file:outfile=/tmp/x'."""
    kind, _, rest = (output or "stdout").partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        params[key] = value
    if kind not in ("stdout", "none", "file", "timeline", "pprof"):
        raise ValueError("profile: unknown output %r (stdout, none, file:outfile=..., "
                         "timeline:outfile=..., pprof:outfile=...)" % (output,))
    if kind in ("file", "timeline", "pprof") and not params.get("outfile"):
        raise ValueError("profile: output %r names no outfile" % (output,))
    return kind, params


def _emit(root, options, run_meta):
    kind, params = _output_target(options.get("output"))
    if kind == "none":
        return
    if kind == "timeline":
        from shardflow import profiler
        trace = profiler.chrome_trace(run_meta) if run_meta is not None else \
            json.dumps({"traceEvents": []})
        with open(params["outfile"], "w") as f:
            f.write(trace)
        return
    text = "Profile:\n" + _report(root, options)
    if kind == "stdout":
        print(text, end="")
    else:
        with open(params["outfile"], "w") as f:
            f.write(text)


# ---- the API --------------------------------------------------------------------------------

def _graph_or_default(graph):
    from shardflow.framework import Graph, get_default_graph
    graph = get_default_graph() if graph is None else graph
    if not isinstance(graph, Graph):
        raise TypeError("profile: graph must be a tf.Graph, not %r" % (graph,))
    return graph


def profile(graph=None, run_meta=None, op_log=None, cmd="scope", options=_DEFAULT):
    """Profiles `graph` (default: the default graph) and returns the root of the view `cmd`:
    a GraphNodeProto for "scope" and "graph", a MultiGraphNodeProto for "op" and "code".
    `options` (ProfileOptionBuilder; default trainable_variables_parameter(), as TF) choose
    what is shown, accounted and printed; `run_meta`, a traced sf.RunMetadata, adds times,
    bytes and the shapes that were unknown when the graph was built."""
    if options is _DEFAULT:
        options = ProfileOptionBuilder.trainable_variables_parameter()
    if not isinstance(options, dict):
        raise TypeError("profile: options must be a dict from ProfileOptionBuilder, not %r"
                        % (options,))
    if cmd not in ("scope", "graph", "op", "code"):
        raise ValueError("profile: cmd must be 'scope', 'graph', 'op' or 'code', not %r"
                         % (cmd,))
    stats = _op_stats(_graph_or_default(graph), run_meta, op_log)
    flt = _Filter(options)
    order_by = options.get("order_by", "name")
    if cmd in ("scope", "graph"):
        root = _scope_view(stats, flt, order_by, flat=cmd == "graph")
    else:
        root = _op_view(stats, flt, order_by)
    _emit(root, options, run_meta)
    return root


ALL_ADVICE = {"ExpensiveOperationChecker": {}, "AcceleratorUtilizationChecker": {},
              "JobChecker": {}, "OperationChecker": {}}


def advise(graph=None, run_meta=None, options=_DEFAULT):
    """An AdviceProto for `graph`: ExpensiveOperationChecker reports the op types with the
    most FLOPs (and, with a traced run_meta, time); the other checkers of ALL_ADVICE are
    accepted and report nothing (they need TF's device traces)."""
    if options is _DEFAULT:
        options = ALL_ADVICE
    stats = _op_stats(_graph_or_default(graph), run_meta)
    checkers = {}
    for name in options:
        reports = []
        if name == "ExpensiveOperationChecker":
            reports = _expensive_ops(stats)
        checkers[name] = AdviceProto.Checker(reports)
    return AdviceProto(checkers)


def _expensive_ops(stats, top=3):
    by_type = {}
    for s in stats:
        entry = by_type.setdefault(s.types[0], [0, 0])
        entry[0] += s.values[0]
        entry[1] += s.values[2]
    total_flops = sum(v[0] for v in by_type.values()) or 1
    ranked = sorted(by_type.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))
    return ["top %d operation type: %s, %s flops (%.2f%%), %s" % (
        i + 1, op_type, _number(flops), 100.0 * flops / total_flops, _time(micros))
        for i, (op_type, (flops, micros)) in enumerate(ranked[:top]) if flops or micros]


def write_op_log(graph, log_dir, op_log=None, run_meta=None, add_trace=True):
    """Writes `log_dir`/tfprof_log: a JSON list of the graph's ops with FLOPs or account types
    beyond their op type ({"name", "float_ops", "types"}; `op_log`'s entries merged in), which
    profile(op_log=read_op_log(path)) takes back. Returns the path."""
    stats = _op_stats(_graph_or_default(graph), run_meta, op_log)
    entries = [{"name": s.name, "float_ops": s.values[0], "types": s.types}
               for s in stats if s.values[0] or len(s.types) > 1]
    os.makedirs(log_dir, exist_ok=True)
    path = os.path.join(log_dir, _OP_LOG_FILE)
    with open(path + ".tmp", "w") as f:
        json.dump({"format": "shardflow-tfprof-log", "version": 1, "log_entries": entries},
                  f, indent=1)
    os.replace(path + ".tmp", path)
    return path


def read_op_log(path):
    """The OpLogProto write_op_log wrote to `path` (ValueError when it is not one)."""
    with open(path) as f:
        try:
            record = json.load(f)
        except (ValueError, RecursionError) as e:
            raise ValueError("read_op_log: %s is not JSON (%s)" % (path, e)) from None
    entries = record.get("log_entries") if isinstance(record, dict) else None
    if record.get("format") != "shardflow-tfprof-log" or not isinstance(entries, list):
        raise ValueError("read_op_log: %s is not an op log write_op_log wrote" % path)
    return OpLogProto([OpLogProto.OpLogEntry(e.get("name", ""), e.get("float_ops", 0),
                                             e.get("types", [])) for e in entries])


class Profiler:
    """TF1's tf.profiler.Profiler: profiles one graph over traced steps.

    Example::

        profiler = tf.profiler.Profiler(sess.graph)
        sess.run(train_op, options=run_options, run_metadata=md)
        profiler.add_step(0, md)
        profiler.profile_name_scope(ProfileOptionBuilder.float_operation())

    A view uses the RunMetadata of options["step"] (the newest step when -1 or absent)."""

    def __init__(self, graph=None, op_log=None):
        self._graph = _graph_or_default(graph)
        self._op_log = op_log
        self._steps = {}

    def add_step(self, step, run_meta):
        self._steps[int(step)] = run_meta

    def _run_meta(self, options):
        step = int(options.get("step", -1)) if isinstance(options, dict) else -1
        if step in self._steps:
            return self._steps[step]
        return self._steps[max(self._steps)] if self._steps else None

    def _view(self, cmd, options):
        return profile(self._graph, self._run_meta(options), self._op_log, cmd, options)

    def profile_python(self, options):
        return self._view("code", options)

    def profile_operations(self, options):
        return self._view("op", options)

    def profile_name_scope(self, options):
        return self._view("scope", options)

    def profile_graph(self, options):
        return self._view("graph", options)

    def advise(self, options=_DEFAULT):
        return advise(self._graph, self._run_meta({}), options)

    def serialize_to_string(self):
        """The ops' statistics as JSON bytes (not TF's ProfileProto)."""
        stats = _op_stats(self._graph, self._run_meta({}), self._op_log)
        return json.dumps([{"name": s.name, "types": s.types, "float_ops": s.values[0],
                            "parameters": s.values[1], "exec_micros": s.values[2],
                            "requested_bytes": s.values[3]} for s in stats]).encode()

    def _write_profile(self, filename):
        with open(filename, "wb") as f:
            f.write(self.serialize_to_string())


__all__ = ["ALL_ADVICE", "AdviceProto", "GraphNodeProto", "MultiGraphNodeProto", "OpLogProto",
           "Profiler", "advise", "profile", "read_op_log", "write_op_log"]
