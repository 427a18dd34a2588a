"""Horovod/DDP-style data parallelism between graphs: every worker process builds its own replica
of the model in its own graph, under ``sf.device("/job:worker/task:%d" % i)``, and runs it in a
session on its own ``sf.train.Server``; the gradients are averaged across the workers by ring
all-reduce before each applies them, so every replica's variables stay equal.

Example (worker ``i`` of ``n``)::

    server = sf.train.Server(cluster, job_name="worker", task_index=i)
    with sf.device("/job:worker/task:%d" % i):
        loss = model(images, labels)
        opt = sf.distribute.AllReduceOptimizer(sf.train.AdamOptimizer(1e-3), num_replicas=n)
        train_op = opt.minimize(loss)
        sync = sf.distribute.broadcast_variables(sf.global_variables(), n, rank=i)
    with sf.Session(server.target) as sess:
        sess.run(sf.global_variables_initializer())
        sess.run(sync)                    # every replica starts from worker 0's values
        for batch in my_shard:
            sess.run(train_op, feed_dict=...)

The collective group is this task's device on every task of the job (docs/distributed.md,
"Between-graph collectives"): every worker must run the same ops in the same order (train_op
every step, the broadcast once). Small gradients are packed into buckets of ``bucket_bytes``
(default 4 MiB, as the C++ strategy), each bucket one all-reduce that starts as soon as its
gradients exist. ``compression=sf.distribute.Compression.fp16`` (or ``.bf16``) sends float32
buckets in half precision and casts them back, halving the bytes on the wire (Horovod's
``Compression.fp16``); the variables and the optimizer stay float32.
"""

from shardflow import collective_ops
from shardflow.framework import convert_to_tensor, get_default_graph

_BROADCAST_INSTANCE = 1 << 20


class Compression:
    """How AllReduceOptimizer sends float32 gradients (Horovod's ``hvd.Compression``):
    ``none`` as they are, ``fp16`` / ``bf16`` cast to float16 / bfloat16 for the all-reduce and
    back to float32 after."""
    none = None
    fp16 = "float16"
    bf16 = "bfloat16"


def _wire_dtype(compression):
    """The dtype float32 gradients cross the network in, or None; refuses anything else."""
    from shardflow import dtypes
    if compression is None or compression in ("none", "fp32", "float32"):
        return None
    names = {"fp16": dtypes.float16, "float16": dtypes.float16, "half": dtypes.float16,
             "bf16": dtypes.bfloat16, "bfloat16": dtypes.bfloat16}
    if isinstance(compression, str):
        if compression in names:
            return names[compression]
    else:
        try:
            dtype = dtypes.as_dtype(compression)
        except (TypeError, ValueError):
            dtype = None
        if dtype in (dtypes.float16, dtypes.bfloat16):
            return dtype
    raise ValueError("AllReduceOptimizer: compression must be sf.distribute.Compression.none, "
                     ".fp16 or .bf16 (float16 or bfloat16), not %r" % (compression,))


def _require_device(what):
    graph = get_default_graph()
    if not graph._device_for("CollectiveReduce"):
        raise ValueError(
            "%s: build the replica under sf.device('/job:worker/task:N') (this worker's task), "
            "so that each worker's collectives are on its own task" % what)


class AllReduceOptimizer:
    """Wraps an optimizer: ``compute_gradients`` averages every gradient across the
    ``num_replicas`` workers (one per task of the job) before ``apply_gradients``, as Horovod's
    ``DistributedOptimizer``. ``group_key`` names the collective group (the same on every
    worker); the other attributes are the wrapped optimizer's."""

    def __init__(self, optimizer, num_replicas, group_key=1, bucket_bytes=4 << 20,
                 compression=Compression.none, name="AllReduce"):
        if int(num_replicas) < 1:
            raise ValueError("AllReduceOptimizer: num_replicas must be at least 1, not %r"
                             % (num_replicas,))
        if int(bucket_bytes) < 0:
            raise ValueError("AllReduceOptimizer: bucket_bytes must be >= 0 (0: one all-reduce "
                             "per gradient)")
        self._opt = optimizer
        self._n = int(num_replicas)
        self._group_key = int(group_key)
        self._bucket_bytes = int(bucket_bytes)
        self._wire = _wire_dtype(compression)
        self._name = name

    def __getattr__(self, name):
        return getattr(self._opt, name)

    def _buckets(self, grads):
        """Indices of `grads`, last first (the order backpropagation produces them), grouped by
        dtype into buckets of at most bucket_bytes; a gradient of unknown shape goes alone (as
        distributed/strategies/all_reduce.h, Note [Gradient buckets])."""
        out, size, dtype = [], 0, None
        for k in reversed(range(len(grads))):
            g = grads[k]
            known = g.shape.is_fully_defined()
            nbytes = g.shape.num_elements() * g.dtype.size if known else 0
            if (known and self._bucket_bytes > 0 and out and dtype == g.dtype
                    and size + nbytes <= self._bucket_bytes):
                out[-1].append(k)
                size += nbytes
            else:
                out.append([k])
                size = nbytes if known else self._bucket_bytes + 1
                dtype = g.dtype
        return out

    def _mean(self, x, instance):
        """x averaged across the replicas; float32 travels as the compression's dtype."""
        import shardflow as sf
        compress = self._wire is not None and x.dtype.base_dtype == sf.float32
        wire = sf.cast(x, self._wire) if compress else x
        out = collective_ops.all_reduce(wire, self._n, self._group_key, instance, "Add", "Div")
        return sf.cast(out, sf.float32) if compress else out

    def compute_gradients(self, loss, var_list=None, **kwargs):
        pairs = self._opt.compute_gradients(loss, var_list=var_list, **kwargs)
        if self._n == 1:
            return pairs
        _require_device("AllReduceOptimizer")
        import shardflow as sf
        present = [i for i, (g, _) in enumerate(pairs) if g is not None]
        # IndexedSlices (the gradient of a gather) become dense for the all-reduce.
        grads = [convert_to_tensor(pairs[i][0]) for i in present]
        reduced = [None] * len(grads)
        with get_default_graph().name_scope(self._name):
            for b, bucket in enumerate(self._buckets(grads)):
                instance = b + 1
                if len(bucket) == 1:
                    k = bucket[0]
                    reduced[k] = self._mean(grads[k], instance)
                    continue
                flat = sf.concat([sf.reshape(grads[k], [-1]) for k in bucket], 0)
                fused = self._mean(flat, instance)
                offset = 0
                for k in bucket:
                    shape = grads[k].shape.as_list()
                    n = grads[k].shape.num_elements()
                    reduced[k] = sf.reshape(sf.slice(fused, [offset], [n]), shape)
                    offset += n
        out = list(pairs)
        for j, i in enumerate(present):
            out[i] = (reduced[j], pairs[i][1])
        return out

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._opt.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        return self.apply_gradients(self.compute_gradients(loss, var_list=var_list,
                                                           grad_loss=grad_loss),
                                    global_step=global_step, name=name)


def broadcast_variables(variables, num_replicas, rank, group_key=2):
    """An op that gives every worker worker 0's values of ``variables`` (the same list, in the
    same order, on every worker); ``rank`` is this worker's task index. Run it once after
    initialising (or restoring, on worker 0)."""
    import shardflow as sf
    variables = list(variables)
    if int(num_replicas) < 1 or not 0 <= int(rank) < int(num_replicas):
        raise ValueError("broadcast_variables: rank %r must be in [0, num_replicas=%r)"
                         % (rank, num_replicas))
    if int(num_replicas) == 1 or not variables:
        return sf.no_op(name="broadcast_variables")
    _require_device("broadcast_variables")
    assigns = []
    with get_default_graph().name_scope("broadcast_variables"):
        for k, v in enumerate(variables):
            shape = v.shape.as_list()
            instance = _BROADCAST_INSTANCE + k
            if int(rank) == 0:
                assigns.append(collective_ops.broadcast_send(v.value(), shape, v.dtype.base_dtype,
                                                             num_replicas, group_key, instance))
            else:
                got = collective_ops.broadcast_recv(shape, v.dtype.base_dtype, num_replicas,
                                                    group_key, instance)
                assigns.append(v.assign(got, read_value=False))
    return sf.group(*assigns, name="broadcast_variables")
