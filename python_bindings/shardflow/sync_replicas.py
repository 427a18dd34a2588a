"""Synchronous parameter-server training, as TensorFlow 1.x's tf.train.SyncReplicasOptimizer.

Every worker adds its gradients to accumulators that live beside the variables on the ps tasks
(ResourceConditionalAccumulator). The chief takes the mean of the first `replicas_to_aggregate`
fresh gradients of each variable, applies it with the wrapped optimizer, advances the global step
and puts `total_num_replicas` tokens in a queue on the global step's task. A worker's step ends
by taking a token, which carries the global step it may compute its next gradients for, so no
worker runs ahead; a gradient computed for an older step (a straggler's, with backup workers:
total_num_replicas > replicas_to_aggregate) is counted and dropped.

Example (worker `task_index` of a cluster with ps and worker jobs)::

    opt = sf.train.SyncReplicasOptimizer(sf.train.GradientDescentOptimizer(0.1),
                                         replicas_to_aggregate=2, total_num_replicas=2)
    train_op = opt.minimize(loss, global_step=global_step)
    hooks = [opt.make_session_run_hook(is_chief=(task_index == 0)),
             sf.train.StopAtStepHook(last_step=1000)]
    with sf.train.MonitoredTrainingSession(master=server.target, is_chief=(task_index == 0),
                                           hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train_op, feed_dict=...)
"""

import threading

import numpy as np

from shardflow import dtypes, errors
from shardflow.framework import GraphKeys, control_dependencies, convert_to_tensor
from shardflow.monitored_session import SessionRunHook
from shardflow.ops import _op, _out, cast, fill, group
from shardflow.variables import Variable


def _step64(step):
    """The global step as int64 (the tokens' and accumulators' dtype): TF1 programs also make it
    an int32 `tf.Variable(0, name="global_step", trainable=False)`."""
    return step if step.dtype == dtypes.int64 else cast(step, dtypes.int64)


class SyncReplicasOptimizer:
    """Wraps an optimizer for synchronous data-parallel training over parameter servers (see the
    module's text). `total_num_replicas` defaults to `replicas_to_aggregate`; it must be at least
    as large (the difference are backup workers)."""

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None,
                 variable_averages=None, variables_to_average=None, use_locking=False,
                 name="sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        replicas_to_aggregate = int(replicas_to_aggregate)
        total_num_replicas = int(total_num_replicas)
        if replicas_to_aggregate < 1:
            raise ValueError("replicas_to_aggregate is %d; it is >= 1" % replicas_to_aggregate)
        if total_num_replicas < replicas_to_aggregate:
            raise ValueError(
                "replicas_to_aggregate (%d) is larger than total_num_replicas (%d): the chief "
                "would wait for gradients that no worker sends. Aggregate at most as many "
                "replicas as there are workers" % (replicas_to_aggregate, total_num_replicas))
        if variable_averages is not None:
            raise ValueError("SyncReplicasOptimizer: variable_averages is not supported")
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._name = name
        self._gradients_applied = False
        self._accumulators = []
        self._chief_queue_runner = None

    def compute_gradients(self, *args, **kwargs):
        return self._opt.compute_gradients(*args, **kwargs)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        return self.apply_gradients(self.compute_gradients(loss, var_list=var_list,
                                                           grad_loss=grad_loss),
                                    global_step=global_step, name=name)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The worker's train op: adds its gradients to the accumulators, then waits for a
        token (the go-ahead for the next step). Builds the chief's update too (run by the hook
        of make_session_run_hook(is_chief=True))."""
        if global_step is None:
            raise ValueError("SyncReplicasOptimizer.apply_gradients needs global_step")
        if self._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradients may be called only once")
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError("SyncReplicasOptimizer: No gradients provided for any variable "
                             "(no variable has a gradient)")
        g = global_step.graph
        worker_device = g._device_for("NoOp")
        with g.name_scope(name or self._name):
            # This worker's step: the global step its gradients are for. Local: each worker has
            # its own, on its own device.
            with g._device_scope(worker_device):
                self._local_step = Variable(np.int64(0), name="sync_rep_local_step",
                                            dtype=dtypes.int64, trainable=False,
                                            collections=[GraphKeys.LOCAL_VARIABLES])
            local_step = self._local_step.value()
            applies, aggregated = [], []
            for grad, var in pairs:
                grad = convert_to_tensor(grad)
                with g._device_scope(var.device):
                    acc = _out("ResourceConditionalAccumulator", [], {
                        "dtype": var.dtype._enum, "shape": var.shape.as_list()
                        if var.shape.ndims is not None else None,
                        "shared_name": var._shared_name + "/grad_accum"}, name="grad_accum")
                    applies.append(_op("ResourceAccumulatorApplyGradient",
                                       [acc, local_step, grad],
                                       {"dtype": var.dtype._enum, "source": worker_device}))
                    aggregated.append(_out(
                        "ResourceAccumulatorTakeGradient",
                        [acc, np.int32(self._replicas_to_aggregate)],
                        {"dtype": var.dtype._enum}))
                self._accumulators.append((acc, var))
            # The chief's update: apply the means, count the step.
            update = self._opt.apply_gradients(list(zip(aggregated, [v for _, v in pairs])),
                                               global_step=global_step)
            with g._device_scope(global_step.device):
                queue = _out("FIFOQueueV2", [], {
                    "dtype": dtypes.int64._enum, "shape": [],
                    "shared_name": "sync_token_q"}, name="sync_token_q")
                self._token_queue = queue
                with control_dependencies(applies):
                    token = _out("QueueDequeueV2", [queue], {"T": dtypes.int64._enum})
                with control_dependencies([update]):
                    # A read of its own, after the update: the new global step.
                    step_now = _step64(_out("ReadVariableOp", [global_step.handle],
                                            {"dtype": global_step.dtype._enum}))
                    tokens = fill(np.array([self._total_num_replicas], np.int32), step_now)
                    self._sync_op = _op("QueueEnqueueManyV2", [queue, tokens],
                                        {"T": dtypes.int64._enum}, name="sync_op")
                self._close_queue = _op("QueueCloseV2", [queue])
            with g._device_scope(worker_device):
                train_op = self._local_step.assign(token, name="train_op", read_value=False)
            self._chief_init_op = group(*[
                _op("ResourceAccumulatorSetGlobalStep", [acc, _step64(global_step.value())])
                for acc, _ in self._accumulators], name="chief_init_op")
            self._close_accumulators = group(*[
                _op("ResourceAccumulatorClose", [acc]) for acc, _ in self._accumulators],
                name="close_accumulators")
            self._num_dropped = [_out("ResourceAccumulatorNumDropped", [acc])
                                 for acc, _ in self._accumulators]
            self._local_step_init_op = self._local_step.assign(
                _step64(global_step.value()), name="local_step_init", read_value=False)
        self._global_step = global_step
        self._gradients_applied = True
        self._train_op = train_op
        # TF1's Supervisor-era setup reads this: the workers' local init waits until the chief
        # has initialized every global variable.
        from shardflow.state_composites import report_uninitialized_variables
        from shardflow.variables import global_variables
        with g.as_default():
            self.ready_for_local_init_op = report_uninitialized_variables(global_variables())
        return train_op

    def get_chief_queue_runner(self):
        """TF1's Supervisor-era chief loop: a QueueRunner that runs the update (take the mean
        gradients, apply them, hand out tokens) in a thread, for
        `sv.start_queue_runners(sess, [opt.get_chief_queue_runner()])` after the chief ran
        `opt.chief_init_op` (as local init) and `opt.get_init_tokens_op()`. Stopping the
        coordinator closes the accumulators and the token queue, which ends it and the
        workers waiting for a token. make_session_run_hook does all of this for a
        MonitoredTrainingSession."""
        if not self._gradients_applied:
            raise ValueError("get_chief_queue_runner: call apply_gradients (or minimize) first")
        if self._chief_queue_runner is None:
            from shardflow.coordinator import QueueRunner
            close = group(self._close_accumulators, self._close_queue, name="close_sync_queue")
            self._chief_queue_runner = QueueRunner(_TokenQueue(close), [self._sync_op],
                                                   close_op=close, cancel_op=close)
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens=-1):
        """An op that puts `num_tokens` tokens (default: replicas_to_aggregate) in the queue, so
        that the first steps can start. Run by the chief's hook."""
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op: call apply_gradients (or minimize) first")
        needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise ValueError("too few tokens (%d) to finish the first step; at least %d"
                             % (num_tokens, needed))
        if num_tokens <= 0:
            return group(name="no_init_tokens")
        g = self._global_step.graph
        with g._device_scope(self._global_step.device):
            tokens = fill(np.array([num_tokens], np.int32), _step64(self._global_step.value()))
            return _op("QueueEnqueueManyV2", [self._token_queue, tokens],
                       {"T": dtypes.int64._enum}, name="init_tokens")

    @property
    def chief_init_op(self):
        return self._chief_init_op

    @property
    def local_step_init_op(self):
        return self._local_step_init_op

    def dropped_gradients(self, session):
        """How many stale gradients the accumulators have dropped (summed over variables)."""
        return int(sum(session.run(self._num_dropped)))

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        """The hook that starts synchronous training in a MonitoredTrainingSession: on the chief
        it resets the accumulators to the global step, puts the first tokens in the queue and
        runs the update loop in a thread; on every worker it sets the local step."""
        return _SyncReplicasHook(self, is_chief, num_tokens)


class _TokenQueue:
    """What QueueRunner asks of a queue, for the token queue (an engine queue, not a Python one):
    a name, and the op that closes it (with the accumulators)."""

    name = "sync_token_q"

    def __init__(self, close_op):
        self._close_op = close_op

    def close(self, cancel_pending_enqueues=False, name=None):
        return self._close_op


class _SyncReplicasHook(SessionRunHook):
    def __init__(self, opt, is_chief, num_tokens):
        self._opt = opt
        self._is_chief = is_chief
        self._num_tokens = num_tokens
        self._init_tokens = None
        self._thread = None
        self._stop = threading.Event()
        self._error = None

    def begin(self):
        if not self._opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer: call apply_gradients (or minimize) before "
                             "the session starts")
        if self._is_chief:
            self._init_tokens = self._opt.get_init_tokens_op(self._num_tokens)

    def after_create_session(self, session, coord=None):
        # A synchronous step waits for every worker: one that dies must fail the others' steps
        # (naming it) instead of leaving them waiting for its gradients.
        # With backup workers (replicas_to_aggregate < total_num_replicas) a missing worker is
        # what they are for: nothing is watched (_watch).
        from shardflow.cluster import _server_for_target
        self._server = _server_for_target(getattr(session, "target", ""))
        self._watching = False
        self._watch(True)
        if self._is_chief:
            session.run(self._opt._chief_init_op)
            session.run(self._init_tokens)
            self._thread = threading.Thread(target=self._update_loop, args=(session,),
                                            name="sync_replicas_chief", daemon=True)
            self._thread.start()
        session.run(self._opt._local_step_init_op)

    def _update_loop(self, session):
        # Takes the mean gradients, applies them and hands out tokens, until stopped.
        while not self._stop.is_set():
            try:
                session.run(self._opt._sync_op)
            except (errors.CancelledError, errors.OutOfRangeError):
                return  # closed: the session is ending
            except Exception as e:  # noqa: BLE001 (reported to the chief's next run)
                if not self._stop.is_set():
                    self._error = e
                return

    def _watch(self, on):
        # Only training steps wait for the other workers: runs that do not train (the chief's
        # evaluation after training, when the workers have left) are not failed by a lost one.
        on = on and self._server is not None and (self._opt._replicas_to_aggregate >=
                                                  self._opt._total_num_replicas)
        if on and not self._watching:
            self._server._watch_other_tasks()
        elif not on and self._watching:
            self._server._unwatch()
        self._watching = on

    def before_run(self, run_context):
        # The update loop's failure (a worker lost) fails the next training step, which could
        # not finish; other runs go on.
        trains = self._trains(run_context.original_args.fetches)
        self._watch(trains)
        if self._error is not None and trains:
            error, self._error = self._error, None
            raise RuntimeError("the chief's synchronous update failed: %s" % error) from error
        return None

    def _trains(self, fetches):
        from shardflow.nest import flatten
        train_op = getattr(self._opt, "_train_op", None)
        names = {getattr(f, "name", f) for f in flatten(fetches)}
        return train_op is None or getattr(train_op, "name", None) in names

    def end(self, session):
        # Training is over: the others may leave now without failing anyone.
        if getattr(self, "_server", None) is not None:
            self._watch(False)
        if not self._is_chief:
            return
        self._stop.set()
        # Wake the update loop and any worker waiting for a token: close the accumulators (a
        # take in progress ends) and the token queue (waiting workers get OUT_OF_RANGE, which
        # ends their MonitoredTrainingSession).
        try:
            session.run(self._opt._close_accumulators)
            session.run(self._opt._close_queue)
        except errors.OpError:
            pass
        if self._thread is not None:
            self._thread.join(timeout=30)
