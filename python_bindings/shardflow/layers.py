"""A small layer API: Dense, Conv1D, Conv2D, Conv2DTranspose, SeparableConv1D, SeparableConv2D,
BatchNormalization, MaxPool2D (MaxPooling2D), AveragePooling2D, MaxPooling1D, AveragePooling1D,
GlobalAveragePooling2D, Flatten, Dropout and Sequential (ResNets built from them:
shardflow.applications), and TF1's functional forms (dense, conv1d, conv2d, separable_conv1d,
separable_conv2d, max_pooling1d, ...).

Each layer creates its variables on its first call, under its own name scope, and on the device
given to it (``device=``), so a model can be spread over devices layer by layer.

Example::

    model = sf.layers.Sequential([
        sf.layers.Dense(512, activation=sf.nn.relu, device="/device:CPU:0"),
        sf.layers.Dropout(0.2),
        sf.layers.Dense(10, device="/device:CPU:1"),
    ])
    logits = model(x, training=True)       # the training path (dropout active)
    eval_logits = model(x)                 # shares the variables; dropout off
"""

import contextlib

import numpy as np

from shardflow import dtypes, nn, ops
from shardflow.framework import (GraphKeys, Tensor, TensorShape, add_to_collection,
                                 convert_to_tensor, get_default_graph)
from shardflow.variables import initializers


def _conditional_on(items, inputs):
    """TF1's get_updates_for / get_losses_for: the ops or tensors of `items` computed from one
    of `inputs` (a tensor or a list of them), or, for inputs=None, those computed from no
    placeholder at all (the unconditional ones)."""
    items = list(items or [])
    if not items:
        return []
    if inputs is not None:
        flat = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        wanted = {t.op.name if hasattr(t, "op") else t.name for t in flat}

    def reaches(op):
        g, seen, stack = op.graph, set(), [op.name]
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            if inputs is not None and name in wanted:
                return True
            info = g._handle.node_info(name)
            if inputs is None and info["op"] in ("Placeholder", "PlaceholderWithDefault"):
                return True
            stack.extend(n.lstrip("^").split(":")[0] for n in info["inputs"])
            stack.extend(info["control_inputs"])
        return False

    return [item for item in items
            if reaches(item if hasattr(item, "outputs") else item.op) == (inputs is not None)]


def _as_input_shape(input_shape):
    """build's argument as layers take it: a TensorShape, or a list of them (several inputs),
    from what callers give (TF1 code writes ``layer.build((None, 5))``)."""
    if isinstance(input_shape, (list, tuple)) and input_shape and all(
            isinstance(s, (list, tuple, TensorShape)) for s in input_shape):
        return [s if isinstance(s, TensorShape) else TensorShape(list(s)) for s in input_shape]
    if isinstance(input_shape, (list, tuple)):
        return TensorShape(list(input_shape))
    return input_shape


def _layer_kwargs(kwargs, owner):
    """The keyword arguments TF1's tf.layers classes take beyond their own (dtype float32,
    _reuse, _scope); anything else is a TypeError naming it, as TF1's base Layer raises."""
    unknown = sorted(set(kwargs) - {"dtype", "_reuse", "_scope"})
    if unknown:
        raise TypeError("%s: keyword argument(s) not understood: %s"
                        % (owner, ", ".join(unknown)))
    dtype = kwargs.get("dtype")
    if dtype is not None and str(getattr(dtype, "name", dtype)) != "float32":
        raise ValueError("%s(dtype=%r): tf.layers here compute in float32" % (owner, dtype))


class Layer:
    """Base class: ``__call__`` enters the layer's name scope and device, builds the
    variables once (``build``), then applies ``call``. A subclass's ``build`` gets a
    TensorShape (or a list of them) even when called with a tuple."""

    _default_name = "layer"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and not getattr(build, "_takes_shapes", False):
            def shaped_build(self, input_shape, *args, **kw):
                return build(self, _as_input_shape(input_shape), *args, **kw)
            shaped_build.__doc__ = build.__doc__
            shaped_build.__name__ = build.__name__
            shaped_build.__qualname__ = build.__qualname__
            shaped_build._takes_shapes = True
            cls.build = shaped_build

    def __init__(self, name=None, device=None):
        self.name = name
        self.device = device
        self._scope = None
        self._built = False
        self.variables = []
        self._reuse = None       # tf.layers.dense(..., reuse=True); None: the scope's
        self._var_scope = None   # the variable scope the layer's variables live in

    def get_updates_for(self, inputs):
        """The layer's updates computed from `inputs` (a tensor it was called on, or a list),
        or with inputs=None the unconditional ones, as TF1's: e.g. a batch norm's moving
        averages for the call on `x` only, not for the model's own Input placeholder."""
        return _conditional_on(getattr(self, "updates", None), inputs)

    def get_losses_for(self, inputs):
        """As get_updates_for, for the layer's losses (activity regularizers)."""
        return _conditional_on(getattr(self, "losses", None), inputs)

    def _variable_scope(self, g):
        """Note [Layer variables and variable scopes]. As TF1's layers, a layer's variables
        are get_variable("<variable scope>/<layer name>/kernel"): inside variable_scope("net",
        reuse=True) a layer named "conv1" reuses net/conv1/kernel, whatever name scope its ops
        get (net_1/conv1/...). An unnamed layer takes its default name made unique among the
        layers of its enclosing variable scope ("dense", "dense_1", ...), counted afresh each
        time that scope is entered, so a reused scope finds its layers again in call order."""
        if self._var_scope is None:
            from shardflow.variable_scope import AUTO_REUSE, VariableScope, _stack
            outer = _stack(g)[-1]
            base = self.name
            reuse = outer.reuse
            if self._reuse is True or self._reuse == AUTO_REUSE:
                reuse = self._reuse
            if base is None:
                counts = g.__dict__.setdefault("_layer_name_counts", {}).setdefault(
                    outer.name, {})
                # Not reusing, a default name skips those whose variables another kind of
                # layer made (a Keras Dense's "dense/kernel"), as TF1's do not collide.
                taken = g._variable_store if reuse is not True and reuse != AUTO_REUSE else {}
                while True:
                    n = counts.get(self._default_name, 0)
                    counts[self._default_name] = n + 1
                    base = self._default_name if n == 0 else "%s_%d" % (self._default_name, n)
                    prefix = (outer.name + "/" + base if outer.name else base) + "/"
                    if not any(k.startswith(prefix) for k in taken):
                        break
            full = outer.name + "/" + base if outer.name else base
            # As TF1's nested variable scopes, the layer's inherits the custom getter (a
            # float32-storage getter for float16 layers) and the partitioner around it.
            self._var_scope = VariableScope(full, reuse, outer.initializer, outer.regularizer,
                                            outer.partitioner, outer.custom_getter)
        return self._var_scope

    @contextlib.contextmanager
    def _context(self, g):
        if self._scope is None:
            with g.name_scope(self.name or self._default_name) as scope:
                self._scope = scope
        with g.name_scope(self._scope), g.device(self.device) if self.device else \
                contextlib.nullcontext():
            yield

    @contextlib.contextmanager
    def _inside_variable_scope(self, g):
        """Layers built inside this one's call nest their variables under its scope."""
        from shardflow.variable_scope import _stack
        stack = _stack(g)
        stack.append(self._variable_scope(g))
        try:
            yield
        finally:
            stack.pop()

    def add_variable(self, name, shape, initializer, trainable=True, regularizer=None,
                     constraint=None):
        """A new variable of the layer; `regularizer` (a function of it, e.g.
        sf.contrib.layers.l2_regularizer(1e-4)) adds its penalty to
        GraphKeys.REGULARIZATION_LOSSES, as TF1's layers do; `constraint` is applied by the
        optimizers after each update. A tf.layers layer made with trainable=False makes
        non-trainable variables."""
        from shardflow.variable_scope import get_variable
        g = get_default_graph()
        trainable = trainable and getattr(self, "_layer_trainable", True)
        with self._inside_variable_scope(g):
            # get_variable: created, or found when the scope reuses (Note [Layer variables and
            # variable scopes]); the regularizer's penalty is added on creation only.
            v = get_variable(name, shape=list(shape), initializer=initializer,
                             regularizer=regularizer, trainable=trainable,
                             constraint=constraint,
                             dtype=getattr(self, "_variable_dtype", None) or dtypes.float32)
        self.variables.append(v)
        return v

    def _set_tf_options(self, kernel_constraint, bias_constraint, trainable):
        """tf.layers' kernel_constraint / bias_constraint (functions of the variable, applied
        by the optimizers after each update) and trainable."""
        for what, c in (("kernel_constraint", kernel_constraint),
                        ("bias_constraint", bias_constraint)):
            if c is not None and not callable(c):
                raise ValueError("%s: %s must be a function of the variable, not %r"
                                 % (type(self).__name__, what, c))
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self._layer_trainable = bool(trainable)

    @property
    def trainable_variables(self):
        return [v for v in self.variables if v.trainable]

    @property
    def non_trainable_variables(self):
        return [v for v in self.variables if not v.trainable]

    # Keras's spellings, which TF1's tf.layers classes also have.
    weights = property(lambda self: list(self.variables))
    trainable_weights = property(lambda self: self.trainable_variables)
    non_trainable_weights = property(lambda self: self.non_trainable_variables)

    def build(self, input_shape):
        pass

    def call(self, x, training=False):
        raise NotImplementedError

    def __call__(self, x, training=False):
        x = convert_to_tensor(x)
        g = x.graph if hasattr(x, "graph") else get_default_graph()
        with self._context(g), self._inside_variable_scope(g):
            if not self._built:
                # As TF1's layers: variables take the floating dtype of the first input
                # (float64 inputs make float64 kernels), float32 otherwise.
                if getattr(x, "dtype", None) is not None and x.dtype.is_floating:
                    self._variable_dtype = x.dtype
                self.build(x.shape)
                self._built = True
            y = self.call(x, training=training)
            activity_regularizer = getattr(self, "activity_regularizer", None)
            if activity_regularizer is not None:
                # TF1.13-1.15's activity_regularizer: a penalty on the layer's output, divided
                # by the batch size ("batch-agnostic", as their Keras-based layers do).
                with y.graph.name_scope("ActivityRegularizer"):
                    penalty = activity_regularizer(y)
                    if penalty is not None:
                        batch = ops.cast(ops.shape(y)[0], penalty.dtype)
                        penalty = ops.divide(penalty, batch)
                if penalty is not None:
                    add_to_collection(GraphKeys.REGULARIZATION_LOSSES, penalty)
            return y


def _last_dim(shape, layer):
    if shape.ndims is None or shape.as_list()[-1] is None:
        raise ValueError("%s needs inputs whose last dimension is known, got %r" % (layer, shape))
    return shape[-1]


class Dense(Layer):
    """y = activation(x @ kernel + bias) for x of shape [batch, in].

    `kernel_regularizer`, `bias_regularizer` and `activity_regularizer` (functions of the
    kernel, the bias and the output) add their penalties to GraphKeys.REGULARIZATION_LOSSES,
    as TF1's.

    Example: ``h = sf.layers.Dense(128, activation=sf.nn.relu, seed=1)(x)``.
    """

    _default_name = "dense"

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 trainable=True, name=None, seed=0, device=None):
        super().__init__(name, device)
        self._set_tf_options(kernel_constraint, bias_constraint, trainable)
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer or initializers.glorot_uniform(seed)
        self.bias_initializer = bias_initializer or initializers.zeros()
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer

    def build(self, input_shape):
        n_in = _last_dim(input_shape, "Dense")
        self.kernel = self.add_variable("kernel", [n_in, self.units], self.kernel_initializer,
                                        regularizer=self.kernel_regularizer,
                                        constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_variable("bias", [self.units], self.bias_initializer,
                                          regularizer=self.bias_regularizer,
                                          constraint=self.bias_constraint)

    def call(self, x, training=False):
        y = ops.matmul(x, self.kernel)
        if self.use_bias:
            y = nn.bias_add(y, self.bias)
        return self.activation(y) if self.activation else y


class Conv2D(Layer):
    """2-D convolution of NHWC inputs, plus a bias and an optional activation; TF1's
    tf.layers.Conv2D, with its parameter order (filters, kernel_size, strides, padding,
    data_format, dilation_rate, activation, use_bias, ...) and its default padding 'valid'.

    Regularizers as for Dense.

    Example: ``h = sf.layers.Conv2D(32, 5, padding="same", activation=sf.nn.relu)(images)``.
    """

    _default_name = "conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 seed=0, device=None, **kwargs):
        _layer_kwargs(kwargs, type(self).__name__)
        super().__init__(name, device)
        if data_format not in (None, "channels_last", "NHWC"):
            raise ValueError("layers.Conv2D(data_format=%r): only channels_last (NHWC) is "
                             "supported; transpose NCHW inputs with sf.transpose(x, [0, 2, 3, "
                             "1])" % (data_format,))
        self._set_tf_options(kernel_constraint, bias_constraint, trainable)
        self.dilation_rate = dilation_rate
        self.bias_initializer = bias_initializer or initializers.zeros()
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer
        self.filters = int(filters)
        self.kernel_size = ((kernel_size, kernel_size) if isinstance(kernel_size, int)
                            else tuple(kernel_size))
        self.strides = strides
        self.padding = padding.upper() if isinstance(padding, str) else padding
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer or initializers.glorot_uniform(seed)

    def build(self, input_shape):
        c_in = _last_dim(input_shape, "Conv2D")
        self.kernel = self.add_variable(
            "kernel", list(self.kernel_size) + [c_in, self.filters], self.kernel_initializer,
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_variable("bias", [self.filters], self.bias_initializer,
                                          regularizer=self.bias_regularizer,
                                          constraint=self.bias_constraint)

    def call(self, x, training=False):
        y = nn.conv2d(x, self.kernel, strides=self.strides, padding=self.padding,
                      dilations=self.dilation_rate)
        if self.use_bias:
            y = nn.bias_add(y, self.bias)
        return self.activation(y) if self.activation else y


class Conv1D(Conv2D):
    """1-D convolution of [batch, width, channels] inputs (TF1's tf.layers.Conv1D; padding
    'valid' by default, as there), plus a bias and an optional activation. The kernel is
    [kernel_size, in_channels, filters]; regularizers as for Dense.

    Example: ``h = sf.layers.Conv1D(16, 3, padding="same", activation=sf.nn.relu)(seq)``.
    """

    _default_name = "conv1d"

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, trainable=True, name=None,
                 seed=0, device=None, kernel_constraint=None, bias_constraint=None, **kwargs):
        _layer_kwargs(kwargs, "Conv1D")
        _channels_last(data_format, "Conv1D")
        super().__init__(filters, (1, _one(kernel_size, "Conv1D kernel_size")),
                         strides=_one(strides, "Conv1D strides"), padding=padding.upper(),
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, seed=seed, name=name,
                         device=device, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable)
        self.dilation_rate = _one(dilation_rate, "Conv1D dilation_rate")

    def build(self, input_shape):
        c_in = _last_dim(input_shape, "Conv1D")
        self.kernel = self.add_variable(
            "kernel", [self.kernel_size[1], c_in, self.filters], self.kernel_initializer,
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_variable("bias", [self.filters], self.bias_initializer,
                                          regularizer=self.bias_regularizer,
                                          constraint=self.bias_constraint)

    def call(self, x, training=False):
        y = nn.conv1d(x, self.kernel, stride=self.strides, padding=self.padding,
                      dilations=self.dilation_rate)
        if self.use_bias:
            y = nn.bias_add(y, self.bias)
        return self.activation(y) if self.activation else y


def _one(v, what):
    """An int, or a 1-element list or tuple of one."""
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise ValueError("%s takes an int or a 1-tuple, not %r" % (what, v))
        v = v[0]
    return int(v)


def _channels_last(data_format, what):
    if data_format not in ("channels_last", "NHWC", "NWC", None):
        raise ValueError("%s(data_format=%r): only channels_last is supported"
                         % (what, data_format))


class Conv2DTranspose(Conv2D):
    """Transposed 2-D convolution (TF1's tf.layers.Conv2DTranspose), NHWC: the output is
    `strides` times larger ('SAME'; 'VALID' adds kernel_size - 1). The kernel is
    [kh, kw, filters, in_channels], as in TF1.

    Example: ``up = sf.layers.Conv2DTranspose(16, 3, strides=2, padding="same")(h)``.
    """

    _default_name = "conv2d_transpose"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, seed=0, device=None,
                 **kwargs):
        """TF1's tf.layers.Conv2DTranspose parameters, in its order (no dilation_rate)."""
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, seed=seed, device=device, **kwargs)

    def build(self, input_shape):
        c_in = _last_dim(input_shape, "Conv2DTranspose")
        self.kernel = self.add_variable(
            "kernel", list(self.kernel_size) + [self.filters, c_in], self.kernel_initializer,
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_variable("bias", [self.filters], self.bias_initializer,
                                          regularizer=self.bias_regularizer,
                                          constraint=self.bias_constraint)

    def call(self, x, training=False):
        strides = nn._four(self.strides, "strides")
        padding = self.padding.upper()
        dims = x.shape.as_list()

        def out_size(i):
            size, k, st = dims[i], self.kernel_size[i - 1], strides[i]
            if size is None:
                return None
            return size * st if padding == "SAME" else (size - 1) * st + max(k - st, 0) + st
        out = [out_size(1), out_size(2)]
        if None in out:
            raise ValueError("Conv2DTranspose needs the input's height and width, got %r" % dims)
        batch = dims[0] if dims[0] is not None else ops.shape(x)[0]
        y = nn.conv2d_transpose(x, self.kernel, [batch, out[0], out[1], self.filters],
                                strides=strides, padding=padding)
        if self.use_bias:
            y = nn.bias_add(y, self.bias)
        return self.activation(y) if self.activation else y


class SeparableConv2D(Layer):
    """Depthwise-separable 2-D convolution of NHWC inputs (TF1's tf.layers.SeparableConv2D,
    on sf.nn.separable_conv2d): each input channel convolved with its own `depth_multiplier`
    filters (depthwise_kernel [kh, kw, in, depth_multiplier]), then a 1x1 convolution that
    mixes those in * depth_multiplier channels into `filters` (pointwise_kernel
    [1, 1, in * depth_multiplier, filters]), plus a bias and an optional activation. Padding
    is 'valid' by default, as in TF1; `strides` apply to the depthwise step. Regularizers as
    for Dense; with trainable=False the variables stay out of GraphKeys.TRAINABLE_VARIABLES.

    Example: ``h = sf.layers.SeparableConv2D(64, 3, padding="same", activation=sf.nn.relu)(x)``.
    """

    _default_name = "separable_conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                 activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=None, depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 trainable=True, name=None, seed=0, device=None):
        _channels_last(data_format, "SeparableConv2D")
        if any(c is not None for c in (depthwise_constraint, pointwise_constraint,
                                       bias_constraint)):
            raise ValueError("SeparableConv2D: depthwise_constraint, pointwise_constraint and "
                             "bias_constraint are not supported")
        super().__init__(name, device)
        self.filters = int(filters)
        self.kernel_size = ((kernel_size, kernel_size) if isinstance(kernel_size, int)
                            else tuple(int(k) for k in kernel_size))
        self.strides = nn._four(strides, "SeparableConv2D strides")
        self.padding = padding.upper()
        self.dilation_rate = dilation_rate
        self.depth_multiplier = int(depth_multiplier)
        self.activation = activation
        self.use_bias = use_bias
        self.trainable = bool(trainable)
        # Two seeded initializers of one seed would draw the same numbers: the pointwise one
        # takes the next seed (0, unseeded, stays 0).
        self.depthwise_initializer = depthwise_initializer or initializers.glorot_uniform(seed)
        self.pointwise_initializer = pointwise_initializer or initializers.glorot_uniform(
            seed + 1 if seed else 0)
        self.bias_initializer = bias_initializer or initializers.zeros()
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer

    def build(self, input_shape):
        c_in = _last_dim(input_shape, "SeparableConv2D")
        self.depthwise_kernel = self.add_variable(
            "depthwise_kernel", list(self.kernel_size) + [c_in, self.depth_multiplier],
            self.depthwise_initializer, trainable=self.trainable,
            regularizer=self.depthwise_regularizer)
        self.pointwise_kernel = self.add_variable(
            "pointwise_kernel", [1, 1, c_in * self.depth_multiplier, self.filters],
            self.pointwise_initializer, trainable=self.trainable,
            regularizer=self.pointwise_regularizer)
        if self.use_bias:
            self.bias = self.add_variable("bias", [self.filters], self.bias_initializer,
                                          trainable=self.trainable,
                                          regularizer=self.bias_regularizer)

    def call(self, x, training=False):
        y = nn.separable_conv2d(x, self.depthwise_kernel, self.pointwise_kernel,
                                strides=self.strides, padding=self.padding,
                                rate=self.dilation_rate)
        if self.use_bias:
            y = nn.bias_add(y, self.bias)
        return self.activation(y) if self.activation else y


class SeparableConv1D(SeparableConv2D):
    """Depthwise-separable 1-D convolution of [batch, width, channels] inputs (TF1's
    tf.layers.SeparableConv1D): depthwise_kernel [kernel_size, in, depth_multiplier],
    pointwise_kernel [1, in * depth_multiplier, filters] and bias [filters], as TF1's, run as
    SeparableConv2D over a height of 1.

    Example: ``h = sf.layers.SeparableConv1D(32, 3, padding="same")(seq)``.
    """

    _default_name = "separable_conv1d"

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                 activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=None, depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 trainable=True, name=None, seed=0, device=None, **kwargs):
        _layer_kwargs(kwargs, "SeparableConv1D")
        _channels_last(data_format, "SeparableConv1D")
        super().__init__(
            filters, (1, _one(kernel_size, "SeparableConv1D kernel_size")),
            strides=(1, _one(strides, "SeparableConv1D strides")), padding=padding,
            dilation_rate=(1, _one(dilation_rate, "SeparableConv1D dilation_rate")),
            depth_multiplier=depth_multiplier, activation=activation, use_bias=use_bias,
            depthwise_initializer=depthwise_initializer,
            pointwise_initializer=pointwise_initializer, bias_initializer=bias_initializer,
            depthwise_regularizer=depthwise_regularizer,
            pointwise_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            depthwise_constraint=depthwise_constraint,
            pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint,
            trainable=trainable, name=name, seed=seed, device=device)

    def build(self, input_shape):
        c_in = _last_dim(input_shape, "SeparableConv1D")
        self.depthwise_kernel = self.add_variable(
            "depthwise_kernel", [self.kernel_size[1], c_in, self.depth_multiplier],
            self.depthwise_initializer, trainable=self.trainable,
            regularizer=self.depthwise_regularizer)
        self.pointwise_kernel = self.add_variable(
            "pointwise_kernel", [1, c_in * self.depth_multiplier, self.filters],
            self.pointwise_initializer, trainable=self.trainable,
            regularizer=self.pointwise_regularizer)
        if self.use_bias:
            self.bias = self.add_variable("bias", [self.filters], self.bias_initializer,
                                          trainable=self.trainable,
                                          regularizer=self.bias_regularizer)

    def call(self, x, training=False):
        y = nn.separable_conv2d(ops.expand_dims(x, 1), ops.expand_dims(self.depthwise_kernel, 0),
                                ops.expand_dims(self.pointwise_kernel, 0),
                                strides=self.strides, padding=self.padding,
                                rate=self.dilation_rate)
        y = ops.squeeze(y, [1])
        if self.use_bias:
            y = nn.bias_add(y, self.bias)
        return self.activation(y) if self.activation else y


class BatchNormalization(Layer):
    """Batch normalisation over one axis (the channels: the last by default, `axis=1` for
    NCHW), as TF1's tf.layers.BatchNormalization.

    Called with ``training=True`` it normalises with the batch's mean and variance and adds
    the updates of its moving averages (moving = momentum * moving + (1 - momentum) * batch) to
    ``self.updates`` and to the graph's ``sf.GraphKeys.UPDATE_OPS``; run them with the train
    op. Otherwise it normalises with the moving averages. `training` may also be a bool tensor
    (a placeholder): then both are built and the fed value picks one, and the updates change
    nothing when it is false.

    Example::

        bn = sf.layers.BatchNormalization()
        h = sf.nn.relu(bn(conv(x), training=True))
        with sf.control_dependencies(sf.get_collection(sf.GraphKeys.UPDATE_OPS)):
            train = opt.minimize(loss)
    """

    _default_name = "batch_normalization"

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=None, gamma_initializer=None, moving_mean_initializer=None,
                 moving_variance_initializer=None, name=None, device=None, trainable=True,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, virtual_batch_size=None, adjustment=None):
        super().__init__(name, device)
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise NotImplementedError(
                "BatchNormalization: renorm, virtual_batch_size and adjustment are not "
                "supported (plain batch normalization is)")
        for what, c in (("beta_constraint", beta_constraint),
                        ("gamma_constraint", gamma_constraint)):
            if c is not None and not callable(c):
                raise ValueError("BatchNormalization: %s must be a function of the variable, "
                                 "not %r" % (what, c))
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        if isinstance(axis, (list, tuple)) and len(axis) == 1:
            axis = axis[0]
        if not isinstance(axis, (int, np.integer)):
            raise ValueError("BatchNormalization(axis=%r): one axis (the channels: -1 for NHWC, "
                             "1 for NCHW) is supported, not several" % (axis,))
        self.axis = int(axis)
        if not 0 <= momentum < 1:
            raise ValueError("BatchNormalization momentum must be in [0, 1), got %r" % (momentum,))
        if not epsilon > 0:
            raise ValueError("BatchNormalization epsilon must be positive, got %r" % (epsilon,))
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        self.trainable = trainable
        self.beta_initializer = beta_initializer or initializers.zeros()
        self.gamma_initializer = gamma_initializer or initializers.constant(1.0)
        self.moving_mean_initializer = moving_mean_initializer or initializers.zeros()
        self.moving_variance_initializer = (moving_variance_initializer
                                            or initializers.constant(1.0))
        self.updates = []

    def build(self, input_shape):
        if input_shape.ndims is None:
            raise ValueError("BatchNormalization needs inputs of known rank, got %r"
                             % (input_shape,))
        if not -input_shape.ndims <= self.axis < input_shape.ndims:
            raise ValueError("BatchNormalization(axis=%d) for inputs of rank %d"
                             % (self.axis, input_shape.ndims))
        c = input_shape.as_list()[self.axis]
        if c is None:
            raise ValueError("BatchNormalization needs inputs whose axis %d is known, got %r"
                             % (self.axis, input_shape))
        # As TF1's: scale=False makes no gamma (a constant 1), center=False no beta (0).
        self.gamma = self.add_variable("gamma", [c], self.gamma_initializer,
                                       trainable=self.trainable,
                                       regularizer=self.gamma_regularizer,
                                       constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_variable("beta", [c], self.beta_initializer,
                                      trainable=self.trainable,
                                      regularizer=self.beta_regularizer,
                                      constraint=self.beta_constraint) if self.center else None
        self._channels = c
        self.moving_mean = self.add_variable("moving_mean", [c], self.moving_mean_initializer,
                                             trainable=False)
        self.moving_variance = self.add_variable("moving_variance", [c],
                                                 self.moving_variance_initializer,
                                                 trainable=False)

    def _add_update(self, moving, batch, weight):
        delta = ops.multiply(ops.subtract(batch, moving.value()), 1.0 - self.momentum)
        if weight is not None:
            delta = ops.multiply(delta, weight)
        update = moving.assign_add(delta, read_value=False)
        self.updates.append(update)
        add_to_collection(GraphKeys.UPDATE_OPS, update)

    def _scale_and_offset(self):
        dtype = getattr(self, "_variable_dtype", None) or dtypes.float32
        ones = np.ones([self._channels], dtype.as_numpy_dtype)
        gamma = self.gamma.value() if self.gamma is not None else ops.constant(ones)
        beta = self.beta.value() if self.beta is not None else ops.constant(0 * ones)
        return gamma, beta

    def call(self, x, training=False):
        # The kernel normalises the last axis: another (NCHW's channels) is moved there and back.
        x, restore = nn.channels_last(x, self.axis, "BatchNormalization")
        return restore(self._normalize(x, training))

    def _normalize(self, x, training):
        mean, var = self.moving_mean.value(), self.moving_variance.value()
        gamma, beta = self._scale_and_offset()
        if isinstance(training, Tensor):
            # Both paths; the fed bool weighs them (0 or 1) and the updates. A scalar, so the
            # result keeps x's shape (a placeholder(tf.bool) has unknown rank).
            t = ops.reshape(ops.cast(training, dtypes.float32), [])
            y_train, batch_mean, batch_var = nn.fused_batch_norm(
                x, gamma, beta, epsilon=self.epsilon)
            batch_var = nn.moving_variance_update(x, batch_var)
            y_eval, _, _ = nn.fused_batch_norm(x, gamma, beta, mean,
                                               var, epsilon=self.epsilon, is_training=False)
            self._add_update(self.moving_mean, batch_mean, t)
            self._add_update(self.moving_variance, batch_var, t)
            return ops.add(ops.multiply(y_train, t), ops.multiply(y_eval, ops.subtract(1.0, t)))
        if not training:
            return nn.fused_batch_norm(x, gamma, beta, mean, var,
                                       epsilon=self.epsilon, is_training=False)[0]
        y, batch_mean, batch_var = nn.fused_batch_norm(x, gamma, beta,
                                                       epsilon=self.epsilon)
        batch_var = nn.moving_variance_update(x, batch_var)
        self._add_update(self.moving_mean, batch_mean, None)
        self._add_update(self.moving_variance, batch_var, None)
        return y


class _Pool2D(Layer):
    """A pooling window over NHWC inputs; subclasses name the nn function."""

    def __init__(self, pool_size=2, strides=None, padding="VALID",
                 data_format="channels_last", name=None, device=None, **kwargs):
        _layer_kwargs(kwargs, type(self).__name__)
        _channels_last(data_format, type(self).__name__)
        if isinstance(padding, str):
            padding = padding.upper()
        super().__init__(name, device)
        self.pool_size = pool_size
        self.strides = pool_size if strides is None else strides
        self.padding = padding

    def call(self, x, training=False):
        return self._pool(x, self.pool_size, self.strides, self.padding)


class AveragePooling2D(_Pool2D):
    """Average pooling of NHWC inputs. Example: ``sf.layers.AveragePooling2D(2)(h)``."""

    _default_name = "average_pooling2d"
    _pool = staticmethod(nn.avg_pool)


class GlobalAveragePooling2D(Layer):
    """[batch, height, width, channels] -> [batch, channels]: the mean over the image."""

    _default_name = "global_average_pooling2d"

    def call(self, x, training=False):
        return ops.reduce_mean(x, axis=[1, 2])


class MaxPool2D(_Pool2D):
    """Max pooling of NHWC inputs. Example: ``sf.layers.MaxPool2D(2)(h)``."""

    _default_name = "max_pool"
    _pool = staticmethod(nn.max_pool)


class MaxPooling2D(MaxPool2D):
    """TF1's tf.layers.MaxPooling2D (padding 'valid' by default).

    Example: ``p = sf.layers.MaxPooling2D(2, 2)(h)``.
    """

    _default_name = "max_pooling2d"

    def __init__(self, pool_size, strides=None, padding="valid", data_format="channels_last",
                 name=None, device=None, **kwargs):
        _layer_kwargs(kwargs, "MaxPooling2D")
        super().__init__(pool_size, strides, padding, data_format, name, device)


class _Pool1D(Layer):
    """A pooling window over [batch, width, channels] inputs: the 2-D pool over a height of
    1. Subclasses name the nn function."""

    def __init__(self, pool_size, strides=None, padding="valid", data_format="channels_last",
                 name=None, device=None, **kwargs):
        _layer_kwargs(kwargs, type(self).__name__)
        super().__init__(name, device)
        _channels_last(data_format, type(self).__name__)
        self.pool_size = _one(pool_size, "pool_size")
        self.strides = self.pool_size if strides is None else _one(strides, "strides")
        self.padding = padding.upper()

    def call(self, x, training=False):
        y = self._pool(ops.expand_dims(x, 1), [1, 1, self.pool_size, 1],
                       [1, 1, self.strides, 1], self.padding)
        return ops.squeeze(y, [1])


class MaxPooling1D(_Pool1D):
    """TF1's tf.layers.MaxPooling1D over [batch, width, channels].

    Example: ``p = sf.layers.MaxPooling1D(2, 2)(seq)``.
    """

    _default_name = "max_pooling1d"
    _pool = staticmethod(nn.max_pool)


class AveragePooling1D(_Pool1D):
    """TF1's tf.layers.AveragePooling1D over [batch, width, channels].

    Example: ``p = sf.layers.AveragePooling1D(3, 1, padding="same")(seq)``.
    """

    _default_name = "average_pooling1d"
    _pool = staticmethod(nn.avg_pool)


MaxPool1D, AvgPool1D, AvgPool2D = MaxPooling1D, AveragePooling1D, AveragePooling2D


class Flatten(Layer):
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...] (the dimensions after the first must be
    known); channels_first inputs are flattened in their channels-last order, as TF's."""

    _default_name = "flatten"

    def __init__(self, data_format="channels_last", name=None, device=None):
        super().__init__(name, device)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError("Flatten: data_format is channels_last or channels_first, not %r"
                             % (data_format,))
        self.data_format = data_format

    def call(self, x, training=False):
        if self.data_format == "channels_first" and x.shape.ndims is not None \
                and x.shape.ndims > 2:
            x = ops.transpose(x, [0] + list(range(2, x.shape.ndims)) + [1])
        dims = x.shape.as_list()[1:] if x.shape.ndims is not None else [None]
        if any(d is None for d in dims):
            raise ValueError("Flatten needs known dimensions after the batch one, got %r"
                             % (x.shape,))
        return ops.reshape(x, [-1, int(np.prod(dims, dtype=np.int64))])


class Dropout(Layer):
    """Zeroes a fraction `rate` of the inputs when called with ``training=True`` (and scales
    the rest by 1 / (1 - rate)); the identity otherwise."""

    _default_name = "dropout"

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, device=None):
        super().__init__(name, device)
        if not 0 <= rate < 1:
            raise ValueError("Dropout rate must be in [0, 1), got %r" % (rate,))
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, x, training=False):
        # `training` may be a bool tensor (a placeholder fed True while training).
        return dropout(x, rate=self.rate, noise_shape=self.noise_shape, seed=self.seed,
                       training=training)


class Sequential(Layer):
    """Layers applied in order. `device` (optional) is the default for layers without one.

    Example::

        model = sf.layers.Sequential([sf.layers.Flatten(), sf.layers.Dense(10)])
        logits = model(images)
    """

    _default_name = "sequential"

    def __init__(self, layers=None, name=None, device=None):
        super().__init__(name, device)
        self.layers = list(layers or [])

    def add(self, layer):
        self.layers.append(layer)

    @property
    def variables(self):
        return [v for layer in self.layers for v in layer.variables]

    @variables.setter
    def variables(self, value):
        pass  # the layers own the variables

    def call(self, x, training=False):
        for layer in self.layers:
            x = layer(x, training=training)
        return x


# ---- TF1's functional layers (tf.layers.dense, ...): one call builds and applies a layer -----


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """TF1's tf.layers.dense: variables <name>/kernel and <name>/bias; the regularizers'
    penalties go to GraphKeys.REGULARIZATION_LOSSES."""
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer, name=name,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                  trainable=trainable)
    layer._reuse = reuse
    return layer(inputs)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """TF1's tf.layers.conv2d (padding 'valid' by default, as there; NHWC inputs); the
    regularizers' penalties go to GraphKeys.REGULARIZATION_LOSSES."""
    if data_format not in ("channels_last", "NHWC"):
        raise ValueError("layers.conv2d(data_format=%r): only channels_last (NHWC) is supported"
                         % (data_format,))
    layer = Conv2D(filters, kernel_size, strides=strides, padding=padding.upper(),
                   activation=activation, use_bias=use_bias,
                   kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                   kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                   activity_regularizer=activity_regularizer, name=name,
                   dilation_rate=dilation_rate, kernel_constraint=kernel_constraint,
                   bias_constraint=bias_constraint, trainable=trainable)
    layer._reuse = reuse
    return layer(inputs)


def conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
           data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """TF1's tf.layers.conv1d over [batch, width, channels]: variables <name>/kernel
    [kernel_size, in, filters] and <name>/bias.

    Example: ``h = sf.layers.conv1d(seq, 16, 3, padding="same", activation=sf.nn.relu)``.
    """
    layer = Conv1D(filters, kernel_size, strides=strides, padding=padding,
                   data_format=data_format, dilation_rate=dilation_rate, activation=activation,
                   use_bias=use_bias, kernel_initializer=kernel_initializer,
                   bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                   bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                   name=name, kernel_constraint=kernel_constraint,
                   bias_constraint=bias_constraint, trainable=trainable)
    layer._reuse = reuse
    return layer(inputs)


def max_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """TF1's tf.layers.max_pooling1d over [batch, width, channels].

    Example: ``p = sf.layers.max_pooling1d(h, 2, 2)``.
    """
    return MaxPooling1D(pool_size, strides, padding, data_format, name=name)(inputs)


def average_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """TF1's tf.layers.average_pooling1d over [batch, width, channels].

    Example: ``p = sf.layers.average_pooling1d(h, 2, 2)``.
    """
    return AveragePooling1D(pool_size, strides, padding, data_format, name=name)(inputs)


def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """TF1's tf.layers.conv2d_transpose (NHWC inputs)."""
    if data_format not in ("channels_last", "NHWC"):
        raise ValueError("layers.conv2d_transpose(data_format=%r): only channels_last (NHWC) is "
                         "supported" % (data_format,))
    layer = Conv2DTranspose(filters, kernel_size, strides=strides, padding=padding.upper(),
                            activation=activation, use_bias=use_bias,
                            kernel_initializer=kernel_initializer,
                            bias_initializer=bias_initializer,
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer, name=name,
                            kernel_constraint=kernel_constraint,
                            bias_constraint=bias_constraint, trainable=trainable)
    layer._reuse = reuse
    return layer(inputs)


def separable_conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
                     data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=None,
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None,
                     depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                     trainable=True, name=None, reuse=None):
    """TF1's tf.layers.separable_conv1d over [batch, width, channels]: variables
    <name>/depthwise_kernel [k, in, depth_multiplier], <name>/pointwise_kernel
    [1, in * depth_multiplier, filters] and <name>/bias; see SeparableConv1D."""
    layer = SeparableConv1D(filters, kernel_size, strides=strides, padding=padding,
                            data_format=data_format, dilation_rate=dilation_rate,
                            depth_multiplier=depth_multiplier, activation=activation,
                            use_bias=use_bias, depthwise_initializer=depthwise_initializer,
                            pointwise_initializer=pointwise_initializer,
                            bias_initializer=bias_initializer,
                            depthwise_regularizer=depthwise_regularizer,
                            pointwise_regularizer=pointwise_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer,
                            depthwise_constraint=depthwise_constraint,
                            pointwise_constraint=pointwise_constraint,
                            bias_constraint=bias_constraint, trainable=trainable, name=name)
    layer._reuse = reuse
    return layer(inputs)


def separable_conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=None,
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None,
                     depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                     trainable=True, name=None, reuse=None):
    """TF1's tf.layers.separable_conv2d (NHWC inputs): variables <name>/depthwise_kernel
    [kh, kw, in, depth_multiplier], <name>/pointwise_kernel [1, 1, in * depth_multiplier,
    filters] and <name>/bias; see SeparableConv2D.

    Example: ``h = sf.layers.separable_conv2d(x, 32, 3, padding="same", name="sep1")``.
    """
    layer = SeparableConv2D(filters, kernel_size, strides=strides, padding=padding,
                            data_format=data_format, dilation_rate=dilation_rate,
                            depth_multiplier=depth_multiplier, activation=activation,
                            use_bias=use_bias, depthwise_initializer=depthwise_initializer,
                            pointwise_initializer=pointwise_initializer,
                            bias_initializer=bias_initializer,
                            depthwise_regularizer=depthwise_regularizer,
                            pointwise_regularizer=pointwise_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer,
                            depthwise_constraint=depthwise_constraint,
                            pointwise_constraint=pointwise_constraint,
                            bias_constraint=bias_constraint, trainable=trainable, name=name)
    layer._reuse = reuse
    return layer(inputs)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """TF1's tf.layers.max_pooling2d."""
    if data_format not in ("channels_last", "NHWC"):
        raise ValueError("layers.max_pooling2d: only channels_last (NHWC) is supported")
    return MaxPool2D(pool_size, strides=strides, padding=padding.upper(), name=name)(inputs)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """TF1's tf.layers.batch_normalization: variables <name>/gamma, beta, moving_mean and
    moving_variance; with training=True (or a bool tensor) the moving-average updates go to
    sf.GraphKeys.UPDATE_OPS, as in TF1::

        h = sf.layers.batch_normalization(h, training=is_training)
        with sf.control_dependencies(sf.get_collection(sf.GraphKeys.UPDATE_OPS)):
            train_op = opt.minimize(loss)
    """
    layer = BatchNormalization(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                               scale=scale, beta_initializer=beta_initializer,
                               gamma_initializer=gamma_initializer,
                               moving_mean_initializer=moving_mean_initializer,
                               moving_variance_initializer=moving_variance_initializer,
                               trainable=trainable, name=name,
                               beta_regularizer=beta_regularizer,
                               gamma_regularizer=gamma_regularizer,
                               beta_constraint=beta_constraint,
                               gamma_constraint=gamma_constraint, renorm=renorm,
                               virtual_batch_size=virtual_batch_size, adjustment=adjustment)
    layer._reuse = reuse
    return layer(inputs, training=training)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """TF1's tf.layers.average_pooling2d."""
    if data_format not in ("channels_last", "NHWC"):
        raise ValueError("layers.average_pooling2d: only channels_last (NHWC) is supported")
    return AveragePooling2D(pool_size, strides=strides, padding=padding.upper(),
                            name=name)(inputs)


def flatten(inputs, name=None, data_format="channels_last"):
    """TF1's tf.layers.flatten: [batch, ...] -> [batch, everything else] (channels_first
    inputs are flattened in their channels-last order, as TF's)."""
    if data_format == "channels_first":
        rank = convert_to_tensor(inputs).shape.ndims
        if rank is not None and rank > 2:
            inputs = ops.transpose(inputs, [0] + list(range(2, rank)) + [1])
    elif data_format not in (None, "channels_last"):
        raise ValueError("flatten: data_format is channels_last or channels_first, not %r"
                         % (data_format,))
    return Flatten(name=name)(inputs)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """TF1's tf.layers.dropout: drops a fraction `rate` when `training` (a bool, or a bool
    tensor such as a placeholder fed True while training), else the identity."""
    if isinstance(training, Tensor):
        on = ops.reshape(ops.cast(training, dtypes.float32), [])  # a scalar: x's shape stays
        keep_prob = ops.subtract(1.0, ops.multiply(float(rate), on))
        return nn.dropout(inputs, keep_prob, noise_shape=noise_shape, seed=seed, name=name)
    if not training or rate == 0:
        return ops.identity(inputs, name=name)
    return nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed, name=name)

from shardflow.layers3d import (AveragePooling3D, Conv3D, Conv3DTranspose,  # noqa: E402,F401
                                MaxPooling3D, average_pooling3d, conv3d, conv3d_transpose,
                                max_pooling3d)
MaxPool3D, AveragePool3D = MaxPooling3D, AveragePooling3D
