"""The arithmetic of Keras's recurrent layers (TF 1.15's tf.keras.layers.SimpleRNN, GRU and
LSTM, and their cells), as cells of shardflow's rnn_cell protocol that layers_recurrent.run_cell
runs in one dynamic_rnn.

Note [Keras recurrent weights]. The weights are Keras's: `kernel` [input, k * units],
`recurrent_kernel` [units, k * units] and `bias` [k * units] (a GRU with reset_after: [2, 3 *
units], the input and the recurrent bias), the gates in Keras's order (LSTM i, f, c, o; GRU z,
r, h), made with the layer's initializers (recurrent_initializer 'orthogonal' by default;
unit_forget_bias starts the forget gate's bias at one), regularizers and constraints, and
named "<layer>/kernel", "<layer>/recurrent_kernel", "<layer>/bias" as TF 1.15 names them. So
get_weights / set_weights exchange arrays with Keras models, and the gates use the layer's
recurrent_activation (TF 1.15's default hard_sigmoid) and activation.

Dropout (training only, the learning phase or `training=`): `dropout` drops inputs and
`recurrent_dropout` the previous output h, with one mask per gate drawn once per batch and
kept over the time steps, as Keras's implementation 1. The masks are drawn by the layer before
the loop (make_masks) and read by every step.
"""

import inspect

from shardflow import array_ops as _array, dtypes, ops
from shardflow import rnn_cell as _rnn
from shardflow.keras import activations, constraints, initializers, regularizers
from shardflow.variable_scope import get_variable, variable_scope


class RecurrentSpec:
    """A recurrent layer's (or cell's) Keras arguments, checked."""

    def __init__(self, kind, units, activation="tanh", recurrent_activation="hard_sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, implementation=1,
                 reset_after=False):
        self.kind = kind
        self.gates = {"lstm": 4, "gru": 3, "simple": 1}[kind]
        self.units = int(units)
        if self.units < 1:
            raise ValueError("%s: units must be positive, got %r" % (kind, units))
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.regularizers = {"kernel": regularizers.get(kernel_regularizer),
                             "recurrent_kernel": regularizers.get(recurrent_regularizer),
                             "bias": regularizers.get(bias_regularizer)}
        self.constraints = {"kernel": constraints.get(kernel_constraint),
                            "recurrent_kernel": constraints.get(recurrent_constraint),
                            "bias": constraints.get(bias_constraint)}
        for name, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0.0 <= float(rate) < 1.0:
                raise ValueError("%s: %s must be in [0, 1), got %r" % (kind, name, rate))
        self.dropout = float(dropout)
        self.recurrent_dropout = float(recurrent_dropout)
        self.implementation = int(implementation)
        self.reset_after = bool(reset_after) and kind == "gru"

    @classmethod
    def from_kwargs(cls, kind, units, activation, kwargs):
        """The spec of a layer or cell, its own arguments popped out of the layer's `kwargs`
        (which keep the rest: name, input_shape, ...); unit_forget_bias is the LSTM's only."""
        own = set(inspect.signature(cls.__init__).parameters) - {"self", "kind", "units",
                                                                 "activation"}
        args = {k: kwargs.pop(k) for k in list(kwargs) if k in own}
        if kind != "lstm":
            args.pop("unit_forget_bias", None)
        return cls(kind, units, activation, **args)


def _initial(initializer, shape, dtype):
    """A Keras initializer's value for `shape` (initializers take (shape, dtype))."""
    return initializer(list(shape), dtype)


class KerasRecurrentCell(_rnn.RNNCell):
    """One step of a Keras SimpleRNN / GRU / LSTM (Note [Keras recurrent weights]). An LSTM's
    state is LSTMStateTuple(c, h); the others' is h. `masks` (set by the layer before the loop):
    (input masks [gates, batch, input], recurrent masks [gates, batch, units]) or None."""

    def __init__(self, spec, name=None):
        super().__init__(spec.units, name=name)
        self.spec = spec
        self.masks = None
        self.weights = None       # (kernel, recurrent_kernel, bias or None), made on first use
        self.penalties = []       # the regularizers' losses, for the layer's `losses`

    @property
    def state_size(self):
        if self.spec.kind == "lstm":
            return _rnn.LSTMStateTuple(self.spec.units, self.spec.units)
        return self.spec.units

    def __call__(self, inputs, state, scope=None):
        from shardflow.framework import convert_to_tensor
        inputs = convert_to_tensor(inputs)
        if self.weights is None:
            if self._name:
                with variable_scope(self._name):
                    self._make_weights(inputs)
            else:
                self._make_weights(inputs)
        return self.call(inputs, state)

    def _make_weights(self, inputs):
        spec, u, k = self.spec, self.spec.units, self.spec.gates
        depth = _rnn._depth(inputs, "Keras %s" % spec.kind)
        dt = inputs.dtype

        def make(name, shape, initializer):
            v = get_variable(name, shape, dtype=dt, initializer=initializer)
            if spec.constraints[name] is not None:
                v._keras_constraint = spec.constraints[name]
            if spec.regularizers[name] is not None:
                self.penalties.append(spec.regularizers[name](v))
            return v
        kernel = make("kernel", [depth, k * u], spec.kernel_initializer)
        recurrent = make("recurrent_kernel", [u, k * u], spec.recurrent_initializer)
        bias = None
        if spec.use_bias:
            shape = [2, k * u] if spec.reset_after else [k * u]
            init = spec.bias_initializer
            if spec.kind == "lstm" and spec.unit_forget_bias:
                base = spec.bias_initializer

                def init(shape, dtype=dtypes.float32, partition_info=None):
                    parts = [_initial(base, [u], dtype), ops.ones([u], dtype=dtype),
                             _initial(base, [2 * u], dtype)]
                    return ops.concat(parts, 0)
            bias = make("bias", shape, init)
        self.weights = (kernel, recurrent, bias)

    def _inputs_part(self, x, gate_slices):
        """x @ kernel (+ bias) for each gate, with its input mask when there is one."""
        kernel, _, bias = self.weights
        spec, u = self.spec, self.spec.units
        parts = []
        for g in gate_slices:
            xg = x if self.masks is None or self.masks[0] is None else x * self.masks[0][g]
            part = ops.matmul(xg, kernel[:, g * u:(g + 1) * u])
            if bias is not None:
                b = bias[0] if spec.reset_after else bias
                part = part + b[g * u:(g + 1) * u]
            parts.append(part)
        return parts

    def _recurrent_part(self, h, g):
        """h @ recurrent_kernel for gate g (+ the recurrent bias with reset_after), with its
        recurrent mask when there is one."""
        _, recurrent, bias = self.weights
        u = self.spec.units
        hg = h if self.masks is None or self.masks[1] is None else h * self.masks[1][g]
        part = ops.matmul(hg, recurrent[:, g * u:(g + 1) * u])
        if self.spec.reset_after and bias is not None:
            part = part + bias[1][g * u:(g + 1) * u]
        return part

    def call(self, inputs, state):
        spec = self.spec
        act, rec = spec.activation, spec.recurrent_activation
        if spec.kind == "simple":
            (xw,) = self._inputs_part(inputs, [0])
            h = act(xw + self._recurrent_part(state, 0))
            return h, h
        if spec.kind == "gru":
            h_prev = state
            xz, xr, xh = self._inputs_part(inputs, [0, 1, 2])
            z = rec(xz + self._recurrent_part(h_prev, 0))
            r = rec(xr + self._recurrent_part(h_prev, 1))
            if spec.reset_after:
                hh = act(xh + r * self._recurrent_part(h_prev, 2))
            else:
                _, recurrent, _ = self.weights
                u = spec.units
                hr = r * h_prev
                if self.masks is not None and self.masks[1] is not None:
                    hr = hr * self.masks[1][2]
                hh = act(xh + ops.matmul(hr, recurrent[:, 2 * u:]))
            h = z * h_prev + (1.0 - z) * hh
            return h, h
        c_prev, h_prev = state
        xi, xf, xc, xo = self._inputs_part(inputs, [0, 1, 2, 3])
        i = rec(xi + self._recurrent_part(h_prev, 0))
        f = rec(xf + self._recurrent_part(h_prev, 1))
        c = f * c_prev + i * act(xc + self._recurrent_part(h_prev, 2))
        o = rec(xo + self._recurrent_part(h_prev, 3))
        h = o * act(c)
        return h, _rnn.LSTMStateTuple(c, h)


def make_masks(spec, x, training):
    """(input masks [gates, batch, depth] or None, recurrent masks [gates, batch, units] or
    None) for a batch of [batch, time, depth] inputs: dropped (scaled by 1 / (1 - rate)) in
    training, ones otherwise. `training`: a bool tensor, a Python bool, or None for the
    learning phase."""
    from shardflow.keras import backend as K
    from shardflow.nn import dropout
    if not spec.dropout and not spec.recurrent_dropout:
        return None
    batch = ops.shape(x)[0]

    def masks(rate, width):
        if not rate:
            return None
        ones = ops.ones(_array.stack([spec.gates, batch, width]), dtype=x.dtype)
        return K.in_train_phase(lambda: dropout(ones, rate=rate), ones, training=training)
    depth = x.shape.as_list()[-1]
    depth = depth if depth is not None else ops.shape(x)[2]
    return masks(spec.dropout, depth), masks(spec.recurrent_dropout, spec.units)


__all__ = ["KerasRecurrentCell", "RecurrentSpec", "make_masks"]
