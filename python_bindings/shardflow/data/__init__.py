"""TF1's tf.data in graph mode: input pipelines read by iterators whose get_next() tensors
Session.run feeds.

Example::

    ds = sf.data.Dataset.from_tensor_slices((x_train, y_train))
    ds = ds.shuffle(10000, seed=1).repeat(5).batch(128)
    images, labels = ds.make_one_shot_iterator().get_next()
    loss = model(images, labels)
    ...
    while True:
        try:
            sess.run(train_op)
        except sf.errors.OutOfRangeError:
            break

The pipeline runs in the client's Python process (NumPy; map and filter functions run their
shardflow ops in a private session), one element when a step needs one. sources.py holds the
datasets that make elements, dataset_ops.py the Dataset class and its transformations,
batching.py padded_batch and unbatch, iterator_ops.py the iterators and how Session.run feeds
them; docs/python.md, "tf.data", says what is supported.
"""

from shardflow.data import experimental
from shardflow.data.dataset_ops import Dataset
from shardflow.data.iterator_ops import Iterator
from shardflow.data.options import Options
from shardflow.data.sources import FixedLengthRecordDataset, TFRecordDataset, \
    TextLineDataset


def make_one_shot_iterator(dataset):
    """TF 1.13+'s tf.compat.v1.data.make_one_shot_iterator(dataset)."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    """TF 1.13+'s tf.compat.v1.data.make_initializable_iterator(dataset)."""
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes


__all__ = ["Dataset", "FixedLengthRecordDataset", "Iterator", "Options", "TFRecordDataset",
           "TextLineDataset", "experimental", "get_output_classes", "get_output_shapes",
           "get_output_types", "make_initializable_iterator", "make_one_shot_iterator"]
