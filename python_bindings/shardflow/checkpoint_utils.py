"""Reading checkpoints without a model, and initialising variables from one: TF1's
tf.train.checkpoint_exists, get_checkpoint_state, list_variables, load_variable,
load_checkpoint / NewCheckpointReader and init_from_checkpoint.

Checkpoints are those sf.train.Saver writes (runtime/checkpoint.h's format: one file per
checkpoint, named by its prefix, e.g. "model.ckpt-100"). Where a function takes
`ckpt_dir_or_file`, a directory means the newest checkpoint its "checkpoint" state file names.

Example (warm-starting a model under a new scope)::

    sf.train.init_from_checkpoint("/tmp/pretrained", {"encoder/": "student/encoder/"})
    init = sf.train.Scaffold().finalize().init_op      # or sf.variables_initializer(...)
    sess.run(init)                                     # student/encoder/* hold the values

Note [Checkpoint initializers]. init_from_checkpoint reads the values when it is called and
makes, for each mapped variable, an assignment of that constant that runs after the variable's
own initializer (a control dependency on it); it becomes ``variable.initializer``, and the
graph keeps it in ``graph._checkpoint_initializers`` (variable name -> op) so that the init op
of a Scaffold (MonitoredSession, MonitoredTrainingSession) runs it after
global_variables_initializer(). Mapping a variable again chains the new assignment after the
previous one, so the last mapping wins.
"""

import glob
import os
import re

import numpy as np

from shardflow import dtypes, errors
from shardflow import tf_logging as logging


def checkpoint_exists(checkpoint_prefix):
    """Whether a checkpoint (or any file matching the pattern) exists at `checkpoint_prefix`."""
    if os.path.exists(checkpoint_prefix) or os.path.exists(checkpoint_prefix + ".index"):
        return True
    return bool(glob.glob(checkpoint_prefix))


class CheckpointState:
    """The "checkpoint" state file of a directory: model_checkpoint_path (the newest) and
    all_model_checkpoint_paths (those kept, oldest first), as paths in the directory, and
    (when known) the checkpoints' timestamps."""

    def __init__(self, model_checkpoint_path, all_model_checkpoint_paths,
                 all_model_checkpoint_timestamps=None, last_preserved_timestamp=None):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps or [])
        self.last_preserved_timestamp = last_preserved_timestamp

    def __repr__(self):
        return "CheckpointState(model_checkpoint_path=%r, all_model_checkpoint_paths=%r)" % (
            self.model_checkpoint_path, self.all_model_checkpoint_paths)


def _quote(path):
    """`path` as a text-format string, escaped as TensorFlow's text_format writes it (C escapes,
    bytes outside printable ASCII in octal: protobuf's CEscape)."""
    from google.protobuf import text_encoding
    return '"%s"' % text_encoding.CEscape(os.fsencode(path), False)


def _unquote(token):
    """The path a text-format string token ("..." or '...', C escapes, octal and hex bytes)
    stands for; ValueError when it is not one."""
    from google.protobuf import text_encoding
    if len(token) < 2 or token[0] not in "\"'" or token[-1] != token[0]:
        raise ValueError("not a quoted string: %s" % token)
    return os.fsdecode(text_encoding.CUnescape(token[1:-1]))


def _write_state_file(path, latest, kept, timestamps=(), last_preserved=None):
    """Writes a "checkpoint" state file at `path` as TensorFlow's text format (atomically: a
    temporary file, renamed)."""
    lines = ["model_checkpoint_path: %s" % _quote(latest)]
    lines += ["all_model_checkpoint_paths: %s" % _quote(p) for p in kept]
    lines += ["all_model_checkpoint_timestamps: %r" % float(t) for t in timestamps]
    if last_preserved is not None:
        lines.append("last_preserved_timestamp: %r" % float(last_preserved))
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState of `checkpoint_dir` (relative paths joined to it), or None when it
    has no state file, or one that cannot be read or parsed (a warning says why), as TF1's.
    The file is TensorFlow's text format: quoted paths with C escapes (TF's own files read
    the same)."""
    path = os.path.join(checkpoint_dir, latest_filename or "checkpoint")
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    except OSError as e:  # a directory, unreadable
        logging.warning("%s: %s; checkpoint state ignored", path, e)
        return None
    fields = {"model_checkpoint_path": [], "all_model_checkpoint_paths": [],
              "all_model_checkpoint_timestamps": [], "last_preserved_timestamp": []}
    try:
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, raw = line.partition(":")
            key, raw = key.strip(), raw.strip()
            if not sep or key not in fields:
                raise ValueError("unexpected line %r" % line[:80])
            fields[key].append(float(raw) if "timestamp" in key else _unquote(raw))
    except ValueError as e:
        logging.warning("%s: not a checkpoint state file (%s); checkpoint state ignored",
                        path, e)
        return None
    if not fields["model_checkpoint_path"]:
        raise ValueError("Invalid checkpoint state loaded from %s: it names no "
                         "model_checkpoint_path" % checkpoint_dir)

    def joined(name):
        return name if os.path.isabs(name) else os.path.join(checkpoint_dir, name)
    preserved = fields["last_preserved_timestamp"]
    return CheckpointState(joined(fields["model_checkpoint_path"][-1]),
                           [joined(n) for n in fields["all_model_checkpoint_paths"]],
                           fields["all_model_checkpoint_timestamps"],
                           preserved[-1] if preserved else None)


def _checkpoint_file(ckpt_dir_or_file):
    from shardflow.train import latest_checkpoint
    if os.path.isdir(ckpt_dir_or_file):
        path = latest_checkpoint(ckpt_dir_or_file)
        if path is None:
            raise ValueError("Couldn't find 'checkpoint' file or checkpoints in given "
                             "directory %s" % ckpt_dir_or_file)
        return path
    return ckpt_dir_or_file


class CheckpointReader:
    """The tensors of one checkpoint file, by name (TF1's NewCheckpointReader): shardflow's, or
    TensorFlow's (shardflow/tf_checkpoint.py). The file is read once, when the reader is made:
    NotFoundError when there is none, DataLossError when it is damaged."""

    def __init__(self, filename):
        from shardflow import tf_checkpoint
        if not os.path.exists(filename) and not tf_checkpoint.is_tf_checkpoint(filename):
            raise errors.NotFoundError("Unsuccessful TensorSliceReader constructor: Failed to "
                                       "find any matching files for %s" % filename)
        self._filename = filename
        self._tensors = dict(tf_checkpoint.read_checkpoint(filename))

    def has_tensor(self, name):
        return name in self._tensors

    def get_tensor(self, name):
        """The value saved under `name`, as an ndarray."""
        try:
            return self._tensors[name]
        except KeyError:
            raise errors.NotFoundError("Key %s not found in checkpoint %s (it holds: %s)" % (
                name, self._filename, ", ".join(sorted(self._tensors)))) from None

    def get_variable_to_shape_map(self):
        return {n: list(v.shape) for n, v in self._tensors.items()}

    def get_variable_to_dtype_map(self):
        return {n: dtypes.as_dtype(v.dtype.name if v.dtype != object else "string")
                for n, v in self._tensors.items()}

    def debug_string(self):
        return "".join("%s (%s) %s\n" % (n, v.dtype, list(v.shape))
                       for n, v in sorted(self._tensors.items())).encode()


def NewCheckpointReader(filepattern):  # noqa: N802 (TF1's name)
    return CheckpointReader(filepattern)


def load_checkpoint(ckpt_dir_or_file):
    """A CheckpointReader of the checkpoint (or of the newest one in the directory)."""
    return CheckpointReader(_checkpoint_file(ckpt_dir_or_file))


def load_variable(ckpt_dir_or_file, name):
    """The value of variable `name` ("w" or "w:0") in the checkpoint, as an ndarray."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file):
    """[(name, shape)] of every variable in the checkpoint, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


def print_tensors_in_checkpoint_file(file_name, tensor_name, all_tensors,
                                     all_tensor_names=False, count_exclude_pattern=""):
    """Prints a checkpoint's tensors, as TF1's tensorflow.python.tools.inspect_checkpoint:
    with all_tensors or all_tensor_names, every name ("tensor_name:  w") and, with all_tensors,
    its value; else with no tensor_name the names, dtypes and shapes; else that tensor. Then
    "# Total number of params: N" (the elements of the tensors whose names
    count_exclude_pattern, a regular expression, does not match)."""
    reader = NewCheckpointReader(file_name)
    if all_tensors or all_tensor_names:
        for key in sorted(reader.get_variable_to_shape_map()):
            print("tensor_name: ", key)
            if all_tensors:
                print(reader.get_tensor(key))
    elif not tensor_name:
        print(reader.debug_string().decode("utf-8"))
    elif not reader.has_tensor(tensor_name):
        print("Tensor %s not found in checkpoint" % tensor_name)
        return
    else:
        print("tensor_name: ", tensor_name)
        print(reader.get_tensor(tensor_name))
    exclude = re.compile(count_exclude_pattern) if count_exclude_pattern else None
    total = sum(int(np.prod(shape, dtype=np.int64))
                for name, shape in reader.get_variable_to_shape_map().items()
                if exclude is None or not exclude.search(name))
    print("# Total number of params: %d" % total)


# ---- writing the state file, removing checkpoints ------------------------------------------


def generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                    all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None,
                                    last_preserved_timestamp=None):
    """A CheckpointState whose all_model_checkpoint_paths end with model_checkpoint_path (added
    when missing); with a relative `save_dir`, relative paths are made relative to it, as
    TF1's."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if all_model_checkpoint_timestamps is not None and \
            len(all_model_checkpoint_timestamps) != len(paths):
        raise ValueError("Checkpoint timestamps, if provided, must match checkpoint paths (got "
                         "paths %r and timestamps %r)" % (paths, all_model_checkpoint_timestamps))
    if not os.path.isabs(save_dir):
        def relative(p):
            return p if os.path.isabs(p) else os.path.relpath(p, save_dir)
        model_checkpoint_path = relative(model_checkpoint_path)
        paths = [relative(p) for p in paths]
    return CheckpointState(model_checkpoint_path, paths, all_model_checkpoint_timestamps,
                           last_preserved_timestamp)


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None):
    """Writes the state file ("checkpoint", or latest_filename) of `save_dir` naming
    model_checkpoint_path as the newest checkpoint (atomically: a temporary file, renamed)."""
    state = generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                            all_model_checkpoint_paths,
                                            all_model_checkpoint_timestamps,
                                            last_preserved_timestamp)
    os.makedirs(save_dir, exist_ok=True)
    _write_state_file(os.path.join(save_dir, latest_filename or "checkpoint"),
                      state.model_checkpoint_path, state.all_model_checkpoint_paths,
                      state.all_model_checkpoint_timestamps, state.last_preserved_timestamp)


def _checkpoint_files(prefix, meta_graph_suffix="meta"):
    """The files of the checkpoint `prefix` that exist: itself, TF's V2 index and data files,
    and the meta graph."""
    candidates = [prefix, prefix + ".index", prefix + "." + meta_graph_suffix]
    return [p for p in candidates + sorted(glob.glob(prefix + ".data-*")) if os.path.isfile(p)]


def get_checkpoint_mtimes(checkpoint_prefixes):
    """The modification times (seconds since the epoch) of the checkpoints that exist among
    `checkpoint_prefixes`, in order (missing ones are skipped)."""
    times = []
    for prefix in checkpoint_prefixes:
        for path in (prefix, prefix + ".index"):
            if os.path.isfile(path):
                times.append(os.path.getmtime(path))
                break
    return times


def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=None,
                      meta_graph_suffix="meta"):
    """Deletes the files of the checkpoint `checkpoint_prefix` (see _checkpoint_files); logs a
    warning when there are none."""
    files = _checkpoint_files(checkpoint_prefix, meta_graph_suffix)
    if not files:
        logging.warning("Ignoring: no checkpoint files at %s", checkpoint_prefix)
    for path in files:
        os.remove(path)


# ---- init_from_checkpoint ------------------------------------------------------------------


def _set_initializer(variable, value, ckpt_file, tensor_name):
    """Note [Checkpoint initializers]: `variable` is initialised with `value` from now on."""
    from shardflow import ops
    want = variable.dtype.as_numpy_dtype
    if value.dtype != want and not (variable.dtype == dtypes.string and value.dtype == object):
        raise ValueError("variable %s is %s but tensor %s in checkpoint %s is %s" % (
            variable.op.name, variable.dtype.name, tensor_name, ckpt_file, value.dtype))
    shape = variable.shape
    if shape.ndims is not None and (shape.ndims != value.ndim or any(
            d is not None and d != s for d, s in zip(shape.as_list(), value.shape))):
        raise ValueError("Shape of variable %s (%s) doesn't match with shape of tensor %s (%s) "
                         "from checkpoint reader." % (variable.op.name, shape.as_list(),
                                                      tensor_name, list(value.shape)))
    g = variable.graph
    with g.as_default(), g.name_scope(None):
        with g._device_scope(variable.device):
            constant = ops.constant(value, name=variable.op.name + "/checkpoint_value")
        with g.control_dependencies([variable.initializer]):
            restore = variable.assign(constant, read_value=False,
                                      name=variable.op.name + "/checkpoint_initializer")
    _chain_initializer(variable, restore, ckpt_file, tensor_name)


def _chain_initializer(variable, restore, ckpt_file, tensor_name):
    """`restore` (an op running after the variable's initializer) is its initializer now."""
    g = variable.graph
    variable.initializer = restore
    g.__dict__.setdefault("_checkpoint_initializers", {})[variable.op.name] = restore
    logging.debug("Initialize variable %s from checkpoint %s with %s", variable.op.name,
                  ckpt_file, tensor_name)


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """Makes the initializers of the variables `assignment_map` names load their values from
    the checkpoint (Note [Checkpoint initializers]); nothing runs now.

    `assignment_map` maps checkpoint names to current ones: ``{"old/w": "new/w"}`` (or to a
    Variable), ``{"old_scope/": "new_scope/"}`` (every variable under new_scope/ from the same
    name under old_scope/), ``{"/": "new_scope/"}`` (from the checkpoint's root). A partitioned
    variable (its name, the PartitionedVariable or its list of parts) reads the checkpoint's
    whole and each part takes its slice, whatever the partitioning it was saved with. ValueError
    names a tensor the checkpoint lacks, or a shape that differs.
    """
    ckpt_file = _checkpoint_file(ckpt_dir_or_file)
    _init_from_reader(CheckpointReader(ckpt_file), ckpt_dir_or_file, ckpt_file, assignment_map)


def _init_from_reader(reader, ckpt_dir_or_file, ckpt_file, assignment_map):
    """init_from_checkpoint with the checkpoint already read (warm_start reads it once for
    every variable it maps)."""
    from shardflow.framework import get_default_graph
    from shardflow.partitioned_variables import PartitionedVariable
    from shardflow.variables import Variable, global_variables
    available = reader.get_variable_to_shape_map()
    # What a name in the map may mean: a variable, or a partitioned variable (its full name)
    # standing for its parts, each initialised from its slice of the checkpoint's whole.
    by_name, parts = {}, {}
    for v in global_variables(get_default_graph()):
        info = v._get_save_slice_info()
        if info is None:
            by_name.setdefault(v.op.name, [v])
        else:
            by_name.setdefault(info.full_name, []).append(v)
            parts[v.op.name] = v   # named alone ("emb/part_0"): that part only

    def load(tensor_name):
        if tensor_name not in available:
            raise ValueError("Tensor %s is not found in %s checkpoint (it holds: %s)" % (
                tensor_name, ckpt_dir_or_file, ", ".join(sorted(available))))
        return reader.get_tensor(tensor_name)

    def assign(variables, tensor_name):
        value = load(tensor_name)
        for var in variables:
            info = var._get_save_slice_info()
            if info is not None and list(value.shape) == info.full_shape:
                _set_initializer(var, value[info.index()], ckpt_file,
                                 "%s[%s]" % (tensor_name, info.spec))
            else:
                _set_initializer(var, value, ckpt_file, tensor_name)

    for tensor_name, current in sorted(assignment_map.items(), key=lambda kv: kv[0]):
        if isinstance(current, Variable):
            assign([current], tensor_name)
            continue
        if isinstance(current, (PartitionedVariable, list, tuple)):
            assign(list(current), tensor_name)
            continue
        if not isinstance(current, str):
            raise TypeError("assignment_map values are variable names, scopes, Variables or "
                            "PartitionedVariables, not %r" % (current,))
        if current in by_name or current in parts:
            assign(by_name[current] if current in by_name else [parts[current]], tensor_name)
            continue
        scope = current[:current.rindex("/")] if "/" in current else ""
        if not tensor_name.endswith("/"):
            raise ValueError("Assignment map with scope only name %s should map to scope only "
                             "%s. Should be 'scope/': 'other_scope/'." % (scope, tensor_name))
        matched = sorted(n for n in by_name if not scope or n.startswith(scope + "/"))
        for var_name in matched:
            full = var_name[len(scope):]
            if current != "/":
                full = full[1:]
            if tensor_name != "/":
                full = tensor_name + full
            assign(by_name[var_name], full.rstrip("/"))


def with_checkpoint_initializers(init_op, graph=None):
    """`init_op`, grouped with the checkpoint initializers of `graph` when there are any (Note
    [Checkpoint initializers]): run it to initialise every variable, the mapped ones from
    their checkpoint."""
    from shardflow.framework import get_default_graph
    from shardflow.ops import group
    g = graph or get_default_graph()
    restores = list(g.__dict__.get("_checkpoint_initializers", {}).values())
    if not restores:
        return init_op
    with g.as_default():
        return group(init_op, *restores, name="init_from_checkpoint")


__all__ = ["CheckpointReader", "CheckpointState", "NewCheckpointReader", "checkpoint_exists",
           "generate_checkpoint_state_proto", "get_checkpoint_mtimes", "get_checkpoint_state",
           "remove_checkpoint", "update_checkpoint_state", "init_from_checkpoint",
           "list_variables", "load_checkpoint", "load_variable", "print_tensors_in_checkpoint_file",
           "with_checkpoint_initializers"]
