"""tf.contrib.seq2seq, the part TF1 sequence-to-sequence programs use most: sequence_loss, and
decoding with BasicDecoder + TrainingHelper (teacher forcing, one dynamic_rnn) or
GreedyEmbeddingHelper (feeding back the argmax's embedding until end_token, unrolled up to
maximum_iterations), through dynamic_decode. Any other Decoder (one's own, or BasicDecoder with
CustomHelper, InferenceHelper or a Helper of one's own) runs TF1's generic loop: a while_loop
of decoder.step. The attention mechanisms and AttentionWrapper are in seq2seq_attention.py;
beam search in seq2seq_beam_search.py.

Example::

    helper = sf.contrib.seq2seq.TrainingHelper(decoder_inputs, target_lengths)
    decoder = sf.contrib.seq2seq.BasicDecoder(cell, helper, encoder_state,
                                              output_layer=sf.layers.Dense(vocab))
    outputs, state, lengths = sf.contrib.seq2seq.dynamic_decode(decoder)
    loss = sf.contrib.seq2seq.sequence_loss(outputs.rnn_output, targets, weights)
"""

import collections

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.framework import TensorShape, convert_to_tensor
from shardflow.math_composites import count_nonzero, div_no_nan, size
from shardflow.nest import map_structure
from shardflow.nn import sparse_softmax_cross_entropy_with_logits
from shardflow.rnn_cell import _zeros, dynamic_rnn
from shardflow.tensor_array import TensorArray
from shardflow.tensor_util import constant_value
from shardflow.seq2seq_attention import (AttentionWrapper, AttentionWrapperState,  # noqa: F401
                                         BahdanauAttention, BahdanauMonotonicAttention,
                                         LuongAttention, LuongMonotonicAttention, hardmax,
                                         monotonic_attention, safe_cumprod, tile_batch)
from shardflow.seq2seq_beam_search import (BeamSearchDecoder,  # noqa: F401
                                           BeamSearchDecoderOutput, BeamSearchDecoderState,
                                           FinalBeamDecoderOutput, beam_search_decode,
                                           gather_tree)
from shardflow.variable_scope import variable_scope


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, sum_over_timesteps=False, sum_over_batch=False,
                  softmax_loss_function=None, name=None):
    """Weighted cross-entropy of `logits` [batch, time, classes] against int `targets`
    [batch, time], as TF 1.15's. Averaging over a dimension divides the weighted sum by the
    sum of the weights; summing over it (sum_over_*) divides by the number of non-zero
    weights. Both dimensions reduced: a scalar; one: [time] or [batch]; none: [batch, time].
    A dimension may be averaged or summed, not both."""
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError("sequence_loss: average_across_timesteps and sum_over_timesteps "
                         "cannot both be true")
    if average_across_batch and sum_over_batch:
        raise ValueError("sequence_loss: average_across_batch and sum_over_batch cannot both "
                         "be true")
    logits = convert_to_tensor(logits)
    targets = convert_to_tensor(targets)
    weights = convert_to_tensor(weights, dtype=logits.dtype)
    if logits.shape.ndims not in (None, 3) or targets.shape.ndims not in (None, 2):
        raise ValueError("sequence_loss takes logits [batch, time, classes] and targets "
                         "[batch, time], got %s and %s" % (logits.shape, targets.shape))
    if weights.shape.ndims not in (None, 2):
        raise ValueError("sequence_loss takes weights [batch, time], got %s" % weights.shape)
    classes = logits.shape.as_list()[-1]
    flat_logits = ops.reshape(logits, [-1, classes if classes is not None else
                                       ops.shape(logits)[2]])
    flat_targets = ops.reshape(targets, [-1])
    if softmax_loss_function is None:
        xent = sparse_softmax_cross_entropy_with_logits(labels=flat_targets, logits=flat_logits)
    else:
        xent = softmax_loss_function(labels=flat_targets, logits=flat_logits)
    xent = ops.reshape(xent, ops.shape(targets)) * weights

    def count(axis):
        return count_nonzero(weights, axis=axis, dtype=logits.dtype)

    if average_across_timesteps and average_across_batch:
        return div_no_nan(ops.reduce_sum(xent), ops.reduce_sum(weights), name=name)
    if sum_over_timesteps and sum_over_batch:
        return div_no_nan(ops.reduce_sum(xent), count(None), name=name)
    if average_across_timesteps or average_across_batch:
        axis = 0 if average_across_batch else 1
        return div_no_nan(ops.reduce_sum(xent, axis=axis), ops.reduce_sum(weights, axis=axis),
                          name=name)
    if sum_over_timesteps or sum_over_batch:
        axis = 0 if sum_over_batch else 1
        return div_no_nan(ops.reduce_sum(xent, axis=axis), count(axis), name=name)
    return ops.identity(xent, name=name)


class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput",
                                                ("rnn_output", "sample_id"))):
    """rnn_output [batch, time, depth] (after the output layer), sample_id [batch, time]."""


class Helper:
    """TF1's tf.contrib.seq2seq.Helper, what BasicDecoder asks at each step: batch_size,
    sample_ids_shape, sample_ids_dtype; initialize() -> (finished [batch] bool, first
    inputs); sample(time, outputs, state) -> sample ids; next_inputs(time, outputs, state,
    sample_ids) -> (finished, next inputs, next state)."""

    @property
    def batch_size(self):
        raise NotImplementedError

    @property
    def sample_ids_shape(self):
        return TensorShape([])

    @property
    def sample_ids_dtype(self):
        return dtypes.int32

    def initialize(self, name=None):
        raise NotImplementedError

    def sample(self, time, outputs, state, name=None):
        raise NotImplementedError

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        raise NotImplementedError


class CustomHelper(Helper):
    """TF1's tf.contrib.seq2seq.CustomHelper: the Helper of three functions, initialize_fn()
    -> (finished, inputs), sample_fn(time, outputs, state) and next_inputs_fn(time, outputs,
    state, sample_ids) -> (finished, next inputs, next state)."""

    def __init__(self, initialize_fn, sample_fn, next_inputs_fn, sample_ids_shape=None,
                 sample_ids_dtype=None):
        self._initialize_fn, self._sample_fn = initialize_fn, sample_fn
        self._next_inputs_fn = next_inputs_fn
        self._sample_ids_shape = TensorShape(sample_ids_shape or [])
        self._sample_ids_dtype = sample_ids_dtype or dtypes.int32
        self._batch_size = None

    @property
    def batch_size(self):
        if self._batch_size is None:
            raise ValueError("CustomHelper: batch_size is known once initialize has run")
        return self._batch_size

    @property
    def sample_ids_shape(self):
        return self._sample_ids_shape

    @property
    def sample_ids_dtype(self):
        return self._sample_ids_dtype

    def initialize(self, name=None):
        finished, inputs = self._initialize_fn()
        if self._batch_size is None:
            self._batch_size = size(finished)
        return finished, inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        return self._next_inputs_fn(time=time, outputs=outputs, state=state,
                                    sample_ids=sample_ids)


class InferenceHelper(Helper):
    """TF1's tf.contrib.seq2seq.InferenceHelper: starts from `start_inputs`; each step's
    sample is sample_fn(outputs) (of sample_shape and sample_dtype), the next inputs
    next_inputs_fn(sample) (the sample itself without it), finished where end_fn(sample)."""

    def __init__(self, sample_fn, sample_shape, sample_dtype, start_inputs, end_fn,
                 next_inputs_fn=None):
        self._sample_fn, self._end_fn = sample_fn, end_fn
        self._sample_shape = TensorShape(sample_shape)
        self._sample_dtype = sample_dtype
        self._next_inputs_fn = next_inputs_fn
        self._start_inputs = convert_to_tensor(start_inputs)
        self._batch_size = _rows(self._start_inputs)

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def sample_ids_shape(self):
        return self._sample_shape

    @property
    def sample_ids_dtype(self):
        return self._sample_dtype

    def initialize(self, name=None):
        return _all_false(self._batch_size), self._start_inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        inputs = sample_ids if self._next_inputs_fn is None else self._next_inputs_fn(sample_ids)
        return self._end_fn(sample_ids), inputs, state


def _rows(x):
    """The batch size (dimension 0) of x: an int when known, else a tensor."""
    rows = x.shape.as_list()[0] if x.shape.ndims else None
    return rows if rows is not None else ops.shape(x)[0]


def _all_false(batch_size):
    return ops.cast(ops.fill(array_ops.stack([convert_to_tensor(batch_size)]), 0), dtypes.bool_)


def _argmax_ids(outputs):
    return ops.cast(ops.argmax(outputs, axis=-1), dtypes.int32)


class TrainingHelper(Helper):
    """Teacher forcing: the decoder reads `inputs` [batch, time, depth] (time_major: [time,
    batch, depth]) for `sequence_length` [batch] steps."""

    def __init__(self, inputs, sequence_length, time_major=False, name=None):
        self.inputs = convert_to_tensor(inputs)
        if time_major:
            self.inputs = ops.transpose(self.inputs, [1, 0, 2])
        self.sequence_length = convert_to_tensor(sequence_length)

    @property
    def batch_size(self):
        return size(self.sequence_length)

    def _read(self, time):
        """The inputs of step `time` [batch, depth], zeros once every sequence has ended."""
        finished = ops.greater_equal(time, ops.cast(self.sequence_length, dtypes.int32))
        steps = ops.shape(self.inputs)[1]
        step = array_ops.gather(self.inputs, ops.minimum(time, steps - 1), axis=1)
        done = ops.logical_or(array_ops.reduce_all(finished), ops.greater_equal(time, steps))
        return finished, array_ops.where_v2(done, ops.zeros_like(step), step)

    def initialize(self, name=None):
        return self._read(ops.constant(0))

    def sample(self, time, outputs, state, name=None):
        return _argmax_ids(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished, inputs = self._read(time + 1)
        return finished, inputs, state


def _coin_flips(probability, batch_size, seed):
    """[batch] bools, each true with `probability` (a scalar, or one per row)."""
    shape = array_ops.stack([convert_to_tensor(batch_size)])
    draws = ops.random_uniform(shape, seed=seed)
    return ops.less(draws, ops.cast(probability, draws.dtype))


def _rows_where(chosen, new, old):
    """Row b of `new` where chosen[b], else of `old`."""
    rank = new.shape.ndims
    if rank is not None and rank > 1:
        chosen = ops.reshape(chosen, [-1] + [1] * (rank - 1))
    return array_ops.where_v2(chosen, new, old)


class ScheduledEmbeddingTrainingHelper(TrainingHelper):
    """TF1's tf.contrib.seq2seq.ScheduledEmbeddingTrainingHelper (scheduled sampling, Bengio
    et al. 2015): as TrainingHelper, but with `sampling_probability` a row's next input is the
    embedding of an id drawn from the softmax of its outputs instead of the given input.
    sample_ids are the drawn ids, -1 where the row was not sampled."""

    def __init__(self, inputs, sequence_length, embedding, sampling_probability,
                 time_major=False, seed=None, scheduling_seed=None, name=None):
        super().__init__(inputs, sequence_length, time_major, name)
        if callable(embedding):
            self._embed = embedding
        else:
            table = convert_to_tensor(embedding)
            self._embed = lambda ids: array_ops.gather(table, ids)
        self._sampling_probability = convert_to_tensor(sampling_probability)
        if self._sampling_probability.shape.ndims not in (0, 1):
            raise ValueError("sampling_probability must be a scalar or a vector [batch], got "
                             "shape %s" % self._sampling_probability.shape)
        self._seed, self._scheduling_seed = seed, scheduling_seed

    def sample(self, time, outputs, state, name=None):
        from shardflow.array_composites import multinomial
        chosen = _coin_flips(self._sampling_probability, self.batch_size,
                             self._scheduling_seed)
        drawn = ops.cast(ops.reshape(multinomial(outputs, 1, seed=self._seed), [-1]),
                         dtypes.int32)
        return array_ops.where_v2(chosen, drawn, ops.zeros_like(drawn) - 1)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished, base, state = super().next_inputs(time, outputs, state, sample_ids)
        sampled = ops.greater(sample_ids, -1)
        embedded = self._embed(ops.maximum(sample_ids, 0))
        inputs = _rows_where(ops.logical_and(sampled, ops.logical_not(
            array_ops.reduce_all(finished))), embedded, base)
        return finished, inputs, state


class ScheduledOutputTrainingHelper(TrainingHelper):
    """TF1's tf.contrib.seq2seq.ScheduledOutputTrainingHelper: as TrainingHelper, but with
    `sampling_probability` a row's next input is its own output (through next_inputs_fn when
    given, then concatenated with auxiliary_inputs of the next step when given). sample_ids
    are the [batch] bools of the rows sampled."""

    def __init__(self, inputs, sequence_length, sampling_probability, time_major=False,
                 seed=None, next_inputs_fn=None, auxiliary_inputs=None, name=None):
        inputs = convert_to_tensor(inputs)
        self._auxiliary = None
        if auxiliary_inputs is not None:
            auxiliary_inputs = convert_to_tensor(auxiliary_inputs)
            inputs = ops.concat([inputs, auxiliary_inputs], -1)
            self._auxiliary = (ops.transpose(auxiliary_inputs, [1, 0, 2]) if time_major
                               else auxiliary_inputs)
        super().__init__(inputs, sequence_length, time_major, name)
        self._sampling_probability = convert_to_tensor(sampling_probability)
        if self._sampling_probability.shape.ndims not in (0, 1):
            raise ValueError("sampling_probability must be a scalar or a vector [batch], got "
                             "shape %s" % self._sampling_probability.shape)
        self._seed, self._next_inputs_fn = seed, next_inputs_fn

    @property
    def sample_ids_dtype(self):
        return dtypes.bool_

    def sample(self, time, outputs, state, name=None):
        return _coin_flips(self._sampling_probability, self.batch_size, self._seed)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished, base, state = super().next_inputs(time, outputs, state, sample_ids)
        fed = outputs if self._next_inputs_fn is None else self._next_inputs_fn(outputs)
        if self._auxiliary is not None:
            steps = ops.shape(self._auxiliary)[1]
            aux = array_ops.gather(self._auxiliary, ops.minimum(time + 1, steps - 1), axis=1)
            fed = ops.concat([fed, aux], -1)
        chosen = ops.logical_and(ops.cast(sample_ids, dtypes.bool_),
                                 ops.logical_not(array_ops.reduce_all(finished)))
        return finished, _rows_where(chosen, fed, base), state


class GreedyEmbeddingHelper(Helper):
    """Inference: starts from `embedding`[start_tokens] and feeds back the embedding of each
    step's argmax; a sequence finishes at `end_token`."""

    def __init__(self, embedding, start_tokens, end_token):
        if callable(embedding):
            self._embed = embedding
        else:
            table = convert_to_tensor(embedding)
            self._embed = lambda ids: array_ops.gather(table, ids)
        self.start_tokens = ops.cast(convert_to_tensor(start_tokens), dtypes.int32)
        # A Python int, or a scalar tensor (the NMT tutorial looks it up in its vocabulary).
        self.end_token = ops.cast(end_token, dtypes.int32) if hasattr(end_token, "op") \
            else int(end_token)

    def _sample(self, logits):
        """Each row's next id: the argmax."""
        return ops.cast(ops.argmax(logits, axis=1), dtypes.int32)

    @property
    def batch_size(self):
        return _rows(self.start_tokens)

    def initialize(self, name=None):
        return _all_false(self.batch_size), self._embed(self.start_tokens)

    def sample(self, time, outputs, state, name=None):
        return self._sample(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished = ops.equal(sample_ids, self.end_token)
        start = self._embed(self.start_tokens)
        inputs = array_ops.where_v2(array_ops.reduce_all(finished), start,
                                    self._embed(sample_ids))
        return finished, inputs, state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """As GreedyEmbeddingHelper, but each step's id is drawn from the softmax of the outputs
    (divided by `softmax_temperature` when given: below 1 sharper, above 1 flatter), as TF1's;
    `seed` makes the draws repeatable."""

    def __init__(self, embedding, start_tokens, end_token, softmax_temperature=None,
                 seed=None):
        super().__init__(embedding, start_tokens, end_token)
        self._temperature = softmax_temperature
        self._seed = seed
        self._draw_ops = 0

    def _sample(self, logits):
        from shardflow.array_composites import multinomial
        if self._temperature is not None:
            logits = logits / self._temperature
        # An unrolled decoder makes a draw op per step: each its own seed, or they would all
        # draw the same numbers (a loop runs one op, whose draws go on).
        seed = None if self._seed is None else self._seed + self._draw_ops
        self._draw_ops += 1
        return ops.cast(ops.reshape(multinomial(logits, 1, seed=seed), [-1]), dtypes.int32)


class Decoder:
    """TF1's tf.contrib.seq2seq.Decoder, what dynamic_decode runs: batch_size, output_size,
    output_dtype (structures of the step outputs), initialize() -> (finished, inputs,
    state), step(time, inputs, state) -> (outputs, next state, next inputs, finished), and
    optionally finalize(outputs, final_state, sequence_lengths) -> (outputs, final_state);
    tracks_own_finished when step's finished already holds the earlier steps'."""

    @property
    def batch_size(self):
        raise NotImplementedError

    @property
    def output_size(self):
        raise NotImplementedError

    @property
    def output_dtype(self):
        raise NotImplementedError

    def initialize(self, name=None):
        raise NotImplementedError

    def step(self, time, inputs, state, name=None):
        raise NotImplementedError

    def finalize(self, outputs, final_state, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        return False


class BasicDecoder(Decoder):
    """`cell` driven by `helper` (a Helper: TrainingHelper, GreedyEmbeddingHelper,
    SampleEmbeddingHelper, InferenceHelper, CustomHelper or one's own) from
    `initial_state`; `output_layer` (e.g. a Dense to the vocabulary) maps each output."""

    def __init__(self, cell, helper, initial_state, output_layer=None):
        if not all(hasattr(helper, m) for m in ("initialize", "sample", "next_inputs")):
            raise TypeError("BasicDecoder: helper must be a tf.contrib.seq2seq.Helper "
                            "(initialize, sample, next_inputs), not %r" % (helper,))
        self.cell, self.helper = cell, helper
        self.initial_state, self.output_layer = initial_state, output_layer

    @property
    def batch_size(self):
        return self.helper.batch_size

    @property
    def output_size(self):
        size = self.cell.output_size
        if self.output_layer is not None:
            size = getattr(self.output_layer, "units", size)
        return BasicDecoderOutput(size, self.helper.sample_ids_shape)

    @property
    def output_dtype(self):
        from shardflow.control_flow import _flatten
        dtype = convert_to_tensor(_flatten(self.initial_state)[0]).dtype
        return BasicDecoderOutput(dtype, self.helper.sample_ids_dtype)

    def initialize(self, name=None):
        finished, inputs = self.helper.initialize()
        return finished, inputs, self.initial_state

    def step(self, time, inputs, state, name=None):
        cell_outputs, cell_state = self.cell(inputs, state)
        if self.output_layer is not None:
            cell_outputs = self.output_layer(cell_outputs)
        sample_ids = self.helper.sample(time=time, outputs=cell_outputs, state=cell_state)
        finished, next_inputs, next_state = self.helper.next_inputs(
            time=time, outputs=cell_outputs, state=cell_state, sample_ids=sample_ids)
        return BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished


def dynamic_decode(decoder, output_time_major=False, impute_finished=False,
                   maximum_iterations=None, parallel_iterations=32, swap_memory=False,
                   scope=None):
    """Runs `decoder`; returns (BasicDecoderOutput, final_state, final_sequence_lengths), or
    for a BeamSearchDecoder (FinalBeamDecoderOutput, BeamSearchDecoderState, lengths [batch,
    beam]). With GreedyEmbeddingHelper and maximum_iterations a Python int, the steps are
    unrolled in the graph (maximum_iterations of them; the outputs end and the state stops at
    the longest sequence, as TF's loop, which ends once all have finished); with a tensor
    (the NMT tutorial's round(2 * max source length)) or None, a while_loop decodes until
    every sequence has emitted end_token or the bound is reached, as TF's (so does a
    BeamSearchDecoder). Any other decoder runs that loop too (_decode_loop)."""
    if isinstance(decoder, BeamSearchDecoder) and isinstance(maximum_iterations,
                                                             (int, np.integer)):
        with variable_scope(scope or "decoder"):
            return beam_search_decode(decoder, maximum_iterations, output_time_major)
    if not all(hasattr(decoder, m) for m in ("initialize", "step", "output_dtype")):
        raise TypeError("dynamic_decode takes a tf.contrib.seq2seq.Decoder (BasicDecoder, "
                        "BeamSearchDecoder or one's own), got %r" % (decoder,))
    helper = getattr(decoder, "helper", None)
    # impute_finished with the inference helpers: the loop zeroes finished rows' outputs
    # and keeps their state (the unrolled path below does neither).
    inference = type(helper) in (GreedyEmbeddingHelper, SampleEmbeddingHelper)
    if type(decoder) is not BasicDecoder or type(helper) not in (
            TrainingHelper, GreedyEmbeddingHelper, SampleEmbeddingHelper) or (
            inference and (impute_finished or not isinstance(maximum_iterations,
                                                             (int, np.integer)))):
        with variable_scope(scope or "decoder"):
            return _decode_loop(decoder, output_time_major, impute_finished,
                                maximum_iterations)
    with variable_scope(scope or "decoder") as decoder_scope:
        if isinstance(helper, TrainingHelper):
            outputs, state, lengths = _teacher_forced(decoder, maximum_iterations,
                                                      impute_finished, decoder_scope)
            if decoder.output_layer is not None:
                outputs = decoder.output_layer(outputs)
            sample_id = ops.cast(ops.argmax(outputs, axis=2), dtypes.int32)
        else:
            state = decoder.initial_state
            inputs = helper._embed(helper.start_tokens)
            finished = ops.zeros_like(helper.start_tokens)  # 1 once end_token was emitted
            lengths = ops.zeros_like(helper.start_tokens)
            outs, ids = [], []
            for _ in range(int(maximum_iterations)):
                # Unrolled, but as TF1's loop ends once every sequence has finished: the
                # state stops there and the outputs end at the longest sequence.
                all_done = ops.equal(ops.reduce_min(finished), 1)
                out, new_state = decoder.cell(inputs, state)
                state = map_structure(lambda old, new: new if isinstance(new, TensorArray)
                                      else array_ops.where_v2(all_done, old, new),
                                      state, new_state)
                if decoder.output_layer is not None:
                    out = decoder.output_layer(out)
                sample = helper._sample(out)
                lengths = lengths + (1 - finished)
                finished = ops.maximum(finished,
                                       ops.cast(ops.equal(sample, helper.end_token),
                                                dtypes.int32))
                outs.append(out)
                ids.append(sample)
                inputs = helper._embed(sample)
            steps = ops.reduce_max(lengths)
            outputs = array_ops.stack(outs, axis=1)[:, :steps]
            sample_id = array_ops.stack(ids, axis=1)[:, :steps]
        if output_time_major:
            outputs = ops.transpose(outputs, [1, 0, 2])
            sample_id = ops.transpose(sample_id, [1, 0])
    return BasicDecoderOutput(outputs, sample_id), state, lengths


def _teacher_forced(decoder, maximum_iterations, impute_finished, scope):
    """TrainingHelper's decoding as TF1's loop runs it: (outputs [batch, time, depth], final
    state, lengths), time = max(sequence_length), at most maximum_iterations. Past a
    sequence's length the cell goes on reading the inputs there (its outputs are kept and its
    state moves on, as TF1's with impute_finished=False), or, with impute_finished, the
    outputs are zeros and the state stays (dynamic_rnn's sequence_length)."""
    helper = decoder.helper
    inputs = helper.inputs
    lengths = ops.cast(helper.sequence_length, dtypes.int32)
    known = constant_value(helper.sequence_length)
    steps = int(np.max(known)) if known is not None and np.size(known) else None
    if maximum_iterations is not None:
        lengths = ops.minimum(lengths, ops.cast(maximum_iterations, dtypes.int32))
        if hasattr(maximum_iterations, "op"):
            steps = None
        elif steps is not None:
            steps = min(steps, int(maximum_iterations))
    time = inputs.shape.as_list()[1] if inputs.shape.ndims else None
    if steps is None:
        inputs = inputs[:, :ops.reduce_max(lengths)]
    elif steps != time:
        inputs = inputs[:, :steps]
    # In the decoder's own scope (no "rnn" level), as TF1 names the cell's variables:
    # "decoder/<cell>/kernel" whichever helper drives it.
    outputs, state = dynamic_rnn(decoder.cell, inputs,
                                 sequence_length=lengths if impute_finished else None,
                                 initial_state=decoder.initial_state, scope=scope)
    return outputs, state, lengths


def _keep_finished(finished, new, old):
    """`old` in the rows that had finished, else `new`; TensorArrays and scalars (a step
    counter) take the new value, as TF1's dynamic_decode copies state."""
    if isinstance(new, TensorArray) or convert_to_tensor(new).shape.ndims == 0:
        return new
    new, old = convert_to_tensor(new), convert_to_tensor(old)
    rank = new.shape.ndims
    rows = ops.reshape(finished, [-1] + [1] * (rank - 1)) if rank else finished
    return array_ops.where_v2(rows, old, new)


def _decode_loop(decoder, output_time_major, impute_finished, maximum_iterations):
    """TF1's dynamic_decode for any Decoder: a while_loop of decoder.step until every row has
    finished (or maximum_iterations steps); the outputs of each step (zeros in the rows
    already finished, whose state is kept, with impute_finished) are stacked along time. A
    row's length is the number of steps up to and including the one it finished at.

    The outputs are loop variables (starting as zeros of decoder.output_size, as TF1's
    zero outputs) read back from the loop's history, so the batch size need not be known
    when the graph is built (a growing TensorArray would need its rows' shape). A
    TensorArray in the state (AttentionWrapper's alignment_history) needs a row written
    before the loop for that: then step 0 runs before it, the loop's steps reusing its
    variables, as dynamic_rnn does."""
    from shardflow.control_flow import _build_while, _flatten, _growing_arrays, _pack
    from shardflow.variable_scope import get_variable_scope
    finished, inputs, state = decoder.initialize()
    finished = ops.cast(convert_to_tensor(finished), dtypes.bool_)
    limit = None
    if maximum_iterations is not None:
        limit = ops.cast(convert_to_tensor(maximum_iterations), dtypes.int32)
        finished = ops.logical_or(finished, ops.greater_equal(0, limit))
    lengths = ops.zeros_like(ops.cast(finished, dtypes.int32))
    batch = decoder.batch_size
    zero_outputs = map_structure(lambda size, dtype: _zeros(batch, size, dtype),
                                 decoder.output_size, decoder.output_dtype)
    own_finished = getattr(decoder, "tracks_own_finished", False)

    def cond(time, outputs, state, inputs, finished, lengths):
        return ops.logical_not(array_ops.reduce_all(finished))

    def body(time, outputs, state, inputs, finished, lengths):
        time = convert_to_tensor(time)
        outputs, next_state, next_inputs, step_finished = decoder.step(time, inputs, state)
        step_finished = ops.cast(convert_to_tensor(step_finished), dtypes.bool_)
        next_finished = step_finished if own_finished else ops.logical_or(step_finished,
                                                                          finished)
        if own_finished and getattr(next_state, "lengths", None) is not None:
            # The decoder counts its lengths (BeamSearchDecoderState.lengths), as TF1's.
            next_lengths = ops.cast(next_state.lengths, dtypes.int32)
        else:
            next_lengths = array_ops.where_v2(finished, lengths,
                                              ops.zeros_like(lengths) + (time + 1))
        if limit is not None:
            next_finished = ops.logical_or(next_finished, ops.greater_equal(time + 1, limit))
        if impute_finished:
            outputs = map_structure(
                lambda out: _keep_finished(finished, out, ops.zeros_like(out)), outputs)
            next_state = map_structure(lambda new, old: _keep_finished(finished, new, old),
                                       next_state, state)
        return [time + 1, outputs, next_state, next_inputs, next_finished, next_lengths]

    loop_vars = [ops.constant(0), zero_outputs, state, inputs, finished, lengths]
    first = 1
    if _growing_arrays(state):
        loop_vars = body(*loop_vars)
        get_variable_scope().reuse_variables()
        first = 0
    op, n, arrays = _build_while(cond, body, loop_vars, name="decoder_while")
    final = _pack(loop_vars, list(op.outputs[:n]), arrays)
    steps = op.outputs[n] + (1 - first)
    # History row i is the outputs entering iteration i: those of the step before (row 0
    # the zeros, or step 0's when it ran before the loop); with the final value, exactly
    # the `steps` steps' outputs.
    stacked = []
    for j, last in enumerate(_flatten(final[1])):
        history = op.outputs[n + 2 + j]
        stacked.append(ops.concat([history[first:], ops.expand_dims(last, 0)], 0)[:steps])
    outputs = _pack(zero_outputs, stacked)
    state, lengths = final[2], final[5]
    try:
        outputs, state = decoder.finalize(outputs, state, lengths)
    except (NotImplementedError, AttributeError):
        pass
    if not output_time_major:
        outputs = map_structure(_batch_major, outputs)
    return outputs, state, lengths


def _batch_major(x):
    """[time, batch, ...] -> [batch, time, ...]."""
    x = convert_to_tensor(x)
    rank = x.shape.ndims
    if rank is None or rank < 2:
        return x
    return ops.transpose(x, [1, 0] + list(range(2, rank)))


__all__ = ["AttentionWrapper", "AttentionWrapperState", "BahdanauAttention",
           "BahdanauMonotonicAttention", "LuongMonotonicAttention", "hardmax",
           "monotonic_attention", "safe_cumprod", "BasicDecoder",
           "BasicDecoderOutput", "BeamSearchDecoder", "BeamSearchDecoderOutput",
           "BeamSearchDecoderState", "CustomHelper", "Decoder", "FinalBeamDecoderOutput",
           "GreedyEmbeddingHelper", "Helper", "InferenceHelper", "LuongAttention",
           "SampleEmbeddingHelper", "ScheduledEmbeddingTrainingHelper",
           "ScheduledOutputTrainingHelper", "TrainingHelper", "dynamic_decode", "gather_tree",
           "sequence_loss", "tile_batch"]
