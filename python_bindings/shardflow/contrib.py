"""The parts of TF1's tf.contrib that programs reach for most, under their TF1 names:
tf.contrib.rnn (the recurrent cells and LSTMStateTuple of shardflow.rnn_cell) and
tf.contrib.layers' regularizers and initializers (shardflow.contrib_layers). Anything else
under contrib is refused with the name of what to use instead."""

from shardflow import contrib_layers as layers  # noqa: F401
from shardflow import rnn_cell as rnn  # noqa: F401


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.%s: contrib was TF1's incubator; shardflow carries only "
        "tf.contrib.rnn (its cells are also sf.nn.rnn_cell) and tf.contrib.layers' "
        "regularizers and initializers. Use the core API (sf.layers, sf.losses, sf.train) "
        "instead" % name)


__all__ = ["layers", "rnn"]
