"""Between-graph data-parallel training with parameter servers, written as TensorFlow 1.x
programs are (only the import differs): ClusterSpec, Server, replica_device_setter,
SyncReplicasOptimizer (or asynchronous updates with --async), MonitoredTrainingSession with
StopAtStepHook and checkpoints. One process per task:

    python3 between_graph_ps.py --ps 127.0.0.1:2222 --workers 127.0.0.1:2223,127.0.0.1:2224 \\
        --job ps --task 0 &
    python3 between_graph_ps.py ... --job worker --task 1 &
    python3 between_graph_ps.py ... --job worker --task 0          # the chief: prints accuracy

With one worker and no ps (--ps "") it is the single-process baseline. A restarted job goes on
from the chief's last checkpoint in --checkpoint-dir.
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
    p.add_argument("--ps", default="", help="comma-separated ps addresses ('' = none)")
    p.add_argument("--workers", default="", help="comma-separated worker addresses")
    p.add_argument("--job", default="worker", choices=["ps", "worker"])
    p.add_argument("--task", type=int, default=0)
    p.add_argument("--steps", type=int, default=600, help="global steps to train")
    p.add_argument("--batch-size", type=int, default=64, help="per worker")
    p.add_argument("--learning-rate", type=float, default=0.1)
    p.add_argument("--async", dest="asynchronous", action="store_true",
                   help="asynchronous updates (default: SyncReplicasOptimizer)")
    p.add_argument("--checkpoint-dir", default=None)
    p.add_argument("--save-steps", type=int, default=None)
    p.add_argument("--data-dir", default="")
    args = p.parse_args()

    ps = [a for a in args.ps.split(",") if a]
    workers = [a for a in args.workers.split(",") if a]
    num_workers = max(len(workers), 1)
    is_chief = args.job == "worker" and args.task == 0

    if workers:
        jobs = {"worker": workers}
        if ps:
            jobs["ps"] = ps
        cluster = tf.train.ClusterSpec(jobs)
        server = tf.train.Server(cluster, job_name=args.job, task_index=args.task)
        if args.job == "ps":
            print("ps %d serving on %s" % (args.task, server.target), flush=True)
            server.join()
            return 0
        target = server.target
        device = tf.train.replica_device_setter(
            cluster=cluster, worker_device="/job:worker/task:%d" % args.task)
    else:
        target, device = "", None

    (train_x, train_y), (test_x, test_y) = tf.datasets.fashion_mnist.load(args.data_dir)
    # Each worker reads its own shard.
    train_x, train_y = train_x[args.task::num_workers], train_y[args.task::num_workers]

    with tf.device(device):
        images = tf.placeholder(tf.float32, [None, 784], name="images")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        loss, accuracy = model(images, labels)
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.GradientDescentOptimizer(args.learning_rate)
        hooks = [tf.train.StopAtStepHook(last_step=args.steps)]
        if workers and not args.asynchronous:
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=num_workers,
                                                 total_num_replicas=num_workers)
            hooks.append(opt.make_session_run_hook(is_chief))
        train_op = opt.minimize(loss, global_step=global_step)

    rng = np.random.default_rng(args.task)
    step = 0
    with tf.train.MonitoredTrainingSession(master=target, is_chief=is_chief,
                                           checkpoint_dir=args.checkpoint_dir,
                                           save_checkpoint_steps=args.save_steps,
                                           hooks=hooks) as sess:
        print("worker %d starts at global step %d" % (args.task, sess.run(global_step)),
              flush=True)
        first = True
        while not sess.should_stop():
            idx = rng.integers(0, len(train_x), args.batch_size)
            _, loss_value, step = sess.run([train_op, loss, global_step],
                                           {images: train_x[idx], labels: train_y[idx]})
            # Also its first step: with asynchronous updates a worker may never read a
            # multiple of 100 (the other one's updates land in between).
            if step % 100 == 0 or first:
                first = False
                print("worker %d: global step %d, loss %.4f" % (args.task, step, loss_value),
                      flush=True)
        if is_chief:
            acc = sess.run(accuracy, {images: test_x, labels: test_y})
            print("global step %d; test accuracy: %.2f%%" % (step, 100 * acc), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
