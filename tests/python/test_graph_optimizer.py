"""The graph optimizer from Python: on by default, each pass turned off through
ConfigProto(graph_options=GraphOptions(rewrite_options=RewriterConfig(...))) as in TF1, and
RunMetadata showing what each pass changed. Values with and without it agree."""

import numpy as np
import pytest

import shardflow as sf


@pytest.fixture(autouse=True)
def fresh_graph():
    g = sf.Graph()
    with g.as_default():
        yield g


def _dense_net():
    x = sf.placeholder(sf.float32, [8, 6], name="x")
    w = sf.constant(np.random.RandomState(0).randn(6, 5).astype(np.float32), name="w")
    b = sf.constant(np.linspace(-1, 1, 5).astype(np.float32), name="b")
    h = sf.nn.relu(sf.nn.bias_add(sf.matmul(x, w), b), name="h")
    scale = sf.multiply(sf.constant(2.0), sf.constant(0.5), name="scale")
    y = sf.identity(h * scale, name="y")
    grad = sf.gradients(sf.reduce_sum(y * y), [x])[0]
    return x, y, grad


def _run(config, fetches, feed):
    meta = sf.RunMetadata()
    with sf.Session(config=config) as sess:
        out = sess.run(fetches, feed_dict=feed,
                       options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE),
                       run_metadata=meta)
    return out, meta


def test_default_config_optimizes_and_reports():
    x, y, grad = _dense_net()
    feed = {x: np.random.RandomState(1).randn(8, 6).astype(np.float32)}
    (yv, gv), meta = _run(None, [y, grad], feed)
    passes = {p["name"]: p for p in meta.optimizer_report}
    assert "remapping" in passes and "constant_folding" in passes
    changes = "\n".join(c for p in meta.optimizer_report for c in p["changes"])
    assert "into _FusedMatMul" in changes
    assert "folded 'scale' (Mul)" in changes
    assert "_FusedMatMul" in meta.optimized_graph_ops.values()

    off = sf.ConfigProto(graph_options=sf.GraphOptions(
        rewrite_options=sf.RewriterConfig(disable_meta_optimizer=True)))
    (y0, g0), meta0 = _run(off, [y, grad], feed)
    assert meta0.optimizer_report == []
    np.testing.assert_allclose(yv, y0, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gv, g0, rtol=1e-5, atol=1e-5)


def test_each_pass_turns_off_tf1_style():
    x, y, grad = _dense_net()
    feed = {x: np.ones((8, 6), np.float32)}
    config = sf.ConfigProto()
    config.graph_options.rewrite_options.remapping = sf.RewriterConfig.OFF
    config.graph_options.rewrite_options.constant_folding = sf.RewriterConfig.OFF
    _, meta = _run(config, [y], feed)
    names = [p["name"] for p in meta.optimizer_report]
    assert "remapping" not in names and "constant_folding" not in names
    assert "common_subgraph_elimination" in names
    assert "_FusedMatMul" not in meta.optimized_graph_ops.values()


def test_bad_rewrite_options_are_refused():
    with pytest.raises(ValueError, match="no pass"):
        sf.RewriterConfig(constant_fold=sf.RewriterConfig.OFF)
    config = sf.ConfigProto()
    config.graph_options.rewrite_options.remapping = 7
    sf.constant(1.0)
    with pytest.raises(ValueError, match="DEFAULT, ON or OFF"):
        sf.Session(config=config)


def _bf16(a):
    """Rounds float32 to bfloat16 (nearest even), in float32."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def test_bfloat16_mixed_precision_is_opt_in():
    """auto_mixed_precision_onednn_bfloat16=ON: the products read bfloat16-rounded inputs (fp32
    master weights); off by default."""
    rng = np.random.RandomState(3)
    xv, wv = rng.randn(8, 6).astype(np.float32), rng.randn(6, 5).astype(np.float32)
    x = sf.placeholder(sf.float32, [8, 6], name="x")
    w = sf.Variable(wv, name="w")
    y = sf.matmul(x, w, name="y")
    grad = sf.gradients(sf.reduce_sum(y * y), [w])[0]
    config = sf.ConfigProto(graph_options=sf.GraphOptions(rewrite_options=sf.RewriterConfig(
        auto_mixed_precision_onednn_bfloat16=sf.RewriterConfig.ON)))
    meta = sf.RunMetadata()
    with sf.Session(config=config) as sess:
        sess.run(w.initializer)
        yv, gv = sess.run([y, grad], {x: xv},
                          options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE),
                          run_metadata=meta)
        np.testing.assert_allclose(sess.run(w), wv)  # the master weights stay fp32
    passes = {p["name"]: p for p in meta.optimizer_report}
    assert "auto_mixed_precision_onednn_bfloat16" in passes
    np.testing.assert_allclose(yv, _bf16(xv) @ _bf16(wv), rtol=1e-2, atol=1e-4)
    exact = xv @ wv
    assert np.abs(yv - exact).max() > 0  # rounding happened
    np.testing.assert_allclose(yv, exact, rtol=3e-2, atol=3e-2)
    np.testing.assert_allclose(gv, 2 * xv.T @ exact, rtol=5e-2, atol=5e-2)
    meta = sf.RunMetadata()
    with sf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(
            sess.run(y, {x: xv}, options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE),
                     run_metadata=meta), exact, rtol=1e-5, atol=1e-5)
    assert "auto_mixed_precision_onednn_bfloat16" not in [p["name"] for p in
                                                          meta.optimizer_report]


def test_enable_mixed_precision_graph_rewrite_turns_the_pass_on_for_new_sessions():
    """TF1's tf.train.experimental.enable_mixed_precision_graph_rewrite: the optimizer comes
    back unchanged (bfloat16 needs no loss scaling), sessions made afterwards round the products'
    inputs unless their config sets the pass OFF, and disable_... turns it back off."""
    rng = np.random.RandomState(4)
    xv, wv = rng.randn(4, 9).astype(np.float32), rng.randn(9, 3).astype(np.float32)
    x = sf.placeholder(sf.float32, [4, 9], name="x")
    y = sf.matmul(x, sf.constant(wv), name="y")
    exact = xv @ wv
    opt = sf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="sf.train.Optimizer"):
        sf.train.experimental.enable_mixed_precision_graph_rewrite("adam")
    with pytest.raises(ValueError, match="positive"):
        sf.train.experimental.enable_mixed_precision_graph_rewrite(opt, loss_scale=-1)
    try:
        assert sf.train.experimental.enable_mixed_precision_graph_rewrite(opt) is opt
        with sf.Session() as sess:
            yv = sess.run(y, {x: xv})
        np.testing.assert_allclose(yv, _bf16(xv) @ _bf16(wv), rtol=1e-5, atol=1e-5)
        assert np.abs(yv - exact).max() > 0
        off = sf.ConfigProto(graph_options=sf.GraphOptions(rewrite_options=sf.RewriterConfig(
            auto_mixed_precision_onednn_bfloat16=sf.RewriterConfig.OFF)))
        with sf.Session(config=off) as sess:
            np.testing.assert_allclose(sess.run(y, {x: xv}), exact, rtol=1e-5, atol=1e-5)
    finally:
        sf.compat.v1.mixed_precision.disable_mixed_precision_graph_rewrite()
    with sf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: xv}), exact, rtol=1e-5, atol=1e-5)


def test_batch_norm_folded_into_the_filter_follows_writes_to_its_variables():
    # Regression (2026-11-29): _FusedConv2DBatchNorm (Conv2D + an inference batch norm of variable
    # statistics) folds scale / sqrt(variance + epsilon) into a copy of the filter that it keeps
    # between runs; a write to the filter or to any statistic must show in the next run.
    rng = np.random.RandomState(7)
    x = sf.placeholder(sf.float32, [2, 6, 6, 3], name="x")
    shapes = {"f": (3, 3, 3, 4), "scale": (4,), "offset": (4,), "mean": (4,), "variance": (4,)}

    def value(name):
        v = rng.randn(*shapes[name]).astype(np.float32)
        return np.abs(v) + 0.5 if name == "variance" else v

    variables = {n: sf.Variable(value(n), name=n) for n in shapes}
    feeds = {n: sf.placeholder(sf.float32, shapes[n]) for n in shapes}
    assign = {n: sf.assign(variables[n], feeds[n]) for n in shapes}
    conv = sf.nn.conv2d(x, variables["f"], [1, 1, 1, 1], "SAME")
    y, _, _ = sf.nn.fused_batch_norm(conv, variables["scale"], variables["offset"],
                                     mean=variables["mean"], variance=variables["variance"],
                                     is_training=False)
    out = sf.nn.relu(y)
    xv = rng.randn(2, 6, 6, 3).astype(np.float32)
    off = sf.ConfigProto()
    off.graph_options.rewrite_options.remapping = sf.RewriterConfig.OFF
    fused, plain = sf.Session(), sf.Session(config=off)
    for sess in (fused, plain):
        sess.run(sf.global_variables_initializer())
    meta = sf.RunMetadata()
    first = fused.run(out, {x: xv}, options=sf.RunOptions(trace_level=sf.RunOptions.FULL_TRACE),
                      run_metadata=meta)
    assert "_FusedConv2DBatchNorm" in meta.optimized_graph_ops.values()
    np.testing.assert_allclose(first, plain.run(out, {x: xv}), rtol=1e-4, atol=1e-4)
    for name in ["mean", "f", "variance", "scale", "offset"]:
        v = value(name)
        for sess in (fused, plain):
            sess.run(assign[name], {feeds[name]: v})
        got, want = fused.run(out, {x: xv}), plain.run(out, {x: xv})
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg="after writing " + name)
        assert not np.allclose(got, first)
    fused.close()
    plain.close()
