"""tf.py_func / tf.numpy_function: a graph node calling Python (python_bindings/src/py_func.cc,
shardflow/script_ops.py)."""
import numpy as np
import pytest

import shardflow as tf


def test_py_func_single_and_several_results():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.py_func(lambda a: np.sort(a) * 2, [x], tf.float32)
        a, n = tf.py_func(lambda v: (v + 1, len(v)), [x], [tf.float32, tf.int64])
        z = tf.reduce_sum(y) + 1.0      # the result feeds ordinary ops
        s = tf.numpy_function(lambda: np.array([b"ab", b"c"], dtype=object), [], tf.string)
    with tf.Session(graph=g) as sess:
        yv, av, nv, zv, sv = sess.run([y, a, n, z, s], {x: [3, 1, 2]})
    np.testing.assert_array_equal(yv, [2, 4, 6])
    np.testing.assert_array_equal(av, [4, 2, 3])
    assert nv == 3 and nv.dtype == np.int64
    assert zv == 13
    assert list(sv) == [b"ab", b"c"]


def test_py_func_errors_name_the_node_and_the_session_keeps_serving():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        wrong_dtype = tf.py_func(lambda v: v.astype(np.float64), [x], tf.float32, name="f64")
        raises = tf.py_func(lambda v: 1 / 0, [x], tf.float32, name="div")
        too_many = tf.py_func(lambda v: (v, v), [x], tf.float32, name="two")
        ok = tf.py_func(lambda v: v * 3, [x], tf.float32)
    with tf.Session(graph=g) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="f64.*double but Tout says float"):
            sess.run(wrong_dtype, {x: [1]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="div.*ZeroDivisionError"):
            sess.run(raises, {x: [1]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="returned 2 value"):
            sess.run(too_many, {x: [1]})
        np.testing.assert_array_equal(sess.run(ok, {x: [1, 2]}), [3, 6])


def test_py_func_runs_every_step_with_state():
    calls = []

    def count(v):
        calls.append(v.copy())
        return np.float32(len(calls))

    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2])
        c = tf.py_func(count, [x], tf.float32)
    with tf.Session(graph=g) as sess:
        assert [sess.run(c, {x: [i, i]}) for i in range(3)] == [1, 2, 3]
    assert [list(v) for v in calls] == [[0, 0], [1, 1], [2, 2]]


def test_py_func_with_an_unknown_token_is_not_found():
    # A PyFunc node whose token names no function here (a GraphDef from another process).
    g = tf.Graph()
    with g.as_default():
        op = g._add_op("PyFunc", [tf.framework._InputList([])],
                       {"token": "pyfunc_from_elsewhere", "Tout": [tf.float32._enum]})
    with tf.Session(graph=g) as sess:
        with pytest.raises(tf.errors.NotFoundError, match="registered under token"):
            sess.run(op.outputs[0])


def test_an_imported_graph_cannot_guess_another_graphs_py_func_token(tmp_path):
    # Regression: tokens were "pyfunc_0", "pyfunc_1", ...: a hand-made GraphDef given to
    # import_graph_def could name one and call the program's own function (here one writing a
    # file) with arguments of its choosing. Tokens now carry a random per-process part.
    target = tmp_path / "written"

    def write(data):
        target.write_bytes(bytes(data))
        return np.float32(0)

    g = tf.Graph()
    with g.as_default():
        tf.py_func(write, [tf.constant(b"app")], tf.float32)
        real = [op for op in g.get_operations() if op.type == "PyFunc"][0]
        token = real.get_attr("token")
        token = token.decode() if isinstance(token, bytes) else token
        assert token.startswith("pyfunc_") and len(token) > len("pyfunc_0") + 8
    for guess in ["pyfunc_%d" % i for i in range(4)]:
        h = tf.Graph()
        with h.as_default():
            data = tf.constant(b"attacker")
            op = h._add_op("PyFunc", [tf.framework._InputList([data])],
                           {"token": guess, "Tout": [tf.float32._enum]})
        with tf.Session(graph=h) as sess:
            with pytest.raises(tf.errors.NotFoundError, match="registered under token"):
                sess.run(op.outputs[0])
    assert not target.exists()
    # The program's own graph, exported and imported in this process, still runs its function.
    gd = g.as_graph_def()
    k = tf.Graph()
    with k.as_default():
        tf.import_graph_def(gd, name="copy")
        out = k.get_tensor_by_name("copy/%s:0" % real.name)
    with tf.Session(graph=k) as sess:
        assert sess.run(out) == 0
    assert target.read_bytes() == b"app"
