"""The datasets that make elements: from_tensor_slices, from_tensors, range, from_generator
(Dataset's static constructors build them), tf.data.experimental's Counter and RandomDataset,
and the file readers TextLineDataset, TFRecordDataset and FixedLengthRecordDataset.

Example::

    Dataset.from_tensor_slices({"x": images, "y": labels})   # one element per row
    Dataset.from_generator(lambda: iter([[1], [2, 3]]), sf.int32, [None])

Components given as NumPy arrays stay in the client's memory (not in the graph); components
given as tensors are computed when an iterator is initialized (dataset_ops.IterationContext).
"""

import gzip
import os
import zlib

import numpy as np

from shardflow import dtypes, errors, tfrecord
from shardflow.data import dataset_ops
from shardflow.data import structure as nest
from shardflow.data.dataset_ops import Dataset, _count_argument, _static
from shardflow.framework import Tensor, TensorShape


def _check_structure(structure):
    if not nest.flatten(structure):
        raise ValueError("a dataset element needs at least one component, not %r"
                         % (structure,))
    if any(c is None for c in nest.flatten(structure)):
        raise ValueError("None is not a component of a dataset element: %r" % (structure,))


class TensorSliceDataset(Dataset):
    def __init__(self, tensors):
        _check_structure(tensors)
        self._structure = tensors
        self._components = nest.components_of(tensors)
        shapes = [nest.shape_of(c) for c in self._components]
        if any(s.ndims == 0 for s in shapes):
            raise ValueError("from_tensor_slices: every component needs a first dimension to "
                             "slice, but the shapes are %s" % _shape_list(shapes))
        firsts = {s.as_list()[0] for s in shapes if s.ndims} - {None}
        if len(firsts) > 1:
            raise ValueError("from_tensor_slices: the components' first dimensions differ, so "
                             "they cannot be sliced together; the shapes are %s"
                             % _shape_list(shapes))
        self._specs = [(nest.dtype_of(c), nest.without_leading(s))
                       for c, s in zip(self._components, shapes)]

    def _tensors(self):
        return [c for c in self._components if isinstance(c, Tensor)]

    def _check(self, ctx):
        arrays = [ctx.value(c) for c in self._components]
        if any(a.ndim == 0 for a in arrays) or len({a.shape[0] for a in arrays}) > 1:
            raise errors.InvalidArgumentError(
                "from_tensor_slices: the components' first dimensions differ, so they cannot be "
                "sliced together; the values have shapes %s"
                % _shape_list([TensorShape(a.shape) for a in arrays]))

    def _reader(self, ctx):
        arrays = [ctx.value(c) for c in self._components]
        for i in range(arrays[0].shape[0]):
            yield tuple(a[i, ...] for a in arrays)

    def _cardinality(self, ctx):
        return int(np.shape(ctx.value(self._components[0]))[0])


class TensorDataset(Dataset):
    def __init__(self, tensors):
        _check_structure(tensors)
        self._structure = tensors
        self._components = nest.components_of(tensors)
        self._specs = [(nest.dtype_of(c), nest.shape_of(c)) for c in self._components]

    def _tensors(self):
        return [c for c in self._components if isinstance(c, Tensor)]

    def _reader(self, ctx):
        yield tuple(np.asarray(ctx.value(c)) for c in self._components)

    def _cardinality(self, ctx):
        return 1


class RangeDataset(Dataset):
    def __init__(self, *args):
        if not 1 <= len(args) <= 3:
            raise TypeError("Dataset.range takes stop, or start, stop[, step]; got %d arguments"
                            % len(args))
        self._args = [_count_argument(a, "a Dataset.range argument") for a in args]
        if not any(isinstance(a, Tensor) for a in self._args):
            range(*self._args)  # a zero step fails here, while the graph is built
        self._structure = 0
        self._specs = [(dtypes.int64, TensorShape([]))]

    def _tensors(self):
        return [a for a in self._args if isinstance(a, Tensor)]

    def _check(self, ctx):
        if len(self._args) == 3 and ctx.scalar(self._args[2]) == 0:
            raise errors.InvalidArgumentError("Dataset.range: step must not be 0")

    def _reader(self, ctx):
        for i in range(*[ctx.scalar(a) for a in self._args]):
            yield (np.array(i, dtype=np.int64),)

    def _cardinality(self, ctx):
        return len(range(*[ctx.scalar(a) for a in self._args]))


class CounterDataset(Dataset):
    """tf.data.experimental.Counter: start, start + step, ... without end (scalars of dtype)."""

    def __init__(self, start=0, step=1, dtype=dtypes.int64):
        self._dtype = dtypes.as_dtype(dtype)
        self._args = [nest.as_component(v, self._dtype) for v in (start, step)]
        self._structure = 0
        self._specs = [(self._dtype, TensorShape([]))]

    def _tensors(self):
        return [a for a in self._args if isinstance(a, Tensor)]

    def _reader(self, ctx):
        start, step = (np.asarray(ctx.value(a)) for a in self._args)
        if start.shape or step.shape:
            raise errors.InvalidArgumentError("Counter: start and step must be scalars, not "
                                              "shapes %s and %s" % (start.shape, step.shape))
        value = start.item()
        while True:
            yield (np.array(value, dtype=self._dtype.as_numpy_dtype),)
            value += step.item()

    def _cardinality(self, ctx):
        return dataset_ops.INFINITE


class RandomDataset(Dataset):
    """tf.data.experimental.RandomDataset: int64 scalars drawn uniformly from [0, 2**32) (the
    range of TF's 32-bit Philox draws; not TF's sequence), without end. With a seed (or
    sf.set_random_seed) the sequence is the same on every initialization."""

    def __init__(self, seed=None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError("RandomDataset's seed is a Python int or None, not %r" % (seed,))
        from shardflow.ops import _op_seed  # the graph-level seed, as random ops use it
        self._seed = _op_seed(seed) or None
        self._structure = 0
        self._specs = [(dtypes.int64, TensorShape([]))]

    def _reader(self, ctx):
        rng = np.random.default_rng(self._seed if self._seed is not None else ctx.unseeded)
        while True:
            for value in rng.integers(0, 2 ** 32, size=256, dtype=np.int64):
                yield (np.array(value, dtype=np.int64),)

    def _cardinality(self, ctx):
        return dataset_ops.INFINITE


class GeneratorDataset(Dataset):
    def __init__(self, generator, output_types, output_shapes, args):
        if not callable(generator):
            raise TypeError("from_generator takes a callable that returns an iterator (a "
                            "generator function), not %r" % (generator,))
        self._generator = generator
        self._structure = output_types
        types = [dtypes.as_dtype(t) for t in nest.flatten(output_types)]
        if output_shapes is None:
            shapes = [TensorShape(None)] * len(types)
        else:
            shapes = nest.shapes_up_to(output_types, output_shapes)
            if shapes is None:
                raise TypeError("from_generator: output_shapes %r does not have the structure "
                                "of output_types %r" % (output_shapes, output_types))
        self._specs = list(zip(types, shapes))
        self._args = [nest.as_component(a) for a in (args or ())]

    def _tensors(self):
        return [a for a in self._args if isinstance(a, Tensor)]

    def _reader(self, ctx):
        args = [ctx.value(a) for a in self._args]
        args = [a.item() if a.ndim == 0 and a.dtype.kind != "O" else a for a in args]
        # As TF1's (its generator runs in a py_func): what the generator raises, and an element
        # it yields that does not fit, fail the step with InvalidArgumentError, an OpError.
        values = iter(self._call_generator(args))
        while True:
            try:
                value = next(values)
            except StopIteration:
                return
            except errors.OpError:
                raise
            except Exception as e:  # noqa: BLE001 (the user's generator: any exception)
                raise errors.InvalidArgumentError(
                    "from_generator: the generator raised %s: %s" % (type(e).__name__, e)) from e
            yield self._element(value)

    def _call_generator(self, args):
        try:
            return self._generator(*args)
        except errors.OpError:
            raise
        except Exception as e:  # noqa: BLE001
            raise errors.InvalidArgumentError(
                "from_generator: calling the generator raised %s: %s" % (type(e).__name__, e)
            ) from e

    def _element(self, value):
        if isinstance(self._structure, tuple) and isinstance(value, list):
            value = tuple(value)
        if not nest.same_structure(self._structure, value):
            raise errors.InvalidArgumentError(
                "`generator` yielded an element that did not match the expected structure "
                "%r: %r" % (self._structure, value))
        out = []
        for component, (dtype, shape) in zip(nest.flatten(value), self._specs):
            try:
                array = nest.to_array(component, dtype)
            except (TypeError, ValueError) as e:
                raise errors.InvalidArgumentError(
                    "`generator` yielded an element that could not be converted to the expected "
                    "type %s: %r (%s)" % (dtype.name, component, e)) from None
            if not nest.is_compatible(shape, array.shape):
                raise errors.InvalidArgumentError(
                    "`generator` yielded an element of shape %s where an element of shape %s "
                    "was expected" % (nest.describe(TensorShape(array.shape)),
                                      nest.describe(shape)))
            out.append(array)
        return tuple(out)


def _read_each_file(cls, filenames, compression_type, buffer_size, num_parallel_reads):
    """`cls`'s records of each filename a Dataset of filenames yields, as TF 1.15's readers
    take one: file after file (flat_map), or num_parallel_reads files interleaved a record at a
    time."""
    def read(name):
        return cls(name, compression_type, buffer_size)
    if num_parallel_reads is None or int(num_parallel_reads) <= 1:
        return filenames.flat_map(read)
    return filenames.interleave(read, cycle_length=int(num_parallel_reads), block_length=1)


class _FilesDataset(Dataset):
    """A reader of files (TextLineDataset, TFRecordDataset): given a Dataset of filenames
    instead of names, it is _read_each_file's dataset of one reader per file."""

    def __new__(cls, filenames=None, compression_type=None, buffer_size=None,
                num_parallel_reads=None):
        if isinstance(filenames, Dataset):
            return _read_each_file(cls, filenames, compression_type, buffer_size,
                                   num_parallel_reads)
        return super().__new__(cls)


class TextLineDataset(_FilesDataset):
    """The lines of text files (bytes, without the line end), file after file.

    Example: ``sf.data.TextLineDataset(["a.txt", "b.txt"]).map(...)``.

    compression_type: None or "" (none), "ZLIB" or "GZIP"; a file that does not decompress is
    DataLossError naming it. num_parallel_reads=k > 1 takes one line from each of k files in
    turn, as TFRecordDataset's. buffer_size is accepted and ignored.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        self._compression = tfrecord.TFRecordOptions.get_compression_type_string(
            compression_type)
        self._cycle = _parallel_reads(num_parallel_reads, "TextLineDataset")
        self._filenames = nest.as_component(filenames, dtypes.string) \
            if not isinstance(filenames, Tensor) else filenames
        self._structure = 0
        self._specs = [(dtypes.string, TensorShape([]))]

    def _tensors(self):
        return [self._filenames] if isinstance(self._filenames, Tensor) else []

    def _lines(self, path):
        """The file's lines, read as they are needed (a ZLIB file is decompressed in
        pieces)."""
        if not os.path.exists(path):
            raise errors.NotFoundError("TextLineDataset: %s: no such file" % path)
        try:
            if self._compression == "ZLIB":
                for line in _zlib_lines(path):
                    yield (np.array(line.rstrip(b"\n").rstrip(b"\r"), dtype=object),)
                return
            with (gzip.open if self._compression == "GZIP" else open)(path, "rb") as f:
                for line in f:
                    yield (np.array(line.rstrip(b"\n").rstrip(b"\r"), dtype=object),)
        except (OSError, EOFError, zlib.error) as e:
            raise errors.DataLossError("TextLineDataset: %s: cannot decompress it as %s (%s)"
                                       % (path, self._compression or "text", e)) from None

    def _reader(self, ctx):
        paths = (os.fsdecode(n) for n in
                 np.asarray(ctx.value(self._filenames), dtype=object).reshape(-1))
        return _round_robin(paths, self._cycle, self._lines)


def _zlib_lines(path, chunk=1 << 20):
    """The lines of a ZLIB-compressed file, decompressed a megabyte at a time."""
    inflate = zlib.decompressobj()
    rest = b""
    with open(path, "rb") as f:
        while True:
            data = f.read(chunk)
            rest += inflate.decompress(data) if data else inflate.flush()
            lines = rest.split(b"\n")
            rest = lines.pop()
            for line in lines:
                yield line + b"\n"
            if not data:
                break
    if not inflate.eof:
        raise zlib.error("the compressed stream is truncated")
    if rest:
        yield rest


def _parallel_reads(num_parallel_reads, what):
    cycle = 1 if num_parallel_reads is None else _count_argument(num_parallel_reads,
                                                                 "num_parallel_reads")
    if isinstance(cycle, Tensor):
        raise TypeError("%s: num_parallel_reads must be a Python int here, not the tensor %s"
                        % (what, cycle.name))
    if cycle <= 0:
        raise ValueError("%s: num_parallel_reads must be positive, not %d" % (what, cycle))
    return cycle


def _round_robin(paths, cycle, elements_of):
    """The elements of the files `paths`, `cycle` files at a time, one element from each in
    turn (TF1's deterministic parallel reads)."""
    pending = iter(paths)
    active = []
    while True:
        while len(active) < cycle:
            path = next(pending, None)
            if path is None:
                break
            active.append(elements_of(path))
        if not active:
            return
        for reader in list(active):
            element = next(reader, None)
            if element is None:
                active.remove(reader)
            else:
                yield element


def _decompressed(path, compression, what):
    """The bytes of the file `path`, decompressed ("GZIP", "ZLIB" or "" for none)."""
    opener = gzip.open if compression == "GZIP" else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
        return zlib.decompress(data) if compression == "ZLIB" else data
    except (OSError, EOFError, zlib.error) as e:
        raise errors.DataLossError("%s: %s: cannot decompress it as %s (%s)"
                                   % (what, path, compression, e)) from None


def _filenames_component(filenames):
    if isinstance(filenames, Tensor):
        return filenames
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]  # a list: structure.to_array mishandles a lone string
    return nest.as_component([os.fspath(f) for f in np.asarray(filenames, dtype=object)
                              .reshape(-1)], dtypes.string)


def _paths(ctx, filenames):
    return [os.fsdecode(name) for name in
            np.asarray(ctx.value(filenames), dtype=object).reshape(-1)]


class TFRecordDataset(_FilesDataset):
    """The records (bytes) of TFRecord files, file after file (shardflow/tfrecord.py has the
    format); each record's CRCs are checked and a damaged file is DataLossError.

    Example::

        ds = sf.data.TFRecordDataset(["a.tfrecord", "b.tfrecord"], compression_type="GZIP")
        ds = ds.map(lambda r: sf.parse_single_example(r, features)).batch(32)

    compression_type: None or "" (none), "ZLIB" or "GZIP", for every file. buffer_size is
    accepted and ignored. num_parallel_reads=k > 1 reads k files at once, taking one record from
    each in turn (as TF1, deterministically); reads happen in the client, so it changes the
    order, not the speed.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        self._compression = tfrecord.TFRecordOptions.get_compression_type_string(
            compression_type)
        self._cycle = _parallel_reads(num_parallel_reads, "TFRecordDataset")
        self._filenames = _filenames_component(filenames)
        self._structure = 0
        self._specs = [(dtypes.string, TensorShape([]))]

    def _tensors(self):
        return [self._filenames] if isinstance(self._filenames, Tensor) else []

    def _records(self, path):
        for record in tfrecord.read_records(path, self._compression, "TFRecordDataset"):
            yield (np.array(record, dtype=object),)

    def _reader(self, ctx):
        return _round_robin(_paths(ctx, self._filenames), self._cycle, self._records)


class FixedLengthRecordDataset(Dataset):
    """Records of `record_bytes` bytes each from binary files, file after file, skipping
    `header_bytes` at the start and `footer_bytes` at the end of each file (as CIFAR-10's files).

    Example: ``sf.data.FixedLengthRecordDataset("data_batch_1.bin", 1 + 32 * 32 * 3)``;
    elements are string scalars, sf.decode_raw turns them into numbers. A last record shorter
    than record_bytes is dropped, as TF1 does; a file shorter than header plus footer is
    InvalidArgumentError. buffer_size is accepted and ignored; compression_type may be None,
    "", "ZLIB" or "GZIP".
    """

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None):
        self._record = _count_argument(record_bytes, "record_bytes")
        self._header = 0 if header_bytes is None else _count_argument(header_bytes,
                                                                      "header_bytes")
        self._footer = 0 if footer_bytes is None else _count_argument(footer_bytes,
                                                                      "footer_bytes")
        if _static(self._record) is not None and self._record <= 0:
            raise ValueError("FixedLengthRecordDataset: record_bytes must be positive, not %d"
                             % self._record)
        for what, n in (("header_bytes", self._header), ("footer_bytes", self._footer)):
            if _static(n) is not None and n < 0:
                raise ValueError("FixedLengthRecordDataset: %s must be >= 0, not %d" % (what, n))
        self._compression = tfrecord.TFRecordOptions.get_compression_type_string(
            compression_type)
        self._filenames = _filenames_component(filenames)
        self._structure = 0
        self._specs = [(dtypes.string, TensorShape([]))]

    def _tensors(self):
        return [t for t in (self._filenames, self._record, self._header, self._footer)
                if isinstance(t, Tensor)]

    def _reader(self, ctx):
        record, header, footer = (int(ctx.value(v)) if isinstance(v, Tensor) else v
                                  for v in (self._record, self._header, self._footer))
        if record <= 0 or header < 0 or footer < 0:
            raise errors.InvalidArgumentError(
                "FixedLengthRecordDataset: record_bytes must be positive and header_bytes, "
                "footer_bytes >= 0; got %d, %d, %d" % (record, header, footer))
        for path in _paths(ctx, self._filenames):
            data = self._read(path)
            if len(data) < header + footer:
                raise errors.InvalidArgumentError(
                    "FixedLengthRecordDataset: %s: the file has %d bytes, fewer than "
                    "header_bytes + footer_bytes = %d" % (path, len(data), header + footer))
            body = memoryview(data)[header:len(data) - footer]
            for start in range(0, len(body) - record + 1, record):
                yield (np.array(bytes(body[start:start + record]), dtype=object),)

    def _read(self, path):
        if not os.path.exists(path):
            raise errors.NotFoundError("FixedLengthRecordDataset: %s: no such file" % path)
        return _decompressed(path, self._compression, "FixedLengthRecordDataset")


def _shape_list(shapes):
    return "[%s]" % ", ".join(nest.describe(s) for s in shapes)
