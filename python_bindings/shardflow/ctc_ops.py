"""TF1's connectionist temporal classification: tf.nn.ctc_loss (with its gradient),
tf.nn.ctc_greedy_decoder and tf.nn.ctc_beam_search_decoder. As in TF1 the blank is the last
class (num_classes - 1), inputs are unnormalized logits, time-major [max_time, batch,
num_classes] unless time_major=False, and labels are a SparseTensor [batch, max_label_len].

The loss and the decoders are NumPy in PyFunc nodes (they run in the client's process, as
linalg_ops.py's factorizations do): the loss node also returns d loss / d logits (Graves 2012,
eq. 7.28: softmax - the posterior of each class at each step), which the registered gradient
scales by the incoming gradient, so models train through it. Decoders have no gradient.

Example::

    loss = sf.reduce_mean(sf.nn.ctc_loss(labels, logits, seq_len))   # logits [T, B, C]
    (decoded,), neg_sum = sf.nn.ctc_greedy_decoder(logits, seq_len)
"""

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.framework import convert_to_tensor, get_default_graph
from shardflow.gradients import RegisterGradient
from shardflow.script_ops import py_func
from shardflow.sparse_tensor import SparseTensor, convert_to_sparse


def _log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def _label_rows(indices, values, batch):
    """The label sequence of each batch row of a SparseTensor [batch, max_len] (row-major)."""
    rows = [[] for _ in range(batch)]
    order = np.lexsort((indices[:, 1], indices[:, 0])) if len(indices) else []
    for k in order:
        rows[int(indices[k, 0])].append(int(values[k]))
    return rows


def _ctc_one(logp, label, blank, merge_repeated):
    """-log p(label | logp) and its gradient with respect to the logits, for one sequence
    (logp: [T, C] log-softmax). States: the label with blanks around and between its labels."""
    steps, classes = logp.shape
    ext = np.full(2 * len(label) + 1, blank, np.int64)
    ext[1::2] = label
    u = len(ext)
    stay = (ext == blank) | merge_repeated          # u -> u at the next step
    skip = np.zeros(u, bool)                        # u - 2 -> u
    skip[2:] = (ext[2:] != blank) & ~(merge_repeated & (ext[2:] == ext[:-2]))
    neg = -np.inf
    alpha = np.full((steps, u), neg)
    alpha[0, 0] = logp[0, blank]
    if u > 1:
        alpha[0, 1] = logp[0, ext[1]]
    for t in range(1, steps):
        prev = alpha[t - 1]
        terms = [np.where(stay, prev, neg), np.concatenate([[neg], prev[:-1]]),
                 np.where(skip, np.concatenate([[neg, neg], prev[:-2]])[:u], neg)]
        alpha[t] = np.logaddexp.reduce(terms, axis=0) + logp[t, ext]
    beta = np.full((steps, u), neg)                 # excluding step t's own emission
    beta[-1, -1] = 0.0
    if u > 1:
        beta[-1, -2] = 0.0
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1] + logp[t + 1, ext]
        after_skip = np.where(skip, nxt, neg)
        terms = [np.where(stay, nxt, neg), np.concatenate([nxt[1:], [neg]]),
                 np.concatenate([after_skip[2:], [neg, neg]])[:u]]
        beta[t] = np.logaddexp.reduce(terms, axis=0)
    log_p = np.logaddexp.reduce(alpha[-1, -2:] if u > 1 else alpha[-1, -1:])
    if not np.isfinite(log_p):
        return np.inf, np.zeros_like(logp)
    posterior = np.zeros((steps, classes))
    for s in range(u):
        posterior[:, ext[s]] += np.exp(alpha[:, s] + beta[:, s] - log_p)
    return -log_p, np.exp(logp) - posterior


def _required_steps(label, merge_repeated):
    repeats = sum(1 for a, b in zip(label, label[1:]) if a == b)
    return len(label) + (repeats if merge_repeated else 0)


def _collapse(label):
    return [c for k, c in enumerate(label) if k == 0 or c != label[k - 1]]


def _ctc_loss_numpy(indices, values, dense_shape, logits, seq_len, collapse, merge_repeated,
                    ignore_longer):
    steps, batch, classes = logits.shape
    blank = classes - 1
    losses = np.zeros(batch)
    grad = np.zeros(logits.shape)
    for b, label in enumerate(_label_rows(indices, values, batch)):
        n = int(seq_len[b])
        if n > steps or n < 0:
            raise ValueError("ctc_loss: sequence_length[%d] = %d is not in [0, %d]"
                             % (b, n, steps))
        if any(c < 0 or c >= blank for c in label):
            raise ValueError("ctc_loss: labels of batch row %d must be in [0, %d) (class %d "
                             "is the blank), got %s" % (b, blank, blank, label))
        if collapse:
            label = _collapse(label)
        need = _required_steps(label, merge_repeated)
        if need > n and ignore_longer != "inf":
            if ignore_longer:
                continue
            raise ValueError("ctc_loss: not enough time for the labels of batch row %d "
                             "(required: %d, available: %d); pass "
                             "ignore_longer_outputs_than_inputs=True to skip such rows"
                             % (b, need, n))
        if n == 0:
            losses[b] = np.inf if need > 0 else 0.0
            continue
        losses[b], grad[:n, b] = _ctc_one(_log_softmax(logits[:n, b].astype(np.float64)),
                                          label, blank, merge_repeated)
    return losses, grad


@RegisterGradient("SfCtcLoss")
def _ctc_loss_grad(op, grad_loss, _):
    logits_grad = op.outputs[1]
    scale = ops.reshape(grad_loss, [1, -1, 1])
    return [None, None, None, scale * logits_grad, None]


def _time_major(inputs, time_major):
    inputs = convert_to_tensor(inputs)
    if inputs.shape.ndims not in (None, 3):
        raise ValueError("CTC takes logits [max_time, batch, num_classes], got shape %s"
                         % inputs.shape)
    return inputs if time_major else ops.transpose(inputs, [1, 0, 2])


def ctc_loss(labels, inputs=None, sequence_length=None, preprocess_collapse_repeated=False,
             ctc_merge_repeated=True, ignore_longer_outputs_than_inputs=False, time_major=True,
             logits=None):
    """TF1's tf.nn.ctc_loss: -log p(labels | inputs) per batch row, a float [batch].

    labels: an int32 SparseTensor [batch, max_label_len] of classes in [0, num_classes - 1);
    inputs (or logits): unnormalized [max_time, batch, num_classes] (time_major=False:
    [batch, max_time, num_classes]); sequence_length: int32 [batch], the steps of each row.
    Gradients flow to `inputs`. A row whose labels need more steps than it has is an error
    when the step runs, or a loss of 0 (and no gradient) with
    ignore_longer_outputs_than_inputs=True."""
    inputs = inputs if inputs is not None else logits
    if inputs is None or sequence_length is None:
        raise ValueError("ctc_loss needs inputs and sequence_length")
    return _ctc_loss(labels, inputs, sequence_length, preprocess_collapse_repeated,
                     ctc_merge_repeated, ignore_longer_outputs_than_inputs, time_major)


def _ctc_loss(labels, inputs, sequence_length, preprocess_collapse_repeated,
              ctc_merge_repeated, ignore_longer_outputs_than_inputs, time_major):
    """ctc_loss's work; ignore_longer_outputs_than_inputs may also be "inf": a row whose
    labels do not fit its steps gets an infinite loss (ctc_loss_v2's dense labels)."""
    if not isinstance(labels, SparseTensor):
        labels = convert_to_sparse(labels, "labels")
    inputs = _time_major(inputs, time_major)
    seq_len = ops.cast(convert_to_tensor(sequence_length), dtypes.int32)

    def run(indices, values, dense_shape, x, lengths):
        loss, grad = _ctc_loss_numpy(indices, values, dense_shape, x, lengths,
                                     preprocess_collapse_repeated, ctc_merge_repeated,
                                     ignore_longer_outputs_than_inputs)
        return [loss.astype(x.dtype), grad.astype(x.dtype)]

    with get_default_graph().gradient_override_map({"PyFunc": "SfCtcLoss"}):
        loss, grad = py_func(run, [labels.indices, labels.values, labels.dense_shape, inputs,
                                   seq_len], [inputs.dtype, inputs.dtype], stateful=False,
                             name="CTCLoss")
    dims = inputs.shape.as_list() if inputs.shape.ndims is not None else [None] * 3
    if dims[1] is not None:
        loss = ops.reshape(loss, [dims[1]])
    return loss


def ctc_loss_v2(labels, logits, label_length, logit_length, logits_time_major=True,
                unique=None, blank_index=None, name=None):
    """TF 1.15's tf.nn.ctc_loss_v2 (TF2's tf.nn.ctc_loss): -log p(labels | logits) per batch
    row. `labels` is a dense int [batch, max_label_len] with `label_length` [batch] (blank
    class blank_index, default 0), or a SparseTensor (blank_index required; ctc_loss's rules,
    label_length unused); logits [frames, batch, classes] (logits_time_major=False: [batch,
    frames, classes]) with `logit_length` [batch]. Dense labels that cannot fit their frames
    get an infinite loss, as TF's. blank_index < 0 counts from num_classes; a blank other
    than the last class is moved there (and the labels above it shifted down), as TF's."""
    logits = convert_to_tensor(logits)
    classes = logits.shape.as_list()[2] if logits.shape.ndims == 3 else None
    sparse = isinstance(labels, SparseTensor) or type(labels).__name__ == "SparseTensorValue"
    if sparse and blank_index is None:
        raise ValueError("ctc_loss_v2: blank_index must be given with SparseTensor labels")
    if blank_index is None:
        blank_index = 0
    if blank_index < 0:
        if classes is None:
            raise ValueError("ctc_loss_v2: a negative blank_index needs the number of classes "
                             "(logits' last dimension) known, got shape %s" % logits.shape)
        blank_index += classes
    if sparse:
        labels = convert_to_sparse(labels, "labels")
    else:
        labels = convert_to_tensor(labels)
        lengths = ops.cast(convert_to_tensor(label_length), dtypes.int32)
        from shardflow.array_composites import sequence_mask
        where = array_ops.where(sequence_mask(lengths, ops.shape(labels)[1]))
        labels = SparseTensor(where, ops.cast(array_ops.gather_nd(labels, where), dtypes.int32),
                              ops.cast(ops.shape(labels), dtypes.int64))
    if classes is None or blank_index != classes - 1:
        if classes is None:
            raise ValueError("ctc_loss_v2: moving the blank (class %d) last needs the number "
                             "of classes known, got logits of shape %s"
                             % (blank_index, logits.shape))
        logits = ops.concat([logits[:, :, :blank_index], logits[:, :, blank_index + 1:],
                             logits[:, :, blank_index:blank_index + 1]], 2)
        values = ops.cast(labels.values, dtypes.int32)
        labels = SparseTensor(labels.indices,
                              array_ops.where(ops.less(values, blank_index), values,
                                              values - 1), labels.dense_shape)
    return _ctc_loss(labels, logits, logit_length, False, True,
                     False if sparse else "inf", logits_time_major)


def _decoded_sparse(paths, batch):
    """[SparseTensorValue parts] of label sequences [batch]: indices, values, dense_shape."""
    indices = [(b, k) for b, p in enumerate(paths) for k in range(len(p))]
    values = [c for p in paths for c in p]
    longest = max([len(p) for p in paths] + [0])
    return (np.asarray(indices, np.int64).reshape(-1, 2), np.asarray(values, np.int64),
            np.asarray([batch, longest], np.int64))


def _sparse_outputs(parts):
    return SparseTensor(ops.reshape(parts[0], [-1, 2]), ops.reshape(parts[1], [-1]),
                        ops.reshape(parts[2], [2]))


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True):
    """TF1's tf.nn.ctc_greedy_decoder: the most likely class at each step, repeats merged
    (merge_repeated) and blanks removed. Returns ([decoded], neg_sum_logits): decoded an int64
    SparseTensor [batch, longest]; neg_sum_logits [batch, 1], minus the sum over the steps of
    the largest logit."""
    inputs = _time_major(inputs, True)
    seq_len = ops.cast(convert_to_tensor(sequence_length), dtypes.int32)

    def run(x, lengths):
        steps, batch, classes = x.shape
        paths, scores = [], np.zeros((batch, 1), x.dtype)
        for b in range(batch):
            n = int(lengths[b])
            best = x[:n, b].argmax(axis=-1)
            scores[b, 0] = -x[:n, b].max(axis=-1).sum() if n else 0
            paths.append([int(c) for k, c in enumerate(best) if c != classes - 1 and
                          not (merge_repeated and k > 0 and c == best[k - 1])])
        return list(_decoded_sparse(paths, batch)) + [scores]

    outs = py_func(run, [inputs, seq_len], [dtypes.int64, dtypes.int64, dtypes.int64,
                                            inputs.dtype], stateful=False, name="CTCGreedy")
    return [_sparse_outputs(outs[:3])], ops.reshape(outs[3], [-1, 1])


def _prefix_beam_search(logp, beam_width, top_paths):
    """CTC prefix beam search over one sequence's log-softmax [T, C]: the top_paths most likely
    label sequences and their log probabilities (summed over their alignments in the beam)."""
    blank = logp.shape[1] - 1
    beams = {(): (0.0, -np.inf)}                    # prefix -> (log p ending blank, non-blank)
    for t in range(logp.shape[0]):
        nxt = {}

        def add(prefix, blank_p, label_p):
            b, nb = nxt.get(prefix, (-np.inf, -np.inf))
            nxt[prefix] = (np.logaddexp(b, blank_p), np.logaddexp(nb, label_p))
        for prefix, (pb, pnb) in beams.items():
            total = np.logaddexp(pb, pnb)
            add(prefix, total + logp[t, blank], -np.inf)
            for c in range(blank):
                p = logp[t, c]
                if prefix and prefix[-1] == c:
                    add(prefix, -np.inf, pnb + p)               # the same label, extended
                    add(prefix + (c,), -np.inf, pb + p)         # a new one after a blank
                else:
                    add(prefix + (c,), -np.inf, total + p)
        ranked = sorted(nxt.items(), key=lambda kv: -np.logaddexp(*kv[1]))
        beams = dict(ranked[:beam_width])
    ranked = sorted(beams.items(), key=lambda kv: -np.logaddexp(*kv[1]))[:top_paths]
    return [(list(p), float(np.logaddexp(*s))) for p, s in ranked]


def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1,
                            merge_repeated=True):
    """TF1's tf.nn.ctc_beam_search_decoder: a CTC prefix beam search keeping `beam_width`
    label sequences per step. Returns (decoded, log_probabilities): decoded a list of
    `top_paths` int64 SparseTensors [batch, longest] (the k-th most likely sequences);
    log_probabilities [batch, top_paths]. As TF1 does, merge_repeated=True also merges equal
    consecutive labels of the sequences found."""
    if top_paths < 1 or top_paths > beam_width:
        raise ValueError("ctc_beam_search_decoder: top_paths must be in [1, beam_width], got %d"
                         % top_paths)
    inputs = _time_major(inputs, True)
    seq_len = ops.cast(convert_to_tensor(sequence_length), dtypes.int32)

    def run(x, lengths):
        batch = x.shape[1]
        found = []
        for b in range(batch):
            logp = _log_softmax(x[:int(lengths[b]), b].astype(np.float64))
            paths = _prefix_beam_search(logp, beam_width, top_paths)
            paths += [([], -np.inf)] * (top_paths - len(paths))
            found.append([(_collapse(p) if merge_repeated else p, s) for p, s in paths])
        outs = []
        for k in range(top_paths):
            outs.extend(_decoded_sparse([found[b][k][0] for b in range(batch)], batch))
        log_probs = np.array([[s for _, s in row] for row in found], x.dtype)
        return outs + [log_probs.reshape(batch, top_paths)]

    outs = py_func(run, [inputs, seq_len], [dtypes.int64] * (3 * top_paths) + [inputs.dtype],
                   stateful=False, name="CTCBeamSearch")
    decoded = [_sparse_outputs(outs[3 * k:3 * k + 3]) for k in range(top_paths)]
    return decoded, ops.reshape(outs[-1], [-1, top_paths])


def _levenshtein(a, b):
    """Insertions, deletions and substitutions that turn sequence a into b."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[len(b)]


_MAX_EDIT_DISTANCE_OUTPUTS = 1 << 26


def edit_distance(hypothesis, truth, normalize=True, name="edit_distance"):
    """TF1's tf.edit_distance: the Levenshtein distance between the sequences of two
    SparseTensors of one rank R, a float32 tensor of rank R - 1 (the sequences are along the
    last dimension; the output's shape is the larger of the two dense shapes without it).
    normalize divides by the truth's length: an empty truth gives inf against a non-empty
    hypothesis, as TF's; positions neither has are 0. Typical use: the label error rate of a
    CTC decoder, ``sf.reduce_mean(sf.edit_distance(sf.cast(decoded[0], sf.int32), labels))``."""
    h = convert_to_sparse(hypothesis, "edit_distance: hypothesis")
    t = convert_to_sparse(truth, "edit_distance: truth")
    if h.values.dtype != t.values.dtype:
        raise TypeError("edit_distance: hypothesis has %s values but truth %s; cast one"
                        % (h.values.dtype.name, t.values.dtype.name))
    rank = h.dense_shape.shape.as_list()[0] if h.dense_shape.shape.ndims == 1 else None
    other = t.dense_shape.shape.as_list()[0] if t.dense_shape.shape.ndims == 1 else None
    if rank is not None and other is not None and rank != other:
        raise ValueError("edit_distance: hypothesis has rank %d but truth rank %d" % (rank, other))

    def run(hi, hv, hs, ti, tv, ts):
        if len(hs) != len(ts) or len(hs) < 1:
            raise ValueError("edit_distance: hypothesis has dense shape %s and truth %s: the "
                             "ranks must be equal and at least 1" % (list(hs), list(ts)))
        shape = [int(d) for d in np.maximum(hs[:-1], ts[:-1])]
        count = 1
        for d in shape:
            count *= max(d, 0)
        if count > _MAX_EDIT_DISTANCE_OUTPUTS:
            raise ValueError("edit_distance: the output would have %d elements (dense shapes %s "
                             "and %s); at most %d" % (count, list(hs), list(ts),
                                                      _MAX_EDIT_DISTANCE_OUTPUTS))
        out = np.zeros(shape, np.float32)
        seqs = []
        for idx, vals, dense in ((hi, hv, hs), (ti, tv, ts)):
            idx = np.asarray(idx).reshape(-1, len(dense))
            if len(idx) != len(vals) or ((idx < 0) | (idx >= dense)).any():
                raise ValueError("edit_distance: a SparseTensor's indices are out of its dense "
                                 "shape %s or do not match its %d values" % (list(dense),
                                                                             len(vals)))
            groups = {}
            for i, v in zip(idx.tolist(), vals):
                groups.setdefault(tuple(i[:-1]), []).append((i[-1], v))
            seqs.append({k: [v for _, v in sorted(g, key=lambda e: e[0])]
                         for k, g in groups.items()})
        with np.errstate(divide="ignore", invalid="ignore"):
            for key in set(seqs[0]) | set(seqs[1]):
                a, b = seqs[0].get(key, []), seqs[1].get(key, [])
                d = np.float32(_levenshtein(a, b))
                out[key] = d / np.float32(len(b)) if normalize else d
        return out

    hs, ts = ops.cast(h.dense_shape, dtypes.int64), ops.cast(t.dense_shape, dtypes.int64)
    out = py_func(run, [h.indices, h.values, hs, t.indices, t.values, ts], dtypes.float32,
                  stateful=False, name=name)
    if rank is not None:
        out.set_shape([None] * (rank - 1))
    return out


__all__ = ["ctc_beam_search_decoder", "ctc_greedy_decoder", "ctc_loss", "ctc_loss_v2",
           "edit_distance"]
