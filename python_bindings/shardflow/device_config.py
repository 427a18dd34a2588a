"""TF 1.15's tf.config.experimental device queries: list_physical_devices,
list_logical_devices, and set_memory_growth / get_memory_growth (accepted; the engine's GPU
allocator grows as it needs anyway). Registered as "shardflow.config".

Example::

    gpus = sf.config.experimental.list_physical_devices("GPU")
    for gpu in gpus:
        sf.config.experimental.set_memory_growth(gpu, True)
"""

import collections
import sys
import types


class PhysicalDevice(collections.namedtuple("PhysicalDevice", ["name", "device_type"])):
    """A device of this machine: name ('/physical_device:CPU:0'), device_type ('CPU')."""


class LogicalDevice(collections.namedtuple("LogicalDevice", ["name", "device_type"])):
    """A device a session here gets: name ('/job:localhost/replica:0/task:0/device:CPU:0')."""


def _local_devices():
    """(full name, device type) of each device a default session here has, CPUs first."""
    from shardflow.framework import Graph
    from shardflow.session import Session
    with Session(graph=Graph()) as sess:
        names = sess.list_devices()
    return [(n, n.rsplit("/device:", 1)[-1].split(":")[0]) for n in names]


def list_physical_devices(device_type=None):
    """This machine's devices of `device_type` ('CPU', 'GPU'; None: all), as TF1's."""
    out, seen = [], collections.Counter()
    for _, kind in _local_devices():
        if device_type is None or kind == device_type.upper():
            out.append(PhysicalDevice("/physical_device:%s:%d" % (kind, seen[kind]), kind))
            seen[kind] += 1
    return out


def list_logical_devices(device_type=None):
    """The devices a session gets here, of `device_type` ('CPU', 'GPU'; None: all)."""
    return [LogicalDevice(name, kind) for name, kind in _local_devices()
            if device_type is None or kind == device_type.upper()]


_memory_growth = {}


def set_memory_growth(device, enable):
    """Accepted, as TF1 scripts call it before building a graph; it changes nothing here."""
    _memory_growth[device.name] = bool(enable)


def get_memory_growth(device):
    return _memory_growth.get(device.name, False)


experimental = types.ModuleType("shardflow.config.experimental",
                                "TF1's tf.config.experimental: device queries.")
experimental.PhysicalDevice = PhysicalDevice
experimental.LogicalDevice = LogicalDevice
experimental.list_physical_devices = list_physical_devices
experimental.list_logical_devices = list_logical_devices
experimental.set_memory_growth = set_memory_growth
experimental.get_memory_growth = get_memory_growth
experimental.__all__ = ["LogicalDevice", "PhysicalDevice", "get_memory_growth",
                        "list_logical_devices", "list_physical_devices", "set_memory_growth"]

config = types.ModuleType("shardflow.config", "TF1's tf.config (its experimental part).")
config.experimental = experimental
config.__all__ = ["experimental"]
sys.modules["shardflow.config"] = config
sys.modules["shardflow.config.experimental"] = experimental

__all__ = ["config"]
