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
        if nest.sparse_slots(structure):
            raise TypeError("padded_batch does not pad SparseTensor components (as TF1's); "
                            "batch() them, or make them dense first (sf.sparse.to_dense in a "
                            "map)")
        self._padded = nest.shapes_up_to(structure, padded_shapes)
        if self._padded is None:
            raise ValueError("padded_batch: padded_shapes %r does not have the structure of the "
                             "elements %r" % (padded_shapes, input_dataset.output_shapes))
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
            # (a 0-d object array assigned to one cell would be stored as the array itself)
            out[(k,) + tuple(slice(0, s) for s in p.shape)] = p if p.ndim else p[()]
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
        self._sparse = nest.sparse_slots(self._structure)
        self._specs = [(dtype, nest.without_leading(shape))
                       for dtype, shape in input_dataset._specs]
        for p in self._sparse:  # Note [Sparse elements] in structure.py: one less dimension
            (_, index_shape), (dtype, _), _ = input_dataset._specs[p:p + 3]
            rank = index_shape.as_list()[1] if index_shape.ndims == 2 else None
            if rank == 0:
                raise ValueError("unbatch: a scalar SparseTensor has no rows")
            self._specs[p:p + 3] = nest.sparse_specs(
                dtype, TensorShape(None if rank is None else [None] * (rank - 1)))

    def _reader(self, ctx):
        for batch in self._input._reader(ctx):
            rows = set()
            for i, c in enumerate(batch):
                if any(p <= i < p + 3 for p in self._sparse):
                    if i in self._sparse:
                        rows.add(int(batch[i + 2][0]))
                    continue
                rows.add(c.shape[0])
            if len(rows) != 1:
                raise errors.InvalidArgumentError(
                    "unbatch: the components of a batch have different first dimensions %s"
                    % sorted(rows))
            count = rows.pop()
            split = {p: _sparse_rows(batch[p], batch[p + 1], batch[p + 2], count)
                     for p in self._sparse}
            for k in range(count):
                row, i = [], 0
                while i < len(batch):
                    if i in split:
                        row.extend(split[i][k])
                        i += 3
                        continue
                    row.append(batch[i][k, ...])
                    i += 1
                yield tuple(row)


def _sparse_rows(indices, values, dense_shape, count):
    """The rows of a batched sparse value: [(indices, values, dense_shape)] for rows 0..count-1
    (indices without their row coordinate)."""
    order = np.argsort(indices[:, 0], kind="stable") if len(indices) else np.zeros(0, int)
    indices, values = indices[order], values[order]
    bounds = np.searchsorted(indices[:, 0], np.arange(count + 1)) if len(indices) else \
        np.zeros(count + 1, int)
    shape = np.asarray(dense_shape[1:], np.int64)
    return [(indices[bounds[k]:bounds[k + 1], 1:].astype(np.int64), values[bounds[k]:bounds[k + 1]],
             shape) for k in range(count)]


def unbatch():
    """For Dataset.apply: each batch split into its rows (tf.data.experimental.unbatch)."""
    return UnbatchDataset


class DenseToSparseBatchDataset(_UnaryDataset):
    """Batches of elements of different shapes as one SparseTensor (Note [Sparse elements] in
    structure.py): element k's entries at [k, i...], dense shape [rows] + row_shape (a -1 in
    row_shape: the batch's longest)."""

    def __init__(self, input_dataset, batch_size, row_shape):
        super().__init__(input_dataset)
        if len(input_dataset._specs) != 1:
            raise TypeError("dense_to_sparse_batch takes a dataset of single tensors, not %r"
                            % (input_dataset.output_types,))
        self._batch_size = _count_argument(batch_size, "batch_size")
        if _static(self._batch_size) is not None and self._batch_size <= 0:
            raise ValueError("batch_size must be positive, not %d" % self._batch_size)
        self._row_shape = [int(d) for d in (row_shape.as_list() if hasattr(row_shape, "as_list")
                                            else row_shape)]
        if any(d < -1 for d in self._row_shape):
            raise ValueError("dense_to_sparse_batch: row_shape %r has a size below -1"
                             % (self._row_shape,))
        dtype, shape = input_dataset._specs[0]
        if shape.ndims is not None and shape.ndims != len(self._row_shape):
            raise ValueError("dense_to_sparse_batch: elements of rank %d for a row_shape of "
                             "rank %d" % (shape.ndims, len(self._row_shape)))
        self._structure = nest.sparse_placeholder_structure()
        self._specs = nest.sparse_specs(dtype, TensorShape([None] * (len(self._row_shape) + 1)))

    def _tensors(self):
        return [self._batch_size] if isinstance(self._batch_size, Tensor) else []

    def _reader(self, ctx):
        size = ctx.scalar(self._batch_size)
        rank = len(self._row_shape)
        elements = self._input._reader(ctx)
        while True:
            chunk = [e[0] for e in itertools.islice(elements, size)]
            if not chunk:
                return
            longest = np.max([c.shape for c in chunk], axis=0) if rank else []
            dense = [int(m) if d == -1 else d for d, m in zip(self._row_shape, longest)]
            indices, values = [], []
            for k, c in enumerate(chunk):
                if c.ndim != rank or any(s > d for s, d in zip(c.shape, dense)):
                    raise errors.InvalidArgumentError(
                        "dense_to_sparse_batch: an element of shape %s does not fit row_shape "
                        "%s" % (nest.describe(TensorShape(c.shape)), self._row_shape))
                at = np.indices(c.shape).reshape(rank, -1).T
                indices.append(np.concatenate([np.full((len(at), 1), k), at], axis=1))
                values.append(c.reshape(-1))
            yield (np.concatenate(indices).astype(np.int64).reshape(-1, rank + 1),
                   np.concatenate(values), np.asarray([len(chunk)] + dense, np.int64))

    def _cardinality(self, ctx):
        return batch_cardinality(self._input._cardinality(ctx), ctx.scalar(self._batch_size),
                                 False)


def dense_to_sparse_batch(batch_size, row_shape):
    """For Dataset.apply: batch_size elements of different shapes as one SparseTensor of
    dense shape [rows] + row_shape (tf.data.experimental.dense_to_sparse_batch)."""
    return lambda dataset: DenseToSparseBatchDataset(dataset, batch_size, row_shape)
