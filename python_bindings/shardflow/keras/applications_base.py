"""What the Keras applications share (keras_applications' imagenet_utils): the input-shape
rules, the refusal of ImageNet weights, pooling on a headless network, preprocess_input in
Keras's three modes, decode_predictions, and the submodules (keras.applications.mobilenet,
...) that user code imports.

Example::

    x = sf.keras.applications.imagenet_utils.preprocess_input(images, mode="tf")   # [-1, 1]
"""

import json
import os
import sys
import types
import warnings

import numpy as np

from shardflow.keras import layers as L

CLASS_INDEX_ORIGIN = ("https://storage.googleapis.com/download.tensorflow.org/data/"
                      "imagenet_class_index.json")


def check_arguments(name, weights, keras_weights_file, kwargs):
    """Keras's checks of `weights` and of unknown keyword arguments. weights="imagenet" is
    refused: Keras fetches `keras_weights_file` (HDF5) from the internet, and shardflow has
    neither; a path must name a file saved by model.save_weights."""
    if kwargs:
        raise TypeError("%s: unknown keyword argument(s) %s" % (name, ", ".join(sorted(kwargs))))
    if weights == "imagenet":
        raise ValueError(
            "%s(weights='imagenet'): Keras downloads its pretrained weights (%s, an HDF5 file) "
            "from the internet; shardflow has no internet and cannot read HDF5. Use "
            "weights=None (random initialization) or the path of weights saved with "
            "model.save_weights" % (name, keras_weights_file))
    if weights is not None and not os.path.exists(weights):
        raise ValueError("%s: weights must be None or the path of a weights file; %r does "
                         "not exist" % (name, weights))


def input_shape_for(name, input_shape, default_size, min_size, require_flatten):
    """keras_applications' _obtain_input_shape for channels_last without ImageNet weights:
    the default (default_size, default_size, 3) when the top needs a fixed size, else
    (None, None, 3); a given shape must be (rows, columns, channels) with rows and columns
    at least `min_size`, and static when `require_flatten`."""
    if input_shape is None or len(input_shape) == 0:
        shape = (default_size, default_size, 3) if require_flatten else (None, None, 3)
    else:
        shape = tuple(input_shape)
        if len(shape) != 3:
            raise ValueError("%s: input_shape must be (rows, columns, channels), got %s"
                             % (name, shape))
        if shape[-1] not in (1, 3):
            warnings.warn("%s usually takes 1 or 3 input channels, not %s"
                          % (name, shape[-1]), stacklevel=3)
        if any(d is not None and d < min_size for d in shape[:2]):
            raise ValueError("%s: the input must be at least %dx%d; got input_shape=%s"
                             % (name, min_size, min_size, shape))
    if require_flatten and None in shape:
        raise ValueError("%s: with include_top=True the input shape must be static; got "
                         "input_shape=%s" % (name, shape))
    return shape


def image_input(input_tensor, shape):
    """The network's input: a new keras Input of `shape`, a Keras tensor given as
    input_tensor (used as it is), or a plain tensor wrapped in an Input."""
    from shardflow import keras
    if input_tensor is None:
        return keras.Input(shape=shape)
    if getattr(input_tensor, "_keras_history", None) is not None:
        return input_tensor
    return keras.Input(tensor=input_tensor, shape=shape)


def pool(x, pooling, avg_name=None, max_name=None):
    """The headless network's output: x itself (pooling None), or its global average
    ('avg') or maximum ('max') over rows and columns."""
    if pooling is None:
        return x
    if pooling == "avg":
        return L.GlobalAveragePooling2D(name=avg_name)(x)
    if pooling == "max":
        return L.GlobalMaxPooling2D(name=max_name)(x)
    raise ValueError("pooling must be None, 'avg' or 'max', got %r" % (pooling,))


def make_model(img_input, x, name, weights):
    """keras.Model from the network's inputs (the Inputs x comes from: img_input, or those an
    input_tensor was made from) to x, with the weights of the file `weights` when given."""
    from shardflow import keras
    inputs, seen, stack = [], set(), [x]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        layer, node, _ = t._keras_history
        if isinstance(layer, L.InputLayer):
            inputs.append(t)
            continue
        xs = layer._inbound_nodes[node][0]
        stack.extend(xs if isinstance(xs, (list, tuple)) else [xs])
    inputs.sort(key=lambda t: t._keras_history[0]._order)
    model = keras.Model(inputs, x, name=name)
    if weights is not None:
        model.load_weights(weights)
    return model


# ---- preprocess_input and decode_predictions --------------------------------------------

_CAFFE_MEAN = (103.939, 116.779, 123.68)   # B, G, R
_TORCH_MEAN = (0.485, 0.456, 0.406)        # R, G, B
_TORCH_STD = (0.229, 0.224, 0.225)


def preprocess_input(x, data_format=None, mode="caffe", **kwargs):
    """Keras's imagenet_utils.preprocess_input of RGB images with values in [0, 255]:

    - 'caffe' (ResNet50, VGG): to BGR, then minus the ImageNet mean of each channel;
    - 'tf' (MobileNet, MobileNetV2, InceptionV3, Xception): x / 127.5 - 1, in [-1, 1];
    - 'torch' (DenseNet): x / 255, minus the mean and divided by the standard deviation of
      each channel.

    A NumPy array (or a list) gives a new array, floating as the input or float32; Keras
    writes a floating array over in place, which this does not. A tensor gives a tensor."""
    if data_format is None:
        data_format = "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("preprocess_input: data_format must be 'channels_last' or "
                         "'channels_first', got %r" % (data_format,))
    if mode not in ("caffe", "tf", "torch"):
        raise ValueError("preprocess_input: mode must be 'caffe', 'tf' or 'torch', got %r"
                         % (mode,))
    channel_axis = -1 if data_format == "channels_last" else -3
    stat_shape = (3,) if data_format == "channels_last" else (3, 1, 1)
    if isinstance(x, (np.ndarray, list, tuple)):
        arr = np.asarray(x)
        if not np.issubdtype(arr.dtype, np.floating):
            arr = arr.astype(np.float32)
        if mode == "tf":
            return arr / arr.dtype.type(127.5) - arr.dtype.type(1)
        if mode == "caffe":
            return np.flip(arr, channel_axis) - np.reshape(_CAFFE_MEAN, stat_shape).astype(
                arr.dtype)
        mean = np.reshape(_TORCH_MEAN, stat_shape).astype(arr.dtype)
        std = np.reshape(_TORCH_STD, stat_shape).astype(arr.dtype)
        return (arr / arr.dtype.type(255) - mean) / std
    from shardflow import dtypes, ops
    t = ops.convert_to_tensor(x)
    if not t.dtype.is_floating:
        t = ops.cast(t, dtypes.float32)
    np_dtype = t.dtype.as_numpy_dtype

    def const(values):
        return ops.constant(np.reshape(values, stat_shape).astype(np_dtype))
    if mode == "tf":
        return ops.subtract(ops.divide(t, np_dtype(127.5)), np_dtype(1))
    if mode == "caffe":
        return ops.subtract(ops.reverse(t, [channel_axis]), const(_CAFFE_MEAN))
    return ops.divide(ops.subtract(ops.divide(t, np_dtype(255)), const(_TORCH_MEAN)),
                      const(_TORCH_STD))


def decode_predictions(preds, top=5, **kwargs):
    """The `top` classes of each row of `preds` (N, 1000), as Keras: a list per row of
    (wordnet id, class name, score), best first. The class names come from Keras's cache,
    ~/.keras/models/imagenet_class_index.json, which Keras downloads and shardflow cannot:
    without that file this raises ValueError saying where to put it."""
    preds = np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError("decode_predictions expects a batch of predictions (a 2D array of "
                         "shape (samples, 1000)); found an array of shape %s" % (preds.shape,))
    from shardflow.keras.utils import get_file
    try:
        path = get_file("imagenet_class_index.json", CLASS_INDEX_ORIGIN, cache_subdir="models")
    except FileNotFoundError as e:
        raise ValueError("decode_predictions needs ImageNet's class index: %s" % e) from None
    with open(path) as f:
        try:
            index = json.load(f)
        except ValueError as e:
            raise ValueError("%s is not ImageNet's class index: %s" % (path, e)) from None
    if not isinstance(index, dict) or any(
            not isinstance(index.get(str(i)), list) or len(index[str(i)]) != 2
            for i in range(1000)):
        raise ValueError("%s is not ImageNet's class index (a JSON object from \"0\" .. "
                         "\"999\" to [wordnet id, class name])" % path)
    results = []
    for row in preds:
        best = row.argsort()[-top:][::-1]
        result = [tuple(index[str(i)]) + (row[i],) for i in best]
        result.sort(key=lambda r: r[2], reverse=True)
        results.append(result)
    return results


def submodule(name, doc, **names):
    """keras.applications.<name> as a module (registered in sys.modules, so that
    `from shardflow.keras.applications.mobilenet import MobileNet` works) holding `names`."""
    full_name = "shardflow.keras.applications." + name
    module = types.ModuleType(full_name, doc)
    module.__dict__.update(names)
    module.__all__ = sorted(names)
    sys.modules[full_name] = module
    return module
