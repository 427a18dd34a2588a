"""Horovod's TensorFlow 1.x API (horovod.tensorflow) on shardflow's collectives, so that a Horovod
program runs with one changed import and the launchers it already uses (mpirun, srun, torchrun,
a Kubernetes indexed Job, TF_CONFIG):

    import shardflow as tf
    import shardflow.horovod as hvd

    hvd.init()
    opt = hvd.DistributedOptimizer(tf.train.AdamOptimizer(1e-3 * hvd.size()))
    train_op = opt.minimize(loss, global_step=tf.train.get_or_create_global_step())
    hooks = [hvd.BroadcastGlobalVariablesHook(0), tf.train.StopAtStepHook(last_step=1000)]
    with tf.train.MonitoredTrainingSession(checkpoint_dir=ckpt if hvd.rank() == 0 else None,
                                           hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train_op, feed_dict=...)

How it maps. init() finds this process's rank among the launcher's processes
(sf.distribute.cluster_resolver.resolve(): each process of a node listens on
$SHARDFLOW_PORT_BASE (default 2222) + its local rank, and the ranks meet at rank 0 as the CLI's
`--cluster auto` does) and starts an in-process server for it. From then on, as in Horovod where
every session's collectives reach the other ranks: a session opened with the local target ""
runs on this rank's server, and ops built without a job request this rank's task ("/gpu:0"
becomes "/job:worker/task:R/gpu:0"), so each rank computes on its own devices.
DistributedOptimizer averages (op=Average) or sums (op=Sum) the gradients across ranks by ring
all-reduce in buckets (sf.distribute.AllReduceOptimizer; compression=hvd.Compression.fp16 sends
float32 gradients as float16); broadcast_global_variables / BroadcastGlobalVariablesHook give
every rank root_rank's values; allreduce, allgather and broadcast of single tensors are
collective ops (every rank must build and run them in the same order, as in Horovod). Without a
launcher (a plain `python3 prog.py`) there is one rank and nothing is distributed. Horovod's
Keras flavour is shardflow/horovod_keras.py, importable as shardflow.horovod.keras and
shardflow.horovod.tensorflow.keras (this module is also shardflow.horovod.tensorflow).
"""

import os

from shardflow.distribute import AllReduceOptimizer
from shardflow.monitored_session import SessionRunHook

_state = None  # after init(): dict(rank, size, local_rank, local_size, server, device)
# Instance keys of this module's own collectives; group keys apart from AllReduceOptimizer's
# (1) and broadcast_variables' (2) default groups.
_GROUP_OPS = 3
_next_instance = [1]


class Compression:
    """How DistributedOptimizer sends float32 gradients: `none` as they are, `fp16` as
    float16 (cast back to float32 after the all-reduce)."""
    none = None
    fp16 = "float16"


Average = "Average"
Sum = "Sum"


def _port_base():
    raw = os.environ.get("SHARDFLOW_PORT_BASE", "2222")
    try:
        port = int(raw)
    except ValueError:
        port = -1
    if not 2 <= port <= 65535:
        raise ValueError("SHARDFLOW_PORT_BASE is %r; it is the port the first process of each "
                         "node listens on (2..65535)" % raw)
    return port


def init(comm=None):
    """Finds this process's rank and starts its server (module docstring); a second call does
    nothing. `comm` (Horovod's MPI communicator or rank list) must be None: every process the
    launcher started is one rank."""
    global _state
    if _state is not None:
        return
    if comm is not None:
        raise ValueError("hvd.init(comm=...) is not supported: every process the launcher "
                         "started is one rank")
    from shardflow.distribute import cluster_resolver
    from shardflow.errors import InvalidArgumentError
    try:
        resolver = cluster_resolver.resolve(port_base=_port_base())
    except InvalidArgumentError as e:
        if "found no launcher" not in str(e):
            raise  # a launcher's environment, malformed: its error names the variable
        resolver = None
    if resolver is None:
        _state = dict(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1,
                      server=None, device="")
        return
    from shardflow.cluster import Server
    cluster = resolver.cluster_spec()
    job, task = resolver.task_type, resolver.task_id
    size = cluster.num_tasks(job)
    server = Server(cluster, job_name=job, task_index=task) if size > 1 else None
    device = "/job:%s/task:%d" % (job, task) if size > 1 else ""
    # The ranks of this node: the tasks whose address has this task's host.
    host = cluster.task_address(job, task).rsplit(":", 1)[0]
    hosts = [a.rsplit(":", 1)[0] for a in cluster.job_tasks(job)]
    here = [t for t, h in enumerate(hosts) if h == host]
    local_rank, local_size = here.index(task), len(here)
    nodes = list(dict.fromkeys(hosts))   # the nodes in the order of their first rank
    _state = dict(rank=task, size=size, local_rank=local_rank, local_size=local_size,
                  cross_rank=nodes.index(host), cross_size=len(nodes), server=server,
                  device=device)
    if server is not None:
        from shardflow import framework, session
        framework._set_base_device(device)
        session._set_default_target(server.target)


def _require_init(what):
    if _state is None:
        raise ValueError("hvd.%s: call hvd.init() first" % what)
    return _state


def is_initialized():
    return _state is not None


def shutdown():
    """Stops this rank's server; sessions opened afterwards are local again."""
    global _state
    if _state is None:
        return
    if _state["server"] is not None:
        from shardflow import framework, session
        framework._set_base_device("")
        session._set_default_target("")
        _state["server"].stop()
    _state = None


def rank():
    return _require_init("rank")["rank"]


def size():
    return _require_init("size")["size"]


def local_rank():
    return _require_init("local_rank")["local_rank"]


def local_size():
    return _require_init("local_size")["local_size"]


def cross_rank():
    """This rank's node among the nodes (in the order of their first rank)."""
    return _require_init("cross_rank")["cross_rank"]


def cross_size():
    """The number of nodes."""
    return _require_init("cross_size")["cross_size"]


def mpi_threads_supported():
    return False


# What Horovod reports of its build: shardflow's collectives are its own ring all-reduce over
# its transports (gRPC, UCX), launched by any launcher; no MPI, Gloo or NCCL library inside.
def mpi_built():
    return False


def mpi_enabled():
    return False


def gloo_built():
    return False


def gloo_enabled():
    return False


def nccl_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False


def _scalar_op(value, name):
    import shardflow as sf
    return sf.constant(value, dtype=sf.int32, name=name)


def size_op(process_set_id=0, name=None):
    """size() as an int32 scalar tensor (the process's one set of ranks)."""
    return _scalar_op(size(), name or "size")


def rank_op(process_set_id=0, name=None):
    return _scalar_op(rank(), name or "rank")


def local_size_op(process_set_id=0, name=None):
    return _scalar_op(local_size(), name or "local_size")


def local_rank_op(process_set_id=0, name=None):
    return _scalar_op(local_rank(), name or "local_rank")


def _instance():
    k = _next_instance[0]
    _next_instance[0] += 1
    return k


def allreduce(tensor, average=None, device_dense="", device_sparse="", compression=None,
              op=None, name=None):
    """`tensor` summed (op=Sum) or averaged (the default, op=Average) across the ranks."""
    import shardflow as sf
    from shardflow import collective_ops
    if average is not None and op is not None:
        raise ValueError("hvd.allreduce: give average or op, not both")
    mean = op != Sum if average is None else bool(average)
    n = size()
    tensor = sf.convert_to_tensor(tensor)
    if n == 1:
        return sf.identity(tensor, name=name)
    return collective_ops.all_reduce(tensor, n, _GROUP_OPS, _instance(), "Add",
                                     "Div" if mean else "Id")


def allgather(tensor, name=None):
    """The ranks' `tensor`s concatenated along dimension 0, in rank order (every rank's of the
    same shape)."""
    import shardflow as sf
    from shardflow import collective_ops
    n = size()
    tensor = sf.convert_to_tensor(tensor)
    if n == 1:
        return sf.identity(tensor, name=name)
    return collective_ops.all_gather(tensor, n, _GROUP_OPS, _instance())


def broadcast(tensor, root_rank, name=None):
    """root_rank's `tensor` on every rank (of the same shape and dtype everywhere)."""
    import shardflow as sf
    n = size()
    if not 0 <= int(root_rank) < n:
        raise ValueError("hvd.broadcast: root_rank %r is not a rank of %d" % (root_rank, n))
    tensor = sf.convert_to_tensor(tensor)
    if n == 1:
        return sf.identity(tensor, name=name)
    shape = tensor.shape.as_list()
    if any(d is None for d in shape):
        raise ValueError("hvd.broadcast: the tensor's shape must be known (got %s)" % shape)
    return _from_root(tensor, int(root_rank), n, name)


def _from_root(tensor, root, n, name=None):
    """root's `tensor` on every rank: a broadcast from rank 0 (a between-graph group's
    source is its first member), else a sum of root's value and everyone else's zeros."""
    import shardflow as sf
    from shardflow import collective_ops
    instance = _instance()
    if root == 0:
        shape, dtype = tensor.shape.as_list(), tensor.dtype.base_dtype
        if rank() == 0:
            sent = collective_ops.broadcast_send(tensor, shape, dtype, n, _GROUP_OPS, instance)
            with sf.control_dependencies([sent]):
                return sf.identity(tensor, name=name)
        return collective_ops.broadcast_recv(shape, dtype, n, _GROUP_OPS, instance)
    mine = tensor if rank() == root else sf.zeros_like(tensor)
    return collective_ops.all_reduce(mine, n, _GROUP_OPS, instance, "Add", "Id")


def broadcast_variables(variables, root_rank):
    """An op giving every rank root_rank's values of `variables` (the same list, in the same
    order, on every rank)."""
    import shardflow as sf
    from shardflow.distribute import broadcast_variables as _broadcast
    n = size()
    if not 0 <= int(root_rank) < n:
        raise ValueError("hvd.broadcast_variables: root_rank %r is not a rank of %d"
                         % (root_rank, n))
    if n == 1:
        return sf.no_op(name="broadcast_variables")
    if int(root_rank) == 0:
        return _broadcast(variables, n, rank=rank())
    return sf.group(*[v.assign(_from_root(v.value(), int(root_rank), n), read_value=False)
                      for v in variables], name="broadcast_variables")


def broadcast_global_variables(root_rank):
    """broadcast_variables(sf.global_variables(), root_rank)."""
    from shardflow.variables import global_variables
    return broadcast_variables(global_variables(), root_rank)


class BroadcastGlobalVariablesHook(SessionRunHook):
    """Gives every rank root_rank's initial (or, on root_rank, restored) variables once the
    session exists, so that all replicas start equal."""

    def __init__(self, root_rank, device=""):
        self.root_rank = root_rank
        self._op = None

    def begin(self):
        if self._op is None:
            self._op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session, coord):
        session.run(self._op)


class DistributedOptimizer(AllReduceOptimizer):
    """Wraps an optimizer so that compute_gradients averages (op=Average) or sums (op=Sum)
    each gradient across the ranks before apply_gradients (sf.distribute.AllReduceOptimizer:
    bucketed ring all-reduce). Attributes not listed are the wrapped optimizer's. A Keras
    optimizer (horovod.keras' use) comes back as itself, its training step so wrapped."""

    def __new__(cls, optimizer, *args, **kwargs):
        from shardflow.keras.optimizers import Optimizer as KerasOptimizer
        if isinstance(optimizer, KerasOptimizer):
            return _distributed_keras(optimizer, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, optimizer, name=None, use_locking=False, device_dense="",
                 device_sparse="", compression=Compression.none, sparse_as_dense=False,
                 op=Average, backward_passes_per_step=1, bucket_bytes=4 << 20):
        if op not in (Average, Sum):
            raise ValueError("hvd.DistributedOptimizer: op is hvd.Average or hvd.Sum, not %r"
                             % (op,))
        if int(backward_passes_per_step) != 1:
            raise ValueError("hvd.DistributedOptimizer: backward_passes_per_step=%r is not "
                             "supported (1 only)" % (backward_passes_per_step,))
        super().__init__(optimizer, num_replicas=size(), bucket_bytes=bucket_bytes,
                         compression=compression, name=name or "DistributedOptimizer")
        self._sum = op == Sum

    def compute_gradients(self, *args, **kwargs):
        pairs = super().compute_gradients(*args, **kwargs)
        if self._sum and self._n > 1:  # the mean, times the ranks
            import shardflow as sf
            pairs = [(g if g is None else sf.multiply(g, float(self._n)), v) for g, v in pairs]
        return pairs


def _distributed_keras(optimizer, name=None, use_locking=False, device_dense="",
                       device_sparse="", compression=Compression.none, sparse_as_dense=False,
                       op=Average, backward_passes_per_step=1, bucket_bytes=4 << 20):
    """`optimizer` (a Keras one) whose step minimizes with DistributedOptimizer."""
    make = optimizer._tf_optimizer

    def distributed(lr):
        return DistributedOptimizer(make(lr), name=name, compression=compression, op=op,
                                    backward_passes_per_step=backward_passes_per_step,
                                    bucket_bytes=bucket_bytes)
    optimizer._tf_optimizer = distributed
    return optimizer


def _register_keras_modules():
    """horovod.tensorflow (this module), horovod.keras and horovod.tensorflow.keras
    (shardflow/horovod_keras.py) under shardflow.horovod, so that Horovod programs change only
    the package name: ``import shardflow.horovod.keras as hvd``."""
    import sys
    from shardflow import horovod_keras
    this = sys.modules[__name__]
    sys.modules[__name__ + ".tensorflow"] = this
    sys.modules[__name__ + ".keras"] = horovod_keras
    sys.modules[__name__ + ".tensorflow.keras"] = horovod_keras
    this.tensorflow, this.keras = this, horovod_keras
    return horovod_keras.callbacks


callbacks = _register_keras_modules()   # hvd.callbacks.* (as before, beside horovod.keras's)
