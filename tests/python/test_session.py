"""Session.run from Python: fetch structures, zero-copy feeds, two CPU devices, the GIL, and
status codes arriving as the right Python exceptions."""

import collections
import threading
import time

import numpy as np
import pytest

import shardflow as sf
from shardflow import _shardflow as _C


@pytest.fixture(autouse=True)
def fresh_graph():
    g = sf.Graph()
    with g.as_default():
        yield g


def test_nested_fetch_structures():
    a = sf.constant(1.0)
    b = sf.constant([2, 3])
    noop = sf.no_op()
    Pair = collections.namedtuple("Pair", "x y")
    with sf.Session() as sess:
        out = sess.run({"a": a, "list": [a, (b, noop)], "pair": Pair(a, b), "name": "Const:0"})
    assert out["a"] == 1.0
    assert out["list"][0] == 1.0 and out["list"][1][1] is None
    np.testing.assert_array_equal(out["list"][1][0], [2, 3])
    assert isinstance(out["pair"], Pair) and out["pair"].x == 1.0
    assert out["name"] == 1.0


def test_feed_by_name_and_ops_added_after_the_session_started():
    x = sf.placeholder(sf.float32, [2], name="x")
    with sf.Session() as sess:
        np.testing.assert_array_equal(sess.run(x + 1, {"x:0": [1, 2]}), [2, 3])
        z = x * 10  # added after the first run: the session extends its graph
        np.testing.assert_array_equal(sess.run(z, {x: [1, 2]}), [10, 20])


def test_eval_and_run_with_default_session():
    x = sf.constant(4.0)
    v = sf.Variable(1.0)
    with sf.Session():
        sf.global_variables_initializer().run()
        assert x.eval() == 4.0
        assert v.eval() == 1.0


def test_contiguous_feed_is_not_copied():
    a = np.arange(1 << 16, dtype=np.float32).reshape(256, 256)
    x = sf.placeholder(sf.float32, [256, 256])
    y = sf.reduce_sum(x)
    with sf.Session() as sess:
        out = sess.run(y, {x: a})
        stats = _C._last_run_stats()
        assert stats["feeds_zero_copy"] == 1
        assert stats["feed_pointers"] == [a.ctypes.data]  # the engine saw the array's memory
        assert out == a.sum()
        # a strided view cannot be wrapped: it is copied
        sess.run(y, {x: np.asfortranarray(a)})
        assert _C._last_run_stats()["feeds_zero_copy"] == 0


def test_fetch_owns_its_buffer_without_a_copy_and_never_aliases_a_variable():
    x = sf.placeholder(sf.float32, [1000])
    y = x * 2.0
    v = sf.Variable(np.zeros(4, np.float32))
    inc = v.assign_add(np.ones(4, np.float32))
    a = np.ones(1000, np.float32)
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        out = sess.run(y, {x: a})
        assert _C._last_run_stats()["fetches_zero_copy"] == 1
        assert not np.shares_memory(out, a)
        out[:] = 5  # the array is ours to write
        before = sess.run(v)
        sess.run(inc)
        np.testing.assert_array_equal(before, np.zeros(4))  # copied: did not change
        # an Identity of a feed shares the feed's buffer in the engine: it is copied out
        ident = sess.run(sf.identity(x), {x: a})
        assert not np.shares_memory(ident, a)


def test_feed_arrays_stay_alive_for_the_step():
    x = sf.placeholder(sf.float32, [None])
    y = sf.reduce_sum(x * 1.0)
    with sf.Session() as sess:
        for n in (10, 1000, 100000):
            assert sess.run(y, {x: np.ones(n, np.float32)}) == n


def two_tower_graph(devices):
    """The same two-layer model, optionally split over two devices."""
    g = sf.Graph()
    with g.as_default():
        x = sf.placeholder(sf.float32, [None, 8], name="x")
        rng = np.random.default_rng(5)
        w1 = rng.standard_normal((8, 16)).astype(np.float32)
        w2 = rng.standard_normal((16, 4)).astype(np.float32)
        with sf.device(devices[0]):
            h = sf.nn.relu(x @ sf.Variable(w1, name="w1"))
        with sf.device(devices[1]):
            y = sf.reduce_sum(h @ sf.Variable(w2, name="w2"), axis=1)
        loss = sf.reduce_mean(y * y)
        train = sf.train.GradientDescentOptimizer(1e-3).minimize(loss)
        init = sf.global_variables_initializer()
    return g, x, y, train, init


def test_two_cpu_devices_give_the_same_result_as_one():
    xv = np.random.default_rng(1).standard_normal((32, 8)).astype(np.float32)
    results = []
    for devices, count in (((None, None), 1), (("/device:CPU:0", "/device:CPU:1"), 2)):
        g, x, y, train, init = two_tower_graph(devices)
        with sf.Session(graph=g, config=sf.ConfigProto(cpu_device_count=count)) as sess:
            assert len(sess.list_devices()) == count
            sess.run(init)
            for _ in range(3):
                sess.run(train, {x: xv})
            md = sf.RunMetadata()
            out = sess.run(y, {x: xv},
                           options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE),
                           run_metadata=md)
            results.append(out)
            used = set(md.placement.values())
            assert len(used) == count, used
            if count == 2:
                ops = {s["op"] for s in md.node_stats()}
                assert "_Send" in ops and "_Recv" in ops
                assert md.partition_graph_count == 2
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-5)


def test_config_as_dict_and_bad_config():
    with sf.Session(config={"cpu_device_count": 3}) as sess:
        assert len(sess.list_devices()) == 3
    with pytest.raises(ValueError, match="unknown config"):
        sf.Session(config={"gpus": 1})


def test_gil_is_released_while_a_step_runs():
    n = 600
    a = sf.constant(np.ones((n, n), np.float32))
    y = a
    for _ in range(8):
        y = sf.matmul(y, a) * (1.0 / n)
    total = sf.reduce_sum(y)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    with sf.Session(config=sf.ConfigProto(intra_op_threads=1, inter_op_threads=1)) as sess:
        sess.run(total)  # warm up
        t = threading.Thread(target=ticker)
        start = time.perf_counter()
        t.start()
        for _ in range(3):
            sess.run(total)
        end = time.perf_counter()
        done.set()
        t.join()
    inside = [s for s in ticks if start < s < end]
    # the ticker kept running while the engine computed
    assert len(inside) >= 0.3 * (end - start) / 0.002, (len(inside), end - start)


# ---- errors -------------------------------------------------------------------------------


def test_wrong_feed_shape_is_a_value_error_with_the_engines_message():
    x = sf.placeholder(sf.float32, [None, 3], name="x")
    y = x @ sf.constant(np.ones((3, 2), np.float32))
    with sf.Session() as sess:
        with pytest.raises(ValueError) as e:
            sess.run(y, {x: np.ones((2, 5), np.float32)})
    assert isinstance(e.value, sf.errors.InvalidArgumentError)
    assert e.value.code == "INVALID_ARGUMENT"
    assert "x" in str(e.value)


def test_unfed_placeholder_is_a_value_error():
    x = sf.placeholder(sf.float32, [2], name="needs_feed")
    with sf.Session() as sess, pytest.raises(ValueError, match="needs_feed"):
        sess.run(x * 2)


def test_uninitialized_variable_is_a_failed_precondition():
    v = sf.Variable(np.zeros(2, np.float32), name="never_initialized")
    with sf.Session() as sess, pytest.raises(RuntimeError) as e:
        sess.run(v)
    assert isinstance(e.value, sf.errors.FailedPreconditionError)
    assert "never_initialized" in str(e.value)


def test_unknown_names_are_lookup_errors():
    sf.constant(1.0, name="c")
    with sf.Session() as sess:
        with pytest.raises(LookupError):
            sess.run("nope:0")
        with pytest.raises(LookupError):
            sess.run("c:0", {"missing:0": 1.0})
    with pytest.raises(LookupError) as e:
        sf.get_default_graph()._add_op("NoSuchOp", [])
    assert isinstance(e.value, sf.errors.NotFoundError)


def test_unknown_device_is_an_error_that_names_it():
    with sf.device("/device:CPU:7"):
        y = sf.constant(1.0) + 1.0
    with sf.Session() as sess, pytest.raises(sf.errors.OpError) as e:
        sess.run(y)
    assert "CPU:7" in str(e.value)


def test_timeout_is_a_timeout_error():
    # The slow part runs on CPU:1, so the calling thread waits for it and sees the deadline
    # (the local session runs the first device's executor inline on the caller's thread).
    # `a` is fed: a constant would let the graph optimizer fold the whole chain before the step.
    n = 700
    with sf.device("/device:CPU:1"):
        a = sf.placeholder(sf.float32, [n, n])
        y = a
        for _ in range(40):
            y = sf.matmul(y, a) * (1.0 / n)
    with sf.device("/device:CPU:0"):
        z = sf.identity(y)
    config = sf.ConfigProto(cpu_device_count=2, intra_op_threads=1)
    with sf.Session(config=config) as sess:
        with pytest.raises(TimeoutError) as e:
            sess.run(z, {a: np.ones((n, n), np.float32)},
                     options=sf.RunOptions(timeout_in_ms=1))
    assert isinstance(e.value, sf.errors.DeadlineExceededError)
    assert "within 1 ms (RunOptions.timeout_in_ms" in str(e.value)


def test_check_numerics_names_the_op():
    x = sf.placeholder(sf.float32, [2])
    y = sf.log(x)
    with sf.Session() as sess, pytest.raises(ValueError) as e:
        sess.run(y, {x: [-1.0, 1.0]}, options=sf.RunOptions(check_numerics=True))
    assert "Log" in str(e.value)


def test_closed_session_raises_failed_precondition():
    sess = sf.Session()
    y = sf.constant(1.0)
    sess.close()
    with pytest.raises(sf.errors.FailedPreconditionError):
        sess.run(y)


def test_unknown_target_scheme_is_a_value_error():
    with pytest.raises(ValueError) as e:
        sf.Session("carrier-pigeon://localhost:2222")
    assert "carrier-pigeon://localhost:2222" in str(e.value)


@pytest.mark.parametrize("code,cls,builtin", [
    (3, "InvalidArgumentError", ValueError),
    (11, "OutOfRangeError", ValueError),
    (5, "NotFoundError", LookupError),
    (9, "FailedPreconditionError", RuntimeError),
    (4, "DeadlineExceededError", TimeoutError),
    (12, "UnimplementedError", NotImplementedError),
    (8, "ResourceExhaustedError", MemoryError),
    (7, "PermissionDeniedError", PermissionError),
    (14, "UnavailableError", ConnectionError),
    (13, "InternalError", RuntimeError),
    (1, "CancelledError", RuntimeError),
    (10, "AbortedError", RuntimeError),
    (15, "DataLossError", RuntimeError),
    (6, "AlreadyExistsError", ValueError),
    (16, "UnauthenticatedError", PermissionError),
    (2, "UnknownError", RuntimeError),
])
def test_every_status_code_maps_to_its_exception(code, cls, builtin):
    with pytest.raises(builtin) as e:
        _C._raise_status(code, "the engine's message: keep it")
    assert type(e.value) is getattr(sf.errors, cls)
    assert isinstance(e.value, sf.errors.OpError)
    assert str(e.value) == "the engine's message: keep it"


def test_bad_feeds_raise_clear_python_errors():
    x = sf.placeholder(sf.float32, [None, 2], name="x")
    y = x * 2.0
    with sf.Session() as sess:
        with pytest.raises(TypeError, match="feed_dict keys"):
            sess.run(y, {3: [[1, 2]]})
        with pytest.raises(TypeError, match="'x:0'"):
            sess.run(y, {x: [[1, 2], [3]]})  # ragged
        with pytest.raises(TypeError, match="cannot fetch"):
            sess.run(object())
        with pytest.raises(ValueError):
            sess.run(y, {x: np.ones((3,), np.float32)})  # wrong rank, from the engine


def test_missing_dataset_dir_is_a_lookup_error():
    with pytest.raises(LookupError) as e:
        sf.datasets.fashion_mnist.load("/nonexistent/dir")
    assert "dataset-fashion-mnist" in str(e.value) or "/nonexistent/dir" in str(e.value)


def test_scalar_fetches_are_numpy_scalars_and_bytes_as_tf1():
    """TF1's Session.run gives a NumPy scalar for a scalar tensor and bytes for a scalar
    string (`sess.run(hello).decode()` in TF's hello world); arrays stay arrays."""
    g = sf.Graph()
    with g.as_default():
        hello = sf.constant("Hello, TensorFlow!")
        x = sf.constant(2.5)
        n = sf.constant(3, dtype=sf.int64)
        v = sf.constant([1.0, 2.0])
    with sf.Session(graph=g) as sess:
        h, xv, nv, vv = sess.run([hello, x, n, v])
    assert h == b"Hello, TensorFlow!" and h.decode() == "Hello, TensorFlow!"
    assert type(xv) is np.float32 and xv == 2.5
    assert type(nv) is np.int64 and nv == 3
    assert isinstance(vv, np.ndarray) and vv.shape == (2,)


def test_feeds_too_large_to_copy_are_resource_exhausted_not_a_crash():
    # Regression: a broadcast (non-contiguous) view of 2^40 elements made NumPy's copy fail,
    # pybind's ensure() returned a null array and the conversion dereferenced it (SIGSEGV); a
    # string feed whose tensor could not be allocated wrote through a null pointer. Both are
    # checked against the allocator before anything is copied.
    x = sf.placeholder(sf.float32, [None])
    s = sf.placeholder(sf.string, [None])
    with sf.Session() as sess:
        with pytest.raises(sf.errors.ResourceExhaustedError, match="feed for 'Placeholder"):
            sess.run(x, {x: np.broadcast_to(np.float32(1), (2 ** 40,))})
        with pytest.raises(sf.errors.ResourceExhaustedError, match="string tensor"):
            sess.run(s, {s: np.broadcast_to(np.array(b"a", object), (2 ** 40,))})
        assert sess.run(x, {x: np.broadcast_to(np.float32(2), (3,))}).tolist() == [2, 2, 2]
    f = sf.py_func(lambda: np.broadcast_to(np.float32(1), (2 ** 40,)), [], sf.float32)
    with sf.Session() as sess:
        with pytest.raises(sf.errors.OpError, match="could not allocate"):
            sess.run(f)


def test_parse_tensor_does_not_fill_a_huge_shape_from_a_few_bytes():
    # Regression: 17 bytes (shape [2^31 - 1], one float_val) made parse_tensor build a Python
    # list of 2^31 floats (tens of GB); a bytes field where the dtype varint belongs raised a
    # bare TypeError.
    bomb = b"\x08\x01\x12\x08\x12\x06\x08\xff\xff\xff\xff\x07\x2a\x04\x00\x00\x80\x3f"
    data = sf.placeholder(sf.string, [])
    out = sf.io.parse_tensor(data, sf.float32)
    with sf.Session() as sess:
        with pytest.raises(sf.errors.ResourceExhaustedError, match="repeating the last value"):
            sess.run(out, {data: bomb})
        with pytest.raises(sf.errors.InvalidArgumentError, match="Could not parse"):
            sess.run(out, {data: b"\n\x03abc"})
        small = b"\x08\x01\x12\x04\x12\x02\x08\x03\x2a\x04\x00\x00\x80\x3f"
        assert sess.run(out, {data: small}).tolist() == [1, 1, 1]
