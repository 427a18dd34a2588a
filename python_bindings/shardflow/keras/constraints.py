"""tf.keras.constraints: functions of a weight giving its projected value, applied after each
optimizer step (TF 1.15's MaxNorm, NonNeg, UnitNorm, MinMaxNorm).

Example::

    keras.layers.Dense(64, kernel_constraint=keras.constraints.max_norm(2.0))

A layer stores its constraint on the weight (``variable._keras_constraint``); the training
step of keras.optimizers (and of a wrapped tf.train optimizer) then assigns
``constraint(weight)`` to each such weight after updating it.
"""

from shardflow import dtypes, ops
from shardflow.keras import backend as K


def _norms(w, axis):
    return ops.sqrt(ops.reduce_sum(ops.square(w), axis=axis, keepdims=True))


class Constraint:
    """Base class: a callable weight -> constrained weight (this one: unchanged)."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class MaxNorm(Constraint):
    """Scales the weight so that the L2 norm along `axis` (0: each column of a Dense kernel,
    [0, 1, 2] for a Conv2D kernel's filters) is at most max_value:
    w * clip(norm, 0, max_value) / (epsilon + norm)."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = ops.clip_by_value(norms, 0.0, float(self.max_value))
        return ops.multiply(w, ops.divide(desired, ops.add(norms, K.epsilon())))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Sets the negative entries to zero."""

    def __call__(self, w):
        return ops.multiply(w, ops.cast(ops.greater_equal(w, 0.0), dtypes.as_dtype(K.floatx())))


class UnitNorm(Constraint):
    """Divides the weight by its L2 norm along `axis` (plus epsilon)."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return ops.divide(w, ops.add(_norms(w, self.axis), K.epsilon()))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves the L2 norm along `axis` towards [min_value, max_value]:
    desired = rate * clip(norm, min_value, max_value) + (1 - rate) * norm;
    w * desired / (epsilon + norm)."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        clipped = ops.clip_by_value(norms, float(self.min_value), float(self.max_value))
        desired = ops.add(ops.multiply(float(self.rate), clipped),
                          ops.multiply(1.0 - float(self.rate), norms))
        return ops.multiply(w, ops.divide(desired, ops.add(norms, K.epsilon())))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm = maxnorm = MaxNorm
non_neg = nonneg = NonNeg
unit_norm = unitnorm = UnitNorm
min_max_norm = MinMaxNorm

_CLASSES = {"Constraint": Constraint, "MaxNorm": MaxNorm, "NonNeg": NonNeg,
            "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm, "max_norm": MaxNorm,
            "maxnorm": MaxNorm, "non_neg": NonNeg, "nonneg": NonNeg, "unit_norm": UnitNorm,
            "unitnorm": UnitNorm, "min_max_norm": MinMaxNorm}


def serialize(constraint):
    return {"class_name": type(constraint).__name__, "config": constraint.get_config()}


def deserialize(config, custom_objects=None):
    """The constraint a {'class_name', 'config'} dict names (custom_objects first)."""
    custom_objects = custom_objects or {}
    name = config.get("class_name")
    cls = custom_objects.get(name) or _CLASSES.get(name)
    if cls is None:
        raise ValueError("Unknown constraint: %s" % (name,))
    return cls(**config.get("config", {}))


def get(identifier):
    """None, a constraint from its name ('max_norm', 'NonNeg', ...), a serialize() dict, or
    a callable itself."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}})
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret constraint identifier: %r" % (identifier,))


def apply_after(update, variables):
    """An op that runs `update`, then assigns constraint(value after the update) to each of
    `variables` that carries a constraint (attribute `_keras_constraint`, or `constraint`);
    `update` itself when none does."""
    from shardflow.train import _apply_constraints  # what every optimizer step does
    return _apply_constraints(update, variables)
