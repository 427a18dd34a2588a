"""TF 1.15 fidelity of variable scopes, initializers, partitioned variables, the Saver, meta
graphs and checkpoint utilities (shardflow/variable_scope.py, variables.py,
partitioned_variables.py, saver.py, meta_graph.py, checkpoint_utils.py): programs as TF1 users
write them, checked against TF 1.15's documented values."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _values(*variables):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run([tf.convert_to_tensor(v) for v in variables])


# ---- initializers ---------------------------------------------------------------------------


def test_initializer_constructors_take_tf1_dtype_arguments():
    # TF1's init_ops classes all take dtype (and Constant verify_shape); these raised TypeError.
    a = tf.get_variable("a", [3], initializer=tf.zeros_initializer(dtype=tf.float32))
    b = tf.get_variable("b", [3], initializer=tf.ones_initializer(dtype=tf.float32))
    c = tf.get_variable("c", [3], initializer=tf.constant_initializer(0.5, dtype=tf.float32,
                                                                      verify_shape=False))
    d = tf.get_variable("d", [3], initializer=tf.truncated_normal_initializer(
        stddev=0.02, dtype=tf.float32))
    e = tf.get_variable("e", [3], initializer=tf.random_uniform_initializer(-1, 1,
                                                                            dtype=tf.float32))
    f = tf.get_variable("f", [3], initializer=tf.glorot_uniform_initializer(dtype=tf.float32))
    g = tf.get_variable("g", [3], initializer=tf.variance_scaling_initializer(2.0,
                                                                              dtype=tf.float32))
    h = tf.get_variable("h", [2], dtype=tf.int32, initializer=tf.zeros_initializer)
    va, vb, vc, vd, ve, _, _, vh = _values(a, b, c, d, e, f, g, h)
    np.testing.assert_array_equal(va, [0, 0, 0])
    np.testing.assert_array_equal(vb, [1, 1, 1])
    np.testing.assert_array_equal(vc, [0.5, 0.5, 0.5])
    assert np.abs(vd).max() <= 0.04 and np.abs(ve).max() <= 1.0
    assert vh.dtype == np.int32 and list(vh) == [0, 0]


def test_initializer_class_itself_as_initializer():
    # TF1 instantiates an initializer class given as it is (initializer=tf.ones_initializer).
    v = tf.get_variable("v", [2, 2], initializer=tf.ones_initializer)
    with tf.variable_scope("s", initializer=tf.zeros_initializer):
        w = tf.get_variable("w", [2])
    vv, vw = _values(v, w)
    np.testing.assert_array_equal(vv, np.ones([2, 2]))
    np.testing.assert_array_equal(vw, [0, 0])


def test_variance_scaling_distributions_as_tf1():
    # fan_in 1000: "untruncated_normal" is a normal of stddev sqrt(1/1000); "normal" is TF1's
    # alias of "truncated_normal", whose stddev *after* truncation is sqrt(1/1000). Shardflow
    # drew a truncated normal of stddev sqrt(1/1000) for both (12% too narrow).
    tf.set_random_seed(3)
    want = np.sqrt(1.0 / 1000)
    un = tf.get_variable("un", [1000, 400], initializer=tf.variance_scaling_initializer(
        1.0, distribution="untruncated_normal"))
    tr = tf.get_variable("tr", [1000, 400], initializer=tf.variance_scaling_initializer(
        1.0, distribution="normal"))
    gn = tf.get_variable("gn", [600, 400], initializer=tf.glorot_normal_initializer())
    vun, vtr, vgn = _values(un, tr, gn)
    assert abs(vun.std() / want - 1) < 0.02
    assert np.abs(vun).max() > 3.5 * want            # not truncated
    assert abs(vtr.std() / want - 1) < 0.02
    assert np.abs(vtr).max() <= 2 * want / 0.87962566103423978 + 1e-6
    assert abs(vgn.std() / np.sqrt(2.0 / 1000) - 1) < 0.02
    with pytest.raises(ValueError, match="distribution"):
        tf.variance_scaling_initializer(distribution="gaussian")


def test_tf_initializers_namespace_signatures():
    # tf.initializers.truncated_normal(mean, stddev): its first argument is the mean (the
    # call below made an all-zero variable: stddev 0.0).
    tf.set_random_seed(1)
    a = tf.get_variable("a", [200, 200], initializer=tf.initializers.truncated_normal(0.0, 0.1))
    b = tf.get_variable("b", [200, 200],
                        initializer=tf.initializers.truncated_normal(mean=1.0, stddev=0.1))
    c = tf.get_variable("c", [4], initializer=tf.initializers.constant([1., 2., 3.]))
    d = tf.get_variable("d", [2], dtype=tf.int32,
                        initializer=tf.initializers.zeros(dtype=tf.int32))
    e = tf.get_variable("e", [20, 30], initializer=tf.initializers.glorot_uniform(seed=None))
    va, vb, vc, vd, ve = _values(a, b, c, d, e)
    assert abs(va.std() / (0.1 * 0.87962566103423978) - 1) < 0.03
    assert abs(vb.mean() - 1.0) < 0.01 and np.abs(vb - 1.0).max() <= 0.2 + 1e-6
    np.testing.assert_array_equal(vc, [1, 2, 3, 3])
    np.testing.assert_array_equal(vd, [0, 0])
    assert np.abs(ve).max() <= np.sqrt(6.0 / 50) + 1e-6


def test_partitioned_variable_initializers_scale_by_the_whole_shape():
    # TF1 passes partition_info to each part's initializer: Glorot / He scale by the fans of
    # the whole [1000, 10], not of a [100, 10] part (limit sqrt(6/1010), not sqrt(6/110)).
    tf.set_random_seed(5)
    with tf.variable_scope("p", partitioner=tf.fixed_size_partitioner(10)):
        default = tf.get_variable("default", [1000, 10])
        glorot = tf.get_variable("glorot", [1000, 10],
                                 initializer=tf.initializers.glorot_uniform())
        he = tf.get_variable("he", [1000, 10], initializer=tf.initializers.he_normal())
        scalar = tf.get_variable("scalar", [])     # TF1 does not partition a scalar
    assert isinstance(scalar, tf.Variable) and scalar.name == "p/scalar:0"
    vd, vg, vh = _values(default, glorot, he)
    limit = np.sqrt(6.0 / 1010)
    for v in (vd, vg):
        assert limit * 0.95 < np.abs(v).max() <= limit + 1e-6
    assert abs(vh.std() / np.sqrt(2.0 / 1000) - 1) < 0.05


# ---- get_variable sharing ---------------------------------------------------------------------


def test_reusing_with_another_dtype_is_an_error():
    with tf.variable_scope("s"):
        tf.get_variable("v", [2], dtype=tf.float32)
    with tf.variable_scope("s", reuse=True):
        with pytest.raises(ValueError, match="specified dtype int32 and found dtype float32"):
            tf.get_variable("v", [2], dtype=tf.int32)
        assert tf.get_variable("v", [2]).name == "s/v:0"


# ---- Saver ----------------------------------------------------------------------------------


def test_saver_max_to_keep_zero_manages_nothing(tmp_path):
    # TF1: max_to_keep 0 or None deletes nothing and keeps no list; the state file names the
    # newest checkpoint only (shardflow listed every checkpoint ever written).
    tf.Variable(1.0, name="v")
    for max_to_keep in (0, None):
        directory = tmp_path / str(max_to_keep)
        saver = tf.train.Saver(max_to_keep=max_to_keep)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(3):
                saver.save(sess, str(directory / "m"), global_step=step)
        assert saver.last_checkpoints == []
        assert all((directory / ("m-%d" % i)).exists() for i in range(3))
        state = tf.train.get_checkpoint_state(str(directory))
        assert state.model_checkpoint_path == str(directory / "m-2")
        assert state.all_model_checkpoint_paths == [str(directory / "m-2")]


def test_saver_restore_missing_checkpoint_and_index_path(tmp_path):
    v = tf.Variable([1.0, 2.0], name="v")
    saver = tf.train.Saver()
    path = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, path, write_meta_graph=False)
        # TF 1.15 raises ValueError for a path with no checkpoint (shardflow: also NotFound).
        with pytest.raises(ValueError, match="not a valid checkpoint"):
            saver.restore(sess, str(tmp_path / "nothing"))
        with pytest.raises(tf.errors.NotFoundError):
            saver.restore(sess, str(tmp_path / "nothing"))
    # A TensorFlow checkpoint named by its index file restores as its prefix.
    from shardflow import tf_checkpoint
    tf_checkpoint.write(str(tmp_path / "tf_model"), [("v", np.array([5.0, 6.0], np.float32))])
    with tf.Session() as sess:
        saver.restore(sess, str(tmp_path / "tf_model.index"))
        np.testing.assert_array_equal(sess.run(v), [5.0, 6.0])


def test_variable_scope_object_lists_its_variables():
    # TF1's VariableScope.trainable_variables() / global_variables() / get_collection(), as
    # GAN programs take a network's variables (AttributeError before).
    with tf.variable_scope("D") as d_scope:
        tf.get_variable("w", [2])
        tf.get_variable("count", [], trainable=False)
    with tf.variable_scope("D_extra"):
        tf.get_variable("w", [2])
    assert [v.name for v in d_scope.trainable_variables()] == ["D/w:0"]
    assert [v.name for v in d_scope.global_variables()] == ["D/w:0", "D/count:0"]
    assert d_scope.local_variables() == []
    d_scope.set_dtype(tf.float64)
    with tf.variable_scope(d_scope):
        assert tf.get_variable("x", [1]).dtype == tf.float64


# ---- partitioners ---------------------------------------------------------------------------


def test_min_max_variable_partitioner_rounds_up_as_tf1():
    # TF1: ceil(total bytes / min_slice_size) parts, at most max_partitions and the dimension
    # (shardflow rounded down: 160 bytes / 64 made 2 parts, TF1 makes 3).
    partitioner = tf.min_max_variable_partitioner(max_partitions=4, min_slice_size=64)
    assert list(partitioner(tf.TensorShape([10, 4]), tf.float32)) == [3, 1]
    assert list(partitioner(tf.TensorShape([100, 4]), tf.float32)) == [4, 1]
    assert list(tf.min_max_variable_partitioner(max_partitions=32)(
        tf.TensorShape([1024, 1024]), tf.float32)) == [16, 1]
    v = tf.get_variable("v", [10, 4], partitioner=partitioner)
    assert [p.shape.as_list() for p in v] == [[4, 4], [3, 4], [3, 4]]
    with pytest.raises(ValueError, match="along axis 2"):
        tf.min_max_variable_partitioner(axis=2)(tf.TensorShape([4, 4]), tf.float32)


def test_custom_partitioner_is_called_as_tf1_calls_it():
    # TF1 calls partitioner(shape=<TensorShape>, dtype=<DType>); a partitioner written for it
    # reads shape[0].value or shape.num_elements() (a plain list was passed positionally).
    seen = []

    def by_rows(shape, dtype):
        seen.append((shape.num_elements(), dtype))
        return [shape[0].value // 2, 1]
    v = tf.get_variable("v", [6, 2], partitioner=by_rows,
                        initializer=np.arange(12.0, dtype=np.float32).reshape(6, 2))
    assert seen == [(12, tf.float32)] and len(list(v)) == 3
    np.testing.assert_array_equal(_values(v)[0], np.arange(12.0).reshape(6, 2))


# ---- meta graphs ----------------------------------------------------------------------------


def test_import_meta_graph_input_map_feeds_the_restored_model(tmp_path):
    # TF1's import_meta_graph passes input_map to import_graph_def: a restored model reads a
    # new input pipeline's tensor instead of its placeholder (the argument was dropped, and
    # running the model asked for the placeholder).
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.get_variable("w", initializer=[[1.0], [2.0]])
    tf.add_to_collection("y", tf.matmul(x, w, name="y"))
    saver = tf.train.Saver()
    assert saver.saver_def.max_to_keep == 5
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model"))
    for scope in (None, "restored"):
        with tf.Graph().as_default():
            data = tf.constant([[3.0, 4.0]])
            restorer = tf.train.import_meta_graph(path + ".meta", input_map={"x:0": data},
                                                  import_scope=scope)
            with tf.Session() as sess:
                restorer.restore(sess, path)
                np.testing.assert_allclose(sess.run(tf.get_collection("y")[0]), [[11.0]])


def test_global_variables_initializer_initializes_imported_variables(tmp_path):
    # TF1: after import_meta_graph, tf.global_variables_initializer() initializes the
    # imported variables too (import, initialize, then fine-tune or restore a part). It ran
    # nothing for them: reading one failed 'not initialized', training failed on Adam's state.
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.get_variable("w", initializer=[[1.0], [2.0]])
    train_op = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(tf.matmul(x, w)))
    tf.add_to_collection("train_op", train_op)
    path = str(tmp_path / "model.meta")
    tf.train.export_meta_graph(path)
    with tf.Graph().as_default():
        tf.train.import_meta_graph(path)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run("w:0"), [[1.0], [2.0]])
            assert list(sess.run(tf.report_uninitialized_variables())) == []
            sess.run(tf.get_collection("train_op")[0], {"x:0": [[1.0, 1.0]]})
            np.testing.assert_allclose(sess.run("w:0"), [[0.9], [1.9]], rtol=1e-6)


def test_half_precision_variables_get_random_initial_values():
    # get_variable(dtype=tf.float16) with the default Glorot or a random initializer failed:
    # the engine's random ops draw float32/float64 only; the value is drawn in float32 and cast.
    tf.set_random_seed(2)
    a = tf.get_variable("a", [200, 100], dtype=tf.float16)
    b = tf.get_variable("b", [200, 100], dtype=tf.float16,
                        initializer=tf.truncated_normal_initializer(stddev=0.1))
    c = tf.get_variable("c", [200, 100], dtype=tf.float16,
                        initializer=tf.initializers.he_normal())
    va, vb, vc = _values(a, b, c)
    assert va.dtype == vb.dtype == vc.dtype == np.float16
    assert 0.9 * np.sqrt(6.0 / 300) < np.abs(va).max() <= np.sqrt(6.0 / 300) + 1e-3
    assert abs(vb.std() / (0.1 * 0.87962566103423978) - 1) < 0.05
    assert abs(vc.std() / np.sqrt(2.0 / 200) - 1) < 0.05


# ---- variables ------------------------------------------------------------------------------


def test_variable_in_no_variable_collection_is_left_alone(tmp_path):
    # TF1's "preloaded data" pattern: tf.Variable(placeholder, trainable=False,
    # collections=[]) is initialized by feeding its initializer; global_variables_initializer()
    # and Savers do not see it (it ran it, asking for the placeholder). A variable given only
    # collections of its own is still trainable, as TF1 adds it to TRAINABLE_VARIABLES.
    data = np.arange(6, dtype=np.float32)
    fed = tf.placeholder(tf.float32, shape=data.shape)
    preloaded = tf.Variable(fed, trainable=False, collections=[])
    w = tf.Variable(2.0, name="w")
    mine = tf.Variable(3.0, name="mine", collections=["mine"])
    assert tf.global_variables() == [w]
    assert tf.trainable_variables() == [w, mine]
    assert tf.get_collection("mine") == [mine]
    with tf.Session() as sess:
        sess.run(preloaded.initializer, feed_dict={fed: data})
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(preloaded * w), data * 2)
        path = tf.train.Saver().save(sess, str(tmp_path / "m"), write_meta_graph=False)
    assert [name for name, _ in tf.train.list_variables(path)] == ["w"]


def test_export_scope_exports_the_scope_alone_with_unbound_inputs(tmp_path):
    # TF1's export_meta_graph(export_scope="hidden1"): the nodes, variables and collection
    # items under hidden1/, the scope taken off their names; what they read from outside is an
    # unbound input that import_meta_graph's input_map must give. The scope was ignored (the
    # whole graph, names unchanged: new_hidden1/hidden1/...).
    images = tf.placeholder(tf.float32, [None, 2], name="images")
    with tf.variable_scope("hidden1"):
        w = tf.get_variable("weights", initializer=[[1.0], [2.0]])
        b = tf.get_variable("biases", initializer=[0.5])
        tf.add_to_collection("out", tf.nn.relu(tf.matmul(images, w) + b, name="y"))
    tf.Variable(7.0, name="elsewhere")
    path = str(tmp_path / "hidden1.meta")
    tf.train.export_meta_graph(path, export_scope="hidden1")
    with tf.Graph().as_default():
        new_images = tf.constant([[1.0, 1.0]], name="images")
        with pytest.raises(ValueError, match="unbound inputs: \\$unbound_inputs_images"):
            tf.train.import_meta_graph(path, import_scope="new_hidden1",
                                       input_map={"images:0": new_images})
        tf.train.import_meta_graph(path, import_scope="new_hidden1",
                                   input_map={"$unbound_inputs_images": new_images})
        assert sorted(v.name for v in tf.global_variables()) == [
            "new_hidden1/biases:0", "new_hidden1/weights:0"]
        (out,) = tf.get_collection("out")
        assert out.name == "new_hidden1/y:0"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(out), [[3.5]])


def test_custom_getters_nest_and_the_calls_own_replaces_the_scopes():
    # TF1: a scope's custom_getter wraps the enclosing scope's (inner first); a
    # get_variable(custom_getter=...) of its own replaces the scopes' (both ran before).
    calls = []

    def named(tag):
        def getter(get, name, *args, **kwargs):
            calls.append(tag)
            return get(name, *args, **kwargs)
        return getter
    with tf.variable_scope("outer", custom_getter=named("outer")):
        with tf.variable_scope("inner", custom_getter=named("inner")):
            tf.get_variable("a", [1])
            assert calls == ["inner", "outer"]
            del calls[:]
            tf.get_variable("b", [1], custom_getter=named("own"))
            assert calls == ["own"]


def test_value_initializer_dtype_and_explicit_dtype():
    # TF1: a variable made from a value has the value's dtype, and a dtype given with it must
    # match ("Initializer type 'float64' and explicit dtype 'float32' don't match"); the
    # explicit float32 was overridden by the value's float64, silently.
    with pytest.raises(ValueError, match="Initializer type 'float64' and explicit dtype "
                                         "'float32' don't match"):
        tf.get_variable("a", initializer=np.zeros(3), dtype=tf.float32)
    with pytest.raises(ValueError, match="'int32' and explicit dtype 'float32'"):
        tf.get_variable("b", initializer=[1, 2], dtype=tf.float32)
    assert tf.get_variable("c", initializer=np.zeros(3)).dtype == tf.float64
    assert tf.get_variable("d", initializer=np.zeros(3, np.float32),
                           dtype=tf.float32).dtype == tf.float32
    with tf.variable_scope("half", dtype=tf.float16):
        # Without a dtype of its own the value's dtype wins over the scope's, as TF1's.
        assert tf.get_variable("e", initializer=0.5).dtype == tf.float32
    with pytest.raises(ValueError, match="don't match"):
        tf.get_variable("p", [4, 2], initializer=np.ones([4, 2]), dtype=tf.float32,
                        partitioner=tf.fixed_size_partitioner(2))


def test_get_variable_shapes_as_tf1():
    # An int shape is [int] (TF1's TensorShape(3)); a new variable's shape must be fully
    # defined (TF1's ValueError; a TypeError from int(None) before); reusing with a partly
    # known shape is fine when it is compatible (it was a 'Trying to share' error).
    assert tf.get_variable("n", shape=3).shape.as_list() == [3]
    with pytest.raises(ValueError, match="must be fully defined"):
        tf.get_variable("u", shape=[None, 3])
    x = tf.placeholder(tf.float32, [None, 5])
    with tf.variable_scope("s"):
        w = tf.get_variable("w", [5, 4])
    with tf.variable_scope("s", reuse=True):
        assert tf.get_variable("w", [None, 4]) is w
        assert tf.get_variable("w", tf.TensorShape([x.shape[1], 4])) is w
        with pytest.raises(ValueError, match="specified shape \\[None, 3\\]"):
            tf.get_variable("w", [None, 3])
