"""TF 1.15 API gaps, checked by hand or against NumPy: make_template's custom_getter_ and
Template's variables / variable_scope, TensorShape.dims."""

import numpy as np

import shardflow as tf


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def _scale_and_shift(x):
    w = tf.get_variable("w", [2], initializer=tf.constant_initializer(2.0))
    b = tf.get_variable("b", [], trainable=False, initializer=tf.constant_initializer(1.0))
    return x * w + b


def test_make_template_custom_getter_wraps_every_call():
    tf.reset_default_graph()
    seen = []

    def getter(get, name, *args, **kwargs):
        seen.append(name)
        return get(name, *args, **kwargs)

    t = tf.make_template("lin", _scale_and_shift, custom_getter_=getter)
    y1 = t(tf.constant([1.0, 2.0]))
    y2 = t(tf.constant([3.0, 4.0]))
    assert seen == ["lin/w", "lin/b", "lin/w", "lin/b"]
    a, b = run([y1, y2])
    np.testing.assert_allclose(a, [3.0, 5.0])
    np.testing.assert_allclose(b, [7.0, 9.0])


def test_template_lists_its_variables_and_scope():
    tf.reset_default_graph()
    tf.get_variable("other", [1])
    t = tf.make_template("lin", _scale_and_shift)
    assert t.variable_scope is None and t.variable_scope_name is None and t.variables == []
    t(tf.constant([1.0, 1.0]))
    t(tf.constant([1.0, 1.0]))
    assert t.variable_scope_name == "lin" and t.variable_scope.name == "lin"
    assert t.name == "lin"
    assert [v.name for v in t.variables] == ["lin/w:0", "lin/b:0"]
    assert [v.name for v in t.trainable_variables] == ["lin/w:0"]
    assert [v.name for v in t.non_trainable_variables] == ["lin/b:0"]


def test_template_create_scope_now_names_the_scope_at_construction():
    tf.reset_default_graph()
    tf.make_template("lin", _scale_and_shift)(tf.constant([0.0, 0.0]))
    t = tf.make_template("lin", _scale_and_shift, create_scope_now_=True)
    assert t.variable_scope_name == "lin_1"
    y1 = t(tf.constant([1.0, 1.0]))
    y2 = t(tf.constant([2.0, 2.0]))
    assert [v.name for v in t.variables] == ["lin_1/w:0", "lin_1/b:0"]
    assert len(tf.global_variables()) == 4
    a, b = run([y1, y2])
    np.testing.assert_allclose(a, [3.0, 3.0])
    np.testing.assert_allclose(b, [5.0, 5.0])


def test_tensor_shape_dims_are_dimensions():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 3])
    dims = x.shape.dims
    assert isinstance(dims, list) and len(dims) == 2
    assert dims[0].value is None and dims[1].value == 3 and dims[1] == 3
    assert tf.TensorShape([4, 5]).dims[0].value == 4
    assert tf.placeholder(tf.float32).shape.dims is None
    assert tf.TensorShape([]).dims == []
