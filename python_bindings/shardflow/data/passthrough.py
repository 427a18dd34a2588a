"""tf.data.experimental's transformations that leave the elements as they are here:
copy_to_device, prefetch_to_device, latency_stats, bytes_produced_stats, and StatsAggregator.

Example::

    ds = ds.apply(sf.data.experimental.prefetch_to_device("/gpu:0"))

The pipeline runs in the client and its elements are fed to the step that needs them, which
places them as the graph says, so there is no device to copy to; nor does the pipeline keep
statistics: a StatsAggregator records nothing and its summary is empty.
"""

from shardflow.data.dataset_ops import _PassThroughDataset


def _device_name(device, what):
    if not isinstance(device, str):
        raise TypeError("%s takes a device name such as \"/gpu:0\", not %r" % (what, device))
    return device


def copy_to_device(target_device, source_device="/cpu:0"):
    """For Dataset.apply: the same elements (they are fed to the step, see the module doc)."""
    _device_name(target_device, "copy_to_device")
    _device_name(source_device, "copy_to_device")
    return _PassThroughDataset


def prefetch_to_device(device, buffer_size=None):
    """For Dataset.apply: the same elements (they are fed to the step, see the module doc)."""
    _device_name(device, "prefetch_to_device")
    if buffer_size is not None and (isinstance(buffer_size, bool) or
                                    not isinstance(buffer_size, int) or buffer_size < 0):
        raise ValueError("prefetch_to_device: buffer_size must be a non-negative int or None, "
                         "not %r" % (buffer_size,))
    return _PassThroughDataset


def _stats(tag, what):
    if not isinstance(tag, (str, bytes)):
        raise TypeError("%s takes a string tag, not %r" % (what, tag))
    return _PassThroughDataset


def latency_stats(tag):
    """For Dataset.apply: the same elements; no latency is recorded here."""
    return _stats(tag, "latency_stats")


def bytes_produced_stats(tag):
    """For Dataset.apply: the same elements; no byte counts are recorded here."""
    return _stats(tag, "bytes_produced_stats")


class StatsAggregator:
    """tf.data.experimental.StatsAggregator: set it as options.experimental_stats.aggregator;
    it records nothing here, and get_summary() is an empty serialized Summary (b"")."""

    def get_summary(self):
        from shardflow import ops
        return ops.constant(b"", name="StatsAggregatorSummary")
