"""Recurrent cells and the functions that run them, as TF1's tf.nn.rnn_cell, tf.nn.dynamic_rnn,
tf.nn.static_rnn, tf.nn.static_bidirectional_rnn and tf.nn.bidirectional_dynamic_rnn, and
the wrappers DropoutWrapper, ResidualWrapper and DeviceWrapper (also tf.contrib.rnn's).

Example (a character model)::

    cell = sf.nn.rnn_cell.BasicLSTMCell(128)
    outputs, state = sf.nn.dynamic_rnn(cell, embedded, dtype=sf.float32)   # [batch, time, 128]

Cells make their variables with get_variable under their own variable scope the first time
they are called (``rnn/basic_lstm_cell/kernel`` and ``.../bias``, TF1's names and layouts, so
checkpoints line up); a cell called again reuses them. dynamic_rnn runs the cell in a
while_loop (one While op; Note [While as a function call] in ops/control_flow_ops.cc): one
iteration per time step, whatever the sequence length, with gradients through time. The
outputs are read from the loop's history of the output variable, so nothing grows per step.
"""

import collections
import re

from shardflow import array_ops, dtypes, ops
from shardflow.control_flow import _build_while, _flatten, _growing_arrays, _pack
from shardflow.framework import convert_to_tensor
from shardflow.variable_scope import (constant_initializer, get_variable, get_variable_scope,
                                      variable_scope, zeros_initializer)


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: the cell state c and the output h."""

    @property
    def dtype(self):
        return self.c.dtype


def _size_dims(size):
    """A state or output size as its dimensions: 5 -> [5]; TensorShape([4, 4, 8]) -> [4, 4, 8]."""
    if isinstance(size, int):
        return [size]
    dims = size.as_list() if hasattr(size, "as_list") else list(size)
    return [int(d) for d in dims]


def _zeros(batch_size, units, dtype):
    units = _size_dims(units)
    if isinstance(batch_size, int):
        return ops.zeros([batch_size] + units, dtype)
    dims = array_ops.stack([convert_to_tensor(batch_size)] + [convert_to_tensor(u) for u in units])
    # The reshape gives the result its static depth (fill's shape is known only at run time).
    return ops.reshape(ops.fill(dims, ops.cast(0, dtype)), [-1] + units)


def _depth(inputs, what):
    d = inputs.shape.as_list()[-1] if inputs.shape.ndims else None
    if d is None:
        raise ValueError("%s needs the depth of its inputs (their last dimension) to be known"
                         % what)
    return int(d)


def _snake_case(name):
    """A class's name as TF1's layers name their scopes: BasicLSTMCell -> basic_lstm_cell
    (a private class's gets "private": _MyCell -> private__my_cell)."""
    name = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    name = re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()
    return "private" + name if name.startswith("_") else name


class RNNCell:
    """The interface: ``output, new_state = cell(inputs, state)``; state_size, output_size,
    zero_state(batch_size, dtype), get_initial_state.

    A cell of one's own subclasses it as in TF1: ``super().__init__(name=name)`` (or
    ``_reuse=reuse``), the state_size and output_size properties, and ``call(inputs,
    state)``; variables made there with get_variable, or in ``build(inputs_shape)`` with
    self.add_variable / self.add_weight, live in the cell's variable scope (the first call's:
    ``scope`` when given, else `name` or the class's default name, made unique in the
    enclosing scope as TF1's layers: lstm_cell, lstm_cell_1, ...). Later calls reuse them.
    A cell that overrides __call__ itself (TF 1.0's style) makes its variables as it likes;
    dynamic_rnn and static_rnn reuse them after the first step, as TF1's."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        if isinstance(trainable, int) and not isinstance(trainable, bool):
            # shardflow's Keras cells (keras/recurrent_math.py) pass num_units first.
            self._init_units(trainable, None, kwargs.pop("_reuse", None), name)
            return
        self._reuse = kwargs.pop("_reuse", None)
        self._name = name
        self._scope = None
        self.trainable = trainable
        self.built = False

    def _init_units(self, num_units, activation, reuse, name):
        """The constructor of the cells with `num_units` (BasicRNNCell, LSTMCell, ...)."""
        RNNCell.__init__(self, True, name, _reuse=reuse)
        self._num_units = int(num_units)
        self._activation = activation or ops.tanh

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def zero_state(self, batch_size, dtype):
        size = self.state_size
        if isinstance(size, tuple):
            return type(size)(*[_zeros(batch_size, s, dtype) for s in size]) \
                if hasattr(size, "_fields") else tuple(_zeros(batch_size, s, dtype) for s in size)
        return _zeros(batch_size, size, dtype)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """zero_state, its batch size and dtype taken from `inputs` when given (TF 1.15's)."""
        if inputs is not None:
            inputs = convert_to_tensor(inputs)
            batch_size = inputs.shape.as_list()[0] if inputs.shape.ndims else None
            if batch_size is None:
                batch_size = ops.shape(inputs)[0]
            dtype = dtype or inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError("get_initial_state needs inputs, or batch_size and dtype")
        return self.zero_state(batch_size, dtype)

    def build(self, inputs_shape):
        """Makes the cell's variables (add_variable) before its first call; by default none:
        the built-in cells make theirs in call with get_variable."""

    def add_variable(self, name, shape=None, dtype=None, initializer=None, regularizer=None,
                     trainable=None, **kwargs):
        """get_variable `name` in the cell's scope (call it from build or call)."""
        return get_variable(name, shape, dtype=dtype or getattr(self, "_dtype_hint", None),
                            initializer=initializer, regularizer=regularizer,
                            trainable=getattr(self, "trainable", True) if trainable is None
                            else trainable)

    add_weight = add_variable

    @property
    def variables(self):
        """The variables made in the cell's scope (empty before its first call)."""
        scope = getattr(self, "_scope", None)
        if scope is None:
            return []
        from shardflow.variables import global_variables
        prefix = scope.name + "/"
        return [v for v in global_variables() if v.name.startswith(prefix)]

    @property
    def trainable_variables(self):
        return [v for v in self.variables if v.trainable]

    trainable_weights = trainable_variables

    def _build_and_call(self, inputs, state):
        if not getattr(self, "built", False):
            flat = _flatten(inputs)
            self._dtype_hint = flat[0].dtype if flat else None
            self.build(_pack(inputs, [x.shape for x in flat]))
            self.built = True
        return self.call(inputs, state)

    def __call__(self, inputs, state, scope=None):
        # The first call fixes the scope; later calls (every time step) reuse its variables.
        # Nested inputs (a tuple of tensors) stay nested, as TF1's.
        inputs = _pack(inputs, [convert_to_tensor(x) for x in _flatten(inputs)])
        if getattr(self, "_scope", None) is None:
            name = getattr(self, "_name", None)
            if scope is not None:
                opened = variable_scope(scope)
            elif getattr(self, "_reuse", None):
                # reuse=True (or AUTO_REUSE): the variables of that name, as TF1's layers.
                opened = variable_scope(name or _snake_case(type(self).__name__),
                                        reuse=self._reuse)
            else:
                opened = variable_scope(None, default_name=name or _snake_case(type(self).__name__))
            with opened as vs:
                self._scope = vs
                return self._build_and_call(inputs, state)
        with variable_scope(self._scope, reuse=True):
            return self._build_and_call(inputs, state)

    def _linear(self, args, units, bias_start=0.0):
        """concat(args) @ kernel + bias, with TF1's variable names (the cell's
        kernel_initializer / bias_initializer when it has them)."""
        x = ops.concat(list(args), 1) if len(args) > 1 else args[0]
        depth = sum(_depth(a, type(self).__name__) for a in args)
        kernel = get_variable("kernel", [depth, units], dtype=x.dtype,
                              initializer=getattr(self, "_kernel_initializer", None))
        bias_init = getattr(self, "_bias_initializer", None)
        if bias_init is None:
            bias_init = constant_initializer(bias_start) if bias_start else zeros_initializer()
        bias = get_variable("bias", [units], dtype=x.dtype, initializer=bias_init)
        return ops.add(ops.matmul(x, kernel), bias)

class BasicRNNCell(RNNCell):
    """h' = activation(W [x, h] + b)."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None):
        self._init_units(num_units, activation, reuse, name)

    def call(self, inputs, state):
        out = self._activation(self._linear([inputs, state], self._num_units))
        return out, out


class BasicLSTMCell(RNNCell):
    """TF1's BasicLSTMCell: gates i, j, f, o = split(W [x, h] + b, 4); c' = c * sigmoid(f +
    forget_bias) + sigmoid(i) * tanh(j); h' = tanh(c') * sigmoid(o). State LSTMStateTuple(c, h),
    or with state_is_tuple=False (deprecated in TF1) one tensor concat([c, h], 1)."""

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None):
        self._init_units(num_units, activation, reuse, name)
        self._state_is_tuple = bool(state_is_tuple)
        self._forget_bias = float(forget_bias)

    @property
    def state_size(self):
        return self._state(self._num_units, self.output_size)

    def _state(self, c, h):
        """LSTMStateTuple(c, h), or concat([c, h], 1) when not state_is_tuple (sizes too)."""
        if self._state_is_tuple:
            return LSTMStateTuple(c, h)
        return c + h if isinstance(c, int) else ops.concat([c, h], 1)

    def _c_and_h(self, state):
        if self._state_is_tuple:
            return state
        state = convert_to_tensor(state)
        return state[:, :self._num_units], state[:, self._num_units:]

    def call(self, inputs, state):
        c, h = self._c_and_h(state)
        gates = self._linear([inputs, h], 4 * self._num_units)
        i, j, f, o = array_ops.split(gates, 4, axis=1)
        new_c = ops.add(ops.multiply(c, ops.sigmoid(ops.add(f, self._forget_bias))),
                        ops.multiply(ops.sigmoid(i), self._activation(j)))
        new_h = ops.multiply(self._activation(new_c), ops.sigmoid(o))
        return new_h, self._state(new_c, new_h)


class LSTMCell(BasicLSTMCell):
    """TF1's LSTMCell: BasicLSTMCell's gates, plus (as TF1) `use_peepholes` (diagonal
    connections from the cell state: variables w_f_diag, w_i_diag, w_o_diag), `cell_clip` (the
    cell state clipped to [-cell_clip, cell_clip]), `num_proj` (the output h projected to
    num_proj units by projection/kernel, so state = LSTMStateTuple(c [num_units], h
    [num_proj])) and `proj_clip`. `initializer` is the default of its variables."""

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None):
        super().__init__(num_units, forget_bias, state_is_tuple, activation, reuse, name, dtype)
        self._use_peepholes = bool(use_peepholes)
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = int(num_proj) if num_proj else None
        self._proj_clip = proj_clip

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def call(self, inputs, state):
        if self._initializer is None:
            return self._call(inputs, state)
        with variable_scope(get_variable_scope(), initializer=self._initializer):
            return self._call(inputs, state)

    def _call(self, inputs, state):
        c, h = self._c_and_h(state)
        gates = self._linear([inputs, h], 4 * self._num_units)
        i, j, f, o = array_ops.split(gates, 4, axis=1)
        f = ops.add(f, self._forget_bias)
        if self._use_peepholes:
            dt = c.dtype
            w_f = get_variable("w_f_diag", [self._num_units], dtype=dt)
            w_i = get_variable("w_i_diag", [self._num_units], dtype=dt)
            w_o = get_variable("w_o_diag", [self._num_units], dtype=dt)
            f = ops.add(f, ops.multiply(w_f, c))
            i = ops.add(i, ops.multiply(w_i, c))
        new_c = ops.add(ops.multiply(c, ops.sigmoid(f)),
                        ops.multiply(ops.sigmoid(i), self._activation(j)))
        if self._cell_clip is not None:
            new_c = ops.clip_by_value(new_c, -float(self._cell_clip), float(self._cell_clip))
        if self._use_peepholes:
            o = ops.add(o, ops.multiply(w_o, new_c))
        new_h = ops.multiply(self._activation(new_c), ops.sigmoid(o))
        if self._num_proj is not None:
            with variable_scope("projection"):
                kernel = get_variable("kernel", [self._num_units, self._num_proj],
                                      dtype=new_h.dtype)
            new_h = ops.matmul(new_h, kernel)
            if self._proj_clip is not None:
                new_h = ops.clip_by_value(new_h, -float(self._proj_clip), float(self._proj_clip))
        return new_h, self._state(new_c, new_h)


class GRUCell(RNNCell):
    """TF1's GRUCell: r, u = sigmoid(W_g [x, h] + b_g); c = tanh(W_c [x, r * h] + b_c);
    h' = u * h + (1 - u) * c (variables gates/kernel, gates/bias, candidate/...)."""

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None):
        self._init_units(num_units, activation, reuse, name)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    def call(self, inputs, state):
        with variable_scope("gates"):
            r, u = array_ops.split(ops.sigmoid(self._linear([inputs, state], 2 * self._num_units,
                                                             bias_start=1.0)), 2, axis=1)
        with variable_scope("candidate"):
            c = self._activation(self._linear([inputs, ops.multiply(r, state)], self._num_units))
        new_h = ops.add(ops.multiply(u, state), ops.multiply(ops.subtract(1.0, u), c))
        return new_h, new_h


class MultiRNNCell(RNNCell):
    """Cells stacked: each one's output is the next one's input (variables cell_0/..., ...).
    The state is the tuple of the cells' states, or with state_is_tuple=False (deprecated in
    TF1; each cell's state one tensor) their concatenation along axis 1."""

    def __init__(self, cells, state_is_tuple=True):
        RNNCell.__init__(self)
        self._cells = list(cells)
        if not self._cells:
            raise ValueError("MultiRNNCell needs at least one cell")
        self._state_is_tuple = bool(state_is_tuple)
        if not state_is_tuple:
            for cell in self._cells:
                if not isinstance(cell.state_size, int):
                    raise ValueError("MultiRNNCell(state_is_tuple=False) needs cells whose "
                                     "state is one tensor, but a cell's state_size is %s "
                                     "(make it with state_is_tuple=False too)"
                                     % (cell.state_size,))

    @property
    def state_size(self):
        if not self._state_is_tuple:
            return sum(c.state_size for c in self._cells)
        return tuple(c.state_size for c in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        if not self._state_is_tuple:
            return _zeros(batch_size, self.state_size, dtype)
        return tuple(c.zero_state(batch_size, dtype) for c in self._cells)

    def call(self, inputs, state):
        if self._state_is_tuple:
            states = state
        else:
            state, states, start = convert_to_tensor(state), [], 0
            for cell in self._cells:
                states.append(state[:, start:start + cell.state_size])
                start += cell.state_size
        x, new_states = inputs, []
        for k, (cell, s) in enumerate(zip(self._cells, states)):
            with variable_scope("cell_%d" % k):
                x, s2 = cell(x, s)
            new_states.append(s2)
        if not self._state_is_tuple:
            return x, ops.concat(new_states, 1)
        return x, tuple(new_states)


# ---- wrappers: a cell around a cell, adding no variable scope of their own (TF1's names) ----


class _Wrapper(RNNCell):
    """Delegates state_size, output_size and zero_state to the wrapped cell."""

    def __init__(self, cell):
        if not callable(cell) or not hasattr(cell, "zero_state"):
            raise TypeError("%s wraps an RNN cell (output, state = cell(inputs, state)), not %r"
                            % (type(self).__name__, cell))
        self._cell = cell
        self._scope = None
        self._name = None

    @property
    def wrapped_cell(self):
        return self._cell

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    @property
    def variables(self):
        """The wrapped cell's variables (a wrapper has none of its own)."""
        return list(getattr(self._cell, "variables", []))

    @property
    def trainable_variables(self):
        return [v for v in self.variables if v.trainable]

    trainable_weights = trainable_variables

    def __call__(self, inputs, state, scope=None):
        return self.call(_pack(inputs, [convert_to_tensor(x) for x in _flatten(inputs)]), state,
                         scope)


def _keep_prob(value, what):
    from shardflow.framework import Tensor
    if isinstance(value, Tensor):
        return value
    value = float(value)
    if not 0 < value <= 1:
        raise ValueError("DropoutWrapper: %s must be in (0, 1], got %r" % (what, value))
    return value


class DropoutWrapper(_Wrapper):
    """TF1's tf.nn.rnn_cell.DropoutWrapper: dropout (sf.nn.dropout: kept values scaled by
    1 / keep_prob) on the cell's inputs, outputs and new state, each with its own keep
    probability (a float, or a tensor such as a placeholder fed 1.0 for evaluation). As in
    TF1, the c part of an LSTMStateTuple is never dropped, only h; a keep probability of
    1.0 adds nothing to the graph. A fresh mask each step, or with variational_recurrent=True
    (dtype, and input_size for input dropout, given) one mask per place for every step of a
    run, as TF1's.

    Example::

        cell = sf.nn.rnn_cell.DropoutWrapper(sf.nn.rnn_cell.BasicLSTMCell(128),
                                             output_keep_prob=keep_prob)
        outputs, state = sf.nn.dynamic_rnn(cell, x, dtype=sf.float32)
    """

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        super().__init__(cell)
        self._input_keep_prob = _keep_prob(input_keep_prob, "input_keep_prob")
        self._output_keep_prob = _keep_prob(output_keep_prob, "output_keep_prob")
        self._state_keep_prob = _keep_prob(state_keep_prob, "state_keep_prob")
        self._seed = seed
        self._filter = dropout_state_filter_visitor
        self._variational = bool(variational_recurrent)
        if self._variational:
            self._make_noise(input_size, dtype)

    def _make_noise(self, input_size, dtype):
        """Variational dropout (Gal & Ghahramani, as TF1's): one uniform noise [1, size] per
        place, drawn here, outside the loop the cell runs in, so that every time step (and
        every example of the batch) of a run uses the same mask; each run draws anew."""
        from shardflow import ops as _ops
        if dtype is None:
            raise ValueError("DropoutWrapper(variational_recurrent=True) needs dtype")
        if not _is_one(self._input_keep_prob) and input_size is None:
            raise ValueError("DropoutWrapper(variational_recurrent=True, input_keep_prob < 1) "
                             "needs input_size (the depth of the inputs)")
        offsets = iter(range(1, 1000))

        def noise(size):
            if isinstance(size, LSTMStateTuple):
                return LSTMStateTuple(noise(size.c), noise(size.h))
            if isinstance(size, (tuple, list)):
                return type(size)(noise(part) for part in size)
            seed = self._seed + next(offsets) if self._seed else None
            return _ops.random_uniform([1, int(size)], dtype=dtype, seed=seed)
        self._noise_in = None if _is_one(self._input_keep_prob) else noise(input_size)
        self._noise_out = None if _is_one(self._output_keep_prob) else \
            noise(self._cell.output_size)
        self._noise_state = None if _is_one(self._state_keep_prob) else \
            noise(self._cell.state_size)

    def _dropout(self, x, keep_prob, offset, noise=None):
        if _is_one(keep_prob):
            return x
        if self._variational:
            from shardflow import ops as _ops
            keep = _ops.floor(_ops.add(noise, keep_prob))       # 1 with probability keep_prob
            return _ops.multiply(_ops.divide(x, keep_prob), keep)
        from shardflow.nn import dropout  # nn imports this module
        # Distinct seeds for the three places, so that their masks differ.
        return dropout(x, keep_prob, seed=self._seed + offset if self._seed else None)

    def _drop_state(self, state):
        def visit(s, noise):
            if isinstance(s, LSTMStateTuple):
                keep = LSTMStateTuple(False, True) if self._filter is None else self._filter(s)
                parts = noise if noise is not None else (None, None)
                return LSTMStateTuple(*[visit(part, n) if k else part
                                        for part, n, k in zip(s, parts, _flags(keep, 2))])
            if isinstance(s, (tuple, list)):
                parts = noise if noise is not None else [None] * len(s)
                return type(s)(visit(part, n) for part, n in zip(s, parts))
            if self._filter is not None and not self._filter(s):
                return s
            return self._dropout(s, self._state_keep_prob, 2, noise)
        return visit(state, self._noise_state if self._variational else None)

    def call(self, inputs, state, scope=None):
        variational = self._variational
        inputs = self._dropout(inputs, self._input_keep_prob, 0,
                               self._noise_in if variational else None)
        output, new_state = self._cell(inputs, state, scope=scope)
        if not _is_one(self._state_keep_prob):
            new_state = self._drop_state(new_state)
        return self._dropout(output, self._output_keep_prob, 1,
                             self._noise_out if variational else None), new_state


def _is_one(keep_prob):
    """A keep probability of exactly 1.0 given as a number: no dropout at all."""
    return isinstance(keep_prob, float) and keep_prob == 1.0


def _flags(keep, n):
    return list(keep) if isinstance(keep, (tuple, list)) else [bool(keep)] * n


class ResidualWrapper(_Wrapper):
    """TF1's tf.nn.rnn_cell.ResidualWrapper: the output is residual_fn(inputs, cell output),
    by default inputs + output (so the cell's output size must equal the input depth); the
    state is the cell's.

    Example::

        cell = sf.nn.rnn_cell.ResidualWrapper(sf.nn.rnn_cell.GRUCell(64))   # inputs [.., 64]
    """

    def __init__(self, cell, residual_fn=None):
        super().__init__(cell)
        self._residual_fn = residual_fn

    def call(self, inputs, state, scope=None):
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        return ops.add(inputs, output), new_state


class DeviceWrapper(_Wrapper):
    """TF1's tf.nn.rnn_cell.DeviceWrapper: the cell's ops (and its zero state) are built on
    `device`, e.g. one layer of a MultiRNNCell per device.

    Example::

        cells = [sf.nn.rnn_cell.DeviceWrapper(sf.nn.rnn_cell.LSTMCell(256), "/device:CPU:%d" % i)
                 for i in range(2)]
    """

    def __init__(self, cell, device):
        super().__init__(cell)
        self._device = device

    def zero_state(self, batch_size, dtype):
        with ops.get_default_graph().device(self._device):
            return self._cell.zero_state(batch_size, dtype)

    def call(self, inputs, state, scope=None):
        with ops.get_default_graph().device(self._device):
            return self._cell(inputs, state, scope=scope)


def _select(chosen, new, old):
    """`new` where `chosen` (a bool scalar, or a [batch] vector choosing rows) is true, else
    `old`: as TF1's rnn steps, a select, so that a NaN or inf in the value not chosen stays
    out."""
    rank = new.shape.ndims
    if chosen.shape.ndims == 1 and rank is not None:
        chosen = ops.reshape(chosen, [-1] + [1] * (rank - 1))
        return array_ops.where_v2(chosen, new, old)
    return array_ops.where(chosen, new, old)


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """Runs `cell` over the time steps of `inputs` ([batch, time, depth...], or [time, batch,
    depth...] with time_major; or a nested tuple of such tensors) in one while_loop; returns
    (outputs, final state) as TF1 does, the outputs nested as the cell's. With
    `sequence_length` ([batch] ints), a sequence's outputs past its length are zeros and its
    state stops changing there."""
    nested_in = isinstance(inputs, (list, tuple))
    flat_in = [convert_to_tensor(v) for v in _flatten(inputs)]
    for v in flat_in:
        if v.shape.ndims is None or v.shape.ndims < 3:
            raise ValueError("dynamic_rnn takes [batch, time, depth...] inputs of a known "
                             "rank, got shape %s" % v.shape)
    with variable_scope(scope or "rnn") as varscope:
        xs, in_dims = [], []
        for v in flat_in:
            d = v.shape.as_list()
            if not time_major:
                v = ops.transpose(v, [1, 0] + list(range(2, len(d))))
                d = [d[1], d[0]] + d[2:]
            xs.append(v)
            in_dims.append(d)
        x, dims = xs[0], in_dims[0]

        def read(t):
            """Step t's inputs [batch, depth...], with the dimensions known of `inputs` (a
            shape only Python knew, e.g. after set_shape, is not carried through the
            transpose)."""
            steps = []
            for v, d in zip(xs, in_dims):
                v_t = array_ops.gather(v, t)
                v_t.set_shape(d[1:])
                steps.append(v_t)
            return _pack(inputs, steps) if nested_in else steps[0]

        batch = dims[1] if dims[1] is not None else ops.shape(x)[1]
        time = dims[0] if dims[0] is not None else ops.shape(x)[0]
        if initial_state is None:
            if dtype is None:
                raise ValueError("dynamic_rnn needs initial_state or dtype")
            initial_state = cell.zero_state(batch, dtype)
        flat_init = [convert_to_tensor(s) for s in _flatten(initial_state)]
        lengths = None if sequence_length is None else ops.cast(sequence_length, dtypes.int32)

        def step(t, out, flat, new_out, new_state):
            """The loop variables after step t: the new ones, or the old ones where step t is
            past the end of the input or of a sequence (outputs there are zeros). Selected,
            as TF1's, not masked by multiplying: NaN or inf computed from the padding stays
            out of the outputs and the state."""
            in_time = ops.less(t, time)
            valid = in_time
            if lengths is not None:
                valid = ops.logical_and(in_time, ops.less(t, lengths))
            out = _pack(new_out, [_select(valid, n, _select(in_time, ops.zeros_like(n), o))
                                  for n, o in zip(_flatten(new_out), _flatten(out))])
            # A step counter (AttentionWrapperState.time) stops at the end of the input.
            state = [_select(valid if n.dtype.is_floating and n.shape.ndims != 0 else in_time,
                             n, o)
                     for n, o in zip(_flatten(new_state), flat)]
            return out, _pack(new_state, state, _growing_arrays(new_state))

        # Step 0 runs before the loop, and iteration t computes step t + 1: the loop's history
        # of the output variable (each value as it enters an iteration) is then exactly
        # outputs[0..time), with no slicing. The last iteration's step is past the end and
        # discarded by step()'s mask. So `time` must be at least 1.
        first_out, first_state = cell(read(0), initial_state)
        # The loop's calls reuse what the first made (a cell overriding __call__ makes its
        # variables with get_variable on every call), as TF1's one call in its loop does.
        varscope.reuse_variables()
        flat_first = [convert_to_tensor(o) for o in _flatten(first_out)]
        zero = _pack(first_out, [ops.zeros_like(o) for o in flat_first])
        out0, state0 = step(0, zero, flat_init, first_out, first_state)

        def cond(t, out, state):
            return ops.less(t, time)

        def body(t, out, state):
            nxt = ops.add(t, 1)
            x_t = read(ops.minimum(nxt, ops.subtract(time, 1)))
            new_out, new_state = cell(x_t, state)
            return [nxt] + list(step(nxt, out, _flatten(state), new_out, new_state))

        op, n, arrays = _build_while(cond, body, [ops.constant(0), out0, state0], name="while")
        # The history of each output variable (loop variables 1..k): [time, batch, ...].
        k = len(flat_first)
        sizes = _flatten(cell.output_size) if k > 1 else [cell.output_size]
        outputs = []
        for j, (first, size) in enumerate(zip(flat_first, sizes + [None] * k)):
            history = op.outputs[n + 1 + 1 + j]
            out_dims = first.shape.as_list()[1:] if first.shape.ndims else None
            if (out_dims is None or None in out_dims) and isinstance(size, int):
                out_dims = [size]
            if isinstance(time, int) and out_dims is not None and None not in out_dims:
                history = ops.reshape(history, [time, dims[1] if dims[1] is not None else -1]
                                      + out_dims)
            if not time_major:
                out_rank = 2 + len(out_dims) if out_dims is not None else 3
                history = ops.transpose(history, [1, 0] + list(range(2, out_rank)))
            outputs.append(history)
        outputs = _pack(first_out, outputs)
        # A TensorArray in the state (AttentionWrapper's alignment_history) was written by
        # the discarded last step too: it keeps its first `time` elements.
        state = _pack(state0, list(op.outputs[1 + k:n]), [a._first(time) for a in arrays])
    return outputs, state


def _initial_state(cell, initial_state, dtype, batch, what):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError("%s needs initial_state or dtype" % what)
    return cell.zero_state(batch, dtype)


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """TF1's tf.nn.static_rnn (tf.contrib.rnn.static_rnn): `cell` applied to a Python list of
    [batch, depth] inputs, one graph copy per step; returns (the list of outputs, the final
    state). With `sequence_length` ([batch] ints), outputs past a sequence's length are zeros
    and its state stops changing there. Variables are under `scope` (default "rnn")."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("static_rnn: inputs must be a non-empty list of [batch, depth] "
                        "tensors (use dynamic_rnn for one [batch, time, depth] tensor)")
    inputs = [convert_to_tensor(x) for x in inputs]
    with variable_scope(scope or "rnn") as varscope:
        first = inputs[0]
        batch = first.shape.as_list()[0] if first.shape.ndims else None
        if batch is None:
            batch = ops.shape(first)[0]
        state = _initial_state(cell, initial_state, dtype, batch, "static_rnn")
        lengths = None if sequence_length is None else ops.cast(sequence_length, dtypes.int32)
        outputs = []
        for t, x in enumerate(inputs):
            if t > 0:
                varscope.reuse_variables()          # as TF1's static_rnn
            out, new_state = cell(x, state)
            if lengths is not None:
                valid = ops.less(t, lengths)
                out = _select(valid, out, ops.zeros_like(out))
                state = _pack(state, [_select(valid, n, o)
                                      for n, o in zip(_flatten(new_state), _flatten(state))])
            else:
                state = new_state
            outputs.append(out)
    return outputs, state


def _reverse_time(x, lengths, time_axis, batch_axis):
    """`x` reversed along time: each sequence's first lengths[b] steps when lengths are given
    (reverse_sequence), else the whole time dimension."""
    if lengths is None:
        return ops.reverse(x, [time_axis])
    from shardflow.array_composites import reverse_sequence
    return reverse_sequence(x, lengths, seq_axis=time_axis, batch_axis=batch_axis)


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """TF1's tf.nn.static_bidirectional_rnn: static_rnn forwards (scope fw) and backwards
    (scope bw, over each sequence reversed) under `scope` (default "bidirectional_rnn");
    returns (outputs, final forward state, final backward state), each output the forward and
    the backward outputs of that step concatenated along the depth."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("static_bidirectional_rnn: inputs must be a non-empty list of "
                        "[batch, depth] tensors")
    with variable_scope(scope or "bidirectional_rnn"):
        out_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                      sequence_length, scope="fw")
        if sequence_length is None:
            reversed_inputs = list(reversed(inputs))
        else:
            stacked = array_ops.stack([convert_to_tensor(x) for x in inputs])
            reversed_inputs = array_ops.unstack(_reverse_time(stacked, sequence_length, 0, 1),
                                                num=len(inputs))
        out_bw, state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype,
                                      sequence_length, scope="bw")
        if sequence_length is None:
            out_bw = list(reversed(out_bw))
        else:
            out_bw = array_ops.unstack(_reverse_time(array_ops.stack(out_bw), sequence_length,
                                                     0, 1), num=len(inputs))
        outputs = [ops.concat([f, b], 1) for f, b in zip(out_fw, out_bw)]
    return outputs, state_fw, state_bw


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """TF1's tf.nn.bidirectional_dynamic_rnn: dynamic_rnn forwards (scope fw) and over each
    sequence reversed (scope bw; reverse_sequence with `sequence_length`, else the whole time
    dimension) under `scope` (default "bidirectional_rnn"). Returns ((forward outputs,
    backward outputs), (forward state, backward state)); the backward outputs are reversed
    back, so step t of both lines up."""
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)
    with variable_scope(scope or "bidirectional_rnn"):
        out_fw, state_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw,
                                       dtype, time_major=time_major, scope="fw")
        reversed_inputs = _reverse_time(convert_to_tensor(inputs), sequence_length, time_axis,
                                        batch_axis)
        out_bw, state_bw = dynamic_rnn(cell_bw, reversed_inputs, sequence_length,
                                       initial_state_bw, dtype, time_major=time_major,
                                       scope="bw")
        out_bw = _reverse_time(out_bw, sequence_length, time_axis, batch_axis)
    return (out_fw, out_bw), (state_fw, state_bw)


def raw_rnn(cell, loop_fn, parallel_iterations=None, swap_memory=False, scope=None):
    """TF1's tf.nn.raw_rnn: `cell` in a while_loop driven by ``loop_fn(time, cell_output,
    cell_state, loop_state) -> (finished [batch] bool, next_input, next_cell_state,
    emit_output, next_loop_state)``, called first with cell_output None (it returns the
    initial state and, as emit_output, the structure of what is emitted, or None for the
    cell's output). Each step's emit_output (zeros in the rows already finished, whose state
    is kept) is written to TensorArrays. Returns (emit TensorArrays, final state, final
    loop_state)."""
    from shardflow.control_flow import while_loop
    from shardflow.nest import map_structure
    from shardflow.tensor_array import TensorArray
    with variable_scope(scope or "rnn"):
        time = ops.constant(0)
        finished, next_input, initial_state, emit_structure, loop_state = loop_fn(
            time, None, None, None)
        init_loop_state = loop_state
        if loop_state is None:
            loop_state = ops.constant(0)
        flat_input = [convert_to_tensor(x) for x in _flatten(next_input)]
        batch = flat_input[0].shape.as_list()[0] if flat_input[0].shape.ndims else None
        if batch is None:
            batch = ops.shape(flat_input[0])[0]
        state = _pack(initial_state, [convert_to_tensor(x) for x in _flatten(initial_state)])
        if emit_structure is not None:
            flat_emit = [convert_to_tensor(e) for e in _flatten(emit_structure)]
            zero_emit = _pack(emit_structure, [ops.zeros_like(e) for e in flat_emit])
            emit_dtypes = [e.dtype for e in flat_emit]
        else:
            emit_structure = cell.output_size
            dtype = convert_to_tensor(_flatten(state)[0]).dtype
            sizes = _flatten(emit_structure) if isinstance(emit_structure, (list, tuple)) \
                else [emit_structure]
            zero_emit = _pack(emit_structure, [_zeros(batch, size, dtype) for size in sizes])
            emit_dtypes = [dtype] * len(sizes)
        arrays = _pack(emit_structure, [TensorArray(dtype, size=0, dynamic_size=True)
                                        for dtype in emit_dtypes])

        def keep_finished(done, old, new):
            """`old` in the rows that had finished, else `new`; TensorArrays and scalars take
            the new value, as TF1's."""
            if isinstance(new, TensorArray) or convert_to_tensor(new).shape.ndims == 0:
                return new
            return _select(done, convert_to_tensor(old), convert_to_tensor(new))

        def cond(time, finished, inputs, arrays, state, loop_state):
            return ops.logical_not(array_ops.reduce_all(finished))

        def body(time, finished, inputs, arrays, state, loop_state):
            output, cell_state = cell(inputs, state)
            next_time = time + 1
            next_finished, next_inputs, next_state, emit, next_loop_state = loop_fn(
                next_time, output, cell_state, loop_state)
            if next_loop_state is None:
                next_loop_state = loop_state
            emit = map_structure(lambda zero, e: keep_finished(finished, zero, e),
                                 zero_emit, emit)
            next_state = map_structure(lambda old, new: keep_finished(finished, old, new),
                                       state, next_state)
            arrays = map_structure(lambda array, e: array.write(time, e), arrays, emit)
            return (next_time, ops.logical_or(finished, next_finished), next_inputs, arrays,
                    next_state, next_loop_state)

        _, _, _, arrays, state, loop_state = while_loop(
            cond, body, (time, convert_to_tensor(finished), next_input, arrays, state,
                         loop_state))
    return arrays, state, (None if init_loop_state is None else loop_state)


__all__ = ["BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
           "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper",
           "bidirectional_dynamic_rnn", "dynamic_rnn", "raw_rnn", "static_bidirectional_rnn",
           "static_rnn"]
