"""tf.data.experimental.rejection_resample: elements kept or dropped at random so that their
classes follow a target distribution, as TF 1.15 does it.

Example::

    ds = ds.apply(sf.data.experimental.rejection_resample(
        lambda x, label: label, target_dist=[0.5, 0.5], initial_dist=[0.9, 0.1], seed=1))
    ds = ds.map(lambda cls, element: element)        # elements come as (class, element)

TF's method: with r = target / initial and m = min(r), an element of class c passes a filter
with probability (r[c] - m) / (max(r) - m); each output is drawn, with probability m, from
the unfiltered data, else from the filtered data (each stream reads the input anew). Without
initial_dist the class distribution is estimated as the data goes by (counts starting at 10
per class, updated every 32 elements). The draws are not TF's random sequence.
"""

import random

import numpy as np

from shardflow import dtypes, errors
from shardflow.data import structure as nest
from shardflow.data.dataset_ops import Dataset
from shardflow.data.traced_function import TracedFunction
from shardflow.framework import Tensor

_ESTIMATION_BATCH = 32
_SMOOTHING = 10


def _acceptance(initial, target):
    """TF's _calculate_acceptance_probs_with_mixing: (per-class acceptance, m)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = target / (initial + np.finfo(np.float32).tiny)
        m = ratio.min()
        return (ratio - m) / (ratio.max() - m), m


class RejectionResampleDataset(Dataset):
    def __init__(self, input_dataset, class_func, target_dist, initial_dist, seed):
        if not isinstance(input_dataset, Dataset):
            raise TypeError("expected a Dataset, got %r" % (input_dataset,))
        self._input = input_dataset
        self._inputs = (input_dataset,)
        self._class_fn = TracedFunction(class_func, input_dataset._structure,
                                        input_dataset._specs, "rejection_resample's class_func")
        out = self._class_fn.output_specs
        if len(out) != 1 or out[0][0] not in (dtypes.int32, dtypes.int64) or \
                out[0][1].ndims not in (0, None):
            raise TypeError("rejection_resample's class_func must return a scalar int32 or "
                            "int64 tensor; it returns %s"
                            % ", ".join("%s %s" % (d.name, nest.describe(s)) for d, s in out))
        self._target = nest.as_component(target_dist)
        self._initial = None if initial_dist is None else nest.as_component(initial_dist)
        from shardflow.ops import _op_seed
        self._seed = _op_seed(seed) or None
        self._structure = (0, input_dataset._structure)
        self._specs = list(out) + list(input_dataset._specs)

    def _tensors(self):
        dists = [d for d in (self._target, self._initial) if isinstance(d, Tensor)]
        return list(self._class_fn.captures) + dists

    def _distribution(self, ctx, component, what):
        dist = np.asarray(ctx.value(component), dtype=np.float32)
        if dist.ndim != 1 or not dist.size or (dist < 0).any():
            raise errors.InvalidArgumentError("rejection_resample: %s must be a non-empty "
                                              "vector of probabilities, not %s" % (what, dist))
        return dist

    def _classified(self, ctx, num_classes):
        """(class, element, estimated distribution or None) for each element of a new pass."""
        def tagged(element):
            c = np.asarray(self._class_fn(element, ctx.values)[0])
            if not 0 <= int(c) < num_classes:
                raise errors.InvalidArgumentError(
                    "rejection_resample: class_func gave class %d, not in [0, %d)"
                    % (int(c), num_classes))
            return c, element

        if self._initial is not None:
            for element in self._input._reader(ctx):
                yield tagged(element) + (None,)
            return
        counts = np.full(num_classes, _SMOOTHING, np.int64)
        pending = []
        for element in self._input._reader(ctx):
            pending.append(tagged(element))
            if len(pending) == _ESTIMATION_BATCH:
                yield from self._estimated(pending, counts)
                pending = []
        yield from self._estimated(pending, counts)

    @staticmethod
    def _estimated(pending, counts):
        counts += np.bincount([int(c) for c, _ in pending], minlength=len(counts))
        dist = (counts / counts.sum()).astype(np.float32)
        for c, element in pending:
            yield c, element, dist

    def _reader(self, ctx):
        target = self._distribution(ctx, self._target, "target_dist")
        initial = None if self._initial is None else \
            self._distribution(ctx, self._initial, "initial_dist")
        if initial is not None and initial.shape != target.shape:
            raise errors.InvalidArgumentError(
                "rejection_resample: initial_dist has %d classes, target_dist %d"
                % (initial.size, target.size))
        base = self._seed if self._seed is not None else ctx.unseeded
        plain = ((c, element) for c, element, _ in self._classified(ctx, target.size))
        filtered = self._filtered(ctx, target, initial, random.Random(base * 1000003 + 1))
        if initial is not None:
            m = _acceptance(initial, target)[1]
            if m >= 1:  # the data already has the target distribution
                yield from self._flat(plain)
                return
            if m <= 0:
                yield from self._flat(filtered)
                return
            weights = iter(lambda: m, None)  # without end
        else:
            weights = (_acceptance(dist, target)[1]
                       for _, _, dist in self._classified(ctx, target.size))
        streams = [plain, filtered]
        rng = random.Random(base)
        for m in weights:  # TF's directed interleave: a draw per weight
            i = 0 if rng.random() < m else 1
            if streams[i] is None:
                continue
            item = next(streams[i], None)
            if item is None:
                streams[i] = None
                if streams[1 - i] is None:
                    return
                continue
            yield self._flat_one(item)

    def _filtered(self, ctx, target, initial, rng):
        acceptance = None if initial is None else _acceptance(initial, target)[0]
        for c, element, dist in self._classified(ctx, target.size):
            accept = acceptance if dist is None else _acceptance(dist, target)[0]
            if rng.random() < accept[int(c)]:  # NaN (every class at its target) keeps none
                yield c, element

    @staticmethod
    def _flat_one(item):
        c, element = item
        return (c,) + tuple(element)

    def _flat(self, items):
        for item in items:
            yield self._flat_one(item)


def rejection_resample(class_func, target_dist, initial_dist=None, seed=None):
    """For Dataset.apply: (class, element) pairs whose classes (class_func(element), in
    [0, len(target_dist))) follow target_dist; see the module doc for TF's method."""
    return lambda dataset: RejectionResampleDataset(dataset, class_func, target_dist,
                                                    initial_dist, seed)
