"""tf.keras.wrappers.scikit_learn: KerasClassifier and KerasRegressor, Keras models with the
scikit-learn estimator interface (fit, predict, predict_proba, score, get_params,
set_params), as TF 1.15's Keras has them. scikit-learn itself is not needed; with it, the
wrappers work in its pipelines, grid searches and cross-validation (sklearn.base.clone
rebuilds them from get_params).

Example::

    def build_fn(hidden=16):
        model = keras.Sequential([keras.layers.Dense(hidden, activation="relu",
                                                     input_shape=(4,)),
                                  keras.layers.Dense(3, activation="softmax")])
        model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
        return model

    clf = KerasClassifier(build_fn, hidden=32, epochs=20, batch_size=16, verbose=0)
    clf.fit(x, y)                  # y: class labels of any values (np.unique gives classes_)
    clf.predict(x_test)            # labels from classes_
    clf.score(x_test, y_test)      # the model's accuracy

sk_params are build_fn's arguments and those of fit, predict and evaluate (epochs,
batch_size, verbose, ...); any other name is a ValueError, as Keras's check_params. Each
fit() builds a new model with build_fn (in the default graph, keras.backend's session).
"""

import copy
import inspect
import types

import numpy as np


def _has_arg(fn, name):
    """Whether `fn` takes an argument called `name` (not through **kwargs)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    p = params.get(name)
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def _predict_classes_args(x, batch_size=32, verbose=0):
    """The arguments of Keras's Sequential.predict_classes / predict_proba."""


def _is_categorical_crossentropy(loss):
    """Whether a model's compiled loss is categorical_crossentropy (a name, the function or a
    loss object; per-output lists and dicts are not)."""
    from shardflow.keras import losses
    if isinstance(loss, str):
        return loss == "categorical_crossentropy"
    if isinstance(loss, (list, tuple, dict)):
        return False
    fn = getattr(loss, "fn", loss)
    return fn is losses.categorical_crossentropy or \
        isinstance(fn, getattr(losses, "CategoricalCrossentropy", ())) or \
        getattr(fn, "__name__", None) == "categorical_crossentropy"


class BaseWrapper:
    """The scikit-learn interface over a model that build_fn (a function, or an object with
    __call__; None: this wrapper's own __call__) makes and compiles."""

    def __init__(self, build_fn=None, **sk_params):
        self.build_fn = build_fn
        self.sk_params = sk_params
        self.check_params(sk_params)

    def _build_target(self):
        if self.build_fn is None:
            return self.__call__
        if not isinstance(self.build_fn, (types.FunctionType, types.MethodType)):
            return self.build_fn.__call__
        return self.build_fn

    def check_params(self, params):
        """ValueError for a name in `params` that neither build_fn nor fit / predict /
        evaluate take."""
        from shardflow.keras.models import Model, Sequential
        legal = [Sequential.fit, Sequential.predict, _predict_classes_args, Model.evaluate,
                 self._build_target()]
        for name in params:
            if name != "nb_epoch" and not any(_has_arg(fn, name) for fn in legal):
                raise ValueError("{} is not a legal parameter".format(name))

    def get_params(self, **params):
        """sk_params and build_fn (scikit-learn's get_params; `deep` is accepted)."""
        res = copy.deepcopy(self.sk_params)
        res.update({"build_fn": self.build_fn})
        return res

    def set_params(self, **params):
        self.check_params(params)
        self.sk_params.update(params)
        return self

    def filter_sk_params(self, fn, override=None):
        """The sk_params `fn` takes, updated with `override`."""
        res = {name: value for name, value in self.sk_params.items() if _has_arg(fn, name)}
        res.update(override or {})
        return res

    def fit(self, x, y, **kwargs):
        """Builds a new model with build_fn and fits it to (x, y) with the sk_params that
        fit takes (kwargs override them); returns the History. Targets are one-hot encoded
        for a categorical_crossentropy model when they are not already."""
        from shardflow.keras.models import Sequential
        from shardflow.keras.utils import to_categorical
        build = self._build_target()
        self.model = (self.build_fn or self.__call__)(**self.filter_sk_params(build))
        y = np.asarray(y)
        if _is_categorical_crossentropy(getattr(self.model, "loss", None)) and y.ndim != 2:
            y = to_categorical(y)
        fit_args = copy.deepcopy(self.filter_sk_params(Sequential.fit))
        fit_args.update(kwargs)
        return self.model.fit(x, y, **fit_args)

    def _predict_args(self, kwargs):
        return self.filter_sk_params(_predict_classes_args, kwargs)


class KerasClassifier(BaseWrapper):
    """A classifier: fit takes class labels of any values (classes_ = their sorted unique
    values) or one-hot rows; predict gives labels from classes_, predict_proba a column per
    class (two for a single sigmoid output), score the model's accuracy."""

    def fit(self, x, y, **kwargs):
        y = np.array(y)
        if y.ndim == 2 and y.shape[1] > 1:
            self.classes_ = np.arange(y.shape[1])
        elif (y.ndim == 2 and y.shape[1] == 1) or y.ndim == 1:
            self.classes_ = np.unique(y)
            y = np.searchsorted(self.classes_, y)
        else:
            raise ValueError("Invalid shape for y: " + str(y.shape))
        self.n_classes_ = len(self.classes_)
        return super().fit(x, y, **kwargs)

    def _proba(self, x, kwargs):
        return np.asarray(self.model.predict(x, **self._predict_args(kwargs)))

    def predict(self, x, **kwargs):
        """The predicted labels (values of classes_)."""
        probs = self._proba(x, kwargs)
        if probs.shape[-1] > 1:
            classes = probs.argmax(axis=-1)
        else:
            classes = (probs > 0.5).astype("int32").reshape(-1)
        return self.classes_[classes]

    def predict_proba(self, x, **kwargs):
        """[samples, classes] probabilities; a single sigmoid output becomes [1 - p, p]."""
        probs = self._proba(x, kwargs)
        if probs.ndim == 2 and probs.shape[1] == 1:
            probs = np.hstack([1 - probs, probs])
        return probs

    def score(self, x, y, **kwargs):
        """The model's accuracy on (x, y) (it must be compiled with metrics=['accuracy'])."""
        from shardflow.keras.models import Model
        from shardflow.keras.utils import to_categorical
        y = np.searchsorted(self.classes_, y)
        kwargs = self.filter_sk_params(Model.evaluate, kwargs)
        if _is_categorical_crossentropy(self.model.loss) and y.ndim != 2:
            y = to_categorical(y, num_classes=len(self.classes_))
        outputs = self.model.evaluate(x, y, **kwargs)
        if not isinstance(outputs, list):
            outputs = [outputs]
        for name, output in zip(self.model.metrics_names, outputs):
            if name in ("accuracy", "acc"):
                return output
        raise ValueError("The model is not configured to compute accuracy. You should pass "
                         "`metrics=[\"accuracy\"]` to the `model.compile()` method.")


class KerasRegressor(BaseWrapper):
    """A regressor: predict gives the model's outputs squeezed, score the negated loss."""

    def predict(self, x, **kwargs):
        from shardflow.keras.models import Model
        kwargs = self.filter_sk_params(Model.predict, kwargs)
        return np.squeeze(self.model.predict(x, **kwargs))

    def score(self, x, y, **kwargs):
        from shardflow.keras.models import Model
        kwargs = self.filter_sk_params(Model.evaluate, kwargs)
        loss = self.model.evaluate(x, y, **kwargs)
        if isinstance(loss, list):
            return -loss[0]
        return -loss


__all__ = ["BaseWrapper", "KerasClassifier", "KerasRegressor"]
