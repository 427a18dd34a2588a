"""The parts of TF1's tf.contrib that programs reach for most, under their TF1 names:
tf.contrib.rnn (the recurrent cells, LSTMStateTuple, static_rnn, static_bidirectional_rnn and
bidirectional_dynamic_rnn of shardflow.rnn_cell, and LayerNormBasicLSTMCell;
shardflow.contrib_rnn), tf.contrib.layers' regularizers, initializers and layer functions
(fully_connected, conv2d, conv2d_transpose, separable_conv2d, max_pool2d, avg_pool2d,
flatten, layer_norm, batch_norm, embed_sequence, dropout, repeat, stack, ...;
shardflow.contrib_layers), tf.contrib.framework (arg_scope, the global step,
get_variables; shardflow.contrib_framework), tf.contrib.training.HParams
(shardflow.contrib_training), tf.contrib.opt's AdamWOptimizer and MomentumWOptimizer
(shardflow.contrib_opt), tf.contrib.util (shardflow.tensor_util), tf.contrib.seq2seq's
sequence_loss and basic decoding (shardflow.contrib_seq2seq) and tf.contrib.lookup's tables
(HashTable, index_table_from_tensor/_file, index_to_string_table_from_tensor/_file, ...;
shardflow.lookup_ops), tf.contrib.crf's linear-chain CRF (crf_log_likelihood, crf_decode,
viterbi_decode, ...; shardflow.contrib_crf), tf.contrib.slim (shardflow.contrib_slim) and
tf.contrib.distribute's strategies (shardflow.contrib_distribute), tf.contrib.cluster_resolver
(shardflow.distribute.cluster_resolver), tf.contrib.learn.datasets.mnist
(shardflow.contrib_learn).
Anything else under contrib is refused with the name of what to use instead."""

from shardflow import contrib_crf as crf  # noqa: F401
from shardflow.distribute import cluster_resolver  # noqa: F401
from shardflow.data import experimental as data  # noqa: F401 (tf.contrib.data)
from shardflow import contrib_distribute as distribute  # noqa: F401
from shardflow import distributions  # noqa: F401 (tf.contrib.distributions' core)
from shardflow import contrib_framework as framework  # noqa: F401
from shardflow import contrib_layers as layers  # noqa: F401
from shardflow import contrib_learn as learn  # noqa: F401
from shardflow import contrib_legacy_seq2seq as legacy_seq2seq  # noqa: F401
from shardflow import contrib_metrics as metrics  # noqa: F401
from shardflow.lookup_ops import contrib_lookup as lookup  # noqa: F401
from shardflow import contrib_opt as opt  # noqa: F401
from shardflow import contrib_predictor as predictor  # noqa: F401
from shardflow import contrib_rnn as rnn  # noqa: F401
from shardflow import contrib_seq2seq as seq2seq  # noqa: F401
from shardflow import contrib_slim as slim  # noqa: F401
from shardflow import contrib_training as training  # noqa: F401
from shardflow import tensor_util as util  # noqa: F401  (tf.contrib.util.constant_value)
from shardflow.namespaces import _namespace as _ns
from shardflow import loss_scale as _loss_scale
losses = slim.losses   # TF1's tf.contrib.losses: predictions or logits first (slim.losses)
from shardflow import image_resize as _image_resize
from shardflow import ops as _ops

mixed_precision = _ns("shardflow.contrib.mixed_precision", "TF1's tf.contrib.mixed_precision: "
                      "loss scaling for float16 training (shardflow/loss_scale.py).",
                      ["LossScaleOptimizer", "LossScaleManager", "FixedLossScaleManager",
                       "ExponentialUpdateLossScaleManager"], [_loss_scale])

image = _ns("shardflow.contrib.image", "TF1's tf.contrib.image: projective transforms of "
            "images (shardflow/image_resize.py).",
            ["transform", "rotate", "translate", "angles_to_projective_transforms",
             "dense_image_warp"], [_image_resize])

stateless = _ns("shardflow.contrib.stateless", "TF1's tf.contrib.stateless: random numbers "
                "that are a function of a seed.",
                ["stateless_random_uniform", "stateless_random_normal",
                 "stateless_truncated_normal"], [_ops])


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.%s: contrib was TF1's incubator; shardflow carries only "
        "tf.contrib.rnn (its cells are also sf.nn.rnn_cell), tf.contrib.layers (regularizers, "
        "initializers, fully_connected, conv2d, max_pool2d, flatten, layer_norm, batch_norm, "
        "embed_sequence, dropout), tf.contrib.framework (arg_scope, global step, "
        "get_variables), tf.contrib.training.HParams, tf.contrib.opt.AdamWOptimizer and "
        "tf.contrib.util (constant_value, make_ndarray, make_tensor_proto), "
        "tf.contrib.seq2seq (sequence_loss, BasicDecoder, TrainingHelper, "
        "GreedyEmbeddingHelper, BeamSearchDecoder, attention, dynamic_decode), "
        "tf.contrib.lookup (HashTable, index_table_from_tensor/_file, ...), "
        "tf.contrib.crf (crf_log_likelihood, crf_decode, viterbi_decode, ...), "
        "tf.contrib.distributions (Normal, Categorical, Bernoulli, Uniform, Independent, "
        "MultivariateNormalDiag, kl_divergence), "
        "tf.contrib.metrics (streaming_*), tf.contrib.opt.LazyAdamOptimizer, "
        "tf.contrib.data (tf.data.experimental's transformations), "
        "tf.contrib.slim (layers, arg_scope, losses, learning.create_train_op/train, "
        "get_variables_to_restore, assign_from_checkpoint_fn, evaluation.evaluate_once), "
        "tf.contrib.distribute (MirroredStrategy, OneDeviceStrategy, "
        "CollectiveAllReduceStrategy, ParameterServerStrategy), tf.contrib.cluster_resolver, "
        "tf.contrib.learn.datasets.mnist (read_data_sets), tf.contrib.stateless, "
        "tf.contrib.image (transform, rotate, translate, dense_image_warp), "
        "tf.contrib.mixed_precision, tf.contrib.losses (predictions first, as slim.losses), "
        "tf.contrib.legacy_seq2seq "
        "(sequence_loss(_by_example), rnn_decoder). Use "
        "the core API (sf.layers, sf.losses, sf.train) instead" % name)


__all__ = ["cluster_resolver", "crf", "data", "distribute", "distributions", "framework",
           "image", "layers", "learn", "legacy_seq2seq", "lookup", "losses", "metrics",
           "mixed_precision", "opt", "predictor", "rnn",
           "seq2seq", "slim", "stateless", "training", "util"]
