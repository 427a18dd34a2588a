"""TF1's tf.distributions (also tf.contrib.distributions' core): the Distribution base class,
Normal, Uniform, Categorical, Bernoulli, Independent and MultivariateNormalDiag here, with
kl_divergence through TF1's RegisterKL registry; the Gamma family and other univariate
distributions (Gamma, Exponential, Beta, Dirichlet, Laplace, StudentT, Poisson) are in
distributions_univariate.py and the multivariate ones and mixtures (OneHotCategorical,
RelaxedOneHotCategorical, MultivariateNormalTriL / FullCovariance, MixtureSameFamily) in
distributions_multivariate.py, all exported from here. They are composed from the engine's ops
(sampling through random_normal, random_uniform, random_gamma and multinomial; densities and
their gradients through ordinary ops, so they train as in TF1: policy gradients, VAEs).

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


def _common_dtype(*params):
    """The parameters' dtype, as TF1's common_dtype: the first floating tensor's or NumPy
    array's (a float64 array makes a float64 distribution), else float32."""
    from shardflow.framework import Tensor
    for p in params:
        if isinstance(p, Tensor) and p.dtype.is_floating:
            return p.dtype
        if isinstance(p, (np.ndarray, np.floating)) and p.dtype.kind == "f":
            return dtypes.as_dtype(p.dtype)
    return dtypes.float32


def _float(x, dtype=None):
    """`x` as a floating tensor. A Python number, list or NumPy array takes `dtype` (without
    one: a NumPy float array keeps its own, anything else is float32), as TF1's
    preferred_dtype conversion gives float64 NumPy data to a float32 distribution's log_prob;
    a tensor keeps its floating dtype (integers are cast)."""
    from shardflow.framework import Tensor
    if not isinstance(x, Tensor):
        arr = np.asarray(x)
        if arr.dtype.kind in "biuf":
            target = dtype or _common_dtype(x)            # a list's float64 is not a choice
            return convert_to_tensor(arr.astype(target.as_numpy_dtype))
    t = convert_to_tensor(x)
    if not t.dtype.is_floating:
        t = ops.cast(t, dtype or dtypes.float32)
    return t


def _sample_shape(sample_shape):
    """sample_shape as a list of ints, or, when it is a tensor (a scalar or a vector: TF1 takes
    `dist.sample(tf.shape(x)[0])`), as an int32 vector tensor."""
    from shardflow.framework import Tensor
    if isinstance(sample_shape, Tensor):
        return ops.reshape(ops.cast(sample_shape, dtypes.int32), [-1])
    if sample_shape is None or sample_shape == ():
        return []
    if isinstance(sample_shape, (int, np.integer)):
        return [int(sample_shape)]
    if any(isinstance(d, Tensor) for d in sample_shape):       # [tf.shape(x)[0], 2]
        from shardflow.array_ops import stack
        return stack([ops.cast(d, dtypes.int32) if isinstance(d, Tensor) else int(d)
                      for d in sample_shape])
    return [int(d) for d in sample_shape]


class ReparameterizationType:
    """TF1's tag for whether a distribution's samples carry gradients to its parameters."""

    def __init__(self, rep_type):
        self._rep_type = rep_type

    def __repr__(self):
        return "<Reparameterization Type: %s>" % self._rep_type


FULLY_REPARAMETERIZED = ReparameterizationType("FULLY_REPARAMETERIZED")
NOT_REPARAMETERIZED = ReparameterizationType("NOT_REPARAMETERIZED")


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

    # TF1's reparameterization_type: whether samples carry gradients to the parameters.
    reparameterization_type = NOT_REPARAMETERIZED     # each class sets its own

    def _not_implemented(self, what):
        raise NotImplementedError("%s is not implemented: %s" % (what, type(self).__name__))

    def mean(self, name="mean"):
        self._not_implemented("mean")

    def mode(self, name="mode"):
        self._not_implemented("mode")

    def variance(self, name="variance"):
        self._not_implemented("variance")

    def covariance(self, name="covariance"):
        self._not_implemented("covariance")

    def entropy(self, name="entropy"):
        self._not_implemented("entropy")

    def cdf(self, value, name="cdf"):
        self._not_implemented("cdf")

    def quantile(self, value, name="quantile"):
        self._not_implemented("quantile")

    def prob(self, value, name="prob"):
        return ops.exp(self.log_prob(value), name=name)

    def log_cdf(self, value, name="log_cdf"):
        return ops.log(self.cdf(value), name=name)

    def survival_function(self, value, name="survival_function"):
        return ops.subtract(1.0, self.cdf(value), name=name)

    def log_survival_function(self, value, name="log_survival_function"):
        return ops.log(self.survival_function(value), name=name)

    def stddev(self, name="stddev"):
        return ops.sqrt(self.variance(), name=name)

    def kl_divergence(self, other, name="kl_divergence"):
        """KL(self || other), as tf.distributions.kl_divergence(self, other)."""
        return kl_divergence(self, other, name=name)

    def cross_entropy(self, other, name="cross_entropy"):
        """-E_self[log other(x)] = entropy(self) + KL(self || other), as TF1's."""
        return ops.add(self.entropy(), kl_divergence(self, other), name=name)

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        return ops.shape(self.mean())

    def event_shape_tensor(self, name="event_shape_tensor"):
        return ops.constant(np.asarray(self.event_shape.as_list(), np.int32), name=name)

    def is_scalar_batch(self, name="is_scalar_batch"):
        return self.batch_shape.ndims == 0

    def is_scalar_event(self, name="is_scalar_event"):
        return self.event_shape.ndims == 0

    @property
    def batch_shape(self):
        return self.mean().shape

    @property
    def event_shape(self):
        from shardflow.framework import TensorShape
        return TensorShape([])

    def _full(self, sample_shape, like):
        """sample_shape + batch_shape (the batch shape from the broadcast parameters)."""
        shape = _sample_shape(sample_shape)
        if isinstance(shape, list):
            shape = np.asarray(shape, np.int32)
        return ops.concat([shape, ops.shape(like)], 0)


class Normal(Distribution):
    """The normal distribution N(loc, scale^2)."""

    reparameterization_type = FULLY_REPARAMETERIZED

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Normal"):
        dt = _common_dtype(loc, scale)
        self.loc = _float(loc, dt)
        self.scale = _float(scale, dt)
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

    def _z(self, value):
        return ops.divide(ops.subtract(_float(value, self.dtype), self.loc), self.scale)

    def cdf(self, value, name="cdf"):
        return ops.identity(_ndtr(self._z(value)), name=name)

    def log_cdf(self, value, name="log_cdf"):
        return ops.identity(_log_ndtr(self._z(value)), name=name)

    def survival_function(self, value, name="survival_function"):
        return ops.identity(_ndtr(ops.negative(self._z(value))), name=name)

    def log_survival_function(self, value, name="log_survival_function"):
        return ops.identity(_log_ndtr(ops.negative(self._z(value))), name=name)

    def quantile(self, value, name="quantile"):
        from shardflow import math as sf_math
        p = _float(value, self.dtype)
        ndtri = ops.multiply(math.sqrt(2.0),
                             sf_math.erfinv(ops.subtract(ops.multiply(2.0, p), 1.0)))
        return ops.add(self._loc_b, ops.multiply(self._scale_b, ndtri), name=name)

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

    reparameterization_type = FULLY_REPARAMETERIZED

    def __init__(self, low=0.0, high=1.0, validate_args=False, allow_nan_stats=True,
                 name="Uniform"):
        dt = _common_dtype(low, high)
        self.low = _float(low, dt)
        self.high = _float(high, dt)
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

    def cdf(self, value, name="cdf"):
        x = _float(value, self.dtype)
        inside = ops.divide(ops.subtract(x, self.low), self.range())
        return ops.clip_by_value(inside, 0.0, 1.0, name=name)

    def entropy(self, name="entropy"):
        return ops.log(self.range(), name=name)

    def mean(self, name="mean"):
        return ops.multiply(0.5, ops.add(self._low_b, self._high_b), name=name)

    def variance(self, name="variance"):
        return ops.divide(ops.square(self.range()), 12.0, name=name)


def _ndtr(z):
    """The standard normal CDF, accurate in both tails (TF's special_math.ndtr: erfc where
    1 + erf would cancel)."""
    from shardflow.array_ops import where_v2
    from shardflow.core_extras import erfc
    w = ops.multiply(z, 0.5 * math.sqrt(2.0))
    a = ops.abs(w)
    y = where_v2(ops.less(a, 0.5 * math.sqrt(2.0)), ops.add(1.0, ops.erf(w)),
                 where_v2(ops.greater(w, 0.0), ops.subtract(2.0, erfc(a)), erfc(a)))
    return ops.multiply(0.5, y)


def _log_ndtr(z):
    """log of the standard normal CDF, as TF's special_math.log_ndtr: the asymptotic series
    -z^2/2 - log(-z) - log(2 pi)/2 + log(1 - 1/z^2 + 3/z^4 - 15/z^6) below -20 (float64) or
    -10 (float32), -ndtr(-z) above 8 or 5, log(ndtr(z)) between."""
    from shardflow.array_ops import where_v2
    lower = -20.0 if z.dtype == dtypes.float64 else -10.0
    upper = 8.0 if z.dtype == dtypes.float64 else 5.0
    tail = ops.less(z, lower)
    safe_z = where_v2(tail, z, ops.fill(ops.shape(z), ops.cast(lower - 1.0, z.dtype)))
    inv2 = ops.reciprocal(ops.square(safe_z))
    series = ops.add(1.0, ops.multiply(inv2, ops.add(-1.0, ops.multiply(inv2, ops.add(
        3.0, ops.multiply(inv2, -15.0))))))
    asym = ops.subtract(ops.subtract(ops.multiply(-0.5, ops.square(safe_z)),
                                     ops.log(ops.negative(safe_z))),
                        ops.subtract(_HALF_LOG_TWO_PI, ops.log(series)))
    near = where_v2(tail, ops.zeros_like(z), z)
    high = ops.negative(_ndtr(ops.negative(z)))        # log(1 - t) ~ -t for the upper tail
    return where_v2(tail, asym, where_v2(ops.greater(z, upper), high, ops.log(_ndtr(near))))


def _where(condition, values, name):
    from shardflow.array_ops import where_v2
    return where_v2(condition, values, ops.fill(ops.shape(values), -np.inf), name=name)


class Categorical(Distribution):
    """A distribution over 0..k-1 from `logits` (or `probs`) on the last axis; samples are
    `dtype` (int32)."""

    reparameterization_type = NOT_REPARAMETERIZED

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
        if not isinstance(shape, list):
            return self._sample_gumbel(shape, seed, name)
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

    def _sample_gumbel(self, shape, seed, name):
        """Draws for a sample shape known only when the step runs: argmax of the logits plus
        Gumbel noise (the Gumbel-max trick tf.multinomial uses too)."""
        full = ops.concat([shape, ops.shape(self.logits)], 0)
        tiny = float(np.finfo(self.logits.dtype.as_numpy_dtype).tiny)
        u = ops.random_uniform(full, tiny, 1.0, dtype=self.logits.dtype, seed=seed)
        scores = ops.subtract(ops.stop_gradient(self.logits), ops.log(ops.negative(ops.log(u))))
        return ops.cast(ops.argmax(scores, -1), self.dtype, name=name)

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

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        return ops.shape(self.logits)[:-1]


class Bernoulli(Distribution):
    """A distribution over {0, 1} with P(1) = sigmoid(logits) (or `probs`); samples are
    `dtype` (int32)."""

    reparameterization_type = NOT_REPARAMETERIZED

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

    @property
    def reparameterization_type(self):
        return self.distribution.reparameterization_type

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

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        full = self.distribution.batch_shape_tensor()
        if self.reinterpreted_batch_ndims == 0:
            return full
        return full[:-self.reinterpreted_batch_ndims]

    def event_shape_tensor(self, name="event_shape_tensor"):
        if self.reinterpreted_batch_ndims == 0:
            return self.distribution.event_shape_tensor()
        return ops.concat([self.distribution.batch_shape_tensor()[
            -self.reinterpreted_batch_ndims:], self.distribution.event_shape_tensor()], 0)

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
        dt = _common_dtype(loc, scale_diag, scale_identity_multiplier)
        loc = _float(loc, dt) if loc is not None else None
        scale = _float(scale_diag, dt) \
            if scale_diag is not None else ops.ones_like(loc)
        if scale_identity_multiplier is not None:
            scale = ops.multiply(scale, _float(scale_identity_multiplier, scale.dtype))
        if loc is None:
            loc = ops.zeros_like(scale)
        self.loc, self.scale = loc, scale
        super().__init__(Normal(loc, scale, validate_args, allow_nan_stats), 1,
                         validate_args, name)

    def covariance(self, name="covariance"):
        """diag(scale_diag^2) for each batch member: [..., k, k]."""
        from shardflow.matrix_composites import matrix_diag
        return matrix_diag(self.distribution.variance(), name=name)


def _broadcast(*params):
    """The parameters broadcast against each other (each the batch shape)."""
    zero = ops.zeros_like(params[0])
    for p in params[1:]:
        zero = ops.add(zero, ops.zeros_like(p))
    return [ops.add(p, zero) for p in params]


def _nan_unless(condition, value, allow_nan_stats, what):
    """`value` where `condition`, NaN elsewhere (TF1's allow_nan_stats=True statistics)."""
    from shardflow.array_ops import where_v2
    if not allow_nan_stats:
        raise ValueError("%s is undefined for some parameters; allow_nan_stats=False checks are "
                         "not available here" % what)
    return where_v2(condition, value, ops.fill(ops.shape(value), ops.cast(np.nan, value.dtype)))


def _lbeta(x):
    """log B(x) over the last axis: sum(lgamma(x)) - lgamma(sum(x))."""
    return ops.subtract(ops.reduce_sum(ops.lgamma(x), axis=-1),
                        ops.lgamma(ops.reduce_sum(x, axis=-1)))


def _seed_for(seed, salt):
    """A second op seed derived from `seed` (TF's distribution_util.gen_new_seed)."""
    return None if seed is None else (int(seed) * 7919 + salt) % (2 ** 31 - 1) or 1


# ---- KL divergences: TF1's registry (tf.distributions.RegisterKL) ---------------------------

_KL = {}


class RegisterKL:
    """Decorator registering fn(a, b, name=None) as KL(a || b) for a pair of distribution
    classes (their subclasses too, the nearest registered pair winning), as TF1's."""

    def __init__(self, dist_cls_a, dist_cls_b):
        self._key = (dist_cls_a, dist_cls_b)

    def __call__(self, fn):
        if self._key in _KL:
            raise ValueError("KL(%s || %s) has already been registered"
                             % (self._key[0].__name__, self._key[1].__name__))
        _KL[self._key] = fn
        return fn


def _registered_kl(type_a, type_b):
    best, best_distance = None, None
    for i, a in enumerate(type_a.__mro__):
        for j, b in enumerate(type_b.__mro__):
            fn = _KL.get((a, b))
            if fn is not None and (best_distance is None or i + j < best_distance):
                best, best_distance = fn, i + j
    return best


def kl_divergence(distribution_a, distribution_b, allow_nan_stats=True, name=None):
    """KL(a || b) for a registered pair (TF1's: Normal, Categorical, Bernoulli, Gamma (and
    Exponential), Beta and Dirichlet pairs; here also two Independents, as
    MultivariateNormalDiag, of such a pair with one event rank: the sum over the event);
    other pairs raise NotImplementedError naming them."""
    fn = _registered_kl(type(distribution_a), type(distribution_b))
    if fn is None:
        pairs = ", ".join(a.__name__ if a is b else "%s/%s" % (a.__name__, b.__name__)
                          for a, b in _KL)
        raise NotImplementedError("No KL(distribution_a || distribution_b) registered for "
                                  "distribution_a type %s and distribution_b type %s (pairs "
                                  "registered: %s)" % (type(distribution_a).__name__,
                                                       type(distribution_b).__name__, pairs))
    out = fn(distribution_a, distribution_b, name=None)
    return ops.identity(out, name=name) if name else out


@RegisterKL(Normal, Normal)
def _kl_normal(a, b, name=None):
    ratio = ops.square(ops.divide(a.scale, b.scale))
    diff = ops.square(ops.divide(ops.subtract(a.loc, b.loc), b.scale))
    return ops.multiply(0.5, ops.subtract(ops.add(ratio, diff), ops.add(1.0, ops.log(ratio))),
                        name=name)


@RegisterKL(Categorical, Categorical)
def _kl_categorical(a, b, name=None):
    return ops.reduce_sum(ops.multiply(a.probs, ops.subtract(a._log_probs, b._log_probs)),
                          axis=-1, name=name)


@RegisterKL(Bernoulli, Bernoulli)
def _kl_bernoulli(a, b, name=None):
    from shardflow import nn
    # sum over x in {0, 1} of p_a(x) (log p_a(x) - log p_b(x)).
    ce_b = nn.sigmoid_cross_entropy_with_logits(labels=a.probs, logits=b.logits)
    ce_a = nn.sigmoid_cross_entropy_with_logits(labels=a.probs, logits=a.logits)
    return ops.subtract(ce_b, ce_a, name=name)


@RegisterKL(Independent, Independent)
def _kl_independent(a, b, name=None):
    if a.reinterpreted_batch_ndims != b.reinterpreted_batch_ndims:
        raise ValueError("kl_divergence: the two Independent distributions read %d and %d "
                         "dimensions as their event" % (a.reinterpreted_batch_ndims,
                                                        b.reinterpreted_batch_ndims))
    return a._sum_event(kl_divergence(a.distribution, b.distribution), name)


# The other families register their classes and KLs with the registry above.
from shardflow.distributions_univariate import (Beta, Dirichlet, Exponential,  # noqa: E402,F401
                                                Gamma, Laplace, Poisson, StudentT)
from shardflow.distributions_multivariate import (  # noqa: E402,F401
    MixtureSameFamily, MultivariateNormalFullCovariance, MultivariateNormalTriL,
    OneHotCategorical, RelaxedOneHotCategorical)

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Exponential",
           "FULLY_REPARAMETERIZED", "Gamma", "Independent", "Laplace", "MixtureSameFamily",
           "MultivariateNormalDiag", "MultivariateNormalFullCovariance", "MultivariateNormalTriL",
           "NOT_REPARAMETERIZED", "Normal", "OneHotCategorical", "Poisson", "RegisterKL",
           "RelaxedOneHotCategorical", "ReparameterizationType", "StudentT", "Uniform",
           "kl_divergence"]
