"""Data sets loaded by the C++ loaders, as NumPy arrays."""

from shardflow.datasets import fashion_mnist  # noqa: F401
