"""tf.keras.preprocessing.sequence: pad_sequences, which turns a list of sequences of different
lengths into one NumPy array (run in Python, before the data reaches the graph).

Example::

    pad_sequences([[1, 2, 3], [4, 5]], maxlen=4, padding="post")   # [[1, 2, 3, 0], [4, 5, 0, 0]]
"""

import numpy as np


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """A NumPy array [len(sequences), maxlen] (plus the shape of the sequences' elements, when
    they are arrays themselves) holding the sequences, as Keras's pad_sequences: `maxlen`
    defaults to the longest; a shorter sequence is padded with `value` before it
    (padding='pre') or after it ('post'); a longer one loses its first elements
    (truncating='pre') or its last ('post'). Empty sequences give rows of `value`. A string
    `value` needs dtype=object (or a NumPy string dtype)."""
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    if padding not in ("pre", "post"):
        raise ValueError('Padding type "%s" not understood' % (padding,))
    if truncating not in ("pre", "post"):
        raise ValueError('Truncating type "%s" not understood' % (truncating,))
    lengths = []
    sample_shape = ()
    found_sample = False
    for x in sequences:
        try:
            lengths.append(len(x))
        except TypeError:
            raise ValueError("`sequences` must be a list of iterables. Found non-iterable: %s"
                             % (x,)) from None
        if not found_sample and len(x):
            sample_shape = np.asarray(x).shape[1:]
            found_sample = True
    if maxlen is None:
        maxlen = max(lengths) if lengths else 0
    maxlen = int(maxlen)
    if maxlen < 0:
        raise ValueError("pad_sequences: maxlen must not be negative, got %d" % maxlen)
    is_dtype_str = np.issubdtype(np.dtype(dtype), np.str_)
    if isinstance(value, str) and np.dtype(dtype) != np.dtype(object) and not is_dtype_str:
        raise ValueError("`dtype` %s is not compatible with `value`'s type: %s\nYou should set "
                         "`dtype=object` for variable length strings." % (dtype, type(value)))
    out = np.full((len(sequences), maxlen) + tuple(sample_shape), value, dtype=dtype)
    for idx, s in enumerate(sequences):
        if not len(s) or maxlen == 0:
            continue
        kept = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        kept = np.asarray(kept, dtype=dtype)
        if kept.shape[1:] != tuple(sample_shape):
            raise ValueError("Shape of sample %s of sequence at position %s is different from "
                             "expected shape %s" % (kept.shape[1:], idx, sample_shape))
        if padding == "post":
            out[idx, :len(kept)] = kept
        else:
            out[idx, -len(kept):] = kept
    return out


__all__ = ["pad_sequences"]
