"""tf.extract_image_patches, space_to_batch_nd / batch_to_space_nd and setdiff1d against NumPy
references of TF's definitions, with gradients by finite differences."""
import numpy as np
import pytest

import shardflow as tf
from grad_check import check_gradient


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def patches_reference(x, kh, kw, sh, sw, rh, rw, padding):
    n, h, w, c = x.shape
    eh, ew = (kh - 1) * rh + 1, (kw - 1) * rw + 1
    if padding == "SAME":
        oh, ow = -(-h // sh), -(-w // sw)
        ph, pw = max((oh - 1) * sh + eh - h, 0), max((ow - 1) * sw + ew - w, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    else:
        oh, ow = (h - eh) // sh + 1, (w - ew) // sw + 1
    out = np.zeros((n, oh, ow, kh * kw * c))
    for a in range(oh):
        for b in range(ow):
            win = x[:, a * sh:a * sh + eh:rh, b * sw:b * sw + ew:rw, :]
            out[:, a, b, :] = win.reshape(n, -1)
    return out


@pytest.mark.parametrize("k,s,r,padding", [
    ((2, 2), (1, 1), (1, 1), "VALID"),
    ((3, 3), (2, 2), (1, 1), "SAME"),
    ((3, 2), (1, 2), (1, 1), "VALID"),
    ((2, 2), (1, 1), (2, 2), "SAME"),
    ((3, 3), (2, 2), (2, 1), "SAME"),
    ((2, 3), (3, 2), (2, 2), "VALID"),
])
def test_extract_image_patches_matches_tf_definition(k, s, r, padding):
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((2, 9, 8, 3)).astype(np.float32)
    y = tf.extract_image_patches(tf.constant(x0), ksizes=[1, k[0], k[1], 1],
                                 strides=[1, s[0], s[1], 1], rates=[1, r[0], r[1], 1],
                                 padding=padding)
    want = patches_reference(x0.astype(np.float64), k[0], k[1], s[0], s[1], r[0], r[1], padding)
    assert y.shape.as_list() == list(want.shape)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y), want, rtol=1e-6, atol=1e-6)
    assert tf.image.extract_patches is tf.extract_image_patches


def test_extract_image_patches_gradient_and_dynamic_batch():
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((1, 5, 5, 2))
    check_gradient(lambda x: tf.extract_image_patches(x, [1, 2, 2, 1], [1, 2, 2, 1],
                                                      [1, 1, 1, 1], "SAME"),
                   x0, rng=rng, h=1e-2, rtol=1e-3, atol=1e-3, dtype=np.float32)
    x = tf.placeholder(tf.float32, [None, 6, 6, 1])
    y = tf.extract_image_patches(x, [1, 3, 3, 1], [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    feed = rng.standard_normal((3, 6, 6, 1)).astype(np.float32)
    with tf.Session() as sess:
        got = sess.run(y, {x: feed})
    np.testing.assert_allclose(got, patches_reference(feed.astype(np.float64), 3, 3, 2, 2, 2, 2,
                                                      "SAME"), atol=1e-6)


def space_to_batch_reference(x, bh, bw, pads):
    x = np.pad(x, [(0, 0), tuple(pads[0]), tuple(pads[1]), (0, 0)])
    n, h, w, c = x.shape
    out = np.zeros((bh * bw * n, h // bh, w // bw, c))
    for i in range(bh):
        for j in range(bw):
            out[(i * bw + j) * n:(i * bw + j + 1) * n] = x[:, i::bh, j::bw, :]
    return out


def test_space_to_batch_and_back():
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    pads = [[1, 0], [0, 2]]
    s2b = tf.space_to_batch_nd(tf.constant(x0), [2, 4], pads)
    back = tf.batch_to_space_nd(s2b, [2, 4], pads)
    sq = tf.space_to_batch(tf.constant(x0[:, :4, :4]), [[0, 0], [0, 0]], 2)
    with tf.Session() as sess:
        got, got_back, got_sq = sess.run([s2b, back, sq])
    np.testing.assert_allclose(got, space_to_batch_reference(x0, 2, 4, pads))
    np.testing.assert_allclose(got_back, x0)
    np.testing.assert_allclose(got_sq, space_to_batch_reference(x0[:, :4, :4], 2, 2,
                                                                [[0, 0], [0, 0]]))
    check_gradient(lambda x: tf.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 0]]),
                   rng.standard_normal((1, 2, 4, 1)), rng=rng, h=1e-2, rtol=1e-3, atol=1e-3,
                   dtype=np.float32)
    with pytest.raises(ValueError, match="divide"):
        tf.space_to_batch_nd(tf.constant(x0), [2, 2], [[0, 0], [0, 0]])


def test_setdiff1d():
    out, idx = tf.setdiff1d([1, 2, 3, 4, 5, 6], [1, 3, 5])
    fout, fidx = tf.setdiff1d(tf.constant([0.5, 1.5, 2.5]), [2.5], index_dtype=tf.int64)
    with tf.Session() as sess:
        o, i, fo, fi = sess.run([out, idx, fout, fidx])
    np.testing.assert_array_equal(o, [2, 4, 6])
    np.testing.assert_array_equal(i, [1, 3, 5])
    np.testing.assert_allclose(fo, [0.5, 1.5])
    assert fi.dtype == np.int64
    np.testing.assert_array_equal(fi, [0, 1])
