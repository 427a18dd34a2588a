"""TF1's tf.train.Example and its kin as protobuf message classes with TensorFlow's wire format.

Example::

    ex = sf.train.Example(features=sf.train.Features(feature={
        "x": sf.train.Feature(float_list=sf.train.FloatList(value=[1.0, 2.0])),
        "label": sf.train.Feature(int64_list=sf.train.Int64List(value=[3])),
    }))
    data = ex.SerializeToString()          # the bytes TensorFlow writes for the same message
    sf.train.Example.FromString(data)      # and back

The classes are made when this module is imported, from a FileDescriptorProto built here that
says exactly what tensorflow/core/example/feature.proto and example.proto say (package
"tensorflow", the same message names, field names and numbers, packed float and int64 lists),
so serialized messages are interchangeable with TensorFlow's. They live in a descriptor pool of
their own: importing TensorFlow's generated modules in the same process does not clash.
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto

_FILE_NAME = "shardflow/tensorflow_example.proto"  # not TF's path: the pool is private anyway


def _field(message, name, number, type_, label=_F.LABEL_OPTIONAL, type_name=None,
           packed=False, oneof_index=None):
    field = message.field.add(name=name, number=number, type=type_, label=label)
    field.json_name = "".join(p if i == 0 else p.capitalize()
                              for i, p in enumerate(name.split("_")))
    if type_name is not None:
        field.type_name = type_name
    if packed:
        field.options.packed = True
    if oneof_index is not None:
        field.oneof_index = oneof_index
    return field


def _map_entry(message, entry_name, value_type):
    """A map<string, value_type> entry type nested in `message` (protoc's encoding of maps)."""
    entry = message.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    _field(entry, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    return ".tensorflow.%s.%s" % (message.name, entry_name)


def _file_descriptor_proto():
    fdp = descriptor_pb2.FileDescriptorProto(name=_FILE_NAME, package="tensorflow",
                                             syntax="proto3")
    rep = _F.LABEL_REPEATED
    # feature.proto
    m = fdp.message_type.add(name="BytesList")
    _field(m, "value", 1, _F.TYPE_BYTES, rep)
    m = fdp.message_type.add(name="FloatList")
    _field(m, "value", 1, _F.TYPE_FLOAT, rep, packed=True)
    m = fdp.message_type.add(name="Int64List")
    _field(m, "value", 1, _F.TYPE_INT64, rep, packed=True)
    m = fdp.message_type.add(name="Feature")
    m.oneof_decl.add(name="kind")
    _field(m, "bytes_list", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.BytesList", oneof_index=0)
    _field(m, "float_list", 2, _F.TYPE_MESSAGE, type_name=".tensorflow.FloatList", oneof_index=0)
    _field(m, "int64_list", 3, _F.TYPE_MESSAGE, type_name=".tensorflow.Int64List", oneof_index=0)
    m = fdp.message_type.add(name="Features")
    _field(m, "feature", 1, _F.TYPE_MESSAGE, rep,
           type_name=_map_entry(m, "FeatureEntry", ".tensorflow.Feature"))
    m = fdp.message_type.add(name="FeatureList")
    _field(m, "feature", 1, _F.TYPE_MESSAGE, rep, type_name=".tensorflow.Feature")
    m = fdp.message_type.add(name="FeatureLists")
    _field(m, "feature_list", 1, _F.TYPE_MESSAGE, rep,
           type_name=_map_entry(m, "FeatureListEntry", ".tensorflow.FeatureList"))
    # example.proto
    m = fdp.message_type.add(name="Example")
    _field(m, "features", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    m = fdp.message_type.add(name="SequenceExample")
    _field(m, "context", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    _field(m, "feature_lists", 2, _F.TYPE_MESSAGE, type_name=".tensorflow.FeatureLists")
    return fdp


def _message_classes(fdp=None, file_name=_FILE_NAME):
    """{name: message class} for the messages of a FileDescriptorProto, in a pool of their own
    (so TensorFlow's classes in the same process do not clash); nested messages become class
    attributes (Summary.Value). Also used by summary_pb.py."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile((fdp or _file_descriptor_proto()).SerializeToString())
    file_desc = pool.FindFileByName(file_name)
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
        get_class = message_factory.GetMessageClass
    else:
        get_class = message_factory.MessageFactory(pool).GetPrototype
    classes = {}
    for name, desc in file_desc.message_types_by_name.items():
        cls = classes[name] = get_class(desc)
        for nested_name, nested in desc.nested_types_by_name.items():
            if not hasattr(cls, nested_name):
                setattr(cls, nested_name, get_class(nested))
    return classes


_classes = _message_classes()

BytesList = _classes["BytesList"]
FloatList = _classes["FloatList"]
Int64List = _classes["Int64List"]
Feature = _classes["Feature"]
Features = _classes["Features"]
FeatureList = _classes["FeatureList"]
FeatureLists = _classes["FeatureLists"]
Example = _classes["Example"]
SequenceExample = _classes["SequenceExample"]

__all__ = ["BytesList", "Example", "Feature", "FeatureList", "FeatureLists", "Features",
           "FloatList", "Int64List", "SequenceExample"]
