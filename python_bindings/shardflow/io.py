"""tf.io: file helpers (gfile, write_graph: shardflow.graph_io; read_file, write_file,
matching_files, decode_csv: shardflow.string_ops), TFRecord files
(shardflow/tfrecord.py), tf.train.Example parsing and serialize_tensor / parse_tensor
(shardflow/parsing_ops.py), tf.train.SequenceExample parsing (shardflow/parsing_sequence.py),
serialize_sparse / serialize_many_sparse / deserialize_many_sparse (shardflow/sparse_ops.py)
and FIFOQueue (shardflow/queue_ops.py), as TF 1.15's tf.io."""

from shardflow.graph_io import gfile, read_graph, write_graph  # noqa: F401

from shardflow.string_ops import (decode_csv, matching_files, read_file,  # noqa: F401
                                  write_file)
from shardflow.parsing_ops import (FixedLenFeature, FixedLenSequenceFeature,  # noqa: F401
                                   VarLenFeature, decode_raw, parse_example,
                                   parse_single_example, parse_tensor, serialize_tensor)
from shardflow.parsing_sequence import (parse_sequence_example,  # noqa: F401
                                        parse_single_sequence_example)
from shardflow.queue_ops import FIFOQueue  # noqa: F401
from shardflow.sparse_ops import (deserialize_many_sparse, serialize_many_sparse,  # noqa: F401
                                  serialize_sparse)
from shardflow.tfrecord import (TFRecordCompressionType, TFRecordOptions,  # noqa: F401
                                TFRecordWriter, tf_record_iterator)

__all__ = ["FIFOQueue", "FixedLenFeature", "FixedLenSequenceFeature", "TFRecordCompressionType",
           "TFRecordOptions", "TFRecordWriter", "VarLenFeature", "decode_csv", "decode_raw",
           "deserialize_many_sparse", "gfile", "matching_files", "parse_example",
           "parse_sequence_example", "parse_single_example", "parse_single_sequence_example",
           "parse_tensor", "read_file", "read_graph", "serialize_many_sparse",
           "serialize_sparse", "serialize_tensor", "tf_record_iterator", "write_file",
           "write_graph"]
