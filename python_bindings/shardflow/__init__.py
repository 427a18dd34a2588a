"""shardflow: build dataflow graphs in Python, place them on devices, run, train and profile.

Example::

    import numpy as np
    import shardflow as sf

    g = sf.Graph()
    with g.as_default():
        x = sf.placeholder(sf.float32, [None, 3], name="x")
        w = sf.Variable(np.ones((3, 1), np.float32), name="w")
        y = sf.reduce_sum(x @ w)
        train = sf.train.GradientDescentOptimizer(0.1).minimize(y)
        init = sf.global_variables_initializer()
    with sf.Session(graph=g) as sess:
        sess.run(init)
        print(sess.run(y, {x: np.ones((2, 3), np.float32)}))    # 6.0

See docs/python.md for the whole API.
"""

from shardflow import _shardflow  # noqa: F401 (the C++ engine)
from shardflow import (applications, collective_ops, datasets, distribute,  # noqa: F401
                       errors, graph_util, layers, losses, nn, profiler, summary, train)
from shardflow.dtypes import (DType, as_dtype, bfloat16, bool_, double, float16,  # noqa: F401
                              float32, float64, half, int8, int32, int64, string, uint8)
from shardflow.device_spec import DeviceSpec  # noqa: F401
from shardflow.framework import (Dimension, Graph, GraphKeys,  # noqa: F401
                                 Operation, Tensor, TensorShape, add_to_collection,
                                 add_to_collections, control_dependencies, convert_to_tensor,
                                 device, get_collection, get_default_graph, get_name_scope,
                                 name_scope, register_tensor_conversion_function,
                                 reset_default_graph)
from shardflow.gradients import (  # noqa: F401
    AggregationMethod, NoGradient, NotDifferentiable, RegisterGradient, UnconnectedGradients,
    custom_gradient, gradients, no_gradient)
from shardflow.control_flow import case, cond, while_loop  # noqa: F401
from shardflow.array_ops import (argmin, batch_gather, boolean_mask, gather, gather_nd,  # noqa: F401,A004
                                 one_hot, pad,
                                 range, scatter_nd,
                                 reduce_all,
                                 reduce_any, split, stack, tile, unstack, where,
                                 where_v2)
from shardflow.ops import *  # noqa: F401,F403
from shardflow.strided_slice import strided_slice  # noqa: F401
from shardflow.ops import abs, pow, slice  # noqa: F401,A004 (shadow builtins, as in TF)
from shardflow.session import (ConfigProto, InteractiveSession, RunMetadata,  # noqa: F401
                               RunOptions, Session, get_default_session,
                               GPUOptions, GraphOptions, OptimizerOptions, RewriterConfig)
from shardflow.variables import (Initializer, Variable, global_variables,  # noqa: F401
                                 global_variables_initializer, initializers,
                                 initialize_all_variables, initialize_variables, all_variables,
                                 local_variables, local_variables_initializer,
                                 tables_initializer, trainable_variables,
                                 variables_initializer)

from shardflow.variable_scope import (AUTO_REUSE, VariableScope,  # noqa: F401
                                      constant_initializer, get_variable, get_variable_scope,
                                      glorot_normal_initializer, glorot_uniform_initializer,
                                      ones_initializer, random_normal_initializer,
                                      random_uniform_initializer, truncated_normal_initializer,
                                      variable_scope, variance_scaling_initializer,
                                      zeros_initializer)
from shardflow.partitioned_variables import (PartitionedVariable,  # noqa: F401
                                             create_partitioned_variables,
                                             fixed_size_partitioner,
                                             min_max_variable_partitioner,
                                             variable_axis_size_partitioner)

from shardflow.graph_io import gfile, import_graph_def  # noqa: F401
from shardflow import graph_io as _graph_io
from shardflow import contrib, io, metrics  # noqa: F401  (sf.contrib.rnn, sf.io.gfile, ...)
from shardflow import mixed_precision  # noqa: F401  (tf.compat.v1.mixed_precision)
from shardflow import data  # noqa: F401  (tf.data: Dataset, Iterator)
from shardflow import python  # noqa: F401  (tf.python.client.timeline)
from shardflow.tensor_util import (get_static_value, make_ndarray,  # noqa: F401
                                   make_tensor_proto)
from shardflow.math_composites import (betainc, igamma, igammac,  # noqa: F401
                                       count_nonzero, div, div_no_nan, divide,
                                       eye, lbeta, lin_space, linspace, log_sigmoid, norm, rank,
                                       realdiv, reduce_logsumexp, shape, size, to_double,
                                       to_float, to_int32, to_int64, truncatediv, truncatemod)
from shardflow.array_composites import (broadcast_to, meshgrid, multinomial,  # noqa: F401
                                        random_crop, reverse_sequence, sequence_mask)
from shardflow.array_composites import print_v2 as print  # noqa: F401,A001 (tf.print)
from shardflow.contractions import einsum, tensordot  # noqa: F401
from shardflow.functional_ops import foldl, foldr, map_fn, scan  # noqa: F401
from shardflow import image  # noqa: F401  (tf.image)
from shardflow.variable_scope import orthogonal_initializer  # noqa: F401
from shardflow.check_ops import *  # noqa: F401,F403 (assert_equal, assert_positive, Assert, ...)
from shardflow.moving_averages import moving_average_variables  # noqa: F401
from shardflow.script_ops import numpy_function, py_func, timestamp  # noqa: F401 (tf.py_func)
from shardflow.state_composites import *  # noqa: F401,F403,A004 (tf.assign, tf.scatter_add, ...)
from shardflow import saved_model  # noqa: F401 (tf.saved_model)
from shardflow.queue_ops import *  # noqa: F401,F403 (tf.FIFOQueue, tf.TextLineReader, ...)
from shardflow.matrix_composites import *  # noqa: F401,F403 (matrix_band_part, ...)
from shardflow.patch_ops import *  # noqa: F401,F403 (extract_image_patches, setdiff1d, ...)
from shardflow.linalg_ops import *  # noqa: F401,F403 (matrix_inverse, cholesky, svd, ...)
from shardflow.string_ops import *  # noqa: F401,F403 (decode_csv, tf.strings, ...)
from shardflow.lookup_ops import lookup  # noqa: F401 (tf.lookup; tf.contrib.lookup)
from shardflow import distributions  # noqa: F401 (tf.distributions; tf.contrib.distributions)
from shardflow.sparse_tensor import (SparseTensor, SparseTensorValue,  # noqa: F401
                                     sparse_placeholder)
from shardflow.ctc_ops import edit_distance  # noqa: F401 (tf.edit_distance)
from shardflow.sparse_ops import (sparse, sparse_add, sparse_reduce_sum,  # noqa: F401
                                  sparse_reorder,
                                  sparse_reshape, sparse_retain, sparse_tensor_dense_matmul,
                                  sparse_tensor_to_dense, sparse_to_dense, sparse_transpose)
from shardflow.sparse_ops import (sparse_concat, sparse_fill_empty_rows,  # noqa: F401
                                  sparse_slice, sparse_maximum, sparse_merge, sparse_minimum,
                                  sparse_reduce_max, sparse_softmax, sparse_split,
                                  sparse_to_indicator, sparse_mask, sparse_reduce_max_sparse,
                                  sparse_reduce_sum_sparse, sparse_reset_shape,
                                  serialize_sparse, serialize_many_sparse,
                                  deserialize_many_sparse)
from shardflow import estimator, feature_column  # noqa: F401 (tf.estimator, tf.feature_column)
from shardflow import keras  # noqa: F401 (tf.keras)
from shardflow.tensor_array import TensorArray  # noqa: F401
newaxis = None  # tf.newaxis: x[:, sf.newaxis] adds a dimension
from shardflow import testing as test  # noqa: F401 (tf.test)
from shardflow.extra_namespaces import debugging, sysconfig  # noqa: F401
from shardflow.device_config import config  # noqa: F401 (tf.config.experimental)
from shardflow import tfrecord as python_io  # noqa: F401 (tf.python_io: TFRecordWriter, ...)
from shardflow.parsing_ops import (FixedLenFeature, FixedLenSequenceFeature,  # noqa: F401
                                   VarLenFeature, decode_raw, parse_example,
                                   parse_single_example)
from shardflow.parsing_ops import parse_tensor, serialize_tensor  # noqa: F401
from shardflow.parsing_sequence import parse_single_sequence_example  # noqa: F401
from shardflow.segment_ops import (bincount, confusion_matrix, dynamic_partition,  # noqa: F401
                                   dynamic_stitch, histogram_fixed_width, segment_max,
                                   segment_mean, segment_min, segment_prod, segment_sum,
                                   sparse_segment_mean, sparse_segment_sqrt_n,
                                   sparse_segment_sum, unique,
                                   unsorted_segment_max, unsorted_segment_mean,
                                   unsorted_segment_min, unsorted_segment_prod,
                                   unsorted_segment_sqrt_n, unsorted_segment_sum)
from shardflow import app, flags, tf_logging as logging  # noqa: F401 (tf.app, tf.flags, tf.logging)
from shardflow.namespaces import (compat, disable_eager_execution,  # noqa: F401,A004
                                  disable_v2_behavior, enable_eager_execution,
                                  executing_eagerly, linalg, math, random, bitwise)
# TF 1.15 core names composed from the engine's ops (core_extras.py), tf.nest and tf.sets.
from shardflow.core_extras import *  # noqa: F401,F403,E402 (sort, roll, IndexedSlices, ...)
from shardflow import nest  # noqa: F401,E402 (tf.nest; also tf.contrib.framework.nest)
from shardflow import sets_ops as sets  # noqa: F401,E402 (tf.sets)
# More TF 1.15 core names: old spellings, ensure_shape, repeat, tensor_scatter_*, tf.function.
from shardflow.compat_names import *  # noqa: F401,F403,E402
from shardflow.core_extras import _attach_to_namespaces  # noqa: E402
_attach_to_namespaces()  # tf.initializers.lecun_normal & co., contrib.framework.nest
from shardflow.compat_names import _attach_aliases  # noqa: E402
_attach_aliases()  # tf.nn.max_pool2d, tf.train.checkpoints_iterator, tf.data.Options, ...
# TensorBoard's protobuf messages under TF1's top-level names (tf.Summary, tf.Event, ...).
from shardflow.summary_pb import (Event, HistogramProto, LogMessage, SessionLog,  # noqa: F401
                                  Summary, SummaryMetadata)

bool = bool_  # noqa: A001 (sf.bool, as in TF)
__version__ = "0.1.0"

# TF1's tf.VERSION & co. and the tf.version module that holds them (extra_namespaces.py).
from shardflow.extra_namespaces import _make_version  # noqa: E402
version = _make_version(__version__)
VERSION = version.VERSION
GIT_VERSION = version.GIT_VERSION
COMPILER_VERSION = version.COMPILER_VERSION
GRAPH_DEF_VERSION = version.GRAPH_DEF_VERSION
GRAPH_DEF_VERSION_MIN_CONSUMER = version.GRAPH_DEF_VERSION_MIN_CONSUMER
GRAPH_DEF_VERSION_MIN_PRODUCER = version.GRAPH_DEF_VERSION_MIN_PRODUCER


def __getattr__(name):
    # sf.GraphDef and the other protobuf messages load python3-protobuf on first use only.
    if name in ("GraphDef", "NodeDef", "AttrValue", "TensorProto", "GraphFunction"):
        return getattr(_graph_io, name)
    raise AttributeError("module 'shardflow' has no attribute '%s'" % name)
