"""tf.keras.layers for graph mode, on shardflow's tf.layers classes (shardflow/layers.py).

A layer is called on tensors (``y = Dense(10)(x)``): the first call builds its weights under
its name scope ('dense', 'dense_1', ... as Keras names them); later calls share them. Each
call is remembered on the output tensor (``_keras_history``), from which keras.Model finds the
layers between its inputs and outputs. Dropout, BatchNormalization and the noise layers
(GaussianNoise, GaussianDropout, AlphaDropout, SpatialDropout1D/2D) called without `training`
follow keras.backend.learning_phase(), which Model.fit feeds True.

Example::

    x = keras.layers.Input(shape=(8,))
    h = keras.layers.Dense(16, activation="relu")(x)
    y = keras.layers.Dense(3, activation="softmax")(h)
    model = keras.Model(x, y)
"""

import inspect
import itertools
import re

import numpy as np

from shardflow import array_ops as _array, dtypes, nn, ops
from shardflow import contractions as _contractions
from shardflow import image_resize as _image
from shardflow import layers as _tf
from shardflow import rnn_cell as _rnn
from shardflow.framework import GraphKeys, Tensor, add_to_collection, convert_to_tensor, \
    get_default_graph
from shardflow.keras import activations, backend as K, initializers
from shardflow.keras import constraints as _constraints
from shardflow.keras import regularizers as _regularizers
from shardflow.keras import saving as _saving
from shardflow.regularizers import add_regularization_loss

_call_order = itertools.count()


def _snake(name):
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _shape_tuple(t):
    return tuple(t.shape.as_list()) if t.shape.ndims is not None else None


# Note [What layers add]
# ~~~~~~~~~~~~~~~~~~~~~~
# A layer's call (or a model, after it is built) may add losses, updates and metrics, as TF
# 1.15's Keras: a VAE's KL term (`self.add_loss(kl)` or `model.add_loss(kl)`), batch
# statistics' moving averages (`self.add_update(assign)`), an activation's mean
# (`self.add_metric(tf.reduce_mean(x), name="mean_act", aggregation="mean")`). They are kept
# on the layer or model (losses, updates, _added_metrics); Model._make_functions sums the
# losses into the loss fit minimizes, groups the updates with the training step and fetches
# the metrics with the others (non-stateful: the epoch's value is the mean over its samples).
# A layer called twice adds twice, as in TF 1.15's graph mode.


def _added_losses(losses):
    out = []
    for loss in losses if isinstance(losses, (list, tuple)) else [losses]:
        if callable(loss) and not isinstance(loss, Tensor):
            loss = loss()
        if loss is None:
            continue
        loss = convert_to_tensor(loss)
        if not loss.dtype.is_floating:
            loss = ops.cast(loss, dtypes.float32)
        out.append(loss)
    return out


def _added_updates(updates):
    out = []
    for update in updates if isinstance(updates, (list, tuple)) else [updates]:
        if callable(update) and not isinstance(update, Tensor) and not hasattr(update, "type"):
            update = update()
        if update is not None:
            out.append(update)
    return out


def _added_metric(value, aggregation, name):
    if aggregation not in (None, "mean"):
        raise ValueError("add_metric: aggregation must be 'mean' (TF 1.15 takes no other for "
                         "tensors), got %r" % (aggregation,))
    if not name:
        raise ValueError("add_metric needs a name, e.g. add_metric(tf.reduce_mean(x), "
                         "name='mean_activation', aggregation='mean')")
    value = convert_to_tensor(value)
    if value.shape.ndims not in (None, 0):
        value = ops.reduce_mean(ops.cast(value, dtypes.float32))
    return str(name), value


class Layer(_tf.Layer):
    """Base class of Keras layers; subclass it with ``build(input_shape)`` (weights from
    ``add_weight``) and ``call(inputs)`` (optionally ``training=``).

    Keyword arguments of every layer: name, trainable, input_shape, input_dim (the shape of
    one example; for the first layer of a Sequential), batch_input_shape, dtype.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _saving.record_init(cls)  # model.save writes the constructor's arguments

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        _tf.Layer.__init__(self)
        self._keras_init(dict(kwargs, name=name, trainable=trainable, dtype=dtype))

    def _variable_scope(self, g):
        """As tf.layers' (Note [Layer variables and variable scopes] in shardflow/layers.py),
        except that a Keras layer owns its weights, as in TF1's tf.keras: when variables under
        its name exist already and the scope does not reuse (a second model built from the
        same code, a DQN's target network), its weights go under "<name>_1", "<name>_2", ...
        instead of failing as tf.layers does."""
        if self._var_scope is None:
            from shardflow.variable_scope import AUTO_REUSE, VariableScope, _stack
            scope = _tf.Layer._variable_scope(self, g)
            _stack(g)
            if scope.reuse is not True and scope.reuse != AUTO_REUSE:
                taken = g._variable_store
                full, n = scope.name, 0
                while any(k == full or k.startswith(full + "/") for k in taken):
                    n += 1
                    full = "%s_%d" % (scope.name, n)
                if n:
                    self._var_scope = VariableScope(full, scope.reuse, scope.initializer,
                                                    scope.regularizer)
        return self._var_scope

    def _keras_init(self, kwargs):
        self.name = kwargs.pop("name", None) or K.unique_name(_snake(type(self).__name__))
        self.trainable = kwargs.pop("trainable", True)
        self.dtype = kwargs.pop("dtype", None) or K.floatx()
        shape = None
        if kwargs.get("batch_input_shape") is not None:
            shape = tuple(kwargs.pop("batch_input_shape"))
        elif kwargs.get("input_shape") is not None:
            shape = (kwargs.pop("batch_size", None),) + tuple(kwargs.pop("input_shape"))
        elif kwargs.get("input_dim") is not None:
            shape = (None, int(kwargs.pop("input_dim")))
        self._batch_input_shape = shape
        for key in ("batch_input_shape", "input_shape", "input_dim", "batch_size"):
            kwargs.pop(key, None)
        unknown = [k for k, v in kwargs.items() if v is not None]
        if unknown:
            raise TypeError("%s: unknown keyword argument(s) %s" % (type(self).__name__,
                                                                   ", ".join(sorted(unknown))))
        self.losses = []
        self._inbound_nodes = []        # [(inputs, outputs)] per call
        self._order = None

    # ---- weights ---------------------------------------------------------------------------

    def add_variable(self, name, shape, initializer, trainable=True, regularizer=None,
                     constraint=None):
        # (`constraint`: tf.layers' argument; a Keras layer's come from _set_constraints)
        v = _tf.Layer.add_variable(self, name, shape, initializer, trainable=trainable)
        constraint = getattr(self, "_weight_constraints", {}).get(name)
        if constraint is not None:
            v._keras_constraint = constraint  # applied after each step (keras/constraints.py)
        penalty = add_regularization_loss(v, _regularizers.get(regularizer))  # 'l2' too
        if penalty is not None:
            self.losses.append(penalty)
        return v

    def _set_constraints(self, **by_weight):
        """Keras's `<weight>_constraint` arguments: kept as attributes, and put on the weights
        of those names as add_variable makes them."""
        self._weight_constraints = {}
        for weight, constraint in by_weight.items():
            constraint = _constraints.get(constraint)
            setattr(self, weight + "_constraint", constraint)
            if constraint is not None:
                self._weight_constraints[weight] = constraint

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=True, **kwargs):
        """A weight of the layer (Keras's add_weight); `initializer` a name or an initializer
        (default glorot_uniform)."""
        init = initializers.get(initializer or "glorot_uniform")
        v = self.add_variable(name, list(shape), init, trainable=trainable,
                              regularizer=regularizer)
        constraint = _constraints.get(kwargs.get("constraint"))
        if constraint is not None:
            v._keras_constraint = constraint  # applied after each step
        return v

    # ---- losses, updates and metrics a layer adds (Note [What layers add]) -------------------

    @property
    def built(self):
        return self._built

    @built.setter
    def built(self, value):          # Keras layers' build() ends with self.built = True
        self._built = bool(value)

    def add_loss(self, losses, inputs=None):
        """Adds loss tensors (or zero-argument callables returning them) to the layer's
        `losses`; a model's fit adds them to the loss it minimizes (TF 1.15's Layer.add_loss;
        `inputs` is accepted: every added loss counts)."""
        self.losses.extend(_added_losses(losses))

    def add_update(self, updates, inputs=None):
        """Adds update ops (or tensors, or callables giving them) that a model's fit runs with
        each training step, as batch normalization's moving averages."""
        self.__dict__.setdefault("updates", [])
        self.updates.extend(_added_updates(updates))

    def add_metric(self, value, aggregation=None, name=None):
        """Reports `value` (a tensor) under `name` in fit's and evaluate's logs, its mean over
        the epoch's samples (aggregation 'mean', the only one TF 1.15 takes for tensors)."""
        self.__dict__.setdefault("_added_metrics", [])
        self._added_metrics.append(_added_metric(value, aggregation, name))

    @property
    def trainable_weights(self):
        return [v for v in self.variables if v.trainable] if self.trainable else []

    @property
    def non_trainable_weights(self):
        if not self.trainable:
            return list(self.variables)
        return [v for v in self.variables if not v.trainable]

    trainable_variables = trainable_weights

    def get_weights(self):
        """The weights' values (NumPy arrays), read in keras.backend.get_session()."""
        return K.batch_get_value(self.weights)

    def set_weights(self, values):
        weights = self.weights
        if len(values) != len(weights):
            raise ValueError("layer '%s' has %d weights; %d values were given"
                             % (self.name, len(weights), len(values)))
        K.batch_set_value(list(zip(weights, values)))

    def count_params(self):
        return sum(K.count_params(v) for v in self.weights)

    # ---- calls -----------------------------------------------------------------------------

    def __call__(self, inputs, training=None, **kwargs):
        multi = isinstance(inputs, (list, tuple))
        xs = [convert_to_tensor(x) for x in inputs] if multi else convert_to_tensor(inputs)
        first = xs[0] if multi else xs
        g = first.graph if hasattr(first, "graph") else get_default_graph()
        if training is None and self._uses_training():
            with g.as_default():
                training = K.learning_phase()
        with g.as_default(), self._context(g):
            if not self._built:
                self.build([x.shape for x in xs] if multi else xs.shape)
                self._built = True
                self._order = next(_call_order)
            if self._uses_training():
                kwargs["training"] = training
            masks = [getattr(x, "_keras_mask", None) for x in xs] if multi \
                else getattr(xs, "_keras_mask", None)
            if "mask" in inspect.signature(self.call).parameters:
                masks = kwargs.setdefault("mask", masks)
            elif "mask" in kwargs:  # a mask given to a layer whose call takes none
                masks = kwargs.pop("mask")
            y = self.call(xs, **kwargs)
            out_mask = self.compute_mask(xs, masks)
            if getattr(self, "activity_regularizer", None) is not None:
                with g.name_scope("ActivityRegularizer"):
                    penalty = self.activity_regularizer(y)
                    penalty = ops.divide(penalty, ops.cast(ops.shape(y)[0], penalty.dtype))
                self.losses.append(penalty)
                add_to_collection(GraphKeys.REGULARIZATION_LOSSES, penalty)
        if not any(y is x for x in (xs if multi else [xs])):  # an identity keeps its mask
            self._set_mask(y, out_mask)
        self._record(xs, y)
        return y

    # Note [Keras masks]. As TF 1.15's Keras, a mask ([batch, time] bool: which time steps are
    # real) rides on a layer's output as `_keras_mask`: Masking and Embedding(mask_zero=True)
    # make one; layers with supports_masking pass theirs on (compute_mask); a layer whose
    # call takes `mask` receives its inputs' masks. The recurrent layers skip the masked
    # steps (layers_recurrent.run_cell). The losses of keras.Model do not weight by masks.
    supports_masking = False

    def compute_mask(self, inputs, mask=None):
        """The mask of the outputs: the inputs' mask when the layer supports masking, else
        None (as Keras's base Layer)."""
        return mask if self.supports_masking else None

    @staticmethod
    def _set_mask(y, mask):
        if isinstance(y, (list, tuple)):
            masks = mask if isinstance(mask, (list, tuple)) else [mask] * len(y)
            for t, m in zip(y, masks):
                if isinstance(t, Tensor):
                    t._keras_mask = m
        elif isinstance(y, Tensor):
            y._keras_mask = None if isinstance(mask, (list, tuple)) else mask

    def _uses_training(self):
        return "training" in inspect.signature(self.call).parameters

    def _record(self, xs, y):
        index = len(self._inbound_nodes)
        self._inbound_nodes.append((xs, y))
        for i, out in enumerate(y if isinstance(y, (list, tuple)) else [y]):
            out._keras_history = (self, index, i)

    def _node_output(self, i=0):
        if not self._inbound_nodes:
            raise AttributeError("layer '%s' has not been called yet" % self.name)
        return self._inbound_nodes[0][i]

    input = property(lambda self: self._node_output(0))
    output = property(lambda self: self._node_output(1))

    @property
    def input_shape(self):
        x = self.input
        return [_shape_tuple(t) for t in x] if isinstance(x, list) else _shape_tuple(x)

    @property
    def output_shape(self):
        y = self.output
        return [_shape_tuple(t) for t in y] if isinstance(y, list) else _shape_tuple(y)

    def get_config(self):
        """The layer's constructor arguments by name (as it was built: what Keras's get_config
        gives, so that from_config(get_config()) makes a like layer), with its name,
        trainable and dtype."""
        config = {}
        call = self.__dict__.get("_init_call")
        if call is not None:
            init = type(self).__init__
            init = getattr(init, "__wrapped__", init)
            try:
                bound = inspect.signature(init).bind(self, *call[0], **call[1])
            except TypeError:
                bound = None
            if bound is not None:
                for key, param in inspect.signature(init).parameters.items():
                    if key not in bound.arguments or key == "self":
                        continue
                    if param.kind == param.VAR_KEYWORD:
                        config.update(bound.arguments[key])
                    elif param.kind != param.VAR_POSITIONAL:
                        config[key] = bound.arguments[key]
        config.update(name=self.name, trainable=self.trainable,
                      dtype=getattr(self, "dtype", None))
        return config

    @classmethod
    def from_config(cls, config):
        """A layer from get_config's dict (Keras's Layer.from_config)."""
        return cls(**config)


_saving.record_init(Layer)  # a subclass without an __init__ of its own (Add, a custom
#                             layer) is saved with the arguments Layer's took


def _activation(a):
    """None for the identity (shardflow's layers skip a None activation)."""
    fn = activations.get(a)
    return None if fn is activations.linear else fn


def _padding(p):
    if p.lower() not in ("valid", "same"):
        raise ValueError("padding is 'valid' or 'same', not %r" % (p,))
    return p.upper()


class InputLayer(Layer):
    """The layer behind keras.layers.Input: a placeholder of shape [batch_size, *input_shape]
    (batch_size None by default), or `input_tensor` when given."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 name=None, batch_input_shape=None, **kwargs):
        Layer.__init__(self, name=name or K.unique_name("input"), dtype=dtype, **kwargs)
        if input_tensor is None:
            if batch_input_shape is None:
                if input_shape is None:
                    raise ValueError("InputLayer needs input_shape, batch_input_shape or "
                                     "input_tensor")
                batch_input_shape = (batch_size,) + tuple(input_shape)
            input_tensor = ops.placeholder(dtypes.as_dtype(self.dtype), list(batch_input_shape),
                                           name=self.name)
        self._batch_input_shape = _shape_tuple(input_tensor)
        self._built = True
        self._order = next(_call_order)
        self._record(input_tensor, input_tensor)


def Input(shape=None, batch_size=None, name=None, dtype=None, tensor=None,  # noqa: N802
          batch_shape=None, **kwargs):
    """A placeholder [None, *shape] that starts a functional model.

    Example: ``x = keras.layers.Input(shape=(28, 28))``.
    """
    layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype,
                       input_tensor=tensor, name=name, batch_input_shape=batch_shape, **kwargs)
    return layer.output


class Dense(Layer, _tf.Dense):
    """activation(inputs @ kernel + bias), Keras's Dense."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        _tf.Dense.__init__(self, units, activation=_activation(activation), use_bias=use_bias,
                           kernel_initializer=initializers.get(kernel_initializer),
                           bias_initializer=initializers.get(bias_initializer),
                           kernel_regularizer=kernel_regularizer,
                           bias_regularizer=bias_regularizer,
                           activity_regularizer=activity_regularizer)
        self._keras_init(kwargs)
        self._set_constraints(kernel=kernel_constraint, bias=bias_constraint)


class Conv2D(Layer, _tf.Conv2D):
    """2-D convolution of NHWC inputs (padding 'valid' by default, as Keras)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        _tf._channels_last(data_format, "Conv2D")
        _tf.Conv2D.__init__(self, filters, kernel_size, strides=strides,
                            dilation_rate=dilation_rate,
                            padding=_padding(padding), activation=_activation(activation),
                            use_bias=use_bias,
                            kernel_initializer=initializers.get(kernel_initializer),
                            bias_initializer=initializers.get(bias_initializer),
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer)
        self._keras_init(kwargs)
        self._set_constraints(kernel=kernel_constraint, bias=bias_constraint)


class Conv1D(Layer, _tf.Conv1D):
    """1-D convolution of [batch, steps, channels] inputs."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        _tf.Conv1D.__init__(self, filters, kernel_size, strides=strides,
                            padding=_padding(padding), data_format=data_format,
                            dilation_rate=dilation_rate, activation=_activation(activation),
                            use_bias=use_bias,
                            kernel_initializer=initializers.get(kernel_initializer),
                            bias_initializer=initializers.get(bias_initializer),
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer)
        self._keras_init(kwargs)
        self._set_constraints(kernel=kernel_constraint, bias=bias_constraint)


class MaxPooling2D(Layer, _tf.MaxPooling2D):
    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        _tf.MaxPooling2D.__init__(self, pool_size, strides, _padding(padding),
                                  data_format or "channels_last")
        self._keras_init(kwargs)


class AveragePooling2D(Layer, _tf.AveragePooling2D):
    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        _tf._channels_last(data_format, "AveragePooling2D")
        _tf.AveragePooling2D.__init__(self, pool_size, strides, _padding(padding))
        self._keras_init(kwargs)


class MaxPooling1D(Layer, _tf.MaxPooling1D):
    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        _tf.MaxPooling1D.__init__(self, pool_size, strides, padding, data_format)
        self._keras_init(kwargs)


class GlobalAveragePooling2D(Layer, _tf.GlobalAveragePooling2D):
    def __init__(self, data_format=None, **kwargs):
        _tf._channels_last(data_format, "GlobalAveragePooling2D")
        _tf.GlobalAveragePooling2D.__init__(self)
        self._keras_init(kwargs)


class AveragePooling1D(Layer, _tf.AveragePooling1D):
    """The mean over windows of `pool_size` steps of [batch, steps, channels] inputs."""

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None,
                 **kwargs):
        _tf.AveragePooling1D.__init__(self, pool_size, strides, _padding(padding),
                                      data_format or "channels_last")
        self._keras_init(kwargs)


MaxPool2D, AvgPool2D, AvgPool1D = MaxPooling2D, AveragePooling2D, AveragePooling1D
MaxPool1D = MaxPooling1D


class Flatten(Layer, _tf.Flatten):
    def __init__(self, data_format=None, **kwargs):
        _tf.Flatten.__init__(self)
        self._keras_init(kwargs)


class Dropout(Layer, _tf.Dropout):
    """Zeroes a fraction `rate` of the inputs in training (the learning phase), scaling the
    rest by 1 / (1 - rate); the identity in evaluate and predict."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        _tf.Dropout.__init__(self, rate, seed=seed)
        self.noise_shape = noise_shape
        self._keras_init(kwargs)

    def call(self, x, training=False):
        if self.rate == 0:
            return x
        return _tf.dropout(x, self.rate, noise_shape=self.noise_shape, seed=self.seed,
                           training=training)


class BatchNormalization(Layer, _tf.BatchNormalization):
    """Batch normalisation over one axis (the last; `axis=1` for channels_first); in training
    (the learning phase) it uses the batch's statistics and updates the moving ones (Model.fit
    runs the updates)."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, **kwargs):
        trainable = kwargs.pop("trainable", True)
        _tf.BatchNormalization.__init__(
            self, axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
            beta_initializer=initializers.get(beta_initializer),
            gamma_initializer=initializers.get(gamma_initializer),
            moving_mean_initializer=initializers.get(moving_mean_initializer),
            moving_variance_initializer=initializers.get(moving_variance_initializer),
            beta_regularizer=_regularizers.get(beta_regularizer),
            gamma_regularizer=_regularizers.get(gamma_regularizer))
        self._keras_init(dict(kwargs, trainable=trainable))


class Activation(Layer):
    """Applies an activation ('relu', 'softmax', a function, ...)."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)


class Embedding(Layer):
    """Integer ids [batch, ...] -> rows of an [input_dim, output_dim] table."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, input_length=None, mask_zero=False,
                 embeddings_constraint=None, **kwargs):
        if input_length is not None and "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,) if isinstance(input_length, int) \
                else tuple(input_length)
        super().__init__(**kwargs)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.mask_zero = bool(mask_zero)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = embeddings_regularizer
        self._set_constraints(embeddings=embeddings_constraint)

    def build(self, input_shape):
        self.embeddings = self.add_variable("embeddings", [self.input_dim, self.output_dim],
                                            self.embeddings_initializer,
                                            regularizer=self.embeddings_regularizer)

    def call(self, inputs):
        ids = inputs if inputs.dtype in (dtypes.int32, dtypes.int64) \
            else ops.cast(inputs, dtypes.int32)
        return nn.embedding_lookup(self.embeddings.value(), ids)

    def compute_mask(self, inputs, mask=None):
        """With mask_zero, id 0 is padding: the mask is ids != 0 (Note [Keras masks])."""
        return ops.not_equal(inputs, 0) if self.mask_zero else None


class Reshape(Layer):
    """[batch, ...] -> [batch, *target_shape] (one entry may be -1)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def call(self, inputs):
        target = list(self.target_shape)
        if -1 in target:
            dims = inputs.shape.as_list()[1:]
            if None in dims:
                raise ValueError("Reshape(%s): -1 needs the input's dimensions after the batch, "
                                 "got %s" % (target, inputs.shape))
            known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
            target[target.index(-1)] = int(np.prod(dims, dtype=np.int64)) // known
        return ops.reshape(inputs, [-1] + target)


class Lambda(Layer):
    """Wraps a function of tensors as a layer: ``Lambda(lambda t: t * 2)(x)``."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = dict(arguments or {})

    def call(self, inputs):
        return self.function(inputs, **self.arguments)


class _Merge(Layer):
    """Combines a list of tensors; subclasses give `_merge`."""

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError("%s takes a list of at least 2 tensors" % type(self).__name__)
        return self._merge(list(inputs))

    def compute_mask(self, inputs, mask=None):
        """The inputs' masks and-ed together (Keras's _Merge), None when none has one."""
        masks = [m for m in (mask or []) if m is not None]
        if not masks:
            return None
        out = masks[0]
        for m in masks[1:]:
            out = ops.logical_and(out, m)
        return out


class Add(_Merge):
    def _merge(self, xs):
        return ops.add_n(xs)


class Subtract(_Merge):
    def _merge(self, xs):
        if len(xs) != 2:
            raise ValueError("Subtract takes exactly 2 tensors")
        return ops.subtract(xs[0], xs[1])


class Multiply(_Merge):
    def _merge(self, xs):
        y = xs[0]
        for x in xs[1:]:
            y = ops.multiply(y, x)
        return y


class Average(_Merge):
    def _merge(self, xs):
        return ops.divide(ops.add_n(xs), float(len(xs)))


class Maximum(_Merge):
    def _merge(self, xs):
        y = xs[0]
        for x in xs[1:]:
            y = ops.maximum(y, x)
        return y


class Minimum(_Merge):
    def _merge(self, xs):
        y = xs[0]
        for x in xs[1:]:
            y = ops.minimum(y, x)
        return y


class Concatenate(_Merge):
    """Joins tensors along `axis` (default the last)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def _merge(self, xs):
        axis = self.axis
        if axis < 0:
            axis += xs[0].shape.ndims
        return ops.concat(xs, axis)

    def compute_mask(self, inputs, mask=None):
        """Keras's: the masks (all-True for an input without one) joined along `axis`, then
        and-ed over the last axis."""
        if not mask or all(m is None for m in mask):
            return None
        masks = []
        for x, m in zip(inputs, mask):
            if m is None:
                masks.append(ops.cast(ops.ones_like(x), dtypes.bool_))
            elif m.shape.ndims < x.shape.ndims:
                masks.append(ops.expand_dims(m, -1))
            else:
                masks.append(m)
        axis = self.axis if self.axis >= 0 else self.axis + inputs[0].shape.ndims
        return _array.reduce_all(ops.concat(masks, axis), axis=-1)


def concatenate(inputs, axis=-1, **kwargs):
    return Concatenate(axis=axis, **kwargs)(inputs)


def add(inputs, **kwargs):
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    return Minimum(**kwargs)(inputs)


class _RNN(Layer):
    """A recurrent layer over [batch, time, features] with Keras's arithmetic and weights
    (kernel / recurrent_kernel / bias, Note [Keras recurrent weights] in
    keras/recurrent_math.py), run by dynamic_rnn. Its arguments are Keras's (activation,
    recurrent_activation (hard_sigmoid, TF 1.15's default), use_bias, the initializers,
    regularizers and constraints, unit_forget_bias, dropout and recurrent_dropout in
    training, GRU's reset_after). With go_backwards the time steps are read from the last to
    the first, and with return_sequences the outputs come in that reversed order, as Keras's
    (Bidirectional puts them back in order). return_state adds the final states in Keras's
    order (an LSTM's [h, c]); ``initial_state=`` (a list of tensors in that order) starts from
    them; a mask (Masking, Embedding(mask_zero=True)) skips steps (Note [Masked recurrence] in
    layers_recurrent.py). unroll computes the same in the loop.

    stateful=True (the batch size fixed by batch_input_shape / batch_size): the final states
    of each batch are kept in Variables (`states`, not weights) and are the initial states of
    the next batch; fit, evaluate and predict update them (TF 1.15's state_updates), and
    reset_states() (the layer's or the model's) sets them to zeros."""

    _kind = None

    def __init__(self, units, activation="tanh", return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, **kwargs):
        from shardflow.keras.recurrent_math import RecurrentSpec
        self.stateful = bool(stateful)
        self.states = None
        self.state_updates = []
        self.spec = RecurrentSpec.from_kwargs(self._kind, units, activation, kwargs)
        super().__init__(**kwargs)
        self.units = self.spec.units
        self.activation = self.spec.activation
        self.recurrent_activation = self.spec.recurrent_activation
        self.use_bias = self.spec.use_bias
        self.dropout, self.recurrent_dropout = self.spec.dropout, self.spec.recurrent_dropout
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = bool(go_backwards)
        self.unroll = bool(unroll)
        self.cell = None

    def __call__(self, inputs, initial_state=None, **kwargs):
        from shardflow.keras.layers_recurrent import with_initial_state
        return Layer.__call__(self, with_initial_state(inputs, initial_state), **kwargs)

    def call(self, inputs, mask=None, training=None):
        from shardflow.keras.layers_recurrent import run_cell, split_initial_state
        from shardflow.keras.recurrent_math import KerasRecurrentCell, make_masks
        x, mask, states = split_initial_state(inputs, mask)
        if self.cell is None:
            self.cell = KerasRecurrentCell(self.spec)
        lstm = self._kind == "lstm"
        kept = None
        if self.stateful and states is None:
            kept = states = self._state_variables(x, 2 if lstm else 1)
        if states is not None:
            states = _rnn.LSTMStateTuple(states[1], states[0]) if lstm else states[0]
        self.cell.masks = make_masks(self.spec, x, training)
        made = self.cell.weights is None
        outputs, last, state = run_cell(self, self.cell, x, mask, states, self.go_backwards)
        if made:
            self.losses.extend(self.cell.penalties)
        if kept is not None:
            finals = [state.h, state.c] if lstm else [state]
            updates = [v.assign(f) for v, f in zip(kept, finals)]
            self.state_updates.extend(updates)
            self.add_update(updates)
        y = outputs if self.return_sequences else last
        if self.return_state:
            return [y] + ([state.h, state.c] if lstm else [state])
        return y

    def _state_variables(self, x, count):
        """The Variables (zeros) that carry a stateful layer's states between batches."""
        if self.states is not None:
            return self.states
        batch = x.shape.as_list()[0]
        if batch is None:
            raise ValueError(
                "If a RNN is stateful, it needs to know its batch size. Specify the batch size "
                "of your input tensors: for a Sequential model, pass batch_input_shape=(batch, "
                "timesteps, features) (or batch_size=) to the first layer; for a functional "
                "model, Input(batch_shape=(...)) or Input(batch_size=...).")
        self.states = [K.zeros((batch, self.units), dtype=x.dtype.base_dtype.name,
                               name="%s_state_%d" % (self.name, i)) for i in range(count)]
        return self.states

    def reset_states(self, states=None):
        """Sets the kept states of a stateful layer to zeros (or to `states`, Keras's order:
        an LSTM's [h, c])."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if self.states is None:
            return
        values = [np.zeros(v.shape.as_list()) for v in self.states] if states is None else (
            list(states) if isinstance(states, (list, tuple)) else [states])
        if len(values) != len(self.states):
            raise ValueError("Layer %s expects %d states, got %d" % (self.name, len(self.states),
                                                                      len(values)))
        K.batch_set_value(list(zip(self.states, values)))

    @property
    def kernel(self):
        return self.cell.weights[0] if self.cell is not None and self.cell.weights else None

    @property
    def recurrent_kernel(self):
        return self.cell.weights[1] if self.cell is not None and self.cell.weights else None

    @property
    def bias(self):
        return self.cell.weights[2] if self.cell is not None and self.cell.weights else None

    def compute_mask(self, inputs, mask=None):
        from shardflow.keras.layers_recurrent import split_initial_state
        mask = split_initial_state(inputs, mask)[1]
        out = mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * (2 if isinstance(self, LSTM) else 1)
        return out


class SimpleRNN(_RNN):
    """Keras's SimpleRNN: h' = activation(x W + h U + b)."""

    _kind = "simple"


class GRU(_RNN):
    """Keras's GRU (TF 1.15: reset_after False, recurrent_activation hard_sigmoid)."""

    _kind = "gru"


class LSTM(_RNN):
    """Keras's LSTM (gates i, f, c, o; unit_forget_bias; recurrent_activation hard_sigmoid as
    TF 1.15's)."""

    _kind = "lstm"


class CuDNNLSTM(LSTM):
    """TF1 Keras's CuDNNLSTM (cuDNN's fused LSTM, GPU only there): here the LSTM above, whose
    gates are cuDNN's (sigmoid recurrent activation, tanh), placed wherever the graph's device
    puts it, so models written for a GPU also build and train on a CPU."""

    def __init__(self, units, **kwargs):
        kwargs.setdefault("recurrent_activation", "sigmoid")
        super().__init__(units, **kwargs)


class CuDNNGRU(GRU):
    """TF1 Keras's CuDNNGRU: here the GRU above with cuDNN's gates (sigmoid, the reset gate
    applied after the recurrent matmul)."""

    def __init__(self, units, **kwargs):
        kwargs.setdefault("recurrent_activation", "sigmoid")
        kwargs.setdefault("reset_after", True)
        super().__init__(units, **kwargs)


class InputSpec:
    """What a layer expects of its inputs (dtype, shape, ndim, max_ndim, min_ndim, axes), as
    Keras's InputSpec; custom layers set it as self.input_spec. Kept, not enforced here."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None):
        self.dtype = dtype
        self.shape = shape
        self.ndim = len(shape) if shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.axes = axes or {}

    def __repr__(self):
        return "InputSpec(dtype=%r, shape=%r, ndim=%r, max_ndim=%r, min_ndim=%r, axes=%r)" % (
            self.dtype, self.shape, self.ndim, self.max_ndim, self.min_ndim, self.axes)


class Wrapper(Layer):
    """The base of layers that wrap another (Keras's Wrapper): holds it as self.layer; a
    subclass defines build and call. The wrapped layer's weights become the wrapper's once it
    is built (as TimeDistributed's and Bidirectional's do)."""

    def __init__(self, layer, **kwargs):
        if not callable(layer):
            raise ValueError("%s wraps a keras layer, got %r" % (type(self).__name__, layer))
        super().__init__(**kwargs)
        self.layer = layer

    def __call__(self, *args, **kwargs):
        out = Layer.__call__(self, *args, **kwargs)
        _adopt_variables(self, [self.layer])
        return out


# ---- wrappers ----------------------------------------------------------------------------------


def _adopt_variables(wrapper, layers):
    """The wrapped layers' variables become the wrapper's (its weights, saved and trained as
    any layer's), in the layers' order."""
    known = set(id(v) for v in wrapper.variables)
    for layer in layers:
        for v in layer.variables:
            if id(v) not in known:
                known.add(id(v))
                wrapper.variables.append(v)


class Bidirectional(Layer):
    """Runs a recurrent layer (LSTM, GRU, SimpleRNN) over the sequence forwards and a copy of
    it backwards (go_backwards=True; or `backward_layer`), and merges the two outputs with
    `merge_mode`: 'concat' (the default, on the last axis), 'sum', 'mul', 'ave', or None (the
    list [forward, backward]). With return_sequences the backward outputs are reversed back
    into time order before merging; with return_state the states of both layers follow the
    output, forward first. As Keras's, `layer` itself is not called: the forward and backward
    layers are made anew from its constructor's arguments (named forward_<name> and
    backward_<name>); their weights are the wrapper's (variables under its scope).

    Example::

        model = keras.Sequential([
            keras.layers.Embedding(1000, 16, input_length=20),
            keras.layers.Bidirectional(keras.layers.LSTM(32, return_sequences=True)),
            keras.layers.Bidirectional(keras.layers.LSTM(16)),
            keras.layers.Dense(1, activation="sigmoid")])
    """

    def __init__(self, layer, merge_mode="concat", backward_layer=None, **kwargs):
        if not isinstance(layer, _RNN):
            raise ValueError("Bidirectional wraps a recurrent keras layer (LSTM, GRU, "
                             "SimpleRNN), got %r" % (layer,))
        if merge_mode not in ("sum", "mul", "ave", "concat", None):
            raise ValueError("Invalid merge mode %r. Merge mode should be one of "
                             "{'sum', 'mul', 'ave', 'concat', None}" % (merge_mode,))
        if not any(kwargs.get(k) is not None for k in ("input_shape", "batch_input_shape",
                                                        "input_dim")) \
                and layer._batch_input_shape is not None:
            kwargs["batch_input_shape"] = layer._batch_input_shape
        super().__init__(**kwargs)
        self.forward_layer = self._recreate(layer, "forward_")
        if backward_layer is None:
            self.backward_layer = self._recreate(layer, "backward_",
                                                 go_backwards=not layer.go_backwards)
        else:
            if not isinstance(backward_layer, _RNN):
                raise ValueError("Bidirectional: backward_layer must be a recurrent keras "
                                 "layer, got %r" % (backward_layer,))
            if backward_layer.go_backwards == layer.go_backwards:
                raise ValueError("Bidirectional: backward_layer.go_backwards must be the "
                                 "opposite of layer.go_backwards")
            for attr in ("return_sequences", "return_state"):
                if getattr(backward_layer, attr) != getattr(layer, attr):
                    raise ValueError("Bidirectional: the forward and backward layers need the "
                                     "same %s" % attr)
            self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state

    @staticmethod
    def _recreate(layer, prefix, **overrides):
        call = layer.__dict__.get("_init_call")
        if call is None:
            raise ValueError("Bidirectional: %s was not made by its constructor" % layer.name)
        args, kwargs = call
        kwargs = dict(kwargs, name=prefix + layer.name, **overrides)
        for key in ("input_shape", "batch_input_shape", "input_dim", "batch_size"):
            kwargs.pop(key, None)
        return type(layer)(*args, **kwargs)

    def call(self, inputs):
        with self._inside_variable_scope(inputs.graph):
            y = self.forward_layer(inputs)
            y_rev = self.backward_layer(inputs)
        _adopt_variables(self, [self.forward_layer, self.backward_layer])
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = ops.reverse(y_rev, [1])
        if self.merge_mode == "concat":
            output = ops.concat([y, y_rev], y.shape.ndims - 1)
        elif self.merge_mode == "sum":
            output = ops.add(y, y_rev)
        elif self.merge_mode == "ave":
            output = ops.multiply(ops.add(y, y_rev), 0.5)
        elif self.merge_mode == "mul":
            output = ops.multiply(y, y_rev)
        else:
            output = [y, y_rev]
        if self.return_state:
            return (output if isinstance(output, list) else [output]) + states
        return output

    def compute_mask(self, inputs, mask=None):
        out = mask if self.return_sequences else None
        if self.merge_mode is None:
            out = [out, out]
        if self.return_state:
            n = 4 if isinstance(self.forward_layer, LSTM) else 2
            return (out if isinstance(out, list) else [out]) + [None] * n
        return out


class TimeDistributed(Layer):
    """Applies `layer` to every time step of [batch, time, ...] inputs, with the same weights
    at each step (one call on the inputs reshaped to [batch * time, ...]; the dimensions
    after the time one must be known). `layer`'s weights are the wrapper's.

    Example: ``keras.layers.TimeDistributed(keras.layers.Dense(8), input_shape=(10, 16))``
    gives [batch, 10, 8].
    """

    def __init__(self, layer, **kwargs):
        if not callable(layer):
            raise ValueError("TimeDistributed wraps a keras layer, got %r" % (layer,))
        super().__init__(**kwargs)
        self.layer = layer

    def call(self, inputs, training=None):
        dims = inputs.shape.as_list() if inputs.shape.ndims is not None else None
        if dims is None or len(dims) < 3 or None in dims[2:]:
            raise ValueError("TimeDistributed needs inputs [batch, time, ...] whose dimensions "
                             "after the time one are known, got %s" % (inputs.shape,))
        x = ops.reshape(inputs, [-1] + dims[2:])
        with self._inside_variable_scope(inputs.graph):
            if isinstance(self.layer, Layer) and self.layer._uses_training():
                y = self.layer(x, training=training)
            else:
                y = self.layer(x)
        if isinstance(self.layer, _tf.Layer):
            _adopt_variables(self, [self.layer])
        out = y.shape.as_list()[1:] if y.shape.ndims is not None else None
        if out is not None and None not in out and dims[1] is not None:
            return ops.reshape(y, [-1, dims[1]] + out)
        shape = ops.concat([ops.shape(inputs)[:2], ops.shape(y)[1:]], 0)
        out_tensor = ops.reshape(y, shape)
        if out is not None:
            out_tensor.set_shape([dims[0], dims[1]] + out)
        return out_tensor


# ---- advanced activations ----------------------------------------------------------------------


class LeakyReLU(Layer):
    """x where x >= 0, else alpha * x (Keras's LeakyReLU; alpha 0.3 by default)."""

    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return nn.leaky_relu(inputs, alpha=self.alpha)


class ELU(Layer):
    """x where x > 0, else alpha * (exp(x) - 1) (Keras's ELU)."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        y = nn.elu(inputs)
        if self.alpha == 1.0:
            return y
        return _array.where(ops.greater(inputs, 0.0), y, ops.multiply(self.alpha, y))


class ReLU(Layer):
    """Keras's ReLU: max_value for x >= max_value, x for threshold < x < max_value, else
    negative_slope * (x - threshold). ``ReLU()`` is max(x, 0); ``ReLU(6.0)`` is relu6."""

    def __init__(self, max_value=None, negative_slope=0, threshold=0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise ValueError("ReLU: max_value must be >= 0, got %r" % (max_value,))
        if negative_slope < 0:
            raise ValueError("ReLU: negative_slope must be >= 0, got %r" % (negative_slope,))
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope = float(negative_slope)
        self.threshold = float(threshold)

    def call(self, inputs):
        x, slope, threshold = inputs, self.negative_slope, self.threshold
        if slope != 0 and self.max_value is None and threshold == 0:
            return nn.leaky_relu(x, alpha=slope)
        if slope != 0:
            negative_part = nn.relu(ops.subtract(threshold, x))
        if threshold != 0:
            y = ops.multiply(x, ops.cast(ops.greater(x, threshold), x.dtype))
        else:
            y = nn.relu(x)
        if self.max_value is not None:
            y = ops.minimum(y, self.max_value)
        if slope != 0:
            y = ops.subtract(y, ops.multiply(slope, negative_part))
        return y


class Softmax(Layer):
    """exp(x) / sum(exp(x)) along `axis` (default the last)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def call(self, inputs):
        rank = inputs.shape.ndims
        if self.axis == -1 or (rank is not None and self.axis == rank - 1):
            return nn.softmax(inputs)
        e = ops.exp(ops.subtract(inputs, ops.reduce_max(inputs, axis=self.axis, keepdims=True)))
        return ops.divide(e, ops.reduce_sum(e, axis=self.axis, keepdims=True))


class PReLU(Layer):
    """Parametric ReLU: x where x >= 0, else alpha * x with a trained `alpha` of the shape of
    one example (input_shape[1:]), of size 1 along `shared_axes` (axes of the input, 1 the
    first after the batch), e.g. ``shared_axes=[1, 2]`` for one alpha per channel of images."""

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None, alpha_constraint=None,
                 shared_axes=None, **kwargs):
        if alpha_constraint is not None:
            raise ValueError("PReLU: alpha_constraint is not supported")
        super().__init__(**kwargs)
        self.alpha_initializer = alpha_initializer
        self.alpha_regularizer = alpha_regularizer
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [int(a) for a in shared_axes]
        else:
            self.shared_axes = [int(shared_axes)]

    def build(self, input_shape):
        dims = input_shape.as_list()[1:]
        for a in self.shared_axes or []:
            dims[a - 1] = 1
        if None in dims:
            raise ValueError("PReLU needs the input's dimensions after the batch (or shared_axes "
                             "over the unknown ones), got %s" % (input_shape,))
        self.alpha = self.add_weight("alpha", dims, initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer)

    def call(self, inputs):
        neg = ops.multiply(ops.negative(self.alpha.value()), nn.relu(ops.negative(inputs)))
        return ops.add(nn.relu(inputs), neg)


class ThresholdedReLU(Layer):
    """x where x > theta, else 0."""

    def __init__(self, theta=1.0, **kwargs):
        super().__init__(**kwargs)
        if theta < 0:
            raise ValueError("ThresholdedReLU: theta must be >= 0, got %r" % (theta,))
        self.theta = float(theta)

    def call(self, inputs):
        return ops.multiply(inputs, ops.cast(ops.greater(inputs, self.theta), inputs.dtype))


# ---- noise and regularization ------------------------------------------------------------------


def _in_train_phase(noisy, x, training):
    """noisy() while `training` (a Python bool, or a bool tensor such as the learning phase),
    else x unchanged."""
    if isinstance(training, Tensor):
        on = ops.reshape(ops.cast(training, x.dtype), [])  # a scalar: x's shape stays
        return ops.add(x, ops.multiply(on, ops.subtract(noisy(), x)))
    return noisy() if training else x


class GaussianNoise(Layer):
    """Adds zero-mean normal noise of standard deviation `stddev` in training (the learning
    phase); the identity in evaluate and predict."""

    def __init__(self, stddev, **kwargs):
        super().__init__(**kwargs)
        self.stddev = float(stddev)

    def call(self, inputs, training=False):
        return _in_train_phase(
            lambda: ops.add(inputs, ops.random_normal(ops.shape(inputs), stddev=self.stddev,
                                                      dtype=inputs.dtype)), inputs, training)


class GaussianDropout(Layer):
    """Multiplies the inputs by normal noise of mean 1 and standard deviation
    sqrt(rate / (1 - rate)) in training; the identity in evaluate and predict."""

    def __init__(self, rate, **kwargs):
        super().__init__(**kwargs)
        self.rate = float(rate)

    def call(self, inputs, training=False):
        if not 0 < self.rate < 1:
            return inputs
        stddev = float(np.sqrt(self.rate / (1.0 - self.rate)))
        return _in_train_phase(
            lambda: ops.multiply(inputs, ops.random_normal(ops.shape(inputs), mean=1.0,
                                                           stddev=stddev, dtype=inputs.dtype)),
            inputs, training)


class AlphaDropout(Layer):
    """Dropout for SELU networks: in training a fraction `rate` of the inputs is set to SELU's
    negative saturation value and the result is scaled and shifted to keep the inputs' mean and
    variance; the identity in evaluate and predict."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = float(rate)
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=False):
        if not 0 < self.rate < 1:
            return inputs
        rate = self.rate
        alpha_p = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
        a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * rate

        def dropped():
            shape = self.noise_shape if self.noise_shape is not None else ops.shape(inputs)
            kept = ops.cast(ops.greater_equal(ops.random_uniform(shape, seed=self.seed), rate),
                            inputs.dtype)
            x = ops.add(ops.multiply(inputs, kept), ops.multiply(alpha_p, ops.subtract(1.0, kept)))
            return ops.add(ops.multiply(a, x), b)
        return _in_train_phase(dropped, inputs, training)


class _SpatialDropout(Layer):
    """Drops whole channels (the last axis) of each example in training."""

    def __init__(self, rate, data_format=None, **kwargs):
        _tf._channels_last(data_format, type(self).__name__)
        super().__init__(**kwargs)
        self.rate = float(rate)

    def call(self, inputs, training=False):
        if self.rate == 0:
            return inputs
        rank = inputs.shape.ndims
        if rank != self._rank:
            raise ValueError("%s takes inputs of rank %d, got %s" % (type(self).__name__,
                                                                    self._rank, inputs.shape))
        keep = 1.0 - self.rate

        def dropped():
            shape = ops.concat([ops.shape(inputs)[:1], np.ones([rank - 2], np.int32),
                                ops.shape(inputs)[rank - 1:]], 0)
            mask = ops.floor(ops.add(keep, ops.random_uniform(shape, dtype=inputs.dtype)))
            return ops.multiply(inputs, ops.divide(mask, keep))
        return _in_train_phase(dropped, inputs, training)


class SpatialDropout1D(_SpatialDropout):
    """Dropout of whole channels of [batch, steps, channels] inputs in training (one mask
    per example and channel, shared by the steps), the rest scaled by 1 / (1 - rate)."""
    _rank = 3


class SpatialDropout2D(_SpatialDropout):
    """Dropout of whole feature maps of NHWC inputs in training (one mask per example and
    channel), the rest scaled by 1 / (1 - rate)."""
    _rank = 4


class SpatialDropout3D(_SpatialDropout):
    """Dropout of whole feature volumes of NDHWC inputs in training (one mask per example and
    channel), the rest scaled by 1 / (1 - rate)."""
    _rank = 5


class ActivityRegularization(Layer):
    """The identity, adding l1 * sum(|x|) + l2 * sum(x ** 2) of its output (divided by the
    batch size) to the losses the model trains, as an activity_regularizer does."""

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(**kwargs)
        self.l1, self.l2 = float(l1), float(l2)
        self.activity_regularizer = _regularizers.L1L2(l1=self.l1, l2=self.l2)

    def call(self, inputs):
        return ops.identity(inputs)


# ---- shape -------------------------------------------------------------------------------------


def _pair(value, what):
    """(before, after) from an int or a pair of ints."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError("%s takes an int or 2 ints, not %r" % (what, value))
    return value


def _pairs2d(value, what):
    """((top, bottom), (left, right)) from an int, 2 ints, or 2 pairs."""
    if isinstance(value, int):
        return ((value, value), (value, value))
    value = tuple(value)
    if len(value) != 2:
        raise ValueError("%s takes an int, 2 ints or 2 pairs of ints, not %r" % (what, value))
    return (_pair(value[0], what), _pair(value[1], what))


def _zero_pad(x, axis, before, after):
    """x with `before` and `after` zeros added along `axis` (other dimensions may be unknown)."""
    pieces = []
    rank = x.shape.ndims
    if before or after:
        begin, size = [0] * rank, [-1] * rank
        size[axis] = 1
        zero_row = ops.zeros_like(ops.slice(x, begin, size))
    for n, part in ((before, "b"), (None, "x"), (after, "a")):
        if part == "x":
            pieces.append(x)
        elif n:
            block = [1] * rank
            block[axis] = int(n)
            pieces.append(ops.multiply(zero_row, np.zeros(block, x.dtype.as_numpy_dtype)))
    return pieces[0] if len(pieces) == 1 else ops.concat(pieces, axis)


class Permute(Layer):
    """Permutes the dimensions after the batch: `dims` (1-based, as Keras) is the order,
    e.g. ``Permute((2, 1))`` swaps the two dimensions of [batch, a, b]."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError("Permute: dims must be a permutation of 1..%d, got %r"
                             % (len(self.dims), dims))

    def call(self, inputs):
        return ops.transpose(inputs, [0] + list(self.dims))


class RepeatVector(Layer):
    """[batch, features] -> [batch, n, features]: each row repeated n times."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = int(n)

    def call(self, inputs):
        if inputs.shape.ndims != 2:
            raise ValueError("RepeatVector takes [batch, features] inputs, got %s"
                             % (inputs.shape,))
        ones = np.ones([1, self.n, 1], inputs.dtype.as_numpy_dtype)
        return ops.multiply(ops.expand_dims(inputs, 1), ones)


class ZeroPadding1D(Layer):
    """Adds zeros at the start and end of the steps of [batch, steps, channels] inputs:
    `padding` an int (both sides) or (start, end)."""

    def __init__(self, padding=1, **kwargs):
        super().__init__(**kwargs)
        self.padding = _pair(padding, "ZeroPadding1D padding")

    def call(self, inputs):
        return _zero_pad(inputs, 1, *self.padding)


class ZeroPadding2D(Layer):
    """Adds rows and columns of zeros around NHWC images: `padding` an int, (rows, columns)
    (both sides) or ((top, bottom), (left, right))."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        _tf._channels_last(data_format, "ZeroPadding2D")
        super().__init__(**kwargs)
        self.padding = _pairs2d(padding, "ZeroPadding2D padding")

    def call(self, inputs):
        y = _zero_pad(inputs, 1, *self.padding[0])
        return _zero_pad(y, 2, *self.padding[1])


def _crop(x, axis, before, after):
    if not before and not after:
        return x
    key = [slice(None)] * x.shape.ndims
    key[axis] = slice(before or None, -after if after else None)
    return x[tuple(key)]


class Cropping1D(Layer):
    """Removes steps at the start and end of [batch, steps, channels] inputs: `cropping` an
    int (both sides) or (start, end)."""

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(**kwargs)
        self.cropping = _pair(cropping, "Cropping1D cropping")

    def call(self, inputs):
        return _crop(inputs, 1, *self.cropping)


class Cropping2D(Layer):
    """Removes rows and columns at the borders of NHWC images: `cropping` an int, (rows,
    columns) (both sides) or ((top, bottom), (left, right))."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        _tf._channels_last(data_format, "Cropping2D")
        super().__init__(**kwargs)
        self.cropping = _pairs2d(cropping, "Cropping2D cropping")

    def call(self, inputs):
        y = _crop(inputs, 1, *self.cropping[0])
        return _crop(y, 2, *self.cropping[1])


def _repeat(x, axis, n):
    """Each entry of x repeated n times along `axis` (whose size must be known)."""
    if n == 1:
        return x
    dims = x.shape.as_list()
    if dims[axis] is None or None in dims[axis + 1:]:
        raise ValueError("UpSampling needs the input's dimensions after the batch, got %s"
                         % (x.shape,))
    ones = [1] * (len(dims) + 1)
    ones[axis + 1] = n
    y = ops.multiply(ops.expand_dims(x, axis + 1), np.ones(ones, x.dtype.as_numpy_dtype))
    return ops.reshape(y, [-1] + dims[1:axis] + [dims[axis] * n] + dims[axis + 1:])


class UpSampling1D(Layer):
    """Repeats each step of [batch, steps, channels] inputs `size` times."""

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = int(size)

    def call(self, inputs):
        return _repeat(inputs, 1, self.size)


class UpSampling2D(Layer):
    """Enlarges NHWC images by `size` = (rows, columns) (or an int): 'nearest' repeats each
    pixel, 'bilinear' interpolates (half-pixel centers, as TF 1.15's Keras)."""

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        _tf._channels_last(data_format, "UpSampling2D")
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError("UpSampling2D: interpolation is 'nearest' or 'bilinear', not %r"
                             % (interpolation,))
        super().__init__(**kwargs)
        self.size = (int(size), int(size)) if isinstance(size, int) else \
            tuple(int(s) for s in size)
        self.interpolation = interpolation

    def call(self, inputs):
        if self.interpolation == "nearest":
            return _repeat(_repeat(inputs, 1, self.size[0]), 2, self.size[1])
        h, w = inputs.shape.as_list()[1:3]
        if h is None or w is None:
            raise ValueError("UpSampling2D needs the input's height and width, got %s"
                             % (inputs.shape,))
        return _image.resize_bilinear(inputs, [h * self.size[0], w * self.size[1]],
                                      half_pixel_centers=True)


class _GlobalPooling(Layer):
    def __init__(self, data_format=None, **kwargs):
        _tf._channels_last(data_format, type(self).__name__)
        super().__init__(**kwargs)

    def call(self, inputs):
        axes = list(range(1, self._rank - 1))
        if inputs.shape.ndims != self._rank:
            raise ValueError("%s takes inputs of rank %d, got %s" % (type(self).__name__,
                                                                    self._rank, inputs.shape))
        return self._reduce(inputs, axis=axes)


class GlobalMaxPooling1D(_GlobalPooling):
    """[batch, steps, channels] -> [batch, channels]: the maximum over the steps."""
    _rank, _reduce = 3, staticmethod(ops.reduce_max)


class GlobalAveragePooling1D(_GlobalPooling):
    """[batch, steps, channels] -> [batch, channels]: the mean over the steps."""
    _rank, _reduce = 3, staticmethod(ops.reduce_mean)


class GlobalMaxPooling2D(_GlobalPooling):
    """NHWC -> [batch, channels]: the maximum over height and width."""
    _rank, _reduce = 4, staticmethod(ops.reduce_max)


GlobalMaxPool1D, GlobalAvgPool1D = GlobalMaxPooling1D, GlobalAveragePooling1D
GlobalMaxPool2D, GlobalAvgPool2D = GlobalMaxPooling2D, GlobalAveragePooling2D


class Dot(_Merge):
    """The dot product of two tensors along `axes` (an int, or one axis of each), per example:
    [batch, n] . [batch, n] -> [batch, 1]; [batch, m, n] . [batch, n, p] with axes (2, 1) ->
    [batch, m, p]. With normalize=True the inputs are L2-normalised along those axes first
    (the cosine similarity)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        self.axes = axes
        self.normalize = bool(normalize)

    def compute_mask(self, inputs, mask=None):
        return None   # as Keras's Dot

    def _merge(self, xs):
        if len(xs) != 2:
            raise ValueError("Dot takes exactly 2 tensors")
        x, y = xs
        rx, ry = x.shape.ndims, y.shape.ndims
        axes = [self.axes, self.axes] if isinstance(self.axes, int) else list(self.axes)
        axes = [a % r if a < 0 else a for a, r in zip(axes, (rx, ry))]
        if 0 in axes or rx not in (2, 3) or ry not in (2, 3):
            raise ValueError("Dot takes inputs of rank 2 or 3 and axes after the batch, got "
                             "%s, %s, axes %r" % (x.shape, y.shape, self.axes))
        if self.normalize:
            x = nn.l2_normalize(x, axis=axes[0])
            y = nn.l2_normalize(y, axis=axes[1])
        if rx == 2 and ry == 2:
            return ops.reduce_sum(ops.multiply(x, y), axis=1, keepdims=True)
        # "b" the batch, "k" the contracted axis, "ij" / "pq" the others of x / y
        sx = "b" + "".join("k" if a == axes[0] else "ij"[a - 1] for a in range(1, rx))
        sy = "b" + "".join("k" if a == axes[1] else "pq"[a - 1] for a in range(1, ry))
        out = "b" + sx[1:].replace("k", "") + sy[1:].replace("k", "")
        z = _contractions.einsum("%s,%s->%s" % (sx, sy, out), x, y)
        dx, dy = x.shape.as_list(), y.shape.as_list()
        z.set_shape([dx[0]] + [d for a, d in enumerate(dx) if a not in (0, axes[0])]
                    + [d for a, d in enumerate(dy) if a not in (0, axes[1])])
        return z


def dot(inputs, axes, normalize=False, **kwargs):
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)


# ---- convolutions and normalization ------------------------------------------------------------


class Conv2DTranspose(Layer, _tf.Conv2DTranspose):
    """Transposed 2-D convolution of NHWC inputs (sf.nn.conv2d_transpose): the output is
    `strides` times larger ('same'; 'valid' adds max(kernel_size - strides, 0)). The kernel is
    [kh, kw, filters, in_channels], as in TF 1.x."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 **kwargs):
        _tf._channels_last(data_format, "Conv2DTranspose")
        if output_padding is not None:
            raise ValueError("Conv2DTranspose: output_padding is not supported")
        if dilation_rate not in (1, (1, 1), [1, 1]):
            raise ValueError("Conv2DTranspose: dilation_rate other than 1 is not supported")
        _tf.Conv2DTranspose.__init__(
            self, filters, kernel_size, strides=strides, padding=_padding(padding),
            activation=_activation(activation), use_bias=use_bias,
            kernel_initializer=initializers.get(kernel_initializer),
            bias_initializer=initializers.get(bias_initializer),
            kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer)
        self._keras_init(kwargs)


Convolution2DTranspose = Conv2DTranspose


class SeparableConv2D(Layer, _tf.SeparableConv2D):
    """Depthwise-separable 2-D convolution of NHWC inputs (sf.nn.separable_conv2d): each input
    channel convolved with its own `depth_multiplier` filters (depthwise_kernel), then a 1x1
    convolution into `filters` channels (pointwise_kernel), plus a bias and an activation."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        _tf.SeparableConv2D.__init__(
            self, filters, kernel_size, strides=strides, padding=_padding(padding),
            data_format=data_format, dilation_rate=dilation_rate,
            depth_multiplier=depth_multiplier, activation=_activation(activation),
            use_bias=use_bias, depthwise_initializer=initializers.get(depthwise_initializer),
            pointwise_initializer=initializers.get(pointwise_initializer),
            bias_initializer=initializers.get(bias_initializer),
            depthwise_regularizer=depthwise_regularizer,
            pointwise_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer, depthwise_constraint=depthwise_constraint,
            pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint)
        self._keras_init(kwargs)


SeparableConvolution2D = SeparableConv2D


class DepthwiseConv2D(Layer):
    """Depthwise 2-D convolution of NHWC inputs (sf.nn.depthwise_conv2d): each input channel
    convolved with its own `depth_multiplier` filters (depthwise_kernel [kh, kw, in,
    depth_multiplier]), giving in * depth_multiplier channels, plus a bias and an activation."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, dilation_rate=(1, 1),
                 **kwargs):
        _tf._channels_last(data_format, "DepthwiseConv2D")
        if depthwise_constraint is not None or bias_constraint is not None:
            raise ValueError("DepthwiseConv2D: constraints are not supported")
        super().__init__(**kwargs)
        self.kernel_size = (int(kernel_size), int(kernel_size)) \
            if isinstance(kernel_size, int) else tuple(int(k) for k in kernel_size)
        self.strides = nn._four(strides, "DepthwiseConv2D strides")
        self.padding = _padding(padding)
        self.depth_multiplier = int(depth_multiplier)
        self.activation = _activation(activation)
        self.use_bias = use_bias
        self.depthwise_initializer = depthwise_initializer
        self.bias_initializer = bias_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer
        self.dilation_rate = (int(dilation_rate), int(dilation_rate)) \
            if isinstance(dilation_rate, int) else tuple(int(d) for d in dilation_rate)

    def build(self, input_shape):
        c_in = int(_tf._last_dim(input_shape, "DepthwiseConv2D"))
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", list(self.kernel_size) + [c_in, self.depth_multiplier],
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer)
        if self.use_bias:
            self.bias = self.add_weight("bias", [c_in * self.depth_multiplier],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer)

    def call(self, inputs):
        rate = None if self.dilation_rate == (1, 1) else list(self.dilation_rate)
        y = nn.depthwise_conv2d(inputs, self.depthwise_kernel.value(), list(self.strides),
                                self.padding, rate=rate)
        if self.use_bias:
            y = nn.bias_add(y, self.bias.value())
        return self.activation(y) if self.activation else y


class LayerNormalization(Layer):
    """Normalises each example over `axis` (an int or a list; default the last):
    (x - mean) / sqrt(variance + epsilon) * gamma + beta, with trained gamma and beta of the
    shape of those axes (no moving statistics; the same in training and inference)."""

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        if beta_constraint is not None or gamma_constraint is not None:
            raise ValueError("LayerNormalization: constraints are not supported")
        super().__init__(**kwargs)
        self.axis = [int(a) for a in axis] if isinstance(axis, (list, tuple)) else [int(axis)]
        self.epsilon = float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer

    def build(self, input_shape):
        dims = input_shape.as_list()
        rank = len(dims)
        self._axes = sorted(a % rank for a in self.axis)
        if 0 in self._axes or any(dims[a] is None for a in self._axes):
            raise ValueError("LayerNormalization needs known axes after the batch, got axis %r "
                             "for %s" % (self.axis, input_shape))
        shape = [dims[a] for a in self._axes]
        self.gamma = self.add_weight("gamma", shape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer) if self.scale else None
        self.beta = self.add_weight("beta", shape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer) if self.center else None
        # gamma and beta broadcast against the inputs: size 1 on the other axes
        self._param_shape = [dims[a] if a in self._axes else 1 for a in range(rank)]

    def call(self, inputs):
        mean, variance = nn.moments(inputs, self._axes, keep_dims=True)

        def param(v):
            return None if v is None else ops.reshape(v.value(), self._param_shape)
        return nn.batch_normalization(inputs, mean, variance, param(self.beta),
                                      param(self.gamma), self.epsilon)


# Layers that pass their inputs' mask on, as Keras's (Note [Keras masks]).
for _cls in (Dense, Dropout, Activation, BatchNormalization, LayerNormalization, TimeDistributed,
             GaussianNoise, GaussianDropout, SpatialDropout1D, LeakyReLU, ELU, ReLU, Softmax,
             ThresholdedReLU):
    _cls.supports_masking = True
del _cls

from shardflow.keras import layers_recurrent as _recurrent  # noqa: E402 (it uses Layer)

RNN, Masking = _recurrent.RNN, _recurrent.Masking
SimpleRNNCell, LSTMCell, GRUCell = (_recurrent.SimpleRNNCell, _recurrent.LSTMCell,
                                    _recurrent.GRUCell)
StackedRNNCells = _recurrent.StackedRNNCells

from shardflow.keras import layers_sequence as _sequence  # noqa: E402 (it uses Layer)

Attention, AdditiveAttention = _sequence.Attention, _sequence.AdditiveAttention
LocallyConnected1D = _sequence.LocallyConnected1D

from shardflow.keras import layers_3d as _3d  # noqa: E402 (it uses Layer)

Conv3D, Conv3DTranspose = _3d.Conv3D, _3d.Conv3DTranspose
Convolution3D, Convolution3DTranspose = _3d.Convolution3D, _3d.Convolution3DTranspose
MaxPooling3D, AveragePooling3D = _3d.MaxPooling3D, _3d.AveragePooling3D
MaxPool3D, AvgPool3D = _3d.MaxPool3D, _3d.AvgPool3D
GlobalMaxPooling3D, GlobalAveragePooling3D = _3d.GlobalMaxPooling3D, _3d.GlobalAveragePooling3D
GlobalMaxPool3D, GlobalAvgPool3D = _3d.GlobalMaxPool3D, _3d.GlobalAvgPool3D
UpSampling3D, ZeroPadding3D, Cropping3D = _3d.UpSampling3D, _3d.ZeroPadding3D, _3d.Cropping3D


# Feature columns as a layer (keras/feature_layers.py).
from shardflow.keras.feature_layers import DenseFeatures  # noqa: E402,F401
