"""TF1's tf.DeviceSpec: a device name's parts (sf.device takes one wherever it takes a name)."""


class DeviceSpec:
    """TF1's tf.DeviceSpec: a device's parts, any of them None (unspecified): job, replica,
    task, device_type ("CPU", "GPU") and device_index (None also for "*").

        spec = sf.DeviceSpec(job="ps", task=1, device_type="CPU", device_index=0)
        spec.to_string()            # "/job:ps/task:1/device:CPU:0"
        sf.DeviceSpec.from_string("/job:worker/gpu:1").task   # None
        with sf.device(spec): ...
    """

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = _canonical_type(device_type)
        self.device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec):
        spec_ = cls()
        spec_.parse_from_string(spec)
        return spec_

    def parse_from_string(self, spec):
        """Sets every part from `spec` ("/job:ps/replica:0/task:1/device:CPU:0", "/cpu:0",
        "gpu:1", "/job:worker", ...), the parts it does not name to None, as TF1's; a malformed
        one, or one naming two device types ("/cpu:0/gpu:0"), is a ValueError naming it.
        Returns self."""
        parts = dict(job=None, replica=None, task=None, device_type=None, device_index=None)
        for part in (p for p in (spec or "").split("/") if p):
            fields = part.split(":")
            key = fields[0].lower()
            try:
                if key == "job" and len(fields) == 2 and fields[1]:
                    parts["job"] = fields[1]
                elif key in ("replica", "task") and len(fields) == 2:
                    parts[key] = int(fields[1])
                elif key == "device" and len(fields) == 3:
                    _set_type(parts, spec, fields[1], fields[2])
                elif len(fields) == 2 and fields[0] and key not in ("job", "replica", "task"):
                    _set_type(parts, spec, fields[0], fields[1])    # "/gpu:1", "TPU:0"
                elif len(fields) == 1 and key in ("cpu", "gpu"):
                    _set_type(parts, spec, fields[0], "*")          # "/cpu"
                else:
                    raise ValueError(part)
            except ValueError as e:
                if str(e).startswith("Cannot specify"):
                    raise
                raise ValueError("DeviceSpec: cannot parse %r (at %r); devices look like "
                                 "'/job:ps/replica:0/task:1/device:CPU:0' or '/gpu:0'"
                                 % (spec, part)) from None
        for k, v in parts.items():
            setattr(self, k, v)
        return self

    def merge_from(self, dev):
        """Sets the parts `dev` (a DeviceSpec or string) specifies."""
        if isinstance(dev, str):
            dev = DeviceSpec.from_string(dev)
        for k in ("job", "replica", "task", "device_type", "device_index"):
            if getattr(dev, k) is not None:
                setattr(self, k, getattr(dev, k))

    def make_merged_spec(self, dev):
        merged = self.replace()
        merged.merge_from(dev)
        return merged

    def replace(self, **kwargs):
        parts = {k: getattr(self, k) for k in ("job", "replica", "task", "device_type",
                                               "device_index")}
        parts.update(kwargs)
        return DeviceSpec(**parts)

    def to_string(self):
        out = ""
        if self.job is not None:
            out += "/job:" + self.job
        if self.replica is not None:
            out += "/replica:%d" % self.replica
        if self.task is not None:
            out += "/task:%d" % self.task
        if self.device_type is not None:
            out += "/device:%s:%s" % (self.device_type, "*" if self.device_index is None
                                      else self.device_index)
        return out

    def __str__(self):
        return self.to_string()

    def __repr__(self):
        return "DeviceSpec(%r)" % self.to_string()

    def __eq__(self, other):
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self):
        return hash(self.to_string())


def _set_type(parts, spec, device_type, index):
    if parts["device_type"] is not None:
        raise ValueError("Cannot specify multiple device types: %s" % spec)
    parts["device_type"] = _canonical_type(device_type)
    parts["device_index"] = None if index == "*" else int(index)


def _canonical_type(device_type):
    if device_type is None:
        return None
    return device_type.upper() if device_type.lower() in ("cpu", "gpu") else device_type
