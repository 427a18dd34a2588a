"""GraphDef objects, import_graph_def, write_graph and gfile, as TF1 programs use them."""

import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def exported():
    """y = x * 2 + 1 as a GraphDef, the way a TF1 program freezes and ships a graph."""
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.add(tf.multiply(x, 2.0), 1.0, name="y")
    return g.as_graph_def()


def test_import_with_input_map_and_return_elements():
    graph_def = exported()
    assert [n.name for n in graph_def.node][:1] == ["x"]
    v = tf.constant([1.0, 2.0, 3.0])
    y, y_op = tf.import_graph_def(graph_def, input_map={"x:0": v},
                                  return_elements=["y:0", "y"])
    assert y.name == "import/y:0" and y_op.name == "import/y" and y.op is y_op
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y), [3.0, 5.0, 7.0])
    # The placeholder came along (TF1 keeps it) but nothing reads it.
    assert tf.get_default_graph().get_operation_by_name("import/x").type == "Placeholder"


def test_import_twice_gets_fresh_prefixes_and_feeds_by_name():
    graph_def = exported()
    tf.import_graph_def(graph_def)
    tf.import_graph_def(graph_def)
    tf.import_graph_def(graph_def, name="net")
    g = tf.get_default_graph()
    names = {op.name for op in g.get_operations()}
    assert {"import/y", "import_1/y", "net/y"} <= names
    with tf.Session() as sess:
        out = sess.run("import_1/y:0", {"import_1/x:0": np.array([0.5], np.float32)})
    np.testing.assert_allclose(out, [2.0])


def test_import_without_prefix_and_a_clash_adds_nothing():
    graph_def = exported()
    tf.import_graph_def(graph_def, name="")
    g = tf.get_default_graph()
    assert g.get_operation_by_name("y").type == "Add"
    before = g.num_nodes
    with pytest.raises(ValueError, match="already has a node named 'x'"):
        tf.import_graph_def(graph_def, name="")
    assert g.num_nodes == before


def test_a_bad_graph_def_is_refused_whole():
    graph_def = exported()
    node = graph_def.node.add()
    node.name, node.op = "z", "NoSuchOp"
    g = tf.get_default_graph()
    with pytest.raises(ValueError, match="NoSuchOp"):
        tf.import_graph_def(graph_def)
    del graph_def.node[-1]
    graph_def.node[-1].input[0] = "missing:0"
    with pytest.raises(ValueError, match="missing"):
        tf.import_graph_def(graph_def)
    with pytest.raises(ValueError, match="not a serialized GraphDef"):
        tf.import_graph_def(b"\xff\xff\xff")
    with pytest.raises(ValueError, match="no node of the GraphDef reads"):
        tf.import_graph_def(exported(), input_map={"nope:0": tf.constant([1.0])})
    with pytest.raises(ValueError, match="not in the GraphDef"):
        tf.import_graph_def(exported(), return_elements=["nope:0"])
    assert not any(op.name.startswith("import") for op in g.get_operations())
    with pytest.raises(ValueError, match="expects float but .* is int32"):
        tf.import_graph_def(exported(), input_map={"x:0": tf.constant([1], tf.int32)})


def test_device_scope_and_control_dependencies_apply_to_imported_nodes():
    graph_def = exported()
    first = tf.no_op(name="first")
    with tf.device("/device:CPU:1"), tf.control_dependencies([first]):
        tf.import_graph_def(graph_def)
    g = tf.get_default_graph()
    x = g.get_operation_by_name("import/x")
    assert x.device.endswith("CPU:1")
    assert "^first" in [i for n in g.as_graph_def().node if n.name == "import/x" for i in n.input]


def test_a_while_loop_survives_export_and_import():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [], name="x")
        _, r = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * x), [0, 1.0])
        tf.identity(r, name="power")
    graph_def = g.as_graph_def()
    data = graph_def.SerializeToString()
    again = tf.GraphDef()
    again.ParseFromString(data)
    power, = tf.import_graph_def(again, return_elements=["power:0"])
    with tf.Session() as sess:
        assert sess.run(power, {"import/x:0": 2.0}) == 32.0


def test_write_graph_text_and_binary_read_back(tmp_path):
    with tf.Session() as sess:
        tf.constant(3.0, name="c")
        text = tf.train.write_graph(sess.graph_def, str(tmp_path / "out"), "g.pbtxt")
        binary = tf.train.write_graph(sess.graph, str(tmp_path / "out"), "g.pb", as_text=False)
        graph_def = sess.graph.as_graph_def()
    content = open(text).read()
    assert 'name: "c"' in content and 'op: "Const"' in content
    from google.protobuf import text_format
    assert text_format.Parse(content, tf.GraphDef()) == graph_def
    assert tf.io.read_graph(text) == graph_def == tf.io.read_graph(binary)
    # TF1's way to load a frozen graph: gfile + ParseFromString + import.
    with tf.gfile.GFile(binary, "rb") as f:
        loaded = tf.GraphDef()
        loaded.ParseFromString(f.read())
    with tf.Graph().as_default():
        c, = tf.import_graph_def(loaded, return_elements=["c:0"], name="")
        with tf.Session() as sess:
            assert sess.run(c) == 3.0


def test_gfile_helpers(tmp_path):
    d = str(tmp_path / "a" / "b")
    tf.gfile.MakeDirs(d)
    assert tf.gfile.IsDirectory(d) and tf.gfile.Exists(d)
    with tf.gfile.GFile(d + "/f.txt", "w") as f:
        f.write("hi")
    assert tf.gfile.ListDirectory(d) == ["f.txt"]
    assert tf.gfile.Glob(d + "/*.txt") == [d + "/f.txt"]
    tf.gfile.Rename(d + "/f.txt", d + "/g.txt")
    assert tf.io.gfile.exists(d + "/g.txt")
    tf.gfile.DeleteRecursively(str(tmp_path / "a"))
    assert not tf.gfile.Exists(d)
    with pytest.raises(ValueError, match="not a local path"):
        tf.gfile.GFile("gs://bucket/x")


def test_contrib_rnn_is_the_rnn_cells():
    assert tf.contrib.rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    assert tf.contrib.rnn.LSTMStateTuple is tf.nn.rnn_cell.LSTMStateTuple
    with pytest.raises(AttributeError, match="tf.contrib.gan"):
        tf.contrib.gan


def test_hand_made_functions_that_lie_get_errors_not_crashes():
    """A GraphDef edited by hand (or by an attacker) whose While/If functions do not match
    their declarations: each run fails with an error naming the problem; the session stays
    usable."""
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [], name="x")
        _, r = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + x), [0, 0.0])
        tf.identity(r, name="sum")
        tf.identity(tf.cond(x > 0, lambda: x * 2.0, lambda: x), name="picked")
    good = g.as_graph_def()

    def broken(edit):
        graph_def = tf.GraphDef()
        graph_def.CopyFrom(good)
        for node in graph_def.node:
            edit(node)
        return graph_def

    def run(graph_def, fetch):
        with tf.Graph().as_default():
            tf.import_graph_def(graph_def, name="")
            with tf.Session() as sess:
                return sess.run(fetch + ":0", {"x:0": 1.0})

    assert run(good, "sum") == 3.0 and run(good, "picked") == 2.0

    def body_returns_a_missing_tensor(node):
        if node.op == "While":
            node.attr["body"].func.ret[1] = "nowhere:0"

    def body_graph_has_an_unknown_op(node):
        if node.op == "While":
            node.attr["body"].func.graph.node[-1].op = "NoSuchOp"

    def cond_returns_a_float(node):
        if node.op == "While":
            node.attr["cond"].func.ret[0] = node.attr["body"].func.ret[1].replace("body", "cond")

    def branch_takes_fewer_args(node):
        if node.op == "If":
            del node.attr["then_branch"].func.arg[:]

    def branch_returns_too_much(node):
        if node.op == "If":
            node.attr["then_branch"].func.ret.append(node.attr["then_branch"].func.ret[0])

    for edit, fetch in [(body_returns_a_missing_tensor, "sum"),
                        (body_graph_has_an_unknown_op, "sum"),
                        (cond_returns_a_float, "sum"),
                        (branch_takes_fewer_args, "picked"),
                        (branch_returns_too_much, "picked")]:
        with pytest.raises(tf.errors.OpError) as e:
            run(broken(edit), fetch)
        print(edit.__name__, "->", e.value)
        assert str(e.value), edit.__name__
