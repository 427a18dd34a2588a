#!/usr/bin/env python3
"""Build a small graph, run it with NumPy feeds, take a gradient.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/basic_graph.py
"""

import numpy as np

import shardflow as sf


def main():
    g = sf.Graph()
    with g.as_default():
        x = sf.placeholder(sf.float32, [None, 3], name="x")
        w = sf.constant([[1.0], [2.0], [3.0]], name="w")
        with sf.name_scope("model"):
            y = sf.nn.relu(x @ w - 2.0)                 # operators build ops
            loss = sf.reduce_mean(sf.square(y))
        (dx,) = sf.gradients(loss, [x])

    batch = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 1]], np.float32)
    with sf.Session(graph=g) as sess:
        y_value, loss_value, dx_value = sess.run([y, loss, dx], {x: batch})
    print("y =", y_value.ravel())            # [0. 3. 4.]
    print("loss =", loss_value)              # (0 + 9 + 16) / 3
    print("d loss / d x =\n", dx_value)
    assert np.allclose(y_value.ravel(), [0, 3, 4])
    assert np.isclose(loss_value, 25 / 3)


if __name__ == "__main__":
    main()
