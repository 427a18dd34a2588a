"""tf.contrib.crf: a linear-chain conditional random field over [batch, time, num_tags] unary
potentials (TF 1.x's tensorflow/contrib/crf), for sequence tagging on top of an RNN.

Example (a tagger's loss and its decoding)::

    logits = sf.layers.dense(rnn_outputs, num_tags)           # [batch, time, num_tags]
    log_likelihood, transitions = sf.contrib.crf.crf_log_likelihood(
        logits, tags, lengths)                                 # makes variable "transitions"
    loss = sf.reduce_mean(-log_likelihood)
    best_tags, best_score = sf.contrib.crf.crf_decode(logits, transitions, lengths)

As TF's: the score of a tag sequence y of length L is sum_t inputs[t, y_t] +
sum_{t>0} transitions[y_{t-1}, y_t]; positions at or past a sequence's length are masked out
(a length of 0 scores 0 and has log-normalizer 0). crf_log_norm is the forward algorithm run by
dynamic_rnn over CrfForwardRnnCell (gradients flow to the inputs and the transitions);
viterbi_decode is NumPy, and crf_decode runs the same Viterbi algorithm in a PyFunc node
(shardflow/script_ops.py: the process that built the graph runs it), its best_score
recomputed in the graph from the decoded tags so that it has TF's gradient.
"""

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.array_composites import sequence_mask
from shardflow.control_flow import cond
from shardflow.framework import convert_to_tensor
from shardflow.math_composites import reduce_logsumexp
from shardflow.rnn_cell import RNNCell, dynamic_rnn
from shardflow.script_ops import py_func
from shardflow.variable_scope import get_variable


def _static_dim(t, axis):
    return t.shape.as_list()[axis] if t.shape.ndims is not None else None


def _by_length(inputs, single_fn, multi_fn):
    """single_fn() when inputs ([batch, time, ...]) has one time step, else multi_fn(): chosen
    when the graph is built if the time dimension is known, else by a cond (TF's smart_cond)."""
    time = _static_dim(inputs, 1)
    if time is not None:
        return single_fn() if time == 1 else multi_fn()
    return cond(ops.equal(ops.shape(inputs)[1], 1), single_fn, multi_fn)


def _zero_where_empty(values, sequence_lengths):
    return array_ops.where(ops.less_equal(sequence_lengths, 0), ops.zeros_like(values), values)


def crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params):
    """The unnormalized score of each tag sequence: [batch] from `inputs` [batch, time,
    num_tags] (unary potentials), `tag_indices` [batch, time] (int), `sequence_lengths`
    [batch] and `transition_params` [num_tags, num_tags] (TF1's
    tf.contrib.crf.crf_sequence_score)."""
    inputs = convert_to_tensor(inputs)
    tag_indices = convert_to_tensor(tag_indices)
    sequence_lengths = convert_to_tensor(sequence_lengths)
    transition_params = convert_to_tensor(transition_params, dtype=inputs.dtype)

    def single_seq_fn():
        # inputs[b, 0, tag_indices[b, 0]], read from the flattened inputs (TF's gather_nd).
        shape = ops.shape(inputs, out_type=tag_indices.dtype)
        flat_index = ops.add(ops.multiply(array_ops.range(shape[0], dtype=tag_indices.dtype),
                                          shape[2]), array_ops.gather(tag_indices, 0, axis=1))
        scores = array_ops.gather(ops.reshape(inputs, [-1]), flat_index)
        return _zero_where_empty(scores, sequence_lengths)

    def multi_seq_fn():
        return ops.add(crf_unary_score(tag_indices, sequence_lengths, inputs),
                       crf_binary_score(tag_indices, sequence_lengths, transition_params))

    return _by_length(inputs, single_seq_fn, multi_seq_fn)


def crf_unary_score(tag_indices, sequence_lengths, inputs):
    """sum_{t < length} inputs[b, t, tag_indices[b, t]] for each b: [batch] (TF1's
    tf.contrib.crf.crf_unary_score)."""
    inputs = convert_to_tensor(inputs)
    tag_indices = convert_to_tensor(tag_indices)
    shape = ops.shape(inputs)
    batch_size, max_seq_len, num_tags = shape[0], shape[1], shape[2]
    flattened_inputs = ops.reshape(inputs, [-1])
    offsets = ops.add(
        ops.expand_dims(ops.multiply(ops.multiply(array_ops.range(batch_size), max_seq_len),
                                     num_tags), 1),
        ops.expand_dims(ops.multiply(array_ops.range(max_seq_len), num_tags), 0))
    if tag_indices.dtype != dtypes.int32:
        offsets = ops.cast(offsets, tag_indices.dtype)
    flattened_tag_indices = ops.reshape(ops.add(offsets, tag_indices), [-1])
    unary_scores = ops.reshape(array_ops.gather(flattened_inputs, flattened_tag_indices),
                               array_ops.stack([batch_size, max_seq_len]))
    masks = sequence_mask(sequence_lengths, maxlen=ops.shape(tag_indices)[1],
                          dtype=inputs.dtype)
    return ops.reduce_sum(ops.multiply(unary_scores, masks), 1)


def crf_binary_score(tag_indices, sequence_lengths, transition_params):
    """sum_{0 < t < length} transition_params[tag_{t-1}, tag_t] for each sequence: [batch]
    (TF1's tf.contrib.crf.crf_binary_score; num_tags must be known)."""
    tag_indices = convert_to_tensor(tag_indices)
    transition_params = convert_to_tensor(transition_params)
    num_tags = _static_dim(transition_params, 0)
    if num_tags is None:
        raise ValueError("crf_binary_score: transition_params needs a known shape "
                         "[num_tags, num_tags], got %s" % transition_params.shape)
    start_tag_indices = tag_indices[:, :-1]
    end_tag_indices = tag_indices[:, 1:]
    flattened_transition_indices = ops.add(ops.multiply(start_tag_indices, num_tags),
                                           end_tag_indices)
    flattened_transition_params = ops.reshape(transition_params, [-1])
    binary_scores = array_ops.gather(flattened_transition_params, flattened_transition_indices)
    masks = sequence_mask(sequence_lengths, maxlen=ops.shape(tag_indices)[1],
                          dtype=transition_params.dtype)
    truncated_masks = masks[:, 1:]
    return ops.reduce_sum(ops.multiply(binary_scores, truncated_masks), 1)


class CrfForwardRnnCell(RNNCell):
    """One step of the CRF's forward algorithm (TF1's tf.contrib.crf.CrfForwardRnnCell):
    state alpha [batch, num_tags] -> inputs + logsumexp_i(alpha[:, i] + transitions[i, :]),
    which is both the output and the new state. It has no variables."""

    def __init__(self, transition_params):
        transition_params = convert_to_tensor(transition_params)
        num_tags = _static_dim(transition_params, 0)
        if num_tags is None:
            raise ValueError("CrfForwardRnnCell: transition_params needs a known shape "
                             "[num_tags, num_tags], got %s" % transition_params.shape)
        super().__init__()
        self._transition_params = ops.expand_dims(transition_params, 0)
        self._num_tags = num_tags

    @property
    def state_size(self):
        return self._num_tags

    @property
    def output_size(self):
        return self._num_tags

    def __call__(self, inputs, state, scope=None):
        state = ops.expand_dims(state, 2)
        transition_scores = ops.add(state, self._transition_params)
        new_alphas = ops.add(inputs, reduce_logsumexp(transition_scores, [1]))
        return new_alphas, new_alphas


def crf_log_norm(inputs, sequence_lengths, transition_params):
    """log Z, the log of the sum of exp(score) over all tag sequences of each length: [batch]
    (TF1's tf.contrib.crf.crf_log_norm; the forward algorithm, 0 for a length of 0)."""
    inputs = convert_to_tensor(inputs)
    sequence_lengths = convert_to_tensor(sequence_lengths)
    transition_params = convert_to_tensor(transition_params, dtype=inputs.dtype)
    first_input = array_ops.gather(inputs, 0, axis=1)

    def single_seq_fn():
        return _zero_where_empty(reduce_logsumexp(first_input, [1]), sequence_lengths)

    def multi_seq_fn():
        rest_of_input = inputs[:, 1:]
        forward_cell = CrfForwardRnnCell(transition_params)
        lengths_less_one = ops.maximum(ops.subtract(sequence_lengths, 1),
                                       ops.zeros_like(sequence_lengths))
        _, alphas = dynamic_rnn(forward_cell, rest_of_input, sequence_length=lengths_less_one,
                                initial_state=first_input, dtype=inputs.dtype)
        return _zero_where_empty(reduce_logsumexp(alphas, [1]), sequence_lengths)

    return _by_length(inputs, single_seq_fn, multi_seq_fn)


def crf_log_likelihood(inputs, tag_indices, sequence_lengths, transition_params=None):
    """(log_likelihood [batch], transition_params): the log-probability of each tag sequence
    under the CRF, score - log Z (TF1's tf.contrib.crf.crf_log_likelihood). Without
    `transition_params` the [num_tags, num_tags] variable "transitions" of the current
    variable scope is made (get_variable, its default initializer) and returned. Train with
    ``loss = sf.reduce_mean(-log_likelihood)``."""
    inputs = convert_to_tensor(inputs)
    num_tags = _static_dim(inputs, 2)
    if transition_params is None:
        if num_tags is None:
            raise ValueError("crf_log_likelihood: inputs need a known last dimension "
                             "(num_tags), got %s" % inputs.shape)
        transition_params = get_variable("transitions", [num_tags, num_tags],
                                         dtype=inputs.dtype)
    sequence_scores = crf_sequence_score(inputs, tag_indices, sequence_lengths,
                                         transition_params)
    log_norm = crf_log_norm(inputs, sequence_lengths, transition_params)
    return ops.subtract(sequence_scores, log_norm), transition_params


def viterbi_decode(score, transition_params):
    """The highest-scoring tag sequence of one example, in NumPy, outside the graph (TF1's
    tf.contrib.crf.viterbi_decode): `score` [seq_len, num_tags] and `transition_params`
    [num_tags, num_tags] arrays; returns (the tags, a list of seq_len ints, and their score)."""
    score = np.asarray(score)
    transition_params = np.asarray(transition_params)
    trellis = np.zeros_like(score)
    backpointers = np.zeros_like(score, dtype=np.int32)
    trellis[0] = score[0]
    for t in range(1, score.shape[0]):
        v = np.expand_dims(trellis[t - 1], 1) + transition_params
        trellis[t] = score[t] + np.max(v, 0)
        backpointers[t] = np.argmax(v, 0)
    viterbi = [int(np.argmax(trellis[-1]))]
    for bp in reversed(backpointers[1:]):
        viterbi.append(int(bp[viterbi[-1]]))
    viterbi.reverse()
    return viterbi, np.max(trellis[-1])


def crf_decode(potentials, transition_params, sequence_length):
    """(decode_tags [batch, time] int32, best_score [batch]): the Viterbi tags of each
    sequence in the graph (TF1's tf.contrib.crf.crf_decode). Tags past a sequence's length
    are 0; a length of 0 decodes as a length of 1, as TF's does. The tags come from a PyFunc
    node; best_score is their score computed in the graph (its gradient flows to the
    potentials and the transitions, as TF's)."""
    potentials = convert_to_tensor(potentials)
    transition_params = convert_to_tensor(transition_params, dtype=potentials.dtype)
    sequence_length = convert_to_tensor(sequence_length)

    def decode(pots, trans, lengths):
        pots = np.asarray(pots)
        tags = np.zeros(pots.shape[:2], np.int32)
        for b in range(pots.shape[0]):
            n = min(max(int(lengths[b]), 1), pots.shape[1])
            if n > 0:
                tags[b, :n] = viterbi_decode(pots[b, :n], trans)[0]
        return tags

    decode_tags = py_func(decode, [potentials, transition_params, sequence_length],
                          dtypes.int32, stateful=False, name="CrfDecode")
    # A reshape to [batch, time] gives the tags a rank the engine knows too (a PyFunc's
    # outputs have none), which the gradients of best_score need.
    decode_tags = ops.reshape(decode_tags, ops.shape(potentials)[:2])
    if potentials.shape.ndims is not None:
        decode_tags.set_shape(potentials.shape.as_list()[:2])
    effective = ops.maximum(sequence_length, ops.ones_like(sequence_length))
    best_score = crf_sequence_score(potentials, decode_tags, effective, transition_params)
    return decode_tags, best_score


__all__ = ["CrfForwardRnnCell", "crf_binary_score", "crf_decode", "crf_log_likelihood",
           "crf_log_norm", "crf_sequence_score", "crf_unary_score", "viterbi_decode"]
