"""TF 1.15's semantics of the string ops (shardflow/string_ops.py): tf.strings.split as Python's
str.split, substr's range check, units and tensor arguments, as_string's printf format,
string_to_number's range and syntax, and Equal/NotEqual/Add/Select/zeros on strings."""
import numpy as np
import pytest

import shardflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def run(*fetches, feed=None):
    with tf.Session() as sess:
        out = sess.run(list(fetches), feed)
    return out[0] if len(out) == 1 else out


def test_strings_split_is_python_str_split():
    s = tf.placeholder(tf.string, [None])
    by_ab = tf.strings.split(s, sep="ab")
    values, shape = run(by_ab.values, by_ab.dense_shape, feed={s: ["xabyabz", "ab"]})
    assert list(values) == [b"x", b"y", b"z", b"", b""]    # one separator, not a or b
    np.testing.assert_array_equal(shape, [2, 3])
    assert list(run(tf.strings.split(s, sep=",").values, feed={s: ["a,,b", ""]})) == [
        b"a", b"", b"b", b""]                                # empties kept when sep is given
    assert list(run(tf.strings.split(s).values, feed={s: ["  a b\t c ", "   "]})) == [
        b"a", b"b", b"c"]                                    # whitespace runs, no empties
    assert list(run(tf.strings.split(s, sep=",", maxsplit=1).values,
                    feed={s: ["a,b,c"]})) == [b"a", b"b,c"]
    assert list(run(tf.strings.split(s, maxsplit=1).values, feed={s: ["a  b c"]})) == [
        b"a", b"b c"]
    # tf.string_split (V1) still splits on each character of the delimiter, skipping empties.
    assert list(run(tf.string_split(s, ",;").values, feed={s: ["a,,b;c"]})) == [
        b"a", b"b", b"c"]


def test_substr_checks_pos_counts_utf8_and_takes_tensors():
    s = tf.placeholder(tf.string, [None])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"pos 10 out of range for string b'hello' at index 0"):
        run(tf.substr(s, 10, 1), feed={s: ["hello"]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="pos -6 out of range"):
        run(tf.substr(s, -6, 1), feed={s: ["hello"]})
    assert list(run(tf.substr(s, -3, 2), feed={s: ["hello"]})) == [b"ll"]
    assert list(run(tf.substr(s, 5, 1), feed={s: ["hello"]})) == [b""]   # pos == size is fine
    word = u"h\u00e9llo".encode()
    assert list(run(tf.strings.substr(s, 1, 2, unit="UTF8_CHAR"), feed={s: [word]})) == [
        u"\u00e9l".encode()]
    assert list(run(tf.strings.substr(s, -4, 2, unit="UTF8_CHAR"), feed={s: [word]})) == [
        u"\u00e9l".encode()]
    with pytest.raises(tf.errors.InvalidArgumentError, match="pos 6 out of range"):
        run(tf.strings.substr(s, 6, 1, unit="UTF8_CHAR"), feed={s: [word]})
    got = run(tf.substr(s, tf.constant([1, 2]), tf.constant([2, 3])), feed={s: ["hello", "world"]})
    assert list(got) == [b"el", b"rld"]
    grid = tf.substr(tf.constant([["hello"], ["world"]]), tf.constant([0, 1, 2]),
                     tf.constant([1, 2, 3]))
    assert grid.shape.as_list() == [2, 3]
    assert run(grid).tolist() == [[b"h", b"el", b"llo"], [b"w", b"or", b"rld"]]


def test_as_string_uses_printf_formats():
    f = tf.placeholder(tf.float32, [None])
    i = tf.placeholder(tf.int32, [None])
    assert list(run(tf.as_string(f, scientific=True), feed={f: [12.0]})) == [b"1.200000e+01"]
    assert list(run(tf.as_string(f, shortest=True), feed={f: [0.1, 1e20]})) == [b"0.1", b"1e+20"]
    assert list(run(tf.as_string(i, width=4, fill="0"), feed={i: [-5, 42]})) == [b"-005", b"0042"]
    assert list(run(tf.as_string(i, width=3, fill="-"), feed={i: [5]})) == [b"5  "]
    assert list(run(tf.as_string(i, width=4), feed={i: [-42]})) == [b" -42"]
    assert list(run(tf.as_string(tf.constant([True, False]), width=7))) == [b"true", b"false"]
    for bad in (dict(fill="x", width=3), dict(precision=2), dict(scientific=True)):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.as_string(i, **bad)
    with pytest.raises(tf.errors.InvalidArgumentError, match="both scientific and shortest"):
        tf.as_string(f, scientific=True, shortest=True)


def test_string_to_number_refuses_out_of_range_and_python_syntax():
    s = tf.placeholder(tf.string, [None])
    as_int32 = tf.string_to_number(s, tf.int32)
    as_float = tf.string_to_number(s)
    for text in ("3000000000", "2147483648", "+5", "1_000", "0x10", "1.0"):
        with pytest.raises(tf.errors.InvalidArgumentError, match="could not correctly convert"):
            run(as_int32, feed={s: [text]})
    np.testing.assert_array_equal(run(as_int32, feed={s: [" -2147483648", "007 "]}),
                                  [-2147483648, 7])
    np.testing.assert_array_equal(
        run(tf.string_to_number(s, tf.int64), feed={s: ["3000000000"]}), [3000000000])
    for text in ("1_000", "infinity", "1e", "1.5f", ""):
        with pytest.raises(tf.errors.InvalidArgumentError, match="could not correctly convert"):
            run(as_float, feed={s: [text]})
    np.testing.assert_array_equal(run(as_float, feed={s: [" 1.5 ", "0x10", "-INF", ".5"]}),
                                  [1.5, 16.0, -np.inf, 0.5])


def test_strings_length_and_case():
    s = tf.placeholder(tf.string, [None])
    np.testing.assert_array_equal(
        run(tf.strings.length(s, unit="UTF8_CHAR"), feed={s: [u"h\u00e9llo".encode(), b"\xff"]}),
        [5, 1])                                  # invalid UTF-8 is counted, as TF
    assert list(run(tf.strings.lower(s, encoding="utf-8"), feed={s: [u"\u00c9A".encode()]})) == [
        u"\u00e9a".encode()]
    assert list(run(tf.strings.lower(s), feed={s: [u"\u00c9A".encode()]})) == [
        u"\u00c9a".encode()]                      # ASCII only without an encoding


def test_generic_ops_on_strings():
    a = tf.constant(["a", "b"])
    assert run(tf.equal(a, "a")).tolist() == [True, False]
    assert run(tf.not_equal(a, tf.constant([["a"], ["c"]]))).tolist() == [[False, True],
                                                                          [True, True]]
    assert run(tf.constant("a") + tf.constant("b")) == b"ab"
    assert list(run("x" + a)) == [b"xa", b"xb"]
    assert list(run(tf.add(a, "!"))) == [b"a!", b"b!"]
    rows = tf.where([True, False], tf.constant([["a", "b"], ["c", "d"]]),
                    tf.constant([["e", "f"], ["g", "h"]]))
    assert rows.shape.as_list() == [2, 2]
    assert run(rows).tolist() == [[b"a", b"b"], [b"g", b"h"]]
    assert list(run(tf.where_v2([True, False], a, "z"))) == [b"a", b"z"]
    assert list(run(tf.zeros([2], tf.string))) == [b"", b""]
    assert list(run(tf.zeros(tf.constant([1]), tf.string))) == [b""]
    assert run(tf.zeros_like(tf.constant([["a", "b"]]))).tolist() == [[b"", b""]]
    assert list(run(tf.fill([2], "s"))) == [b"s", b"s"]
    np.testing.assert_array_equal(run(tf.equal(tf.constant([1, 2]), 1)), [True, False])


def test_decode_base64_refuses_what_tf_refuses():
    # Regression: Python's decoder skipped characters outside the alphabet, so garbage
    # (b'a"b,c', standard base64's '+/') decoded to made-up bytes. TF refuses them.
    s = tf.placeholder(tf.string, [None])
    out = tf.io.decode_base64(s)
    with tf.Session() as sess:
        good = sess.run(out, {s: ["YWJj", "YWI", "YWI=", "", "_-8"]}).tolist()
        assert good == [b"abc", b"ab", b"ab", b"", b"\xff\xef"]
        for bad in ['a"b,c', "+/+/", "YWJjZ", "YW=I", "YWI===", "ab cd"]:
            with pytest.raises(tf.errors.InvalidArgumentError, match="not web-safe base64"):
                sess.run(out, {s: [bad]})
        text = sess.run(tf.io.decode_base64(tf.io.encode_base64(["héllo wörld?>"])))
        assert text.tolist() == ["héllo wörld?>".encode()]
