"""tf.contrib.legacy_seq2seq: the list-of-steps sequence helpers of TF1's early tutorials
(the PTB language model, char-rnn): sequence_loss_by_example and sequence_loss over lists of
per-step logits, targets and weights, and rnn_decoder (optionally feeding each output back
through loop_function, as char-rnn's sampling does).

Example (char-rnn)::

    outputs, state = legacy_seq2seq.rnn_decoder(inputs, initial_state, cell,
                                                loop_function=loop if infer else None)
    loss = legacy_seq2seq.sequence_loss_by_example(
        [logits], [tf.reshape(targets, [-1])], [tf.ones([batch * steps])])
"""

from shardflow import nn, ops
from shardflow.variable_scope import get_variable_scope, variable_scope


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


__all__ = ["rnn_decoder", "sequence_loss", "sequence_loss_by_example"]
