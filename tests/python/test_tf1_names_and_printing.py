"""The names TF1 gives the ops of Python operators ("mul:0" for x * 2: programs and frozen-graph
tools fetch tensors by them) and the way TF1 prints tensors, shapes, dtypes and ops."""
import numpy as np

import shardflow as tf


def test_operator_ops_are_named_as_tf1_names_them():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [None, 3], name="a")
        names = [t.op.name for t in (a * 2, a + 1, 2 - a, a / 2, a // 2, a % 2, a ** 2, a * a)]
        assert names == ["mul", "add", "sub", "truediv", "floordiv", "mod", "pow", "mul_1"]
        b = tf.placeholder(tf.bool, name="b")
        assert [(b & b).op.name, (b | b).op.name, (b ^ b).op.name] == ["and", "or", "xor"]
        m = tf.constant([[1.0]])
        assert (m @ m).op.name == "matmul"
        assert tf.multiply(a, 2.0).op.name == "Mul"          # the function keeps the op's name
        with tf.name_scope("layer"):
            y = a * 2.0 + 1.0
        assert y.name == "layer/add:0" and y.op.inputs[0].name == "layer/mul:0"
        v = tf.Variable(1.0)
        assert (v * 2.0).op.name == "mul_2"
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run("mul:0", {"a:0": [[1, 2, 3]]}), [[2, 4, 6]])


def test_tensors_shapes_and_dtypes_print_as_in_tf1():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [None, 3], name="a")
        assert str(a * 2) == 'Tensor("mul:0", shape=(?, 3), dtype=float32)'
        assert repr(a) == "<sf.Tensor 'a:0' shape=(?, 3) dtype=float32>"
        assert str(tf.placeholder(tf.int32)) == 'Tensor("Placeholder:0", dtype=int32)'
        assert [str(tf.TensorShape(s)) for s in ([None, 3], [2], [], None)] == \
            ["(?, 3)", "(2,)", "()", "<unknown>"]
        assert str(tf.float32) == "<dtype: 'float32'>" and repr(tf.float32) == "sf.float32"
        assert repr(a.op) == "<sf.Operation 'a' type=Placeholder>"
        assert 'name: "a"' in str(a.op) and 'op: "Placeholder"' in str(a.op)
        with tf.device("/cpu:0"):
            c = tf.identity(a, name="c")
        assert str(c).endswith("dtype=float32, device=/device:CPU:0)")


def test_small_framework_members_tf1_programs_use():
    import contextlib
    with tf.Graph().as_default() as g:
        # convert_to_tensor's preferred_dtype / dtype_hint: tried, left when it would lose.
        assert tf.convert_to_tensor(1, preferred_dtype=tf.float32).dtype == tf.float32
        assert tf.convert_to_tensor(1.5, preferred_dtype=tf.int32).dtype == tf.float32
        assert tf.convert_to_tensor([1, 2], dtype_hint=tf.int64).dtype == tf.int64
        assert tf.convert_to_tensor("a", preferred_dtype=tf.float32).dtype == tf.string
        x = tf.constant(1.0)
        assert tf.convert_to_tensor(x, preferred_dtype=tf.int32) is x
        refs = {x.experimental_ref(): "x"}
        assert refs[x.experimental_ref()] == "x" and x.experimental_ref().deref() is x
        assert x.experimental_ref() != tf.constant(1.0).experimental_ref()
        with g.container("experiment"):
            pass
        assert isinstance(g.container("c"), contextlib.AbstractContextManager)
        with tf.variable_scope("a"):
            va = tf.Variable(1.0, name="v")
        with tf.variable_scope("b"):
            vb = tf.Variable(2.0, name="v")
        ema = tf.train.ExponentialMovingAverage(0.9)
        ema.apply([va, vb])
        assert tf.moving_average_variables() == [va, vb]
        assert tf.moving_average_variables("b") == [vb]
