"""TF 1.15 fidelity of tf.image, the seeded random ops, tf.linalg's helpers and
tf.distributions: values a TF1 program computes, against hand-computed or NumPy references
(each test is a regression for a difference that was found)."""
import math

import numpy as np
import pytest

import shardflow as tf


def run(*fetches, feed=None):
    with tf.Session() as sess:
        out = sess.run(list(fetches), feed)
    return out[0] if len(out) == 1 else out


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


# ---- matrix helpers: an inf or NaN outside the band or diagonal stays out (TF's kernels copy
# or zero entries; they do not multiply by a 0/1 mask) ---------------------------------------

def test_band_part_diag_part_diag_trace_ignore_inf_and_nan_off_the_band():
    m = np.array([[1.0, np.inf], [-np.inf, 2.0]], np.float32)
    nan = np.array([[1.0, np.nan], [3.0, 2.0]], np.float32)
    band, diag_part, trace, diag, lower = run(
        tf.matrix_band_part(m, 0, 0), tf.matrix_diag_part(m), tf.trace(nan),
        tf.matrix_diag(tf.constant([1.0, np.inf])), tf.linalg.band_part(nan, -1, 0))
    np.testing.assert_array_equal(band, [[1, 0], [0, 2]])
    np.testing.assert_array_equal(diag_part, [1, 2])
    assert trace == 3.0
    np.testing.assert_array_equal(diag, [[1, 0], [0, np.inf]])
    np.testing.assert_array_equal(lower, [[1, 0], [3, 2]])


def test_matrix_diag_and_diag_part_keep_shapes_and_gradients():
    d = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    md, dp = tf.matrix_diag(d), tf.matrix_diag_part(x)
    assert md.shape.as_list() == [2, 3, 3] and dp.shape.as_list() == [3]
    g_d, g_x = tf.gradients(tf.reduce_sum(md * 2.0) + tf.reduce_sum(dp * 3.0), [d, x])
    vals = run(md, dp, g_d, g_x)
    np.testing.assert_array_equal(vals[0][1], np.diag([4, 5, 6]))
    np.testing.assert_array_equal(vals[1], [0, 5, 10])
    np.testing.assert_array_equal(vals[2], np.full([2, 3], 2.0))
    np.testing.assert_array_equal(vals[3], 3.0 * np.eye(3, 4))


# ---- random_shuffle: a seed repeats its sequence in every session, as TF's kernel ------------

def test_random_shuffle_with_a_seed_repeats_across_sessions():
    tf.set_random_seed(3)
    graph_seeded = tf.random_shuffle(tf.range(10))
    op_seeded = tf.random_shuffle(tf.constant([[1, 2], [3, 4], [5, 6], [7, 8]]), seed=5)
    seqs = []
    for _ in range(2):
        with tf.Session() as sess:
            seqs.append([sess.run([graph_seeded, op_seeded]) for _ in range(3)])
    for (a1, b1), (a2, b2) in zip(*seqs):
        np.testing.assert_array_equal(a1, a2)
        np.testing.assert_array_equal(b1, b2)
    firsts = [tuple(a) for a, _ in seqs[0]]
    assert len(set(firsts)) > 1                       # each run draws a new order
    for a, b in seqs[0]:
        np.testing.assert_array_equal(np.sort(a), np.arange(10))
        np.testing.assert_array_equal(sorted(b.tolist()), [[1, 2], [3, 4], [5, 6], [7, 8]])


def test_random_shuffle_dynamic_rows_strings_scalars():
    p = tf.placeholder(tf.float32, [None, 2])
    r = tf.random_shuffle(p, seed=1)
    assert r.shape.as_list() == [None, 2]
    rows, strings, scalar, empty = run(
        r, tf.random_shuffle(tf.constant([b"a", b"b", b"c"])), tf.random_shuffle(5.0),
        tf.random_shuffle(tf.zeros([0, 3])), feed={p: np.arange(10.0).reshape(5, 2)})
    np.testing.assert_array_equal(rows[np.argsort(rows[:, 0])], np.arange(10.0).reshape(5, 2))
    assert sorted(strings.tolist()) == [b"a", b"b", b"c"]
    assert scalar == 5.0 and empty.shape == (0, 3)


# ---- resize_images --------------------------------------------------------------------------

def test_resize_images_to_the_same_size_returns_the_images_dtype_kept():
    img = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    same = tf.image.resize_images(img, [4, 4])
    batch = tf.image.resize(tf.constant(img[None]), tf.constant([4, 4]), align_corners=True)
    other = tf.image.resize_images(img, [2, 2])
    assert same.dtype == tf.uint8 and batch.dtype == tf.uint8 and other.dtype == tf.float32
    got_same, got_batch = run(same, batch)
    np.testing.assert_array_equal(got_same, img)
    np.testing.assert_array_equal(got_batch, img[None])


def test_resize_images_preserve_aspect_ratio_rounds_in_float32_half_to_even():
    # 7 * float32(29 / 14) is exactly 14.5 in float32: TF rounds it to 14 (float64 gives 15).
    out = tf.image.resize_images(tf.zeros([7, 14, 1]), [29, 29], preserve_aspect_ratio=True)
    assert out.shape.as_list() == [14, 29, 1]
    out = tf.image.resize_images(tf.zeros([2, 10, 15, 1]), [21, 43], preserve_aspect_ratio=True)
    assert out.shape.as_list() == [2, 21, 31, 1]
    assert run(out).shape == (2, 21, 31, 1)


# ---- sample_distorted_bounding_box: TF's kernel's crop distribution, seeded per session ------

def test_sample_distorted_bounding_box_draws_heights_uniformly_as_tf():
    # Inception preprocessing's call. TF draws the crop's height uniformly between the least
    # and the most the area range allows (the area is not uniform): the mean area fraction is
    # E[u^2], u ~ U[sqrt(0.05), 1], about 0.425 (a uniform area would give 0.525).
    tf.set_random_seed(7)
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        [224, 224, 3], tf.zeros([1, 0, 4]), min_object_covered=0.1,
        aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0), max_attempts=100,
        use_image_if_no_bounding_boxes=True)
    with tf.Session() as sess:
        draws = [sess.run([begin, size]) for _ in range(600)]
    areas = np.array([s[0] * s[1] for _, s in draws]) / 224.0 ** 2
    assert 0.39 < areas.mean() < 0.46
    for b, s in draws:   # TF's offsets are drawn in [0, 224 - size): never at the far edge
        assert (b[0] + s[0] < 224 or s[0] == 224) and (b[1] + s[1] < 224 or s[1] == 224)


def test_sample_distorted_bounding_box_seeded_repeats_and_none_defaults():
    bbox = np.array([[[0.2, 0.3, 0.6, 0.8]]], np.float32)
    begin, size, boxes = tf.image.sample_distorted_bounding_box(
        [40, 60, 3], bbox, seed=3, min_object_covered=0.5, area_range=(0.2, 1.0))
    runs = []
    for _ in range(2):
        with tf.Session() as sess:
            runs.append([sess.run([begin, size, boxes]) for _ in range(3)])
    for a, b in zip(*runs):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    # TF1's wrapper passes None on as the kernel's defaults.
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        [10, 10, 3], bbox, aspect_ratio_range=None, area_range=None, max_attempts=None,
        use_image_if_no_bounding_boxes=None)
    b, s = run(begin, size)
    assert b[2] == 0 and s[2] == -1 and b[0] + s[0] <= 10 and b[1] + s[1] <= 10


# ---- linalg ---------------------------------------------------------------------------------

def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


def test_self_adjoint_eig_and_eigvalsh_have_tf1s_gradient():
    # TF1 registers one (SelfAdjointEigV2): it lands on the lower triangle the op reads.
    rs = np.random.RandomState(1)
    m = rs.randn(3, 3)
    a0 = np.tril(m @ m.T + 3 * np.eye(3)) + np.triu(rs.randn(3, 3), 1)   # upper ignored
    w = rs.randn(3, 3)
    a = tf.constant(a0)
    e, v = tf.self_adjoint_eig(a)
    loss = tf.reduce_sum(e * w[0]) + tf.reduce_sum(tf.abs(v) * w)
    g_eig = tf.gradients(loss, a)[0]
    g_vals = tf.gradients(tf.reduce_sum(tf.linalg.eigvalsh(a) ** 2), a)[0]
    got_eig, got_vals = run(g_eig, g_vals)

    def ref_loss(x):
        ev, vv = np.linalg.eigh(x, UPLO="L")
        return np.sum(ev * w[0]) + np.sum(np.abs(vv) * w)
    np.testing.assert_allclose(got_eig, _numeric_grad(ref_loss, a0), atol=1e-5)
    np.testing.assert_allclose(
        got_vals, _numeric_grad(lambda x: np.sum(np.linalg.eigvalsh(x, UPLO="L") ** 2), a0),
        atol=1e-5)


def test_cholesky_solve():
    rs = np.random.RandomState(2)
    m = rs.randn(2, 4, 4).astype(np.float32)
    spd = m @ m.transpose(0, 2, 1) + 4 * np.eye(4, dtype=np.float32)
    rhs = rs.randn(2, 4, 3).astype(np.float32)
    x = tf.cholesky_solve(tf.cholesky(spd), rhs)
    np.testing.assert_allclose(run(x), np.linalg.solve(spd, rhs), rtol=1e-4, atol=1e-5)


# ---- tf.distributions -----------------------------------------------------------------------

def _digamma(x, h=1e-5):
    return (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)


def _lbeta(*a):
    return sum(math.lgamma(v) for v in a) - math.lgamma(sum(a))


def test_log_prob_takes_float64_numpy_data_as_the_distributions_dtype():
    # TF1 converts values with preferred_dtype=self.dtype: float64 NumPy data (a feed's usual
    # type) works with a float32 distribution; here it raised 'expects float but is double'.
    d = tf.distributions.Normal(0.0, 1.0)
    x = np.array([0.5, -1.0])
    lp = d.log_prob(x)
    assert lp.dtype == tf.float32
    np.testing.assert_allclose(run(lp), -0.5 * x ** 2 - 0.5 * math.log(2 * math.pi), rtol=1e-6)


def test_normal_cdf_tails_log_cdf_survival_and_quantile_as_tf_special_math():
    n = tf.distributions.Normal(0.0, 1.0)
    z = np.array([-12.0, -7.0, 0.0, 7.0], np.float32)
    cdf, log_cdf, sf, log_sf, q = run(n.cdf(z), n.log_cdf(z), n.survival_function(z),
                                      n.log_survival_function(z), n.quantile([0.025, 0.5]))
    ndtr = [0.5 * math.erfc(-v / math.sqrt(2)) for v in z.astype(float)]
    # 0.5 * (1 + erf(z / sqrt(2))) is 0 at z = -7 in float32; TF's ndtr uses erfc there.
    np.testing.assert_allclose(cdf, ndtr, rtol=1e-5, atol=0)
    upper = [0.5 * math.erfc(v / math.sqrt(2)) for v in z.astype(float)]
    np.testing.assert_allclose(sf, upper, rtol=1e-5, atol=0)
    np.testing.assert_allclose(log_cdf[1:], np.log(ndtr[1:]), rtol=1e-4)
    assert abs(log_cdf[0] - (-72.0 - math.log(12.0) - 0.5 * math.log(2 * math.pi)
                             + math.log(1 - 1 / 144.0 + 3 / 144.0 ** 2))) < 1e-3
    np.testing.assert_allclose(log_sf, np.log(upper), rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(q, [-1.959964, 0.0], atol=1e-5)


def test_gamma_exponential_beta_dirichlet_laplace_against_closed_forms():
    tfd = tf.distributions
    g = tfd.Gamma(concentration=[2.0, 0.5], rate=[3.0, 1.5])
    e = tfd.Exponential(rate=[0.5, 2.0])
    b = tfd.Beta(concentration1=[2.0, 0.5], concentration0=[3.0, 0.5])
    d = tfd.Dirichlet([[1.0, 2.0, 3.0], [0.5, 0.5, 2.0]])
    lap = tfd.Laplace(loc=[0.0, 1.0], scale=[1.0, 2.0])
    x = np.array([0.2, 0.3, 0.5])
    got = run(g.log_prob([0.7, 1.3]), g.entropy(), tfd.kl_divergence(g, tfd.Gamma(1.5, 2.0)),
              e.log_prob([1.0, 1.0]), e.cdf([1.0, 1.0]), b.log_prob([0.3, 0.9]), b.entropy(),
              b.mode(), tfd.kl_divergence(b, tfd.Beta(1.0, 1.0)), d.log_prob(x), d.entropy(),
              tfd.kl_divergence(d, tfd.Dirichlet([1.0, 1.0, 1.0])), lap.log_prob([0.5, -1.0]),
              lap.cdf([0.5, -1.0]), lap.entropy())
    c, r = [2.0, 0.5], [3.0, 1.5]
    want_g = [(cc - 1) * math.log(xx) - rr * xx + cc * math.log(rr) - math.lgamma(cc)
              for cc, rr, xx in zip(c, r, [0.7, 1.3])]
    np.testing.assert_allclose(got[0], want_g, rtol=1e-5)
    np.testing.assert_allclose(got[1], [cc - math.log(rr) + math.lgamma(cc) +
                                        (1 - cc) * _digamma(cc) for cc, rr in zip(c, r)],
                               rtol=1e-4)
    np.testing.assert_allclose(got[2], [(cc - 1.5) * _digamma(cc) + math.lgamma(1.5) -
                                        math.lgamma(cc) + 1.5 * math.log(rr / 2.0) +
                                        cc * (2.0 / rr - 1) for cc, rr in zip(c, r)],
                               rtol=1e-4)
    np.testing.assert_allclose(got[3], np.log([0.5, 2.0]) - [0.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(got[4], 1 - np.exp([-0.5, -2.0]), rtol=1e-6)
    a1, a0 = [2.0, 0.5], [3.0, 0.5]
    np.testing.assert_allclose(got[5], [(p - 1) * math.log(v) + (q - 1) * math.log(1 - v) -
                                        _lbeta(p, q) for p, q, v in zip(a1, a0, [0.3, 0.9])],
                               rtol=1e-5)
    want_ent = [_lbeta(p, q) - (p - 1) * _digamma(p) - (q - 1) * _digamma(q) +
                (p + q - 2) * _digamma(p + q) for p, q in zip(a1, a0)]
    np.testing.assert_allclose(got[6], want_ent, rtol=1e-4, atol=1e-5)
    assert got[7][0] == pytest.approx(1 / 3.0) and np.isnan(got[7][1])
    np.testing.assert_allclose(got[8], -np.array(want_ent), rtol=1e-4, atol=1e-5)
    al = [[1.0, 2.0, 3.0], [0.5, 0.5, 2.0]]
    np.testing.assert_allclose(got[9], [np.sum((np.array(a) - 1) * np.log(x)) - _lbeta(*a)
                                        for a in al], rtol=1e-5)
    want_dent = [_lbeta(*a) + (sum(a) - 3) * _digamma(sum(a)) -
                 sum((v - 1) * _digamma(v) for v in a) for a in al]
    np.testing.assert_allclose(got[10], want_dent, rtol=1e-4)
    # The flat Dirichlet's density is Gamma(3) = 2: KL(d || flat) = -H(d) - log 2.
    np.testing.assert_allclose(got[11], -np.array(want_dent) - math.log(2.0), rtol=1e-4)
    np.testing.assert_allclose(got[12], [-math.log(2) - 0.5, -math.log(4) - 1], rtol=1e-6)
    np.testing.assert_allclose(got[13], [1 - 0.5 * math.exp(-0.5), 0.5 * math.exp(-1)],
                               rtol=1e-6)
    np.testing.assert_allclose(got[14], [math.log(2) + 1, math.log(4) + 1], rtol=1e-6)
    assert d.batch_shape.as_list() == [2] and d.event_shape.as_list() == [3]
    samples = run(g.sample(20000, seed=1), b.sample(20000, seed=2), d.sample(20000, seed=3),
                  lap.sample(20000, seed=4), e.sample(20000, seed=5))
    np.testing.assert_allclose(samples[0].mean(0), np.divide(c, r), rtol=0.05)
    np.testing.assert_allclose(samples[1].mean(0), [0.4, 0.5], atol=0.01)
    np.testing.assert_allclose(samples[2].mean(0), np.array(al) / np.sum(al, 1, keepdims=True),
                               atol=0.01)
    np.testing.assert_allclose(samples[3].var(0), [2.0, 8.0], rtol=0.1)
    np.testing.assert_allclose(samples[4].mean(0), [2.0, 0.5], rtol=0.05)


def test_distribution_methods_tf1_programs_call():
    tfd = tf.distributions
    n, m = tfd.Normal(0.0, 1.0), tfd.Normal(1.0, 2.0)
    assert n.reparameterization_type == tfd.FULLY_REPARAMETERIZED
    assert tfd.Bernoulli(probs=0.3).reparameterization_type == tfd.NOT_REPARAMETERIZED
    mvn = tf.contrib.distributions.MultivariateNormalDiag(loc=[[0.0, 1.0]], scale_diag=[1.0, 2.0])
    assert mvn.reparameterization_type == tfd.FULLY_REPARAMETERIZED

    @tfd.RegisterKL(tfd.Uniform, tfd.Uniform)
    def _kl_uniform(a, b, name=None):
        return tf.log((b.high - b.low) / (a.high - a.low))
    try:
        kl, ce, cov, event, kl_u = run(
            n.kl_divergence(m), n.cross_entropy(m), mvn.covariance(), mvn.event_shape_tensor(),
            tfd.kl_divergence(tfd.Uniform(0.0, 1.0), tfd.Uniform(0.0, 2.0)))
    finally:
        from shardflow import distributions
        del distributions._KL[(tfd.Uniform, tfd.Uniform)]
    assert kl == pytest.approx(math.log(2.0) + 2 / 8.0 - 0.5, rel=1e-5)
    assert ce == pytest.approx(0.5 * math.log(2 * math.pi * 4) + 2 / 8.0, rel=1e-5)
    np.testing.assert_allclose(cov, [[[1.0, 0.0], [0.0, 4.0]]])
    np.testing.assert_array_equal(event, [2])
    assert kl_u == pytest.approx(math.log(2.0))
    assert n.is_scalar_batch() and n.is_scalar_event() and not mvn.is_scalar_event()


# ---- extract_glimpse (was missing) ----------------------------------------------------------

def test_extract_glimpse_windows_as_tf1s_kernel():
    img = np.arange(2 * 6 * 8, dtype=np.float32).reshape(2, 6, 8, 1)
    # Centred, normalized (the defaults): (0, 0) is the centre; the window's corner is
    # (6/2 - 3/2, 8/2 - 4/2) = (1.5, 2) -> (1, 2). (0.5, -0.5): (4.5 - 1.5, 2 - 2) = (3, 0).
    centred = tf.image.extract_glimpse(img, [3, 4], [[0.0, 0.0], [0.5, -0.5]])
    # Pixel offsets from the top-left corner, less half the glimpse as well: (1, 2) is the
    # window at (0, 1); (6, 8) at (5, 7) runs off the image: zeros with noise='zero'.
    corner = tf.image.extract_glimpse(img, [2, 2], [[1.0, 2.0], [6.0, 8.0]], centered=False,
                                      normalized=False, noise="zero")
    noisy = tf.image.extract_glimpse(img, [2, 2], [[6.0, 8.0], [6.0, 8.0]], centered=False,
                                     normalized=False)
    assert centred.shape.as_list() == [2, 3, 4, 1]
    a, b, c = run(centred, corner, noisy)
    np.testing.assert_array_equal(a[0], img[0, 1:4, 2:6])
    np.testing.assert_array_equal(a[1], img[1, 3:6, 0:4])
    np.testing.assert_array_equal(b[0], img[0, 0:2, 1:3])
    np.testing.assert_array_equal(b[1, :, :, 0], [[img[1, 5, 7, 0], 0.0], [0.0, 0.0]])
    assert c[0, 0, 0, 0] == img[0, 5, 7, 0]
    off = c[0].reshape(-1)[1:]          # uniform noise between the image's min and max
    assert off.min() >= img[0].min() and off.max() <= img[0].max()


# ---- TF1's other non-max suppressions (were missing) ----------------------------------------

_BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                   [0, 10.1, 1, 11.1], [0, 100, 1, 101]], np.float32)
_SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)


def test_non_max_suppression_padded_with_scores_and_overlaps():
    picks, valid = tf.image.non_max_suppression_padded(_BOXES, _SCORES, 5, 0.5,
                                                       pad_to_max_output_size=True)
    assert picks.shape.as_list() == [5]
    soft_picks, soft_scores = tf.image.non_max_suppression_with_scores(
        _BOXES, _SCORES, 6, 1.0, soft_nms_sigma=0.5)
    overlaps = np.array([[1, 0.7, 0], [0.7, 1, 0.2], [0, 0.2, 1]], np.float32)
    by_overlap = tf.image.non_max_suppression_overlaps(overlaps, [0.9, 0.8, 0.7], 3, 0.5)
    got = run(picks, valid, soft_picks, soft_scores, by_overlap)
    np.testing.assert_array_equal(got[0], [3, 0, 5, 0, 0])
    assert got[1] == 3
    # Soft-NMS: a score decays by exp(-0.5 iou^2 / sigma) for each pick it overlaps.
    iou01, iou12 = 0.9 / 1.1, 0.8 / 1.2
    np.testing.assert_array_equal(got[2], [3, 0, 1, 5, 4, 2])
    np.testing.assert_allclose(got[3], [0.95, 0.9, 0.75 * np.exp(-iou01 ** 2), 0.3,
                                        0.5 * np.exp(-iou01 ** 2),
                                        0.6 * np.exp(-iou01 ** 2) * np.exp(-iou12 ** 2)],
                               rtol=1e-5)
    np.testing.assert_array_equal(got[4], [0, 2])


def test_combined_non_max_suppression():
    boxes = np.array([[[[0, 0, 1, 1]], [[0, 0.1, 1, 1.1]], [[0, 0.5, 1, 1.5]],
                       [[-0.2, 0, 0.5, 0.5]]]], np.float32)                  # [1, 4, 1, 4]
    scores = np.array([[[0.9, 0.1], [0.8, 0.7], [0.3, 0.85], [0.6, 0.2]]], np.float32)
    out = tf.image.combined_non_max_suppression(boxes, scores, 2, 5, 0.5, 0.15)
    assert [o.shape.as_list() for o in out] == [[1, 5, 4], [1, 5], [1, 5], [1]]
    nmsed_boxes, nmsed_scores, classes, valid = run(*out)
    np.testing.assert_allclose(nmsed_scores, [[0.9, 0.85, 0.7, 0.6, 0.0]])
    np.testing.assert_array_equal(classes, [[0, 1, 1, 0, 0]])
    np.testing.assert_allclose(nmsed_boxes[0], [[0, 0, 1, 1], [0, 0.5, 1, 1], [0, 0.1, 1, 1],
                                                [0, 0, 0.5, 0.5], [0, 0, 0, 0]])   # clipped
    assert valid.tolist() == [4]
    padded = tf.image.combined_non_max_suppression(boxes, scores, 1, 5, 0.5, pad_per_class=True)
    assert padded[1].shape.as_list() == [1, 2]


# ---- codecs TF1 preprocessing reaches (were missing) ----------------------------------------

def _encoded(arr, fmt, mode=None, **options):
    import io
    from PIL import Image
    buf = io.BytesIO()
    img = Image.fromarray(arr)
    (img.convert(mode) if mode else img).save(buf, format=fmt, **options)
    return buf.getvalue()


def test_decode_and_crop_jpeg_shape_is_jpeg_bmp_gif_and_gray_alpha_png():
    pytest.importorskip("PIL")
    from PIL import Image
    import io
    img = (np.random.RandomState(0).rand(12, 10, 3) * 255).astype(np.uint8)
    jpg, png, bmp = _encoded(img, "JPEG", quality=95), _encoded(img, "PNG"), _encoded(img, "BMP")
    gray_alpha = _encoded(img[..., 0], "PNG", mode="LA")
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="GIF", save_all=True,
                              append_images=[Image.fromarray(255 - img)])
    full, crop, shape, yes, no, bmp_img, gif, la = run(
        tf.image.decode_jpeg(jpg), tf.image.decode_and_crop_jpeg(jpg, [2, 3, 5, 4]),
        tf.image.extract_jpeg_shape(jpg), tf.image.is_jpeg(jpg), tf.image.is_jpeg(png),
        tf.image.decode_bmp(bmp), tf.image.decode_gif(buf.getvalue()),
        tf.image.decode_png(gray_alpha))
    np.testing.assert_array_equal(crop, full[2:7, 3:7])
    np.testing.assert_array_equal(shape, [12, 10, 3])
    assert yes and not no
    np.testing.assert_array_equal(bmp_img, img)
    assert gif.shape == (2, 12, 10, 3)
    assert la.shape == (12, 10, 2)       # TF's channels=0: the file's 2 (gray, alpha)
    with pytest.raises(tf.errors.InvalidArgumentError, match="crop window"):
        run(tf.image.decode_and_crop_jpeg(jpg, [10, 3, 5, 4]))


def test_dirichlet_mode_and_variance():
    d = tf.distributions.Dirichlet([[1.5, 2.0, 3.0], [0.5, 2.0, 2.0]])
    mode, var = run(d.mode(), d.variance())
    np.testing.assert_allclose(mode[0], np.array([0.5, 1.0, 2.0]) / 3.5, rtol=1e-6)
    assert np.isnan(mode[1]).all()
    a = np.array([[1.5, 2.0, 3.0], [0.5, 2.0, 2.0]])
    a0 = a.sum(1, keepdims=True)
    np.testing.assert_allclose(var, a * (a0 - a) / (a0 ** 2 * (a0 + 1)), rtol=1e-5)


def test_distribution_shapes_uniform_cdf_and_not_implemented_methods():
    tfd = tf.distributions
    cat = tfd.Categorical(logits=[[0.0, 1.0], [1.0, 0.0]])
    ind = tf.contrib.distributions.Independent(tfd.Bernoulli(probs=[[0.3, 0.6]]), 1)
    cat_batch, ind_batch, ind_event, ucdf = run(
        cat.batch_shape_tensor(), ind.batch_shape_tensor(), ind.event_shape_tensor(),
        tfd.Uniform(1.0, 3.0).cdf([0.0, 2.0, 4.0]))
    np.testing.assert_array_equal(cat_batch, [2])
    np.testing.assert_array_equal(ind_batch, [1])     # was [1, 2]: the base's whole shape
    np.testing.assert_array_equal(ind_event, [2])
    np.testing.assert_allclose(ucdf, [0.0, 0.5, 1.0])
    # TF1 raises NotImplementedError naming the method and the class (not AttributeError).
    for call in (lambda: tfd.Bernoulli(probs=0.3).cdf(1), lambda: tfd.Normal(0.0, 1.0).covariance(),
                 lambda: tfd.Uniform().mode(), lambda: tfd.Dirichlet([1.0, 2.0]).cdf([0.3, 0.7])):
        with pytest.raises(NotImplementedError, match="is not implemented"):
            call()


# ---- colour spaces and MS-SSIM (were missing) -----------------------------------------------

def test_yiq_and_yuv_as_tf1s_matrices():
    x = np.array([[[1.0, 2.0, 3.0]]], np.float32)
    yiq, yuv, rgb = run(tf.image.rgb_to_yiq(x), tf.image.rgb_to_yuv(x),
                        tf.image.yuv_to_rgb(tf.image.rgb_to_yuv(x)))
    np.testing.assert_allclose(yiq, [[[1.815, -0.91724455, 0.09962624]]], rtol=1e-6)  # TF's doc
    np.testing.assert_allclose(yuv, [[[1.815, 0.5831516, -0.7149856]]], rtol=1e-5)
    np.testing.assert_allclose(rgb, x, rtol=1e-5)


def _np_ssim_terms(a, b, max_val=1.0):
    """NumPy SSIM and cs per image and channel: 11x11 Gaussian (sigma 1.5) VALID windows."""
    g = np.exp(-0.5 * (np.arange(11) - 5.0) ** 2 / 1.5 ** 2)
    w = np.outer(g, g) / np.outer(g, g).sum()

    def filt(x):                       # [n, h, w, c] -> [n, h - 10, w - 10, c]
        win = np.lib.stride_tricks.sliding_window_view(x, (11, 11), axis=(1, 2))
        return np.einsum("nhwcij,ij->nhwc", win, w)
    c1, c2 = (0.01 * max_val) ** 2, (0.03 * max_val) ** 2
    ma, mb = filt(a), filt(b)
    lum = (2 * ma * mb + c1) / (ma ** 2 + mb ** 2 + c1)
    cs = (2 * (filt(a * b) - ma * mb) + c2) / (filt(a * a) - ma ** 2 + filt(b * b) - mb ** 2 + c2)
    return (lum * cs).mean((1, 2)), cs.mean((1, 2))


def test_ssim_multiscale_against_numpy():
    rs = np.random.RandomState(3)
    a = rs.rand(2, 177, 181, 2).astype(np.float64)          # odd sizes: mirrored padding
    b = np.clip(a + 0.1 * rs.randn(*a.shape), 0, 1)
    weights = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)
    terms, x, y = [], a, b
    for k in range(5):
        if k:
            x, y = (np.pad(t, [[0, 0], [0, t.shape[1] % 2], [0, t.shape[2] % 2], [0, 0]],
                           mode="symmetric") for t in (x, y))
            x, y = (t.reshape(t.shape[0], t.shape[1] // 2, 2, t.shape[2] // 2, 2,
                              t.shape[3]).mean((2, 4)) for t in (x, y))
        s, cs = _np_ssim_terms(x, y)
        terms.append(np.maximum(cs if k < 4 else s, 0))
    want = np.prod(np.stack(terms, -1) ** np.array(weights), -1).mean(-1)
    got, same = run(tf.image.ssim_multiscale(a.astype(np.float32), b.astype(np.float32), 1.0),
                    tf.image.ssim_multiscale(a.astype(np.float32), a.astype(np.float32), 1.0))
    np.testing.assert_allclose(got, want, rtol=1e-4)
    np.testing.assert_allclose(same, [1.0, 1.0], rtol=1e-5)


def test_svd_and_qr_have_tf1s_gradients():
    # TF1 registers gradients for Svd and Qr; tf.gradients raised 'has no gradient' here.
    rs = np.random.RandomState(5)
    cases = []
    for shape, full in (((4, 3), False), ((3, 5), False), ((4, 3), True), ((3, 3), True)):
        x0 = rs.randn(*shape)
        m, n = shape
        k = min(m, n)
        w_s, w_u, w_v = rs.randn(k), rs.randn(m, m), rs.randn(n, n)
        a = tf.constant(x0)
        s, u, v = tf.svd(a, full_matrices=full)
        # Sign-free functions of the factors: the singular values and the projectors u u^T,
        # v v^T onto the leading singular vectors.
        uk, vk = u[:, :k], v[:, :k]
        loss = (tf.reduce_sum(s * w_s) + tf.reduce_sum(tf.matmul(uk, uk, transpose_b=True) * w_u) +
                tf.reduce_sum(tf.matmul(vk, vk, transpose_b=True) * w_v))

        def ref(x, full=full, k=k, w_s=w_s, w_u=w_u, w_v=w_v):
            uu, ss, vh = np.linalg.svd(x, full_matrices=full)
            vv = vh.T
            return (np.sum(ss * w_s) + np.sum(uu[:, :k] @ uu[:, :k].T * w_u) +
                    np.sum(vv[:, :k] @ vv[:, :k].T * w_v))
        cases.append((tf.gradients(loss, a)[0], ref, x0))
    x0 = rs.randn(5, 3)
    w_q, w_r = rs.randn(5, 3), rs.randn(3, 3)
    a = tf.constant(x0)
    q, r = tf.qr(a)
    cases.append((tf.gradients(tf.reduce_sum(q * w_q) + tf.reduce_sum(r * w_r), a)[0],
                  lambda x: np.sum(np.linalg.qr(x)[0] * w_q) + np.sum(np.linalg.qr(x)[1] * w_r),
                  x0))
    x1 = rs.randn(4, 3)
    a1 = tf.constant(x1)
    cases.append((tf.gradients(tf.reduce_sum(tf.svd(a1, compute_uv=False) ** 2), a1)[0],
                  lambda x: np.sum(np.linalg.svd(x, compute_uv=False) ** 2), x1))
    got = run(*[c[0] for c in cases])
    for g, (_, ref, x) in zip(got, cases):
        np.testing.assert_allclose(g, _numeric_grad(ref, x), atol=1e-5)


def test_adjust_and_random_jpeg_quality():
    pytest.importorskip("PIL")
    import io
    from PIL import Image
    img = (np.random.RandomState(0).rand(16, 16, 3) * 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=30)
    want = np.asarray(Image.open(io.BytesIO(buf.getvalue())))
    as_float = tf.image.adjust_jpeg_quality(tf.image.convert_image_dtype(img, tf.float32), 30)
    randomized = tf.image.random_jpeg_quality(img, 10, 90, seed=3)
    assert as_float.dtype == tf.float32 and randomized.shape.as_list() == [16, 16, 3]
    got, got_float, _ = run(tf.image.adjust_jpeg_quality(img, 30), as_float, randomized)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got_float, want / 255.0, atol=1e-6)
    with pytest.raises(ValueError, match="less than"):
        tf.image.random_jpeg_quality(img, 50, 50)


def test_rot90_takes_a_tensor_k_as_tf1():
    # Random rotation augmentation: tf.image.rot90(image, tf.random_uniform([], 0, 4, tf.int32))
    # raised TypeError (int() of a Tensor).
    x = np.arange(4 * 5 * 2, dtype=np.float32).reshape(4, 5, 2)
    k = tf.placeholder(tf.int32, [])
    one, batch = tf.image.rot90(x, k), tf.image.rot90(np.stack([x, x]), k)
    assert one.shape.as_list() == [None, None, 2] and batch.shape.as_list() == [2, None, None, 2]
    assert tf.image.rot90(tf.zeros([3, 3, 1]), k).shape.as_list() == [3, 3, 1]
    with tf.Session() as sess:
        for turns in (-1, 0, 1, 2, 3, 5):
            a, b = sess.run([one, batch], {k: turns})
            np.testing.assert_array_equal(a, np.rot90(x, turns, (0, 1)))
            np.testing.assert_array_equal(b[1], np.rot90(x, turns, (0, 1)))


def test_sample_shape_may_be_a_tensor():
    # dist.sample(tf.shape(x)[0]) raised TypeError (int() of a Tensor); TF1 takes it.
    tfd = tf.distributions
    x = tf.placeholder(tf.float32, [None, 3])
    n = tf.shape(x)[0]
    normal = tfd.Normal([0.0, 1.0], [1.0, 2.0]).sample(n, seed=1)
    gamma = tfd.Gamma([2.0, 3.0], [1.0, 2.0]).sample([n, 2])
    cat = tfd.Categorical(logits=np.log([[0.2, 0.3, 0.5]]).astype(np.float32))
    draws = cat.sample(n * 4000, seed=2)
    a, b, c = run(normal, gamma, draws, feed={x: np.zeros([5, 3])})
    assert normal.shape.as_list() == [None, 2]
    assert a.shape == (5, 2) and b.shape == (5, 2, 2) and c.shape == (20000, 1)
    np.testing.assert_allclose(np.bincount(c[:, 0], minlength=3) / 20000.0, [0.2, 0.3, 0.5],
                               atol=0.02)


def test_resize_image_with_pad_on_a_decoded_size_image():
    # A decoded JPEG's height and width are known only when the step runs: letterboxing it
    # raised 'needs the image's height and width known' here; TF1 computes the fit in the graph.
    img = np.random.RandomState(6).rand(17, 9, 3).astype(np.float32)
    p = tf.placeholder(tf.float32, [None, None, 3])
    dynamic = tf.image.resize_image_with_pad(p, 32, 32)
    tensor_targets = tf.image.resize_image_with_pad(p, tf.constant(32), tf.constant(32))
    static = tf.image.resize_image_with_pad(tf.constant(img), 32, 32)
    assert dynamic.shape.as_list() == [32, 32, 3]
    a, b, c = run(dynamic, tensor_targets, static, feed={p: img})
    np.testing.assert_allclose(a, c, atol=1e-6)
    np.testing.assert_allclose(b, c, atol=1e-6)
    # ratio 17/32: resized to 32 x floor(9 * 32 / 17) = 16, padded left by floor(15.06 / 2) = 7.
    cols = np.nonzero(np.abs(a).sum(axis=(0, 2)))[0]
    assert cols.min() == 7 and cols.max() == 22


def test_resize_bicubic_with_sizes_known_only_at_run_time():
    # EfficientNet-style preprocessing: tf.image.resize(crop, [s, s], method=BICUBIC) of a crop
    # whose size the graph does not know raised 'size must be known when the graph is built'.
    rs = np.random.RandomState(7)
    x = rs.rand(2, 7, 9, 2).astype(np.float32)
    p = tf.placeholder(tf.float32, [None, None, None, 2])
    size = tf.placeholder(tf.int32, [2])
    pairs = []
    for align, half in ((False, False), (True, False), (False, True)):
        pairs.append((tf.image.resize_bicubic(p, size, align_corners=align,
                                              half_pixel_centers=half),
                      tf.image.resize_bicubic(x, [13, 4], align_corners=align,
                                              half_pixel_centers=half)))
    v1 = tf.image.resize_images(p, [5, 6], method=tf.image.ResizeMethod.BICUBIC)
    assert v1.shape.as_list() == [None, 5, 6, 2]
    got = run(*[t for pair in pairs for t in pair], v1, feed={p: x, size: [13, 4]})
    for dynamic, static in zip(got[0:6:2], got[1:6:2]):
        np.testing.assert_allclose(dynamic, static, atol=2e-6)
    np.testing.assert_allclose(got[6], run(tf.image.resize_bicubic(x, [5, 6])), atol=2e-6)


def test_ssim_of_images_sized_at_run_time():
    # TF1's ssim checks the size when the step runs; it raised 'needs the images' height,
    # width and channels known' here for [None, None, None, 3] placeholders.
    rs = np.random.RandomState(8)
    a = rs.rand(2, 20, 24, 3).astype(np.float32)
    b = np.clip(a + 0.1 * rs.randn(*a.shape), 0, 1).astype(np.float32)
    p = tf.placeholder(tf.float32, [None, None, None, 3])
    q = tf.placeholder(tf.float32, [None, None, None, 3])
    dynamic = tf.image.ssim(p, q, 1.0)
    np.testing.assert_allclose(run(dynamic, feed={p: a, q: b}), run(tf.image.ssim(a, b, 1.0)),
                               rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="filter_size=11"):
        run(dynamic, feed={p: a[:, :5], q: b[:, :5]})


def test_matrix_solve_ls_fast_false_is_the_minimum_norm_solution():
    # fast=False raised NotImplementedError; TF1 gives the minimum-norm least-squares solution
    # (right for rank-deficient matrices, where the normal equations are singular).
    rs = np.random.RandomState(9)
    a = rs.randn(5, 3)
    a[:, 2] = a[:, 0] + a[:, 1]
    b = rs.randn(5, 2)
    x, batched, wide = run(tf.matrix_solve_ls(a, b, fast=False),
                           tf.linalg.lstsq(np.stack([a, a]), np.stack([b, b]), fast=False),
                           tf.matrix_solve_ls(a.T, b[:3], fast=False))
    np.testing.assert_allclose(x, np.linalg.pinv(a) @ b, atol=1e-10)
    np.testing.assert_allclose(batched[1], x, atol=1e-10)
    np.testing.assert_allclose(wide, np.linalg.pinv(a.T) @ b[:3], atol=1e-10)


def test_crop_and_resize_on_a_feature_map_sized_at_run_time():
    # Faster R-CNN on images of any size: crop_and_resize of a [1, None, None, C] feature map
    # raised 'needs height, width and channels known'; crop_size may be a constant tensor.
    rs = np.random.RandomState(10)
    img = rs.rand(2, 9, 11, 4).astype(np.float32)
    boxes = np.array([[0.1, 0.2, 0.8, 0.9], [-0.2, 0.0, 0.5, 1.2], [0.9, 0.9, 0.1, 0.1]],
                     np.float32)
    ind = np.array([0, 1, 1], np.int32)
    p = tf.placeholder(tf.float32, [None, None, None, 4])
    outs = []
    for method in ("bilinear", "nearest"):
        outs += [tf.image.crop_and_resize(img, boxes, ind, [5, 6], method=method),
                 tf.image.crop_and_resize(p, boxes, ind, tf.constant([5, 6]), method=method)]
    assert outs[1].shape.as_list() == [3, 5, 6, 4]
    grad = tf.gradients(tf.reduce_sum(outs[1]), p)[0]
    got = run(*outs, grad, feed={p: img})
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_array_equal(got[2], got[3])
    assert got[4].shape == img.shape


def test_non_max_suppression_thresholds_may_be_tensors():
    # TF1 converts iou_threshold / score_threshold to tensors; float() of a tensor raised here.
    iou = tf.placeholder(tf.float32, [])
    floor = tf.placeholder(tf.float32, [])
    picks = tf.image.non_max_suppression(_BOXES, _SCORES, 6, iou, score_threshold=floor)
    padded, valid = tf.image.non_max_suppression_padded(_BOXES, _SCORES, 6, iou, floor)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(picks, {iou: 0.5, floor: 0.4}), [3, 0])
        np.testing.assert_array_equal(sess.run(picks, {iou: 1.0, floor: 0.0}), [3, 0, 1, 2, 4, 5])
        assert sess.run(valid, {iou: 0.5, floor: -1.0}) == 3
        with pytest.raises(tf.errors.InvalidArgumentError, match="iou_threshold"):
            sess.run(picks, {iou: 1.5, floor: 0.0})


def test_sobel_edges_unknown_channels_and_float16():
    # Unknown channels raised at graph build; float16 (TF1 takes it) failed in Conv2D.
    rs = np.random.RandomState(11)
    img = rs.rand(2, 5, 6, 3).astype(np.float32)
    padded = np.pad(img, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="reflect")
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)
    want = np.zeros(img.shape + (2,))
    for i in range(5):
        for j in range(6):
            window = padded[:, i:i + 3, j:j + 3, :]
            want[:, i, j, :, 0] = np.einsum("bijc,ij->bc", window, ky)
            want[:, i, j, :, 1] = np.einsum("bijc,ij->bc", window, ky.T)
    p = tf.placeholder(tf.float32, [None, 5, 6, None])
    half = tf.image.sobel_edges(tf.constant(img.astype(np.float16)))
    assert half.dtype == tf.float16
    got, got_half = run(tf.image.sobel_edges(p), half, feed={p: img})
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(got_half, want, atol=2e-2)


def test_linalg_lu():
    # tf.linalg.lu was listed but missing (AttributeError).
    a = np.random.RandomState(12).randn(2, 4, 4)
    factors, perm = tf.linalg.lu(a)
    assert perm.dtype == tf.int32 and factors.shape.as_list() == [2, 4, 4]
    f, p = run(factors, perm)
    for k in range(2):
        lower = np.tril(f[k], -1) + np.eye(4)
        np.testing.assert_allclose(a[k][p[k]], lower @ np.triu(f[k]), atol=1e-12)
        # Partial pivoting: every multiplier is at most 1 in magnitude.
        assert np.abs(np.tril(f[k], -1)).max() <= 1.0


def test_student_t_one_hot_relaxed_and_full_covariance_normals():
    tfd, tcd = tf.distributions, tf.contrib.distributions
    df, loc, scale = np.array([3.0, 1.5, 5.0]), np.array([0.0, 1.0, -1.0]), np.array([1, 2, 0.5])
    t = tfd.StudentT(df, loc, scale)
    x = np.array([0.5, -2.0, 3.0])
    probs = np.array([[0.2, 0.3, 0.5]], np.float32)
    onehot = tcd.OneHotCategorical(logits=np.log(probs))
    relaxed = tcd.RelaxedOneHotCategorical(0.5, logits=np.log(probs))
    tril = np.array([[1.0, 0, 0], [0.5, 2.0, 0], [-0.3, 0.2, 0.7]])
    mu = np.array([0.1, -0.2, 0.3])
    mu_var = tf.Variable(mu)
    mvn = tcd.MultivariateNormalTriL(loc=mu_var, scale_tril=tril)
    full = tcd.MultivariateNormalFullCovariance(loc=mu, covariance_matrix=tril @ tril.T)
    xs = np.random.RandomState(13).randn(4, 3)
    point = np.array([[0.1, 0.3, 0.6]], np.float32)
    grad = tf.gradients(tf.reduce_sum(mvn.log_prob(xs)), mu_var)[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([t.log_prob(x), t.entropy(), t.variance(), onehot.log_prob([[0, 1, 0]]),
                        onehot.sample(4000, seed=1), relaxed.log_prob(point),
                        relaxed.sample(3, seed=2), mvn.log_prob(xs), full.log_prob(xs),
                        mvn.entropy(), mvn.covariance(), grad])
    want_t = [math.lgamma((d + 1) / 2) - math.lgamma(d / 2) - 0.5 * math.log(d * math.pi) -
              math.log(s) - (d + 1) / 2 * math.log1p(((v - m) / s) ** 2 / d)
              for v, d, m, s in zip(x, df, loc, scale)]
    np.testing.assert_allclose(got[0], want_t, rtol=1e-5)
    want_ent = [math.log(s) + 0.5 * math.log(d) + _lbeta(d / 2, 0.5) +
                (d + 1) / 2 * (_digamma((d + 1) / 2) - _digamma(d / 2))
                for d, s in zip(df, scale)]
    np.testing.assert_allclose(got[1], want_ent, rtol=1e-4)
    np.testing.assert_allclose(got[2], [3.0, np.inf, 0.25 * 5 / 3], rtol=1e-6)
    np.testing.assert_allclose(got[3], np.log([0.3]), rtol=1e-6)
    assert got[4].shape == (4000, 1, 3) and (got[4].sum(-1) == 1).all()
    np.testing.assert_allclose(got[4].mean(0)[0], probs[0], atol=0.03)
    # The Concrete density (Maddison et al.): log (k-1)! + (k-1) log t + sum(log p - (t+1) log x)
    # - k log sum(p x^-t).
    p0, x0 = probs[0].astype(np.float64), point[0].astype(np.float64)
    want_concrete = (math.lgamma(3) + 2 * math.log(0.5) + np.sum(np.log(p0) - 1.5 * np.log(x0)) -
                     3 * np.log(np.sum(p0 * x0 ** -0.5)))
    np.testing.assert_allclose(got[5], [want_concrete], rtol=1e-5)
    np.testing.assert_allclose(got[6].sum(-1), 1.0, rtol=1e-6)
    cov = tril @ tril.T
    d = xs - mu
    want_mvn = (-0.5 * np.einsum("ni,ij,nj->n", d, np.linalg.inv(cov), d) -
                0.5 * np.log(np.linalg.det(cov)) - 1.5 * np.log(2 * np.pi))
    np.testing.assert_allclose(got[7], want_mvn, rtol=1e-10)
    np.testing.assert_allclose(got[8], want_mvn, rtol=1e-10)
    np.testing.assert_allclose(got[9], 0.5 * np.log(np.linalg.det(2 * np.pi * np.e * cov)))
    np.testing.assert_allclose(got[10], cov)
    np.testing.assert_allclose(got[11], np.linalg.inv(cov) @ d.sum(0), rtol=1e-8)


def test_distribution_dtype_follows_numpy_parameters_as_tf1():
    # TF1's common_dtype: a float64 NumPy parameter makes a float64 distribution; Python
    # numbers and lists make float32; a float32 tensor wins over a float64 array.
    tfd = tf.distributions
    assert tfd.Normal(np.zeros(2), 1.0).dtype == tf.float64
    assert tfd.Normal(0.0, np.ones(2)).dtype == tf.float64
    assert tfd.Normal([0.0], [1.0]).dtype == tf.float32
    for one_parameter in (tfd.Categorical(probs=[0.4, 0.6]), tfd.Bernoulli(probs=[0.3]),
                          tfd.Exponential([1.0]), tfd.Dirichlet([1.0, 2.0]),
                          tf.contrib.distributions.RelaxedOneHotCategorical(0.5, probs=[0.5])):
        assert one_parameter.dtype == tf.float32 or one_parameter.dtype == tf.int32
        params = getattr(one_parameter, "logits", None)
        params = params if params is not None else getattr(one_parameter, "concentration", None)
        assert params.dtype == tf.float32
    assert tfd.Normal(tf.constant(0.0), np.ones(2)).dtype == tf.float32
    lp = tfd.Normal(np.zeros(2), np.ones(2)).log_prob(np.array([0.0, 1.0], np.float32))
    assert lp.dtype == tf.float64
    np.testing.assert_allclose(run(lp), [-0.5 * math.log(2 * math.pi),
                                         -0.5 - 0.5 * math.log(2 * math.pi)], rtol=1e-12)


def test_kl_between_full_and_diagonal_multivariate_normals():
    # A VAE with a full-covariance posterior and a diagonal prior: TF1 registers the KL of
    # every pair of multivariate normals.
    tcd = tf.contrib.distributions
    la = np.array([[1.0, 0, 0], [0.5, 2.0, 0], [-0.3, 0.2, 0.7]])
    lb = np.array([[2.0, 0, 0], [0.1, 1.0, 0], [0.3, -0.2, 1.5]])
    ma, mb = np.array([0.1, -0.2, 0.3]), np.array([1.0, 0.0, -1.0])
    diag = np.array([1.0, 2.0, 0.5])

    def want(m0, s0, m1, s1):
        inv = np.linalg.inv(s1)
        d = m1 - m0
        return 0.5 * (np.trace(inv @ s0) + d @ inv @ d - 3 +
                      np.log(np.linalg.det(s1) / np.linalg.det(s0)))
    a = tcd.MultivariateNormalTriL(ma, la)
    b = tcd.MultivariateNormalTriL(mb, lb)
    c = tcd.MultivariateNormalDiag(mb, diag)
    got = run(tf.distributions.kl_divergence(a, b), tf.distributions.kl_divergence(a, c),
              tf.distributions.kl_divergence(c, a), a.kl_divergence(a))
    np.testing.assert_allclose(got[0], want(ma, la @ la.T, mb, lb @ lb.T), rtol=1e-10)
    np.testing.assert_allclose(got[1], want(ma, la @ la.T, mb, np.diag(diag ** 2)), rtol=1e-10)
    np.testing.assert_allclose(got[2], want(mb, np.diag(diag ** 2), ma, la @ la.T), rtol=1e-10)
    assert abs(got[3]) < 1e-12


def test_mixture_same_family():
    # A mixture density network's output distribution (was missing).
    tfd, tcd = tf.distributions, tf.contrib.distributions
    w = np.array([[0.3, 0.7], [0.5, 0.5]], np.float32)
    mu = np.array([[-1.0, 2.0], [0.0, 0.5]], np.float32)
    sd = np.array([[0.5, 1.0], [1.0, 2.0]], np.float32)
    mix = tcd.MixtureSameFamily(mixture_distribution=tfd.Categorical(probs=w),
                                components_distribution=tfd.Normal(loc=mu, scale=sd))
    mv = tcd.MixtureSameFamily(tfd.Categorical(probs=[0.4, 0.6]), tcd.MultivariateNormalDiag(
        loc=[[0.0, 0.0], [3.0, 3.0]], scale_diag=[[1.0, 1.0], [0.5, 0.5]]))
    x = np.array([0.3, -0.4], np.float32)
    lp, mean, var, draws, mv_lp = run(mix.log_prob(x), mix.mean(), mix.variance(),
                                      mix.sample(100000, seed=1), mv.log_prob([0.1, 0.2]))

    def pdf(v, m, s):
        return np.exp(-0.5 * ((v - m) / s) ** 2) / (s * np.sqrt(2 * np.pi))
    np.testing.assert_allclose(lp, np.log([np.sum(w[i] * pdf(x[i], mu[i], sd[i]))
                                           for i in range(2)]), rtol=1e-5)
    want_mean = (w * mu).sum(1)
    want_var = (w * (sd ** 2 + mu ** 2)).sum(1) - want_mean ** 2
    np.testing.assert_allclose(mean, want_mean, rtol=1e-6)
    np.testing.assert_allclose(var, want_var, rtol=1e-5)
    np.testing.assert_allclose(draws.mean(0), want_mean, atol=0.03)
    np.testing.assert_allclose(draws.var(0), want_var, rtol=0.03)
    p0 = np.array([0.1, 0.2])
    want_mv = np.log(0.4 * np.prod(pdf(p0, 0.0, 1.0)) + 0.6 * np.prod(pdf(p0, 3.0, 0.5)))
    np.testing.assert_allclose(mv_lp, want_mv, rtol=1e-5)


def test_decode_jpeg_ratio_downscales_while_decoding():
    # ratio 2/4/8 raised ValueError; TF1 decodes at 1/ratio (libjpeg: sizes rounded up).
    pytest.importorskip("PIL")
    img = (np.random.RandomState(15).rand(37, 50, 3) * 255).astype(np.uint8)
    jpg = _encoded(img, "JPEG", quality=95)
    shapes = [run(tf.image.decode_jpeg(jpg, ratio=r)).shape for r in (1, 2, 4, 8)]
    assert shapes == [(37, 50, 3), (19, 25, 3), (10, 13, 3), (5, 7, 3)]
    half = run(tf.image.decode_jpeg(jpg, ratio=2)).astype(np.float64)
    assert abs(half.mean() - img.mean()) < 2.0
    with pytest.raises(ValueError, match="ratio"):
        tf.image.decode_jpeg(jpg, ratio=3)


def test_flips_transpose_rot90_take_an_image_of_unknown_rank_as_tf1():
    # A py_func's output has unknown rank; TF1's flips, transpose and rot90 take it as one
    # [h, w, c] image (they raised 'takes a 3-D or 4-D image' here).
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    u = tf.py_func(lambda a: a, [tf.constant(x)], tf.float32)
    outs = [tf.image.flip_left_right(u), tf.image.flip_up_down(u),
            tf.image.transpose_image(u), tf.image.rot90(u),
            tf.image.random_flip_up_down(u, seed=1)]
    assert outs[0].shape.as_list() == [None, None, None]
    got = run(*outs)
    np.testing.assert_array_equal(got[0], x[:, ::-1])
    np.testing.assert_array_equal(got[1], x[::-1])
    np.testing.assert_array_equal(got[2], x.transpose(1, 0, 2))
    np.testing.assert_array_equal(got[3], np.rot90(x))
    assert got[4].shape == x.shape


def test_colour_ops_take_images_of_unknown_rank_as_tf1():
    # py_func-loaded images (unknown rank) through TF1's colour jitter raised ValueError.
    x = np.random.RandomState(16).rand(2, 3, 3).astype(np.float32)
    u = tf.py_func(lambda a: a, [tf.constant(x)], tf.float32)
    unknown = [tf.image.rgb_to_hsv(u), tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(u)),
               tf.image.adjust_saturation(u, 0.5), tf.image.adjust_hue(u, 0.2),
               tf.image.adjust_contrast(u, 1.5), tf.image.random_hue(u, 0.1, seed=1)]
    known = [tf.image.rgb_to_hsv(x), tf.image.adjust_saturation(x, 0.5),
             tf.image.adjust_hue(x, 0.2), tf.image.adjust_contrast(x, 1.5)]
    got = run(*(unknown + known))
    np.testing.assert_allclose(got[0], got[6], atol=1e-6)
    np.testing.assert_allclose(got[1], x, atol=1e-6)
    np.testing.assert_allclose(got[2], got[7], atol=1e-6)
    np.testing.assert_allclose(got[3], got[8], atol=1e-6)
    np.testing.assert_allclose(got[4], got[9], atol=1e-6)
    assert got[5].shape == x.shape
    # per_image_standardization of an unknown-rank batch: each image's last three dimensions.
    batch = np.random.RandomState(17).rand(2, 3, 4, 3).astype(np.float32)
    ub = tf.py_func(lambda a: a, [tf.constant(batch)], tf.float32)
    std_unknown, std_known = run(tf.image.per_image_standardization(ub),
                                 tf.image.per_image_standardization(batch))
    np.testing.assert_allclose(std_unknown, std_known, atol=1e-6)
    six = tf.py_func(lambda a: a, [tf.zeros([2, 6])], tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="3 channels"):
        run(tf.image.rgb_to_hsv(six))


def test_poisson():
    p = tf.contrib.distributions.Poisson(rate=[0.5, 3.0])
    x = np.array([2.0, 4.0])
    lp, draws, mode = run(p.log_prob(x), p.sample(20000, seed=1), p.mode())
    np.testing.assert_allclose(lp, [v * math.log(r) - r - math.lgamma(v + 1)
                                    for v, r in zip(x, [0.5, 3.0])], rtol=1e-6)
    np.testing.assert_allclose(draws.mean(0), [0.5, 3.0], rtol=0.05)
    np.testing.assert_array_equal(mode, [0.0, 3.0])


# ---- tf.contrib.image's projective transforms (in image_resize; tf.contrib.image wiring is
# contrib.py's) -----------------------------------------------------------------------------

def _np_projective(img, transforms, mode):
    """TF's ImageProjectiveTransform kernel in NumPy, float32 positions."""
    n, h, w, c = img.shape
    f = np.float32
    out = np.zeros(img.shape, np.float64)

    def read(b, y, x):
        return img[b, y, x].astype(np.float64) if 0 <= y < h and 0 <= x < w else np.zeros(c)
    for b in range(n):
        a = [f(v) for v in transforms[b if len(transforms) > 1 else 0]]
        for oy in range(h):
            for ox in range(w):
                k = a[6] * f(ox) + a[7] * f(oy) + f(1)
                ix = (a[0] * f(ox) + a[1] * f(oy) + a[2]) / k
                iy = (a[3] * f(ox) + a[4] * f(oy) + a[5]) / k
                if mode == "NEAREST":
                    def rnd(v):
                        return int(math.copysign(math.floor(abs(float(v)) + 0.5), float(v)))
                    out[b, oy, ox] = read(b, rnd(iy), rnd(ix))
                else:
                    y0, x0 = math.floor(iy), math.floor(ix)
                    wy, wx = float(iy) - y0, float(ix) - x0
                    top = (1 - wx) * read(b, y0, x0) + wx * read(b, y0, x0 + 1)
                    bottom = (1 - wx) * read(b, y0 + 1, x0) + wx * read(b, y0 + 1, x0 + 1)
                    out[b, oy, ox] = (1 - wy) * top + wy * bottom
    return out


def test_contrib_image_transform_rotate_translate():
    from shardflow import image_resize
    rs = np.random.RandomState(18)
    img = rs.rand(2, 5, 7, 3).astype(np.float32)
    t = np.array([[0.9, -0.2, 1.3, 0.3, 1.1, -0.7, 0.01, -0.02],
                  [1, 0, 0.5, 0, 1, -1.5, 0, 0]], np.float32)
    square = rs.rand(1, 6, 6, 1).astype(np.float32)
    u8 = (rs.rand(4, 4, 3) * 255).astype(np.uint8)
    p = tf.placeholder(tf.float32, [None, None, None, 3])
    got = run(image_resize.transform(img, t, "NEAREST"), image_resize.transform(img, t, "BILINEAR"),
              image_resize.rotate(square, math.pi / 2), image_resize.translate(square[0], [2, 1]),
              image_resize.rotate(u8, 0.3), image_resize.rotate(p, tf.constant([0.1, 0.2])),
              feed={p: img})
    np.testing.assert_allclose(got[0], _np_projective(img, t, "NEAREST"), atol=1e-6)
    np.testing.assert_allclose(got[1], _np_projective(img, t, "BILINEAR"), atol=1e-5)
    np.testing.assert_allclose(got[2][0, ..., 0], np.rot90(square[0, ..., 0]), atol=1e-6)
    np.testing.assert_array_equal(got[3][1:, 2:], square[0, :-1, :-2])
    assert (got[3][:1] == 0).all() and (got[3][:, :2] == 0).all()
    assert got[4].dtype == np.uint8 and got[5].shape == img.shape


def test_contrib_image_dense_image_warp():
    from shardflow import image_resize
    rs = np.random.RandomState(19)
    img = rs.rand(2, 5, 6, 3).astype(np.float32)
    flow = (rs.randn(2, 5, 6, 2) * 2).astype(np.float32)
    want = np.zeros(img.shape)
    for b in range(2):
        for y in range(5):
            for x in range(6):
                qy, qx = y - flow[b, y, x, 0], x - flow[b, y, x, 1]
                fy, fx = min(max(np.floor(qy), 0), 3), min(max(np.floor(qx), 0), 4)
                ay, ax = min(max(qy - fy, 0), 1), min(max(qx - fx, 0), 1)
                fy, fx = int(fy), int(fx)
                top = ax * (img[b, fy, fx + 1] - img[b, fy, fx]) + img[b, fy, fx]
                bottom = ax * (img[b, fy + 1, fx + 1] - img[b, fy + 1, fx]) + img[b, fy + 1, fx]
                want[b, y, x] = ay * (bottom - top) + top
    image, field = tf.constant(img), tf.constant(flow)
    warped = image_resize.dense_image_warp(image, field)
    grads = tf.gradients(tf.reduce_sum(warped), [image, field])
    got, identity, g_image, g_flow = run(warped, image_resize.dense_image_warp(
        image, tf.zeros_like(field)), *grads)
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(identity, img, atol=1e-6)
    assert g_image.shape == img.shape and g_flow.shape == flow.shape


def test_contrib_image_namespace_rotates_and_translates():
    # tf.contrib.image was missing (AttributeError); it is image_resize's transforms.
    img = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    with tf.Graph().as_default():
        r = tf.contrib.image.rotate(tf.constant(img), np.pi / 2)
        t = tf.contrib.image.translate(tf.constant(img), [[1.0, 0.0]])
        with tf.Session() as sess:
            rv, tv = sess.run([r, t])
    np.testing.assert_allclose(rv[0, :, :, 0], np.rot90(img[0, :, :, 0]))   # counter-clockwise
    want = np.zeros((4, 4), np.float32)
    want[:, 1:] = img[0, :, :3, 0]
    np.testing.assert_allclose(tv[0, :, :, 0], want)
