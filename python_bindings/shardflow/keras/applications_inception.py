"""keras.applications.InceptionV3 and Xception as keras_applications 1.0.8 (TF 1.15) builds
them: the same layers, layer names ('mixed0' .. 'mixed10'; 'block1_conv1' ..
'block14_sepconv2_act') and parameter counts (23,851,784 and 22,910,480 with the 1000-class
top). Both take inputs of any size down to 75x75 (InceptionV3) or 71x71 (Xception).

Example::

    model = sf.keras.applications.Xception(include_top=False, weights=None,
                                           input_shape=(71, 71, 3), pooling="avg")
"""

from shardflow.keras import applications_base as base
from shardflow.keras import layers as L


def _conv2d_bn(x, filters, rows, cols, padding="same", strides=1):
    """Convolution without bias, batch normalisation without scale, relu (Keras's
    inception_v3.conv2d_bn with its default, automatic names)."""
    x = L.Conv2D(filters, (rows, cols), strides=strides, padding=padding, use_bias=False)(x)
    x = L.BatchNormalization(axis=3, scale=False)(x)
    return L.Activation("relu")(x)


def _avg_branch(x, filters):
    y = L.AveragePooling2D(3, strides=1, padding="same")(x)
    return _conv2d_bn(y, filters, 1, 1)


def _mixed_35(x, pool_filters, name):
    """mixed0-2 (35x35): 1x1, 5x5, double 3x3 and pooled branches."""
    b1 = _conv2d_bn(x, 64, 1, 1)
    b5 = _conv2d_bn(_conv2d_bn(x, 48, 1, 1), 64, 5, 5)
    b3 = _conv2d_bn(_conv2d_bn(_conv2d_bn(x, 64, 1, 1), 96, 3, 3), 96, 3, 3)
    return L.concatenate([b1, b5, b3, _avg_branch(x, pool_filters)], axis=3, name=name)


def _mixed_17(x, width, name):
    """mixed4-7 (17x17): 1x1, factorised 7x7, double factorised 7x7 and pooled branches,
    the 7x7 ones `width` channels wide inside."""
    b1 = _conv2d_bn(x, 192, 1, 1)
    b7 = _conv2d_bn(x, width, 1, 1)
    b7 = _conv2d_bn(b7, width, 1, 7)
    b7 = _conv2d_bn(b7, 192, 7, 1)
    b7d = _conv2d_bn(x, width, 1, 1)
    for filters, (rows, cols) in ((width, (7, 1)), (width, (1, 7)), (width, (7, 1)),
                                  (192, (1, 7))):
        b7d = _conv2d_bn(b7d, filters, rows, cols)
    return L.concatenate([b1, b7, b7d, _avg_branch(x, 192)], axis=3, name=name)


def _mixed_8(x, index):
    """mixed9 and mixed10 (8x8): 1x1, split 3x3, split double 3x3 and pooled branches."""
    b1 = _conv2d_bn(x, 320, 1, 1)
    b3 = _conv2d_bn(x, 384, 1, 1)
    b3 = L.concatenate([_conv2d_bn(b3, 384, 1, 3), _conv2d_bn(b3, 384, 3, 1)], axis=3,
                       name="mixed9_%d" % index)
    b3d = _conv2d_bn(_conv2d_bn(x, 448, 1, 1), 384, 3, 3)
    b3d = L.concatenate([_conv2d_bn(b3d, 384, 1, 3), _conv2d_bn(b3d, 384, 3, 1)], axis=3)
    return L.concatenate([b1, b3, b3d, _avg_branch(x, 192)], axis=3,
                         name="mixed%d" % (9 + index))


def InceptionV3(include_top=True, weights=None, input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000, **kwargs):
    """Keras's InceptionV3: a convolutional stem and the mixed0..mixed10 blocks, every
    convolution followed by batch normalisation (no scale) and relu; the top is global
    average pooling ('avg_pool') and a softmax Dense ('predictions'). Input at least 75x75
    (default 299x299). weights: None or a file saved by model.save_weights ('imagenet' is
    refused)."""
    base.check_arguments("InceptionV3", weights, "inception_v3_weights_tf_dim_ordering_tf_"
                         "kernels%s.h5" % ("" if include_top else "_notop"), kwargs)
    shape = base.input_shape_for("InceptionV3", input_shape, 299, 75, False)
    img_input = base.image_input(input_tensor, shape)
    x = _conv2d_bn(img_input, 32, 3, 3, strides=2, padding="valid")
    x = _conv2d_bn(x, 32, 3, 3, padding="valid")
    x = _conv2d_bn(x, 64, 3, 3)
    x = L.MaxPooling2D(3, strides=2)(x)
    x = _conv2d_bn(x, 80, 1, 1, padding="valid")
    x = _conv2d_bn(x, 192, 3, 3, padding="valid")
    x = L.MaxPooling2D(3, strides=2)(x)
    for i, pool_filters in enumerate((32, 64, 64)):
        x = _mixed_35(x, pool_filters, "mixed%d" % i)
    b3 = _conv2d_bn(x, 384, 3, 3, strides=2, padding="valid")
    b3d = _conv2d_bn(_conv2d_bn(x, 64, 1, 1), 96, 3, 3)
    b3d = _conv2d_bn(b3d, 96, 3, 3, strides=2, padding="valid")
    x = L.concatenate([b3, b3d, L.MaxPooling2D(3, strides=2)(x)], axis=3, name="mixed3")
    for i, width in enumerate((128, 160, 160, 192), start=4):
        x = _mixed_17(x, width, "mixed%d" % i)
    b3 = _conv2d_bn(_conv2d_bn(x, 192, 1, 1), 320, 3, 3, strides=2, padding="valid")
    b7 = _conv2d_bn(_conv2d_bn(_conv2d_bn(x, 192, 1, 1), 192, 1, 7), 192, 7, 1)
    b7 = _conv2d_bn(b7, 192, 3, 3, strides=2, padding="valid")
    x = L.concatenate([b3, b7, L.MaxPooling2D(3, strides=2)(x)], axis=3, name="mixed8")
    for i in range(2):
        x = _mixed_8(x, i)
    if include_top:
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
        x = L.Dense(classes, activation="softmax", name="predictions")(x)
    else:
        x = base.pool(x, pooling)
    return base.make_model(img_input, x, "inception_v3", weights)


def _sepconv_bn(x, filters, name, relu_first=True):
    """[relu] separable 3x3 convolution without bias, batch normalisation, named
    <name>_act, <name>, <name>_bn as Keras's Xception."""
    if relu_first:
        x = L.Activation("relu", name=name + "_act")(x)
    x = L.SeparableConv2D(filters, 3, padding="same", use_bias=False, name=name)(x)
    return L.BatchNormalization(name=name + "_bn")(x)


def _xception_down_block(x, filters, block, relu_first=True):
    """Two separable convolutions and a stride-2 3x3 max pooling, plus a strided 1x1
    convolution of the input (the residual)."""
    first, second = filters
    residual = L.Conv2D(second, 1, strides=2, padding="same", use_bias=False)(x)
    residual = L.BatchNormalization()(residual)
    x = _sepconv_bn(x, first, "block%d_sepconv1" % block, relu_first)
    if not relu_first:
        x = L.Activation("relu", name="block%d_sepconv2_act" % block)(x)
    x = _sepconv_bn(x, second, "block%d_sepconv2" % block, relu_first)
    x = L.MaxPooling2D(3, strides=2, padding="same", name="block%d_pool" % block)(x)
    return L.add([x, residual])


def Xception(include_top=True, weights=None, input_tensor=None,  # noqa: N802
             input_shape=None, pooling=None, classes=1000, **kwargs):
    """Keras's Xception: entry flow (blocks 1-4), eight middle-flow residual blocks of three
    separable convolutions (blocks 5-12) and the exit flow (blocks 13-14); the top is global
    average pooling ('avg_pool') and a softmax Dense ('predictions'). Input at least 71x71
    (default 299x299). weights: None or a file saved by model.save_weights ('imagenet' is
    refused)."""
    base.check_arguments("Xception", weights, "xception_weights_tf_dim_ordering_tf_kernels"
                         "%s.h5" % ("" if include_top else "_notop"), kwargs)
    shape = base.input_shape_for("Xception", input_shape, 299, 71, False)
    img_input = base.image_input(input_tensor, shape)
    x = L.Conv2D(32, 3, strides=2, use_bias=False, name="block1_conv1")(img_input)
    x = L.BatchNormalization(name="block1_conv1_bn")(x)
    x = L.Activation("relu", name="block1_conv1_act")(x)
    x = L.Conv2D(64, 3, use_bias=False, name="block1_conv2")(x)
    x = L.BatchNormalization(name="block1_conv2_bn")(x)
    x = L.Activation("relu", name="block1_conv2_act")(x)
    x = _xception_down_block(x, (128, 128), 2, relu_first=False)
    x = _xception_down_block(x, (256, 256), 3)
    x = _xception_down_block(x, (728, 728), 4)
    for block in range(5, 13):
        residual = x
        for i in (1, 2, 3):
            x = _sepconv_bn(x, 728, "block%d_sepconv%d" % (block, i))
        x = L.add([x, residual])
    x = _xception_down_block(x, (728, 1024), 13)
    x = L.SeparableConv2D(1536, 3, padding="same", use_bias=False, name="block14_sepconv1")(x)
    x = L.BatchNormalization(name="block14_sepconv1_bn")(x)
    x = L.Activation("relu", name="block14_sepconv1_act")(x)
    x = L.SeparableConv2D(2048, 3, padding="same", use_bias=False, name="block14_sepconv2")(x)
    x = L.BatchNormalization(name="block14_sepconv2_bn")(x)
    x = L.Activation("relu", name="block14_sepconv2_act")(x)
    if include_top:
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
        x = L.Dense(classes, activation="softmax", name="predictions")(x)
    else:
        x = base.pool(x, pooling)
    return base.make_model(img_input, x, "xception", weights)
