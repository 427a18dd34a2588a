"""Candidate sampling and the sampled losses built on it, as TF1's
tf.nn.log_uniform_candidate_sampler, uniform_candidate_sampler, fixed_unigram_candidate_sampler,
nce_loss and sampled_softmax_loss: composites of the engine's ops, so the losses train through
`weights`, `biases` and `inputs` with the graph's symbolic gradients.

Example (word2vec's skip-gram)::

    embed = sf.nn.embedding_lookup(embeddings, center_words)          # [batch, dim]
    loss = sf.reduce_mean(sf.nn.nce_loss(weights=nce_w, biases=nce_b, labels=context_words,
                                         inputs=embed, num_sampled=8, num_classes=vocab))

Each sampler returns (sampled_candidates, true_expected_count, sampled_expected_count):
`num_sampled` int64 class ids drawn from its distribution P, and for the true classes
([batch, num_true]) and for the sampled ones ([num_sampled]) how many times each is expected
among the samples, as float32 under stop_gradient. Drawing with replacement, that is
num_sampled * P(k). Drawing `unique` ids (without replacement: Gumbel-top-k, the num_sampled
largest of log P(k) + Gumbel noise, which picks ids in the order and with the probabilities of
repeated draws that skip ids already drawn), it is 1 - (1 - P(k)) ** num_sampled. TF1 uses
the number of draws its rejection sampler needed instead of num_sampled there, so its values
are slightly larger and vary from step to step; the samples follow the same law.

Unique sampling builds num_sampled argmax steps over all range_max classes (sf.nn.top_k), so
it suits modest num_sampled * range_max; with replacement costs O(num_sampled) (log-uniform,
uniform) or O(num_sampled * range_max) (fixed unigram).
"""

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.framework import convert_to_tensor


def _check_sampler_args(what, true_classes, num_true, num_sampled, unique, range_max):
    true_classes = ops.cast(convert_to_tensor(true_classes), dtypes.int64)
    if true_classes.shape.ndims not in (None, 2):
        raise ValueError("%s: true_classes must be [batch, num_true], got shape %s"
                         % (what, true_classes.shape))
    if true_classes.shape.ndims == 2 and true_classes.shape.as_list()[1] not in (None, num_true):
        raise ValueError("%s: true_classes has %s columns but num_true=%d"
                         % (what, true_classes.shape.as_list()[1], num_true))
    if int(num_sampled) < 1 or int(range_max) < 1:
        raise ValueError("%s: num_sampled (%r) and range_max (%r) must be positive"
                         % (what, num_sampled, range_max))
    if unique and num_sampled > range_max:
        raise ValueError("%s: unique=True cannot draw num_sampled=%d distinct ids out of "
                         "range_max=%d" % (what, num_sampled, range_max))
    return true_classes


def _gumbel_top_k(log_p, k, seed):
    """k distinct indices of the [n] log-probabilities `log_p` drawn without replacement."""
    n = log_p.shape.as_list()[0]
    u = ops.maximum(ops.random_uniform([n], seed=seed), 1e-20)
    noisy = ops.add(log_p, ops.negative(ops.log(ops.negative(ops.log(u)))))
    _, indices = _top_k(ops.expand_dims(noisy, 0), k)
    return ops.cast(ops.reshape(indices, [k]), dtypes.int64)


def _top_k(x, k):
    from shardflow.nn import top_k  # nn imports this module
    return top_k(x, k)


def _expected_count(p, num_sampled, unique):
    """num_sampled * p, or 1 - (1 - p) ** num_sampled (computed as -expm1(n * log1p(-p)))
    for samples without replacement."""
    if not unique:
        return ops.multiply(p, float(num_sampled))
    return ops.negative(ops.expm1(ops.multiply(ops.log1p(ops.negative(p)), float(num_sampled))))


def _sampler_outputs(sampled, prob_of, true_classes, num_sampled, unique, name):
    true_count = _expected_count(prob_of(true_classes), num_sampled, unique)
    sampled_count = _expected_count(prob_of(sampled), num_sampled, unique)
    return (ops.stop_gradient(sampled, name=name),
            ops.stop_gradient(true_count), ops.stop_gradient(sampled_count))


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """Class ids in [0, range_max) drawn from the log-uniform (Zipfian) distribution
    P(k) = log((k + 2) / (k + 1)) / log(range_max + 1), as TF1's
    tf.nn.log_uniform_candidate_sampler (word ids sorted by decreasing frequency roughly
    follow it). Returns (sampled_candidates [num_sampled] int64, true_expected_count
    [batch, num_true], sampled_expected_count [num_sampled]); the module docstring says how
    the expected counts of unique samples differ from TF1's.

    Example::

        sampled, true_count, sampled_count = sf.nn.log_uniform_candidate_sampler(
            true_classes=labels, num_true=1, num_sampled=64, unique=True, range_max=vocab)
    """
    what = "log_uniform_candidate_sampler"
    true_classes = _check_sampler_args(what, true_classes, num_true, num_sampled, unique,
                                       range_max)
    log_range = float(np.log(range_max + 1.0))

    def prob_of(ids):
        k = ops.cast(ids, dtypes.float32)
        return ops.divide(ops.log1p(ops.reciprocal(ops.add(k, 1.0))), log_range)

    if unique:
        k = np.arange(range_max, dtype=np.float64)
        log_p = np.log(np.log1p(1.0 / (k + 1.0)) / log_range).astype(np.float32)
        sampled = _gumbel_top_k(ops.constant(log_p), num_sampled, seed)
    else:
        # The inverse of the CDF log(k + 2) / log(range_max + 1), as TF1's LogUniformSampler.
        u = ops.random_uniform([num_sampled], seed=seed)
        k = ops.subtract(ops.floor(ops.exp(ops.multiply(u, log_range))), 1.0)
        sampled = ops.cast(ops.clip_by_value(k, 0.0, float(range_max - 1)), dtypes.int64)
    return _sampler_outputs(sampled, prob_of, true_classes, num_sampled, unique, name)


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                              seed=None, name=None):
    """Class ids drawn uniformly from [0, range_max), as TF1's tf.nn.uniform_candidate_sampler;
    outputs as log_uniform_candidate_sampler's.

    Example::

        sampled_values = sf.nn.uniform_candidate_sampler(labels, 1, 16, True, vocab, seed=3)
    """
    what = "uniform_candidate_sampler"
    true_classes = _check_sampler_args(what, true_classes, num_true, num_sampled, unique,
                                       range_max)

    def prob_of(ids):
        return ops.fill(ops.shape(ids), np.float32(1.0 / range_max))

    if unique:
        # Equal log-probabilities: the Gumbel noise alone orders the classes.
        sampled = _gumbel_top_k(ops.zeros([range_max]), num_sampled, seed)
    else:
        u = ops.random_uniform([num_sampled], seed=seed)
        k = ops.floor(ops.multiply(u, float(range_max)))
        sampled = ops.cast(ops.minimum(k, float(range_max - 1)), dtypes.int64)
    return _sampler_outputs(sampled, prob_of, true_classes, num_sampled, unique, name)


def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """Every class: sampled_candidates = [0, 1, ..., num_sampled - 1] (int64) and expected
    counts of 1.0 for the true and the sampled classes, as TF1's tf.nn.all_candidate_sampler
    (for testing; `unique` and `seed` change nothing)."""
    true_classes = _check_sampler_args("all_candidate_sampler", true_classes, num_true,
                                       num_sampled, False, num_sampled)
    sampled = ops.constant(np.arange(int(num_sampled), dtype=np.int64))
    true_count = ops.ones_like(ops.cast(true_classes, dtypes.float32))
    return (ops.identity(sampled, name=name), true_count,
            ops.constant(np.ones(int(num_sampled), np.float32)))


def _draw(rng, p, num_sampled, unique):
    """(ids, tries): num_sampled ids drawn from the probabilities p, without repeats when
    unique (rejecting repeats, as TF's RangeSampler), and the number of draws made."""
    if not unique:
        return rng.choice(len(p), size=num_sampled, p=p), num_sampled
    ids, seen, tries = [], set(), 0
    while len(ids) < num_sampled:
        for k in rng.choice(len(p), size=num_sampled, p=p):
            tries += 1
            if k not in seen:
                seen.add(k)
                ids.append(k)
                if len(ids) == num_sampled:
                    break
    return np.asarray(ids), tries


def _counts(p, tries, unique):
    """Expected counts: tries * p, or 1 - (1 - p) ** tries for unique samples (TF's)."""
    p = np.asarray(p, np.float64)
    if not unique:
        return (tries * p).astype(np.float32)
    return (-np.expm1(tries * np.log1p(-np.minimum(p, 1.0 - 1e-12)))).astype(np.float32)


def learned_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                      seed=None, name=None):
    """Class ids in [0, range_max) drawn from the unigram distribution of the true classes
    this op has seen, as TF1's tf.nn.learned_unigram_candidate_sampler: each class starts
    with a count of 1, every run draws from the counts so far and then adds 1 for each of
    true_classes. The counts live in the op (as TF's kernel), not in a variable. Outputs as
    log_uniform_candidate_sampler's; unique samples are drawn by rejecting repeats, and their
    expected counts use the number of draws made, as TF1's."""
    from shardflow.script_ops import py_func
    true_classes = _check_sampler_args("learned_unigram_candidate_sampler", true_classes,
                                       num_true, num_sampled, unique, range_max)
    num_sampled, range_max = int(num_sampled), int(range_max)
    counts = np.ones(range_max, np.float64)
    rng = np.random.RandomState(seed)

    def run(true):
        true = np.asarray(true, np.int64)
        if true.size and (true.min() < 0 or true.max() >= range_max):
            raise ValueError("learned_unigram_candidate_sampler: a true class is outside "
                             "[0, %d)" % range_max)
        p = counts / counts.sum()
        ids, tries = _draw(rng, p, num_sampled, unique)
        out = (ids.astype(np.int64), _counts(p[true], tries, unique),
               _counts(p[ids], tries, unique))
        np.add.at(counts, true.reshape(-1), 1.0)
        return out
    sampled, true_count, sampled_count = py_func(
        run, [true_classes], [dtypes.int64, dtypes.float32, dtypes.float32],
        name=name or "LearnedUnigramCandidateSampler")
    sampled.set_shape([num_sampled])
    true_count.set_shape(true_classes.shape)
    sampled_count.set_shape([num_sampled])
    return sampled, true_count, sampled_count


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """Where a sampled candidate equals one of a row's true classes, as TF1's
    tf.nn.compute_accidental_hits: (indices int32, ids int64, weights float32), one entry per
    (row i, true class j) found among sampled_candidates, in that order: the row, the
    position of the (last) equal sampled candidate, and -FLT_MAX (to add to that logit)."""
    from shardflow.script_ops import py_func
    true_classes = ops.cast(convert_to_tensor(true_classes), dtypes.int64)
    sampled_candidates = ops.cast(convert_to_tensor(sampled_candidates), dtypes.int64)
    num_true = int(num_true)

    def run(true, sampled):
        true = np.asarray(true, np.int64).reshape(-1, num_true)
        position = {int(v): k for k, v in enumerate(np.asarray(sampled).reshape(-1))}
        hits = [(i, position[int(c)]) for i in range(true.shape[0]) for c in true[i]
                if int(c) in position]
        rows = np.array([h[0] for h in hits], np.int32)
        ids = np.array([h[1] for h in hits], np.int64)
        return rows, ids, np.full(len(hits), -np.finfo(np.float32).max, np.float32)
    indices, ids, weights = py_func(run, [true_classes, sampled_candidates],
                                    [dtypes.int32, dtypes.int64, dtypes.float32],
                                    name=name or "ComputeAccidentalHits")
    for t in (indices, ids, weights):
        t.set_shape([None])
    return indices, ids, weights


def _read_unigrams(vocab_file):
    """The counts of a vocabulary file: the last comma-separated field of each line."""
    with open(vocab_file) as f:
        return [float(line.rstrip("\n").split(",")[-1]) for line in f if line.strip()]


def fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                    vocab_file="", distortion=1.0, num_reserved_ids=0,
                                    num_shards=1, shard=0, unigrams=(), seed=None, name=None):
    """Class ids drawn with probability proportional to unigrams[k - num_reserved_ids] **
    distortion (ids below num_reserved_ids are never drawn), as TF1's
    tf.nn.fixed_unigram_candidate_sampler; the counts come from `unigrams` or from
    `vocab_file` (one entry a line, the count last after a comma). Sharding (num_shards > 1)
    is not supported. Outputs as log_uniform_candidate_sampler's.

    Example::

        sampled_values = sf.nn.fixed_unigram_candidate_sampler(
            labels, 1, 8, False, vocab, unigrams=word_counts, distortion=0.75)
    """
    what = "fixed_unigram_candidate_sampler"
    true_classes = _check_sampler_args(what, true_classes, num_true, num_sampled, unique,
                                       range_max)
    if num_shards != 1:
        raise ValueError("%s: num_shards=%r is not supported; give the whole vocabulary"
                         % (what, num_shards))
    if bool(vocab_file) == bool(len(unigrams)):
        raise ValueError("%s needs unigrams or vocab_file, exactly one of them" % what)
    counts = np.asarray(_read_unigrams(vocab_file) if vocab_file else unigrams, np.float64)
    weights = np.zeros([range_max], np.float64)
    if num_reserved_ids + len(counts) != range_max:
        raise ValueError("%s: num_reserved_ids (%d) + %d unigrams must equal range_max (%d)"
                         % (what, num_reserved_ids, len(counts), range_max))
    weights[num_reserved_ids:] = counts ** float(distortion)
    probs = weights / weights.sum()
    table = ops.constant(probs.astype(np.float32))

    def prob_of(ids):
        return array_ops.gather(table, ids)

    if unique:
        with np.errstate(divide="ignore"):
            log_p = np.maximum(np.log(probs), -1e30).astype(np.float32)
        sampled = _gumbel_top_k(ops.constant(log_p), num_sampled, seed)
    else:
        # Inverse CDF: the number of classes whose cumulative probability is <= u.
        cdf = ops.constant(np.cumsum(probs).astype(np.float32)[:-1])
        u = ops.expand_dims(ops.random_uniform([num_sampled], seed=seed), 1)
        below = ops.cast(ops.less_equal(ops.expand_dims(cdf, 0), u), dtypes.int64)
        sampled = ops.reduce_sum(below, axis=1)
    return _sampler_outputs(sampled, prob_of, true_classes, num_sampled, unique, name)


# ---- the sampled losses --------------------------------------------------------------------


def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                            num_true, sampled_values, subtract_log_q, remove_accidental_hits,
                            seed, what, partition_strategy="mod"):
    """TF1's _compute_sampled_logits: (logits [batch, num_true + num_sampled], labels of the
    same shape, 1 / num_true for the true classes and 0 for the sampled ones). `weights` and
    `biases` may be sharded (lists or PartitionedVariables), their rows found with
    embedding_lookup's `partition_strategy`, as TF1's."""
    def rows(table, ids):
        return array_ops.embedding_lookup(table, ids, partition_strategy=partition_strategy)
    inputs = convert_to_tensor(inputs)
    labels = ops.cast(convert_to_tensor(labels), dtypes.int64)
    if labels.shape.ndims == 1:
        labels = ops.expand_dims(labels, 1)
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True,
                                                       num_classes, seed=seed)
    sampled, true_count, sampled_count = (ops.stop_gradient(convert_to_tensor(v))
                                          for v in sampled_values)
    sampled = ops.cast(sampled, dtypes.int64)
    dt = inputs.dtype
    labels_flat = ops.reshape(labels, [-1])
    dim = inputs.shape.as_list()[-1] if inputs.shape.ndims else None
    if dim is None:
        raise ValueError("%s needs the depth of inputs (their last dimension) to be known" % what)

    # The true classes' logits: the row-wise dot of each input with its num_true weight rows.
    true_w = ops.reshape(rows(weights, labels_flat), [-1, num_true, dim])
    true_logits = ops.reduce_sum(ops.multiply(ops.expand_dims(inputs, 1), true_w), axis=2)
    true_logits = ops.add(true_logits,
                          ops.reshape(rows(biases, labels_flat), [-1, num_true]))
    # The sampled classes' logits: every input against every sampled row.
    sampled_logits = ops.matmul(inputs, rows(weights, sampled), transpose_b=True)
    sampled_logits = ops.add(sampled_logits, rows(biases, sampled))

    if remove_accidental_hits:
        # A sampled class equal to one of the row's true classes gets a logit far below.
        hits = ops.equal(ops.expand_dims(labels, 2), ops.reshape(sampled, [1, 1, -1]))
        hit = ops.cast(array_ops.reduce_any(hits, axis=1), dt)
        lowest = np.asarray(-np.finfo(dt.as_numpy_dtype).max, dt.as_numpy_dtype)
        sampled_logits = ops.add(sampled_logits, ops.multiply(hit, lowest))
    if subtract_log_q:
        true_logits = ops.subtract(true_logits, ops.log(ops.cast(true_count, dt)))
        sampled_logits = ops.subtract(sampled_logits, ops.log(ops.cast(sampled_count, dt)))

    logits = ops.concat([true_logits, sampled_logits], 1)
    targets = ops.concat([ops.divide(ops.ones_like(true_logits), float(num_true)),
                          ops.zeros_like(sampled_logits)], 1)
    return logits, targets


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """The noise-contrastive estimation loss per example ([batch]), as TF1's tf.nn.nce_loss:
    logistic regression of each true class (label 1 / num_true) against `num_sampled` noise
    classes (label 0), on logits inputs . weights[k] + biases[k] - log(expected count of k).

    `weights` [num_classes, dim], `biases` [num_classes], `labels` [batch, num_true] ints,
    `inputs` [batch, dim]. `sampled_values` is a sampler's triple; by default
    log_uniform_candidate_sampler(unique=True) draws it (so class ids should be sorted by
    decreasing frequency).

    Example::

        loss = sf.reduce_mean(sf.nn.nce_loss(nce_w, nce_b, labels=context, inputs=embed,
                                             num_sampled=8, num_classes=vocab))
    """
    from shardflow.nn import sigmoid_cross_entropy_with_logits
    with ops.get_default_graph().name_scope(name):
        logits, targets = _compute_sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values,
            True, remove_accidental_hits, None, "nce_loss", partition_strategy)
        losses = sigmoid_cross_entropy_with_logits(labels=targets, logits=logits)
        return ops.reduce_sum(losses, axis=1)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
                         sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """The softmax cross-entropy per example ([batch]) over the true classes and
    `num_sampled` sampled ones only, as TF1's tf.nn.sampled_softmax_loss: logits
    inputs . weights[k] + biases[k] - log(expected count of k), and by default a sampled
    class that is one of the example's true classes is taken out (its logit set to
    -FLT_MAX). Arguments as nce_loss's; for training only (evaluate with the full softmax).

    Example::

        loss = sf.reduce_mean(sf.nn.sampled_softmax_loss(
            softmax_w, softmax_b, labels=next_words, inputs=hidden, num_sampled=64,
            num_classes=vocab))
    """
    from shardflow.nn import softmax_cross_entropy_with_logits_v2
    with ops.get_default_graph().name_scope(name):
        logits, targets = _compute_sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values,
            True, remove_accidental_hits, seed, "sampled_softmax_loss", partition_strategy)
        return softmax_cross_entropy_with_logits_v2(labels=ops.stop_gradient(targets),
                                                    logits=logits)


__all__ = ["all_candidate_sampler", "compute_accidental_hits", "fixed_unigram_candidate_sampler",
           "learned_unigram_candidate_sampler", "log_uniform_candidate_sampler", "nce_loss",
           "sampled_softmax_loss", "uniform_candidate_sampler"]
