"""tf.data.experimental (and tf.contrib.data) spellings TF1 programs use.

Example::

    ds = ds.apply(sf.data.experimental.shuffle_and_repeat(10000, seed=1))
    ds = ds.apply(sf.data.experimental.map_and_batch(parse, 128))
    ds = ds.prefetch(sf.data.experimental.AUTOTUNE)
"""

from shardflow.data.batching import unbatch  # noqa: F401
from shardflow.data.grouping import (bucket_by_sequence_length,  # noqa: F401
                                     choose_from_datasets, enumerate_dataset, group_by_window,
                                     sample_from_datasets)
from shardflow.data.interleave import parallel_interleave  # noqa: F401

AUTOTUNE = -1  # accepted where TF takes it (prefetch, num_parallel_calls); changes nothing here


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """For Dataset.apply: shuffle(buffer_size, seed) then repeat(count), each pass reshuffled."""
    return lambda dataset: dataset.shuffle(buffer_size, seed).repeat(count)


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """For Dataset.apply: map(map_func) then batch(batch_size, drop_remainder)."""
    return lambda dataset: dataset.map(map_func).batch(batch_size, drop_remainder)


def batch_and_drop_remainder(batch_size):
    """For Dataset.apply (TF1's tf.contrib.data): batch(batch_size, drop_remainder=True)."""
    return lambda dataset: dataset.batch(batch_size, drop_remainder=True)


def padded_batch_and_drop_remainder(batch_size, padded_shapes, padding_values=None):
    """For Dataset.apply (TF1's tf.contrib.data): padded_batch(..., drop_remainder=True)."""
    return lambda dataset: dataset.padded_batch(batch_size, padded_shapes, padding_values,
                                                drop_remainder=True)
