"""tf.keras.applications: ResNet50, VGG16 and VGG19 with Keras' parameter counts and layer
names, a headless ResNet50 that trains a step on small images, preprocess_input, and the
clear refusal of pretrained weights."""
import numpy as np
import pytest

import shardflow as tf


@pytest.mark.parametrize("make,count", [("ResNet50", 25636712), ("VGG16", 138357544),
                                        ("VGG19", 143667240)])
def test_parameter_counts_match_keras(make, count):
    with tf.Graph().as_default():
        model = getattr(tf.keras.applications, make)(weights=None)
        assert model.count_params() == count
        names = [layer.name for layer in model.layers]
        assert names[-1] in ("fc1000", "predictions")
        if make == "ResNet50":
            assert "res5c_branch2c" in names and "bn_conv1" in names


def test_headless_resnet50_trains_on_small_images():
    rng = np.random.RandomState(0)
    x = rng.rand(4, 32, 32, 3).astype(np.float32) * 255
    y = np.array([0, 1, 2, 1])
    with tf.Graph().as_default():
        base = tf.keras.applications.resnet50.ResNet50(include_top=False, weights=None,
                                                       input_shape=(32, 32, 3), pooling="avg")
        assert base.output.shape.as_list() == [None, 2048]
        head = tf.keras.layers.Dense(3, activation="softmax")(base.output)
        model = tf.keras.Model(base.input, head)
        model.compile(tf.keras.optimizers.SGD(0.01), "sparse_categorical_crossentropy")
        inputs = tf.keras.applications.resnet50.preprocess_input(x)
        history = model.fit(inputs, y, batch_size=4, epochs=2, verbose=0)
        assert np.all(np.isfinite(history.history["loss"]))
        assert model.predict(inputs).shape == (4, 3)


def test_preprocess_input_and_refusals():
    x = np.array([[[[10.0, 20.0, 30.0]]]], np.float32)
    got = tf.keras.applications.vgg16.preprocess_input(x)
    np.testing.assert_allclose(got, [[[[30 - 103.939, 20 - 116.779, 10 - 123.68]]]], rtol=1e-6)
    with tf.Graph().as_default():
        t = tf.keras.applications.preprocess_input(tf.constant(x))
        np.testing.assert_allclose(tf.Session().run(t), got, rtol=1e-6)
        with pytest.raises(ValueError, match="internet"):
            tf.keras.applications.ResNet50(weights="imagenet")
        with pytest.raises(ValueError, match="include_top"):
            tf.keras.applications.VGG16(weights=None, input_shape=(64, 64, 3))
    with pytest.raises(ValueError, match="class index"):
        tf.keras.applications.resnet50.decode_predictions(np.zeros((1, 1000)))
