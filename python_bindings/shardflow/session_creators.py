"""TF1's tf.train.Scaffold and session creators: how a MonitoredSession gets a session whose
model is ready.

A Scaffold holds the ops that prepare a model (init_op, local_init_op, saver, summary_op, ...);
finalize() fills in those not given with the defaults, as TF1's does. ChiefSessionCreator
opens a session and restores the newest checkpoint of checkpoint_dir when there is one (else
runs the init op and init_fn), then the local init op. WorkerSessionCreator waits
until the chief has initialised every variable, then runs the local init op.

Example::

    scaffold = sf.train.Scaffold(init_fn=lambda scaffold, sess: warm_start(sess))
    creator = sf.train.ChiefSessionCreator(scaffold=scaffold, checkpoint_dir="/tmp/train")
    with sf.train.MonitoredSession(session_creator=creator, hooks=hooks) as sess:
        ...

As TF1's, a restore comes first and the init op and init_fn run only when nothing was
restored (so the workers, waiting until every variable has a value, never start from initial
values, nor from scratch when the restore fails); beyond TF1, the variables the checkpoint gave
no value (optimizer slots made after it was written) then get their initial values. Graphs are
not finalized.
"""

import time

from shardflow import errors
from shardflow.framework import get_default_graph

# TF1's tf.GraphKeys names of the collections a Scaffold takes its ops from.
INIT_OP = "init_op"
LOCAL_INIT_OP = "local_init_op"
READY_OP = "ready_op"
SUMMARY_OP = "summary_op"
SAVERS = "savers"


class Scaffold:
    """The ops that make a model ready; finalize() fills in the defaults (call it once the
    model is built; MonitoredSession does):

    - init_op: the "init_op" collection's, else global_variables_initializer() (with the
      assignments of sf.train.init_from_checkpoint), run with init_feed_dict;
    - init_fn(scaffold, session): run after init_op when no checkpoint was restored;
    - ready_op: a string vector of the variables not ready (empty when ready); by default the
      session creators ask every global variable whether it has a value;
    - local_init_op: the "local_init_op" collection's, else local_variables_initializer() and
      tables_initializer() grouped, as TF1;
    - summary_op: the "summary_op" collection's, else sf.summary.merge_all() (None without
      summaries);
    - saver: the "savers" collection's, else a sf.train.Saver of every global variable (None
      when there are none).
    """

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            c = copy_from_scaffold
            init_op = init_op if init_op is not None else c._init_op
            init_feed_dict = init_feed_dict if init_feed_dict is not None else c._init_feed_dict
            init_fn = init_fn if init_fn is not None else c._user_init_fn
            ready_op = ready_op if ready_op is not None else c._ready_op
            ready_for_local_init_op = ready_for_local_init_op \
                if ready_for_local_init_op is not None else c._ready_for_local_init_op
            local_init_op = local_init_op if local_init_op is not None else c._local_init_op
            summary_op = summary_op if summary_op is not None else c._summary_op
            saver = saver if saver is not None else c._saver
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._summary_op = summary_op
        self._saver = saver
        self._finalized = False

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The one op of the collection, else default_constructor()'s (added to it)."""
        g = get_default_graph()
        found = g.get_collection(collection_key)
        if len(found) > 1:
            raise RuntimeError("More than one item in collection %s. Please indicate which one "
                               "to use by passing it to the constructor." % collection_key)
        if found:
            return found[0]
        op = default_constructor()
        if op is not None:
            g.add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op():
        """Local variables and lookup tables, as TF1's Scaffold (tables_initializer is a no-op
        when the graph has no tables)."""
        from shardflow.ops import group
        from shardflow.variables import local_variables_initializer, tables_initializer
        return group(local_variables_initializer(), tables_initializer())

    def finalize(self):
        """Fills in the ops not given (see the class); returns self. Later calls do nothing."""
        if self._finalized:
            return self
        from shardflow.checkpoint_utils import with_checkpoint_initializers
        from shardflow.summary import merge_all
        from shardflow.variables import global_variables_initializer
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default(
                "init_op", INIT_OP,
                lambda: with_checkpoint_initializers(global_variables_initializer()))
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", LOCAL_INIT_OP, Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", SUMMARY_OP, merge_all)
        if self._saver is None:
            self._saver = _default_saver()
        self._finalized = True
        return self

    @property
    def finalized(self):
        return self._finalized

    @property
    def init_fn(self):
        return self._init_fn

    @property
    def init_op(self):
        return self._init_op

    @property
    def init_feed_dict(self):
        return self._init_feed_dict

    @property
    def ready_op(self):
        return self._ready_op

    @property
    def ready_for_local_init_op(self):
        return self._ready_for_local_init_op

    @property
    def local_init_op(self):
        return self._local_init_op

    @property
    def summary_op(self):
        return self._summary_op

    @property
    def saver(self):
        return self._saver

    def _not_ready(self, session, ready_op=None):
        """The names of the variables without a value (from `ready_op`, the scaffold's, or by
        asking each global variable)."""
        from shardflow.variables import global_variables
        op = ready_op if ready_op is not None else self._ready_op
        if op is not None:
            names = session.run(op)
            return [n.decode() if isinstance(n, bytes) else str(n) for n in list(names)]
        variables = global_variables(session.graph)
        if not variables:
            return []
        if getattr(self, "_ready_checks", None) is None or \
                len(self._ready_checks) != len(variables):
            with session.graph.as_default():
                self._ready_checks = [v.is_initialized() for v in variables]
        flags = session.run(self._ready_checks)
        return [v.op.name for v, f in zip(variables, flags) if not f]


def _default_saver():
    from shardflow.train import Saver
    from shardflow.variables import global_variables
    savers = get_default_graph().get_collection(SAVERS)
    if len(savers) > 1:
        raise RuntimeError("More than one item in collection %s. Please indicate which one to "
                           "use by passing it to the constructor." % SAVERS)
    if savers:
        return savers[0]
    return Saver() if global_variables() else None


class SessionCreator:
    """Makes the session of a MonitoredSession: create_session() returns one whose model is
    ready."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for %s" % type(self))


class ChiefSessionCreator(SessionCreator):
    """Initialises the model (module text): the checkpoint at `checkpoint_filename_with_path`,
    or the newest in `checkpoint_dir` (then the variables it lacks), or else the init op and
    init_fn; then the local init op. A model still not ready then is a RuntimeError naming
    the variables."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self):
        from shardflow.session import Session
        from shardflow.train import latest_checkpoint
        s = self._scaffold.finalize()
        sess = Session(self._master, graph=get_default_graph(), config=self._config)
        try:
            path = self._checkpoint_filename_with_path or (
                latest_checkpoint(self._checkpoint_dir) if self._checkpoint_dir else None)
            if path is not None and s.saver is not None:
                # Restored first: the workers wait until every variable has a value, and must
                # not start from initial values (or from nothing, if the restore fails).
                s.saver.restore(sess, path)
                _initialize_the_rest(s, sess)
                # As TF1's: the Saver takes over the checkpoints listed beside it, so that
                # max_to_keep deletes those of earlier runs too.
                if self._checkpoint_dir and hasattr(s.saver, "recover_last_checkpoints"):
                    from shardflow.checkpoint_utils import get_checkpoint_state
                    try:
                        state = get_checkpoint_state(self._checkpoint_dir)
                    except ValueError:
                        state = None
                    if state is not None:
                        s.saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
            else:
                if s.init_op is not None:
                    sess.run(s.init_op, feed_dict=s.init_feed_dict)
                if s.init_fn is not None:
                    s.init_fn(sess)
            if s.local_init_op is not None:
                sess.run(s.local_init_op)
            missing = s._not_ready(sess)
            if missing:
                raise RuntimeError(
                    "Init operations did not make model ready. Init op: %s, init fn: %s, "
                    "local_init_op: %s; variables not initialized: %s"
                    % (getattr(s.init_op, "name", s.init_op), s.init_fn,
                       getattr(s.local_init_op, "name", s.local_init_op), ", ".join(missing)))
        except BaseException:
            sess.close()
            raise
        return sess


def _initialize_the_rest(scaffold, sess):
    """After a restore: the initializers of the global variables the checkpoint gave no value
    (optimizer slots made after it was written, a Saver of some variables only)."""
    from shardflow.variables import global_variables
    missing = set(scaffold._not_ready(sess))
    rest = [v.initializer for v in global_variables(sess.graph) if v.op.name in missing]
    if rest:
        sess.run(rest, feed_dict=scaffold.init_feed_dict)


class WorkerSessionCreator(SessionCreator):
    """Waits up to `max_wait_secs` for the chief to initialise every variable (checking
    with a growing delay up to 1 s), then runs the local init op; DeadlineExceededError naming
    the variables still without a value when the time is up."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        from shardflow.session import Session
        s = self._scaffold.finalize()
        sess = Session(self._master, graph=get_default_graph(), config=self._config)
        try:
            _wait_until_ready(s, sess, self._max_wait_secs)
            if s.local_init_op is not None:
                sess.run(s.local_init_op)
        except BaseException:
            sess.close()
            raise
        return sess


def _wait_until_ready(scaffold, sess, max_wait_secs):
    """Polls until the model is ready; says every 10 s (INFO, as TF1's "Waiting for model to
    be ready") what it still waits for, and once after a minute as a WARNING."""
    from shardflow import tf_logging
    start = time.monotonic()
    deadline = start + max_wait_secs
    delay = 0.05
    next_report, warned = start + 10.0, False
    ready_op = scaffold.ready_for_local_init_op
    while True:
        try:
            missing = scaffold._not_ready(sess, ready_op)
            if not missing:
                return
        except (errors.UnavailableError, errors.DeadlineExceededError) as e:
            missing = ["(a task did not answer: %s)" % e]
        now = time.monotonic()
        if now >= next_report:
            waited = "Waiting for model to be ready (%d s so far; the chief initialises or "
            waited += "restores it): not ready: %s"
            if not warned and now - start >= 60.0:
                warned = True
                tf_logging.warning(waited, now - start, ", ".join(missing[:10]))
            else:
                tf_logging.info(waited, now - start, ", ".join(missing[:10]))
            next_report = now + 10.0
        if now >= deadline:
            raise errors.DeadlineExceededError(
                "waited %d s for the chief to initialise the model; still without a value: "
                "%s. Start the chief (is_chief=True) or raise max_wait_secs"
                % (max_wait_secs, ", ".join(missing[:10])))
        time.sleep(delay)
        delay = min(delay * 2, 1.0)
