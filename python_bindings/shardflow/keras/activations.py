"""tf.keras.activations: functions of a tensor, and `get` for Keras's string names.

Example: ``keras.activations.get("relu")(x)``; layers take ``activation="relu"`` directly.
"""

from shardflow import nn, ops


def linear(x):
    return x


def relu(x, alpha=0.0, max_value=None):
    y = nn.relu(x)
    if alpha:
        y = ops.subtract(y, ops.multiply(alpha, nn.relu(ops.negative(x))))
    if max_value is not None:
        y = ops.minimum(y, float(max_value))
    return y


def softmax(x, axis=-1):
    if axis != -1:
        raise ValueError("keras.activations.softmax: only axis=-1 is supported, not %r" % axis)
    return nn.softmax(x)


sigmoid = ops.sigmoid
tanh = ops.tanh
elu = nn.elu
selu = nn.selu
softplus = nn.softplus
relu6 = nn.relu6


def exponential(x):
    """exp(x)."""
    return ops.exp(x)


def hard_sigmoid(x):
    return ops.clip_by_value(ops.add(ops.multiply(x, 0.2), 0.5), 0.0, 1.0)


_BY_NAME = {"linear": linear, "relu": nn.relu, "softmax": softmax, "sigmoid": sigmoid,
            "tanh": tanh, "elu": elu, "selu": selu, "softplus": softplus, "relu6": relu6,
            "hard_sigmoid": hard_sigmoid, "exponential": exponential}


def get(identifier):
    """The activation function named `identifier` (None and 'linear': the identity), or
    `identifier` itself when it is callable."""
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    fn = _BY_NAME.get(identifier)
    if fn is None:  # a name given to keras.utils.custom_object_scope
        from shardflow.keras.utils import get_custom_objects
        fn = get_custom_objects().get(identifier)
    if fn is None:
        raise ValueError("unknown activation %r; known: %s"
                         % (identifier, ", ".join(sorted(_BY_NAME))))
    return fn


def serialize(fn):
    """The activation's name, for summaries."""
    for name, f in _BY_NAME.items():
        if f is fn:
            return name
    return getattr(fn, "__name__", repr(fn))
