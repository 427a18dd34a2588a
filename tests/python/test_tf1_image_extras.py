"""tf.image's colour ops (image_color.py), measures and filters (image_quality.py), box ops
(image_boxes.py), codecs (image_codecs.py), rot90/transpose_image and resize_bicubic /
resize_area (image_resize.py): values against NumPy, colorsys and PyTorch; gradients where TF
has them."""
import colorsys

import numpy as np
import pytest

import shardflow as tf
from shardflow import image_resize

RNG = np.random.RandomState(0)


def run(*fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(list(fetches), feed)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_rgb_hsv_known_values_and_round_trip():
    rgb = np.array([[[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0.5, 0.5], [0, 0, 0],
                     [0.2, 0.4, 0.8]]], np.float32)
    hsv, back = run(tf.image.rgb_to_hsv(rgb), tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(rgb)))
    expected = np.array([[colorsys.rgb_to_hsv(*p) for p in rgb[0]]])
    np.testing.assert_allclose(hsv, expected, atol=1e-6)
    np.testing.assert_allclose(back, rgb, atol=1e-6)
    rand = RNG.rand(4, 5, 3).astype(np.float32)
    np.testing.assert_allclose(run(tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(rand)))[0], rand,
                               atol=1e-5)


def test_contrast_saturation_hue_gamma():
    img = RNG.rand(3, 4, 3).astype(np.float32)
    mean = img.mean(axis=(0, 1), keepdims=True)
    contrast, sat, hue, gamma = run(tf.image.adjust_contrast(img, 1.7),
                                    tf.image.adjust_saturation(img, 0.4),
                                    tf.image.adjust_hue(img, 0.3),
                                    tf.image.adjust_gamma(img, 2.0, 0.5))
    np.testing.assert_allclose(contrast, (img - mean) * 1.7 + mean, atol=1e-6)
    np.testing.assert_allclose(gamma, 0.5 * img ** 2, atol=1e-6)

    def via_hsv(f):
        return np.array([[colorsys.hsv_to_rgb(*f(*colorsys.rgb_to_hsv(*p))) for p in row]
                         for row in img])
    np.testing.assert_allclose(sat, via_hsv(lambda h, s, v: (h, min(s * 0.4, 1.0), v)),
                               atol=1e-5)
    np.testing.assert_allclose(hue, via_hsv(lambda h, s, v: ((h + 0.3) % 1.0, s, v)), atol=1e-5)
    u8 = np.array([[[10, 200, 250], [0, 0, 255]]], np.uint8)
    out = run(tf.image.adjust_contrast(u8, 3.0))[0]
    assert out.dtype == np.uint8 and out.max() == 255 and out.min() == 0
    gray = run(tf.image.grayscale_to_rgb(np.ones([2, 2, 1], np.float32)))[0]
    assert gray.shape == (2, 2, 3)


def test_random_colour_ops_stay_in_range():
    img = RNG.rand(4, 4, 3).astype(np.float32)
    hue, sat, con = run(tf.image.random_hue(img, 0.2, seed=1),
                        tf.image.random_saturation(img, 0.5, 1.5, seed=2),
                        tf.image.random_contrast(img, 0.5, 1.5, seed=3))
    for out in (hue, sat):
        assert out.shape == img.shape and out.min() >= -1e-6 and out.max() <= 1 + 1e-6
    ratio = (con - con.mean((0, 1))) / (img - img.mean((0, 1)))
    assert 0.5 <= ratio.mean() < 1.5 and np.allclose(ratio, ratio.mean(), atol=1e-3)
    with pytest.raises(ValueError, match="max_delta"):
        tf.image.random_hue(img, 0.7)


def test_saturation_gradient_flows():
    x = tf.constant(RNG.rand(2, 2, 3).astype(np.float32) * 0.8 + 0.1)
    g, = tf.gradients(tf.reduce_sum(tf.image.adjust_saturation(x, 0.5)), [x])
    assert np.all(np.isfinite(run(g)[0]))


def test_rot90_and_transpose_match_numpy():
    img = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    batch = np.stack([img, img + 100])
    outs = run(*[tf.image.rot90(img, k) for k in range(4)], tf.image.rot90(batch, 3),
               tf.image.transpose_image(img))
    for k in range(4):
        np.testing.assert_array_equal(outs[k], np.rot90(img, k))
    np.testing.assert_array_equal(outs[4], np.rot90(batch, 3, axes=(1, 2)))
    np.testing.assert_array_equal(outs[5], img.transpose(1, 0, 2))


def test_psnr_ssim_total_variation():
    a = RNG.rand(2, 16, 16, 3).astype(np.float32)
    b = np.clip(a + 0.1, 0, 1)
    noise = RNG.rand(2, 16, 16, 3).astype(np.float32)
    p, same, other, tv = run(tf.image.psnr(a, a * 0 + 0.5, 1.0), tf.image.ssim(a, a, 1.0),
                             tf.image.ssim(a, noise, 1.0), tf.image.total_variation(a[0]))
    mse = ((a - 0.5) ** 2).mean(axis=(1, 2, 3))
    np.testing.assert_allclose(p, 10 * np.log10(1.0 / mse), rtol=1e-5)
    np.testing.assert_allclose(same, [1.0, 1.0], atol=1e-5)
    assert np.all(other < 0.2)
    tv_ref = np.abs(np.diff(a[0], axis=0)).sum() + np.abs(np.diff(a[0], axis=1)).sum()
    np.testing.assert_allclose(tv, tv_ref, rtol=1e-5)
    # uint8: max_val 255 scaled as the images are.
    u8 = (a[0] * 255).astype(np.uint8)
    p8 = run(tf.image.psnr(u8, np.full_like(u8, 128), 255))[0]
    mse8 = ((u8 / 255.0 - 128 / 255.0) ** 2).mean()
    np.testing.assert_allclose(p8, 10 * np.log10(1.0 / mse8), rtol=1e-4)
    x = tf.constant(b)
    g, = tf.gradients(tf.reduce_sum(tf.image.ssim(x, a, 1.0)), [x])
    assert np.all(np.isfinite(run(g)[0]))


def test_image_gradients_and_sobel():
    img = RNG.rand(1, 5, 6, 2).astype(np.float32)
    dy, dx, sobel = run(*tf.image.image_gradients(img), tf.image.sobel_edges(img))
    np.testing.assert_allclose(dy[:, :-1], np.diff(img, axis=1), atol=1e-6)
    np.testing.assert_array_equal(dy[:, -1], 0)
    np.testing.assert_allclose(dx[:, :, :-1], np.diff(img, axis=2), atol=1e-6)
    padded = np.pad(img, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="reflect")
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float32)
    ref = np.zeros(img.shape + (2,), np.float32)
    for i in range(5):
        for j in range(6):
            win = padded[0, i:i + 3, j:j + 3]
            ref[0, i, j, :, 0] = np.einsum("ijc,ij->c", win, ky)
            ref[0, i, j, :, 1] = np.einsum("ijc,ij->c", win, ky.T)
    np.testing.assert_allclose(sobel, ref, atol=1e-5)


def crop_and_resize_ref(image, boxes, box_ind, size, extrapolation=0.0):
    _, h, w, c = image.shape
    ch, cw = size
    out = np.zeros([len(boxes), ch, cw, c], np.float32)
    for n, (y1, x1, y2, x2) in enumerate(boxes):
        for i in range(ch):
            y = y1 * (h - 1) + i * (y2 - y1) * (h - 1) / (ch - 1) if ch > 1 else \
                0.5 * (y1 + y2) * (h - 1)
            for j in range(cw):
                x = x1 * (w - 1) + j * (x2 - x1) * (w - 1) / (cw - 1) if cw > 1 else \
                    0.5 * (x1 + x2) * (w - 1)
                if not (0 <= y <= h - 1 and 0 <= x <= w - 1):
                    out[n, i, j] = extrapolation
                    continue
                t, l = int(np.floor(y)), int(np.floor(x))
                b, r = int(np.ceil(y)), int(np.ceil(x))
                img = image[box_ind[n]]
                top = img[t, l] + (img[t, r] - img[t, l]) * (x - l)
                bot = img[b, l] + (img[b, r] - img[b, l]) * (x - l)
                out[n, i, j] = top + (bot - top) * (y - t)
    return out


def test_crop_and_resize_matches_loop():
    image = RNG.rand(2, 6, 7, 3).astype(np.float32)
    boxes = np.array([[0.1, 0.2, 0.9, 0.7], [0.5, 0.6, 0.2, 0.1], [-0.2, 0.0, 0.6, 1.3]],
                     np.float32)
    box_ind = np.array([1, 0, 1], np.int32)
    got, one = run(tf.image.crop_and_resize(image, boxes, box_ind, [4, 5], extrapolation_value=-1),
                   tf.image.crop_and_resize(image, boxes, box_ind, [1, 1]))
    np.testing.assert_allclose(got, crop_and_resize_ref(image, boxes, box_ind, [4, 5], -1),
                               atol=1e-5)
    np.testing.assert_allclose(one, crop_and_resize_ref(image, boxes, box_ind, [1, 1]), atol=1e-5)
    x = tf.constant(image)
    g, = tf.gradients(tf.reduce_sum(tf.image.crop_and_resize(x, boxes, box_ind, [4, 5])), [x])
    assert abs(run(g)[0].sum() - 3 * 20 * 3) < 25   # each in-image sample spreads weight 1


def test_non_max_suppression_known_overlaps():
    boxes = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                      [0, 10.1, 1, 11.1], [0, 100, 1, 101]], np.float32)
    scores = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)
    keep, top2, floor = run(tf.image.non_max_suppression(boxes, scores, 10, 0.5),
                            tf.image.non_max_suppression(boxes, scores, 2, 0.5),
                            tf.image.non_max_suppression(boxes, scores, 10, 0.5,
                                                         score_threshold=0.4))
    np.testing.assert_array_equal(keep, [3, 0, 5])
    np.testing.assert_array_equal(top2, [3, 0])
    np.testing.assert_array_equal(floor, [3, 0])
    loose = run(tf.image.non_max_suppression(boxes, scores, 10, 0.95))[0]
    np.testing.assert_array_equal(loose, [3, 0, 1, 2, 4, 5])


def test_sample_distorted_bounding_box_and_draw():
    bbox = np.array([[[0.2, 0.3, 0.6, 0.8]]], np.float32)
    begin, size, boxes = tf.image.sample_distorted_bounding_box(
        [40, 60, 3], bbox, seed=1, min_object_covered=0.5, area_range=(0.2, 1.0))
    with tf.Session() as sess:
        for _ in range(5):
            b, s, bb = sess.run([begin, size, boxes])
            assert b[2] == 0 and s[2] == -1 and b[0] + s[0] <= 40 and b[1] + s[1] <= 60
            crop = (b[0], b[1], b[0] + s[0], b[1] + s[1])
            y0, x0, y1, x1 = bbox[0, 0] * [40, 60, 40, 60]
            inter = max(0, min(crop[2], y1) - max(crop[0], y0)) * \
                max(0, min(crop[3], x1) - max(crop[1], x0))
            assert inter / ((y1 - y0) * (x1 - x0)) >= 0.5 - 1e-6
            np.testing.assert_allclose(bb[0, 0], np.array(crop) / [40, 60, 40, 60], atol=1e-6)
    images = np.zeros([1, 5, 5, 3], np.float32)
    drawn = run(tf.image.draw_bounding_boxes(images, [[[0.0, 0.0, 0.5, 1.0]]]))[0]
    outline = np.zeros([5, 5], bool)
    outline[0, :] = outline[2, :] = outline[:3, 0] = outline[:3, 4] = True
    np.testing.assert_array_equal(drawn[0, ..., 0] == 1, outline)
    np.testing.assert_array_equal(drawn[0][outline], np.tile([1, 1, 0], (outline.sum(), 1)))


def test_png_jpeg_round_trip():
    pytest.importorskip("PIL")
    img = (RNG.rand(6, 5, 3) * 255).astype(np.uint8)
    png = tf.image.encode_png(img)
    back, any_, gray, flt = run(tf.image.decode_png(png), tf.image.decode_image(png),
                                tf.image.decode_png(png, channels=1),
                                tf.image.decode_image(png, dtype=tf.float32))
    np.testing.assert_array_equal(back, img)
    np.testing.assert_array_equal(any_, img)
    assert gray.shape == (6, 5, 1)
    np.testing.assert_allclose(flt, img / 255.0, atol=1e-6)
    smooth = np.tile(np.linspace(0, 255, 16, dtype=np.uint8)[None, :, None], (16, 1, 3))
    jpeg = run(tf.image.decode_jpeg(tf.image.encode_jpeg(smooth, quality=95)))[0]
    assert jpeg.shape == (16, 16, 3) and np.abs(jpeg.astype(int) - smooth).max() < 12
    # TF 1.x's decode ops decode any of JPEG, PNG and GIF (one kernel), but not other bytes
    np.testing.assert_array_equal(run(tf.image.decode_jpeg(png))[0], img)
    with pytest.raises(Exception):
        run(tf.image.decode_jpeg(tf.constant(b"not an image")))


def bicubic_ref(x, out_h, out_w, align_corners, half_pixel):
    """TF's ResizeBicubic, pixel by pixel (resize_bicubic_op.cc's GetWeightsAndIndices)."""
    def taps(n_in, n_out, o):
        scale = (n_in - 1) / (n_out - 1) if align_corners and n_out > 1 else n_in / n_out
        pos = (o + 0.5) * scale - 0.5 if half_pixel else o * scale
        base = int(np.floor(pos))
        t = np.rint((pos - base) * 1024) / 1024
        a = -0.5 if half_pixel else -0.75

        def k(d):
            d = abs(d)
            return ((a + 2) * d - (a + 3)) * d * d + 1 if d <= 1 else \
                ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        idx = [base - 1, base, base + 1, base + 2]
        ws = [k(t - i) for i in (-1, 0, 1, 2)]
        if half_pixel:
            ws = [w if 0 <= i < n_in else 0.0 for i, w in zip(idx, ws)]
            ws = [w / sum(ws) for w in ws]
        return [min(max(i, 0), n_in - 1) for i in idx], ws
    n, h, w, c = x.shape
    out = np.zeros([n, out_h, out_w, c], np.float64)
    for i in range(out_h):
        ys, wy = taps(h, out_h, i)
        for j in range(out_w):
            xs, wx = taps(w, out_w, j)
            for yy, a in zip(ys, wy):
                for xx, b in zip(xs, wx):
                    out[:, i, j] += a * b * x[:, yy, xx]
    return out


def test_resize_bicubic():
    x = RNG.rand(1, 5, 6, 2).astype(np.float32)
    cases = [((8, 9), False, False), ((3, 4), False, True), ((9, 7), True, False),
             ((7, 11), False, True)]
    outs = run(*[image_resize.resize_bicubic(x, s, align_corners=ac, half_pixel_centers=hp)
                 for s, ac, hp in cases])
    for (s, ac, hp), got in zip(cases, outs):
        np.testing.assert_allclose(got, bicubic_ref(x, s[0], s[1], ac, hp), atol=1e-5)
    try:
        import torch
    except ImportError:
        return
    # TF's align_corners kernel is torch's (a = -0.75, clamped taps) up to TF's 1/1024 table.
    ref = torch.nn.functional.interpolate(torch.from_numpy(x.transpose(0, 3, 1, 2)), size=(9, 7),
                                          mode="bicubic", align_corners=True)
    np.testing.assert_allclose(outs[2], ref.numpy().transpose(0, 2, 3, 1), atol=2e-3)
    t = tf.constant(x)
    g, = tf.gradients(tf.reduce_sum(image_resize.resize_bicubic(t, [8, 9])), [t])
    assert np.all(np.isfinite(run(g)[0]))


def test_resize_area():
    x = RNG.rand(2, 6, 8, 3).astype(np.float32)
    down, up, odd = run(tf.image.resize_area(x, [3, 2]), tf.image.resize_area(x[0], [12, 16]),
                        tf.image.resize_area(x[:1, :, :, :1], [4, 3]))
    np.testing.assert_allclose(down, x.reshape(2, 3, 2, 2, 4, 3).mean(axis=(2, 4)), atol=1e-6)
    np.testing.assert_array_equal(up, x[0].repeat(2, axis=0).repeat(2, axis=1))
    # 6 -> 4 rows: output row o averages input rows [1.5 o, 1.5 o + 1.5).
    rows = np.zeros([4, 6])
    for o in range(4):
        lo, hi = 1.5 * o, 1.5 * o + 1.5
        for i in range(6):
            rows[o, i] = max(0.0, min(i + 1, hi) - max(i, lo)) / 1.5
    cols = np.zeros([3, 8])
    for o in range(3):
        lo, hi = 8 / 3 * o, 8 / 3 * (o + 1)
        for i in range(8):
            cols[o, i] = max(0.0, min(i + 1, hi) - max(i, lo)) / (8 / 3)
    np.testing.assert_allclose(odd[0, :, :, 0], rows @ x[0, :, :, 0] @ cols.T, atol=1e-5)
