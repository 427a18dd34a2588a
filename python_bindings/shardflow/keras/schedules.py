"""tf.keras.optimizers.schedules (TF 1.14, 1.15): learning rates that follow the optimizer's step
count. A schedule is given as a Keras optimizer's learning rate; the training step reads
``schedule(optimizer.iterations)``::

    lr = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=1000, decay_rate=0.96)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr), loss="mse")

Each is TF's formula on the step before the update (the first step reads step 0); a schedule
called on a tensor builds graph ops, on a number gives a float32 tensor too.
"""

import numbers

from shardflow import array_ops, dtypes, ops


class LearningRateSchedule:
    """Base class: ``__call__(step)`` gives the learning rate at `step` (a scalar tensor);
    ``get_config()`` the arguments, so that model.save can write it."""

    def __call__(self, step):
        raise NotImplementedError

    def get_config(self):
        raise NotImplementedError

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _positive(name, value, cls):
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not value > 0:
        raise ValueError("%s(%s=%r): a positive number" % (cls, name, value))
    return float(value)


def _step(step):
    return ops.cast(step, dtypes.float32)


class _RatioDecay(LearningRateSchedule):
    """A schedule of p = step / decay_steps (floored with staircase=True)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name=None):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = _positive("decay_steps", decay_steps, type(self).__name__)
        self.decay_rate = float(decay_rate)
        self.staircase = bool(staircase)
        self.name = name

    def _p(self, step):
        p = ops.divide(_step(step), self.decay_steps)
        return ops.floor(p) if self.staircase else p

    def get_config(self):
        return dict(initial_learning_rate=self.initial_learning_rate,
                    decay_steps=self.decay_steps, decay_rate=self.decay_rate,
                    staircase=self.staircase, name=self.name)


class ExponentialDecay(_RatioDecay):
    """initial_learning_rate * decay_rate ^ (step / decay_steps), the exponent floored with
    staircase=True."""

    def __call__(self, step):
        return ops.multiply(self.initial_learning_rate,
                            ops.pow(ops.constant(self.decay_rate, dtypes.float32), self._p(step)))


class InverseTimeDecay(_RatioDecay):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps), the ratio floored with
    staircase=True."""

    def __call__(self, step):
        return ops.divide(self.initial_learning_rate,
                          ops.add(1.0, ops.multiply(self.decay_rate, self._p(step))))


class PolynomialDecay(LearningRateSchedule):
    """(initial - end) * (1 - min(step, decay_steps) / decay_steps) ^ power + end; with
    cycle=True decay_steps grows to the next multiple of itself past `step`."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                 cycle=False, name=None):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = _positive("decay_steps", decay_steps, "PolynomialDecay")
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)
        self.cycle = bool(cycle)
        self.name = name

    def __call__(self, step):
        s = _step(step)
        if self.cycle:
            # TF's: a multiple of decay_steps, at least one.
            steps = ops.multiply(self.decay_steps, ops.maximum(
                ops.ceil(ops.divide(s, self.decay_steps)), 1.0))
        else:
            steps = ops.constant(self.decay_steps, dtypes.float32)
            s = ops.minimum(s, self.decay_steps)
        frac = ops.subtract(1.0, ops.divide(s, steps))
        return ops.add(ops.multiply(self.initial_learning_rate - self.end_learning_rate,
                                    ops.pow(frac, self.power)), self.end_learning_rate)

    def get_config(self):
        return dict(initial_learning_rate=self.initial_learning_rate,
                    decay_steps=self.decay_steps, end_learning_rate=self.end_learning_rate,
                    power=self.power, cycle=self.cycle, name=self.name)


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[i] while boundaries[i-1] < step <= boundaries[i] (values[0] up to boundaries[0],
    values[-1] past the last)."""

    def __init__(self, boundaries, values, name=None):
        boundaries, values = list(boundaries), [float(v) for v in values]
        if len(values) != len(boundaries) + 1:
            raise ValueError("PiecewiseConstantDecay: %d boundaries need %d values, got %d"
                             % (len(boundaries), len(boundaries) + 1, len(values)))
        if any(b >= a for b, a in zip(boundaries, boundaries[1:])):
            raise ValueError("PiecewiseConstantDecay: boundaries must increase, got %r"
                             % (boundaries,))
        self.boundaries, self.values, self.name = boundaries, values, name

    def __call__(self, step):
        s = _step(step)
        lr = ops.constant(self.values[-1], dtypes.float32)
        # From the last interval back: each boundary that `step` has not passed picks its value.
        for boundary, value in reversed(list(zip(self.boundaries, self.values))):
            lr = array_ops.where(ops.less_equal(s, float(boundary)),
                           ops.constant(value, dtypes.float32), lr)
        return lr

    def get_config(self):
        return dict(boundaries=self.boundaries, values=self.values, name=self.name)


_CLASSES = {c.__name__: c for c in (ExponentialDecay, InverseTimeDecay, PolynomialDecay,
                                    PiecewiseConstantDecay)}


def serialize(schedule):
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(config, custom_objects=None):
    classes = dict(_CLASSES, **(custom_objects or {}))
    cls = classes.get(config.get("class_name")) if isinstance(config, dict) else None
    if cls is None:
        raise ValueError("unknown learning rate schedule %r; known: %s (a custom one goes in "
                         "custom_objects)" % (config, ", ".join(sorted(_CLASSES))))
    return cls.from_config(config.get("config", {}))
