"""tf.keras.backend for graph mode: one shared Session on the default graph, the learning
phase, and reading/writing variables through that session.

Example::

    from shardflow import keras
    sess = keras.backend.get_session()        # variables made so far are initialised
    keras.backend.clear_session()             # a fresh default graph (and session)

Keras's backend functions are thin wrappers over shardflow's ops: ``function(inputs,
outputs, updates)`` (a callable running them in the shared session), ``variable``, ``eval``,
``constant``, ``zeros``/``ones`` (variables), ``mean``/``sum``/``max``/``min``, ``concatenate``,
``reshape``, ``dot``, ``transpose``, ``expand_dims``, ``stack``, ``cast``, ``shape``, ``ndim``,
``clip``, ``square``/``sqrt``/``exp``/``log``/``abs``, ``softmax``/``relu``/``sigmoid``/``tanh``,
``binary_crossentropy`` and ``categorical_crossentropy``::

    f = keras.backend.function([model.input], [model.layers[0].output])
    hidden = f([x])[0]

Not thread safe: the shared session and the name counters are module state, as in Keras.
"""

import builtins
import collections
import weakref

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
_name_counts = weakref.WeakKeyDictionary()   # graph -> {prefix: names given}, as TF 1.15's
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


def image_data_format():
    """'channels_last': images are [batch, height, width, channels], the only layout
    shardflow's Keras layers take."""
    return "channels_last"


def set_image_data_format(data_format):
    """Only 'channels_last' is supported (the layers refuse 'channels_first')."""
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("Unknown data_format: " + str(data_format))
    if data_format != "channels_last":
        raise ValueError("set_image_data_format('channels_first') is not supported: shardflow's "
                         "Keras layers take channels_last images")


def _graph_name_counts():
    """The default graph's name counters (TF 1.15's PER_GRAPH_OBJECT_NAME_UIDS)."""
    g = get_default_graph()
    counts = _name_counts.get(g)
    if counts is None:
        counts = _name_counts[g] = collections.defaultdict(int)
    return counts


def unique_name(prefix):
    """'dense', then 'dense_1', 'dense_2', ...: Keras's layer names, counted per graph as TF
    1.15's (a new graph starts again at 'dense'), and reset by clear_session."""
    counts = _graph_name_counts()
    n = counts[prefix]
    counts[prefix] += 1
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


# ---- Keras's backend functions as thin wrappers over shardflow's ops ---------------------

_SESSION_ARGUMENTS = ("options", "run_metadata", "feed_dict", "fetches")


def _session_arguments(kwargs, where):
    """TF1 Keras's session arguments of K.function and Model.compile, checked: options,
    run_metadata, feed_dict (joins each call's feed), fetches (run along, values dropped).
    Others are a TypeError naming them."""
    unknown = sorted(set(kwargs) - set(_SESSION_ARGUMENTS))
    if unknown:
        raise TypeError("Invalid keyword argument(s) in `%s`: %s (the session's are %s)"
                        % (where, ", ".join(unknown), ", ".join(_SESSION_ARGUMENTS)))
    fetches = kwargs.get("fetches")
    if fetches is not None and not isinstance(fetches, (list, tuple)):
        fetches = [fetches]
    return {k: v for k, v in dict(kwargs, fetches=fetches).items() if v is not None}


def _run_with(sess, fetches, feed, arguments):
    """sess.run(fetches, feed) with `arguments` (_session_arguments')."""
    if not arguments:
        return sess.run(fetches, feed)
    if arguments.get("feed_dict"):
        feed = {**arguments["feed_dict"], **(feed or {})}
    extra = arguments.get("fetches")
    out = sess.run([fetches, extra] if extra else fetches, feed,
                   options=arguments.get("options"), run_metadata=arguments.get("run_metadata"))
    return out[0] if extra else out


class Function:
    """What `function` returns: calling it with a list of values (one per input) runs the
    outputs (and updates) in the shared session and returns their values as a list."""

    def __init__(self, inputs, outputs, updates=None, name=None, session_arguments=None):
        self.inputs = list(inputs or [])
        self._single = not isinstance(outputs, (list, tuple))
        self.outputs = [outputs] if self._single else list(outputs)
        self.updates = list(updates or [])
        self._session_arguments = session_arguments or {}

    def __call__(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) != len(self.inputs):
            raise ValueError("this function takes %d inputs; %d values were given"
                             % (len(self.inputs), len(inputs)))
        feed = {}
        for t, value in zip(self.inputs, inputs):
            if not isinstance(t, int):   # learning_phase() may be a fixed Python 0/1
                feed[t] = value
        n = len(self.outputs)
        values = _run_with(get_session(), self.outputs + self.updates, feed,
                           self._session_arguments)
        return values[:n]


def function(inputs, outputs, updates=None, name=None, **kwargs):
    """A callable f([values of inputs]) -> [values of outputs], run in get_session();
    `updates` are ops (or (variable, new value) pairs) run with each call. Pass
    learning_phase() among the inputs to feed it. `kwargs` are TF1 Keras's session arguments
    (options, run_metadata, feed_dict, fetches), given to every call's session.run."""
    arguments = _session_arguments(kwargs, "function")
    ups = []
    for u in updates or []:
        if isinstance(u, (list, tuple)):
            u = u[0].assign(u[1], read_value=False)
        ups.append(u)
    return Function(inputs, outputs, ups, name, arguments)


def variable(value, dtype=None, name=None, constraint=None):
    """A Variable holding `value` (floatx by default), initialised by get_session()."""
    from shardflow.variables import Variable
    value = np.asarray(value, dtype=dtypes.as_dtype(dtype or _FLOATX).as_numpy_dtype)
    return Variable(value, name=name or "Variable")


def eval(x):  # noqa: A001 (Keras's name)
    """The value of a tensor or variable, computed in get_session()."""
    return get_session().run(x.value() if hasattr(x, "assign") else x)


def constant(value, dtype=None, shape=None, name=None):
    return ops.constant(value, dtype=dtypes.as_dtype(dtype or _FLOATX), shape=shape, name=name)


def zeros(shape, dtype=None, name=None):
    """A Variable of zeros (as Keras's backend: a variable, not a constant)."""
    return variable(np.zeros(shape), dtype, name)


def ones(shape, dtype=None, name=None):
    return variable(np.ones(shape), dtype, name)


def cast(x, dtype):
    return ops.cast(x, dtypes.as_dtype(dtype))


def shape(x):
    """The dynamic shape, an int32 tensor."""
    return ops.shape(x)


def ndim(x):
    """The rank as a Python int (None when unknown)."""
    return x.shape.ndims


def mean(x, axis=None, keepdims=False):
    return ops.reduce_mean(x, axis=axis, keepdims=keepdims)


def sum(x, axis=None, keepdims=False):  # noqa: A001 (Keras's name)
    return ops.reduce_sum(x, axis=axis, keepdims=keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001 (Keras's name)
    return ops.reduce_max(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001 (Keras's name)
    return ops.reduce_min(x, axis=axis, keepdims=keepdims)


def concatenate(tensors, axis=-1):
    return ops.concat(list(tensors), axis)


def reshape(x, shape):
    return ops.reshape(x, shape)


def square(x):
    return ops.square(x)


def sqrt(x):
    """sqrt(max(x, 0)), as Keras's backend clips negatives to 0."""
    return ops.sqrt(ops.maximum(x, ops.zeros_like(x)))


def exp(x):
    return ops.exp(x)


def log(x):
    return ops.log(x)


def abs(x):  # noqa: A001 (Keras's name)
    return ops.abs(x)


def dot(x, y):
    """The matrix product; for ranks above 2, x's last axis against y's second-to-last
    (Keras's dot), through tensordot."""
    if x.shape.ndims == 2 and y.shape.ndims == 2:
        return ops.matmul(x, y)
    from shardflow.contractions import tensordot
    return tensordot(x, y, [[x.shape.ndims - 1], [builtins.max(y.shape.ndims - 2, 0)]])


def batch_dot(x, y, axes=None):
    """Keras's batch_dot: for each example of the batch, x and y contracted along `axes` (an
    int, or one axis of each after the batch; default x's last and y's second-to-last, or its
    last when y is 2-D): [b, m, n] . [b, p, n] with axes (2, 2) -> [b, m, p] (attention's
    scores); [b, n] . [b, n] -> [b, 1]. Inputs of rank 2 or 3, as the Dot layer's."""
    from shardflow.keras.layers import Dot
    rx, ry = x.shape.ndims, y.shape.ndims
    if rx is None or ry is None:
        raise ValueError("batch_dot needs inputs of known rank")
    if axes is None:
        axes = (rx - 1, ry - 2 if ry > 2 else ry - 1)
    return Dot(axes)._merge([x, y])


def transpose(x):
    return ops.transpose(x)


def expand_dims(x, axis=-1):
    return ops.expand_dims(x, axis)


def stack(x, axis=0):
    from shardflow.array_ops import stack as _stack
    return _stack(list(x), axis=axis)


def clip(x, min_value, max_value):
    """x clipped to [min_value, max_value] (max_value below min_value is raised to it)."""
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    return ops.clip_by_value(x, min_value, max_value)


def softmax(x, axis=-1):
    from shardflow import nn
    if axis not in (-1, x.shape.ndims - 1):
        raise ValueError("softmax: only the last axis is supported")
    return nn.softmax(x)


def relu(x, alpha=0.0, max_value=None, threshold=0):
    """max(x, 0) (a slope `alpha` below 0, capped at `max_value`)."""
    from shardflow import nn
    if threshold:
        raise ValueError("relu(threshold=...) is not supported")
    y = nn.relu(x)
    if alpha:
        y = ops.subtract(y, ops.multiply(alpha, nn.relu(ops.negative(x))))
    if max_value is not None:
        y = ops.minimum(y, max_value)
    return y


def sigmoid(x):
    return ops.sigmoid(x)


def tanh(x):
    return ops.tanh(x)


def binary_crossentropy(target, output, from_logits=False):
    """Element-wise sigmoid cross-entropy (not averaged, as Keras's backend)."""
    from shardflow import nn
    if not from_logits:
        p = ops.clip_by_value(output, _EPSILON, 1.0 - _EPSILON)
        output = ops.log(ops.divide(p, ops.subtract(1.0, p)))
    return nn.sigmoid_cross_entropy_with_logits(labels=ops.cast(target, output.dtype),
                                                logits=output)


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """-sum(target * log(output)) over the last axis (output normalised to sum to 1)."""
    from shardflow.keras import losses
    if axis not in (-1, output.shape.ndims - 1):
        raise ValueError("categorical_crossentropy: only the last axis is supported")
    return losses.categorical_crossentropy(target, output, from_logits=from_logits)


# The rest of Keras's backend functions (math, shapes, random tensors, convolution, the
# learning-phase switches, variable updates, CTC) live in backend_ops.py.
from shardflow.keras.backend_ops import *  # noqa: E402,F401,F403,A004


def __getattr__(name):
    """K.tf: the TensorFlow-compatible module itself, as Keras's TensorFlow backend exposes."""
    if name == "tf":
        import shardflow
        return shardflow
    raise AttributeError("module 'shardflow.keras.backend' has no attribute %r" % name)
