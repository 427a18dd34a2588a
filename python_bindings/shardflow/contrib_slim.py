"""tf.contrib.slim as TF 1.15 programs use it (``slim = tf.contrib.slim``): the layer
functions of tf.contrib.layers (conv2d, fully_connected, max_pool2d, avg_pool2d, batch_norm,
dropout, flatten, repeat, stack, one_hot_encoding, ...; shardflow.contrib_layers) with their
initializers and regularizers, arg_scope and the variable helpers of tf.contrib.framework
(model_variable, variable, get_variables, get_model_variables, ...), and

- slim.get_variables_to_restore(include, exclude), slim.assign_from_checkpoint and
  slim.assign_from_checkpoint_fn (restoring part of a model from a checkpoint);
- slim.losses: TF1's tf.contrib.losses (its argument order: predictions or logits first),
  get_total_loss, get_regularization_losses, ...;
- slim.learning: create_train_op (the loss, computed once per step, returned with the training
  step as its dependency; the UPDATE_OPS run first) and train (a Supervisor loop writing
  summaries and checkpoints to logdir; returns the last loss);
- slim.evaluation.evaluate_once (restore, run eval_op num_evals times, return final_op);
- slim.metrics: tf.contrib.metrics (streaming_*).

Example::

    slim = sf.contrib.slim
    with slim.arg_scope([slim.conv2d, slim.fully_connected],
                        weights_regularizer=slim.l2_regularizer(1e-4),
                        normalizer_fn=slim.batch_norm):
        net = slim.repeat(images, 2, slim.conv2d, 16, [3, 3], scope="conv1")
        net = slim.max_pool2d(net, [2, 2], scope="pool1")
        logits = slim.fully_connected(slim.flatten(net), 10, activation_fn=None, scope="fc")
    slim.losses.softmax_cross_entropy(logits, onehot_labels)
    train_op = slim.learning.create_train_op(slim.losses.get_total_loss(),
                                             sf.train.AdamOptimizer(1e-3))
    final_loss = slim.learning.train(train_op, "/tmp/train", number_of_steps=100)

- slim.nets.vgg and slim.nets.resnet_v1 (shardflow/contrib_slim_nets.py).

evaluation_loop, prefetch_queue, slim.data and the other nets are not carried.
"""

import time
import types

from shardflow import contrib_metrics as metrics  # noqa: F401
from shardflow import tf_logging as logging
from shardflow.contrib_framework import (add_arg_scope, arg_scope,  # noqa: F401
                                         arg_scoped_arguments, create_global_step,
                                         current_arg_scope, get_global_step,
                                         get_local_variables, get_model_variables,
                                         get_or_create_global_step, get_trainable_variables,
                                         get_variables, get_variables_by_name, has_arg_scope,
                                         model_variable, variable)
from shardflow.contrib_layers import (apply_regularization, avg_pool2d,  # noqa: F401
                                      batch_norm, bias_add, conv1d, conv2d, conv2d_transpose,
                                      convolution, convolution1d, convolution2d,
                                      convolution2d_transpose, dropout, embed_sequence,
                                      flatten, fully_connected, l1_l2_regularizer,
                                      l1_regularizer, l2_regularizer, layer_norm, max_pool2d,
                                      one_hot_encoding, repeat, separable_conv2d,
                                      separable_convolution2d, softmax, stack,
                                      sum_regularizer, unit_norm,
                                      variance_scaling_initializer, xavier_initializer,
                                      xavier_initializer_conv2d)
from shardflow.framework import GraphKeys, get_default_graph

_USE_DEFAULT = 0
_USE_GLOBAL_STEP = 0


# ---- variables -------------------------------------------------------------------------------


def get_variables_by_suffix(suffix, scope=None):
    """The global variables whose op name ends with `suffix` (within `scope`)."""
    return get_variables(scope=scope, suffix=suffix)


def get_unique_variable(var_op_name):
    """The one global variable whose op name is `var_op_name`; ValueError otherwise."""
    found = [v for v in get_variables(var_op_name) if v.op.name == var_op_name]
    if not found:
        raise ValueError("Couldn't find variable %s" % var_op_name)
    return found[0]


def local_variable(initial_value, validate_shape=True, name=None, use_resource=None):
    """A non-trainable variable in LOCAL_VARIABLES (initialised by
    local_variables_initializer), as contrib's local_variable."""
    from shardflow.variables import Variable
    return Variable(initial_value, trainable=False, name=name,
                    collections=[GraphKeys.LOCAL_VARIABLES])


def get_variables_to_restore(include=None, exclude=None):
    """The global variables under the scopes of `include` (all when None), less those under
    the scopes of `exclude`; a scope matches a variable whose name starts with it (a regular
    expression, as TF1's)."""
    if include is None:
        chosen = get_variables()
    else:
        if not isinstance(include, (list, tuple)):
            raise TypeError("include is provided but is not a list or a tuple.")
        chosen = []
        for scope in include:
            chosen += get_variables(scope)
    dropped = set()
    if exclude is not None:
        if not isinstance(exclude, (list, tuple)):
            raise TypeError("exclude is provided but is not a list or a tuple.")
        for scope in exclude:
            dropped |= set(get_variables(scope))
    return [v for v in chosen if v not in dropped]


def _checkpoint_names(var_list):
    """{name in the checkpoint: [variables]} from a list (by op name) or a dict."""
    if isinstance(var_list, dict):
        return {k: list(v) if isinstance(v, (list, tuple)) else [v]
                for k, v in var_list.items()}
    grouped = {}
    for v in var_list:
        grouped.setdefault(v.op.name, []).append(v)
    return grouped


def assign_from_checkpoint(model_path, var_list, ignore_missing_vars=False):
    """(assign_op, feed_dict): running assign_op with feed_dict sets each variable of
    `var_list` (a list, by op name, or a dict {name in the checkpoint: variable}) to its value
    in the checkpoint `model_path`. A name missing from the checkpoint is a ValueError, or a
    warning with ignore_missing_vars; a shape that differs is a ValueError."""
    from shardflow import ops
    from shardflow.checkpoint_utils import NewCheckpointReader
    reader = NewCheckpointReader(model_path)
    feed_dict, assigns = {}, []
    for name, variables in _checkpoint_names(var_list).items():
        if not reader.has_tensor(name):
            message = "Checkpoint is missing variable [%s]" % name
            if ignore_missing_vars:
                logging.warning(message)
                continue
            raise ValueError(message)
        value = reader.get_tensor(name)
        for v in variables:
            if list(v.shape.as_list()) != list(value.shape):
                raise ValueError("Total size of new array must be unchanged for %s lh_shape: "
                                 "[%s], rh_shape: [%s]" % (name, value.shape, v.shape))
            ph = ops.placeholder(v.dtype, v.shape.as_list(), name="placeholder/" + v.op.name)
            assigns.append(v.assign(ph))
            feed_dict[ph] = value
    return ops.group(*assigns), feed_dict


def assign_from_checkpoint_fn(model_path, var_list, ignore_missing_vars=False,
                              reshape_variables=False):
    """A function of a session that restores `var_list` (a list or a dict {name in the
    checkpoint: variable}) from the checkpoint `model_path` with a Saver (for
    slim.learning.train's init_fn). With ignore_missing_vars the variables the checkpoint
    lacks are left out (with a warning); None when nothing is left to restore."""
    from shardflow.checkpoint_utils import NewCheckpointReader
    from shardflow.train import Saver
    if not var_list:
        raise ValueError("var_list cannot be empty")
    if ignore_missing_vars:
        reader = NewCheckpointReader(model_path)
        by_name = var_list if isinstance(var_list, dict) else {v.op.name: v for v in var_list}
        var_list = {}
        for name, v in by_name.items():
            if reader.has_tensor(name):
                var_list[name] = v
            else:
                logging.warning("Variable %s missing in checkpoint %s", name, model_path)
    if not var_list:
        logging.warning("No Variables to restore")
        return None
    saver = Saver(var_list, reshape=reshape_variables)

    def callback(session):
        saver.restore(session, model_path)
    return callback


# ---- slim.losses: TF1's tf.contrib.losses ----------------------------------------------------


def _contrib_losses():
    from shardflow import losses as core

    def absolute_difference(predictions, labels=None, weights=1.0, scope=None):
        return core.absolute_difference(labels, predictions, weights, scope=scope)

    def mean_squared_error(predictions, labels=None, weights=1.0, scope=None):
        return core.mean_squared_error(labels, predictions, weights, scope=scope)

    def mean_pairwise_squared_error(predictions, labels=None, weights=1.0, scope=None):
        return core.mean_pairwise_squared_error(labels, predictions, weights, scope=scope)

    def log_loss(predictions, labels=None, weights=1.0, epsilon=1e-7, scope=None):
        return core.log_loss(labels, predictions, weights, epsilon, scope=scope)

    def cosine_distance(predictions, labels=None, axis=None, weights=1.0, scope=None,
                        dim=None):
        axis = dim if axis is None else axis
        if axis is None:
            raise ValueError("You must specify 'axis'.")
        return core.cosine_distance(labels, predictions, axis=axis, weights=weights,
                                    scope=scope)

    def hinge_loss(logits, labels=None, scope=None):
        return core.hinge_loss(labels, logits, scope=scope, loss_collection=None,
                               reduction=core.Reduction.NONE)

    def softmax_cross_entropy(logits, onehot_labels, weights=1.0, label_smoothing=0,
                              scope=None):
        return core.softmax_cross_entropy(onehot_labels, logits, weights, label_smoothing,
                                          scope=scope)

    def sparse_softmax_cross_entropy(logits, labels, weights=1.0, scope=None):
        return core.sparse_softmax_cross_entropy(labels, logits, weights, scope=scope)

    def sigmoid_cross_entropy(logits, multi_class_labels, weights=1.0, label_smoothing=0,
                              scope=None):
        return core.sigmoid_cross_entropy(multi_class_labels, logits, weights,
                                          label_smoothing, scope=scope)

    def compute_weighted_loss(losses, weights=1.0, scope=None):
        return core.compute_weighted_loss(losses, weights, scope=scope)

    def get_total_loss(add_regularization_losses=True, name="total_loss"):
        return core.get_total_loss(add_regularization_losses, name=name)

    fns = [absolute_difference, mean_squared_error, mean_pairwise_squared_error, log_loss,
           cosine_distance, hinge_loss, softmax_cross_entropy, sparse_softmax_cross_entropy,
           sigmoid_cross_entropy, compute_weighted_loss, get_total_loss]
    module = types.ModuleType(
        "shardflow.contrib_slim.losses",
        "slim.losses: TF1's tf.contrib.losses (predictions or logits first, then labels), "
        "each loss added to GraphKeys.LOSSES and reduced as tf.losses' default (the weighted "
        "sum over the elements of non-zero weight divided by their number; hinge_loss "
        "unreduced, as contrib's).")
    for f in fns:
        f.__doc__ = "tf.contrib.losses.%s (see the module)." % f.__name__
        setattr(module, f.__name__, f)
    for name in ("add_loss", "get_losses", "get_regularization_losses",
                 "get_regularization_loss"):
        setattr(module, name, getattr(core, name))
    module.__all__ = sorted([f.__name__ for f in fns] + [
        "add_loss", "get_losses", "get_regularization_losses", "get_regularization_loss"])
    return module


losses = _contrib_losses()


# ---- slim.learning ---------------------------------------------------------------------------


def _with_dependencies(deps, tensor, name=None):
    from shardflow import ops
    with get_default_graph().control_dependencies(list(deps)):
        return ops.identity(tensor, name=name)


def clip_gradient_norms(gradients_to_variables, max_norm):
    """Each gradient clipped to norm `max_norm` on its own (sf.clip_by_norm), as slim's."""
    from shardflow import ops
    return [(ops.clip_by_norm(g, max_norm) if g is not None else None, v)
            for g, v in gradients_to_variables]


def multiply_gradients(grads_and_vars, gradient_multipliers):
    """Each gradient times gradient_multipliers[its variable] (keyed by the variable or its
    op name), when there."""
    from shardflow import ops
    if not isinstance(grads_and_vars, list):
        raise ValueError("`grads_and_vars` must be a list.")
    if not gradient_multipliers:
        raise ValueError("`gradient_multipliers` is empty.")
    by_name = {getattr(getattr(k, "op", None), "name", k): m
               for k, m in gradient_multipliers.items()}
    out = []
    for g, v in grads_and_vars:
        if g is not None and v.op.name in by_name:
            g = ops.multiply(g, ops.cast(by_name[v.op.name], g.dtype))
        out.append((g, v))
    return out


def add_gradients_summaries(grads_and_vars):
    """Histograms '<var>/gradient' and scalars '<var>/gradient_norm'; returns them."""
    from shardflow import ops, summary
    found = []
    for g, v in grads_and_vars:
        if g is not None:
            found.append(summary.histogram(v.op.name + "/gradient", g))
            found.append(summary.scalar(v.op.name + "/gradient_norm", ops.global_norm([g])))
        else:
            logging.info("Var %s has no gradient", v.op.name)
    return found


def create_train_op(total_loss, optimizer, global_step=_USE_GLOBAL_STEP, update_ops=None,
                    variables_to_train=None, clip_gradient_norm=0, summarize_gradients=False,
                    gate_gradients=1, aggregation_method=None,
                    colocate_gradients_with_ops=False, gradient_multipliers=None,
                    check_numerics=True):
    """slim.learning.create_train_op: a tensor whose value is `total_loss` and whose
    computation applies `optimizer`'s step to `variables_to_train` (the trainable variables
    by default) and increments `global_step` (the graph's, created if needed; None: none).
    The UPDATE_OPS (or `update_ops`) run before the loss; gradients are multiplied by
    gradient_multipliers and clipped each to clip_gradient_norm (> 0) first;
    summarize_gradients adds their summaries; check_numerics fails a step whose loss is inf
    or NaN. The op goes to GraphKeys.TRAIN_OP."""
    from shardflow import ops, train, variables
    g = get_default_graph()
    if global_step is _USE_GLOBAL_STEP:
        global_step = train.get_or_create_global_step()
    in_graph = set(g.get_collection(GraphKeys.UPDATE_OPS))
    update_ops = in_graph if update_ops is None else set(update_ops)
    if not in_graph.issubset(update_ops):
        logging.warning("update_ops in create_train_op does not contain all the update_ops "
                        "in GraphKeys.UPDATE_OPS")
    if update_ops:
        with g.control_dependencies(sorted(update_ops, key=lambda o: o.name)):
            barrier = ops.no_op(name="update_barrier")
        total_loss = _with_dependencies([barrier], total_loss)
    if variables_to_train is None:
        variables_to_train = variables.trainable_variables()
    if not variables_to_train:
        raise ValueError("create_train_op: no variables to train")
    grads = optimizer.compute_gradients(total_loss, var_list=list(variables_to_train))
    if gradient_multipliers:
        with g.name_scope("multiply_grads"):
            grads = multiply_gradients(list(grads), gradient_multipliers)
    if clip_gradient_norm > 0:
        with g.name_scope("clip_grads"):
            grads = clip_gradient_norms(grads, clip_gradient_norm)
    if summarize_gradients:
        with g.name_scope("summarize_grads"):
            add_gradients_summaries(grads)
    grad_updates = optimizer.apply_gradients(grads, global_step=global_step)
    with g.name_scope("train_op"):
        if check_numerics:
            total_loss = ops.check_numerics(total_loss, "LossTensor is inf or nan")
        train_op = _with_dependencies([grad_updates], total_loss)
    if train_op not in g.get_collection(GraphKeys.TRAIN_OP):
        g.add_to_collection(GraphKeys.TRAIN_OP, train_op)
    return train_op


def train_step(sess, train_op, global_step, train_step_kwargs):
    """One step of slim.learning.train: runs train_op and the global step; logs every
    'should_log' step; returns (total_loss, should_stop)."""
    start = time.time()
    total_loss, np_global_step = sess.run([train_op, global_step])
    elapsed = time.time() - start
    if "should_log" in train_step_kwargs and sess.run(train_step_kwargs["should_log"]):
        logging.info("global step %d: loss = %.4f (%.3f sec/step)", np_global_step,
                     total_loss, elapsed)
    should_stop = bool(sess.run(train_step_kwargs["should_stop"])) \
        if "should_stop" in train_step_kwargs else False
    return total_loss, should_stop


def train(train_op, logdir, train_step_fn=train_step, train_step_kwargs=_USE_DEFAULT,
          log_every_n_steps=1, graph=None, master="", is_chief=True, global_step=None,
          number_of_steps=None, init_op=_USE_DEFAULT, init_feed_dict=None,
          local_init_op=_USE_DEFAULT, init_fn=None, ready_op=_USE_DEFAULT,
          summary_op=_USE_DEFAULT, save_summaries_secs=600, summary_writer=_USE_DEFAULT,
          startup_delay_steps=0, saver=None, save_interval_secs=600, sync_optimizer=None,
          session_config=None, session_wrapper=None, trace_every_n_steps=None,
          ignore_live_threads=False):
    """slim.learning.train: runs train_fn_step(sess, train_op, global_step, kwargs) in a
    Supervisor's managed session until the global step reaches number_of_steps (or the input
    ends), then saves "<logdir>/model.ckpt-<step>" and returns the last step's loss. The
    session is restored from logdir's newest checkpoint when there is one, else initialised
    and handed to init_fn (e.g. assign_from_checkpoint_fn's). Summaries every
    save_summaries_secs and checkpoints every save_interval_secs while it runs (logdir not
    None). sync_optimizer, startup_delay_steps and tracing are not supported."""
    from shardflow import ops
    from shardflow.supervisor import Supervisor
    from shardflow.summary import merge_all
    from shardflow.train import Saver, get_or_create_global_step
    if train_op is None:
        raise ValueError("train_op cannot be None.")
    if logdir is None:
        if summary_op is not _USE_DEFAULT:
            raise ValueError("Cannot provide summary_op because logdir=None")
        if saver is not None:
            raise ValueError("Cannot provide saver because logdir=None")
    if sync_optimizer is not None or trace_every_n_steps is not None or startup_delay_steps:
        raise ValueError("slim.learning.train: sync_optimizer, trace_every_n_steps and "
                         "startup_delay_steps are not supported")
    if number_of_steps is not None and number_of_steps <= 0:
        raise ValueError("`number_of_steps` must be either None or a positive number.")
    graph = graph or get_default_graph()
    with graph.as_default():
        if global_step is None:
            global_step = get_or_create_global_step()
        saver = saver or Saver()
        if summary_op is _USE_DEFAULT:
            summary_op = merge_all()
        if train_step_kwargs is _USE_DEFAULT:
            with graph.name_scope("train_step"):
                train_step_kwargs = {}
                train_step_kwargs["should_stop"] = (
                    ops.greater_equal(global_step, number_of_steps) if number_of_steps
                    else ops.constant(False))
                if log_every_n_steps > 0:
                    train_step_kwargs["should_log"] = ops.equal(
                        ops.floormod(global_step, log_every_n_steps), 0)
    sv = Supervisor(graph=graph, is_chief=is_chief, logdir=logdir, init_op=init_op,
                    init_feed_dict=init_feed_dict, local_init_op=local_init_op,
                    ready_op=ready_op, summary_op=summary_op, summary_writer=summary_writer,
                    global_step=global_step, saver=saver,
                    save_summaries_secs=save_summaries_secs,
                    save_model_secs=save_interval_secs, init_fn=init_fn)
    from shardflow.errors import OutOfRangeError
    total_loss = None
    with sv.managed_session(master, start_standard_services=False,
                            config=session_config) as sess:
        logging.info("Starting Session.")
        if session_wrapper is not None:
            sess = session_wrapper(sess)
        if is_chief and logdir:
            sv.start_standard_services(sess)
        threads = sv.start_queue_runners(sess)
        try:
            while not sv.should_stop():
                total_loss, should_stop = train_step_fn(sess, train_op, global_step,
                                                        train_step_kwargs)
                if should_stop:
                    logging.info("Stopping Training.")
                    sv.request_stop()
                    break
        except OutOfRangeError as e:
            logging.info("Caught OutOfRangeError. Stopping Training. %s", e)
        if logdir and sv.is_chief:
            # The services stop first: a periodic save still running (the first one starts
            # with training) must not land after the final checkpoint and become the latest.
            sv.stop(threads, close_summary_writer=True,
                    ignore_live_threads=ignore_live_threads)
            logging.info("Finished training! Saving model to disk.")
            sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
    return total_loss


learning = types.ModuleType(
    "shardflow.contrib_slim.learning",
    "slim.learning: create_train_op, train, train_step, clip_gradient_norms, "
    "multiply_gradients, add_gradients_summaries (see shardflow.contrib_slim).")
for _f in (create_train_op, train, train_step, clip_gradient_norms, multiply_gradients,
           add_gradients_summaries):
    setattr(learning, _f.__name__, _f)
learning.__all__ = ["add_gradients_summaries", "clip_gradient_norms", "create_train_op",
                    "multiply_gradients", "train", "train_step"]


# ---- slim.evaluation -------------------------------------------------------------------------


def evaluate_once(master, checkpoint_path, logdir, num_evals=1, initial_op=None,
                  initial_op_feed_dict=None, eval_op=None, eval_op_feed_dict=None,
                  final_op=None, final_op_feed_dict=None, summary_op=_USE_DEFAULT,
                  summary_op_feed_dict=None, variables_to_restore=None, session_config=None,
                  hooks=None):
    """slim.evaluation.evaluate_once: a session restored from `checkpoint_path` (with a Saver
    of variables_to_restore, default every global variable; the local variables initialised,
    then initial_op), eval_op run num_evals times with eval_op_feed_dict, then final_op's
    value returned. The summaries (summary_op, default merge_all) are written to `logdir` at
    the global step when it ends. `hooks` are run as a MonitoredSession's."""
    from shardflow.basic_hooks import FinalOpsHook
    from shardflow.monitored_session import MonitoredSession, SessionRunHook
    from shardflow.session_creators import ChiefSessionCreator, Scaffold
    from shardflow.summary import FileWriter, merge_all
    from shardflow.train import Saver, get_global_step
    if summary_op is _USE_DEFAULT:
        summary_op = merge_all()
    saver = Saver(variables_to_restore) if variables_to_restore is not None else None
    step = get_global_step()

    class _SummaryAtEnd(SessionRunHook):
        def end(self, session):
            if summary_op is None or not logdir:
                return
            value = session.run(summary_op, feed_dict=summary_op_feed_dict)
            writer = FileWriter(logdir)
            writer.add_summary(value, session.run(step) if step is not None else None)
            writer.close()

    final = FinalOpsHook(final_op, final_op_feed_dict)
    all_hooks = [_SummaryAtEnd()] + list(hooks or []) + [final]
    creator = ChiefSessionCreator(
        scaffold=Scaffold(init_op=initial_op, init_feed_dict=initial_op_feed_dict,
                          saver=saver),
        master=master, config=session_config, checkpoint_filename_with_path=checkpoint_path)
    logging.info("Starting evaluation of %s", checkpoint_path)
    with MonitoredSession(session_creator=creator, hooks=all_hooks) as session:
        if eval_op is not None:
            for _ in range(int(num_evals)):
                if session.should_stop():
                    break
                session.run(eval_op, feed_dict=eval_op_feed_dict)
    logging.info("Finished evaluation of %s", checkpoint_path)
    return final.final_ops_values


from shardflow.contrib_slim_nets import nets  # noqa: E402,F401 (slim.nets.vgg)

evaluation = types.ModuleType("shardflow.contrib_slim.evaluation",
                              "slim.evaluation: evaluate_once (no evaluation_loop).")
evaluation.evaluate_once = evaluate_once
evaluation.__all__ = ["evaluate_once"]


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.slim.%s; it carries %s (evaluation_loop, "
        "prefetch_queue, data and nets other than vgg and resnet_v1 are not carried)"
        % (name, ", ".join(__all__)))


__all__ = ["add_arg_scope", "apply_regularization", "arg_scope", "arg_scoped_arguments",
           "assign_from_checkpoint", "assign_from_checkpoint_fn", "avg_pool2d", "batch_norm",
           "bias_add", "conv1d", "conv2d", "conv2d_transpose", "convolution", "convolution1d",
           "convolution2d", "convolution2d_transpose", "create_global_step",
           "current_arg_scope", "dropout", "embed_sequence", "evaluation", "flatten",
           "fully_connected", "get_global_step", "get_local_variables",
           "get_model_variables", "get_or_create_global_step", "get_trainable_variables",
           "get_unique_variable", "get_variables", "get_variables_by_name",
           "get_variables_by_suffix", "get_variables_to_restore", "has_arg_scope",
           "l1_l2_regularizer", "l1_regularizer", "l2_regularizer", "layer_norm", "learning",
           "local_variable", "losses", "max_pool2d", "metrics", "model_variable", "nets",
           "one_hot_encoding", "repeat", "separable_conv2d", "separable_convolution2d",
           "softmax", "stack", "sum_regularizer", "unit_norm", "variable",
           "variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d"]
