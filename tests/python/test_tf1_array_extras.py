"""TF1 names built as composites: strided slices (x[::2], x[::-1]), tf.pad's REFLECT and
SYMMETRIC modes, the segment ops (shardflow/segment_ops.py) and image resizing
(shardflow/image_resize.py); values against NumPy / PyTorch, gradients against finite
differences."""
import numpy as np
import pytest

import shardflow as tf
from shardflow import image_resize, segment_ops


def run(*fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(list(fetches), feed)


def numeric_grad(f, x, eps=1e-3):
    g = np.zeros_like(x, dtype=np.float64)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x, dtype=np.float64)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_strided_slices_match_numpy():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    t = tf.constant(a)
    keys = [np.s_[:, ::2], np.s_[::-1], np.s_[1, ::-2, 1:], np.s_[..., ::3], np.s_[:, None, 3:0:-2],
            np.s_[::2, 1, -1::-1]]
    got = run(*[t[k] for k in keys])
    for k, g in zip(keys, got):
        np.testing.assert_array_equal(g, a[k])


def test_strided_slice_gradient_and_errors():
    x = tf.placeholder(tf.float32, [4, 3])
    y = tf.reduce_sum(tf.square(x[::-2, ::2]))
    (g,) = tf.gradients(y, [x])
    xv = np.random.rand(4, 3).astype(np.float32)
    want = np.zeros_like(xv)
    want[::-2, ::2] = 2 * xv[::-2, ::2]
    np.testing.assert_allclose(run(g, feed={x: xv})[0], want, rtol=1e-6)
    # A step on a dimension unknown when the graph is built gathers rows computed at run time.
    u = tf.placeholder(tf.float32, [None, 3])
    np.testing.assert_array_equal(run(u[::-2], feed={u: xv})[0], xv[::-2])
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC", "constant"])
def test_pad_modes_match_numpy_and_differentiate(mode):
    a = np.random.rand(3, 4).astype(np.float32)
    pads = [[1, 2], [3, 0]] if mode != "SYMMETRIC" else [[3, 1], [0, 4]]
    x = tf.placeholder(tf.float32, [3, 4])
    p = tf.pad(x, pads, mode=mode)
    w = np.random.rand(*np.pad(a, pads).shape)
    loss = tf.reduce_sum(tf.square(p) * w)
    (g,) = tf.gradients(loss, [x])
    got, gv = run(p, g, feed={x: a})
    np_mode = {"REFLECT": "reflect", "SYMMETRIC": "symmetric", "constant": "constant"}[mode]
    np.testing.assert_allclose(got, np.pad(a, pads, mode=np_mode))
    want = numeric_grad(lambda z: (np.pad(z, pads, mode=np_mode) ** 2 * w).sum(), a.astype(np.float64))
    np.testing.assert_allclose(gv, want, rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match=r"must be in \[0, "):
        tf.pad(x, [[3, 0], [0, 0]], mode="REFLECT")


def test_segment_ops_match_numpy():
    d = np.random.rand(5, 3).astype(np.float32)
    ids = np.array([2, 0, 2, 3, 0])
    ref = np.zeros((4, 3))
    np.add.at(ref, ids, d)
    counts = np.bincount(ids, minlength=4)[:, None]
    out = run(tf.unsorted_segment_sum(d, ids, 4), tf.unsorted_segment_mean(d, ids, 4),
              tf.unsorted_segment_sqrt_n(d, ids, 4),
              tf.segment_sum(d, [0, 0, 1, 1, 3]), tf.segment_mean(d, [0, 0, 1, 1, 1]),
              tf.unsorted_segment_sum(np.arange(8).reshape(2, 2, 2), [[0, 1], [1, 1]], 2))
    np.testing.assert_allclose(out[0], ref, rtol=1e-6)
    np.testing.assert_allclose(out[1], ref / np.maximum(counts, 1), rtol=1e-6)
    np.testing.assert_allclose(out[2], ref / np.sqrt(np.maximum(counts, 1)), rtol=1e-6)
    np.testing.assert_allclose(out[3], [d[0] + d[1], d[2] + d[3], 0 * d[0], d[4]], rtol=1e-6)
    np.testing.assert_allclose(out[4], [(d[0] + d[1]) / 2, d[2:].mean(0)], rtol=1e-6)
    np.testing.assert_array_equal(out[5], [[0, 1], [12, 15]])
    assert out[5].dtype == np.int64


def test_segment_sum_gradient_and_bad_ids():
    x = tf.placeholder(tf.float32, [4, 2])
    y = tf.reduce_sum(tf.square(tf.unsorted_segment_sum(x, [1, 0, 1, 1], 2)))
    (g,) = tf.gradients(y, [x])
    xv = np.random.rand(4, 2).astype(np.float32)
    s = np.zeros((2, 2))
    np.add.at(s, [1, 0, 1, 1], xv)
    np.testing.assert_allclose(run(g, feed={x: xv})[0], 2 * s[[1, 0, 1, 1]], rtol=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(tf.unsorted_segment_sum(xv, [0, 5, 0, 0], 2))


def test_partition_stitch_bincount_histogram():
    d = np.arange(12, dtype=np.float32).reshape(4, 3)
    parts = run(*tf.dynamic_partition(d, [1, 0, 1, 0], 2))
    np.testing.assert_array_equal(parts[0], d[[1, 3]])
    np.testing.assert_array_equal(parts[1], d[[0, 2]])
    stitched, counts, padded, hist = run(
        tf.dynamic_stitch([[0, 2], [1, 3]], [d[:2], d[2:]]), tf.bincount([1, 1, 3, 0, 1]),
        tf.bincount([1, 1, 3], minlength=6),
        tf.histogram_fixed_width([0.0, 0.1, 0.5, 0.99, 5.0, -1.0], [0.0, 1.0], nbins=4))
    np.testing.assert_array_equal(stitched, d[[0, 2, 1, 3]])
    np.testing.assert_array_equal(counts, [1, 3, 0, 1])
    np.testing.assert_array_equal(padded, [0, 2, 0, 1, 0, 0])
    np.testing.assert_array_equal(hist, [3, 0, 1, 2])


def test_resize_known_values_and_pytorch():
    img = np.array([[0, 1], [2, 3]], np.float32).reshape(1, 2, 2, 1)
    legacy, nearest = run(image_resize.resize_images(img, [4, 4]),
                          image_resize.resize_images(img, [4, 4], image_resize.ResizeMethod.NEAREST_NEIGHBOR))
    np.testing.assert_allclose(legacy[0, :, :, 0], [[0, .5, 1, 1], [1, 1.5, 2, 2], [2, 2.5, 3, 3],
                                                    [2, 2.5, 3, 3]])
    np.testing.assert_array_equal(nearest[0, :, :, 0], np.repeat(np.repeat([[0, 1], [2, 3]], 2, 0),
                                                                 2, 1))
    torch = pytest.importorskip("torch")
    x = np.random.rand(2, 5, 7, 3).astype(np.float32)
    xt = torch.from_numpy(x).permute(0, 3, 1, 2)

    def ref(mode, size, **kw):
        return torch.nn.functional.interpolate(xt, size=size, mode=mode, **kw).permute(
            0, 2, 3, 1).numpy()
    got = run(image_resize.resize_images_v2(x, [9, 4]),   # TF 2 pixel centres, as torch
              image_resize.resize_bilinear(x, [3, 11], align_corners=True),
              image_resize.resize_nearest_neighbor(x, [9, 4]), image_resize.resize_images(x[0], [6, 6]))
    np.testing.assert_allclose(got[0], ref("bilinear", (9, 4), align_corners=False), atol=1e-5)
    np.testing.assert_allclose(got[1], ref("bilinear", (3, 11), align_corners=True), atol=1e-5)
    np.testing.assert_allclose(got[2], ref("nearest", (9, 4)), atol=1e-6)
    assert got[3].shape == (6, 6, 3)


def test_resize_gradient_and_errors():
    x = tf.placeholder(tf.float32, [1, 3, 4, 2])
    w = np.random.rand(1, 5, 7, 2)
    loss = tf.reduce_sum(image_resize.resize_bilinear(x, [5, 7], half_pixel_centers=True) * w)
    (g,) = tf.gradients(loss, [x])
    xv = np.random.rand(1, 3, 4, 2).astype(np.float32)
    f = tf.Session()
    out = tf.placeholder(tf.float64, [1, 3, 4, 2])
    lin = tf.reduce_sum(image_resize.resize_bilinear(out, [5, 7], half_pixel_centers=True) * w)
    # Resizing computes in float32 (the loss is ~10, so ~1e-6 of rounding); the loss is linear
    # in x, so a large step is exact and keeps that rounding from the difference quotient (at
    # eps 1e-3 it reached 3e-3 in one run out of many).
    want = numeric_grad(lambda z: f.run(lin, {out: z}), xv.astype(np.float64), eps=0.25)
    np.testing.assert_allclose(run(g, feed={x: xv})[0], want, rtol=1e-3, atol=1e-3)
    # Bilinear resizing takes images of unknown size (test_image_dynamic_sizes.py); area does
    # not.
    with pytest.raises(ValueError, match="height and width known"):
        image_resize.resize_images(tf.placeholder(tf.float32, [1, None, 4, 1]), [2, 2],
                                   method="area")
    with pytest.raises(ValueError, match="unknown resize method"):
        image_resize.resize_images(xv, [2, 2], method=7)
    # Bicubic and area go to their own functions (values: test_tf1_image_extras.py).
    assert run(image_resize.resize_images(xv, [6, 8], method=image_resize.ResizeMethod.BICUBIC)
               )[0].shape == (1, 6, 8, 2)
    assert run(image_resize.resize_images(xv, [1, 2], method="area"))[0].shape == (1, 1, 2, 2)
    assert segment_ops.__all__ and image_resize.__all__


def test_unique():
    x = tf.placeholder(tf.int64, [None])
    y, idx = tf.unique(x)
    r = tf.unique(tf.constant([b"the", b"cat", b"the"]), out_idx=tf.int64)
    yv, iv, words, widx = run(y, idx, r.y, r.idx, feed={x: [4, 2, 4, 7, 2]})
    np.testing.assert_array_equal(yv, [4, 2, 7])
    np.testing.assert_array_equal(iv, [0, 1, 0, 2, 1])
    assert iv.dtype == np.int32 and widx.dtype == np.int64
    assert list(words) == [b"the", b"cat"] and list(widx) == [0, 1, 0]
    with pytest.raises(ValueError, match="vector"):
        tf.unique(tf.zeros([2, 2]))
