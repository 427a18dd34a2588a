"""TF1's tf.py_func (and tf.numpy_function): a graph node that calls a Python function.

Example::

    def clip_sort(a):
        return np.sort(np.clip(a, 0, 1))

    y = sf.py_func(clip_sort, [x], sf.float32)
    with sf.Session() as sess:
        sess.run(y, {x: np.random.randn(5).astype(np.float32)})

The function gets the inputs as NumPy arrays and returns one array (or a list/tuple of arrays,
one per `Tout` entry) whose dtypes are exactly `Tout`'s; Python scalars and lists are converted
with those dtypes. It runs on the CPU of the process that built the graph (it needs this Python
interpreter: a `shardflow server` process cannot run it). The node has no gradient, as in TF1; its
outputs' shapes are unknown until `set_shape`. An exception in the function fails `sess.run` with
its type and message.
"""

import itertools
import secrets
import threading

import numpy as np

from shardflow import _shardflow as _C
from shardflow import dtypes
from shardflow.framework import _InputList, convert_to_tensor, get_default_graph

_funcs = {}
_lock = threading.Lock()
_counter = itertools.count()
# Tokens carry a random per-process part, so that a hand-made GraphDef fed to import_graph_def
# cannot guess one and call a function the program registered for another graph (with arguments
# of its choosing: a write_file, say). A graph this process built and exported still finds its
# functions when imported here.
_NONCE = secrets.token_hex(8)


# The running call's "was my step aborted?" function, per thread (each call has its own).
_local = threading.local()


def step_aborted():
    """Inside a py_func: whether the step running it was aborted (a RunOptions or
    operation_timeout_in_ms deadline, a cancelled or failed step). A function that waits for
    something (a queue's dequeue) checks it and raises, so that it takes nothing for a step that
    is gone. False outside a py_func."""
    aborted = getattr(_local, "aborted", None)
    return bool(aborted is not None and aborted())


def _call(token, args, aborted=None):
    """Called by the PyFunc kernel (python_bindings/src/py_func.cc) with the GIL held;
    `aborted()` says whether the step was aborted meanwhile."""
    entry = _funcs.get(token)
    if entry is None:
        from shardflow import errors
        raise errors.NotFoundError(
            "no Python function is registered under token %r in this process: a py_func graph "
            "runs only in the process that built it (a GraphDef sent elsewhere, or imported, "
            "has no function behind its PyFunc nodes)" % (token,))
    func, tout = entry
    # 0-d inputs arrive as NumPy scalars (a scalar string as bytes: `filename.decode()`), as
    # TF1's PyFunc hands them over.
    args = [a[()] if isinstance(a, np.ndarray) and a.ndim == 0 else a for a in args]
    previous, _local.aborted = getattr(_local, "aborted", None), aborted
    try:
        result = func(*args)
    finally:
        _local.aborted = previous
    if not isinstance(result, (list, tuple)):
        result = [] if result is None and not tout else [result]
    out = []
    for i, value in enumerate(result):
        if i < len(tout) and not isinstance(value, np.ndarray):
            dt = tout[i].as_numpy_dtype
            value = np.asarray(value, dtype=dt)
        out.append(value)
    return out


# As TF1's: a PyFunc has no gradient; the path through it is cut (its inputs get none), unless
# gradient_override_map names one for the node.
_C.register_no_gradient("PyFunc")


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803 (TF1's argument name)
    """A node computing `func(*inputs)` in Python; returns a Tensor, or a list of Tensors when
    `Tout` is a list or tuple (an empty list: the Operation)."""
    if not callable(func):
        raise TypeError("py_func: func must be callable, got %r" % (func,))
    single = not isinstance(Tout, (list, tuple))
    tout = [dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    inputs = [convert_to_tensor(x) for x in (inp or [])]
    with _lock:
        token = "pyfunc_%s_%d" % (_NONCE, next(_counter))
        _funcs[token] = (func, tout)
    graph = inputs[0].graph if inputs else get_default_graph()
    op = graph._add_op("PyFunc", [_InputList(inputs)],
                       {"token": token, "Tout": [t._enum for t in tout]}, name=name or "PyFunc")
    if single:
        return op.outputs[0]
    return list(op.outputs) if tout else op


def numpy_function(func, inp, Tout, name=None):  # noqa: N803
    """tf.numpy_function (TF 1.14+): py_func by another name."""
    return py_func(func, inp, Tout, name=name)


def timestamp(name=None):
    """The time when the op runs, in seconds since the Unix epoch, as a float64 scalar (TF
    1.15's tf.timestamp): a stateful PyFunc node reading time.time() each time it runs, so
    two runs, or two timestamp ops run in order (control_dependencies), give increasing
    values. Example: ``elapsed = sf.timestamp() - start`` inside a step."""
    import time

    out = py_func(lambda: np.array(time.time(), dtype=np.float64), [], dtypes.float64,
                  stateful=True, name=name or "Timestamp")
    out.set_shape([])
    return out


__all__ = ["numpy_function", "py_func", "timestamp"]
