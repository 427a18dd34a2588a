"""More of Keras's backend functions (keras.backend / K.*), as custom layers, losses and
metrics call them: element-wise math and comparisons, reductions, shape manipulation, random
tensors, convolution and pooling, the learning-phase switches, variable updates and CTC.
Thin wrappers over shardflow's ops with Keras 2.2's argument names and defaults; backend.py
re-exports them.

Example (a custom metric)::

    K = keras.backend
    def top_match(y_true, y_pred):
        return K.mean(K.cast(K.equal(K.argmax(y_true), K.argmax(y_pred)), K.floatx()))
"""

import numpy as np

from shardflow import dtypes, ops


def _backend():
    from shardflow.keras import backend
    return backend


def _sf():
    import shardflow
    return shardflow


# ---- math and comparisons -----------------------------------------------------------------

def l2_normalize(x, axis=None):
    return _sf().nn.l2_normalize(x, axis=axis)


def equal(x, y):
    return ops.equal(x, y)


def not_equal(x, y):
    return _sf().not_equal(x, y)


def greater(x, y):
    return ops.greater(x, y)


def greater_equal(x, y):
    return _sf().greater_equal(x, y)


def less(x, y):
    return ops.less(x, y)


def less_equal(x, y):
    return _sf().less_equal(x, y)


def maximum(x, y):
    return ops.maximum(x, y)


def minimum(x, y):
    return ops.minimum(x, y)


def pow(x, a):  # noqa: A001 (Keras's name)
    return _sf().pow(x, a)


def sign(x):
    return _sf().sign(x)


def round(x):  # noqa: A001 (Keras's name)
    return _sf().round(x)


def cos(x):
    return _sf().cos(x)


def sin(x):
    return _sf().sin(x)


def log1p(x):
    return _sf().log1p(x)


def softplus(x):
    return _sf().nn.softplus(x)


def softsign(x):
    return _sf().nn.softsign(x)


def elu(x, alpha=1.0):
    y = _sf().nn.elu(x)
    return y if alpha == 1 else _sf().where(ops.greater(x, 0.0), y, alpha * y)


def hard_sigmoid(x):
    """clip(0.2 x + 0.5, 0, 1)."""
    return _sf().clip_by_value(0.2 * x + 0.5, 0.0, 1.0)


def identity(x, name=None):
    return ops.identity(x, name=name)


def stop_gradient(variables):
    if isinstance(variables, (list, tuple)):
        return [ops.stop_gradient(v) for v in variables]
    return ops.stop_gradient(variables)


def gradients(loss, variables):
    return _sf().gradients(loss, variables)


# ---- reductions ----------------------------------------------------------------------------

def argmax(x, axis=-1):
    return _sf().argmax(x, axis=axis)


def argmin(x, axis=-1):
    return _sf().argmin(x, axis=axis)


def prod(x, axis=None, keepdims=False):
    return _sf().reduce_prod(x, axis=axis, keepdims=keepdims)


def var(x, axis=None, keepdims=False):
    """The variance (the mean squared deviation from the mean)."""
    m = ops.reduce_mean(x, axis=axis, keepdims=True)
    return ops.reduce_mean(ops.square(x - m), axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    return ops.sqrt(var(x, axis=axis, keepdims=keepdims))


def any(x, axis=None, keepdims=False):  # noqa: A001 (Keras's name)
    return _sf().reduce_any(ops.cast(x, dtypes.bool_), axis=axis, keepdims=keepdims)


def all(x, axis=None, keepdims=False):  # noqa: A001 (Keras's name)
    return _sf().reduce_all(ops.cast(x, dtypes.bool_), axis=axis, keepdims=keepdims)


def logsumexp(x, axis=None, keepdims=False):
    return _sf().reduce_logsumexp(x, axis=axis, keepdims=keepdims)


def cumsum(x, axis=0):
    return ops.cumsum(x, axis=axis)


def cumprod(x, axis=0):
    return _sf().cumprod(x, axis=axis)


# ---- shapes ----------------------------------------------------------------------------------

def permute_dimensions(x, pattern):
    return ops.transpose(x, list(pattern))


def squeeze(x, axis):
    return ops.squeeze(x, [axis])


def flatten(x):
    return ops.reshape(x, [-1])


def batch_flatten(x):
    """[batch, ...] -> [batch, the product of the rest]."""
    dims = x.shape.as_list()
    rest = dims[1:]
    if None not in rest:
        return ops.reshape(x, [-1, int(np.prod(rest))])
    return ops.reshape(x, [ops.shape(x)[0], -1])


def tile(x, n):
    return _sf().tile(x, [n] if isinstance(n, int) else n)


def repeat(x, n):
    """[batch, dim] -> [batch, n, dim]."""
    return _sf().tile(ops.expand_dims(x, 1), [1, n, 1])


def repeat_elements(x, rep, axis):
    """Each slice of x along `axis` repeated `rep` times in place (np.repeat)."""
    rank = x.shape.ndims
    axis = axis % rank
    tiled = _sf().tile(ops.expand_dims(x, axis + 1),
                       [1] * (axis + 1) + [rep] + [1] * (rank - axis - 1))
    dims = x.shape.as_list()
    if None not in dims:
        return ops.reshape(tiled, dims[:axis] + [dims[axis] * rep] + dims[axis + 1:])
    shape = ops.shape(x)
    new = ops.concat([shape[:axis], ops.reshape(shape[axis] * rep, [1]), shape[axis + 1:]], 0)
    out = ops.reshape(tiled, new)
    out.set_shape(dims[:axis] + [dims[axis] * rep if dims[axis] else None] + dims[axis + 1:])
    return out


def one_hot(indices, num_classes):
    return _sf().one_hot(indices, num_classes)


def slice(x, start, size):  # noqa: A001 (Keras's name)
    return ops.slice(x, start, size)


def gather(reference, indices):
    return _sf().gather(reference, indices)


def arange(start, stop=None, step=1, dtype="int32"):
    out = _sf().range(start, stop, step)
    return out if dtype == "int32" else ops.cast(out, dtype)


def dtype(x):
    return x.dtype.base_dtype.name


def is_keras_tensor(x):
    from shardflow.framework import Tensor
    if not isinstance(x, Tensor):
        raise ValueError("Unexpectedly found an instance of type `%s`. Expected a symbolic "
                         "tensor instance." % type(x).__name__)
    return hasattr(x, "_keras_history")


def ones_like(x, dtype=None, name=None):
    out = ops.ones_like(x)
    return out if dtype is None else ops.cast(out, dtype)


def zeros_like(x, dtype=None, name=None):
    out = ops.zeros_like(x)
    return out if dtype is None else ops.cast(out, dtype)


def eye(size, dtype=None, name=None):
    """A variable holding the size x size identity matrix."""
    return _backend().variable(np.eye(size), dtype=dtype, name=name)


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    (top, bottom), (left, right) = padding
    if (data_format or _backend().image_data_format()) == "channels_first":
        return _sf().pad(x, [[0, 0], [0, 0], [top, bottom], [left, right]])
    return _sf().pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]])


def temporal_padding(x, padding=(1, 1)):
    return _sf().pad(x, [[0, 0], list(padding), [0, 0]])


def resize_images(x, height_factor, width_factor, data_format=None, interpolation="nearest"):
    """Images scaled up by whole factors (nearest neighbour, or bilinear)."""
    sf = _sf()
    first = _channels_first(data_format)
    height_axis = 2 if first else 1
    if interpolation == "nearest":  # each pixel repeated: also for sizes known only when fed
        return repeat_elements(repeat_elements(x, height_factor, height_axis), width_factor,
                               height_axis + 1)
    if interpolation != "bilinear":
        raise ValueError("resize_images: interpolation should be 'nearest' or 'bilinear', "
                         "not %r" % (interpolation,))
    if first:
        x = ops.transpose(x, [0, 2, 3, 1])
    dims = x.shape.as_list()
    if dims[1] is None or dims[2] is None:
        raise ValueError("resize_images(interpolation='bilinear') needs the image's height "
                         "and width known, got %s" % x.shape)
    out = sf.image.resize_bilinear(x, [dims[1] * height_factor, dims[2] * width_factor])
    return ops.transpose(out, [0, 3, 1, 2]) if first else out


# ---- random tensors ------------------------------------------------------------------------

def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return ops.random_normal(shape, mean=mean, stddev=stddev,
                             dtype=dtype or _backend().floatx(), seed=seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return ops.random_uniform(shape, minval=minval, maxval=maxval,
                              dtype=dtype or _backend().floatx(), seed=seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return _sf().truncated_normal(shape, mean=mean, stddev=stddev,
                                  dtype=dtype or _backend().floatx(), seed=seed)


def random_binomial(shape, p=0.0, dtype=None, seed=None):
    """1 with probability p, else 0."""
    dtype = dtype or _backend().floatx()
    return ops.cast(ops.less(random_uniform(shape, dtype=dtype, seed=seed), p), dtype)


def dropout(x, level, noise_shape=None, seed=None):
    return _sf().nn.dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


# ---- the learning phase --------------------------------------------------------------------

def switch(condition, then_expression, else_expression):
    """then_expression where condition, else else_expression: a scalar condition chooses
    between the two (each a tensor or a callable giving one, only the chosen one computed); a
    condition with dimensions chooses element by element."""
    sf = _sf()
    condition = sf.convert_to_tensor(condition)
    if condition.dtype != dtypes.bool_:
        condition = ops.cast(condition, dtypes.bool_)
    then_fn = then_expression if callable(then_expression) else (lambda: then_expression)
    else_fn = else_expression if callable(else_expression) else (lambda: else_expression)
    if condition.shape.ndims in (None, 0):
        return sf.cond(ops.reshape(condition, []), then_fn, else_fn)
    then_t, else_t = sf.convert_to_tensor(then_fn()), sf.convert_to_tensor(else_fn())
    # A condition of lower rank is repeated over the expressions' trailing dimensions.
    rank, cond_rank = then_t.shape.ndims, condition.shape.ndims
    if rank is not None and cond_rank < rank:
        for _ in range(rank - cond_rank):
            condition = ops.expand_dims(condition, -1)
        condition = sf.logical_and(condition, ops.cast(ops.ones_like(then_t), dtypes.bool_))
    return sf.where(condition, then_t, else_t)


def in_train_phase(x, alt, training=None):
    """x in training (the learning phase, or `training`), else alt; either may be a callable."""
    if training is None:
        training = _backend().learning_phase()
    if isinstance(training, (bool, int, np.integer)):  # a fixed phase: 1 / True or 0 / False
        chosen = x if training else alt
        return chosen() if callable(chosen) else chosen
    return switch(training, x, alt)


def in_test_phase(x, alt, training=None):
    return in_train_phase(alt, x, training=training)


# ---- convolution, pooling, normalization -----------------------------------------------------

def _channels_first(data_format):
    return (data_format or _backend().image_data_format()) == "channels_first"


def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    sf = _sf()
    first = _channels_first(data_format)
    if first:
        x = ops.transpose(x, [0, 2, 3, 1])
    y = sf.nn.convolution(x, kernel, padding.upper(), strides=list(strides),
                          dilation_rate=list(dilation_rate))
    return ops.transpose(y, [0, 3, 1, 2]) if first else y


def conv1d(x, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    if padding == "causal":
        left = dilation_rate * (kernel.shape.as_list()[0] - 1)
        x = temporal_padding(x, (left, 0))
        padding = "valid"
    return _sf().nn.convolution(x, kernel, padding.upper(), strides=[strides],
                                dilation_rate=[dilation_rate])


def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    sf = _sf()
    first = _channels_first(data_format)
    if first:
        x = ops.transpose(x, [0, 2, 3, 1])
    pool = {"max": sf.nn.max_pool, "avg": sf.nn.avg_pool}.get(pool_mode)
    if pool is None:
        raise ValueError("pool2d: pool_mode should be 'max' or 'avg', not %r" % (pool_mode,))
    y = pool(x, [1] + list(pool_size) + [1], [1] + list(strides) + [1], padding.upper())
    return ops.transpose(y, [0, 3, 1, 2]) if first else y


def bias_add(x, bias, data_format=None):
    if _channels_first(data_format) and x.shape.ndims == 4:
        return x + ops.reshape(bias, [1, -1, 1, 1])
    return _sf().nn.bias_add(x, bias)


def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):
    return _sf().nn.batch_normalization(x, mean, var, beta, gamma, epsilon)


# ---- variables -----------------------------------------------------------------------------

def update(x, new_x):
    return _sf().assign(x, new_x)


def update_add(x, increment):
    return _sf().assign_add(x, increment)


def update_sub(x, decrement):
    return _sf().assign_sub(x, decrement)


def moving_average_update(x, value, momentum):
    """x <- x * momentum + value * (1 - momentum)."""
    return _sf().assign(x, x * momentum + value * (1.0 - momentum))


def manual_variable_initialization(value):
    """Accepted for Keras's API: the shared session initialises the variables it has not yet
    initialised whenever it is fetched either way."""


def set_floatx(value):
    if value not in ("float16", "float32", "float64"):
        raise ValueError("Unknown floatx type: %r" % (value,))
    _backend()._FLOATX = value


def get_uid(prefix=""):
    """1, 2, 3, ... for each call with the same prefix in the default graph (the counters of
    Keras's layer names: after Dense() is 'dense', get_uid('dense') is 2)."""
    counts = _backend()._graph_name_counts()
    counts[prefix] += 1
    return counts[prefix]


def reset_uids():
    _backend()._name_counts.clear()


def name_scope(name):
    return _sf().name_scope(name)


def print_tensor(x, message=""):
    return _sf().Print(x, [x], message)


def foldl(fn, elems, initializer=None, name=None):
    return _sf().foldl(fn, elems, initializer=initializer, name=name)


def foldr(fn, elems, initializer=None, name=None):
    return _sf().foldr(fn, elems, initializer=initializer, name=name)


def map_fn(fn, elems, name=None, dtype=None):
    return _sf().map_fn(fn, elems, name=name, dtype=dtype)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """The cross-entropy of class indices `target` against probabilities (or logits)
    `output` [..., classes]; one value per row (per step of a sequence): keras.losses'."""
    if axis not in (-1, output.shape.ndims - 1):
        raise ValueError("sparse_categorical_crossentropy: only the last axis holds classes")
    from shardflow.keras import losses
    return losses.sparse_categorical_crossentropy(target, output, from_logits=from_logits)


# ---- CTC (Keras's OCR and speech examples) --------------------------------------------------

def ctc_label_dense_to_sparse(labels, label_lengths):
    """Dense labels [batch, max_len] (each row's first label_lengths[i] entries) as a
    SparseTensor."""
    sf = _sf()
    mask = sf.sequence_mask(label_lengths, ops.shape(labels)[1])
    indices = sf.where(mask)
    values = sf.gather_nd(labels, indices)
    return sf.SparseTensor(indices, values, ops.cast(ops.shape(labels), dtypes.int64))


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    """The CTC loss of each batch element: y_true [batch, max_label_len] labels,
    y_pred [batch, time, classes] softmax outputs (the blank last), input_length and
    label_length [batch, 1]. Returns [batch, 1]."""
    sf = _sf()
    label_length = ops.cast(ops.squeeze(label_length, [-1]), dtypes.int32)
    input_length = ops.cast(ops.squeeze(input_length, [-1]), dtypes.int32)
    sparse = ctc_label_dense_to_sparse(ops.cast(y_true, dtypes.int32), label_length)
    logits = ops.log(ops.transpose(y_pred, [1, 0, 2]) + _backend().epsilon())
    loss = sf.nn.ctc_loss(sparse, logits, input_length)
    return ops.expand_dims(loss, 1)


def ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    """([dense decoded sequences, -1 padded] per path, their log probabilities), as Keras's."""
    sf = _sf()
    logits = ops.log(ops.transpose(y_pred, [1, 0, 2]) + _backend().epsilon())
    input_length = ops.cast(input_length, dtypes.int32)
    if greedy:
        decoded, log_prob = sf.nn.ctc_greedy_decoder(logits, input_length)
    else:
        decoded, log_prob = sf.nn.ctc_beam_search_decoder(logits, input_length,
                                                          beam_width=beam_width,
                                                          top_paths=top_paths)
    dense = [sf.sparse.to_dense(d, default_value=-1) for d in decoded]
    return dense, log_prob


def cast_to_floatx(x):
    """A NumPy array (or number) as an array of floatx."""
    return np.asarray(x, dtype=_backend().floatx())


def in_top_k(predictions, targets, k):
    """Whether each target is among the k largest predictions of its row."""
    return _sf().nn.in_top_k(predictions, targets, k)


def reverse(x, axes):
    """x reversed along `axes` (an int or a list)."""
    return _sf().reverse(x, [axes] if isinstance(axes, int) else list(axes))


def is_sparse(tensor):
    from shardflow.sparse_tensor import SparseTensor
    return isinstance(tensor, SparseTensor)


def to_dense(tensor):
    """A SparseTensor as a dense tensor; anything else as it is."""
    if is_sparse(tensor):
        return _sf().sparse.to_dense(tensor)
    return tensor


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    """A variable initialised from N(mean, scale^2), as Keras's."""
    value = np.random.RandomState(seed).normal(mean, scale, size=shape)
    return _backend().variable(value.astype(dtype or _backend().floatx()), name=name)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    """A variable initialised from U(low, high), as Keras's."""
    value = np.random.RandomState(seed).uniform(low, high, size=shape)
    return _backend().variable(value.astype(dtype or _backend().floatx()), name=name)


def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """The transpose of conv2d (a deconvolution) to `output_shape` (NHWC, or NCHW with
    channels_first)."""
    sf = _sf()
    if tuple(dilation_rate) != (1, 1):
        raise ValueError("conv2d_transpose: dilation_rate other than 1 is not supported")
    first = _channels_first(data_format)
    if first:
        x = ops.transpose(x, [0, 2, 3, 1])
        output_shape = [output_shape[0], output_shape[2], output_shape[3], output_shape[1]]
    y = sf.nn.conv2d_transpose(x, kernel, output_shape, [1] + list(strides) + [1],
                               padding.upper())
    return ops.transpose(y, [0, 3, 1, 2]) if first else y


def separable_conv2d(x, depthwise_kernel, pointwise_kernel, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """A depthwise convolution, then a 1x1 pointwise one."""
    sf = _sf()
    first = _channels_first(data_format)
    if first:
        x = ops.transpose(x, [0, 2, 3, 1])
    y = sf.nn.separable_conv2d(x, depthwise_kernel, pointwise_kernel,
                               [1] + list(strides) + [1], padding.upper(),
                               rate=list(dilation_rate))
    return ops.transpose(y, [0, 3, 1, 2]) if first else y


def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None,
        unroll=False, input_length=None):
    """Keras's K.rnn: step_function(input_t, states + constants) -> (output_t, new_states)
    over the time axis of [batch, time, ...] `inputs`, from `initial_states` (a list). Returns
    (last output, outputs [batch, time, ...] in the order the steps ran, final states). With
    `mask` ([batch, time] bool), a masked step keeps the previous output and states. The steps
    are unrolled into the graph (as Keras's unroll=True), so the number of time steps must be
    known when the graph is built."""
    sf = _sf()
    inputs = ops.convert_to_tensor(inputs)
    steps = inputs.shape.as_list()[1] if inputs.shape.ndims and inputs.shape.ndims >= 2 \
        else None
    if steps is None:
        raise NotImplementedError(
            "K.rnn here unrolls the steps, so the number of time steps must be known when the "
            "graph is built (give the Input a fixed length); keras.layers.RNN runs any length")
    states = list(initial_states)
    extra = list(constants or [])
    order = range(steps - 1, -1, -1) if go_backwards else range(steps)
    outputs, last = [], None
    for t in order:
        output, new_states = step_function(inputs[:, t], states + extra)
        new_states = list(new_states) if isinstance(new_states, (list, tuple)) else [new_states]
        if mask is not None:
            keep = ops.cast(ops.expand_dims(ops.cast(mask, "bool")[:, t], 1), output.dtype)
            previous = last if last is not None else ops.zeros_like(output)

            def blend(new, old, keep=keep):
                k = ops.reshape(keep, [-1] + [1] * (new.shape.ndims - 1)) \
                    if new.shape.ndims and new.shape.ndims > 2 else keep
                return ops.add(ops.multiply(k, new), ops.multiply(ops.subtract(1.0, k), old))
            output = blend(output, previous)
            new_states = [blend(n, o) for n, o in zip(new_states, states)]
        outputs.append(output)
        last, states = output, new_states
    # In the order the steps ran, as Keras's (go_backwards: the last time step first).
    return last, sf.stack(outputs, axis=1), states


__all__ = [n for n in list(globals()) if not n.startswith("_") and n not in (
    "np", "dtypes", "ops")]
