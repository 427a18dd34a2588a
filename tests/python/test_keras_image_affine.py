"""tf.keras.preprocessing.image's affine augmentation (rotation, shift, shear, zoom, the fill
modes) and ImageDataGenerator's rotation_range / shear_range / zoom_range.

Expected values are derived by hand from Keras 2.2.4 / tf.keras 1.15's matrices: the product
rotation @ shift @ shear @ zoom about the centre (h / 2 + 0.5, w / 2 + 0.5) maps each output
pixel o to the input point matrix @ o + offset, sampled as scipy.ndimage.affine_transform
samples. A pixel-by-pixel restatement of scipy's (< 1.6, the TF 1.15 era) sampling rules
checks the vectorised NumPy resampler on random transforms in every mode.
"""

import os

import numpy as np
import pytest

import shardflow as tf

image = tf.keras.preprocessing.image

MODES = ("constant", "nearest", "reflect", "wrap")


def grid(h, w=None):
    """An h x w one-channel image (channels last) whose pixel (r, c) holds 10 r + c."""
    w = h if w is None else w
    return (10.0 * np.arange(h)[:, None] + np.arange(w)[None, :])[..., None]


def ramp(values):
    """A 1 x n one-channel image holding `values` along its columns."""
    return np.asarray(values, dtype=np.float64).reshape(1, -1, 1)


# ---- a pixel-by-pixel restatement of scipy.ndimage's sampling ----------------------------------


def _scipy_coordinate(c, n, mode):
    """scipy.ndimage's map_coordinate: a coordinate past the edges of an axis of n pixels
    brought back as `mode` says (None: outside, for 'constant')."""
    if 0 <= c <= n - 1:
        return c
    if mode == "constant":
        return None
    if mode == "nearest":
        return 0.0 if c < 0 else n - 1.0
    if mode == "reflect":
        sz2 = 2 * n
        if c < 0:
            if c < -sz2:
                c = sz2 * int(-c / sz2) + c
            return c + sz2 if c < -n else -c - 1
        c -= sz2 * int(c / sz2)
        return sz2 - c - 1 if c >= n else c
    sz = n - 1                                   # wrap
    if c < 0:
        return c + sz * (int(-c / sz) + 1)
    return c - sz * int(c / sz)


def _scipy_index(i, n, mode):
    """A neighbour index past the edges (reflect: mirrored; otherwise its weight is 0)."""
    if mode == "reflect":
        if i < 0:
            return -i - 1
        if i >= n:
            return 2 * n - i - 1
    return min(max(i, 0), n - 1)


def _reference_channel(img, matrix, offset, order, mode, cval):
    h, w = img.shape
    out = np.empty((h, w))
    for i in range(h):
        for j in range(w):
            point = matrix @ np.array([i, j], dtype=np.float64) + offset
            r, c = _scipy_coordinate(point[0], h, mode), _scipy_coordinate(point[1], w, mode)
            if r is None or c is None:
                out[i, j] = cval
            elif order == 0:
                out[i, j] = img[_scipy_index(int(np.floor(r + 0.5)), h, mode),
                                _scipy_index(int(np.floor(c + 0.5)), w, mode)]
            else:
                r0, c0 = int(np.floor(r)), int(np.floor(c))
                fr, fc = r - r0, c - c0
                out[i, j] = sum(wt * img[_scipy_index(r0 + dr, h, mode),
                                         _scipy_index(c0 + dc, w, mode)]
                                for dr, dc, wt in ((0, 0, (1 - fr) * (1 - fc)),
                                                   (1, 0, fr * (1 - fc)),
                                                   (0, 1, (1 - fr) * fc), (1, 1, fr * fc)))
    return out


def _keras_matrix(theta, tx, ty, shear, zx, zy, h, w):
    """Keras 1.15's 3 x 3 transform, written out here independently of the module."""
    t, s = np.deg2rad(theta), np.deg2rad(shear)
    rotation = np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])
    shift = np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]])
    shear_m = np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]])
    zoom = np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]])
    o_x, o_y = h / 2 + 0.5, w / 2 + 0.5
    to_centre = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]])
    back = np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
    return to_centre @ rotation @ shift @ shear_m @ zoom @ back


def test_random_transforms_match_scipys_sampling_in_every_mode():
    rng = np.random.RandomState(0)
    x = rng.rand(5, 7, 2) * 10                                   # rows, columns, channels
    for trial in range(3):
        params = dict(theta=rng.uniform(-60, 60), tx=rng.uniform(-3, 3),
                      ty=rng.uniform(-3, 3), shear=rng.uniform(-20, 20),
                      zx=rng.uniform(0.6, 1.5), zy=rng.uniform(0.6, 1.5))
        m = _keras_matrix(h=5, w=7, **params)
        for mode in MODES:
            for order in (0, 1):
                got = image.apply_affine_transform(x, fill_mode=mode, cval=-3.0, order=order,
                                                   **params)
                assert got.shape == x.shape and got.dtype == x.dtype
                for k in range(2):
                    want = _reference_channel(x[..., k], m[:2, :2], m[:2, 2], order, mode, -3.0)
                    np.testing.assert_allclose(got[..., k], want, atol=1e-9,
                                               err_msg="%s order %d trial %d" % (mode, order,
                                                                                 trial))


# ---- rotation ----------------------------------------------------------------------------------


def test_rotation_by_90_degrees_hand_computed():
    """theta = 90: R = [[0, -1], [1, 0]] about Keras's centre (3, 3) of a 5 x 5 image sends
    output (r, c) to input (3 - (c - 3), 3 + (r - 3)) = (6 - c, r): the picture turned
    clockwise (row 0 on top; np.rot90(x, -1)) and, the centre being one pixel past the true
    one, moved right by two columns."""
    x = grid(5)
    got = image.apply_affine_transform(x, theta=90, fill_mode="constant", cval=-1)
    want = np.array([[-1, -1, 40, 30, 20],
                     [-1, -1, 41, 31, 21],
                     [-1, -1, 42, 32, 22],
                     [-1, -1, 43, 33, 23],
                     [-1, -1, 44, 34, 24]], dtype=np.float64)
    np.testing.assert_allclose(got[..., 0], want, atol=1e-12)
    np.testing.assert_allclose(got[:, 2:, 0], np.rot90(x[..., 0], -1)[:, :3], atol=1e-12)
    nearest = image.apply_affine_transform(x, theta=90)          # the edge column repeated
    np.testing.assert_allclose(nearest[:, :2, 0], [[40, 40], [41, 41], [42, 42], [43, 43],
                                                   [44, 44]], atol=1e-12)


@pytest.mark.parametrize("n", [4, 5])
def test_rotations_by_quarter_turns_are_np_rot90_once_recentred(n):
    """The shift t = (1, 1) - R^T (1, 1), applied before R, cancels the centre's one-pixel
    offset: theta 90 with ty 2, -90 with tx 2 and 180 with both are exactly np.rot90, positive
    theta clockwise (the top-left pixel goes to the top-right)."""
    x = grid(n)
    cw = image.apply_affine_transform(x, theta=90, ty=2)
    np.testing.assert_allclose(cw[..., 0], np.rot90(x[..., 0], -1), atol=1e-12)
    assert cw[0, n - 1, 0] == pytest.approx(x[0, 0, 0])
    ccw = image.apply_affine_transform(x, theta=-90, tx=2)
    np.testing.assert_allclose(ccw[..., 0], np.rot90(x[..., 0], 1), atol=1e-12)
    half = image.apply_affine_transform(x, theta=180, tx=2, ty=2)
    np.testing.assert_allclose(half[..., 0], np.rot90(x[..., 0], 2), atol=1e-12)


def test_identity_and_pure_shift():
    x = grid(4, 6)
    assert image.apply_affine_transform(x) is x
    same = image.apply_affine_transform(x, theta=0, tx=0, ty=0, shear=0, zx=1, zy=1)
    np.testing.assert_array_equal(same, x)
    # a shift moves the content up / left: output (r, c) is input (r + tx, c + ty)
    moved = image.apply_affine_transform(x, tx=1, ty=2, fill_mode="constant", cval=-1)
    np.testing.assert_array_equal(moved[:3, :4], x[1:, 2:])
    assert np.all(moved[3] == -1) and np.all(moved[:, 4:] == -1)


# ---- zoom and shear ----------------------------------------------------------------------------


def test_zoom_below_one_magnifies_the_centre():
    """zx = zy = 0.5: input = 0.5 (output - 3) + 3 = 0.5 output + 1.5 on a 5 x 5 image, so the
    middle is drawn twice as large; on the linear grid bilinear sampling is exact."""
    x = grid(5)
    got = image.apply_affine_transform(x, zx=0.5, zy=0.5)
    rows, cols = np.meshgrid(np.arange(5.0), np.arange(5.0), indexing="ij")
    np.testing.assert_allclose(got[..., 0], 10 * (0.5 * rows + 1.5) + (0.5 * cols + 1.5),
                               atol=1e-12)
    # 6 x 6, order 0: input 0.5 output + 1.75 rounds to 2 2 3 3 4 4: each pixel doubled
    x6 = np.random.RandomState(1).rand(6, 6, 1)
    up = image.apply_affine_transform(x6, zx=0.5, zy=0.5, order=0)
    np.testing.assert_array_equal(up[..., 0], np.repeat(np.repeat(x6[2:5, 2:5, 0], 2, 0), 2, 1))


def test_zoom_above_one_shrinks():
    """zx = zy = 2: input = 2 output - 3 (-3, -1, 1, 3, 5): every second pixel, the rest fill;
    zx alone scales the rows only."""
    x = grid(5)
    got = image.apply_affine_transform(x, zx=2, zy=2, fill_mode="constant", cval=-1)
    want = np.full((5, 5), -1.0)
    want[2:4, 2:4] = [[11, 13], [31, 33]]
    np.testing.assert_allclose(got[..., 0], want, atol=1e-12)
    rows_only = image.apply_affine_transform(x, zx=2, fill_mode="nearest")
    np.testing.assert_allclose(rows_only[..., 0], x[[0, 0, 1, 3, 4], :, 0], atol=1e-12)


def test_shear_hand_computed():
    """shear 30 degrees about Keras's centre (4, 4) of a 7 x 7 image: input row = output row
    - sin 30 (output col - 4), input col = cos 30 (output col - 4) + 4; bilinear sampling is
    exact on the linear grid where that stays inside."""
    x = grid(7)
    got = image.apply_affine_transform(x, shear=30, fill_mode="constant", cval=-1)
    c = np.cos(np.deg2rad(30))
    for r, col in [(3, 3), (3, 4), (4, 2), (2, 5), (1, 6)]:
        in_r, in_c = r - 0.5 * (col - 4), c * (col - 4) + 4
        assert got[r, col, 0] == pytest.approx(10 * in_r + in_c), (r, col)
    assert got[0, 6, 0] == -1 and got[6, 0, 0] == -1          # input rows -1 and 8: outside


# ---- fill modes and interpolation --------------------------------------------------------------


@pytest.mark.parametrize("ty, want", [
    (2, {"constant": [2, 3, 4, 5, -1, -1], "nearest": [2, 3, 4, 5, 5, 5],
         "reflect": [2, 3, 4, 5, 5, 4], "wrap": [2, 3, 4, 5, 1, 2]}),
    (-2, {"constant": [-1, -1, 0, 1, 2, 3], "nearest": [0, 0, 0, 1, 2, 3],
          "reflect": [1, 0, 0, 1, 2, 3], "wrap": [3, 4, 0, 1, 2, 3]}),
    (9, {"constant": [-1] * 6, "nearest": [5] * 6, "reflect": [2, 1, 0, 0, 1, 2],
         "wrap": [4, 0, 1, 2, 3, 4]}),
    (-5, {"constant": [-1] * 5 + [0], "nearest": [0] * 6, "reflect": [4, 3, 2, 1, 0, 0],
          "wrap": [5, 1, 2, 3, 4, 0]}),
])
def test_fill_modes_past_the_edge(ty, want):
    """A ramp 0..5 read at columns ty .. ty + 5: 'constant' gives cval, 'nearest' the edge
    value, 'reflect' mirrors about the pixel edges (5 5 4 3 ... | 0 0 1), 'wrap' repeats with
    period n - 1 = 5 (scipy's: first and last pixel overlap; -5 lands on the last)."""
    x = ramp(np.arange(6))
    for mode, values in want.items():
        got = image.apply_affine_transform(x, ty=ty, fill_mode=mode, cval=-1)
        np.testing.assert_allclose(got.ravel(), values, err_msg=mode, atol=1e-12)


def test_bilinear_half_pixel_shift_gives_midpoints():
    x = ramp(2 * np.arange(6))
    got = image.apply_affine_transform(x, ty=0.5)
    np.testing.assert_allclose(got.ravel(), [1, 3, 5, 7, 9, 10])   # last: the edge repeated
    col = np.arange(6.0).reshape(6, 1, 1) ** 2
    up = image.apply_affine_transform(col, tx=-0.5)
    np.testing.assert_allclose(up.ravel(), [0, 0.5, 2.5, 6.5, 12.5, 20.5])
    # order 0 takes the pixel at floor(coordinate + 0.5): halves round up, as scipy's
    nearest = image.apply_affine_transform(x, ty=0.5, order=0)
    np.testing.assert_array_equal(nearest.ravel(), [2, 4, 6, 8, 10, 10])


def test_integer_images_are_rounded():
    x = np.array([0, 1, 2, 3], dtype=np.uint8).reshape(1, 4, 1)
    got = image.apply_affine_transform(x, ty=0.5)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got.ravel(), [1, 2, 3, 3])


def test_channels_and_axes():
    """Each channel is transformed alone; channels first (row 1, col 2, channel 0) gives the
    same pictures as channels last."""
    x = np.random.RandomState(2).rand(5, 6, 3)
    params = dict(theta=20, tx=0.7, shear=8, zx=0.9, zy=1.1, fill_mode="reflect")
    last = image.apply_affine_transform(x, **params)
    for k in range(3):
        np.testing.assert_allclose(last[..., k],
                                   image.apply_affine_transform(x[..., k:k + 1],
                                                                **params)[..., 0])
    first = image.apply_affine_transform(np.moveaxis(x, 2, 0), row_axis=1, col_axis=2,
                                         channel_axis=0, **params)
    np.testing.assert_allclose(np.moveaxis(first, 0, 2), last)
    with pytest.raises(ValueError, match="fill_mode"):
        image.apply_affine_transform(x, theta=10, fill_mode="mirror")
    with pytest.raises(ValueError, match="order"):
        image.apply_affine_transform(x, theta=10, order=3)
    with pytest.raises(ValueError, match="rank 3"):
        image.apply_affine_transform(x[..., 0], theta=10)


def test_random_functions_draw_like_keras():
    x = np.random.RandomState(3).rand(2, 6, 7)                  # channels first, as Keras's
    kw = dict(row_axis=1, col_axis=2, channel_axis=0)

    def drawn(seed, draw):
        np.random.seed(seed)
        return draw()

    theta = drawn(7, lambda: np.random.uniform(-25, 25))
    np.random.seed(7)
    np.testing.assert_allclose(image.random_rotation(x, 25, fill_mode="reflect"),
                               image.apply_affine_transform(x, theta=theta,
                                                            fill_mode="reflect", **kw))
    hu, wu = drawn(8, lambda: (np.random.uniform(-0.2, 0.2), np.random.uniform(-0.3, 0.3)))
    np.random.seed(8)
    np.testing.assert_allclose(image.random_shift(x, 0.3, 0.2, fill_mode="constant", cval=2),
                               image.apply_affine_transform(x, tx=hu * 6, ty=wu * 7,
                                                            fill_mode="constant", cval=2,
                                                            **kw))
    shear = drawn(9, lambda: np.random.uniform(-15, 15))
    np.random.seed(9)
    np.testing.assert_allclose(image.random_shear(x, 15, interpolation_order=0),
                               image.apply_affine_transform(x, shear=shear, order=0, **kw))
    zx, zy = drawn(10, lambda: np.random.uniform(0.7, 1.3, 2))
    np.random.seed(10)
    np.testing.assert_allclose(image.random_zoom(x, (0.7, 1.3), fill_mode="wrap"),
                               image.apply_affine_transform(x, zx=zx, zy=zy, fill_mode="wrap",
                                                            **kw))
    assert image.random_zoom(x, [1, 1]) is x
    with pytest.raises(ValueError, match="zoom_range"):
        image.random_zoom(x, [1, 2, 3])


# ---- ImageDataGenerator ------------------------------------------------------------------------


def test_generator_draws_theta_shear_and_zoom_in_keras_order():
    gen = image.ImageDataGenerator(rotation_range=30, zoom_range=0.2, shear_range=10)
    assert gen.zoom_range == [0.8, 1.2]
    np.random.seed(3)
    theta, shear = np.random.uniform(-30, 30), np.random.uniform(-10, 10)
    zx, zy = np.random.uniform(0.8, 1.2, 2)
    p = gen.get_random_transform((8, 8, 3), seed=3)
    assert (p["theta"], p["shear"], p["zx"], p["zy"]) == (theta, shear, zx, zy)
    assert p["tx"] == 0 and p["ty"] == 0 and zx != zy
    # no zoom draw when both bounds are 1: only the two flip draws are made
    plain = image.ImageDataGenerator(zoom_range=[1, 1])
    np.random.seed(4)
    p = plain.get_random_transform((8, 8, 3))
    after = np.random.random()
    np.random.seed(4)
    assert (p["zx"], p["zy"]) == (1, 1) and np.random.random(3)[2] == after
    assert image.ImageDataGenerator(zoom_range=(0.5, 2)).zoom_range == [0.5, 2]
    assert image.ImageDataGenerator(zoom_range=np.array([0.9, 1.1])).zoom_range == [0.9, 1.1]


def test_generator_flow_with_rotation_zoom_shear_is_reproducible():
    rng = np.random.RandomState(0)
    x = (rng.rand(20, 8, 8, 3) + 0.5).astype(np.float32)
    y = np.arange(20)
    gen = image.ImageDataGenerator(rotation_range=30, zoom_range=0.2, shear_range=10,
                                   fill_mode="constant", cval=0)
    first = gen.flow(x, y, batch_size=8, seed=1)
    second = gen.flow(x, y, batch_size=8, seed=1)
    filled = False
    for want_len in (8, 8, 4):
        (a, ya), (b, yb) = next(first), next(second)
        assert a.shape == (want_len, 8, 8, 3) and a.dtype == np.float32
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ya, yb)
        assert not np.allclose(a, x[ya])                        # transformed
        assert a.min() >= 0 and a.max() <= 1.5 + 1e-6
        filled = filled or np.any(a == 0)
    assert filled                                               # the constant fill shows
    # a batch is each image's own draw applied through apply_transform
    bx, by = gen.flow(x, y, batch_size=8, shuffle=False, seed=1)[0]
    np.random.seed(1)
    for j in range(8):
        p = gen.get_random_transform(x[j].shape)
        np.testing.assert_allclose(bx[j], gen.apply_transform(x[j], p), rtol=1e-6)
        np.testing.assert_allclose(
            bx[j], image.apply_affine_transform(x[j], p["theta"], 0, 0, p["shear"], p["zx"],
                                                p["zy"], fill_mode="constant", cval=0),
            rtol=1e-6)


def test_generator_channels_first_and_fit_with_augmentation():
    x = np.random.RandomState(5).rand(4, 6, 6, 3).astype(np.float32)
    last = image.ImageDataGenerator(rotation_range=40, zoom_range=[0.8, 1.0],
                                    fill_mode="wrap", interpolation_order=0)
    first = image.ImageDataGenerator(rotation_range=40, zoom_range=[0.8, 1.0],
                                     fill_mode="wrap", interpolation_order=0,
                                     data_format="channels_first")
    p = last.get_random_transform(x[0].shape, seed=0)
    np.testing.assert_array_equal(
        np.moveaxis(first.apply_transform(np.moveaxis(x[0], 2, 0), p), 0, 2),
        last.apply_transform(x[0], p))
    fitted = image.ImageDataGenerator(featurewise_center=True, rotation_range=20)
    fitted.fit(x, augment=True, rounds=2, seed=0)
    assert fitted.mean.shape == (1, 1, 3)


@pytest.mark.parametrize("zoom_range", ["abc", [1, 2, 3], [1, "a"], None, {"a": 1},
                                        np.ones((2, 2))])
def test_generator_rejects_bad_zoom_range(zoom_range):
    with pytest.raises(ValueError, match="zoom_range"):
        image.ImageDataGenerator(zoom_range=zoom_range)


def test_generator_still_refuses_what_needs_pil_or_scipy():
    with pytest.raises(ValueError, match="fill_mode"):
        image.ImageDataGenerator(fill_mode="mirror")
    with pytest.raises(ValueError, match="interpolation_order"):
        image.ImageDataGenerator(interpolation_order=3)
    with pytest.raises(ValueError, match="brightness_range"):
        image.ImageDataGenerator(brightness_range=(0.5, 1.5))
    with pytest.raises(ValueError, match="zca_whitening"):
        image.ImageDataGenerator(zca_whitening=True)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        image.ImageDataGenerator(validation_split=1.0)   # (0.2 is supported: see
        # test_tf1_tutorial_programs' validation_split tests)


def _write_images(root):
    """Two classes of 8x6 PNGs (and a file that is not an image): cats dark, dogs bright."""
    from PIL import Image
    for name, value, count in (("cats", 20, 3), ("dogs", 230, 2)):
        os.makedirs(os.path.join(root, name, "sub"), exist_ok=True)
        for i in range(count):
            pixels = np.full((6, 8, 3), value + i, np.uint8)
            folder = os.path.join(root, name, "sub" if i == 0 else "")
            Image.fromarray(pixels).save(os.path.join(folder, "%s%d.png" % (name, i)))
    with open(os.path.join(root, "cats", "notes.txt"), "w") as f:
        f.write("not an image")


def test_flow_from_directory_reads_classes_in_keras_order(tmp_path):
    _write_images(str(tmp_path))
    gen = image.ImageDataGenerator(rescale=1 / 255.0)
    it = gen.flow_from_directory(str(tmp_path), target_size=(4, 5), batch_size=5,
                                 shuffle=False)
    assert it.class_indices == {"cats": 0, "dogs": 1} and it.samples == 5
    assert it.filenames == ["cats/cats1.png", "cats/cats2.png", "cats/sub/cats0.png",
                            "dogs/dogs1.png", "dogs/sub/dogs0.png"]
    assert it.classes.tolist() == [0, 0, 0, 1, 1] and len(it) == 1
    x, y = it[0]
    assert x.shape == (5, 4, 5, 3) and y.tolist() == [[1, 0]] * 3 + [[0, 1]] * 2
    np.testing.assert_allclose(x[:, 0, 0, 0], np.array([21, 22, 20, 231, 230]) / 255.0,
                               rtol=1e-6)
    gray = gen.flow_from_directory(str(tmp_path), target_size=(6, 8), color_mode="grayscale",
                                   class_mode="sparse", batch_size=2, shuffle=True, seed=1)
    xs, ys = gray[0]
    assert xs.shape == (2, 6, 8, 1) and ys.dtype == np.float32
    assert sorted(int(v) for v in gray.classes) == [0, 0, 0, 1, 1]
    # A Keras model trains on it (fit_generator over the DirectoryIterator).
    model = tf.keras.Sequential([tf.keras.layers.Flatten(input_shape=(4, 5, 3)),
                                 tf.keras.layers.Dense(2, activation="softmax")])
    model.compile("sgd", "categorical_crossentropy")
    history = model.fit_generator(it, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    with pytest.raises(ValueError, match="Invalid class_mode"):
        gen.flow_from_directory(str(tmp_path), class_mode="multi")
    with pytest.raises(ValueError, match="is not a directory"):
        gen.flow_from_directory(str(tmp_path / "nowhere"))


def test_load_img_img_to_array_array_to_img(tmp_path):
    _write_images(str(tmp_path))
    path = str(tmp_path / "dogs" / "dogs1.png")
    img = image.load_img(path, target_size=(3, 4))
    assert img.size == (4, 3)
    x = image.img_to_array(img)
    assert x.shape == (3, 4, 3) and x.dtype == np.float32 and (x == 231).all()
    assert image.img_to_array(image.load_img(path, color_mode="grayscale"),
                              data_format="channels_first").shape == (1, 6, 8)
    back = image.array_to_img(np.arange(12, dtype=np.float32).reshape(2, 2, 3))
    assert back.size == (2, 2) and np.asarray(back).max() == 255
    image.save_img(str(tmp_path / "out.png"), x)
    assert image.load_img(str(tmp_path / "out.png")).size == (4, 3)
    with pytest.raises(OSError, match="cannot read image"):
        image.load_img(str(tmp_path / "cats" / "notes.txt"))
