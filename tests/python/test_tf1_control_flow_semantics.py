"""TF 1.15 control-flow semantics a probe found different in shardflow: exact TensorArray
writes, dynamic_rnn's padding, tf.cond's checks, variables read in loop bodies, variables made
under control_dependencies, gradients that TF1 cuts, and build-time shape errors."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


# ---- TensorArray: writes are exact, elements have one shape -------------------------------

def test_tensor_array_write_of_inf_keeps_other_rows():
    ta = tf.TensorArray(tf.float32, size=3, element_shape=[2])
    ta = ta.write(0, [1.0, 2.0]).write(1, [-np.inf, np.nan]).write(2, [3.0, 4.0])
    sc = tf.TensorArray(tf.float32, size=3, element_shape=[2])
    sc = sc.scatter([1], [[np.inf, 0.0]]).scatter([0, 2], [[1.0, 1.0], [2.0, 2.0]])

    def body(i, ta):
        return i + 1, ta.write(i, tf.fill([2], tf.cast(i, tf.float32)) * np.inf)
    _, looped = tf.while_loop(lambda i, ta: i < 3, body,
                              [0, tf.TensorArray(tf.float32, size=3, element_shape=[2])])
    with tf.Session() as s:
        a, b, c = s.run([ta.stack(), sc.stack(), looped.stack()])
    np.testing.assert_array_equal(a, [[1, 2], [-np.inf, np.nan], [3, 4]])
    np.testing.assert_array_equal(b, [[1, 1], [np.inf, 0], [2, 2]])
    # row 0 is 0 * inf = NaN, the rows after it stay inf
    np.testing.assert_array_equal(c, [[np.nan, np.nan], [np.inf, np.inf], [np.inf, np.inf]])


def test_tensor_array_write_of_another_shape_is_a_value_error():
    fixed = tf.TensorArray(tf.float32, size=2, element_shape=[2])
    with pytest.raises(ValueError, match="inconsistent shapes"):
        fixed.write(1, 7.0)
    inferred = tf.TensorArray(tf.float32, size=2).write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match="inconsistent shapes"):
        inferred.write(1, [3.0])
    with pytest.raises(ValueError, match="inconsistent shapes"):
        fixed.scatter([0], [[1.0, 2.0, 3.0]])


# ---- recurrent networks: padding is selected away, not multiplied by zero ------------------

def test_rnn_padding_with_inf_leaves_outputs_zero_and_state_finite():
    x = tf.placeholder(tf.float32, [2, 4, 2])
    lengths = [2, 4]
    cell = tf.nn.rnn_cell.BasicRNNCell(3)
    out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
    (fw, bw), (sfw, sbw) = tf.nn.bidirectional_dynamic_rnn(
        tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.GRUCell(3), x, sequence_length=lengths,
        dtype=tf.float32)
    sout, sstate = tf.nn.static_rnn(tf.nn.rnn_cell.BasicRNNCell(3, name="static"),
                                    tf.unstack(x, axis=1), sequence_length=lengths,
                                    dtype=tf.float32)
    xv = np.ones((2, 4, 2), np.float32)
    xv[0, 2:] = np.inf                       # the padding of sequence 0
    clean = xv.copy()
    clean[0, 2:] = 0.0
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got = s.run([out, state, fw, bw, sfw, sbw, sout, sstate], {x: xv})
        want = s.run([out, state, fw, bw, sfw, sbw, sout, sstate], {x: clean})
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.all(got[0][0, 2:] == 0) and np.all(np.isfinite(got[1]))


# ---- tf.cond and tf.case check what TF1 checks ---------------------------------------------

def test_cond_branches_of_another_structure_are_a_value_error():
    p = tf.placeholder(tf.bool, [])
    a, b = tf.constant(1.0), tf.constant(2.0)
    with pytest.raises(ValueError, match="same number, type, and overall structure"):
        tf.cond(p, lambda: {"loss": a, "acc": b}, lambda: {"acc": a, "lr": b})
    with pytest.raises(ValueError, match="same number, type, and overall structure"):
        tf.cond(p, lambda: (a, (b,)), lambda: ((a,), b))
    with pytest.raises(TypeError, match="true_fn must be callable"):
        tf.cond(p, a, lambda: b)
    with pytest.raises(TypeError, match="false_fn must be callable"):
        tf.cond(p, lambda: a, b)
    with pytest.raises(TypeError, match="pred must not be a Python bool"):
        tf.cond(True, lambda: a, lambda: b)
    same = tf.cond(p, lambda: {"x": a, "y": (b,)}, lambda: {"y": (a,), "x": b})
    with tf.Session() as s:
        assert s.run(same, {p: False}) == {"x": 2.0, "y": (1.0,)}


def test_cond_unpacks_a_singleton_unless_strict():
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(1.0)
    loose = tf.cond(p, lambda: [x], lambda: [x + 1])
    strict = tf.cond(p, lambda: [x], lambda: [x + 1], strict=True)
    assert isinstance(loose, tf.Tensor)
    assert isinstance(strict, list) and len(strict) == 1
    with tf.Session() as s:
        assert s.run(loose, {p: False}) == 2.0


def test_case_exclusive_fails_the_step_when_two_predicates_hold():
    x = tf.placeholder(tf.int32, [])
    r = tf.case([(tf.less(x, 5), lambda: tf.constant(1)),
                 (tf.less(x, 10), lambda: tf.constant(2))],
                default=lambda: tf.constant(3), exclusive=True)
    with tf.Session() as s:
        assert s.run(r, {x: 7}) == 2
        assert s.run(r, {x: 12}) == 3
        with pytest.raises(tf.errors.InvalidArgumentError, match="exclusive=True"):
            s.run(r, {x: 1})


# ---- a variable the loop or branch changes is read afresh each iteration -------------------

def test_variable_assigned_in_a_loop_is_read_afresh_each_iteration():
    v = tf.Variable(1.0)

    def doubling(i):
        with tf.control_dependencies([v.assign(v * 2.0)]):
            return i + 1
    doubled = tf.while_loop(lambda i: i < 3, doubling, [0])
    w = tf.Variable(0.0)

    def counting(i):
        with tf.control_dependencies([w.assign_add(1.0)]):
            return i + 1
    counted = tf.while_loop(lambda i: w < 5.0, counting, [0], maximum_iterations=50)
    u = tf.Variable(1.0)

    def nested(i):
        # a cond inside the body reads u; the body changes it after
        bumped = tf.cond(i > 0, lambda: u + 100.0, lambda: u + 0.0)
        with tf.control_dependencies([u.assign(bumped + 1.0)]):
            return i + 1
    nested_loop = tf.while_loop(lambda i: i < 3, nested, [0])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(doubled)
        assert s.run(v) == 8.0
        assert s.run(counted) == 5 and s.run(w) == 5.0
        s.run(nested_loop)
        assert s.run(u) == 1.0 + 1.0 + 101.0 + 101.0


def test_variable_assigned_in_a_branch_is_read_there():
    v = tf.Variable(2.0)
    p = tf.placeholder(tf.bool, [])
    early = v * 1.0                          # the step's shared read, before the update
    with tf.control_dependencies([early]):
        bump = v.assign_add(1.0, read_value=False)
    with tf.control_dependencies([bump]):
        # the branch that changes v reads it itself, after the update the cond waits for
        r = tf.cond(p, lambda: v.assign(v * 3.0), lambda: tf.identity(v.read_value()))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run([early, r], {p: True}) == [2.0, 9.0]
        assert s.run([early, r], {p: False}) == [9.0, 10.0]


# ---- variables made under control_dependencies or in a branch initialize on their own -----

def test_variables_made_under_control_dependencies_initialize_alone():
    x = tf.placeholder(tf.float32, [None, 3])
    counter = tf.Variable(0, name="counter")
    with tf.control_dependencies([tf.assert_non_negative(x), tf.assign_add(counter, 1)]):
        y = tf.layers.dense(x, 4)
        w = tf.get_variable("w", [2], initializer=tf.zeros_initializer())
        v = tf.Variable(lambda: tf.ones([2]), name="v")   # called without the deps
        z = tf.identity(w) + v
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())      # feeds nothing, bumps nothing
        assert s.run(counter) == 0
        assert s.run(y, {x: np.ones((2, 3))}).shape == (2, 4)
        np.testing.assert_array_equal(s.run(z, {x: np.ones((1, 3))}), [1.0, 1.0])
        assert s.run(counter) == 2                    # once per step that ran y or z


def test_exponential_moving_average_applied_in_a_cond_branch():
    x = tf.placeholder(tf.float32, [4, 3])
    is_train = tf.placeholder(tf.bool, [])
    batch_mean, _ = tf.nn.moments(x, [0])
    ema = tf.train.ExponentialMovingAverage(decay=0.5)

    def mean_with_update():                  # the classic TF1 batch-norm snippet
        with tf.control_dependencies([ema.apply([batch_mean])]):
            return tf.identity(batch_mean)
    mean = tf.cond(is_train, mean_with_update, lambda: ema.average(batch_mean).value())
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        ones = np.ones((4, 3), np.float32)
        np.testing.assert_array_equal(s.run(mean, {x: ones, is_train: True}), [1, 1, 1])
        np.testing.assert_array_equal(s.run(mean, {x: 3 * ones, is_train: True}), [3, 3, 3])
        # TF1's default zero_debias=False: the shadow starts at 0, 0.5 * (0.5 * 1) + 0.5 * 3
        np.testing.assert_allclose(s.run(mean, {x: ones, is_train: False}), [1.75] * 3,
                                   rtol=1e-6)


# ---- paths TF1 does not differentiate give None, not an error --------------------------------

def test_py_func_back_prop_false_and_integers_cut_the_gradient():
    x = tf.placeholder(tf.float32, [])

    def step(y):
        z = tf.py_func(lambda v: np.float32(v * 2), [y], tf.float32)
        z.set_shape([])
        return z + y * y
    _, looped = tf.while_loop(lambda i, y: i < 1, lambda i, y: (i + 1, step(y)), [0, x])
    _, frozen = tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * x), [0, x],
                              back_prop=False)
    xi = tf.placeholder(tf.int32, [])
    assert tf.gradients(xi * 3, xi) == [None]
    assert tf.gradients(frozen, x) == [None]
    grads = tf.gradients([step(x), looped, frozen + x * x], x)
    with tf.Session() as s:
        assert s.run(grads, {x: 3.0}) == [6.0 + 6.0 + 6.0]


# ---- while_loop: outer control dependencies in the body, shapes checked when built ----------

def test_control_dependency_on_an_outer_op_inside_body_and_branch():
    x = tf.placeholder(tf.float32, [])
    check = tf.assert_non_negative(x)            # built outside the loop and the cond

    def body(i, acc):
        with tf.control_dependencies([check]):
            return i + 1, acc + x

    def branch():
        with tf.control_dependencies([check]):
            return tf.identity(x)
    r = tf.while_loop(lambda i, acc: i < 3, body, [0, 0.0])
    c = tf.cond(x > 1.0, branch, lambda: x * 0.0)
    with tf.Session() as s:
        assert s.run(r, {x: 2.0}) == [3, 6.0]
        assert s.run(c, {x: 2.0}) == 2.0
        with pytest.raises(tf.errors.InvalidArgumentError):
            s.run(r, {x: -1.0})                  # the loop waits for the check


def test_loop_variable_changing_shape_is_a_value_error_when_built():
    with pytest.raises(ValueError, match="enters the loop with shape \\(2,\\), but has shape "
                                         "\\(4,\\) after one iteration.*shape_invariants"):
        tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.concat([x, x], 0)),
                      [0, tf.zeros([2])])
    with pytest.raises(ValueError, match="shape invariant specified for .* is not compatible"):
        tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x + 1.0), [0, tf.zeros([2])],
                      shape_invariants=[tf.TensorShape([]), tf.TensorShape([3])])
    grown = tf.while_loop(lambda i, x: i < 2, lambda i, x: (i + 1, tf.concat([x, x], 0)),
                          [0, tf.zeros([2])],
                          shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
    with tf.Session() as s:
        assert s.run(grown)[1].shape == (8,)


# ---- Python gradients inside a loop or branch fail clearly rather than being ignored -------

@tf.RegisterGradient("SemanticsTestReverse")
def _reverse_gradient(op, grad):
    return -grad


def test_gradient_override_in_a_body_or_branch_is_not_silently_ignored():
    g = tf.get_default_graph()
    x = tf.placeholder(tf.float32, [])
    p = tf.placeholder(tf.bool, [])

    def flip(y):
        with g.gradient_override_map({"Identity": "SemanticsTestReverse"}):
            return tf.identity(y)
    _, looped = tf.while_loop(lambda i, y: i < 1, lambda i, y: (i + 1, flip(y) * 2.0), [0, x])
    branched = tf.cond(p, lambda: flip(x) * 2.0, lambda: x)
    plain = tf.gradients(flip(x) * 2.0, x)[0]
    with tf.Session() as s:
        assert s.run(plain, {x: 1.0}) == -2.0
    for y in (looped, branched):
        # it gave +2.0, the override ignored; TF1 gives -2.0
        with pytest.raises(Exception, match="SemanticsTestReverse.*while_loop body or cond"):
            tf.gradients(y, x)


def test_scan_in_reverse_over_a_length_known_when_the_step_runs():
    x = tf.placeholder(tf.float32, [None])
    running = tf.scan(lambda acc, v: acc + v, x, reverse=True)
    seeded = tf.scan(lambda acc, v: acc * 10.0 + v, x, initializer=tf.constant(0.0),
                     reverse=True)
    with tf.Session() as s:
        a, b = s.run([running, seeded], {x: [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(a, [6.0, 5.0, 3.0])
    np.testing.assert_array_equal(b, [321.0, 32.0, 3.0])


def test_a_growing_tensor_array_takes_rows_of_a_batch_known_only_at_run_time():
    # Regression: 'element shape must be known' for rows of shape (?, 3) (TF1 runs it).
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        _, ta = tf.while_loop(lambda i, ta: i < 3,
                              lambda i, ta: (i + 1, ta.write(i, x * tf.cast(i, tf.float32))),
                              (0, ta))
        stacked = ta.stack()
        loss = tf.reduce_sum(stacked)
        grad, = tf.gradients(loss, [x])
        with tf.Session() as sess:
            feed = {x: np.arange(6, dtype=np.float32).reshape(2, 3)}
            got, g = sess.run([stacked, grad], feed)
    want = np.stack([feed[x] * i for i in range(3)])
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(g, np.full((2, 3), 0.0 + 1.0 + 2.0))
