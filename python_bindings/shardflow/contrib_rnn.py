"""tf.contrib.rnn: the cells, wrappers and RNN functions of shardflow.rnn_cell (the same
objects as sf.nn.rnn_cell's), and TF1's contrib cells: LayerNormBasicLSTMCell (layer
normalization, Ba et al. 2016), LSTMBlockCell / GRUBlockCell, the convolutional
ConvLSTMCell, and the fused LSTMBlockFusedCell (a whole time-major sequence per call).

Example::

    cell = sf.contrib.rnn.LayerNormBasicLSTMCell(64, dropout_keep_prob=0.9)
    outputs, state = sf.nn.dynamic_rnn(cell, x, dtype=sf.float32)
"""

import numpy as np

from shardflow import array_ops, dtypes, nn, ops, rnn_cell
from shardflow.contrib_layers import layer_norm
from shardflow.rnn_cell import *  # noqa: F401,F403 (tf.contrib.rnn's cells are rnn_cell's)
from shardflow.framework import TensorShape, convert_to_tensor
from shardflow.rnn_cell import BasicLSTMCell, LSTMStateTuple, _depth
from shardflow.variable_scope import (constant_initializer, get_variable, get_variable_scope,
                                      random_uniform_initializer, variable_scope)


class LayerNormBasicLSTMCell(BasicLSTMCell):
    """TF1's tf.contrib.rnn.LayerNormBasicLSTMCell: BasicLSTMCell's gates from
    [x, h] @ kernel (no bias when layer_norm), each of i, j, f, o layer-normalized
    (variables <cell>/input|transform|forget|output/gamma and beta, initialized to norm_gain
    and norm_shift), the new cell state normalized too (<cell>/state/...), and dropout with
    dropout_keep_prob on the candidate j (recurrent dropout without memory loss, Semeniuta
    et al. 2016)."""

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


class LSTMBlockCell(rnn_cell.LSTMCell):
    """TF1's tf.contrib.rnn.LSTMBlockCell (a fused kernel in TF): the same gates as LSTMCell,
    with optional peepholes and cell clipping; variables <scope>/lstm_cell/kernel and bias."""

    def __init__(self, num_units, forget_bias=1.0, cell_clip=None, use_peephole=False,
                 dtype=None, reuse=None, name="lstm_cell"):
        cell_clip = None if cell_clip is None or cell_clip < 0 else cell_clip
        super().__init__(num_units, use_peepholes=use_peephole, cell_clip=cell_clip,
                         forget_bias=forget_bias, reuse=reuse, name=name, dtype=dtype)


class _FusedLSTMStep(rnn_cell.RNNCell):
    """One step of LSTMBlockFusedCell from its variables (made by it, outside the loop)."""

    def __init__(self, kernel, bias, diagonals, forget_bias, cell_clip):
        super().__init__()
        self._kernel, self._bias, self._diagonals = kernel, bias, diagonals
        self._forget_bias, self._cell_clip = forget_bias, cell_clip
        self._units = bias.shape.as_list()[0] // 4

    @property
    def state_size(self):
        return LSTMStateTuple(self._units, self._units)

    @property
    def output_size(self):
        return self._units

    def __call__(self, inputs, state, scope=None):
        c, h = state
        gates = ops.add(ops.matmul(ops.concat([inputs, h], 1), self._kernel), self._bias)
        i, j, f, o = array_ops.split(gates, 4, axis=1)
        f = ops.add(f, self._forget_bias)
        if self._diagonals:
            w_i, w_f, w_o = self._diagonals
            i = ops.add(i, ops.multiply(w_i, c))
            f = ops.add(f, ops.multiply(w_f, c))
        new_c = ops.add(ops.multiply(c, ops.sigmoid(f)),
                        ops.multiply(ops.sigmoid(i), ops.tanh(j)))
        if self._cell_clip is not None:
            new_c = ops.clip_by_value(new_c, -self._cell_clip, self._cell_clip)
        if self._diagonals:
            o = ops.add(o, ops.multiply(self._diagonals[2], new_c))
        new_h = ops.multiply(ops.tanh(new_c), ops.sigmoid(o))
        return new_h, LSTMStateTuple(new_c, new_h)


def _fused_inputs(inputs):
    """(time-major inputs [time, batch, depth], whether they came as a list of steps)."""
    if isinstance(inputs, list):
        return array_ops.stack([convert_to_tensor(x) for x in inputs]), True
    return convert_to_tensor(inputs), False


class LSTMBlockFusedCell:
    """TF1's tf.contrib.rnn.LSTMBlockFusedCell (the fused BlockLSTM kernel in TF): the whole
    sequence in one call, ``outputs, state = cell(inputs, initial_state=None, dtype=None,
    sequence_length=None)`` with time-major inputs [time, batch, depth] (or a list of
    steps); LSTMCell's gates (i, j, f, o), optional peepholes and cell clipping; variables
    <name>/kernel, bias (and w_i_diag, w_f_diag, w_o_diag). Past a sequence's length the
    outputs are zeros and the state is the one at its length, as TF1's.

    Example (DeepSpeech's layer)::

        cell = sf.contrib.rnn.LSTMBlockFusedCell(2048)
        outputs, state = cell(x_time_major, dtype=sf.float32, sequence_length=lengths)
    """

    def __init__(self, num_units, forget_bias=1.0, cell_clip=None, use_peephole=False,
                 reuse=None, dtype=None, name="lstm_fused_cell"):
        self._num_units = int(num_units)
        self._forget_bias = float(forget_bias)
        self._cell_clip = float(cell_clip) if cell_clip is not None and cell_clip > 0 else None
        self._use_peephole = bool(use_peephole)
        self._reuse, self._name, self._scope = reuse, name, None

    @property
    def num_units(self):
        return self._num_units

    def _variables(self, depth, dtype):
        n = self._num_units
        kernel = get_variable("kernel", [depth + n, 4 * n], dtype=dtype)
        bias = get_variable("bias", [4 * n], dtype=dtype, initializer=constant_initializer(0.0))
        diagonals = None
        if self._use_peephole:
            diagonals = tuple(get_variable(name, [n], dtype=dtype)
                              for name in ("w_i_diag", "w_f_diag", "w_o_diag"))
        return kernel, bias, diagonals

    def __call__(self, inputs, initial_state=None, dtype=None, sequence_length=None,
                 scope=None):
        inputs, as_list = _fused_inputs(inputs)
        if initial_state is None and dtype is None:
            raise ValueError("LSTMBlockFusedCell needs initial_state or dtype")
        dtype = dtype or convert_to_tensor(initial_state[0]).dtype
        depth = _depth(inputs, "LSTMBlockFusedCell")
        if self._scope is None:
            opened = (variable_scope(scope) if scope is not None else
                      variable_scope(self._name) if self._reuse else
                      variable_scope(None, default_name=self._name))
        else:
            opened = variable_scope(self._scope, reuse=True)
        with opened as vs:
            self._scope = self._scope or vs
            kernel, bias, diagonals = self._variables(depth, dtype)
            step = _FusedLSTMStep(kernel, bias, diagonals, self._forget_bias, self._cell_clip)
            if initial_state is not None:
                initial_state = LSTMStateTuple(*initial_state)
            outputs, state = rnn_cell.dynamic_rnn(step, inputs, sequence_length,
                                                  initial_state, dtype, time_major=True)
        if as_list:
            outputs = array_ops.unstack(outputs)
        return outputs, state


class TimeReversedFusedRNN:
    """TF1's tf.contrib.rnn.TimeReversedFusedRNN: a fused cell (LSTMBlockFusedCell,
    FusedRNNCellAdaptor) run over each sequence reversed (its first sequence_length steps,
    or the whole time dimension), the outputs reversed back: the backward half of a
    bidirectional layer."""

    def __init__(self, cell):
        self._cell = cell

    def _reverse(self, x, lengths):
        if lengths is None:
            return ops.reverse(x, [0])
        from shardflow.array_composites import reverse_sequence
        return reverse_sequence(x, ops.cast(lengths, dtypes.int64), seq_axis=0, batch_axis=1)

    def __call__(self, inputs, initial_state=None, dtype=None, sequence_length=None,
                 scope=None):
        inputs, as_list = _fused_inputs(inputs)
        outputs, state = self._cell(self._reverse(inputs, sequence_length), initial_state,
                                    dtype, sequence_length, scope)
        outputs = self._reverse(outputs, sequence_length)
        return (array_ops.unstack(outputs) if as_list else outputs), state


class FusedRNNCellAdaptor:
    """TF1's tf.contrib.rnn.FusedRNNCellAdaptor: an RNN cell with the fused cells' call,
    ``outputs, state = adaptor(time-major inputs, initial_state, dtype, sequence_length)``,
    run by dynamic_rnn (use_dynamic_rnn) or static_rnn (scope "rnn" for both)."""

    def __init__(self, cell, use_dynamic_rnn=False):
        self._cell, self._use_dynamic_rnn = cell, use_dynamic_rnn

    def __call__(self, inputs, initial_state=None, dtype=None, sequence_length=None,
                 scope=None):
        if self._use_dynamic_rnn:
            stacked, as_list = _fused_inputs(inputs)
            outputs, state = rnn_cell.dynamic_rnn(self._cell, stacked, sequence_length,
                                                  initial_state, dtype, time_major=True,
                                                  scope=scope)
            return (array_ops.unstack(outputs) if as_list else outputs), state
        as_list = isinstance(inputs, list)
        steps = inputs if as_list else array_ops.unstack(convert_to_tensor(inputs))
        outputs, state = rnn_cell.static_rnn(self._cell, steps, initial_state, dtype,
                                             sequence_length, scope)
        return (outputs if as_list else array_ops.stack(outputs)), state


class GRUBlockCell(rnn_cell.GRUCell):
    """TF1's tf.contrib.rnn.GRUBlockCell: GRUCell's gates, with the variable names of TF1's
    block kernel (under <name>/, default gru_cell): the gates' kernel "w_c" [depth + units,
    2 * units] and bias "b_ru" (initialized to 1), the candidate's kernel "w_ru" [depth +
    units, units] and bias "b_c" (TF1's own swapped names, kept so its checkpoints load)."""

    def __init__(self, num_units=None, cell_size=None, reuse=None, name="gru_cell"):
        if (num_units is None) == (cell_size is None):
            raise ValueError("GRUBlockCell needs exactly one of num_units or cell_size")
        super().__init__(num_units if num_units is not None else cell_size, reuse=reuse,
                         name=name)

    def call(self, inputs, state):
        n = self._num_units
        depth = _depth(inputs, "GRUBlockCell") + n
        dtype = inputs.dtype
        gates_kernel = get_variable("w_c", [depth, 2 * n], dtype=dtype)
        gates_bias = get_variable("b_ru", [2 * n], dtype=dtype,
                                  initializer=constant_initializer(1.0))
        candidate_kernel = get_variable("w_ru", [depth, n], dtype=dtype)
        candidate_bias = get_variable("b_c", [n], dtype=dtype,
                                      initializer=constant_initializer(0.0))
        gates = ops.add(ops.matmul(ops.concat([inputs, state], 1), gates_kernel), gates_bias)
        r, u = array_ops.split(ops.sigmoid(gates), 2, axis=1)
        candidate = ops.tanh(ops.add(ops.matmul(ops.concat([inputs, ops.multiply(r, state)], 1),
                                                candidate_kernel), candidate_bias))
        new_h = ops.add(ops.multiply(u, state), ops.multiply(ops.subtract(1.0, u), candidate))
        return new_h, new_h


class GRUBlockCellV2(GRUBlockCell):
    """TF1's tf.contrib.rnn.GRUBlockCellV2: GRUBlockCell with GRUCell's variable names
    (gates/kernel, gates/bias, candidate/kernel, candidate/bias)."""

    call = rnn_cell.GRUCell.call


class _ScopedWrapper(rnn_cell.RNNCell):
    """TF1's core_rnn_cell wrappers (EmbeddingWrapper, InputProjectionWrapper,
    OutputProjectionWrapper): cells with a variable scope of their own, the wrapped cell's
    variables inside it (<wrapper>/<cell>/kernel, ...); state sizes are the cell's."""

    def __init__(self, cell, reuse):
        super().__init__(_reuse=reuse)
        if not callable(cell) or not hasattr(cell, "zero_state"):
            raise TypeError("%s wraps an RNN cell (output, state = cell(inputs, state)), not %r"
                            % (type(self).__name__, cell))
        self._cell = cell

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)


def _projection(x, units):
    """x @ kernel + bias in the current scope (TF1's _Linear: bias initialized to 0)."""
    depth = _depth(x, "projection")
    kernel = get_variable("kernel", [depth, units], dtype=x.dtype)
    bias = get_variable("bias", [units], dtype=x.dtype, initializer=constant_initializer(0.0))
    return ops.add(ops.matmul(x, kernel), bias)


class OutputProjectionWrapper(_ScopedWrapper):
    """TF1's tf.contrib.rnn.OutputProjectionWrapper: the cell's output projected to
    `output_size` units, then `activation` if given; the state is the cell's. Variables, as
    TF1's: output_projection_wrapper/kernel and bias, the cell's under
    output_projection_wrapper/."""

    def __init__(self, cell, output_size, activation=None, reuse=None):
        super().__init__(cell, reuse)
        if int(output_size) < 1:
            raise ValueError("OutputProjectionWrapper: output_size must be positive, got %r"
                             % (output_size,))
        self._output_size = int(output_size)
        self._proj_activation = activation

    @property
    def output_size(self):
        return self._output_size

    def call(self, inputs, state):
        output, new_state = self._cell(inputs, state)
        projected = _projection(output, self._output_size)
        if self._proj_activation is not None:
            projected = self._proj_activation(projected)
        return projected, new_state


class InputProjectionWrapper(_ScopedWrapper):
    """TF1's tf.contrib.rnn.InputProjectionWrapper: the inputs projected to `num_proj`
    units (then `activation` if given) before the cell (variables
    input_projection_wrapper/kernel and bias)."""

    def __init__(self, cell, num_proj, activation=None, input_size=None, reuse=None):
        super().__init__(cell, reuse)
        self._num_proj = int(num_proj)
        self._proj_activation = activation

    def call(self, inputs, state):
        projected = _projection(inputs, self._num_proj)
        if self._proj_activation is not None:
            projected = self._proj_activation(projected)
        return self._cell(projected, state)


class EmbeddingWrapper(_ScopedWrapper):
    """TF1's tf.contrib.rnn.EmbeddingWrapper: int ids [batch] (or [batch, 1]) looked up in
    embedding_wrapper/embedding [embedding_classes, embedding_size] before the cell; its
    initializer `initializer`, else the scope's, else uniform(-sqrt(3), sqrt(3))."""

    def __init__(self, cell, embedding_classes, embedding_size, initializer=None, reuse=None):
        super().__init__(cell, reuse)
        if embedding_classes <= 0 or embedding_size <= 0:
            raise ValueError("EmbeddingWrapper: embedding_classes and embedding_size must be "
                             "positive, got %d and %d" % (embedding_classes, embedding_size))
        self._classes, self._size = int(embedding_classes), int(embedding_size)
        self._initializer = initializer

    def call(self, inputs, state):
        initializer = self._initializer or get_variable_scope().initializer
        if initializer is None:
            initializer = random_uniform_initializer(-np.sqrt(3.0), np.sqrt(3.0))
        dtype = convert_to_tensor(rnn_cell._flatten(state)[0]).dtype
        embedding = get_variable("embedding", [self._classes, self._size], dtype=dtype,
                                 initializer=initializer)
        embedded = array_ops.gather(embedding, ops.reshape(inputs, [-1]))
        return self._cell(embedded, state)


class ConvLSTMCell(rnn_cell.RNNCell):
    """TF1's tf.contrib.rnn.ConvLSTMCell (Shi et al. 2015) and its Conv1D/2D/3DLSTMCell: an
    LSTM whose gates are a "SAME" convolution of [x, h] (variables kernel, of shape
    kernel_shape + [input channels + output_channels, 4 * output_channels], and biases);
    i, j, f, o split along the channels, c' = sigmoid(f + forget_bias) * c + sigmoid(i) *
    tanh(j), h' = tanh(c') * sigmoid(o) (with skip_connection, h' concatenated with the
    inputs is the output and h). `input_shape` is one step's shape without the batch.

    Example (frames [batch, time, 16, 16, 1])::

        cell = sf.contrib.rnn.ConvLSTMCell(2, [16, 16, 1], 8, [3, 3])
        outputs, state = sf.nn.dynamic_rnn(cell, frames, dtype=sf.float32)
    """

    def __init__(self, conv_ndims, input_shape, output_channels, kernel_shape, use_bias=True,
                 skip_connection=False, forget_bias=1.0, initializers=None,
                 name="conv_lstm_cell"):
        super().__init__(name=name)
        if conv_ndims != len(input_shape) - 1:
            raise ValueError("ConvLSTMCell: input_shape %s must have %d dimensions (conv_ndims "
                             "+ 1 for the channels)" % (list(input_shape), conv_ndims + 1))
        self._conv_ndims = int(conv_ndims)
        self._input_shape = [int(d) for d in input_shape]
        self._output_channels = int(output_channels)
        self._kernel_shape = [int(k) for k in kernel_shape]
        self._use_bias = use_bias
        self._forget_bias = float(forget_bias)
        self._skip_connection = skip_connection
        self._initializer = initializers
        channels = self._output_channels + (self._input_shape[-1] if skip_connection else 0)
        self._state_shape = TensorShape(self._input_shape[:-1] + [self._output_channels])
        self._output_shape = TensorShape(self._input_shape[:-1] + [channels])

    @property
    def output_size(self):
        return self._output_shape

    @property
    def state_size(self):
        return LSTMStateTuple(self._state_shape, self._output_shape)

    def call(self, inputs, state):
        cell, hidden = state
        args = ops.concat([inputs, hidden], self._conv_ndims + 1)
        depth = _depth(args, "ConvLSTMCell")
        kernel = get_variable("kernel", self._kernel_shape + [depth, 4 * self._output_channels],
                              dtype=args.dtype, initializer=self._initializer)
        gates = nn.convolution(args, kernel, padding="SAME")
        if self._use_bias:
            gates = ops.add(gates, get_variable("biases", [4 * self._output_channels],
                                                dtype=args.dtype,
                                                initializer=constant_initializer(0.0)))
        i, j, f, o = array_ops.split(gates, 4, axis=self._conv_ndims + 1)
        new_cell = ops.add(ops.multiply(ops.sigmoid(ops.add(f, self._forget_bias)), cell),
                           ops.multiply(ops.sigmoid(i), ops.tanh(j)))
        output = ops.multiply(ops.tanh(new_cell), ops.sigmoid(o))
        if self._skip_connection:
            output = ops.concat([output, inputs], self._conv_ndims + 1)
        return output, LSTMStateTuple(new_cell, output)


class Conv1DLSTMCell(ConvLSTMCell):
    """TF1's tf.contrib.rnn.Conv1DLSTMCell: ConvLSTMCell(conv_ndims=1, ...)."""

    def __init__(self, name="conv_1d_lstm_cell", **kwargs):
        super().__init__(conv_ndims=1, name=name, **kwargs)


class Conv2DLSTMCell(ConvLSTMCell):
    """TF1's tf.contrib.rnn.Conv2DLSTMCell: ConvLSTMCell(conv_ndims=2, ...)."""

    def __init__(self, name="conv_2d_lstm_cell", **kwargs):
        super().__init__(conv_ndims=2, name=name, **kwargs)


class Conv3DLSTMCell(ConvLSTMCell):
    """TF1's tf.contrib.rnn.Conv3DLSTMCell: ConvLSTMCell(conv_ndims=3, ...)."""

    def __init__(self, name="conv_3d_lstm_cell", **kwargs):
        super().__init__(conv_ndims=3, name=name, **kwargs)


def stack_bidirectional_dynamic_rnn(cells_fw, cells_bw, inputs, initial_states_fw=None,
                                    initial_states_bw=None, dtype=None, sequence_length=None,
                                    parallel_iterations=None, time_major=False, scope=None,
                                    swap_memory=False):
    """TF1's tf.contrib.rnn.stack_bidirectional_dynamic_rnn: layer i is a
    bidirectional_dynamic_rnn of cells_fw[i] and cells_bw[i] (scope
    stack_bidirectional_rnn/cell_<i>) over the previous layer's forward and backward outputs
    concatenated. Returns (outputs [.., 2 * units], forward states, backward states)."""
    if not cells_fw or len(cells_fw) != len(cells_bw):
        raise ValueError("stack_bidirectional_dynamic_rnn needs as many forward as backward "
                         "cells (at least one), got %d and %d"
                         % (len(cells_fw or []), len(cells_bw or [])))
    for states, what in ((initial_states_fw, "initial_states_fw"),
                         (initial_states_bw, "initial_states_bw")):
        if states is not None and len(states) != len(cells_fw):
            raise ValueError("%s must have one state per cell" % what)
    states_fw, states_bw = [], []
    layer_input = inputs
    with variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            with variable_scope("cell_%d" % i):
                (out_fw, out_bw), (state_fw, state_bw) = rnn_cell.bidirectional_dynamic_rnn(
                    cell_fw, cell_bw, layer_input, sequence_length=sequence_length,
                    initial_state_fw=initial_states_fw[i] if initial_states_fw else None,
                    initial_state_bw=initial_states_bw[i] if initial_states_bw else None,
                    dtype=dtype, time_major=time_major)
                layer_input = ops.concat([out_fw, out_bw], 2)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return layer_input, tuple(states_fw), tuple(states_bw)


def stack_bidirectional_rnn(cells_fw, cells_bw, inputs, initial_states_fw=None,
                            initial_states_bw=None, dtype=None, sequence_length=None,
                            scope=None):
    """TF1's tf.contrib.rnn.stack_bidirectional_rnn: stack_bidirectional_dynamic_rnn over a
    Python list of [batch, depth] steps, each layer a static_bidirectional_rnn in scope
    stack_bidirectional_rnn/cell_<i> (variables .../cell_<i>/fw/<cell>/..., as TF1's).
    Returns (the list of outputs, forward states, backward states)."""
    if not cells_fw or len(cells_fw) != len(cells_bw):
        raise ValueError("stack_bidirectional_rnn needs as many forward as backward cells (at "
                         "least one), got %d and %d" % (len(cells_fw or []), len(cells_bw or [])))
    states_fw, states_bw = [], []
    layer = inputs
    with variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            with variable_scope("cell_%d" % i) as cell_scope:
                layer, state_fw, state_bw = rnn_cell.static_bidirectional_rnn(
                    cell_fw, cell_bw, layer,
                    initial_state_fw=initial_states_fw[i] if initial_states_fw else None,
                    initial_state_bw=initial_states_bw[i] if initial_states_bw else None,
                    dtype=dtype, sequence_length=sequence_length, scope=cell_scope)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return layer, tuple(states_fw), tuple(states_bw)


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.rnn.%s; it has %s" % (name, ", ".join(__all__)))


__all__ = sorted(rnn_cell.__all__ + ["Conv1DLSTMCell", "Conv2DLSTMCell", "Conv3DLSTMCell",
                                     "ConvLSTMCell", "EmbeddingWrapper", "FusedRNNCellAdaptor",
                                     "GRUBlockCell", "InputProjectionWrapper",
                                     "GRUBlockCellV2", "LSTMBlockCell", "LSTMBlockFusedCell",
                                     "TimeReversedFusedRNN",
                                     "LayerNormBasicLSTMCell", "OutputProjectionWrapper",
                                     "stack_bidirectional_dynamic_rnn",
                                     "stack_bidirectional_rnn"])
