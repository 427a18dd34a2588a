"""TF1's tensorflow.python paths that programs import from directly: ``from shardflow.python.client
import timeline``, ``from shardflow.python.framework import ops``, ``from shardflow.python.ops
import collective_ops, math_ops``, ``from shardflow.python.training import server_lib``,
``from shardflow.python.platform import tf_logging``, ``from shardflow.python.tools import
inspect_checkpoint`` (the modules, and where their names come
from: each package's text and shardflow/python/_aliases.py)."""

from shardflow.python import client, framework, ops, platform, tools, training  # noqa: F401

__all__ = ["client", "framework", "ops", "platform", "tools", "training"]
