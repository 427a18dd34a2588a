"""tf.keras.applications: ResNet50, VGG16, VGG19, MobileNet, MobileNetV2, DenseNet121/169/201,
InceptionV3 and Xception as Keras models (the functional API of shardflow/keras), with Keras'
layer names and parameter counts; preprocess_input and decode_predictions; and the submodules
(applications.resnet50, .mobilenet, .densenet, ...) with each network's preprocess_input.

Example::

    model = sf.keras.applications.ResNet50(weights=None, classes=10,
                                           input_shape=(64, 64, 3))
    model.compile("sgd", "sparse_categorical_crossentropy")

Only weights=None (random initialization) is available: pretrained ImageNet weights are
HDF5 files that Keras downloads from the internet, and shardflow has neither. weights="imagenet"
raises ValueError; a path to a weights file saved by model.save_weights loads it. The same
networks built with sf.layers (the ones `shardflow train --model resnet50` trains) are in
shardflow/applications.py. MobileNet, MobileNetV2 and DenseNet are in applications_mobilenet.py
and applications_densenet.py, InceptionV3 and Xception in applications_inception.py, what they
share in applications_base.py.
"""

from shardflow.keras import applications_base as _base
from shardflow.keras import layers as L
from shardflow.keras.applications_base import decode_predictions, preprocess_input
from shardflow.keras.applications_densenet import DenseNet121, DenseNet169, DenseNet201
from shardflow.keras.applications_inception import InceptionV3, Xception
from shardflow.keras.applications_mobilenet import MobileNet, MobileNetV2


def _input(input_tensor, input_shape, default, include_top, name):
    from shardflow import keras
    if include_top and input_shape is not None and tuple(input_shape) != default:
        raise ValueError("%s: with include_top=True the input shape must be %s, got %s (use "
                         "include_top=False for other sizes)" % (name, default, input_shape))
    shape = tuple(input_shape) if input_shape is not None else default
    if len(shape) != 3 or shape[-1] != 3:
        raise ValueError("%s: input_shape must be (height, width, 3), got %s" % (name, shape))
    if input_tensor is not None:
        return keras.Input(tensor=input_tensor, shape=shape)
    return keras.Input(shape=shape)


def _check_weights(weights, name):
    if weights == "imagenet":
        raise ValueError(
            "%s(weights='imagenet'): pretrained weights are downloaded by Keras from the "
            "internet and are not available in shardflow; use weights=None (random "
            "initialization) or the path of weights saved with model.save_weights" % name)


def _finish(inputs, x, include_top, pooling, classes, classifier_activation, name, weights):
    from shardflow import keras
    if include_top:
        x = L.Dense(classes, activation=classifier_activation, name="predictions"
                    if name.startswith("vgg") else "fc1000")(x)
    elif pooling == "avg":
        x = L.GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = L.GlobalMaxPooling2D()(x)
    elif pooling is not None:
        raise ValueError("pooling must be None, 'avg' or 'max', got %r" % (pooling,))
    model = keras.Model(inputs, x, name=name)
    if weights is not None:
        model.load_weights(weights)
    return model


def _identity_block(x, kernel_size, filters, stage, block):
    f1, f2, f3 = filters
    conv, bn = "res%d%s_branch" % (stage, block), "bn%d%s_branch" % (stage, block)
    shortcut = x
    x = L.Conv2D(f1, 1, kernel_initializer="he_normal", name=conv + "2a")(x)
    x = L.BatchNormalization(axis=3, name=bn + "2a")(x)
    x = L.Activation("relu")(x)
    x = L.Conv2D(f2, kernel_size, padding="same", kernel_initializer="he_normal",
                 name=conv + "2b")(x)
    x = L.BatchNormalization(axis=3, name=bn + "2b")(x)
    x = L.Activation("relu")(x)
    x = L.Conv2D(f3, 1, kernel_initializer="he_normal", name=conv + "2c")(x)
    x = L.BatchNormalization(axis=3, name=bn + "2c")(x)
    return L.Activation("relu")(L.Add()([x, shortcut]))


def _conv_block(x, kernel_size, filters, stage, block, strides=2):
    f1, f2, f3 = filters
    conv, bn = "res%d%s_branch" % (stage, block), "bn%d%s_branch" % (stage, block)
    shortcut = L.Conv2D(f3, 1, strides=strides, kernel_initializer="he_normal",
                        name=conv + "1")(x)
    shortcut = L.BatchNormalization(axis=3, name=bn + "1")(shortcut)
    x = L.Conv2D(f1, 1, strides=strides, kernel_initializer="he_normal", name=conv + "2a")(x)
    x = L.BatchNormalization(axis=3, name=bn + "2a")(x)
    x = L.Activation("relu")(x)
    x = L.Conv2D(f2, kernel_size, padding="same", kernel_initializer="he_normal",
                 name=conv + "2b")(x)
    x = L.BatchNormalization(axis=3, name=bn + "2b")(x)
    x = L.Activation("relu")(x)
    x = L.Conv2D(f3, 1, kernel_initializer="he_normal", name=conv + "2c")(x)
    x = L.BatchNormalization(axis=3, name=bn + "2c")(x)
    return L.Activation("relu")(L.Add()([x, shortcut]))


def ResNet50(include_top=True, weights=None, input_tensor=None, input_shape=None,  # noqa: N802
             pooling=None, classes=1000, classifier_activation="softmax", **kwargs):
    """Keras' ResNet50 (v1: the stride on the first 1x1 convolution of a block; convolutions
    with biases), 25,636,712 parameters with the 1000-class top."""
    _check_weights(weights, "ResNet50")
    inputs = _input(input_tensor, input_shape, (224, 224, 3), include_top, "ResNet50")
    x = L.ZeroPadding2D(3, name="conv1_pad")(inputs)
    x = L.Conv2D(64, 7, strides=2, padding="valid", kernel_initializer="he_normal",
                 name="conv1")(x)
    x = L.BatchNormalization(axis=3, name="bn_conv1")(x)
    x = L.Activation("relu")(x)
    x = L.ZeroPadding2D(1, name="pool1_pad")(x)
    x = L.MaxPooling2D(3, strides=2)(x)
    for stage, filters, blocks, strides in ((2, [64, 64, 256], "abc", 1),
                                            (3, [128, 128, 512], "abcd", 2),
                                            (4, [256, 256, 1024], "abcdef", 2),
                                            (5, [512, 512, 2048], "abc", 2)):
        x = _conv_block(x, 3, filters, stage, blocks[0], strides=strides)
        for block in blocks[1:]:
            x = _identity_block(x, 3, filters, stage, block)
    if include_top:
        x = L.GlobalAveragePooling2D(name="avg_pool")(x)
    return _finish(inputs, x, include_top, pooling, classes, classifier_activation, "resnet50",
                   weights)


def _vgg(convs, name, include_top, weights, input_tensor, input_shape, pooling, classes,
         classifier_activation):
    _check_weights(weights, name)
    inputs = _input(input_tensor, input_shape, (224, 224, 3), include_top, name)
    x = inputs
    for block, (filters, count) in enumerate(zip((64, 128, 256, 512, 512), convs), start=1):
        for i in range(1, count + 1):
            x = L.Conv2D(filters, 3, activation="relu", padding="same",
                         name="block%d_conv%d" % (block, i))(x)
        x = L.MaxPooling2D(2, strides=2, name="block%d_pool" % block)(x)
    if include_top:
        x = L.Flatten(name="flatten")(x)
        x = L.Dense(4096, activation="relu", name="fc1")(x)
        x = L.Dense(4096, activation="relu", name="fc2")(x)
    return _finish(inputs, x, include_top, pooling, classes, classifier_activation,
                   name.lower(), weights)


def VGG16(include_top=True, weights=None, input_tensor=None, input_shape=None,  # noqa: N802
          pooling=None, classes=1000, classifier_activation="softmax", **kwargs):
    """Keras' VGG16: 138,357,544 parameters with the 1000-class top."""
    return _vgg((2, 2, 3, 3, 3), "VGG16", include_top, weights, input_tensor, input_shape,
                pooling, classes, classifier_activation)


def VGG19(include_top=True, weights=None, input_tensor=None, input_shape=None,  # noqa: N802
          pooling=None, classes=1000, classifier_activation="softmax", **kwargs):
    """Keras' VGG19: 143,667,240 parameters with the 1000-class top."""
    return _vgg((2, 2, 4, 4, 4), "VGG19", include_top, weights, input_tensor, input_shape,
                pooling, classes, classifier_activation)


def _preprocess_in_mode(mode):
    def preprocess(x, data_format=None, **kwargs):
        return preprocess_input(x, data_format=data_format, mode=mode)
    preprocess.__doc__ = ("Keras's preprocess_input in mode %r (see "
                          "applications.imagenet_utils.preprocess_input)." % mode)
    return preprocess


_caffe, _tf, _torch = (_preprocess_in_mode(m) for m in ("caffe", "tf", "torch"))

imagenet_utils = _base.submodule(
    "imagenet_utils", "Keras's ImageNet helpers.", preprocess_input=preprocess_input,
    decode_predictions=decode_predictions)
resnet50 = _base.submodule("resnet50", "ResNet50.", ResNet50=ResNet50,
                           preprocess_input=_caffe, decode_predictions=decode_predictions)
vgg16 = _base.submodule("vgg16", "VGG16.", VGG16=VGG16, preprocess_input=_caffe,
                        decode_predictions=decode_predictions)
vgg19 = _base.submodule("vgg19", "VGG19.", VGG19=VGG19, preprocess_input=_caffe,
                        decode_predictions=decode_predictions)
mobilenet = _base.submodule("mobilenet", "MobileNet (v1).", MobileNet=MobileNet,
                            preprocess_input=_tf, decode_predictions=decode_predictions)
mobilenet_v2 = _base.submodule("mobilenet_v2", "MobileNetV2.", MobileNetV2=MobileNetV2,
                               preprocess_input=_tf, decode_predictions=decode_predictions)
densenet = _base.submodule("densenet", "DenseNet121, DenseNet169, DenseNet201.",
                           DenseNet121=DenseNet121, DenseNet169=DenseNet169,
                           DenseNet201=DenseNet201, preprocess_input=_torch,
                           decode_predictions=decode_predictions)
inception_v3 = _base.submodule("inception_v3", "InceptionV3.", InceptionV3=InceptionV3,
                               preprocess_input=_tf, decode_predictions=decode_predictions)
xception = _base.submodule("xception", "Xception.", Xception=Xception, preprocess_input=_tf,
                           decode_predictions=decode_predictions)

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "InceptionV3", "MobileNet",
           "MobileNetV2", "ResNet50", "VGG16", "VGG19", "Xception", "decode_predictions",
           "densenet", "imagenet_utils", "inception_v3", "mobilenet", "mobilenet_v2",
           "preprocess_input", "resnet50", "vgg16", "vgg19", "xception"]
