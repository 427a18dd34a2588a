"""The datasets that make elements: from_tensor_slices, from_tensors, range, from_generator and
TextLineDataset (Dataset's static constructors build them).

Example::

    Dataset.from_tensor_slices({"x": images, "y": labels})   # one element per row
    Dataset.from_generator(lambda: iter([[1], [2, 3]]), sf.int32, [None])

Components given as NumPy arrays stay in the client's memory (not in the graph); components
given as tensors are computed when an iterator is initialized (dataset_ops.IterationContext).
"""

import os

import numpy as np

from shardflow import dtypes, errors
from shardflow.data import structure as nest
from shardflow.data.dataset_ops import Dataset, _count_argument
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
        self._components = [nest.as_component(c) for c in nest.flatten(tensors)]
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


class TensorDataset(Dataset):
    def __init__(self, tensors):
        _check_structure(tensors)
        self._structure = tensors
        self._components = [nest.as_component(c) for c in nest.flatten(tensors)]
        self._specs = [(nest.dtype_of(c), nest.shape_of(c)) for c in self._components]

    def _tensors(self):
        return [c for c in self._components if isinstance(c, Tensor)]

    def _reader(self, ctx):
        yield tuple(np.asarray(ctx.value(c)) for c in self._components)


class RangeDataset(Dataset):
    def __init__(self, *args):
        if not 1 <= len(args) <= 3:
            raise TypeError("Dataset.range takes stop, or start, stop[, step]; got %d arguments"
                            % len(args))
        self._range = range(*[_count_argument(a, "a Dataset.range argument") for a in args])
        self._structure = 0
        self._specs = [(dtypes.int64, TensorShape([]))]

    def _reader(self, ctx):
        for i in self._range:
            yield (np.array(i, dtype=np.int64),)


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
            if not nest.same_structure(output_types, output_shapes):
                raise TypeError("from_generator: output_shapes %r does not have the structure "
                                "of output_types %r" % (output_shapes, output_types))
            shapes = [nest.as_shape(s) for s in nest.flatten(output_shapes)]
        self._specs = list(zip(types, shapes))
        self._args = [nest.as_component(a) for a in (args or ())]

    def _tensors(self):
        return [a for a in self._args if isinstance(a, Tensor)]

    def _reader(self, ctx):
        args = [ctx.value(a) for a in self._args]
        args = [a.item() if a.ndim == 0 and a.dtype.kind != "O" else a for a in args]
        for value in self._generator(*args):
            yield self._element(value)

    def _element(self, value):
        if isinstance(self._structure, tuple) and isinstance(value, list):
            value = tuple(value)
        if not nest.same_structure(self._structure, value):
            raise TypeError("`generator` yielded an element that did not match the expected "
                            "structure %r: %r" % (self._structure, value))
        out = []
        for component, (dtype, shape) in zip(nest.flatten(value), self._specs):
            try:
                array = nest.to_array(component, dtype)
            except (TypeError, ValueError) as e:
                raise TypeError("`generator` yielded an element that could not be converted to "
                                "the expected type %s: %r (%s)" % (dtype.name, component, e)
                                ) from None
            if not nest.is_compatible(shape, array.shape):
                raise errors.InvalidArgumentError(
                    "`generator` yielded an element of shape %s where an element of shape %s "
                    "was expected" % (nest.describe(TensorShape(array.shape)),
                                      nest.describe(shape)))
            out.append(array)
        return tuple(out)


class TextLineDataset(Dataset):
    """The lines of text files (bytes, without the line end), file after file.

    Example: ``sf.data.TextLineDataset(["a.txt", "b.txt"]).map(...)``.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None):
        if compression_type not in (None, ""):
            raise NotImplementedError("TextLineDataset reads plain text only, not "
                                      "compression_type=%r" % (compression_type,))
        self._filenames = nest.as_component(filenames, dtypes.string) \
            if not isinstance(filenames, Tensor) else filenames
        self._structure = 0
        self._specs = [(dtypes.string, TensorShape([]))]

    def _tensors(self):
        return [self._filenames] if isinstance(self._filenames, Tensor) else []

    def _reader(self, ctx):
        for name in np.asarray(ctx.value(self._filenames), dtype=object).reshape(-1):
            path = os.fsdecode(name)
            if not os.path.exists(path):
                raise errors.NotFoundError("TextLineDataset: %s: no such file" % path)
            with open(path, "rb") as f:
                for line in f:
                    yield (np.array(line.rstrip(b"\n").rstrip(b"\r"), dtype=object),)


def _shape_list(shapes):
    return "[%s]" % ", ".join(nest.describe(s) for s in shapes)
