"""Op results from Python against NumPy references, and NumPy dtypes in and out."""

import numpy as np
import pytest

import shardflow as sf

RNG = np.random.default_rng(7)


def run(fetches, feeds=None, graph=None):
    with sf.Session(graph=graph or sf.get_default_graph()) as sess:
        return sess.run(fetches, feeds)


@pytest.fixture(autouse=True)
def fresh_graph():
    g = sf.Graph()
    with g.as_default():
        yield g


def test_matmul_and_transposes():
    a = RNG.standard_normal((5, 7)).astype(np.float32)
    b = RNG.standard_normal((7, 3)).astype(np.float32)
    x, y = sf.placeholder(sf.float32, [None, 7]), sf.placeholder(sf.float32, [7, 3])
    out = run([x @ y, sf.matmul(y, x, transpose_a=True, transpose_b=True)], {x: a, y: b})
    np.testing.assert_allclose(out[0], a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1], (a @ b).T, rtol=1e-5, atol=1e-5)


def test_elementwise_with_broadcasting():
    a = RNG.standard_normal((4, 3)).astype(np.float32)
    b = RNG.standard_normal((3,)).astype(np.float32)
    x, y = sf.constant(a), sf.constant(b)
    pos = sf.constant(np.abs(a) + 0.5)
    fetches = {
        "add": x + y, "sub": x - y, "mul": x * y, "div": x / (y * y + 1),
        "neg": -x, "max": sf.maximum(x, y), "min": sf.minimum(x, y),
        "sqdiff": sf.squared_difference(x, y), "relu": sf.nn.relu(x),
        "exp": sf.exp(x), "log": sf.log(pos), "sqrt": sf.sqrt(pos), "tanh": sf.tanh(x),
        "sigmoid": sf.sigmoid(x), "square": sf.square(x), "abs": abs(x),
        "scalar": x * 2 + 1, "rscalar": 1 - x,
    }
    out = run(fetches)
    p = np.abs(a) + 0.5
    want = {
        "add": a + b, "sub": a - b, "mul": a * b, "div": a / (b * b + 1), "neg": -a,
        "max": np.maximum(a, b), "min": np.minimum(a, b), "sqdiff": (a - b) ** 2,
        "relu": np.maximum(a, 0), "exp": np.exp(a), "log": np.log(p), "sqrt": np.sqrt(p),
        "tanh": np.tanh(a), "sigmoid": 1 / (1 + np.exp(-a)), "square": a * a,
        "abs": np.abs(a), "scalar": a * 2 + 1, "rscalar": 1 - a,
    }
    for k in want:
        np.testing.assert_allclose(out[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
        assert out[k].dtype == np.float32, k


def test_comparisons_give_bools():
    a = np.array([1, 5, 3], np.int32)
    x = sf.constant(a)
    out = run([x < 3, x >= 3, sf.equal(x, 5), sf.logical_not(x > 1)])
    np.testing.assert_array_equal(out[0], a < 3)
    np.testing.assert_array_equal(out[1], a >= 3)
    np.testing.assert_array_equal(out[2], a == 5)
    np.testing.assert_array_equal(out[3], ~(a > 1))
    assert out[0].dtype == np.bool_


def test_reductions():
    a = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    x = sf.constant(a)
    out = run({"sum": sf.reduce_sum(x), "mean1": sf.reduce_mean(x, axis=1),
               "max": sf.reduce_max(x, axis=[0, 2], keepdims=True),
               "min": sf.reduce_min(x, axis=-1), "prod": sf.reduce_prod(x, axis=0),
               "argmax": sf.argmax(x, axis=2)})
    np.testing.assert_allclose(out["sum"], a.sum(), rtol=1e-4)
    np.testing.assert_allclose(out["mean1"], a.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["max"], a.max(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(out["min"], a.min(axis=-1))
    np.testing.assert_allclose(out["prod"], a.prod(axis=0), rtol=1e-5)
    np.testing.assert_array_equal(out["argmax"], a.argmax(axis=2))
    assert out["argmax"].dtype == np.int64


def test_array_ops():
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    x = sf.constant(a)
    out = run([sf.reshape(x, [-1, 4]), sf.transpose(x, [2, 0, 1]), sf.concat([x, x], axis=1),
               sf.slice(x, [0, 1, 0], [-1, 2, 2]), sf.expand_dims(x, 0),
               sf.squeeze(sf.expand_dims(x, 0)), sf.cast(x, sf.int32), sf.shape(x),
               sf.add_n([x, x, x]), sf.zeros_like(x), sf.fill([2, 2], 7.0)])
    np.testing.assert_allclose(out[0], a.reshape(-1, 4))
    np.testing.assert_allclose(out[1], a.transpose(2, 0, 1))
    np.testing.assert_allclose(out[2], np.concatenate([a, a], axis=1))
    np.testing.assert_allclose(out[3], a[:, 1:3, 0:2])
    assert out[4].shape == (1, 2, 3, 4) and out[5].shape == (2, 3, 4)
    np.testing.assert_array_equal(out[6], a.astype(np.int32))
    np.testing.assert_array_equal(out[7], [2, 3, 4])
    np.testing.assert_allclose(out[8], 3 * a, rtol=1e-6)
    np.testing.assert_array_equal(out[9], np.zeros_like(a))
    np.testing.assert_array_equal(out[10], np.full((2, 2), 7.0, np.float32))


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_softmax_and_cross_entropy():
    z = RNG.standard_normal((6, 10)).astype(np.float32)
    labels = RNG.integers(0, 10, 6).astype(np.int32)
    onehot = np.eye(10, dtype=np.float32)[labels]
    logits = sf.constant(z)
    out = run([sf.nn.softmax(logits), sf.nn.log_softmax(logits),
               sf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits),
               sf.nn.softmax_cross_entropy_with_logits(labels=onehot, logits=logits)])
    p = _softmax(z)
    want_xent = -np.log(p[np.arange(6), labels])
    np.testing.assert_allclose(out[0], p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1], np.log(p), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[2], want_xent, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[3], want_xent, rtol=1e-5, atol=1e-5)


def _conv2d_same(x, w):
    n, h, wd, _ = x.shape
    kh, kw, _, co = w.shape
    ph, pw = (kh - 1) // 2, (kw - 1) // 2
    xp = np.pad(x, ((0, 0), (ph, kh - 1 - ph), (pw, kw - 1 - pw), (0, 0)))
    out = np.zeros((n, h, wd, co), np.float64)
    for i in range(h):
        for j in range(wd):
            patch = xp[:, i:i + kh, j:j + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


def test_conv2d_bias_and_pooling():
    x = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    xi = sf.placeholder(sf.float32, [None, 6, 6, 3])
    conv = sf.nn.bias_add(sf.nn.conv2d(xi, sf.constant(w), strides=1, padding="SAME"), b)
    pooled = sf.nn.max_pool(conv, ksize=2, strides=2, padding="VALID")
    avg = sf.nn.avg_pool(conv, ksize=[2, 2], strides=[1, 2, 2, 1], padding="valid")
    assert pooled.shape == [None, 3, 3, 4]
    out = run([conv, pooled, avg], {xi: x})
    want = _conv2d_same(x, w) + b
    np.testing.assert_allclose(out[0], want, rtol=1e-4, atol=1e-4)
    blocks = want.reshape(2, 3, 2, 3, 2, 4)
    np.testing.assert_allclose(out[1], blocks.max(axis=(2, 4)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out[2], blocks.mean(axis=(2, 4)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8,
                                   np.int8, np.bool_, np.float16])
def test_dtypes_round_trip_through_identity(dtype):
    a = (RNG.standard_normal((3, 4)) * 10).astype(dtype)
    x = sf.placeholder(sf.as_dtype(dtype), [3, 4])
    out = run(sf.identity(x), {x: a})
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, a)


def test_strings_round_trip():
    x = sf.placeholder(sf.string, [2])
    out = run(sf.identity(x), {x: np.array([b"ab", "cd"], dtype=object)})
    assert list(out) == [b"ab", b"cd"]


def test_non_contiguous_and_python_feeds_are_converted():
    a = RNG.standard_normal((4, 6)).astype(np.float32)
    x = sf.placeholder(sf.float32, [None, 3])
    y = x * 1.0
    np.testing.assert_array_equal(run(y, {x: a[:, ::2]}), a[:, ::2])
    np.testing.assert_array_equal(run(y, {x: [[1, 2, 3]]}), [[1, 2, 3]])
    # float64 arrays are cast to the placeholder's float32
    np.testing.assert_allclose(run(y, {x: a[:, :3].astype(np.float64)}), a[:, :3])
    with pytest.raises(TypeError, match="dtype"):
        run(y, {x: np.ones((1, 3), np.complex64)})


def test_random_ops_have_the_right_statistics():
    u = sf.random_uniform([20000], seed=3)
    n = sf.random_normal([20000], seed=4)
    ou, on = run([u, n])
    assert 0 <= ou.min() and ou.max() < 1 and abs(ou.mean() - 0.5) < 0.02
    assert abs(on.mean()) < 0.05 and abs(on.std() - 1) < 0.05


def test_python_floats_beside_float64_tensors_keep_float64_precision():
    # Regression: a Python float met a float64 tensor as a float32 constant (0.1 became
    # 0.10000000149). TF converts it to the tensor's dtype.
    with sf.Graph().as_default():
        x = sf.constant(np.array([1.0, 3.0], np.float64))
        v = sf.Variable(np.array([2.0]))
        outs = [x * 0.1, 0.1 * x, x + np.float64(0.1), sf.maximum(x, [0.1, 3.5]),
                v * (1 / np.sqrt(np.pi)), sf.constant(np.float32(1.0)) * 0.1]
        with sf.Session() as sess:
            sess.run(sf.global_variables_initializer())
            got = sess.run(outs)
    np.testing.assert_array_equal(got[0], np.array([1.0, 3.0]) * 0.1)
    np.testing.assert_array_equal(got[1], np.array([1.0, 3.0]) * 0.1)
    np.testing.assert_array_equal(got[2], np.array([1.0, 3.0]) + 0.1)
    np.testing.assert_array_equal(got[3], [1.0, 3.5])
    np.testing.assert_allclose(got[4], [2.0 / np.sqrt(np.pi)], rtol=1e-15)
    assert got[5].dtype == np.float32 and got[5] == np.float32(0.1)
