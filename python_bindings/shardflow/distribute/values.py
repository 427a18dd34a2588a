"""The values a tf.distribute.Strategy hands around: ReduceOp, and PerReplica / Mirrored, which
hold one component per replica (component i lives on the strategy's i-th device).

`strategy.experimental_run_v2(fn)` returns what `fn` returned, with every leaf that differs
between the replicas wrapped in a PerReplica; a leaf that is the same object in every replica
(an op returned by a merge_call, a Python number) comes back unwrapped, so with one replica
nothing is wrapped at all, as in TF. `ReplicaContext.all_reduce` gives a Mirrored value: the
same reduced value, copied to every replica's device.

Example::

    per_replica = strategy.experimental_run_v2(lambda x: x * 2.0, args=(batch,))
    per_replica.values                   # (tensor on /device:CPU:0, tensor on /device:CPU:1)
    total = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
"""

import enum

from shardflow import nest


class ReduceOp(enum.Enum):
    """How values of several replicas combine: SUM adds them, MEAN averages them."""

    SUM = "SUM"
    MEAN = "MEAN"


def as_reduce_op(reduce_op, what):
    """`reduce_op` as a ReduceOp ("sum" and "mean" spelled as strings too); TypeError naming
    `what` otherwise."""
    if isinstance(reduce_op, ReduceOp):
        return reduce_op
    if isinstance(reduce_op, str) and reduce_op.upper() in ("SUM", "MEAN"):
        return ReduceOp(reduce_op.upper())
    raise TypeError("%s: reduce_op must be tf.distribute.ReduceOp.SUM or ReduceOp.MEAN, not %r"
                    % (what, reduce_op))


class DistributedValues:
    """One value per replica: `values[i]` belongs to replica i and lives on `devices[i]`."""

    def __init__(self, values, devices):
        if len(values) != len(devices):
            raise ValueError("%s: %d values for %d devices" % (type(self).__name__, len(values),
                                                               len(devices)))
        self._values = tuple(values)
        self._devices = tuple(devices)

    @property
    def values(self):
        """The components, in replica order (a tuple)."""
        return self._values

    @property
    def devices(self):
        """The device of each component (a tuple of names such as '/device:CPU:1')."""
        return self._devices

    def get(self, device=None):
        """The component on `device` (a name as the strategy was given it or canonical), the
        first replica's when None."""
        if device is None:
            return self._values[0]
        for d, v in zip(self._devices, self._values):
            if d == device or d.lower() == str(device).lower():
                return v
        raise ValueError("%s has no component on device %r; its devices are %s"
                         % (type(self).__name__, device, list(self._devices)))

    def __repr__(self):
        parts = ["  %d %s: %r" % (i, d, v)
                 for i, (d, v) in enumerate(zip(self._devices, self._values))]
        return "%s:{\n%s\n}" % (type(self).__name__, ",\n".join(parts))


class PerReplica(DistributedValues):
    """Values that differ between the replicas (each replica's result of fn, its part of a
    distributed batch)."""


class Mirrored(DistributedValues):
    """The same value on every replica's device (the result of ReplicaContext.all_reduce)."""


def regroup(per_replica, devices):
    """The structures `per_replica[i]` returned by the replicas, as one structure whose leaves
    are PerReplica values, or the leaf itself where every replica gave the same object."""
    first = per_replica[0]
    for other in per_replica[1:]:
        nest.assert_same_structure(first, other, check_types=False)
    leaves = []
    for parts in zip(*[nest.flatten(s) for s in per_replica]):
        if all(p is parts[0] for p in parts):
            leaves.append(parts[0])
        else:
            leaves.append(PerReplica(parts, devices))
    return nest.pack_sequence_as(first, leaves)


def select_replica(replica_id, structure):
    """`structure` with each DistributedValues leaf replaced by replica `replica_id`'s
    component."""
    return nest.map_structure(
        lambda v: v.values[replica_id] if isinstance(v, DistributedValues) else v, structure)


def is_distributed(structure):
    """Whether any leaf of `structure` is a DistributedValues."""
    return any(isinstance(v, DistributedValues) for v in nest.flatten(structure))


def local_results(structure, num_replicas):
    """A tuple of `structure` as each replica sees it: one entry per replica when some leaf is
    distributed, else `(structure,)`."""
    if not is_distributed(structure):
        return (structure,)
    return tuple(select_replica(i, structure) for i in range(num_replicas))
