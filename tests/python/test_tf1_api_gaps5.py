"""TF 1.15 API gaps, checked by hand or against NumPy: make_template's custom_getter_ and
Template's variables / variable_scope, TensorShape.dims, tf.create_partitioned_variables,
inspect_checkpoint's print_tensors_in_checkpoint_file, tf.io's sparse serialization and
FIFOQueue, ssim_multiscale of images sized at run time, Saver of MutableHashTable contents,
Keras fit on a generator that runs out."""

import numpy as np
import pytest

import shardflow as tf


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def _scale_and_shift(x):
    w = tf.get_variable("w", [2], initializer=tf.constant_initializer(2.0))
    b = tf.get_variable("b", [], trainable=False, initializer=tf.constant_initializer(1.0))
    return x * w + b


def test_make_template_custom_getter_wraps_every_call():
    tf.reset_default_graph()
    seen = []

    def getter(get, name, *args, **kwargs):
        seen.append(name)
        return get(name, *args, **kwargs)

    t = tf.make_template("lin", _scale_and_shift, custom_getter_=getter)
    y1 = t(tf.constant([1.0, 2.0]))
    y2 = t(tf.constant([3.0, 4.0]))
    assert seen == ["lin/w", "lin/b", "lin/w", "lin/b"]
    a, b = run([y1, y2])
    np.testing.assert_allclose(a, [3.0, 5.0])
    np.testing.assert_allclose(b, [7.0, 9.0])


def test_template_lists_its_variables_and_scope():
    tf.reset_default_graph()
    tf.get_variable("other", [1])
    t = tf.make_template("lin", _scale_and_shift)
    assert t.variable_scope is None and t.variable_scope_name is None and t.variables == []
    t(tf.constant([1.0, 1.0]))
    t(tf.constant([1.0, 1.0]))
    assert t.variable_scope_name == "lin" and t.variable_scope.name == "lin"
    assert t.name == "lin"
    assert [v.name for v in t.variables] == ["lin/w:0", "lin/b:0"]
    assert [v.name for v in t.trainable_variables] == ["lin/w:0"]
    assert [v.name for v in t.non_trainable_variables] == ["lin/b:0"]


def test_template_create_scope_now_names_the_scope_at_construction():
    tf.reset_default_graph()
    tf.make_template("lin", _scale_and_shift)(tf.constant([0.0, 0.0]))
    t = tf.make_template("lin", _scale_and_shift, create_scope_now_=True)
    assert t.variable_scope_name == "lin_1"
    y1 = t(tf.constant([1.0, 1.0]))
    y2 = t(tf.constant([2.0, 2.0]))
    assert [v.name for v in t.variables] == ["lin_1/w:0", "lin_1/b:0"]
    assert len(tf.global_variables()) == 4
    a, b = run([y1, y2])
    np.testing.assert_allclose(a, [3.0, 3.0])
    np.testing.assert_allclose(b, [5.0, 5.0])


def test_tensor_shape_dims_are_dimensions():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 3])
    dims = x.shape.dims
    assert isinstance(dims, list) and len(dims) == 2
    assert dims[0].value is None and dims[1].value == 3 and dims[1] == 3
    assert tf.TensorShape([4, 5]).dims[0].value == 4
    assert tf.placeholder(tf.float32).shape.dims is None
    assert tf.TensorShape([]).dims == []


def test_create_partitioned_variables_names_shapes_values_and_reuse():
    from shardflow.partitioned_variables import create_partitioned_variables
    tf.reset_default_graph()
    value = np.arange(15, dtype=np.float32).reshape(5, 3)
    parts = create_partitioned_variables([5, 3], [2, 1], value, name="v")
    assert [p.name for p in parts] == ["v/part_0:0", "v/part_1:0"]
    assert [p.shape.as_list() for p in parts] == [[3, 3], [2, 3]]
    again = create_partitioned_variables([5, 3], [2, 1], value, name="v", reuse=True)
    assert all(a is b for a, b in zip(parts, again))
    unnamed = create_partitioned_variables([4], [2], tf.zeros_initializer())
    unnamed2 = create_partitioned_variables([4], [2], tf.zeros_initializer())
    assert [p.name for p in unnamed + unnamed2] == [
        "PartitionedVariable/part_0:0", "PartitionedVariable/part_1:0",
        "PartitionedVariable_1/part_0:0", "PartitionedVariable_1/part_1:0"]
    with tf.variable_scope("s"):
        frozen = create_partitioned_variables([6], [3], tf.ones_initializer(), trainable=False,
                                              name="w")
    assert [p.name for p in frozen] == ["s/w/part_0:0", "s/w/part_1:0", "s/w/part_2:0"]
    assert not any(p in tf.trainable_variables() for p in frozen)
    first, second, ones = run([parts[0], parts[1], frozen[2]])
    np.testing.assert_array_equal(first, value[:3])
    np.testing.assert_array_equal(second, value[3:])
    np.testing.assert_array_equal(ones, [1.0, 1.0])
    with pytest.raises(ValueError, match="same number of dimensions"):
        create_partitioned_variables([4, 2], [2], tf.zeros_initializer())


def test_print_tensors_in_checkpoint_file(tmp_path, capsys):
    from shardflow.checkpoint_utils import print_tensors_in_checkpoint_file
    tf.reset_default_graph()
    tf.Variable(np.ones([2, 3], np.float32), name="a")
    tf.Variable(np.arange(4, dtype=np.float32), name="b")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver().save(sess, str(tmp_path / "model"))
    capsys.readouterr()
    print_tensors_in_checkpoint_file(path, tensor_name="b", all_tensors=False)
    out = capsys.readouterr().out
    assert out.splitlines() == ["tensor_name:  b", "[0. 1. 2. 3.]",
                                "# Total number of params: 10"]
    print_tensors_in_checkpoint_file(path, "", False, all_tensor_names=True,
                                     count_exclude_pattern="^a")
    assert capsys.readouterr().out.splitlines() == [
        "tensor_name:  a", "tensor_name:  b", "# Total number of params: 4"]
    print_tensors_in_checkpoint_file(path, "", True)
    out = capsys.readouterr().out
    assert "tensor_name:  a\n[[1. 1. 1.]\n [1. 1. 1.]]\ntensor_name:  b" in out
    print_tensors_in_checkpoint_file(path, "missing", False)
    assert capsys.readouterr().out == "Tensor missing not found in checkpoint\n"


def test_io_sparse_serialization_and_fifo_queue():
    tf.reset_default_graph()
    assert tf.io.serialize_sparse is tf.serialize_sparse
    assert tf.io.deserialize_many_sparse is tf.deserialize_many_sparse
    sp = tf.SparseTensor([[0, 1], [1, 0], [1, 2]], [1.0, 2.0, 3.0], [2, 3])
    one = tf.io.serialize_sparse(sp)
    back = tf.io.deserialize_many_sparse(tf.io.serialize_many_sparse(sp), tf.float32)
    queue = tf.io.FIFOQueue(2, tf.int32)
    with tf.Session() as sess:
        serialized, value = sess.run([one, back])
        sess.run(queue.enqueue(5))
        assert sess.run(queue.dequeue()) == 5
    assert serialized.shape == (3,)
    np.testing.assert_array_equal(value.indices, [[0, 1], [1, 0], [1, 2]])
    np.testing.assert_array_equal(value.values, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(value.dense_shape, [2, 3])


def test_ssim_multiscale_of_images_whose_size_is_known_at_run_time():
    # TF1 pads an odd height or width at run time; a [None, None, None, 3] placeholder failed
    # here ('h % 2' of None). The scores must equal those of the same images as constants.
    tf.reset_default_graph()
    rng = np.random.RandomState(0)
    pa = tf.placeholder(tf.float32, [None, None, None, 3])
    pb = tf.placeholder(tf.float32, [None, None, None, 3])
    score = tf.image.ssim_multiscale(pa, pb, 1.0)
    for h, w in ((181, 177), (176, 192)):
        x = rng.rand(2, h, w, 3).astype(np.float32)
        y = np.clip(x + 0.1 * rng.randn(*x.shape), 0, 1).astype(np.float32)
        static = tf.image.ssim_multiscale(tf.constant(x), tf.constant(y), 1.0)
        with tf.Session() as sess:
            fed = sess.run(score, {pa: x, pb: y})
            same = sess.run(score, {pa: x, pb: x})
            expected = sess.run(static)
        np.testing.assert_allclose(fed, expected, rtol=1e-5)
        assert np.all(fed < 0.99) and np.all(fed > 0.5)
        np.testing.assert_allclose(same, [1.0, 1.0], rtol=1e-5)


def _tables_graph():
    tf.reset_default_graph()
    v = tf.Variable(3.0, name="v")
    with tf.variable_scope("outer"):
        table = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, default_value=-1)
    dense = tf.contrib.lookup.MutableDenseHashTable(tf.int64, tf.float32, default_value=[0.0, 0.0],
                                                    empty_key=-1)
    unsaved = tf.contrib.lookup.MutableHashTable(tf.int64, tf.int64, default_value=0,
                                                 name="unsaved", checkpoint=False)
    return v, table, dense, unsaved


def test_saver_saves_and_restores_mutable_hash_tables(tmp_path):
    # TF1's tables (checkpoint=True) are saveable objects: '<table name>-keys' / '-values'.
    v, table, dense, unsaved = _tables_graph()
    fill = [table.insert(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64)),
            dense.insert(tf.constant([5, 7], tf.int64), tf.constant([[1.0, 2.0], [3.0, 4.0]])),
            unsaved.insert(tf.constant([1], tf.int64), tf.constant([9], tf.int64))]
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(fill)
        path = saver.save(sess, str(tmp_path / "model"))
    names = [n for n, _ in tf.train.list_variables(path)]
    assert names == ["MutableDenseHashTable-keys", "MutableDenseHashTable-values",
                     "outer/MutableHashTable-keys", "outer/MutableHashTable-values", "v"]
    assert sorted(tf.train.load_variable(path, "outer/MutableHashTable-keys")) == [b"a", b"b"]

    v, table, dense, unsaved = _tables_graph()
    found = [table.lookup(tf.constant(["b", "a", "z"])),
             dense.lookup(tf.constant([7, 5, 9], tf.int64)), table.size()]
    saver = tf.train.Saver()
    with tf.Session() as sess:
        before = sess.run(found)
        assert before[2] == 0
        saver.restore(sess, path)
        ids, rows, size = sess.run(found)
        assert sess.run(v) == 3.0
    np.testing.assert_array_equal(ids, [2, 1, -1])
    np.testing.assert_array_equal(rows, [[3.0, 4.0], [1.0, 2.0], [0.0, 0.0]])
    assert size == 2


def test_saver_var_list_with_a_table_and_an_empty_table(tmp_path):
    v, table, dense, _ = _tables_graph()
    saver = tf.train.Saver([table])
    with tf.Session() as sess:
        path = saver.save(sess, str(tmp_path / "only_table"))
        assert [n for n, _ in tf.train.list_variables(path)] == [
            "outer/MutableHashTable-keys", "outer/MutableHashTable-values"]
        sess.run(table.insert(tf.constant(["x"]), tf.constant([4], tf.int64)))
        saver.restore(sess, path)          # the empty table it saved
        assert sess.run(table.size()) == 0
    # A checkpoint without the table's entries: NotFoundError naming them, as TF1.
    v, table, dense, _ = _tables_graph()
    plain = tf.train.Saver([v])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = plain.save(sess, str(tmp_path / "no_table"))
        with pytest.raises(tf.errors.NotFoundError, match="outer/MutableHashTable-keys"):
            tf.train.Saver().restore(sess, path)


def test_keras_fit_on_a_generator_that_runs_out_warns_and_stops(monkeypatch):
    # TF 1.15: "Your dataset iterator ran out of data; interrupting training" and no more
    # epochs (it raised OutOfRangeError here); the batches it had were trained on.
    from shardflow import tf_logging
    tf.reset_default_graph()
    tf.keras.backend.clear_session()
    warnings = []
    monkeypatch.setattr(tf_logging, "warning", lambda msg, *a, **k: warnings.append(msg))
    rng = np.random.RandomState(0)
    x = rng.rand(50, 4).astype(np.float32)
    y = rng.rand(50, 1).astype(np.float32)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
    model.compile(tf.keras.optimizers.SGD(0.1), "mse")
    seen = []

    def batches():
        for start in range(0, 50, 10):     # 5 batches; fit asks for 3 * 2
            seen.append(start)
            yield x[start:start + 10], y[start:start + 10]

    history = model.fit(batches(), steps_per_epoch=3, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and seen == [0, 10, 20, 30, 40]
    assert len(warnings) == 1 and "iterator ran out of data" in warnings[0]
    history = model.fit(batches(), steps_per_epoch=2, epochs=5, verbose=0)
    assert len(history.history["loss"]) == 3


def test_partitioned_variables_and_inspect_checkpoint_are_where_tf1_programs_import_them(tmp_path):
    from shardflow.python.tools import inspect_checkpoint
    assert callable(inspect_checkpoint.print_tensors_in_checkpoint_file)
    with tf.Graph().as_default():
        parts = tf.create_partitioned_variables([4], [2], tf.zeros_initializer())
        assert len(parts) == 2
