"""tf.keras.layers.DenseFeatures (TF 1.14+): feature columns as the first layer of a Keras model,
the Keras form of tf.feature_column.input_layer.

Example::

    columns = [fc.numeric_column("age"),
               fc.indicator_column(fc.categorical_column_with_vocabulary_list("kind", ["a", "b"]))]
    inputs = {"age": keras.Input((1,), name="age"),
              "kind": keras.Input((1,), name="kind", dtype=tf.string)}
    hidden = keras.layers.DenseFeatures(columns)(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    model.fit({"age": ages, "kind": kinds}, y)

The columns' own variables (embedding tables) are the layer's weights, trained with the rest.
"""

from shardflow.keras.layers import Layer


class DenseFeatures(Layer):
    """The dense tensor of `feature_columns` for a dict of feature tensors: their values side by
    side in the order of the columns' names, float32 [batch, total width]."""

    def __init__(self, feature_columns, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self._feature_columns = list(feature_columns)
        if not self._feature_columns:
            raise ValueError("DenseFeatures needs at least one feature column")
        for column in self._feature_columns:
            if not getattr(column, "is_dense", False):
                raise ValueError("DenseFeatures takes dense columns; wrap %r in indicator_column "
                                 "or embedding_column" % (column,))

    def __call__(self, features, training=None, **kwargs):
        """As Layer.__call__, for a dict of tensors (SparseTensors too) by feature name."""
        from shardflow.framework import convert_to_tensor, get_default_graph
        from shardflow.keras import layers as keras_layers
        from shardflow.sparse_tensor import SparseTensor
        if not isinstance(features, dict) or not features:
            raise ValueError("DenseFeatures is called on a dict of feature name -> tensor, not "
                             "%r" % (features,))
        tensors = {k: v if isinstance(v, SparseTensor) else convert_to_tensor(v)
                   for k, v in features.items()}
        first = next(iter(tensors.values()))
        g = getattr(first, "graph", None) or get_default_graph()
        with g.as_default(), self._context(g):
            if not self._built:
                self._built = True
                self._order = next(keras_layers._call_order)
            y = self.call(tensors, **kwargs)
        # The model's graph walks back from its outputs through these (Model._init_graph).
        self._record([t for _, t in sorted(tensors.items()) if not isinstance(t, SparseTensor)],
                     y)
        return y

    def call(self, features, cols_to_output_tensors=None):
        from shardflow.feature_column import input_layer
        if not isinstance(features, dict):
            raise ValueError("DenseFeatures is called on a dict of feature name -> tensor, not "
                             "%r" % (features,))
        cols_to_vars = {}
        out = input_layer(features, self._feature_columns, trainable=self.trainable,
                          cols_to_vars=cols_to_vars)
        for variables in cols_to_vars.values():
            for v in variables:
                if not any(v is w for w in self.variables):
                    self.variables.append(v)
        if cols_to_output_tensors is not None:
            cols_to_output_tensors.update({c: out for c in self._feature_columns})
        return out

    def get_config(self):
        config = super().get_config() if hasattr(super(), "get_config") else {}
        config["feature_columns"] = [repr(c) for c in self._feature_columns]
        return config
