"""TF 1.15's tf.distribute.experimental.ParameterServerStrategy, between graphs: one replica per
worker process of TF_CONFIG's cluster (chief and worker jobs), its variables on the "ps" tasks
(round-robin, as tf.train.replica_device_setter places them), every other op on the worker;
each worker applies its own gradients to them (asynchronous training). Made for estimators:

    strategy = tf.distribute.experimental.ParameterServerStrategy()
    config = tf.estimator.RunConfig(train_distribute=strategy, model_dir=...)
    tf.estimator.train_and_evaluate(tf.estimator.Estimator(model_fn, config=config), ...)

with TF_CONFIG = {"cluster": {"chief": [...], "worker": [...], "ps": [...]}, "task": {...}} on
each process: the ps tasks serve, the chief initialises, restores and checkpoints, the workers
wait for it (Estimator.train), an "evaluator" task evaluates the checkpoints. This is what an
estimator does with a TF_CONFIG cluster without a strategy too.

``with strategy.scope():`` in a program of its own (a cluster from TF_CONFIG, or given to
configure()) puts variables made inside on the ps tasks and the rest on this worker, so a
tf.train session on the worker's server trains them. Without a cluster there is one replica
on this process and nothing is placed.
"""

import contextlib

from shardflow import framework
from shardflow.distribute import context
from shardflow.distribute.strategy import Strategy, StrategyExtended, _Scope
from shardflow.distribute.values import as_reduce_op


class _Extended(StrategyExtended):
    experimental_between_graph = True

    def __init__(self, strategy):
        super().__init__(strategy, [])
        self._cluster = None
        self._worker = ""
        self.should_checkpoint = self.should_save_summary = True

    def _configure(self, cluster, task_type, task_id):
        """Places on `cluster` (a ClusterSpec with a "ps" job) as task `task_type`:`task_id`."""
        self._cluster = cluster
        self._worker = "/job:%s/task:%d" % (task_type, task_id)
        self._devices = (self._worker,)
        chief = "chief" if "chief" in cluster.jobs else "worker"
        self.should_checkpoint = self.should_save_summary = (task_type, task_id) == (chief, 0)

    def placement(self):
        """The device function of this worker's ops (variables on the ps), or None."""
        if self._cluster is None:
            return None
        from shardflow.cluster import replica_device_setter
        return replica_device_setter(cluster=self._cluster, worker_device=self._worker)

    @property
    def parameter_devices(self):
        if self._cluster is None:
            return tuple(self._devices)
        return tuple("/job:ps/task:%d" % i for i in range(self._cluster.num_tasks("ps")))

    def call_for_each_replica(self, fn, args=(), kwargs=None):
        """fn built once: this worker's replica, its variables on the ps."""
        placement = self.placement()
        placed = framework.device(placement) if placement else contextlib.nullcontext()
        with self._strategy.scope(), context.ReplicaContext(self._strategy, 0), placed:
            return fn(*tuple(args), **dict(kwargs or {}))

    def reduce_to(self, reduce_op, value, destinations):
        """One replica per worker: `value` itself (the workers do not reduce with each other;
        they meet in the variables on the ps)."""
        as_reduce_op(reduce_op, "reduce_to")
        return framework.convert_to_tensor(value)

    def _reduce(self, reduce_op, value):
        return self.reduce_to(reduce_op, value, None)

    def _all_reduce(self, reduce_op, value):
        return self.reduce_to(reduce_op, value, None)


class _PlacedScope(_Scope):
    """strategy.scope() that also places what is built inside (variables on the ps)."""

    def __enter__(self):
        strategy = super().__enter__()
        placement = self._strategy.extended.placement()
        self._device = framework.device(placement) if placement else contextlib.nullcontext()
        self._device.__enter__()
        return strategy

    def __exit__(self, *exc):
        self._device.__exit__(*exc)
        super().__exit__(*exc)


class ParameterServerStrategy(Strategy):
    """Variables on TF_CONFIG's ps tasks, one replica per worker (the module's text).
    `cluster_resolver`: None (TF_CONFIG is read) or a cluster resolver of the cluster."""

    def __init__(self, cluster_resolver=None):
        from shardflow.estimator.model_fn import _tf_config
        from shardflow.cluster import ClusterSpec
        super().__init__(_Extended(self))
        if cluster_resolver is not None:
            cluster = cluster_resolver.cluster_spec()
            cluster = cluster.as_dict() if hasattr(cluster, "as_dict") else dict(cluster)
            task = {"type": getattr(cluster_resolver, "task_type", None),
                    "index": getattr(cluster_resolver, "task_id", None)}
        else:
            cluster, task = _tf_config()
        jobs = {j: t for j, t in cluster.items() if j != "evaluator"}
        if jobs and task.get("type") not in (None, "evaluator", "ps"):
            self.configure(cluster_spec=ClusterSpec(jobs), task_type=task["type"],
                           task_id=int(task.get("index") or 0))

    def configure(self, session_config=None, cluster_spec=None, task_type=None, task_id=None):
        """Takes the cluster (with a "ps" job) and this task (a worker or the chief), as TF
        1.15's strategy.configure; `session_config` is left as it is."""
        if not cluster_spec:
            return
        from shardflow.cluster import ClusterSpec
        cluster = ClusterSpec(cluster_spec)
        if "ps" not in cluster.jobs:
            raise ValueError("ParameterServerStrategy: the cluster has jobs %s and no \"ps\" job "
                             "to hold the variables; add one, or use "
                             "MultiWorkerMirroredStrategy for workers alone"
                             % ", ".join(sorted(cluster.jobs)))
        if task_type not in ("chief", "master", "worker"):
            raise ValueError("ParameterServerStrategy.configure: task_type is %r; the strategy "
                             "is for the chief and the workers (a ps task serves: "
                             "tf.train.Server(...).join())" % (task_type,))
        if task_type not in cluster.jobs or not 0 <= int(task_id or 0) < \
                cluster.num_tasks(task_type):
            raise ValueError("ParameterServerStrategy.configure: the cluster has no task %s:%s"
                             % (task_type, task_id))
        self._extended._configure(cluster, task_type, int(task_id or 0))

    def scope(self):
        """The strategy's scope; with a cluster, variables made inside go to the ps tasks and
        the other ops to this worker."""
        return _PlacedScope(self)

    def __repr__(self):
        ps = self._extended.parameter_devices
        return "ParameterServerStrategy(%s)" % (", ".join(ps) if ps else "one process")
