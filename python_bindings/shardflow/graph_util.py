"""TF1's tf.graph_util: freezing a trained graph for inference.

Example::

    frozen = sf.graph_util.convert_variables_to_constants(
        sess, sess.graph.as_graph_def(), ["logits"])
    with sf.Graph().as_default():
        logits, = sf.import_graph_def(frozen, return_elements=["logits:0"], name="")

In the frozen graph each variable the outputs read is a Const holding its value at the time of
the call, so the graph optimizer can fold inference batch norms into the convolution weights and
the convolution kernels reorder those weights into oneDNN's layout once (docs/optimizer.md).
"""

import numpy as np

from shardflow import dtypes
from shardflow.graph_io import _protos


def _node_name(inp):
    return inp[1:] if inp.startswith("^") else inp.split(":")[0]


def extract_sub_graph(graph_def, dest_nodes):
    """The nodes `dest_nodes` (names) need, through data and control inputs, in their original
    order (TF1's tf.graph_util.extract_sub_graph)."""
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be a list of node names, not a string")
    by_name = {n.name: n for n in graph_def.node}
    missing = [d for d in dest_nodes if d not in by_name]
    if missing:
        raise ValueError("extract_sub_graph: no node named %s in the graph" % missing)
    keep, todo = set(), list(dest_nodes)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        for inp in by_name[name].input:
            src = _node_name(inp)
            if src not in by_name:
                raise ValueError("extract_sub_graph: node '%s' reads '%s', which is not in the "
                                 "graph" % (name, src))
            todo.append(src)
    out = _protos().GraphDef()
    out.version = graph_def.version
    for n in graph_def.node:
        if n.name in keep:
            out.node.add().CopyFrom(n)
    return out


def convert_variables_to_constants(sess, input_graph_def, output_node_names,
                                   variable_names_whitelist=None, variable_names_blacklist=None):
    """The part of `input_graph_def` that `output_node_names` need, with every variable it reads
    (its ReadVariableOp) replaced by a Const of the variable's current value in `sess` (TF1's
    tf.graph_util.convert_variables_to_constants). Variables named in `variable_names_blacklist`,
    or not in a given `variable_names_whitelist`, stay variables."""
    sub = extract_sub_graph(input_graph_def, output_node_names)
    handles = {n.name: n for n in sub.node if n.op == "VarHandleOp"}

    def frozen(handle):
        if variable_names_whitelist is not None and handle not in variable_names_whitelist:
            return False
        return not (variable_names_blacklist and handle in variable_names_blacklist)

    reads = [n for n in sub.node if n.op == "ReadVariableOp" and
             _node_name(n.input[0]) in handles and frozen(_node_name(n.input[0]))]
    values = sess.run([n.name + ":0" for n in reads]) if reads else []
    replaced = {n.name: v for n, v in zip(reads, values)}
    converted = {_node_name(n.input[0]) for n in reads}
    # A converted variable's handle goes away: nothing else kept may still use it.
    for n in sub.node:
        if n.name in replaced:
            continue
        for inp in n.input:
            if _node_name(inp) in converted:
                raise ValueError(
                    "convert_variables_to_constants: node '%s' (%s) uses variable '%s' other than "
                    "by reading it; leave that variable out (variable_names_blacklist) or the node "
                    "out of output_node_names" % (n.name, n.op, _node_name(inp)))
    graph_pb2 = _protos()
    out = graph_pb2.GraphDef()
    out.version = sub.version
    for n in sub.node:
        if n.name in converted:
            continue
        if n.name not in replaced:
            out.node.add().CopyFrom(n)
            continue
        value = np.ascontiguousarray(replaced[n.name])
        dtype = dtypes.as_dtype(value.dtype)
        const = out.node.add()
        const.name = n.name
        const.op = "Const"
        const.device = n.device
        for inp in n.input[1:]:  # control inputs
            if inp.startswith("^") and _node_name(inp) not in converted:
                const.input.append(inp)
        const.attr["dtype"].type = dtype._enum
        tensor = const.attr["value"].tensor
        tensor.dtype = dtype._enum
        tensor.shape.dim.extend(value.shape)
        tensor.content = value.tobytes()
    return out
