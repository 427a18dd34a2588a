"""tf.contrib.seq2seq, the part TF1 sequence-to-sequence programs use most: sequence_loss, and
decoding with BasicDecoder + TrainingHelper (teacher forcing, one dynamic_rnn) or
GreedyEmbeddingHelper (feeding back the argmax's embedding until end_token, unrolled up to
maximum_iterations), through dynamic_decode. The attention mechanisms and AttentionWrapper are
in seq2seq_attention.py; beam search is not here.

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
from shardflow.framework import convert_to_tensor
from shardflow.math_composites import count_nonzero, div_no_nan
from shardflow.nest import map_structure
from shardflow.nn import sparse_softmax_cross_entropy_with_logits
from shardflow.rnn_cell import dynamic_rnn
from shardflow.tensor_util import constant_value
from shardflow.seq2seq_attention import (AttentionWrapper, AttentionWrapperState,  # noqa: F401
                                         BahdanauAttention, LuongAttention, tile_batch)
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


class TrainingHelper:
    """Teacher forcing: the decoder reads `inputs` [batch, time, depth] (time_major: [time,
    batch, depth]) for `sequence_length` [batch] steps."""

    def __init__(self, inputs, sequence_length, time_major=False, name=None):
        self.inputs = convert_to_tensor(inputs)
        if time_major:
            self.inputs = ops.transpose(self.inputs, [1, 0, 2])
        self.sequence_length = convert_to_tensor(sequence_length)


class GreedyEmbeddingHelper:
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


class BasicDecoder:
    """`cell` driven by `helper` from `initial_state`; `output_layer` (e.g. a Dense to the
    vocabulary) maps each output."""

    def __init__(self, cell, helper, initial_state, output_layer=None):
        if not isinstance(helper, (TrainingHelper, GreedyEmbeddingHelper)):
            raise TypeError("BasicDecoder: shardflow has TrainingHelper, GreedyEmbeddingHelper "
                            "and SampleEmbeddingHelper, not %r" % (helper,))
        self.cell, self.helper = cell, helper
        self.initial_state, self.output_layer = initial_state, output_layer


def dynamic_decode(decoder, output_time_major=False, impute_finished=False,
                   maximum_iterations=None, parallel_iterations=32, swap_memory=False,
                   scope=None):
    """Runs `decoder`; returns (BasicDecoderOutput, final_state, final_sequence_lengths), or
    for a BeamSearchDecoder (FinalBeamDecoderOutput, BeamSearchDecoderState, lengths [batch,
    beam]). With GreedyEmbeddingHelper and maximum_iterations a Python int, the steps are
    unrolled in the graph (maximum_iterations of them; the outputs end and the state stops at
    the longest sequence, as TF's loop, which ends once all have finished); with a tensor
    (the NMT tutorial's round(2 * max source length)) or None, a while_loop decodes until
    every sequence has emitted end_token or the bound is reached, as TF's. BeamSearchDecoder
    needs a Python int."""
    if isinstance(decoder, BeamSearchDecoder):
        with variable_scope(scope or "decoder"):
            return beam_search_decode(decoder, maximum_iterations, output_time_major)
    if not isinstance(decoder, BasicDecoder):
        raise TypeError("dynamic_decode takes a BasicDecoder or a BeamSearchDecoder, got %r"
                        % (decoder,))
    helper = decoder.helper
    with variable_scope(scope or "decoder") as decoder_scope:
        if isinstance(helper, TrainingHelper):
            outputs, state, lengths = _teacher_forced(decoder, maximum_iterations,
                                                      impute_finished, decoder_scope)
            if decoder.output_layer is not None:
                outputs = decoder.output_layer(outputs)
            sample_id = ops.cast(ops.argmax(outputs, axis=2), dtypes.int32)
        elif maximum_iterations is None or hasattr(maximum_iterations, "op"):
            outputs, sample_id, state, lengths = _greedy_loop(decoder, maximum_iterations)
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
                state = map_structure(lambda old, new: array_ops.where_v2(all_done, old, new),
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


def _greedy_loop(decoder, maximum_iterations):
    """GreedyEmbeddingHelper's decoding as a while_loop: (outputs [batch, time, depth],
    sample ids [batch, time], final state, lengths), time being the steps it ran."""
    from shardflow.control_flow import while_loop
    from shardflow.tensor_array import TensorArray
    helper = decoder.helper
    start = helper.start_tokens
    limit = ops.cast(maximum_iterations, dtypes.int32) if maximum_iterations is not None \
        else ops.constant(np.iinfo(np.int32).max, dtypes.int32)
    zeros = ops.zeros_like(start)

    def cond(t, inputs, state, finished, lengths, outs, ids):
        return ops.logical_and(ops.less(t, limit), ops.less(ops.reduce_min(finished), 1))

    def body(t, inputs, state, finished, lengths, outs, ids):
        out, state = decoder.cell(inputs, state)
        if decoder.output_layer is not None:
            out = decoder.output_layer(out)
        sample = helper._sample(out)
        lengths = lengths + (1 - finished)
        finished = ops.maximum(finished, ops.cast(ops.equal(sample, helper.end_token),
                                                  dtypes.int32))
        return (t + 1, helper._embed(sample), state, finished, lengths, outs.write(t, out),
                ids.write(t, sample))

    first = helper._embed(start)
    outs = TensorArray(dtypes.float32, size=0, dynamic_size=True)
    ids = TensorArray(dtypes.int32, size=0, dynamic_size=True)
    _, _, state, _, lengths, outs, ids = while_loop(
        cond, body, (ops.constant(0), first, decoder.initial_state, zeros, zeros, outs, ids))
    outputs = ops.transpose(outs.stack(), [1, 0, 2])
    sample_id = ops.transpose(ids.stack(), [1, 0])
    return outputs, sample_id, state, lengths


__all__ = ["AttentionWrapper", "AttentionWrapperState", "BahdanauAttention", "BasicDecoder",
           "BasicDecoderOutput", "BeamSearchDecoder", "BeamSearchDecoderOutput",
           "BeamSearchDecoderState", "FinalBeamDecoderOutput", "GreedyEmbeddingHelper",
           "LuongAttention", "SampleEmbeddingHelper", "TrainingHelper", "dynamic_decode", "gather_tree", "sequence_loss",
           "tile_batch"]
