"""Parameter averaging between worker processes (DL4J's style, TF1's tf.contrib.opt
ModelAverageOptimizer): each worker trains its own copy of the variables with its own
optimizer, and every `every_n_steps` local steps the copies are replaced by their mean over the
workers (ring all-reduce between the workers' tasks; no parameter server). At the start every
worker takes the chief's (rank 0's) values.

    hook = sf.distribute.ParameterAveragingHook(num_replicas=2, rank=task, every_n_steps=10)
    with sf.train.MonitoredTrainingSession(master=server.target, hooks=[hook, ...]) as sess:
        ...

Every worker must run the same number of steps (the averages pair up step by step), in the
same graph shape (the variables made in the same order), its variables on its own task
(sf.device("/job:worker/task:N"), or ModelAverageCustomGetter); ops without a device run on the
task whose server the session uses, as TF1's. `var_list` defaults to the trainable
variables; give sf.global_variables() to average the optimizer's slots too (DL4J's "average
updaters").
"""

from shardflow import collective_ops, framework
from shardflow.monitored_session import SessionRunHook

# Collective groups (apart from AllReduceOptimizer's 1, broadcast_variables' 2, horovod's 3,
# MultiWorkerMirroredStrategy's 4 to 6).
_AVERAGE_GROUP = 7
_BROADCAST_GROUP = 8


class ParameterAveragingHook(SessionRunHook):
    """Averages `var_list` (default: the trainable variables) over `num_replicas` workers every
    `every_n_steps` runs of this worker's session, after taking rank 0's values when the session
    starts (the module's text). `rank`: this worker's index (0 for the chief)."""

    def __init__(self, num_replicas, rank, every_n_steps=10, var_list=None):
        if int(num_replicas) < 1 or not 0 <= int(rank) < int(num_replicas):
            raise ValueError("ParameterAveragingHook: rank %r must be in [0, num_replicas=%r)"
                             % (rank, num_replicas))
        if int(every_n_steps) < 1:
            raise ValueError("ParameterAveragingHook: every_n_steps must be at least 1, not %r"
                             % (every_n_steps,))
        self._n, self._rank = int(num_replicas), int(rank)
        self._every = int(every_n_steps)
        self._var_list = var_list
        self._steps = 0
        self._average = self._broadcast = None

    def begin(self):
        from shardflow import ops
        from shardflow.distribute.all_reduce import broadcast_variables
        from shardflow.variables import trainable_variables
        variables = list(self._var_list if self._var_list is not None else trainable_variables())
        if self._n == 1 or not variables:
            self._average = self._broadcast = ops.no_op(name="parameter_averaging")
            return
        assigns = []
        g = framework.get_default_graph()
        with g.name_scope("parameter_averaging"):
            for k, v in enumerate(variables):
                if not v.device:
                    raise ValueError(
                        "ParameterAveragingHook: variable %s has no device; build the model "
                        "under sf.device('/job:worker/task:N') (this worker's task)" % v.op.name)
                with framework.device(v.device):
                    mean = collective_ops.all_reduce(v.value(), self._n, _AVERAGE_GROUP, k + 1,
                                                     "Add", "Div")
                    assigns.append(v.assign(mean, read_value=False))
            self._average = ops.group(*assigns)
        with framework.device(variables[0].device):
            self._broadcast = broadcast_variables(variables, self._n, self._rank,
                                                  group_key=_BROADCAST_GROUP)

    def after_create_session(self, session, coord=None):
        session.run(self._broadcast)

    def after_run(self, run_context, run_values):
        self._steps += 1
        if self._steps % self._every == 0:
            run_context.session.run(self._average)

    @property
    def averages(self):
        """How many times the variables were averaged so far."""
        return self._steps // self._every


__all__ = ["ParameterAveragingHook"]
