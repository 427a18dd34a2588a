"""tensorflow.python.ops' modules that TF1 programs import directly: collective_ops (the
collective ops with group and instance keys: shardflow/collective_ops.py) and the op modules
(array_ops, math_ops, nn_ops, state_ops, control_flow_ops, variables, ...), whose names come
from the public API (shardflow/python/_aliases.py)."""

from shardflow import collective_ops  # noqa: F401
from shardflow.python._aliases import alias_module

for _name, _sources in (
        ("array_ops", ("",)), ("math_ops", ("", "math")), ("nn", ("nn",)),
        ("nn_ops", ("nn", "")), ("nn_impl", ("nn", "")), ("state_ops", ("",)),
        ("control_flow_ops", ("",)), ("variables", ("",)), ("variable_scope", ("",)),
        ("init_ops", ("", "initializers")), ("random_ops", ("", "random")),
        ("gradients", ("",)), ("gradients_impl", ("",)), ("check_ops", ("debugging", "")),
        ("data_flow_ops", ("",)), ("string_ops", ("strings", "")),
        ("sparse_ops", ("sparse", "")), ("summary_ops", ("summary",)),
        ("logging_ops", ("",)), ("clip_ops", ("",)), ("embedding_ops", ("nn", "")),
        ("partitioned_variables", ("",)), ("lookup_ops", ("lookup", "")),
        ("script_ops", ("",)), ("functional_ops", ("",)), ("tensor_array_ops", ("",)),
        ("resource_variable_ops", ("",)), ("metrics", ("metrics",)),
        ("losses", ("losses",)), ("image_ops", ("image",)), ("linalg_ops", ("linalg", ""))):
    alias_module(__name__, _name, _sources)

__all__ = ["collective_ops", "array_ops", "math_ops", "nn", "nn_ops", "state_ops",
           "control_flow_ops", "variables", "variable_scope", "init_ops", "random_ops"]
