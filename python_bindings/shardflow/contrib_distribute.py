"""TF 1.15's tf.contrib.distribute: MirroredStrategy (also given as num_gpus=),
OneDeviceStrategy, the cross-device reductions and the context functions, which are
tf.distribute's (shardflow/distribute/). The multi-worker strategies refuse with the shardflow
way to do the same (shardflow/distribute/experimental.py)."""

from shardflow.distribute import experimental as _experimental
from shardflow.distribute import strategy as _strategy
from shardflow.distribute.context import (get_cross_replica_context,  # noqa: F401
                                          get_replica_context, get_strategy, has_strategy,
                                          in_cross_replica_context)
from shardflow.distribute.cross_device_ops import (  # noqa: F401
    AllReduceCrossDeviceOps, CrossDeviceOps, ReductionToOneDevice)
from shardflow.distribute.strategy import OneDeviceStrategy  # noqa: F401


class MirroredStrategy(_strategy.MirroredStrategy):
    """tf.contrib.distribute.MirroredStrategy: tf.distribute.MirroredStrategy over `devices`,
    or over GPUs 0 .. num_gpus - 1 ('/device:CPU:0' for num_gpus=0). `cross_tower_ops` is the
    old name of `cross_device_ops`; `auto_shard_dataset` is accepted."""

    def __init__(self, devices=None, num_gpus=None, num_gpus_per_worker=None,
                 cross_device_ops=None, auto_shard_dataset=False, cross_tower_ops=None):
        if num_gpus is not None and num_gpus_per_worker is not None:
            raise ValueError("You cannot specify both `num_gpus` and `num_gpus_per_worker`.")
        if num_gpus is None:
            num_gpus = num_gpus_per_worker
        if devices is not None and num_gpus is not None:
            raise ValueError("Must only specify one of `devices` and `num_gpus`.")
        if cross_device_ops is not None and cross_tower_ops is not None:
            raise ValueError("You cannot specify both `cross_device_ops` and `cross_tower_ops`.")
        if num_gpus is not None:
            devices = (["/device:GPU:%d" % i for i in range(num_gpus)] if num_gpus > 0
                       else ["/device:CPU:0"])
        super().__init__(devices, cross_device_ops or cross_tower_ops)


class CollectiveAllReduceStrategy(_experimental.MultiWorkerMirroredStrategy):
    """TF 1.13's name of MultiWorkerMirroredStrategy (one replica per worker process; more
    than one GPU per worker is refused)."""

    def __init__(self, num_gpus_per_worker=0, communication=None):
        if int(num_gpus_per_worker) > 1:
            raise NotImplementedError(
                "CollectiveAllReduceStrategy(num_gpus_per_worker=%d): one replica per worker "
                "process here; start a worker process per GPU" % num_gpus_per_worker)
        super().__init__(communication)


class ParameterServerStrategy(_experimental.ParameterServerStrategy):
    """TF 1.13's ParameterServerStrategy (variables on the ps tasks, one replica per worker
    process; more than one GPU per worker is refused)."""

    def __init__(self, num_gpus_per_worker=0):
        if int(num_gpus_per_worker) > 1:
            raise NotImplementedError(
                "ParameterServerStrategy(num_gpus_per_worker=%d): one replica per worker "
                "process here; start a worker process per GPU" % num_gpus_per_worker)
        super().__init__()


TPUStrategy = _experimental.TPUStrategy

__all__ = ["AllReduceCrossDeviceOps", "CollectiveAllReduceStrategy", "CrossDeviceOps",
           "MirroredStrategy", "OneDeviceStrategy", "ParameterServerStrategy",
           "ReductionToOneDevice", "TPUStrategy", "get_cross_replica_context",
           "get_replica_context", "get_strategy", "has_strategy", "in_cross_replica_context"]
