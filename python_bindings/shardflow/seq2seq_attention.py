"""tf.contrib.seq2seq's attention: BahdanauAttention (additive), LuongAttention
(multiplicative), AttentionWrapper (an RNN cell attending over a memory at every step, as
dynamic_rnn, BasicDecoder or a hand-written loop drive it), AttentionWrapperState and
tile_batch, with TF1's variable names (memory_layer, query_layer, attention_v, attention_g,
attention_layer).

Note [TF1's attention variable names]. So that checkpoints of TF 1.15 seq2seq models restore by
name: a mechanism's memory_layer kernel is "<scope where it is made>/memory_layer/kernel";
when the AttentionWrapper calls it, the scoring variables are made in a scope named by default
"bahdanau_attention" or "luong_attention" inside the wrapper's ("<decoder>/attention_wrapper/
bahdanau_attention/query_layer/kernel", ".../attention_v", ".../luong_attention/attention_g").
The mechanism's `name` names its ops only, as TF1's.

Example::

    attention = sf.contrib.seq2seq.LuongAttention(units, encoder_outputs,
                                                  memory_sequence_length=source_lengths)
    cell = sf.contrib.seq2seq.AttentionWrapper(sf.nn.rnn_cell.LSTMCell(units), attention,
                                               attention_layer_size=units,
                                               alignment_history=True)
    state = cell.zero_state(batch, sf.float32).clone(cell_state=encoder_state)
    outputs, final = sf.nn.dynamic_rnn(cell, decoder_inputs, initial_state=state)
    alignments = final.alignment_history.stack()           # [time, batch, memory_time]

Positions of the memory past memory_sequence_length get score_mask_value (-inf) before the
softmax, so they get no attention; the memory there is zeroed as in TF1.
"""

import collections

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.array_composites import sequence_mask
from shardflow.framework import convert_to_tensor, get_default_graph
from shardflow.rnn_cell import RNNCell
from shardflow.tensor_array import TensorArray
from shardflow.variable_scope import (constant_initializer, get_variable,
                                      variable_scope)


class _Projection:
    """x @ kernel, no bias (TF1's memory_layer, query_layer and attention_layer); the kernel,
    "<scope>/<name>/kernel" in the input's dtype, is made on the first call, the name made
    unique in its scope as TF1's layers' are (memory_layer, memory_layer_1, ...)."""

    def __init__(self, units, name):
        self.units, self._name, self._kernel = int(units), name, None

    def __call__(self, x):
        if self._kernel is None:
            depth = x.shape.as_list()[-1]
            with variable_scope(None, default_name=self._name):
                self._kernel = get_variable("kernel", [depth, self.units], dtype=x.dtype)
        return ops.matmul(x, self._kernel)


def _dense_3d(layer, x):
    """`layer` (a _Projection) on the last dimension of x [batch, time, depth]."""
    depth = x.shape.as_list()[-1]
    flat = layer(ops.reshape(x, [-1, depth]))
    shape = ops.concat([ops.shape(x)[:2], ops.constant(np.array([layer.units], np.int32))], 0)
    return ops.reshape(flat, shape)


def _batch(x):
    b = x.shape.as_list()[0] if x.shape.ndims else None
    return b if b is not None else ops.shape(x)[0]


class _BaseAttentionMechanism:
    """Keys (the memory through memory_layer) and values (the memory) for a query to score."""

    def __init__(self, num_units, memory, memory_sequence_length, probability_fn,
                 score_mask_value, query_layer, name):
        self._num_units = int(num_units)
        self._name = name
        # As TF1's, probability_fn maps the scores alone (tf.nn.softmax, sparsemax, ...).
        probability_fn = probability_fn or _softmax
        self._probability_fn = lambda score, _: probability_fn(score)
        self._score_mask_value = score_mask_value
        self.query_layer = query_layer
        # As TF1's: `name` names the ops only; memory_layer's kernel is "<scope>/memory_layer/
        # kernel" in the variable scope the mechanism is made in, and the scoring variables
        # live under "bahdanau_attention" / "luong_attention" where it is called (Note [TF1's
        # attention variable names]).
        with get_default_graph().name_scope(name):
            memory = convert_to_tensor(memory)
            if memory.shape.ndims != 3 or memory.shape.as_list()[-1] is None:
                raise ValueError("%s: memory must be [batch, max_time, depth] with a known "
                                 "depth, got %s" % (name, memory.shape))
            self._mask = None
            if memory_sequence_length is not None:
                self._mask = sequence_mask(memory_sequence_length, ops.shape(memory)[1],
                                           dtype=dtypes.bool_)
                memory = memory * ops.expand_dims(ops.cast(self._mask, memory.dtype), 2)
            self.values = memory
            self.memory_layer = _Projection(num_units, "memory_layer")
            self.keys = _dense_3d(self.memory_layer, memory)
        self.batch_size = _batch(memory)
        self.alignments_size = memory.shape.as_list()[1] or ops.shape(memory)[1]

    @property
    def state_size(self):
        return self.alignments_size

    def initial_alignments(self, batch_size, dtype):
        return ops.fill(array_ops.stack([convert_to_tensor(batch_size),
                                         convert_to_tensor(self.alignments_size)]),
                        ops.constant(0, dtype=dtype))

    def initial_state(self, batch_size, dtype):
        return self.initial_alignments(batch_size, dtype)

    def __call__(self, query, state):
        """(alignments [batch, max_time], next state: the alignments)."""
        with variable_scope(None, default_name=self._call_scope):
            score = self._score(query)
        if self._mask is not None:
            fill = ops.fill(ops.shape(score), ops.constant(self._score_mask_value, score.dtype))
            score = array_ops.where(self._mask, score, fill)
        alignments = self._probability_fn(score, state)
        return alignments, alignments


def _softmax(score):
    from shardflow.nn import softmax
    return softmax(score)


class BahdanauAttention(_BaseAttentionMechanism):
    """score = v . tanh(keys + query_layer(query)) (normalize: v = g v / |v| with a bias b)."""

    _call_scope = "bahdanau_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, normalize=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 custom_key_value_fn=None, name="BahdanauAttention"):
        super().__init__(num_units, memory, memory_sequence_length, probability_fn,
                         -np.inf if score_mask_value is None else score_mask_value,
                         _Projection(num_units, "query_layer"), name)
        self._normalize = normalize

    def _score(self, query):
        processed = ops.expand_dims(self.query_layer(query), 1)
        dtype = processed.dtype
        v = get_variable("attention_v", [self._num_units], dtype=dtype)
        if self._normalize:
            g = get_variable("attention_g", [], dtype=dtype,
                             initializer=constant_initializer(np.sqrt(1.0 / self._num_units)))
            b = get_variable("attention_b", [self._num_units], dtype=dtype,
                             initializer=constant_initializer(0.0))
            v = g * v / ops.sqrt(ops.reduce_sum(v * v))
            return ops.reduce_sum(v * ops.tanh(self.keys + processed + b), axis=2)
        return ops.reduce_sum(v * ops.tanh(self.keys + processed), axis=2)


class LuongAttention(_BaseAttentionMechanism):
    """score = keys . query (scale: times a learned scalar g); the query's depth must be
    num_units."""

    _call_scope = "luong_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, scale=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 custom_key_value_fn=None, name="LuongAttention"):
        super().__init__(num_units, memory, memory_sequence_length, probability_fn,
                         -np.inf if score_mask_value is None else score_mask_value, None, name)
        self._scale = scale

    def _score(self, query):
        depth = query.shape.as_list()[-1]
        if depth != self._num_units:
            raise ValueError("LuongAttention: the query's depth (%s) must equal num_units (%d);"
                             " the wrapped cell's output is the query" % (depth, self._num_units))
        score = ops.reduce_sum(self.keys * ops.expand_dims(query, 1), axis=2)
        if self._scale:
            g = get_variable("attention_g", [], dtype=score.dtype,
                             initializer=constant_initializer(1.0))
            score = g * score
        return score


def hardmax(logits, name=None):
    """TF1's tf.contrib.seq2seq.hardmax: one-hot of the argmax along the last axis."""
    logits = convert_to_tensor(logits)
    depth = logits.shape.as_list()[-1]
    if depth is None:
        depth = ops.shape(logits)[-1]
    return array_ops.one_hot(ops.argmax(logits, -1), depth, dtype=logits.dtype, name=name)


def safe_cumprod(x, *args, **kwargs):
    """TF1's tf.contrib.seq2seq.safe_cumprod: cumprod as exp(cumsum(log(x))), x clipped to
    [tiny, 1] so that the log and its gradient stay finite."""
    x = convert_to_tensor(x)
    tiny = np.finfo(x.dtype.as_numpy_dtype).tiny
    return ops.exp(ops.cumsum(ops.log(ops.clip_by_value(x, tiny, 1.0)), *args, **kwargs))


def monotonic_attention(p_choose_i, previous_attention, mode):
    """TF1's tf.contrib.seq2seq.monotonic_attention (Raffel et al. 2017): the expected
    monotonic alignments [batch, memory_time] from the probabilities p_choose_i of stopping
    at each memory entry and the previous step's alignments. mode "recursive" (exact, a scan
    over the memory), "parallel" (cumulative products; exact up to rounding) or "hard"
    (p_choose_i 0 or 1: the first chosen entry at or after the previous one)."""
    p_choose_i = convert_to_tensor(p_choose_i)
    previous_attention = convert_to_tensor(previous_attention)
    if mode == "recursive":
        from shardflow.functional_ops import scan
        one_minus = ops.concat([ops.ones_like(p_choose_i[:, :1]), 1.0 - p_choose_i[:, :-1]],
                               1)
        # q_j = (1 - p_{j-1}) q_{j-1} + previous_j, scanned along the memory.
        q = scan(lambda acc, elems: elems[0] * acc + elems[1],
                 (ops.transpose(one_minus, [1, 0]), ops.transpose(previous_attention, [1, 0])),
                 initializer=ops.zeros_like(previous_attention[:, 0]))
        return p_choose_i * ops.transpose(q, [1, 0])
    if mode == "parallel":
        cumprod_1mp = safe_cumprod(1.0 - p_choose_i, axis=1, exclusive=True)
        return p_choose_i * cumprod_1mp * ops.cumsum(
            previous_attention / ops.clip_by_value(cumprod_1mp, 1e-10, 1.0), axis=1)
    if mode == "hard":
        p_choose_i = ops.cast(ops.greater(p_choose_i, 0.5), p_choose_i.dtype)
        p_choose_i = p_choose_i * ops.cumsum(previous_attention, axis=1)
        return p_choose_i * ops.cumprod(1.0 - p_choose_i, axis=1, exclusive=True)
    raise ValueError("monotonic_attention: mode must be 'recursive', 'parallel' or 'hard', "
                     "got %r" % (mode,))


class _Monotonic:
    """The monotonic mechanisms' shared parts: a learned scalar score bias, the probability
    of stopping at each entry sigmoid(score (+ noise)) (a step function in "hard" mode),
    monotonic_attention for the alignments, all mass on entry 0 initially."""

    def _monotonic_init(self, sigmoid_noise, sigmoid_noise_seed, score_bias_init, mode):
        self._sigmoid_noise, self._noise_seed = float(sigmoid_noise), sigmoid_noise_seed
        self._score_bias_init, self._mode = float(score_bias_init), mode
        self._probability_fn = self._monotonic_probability

    def _score(self, query):
        """The attention mechanism's score (the next class in the MRO) plus the bias."""
        return self._score_bias(super()._score(query))

    def _score_bias(self, score):
        bias = get_variable("attention_score_bias", [], dtype=score.dtype,
                            initializer=constant_initializer(self._score_bias_init))
        return score + bias

    def _monotonic_probability(self, score, previous_alignments):
        if self._sigmoid_noise > 0:
            noise = ops.random_normal(ops.shape(score), dtype=score.dtype, seed=self._noise_seed)
            score = score + self._sigmoid_noise * noise
        if self._mode == "hard":
            p_choose_i = ops.cast(ops.greater(score, 0), score.dtype)
        else:
            p_choose_i = ops.sigmoid(score)
        return monotonic_attention(p_choose_i, previous_alignments, self._mode)

    def initial_alignments(self, batch_size, dtype):
        zeros = ops.fill(array_ops.stack([convert_to_tensor(batch_size)]), 0)
        return array_ops.one_hot(zeros, self.alignments_size, dtype=dtype)


class BahdanauMonotonicAttention(_Monotonic, BahdanauAttention):
    """TF1's tf.contrib.seq2seq.BahdanauMonotonicAttention: BahdanauAttention's score plus a
    scalar attention_score_bias (scope "bahdanau_monotonic_attention"), turned into
    alignments by monotonic_attention."""

    _call_scope = "bahdanau_monotonic_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, normalize=False,
                 score_mask_value=None, sigmoid_noise=0.0, sigmoid_noise_seed=None,
                 score_bias_init=0.0, mode="parallel", dtype=None,
                 name="BahdanauMonotonicAttention"):
        super().__init__(num_units, memory, memory_sequence_length, normalize=normalize,
                         score_mask_value=score_mask_value, name=name)
        self._monotonic_init(sigmoid_noise, sigmoid_noise_seed, score_bias_init, mode)


class LuongMonotonicAttention(_Monotonic, LuongAttention):
    """TF1's tf.contrib.seq2seq.LuongMonotonicAttention: LuongAttention's score plus a scalar
    attention_score_bias (scope "luong_monotonic_attention"), turned into alignments by
    monotonic_attention."""

    _call_scope = "luong_monotonic_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, scale=False,
                 score_mask_value=None, sigmoid_noise=0.0, sigmoid_noise_seed=None,
                 score_bias_init=0.0, mode="parallel", dtype=None,
                 name="LuongMonotonicAttention"):
        super().__init__(num_units, memory, memory_sequence_length, scale=scale,
                         score_mask_value=score_mask_value, name=name)
        self._monotonic_init(sigmoid_noise, sigmoid_noise_seed, score_bias_init, mode)


class AttentionWrapperState(collections.namedtuple(
        "AttentionWrapperState", ("cell_state", "attention", "time", "alignments",
                                  "alignment_history", "attention_state"))):
    """The state of an AttentionWrapper: the wrapped cell's state, the last attention vector,
    the step (int32), the last alignments, their TensorArray history (or () when not kept) and
    the mechanism's state."""

    def clone(self, **kwargs):
        """This state with the fields named in kwargs replaced (e.g. cell_state=)."""
        return self._replace(**kwargs)


class AttentionWrapper(RNNCell):
    """`cell` with attention over `attention_mechanism`'s memory: at each step the cell reads
    [inputs, previous attention], its output queries the mechanism, and the attention is the
    alignment-weighted memory (through attention_layer when attention_layer_size is given,
    Luong's concat(cell output, context) @ W). The output is the attention (output_attention)
    or the cell's output."""

    def __init__(self, cell, attention_mechanism, attention_layer_size=None,
                 alignment_history=False, cell_input_fn=None, output_attention=True,
                 initial_cell_state=None, name=None, attention_layer=None):
        self._cell = cell
        self._single = not isinstance(attention_mechanism, (list, tuple))
        self._mechanisms = [attention_mechanism] if self._single else list(attention_mechanism)
        sizes = attention_layer_size
        if sizes is not None and not isinstance(sizes, (list, tuple)):
            sizes = [sizes]
        if sizes is not None and len(sizes) != len(self._mechanisms):
            raise ValueError("AttentionWrapper: %d attention_layer_size values for %d "
                             "mechanisms" % (len(sizes), len(self._mechanisms)))
        self._layers = None
        if attention_layer is not None:
            self._layers = [attention_layer] if not isinstance(attention_layer, (list, tuple)) \
                else list(attention_layer)
        elif sizes is not None:
            # One per mechanism, named as TF's layers are uniquified: attention_layer,
            # attention_layer_1, ...
            self._layers = [_Projection(s, "attention_layer" + ("_%d" % i if i else ""))
                            for i, s in enumerate(sizes)]
        self._attention_size = (sum(layer.units for layer in self._layers) if self._layers
                                else sum(m.values.shape.as_list()[-1] for m in self._mechanisms))
        self._alignment_history = alignment_history
        self._cell_input_fn = cell_input_fn or (lambda inputs, attention:
                                                ops.concat([inputs, attention], -1))
        self._output_attention = output_attention
        self._initial_cell_state = initial_cell_state
        self._name = name
        self._scope = None

    @property
    def output_size(self):
        return self._attention_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self):
        return AttentionWrapperState(
            cell_state=self._cell.state_size, attention=self._attention_size, time=(),
            alignments=self._pick([m.alignments_size for m in self._mechanisms]),
            alignment_history=(), attention_state=self._pick(
                [m.state_size for m in self._mechanisms]))

    def _pick(self, values):
        return values[0] if self._single else tuple(values)

    def zero_state(self, batch_size, dtype):
        cell_state = self._initial_cell_state
        if cell_state is None:
            cell_state = self._cell.zero_state(batch_size, dtype)
        history = ()
        if self._alignment_history:
            history = self._pick([TensorArray(dtype, size=0, dynamic_size=True)
                                  for _ in self._mechanisms])
        attention = ops.fill(array_ops.stack([convert_to_tensor(batch_size),
                                              convert_to_tensor(self._attention_size)]),
                             ops.constant(0, dtype=dtype))
        attention = ops.reshape(attention, [-1, self._attention_size])
        return AttentionWrapperState(
            cell_state=cell_state, attention=attention, time=ops.constant(0),
            alignments=self._pick([m.initial_alignments(batch_size, dtype)
                                   for m in self._mechanisms]),
            alignment_history=history,
            attention_state=self._pick([m.initial_state(batch_size, dtype)
                                        for m in self._mechanisms]))

    def call(self, inputs, state):
        if not isinstance(state, AttentionWrapperState):
            raise TypeError("AttentionWrapper takes an AttentionWrapperState (from zero_state),"
                            " got %r" % (state,))
        cell_inputs = self._cell_input_fn(inputs, state.attention)
        cell_output, next_cell_state = self._cell(cell_inputs, state.cell_state)
        previous = [state.attention_state] if self._single else list(state.attention_state)
        histories = ([state.alignment_history] if self._single
                     else list(state.alignment_history)) if self._alignment_history else []
        attentions, alignments, states, new_histories = [], [], [], []
        for k, mechanism in enumerate(self._mechanisms):
            align, next_state = mechanism(cell_output, previous[k])
            context = ops.reduce_sum(ops.expand_dims(align, 2) * mechanism.values, axis=1)
            if self._layers is not None:
                context = self._layers[k](ops.concat([cell_output, context], 1))
            attentions.append(context)
            alignments.append(align)
            states.append(next_state)
            if histories:
                new_histories.append(histories[k].write(state.time, align))
        attention = attentions[0] if len(attentions) == 1 else ops.concat(attentions, 1)
        next_state = AttentionWrapperState(
            cell_state=next_cell_state, attention=attention, time=state.time + 1,
            alignments=self._pick(alignments),
            alignment_history=self._pick(new_histories) if histories else (),
            attention_state=self._pick(states))
        return (attention if self._output_attention else cell_output), next_state


def tile_batch(t, multiplier, name=None):
    """Each batch entry of `t` (a tensor or a nested structure of them) repeated `multiplier`
    times in place: [batch, ...] -> [batch * multiplier, ...], as beam search needs."""
    if isinstance(t, (list, tuple)):
        items = [tile_batch(x, multiplier) for x in t]
        return type(t)(*items) if hasattr(t, "_fields") else type(t)(items)
    t = convert_to_tensor(t)
    if t.shape.ndims == 0:
        raise ValueError("tile_batch needs tensors with a batch dimension")
    # Row b of the result is row b // multiplier of t: a gather, whose shape the engine infers
    # ([?] + t's other dimensions: attention needs the memory's depth known).
    rows = array_ops.range(ops.shape(t)[0])
    index = ops.reshape(array_ops.tile(ops.expand_dims(rows, 1), [1, int(multiplier)]), [-1])
    out = array_ops.gather(t, index)
    dims = t.shape.as_list()
    out.set_shape([dims[0] * int(multiplier) if dims[0] is not None else None] + dims[1:])
    return ops.identity(out, name=name) if name else out


__all__ = ["AttentionWrapper", "AttentionWrapperState", "BahdanauAttention",
           "BahdanauMonotonicAttention", "LuongAttention", "LuongMonotonicAttention", "hardmax",
           "monotonic_attention", "safe_cumprod", "tile_batch"]
