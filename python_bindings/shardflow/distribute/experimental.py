"""TF 1.15's tf.distribute.experimental: MultiWorkerMirroredStrategy (between graphs, for
estimators: shardflow/distribute/multi_worker.py), CollectiveCommunication, and the strategies
shardflow does not carry, each refusing with the shardflow way to do the same."""

import enum

ACROSS_PROCESSES = (
    "shardflow's strategies replicate within one process (tf.distribute.MirroredStrategy over "
    "its devices). Across worker processes, build one replica per worker and wrap the "
    "optimizer in sf.distribute.AllReduceOptimizer (docs/python.md, \"All-reduce between "
    "worker processes\"), or place variables on parameter servers with "
    "tf.train.replica_device_setter (docs/python.md, \"Parameter servers\")")


class CollectiveCommunication(enum.Enum):
    """The all-reduce implementations MultiWorkerMirroredStrategy can be asked for."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


class ParameterServerStrategy:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("tf.distribute.experimental.ParameterServerStrategy is not "
                                  "supported: " + ACROSS_PROCESSES)


class CentralStorageStrategy:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "tf.distribute.experimental.CentralStorageStrategy is not supported: use "
            "tf.distribute.MirroredStrategy(devices=[...]), whose replicas already share one "
            "copy of each variable here (made in strategy.scope(), placed with tf.device)")


class TPUStrategy:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("tf.distribute.experimental.TPUStrategy is not supported: "
                                  "shardflow has no TPU devices; use tf.distribute."
                                  "MirroredStrategy over CPU or GPU devices")


from shardflow.distribute.multi_worker import MultiWorkerMirroredStrategy  # noqa: E402,F401

__all__ = ["CentralStorageStrategy", "CollectiveCommunication", "MultiWorkerMirroredStrategy",
           "ParameterServerStrategy", "TPUStrategy"]
