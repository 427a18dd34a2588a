"""tf.contrib.learn as far as TF1 programs still reach for it: its MNIST reader
(tf.contrib.learn.datasets.mnist.read_data_sets, datasets.load_dataset("mnist"); see
shardflow/examples/tutorials/mnist/input_data.py). contrib.learn's estimators were replaced
by tf.estimator in TF 1.x; anything else here is refused saying so."""

import types

from shardflow.examples.tutorials.mnist import input_data as _mnist


def load_dataset(name, size="small", test_with_fake_data=False):
    """tf.contrib.learn.datasets.load_dataset: "mnist" only (read_data_sets("MNIST-data"))."""
    if name != "mnist":
        raise ValueError("load_dataset(%r): shardflow has the 'mnist' reader only (TF's others "
                         "download their data)" % (name,))
    return _mnist.read_data_sets("MNIST-data")


datasets = types.SimpleNamespace(
    mnist=_mnist, load_dataset=load_dataset,
    base=types.SimpleNamespace(Datasets=_mnist.Datasets),
    __doc__="tf.contrib.learn.datasets: mnist (read_data_sets, load_mnist) and load_dataset")


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.learn.%s: tf.contrib.learn's estimators and input "
        "functions were replaced by tf.estimator (Estimator, DNNClassifier, LinearRegressor, "
        "inputs.numpy_input_fn, ...); only tf.contrib.learn.datasets.mnist is here" % name)
