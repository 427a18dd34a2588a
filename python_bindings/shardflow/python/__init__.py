"""TF1's tensorflow.python paths that programs import from directly, for the modules shardflow
carries: ``from shardflow.python.client import timeline`` (tf.python.client.timeline) and
``from shardflow.python.framework import tensor_util``."""

from shardflow.python import client, framework  # noqa: F401

__all__ = ["client", "framework"]
