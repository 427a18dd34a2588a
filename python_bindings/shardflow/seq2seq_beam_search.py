"""tf.contrib.seq2seq's beam search: BeamSearchDecoder (driven by dynamic_decode), its state and
output tuples, and gather_tree, with TF1's rules: the first step expands only beam 0; a
finished beam can only emit end_token, at no cost; a hypothesis is scored by its log
probability over the length penalty ((5 + length) / 6) ** length_penalty_weight; the
predicted ids are followed back through the parent ids (gather_tree) after the last step.

Example::

    tiled = sf.contrib.seq2seq.tile_batch(encoder_state, beam_width)
    decoder = sf.contrib.seq2seq.BeamSearchDecoder(cell, embedding, start_tokens, end_token,
                                                   tiled, beam_width, output_layer=projection)
    outputs, state, lengths = sf.contrib.seq2seq.dynamic_decode(decoder, maximum_iterations=20)
    best = outputs.predicted_ids[:, :, 0]                  # [batch, time], the best beam

With maximum_iterations a Python int the steps are unrolled in the graph, as
GreedyEmbeddingHelper's are; the outputs keep the steps TF1's loop would have run (up to the
one at which every beam had finished). With a tensor (the NMT tutorial's bound) or None,
dynamic_decode runs the decoder's step in a while_loop, as TF1's. TensorArrays in the cell
state (AttentionWrapper's alignment_history) are left in the order of the beam slots (TF1
reorders them to follow each final beam back: reorder_tensor_arrays); coverage_penalty_weight
is not supported.
"""

import collections

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.framework import TensorShape, convert_to_tensor
from shardflow.nn import log_softmax, top_k
from shardflow.script_ops import py_func
from shardflow.tensor_array import TensorArray


class BeamSearchDecoderState(collections.namedtuple(
        "BeamSearchDecoderState", ("cell_state", "log_probs", "finished", "lengths",
                                   "accumulated_attention_probs"))):
    """cell_state (each tensor [batch, beam, ...] once decoding is done), log_probs [batch,
    beam], finished [batch, beam] bool, lengths [batch, beam] int64 (end_token counted),
    accumulated_attention_probs (always ())."""


class BeamSearchDecoderOutput(collections.namedtuple(
        "BeamSearchDecoderOutput", ("scores", "predicted_ids", "parent_ids"))):
    """Per step, in the order of the beam slots: the scores (length-penalized log
    probabilities), the ids chosen and the slot each came from."""


class FinalBeamDecoderOutput(collections.namedtuple(
        "FinalBeamDecoderOutput", ("predicted_ids", "beam_search_decoder_output"))):
    """predicted_ids [batch, time, beam] followed back through the parents (beam 0 is the
    best), and the BeamSearchDecoderOutput of each step."""


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token, name=None):
    """Each final beam's ids followed back from its last step: step_ids and parent_ids are
    [max_time, batch, beam] (time-major), max_sequence_lengths [batch]. For batch entry b the
    walk starts at step max_sequence_lengths[b] - 1; later steps, and the steps after the first
    end_token of a beam, get end_token (TF1's GatherTree op)."""
    step_ids = convert_to_tensor(step_ids)
    parent_ids = ops.cast(convert_to_tensor(parent_ids), step_ids.dtype)
    lengths = ops.cast(convert_to_tensor(max_sequence_lengths), step_ids.dtype)
    if step_ids.shape.ndims not in (None, 3):
        raise ValueError("gather_tree takes step_ids [max_time, batch, beam], got shape %s"
                         % step_ids.shape)
    dims = step_ids.shape.as_list() if step_ids.shape.ndims else [None] * 3
    if dims[0] is None or dims[2] is None:
        # The number of steps is only known when the graph runs: NumPy in a PyFunc node.
        out = py_func(lambda s, p, n: _gather_tree_numpy(s, p, n, end_token),
                      [step_ids, parent_ids, lengths], step_ids.dtype, name=name)
        out.set_shape(step_ids.shape)
        return out
    steps, beam = dims[0], dims[2]
    end = ops.cast(ops.constant(end_token), step_ids.dtype)
    slots = ops.zeros_like(array_ops.gather(step_ids, 0)) + ops.cast(
        array_ops.range(beam), step_ids.dtype)             # [batch, beam]: each beam's own slot
    parent, ids = slots, [None] * steps
    for t in reversed(range(steps)):
        inside = ops.logical_and(ops.expand_dims(ops.less(t, lengths), 1),   # step t walked
                                 ops.constant(np.ones([1, beam], bool)))
        rows = _take_slots(array_ops.gather(step_ids, t), parent, beam)
        ids[t] = array_ops.where(inside, rows, ops.zeros_like(rows) + end)
        parent = array_ops.where(inside, _take_slots(array_ops.gather(parent_ids, t), parent,
                                                     beam), parent)
    ids = array_ops.stack(ids)
    ended = ops.cumsum(ops.cast(ops.equal(ids, end), dtypes.int32), axis=0, exclusive=True)
    return ops.identity(array_ops.where(ops.greater(ended, 0), ops.zeros_like(ids) + end, ids),
                        name=name or "gather_tree")


def _gather_tree_numpy(step_ids, parent_ids, lengths, end_token):
    steps, batch, beam = step_ids.shape
    out = np.full_like(step_ids, end_token)
    for b in range(batch):
        n = min(steps, int(lengths[b]))
        for k in range(beam):
            parent = k
            for t in reversed(range(n)):
                if not 0 <= parent < beam:
                    break
                out[t, b, k] = step_ids[t, b, parent]
                parent = parent_ids[t, b, parent]
            ended = np.cumsum(out[:n, b, k] == end_token) - (out[:n, b, k] == end_token)
            out[:n, b, k][ended > 0] = end_token
    return out


def _take_slots(rows, slots, width):
    """rows [batch, width, ...] picked along axis 1 by slots [batch, k] (k <= width):
    out[b, j] = rows[b, slots[b, j]]."""
    offsets = ops.expand_dims(array_ops.range(ops.shape(rows)[0]) * width, 1)
    flat = ops.reshape(ops.cast(slots, dtypes.int32) + offsets, [-1])
    rest = ops.shape(rows)[2:]
    picked = array_ops.gather(ops.reshape(rows, ops.concat([[-1], rest], 0)), flat)
    return ops.reshape(picked, ops.concat([ops.shape(slots), rest], 0))


def _map_cell_state(fn, state):
    """`fn` on each tensor of rank >= 1 in a nested state; scalars (AttentionWrapperState.time)
    and TensorArrays pass through."""
    if isinstance(state, TensorArray):
        return state
    if isinstance(state, (list, tuple)):
        items = [_map_cell_state(fn, s) for s in state]
        return type(state)(*items) if hasattr(state, "_fields") else type(state)(items)
    state = convert_to_tensor(state)
    return state if state.shape.ndims == 0 else fn(state)


def _length_penalty(lengths, weight, dtype):
    if weight == 0:
        return 1.0
    return ops.pow((5.0 + ops.cast(lengths, dtype)) / 6.0, float(weight))


def _beam_search_step(logits, next_cell_state, beam_state, beam_width, end_token,
                      length_penalty_weight):
    """One step of TF1's beam search from `logits` [batch, beam, vocab] and the cell's new state
    (tensors [batch * beam, ...]); returns (BeamSearchDecoderOutput of the step, the next
    BeamSearchDecoderState, its cell state's tensors following their parents)."""
    vocab = logits.shape.as_list()[-1]
    if vocab is None:
        raise ValueError("BeamSearchDecoder needs the vocabulary size (the output layer's "
                         "units) when the graph is built, got logits of shape %s"
                         % logits.shape)
    previously_finished = beam_state.finished
    step_log_probs = log_softmax(logits)
    # A finished beam can only continue with end_token, at no cost.
    finished_row = np.full([vocab], np.finfo(logits.dtype.as_numpy_dtype).min,
                           logits.dtype.as_numpy_dtype)
    finished_row[end_token] = 0
    step_log_probs = array_ops.where(
        ops.logical_and(ops.expand_dims(previously_finished, 2),
                        ops.constant(np.ones([1, 1, vocab], bool))),
        ops.zeros_like(step_log_probs) + ops.constant(finished_row), step_log_probs)
    total = ops.expand_dims(beam_state.log_probs, 2) + step_log_probs
    # Scored lengths: one more for a beam going on, with anything but end_token.
    grows = ops.logical_and(ops.expand_dims(ops.logical_not(previously_finished), 2),
                            ops.constant(np.arange(vocab).reshape(1, 1, -1) != end_token))
    new_lengths = ops.expand_dims(beam_state.lengths, 2) + ops.cast(grows, dtypes.int64)
    scores = total / _length_penalty(new_lengths, length_penalty_weight, total.dtype)
    next_scores, word_indices = top_k(ops.reshape(scores, [-1, beam_width * vocab]),
                                      k=beam_width)
    next_log_probs = _take_slots(ops.reshape(total, [-1, beam_width * vocab]), word_indices,
                                 beam_width * vocab)
    word_ids = ops.cast(ops.floormod(word_indices, vocab), dtypes.int32)
    parent_ids = ops.cast(ops.floordiv(word_indices, vocab), dtypes.int32)
    previously_finished = _take_slots(previously_finished, parent_ids, beam_width)
    next_finished = ops.logical_or(previously_finished, ops.equal(word_ids, end_token))
    next_lengths = (_take_slots(beam_state.lengths, parent_ids, beam_width)
                    + ops.cast(ops.logical_not(previously_finished), dtypes.int64))
    flat_parents = ops.reshape(
        parent_ids + ops.expand_dims(array_ops.range(ops.shape(parent_ids)[0]) * beam_width, 1),
        [-1])
    cell_state = _map_cell_state(lambda s: array_ops.gather(s, flat_parents), next_cell_state)
    state = BeamSearchDecoderState(cell_state=cell_state, log_probs=next_log_probs,
                                   finished=next_finished, lengths=next_lengths,
                                   accumulated_attention_probs=())
    return BeamSearchDecoderOutput(next_scores, word_ids, parent_ids), state


class BeamSearchDecoder:
    """Beam search over `cell` with `beam_width` beams: `initial_state` is the cell state for
    batch * beam_width rows (tile_batch of the encoder's), `embedding` a [vocab, depth] table
    or a function of the ids, `start_tokens` [batch] ids, `output_layer` maps the cell output
    to the vocabulary's logits. Run it with dynamic_decode(decoder, maximum_iterations=N)."""

    def __init__(self, cell, embedding, start_tokens, end_token, initial_state, beam_width,
                 output_layer=None, length_penalty_weight=0.0, coverage_penalty_weight=0.0,
                 reorder_tensor_arrays=True):
        if coverage_penalty_weight:
            raise ValueError("BeamSearchDecoder: coverage_penalty_weight is not supported by "
                             "shardflow; leave it 0")
        if callable(embedding):
            self._embed = embedding
        else:
            table = convert_to_tensor(embedding)
            self._embed = lambda ids: array_ops.gather(table, ids)
        self._start_tokens = ops.cast(convert_to_tensor(start_tokens), dtypes.int32)
        if self._start_tokens.shape.ndims != 1:
            raise ValueError("BeamSearchDecoder: start_tokens must be a vector [batch], got "
                             "shape %s" % self._start_tokens.shape)
        self._end_token = int(end_token)
        self._cell, self._initial_state = cell, initial_state
        self._beam_width = int(beam_width)
        self._output_layer = output_layer
        self._length_penalty_weight = float(length_penalty_weight)

    @property
    def batch_size(self):
        batch = self._start_tokens.shape.as_list()[0]
        return batch if batch is not None else ops.shape(self._start_tokens)[0]

    def _embed_merged(self, ids):
        """The embedding of ids [batch, beam], as cell inputs [batch * beam, depth]."""
        emb = convert_to_tensor(self._embed(ids))
        return ops.reshape(emb, ops.concat([[-1], ops.shape(emb)[2:]], 0)) \
            if emb.shape.ndims is None or emb.shape.as_list()[-1] is None \
            else ops.reshape(emb, [-1, emb.shape.as_list()[-1]])

    def _initial(self):
        batch, beam = self.batch_size, self._beam_width
        first = ops.equal(ops.zeros_like(ops.expand_dims(self._start_tokens, 1)),
                          ops.constant(np.arange(beam, dtype=np.int32).reshape(1, -1)))
        # Only beam 0 is alive at the start: the others are finished, at log probability -inf.
        log_probs = array_ops.where(first, ops.zeros(array_ops.stack([batch, beam])),
                                    ops.fill(array_ops.stack([batch, beam]),
                                             ops.constant(-np.inf, dtypes.float32)))
        state = BeamSearchDecoderState(
            cell_state=self._initial_state, log_probs=log_probs, finished=ops.logical_not(first),
            lengths=ops.zeros(array_ops.stack([batch, beam]), dtypes.int64),
            accumulated_attention_probs=())
        ids = array_ops.tile(ops.expand_dims(self._start_tokens, 1), [1, beam])
        return state, self._embed_merged(ids)

    def _decode(self, maximum_iterations):
        """All the steps: (BeamSearchDecoderOutput [time, batch, beam] each, the last state).
        Time is trimmed to the steps TF1's loop would have run."""
        steps = int(maximum_iterations)
        beam = self._beam_width
        state, inputs = self._initial()
        outputs, all_done = [], []
        for _ in range(steps):
            cell_out, cell_state = self._cell(inputs, state.cell_state)
            if self._output_layer is not None:
                cell_out = self._output_layer(cell_out)
            logits = ops.reshape(cell_out, [-1, beam, cell_out.shape.as_list()[-1]])
            out, state = _beam_search_step(logits, cell_state, state, beam, self._end_token,
                                           self._length_penalty_weight)
            outputs.append(out)
            all_done.append(ops.cast(array_ops.reduce_all(state.finished), dtypes.int32))
            inputs = self._embed_merged(out.predicted_ids)
        # TF1's loop stops after the step at which every beam has finished (finished beams
        # only repeat end_token after it, so the unrolled steps past it add nothing).
        ran = steps - ops.add_n(all_done[:-1]) if steps > 1 else ops.constant(steps)
        keep = array_ops.range(ran)
        stacked = BeamSearchDecoderOutput(
            *[array_ops.gather(array_ops.stack(list(field)), keep) for field in zip(*outputs)])
        return stacked, state

    # The Decoder protocol (tf.contrib.seq2seq.Decoder), which dynamic_decode runs in a
    # while_loop when maximum_iterations is a tensor or None: the cell state stays
    # [batch * beam, ...] in the loop; finalize splits it.

    @property
    def tracks_own_finished(self):
        return True

    @property
    def output_dtype(self):
        return BeamSearchDecoderOutput(dtypes.float32, dtypes.int32, dtypes.int32)

    @property
    def output_size(self):
        beams = TensorShape([self._beam_width])
        return BeamSearchDecoderOutput(beams, beams, beams)

    def initialize(self, name=None):
        state, inputs = self._initial()
        return state.finished, inputs, state

    def step(self, time, inputs, state, name=None):
        beam = self._beam_width
        cell_out, cell_state = self._cell(inputs, state.cell_state)
        if self._output_layer is not None:
            cell_out = self._output_layer(cell_out)
        logits = ops.reshape(cell_out, [-1, beam, cell_out.shape.as_list()[-1]])
        out, next_state = _beam_search_step(logits, cell_state, state, beam, self._end_token,
                                            self._length_penalty_weight)
        return out, next_state, self._embed_merged(out.predicted_ids), next_state.finished

    def finalize(self, outputs, final_state, sequence_lengths=None):
        """(FinalBeamDecoderOutput, final_state) from the time-major step outputs; the cell
        state's tensors split to [batch, beam, ...]."""
        beam = self._beam_width
        split = _map_cell_state(
            lambda s: ops.reshape(s, ops.concat([[-1, beam], ops.shape(s)[1:]], 0)),
            final_state.cell_state)
        final_state = final_state._replace(cell_state=split)
        lengths = ops.cast(ops.reduce_max(final_state.lengths, axis=1), dtypes.int32)
        ids = gather_tree(outputs.predicted_ids, outputs.parent_ids, lengths, self._end_token)
        return FinalBeamDecoderOutput(ids, outputs), final_state


def beam_search_decode(decoder, maximum_iterations, output_time_major):
    """dynamic_decode's work for a BeamSearchDecoder (see contrib_seq2seq.dynamic_decode)."""
    outputs, state = decoder._decode(maximum_iterations)
    final, state = decoder.finalize(outputs, state)
    if not output_time_major:
        final = FinalBeamDecoderOutput(
            ops.transpose(final.predicted_ids, [1, 0, 2]),
            BeamSearchDecoderOutput(*[ops.transpose(x, [1, 0, 2])
                                      for x in final.beam_search_decoder_output]))
    return final, state, ops.cast(state.lengths, dtypes.int32)


__all__ = ["BeamSearchDecoder", "BeamSearchDecoderOutput", "BeamSearchDecoderState",
           "FinalBeamDecoderOutput", "gather_tree"]
