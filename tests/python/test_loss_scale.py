"""Loss scaling (shardflow/loss_scale.py): tf.train.experimental.MixedPrecisionLossScaleOptimizer
and tf.contrib.mixed_precision.LossScaleOptimizer, as float16 TF1 programs use them."""
import numpy as np
import pytest

import shardflow as sf


@pytest.fixture(autouse=True)
def fresh_graph():
    sf.reset_default_graph()
    yield


def _model():
    x = sf.placeholder(sf.float32, [4, 3])
    blow_up = sf.placeholder_with_default(1.0, [])
    w = sf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, name="w")
    loss = sf.reduce_sum(sf.square(sf.matmul(x, w))) * blow_up
    return x, blow_up, w, loss


X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)


def test_fixed_scale_gives_the_unscaled_gradients():
    x, _, w, loss = _model()
    plain = sf.gradients(loss, w)[0]
    opt = sf.train.experimental.MixedPrecisionLossScaleOptimizer(
        sf.train.GradientDescentOptimizer(0.1), loss_scale=1024)
    (g, v), = opt.compute_gradients(loss, [w])
    train = opt.apply_gradients([(g, v)])
    with sf.Session() as s:
        s.run(sf.global_variables_initializer())
        want, got = s.run([plain, g], {x: X})
        np.testing.assert_allclose(got, want, rtol=1e-6)
        before = s.run(w)
        s.run(train, {x: X})
        np.testing.assert_allclose(s.run(w), before - 0.1 * want, rtol=1e-6)


def test_dynamic_scale_skips_non_finite_steps_and_adapts():
    x, blow_up, w, loss = _model()
    gs = sf.train.get_or_create_global_step()
    scale = sf.train.experimental.DynamicLossScale(initial_loss_scale=8, increment_period=2,
                                                   multiplier=2)
    opt = sf.train.experimental.MixedPrecisionLossScaleOptimizer(sf.train.AdamOptimizer(0.01),
                                                                 scale)
    train = opt.minimize(loss, global_step=gs)
    with sf.Session() as s:
        s.run(sf.global_variables_initializer())
        assert s.run(scale()) == 8
        w0 = s.run(w)
        s.run(train, {x: X})
        assert not np.array_equal(s.run(w), w0)    # an applied step moves the weights
        s.run(train, {x: X})                       # two finite steps: the scale doubles
        assert s.run(scale()) == 16 and s.run(gs) == 2
        before = s.run(sf.global_variables())
        s.run(train, {x: X, blow_up: np.inf})      # an infinite gradient: skipped
        after = s.run(sf.global_variables())
        names = [v.op.name for v in sf.global_variables()]
        for name, b, a in zip(names, before, after):
            if name in ("current_loss_scale", "good_steps"):
                continue
            np.testing.assert_array_equal(a, b, err_msg=name)   # weights, slots, global step
        assert s.run(scale()) == 8
        s.run(train, {x: X, blow_up: np.nan})
        assert s.run(scale()) == 4 and s.run(gs) == 2
        s.run(train, {x: X})
        assert s.run(gs) == 3
    assert "current_loss_scale" in names         # saved with the model, as TF's


def test_dynamic_scale_never_goes_below_one():
    x, blow_up, w, loss = _model()
    opt = sf.train.experimental.MixedPrecisionLossScaleOptimizer(
        sf.train.GradientDescentOptimizer(0.1),
        sf.train.experimental.DynamicLossScale(initial_loss_scale=2))
    train = opt.minimize(loss)
    with sf.Session() as s:
        s.run(sf.global_variables_initializer())
        for _ in range(3):
            s.run(train, {x: X, blow_up: np.inf})
        assert s.run(opt.loss_scale()) == 1


def test_contrib_loss_scale_optimizer_with_exponential_manager():
    x, blow_up, w, loss = _model()
    mp = sf.contrib.mixed_precision
    manager = mp.ExponentialUpdateLossScaleManager(4, 3, decr_every_n_nan_or_inf=2,
                                                   decr_ratio=0.5)
    opt = mp.LossScaleOptimizer(sf.train.MomentumOptimizer(0.01, 0.9), manager)
    train = opt.minimize(loss)
    with sf.Session() as s:
        s.run(sf.global_variables_initializer())
        scales = []
        for blow in [1, 1, 1, np.inf, np.inf, 1]:
            before = s.run(w)
            s.run(train, {x: X, blow_up: blow})
            scales.append(float(s.run(manager.get_loss_scale())))
            assert np.array_equal(s.run(w), before) == (not np.isfinite(blow))
    assert scales == [4, 4, 8, 8, 4, 4]


def test_float16_gradients_that_underflow_without_scaling_train_with_it():
    """The reason for loss scaling: a small loss's gradient flushes to zero in float16 (the
    cast's gradient), and the scale keeps it representable; the weights then follow plain
    gradient descent on the unscaled gradient."""
    rng = np.random.RandomState(0)
    xs = rng.randn(16, 4).astype(np.float32)
    w = sf.Variable(np.ones([4, 1], np.float32))
    h = sf.cast(sf.cast(sf.matmul(sf.constant(xs), w), sf.float16), sf.float32)
    loss = 1e-10 * sf.reduce_sum(sf.square(h))
    plain = sf.train.GradientDescentOptimizer(1e6)
    scaled = sf.train.experimental.MixedPrecisionLossScaleOptimizer(
        sf.train.GradientDescentOptimizer(1e6), "dynamic")
    grad_plain = plain.compute_gradients(loss, [w])[0][0]
    grad_scaled = scaled.compute_gradients(loss, [w])[0][0]
    train = scaled.minimize(loss)
    want = 2e-10 * xs.T @ (xs @ np.ones([4, 1], np.float32))
    with sf.Session() as s:
        s.run(sf.global_variables_initializer())
        assert not np.any(s.run(grad_plain))             # underflowed to zero in float16
        np.testing.assert_allclose(s.run(grad_scaled), want, rtol=2e-3)
        s.run(train)
        np.testing.assert_allclose(s.run(w), 1 - 1e6 * want, rtol=1e-3)


def test_bad_arguments_name_the_way_out():
    with pytest.raises(ValueError, match="wraps a sf.train.Optimizer"):
        sf.train.experimental.MixedPrecisionLossScaleOptimizer("adam", "dynamic")
    with pytest.raises(ValueError, match="'dynamic', a number or a LossScale"):
        sf.train.experimental.MixedPrecisionLossScaleOptimizer(
            sf.train.AdamOptimizer(), "static")
    with pytest.raises(ValueError, match="at least 1"):
        sf.train.experimental.FixedLossScale(0.5)
    with pytest.raises(ValueError, match="LossScaleManager"):
        sf.contrib.mixed_precision.LossScaleOptimizer(sf.train.AdamOptimizer(), 128)
