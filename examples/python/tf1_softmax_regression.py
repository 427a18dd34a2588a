#!/usr/bin/python3
"""TensorFlow 1.x's softmax-regression tutorial ("MNIST for ML Beginners") as written, but for its
import line (`import shardflow as tf`), on Fashion-MNIST: InteractiveSession,
tf.initialize_all_variables().run(), reduce_sum(..., reduction_indices=[1]), train_step.run(feed).

    /usr/bin/python3 examples/python/tf1_softmax_regression.py [--steps 1000]
"""
import argparse

import numpy as np

import shardflow as tf
from tf1_deep_mnist import load


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=1000)
    args = p.parse_args()
    train_x, train_y = load("train")
    test_x, test_y = load("t10k")

    # ---- the tutorial, unchanged -----------------------------------------------------------
    x = tf.placeholder(tf.float32, [None, 784])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    y_ = tf.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), reduction_indices=[1]))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
    sess = tf.InteractiveSession()
    tf.initialize_all_variables().run()
    rng = np.random.default_rng(0)
    for i in range(args.steps):
        idx = rng.integers(0, len(train_x), 100)
        train_step.run({x: train_x[idx], y_: train_y[idx]})
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    print("test accuracy %g" % accuracy.eval({x: test_x, y_: test_y}))
    sess.close()


if __name__ == "__main__":
    main()
