"""TF 1.15's tf.distribute.experimental.MultiWorkerMirroredStrategy, between graphs: one replica
per worker process (TF_CONFIG's "worker" job), each with its own copy of the variables; the
gradients are averaged across the workers by ring all-reduce when the optimizer applies them,
so the copies stay equal. Made for estimators, as TF 1.15's multi-worker tutorial:

    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    config = tf.estimator.RunConfig(train_distribute=strategy, model_dir=...)
    tf.estimator.train_and_evaluate(tf.estimator.Estimator(model_fn, config=config), ...)

with TF_CONFIG = {"cluster": {"worker": [...]}, "task": {"type": "worker", "index": i}} on each
worker process (a "chief" job beside it is rank 0, the workers follow). Each worker trains on
its own input (input_fn's batches are per worker); rank 0 (worker 0, or the chief) alone writes
checkpoints and summaries. Every worker initialises its variables (restoring model_dir's newest
checkpoint when there is one), then takes rank 0's values, and trains through its own server
(Estimator.train). Without TF_CONFIG there is one worker and
nothing is distributed.

Keras, as TF 1.15's multi-worker Keras tutorial: a model built and compiled in
``strategy.scope()`` on every worker, then ``model.fit(...)`` on each: entering the scope starts
this worker's server and puts this process's sessions and ops on it; compile wraps the
optimizer so the gradients are averaged over the workers; fit starts from worker 0's variables.
Given a tf.data.Dataset (of global batches, as the tutorial's GLOBAL_BATCH_SIZE), fit and
evaluate take this worker's share of each batch, as TF's auto-sharding does; arrays, generators
and Sequences are the worker's own (shard them: its rows). Every worker runs the same number of
steps (the all-reduces pair up step by step).
"""

import weakref

from shardflow import collective_ops, framework
from shardflow.distribute import context
from shardflow.distribute.strategy import Strategy, StrategyExtended
from shardflow.distribute.values import ReduceOp, as_reduce_op

# The collective group of the gradients' all-reduces (apart from AllReduceOptimizer's 1,
# broadcast_variables' 2 and shardflow.horovod's 3); Keras models compiled in the strategy's
# scope all-reduce their gradients in group 5 and take worker 0's variables in group 6.
_GROUP = 4
_KERAS_GROUP = 5
_KERAS_BROADCAST_GROUP = 6


class _Extended(StrategyExtended):
    experimental_between_graph = True

    def __init__(self, strategy, num_workers, rank, device):
        super().__init__(strategy, [device] if device else [])
        self._num_workers = num_workers
        self._rank = rank
        self.should_checkpoint = self.should_save_summary = rank == 0
        # graph -> the next instance key (a graph that goes takes its entry along)
        self._instances = weakref.WeakKeyDictionary()

    @property
    def num_replicas(self):
        return self._num_workers

    def _next_instance(self):
        g = framework.get_default_graph()
        k = self._instances.get(g, 1)
        self._instances[g] = k + 1
        return k

    def call_for_each_replica(self, fn, args=(), kwargs=None):
        """fn built once: this worker's replica, on its device."""
        import contextlib
        placed = framework.device(self._devices[0]) if self._devices else \
            contextlib.nullcontext()
        with self._strategy.scope(), context.ReplicaContext(self._strategy, self._rank), placed:
            return fn(*tuple(args), **dict(kwargs or {}))

    def reduce_to(self, reduce_op, value, destinations):
        """This worker's `value` summed or averaged over the workers."""
        reduce_op = as_reduce_op(reduce_op, "reduce_to")
        value = framework.convert_to_tensor(value)
        if self._num_workers == 1:
            return value
        return collective_ops.all_reduce(value, self._num_workers, _GROUP,
                                         self._next_instance(), "Add",
                                         "Div" if reduce_op == ReduceOp.MEAN else "Id")

    def _reduce(self, reduce_op, value):
        return self.reduce_to(reduce_op, value, None)

    def _all_reduce(self, reduce_op, value):
        return self.reduce_to(reduce_op, value, None)


class MultiWorkerMirroredStrategy(Strategy):
    """One replica per worker of TF_CONFIG's cluster (the module's text). `communication` is
    accepted (the all-reduce is the engine's ring either way); `cluster_resolver` must be None
    or a TFConfigClusterResolver (TF_CONFIG is read)."""

    def __init__(self, communication=None, cluster_resolver=None):
        from shardflow.estimator.model_fn import _tf_config
        cluster, task = _tf_config()
        jobs = {j: t for j, t in cluster.items() if j != "evaluator"}
        if jobs and (not set(jobs) <= {"chief", "worker"} or "worker" not in jobs and
                     "chief" not in jobs):
            raise ValueError(
                "MultiWorkerMirroredStrategy: TF_CONFIG's cluster has jobs %s; it takes a "
                "\"worker\" job and optionally a \"chief\" (the chief, else worker 0, is rank 0), "
                "as TF 1.15's multi-worker tutorial; for parameter servers use "
                "ParameterServerStrategy" % ", ".join(sorted(jobs)))
        # Ranks: the chief first, then the workers in order.
        chiefs = len(jobs.get("chief", []))
        workers = chiefs + len(jobs.get("worker", [])) or 1
        if task.get("type") == "evaluator" or not jobs:
            rank, device, workers = 0, "", 1  # evaluates (or trains) alone
            self._task = ("worker", 0)
        else:
            self._task = (task["type"], int(task["index"]))
            rank = self._task[1] + (chiefs if self._task[0] == "worker" else 0)
            device = "/job:%s/task:%d" % self._task if workers > 1 else ""
        self._task_rank = rank
        self._jobs = jobs
        self._started = False
        self._broadcasts = weakref.WeakKeyDictionary()  # graph -> its broadcast op
        super().__init__(_Extended(self, workers, rank, device))

    def scope(self):
        """The strategy's scope; with several workers, this worker's server runs first and
        this process's sessions and ops go to it (as hvd.init), so that a Keras model built and
        compiled inside trains as one replica of the group."""
        self._start_worker()
        return super().scope()

    def _start_worker(self):
        if self._started or self.num_replicas_in_sync == 1:
            return
        import types

        from shardflow import session
        from shardflow.cluster import ClusterSpec
        from shardflow.estimator.estimator import _task_server
        # The server an estimator of this task uses too (one per task and process).
        server = _task_server(types.SimpleNamespace(
            cluster_spec=ClusterSpec(self._jobs), task_type=self._task[0],
            task_id=self._task[1]))
        framework._set_base_device("/job:%s/task:%d" % self._task)
        session._set_default_target(server.target)
        self._started = True

    def _keras_compile(self, model):
        """Model.compile in the scope: the optimizer's gradients are averaged over the workers
        (ring all-reduce), and Model.fit starts from worker 0's variables (_keras_broadcast)."""
        from shardflow.distribute.all_reduce import AllReduceOptimizer
        optimizer = model.optimizer
        if not getattr(optimizer, "_multi_worker", False):
            make, n = optimizer._tf_optimizer, self.num_replicas_in_sync

            def averaged(lr):
                return AllReduceOptimizer(make(lr), num_replicas=n, group_key=_KERAS_GROUP,
                                          name="MultiWorkerAllReduce")
            optimizer._tf_optimizer = averaged
            optimizer._multi_worker = True
        model._multi_worker = self

    def _keras_broadcast(self, session):
        """Every worker takes worker 0's values of the session's graph's variables (the model's
        and the optimizer's, made in the same order on every worker)."""
        from shardflow.distribute.all_reduce import broadcast_variables
        from shardflow.variables import global_variables
        graph = session.graph
        op = self._broadcasts.get(graph)
        if op is None:
            with graph.as_default(), framework.device("/job:%s/task:%d" % self._task):
                op = broadcast_variables(global_variables(), self.num_replicas_in_sync,
                                         self._task_rank, group_key=_KERAS_BROADCAST_GROUP)
            self._broadcasts[graph] = op
        session.run(op)

    def __repr__(self):
        return "MultiWorkerMirroredStrategy(%d workers)" % self.num_replicas_in_sync
