"""tf.contrib.legacy_seq2seq: the list-of-steps sequence helpers of TF1's early tutorials
(the PTB language model, char-rnn): sequence_loss_by_example and sequence_loss over lists of
per-step logits, targets and weights, and rnn_decoder (optionally feeding each output back
through loop_function, as char-rnn's sampling does); and the translate tutorial's models:
basic/tied/embedding RNN seq2seq, attention_decoder, embedding_attention_seq2seq and
model_with_buckets, with TF1's variable names (their encoders copy the cell, as TF1's
copy.deepcopy: _fresh_copy).

Example (char-rnn)::

    outputs, state = legacy_seq2seq.rnn_decoder(inputs, initial_state, cell,
                                                loop_function=loop if infer else None)
    loss = legacy_seq2seq.sequence_loss_by_example(
        [logits], [tf.reshape(targets, [-1])], [tf.ones([batch * steps])])
"""

import copy

from shardflow import array_ops, dtypes, nn, ops
from shardflow.control_flow import _flatten
from shardflow.framework import convert_to_tensor
from shardflow.rnn_cell import RNNCell, static_rnn
from shardflow.variable_scope import (constant_initializer, get_variable, get_variable_scope,
                                      variable_scope)


def _check_lists(logits, targets, weights):
    if not (len(logits) == len(targets) == len(weights)):
        raise ValueError("Lengths of logits, weights, and targets must be the same %d, %d, %d."
                         % (len(logits), len(weights), len(targets)))


def sequence_loss_by_example(logits, targets, weights, average_across_timesteps=True,
                             softmax_loss_function=None, name=None):
    """Per example: the weighted sum over the steps of the cross-entropy of logits[t]
    ([batch, classes]) against targets[t] ([batch] class ids), divided by the sum of the
    weights when average_across_timesteps. softmax_loss_function(labels=, logits=) replaces
    the sparse softmax cross-entropy."""
    _check_lists(logits, targets, weights)
    with ops.get_default_graph().name_scope(name or "sequence_loss_by_example"):
        terms = []
        for logit, target, weight in zip(logits, targets, weights):
            if softmax_loss_function is None:
                target = ops.reshape(target, [-1])
                crossent = nn.sparse_softmax_cross_entropy_with_logits(labels=target,
                                                                       logits=logit)
            else:
                crossent = softmax_loss_function(labels=target, logits=logit)
            terms.append(crossent * weight)
        total = ops.add_n(terms)
        if average_across_timesteps:
            total = total / (ops.add_n(list(weights)) + 1e-12)
        return total


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, softmax_loss_function=None, name=None):
    """sequence_loss_by_example summed over the batch, divided by the batch size when
    average_across_batch: a scalar."""
    with ops.get_default_graph().name_scope(name or "sequence_loss"):
        per_example = sequence_loss_by_example(
            logits, targets, weights, average_across_timesteps=average_across_timesteps,
            softmax_loss_function=softmax_loss_function)
        cost = ops.reduce_sum(per_example)
        if average_across_batch:
            batch = ops.cast(ops.shape(targets[0])[0], cost.dtype)
            return cost / batch
        return cost


def _fresh_copy(cell):
    """A new cell of `cell`'s configuration, as TF1's copy.deepcopy(cell) (the encoder's):
    the cell objects (and the lists and tuples holding them) are copied, unbuilt and without
    a scope, so that the copy makes its own variables; anything else (tensors, functions,
    initializers) is shared."""
    memo = {}

    def share_leaves(x, seen):
        if id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, (list, tuple)):
            for item in x:
                share_leaves(item, seen)
        elif isinstance(x, dict):
            for item in x.values():
                share_leaves(item, seen)
        elif hasattr(x, "__dict__") and (isinstance(x, RNNCell) or hasattr(x, "zero_state")):
            for item in vars(x).values():
                share_leaves(item, seen)
        else:
            memo[id(x)] = x
    share_leaves(cell, set())
    fresh = copy.deepcopy(cell, memo)

    def reset(x, seen):
        if id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, (list, tuple)):
            for item in x:
                reset(item, seen)
        elif hasattr(x, "__dict__") and hasattr(x, "zero_state"):
            if "_scope" in vars(x):
                x._scope = None
            if "built" in vars(x):
                x.built = False
            for item in vars(x).values():
                reset(item, seen)
    reset(fresh, set())
    return fresh


def _linear(args, units):
    """concat(args) @ kernel + bias, the variables in the current scope (TF1's _linear)."""
    args = list(args) if isinstance(args, (list, tuple)) else [args]
    x = ops.concat(args, 1) if len(args) > 1 else args[0]
    depth = sum(a.shape.as_list()[1] for a in args)
    kernel = get_variable("kernel", [depth, units], dtype=x.dtype)
    bias = get_variable("bias", [units], dtype=x.dtype, initializer=constant_initializer(0.0))
    return ops.add(ops.matmul(x, kernel), bias)


def _extract_argmax_and_embed(embedding, output_projection=None, update_embedding=True):
    """The loop_function of greedy decoding: the previous output (through output_projection
    (W, B) when given)'s argmax, embedded."""
    def loop_function(prev, _):
        if output_projection is not None:
            prev = ops.add(ops.matmul(prev, output_projection[0]), output_projection[1])
        emb_prev = array_ops.gather(embedding, ops.argmax(prev, 1))
        return emb_prev if update_embedding else ops.stop_gradient(emb_prev)
    return loop_function


def _check_feed_previous(feed_previous, what):
    if not isinstance(feed_previous, bool):
        raise TypeError("%s: shardflow takes feed_previous as a Python bool (a tensor would "
                        "build both decoders under a cond); build the training and the "
                        "decoding graphs with feed_previous=False and True" % what)


def rnn_decoder(decoder_inputs, initial_state, cell, loop_function=None, scope=None):
    """Runs `cell` over the list of decoder_inputs ([batch, input_size] each) from
    initial_state, one set of weights for every step. With loop_function(prev_output, i) the
    input of step i > 0 is computed from the previous step's output instead (greedy or
    sampled decoding). Returns (outputs, final state)."""
    with variable_scope(scope or "rnn_decoder"):
        state = initial_state
        outputs, prev = [], None
        for i, inp in enumerate(decoder_inputs):
            if loop_function is not None and prev is not None:
                with variable_scope("loop_function", reuse=True):
                    inp = loop_function(prev, i)
            if i > 0:
                get_variable_scope().reuse_variables()
            output, state = cell(inp, state)
            outputs.append(output)
            if loop_function is not None:
                prev = output
    return outputs, state


def basic_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, dtype=None, scope=None):
    """TF1's basic_rnn_seq2seq: a copy of `cell` encodes encoder_inputs (static_rnn), `cell`
    decodes decoder_inputs from its final state (rnn_decoder). Returns (outputs, state)."""
    with variable_scope(scope or "basic_rnn_seq2seq"):
        _, enc_state = static_rnn(_fresh_copy(cell), encoder_inputs,
                                  dtype=dtype or dtypes.float32)
        return rnn_decoder(decoder_inputs, enc_state, cell)


def tied_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, loop_function=None, dtype=None,
                     scope=None):
    """TF1's tied_rnn_seq2seq: basic_rnn_seq2seq with the encoder's and the decoder's
    weights shared (one cell, scope "combined_tied_rnn_seq2seq/tied_rnn_seq2seq")."""
    with variable_scope("combined_tied_rnn_seq2seq"):
        scope = scope or "tied_rnn_seq2seq"
        _, enc_state = static_rnn(cell, encoder_inputs, dtype=dtype or dtypes.float32,
                                  scope=scope)
        get_variable_scope().reuse_variables()
        return rnn_decoder(decoder_inputs, enc_state, cell, loop_function=loop_function,
                           scope=scope)


def embedding_rnn_decoder(decoder_inputs, initial_state, cell, num_symbols, embedding_size,
                          output_projection=None, feed_previous=False,
                          update_embedding_for_previous=True, scope=None):
    """TF1's embedding_rnn_decoder: decoder_inputs (int ids [batch] per step) embedded
    (variable "embedding" [num_symbols, embedding_size]) and decoded by rnn_decoder; with
    feed_previous each step after the first reads the embedded argmax of the previous
    output (through output_projection (W, B) when given)."""
    _check_feed_previous(feed_previous, "embedding_rnn_decoder")
    with variable_scope(scope or "embedding_rnn_decoder"):
        embedding = get_variable("embedding", [num_symbols, embedding_size])
        loop_function = _extract_argmax_and_embed(
            embedding, output_projection, update_embedding_for_previous) \
            if feed_previous else None
        emb_inp = [array_ops.gather(embedding, i) for i in decoder_inputs]
        return rnn_decoder(emb_inp, initial_state, cell, loop_function=loop_function)


def embedding_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, num_encoder_symbols,
                          num_decoder_symbols, embedding_size, output_projection=None,
                          feed_previous=False, dtype=None, scope=None):
    """TF1's embedding_rnn_seq2seq: a copy of `cell` behind an EmbeddingWrapper encodes the
    encoder ids; embedding_rnn_decoder decodes (the cell behind an OutputProjectionWrapper to
    num_decoder_symbols unless output_projection is given)."""
    from shardflow.contrib_rnn import EmbeddingWrapper, OutputProjectionWrapper
    _check_feed_previous(feed_previous, "embedding_rnn_seq2seq")
    with variable_scope(scope or "embedding_rnn_seq2seq", dtype=dtype) as vs:
        dtype = vs.dtype or dtypes.float32
        encoder_cell = EmbeddingWrapper(_fresh_copy(cell), num_encoder_symbols,
                                        embedding_size)
        _, encoder_state = static_rnn(encoder_cell, encoder_inputs, dtype=dtype)
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, num_decoder_symbols)
        return embedding_rnn_decoder(decoder_inputs, encoder_state, cell, num_decoder_symbols,
                                     embedding_size, output_projection=output_projection,
                                     feed_previous=feed_previous)


def attention_decoder(decoder_inputs, initial_state, attention_states, cell, output_size=None,
                      num_heads=1, loop_function=None, dtype=None, scope=None,
                      initial_state_attention=False):
    """TF1's attention_decoder (Vinyals et al. 2015): at each step the cell reads
    linear([input, previous attention reads]) (variables <scope>/kernel, bias); each of
    num_heads heads scores the attention_states [batch, length, size] by
    v . tanh(W h + linear(state)) (AttnW_<k>, AttnV_<k>, Attention_<k>/kernel, bias) and
    reads their softmax-weighted sum; the output is linear([cell output, reads])
    (AttnOutputProjection/kernel, bias). Returns (outputs, final state)."""
    if not decoder_inputs:
        raise ValueError("attention_decoder needs at least one decoder input")
    if num_heads < 1:
        raise ValueError("attention_decoder needs num_heads >= 1, got %d" % num_heads)
    attention_states = convert_to_tensor(attention_states)
    attn_size = attention_states.shape.as_list()[2]
    if attn_size is None:
        raise ValueError("attention_decoder: the depth of attention_states must be known: %s"
                         % attention_states.shape)
    if output_size is None:
        output_size = cell.output_size
    with variable_scope(scope or "attention_decoder", dtype=dtype) as vs:
        dtype = vs.dtype or attention_states.dtype
        attn_length = attention_states.shape.as_list()[1]
        if attn_length is None:
            attn_length = ops.shape(attention_states)[1]
        flat_states = ops.reshape(attention_states, [-1, attn_size])
        features, heads_v = [], []
        for a in range(num_heads):
            k = get_variable("AttnW_%d" % a, [1, 1, attn_size, attn_size])
            # W h for every position: TF1's 1x1 convolution, as a matmul.
            features.append(ops.reshape(ops.matmul(flat_states,
                                                   ops.reshape(k, [attn_size, attn_size])),
                                        array_ops.stack([-1, attn_length, attn_size])))
            heads_v.append(get_variable("AttnV_%d" % a, [attn_size]))

        def attention(query):
            parts = [convert_to_tensor(q) for q in _flatten(query)]
            query = ops.concat(parts, 1) if len(parts) > 1 else parts[0]
            reads = []
            for a in range(num_heads):
                with variable_scope("Attention_%d" % a):
                    y = ops.expand_dims(_linear(query, attn_size), 1)
                    score = ops.reduce_sum(heads_v[a] * ops.tanh(features[a] + y), axis=2)
                    weights = nn.softmax(score)
                    reads.append(ops.reduce_sum(ops.expand_dims(weights, 2) * attention_states,
                                                axis=1))
            return reads

        batch = ops.shape(convert_to_tensor(decoder_inputs[0]))[0]
        zeros = ops.fill(array_ops.stack([batch, attn_size]), ops.cast(0, dtype))
        attns = [ops.reshape(zeros, [-1, attn_size]) for _ in range(num_heads)]
        if initial_state_attention:
            attns = attention(initial_state)
        state, outputs, prev = initial_state, [], None
        for i, inp in enumerate(decoder_inputs):
            if i > 0:
                get_variable_scope().reuse_variables()
            if loop_function is not None and prev is not None:
                with variable_scope("loop_function", reuse=True):
                    inp = loop_function(prev, i)
            inp = convert_to_tensor(inp)
            input_size = inp.shape.as_list()[1]
            if input_size is None:
                raise ValueError("attention_decoder: could not infer the input size of %s"
                                 % inp.name)
            cell_output, state = cell(_linear([inp] + attns, input_size), state)
            if i == 0 and initial_state_attention:
                with variable_scope(get_variable_scope(), reuse=True):
                    attns = attention(state)
            else:
                attns = attention(state)
            with variable_scope("AttnOutputProjection"):
                output = _linear([cell_output] + attns, output_size)
            if loop_function is not None:
                prev = output
            outputs.append(output)
    return outputs, state


def embedding_attention_decoder(decoder_inputs, initial_state, attention_states, cell,
                                num_symbols, embedding_size, num_heads=1, output_size=None,
                                output_projection=None, feed_previous=False,
                                update_embedding_for_previous=True, dtype=None, scope=None,
                                initial_state_attention=False):
    """TF1's embedding_attention_decoder: decoder ids embedded ("embedding" [num_symbols,
    embedding_size]), then attention_decoder; feed_previous as embedding_rnn_decoder."""
    _check_feed_previous(feed_previous, "embedding_attention_decoder")
    if output_size is None:
        output_size = cell.output_size
    with variable_scope(scope or "embedding_attention_decoder", dtype=dtype):
        embedding = get_variable("embedding", [num_symbols, embedding_size])
        loop_function = _extract_argmax_and_embed(
            embedding, output_projection, update_embedding_for_previous) \
            if feed_previous else None
        emb_inp = [array_ops.gather(embedding, i) for i in decoder_inputs]
        return attention_decoder(emb_inp, initial_state, attention_states, cell,
                                 output_size=output_size, num_heads=num_heads,
                                 loop_function=loop_function,
                                 initial_state_attention=initial_state_attention)


def embedding_attention_seq2seq(encoder_inputs, decoder_inputs, cell, num_encoder_symbols,
                                num_decoder_symbols, embedding_size, encoder_cell=None,
                                num_heads=1, output_projection=None, feed_previous=False,
                                dtype=None, scope=None, initial_state_attention=False):
    """TF1's embedding_attention_seq2seq (the translate tutorial's model): encoder_cell (a
    copy of `cell` by default) behind an EmbeddingWrapper encodes the encoder ids
    (static_rnn); embedding_attention_decoder decodes, attending over the encoder's outputs
    (the cell behind an OutputProjectionWrapper to num_decoder_symbols unless
    output_projection is given). Returns (outputs, state)."""
    from shardflow.contrib_rnn import EmbeddingWrapper, OutputProjectionWrapper
    _check_feed_previous(feed_previous, "embedding_attention_seq2seq")
    with variable_scope(scope or "embedding_attention_seq2seq", dtype=dtype) as vs:
        dtype = vs.dtype or dtypes.float32
        encoder_cell = EmbeddingWrapper(encoder_cell if encoder_cell is not None
                                        else _fresh_copy(cell), num_encoder_symbols,
                                        embedding_size)
        encoder_outputs, encoder_state = static_rnn(encoder_cell, encoder_inputs, dtype=dtype)
        attention_states = ops.concat(
            [ops.reshape(e, [-1, 1, cell.output_size]) for e in encoder_outputs], 1)
        output_size = None
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, num_decoder_symbols)
            output_size = num_decoder_symbols
        return embedding_attention_decoder(
            decoder_inputs, encoder_state, attention_states, cell, num_decoder_symbols,
            embedding_size, num_heads=num_heads, output_size=output_size,
            output_projection=output_projection, feed_previous=feed_previous,
            initial_state_attention=initial_state_attention)


def model_with_buckets(encoder_inputs, decoder_inputs, targets, weights, buckets, seq2seq,
                       softmax_loss_function=None, per_example_loss=False, name=None):
    """TF1's model_with_buckets: for each bucket (encoder steps, decoder steps) the model
    seq2seq(encoder_inputs[:e], decoder_inputs[:d]) on shared weights (reused after the
    first) and its sequence_loss (per example with per_example_loss). Returns (outputs
    per bucket, losses per bucket)."""
    if len(encoder_inputs) < buckets[-1][0]:
        raise ValueError("Length of encoder_inputs (%d) must be at least that of last bucket "
                         "(%d)." % (len(encoder_inputs), buckets[-1][0]))
    if len(targets) < buckets[-1][1]:
        raise ValueError("Length of targets (%d) must be at least that of last bucket (%d)."
                         % (len(targets), buckets[-1][1]))
    if len(weights) < buckets[-1][1]:
        raise ValueError("Length of weights (%d) must be at least that of last bucket (%d)."
                         % (len(weights), buckets[-1][1]))
    losses, outputs = [], []
    with ops.get_default_graph().name_scope(name or "model_with_buckets"):
        for j, (enc_steps, dec_steps) in enumerate(buckets):
            with variable_scope(get_variable_scope(), reuse=True if j > 0 else None):
                bucket_outputs, _ = seq2seq(encoder_inputs[:enc_steps],
                                            decoder_inputs[:dec_steps])
                outputs.append(bucket_outputs)
                loss = sequence_loss_by_example if per_example_loss else sequence_loss
                losses.append(loss(bucket_outputs, targets[:dec_steps], weights[:dec_steps],
                                   softmax_loss_function=softmax_loss_function))
    return outputs, losses


__all__ = ["attention_decoder", "basic_rnn_seq2seq", "embedding_attention_decoder",
           "embedding_attention_seq2seq", "embedding_rnn_decoder", "embedding_rnn_seq2seq",
           "model_with_buckets", "rnn_decoder", "sequence_loss", "sequence_loss_by_example",
           "tied_rnn_seq2seq"]
