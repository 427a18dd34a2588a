"""tf.keras.utils: to_categorical and Sequence.

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
