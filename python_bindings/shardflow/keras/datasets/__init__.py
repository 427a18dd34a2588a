"""tf.keras.datasets: fashion_mnist, mnist (which returns Fashion-MNIST; see its text), and,
from Keras's cache (~/.keras/datasets) when the data has been put there, cifar10, imdb,
reuters and boston_housing."""

from shardflow.keras.datasets import (boston_housing, cifar10, fashion_mnist,  # noqa: F401
                                      imdb, mnist, reuters)

__all__ = ["boston_housing", "cifar10", "fashion_mnist", "imdb", "mnist", "reuters"]
