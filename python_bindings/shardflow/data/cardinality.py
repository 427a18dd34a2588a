"""tf.data.experimental.cardinality: a dataset's number of elements as a scalar int64 tensor.

Example::

    n = sf.data.experimental.cardinality(ds.batch(32))   # sess.run(n) == ceil(len / 32)

Each dataset counts as TF 1.15's kernels do (Dataset._cardinality): a repeat() without end is
INFINITE_CARDINALITY (-1); after filter, flat_map, a file reader or a generator the count is
UNKNOWN_CARDINALITY (-2). Tensors the count depends on (a fed batch size) are computed with the
step's feeds.
"""

import numpy as np

from shardflow import dtypes
from shardflow.data.dataset_ops import INFINITE, UNKNOWN, Dataset
from shardflow.framework import TensorShape

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN


class _CardinalityDataset(Dataset):
    """One element: the cardinality of `dataset` for this initialization."""

    def __init__(self, dataset):
        self._inputs = (dataset,)
        self._structure = 0
        self._specs = [(dtypes.int64, TensorShape([]))]

    def _reader(self, ctx):
        yield (np.array(self._inputs[0]._cardinality(ctx), dtype=np.int64),)


def cardinality(dataset):
    """The number of elements of `dataset` (a scalar int64 tensor, computed on each run), or
    INFINITE_CARDINALITY / UNKNOWN_CARDINALITY."""
    from shardflow.data.iterator_ops import single_element
    if not isinstance(dataset, Dataset):
        raise TypeError("cardinality takes a Dataset, not %r" % (dataset,))
    return single_element(_CardinalityDataset(dataset), "DatasetCardinality")
