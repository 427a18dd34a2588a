"""tf.contrib.losses takes predictions (or logits) first, then labels, as TF 1.15's contrib
module (it was tf.losses, labels first: every loss silently swapped its arguments)."""
import numpy as np

import shardflow as tf


def test_contrib_losses_take_predictions_first():
    with tf.Graph().as_default():
        p, y = tf.constant([0.9, 0.2]), tf.constant([1.0, 0.0])
        log = tf.contrib.losses.log_loss(p, y)
        hinge = tf.contrib.losses.hinge_loss(tf.constant([0.3, -2.0]), y)
        logits = tf.constant([[2.0, 0.0, -1.0]])
        xent = tf.contrib.losses.softmax_cross_entropy(logits, tf.constant([[0.0, 1.0, 0.0]]))
        with tf.Session() as sess:
            lv, hv, xv = sess.run([log, hinge, xent])
    want_log = -np.mean([np.log(0.9 + 1e-7), np.log(1 - 0.2 + 1e-7)])
    np.testing.assert_allclose(lv, want_log, rtol=1e-5)                 # 0.1643, not 2.42
    np.testing.assert_allclose(hv, [0.7, 0.0], rtol=1e-6)                # unreduced, as contrib's
    z = np.array([2.0, 0.0, -1.0])
    np.testing.assert_allclose(xv, np.log(np.exp(z).sum()) - 0.0, rtol=1e-5)
    assert tf.contrib.losses.get_total_loss is not None


def test_softmax_cross_entropy_takes_labels_held_in_a_variable():
    # Regression: labels=tf.Variable(...) raised 'setting an array element with a sequence'.
    with tf.Graph().as_default():
        labels = tf.Variable([[0.0, 1.0]])
        logits = tf.constant([[1.0, 2.0]])
        alpha = tf.Variable(0.2)
        outs = [tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits),
                tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits),
                tf.nn.leaky_relu(-logits, alpha=alpha)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            xent, xent2, leaky = sess.run(outs)
    want = np.log(np.exp(1.0) + np.exp(2.0)) - 2.0
    np.testing.assert_allclose([xent[0], xent2[0]], [want, want], rtol=1e-6)
    np.testing.assert_allclose(leaky, [[-0.2, -0.4]], rtol=1e-6)
