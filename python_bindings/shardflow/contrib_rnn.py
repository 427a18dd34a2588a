"""tf.contrib.rnn: the cells, wrappers and RNN functions of shardflow.rnn_cell (the same
objects as sf.nn.rnn_cell's), and LayerNormBasicLSTMCell, TF1's contrib LSTM with layer
normalization (Ba et al. 2016).

Example::

    cell = sf.contrib.rnn.LayerNormBasicLSTMCell(64, dropout_keep_prob=0.9)
    outputs, state = sf.nn.dynamic_rnn(cell, x, dtype=sf.float32)
"""

from shardflow import array_ops, nn, ops, rnn_cell
from shardflow.contrib_layers import layer_norm
from shardflow.rnn_cell import *  # noqa: F401,F403 (tf.contrib.rnn's cells are rnn_cell's)
from shardflow.rnn_cell import BasicLSTMCell, LSTMStateTuple, _depth
from shardflow.variable_scope import constant_initializer, get_variable, variable_scope


class LayerNormBasicLSTMCell(BasicLSTMCell):
    """TF1's tf.contrib.rnn.LayerNormBasicLSTMCell: BasicLSTMCell's gates from
    [x, h] @ kernel (no bias when layer_norm), each of i, j, f, o layer-normalized
    (variables <cell>/input|transform|forget|output/gamma and beta, initialized to norm_gain
    and norm_shift), the new cell state normalized too (<cell>/state/...), and dropout with
    dropout_keep_prob on the candidate j (recurrent dropout without memory loss, Semeniuta
    et al. 2016)."""

    _default_name = "layer_norm_basic_lstm_cell"

    def __init__(self, num_units, forget_bias=1.0, input_size=None, activation=None,
                 layer_norm=True, norm_gain=1.0, norm_shift=0.0, dropout_keep_prob=1.0,
                 dropout_prob_seed=None, reuse=None):
        super().__init__(num_units, forget_bias=forget_bias, activation=activation,
                         reuse=reuse)
        self._layer_norm = bool(layer_norm)
        self._norm_gain = float(norm_gain)
        self._norm_shift = float(norm_shift)
        self._keep_prob = dropout_keep_prob
        self._seed = dropout_prob_seed

    def _norm(self, x, scope):
        depth = _depth(x, "LayerNormBasicLSTMCell")
        with variable_scope(scope):
            get_variable("gamma", [depth], dtype=x.dtype,
                         initializer=constant_initializer(self._norm_gain))
            get_variable("beta", [depth], dtype=x.dtype,
                         initializer=constant_initializer(self._norm_shift))
        return layer_norm(x, reuse=True, scope=scope)

    def call(self, inputs, state):
        c, h = state
        args = ops.concat([inputs, h], 1)
        kernel = get_variable("kernel", [_depth(args, "LayerNormBasicLSTMCell"),
                                         4 * self._num_units], dtype=args.dtype)
        gates = ops.matmul(args, kernel)
        if not self._layer_norm:
            gates = ops.add(gates, get_variable("bias", [4 * self._num_units],
                                                dtype=args.dtype))
        i, j, f, o = array_ops.split(gates, 4, axis=1)
        if self._layer_norm:
            i = self._norm(i, "input")
            j = self._norm(j, "transform")
            f = self._norm(f, "forget")
            o = self._norm(o, "output")
        candidate = self._activation(j)
        if not isinstance(self._keep_prob, (int, float)) or self._keep_prob < 1:
            candidate = nn.dropout(candidate, self._keep_prob, seed=self._seed)
        new_c = ops.add(ops.multiply(c, ops.sigmoid(ops.add(f, self._forget_bias))),
                        ops.multiply(ops.sigmoid(i), candidate))
        if self._layer_norm:
            new_c = self._norm(new_c, "state")
        new_h = ops.multiply(self._activation(new_c), ops.sigmoid(o))
        return new_h, LSTMStateTuple(new_c, new_h)


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.rnn.%s; it has %s" % (name, ", ".join(__all__)))


__all__ = sorted(rnn_cell.__all__ + ["LayerNormBasicLSTMCell"])
