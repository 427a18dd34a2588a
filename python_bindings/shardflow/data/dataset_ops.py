"""tf.data's Dataset: an input pipeline described in the graph-building program, run in Python.

A Dataset is a description: sources (arrays, tensors, a generator, a range, text files) and
transformations (map, shuffle, batch, ...). Nothing is read until an iterator over it is
initialized in a session (iterator_ops.py); then each dataset makes a reader, a Python iterator
of elements, from an IterationContext that holds that initialization's values. The pipeline
runs in the client's Python process, one element when a step needs one.

Example::

    ds = Dataset.from_tensor_slices((images, labels)).shuffle(10000, seed=1).repeat().batch(128)
    ds.output_types     # (sf.float32, sf.int32)
    ds.output_shapes    # (TensorShape([None, 784]), TensorShape([None]))

Subclasses set _structure (the element's nesting, see structure.py), _specs ([(DType,
TensorShape)] per component), _inputs (the datasets they read) and implement _reader(ctx). The
datasets that make elements (from_tensor_slices, range, ...) are in sources.py.
"""

import copy
import itertools
import random

import numpy as np

from shardflow import dtypes, errors
from shardflow.data import structure as nest
from shardflow.data.traced_function import TracedFunction
from shardflow.framework import Tensor, TensorShape


class IterationContext:
    """What one initialization of an iterator gives its readers: the values of the graph
    tensors the pipeline uses (computed once, in the iterator's session), and per-dataset state
    that lasts until the next initialization (shuffle epochs, caches).

    Thread safety: used under the iterator's lock only.
    """

    def __init__(self, values):
        self._values = values
        self._epochs = {}
        self.caches = {}
        self.unseeded = random.SystemRandom().randrange(2 ** 62)
        self.skip_errors = False

    def ignoring_errors(self):
        """This context for the readers under an ignore_errors(): a map or filter whose function
        fails there drops the element instead of raising (the values and state are shared)."""
        ctx = copy.copy(self)
        ctx.skip_errors = True
        return ctx

    def value(self, component):
        """The array of a component: itself, or a tensor's value at initialization."""
        if isinstance(component, Tensor):
            return self._values[component.name]
        return component

    def scalar(self, argument):
        """An integer argument (batch_size, count, ...) given as an int or a scalar tensor."""
        return int(self.value(argument))

    @property
    def values(self):
        return self._values

    def next_epoch(self, dataset):
        """0, 1, 2, ... on successive calls for the same dataset."""
        epoch = self._epochs.get(id(dataset), 0)
        self._epochs[id(dataset)] = epoch + 1
        return epoch


def _pipeline(dataset):
    """`dataset` and every dataset it reads, each once."""
    found, seen, stack = [], set(), [dataset]
    while stack:
        ds = stack.pop()
        if id(ds) not in seen:
            seen.add(id(ds))
            found.append(ds)
            stack.extend(ds._inputs)
    return found


def graph_tensors(dataset):
    """Every graph tensor the pipeline of `dataset` needs, each once."""
    found = {}
    for ds in _pipeline(dataset):
        for t in ds._tensors():
            found.setdefault(t.name, t)
    return list(found.values())


def start(dataset, ctx):
    """The reader of `dataset` for a new initialization; the values it was given are checked
    first, so that bad ones fail the initializer's run rather than a later step."""
    for ds in _pipeline(dataset):
        ds._check(ctx)
    return dataset._reader(ctx)


INFINITE = -1  # tf.data.experimental.INFINITE_CARDINALITY
UNKNOWN = -2   # tf.data.experimental.UNKNOWN_CARDINALITY


def _count_argument(value, what):
    if isinstance(value, Tensor):
        if value.dtype not in (dtypes.int32, dtypes.int64) or value.shape.ndims not in (0, None):
            raise TypeError("%s is an integer or a scalar int32/int64 tensor, not %s %s"
                            % (what, value.dtype.name, nest.describe(value.shape)))
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError("%s is an integer or a scalar int32/int64 tensor, not %r" % (what, value))
    return int(value)


def _static(argument):
    """An int argument's value when known while building (None for a tensor)."""
    return None if isinstance(argument, Tensor) else argument


class Dataset:
    """A sequence of elements, each a nested structure (tuples, dicts) of tensors.

    Build with the static constructors (from_tensor_slices, from_tensors, range, zip,
    from_generator, list_files) and the transformations below; read with
    make_one_shot_iterator() or make_initializable_iterator().
    """

    _inputs = ()

    def _tensors(self):
        return ()

    def _check(self, ctx):
        """Raises when the values of this initialization (ctx) cannot make a dataset."""

    def _reader(self, ctx):
        raise NotImplementedError

    def _cardinality(self, ctx):
        """The number of elements for this initialization, INFINITE or UNKNOWN (as TF 1.15's
        kernels count them; the default is UNKNOWN)."""
        return UNKNOWN

    # ---- what elements look like --------------------------------------------------------

    @property
    def output_types(self):
        """The element's structure with each component's DType (a SparseTensor's: its
        values')."""
        return nest.public(self._structure, self._specs, "types")

    @property
    def output_shapes(self):
        """The element's structure with each component's static TensorShape (a
        SparseTensor's: its dense shape)."""
        return nest.public(self._structure, self._specs, "shapes")

    @property
    def output_classes(self):
        """The element's structure with Tensor or SparseTensor for each component."""
        return nest.public(self._structure, self._specs, "classes")

    def __repr__(self):
        return "<%s shapes: %s, types: %s>" % (type(self).__name__, self.output_shapes,
                                               self.output_types)

    def __iter__(self):
        raise RuntimeError("iterating a Dataset in Python needs eager execution, which shardflow "
                           "does not have; use it = dataset.make_one_shot_iterator() and "
                           "sess.run(it.get_next())")

    # ---- sources ------------------------------------------------------------------------

    @staticmethod
    def from_tensor_slices(tensors):
        """One element per row: the i-th element holds row i of every component (of a
        SparseTensor: the SparseTensor of its row)."""
        from shardflow.data.sources import TensorDataset, TensorSliceDataset
        if nest.sparse_slots(tensors):
            from shardflow.data.batching import UnbatchDataset
            return UnbatchDataset(TensorDataset(tensors))
        return TensorSliceDataset(tensors)

    @staticmethod
    def from_sparse_tensor_slices(sparse_tensor):
        """TF1's Dataset.from_sparse_tensor_slices: one SparseTensor per row of
        `sparse_tensor` (a SparseTensor or SparseTensorValue)."""
        if not nest._is_sparse(sparse_tensor):
            raise TypeError("from_sparse_tensor_slices takes a SparseTensor, not %r"
                            % (sparse_tensor,))
        return Dataset.from_tensor_slices(sparse_tensor)

    @staticmethod
    def from_tensors(tensors):
        """A dataset of one element, `tensors` itself."""
        from shardflow.data.sources import TensorDataset
        return TensorDataset(tensors)

    @staticmethod
    def range(*args):
        """int64 scalars as Python's range(stop), range(start, stop[, step])."""
        from shardflow.data.sources import RangeDataset
        return RangeDataset(*args)

    @staticmethod
    def zip(datasets):
        """Elements of several datasets side by side (a tuple or dict of datasets); it ends
        with the shortest."""
        return ZipDataset(datasets)

    @staticmethod
    def from_generator(generator, output_types, output_shapes=None, args=None):
        """Elements yielded by ``generator(*args)`` (called again on each initialization and
        each repeat), converted to `output_types` and checked against `output_shapes`."""
        from shardflow.data.sources import GeneratorDataset
        return GeneratorDataset(generator, output_types, output_shapes, args)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        """The names of the files matching `file_pattern` (a glob, or a list of them), one
        scalar string per element, as TF1's Dataset.list_files. The file system is read when
        this is called (when the graph is built), and the names are sorted; with shuffle None
        or True (TF1's default) they come in a new random order on each pass (a shuffle over
        all of them, reproducible with `seed` or sf.set_random_seed), with shuffle=False in
        sorted order. No match raises InvalidArgumentError naming the pattern.

        Example::

            files = sf.data.Dataset.list_files(os.path.join(data_dir, "*.png"), seed=1)
            images = files.map(lambda f: sf.image.decode_png(sf.read_file(f), channels=1))
        """
        from shardflow import gfile
        patterns = list(file_pattern) if isinstance(file_pattern, (list, tuple)) else \
            [file_pattern]
        if any(isinstance(p, Tensor) for p in patterns):
            raise TypeError("Dataset.list_files: shardflow matches the pattern when the graph is "
                            "built, so it takes a string (or a list of them), not a tensor")
        names = gfile.Glob(patterns)
        if not names:
            shown = ", ".join(p.decode() if isinstance(p, bytes) else str(p) for p in patterns)
            raise errors.InvalidArgumentError("No files matched pattern: %s" % shown)
        files = np.empty(len(names), dtype=object)
        files[:] = [n.encode("utf-8", "surrogateescape") for n in names]
        dataset = Dataset.from_tensor_slices(files)
        if shuffle is None or shuffle:
            dataset = dataset.shuffle(len(names), seed=seed)
        return dataset

    # ---- transformations ----------------------------------------------------------------

    def map(self, map_func, num_parallel_calls=None):
        """`map_func` applied to every element (a tuple element is spread into arguments).

        `map_func` builds shardflow ops (``lambda x, y: (sf.cast(x, sf.float32) / 255, y)``);
        it is traced once. num_parallel_calls is accepted and ignored.
        """
        return MapDataset(self, map_func)

    def filter(self, predicate):
        """The elements for which `predicate` (shardflow ops, returning a scalar bool) holds."""
        return FilterDataset(self, predicate)

    def batch(self, batch_size, drop_remainder=False):
        """Consecutive elements stacked; the last, shorter batch is kept unless drop_remainder.
        """
        return BatchDataset(self, batch_size, drop_remainder)

    def padded_batch(self, batch_size, padded_shapes, padding_values=None, drop_remainder=False):
        """Like batch, padding each component to `padded_shapes` (None or -1: the longest in
        the batch) with `padding_values` (default 0, or b"" for strings)."""
        from shardflow.data.batching import PaddedBatchDataset
        return PaddedBatchDataset(self, batch_size, padded_shapes, padding_values,
                                  drop_remainder)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True):
        """Elements drawn at random from a buffer of `buffer_size` upcoming ones (TF's
        algorithm: a buffer as large as the dataset gives a uniform permutation).

        With a seed (or sf.set_random_seed) the order is reproducible; reshuffle_each_iteration
        gives each pass of a following repeat() another order.
        """
        return ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None):
        """The dataset `count` times over (None or -1: without end)."""
        return RepeatDataset(self, count)

    def take(self, count):
        """The first `count` elements (-1: all)."""
        return TakeDataset(self, count)

    def skip(self, count):
        """All but the first `count` elements (-1: none)."""
        return SkipDataset(self, count)

    def shard(self, num_shards, index):
        """Every num_shards-th element, starting at `index` (one worker's part)."""
        return ShardDataset(self, num_shards, index)

    def unbatch(self):
        """Each element split into its rows along dimension 0 (TF 1.15's Dataset.unbatch, as
        tf.data.experimental.unbatch)."""
        from shardflow.data.batching import UnbatchDataset
        return UnbatchDataset(self)

    def concatenate(self, dataset):
        """This dataset's elements, then `dataset`'s (same structure and types)."""
        return ConcatenateDataset(self, dataset)

    def prefetch(self, buffer_size):
        """Accepted for TF1 programs; elements are made when a step needs them, so it changes
        nothing."""
        return _PassThroughDataset(self)

    def cache(self, filename=""):
        """Keeps the elements of the first full pass in memory and replays them on later passes
        (also when `filename` is given: nothing is written to disk)."""
        return CacheDataset(self)

    def apply(self, transformation_func):
        """``transformation_func(self)``, which returns a Dataset."""
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError("Dataset.apply: the transformation returned %r, not a Dataset"
                            % (result,))
        return result

    def reduce(self, initial_state, reduce_func):
        """The tensors of reduce_func(state, element) applied to every element in turn from
        `initial_state`, computed afresh on each run that needs them (scan_ops.py)."""
        from shardflow.data.scan_ops import reduce
        return reduce(self, initial_state, reduce_func)

    def with_options(self, options):
        """This dataset with tf.data.Options set (options.py; recorded, they change nothing
        here). Options set twice to different values are a ValueError, as TF."""
        return _OptionsDataset(self, options)

    def options(self):
        """The tf.data.Options of this dataset: those of its pipeline, merged."""
        from shardflow.data.options import Options
        options = Options()
        for dataset in self._inputs:
            options = options.merge(dataset.options())
        return options

    def flat_map(self, map_func):
        """The elements of the dataset map_func(element) returns, for each element in turn
        (data/interleave.py)."""
        from shardflow.data.interleave import InterleaveDataset
        return InterleaveDataset(self, map_func, 1, 1, "flat_map")

    def interleave(self, map_func, cycle_length=-1, block_length=1, num_parallel_calls=None):
        """The elements of map_func(element)'s datasets, `cycle_length` of them read in turn,
        `block_length` elements at a time, in TF's order (cycle_length AUTOTUNE, -1: the
        number of processors). num_parallel_calls is accepted; reading stays in order."""
        from shardflow.data.interleave import InterleaveDataset
        return InterleaveDataset(self, map_func, cycle_length, block_length)

    def window(self, size, shift=None, stride=1, drop_remainder=False):
        """Windows of `size` elements, one every `shift` (default size), taking every
        `stride`-th element; each window's components are datasets (read them with
        flat_map, e.g. ``lambda w: w.batch(size)``)."""
        from shardflow.data.interleave import WindowDataset
        return WindowDataset(self, size, shift, stride, drop_remainder)

    # ---- iterators ----------------------------------------------------------------------

    def make_one_shot_iterator(self):
        """An iterator that starts itself on first use in each session; it cannot be fed."""
        from shardflow.data.iterator_ops import Iterator
        return Iterator._one_shot(self)

    def make_initializable_iterator(self, shared_name=None):
        """An iterator started by ``sess.run(it.initializer, feed_dict)``; placeholders the
        dataset uses are fed then."""
        from shardflow.data.iterator_ops import Iterator
        return Iterator._initializable(self)


# ---- transformations ----------------------------------------------------------------------


class ZipDataset(Dataset):
    def __init__(self, datasets):
        if not isinstance(datasets, (tuple, dict)) or not datasets:
            raise TypeError("Dataset.zip takes a tuple or dict of datasets, not %r" % (datasets,))
        flat = nest.flatten(datasets)
        if not all(isinstance(d, Dataset) for d in flat):
            raise TypeError("Dataset.zip takes a (nested) tuple or dict of datasets; got %r"
                            % (datasets,))
        self._inputs = flat
        self._structure = nest.pack_as(datasets, [d._structure for d in flat])
        self._specs = [spec for d in flat for spec in d._specs]

    def _reader(self, ctx):
        for parts in zip(*[d._reader(ctx) for d in self._inputs]):
            yield tuple(c for part in parts for c in part)

    def _cardinality(self, ctx):
        counts = [d._cardinality(ctx) for d in self._inputs]
        if UNKNOWN in counts:
            return UNKNOWN
        finite = [n for n in counts if n != INFINITE]
        return min(finite) if finite else INFINITE


class _UnaryDataset(Dataset):
    """A transformation of one input dataset that keeps its element structure."""

    def __init__(self, input_dataset):
        if not isinstance(input_dataset, Dataset):
            raise TypeError("expected a Dataset, got %r" % (input_dataset,))
        self._input = input_dataset
        self._inputs = (input_dataset,)
        self._structure = input_dataset._structure
        self._specs = input_dataset._specs


class _PassThroughDataset(_UnaryDataset):
    def _reader(self, ctx):
        return self._input._reader(ctx)

    def _cardinality(self, ctx):
        return self._input._cardinality(ctx)


class _OptionsDataset(_PassThroughDataset):
    def __init__(self, input_dataset, options):
        from shardflow.data.options import Options
        super().__init__(input_dataset)
        if not isinstance(options, Options):
            raise TypeError("with_options takes a tf.data.Options, not %r" % (options,))
        self._options = options
        input_dataset.options().merge(options)  # conflicting values fail here

    def options(self):
        return super().options().merge(self._options)


class MapDataset(_UnaryDataset):
    def __init__(self, input_dataset, map_func):
        super().__init__(input_dataset)
        self.fn = TracedFunction(map_func, input_dataset._structure, input_dataset._specs,
                                 "map")
        self._structure = self.fn.output_structure
        self._specs = self.fn.output_specs

    def _tensors(self):
        return self.fn.captures

    def _reader(self, ctx):
        fn, captured = self.fn, ctx.values
        for element in self._input._reader(ctx):
            try:
                result = fn(element, captured)
            except errors.OpError:
                if ctx.skip_errors:
                    continue
                raise
            yield result

    def _cardinality(self, ctx):
        return self._input._cardinality(ctx)


class FilterDataset(_UnaryDataset):
    def __init__(self, input_dataset, predicate, what="filter"):
        super().__init__(input_dataset)
        self.fn = TracedFunction(predicate, input_dataset._structure, input_dataset._specs,
                                 what)
        specs = self.fn.output_specs
        if len(specs) != 1 or specs[0][0] != dtypes.bool_ or specs[0][1].ndims not in (0, None):
            raise TypeError("the predicate given to Dataset.%s must return a scalar bool "
                            "tensor; it returns %s"
                            % (what, ", ".join("%s %s" % (d.name, nest.describe(s))
                                               for d, s in specs)))

    def _tensors(self):
        return self.fn.captures

    def _holds(self, element, ctx):
        """The predicate's value (None when it fails under ignore_errors)."""
        try:
            return bool(self.fn(element, ctx.values)[0])
        except errors.OpError:
            if ctx.skip_errors:
                return None
            raise

    def _reader(self, ctx):
        for element in self._input._reader(ctx):
            if self._holds(element, ctx):
                yield element


class BatchDataset(_UnaryDataset):
    def __init__(self, input_dataset, batch_size, drop_remainder=False):
        super().__init__(input_dataset)
        self._batch_size = _count_argument(batch_size, "batch_size")
        if _static(self._batch_size) is not None and self._batch_size <= 0:
            raise ValueError("batch_size must be positive, not %d" % self._batch_size)
        self._drop_remainder = bool(drop_remainder)
        dim = _static(self._batch_size) if self._drop_remainder else None
        self._sparse = nest.sparse_slots(self._structure)
        self._specs = [(dtype, nest.with_leading(dim, shape))
                       for dtype, shape in input_dataset._specs]
        for p in self._sparse:  # Note [Sparse elements] in structure.py: one more dimension
            self._specs[p:p + 3] = batched_sparse_specs(input_dataset._specs[p:p + 3])

    def _tensors(self):
        return [self._batch_size] if isinstance(self._batch_size, Tensor) else []

    def _reader(self, ctx):
        # Note [Vectorised map] in traced_function.py: map(fn).batch(n) with an element-wise
        # fn batches fn's inputs and runs fn once per batch.
        source, batched_fn = self._input, None
        if isinstance(source, MapDataset) and not self._sparse:
            batched_fn = source.fn.batched()
            if batched_fn is not None:
                source = source._input
        size = ctx.scalar(self._batch_size)
        if size <= 0:
            raise errors.InvalidArgumentError("batch_size must be positive, not %d" % size)
        elements = source._reader(ctx)
        while True:
            chunk = list(itertools.islice(elements, size))
            if not chunk or (self._drop_remainder and len(chunk) < size):
                return
            batch = stack_components(chunk, self._sparse)
            if batched_fn is None:
                yield batch
                continue
            try:
                batch = batched_fn(batch, ctx.values)
            except errors.OpError:
                if ctx.skip_errors:  # under ignore_errors, as TF: the batch is lost
                    continue
                raise
            yield batch

    def _cardinality(self, ctx):
        return batch_cardinality(self._input._cardinality(ctx), ctx.scalar(self._batch_size),
                                 self._drop_remainder)


def batch_cardinality(n, size, drop_remainder):
    """The number of batches of `size` from `n` elements (INFINITE, UNKNOWN stay so)."""
    if n in (INFINITE, UNKNOWN):
        return n
    return n // size + (0 if n % size == 0 or drop_remainder else 1)


def batched_sparse_specs(specs):
    """The specs of a batch of the sparse leaf whose three component specs are `specs`."""
    (_, index_shape), (dtype, _), _ = specs
    rank = index_shape.as_list()[1] if index_shape.ndims == 2 else None
    return nest.sparse_specs(dtype, TensorShape(None if rank is None else [None] * (rank + 1)))


def batch_sparse(indices, values, shapes):
    """One SparseTensorValue's components for a batch of sparse values (Note [Sparse elements]
    in structure.py): each index after its row, dense shape [rows] + the elementwise maximum."""
    ranks = {len(s) for s in shapes}
    if len(ranks) != 1:
        raise errors.InvalidArgumentError(
            "Cannot batch sparse tensors of different ranks %s" % sorted(ranks))
    rank = ranks.pop()
    rows = [np.concatenate([np.full((len(ix), 1), k, np.int64), ix.reshape(-1, rank)], axis=1)
            for k, ix in enumerate(indices)]
    dense = np.max(np.stack(shapes), axis=0) if rank else np.zeros(0, np.int64)
    return (np.concatenate(rows).astype(np.int64), np.concatenate(values),
            np.concatenate([[len(shapes)], dense]).astype(np.int64))


def stack_components(elements, sparse=()):
    """Flat elements stacked component by component (the sparse leaves that begin at the
    positions `sparse` batched as such); an error naming the component and the shapes when
    they differ."""
    out = []
    i = 0
    while i < len(elements[0]):
        if i in sparse:
            out.extend(batch_sparse([e[i] for e in elements], [e[i + 1] for e in elements],
                                    [e[i + 2] for e in elements]))
            i += 3
            continue
        parts = [e[i] for e in elements]
        first = parts[0].shape
        for k, p in enumerate(parts):
            if p.shape != first:
                raise errors.InvalidArgumentError(
                    "Cannot batch tensors with different shapes in component %d. First element "
                    "had shape %s and element %d had shape %s (padded_batch pads them to one "
                    "shape)" % (i, nest.describe(TensorShape(first)), k,
                                nest.describe(TensorShape(p.shape))))
        out.append(np.stack(parts))
        i += 1
    return tuple(out)


class ShuffleDataset(_UnaryDataset):
    def __init__(self, input_dataset, buffer_size, seed=None, reshuffle_each_iteration=True):
        super().__init__(input_dataset)
        self._buffer_size = _count_argument(buffer_size, "buffer_size")
        if _static(self._buffer_size) is not None and self._buffer_size <= 0:
            raise ValueError("shuffle's buffer_size must be positive, not %d"
                             % self._buffer_size)
        if isinstance(seed, Tensor):
            raise TypeError("shuffle's seed is a Python int here, not a tensor")
        from shardflow.ops import _op_seed  # the graph-level seed, as random ops use it
        self._seed = _op_seed(seed) or None
        self._reshuffle = bool(reshuffle_each_iteration)

    def _tensors(self):
        return [self._buffer_size] if isinstance(self._buffer_size, Tensor) else []

    def _reader(self, ctx):
        epoch = ctx.next_epoch(self) if self._reshuffle else 0
        base = self._seed if self._seed is not None else ctx.unseeded
        rng = random.Random(base * 1000003 + epoch)
        size = ctx.scalar(self._buffer_size)
        buffer = []
        for element in self._input._reader(ctx):
            if len(buffer) < size:
                buffer.append(element)
                continue
            i = rng.randrange(size)
            out, buffer[i] = buffer[i], element
            yield out
        rng.shuffle(buffer)
        yield from buffer

    def _cardinality(self, ctx):
        return self._input._cardinality(ctx)


class RepeatDataset(_UnaryDataset):
    def __init__(self, input_dataset, count=None):
        super().__init__(input_dataset)
        self._count = -1 if count is None else _count_argument(count, "repeat's count")

    def _tensors(self):
        return [self._count] if isinstance(self._count, Tensor) else []

    def _reader(self, ctx):
        count = ctx.scalar(self._count)
        epoch = 0
        while count < 0 or epoch < count:
            produced = False
            for element in self._input._reader(ctx):
                produced = True
                yield element
            if not produced:  # an empty dataset repeated is empty, not an endless loop
                return
            epoch += 1

    def _cardinality(self, ctx):
        n, count = self._input._cardinality(ctx), ctx.scalar(self._count)
        if count < 0:
            return 0 if n == 0 else INFINITE
        if count == 0 or n in (INFINITE, UNKNOWN):
            return 0 if count == 0 else n
        return n * count


class TakeDataset(_UnaryDataset):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = _count_argument(count, "take's count")

    def _tensors(self):
        return [self._count] if isinstance(self._count, Tensor) else []

    def _reader(self, ctx):
        count = ctx.scalar(self._count)
        elements = self._input._reader(ctx)
        return elements if count < 0 else itertools.islice(elements, count)

    def _cardinality(self, ctx):
        n, count = self._input._cardinality(ctx), ctx.scalar(self._count)
        if n == UNKNOWN:
            return UNKNOWN
        if n == INFINITE:
            return INFINITE if count < 0 else count
        return n if count < 0 else min(n, count)


class SkipDataset(_UnaryDataset):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = _count_argument(count, "skip's count")

    def _tensors(self):
        return [self._count] if isinstance(self._count, Tensor) else []

    def _reader(self, ctx):
        count = ctx.scalar(self._count)
        if count < 0:
            return iter(())
        return itertools.islice(self._input._reader(ctx), count, None)

    def _cardinality(self, ctx):
        n, count = self._input._cardinality(ctx), ctx.scalar(self._count)
        if n in (INFINITE, UNKNOWN):
            return n
        return 0 if count < 0 else max(0, n - count)


class ShardDataset(_UnaryDataset):
    def __init__(self, input_dataset, num_shards, index):
        super().__init__(input_dataset)
        if not 0 <= int(index) < int(num_shards):
            raise ValueError("shard: index must be in [0, num_shards), not %d of %d"
                             % (index, num_shards))
        self._num_shards, self._index = int(num_shards), int(index)

    def _reader(self, ctx):
        return itertools.islice(self._input._reader(ctx), self._index, None, self._num_shards)

    def _cardinality(self, ctx):
        n = self._input._cardinality(ctx)
        if n in (INFINITE, UNKNOWN):
            return n
        return n // self._num_shards + (1 if self._index < n % self._num_shards else 0)


class CacheDataset(_UnaryDataset):
    def _reader(self, ctx):
        cached = ctx.caches.get(id(self))
        if cached is not None:
            yield from cached
            return
        elements = []
        for element in self._input._reader(ctx):
            elements.append(element)
            yield element
        ctx.caches[id(self)] = elements  # only a complete pass is replayed

    def _cardinality(self, ctx):
        return self._input._cardinality(ctx)


class ConcatenateDataset(Dataset):
    def __init__(self, first, second):
        if not isinstance(second, Dataset):
            raise TypeError("concatenate takes a Dataset, not %r" % (second,))
        if not nest.same_structure(first._structure, second._structure) or \
                [d for d, _ in first._specs] != [d for d, _ in second._specs]:
            raise TypeError("concatenate: the datasets' elements differ: types %r and %r"
                            % (first.output_types, second.output_types))
        self._inputs = (first, second)
        self._structure = first._structure
        self._specs = [(d, nest.most_specific_common(a, b))
                       for (d, a), (_, b) in zip(first._specs, second._specs)]

    def _reader(self, ctx):
        for dataset in self._inputs:
            yield from dataset._reader(ctx)

    def _cardinality(self, ctx):
        counts = [d._cardinality(ctx) for d in self._inputs]
        if INFINITE in counts:
            return INFINITE
        return UNKNOWN if UNKNOWN in counts else sum(counts)
