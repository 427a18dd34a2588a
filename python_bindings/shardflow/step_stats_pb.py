"""TF1's StepStats messages (tensorflow/core/framework/step_stats.proto) and
``run_metadata.step_stats``, which builds one from a traced step.

Example::

    md = sf.RunMetadata()
    sess.run(y, feeds, options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE),
             run_metadata=md)
    for dev in md.step_stats.dev_stats:
        for ns in dev.node_stats:
            print(dev.device, ns.node_name, ns.all_start_micros, ns.all_end_rel_micros)

The engine records its own NodeExecStats (core/protos/step_stats.proto: start and end in epoch
microseconds, the op, outputs). ``step_stats`` is a TF-format copy, made on each access (a
fresh message: changing it does not change the RunMetadata): all_start_micros is the start,
op_start_rel_micros 0, op_end_rel_micros and all_end_rel_micros the duration (the engine does
not time scheduling apart from the kernel), the _nanos fields the same in nanoseconds, and
timeline_label the kernel's own label where it set one (collectives), else TF's
"name = Op(input, ...)" with the inputs read from the partition graphs. Each output carries
its dtype, shape and bytes (as tensor_description.allocation_description.requested_bytes);
memory_stats are not recorded.

tf_run_metadata(md) is TF's RunMetadata of a sf.RunMetadata (those step stats and the partition
graphs), which FileWriter.add_run_metadata writes for TensorBoard; tf_graph_def(g) is TF's
GraphDef of a shardflow GraphDef (attrs translated to TF's AttrValue), which FileWriter.add_graph
writes.

The classes are made as summary_pb.py makes its messages (package "tensorflow", TF's field
numbers, a descriptor pool of their own). They need python3-protobuf, loaded on first use.
"""

from google.protobuf import descriptor_pb2

from shardflow.example_pb import _F, _field, _message_classes

_FILE_NAME = "shardflow/tensorflow_step_stats.proto"


def _file_descriptor_proto():
    fdp = descriptor_pb2.FileDescriptorProto(name=_FILE_NAME, package="tensorflow",
                                             syntax="proto3")
    rep, msg, i64 = _F.LABEL_REPEATED, _F.TYPE_MESSAGE, _F.TYPE_INT64
    m = fdp.message_type.add(name="TensorShapeProto")
    dim = m.nested_type.add(name="Dim")
    _field(dim, "size", 1, i64)
    _field(dim, "name", 2, _F.TYPE_STRING)
    _field(m, "dim", 2, msg, rep, type_name=".tensorflow.TensorShapeProto.Dim")
    _field(m, "unknown_rank", 3, _F.TYPE_BOOL)
    m = fdp.message_type.add(name="AllocationDescription")
    _field(m, "requested_bytes", 1, i64)
    _field(m, "allocated_bytes", 2, i64)
    _field(m, "allocator_name", 3, _F.TYPE_STRING)
    m = fdp.message_type.add(name="TensorDescription")
    _field(m, "dtype", 1, _F.TYPE_INT32)
    _field(m, "shape", 2, msg, type_name=".tensorflow.TensorShapeProto")
    _field(m, "allocation_description", 4, msg,
           type_name=".tensorflow.AllocationDescription")
    m = fdp.message_type.add(name="NodeOutput")
    _field(m, "slot", 1, _F.TYPE_INT32)
    _field(m, "tensor_description", 3, msg, type_name=".tensorflow.TensorDescription")
    m = fdp.message_type.add(name="NodeExecStats")
    _field(m, "node_name", 1, _F.TYPE_STRING)
    _field(m, "all_start_micros", 2, i64)
    _field(m, "op_start_rel_micros", 3, i64)
    _field(m, "op_end_rel_micros", 4, i64)
    _field(m, "all_end_rel_micros", 5, i64)
    _field(m, "output", 7, msg, rep, type_name=".tensorflow.NodeOutput")
    _field(m, "timeline_label", 8, _F.TYPE_STRING)
    _field(m, "scheduled_micros", 9, i64)
    _field(m, "thread_id", 10, _F.TYPE_UINT32)
    for number, name in enumerate(("all_start_nanos", "op_start_rel_nanos", "op_end_rel_nanos",
                                   "all_end_rel_nanos", "scheduled_nanos"), 13):
        _field(m, name, number, i64)
    m = fdp.message_type.add(name="DeviceStepStats")
    _field(m, "device", 1, _F.TYPE_STRING)
    _field(m, "node_stats", 2, msg, rep, type_name=".tensorflow.NodeExecStats")
    m = fdp.message_type.add(name="StepStats")
    _field(m, "dev_stats", 1, msg, rep, type_name=".tensorflow.DeviceStepStats")
    # attr_value.proto (the kinds translated here), graph.proto, node_def.proto, config.proto
    m = fdp.message_type.add(name="AttrValue")
    lst = m.nested_type.add(name="ListValue")
    for name, number, kind in (("s", 2, _F.TYPE_BYTES), ("i", 3, i64), ("f", 4, _F.TYPE_FLOAT),
                               ("b", 5, _F.TYPE_BOOL), ("type", 6, _F.TYPE_INT32)):
        _field(lst, name, number, kind, rep)
    _field(lst, "shape", 7, msg, rep, type_name=".tensorflow.TensorShapeProto")
    m.oneof_decl.add(name="value")
    for name, number, kind, type_name in (
            ("list", 1, msg, ".tensorflow.AttrValue.ListValue"), ("s", 2, _F.TYPE_BYTES, None),
            ("i", 3, i64, None), ("f", 4, _F.TYPE_FLOAT, None), ("b", 5, _F.TYPE_BOOL, None),
            ("type", 6, _F.TYPE_INT32, None),
            ("shape", 7, msg, ".tensorflow.TensorShapeProto")):
        f = _field(m, name, number, kind, type_name=type_name)
        f.oneof_index = 0
    m = fdp.message_type.add(name="NodeDef")
    _field(m, "name", 1, _F.TYPE_STRING)
    _field(m, "op", 2, _F.TYPE_STRING)
    _field(m, "input", 3, _F.TYPE_STRING, rep)
    _field(m, "device", 4, _F.TYPE_STRING)
    entry = m.nested_type.add(name="AttrEntry")
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    _field(entry, "value", 2, msg, type_name=".tensorflow.AttrValue")
    _field(m, "attr", 5, msg, rep, type_name=".tensorflow.NodeDef.AttrEntry")
    m = fdp.message_type.add(name="GraphDef")
    _field(m, "node", 1, msg, rep, type_name=".tensorflow.NodeDef")
    m = fdp.message_type.add(name="RunMetadata")
    _field(m, "step_stats", 1, msg, type_name=".tensorflow.StepStats")
    _field(m, "partition_graphs", 3, msg, rep, type_name=".tensorflow.GraphDef")
    return fdp


_classes = _message_classes(_file_descriptor_proto(), _FILE_NAME)

TensorShapeProto = _classes["TensorShapeProto"]
AllocationDescription = _classes["AllocationDescription"]
TensorDescription = _classes["TensorDescription"]
NodeOutput = _classes["NodeOutput"]
NodeExecStats = _classes["NodeExecStats"]
DeviceStepStats = _classes["DeviceStepStats"]
StepStats = _classes["StepStats"]
AttrValue = _classes["AttrValue"]
NodeDef = _classes["NodeDef"]
GraphDef = _classes["GraphDef"]
RunMetadata = _classes["RunMetadata"]    # TF's tensorflow.RunMetadata, not sf.RunMetadata


def _inputs_by_node(md):
    """{(device, node name): [input, ...]} from the partition graphs (control inputs left out)."""
    inputs = {}
    for graph in md.partition_graphs:
        for node in graph.node:
            data = [i for i in node.input if not i.startswith("^")]
            inputs[(node.assigned_device, node.name)] = data
            inputs.setdefault((None, node.name), data)
    return inputs


def step_stats_from_run_metadata(run_metadata):
    """A tensorflow.StepStats message for a sf.RunMetadata (see the module comment)."""
    from shardflow.protos import config_pb2
    md = config_pb2.RunMetadata.FromString(run_metadata.SerializeToString())
    inputs = _inputs_by_node(md)
    out = StepStats()
    for dev in md.step_stats.dev_stats:
        tf_dev = out.dev_stats.add(device=dev.device)
        for ns in dev.node_stats:
            duration = max(0, ns.end_micros - ns.start_micros)
            label = ns.timeline_label
            if not label:
                args = inputs.get((dev.device, ns.node_name),
                                  inputs.get((None, ns.node_name), []))
                label = "%s = %s(%s)" % (ns.node_name, ns.op, ", ".join(args))
            tf_ns = tf_dev.node_stats.add(
                node_name=ns.node_name, all_start_micros=ns.start_micros,
                op_start_rel_micros=0, op_end_rel_micros=duration,
                all_end_rel_micros=duration, timeline_label=label,
                scheduled_micros=ns.start_micros, thread_id=ns.thread_id & 0xFFFFFFFF,
                all_start_nanos=ns.start_micros * 1000, op_start_rel_nanos=0,
                op_end_rel_nanos=duration * 1000, all_end_rel_nanos=duration * 1000,
                scheduled_nanos=ns.start_micros * 1000)
            for o in ns.output:
                desc = tf_ns.output.add(slot=o.slot).tensor_description
                desc.dtype = int(o.dtype)
                for size in o.shape.dim:
                    desc.shape.dim.add(size=size)
                desc.shape.unknown_rank = o.shape.unknown_rank
                desc.allocation_description.requested_bytes = o.bytes
                desc.allocation_description.allocated_bytes = o.bytes
    return out


def tf_run_metadata(run_metadata):
    """TF's tensorflow.RunMetadata message for a sf.RunMetadata (a tensorflow.RunMetadata is
    returned as it is): step_stats as step_stats_from_run_metadata makes them, and each
    partition graph with its nodes' name, op, inputs and device (the assigned one). Attrs are
    left out (shardflow's AttrValue numbers its fields differently), as are cost_graph and
    function_graphs, which the engine does not record. FileWriter.add_run_metadata writes it,
    so that TensorBoard, which reads it with TF's schema, can show the step."""
    if isinstance(run_metadata, RunMetadata):
        return run_metadata
    if not hasattr(run_metadata, "node_stats"):
        raise TypeError("expected a sf.RunMetadata (filled by a traced sess.run), not %r"
                        % (run_metadata,))
    from shardflow.protos import config_pb2
    md = config_pb2.RunMetadata.FromString(run_metadata.SerializeToString())
    out = RunMetadata()
    out.step_stats.CopyFrom(step_stats_from_run_metadata(run_metadata))
    for graph in md.partition_graphs:
        out.partition_graphs.add().CopyFrom(tf_graph_def(graph, assigned=True))
    return out


def _tf_shape(shape, out):
    """Fills TF's TensorShapeProto `out` from shardflow's (dims; -1 unknown)."""
    for size in shape.dim:
        out.dim.add(size=size)
    out.unknown_rank = shape.unknown_rank


def _tf_attr(value, out):
    """Fills TF's AttrValue `out` from shardflow's AttrValue `value` (graph.proto numbers its
    fields differently); tensors and functions are left out. False when nothing was set."""
    kind = value.WhichOneof("value")
    if kind in ("s", "i", "f", "b"):
        setattr(out, kind, getattr(value, kind))
    elif kind == "type":
        out.type = int(value.type)
    elif kind == "shape":
        _tf_shape(value.shape, out.shape)
    elif kind == "list":
        lst = value.list
        out.list.SetInParent()
        out.list.s.extend(lst.s)
        out.list.i.extend(lst.i)
        out.list.f.extend(lst.f)
        out.list.b.extend(lst.b)
        out.list.type.extend(int(t) for t in lst.type)
        for shape in lst.shape:
            _tf_shape(shape, out.list.shape.add())
    else:
        return False
    return True


def tf_graph_def(graph_def, assigned=False):
    """TF's tensorflow.GraphDef for a shardflow GraphDef message (or its bytes): each node's
    name, op, inputs, device (the assigned one when `assigned`) and its attrs translated to TF's
    AttrValue (tensor values and functions left out). FileWriter writes it, so TensorBoard's
    graph view, which reads TF's schema, can parse the graph."""
    from shardflow.protos import graph_pb2
    if isinstance(graph_def, (bytes, bytearray)):
        graph_def = graph_pb2.GraphDef.FromString(bytes(graph_def))
    out = GraphDef()
    for node in graph_def.node:
        device = (node.assigned_device or node.device) if assigned else node.device
        inputs = [i[:-2] if i.endswith(":0") else i for i in node.input]   # TF's "x", not "x:0"
        tf_node = out.node.add(name=node.name, op=node.op, input=inputs, device=device)
        for key in sorted(node.attr):
            attr = AttrValue()
            if _tf_attr(node.attr[key], attr):
                tf_node.attr[key].CopyFrom(attr)
    return out


__all__ = ["AllocationDescription", "DeviceStepStats", "NodeExecStats", "NodeOutput",
           "StepStats", "TensorDescription", "TensorShapeProto",
           "step_stats_from_run_metadata", "tf_graph_def", "tf_run_metadata"]
