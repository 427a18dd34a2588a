"""tf.distributions (Normal, Uniform, Categorical, Bernoulli, kl_divergence): densities and
entropies against closed forms, sample statistics, reparameterised gradients, a REINFORCE step."""
import math

import numpy as np
import pytest

import shardflow as tf


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_normal_density_kl_samples_and_gradients():
    with tf.Graph().as_default():
        mu, sigma = tf.Variable([0.5, -1.0]), tf.Variable([1.0, 2.0])
        d = tf.distributions.Normal(mu, sigma)
        z = d.sample(4000, seed=1)
        kl = tf.distributions.kl_divergence(d, tf.contrib.distributions.Normal(0.0, 1.0))
        grads = tf.gradients(tf.reduce_sum(tf.reduce_mean(z, 0) * [1.0, 2.0]), [mu, sigma])
        lp, cdf, ent, k, zs, g = run([d.log_prob([0.0, 0.0]), d.cdf([0.5, 1.0]), d.entropy(),
                                      kl, z, grads])
    want_lp = [-0.5 * 0.25 - 0.5 * math.log(2 * math.pi),
               -0.5 * 0.25 - 0.5 * math.log(2 * math.pi) - math.log(2.0)]
    np.testing.assert_allclose(lp, want_lp, rtol=1e-6)
    np.testing.assert_allclose(cdf, [0.5, 0.5 * (1 + math.erf(1 / math.sqrt(2)))], rtol=1e-6)
    np.testing.assert_allclose(ent, 0.5 * np.log(2 * np.pi * np.e * np.array([1.0, 4.0])),
                               rtol=1e-6)
    np.testing.assert_allclose(k, [0.125, 0.5 * (4 + 1 - 1 - math.log(4))], rtol=1e-6)
    assert zs.shape == (4000, 2)
    np.testing.assert_allclose(zs.mean(0), [0.5, -1.0], atol=0.1)
    np.testing.assert_allclose(zs.std(0), [1.0, 2.0], rtol=0.06)
    # Reparameterised: d mean(z) / d mu is 1; d / d sigma is the mean of the noise (near 0).
    np.testing.assert_allclose(g[0], [1.0, 2.0], rtol=1e-4)
    assert np.all(np.abs(g[1]) < 0.15)


def test_uniform_categorical_bernoulli():
    with tf.Graph().as_default():
        u = tf.distributions.Uniform(1.0, 3.0)
        c = tf.distributions.Categorical(logits=[[0.0, 1.0, 2.0], [2.0, 0.0, 0.0]])
        c2 = tf.distributions.Categorical(probs=[[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
        b = tf.distributions.Bernoulli(probs=[0.2, 0.9])
        fetched = run([u.log_prob([2.0, 5.0]), u.entropy(), u.mean(), u.sample(3000, seed=4),
                       c.log_prob([2, 0]), c.entropy(), c.sample(4000, seed=2), c.mode(),
                       tf.distributions.kl_divergence(c, c2), b.log_prob([1, 0]), b.entropy(),
                       b.sample(4000, seed=3), tf.distributions.kl_divergence(
                           b, tf.distributions.Bernoulli(logits=[0.0, 0.0]))])
    (ulp, uent, umean, us, clp, cent, cs, cmode, ckl, blp, bent, bs, bkl) = fetched
    np.testing.assert_allclose(ulp, [-math.log(2), -np.inf])
    assert uent == pytest.approx(math.log(2)) and umean == pytest.approx(2.0)
    assert us.min() >= 1.0 and us.max() < 3.0 and abs(us.mean() - 2.0) < 0.05
    p = np.exp([[0, 1, 2], [2, 0, 0]]) / np.exp([[0, 1, 2], [2, 0, 0]]).sum(1, keepdims=True)
    np.testing.assert_allclose(clp, np.log([p[0, 2], p[1, 0]]), rtol=1e-5)
    np.testing.assert_allclose(cent, -(p * np.log(p)).sum(1), rtol=1e-5)
    assert cs.shape == (4000, 2)
    for row in range(2):
        np.testing.assert_allclose(np.bincount(cs[:, row], minlength=3) / 4000.0, p[row],
                                   atol=0.03)
    np.testing.assert_array_equal(cmode, [2, 0])
    q = np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
    np.testing.assert_allclose(ckl, (p * np.log(p / q)).sum(1), rtol=1e-4)
    np.testing.assert_allclose(blp, np.log([0.2, 0.1]), rtol=1e-5)
    np.testing.assert_allclose(bent, [-(0.2 * np.log(0.2) + 0.8 * np.log(0.8)),
                                      -(0.9 * np.log(0.9) + 0.1 * np.log(0.1))], rtol=1e-5)
    np.testing.assert_allclose(bs.mean(0), [0.2, 0.9], atol=0.03)
    want_bkl = [0.2 * np.log(0.2 / 0.5) + 0.8 * np.log(0.8 / 0.5),
                0.9 * np.log(0.9 / 0.5) + 0.1 * np.log(0.1 / 0.5)]
    np.testing.assert_allclose(bkl, want_bkl, rtol=1e-4)
    with pytest.raises(NotImplementedError, match="Normal, Categorical"):
        tf.distributions.kl_divergence(tf.distributions.Uniform(), tf.distributions.Uniform())
    with pytest.raises(ValueError, match="exactly one"):
        tf.distributions.Categorical()


def test_reinforce_with_categorical_prefers_the_rewarded_action():
    # A 3-armed bandit whose arm 2 pays: the policy gradient through log_prob moves the logits.
    with tf.Graph().as_default():
        tf.set_random_seed(5)
        logits = tf.Variable([0.0, 0.0, 0.0])
        policy = tf.distributions.Categorical(logits=logits)
        actions = policy.sample(64)
        reward = tf.cast(tf.equal(actions, 2), tf.float32)
        loss = -tf.reduce_mean(policy.log_prob(tf.stop_gradient(actions)) * reward)
        train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
        probs = tf.nn.softmax(logits)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(40):
                sess.run(train)
            final = sess.run(probs)
    assert final[2] > 0.9, final


def test_multivariate_normal_diag_and_independent_as_a_vae_uses_them():
    """tf.contrib.distributions.MultivariateNormalDiag (the encoder's q(z|x), a standard normal
    prior built with tf.zeros(8)) and Independent(Bernoulli(logits), 1) (the decoder's image):
    one log-probability per example, the KL in closed form summed over the event."""
    tfd = tf.contrib.distributions
    loc = np.array([[0.5, -1.0, 0.0], [1.0, 0.0, 2.0]], np.float32)
    scale = np.array([[1.0, 2.0, 0.5], [0.3, 1.0, 1.5]], np.float32)
    x = np.array([[0.0, 1.0, -1.0], [1.0, 1.0, 1.0]], np.float32)
    with tf.Graph().as_default():
        q = tfd.MultivariateNormalDiag(loc, scale)
        prior = tfd.MultivariateNormalDiag(tf.zeros(3), tf.ones(3))
        assert q.event_shape.as_list() == [3] and q.batch_shape.as_list() == [2]
        image = tfd.Independent(tfd.Bernoulli(logits=tf.constant(loc)), 1)
        lp, kl, z, bern = run([q.log_prob(x), tfd.kl_divergence(q, prior), q.sample(seed=3),
                               image.log_prob(tf.constant((x > 0).astype(np.float32)))])
    want = (-0.5 * ((x - loc) / scale) ** 2 - np.log(scale) - 0.5 * math.log(2 * math.pi)).sum(1)
    np.testing.assert_allclose(lp, want, rtol=1e-5)
    want_kl = (0.5 * (scale ** 2 + loc ** 2 - 1) - np.log(scale)).sum(1)
    np.testing.assert_allclose(kl, want_kl, rtol=1e-5)
    assert z.shape == (2, 3)
    p = 1 / (1 + np.exp(-loc))
    want_b = np.where(x > 0, np.log(p), np.log(1 - p)).sum(1)
    np.testing.assert_allclose(bern, want_b, rtol=1e-5)
