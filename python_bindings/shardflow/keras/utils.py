"""tf.keras.utils: to_categorical, normalize, Sequence, and custom_object_scope /
CustomObjectScope / get_custom_objects (names load_model and activations.get look up).

Example: ``keras.utils.to_categorical([0, 2], 3)`` -> [[1, 0, 0], [0, 0, 1]] (float32).
"""

import numpy as np


def to_categorical(y, num_classes=None, dtype="float32"):
    """One-hot rows for the class indices `y` (any shape; a trailing dimension of 1 is
    dropped, as Keras does); `num_classes` defaults to max(y) + 1."""
    y = np.asarray(y, dtype=np.int64)
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.ravel()
    if y.size and y.min() < 0:
        raise ValueError("to_categorical: class indices must not be negative, got %d" % y.min())
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    elif y.size and y.max() >= num_classes:
        raise ValueError("to_categorical: class %d is not below num_classes=%d"
                         % (y.max(), num_classes))
    out = np.zeros((y.size, num_classes), dtype=dtype)
    out[np.arange(y.size), y] = 1
    return out.reshape(tuple(shape) + (num_classes,))


class Sequence:
    """Base class of a data set fed batch by batch: ``__getitem__(i)`` returns batch i as
    (x, y), ``__len__()`` the number of batches; ``on_epoch_end()`` is called after each
    epoch (to reshuffle). ``model.fit(seq, epochs=...)`` trains on it (shuffle=True visits the
    batches in a random order), as does fit_generator.

    Example::

        class Batches(keras.utils.Sequence):
            def __init__(self, x, y, n): self.x, self.y, self.n = x, y, n
            def __len__(self): return (len(self.x) + self.n - 1) // self.n
            def __getitem__(self, i):
                return self.x[i * self.n:(i + 1) * self.n], self.y[i * self.n:(i + 1) * self.n]
    """

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def on_epoch_end(self):
        pass

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def normalize(x, axis=-1, order=2):
    """x divided by its `order`-norm along `axis` (rows of norm 0 left as they are)."""
    norms = np.atleast_1d(np.linalg.norm(x, order, axis))
    norms[norms == 0] = 1
    return x / np.expand_dims(norms, axis)


_GLOBAL_CUSTOM_OBJECTS = {}


def get_custom_objects():
    """The global name -> object dict that load_model (layer classes) and activations.get
    look names up in; custom_object_scope adds to it for a `with` block."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """``with CustomObjectScope({'MyLayer': MyLayer}):`` makes the names known to load_model
    (and activations.get) inside the block; the previous entries come back after it."""

    def __init__(self, *args):
        self.custom_objects = args
        self.backup = None

    def __enter__(self):
        self.backup = _GLOBAL_CUSTOM_OBJECTS.copy()
        for objects in self.custom_objects:
            _GLOBAL_CUSTOM_OBJECTS.update(objects)
        return self

    def __exit__(self, *args, **kwargs):
        _GLOBAL_CUSTOM_OBJECTS.clear()
        _GLOBAL_CUSTOM_OBJECTS.update(self.backup)


def custom_object_scope(*args):
    """CustomObjectScope(*args): ``with custom_object_scope({'MyLayer': MyLayer}): ...``."""
    return CustomObjectScope(*args)
