"""tf.keras.initializers: Keras's initializer names and classes, as shardflow initializers.

Example: ``keras.layers.Dense(10, kernel_initializer="he_normal")`` or
``kernel_initializer=keras.initializers.RandomNormal(stddev=0.01)``.
"""

from shardflow.variable_scope import (random_normal_initializer, random_uniform_initializer,
                                      truncated_normal_initializer)
from shardflow.variables import initializers as _sf


def Zeros():  # noqa: N802 (Keras's class-like spelling)
    return _sf.zeros()


def Ones():  # noqa: N802
    return _sf.constant(1.0)


def Constant(value=0.0):  # noqa: N802
    return _sf.constant(value)


def RandomNormal(mean=0.0, stddev=0.05, seed=None):  # noqa: N802
    return random_normal_initializer(mean, stddev, seed=seed)


def RandomUniform(minval=-0.05, maxval=0.05, seed=None):  # noqa: N802
    return random_uniform_initializer(minval, maxval, seed=seed)


def TruncatedNormal(mean=0.0, stddev=0.05, seed=None):  # noqa: N802
    return truncated_normal_initializer(mean, stddev, seed=seed)


def glorot_uniform(seed=None):
    return _sf.glorot_uniform(seed or 0)


def glorot_normal(seed=None):
    return _sf.glorot_normal(seed or 0)


def he_uniform(seed=None):
    return _sf.he_uniform(seed or 0)


def he_normal(seed=None):
    return _sf.he_normal(seed or 0)


def Orthogonal(gain=1.0, seed=None):  # noqa: N802
    return _sf.orthogonal(gain, seed)


zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
orthogonal = Orthogonal
GlorotUniform, GlorotNormal, HeUniform, HeNormal = glorot_uniform, glorot_normal, he_uniform, \
    he_normal

_BY_NAME = {"zeros": Zeros, "ones": Ones, "constant": Constant, "uniform": RandomUniform,
            "random_uniform": RandomUniform, "normal": RandomNormal,
            "random_normal": RandomNormal, "truncated_normal": TruncatedNormal,
            "glorot_uniform": glorot_uniform, "glorot_normal": glorot_normal,
            "he_uniform": he_uniform, "he_normal": he_normal, "orthogonal": Orthogonal}


def get(identifier):
    """An initializer from a Keras name ('glorot_uniform', 'zeros', ...) or as given."""
    if identifier is None or not isinstance(identifier, str):
        return identifier
    make = _BY_NAME.get(identifier.lower())
    if make is None:
        raise ValueError("unknown initializer %r; known: %s"
                         % (identifier, ", ".join(sorted(_BY_NAME))))
    return make()
