"""TF 1.15's warm-starting: tf.train.warm_start, tf.estimator.WarmStartSettings and VocabInfo.

Example (a new model starts from an earlier one's embedding and layers, its vocabulary grown)::

    vocab = sf.estimator.VocabInfo(new_vocab="new_words.txt", new_vocab_size=5000,
                                   num_oov_buckets=1, old_vocab="old_words.txt")
    sf.train.warm_start("/models/old", vars_to_warm_start=".*",
                        var_name_to_vocab_info={"input_layer/words_embedding/embedding_weights":
                                                vocab})

Nothing runs at the call: each chosen variable's initializer is made to load its value from the
checkpoint (checkpoint_utils' Note [Checkpoint initializers]), so a variable restored from a
later checkpoint of its own keeps that. A partitioned variable is warm-started whole (each part
its slice, whatever the partitioning of the old model). With a VocabInfo, the rows (axis 0) or
columns (axis 1) of the words both vocabularies hold come from the checkpoint, by word; the
others start at zeros, or at `backup_initializer`'s value when given (TF1's VocabInfo).
"""

import collections

import numpy as np

from shardflow import tf_logging as logging
from shardflow.checkpoint_utils import (CheckpointReader, _chain_initializer, _checkpoint_file,
                                        _init_from_reader)


class VocabInfo(collections.namedtuple("VocabInfo", [
        "new_vocab", "new_vocab_size", "num_oov_buckets", "old_vocab", "old_vocab_size",
        "backup_initializer", "axis"])):
    """How to warm-start a variable whose rows (axis=0) or columns (axis=1) follow a vocabulary
    file (one word per line): `new_vocab` with its first `new_vocab_size` words and
    `num_oov_buckets` more rows, from `old_vocab` (its first `old_vocab_size` words; -1: all)."""

    def __new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size=-1,
                backup_initializer=None, axis=0):
        if axis not in (0, 1):
            raise ValueError("VocabInfo: axis must be 0 or 1, not %r" % (axis,))
        if int(new_vocab_size) < 0 or int(num_oov_buckets) < 0:
            raise ValueError("VocabInfo: new_vocab_size and num_oov_buckets must not be "
                             "negative")
        return super().__new__(cls, new_vocab, int(new_vocab_size), int(num_oov_buckets),
                               old_vocab, int(old_vocab_size), backup_initializer, int(axis))


class WarmStartSettings(collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info",
        "var_name_to_prev_var_name"])):
    """An Estimator's warm_start_from: warm_start's arguments (tf.estimator.WarmStartSettings)."""

    def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*",
                var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        if not ckpt_to_initialize_from:
            raise ValueError("WarmStartSettings: ckpt_to_initialize_from is required")
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start,
                               var_name_to_vocab_info or {}, var_name_to_prev_var_name or {})


def _vocab(path, size, what):
    try:
        with open(path, encoding="utf-8") as f:
            words = [line.rstrip("\r\n") for line in f]
    except OSError as e:
        raise ValueError("VocabInfo: cannot read %s vocabulary %s: %s" % (what, path, e)) \
            from None
    if size < 0:
        return words
    if size > len(words):
        raise ValueError("VocabInfo: %s vocabulary %s has %d words, fewer than the %d asked"
                         % (what, path, len(words), size))
    return words[:size]


def _variables(vars_to_warm_start, names_with_vocab):
    """The variables to warm-start, grouped by name: {name: [variable or parts]}."""
    from shardflow.framework import GraphKeys, get_collection
    from shardflow.partitioned_variables import PartitionedVariable
    from shardflow.variables import Variable
    if vars_to_warm_start is None:   # only the trainable variables given a vocabulary
        chosen = [v for v in get_collection(GraphKeys.TRAINABLE_VARIABLES)
                  if _name(v) in names_with_vocab]
    elif isinstance(vars_to_warm_start, str):
        chosen = get_collection(GraphKeys.TRAINABLE_VARIABLES, scope=vars_to_warm_start)
    elif all(isinstance(v, str) for v in vars_to_warm_start):
        chosen = []
        for scope in vars_to_warm_start:
            chosen += [v for v in get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope)
                       if v not in chosen]
    else:
        chosen = []
        for v in vars_to_warm_start:
            if isinstance(v, PartitionedVariable):
                chosen += list(v)
            elif isinstance(v, Variable):
                chosen.append(v)
            else:
                raise TypeError("warm_start: vars_to_warm_start holds regular expressions or "
                                "Variables, not %r" % (v,))
    grouped = {}
    for v in chosen:
        grouped.setdefault(_name(v), []).append(v)
    return grouped


def _name(v):
    info = v._get_save_slice_info()
    return info.full_name if info is not None else v.op.name


def _remapped(old, vocab_info, full_shape, name, tensor_name):
    """(values, found) of `full_shape`: the old tensor's rows/columns moved to where each word
    is in the new vocabulary; found marks them."""
    axis = vocab_info.axis
    new_words = _vocab(vocab_info.new_vocab, vocab_info.new_vocab_size, "new")
    old_words = _vocab(vocab_info.old_vocab, vocab_info.old_vocab_size, "old")
    want_rows = len(new_words) + vocab_info.num_oov_buckets
    if len(full_shape) <= axis or full_shape[axis] != want_rows:
        raise ValueError("warm_start: variable %s has shape %s, but its VocabInfo needs %d along "
                         "axis %d (%d words + %d OOV buckets)" % (
                             name, full_shape, want_rows, axis, len(new_words),
                             vocab_info.num_oov_buckets))
    other = [d for i, d in enumerate(full_shape) if i != axis]
    if old.ndim != len(full_shape) or [d for i, d in enumerate(old.shape) if i != axis] != \
            other or old.shape[axis] < len(old_words):
        raise ValueError("warm_start: tensor %s has shape %s in the checkpoint; variable %s "
                         "with %d old words along axis %d needs %s" % (
                             tensor_name, list(old.shape), name, len(old_words), axis,
                             full_shape[:axis] + [len(old_words)] + full_shape[axis + 1:]))
    where = {}
    for j, word in enumerate(old_words):
        where.setdefault(word, j)
    new_index = [i for i, w in enumerate(new_words) if w in where]
    old_index = [where[new_words[i]] for i in new_index]
    values = np.zeros(full_shape, dtype=old.dtype)
    found = np.zeros(full_shape, dtype=bool)
    put = [slice(None)] * len(full_shape)
    put[axis] = new_index
    values[tuple(put)] = np.take(old, old_index, axis=axis)
    found[tuple(put)] = True
    logging.info("Warm-starting %s from %s: %d of %d words found", name, tensor_name,
                 len(new_index), len(new_words))
    return values, found


def _remap_initializer(var, values, found, backup_initializer, ckpt_file, tensor_name):
    """The variable's initializer becomes: backup_initializer's value (zeros without one, as
    TF1's VocabInfo: new words and OOV rows start at zero), with the found entries taken from
    `values`."""
    from shardflow import ops
    from shardflow.array_ops import where
    g = var.graph
    with g.as_default(), g.name_scope(None), g._device_scope(var.device):
        base = var.op.name + "/warm_start"
        with g.control_dependencies([var.initializer]):
            if backup_initializer is not None:
                current = backup_initializer(var.shape.as_list(), var.dtype)
            else:
                current = ops.zeros(var.shape.as_list(), dtype=var.dtype)
            new = where(ops.constant(found, name=base + "/found"),
                        ops.constant(values, name=base + "/values"), current)
            restore = var.assign(new, read_value=False, name=base + "/initializer")
    _chain_initializer(var, restore, ckpt_file, tensor_name)


def warm_start(ckpt_to_initialize_from, vars_to_warm_start=".*", var_name_to_vocab_info=None,
               var_name_to_prev_var_name=None):
    """Makes the chosen variables start from a checkpoint (see the module's text).

    `vars_to_warm_start`: a regular expression over the trainable variables' names (default
    ".*": every trainable variable), a list of expressions over every global variable, a list
    of Variables, or None (only the trainable variables `var_name_to_vocab_info` names).
    `var_name_to_prev_var_name`: {name now: name in the checkpoint}. ValueError names a
    variable the checkpoint lacks, a shape that differs, or a map entry no chosen variable
    used."""
    vocab_infos = dict(var_name_to_vocab_info or {})
    prev_names = dict(var_name_to_prev_var_name or {})
    ckpt_file = _checkpoint_file(ckpt_to_initialize_from)
    grouped = _variables(vars_to_warm_start, vocab_infos)
    reader = CheckpointReader(ckpt_file) if grouped else None   # read once for every variable
    for name, variables in sorted(grouped.items()):
        tensor_name = prev_names.get(name, name)
        logging.info("Warm-starting variable: %s; prev_var_name: %s", name,
                     prev_names.get(name, "Unchanged"))
        vocab_info = vocab_infos.get(name)
        if vocab_info is None:
            _init_from_reader(reader, ckpt_file, ckpt_file, {tensor_name: variables})
            continue
        if not reader.has_tensor(tensor_name):
            raise ValueError("Tensor %s is not found in %s checkpoint" % (tensor_name,
                                                                         ckpt_file))
        info = variables[0]._get_save_slice_info()
        full_shape = info.full_shape if info is not None else variables[0].shape.as_list()
        old = reader.get_tensor(tensor_name)
        if old.dtype != variables[0].dtype.as_numpy_dtype:
            raise ValueError("warm_start: variable %s is %s but tensor %s in %s is %s" % (
                name, variables[0].dtype.name, tensor_name, ckpt_file, old.dtype))
        values, found = _remapped(old, vocab_info, full_shape, name, tensor_name)
        for var in variables:
            part = var._get_save_slice_info()
            index = part.index() if part is not None else ()
            _remap_initializer(var, values[index], found[index], vocab_info.backup_initializer,
                               ckpt_file, tensor_name)
    unused = sorted(set(prev_names) - set(grouped))
    if unused:
        raise ValueError("warm_start: var_name_to_prev_var_name names variables not warm-started"
                         ": %s" % ", ".join(unused))
    unused = sorted(set(vocab_infos) - set(grouped))
    if unused:
        raise ValueError("warm_start: var_name_to_vocab_info names variables not warm-started: "
                         "%s" % ", ".join(unused))


__all__ = ["VocabInfo", "WarmStartSettings", "warm_start"]
