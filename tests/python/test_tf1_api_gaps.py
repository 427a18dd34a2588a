"""TF 1.x names that programs reach for, composed from shardflow's existing ops and checked
against NumPy: tf.div / realdiv / truncatediv / truncatemod, confusion_matrix and bincount,
the unsorted (and sorted) segment max / min / prod, tables_initializer and the
tf.initializers aliases, tf.VERSION & co. and enable_eager_execution, the top-level protobuf
messages (tf.Summary ...), cross / matrix_set_diag / lbeta, tf.layers.separable_conv2d,
keras' pad_sequences and ModelCheckpoint, Dataset.list_files and tf.matching_files."""

import glob
import math
import os

import numpy as np
import pytest

import shardflow as tf
from shardflow import errors, keras


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# ---- divisions ------------------------------------------------------------------------------

X_INT = np.array([7, -7, 7, -7, 0, 5, -6, 6], np.int32)
Y_INT = np.array([2, 2, -2, -2, 3, -1, 3, -4], np.int32)
X_FLOAT = np.array([7.5, -7.5, 7.5, -7.5, 0.0, 4.0], np.float32)
Y_FLOAT = np.array([2.0, 2.0, -2.0, -2.0, 3.0, -1.5], np.float32)


def test_div_is_python2_division_and_realdiv_divides_floats():
    with tf.Graph().as_default():
        got = run([tf.div(tf.constant(X_INT), tf.constant(Y_INT)),
                   tf.div(tf.constant(X_FLOAT), tf.constant(Y_FLOAT)),
                   tf.div(7, 2), tf.div(tf.constant(X_INT, tf.int64), 3),
                   tf.realdiv(tf.constant(X_FLOAT), Y_FLOAT)])
        with pytest.raises(TypeError, match="realdiv takes floating-point"):
            tf.realdiv(tf.constant(X_INT), tf.constant(Y_INT))
    np.testing.assert_array_equal(got[0], np.floor_divide(X_INT, Y_INT))
    assert got[0].dtype == np.int32
    np.testing.assert_allclose(got[1], X_FLOAT / Y_FLOAT, rtol=1e-6)
    assert got[2] == 3 and got[3].dtype == np.int64
    np.testing.assert_array_equal(got[3], np.floor_divide(X_INT.astype(np.int64), 3))
    np.testing.assert_allclose(got[4], X_FLOAT / Y_FLOAT, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_truncatediv_and_truncatemod_round_toward_zero_for_integers(dtype):
    x, y = X_INT.astype(dtype), Y_INT.astype(dtype)
    with tf.Graph().as_default():
        q, r, q2, r2 = run([tf.truncatediv(tf.constant(x), tf.constant(y)),
                            tf.truncatemod(tf.constant(x), tf.constant(y)),
                            tf.math.truncatediv(tf.constant(x), 2),
                            tf.math.truncatemod(tf.constant(x), -4)])
    np.testing.assert_array_equal(q, np.trunc(x / y).astype(dtype))
    np.testing.assert_array_equal(r, np.fmod(x, y))
    np.testing.assert_array_equal(q2, np.trunc(x / 2).astype(dtype))
    np.testing.assert_array_equal(r2, np.fmod(x, dtype(-4)))
    assert q.dtype == dtype and r.dtype == dtype
    np.testing.assert_array_equal(q * y + r, x)


def test_truncatediv_and_truncatemod_of_floats_and_broadcasting():
    x = np.array([[7.5, -7.5, 1.25], [-0.5, 9.0, -9.0]], np.float64)
    y = np.array([2.0, -2.0, 0.5])
    with tf.Graph().as_default():
        q, r = run([tf.truncatediv(tf.constant(x), y), tf.truncatemod(tf.constant(x), y)])
    np.testing.assert_array_equal(q, np.trunc(x / y))
    np.testing.assert_allclose(r, np.fmod(x, y), rtol=0, atol=1e-12)


# ---- confusion_matrix and bincount ----------------------------------------------------------


def _np_confusion(labels, predictions, n, weights=None):
    out = np.zeros((n, n), np.float64)
    w = np.ones(len(labels)) if weights is None else weights
    for lab, pred, wt in zip(labels, predictions, w):
        out[lab, pred] += wt
    return out


def test_confusion_matrix_counts_and_weights():
    rng = np.random.RandomState(0)
    labels = rng.randint(0, 4, size=30)
    predictions = rng.randint(0, 4, size=30)
    weights = rng.uniform(0.5, 2.0, size=30).astype(np.float32)
    with tf.Graph().as_default():
        lab = tf.placeholder(tf.int64, [None])
        cm, cm5, weighted, squeezed = run(
            [tf.confusion_matrix(lab, predictions),
             tf.math.confusion_matrix(lab, predictions, num_classes=5),
             tf.math.confusion_matrix(labels, predictions, num_classes=4, dtype=tf.float32,
                                      weights=weights),
             tf.confusion_matrix(labels.reshape(-1, 1), predictions)],
            {lab: labels})
    n = max(labels.max(), predictions.max()) + 1
    np.testing.assert_array_equal(cm, _np_confusion(labels, predictions, n))
    assert cm.dtype == np.int32 and cm5.shape == (5, 5)
    np.testing.assert_array_equal(cm5, _np_confusion(labels, predictions, 5))
    assert weighted.dtype == np.float32
    np.testing.assert_allclose(weighted, _np_confusion(labels, predictions, 4, weights),
                               rtol=1e-5)
    np.testing.assert_array_equal(squeezed, cm)


def test_confusion_matrix_refuses_ids_out_of_range():
    with tf.Graph().as_default():
        out_of_range = tf.confusion_matrix([0, 3], [1, 1], num_classes=3)
        negative = tf.confusion_matrix([0, -1], [1, 1])
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="labels` out of bound"):
                sess.run(out_of_range)
            with pytest.raises(errors.InvalidArgumentError, match="negative"):
                sess.run(negative)
        with pytest.raises(ValueError, match="3 labels but 2 predictions"):
            tf.confusion_matrix([0, 1, 2], [1, 1])


def test_bincount_with_weights_minlength_maxlength_and_empty_input():
    arr = np.array([[1, 1, 3], [0, 5, 1]], np.int32)
    w = np.array([[0.5, 1.0, 2.0], [1.5, 3.0, 0.25]], np.float32)
    with tf.Graph().as_default():
        got = run([tf.bincount(arr), tf.math.bincount(arr, weights=w),
                   tf.bincount(arr, minlength=9), tf.bincount(arr, maxlength=2),
                   tf.bincount(arr, weights=w, maxlength=4),
                   tf.bincount(tf.zeros([0], tf.int32)), tf.bincount(arr, dtype=tf.int64)])
    flat, wf = arr.ravel(), w.ravel()
    np.testing.assert_array_equal(got[0], np.bincount(flat))
    np.testing.assert_allclose(got[1], np.bincount(flat, weights=wf), rtol=1e-6)
    assert got[1].dtype == np.float32
    np.testing.assert_array_equal(got[2], np.bincount(flat, minlength=9))
    np.testing.assert_array_equal(got[3], np.bincount(flat)[:2])
    np.testing.assert_allclose(got[4], np.bincount(flat, weights=wf)[:4], rtol=1e-6)
    assert got[5].shape == (0,)
    assert got[6].dtype == np.int64


# ---- segment max / min / prod ---------------------------------------------------------------


def _np_segments(data, ids, n, reduce_fn, empty):
    out = np.full((n,) + data.shape[ids.ndim:], empty, dtype=data.dtype)
    rows = data.reshape((-1,) + data.shape[ids.ndim:])
    for i in range(n):
        chosen = rows[ids.ravel() == i]
        if len(chosen):
            out[i] = reduce_fn(chosen, axis=0)
    return out


def test_unsorted_segment_max_min_prod_against_numpy():
    rng = np.random.RandomState(1)
    data = rng.randn(6, 2, 3).astype(np.float32)
    ids = np.array([3, 0, 3, 1, 0, 3], np.int32)     # segment 2 (and 4) empty
    ints = rng.randint(-9, 9, size=(2, 3)).astype(np.int32)
    int_ids = np.array([[0, 2, 0], [2, 2, 0]], np.int32)   # ids of rank 2, segment 1 empty
    f32 = np.finfo(np.float32)
    i32 = np.iinfo(np.int32)
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        got = run([tf.unsorted_segment_max(data, ids, 5),
                   tf.math.unsorted_segment_min(data, ids, n),
                   tf.unsorted_segment_prod(data, ids, 5),
                   tf.math.unsorted_segment_max(ints, int_ids, 3),
                   tf.unsorted_segment_min(ints, int_ids, 3),
                   tf.math.unsorted_segment_prod(ints, int_ids, 3),
                   tf.unsorted_segment_max(ints.astype(np.int8), int_ids, 3)], {n: 5})
    np.testing.assert_array_equal(got[0], _np_segments(data, ids, 5, np.max, f32.min))
    np.testing.assert_array_equal(got[1], _np_segments(data, ids, 5, np.min, f32.max))
    np.testing.assert_allclose(got[2], _np_segments(data, ids, 5, np.prod, 1.0), rtol=1e-6)
    np.testing.assert_array_equal(got[3], _np_segments(ints, int_ids, 3, np.max, i32.min))
    np.testing.assert_array_equal(got[4], _np_segments(ints, int_ids, 3, np.min, i32.max))
    np.testing.assert_array_equal(got[5], _np_segments(ints, int_ids, 3, np.prod, 1))
    assert got[3].dtype == np.int32 and got[6].dtype == np.int8
    np.testing.assert_array_equal(got[6], _np_segments(ints.astype(np.int8), int_ids, 3,
                                                       np.max, np.iinfo(np.int8).min))


def test_sorted_segment_max_min_prod_and_the_gradient_of_max():
    data = np.array([[1.0, 8.0], [4.0, 2.0], [-3.0, 5.0], [0.5, 0.25]], np.float32)
    ids = np.array([0, 0, 2, 2], np.int32)         # segment 1 empty: 0 (1 for prod), as TF1
    with tf.Graph().as_default():
        x = tf.constant(data)
        seg_max = tf.segment_max(x, ids)
        (grad,) = tf.gradients(tf.reduce_sum(seg_max), [x])
        got = run([seg_max, tf.math.segment_min(x, ids), tf.math.segment_prod(x, ids), grad])
    np.testing.assert_array_equal(got[0], [[4, 8], [0, 0], [0.5, 5]])
    np.testing.assert_array_equal(got[1], [[1, 2], [0, 0], [-3, 0.25]])
    np.testing.assert_allclose(got[2], [[4, 16], [1, 1], [-1.5, 1.25]])
    np.testing.assert_array_equal(got[3], [[0, 1], [1, 0], [0, 1], [1, 0]])


# ---- initializers ---------------------------------------------------------------------------


def test_tables_initializer_groups_the_table_initializers_collection():
    assert tf.GraphKeys.TABLE_INITIALIZERS == "table_initializer"
    with tf.Graph().as_default():
        empty = tf.tables_initializer()
        assert empty.name == "init_all_tables" and empty.type == "NoOp"
        table = tf.Variable(np.zeros(3, np.float32), name="table")
        filled = tf.Variable(np.zeros(2, np.int32), name="filled")
        tf.add_to_collection(tf.GraphKeys.TABLE_INITIALIZERS, table.assign([1.0, 2.0, 3.0]).op)
        tf.add_to_collection(tf.GraphKeys.TABLE_INITIALIZERS, filled.assign([7, 8]).op)
        init_tables = tf.initializers.tables(name="tables")
        assert init_tables.name == "tables"
        with tf.Session() as sess:
            sess.run(tf.initializers.global_variables())
            sess.run(empty)
            np.testing.assert_array_equal(sess.run(table), [0, 0, 0])
            sess.run(init_tables)
            np.testing.assert_array_equal(sess.run(table), [1, 2, 3])
            np.testing.assert_array_equal(sess.run(filled), [7, 8])


def test_initializers_aliases_initialize_variables():
    with tf.Graph().as_default():
        g = tf.Variable(np.float32(1.5), name="g")
        other = tf.Variable(np.float32(4.0), name="other")
        local = tf.Variable(np.float32(2.5), name="local",
                            collections=[tf.GraphKeys.LOCAL_VARIABLES])
        with tf.Session() as sess:
            sess.run(tf.initializers.variables([g], name="init_g"))
            assert sess.run(g) == 1.5
            with pytest.raises(errors.FailedPreconditionError):
                sess.run(other)
            sess.run(tf.initializers.local_variables())
            assert sess.run(local) == 2.5
            sess.run(tf.initializers.global_variables())
            assert sess.run(other) == 4.0


# ---- versions, eager, protobuf messages -----------------------------------------------------


def test_version_constants():
    assert tf.VERSION == tf.__version__ == tf.version.VERSION
    assert isinstance(tf.GIT_VERSION, str) and tf.GIT_VERSION
    assert isinstance(tf.COMPILER_VERSION, str) and tf.COMPILER_VERSION
    assert tf.COMPILER_VERSION == tf.version.COMPILER_VERSION
    assert tf.GRAPH_DEF_VERSION_MIN_CONSUMER <= tf.GRAPH_DEF_VERSION
    assert tf.GRAPH_DEF_VERSION_MIN_PRODUCER <= tf.GRAPH_DEF_VERSION
    from shardflow.version import GRAPH_DEF_VERSION
    assert GRAPH_DEF_VERSION == tf.GRAPH_DEF_VERSION
    pytest.importorskip("google.protobuf")
    with tf.Graph().as_default() as g:
        tf.constant(1.0)
        assert g.as_graph_def().version == tf.GRAPH_DEF_VERSION


def test_enable_eager_execution_is_refused_with_a_clear_error():
    for enable in (tf.enable_eager_execution, tf.compat.v1.enable_eager_execution):
        with pytest.raises(RuntimeError, match="TF1 graphs.*remove the enable_eager_execution"):
            enable()
    assert tf.executing_eagerly() is False


def test_top_level_summary_messages_are_written_and_read_back(tmp_path):
    assert tf.Summary is tf.summary.Summary and tf.Event is tf.summary.Event
    assert tf.SessionLog is tf.summary.SessionLog
    histogram = tf.HistogramProto(min=0.0, max=2.0, num=3, sum=3.0, sum_squares=5.0,
                                  bucket_limit=[1.0, 2.0], bucket=[1.0, 2.0])
    summary = tf.Summary(value=[tf.Summary.Value(tag="loss", simple_value=0.25),
                                tf.Summary.Value(tag="h", histo=histogram)])
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_summary(summary, global_step=7)
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.5)])
                       .SerializeToString(), 8)
    writer.add_event(tf.Event(step=9, session_log=tf.SessionLog(status=tf.SessionLog.STOP)))
    writer.close()
    (path,) = glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*"))
    events = list(tf.train.summary_iterator(path))
    values = [(e.step, v.tag, v) for e in events if e.HasField("summary")
              for v in e.summary.value]
    assert [(step, tag) for step, tag, _ in values] == [(7, "loss"), (7, "h"), (8, "acc")]
    assert values[0][2].simple_value == 0.25 and values[2][2].simple_value == 0.5
    assert list(values[1][2].histo.bucket) == [1.0, 2.0] and values[1][2].histo.num == 3
    (log,) = [e for e in events if e.HasField("session_log")]
    assert log.step == 9 and log.session_log.status == tf.SessionLog.STOP


# ---- cross, matrix_set_diag, lbeta ----------------------------------------------------------


def test_cross_batched_and_broadcast():
    rng = np.random.RandomState(2)
    a = rng.randn(2, 4, 3)
    b = rng.randn(2, 4, 3)
    c = rng.randn(3)
    with tf.Graph().as_default():
        ab, ac, lin = run([tf.cross(a, b), tf.cross(tf.constant(a), c),
                           tf.linalg.cross(tf.constant(a[0], tf.float32), b[0])])
        with pytest.raises(ValueError, match=r"\[\.\.\., 3\]"):
            tf.cross(tf.zeros([2, 4]), tf.zeros([2, 4]))
    np.testing.assert_allclose(ab, np.cross(a, b), rtol=1e-12)
    np.testing.assert_allclose(ac, np.cross(a, c), rtol=1e-12)
    np.testing.assert_allclose(lin, np.cross(a[0], b[0]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 5), (2, 5, 3), (4, 1)])
def test_matrix_set_diag_against_numpy(shape):
    rng = np.random.RandomState(3)
    x = rng.randn(*shape).astype(np.float32)
    k = min(shape[-2:])
    d = rng.randn(*(shape[:-2] + (k,))).astype(np.float32)
    expected = x.copy()
    idx = np.arange(k)
    expected[..., idx, idx] = d
    with tf.Graph().as_default():
        xt = tf.constant(x)
        dt = tf.constant(d)
        out = tf.matrix_set_diag(xt, dt)
        grads = tf.gradients(tf.reduce_sum(out * 2.0), [xt, dt])
        got, linalg, gx, gd = run([out, tf.linalg.set_diag(x, d)] + grads)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(linalg, expected)
    mask = np.zeros(shape, bool)
    mask[..., idx, idx] = True
    np.testing.assert_array_equal(gx, np.where(mask, 0.0, 2.0))
    np.testing.assert_array_equal(gd, np.full(d.shape, 2.0))


def test_lbeta_against_lgamma():
    x = np.array([[1.0, 2.0], [0.5, 0.5], [3.0, 4.5]], np.float64)
    y = np.array([[[0.3, 1.7, 2.2]], [[5.0, 1.0, 0.1]]], np.float32)

    def lbeta(v):
        return (sum(math.lgamma(e) for e in v) - math.lgamma(sum(v)))
    with tf.Graph().as_default():
        got_x, got_y = run([tf.lbeta(x), tf.math.lbeta(y)])
    np.testing.assert_allclose(got_x, [lbeta(r) for r in x], rtol=1e-12)
    assert got_y.shape == (2, 1)
    np.testing.assert_allclose(got_y.ravel(), [lbeta(r[0]) for r in y.astype(np.float64)],
                               rtol=1e-5)
    np.testing.assert_allclose(got_x[0], math.log(0.5), rtol=1e-12)


# ---- tf.layers.separable_conv2d -------------------------------------------------------------


def _np_separable(x, dw, pw, b, stride):
    n, h, w, c = x.shape
    kh, kw, _, m = dw.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    depth = np.zeros((n, oh, ow, c * m))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            for ch in range(c):
                for mm in range(m):
                    depth[:, i, j, ch * m + mm] = np.sum(patch[..., ch] * dw[:, :, ch, mm],
                                                         axis=(1, 2))
    return depth @ pw[0, 0] + b


def test_separable_conv2d_layer_variables_and_values():
    rng = np.random.RandomState(4)
    x = rng.randn(2, 5, 6, 3).astype(np.float32)
    with tf.Graph().as_default():
        xt = tf.constant(x)
        with tf.variable_scope("net"):
            y = tf.layers.separable_conv2d(xt, 4, 3, depth_multiplier=2, name="sep",
                                           bias_initializer=tf.constant_initializer(0.5))
            y2 = tf.layers.separable_conv2d(xt, 4, (2, 2), strides=2, padding="valid",
                                            use_bias=False, activation=tf.nn.relu,
                                            trainable=False, name="frozen")
        with tf.variable_scope("net", reuse=True):
            y_again = tf.layers.separable_conv2d(xt, 4, 3, depth_multiplier=2, name="sep")
        shapes = {v.op.name: v.shape.as_list() for v in tf.global_variables()}
        assert shapes == {"net/sep/depthwise_kernel": [3, 3, 3, 2],
                          "net/sep/pointwise_kernel": [1, 1, 6, 4], "net/sep/bias": [4],
                          "net/frozen/depthwise_kernel": [2, 2, 3, 1],
                          "net/frozen/pointwise_kernel": [1, 1, 3, 4]}
        assert sorted(v.op.name for v in tf.trainable_variables()) == [
            "net/sep/bias", "net/sep/depthwise_kernel", "net/sep/pointwise_kernel"]
        by_name = {v.op.name: v for v in tf.global_variables()}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out, out2, again, dw, pw, b, fdw, fpw = sess.run(
                [y, y2, y_again] + [by_name["net/" + k] for k in (
                    "sep/depthwise_kernel", "sep/pointwise_kernel", "sep/bias",
                    "frozen/depthwise_kernel", "frozen/pointwise_kernel")])
    assert out.shape == (2, 3, 4, 4) and out2.shape == (2, 2, 3, 4)
    np.testing.assert_array_equal(b, [0.5] * 4)
    np.testing.assert_allclose(out, _np_separable(x, dw, pw, b, 1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out2, np.maximum(_np_separable(x, fdw, fpw, 0.0, 2), 0),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(again, out)


def test_separable_conv2d_class_same_padding_and_training():
    rng = np.random.RandomState(5)
    x = rng.randn(1, 4, 4, 2).astype(np.float32)
    with tf.Graph().as_default():
        layer = tf.layers.SeparableConv2D(3, 3, padding="same", seed=7)
        y = layer(tf.constant(x))
        assert [v.op.name for v in layer.weights] == [
            "separable_conv2d/depthwise_kernel", "separable_conv2d/pointwise_kernel",
            "separable_conv2d/bias"]
        loss = tf.reduce_sum(tf.square(y))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss)
            for _ in range(3):
                sess.run(train)
            assert sess.run(loss) < first
    assert y.shape.as_list() == [1, 4, 4, 3]


# ---- keras: pad_sequences and ModelCheckpoint -----------------------------------------------


def test_pad_sequences_keras_semantics():
    from shardflow.keras.preprocessing.sequence import pad_sequences
    seqs = [[1, 2, 3, 4], [5, 6], [], [7]]
    np.testing.assert_array_equal(
        keras.preprocessing.sequence.pad_sequences(seqs),
        [[1, 2, 3, 4], [0, 0, 5, 6], [0, 0, 0, 0], [0, 0, 0, 7]])
    np.testing.assert_array_equal(
        pad_sequences(seqs, maxlen=3, padding="post", truncating="pre", value=-1),
        [[2, 3, 4], [5, 6, -1], [-1, -1, -1], [7, -1, -1]])
    np.testing.assert_array_equal(
        pad_sequences(seqs, maxlen=3, truncating="post"),
        [[1, 2, 3], [0, 5, 6], [0, 0, 0], [0, 0, 7]])
    floats = pad_sequences([[0.5, 1.5], [2.5]], dtype="float32", value=9.0)
    assert floats.dtype == np.float32
    np.testing.assert_array_equal(floats, [[0.5, 1.5], [9.0, 2.5]])
    assert pad_sequences(seqs).dtype == np.int32
    vectors = pad_sequences([np.ones((2, 3)), np.full((1, 3), 2.0)], maxlen=2, dtype="float64")
    assert vectors.shape == (2, 2, 3)
    np.testing.assert_array_equal(vectors[1], [[0, 0, 0], [2, 2, 2]])
    words = pad_sequences([["a", "b"], ["c"]], dtype=object, value="<pad>")
    assert words.tolist() == [["a", "b"], ["<pad>", "c"]]
    with pytest.raises(ValueError, match="dtype=object"):
        pad_sequences([["a"]], value="x")
    with pytest.raises(ValueError, match="Padding type"):
        pad_sequences(seqs, padding="middle")


@pytest.fixture
def keras_session():
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


def _tiny_regression():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 3).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.compile(keras.optimizers.SGD(lr=0.05), "mse")
    return model, x, y


def test_model_checkpoint_saves_each_epoch_with_a_formatted_name(tmp_path, keras_session):
    model, x, y = _tiny_regression()
    pattern = str(tmp_path / "w.{epoch:02d}-{loss:.3f}.h5")
    weights_cb = keras.callbacks.ModelCheckpoint(pattern, monitor="loss",
                                                 save_weights_only=True)
    full_cb = keras.callbacks.ModelCheckpoint(str(tmp_path / "model.{epoch}.h5"), period=2)
    history = model.fit(x, y, epochs=2, batch_size=16, verbose=0,
                        callbacks=[weights_cb, full_cb])
    losses = history.history["loss"]
    names = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "w.*.h5")))
    assert names == ["w.01-%.3f.h5" % losses[0], "w.02-%.3f.h5" % losses[1]]
    assert sorted(os.listdir(str(tmp_path / ""))) == sorted(names + ["model.2.h5"])
    expected = model.predict(x)
    latest = str(tmp_path / names[1])

    keras.backend.clear_session()
    fresh, _, _ = _tiny_regression()
    fresh.load_weights(latest)
    np.testing.assert_allclose(fresh.predict(x), expected, rtol=1e-6)
    keras.backend.clear_session()
    loaded = keras.models.load_model(str(tmp_path / "model.2.h5"))
    np.testing.assert_allclose(loaded.predict(x), expected, rtol=1e-6)


def test_model_checkpoint_save_best_only(tmp_path, keras_session):
    model, x, y = _tiny_regression()
    saved = []

    class Recorder(keras.callbacks.ModelCheckpoint):
        def _save(self, filepath):
            saved.append(filepath)
            super()._save(filepath)
    best = Recorder(str(tmp_path / "best.h5"), monitor="val_loss", save_best_only=True,
                    save_weights_only=True, mode="min")
    with pytest.warns(RuntimeWarning, match="only with nope available"):
        missing = keras.callbacks.ModelCheckpoint(str(tmp_path / "never.h5"), monitor="nope",
                                                  save_best_only=True)
        history = model.fit(x, y, epochs=2, verbose=0, validation_data=(x, y),
                            callbacks=[best, missing])
    val = history.history["val_loss"]
    assert len(saved) == (2 if val[1] < val[0] else 1)
    assert best.best == min(val)
    assert os.listdir(str(tmp_path)) == ["best.h5"]
    with pytest.raises(ValueError, match="save_freq"):
        keras.callbacks.ModelCheckpoint("x.h5", save_freq=10)


# ---- Dataset.list_files and matching_files --------------------------------------------------


def _make_files(tmp_path, names):
    for name in names:
        (tmp_path / name).write_text(name)
    return [str(tmp_path / name).encode() for name in sorted(names)]


def _all_elements(dataset):
    next_element = dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        while True:
            try:
                value = sess.run(next_element)
                out.append(value.item() if isinstance(value, np.ndarray) else value)
            except errors.OutOfRangeError:
                return out


def test_list_files_sorted_or_shuffled_each_epoch(tmp_path):
    names = ["part-%02d.txt" % i for i in (7, 1, 4, 0, 9, 3, 5, 2)]
    expected = _make_files(tmp_path, names + ["other.csv"])
    expected = [p for p in expected if p.endswith(b".txt")]
    pattern = str(tmp_path / "part-*.txt")
    with tf.Graph().as_default():
        ordered = tf.data.Dataset.list_files(pattern, shuffle=False)
        assert ordered.output_types == tf.string
        assert _all_elements(ordered) == expected
        both = tf.data.Dataset.list_files([pattern, str(tmp_path / "*.csv")], shuffle=False)
        assert _all_elements(both) == sorted(expected + [str(tmp_path / "other.csv").encode()])
        shuffled = _all_elements(tf.data.Dataset.list_files(pattern, seed=3).repeat(3))
        epochs = [shuffled[i * 8:(i + 1) * 8] for i in range(3)]
        assert all(sorted(e) == expected for e in epochs)
        assert len({tuple(e) for e in epochs}) > 1      # a new order on each pass
        assert any(e != expected for e in epochs)
        again = _all_elements(tf.data.Dataset.list_files(pattern, seed=3).repeat(3))
        assert again == shuffled
        with pytest.raises(errors.InvalidArgumentError,
                           match="No files matched pattern: .*nothing-\\*.txt"):
            tf.data.Dataset.list_files(str(tmp_path / "nothing-*.txt"))


def test_matching_files_globs_when_the_op_runs(tmp_path):
    with tf.Graph().as_default():
        pattern = tf.placeholder(tf.string, [])
        found = tf.matching_files(pattern)
        both = tf.io.matching_files([str(tmp_path / "*.a"), str(tmp_path / "*.b")])
        with tf.Session() as sess:
            assert sess.run(found, {pattern: str(tmp_path / "*.a")}).shape == (0,)
            expected = _make_files(tmp_path, ["z.a", "m.a", "c.b"])
            assert sess.run(found, {pattern: str(tmp_path / "*.a")}).tolist() == [
                p for p in expected if p.endswith(b".a")]
            assert sess.run(both).tolist() == expected


def test_keras_skipgrams_and_sampling_table():
    seq = tf.keras.preprocessing.sequence
    table = seq.make_sampling_table(10)
    # Keras's: min(1, sqrt(1e-5 * r (ln r + 0.577) + ...)); rank 0 counts as rank 1.
    assert table[1] == pytest.approx(np.sqrt(1e-5 * (0.577 + 0.5 - 1 / 12.0)), rel=1e-6)
    assert np.all(np.diff(table[1:]) > 0) and table.max() <= 1.0
    pairs, labels = seq.skipgrams([1, 2, 0, 3], 5, window_size=1, negative_samples=0,
                                  shuffle=False)
    assert pairs == [[1, 2], [2, 1]] and labels == [1, 1]   # index 0 never pairs
    pairs, labels = seq.skipgrams([1, 2, 3, 4], 9, window_size=2, negative_samples=1.0, seed=3)
    positive = [p for p, l in zip(pairs, labels) if l == 1]
    negative = [p for p, l in zip(pairs, labels) if l == 0]
    assert len(positive) == len(negative) == 10
    assert all(1 <= p[1] < 9 for p in negative)
    again, _ = seq.skipgrams([1, 2, 3, 4], 9, window_size=2, negative_samples=0, seed=3)
    assert sorted(map(tuple, again)) == sorted(map(tuple, positive))
    _, categorical = seq.skipgrams([1, 2], 5, window_size=1, negative_samples=0,
                                   categorical=True)
    assert categorical == [[0, 1], [0, 1]]


def test_keras_backend_extras():
    K = tf.keras.backend
    with tf.Graph().as_default():
        x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
        kernel = np.ones((2, 2, 3, 2), np.float32)   # [h, w, out, in] for the transpose
        up = K.conv2d_transpose(K.constant(x), K.constant(kernel), (1, 4, 4, 3), strides=(2, 2))
        depthwise = np.ones((1, 1, 2, 1), np.float32)
        pointwise = np.ones((1, 1, 2, 3), np.float32)
        sep = K.separable_conv2d(K.constant(x), K.constant(depthwise), K.constant(pointwise))
        top = K.in_top_k(K.constant([[0.1, 0.9], [0.8, 0.2]]), K.constant([1, 1], "int32"), 1)
        rev = K.reverse(K.constant([[1.0, 2.0], [3.0, 4.0]]), 1)
        v = K.random_uniform_variable((2, 3), -1.0, 1.0, seed=0)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([up, sep, top, rev, v])
    assert got[0].shape == (1, 4, 4, 3)
    np.testing.assert_array_equal(got[0][0, :2, :2, 0], np.full((2, 2), 0 + 1))   # in 0+1
    np.testing.assert_array_equal(got[1][0, :, :, 0], x[0].sum(-1))
    assert got[2].tolist() == [True, False] and got[3].tolist() == [[2, 1], [4, 3]]
    assert got[4].shape == (2, 3) and np.all(np.abs(got[4]) <= 1.0)
    assert K.cast_to_floatx([1, 2]).dtype == np.float32
    assert not K.is_sparse(x) and K.to_dense(x) is x


def test_keras_backend_rnn_matches_numpy():
    K = tf.keras.backend
    xv = np.random.RandomState(0).rand(2, 4, 3).astype(np.float32)
    w_value = np.full((3, 2), 0.5, np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4, 3])
        w = tf.Variable(w_value)

        def step(xt, states):
            h = tf.tanh(tf.matmul(xt, w) + states[0])
            return h, [h]
        h0 = tf.zeros([tf.shape(x)[0], 2])
        last, outs, states = K.rnn(step, x, [h0])
        mask = tf.constant([[True, True, False, False], [True, True, True, True]])
        last_m, _, _ = K.rnn(step, x, [h0], mask=mask)
        last_b, outs_b, _ = K.rnn(step, x, [h0], go_backwards=True)
        grad = tf.gradients(tf.reduce_sum(outs), w)[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([last, outs, states[0], last_m, last_b, outs_b, grad], {x: xv})
        with pytest.raises(NotImplementedError, match="number of time steps must be known"):
            K.rnn(step, tf.placeholder(tf.float32, [None, None, 3]), [h0])

    def reference(times):
        h, hs = np.zeros((2, 2)), []
        for t in times:
            h = np.tanh(xv[:, t] @ w_value + h)
            hs.append(h)
        return hs
    forward, backward = reference(range(4)), reference([3, 2, 1, 0])
    np.testing.assert_allclose(got[1], np.stack(forward, 1), atol=1e-6)
    np.testing.assert_allclose(got[0], forward[-1], atol=1e-6)
    np.testing.assert_allclose(got[2], forward[-1], atol=1e-6)
    # Row 0 is masked after step 2: its last output stays step 2's.
    np.testing.assert_allclose(got[3], [forward[1][0], forward[3][1]], atol=1e-6)
    np.testing.assert_allclose(got[4], backward[-1], atol=1e-6)
    np.testing.assert_allclose(got[5], np.stack(backward, 1), atol=1e-6)   # as the steps ran
    assert got[6].shape == (3, 2) and np.abs(got[6]).sum() > 0
