"""TF1's graph introspection: Operation.node_def / get_attr / values, and tensor_util
(make_ndarray, make_tensor_proto, constant_value, tf.get_static_value, tf.contrib.util), as
library code uses them while it builds a graph."""

import numpy as np
import pytest

import shardflow as tf
from shardflow.python.framework import tensor_util


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def test_get_attr_gives_tf1_values():
    x = tf.placeholder(tf.float32, [None, 5, 5, 3], name="x")
    y = tf.nn.conv2d(x, tf.zeros([3, 3, 3, 4]), [1, 2, 2, 1], "SAME", name="conv")
    op = y.op
    assert op.get_attr("padding") == b"SAME"  # strings are bytes, as in TF1
    assert op.get_attr("strides") == [1, 2, 2, 1]
    assert op.get_attr("T") == tf.float32
    assert x.op.get_attr("shape").as_list() == [None, 5, 5, 3]
    assert op.node_def.name == "conv" and op.node_def.op == "Conv2D"
    assert op.values() == (y,)
    with pytest.raises(ValueError, match="No attr named 'nope'"):
        op.get_attr("nope")


@pytest.mark.parametrize("value", [
    np.arange(6, dtype=np.float32).reshape(2, 3),
    np.array([[1, -2], [3, 4]], dtype=np.int64),
    np.array(7, dtype=np.int32),
    np.array([True, False]),
    np.array([0.5, 1.5], dtype=np.float64),
])
def test_make_ndarray_reads_a_const(value):
    c = tf.constant(value)
    got = tf.make_ndarray(c.op.get_attr("value"))
    assert got.dtype == value.dtype and got.shape == value.shape
    np.testing.assert_array_equal(got, value)
    np.testing.assert_array_equal(tf.make_ndarray(tf.make_tensor_proto(value)), value)


def test_make_tensor_proto_fills_and_checks():
    proto = tf.make_tensor_proto(3.0, dtype=tf.float32, shape=[2, 2])
    np.testing.assert_array_equal(tf.make_ndarray(proto), np.full((2, 2), 3.0, np.float32))
    strings = tf.make_ndarray(tf.make_tensor_proto([b"a", b"bc"]))
    assert list(strings) == [b"a", b"bc"]
    broken = tf.make_tensor_proto(np.zeros(4, np.float32))
    broken.content = broken.content[:-1]
    with pytest.raises(ValueError, match="bytes of content"):
        tf.make_ndarray(broken)


def test_constant_value_where_the_graph_decides_it():
    c = tf.constant([[1, 2], [3, 4]])
    np.testing.assert_array_equal(tensor_util.constant_value(c), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(tf.get_static_value(tf.identity(tf.stop_gradient(c))),
                                  [[1, 2], [3, 4]])
    x = tf.placeholder(tf.float32, [3, 4])
    np.testing.assert_array_equal(tf.contrib.util.constant_value(tf.shape(x)), [3, 4])
    assert tensor_util.constant_value(tf.size(x)) == 12
    assert tensor_util.constant_value(tf.rank(tf.placeholder(tf.float32, [None, 2]))) == 2
    assert tensor_util.constant_value(tf.shape(tf.placeholder(tf.float32, [None, 4]))) is None
    assert tensor_util.constant_value(x) is None
    assert tensor_util.constant_value(x + 1.0) is None


def test_constant_bounds_keep_static_shapes():
    """Indexing with Const tensors as bounds infers shapes as with Python ints (helper:
    constant_value), and the values still match NumPy."""
    x = tf.placeholder(tf.float32, [None, 6])
    y = x[:, tf.constant(1):tf.constant(-1)]
    z = tf.strided_slice(x, tf.constant([0, 2]), tf.constant([2, 5]))
    assert y.shape.as_list() == [None, 4]
    assert z.shape.as_list()[1] == 3
    xv = np.arange(18, dtype=np.float32).reshape(3, 6)
    with tf.Session() as sess:
        yv, zv = sess.run([y, z], {x: xv})
    np.testing.assert_array_equal(yv, xv[:, 1:-1])
    np.testing.assert_array_equal(zv, xv[0:2, 2:5])
