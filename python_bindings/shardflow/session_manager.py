"""TF1's tf.train.SessionManager: sessions whose model is ready, by initialising it, restoring
it from a checkpoint, or waiting for another task to.

Example::

    sm = sf.train.SessionManager()
    sess = sm.prepare_session("", init_op=sf.global_variables_initializer(), saver=saver,
                              checkpoint_dir="/tmp/train")   # restored when it has a checkpoint

Built on the session creators (session_creators.py): prepare_session is a ChiefSessionCreator
of a Scaffold holding the ops given, wait_for_session a WorkerSessionCreator. As there, a
restore comes first (then the variables the checkpoint lacks get their initial values), and
the init op and init_fn(sess) run only when nothing was restored. An init_op or saver of None
means none (not the default a Scaffold would choose).

Thread safety: as a Session; make sessions from one thread at a time.
"""

import time

from shardflow.framework import get_default_graph


def _no_op():
    from shardflow.ops import no_op
    return no_op(name="session_manager_no_init")


class SessionManager:
    """Makes sessions of `graph` (default: the default graph) whose model is ready: every
    variable has a value (asked with `ready_op`, or of each global variable), then
    `local_init_op` (with `local_init_feed_dict`) has run."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None,
                 graph=None, recovery_wait_secs=30, local_init_run_options=None,
                 local_init_feed_dict=None):
        self._graph = graph or get_default_graph()
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_feed_dict = local_init_feed_dict

    def _scaffold(self, init_op=None, init_feed_dict=None, init_fn=None, saver=None):
        from shardflow.session_creators import Scaffold
        with self._graph.as_default():
            scaffold = Scaffold(
                init_op=init_op if init_op is not None else _no_op(),
                init_feed_dict=init_feed_dict,
                init_fn=(lambda _, sess: init_fn(sess)) if init_fn else None,
                ready_op=self._ready_op, ready_for_local_init_op=self._ready_for_local_init_op,
                local_init_op=self._local_init_op if self._local_init_op is not None
                else _no_op(), saver=saver)
            return scaffold.finalize()

    def _checkpoint_path(self, checkpoint_dir, checkpoint_filename_with_path,
                         wait_for_checkpoint, max_wait_secs):
        """The checkpoint to restore (None when there is none), waiting for one to appear
        when wait_for_checkpoint."""
        from shardflow.train import latest_checkpoint
        if checkpoint_filename_with_path:
            return checkpoint_filename_with_path
        if not checkpoint_dir:
            return None
        deadline = time.monotonic() + max_wait_secs
        path = latest_checkpoint(checkpoint_dir)
        while path is None and wait_for_checkpoint and time.monotonic() < deadline:
            time.sleep(min(self._recovery_wait_secs, max(0.0, deadline - time.monotonic())))
            path = latest_checkpoint(checkpoint_dir)
        return path

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None, init_feed_dict=None, init_fn=None):
        """A session whose model is ready: `saver` restores checkpoint_filename_with_path or the
        newest checkpoint of checkpoint_dir (waiting up to max_wait_secs for one when
        wait_for_checkpoint), else `init_op` (with init_feed_dict) and init_fn(sess) run; then
        the local init op. RuntimeError naming the variables still without a
        value when the model is not ready."""
        from shardflow.session_creators import ChiefSessionCreator
        path = self._checkpoint_path(checkpoint_dir, checkpoint_filename_with_path,
                                     wait_for_checkpoint, max_wait_secs) \
            if saver is not None else None
        scaffold = self._scaffold(init_op, init_feed_dict, init_fn, saver)
        with self._graph.as_default():
            return ChiefSessionCreator(scaffold, master, config,
                                       checkpoint_filename_with_path=path).create_session()

    def recover_session(self, master, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None):
        """(session, True) when a checkpoint was restored and the model is ready (after the
        local init op); (session, False) when there was no checkpoint or the model is still
        not ready (the caller initialises it)."""
        from shardflow.session import Session
        path = self._checkpoint_path(checkpoint_dir, checkpoint_filename_with_path,
                                     wait_for_checkpoint, max_wait_secs)
        scaffold = self._scaffold(saver=saver)
        sess = Session(master, graph=self._graph, config=config)
        try:
            if path is None or saver is None:
                return sess, False
            saver.restore(sess, path)
            if scaffold._not_ready(sess, self._ready_for_local_init_op):
                return sess, False
            sess.run(scaffold.local_init_op, feed_dict=self._local_init_feed_dict)
            return sess, not scaffold._not_ready(sess)
        except BaseException:
            sess.close()
            raise

    def wait_for_session(self, master, config=None, max_wait_secs=float("inf")):
        """A session once another task (the chief) has made the model ready, checking with a
        growing delay; DeadlineExceededError naming the variables still without a value after
        max_wait_secs."""
        from shardflow.session_creators import WorkerSessionCreator
        scaffold = self._scaffold()
        with self._graph.as_default():
            return WorkerSessionCreator(scaffold, master, config,
                                        max_wait_secs=max_wait_secs).create_session()


__all__ = ["SessionManager"]
