"""The parts of TF1's tf.contrib that programs reach for most, under their TF1 names:
tf.contrib.rnn (the recurrent cells, LSTMStateTuple, static_rnn, static_bidirectional_rnn and
bidirectional_dynamic_rnn of shardflow.rnn_cell) and tf.contrib.layers' regularizers,
initializers and layer functions (fully_connected, conv2d, max_pool2d, flatten;
shardflow.contrib_layers). Anything else under contrib is refused with the name of what to use
instead."""

from shardflow import contrib_layers as layers  # noqa: F401
from shardflow import rnn_cell as rnn  # noqa: F401


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.%s: contrib was TF1's incubator; shardflow carries only "
        "tf.contrib.rnn (its cells are also sf.nn.rnn_cell) and tf.contrib.layers' "
        "regularizers, initializers, fully_connected, conv2d, max_pool2d and flatten. Use "
        "the core API (sf.layers, sf.losses, sf.train) instead" % name)


__all__ = ["layers", "rnn"]
