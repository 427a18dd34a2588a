"""Sessions run graphs: ``sess.run(fetches, feed_dict)`` with NumPy arrays in and out.

Example::

    with sf.Session(config=sf.ConfigProto(cpu_device_count=2)) as sess:
        sess.run(sf.global_variables_initializer())
        loss_value, _ = sess.run([loss, train_op], {x: images, y: labels})

Feeds: a C-contiguous NumPy array of a supported dtype is passed to the engine without a copy
(the engine holds a reference to it for the step; do not write to it from another thread while a
step runs). Other values are converted (and copied). Fetches come back as NumPy arrays that own
their data (no copy when the engine has no other reference to the result).

The engine runs the step with the GIL released, so other Python threads keep running.
"""

import collections
import itertools
import os
import threading

import numpy as np

from shardflow import _shardflow as _C
from shardflow import dtypes
from shardflow.framework import Graph, Operation, Tensor, get_default_graph
from shardflow.sparse_tensor import SparseTensor, SparseTensorValue
from shardflow.variables import Variable


class RunOptions:
    """Options for one step.

    Example::

        opts = sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE)
        md = sf.RunMetadata()
        sess.run(y, {x: a}, options=opts, run_metadata=md)
    """

    NO_TRACE = 0
    SOFTWARE_TRACE = 1   # TF1's levels below FULL_TRACE trace as FULL_TRACE here
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    def __init__(self, trace_level=NO_TRACE, timeout_in_ms=0, check_numerics=False,
                 output_partition_graphs=False, report_tensor_allocations_upon_oom=False,
                 inter_op_thread_pool=0, debug_options=None, experimental=None):
        """TF1's fields. `output_partition_graphs`: RunMetadata.partition_graphs gets the
        graphs each device ran (the step is traced for it). Accepted with no effect:
        `report_tensor_allocations_upon_oom` (out-of-memory errors name the allocation
        anyway), `inter_op_thread_pool` (one pool per session), `debug_options`,
        `experimental`."""
        if trace_level not in (self.NO_TRACE, self.SOFTWARE_TRACE, self.HARDWARE_TRACE,
                               self.FULL_TRACE):
            raise ValueError("trace_level is RunOptions.NO_TRACE, SOFTWARE_TRACE, "
                             "HARDWARE_TRACE or FULL_TRACE, not %r" % (trace_level,))
        self.trace_level = trace_level
        self.timeout_in_ms = int(timeout_in_ms)
        self.check_numerics = bool(check_numerics)
        self.output_partition_graphs = bool(output_partition_graphs)
        self.report_tensor_allocations_upon_oom = bool(report_tensor_allocations_upon_oom)
        self.inter_op_thread_pool = int(inter_op_thread_pool)
        self.debug_options = debug_options
        self.experimental = experimental

    def _engine_trace_level(self):
        traced = self.trace_level != self.NO_TRACE or self.output_partition_graphs
        return self.FULL_TRACE if traced else self.NO_TRACE


RunMetadata = _C.RunMetadata
RunMetadata.__doc__ = """What one traced step did (filled by ``Session.run(..., run_metadata=md)``
with ``RunOptions(trace_level=FULL_TRACE)``): ``placement`` (node -> device), ``devices``,
``node_stats()``, ``partition_graph_count``, TF1's ``step_stats`` and ``partition_graphs``; read
it with sf.profiler or timeline.Timeline(md.step_stats) (shardflow.python.client.timeline)."""


def _run_metadata_step_stats(run_metadata):
    from shardflow.step_stats_pb import step_stats_from_run_metadata
    return step_stats_from_run_metadata(run_metadata)


RunMetadata.step_stats = property(
    _run_metadata_step_stats,
    doc="TF1's StepStats of the traced step (dev_stats[i].node_stats[j] with node_name, "
        "all_start_micros, all_end_rel_micros, op_end_rel_micros, timeline_label, ...); a "
        "fresh copy on each access (shardflow/step_stats_pb.py). Needs python3-protobuf.")


def _run_metadata_partition_graphs(run_metadata):
    from shardflow.protos import config_pb2
    return list(config_pb2.RunMetadata.FromString(
        run_metadata.SerializeToString()).partition_graphs)


RunMetadata.partition_graphs = property(
    _run_metadata_partition_graphs,
    doc="TF1's partition graphs: one GraphDef message per device the step ran on (its nodes "
        "with name, op, input, assigned_device), with RunOptions(output_partition_graphs=True) "
        "or FULL_TRACE. Needs python3-protobuf.")


class GPUOptions:
    """TF1's tf.GPUOptions, for sessions on machines with NVIDIA GPUs (docs/gpu.md).

    per_process_gpu_memory_fraction: device memory each GPU's allocator may hold, as a share of
        what is free when the process first uses it (None = 0.9).
    memory_limit_mb: an absolute limit per GPU instead (0 = use the fraction).
    visible_device_list: "1,0": the CUDA devices used, in that order ("" = all).
    allow_tf32: float32 matmuls and convolutions may use TF32 tensor cores (off: exact float32).
    virtual_devices_per_gpu: logical devices per GPU (to test multi-GPU placement on one GPU).
    allow_growth: accepted; the allocator always grows on demand up to its limit.
    """

    def __init__(self, allow_growth=False, per_process_gpu_memory_fraction=None,
                 visible_device_list="", allow_tf32=False, memory_limit_mb=0,
                 virtual_devices_per_gpu=1):
        self.allow_growth = allow_growth
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction
        self.visible_device_list = visible_device_list
        self.allow_tf32 = allow_tf32
        self.memory_limit_mb = memory_limit_mb
        self.virtual_devices_per_gpu = virtual_devices_per_gpu


class RewriterConfig:
    """The graph optimizer's passes, as TF's RewriterConfig names them (docs/optimizer.md).

    Each is RewriterConfig.DEFAULT (on), ON or OFF; disable_meta_optimizer=True turns all off.
    auto_mixed_precision_onednn_bfloat16 (bfloat16 matrix products and convolutions, fp32
    master weights; docs/optimizer.md) is the exception: only ON turns it on::

        rewrite = sf.RewriterConfig(constant_folding=sf.RewriterConfig.OFF)
        config = sf.ConfigProto(graph_options=sf.GraphOptions(rewrite_options=rewrite))
        config.graph_options.rewrite_options.remapping = sf.RewriterConfig.OFF   # TF1 style
    """

    DEFAULT, ON, OFF = 0, 1, 2
    PASSES = ("arithmetic_optimization", "constant_folding", "common_subgraph_elimination",
              "dependency_optimization", "remapping", "auto_mixed_precision_onednn_bfloat16")

    def __init__(self, disable_meta_optimizer=False, **passes):
        unknown = set(passes) - set(self.PASSES)
        if unknown:
            raise ValueError("RewriterConfig has no pass %s; known: %s"
                             % (sorted(unknown), ", ".join(self.PASSES)))
        self.disable_meta_optimizer = bool(disable_meta_optimizer)
        for name in self.PASSES:
            setattr(self, name, passes.get(name, self.DEFAULT))

    def _toggles(self):
        out = {}
        for name in self.PASSES:
            value = getattr(self, name)
            if value is True or value is False:  # a plain switch: True = ON, False = OFF
                value = self.ON if value else self.OFF
            if value not in (self.DEFAULT, self.ON, self.OFF):
                raise ValueError("RewriterConfig.%s is %r; use RewriterConfig.DEFAULT, ON or OFF"
                                 % (name, value))
            out[name] = int(value)
        return out


class OptimizerOptions:
    """TF1's tf.OptimizerOptions (config.graph_options.optimizer_options): constant folding and
    common subexpression elimination map to the graph optimizer's passes of those names
    (do_*=False, or opt_level=L0, turns them off unless rewrite_options turns them on);
    function inlining and XLA's global_jit_level are accepted (shardflow has no XLA)."""

    L1, L0 = 0, -1                          # opt_level
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2  # global_jit_level

    def __init__(self, do_common_subexpression_elimination=True, do_constant_folding=True,
                 max_folded_constant_in_bytes=0, do_function_inlining=True, opt_level=0,
                 global_jit_level=0):
        self.do_common_subexpression_elimination = do_common_subexpression_elimination
        self.do_constant_folding = do_constant_folding
        self.max_folded_constant_in_bytes = max_folded_constant_in_bytes
        self.do_function_inlining = do_function_inlining
        self.opt_level = opt_level
        self.global_jit_level = global_jit_level

    def _off(self):
        """The passes these options turn off."""
        if self.opt_level == self.L0:
            return {"constant_folding", "common_subgraph_elimination"}
        off = set()
        if not self.do_constant_folding:
            off.add("constant_folding")
        if not self.do_common_subexpression_elimination:
            off.add("common_subgraph_elimination")
        return off


class GraphOptions:
    """TF1's tf.GraphOptions: rewrite_options (a RewriterConfig) and optimizer_options (an
    OptimizerOptions); TF1's other fields are accepted."""

    def __init__(self, rewrite_options=None, optimizer_options=None,
                 enable_recv_scheduling=False, enable_bfloat16_sendrecv=False,
                 build_cost_model=0, build_cost_model_after=0, infer_shapes=False,
                 place_pruned_graph=False, timeline_step=0):
        self.rewrite_options = rewrite_options if rewrite_options is not None else RewriterConfig()
        self.optimizer_options = optimizer_options if optimizer_options is not None \
            else OptimizerOptions()
        self.enable_recv_scheduling = enable_recv_scheduling
        self.enable_bfloat16_sendrecv = enable_bfloat16_sendrecv
        self.build_cost_model = build_cost_model
        self.build_cost_model_after = build_cost_model_after
        self.infer_shapes = infer_shapes
        self.place_pruned_graph = place_pruned_graph
        self.timeline_step = timeline_step


class ConfigProto:
    """How a session sets up its devices and threads.

    Example::

        sf.Session(config=sf.ConfigProto(cpu_device_count=2, intra_op_threads=1))

    cpu_device_count: CPU devices exposed ('/device:CPU:0', '/device:CPU:1', ...); 0 = 1.
    gpu_device_count: GPU devices exposed: 0 = one per GPU of the machine (none without a GPU or
        a CUDA build), N = at most N, -1 = none (TF1's device_count={"GPU": 0}). Ops with a GPU
        kernel run on '/device:GPU:0' by default when there is one (docs/gpu.md).
    gpu_options: sf.GPUOptions(memory fraction or limit, visible devices, allow_tf32).
    inter_op_threads / intra_op_threads: threads per device (0 = automatic).
    allow_soft_placement: place ops elsewhere when their requested device cannot run them.
    log_device_placement: print 'node (Op) -> device' once per placed graph.
    placement_policy: "constraints" (default: the first device that can run an op) or "cost"
        (spread unplaced ops by the cost model; see docs/placement.md).
    auth_token, tls_ca_file, tls_cert_file, tls_key_file: how to reach a "grpc://" master
        that requires a token or TLS.
    plaintext: connect in plaintext to a "grpc://" master whose address is not a loopback one
        (its server allows plaintext); default: $SHARDFLOW_PLAINTEXT (1/true/yes), else off, and
        such a target is refused without TLS. A server's own target is a loopback one.
    graph_options: sf.GraphOptions(rewrite_options=sf.RewriterConfig(...)): which graph optimizer
        passes run (all by default; docs/optimizer.md).
    transport: for sf.train.Server(config=...), the data plane tensors travel on between tasks:
        "auto" (default: shared memory with tasks on this host, gRPC with the others), "grpc"
        or "ucx" (docs/distributed.md, "Choosing a transport"; "ucx" is
        Server(protocol="grpc+ucx")).
    device_filters: for a cluster session (server.target), the partial device names it may use,
        e.g. ["/job:ps", "/job:worker/task:1"]: the other tasks are never contacted, so a worker's
        session neither waits for nor places on the other workers (TF1's between-graph setup).
    operation_timeout_in_ms: the time limit of every run without RunOptions(timeout_in_ms=...);
        the run fails with DeadlineExceededError. 0 = none.
    TF1's use_per_session_threads, placement_period, isolate_session_state, rpc_options,
    cluster_def, experimental, session_inter_op_thread_pool and share_cluster_devices_in_session
    are accepted and have no effect (each session has its own devices and threads here).
    """

    _FIELDS = ("inter_op_threads", "intra_op_threads", "cpu_device_count", "gpu_device_count",
               "allow_soft_placement", "log_device_placement", "placement_policy", "auth_token",
               "tls_ca_file", "tls_cert_file", "tls_key_file", "transport", "graph_options",
               "device_filters", "operation_timeout_in_ms", "plaintext")

    def __init__(self, inter_op_threads=0, intra_op_threads=0, cpu_device_count=0,
                 allow_soft_placement=False, log_device_placement=False, placement_policy="",
                 auth_token="", tls_ca_file="", tls_cert_file="", tls_key_file="",
                 transport="auto", device_count=None, inter_op_parallelism_threads=None,
                 intra_op_parallelism_threads=None, gpu_options=None, graph_options=None,
                 gpu_device_count=0, device_filters=(), operation_timeout_in_ms=0,
                 use_per_session_threads=False, placement_period=0, isolate_session_state=False,
                 rpc_options=None, cluster_def=None, experimental=None,
                 session_inter_op_thread_pool=None, share_cluster_devices_in_session=False,
                 plaintext=None):
        # TF1's spellings: device_count={"CPU": n, "GPU": m}, *_parallelism_threads.
        if inter_op_parallelism_threads is not None:
            inter_op_threads = inter_op_parallelism_threads
        if intra_op_parallelism_threads is not None:
            intra_op_threads = intra_op_parallelism_threads
        if device_count is not None:
            # Other device types ({"TPU": 2}) are ignored, as TF1's sessions ignore counts of
            # types no device factory makes.
            if "GPU" in device_count:
                gpus = int(device_count["GPU"])
                if gpus < 0:
                    raise ValueError("ConfigProto(device_count={'GPU': %d}): give 0 (no GPU) or "
                                     "more" % gpus)
                gpu_device_count = gpus if gpus > 0 else -1
            cpu_device_count = int(device_count.get("CPU", cpu_device_count))
        # gpu_device_count: 0 = every GPU the machine has, N = at most N, -1 = none.
        self.gpu_device_count = gpu_device_count
        self.gpu_options = gpu_options if gpu_options is not None else GPUOptions()
        self.inter_op_threads = inter_op_threads
        self.intra_op_threads = intra_op_threads
        self.cpu_device_count = cpu_device_count
        self.allow_soft_placement = allow_soft_placement
        self.log_device_placement = log_device_placement
        self.placement_policy = placement_policy
        self.auth_token = auth_token
        self.tls_ca_file = tls_ca_file
        self.tls_cert_file = tls_cert_file
        self.tls_key_file = tls_key_file
        self.plaintext = plaintext_from_env() if plaintext is None else bool(plaintext)
        if transport not in ("auto", "grpc", "ucx"):
            raise ValueError("ConfigProto(transport=%r): use 'auto' (the default), 'grpc' or "
                             "'ucx'" % (transport,))
        self.transport = transport
        self.graph_options = graph_options if graph_options is not None else GraphOptions()
        if isinstance(device_filters, str):
            device_filters = [device_filters]
        device_filters = list(device_filters)
        for f in device_filters:
            if not isinstance(f, str):
                raise TypeError("ConfigProto(device_filters=...) takes device names such as "
                                "'/job:ps', not %r" % (f,))
        self.device_filters = device_filters
        self.operation_timeout_in_ms = max(0, int(operation_timeout_in_ms))
        # TF1 fields accepted without effect (see the class's docstring).
        self.use_per_session_threads = use_per_session_threads
        self.placement_period = placement_period
        self.isolate_session_state = isolate_session_state
        self.rpc_options = rpc_options
        self.cluster_def = cluster_def
        self.experimental = experimental
        self.session_inter_op_thread_pool = session_inter_op_thread_pool
        self.share_cluster_devices_in_session = share_cluster_devices_in_session

    def _to_c(self):
        c = _C.SessionConfig()
        for f in self._FIELDS:
            # transport is a server's, not a session's (sf.train.Server reads it)
            if f not in ("transport", "graph_options", "device_filters"):
                setattr(c, f, getattr(self, f))
        # A list appended to in place after construction (config.device_filters.append(...),
        # as TF1 programs do with the proto's repeated field) counts too.
        c.device_filters = [str(f) for f in self.device_filters]
        rewrite = self.graph_options.rewrite_options
        toggles = rewrite._toggles()
        amp = "auto_mixed_precision_onednn_bfloat16"
        if _mixed_precision_rewrite and toggles[amp] == RewriterConfig.DEFAULT:
            toggles[amp] = RewriterConfig.ON  # enable_mixed_precision_graph_rewrite
        for name in getattr(self.graph_options, "optimizer_options", OptimizerOptions())._off():
            if toggles[name] == RewriterConfig.DEFAULT:
                toggles[name] = RewriterConfig.OFF
        c.rewrite_options = toggles
        c.disable_meta_optimizer = rewrite.disable_meta_optimizer
        g = self.gpu_options
        fraction = g.per_process_gpu_memory_fraction
        c.gpu_memory_fraction = float(fraction) if fraction is not None else 0.0
        c.gpu_memory_limit_mb = int(g.memory_limit_mb)
        c.gpu_visible_device_list = str(g.visible_device_list)
        c.gpu_allow_tf32 = bool(g.allow_tf32)
        c.gpu_virtual_devices = int(g.virtual_devices_per_gpu)
        return c


def plaintext_from_env():
    """$SHARDFLOW_PLAINTEXT as a bool: whether servers and sessions that are not told otherwise
    may use plaintext gRPC on addresses that are not loopback ones (a trusted network; a TF1
    program runs across hosts unchanged with SHARDFLOW_PLAINTEXT=1)."""
    value = os.environ.get("SHARDFLOW_PLAINTEXT", "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError("SHARDFLOW_PLAINTEXT is '%s'; set it to 1 (allow plaintext gRPC beyond "
                     "loopback) or 0, or unset it" % os.environ["SHARDFLOW_PLAINTEXT"])


# The target of sessions opened with target "" ("" = local; shardflow.horovod.init sets it).
_default_target = [""]


def _set_default_target(target):
    _default_target[0] = target


# Set by sf.train.experimental.enable_mixed_precision_graph_rewrite (mixed_precision.py): the
# sessions made afterwards turn the bfloat16 rewrite on where their config leaves it DEFAULT.
_mixed_precision_rewrite = False


def set_mixed_precision_rewrite(on):
    global _mixed_precision_rewrite
    _mixed_precision_rewrite = bool(on)


def _config(config):
    if config is None:
        return ConfigProto()
    if isinstance(config, ConfigProto):
        return config
    if isinstance(config, dict):
        unknown = set(config) - set(ConfigProto._FIELDS)
        if unknown:
            raise ValueError("unknown config field(s) %s; known: %s"
                             % (sorted(unknown), ", ".join(ConfigProto._FIELDS)))
        return ConfigProto(**config)
    raise TypeError("config is a sf.ConfigProto or a dict, not %r" % (config,))


def _as_fetched(value):
    """A fetched array as TF1's Session.run gives it: a NumPy scalar (np.float32, np.int64,
    ...) for a scalar tensor, bytes for a scalar string, else the array."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


class _FetchPlan:
    """Flattens a nested structure of fetches into tensor names and targets, and rebuilds the
    structure from the fetched arrays."""

    def __init__(self, graph, fetches):
        self.names = []
        self.targets = []
        self._index = {}
        self.build = self._plan(graph, fetches)

    def _tensor(self, t):
        i = self._index.get(t.name)
        if i is None:
            i = self._index[t.name] = len(self.names)
            self.names.append(t.name)
        return lambda out: _as_fetched(out[i])

    def _plan(self, graph, f):
        if isinstance(f, Tensor):
            if f.graph is not graph:
                raise ValueError("fetch %s is from another graph than the session's" % f.name)
            return self._tensor(f)
        if isinstance(f, Variable):
            return self._plan(graph, f.value())
        if isinstance(f, SparseTensor):  # comes back as a SparseTensorValue of arrays
            parts = [self._plan(graph, t) for t in (f.indices, f.values, f.dense_shape)]
            return lambda out: SparseTensorValue(*[p(out) for p in parts])
        from shardflow.summary import _Summary
        if isinstance(f, _Summary):
            # Note [Summaries on the client] in summary.py: fetch, then serialize here.
            parts = [self._plan(graph, t) for t in f.tensors]
            return lambda out: f._encode([p(out) for p in parts])
        if isinstance(f, Operation):
            if f.graph is not graph:
                raise ValueError("fetch %s is from another graph than the session's" % f.name)
            self.targets.append(f.name)
            return lambda out: None
        if isinstance(f, str):
            if ":" in f:
                return self._tensor(graph.get_tensor_by_name(f))
            self.targets.append(graph.get_operation_by_name(f).name)
            return lambda out: None
        if isinstance(f, dict):
            parts = [(k, self._plan(graph, v)) for k, v in f.items()]
            kind = type(f)
            return lambda out: kind((k, p(out)) for k, p in parts)
        if isinstance(f, tuple) and hasattr(f, "_fields"):  # namedtuple
            parts = [self._plan(graph, v) for v in f]
            kind = type(f)
            return lambda out: kind(*[p(out) for p in parts])
        if isinstance(f, (list, tuple)):
            parts = [self._plan(graph, v) for v in f]
            kind = type(f)
            return lambda out: kind(p(out) for p in parts)
        if f is None:
            raise TypeError("fetch None is not allowed")
        raise TypeError("cannot fetch %r (of type %s); fetch Tensors, SparseTensors, Operations, "
                        "Variables, names, or lists/tuples/dicts of them" % (f, type(f).__name__))


def _feed_value(tensor, value):
    """`value` as an array of the placeholder's dtype (ndarrays of that dtype pass as is).
    Numbers convert as NumPy converts them, as TF1's session does (np.asarray(value, dtype):
    float32 [1.0, 2.7] fed to an int32 placeholder is [1, 2]); text does not become numbers,
    nor complex numbers real ones."""
    want = tensor.dtype.as_numpy_dtype
    if isinstance(value, np.ndarray):
        if value.dtype == want or tensor.dtype == dtypes.string:
            return value
        if value.dtype.kind not in "biufc" or np.dtype(want).kind not in "biufc" or \
                (value.dtype.kind == "c" and np.dtype(want).kind != "c"):
            raise TypeError("feed for '%s' has dtype %s but the tensor is %s"
                            % (tensor.name, value.dtype, tensor.dtype.name))
        return value.astype(want)
    if tensor.dtype == dtypes.string:
        return np.asarray(value, dtype=object)
    try:
        return np.asarray(value, dtype=want)
    except (TypeError, ValueError) as e:
        raise TypeError("feed for '%s' (%s): %s" % (tensor.name, tensor.dtype.name, e)) from None


def _expand_sparse_feeds(feed_dict):
    """feed_dict's (key, value) pairs, a SparseTensor key giving one pair per part, and a
    key that is a nested tuple of tensors (an RNN's LSTMStateTuples) one pair per tensor, with
    its value taken apart in the same structure (as TF1's)."""
    for key, value in feed_dict.items():
        yield from _expand_feed(key, value)


def _expand_feed(key, value):
    if isinstance(key, SparseTensor):
        yield from key._feeds(value)
    elif isinstance(key, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(key):
            raise ValueError("feed_dict: the key %r is a tuple of %d; its value must be a "
                             "tuple of the same structure, not %r" % (key, len(key), value))
        for k, v in zip(key, value):
            yield from _expand_feed(k, v)
    else:
        yield key, value


_default_session = threading.local()
_session_numbers = itertools.count(1)


def _session_number(sess):
    """A number of its own for each session (the queues' session token)."""
    number = sess.__dict__.get("_number")
    if number is None:
        number = sess.__dict__.setdefault("_number", next(_session_numbers))
    return number


def get_default_session():
    """The session of the innermost ``with sess:`` (or ``sess.as_default()``) block, or the
    latest InteractiveSession; None when there is none (as in TF1)."""
    stack = getattr(_default_session, "stack", [])
    return stack[-1] if stack else None


def _session_for(session):
    """`session`, else the default one; an error saying how to get one when there is none."""
    session = session or get_default_session()
    if session is None:
        raise RuntimeError("no default session: use `with sf.Session() as sess:`, "
                           "sf.InteractiveSession(), or pass session=")
    return session


class _DeviceAttributes(str):
    """One of Session.list_devices(): the device's full name, with TF1's attributes."""

    @property
    def name(self):
        return str(self)

    @property
    def device_type(self):
        parts = self.rsplit("/device:", 1)
        return parts[1].split(":")[0] if len(parts) == 2 else ""

    memory_limit_bytes = 0  # not tracked here
    incarnation = 0


class Session:
    """Runs the ops of one graph.

    `target` is "" for a local session in this process; other targets (e.g. "grpc://host:port")
    are passed to the engine, which raises when it cannot serve them. `graph` defaults to the
    default graph; ops added to it after the session was created can be run too.

    Example::

        with sf.Session() as sess:
            print(sess.run(y, feed_dict={x: np.ones((2, 3), np.float32)}))

    Thread safety: ``run`` may be called from several threads at once.
    """

    def __init__(self, target="", graph=None, config=None):
        if not isinstance(target, str):
            raise TypeError("target is a string such as '' or 'grpc://host:port'")
        if target == "" and _default_target[0]:
            # After shardflow.horovod.init(): every session runs on this rank's server, so
            # that its collectives reach the other ranks (its ops request this rank's task).
            target = _default_target[0]
        self.graph = graph or get_default_graph()
        self.target = target
        self._config = _config(config)
        self._handle = _C.SessionHandle(self.graph._handle, target, self._config._to_c())
        self._plans = collections.OrderedDict()

    def _plan(self, fetches):
        # Plans are cached for fetches that are hashable (a tensor, a tuple of tensors, ...).
        try:
            key = (type(fetches), fetches) if not isinstance(fetches, list) else None
            hash(key)
        except TypeError:
            key = None
        if key is not None:
            plan = self._plans.get(key)
            if plan is not None:
                return plan
        plan = _FetchPlan(self.graph, fetches)
        if key is not None:
            self._plans[key] = plan
            if len(self._plans) > 256:
                self._plans.popitem(last=False)
        return plan

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs one step and returns the values of `fetches`, in the same structure.

        `fetches` is a Tensor, SparseTensor (gives a SparseTensorValue), Operation (gives
        None), Variable, name, or a nested list/tuple/dict of them. `feed_dict` maps
        placeholders (tensors or names) to values, and SparseTensors (sf.sparse_placeholder) to
        SparseTensorValues or (indices, values, dense_shape) tuples.
        `options` is a RunOptions; `run_metadata` a RunMetadata filled when tracing.
        get_next() tensors of a tf.data iterator that the fetches need are fed with its next
        element (sf.errors.OutOfRangeError when it has none; shardflow/data).

        Errors of the step arrive as sf.errors exceptions (ValueError for invalid arguments,
        ...), with the engine's message.
        """
        plan = self._plan(fetches)
        feeds = []
        if feed_dict:
            for key, value in _expand_sparse_feeds(feed_dict):
                if isinstance(key, str):
                    key = self.graph.get_tensor_by_name(key)
                elif not isinstance(key, Tensor):
                    raise TypeError("feed_dict keys are tensors, SparseTensors or tensor "
                                    "names, not %r" % (key,))
                if getattr(key, "graph", self.graph) is not self.graph:
                    raise ValueError(
                        "cannot feed '%s': it belongs to another graph than this session's "
                        "(build it in the session's graph, or open the session with "
                        "graph=that graph)" % key.name)
                feeds.append((key.name, _feed_value(key, value)))
        token = self.graph.__dict__.get("_sf_session_token")
        if token is not None:  # Note [Queues per session] (shardflow/queue_ops.py)
            feeds.append((token.name, np.int64(_session_number(self))))
        data_iterators = self.graph.__dict__.get("_data_iterators")
        if data_iterators is not None:  # tf.data get_next() tensors (shardflow/data/iterator_ops)
            feeds = data_iterators.feeds_for_step(self, plan, feeds, feed_dict)
        if options is None:
            out = self._handle.run(feeds, plan.names, plan.targets, 0, 0, False, run_metadata)
        else:
            out = self._handle.run(feeds, plan.names, plan.targets,
                                   options._engine_trace_level(), options.timeout_in_ms,
                                   options.check_numerics, run_metadata)
        return plan.build(out)

    @property
    def graph_def(self):
        """The session's graph as a GraphDef message (TF1's sess.graph_def)."""
        return self.graph.as_graph_def()

    @staticmethod
    def reset(target, containers=None, config=None):
        """TF1's tf.Session.reset: every task of the cluster served at `target`
        ("grpc://host:port"; with `config`'s device_filters, those they match) clears its
        resources — variables, queues, accumulators — so that the next session starts from
        uninitialised variables. `containers`: None or a list of names; all resources here
        live in the default container "" (other names match nothing). A local target ("") has
        nothing shared to reset. An error names the tasks that could not reset."""
        if isinstance(containers, str):
            raise TypeError("Session.reset(containers=...) takes a list of container names, "
                            "not the string %r" % (containers,))
        containers = [str(c) for c in (containers or [])]
        handle = _C.SessionHandle(Graph()._handle, target, _config(config)._to_c())
        try:
            handle.reset(containers)
        finally:
            handle.close()

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """TF1's: a function running `fetches` with its positional arguments fed to
        `feed_list` (tensors or their names), returning what run() would; with
        accept_options, it also takes `options` and `run_metadata` keywords."""
        feed_list = list(feed_list or [])
        for key in feed_list:
            if not isinstance(key, (Tensor, str)):
                raise TypeError("make_callable: feed_list holds tensors or tensor names, not %r"
                                % (key,))
        self._plan(fetches)   # fetches that do not exist fail here, not at the first call

        def call(*args, **kwargs):
            if len(args) != len(feed_list):
                raise TypeError("this callable takes %d feed values (feed_list), got %d"
                                % (len(feed_list), len(args)))
            extra = set(kwargs) - ({"options", "run_metadata"} if accept_options else set())
            if extra:
                raise TypeError("this callable takes no keyword %s%s" % (
                    ", ".join(sorted(extra)),
                    "" if accept_options else " (make_callable(..., accept_options=True))"))
            return self.run(fetches, dict(zip(feed_list, args)) if feed_list else None,
                            options=kwargs.get("options"),
                            run_metadata=kwargs.get("run_metadata"))
        return call

    @property
    def sess_str(self):
        """The target this session runs on (TF1's sess_str)."""
        return self.target

    def partial_run_setup(self, fetches, feeds=None):
        """TF1's experimental partial runs (one step fed and fetched in several calls) are not
        supported: NotImplementedError saying what to do instead."""
        raise NotImplementedError(
            "Session.partial_run_setup: partial runs (one step in several calls) are not "
            "supported; fetch everything in one sess.run, or fetch the intermediate tensors "
            "and feed them back in a second run")

    def partial_run(self, handle, fetches, feed_dict=None):
        """See partial_run_setup."""
        self.partial_run_setup(fetches)

    def list_devices(self):
        """The session's devices, as TF1's: each with `name` (the full name), `device_type`
        ("CPU", "GPU"), `memory_limit_bytes` and `incarnation`; each is also its name as a
        string."""
        return [_DeviceAttributes(d) for d in self._handle.list_devices()]

    def close(self):
        """Releases the session's devices; later runs raise FailedPreconditionError."""
        self._handle.close()

    def as_default(self):
        """``with sess.as_default():`` makes Tensor.eval() and Operation.run() use it."""
        return _DefaultSession(self, close=False)

    def __enter__(self):
        stack = _default_session.__dict__.setdefault("stack", [])
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _default_session.stack.pop()
        self.close()


class _DefaultSession:
    def __init__(self, session, close):
        self._session = session

    def __enter__(self):
        _default_session.__dict__.setdefault("stack", []).append(self._session)
        return self._session

    def __exit__(self, *exc):
        _default_session.stack.pop()


class InteractiveSession(Session):
    """A Session that makes itself the default session when it is made (TF1's
    tf.InteractiveSession), so that ``t.eval()`` and ``op.run()`` work without a ``with`` block;
    close() removes it again."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph=graph, config=config)
        _default_session.__dict__.setdefault("stack", []).append(self)
        self._installed = True

    def close(self):
        if getattr(self, "_installed", False):
            stack = _default_session.__dict__.setdefault("stack", [])
            if self in stack:
                stack.remove(self)
            self._installed = False
        super().close()
