"""TF1's ``tf.train.Saver``: saves and restores variables in shardflow's checkpoint format, keeps
the newest ``max_to_keep`` checkpoints and the ``checkpoint`` state file that
``latest_checkpoint`` reads. Re-exported by ``shardflow.train`` (``sf.train.Saver``)."""

import os
import time

import numpy as np

from shardflow import dtypes, errors
from shardflow.framework import get_default_graph
from shardflow.variables import Variable, global_variables

class Saver:
    """Saves and restores variables, as TensorFlow 1.x's ``tf.train.Saver``.

    Files use shardflow's checkpoint format (runtime/checkpoint.h: checksummed, written
    atomically), the same as ``shardflow train`` and the C++ Saver. Beside them, a ``checkpoint``
    state file names the latest (``latest_checkpoint`` reads it), and only the newest
    ``max_to_keep`` checkpoints written by this Saver are kept.

    Example::

        saver = sf.train.Saver()
        path = saver.save(sess, "/tmp/model/model.ckpt", global_step=step)   # .../model.ckpt-100
        saver.restore(sess, sf.train.latest_checkpoint("/tmp/model"))

    `var_list`: the variables (default: every global variable), or a dict name -> variable to
    save them under other names.
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=None, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        """TF1's arguments. `reshape`: restore a value into a variable of another shape with as
        many elements. `keep_checkpoint_every_n_hours`: besides the newest max_to_keep, keep one
        checkpoint per that many hours instead of deleting it. `allow_empty`: with no variables,
        save and restore do nothing (else ValueError). `pad_step_number`: "-00000100" instead
        of "-100". `filename`: the default save_path of save(). `defer_build`: see build().
        Accepted with no effect here:
        `sharded` (one file per checkpoint: every variable's value comes to this process
        anyway), `restore_sequentially`, `saver_def`, `builder`,
        `write_version` (one format), `save_relative_paths` (the state file always names
        checkpoints relative to its directory)."""
        self._max_to_keep = int(max_to_keep or 0)
        self._keep_every_secs = float(keep_checkpoint_every_n_hours) * 3600.0
        self._next_keep_time = time.time() + self._keep_every_secs
        self._reshape = bool(reshape)
        self._pad_step_number = bool(pad_step_number)
        self._filename = filename
        self._kept = []   # (path, time written), oldest first
        self._build_args = (var_list, name, allow_empty)
        self._built = False
        if not defer_build:
            self.build()

    def build(self):
        """Makes the restore ops, resolving var_list (every global variable when None) now:
        with ``defer_build=True`` variables made after the Saver are included (TF1's). save and
        restore build a deferred Saver themselves if this was not called."""
        if self._built:
            return
        from shardflow.ops import group, placeholder
        var_list, name, allow_empty = self._build_args
        g = get_default_graph()
        var_list, self._tables = _split_tables(var_list, g)
        self._entries = _saver_entries(var_list, g)
        if not self._entries and not self._tables and not allow_empty:
            raise ValueError("Saver: no variables to save (allow_empty=True for a Saver that "
                             "does nothing)")
        names = [n for n, _ in self._entries]
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise ValueError("Saver: at least two variables have the same name: %s (var_list "
                             "holds a variable twice, or two under one key)" % ", ".join(twice))
        # Flat, one per engine variable (the parts of a partitioned one each count).
        self._names = [n for n, parts in self._entries for _ in parts]
        self._vars = [v for _, parts in self._entries for v in parts]
        seen = {}
        for name, v in zip(self._names, self._vars):
            other = seen.setdefault(id(v), name)
            if other != name:   # as TF1's: restoring it twice would let one name win silently
                raise ValueError("Saver: the same variable %s is saved under two names, %s and "
                                 "%s; give it one" % (v.op.name, other, name))
        self._built = True
        if not self._entries:
            self._feeds, self._restore_op = [], None
            return
        with g.name_scope(name or "save"):
            self._feeds = [placeholder(v.dtype, None if self._reshape else _dims(v),
                                       name="restore_%d" % i)
                           for i, v in enumerate(self._vars)]
            self._restore_op = group(*[v.assign(p, read_value=False)
                                       for v, p in zip(self._vars, self._feeds)],
                                     name="restore_all")

    @property
    def last_checkpoints(self):
        """The paths of the checkpoints this Saver keeps, oldest first (TF1's property)."""
        return [p for p, _ in self._kept]

    def set_last_checkpoints(self, last_checkpoints):
        """Makes this Saver manage (and in time delete) these checkpoint paths, oldest first."""
        self._kept = [(p, time.time()) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        """As set_last_checkpoints, with (path, timestamp) pairs."""
        self._kept = [(p, float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths):
        """Takes over checkpoints a previous Saver wrote (those that still exist), e.g. those
        of get_checkpoint_state(dir).all_model_checkpoint_paths after a restart."""
        self._kept = [(p, os.path.getmtime(p)) for p in checkpoint_paths if os.path.exists(p)]

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False,
                          export_scope=None, clear_devices=False, clear_extraneous_savers=False,
                          strip_default_attrs=False, save_debug_info=False):
        """The default graph as a meta graph file (shardflow/meta_graph.py), as
        tf.train.export_meta_graph."""
        from shardflow.meta_graph import export_meta_graph
        return export_meta_graph(filename, collection_list=collection_list, as_text=as_text,
                                 export_scope=export_scope, clear_devices=clear_devices,
                                 saver_def=self._variable_names())

    def _variable_names(self):
        """What the meta graph records of this Saver (meta_graph.py's "saver"): each
        checkpoint name and the handle op of its variable, so that import_meta_graph's Saver
        reads the checkpoint under the same names (a var_list dict renames variables)."""
        self.build()
        return {"variables": [[name, v.op.name] for name, v in zip(self._names, self._vars)]}

    def as_saver_def(self):
        """A SaverDef describing this Saver (TF1's; fields for the record, not a protobuf)."""
        return SaverDef(max_to_keep=self._max_to_keep,
                        keep_checkpoint_every_n_hours=self._keep_every_secs / 3600.0)

    to_proto = as_saver_def     # TF1's other name

    @property
    def saver_def(self):
        """This Saver's SaverDef (TF1's Saver.saver_def)."""
        return self.as_saver_def()

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        """Writes every variable's value to `save_path` (with "-<global_step>" appended when
        given; a Variable or tensor is evaluated) and returns the path written. Beside it, with
        write_meta_graph, `<path>.meta`: the graph, its variables and collections, for
        tf.train.import_meta_graph (shardflow/meta_graph.py)."""
        from shardflow import _shardflow
        if save_path is None:
            save_path = self._filename
        if save_path is None:
            raise ValueError("Saver.save: no save_path (and no filename given to the Saver)")
        self.build()
        if not self._vars and not self._tables:
            return None  # allow_empty: nothing to save
        if global_step is not None:
            if not isinstance(global_step, (int, np.integer)):
                global_step = sess.run(global_step)
            save_path = ("%s-%08d" if self._pad_step_number else "%s-%d") % (save_path,
                                                                           int(global_step))
        values = iter(sess.run([v.value() for v in self._vars]) if self._vars else [])
        tensors = []
        for name, parts in self._entries:
            info = parts[0]._get_save_slice_info()
            if info is None:
                tensors.append((name, next(values)))
                continue
            whole = None   # a partitioned variable: its parts make up the whole
            for part in parts:
                value = next(values)
                if whole is None:
                    whole = np.empty(info.full_shape, dtype=value.dtype)
                whole[part._get_save_slice_info().index()] = value
            tensors.append((name, whole))
        for table in self._tables:
            tensors.extend(table._checkpoint_tensors())
        directory = os.path.dirname(save_path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        _shardflow.save_checkpoint(save_path, tensors)
        if write_meta_graph:
            from shardflow.meta_graph import export_meta_graph
            export_meta_graph(save_path + "." + meta_graph_suffix, graph=sess.graph,
                              saver_def=self._variable_names())
        self._kept = [(p, t) for p, t in self._kept if p != save_path]
        if self._max_to_keep > 0:
            # max_to_keep 0 or None: TF1 deletes nothing and manages nothing (the state file
            # names only the newest checkpoint).
            self._kept.append((save_path, time.time()))
        while self._max_to_keep > 0 and len(self._kept) > self._max_to_keep:
            old, written = self._kept.pop(0)
            if written >= self._next_keep_time:
                # keep_checkpoint_every_n_hours: this one stays (and is no longer managed).
                self._next_keep_time += self._keep_every_secs
                continue
            for path in (old, old + "." + meta_graph_suffix):
                if os.path.exists(path):
                    os.remove(path)
        if write_state:
            _write_checkpoint_state(directory or ".", save_path, self.last_checkpoints,
                                    latest_filename)
        return save_path

    def restore(self, sess, save_path):
        """Sets every variable from the checkpoint at `save_path`: one shardflow wrote, or one
        TensorFlow wrote (`save_path`.index beside it, or that index file itself;
        shardflow/tf_checkpoint.py). Errors: NotFoundError (no checkpoint: also the ValueError
        "not a valid checkpoint" of TF 1.15; or a variable missing from it, naming them),
        InvalidArgumentError (a dtype or shape that is not the variable's), DataLossError (a
        damaged file)."""
        from shardflow.tf_checkpoint import read_checkpoint
        if save_path is None:
            raise ValueError("Saver.restore: save_path is None (latest_checkpoint found none?)")
        self.build()
        if not self._vars and not self._tables:
            return  # allow_empty: nothing to restore
        save_path = _checkpoint_prefix(save_path)
        loaded = dict(read_checkpoint(save_path))   # shardflow's format or TensorFlow's
        missing = [name for name, parts in self._entries if name not in loaded and not (
            parts[0]._get_save_slice_info() is not None and
            all(part._shared_name in loaded for part in parts))]
        missing += [name for table in self._tables for name, _ in table._checkpoint_tensors()
                     if name not in loaded]
        if missing:
            raise errors.NotFoundError(
                "checkpoint %s has no variable(s) %s" % (save_path, ", ".join(missing)))
        feed = {}
        feeds = iter(self._feeds)
        for name, parts in self._entries:
            placeholders = [next(feeds) for _ in parts]
            info = parts[0]._get_save_slice_info()
            if info is None:
                feed[placeholders[0]] = self._checked(name, parts[0], loaded[name], save_path)
            elif name in loaded:
                whole = loaded[name]
                if list(whole.shape) != info.full_shape:
                    raise errors.InvalidArgumentError(
                        "partitioned variable '%s' has shape %s in %s but %s in the model"
                        % (name, list(whole.shape), save_path, info.full_shape))
                for part, p in zip(parts, placeholders):
                    feed[p] = whole[part._get_save_slice_info().index()]
            else:
                # Written before partitioned variables were saved whole: one tensor per part.
                for part, p in zip(parts, placeholders):
                    feed[p] = self._checked(part._shared_name, part, loaded[part._shared_name],
                                            save_path)
        if self._restore_op is not None:
            sess.run(self._restore_op, feed_dict=feed)
        for table in self._tables:
            (keys, _), (values, _) = table._checkpoint_tensors()
            table._restore_checkpoint_tensors(loaded[keys], loaded[values], save_path)

    def _checked(self, name, v, value, save_path):
        """`value` from the checkpoint for variable `v`, reshaped when the Saver may; errors
        name a shape that does not fit."""
        have = dtypes.as_dtype(value.dtype) if value.dtype.kind not in "SUO" else dtypes.string
        if have != v.dtype and not (v.dtype == dtypes.bfloat16 and have == dtypes.float32):
            raise errors.InvalidArgumentError(
                "variable '%s' is %s in %s but %s in the model (a checkpoint's values are not "
                "converted)" % (name, have.name, save_path, v.dtype.name))
        want = _dims(v)
        if self._reshape and want is not None and None not in want:
            if int(np.prod(want)) != value.size:
                raise errors.InvalidArgumentError(
                    "variable '%s' has %d elements in %s but %d in the model (reshape=True "
                    "needs as many)" % (name, value.size, save_path, int(np.prod(want))))
            value = value.reshape(want)
        if want is not None and (len(want) != value.ndim or any(
                w is not None and w != d for w, d in zip(want, value.shape))):
            raise errors.InvalidArgumentError(
                "variable '%s' has shape %s in %s but %s in the model"
                % (name, list(value.shape), save_path, want))
        return value


class _CheckpointNotFoundError(errors.NotFoundError, ValueError):
    """No checkpoint at a path given to restore: NotFoundError, and the ValueError TF 1.15
    raises there."""


def _checkpoint_prefix(save_path):
    """The checkpoint `save_path` names: itself, or the prefix of "<prefix>.index" (a TF
    checkpoint's index file, as a file dialog or glob finds it). _CheckpointNotFoundError when there
    is none."""
    from shardflow.tf_checkpoint import is_tf_checkpoint
    save_path = os.fspath(save_path)
    if save_path.endswith(".index") and is_tf_checkpoint(save_path[:-len(".index")]):
        return save_path[:-len(".index")]
    if os.path.isfile(save_path) or os.path.isfile(save_path + ".index"):
        return save_path
    raise _CheckpointNotFoundError("The passed save_path is not a valid checkpoint: %s" % save_path)


def _split_tables(var_list, g):
    """(var_list without its lookup tables, the tables a Saver saves): those in var_list (a
    list), or with var_list None every table of the graph made with checkpoint=True (TF1's
    SAVEABLE_OBJECTS: MutableHashTable, MutableDenseHashTable; lookup_ops.py)."""
    if var_list is None:
        return None, list(g.__dict__.get("_checkpointed_tables", []))
    if isinstance(var_list, dict):
        return var_list, []
    var_list = list(var_list)
    tables = [v for v in var_list if hasattr(v, "_checkpoint_tensors")]
    return [v for v in var_list if not hasattr(v, "_checkpoint_tensors")], tables


def _saver_entries(var_list, g):
    """[(checkpoint name, [variables])] for a Saver's var_list: a variable alone, or the parts
    of a partitioned variable (each with its SaveSliceInfo) written as one whole under the
    partitioned variable's name, as TF1's. var_list: None (every global variable), a list of
    variables and PartitionedVariables, or a dict name -> a variable, a PartitionedVariable or
    a list of one partitioned variable's parts."""
    from shardflow.partitioned_variables import PartitionedVariable
    if var_list is None:
        var_list = global_variables(g)
    entries, sliced = [], {}

    def add(name, v, key):
        if isinstance(v, PartitionedVariable):
            for part in v:
                add(name if key else v.name, part, key)
            return
        if not isinstance(v, Variable):
            raise TypeError("Saver: var_list holds Variables (or PartitionedVariables), not %r"
                            % (v,))
        info = v._get_save_slice_info()
        if info is None:
            entries.append((name if key else v._shared_name, [v]))
            return
        full = name if key else info.full_name
        if full not in sliced:
            sliced[full] = []
            entries.append((full, sliced[full]))
        sliced[full].append(v)

    if isinstance(var_list, dict):
        for name, v in sorted(var_list.items()):
            if isinstance(v, (list, tuple)):
                for part in v:
                    if not isinstance(part, Variable) or part._get_save_slice_info() is None:
                        raise ValueError("Saver: var_list['%s'] is a list, so it holds the "
                                         "parts of one partitioned variable; %r is not one"
                                         % (name, part))
                    add(name, part, True)
            else:
                add(name, v, True)
    else:
        for v in var_list:
            add(None, v, False)
    for name, parts in sliced.items():
        _check_parts(name, parts)
    return entries


def _check_parts(name, parts):
    """The parts saved as `name` make up one whole: same full shape, each inside it, none
    overlapping, all of it covered."""
    infos = [p._get_save_slice_info() for p in parts]
    full = infos[0].full_shape
    for p, info in zip(parts, infos):
        if info.full_shape != full or len(info.var_offset) != len(full) or any(
                o < 0 or o + n > d for o, n, d in zip(info.var_offset, info.var_shape, full)):
            raise ValueError("Saver: part %s of '%s' does not lie inside its shape %s (offset "
                             "%s, shape %s)" % (p.op.name, name, full, info.var_offset,
                                                info.var_shape))
    for i, a in enumerate(infos):
        for b in infos[i + 1:]:
            if all(ao < bo + bn and bo < ao + an for ao, an, bo, bn in
                   zip(a.var_offset, a.var_shape, b.var_offset, b.var_shape)):
                raise ValueError("Saver: two parts of '%s' overlap (%s and %s)"
                                 % (name, a.spec, b.spec))
    if sum(int(np.prod(i.var_shape)) for i in infos) != int(np.prod(full)):
        raise ValueError("Saver: the parts given of partitioned variable '%s' (%s) do not make "
                         "up its shape %s; give all of them (or the PartitionedVariable)"
                         % (name, ", ".join(p.op.name for p in parts), full))


class SaverDef:
    """TF1's tf.train.SaverDef, for its version constants (Saver(write_version=SaverDef.V2)) and
    as_saver_def(); shardflow writes one checkpoint format whatever the version."""
    LEGACY = 0
    V1 = 1
    V2 = 2

    def __init__(self, max_to_keep=5, keep_checkpoint_every_n_hours=10000.0, version=V2):
        self.max_to_keep = max_to_keep
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self.version = version


def _dims(v):
    """A variable's dimensions as a list (None entries unknown), or None for an unknown rank."""
    try:
        return v.shape.as_list()
    except ValueError:
        return None


def _write_checkpoint_state(directory, latest, kept, latest_filename=None):
    """The "checkpoint" file (or `latest_filename`) TensorFlow writes beside checkpoints (text
    format)."""
    from shardflow.checkpoint_utils import _write_state_file
    kept = [os.path.basename(p) for p in kept]
    if not kept or kept[-1] != os.path.basename(latest):
        kept.append(os.path.basename(latest))   # as TF1's (max_to_keep=0 keeps none)
    _write_state_file(os.path.join(directory, latest_filename or "checkpoint"),
                      os.path.basename(latest), kept)


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The path of the newest checkpoint a Saver wrote in `checkpoint_dir` (its state file
    `latest_filename`, default "checkpoint"), or None."""
    from shardflow.checkpoint_utils import get_checkpoint_state
    try:
        state = get_checkpoint_state(checkpoint_dir, latest_filename)
    except ValueError:  # a state file naming no checkpoint
        return None
    if state is None:
        return None
    path = state.model_checkpoint_path
    # TensorFlow's checkpoints are <path>.index and <path>.data-*.
    return path if os.path.exists(path) or os.path.exists(path + ".index") else None
