"""Image resizing, cropping and padding with sizes known only when the step runs: a
segmentation decoder upsampling to its skip connection (`tf.image.resize_bilinear(x,
tf.shape(skip)[1:3])`), an input pipeline after decode_jpeg (height and width unknown), and
tf.pad with a padding tensor. Each dynamic result equals the static one."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_resize_with_tensor_size_equals_static_size():
    rng = np.random.default_rng(0)
    img = rng.standard_normal((2, 7, 5, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, None, None, 3])
    size = tf.placeholder(tf.int32, [2])
    cases = []
    for fn in (tf.image.resize_bilinear, tf.image.resize_nearest_neighbor):
        for align, half in ((False, False), (True, False), (False, True)):
            for out in ((3, 2), (7, 5), (14, 11), (1, 1), (9, 3), (4, 10)):
                static = fn(tf.constant(img), list(out), align_corners=align,
                            half_pixel_centers=half)
                dynamic = fn(x, size, align_corners=align, half_pixel_centers=half)
                cases.append((out, static, dynamic))
    with tf.Session() as sess:
        for out, static, dynamic in cases:
            want = sess.run(static)
            got = sess.run(dynamic, {x: img, size: out})
            assert got.shape == (2,) + out + (3,)
            np.testing.assert_allclose(got, want, atol=1e-5)


def test_nearest_align_corners_rounds_halves_away_from_zero():
    """TF's kernel rounds with C's roundf: 7 -> 9 rows sample rows 1.5 -> 2 and 4.5 -> 5 (NumPy's
    half-to-even gave 4)."""
    img = np.arange(7, dtype=np.float32).reshape(1, 7, 1, 1)
    with tf.Session() as sess:
        rows = sess.run(tf.image.resize_nearest_neighbor(img, [9, 1], align_corners=True))
    assert rows.ravel().tolist() == [0, 1, 2, 2, 3, 4, 5, 5, 6]


def test_resize_images_after_unknown_size_and_to_a_skip_connection():
    img = tf.placeholder(tf.float32, [None, None, 3])            # as decode_jpeg gives
    fixed = tf.image.resize_images(img, [8, 6])
    assert fixed.shape.as_list() == [8, 6, 3]
    skip = tf.placeholder(tf.float32, [None, None, None, 4])
    coarse = tf.placeholder(tf.float32, [None, 2, 2, 4])
    up = tf.image.resize_images(coarse, tf.shape(skip)[1:3])
    up_list = tf.image.resize_images(coarse, [tf.shape(skip)[1], tf.shape(skip)[2]],
                                     method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    tf2 = tf.image.resize(coarse, tf.shape(skip)[1:3])
    with tf.Session() as sess:
        a, b, c, d = sess.run([fixed, up, up_list, tf2], {
            img: np.ones((20, 30, 3)), skip: np.zeros((3, 5, 7, 4)),
            coarse: np.ones((3, 2, 2, 4))})
    assert a.shape == (8, 6, 3) and np.allclose(a, 1)
    assert b.shape == c.shape == d.shape == (3, 5, 7, 4)
    np.testing.assert_allclose(b, 1, atol=1e-6)
    with pytest.raises(ValueError, match="bilinear and nearest"):
        tf.image.resize_images(coarse, tf.shape(skip)[1:3], method=tf.image.ResizeMethod.AREA)


def test_gradient_flows_through_tensor_size_upsampling():
    """A U-Net style decoder: the coarse features upsampled to the skip connection's run-time
    size train."""
    rng = np.random.default_rng(1)
    tf.set_random_seed(1)
    skip = tf.placeholder(tf.float32, [None, None, None, 2])
    target = tf.placeholder(tf.float32, [None, None, None, 2])
    coarse = tf.layers.conv2d(skip, 2, 3, strides=2, padding="same")
    up = tf.image.resize_bilinear(coarse, tf.shape(skip)[1:3])
    loss = tf.reduce_mean(tf.square(up + skip - target))
    step = tf.train.AdamOptimizer(0.05).minimize(loss)
    feed = {skip: rng.standard_normal((2, 8, 6, 2)), target: rng.standard_normal((2, 8, 6, 2))}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, feed)
        for _ in range(30):
            sess.run(step, feed)
        assert sess.run(loss, feed) < first


def test_crop_or_pad_and_central_crop_of_unknown_size_equal_static():
    rng = np.random.default_rng(2)
    x = tf.placeholder(tf.float32, [None, None, 3])
    xb = tf.placeholder(tf.float32, [None, None, None, 3])
    with tf.Session() as sess:
        for h, w in ((7, 5), (10, 10), (3, 12), (1, 1)):
            img = rng.standard_normal((h, w, 3)).astype(np.float32)
            for th, tw in ((5, 5), (24, 24), (8, 3), (1, 1)):
                dynamic = tf.image.resize_image_with_crop_or_pad(x, th, tw)
                assert dynamic.shape.as_list() == [th, tw, 3]
                want = sess.run(tf.image.resize_image_with_crop_or_pad(tf.constant(img), th, tw))
                np.testing.assert_array_equal(sess.run(dynamic, {x: img}), want)
                batch = tf.image.resize_image_with_crop_or_pad(xb, th, tw)
                np.testing.assert_array_equal(sess.run(batch, {xb: img[None]})[0], want)
            for fraction in (0.5, 0.7, 0.875, 1.0):
                want = sess.run(tf.image.central_crop(tf.constant(img), fraction))
                got = sess.run(tf.image.central_crop(x, fraction), {x: img})
                np.testing.assert_array_equal(got, want)


def test_bounding_boxes_with_tensor_sizes_check_when_run():
    x = tf.placeholder(tf.float32, [None, None, 3])
    t = tf.placeholder(tf.int32, [])
    padded = tf.image.pad_to_bounding_box(x, 1, 2, t, t + 1)
    cropped = tf.image.crop_to_bounding_box(x, 1, 0, t, 2)
    with tf.Session() as sess:
        out = sess.run(padded, {x: np.ones((2, 2, 3)), t: 5})
        assert out.shape == (5, 6, 3) and out.sum() == 12 and out[1:3, 2:4].min() == 1
        assert sess.run(cropped, {x: np.ones((4, 3, 3)), t: 2}).shape == (2, 2, 3)
        with pytest.raises(tf.errors.InvalidArgumentError, match="pad_to_bounding_box"):
            sess.run(padded, {x: np.ones((4, 4, 3)), t: 3})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(cropped, {x: np.ones((2, 2, 3)), t: 3})


def test_pad_with_a_padding_tensor():
    x = tf.placeholder(tf.float32, [None, 3])
    n = tf.shape(x)[0]
    padded = tf.pad(x, [[0, 4 - n], [1, 0]], constant_values=-1)
    full = tf.pad(x, tf.constant([[1, 1], [0, 2]]))
    amounts = tf.placeholder(tf.int32, [2, 2])
    fed = tf.pad(x, amounts)
    grad = tf.gradients(tf.reduce_sum(fed * 2.0), x)[0]
    with tf.Session() as sess:
        a, b = sess.run([padded, full], {x: np.ones((2, 3))})
        np.testing.assert_array_equal(a, [[-1, 1, 1, 1], [-1, 1, 1, 1],
                                          [-1, -1, -1, -1], [-1, -1, -1, -1]])
        assert b.shape == (4, 5) and b.sum() == 6
        c, g = sess.run([fed, grad], {x: np.ones((2, 3)), amounts: [[1, 0], [2, 1]]})
        assert c.shape == (3, 6) and c.sum() == 6
        np.testing.assert_array_equal(g, np.full((2, 3), 2.0))
    with pytest.raises(ValueError, match="REFLECT"):
        tf.pad(x, amounts, mode="REFLECT")


def test_gradient_of_slices_and_crops_at_run_time_offsets():
    """Slice's gradient pads dy back with amounts the step computes when begin or size is a
    tensor (it was Unimplemented), and Concat's sums offsets after an unknown size."""
    x = tf.placeholder(tf.float32, [None, None, 3])
    top = tf.placeholder(tf.int32, [])
    crop = tf.image.crop_to_bounding_box(x, top, 1, 2, 2)
    crop_grad = tf.gradients(tf.reduce_sum(crop * 3.0), x)[0]
    w = tf.placeholder(tf.float32, [None, 4])
    part = tf.slice(w, [1, top], [-1, 2])
    part_grad = tf.gradients(tf.reduce_sum(part * part), w)[0]
    v = tf.placeholder(tf.float32, [None, 2])
    joined = tf.concat([v[:top], tf.ones([3, 2]), v, v[top:]], 0)
    join_grad = tf.gradients(tf.reduce_sum(joined * tf.range(1.0, 1.0 + tf.cast(
        tf.shape(joined)[0], tf.float32))[:, None]), v)[0]
    with tf.Session() as sess:
        g = sess.run(crop_grad, {x: np.ones((4, 4, 3)), top: 1})
        want = np.zeros((4, 4, 3))
        want[1:3, 1:3] = 3
        np.testing.assert_array_equal(g, want)
        wv = np.arange(12, dtype=np.float32).reshape(3, 4)
        want = np.zeros((3, 4))
        want[1:, 1:3] = 2 * wv[1:, 1:3]
        np.testing.assert_array_equal(sess.run(part_grad, {w: wv, top: 1}), want)
        # rows of joined: v[:1] (row weight 1), ones (2-4), v (5-7), v[1:] (8-9)
        got = sess.run(join_grad, {v: np.zeros((3, 2)), top: 1})
        np.testing.assert_array_equal(got[:, 0], [1 + 5, 6 + 8, 7 + 9])


def test_resizing_an_empty_image_or_to_a_negative_size_names_the_problem():
    # Regression: an empty image failed "GatherV2 indices[0] = -1 is not in [0, 0)" and a fed
    # size of [-1, 3] as a range error; TF's kernels name both.
    x = tf.placeholder(tf.float32, [None, None, None, 3])
    size = tf.placeholder(tf.int32, [2])
    with tf.Session() as sess:
        for resize in (tf.image.resize_bilinear, tf.image.resize_nearest_neighbor):
            y = resize(x, size)
            with pytest.raises(tf.errors.InvalidArgumentError, match="non-zero size"):
                sess.run(y, {x: np.ones((1, 0, 2, 3)), size: [3, 3]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="must be positive"):
                sess.run(y, {x: np.ones((1, 2, 2, 3)), size: [-1, 3]})
            assert sess.run(y, {x: np.ones((1, 2, 2, 3)), size: [3, 1]}).shape == (1, 3, 1, 3)
