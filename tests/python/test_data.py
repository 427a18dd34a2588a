"""tf.data in graph mode (shardflow/data): datasets, their transformations and iterators fed by
Session.run, checked element by element against what TF1 gives; a training loop driven by a
one-shot iterator; and the errors bad input gets."""

import threading

import numpy as np
import pytest

import shardflow as tf

Dataset = tf.data.Dataset


@pytest.fixture(autouse=True)
def fresh_graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def drain(sess, tensors, limit=10000):
    """Every element until OutOfRangeError (and that it came)."""
    out = []
    for _ in range(limit):
        try:
            out.append(sess.run(tensors))
        except tf.errors.OutOfRangeError:
            return out
    raise AssertionError("no OutOfRangeError after %d elements" % limit)


def values(dataset):
    with tf.Session() as sess:
        return drain(sess, dataset.make_one_shot_iterator().get_next())


def ints(dataset):
    return [int(v) for v in values(dataset)]


# ---- sources and element structure --------------------------------------------------------


def test_from_tensor_slices_tuple_batches_in_order_and_keeps_the_last_partial_batch():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10, dtype=np.int32) * 10
    ds = Dataset.from_tensor_slices((x, y))
    assert ds.output_types == (tf.float32, tf.int32)
    assert ds.output_shapes == ([2], [])
    batched = ds.batch(4)
    assert batched.output_shapes == ([None, 2], [None])
    images, labels = batched.make_one_shot_iterator().get_next()
    assert images.name.startswith("IteratorGetNext") and images.shape == [None, 2]
    with tf.Session() as sess:
        out = drain(sess, [images, labels])
        with pytest.raises(tf.errors.OutOfRangeError):  # it stays exhausted
            sess.run(images)
    assert [len(b[1]) for b in out] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in out]), x)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in out]), y)


def test_drop_remainder_drops_the_partial_batch_and_gives_a_static_batch_dimension():
    ds = Dataset.range(10).batch(4, drop_remainder=True)
    assert ds.output_shapes == [4] and ds.output_types == tf.int64
    out = values(ds)
    assert [list(b) for b in out] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert out[0].dtype == np.int64


def test_dict_and_single_component_elements():
    ds = Dataset.from_tensor_slices({"x": np.array([[1, 2], [3, 4]], np.float32),
                                     "id": np.array([7, 8])})
    assert ds.output_types == {"x": tf.float32, "id": tf.int64}
    element = ds.make_one_shot_iterator().get_next()
    assert sorted(element) == ["id", "x"]
    with tf.Session() as sess:
        first = sess.run(element)
    np.testing.assert_array_equal(first["x"], [1, 2])
    assert first["id"] == 7
    assert ints(Dataset.from_tensor_slices([5, 6, 7])) == [5, 6, 7]  # a list is one component
    assert Dataset.from_tensor_slices([5, 6, 7]).output_types == tf.int32


def test_range_take_skip_repeat_and_from_tensors():
    assert ints(Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert ints(Dataset.range(2, 11, 3)) == [2, 5, 8]
    assert ints(Dataset.range(10).skip(3).take(4)) == [3, 4, 5, 6]
    assert ints(Dataset.range(3).repeat(3)) == [0, 1, 2] * 3
    assert ints(Dataset.range(3).take(-1)) == [0, 1, 2]
    assert ints(Dataset.range(3).skip(-1)) == []
    assert ints(Dataset.range(0).repeat()) == []  # an empty dataset repeated ends
    assert ints(Dataset.range(10).shard(3, 1)) == [1, 4, 7]
    forever = Dataset.range(2).repeat().make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [int(sess.run(forever)) for _ in range(7)] == [0, 1, 0, 1, 0, 1, 0]
    one = values(Dataset.from_tensors((np.arange(3), 2.5)))
    assert len(one) == 1 and list(one[0][0]) == [0, 1, 2] and one[0][1] == 2.5


def test_zip_concatenate_prefetch_and_cache():
    a, b = Dataset.range(4), Dataset.range(10, 13)
    zipped = values(Dataset.zip((a, b)))
    assert [(int(x), int(y)) for x, y in zipped] == [(0, 10), (1, 11), (2, 12)]
    named = Dataset.zip({"a": a, "b": b.map(lambda v: v * 2)})
    assert named.output_types == {"a": tf.int64, "b": tf.int64}
    assert [int(e["b"]) for e in values(named)] == [20, 22, 24]
    assert ints(a.concatenate(b).prefetch(2)) == [0, 1, 2, 3, 10, 11, 12]
    # cache: later passes replay the first, so a shuffle before it is not redone
    cached = Dataset.range(8).shuffle(8).cache().repeat(3)
    out = ints(cached)
    assert out[:8] == out[8:16] == out[16:] and sorted(out[:8]) == list(range(8))


def test_from_generator_calls_the_generator_on_each_pass_with_its_args():
    def gen(n):
        for i in range(n):
            yield i, [float(i)] * i

    ds = Dataset.from_generator(gen, (tf.int32, tf.float32), ([], [None]), args=(3,))
    assert ds.output_shapes == ([], [None])
    out = values(ds.repeat(2))
    assert [int(i) for i, _ in out] == [0, 1, 2, 0, 1, 2]
    assert out[2][1].tolist() == [2.0, 2.0] and out[2][1].dtype == np.float32


def test_text_line_dataset_reads_lines_as_bytes(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("first\nsecond\n")
    b.write_text("third\r\n")
    out = values(tf.data.TextLineDataset([str(a), str(b)]))
    assert out == [b"first", b"second", b"third"]


# ---- shuffle ------------------------------------------------------------------------------


def shuffled(buffer_size, seed, epochs=1, reshuffle=True, graph_seed=None):
    g = tf.Graph()
    with g.as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        ds = Dataset.range(50).shuffle(buffer_size, seed=seed,
                                       reshuffle_each_iteration=reshuffle).repeat(epochs)
        out = ints(ds)
    return [out[i:i + 50] for i in range(0, len(out), 50)]


def test_shuffle_is_a_permutation_reproducible_with_a_seed():
    (a,), (b,) = shuffled(100, seed=7), shuffled(100, seed=7)
    assert sorted(a) == list(range(50)) and a != list(range(50))
    assert a == b
    assert shuffled(100, seed=8)[0] != a
    assert shuffled(100, None, graph_seed=3) == shuffled(100, None, graph_seed=3)
    assert shuffled(100, None)[0] != shuffled(100, None)[0]  # unseeded: a new order each run


def test_shuffle_reshuffles_each_epoch_unless_told_not_to():
    epochs = shuffled(100, seed=1, epochs=3)
    assert all(sorted(e) == list(range(50)) for e in epochs)
    assert epochs[0] != epochs[1] != epochs[2]
    same = shuffled(100, seed=1, epochs=3, reshuffle=False)
    assert same[0] == same[1] == same[2]


def test_a_small_shuffle_buffer_only_moves_elements_locally():
    assert shuffled(1, seed=1)[0] == list(range(50))  # a buffer of one keeps the order
    (out,) = shuffled(5, seed=1)
    # an element leaves the buffer only after the ones 5 places before it came in
    assert all(v <= i + 4 for i, v in enumerate(out)) and out != list(range(50))


# ---- map and filter -----------------------------------------------------------------------


def test_map_runs_a_function_of_shardflow_ops_per_batch_or_per_element_alike():
    images = np.arange(24, dtype=np.uint8).reshape(6, 4)
    labels = np.arange(6, dtype=np.int32)
    scale = lambda x, y: (tf.cast(x, tf.float32) / 255.0, y)  # noqa: E731
    ds = Dataset.from_tensor_slices((images, labels)).map(scale)
    assert ds.output_types == (tf.float32, tf.int32) and ds.output_shapes == ([4], [])
    per_element = values(ds)  # no batch: the function runs on each element
    np.testing.assert_allclose(per_element[5][0], images[5] / 255.0, rtol=1e-6)
    batched = ds.batch(4)     # element-wise: one run per batch (Note [Vectorised map])
    assert batched._input.fn.batched() is not None
    out = values(batched)
    np.testing.assert_allclose(np.concatenate([b[0] for b in out]), images / 255.0, rtol=1e-6)
    assert out[0][0].dtype == np.float32 and list(out[1][1]) == [4, 5]


def test_map_with_a_function_that_is_not_element_wise_runs_it_per_element():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    offset = tf.constant(100.0)  # a tensor of the outer graph: captured
    ds = Dataset.from_tensor_slices(x).map(
        lambda v: {"total": tf.reduce_sum(v) + offset, "twice": tf.concat([v, v], 0)})
    assert ds.output_shapes == {"total": [], "twice": [6]}
    batched = ds.batch(3)
    assert batched._input.fn.batched() is None
    out = values(batched)
    np.testing.assert_allclose(out[0]["total"], x[:3].sum(axis=1) + 100)
    np.testing.assert_array_equal(out[1]["twice"], [np.concatenate([x[3], x[3]])])


def test_filter_keeps_the_elements_its_predicate_accepts():
    ds = Dataset.range(10).filter(lambda v: tf.equal(v % 3, 0))
    assert ints(ds) == [0, 3, 6, 9]
    with pytest.raises(TypeError, match="scalar bool"):
        Dataset.range(10).filter(lambda v: v * 2)


def test_padded_batch_and_unbatch():
    def gen():
        for n in (1, 3, 2):
            yield np.arange(1, n + 1)

    ds = Dataset.from_generator(gen, tf.int64, [None]).padded_batch(
        2, padded_shapes=[None], padding_values=np.int64(-1))
    out = values(ds)
    assert out[0].tolist() == [[1, -1, -1], [1, 2, 3]] and out[1].tolist() == [[1, 2]]
    rows = values(ds.apply(tf.data.experimental.unbatch()))
    assert [r.tolist() for r in rows] == [[1, -1, -1], [1, 2, 3], [1, 2]]
    # TF1 wants padding_values as tensors: tf.constant values are read when the graph is built.
    pairs = Dataset.from_generator(lambda: ((np.arange(n), n) for n in (1, 2)),
                                   (tf.int64, tf.int32), ([None], []))
    out = values(pairs.padded_batch(2, padded_shapes=([None], []),
                                    padding_values=(tf.constant(-1, tf.int64), 0)))
    assert out[0][0].tolist() == [[0, -1], [0, 1]] and out[0][1].tolist() == [1, 2]
    with pytest.raises(ValueError, match="known when the graph is built"):
        pairs.padded_batch(2, ([None], []), (tf.placeholder(tf.int64, []), 0))


# ---- iterators and Session.run ------------------------------------------------------------


def test_one_element_per_run_only_when_the_step_needs_it():
    ds = Dataset.from_tensor_slices((np.arange(5), np.arange(5) * 10))
    it = ds.make_one_shot_iterator()
    a, b = it.get_next()
    total = a + b
    unrelated = tf.constant(1.0) * 2
    with tf.control_dependencies([total]):
        after = tf.no_op()
    with tf.Session() as sess:
        assert sess.run([a, b, total]) == [0, 0, 0]       # one element for all three
        assert sess.run(unrelated) == 2.0                   # takes none
        assert sess.run(total) == 11
        sess.run(after)                                     # a control dependency needs it
        assert sess.run(a, {a: np.int64(42)}) == 42         # fed by the caller: takes none
        assert sess.run(b) == 30
        assert sess.run(total, {a: np.int64(100)}) == 140   # b still comes from the iterator
        c, _ = it.get_next()                                # shares the position: at the end
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(c)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(total)
    with tf.Session() as sess:                              # each session reads from the start
        assert sess.run(a) == 0


def test_two_get_next_calls_take_an_element_each():
    it = Dataset.range(6).make_one_shot_iterator()
    first, second = it.get_next(), it.get_next()
    with tf.Session() as sess:
        assert [int(v) for v in sess.run([first, second])] == [0, 1]
        assert int(sess.run(second)) == 2


def test_initializable_iterator_is_fed_at_initialization_and_can_restart():
    data = tf.placeholder(tf.float32, [None, 2], name="data")
    it = Dataset.from_tensor_slices(data).batch(2).make_initializable_iterator()
    batch = it.get_next()
    assert batch.shape == [None, 2]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="it.initializer|initializer"):
            sess.run(batch)
        sess.run(it.initializer, {data: np.ones((3, 2))})
        out = drain(sess, batch)
        assert [b.shape for b in out] == [(2, 2), (1, 2)] and out[0].sum() == 4
        sess.run(it.initializer, {data: np.full((4, 2), 5.0, np.float32)})
        out = drain(sess, batch)
        assert [b.shape for b in out] == [(2, 2), (2, 2)] and out[1].sum() == 20
        with pytest.raises(tf.errors.OutOfRangeError, match="initializer"):
            sess.run(batch)


def test_a_map_function_reads_a_placeholder_fed_with_the_initializer():
    scale = tf.placeholder(tf.float32, [])
    ds = Dataset.from_tensor_slices(np.array([1.0, 2.0], np.float32)).map(lambda v: v * scale)
    it = ds.make_initializable_iterator()
    v = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {scale: 10.0})
        assert [float(x) for x in drain(sess, v)] == [10.0, 20.0]
        sess.run(it.initializer, {scale: -1.0})
        assert [float(x) for x in drain(sess, v)] == [-1.0, -2.0]


def test_steps_on_several_threads_each_take_their_own_elements():
    x = Dataset.range(400).make_one_shot_iterator().get_next()
    y = x * 1
    seen = []
    with tf.Session() as sess:
        def worker():
            seen.extend(int(sess.run(y)) for _ in range(100))
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(seen) == list(range(400))


def test_batch_size_and_count_may_be_placeholders_fed_at_initialization():
    size = tf.placeholder(tf.int64, [])
    it = Dataset.range(7).batch(size).make_initializable_iterator()
    batch = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {size: 3})
        assert [len(b) for b in drain(sess, batch)] == [3, 3, 1]
        sess.run(it.initializer, {size: 5})
        assert [len(b) for b in drain(sess, batch)] == [5, 2]


def test_reinitializable_iterator_switches_between_datasets():
    train = Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(4)
    test = Dataset.from_tensor_slices(np.arange(100, 103, dtype=np.float32)).batch(2)
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    x = it.get_next()
    doubled = x * 2
    train_init, test_init = it.make_initializer(train), it.make_initializer(test)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(doubled)
        sess.run(train_init)
        assert [b.tolist() for b in drain(sess, doubled)] == [[0, 2, 4, 6], [8, 10]]
        sess.run(test_init)
        assert sess.run(doubled).tolist() == [200, 202]
        sess.run(train_init)  # restarts in the middle of the test set
        assert sess.run(x).tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="make_initializer"):
        it.initializer  # noqa: B018
    with pytest.raises(TypeError, match="output types"):
        it.make_initializer(Dataset.range(3))
    with pytest.raises(TypeError, match="output shapes"):
        it.make_initializer(Dataset.from_tensor_slices(np.zeros((3, 2), np.float32)).batch(2))


def test_feedable_iterator_reads_the_iterator_whose_handle_is_fed():
    handle = tf.placeholder(tf.string, [])
    train = Dataset.range(100).repeat().make_one_shot_iterator()
    valid = Dataset.range(1000, 1003).make_initializable_iterator()
    it = tf.data.Iterator.from_string_handle(handle, train.output_types, train.output_shapes)
    v = it.get_next()
    with tf.Session() as sess:
        th, vh = sess.run([train.string_handle(), valid.string_handle()])
        sess.run(valid.initializer)
        assert [int(sess.run(v, {handle: th})) for _ in range(3)] == [0, 1, 2]
        assert int(sess.run(v, {handle: vh})) == 1000
        assert int(sess.run(v, {handle: th})) == 3
        with pytest.raises(tf.errors.InvalidArgumentError, match="string handle"):
            sess.run(v, {handle: b"nope"})


def test_compat_spellings_and_output_properties():
    ds = Dataset.range(3)
    it = tf.data.make_one_shot_iterator(ds)
    assert tf.data.get_output_types(it) == tf.int64 and tf.data.get_output_shapes(ds) == []
    assert tf.data.get_output_classes(ds) is tf.Tensor
    with tf.Session() as sess:
        assert [int(v) for v in drain(sess, it.get_next())] == [0, 1, 2]
    ds2 = Dataset.range(10).apply(tf.data.experimental.shuffle_and_repeat(10, 2, seed=1))
    assert sorted(ints(ds2)) == sorted(list(range(10)) * 2)
    ds3 = Dataset.range(5).apply(tf.data.experimental.map_and_batch(lambda v: v + 1, 2))
    assert [b.tolist() for b in values(ds3.prefetch(tf.data.experimental.AUTOTUNE))] == \
        [[1, 2], [3, 4], [5]]


def test_monitored_training_session_ends_quietly_when_the_input_ends():
    v = tf.Variable(0, dtype=tf.int64)
    step = v.assign_add(Dataset.range(5).make_one_shot_iterator().get_next())
    runs = 0
    with tf.train.MonitoredTrainingSession() as sess:
        while not sess.should_stop():
            last = sess.run(step)
            runs += 1
    assert runs == 5 and last == 10


# ---- a training loop ----------------------------------------------------------------------


def test_logistic_regression_trained_from_a_one_shot_iterator():
    rng = np.random.RandomState(0)
    x = rng.randn(512, 2).astype(np.float32)
    y = (x[:, 0] + 2 * x[:, 1] > 0).astype(np.float32)  # linearly separable
    ds = Dataset.from_tensor_slices((x, y)).shuffle(512, seed=1).repeat(20).batch(32)
    features, labels = ds.make_one_shot_iterator().get_next()
    w = tf.Variable(np.zeros((2, 1), np.float32))
    b = tf.Variable(np.zeros((1,), np.float32))
    logits = tf.reshape(tf.matmul(features, w) + b, [-1])
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    train_op = tf.train.GradientDescentOptimizer(2.0).minimize(loss)
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        while True:
            try:
                losses.append(sess.run([loss, train_op])[0])
            except tf.errors.OutOfRangeError:
                break
        w_, b_ = sess.run([w, b])
    assert len(losses) == 20 * 512 // 32  # every element seen, one batch per step
    assert abs(losses[0] - np.log(2)) < 1e-5  # w = 0: every probability is 1/2
    assert np.mean(losses[-10:]) < 0.1 and np.mean(losses[:10]) > 3 * np.mean(losses[-10:])
    accuracy = np.mean(((x @ w_)[:, 0] + b_[0] > 0) == (y > 0))
    assert accuracy > 0.97


# ---- bad input ----------------------------------------------------------------------------


def test_mismatched_first_dimensions_name_the_shapes():
    with pytest.raises(ValueError, match=r"\[3,2\], \[4\]"):
        Dataset.from_tensor_slices((np.zeros((3, 2)), np.zeros(4)))
    with pytest.raises(ValueError, match="first dimension"):
        Dataset.from_tensor_slices(np.float32(1.0))
    a = tf.placeholder(tf.float32, [None])
    b = tf.placeholder(tf.float32, [None])
    it = Dataset.from_tensor_slices((a, b)).make_initializable_iterator()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[2\], \[3\]"):
            sess.run(it.initializer, {a: [1, 2], b: [1, 2, 3]})


def test_bad_elements_and_iterators_get_clear_errors():
    ragged = Dataset.from_generator(lambda: iter([[1, 2], [1, 2, 3]]), tf.int32, [None])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="different shapes in component 0"):
            sess.run(ragged.batch(2).make_one_shot_iterator().get_next())
        wrong = Dataset.from_generator(lambda: iter([[1, 2, 3]]), tf.int32, [2])
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \[3\] where .* \[2\]"):
            sess.run(wrong.make_one_shot_iterator().get_next())
        fed = tf.placeholder(tf.float32, [None])
        one_shot = Dataset.from_tensor_slices(fed).make_one_shot_iterator().get_next()
        with pytest.raises(tf.errors.InvalidArgumentError, match="make_initializable_iterator"):
            sess.run(one_shot)
    with pytest.raises(RuntimeError, match="make_one_shot_iterator"):
        iter(Dataset.range(3))
    with pytest.raises(TypeError, match="returned None"):
        Dataset.range(3).map(lambda v: None)
    with pytest.raises(ValueError, match="batch_size must be positive"):
        Dataset.range(3).batch(0)
    with pytest.raises(ValueError, match="one-shot"):
        Dataset.range(3).make_one_shot_iterator().initializer  # noqa: B018


def test_a_graph_without_iterators_keeps_the_plain_run_path(fresh_graph):
    x = tf.placeholder(tf.float32, [2])
    with tf.Session() as sess:
        assert sess.run(x * 2, {x: [1, 2]}).tolist() == [2, 4]
    assert "_data_iterators" not in fresh_graph.__dict__


def test_text_line_dataset_takes_a_single_filename(tmp_path):
    # Regression: one filename (not a list) crashed in structure.to_array ('bytes' has no astype).
    path = tmp_path / "one.txt"
    path.write_text("a\nb\n")
    with tf.Graph().as_default():
        it = tf.data.TextLineDataset(str(path)).make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            assert [sess.run(it), sess.run(it)] == [b"a", b"b"]


def test_text_lines_compressed_and_read_in_parallel(tmp_path):
    # TextLineDataset(compression_type="GZIP"/"ZLIB") was NotImplementedError;
    # num_parallel_reads a TypeError.
    import gzip
    import zlib
    lines = [b"line %d" % i for i in range(5)]
    plain = tmp_path / "a.txt"
    plain.write_bytes(b"\n".join(lines) + b"\n")
    with gzip.open(str(tmp_path / "b.txt.gz"), "wb") as f:
        f.write(b"\r\n".join(b"gz " + x for x in lines))
    (tmp_path / "c.z").write_bytes(zlib.compress(b"\n".join(b"z " + x for x in lines)))
    (tmp_path / "bad.gz").write_bytes(b"not gzip at all")

    def read(*args, **kwargs):
        with tf.Graph().as_default():
            nxt = tf.data.TextLineDataset(*args, **kwargs).make_one_shot_iterator().get_next()
            out = []
            with tf.Session() as s:
                try:
                    while True:
                        out.append(s.run(nxt).decode())
                except tf.errors.OutOfRangeError:
                    return out
    assert read(str(plain)) == [x.decode() for x in lines]
    assert read(str(tmp_path / "b.txt.gz"), compression_type="GZIP")[4] == "gz line 4"
    assert read(str(tmp_path / "c.z"), compression_type="ZLIB") == \
        ["z " + x.decode() for x in lines]
    mixed = read([str(plain), str(plain)], num_parallel_reads=2)
    assert mixed[:4] == ["line 0", "line 0", "line 1", "line 1"] and len(mixed) == 10
    with pytest.raises(tf.errors.DataLossError, match="bad.gz: cannot decompress it as GZIP"):
        read(str(tmp_path / "bad.gz"), compression_type="GZIP")


def test_generator_errors_are_op_errors_and_unbatch_is_a_method():
    # Regression: a generator that raised, or yielded a value of the wrong type, let a bare
    # ValueError/TypeError escape sess.run (TF1's is InvalidArgumentError, an OpError, through
    # its py_func); Dataset.unbatch() was only tf.data.experimental.unbatch().
    def raises():
        yield 1
        raise ValueError("gen failed")

    def bad():
        yield "abc"
    for gen, text in ((raises, "gen failed"), (bad, "could not be converted")):
        it = Dataset.from_generator(gen, tf.int32, []).make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            if gen is raises:
                assert sess.run(it) == 1
            with pytest.raises(tf.errors.InvalidArgumentError, match=text):
                sess.run(it)
    rows = Dataset.from_tensor_slices(np.arange(6).reshape(3, 2)).unbatch()
    it = rows.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [int(sess.run(it)) for _ in range(6)] == list(range(6))


def test_readers_take_a_dataset_of_filenames(tmp_path):
    # Regression: TFRecordDataset/TextLineDataset of a Dataset of filenames (TF 1.15's
    # Dataset.list_files(...) pipelines) raised TypeError / "needs eager execution".
    names = []
    for i in range(2):
        path = tmp_path / ("part%d.txt" % i)
        path.write_text("a%d\nb%d\n" % (i, i))
        names.append(str(path))
        with tf.python_io.TFRecordWriter(str(tmp_path / ("part%d.rec" % i))) as w:
            w.write(b"r%d0" % i)
            w.write(b"r%d1" % i)
    files = Dataset.from_tensor_slices(names)
    recs = Dataset.list_files(str(tmp_path / "*.rec"), shuffle=False)

    def read_all(ds):
        it = ds.make_one_shot_iterator().get_next()
        out = []
        with tf.Session() as sess:
            while True:
                try:
                    out.append(sess.run(it))
                except tf.errors.OutOfRangeError:
                    return out
    assert read_all(tf.data.TextLineDataset(files)) == [b"a0", b"b0", b"a1", b"b1"]
    assert read_all(tf.data.TextLineDataset(files, num_parallel_reads=2)) == \
        [b"a0", b"a1", b"b0", b"b1"]
    assert read_all(tf.data.TFRecordDataset(recs)) == [b"r00", b"r01", b"r10", b"r11"]
