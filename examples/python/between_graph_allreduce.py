"""Horovod/DDP-style data parallelism from Python: every worker process builds the whole model in
its own graph, trains on its own shard, and averages gradients with the others by ring
all-reduce (sf.distribute.AllReduceOptimizer); worker 0's initial variables are broadcast to
all (sf.distribute.broadcast_variables). No parameter server. One process per worker:

    python3 between_graph_allreduce.py --workers 127.0.0.1:2223,127.0.0.1:2224 --task 1 &
    python3 between_graph_allreduce.py --workers 127.0.0.1:2223,127.0.0.1:2224 --task 0

Worker 0 prints the test accuracy. With one worker (--workers "") it is the single-process
baseline: n workers x --batch-size b train like one process on batches of n x b.
"""

import argparse
import sys

import numpy as np

import shardflow as tf


def model(images, labels):
    """A 784-128-10 MLP; its loss and accuracy."""
    hidden = 128
    w1 = tf.Variable(tf.initializers.glorot_uniform(seed=1), shape=[784, hidden], name="w1")
    b1 = tf.Variable(np.zeros(hidden, np.float32), name="b1")
    w2 = tf.Variable(tf.initializers.glorot_uniform(seed=2), shape=[hidden, 10], name="w2")
    b2 = tf.Variable(np.zeros(10, np.float32), name="b2")
    logits = tf.nn.relu(images @ w1 + b1) @ w2 + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    correct = tf.equal(tf.argmax(logits, 1, output_type=tf.int32), labels)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    return loss, accuracy


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", default="", help="comma-separated worker addresses ('' = one)")
    p.add_argument("--task", type=int, default=0)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=64, help="per worker")
    p.add_argument("--learning-rate", type=float, default=0.1)
    p.add_argument("--data-dir", default="")
    args = p.parse_args()

    workers = [a for a in args.workers.split(",") if a]
    n = max(len(workers), 1)
    if workers:
        server = tf.train.Server(tf.train.ClusterSpec({"worker": workers}), job_name="worker",
                                 task_index=args.task)
        target, device = server.target, "/job:worker/task:%d" % args.task
    else:
        target, device = "", None

    (train_x, train_y), (test_x, test_y) = tf.datasets.fashion_mnist.load(args.data_dir)
    with tf.device(device):
        images = tf.placeholder(tf.float32, [None, 784], name="images")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        loss, accuracy = model(images, labels)
        opt = tf.train.GradientDescentOptimizer(args.learning_rate)
        if n > 1:
            opt = tf.distribute.AllReduceOptimizer(opt, num_replicas=n)
        train_op = opt.minimize(loss)
        init = tf.global_variables_initializer()
        sync = tf.distribute.broadcast_variables(tf.global_variables(), n, rank=args.task)

    # The global batch of step s is rows [s * n * b, (s + 1) * n * b) of one shuffled order,
    # and worker t takes its b rows of it: the same examples one process would see.
    order = np.random.default_rng(0).permutation(len(train_x))
    b = args.batch_size
    with tf.Session(target) as sess:
        sess.run(init)
        sess.run(sync)
        for step in range(args.steps):
            start = (step * n * b) % (len(order) - n * b) + args.task * b
            idx = order[start:start + b]
            _, loss_value = sess.run([train_op, loss], {images: train_x[idx],
                                                        labels: train_y[idx]})
            if (step + 1) % 100 == 0:
                print("worker %d: step %d, loss %.4f" % (args.task, step + 1, loss_value),
                      flush=True)
        if args.task == 0:
            acc = sess.run(accuracy, {images: test_x, labels: test_y})
            print("%d steps; test accuracy: %.2f%%" % (args.steps, 100 * acc), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
