"""tf.keras.preprocessing.text, as TF 1.15's (keras_preprocessing 1.1): Tokenizer, which
numbers the words of a corpus by frequency and turns texts into sequences of those numbers or
into matrices (binary, count, freq, tfidf); text_to_word_sequence, one_hot and hashing_trick.
Plain Python and NumPy, run before the data reaches the graph.

Example::

    tok = Tokenizer(num_words=1000, oov_token="<unk>")
    tok.fit_on_texts(["the cat sat", "the dog"])
    tok.texts_to_sequences(["the cat ran"])        # [[2, 3, 1]]
"""

import collections
import hashlib
import json

import numpy as np

_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def text_to_word_sequence(text, filters=_FILTERS, lower=True, split=" "):
    """The words of `text`: lower-cased (lower=True), every character of `filters` turned
    into `split`, split on `split`, empty pieces dropped."""
    if lower:
        text = text.lower()
    text = text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in text.split(split) if w]


def hashing_trick(text, n, hash_function=None, filters=_FILTERS, lower=True, split=" "):
    """Each word of `text` as hash_function(word) % (n - 1) + 1 (0 is never given):
    hash_function None is Python's hash (which differs between processes unless
    PYTHONHASHSEED is set), 'md5' a stable one."""
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        def hash_function(w):
            return int(hashlib.md5(w.encode()).hexdigest(), 16)
    seq = text_to_word_sequence(text, filters=filters, lower=lower, split=split)
    return [hash_function(w) % (n - 1) + 1 for w in seq]


def one_hot(text, n, filters=_FILTERS, lower=True, split=" "):
    """hashing_trick with Python's hash: word indices in [1, n) (not one-hot vectors, despite
    the name, as Keras's)."""
    return hashing_trick(text, n, hash_function=hash, filters=filters, lower=lower,
                         split=split)


class Tokenizer:
    """Numbers the words of texts by frequency (1 the most frequent; 0 is never a word's;
    with `oov_token` that token is 1 and stands in for unknown words). Only the words numbered
    below `num_words` are used by texts_to_sequences and the matrices (all of them without
    num_words). char_level=True takes characters as the words; a text given as a list is
    taken as its words.

    Attributes after fit_on_texts: word_counts (word -> count, in the order first seen),
    word_docs (word -> number of texts holding it), word_index (word -> number), index_word
    (number -> word), index_docs (number -> number of texts), document_count.
    """

    def __init__(self, num_words=None, filters=_FILTERS, lower=True, split=" ",
                 char_level=False, oov_token=None, document_count=0, **kwargs):
        if "nb_words" in kwargs:
            num_words = kwargs.pop("nb_words")
        if kwargs:
            raise TypeError("Unrecognized keyword arguments: " + str(kwargs))
        self.word_counts = collections.OrderedDict()
        self.word_docs = collections.defaultdict(int)
        self.filters = filters
        self.split = split
        self.lower = lower
        self.num_words = num_words
        self.document_count = document_count
        self.char_level = char_level
        self.oov_token = oov_token
        self.index_docs = collections.defaultdict(int)
        self.word_index = {}
        self.index_word = {}

    def _words(self, text):
        if self.char_level or isinstance(text, list):
            if self.lower:
                return [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return text
        return text_to_word_sequence(text, self.filters, self.lower, self.split)

    def fit_on_texts(self, texts):
        """Counts the words of `texts` (strings, or lists of words) and numbers them."""
        for text in texts:
            self.document_count += 1
            seq = self._words(text)
            for w in seq:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(seq):
                self.word_docs[w] += 1
        counts = sorted(self.word_counts.items(), key=lambda wc: wc[1], reverse=True)  # stable
        vocabulary = [] if self.oov_token is None else [self.oov_token]
        vocabulary.extend(w for w, _ in counts)
        self.word_index = dict(zip(vocabulary, range(1, len(vocabulary) + 1)))
        self.index_word = {i: w for w, i in self.word_index.items()}
        for w, c in list(self.word_docs.items()):
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences):
        """Counts, for tfidf, the texts each number appears in (sequences of numbers)."""
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[i] += 1

    def texts_to_sequences(self, texts):
        """Each text as the list of its words' numbers (unknown words, and those numbered
        num_words or above, dropped, or the oov_token's number)."""
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts):
        num_words = self.num_words
        oov = self.word_index.get(self.oov_token)
        for text in texts:
            vect = []
            for w in self._words(text):
                i = self.word_index.get(w)
                if i is not None:
                    if num_words and i >= num_words:
                        if oov is not None:
                            vect.append(oov)
                    else:
                        vect.append(i)
                elif self.oov_token is not None:
                    vect.append(oov)
            yield vect

    def sequences_to_texts(self, sequences):
        """Each sequence of numbers back as a text (its words joined by spaces)."""
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences):
        num_words = self.num_words
        oov = self.word_index.get(self.oov_token)
        for seq in sequences:
            vect = []
            for num in seq:
                word = self.index_word.get(num)
                if word is not None:
                    if num_words and num >= num_words:
                        if oov is not None:
                            vect.append(self.index_word[oov])
                    else:
                        vect.append(word)
                elif self.oov_token is not None:
                    vect.append(self.index_word[oov])
            yield " ".join(vect)

    def texts_to_matrix(self, texts, mode="binary"):
        """sequences_to_matrix of texts_to_sequences(texts)."""
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode="binary"):
        """A float64 matrix [len(sequences), num_words] (len(word_index) + 1 without
        num_words): per sequence, each number below num_words as 1 ('binary'), its count
        ('count'), its count / len(sequence) ('freq') or (1 + log(count)) *
        log(1 + document_count / (1 + index_docs[number])) ('tfidf')."""
        if not self.num_words:
            if not self.word_index:
                raise ValueError("Specify a dimension (`num_words` argument), or fit on some "
                                 "text data first.")
            num_words = len(self.word_index) + 1
        else:
            num_words = self.num_words
        if mode not in ("binary", "count", "freq", "tfidf"):
            raise ValueError("Unknown vectorization mode: %s" % (mode,))
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        x = np.zeros((len(sequences), num_words))
        for i, seq in enumerate(sequences):
            if not seq:
                continue
            counts = collections.Counter(j for j in seq if j < num_words)
            for j, c in counts.items():
                if mode == "count":
                    x[i][j] = c
                elif mode == "freq":
                    x[i][j] = c / len(seq)
                elif mode == "binary":
                    x[i][j] = 1
                else:
                    tf = 1 + np.log(c)
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
                    x[i][j] = tf * idf
        return x

    def get_config(self):
        """The tokenizer's settings and counts (tokenizer_from_json reads to_json's)."""
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower,
                "split": self.split, "char_level": self.char_level,
                "oov_token": self.oov_token, "document_count": self.document_count,
                "word_counts": json.dumps(self.word_counts),
                "word_docs": json.dumps(self.word_docs),
                "index_docs": json.dumps(self.index_docs),
                "index_word": json.dumps(self.index_word),
                "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs):
        return json.dumps({"class_name": self.__class__.__name__,
                           "config": self.get_config()}, **kwargs)


def tokenizer_from_json(json_string):
    """The Tokenizer Tokenizer.to_json wrote."""
    config = dict(json.loads(json_string).get("config"))
    word_counts = json.loads(config.pop("word_counts"))
    word_docs = json.loads(config.pop("word_docs"))
    index_docs = {int(k): v for k, v in json.loads(config.pop("index_docs")).items()}
    index_word = {int(k): v for k, v in json.loads(config.pop("index_word")).items()}
    word_index = json.loads(config.pop("word_index"))
    tokenizer = Tokenizer(**config)
    tokenizer.word_counts = collections.OrderedDict(word_counts)
    tokenizer.word_docs = collections.defaultdict(int, word_docs)
    tokenizer.index_docs = collections.defaultdict(int, index_docs)
    tokenizer.word_index = word_index
    tokenizer.index_word = index_word
    return tokenizer


__all__ = ["Tokenizer", "hashing_trick", "one_hot", "text_to_word_sequence",
           "tokenizer_from_json"]
