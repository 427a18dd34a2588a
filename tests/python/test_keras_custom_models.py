"""tf.keras models users write themselves: a subclassed keras.Model (layers as attributes, a
call method) trained with fit / evaluate / predict, and model.save / load_model of a model with
regularizers, constraints, initializer objects, a custom loss and a custom metric (given back
through custom_objects, as Keras)."""
import numpy as np
import pytest

import shardflow as tf

keras = tf.keras
K = keras.backend


@pytest.fixture(autouse=True)
def fresh_graph():
    K.clear_session()
    yield
    K.clear_session()


def data(n=256, seed=0):
    x = np.random.RandomState(seed).rand(n, 4).astype(np.float32)
    return x, x.sum(1, keepdims=True)


class TwoLayers(keras.Model):
    def __init__(self):
        super(TwoLayers, self).__init__()
        self.hidden = keras.layers.Dense(16, activation="relu")
        self.out = keras.layers.Dense(1)

    def call(self, inputs, training=None):
        return self.out(self.hidden(inputs))


def test_a_subclassed_model_trains_evaluates_and_predicts():
    x, y = data()
    model = TwoLayers()
    model.compile(keras.optimizers.Adam(0.01), "mse")
    history = model.fit(x, y, epochs=20, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert model.evaluate(x, y, verbose=0) < 0.1
    assert model.predict(x[:3]).shape == (3, 1)
    assert len(model.trainable_weights) == 4          # two kernels, two biases
    assert [layer.name for layer in model.layers] == [model.hidden.name, model.out.name]
    # Called on a new tensor, the same weights.
    t = tf.placeholder(tf.float32, [None, 4])
    np.testing.assert_allclose(K.get_session().run(model(t), {t: x[:3]}), model.predict(x[:3]),
                               rtol=1e-5)


def scaled_mse(y_true, y_pred):
    return K.mean(K.square(y_true - y_pred), axis=-1) * 2.0


def mean_abs(y_true, y_pred):
    return K.mean(K.abs(y_true - y_pred))


def test_save_and_load_a_model_with_custom_objects(tmp_path):
    x, y = data()
    inp = keras.layers.Input((4,))
    h = keras.layers.Dense(8, activation="relu", kernel_regularizer=keras.regularizers.l2(1e-3),
                           kernel_constraint=keras.constraints.max_norm(3.0),
                           kernel_initializer=keras.initializers.he_normal(seed=1),
                           bias_initializer=keras.initializers.Constant(0.1))(inp)
    out = keras.layers.Dense(1)(h)
    model = keras.models.Model(inp, out)
    model.compile("rmsprop", loss=scaled_mse, metrics=[mean_abs])
    model.fit(x, y, epochs=2, verbose=0)
    path = str(tmp_path / "m.h5")
    model.save(path)
    with pytest.raises(ValueError, match="custom_objects=\\{'scaled_mse'"):
        keras.models.load_model(path)
    loaded = keras.models.load_model(path, custom_objects={"scaled_mse": scaled_mse,
                                                           "mean_abs": mean_abs})
    np.testing.assert_allclose(loaded.predict(x[:4]), model.predict(x[:4]), rtol=1e-5)
    dense = loaded.layers[1]
    assert dense.kernel_regularizer.l2 == pytest.approx(1e-3)
    assert loaded.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0),
                                                             rel=1e-4)
    loaded.fit(x, y, epochs=1, verbose=0)               # compiled again, trains
    # Without compiling, no custom objects are needed.
    assert keras.models.load_model(path, compile=False).predict(x[:1]).shape == (1, 1)


def test_cudnn_layers_wrapper_input_spec_spatial_dropout_3d_and_progbar(capsys):
    """Layers TF1 Keras code names: CuDNNLSTM/CuDNNGRU (the engine's LSTM/GRU, so GPU code
    builds on a CPU), a custom Wrapper, InputSpec, SpatialDropout3D; utils.Progbar."""
    x = np.random.RandomState(1).rand(8, 5, 3).astype(np.float32)
    inp = keras.layers.Input((5, 3))
    seq = keras.layers.CuDNNLSTM(4, return_sequences=True)(inp)
    last = keras.layers.CuDNNGRU(2)(seq)

    class Twice(keras.layers.Wrapper):
        def build(self, input_shape):
            self.input_spec = keras.layers.InputSpec(ndim=2)
            super(Twice, self).build(input_shape)

        def call(self, inputs):
            return self.layer(inputs) * 2.0
    wrapped = Twice(keras.layers.Dense(1))
    out = wrapped(last)
    model = keras.Model(inp, out)
    model.compile("adam", "mse")
    model.fit(x, np.ones((8, 1), np.float32), epochs=1, verbose=0)
    assert model.predict(x).shape == (8, 1)
    assert len(wrapped.trainable_weights) == 2        # the Dense's kernel and bias
    vol = keras.layers.Input((2, 2, 2, 3))
    dropped = keras.layers.SpatialDropout3D(0.5)(vol)
    ones = np.ones((4, 2, 2, 2, 3), np.float32)
    got = K.get_session().run(dropped, {vol: ones, K.learning_phase(): True})
    per_channel = got.reshape(4, -1, 3)                # each channel all 0 or all 2
    assert np.all((per_channel == 0) | (per_channel == 2))
    assert np.all(per_channel.min(1) == per_channel.max(1))
    bar = keras.utils.Progbar(4, verbose=2)
    for step in range(1, 5):
        bar.update(step, values=[("loss", float(step))])
    printed = capsys.readouterr().out
    assert "4/4" in printed and "loss: 2.5" in printed


def test_sequential_predict_classes_and_proba():
    """TF 1.15's Sequential.predict_classes (argmax, or a sigmoid rounded) and predict_proba."""
    x = np.random.RandomState(2).rand(6, 4).astype(np.float32)
    soft = keras.Sequential([keras.layers.Dense(3, activation="softmax", input_shape=(4,))])
    np.testing.assert_array_equal(soft.predict_classes(x), soft.predict(x).argmax(-1))
    np.testing.assert_allclose(soft.predict_proba(x), soft.predict(x))
    sig = keras.Sequential([keras.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
    np.testing.assert_array_equal(sig.predict_classes(x), (sig.predict(x) > 0.5).astype("int32"))
    assert sig.predict_classes(x).shape == (6, 1)
