"""GraphDef objects, TF1's import_graph_def and write_graph, and tf.gfile (re-exported from
shardflow/gfile.py).

GraphDef, NodeDef, AttrValue and TensorProto are the project's own messages
(core/protos/graph.proto, tensor.proto) compiled for Debian's python3-protobuf at build time
(shardflow/protos/*_pb2.py), so they read and write the bytes the C++ engine, the `shardflow` CLI
and the event files use::

    graph_def = sess.graph.as_graph_def()          # a sf.GraphDef
    print([n.name for n in graph_def.node])
    sf.train.write_graph(graph_def, "/tmp/model", "graph.pbtxt")        # text format
    with sf.Graph().as_default():
        y, = sf.import_graph_def(graph_def, input_map={"x:0": new_x}, return_elements=["y:0"])
"""

import os

from shardflow import gfile  # noqa: F401 (sf.gfile, sf.io.gfile: shardflow/gfile.py)
from shardflow.framework import convert_to_tensor, get_default_graph


def _protos():
    try:
        from shardflow.protos import graph_pb2
    except ImportError as e:
        raise ImportError(
            "GraphDef objects need Debian's python3-protobuf (apt-get install python3-protobuf) "
            "and the generated shardflow/protos/graph_pb2.py from the build (%s); "
            "Graph._as_graph_def_bytes() gives the serialized bytes without it" % e) from None
    return graph_pb2


def graph_def_from_bytes(data):
    """A GraphDef message from its serialized bytes."""
    graph_def = _protos().GraphDef()
    graph_def.ParseFromString(bytes(data))
    return graph_def


def _serialized(graph_def, what):
    if isinstance(graph_def, (bytes, bytearray)):
        return bytes(graph_def)
    if hasattr(graph_def, "SerializeToString") and hasattr(graph_def, "node"):
        return graph_def.SerializeToString()
    if hasattr(graph_def, "_as_graph_def_bytes"):
        return graph_def._as_graph_def_bytes()
    raise TypeError("%s takes a GraphDef (graph.as_graph_def()), not %s"
                    % (what, type(graph_def).__name__))


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None,
                     op_dict=None, producer_op_list=None):
    """TF1's tf.import_graph_def: adds the nodes of `graph_def` to the default graph under the
    name scope `name` ("import" when None; "" keeps the names), with the tensors named in
    `input_map` ({"x:0": tensor}) replaced by tensors of this graph. Ops without inputs run
    after the current control_dependencies; nodes without a device get the current device
    scope's. Returns the Operations ("name") and Tensors ("name:0") listed in
    `return_elements`, else None. The GraphDef is validated first (ops, attrs, edges, dtypes,
    cycles); nothing is added when it or the wiring fails."""
    if op_dict is not None:
        raise ValueError("import_graph_def: op_dict is deprecated in TF1 and not supported")
    graph_pb2 = _protos()
    g = get_default_graph()
    parsed = graph_pb2.GraphDef()
    try:
        parsed.ParseFromString(_serialized(graph_def, "import_graph_def"))
    except Exception as e:  # google.protobuf.message.DecodeError
        raise ValueError("import_graph_def: the bytes are not a serialized GraphDef "
                         "(%s)" % e) from None
    for node in parsed.node:
        if not node.device:
            device = g._device_for(node.op, node.name)
            if device:
                node.device = device
    if name == "":
        prefix = ""
    else:
        with g.name_scope(name or "import") as scope:
            prefix = scope[:-1]
    mapping = []
    for key, value in (input_map or {}).items():
        if not isinstance(key, str):
            raise TypeError("import_graph_def: input_map keys are tensor names ('x:0')")
        tensor = convert_to_tensor(value)
        if tensor.graph is not g:
            raise ValueError("import_graph_def: input_map['%s'] belongs to another graph" % key)
        mapping.append((key, tensor._ref))
    known = {node.name for node in parsed.node}
    for element in return_elements or []:
        if element.split(":")[0] not in known:
            raise ValueError("import_graph_def: return_elements names '%s', which is not in "
                             "the GraphDef" % element)
    g._handle.import_graph_def(parsed.SerializeToString(), prefix, mapping,
                               list(g._control_inputs))
    if return_elements is None:
        return None
    results = []
    for element in return_elements:
        full = (prefix + "/" + element) if prefix else element
        results.append(g.get_tensor_by_name(full) if ":" in element
                       else g.get_operation_by_name(full))
    return results


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """TF1's tf.train.write_graph: the GraphDef as text (protobuf text format) or binary under
    logdir/name; makes logdir. Returns the path."""
    data = _serialized(graph_or_graph_def, "write_graph")
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    if as_text:
        from google.protobuf import text_format
        with open(path, "w") as f:
            f.write(text_format.MessageToString(graph_def_from_bytes(data)))
    else:
        with open(path, "wb") as f:
            f.write(data)
    return path


def read_graph(path):
    """A GraphDef from a file write_graph wrote (text when it parses as text, else binary)."""
    with open(path, "rb") as f:
        data = f.read()
    graph_def = _protos().GraphDef()
    try:
        from google.protobuf import text_format
        text_format.Parse(data.decode("utf-8"), graph_def)
    except (UnicodeDecodeError, Exception):  # noqa: B014 (text_format raises ParseError)
        graph_def = graph_def_from_bytes(data)
    return graph_def


def __getattr__(name):
    # sf.GraphDef, sf.NodeDef, ... on first use, so that `import shardflow` works without
    # python3-protobuf.
    if name in ("GraphDef", "NodeDef", "AttrValue", "GraphFunction"):
        return getattr(_protos(), name)
    if name == "TensorProto":
        from shardflow.protos import tensor_pb2
        return tensor_pb2.TensorProto
    raise AttributeError(name)


__all__ = ["gfile", "import_graph_def", "read_graph", "write_graph"]
