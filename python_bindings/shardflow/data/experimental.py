"""tf.data.experimental (and tf.contrib.data) spellings TF1 programs use.

Example::

    ds = ds.apply(sf.data.experimental.shuffle_and_repeat(10000, seed=1))
    ds = ds.apply(sf.data.experimental.map_and_batch(parse, 128))
    ds = ds.prefetch(sf.data.experimental.AUTOTUNE)
"""

from shardflow.data.batching import dense_to_sparse_batch, unbatch
from shardflow.data.cardinality import (INFINITE_CARDINALITY,
                                        UNKNOWN_CARDINALITY, cardinality)
from shardflow.data.filtering import filter_for_shard, ignore_errors, take_while
from shardflow.data.grouping import (Reducer, bucket_by_sequence_length,
                                     choose_from_datasets, enumerate_dataset, group_by_reducer,
                                     group_by_window, sample_from_datasets)
from shardflow.data.interleave import parallel_interleave
from shardflow.data.iterator_ops import get_single_element
from shardflow.data.options import (DistributeOptions,
                                    MapVectorizationOptions, OptimizationOptions, Options,
                                    StatsOptions, ThreadingOptions)
from shardflow.data.passthrough import (StatsAggregator, bytes_produced_stats,
                                        copy_to_device, latency_stats, prefetch_to_device)
from shardflow.data.readers import (CsvDataset, make_batched_features_dataset,
                                    make_csv_dataset, parse_example_dataset)
from shardflow.data.resampling import rejection_resample
from shardflow.data.scan_ops import scan
from shardflow.data.sources import CounterDataset as Counter
from shardflow.data.sources import RandomDataset

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


__all__ = ["AUTOTUNE", "Counter", "CsvDataset", "DistributeOptions", "INFINITE_CARDINALITY",
           "MapVectorizationOptions", "OptimizationOptions", "Options", "RandomDataset",
           "Reducer", "StatsAggregator", "StatsOptions", "ThreadingOptions",
           "UNKNOWN_CARDINALITY", "batch_and_drop_remainder", "bucket_by_sequence_length",
           "bytes_produced_stats", "cardinality", "choose_from_datasets", "copy_to_device",
           "dense_to_sparse_batch",
           "enumerate_dataset", "filter_for_shard", "get_single_element", "group_by_reducer",
           "group_by_window", "ignore_errors", "latency_stats", "make_batched_features_dataset",
           "make_csv_dataset", "map_and_batch", "padded_batch_and_drop_remainder",
           "parallel_interleave", "parse_example_dataset", "prefetch_to_device",
           "rejection_resample", "sample_from_datasets", "scan", "shuffle_and_repeat",
           "take_while", "unbatch"]
