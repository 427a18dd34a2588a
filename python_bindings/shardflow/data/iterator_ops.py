"""tf.data's Iterator: get_next() tensors that Session.run feeds from a dataset.

get_next() returns placeholders (in a name scope "IteratorGetNext"). When a step's fetches
depend on them, Session.run asks the graph's _GraphIterators for the next element and feeds it;
a step that does not need them takes none. An exhausted iterator raises
sf.errors.OutOfRangeError from that run() and keeps raising it until it is initialized again.

Example::

    it = dataset.make_initializable_iterator()
    x, y = it.get_next()
    sess.run(it.initializer, {data: array})
    while True:
        try:
            sess.run(train_op)
        except sf.errors.OutOfRangeError:
            break

Note [Iterator state]: an iterator's position belongs to a session (as TF keeps it in the
session's resources): two sessions over one graph read independently. Each initialization makes
an IterationContext (the values of the graph tensors the pipeline uses, computed in that session
with the initializer's feeds) and a reader from it.

Thread safety: get_next tensors may be fetched from several threads; each element goes to one
step.
"""

import threading
import weakref

import numpy as np

from shardflow import dtypes, errors, ops
from shardflow.data import structure as nest
from shardflow.data.dataset_ops import Dataset, IterationContext, graph_tensors, start
from shardflow.framework import Tensor, get_default_graph


class _State:
    """One session's position in an iterator."""

    def __init__(self, reader):
        self.reader = reader
        self.lock = threading.Lock()


class _GetNext:
    """The placeholders of one get_next() call; each step that needs them takes one element."""

    def __init__(self, iterator, tensors, order):
        self.iterator = iterator
        self.names = [t.name for t in tensors]
        self.order = order

    def feeds(self, session, feed_dict):
        element = self.iterator._next(session, feed_dict)
        return [(name, np.asarray(value)) for name, value in zip(self.names, element)]


class _GraphIterators:
    """The tf.data iterators of one graph (graph._data_iterators), and which of them a step's
    fetches need, worked out once per set of fetches and feeds.

    Session.run calls feeds_for_step() only on graphs that have iterators.
    """

    def __init__(self, graph):
        self._graph = graph
        self.get_next = {}     # placeholder op name -> _GetNext
        self.initializers = {}  # op name -> (order, Iterator, Dataset)
        self.by_handle = {}    # string_handle() value -> Iterator
        self._needs = {}       # (fetch names, targets, fed names) -> (initializers, get_nexts)

    def feeds_for_step(self, session, plan, feeds, feed_dict):
        """`feeds` plus the next element of each get_next() the step needs, after running the
        iterator initializers it runs."""
        fed = frozenset(name for name, _ in feeds)
        key = (tuple(plan.names), tuple(plan.targets), fed)
        needs = self._needs.get(key)
        if needs is None:
            needs = self._needs_of(*key)
            if len(self._needs) > 1024:
                self._needs.clear()
            self._needs[key] = needs
        initializers, get_nexts = needs
        for iterator, dataset in initializers:
            iterator._initialize(session, dataset, feed_dict)
        if not get_nexts:
            return feeds
        feeds = list(feeds)
        for get_next in get_nexts:  # a component the caller feeds keeps the caller's value
            feeds.extend(f for f in get_next.feeds(session, feed_dict) if f[0] not in fed)
        return feeds

    def _needs_of(self, names, targets, fed):
        """The initializers and get_next() groups among the ops the fetches depend on (not
        looking past fed tensors)."""
        handle = self._graph._handle
        stack = [n.partition(":")[0] for n in names if n not in fed] + list(targets)
        seen, initializers, get_nexts = set(), [], {}
        while stack:
            op = stack.pop()
            if op in seen:
                continue
            seen.add(op)
            if op in self.get_next:
                get_nexts[id(self.get_next[op])] = self.get_next[op]
            if op in self.initializers:
                initializers.append(self.initializers[op])
            info = handle.node_info(op)
            stack.extend(i.partition(":")[0] for i in info["inputs"] if i not in fed)
            stack.extend(info["control_inputs"])
        initializers = [(it, ds) for _, it, ds in sorted(initializers, key=lambda e: e[0])]
        return initializers, sorted(get_nexts.values(), key=lambda g: g.order)


def _registry(graph):
    registry = graph.__dict__.get("_data_iterators")
    if registry is None:
        registry = graph._data_iterators = _GraphIterators(graph)
    return registry


class Iterator:
    """Reads a dataset in a session: get_next() gives the tensors of the next element.

    Made by Dataset.make_one_shot_iterator(), make_initializable_iterator(),
    Iterator.from_structure() (switch datasets with make_initializer(dataset)) or
    Iterator.from_string_handle() (choose an iterator by feeding its string_handle()).
    """

    def __init__(self, structure, specs, name, one_shot_dataset=None):
        self._graph = get_default_graph()
        self._registry = _registry(self._graph)
        self._structure = structure
        self._specs = list(specs)
        with self._graph.name_scope(name) as scope:
            self.name = scope.rstrip("/")
        self._one_shot_dataset = one_shot_dataset
        self._initializer = None
        self._states = weakref.WeakKeyDictionary()  # Session -> _State (Note [Iterator state])
        self._lock = threading.RLock()
        self._handle_tensor = None  # from_string_handle: the tensor naming the iterator

    # ---- making iterators ---------------------------------------------------------------

    @classmethod
    def _one_shot(cls, dataset):
        return cls(dataset._structure, dataset._specs, "OneShotIterator", dataset)

    @classmethod
    def _initializable(cls, dataset):
        iterator = cls(dataset._structure, dataset._specs, "Iterator")
        iterator._initializer = iterator.make_initializer(dataset)
        return iterator

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        """An iterator for any dataset of these types and shapes; make_initializer(dataset)
        gives the op that (re)starts it on `dataset`."""
        types = [dtypes.as_dtype(t) for t in nest.flatten(output_types)]
        if output_shapes is None:
            shapes = [nest.as_shape(None)] * len(types)
        else:
            shapes = nest.shapes_up_to(output_types, output_shapes)
            if shapes is None:
                raise TypeError("output_shapes %r does not have the structure of output_types "
                                "%r" % (output_shapes, output_types))
        specs = list(zip(types, shapes))
        structure = output_types
        if output_classes is not None:
            # SparseTensor leaves are three components each (Note [Sparse elements] in
            # structure.py).
            from shardflow.sparse_tensor import SparseTensor
            classes = nest.flatten(output_classes)
            if len(classes) != len(specs):
                raise TypeError("output_classes %r does not have the structure of output_types "
                                "%r" % (output_classes, output_types))
            leaves, expanded = [], []
            for cls, (dtype, shape) in zip(classes, specs):
                if cls is SparseTensor:
                    leaves.append(nest.sparse_placeholder_structure())
                    expanded.extend(nest.sparse_specs(dtype, shape))
                else:
                    leaves.append(dtype)
                    expanded.append((dtype, shape))
            structure = nest._pack_public(output_types, leaves)
            specs = expanded
        return Iterator(structure, specs, "Iterator")

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None, output_classes=None):
        """An iterator that reads, on each step, the iterator whose string_handle() value
        `string_handle` (a scalar string tensor, usually a placeholder) has."""
        if not isinstance(string_handle, Tensor) or string_handle.dtype != dtypes.string:
            raise TypeError("from_string_handle takes a string tensor (e.g. "
                            "sf.placeholder(sf.string, [])), not %r" % (string_handle,))
        iterator = Iterator.from_structure(output_types, output_shapes,
                                           output_classes=output_classes)
        iterator._handle_tensor = string_handle
        return iterator

    # ---- what elements look like --------------------------------------------------------

    @property
    def output_types(self):
        return nest.public(self._structure, self._specs, "types")

    @property
    def output_shapes(self):
        return nest.public(self._structure, self._specs, "shapes")

    @property
    def output_classes(self):
        return nest.public(self._structure, self._specs, "classes")

    # ---- graph ops ----------------------------------------------------------------------

    @property
    def initializer(self):
        """The op that (re)starts this iterator at the beginning of its dataset."""
        if self._initializer is None:
            if self._one_shot_dataset is not None:
                raise ValueError("a one-shot iterator has no initializer: it starts itself on "
                                 "first use; use make_initializable_iterator() to restart it")
            raise ValueError("Iterator %s does not have an initializer; use "
                             "make_initializer(dataset) for the dataset it should read"
                             % self.name)
        return self._initializer

    def make_initializer(self, dataset, name=None):
        """An op that starts this iterator on `dataset`, whose element types must equal the
        iterator's and whose shapes must be compatible."""
        if not isinstance(dataset, Dataset):
            raise TypeError("make_initializer takes a Dataset, not %r" % (dataset,))
        if self._handle_tensor is not None:
            raise ValueError("an iterator made by from_string_handle reads other iterators; "
                             "initialize those")
        if not nest.same_structure(self._structure, dataset._structure) or \
                [d for d, _ in self._specs] != [d for d, _ in dataset._specs]:
            raise TypeError("Expected output types %r but got dataset with output types %r"
                            % (self.output_types, dataset.output_types))
        if not all(nest.shapes_compatible(a, b)
                   for (_, a), (_, b) in zip(self._specs, dataset._specs)):
            raise TypeError("Expected output shapes compatible with %r but got dataset with "
                            "output shapes %r" % (self.output_shapes, dataset.output_shapes))
        with self._graph.as_default(), self._graph.name_scope(self.name + "/"):
            op = ops.no_op(name=name or "MakeIterator")
        self._registry.initializers[op.name] = (len(self._registry.initializers), self, dataset)
        return op

    def get_next(self, name=None):
        """The tensors of the next element, in the dataset's structure. Each step that needs
        them takes one element; each get_next() call has tensors (and elements) of its own."""
        with self._graph.as_default(), self._graph.name_scope(name or "IteratorGetNext"):
            flat = [ops.placeholder(dtype, None if shape.ndims is None else shape.as_list(),
                                    name="component_%d" % i)
                    for i, (dtype, shape) in enumerate(self._specs)]
        group = _GetNext(self, flat, len(self._registry.get_next))
        for t in flat:
            self._registry.get_next[t.op.name] = group
        return nest.pack_as(self._structure, flat)

    def string_handle(self, name=None):
        """A scalar string tensor naming this iterator, to feed from_string_handle's input."""
        self._registry.by_handle[self.name] = self
        with self._graph.as_default(), self._graph.name_scope(self.name + "/"):
            return ops.constant(self.name.encode(), dtype=dtypes.string,
                                name=name or "string_handle")

    # ---- running (Note [Iterator state]) ------------------------------------------------

    def _context(self, session, dataset, feed_dict):
        """An IterationContext with the values of the graph tensors `dataset` uses, computed in
        `session` with `feed_dict`."""
        tensors = graph_tensors(dataset)
        if not tensors:
            return IterationContext({})
        for t in tensors:
            if t.graph is not session.graph:
                raise ValueError("the dataset of iterator %s uses tensor %s of another graph "
                                 "than the session's" % (self.name, t.name))
        return IterationContext(dict(zip([t.name for t in tensors],
                                          session.run(tuple(tensors), feed_dict))))

    def _initialize(self, session, dataset, feed_dict):
        try:
            ctx = self._context(session, dataset, feed_dict)
        except errors.InvalidArgumentError as e:
            if feed_dict is not None:
                raise
            raise errors.InvalidArgumentError(
                "the one-shot iterator %s cannot compute the tensors its dataset uses (%s); "
                "for a dataset of placeholders use make_initializable_iterator() and feed "
                "them when running its initializer" % (self.name, e)) from None
        state = _State(start(dataset, ctx))
        with self._lock:
            self._states[session] = state
        return state

    def _state(self, session):
        state = self._states.get(session)
        if state is not None:
            return state
        if self._one_shot_dataset is None:
            raise errors.FailedPreconditionError(
                "GetNext() failed because the iterator %s has not been initialized. Ensure that "
                "you have run the initializer operation for this iterator before getting the "
                "next element: sess.run(iterator.initializer)" % self.name)
        with self._lock:  # one-shot: started on first use, once per session
            state = self._states.get(session)
            return state or self._initialize(session, self._one_shot_dataset, None)

    def _next(self, session, feed_dict):
        """The next flat element for `session` (OutOfRangeError at the end)."""
        if self._handle_tensor is not None:
            return self._target(session, feed_dict)._next(session, feed_dict)
        state = self._state(session)
        with state.lock:
            if state.reader is not None:
                try:
                    return next(state.reader)
                except StopIteration:
                    state.reader = None
        restart = "" if self._one_shot_dataset is not None else \
            " (run its initializer to start again)"
        raise errors.OutOfRangeError("End of sequence: iterator %s has no more elements%s"
                                     % (self.name, restart))

    def _target(self, session, feed_dict):
        """The iterator a from_string_handle iterator reads in this step."""
        handle = self._handle_tensor
        fed = [v for k, v in (feed_dict or {}).items() if k is handle or k == handle.name]
        value = fed[0] if fed else session.run(handle, feed_dict)
        value = value.item() if isinstance(value, np.ndarray) else value
        name = value.decode() if isinstance(value, bytes) else str(value)
        target = self._registry.by_handle.get(name)
        if target is None:
            raise errors.InvalidArgumentError(
                "no iterator has string handle %r; feed %s with the value of an iterator's "
                "string_handle()" % (name, self._handle_tensor.name))
        if [d for d, _ in target._specs] != [d for d, _ in self._specs]:
            raise errors.InvalidArgumentError(
                "iterator %s has output types %r, but the from_string_handle iterator expects %r"
                % (name, target.output_types, self.output_types))
        return target


class _SingleElement(Iterator):
    """The only element of a dataset, read afresh (the dataset started anew, the tensors it
    uses computed with the step's feeds) on every step that needs it. get_single_element,
    Dataset.reduce and cardinality are made of it."""

    def __init__(self, dataset, name):
        super().__init__(dataset._structure, dataset._specs, name)
        self._dataset = dataset

    def _next(self, session, feed_dict):
        reader = start(self._dataset, self._context(session, self._dataset, feed_dict))
        element = next(reader, None)
        if element is None:
            raise errors.InvalidArgumentError("Dataset was empty.")
        if next(reader, None) is not None:
            raise errors.InvalidArgumentError("Dataset had more than one element.")
        return element


def single_element(dataset, name):
    """The tensors (in the dataset's structure) of `dataset`'s only element."""
    return _SingleElement(dataset, name).get_next(name)


def get_single_element(dataset):
    """tf.data.experimental.get_single_element: the tensors of `dataset`'s only element,
    computed on every Session.run that needs them; InvalidArgumentError when the dataset is
    empty or has more than one element."""
    if not isinstance(dataset, Dataset):
        raise TypeError("`dataset` must be a `tf.data.Dataset` object, not %r" % (dataset,))
    return single_element(dataset, "DatasetToSingleElement")
