"""tf.data.experimental's transformations that drop elements: ignore_errors, take_while,
filter_for_shard.

Example (skip the records a parse function rejects)::

    ds = sf.data.TextLineDataset(files).map(parse).apply(sf.data.experimental.ignore_errors())

ignore_errors drops an element whose map or filter function fails (an sf.errors.OpError,
InvalidArgumentError for a bad record) anywhere in the pipeline it reads; elements are made
one at a time, so a failed element is the only one lost (after a map that batch() runs on
whole batches, its batch).
"""

from shardflow.data.dataset_ops import UNKNOWN, FilterDataset, ShardDataset, _UnaryDataset


class IgnoreErrorsDataset(_UnaryDataset):
    def _reader(self, ctx):
        return self._input._reader(ctx.ignoring_errors())


def ignore_errors():
    """For Dataset.apply: the elements whose computation did not fail."""
    return IgnoreErrorsDataset


class TakeWhileDataset(FilterDataset):
    def __init__(self, input_dataset, predicate):
        super().__init__(input_dataset, predicate, "take_while")

    def _reader(self, ctx):
        for element in self._input._reader(ctx):
            if not self._holds(element, ctx):
                return
            yield element


def take_while(predicate):
    """For Dataset.apply: the elements up to the first for which `predicate` (a scalar bool
    of the element) is false."""
    return lambda dataset: TakeWhileDataset(dataset, predicate)


class _FilterForShardDataset(ShardDataset):
    def _cardinality(self, ctx):
        return UNKNOWN  # TF builds it from a filter


def filter_for_shard(num_shards, index):
    """For Dataset.apply (TF 1.15, deprecated there for Dataset.shard): the elements whose
    position modulo num_shards is index."""
    for what, value in (("num_shards", num_shards), ("index", index)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError("filter_for_shard: %s must be a Python int here, not %r"
                            % (what, value))
    if num_shards < 1:
        raise ValueError("num_shards must be >= 1, not %d" % num_shards)
    if index < 0:
        raise ValueError("index must be >= 0, not %d" % index)
    if index >= num_shards:
        raise ValueError("index must be < num_shards (%d), not %d" % (num_shards, index))
    return lambda dataset: _FilterForShardDataset(dataset, num_shards, index)
