"""Batching that changes shapes: padded_batch (elements of different lengths padded to one
shape) and unbatch (a batch split back into elements).

Example::

    ds = sf.data.Dataset.from_generator(sentences, sf.int32, [None])
    ds = ds.padded_batch(32, padded_shapes=[None])        # each batch padded to its longest
    ds = ds.apply(sf.data.experimental.unbatch())          # rows again, padded
"""

import itertools

import numpy as np

from shardflow import dtypes, errors
from shardflow.data import structure as nest
from shardflow.data.dataset_ops import _UnaryDataset, _count_argument, _static, \
    batch_cardinality
from shardflow.framework import Tensor, TensorShape


class PaddedBatchDataset(_UnaryDataset):
    def __init__(self, input_dataset, batch_size, padded_shapes, padding_values=None,
                 drop_remainder=False):
        super().__init__(input_dataset)
        self._batch_size = _count_argument(batch_size, "batch_size")
        if _static(self._batch_size) is not None and self._batch_size <= 0:
            raise ValueError("batch_size must be positive, not %d" % self._batch_size)
        self._drop_remainder = bool(drop_remainder)
        structure = input_dataset._structure
        if not nest.same_structure(structure, padded_shapes):
            raise ValueError("padded_batch: padded_shapes %r does not have the structure of the "
                             "elements %r" % (padded_shapes, input_dataset.output_shapes))
        self._padded = [nest.as_shape(s) for s in nest.flatten(padded_shapes)]
        for i, (padded, (_, shape)) in enumerate(zip(self._padded, input_dataset._specs)):
            if not _can_hold(padded, shape):
                raise ValueError("padded_batch: component %d has shape %s, which padded shape %s "
                                 "cannot hold" % (i, nest.describe(shape), nest.describe(padded)))
        if padding_values is None:
            self._padding = [b"" if dtype == dtypes.string else 0
                             for dtype, _ in input_dataset._specs]
        else:
            if not nest.same_structure(structure, padding_values):
                raise ValueError("padded_batch: padding_values %r does not have the structure "
                                 "of the elements" % (padding_values,))
            self._padding = nest.flatten(padding_values)
        self._padding = [nest.to_array(v, dtype) for v, (dtype, _)
                         in zip(self._padding, input_dataset._specs)]
        dim = _static(self._batch_size) if self._drop_remainder else None
        self._specs = [(dtype, nest.with_leading(dim, padded))
                       for (dtype, _), padded in zip(input_dataset._specs, self._padded)]

    def _tensors(self):
        return [self._batch_size] if isinstance(self._batch_size, Tensor) else []

    def _reader(self, ctx):
        size = ctx.scalar(self._batch_size)
        elements = self._input._reader(ctx)
        while True:
            chunk = list(itertools.islice(elements, size))
            if not chunk or (self._drop_remainder and len(chunk) < size):
                return
            yield tuple(self._pad(i, [e[i] for e in chunk]) for i in range(len(chunk[0])))

    def _cardinality(self, ctx):
        return batch_cardinality(self._input._cardinality(ctx), ctx.scalar(self._batch_size),
                                 self._drop_remainder)

    def _pad(self, i, parts):
        padded = self._padded[i].as_list()
        longest = np.max([p.shape for p in parts], axis=0) if padded else []
        target = [int(m) if d is None else d for d, m in zip(padded, longest)]
        out = np.empty([len(parts)] + target, dtype=parts[0].dtype)
        out[...] = self._padding[i]
        for k, p in enumerate(parts):
            if p.ndim != len(target) or any(s > t for s, t in zip(p.shape, target)):
                raise errors.InvalidArgumentError(
                    "padded_batch: element %d has shape %s in component %d, larger than the "
                    "padded shape %s" % (k, nest.describe(TensorShape(p.shape)), i,
                                         nest.describe(TensorShape(target))))
            out[(k,) + tuple(slice(0, s) for s in p.shape)] = p
        return out


def _can_hold(padded, shape):
    """Whether elements of static `shape` fit `padded` (a rank-known shape is needed)."""
    if padded.ndims is None:
        return False
    if shape.ndims is None:
        return True
    return shape.ndims == padded.ndims and all(
        p is None or s is None or p >= s for p, s in zip(padded.as_list(), shape.as_list()))


class UnbatchDataset(_UnaryDataset):
    def __init__(self, input_dataset):
        super().__init__(input_dataset)
        self._specs = [(dtype, nest.without_leading(shape))
                       for dtype, shape in input_dataset._specs]

    def _reader(self, ctx):
        for batch in self._input._reader(ctx):
            rows = {c.shape[0] for c in batch}
            if len(rows) != 1:
                raise errors.InvalidArgumentError(
                    "unbatch: the components of a batch have different first dimensions %s"
                    % sorted(rows))
            for k in range(rows.pop()):
                yield tuple(c[k, ...] for c in batch)


def unbatch():
    """For Dataset.apply: each batch split into its rows (tf.data.experimental.unbatch)."""
    return UnbatchDataset
