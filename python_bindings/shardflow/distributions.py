"""TF1's tf.distributions (also tf.contrib.distributions' core): Normal, Categorical, Bernoulli,
Uniform, Independent and MultivariateNormalDiag, and kl_divergence between two of a kind, composed from the engine's ops (sampling
through random_normal, random_uniform and multinomial; densities and their gradients through
ordinary ops, so they train as in TF1: policy gradients, VAEs).

Example::

    dist = sf.distributions.Normal(loc=mu, scale=sigma)
    z = dist.sample()                         # reparameterised: gradients reach mu and sigma
    loss = -sf.reduce_mean(dist.log_prob(x)) + sf.reduce_mean(
        sf.distributions.kl_divergence(dist, sf.distributions.Normal(0.0, 1.0)))

Parameters broadcast against each other; `sample(sample_shape)` has shape sample_shape +
batch_shape. `validate_args` and `allow_nan_stats` are accepted (no run-time checks here).
"""

import math

import numpy as np

from shardflow import dtypes, ops
from shardflow.framework import convert_to_tensor

_HALF_LOG_TWO_PI = 0.5 * math.log(2.0 * math.pi)


def _float(x, dtype=None):
    t = convert_to_tensor(x) if not isinstance(x, (int, float)) else convert_to_tensor(
        float(x), dtype=dtype or dtypes.float32)
    if not t.dtype.is_floating:
        t = ops.cast(t, dtype or dtypes.float32)
    return t


def _sample_shape(sample_shape):
    if sample_shape is None or sample_shape == ():
        return []
    if isinstance(sample_shape, (int, np.integer)):
        return [int(sample_shape)]
    return [int(d) for d in sample_shape]


class Distribution:
    """The base of the distributions here: sample, log_prob, prob, entropy, mean, mode,
    stddev, variance; batch_shape and event_shape."""

    def __init__(self, dtype, validate_args, allow_nan_stats, name):
        self._dtype = dtype
        self.validate_args = validate_args
        self.allow_nan_stats = allow_nan_stats
        self._name = name

    @property
    def name(self):
        return self._name

    @property
    def dtype(self):
        return self._dtype

    def prob(self, value, name="prob"):
        return ops.exp(self.log_prob(value), name=name)

    def stddev(self, name="stddev"):
        return ops.sqrt(self.variance(), name=name)

    def batch_shape_tensor(self):
        return ops.shape(self.mean())

    @property
    def batch_shape(self):
        return self.mean().shape

    @property
    def event_shape(self):
        from shardflow.framework import TensorShape
        return TensorShape([])

    def _full(self, sample_shape, like):
        """sample_shape + batch_shape (the batch shape from the broadcast parameters)."""
        return ops.concat([np.asarray(_sample_shape(sample_shape), np.int32),
                           ops.shape(like)], 0)


class Normal(Distribution):
    """The normal distribution N(loc, scale^2)."""

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Normal"):
        self.loc = _float(loc)
        self.scale = _float(scale, self.loc.dtype)
        # Broadcast both to the batch shape.
        zero = ops.zeros_like(ops.add(self.loc, self.scale))
        self._loc_b, self._scale_b = ops.add(self.loc, zero), ops.add(self.scale, zero)
        super().__init__(self.loc.dtype, validate_args, allow_nan_stats, name)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        """loc + scale * eps, eps ~ N(0, 1): gradients flow to loc and scale."""
        from shardflow.ops import random_normal
        eps = random_normal(self._full(sample_shape, self._loc_b), dtype=self.dtype, seed=seed)
        return ops.add(self._loc_b, ops.multiply(self._scale_b, eps), name=name)

    def log_prob(self, value, name="log_prob"):
        z = ops.divide(ops.subtract(_float(value, self.dtype), self.loc), self.scale)
        return ops.subtract(ops.multiply(-0.5, ops.square(z)),
                            ops.add(_HALF_LOG_TWO_PI, ops.log(self.scale)), name=name)

    def cdf(self, value, name="cdf"):
        z = ops.divide(ops.subtract(_float(value, self.dtype), self.loc), self.scale)
        return ops.multiply(0.5, ops.add(1.0, ops.erf(ops.multiply(z, 1.0 / math.sqrt(2.0)))),
                            name=name)

    def entropy(self, name="entropy"):
        return ops.add(0.5 + _HALF_LOG_TWO_PI, ops.log(self._scale_b), name=name)

    def mean(self, name="mean"):
        return ops.identity(self._loc_b, name=name)

    def mode(self, name="mode"):
        return ops.identity(self._loc_b, name=name)

    def variance(self, name="variance"):
        return ops.square(self._scale_b, name=name)

    def stddev(self, name="stddev"):
        return ops.identity(self._scale_b, name=name)


class Uniform(Distribution):
    """The uniform distribution on [low, high)."""

    def __init__(self, low=0.0, high=1.0, validate_args=False, allow_nan_stats=True,
                 name="Uniform"):
        self.low = _float(low)
        self.high = _float(high, self.low.dtype)
        zero = ops.zeros_like(ops.add(self.low, self.high))
        self._low_b, self._high_b = ops.add(self.low, zero), ops.add(self.high, zero)
        super().__init__(self.low.dtype, validate_args, allow_nan_stats, name)

    def range(self):
        return ops.subtract(self._high_b, self._low_b)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        from shardflow.ops import random_uniform
        u = random_uniform(self._full(sample_shape, self._low_b), dtype=self.dtype, seed=seed)
        return ops.add(self._low_b, ops.multiply(self.range(), u), name=name)

    def log_prob(self, value, name="log_prob"):
        x = _float(value, self.dtype)
        inside = ops.logical_and(ops.greater_equal(x, self.low), ops.less(x, self.high))
        density = ops.subtract(ops.zeros_like(ops.add(x, self.low)), ops.log(self.range()))
        return _where(inside, density, name)

    def entropy(self, name="entropy"):
        return ops.log(self.range(), name=name)

    def mean(self, name="mean"):
        return ops.multiply(0.5, ops.add(self._low_b, self._high_b), name=name)

    def variance(self, name="variance"):
        return ops.divide(ops.square(self.range()), 12.0, name=name)


def _where(condition, values, name):
    from shardflow.array_ops import where_v2
    return where_v2(condition, values, ops.fill(ops.shape(values), -np.inf), name=name)


class Categorical(Distribution):
    """A distribution over 0..k-1 from `logits` (or `probs`) on the last axis; samples are
    `dtype` (int32)."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False,
                 allow_nan_stats=True, name="Categorical"):
        if (logits is None) == (probs is None):
            raise ValueError("Categorical takes exactly one of logits and probs")
        from shardflow import nn
        if logits is not None:
            self.logits = _float(logits)
            self.probs = nn.softmax(self.logits)
        else:
            self.probs = _float(probs)
            self.logits = ops.log(self.probs)
        self._log_probs = nn.log_softmax(self.logits)
        super().__init__(dtypes.as_dtype(dtype), validate_args, allow_nan_stats, name)

    @property
    def event_size(self):
        return self.logits.shape.as_list()[-1]

    def sample(self, sample_shape=(), seed=None, name="sample"):
        """Draws with tf.multinomial over the flattened batch, shaped sample_shape + batch."""
        from shardflow.array_composites import multinomial
        shape = _sample_shape(sample_shape)
        n = int(np.prod(shape)) if shape else 1
        k = self.event_size
        if k is None:
            raise ValueError("Categorical.sample needs the number of classes when the graph is "
                             "built")
        flat = ops.reshape(self.logits, [-1, k])
        draws = multinomial(flat, n, seed=seed)                      # [batch, n]
        draws = ops.transpose(draws)                                 # [n, batch]
        batch = ops.slice(ops.shape(self.logits), [0], [ops.rank(self.logits) - 1]) \
            if self.logits.shape.ndims is None else self.logits.shape.as_list()[:-1]
        if isinstance(batch, list) and all(d is not None for d in batch):
            out_shape = shape + batch
        else:
            out_shape = ops.concat([np.asarray(shape, np.int32),
                                    ops.shape(self.logits)[:-1]], 0)
        return ops.cast(ops.reshape(draws, out_shape), self.dtype, name=name)

    def log_prob(self, value, name="log_prob"):
        from shardflow import nn
        labels = ops.cast(convert_to_tensor(value), dtypes.int64)
        # Broadcast the value against the batch: logits to value.shape + [k], the value to the
        # logits' batch shape.
        logits = ops.add(self.logits, ops.zeros_like(ops.expand_dims(ops.cast(
            labels, self.logits.dtype), -1)))
        labels = ops.add(labels, ops.zeros_like(ops.argmax(logits, -1)))
        return ops.negative(nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits),
                            name=name)

    def entropy(self, name="entropy"):
        return ops.negative(ops.reduce_sum(ops.multiply(self.probs, self._log_probs), axis=-1),
                            name=name)

    def mode(self, name="mode"):
        return ops.cast(ops.argmax(self.logits, -1), self.dtype, name=name)

    def mean(self, name="mean"):
        raise NotImplementedError("Categorical has no mean in TF1 either; use probs")

    @property
    def batch_shape(self):
        from shardflow.framework import TensorShape
        dims = self.logits.shape.as_list() if self.logits.shape.ndims is not None else None
        return TensorShape(dims[:-1] if dims is not None else None)


class Bernoulli(Distribution):
    """A distribution over {0, 1} with P(1) = sigmoid(logits) (or `probs`); samples are
    `dtype` (int32)."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False,
                 allow_nan_stats=True, name="Bernoulli"):
        if (logits is None) == (probs is None):
            raise ValueError("Bernoulli takes exactly one of logits and probs")
        if logits is not None:
            self.logits = _float(logits)
            self.probs = ops.sigmoid(self.logits)
        else:
            self.probs = _float(probs)
            self.logits = ops.subtract(ops.log(self.probs), ops.log1p(ops.negative(self.probs)))
        super().__init__(dtypes.as_dtype(dtype), validate_args, allow_nan_stats, name)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        from shardflow.ops import random_uniform
        u = random_uniform(self._full(sample_shape, self.probs), dtype=self.probs.dtype,
                           seed=seed)
        return ops.cast(ops.less(u, self.probs), self.dtype, name=name)

    def log_prob(self, value, name="log_prob"):
        from shardflow import nn
        x = _float(value, self.logits.dtype)
        logits = ops.add(self.logits, ops.zeros_like(x))
        return ops.negative(nn.sigmoid_cross_entropy_with_logits(
            labels=ops.add(x, ops.zeros_like(logits)), logits=logits), name=name)

    def entropy(self, name="entropy"):
        from shardflow import nn
        return nn.sigmoid_cross_entropy_with_logits(labels=self.probs, logits=self.logits,
                                                    name=name)

    def mean(self, name="mean"):
        return ops.identity(self.probs, name=name)

    def mode(self, name="mode"):
        return ops.cast(ops.greater(self.probs, 0.5), self.dtype, name=name)

    def variance(self, name="variance"):
        return ops.multiply(self.probs, ops.subtract(1.0, self.probs), name=name)


class Independent(Distribution):
    """A distribution whose last `reinterpreted_batch_ndims` batch dimensions are read as one
    event (tf.contrib.distributions.Independent): log_prob and entropy sum over them, so an
    image of independent Bernoullis has one log-probability per image. The default reads all
    batch dimensions but the first."""

    def __init__(self, distribution, reinterpreted_batch_ndims=None, validate_args=False,
                 name=None):
        self.distribution = distribution
        if reinterpreted_batch_ndims is None:
            rank = distribution.batch_shape.ndims
            if rank is None:
                raise ValueError("Independent: give reinterpreted_batch_ndims (the base "
                                 "distribution's batch rank is unknown)")
            reinterpreted_batch_ndims = max(rank - 1, 0)
        self.reinterpreted_batch_ndims = int(reinterpreted_batch_ndims)
        if self.reinterpreted_batch_ndims < 0:
            raise ValueError("Independent: reinterpreted_batch_ndims must be >= 0, got %d"
                             % self.reinterpreted_batch_ndims)
        super().__init__(distribution.dtype, validate_args, distribution.allow_nan_stats,
                         name or "Independent" + distribution.name)

    def _sum_event(self, x, name):
        if self.reinterpreted_batch_ndims == 0:
            return ops.identity(x, name=name)
        axes = list(range(-self.reinterpreted_batch_ndims, 0))
        return ops.reduce_sum(x, axis=axes, name=name)

    def sample(self, sample_shape=(), seed=None, name="sample"):
        return self.distribution.sample(sample_shape, seed=seed, name=name)

    def log_prob(self, value, name="log_prob"):
        return self._sum_event(self.distribution.log_prob(value), name)

    def prob(self, value, name="prob"):
        return ops.exp(self.log_prob(value), name=name)

    def entropy(self, name="entropy"):
        return self._sum_event(self.distribution.entropy(), name)

    def mean(self, name="mean"):
        return self.distribution.mean(name=name)

    def mode(self, name="mode"):
        return self.distribution.mode(name=name)

    def variance(self, name="variance"):
        return self.distribution.variance(name=name)

    def stddev(self, name="stddev"):
        return self.distribution.stddev(name=name)

    @property
    def batch_shape(self):
        from shardflow.framework import TensorShape
        dims = self.distribution.batch_shape
        if dims.ndims is None:
            return TensorShape(None)
        return TensorShape(dims.as_list()[:dims.ndims - self.reinterpreted_batch_ndims])

    @property
    def event_shape(self):
        from shardflow.framework import TensorShape
        dims = self.distribution.batch_shape
        if dims.ndims is None:
            return TensorShape(None)
        return TensorShape(dims.as_list()[dims.ndims - self.reinterpreted_batch_ndims:])


class MultivariateNormalDiag(Independent):
    """N(loc, diag(scale_diag)^2) over the last dimension (tf.contrib.distributions'
    MultivariateNormalDiag): independent normals read as one event. scale_diag defaults to
    ones (times scale_identity_multiplier when given)."""

    def __init__(self, loc=None, scale_diag=None, scale_identity_multiplier=None,
                 validate_args=False, allow_nan_stats=True, name="MultivariateNormalDiag"):
        if loc is None and scale_diag is None:
            raise ValueError("MultivariateNormalDiag needs loc or scale_diag")
        loc = _float(loc) if loc is not None else None
        scale = _float(scale_diag, loc.dtype if loc is not None else None) \
            if scale_diag is not None else ops.ones_like(loc)
        if scale_identity_multiplier is not None:
            scale = ops.multiply(scale, _float(scale_identity_multiplier, scale.dtype))
        if loc is None:
            loc = ops.zeros_like(scale)
        self.loc, self.scale = loc, scale
        super().__init__(Normal(loc, scale, validate_args, allow_nan_stats), 1,
                         validate_args, name)


def kl_divergence(distribution_a, distribution_b, allow_nan_stats=True, name=None):
    """KL(a || b) for two Normals, two Categoricals or two Bernoullis (TF1's registered
    pairs), and two Independents (MultivariateNormalDiag) of such a pair with the same event
    rank (the sum over the event); other pairs raise NotImplementedError naming them."""
    a, b = distribution_a, distribution_b
    if isinstance(a, Independent) and isinstance(b, Independent):
        if a.reinterpreted_batch_ndims != b.reinterpreted_batch_ndims:
            raise ValueError("kl_divergence: the two Independent distributions read %d and %d "
                             "dimensions as their event" % (a.reinterpreted_batch_ndims,
                                                            b.reinterpreted_batch_ndims))
        return a._sum_event(kl_divergence(a.distribution, b.distribution, allow_nan_stats),
                            name)
    if isinstance(a, Normal) and isinstance(b, Normal):
        ratio = ops.square(ops.divide(a.scale, b.scale))
        diff = ops.square(ops.divide(ops.subtract(a.loc, b.loc), b.scale))
        return ops.multiply(0.5, ops.subtract(ops.add(ratio, diff),
                                              ops.add(1.0, ops.log(ratio))), name=name)
    if isinstance(a, Categorical) and isinstance(b, Categorical):
        return ops.reduce_sum(ops.multiply(a.probs, ops.subtract(a._log_probs, b._log_probs)),
                              axis=-1, name=name)
    if isinstance(a, Bernoulli) and isinstance(b, Bernoulli):
        from shardflow import nn
        # sum over x in {0, 1} of p_a(x) (log p_a(x) - log p_b(x)).
        ce_b = nn.sigmoid_cross_entropy_with_logits(labels=a.probs, logits=b.logits)
        ce_a = nn.sigmoid_cross_entropy_with_logits(labels=a.probs, logits=a.logits)
        return ops.subtract(ce_b, ce_a, name=name)
    raise NotImplementedError("kl_divergence(%s, %s) is not implemented (Normal, Categorical, "
                              "Bernoulli and Independent pairs are)" % (type(a).__name__,
                                                            type(b).__name__))


class ReparameterizationType:
    def __init__(self, rep_type):
        self._rep_type = rep_type

    def __repr__(self):
        return "<Reparameterization Type: %s>" % self._rep_type


FULLY_REPARAMETERIZED = ReparameterizationType("FULLY_REPARAMETERIZED")
NOT_REPARAMETERIZED = ReparameterizationType("NOT_REPARAMETERIZED")

__all__ = ["Bernoulli", "Categorical", "Distribution", "FULLY_REPARAMETERIZED", "Independent",
           "MultivariateNormalDiag", "NOT_REPARAMETERIZED", "Normal", "ReparameterizationType",
           "Uniform", "kl_divergence"]
