"""tf.keras as TF 1.13-1.15 graph-mode programs use it, on shardflow's layers, optimizers
and sessions: layers, Sequential and functional Models with compile/fit/evaluate/predict,
the backend's shared session and learning phase, optimizers, losses, metrics, activations,
initializers, regularizers, constraints, callbacks, utils, preprocessing (pad_sequences),
datasets, estimator.model_to_estimator and wrappers.scikit_learn.

Example::

    from shardflow import keras
    model = keras.Sequential([
        keras.layers.Flatten(input_shape=(28, 28)),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x_train / 255.0, y_train, epochs=1)

See docs/python.md ("tf.keras") for what is supported.
"""

from shardflow.keras import (activations, backend, callbacks, constraints,  # noqa: F401
                             datasets, initializers, layers, losses, metrics, optimizers,
                             preprocessing, regularizers, utils)
from shardflow.keras.layers import Input  # noqa: F401
from shardflow.keras import models  # noqa: F401 (keras.models.Sequential, ...)
from shardflow.keras.models import Model, Sequential  # noqa: F401
from shardflow.keras import applications  # noqa: F401 (ResNet50, VGG16, VGG19)
from shardflow.keras import estimator, wrappers  # noqa: F401 (model_to_estimator, scikit_learn)

