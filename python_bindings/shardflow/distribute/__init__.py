"""sf.distribute: finding the cluster a launcher started this process in (cluster_resolver), and
Horovod-style all-reduce between the graphs of worker processes (AllReduceOptimizer,
broadcast_variables)."""

from shardflow.distribute import cluster_resolver  # noqa: F401
from shardflow.distribute.all_reduce import AllReduceOptimizer, broadcast_variables  # noqa: F401
