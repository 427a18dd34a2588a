"""TF1 program-level API composed in Python: regularizers and the REGULARIZATION_LOSSES
collection, contrib.layers' initializers, ExponentialMovingAverage (against a NumPy recurrence),
tf.logging, tf.app.flags / tf.app.run, and the tf.math / tf.linalg / tf.random / tf.compat.v1
namespaces. (The composed ops are in test_tf1_api.py.)"""
import logging
import math
import sys

import numpy as np
import pytest

import shardflow as tf
from shardflow import ops


def run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


# ---- regularizers ------------------------------------------------------------------------------


def test_regularizer_functions_and_their_checks():
    w = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    with tf.Graph().as_default():
        t = tf.constant(w)
        layers = tf.contrib.layers
        l1, l2, both = run([layers.l1_regularizer(0.1)(t), layers.l2_regularizer(0.1)(t),
                            layers.l1_l2_regularizer(0.1, 0.2)(t)])
        assert layers.l2_regularizer(0.0)(t) is None
        assert layers.l1_l2_regularizer(0.0, 0.0)(t) is None
        with pytest.raises(ValueError, match="integer"):
            layers.l2_regularizer(1)
        with pytest.raises(ValueError, match="less than 0"):
            layers.l1_regularizer(-0.5)
        with pytest.raises(ValueError, match="scale_l2 cannot be an integer"):
            layers.l1_l2_regularizer(0.1, 2)
    np.testing.assert_allclose(l1, 0.1 * np.abs(w).sum(), rtol=1e-6)
    np.testing.assert_allclose(l2, 0.1 * (w ** 2).sum() / 2, rtol=1e-6)   # TF1: scale * l2_loss
    np.testing.assert_allclose(both, 0.1 * np.abs(w).sum() + 0.2 * (w ** 2).sum() / 2, rtol=1e-6)


def test_layer_and_get_variable_regularizers_are_collected_and_summed():
    rng = np.random.RandomState(5)
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(rng.randn(2, 4).astype(np.float32))
        reg = tf.contrib.layers.l2_regularizer(0.01)
        h = tf.layers.dense(x, 3, activation=tf.nn.relu, kernel_regularizer=reg,
                            bias_regularizer=tf.contrib.layers.l1_regularizer(0.5),
                            bias_initializer=tf.constant_initializer(0.25), name="fc")
        images = tf.constant(rng.randn(1, 5, 5, 2).astype(np.float32))
        conv = tf.layers.conv2d(images, 4, 3, kernel_regularizer=reg, name="conv")
        with tf.variable_scope("scoped", regularizer=tf.contrib.layers.l1_regularizer(0.1)):
            v = tf.get_variable("v", [3], initializer=tf.constant_initializer(-2.0))
            u = tf.get_variable("u", [2], initializer=tf.constant_initializer(1.0),
                                regularizer=reg)
        with tf.variable_scope("scoped", reuse=True):
            tf.get_variable("v", [3])             # reuse: no second penalty
        losses = tf.losses.get_regularization_losses()
        assert len(losses) == 5
        assert losses == tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        assert losses[0].name.startswith("fc/kernel/Regularizer/")
        assert len(tf.losses.get_regularization_losses(scope="scoped")) == 2
        total_reg = tf.losses.get_regularization_loss()
        data_loss = tf.losses.mean_squared_error(tf.zeros_like(h), h)
        total = tf.losses.get_total_loss()
        fc_kernel = [w for w in tf.global_variables() if w.op.name == "fc/kernel"][0]
        fc_bias = [w for w in tf.global_variables() if w.op.name == "fc/bias"][0]
        conv_kernel = [w for w in tf.global_variables() if w.op.name == "conv/kernel"][0]
        (d_kernel,) = tf.gradients(total_reg, [fc_kernel])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            k, b, ck, vv, uu, r, t, dl, dk, conv_ = s.run(
                [fc_kernel, fc_bias, conv_kernel, v, u, total_reg, total, data_loss, d_kernel,
                 conv])
    assert conv_.shape == (1, 3, 3, 4)
    np.testing.assert_array_equal(b, [0.25] * 3)
    expected = (0.01 * (k ** 2).sum() / 2 + 0.5 * np.abs(b).sum() + 0.01 * (ck ** 2).sum() / 2
                + 0.1 * np.abs(vv).sum() + 0.01 * (uu ** 2).sum() / 2)
    np.testing.assert_allclose(r, expected, rtol=1e-5)
    np.testing.assert_allclose(t, dl + expected, rtol=1e-5)
    np.testing.assert_allclose(dk, 0.01 * k, rtol=1e-5)


def test_activity_regularizer_and_an_empty_regularization_loss():
    with tf.Graph().as_default():
        assert run(tf.losses.get_regularization_loss()) == 0.0
        x = tf.constant([[1.0, -1.0], [2.0, 0.5], [0.0, -3.0]])
        h = tf.layers.dense(x, 2, kernel_initializer=tf.random_normal_initializer(seed=1),
                            activity_regularizer=tf.contrib.layers.l1_regularizer(1.0))
        (penalty,) = tf.losses.get_regularization_losses()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            h_, p_ = s.run([h, penalty])
    np.testing.assert_allclose(p_, np.abs(h_).sum() / 3, rtol=1e-6)   # per example, as TF1.13+


def test_apply_regularization_sums_over_weights():
    with tf.Graph().as_default():
        a, b = tf.constant([1.0, -2.0]), tf.constant([3.0])
        total = tf.contrib.layers.apply_regularization(tf.contrib.layers.l1_regularizer(0.5),
                                                       [a, b])
        assert tf.losses.get_regularization_losses() == [total]
        assert run(total) == 3.0
        with pytest.raises(ValueError, match="no weights"):
            tf.contrib.layers.apply_regularization(tf.contrib.layers.l1_regularizer(0.5))


def test_contrib_layers_initializers():
    with tf.Graph().as_default():
        xavier = tf.get_variable("xavier", [200, 300],
                                 initializer=tf.contrib.layers.xavier_initializer(seed=1))
        normal = tf.get_variable("he", [3, 3, 64, 100],
                                 initializer=tf.contrib.layers.variance_scaling_initializer(seed=2))
        uniform = tf.contrib.layers.variance_scaling_initializer(
            factor=1.0, mode="FAN_OUT", uniform=True, seed=3)([50, 400])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            xv, nv, uv = s.run([xavier, normal, uniform])
    limit = math.sqrt(6.0 / 500)
    assert np.abs(xv).max() <= limit and abs(xv.std() - limit / math.sqrt(3)) < 0.02 * limit
    stddev = math.sqrt(1.3 * 2.0 / (3 * 3 * 64))     # before truncation at 2 stddev
    assert np.abs(nv).max() <= 2 * stddev * 1.0001
    assert abs(nv.std() - 0.8796 * stddev) < 0.03 * stddev
    limit = math.sqrt(3.0 / 400)
    assert np.abs(uv).max() <= limit and abs(uv.std() - limit / math.sqrt(3)) < 0.03 * limit
    with pytest.raises(TypeError, match="unknown mode"):
        tf.contrib.layers.variance_scaling_initializer(mode="fan_in")


def test_contrib_refuses_what_it_does_not_carry():
    assert tf.contrib.rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    with pytest.raises(AttributeError, match="tf.contrib.gan"):
        tf.contrib.gan
    with pytest.raises(AttributeError, match="tf.estimator"):   # only its MNIST reader is here
        tf.contrib.learn.Estimator
    with pytest.raises(AttributeError, match="tf.contrib.layers.conv3d.*sf.layers"):
        tf.contrib.layers.conv3d


# ---- ExponentialMovingAverage ------------------------------------------------------------------


def test_ema_of_variables_follows_the_numpy_recurrence():
    values = [np.array([3.0, -1.0]), np.array([0.5, 2.0]), np.array([10.0, 4.0]),
              np.array([-2.0, 0.0])]
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        w = tf.Variable(5.0, name="w")
        new = tf.placeholder(tf.float32, [2])
        set_v = v.assign(new)
        ema = tf.train.ExponentialMovingAverage(0.9)
        update = ema.apply([v, w])
        shadow = ema.average(v)
        assert shadow.op.name == "v/ExponentialMovingAverage" == ema.average_name(v)
        assert not shadow.trainable and ema.average(tf.constant(1.0)) is None
        assert tf.moving_average_variables() == [v, w]
        with pytest.raises(ValueError, match="already computed"):
            ema.apply([v])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            np.testing.assert_allclose(s.run(shadow), [1.0, 2.0])    # starts at the initial value
            expected = np.array([1.0, 2.0])
            for value in values:
                s.run(set_v, {new: value})
                s.run(update)
                expected = 0.9 * expected + 0.1 * value
                np.testing.assert_allclose(s.run(shadow), expected, rtol=1e-6)
            np.testing.assert_allclose(s.run(ema.average(w)), 5.0)


def test_ema_with_num_updates_reads_values_after_the_train_step():
    g = tf.Graph()
    with g.as_default():
        step = tf.train.get_or_create_global_step()
        v = tf.Variable(0.0, name="v")
        train_op = tf.group(v.assign_add(1.0, read_value=False),
                            step.assign_add(tf.constant(1, step.dtype), read_value=False))
        ema = tf.train.ExponentialMovingAverage(0.99, num_updates=step)
        with tf.control_dependencies([train_op]):
            train_and_average = ema.apply([v])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            shadow = 0.0
            for t in range(1, 8):
                s.run(train_and_average)
                decay = min(0.99, (1.0 + t) / (10.0 + t))   # num_updates and v after the step
                shadow = decay * shadow + (1 - decay) * t
                np.testing.assert_allclose(s.run(ema.average(v)), shadow, rtol=1e-6)


def test_ema_of_a_tensor_is_zero_debiased_with_zero_debias_and_num_updates_may_be_fed():
    g = tf.Graph()
    with g.as_default():
        loss = tf.placeholder(tf.float32, [], name="loss")
        n = tf.placeholder(tf.int32, [])
        ema = tf.train.ExponentialMovingAverage(0.9, num_updates=n, zero_debias=True, name="avg")
        update = ema.apply([loss])
        assert ema.average_name(loss) == "loss/avg"
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            biased, t = 0.0, 0
            for step, value in enumerate([4.0, 2.0, 7.0, 1.0, 3.0]):
                s.run(update, {loss: value, n: step * 5})
                decay = min(0.9, (1.0 + step * 5) / (10.0 + step * 5))
                biased = decay * biased + (1 - decay) * value
                t += 1
                np.testing.assert_allclose(s.run(ema.average(loss)), biased / (1 - decay ** t),
                                           rtol=1e-5)
                if step == 0:
                    assert abs(s.run(ema.average(loss)) - 4.0) < 1e-5   # debiased: the value


def test_ema_debiases_only_tensors_and_only_when_asked_as_tf1():
    # Regression: tensors were always zero-debiased (TF1's default zero_debias=False leaves
    # their zero-started shadow biased: 0.02 after one step of 0.2 at decay 0.9, not 0.2) and
    # variables were debiased with zero_debias=True (TF1 never debiases a variable's shadow,
    # which starts at its value).
    from shardflow.python.training import moving_averages
    with tf.Graph().as_default():
        t = tf.placeholder(tf.float32, [])
        w = tf.Variable([1.0, -2.0])
        plain = tf.train.ExponentialMovingAverage(0.9)
        asked = tf.train.ExponentialMovingAverage(0.9, zero_debias=True, name="asked")
        step = tf.group(plain.apply([t]), asked.apply([w]))
        with tf.control_dependencies([step]):
            bump = w.assign_add([1.0, 1.0])
        v = tf.Variable(0.0)
        mv = moving_averages.assign_moving_average(v, t, 0.9)             # debiased (default)
        mv_plain = moving_averages.assign_moving_average(tf.Variable(0.0), t, 0.9,
                                                         zero_debias=False)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(bump, {t: 0.2})
            assert abs(s.run(plain.average(t)) - 0.02) < 1e-7
            np.testing.assert_allclose(s.run(asked.average(w)), [1.0, -2.0])   # started at w
            assert not [x for x in tf.global_variables() if "biased" in x.op.name and
                        x.op.name.startswith("Variable/asked")]
            assert abs(s.run(mv, {t: 4.0}) - 4.0) < 1e-5
            assert abs(s.run(mv, {t: 2.0}) - 0.56 / 0.19) < 1e-5
            assert abs(s.run(mv_plain, {t: 4.0}) - 0.4) < 1e-6


def test_ema_variables_to_restore_loads_the_averages(tmp_path):
    path = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        other = tf.Variable(7.0, name="other", trainable=False)
        ema = tf.train.ExponentialMovingAverage(0.5)
        update = ema.apply([v])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(v.assign([3.0, 6.0]))
            s.run(update)                                      # average [2, 4]
            tf.train.Saver().save(s, path)
    with tf.Graph().as_default():
        v = tf.Variable([0.0, 0.0], name="v")
        other = tf.Variable(0.0, name="other", trainable=False)
        ema = tf.train.ExponentialMovingAverage(0.5)
        names = ema.variables_to_restore()
        assert names == {"v/ExponentialMovingAverage": v, "other": other}
        saver = tf.train.Saver(names)
        with tf.Session() as s:
            saver.restore(s, path)
            np.testing.assert_allclose(s.run(v), [2.0, 4.0])
            assert s.run(other) == 7.0


def test_ema_argument_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="decay"):
            tf.train.ExponentialMovingAverage(1.5)
        with pytest.raises(TypeError, match="decay"):
            tf.train.ExponentialMovingAverage("0.9")
        ema = tf.train.ExponentialMovingAverage(0.9)
        with pytest.raises(TypeError, match="int32"):
            ema.apply([tf.Variable(1, name="count")])
        with pytest.raises(ValueError, match="fully known shape"):
            ema.apply([tf.placeholder(tf.float32, [None])])


# ---- tf.logging, tf.app.flags, tf.app.run ------------------------------------------------------


def test_logging_goes_through_python_logging(caplog):
    logger = tf.logging.get_logger()
    old = logger.level
    assert (tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN, tf.logging.ERROR,
            tf.logging.FATAL) == (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR,
                                  logging.CRITICAL)
    try:
        tf.logging.set_verbosity(tf.logging.INFO)
        assert tf.logging.get_verbosity() == logging.INFO
        with caplog.at_level(logging.DEBUG):
            tf.logging.info("step %d: loss %.2f", 3, 0.5)
            tf.logging.debug("hidden at INFO")
            tf.logging.warning("careful")
            tf.logging.error("bad")
            for _ in range(5):
                tf.logging.log_every_n(tf.logging.INFO, "every other", 2)
                tf.logging.log_first_n(tf.logging.INFO, "first two", 2)
        records = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
        assert ("shardflow", logging.INFO, "step 3: loss 0.50") in records
        assert all(m != "hidden at INFO" for _, _, m in records)
        assert ("shardflow", logging.WARNING, "careful") in records
        assert ("shardflow", logging.ERROR, "bad") in records
        assert sum(m == "every other" for _, _, m in records) == 3
        assert sum(m == "first two" for _, _, m in records) == 2
        with pytest.raises(TypeError, match="INFO"):
            tf.logging.set_verbosity("INFO")
    finally:
        logger.setLevel(old)


def test_the_package_imports_the_standard_library_modules():
    import shardflow.contrib_layers
    import shardflow.tf_logging
    assert shardflow.tf_logging._logging is logging
    assert shardflow.contrib_layers.math is math
    assert tf.math is sys.modules["shardflow.math"] and tf.random is sys.modules["shardflow.random"]


def test_flags_parse_values_and_leave_unknown_arguments():
    flags = tf.app.flags
    fv = flags.FlagValues()
    flags.DEFINE_string("name", "model", "Model name.", flag_values=fv)
    flags.DEFINE_integer("steps", 10, "Steps.", lower_bound=1, flag_values=fv)
    flags.DEFINE_float("lr", 0.1, "Learning rate.", flag_values=fv)
    flags.DEFINE_boolean("fake", True, "Fake data.", flag_values=fv)
    flags.DEFINE_bool("verbose", False, "Verbose.", flag_values=fv)
    flags.DEFINE_list("gpus", "0,1", "Devices.", flag_values=fv)
    flags.DEFINE_enum("mode", "train", ["train", "eval"], "Mode.", flag_values=fv)
    assert not fv.is_parsed() and fv["steps"].default == 10
    rest = fv(["prog", "--name=resnet", "--steps", "7", "--lr=0.5", "--nofake", "--verbose",
               "--gpus=2,3", "--mode=eval", "--unknown=1", "positional", "--", "--steps=9"])
    assert rest == ["prog", "--unknown=1", "positional", "--", "--steps=9"]
    assert (fv.name, fv.steps, fv.lr, fv.fake, fv.verbose, fv.gpus, fv.mode) == \
        ("resnet", 7, 0.5, False, True, ["2", "3"], "eval")
    assert fv.flag_values_dict()["steps"] == 7
    fv(["prog", "--fake=true", "--verbose=false"])
    assert fv.fake is True and fv.verbose is False
    fv.steps = 3
    assert fv.steps == 3
    with pytest.raises(flags.IllegalFlagValueError, match="--steps=ten"):
        fv(["prog", "--steps=ten"])
    with pytest.raises(ValueError, match="must be >= 1"):
        fv(["prog", "--steps=0"])
    with pytest.raises(ValueError, match="one of"):
        fv(["prog", "--mode=predict"])
    with pytest.raises(ValueError, match="boolean"):
        fv(["prog", "--fake=maybe"])
    with pytest.raises(flags.DuplicateFlagError, match="steps"):
        flags.DEFINE_integer("steps", 1, "again", flag_values=fv)
    with pytest.raises(AttributeError, match="no flag named 'nope'"):
        fv.nope
    with pytest.raises(flags.UnrecognizedFlagError, match="unknown"):
        fv(["prog", "--unknown=1"], known_only=False)


def test_flags_parse_sys_argv_on_first_read(monkeypatch):
    tf.flags.DEFINE_integer("tf1_api_test_batch", 32, "Batch size.")
    tf.app.flags.DEFINE_string("tf1_api_test_dir", "/tmp", "Directory.")
    assert tf.flags is tf.app.flags
    monkeypatch.setattr(sys, "argv", ["prog", "--tf1_api_test_batch=64", "--other_tool_flag"])
    tf.flags.FLAGS.unparse_flags()
    assert tf.flags.FLAGS.tf1_api_test_batch == 64           # parsed now, from sys.argv
    assert tf.flags.FLAGS.tf1_api_test_dir == "/tmp"
    assert tf.flags.FLAGS.is_parsed()
    tf.flags.FLAGS.unparse_flags()


def test_app_run_parses_flags_calls_main_and_exits_with_its_result(monkeypatch, capsys):
    tf.app.flags.DEFINE_float("tf1_api_test_rate", 0.5, "Rate.")
    seen = []

    def main(argv):
        seen.append((list(argv), tf.app.flags.FLAGS.tf1_api_test_rate))
        return 3

    tf.app.flags.FLAGS.unparse_flags()
    with pytest.raises(SystemExit) as exit_info:
        tf.app.run(main=main, argv=["prog", "--tf1_api_test_rate=0.25", "extra", "--x=1"])
    assert exit_info.value.code == 3
    assert seen == [(["prog", "extra", "--x=1"], 0.25)]

    monkeypatch.setattr(sys, "argv", ["prog2", "--tf1_api_test_rate=2"])
    tf.app.flags.FLAGS.unparse_flags()
    with pytest.raises(SystemExit) as exit_info:
        tf.app.run(main=lambda argv: seen.append(argv))
    assert exit_info.value.code is None and seen[-1] == ["prog2"]
    assert tf.app.flags.FLAGS.tf1_api_test_rate == 2.0

    with pytest.raises(SystemExit) as exit_info:
        tf.app.run(main=main, argv=["prog", "--help"])
    assert exit_info.value.code == 0
    assert "--tf1_api_test_rate: Rate." in capsys.readouterr().out
    tf.app.flags.FLAGS.unparse_flags()


# ---- namespaces --------------------------------------------------------------------------------


def test_math_linalg_random_and_compat_namespaces_resolve():
    x = np.array([[1.0, 4.0], [9.0, 16.0]], np.float32)
    with tf.Graph().as_default():
        t = tf.constant(x)
        tf.random.set_seed(7)
        tf.random.set_random_seed(7)
        got = run([tf.math.sqrt(t), tf.math.log(t), tf.math.reduce_sum(t, axis=1),
                   tf.math.maximum(t, 5.0), tf.math.argmax(t, 1), tf.math.argmin(t, 1),
                   tf.math.divide(t, 2.0), tf.math.subtract(t, 1.0), tf.math.pow(t, 0.5),
                   tf.math.equal(t, 4.0), tf.math.softplus(t), tf.math.reduce_logsumexp(t),
                   tf.linalg.matmul(t, t), tf.linalg.eye(2), tf.linalg.transpose(t),
                   tf.linalg.l2_normalize(t, 1), tf.linalg.norm(t),
                   tf.random.uniform([100], seed=1), tf.random.normal([2]),
                   tf.random.truncated_normal([2])])
    np.testing.assert_allclose(got[0], np.sqrt(x))
    np.testing.assert_allclose(got[1], np.log(x), rtol=1e-6)
    np.testing.assert_allclose(got[2], x.sum(1))
    np.testing.assert_array_equal(got[4], [1, 1])
    np.testing.assert_array_equal(got[5], [0, 0])
    np.testing.assert_allclose(got[12], x @ x)
    np.testing.assert_array_equal(got[14], x.T)
    assert got[17].shape == (100,) and 0 <= got[17].min() and got[17].max() < 1
    assert tf.compat.v1 is tf and sys.modules["shardflow.compat.v1"] is tf
    import shardflow.compat.v1 as tf_v1
    from shardflow.math import log
    assert tf_v1 is tf and log is ops.log
    tf.disable_v2_behavior()
    tf.compat.v1.disable_eager_execution()
    assert tf.executing_eagerly() is False
    assert tf.compat.as_bytes("a") == b"a" and tf.compat.as_text(b"b") == "b"
    assert tf.compat.as_str(b"c") == "c"
    with pytest.raises(AttributeError, match="shardflow.math.*no attribute 'no_such_op'"):
        tf.math.no_such_op


def test_math_namespace_takes_the_unary_ops_that_shardflow_ops_has():
    # Whichever of these shardflow.ops defines appear under tf.math; the rest are absent with
    # an error that says TF1 has them.
    for name in ["floor", "ceil", "round", "sin", "cos", "log1p", "expm1", "erf", "is_nan",
                 "is_inf", "is_finite", "cumsum"]:
        if hasattr(ops, name):
            assert getattr(tf.math, name) is getattr(ops, name)
        else:
            with pytest.raises(AttributeError, match="TF1 has it"):
                getattr(tf.math, name)
    assert "lgamma" not in tf.math.__all__ or hasattr(ops, "lgamma")
