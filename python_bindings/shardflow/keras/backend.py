"""tf.keras.backend for graph mode: one shared Session on the default graph, the learning
phase, and reading/writing variables through that session.

Example::

    from shardflow import keras
    sess = keras.backend.get_session()        # variables made so far are initialised
    keras.backend.clear_session()             # a fresh default graph (and session)

Not thread safe: the shared session and the name counters are module state, as in Keras.
"""

import collections

import numpy as np

from shardflow import dtypes, ops
from shardflow.framework import get_default_graph, reset_default_graph
from shardflow.session import Session
from shardflow.variables import global_variables, variables_initializer

_FLOATX = "float32"
_EPSILON = 1e-7

_session = None
_initialized = set()            # names of the variables the shared session has initialised
_learning_phase = {}            # graph -> the bool placeholder_with_default(False)
_fixed_learning_phase = {}      # graph -> 0 or 1 (set_learning_phase)
_name_counts = collections.defaultdict(int)
_assign_ops = {}                # variable name -> (placeholder, assign op) for set_value


def floatx():
    """'float32', the dtype of weights and inputs."""
    return _FLOATX


def epsilon():
    """The fuzz factor that keeps logs and divisions finite (1e-7, as Keras)."""
    return _EPSILON


def set_epsilon(value):
    global _EPSILON
    _EPSILON = float(value)


def unique_name(prefix):
    """'dense', then 'dense_1', 'dense_2', ...: Keras's layer names, reset by clear_session."""
    n = _name_counts[prefix]
    _name_counts[prefix] += 1
    return prefix if n == 0 else "%s_%d" % (prefix, n)


def get_session():
    """The shared Session on the default graph (made on first use, or again when the default
    graph changed); before returning it, initialises the graph's variables it has not
    initialised yet (so weights of layers built later, and optimizer slots, get values)."""
    global _session
    g = get_default_graph()
    if _session is None or _session.graph is not g:
        _session = Session(graph=g)
        _initialized.clear()
    fresh = [v for v in global_variables(g) if v.name not in _initialized]
    if fresh:
        _session.run(variables_initializer(fresh))
        _initialized.update(v.name for v in fresh)
    return _session


def set_session(session):
    """Makes `session` the shared one; its graph's variables count as initialised (as Keras
    assumes of a session handed to it)."""
    global _session
    _session = session
    _initialized.clear()
    _initialized.update(v.name for v in global_variables(session.graph))


def clear_session():
    """Closes the shared session and starts a new default graph; layer names start again."""
    global _session
    if _session is not None:
        _session.close()
    _session = None
    _initialized.clear()
    _learning_phase.clear()
    _fixed_learning_phase.clear()
    _name_counts.clear()
    _assign_ops.clear()
    reset_default_graph()


def learning_phase():
    """The learning phase: a Python 0/1 after set_learning_phase, else the graph's bool
    placeholder_with_default(False) ("keras_learning_phase"), which Model.fit feeds True.
    Dropout and BatchNormalization read it when called without `training`."""
    g = get_default_graph()
    if g in _fixed_learning_phase:
        return _fixed_learning_phase[g]
    phase = _learning_phase.get(g)
    if phase is None:
        with g.name_scope(None):
            phase = ops.placeholder_with_default(False, [], name="keras_learning_phase")
        _learning_phase[g] = phase
    return phase


def set_learning_phase(value):
    """Fixes the learning phase of layers built from now on to 0 (test) or 1 (train)."""
    if value not in (0, 1):
        raise ValueError("set_learning_phase takes 0 (test) or 1 (train), not %r" % (value,))
    _fixed_learning_phase[get_default_graph()] = int(value)


def _phase_feed(training):
    """The feed that sets the learning phase of the default graph's layers to `training`."""
    phase = _learning_phase.get(get_default_graph())
    return {} if phase is None else {phase: bool(training)}


def batch_get_value(variables):
    """The values of `variables` as NumPy arrays."""
    if not variables:
        return []
    return get_session().run([v.value() for v in variables])


def get_value(variable):
    return batch_get_value([variable])[0]


def batch_set_value(pairs):
    """Sets each variable of (variable, value) pairs; the assign ops are built once per
    variable and reused."""
    if not pairs:
        return
    sess = get_session()
    feed, targets = {}, []
    for v, value in pairs:
        entry = _assign_ops.get(v.name)
        if entry is None or entry[1].graph is not v.graph:
            with v.graph.as_default(), v.graph.name_scope(None):
                p = ops.placeholder(v.dtype, v.shape, name=v.op.name + "_keras_value")
                entry = (p, v.assign(p, read_value=False))
            _assign_ops[v.name] = entry
        value = np.asarray(value, dtype=v.dtype.as_numpy_dtype)
        if list(value.shape) != v.shape.as_list():
            raise ValueError("weight '%s' has shape %s; the value given has shape %s"
                             % (v.name, v.shape.as_list(), list(value.shape)))
        feed[entry[0]] = value
        targets.append(entry[1])
    sess.run(targets, feed_dict=feed)


def set_value(variable, value):
    batch_set_value([(variable, value)])


def placeholder(shape=None, ndim=None, dtype=None, name=None):
    """A placeholder of `shape` (or `ndim` unknown dimensions), floatx by default."""
    if shape is None and ndim is not None:
        shape = [None] * ndim
    return ops.placeholder(dtypes.as_dtype(dtype or _FLOATX), shape, name=name)


def int_shape(x):
    """The static shape as a tuple (None for unknown dimensions)."""
    return tuple(x.shape.as_list())


def count_params(variable):
    return int(np.prod(variable.shape.as_list(), dtype=np.int64))
