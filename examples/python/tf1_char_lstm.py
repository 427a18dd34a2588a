#!/usr/bin/python3
"""A character-level LSTM, written as TF1 code (`import shardflow as tf`), trained on a text that
Debian ships (the GPL-3 under /usr/share/common-licenses) and then sampled from.

The model: an embedding, one BasicLSTMCell run over each sequence by tf.nn.dynamic_rnn (one
while_loop, one iteration per character), a softmax over the characters, Adam with gradients
clipped by their global norm. Sampling reuses the same variables on a batch of one, carrying the
LSTM state from character to character through placeholders.

    /usr/bin/python3 examples/python/tf1_char_lstm.py [--steps 300] [--sample 300]

Prints the training loss (nats per character) every 50 steps, the mean loss of the last 20
steps, and a sample. tests/python/test_tf1_vs_torch.py runs it beside the same model in PyTorch.
"""
import argparse

import numpy as np

import shardflow as tf


def load_text(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    return np.array([index[c] for c in text], np.int32), chars


def batches(data, batch_size, seq_len, steps, seed=0):
    """(inputs, targets) pairs of [batch, seq_len] windows at random offsets; the same for every
    seed, so another framework can train on exactly these batches."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        starts = rng.integers(0, len(data) - seq_len - 1, batch_size)
        x = np.stack([data[s:s + seq_len] for s in starts])
        y = np.stack([data[s + 1:s + seq_len + 1] for s in starts])
        yield x, y


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=40)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--embed", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--sample", type=int, default=300, help="characters to sample at the end")
    args = p.parse_args()
    data, chars = load_text(args.text)
    vocab = len(chars)
    print("text: %s, %d characters, %d distinct" % (args.text, len(data), vocab))
    tf.set_random_seed(0)

    # ---- the model, as TF1 code ----------------------------------------------------------------
    x = tf.placeholder(tf.int32, [None, None], name="x")
    y = tf.placeholder(tf.int32, [None, None], name="y")
    embedding = tf.get_variable("embedding", [vocab, args.embed],
                                initializer=tf.random_uniform_initializer(-0.1, 0.1))
    cell = tf.nn.rnn_cell.BasicLSTMCell(args.hidden)
    softmax_w = tf.get_variable("softmax_w", [args.hidden, vocab])
    softmax_b = tf.get_variable("softmax_b", [vocab], initializer=tf.zeros_initializer())

    def logits_of(inputs, initial_state):
        outputs, state = tf.nn.dynamic_rnn(cell, tf.nn.embedding_lookup(embedding, inputs),
                                           initial_state=initial_state)
        flat = tf.reshape(outputs, [-1, args.hidden])
        return tf.nn.xw_plus_b(flat, softmax_w, softmax_b), state

    batch = tf.shape(x)[0]
    logits, _ = logits_of(x, cell.zero_state(batch, tf.float32))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.reshape(y, [-1]), logits=logits))
    optimizer = tf.train.AdamOptimizer(args.learning_rate)
    grads, tvars = zip(*optimizer.compute_gradients(loss))
    clipped, _ = tf.clip_by_global_norm(grads, 5.0)
    train_op = optimizer.apply_gradients(zip(clipped, tvars))

    # Sampling: one character at a time, the state fed back in.
    c_in = tf.placeholder(tf.float32, [1, args.hidden], name="c_in")
    h_in = tf.placeholder(tf.float32, [1, args.hidden], name="h_in")
    sample_logits, sample_state = logits_of(
        x, tf.nn.rnn_cell.LSTMStateTuple(c_in, h_in))
    probabilities = tf.nn.softmax(sample_logits)

    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step, (bx, by) in enumerate(batches(data, args.batch_size, args.seq_len,
                                                args.steps), 1):
            value, _ = sess.run([loss, train_op], {x: bx, y: by})
            losses.append(value)
            if step % 50 == 0 or step == 1:
                print("step %d, loss %.3f" % (step, value))
        print("final loss %.4f (mean of the last 20 steps)" % np.mean(losses[-20:]))

        rng = np.random.default_rng(1)
        c = np.zeros([1, args.hidden], np.float32)
        h = np.zeros([1, args.hidden], np.float32)
        current = chars.index("T") if "T" in chars else 0
        out = [chars[current]]
        for _ in range(args.sample):
            prob, (c, h) = sess.run([probabilities, sample_state],
                                    {x: [[current]], c_in: c, h_in: h})
            prob = prob[0].astype(np.float64)
            current = int(rng.choice(vocab, p=prob / prob.sum()))
            out.append(chars[current])
        print("sample:\n" + "".join(out))


if __name__ == "__main__":
    main()
