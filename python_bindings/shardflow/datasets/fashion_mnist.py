"""Fashion-MNIST (Zalando): 28x28 grey images of 10 kinds of clothing.

Example::

    (x_train, y_train), (x_test, y_test) = sf.datasets.fashion_mnist.load()
    x_train.shape, x_train.dtype      # (60000, 784) float32, pixels scaled to [0, 1]
    y_train.shape, y_train.dtype      # (60000,) int32, classes 0..9

The files come from Debian's `dataset-fashion-mnist` package (apt-get install
dataset-fashion-mnist), read by shardflow's C++ loader (datasets/fashion_mnist.h).
"""

from shardflow import _shardflow as _C

DEFAULT_DIR = _C.DEFAULT_FASHION_MNIST_DIR
CLASS_NAMES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot")


def load(data_dir=None, flat=True):
    """((x_train, y_train), (x_test, y_test)) as NumPy arrays.

    Images are float32 in [0, 1], [N, 784] (or [N, 28, 28, 1] with ``flat=False``, a view);
    labels are int32 [N]. A missing file raises LookupError saying how to install the data.
    """
    x_train, y_train = _C.load_fashion_mnist(data_dir or "", "train")
    x_test, y_test = _C.load_fashion_mnist(data_dir or "", "test")
    if not flat:
        x_train = x_train.reshape(-1, 28, 28, 1)
        x_test = x_test.reshape(-1, 28, 28, 1)
    return (x_train, y_train), (x_test, y_test)
