"""TF 1.15's object-based checkpoints in graph mode: tf.train.Checkpoint and
tf.train.CheckpointManager.

A Checkpoint saves the variables reachable from the objects it is given, each under the path of
attributes that leads to it ("model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"),
so a program that builds the same objects again restores them whatever the graph names its
variables. What is followed:

- a Variable (a leaf);
- another Checkpoint (its own objects);
- a Keras model: its layers that have weights, as "layer_with_weights-<i>", and its optimizer
  once compiled and trained ("optimizer");
- a Keras layer: its weights by their short names ("kernel", "bias");
- an optimizer (tf.train's or Keras's): the variables its updates made, by their graph names;
- lists, tuples and dicts of these (by index or key), and any other object's attributes that
  hold them (a custom "module" class).

Example::

    ckpt = tf.train.Checkpoint(model=model, optimizer=opt, step=global_step)
    manager = tf.train.CheckpointManager(ckpt, "/tmp/run", max_to_keep=3)
    ...
    manager.save()                                  # in a session (the default one)
    ckpt.restore(manager.latest_checkpoint).initialize_or_restore(sess)

Not as in TF: the file is shardflow's checkpoint format (not TF's object graph), and restoring
is immediate, not deferred: variables created after restore() are restored by
initialize_or_restore / run_restore_ops, when the status's ops are built.
"""

import os
import re

import numpy as np

from shardflow.variables import Variable

_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def _session(session):
    from shardflow.session import get_default_session
    if session is not None:
        return session
    if get_default_session() is not None:
        return get_default_session()
    from shardflow.keras import backend as K
    return K.get_session()


def _initialize(sess, variables):
    """Runs the variables' initializers; in Keras's session, also marks them initialised there
    (keras.backend.get_session initialises the variables it has not seen)."""
    from shardflow.keras import backend as K
    from shardflow.variables import variables_initializer
    sess.run(variables_initializer(variables))
    if getattr(K, "_session", None) is sess:
        K._initialized.update(v.name for v in variables)


def _short(v):
    """A variable's name without its scopes and ":0" ("dense/kernel:0" -> "kernel")."""
    return v.op.name.rsplit("/", 1)[-1]


def _children(obj):
    """(name, child) pairs of a trackable object, in a fixed order."""
    from shardflow.keras.layers import Layer as KerasLayer
    from shardflow.keras.models import Model
    from shardflow.keras.optimizers import Optimizer as KerasOptimizer
    from shardflow.train import Optimizer
    if isinstance(obj, Checkpoint):
        return sorted(obj._objects.items())
    if isinstance(obj, Model):
        with_weights = [layer for layer in obj.layers if layer.weights]
        out = [("layer_with_weights-%d" % i, layer) for i, layer in enumerate(with_weights)]
        if getattr(obj, "optimizer", None) is not None:
            out.append(("optimizer", obj.optimizer))
        return out
    if isinstance(obj, KerasLayer):
        return [(_short(v), v) for v in obj.weights]
    if isinstance(obj, KerasOptimizer):
        return [(v.op.name, v) for v in obj.variables()]
    if isinstance(obj, Optimizer):
        return [(v.op.name, v) for v in obj.variables()]
    if isinstance(obj, dict):
        return sorted((str(k), v) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj)]
    return sorted((k, v) for k, v in vars(obj).items() if not k.startswith("_")
                  and _tracks_something(v)) if hasattr(obj, "__dict__") else []


def _tracks_something(value):
    from shardflow.keras.layers import Layer as KerasLayer
    from shardflow.keras.optimizers import Optimizer as KerasOptimizer
    from shardflow.train import Optimizer
    if isinstance(value, (Variable, Checkpoint, KerasLayer, KerasOptimizer, Optimizer)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_tracks_something(v) for v in value)
    if isinstance(value, dict):
        return any(_tracks_something(v) for v in value.values())
    return False


def _variables(root):
    """{checkpoint key: Variable} of everything reachable from `root`; a variable reached by
    two paths is saved once, under the first. An optimizer's slot for a variable found too is
    keyed by that variable's path ("<path>/.OPTIMIZER_SLOT/<optimizer path>/<slot>", as TF), so
    it matches in a program whose graph names its variables otherwise."""
    from shardflow.keras.optimizers import Optimizer as KerasOptimizer
    from shardflow.train import Optimizer
    found, seen_vars, seen_objects, slots = {}, set(), set(), []

    def walk(obj, path):
        if isinstance(obj, Variable):
            if id(obj) not in seen_vars:
                seen_vars.add(id(obj))
                found[path + _SUFFIX] = obj
            return
        if id(obj) in seen_objects:
            return
        seen_objects.add(id(obj))
        if isinstance(obj, (Optimizer, KerasOptimizer)):
            slots.extend((path, v) for _, v in _children(obj))
            return
        for name, child in _children(obj):
            walk(child, "%s/%s" % (path, _escape(name)) if path else _escape(name))

    walk(root, "")
    owners = {v.op.name: key[:-len(_SUFFIX)] for key, v in found.items()}
    for path, v in slots:
        if id(v) in seen_vars:
            continue
        seen_vars.add(id(v))
        owner, _, slot = v.op.name.rpartition("/")
        if owner in owners:
            key = "%s/.OPTIMIZER_SLOT/%s/%s" % (owners[owner], path, _escape(slot))
        else:  # a step count, a learning rate: by its last name, stable across graphs
            key = "%s/%s" % (path, _escape(slot))
            n = 1
            while key + _SUFFIX in found:
                key, n = "%s/%s_%d" % (path, _escape(slot), n), n + 1
        found[key + _SUFFIX] = v
    return found


def _escape(name):
    """A path component: "/" and "." escaped as TF's object-graph keys do."""
    return name.replace(".", "..").replace("/", ".S")


class CheckpointLoadStatus:
    """What Checkpoint.restore returns: check what matched, then restore in a session."""

    def __init__(self, checkpoint, save_path):
        from shardflow import _shardflow
        self._checkpoint = checkpoint
        self._save_path = save_path
        self._stored = set(name for name, _ in _shardflow.load_checkpoint(save_path))

    def _matched(self):
        have = _variables(self._checkpoint)
        return {k: v for k, v in have.items() if k in self._stored}, have

    def assert_consumed(self):
        """Raises AssertionError unless every value in the file has a variable and every
        variable a value."""
        matched, have = self._matched()
        unused = sorted(self._stored - set(have) - {"save_counter" + _SUFFIX})
        missing = sorted(set(have) - self._stored)
        if unused or missing:
            raise AssertionError(
                "checkpoint %s does not match the objects: %s%s" % (
                    self._save_path, "values without a variable: %s; " % unused if unused
                    else "", "variables without a value: %s" % missing if missing else ""))
        return self

    def assert_existing_objects_matched(self):
        """Raises AssertionError if a variable that exists now has no value in the file."""
        matched, have = self._matched()
        missing = sorted(set(have) - set(matched))
        if missing:
            raise AssertionError("checkpoint %s has no value for %s"
                                 % (self._save_path, ", ".join(missing)))
        return self

    def assert_nontrivial_match(self):
        """Raises AssertionError when no variable matched."""
        if not self._matched()[0]:
            raise AssertionError("nothing in %s matches the checkpoint's objects"
                                 % self._save_path)
        return self

    def expect_partial(self):
        """Accepts values of the file that no object uses (TF's silences its warning)."""
        return self

    def run_restore_ops(self, session=None):
        """Sets every variable that has a value in the file."""
        matched, _ = self._matched()
        if matched:
            from shardflow.train import Saver
            Saver(var_list=matched).restore(_session(session), self._save_path)

    def initialize_or_restore(self, session=None):
        """Restores the variables the file has a value for and initialises the others."""
        matched, have = self._matched()
        sess = _session(session)
        rest = [v for k, v in have.items() if k not in matched]
        if rest:
            _initialize(sess, rest)
        self.run_restore_ops(sess)


class InitializationOnlyStatus(CheckpointLoadStatus):
    """restore(None): nothing to restore; initialize_or_restore initialises everything."""

    def __init__(self, checkpoint):
        self._checkpoint = checkpoint
        self._save_path = None
        self._stored = set()

    def assert_consumed(self):
        raise AssertionError("no checkpoint was restored (restore(None))")

    def run_restore_ops(self, session=None):
        return None


class Checkpoint:
    """tf.train.Checkpoint(**objects): see the module docstring.

    save(file_prefix) writes "<file_prefix>-<n>" (n counts this object's saves, kept in the
    `save_counter` variable, which is saved too) and records it in the directory's
    "checkpoint" file; write(file_prefix) writes exactly there; restore(path) gives a
    CheckpointLoadStatus. All three run in `session`, else the default session, else Keras's.
    """

    def __init__(self, **kwargs):
        for name, value in kwargs.items():
            if not _tracks_something(value) and not hasattr(value, "__dict__"):
                raise ValueError("Checkpoint(%s=%r): give variables, Keras models and layers, "
                                 "optimizers or other Checkpoints" % (name, value))
        self._objects = dict(kwargs)
        self._save_counter = None

    def __getattr__(self, name):
        objects = self.__dict__.get("_objects", {})
        if name in objects:
            return objects[name]
        raise AttributeError(name)

    @property
    def save_counter(self):
        """The number of save() calls, an int64 Variable made at the first save."""
        return self._save_counter

    def _counter(self, sess):
        if self._save_counter is None:
            from shardflow import dtypes, ops
            g = sess.graph
            with g.as_default(), g.control_dependencies(None), g.name_scope(None):
                self._save_counter = Variable(ops.constant(0, dtype=dtypes.int64),
                                              name="save_counter", trainable=False)
            _initialize(sess, [self._save_counter])
        return self._save_counter

    def write(self, file_prefix, session=None):
        """Writes the variables' values at `file_prefix`; returns the path."""
        from shardflow.train import Saver
        sess = _session(session)
        found = _variables(self)
        if self._save_counter is not None:
            found["save_counter" + _SUFFIX] = self._save_counter
        if not found:
            raise ValueError("Checkpoint.write: the objects hold no variables yet (build the "
                             "model first)")
        return Saver(var_list=found).save(sess, file_prefix, write_meta_graph=False,
                                          write_state=False)

    def save(self, file_prefix, session=None):
        """save_counter += 1, then writes "<file_prefix>-<save_counter>" and makes it the
        directory's latest checkpoint; returns the path."""
        from shardflow.checkpoint_utils import update_checkpoint_state
        sess = _session(session)
        counter = self._counter(sess)
        number = int(sess.run(counter.assign_add(1)))
        path = self.write("%s-%d" % (file_prefix, number), sess)
        directory = os.path.dirname(os.path.abspath(path))
        update_checkpoint_state(directory, path)
        return path

    def restore(self, save_path, session=None):
        """A CheckpointLoadStatus for `save_path` (None: nothing to restore); the values are set
        by its run_restore_ops / initialize_or_restore. A missing or damaged file is an error
        here."""
        if save_path is None:
            return InitializationOnlyStatus(self)
        status = CheckpointLoadStatus(self, save_path)
        counter_key = "save_counter" + _SUFFIX
        if counter_key in status._stored:
            from shardflow import _shardflow
            stored = dict(_shardflow.load_checkpoint(save_path))
            sess = _session(session)
            counter = self._counter(sess)
            sess.run(counter.assign(np.int64(stored[counter_key])))
        return status


class CheckpointManager:
    """Keeps the last `max_to_keep` checkpoints of `checkpoint` in `directory`, as
    "<directory>/<checkpoint_name>-<n>", and the directory's "checkpoint" state file."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt"):
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError("CheckpointManager: max_to_keep must be positive or None, got %r"
                             % (max_to_keep,))
        self._checkpoint = checkpoint
        self._directory = directory
        self._max_to_keep = max_to_keep
        self._prefix = os.path.join(directory, checkpoint_name)
        from shardflow.train import latest_checkpoint
        latest = latest_checkpoint(directory)
        pattern = re.compile(re.escape(self._prefix) + r"-(\d+)$")
        self._checkpoints = []
        if latest is not None:
            from shardflow.checkpoint_utils import get_checkpoint_state
            state = get_checkpoint_state(directory)
            self._checkpoints = [p for p in state.all_model_checkpoint_paths
                                 if pattern.match(p) and os.path.exists(p)]

    @property
    def directory(self):
        return self._directory

    @property
    def latest_checkpoint(self):
        """The newest checkpoint this manager knows of, or None."""
        return self._checkpoints[-1] if self._checkpoints else None

    @property
    def checkpoints(self):
        """The kept checkpoints, oldest first."""
        return list(self._checkpoints)

    def save(self, checkpoint_number=None, session=None):
        """Saves (numbered by `checkpoint_number`, else by the checkpoint's save counter),
        deletes the oldest beyond max_to_keep, updates the state file; returns the path."""
        from shardflow.checkpoint_utils import update_checkpoint_state
        sess = _session(session)
        os.makedirs(self._directory, exist_ok=True)
        if checkpoint_number is None:
            counter = self._checkpoint._counter(sess)
            number = int(sess.run(counter.assign_add(1)))
        else:
            if isinstance(checkpoint_number, Variable):
                checkpoint_number = sess.run(checkpoint_number)
            number = int(checkpoint_number)
        path = self._checkpoint.write("%s-%d" % (self._prefix, number), sess)
        self._checkpoints = [p for p in self._checkpoints if p != path] + [path]
        while self._max_to_keep is not None and len(self._checkpoints) > self._max_to_keep:
            old = self._checkpoints.pop(0)
            if os.path.exists(old):
                os.remove(old)
        update_checkpoint_state(self._directory, path, self._checkpoints)
        return path
