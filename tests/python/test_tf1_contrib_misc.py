"""tf.contrib.layers (layer_norm, batch_norm, embed_sequence, dropout), tf.contrib.framework
(arg_scope, global step, get_variables), tf.contrib.training.HParams, tf.contrib.opt's
AdamWOptimizer, tf.contrib.rnn.LayerNormBasicLSTMCell, tf.test, tf.debugging, tf.sysconfig
and the GraphKeys TF1 programs name, checked against NumPy and TF1's documented behaviour."""

import io
import json
import os
import sys
import unittest

import numpy as np
import pytest

import shardflow as tf
from shardflow import summary
from shardflow import testing as tf_test
from shardflow.extra_namespaces import debugging, sysconfig

layers = tf.contrib.layers
framework = tf.contrib.framework


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def _np_layer_norm(x, axes, eps=1e-12):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


# ---- contrib.layers ------------------------------------------------------------------------


def test_layer_norm_normalizes_from_begin_norm_axis_with_tf_variable_names():
    x = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32) * 3 + 1
    y = layers.layer_norm(tf.constant(x))
    y_last = layers.layer_norm(tf.constant(x), begin_norm_axis=-1, activation_fn=tf.nn.relu)
    names = [v.op.name for v in tf.global_variables()]
    assert names == ["LayerNorm/beta", "LayerNorm/gamma", "LayerNorm_1/beta", "LayerNorm_1/gamma"]
    assert [v.op.name for v in framework.get_model_variables()] == names
    assert tf.global_variables()[0].shape.as_list() == [4]            # begin_params_axis=-1
    got, got_last = _run([y, y_last])
    np.testing.assert_allclose(got, _np_layer_norm(x, (1, 2)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_last, np.maximum(_np_layer_norm(x, (2,)), 0), rtol=1e-4,
                               atol=1e-5)


def test_layer_norm_scope_reuse_and_gamma_beta_applied():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.variable_scope("ln"):
        y = layers.layer_norm(tf.constant(x), scope="norm", center=True, scale=True)
    with tf.variable_scope("ln", reuse=True):
        y2 = layers.layer_norm(tf.constant(x), scope="norm")
    gamma = [v for v in tf.global_variables() if v.op.name == "ln/norm/gamma"][0]
    beta = [v for v in tf.global_variables() if v.op.name == "ln/norm/beta"][0]
    assert len(tf.global_variables()) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([gamma.assign([1.0, 2.0, 3.0]), beta.assign([0.5, 0.0, -1.0])])
        got, got2 = sess.run([y, y2])
    want = _np_layer_norm(x, (1,)) * np.array([1, 2, 3]) + np.array([0.5, 0, -1])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got2, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="begin_norm_axis"):
        layers.layer_norm(tf.constant(x), begin_norm_axis=2)


def test_batch_norm_contrib_defaults_and_update_collections():
    x = np.random.RandomState(1).randn(8, 3).astype(np.float32) * 2 + 5
    y = layers.batch_norm(tf.constant(x), decay=0.9, is_training=True)
    names = sorted(v.op.name for v in tf.global_variables())
    assert names == ["BatchNorm/beta", "BatchNorm/moving_mean",      # scale=False: no gamma,
                     "BatchNorm/moving_variance"]                    # as TF1's
    assert len(framework.get_model_variables()) == 3
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    moving_mean = framework.get_variables(suffix="moving_mean")[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(y)
        assert np.allclose(sess.run(moving_mean), 0)       # updates only when run
        sess.run(updates)
        np.testing.assert_allclose(sess.run(moving_mean), 0.1 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(got, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4,
                               atol=1e-4)


def test_batch_norm_in_place_updates_and_inference():
    x = np.random.RandomState(2).randn(6, 2).astype(np.float32) + 3
    y = layers.batch_norm(tf.constant(x), decay=0.5, updates_collections=None, scope="bn")
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    with tf.variable_scope("eval"):
        y_eval = layers.batch_norm(tf.constant(x), is_training=False, center=False)
    moving_mean = framework.get_variables("bn", suffix="moving_mean")[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(y)
        np.testing.assert_allclose(sess.run(moving_mean), 0.5 * x.mean(0), rtol=1e-5)
        np.testing.assert_allclose(sess.run(y_eval), x / np.sqrt(1 + 1e-3), rtol=1e-5)


def test_embed_sequence_and_dropout():
    ids = np.array([[1, 2, 0], [4, 4, 3]], np.int32)
    e = layers.embed_sequence(tf.constant(ids), vocab_size=5, embed_dim=3)
    table = tf.global_variables()[0]
    assert table.op.name == "EmbedSequence/embeddings" and table.shape.as_list() == [5, 3]
    x = np.ones((50, 40), np.float32)
    off = layers.dropout(tf.constant(x), keep_prob=0.5, is_training=False)
    on = layers.dropout(tf.constant(x), keep_prob=0.5, seed=3)
    flag = tf.placeholder(tf.bool, [])
    fed = layers.dropout(tf.constant(x), keep_prob=0.25, is_training=flag, seed=4)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, t, o, n = sess.run([e, table, off, on])
        f_off, f_on = sess.run(fed, {flag: False}), sess.run(fed, {flag: True})
    np.testing.assert_allclose(got, t[ids])
    np.testing.assert_array_equal(o, x)
    assert set(np.unique(n)) <= {0.0, 2.0} and 0.3 < (n == 0).mean() < 0.7
    np.testing.assert_array_equal(f_off, x)
    assert set(np.unique(f_on)) <= {0.0, 4.0}


# ---- contrib.framework ---------------------------------------------------------------------


def test_arg_scope_nests_merges_and_the_call_wins():
    @framework.add_arg_scope
    def f(a, b=1, c=2):
        return a, b, c

    with framework.arg_scope([f], b=10, c=20):
        assert f(0) == (0, 10, 20)
        with framework.arg_scope([f], c=30) as inner:
            assert f(0) == (0, 10, 30)              # b from the outer scope, c overridden
            assert f(0, c=5) == (0, 10, 5)          # explicit kwargs win
        assert f(0) == (0, 10, 20)                  # the inner scope is gone
    assert f(0) == (0, 1, 2)
    with framework.arg_scope(inner):                # re-entered
        assert f(0) == (0, 10, 30)
    assert framework.has_arg_scope(f) and framework.arg_scoped_arguments(f) == ["a", "b", "c"]

    def plain(a):
        return a
    with pytest.raises(ValueError, match="not decorated with @add_arg_scope"):
        with framework.arg_scope([plain], a=1):
            pass


def test_arg_scope_sets_contrib_layer_defaults():
    x = tf.constant(np.array([[1.0, -2.0]], np.float32))
    ones = tf.ones_initializer()
    with framework.arg_scope([layers.fully_connected], activation_fn=None,
                             weights_initializer=ones):
        linear = layers.fully_connected(x, 3)                          # -1 each (no ReLU)
        relu = layers.fully_connected(x, 3, activation_fn=tf.nn.relu)  # the call wins
    assert sorted(v.op.name for v in tf.global_variables()) == [
        "fully_connected/biases", "fully_connected/weights", "fully_connected_1/biases",
        "fully_connected_1/weights"]
    with framework.arg_scope([layers.layer_norm, layers.batch_norm], scale=False):
        layers.layer_norm(x)
    assert "LayerNorm/gamma" not in [v.op.name for v in tf.global_variables()]
    got_linear, got_relu = _run([linear, relu])
    np.testing.assert_allclose(got_linear, [[-1, -1, -1]])
    np.testing.assert_allclose(got_relu, [[0, 0, 0]])
    for fn in (layers.fully_connected, layers.conv2d, layers.max_pool2d, layers.batch_norm,
               layers.layer_norm, layers.dropout, layers.flatten):
        assert framework.has_arg_scope(fn), fn


def test_framework_global_step_and_variable_lookups():
    assert framework.get_global_step() is None
    step = framework.get_or_create_global_step()
    assert framework.get_global_step() is step and framework.get_or_create_global_step() is step
    with tf.variable_scope("a"):
        w = framework.model_variable("w", [2])
        b = framework.variable("b", [2])
    with tf.variable_scope("c"):
        framework.variable("w", [1], trainable=False)
    assert framework.get_model_variables() == [w]
    assert framework.get_variables("a") == [w, b]
    assert [v.op.name for v in framework.get_variables(suffix="w")] == ["a/w", "c/w"]
    assert [v.op.name for v in framework.get_variables_by_name("w")] == ["a/w", "c/w"]
    assert framework.get_trainable_variables("c") == []


# ---- contrib.training.HParams --------------------------------------------------------------


def test_hparams_parse_types_and_errors():
    HParams = tf.contrib.training.HParams
    hp = HParams(lr=0.1, steps=10, name="adam", layers=[32, 32], flag=False)
    assert hp.parse("lr=1,steps=20,name=sgd,layers=[1,2,3],flag=true") is hp
    assert hp.values() == {"lr": 1.0, "steps": 20, "name": "sgd", "layers": [1, 2, 3],
                           "flag": True}
    assert isinstance(hp.lr, float)
    hp.parse("layers[1]=7,flag=0")
    assert hp.layers == [1, 7, 3] and hp.flag is False
    for bad, match in (("steps=1.5", "Could not parse hparam 'steps'"),
                       ("nope=1", "Unknown hyperparameter"),
                       ("lr=1,lr=2", "Multiple assignments"),
                       ("lr", "Malformed")):
        with pytest.raises(ValueError, match=match):
            hp.parse(bad)
    with pytest.raises(ValueError, match="Could not cast"):
        hp.set_hparam("steps", 2.5)
    with pytest.raises(ValueError, match="Must pass a list"):
        hp.set_hparam("layers", 3)
    with pytest.raises(ValueError, match="reserved"):
        hp.add_hparam("values", 1)
    hp.add_hparam("dropout", 0.5)
    hp.set_hparam("dropout", 1)
    assert hp.dropout == 1.0 and "dropout" in hp and hp.get("missing", 3) == 3
    assert json.loads(hp.to_json()) == hp.values()
    assert HParams(a=1).parse_json('{"a": 4}').a == 4


# ---- contrib.opt.AdamWOptimizer ------------------------------------------------------------


def test_adamw_first_step_matches_numpy():
    w0 = np.array([1.0, -2.0, 3.0], np.float32)
    b0 = np.array([0.5, 0.5, 0.5], np.float32)
    target = np.array([0.0, 1.0, 2.0], np.float32)
    w = tf.Variable(w0, name="w")
    b = tf.Variable(b0, name="b")
    loss = tf.reduce_sum(tf.square(w * b - target))
    lr, wd = 0.1, 0.05
    train = tf.contrib.opt.AdamWOptimizer(wd, learning_rate=lr).minimize(loss,
                                                                          decay_var_list=[w])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        got_w, got_b = sess.run([w, b])

    def adam_first(g):   # one Adam step from zero moments: m_hat = g, v_hat = g^2
        return lr * g / (np.abs(g) + 1e-8)
    gw = 2 * (w0 * b0 - target) * b0
    gb = 2 * (w0 * b0 - target) * w0
    # TF's DecoupledWeightDecayExtension: var -= wd * var, then Adam with the gradient taken
    # at the old value; only decay_var_list is decayed.
    np.testing.assert_allclose(got_w, w0 - wd * w0 - adam_first(gw), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_b, b0 - adam_first(gb), rtol=1e-5, atol=1e-6)


# ---- contrib.rnn.LayerNormBasicLSTMCell ----------------------------------------------------


def test_layer_norm_lstm_cell_one_step_matches_numpy():
    assert tf.contrib.rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    n, depth = 2, 3
    x = np.random.RandomState(3).randn(4, depth).astype(np.float32)
    cell = tf.contrib.rnn.LayerNormBasicLSTMCell(n, forget_bias=1.0, norm_gain=1.5,
                                                 norm_shift=0.25)
    state = cell.zero_state(4, tf.float32)
    h, new_state = cell(tf.constant(x), state)
    kernel = [v for v in tf.global_variables() if v.op.name.endswith("kernel")][0]
    assert sorted(v.op.name for v in tf.global_variables()) == sorted(
        ["layer_norm_basic_lstm_cell/kernel"]
        + ["layer_norm_basic_lstm_cell/%s/%s" % (s, p)
           for s in ("input", "transform", "forget", "output", "state")
           for p in ("gamma", "beta")])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_h, got_c, k = sess.run([h, new_state.c, kernel])

    def ln(v):
        return 1.5 * _np_layer_norm(v, (1,)) + 0.25

    def sig(v):
        return 1 / (1 + np.exp(-v))
    gates = np.concatenate([x, np.zeros((4, n), np.float32)], 1) @ k
    i, j, f, o = np.split(gates, 4, axis=1)
    c = ln(sig(ln(i)) * np.tanh(ln(j)))   # the old c is 0: its forget term vanishes
    np.testing.assert_allclose(got_c, c, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_h, np.tanh(c) * sig(ln(o)), rtol=1e-4, atol=1e-5)


# ---- tf.test, tf.debugging, tf.sysconfig, GraphKeys ----------------------------------------


class _SquareTest(tf_test.TestCase):
    __test__ = False    # run by test_tf_test_case_runs_under_unittest, not by pytest

    def testSessionsAndAsserts(self):
        x = tf.square(tf.constant([2.0, 3.0]))
        with self.session() as sess:
            self.assertAllClose(sess.run(x), [4.0, 9.0])
            self.assertAllClose(x, np.array([4.0, 9.0001]), rtol=1e-4)   # a tensor, evaluated
        with self.cached_session() as a, self.test_session() as b:
            self.assertIs(a, b)
        self.assertAllEqual(self.evaluate(tf.constant([1, 2])), [1, 2])
        self.assertAllClose({"a": [1.0, 2.0]}, {"a": np.array([1.0, 2.0])})
        with self.assertRaises(AssertionError):
            self.assertAllClose([1.0, 2.0], [1.0, 2.1])
        with self.assertRaises(AssertionError):
            self.assertAllEqual([1, 2], [[1, 2]])

    def testFreshGraph(self):
        self.assertEqual(tf.get_default_graph().get_operations(), [])
        tf.constant(1.0)

    def testFails(self):
        self.assertAllClose([1.0], [2.0])


def test_tf_test_case_runs_under_unittest():
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(_SquareTest)
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
    # unittest also takes test_session for a test; it skips itself, as TF1's does.
    assert result.testsRun == 4 and not result.errors
    assert [t.id().rsplit(".", 1)[-1] for t, _ in result.skipped] == ["test_session"]
    assert [t.id().rsplit(".", 1)[-1] for t, _ in result.failures] == ["testFails"]
    assert sys.modules["shardflow.test"] is tf_test and tf_test.main is not None


def test_device_queries_agree_with_the_session_devices():
    with tf.Session(graph=tf.Graph()) as sess:
        has_gpu = any("/device:GPU:" in d for d in sess.list_devices())
    assert tf_test.is_gpu_available() is has_gpu
    assert tf_test.is_gpu_available(cuda_only=True) is has_gpu
    assert tf_test.gpu_device_name() == ("/device:GPU:0" if has_gpu else "")
    assert isinstance(tf_test.is_built_with_cuda(), bool)
    if has_gpu:
        assert tf_test.is_built_with_cuda()


def test_debugging_namespace():
    assert debugging.assert_all_finite is tf.verify_tensor_all_finite
    assert debugging.assert_equal is tf.assert_equal
    x = tf.placeholder(tf.float32, [2])
    checked = debugging.check_numerics(x, "x is bad")
    finite = debugging.assert_all_finite(x, "not finite")
    with tf.control_dependencies([debugging.assert_equal(x, x)]):
        same = tf.identity(x)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(same, {x: [1.0, 2.0]}), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(checked, {x: [1.0, 2.0]}), [1.0, 2.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="not finite"):
            sess.run(finite, {x: [1.0, np.nan]})
    with pytest.raises(ValueError, match="rank 3"):
        debugging.assert_rank(x, 3)
    with pytest.raises(AttributeError, match="has no attribute 'nonexistent'"):
        debugging.nonexistent
    assert sys.modules["shardflow.debugging"] is debugging


def test_sysconfig_points_at_the_package():
    package = os.path.dirname(os.path.abspath(tf.__file__))
    assert sysconfig.get_lib() == package
    assert sysconfig.get_include() in (package, os.path.join(package, "include"))
    assert sysconfig.get_compile_flags() == ["-I" + sysconfig.get_include()]
    assert sys.modules["shardflow.sysconfig"] is sysconfig


def test_graph_keys_tf1_names():
    keys = tf.GraphKeys
    assert keys.SUMMARIES == summary.SUMMARIES == "summaries"
    assert (keys.QUEUE_RUNNERS, keys.TRAIN_OP, keys.MODEL_VARIABLES) == (
        "queue_runners", "train_op", "model_variables")
    assert (keys.INIT_OP, keys.LOCAL_INIT_OP, keys.READY_OP, keys.READY_FOR_LOCAL_INIT_OP,
            keys.SUMMARY_OP, keys.SAVERS) == ("init_op", "local_init_op", "ready_op",
                                              "ready_for_local_init_op", "summary_op", "savers")
    assert (keys.LOSSES, keys.REGULARIZATION_LOSSES, keys.UPDATE_OPS) == (
        "losses", "regularization_losses", "update_ops")
