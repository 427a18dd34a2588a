"""Collective ops among a group of devices, as TensorFlow 1.x's ``collective_ops`` module.

Every member of a group is one op on its own device, with the same ``group_size``,
``group_key`` and ``instance_key``; one session runs all of them in one step (in-graph
replication), which resolves the group before the step (docs/distributed.md, "Collectives").

Example::

    from shardflow import collective_ops
    outs = []
    for t in range(2):
        with sf.device("/job:worker/task:%d" % t):
            outs.append(collective_ops.all_reduce(grads[t], 2, group_key=1, instance_key=1,
                                                  merge_op="Add", final_op="Div"))
"""

from shardflow import dtypes
from shardflow.framework import _plain_dims, convert_to_tensor
from shardflow.ops import _graph_of


def _attrs(group_size, group_key, instance_key, communication_hint, timeout):
    return {"group_size": int(group_size), "group_key": int(group_key),
            "instance_key": int(instance_key), "communication_hint": str(communication_hint),
            "timeout_seconds": float(timeout)}


def all_reduce(t, group_size, group_key, instance_key, merge_op="Add", final_op="Id",
               subdiv_offsets=(0,), communication_hint="auto", timeout=0, name=None):
    """Every member gets the members' ``t`` reduced by ``merge_op`` (Add, Mul, Min, Max), then
    ``final_op`` (Id, or Div: divided by group_size)."""
    t = convert_to_tensor(t)
    attrs = _attrs(group_size, group_key, instance_key, communication_hint, timeout)
    attrs.update({"merge_op": merge_op, "final_op": final_op,
                  "subdiv_offsets": [int(i) for i in subdiv_offsets]})
    return _graph_of(t)._add_op("CollectiveReduce", [t], attrs, name).outputs[0]


def broadcast_send(t, shape, dtype, group_size, group_key, instance_key,
                   communication_hint="auto", timeout=0, name=None):
    """The source of a broadcast: the group's broadcast_recv ops receive ``t``."""
    t = convert_to_tensor(t)
    if dtypes.as_dtype(dtype) != t.dtype:
        raise ValueError("broadcast_send: dtype %s does not match the tensor's %s"
                         % (dtypes.as_dtype(dtype).name, t.dtype.name))
    attrs = _attrs(group_size, group_key, instance_key, communication_hint, timeout)
    attrs["shape"] = _plain_dims(shape)
    return _graph_of(t)._add_op("CollectiveBcastSend", [t], attrs, name).outputs[0]


def broadcast_recv(shape, dtype, group_size, group_key, instance_key,
                   communication_hint="auto", timeout=0, name=None):
    """A receiver of a broadcast: the broadcast_send member's tensor (of ``shape``)."""
    attrs = _attrs(group_size, group_key, instance_key, communication_hint, timeout)
    attrs.update({"shape": _plain_dims(shape), "T": dtypes.as_dtype(dtype)._enum})
    return _graph_of()._add_op("CollectiveBcastRecv", [], attrs, name).outputs[0]


def all_gather(t, group_size, group_key, instance_key, communication_hint="auto", timeout=0,
               name=None):
    """The members' ``t`` (one shape) concatenated along dimension 0, in rank order."""
    t = convert_to_tensor(t)
    attrs = _attrs(group_size, group_key, instance_key, communication_hint, timeout)
    return _graph_of(t)._add_op("CollectiveGather", [t], attrs, name).outputs[0]
