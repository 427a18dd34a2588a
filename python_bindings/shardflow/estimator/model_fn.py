"""What a model_fn returns (EstimatorSpec), the modes it is called in (ModeKeys) and how an
Estimator runs (RunConfig), as TF1's tf.estimator ones."""

import collections
import json
import os


class ModeKeys:
    """The mode an Estimator calls model_fn in."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


# TF 1.15's fields, in its order.
_SPEC_FIELDS = ["mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
                "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
                "prediction_hooks"]


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _SPEC_FIELDS)):
    """The ops of a model for one mode. TRAIN needs loss and train_op, EVAL needs loss,
    PREDICT needs predictions (a tensor or a dict of them). eval_metric_ops maps a name to a
    (value, update_op) pair, e.g. sf.metrics.accuracy(...). training_chief_hooks run on the
    chief only."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError("mode must be one of ModeKeys.TRAIN/EVAL/PREDICT, got %r" % (mode,))
        if mode == ModeKeys.TRAIN and (loss is None or train_op is None):
            raise ValueError("EstimatorSpec in TRAIN mode needs loss and train_op")
        if mode == ModeKeys.EVAL and loss is None:
            raise ValueError("EstimatorSpec in EVAL mode needs loss")
        if mode == ModeKeys.PREDICT and predictions is None:
            raise ValueError("EstimatorSpec in PREDICT mode needs predictions")
        eval_metric_ops = dict(eval_metric_ops or {})
        for name, pair in eval_metric_ops.items():
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise TypeError("eval_metric_ops['%s'] must be a (value, update_op) pair, as "
                                "sf.metrics.* return; got %r" % (name, pair))
        return super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops,
                               export_outputs, tuple(training_chief_hooks or ()),
                               tuple(training_hooks or ()), scaffold,
                               tuple(evaluation_hooks or ()), tuple(prediction_hooks or ()))


_DEFAULT_SECS = object()


def _one_replica(strategy, what):
    """`strategy` (None or a tf.distribute strategy of one replica) for RunConfig(`what`=)."""
    if strategy is None:
        return None
    from shardflow.distribute import Strategy
    if not isinstance(strategy, Strategy):
        raise ValueError("RunConfig(%s=...) takes a tf.distribute strategy "
                         "(tf.distribute.MirroredStrategy(), ...), not %r" % (what, strategy))
    if what == "train_distribute":
        # One replica per worker process (MultiWorkerMirrored-, ParameterServerStrategy), or
        # model_fn built once per device of this process (MirroredStrategy: Estimator.train).
        return strategy
    if strategy.num_replicas_in_sync != 1:
        raise NotImplementedError(
            "RunConfig(%s=%r): shardflow's Estimator evaluates and predicts with one replica; "
            "give a one-device strategy (train_distribute takes several)"
            % (what, strategy))
    return strategy


def _check_cluster(cluster):
    """TF_CONFIG's cluster: job names (letters, digits, _ and -) to lists of host:port
    addresses (ports 1-65535), at most one chief, as TF's ClusterSpec requires."""
    for job, tasks in cluster.items():
        if not isinstance(job, str) or not job or \
                not all(c.isalnum() or c in "_-" for c in job):
            raise ValueError("TF_CONFIG: job name %r is not a name (letters, digits, _ and -)"
                             % (job,))
        if isinstance(tasks, dict):
            addresses = list(tasks.values())
        elif isinstance(tasks, list):
            addresses = tasks
        else:
            raise ValueError("TF_CONFIG: job '%s' maps to %r; it takes a list of \"host:port\" "
                             "addresses" % (job, tasks))
        for address in addresses:
            host, _, port = str(address).rpartition(":")
            if not isinstance(address, str) or not host or not port.isdigit() or \
                    not 0 < int(port) < 65536:
                raise ValueError("TF_CONFIG: job '%s' has address %r; each is \"host:port\" "
                                 "with a port in 1-65535" % (job, address))
    if len(cluster.get("chief", [])) > 1:
        raise ValueError("TF_CONFIG: the cluster has %d chief tasks; it has at most one"
                         % len(cluster["chief"]))


def _tf_config():
    """TF_CONFIG's cluster and task, checked: ({} , {}) when it is unset."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return {}, {}
    try:
        cfg = json.loads(raw)
    except ValueError as e:
        raise ValueError("TF_CONFIG is not valid JSON (%s); fix it or unset it" % e) from None
    if not isinstance(cfg, dict):
        raise ValueError("TF_CONFIG is %r; it is a JSON object with 'cluster' and 'task'"
                         % (cfg,))
    cluster, task = cfg.get("cluster") or {}, cfg.get("task") or {}
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise ValueError("TF_CONFIG: 'cluster' maps job names to address lists and 'task' is "
                         "{\"type\": ..., \"index\": ...}; got %r" % (cfg,))
    if not cluster:
        return {}, task
    _check_cluster(cluster)
    task_type = task.get("type")
    index = task.get("index", 0)
    if isinstance(index, bool) or not (isinstance(index, int) or
                                       (isinstance(index, str) and index.isdigit())):
        raise ValueError("TF_CONFIG: task index %r is not a whole number" % (index,))
    task_id = int(index)
    if not task_type:
        raise ValueError("TF_CONFIG names a cluster but no task type: set "
                         "\"task\": {\"type\": \"worker\", \"index\": N} (or chief, ps, "
                         "evaluator)")
    if task_type != "evaluator":
        tasks = cluster.get(task_type)
        if tasks is None:
            raise ValueError("TF_CONFIG: task type '%s' is not a job of the cluster (jobs: %s)"
                             % (task_type, ", ".join(sorted(cluster))))
        if not 0 <= task_id < len(tasks):
            raise ValueError("TF_CONFIG: job '%s' has %d task(s); there is no task %d"
                             % (task_type, len(tasks), task_id))
    return cluster, {"type": task_type, "index": task_id}


class RunConfig:
    """How an Estimator runs: where it checkpoints, how often, the graph-level random seed and
    the session's ConfigProto. save_checkpoints_steps and save_checkpoints_secs exclude each
    other (giving steps turns the 600 s default off). train_distribute / eval_distribute take a
    tf.distribute strategy of one replica (MirroredStrategy() on one device, OneDeviceStrategy),
    kept as attributes: training runs as without one, which is what one replica computes.

    Distributed, as TF1's: the environment variable TF_CONFIG ({"cluster": {"chief": [...],
    "worker": [...], "ps": [...]}, "task": {"type": "worker", "index": 1}}, as Kubernetes'
    TFJob and other launchers set it) makes this process that task: cluster_spec, task_type,
    task_id, is_chief (the "chief" task, or "master"; worker 0 when the cluster has neither),
    master (its server's "grpc://host:port"), num_ps_replicas, num_worker_replicas (chief and
    workers) and global_id_in_cluster follow from it, and the default session_config filters
    devices to the ps tasks and this task. train_and_evaluate then runs the task's part
    (shardflow/estimator/training.py). An "evaluator" task is not part of the cluster."""

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=None, save_checkpoints_secs=_DEFAULT_SECS,
                 session_config=None, keep_checkpoint_max=5,
                 keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
                 train_distribute=None, device_fn=None, protocol=None, eval_distribute=None,
                 experimental_distribute=None, experimental_max_worker_delay_secs=None,
                 session_creation_timeout_secs=7200):
        # TF 1.15's signature and order. device_fn places model_fn's ops (a device function,
        # as replica_device_setter returns); protocol is gRPC's; the experimental_* settings
        # change nothing here.
        if protocol not in (None, "grpc", "grpc+verbs"):
            raise ValueError("RunConfig(protocol=%r): shardflow's tasks talk gRPC (None or "
                             "'grpc')" % (protocol,))
        if device_fn is not None and not callable(device_fn):
            raise ValueError("RunConfig(device_fn=...) takes a function of an op returning its "
                             "device, not %r" % (device_fn,))
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self.protocol = protocol
        self.experimental_distribute = experimental_distribute
        self.experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        self.session_creation_timeout_secs = session_creation_timeout_secs
        if save_checkpoints_secs is _DEFAULT_SECS:
            save_checkpoints_secs = None if save_checkpoints_steps is not None else 600
        if save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError("RunConfig takes save_checkpoints_steps or save_checkpoints_secs, "
                             "not both")
        self.model_dir = model_dir
        self.tf_random_seed = tf_random_seed
        self.save_summary_steps = save_summary_steps
        self.save_checkpoints_steps = save_checkpoints_steps
        self.save_checkpoints_secs = save_checkpoints_secs
        self.keep_checkpoint_max = keep_checkpoint_max
        self.log_step_count_steps = log_step_count_steps
        self.session_config = session_config
        self.train_distribute = _one_replica(train_distribute, "train_distribute")
        self.eval_distribute = _one_replica(eval_distribute, "eval_distribute")
        self._init_cluster()
        if device_fn is not None:
            self.device_fn = device_fn

    def _init_cluster(self):
        from shardflow.cluster import ClusterSpec
        cluster, task = _tf_config()
        # Single-process: what TF1's RunConfig reports without a TF_CONFIG cluster.
        self.cluster_spec = ClusterSpec({})
        self.is_chief = True
        self.num_worker_replicas = 1
        self.num_ps_replicas = 0
        self.task_type = task.get("type") or "worker"
        self.task_id = task.get("index", 0)
        self.master = ""
        self.evaluation_master = ""
        self.global_id_in_cluster = 0
        self.service = None
        self.device_fn = None
        if not cluster:
            return
        jobs = {job: tasks for job, tasks in cluster.items() if job != "evaluator"}
        self.cluster_spec = ClusterSpec(jobs)
        chief_job = "chief" if "chief" in jobs else ("master" if "master" in jobs else None)
        if self.task_type == "evaluator":
            self.is_chief = False
        elif chief_job is not None:
            self.is_chief = self.task_type == chief_job
        else:
            self.is_chief = self.task_type == "worker" and self.task_id == 0
        self.num_ps_replicas = self.cluster_spec.num_tasks("ps") if "ps" in jobs else 0
        self.num_worker_replicas = sum(self.cluster_spec.num_tasks(j) for j in
                                       (chief_job, "worker") if j in jobs)
        if self.task_type != "evaluator":
            self.master = "grpc://" + self.cluster_spec.task_address(self.task_type,
                                                                     self.task_id)
            order = [j for j in (chief_job, "worker", "ps") if j in jobs] + \
                sorted(j for j in jobs if j not in (chief_job, "worker", "ps"))
            self.global_id_in_cluster = sum(self.cluster_spec.num_tasks(j)
                                            for j in order[:order.index(self.task_type)]) + \
                self.task_id
            if self.session_config is None and self.task_type != "ps":
                from shardflow.distribute.multi_worker import MultiWorkerMirroredStrategy
                from shardflow.session import ConfigProto
                # Between workers of a MultiWorkerMirroredStrategy the collectives' group is
                # every worker, which the session must see: no filters then.
                mirrored = isinstance(self.train_distribute, MultiWorkerMirroredStrategy)
                self.session_config = ConfigProto(
                    allow_soft_placement=True,
                    device_filters=[] if mirrored else [
                        "/job:ps", "/job:%s/task:%d" % (self.task_type, self.task_id)])

    @property
    def _distributed(self):
        """Whether this process is a task of a TF_CONFIG cluster of several tasks (training
        goes through the cluster's servers)."""
        tasks = sum(self.cluster_spec.num_tasks(j) for j in self.cluster_spec.jobs)
        return tasks > 1 and self.task_type != "evaluator"

    def replace(self, **kwargs):
        """A copy with the given properties changed."""
        args = {k: getattr(self, k) for k in (
            "model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
            "save_checkpoints_secs", "keep_checkpoint_max", "keep_checkpoint_every_n_hours",
            "log_step_count_steps", "session_config", "train_distribute", "eval_distribute",
            "device_fn", "protocol", "experimental_distribute",
            "experimental_max_worker_delay_secs", "session_creation_timeout_secs")}
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" not in kwargs:
            args["save_checkpoints_secs"] = None
        if "save_checkpoints_secs" in kwargs and "save_checkpoints_steps" not in kwargs:
            args["save_checkpoints_steps"] = None
        args.update(kwargs)
        return RunConfig(**args)

    def __repr__(self):
        return "RunConfig(model_dir=%r, tf_random_seed=%r)" % (self.model_dir, self.tf_random_seed)
