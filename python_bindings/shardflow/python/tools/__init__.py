"""tensorflow.python.tools' modules that TF1 programs import directly: inspect_checkpoint
(print_tensors_in_checkpoint_file, from shardflow/checkpoint_utils.py)."""

from shardflow.python._aliases import alias_module

alias_module(__name__, "inspect_checkpoint", ("checkpoint_utils",))

__all__ = ["inspect_checkpoint"]
