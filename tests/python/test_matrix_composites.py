"""tf.matrix_band_part, matrix_diag(_part), diag, diag_part, trace, space_to_depth,
depth_to_space, random_shuffle and tf.nn.top_k's named result (shardflow/matrix_composites.py)."""
import numpy as np
import pytest

import shardflow as tf


def run(*fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(list(fetches), feed)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_matrix_helpers_match_numpy():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = run(tf.matrix_band_part(a, 1, 0), tf.linalg.band_part(a, -1, 1), tf.matrix_diag_part(a),
              tf.matrix_diag([[1.0, 2.0], [3.0, 4.0]]), tf.diag([5.0, 6.0]),
              tf.diag_part(np.arange(9.0, dtype=np.float32).reshape(3, 3)), tf.trace(a))
    i, j = np.arange(3)[:, None], np.arange(4)[None, :]
    np.testing.assert_array_equal(got[0], a * ((i - j <= 1) & (j - i <= 0)))
    np.testing.assert_array_equal(got[1], a * (j - i <= 1))
    np.testing.assert_array_equal(got[2], np.stack([np.diagonal(m) for m in a]))
    np.testing.assert_array_equal(got[3], [np.diag([1.0, 2.0]), np.diag([3.0, 4.0])])
    np.testing.assert_array_equal(got[4], np.diag([5.0, 6.0]))
    np.testing.assert_array_equal(got[5], [0, 4, 8])
    np.testing.assert_array_equal(got[6], [np.trace(m) for m in a])
    x = tf.placeholder(tf.float32, [3, 3])
    (g,) = tf.gradients(tf.reduce_sum(tf.square(tf.matrix_band_part(x, 0, -1))), [x])
    xv = np.random.rand(3, 3).astype(np.float32)
    np.testing.assert_allclose(run(g, feed={x: xv})[0], 2 * np.triu(xv), rtol=1e-6)


def test_space_depth_round_trip_and_layout():
    x = np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 4, 6, 3)
    s2d, back = run(tf.space_to_depth(x, 2), tf.depth_to_space(tf.space_to_depth(x, 2), 2))
    want = x.reshape(2, 2, 2, 3, 2, 3).transpose(0, 1, 3, 2, 4, 5).reshape(2, 2, 3, 12)
    np.testing.assert_array_equal(s2d, want)
    np.testing.assert_array_equal(back, x)
    with pytest.raises(ValueError, match="divide"):
        tf.space_to_depth(x, 4)


def test_random_shuffle_and_top_k_fields():
    v = np.arange(20, dtype=np.int32)
    s = tf.random_shuffle(v, seed=3)
    a, b = run(s, s)
    assert sorted(a) == list(v) and sorted(b) == list(v) and list(a) != list(v)
    r = tf.nn.top_k(tf.constant([[1.0, 5.0, 3.0]]), 2)
    values, indices = run(r.values, r.indices)
    np.testing.assert_array_equal(values, [[5, 3]])
    np.testing.assert_array_equal(indices, [[1, 2]])
    vals, idx = r     # still a pair
    assert vals is r.values and idx is r.indices
