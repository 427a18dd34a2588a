"""tensorflow.python.client: the timeline module (Chrome traces of a traced step) and
device_lib (list_local_devices)."""

from shardflow.python.client import device_lib, timeline  # noqa: F401

__all__ = ["device_lib", "timeline"]
