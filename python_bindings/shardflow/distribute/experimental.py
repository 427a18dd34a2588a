"""TF 1.15's tf.distribute.experimental: MultiWorkerMirroredStrategy and ParameterServerStrategy
(between graphs, for estimators: shardflow/distribute/multi_worker.py, parameter_server.py),
CollectiveCommunication, and the strategies shardflow does not carry, each refusing with the
shardflow way to do the same."""

import enum


class CollectiveCommunication(enum.Enum):
    """The all-reduce implementations MultiWorkerMirroredStrategy can be asked for."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


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
from shardflow.distribute.parameter_server import ParameterServerStrategy  # noqa: E402,F401

__all__ = ["CentralStorageStrategy", "CollectiveCommunication", "MultiWorkerMirroredStrategy",
           "ParameterServerStrategy", "TPUStrategy"]
