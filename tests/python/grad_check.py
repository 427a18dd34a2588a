"""check_gradient, shared by the Python test files that check composites' gradients."""

import numpy as np

import shardflow as tf


def check_gradient(fn, *x0s, rng, h=1e-6, rtol=1e-5, atol=1e-7, dtype=np.float64):
    """The engine's gradient of sum(fn(*x) * c) (c drawn from `rng` in [0.5, 1.5]) against
    central differences of its own forward pass, in `dtype` (float64 by default; float32 for
    kernels that take only that), for every input."""
    x0s = [x0.astype(dtype) for x0 in x0s]
    xs = [tf.placeholder(tf.as_dtype(dtype), x0.shape) for x0 in x0s]
    out = fn(*xs)
    c = tf.constant(rng.uniform(0.5, 1.5, size=out.shape.as_list()).astype(dtype))
    y = tf.reduce_sum(out * c)
    grads = tf.gradients(y, xs)
    feed = dict(zip(xs, x0s))
    with tf.Session() as s:
        analytic = s.run(grads, feed)
        for k, x0 in enumerate(x0s):
            numeric = np.zeros_like(x0)
            for i in np.ndindex(*x0.shape):
                up, down = dict(feed), dict(feed)
                up[xs[k]], down[xs[k]] = x0.copy(), x0.copy()
                up[xs[k]][i] += h
                down[xs[k]][i] -= h
                numeric[i] = (s.run(y, up) - s.run(y, down)) / (2 * h)
            np.testing.assert_allclose(analytic[k], numeric, rtol=rtol, atol=atol)
