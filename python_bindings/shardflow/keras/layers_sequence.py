"""tf.keras.layers over sequences, as TF 1.15's: the dot-product Attention (Luong style) and
AdditiveAttention (Bahdanau style) of [query, value] or [query, value, key], and
LocallyConnected1D. Re-exported by keras/layers.py.

Example::

    q = keras.layers.Input(shape=(None, 16))
    v = keras.layers.Input(shape=(None, 16))
    context = keras.layers.Attention()([q, v])          # [batch, Tq, 16]
"""

from shardflow import nn, ops
from shardflow import contractions as _contractions
from shardflow import dtypes
from shardflow.keras import activations, initializers
from shardflow.keras.layers import Layer


class _DenseAttention(Layer):
    """softmax(scores(query, key)) @ value, per example: inputs [query [batch, Tq, dim],
    value [batch, Tv, dim]] or [query, value, key [batch, Tv, dim]] (key defaults to value).
    A mask [query_mask [batch, Tq], value_mask [batch, Tv]] (given as ``mask=`` or carried by
    the inputs, Note [Keras masks] in layers.py) keeps the attention off masked values (their
    scores lowered by 1e9, as Keras) and zeroes the outputs of masked queries. The output
    carries the query's mask. causal=True (TF 2.x) is not supported."""

    supports_masking = True

    def __init__(self, use_scale=False, causal=False, **kwargs):
        if causal:
            raise ValueError("%s(causal=True) is not supported (TF 1.15 has no causal "
                             "attention)" % type(self).__name__)
        super().__init__(**kwargs)
        self.use_scale = bool(use_scale)

    @staticmethod
    def _unpack(inputs, what):
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError("%s layer must be called on a list of inputs, namely [query, "
                             "value] or [query, value, key]." % what)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) == 3 else v
        return q, v, k

    def build(self, input_shape):
        self._unpack(input_shape, type(self).__name__)

    def call(self, inputs, mask=None):
        q, v, k = self._unpack(inputs, type(self).__name__)
        masks = list(mask) if isinstance(mask, (list, tuple)) else [None, None]
        if len(masks) not in (2, 3):
            raise ValueError("%s: the mask is [query_mask, value_mask], got %d masks"
                             % (type(self).__name__, len(masks)))
        q_mask, v_mask = masks[0], masks[1]
        scores = self._scores(q, k)                       # [batch, Tq, Tv]
        if v_mask is not None:
            padding = ops.cast(ops.logical_not(ops.expand_dims(v_mask, 1)), scores.dtype)
            scores = ops.subtract(scores, ops.multiply(1e9, padding))
        weights = nn.softmax(scores)
        y = _contractions.einsum("bqv,bvd->bqd", weights, v)
        dq, dv = q.shape.as_list(), v.shape.as_list()
        y.set_shape([dq[0], dq[1], dv[2]])
        if q_mask is not None:
            y = ops.multiply(y, ops.expand_dims(ops.cast(q_mask, y.dtype), 2))
        return y

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)) and mask and mask[0] is not None:
            return ops.cast(mask[0], dtypes.bool_)
        return None


class Attention(_DenseAttention):
    """Dot-product attention: scores = query @ key^T (times a trained scalar `scale`, 1 at
    the start, with use_scale=True)."""

    def build(self, input_shape):
        super().build(input_shape)
        self.scale = self.add_weight("scale", [], initializer="ones") if self.use_scale \
            else None

    def _scores(self, q, k):
        scores = _contractions.einsum("bqd,bvd->bqv", q, k)
        return ops.multiply(scores, self.scale.value()) if self.use_scale else scores


class AdditiveAttention(_DenseAttention):
    """Additive attention: scores[b, i, j] = sum(scale * tanh(query[b, i] + key[b, j])) over
    the features, `scale` a trained vector [dim] (glorot_uniform) with use_scale=True (the
    default), else ones."""

    def __init__(self, use_scale=True, **kwargs):
        super().__init__(use_scale=use_scale, **kwargs)

    def build(self, input_shape):
        super().build(input_shape)
        dim = input_shape[0].as_list()[-1]
        if dim is None:
            raise ValueError("AdditiveAttention needs the query's last dimension, got %s"
                             % (input_shape[0],))
        self.scale = self.add_weight("scale", [int(dim)], initializer="glorot_uniform") \
            if self.use_scale else None

    def _scores(self, q, k):
        t = ops.tanh(ops.add(ops.expand_dims(q, 2), ops.expand_dims(k, 1)))  # [b, Tq, Tv, d]
        if self.use_scale:
            t = ops.multiply(t, self.scale.value())
        return ops.reduce_sum(t, axis=3)


class LocallyConnected1D(Layer):
    """A 1-D convolution whose weights differ at each output position: [batch, steps,
    channels] -> [batch, output_length, filters], output_length = (steps - kernel_size) //
    strides + 1 ('valid' padding only, as Keras; `steps` must be known). The kernel is
    [output_length, kernel_size * channels, filters] and the bias [output_length, filters],
    Keras's layouts (implementation=1)."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 implementation=1, **kwargs):
        if padding.lower() != "valid":
            raise ValueError("Invalid border mode for LocallyConnected1D (only \"valid\" is "
                             "supported): %s" % padding)
        if data_format not in (None, "channels_last"):
            raise ValueError("LocallyConnected1D: only data_format='channels_last' is "
                             "supported")
        if kernel_constraint is not None or bias_constraint is not None:
            raise ValueError("LocallyConnected1D: constraints are not supported")
        if implementation != 1:
            raise ValueError("LocallyConnected1D: only implementation=1 is supported")
        super().__init__(**kwargs)
        self.filters = int(filters)
        self.kernel_size = int(kernel_size[0] if isinstance(kernel_size, (list, tuple))
                               else kernel_size)
        self.strides = int(strides[0] if isinstance(strides, (list, tuple)) else strides)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.activity_regularizer = activity_regularizer

    def build(self, input_shape):
        dims = input_shape.as_list()
        if len(dims) != 3 or dims[1] is None or dims[2] is None:
            raise ValueError("LocallyConnected1D needs [batch, steps, channels] inputs with "
                             "known steps and channels, got %s" % (input_shape,))
        self._length = (dims[1] - self.kernel_size) // self.strides + 1
        if self._length < 1:
            raise ValueError("LocallyConnected1D: kernel_size %d is longer than the %d steps"
                             % (self.kernel_size, dims[1]))
        self._channels = dims[2]
        self.kernel = self.add_weight(
            "kernel", [self._length, self.kernel_size * dims[2], self.filters],
            initializer=self.kernel_initializer, regularizer=self.kernel_regularizer)
        self.bias = self.add_weight("bias", [self._length, self.filters],
                                    initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer) if self.use_bias else None

    def call(self, inputs):
        width, kernel = self.kernel_size * self._channels, self.kernel.value()
        outs = []
        for i in range(self._length):   # position i: its window [batch, k * C] @ kernel[i]
            start = i * self.strides
            patch = ops.reshape(inputs[:, start:start + self.kernel_size], [-1, width])
            outs.append(ops.expand_dims(ops.matmul(patch, kernel[i]), 1))
        y = ops.concat(outs, 1) if len(outs) > 1 else outs[0]       # [batch, L, filters]
        if self.use_bias:
            y = ops.add(y, self.bias.value())
        return self.activation(y)


__all__ = ["AdditiveAttention", "Attention", "LocallyConnected1D"]
