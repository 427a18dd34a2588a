"""keras.applications MobileNet, MobileNetV2, DenseNet121/169/201, InceptionV3 and Xception:
Keras's parameter counts and layer names at the default sizes (graphs only), alpha and
depth_multiplier, a forward pass and a training step on tiny inputs, the submodules and their
preprocess_input modes, decode_predictions from Keras's cache, and the refusals."""
import json

import numpy as np
import pytest

import shardflow as tf

A = tf.keras.applications


def _trainable_count(model):
    return sum(tf.keras.backend.count_params(w) for w in model.trainable_weights)


# Keras's published counts with the 1000-class top; the names are layers Keras's weight files
# hold.
@pytest.mark.parametrize("make,count,names", [
    ("MobileNet", 4253864, ["conv1", "conv_dw_13_bn", "conv_pw_13_relu", "conv_preds"]),
    ("MobileNetV2", 3538984, ["Conv1", "expanded_conv_project_BN", "block_16_project",
                              "block_15_add", "Conv_1_bn", "Logits"]),
    ("DenseNet121", 8062504, ["conv1/conv", "conv2_block6_concat", "pool4_conv",
                              "conv5_block16_2_conv", "bn", "fc1000"]),
    ("DenseNet169", 14307880, ["conv4_block32_concat", "fc1000"]),
    ("DenseNet201", 20242984, ["conv4_block48_concat", "fc1000"]),
    ("Xception", 22910480, ["block1_conv1_bn", "block12_sepconv3", "block13_pool",
                            "block14_sepconv2_act", "predictions"]),
])
def test_parameter_counts_and_names_match_keras(make, count, names):
    with tf.Graph().as_default():
        model = getattr(A, make)(weights=None)
        assert model.count_params() == count
        layer_names = {layer.name for layer in model.layers}
        assert set(names) <= layer_names
        assert model.output.shape.as_list() == [None, 1000]


def test_inception_v3_parameters():
    with tf.Graph().as_default():
        model = A.InceptionV3(weights=None)
        names = {layer.name for layer in model.layers}
        assert {"mixed0", "mixed9_1", "mixed10", "avg_pool", "predictions"} <= names
        assert _trainable_count(model) == 23817352       # Keras's trainable parameters
        # Keras's total: its BatchNormalization(scale=False) has no gamma.
        assert model.count_params() == 23851784


def test_widths_follow_alpha_and_depth_multiplier():
    with tf.Graph().as_default():
        model = A.mobilenet.MobileNet(input_shape=(128, 128, 3), alpha=0.5,
                                      depth_multiplier=2, weights=None, classes=7)
        assert model.name == "mobilenet_0.50_128"
        shapes = {w.op.name: w.shape.as_list() for w in model.weights}
        assert shapes["conv1/kernel"] == [3, 3, 3, 16]
        assert shapes["conv_dw_1/depthwise_kernel"] == [3, 3, 16, 2]
        assert shapes["conv_pw_1/kernel"] == [1, 1, 32, 32]
        assert shapes["conv_pw_13/kernel"] == [1, 1, 1024, 512]
        assert shapes["conv_preds/kernel"] == [1, 1, 512, 7]
    with tf.Graph().as_default():
        model = A.mobilenet_v2.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None)
        assert model.name == "mobilenetv2_0.35_96"
        shapes = {w.op.name: w.shape.as_list() for w in model.weights}
        assert shapes["Conv1/kernel"] == [3, 3, 3, 16]          # _make_divisible(11.2, 8)
        assert shapes["block_16_project/kernel"] == [1, 1, 336, 112]
        assert shapes["Conv_1/kernel"] == [1, 1, 112, 1280]     # 1280 whatever alpha <= 1
    with tf.Graph().as_default():
        model = A.MobileNetV2(alpha=1.4, weights=None, include_top=False)
        assert model.output.shape.as_list() == [None, None, None, 1792]


# Batch normalisation over 2 values per channel (a batch of 2 on DenseNet121's 1x1 maps at
# 32x32) blew the weights up in one SGD step here; these sizes and batches avoid such maps.
@pytest.mark.parametrize("make,size,batch,kwargs", [
    ("MobileNet", 32, 2, dict(alpha=0.125)),
    ("MobileNetV2", 32, 2, dict(alpha=0.1)),
    ("DenseNet121", 64, 2, {}),
    ("InceptionV3", 75, 4, {}),
])
def test_a_training_step_on_tiny_images(make, size, batch, kwargs):
    rng = np.random.RandomState(0)
    x = rng.rand(batch, size, size, 3).astype(np.float32) * 255
    y = np.arange(batch) % 3
    module = {"MobileNet": A.mobilenet, "MobileNetV2": A.mobilenet_v2,
              "DenseNet121": A.densenet, "InceptionV3": A.inception_v3}[make]
    with tf.Graph().as_default():
        model = getattr(module, make)(weights=None, input_shape=(size, size, 3), classes=3,
                                      **kwargs)
        assert model.output.shape.as_list() == [None, 3]
        model.compile(tf.keras.optimizers.SGD(0.001), "sparse_categorical_crossentropy")
        inputs = module.preprocess_input(x)
        history = model.fit(inputs, y, batch_size=batch, epochs=1, verbose=0)
        assert np.all(np.isfinite(history.history["loss"]))
        probs = model.predict(inputs)
        assert probs.shape == (batch, 3)
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_xception_trains_a_step_on_its_smallest_input():
    x = np.random.RandomState(0).rand(2, 71, 71, 3).astype(np.float32) * 255
    with tf.Graph().as_default():
        model = A.xception.Xception(weights=None, input_shape=(71, 71, 3), classes=3)
        model.compile(tf.keras.optimizers.SGD(0.01), "sparse_categorical_crossentropy")
        inputs = A.xception.preprocess_input(x)
        history = model.fit(inputs, np.array([0, 2]), batch_size=2, epochs=1, verbose=0)
        assert np.all(np.isfinite(history.history["loss"]))
        assert model.predict(inputs).shape == (2, 3)


def test_headless_outputs_pooling_and_input_tensor():
    with tf.Graph().as_default():
        base = A.DenseNet121(include_top=False, weights=None, input_shape=(64, 64, 3))
        assert base.output.shape.as_list() == [None, 2, 2, 1024]
        pooled = A.DenseNet121(include_top=False, weights=None, pooling="max",
                               input_shape=(64, 64, 3))
        assert pooled.layers[-1].name == "max_pool"
        assert pooled.output.shape.as_list() == [None, 1024]
        free = A.InceptionV3(include_top=False, weights=None, pooling="avg")
        assert free.input.shape.as_list() == [None, None, None, 3]
        assert free.output.shape.as_list() == [None, 2048]
        image = tf.keras.Input(shape=(40, 40, 3))
        scaled = tf.keras.layers.Lambda(lambda t: t / 127.5 - 1)(image)
        model = A.MobileNet(input_tensor=scaled, include_top=False, weights=None, alpha=0.25)
        assert model.input is image
        assert model.output.shape.as_list() == [None, 1, 1, 256]


def test_weights_from_save_weights(tmp_path):
    path = str(tmp_path / "w.ckpt")
    with tf.Graph().as_default():
        first = A.MobileNetV2(input_shape=(32, 32, 3), alpha=0.1, include_top=False,
                              weights=None)
        first.save_weights(path)
        want = first.get_weights()
    with tf.Graph().as_default():
        second = A.MobileNetV2(input_shape=(32, 32, 3), alpha=0.1, include_top=False,
                               weights=path)
        for a, b in zip(want, second.get_weights()):
            np.testing.assert_array_equal(a, b)


def test_preprocess_input_modes_by_hand():
    pixel = np.array([[[[255.0, 0.0, 127.5]]]], np.float32)
    tf_mode = [[[[1.0, -1.0, 0.0]]]]
    torch_mode = [[[[(1 - 0.485) / 0.229, (0 - 0.456) / 0.224, (0.5 - 0.406) / 0.225]]]]
    caffe_mode = [[[[127.5 - 103.939, 0 - 116.779, 255 - 123.68]]]]
    for module in (A.mobilenet, A.mobilenet_v2, A.inception_v3, A.xception):
        np.testing.assert_allclose(module.preprocess_input(pixel), tf_mode, atol=1e-6)
    np.testing.assert_allclose(A.densenet.preprocess_input(pixel), torch_mode, rtol=1e-6)
    np.testing.assert_allclose(A.resnet50.preprocess_input(pixel), caffe_mode, rtol=1e-6)
    uint8 = A.mobilenet.preprocess_input(np.array([0, 51, 255], np.uint8))
    assert uint8.dtype == np.float32
    np.testing.assert_allclose(uint8, [-1.0, -0.6, 1.0], atol=1e-6)
    assert A.mobilenet.preprocess_input(pixel.astype(np.float64)).dtype == np.float64
    first = pixel.reshape(1, 3, 1, 1)                     # channels_first
    got = A.imagenet_utils.preprocess_input(first, data_format="channels_first", mode="caffe")
    np.testing.assert_allclose(got.reshape(-1), np.reshape(caffe_mode, -1), rtol=1e-6)
    with tf.Graph().as_default():
        t = tf.constant(pixel)
        with tf.Session() as sess:
            got_tf, got_torch = sess.run([A.xception.preprocess_input(t),
                                          A.densenet.preprocess_input(t)])
            got_int = sess.run(A.inception_v3.preprocess_input(tf.constant([0, 255])))
    np.testing.assert_allclose(got_tf, tf_mode, atol=1e-6)
    np.testing.assert_allclose(got_torch, torch_mode, rtol=1e-5)
    np.testing.assert_allclose(got_int, [-1.0, 1.0], atol=1e-6)
    with pytest.raises(ValueError, match="mode"):
        A.imagenet_utils.preprocess_input(pixel, mode="keras")


def test_submodules_import_as_keras_modules():
    from shardflow.keras.applications.densenet import DenseNet201, preprocess_input
    from shardflow.keras.applications.mobilenet_v2 import MobileNetV2
    assert DenseNet201 is A.DenseNet201 and MobileNetV2 is A.MobileNetV2
    assert preprocess_input is A.densenet.preprocess_input
    assert A.inception_v3.InceptionV3 is A.InceptionV3 and A.xception.Xception is A.Xception


def test_refusals_say_what_is_wrong():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="mobilenet_1_0_224_tf.h5.*internet"):
            A.MobileNet(weights="imagenet")
        with pytest.raises(ValueError, match="densenet121_weights_tf_dim_ordering_tf_kernels_"
                                             "notop.h5"):
            A.DenseNet121(weights="imagenet", include_top=False)
        with pytest.raises(ValueError, match="does not exist"):
            A.Xception(weights="/nonexistent/weights.h5")
        for make, size in (("InceptionV3", 74), ("Xception", 70), ("MobileNet", 31),
                           ("DenseNet121", 31)):
            with pytest.raises(ValueError, match="at least"):
                getattr(A, make)(weights=None, include_top=False, input_shape=(size, 80, 3))
        with pytest.raises(ValueError, match="static"):
            A.MobileNetV2(weights=None, input_shape=(None, None, 3))
        with pytest.raises(ValueError, match="pooling"):
            A.DenseNet121(weights=None, include_top=False, pooling="sum")
        with pytest.raises(TypeError, match="unknown keyword"):
            A.InceptionV3(weights=None, alpha=0.5)


def test_decode_predictions_reads_keras_class_index(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    preds = np.zeros((2, 1000), np.float32)
    preds[0, [3, 7]] = [0.9, 0.1]
    preds[1, 999] = 1.0
    with pytest.raises(ValueError, match="class index.*imagenet_class_index.json"):
        A.mobilenet.decode_predictions(preds)
    folder = tmp_path / ".keras" / "models"
    folder.mkdir(parents=True, exist_ok=True)
    index = {str(i): ["n%08d" % i, "class_%d" % i] for i in range(1000)}
    (folder / "imagenet_class_index.json").write_text(json.dumps(index))
    got = A.densenet.decode_predictions(preds, top=2)
    assert [r[:2] for r in got[0]] == [("n00000003", "class_3"), ("n00000007", "class_7")]
    assert got[0][0][2] == pytest.approx(0.9) and got[1][0][:2] == ("n00000999", "class_999")
    with pytest.raises(ValueError, match="shape"):
        A.imagenet_utils.decode_predictions(np.zeros((2, 10)))
