"""Classic TF1 programs as their users wrote them (`import shardflow as tf`), each shortened to a
few seconds: the MNIST softmax tutorial, a tf.layers CNN with batch norm and UPDATE_OPS, LSTM
stacks under dynamic_rnn / bidirectional_dynamic_rnn, a tf.data input loop to OutOfRangeError,
Saver + summaries, variable scopes with regularizers, an Estimator, control flow, and gradient
clipping with a decayed learning rate. Each asserts numbers: NumPy re-computations, learned
accuracy, values restored."""
import os

import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    tf.set_random_seed(0)


def _blobs(n, dims, classes, seed=0):
    """Separable data: Gaussian blobs around well separated centers."""
    rng = np.random.RandomState(seed)
    centers = rng.randn(classes, dims) * 4
    labels = rng.randint(0, classes, n)
    return (centers[labels] + rng.randn(n, dims)).astype(np.float32), labels


# (a) The MNIST softmax tutorial --------------------------------------------------------------

def test_mnist_softmax_tutorial():
    images, labels = _blobs(600, 20, 10)
    onehot = np.eye(10, dtype=np.float32)[labels]
    x = tf.placeholder(tf.float32, [None, 20])
    W = tf.Variable(tf.zeros([20, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.matmul(x, W) + b
    y_ = tf.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y))
    train_step = tf.train.GradientDescentOptimizer(0.1).minimize(cross_entropy)
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    sess = tf.InteractiveSession()
    tf.global_variables_initializer().run()
    # The first step from zero weights, by hand: softmax is uniform, dW = x^T (1/10 - y) / n.
    batch_x, batch_y = images[:100], onehot[:100]
    sess.run(train_step, feed_dict={x: batch_x, y_: batch_y})
    np.testing.assert_allclose(W.eval(), -0.1 * batch_x.T @ (0.1 - batch_y) / 100,
                               rtol=1e-4, atol=1e-6)
    for i in range(1, 60):
        k = (i % 6) * 100
        sess.run(train_step, feed_dict={x: images[k:k + 100], y_: onehot[k:k + 100]})
    acc = sess.run(accuracy, feed_dict={x: images, y_: onehot})
    logits = images @ W.eval() + b.eval()
    sess.close()
    assert acc == pytest.approx(np.mean(logits.argmax(1) == labels))
    assert acc > 0.95


# (b) A tf.layers CNN with dropout and batch normalization ------------------------------------

def _quadrant_images(n, seed=0):
    """8x8 images whose brightest quadrant is the label."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 4, n)
    images = rng.rand(n, 8, 8, 1).astype(np.float32) * 0.5
    for i, c in enumerate(labels):
        r, col = divmod(c, 2)
        images[i, 4 * r:4 * r + 4, 4 * col:4 * col + 4] += 1.0
    return images, labels


def test_layers_cnn_with_batch_norm_update_ops_and_dropout():
    images, labels = _quadrant_images(256)
    x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    training = tf.placeholder_with_default(False, [], name="training")
    net = tf.layers.conv2d(x, 8, 3, padding="same", name="conv1")
    net = tf.layers.batch_normalization(net, training=training, name="bn1")
    net = tf.nn.relu(net)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.flatten(net)
    net = tf.layers.dense(net, 32, activation=tf.nn.relu)
    dropped = tf.layers.dropout(net, rate=0.5, training=training)
    logits = tf.layers.dense(dropped, 4)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(update_ops) == 2                                    # moving mean and variance
    with tf.control_dependencies(update_ops):
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    conv = tf.get_default_graph().get_tensor_by_name("conv1/BiasAdd:0")
    moving_mean = [v for v in tf.global_variables() if "moving_mean" in v.name][0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        # Inference: dropout is the identity; training: kept units scaled by 2.
        a, b = sess.run([net, dropped], {x: images[:16]})
        np.testing.assert_array_equal(a, b)
        a, b = sess.run([net, dropped], {x: images[:16], training: True})
        kept = b != 0
        np.testing.assert_allclose(b[kept], 2 * a[kept], rtol=1e-6)
        assert 0.3 < kept[a != 0].mean() < 0.7
        # One training step moves the moving mean 1 % of the way to the batch's mean.
        batch_mean = sess.run(conv, {x: images[:32]}).mean(axis=(0, 1, 2))
        sess.run(train_op, {x: images[:32], y: labels[:32], training: True})
        np.testing.assert_allclose(sess.run(moving_mean), 0.01 * batch_mean, rtol=1e-4,
                                   atol=1e-7)
        for step in range(60):
            k = (step % 8) * 32
            sess.run(train_op, {x: images[k:k + 32], y: labels[k:k + 32], training: True})
        acc = sess.run(accuracy, {x: images, y: labels})
    assert acc > 0.9


# (c) LSTM stacks: dynamic_rnn, bidirectional_dynamic_rnn, DropoutWrapper, sequence_length ----

def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _numpy_lstm(x, lengths, kernel, bias, units):
    """TF1's LSTMCell (gates i, j, f, o; forget_bias 1) over x [batch, time, depth]; returns
    outputs (zero past each length) and the state (c, h) at each sequence's end."""
    batch, steps, _ = x.shape
    c, h = np.zeros((batch, units)), np.zeros((batch, units))
    out = np.zeros((batch, steps, units))
    for t in range(steps):
        z = np.concatenate([x[:, t], h], 1) @ kernel + bias
        i, j, f, o = np.split(z, 4, axis=1)
        c2 = _sigmoid(f + 1.0) * c + _sigmoid(i) * np.tanh(j)
        h2 = _sigmoid(o) * np.tanh(c2)
        live = (t < lengths)[:, None]
        c, h = np.where(live, c2, c), np.where(live, h2, h)
        out[:, t] = np.where(live, h2, 0)
    return out, c, h


def _reverse_each(x, lengths):
    out = x.copy()
    for b, n in enumerate(lengths):
        out[b, :n] = x[b, :n][::-1]
    return out


def test_stacked_and_bidirectional_lstms_match_numpy():
    rng = np.random.RandomState(1)
    x_v = rng.randn(3, 5, 4).astype(np.float32)
    lengths_v = np.array([5, 2, 3], np.int32)
    x = tf.placeholder(tf.float32, [None, None, 4])
    lengths = tf.placeholder(tf.int32, [None])
    keep_prob = tf.placeholder_with_default(1.0, [])
    cells = [tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.LSTMCell(6), output_keep_prob=keep_prob)
             for _ in range(2)]
    stack = tf.nn.rnn_cell.MultiRNNCell(cells)
    outputs, state = tf.nn.dynamic_rnn(stack, x, sequence_length=lengths, dtype=tf.float32)
    assert isinstance(state[1], tf.nn.rnn_cell.LSTMStateTuple)
    (fw, bw), (fw_state, bw_state) = tf.nn.bidirectional_dynamic_rnn(
        tf.nn.rnn_cell.LSTMCell(3, name="fw"), tf.nn.rnn_cell.LSTMCell(3, name="bw"), x,
        sequence_length=lengths, dtype=tf.float32)
    feed = {x: x_v, lengths: lengths_v}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, st, f, b, fs, bs = sess.run([outputs, state, fw, bw, fw_state, bw_state], feed)
        dropped = sess.run(outputs, {x: x_v, lengths: lengths_v, keep_prob: 0.5})
        v = {var.name.split(":")[0]: sess.run(var) for var in tf.global_variables()}
    layer0 = "rnn/multi_rnn_cell/cell_0/lstm_cell/"
    layer1 = "rnn/multi_rnn_cell/cell_1/lstm_cell/"
    h0, _, _ = _numpy_lstm(x_v, lengths_v, v[layer0 + "kernel"], v[layer0 + "bias"], 6)
    h1, c1, last = _numpy_lstm(h0, lengths_v, v[layer1 + "kernel"], v[layer1 + "bias"], 6)
    np.testing.assert_allclose(out, h1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(st[1].h, last, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(st[1].c, c1, rtol=1e-4, atol=1e-5)
    assert np.all(out[1, 2:] == 0) and not np.allclose(dropped, out)
    fw_names = [k for k in v if k.startswith("bidirectional_rnn/fw/")]
    bw_names = [k for k in v if k.startswith("bidirectional_rnn/bw/")]
    assert len(fw_names) == 2 and len(bw_names) == 2, sorted(v)
    want_f, _, want_fh = _numpy_lstm(x_v, lengths_v, *[v[k] for k in sorted(fw_names,
                                                                            reverse=True)], 3)
    want_b, _, want_bh = _numpy_lstm(_reverse_each(x_v, lengths_v), lengths_v,
                                     *[v[k] for k in sorted(bw_names, reverse=True)], 3)
    np.testing.assert_allclose(f, want_f, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b, _reverse_each(want_b, lengths_v), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fs.h, want_fh, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bs.h, want_bh, rtol=1e-4, atol=1e-5)


# (d) A tf.data input pipeline driving training -----------------------------------------------

def test_dataset_pipeline_training_loop_to_out_of_range():
    features, labels = _blobs(96, 5, 3, seed=2)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels.astype(np.int64)))
    dataset = dataset.shuffle(buffer_size=96, seed=1).batch(32).repeat(4)
    iterator = dataset.make_one_shot_iterator()
    x, y = iterator.get_next()
    assert x.shape.as_list() == [None, 5]
    logits = tf.layers.dense(x, 3)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
    seen = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        steps = 0
        try:
            while True:
                _, yb = sess.run([train_op, y])
                seen.append(yb)
                steps += 1
        except tf.errors.OutOfRangeError:
            pass
    assert steps == 12                                           # 4 epochs of 3 batches
    epochs = np.concatenate(seen).reshape(4, 96)
    for epoch in epochs:                                         # each epoch is a permutation
        np.testing.assert_array_equal(np.sort(epoch), np.sort(labels))
    assert not np.array_equal(epochs[0], labels)                 # shuffled

    # An initializable iterator over placeholders, re-initialized for evaluation.
    x_in = tf.placeholder(tf.float32, [None, 5])
    y_in = tf.placeholder(tf.int64, [None])
    eval_iter = tf.data.Dataset.from_tensor_slices((x_in, y_in)).batch(40) \
        .make_initializable_iterator()
    ex, ey = eval_iter.get_next()
    w = tf.Variable(np.eye(5, 3, dtype=np.float32))
    correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(tf.matmul(ex, w), 1), ey), tf.int32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(2):
            sess.run(eval_iter.initializer, {x_in: features, y_in: labels})
            total, batches = 0, 0
            while True:
                try:
                    total += sess.run(correct)
                    batches += 1
                except tf.errors.OutOfRangeError:
                    break
            assert batches == 3                                  # 40 + 40 + 16
            assert total == np.sum(features[:, :3].argmax(1) == labels)


# (e) Checkpoints and TensorBoard summaries ---------------------------------------------------

def test_saver_round_trip_latest_checkpoint_and_summaries(tmp_path):
    ckpt_dir, log_dir = str(tmp_path / "ckpt"), str(tmp_path / "logs")
    w = tf.Variable(tf.random_normal([4, 2]), name="w")
    b = tf.Variable(tf.zeros([2]), name="b")
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_sum(tf.square(tf.matmul(tf.ones([3, 4]), w) + b - 1.0))
    train_op = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("w", w)
    merged = tf.summary.merge_all()
    saver = tf.train.Saver(max_to_keep=2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        writer = tf.summary.FileWriter(log_dir, sess.graph)
        losses = []
        for i in range(5):
            summary, loss_v, _ = sess.run([merged, loss, train_op])
            writer.add_summary(summary, i)
            losses.append(loss_v)
            saver.save(sess, os.path.join(ckpt_dir, "model.ckpt"), global_step=step)
        writer.close()
        saved_w, saved_b = sess.run([w, b])
    assert tf.train.latest_checkpoint(ckpt_dir).endswith("model.ckpt-5")
    assert len(tf.train.get_checkpoint_state(ckpt_dir).all_model_checkpoint_paths) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())           # other values, then restored
        saver.restore(sess, tf.train.latest_checkpoint(ckpt_dir))
        np.testing.assert_array_equal(sess.run(w), saved_w)
        np.testing.assert_array_equal(sess.run(b), saved_b)
        assert sess.run(step) == 5
        saver.restore(sess, os.path.join(ckpt_dir, "model.ckpt-4"))
        assert sess.run(step) == 4
    # The events: a loss per step, and the histogram of w at each step.
    (events_file,) = [os.path.join(log_dir, f) for f in os.listdir(log_dir)]
    scalars, histos = {}, {}
    for event in tf.train.summary_iterator(events_file):
        for value in event.summary.value:
            if value.tag == "loss":
                scalars[event.step] = value.simple_value
            elif value.tag == "w_1":     # TF 1.15: the variable w holds the name "w"
                histos[event.step] = value.histo
    np.testing.assert_allclose([scalars[i] for i in range(5)], losses, rtol=1e-6)
    assert histos[4].num == 8
    assert histos[4].min <= saved_w.min() + 0.1 and histos[4].max >= saved_w.max() - 0.1


# (f) Variable scopes, sharing and regularization ---------------------------------------------

def test_variable_scopes_auto_reuse_and_regularization_loss():
    def layer(x, units, name):
        with tf.variable_scope(name, reuse=tf.AUTO_REUSE):
            w = tf.get_variable("w", [x.shape.as_list()[-1], units],
                                initializer=tf.constant_initializer(0.5),
                                regularizer=tf.contrib.layers.l2_regularizer(0.1))
            b = tf.get_variable("b", [units], initializer=tf.zeros_initializer())
            return tf.nn.relu(tf.matmul(x, w) + b)

    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with tf.variable_scope("tower"):
        first = layer(x, 4, "dense")
        again = layer(x, 4, "dense")                        # the same variables
        second = layer(first, 2, "out")
    with tf.variable_scope("other"):
        u = tf.get_variable("u", [2], initializer=tf.ones_initializer(),
                            regularizer=lambda t: 2.0 * tf.reduce_sum(t))
        frozen = tf.get_variable("frozen", [1], trainable=False)
    names = [v.name for v in tf.trainable_variables()]
    assert names == ["tower/dense/w:0", "tower/dense/b:0", "tower/out/w:0", "tower/out/b:0",
                     "other/u:0"]
    assert [v.name for v in tf.trainable_variables(scope="tower/out")] == \
        ["tower/out/w:0", "tower/out/b:0"]
    assert frozen in tf.global_variables() and frozen not in tf.trainable_variables()
    assert tf.global_variables("other") == [u, frozen] and tf.local_variables("other") == []
    reg = tf.losses.get_regularization_loss()
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 3
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, c, r = sess.run([first, again, second, reg])
    np.testing.assert_allclose(a, np.maximum(np.arange(6).reshape(2, 3) @ np.full((3, 4), 0.5),
                                             0))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(c, a @ np.full((4, 2), 0.5))
    # l2_regularizer(0.1): 0.1 * sum(w^2) / 2 for each w, plus 2 * sum(u).
    np.testing.assert_allclose(r, 0.1 * (12 * 0.25 + 8 * 0.25) / 2 + 4.0, rtol=1e-6)
    with pytest.raises(ValueError):
        with tf.variable_scope("tower"):
            tf.get_variable("extra", [1], initializer=tf.zeros_initializer())
            tf.get_variable("extra", [1])                   # not shared without reuse


# (g) A custom Estimator, as the TF1 guide wrote one ------------------------------------------

def _iris_like_model_fn(features, labels, mode, params):
    net = tf.feature_column.input_layer(features, params["feature_columns"])
    net = tf.layers.dense(net, 16, activation=tf.nn.relu)
    logits = tf.layers.dense(net, params["n_classes"])
    predicted = tf.argmax(logits, 1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={
            "class_ids": predicted[:, tf.newaxis], "probabilities": tf.nn.softmax(logits),
            "logits": logits})
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.metrics.accuracy(labels=labels, predictions=predicted, name="acc_op")
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss,
                                          eval_metric_ops={"accuracy": accuracy})
    train_op = tf.train.AdagradOptimizer(0.3).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_custom_estimator_trains_evaluates_and_predicts(tmp_path):
    x, y = _blobs(150, 4, 3, seed=5)
    x[:, 0] += 3.0 * (y == 1)                     # some overlap left for the other features
    columns = [tf.feature_column.numeric_column("f%d" % i) for i in range(4)]
    feats = {"f%d" % i: x[:, i] for i in range(4)}
    clf = tf.estimator.Estimator(model_fn=_iris_like_model_fn, model_dir=str(tmp_path),
                                 params={"feature_columns": columns, "n_classes": 3})
    clf.train(tf.estimator.inputs.numpy_input_fn(feats, y.astype(np.int64), batch_size=30,
                                                 num_epochs=None, shuffle=True), steps=60)
    eval_fn = tf.estimator.inputs.numpy_input_fn(feats, y.astype(np.int64), batch_size=50,
                                                 shuffle=False)
    result = clf.evaluate(eval_fn)
    assert result["global_step"] == 60
    predictions = list(clf.predict(tf.estimator.inputs.numpy_input_fn(feats, shuffle=False)))
    assert len(predictions) == 150
    classes = np.array([p["class_ids"][0] for p in predictions])
    probs = np.array([p["probabilities"] for p in predictions])
    logits = np.array([p["logits"] for p in predictions])
    np.testing.assert_allclose(probs.sum(1), 1, rtol=1e-5)
    np.testing.assert_array_equal(classes, logits.argmax(1))
    assert result["accuracy"] == pytest.approx(np.mean(classes == y), abs=1e-6)
    assert result["accuracy"] > 0.9
    # The mean of the three evaluation batches' losses, recomputed from the logits.
    logp = logits - logits.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    xent = -logp[np.arange(150), y]
    assert result["loss"] == pytest.approx(xent.reshape(3, 50).mean(1).mean(), rel=1e-4)


# (h) Control flow: cond, while_loop, case, map_fn, scan --------------------------------------

def test_control_flow_programs():
    x = tf.placeholder(tf.float32, [])
    # cond: a piecewise function and its gradient on both sides.
    y = tf.cond(x > 1.0, lambda: tf.square(x), lambda: 3.0 * x)
    (dy,) = tf.gradients(y, [x])
    # while_loop: Collatz steps from n, and a loop carrying a tensor with shape invariants.
    n = tf.placeholder(tf.int32, [])
    _, steps = tf.while_loop(lambda v, s: v > 1,
                             lambda v, s: (tf.where(tf.equal(v % 2, 0), v // 2, 3 * v + 1),
                                           s + 1), [n, 0])
    i0 = tf.constant(0)
    grown = tf.while_loop(lambda i, acc: i < 4,
                          lambda i, acc: (i + 1, tf.concat([acc, [tf.cast(i, tf.float32)]], 0)),
                          [i0, tf.zeros([0])],
                          shape_invariants=[i0.shape, tf.TensorShape([None])],
                          back_prop=False)[1]   # (a growing variable has no gradient here)
    # case: the first true predicate's branch, else the default.
    k = tf.placeholder(tf.int32, [])
    chosen = tf.case([(tf.equal(k, 0), lambda: tf.constant(10.0)),
                      (tf.less(k, 3), lambda: tf.constant(20.0))],
                     default=lambda: tf.constant(30.0), exclusive=False)
    # map_fn over rows (two outputs) and scan (a running product and a cumulative sum).
    m = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
    norms, maxes = tf.map_fn(lambda row: (tf.norm(row), tf.reduce_max(row)), m,
                             dtype=(tf.float32, tf.float32))
    prods = tf.scan(lambda acc, v: acc * v, tf.constant([1.0, 2.0, 3.0, 4.0]))
    sums = tf.scan(lambda acc, row: acc + row, m, initializer=tf.zeros([3]))
    with tf.Session() as sess:
        assert sess.run([y, dy], {x: 3.0}) == [9.0, 6.0]
        assert sess.run([y, dy], {x: 0.5}) == [1.5, 3.0]
        assert sess.run(steps, {n: 27}) == 111 and sess.run(steps, {n: 1}) == 0
        np.testing.assert_array_equal(sess.run(grown), [0, 1, 2, 3])
        assert [sess.run(chosen, {k: v}) for v in (0, 1, 2, 5)] == [10, 20, 20, 30]
        a, b, p, s = sess.run([norms, maxes, prods, sums])
    rows = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(a, np.linalg.norm(rows, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(b, rows.max(1))
    np.testing.assert_array_equal(p, [1, 2, 6, 24])
    np.testing.assert_array_equal(s, np.cumsum(rows, 0))


# (i) Gradient clipping with a decayed learning rate ------------------------------------------

def test_clip_by_global_norm_and_exponential_decay():
    w = tf.Variable([3.0, 4.0])
    v = tf.Variable([[1.0], [2.0]])
    loss = 10.0 * tf.reduce_sum(tf.square(w)) + tf.reduce_sum(v)
    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, step, decay_steps=2, decay_rate=0.5, staircase=True)
    smooth = tf.train.exponential_decay(0.1, step, 2, 0.5)
    opt = tf.train.GradientDescentOptimizer(lr)
    grads_and_vars = opt.compute_gradients(loss)
    grads, variables = zip(*grads_and_vars)
    clipped, global_norm = tf.clip_by_global_norm(grads, 5.0)
    train_op = opt.apply_gradients(zip(clipped, variables), global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        w_v, v_v = np.array([3.0, 4.0]), np.array([[1.0], [2.0]])
        for i in range(5):
            g_w, g_v = 20 * w_v, np.ones((2, 1))
            norm = np.sqrt((g_w ** 2).sum() + (g_v ** 2).sum())
            rate = 0.1 * 0.5 ** (i // 2)
            got_norm, got_lr, got_smooth = sess.run([global_norm, lr, smooth])
            assert got_norm == pytest.approx(norm, rel=1e-5)
            assert got_lr == pytest.approx(rate) and got_smooth == pytest.approx(
                0.1 * 0.5 ** (i / 2))
            sess.run(train_op)
            scale = 5.0 / max(norm, 5.0)
            w_v, v_v = w_v - rate * scale * g_w, v_v - rate * scale * g_v
            np.testing.assert_allclose(sess.run(w), w_v, rtol=1e-5)
            np.testing.assert_allclose(sess.run(v), v_v, rtol=1e-5)
        assert sess.run(step) == 5


# Shape idioms the programs above lean on ------------------------------------------------------

def test_shape_idioms_tensor_dims_auto_packing_and_scoped_variable_lists():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    t = tf.placeholder(tf.float32, [])
    flat = tf.reshape(x, [tf.shape(x)[0], -1])
    rows = tf.reshape(x, [tf.shape(x)[0], 6])
    assert rows.shape.as_list() == [None, 6]
    packed = tf.convert_to_tensor([[t, 1.0], [2, t]])
    assert packed.shape.as_list() == [2, 2] and packed.dtype == tf.float32
    appended = tf.concat([tf.zeros([2]), [t]], 0)
    column = tf.constant([1.0, 2.0])[:, tf.newaxis]
    x_v = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    with tf.Session() as sess:
        f, r, p, a, c = sess.run([flat, rows, packed, appended, column], {x: x_v, t: 5.0})
    np.testing.assert_array_equal(f, x_v.reshape(2, 6))
    np.testing.assert_array_equal(r, x_v.reshape(2, 6))
    np.testing.assert_array_equal(p, [[5, 1], [2, 5]])
    np.testing.assert_array_equal(a, [0, 0, 5])
    np.testing.assert_array_equal(c, [[1], [2]])
    with tf.variable_scope("gen"):
        g = tf.get_variable("w", [1])
    with tf.variable_scope("disc"):
        d = tf.get_variable("w", [1])
    assert tf.trainable_variables("gen") == [g] and tf.global_variables(scope="disc") == [d]
    assert tf.trainable_variables(graph=tf.get_default_graph()) == [g, d]
