"""Batch normalisation and ResNets from Python: TF1's tf.layers.batch_normalization with
UPDATE_OPS (a Python bool or a bool placeholder for `training`), the layer classes, and
sf.applications' ResNets (shapes, variables, updates, learning a fixed batch)."""

import numpy as np
import pytest

import shardflow as sf


@pytest.fixture(autouse=True)
def fresh_graph():
    g = sf.Graph()
    with g.as_default():
        yield g


def _moments(x):
    flat = x.reshape(-1, x.shape[-1]).astype(np.float64)
    return flat.mean(0), flat.var(0)


def test_tf1_batch_normalization_with_update_ops():
    rng = np.random.RandomState(0)
    xv = (rng.rand(8, 3, 3, 4) * 4 + 2).astype(np.float32)
    x = sf.placeholder(sf.float32, [None, 3, 3, 4], name="x")
    is_training = sf.placeholder(sf.bool_, [], name="is_training")
    y = sf.layers.batch_normalization(x, momentum=0.9, training=is_training, name="bn")
    update_ops = sf.get_collection(sf.GraphKeys.UPDATE_OPS)
    assert len(update_ops) == 2
    names = sorted(v.name for v in sf.global_variables())
    assert names == ["bn/beta:0", "bn/gamma:0", "bn/moving_mean:0", "bn/moving_variance:0"]
    assert sorted(v.name for v in sf.trainable_variables()) == ["bn/beta:0", "bn/gamma:0"]
    loss = sf.reduce_sum(y * y)
    with sf.control_dependencies(update_ops):
        train = sf.train.GradientDescentOptimizer(0.0).minimize(loss)  # lr 0: only the updates
    by_name = {v.name: v for v in sf.global_variables()}
    moving, moving_var = by_name["bn/moving_mean:0"], by_name["bn/moving_variance:0"]
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        # Training: the batch's statistics normalise.
        out = sess.run(y, {x: xv, is_training: True})
        mean, var = _moments(out)
        np.testing.assert_allclose(mean, 0, atol=1e-5)
        np.testing.assert_allclose(var, 1, atol=1e-2)
        # Evaluating changed nothing; a training step moves the averages by 10%.
        np.testing.assert_allclose(sess.run(moving), 0)
        sess.run(train, {x: xv, is_training: True})
        x_mean, x_var = _moments(xv)
        n = xv.size // 4
        np.testing.assert_allclose(sess.run(moving), 0.1 * x_mean, rtol=1e-5)
        np.testing.assert_allclose(sess.run(moving_var), 0.9 + 0.1 * x_var * n / (n - 1),
                                   rtol=1e-5)
        # A step with is_training False uses and keeps the moving averages.
        before = sess.run(moving)
        sess.run(train, {x: xv, is_training: False})
        np.testing.assert_allclose(sess.run(moving), before)
        out = sess.run(y, {x: xv, is_training: False})
        mm, mv = sess.run([moving, moving_var])
        np.testing.assert_allclose(out, (xv - mm) / np.sqrt(mv + 1e-3), rtol=1e-4, atol=1e-5)


def test_batch_normalization_layer_python_bool_and_errors():
    x = sf.placeholder(sf.float32, [4, 5], name="x")
    bn = sf.layers.BatchNormalization(momentum=0.5, name="norm")
    y_train = bn(x, training=True)
    y_eval = bn(x)
    assert len(bn.updates) == 2
    assert len(bn.variables) == 4
    xv = np.random.RandomState(1).randn(4, 5).astype(np.float32)
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        sess.run(bn.updates, {x: xv})
        np.testing.assert_allclose(sess.run(bn.moving_mean.value()), 0.5 * xv.mean(0),
                                   rtol=1e-5, atol=1e-6)
        a, b = sess.run([y_train, y_eval], {x: xv})
        np.testing.assert_allclose(a.mean(0), 0, atol=1e-5)
        assert not np.allclose(a, b)
    with pytest.raises(ValueError, match="momentum must be in"):
        sf.layers.BatchNormalization(momentum=1.0)
    with pytest.raises(ValueError, match="not several"):
        sf.layers.BatchNormalization(axis=[1, 2])


def test_resnet50_graph():
    images = sf.placeholder(sf.float32, [None, 64, 64, 3], name="images")
    net = sf.applications.ResNet([3, 4, 6, 3], bottleneck=True, width=8, classes=10,
                                 name="resnet50")
    logits = net(images, training=True)
    eval_logits = net(images)
    assert logits.shape.as_list() == [None, 10]
    assert eval_logits.shape.as_list() == [None, 10]
    # 53 batch norms (stem, 16 blocks x 3, 4 projection shortcuts), two updates each.
    assert len(net.updates) == 2 * 53
    names = {v.name for v in net.variables}
    assert "resnet50/stage4/block3/conv3/kernel:0" in names
    assert "resnet50/stage2/block1/conv_shortcut/kernel:0" in names
    assert len(net.variables) == 53 * 5 + 2
    with pytest.raises(ValueError, match="one block per stage"):
        sf.applications.ResNet([2, 0], bottleneck=False)


def test_small_resnet_learns_a_batch():
    rng = np.random.RandomState(2)
    xv = rng.randn(16, 12, 12, 1).astype(np.float32)
    yv = (np.arange(16) % 4).astype(np.int32)
    x = sf.placeholder(sf.float32, [None, 12, 12, 1], name="x")
    labels = sf.placeholder(sf.int32, [None], name="labels")
    net = sf.applications.small_resnet(classes=4, width=4)
    logits = net(x, training=True)
    eval_logits = net(x)
    loss = sf.reduce_mean(sf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    with sf.control_dependencies(net.updates):
        train = sf.train.AdamOptimizer(0.01).minimize(loss)
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        losses = [sess.run([loss, train], {x: xv, labels: yv})[0] for _ in range(40)]
        assert losses[-1] < 0.5 * losses[0], losses
        predictions = sess.run(eval_logits, {x: xv}).argmax(1)
        assert predictions.shape == (16,)


def test_frozen_resnet_matches_and_reorders_filters_once():
    """sf.graph_util.convert_variables_to_constants freezes a trained model: the same logits,
    batch norms folded into the convolutions, constant filters reordered once (repeat runs
    agree)."""
    rng = np.random.RandomState(4)
    xv = rng.randn(3, 12, 12, 1).astype(np.float32)
    x = sf.placeholder(sf.float32, [None, 12, 12, 1], name="x")
    net = sf.applications.small_resnet(classes=4, width=4)
    train_logits = net(x, training=True)
    logits = sf.identity(net(x), name="logits")
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        sess.run([train_logits] + net.updates, {x: xv})  # moving averages away from 0 and 1
        expected = sess.run(logits, {x: xv})
        frozen = sf.graph_util.convert_variables_to_constants(
            sess, sess.graph.as_graph_def(), ["logits"])
        with pytest.raises(ValueError, match="no node named"):
            sf.graph_util.convert_variables_to_constants(sess, sess.graph.as_graph_def(),
                                                         ["nope"])
    ops = [n.op for n in frozen.node]
    assert "VarHandleOp" not in ops and "ReadVariableOp" not in ops
    assert "AssignVariableOp" not in ops  # initializers are not needed by the logits
    with sf.Graph().as_default() as g:
        out, = sf.import_graph_def(frozen, return_elements=["logits:0"], name="")
        feed = g.get_tensor_by_name("x:0")
        meta = sf.RunMetadata()
        with sf.Session() as sess:
            first = sess.run(out, {feed: xv},
                             options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE),
                             run_metadata=meta)
            second = sess.run(out, {feed: xv[::-1].copy()})
            third = sess.run(out, {feed: xv})
    np.testing.assert_allclose(first, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(third, first)
    np.testing.assert_allclose(second, first[::-1], rtol=1e-5, atol=1e-5)
    changes = [c for p in meta.optimizer_report if p["name"] == "remapping"
               for c in p["changes"]]
    assert any(c.startswith("folded") for c in changes), changes
    assert any("has a constant filter" in c for c in changes), changes


def _conv_same(x, w):
    """NumPy reference: stride-1 SAME convolution, NHWC input, HWIO filter."""
    kh, kw = w.shape[:2]
    pad = np.pad(x, [(0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)])
    out = np.zeros(x.shape[:3] + (w.shape[3],))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nhwc,co->nhwo",
                             pad[:, i:i + x.shape[1], j:j + x.shape[2]], w[i, j])
    return out


def test_conv_filter_cache_follows_every_write():
    """A convolution reads its variable filter twice unchanged and from then on reuses the filter
    it reordered; each way of writing the variable in between (assign, assign_add, an optimizer
    step, a restore) and a fed filter changed in place give the new result, not the cached one."""
    rng = np.random.RandomState(7)
    xv = rng.randn(2, 6, 6, 16).astype(np.float32)
    w0 = rng.randn(3, 3, 16, 32).astype(np.float32)
    x = sf.placeholder(sf.float32, [2, 6, 6, 16])
    w = sf.Variable(w0, name="w")
    y = sf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    writes = {
        "assign": w.assign(w0 * 0.5),
        "assign_add": w.assign_add(np.ones_like(w0)),
        "sgd": sf.train.GradientDescentOptimizer(0.01).minimize(sf.reduce_sum(y * y)),
    }
    saver = sf.train.Saver([w])
    with sf.Session() as sess:
        sess.run(sf.global_variables_initializer())
        path = saver.save(sess, "/tmp/sf_conv_cache_test/ckpt")
        for name, op in list(writes.items()) + [("restore", None)]:
            for _ in range(3):  # the second and third runs use the cached filter
                np.testing.assert_allclose(sess.run(y, {x: xv}), _conv_same(xv, sess.run(w)),
                                           rtol=1e-4, atol=1e-3, err_msg=name)
            if op is None:
                saver.restore(sess, path)
            else:
                sess.run(op, {x: xv})
            np.testing.assert_allclose(sess.run(y, {x: xv}), _conv_same(xv, sess.run(w)),
                                       rtol=1e-4, atol=1e-3, err_msg=f"after {name}")
        np.testing.assert_allclose(sess.run(w), w0)  # restored
        xb = sf.placeholder(sf.float32, [None, 6, 6, 16])
        yb = sf.nn.conv2d(xb, w, [1, 1, 1, 1], "SAME")
        for batch in [1, 3, 2, 1, 3, 2, 1]:  # more shapes than the kernel keeps filters for
            np.testing.assert_allclose(sess.run(yb, {xb: xv[:1].repeat(batch, 0)}),
                                       _conv_same(xv[:1], w0).repeat(batch, 0),
                                       rtol=1e-4, atol=1e-3, err_msg=f"batch {batch}")
        fed = sf.placeholder(sf.float32, w0.shape)
        z = sf.nn.conv2d(x, fed, [1, 1, 1, 1], "SAME")
        wf = w0.copy()
        for k in range(4):
            wf *= -1.5  # the same NumPy buffer, new contents, each run
            np.testing.assert_allclose(sess.run(z, {x: xv, fed: wf}), _conv_same(xv, wf),
                                       rtol=1e-4, atol=1e-3, err_msg=f"fed filter, run {k}")
