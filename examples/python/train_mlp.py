#!/usr/bin/env python3
"""Train a multi-layer perceptron on Fashion-MNIST with sf.layers and Adam.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_mlp.py [--epochs 2]
        [--max-steps N] [--batch-size 64] [--devices /device:CPU:0,/device:CPU:1]

Needs Debian's dataset-fashion-mnist package. Two epochs reach about 88% test accuracy.
"""

import argparse
import math
import time

import numpy as np

import shardflow as sf

PIXEL_MEAN, PIXEL_STDDEV = 0.2860, 0.3530  # of the training images, scaled to [0, 1]


def build(devices, seed=1):
    """The model and the ops the loop runs; layers go round-robin over `devices`."""
    def dev(i):
        return devices[i % len(devices)] if devices else None

    g = sf.Graph()
    with g.as_default():
        images = sf.placeholder(sf.float32, [None, 784], name="images")
        labels = sf.placeholder(sf.int32, [None], name="labels")
        lr = sf.placeholder(sf.float32, [], name="learning_rate")
        model = sf.layers.Sequential([
            sf.layers.Dense(512, activation=sf.nn.relu, seed=seed, device=dev(0)),
            sf.layers.Dense(512, activation=sf.nn.relu, seed=seed + 1, device=dev(1)),
            sf.layers.Dense(10, seed=seed + 2, device=dev(2)),
        ])
        logits = model((images - PIXEL_MEAN) * (1.0 / PIXEL_STDDEV))
        loss = sf.reduce_mean(
            sf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        train_op = sf.train.AdamOptimizer(lr).minimize(loss)
        predictions = sf.argmax(logits, axis=1, output_type=sf.int32)
        init = sf.global_variables_initializer()
    return g, dict(images=images, labels=labels, lr=lr, loss=loss, train=train_op,
                   predictions=predictions, init=init)


def evaluate(sess, m, x, y, batch=1000):
    correct = 0
    for i in range(0, len(x), batch):
        pred = sess.run(m["predictions"], {m["images"]: x[i:i + batch]})
        correct += int((pred == y[i:i + batch]).sum())
    return correct / len(x)


def train(epochs=2, batch_size=64, lr=1e-3, max_steps=0, devices=None, seed=1, log=print):
    (x_train, y_train), (x_test, y_test) = sf.datasets.fashion_mnist.load()
    g, m = build(devices, seed)
    config = sf.ConfigProto(cpu_device_count=max(1, len(devices or [])))
    steps_per_epoch = len(x_train) // batch_size
    total = epochs * steps_per_epoch if not max_steps else min(max_steps,
                                                               epochs * steps_per_epoch)
    rng = np.random.default_rng(seed)
    with sf.Session(graph=g, config=config) as sess:
        sess.run(m["init"])
        step, start = 0, time.time()
        for epoch in range(epochs):
            order = rng.permutation(len(x_train))
            for b in range(steps_per_epoch):
                if step >= total:
                    break
                idx = order[b * batch_size:(b + 1) * batch_size]
                # cosine decay from lr to 0 over the whole run
                rate = lr * 0.5 * (1 + math.cos(math.pi * step / total))
                loss, _ = sess.run([m["loss"], m["train"]],
                                   {m["images"]: x_train[idx], m["labels"]: y_train[idx],
                                    m["lr"]: rate})
                step += 1
                if step % 200 == 0 or step == total:
                    log("epoch %d step %d/%d loss %.4f (%.0f ex/s)"
                        % (epoch + 1, step, total, loss, step * batch_size /
                           (time.time() - start)))
        accuracy = evaluate(sess, m, x_test, y_test)
    log("test accuracy: %.2f%%" % (100 * accuracy))
    return accuracy


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--max-steps", type=int, default=0, help="stop after N steps (0 = all)")
    p.add_argument("--devices", default="", help="comma-separated devices for the layers")
    a = p.parse_args()
    devices = [d for d in a.devices.split(",") if d]
    train(a.epochs, a.batch_size, a.lr, a.max_steps, devices)


if __name__ == "__main__":
    main()
