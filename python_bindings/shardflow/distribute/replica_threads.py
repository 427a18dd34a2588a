"""Builds a replica function once per device in one graph, as TF's MirroredStrategy does in graph
mode (in-graph replication): replica i is built under ``tf.device(devices[i])``, replicas after
the first in a name scope "replica_<i>" and a variable scope that reuses the variables replica 0
made (tf.get_variable, tf.layers), so the replicas share one copy of each variable.

Note [Replica threads]: ReplicaContext.merge_call must see every replica's arguments before
merge_fn runs, so, as in TF, each replica is built in a thread of its own, and the threads take
turns: only one builds at a time. The caller's thread starts replica 0, which builds until it
finishes or reaches a merge_call; then replica 1 does the same, and so on. When all wait in a
merge_call, merge_fn runs once in the caller's thread (with PerReplica arguments), each replica
takes its part of the result, and the round starts again. A graph keeps its scopes (name scope,
device, control dependencies, variable scopes, layer-name counts) in attributes, so those are
saved when a replica pauses and put back when it resumes: each replica keeps its own. Every
replica must make the same merge_calls, or the call fails saying so.

A replica after the first may not make variables of its own (tf.Variable in fn): they would not
be shared. That is checked after each of its turns and is a ValueError naming them.
"""

import contextlib
import threading

from shardflow import variable_scope as vs
from shardflow.distribute import context
from shardflow.distribute.values import regroup, select_replica

# The graph attributes a replica's scopes live in (shardflow/framework.py, variable_scope.py,
# layers.py).
_GRAPH_SCOPES = ("_name_scope", "_device", "_device_fn", "_control_inputs", "_variable_scopes",
                 "_layer_name_counts")
_MISSING = object()


def _save_scopes(graph):
    return {k: graph.__dict__.get(k, _MISSING) for k in _GRAPH_SCOPES}


def _restore_scopes(graph, scopes):
    for k, v in scopes.items():
        if v is _MISSING:
            graph.__dict__.pop(k, None)
        else:
            setattr(graph, k, v)


def _copy_counts(counts):
    return {scope: dict(names) for scope, names in counts.items()}


class _Stopped(BaseException):
    """Ends a paused replica's thread when the call is abandoned (another replica failed)."""


class _ReplicaThread(threading.Thread):
    """Builds one replica; see Note [Replica threads]. The caller's thread hands it turns with
    should_run and waits on has_paused."""

    def __init__(self, strategy, graph, replica_id, device, fn, args, kwargs, main_scopes,
                 layer_counts):
        super().__init__(name="replica_%d" % replica_id, daemon=True)
        self.strategy, self.graph = strategy, graph
        self.replica_id, self.device = replica_id, device
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.main_scopes = main_scopes
        self.layer_counts = layer_counts
        self.should_run = threading.Event()
        self.has_paused = threading.Event()
        self.stopping = False
        self.done = False
        self.result = None
        self.error = None
        self.merge = None          # (merge_fn, args, kwargs) of the merge_call it waits in
        self.merge_result = None
        self.scopes = None         # the graph's scopes as this replica left them

    def run(self):
        self.should_run.wait()
        self.should_run.clear()
        try:
            if not self.stopping:
                self.result = self._build()
                self.done = True
        except _Stopped:
            pass
        except BaseException as e:  # handed to the caller's thread, which raises it
            self.error = e
        finally:
            self.scopes = _save_scopes(self.graph)
            self.has_paused.set()

    def _build(self):
        g = self.graph
        g._variable_scopes = list(self.main_scopes["_variable_scopes"])
        replica_context = context.ReplicaContext(self.strategy, self.replica_id,
                                                 merge_call=self._merge_call)
        with contextlib.ExitStack() as stack:
            stack.enter_context(g.as_default())
            if self.replica_id > 0:
                stack.enter_context(vs.variable_scope(g._variable_scopes[-1], reuse=True))
                base = self.main_scopes["_name_scope"]
                stack.enter_context(g.name_scope(
                    "%sreplica_%d/" % (base + "/" if base else "", self.replica_id)))
            # Unnamed layers are numbered from where the caller's graph was, in every replica,
            # so that replica i's "dense_2" is replica 0's.
            g._layer_name_counts = _copy_counts(self.layer_counts)
            stack.enter_context(g.device(self.device))
            stack.enter_context(replica_context)
            return self.fn(*self.args, **self.kwargs)

    def _merge_call(self, merge_fn, args, kwargs):
        self.merge = (merge_fn, args, kwargs)
        self.scopes = _save_scopes(self.graph)
        self.has_paused.set()
        self.should_run.wait()
        self.should_run.clear()
        if self.stopping:
            raise _Stopped()
        _restore_scopes(self.graph, self.scopes)
        result, self.merge, self.merge_result = self.merge_result, None, None
        return result


def _variable_names(graph):
    return set(graph._handle.variables(False))


def _take_turn(graph, thread, main_scopes):
    """Lets `thread` build until it pauses; raises what it raised."""
    before = _variable_names(graph) if thread.replica_id > 0 else None
    thread.should_run.set()
    thread.has_paused.wait()
    thread.has_paused.clear()
    _restore_scopes(graph, main_scopes)
    if thread.error is not None:
        raise thread.error
    if before is not None:
        made = sorted(_variable_names(graph) - before)
        if made:
            raise ValueError(
                "experimental_run_v2: replica %d (%s) made variables of its own: %s. Replicas "
                "share replica 0's variables only through tf.get_variable and tf.layers (which "
                "reuse them); make the other variables (a Keras model, tf.Variable) in "
                "strategy.scope() before experimental_run_v2 (an optimizer's minimize inside "
                "fn makes its slots once, in a merge_call)"
                % (thread.replica_id, thread.device, ", ".join(made)))


def _merge(strategy, graph, threads, devices, main_scopes):
    """Runs the merge_fn the replicas wait in, once, in replica 0's scopes (and the caller's
    device), and hands each replica its part of the result."""
    merge_fn = threads[0].merge[0]
    args = regroup([t.merge[1] for t in threads], devices)
    kwargs = regroup([t.merge[2] for t in threads], devices)
    first = threads[0]
    _restore_scopes(graph, dict(first.scopes, _device=main_scopes["_device"],
                                _device_fn=main_scopes["_device_fn"]))
    try:
        with context.push_mode(context.Mode(strategy, None)):
            result = merge_fn(strategy, *args, **kwargs)
    finally:
        first.scopes = dict(first.scopes, _variable_scopes=graph._variable_scopes,
                            _layer_name_counts=graph.__dict__.get("_layer_name_counts",
                                                                  _MISSING))
        _restore_scopes(graph, main_scopes)
    for t in threads:
        t.merge_result = select_replica(t.replica_id, result)


def _stop(threads):
    for t in threads:
        t.stopping = True
        t.should_run.set()
    for t in threads:
        t.join()


def call_for_each_replica(strategy, graph, devices, fn, args, kwargs):
    """fn(*args, **kwargs) built once per device of `devices` (more than one), each replica
    given its component of the PerReplica arguments; the results regrouped (values.regroup).
    Runs in the caller's cross-replica context of `strategy`."""
    vs._stack(graph)  # the graph's variable scopes exist before the replicas copy them
    main_scopes = _save_scopes(graph)
    counts = _copy_counts(graph.__dict__.get("_layer_name_counts", {}))
    threads = []
    for i, device in enumerate(devices):
        replica_args, replica_kwargs = select_replica(i, (tuple(args), dict(kwargs)))
        threads.append(_ReplicaThread(strategy, graph, i, device, fn, replica_args,
                                      replica_kwargs, main_scopes, counts))
    for t in threads:
        t.start()
    try:
        while True:
            for t in threads:
                _take_turn(graph, t, main_scopes)
            if all(t.done for t in threads):
                break
            if any(t.done for t in threads):
                raise RuntimeError(
                    "experimental_run_v2: replicas %s finished while replicas %s wait in a "
                    "merge_call; every replica must make the same merge_calls (all_reduce "
                    "included) in the same order"
                    % ([t.replica_id for t in threads if t.done],
                       [t.replica_id for t in threads if not t.done]))
            _merge(strategy, graph, threads, devices, main_scopes)
    finally:
        _stop(threads)
    counts = threads[0].scopes["_layer_name_counts"]
    if counts is not _MISSING:
        graph._layer_name_counts = counts  # the caller's next layers are named after replica 0's
    return regroup([t.result for t in threads], devices)
