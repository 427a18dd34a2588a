"""TF1's meta graphs: tf.train.export_meta_graph and tf.train.import_meta_graph, and the
``<checkpoint>.meta`` file tf.train.Saver.save writes beside each checkpoint.

Example::

    saver = sf.train.Saver()
    path = saver.save(sess, "/tmp/model/ckpt", global_step=100)    # also /tmp/model/ckpt-100.meta

    # later, in a program that does not build the model:
    with sf.Session() as sess:
        saver = sf.train.import_meta_graph(path + ".meta")
        saver.restore(sess, path)
        y = sf.get_default_graph().get_tensor_by_name("y:0")
        train_op = sf.get_collection("train_op")[0]

The file holds the GraphDef, the graph's variables (name, handle, read and initializer nodes,
trainable, local) and its collections of tensors, operations and variables, by name. It is
shardflow's own format (JSON around the serialized GraphDef), not TensorFlow's MetaGraphDef
protobuf: it round-trips between shardflow programs. Imported variables can be saved, restored,
read and assigned, and the imported train ops run; an optimizer built afresh over them after the
import is not supported (build it before exporting instead).
"""

import base64
import json
import os

from shardflow import errors
from shardflow.framework import Operation, Tensor, get_default_graph

_FORMAT = "shardflow.MetaGraph/1"


def _item(value):
    from shardflow.variables import Variable
    if isinstance(value, Variable):
        return {"variable": value.op.name}
    if isinstance(value, Tensor):
        return {"tensor": value.name}
    if isinstance(value, Operation):
        return {"op": value.name}
    if isinstance(value, (str, int, float, bool)):
        return {"value": value}
    return None  # Python objects (hooks, savers): not exported, as TF1 skips them


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text=False, graph=None, export_scope=None,
                      clear_devices=False, clear_extraneous_savers=False,
                      strip_default_attrs=False, **kwargs):
    """Writes the default graph (or `graph`) to `filename` as a meta graph and returns its
    contents as a dict. `collection_list` limits which collections are kept (default: all).
    `export_scope` ("tower_0"): only the nodes, variables and collection items under that
    name scope, with it taken off their names, as TF1's (import them under another
    import_scope). A tensor outside the scope that a node reads becomes an unbound input,
    "$unbound_inputs_<name>", which import_meta_graph's input_map must give, as TF1's."""
    from shardflow.variables import global_variables, local_variables
    g = graph or get_default_graph()
    gd = g.as_graph_def()
    if clear_devices:
        for node in gd.node:
            node.device = ""
    variables = []
    for v in global_variables(g) + local_variables(g):
        variables.append({"name": v._shared_name, "handle": v.op.name, "read": v._read.name,
                          "initializer": v.initializer.name, "trainable": bool(v.trainable),
                          "local": bool(v._local), "device": v._device or ""})
        info = v._get_save_slice_info()
        if info is not None:   # a part of a partitioned variable
            variables[-1]["slice"] = {"full_name": info.full_name, "full_shape": info.full_shape,
                                      "offset": info.var_offset, "shape": info.var_shape}
    collections = {}
    names = collection_list if collection_list is not None else list(g._collections)
    for key in names:
        items = [_item(x) for x in g._collections.get(key, [])]
        items = [x for x in items if x is not None]
        if items:
            collections[key] = items
    saver = None
    if isinstance(saver_def, dict) and "variables" in saver_def:
        saver = {"variables": saver_def["variables"]}  # Saver._variable_names
    unbound = []
    if export_scope:
        gd, variables, collections, saver, unbound = _scoped(g, gd, variables, collections,
                                                             saver, export_scope)
    meta = {"format": _FORMAT,
            "graph_def": base64.b64encode(gd.SerializeToString()).decode("ascii"),
            "variables": variables, "collections": collections}
    if unbound:
        meta["unbound_inputs"] = unbound
    if saver is not None:
        meta["saver"] = saver
    if filename:
        directory = os.path.dirname(filename)
        if directory:
            os.makedirs(directory, exist_ok=True)
        tmp = filename + ".tmp"
        with open(tmp, "w") as f:
            json.dump(meta, f, indent=1 if as_text else None)
        os.replace(tmp, filename)
    return meta


def _scoped(g, gd, variables, collections, saver, export_scope):
    """What export_meta_graph writes for `export_scope`: the GraphDef's nodes under it and
    the variables and collection items of those nodes, the scope taken off their names, and
    the unbound inputs ([name, dtype enum]: tensors outside that the nodes read). The Saver's
    checkpoint names stay (the checkpoint holds the variables as they were named)."""
    scope = export_scope.rstrip("/") + "/"
    unbound = {}

    def strip(name):
        return name[len(scope):] if name.startswith(scope) else None
    out = type(gd)()
    out.CopyFrom(gd)
    del out.node[:]
    for node in gd.node:
        if strip(node.name) is None:
            continue
        kept = out.node.add()
        kept.CopyFrom(node)
        kept.name = strip(node.name)
        del kept.input[:]
        for name in node.input:
            control = name.startswith("^")
            inside = strip(name[1:] if control else name)
            if inside is not None:
                kept.input.append("^" + inside if control else inside)
            elif not control:   # (a control input outside the scope is dropped, as TF1's)
                tensor = name if ":" in name else name + ":0"
                key = "$unbound_inputs_" + (name[:-2] if name.endswith(":0") else name)
                node_name = key.replace(":", "_")   # its placeholder when imported
                unbound[key] = [g.get_tensor_by_name(tensor).dtype._enum, node_name]
                kept.input.append(node_name)
    kept_variables = []
    for info in variables:
        names = {k: strip(info[k]) for k in ("handle", "read", "initializer")}
        if None in names.values():
            continue   # a variable outside the scope
        info = dict(info, name=strip(info["name"]) or info["name"], **names)
        if "slice" in info:
            part = info["slice"]
            info["slice"] = dict(part, full_name=strip(part["full_name"]) or part["full_name"])
        kept_variables.append(info)
    kept_collections = {}
    for key, items in collections.items():
        kept = []
        for item in items:
            field = next((f for f in ("variable", "tensor", "op") if f in item), None)
            if field is None:
                kept.append(item)
            elif strip(item[field]) is not None:
                kept.append({field: strip(item[field])})
        if kept:
            kept_collections[key] = kept
    if saver is not None:
        saver = {"variables": [[name, strip(handle)] for name, handle in saver["variables"]
                               if strip(handle) is not None]}
    return out, kept_variables, kept_collections, saver, sorted(
        [key] + value for key, value in unbound.items())


def _bind_inputs(gd, unbound, input_map):
    """A placeholder in `gd` for each unbound input of a scoped meta graph ([key, dtype enum,
    node name]), and input_map giving it the tensor input_map has for its key
    ("$unbound_inputs_x", TF1's); ValueError (TF1's words) when input_map lacks one."""
    input_map = dict(input_map or {})
    missing = [key for key, _, _ in unbound if key not in input_map]
    if missing:
        raise ValueError("Graph contains unbound inputs: %s. Must provide these inputs "
                         "through input_map." % ",".join(missing))
    for key, dtype, node_name in unbound:
        node = gd.node.add()
        node.name, node.op = node_name, "Placeholder"
        node.attr["dtype"].type = int(dtype)
        input_map[node_name + ":0"] = input_map.pop(key)
    return input_map


def _read(meta_graph_or_file):
    if isinstance(meta_graph_or_file, dict):
        return meta_graph_or_file
    path = meta_graph_or_file
    if not os.path.exists(path) and os.path.exists(path + ".meta"):
        path += ".meta"
    try:
        with open(path) as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise errors.NotFoundError("import_meta_graph: no file %s" % path) from None
    except (ValueError, UnicodeDecodeError, RecursionError) as e:   # nested past the limit
        raise errors.DataLossError("import_meta_graph: %s is not a shardflow meta graph (%s); "
                                   "it is written by tf.train.Saver.save or export_meta_graph"
                                   % (path, e)) from None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise errors.DataLossError("import_meta_graph: %s is not a shardflow meta graph "
                                   "(format %r)" % (path, meta.get("format") if
                                                    isinstance(meta, dict) else None))
    return meta


def _variable(g, info, prefix):
    from shardflow.variables import Variable
    full = (lambda n: prefix + "/" + n) if prefix else (lambda n: n)
    v = Variable.__new__(Variable)
    v.graph = g
    v._shared_name = full(info["name"])
    v.name = v._shared_name + ":0"
    v.trainable = bool(info["trainable"])
    v._handle_op = g.get_operation_by_name(full(info["handle"]))
    v._read = g.get_tensor_by_name(full(info["read"]))
    v.initializer = g.get_operation_by_name(full(info["initializer"]))
    v._device = v._handle_op.device or ""
    v._local = bool(info["local"])
    v._imported = True   # global_variables_initializer adds its initializer
    part = info.get("slice")
    if part is not None:
        try:
            v._set_save_slice_info(Variable.SaveSliceInfo(
                full(str(part["full_name"])), part["full_shape"], part["offset"], part["shape"]))
        except (KeyError, TypeError, ValueError) as e:
            raise errors.DataLossError("import_meta_graph: damaged slice record of variable %s "
                                       "(%s)" % (v._shared_name, e)) from None
    g._variables.append(v)
    return v


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None,
                      input_map=None, **kwargs):
    """Adds the meta graph's nodes to the default graph (under `import_scope`), restores its
    variables and collections, and returns a tf.train.Saver over its variables (None when it
    has none), as TF1's tf.train.import_meta_graph: where the meta graph was written by a
    Saver (Saver.save, Saver.export_meta_graph), one with that Saver's variables and names.
    `input_map` ({"x:0": tensor}, names as in the meta graph) replaces tensors of the meta
    graph by tensors of this graph, as tf.import_graph_def's (a restored model reading from a
    new input pipeline)."""
    from shardflow.graph_io import graph_def_from_bytes, import_graph_def
    meta = _read(meta_graph_or_file)
    g = get_default_graph()
    try:
        gd = graph_def_from_bytes(base64.b64decode(meta["graph_def"]))
        variables_info = list(meta["variables"])
        collections = dict(meta["collections"])
    except (KeyError, TypeError, ValueError) as e:
        raise errors.DataLossError("import_meta_graph: damaged meta graph (%s)" % e) from None
    if clear_devices:
        for node in gd.node:
            node.device = ""
    if meta.get("unbound_inputs"):
        input_map = _bind_inputs(gd, meta["unbound_inputs"], input_map)
    import_graph_def(gd, input_map=input_map, name=import_scope or "")
    prefix = import_scope or ""
    full = (lambda n: prefix + "/" + n) if prefix else (lambda n: n)
    by_handle = {}
    for info in variables_info:
        by_handle[info["handle"]] = _variable(g, info, prefix)
    for key, items in collections.items():
        if key in ("variables", "local_variables"):
            continue  # the variables themselves are tracked above
        for item in items:
            if "variable" in item:
                value = by_handle.get(item["variable"])
            elif "tensor" in item:
                value = g.get_tensor_by_name(full(item["tensor"]))
            elif "op" in item:
                value = g.get_operation_by_name(full(item["op"]))
            else:
                value = item.get("value")
            if value is not None:
                g.add_to_collection(key, value)
    from shardflow.train import Saver
    saver = meta.get("saver")
    if saver is not None:
        # The Saver that wrote the checkpoint, with its names (a var_list dict renames).
        try:
            names = {}
            for name, handle in saver["variables"]:
                v = by_handle.get(handle)
                if v is None:
                    continue
                if v._get_save_slice_info() is not None:   # the parts of one whole
                    names.setdefault(str(name), []).append(v)
                else:
                    names[str(name)] = v
        except (KeyError, TypeError, ValueError) as e:
            raise errors.DataLossError("import_meta_graph: damaged saver record (%s)" % e) \
                from None
        if names:
            return Saver(var_list=names)
    saveable = [v for v in by_handle.values() if not v._local]
    if not saveable:
        return None
    return Saver(var_list=saveable)


__all__ = ["export_meta_graph", "import_meta_graph"]
