"""TF1's multivariate distributions and mixtures of tf.contrib.distributions: OneHotCategorical,
RelaxedOneHotCategorical (Gumbel-softmax), MultivariateNormalTriL and
MultivariateNormalFullCovariance, MixtureSameFamily, and the KL between multivariate normals
(the base class and the registry: distributions.py, which exports these)."""

import math

import numpy as np

from shardflow import dtypes, ops
from shardflow.framework import convert_to_tensor
from shardflow.distributions import (_HALF_LOG_TWO_PI, FULLY_REPARAMETERIZED,
                                     NOT_REPARAMETERIZED, Categorical, Distribution,
                                     MultivariateNormalDiag, RegisterKL, _common_dtype, _float,
                                     _seed_for)



class OneHotCategorical(Categorical):
    """Categorical whose samples and values are one-hot vectors over the last dimension
    (tf.contrib.distributions.OneHotCategorical); the event shape is [k]."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False,
                 allow_nan_stats=True, name="OneHotCategorical"):
        super().__init__(logits, probs, dtype, validate_args, allow_nan_stats, name)

    @property
    def event_shape(self):
        from shardflow.framework import TensorShape
        return TensorShape([self.event_size])

    def sample(self, sample_shape=(), seed=None, name="sample"):
        from shardflow import array_ops
        index = Categorical.sample(self, sample_shape, seed=seed)
        return array_ops.one_hot(index, self.event_size, dtype=self.dtype, name=name)

    def log_prob(self, value, name="log_prob"):
        x = ops.cast(convert_to_tensor(value), self.logits.dtype)
        return ops.reduce_sum(ops.multiply(x, self._log_probs), axis=-1, name=name)

    def mode(self, name="mode"):
        from shardflow import array_ops
        return array_ops.one_hot(ops.argmax(self.logits, -1), self.event_size, dtype=self.dtype,
                                 name=name)

    def mean(self, name="mean"):
        return ops.identity(self.probs, name=name)


class RelaxedOneHotCategorical(Distribution):
    """The Concrete / Gumbel-softmax distribution over the simplex (Maddison et al. 2016, Jang
    et al. 2016; tf.contrib.distributions.RelaxedOneHotCategorical): samples
    softmax((logits + Gumbel noise) / temperature), reparameterized; log_prob is the Concrete
    density."""

    reparameterization_type = FULLY_REPARAMETERIZED

    def __init__(self, temperature, logits=None, probs=None, validate_args=False,
                 allow_nan_stats=True, name="RelaxedOneHotCategorical"):
        if (logits is None) == (probs is None):
            raise ValueError("RelaxedOneHotCategorical takes exactly one of logits and probs")
        from shardflow import nn
        self.logits = _float(logits) if logits is not None else ops.log(_float(probs))
        self.probs = nn.softmax(self.logits)
        self.temperature = _float(temperature, self.logits.dtype)
        self._log_probs = nn.log_softmax(self.logits)
        super().__init__(self.logits.dtype, validate_args, allow_nan_stats, name)

    @property
    def event_size(self):
        return self.logits.shape.as_list()[-1]

    @property
    def batch_shape(self):
        from shardflow.framework import TensorShape
        dims = self.logits.shape
        return TensorShape(None if dims.ndims is None else dims.as_list()[:-1])

    @property
    def event_shape(self):
        from shardflow.framework import TensorShape
        return TensorShape([self.event_size])

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        return ops.shape(self.logits)[:-1]

    def sample(self, sample_shape=(), seed=None, name="sample"):
        from shardflow import nn
        full = self._full(sample_shape, self.logits)
        tiny = float(np.finfo(self.dtype.as_numpy_dtype).tiny)
        u = ops.random_uniform(full, tiny, 1.0, dtype=self.dtype, seed=seed)
        gumbel = ops.negative(ops.log(ops.negative(ops.log(u))))
        t = ops.expand_dims(self.temperature, -1) if self.temperature.shape.ndims else \
            self.temperature
        return nn.softmax(ops.divide(ops.add(self.logits, gumbel), t), name=name)

    def log_prob(self, value, name="log_prob"):
        """log((k-1)!) + (k-1) log t + sum(log p_i - (t+1) log x_i) - k log sum(p_i x_i^-t)."""
        x = _float(value, self.dtype)
        k = self.event_size
        t = self.temperature
        t_e = ops.expand_dims(t, -1) if t.shape.ndims else t
        log_x = ops.log(x)
        scores = ops.subtract(self._log_probs, ops.multiply(t_e, log_x))
        from shardflow.math_composites import reduce_logsumexp
        constant = ops.add(float(math.lgamma(k)), ops.multiply(float(k - 1), ops.log(t)))
        density = ops.subtract(ops.reduce_sum(ops.subtract(scores, log_x), axis=-1),
                               ops.multiply(float(k), reduce_logsumexp(scores, axis=-1)))
        return ops.add(constant, density, name=name)


class MultivariateNormalTriL(Distribution):
    """N(loc, scale_tril scale_tril^T) over the last dimension, scale_tril lower triangular
    [..., k, k] (tf.contrib.distributions.MultivariateNormalTriL): samples loc + L eps."""

    reparameterization_type = FULLY_REPARAMETERIZED

    def __init__(self, loc=None, scale_tril=None, validate_args=False, allow_nan_stats=True,
                 name="MultivariateNormalTriL"):
        from shardflow.matrix_composites import matrix_band_part
        if scale_tril is None:
            raise ValueError("MultivariateNormalTriL needs scale_tril")
        dt = _common_dtype(loc, scale_tril)
        self.scale_tril = matrix_band_part(_float(scale_tril, dt), -1, 0)
        k = self.scale_tril.shape.as_list()[-1]
        if k is None:
            raise ValueError("MultivariateNormalTriL needs the event size known when the graph "
                             "is built, got scale_tril %s" % self.scale_tril.shape)
        self.loc = _float(loc, self.scale_tril.dtype) if loc is not None else \
            ops.zeros_like(self.scale_tril[..., 0])
        self._k = k
        # loc broadcast against the batch of scale_tril: [..., k].
        self._loc_b = ops.add(self.loc, ops.zeros_like(self.scale_tril[..., 0]))
        super().__init__(self.scale_tril.dtype, validate_args, allow_nan_stats, name)

    @property
    def batch_shape(self):
        from shardflow.framework import TensorShape
        dims = self._loc_b.shape
        return TensorShape(None if dims.ndims is None else dims.as_list()[:-1])

    @property
    def event_shape(self):
        from shardflow.framework import TensorShape
        return TensorShape([self._k])

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        return ops.shape(self._loc_b)[:-1]

    def _log_det_scale(self):
        from shardflow.matrix_composites import matrix_diag_part
        return ops.reduce_sum(ops.log(ops.abs(matrix_diag_part(self.scale_tril))), axis=-1)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        from shardflow.ops import random_normal
        eps = random_normal(self._full(sample_shape, self._loc_b), dtype=self.dtype, seed=seed)
        # L eps for each sample: eps [..., k] -> sum_j L[i, j] eps[j].
        mixed = ops.reduce_sum(ops.multiply(self.scale_tril, ops.expand_dims(eps, -2)), axis=-1)
        return ops.add(self._loc_b, mixed, name=name)

    def log_prob(self, value, name="log_prob"):
        from shardflow.linalg_ops import matrix_triangular_solve
        x = _float(value, self.dtype)
        # Solve L z = x - loc for every sample and batch member: both broadcast to
        # sample + batch + [k], flattened to [-1, k, k] and [-1, k, 1].
        diff = ops.add(ops.subtract(x, self.loc), ops.zeros_like(self._loc_b))
        tril = ops.add(self.scale_tril, ops.zeros_like(ops.expand_dims(diff, -1)))
        z = matrix_triangular_solve(ops.reshape(tril, [-1, self._k, self._k]),
                                    ops.reshape(diff, [-1, self._k, 1]), lower=True)
        maha = ops.reshape(ops.reduce_sum(ops.square(z), axis=[-2, -1]), ops.shape(diff)[:-1])
        return ops.negative(ops.add(ops.add(ops.multiply(0.5, maha), self._log_det_scale()),
                                    self._k * _HALF_LOG_TWO_PI), name=name)

    def entropy(self, name="entropy"):
        return ops.add(self._k * (0.5 + _HALF_LOG_TWO_PI), self._log_det_scale(), name=name)

    def mean(self, name="mean"):
        return ops.identity(self._loc_b, name=name)

    def mode(self, name="mode"):
        return ops.identity(self._loc_b, name=name)

    def covariance(self, name="covariance"):
        return ops.matmul(self.scale_tril, self.scale_tril, transpose_b=True, name=name)

    def variance(self, name="variance"):
        return ops.reduce_sum(ops.square(self.scale_tril), axis=-1, name=name)

    def stddev(self, name="stddev"):
        return ops.sqrt(self.variance(), name=name)


class MultivariateNormalFullCovariance(MultivariateNormalTriL):
    """N(loc, covariance_matrix), through the covariance's Cholesky factor."""

    def __init__(self, loc=None, covariance_matrix=None, validate_args=False,
                 allow_nan_stats=True, name="MultivariateNormalFullCovariance"):
        from shardflow.linalg_ops import cholesky
        if covariance_matrix is None:
            raise ValueError("MultivariateNormalFullCovariance needs covariance_matrix")
        super().__init__(loc, cholesky(_float(covariance_matrix)), validate_args,
                         allow_nan_stats, name)


class MixtureSameFamily(Distribution):
    """A mixture of K components of one family (tf.contrib.distributions.MixtureSameFamily,
    the mixture density network's output): `mixture_distribution` a Categorical over K with
    batch shape B, `components_distribution` with batch shape B + [K]. Not reparameterized."""

    reparameterization_type = NOT_REPARAMETERIZED

    def __init__(self, mixture_distribution, components_distribution, validate_args=False,
                 allow_nan_stats=True, name="MixtureSameFamily"):
        self.mixture_distribution = mixture_distribution
        self.components_distribution = components_distribution
        event = components_distribution.event_shape
        if event.ndims is None:
            raise ValueError("MixtureSameFamily needs the components' event rank")
        self._event_ndims = event.ndims
        super().__init__(components_distribution.dtype, validate_args, allow_nan_stats, name)

    @property
    def batch_shape(self):
        return self.mixture_distribution.batch_shape

    @property
    def event_shape(self):
        return self.components_distribution.event_shape

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        return self.mixture_distribution.batch_shape_tensor()

    def _weights(self, probs):
        """Mixture weights [..., K] shaped to broadcast with the components' event."""
        for _ in range(self._event_ndims):
            probs = ops.expand_dims(probs, -1)
        return probs

    def log_prob(self, value, name="log_prob"):
        from shardflow.math_composites import reduce_logsumexp
        x = _float(value, self.dtype)
        x = ops.expand_dims(x, -1 - self._event_ndims)                # a K axis to broadcast
        component = self.components_distribution.log_prob(x)          # [..., K]
        return reduce_logsumexp(ops.add(component, self.mixture_distribution._log_probs),
                                axis=-1, name=name)

    def mean(self, name="mean"):
        weights = self._weights(ops.cast(self.mixture_distribution.probs, self.dtype))
        return ops.reduce_sum(ops.multiply(weights, self.components_distribution.mean()),
                              axis=-1 - self._event_ndims, name=name)

    def variance(self, name="variance"):
        """The law of total variance: E[var] + Var[mean] over the components."""
        weights = self._weights(ops.cast(self.mixture_distribution.probs, self.dtype))
        means = self.components_distribution.mean()
        axis = -1 - self._event_ndims
        second = ops.reduce_sum(ops.multiply(weights, ops.add(
            self.components_distribution.variance(), ops.square(means))), axis=axis)
        return ops.subtract(second, ops.square(self.mean()), name=name)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        from shardflow import array_ops
        draws = self.components_distribution.sample(sample_shape, seed=seed)   # S+B+[K]+E
        k = self.mixture_distribution.event_size
        pick = self.mixture_distribution.sample(sample_shape, seed=_seed_for(seed, 3))  # S+B
        mask = self._weights(array_ops.one_hot(pick, k, dtype=self.dtype))
        return ops.reduce_sum(ops.multiply(draws, mask), axis=-1 - self._event_ndims, name=name)


def _mvn_parts(d):
    """(loc [..., k], lower-triangular scale [..., k, k]) of a multivariate normal."""
    if isinstance(d, MultivariateNormalTriL):
        return d._loc_b, d.scale_tril
    from shardflow.matrix_composites import matrix_diag
    scale = d.distribution._scale_b
    return d.distribution._loc_b, matrix_diag(scale)


def _kl_mvn(a, b, name=None):
    """KL between two multivariate normals (TF1 registers it for every pair of them):
    0.5 (||Lb^-1 La||_F^2 + ||Lb^-1 (mu_b - mu_a)||^2 - k) + log|det Lb| - log|det La|."""
    from shardflow.linalg_ops import matrix_triangular_solve
    from shardflow.matrix_composites import matrix_diag_part
    loc_a, tril_a = _mvn_parts(a)
    loc_b, tril_b = _mvn_parts(b)
    k = tril_a.shape.as_list()[-1]
    zero = ops.zeros_like(ops.add(tril_a, tril_b))                 # the common batch shape
    la, lb = ops.add(tril_a, zero), ops.add(tril_b, zero)
    diff = ops.add(ops.subtract(loc_b, loc_a), ops.zeros_like(zero[..., 0]))
    flat_lb = ops.reshape(lb, [-1, k, k])
    rhs = ops.concat([ops.reshape(la, [-1, k, k]), ops.reshape(diff, [-1, k, 1])], -1)
    solved = matrix_triangular_solve(flat_lb, rhs, lower=True)      # [n, k, k + 1]
    batch = ops.shape(diff)[:-1]
    terms = ops.reshape(ops.reduce_sum(ops.square(solved), axis=[-2, -1]), batch)

    def log_det(t):
        return ops.reduce_sum(ops.log(ops.abs(matrix_diag_part(t))), axis=-1)
    return ops.add(ops.multiply(0.5, ops.subtract(terms, float(k))),
                   ops.subtract(log_det(lb), log_det(la)), name=name)


for _pair in ((MultivariateNormalTriL, MultivariateNormalTriL),
              (MultivariateNormalTriL, MultivariateNormalDiag),
              (MultivariateNormalDiag, MultivariateNormalTriL)):
    RegisterKL(*_pair)(_kl_mvn)
