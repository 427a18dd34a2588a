"""tensorflow.python.framework's modules that programs import directly: tensor_util, and ops,
dtypes, tensor_shape, constant_op, graph_util, errors (errors_impl), test_util, importer,
function, random_seed, sparse_tensor, whose names come from the public API
(shardflow/python/_aliases.py): ``from shardflow.python.framework import ops``,
``ops.get_default_graph()``."""

from shardflow import tensor_util  # noqa: F401
from shardflow.python._aliases import alias_module

for _name, _sources in (("ops", ("", "framework")), ("dtypes", ("dtypes",)),
                        ("tensor_shape", ("",)), ("constant_op", ("",)),
                        ("graph_util", ("graph_util",)), ("errors", ("errors",)),
                        ("errors_impl", ("errors",)), ("importer", ("",)),
                        ("random_seed", ("",)), ("sparse_tensor", ("sparse", "")),
                        ("function", ("",)), ("graph_io", ("train", ""))):
    alias_module(__name__, _name, _sources)

__all__ = ["tensor_util", "ops", "dtypes", "tensor_shape", "constant_op", "graph_util",
           "errors"]
