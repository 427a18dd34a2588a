"""tf.lgamma, tf.digamma, tf.polygamma, tf.cumprod (values and gradients against closed forms
and finite differences), tf.read_file / tf.write_file (tf.io.*: an input pipeline of PNG files,
writing, and the errors that name the file) and the segment max/min/prod kernels (scale, bad
ids, the product's gradient with zeros)."""
import math

import numpy as np
import pytest

import shardflow as tf

EULER_GAMMA = 0.5772156649015329


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_lgamma_digamma_polygamma_values():
    with tf.Graph().as_default():
        x = tf.constant([0.5, 1.0, 2.5, 7.0, -0.5], tf.float64)
        lg, dg, tg, pg2 = run([tf.lgamma(x), tf.digamma(x),
                               tf.polygamma(tf.constant(1.0, tf.float64), x),
                               tf.math.polygamma(tf.constant(2.0, tf.float64), x)])
    np.testing.assert_allclose(lg, [math.lgamma(v) for v in (0.5, 1.0, 2.5, 7.0, -0.5)],
                               rtol=1e-12)
    # digamma(1) = -gamma, digamma(1/2) = -gamma - 2 ln 2, digamma(x + 1) = digamma(x) + 1/x.
    assert dg[1] == pytest.approx(-EULER_GAMMA, abs=1e-13)
    assert dg[0] == pytest.approx(-EULER_GAMMA - 2 * math.log(2), abs=1e-13)
    assert dg[4] == pytest.approx(dg[0] + 2, abs=1e-12)  # psi(-1/2) = psi(1/2) + 2
    # trigamma(1) = pi^2 / 6, trigamma(1/2) = pi^2 / 2; polygamma(2, 1) = -2 zeta(3).
    assert tg[1] == pytest.approx(math.pi ** 2 / 6, abs=1e-12)
    assert tg[0] == pytest.approx(math.pi ** 2 / 2, abs=1e-12)
    assert pg2[1] == pytest.approx(-2 * 1.2020569031595942, abs=1e-12)
    with tf.Graph().as_default():
        poles = run([tf.digamma(tf.constant([0.0, -2.0])),
                     tf.polygamma(tf.constant([0.5, -1.0]), tf.constant([1.0, 1.0]))])
    assert np.isnan(poles[0]).all() and np.isnan(poles[1]).all()  # poles, bad orders


def finite_difference(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_values_and_gradient(exclusive, reverse):
    values = np.array([[0.5, 1.5, 2.0], [1.2, 0.7, 0.9]])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [2, 3])
        y = tf.cumprod(x, axis=1, exclusive=exclusive, reverse=reverse)
        loss = tf.reduce_sum(y * y)
        out, grad = run([y, tf.gradients(loss, x)[0]], {x: values})

    def reference(v):
        v = v[:, ::-1] if reverse else v
        c = np.cumprod(v, axis=1)
        if exclusive:
            c = np.concatenate([np.ones((v.shape[0], 1)), c[:, :-1]], axis=1)
        return c[:, ::-1] if reverse else c
    np.testing.assert_allclose(out, reference(values), rtol=1e-12)
    numeric = finite_difference(lambda f: np.sum(reference(f.reshape(2, 3)) ** 2),
                                values.reshape(-1)).reshape(2, 3)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)
    with tf.Graph().as_default():
        ints = run(tf.math.cumprod(tf.constant([[1, 2, 3], [4, 5, 6]]), axis=0))
    np.testing.assert_array_equal(ints, [[1, 2, 3], [4, 10, 18]])


def test_lgamma_and_digamma_gradients():
    values = np.array([0.7, 1.3, 3.0])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3])
        loss = tf.reduce_sum(tf.lgamma(x) * 2 + tf.digamma(x))
        grad = run(tf.gradients(loss, x)[0], {x: values})
        dg = run(tf.digamma(x), {x: values})
        tg = run(tf.polygamma(tf.constant(1.0, tf.float64), x), {x: values})
    np.testing.assert_allclose(grad, 2 * dg + tg, rtol=1e-12)
    numeric = finite_difference(lambda v: sum(2 * math.lgamma(a) for a in v), values)
    np.testing.assert_allclose(2 * dg, numeric, rtol=1e-6)


def write_png(path, array):
    from PIL import Image
    Image.fromarray(array).save(path)


def test_read_file_feeds_a_png_pipeline_and_write_file_writes(tmp_path):
    images = [np.full((4, 3), 10 * i, np.uint8) for i in range(3)]
    paths = []
    for i, img in enumerate(images):
        paths.append(str(tmp_path / ("img%d.png" % i)))
        write_png(paths[-1], img)
    with tf.Graph().as_default():
        files = tf.data.Dataset.from_tensor_slices(paths)
        decoded = files.map(lambda f: tf.image.decode_png(tf.io.read_file(f), channels=1))
        nxt = decoded.make_one_shot_iterator().get_next()
        out_path = str(tmp_path / "copy.png")
        copy = tf.write_file(out_path, tf.read_file(paths[1]))
        with tf.Session() as sess:
            got = [sess.run(nxt) for _ in range(3)]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(nxt)
            sess.run(copy)
    for g, want in zip(got, images):
        np.testing.assert_array_equal(g[:, :, 0], want)
    with open(out_path, "rb") as f, open(paths[1], "rb") as g:
        assert f.read() == g.read()


def test_read_and_write_file_errors_name_the_file(tmp_path):
    missing = str(tmp_path / "missing.bin")
    with tf.Graph().as_default():
        name = tf.placeholder(tf.string, [])
        contents = tf.read_file(name)
        bad_dir = tf.write_file(str(tmp_path / "no_dir" / "x.bin"), "data")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.NotFoundError, match="missing.bin"):
                sess.run(contents, {name: missing})
            with pytest.raises(tf.errors.NotFoundError, match="no_dir"):
                sess.run(bad_dir)
            # The session still serves after the errors.
            path = str(tmp_path / "ok.bin")
            with open(path, "wb") as f:
                f.write(b"\x00\xffabc")
            assert sess.run(contents, {name: path}) == b"\x00\xffabc"
        with pytest.raises(Exception, match="scalar"):
            with tf.Session() as sess:
                sess.run(tf.read_file(tf.constant([path, path])))


def test_segment_kernels_scale_and_name_bad_ids():
    # One pass over the data: 200,000 segments of 1,000,000 rows would be 2e11 elements by
    # masking; the kernels take the data's size.
    rng = np.random.RandomState(3)
    ids = rng.randint(0, 200000, size=1000000).astype(np.int32)
    data = rng.rand(1000000).astype(np.float32)
    with tf.Graph().as_default():
        i = tf.placeholder(tf.int32, [None])
        d = tf.placeholder(tf.float32, [None])
        top = tf.unsorted_segment_max(d, i, 200000)
        with tf.Session() as sess:
            got = sess.run(top, {i: ids, d: data})
            want = np.full(200000, np.finfo(np.float32).min, np.float32)
            np.maximum.at(want, ids, data)
            np.testing.assert_array_equal(got, want)
            lowest = tf.unsorted_segment_min(d, i, 5)
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"segment_ids\[1\] = 7"):
                sess.run(lowest, {i: [0, 7], d: [1.0, 2.0]})
            # A negative id drops its row, as TF1's (test_tf1_golden_api checks every reduction).
            np.testing.assert_array_equal(sess.run(lowest, {i: [0, -1], d: [1.0, 2.0]})[:1], [1])


def test_segment_prod_gradient_with_zeros():
    data = np.array([[0.0, 2.0], [3.0, 0.0], [4.0, 0.0], [5.0, 6.0]])
    ids = np.array([0, 0, 0, 1], np.int32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [4, 2])
        y = tf.unsorted_segment_prod(x, ids, 2)
        grad = run(tf.gradients(tf.reduce_sum(y), x)[0], {x: data})
    # Column 0 of segment 0 has one zero: its gradient is the others' product, the rest 0;
    # column 1 has two zeros: nothing flows. Segment 1 is one row: 1.
    np.testing.assert_allclose(grad, [[12, 0], [0, 0], [0, 0], [1, 1]])
