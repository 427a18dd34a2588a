"""tf.keras.utils: to_categorical.

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
