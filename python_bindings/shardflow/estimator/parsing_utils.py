"""tf.estimator.classifier_parse_example_spec / regressor_parse_example_spec: the spec
tf.parse_example takes for a canned estimator's features, label and weight, as TF 1.15's.

Example::

    spec = tf.estimator.classifier_parse_example_spec(
        [tf.feature_column.numeric_column("age")], label_key="clicked")
    # {"age": FixedLenFeature((1,), float32), "clicked": FixedLenFeature((1,), int64)}
"""

from shardflow import dtypes
from shardflow.feature_column import NumericColumn, make_parse_example_spec, numeric_column
from shardflow.parsing_ops import FixedLenFeature


def _with_label_and_weight(feature_columns, label_key, label_spec, weight_column):
    spec = dict(make_parse_example_spec(feature_columns))
    if label_key in spec:
        raise ValueError("label should not be used as feature. label_key: %s, features: %s"
                         % (label_key, sorted(spec)))
    spec[label_key] = label_spec
    if weight_column is None:
        return spec
    if isinstance(weight_column, str):
        weight_column = numeric_column(weight_column)
    if not isinstance(weight_column, NumericColumn):
        raise ValueError("weight_column should be an instance of "
                         "tf.feature_column.numeric_column. Given type: %s value: %r"
                         % (type(weight_column).__name__, weight_column))
    spec.update(weight_column._parse_example_spec())
    return spec


def classifier_parse_example_spec(feature_columns, label_key, label_dtype=dtypes.int64,
                                  label_default=None, weight_column=None):
    """The features' spec plus the label, FixedLenFeature((1,), label_dtype, label_default),
    and the weight column's (a name or a numeric_column) when given."""
    return _with_label_and_weight(feature_columns, label_key,
                                  FixedLenFeature((1,), label_dtype, label_default),
                                  weight_column)


def regressor_parse_example_spec(feature_columns, label_key, label_dtype=dtypes.float32,
                                 label_default=None, label_dimension=1, weight_column=None):
    """As classifier_parse_example_spec, with a float label of (label_dimension,)."""
    return _with_label_and_weight(feature_columns, label_key,
                                  FixedLenFeature((label_dimension,), label_dtype,
                                                  label_default),
                                  weight_column)
