"""tf.test (this module, also importable as shardflow.test): TestCase, main, the gradient checks
compute_gradient and compute_gradient_error, and the device queries is_gpu_available,
gpu_device_name, is_built_with_cuda.

Example::

    class SquareTest(sf.test.TestCase):
        def testSquare(self):
            with self.session() as sess:
                x = sf.square([2.0, 3.0])
                self.assertAllClose(sess.run(x), [4.0, 9.0])

    if __name__ == "__main__":
        sf.test.main()

Each test starts on a fresh default graph (setUp resets it, as TF1's TestCase does).
self.session() / self.test_session() / self.cached_session() give a Session on that graph,
made the default session and the graph the default graph inside the block; cached_session
and test_session return the same session on every call in one test (closed in tearDown),
session a new one each time. self.evaluate(t) runs `t` in the default session (or a
cached one).
"""

import contextlib
import sys
import tempfile
import unittest

import numpy as np

from shardflow import framework

_TEMP_DIR = None


def main(argv=None):
    """Runs the tests of __main__ (unittest.main)."""
    return unittest.main(argv=argv)


def get_temp_dir():
    """A directory for the tests of this process (made once)."""
    global _TEMP_DIR
    if _TEMP_DIR is None:
        _TEMP_DIR = tempfile.mkdtemp(prefix="shardflow_test_")
    return _TEMP_DIR


def _session_devices():
    from shardflow.session import ConfigProto, GPUOptions, Session
    config = ConfigProto(gpu_options=GPUOptions(allow_growth=True))
    sess = Session(graph=framework.Graph(), config=config)
    try:
        return list(sess.list_devices())
    finally:
        sess.close()


def _gpu_devices():
    return [d for d in _session_devices() if "/device:GPU:" in d]


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """True when a session here lists a GPU device (shardflow's GPUs are CUDA devices, so
    cuda_only changes nothing). min_cuda_compute_capability is not checked: shardflow does not
    report a device's compute capability."""
    if min_cuda_compute_capability is not None:
        raise ValueError("is_gpu_available(min_cuda_compute_capability=...): shardflow does "
                         "not report compute capabilities; leave it None")
    return bool(_gpu_devices())


def gpu_device_name():
    """The first GPU device's name ('/device:GPU:0'), '' when there is none."""
    gpus = _gpu_devices()
    return "/device:" + gpus[0].split("/device:", 1)[1] if gpus else ""


def is_built_with_cuda():
    """Whether the engine was built with its GPU devices (CMake's SHARDFLOW_CUDA): the
    extension does not say, so this checks whether loading it brought the CUDA runtime
    (libcudart) into the process, which a GPU build links and a CPU build does not (Linux:
    /proc/self/maps; False where that cannot be read)."""
    from shardflow import _shardflow  # noqa: F401 (loaded: its libraries are mapped)
    try:
        with open("/proc/self/maps") as f:
            return any("libcudart" in line for line in f)
    except OSError:
        return False


is_built_with_gpu_support = is_built_with_cuda


def is_built_with_rocm():
    return False


def _is_tensor_like(x):
    from shardflow.variables import Variable
    return isinstance(x, (framework.Tensor, framework.Operation, Variable))


class TestCase(unittest.TestCase):
    """unittest.TestCase with TF1's session helpers and array assertions (see the module)."""

    def __init__(self, methodName="runTest"):  # noqa: N803 (unittest's name)
        super().__init__(methodName)
        self._cached = None

    def setUp(self):
        super().setUp()
        framework.reset_default_graph()

    def tearDown(self):
        if self._cached is not None:
            self._cached.close()
            self._cached = None
        super().tearDown()

    def get_temp_dir(self):
        return get_temp_dir()

    @contextlib.contextmanager
    def _default(self, sess):
        with sess.graph.as_default(), sess.as_default():
            yield sess

    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """A new Session on `graph` (default: the default graph), closed after the block."""
        from shardflow.session import Session
        with Session(graph=graph or framework.get_default_graph(), config=config) as sess:
            with self._default(sess):
                yield sess

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """The test's one Session (made on the first call, on `graph` or the default graph;
        closed in tearDown)."""
        from shardflow.session import Session
        g = graph or framework.get_default_graph()
        if self._cached is None or self._cached.graph is not g:
            if self._cached is not None:
                self._cached.close()
            self._cached = Session(graph=g, config=config)
        with self._default(self._cached):
            yield self._cached

    def test_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """TF1's older name: the cached session. (unittest takes it for a test too; run so,
        it skips itself, as TF1's does.)"""
        if self.id().endswith(".test_session"):
            self.skipTest("Not a test.")
        return self.cached_session(graph, config, use_gpu, force_gpu)

    def evaluate(self, tensors):
        """`tensors` (any nesting sess.run takes) run in the default session, else the cached
        one."""
        from shardflow.session import get_default_session
        sess = get_default_session()
        if sess is not None:
            return sess.run(tensors)
        with self.cached_session() as sess:
            return sess.run(tensors)

    def _array(self, a):
        return np.asarray(self.evaluate(a) if _is_tensor_like(a) else a)

    # ---- assertions ---------------------------------------------------------------------

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        """a and b (arrays, tensors, or equal nests of lists, tuples and dicts of them) have
        the same shapes and |a - b| <= atol + rtol * |b| element-wise."""
        if isinstance(a, dict) or isinstance(b, dict):
            self.assertIsInstance(a, dict, msg)
            self.assertIsInstance(b, dict, msg)
            self.assertEqual(sorted(a), sorted(b), msg)
            for k in a:
                self.assertAllClose(a[k], b[k], rtol, atol, msg)
            return
        if _is_nest(a) and _is_nest(b) and (_holds_arrays(a) or _holds_arrays(b)):
            self.assertEqual(len(a), len(b), msg)
            for x, y in zip(a, b):
                self.assertAllClose(x, y, rtol, atol, msg)
            return
        a, b = self._array(a), self._array(b)
        self.assertEqual(a.shape, b.shape, "Shape mismatch: %s vs %s. %s"
                         % (a.shape, b.shape, msg or ""))
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=msg or "",
                                   equal_nan=True)

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6,  # noqa: N802
                                      float_rtol=1e-6, float_atol=1e-6, half_rtol=1e-3,
                                      half_atol=1e-3, bfloat16_rtol=1e-2, bfloat16_atol=1e-2,
                                      msg=None):
        a, b = self._array(a), self._array(b)
        if a.dtype == np.float32 or b.dtype == np.float32:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if a.dtype == np.float16 or b.dtype == np.float16:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        self.assertAllClose(a, b, rtol, atol, msg)

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        """a and b have the same shapes and equal elements."""
        a, b = self._array(a), self._array(b)
        self.assertEqual(a.shape, b.shape, "Shape mismatch: %s vs %s. %s"
                         % (a.shape, b.shape, msg or ""))
        np.testing.assert_array_equal(a, b, err_msg=msg or "")

    def assertNear(self, f1, f2, err, msg=None):  # noqa: N802
        self.assertTrue(abs(f1 - f2) <= err, "%r != %r +/- %r%s"
                        % (f1, f2, err, " (%s)" % msg if msg else ""))

    def assertArrayNear(self, farray1, farray2, err, msg=None):  # noqa: N802
        self.assertEqual(len(farray1), len(farray2), msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg)

    def assertNDArrayNear(self, ndarray1, ndarray2, err, msg=None):  # noqa: N802
        self.assertTrue(np.linalg.norm(self._array(ndarray1) - self._array(ndarray2)) <= err,
                        msg)

    def assertAllGreater(self, a, comparison_target):  # noqa: N802
        self.assertGreater(np.min(self._array(a)), comparison_target)

    def assertAllLess(self, a, comparison_target):  # noqa: N802
        self.assertLess(np.max(self._array(a)), comparison_target)

    def assertAllGreaterEqual(self, a, comparison_target):  # noqa: N802
        self.assertGreaterEqual(np.min(self._array(a)), comparison_target)

    def assertAllLessEqual(self, a, comparison_target):  # noqa: N802
        self.assertLessEqual(np.max(self._array(a)), comparison_target)

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):  # noqa: N802
        self.assertEqual(list(np_array.shape), tf_tensor.shape.as_list(), msg)

    def assertRaisesOpError(self, expected_err_re_or_predicate):  # noqa: N802
        from shardflow import errors
        return self.assertRaisesRegex(errors.OpError, expected_err_re_or_predicate)

    def assertRaisesWithPredicateMatch(self, exception_type,  # noqa: N802
                                       expected_err_re_or_predicate):
        return self.assertRaisesRegex(exception_type, expected_err_re_or_predicate)


def _is_nest(x):
    return isinstance(x, (list, tuple))


def _holds_arrays(x):
    return any(isinstance(e, (np.ndarray, list, tuple, dict)) or _is_tensor_like(e) for e in x)


# ---- gradient checks (TF1's tf.test.compute_gradient, tensorflow/python/ops/gradient_checker) --


def _default_session():
    from shardflow.session import get_default_session
    sess = get_default_session()
    if sess is None:
        raise ValueError("compute_gradient needs a default session: call it inside "
                         "`with tf.Session():` (or a TestCase's self.session())")
    return sess


def _jacobians(sess, x, x_shape, x_init, y, y_shape, delta, feeds):
    """(theoretical, numerical) Jacobians of y by x, each [x size, y size] (row i: dy / dx_i):
    the first from tf.gradients with one-hot grad_ys, the second by central differences."""
    from shardflow import ops
    from shardflow.gradients import gradients
    x_size, y_size = int(np.prod(x_shape, dtype=np.int64)), int(np.prod(y_shape, dtype=np.int64))
    dtype = x.dtype.as_numpy_dtype
    x0 = np.asarray(x_init, dtype=dtype).reshape(x_shape)
    theoretical = np.zeros((x_size, y_size), dtype=dtype)
    numerical = np.zeros((x_size, y_size), dtype=dtype)
    if y_size == 0 or x_size == 0:
        return theoretical, numerical
    dy = ops.placeholder(y.dtype, y_shape)
    (dx,) = gradients(y, [x], grad_ys=[dy])
    one_hot = np.zeros(y_shape, dtype=y.dtype.as_numpy_dtype)
    for j in range(y_size):
        one_hot.flat[j] = 1
        if dx is not None:
            got = sess.run(dx, {**feeds, x: x0, dy: one_hot})
            theoretical[:, j] = np.asarray(got).reshape(x_size)
        one_hot.flat[j] = 0
    for i in range(x_size):
        plus, minus = x0.copy(), x0.copy()
        plus.flat[i] += delta
        minus.flat[i] -= delta
        y_plus = np.asarray(sess.run(y, {**feeds, x: plus}), dtype=np.float64)
        y_minus = np.asarray(sess.run(y, {**feeds, x: minus}), dtype=np.float64)
        numerical[i, :] = ((y_plus - y_minus) / (2 * delta)).reshape(y_size)
    return theoretical, numerical


def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None,
                     extra_feed_dict=None):
    """TF1's tf.test.compute_gradient: the theoretical (tf.gradients) and numerical (central
    differences of step `delta`) Jacobians of `y` by `x`, each of shape [x size, y size], run in
    the default session with x fed its value (x_init_value, or uniform in [0, 1)). `x` may be a
    list, with x_shape and x_init_value lists too: then a list of (theoretical, numerical)
    pairs. init_targets run first (initializers)."""
    sess = _default_session()
    if init_targets is not None:
        sess.run(init_targets)
    feeds = dict(extra_feed_dict or {})
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    shapes = list(x_shape) if isinstance(x, (list, tuple)) else [x_shape]
    inits = (list(x_init_value) if isinstance(x, (list, tuple)) and x_init_value is not None
             else [x_init_value] * len(xs) if x_init_value is None else [x_init_value])
    values = []
    for t, shape, init in zip(xs, shapes, inits):
        if init is None:
            init = np.random.random_sample(shape).astype(t.dtype.as_numpy_dtype)
        values.append(np.asarray(init, dtype=t.dtype.as_numpy_dtype).reshape(shape))
    out = []
    for i, (t, shape) in enumerate(zip(xs, shapes)):
        others = {xs[k]: values[k] for k in range(len(xs)) if k != i}
        out.append(_jacobians(sess, t, shape, values[i], y, y_shape, delta,
                              {**feeds, **others}))
    return out if isinstance(x, (list, tuple)) else out[0]


def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3,
                           init_targets=None, extra_feed_dict=None):
    """TF1's tf.test.compute_gradient_error: the largest absolute difference between the
    theoretical and numerical Jacobians of compute_gradient (over every x of a list)."""
    grads = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets,
                             extra_feed_dict)
    if not isinstance(grads, list):
        grads = [grads]
    error = 0.0
    for theoretical, numerical in grads:
        if theoretical.size:
            error = max(error, float(np.max(np.abs(theoretical - numerical))))
    return error


# tf.test is this module: ``import shardflow.test`` and ``from shardflow.test import TestCase``
# find it.
sys.modules.setdefault("shardflow.test", sys.modules[__name__])

__all__ = ["TestCase", "compute_gradient", "compute_gradient_error", "get_temp_dir", "gpu_device_name", "is_built_with_cuda",
           "is_built_with_gpu_support", "is_built_with_rocm", "is_gpu_available", "main"]

