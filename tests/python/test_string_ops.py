"""TF1's string ops (shardflow/string_ops.py): decode_csv in a tf.data pipeline and on a queue
reader's lines, as_string, string_to_number, joins, substr, regex, string_split, tf.strings."""
import numpy as np
import pytest

import shardflow as tf
from shardflow import string_ops as so


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def run(*fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(list(fetches), feed)


def test_decode_csv_values_defaults_and_errors():
    lines = tf.placeholder(tf.string, [None])
    a, b, c = so.decode_csv(lines, record_defaults=[[0.0], [7], ["none"]])
    assert a.dtype == tf.float32 and b.dtype == tf.int32 and c.dtype == tf.string
    av, bv, cv = run(a, b, c, feed={lines: [b"1.5,2,x", b",,", b'3,4,"a,b"']})
    np.testing.assert_array_equal(av, [1.5, 0.0, 3.0])
    np.testing.assert_array_equal(bv, [2, 7, 4])
    assert list(cv) == [b"x", b"none", b"a,b"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="expect 3 fields but have 2"):
        run(a, feed={lines: [b"1,2"]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a int32"):
        run(b, feed={lines: [b"1,x,y"]})


def test_decode_csv_in_a_dataset(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("x,y,label\n1,2,0\n3,4,1\n5,6,1\n")

    def parse(line):
        x, y, label = so.decode_csv(line, record_defaults=[[0.0], [0.0], [0]])
        return tf.stack([x, y]), label
    ds = tf.data.TextLineDataset(str(path)).skip(1).map(parse).batch(3)
    feats, labels = ds.make_one_shot_iterator().get_next()
    fv, lv = run(feats, labels)
    np.testing.assert_array_equal(fv, [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(lv, [0, 1, 1])


def test_string_helpers():
    s = tf.constant([b"Hello World", b"a  b"])
    split = tf.string_split(s)
    got = run(tf.as_string(tf.constant([1, 22])), tf.as_string(tf.constant([1.5]), precision=2),
              tf.string_to_number(tf.constant(["3.5", "-2"])),
              tf.string_join([s, "!"], separator=""), tf.substr(s, 0, 3),
              tf.regex_replace(s, "o", "0"), tf.strings.length(s), tf.strings.lower(s),
              split.values, split.dense_shape, tf.reduce_join(s, separator="|"),
              tf.strings.regex_full_match(s, "H.*"))
    assert list(got[0]) == [b"1", b"22"] and list(got[1]) == [b"1.50"]
    np.testing.assert_array_equal(got[2], [3.5, -2.0])
    assert list(got[3]) == [b"Hello World!", b"a  b!"]
    assert list(got[4]) == [b"Hel", b"a  "]
    assert list(got[5]) == [b"Hell0 W0rld", b"a  b"]
    np.testing.assert_array_equal(got[6], [11, 4])
    assert list(got[7]) == [b"hello world", b"a  b"]
    assert list(got[8]) == [b"Hello", b"World", b"a", b"b"]
    np.testing.assert_array_equal(got[9], [2, 2])
    assert got[10] == b"Hello World|a  b"
    np.testing.assert_array_equal(got[11], [True, False])
    with pytest.raises(tf.errors.InvalidArgumentError, match="could not correctly convert"):
        run(tf.string_to_number(tf.constant(["x"])))


def test_regex_ops_are_re2_linear_time_with_tf_rewrite_syntax():
    # Regression: the regex ops ran Python's re in a py_func: (a+)+$ on 31 characters of a
    # hostile string took 37 s (each further character doubles it) and no deadline stopped it.
    # They are RE2 kernels now, as TF's: linear time, RE2 syntax, \\1 groups in the rewrite.
    import time
    s = tf.placeholder(tf.string, [None])
    full = tf.strings.regex_full_match(s, "(a+)+$")
    first = tf.strings.regex_replace(s, "([0-9]+)", r"<\1>", replace_global=False)
    every = tf.strings.regex_replace(s, "([0-9]+)", r"<\1>")
    bad = tf.strings.regex_full_match(s, "(unclosed")
    with tf.Session() as sess:
        start = time.monotonic()
        got = sess.run(full, {s: ["a" * 4000 + "!", "aaa"]})
        assert time.monotonic() - start < 5
        assert got.tolist() == [False, True]
        got = sess.run([first, every], {s: ["a1b22"]})
        assert [v.tolist() for v in got] == [[b"a<1>b22"], [b"a<1>b<22>"]]
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Invalid pattern: \(unclosed"):
            sess.run(bad, {s: ["x"]})
