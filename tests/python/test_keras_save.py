"""tf.keras whole-model saving: model.save / keras.models.load_model round trips a trained
Sequential (same predictions, compiled again, trains on), and what cannot be saved says so."""
import json
import os
import zipfile

import numpy as np
import pytest

import shardflow as tf

keras = tf.keras


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    keras.backend.clear_session()
    yield


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((256, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    return x, y


def test_sequential_round_trip(tmp_path):
    x, y = data()
    model = keras.Sequential([
        keras.layers.Dense(16, activation="relu", input_shape=(6,)),
        keras.layers.Dropout(0.1),
        keras.layers.Dense(2, activation=tf.nn.softmax, kernel_initializer="he_normal"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(lr=0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x, y, epochs=3, batch_size=32, verbose=0)
    want = model.predict(x[:8])
    path = str(tmp_path / "model.h5")
    model.save(path)
    assert os.path.exists(path)

    keras.backend.clear_session()
    tf.reset_default_graph()
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x[:8]), want, rtol=1e-5, atol=1e-6)
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    assert loaded.metrics_names == ["loss", "acc"] or loaded.metrics_names[0] == "loss"
    loss_before = loaded.evaluate(x, y, verbose=0)[0]
    loaded.fit(x, y, epochs=3, batch_size=32, verbose=0)
    assert loaded.evaluate(x, y, verbose=0)[0] < loss_before


def test_conv_model_and_no_compile(tmp_path):
    rng = np.random.default_rng(1)
    images = rng.standard_normal((4, 8, 8, 1)).astype(np.float32)
    model = keras.Sequential([
        keras.layers.Conv2D(4, (3, 3), padding="same", activation="relu",
                            input_shape=(8, 8, 1)),
        keras.layers.MaxPooling2D((2, 2)),
        keras.layers.Flatten(),
        keras.layers.Dense(3),
    ])
    want = model.predict(images)
    path = str(tmp_path / "conv")
    keras.models.save_model(model, path)
    tf.reset_default_graph()
    keras.backend.clear_session()
    loaded = keras.models.load_model(path, compile=False)
    np.testing.assert_allclose(loaded.predict(images), want, rtol=1e-5, atol=1e-6)


def test_functional_model_with_two_inputs_round_trips(tmp_path):
    rng = np.random.default_rng(5)
    xa = rng.standard_normal((32, 4)).astype(np.float32)
    xb = rng.standard_normal((32, 3)).astype(np.float32)
    a = keras.layers.Input(shape=(4,), name="a")
    b = keras.layers.Input(shape=(3,), name="b")
    h = keras.layers.concatenate([keras.layers.Dense(8, activation="tanh")(a), b])
    out = keras.layers.Dense(1, activation="sigmoid", name="out")(h)
    model = keras.Model(inputs=[a, b], outputs=out)
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    model.fit([xa, xb], (xa[:, 0] > 0).astype(np.float32)[:, None], epochs=2, verbose=0)
    want = model.predict([xa, xb])
    path = str(tmp_path / "functional.h5")
    model.save(path)
    tf.reset_default_graph()
    keras.backend.clear_session()
    loaded = keras.models.load_model(path)
    assert [t.name.split(":")[0] for t in loaded.inputs] == ["a", "b"]
    np.testing.assert_allclose(loaded.predict([xa, xb]), want, rtol=1e-5, atol=1e-6)


def test_what_cannot_be_saved(tmp_path):
    x = keras.layers.Input(shape=(3,))
    shared = keras.layers.Dense(3)
    twice = keras.Model(x, shared(shared(x)))
    with pytest.raises(NotImplementedError, match="shared"):
        twice.save(str(tmp_path / "f"))
    lam = keras.Sequential([keras.layers.Dense(2, activation=lambda t: t * 2.0,
                                               input_shape=(3,))])
    with pytest.raises(NotImplementedError, match="activation"):
        lam.save(str(tmp_path / "l"))
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"\x89HDF\r\n\x1a\n not ours")
    with pytest.raises(ValueError, match="HDF5"):
        keras.models.load_model(str(bad))
    with pytest.raises(IOError):
        keras.models.load_model(str(tmp_path / "missing"))


def test_untrusted_archives_are_refused(tmp_path):
    """The file decides what is built: only keras layer classes, weights only as plain file
    names (nothing written outside the temporary directory), a well-formed model.json."""
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    good = str(tmp_path / "good")
    model.save(good)
    with zipfile.ZipFile(good) as z:
        config = json.loads(z.read("model.json"))
        weights = {n: z.read(n) for n in z.namelist() if n.startswith("weights/")}

    def write(name, cfg, extra=None):
        tf.reset_default_graph()  # each load builds the model's variables afresh
        keras.backend.clear_session()
        path = str(tmp_path / name)
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("model.json", json.dumps(cfg))
            for n, data in dict(weights, **(extra or {})).items():
                z.writestr(n, data)
        return path

    escape = tmp_path / "escaped"
    with pytest.raises(ValueError, match="plain file name"):
        keras.models.load_model(write("traversal", config,
                                      {"weights/../../escaped": b"x"}))
    assert not escape.exists()
    not_a_layer = json.loads(json.dumps(config))
    not_a_layer["layers"][0]["class"] = "get_default_graph"
    with pytest.raises(ValueError, match="unknown layer class"):
        keras.models.load_model(write("class", not_a_layer))
    for broken in ({k: v for k, v in config.items() if k != "layers"},
                   dict(config, batch_input_shape="3"),
                   dict(config, layers=[{"class": "Dense"}])):
        with pytest.raises(ValueError, match="malformed"):
            keras.models.load_model(write("broken", broken))
    wrong_args = json.loads(json.dumps(config))
    wrong_args["layers"][0]["kwargs"]["no_such_argument"] = 1
    with pytest.raises(ValueError, match="saved arguments"):
        keras.models.load_model(write("args", wrong_args))
    keras.models.load_model(write("again", config))  # the untouched archive still loads


def test_initializer_objects_round_trip_and_hostile_ones_are_refused(tmp_path):
    # Regression: keras.initializers.RandomNormal(...) made model.save raise
    # NotImplementedError (TF1 saves it by class name and config).
    model = keras.Sequential([keras.layers.Dense(
        3, input_shape=(4,), kernel_initializer=keras.initializers.RandomNormal(stddev=0.01),
        bias_initializer=keras.initializers.Constant(0.5))])
    path = str(tmp_path / "init")
    model.save(path)
    loaded = keras.models.load_model(path)
    init = loaded.layers[0].kernel_initializer
    assert type(init).__name__ == "RandomNormal" and init.get_config()["stddev"] == 0.01
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(loaded.predict(x), model.predict(x))
    with zipfile.ZipFile(path) as z:
        config = json.loads(z.read("model.json"))
        files = {n: z.read(n) for n in z.namelist() if n != "model.json"}
    for cls, cfg in (("get_variable", {}), ("RandomNormal", {"stddev": {"__dict__": {}}}),
                     ("RandomNormal", {"no_such_argument": 1})):
        bad = json.loads(json.dumps(config))
        bad["layers"][0]["kwargs"]["kernel_initializer"] = {
            "__init_class__": {"class": cls, "config": {"__dict__": cfg}}}
        hostile = str(tmp_path / "hostile")
        with zipfile.ZipFile(hostile, "w") as z:
            z.writestr("model.json", json.dumps(bad))
            for n, data in files.items():
                z.writestr(n, data)
        tf.reset_default_graph()
        keras.backend.clear_session()
        with pytest.raises(ValueError, match="initializer"):
            keras.models.load_model(hostile)


class _Net(keras.Model):
    def __init__(self):
        super(_Net, self).__init__()
        self.hidden = keras.layers.Dense(6, activation="relu")
        self.out = keras.layers.Dense(2)

    def call(self, x, training=None):
        return self.out(self.hidden(x))


def test_subclassed_model_built_by_input_or_build_loads_weights(tmp_path):
    # tf.keras's ways to give a subclassed model its weights before any data: call it on a
    # keras.Input, or build(input_shape); load_weights needs them ("not built" before).
    trained = _Net()
    x = np.random.RandomState(0).randn(8, 5).astype(np.float32)
    trained.compile("sgd", "mse")
    trained.fit(x, np.zeros((8, 2), np.float32), epochs=1, verbose=0)
    path = str(tmp_path / "net.h5")
    trained.save_weights(path)
    by_input = _Net()
    out = by_input(keras.Input((5,)))
    assert out.shape.as_list() == [None, 2] and by_input.built
    by_input.load_weights(path)
    by_build = _Net()
    by_build.build((None, 5))
    by_build.load_weights(path)
    want = trained.predict(x)
    np.testing.assert_allclose(by_input.predict(x), want, rtol=1e-6)
    np.testing.assert_allclose(by_build.predict(x), want, rtol=1e-6)


def test_loaded_multi_input_model_takes_a_dict_by_input_name(tmp_path):
    # Loading into a graph that already has an input "a" renames the placeholder ("a_1"); the
    # dict still goes by the Input layers' names (model.input_names).
    a = keras.Input((4,), name="a")
    b = keras.Input((3,), name="b")
    model = keras.Model([a, b], keras.layers.Dense(1)(keras.layers.concatenate([a, b])))
    model.compile("sgd", "mse")
    data = {"a": np.ones((2, 4), np.float32), "b": np.ones((2, 3), np.float32)}
    path = str(tmp_path / "two.h5")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.input_names == ["a", "b"]
    np.testing.assert_allclose(loaded.predict(data), model.predict(data), rtol=1e-6)
    with pytest.raises(ValueError, match="no data for input 'b'"):
        loaded.predict({"a": data["a"]})


def test_a_model_compiled_with_a_tf_train_optimizer_saves_without_compile_settings(tmp_path):
    # TF 1.15 warns and saves the model without its training configuration (this raised).
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.compile(tf.train.AdamOptimizer(0.01), "mse")
    x = np.ones((4, 3), np.float32)
    model.fit(x, np.ones((4, 1), np.float32), verbose=0)
    path = str(tmp_path / "m.h5")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.optimizer is None
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), rtol=1e-6)
