"""keras.applications.DenseNet121, DenseNet169 and DenseNet201 as keras_applications 1.0.8
(TF 1.15) builds them: the same layers, layer names ('conv2_block1_0_bn', 'pool2_conv', ...)
and parameter counts (8,062,504, 14,307,880 and 20,242,984 with the 1000-class top).

Example::

    model = sf.keras.applications.DenseNet121(include_top=False, weights=None,
                                              input_shape=(64, 64, 3), pooling="avg")
"""

from shardflow.keras import applications_base as base
from shardflow.keras import layers as L

_EPSILON = 1.001e-5


def _conv_block(x, growth_rate, name):
    """BN-relu-1x1 conv (4 * growth_rate), BN-relu-3x3 conv (growth_rate), concatenated
    to the input: each block adds growth_rate channels."""
    y = L.BatchNormalization(axis=3, epsilon=_EPSILON, name=name + "_0_bn")(x)
    y = L.Activation("relu", name=name + "_0_relu")(y)
    y = L.Conv2D(4 * growth_rate, 1, use_bias=False, name=name + "_1_conv")(y)
    y = L.BatchNormalization(axis=3, epsilon=_EPSILON, name=name + "_1_bn")(y)
    y = L.Activation("relu", name=name + "_1_relu")(y)
    y = L.Conv2D(growth_rate, 3, padding="same", use_bias=False, name=name + "_2_conv")(y)
    return L.Concatenate(axis=3, name=name + "_concat")([x, y])


def _transition_block(x, reduction, name):
    """BN-relu-1x1 conv to `reduction` times the channels, then 2x2 average pooling."""
    x = L.BatchNormalization(axis=3, epsilon=_EPSILON, name=name + "_bn")(x)
    x = L.Activation("relu", name=name + "_relu")(x)
    x = L.Conv2D(int(x.shape.as_list()[3] * reduction), 1, use_bias=False,
                 name=name + "_conv")(x)
    return L.AveragePooling2D(2, strides=2, name=name + "_pool")(x)


def _densenet(blocks, name, include_top, weights, input_tensor, input_shape, pooling, classes,
              kwargs):
    keras_file = "%s_weights_tf_dim_ordering_tf_kernels%s.h5" % (
        name.lower(), "" if include_top else "_notop")
    base.check_arguments(name, weights, keras_file, kwargs)
    shape = base.input_shape_for(name, input_shape, 224, 32, include_top)
    img_input = base.image_input(input_tensor, shape)
    x = L.ZeroPadding2D(((3, 3), (3, 3)))(img_input)
    x = L.Conv2D(64, 7, strides=2, use_bias=False, name="conv1/conv")(x)
    x = L.BatchNormalization(axis=3, epsilon=_EPSILON, name="conv1/bn")(x)
    x = L.Activation("relu", name="conv1/relu")(x)
    x = L.ZeroPadding2D(((1, 1), (1, 1)))(x)
    x = L.MaxPooling2D(3, strides=2, name="pool1")(x)
    for stage, count in enumerate(blocks, start=2):
        for i in range(1, count + 1):
            x = _conv_block(x, 32, name="conv%d_block%d" % (stage, i))
        if stage < 5:
            x = _transition_block(x, 0.5, name="pool%d" % stage)
    x = L.BatchNormalization(axis=3, epsilon=_EPSILON, name="bn")(x)
    if include_top:
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
        x = L.Dense(classes, activation="softmax", name="fc1000")(x)
    else:
        x = base.pool(x, pooling, avg_name="avg_pool", max_name="max_pool")
    return base.make_model(img_input, x, name.lower(), weights)


def DenseNet121(include_top=True, weights=None, input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000, **kwargs):
    """Keras's DenseNet121 (dense blocks of 6, 12, 24 and 16 layers, growth rate 32).
    Input at least 32x32 (default 224x224). weights: None or a file saved by
    model.save_weights ('imagenet' is refused)."""
    return _densenet((6, 12, 24, 16), "DenseNet121", include_top, weights, input_tensor,
                     input_shape, pooling, classes, kwargs)


def DenseNet169(include_top=True, weights=None, input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000, **kwargs):
    """Keras's DenseNet169 (dense blocks of 6, 12, 32 and 32 layers); see DenseNet121."""
    return _densenet((6, 12, 32, 32), "DenseNet169", include_top, weights, input_tensor,
                     input_shape, pooling, classes, kwargs)


def DenseNet201(include_top=True, weights=None, input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000, **kwargs):
    """Keras's DenseNet201 (dense blocks of 6, 12, 48 and 32 layers); see DenseNet121."""
    return _densenet((6, 12, 48, 32), "DenseNet201", include_top, weights, input_tensor,
                     input_shape, pooling, classes, kwargs)
