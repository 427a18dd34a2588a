"""tf.colocate_with writes TF1's `_class` colocation attr, which the placer honours: ops made
inside join the target's colocation group even when the target has no device, a run that prunes
the target still places, and import_graph_def moves the entries under its prefix."""
import pytest

import shardflow as tf

TWO_CPUS = tf.ConfigProto(device_count={"CPU": 2})


def _placement(sess, fetch):
    md = tf.RunMetadata()
    sess.run(fetch, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=md)
    return {n.node_name: d.device.split("/")[-1] for d in md.step_stats.dev_stats
            for n in d.node_stats}


def test_ops_join_a_target_without_a_device():
    g = tf.Graph()
    with g.as_default():
        a = tf.random_uniform([], name="a")
        with tf.colocate_with(a), tf.device("/cpu:1"):
            c = tf.identity(a, name="c")
        assert c.op.colocation_groups() == [b"loc:@a"]
        assert a.op.colocation_groups() == [b"loc:@a"]
        with tf.Session(graph=g, config=TWO_CPUS) as sess:
            where = _placement(sess, c)
    # The group's merged request puts the target beside the op (TF1 moves both to CPU:1).
    assert where["a"] == where["c"] == "device:CPU:1", where


def test_nesting_ignore_existing_and_device_scopes():
    g = tf.Graph()
    with g.as_default():
        a = tf.random_uniform([], name="a")
        with tf.device("/cpu:1"):
            b = tf.random_uniform([], name="b")
        with tf.device("/cpu:0"), tf.colocate_with(a):
            with tf.colocate_with(b):
                both = tf.add(a, b, name="both")
            with tf.colocate_with(None, ignore_existing=True):
                free = tf.identity(a, name="free")
            only_a = tf.identity(a, name="only_a")
        with pytest.raises(ValueError, match="ignore_existing"):
            with tf.colocate_with(None):
                pass
    assert both.op.colocation_groups() == [b"loc:@a", b"loc:@b"]
    assert both.op.device.endswith("CPU:1")          # the target's device
    assert free.op.colocation_groups() == [b"loc:@free"]
    assert only_a.op.colocation_groups() == [b"loc:@a"]
    assert only_a.op.device == ""                     # the scope around does not apply


def test_a_run_that_prunes_the_target_still_places():
    g = tf.Graph()
    with g.as_default():
        x = tf.random_uniform([], name="x")
        with tf.colocate_with(x):
            y = tf.random_uniform([], name="y") + 6.0   # not folded: placed with _class
        with tf.Session() as sess:
            assert 6.0 <= sess.run(y) < 7.0             # x is not run
            assert sess.run(x + y) >= 6.0


def test_import_graph_def_prefixes_the_colocation_entries():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(3.0, name="v")
        with tf.colocate_with(v):
            tf.multiply(v.read_value(), 2.0, name="twice")
        gd = g.as_graph_def()
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(gd, name="imp")
        op = g2.get_operation_by_name("imp/twice")
        assert op.colocation_groups() == [b"loc:@imp/v"]
        with tf.Session() as sess:
            sess.run("imp/v/Assign")
            assert sess.run("imp/twice:0") == 6.0
    bad = tf.GraphDef()
    bad.CopyFrom(gd)
    node = next(n for n in bad.node if n.name == "twice")
    node.attr["_class"].list.s[:] = [b"loc:@nowhere"]
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="'nowhere', which is not in"):
            tf.import_graph_def(bad, name="imp")
