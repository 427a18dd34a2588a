"""How the replicas of a tf.distribute strategy read a tf.data dataset: InputContext,
InputReplicationMode, and the distributed dataset and iterator that
strategy.experimental_distribute_dataset, make_dataset_iterator and make_input_fn_iterator give.

A distributed dataset splits each global batch between the replicas, as TF's rebatching does:
of a batch of B rows, replica i gets rows [i * ceil(B / n), (i + 1) * ceil(B / n)) (clipped to
B, so a short last batch leaves the last replicas fewer rows, or none). An input_fn iterator
instead gives each replica a whole element of its own, in turn (input_fn batches per replica).
With one replica get_next() is the dataset's own element.

Example::

    dist = strategy.experimental_distribute_dataset(dataset.batch(64))
    it = dist.make_initializable_iterator()
    x = it.get_next()                     # a PerReplica of two [32, ...] slices on 2 devices
    sess.run(it.initializer)
"""

import contextlib
import enum

from shardflow import framework, nest, ops
from shardflow.distribute.values import regroup


class InputReplicationMode(enum.Enum):
    """How input_fn is called: once per worker (the only mode, as in TF 1.15)."""

    PER_WORKER = "PER_WORKER"


class InputContext:
    """What an input_fn is told (TF 1.15's tf.distribute.InputContext): how many input
    pipelines there are, which one this is, and how many replicas read them."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def num_replicas_in_sync(self):
        return self._num_replicas_in_sync

    @property
    def input_pipeline_id(self):
        return self._input_pipeline_id

    @property
    def num_input_pipelines(self):
        return self._num_input_pipelines

    def get_per_replica_batch_size(self, global_batch_size):
        """global_batch_size / num_replicas_in_sync; ValueError unless it divides evenly."""
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError("The `global_batch_size` %r is not divisible by "
                             "`num_replicas_in_sync` %r" % (global_batch_size,
                                                            self._num_replicas_in_sync))
        return global_batch_size // self._num_replicas_in_sync

    def __str__(self):
        return "tf.distribute.InputContext(input pipeline id %d, total: %d)" % (
            self._input_pipeline_id, self._num_input_pipelines)


def _placed(device):
    return framework.device(device) if device else contextlib.nullcontext()


def _slice_rows(tensor, replica, num_replicas):
    """Replica `replica`'s rows of the global batch `tensor` (see the module's text)."""
    tensor = framework.convert_to_tensor(tensor)
    if tensor.shape.ndims == 0:
        raise ValueError("experimental_distribute_dataset: element %s is a scalar, so there is "
                         "no batch to split between %d replicas; batch the dataset (each "
                         "global batch is split)" % (tensor.name, num_replicas))
    rows = tensor.shape.as_list()[0] if tensor.shape.ndims is not None else None
    if rows is not None:
        size = -(-rows // num_replicas)
        return tensor[min(replica * size, rows):min((replica + 1) * size, rows)]
    rows = ops.shape(tensor)[0]
    size = (rows + (num_replicas - 1)) // num_replicas
    begin = ops.minimum(replica * size, rows)
    return tensor[begin:ops.minimum(begin + size, rows)]


class DistributedIterator:
    """Reads a DistributedDataset: get_next() gives each replica its part (a PerReplica per
    component; the element itself with one replica)."""

    def __init__(self, iterator, devices, split_batch):
        self._iterator = iterator
        self._devices = tuple(devices)
        self._split_batch = split_batch

    @property
    def initializer(self):
        """The op that (re)starts the underlying iterator."""
        return self._iterator.initializer

    def initialize(self):
        """TF1's: the ops to run before reading (a list of the initializer)."""
        return [self._iterator.initializer]

    @property
    def output_types(self):
        return self._iterator.output_types

    @property
    def output_shapes(self):
        return self._iterator.output_shapes

    def get_next(self, name=None):
        n = len(self._devices)
        if n <= 1:
            return self._iterator.get_next(name)
        if self._split_batch:
            element = self._iterator.get_next(name)
            parts = []
            for i, device in enumerate(self._devices):
                with _placed(device):
                    parts.append(nest.map_structure(lambda t, i=i: _slice_rows(t, i, n),
                                                    element))
        else:
            parts = []
            for device in self._devices:  # one element each, in replica order per step
                with _placed(device):
                    parts.append(self._iterator.get_next(name))
        return regroup(parts, self._devices)


class DistributedDataset:
    """A dataset the replicas read together (strategy.experimental_distribute_dataset). In
    graph mode, read it with make_one_shot_iterator() or make_initializable_iterator()."""

    def __init__(self, dataset, devices, split_batch):
        from shardflow.data import Dataset
        if not isinstance(dataset, Dataset):
            raise TypeError("a distributed dataset is made from a tf.data.Dataset, not %r"
                            % (dataset,))
        self._dataset = dataset
        self._devices = tuple(devices)
        self._split_batch = split_batch

    @property
    def output_types(self):
        return self._dataset.output_types

    @property
    def output_shapes(self):
        return self._dataset.output_shapes

    def make_one_shot_iterator(self):
        return DistributedIterator(self._dataset.make_one_shot_iterator(), self._devices,
                                   self._split_batch)

    def make_initializable_iterator(self, shared_name=None):
        return DistributedIterator(self._dataset.make_initializable_iterator(shared_name),
                                   self._devices, self._split_batch)

    def __iter__(self):
        raise RuntimeError("iterating a distributed dataset needs eager execution; in a graph "
                           "use make_one_shot_iterator() or make_initializable_iterator() and "
                           "pass iterator.get_next() to experimental_run_v2")
