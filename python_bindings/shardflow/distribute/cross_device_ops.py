"""How the values of several replicas become one: TF 1.15's tf.distribute.CrossDeviceOps and its
kinds (ReductionToOneDevice, NcclAllReduce, HierarchicalCopyAllReduce).

shardflow's MirroredStrategy replicates in one graph (shardflow/distribute/strategy.py), so a
reduction is graph ops: the components are added by one AddN (divided by the number of
replicas for MEAN) on the destination device, and the engine sends each component there
(_Send/_Recv between the session's devices). Every CrossDeviceOps class reduces that way; the
classes are accepted so that TF1 programs naming one run unchanged.
"""

import contextlib
import numbers

from shardflow import framework, ops
from shardflow.distribute.values import (DistributedValues, Mirrored, ReduceOp, as_reduce_op,
                                         is_distributed)


def _placed(destinations):
    """A device scope for `destinations` when it names one device, else no scope."""
    if isinstance(destinations, str) and destinations:
        return framework.device(destinations)
    return contextlib.nullcontext()


def reduce_value(reduce_op, value, num_replicas, destinations=None):
    """`value` of `num_replicas` replicas as one value: a DistributedValues' components added
    (and averaged for MEAN) under the device `destinations` names. A plain value is taken to
    be the same on every replica: returned as it is for MEAN or one replica; with SUM over
    several replicas it is a ValueError, as TF's reduce_non_distributed_value."""
    if isinstance(value, DistributedValues):
        if isinstance(value, Mirrored) and reduce_op == ReduceOp.MEAN:
            return value.values[0]
        parts = [framework.convert_to_tensor(v) for v in value.values]
        with _placed(destinations):
            total = parts[0] if len(parts) == 1 else ops.add_n(parts)
            return total / len(parts) if reduce_op == ReduceOp.MEAN else total
    if is_distributed(value):
        raise TypeError("reduce takes one value (a PerReplica, Mirrored or a tensor), not a "
                        "structure of them: %r; reduce each leaf (tf.nest.map_structure)"
                        % (value,))
    if num_replicas == 1 or reduce_op == ReduceOp.MEAN:
        return value
    if isinstance(value, numbers.Number) and value == 0:
        return 0
    raise ValueError("A non-DistributedValues value %r cannot be reduced with %s across %d "
                     "replicas: it is the same on every replica; return a per-replica value "
                     "from the replica function instead" % (value, reduce_op, num_replicas))


def broadcast(value, devices):
    """A Mirrored value: `value` copied (an Identity) onto each of `devices`."""
    copies = []
    for d in devices:
        with _placed(d):
            copies.append(ops.identity(value))
    return Mirrored(copies, devices)


def _destination_devices(destinations):
    if isinstance(destinations, DistributedValues):
        return destinations.devices
    if isinstance(destinations, str):
        return (destinations,)
    return tuple(destinations)


class CrossDeviceOps:
    """Reduces and broadcasts between the devices of one process, in the graph (see the
    module's text); the base of the kinds below, which all behave alike here."""

    def reduce(self, reduce_op, per_replica_value, destinations):
        """`per_replica_value` reduced to one value on the device `destinations` names."""
        reduce_op = as_reduce_op(reduce_op, "CrossDeviceOps.reduce")
        n = len(per_replica_value.values) if isinstance(per_replica_value,
                                                        DistributedValues) else 1
        return reduce_value(reduce_op, per_replica_value, n, destinations)

    def batch_reduce(self, reduce_op, value_destination_pairs):
        """reduce() of each (value, destinations) pair, as a list."""
        return [self.reduce(reduce_op, v, d) for v, d in value_destination_pairs]

    def broadcast(self, tensor, destinations):
        """`tensor` copied onto each device of `destinations` (a Mirrored value)."""
        return broadcast(tensor, _destination_devices(destinations))


class ReductionToOneDevice(CrossDeviceOps):
    """TF's reduction on one device; `reduce_to_device` and `accumulation_fn` are accepted."""

    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn


class AllReduceCrossDeviceOps(CrossDeviceOps):
    """TF's all-reduce between devices; `all_reduce_alg` and `num_packs` are accepted."""

    def __init__(self, all_reduce_alg="nccl", num_packs=1):
        self.all_reduce_alg = all_reduce_alg
        self.num_packs = num_packs


class NcclAllReduce(AllReduceCrossDeviceOps):
    def __init__(self, num_packs=1):
        super().__init__("nccl", num_packs)


class HierarchicalCopyAllReduce(AllReduceCrossDeviceOps):
    def __init__(self, num_packs=1):
        super().__init__("hierarchical_copy", num_packs)
