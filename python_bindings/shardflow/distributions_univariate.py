"""TF1's Gamma family and the other univariate distributions of tf.distributions /
tf.contrib.distributions: Gamma, Exponential, Beta, Dirichlet, Laplace, StudentT and Poisson,
and the KLs TF1 registers for Gamma, Beta and Dirichlet pairs (the base class and the registry:
distributions.py, which exports these)."""

import math

import numpy as np

from shardflow import dtypes, ops
from shardflow.distributions import (FULLY_REPARAMETERIZED, NOT_REPARAMETERIZED,
                                     Distribution, RegisterKL, _broadcast, _common_dtype,
                                     _float, _lbeta, _nan_unless, _sample_shape, _seed_for)



class Gamma(Distribution):
    """Gamma(concentration, rate): density x^(c-1) e^(-rate x) rate^c / Gamma(c), x > 0.
    Samples come from tf.random_gamma; no gradient reaches `concentration` through them here
    (TF1's has implicit reparameterization), so this reports NOT_REPARAMETERIZED."""

    reparameterization_type = NOT_REPARAMETERIZED

    def __init__(self, concentration, rate, validate_args=False, allow_nan_stats=True,
                 name="Gamma"):
        dt = _common_dtype(concentration, rate)
        self.concentration = _float(concentration, dt)
        self.rate = _float(rate, dt)
        self._c_b, self._rate_b = _broadcast(self.concentration, self.rate)
        super().__init__(self.concentration.dtype, validate_args, allow_nan_stats, name)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        draws = ops.random_gamma(_sample_shape(sample_shape), self._c_b, dtype=self.dtype,
                                 seed=seed)
        return ops.divide(draws, self._rate_b, name=name)

    def log_prob(self, value, name="log_prob"):
        x = _float(value, self.dtype)
        c, rate = self.concentration, self.rate
        return ops.subtract(
            ops.subtract(ops.multiply(ops.subtract(c, 1.0), ops.log(x)), ops.multiply(rate, x)),
            ops.subtract(ops.lgamma(c), ops.multiply(c, ops.log(rate))), name=name)

    def cdf(self, value, name="cdf"):
        """P(concentration, rate x): the regularized lower incomplete gamma function
        (tf.math.igamma, as TF1's: NaN for x < 0)."""
        from shardflow.math_composites import igamma
        x = _float(value, self.dtype)
        return ops.identity(igamma(self._c_b, ops.multiply(self._rate_b, x)), name=name)

    def entropy(self, name="entropy"):
        c = self._c_b
        return ops.add(ops.subtract(c, ops.log(self._rate_b)),
                       ops.add(ops.lgamma(c), ops.multiply(ops.subtract(1.0, c), ops.digamma(c))),
                       name=name)

    def mean(self, name="mean"):
        return ops.divide(self._c_b, self._rate_b, name=name)

    def variance(self, name="variance"):
        return ops.divide(self._c_b, ops.square(self._rate_b), name=name)

    def mode(self, name="mode"):
        value = ops.divide(ops.subtract(self._c_b, 1.0), self._rate_b)
        return ops.identity(_nan_unless(ops.greater(self._c_b, 1.0), value,
                                        self.allow_nan_stats, "Gamma.mode"), name=name)


class Exponential(Gamma):
    """Exponential(rate): Gamma(1, rate), density rate e^(-rate x). Samples -log(u) / rate
    (u uniform in (0, 1)), reparameterized as TF1's."""

    reparameterization_type = FULLY_REPARAMETERIZED

    def __init__(self, rate, validate_args=False, allow_nan_stats=True, name="Exponential"):
        rate = _float(rate)
        super().__init__(ops.ones_like(rate), rate, validate_args, allow_nan_stats, name)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        from shardflow.ops import random_uniform
        tiny = float(np.finfo(self.dtype.as_numpy_dtype).tiny)
        u = random_uniform(self._full(sample_shape, self._rate_b), tiny, 1.0, dtype=self.dtype,
                           seed=seed)
        return ops.divide(ops.negative(ops.log(u)), self._rate_b, name=name)

    def log_prob(self, value, name="log_prob"):
        x = _float(value, self.dtype)
        return ops.subtract(ops.log(self.rate), ops.multiply(self.rate, x), name=name)

    def cdf(self, value, name="cdf"):
        x = _float(value, self.dtype)
        return ops.negative(ops.expm1(ops.negative(ops.multiply(self.rate, x))), name=name)

    def log_survival_function(self, value, name="log_survival_function"):
        return ops.negative(ops.multiply(self.rate, _float(value, self.dtype)), name=name)

    def survival_function(self, value, name="survival_function"):
        return ops.exp(self.log_survival_function(value), name=name)


class Beta(Distribution):
    """Beta(concentration1, concentration0) on (0, 1): density x^(a-1) (1-x)^(b-1) / B(a, b)
    with a = concentration1, b = concentration0. Samples are Ga / (Ga + Gb) of two gamma
    draws (no gradient to the concentrations here: NOT_REPARAMETERIZED)."""

    reparameterization_type = NOT_REPARAMETERIZED

    def __init__(self, concentration1=None, concentration0=None, validate_args=False,
                 allow_nan_stats=True, name="Beta"):
        dt = _common_dtype(concentration1, concentration0)
        self.concentration1 = _float(concentration1, dt)
        self.concentration0 = _float(concentration0, dt)
        self._a, self._b = _broadcast(self.concentration1, self.concentration0)
        self.total_concentration = ops.add(self._a, self._b)
        super().__init__(self.concentration1.dtype, validate_args, allow_nan_stats, name)

    def _log_normalization(self):
        return ops.subtract(ops.add(ops.lgamma(self._a), ops.lgamma(self._b)),
                            ops.lgamma(self.total_concentration))

    def cdf(self, value, name="cdf"):
        """I_x(concentration1, concentration0): the regularized incomplete beta function
        (tf.math.betainc, as TF1's: NaN for x outside [0, 1])."""
        from shardflow.math_composites import betainc
        x = _float(value, self.dtype)
        return ops.identity(betainc(self._a, self._b, x), name=name)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        shape = _sample_shape(sample_shape)
        ga = ops.random_gamma(shape, self._a, dtype=self.dtype, seed=seed)
        gb = ops.random_gamma(shape, self._b, dtype=self.dtype, seed=_seed_for(seed, 1))
        return ops.divide(ga, ops.add(ga, gb), name=name)

    def log_prob(self, value, name="log_prob"):
        x = _float(value, self.dtype)
        a, b = self.concentration1, self.concentration0
        unnormalized = ops.add(ops.multiply(ops.subtract(a, 1.0), ops.log(x)),
                               ops.multiply(ops.subtract(b, 1.0), ops.log1p(ops.negative(x))))
        return ops.subtract(unnormalized, ops.subtract(
            ops.add(ops.lgamma(a), ops.lgamma(b)), ops.lgamma(ops.add(a, b))), name=name)

    def entropy(self, name="entropy"):
        a, b, total = self._a, self._b, self.total_concentration
        return ops.add(
            ops.subtract(ops.subtract(self._log_normalization(),
                                      ops.multiply(ops.subtract(a, 1.0), ops.digamma(a))),
                         ops.multiply(ops.subtract(b, 1.0), ops.digamma(b))),
            ops.multiply(ops.subtract(total, 2.0), ops.digamma(total)), name=name)

    def mean(self, name="mean"):
        return ops.divide(self._a, self.total_concentration, name=name)

    def variance(self, name="variance"):
        total = self.total_concentration
        return ops.divide(ops.multiply(self._a, self._b),
                          ops.multiply(ops.square(total), ops.add(total, 1.0)), name=name)

    def mode(self, name="mode"):
        value = ops.divide(ops.subtract(self._a, 1.0), ops.subtract(self.total_concentration, 2.0))
        defined = ops.logical_and(ops.greater(self._a, 1.0), ops.greater(self._b, 1.0))
        return ops.identity(_nan_unless(defined, value, self.allow_nan_stats, "Beta.mode"),
                            name=name)


class Dirichlet(Distribution):
    """Dirichlet(concentration [..., k]) over the k-simplex: the event is the last dimension.
    Samples are normalized gamma draws (NOT_REPARAMETERIZED here)."""

    reparameterization_type = NOT_REPARAMETERIZED

    def __init__(self, concentration, validate_args=False, allow_nan_stats=True,
                 name="Dirichlet"):
        self.concentration = _float(concentration)
        self.total_concentration = ops.reduce_sum(self.concentration, axis=-1)
        super().__init__(self.concentration.dtype, validate_args, allow_nan_stats, name)

    @property
    def batch_shape(self):
        from shardflow.framework import TensorShape
        dims = self.concentration.shape
        return TensorShape(None if dims.ndims is None else dims.as_list()[:-1])

    @property
    def event_shape(self):
        from shardflow.framework import TensorShape
        dims = self.concentration.shape
        return TensorShape(None if dims.ndims is None else dims.as_list()[-1:])

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        return ops.shape(self.total_concentration)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        g = ops.random_gamma(_sample_shape(sample_shape), self.concentration, dtype=self.dtype,
                             seed=seed)
        return ops.divide(g, ops.reduce_sum(g, axis=-1, keepdims=True), name=name)

    def log_prob(self, value, name="log_prob"):
        x = _float(value, self.dtype)
        unnormalized = ops.reduce_sum(ops.multiply(ops.subtract(self.concentration, 1.0),
                                                   ops.log(x)), axis=-1)
        return ops.subtract(unnormalized, _lbeta(self.concentration), name=name)

    def entropy(self, name="entropy"):
        alpha, total = self.concentration, self.total_concentration
        k = ops.cast(ops.shape(alpha)[-1], self.dtype)
        return ops.subtract(
            ops.add(_lbeta(alpha), ops.multiply(ops.subtract(total, k), ops.digamma(total))),
            ops.reduce_sum(ops.multiply(ops.subtract(alpha, 1.0), ops.digamma(alpha)), axis=-1),
            name=name)

    def mean(self, name="mean"):
        return ops.divide(self.concentration, ops.expand_dims(self.total_concentration, -1),
                          name=name)

    def variance(self, name="variance"):
        total = ops.expand_dims(self.total_concentration, -1)
        mean = ops.divide(self.concentration, total)
        return ops.divide(ops.multiply(mean, ops.subtract(1.0, mean)), ops.add(total, 1.0),
                          name=name)

    def covariance(self, name="covariance"):
        total = ops.expand_dims(ops.expand_dims(self.total_concentration, -1), -1)
        mean = self.mean()
        outer = ops.multiply(ops.expand_dims(mean, -1), ops.expand_dims(mean, -2))
        from shardflow.matrix_composites import matrix_diag
        return ops.divide(ops.subtract(matrix_diag(mean), outer), ops.add(total, 1.0), name=name)

    def mode(self, name="mode"):
        k = ops.cast(ops.shape(self.concentration)[-1], self.dtype)
        value = ops.divide(ops.subtract(self.concentration, 1.0),
                           ops.expand_dims(ops.subtract(self.total_concentration, k), -1))
        from shardflow import array_ops
        defined = array_ops.reduce_all(ops.greater(self.concentration, 1.0), axis=-1,
                                       keepdims=True)
        defined = ops.logical_and(defined, ops.ones_like(value, dtype=dtypes.bool_))
        return ops.identity(_nan_unless(defined, value, self.allow_nan_stats, "Dirichlet.mode"),
                            name=name)


class Laplace(Distribution):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale); samples
    loc - scale sign(u) log1p(-|u|), u uniform in (-1, 1) (reparameterized, as TF1's)."""

    reparameterization_type = FULLY_REPARAMETERIZED

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Laplace"):
        dt = _common_dtype(loc, scale)
        self.loc = _float(loc, dt)
        self.scale = _float(scale, dt)
        self._loc_b, self._scale_b = _broadcast(self.loc, self.scale)
        super().__init__(self.loc.dtype, validate_args, allow_nan_stats, name)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        from shardflow.ops import random_uniform
        low = float(np.nextafter(self.dtype.as_numpy_dtype(-1.0), self.dtype.as_numpy_dtype(0)))
        u = random_uniform(self._full(sample_shape, self._loc_b), low, 1.0, dtype=self.dtype,
                           seed=seed)
        return ops.subtract(self._loc_b, ops.multiply(
            self._scale_b, ops.multiply(ops.sign(u), ops.log1p(ops.negative(ops.abs(u))))),
            name=name)

    def log_prob(self, value, name="log_prob"):
        x = _float(value, self.dtype)
        z = ops.divide(ops.abs(ops.subtract(x, self.loc)), self.scale)
        return ops.subtract(ops.negative(z), ops.log(ops.multiply(2.0, self.scale)), name=name)

    def cdf(self, value, name="cdf"):
        from shardflow.array_ops import where_v2
        z = ops.divide(ops.subtract(_float(value, self.dtype), self.loc), self.scale)
        return where_v2(ops.less(z, 0.0), ops.multiply(0.5, ops.exp(ops.minimum(z, 0.0))),
                        ops.subtract(1.0, ops.multiply(0.5, ops.exp(ops.negative(
                            ops.maximum(z, 0.0))))), name=name)

    def entropy(self, name="entropy"):
        return ops.add(math.log(2.0) + 1.0, ops.log(self._scale_b), name=name)

    def mean(self, name="mean"):
        return ops.identity(self._loc_b, name=name)

    def mode(self, name="mode"):
        return ops.identity(self._loc_b, name=name)

    def variance(self, name="variance"):
        return ops.multiply(2.0, ops.square(self._scale_b), name=name)

    def stddev(self, name="stddev"):
        return ops.multiply(math.sqrt(2.0), self._scale_b, name=name)


class StudentT(Distribution):
    """Student's t with df degrees of freedom, location loc and scale: heavier tails than
    Normal. Samples loc + scale * N(0, 1) / sqrt(Gamma(df/2, rate df/2)) (no gradient to df
    through the gamma draw here: NOT_REPARAMETERIZED)."""

    reparameterization_type = NOT_REPARAMETERIZED

    def __init__(self, df, loc, scale, validate_args=False, allow_nan_stats=True,
                 name="StudentT"):
        dt = _common_dtype(df, loc, scale)
        self.df, self.loc, self.scale = (_float(v, dt) for v in (df, loc, scale))
        self._df_b, self._loc_b, self._scale_b = _broadcast(self.df, self.loc, self.scale)
        super().__init__(self.df.dtype, validate_args, allow_nan_stats, name)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        from shardflow.ops import random_normal
        normal = random_normal(self._full(sample_shape, self._loc_b), dtype=self.dtype, seed=seed)
        gamma = ops.random_gamma(_sample_shape(sample_shape), 0.5 * self._df_b, beta=0.5,
                                 dtype=self.dtype, seed=_seed_for(seed, 2))
        t = ops.multiply(normal, ops.rsqrt(ops.divide(gamma, self._df_b)))
        return ops.add(self._loc_b, ops.multiply(self._scale_b, t), name=name)

    def log_prob(self, value, name="log_prob"):
        x = _float(value, self.dtype)
        df = self.df
        z2 = ops.square(ops.divide(ops.subtract(x, self.loc), self.scale))
        half = ops.multiply(0.5, ops.add(df, 1.0))
        norm = ops.add(ops.subtract(ops.lgamma(ops.multiply(0.5, df)), ops.lgamma(half)),
                       ops.add(ops.multiply(0.5, ops.log(ops.multiply(df, math.pi))),
                               ops.log(ops.abs(self.scale))))
        return ops.subtract(ops.negative(ops.multiply(half, ops.log1p(ops.divide(z2, df)))),
                            norm, name=name)

    def cdf(self, value, name="cdf"):
        """As TF1's: with y = (x - loc) / scale, half of betainc(df / 2, 1 / 2, df / (y^2 +
        df)) below the mean, one minus it above."""
        from shardflow.array_ops import where_v2
        from shardflow.math_composites import betainc
        y = ops.divide(ops.subtract(_float(value, self.dtype), self.loc), self.scale)
        df = ops.add(self.df, ops.zeros_like(y))
        tail = ops.multiply(0.5, betainc(ops.multiply(0.5, df), ops.multiply(0.5, ops.ones_like(
            df)), ops.divide(df, ops.add(ops.square(y), df))))
        return where_v2(ops.less(y, 0.0), tail, ops.subtract(1.0, tail), name=name)

    def entropy(self, name="entropy"):
        df = self._df_b
        half = ops.multiply(0.5, ops.add(df, 1.0))
        lbeta = ops.subtract(ops.add(ops.lgamma(ops.multiply(0.5, df)), math.lgamma(0.5)),
                             ops.lgamma(half))
        spread = ops.add(ops.log(ops.abs(self._scale_b)), ops.multiply(0.5, ops.log(df)))
        tail = ops.multiply(half, ops.subtract(ops.digamma(half),
                                               ops.digamma(ops.multiply(0.5, df))))
        return ops.add(ops.add(spread, lbeta), tail, name=name)

    def mean(self, name="mean"):
        return ops.identity(_nan_unless(ops.greater(self._df_b, 1.0), self._loc_b,
                                        self.allow_nan_stats, "StudentT.mean"), name=name)

    def mode(self, name="mode"):
        return ops.identity(self._loc_b, name=name)

    def variance(self, name="variance"):
        """scale^2 df / (df - 2) for df > 2, inf for 1 < df <= 2, NaN for df <= 1 (TF1's)."""
        from shardflow.array_ops import where_v2
        df = self._df_b
        finite = ops.divide(ops.multiply(ops.square(self._scale_b), df), ops.subtract(df, 2.0))
        value = where_v2(ops.greater(df, 2.0), finite,
                         ops.fill(ops.shape(df), ops.cast(np.inf, self.dtype)))
        return ops.identity(_nan_unless(ops.greater(df, 1.0), value, self.allow_nan_stats,
                                        "StudentT.variance"), name=name)


class Poisson(Distribution):
    """Poisson(rate) over the counts 0, 1, 2, ... (tf.contrib.distributions.Poisson; or
    log_rate): log_prob x log(rate) - rate - lgamma(x + 1); samples from tf.random_poisson in
    the distribution's dtype."""

    reparameterization_type = NOT_REPARAMETERIZED

    def __init__(self, rate=None, log_rate=None, validate_args=False, allow_nan_stats=True,
                 name="Poisson"):
        if (rate is None) == (log_rate is None):
            raise ValueError("Poisson takes exactly one of rate and log_rate")
        if rate is not None:
            self.rate = _float(rate)
            self.log_rate = ops.log(self.rate)
        else:
            self.log_rate = _float(log_rate)
            self.rate = ops.exp(self.log_rate)
        super().__init__(self.rate.dtype, validate_args, allow_nan_stats, name)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        return ops.random_poisson(self.rate, _sample_shape(sample_shape), dtype=self.dtype,
                                  seed=seed, name=name)

    def log_prob(self, value, name="log_prob"):
        x = _float(value, self.dtype)
        return ops.subtract(ops.subtract(ops.multiply(x, self.log_rate), self.rate),
                            ops.lgamma(ops.add(x, 1.0)), name=name)

    def cdf(self, value, name="cdf"):
        """P(X <= x) = igammac(floor(x) + 1, rate), as TF1's (NaN for x < 0)."""
        from shardflow.math_composites import igammac
        k = ops.floor(_float(value, self.dtype))
        return ops.identity(igammac(ops.add(k, 1.0), self.rate), name=name)

    def mean(self, name="mean"):
        return ops.identity(self.rate, name=name)

    def variance(self, name="variance"):
        return ops.identity(self.rate, name=name)

    def mode(self, name="mode"):
        return ops.floor(self.rate, name=name)


@RegisterKL(Gamma, Gamma)
def _kl_gamma(a, b, name=None):
    c0, c1, r0, r1 = a.concentration, b.concentration, a.rate, b.rate
    shape_terms = ops.add(ops.multiply(ops.subtract(c0, c1), ops.digamma(c0)),
                          ops.subtract(ops.lgamma(c1), ops.lgamma(c0)))
    rate_terms = ops.add(ops.multiply(c1, ops.subtract(ops.log(r0), ops.log(r1))),
                         ops.multiply(c0, ops.subtract(ops.divide(r1, r0), 1.0)))
    return ops.add(shape_terms, rate_terms, name=name)


@RegisterKL(Beta, Beta)
def _kl_beta(a, b, name=None):
    return ops.add(
        ops.subtract(ops.subtract(ops.subtract(b._log_normalization(), a._log_normalization()),
                                  ops.multiply(ops.digamma(a._a), ops.subtract(b._a, a._a))),
                     ops.multiply(ops.digamma(a._b), ops.subtract(b._b, a._b))),
        ops.multiply(ops.digamma(a.total_concentration),
                     ops.subtract(b.total_concentration, a.total_concentration)), name=name)


@RegisterKL(Dirichlet, Dirichlet)
def _kl_dirichlet(a, b, name=None):
    digamma_diff = ops.subtract(ops.digamma(a.concentration), ops.digamma(
        ops.reduce_sum(a.concentration, axis=-1, keepdims=True)))
    return ops.add(ops.subtract(ops.reduce_sum(ops.multiply(
        ops.subtract(a.concentration, b.concentration), digamma_diff), axis=-1),
        _lbeta(a.concentration)), _lbeta(b.concentration), name=name)
