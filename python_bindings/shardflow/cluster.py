"""Clusters from Python, as TensorFlow 1.x's between-graph replication writes them.

Example (one process per task; this is worker `i`)::

    cluster = sf.train.ClusterSpec({"ps": ["127.0.0.1:2222"],
                                    "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]})
    server = sf.train.Server(cluster, job_name="worker", task_index=i)
    with sf.device(sf.train.replica_device_setter(
            cluster=cluster, worker_device="/job:worker/task:%d" % i)):
        ...                                   # variables go to the ps, the rest to this worker
    with sf.Session(server.target) as sess:  # or sf.train.MonitoredTrainingSession(...)
        ...

A parameter server only serves: ``sf.train.Server(cluster, "ps", 0).join()``.

Variables live on their task and are shared by every graph that names them, so the workers'
graphs (each built by its own process) update the same variables on the ps. A worker's graph
whose variable has another shape or dtype than the one on the ps fails with an error naming it.
"""

import os
import weakref

from shardflow import _shardflow as _C
from shardflow.device_spec import DeviceSpec


class JobDef:
    """One job of a ClusterDef: its name and tasks (index -> "host:port")."""

    def __init__(self, name, tasks):
        self.name = name
        self.tasks = tasks

    def __repr__(self):
        return "JobDef(name=%r, tasks=%r)" % (self.name, self.tasks)


class ServerDef:
    """TF1's tf.train.ServerDef: a cluster (ClusterDef), this task's job_name and task_index,
    the protocol and default_session_config. Server takes one, and `server.server_def` is the
    one it serves."""

    def __init__(self, cluster=None, job_name="", task_index=0, protocol="grpc",
                 default_session_config=None):
        self.cluster = cluster if isinstance(cluster, ClusterDef) or cluster is None else \
            ClusterSpec(cluster).as_cluster_def()
        self.job_name = job_name
        self.task_index = task_index
        self.protocol = protocol
        self.default_session_config = default_session_config

    def __eq__(self, other):
        return isinstance(other, ServerDef) and all(
            getattr(self, k) == getattr(other, k) for k in
            ("cluster", "job_name", "task_index", "protocol"))

    def __repr__(self):
        return "ServerDef(cluster=%r, job_name=%r, task_index=%r, protocol=%r)" % (
            self.cluster, self.job_name, self.task_index, self.protocol)


class ClusterDef:
    """TF1's tensorflow.ClusterDef, as ClusterSpec.as_cluster_def() returns it: `job` is a list
    of JobDef."""

    def __init__(self, job=()):
        self.job = list(job)

    def __eq__(self, other):
        return isinstance(other, ClusterDef) and ClusterSpec(self) == ClusterSpec(other)

    def __repr__(self):
        return "ClusterDef(job=%r)" % (self.job,)


class ClusterSpec:
    """The tasks of a cluster: job name -> list of "host:port" (or dict index -> address).

    Example::

        cluster = sf.train.ClusterSpec({"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]})
        cluster.num_tasks("worker")      # 2
        cluster.task_address("ps", 0)    # "ps0:2222"
    """

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        elif isinstance(cluster, ClusterDef):
            cluster = {j.name: dict(j.tasks) for j in cluster.job}
        if not isinstance(cluster, dict):
            raise TypeError("ClusterSpec takes a dict job -> [addresses], not %r" % (cluster,))
        self._jobs = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str) or not job:
                raise ValueError("ClusterSpec: job names are non-empty strings, not %r" % (job,))
            if isinstance(tasks, dict):
                if sorted(tasks) != list(range(len(tasks))):
                    raise ValueError("ClusterSpec: job '%s' lists tasks %s; sparse jobs are not "
                                     "supported, number them 0..n-1" % (job, sorted(tasks)))
                tasks = [tasks[i] for i in range(len(tasks))]
            tasks = list(tasks)
            for address in tasks:
                if not isinstance(address, str) or ":" not in address:
                    raise ValueError("ClusterSpec: task of job '%s' has address %r; addresses "
                                     "are 'host:port'" % (job, address))
            self._jobs[job] = tasks

    @property
    def jobs(self):
        return sorted(self._jobs)

    def as_dict(self):
        return {job: list(tasks) for job, tasks in self._jobs.items()}

    def num_tasks(self, job_name):
        if job_name not in self._jobs:
            raise ValueError("no job '%s' in the cluster (jobs: %s)" % (job_name, self.jobs))
        return len(self._jobs[job_name])

    def task_indices(self, job_name):
        return list(range(self.num_tasks(job_name)))

    def job_tasks(self, job_name):
        self.num_tasks(job_name)
        return list(self._jobs[job_name])

    def task_address(self, job_name, task_index):
        tasks = self.job_tasks(job_name)
        if not 0 <= task_index < len(tasks):
            raise ValueError("job '%s' has %d task(s); there is no task %d"
                             % (job_name, len(tasks), task_index))
        return tasks[task_index]

    def as_cluster_def(self):
        """TF1's ClusterDef of this cluster (`job[i].name`, `job[i].tasks`: index -> address);
        ClusterSpec and Server take it back."""
        return ClusterDef([JobDef(job, dict(enumerate(self._jobs[job]))) for job in self.jobs])

    def __bool__(self):
        return bool(self._jobs)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __repr__(self):
        return "ClusterSpec(%r)" % (self._jobs,)


class Server:
    """One task of a cluster, served in this process (workers' and parameter servers'
    state, and a master: sessions opened at `target` run graphs across the whole cluster).

    Example::

        server = sf.train.Server(cluster, job_name="ps", task_index=0)
        server.join()            # a parameter server serves until the process is stopped

    `config` (a sf.ConfigProto) sets the task's devices and threads (`cpu_device_count`,
    `inter_op_threads`, `intra_op_threads`) and its `auth_token`. `connect_timeout` (seconds,
    default 30, or $SHARDFLOW_CONNECT_TIMEOUT) bounds how long a session opened here waits for
    the other tasks (a ps not up yet) before its error names those that never answered.
    Addresses other than loopback ones need `plaintext=True` (trusted networks; default:
    $SHARDFLOW_PLAINTEXT, so that a TF1 program runs across hosts unchanged with
    SHARDFLOW_PLAINTEXT=1; docs/distributed.md).
    Tensors between tasks of this host cross through shared memory (UCX), and from other hosts
    over gRPC (`config=sf.ConfigProto(transport="grpc")` for gRPC alone).
    `protocol="grpc+ucx"` (or `config=sf.ConfigProto(transport="ucx")`) moves tensors between
    all tasks over UCX (shared memory, TCP or RDMA verbs as UCX_TLS allows) with gRPC for the
    rest, as TF1's "grpc+verbs" did.
    """

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None,
                 config=None, start=True, plaintext=None, connect_timeout=None):
        from shardflow.session import _config, plaintext_from_env
        if isinstance(server_or_cluster_def, ServerDef):
            d = server_or_cluster_def
            job_name = d.job_name or None if job_name is None else job_name
            task_index = d.task_index if task_index is None else task_index
            protocol = d.protocol if protocol is None else protocol
            config = d.default_session_config if config is None else config
            server_or_cluster_def = d.cluster or {}
        cluster = ClusterSpec(server_or_cluster_def)
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError("Server: job_name is needed when the cluster has several jobs "
                                 "(%s)" % ", ".join(cluster.jobs))
            job_name = cluster.jobs[0]
        if task_index is None:
            if cluster.num_tasks(job_name) != 1:
                raise ValueError("Server: task_index is needed: job '%s' has %d tasks"
                                 % (job_name, cluster.num_tasks(job_name)))
            task_index = 0
        cluster.task_address(job_name, int(task_index))  # a clear error for a missing task
        # TF1 named its RDMA data planes "grpc+verbs", "grpc+gdr": here "grpc+ucx" (UCX's shared
        # memory, TCP or verbs for tensors; gRPC for the rest). A task without UCX falls back to
        # gRPC with one logged line.
        # Plain "grpc" (TF1's only one) keeps the config's data plane: "auto" by default, UCX's
        # shared memory with this host's tasks (ConfigProto(transport="grpc") for gRPC alone).
        transports = {None: None, "grpc": None, "grpc+ucx": "ucx"}
        if protocol not in transports:
            raise ValueError("Server: protocol '%s' is not available; use 'grpc' or 'grpc+ucx'%s"
                             % (protocol, " (TF1's RDMA data planes are 'grpc+ucx' here)"
                                if str(protocol).startswith("grpc+") else ""))
        if connect_timeout is None:
            env = os.environ.get("SHARDFLOW_CONNECT_TIMEOUT")
            try:
                connect_timeout = float(env) if env else 30.0
            except ValueError:
                connect_timeout = float("nan")
            if not 0 < connect_timeout < float("inf"):
                raise ValueError("SHARDFLOW_CONNECT_TIMEOUT is '%s'; it is a positive number of "
                                 "seconds (unset: 30)" % env)
        elif not 0 < float(connect_timeout) < float("inf"):
            raise ValueError("Server(connect_timeout=%r): a positive number of seconds"
                             % (connect_timeout,))
        cfg = _config(config)
        if plaintext is None:
            plaintext = plaintext_from_env()
        self._cluster = cluster
        self.job_name = job_name
        self.task_index = int(task_index)
        self.server_def = ServerDef(cluster.as_cluster_def(), job_name, self.task_index,
                                    protocol or "grpc", config)
        self._handle = None
        self._start_args = (
            cluster.as_dict(), job_name, self.task_index, cfg.inter_op_threads,
            cfg.intra_op_threads, cfg.cpu_device_count, cfg.auth_token, bool(plaintext),
            float(connect_timeout), transports[protocol] or cfg.transport)
        if start:
            self.start()

    def start(self):
        """Starts serving (Server(..., start=False) waits for this, as TF1's); a second call
        does nothing."""
        if self._handle is None:
            self._handle = _C.ServerHandle(*self._start_args)
            _SERVERS[self.target] = self

    def _started(self, what):
        if self._handle is None:
            raise ValueError("Server.%s: the server was made with start=False and has not "
                             "started; call server.start() first" % what)
        return self._handle

    def _watch_other_tasks(self):
        """Until _unwatch: a task of the cluster that dies or stops answering (4 s) fails every
        step of sessions opened at this server's target, with an error naming it."""
        others = [(job, t) for job in self._cluster.jobs
                  for t in range(self._cluster.num_tasks(job))
                  if (job, t) != (self.job_name, self.task_index)]
        self._started("watch").watch(others)

    def _unwatch(self):
        if self._handle is not None:
            self._handle.unwatch()

    @property
    def target(self):
        """The target sessions open to use this task's master: "grpc://host:port" (before
        start(), the cluster's address of this task). A server listening on every interface (its
        cluster address is not a loopback one) is reached at "grpc://localhost:port", as TF1's:
        this process's sessions need no plaintext beyond loopback."""
        if self._handle is None:
            return "grpc://" + self._cluster.task_address(self.job_name, self.task_index)
        host, _, port = self._handle.address.rpartition(":")
        if host in ("0.0.0.0", "[::]", "::"):
            host = "localhost"
        return "grpc://%s:%s" % (host, port)

    def join(self):
        """Blocks until the server is stopped (by `stop()` from another thread); starts it
        first when it has not started."""
        self.start()
        self._handle.join()

    def stop(self):
        """Stops serving: running steps are aborted, their callers get an error."""
        if self._handle is not None:
            self._handle.stop()

    @staticmethod
    def create_local_server(config=None, start=True):
        """A one-task cluster on a free loopback port: job "local", as TF1's (its devices are
        "/job:local/task:0/...")."""
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return Server({"local": ["127.0.0.1:%d" % port]}, "local", 0, config=config,
                      start=start)


# The servers of this process by target, for hooks that have a session and need its server.
_SERVERS = weakref.WeakValueDictionary()


def _server_for_target(target):
    return _SERVERS.get(target)


# Ops that make a variable, in TF1 spellings and shardflow's: a ps_ops list naming any of them
# (TF1 code lists ["Variable", "VariableV2"]) sends shardflow's variables (VarHandleOp) to the ps.
_VARIABLE_OPS = frozenset(("Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable"))


class _ReplicaDeviceSetter:
    """The device function of replica_device_setter (see there), as TF1's _ReplicaDeviceChooser:
    the op's device from the scopes inside (op.device) is merged into the ps or worker device,
    its parts winning."""

    def __init__(self, ps_device, worker_device, merge_devices, ps_ops, strategy):
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = set(ps_ops)
        if self._ps_ops & _VARIABLE_OPS:
            self._ps_ops |= _VARIABLE_OPS
        self._strategy = strategy

    def __call__(self, op):
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_device and op.type in self._ps_ops:
            ps_device = DeviceSpec.from_string(self._ps_device)
            if ps_device.job and (not current.job or current.job == ps_device.job):
                ps_device = ps_device.replace(task=self._strategy(op))
            return ps_device.make_merged_spec(current).to_string()
        worker_device = DeviceSpec.from_string(self._worker_device or "")
        return worker_device.make_merged_spec(current).to_string()


class _RoundRobin:
    def __init__(self, num_tasks):
        self._n = num_tasks
        self._next = 0

    def __call__(self, op):
        task = self._next
        self._next = (self._next + 1) % self._n
        return task


class GreedyLoadBalancingStrategy:
    """Puts each variable on the ps task holding the fewest bytes so far (variables of unknown
    size count as 4 bytes), as TF1's tf.contrib.training.GreedyLoadBalancingStrategy.

    Example::

        sf.train.replica_device_setter(cluster=cluster, ps_strategy=
            sf.train.GreedyLoadBalancingStrategy(num_tasks=2))
    """

    def __init__(self, num_tasks, load_fn=None):
        self._loads = [0] * int(num_tasks)
        self._load_fn = load_fn or _variable_bytes

    def __call__(self, op):
        task = min(range(len(self._loads)), key=lambda i: self._loads[i])
        self._loads[task] += self._load_fn(op)
        return task


def _variable_bytes(op):
    size = 4 if op.dtype is None else op.dtype.size
    for d in (op.shape or []):
        size *= int(d) if d is not None and int(d) > 0 else 1
    return size


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None):
    """A device function for ``sf.device(...)``: variables (their handles, initial values,
    reads and updates) go to the parameter-server tasks, round-robin by default (or as
    `ps_strategy` says, e.g. GreedyLoadBalancingStrategy to balance bytes), and every other op
    to `worker_device`.

    Example::

        with sf.device(sf.train.replica_device_setter(
                cluster=cluster, worker_device="/job:worker/task:%d" % task_index)):
            w = sf.Variable(...)          # /job:ps/task:0
            b = sf.Variable(...)          # /job:ps/task:1 (with two ps tasks)
            y = x @ w + b                 # /job:worker/task:<task_index>

    `cluster` (a ClusterSpec or dict) gives the number of ps tasks; without it, `ps_tasks`.
    With no ps task it returns None, as TF1's (so sf.device(None): no device scope at all).
    A device from a scope inside (``with sf.device("/cpu:0")`` around a variable) is merged
    into the ps or worker device, its parts winning ("/job:ps/task:0/device:CPU:0").
    `ps_ops` (default: variables) are the op types sent to the ps; naming any variable op
    ("Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable") names them all.
    """
    if cluster is not None:
        cluster = ClusterSpec(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job
        if ps_job not in cluster.jobs:
            return None
        ps_tasks = cluster.num_tasks(ps_job)
    ps_tasks = int(ps_tasks)
    if ps_tasks < 0:
        raise ValueError("replica_device_setter: ps_tasks is %d; it is >= 0" % ps_tasks)
    if ps_tasks == 0:
        return None
    ps_ops = list(ps_ops) if ps_ops is not None else ["VarHandleOp", "Variable", "VariableV2"]
    if ps_strategy is None:
        ps_strategy = _RoundRobin(ps_tasks)
    elif not callable(ps_strategy):
        raise TypeError("ps_strategy is a function of the op that returns a ps task index")
    return _ReplicaDeviceSetter(ps_device, worker_device or "", merge_devices, ps_ops,
                                ps_strategy)
