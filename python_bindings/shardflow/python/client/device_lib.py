"""tensorflow.python.client.device_lib: list_local_devices(), the devices a session on this
machine gets (what `device_lib.list_local_devices()` scripts print to see whether a GPU is
there)."""

import zlib


class DeviceAttributes:
    """A device: name ('/device:CPU:0'), device_type ('CPU' or 'GPU'), and TF's other fields
    (memory_limit 0: not reported; incarnation a number fixed by the name)."""

    def __init__(self, name, device_type):
        self.name = name
        self.device_type = device_type
        self.memory_limit = 0
        self.incarnation = zlib.crc32(name.encode())
        self.physical_device_desc = "" if device_type == "CPU" else "shardflow %s" % name
        self.locality = {}

    def __repr__(self):
        return "name: %r\ndevice_type: %r\nmemory_limit: %d\nincarnation: %d\n" % (
            self.name, self.device_type, self.memory_limit, self.incarnation)


def list_local_devices(session_config=None):
    """The devices a session made with `session_config` has here, CPUs first."""
    from shardflow.framework import Graph
    from shardflow.session import Session
    with Session(graph=Graph(), config=session_config) as sess:
        names = sess.list_devices()
    out = []
    for full in names:
        short = "/device:" + full.split("/device:", 1)[1] if "/device:" in full else full
        kind = short.split(":")[1] if short.count(":") >= 2 else "CPU"
        out.append(DeviceAttributes(short, kind))
    return out


__all__ = ["DeviceAttributes", "list_local_devices"]
