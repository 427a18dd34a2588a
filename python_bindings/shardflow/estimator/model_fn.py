"""What a model_fn returns (EstimatorSpec), the modes it is called in (ModeKeys) and how an
Estimator runs (RunConfig), as TF1's tf.estimator ones."""

import collections


class ModeKeys:
    """The mode an Estimator calls model_fn in."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_SPEC_FIELDS = ["mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
                "training_hooks", "evaluation_hooks", "prediction_hooks", "scaffold"]


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _SPEC_FIELDS)):
    """The ops of a model for one mode. TRAIN needs loss and train_op, EVAL needs loss,
    PREDICT needs predictions (a tensor or a dict of them). eval_metric_ops maps a name to a
    (value, update_op) pair, e.g. sf.metrics.accuracy(...)."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_hooks=None, evaluation_hooks=None,
                prediction_hooks=None, scaffold=None):
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
                               export_outputs, tuple(training_hooks or ()),
                               tuple(evaluation_hooks or ()), tuple(prediction_hooks or ()),
                               scaffold)


_DEFAULT_SECS = object()


def _one_replica(strategy, what):
    """`strategy` (None or a tf.distribute strategy of one replica) for RunConfig(`what`=)."""
    if strategy is None:
        return None
    from shardflow.distribute import Strategy
    if not isinstance(strategy, Strategy):
        raise ValueError("RunConfig(%s=...) takes a tf.distribute strategy "
                         "(tf.distribute.MirroredStrategy(), ...), not %r" % (what, strategy))
    if strategy.num_replicas_in_sync != 1:
        raise NotImplementedError(
            "RunConfig(%s=%r): shardflow's Estimator trains one replica; a strategy of %d "
            "replicas would need the model_fn built per device. Give a one-device strategy, "
            "or write the loop with strategy.experimental_run_v2 (docs/python.md, \"Coming "
            "from TensorFlow 1.x\", tf.distribute)" % (what, strategy,
                                                     strategy.num_replicas_in_sync))
    return strategy


class RunConfig:
    """How an Estimator runs: where it checkpoints, how often, the graph-level random seed and
    the session's ConfigProto. save_checkpoints_steps and save_checkpoints_secs exclude each
    other (giving steps turns the 600 s default off). train_distribute / eval_distribute take a
    tf.distribute strategy of one replica (MirroredStrategy() on one device, OneDeviceStrategy),
    kept as attributes: training runs as without one, which is what one replica computes."""

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=None, save_checkpoints_secs=_DEFAULT_SECS,
                 keep_checkpoint_max=5, log_step_count_steps=100, session_config=None,
                 train_distribute=None, eval_distribute=None):
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

    # Single-process: what TF1's RunConfig reports without a TF_CONFIG cluster.
    is_chief = True
    num_worker_replicas = 1
    num_ps_replicas = 0
    task_type = "worker"
    task_id = 0
    master = ""

    def replace(self, **kwargs):
        """A copy with the given properties changed."""
        args = {k: getattr(self, k) for k in (
            "model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
            "save_checkpoints_secs", "keep_checkpoint_max", "log_step_count_steps",
            "session_config", "train_distribute", "eval_distribute")}
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" not in kwargs:
            args["save_checkpoints_secs"] = None
        if "save_checkpoints_secs" in kwargs and "save_checkpoints_steps" not in kwargs:
            args["save_checkpoints_steps"] = None
        args.update(kwargs)
        return RunConfig(**args)

    def __repr__(self):
        return "RunConfig(model_dir=%r, tf_random_seed=%r)" % (self.model_dir, self.tf_random_seed)
