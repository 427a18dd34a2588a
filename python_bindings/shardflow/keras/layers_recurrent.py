"""tf.keras.layers' generic recurrent layer and its cells, and masking: RNN(cell) with
SimpleRNNCell, LSTMCell, GRUCell, StackedRNNCells or a cell of your own (a keras Layer with
``state_size`` and ``call(inputs, states) -> (output, new_states)``), and Masking. Re-exported
by keras/layers.py, whose LSTM, GRU and SimpleRNN run through `run_cell` here too.

The built-in cells compute what the layers do, with Keras's weights (kernel /
recurrent_kernel / bias; keras/recurrent_math.py), so ``RNN(LSTMCell(n))`` computes what
``LSTM(n)`` does and their weights are interchangeable, with each other and with Keras models'.
States are in Keras's order: an LSTM's are [h, c]. Dropout is the layers' argument only.

Note [Masked recurrence]. A mask ([batch, time], Note [Keras masks] in layers.py) reaches the
loop as one more input feature; the cell is wrapped so that at a masked step it keeps its
state and repeats its previous output (zeros before the first real step), as TF 1.15's
keras.backend.rnn does. Any mask works, not only trailing padding.

Example::

    cells = [keras.layers.LSTMCell(32), keras.layers.LSTMCell(16)]
    x = keras.layers.Input(shape=(None, 8))
    y, h1, c1, h2, c2 = keras.layers.RNN(cells, return_state=True)(x)
"""

from shardflow import array_ops as _array, ops
from shardflow import rnn_cell as _rnn
from shardflow.framework import convert_to_tensor
from shardflow.keras.layers import Layer
from shardflow.variables import global_variables


def _map_states(fn, new, old):
    """fn(n, o) over the tensors of two states of one structure."""
    if isinstance(new, tuple):
        items = [_map_states(fn, n, o) for n, o in zip(new, old)]
        return type(new)(*items) if hasattr(new, "_fields") else tuple(items)
    return fn(new, old)


class _MaskedCell:
    """Note [Masked recurrence]: a cell protocol object (rnn_cell's) over inputs whose last
    feature is the mask (1.0 a real step, 0.0 a masked one); its state is (the cell's state,
    the previous output)."""

    def __init__(self, cell, depth):
        self._cell = cell
        self._depth = depth

    @property
    def state_size(self):
        return (self._cell.state_size, self._cell.output_size)

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        return (self._cell.zero_state(batch_size, dtype),
                _rnn._zeros(batch_size, self._cell.output_size, dtype))

    def __call__(self, inputs, state):
        x, m = _array.split(inputs, [self._depth, 1], axis=1)
        cell_state, prev = state
        out, new_state = self._cell(x, cell_state)
        drop = ops.subtract(1.0, m)

        def blend(n, o):  # m·n + (1 − m)·o is exactly n or o for m in {0, 1}
            return ops.add(ops.multiply(m, n), ops.multiply(drop, o))
        out = blend(out, prev)
        return out, (_map_states(blend, new_state, cell_state), out)


def run_cell(layer, cell, inputs, mask=None, initial_state=None, go_backwards=False):
    """Runs `cell` (rnn_cell's protocol) over [batch, time, depth] `inputs` in one
    dynamic_rnn under `layer`'s variable scope (its name; "<name>_1", ... when a model built
    earlier in the graph holds that one, as keras layers own their weights): the time steps in reverse with
    go_backwards, the steps where `mask` is False skipped (Note [Masked recurrence]).
    Returns (outputs [batch, time, units], the last output, the final state in the cell's
    structure). The variables made become `layer`'s."""
    g = inputs.graph
    before = set(id(v) for v in global_variables(g))
    if go_backwards:
        inputs = ops.reverse(inputs, [1])
        if mask is not None:
            mask = ops.reverse(mask, [1])
    dtype = inputs.dtype
    scope = layer._variable_scope(g)
    if mask is None:
        outputs, state = _rnn.dynamic_rnn(cell, inputs, initial_state=initial_state,
                                          dtype=dtype, scope=scope)
        last = outputs[:, -1]
    else:
        depth = _rnn._depth(inputs, type(layer).__name__)
        m = ops.expand_dims(ops.cast(convert_to_tensor(mask), dtype), 2)
        masked = _MaskedCell(cell, depth)
        init = None
        if initial_state is not None:
            batch = ops.shape(inputs)[0]
            init = (initial_state, _rnn._zeros(batch, cell.output_size, dtype))
        outputs, (state, last) = _rnn.dynamic_rnn(masked, ops.concat([inputs, m], 2),
                                                  initial_state=init, dtype=dtype,
                                                  scope=scope)
    known = set(id(v) for v in layer.variables)
    for v in global_variables(g):
        if id(v) not in before and id(v) not in known:
            layer.variables.append(v)
    return outputs, last, state


def split_initial_state(inputs, mask):
    """(inputs, their mask, the initial states or None) of a recurrent layer's call, whose
    inputs are [x, state, ...] when it was given initial_state."""
    if isinstance(inputs, (list, tuple)):
        masks = mask if isinstance(mask, (list, tuple)) else [mask]
        return inputs[0], masks[0], list(inputs[1:]) or None
    return inputs, mask, None


def with_initial_state(inputs, initial_state):
    """The inputs a recurrent layer is called on: [x] + the states when initial_state is
    given (so that keras.Model finds the layers that made them, as Keras's)."""
    if initial_state is None:
        return inputs
    states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
        else [initial_state]
    x = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
    return [x] + states


# ---- cells --------------------------------------------------------------------------------


def _flat_sizes(size):
    if isinstance(size, (list, tuple)):
        return [s for item in size for s in _flat_sizes(item)]
    return [int(size)]


def _cell_spec(kind, what, units, activation, kwargs):
    """The RecurrentSpec of a Keras cell; dropout, which needs masks drawn per sequence, is
    the layers' (LSTM(dropout=...)) only here."""
    from shardflow.keras.recurrent_math import RecurrentSpec
    for key in ("dropout", "recurrent_dropout"):
        if kwargs.pop(key, 0.0):
            raise ValueError("%s: %s is not supported on a cell; give it to the layer "
                             "(keras.layers.%s(units, %s=...))"
                             % (what, key, {"lstm": "LSTM", "gru": "GRU"}.get(kind, "SimpleRNN"),
                                key))
    return RecurrentSpec.from_kwargs(kind, units, activation, kwargs), kwargs


def _call_cell(cell, inputs, states):
    """A keras cell's (output, [new states]), building it on its first call."""
    if not cell._built:
        with cell._context(inputs.graph):
            cell.build(inputs.shape)
        cell._built = True
    out, new = cell.call(inputs, list(states))
    return out, list(new) if isinstance(new, (list, tuple)) else [new]


class _BuiltinCell(Layer):
    """A Keras cell (Keras's arithmetic and weights: keras/recurrent_math.py) whose variables
    live under <the RNN layer's name>/<this cell's name>."""

    _kind = None

    def __init__(self, units, activation="tanh", **kwargs):
        self.spec, kwargs = _cell_spec(self._kind, type(self).__name__, units, activation,
                                       kwargs)
        super().__init__(**kwargs)
        self.units = self.spec.units
        self.activation = self.spec.activation
        self._cell = None

    @property
    def output_size(self):
        return self.units

    def call(self, inputs, states):
        from shardflow.keras.recurrent_math import KerasRecurrentCell
        if self._cell is None:
            self._cell = KerasRecurrentCell(self.spec, name=self.name)
            before = set(id(v) for v in global_variables(inputs.graph))
            out, new = self._step(inputs, states)
            self.variables.extend(v for v in global_variables(inputs.graph)
                                  if id(v) not in before)
            self.losses.extend(self._cell.penalties)
            return out, new
        return self._step(inputs, states)


class SimpleRNNCell(_BuiltinCell):
    """Keras's SimpleRNNCell: h' = activation(x W + h U + b); states [h]."""

    _kind = "simple"
    state_size = property(lambda self: self.units)

    def _step(self, inputs, states):
        out, h = self._cell(inputs, states[0])
        return out, [h]


class GRUCell(_BuiltinCell):
    """Keras's GRUCell (gates z, r, h; recurrent_activation hard_sigmoid); states [h]."""

    _kind = "gru"
    state_size = property(lambda self: self.units)

    def _step(self, inputs, states):
        out, h = self._cell(inputs, states[0])
        return out, [h]


class LSTMCell(_BuiltinCell):
    """Keras's LSTMCell (gates i, f, c, o; unit_forget_bias; recurrent_activation
    hard_sigmoid); states [h, c] in Keras's order."""

    _kind = "lstm"
    state_size = property(lambda self: [self.units, self.units])

    def _step(self, inputs, states):
        h, c = states
        out, state = self._cell(inputs, _rnn.LSTMStateTuple(c, h))
        return out, [state.h, state.c]


class StackedRNNCells(Layer):
    """Cells one above the other: each one's output is the next one's input. Its states are
    the cells' states in order (flat: an LSTMCell's two, then the next cell's)."""

    def __init__(self, cells, **kwargs):
        for cell in cells:
            if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
                raise ValueError("StackedRNNCells: every cell needs call() and state_size, "
                                 "got %r" % (cell,))
        super().__init__(**kwargs)
        self.cells = list(cells)

    @property
    def state_size(self):
        return [s for cell in self.cells for s in _flat_sizes(cell.state_size)]

    @property
    def output_size(self):
        last = self.cells[-1]
        return getattr(last, "output_size", None) or _flat_sizes(last.state_size)[0]

    def call(self, inputs, states):
        x, new_states, k = inputs, [], 0
        for cell in self.cells:
            n = len(_flat_sizes(cell.state_size))
            x, s = _call_cell(cell, x, states[k:k + n])
            new_states.extend(s)
            k += n
        return x, new_states

    @property
    def weights(self):
        return [v for cell in self.cells for v in cell.weights]


class _KerasCell:
    """A keras cell as rnn_cell's protocol (what dynamic_rnn runs): its state is the tuple of
    the Keras states."""

    def __init__(self, cell):
        self._cell = cell
        self._sizes = _flat_sizes(cell.state_size)

    @property
    def state_size(self):
        return tuple(self._sizes)

    @property
    def output_size(self):
        return getattr(self._cell, "output_size", None) or self._sizes[0]

    def zero_state(self, batch_size, dtype):
        return tuple(_rnn._zeros(batch_size, s, dtype) for s in self._sizes)

    def __call__(self, inputs, state):
        out, new = _call_cell(self._cell, inputs, state)
        return out, tuple(new)


class RNN(Layer):
    """Runs a cell over [batch, time, features] inputs (Keras's RNN): `cell` a keras cell
    (SimpleRNNCell, LSTMCell, GRUCell, your own Layer with state_size and
    ``call(inputs, states)``) or a list of cells (StackedRNNCells). The output is the last
    step's, or every step's with return_sequences; return_state adds the final states.
    go_backwards reads the steps from the last (outputs in that order); ``initial_state=``
    (a list of tensors, one per state) starts the loop from them; a mask from Masking or
    Embedding(mask_zero=True) skips steps (Note [Masked recurrence]). stateful is not
    supported; unroll gives the same result through the loop."""

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, **kwargs):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
            raise ValueError("RNN: `cell` needs call(inputs, states) and state_size, got %r"
                             % (cell,))
        if stateful:
            raise ValueError("RNN(stateful=True) is not supported")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.time_major = bool(time_major)

    def __call__(self, inputs, initial_state=None, **kwargs):
        return Layer.__call__(self, with_initial_state(inputs, initial_state), **kwargs)

    def call(self, inputs, mask=None):
        x, mask, states = split_initial_state(inputs, mask)
        if self.time_major:
            x = ops.transpose(x, [1, 0, 2])
        outputs, last, state = run_cell(self, _KerasCell(self.cell), x, mask,
                                        None if states is None else tuple(states),
                                        self.go_backwards)
        if self.time_major:
            outputs = ops.transpose(outputs, [1, 0, 2])
        y = outputs if self.return_sequences else last
        return [y] + list(state) if self.return_state else y

    def compute_mask(self, inputs, mask=None):
        _, mask, _ = split_initial_state(inputs, mask)
        out = mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * len(_flat_sizes(self.cell.state_size))
        return out


class Masking(Layer):
    """Marks the time steps of [batch, time, features] inputs whose features all equal
    `mask_value` as padding: the outputs are the inputs with those steps zeroed, and carry
    the mask (Note [Keras masks] in layers.py) that recurrent layers skip."""

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def _keep(self, inputs, keepdims):
        return _array.reduce_any(ops.not_equal(inputs, ops.cast(self.mask_value, inputs.dtype)),
                                 axis=-1, keepdims=keepdims)

    def call(self, inputs):
        return ops.multiply(inputs, ops.cast(self._keep(inputs, True), inputs.dtype))

    def compute_mask(self, inputs, mask=None):
        return self._keep(inputs, False)


__all__ = ["GRUCell", "LSTMCell", "Masking", "RNN", "SimpleRNNCell", "StackedRNNCells"]
