"""keras.applications.MobileNet and MobileNetV2 as keras_applications 1.0.8 (TF 1.15) builds
them: the same layers, layer names and parameter counts (4,253,864 and 3,538,984 with the
1000-class top at alpha 1), the width multiplier `alpha`, and MobileNet's depth_multiplier.

Example::

    model = sf.keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35,
                                              weights=None, classes=10)
"""

from shardflow.keras import applications_base as base
from shardflow.keras import layers as L

_ALPHA_TEXT = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0", 0.25: "2_5"}


def _default_size(input_shape, sizes):
    """The size MobileNet names itself after: the input's when it is square and one of
    `sizes` (those Keras has weights for), else 224."""
    if input_shape is not None and len(input_shape) == 3:
        rows, cols = input_shape[0], input_shape[1]
        if rows == cols and rows in sizes:
            return rows
    return 224


def _v1_conv_block(x, filters, alpha, strides):
    x = L.ZeroPadding2D(((0, 1), (0, 1)), name="conv1_pad")(x)
    x = L.Conv2D(int(filters * alpha), 3, padding="valid", use_bias=False, strides=strides,
                 name="conv1")(x)
    x = L.BatchNormalization(axis=-1, name="conv1_bn")(x)
    return L.ReLU(6.0, name="conv1_relu")(x)


def _v1_depthwise_block(x, pointwise_filters, alpha, depth_multiplier, block_id, strides=1):
    """3x3 depthwise convolution, then a 1x1 convolution to pointwise_filters * alpha
    channels, each followed by batch normalisation and relu6 (names conv_dw_<id>...,
    conv_pw_<id>...). A stride of 2 pads one row and column at the bottom and right first."""
    if strides != 1:
        x = L.ZeroPadding2D(((0, 1), (0, 1)), name="conv_pad_%d" % block_id)(x)
    x = L.DepthwiseConv2D(3, padding="same" if strides == 1 else "valid",
                          depth_multiplier=depth_multiplier, strides=strides, use_bias=False,
                          name="conv_dw_%d" % block_id)(x)
    x = L.BatchNormalization(axis=-1, name="conv_dw_%d_bn" % block_id)(x)
    x = L.ReLU(6.0, name="conv_dw_%d_relu" % block_id)(x)
    x = L.Conv2D(int(pointwise_filters * alpha), 1, padding="same", use_bias=False,
                 strides=1, name="conv_pw_%d" % block_id)(x)
    x = L.BatchNormalization(axis=-1, name="conv_pw_%d_bn" % block_id)(x)
    return L.ReLU(6.0, name="conv_pw_%d_relu" % block_id)(x)


# (pointwise filters, stride) of MobileNet's 13 depthwise blocks.
_V1_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
              (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


def MobileNet(input_shape=None, alpha=1.0, depth_multiplier=1, dropout=1e-3,  # noqa: N802
              include_top=True, weights=None, input_tensor=None, pooling=None, classes=1000,
              **kwargs):
    """Keras's MobileNet (v1): a 3x3 convolution and 13 depthwise-separable blocks whose
    widths are scaled by `alpha`; the depthwise convolutions have `depth_multiplier` filters
    per channel. The top is global average pooling, dropout and a 1x1 convolution
    ('conv_preds') to `classes`, with a softmax. Input at least 32x32 (default 224x224).
    weights: None or a file saved by model.save_weights ('imagenet' is refused)."""
    size = _default_size(input_shape, (128, 160, 192, 224))
    keras_file = "mobilenet_%s_%d_tf%s.h5" % (_ALPHA_TEXT.get(alpha, alpha), size,
                                              "" if include_top else "_no_top")
    base.check_arguments("MobileNet", weights, keras_file, kwargs)
    shape = base.input_shape_for("MobileNet", input_shape, size, 32, include_top)
    img_input = base.image_input(input_tensor, shape)
    x = _v1_conv_block(img_input, 32, alpha, strides=2)
    for block_id, (filters, strides) in enumerate(_V1_BLOCKS, start=1):
        x = _v1_depthwise_block(x, filters, alpha, depth_multiplier, block_id, strides)
    if include_top:
        x = L.GlobalAveragePooling2D()(x)
        x = L.Reshape((1, 1, int(1024 * alpha)), name="reshape_1")(x)
        x = L.Dropout(dropout, name="dropout")(x)
        x = L.Conv2D(classes, 1, padding="same", name="conv_preds")(x)
        x = L.Reshape((classes,), name="reshape_2")(x)
        x = L.Activation("softmax", name="act_softmax")(x)
    else:
        x = base.pool(x, pooling)
    return base.make_model(img_input, x, "mobilenet_%0.2f_%s" % (alpha, shape[0]), weights)


def _make_divisible(v, divisor, min_value=None):
    """v rounded to a multiple of `divisor` (at least min_value, default divisor), never
    more than 10% below v: how MobileNetV2 rounds its widths."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _correct_pad(x, kernel_size):
    """The ((top, bottom), (left, right)) zero padding before a stride-2 'valid' convolution
    of `kernel_size` that gives TF's 'same' output size (keras_applications' correct_pad)."""
    rows, cols = x.shape.as_list()[1:3]
    adjust = (1, 1) if rows is None else (1 - rows % 2, 1 - cols % 2)
    half = kernel_size // 2
    return ((half - adjust[0], half), (half - adjust[1], half))


def _inverted_res_block(x, expansion, stride, alpha, filters, block_id):
    """MobileNetV2's block: a 1x1 expansion to `expansion` times the input's channels (not
    in block 0), a 3x3 depthwise convolution of `stride`, a linear 1x1 projection to the
    rounded filters * alpha; the input is added back when the shapes agree."""
    in_channels = x.shape.as_list()[-1]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    inputs, prefix = x, "block_%d_" % block_id
    if block_id:
        x = L.Conv2D(expansion * in_channels, 1, padding="same", use_bias=False,
                     name=prefix + "expand")(x)
        x = L.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999,
                                 name=prefix + "expand_BN")(x)
        x = L.ReLU(6.0, name=prefix + "expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = L.ZeroPadding2D(_correct_pad(x, 3), name=prefix + "pad")(x)
    x = L.DepthwiseConv2D(3, strides=stride, use_bias=False,
                          padding="same" if stride == 1 else "valid",
                          name=prefix + "depthwise")(x)
    x = L.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999,
                             name=prefix + "depthwise_BN")(x)
    x = L.ReLU(6.0, name=prefix + "depthwise_relu")(x)
    x = L.Conv2D(pointwise_filters, 1, padding="same", use_bias=False,
                 name=prefix + "project")(x)
    x = L.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999,
                             name=prefix + "project_BN")(x)
    if in_channels == pointwise_filters and stride == 1:
        return L.Add(name=prefix + "add")([inputs, x])
    return x


# (filters, stride, expansion) of MobileNetV2's 17 inverted residual blocks, block_id 0..16.
_V2_BLOCKS = ((16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6),
              (64, 2, 6), (64, 1, 6), (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6),
              (96, 1, 6), (160, 2, 6), (160, 1, 6), (160, 1, 6), (320, 1, 6))


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights=None,  # noqa: N802
                input_tensor=None, pooling=None, classes=1000, **kwargs):
    """Keras's MobileNetV2: a 3x3 convolution, 17 inverted residual blocks and a 1x1
    convolution to 1280 channels (more when alpha > 1), widths scaled by `alpha` and rounded
    to multiples of 8. The top is global average pooling and a softmax Dense ('Logits').
    Input at least 32x32 (default 224x224). weights: None or a file saved by
    model.save_weights ('imagenet' is refused)."""
    size = _default_size(input_shape, (96, 128, 160, 192, 224))
    keras_file = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_%s_%d%s.h5" % (
        alpha, size, "" if include_top else "_no_top")
    base.check_arguments("MobileNetV2", weights, keras_file, kwargs)
    shape = base.input_shape_for("MobileNetV2", input_shape, size, 32, include_top)
    img_input = base.image_input(input_tensor, shape)
    x = L.ZeroPadding2D(_correct_pad(img_input, 3), name="Conv1_pad")(img_input)
    x = L.Conv2D(_make_divisible(32 * alpha, 8), 3, strides=2, padding="valid",
                 use_bias=False, name="Conv1")(x)
    x = L.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name="bn_Conv1")(x)
    x = L.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(_V2_BLOCKS):
        x = _inverted_res_block(x, expansion, stride, alpha, filters, block_id)
    last_filters = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = L.Conv2D(last_filters, 1, use_bias=False, name="Conv_1")(x)
    x = L.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name="Conv_1_bn")(x)
    x = L.ReLU(6.0, name="out_relu")(x)
    if include_top:
        x = L.GlobalAveragePooling2D()(x)
        x = L.Dense(classes, activation="softmax", use_bias=True, name="Logits")(x)
    else:
        x = base.pool(x, pooling)
    return base.make_model(img_input, x, "mobilenetv2_%0.2f_%s" % (alpha, shape[0]), weights)
