"""TF1's tensorflow.examples.tutorials.mnist: `input_data.read_data_sets`."""

from shardflow.examples.tutorials.mnist import input_data  # noqa: F401
