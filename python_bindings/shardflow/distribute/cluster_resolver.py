"""Cluster resolvers, as tf.distribute.cluster_resolver: the ClusterSpec of the job a launcher
started this process in, and this task's type and index, from the environment.

    import shardflow as sf
    resolver = sf.distribute.cluster_resolver.SlurmClusterResolver()   # under srun
    server = sf.train.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                             task_index=resolver.task_id)

Resolvers: TFConfigClusterResolver (TF_CONFIG, TensorFlow's JSON), SlurmClusterResolver
(SLURM_PROCID, SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE, ...), MPIClusterResolver (OpenMPI's
OMPI_COMM_WORLD_*), KubernetesClusterResolver (an indexed Job: JOB_COMPLETION_INDEX,
SHARDFLOW_NUM_TASKS, SHARDFLOW_SERVICE, HOSTNAME), TorchrunClusterResolver (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT), and SimpleClusterResolver (a cluster given outright);
resolve() picks the first whose variables are set. MPI
and torchrun give ranks but no addresses: cluster_spec() then meets the other ranks at the
coordinator (rank 0; MASTER_ADDR:MASTER_PORT for torchrun, 127.0.0.1:port_base-1 for MPI on one
node, or `coordinator=`) and waits at most `rendezvous_timeout` seconds, naming the ranks that
never came. Each task of a node listens on port_base + its local rank. One implementation with the
CLI's `--cluster auto` (distributed/cluster_resolver.h); a malformed environment raises
InvalidArgumentError naming the variable.
"""

import os

from shardflow import _shardflow as _C
from shardflow.cluster import ClusterSpec


class ClusterResolver:
    """Base: resolves `source` from `environment` (default: os.environ) when first asked."""

    source = "auto"

    def __init__(self, port_base=2222, coordinator=None, rendezvous_timeout=120.0,
                 environment=None):
        self._port_base = int(port_base)
        self._coordinator = coordinator or ""
        self._timeout = float(rendezvous_timeout)
        self._env = dict(os.environ if environment is None else environment)
        self._resolved = None
        self._cluster = None

    def _resolve(self):
        if self._resolved is None:
            self._resolved = _C.resolve_cluster(self.source, self._env, self._port_base,
                                                self._coordinator)
        return self._resolved

    @property
    def task_type(self):
        return self._resolve()["job"]

    @property
    def task_id(self):
        return self._resolve()["task"]

    @property
    def environment(self):
        """Which launcher the environment came from ("TF_CONFIG", "Slurm", ...)."""
        return self._resolve()["source"]

    def num_tasks(self, task_type=None):
        return self.cluster_spec().num_tasks(task_type or self.task_type)

    def cluster_spec(self):
        """The cluster as a ClusterSpec (after a rendezvous for MPI and torchrun)."""
        if self._cluster is None:
            r = self._resolve()
            jobs = r["cluster"]
            if not jobs:
                jobs = _C.gather_cluster_spec(r["source"], r["job"], r["task"], r["num_tasks"],
                                              r["port"], r["coordinator"], self._timeout)
            self._cluster = ClusterSpec({k: list(v) for k, v in jobs.items()})
        return self._cluster

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """TF's: {device type: count} of the accelerators of this machine ({"GPU": 2}; {}
        without any), which every task of the cluster is taken to have."""
        from shardflow.python.client.device_lib import list_local_devices
        counts = {}
        for d in list_local_devices(config_proto):
            if d.device_type != "CPU":
                counts[d.device_type] = counts.get(d.device_type, 0) + 1
        return counts

    def master(self, task_type=None, task_id=None, rpc_layer="grpc"):
        """The target of a task's server ("grpc://host:port"; this task's by default)."""
        task_type = self.task_type if task_type is None else task_type
        task_id = self.task_id if task_id is None else task_id
        address = self.cluster_spec().task_address(task_type, int(task_id))
        return "%s://%s" % (rpc_layer, address) if rpc_layer else address


class TFConfigClusterResolver(ClusterResolver):
    source = "TF_CONFIG"


class SlurmClusterResolver(ClusterResolver):
    source = "Slurm"


class MPIClusterResolver(ClusterResolver):
    source = "OpenMPI"


class KubernetesClusterResolver(ClusterResolver):
    source = "Kubernetes"


class TorchrunClusterResolver(ClusterResolver):
    source = "torchrun"


class SimpleClusterResolver(ClusterResolver):
    """A cluster given outright, as TF's: `cluster_spec` (a ClusterSpec or a dict of job ->
    addresses) and this task's `task_type` and `task_id`; nothing is read from the
    environment. task_type and task_id may be set later."""

    task_type = None
    task_id = None

    def __init__(self, cluster_spec, master="", task_type=None, task_id=None, environment="",
                 num_accelerators=None, rpc_layer=None):
        super().__init__(environment={})
        self._cluster = ClusterSpec(cluster_spec)
        self._master = master
        self._environment = environment
        self._rpc_layer = rpc_layer
        self.task_type, self.task_id = task_type, task_id
        self._num_accelerators = dict(num_accelerators or {})

    @property
    def environment(self):
        return self._environment

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """The num_accelerators given ({device type: count})."""
        return dict(self._num_accelerators)

    def cluster_spec(self):
        return self._cluster

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """`master` as given; with a task_type, that task's target."""
        rpc_layer = rpc_layer if rpc_layer is not None else self._rpc_layer
        if task_type is None and task_id is None:
            if rpc_layer and self._master and "://" not in self._master:
                return "%s://%s" % (rpc_layer, self._master)
            return self._master
        address = self._cluster.task_address(task_type, int(task_id or 0))
        return "%s://%s" % (rpc_layer, address) if rpc_layer else address


def resolve(**kwargs):
    """The resolver of whichever launcher started this process (TF_CONFIG first, then Slurm,
    OpenMPI, a Kubernetes indexed Job, torchrun); InvalidArgumentError when none did."""
    r = ClusterResolver(**kwargs)
    r._resolve()
    return r
