"""TF1's queue-fed input pipelines (shardflow/queue_ops.py, coordinator.QueueRunner): queues,
readers, input producers, batch/shuffle_batch, run by QueueRunner threads until the epochs end."""
import threading
import time

import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_fifo_queue_semantics():
    q = tf.FIFOQueue(3, [tf.float32, tf.int32], shapes=[[2], []])
    x = tf.placeholder(tf.float32, [None, 2])
    n = tf.placeholder(tf.int32, [None])
    enq_many = q.enqueue_many([x, n])
    enq = q.enqueue([[9.0, 9.0], 9])
    a, b = q.dequeue()
    many = q.dequeue_many(2)
    up_to = q.dequeue_up_to(5)
    with tf.Session() as sess:
        sess.run(enq_many, {x: [[1, 1], [2, 2]], n: [1, 2]})
        sess.run(enq)
        assert sess.run(q.size()) == 3
        av, bv = sess.run([a, b])
        np.testing.assert_array_equal(av, [1, 1])
        assert bv == 1 and a.shape.as_list() == [2]
        assert many[0].shape.as_list() == [2, 2]
        got = sess.run(many)
        np.testing.assert_array_equal(got[1], [2, 9])
        # A full queue blocks the enqueue until a dequeue makes room.
        sess.run(enq_many, {x: [[3, 3], [4, 4], [5, 5]], n: [3, 4, 5]})
        t = threading.Thread(target=sess.run, args=(enq,))
        t.start()
        t.join(0.3)
        assert t.is_alive()
        sess.run(a)
        t.join(5)
        assert not t.is_alive()
        sess.run(q.close())
        np.testing.assert_array_equal(sess.run(up_to)[1], [4, 5, 9])
        with pytest.raises(tf.errors.OutOfRangeError, match="closed and has insufficient"):
            sess.run(a)
        with pytest.raises(tf.errors.CancelledError, match="closed"):
            sess.run(enq)
        with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
            sess.run(tf.FIFOQueue(2, [tf.float32], shapes=[[2]]).enqueue([[1.0, 2.0, 3.0]]))


def test_random_shuffle_and_padding_queues():
    q = tf.RandomShuffleQueue(100, 10, [tf.int32], shapes=[[]], seed=3)
    enq = q.enqueue_many([np.arange(50, dtype=np.int32)])
    out = q.dequeue_many(40)
    p = tf.PaddingFIFOQueue(5, [tf.int32], shapes=[[None]])
    v = tf.placeholder(tf.int32, [None])
    with tf.Session() as sess:
        sess.run(enq)
        got = sess.run(out)
        assert sorted(got) != list(got) and len(set(got)) == 40   # shuffled, no repeats
        assert sess.run(q.size()) == 10
        sess.run(p.enqueue([v]), {v: [1, 2, 3]})
        sess.run(p.enqueue([v]), {v: [4]})
        np.testing.assert_array_equal(sess.run(p.dequeue_many(2)), [[1, 2, 3], [4, 0, 0]])
    with pytest.raises(ValueError, match="min_after_dequeue"):
        tf.RandomShuffleQueue(10, 10, [tf.int32])


def test_text_line_reader_pipeline_with_epochs(tmp_path):
    files = []
    for k in range(2):
        path = tmp_path / ("part%d.csv" % k)
        path.write_text("".join("%d,%d\n" % (10 * k + i, k) for i in range(5)))
        files.append(str(path))
    queue = tf.train.string_input_producer(files, num_epochs=2, shuffle=False)
    key, line = tf.TextLineReader().read(queue)
    batch = tf.train.batch([key, line], batch_size=4, allow_smaller_final_batch=True)
    lines = []
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            while not coord.should_stop():
                lines.extend(sess.run(batch)[1])
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads)
    assert len(lines) == 20                       # 2 files x 5 lines x 2 epochs
    assert sorted(lines) == sorted([("%d,%d" % (10 * k + i, k)).encode()
                                    for _ in range(2) for k in range(2) for i in range(5)])


def test_slice_input_producer_shuffle_batch_trains():
    rng = np.random.RandomState(0)
    xs = rng.randn(200, 2).astype(np.float32)
    ys = (xs[:, 0] + xs[:, 1] > 0).astype(np.int32)
    x, y = tf.train.slice_input_producer([xs, ys], shuffle=True, seed=1)
    bx, by = tf.train.shuffle_batch([x, y], batch_size=20, capacity=100, min_after_dequeue=40,
                                    num_threads=2, seed=2)
    assert bx.shape.as_list() == [20, 2]
    # A layer that starts wrong (class 0 where the label is 1): with a random one the first
    # loss was sometimes 0.26 already, and the halving below failed in a full run.
    logits = tf.layers.dense(bx, 2, kernel_initializer=tf.constant_initializer([[1.0, -1.0],
                                                                                 [1.0, -1.0]]))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=by,
                                                                         logits=logits))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        first = np.mean([sess.run(loss) for _ in range(5)])
        for _ in range(60):
            sess.run(train)
        last = np.mean([sess.run(loss) for _ in range(5)])
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    assert last < 0.5 * first


def test_fixed_length_and_whole_file_readers(tmp_path):
    data = tmp_path / "recs.bin"
    data.write_bytes(b"HD" + bytes(range(12)) + b"F")
    whole = tmp_path / "whole.txt"
    whole.write_bytes(b"all of it")
    _, rec = tf.FixedLengthRecordReader(4, header_bytes=2, footer_bytes=1).read(
        tf.train.string_input_producer([str(data)], num_epochs=1))
    key, contents = tf.WholeFileReader().read(
        tf.train.string_input_producer([str(whole)], num_epochs=1))
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        assert [sess.run(rec) for _ in range(3)] == [bytes(range(0, 4)), bytes(range(4, 8)),
                                                    bytes(range(8, 12))]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(rec)
        assert sess.run(contents) == b"all of it"
        coord.request_stop()
        coord.join(threads)


def test_monitored_training_session_starts_and_stops_queue_runners(tmp_path):
    xs = np.arange(40, dtype=np.float32).reshape(40, 1)
    (x,) = tf.train.slice_input_producer([xs], num_epochs=1, shuffle=False)
    # One tensor in a list gives one tensor, as TF1's (its queue's dequeue of one component
    # is a Tensor; it was a one-element list here).
    bx = tf.train.batch([x], batch_size=8)
    assert bx.shape.as_list() == [8, 1]
    tf.train.get_or_create_global_step()
    total = tf.Variable(0.0, collections=[tf.GraphKeys.LOCAL_VARIABLES])
    add = tf.assign_add(total, tf.reduce_sum(bx))
    seen = []
    # No start_queue_runners call: as in TF1, the monitored session starts them, and the end of
    # the input (OutOfRangeError) ends the loop quietly.
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
        while not sess.should_stop():
            seen.append(sess.run(add))
    assert seen[-1] == xs.sum() and len(seen) == 5


def test_fixed_length_reader_rejects_a_file_of_the_wrong_size(tmp_path):
    bad = tmp_path / "short.bin"
    bad.write_bytes(b"HD" + bytes(range(7)))          # 7 bytes: not whole 4-byte records
    _, rec = tf.FixedLengthRecordReader(4, header_bytes=2).read(
        tf.train.string_input_producer([str(bad)], num_epochs=1))
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        with pytest.raises(tf.errors.DataLossError, match="not header 2"):
            sess.run(rec)
        coord.request_stop()
        coord.join(threads)


def test_a_dequeue_whose_step_timed_out_takes_nothing_later():
    # Regression: the timed-out step's dequeue went on waiting in Python and took the next
    # element enqueued, so the following dequeue waited forever.
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(1, tf.float32)
        dequeue, enqueue, size = q.dequeue(), q.enqueue(7.0), q.size()
    with tf.Session(graph=g) as sess:
        for _ in range(2):
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=100))
        time.sleep(0.3)  # the abandoned dequeues notice within 0.1 s
        sess.run(enqueue)
        assert sess.run(size) == 1
        assert sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=5000)) == 7.0
        # Likewise an enqueue that waited for room in a step that timed out adds nothing.
        sess.run(enqueue)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(enqueue, options=tf.RunOptions(timeout_in_ms=100))
        time.sleep(0.3)
        assert sess.run(dequeue) == 7.0
        assert sess.run(size) == 0


def test_batch_of_a_var_len_feature_is_a_sparse_tensor():
    """The VarLenFeature + tf.train.batch pattern (Note [Batching SparseTensors]): it was a
    TypeError when the graph was built."""
    def example(values):
        return tf.train.Example(features=tf.train.Features(feature={
            "v": tf.train.Feature(int64_list=tf.train.Int64List(value=values)),
            "y": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0]))
        })).SerializeToString()

    records = tf.constant([example([1, 2, 3]), example([4]), example([]), example([5, 6])])
    record, = tf.train.slice_input_producer([records], shuffle=False)
    parsed = tf.parse_single_example(record, {"v": tf.VarLenFeature(tf.int64),
                                              "y": tf.FixedLenFeature([], tf.float32)})
    batch = tf.train.batch(parsed, batch_size=2)
    assert isinstance(batch["v"], tf.SparseTensor) and batch["y"].shape.as_list() == [2]
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        first = sess.run(batch["v"])
        second = sess.run(batch["v"])
        coord.request_stop()
        coord.join(threads)
    assert first.indices.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0]]
    assert first.values.tolist() == [1, 2, 3, 4] and first.dense_shape.tolist() == [2, 3]
    assert second.indices.tolist() == [[1, 0], [1, 1]] and second.values.tolist() == [5, 6]
    assert second.dense_shape.tolist() == [2, 2]


def test_closing_the_session_cancels_runners_blocked_on_a_full_queue():
    # Regression: Session.close() waited forever for the runners' enqueue steps, blocked on
    # full queues (the tutorial's `with tf.Session() as sess: start_queue_runners(sess)` hung
    # leaving the block). As TF1's, close cancels the running steps.
    with tf.Graph().as_default():
        q = tf.train.string_input_producer(["a", "b", "c"])
        batch = tf.train.batch([q.dequeue()], batch_size=2)
        sess = tf.Session()
        threads = tf.train.start_queue_runners(sess)
        assert len(sess.run(batch)) == 2
        time.sleep(0.5)  # the queues fill; the runners wait in their enqueues
        closer = threading.Thread(target=sess.close, daemon=True)
        start = time.time()
        closer.start()
        closer.join(30)
        assert not closer.is_alive(), "Session.close() did not return"
        assert time.time() - start < 10
        for t in threads:
            t.join(10)
            assert not t.is_alive()


def test_reader_keys_are_tensorflows(tmp_path):
    # Regression: every reader keyed its records "<file>:<record number>"; TF1's TFRecordReader
    # keys by byte offset, TextLineReader by line number from 1 (header lines counted) and
    # WholeFileReader by the file name.
    records = str(tmp_path / "r.tfrecord")
    with tf.python_io.TFRecordWriter(records) as w:
        for payload in (b"ab", b"cdef", b""):
            w.write(payload)
    text = tmp_path / "t.csv"
    text.write_text("header\na\nb\n")
    with tf.Graph().as_default():
        keys = []
        for reader, path, count in ((tf.TFRecordReader(), records, 3),
                                    (tf.TextLineReader(skip_header_lines=1), str(text), 2),
                                    (tf.WholeFileReader(), str(text), 1)):
            q = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
            key, _ = reader.read(q)
            keys.append((key, count))
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            got = [[sess.run(k) for _ in range(n)] for k, n in keys]
            coord.request_stop()
            coord.join(threads)
    assert got[0] == [("%s:%d" % (records, o)).encode() for o in (0, 18, 38)]
    assert got[1] == [("%s:%d" % (text, n)).encode() for n in (2, 3)]
    assert got[2] == [str(text).encode()]


def test_a_script_ending_with_queue_runners_still_running_exits_cleanly(tmp_path):
    # Regression: ending without closing the session (or joining the runners) aborted the
    # interpreter at exit (SIGABRT / SIGSEGV, rc 134 or 139) while TF1's exits 0. Note [Runner
    # threads at exit] in shardflow/coordinator.py.
    import os
    import subprocess
    import sys
    script = tmp_path / "script.py"
    script.write_text(
        "import sys, shardflow as tf\n"
        "x = tf.train.range_input_producer(1000, shuffle=False).dequeue()\n"
        "b = tf.train.batch([x], batch_size=4)\n"
        "s = tf.Session()\n"
        "c = tf.train.Coordinator() if sys.argv[1] == 'coord' else None\n"
        "tf.train.start_queue_runners(s, c)\n"
        "print(s.run(b).tolist())\n"
        "if c is not None: c.request_stop()\n")
    env = dict(os.environ)
    for variant in ("plain", "coord"):
        r = subprocess.run([sys.executable, str(script), variant], capture_output=True, text=True,
                           timeout=120, env=env)
        assert r.returncode == 0, (variant, r.returncode, r.stderr[-2000:])
        assert r.stdout.strip() == "[0, 1, 2, 3]"


def test_queues_readers_and_epochs_are_per_session(tmp_path):
    # Regression: queues, readers and input producers' epoch counts were shared by every
    # session on a graph, so the classic "evaluate each checkpoint in a fresh session" loop saw
    # 0 examples in its second session (the first had used the epochs up and closed the
    # queues). Note [Queues per session] in shardflow/queue_ops.py.
    path = tmp_path / "lines.txt"
    path.write_text("".join("%d\n" % i for i in range(6)))
    names = tf.train.string_input_producer([str(path)], num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader().read(names)
    batch = tf.train.batch([line], batch_size=2, allow_smaller_final_batch=True)
    q = tf.FIFOQueue(5, [tf.int32], shapes=[[]])
    fill, close = q.enqueue_many([[1, 2]]), q.close()
    for _ in range(2):
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            seen = []
            try:
                while True:
                    seen.extend(sess.run(batch).tolist())
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
                coord.join(threads)
            assert sorted(int(v) for v in seen) == list(range(6))
            assert sess.run(q.size()) == 0        # a fresh queue in each session
            sess.run(fill)
            sess.run(close)
            assert sess.run(q.size()) == 2


def test_closing_a_session_while_other_threads_run_steps_does_not_crash(tmp_path):
    # Regression: Session.close() destroyed the engine session while another thread's step was
    # still returning through it (a use after free: SIGSEGV at exit, about 1 run in 40, with
    # queue runners). Steps in flight now keep the session alive until they return.
    import os
    import subprocess
    import sys
    script = tmp_path / "race.py"
    script.write_text(
        "import threading, time, shardflow as tf\n"
        "for _ in range(40):\n"
        "    with tf.Graph().as_default():\n"
        "        q = tf.FIFOQueue(10, tf.float32, shapes=[[]])\n"
        "        take = q.dequeue()\n"
        "        cheap = tf.constant(1.0) + 1.0\n"
        "        s = tf.Session()\n"
        "        errors = []\n"
        "        def loop(fetch):\n"
        "            try:\n"
        "                while True:\n"
        "                    s.run(fetch)\n"
        "            except (tf.errors.CancelledError, tf.errors.OutOfRangeError,\n"
        "                    RuntimeError) as e:\n"
        "                errors.append(type(e).__name__)\n"
        "        ts = [threading.Thread(target=loop, args=(f,)) for f in (take, cheap, cheap)]\n"
        "        [t.start() for t in ts]\n"
        "        time.sleep(0.02)\n"
        "        s.close()\n"
        "        [t.join(10) for t in ts]\n"
        "        assert not any(t.is_alive() for t in ts)\n"
        "        assert len(errors) == 3, errors\n"
        "print('ok')\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ))
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.strip() == "ok"
