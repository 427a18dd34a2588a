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


def make_sampling_table(size, sampling_factor=1e-5):
    """The probability of keeping each word of rank 0..size-1 when sampling skip-grams (Keras's
    table): word frequencies taken as Zipf's law, f(r) ~ 1 / (r (ln r + gamma)), and word2vec's
    subsampling min(1, sqrt(sampling_factor / f))."""
    euler_gamma = 0.577
    rank = np.arange(size, dtype=np.float64)
    rank[0] = 1.0
    inverse_frequency = rank * (np.log(rank) + euler_gamma) + 0.5 - 1.0 / (12.0 * rank)
    scaled = sampling_factor * inverse_frequency
    return np.minimum(1.0, np.sqrt(scaled))


def skipgrams(sequence, vocabulary_size, window_size=4, negative_samples=1.0, shuffle=True,
              categorical=False, sampling_table=None, seed=None):
    """Skip-gram training pairs of a sequence of word indices, as Keras's: ([word, context]
    pairs, labels). Each word and each neighbour within `window_size` make a positive pair
    (label 1); then `negative_samples` times as many pairs of a word and a random index in
    [1, vocabulary_size) (label 0). Index 0 (padding) never pairs; with a `sampling_table`,
    word w takes part with probability sampling_table[w]. `categorical` labels are [0, 1]
    (positive) and [1, 0]; `shuffle` shuffles pairs and labels alike (`seed` fixes it)."""
    import random
    positive = [1] if not categorical else [0, 1]
    negative = [0] if not categorical else [1, 0]
    pairs, labels = [], []
    for i, word in enumerate(sequence):
        if not word or (sampling_table is not None and
                        sampling_table[word] < random.random()):
            continue
        for j in range(max(0, i - window_size), min(len(sequence), i + window_size + 1)):
            if j != i and sequence[j]:
                pairs.append([word, sequence[j]])
                labels.append(positive[-1] if not categorical else list(positive))
    if negative_samples > 0 and pairs:
        centres = [p[0] for p in pairs]
        random.shuffle(centres)
        count = int(len(pairs) * negative_samples)
        pairs += [[centres[k % len(centres)], random.randint(1, vocabulary_size - 1)]
                  for k in range(count)]
        labels += [negative[-1] if not categorical else list(negative)] * count
    if shuffle:
        order = list(range(len(pairs)))
        random.Random(seed).shuffle(order)
        pairs = [pairs[k] for k in order]
        labels = [labels[k] for k in order]
    return pairs, labels


__all__ = ["make_sampling_table", "pad_sequences", "skipgrams"]
