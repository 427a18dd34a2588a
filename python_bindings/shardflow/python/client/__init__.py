"""tensorflow.python.client: the timeline module (Chrome traces of a traced step)."""

from shardflow.python.client import timeline  # noqa: F401

__all__ = ["timeline"]
