"""Transformations that carry a state from element to element: tf.data.experimental.scan and
Dataset.reduce (and group_by_reducer's reducer, grouping.py).

Example (running sums, then the total)::

    sums = ds.apply(sf.data.experimental.scan(0, lambda s, x: (s + x, s + x)))
    total = ds.reduce(np.int64(0), lambda s, x: s + x)    # a tensor, computed on each run

The function takes (state, element), the element not spread into arguments, as TF. Its new
state must have the initial state's structure and dtypes; where its shapes differ from the
state's, the state's shapes are relaxed (to unknown dimensions) and the function is traced
again, as TF does, until they agree.
"""

import numpy as np

from shardflow.data import structure as nest
from shardflow.data.dataset_ops import Dataset, _UnaryDataset
from shardflow.data.traced_function import TracedFunction
from shardflow.framework import Tensor


class InitialState:
    """A state given by the user (nested values or tensors): its components and their specs.
    Tensors among them are computed when an iterator is initialized."""

    def __init__(self, value, what):
        flat = nest.flatten(value)
        if not flat or any(c is None for c in flat):
            raise ValueError("%s must be tensors or values convertible to tensors, not %r"
                             % (what, value))
        self.structure = value
        # A NumPy scalar keeps its dtype (np.int64(0) is int64), as TF converts it.
        self.components = [nest.as_component(np.asarray(c) if isinstance(c, np.generic) else c)
                           for c in flat]
        self.specs = [(nest.dtype_of(c), nest.shape_of(c)) for c in self.components]

    def tensors(self):
        return [c for c in self.components if isinstance(c, Tensor)]

    def values(self, ctx):
        """The flat initial state for an initialization (a tuple of arrays)."""
        return tuple(np.asarray(ctx.value(c)) for c in self.components)


def _shape_key(shape):
    return None if shape.ndims is None else tuple(shape.as_list())


def trace_state_function(fn, state, arg_structure, arg_specs, what, new_state_of):
    """`fn(state, argument)` traced, `state` an InitialState (or anything with its structure and
    specs); `new_state_of(traced)` gives the structure and flat specs of the new state it
    returns. Returns (the TracedFunction, the state's specs after relaxing)."""
    state_specs = list(state.specs)
    while True:
        traced = TracedFunction(fn, (state.structure, arg_structure),
                                state_specs + list(arg_specs), what)
        structure, specs = new_state_of(traced)
        if not nest.same_structure(state.structure, structure):
            raise TypeError("%s: the new state %r does not have the structure of the initial "
                            "state %r" % (what, structure, state.structure))
        got = [d for d, _ in specs]
        if got != [d for d, _ in state_specs]:
            raise TypeError("%s: the new state's dtypes must match the initial state's. "
                            "Expected %s; got %s." % (what, [d.name for d, _ in state_specs],
                                                      [d.name for d in got]))
        relaxed = [(d, nest.most_specific_common(a, b))
                   for (d, a), (_, b) in zip(state_specs, specs)]
        if [_shape_key(s) for _, s in relaxed] == [_shape_key(s) for _, s in state_specs]:
            return traced, state_specs
        state_specs = relaxed


def whole_output(traced):
    return traced.output_structure, traced.output_specs


class ScanDataset(_UnaryDataset):
    def __init__(self, input_dataset, initial_state, scan_func):
        super().__init__(input_dataset)
        self._state = InitialState(initial_state, "scan's initial_state")
        self.fn, self._state_specs = trace_state_function(
            scan_func, self._state, input_dataset._structure, input_dataset._specs, "scan",
            self._split)
        n = len(self._state_specs)
        self._structure = self.fn.output_structure[1]
        self._specs = self.fn.output_specs[n:]

    @staticmethod
    def _split(traced):
        result = traced.output_structure
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError("The scan function must return a pair comprising the new state and "
                            "the output value; it returned %r" % (result,))
        n = len(nest.flatten(result[0]))
        return result[0], traced.output_specs[:n]

    def _tensors(self):
        return self._state.tensors() + list(self.fn.captures)

    def _reader(self, ctx):
        state, n = self._state.values(ctx), len(self._state_specs)
        for element in self._input._reader(ctx):
            result = self.fn(state + element, ctx.values)
            state = result[:n]
            yield result[n:]


def scan(initial_state, scan_func):
    """For Dataset.apply: scan_func(state, element) -> (new_state, output) applied in turn
    from `initial_state`; the dataset of the outputs."""
    return lambda dataset: ScanDataset(dataset, initial_state, scan_func)


class ReduceDataset(_UnaryDataset):
    """One element: the state after reduce_func(state, element) over every element."""

    def __init__(self, input_dataset, initial_state, reduce_func):
        super().__init__(input_dataset)
        self._state = InitialState(initial_state, "reduce's initial_state")
        self.fn, self._specs = trace_state_function(
            reduce_func, self._state, input_dataset._structure, input_dataset._specs, "reduce",
            whole_output)
        self._structure = self._state.structure

    def _tensors(self):
        return self._state.tensors() + list(self.fn.captures)

    def _reader(self, ctx):
        state = self._state.values(ctx)
        for element in self._input._reader(ctx):
            state = self.fn(state + element, ctx.values)
        yield state


def reduce(dataset, initial_state, reduce_func):
    """Dataset.reduce: the tensors of the final state, computed afresh on each run."""
    from shardflow.data.iterator_ops import single_element
    if not isinstance(dataset, Dataset):
        raise TypeError("reduce takes a Dataset, not %r" % (dataset,))
    return single_element(ReduceDataset(dataset, initial_state, reduce_func), "DatasetReduce")
