"""tf.keras.wrappers: scikit_learn's KerasClassifier and KerasRegressor."""

from shardflow.keras.wrappers import scikit_learn  # noqa: F401

__all__ = ["scikit_learn"]
