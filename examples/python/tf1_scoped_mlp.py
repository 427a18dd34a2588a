#!/usr/bin/python3
"""A TF1 program of the everyday kind, unchanged but for `import shardflow as tf`: layers made
with variable_scope/get_variable (and reused for an evaluation tower), a global step, a learning
rate decayed on it with exponential_decay, momentum, and a Saver: it trains half its steps,
saves, then a fresh graph and session restore the checkpoint and train the rest. On
Fashion-MNIST (Debian's dataset-fashion-mnist).

    /usr/bin/python3 examples/python/tf1_scoped_mlp.py [--steps 600] [--checkpoint-dir DIR]

Prints the step and learning rate it restored at, and the test accuracy.
"""
import argparse
import gzip
import os
import tempfile

import numpy as np

import shardflow as tf


def load(kind, data_dir="/usr/share/datasets/fashion-mnist"):
    with gzip.open("%s/%s-images-idx3-ubyte.gz" % (data_dir, kind)) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32)
    with gzip.open("%s/%s-labels-idx1-ubyte.gz" % (data_dir, kind)) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int32)
    return x / 255.0, y


def fully_connected(x, n_out, scope, activation=tf.nn.relu):
    with tf.variable_scope(scope):
        n_in = x.get_shape()[1].value
        weights = tf.get_variable("weights", [n_in, n_out],
                                  initializer=tf.truncated_normal_initializer(stddev=0.05))
        biases = tf.get_variable("biases", [n_out], initializer=tf.constant_initializer(0.0))
        y = tf.nn.xw_plus_b(x, weights, biases)
        return activation(y) if activation is not None else y


def model(x):
    h = fully_connected(x, 256, "hidden1")
    h = fully_connected(h, 128, "hidden2")
    return fully_connected(h, 10, "logits", activation=None)


def build(batch_size):
    """The graph: returns the tensors and ops the training loop uses."""
    images = tf.placeholder(tf.float32, [None, 784], name="images")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    with tf.variable_scope("mlp"):
        logits = model(images)
    with tf.variable_scope("mlp", reuse=True):           # the evaluation tower shares them
        eval_logits = model(images)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    learning_rate = tf.train.exponential_decay(0.1, global_step, decay_steps=100,
                                               decay_rate=0.9, staircase=True)
    train_op = tf.train.MomentumOptimizer(learning_rate, 0.9).minimize(
        loss, global_step=global_step)
    correct = tf.equal(tf.argmax(eval_logits, 1, output_type=tf.int32), labels)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    return dict(images=images, labels=labels, loss=loss, train_op=train_op,
                global_step=global_step, learning_rate=learning_rate, accuracy=accuracy)


def train(sess, m, train_x, train_y, rng, steps, batch_size):
    for _ in range(steps):
        idx = rng.integers(0, len(train_x), batch_size)
        sess.run(m["train_op"], {m["images"]: train_x[idx], m["labels"]: train_y[idx]})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--checkpoint-dir", default=None)
    args = p.parse_args()
    train_x, train_y = load("train")
    test_x, test_y = load("t10k")
    ckpt_dir = args.checkpoint_dir or tempfile.mkdtemp(prefix="tf1_scoped_mlp_")
    rng = np.random.default_rng(0)
    first = args.steps // 2

    # First half: train, save.
    tf.set_random_seed(0)
    m = build(args.batch_size)
    saver = tf.train.Saver(max_to_keep=2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        train(sess, m, train_x, train_y, rng, first, args.batch_size)
        path = saver.save(sess, os.path.join(ckpt_dir, "model.ckpt"), global_step=m["global_step"])
        print("saved %s" % path)

    # Second half: a new graph and session restore the checkpoint and go on.
    tf.reset_default_graph()
    m = build(args.batch_size)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(ckpt_dir))
        step, lr = sess.run([m["global_step"], m["learning_rate"]])
        print("restored at step %d, learning rate %.4f" % (step, lr))
        train(sess, m, train_x, train_y, rng, args.steps - first, args.batch_size)
        print("global step %d" % tf.train.global_step(sess, m["global_step"]))
        print("test accuracy %g" % sess.run(m["accuracy"], {m["images"]: test_x,
                                                            m["labels"]: test_y}))


if __name__ == "__main__":
    main()
