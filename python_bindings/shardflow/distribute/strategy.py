"""TF 1.15's tf.distribute strategies for one process: Strategy (and the default one, in force
outside every scope), OneDeviceStrategy and MirroredStrategy.

Example (a TF1 custom loop, two replicas on a session with two CPU devices)::

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        w = tf.Variable(tf.zeros([4, 1]))                  # one variable, read by both replicas
    it = strategy.experimental_distribute_dataset(dataset).make_initializable_iterator()

    def grads(x, y):                                       # built once per device
        loss = tf.reduce_sum(tf.square(x @ w - y)) / GLOBAL_BATCH
        return tf.gradients(loss, [w])[0]

    g = strategy.reduce(tf.distribute.ReduceOp.SUM,
                        strategy.experimental_run_v2(grads, args=it.get_next()), axis=None)
    train = tf.train.GradientDescentOptimizer(0.1).apply_gradients([(g, w)])
    with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess: ...

Replication is in-graph (shardflow/distribute/replica_threads.py): experimental_run_v2 builds fn
once per device under tf.device, replicas after the first reusing replica 0's variables; a
reduction is an AddN of the replicas' values (shardflow/distribute/cross_device_ops.py); each
replica's part of a distributed batch is a slice of the global batch (input_lib.py).
Variables made in ``strategy.scope()`` are ordinary variables (one copy, not one per device).

Not done here, unlike TF: Keras' fit/evaluate/predict and the Estimator do not replicate. Keras
under any strategy trains one replica on the whole batch: the same update as TF's synchronous
replicas, up to batch normalisation's per-replica statistics. An Estimator takes a strategy of
one replica (RunConfig refuses more). An optimizer's minimize/apply_gradients called inside a
replica function of several replicas does as TF1's: the loss scaled by 1/replicas, the
gradients summed over the replicas in a merge_call, one update (shardflow/train.py).
"""

import contextlib
import re

from shardflow import dtypes, framework, nest, ops
from shardflow.distribute import context, input_lib, replica_threads
from shardflow.distribute.cross_device_ops import (CrossDeviceOps, ReductionToOneDevice,
                                                   broadcast, reduce_value)
from shardflow.distribute.values import (DistributedValues, ReduceOp, as_reduce_op,
                                         local_results, select_replica)

_LOCAL_DEVICE = re.compile(
    r"^(?:/?job:localhost)?(?:/replica:0)?(?:/task:0)?/?(?:device:)?(CPU|GPU):(\d+)$", re.I)


def canonical_device(device, what):
    """'/cpu:0', 'CPU:0', '/device:GPU:1', '/job:localhost/replica:0/task:0/device:CPU:0' as
    '/device:CPU:0' etc.; ValueError naming the device for anything else."""
    if not isinstance(device, str):
        raise TypeError("%s: a device is a name such as '/cpu:0', not %r" % (what, device))
    m = _LOCAL_DEVICE.match(device.strip())
    if m is not None:
        return "/device:%s:%d" % (m.group(1).upper(), int(m.group(2)))
    if "job:" in device.lower():
        raise ValueError(
            "%s: device %r is not this process's: strategies here replicate over the devices "
            "of one process. Across processes use sf.distribute.AllReduceOptimizer (all-reduce "
            "between graphs) or tf.train.replica_device_setter (parameter servers)"
            % (what, device))
    raise ValueError("%s: unknown device %r; name this process's devices as '/cpu:N' or "
                     "'/gpu:N' (also '/device:CPU:N', '/job:localhost/replica:0/task:0/"
                     "device:GPU:N')" % (what, device))


_gpu_count = []


def local_gpu_count():
    """How many GPU devices a session of this process has (checked once)."""
    if not _gpu_count:
        from shardflow import testing
        _gpu_count.append(len(testing._gpu_devices()) if testing.is_built_with_cuda() else 0)
    return _gpu_count[0]


def _check_gpus(devices, what):
    for d in devices:
        if ":GPU:" in d and int(d.rsplit(":", 1)[1]) >= local_gpu_count():
            raise ValueError("%s: device %r: this process has %d GPU device(s); use '/cpu:N' "
                             "devices (with tf.ConfigProto(device_count={'CPU': n}) for the "
                             "session)" % (what, d, local_gpu_count()))


def _require_cross_replica(strategy, what):
    """Raises unless code is built outside every scope, or in `strategy`'s cross-replica
    context (as TF's _require_cross_replica_or_default_context_extended)."""
    mode = context.current_mode()
    if mode is None or (mode.strategy is strategy and mode.replica_context is None):
        return
    if mode.strategy is not strategy:
        raise RuntimeError("Mixing different tf.distribute.Strategy objects: %r is not %r"
                           % (mode.strategy, strategy))
    raise RuntimeError("%s needs the cross-replica context, not a replica function: reduce in "
                       "fn with tf.distribute.get_replica_context().all_reduce(...), or reduce "
                       "experimental_run_v2's result outside" % what)


class _Scope:
    """What ``strategy.scope()`` returns: the strategy's cross-replica mode inside."""

    def __init__(self, strategy):
        self._strategy = strategy
        self._pushed = None

    def __enter__(self):
        mode = context.current_mode()
        default = default_strategy()
        if mode is not None and mode.strategy is not default:
            if mode.strategy is self._strategy and mode.replica_context is None:
                return self._strategy  # already in its scope
            if self._strategy is default:
                raise RuntimeError("Must not nest tf.distribute.Strategy scopes: the default "
                                   "strategy's scope inside %r's" % (mode.strategy,))
            _require_cross_replica(self._strategy, "%r.scope()" % (self._strategy,))
        self._pushed = context.push_mode(context.Mode(self._strategy, None))
        self._pushed.__enter__()
        return self._strategy

    def __exit__(self, *exc):
        if self._pushed is not None:
            pushed, self._pushed = self._pushed, None
            pushed.__exit__(*exc)


class StrategyExtended:
    """TF's strategy.extended: the devices and the lower-level calls."""

    experimental_require_static_shapes = False
    experimental_between_graph = False
    experimental_should_init = True
    should_checkpoint = True
    should_init = True
    should_save_summary = True

    def __init__(self, container_strategy, devices, cross_device_ops=None):
        self._strategy = container_strategy
        self._devices = tuple(devices)
        self._cross_device_ops = cross_device_ops or ReductionToOneDevice()
        self.default_replica_context = context.ReplicaContext(container_strategy, 0,
                                                              default=True)

    @property
    def worker_devices(self):
        """The replicas' devices, in replica order (empty for the default strategy)."""
        return self._devices

    @property
    def parameter_devices(self):
        return self._devices

    @property
    def num_replicas(self):
        return max(1, len(self._devices))

    def call_for_each_replica(self, fn, args=(), kwargs=None):
        """fn built once per replica (see experimental_run_v2)."""
        with self._strategy.scope():
            args, kwargs = tuple(args), dict(kwargs or {})
            for v in _distributed_leaves((args, kwargs)):
                if len(v.values) != self.num_replicas:
                    raise ValueError("experimental_run_v2: an argument has %d per-replica "
                                     "values for %d replicas" % (len(v.values),
                                                                 self.num_replicas))
            if len(self._devices) > 1:
                return replica_threads.call_for_each_replica(
                    self._strategy, framework.get_default_graph(), self._devices, fn, args,
                    kwargs)
            args, kwargs = select_replica(0, (args, kwargs))
            placed = (framework.device(self._devices[0]) if self._devices
                      else contextlib.nullcontext())
            with context.ReplicaContext(self._strategy, 0), placed:
                return fn(*args, **kwargs)

    def reduce_to(self, reduce_op, value, destinations):
        """`value` reduced (SUM or MEAN over the replicas) on the device `destinations` names."""
        reduce_op = as_reduce_op(reduce_op, "reduce_to")
        return reduce_value(reduce_op, value, self.num_replicas, destinations)

    def batch_reduce_to(self, reduce_op, value_destination_pairs):
        return [self.reduce_to(reduce_op, v, d) for v, d in value_destination_pairs]

    def broadcast_to(self, tensor, destinations):
        return self._cross_device_ops.broadcast(tensor, destinations)

    def _reduce(self, reduce_op, value):
        return reduce_value(reduce_op, value, self.num_replicas)

    def _all_reduce(self, reduce_op, value):
        """ReplicaContext.all_reduce's merge: a Mirrored value of the reduction."""
        if isinstance(value, DistributedValues):
            return broadcast(self._reduce(reduce_op, value), self._devices)
        return self._reduce(reduce_op, value)

    def update(self, var, fn, args=(), kwargs=None, group=True):
        """fn(var, *args, **kwargs) once (variables are not mirrored here)."""
        args, kwargs = select_replica(0, (tuple(args), dict(kwargs or {})))
        return fn(var, *args, **kwargs)

    def update_non_slot(self, colocate_with, fn, args=(), kwargs=None, group=True):
        return fn(*args, **(kwargs or {}))

    def non_slot_devices(self, var_list):
        return self._devices[:1]

    def read_var(self, v):
        return ops.identity(v)

    def value_container(self, value):
        return value

    def colocate_vars_with(self, colocate_with_variable):
        return contextlib.nullcontext()


def _distributed_leaves(structure):
    return [v for v in nest.flatten(structure) if isinstance(v, DistributedValues)]


def _length(tensor, axis):
    """The length of `tensor` along `axis`: an int when known, else a scalar int32 tensor."""
    if tensor.shape.ndims is not None:
        n = tensor.shape.as_list()[axis]
        if n is not None:
            return n
    return ops.shape(tensor)[axis]


class Strategy:
    """TF 1.15's tf.distribute.Strategy: how computation is replicated (see the module's text
    for what shardflow does). Made through OneDeviceStrategy or MirroredStrategy."""

    def __init__(self, extended):
        self._extended = extended

    @property
    def extended(self):
        return self._extended

    @property
    def num_replicas_in_sync(self):
        return self._extended.num_replicas

    def scope(self):
        """``with strategy.scope():`` makes this the current strategy (get_strategy()) in a
        cross-replica context. Variables made inside are ordinary variables."""
        return _Scope(self)

    def experimental_run_v2(self, fn, args=(), kwargs=None):
        """fn(*args, **kwargs) built once per replica, each under its device (replica i gets
        component i of each PerReplica argument); the results, with every leaf that differs
        between the replicas a PerReplica (nothing is wrapped with one replica)."""
        return self._extended.call_for_each_replica(fn, args, kwargs)

    def run(self, fn, args=(), kwargs=None):
        """experimental_run_v2 under TF 2's name."""
        return self._extended.call_for_each_replica(fn, args, kwargs)

    def experimental_run(self, fn, input_iterator=None):
        """TF1's: fn(input_iterator.get_next()) per replica (fn() without an iterator)."""
        args = () if input_iterator is None else (input_iterator.get_next(),)
        return self._extended.call_for_each_replica(fn, args)

    def reduce(self, reduce_op, value, axis=None):
        """`value` (a PerReplica, or a tensor the same on every replica) summed or averaged
        over the replicas; with `axis`, each replica's value is first reduced along it (MEAN:
        divided by the total length of that axis over the replicas)."""
        reduce_op = as_reduce_op(reduce_op, "Strategy.reduce")
        _require_cross_replica(self, "Strategy.reduce")
        if axis is None:
            return self._extended._reduce(reduce_op, value)
        if not isinstance(value, DistributedValues):  # the same on every replica
            local = ops.reduce_sum if reduce_op == ReduceOp.SUM else ops.reduce_mean
            return self._extended._reduce(reduce_op, local(value, axis=axis))
        sums, lengths = [], []
        for v, d in zip(value.values, value.devices):
            with framework.device(d) if d else contextlib.nullcontext():
                v = framework.convert_to_tensor(v)
                sums.append(ops.reduce_sum(v, axis=axis))
                lengths.append(_length(v, axis))
        total = ops.add_n(sums)
        if reduce_op == ReduceOp.SUM:
            return total
        if all(isinstance(n, int) for n in lengths):
            return total / float(sum(lengths))
        count = ops.add_n([framework.convert_to_tensor(n, dtype=dtypes.int32) for n in lengths])
        return total / ops.cast(count, total.dtype)

    def experimental_local_results(self, value):
        """The values of each replica, as a tuple (`(value,)` when nothing is distributed)."""
        return local_results(value, self.num_replicas_in_sync)

    def unwrap(self, value):
        """TF1's name of experimental_local_results."""
        return local_results(value, self.num_replicas_in_sync)

    def group(self, value, name=None):
        """One op that runs every replica's part of `value`."""
        flat = nest.flatten(self.experimental_local_results(value))
        if len(flat) == 1:
            return flat[0].op if hasattr(flat[0], "op") else flat[0]
        return ops.group(*flat, name=name)

    def experimental_distribute_dataset(self, dataset):
        """The dataset, read by the replicas: each batch is split between them (replica i
        takes the i-th slice of every global batch; input_lib.DistributedDataset)."""
        return input_lib.DistributedDataset(dataset, self._extended.worker_devices, True)

    def make_dataset_iterator(self, dataset):
        """TF1's: an initializable iterator over experimental_distribute_dataset(dataset)
        (run its initialize() ops, or its initializer, first)."""
        return self.experimental_distribute_dataset(dataset).make_initializable_iterator()

    def make_input_fn_iterator(self, input_fn, replication_mode=None):
        """TF1's: an initializable iterator over the dataset input_fn(InputContext) returns;
        each replica reads an element of its own (input_fn batches per replica:
        ``ctx.get_per_replica_batch_size(global_batch)``)."""
        if replication_mode not in (None, input_lib.InputReplicationMode.PER_WORKER):
            raise ValueError("make_input_fn_iterator: replication_mode must be "
                             "InputReplicationMode.PER_WORKER, not %r" % (replication_mode,))
        ctx = input_lib.InputContext(1, 0, self.num_replicas_in_sync)
        dataset = input_fn(ctx)
        return input_lib.DistributedDataset(
            dataset, self._extended.worker_devices, False).make_initializable_iterator()

    def experimental_make_numpy_dataset(self, numpy_input, session=None):
        """tf.data.Dataset.from_tensor_slices(numpy_input)."""
        from shardflow.data import Dataset
        return Dataset.from_tensor_slices(numpy_input)

    def update_config_proto(self, config_proto):
        """The session config to use (unchanged: give it CPU devices with device_count)."""
        return config_proto

    def configure(self, session_config=None, cluster_spec=None, task_type=None, task_id=None):
        """Accepted; a cluster is refused (strategies here are for one process)."""
        if cluster_spec:
            raise ValueError("%r.configure(cluster_spec=...): strategies here replicate within "
                             "one process; across processes use sf.distribute."
                             "AllReduceOptimizer or tf.train.replica_device_setter" % (self,))

    def initialize(self):
        return []

    def finalize(self):
        return []

    def colocate_vars_with(self, colocate_with_variable):
        return self._extended.colocate_vars_with(colocate_with_variable)

    def __repr__(self):
        return "<%s on %s>" % (type(self).__name__, list(self._extended.worker_devices))


class OneDeviceStrategy(Strategy):
    """One replica on `device` ('/cpu:0', '/gpu:0', ...): experimental_run_v2 builds fn under
    tf.device(device). Variables made in scope() are not placed (put them with tf.device)."""

    def __init__(self, device):
        device = canonical_device(device, "OneDeviceStrategy")
        _check_gpus([device], "OneDeviceStrategy")
        super().__init__(StrategyExtended(self, [device]))


class MirroredStrategy(Strategy):
    """Synchronous replicas of fn in one graph, one per device of `devices` (default: every
    GPU of this process, else '/device:CPU:0'), sharing one copy of each variable; see the
    module's text. Several CPU devices need a session that has them:
    ``tf.Session(config=tf.ConfigProto(device_count={"CPU": n}))``. `cross_device_ops`: any
    tf.distribute.CrossDeviceOps (all reduce in the graph here)."""

    def __init__(self, devices=None, cross_device_ops=None):
        if isinstance(devices, str):
            raise TypeError("MirroredStrategy(devices=...) takes a list of device names, not "
                            "the string %r: write devices=[%r]" % (devices, devices))
        if devices is None:
            n = local_gpu_count()
            devices = ["/device:GPU:%d" % i for i in range(n)] if n else ["/device:CPU:0"]
        devices = [canonical_device(d, "MirroredStrategy") for d in devices]
        if not devices:
            raise ValueError("MirroredStrategy(devices=[]): give at least one device")
        if len(set(devices)) != len(devices):
            raise ValueError("MirroredStrategy: a device is named twice in %s" % (devices,))
        _check_gpus(devices, "MirroredStrategy")
        if cross_device_ops is not None and not isinstance(cross_device_ops, CrossDeviceOps):
            raise TypeError("MirroredStrategy(cross_device_ops=...) takes a tf.distribute."
                            "CrossDeviceOps (NcclAllReduce(), ...), not %r" % (cross_device_ops,))
        super().__init__(StrategyExtended(self, devices, cross_device_ops))


class _DefaultStrategy(Strategy):
    """The strategy outside every scope: one replica, built where the code is."""

    def __init__(self):
        super().__init__(StrategyExtended(self, []))

    def __repr__(self):
        return "<default tf.distribute.Strategy>"


_default = []


def default_strategy():
    if not _default:
        _default.append(_DefaultStrategy())
    return _default[0]
