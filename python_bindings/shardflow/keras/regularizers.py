"""tf.keras.regularizers: l1, l2 and l1_l2 penalties, functions of a weight tensor.

Example: ``keras.layers.Dense(64, kernel_regularizer=keras.regularizers.l2(1e-4))``; the
model adds the penalties to the loss it trains.
"""

from shardflow import ops


class Regularizer:
    """Base class: a callable weights -> scalar penalty."""

    def __call__(self, x):
        return ops.constant(0.0)


class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x ** 2)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = float(l1)
        self.l2 = float(l2)

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}

    def __call__(self, x):
        penalty = ops.constant(0.0)
        if self.l1:
            penalty = ops.add(penalty, ops.multiply(self.l1, ops.reduce_sum(ops.abs(x))))
        if self.l2:
            penalty = ops.add(penalty, ops.multiply(self.l2, ops.reduce_sum(ops.square(x))))
        return penalty


def l1(l=0.01):  # noqa: E741 (Keras's argument name)
    return L1L2(l1=l)


def l2(l=0.01):  # noqa: E741
    return L1L2(l2=l)


def l1_l2(l1=0.01, l2=0.01):  # noqa: F811
    return L1L2(l1=l1, l2=l2)


def get(identifier):
    """A regularizer from a callable, or Keras's names 'l1', 'l2', 'l1_l2' (factor 0.01)."""
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in ("l1", "l2", "l1_l2"):
        return {"l1": l1, "l2": l2, "l1_l2": l1_l2}[identifier]()
    raise ValueError("a regularizer is a callable such as keras.regularizers.l2(1e-4), not %r"
                     % (identifier,))
