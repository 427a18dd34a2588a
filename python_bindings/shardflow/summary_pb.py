"""TensorBoard's protobuf messages (tf.summary.Summary, Event, SessionLog, ...) with TensorFlow's
wire format, and tf.train.summary_iterator, which reads event files back as Event messages.

Example::

    for event in sf.train.summary_iterator(path):       # an events.out.tfevents.* file
        for value in event.summary.value:
            print(event.step, value.tag, value.simple_value)

    s = sf.summary.Summary(value=[sf.summary.Summary.Value(tag="loss", simple_value=0.5)])
    writer.add_summary(s, global_step=3)                  # or s.SerializeToString()

The classes are made when this module is imported, as example_pb.py makes tf.train.Example:
from a FileDescriptorProto that says what tensorflow/core/framework/summary.proto, tensor.proto,
tensor_shape.proto and util/event.proto say (package "tensorflow", same names and field
numbers; DataType and the SessionLog status are int32 fields here: the same varints on the
wire), in a descriptor pool of their own. Only the TensorProto fields summaries use are declared
(dtype, shape, tensor_content and the typed value lists); others are kept as unknown fields.
"""

from google.protobuf import descriptor_pb2

from shardflow.example_pb import _F, _field, _message_classes
from shardflow.tfrecord import read_records

_FILE_NAME = "shardflow/tensorflow_summary.proto"


def _file_descriptor_proto():
    fdp = descriptor_pb2.FileDescriptorProto(name=_FILE_NAME, package="tensorflow",
                                             syntax="proto3")
    rep, msg = _F.LABEL_REPEATED, _F.TYPE_MESSAGE
    # tensor_shape.proto, tensor.proto
    m = fdp.message_type.add(name="TensorShapeProto")
    dim = m.nested_type.add(name="Dim")
    _field(dim, "size", 1, _F.TYPE_INT64)
    _field(dim, "name", 2, _F.TYPE_STRING)
    _field(m, "dim", 2, msg, rep, type_name=".tensorflow.TensorShapeProto.Dim")
    _field(m, "unknown_rank", 3, _F.TYPE_BOOL)
    m = fdp.message_type.add(name="TensorProto")
    _field(m, "dtype", 1, _F.TYPE_INT32)
    _field(m, "tensor_shape", 2, msg, type_name=".tensorflow.TensorShapeProto")
    _field(m, "version_number", 3, _F.TYPE_INT32)
    _field(m, "tensor_content", 4, _F.TYPE_BYTES)
    _field(m, "float_val", 5, _F.TYPE_FLOAT, rep, packed=True)
    _field(m, "double_val", 6, _F.TYPE_DOUBLE, rep, packed=True)
    _field(m, "int_val", 7, _F.TYPE_INT32, rep, packed=True)
    _field(m, "string_val", 8, _F.TYPE_BYTES, rep)
    _field(m, "int64_val", 10, _F.TYPE_INT64, rep, packed=True)
    _field(m, "bool_val", 11, _F.TYPE_BOOL, rep, packed=True)
    _field(m, "half_val", 13, _F.TYPE_INT32, rep, packed=True)
    # summary.proto
    m = fdp.message_type.add(name="SummaryDescription")
    _field(m, "type_hint", 1, _F.TYPE_STRING)
    m = fdp.message_type.add(name="HistogramProto")
    for i, name in enumerate(("min", "max", "num", "sum", "sum_squares"), 1):
        _field(m, name, i, _F.TYPE_DOUBLE)
    _field(m, "bucket_limit", 6, _F.TYPE_DOUBLE, rep, packed=True)
    _field(m, "bucket", 7, _F.TYPE_DOUBLE, rep, packed=True)
    m = fdp.message_type.add(name="SummaryMetadata")
    plugin = m.nested_type.add(name="PluginData")
    _field(plugin, "plugin_name", 1, _F.TYPE_STRING)
    _field(plugin, "content", 2, _F.TYPE_BYTES)
    _field(m, "plugin_data", 1, msg, type_name=".tensorflow.SummaryMetadata.PluginData")
    _field(m, "display_name", 2, _F.TYPE_STRING)
    _field(m, "summary_description", 3, _F.TYPE_STRING)
    m = fdp.message_type.add(name="Summary")
    image = m.nested_type.add(name="Image")
    _field(image, "height", 1, _F.TYPE_INT32)
    _field(image, "width", 2, _F.TYPE_INT32)
    _field(image, "colorspace", 3, _F.TYPE_INT32)
    _field(image, "encoded_image_string", 4, _F.TYPE_BYTES)
    audio = m.nested_type.add(name="Audio")
    _field(audio, "sample_rate", 1, _F.TYPE_FLOAT)
    _field(audio, "num_channels", 2, _F.TYPE_INT64)
    _field(audio, "length_frames", 3, _F.TYPE_INT64)
    _field(audio, "encoded_audio_string", 4, _F.TYPE_BYTES)
    _field(audio, "content_type", 5, _F.TYPE_STRING)
    value = m.nested_type.add(name="Value")
    value.oneof_decl.add(name="value")
    _field(value, "node_name", 7, _F.TYPE_STRING)
    _field(value, "tag", 1, _F.TYPE_STRING)
    _field(value, "metadata", 9, msg, type_name=".tensorflow.SummaryMetadata")
    _field(value, "simple_value", 2, _F.TYPE_FLOAT, oneof_index=0)
    _field(value, "obsolete_old_style_histogram", 3, _F.TYPE_BYTES, oneof_index=0)
    _field(value, "image", 4, msg, type_name=".tensorflow.Summary.Image", oneof_index=0)
    _field(value, "histo", 5, msg, type_name=".tensorflow.HistogramProto", oneof_index=0)
    _field(value, "audio", 6, msg, type_name=".tensorflow.Summary.Audio", oneof_index=0)
    _field(value, "tensor", 8, msg, type_name=".tensorflow.TensorProto", oneof_index=0)
    _field(m, "value", 1, msg, rep, type_name=".tensorflow.Summary.Value")
    # util/event.proto
    m = fdp.message_type.add(name="LogMessage")
    _field(m, "level", 1, _F.TYPE_INT32)
    _field(m, "message", 2, _F.TYPE_STRING)
    m = fdp.message_type.add(name="SessionLog")
    _field(m, "status", 1, _F.TYPE_INT32)
    _field(m, "checkpoint_path", 2, _F.TYPE_STRING)
    _field(m, "msg", 3, _F.TYPE_STRING)
    m = fdp.message_type.add(name="TaggedRunMetadata")
    _field(m, "tag", 1, _F.TYPE_STRING)
    _field(m, "run_metadata", 2, _F.TYPE_BYTES)
    m = fdp.message_type.add(name="Event")
    m.oneof_decl.add(name="what")
    _field(m, "wall_time", 1, _F.TYPE_DOUBLE)
    _field(m, "step", 2, _F.TYPE_INT64)
    _field(m, "file_version", 3, _F.TYPE_STRING, oneof_index=0)
    _field(m, "graph_def", 4, _F.TYPE_BYTES, oneof_index=0)
    _field(m, "summary", 5, msg, type_name=".tensorflow.Summary", oneof_index=0)
    _field(m, "log_message", 6, msg, type_name=".tensorflow.LogMessage", oneof_index=0)
    _field(m, "session_log", 7, msg, type_name=".tensorflow.SessionLog", oneof_index=0)
    _field(m, "tagged_run_metadata", 8, msg, type_name=".tensorflow.TaggedRunMetadata",
           oneof_index=0)
    _field(m, "meta_graph_def", 9, _F.TYPE_BYTES, oneof_index=0)
    return fdp


_classes = _message_classes(_file_descriptor_proto(), _FILE_NAME)

TensorShapeProto = _classes["TensorShapeProto"]
TensorProto = _classes["TensorProto"]
SummaryDescription = _classes["SummaryDescription"]
HistogramProto = _classes["HistogramProto"]
SummaryMetadata = _classes["SummaryMetadata"]
Summary = _classes["Summary"]
LogMessage = _classes["LogMessage"]
SessionLog = _classes["SessionLog"]
TaggedRunMetadata = _classes["TaggedRunMetadata"]
Event = _classes["Event"]

# SessionLog.SessionStatus and LogMessage.Level (enums in TF; plain ints here).
SessionLog.STATUS_UNSPECIFIED, SessionLog.START, SessionLog.STOP, SessionLog.CHECKPOINT = 0, 1, 2, 3
LogMessage.UNKNOWN, LogMessage.DEBUGGING, LogMessage.INFO = 0, 10, 20
LogMessage.WARN, LogMessage.ERROR, LogMessage.FATAL = 30, 40, 50


def summary_iterator(path):
    """Yields the Event messages of the event file `path`, in order (the first is the
    file_version record). DataLossError names the file and offset of a damaged record."""
    for record in read_records(path, None, "summary_iterator"):
        yield Event.FromString(record)


__all__ = ["Event", "HistogramProto", "LogMessage", "SessionLog", "Summary",
           "SummaryDescription", "SummaryMetadata", "TaggedRunMetadata", "TensorProto",
           "TensorShapeProto", "summary_iterator"]
