"""tf.io's file helpers: gfile and write_graph (shardflow.graph_io)."""

from shardflow.graph_io import gfile, read_graph, write_graph  # noqa: F401

__all__ = ["gfile", "read_graph", "write_graph"]
