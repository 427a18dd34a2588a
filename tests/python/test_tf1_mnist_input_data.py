"""TF1's tutorial MNIST reader (shardflow.examples.tutorials.mnist.input_data, also
tf.contrib.learn.datasets.mnist): read_data_sets and DataSet.next_batch as TF1's."""
import shutil
import warnings

import numpy as np
import pytest

import shardflow as tf
from shardflow.examples.tutorials.mnist import input_data


def test_read_data_sets_from_a_directory_with_the_files(tmp_path):
    for name in input_data._FILES:
        shutil.copy("/usr/share/datasets/fashion-mnist/" + name, tmp_path / name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # the files are there: no fallback warning
        data = input_data.read_data_sets(str(tmp_path), one_hot=True, validation_size=1000)
    assert (data.train.num_examples, data.validation.num_examples,
            data.test.num_examples) == (59000, 1000, 10000)
    assert data.train.images.shape == (59000, 784) and data.train.images.dtype == np.float32
    assert 0.0 <= data.train.images.min() and data.train.images.max() <= 1.0
    np.testing.assert_array_equal(data.train.labels.sum(axis=1), 1.0)
    flat = input_data.read_data_sets(str(tmp_path), reshape=False, dtype=tf.uint8)
    assert flat.test.images.shape == (10000, 28, 28, 1) and flat.test.images.dtype == np.uint8
    assert flat.test.labels.dtype == np.uint8 and flat.test.labels.max() == 9
    np.testing.assert_array_equal(data.test.labels.argmax(axis=1), flat.test.labels)


def test_next_batch_crosses_epochs_as_tf1():
    images = np.arange(10, dtype=np.uint8).reshape(10, 1)
    data = input_data.DataSet(images, np.arange(10), dtype=tf.uint8)
    batches = [data.next_batch(4, shuffle=False)[1].tolist() for _ in range(3)]
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
    assert data.epochs_completed == 1
    shuffled = input_data.DataSet(images, np.arange(10), dtype=tf.uint8, seed=3)
    seen = np.concatenate([shuffled.next_batch(5)[1] for _ in range(2)])
    assert sorted(seen.tolist()) == list(range(10)) and seen.tolist() != list(range(10))
    images_float = input_data.DataSet(np.full((3, 2), 255, np.uint8), np.zeros(3))
    np.testing.assert_array_equal(images_float.images, 1.0)
    with pytest.raises(ValueError, match="2 images but 3 labels"):
        input_data.DataSet(np.zeros((2, 1)), np.zeros(3))


def test_fallback_warns_and_contrib_learn_alias():
    with pytest.warns(UserWarning, match="Fashion-MNIST"):
        data = tf.contrib.learn.datasets.mnist.read_data_sets("/nonexistent/MNIST", seed=1)
    assert data.train.num_examples == 55000 and data.train.labels.dtype == np.uint8
    xs, ys = data.train.next_batch(100)
    assert xs.shape == (100, 784) and ys.shape == (100,)
    np.testing.assert_array_equal(input_data.dense_to_one_hot([2, 0], 3), [[0, 0, 1], [1, 0, 0]])
    with pytest.raises(AttributeError, match="tf.estimator"):
        tf.contrib.learn.DNNClassifier
    with pytest.raises(ValueError, match="validation_size"):
        input_data.read_data_sets("/nonexistent/MNIST", validation_size=70000)
