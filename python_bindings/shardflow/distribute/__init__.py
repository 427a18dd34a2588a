"""sf.distribute: finding the cluster a launcher started this process in (cluster_resolver)."""

from shardflow.distribute import cluster_resolver  # noqa: F401
