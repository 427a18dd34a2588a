"""Learning-rate schedules, TF1's tf.train.*_decay: float32 tensors of the global step.

Each is TensorFlow 1.15's formula (learning_rate_decay_v2.py), built from element-wise ops, so
the rate is recomputed every step from the step's value.

Example::

    global_step = sf.train.get_or_create_global_step()
    lr = sf.train.cosine_decay(0.1, global_step, decay_steps=10000, alpha=0.01)
    train = sf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=global_step)
"""

import functools
import math

from shardflow import dtypes
from shardflow.framework import convert_to_tensor
from shardflow.variables import Variable


def _step(global_step, what):
    """The global step (a Variable, tensor or number) as a float32 tensor."""
    from shardflow import ops
    if global_step is None:
        raise ValueError("%s needs global_step (sf.train.get_or_create_global_step())" % what)
    step = global_step.value() if isinstance(global_step, Variable) else \
        convert_to_tensor(global_step)
    return step if step.dtype == dtypes.float32 else ops.cast(step, dtypes.float32)


def _steps(value):
    """decay_steps and the like: a Python number as float, a tensor as a float32 tensor."""
    from shardflow import ops
    if isinstance(value, Variable):
        value = value.value()
    if hasattr(value, "dtype"):
        return value if value.dtype == dtypes.float32 else ops.cast(value, dtypes.float32)
    return float(value)


def _in_the_rate_dtype(schedule):
    """A schedule of a float64 (or float16) learning rate is computed in float32 and cast back
    to the rate's dtype (TF1 computes in the rate's dtype; it was an "insert a Cast" error)."""
    @functools.wraps(schedule)
    def wrapped(learning_rate, *args, **kwargs):
        rate = learning_rate.value() if isinstance(learning_rate, Variable) else learning_rate
        dtype = getattr(rate, "dtype", None)
        if dtype is None or dtype == dtypes.float32 or not dtype.is_floating:
            return schedule(learning_rate, *args, **kwargs)
        from shardflow import ops
        name = kwargs.pop("name", None)
        out = schedule(ops.cast(rate, dtypes.float32), *args, **kwargs)
        return ops.cast(out, dtype, name=name)
    return wrapped


def _ratio(global_step, decay_steps, staircase, what):
    """global_step / decay_steps as float32, floored when staircase."""
    from shardflow import ops
    p = ops.divide(_step(global_step, what), _steps(decay_steps))
    return ops.floor(p) if staircase else p


@_in_the_rate_dtype
def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * decay_rate ** (global_step / decay_steps) (the ratio floored when
    staircase)."""
    from shardflow import ops
    p = _ratio(global_step, decay_steps, staircase, "exponential_decay")
    return ops.multiply(learning_rate, ops.pow(float(decay_rate), p), name=name)


@_in_the_rate_dtype
def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """learning_rate / (1 + decay_rate * global_step / decay_steps) (the ratio floored when
    staircase)."""
    from shardflow import ops
    p = _ratio(global_step, decay_steps, staircase, "inverse_time_decay")
    return ops.divide(learning_rate, ops.add(1.0, ops.multiply(float(decay_rate), p)),
                      name=name)


@_in_the_rate_dtype
def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * exp(-decay_rate * global_step / decay_steps) (the ratio floored when
    staircase)."""
    from shardflow import ops
    p = _ratio(global_step, decay_steps, staircase, "natural_exp_decay")
    return ops.multiply(learning_rate, ops.exp(ops.multiply(-float(decay_rate), p)), name=name)


@_in_the_rate_dtype
def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(learning_rate - end) * (1 - step / decay_steps) ** power + end, with the step held at
    decay_steps; with cycle=True, decay_steps grows instead to the first multiple of itself
    at or past the step (TF1: ceil(step / decay_steps), 1 at step 0)."""
    from shardflow import ops
    from shardflow.array_ops import where
    step = _step(global_step, "polynomial_decay")
    if cycle:
        multiplier = where(ops.equal(step, 0.0), ops.constant(1.0),
                           ops.ceil(ops.divide(step, _steps(decay_steps))))
        p = ops.divide(step, ops.multiply(_steps(decay_steps), multiplier))
    else:
        p = ops.divide(ops.minimum(step, _steps(decay_steps)), _steps(decay_steps))
    return ops.add(ops.multiply(ops.subtract(learning_rate, end_learning_rate),
                                ops.pow(ops.subtract(1.0, p), float(power))),
                   end_learning_rate, name=name)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <=
    boundaries[i], values[-1] past the last boundary (each value exactly, in its own dtype:
    float32 for Python floats)."""
    from shardflow import ops
    from shardflow.array_ops import where
    if len(values) != len(boundaries) + 1:
        raise ValueError("piecewise_constant needs one more value than boundaries, got %d "
                         "boundaries and %d values" % (len(boundaries), len(values)))
    x = x.value() if isinstance(x, Variable) else convert_to_tensor(x)
    consts = [v.value() if isinstance(v, Variable) else convert_to_tensor(v) for v in values]
    out = consts[-1]
    for b, v in reversed(list(zip(boundaries, consts[:-1]))):
        out = where(ops.less_equal(x, ops.cast(b, x.dtype)), v, out)
    return ops.identity(out, name=name)


@_in_the_rate_dtype
def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha): from learning_rate down to alpha * learning_rate."""
    from shardflow import ops
    step = ops.minimum(_step(global_step, "cosine_decay"), _steps(decay_steps))
    cosine = ops.multiply(0.5, ops.add(1.0, ops.cos(
        ops.multiply(math.pi, ops.divide(step, _steps(decay_steps))))))
    decayed = ops.add(ops.multiply(1.0 - float(alpha), cosine), float(alpha))
    return ops.multiply(learning_rate, decayed, name=name)


@_in_the_rate_dtype
def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0,
                          m_mul=1.0, alpha=0.0, name=None):
    """Cosine decay with warm restarts (SGDR): the i-th period lasts first_decay_steps *
    t_mul**i steps and starts from learning_rate * m_mul**i."""
    from shardflow import ops
    t_mul, m_mul, alpha = float(t_mul), float(m_mul), float(alpha)
    fraction = ops.divide(_step(global_step, "cosine_decay_restarts"), _steps(first_decay_steps))
    if t_mul == 1.0:
        i_restart = ops.floor(fraction)
        fraction = ops.subtract(fraction, i_restart)
    else:
        i_restart = ops.floor(ops.divide(
            ops.log(ops.subtract(1.0, ops.multiply(fraction, 1.0 - t_mul))), math.log(t_mul)))
        t_pow = ops.pow(t_mul, i_restart)
        sum_r = ops.divide(ops.subtract(1.0, t_pow), 1.0 - t_mul)
        fraction = ops.divide(ops.subtract(fraction, sum_r), t_pow)
    m_fac = ops.pow(m_mul, i_restart)
    cosine = ops.multiply(ops.multiply(0.5, m_fac),
                          ops.add(1.0, ops.cos(ops.multiply(math.pi, fraction))))
    decayed = ops.add(ops.multiply(1.0 - alpha, cosine), alpha)
    return ops.multiply(learning_rate, decayed, name=name)


@_in_the_rate_dtype
def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    """learning_rate * ((alpha + (decay_steps - s) / decay_steps) * 0.5 * (1 + cos(2 pi
    num_periods s / decay_steps)) + beta), s = min(step, decay_steps)."""
    from shardflow import ops
    step = ops.minimum(_step(global_step, "linear_cosine_decay"), _steps(decay_steps))
    fraction = ops.divide(step, _steps(decay_steps))
    linear = ops.subtract(1.0, fraction)
    cosine = ops.multiply(0.5, ops.add(1.0, ops.cos(
        ops.multiply(2.0 * math.pi * float(num_periods), fraction))))
    decayed = ops.add(ops.multiply(ops.add(float(alpha), linear), cosine), float(beta))
    return ops.multiply(learning_rate, decayed, name=name)


@_in_the_rate_dtype
def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0,
                              variance_decay=0.55, num_periods=0.5, alpha=0.0, beta=0.001,
                              name=None):
    """linear_cosine_decay with Gaussian noise on the linear term: learning_rate * ((alpha +
    (decay_steps - s) / decay_steps + eps) * 0.5 * (1 + cos(2 pi num_periods s / decay_steps))
    + beta), s = min(step, decay_steps), eps ~ N(0, initial_variance / (1 + s) **
    variance_decay), drawn each evaluation (seeded by sf.set_random_seed)."""
    from shardflow import ops
    step = ops.minimum(_step(global_step, "noisy_linear_cosine_decay"), _steps(decay_steps))
    fraction = ops.divide(step, _steps(decay_steps))
    variance = ops.divide(float(initial_variance),
                          ops.pow(ops.add(1.0, step), float(variance_decay)))
    noise = ops.multiply(ops.random_normal([]), ops.sqrt(variance))
    linear = ops.add(ops.subtract(1.0, fraction), noise)
    cosine = ops.multiply(0.5, ops.add(1.0, ops.cos(
        ops.multiply(2.0 * math.pi * float(num_periods), fraction))))
    decayed = ops.add(ops.multiply(ops.add(float(alpha), linear), cosine), float(beta))
    return ops.multiply(learning_rate, decayed, name=name)
