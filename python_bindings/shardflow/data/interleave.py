"""Dataset.flat_map, Dataset.interleave and tf.data.experimental.parallel_interleave: a
function from an element to a dataset, whose elements take the element's place.

The function is traced once, as a map function is (traced_function.py), on placeholders shaped
like one element inside a function graph: what it returns is a Dataset description whose graph
tensors (a TFRecordDataset's file name, a from_tensors component, a map function's captures)
live in that function graph. For each input element, the function graph computes those
tensors from the element, and the inner dataset is read with them as if its iterator had just
been initialized.

Example::

    files = sf.data.Dataset.list_files("/data/train-*.tfrecord")
    records = files.interleave(sf.data.TFRecordDataset, cycle_length=4, block_length=16)

Interleaving follows TF's order exactly: `cycle_length` inner datasets are read in turn,
`block_length` elements from each; when one ends, the next turn opens the next input
element's dataset in its slot.
"""

import os
import threading

from shardflow import dtypes
from shardflow.data import dataset_ops
from shardflow.data import structure as nest
from shardflow.data.traced_function import _call
from shardflow.framework import Tensor, _FuncGraph, get_default_graph


class _DatasetFunction:
    """`fn`, from one element (`structure`, `specs`) to a Dataset, traced once. `mode`:
    "element" (fn takes the element's tensors), "window" (each component is a Dataset of a
    window's values) or "group" (fn takes an int64 key and a Dataset of the group's elements,
    as group_by_window's reduce_func)."""

    def __init__(self, fn, structure, specs, what, mode="element"):
        if not callable(fn):
            raise TypeError("Dataset.%s takes a function, not %r" % (what, fn))
        from shardflow import ops
        self._what = what
        self._outer = get_default_graph()
        self._graph = _FuncGraph(self._outer, "Dataset_" + what)
        self._mode = mode
        with self._graph.as_default():
            if mode == "window":
                self._args = [_WindowArgument(dtype, shape, _window_slot(i))
                              for i, (dtype, shape) in enumerate(specs)]
                inner = _call(fn, nest.pack_as(structure, self._args))
            elif mode == "group":
                self._args = [ops.placeholder(dtypes.int64, [], name="key")]
                inner = fn(self._args[0], _GroupArgument(structure, specs))
            else:
                self._args = [ops.placeholder(dtype, None if shape.ndims is None
                                              else shape.as_list(), name="arg%d" % i)
                              for i, (dtype, shape) in enumerate(specs)]
                inner = _call(fn, nest.pack_as(structure, self._args))
        if not isinstance(inner, dataset_ops.Dataset):
            raise TypeError("the function given to Dataset.%s must return a Dataset, not %r"
                            % (what, inner))
        self.dataset = inner
        tensors = dataset_ops.graph_tensors(inner)
        # The inner pipeline's tensors: computed in the function graph from the element, or
        # (when the function used a tensor of the enclosing graph as it is) valued with the
        # enclosing pipeline's other tensors.
        self._computed = [t for t in tensors if t.graph is self._graph]
        self._outside = [t for t in tensors if t.graph is not self._graph]
        self._captured = [(outer.name, ph) for outer, ph in self._graph._captures]
        self._session = None
        self._lock = threading.Lock()

    @property
    def captures(self):
        """The enclosing graph's tensors whose values each call needs."""
        return [outer for outer, _ in self._graph._captures] + self._outside

    def _run(self, feeds):
        with self._lock:
            if self._session is None:
                from shardflow.session import Session
                self._session = Session(graph=self._graph)
        fetches = {t.name: t for t in self._computed}
        return self._session.run(fetches, feeds)

    def reader(self, flat_element, ctx):
        """The inner dataset's elements for one input element."""
        values = {t.name: ctx.values[t.name] for t in self._outside}
        if self._mode == "window":
            values.update((_window_slot(i), part) for i, part in enumerate(flat_element))
            feeds = {}
        elif self._mode == "group":     # (key, [flat elements of the group])
            values[_GROUP_SLOT] = flat_element[1]
            feeds = {self._args[0]: flat_element[0]}
        else:
            feeds = dict(zip(self._args, flat_element))
        if self._computed:
            for name, ph in self._captured:
                feeds[ph] = ctx.values[name]
            values.update(self._run(feeds))
        inner_ctx = dataset_ops.IterationContext(values)
        return dataset_ops.start(self.dataset, inner_ctx)


def _cycle_argument(value, what):
    value = dataset_ops._count_argument(value, what)
    if isinstance(value, Tensor):
        raise TypeError("%s must be a Python int here, not the tensor %s" % (what, value.name))
    if value == -1:  # AUTOTUNE: as TF, the number of processors
        value = os.cpu_count() or 1
    if value <= 0:
        raise ValueError("%s must be positive (or AUTOTUNE), not %d" % (what, value))
    return value


class InterleaveDataset(dataset_ops.Dataset):
    """The elements of map_func(element) for each input element, `cycle_length` inner
    datasets read in turn, `block_length` elements at a time (flat_map: cycle_length 1)."""

    def __init__(self, input_dataset, map_func, cycle_length, block_length, what="interleave"):
        if not isinstance(input_dataset, dataset_ops.Dataset):
            raise TypeError("expected a Dataset, got %r" % (input_dataset,))
        self._input = input_dataset
        self._inputs = (input_dataset,)
        self._cycle = _cycle_argument(cycle_length, "%s's cycle_length" % what)
        self._block = _cycle_argument(block_length, "%s's block_length" % what)
        self.fn = _DatasetFunction(map_func, input_dataset._structure, input_dataset._specs,
                                   what, "window" if isinstance(input_dataset, WindowDataset)
                                   else "element")
        inner = self.fn.dataset
        self._structure = inner._structure
        self._specs = list(inner._specs)

    def _tensors(self):
        return self.fn.captures

    def _reader(self, ctx):
        # TF's InterleaveDatasetOp, step for step.
        elements = self._input._reader(ctx)
        slots = [None] * self._cycle
        index, taken, open_count, input_done = 0, 0, 0, False
        while not input_done or open_count > 0:
            current = slots[index]
            if current is not None:
                element = next(current, None)
                if element is not None:
                    taken += 1
                    if taken == self._block:
                        index, taken = (index + 1) % self._cycle, 0
                    yield element
                    continue
                slots[index] = None
                open_count -= 1
                index, taken = (index + 1) % self._cycle, 0
            elif not input_done:
                element = next(elements, None)
                if element is None:
                    input_done = True
                else:
                    slots[index] = iter(self.fn.reader(element, ctx))
                    open_count += 1
            else:
                index, taken = (index + 1) % self._cycle, 0


def _window_slot(i):
    return "__window_component_%d" % i


class WindowDataset(dataset_ops._UnaryDataset):
    """Windows of `size` input elements (elements start, start + stride, ...), a new window
    every `shift` elements; the last windows may be shorter unless drop_remainder. Each
    component of a window is a Dataset, so a window dataset is read through flat_map or
    interleave, e.g. ``ds.window(5, 1, drop_remainder=True).flat_map(lambda w: w.batch(5))``.
    """

    def __init__(self, input_dataset, size, shift=None, stride=1, drop_remainder=False):
        super().__init__(input_dataset)
        self._size = _cycle_argument(size, "window's size")
        self._shift = self._size if shift is None else _cycle_argument(shift, "window's shift")
        self._stride = _cycle_argument(stride, "window's stride")
        self._drop = bool(drop_remainder)

    def _reader(self, ctx):
        elements = self._input._reader(ctx)
        buffer, first, done = [], 0, False   # buffer[0] is input element number `first`
        start = 0
        while True:
            last = start + (self._size - 1) * self._stride
            while not done and first + len(buffer) <= last:
                element = next(elements, None)
                if element is None:
                    done = True
                else:
                    buffer.append(element)
            picked = [buffer[i - first] for i in range(start, last + 1, self._stride)
                      if i - first < len(buffer)]
            if not picked or (self._drop and len(picked) < self._size):
                return
            yield tuple([e[c] for e in picked] for c in range(len(self._specs)))
            start += self._shift
            if start > first:
                drop = start - first
                if drop > len(buffer):
                    # A shift past the window's span: the elements between are skipped unread
                    # (window k starts at input element k * shift).
                    skip, buffer = drop - len(buffer), []
                    while skip and not done:
                        done = next(elements, None) is None
                        skip -= 1
                else:
                    del buffer[:drop]
                first = start

    def _not_here(self, *args, **kwargs):
        raise TypeError("a window dataset's elements are datasets: read it with flat_map or "
                        "interleave, e.g. ds.window(n).flat_map(lambda w: w.batch(n))")

    map = filter = batch = padded_batch = make_one_shot_iterator = \
        make_initializable_iterator = _not_here


class _WindowArgument(dataset_ops.Dataset):
    """A window's component inside a function given to flat_map/interleave: a Dataset whose
    elements are the window's values of one component."""

    def __init__(self, dtype, shape, slot):
        self._structure = 0
        self._specs = [(dtype, shape)]
        self._slot = slot

    def _reader(self, ctx):
        for value in ctx.values[self._slot]:
            yield (value,)


_GROUP_SLOT = "__group_elements"


class _GroupArgument(dataset_ops.Dataset):
    """The elements of one group, inside group_by_window's reduce_func."""

    def __init__(self, structure, specs):
        self._structure = structure
        self._specs = list(specs)

    def _reader(self, ctx):
        return iter(ctx.values[_GROUP_SLOT])


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """For Dataset.apply (tf.data.experimental.parallel_interleave): interleave(map_func,
    cycle_length, block_length). Elements come in interleave's deterministic order, which
    `sloppy=True` allows; the reading happens in the client either way."""
    return lambda dataset: InterleaveDataset(dataset, map_func, cycle_length, block_length,
                                             "parallel_interleave")


__all__ = ["InterleaveDataset", "WindowDataset", "parallel_interleave"]
