"""tf.keras.optimizers for graph mode: Keras's names and arguments over shardflow's
tf.train optimizers (whose updates the engine builds).

Example::

    model.compile(optimizer=keras.optimizers.SGD(lr=0.1, momentum=0.9), loss="mse")
    model.compile(optimizer="adam", loss="mse")           # Adam with Keras's defaults

Each takes ``lr=`` (TF 1.x Keras) or ``learning_rate=``. Learning-rate ``decay`` is not
supported (a ValueError if not 0); use a tf.train optimizer with a schedule instead.
"""

from shardflow import train


class Optimizer:
    """Base class: ``get_updates(loss, params)`` gives the op of one step."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from shardflow.keras import saving
        saving.record_init(cls)  # model.save writes the optimizer's arguments

    def __init__(self, lr, learning_rate, decay, default):
        if lr is not None and learning_rate is not None:
            raise ValueError("give lr= or learning_rate=, not both")
        value = lr if lr is not None else learning_rate
        self.lr = self.learning_rate = float(default if value is None else value)
        if decay:
            raise ValueError("%s(decay=%r): learning-rate decay is not supported; pass a "
                             "tf.train optimizer with a schedule" % (type(self).__name__, decay))

    def _tf_optimizer(self):
        raise NotImplementedError

    def get_updates(self, loss, params):
        return self._tf_optimizer().minimize(loss, var_list=params)


class SGD(Optimizer):
    def __init__(self, lr=None, momentum=0.0, decay=0.0, nesterov=False, learning_rate=None,
                 **kwargs):
        super().__init__(lr, learning_rate, decay, 0.01)
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _tf_optimizer(self):
        if self.momentum or self.nesterov:
            return train.MomentumOptimizer(self.lr, self.momentum, use_nesterov=self.nesterov,
                                           name="SGD")
        return train.GradientDescentOptimizer(self.lr, name="SGD")


class Adam(Optimizer):
    def __init__(self, lr=None, beta_1=0.9, beta_2=0.999, epsilon=None, decay=0.0,
                 amsgrad=False, learning_rate=None, **kwargs):
        super().__init__(lr, learning_rate, decay, 0.001)
        if amsgrad:
            raise ValueError("Adam(amsgrad=True) is not supported")
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)

    def _tf_optimizer(self):
        return train.AdamOptimizer(self.lr, self.beta_1, self.beta_2, self.epsilon, name="Adam")


class RMSprop(Optimizer):
    def __init__(self, lr=None, rho=0.9, epsilon=None, decay=0.0, learning_rate=None, **kwargs):
        super().__init__(lr, learning_rate, decay, 0.001)
        self.rho = float(rho)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)

    def _tf_optimizer(self):
        return train.RMSPropOptimizer(self.lr, decay=self.rho, epsilon=self.epsilon,
                                      name="RMSprop")


class Adagrad(Optimizer):
    def __init__(self, lr=None, epsilon=None, decay=0.0, learning_rate=None,
                 initial_accumulator_value=0.1, **kwargs):
        super().__init__(lr, learning_rate, decay, 0.01)
        self.initial_accumulator_value = float(initial_accumulator_value)

    def _tf_optimizer(self):
        return train.AdagradOptimizer(self.lr, self.initial_accumulator_value, name="Adagrad")


class TFOptimizer(Optimizer):
    """Wraps a tf.train optimizer (compile() does this for one passed directly)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.lr = self.learning_rate = getattr(optimizer, "_params", {}).get("learning_rate")

    def _tf_optimizer(self):
        return self.optimizer


sgd, adam, rmsprop, adagrad = SGD, Adam, RMSprop, Adagrad
_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier):
    """A Keras optimizer from a name ('sgd', 'adam', 'rmsprop', 'adagrad': Keras's
    defaults), a Keras optimizer, or a tf.train optimizer."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, train.Optimizer) or hasattr(identifier, "minimize"):
        return TFOptimizer(identifier)
    make = _BY_NAME.get(str(identifier).lower())
    if make is None:
        raise ValueError("unknown optimizer %r; known: %s, a keras.optimizers instance or a "
                         "tf.train optimizer" % (identifier, ", ".join(sorted(_BY_NAME))))
    return make()
