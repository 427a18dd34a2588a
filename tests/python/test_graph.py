"""Graph building from Python: names, scopes, devices, shapes, operators, build errors."""

import numpy as np
import pytest

import shardflow as sf


@pytest.fixture
def g():
    graph = sf.Graph()
    with graph.as_default():
        yield graph


def test_default_graph_and_as_default():
    g1 = sf.Graph()
    with g1.as_default():
        c = sf.constant(1.0)
        assert sf.get_default_graph() is g1
    assert c.graph is g1
    assert sf.get_default_graph() is not g1


def test_placeholder_shape_dtype_and_names(g):
    x = sf.placeholder(sf.float32, [None, 784], name="images")
    assert x.name == "images:0"
    assert x.dtype == sf.float32
    assert x.shape == [None, 784]
    assert x.shape.ndims == 2
    assert x.op.type == "Placeholder"
    u = sf.placeholder(sf.int32)
    assert u.shape.ndims is None


def test_shape_inference_through_ops(g):
    x = sf.placeholder(sf.float32, [None, 784])
    w = sf.constant(np.zeros((784, 10), np.float32))
    y = sf.nn.relu(x @ w)
    assert y.shape == [None, 10]
    assert sf.reduce_mean(y, axis=1).shape == [None]
    assert sf.reduce_sum(y).shape == []
    assert sf.reshape(y, [-1, 5, 2]).shape.as_list()[1:] == [5, 2]


def test_name_scopes_are_unique_and_nest(g):
    with sf.name_scope("dense"):
        a = sf.constant(1.0, name="c")
        with sf.name_scope("inner"):
            b = sf.constant(2.0, name="c")
    with sf.name_scope("dense"):
        c = sf.constant(3.0, name="c")
    assert a.op.name == "dense/c"
    assert b.op.name == "dense/inner/c"
    assert c.op.name == "dense_1/c"
    with sf.name_scope("dense/"):  # re-enter exactly
        d = sf.constant(4.0, name="d")
    assert d.op.name == "dense/d"


def test_duplicate_names_get_suffixes(g):
    a = sf.constant(1.0, name="x")
    b = sf.constant(2.0, name="x")
    assert a.op.name == "x" and b.op.name == "x_1"


def test_device_scopes(g):
    with sf.device("/device:CPU:1"):
        a = sf.constant(1.0)
        with sf.device("/job:worker/task:1/device:CPU:0"):
            b = a + 1.0
        with sf.device(None):
            c = a * 2.0
    d = sf.constant(0.0)
    assert a.op.device == "/device:CPU:1"
    assert b.op.device == "/job:worker/task:1/device:CPU:0"
    assert c.op.device == ""
    assert d.op.device == ""


def test_operators_build_the_right_ops(g):
    x = sf.placeholder(sf.float32, [2, 2])
    assert (x + 1).op.type == "Add"
    assert (1 - x).op.type == "Sub"
    assert (x * x).op.type == "Mul"
    assert (x / 2).op.type == "Div"
    assert (x @ x).op.type == "MatMul"
    assert (-x).op.type == "Neg"
    assert abs(x).op.type == "Abs"
    assert (x ** 2).op.type == "Pow"
    assert (x < 0).dtype == sf.bool
    # literals take the other operand's dtype
    assert (x * 2).dtype == sf.float32
    assert (2 * x).op.inputs[0].dtype == sf.float32


def test_tensor_has_no_truth_value(g):
    x = sf.placeholder(sf.float32, [2])
    with pytest.raises(TypeError):
        bool(x)


def test_control_dependencies(g):
    a = sf.constant(1.0, name="a")
    with sf.control_dependencies([a]):
        b = sf.constant(2.0, name="b")
    assert [op.name for op in b.op.control_inputs] == ["a"]
    assert a.op.control_inputs == []


def test_get_by_name_and_operations(g):
    x = sf.placeholder(sf.float32, [3], name="x")
    y = sf.identity(x, name="y")
    assert g.get_tensor_by_name("y:0") is y
    assert g.get_operation_by_name("x") is x.op
    assert [op.name for op in g.get_operations()] == ["x", "y"]
    assert y.op.inputs[0] is x
    with pytest.raises(LookupError, match="no node named 'nope'"):
        g.get_operation_by_name("nope")


def test_graph_def_is_a_protobuf_message_that_round_trips(g):
    sf.constant([1.0, 2.0], name="c")
    graph_def = g.as_graph_def()
    assert isinstance(graph_def, sf.GraphDef)
    assert [(n.name, n.op) for n in graph_def.node] == [("c", "Const")]
    data = graph_def.SerializeToString()
    again = sf.GraphDef()
    again.ParseFromString(data)
    assert again == graph_def == sf.GraphDef.FromString(g._as_graph_def_bytes())


def test_build_error_raises_and_graph_stays_usable(g):
    a = sf.placeholder(sf.float32, [2, 3], name="a")
    b = sf.placeholder(sf.float32, [4, 5], name="b")
    with pytest.raises(ValueError) as e:
        sf.matmul(a, b)
    assert isinstance(e.value, sf.errors.InvalidArgumentError)
    assert e.value.code == "INVALID_ARGUMENT"
    assert "MatMul" in str(e.value)
    # the failed node is gone and later ops build and run
    assert not any(op.type == "MatMul" for op in g.get_operations())
    c = sf.matmul(a, sf.transpose(a), name="ok")
    with sf.Session(graph=g) as sess:
        out = sess.run(c, {a: np.ones((2, 3), np.float32)})
    np.testing.assert_allclose(out, np.full((2, 2), 3.0))


def test_dtype_mismatch_is_a_value_error(g):
    a = sf.placeholder(sf.float32, [2])
    b = sf.placeholder(sf.int32, [2])
    with pytest.raises(ValueError):
        sf.add(a, b)


def test_bad_python_arguments_raise_type_errors(g):
    x = sf.placeholder(sf.float32, [1, 4, 4, 1])
    with pytest.raises(TypeError):
        sf.nn.max_pool(x, 2, 2, padding=3)
    with pytest.raises(TypeError):
        sf.device(5)
    with pytest.raises(TypeError):
        sf.constant(object())
    with pytest.raises(ValueError):
        sf.nn.dropout(x, rate=1.5)


def test_tensors_from_another_graph_are_rejected(g):
    other = sf.Graph()
    with other.as_default():
        c = sf.constant(1.0)
    with pytest.raises(ValueError, match="another graph"):
        sf.add(sf.constant(1.0), c)


def test_variables_and_layers_create_named_variables(g):
    v = sf.Variable(np.zeros((2, 3), np.float32), name="v")
    assert v.name == "v:0" and v.op.name == "v" and v.shape == [2, 3] and v.dtype == sf.float32
    layer = sf.layers.Dense(4, name="fc")
    y = layer(sf.placeholder(sf.float32, [None, 3]))
    assert y.shape == [None, 4]
    assert [w.shape.as_list() for w in layer.variables] == [[3, 4], [4]]
    assert all(w.name.startswith("fc/") for w in layer.variables)
    assert len(sf.trainable_variables()) == 3


def test_a_python_scalar_constant_is_a_scalar():
    # Regression: constants of Python and NumPy scalars came out with shape [1].
    g = sf.Graph()
    with g.as_default():
        a = sf.constant(1.0)
        b = sf.constant(np.float64(2.0))
        c = sf.constant(3, dtype=sf.float32)
        assert a.shape.as_list() == [] and b.shape.as_list() == [] and c.shape.as_list() == []
        with sf.Session(graph=g) as sess:
            out = sess.run([a, b, c])
    assert [np.shape(v) for v in out] == [(), (), ()]
    assert out[1] == 2.0 and out[2] == 3.0
