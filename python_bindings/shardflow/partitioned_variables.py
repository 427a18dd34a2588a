"""TF1's partitioned variables: sf.fixed_size_partitioner, min_max_variable_partitioner,
variable_axis_size_partitioner, and get_variable(..., partitioner=...) (or a variable_scope's
partitioner) returning a PartitionedVariable.

Example (a large embedding split over the parameter servers, as TF1 programs write it)::

    with sf.variable_scope("emb", partitioner=sf.fixed_size_partitioner(num_ps)):
        table = sf.get_variable("table", [vocab, dim])     # table/part_0 .. part_{num_ps-1}
    vectors = sf.nn.embedding_lookup(table, ids, partition_strategy="div")

A partitioner is a function (shape, dtype) -> the number of parts per dimension; shardflow, as
TF1, splits one dimension. The parts are ordinary variables named "<name>/part_<i>" with TF's
slicing (the first dim % n parts one row longer), each made by the same initializer for its
own slice's shape (a full-size array as initializer is sliced); they are what global_variables,
optimizers and replica_device_setter see (so the parts spread over the ps tasks); each knows
its slice of the whole (Variable.SaveSliceInfo), so a Saver writes the whole under the
partitioned variable's name, as TF1's, and restores it into any partitioning (or none). The
PartitionedVariable itself converts to the concatenation of its parts when used as a tensor
(sf.matmul(x, table)), iterates over its parts, and embedding_lookup looks ids up in its parts
with the "div" or "mod" strategy (array_ops.embedding_lookup).
"""

import math

import numpy as np

from shardflow import dtypes


def _dims(shape):
    dims = list(shape.as_list() if hasattr(shape, "as_list") else shape)
    if any(d is None for d in dims):
        raise ValueError("a partitioner needs a fully known shape, got %s" % (dims,))
    return [int(d) for d in dims]


def _element_bytes(dtype, bytes_per_string_element):
    dt = dtypes.as_dtype(dtype)
    return bytes_per_string_element if dt == dtypes.string else np.dtype(
        dt.as_numpy_dtype).itemsize


def fixed_size_partitioner(num_shards, axis=0):
    """A partitioner splitting dimension `axis` into `num_shards` parts (fewer when the
    dimension is smaller), as TF1's tf.fixed_size_partitioner."""
    if int(num_shards) < 1:
        raise ValueError("fixed_size_partitioner: num_shards must be at least 1, got %r"
                         % (num_shards,))

    def partitioner(shape, dtype=None):
        dims = _dims(shape)
        parts = [1] * len(dims)
        parts[axis] = max(1, min(int(num_shards), dims[axis]))
        return parts
    return partitioner


def min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256 << 10,
                                 bytes_per_string_element=16):
    """A partitioner splitting dimension `axis` into ceil(bytes / min_slice_size) parts, at
    most `max_partitions` (TF1's tf.min_max_variable_partitioner: a [1024, 1024] float32
    variable is 16 parts of 256K with the default min_slice_size)."""
    if int(max_partitions) < 1 or int(min_slice_size) < 1:
        raise ValueError("min_max_variable_partitioner: max_partitions and min_slice_size must "
                         "be positive")

    def partitioner(shape, dtype):
        dims = _dims(shape)
        total = int(np.prod(dims)) * _element_bytes(dtype, bytes_per_string_element)
        if axis >= len(dims):
            raise ValueError("Can not partition variable along axis %d when shape is only %s"
                             % (axis, dims))
        n = min(int(max_partitions), dims[axis], int(math.ceil(total / float(min_slice_size))))
        parts = [1] * len(dims)
        parts[axis] = max(1, n)
        return parts
    return partitioner


def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16,
                                   max_shards=None):
    """A partitioner keeping each part under `max_shard_bytes` (at most `max_shards` parts),
    as TF1's tf.variable_axis_size_partitioner."""
    if int(max_shard_bytes) < 1:
        raise ValueError("variable_axis_size_partitioner: max_shard_bytes must be positive")

    def partitioner(shape, dtype):
        dims = _dims(shape)
        row_bytes = int(np.prod([d for i, d in enumerate(dims) if i != axis])) * \
            _element_bytes(dtype, bytes_per_string_element)
        rows_per_shard = max(1, int(max_shard_bytes) // max(1, row_bytes))
        n = int(math.ceil(dims[axis] / float(rows_per_shard)))
        if max_shards is not None:
            n = min(n, int(max_shards))
        parts = [1] * len(dims)
        parts[axis] = max(1, min(n, dims[axis]))
        return parts
    return partitioner


def slice_sizes(size, parts):
    """TF's split of `size` rows into `parts`: the first size % parts get one row more."""
    return [size // parts + (1 if i < size % parts else 0) for i in range(parts)]


class PartitionedVariable:
    """A variable made of parts along one axis (see the module's text): iterate over it for the
    parts, use it as a tensor for their concatenation."""

    def __init__(self, name, shape, dtype, variable_list, partitions):
        self._name = name
        self._shape = list(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._variable_list = list(variable_list)
        self._partitions = list(partitions)
        axes = [i for i, p in enumerate(self._partitions) if p > 1]
        self._axis = axes[0] if axes else 0

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self):
        return len(self._variable_list)

    def __repr__(self):
        return "<sf.PartitionedVariable '%s' shape=%s parts=%d>" % (
            self._name, self._shape, len(self._variable_list))

    @property
    def name(self):
        return self._name

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        from shardflow.framework import TensorShape
        return TensorShape(self._shape)

    def get_shape(self):
        return self.shape

    @property
    def op(self):
        return self.as_tensor().op

    @property
    def graph(self):
        return self._variable_list[0].graph

    def _get_variable_list(self):
        return list(self._variable_list)

    def _get_partitions(self):
        return list(self._partitions)

    def as_tensor(self, name=None):
        """The parts concatenated along their axis: the whole value."""
        from shardflow import ops
        values = [v.value() for v in self._variable_list]
        if len(values) == 1:
            return ops.identity(values[0], name=name)
        return ops.concat(values, self._axis, name=name)

    def value(self):
        return self.as_tensor()

    def read_value(self):
        return self.as_tensor()

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Sets every part from the matching slice of `value` (one op)."""
        from shardflow import ops
        sizes = [v.shape.as_list()[self._axis] for v in self._variable_list]
        pieces = ops.split(ops.convert_to_tensor(value, dtype=self._dtype), sizes, self._axis)
        return ops.group(*[v.assign(p, read_value=False)
                           for v, p in zip(self._variable_list, pieces)], name=name)


def _convert(value, dtype=None, name=None, as_ref=False):
    if dtype is not None and dtypes.as_dtype(dtype) != value.dtype:
        raise ValueError("partitioned variable %s has dtype %s, not %s"
                         % (value.name, value.dtype.name, dtypes.as_dtype(dtype).name))
    return value.as_tensor(name=name)


def create_partitioned_variable(make_part, name, shape, dtype, partitioner, initializer):
    """The PartitionedVariable `name` of `shape`, its parts made by make_part(part_name,
    part_shape, part_initializer, part_offset)."""
    from shardflow.framework import TensorShape
    dims = _dims(shape)
    # As TF1 calls it: keywords, a TensorShape (a partitioner of its own may use
    # shape[0].value or shape.num_elements()).
    parts = [int(p) for p in partitioner(shape=TensorShape(dims), dtype=dtypes.as_dtype(dtype))]
    if len(parts) != len(dims) or any(int(p) < 1 for p in parts):
        raise ValueError("partitioner for %s returned %s: one positive count per dimension of "
                         "%s" % (name, parts, dims))
    split = [i for i, p in enumerate(parts) if int(p) > 1]
    if len(split) > 1:
        raise ValueError("partitioner for %s splits dimensions %s; one dimension at most (as "
                         "TF1)" % (name, split))
    axis = split[0] if split else 0
    n = int(parts[axis])
    if n > dims[axis]:
        raise ValueError("partitioner for %s asks for %d parts of a dimension of %d"
                         % (name, n, dims[axis]))
    sizes = slice_sizes(dims[axis], n)
    full = None
    if initializer is not None and not callable(initializer):
        full = np.broadcast_to(np.asarray(initializer), dims)
    variables, offset = [], 0
    for i, size in enumerate(sizes):
        part_shape = list(dims)
        part_shape[axis] = size
        if full is not None:
            index = [slice(None)] * len(dims)
            index[axis] = slice(offset, offset + size)
            part_init = np.ascontiguousarray(full[tuple(index)])
        else:
            part_init = initializer
        offsets = [0] * len(dims)
        offsets[axis] = offset
        part = make_part("%s/part_%d" % (name.rsplit("/", 1)[-1], i), part_shape, part_init,
                         offsets)
        part._set_save_slice_info(part.SaveSliceInfo(name, dims, offsets, part_shape))
        variables.append(part)
        offset += size
    return PartitionedVariable(name, dims, dtype, variables, [int(p) for p in parts])


def create_partitioned_variables(shape, slicing, initializer, dtype=dtypes.float32,
                                 trainable=True, collections=None, name=None, reuse=None):
    """TF1's deprecated tf.create_partitioned_variables: the parts (a list of Variables
    "<name>/part_<i>") of a variable of `shape` cut `slicing[d]` ways along one dimension d;
    `name` defaults to a unique "PartitionedVariable"; `reuse` as variable_scope's."""
    import contextlib
    from shardflow.variable_scope import get_variable, get_variable_scope, variable_scope
    dims = _dims(shape)
    slicing = [int(s) for s in slicing]
    if len(dims) != len(slicing):
        raise ValueError("create_partitioned_variables: the 'shape' and 'slicing' must have the "
                         "same number of dimensions: shape=%s, slicing=%s" % (dims, slicing))
    if not dims:
        raise ValueError("create_partitioned_variables: a partitioned variable must have rank "
                         "at least 1: shape=%s" % (dims,))
    if name is None:
        # Only to take a unique name: PartitionedVariable, PartitionedVariable_1, ...
        with variable_scope(None, default_name="PartitionedVariable") as scope:
            name = scope.name.rsplit("/", 1)[-1]
    reusing = (variable_scope(get_variable_scope(), reuse=reuse) if reuse
               else contextlib.nullcontext())
    with reusing:
        pv = get_variable(name, shape=dims, dtype=dtype, initializer=initializer,
                          trainable=trainable, collections=collections,
                          partitioner=lambda **_: slicing)
    return list(pv)


def _register():
    from shardflow.framework import register_tensor_conversion_function
    register_tensor_conversion_function(PartitionedVariable, _convert)


_register()

__all__ = ["PartitionedVariable", "create_partitioned_variables", "fixed_size_partitioner",
           "min_max_variable_partitioner", "variable_axis_size_partitioner"]
