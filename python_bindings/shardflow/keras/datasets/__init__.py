"""tf.keras.datasets: fashion_mnist and mnist (which returns Fashion-MNIST; see its text)."""

from shardflow.keras.datasets import fashion_mnist, mnist  # noqa: F401
