"""A Horovod TF1 program (the shape of Horovod's tensorflow_mnist.py) on Fashion-MNIST: only the
imports differ (`import shardflow as tf`, `import shardflow.horovod as hvd`). Run it with the
launcher you use for Horovod:

    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 examples/python/horovod_mnist.py   # OpenMPI
    srun -n 2 /usr/bin/python3 examples/python/horovod_mnist.py                    # Slurm
    /usr/bin/python3 examples/python/horovod_mnist.py                              # one rank

(as root, OpenMPI also wants --allow-run-as-root; SHARDFLOW_PORT_BASE moves the ports the ranks
listen on, 2222 + local rank by default). Rank 0 prints the test accuracy.
"""

import argparse

import numpy as np

import shardflow as tf
import shardflow.horovod as hvd


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=600, help="steps per rank")
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--checkpoint-dir", default=None)
    p.add_argument("--data-dir", default="")
    args = p.parse_args()

    hvd.init()
    (train_x, train_y), (test_x, test_y) = tf.datasets.fashion_mnist.load(args.data_dir)
    images = tf.placeholder(tf.float32, [None, 784], name="images")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    hidden = tf.layers.dense(images, 128, activation=tf.nn.relu, name="hidden")
    logits = tf.layers.dense(hidden, 10, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1, output_type=tf.int32),
                                               labels), tf.float32))
    global_step = tf.train.get_or_create_global_step()
    # Horovod's advice: scale the learning rate by the number of ranks.
    opt = hvd.DistributedOptimizer(tf.train.AdamOptimizer(1e-3 * hvd.size()))
    train_op = opt.minimize(loss, global_step=global_step)
    hooks = [hvd.BroadcastGlobalVariablesHook(0),
             tf.train.StopAtStepHook(last_step=args.steps)]
    rng = np.random.default_rng(hvd.rank())  # each rank its own batches
    checkpoint_dir = args.checkpoint_dir if hvd.rank() == 0 else None
    with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=hooks) as sess:
        while not sess.should_stop():
            idx = rng.integers(0, len(train_x), args.batch_size)
            _, step, loss_value = sess.run([train_op, global_step, loss],
                                           {images: train_x[idx], labels: train_y[idx]})
            if step % 100 == 0 and hvd.rank() == 0:
                print("step %d: loss %.4f (%d ranks)" % (step, loss_value, hvd.size()),
                      flush=True)
        if hvd.rank() == 0:
            acc = sess.run(accuracy, {images: test_x, labels: test_y})
            print("%d ranks, %d steps each; test accuracy: %.2f%%"
                  % (hvd.size(), args.steps, 100 * acc), flush=True)


if __name__ == "__main__":
    main()
