"""Keras programs as TF 1.15 users write them, each of which failed or differed before: a
convolutional autoencoder (4-D outputs), a VAE whose loss comes from model.add_loss, custom
layers adding losses / updates / metrics, callbacks' hooks and params, learning rates set
after compile, and TF 1.15's history names."""
import numpy as np
import pytest

import shardflow as tf

keras = tf.keras
L = keras.layers
K = keras.backend


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    K.clear_session()
    tf.set_random_seed(3)
    yield


def test_conv_autoencoder_with_4d_outputs_trains_with_sample_weights():
    rng = np.random.default_rng(0)
    x = rng.random((16, 8, 8, 1)).astype(np.float32)
    model = keras.Sequential([
        L.Conv2D(4, 3, padding="same", activation="relu", input_shape=(8, 8, 1)),
        L.MaxPooling2D(2), L.UpSampling2D(2),
        L.Conv2D(1, 3, padding="same", activation="sigmoid")])
    model.compile("adam", "binary_crossentropy", metrics=["mse"])
    weights = np.ones(16, np.float32)
    weights[8:] = 0.0          # per-sample weights of per-pixel losses
    history = model.fit(x, x, batch_size=4, epochs=4, verbose=0, sample_weight=weights)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert "mean_squared_error" in history.history
    loss, mse = model.evaluate(x[:8], x[:8], verbose=0)
    # half the weights zero: the weighted loss over all 16 is half the first 8's (Keras's
    # sum over the number of elements)
    assert model.evaluate(x, x, sample_weight=weights, verbose=0)[0] == pytest.approx(
        loss / 2, rel=1e-4)
    assert model.train_on_batch(x[:4], x[:4]) is not None


def test_vae_loss_from_add_loss_and_compile_without_a_loss():
    rng = np.random.default_rng(1)
    dim = 12
    inp = L.Input((dim,))
    h = L.Dense(8, activation="relu")(inp)
    z_mean, z_log_var = L.Dense(2)(h), L.Dense(2)(h)
    z = L.Lambda(lambda a: a[0] + K.exp(0.5 * a[1]) * K.random_normal(K.shape(a[0])))(
        [z_mean, z_log_var])
    out = L.Dense(dim, activation="sigmoid")(L.Dense(8, activation="relu")(z))
    vae = keras.Model(inp, out)
    reconstruction = keras.losses.binary_crossentropy(inp, out) * dim
    kl = -0.5 * K.sum(1 + z_log_var - K.square(z_mean) - K.exp(z_log_var), axis=-1)
    vae.add_loss(K.mean(reconstruction + kl))
    vae.compile(optimizer=keras.optimizers.Adam(0.01))
    x = (rng.random((64, dim)) > 0.5).astype(np.float32)
    history = vae.fit(x, epochs=6, batch_size=16, verbose=0, validation_data=(x, None))
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert len(history.history["val_loss"]) == 6
    plain = keras.Sequential([L.Dense(1, input_shape=(3,))])
    with pytest.raises(ValueError, match="add_loss"):
        plain.compile("sgd")


class _Scale(L.Layer):
    """A custom layer adding a weight penalty, a counter update and a metric."""

    def build(self, input_shape):
        self.w = self.add_weight("w", (int(input_shape[-1]),), initializer="ones")
        self.calls = self.add_weight("calls", (), initializer="zeros", trainable=False)
        super(_Scale, self).build(input_shape)

    def call(self, x):
        self.add_loss(0.5 * tf.reduce_sum(tf.square(self.w)))
        self.add_update(tf.assign_add(self.calls, 1.0))
        self.add_metric(tf.reduce_mean(x), name="mean_in", aggregation="mean")
        return x * self.w


def test_custom_layer_add_loss_add_update_add_metric():
    x = np.full((12, 3), 2.0, np.float32)
    y = np.zeros((12, 1), np.float32)
    inp = L.Input((3,))
    scale = _Scale()
    out = L.Dense(1, kernel_initializer="zeros", use_bias=False, trainable=False)(scale(inp))
    model = keras.Model(inp, out)
    assert scale.built and len(model.losses) == 1 and len(model.updates) == 1
    model.compile(keras.optimizers.SGD(0.1), "mse")
    # the prediction is 0 (frozen zero kernel): the loss is the penalty 0.5 * |w|^2 = 1.5
    assert model.evaluate(x, y, verbose=0)[0] == pytest.approx(1.5)
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    assert history.history["mean_in"] == [pytest.approx(2.0)]
    assert model.metrics_names == ["loss", "mean_in"]
    # three steps of SGD on 0.5 |w|^2 with lr 0.1: w = 0.9^3; the update ran each step
    np.testing.assert_allclose(K.get_value(scale.w), np.full(3, 0.9 ** 3), rtol=1e-5)
    assert K.get_value(scale.calls) == 3.0
    with pytest.raises(ValueError, match="name"):
        scale.add_metric(tf.constant(1.0))


def test_callback_hooks_logs_params_and_evaluate_predict_hooks():
    seen = []
    model = keras.Sequential([L.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse", metrics=["mae"])
    lam = keras.callbacks.LambdaCallback(
        on_train_begin=lambda logs: seen.append(("train_begin", logs)),
        on_epoch_begin=lambda epoch, logs: seen.append(("epoch_begin", logs)),
        on_train_end=lambda logs: seen.append(("train_end", logs)))

    class Hooks(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            seen.append(("params", dict(self.params)))

        def on_test_batch_end(self, batch, logs=None):
            seen.append(("test_batch", batch, sorted(logs)))

        def on_test_end(self, logs=None):
            seen.append(("test_end",))

        def on_predict_batch_end(self, batch, logs=None):
            seen.append(("predict_batch", batch))

    x, y = np.ones((8, 3), np.float32), np.ones((8, 1), np.float32)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[lam])
    assert seen == [("train_begin", None), ("epoch_begin", {}), ("train_end", None)]
    del seen[:]
    model.evaluate(x, y, batch_size=4, verbose=0, callbacks=[Hooks()])
    model.predict(x, batch_size=4, callbacks=[Hooks()])
    assert seen == [("test_batch", 0, ["batch", "loss", "mean_absolute_error", "size"]),
                    ("test_batch", 1, ["batch", "loss", "mean_absolute_error", "size"]),
                    ("test_end",), ("predict_batch", 0), ("predict_batch", 1)]
    del seen[:]
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat()
    model.fit(data, steps_per_epoch=3, epochs=1, verbose=0, callbacks=[Hooks()])
    params = seen[0][1]
    assert params["steps"] == 3 and params["samples"] is None


def test_learning_rate_is_a_variable_after_compile():
    model = keras.Sequential([L.Dense(1, input_shape=(3,))])
    model.compile(keras.optimizers.Adam(0.01), "mse")
    assert K.get_value(model.optimizer.lr) == pytest.approx(0.01)
    K.set_value(model.optimizer.lr, 0.001)
    model.fit(np.ones((8, 3)), np.ones((8, 1)), epochs=1, batch_size=8, verbose=0)
    assert K.get_value(model.optimizer.lr) == pytest.approx(0.001)
    assert K.get_value(model.optimizer.iterations) == 1


def test_metric_names_and_get_as_tf_1_15():
    model = keras.Sequential([L.Dense(1, input_shape=(2,))])
    model.compile("sgd", "mse", metrics=["mae", "mse", "accuracy", "cosine"])
    history = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0,
                        validation_split=0.5)
    assert sorted(history.history) == sorted([
        "loss", "mean_absolute_error", "mean_squared_error", "acc", "cosine_proximity",
        "val_loss", "val_mean_absolute_error", "val_mean_squared_error", "val_acc",
        "val_cosine_proximity"])
    assert keras.metrics.get("mae") is keras.metrics.mean_absolute_error
    with tf.Session() as sess:
        assert sess.run(keras.metrics.get("accuracy")(
            tf.constant([1.0, 2.0]), tf.constant([1.0, 3.0]))).tolist() == [1.0, 0.0]


def test_save_weights_names_the_checkpoint_for_latest_checkpoint(tmp_path):
    """The save/load tutorial: ModelCheckpoint(save_weights_only=True) into a directory, then
    model.load_weights(tf.train.latest_checkpoint(directory))."""
    x = np.random.default_rng(4).random((16, 3)).astype(np.float32)
    y = x.sum(1, keepdims=True)
    model = keras.Sequential([L.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse")
    path = str(tmp_path / "training_1" / "cp-{epoch:04d}.ckpt")
    model.fit(x, y, epochs=2, verbose=0, callbacks=[
        keras.callbacks.ModelCheckpoint(path, save_weights_only=True)])
    latest = tf.train.latest_checkpoint(str(tmp_path / "training_1"))
    assert latest is not None and latest.endswith("cp-0002.ckpt")
    fresh = keras.Sequential([L.Dense(1, input_shape=(3,))])
    fresh.load_weights(latest)
    np.testing.assert_allclose(fresh.predict(x), model.predict(x), rtol=1e-6)
    model.save_weights(str(tmp_path / "h5" / "w.h5"))
    assert tf.train.latest_checkpoint(str(tmp_path / "h5")) is None    # .h5: no state file


class _Subclassed(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = L.Dense(4, activation="relu")
        self.out = L.Dense(1)

    def call(self, x):
        return self.out(self.hidden(x))


def test_subclassed_predict_before_fit_and_dense_features_in_a_sequential():
    """A subclassed model's predict before any fit failed 'variable not initialized'; a
    Sequential starting with DenseFeatures (the structured-data tutorial) had IndexError."""
    assert _Subclassed().predict(np.ones((3, 5), np.float32)).shape == (3, 1)
    cols = [tf.feature_column.numeric_column("a"), tf.feature_column.numeric_column("b")]
    model = keras.Sequential([keras.layers.DenseFeatures(cols), L.Dense(8, activation="relu"),
                              L.Dense(1)])
    model.compile(keras.optimizers.Adam(0.05), "mse")
    rng = np.random.default_rng(5)
    a, b = rng.random(64).astype(np.float32), rng.random(64).astype(np.float32)
    target = (2 * a - b).astype(np.float32)
    data = tf.data.Dataset.from_tensor_slices(({"a": a, "b": b}, target)).batch(16)
    history = model.fit(data, epochs=10, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    got = model.predict({"a": a[:4], "b": b[:4]})
    assert got.shape == (4, 1)
    assert model.evaluate({"a": a, "b": b}, target, verbose=0) < history.history["loss"][0]


def test_load_weights_by_name_matches_layers_and_skips_the_others(tmp_path):
    first = keras.Sequential([L.Dense(3, input_shape=(2,), name="shared"), L.Dense(1, name="x")])
    path = str(tmp_path / "w.ckpt")
    first.save_weights(path)
    second = keras.Sequential([L.Dense(3, input_shape=(2,), name="shared"),
                               L.Dense(2, name="y")])
    before = second.layers[1].get_weights()
    second.load_weights(path, by_name=True)
    for a, b in zip(first.layers[0].get_weights(), second.layers[0].get_weights()):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(before, second.layers[1].get_weights()):      # no "y" in the file
        np.testing.assert_array_equal(a, b)
    third = keras.Sequential([L.Dense(3, input_shape=(2,), name="x")])
    with pytest.raises(ValueError, match="shape"):
        third.load_weights(path, by_name=True)


def test_fit_on_an_iterator_or_on_pipeline_tensors_with_steps():
    x = np.random.default_rng(6).random((64, 3)).astype(np.float32)
    y = x.sum(1, keepdims=True)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat()
    model = keras.Sequential([L.Dense(1, input_shape=(3,))])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    history = model.fit(data.make_one_shot_iterator(), steps_per_epoch=4, epochs=5, verbose=0)
    assert len(history.history["loss"]) == 5
    assert history.history["loss"][-1] < history.history["loss"][0]
    features, labels = data.make_one_shot_iterator().get_next()
    history = model.fit(features, labels, steps_per_epoch=4, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert model.evaluate(features, labels, steps=2, verbose=0) < history.history["loss"][0]
    with pytest.raises(ValueError, match="steps"):
        model.fit(features, labels, epochs=1, verbose=0)


def test_a_model_used_as_a_layer_is_one_layer_and_freezes():
    """Transfer learning: a base model called on the new model's input is one layer of it, and
    base.trainable = False freezes its weights (they were flattened into the outer model and
    kept training)."""
    x = np.random.default_rng(7).random((16, 3)).astype(np.float32)
    y = x.sum(1, keepdims=True)
    base = keras.Sequential([L.Dense(4, input_shape=(3,)), L.Dense(2)], name="base")
    inp = L.Input((3,))
    model = keras.Model(inp, L.Dense(1, name="head")(base(inp)))
    assert [layer.name for layer in model.layers] == [model.layers[0].name, "base", "head"]
    assert model.get_layer("base") is base
    base.trainable = False
    model.compile(keras.optimizers.SGD(0.1), "mse")
    assert len(model.trainable_weights) == 2 and len(model.weights) == 6
    frozen = [w.copy() for w in base.get_weights()]
    head = model.get_layer("head").get_weights()[0].copy()
    model.fit(x, y, epochs=2, verbose=0)
    for before, after in zip(frozen, base.get_weights()):
        np.testing.assert_array_equal(before, after)
    assert not np.array_equal(head, model.get_layer("head").get_weights()[0])
    functional_in = L.Input((3,))
    functional = keras.Model(functional_in, L.Dense(2)(functional_in), name="fbase")
    outer_in = L.Input((3,))
    outer = keras.Model(outer_in, L.Dense(1)(functional(outer_in)))
    assert "fbase" in [layer.name for layer in outer.layers]
    assert outer.predict(x).shape == (16, 1)


def test_layer_get_config_and_from_config():
    """get_config gives a layer's constructor arguments by name (it gave only name and
    trainable), and from_config builds a like layer, also for a custom layer's override."""
    dense = L.Dense(3, activation="relu", name="d")
    config = dense.get_config()
    assert config["units"] == 3 and config["activation"] == "relu" and config["name"] == "d"
    again = L.Dense.from_config(dict(config, name="d2"))
    assert again.units == 3 and again.name == "d2"

    class Scaled(L.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, x):
            return x * self.factor

        def get_config(self):
            config = super().get_config()
            config.update({"factor": self.factor})
            return config

    copy = Scaled.from_config(dict(Scaled(3.0, name="s").get_config(), name="s2"))
    assert copy.factor == 3.0 and copy.name == "s2"


def test_regularizer_names_and_tensorboard_histograms(tmp_path):
    """kernel_regularizer='l2' (Keras's names; a ValueError before) and TensorBoard(
    histogram_freq=1) writing each weight's histogram (a ValueError before)."""
    import glob
    model = keras.Sequential([L.Dense(2, input_shape=(3,), kernel_regularizer="l2",
                                      bias_regularizer="l1")])
    assert len(model.losses) == 2
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 3)), np.ones((4, 2)), epochs=2, verbose=0,
              callbacks=[keras.callbacks.TensorBoard(log_dir=str(tmp_path), histogram_freq=1)])
    seen = set()
    for event in tf.train.summary_iterator(glob.glob(str(tmp_path / "events*"))[0]):
        for value in event.summary.value:
            if value.HasField("histo"):
                seen.add((value.tag.split("/")[-1], event.step, value.histo.num))
    assert seen == {("kernel_0", 0, 6), ("kernel_0", 1, 6), ("bias_0", 0, 2), ("bias_0", 1, 2)}


def test_a_pretrained_application_as_the_base_of_a_sequential_trains():
    """Sequential([MobileNetV2(include_top=False), pooling, Dense]) with the base frozen: the
    step ran the batch-normalization updates of the base's first build too, which read the
    base's own Input ('placeholder input is needed but not fed')."""
    base = keras.applications.MobileNetV2(input_shape=(32, 32, 3), include_top=False,
                                          weights=None, alpha=0.35)
    base.trainable = False
    model = keras.Sequential([base, L.GlobalAveragePooling2D(), L.Dense(3, activation="softmax")])
    model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    rng = np.random.default_rng(11)
    x = rng.random((8, 32, 32, 3)).astype(np.float32)
    frozen = base.get_weights()[0].copy()
    history = model.fit(x, rng.integers(0, 3, 8), epochs=1, batch_size=4, verbose=0)
    assert sorted(history.history) == ["acc", "loss"]
    np.testing.assert_array_equal(frozen, base.get_weights()[0])
    assert len(model.trainable_weights) == 2
