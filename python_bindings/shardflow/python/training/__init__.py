"""tensorflow.python.training's modules that TF1 programs import directly (server_lib,
device_setter, training_util, session_run_hook, basic_session_run_hooks, monitored_session,
saver, sync_replicas_optimizer, optimizers, ...): their names come from sf.train
(shardflow/python/_aliases.py)."""

from shardflow.python._aliases import alias_module

for _name in ("server_lib", "device_setter", "training_util", "session_run_hook",
              "basic_session_run_hooks", "monitored_session", "saver", "checkpoint_management",
              "sync_replicas_optimizer", "optimizer", "gradient_descent", "adam", "adagrad",
              "momentum", "rmsprop", "learning_rate_decay", "moving_averages",
              "session_manager", "supervisor", "coordinator", "queue_runner",
              "queue_runner_impl", "input", "training"):
    alias_module(__name__, _name, ("train", ""))
# moving_averages.assign_moving_average is no sf.train name: shardflow.moving_averages has it.
alias_module(__name__, "moving_averages", ("moving_averages", "train", ""))

__all__ = ["server_lib", "device_setter", "training_util", "session_run_hook",
           "basic_session_run_hooks", "monitored_session", "saver"]
