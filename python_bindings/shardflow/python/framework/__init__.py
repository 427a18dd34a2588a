"""tensorflow.python.framework's modules that programs import directly:
``from shardflow.python.framework import tensor_util``."""

from shardflow import tensor_util  # noqa: F401

__all__ = ["tensor_util"]
