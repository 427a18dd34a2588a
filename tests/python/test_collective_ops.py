"""sf.collective_ops (TF1's collective_ops names): all-reduce, broadcast and all-gather among the
CPU devices of a local session, and the error for a group that cannot meet."""
import numpy as np
import pytest

import shardflow as sf
from shardflow import collective_ops


def _session(graph, devices):
    return sf.Session(graph=graph, config=sf.ConfigProto(cpu_device_count=devices))


def test_all_reduce_broadcast_and_gather_between_two_devices():
    g = sf.Graph()
    with g.as_default():
        x = [np.array([1.0, 2.0, 3.0], np.float32), np.array([10.0, 20.0, 30.0], np.float32)]
        sums, means, recv, gathered = [], [], [], []
        for d in range(2):
            with sf.device("/cpu:%d" % d):
                t = sf.constant(x[d])
                sums.append(collective_ops.all_reduce(t, 2, group_key=1, instance_key=1))
                means.append(collective_ops.all_reduce(t, 2, 1, 2, merge_op="Add",
                                                       final_op="Div"))
                if d == 0:
                    recv.append(collective_ops.broadcast_send(t, [3], sf.float32, 2, 1, 3))
                else:
                    recv.append(collective_ops.broadcast_recv([3], sf.float32, 2, 1, 3))
                gathered.append(collective_ops.all_gather(t, 2, 1, 4))
    with _session(g, 2) as sess:
        s, m, r, ga = sess.run([sums, means, recv, gathered])
    for d in range(2):
        np.testing.assert_allclose(s[d], x[0] + x[1])
        np.testing.assert_allclose(m[d], (x[0] + x[1]) / 2)
        np.testing.assert_allclose(r[d], x[0])
        np.testing.assert_allclose(ga[d], np.concatenate(x))


def test_a_group_missing_a_member_is_refused_naming_it():
    g = sf.Graph()
    with g.as_default():
        with sf.device("/cpu:0"):
            y = collective_ops.all_reduce(sf.constant([1.0]), 2, group_key=5, instance_key=1,
                                          name="lonely")
    with _session(g, 2) as sess:
        with pytest.raises(sf.errors.InvalidArgumentError, match="collective group 5 has "
                           "group_size 2 but its ops in this run \\('lonely'\\)"):
            sess.run(y)
