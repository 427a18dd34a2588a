#!/usr/bin/python3
"""A TF1 program with a queue-fed input pipeline, written as TF 1.x code (CIFAR-10 tutorial
style) but for its import line: Fashion-MNIST is first written as fixed-length binary records
(label byte + 784 pixel bytes, like CIFAR-10's files), then read back with
string_input_producer -> FixedLengthRecordReader -> decode_raw -> shuffle_batch, and a small
CNN trains in a MonitoredTrainingSession (which starts and stops the queue runners) with
StopAtStepHook, NanTensorHook and checkpoints.

    /usr/bin/python3 examples/python/tf1_queue_cnn.py [--steps 300] [--workdir /tmp/queue_cnn]
"""
import argparse
import os
import tempfile

import numpy as np

import shardflow as tf
from tf1_deep_mnist import load

RECORD_BYTES = 1 + 28 * 28


def write_records(directory, images, labels, shards=2):
    """The images as CIFAR-style binary files: [label byte][784 pixel bytes] per record."""
    paths = []
    pixels = np.clip(images * 255.0 + 0.5, 0, 255).astype(np.uint8)
    for k in range(shards):
        rows = np.arange(k, len(labels), shards)
        data = np.concatenate([labels[rows, None].astype(np.uint8), pixels[rows]], axis=1)
        path = os.path.join(directory, "train_%d.bin" % k)
        data.tofile(path)
        paths.append(path)
    return paths


def inputs(filenames, batch_size):
    filename_queue = tf.train.string_input_producer(filenames)
    reader = tf.FixedLengthRecordReader(record_bytes=RECORD_BYTES)
    _, value = reader.read(filename_queue)
    record = tf.decode_raw(value, tf.uint8)
    label = tf.cast(record[0], tf.int32)
    image = tf.reshape(tf.cast(record[1:], tf.float32) / 255.0, [28, 28, 1])
    return tf.train.shuffle_batch([image, label], batch_size=batch_size, num_threads=2,
                                  capacity=1000 + 3 * batch_size, min_after_dequeue=1000)


def model(images):
    net = tf.layers.conv2d(images, 16, 5, padding="same", activation=tf.nn.relu, name="conv1")
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 32, 5, padding="same", activation=tf.nn.relu, name="conv2")
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.dense(tf.layers.flatten(net), 128, activation=tf.nn.relu, name="fc")
    return tf.layers.dense(net, 10, name="logits")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workdir", default=None)
    args = p.parse_args()
    train_x, train_y = load("train")
    test_x, test_y = load("t10k")
    workdir = args.workdir or tempfile.mkdtemp(prefix="queue_cnn_")
    os.makedirs(workdir, exist_ok=True)
    files = write_records(workdir, train_x, np.argmax(train_y, 1))

    images, labels = inputs(files, args.batch_size)
    with tf.variable_scope("net"):
        logits = model(images)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=global_step)
    test_images = tf.placeholder(tf.float32, [None, 28, 28, 1])
    with tf.variable_scope("net", reuse=True):
        test_logits = model(test_images)
    hooks = [tf.train.StopAtStepHook(last_step=args.steps), tf.train.NanTensorHook(loss)]
    checkpoint_dir = os.path.join(workdir, "ckpt")
    with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=hooks) as sess:
        while not sess.should_stop():
            _, step, value = sess.run([train_op, global_step, loss])
            if step % 100 == 0:
                print("step %d, loss %.3f" % (step, value))
    # Evaluation from the checkpoint the monitored session saved at its end, in a plain session.
    saver = tf.train.Saver()
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(checkpoint_dir))
        predictions = np.concatenate([
            np.argmax(sess.run(test_logits,
                               {test_images: test_x[i:i + 1000].reshape(-1, 28, 28, 1)}), 1)
            for i in range(0, len(test_x), 1000)])
        print("trained %d steps; test accuracy %.4f"
              % (sess.run(global_step), float(np.mean(predictions == np.argmax(test_y, 1)))))

if __name__ == "__main__":
    main()
