"""Modules standing for tensorflow.python's internal ones (``from tensorflow.python.ops import
math_ops``, ...) that TF1 programs import directly: each takes its names from the public
shardflow namespaces that hold TF1's functions of that module (math_ops.reduce_sum is
sf.reduce_sum, nn_ops.relu is sf.nn.relu), looked up when first used. A name none of them has
is an AttributeError naming the module and where shardflow's API is listed."""

import functools
import sys
import types


def alias_module(package, name, sources):
    """Registers `package`.`name` (importable, and an attribute of `package`'s module) whose
    names come from `sources`: dotted paths under shardflow ("" for sf itself), searched in
    order."""
    full = "%s.%s" % (package, name)
    module = types.ModuleType(full, "TF1's %s: its names from %s (shardflow/python/"
                              "_aliases.py)." % (full.replace("shardflow.", "tensorflow.", 1),
                                                 ", ".join("sf" + ("." + s if s else "")
                                                           for s in sources)))

    def __getattr__(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        for source in sources:
            try:
                namespace = functools.reduce(getattr, source.split(".") if source else [],
                                             sys.modules["shardflow"])
                return getattr(namespace, attr)
            except AttributeError:
                continue
        raise AttributeError("%s has no %r: shardflow takes this module's names from %s "
                             "(docs/python.md lists the API)"
                             % (full, attr, ", ".join("sf" + ("." + s if s else "")
                                                      for s in sources)))

    module.__getattr__ = __getattr__
    sys.modules[full] = module
    setattr(sys.modules[package], name, module)
    return module
