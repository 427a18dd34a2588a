"""tf.contrib.layers under its TF1 names: the regularizers l1_regularizer, l2_regularizer,
l1_l2_regularizer, sum_regularizer and apply_regularization (shardflow.regularizers), the
initializers xavier_initializer (Glorot) and variance_scaling_initializer with contrib's own
signature (factor, mode 'FAN_IN'/'FAN_OUT'/'FAN_AVG', uniform), the layer functions
fully_connected, conv2d, max_pool2d and flatten (thin wrappers over sf.layers, with contrib's
defaults: a ReLU activation, 'SAME' convolution padding), layer_norm, batch_norm (over
sf.layers.BatchNormalization), embed_sequence and dropout. The layer functions take their
defaults from sf.contrib.framework.arg_scope. Other contrib.layers names are refused with the
core API to use instead.

Example::

    w = sf.get_variable("w", [784, 10], initializer=sf.contrib.layers.xavier_initializer(),
                        regularizer=sf.contrib.layers.l2_regularizer(1e-4))
    h = sf.contrib.layers.conv2d(images, 32, [5, 5])               # ReLU, SAME padding
    h = sf.contrib.layers.max_pool2d(h, [2, 2])
    logits = sf.contrib.layers.fully_connected(sf.contrib.layers.flatten(h), 10,
                                               activation_fn=None)
"""

import math

from shardflow import dtypes, ops
from shardflow.contrib_framework import add_arg_scope
from shardflow.framework import GraphKeys, Tensor, convert_to_tensor, get_default_graph
from shardflow.regularizers import (apply_regularization, l1_l2_regularizer,  # noqa: F401
                                    l1_regularizer, l2_regularizer, sum_regularizer)
from shardflow.variable_scope import ones_initializer, zeros_initializer

_MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")


def _contrib_fans(shape):
    """contrib's fan-in and fan-out: [.., in, out] times the receptive field (a vector:
    its length for both; a scalar: 1)."""
    if not shape:
        return 1.0, 1.0
    fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
    fan_out = float(shape[-1])
    for d in shape[:-2]:
        fan_in *= float(d)
        fan_out *= float(d)
    return fan_in, fan_out


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                 dtype=dtypes.float32):
    """TF1's tf.contrib.layers.variance_scaling_initializer: values with variance
    factor / n, where n is the fan-in, the fan-out or their mean (`mode`); uniform in
    [-sqrt(3 factor / n), sqrt(3 factor / n)], else a truncated normal of stddev
    sqrt(1.3 factor / n). The default (2.0, FAN_IN) is He et al.'s initialisation. (The core
    sf.variance_scaling_initializer has TF1's other signature: scale, mode, distribution.)"""
    if not dtypes.as_dtype(dtype).is_floating:
        raise TypeError("variance_scaling_initializer: dtype must be a floating type, not %s"
                        % dtypes.as_dtype(dtype).name)
    if mode not in _MODES:
        raise TypeError("variance_scaling_initializer: unknown mode %r; use one of %s"
                        % (mode, ", ".join(_MODES)))
    default_dtype = dtype

    def initializer(shape, dtype=default_dtype, partition_info=None):
        dt = dtypes.as_dtype(dtype)
        if not dt.is_floating:
            raise TypeError("variance_scaling_initializer: cannot create a %s variable"
                            % dt.name)
        shape = list(shape)
        fan_in, fan_out = _contrib_fans(shape)
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return ops.random_uniform(shape, -limit, limit, dtype=dt, seed=seed)
        return ops.truncated_normal(shape, stddev=math.sqrt(1.3 * factor / n), dtype=dt,
                                    seed=seed)
    return initializer


def xavier_initializer(uniform=True, seed=None, dtype=dtypes.float32):
    """TF1's tf.contrib.layers.xavier_initializer (Glorot & Bengio 2010): uniform in
    [-sqrt(6 / (fan_in + fan_out)), +...], or (uniform=False) a truncated normal of variance
    1.3 * 2 / (fan_in + fan_out); variance_scaling_initializer(1.0, 'FAN_AVG', uniform)."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform, seed=seed,
                                        dtype=dtype)


xavier_initializer_conv2d = xavier_initializer


def _activation(fn, normalizer_fn, normalizer_params):
    """contrib's order: the layer's output, then normalizer_fn (which replaces the bias), then
    the activation."""
    def apply(x):
        if normalizer_fn is not None:
            x = normalizer_fn(x, **(normalizer_params or {}))
        return fn(x) if fn is not None else x
    return apply


def _pair(v):
    return (int(v), int(v)) if isinstance(v, (int, float)) else tuple(int(d) for d in v)


def _default_relu():
    from shardflow import nn
    return nn.relu


# contrib's defaults, told apart from an explicit None: activation_fn sf.nn.relu (None means
# linear), biases_initializer zeros (None means no bias).
_DEFAULT = object()


@add_arg_scope
def fully_connected(inputs, num_outputs, activation_fn=_DEFAULT, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=None, weights_regularizer=None,
                    biases_initializer=_DEFAULT, biases_regularizer=None, reuse=None,
                    variables_collections=None, outputs_collections=None, trainable=True,
                    scope=None):
    """TF1's tf.contrib.layers.fully_connected: activation_fn(inputs @ weights + biases),
    a ReLU by default (activation_fn=None: linear); weights Xavier-initialized by default;
    biases_initializer=None or a normalizer_fn leaves out the bias. A dense layer of
    sf.layers (variables <scope>/kernel and <scope>/bias)."""
    from shardflow import layers
    layer = layers.Dense(num_outputs, name=_scope_name(scope, "fully_connected", reuse),
                         **_layer_args(activation_fn, normalizer_fn, normalizer_params,
                                       weights_initializer, weights_regularizer,
                                       biases_initializer, biases_regularizer))
    layer._reuse = reuse
    return layer(inputs)


def _layer_args(activation_fn, normalizer_fn, normalizer_params, weights_initializer,
                weights_regularizer, biases_initializer, biases_regularizer):
    """The sf.layers arguments of a contrib layer's: a ReLU unless told otherwise, Xavier
    weights, no bias under a normalizer_fn or with biases_initializer=None."""
    act = _default_relu() if activation_fn is _DEFAULT else activation_fn
    return dict(activation=_activation(act, normalizer_fn, normalizer_params),
                use_bias=biases_initializer is not None and normalizer_fn is None,
                kernel_initializer=weights_initializer or xavier_initializer(),
                bias_initializer=None if biases_initializer is _DEFAULT else biases_initializer,
                kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer)


@add_arg_scope
def conv2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
           rate=1, activation_fn=_DEFAULT, normalizer_fn=None, normalizer_params=None,
           weights_initializer=None, weights_regularizer=None, biases_initializer=_DEFAULT,
           biases_regularizer=None, reuse=None, variables_collections=None,
           outputs_collections=None, trainable=True, scope=None):
    """TF1's tf.contrib.layers.conv2d (NHWC): activation_fn(conv(inputs) + biases) with
    `num_outputs` filters of `kernel_size`, `stride` and padding 'SAME' by default, a ReLU
    by default; weights Xavier-initialized. Dilation (rate > 1) is not supported."""
    from shardflow import layers
    if data_format not in (None, "NHWC"):
        raise ValueError("contrib.layers.conv2d(data_format=%r): only NHWC is supported"
                         % (data_format,))
    if _pair(rate) != (1, 1):
        raise ValueError("contrib.layers.conv2d(rate=%r): dilated convolution is not "
                         "supported" % (rate,))
    layer = layers.Conv2D(num_outputs, _pair(kernel_size), strides=_pair(stride),
                          padding=padding.upper(), name=_scope_name(scope, "Conv", reuse),
                          **_layer_args(activation_fn, normalizer_fn, normalizer_params,
                                        weights_initializer, weights_regularizer,
                                        biases_initializer, biases_regularizer))
    layer._reuse = reuse
    return layer(inputs)


@add_arg_scope
def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """TF1's tf.contrib.layers.max_pool2d: max pooling over `kernel_size` windows moved by
    `stride` (2), padding 'VALID' by default (NHWC)."""
    from shardflow import layers
    if data_format != "NHWC":
        raise ValueError("contrib.layers.max_pool2d(data_format=%r): only NHWC is supported"
                         % (data_format,))
    return layers.MaxPool2D(_pair(kernel_size), strides=_pair(stride), padding=padding.upper(),
                            name=scope or "MaxPool2D")(inputs)


@add_arg_scope
def flatten(inputs, outputs_collections=None, scope=None):
    """TF1's tf.contrib.layers.flatten: [batch, ...] -> [batch, everything else]."""
    from shardflow import layers
    return layers.flatten(inputs, name=scope or "Flatten")


def _unique_scope(default):
    """`default`, or default_1, default_2, ...: the first that names no variable yet in the
    current variable scope (TF1 numbers contrib layers' default scopes so)."""
    from shardflow.variable_scope import get_variable_scope
    g = get_default_graph()
    g = g._outermost() if hasattr(g, "_outermost") else g
    store = getattr(g, "_variable_store", {})
    outer = get_variable_scope().name
    prefix = outer + "/" if outer else ""
    name, i = default, 0
    while any(k.startswith(prefix + name + "/") for k in store):
        i += 1
        name = "%s_%d" % (default, i)
    return name


def _scope_name(scope, default, reuse):
    if scope is not None:
        return scope
    return default if reuse else _unique_scope(default)


def _add_to(collections, values):
    for c in collections or []:
        for v in values:
            get_default_graph().add_to_collection(c, v)


@add_arg_scope
def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """TF1's tf.contrib.layers.layer_norm (Ba et al. 2016): normalizes `inputs` over the
    axes from `begin_norm_axis` to the last (mean 0, variance 1, epsilon 1e-12), then
    gamma * x + beta with gamma and beta of shape inputs.shape[begin_params_axis:]
    (variables <scope>/beta and <scope>/gamma, scope 'LayerNorm' by default; also in
    MODEL_VARIABLES), then `activation_fn`."""
    from shardflow import nn
    from shardflow.contrib_framework import model_variable
    from shardflow.variable_scope import variable_scope
    x = convert_to_tensor(inputs)
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("layer_norm: inputs %s have unknown rank" % x.name)
    if begin_norm_axis < 0:
        begin_norm_axis += rank
    if begin_params_axis >= rank or begin_norm_axis >= rank:
        raise ValueError("layer_norm: begin_params_axis (%d) and begin_norm_axis (%d) must be "
                         "< rank(inputs) (%d)" % (begin_params_axis, begin_norm_axis, rank))
    params_shape = x.shape.as_list()[begin_params_axis:]
    if any(d is None for d in params_shape):
        raise ValueError("layer_norm: inputs %s have shape %s; dimensions %d: on must be known "
                         "(they are the parameters' shape)" % (x.name, x.shape,
                                                               begin_params_axis))
    colls = _collections(variables_collections)
    with variable_scope(_scope_name(scope, "LayerNorm", reuse), reuse=reuse):
        beta = gamma = None
        if center:
            beta = model_variable("beta", params_shape, dtype=x.dtype,
                                  initializer=zeros_initializer(), trainable=trainable,
                                  collections=colls("beta"))
        if scale:
            gamma = model_variable("gamma", params_shape, dtype=x.dtype,
                                   initializer=ones_initializer(), trainable=trainable,
                                   collections=colls("gamma"))
        mean, variance = nn.moments(x, list(range(begin_norm_axis, rank)), keep_dims=True)
        y = nn.batch_normalization(x, mean, variance, beta, gamma, 1e-12)
        if activation_fn is not None:
            y = activation_fn(y)
    _add_to(outputs_collections, [y])
    return y


def _collections(variables_collections):
    """contrib's variables_collections: a list for every variable, or a dict by name."""
    def of(name):
        if isinstance(variables_collections, dict):
            found = variables_collections.get(name)
            return [found] if isinstance(found, str) else list(found or [])
        return list(variables_collections or [])
    return of


@add_arg_scope
def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001,
               activation_fn=None, param_initializers=None, param_regularizers=None,
               updates_collections=GraphKeys.UPDATE_OPS, is_training=True, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               batch_weights=None, fused=None, data_format="NHWC",
               zero_debias_moving_mean=False, scope=None, renorm=False, renorm_clipping=None,
               renorm_decay=0.99, adjustment=None):
    """TF1's tf.contrib.layers.batch_norm over sf.layers.BatchNormalization (last axis,
    NHWC): moving averages with momentum `decay`; scale=False by default (gamma stays 1);
    variables <scope>/beta, gamma, moving_mean, moving_variance (scope 'BatchNorm'), also in
    MODEL_VARIABLES. With is_training (a bool or a bool tensor) the moving-average updates go
    to `updates_collections` (UPDATE_OPS; run them with the train op), or, with
    updates_collections=None, run before the output is returned (TF1's in-place updates).
    renorm, batch_weights, zero_debias_moving_mean and NCHW are not supported."""
    from shardflow import layers
    for what, value in (("batch_weights", batch_weights), ("renorm", renorm),
                        ("zero_debias_moving_mean", zero_debias_moving_mean),
                        ("adjustment", adjustment), ("param_regularizers", param_regularizers)):
        if value:
            raise ValueError("contrib.layers.batch_norm(%s=...) is not supported" % what)
    if data_format != "NHWC":
        raise ValueError("contrib.layers.batch_norm(data_format=%r): only NHWC (channels last) "
                         "is supported" % (data_format,))
    inits = dict(param_initializers or {})
    unknown = set(inits) - {"beta", "gamma", "moving_mean", "moving_variance"}
    if unknown:
        raise ValueError("batch_norm param_initializers: unknown keys %s (use beta, gamma, "
                         "moving_mean, moving_variance)" % sorted(unknown))
    layer = layers.BatchNormalization(
        momentum=decay, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=inits.get("beta"),
        gamma_initializer=inits.get("gamma"),
        moving_mean_initializer=inits.get("moving_mean"),
        moving_variance_initializer=inits.get("moving_variance"),
        trainable=trainable, name=_scope_name(scope, "BatchNorm", reuse))
    y = layer(inputs, training=is_training)
    g = y.graph
    for v in layer.variables:
        g.add_to_collection(GraphKeys.MODEL_VARIABLES, v)
        _add_to(_collections(variables_collections)(v.op.name.rsplit("/", 1)[-1]), [v])
    if layer.updates and updates_collections != GraphKeys.UPDATE_OPS:
        # The layer put its updates into UPDATE_OPS; move them where they were asked for.
        held = g._collections.get(GraphKeys.UPDATE_OPS, [])
        g._collections[GraphKeys.UPDATE_OPS] = [u for u in held if u not in layer.updates]
        if updates_collections is None:
            with g.control_dependencies(layer.updates):
                y = ops.identity(y)
        else:
            colls = [updates_collections] if isinstance(updates_collections, str) \
                else list(updates_collections)
            _add_to(colls, layer.updates)
    if activation_fn is not None:
        y = activation_fn(y)
    _add_to(outputs_collections, [y])
    return y


def embed_sequence(ids, vocab_size=None, embed_dim=None, unique=False, initializer=None,
                   regularizer=None, trainable=True, scope=None, reuse=None):
    """TF1's tf.contrib.layers.embed_sequence: [batch, time] ids -> [batch, time, embed_dim]
    vectors from a [vocab_size, embed_dim] variable <scope>/embeddings (scope
    'EmbedSequence'; Glorot-uniform by default)."""
    from shardflow import nn
    from shardflow.contrib_framework import model_variable
    from shardflow.variable_scope import variable_scope
    if not (vocab_size and embed_dim):
        raise ValueError("embed_sequence needs vocab_size and embed_dim (both positive), got "
                         "%r and %r" % (vocab_size, embed_dim))
    with variable_scope(_scope_name(scope, "EmbedSequence", reuse), reuse=reuse):
        embeddings = model_variable("embeddings", [int(vocab_size), int(embed_dim)],
                                    initializer=initializer, regularizer=regularizer,
                                    trainable=trainable)
        return nn.embedding_lookup(embeddings, ids)


@add_arg_scope
def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True,
            outputs_collections=None, scope=None, seed=None):
    """TF1's tf.contrib.layers.dropout: with is_training (a bool or a bool tensor) each
    element is kept with probability keep_prob and scaled by 1 / keep_prob; the identity
    otherwise."""
    from shardflow import layers, nn
    g = get_default_graph()
    with g.name_scope(scope or "Dropout"):
        if isinstance(keep_prob, Tensor):
            if isinstance(is_training, Tensor):
                keep_prob = ops.subtract(1.0, ops.multiply(
                    ops.subtract(1.0, keep_prob), ops.cast(is_training, dtypes.float32)))
                y = nn.dropout(inputs, keep_prob, noise_shape=noise_shape, seed=seed)
            elif is_training:
                y = nn.dropout(inputs, keep_prob, noise_shape=noise_shape, seed=seed)
            else:
                y = ops.identity(inputs)
        else:
            y = layers.dropout(inputs, rate=1.0 - float(keep_prob), noise_shape=noise_shape,
                               seed=seed, training=is_training)
    _add_to(outputs_collections, [y])
    return y


OPTIMIZER_CLS_NAMES = ("Adagrad", "Adam", "Ftrl", "Momentum", "RMSProp", "SGD")
OPTIMIZER_SUMMARIES = ("learning_rate", "loss", "gradients", "gradient_norm",
                       "global_gradient_norm")


def _named_optimizer(name, lr):
    from shardflow import train
    make = {"Adagrad": train.AdagradOptimizer, "Adam": train.AdamOptimizer,
            "Ftrl": train.FtrlOptimizer, "RMSProp": train.RMSPropOptimizer,
            "SGD": train.GradientDescentOptimizer,
            "Momentum": lambda learning_rate: train.MomentumOptimizer(learning_rate, 0.9)}
    if name not in make:
        raise ValueError("optimize_loss: optimizer %r is not one of %s, an Optimizer or a "
                         "function of the learning rate" % (name, ", ".join(OPTIMIZER_CLS_NAMES)))
    return make[name](learning_rate=lr)


def optimize_loss(loss, global_step, learning_rate, optimizer, gradient_noise_scale=None,
                  gradient_multipliers=None, clip_gradients=None, learning_rate_decay_fn=None,
                  update_ops=None, variables=None, name=None, summaries=None,
                  colocate_gradients_with_ops=False, increment_global_step=True):
    """TF1's tf.contrib.layers.optimize_loss: the training op for `loss` — gradients of
    `variables` (default: the trainable ones), scaled by gradient_multipliers, noised by
    gradient_noise_scale, clipped (a float: by global norm; a function of grads_and_vars:
    applied), then applied by `optimizer` (a name of OPTIMIZER_CLS_NAMES, an Optimizer class
    or instance, or a function of the learning rate) after the UPDATE_OPS (or `update_ops`),
    with learning_rate_decay_fn(learning_rate, global_step) when given. Adds the `summaries`
    (default learning_rate, loss, global_gradient_norm). Returns the loss, computed after the
    update (as TF1's train tensor)."""
    from shardflow import summary, train
    from shardflow.ops import random_normal
    from shardflow.variables import trainable_variables
    g = get_default_graph()
    loss = convert_to_tensor(loss)
    if global_step is None:
        global_step = train.get_global_step()
    with g.name_scope(name or "OptimizeLoss"):
        if update_ops is None:
            update_ops = g.get_collection(GraphKeys.UPDATE_OPS)
        if update_ops:
            with g.control_dependencies(list(update_ops)):
                loss = ops.identity(loss)
        lr = None
        if learning_rate is not None:
            lr = learning_rate if isinstance(learning_rate, Tensor) else ops.constant(
                float(learning_rate), name="learning_rate")
            if learning_rate_decay_fn is not None:
                if global_step is None:
                    raise ValueError("optimize_loss: learning_rate_decay_fn needs a global_step")
                lr = learning_rate_decay_fn(lr, global_step)
        if isinstance(optimizer, str):
            if lr is None:
                raise ValueError("optimize_loss: a named optimizer needs a learning_rate")
            opt = _named_optimizer(optimizer, lr)
        elif isinstance(optimizer, type) and issubclass(optimizer, train.Optimizer):
            if lr is None:
                raise ValueError("optimize_loss: an Optimizer class needs a learning_rate")
            opt = optimizer(learning_rate=lr)
        elif isinstance(optimizer, train.Optimizer) or hasattr(optimizer, "apply_gradients"):
            opt = optimizer
        elif callable(optimizer):
            opt = optimizer(lr) if lr is not None else optimizer()
        else:
            raise ValueError("optimize_loss: optimizer must be a name, an Optimizer class or "
                             "instance, or a function; got %r" % (optimizer,))
        summaries = OPTIMIZER_SUMMARIES[:2] + ("global_gradient_norm",) \
            if summaries is None else tuple(summaries)
        if lr is not None and "learning_rate" in summaries:
            summary.scalar("learning_rate", lr)
        if "loss" in summaries:
            summary.scalar("loss", loss)
        var_list = list(variables) if variables is not None else trainable_variables()
        grads = opt.compute_gradients(loss, var_list=var_list)
        pairs = [(gr, v) for gr, v in grads if gr is not None]
        if not pairs:
            raise ValueError("optimize_loss: no variable has a gradient of the loss")
        if gradient_noise_scale is not None:
            pairs = [(ops.add(gr, ops.multiply(random_normal(ops.shape(gr)),
                                               float(gradient_noise_scale))), v)
                     for gr, v in pairs]
        if gradient_multipliers:
            by_name = {getattr(k, "name", k): m for k, m in gradient_multipliers.items()}
            pairs = [(ops.multiply(gr, float(by_name[v.name])) if v.name in by_name else gr,
                      v) for gr, v in pairs]
        if "global_gradient_norm" in summaries or "gradient_norm" in summaries:
            summary.scalar("global_norm/gradient_norm",
                           ops.global_norm([gr for gr, _ in pairs]))
        if isinstance(clip_gradients, (int, float)):
            clipped, _ = ops.clip_by_global_norm([gr for gr, _ in pairs],
                                                 float(clip_gradients))
            pairs = list(zip(clipped, [v for _, v in pairs]))
        elif callable(clip_gradients):
            pairs = list(clip_gradients(pairs))
        elif clip_gradients is not None:
            raise ValueError("optimize_loss: clip_gradients must be a number or a function, "
                             "got %r" % (clip_gradients,))
        update = opt.apply_gradients(pairs, global_step=global_step if increment_global_step
                                     else None, name="train")
        with g.control_dependencies([update]):
            return ops.identity(loss, name="train_op")


def __getattr__(name):
    raise AttributeError(
        "shardflow has no tf.contrib.layers.%s: it carries contrib.layers' regularizers, "
        "initializers and the layers fully_connected, conv2d, max_pool2d, flatten, "
        "layer_norm, batch_norm, embed_sequence and dropout (%s). "
        "For other layers use sf.layers (dense, conv2d, batch_normalization, dropout, ...)"
        % (name, ", ".join(__all__)))


__all__ = ["apply_regularization", "batch_norm", "conv2d", "dropout", "embed_sequence", "flatten",
           "fully_connected", "l1_l2_regularizer", "l1_regularizer", "l2_regularizer",
           "layer_norm", "max_pool2d", "optimize_loss", "sum_regularizer",
           "variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d"]
