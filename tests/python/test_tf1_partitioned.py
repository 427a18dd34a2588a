"""TF1's partitioned variables (get_variable / variable_scope with a partitioner), sharded
embedding_lookup ("mod" and "div"), custom getters, and a partitioned embedding trained on a
ps cluster (its parts spread over the ps tasks by replica_device_setter)."""
import numpy as np
import pytest

import shardflow as tf


def run(fetches, feed=None, init=True):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_partitioners_slice_like_tf():
    assert tf.fixed_size_partitioner(3)([10, 4], tf.float32) == [3, 1]
    assert tf.fixed_size_partitioner(5)([2, 4], tf.float32) == [2, 1]   # no empty parts
    assert tf.fixed_size_partitioner(2, axis=1)([3, 4], tf.float32) == [1, 2]
    # 1000 x 100 float32 = 400,000 bytes: slices of at least 100,000 bytes, at most 3.
    assert tf.min_max_variable_partitioner(3, min_slice_size=100000)([1000, 100],
                                                                     tf.float32) == [3, 1]
    assert tf.min_max_variable_partitioner(8, min_slice_size=100000)([1000, 100],
                                                                     tf.float32) == [4, 1]
    # Rows of 400 bytes, shards of at most 4,000 bytes: 10 rows each.
    assert tf.variable_axis_size_partitioner(4000)([95, 100], tf.float32) == [10, 1]
    with pytest.raises(ValueError, match="num_shards"):
        tf.fixed_size_partitioner(0)


def test_get_variable_with_a_partitioner_makes_parts_and_acts_as_one_tensor():
    full = np.arange(40, dtype=np.float32).reshape(10, 4)
    with tf.Graph().as_default():
        with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(3)):
            table = tf.get_variable("table", [10, 4], initializer=full)
        assert isinstance(table, tf.PartitionedVariable) and len(table) == 3
        names = [v.name for v in table]
        assert names == ["emb/table/part_0:0", "emb/table/part_1:0", "emb/table/part_2:0"]
        assert [v.shape.as_list() for v in table] == [[4, 4], [3, 4], [3, 4]]
        assert table.shape.as_list() == [10, 4] and table.dtype == tf.float32
        assert set(names) <= {v.name for v in tf.trainable_variables()}
        with tf.variable_scope("emb", reuse=True):
            assert tf.get_variable("table", [10, 4],
                                   partitioner=tf.fixed_size_partitioner(3)) is table
        doubled = tf.matmul(tf.ones([1, 10]), table)            # converts to the whole table
        rows = tf.nn.embedding_lookup(table, [9, 0, 4], partition_strategy="div")
        whole, got = run([doubled, rows])
    np.testing.assert_allclose(whole, full.sum(0, keepdims=True))
    np.testing.assert_allclose(got, full[[9, 0, 4]])


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_embedding_lookup_matches_tf_and_trains_every_shard(strategy):
    vocab, dim, n = 11, 3, 3
    table = np.random.RandomState(0).rand(vocab, dim).astype(np.float32)
    if strategy == "mod":
        shards = [table[i::n] for i in range(n)]      # id i in shard i % n, row i // n
    else:
        sizes = [vocab // n + (1 if i < vocab % n else 0) for i in range(n)]
        bounds = np.cumsum([0] + sizes)
        shards = [table[bounds[i]:bounds[i + 1]] for i in range(n)]
    ids = np.array([[0, 10], [4, 7], [5, 5]])
    with tf.Graph().as_default():
        variables = [tf.Variable(s) for s in shards]
        rows = tf.nn.embedding_lookup(variables, ids, partition_strategy=strategy)
        loss = tf.reduce_sum(rows)
        grads = tf.gradients(loss, variables)
        got, g = run([rows, grads])
    np.testing.assert_allclose(got, table[ids])
    # Each id's row gets the gradient once per occurrence, in whichever shard holds it.
    counts = np.bincount(ids.reshape(-1), minlength=vocab).astype(np.float32)
    want = [c[:, None] * np.ones(dim) for c in
            ([counts[i::n] for i in range(n)] if strategy == "mod" else
             [counts[b0:b1] for b0, b1 in zip(np.cumsum([0] + [4, 4, 3])[:-1],
                                               np.cumsum([0] + [4, 4, 3])[1:])])]
    for got_g, want_g in zip(g, want):
        np.testing.assert_allclose(got_g, want_g)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="partition_strategy"):
            tf.nn.embedding_lookup([tf.zeros([2, 2]), tf.zeros([2, 2])], [0], "nope")
        with pytest.raises(ValueError, match="'div'"):
            tf.nn.embedding_lookup([tf.zeros([1, 2]), tf.zeros([3, 2])], [0], "div")


def test_embedding_lookup_max_norm():
    table = np.array([[3.0, 4.0], [0.3, 0.4]], np.float32)   # norms 5 and 0.5
    with tf.Graph().as_default():
        got = run(tf.nn.embedding_lookup(tf.constant(table), [0, 1], max_norm=1.0), init=False)
    np.testing.assert_allclose(got, [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


def test_custom_getters_wrap_get_variable_and_nest():
    calls = []

    def outer(getter, name, *args, **kwargs):
        calls.append(("outer", name))
        return getter(name, *args, **kwargs)

    def inner(getter, name, *args, **kwargs):
        calls.append(("inner", name))
        kwargs["trainable"] = False
        return getter(name, *args, **kwargs)
    with tf.Graph().as_default():
        with tf.variable_scope("a", custom_getter=outer):
            with tf.variable_scope("b", custom_getter=inner):
                v = tf.get_variable("v", [2])
        assert v.name == "a/b/v:0" and v not in tf.trainable_variables()
        assert calls == [("inner", "a/b/v"), ("outer", "a/b/v")]   # full names, as TF1's
        with pytest.raises(ValueError, match="callable"):
            with tf.variable_scope("c", custom_getter=3):
                pass


def test_partitioned_embedding_trains_on_a_ps_cluster(tmp_path):
    from cluster_util import free_port
    ports = [free_port() for _ in range(3)]
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:%d" % ports[0], "127.0.0.1:%d" % ports[1]],
                                 "worker": ["127.0.0.1:%d" % ports[2]]})
    servers = [tf.train.Server(spec, job_name="ps", task_index=i) for i in range(2)]
    worker = tf.train.Server(spec, job_name="worker", task_index=0)
    try:
        with tf.Graph().as_default():
            with tf.device(tf.train.replica_device_setter(cluster=spec)):
                with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(2)):
                    table = tf.get_variable("table", [6, 2],
                                            initializer=tf.zeros_initializer())
                rows = tf.nn.embedding_lookup(table, [1, 4, 4], partition_strategy="div")
                loss = tf.reduce_sum(tf.square(rows - 1.0))
                train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
            devices = sorted(v.device for v in table)
            assert devices == ["/job:ps/task:0", "/job:ps/task:1"], devices
            with tf.Session(worker.target) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(60):   # row 1 moves by 20% of its distance per step
                    sess.run(train)
                got = sess.run(table.as_tensor())
        np.testing.assert_allclose(got[[1, 4]], 1.0, atol=1e-3)
        np.testing.assert_allclose(got[[0, 2, 3, 5]], 0.0)
    finally:
        for s in servers + [worker]:
            s.stop()


def _partitioned_graph(parts, name="emb", shape=(10, 4), seed=1):
    """A graph with `name` split into `parts` (None: not partitioned) and a plain variable."""
    g = tf.Graph()
    with g.as_default():
        partitioner = tf.fixed_size_partitioner(parts) if parts else None
        with tf.variable_scope("model"):
            v = tf.get_variable(name, shape=list(shape), partitioner=partitioner,
                                initializer=tf.random_normal_initializer(seed=seed))
            w = tf.get_variable("w", shape=[3], initializer=tf.ones_initializer())
    return g, v, w


def _whole(sess, v):
    if isinstance(v, tf.PartitionedVariable):
        return np.concatenate(sess.run(list(v)), 0)
    return sess.run(v)


def _saved_in_two_parts(tmp_path):
    """A 2-part model/emb saved: (the parts, the whole value, the checkpoint path)."""
    g, v, _ = _partitioned_graph(2)
    with g.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return v, _whole(sess, v), tf.train.Saver().save(sess, str(tmp_path / "m"))


def test_a_partitioned_variable_is_saved_whole_and_restores_into_any_partitioning(tmp_path):
    # As TF1's: the checkpoint holds "model/emb" [10, 4], not its parts, so a job restarted with
    # another number of ps tasks (or none) restores it.
    v, want, path = _saved_in_two_parts(tmp_path)
    assert sorted(tf.train.list_variables(str(tmp_path))) == [("model/emb", [10, 4]),
                                                             ("model/w", [3])]
    np.testing.assert_array_equal(tf.train.load_variable(path, "model/emb"), want)
    assert [p._get_save_slice_info().spec for p in v] == ["10 4 0,5:0,4", "10 4 5,5:0,4"]
    for parts in (3, 1, None):
        g, v, _ = _partitioned_graph(parts, seed=7)
        with g.as_default(), tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            np.testing.assert_array_equal(_whole(sess, v), want)
    # A Saver of the PartitionedVariable itself, or a dict of its name to it or to its parts.
    g, v, w = _partitioned_graph(3, seed=7)
    with g.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver([v]).restore(sess, path)
        np.testing.assert_array_equal(_whole(sess, v), want)
        tf.train.Saver({"model/emb": list(v), "model/w": w}).save(sess, str(tmp_path / "d"))
        tf.train.Saver({"model/emb": v}).restore(sess, str(tmp_path / "d"))
        np.testing.assert_array_equal(_whole(sess, v), want)
        with pytest.raises(ValueError, match="do not make up its shape"):
            tf.train.Saver({"model/emb": list(v)[:2]})
        with pytest.raises(ValueError, match="holds the parts of one partitioned"):
            tf.train.Saver({"model/emb": [w]})


def test_a_partitioned_checkpoint_names_a_shape_that_differs(tmp_path):
    _, _, path = _saved_in_two_parts(tmp_path)
    g, v, _ = _partitioned_graph(2, shape=(12, 4))
    with g.as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"partitioned variable 'model/emb' has shape \[10, 4\]"):
            tf.train.Saver().restore(sess, path)


def test_partitioned_variables_warm_start_and_survive_meta_graphs(tmp_path):
    _, want, path = _saved_in_two_parts(tmp_path)
    # init_from_checkpoint: by the partitioned variable's name, by scope, by the object.
    for mapping in ({"model/emb": "model/emb"}, {"model/": "model/"}, "object"):
        g, v, _ = _partitioned_graph(3, seed=7)
        with g.as_default(), tf.Session() as sess:
            tf.train.init_from_checkpoint(str(tmp_path), {"model/emb": v} if mapping == "object"
                                          else mapping)
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(_whole(sess, v), want)
    # The meta graph keeps where each part lies: its Saver restores the whole.
    with tf.Graph().as_default(), tf.Session() as sess:
        saver = tf.train.import_meta_graph(path + ".meta")
        saver.restore(sess, path)
        parts = [x for x in tf.global_variables() if x.op.name.startswith("model/emb/")]
        assert [x._get_save_slice_info().spec for x in parts] == ["10 4 0,5:0,4", "10 4 5,5:0,4"]
        np.testing.assert_array_equal(np.concatenate(sess.run(parts), 0), want)


def test_checkpoints_of_parts_written_before_still_restore(tmp_path):
    # Checkpoints written before partitioned variables were saved whole hold one tensor per
    # part under its own name; the same partitioning reads them back.
    g, v, w = _partitioned_graph(2)
    with g.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = _whole(sess, v)
        named = {p.op.name: p for p in v}
        named["model/w"] = w
        for p in v:   # as a Saver of plain variables wrote them
            p._set_save_slice_info(None)
        tf.train.Saver(named).save(sess, str(tmp_path / "old"))
    assert "model/emb/part_0" in dict(tf.train.list_variables(str(tmp_path)))
    g, v, _ = _partitioned_graph(2, seed=7)
    with g.as_default(), tf.Session() as sess:
        tf.train.Saver().restore(sess, str(tmp_path / "old"))
        np.testing.assert_array_equal(_whole(sess, v), want)


@pytest.mark.parametrize("make", [lambda: tf.train.AdagradOptimizer(0.1),
                                  lambda: tf.train.AdamOptimizer(0.1),
                                  lambda: tf.train.MomentumOptimizer(0.1, 0.9)])
def test_slots_of_partitioned_variables_restore_into_another_partitioning(tmp_path, make):
    # Regression: a part's slots were saved per part ("m/emb/part_0/Adagrad"), so a job
    # restarted with another number of ps tasks failed to restore its optimizer state. As
    # TF1's, they are parts too and saved whole ("m/emb/Adagrad").
    def model(parts):
        with tf.variable_scope("m"):
            emb = tf.get_variable("emb", [10, 4], partitioner=tf.fixed_size_partitioner(parts),
                                  initializer=tf.random_uniform_initializer(seed=1))
        loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, [1, 5, 9]) ** 2)
        opt = make()
        return emb, opt, opt.minimize(loss)

    path = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        emb, opt, train = model(3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            slot = opt.get_slot_names()[0]
            want = np.concatenate(sess.run([opt.get_slot(p, slot) for p in emb]), 0)
            weights = np.concatenate(sess.run(list(emb)), 0)
            tf.train.Saver().save(sess, path)
    names = [n for n, _ in tf.train.list_variables(path)]
    assert not any("part_" in n for n in names), names
    with tf.Graph().as_default():
        emb, opt, _ = model(2)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            got = np.concatenate(sess.run([opt.get_slot(p, slot) for p in emb]), 0)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.concatenate(sess.run(list(emb)), 0), weights)
