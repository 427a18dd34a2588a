"""sf.distribute: TF 1.15's tf.distribute strategies for the devices of one process
(MirroredStrategy, OneDeviceStrategy; strategy.py and the modules it names), finding the
cluster a launcher started this process in (cluster_resolver), and Horovod-style all-reduce
between the graphs of worker processes (AllReduceOptimizer, broadcast_variables)."""

from shardflow.distribute import cluster_resolver, experimental
from shardflow.distribute.all_reduce import AllReduceOptimizer, Compression, broadcast_variables
from shardflow.distribute.context import (ReplicaContext, experimental_set_strategy,
                                          get_cross_replica_context, get_replica_context,
                                          get_strategy, has_strategy, in_cross_replica_context)
from shardflow.distribute.cross_device_ops import (
    CrossDeviceOps, HierarchicalCopyAllReduce, NcclAllReduce, ReductionToOneDevice)
from shardflow.distribute.input_lib import InputContext, InputReplicationMode
from shardflow.distribute.parameter_averaging import ParameterAveragingHook
from shardflow.distribute.strategy import (MirroredStrategy, OneDeviceStrategy,
                                           Strategy, StrategyExtended)
from shardflow.distribute.values import ReduceOp

__all__ = ["AllReduceOptimizer", "Compression", "CrossDeviceOps", "HierarchicalCopyAllReduce",
           "InputContext", "InputReplicationMode", "MirroredStrategy", "NcclAllReduce",
           "ParameterAveragingHook",
           "OneDeviceStrategy", "ReduceOp", "ReductionToOneDevice", "ReplicaContext", "Strategy",
           "StrategyExtended",
           "broadcast_variables", "cluster_resolver", "experimental",
           "experimental_set_strategy", "get_cross_replica_context", "get_replica_context",
           "get_strategy", "has_strategy", "in_cross_replica_context"]
