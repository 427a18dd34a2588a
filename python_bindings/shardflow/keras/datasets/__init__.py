"""tf.keras.datasets: fashion_mnist, mnist (which returns Fashion-MNIST; see its text) and
cifar10 (from Keras's cache, ~/.keras/datasets, when the data has been put there)."""

from shardflow.keras.datasets import cifar10, fashion_mnist, mnist  # noqa: F401
