"""tf.data.experimental's grouping and mixing transformations: group_by_window,
bucket_by_sequence_length, group_by_reducer, sample_from_datasets, choose_from_datasets,
enumerate_dataset.

Example (batches of sentences of similar length, padded to the longest in each batch)::

    ds = ds.apply(sf.data.experimental.bucket_by_sequence_length(
        lambda tokens, label: sf.shape(tokens)[0], bucket_boundaries=[10, 20],
        bucket_batch_sizes=[64, 32, 16]))

As in TF, a group is handed on as soon as it holds its window size of elements, and the groups
still open when the input ends are handed on then, in ascending order of their keys.
"""

import collections
import random

import numpy as np

from shardflow import dtypes, errors
from shardflow.data import dataset_ops
from shardflow.data import structure as nest
from shardflow.data.batching import PaddedBatchDataset
from shardflow.data.interleave import _GROUP_SLOT, _cycle_argument, _DatasetFunction, \
    _GroupArgument
from shardflow.data.traced_function import TracedFunction
from shardflow.framework import TensorShape


def _scalar_int_function(fn, structure, specs, what):
    traced = TracedFunction(fn, structure, specs, what)
    out = traced.output_specs
    if len(out) != 1 or out[0][0] not in (dtypes.int32, dtypes.int64) or \
            out[0][1].ndims not in (0, None):
        raise TypeError("%s must return a scalar int64 (or int32) tensor; it returns %s"
                        % (what, ", ".join("%s %s" % (d.name, nest.describe(s)) for d, s in out)))
    return traced


class _GroupingDataset(dataset_ops._UnaryDataset):
    """Elements grouped by a key; a full group (window_size(key) elements) is reduced at once,
    the others when the input ends."""

    def _key(self, element, ctx):
        return int(self._key_fn(element, ctx.values)[0])

    def _reader(self, ctx):
        groups, sizes = collections.OrderedDict(), {}
        for element in self._input._reader(ctx):
            key = self._key(element, ctx)
            group = groups.setdefault(key, [])
            group.append(element)
            if key not in sizes:
                sizes[key] = self._window_size(key, ctx)
            if len(group) >= sizes[key]:
                del groups[key]
                yield from self._reduce(key, group, ctx)
        # As TF's kernel (its groups in a std::map): the open groups in ascending key order.
        for key in sorted(groups):
            yield from self._reduce(key, groups[key], ctx)


class GroupByWindowDataset(_GroupingDataset):
    def __init__(self, input_dataset, key_func, reduce_func, window_size=None,
                 window_size_func=None):
        super().__init__(input_dataset)
        if (window_size is None) == (window_size_func is None):
            raise ValueError("group_by_window takes window_size or window_size_func, "
                             "exactly one")
        structure, specs = input_dataset._structure, input_dataset._specs
        self._key_fn = _scalar_int_function(key_func, structure, specs,
                                            "group_by_window's key_func")
        if window_size is not None:
            size = _cycle_argument(window_size, "group_by_window's window_size")
            self._size_fn = None
            self._static_size = size
        else:
            self._size_fn = _scalar_int_function(
                window_size_func, 0, [(dtypes.int64, TensorShape([]))],
                "group_by_window's window_size_func")
        self._reduce_fn = _DatasetFunction(reduce_func, structure, specs, "group_by_window",
                                           mode="group")
        self._structure = self._reduce_fn.dataset._structure
        self._specs = list(self._reduce_fn.dataset._specs)

    def _tensors(self):
        captures = list(self._key_fn.captures) + list(self._reduce_fn.captures)
        if self._size_fn is not None:
            captures += self._size_fn.captures
        return captures

    def _window_size(self, key, ctx):
        if self._size_fn is None:
            return self._static_size
        size = int(self._size_fn((np.array(key, np.int64),), ctx.values)[0])
        if size <= 0:
            raise errors.InvalidArgumentError(
                "group_by_window: window_size_func gave %d for key %d; it must be positive"
                % (size, key))
        return size

    def _reduce(self, key, group, ctx):
        return self._reduce_fn.reader((np.array(key, np.int64), group), ctx)


def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
    """For Dataset.apply: elements grouped by key_func(element) (an int64 scalar); each group of
    window_size (or window_size_func(key)) elements becomes reduce_func(key, dataset of the
    group)'s elements."""
    return lambda dataset: GroupByWindowDataset(dataset, key_func, reduce_func, window_size,
                                                window_size_func)


class BucketBySequenceLengthDataset(_GroupingDataset):
    def __init__(self, input_dataset, element_length_func, bucket_boundaries,
                 bucket_batch_sizes, padded_shapes=None, padding_values=None,
                 pad_to_bucket_boundary=False, no_padding=False, drop_remainder=False):
        super().__init__(input_dataset)
        boundaries = [int(b) for b in bucket_boundaries]
        sizes = [int(b) for b in bucket_batch_sizes]
        if len(sizes) != len(boundaries) + 1:
            raise ValueError("bucket_by_sequence_length: len(bucket_batch_sizes) must be "
                             "len(bucket_boundaries) + 1 (%d + 1), not %d"
                             % (len(boundaries), len(sizes)))
        if boundaries != sorted(set(boundaries)) or any(b <= 0 for b in boundaries):
            raise ValueError("bucket_by_sequence_length: bucket_boundaries must be positive "
                             "and increasing, got %s" % boundaries)
        if any(s <= 0 for s in sizes):
            raise ValueError("bucket_by_sequence_length: bucket_batch_sizes must be positive, "
                             "got %s" % sizes)
        if pad_to_bucket_boundary and no_padding:
            raise ValueError("bucket_by_sequence_length: pad_to_bucket_boundary and no_padding "
                             "exclude each other")
        structure, specs = input_dataset._structure, input_dataset._specs
        self._key_fn = _scalar_int_function(element_length_func, structure, specs,
                                            "bucket_by_sequence_length's element_length_func")
        self._boundaries, self._sizes = boundaries, sizes
        self._drop = bool(drop_remainder)
        group = _GroupArgument(structure, specs)
        self._batchers = []
        for bucket, size in enumerate(sizes):
            if no_padding:
                batcher = dataset_ops.BatchDataset(group, size, drop_remainder)
            else:
                shapes = padded_shapes
                if shapes is None:
                    shapes = nest.pack_as(structure, [TensorShape([None] * s.ndims)
                                                      if s.ndims is not None else s
                                                      for _, s in specs])
                if pad_to_bucket_boundary:  # (no element reaches the last bucket then)
                    shapes = self._to_boundary(shapes, structure, boundaries[bucket] - 1
                                               if bucket < len(boundaries) else None)
                batcher = PaddedBatchDataset(group, size, shapes, padding_values,
                                             drop_remainder)
            self._batchers.append(batcher)
        self._pad_to_boundary = bool(pad_to_bucket_boundary)
        self._structure = structure
        merged = self._batchers[0]._specs
        for b in self._batchers[1:]:
            merged = [(d, nest.most_specific_common(a, s)) for (d, a), (_, s) in
                      zip(merged, b._specs)]
        self._specs = merged

    @staticmethod
    def _to_boundary(shapes, structure, length):
        """padded_shapes with each unknown dimension set to `length` (None: left unknown)."""
        flat = [nest.as_shape(s) for s in nest.flatten(shapes)]
        flat = [TensorShape([length if d is None else d for d in s.as_list()])
                if s.ndims is not None else s for s in flat]
        return nest.pack_as(structure, flat)

    def _tensors(self):
        return list(self._key_fn.captures)

    def _key(self, element, ctx):
        length = super()._key(element, ctx)
        if self._pad_to_boundary and length >= self._boundaries[-1]:
            raise errors.InvalidArgumentError(
                "bucket_by_sequence_length: an element of length %d is not below the last "
                "bucket boundary %d, which pad_to_bucket_boundary=True needs"
                % (length, self._boundaries[-1]))
        return sum(1 for b in self._boundaries if length >= b)

    def _window_size(self, bucket, ctx):
        return self._sizes[bucket]

    def _reduce(self, bucket, group, ctx):
        if self._drop and len(group) < self._sizes[bucket]:
            return iter(())
        return dataset_ops.start(self._batchers[bucket],
                                 dataset_ops.IterationContext({_GROUP_SLOT: group}))


def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """For Dataset.apply: elements put in buckets by element_length_func(element) (bucket i
    holds lengths in [boundaries[i-1], boundaries[i])), each bucket batched by its
    bucket_batch_sizes entry and padded to its longest element (or, with
    pad_to_bucket_boundary, to its boundary - 1)."""
    return lambda dataset: BucketBySequenceLengthDataset(
        dataset, element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
        padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)


class _DirectedInterleaveDataset(dataset_ops.Dataset):
    """Elements of `datasets` in an order a subclass's reader chooses; the datasets' elements
    must agree in structure and types."""

    def __init__(self, datasets, what):
        datasets = list(datasets)
        if not datasets or not all(isinstance(d, dataset_ops.Dataset) for d in datasets):
            raise TypeError("%s takes a non-empty list of datasets, got %r" % (what, datasets))
        first = datasets[0]
        for d in datasets[1:]:
            if not nest.same_structure(first._structure, d._structure) or \
                    [t for t, _ in first._specs] != [t for t, _ in d._specs]:
                raise TypeError("%s: the datasets' elements differ: types %r and %r"
                                % (what, first.output_types, d.output_types))
        self._datasets = datasets
        self._structure = first._structure
        specs = first._specs
        for d in datasets[1:]:
            specs = [(t, nest.most_specific_common(a, b)) for (t, a), (_, b) in
                     zip(specs, d._specs)]
        self._specs = specs

class _SampleDataset(_DirectedInterleaveDataset):
    def __init__(self, datasets, weights, seed):
        super().__init__(datasets, "sample_from_datasets")
        self._inputs = tuple(self._datasets)
        if weights is None:
            weights = [1.0] * len(self._datasets)
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)
        if weights.size != len(self._datasets) or (weights < 0).any() or weights.sum() <= 0:
            raise ValueError("sample_from_datasets: weights must be %d non-negative numbers "
                             "with a positive sum, got %s" % (len(self._datasets),
                                                              weights.tolist()))
        self._weights = weights / weights.sum()
        from shardflow.ops import _op_seed
        self._seed = _op_seed(seed) or None

    def _reader(self, ctx):
        # An exhausted dataset's weight goes to the others (renormalized); it ends when every
        # dataset with a weight is exhausted.
        rng = random.Random(self._seed if self._seed is not None else ctx.unseeded)
        readers = [d._reader(ctx) for d in self._datasets]
        weights = self._weights.copy()
        while weights.sum() > 0:
            cumulative = np.cumsum(weights / weights.sum())
            i = min(int(np.searchsorted(cumulative, rng.random(), side="right")),
                    len(weights) - 1)
            if weights[i] == 0:
                continue
            element = next(readers[i], None)
            if element is None:
                weights[i] = 0.0
                continue
            yield element


def sample_from_datasets(datasets, weights=None, seed=None):
    """Elements drawn from `datasets` at random, dataset i with probability weights[i]
    (default: uniform); an exhausted dataset is skipped. `weights` is a list of numbers here,
    not a tensor or dataset."""
    return _SampleDataset(datasets, weights, seed)


class _ChooseDataset(_DirectedInterleaveDataset):
    def __init__(self, datasets, choice_dataset):
        super().__init__(datasets, "choose_from_datasets")
        if not isinstance(choice_dataset, dataset_ops.Dataset) or \
                [d for d, _ in choice_dataset._specs] != [dtypes.int64] or \
                choice_dataset._specs[0][1].ndims not in (0, None):
            raise TypeError("choose_from_datasets: choice_dataset must be a dataset of int64 "
                            "scalars")
        self._choices = choice_dataset
        self._inputs = tuple(self._datasets) + (choice_dataset,)

    def _reader(self, ctx):
        # The choices' order; an exhausted dataset's turns are skipped, and it ends when the
        # choices end or every dataset is exhausted.
        readers = [d._reader(ctx) for d in self._datasets]
        live = len(readers)
        for (choice,) in self._choices._reader(ctx):
            i = int(choice)
            if not 0 <= i < len(readers):
                raise errors.InvalidArgumentError(
                    "choose_from_datasets: choice %d is not in [0, %d)" % (i, len(readers)))
            if readers[i] is None:
                continue
            element = next(readers[i], None)
            if element is None:
                readers[i] = None
                live -= 1
                if live == 0:
                    return
                continue
            yield element


def choose_from_datasets(datasets, choice_dataset):
    """Elements of datasets[c] for each c of choice_dataset (int64 scalars), in that order."""
    return _ChooseDataset(datasets, choice_dataset)


def enumerate_dataset(start=0):
    """For Dataset.apply: (index, element) pairs, indices counting from `start` (int64)."""
    def apply(dataset):
        return dataset_ops.Dataset.zip((dataset_ops.Dataset.range(start, 2 ** 62), dataset))
    return apply


class Reducer:
    """tf.data.experimental.Reducer: init_func(key) -> state, reduce_func(state, element) ->
    state, finalize_func(state) -> the group's element (a tuple state spread into arguments)."""

    def __init__(self, init_func, reduce_func, finalize_func):
        for what, fn in (("init_func", init_func), ("reduce_func", reduce_func),
                         ("finalize_func", finalize_func)):
            if not callable(fn):
                raise TypeError("Reducer's %s must be callable, not %r" % (what, fn))
        self.init_func, self.reduce_func = init_func, reduce_func
        self.finalize_func = finalize_func


class _TracedState:
    """The structure and specs of the state an init function returns."""

    def __init__(self, traced):
        self.structure, self.specs = traced.output_structure, traced.output_specs


class GroupByReducerDataset(dataset_ops._UnaryDataset):
    def __init__(self, input_dataset, key_func, reducer):
        from shardflow.data.scan_ops import trace_state_function, whole_output
        super().__init__(input_dataset)
        if not isinstance(reducer, Reducer):
            raise TypeError("group_by_reducer takes a tf.data.experimental.Reducer, not %r"
                            % (reducer,))
        structure, specs = input_dataset._structure, input_dataset._specs
        self._key_fn = _scalar_int_function(key_func, structure, specs,
                                            "group_by_reducer's key_func")
        self._init_fn = TracedFunction(reducer.init_func, 0, [(dtypes.int64, TensorShape([]))],
                                       "group_by_reducer's init_func")
        state = _TracedState(self._init_fn)
        self._reduce_fn, state_specs = trace_state_function(
            reducer.reduce_func, state, structure, specs, "group_by_reducer's reduce_func",
            whole_output)
        self._finalize_fn = TracedFunction(reducer.finalize_func, state.structure, state_specs,
                                           "group_by_reducer's finalize_func")
        self._structure = self._finalize_fn.output_structure
        self._specs = list(self._finalize_fn.output_specs)

    def _tensors(self):
        return [t for fn in (self._key_fn, self._init_fn, self._reduce_fn, self._finalize_fn)
                for t in fn.captures]

    def _reader(self, ctx):
        states = collections.OrderedDict()  # key -> state, keys in the order they first came
        for element in self._input._reader(ctx):
            key = int(self._key_fn(element, ctx.values)[0])
            state = states.get(key)
            if state is None:
                state = self._init_fn((np.array(key, np.int64),), ctx.values)
            states[key] = self._reduce_fn(state + element, ctx.values)
        for state in states.values():
            yield self._finalize_fn(state, ctx.values)


def group_by_reducer(key_func, reducer):
    """For Dataset.apply: one element per key of key_func(element) (an int64 scalar): the
    reducer's finalized state over that key's elements, keys in the order they first came."""
    return lambda dataset: GroupByReducerDataset(dataset, key_func, reducer)


__all__ = ["Reducer", "bucket_by_sequence_length", "choose_from_datasets", "enumerate_dataset",
           "group_by_reducer", "group_by_window", "sample_from_datasets"]
