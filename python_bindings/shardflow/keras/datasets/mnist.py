"""tf.keras.datasets.mnist: returns **Fashion-MNIST**, not the handwritten digits.

The machines shardflow runs on hold Fashion-MNIST only (Debian's dataset-fashion-mnist) and
nothing is downloaded. It has MNIST's layout (28x28 uint8 images, 10 classes, 60000/10000), so
programs written for mnist.load_data() run unchanged, but the images are clothing and
accuracies are lower than on digits (about 0.88 where MNIST gives 0.98). load_data() warns
(UserWarning) every time it is called, so that this is never silent.
"""

import warnings

from shardflow.keras.datasets import fashion_mnist


def load_data(path=None):
    """Fashion-MNIST in MNIST's format: ((x_train, y_train), (x_test, y_test)), uint8 images
    (N, 28, 28) and uint8 labels; see the module's text."""
    warnings.warn("keras.datasets.mnist.load_data() returns Fashion-MNIST (clothing, not "
                  "digits): it is the only MNIST-format data set installed "
                  "(/usr/share/datasets/fashion-mnist)", UserWarning, stacklevel=2)
    return fashion_mnist.load_data(path)
