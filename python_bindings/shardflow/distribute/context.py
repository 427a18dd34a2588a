"""Which tf.distribute.Strategy the code being built runs under, and in which context: TF 1.15's
get_strategy, has_strategy, get_replica_context, get_cross_replica_context and
in_cross_replica_context.

Each thread has a stack of modes. Outside any scope the stack is empty: the default strategy
(one replica, no devices) in its default replica context. ``with strategy.scope():`` pushes the
strategy's cross-replica mode (get_replica_context() is None there, as in TF); the replicas of
``strategy.experimental_run_v2(fn)`` run fn in a replica mode (get_replica_context() is that
replica's ReplicaContext); a merge_call's merge_fn runs in the cross-replica mode again.

Thread safety: the modes are per thread; a replica's thread (shardflow/distribute/
replica_threads.py) starts with its own stack. A ReplicaContext belongs to the thread that
builds its replica.
"""

import threading

from shardflow import dtypes, nest, ops
from shardflow.distribute.values import as_reduce_op

_local = threading.local()


class Mode:
    """One entry of a thread's stack: `strategy`, and `replica_context` (None: cross-replica)."""

    __slots__ = ("strategy", "replica_context")

    def __init__(self, strategy, replica_context):
        self.strategy = strategy
        self.replica_context = replica_context


def modes():
    """This thread's stack of Modes (innermost last)."""
    stack = getattr(_local, "modes", None)
    if stack is None:
        stack = _local.modes = []
    return stack


def current_mode():
    """The innermost Mode of this thread, None outside any scope."""
    stack = modes()
    return stack[-1] if stack else None


class push_mode:
    """``with push_mode(Mode(...)):`` makes that mode current inside."""

    def __init__(self, mode):
        self._mode = mode

    def __enter__(self):
        modes().append(self._mode)
        return self._mode

    def __exit__(self, *exc):
        stack = modes()
        if not stack or stack[-1] is not self._mode:
            raise RuntimeError("tf.distribute scopes were exited out of order")
        stack.pop()


def default_strategy():
    """The strategy in force outside every scope (one replica; shardflow/distribute/
    strategy.py)."""
    from shardflow.distribute import strategy
    return strategy.default_strategy()


def get_strategy():
    """The current tf.distribute.Strategy: the one whose scope (or replica function) is being
    built, else the default strategy."""
    mode = current_mode()
    return mode.strategy if mode is not None else default_strategy()


def has_strategy():
    """Whether code is being built under a strategy other than the default one."""
    return get_strategy() is not default_strategy()


def get_replica_context():
    """The current ReplicaContext: the default one outside any scope, a replica's inside
    experimental_run_v2's fn, and None in a cross-replica context (inside
    ``strategy.scope()`` or a merge_fn)."""
    mode = current_mode()
    if mode is None:
        return default_strategy().extended.default_replica_context
    return mode.replica_context


def get_cross_replica_context():
    """The current strategy in a cross-replica context, else None."""
    mode = current_mode()
    if mode is not None and mode.replica_context is None:
        return mode.strategy
    return None


def in_cross_replica_context():
    """Whether code is being built in a cross-replica context (``strategy.scope()``)."""
    return get_cross_replica_context() is not None


def experimental_set_strategy(strategy):
    """Makes `strategy` current in this thread as ``strategy.scope()`` would, until the next
    call (None: back to the default strategy). Must not be called inside a scope."""
    old = getattr(_local, "set_scope", None)
    if len(modes()) > (1 if old is not None else 0):
        raise RuntimeError("tf.distribute.experimental_set_strategy must not be called inside "
                           "a tf.distribute.Strategy scope")
    if old is not None:
        _local.set_scope = None
        old.__exit__(None, None, None)
    if strategy is not None:
        scope = strategy.scope()
        scope.__enter__()
        _local.set_scope = scope


class ReplicaContext:
    """What the code of one replica sees (TF 1.15's tf.distribute.ReplicaContext):
    `replica_id_in_sync_group` (0 to num_replicas_in_sync - 1), `num_replicas_in_sync`,
    `strategy`, `devices`, all_reduce() and merge_call().

    Example (inside ``strategy.experimental_run_v2(fn)``)::

        def fn(x):
            ctx = tf.distribute.get_replica_context()
            total = ctx.all_reduce(tf.distribute.ReduceOp.SUM, tf.reduce_sum(x))
            return x / total                 # every replica divides by the sum over all
    """

    def __init__(self, strategy, replica_id_in_sync_group, merge_call=None, default=False):
        # merge_call: the replica thread's (shardflow/distribute/replica_threads.py), which
        # waits for the other replicas; None: merge_fn runs at once (one replica).
        self._strategy = strategy
        self._replica_id = replica_id_in_sync_group
        self._replica_id_tensor = None
        self._default = default
        self._thread_merge_call = merge_call
        self._entered = []

    def __enter__(self):
        pushed = push_mode(Mode(self._strategy, self))
        pushed.__enter__()
        self._entered.append(pushed)
        return self

    def __exit__(self, *exc):
        self._entered.pop().__exit__(*exc)

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        """This replica's index: an int32 scalar tensor made on first use (in the replica's
        scopes), as TF 1.15's; the Python int 0 in the default replica context, as TF's."""
        if self._default:
            return self._replica_id
        if self._replica_id_tensor is None:
            self._replica_id_tensor = ops.constant(self._replica_id, dtype=dtypes.int32,
                                                   name="replica_id_in_sync_group")
        return self._replica_id_tensor

    @property
    def devices(self):
        """The device this replica builds on (a tuple of one name; empty for the default
        strategy)."""
        devices = self._strategy.extended.worker_devices
        return devices[self._replica_id:self._replica_id + 1]

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Runs ``merge_fn(strategy, *args, **kwargs)`` once, in the cross-replica context,
        where each argument that differs between the replicas is a PerReplica of all their
        values; every replica gets merge_fn's result (its own component of a distributed one).
        Every replica must make the same merge_calls in the same order."""
        mode = current_mode()
        if (mode.replica_context if mode is not None else
                default_strategy().extended.default_replica_context) is not self:
            raise RuntimeError("merge_call must be called in this replica's context (from its "
                               "replica function, not a merge_fn or another replica's)")
        kwargs = dict(kwargs or {})
        if self._thread_merge_call is not None:
            return self._thread_merge_call(merge_fn, tuple(args), kwargs)
        with push_mode(Mode(self._strategy, None)):
            return merge_fn(self._strategy, *args, **kwargs)

    def all_reduce(self, reduce_op, value):
        """`value` (a tensor or a structure of them) summed or averaged over the replicas;
        every replica gets the result (the value itself with one replica)."""
        reduce_op = as_reduce_op(reduce_op, "ReplicaContext.all_reduce")
        flat = nest.flatten(value)

        def batch_all_reduce(strategy, *per_replica):
            return [strategy.extended._all_reduce(reduce_op, v) for v in per_replica]

        return nest.pack_sequence_as(value, self.merge_call(batch_all_reduce, args=flat))

    def __repr__(self):
        return "<tf.distribute.ReplicaContext %d of %d>" % (self._replica_id,
                                                            self.num_replicas_in_sync)
