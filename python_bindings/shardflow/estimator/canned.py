"""TF1's canned estimators: DNNClassifier, DNNRegressor, LinearClassifier, LinearRegressor,
BaselineClassifier, BaselineRegressor, and the wide & deep DNNLinearCombinedClassifier /
DNNLinearCombinedRegressor.

A canned estimator is an Estimator whose model_fn is written for you: feature columns ->
logits (a DNN or a linear model) -> a head (binary logistic, multi-class softmax or
regression) that makes the loss, the predictions and the eval metrics.

Example::

    columns = [sf.feature_column.numeric_column("x", shape=2)]
    clf = sf.estimator.DNNClassifier(hidden_units=[16, 16], feature_columns=columns,
                                     n_classes=3, config=sf.estimator.RunConfig(tf_random_seed=1))
    clf.train(train_input_fn, steps=500)
    clf.evaluate(eval_input_fn)["accuracy"]
    [p["class_ids"] for p in clf.predict(predict_input_fn)]

As TF1, the training loss is summed over the batch (loss_reduction SUM); evaluate's "loss" is
the mean of the batches' summed losses and "average_loss" the mean per example. Not supported:
weight_column, label_vocabulary, the string "classes" prediction, batch_norm.
"""

import math

from shardflow import dtypes, metrics, nn, ops
from shardflow.estimator.estimator import Estimator
from shardflow.estimator.model_fn import EstimatorSpec, ModeKeys
from shardflow.feature_column import input_layer, linear_model
from shardflow.framework import convert_to_tensor


def _optimizer(opt, default_learning_rate):
    """An Optimizer from a name ('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'), an instance,
    or a function returning one."""
    from shardflow import train
    if isinstance(opt, str):
        kinds = {"Adagrad": train.AdagradOptimizer, "Adam": train.AdamOptimizer,
                 "Ftrl": train.FtrlOptimizer, "RMSProp": train.RMSPropOptimizer,
                 "SGD": train.GradientDescentOptimizer}
        if opt not in kinds:
            raise ValueError("unknown optimizer '%s'; use one of %s, an Optimizer or a function "
                             "returning one" % (opt, sorted(kinds)))
        return kinds[opt](default_learning_rate)
    if isinstance(opt, train.Optimizer) or hasattr(opt, "minimize"):
        return opt
    if callable(opt):
        return opt()
    raise ValueError("optimizer must be a name, an Optimizer or a function, not %r" % (opt,))


class _Head:
    """Loss, predictions and metrics for logits of shape [batch, logits_dimension]."""

    def __init__(self, kind, n_classes=2, label_dimension=1):
        self.kind = kind                      # "binary", "multi_class" or "regression"
        self.n_classes = n_classes
        self.label_dimension = label_dimension

    @property
    def logits_dimension(self):
        if self.kind == "binary":
            return 1
        return self.n_classes if self.kind == "multi_class" else self.label_dimension

    def _labels(self, labels):
        if isinstance(labels, dict):
            raise ValueError("canned estimators take labels as one tensor, not a dict")
        labels = convert_to_tensor(labels)
        width = self.label_dimension if self.kind == "regression" else 1
        return ops.reshape(labels, [-1, width])

    def _predictions(self, logits):
        if self.kind == "regression":
            return {"predictions": logits}
        if self.kind == "binary":
            logistic = ops.sigmoid(logits)
            out = {"logits": logits, "logistic": logistic,
                   "probabilities": ops.concat([ops.subtract(1.0, logistic), logistic], 1),
                   "class_ids": ops.cast(ops.greater(logits, 0.0), dtypes.int64)}
        else:
            out = {"logits": logits, "probabilities": nn.softmax(logits),
                   "class_ids": ops.expand_dims(ops.argmax(logits, 1), 1)}
        # As TF 1.15's classification heads: the ids as strings, and every class per example.
        from shardflow import array_ops
        from shardflow.string_ops import as_string
        out["classes"] = as_string(out["class_ids"])
        every = ops.expand_dims(array_ops.range(self.n_classes, dtype=dtypes.int64), 0)
        # [batch, 1] zeros + [1, n_classes]: a row of every id per example.
        out["all_class_ids"] = ops.add(ops.multiply(out["class_ids"], 0), every)
        out["all_classes"] = as_string(out["all_class_ids"])
        return out

    def _export_outputs(self, predictions):
        """The signatures of an export, as TF 1.15's heads: classification ('scores' are the
        probabilities, 'classes' every class id as a string) as the default, plus 'regression'
        (the logistic) for 2 classes; regression heads regress; 'predict' has everything."""
        from shardflow.estimator.export import (ClassificationOutput, PredictOutput,
                                                RegressionOutput)
        from shardflow.saved_model import signature_constants
        default = signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
        out = {"predict": PredictOutput(predictions)}
        if self.kind == "regression":
            out[default] = out["regression"] = RegressionOutput(predictions["predictions"])
            return out
        out[default] = out["classification"] = ClassificationOutput(
            scores=predictions["probabilities"], classes=predictions["all_classes"])
        if self.kind == "binary":
            out["regression"] = RegressionOutput(predictions["logistic"])
        return out

    def _per_example_loss(self, labels, logits):
        """Loss per example, [batch, 1]."""
        if self.kind == "regression":
            diff = ops.squared_difference(ops.cast(labels, dtypes.float32), logits)
            return ops.reduce_sum(diff, axis=1, keepdims=True)
        if self.kind == "binary":
            return nn.sigmoid_cross_entropy_with_logits(
                labels=ops.cast(labels, dtypes.float32), logits=logits)
        ids = ops.reshape(ops.cast(labels, dtypes.int64), [-1])
        return ops.expand_dims(nn.sparse_softmax_cross_entropy_with_logits(
            labels=ids, logits=logits), 1)

    def _metrics(self, labels, predictions, per_example):
        out = {"average_loss": metrics.mean(per_example, name="average_loss")}
        if self.kind == "regression":
            out["label/mean"] = metrics.mean(labels, name="label_mean")
            out["prediction/mean"] = metrics.mean(predictions["predictions"],
                                                  name="prediction_mean")
            return out
        ids = ops.cast(labels, dtypes.int64)
        out["accuracy"] = metrics.accuracy(ids, predictions["class_ids"], name="accuracy")
        if self.kind == "binary":
            out["precision"] = metrics.precision(ids, predictions["class_ids"], name="precision")
            out["recall"] = metrics.recall(ids, predictions["class_ids"], name="recall")
            out["auc"] = metrics.auc(ids, predictions["logistic"], name="auc")
            out["auc_precision_recall"] = metrics.auc(
                ids, predictions["logistic"], curve="PR",
                summation_method="careful_interpolation", name="auc_precision_recall")
            out["label/mean"] = metrics.mean(labels, name="label_mean")
            # The accuracy of always predicting the more frequent label (TF 1.15's).
            mean, update = out["label/mean"]
            out["accuracy_baseline"] = (ops.maximum(mean, ops.subtract(1.0, mean)),
                                        ops.maximum(update, ops.subtract(1.0, update)))
            out["prediction/mean"] = metrics.mean(predictions["logistic"],
                                                  name="prediction_mean")
        return out

    def create_spec(self, features, mode, logits, labels, optimizer):
        predictions = self._predictions(logits)
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=predictions,
                                 export_outputs=self._export_outputs(predictions))
        if labels is None:
            raise ValueError("input_fn gave no labels; %s needs them" % mode)
        labels = self._labels(labels)
        per_example = self._per_example_loss(labels, logits)
        loss = ops.reduce_sum(per_example, name="loss")
        if mode == ModeKeys.EVAL:
            return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                 eval_metric_ops=self._metrics(labels, predictions, per_example))
        from shardflow.train import get_global_step
        train_op = optimizer.minimize(loss, global_step=get_global_step())
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)


def _classification_head(n_classes):
    if n_classes < 2:
        raise ValueError("n_classes must be at least 2, got %r" % (n_classes,))
    return _Head("binary" if n_classes == 2 else "multi_class", n_classes=n_classes)


def _dnn_logits(features, feature_columns, hidden_units, logits_dimension, activation_fn,
                dropout, mode):
    from shardflow.layers import Dense
    from shardflow.ops import _op_seed
    from shardflow.variables import initializers
    from shardflow.variable_scope import variable_scope
    net = input_layer(features, feature_columns)
    with variable_scope("dnn"):
        for i, units in enumerate(hidden_units):
            net = Dense(units, activation=activation_fn, name="hiddenlayer_%d" % i,
                        kernel_initializer=initializers.glorot_uniform(_op_seed(0)))(net)
            if dropout is not None and mode == ModeKeys.TRAIN:
                net = nn.dropout(net, rate=dropout, seed=_op_seed(0))
        return Dense(logits_dimension, name="logits",
                     kernel_initializer=initializers.glorot_uniform(_op_seed(0)))(net)


class _DNN(Estimator):
    _learning_rate = 0.05

    def __init__(self, head, hidden_units, feature_columns, model_dir, optimizer,
                 activation_fn, dropout, config, warm_start_from):
        if not hidden_units:
            raise ValueError("hidden_units must list at least one layer size")
        if dropout is not None and not 0 <= dropout < 1:
            raise ValueError("dropout is a rate in [0, 1), got %r" % (dropout,))
        feature_columns = list(feature_columns)
        hidden_units = list(hidden_units)
        activation_fn = activation_fn or nn.relu

        def model_fn(features, labels, mode):
            logits = _dnn_logits(features, feature_columns, hidden_units,
                                 head.logits_dimension, activation_fn, dropout, mode)
            opt = _optimizer(optimizer, self._learning_rate) if mode == ModeKeys.TRAIN \
                else None
            return head.create_spec(features, mode, logits, labels, opt)

        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class DNNClassifier(_DNN):
    """A feed-forward network classifier: feature columns -> `hidden_units` dense layers of
    `activation_fn` (with `dropout`, a drop rate, in training) -> logits. Predictions:
    "logits", "probabilities", "class_ids", "classes" (the ids as strings), "all_class_ids",
    "all_classes" (and "logistic" for 2 classes); evaluate: "accuracy", "loss", "average_loss"
    (and "accuracy_baseline", "auc", "auc_precision_recall", "precision", "recall",
    "label/mean", "prediction/mean" for 2 classes). Default optimizer: Adagrad, learning rate
    0.05."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=None, dropout=None, config=None, warm_start_from=None):
        if weight_column is not None or label_vocabulary is not None:
            raise NotImplementedError("weight_column and label_vocabulary are not supported")
        super().__init__(_classification_head(n_classes), hidden_units, feature_columns,
                         model_dir, optimizer, activation_fn, dropout, config, warm_start_from)


class DNNRegressor(_DNN):
    """A feed-forward network regressor: predictions "predictions" [batch, label_dimension];
    loss: squared error summed over the batch."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=None, dropout=None,
                 config=None, warm_start_from=None):
        if weight_column is not None:
            raise NotImplementedError("weight_column is not supported")
        super().__init__(_Head("regression", label_dimension=label_dimension), hidden_units,
                         feature_columns, model_dir, optimizer, activation_fn, dropout, config,
                         warm_start_from)


class _Linear(Estimator):
    def __init__(self, head, feature_columns, model_dir, optimizer, config, warm_start_from):
        feature_columns = list(feature_columns)
        # TF1's default: Ftrl at min(0.2, 1 / sqrt(number of columns)).
        learning_rate = min(0.2, 1.0 / math.sqrt(len(feature_columns)))

        def model_fn(features, labels, mode):
            logits = linear_model(features, feature_columns, units=head.logits_dimension)
            opt = _optimizer(optimizer, learning_rate) if mode == ModeKeys.TRAIN else None
            return head.create_spec(features, mode, logits, labels, opt)

        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class LinearClassifier(_Linear):
    """A linear classifier over feature columns (categorical ones get a weight per id);
    predictions and metrics as DNNClassifier's. Default optimizer: Ftrl."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, warm_start_from=None):
        if weight_column is not None or label_vocabulary is not None:
            raise NotImplementedError("weight_column and label_vocabulary are not supported")
        super().__init__(_classification_head(n_classes), feature_columns, model_dir,
                         optimizer, config, warm_start_from)


class LinearRegressor(_Linear):
    """A linear regressor over feature columns; predictions "predictions"."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, warm_start_from=None):
        if weight_column is not None:
            raise NotImplementedError("weight_column is not supported")
        super().__init__(_Head("regression", label_dimension=label_dimension), feature_columns,
                         model_dir, optimizer, config, warm_start_from)


# ---- baseline ---------------------------------------------------------------------------------

def _batch_size(features):
    """The batch size: the first dimension of the first feature by sorted name, as TF's."""
    from shardflow.sparse_tensor import SparseTensor
    if isinstance(features, dict):
        if not features:
            raise ValueError("a baseline estimator needs at least one feature for the batch "
                             "size")
        features = features[sorted(features)[0]]
    if isinstance(features, SparseTensor):
        return ops.cast(features.dense_shape[0], dtypes.int32)
    return ops.shape(convert_to_tensor(features))[0]


class _Baseline(Estimator):
    """TF1's baseline: the logits are one trained bias ("baseline/bias", [logits_dimension],
    from zeros) for every example, whatever its features; default optimizer Ftrl at 0.3."""

    def __init__(self, head, model_dir, optimizer, config):
        from shardflow.array_ops import stack
        from shardflow.variable_scope import get_variable, variable_scope, zeros_initializer

        def model_fn(features, labels, mode):
            with variable_scope("baseline"):
                bias = get_variable("bias", [head.logits_dimension],
                                    initializer=zeros_initializer())
            logits = ops.multiply(bias, ops.ones(stack(
                [_batch_size(features), head.logits_dimension])))
            opt = _optimizer(optimizer, 0.3) if mode == ModeKeys.TRAIN else None
            return head.create_spec(features, mode, logits, labels, opt)

        super().__init__(model_fn, model_dir=model_dir, config=config)


class BaselineClassifier(_Baseline):
    """Predicts the class distribution of the training labels (learns only a bias);
    predictions and metrics as DNNClassifier's."""

    def __init__(self, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None,
                 optimizer="Ftrl", config=None):
        if weight_column is not None or label_vocabulary is not None:
            raise NotImplementedError("weight_column and label_vocabulary are not supported")
        super().__init__(_classification_head(n_classes), model_dir, optimizer, config)


class BaselineRegressor(_Baseline):
    """Predicts the mean of the training labels (learns only a bias)."""

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None, optimizer="Ftrl",
                 config=None):
        if weight_column is not None:
            raise NotImplementedError("weight_column is not supported")
        super().__init__(_Head("regression", label_dimension=label_dimension), model_dir,
                         optimizer, config)


# ---- wide & deep ------------------------------------------------------------------------------

class _WideDeepOptimizer:
    """minimize() for a wide & deep model: one step of each optimizer on its part's
    variables, then global_step += 1 (as TF1's DNNLinearCombined model_fn)."""

    def __init__(self, parts):
        self._parts = [(opt, var_list) for opt, var_list in parts if var_list]

    def minimize(self, loss, global_step=None):
        from shardflow.train import _count_step
        steps = [opt.minimize(loss, var_list=var_list) for opt, var_list in self._parts]
        return _count_step(ops.group(*steps), global_step)


def _new_trainable(before, graph):
    from shardflow.variables import trainable_variables
    seen = {v.name for v in before}
    return [v for v in trainable_variables(graph=graph) if v.name not in seen]


class _DNNLinearCombined(Estimator):
    # TF1's defaults: the DNN part learns at 0.001; the linear part at
    # min(0.2, 1 / sqrt(number of linear columns)).
    _dnn_learning_rate = 0.001

    def __init__(self, head, model_dir, linear_feature_columns, linear_optimizer,
                 dnn_feature_columns, dnn_optimizer, dnn_hidden_units, dnn_activation_fn,
                 dnn_dropout, config, warm_start_from, linear_sparse_combiner):
        linear_feature_columns = list(linear_feature_columns or [])
        dnn_feature_columns = list(dnn_feature_columns or [])
        if not linear_feature_columns and not dnn_feature_columns:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns must be "
                             "defined.")
        if dnn_feature_columns and not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is "
                             "specified. dnn_hidden_units: %r, dnn_feature_columns: %r"
                             % (dnn_hidden_units, dnn_feature_columns))
        if dnn_dropout is not None and not 0 <= dnn_dropout < 1:
            raise ValueError("dnn_dropout is a rate in [0, 1), got %r" % (dnn_dropout,))
        if linear_sparse_combiner not in ("sum", "mean", "sqrtn"):
            raise ValueError("linear_sparse_combiner must be 'sum', 'mean' or 'sqrtn', got %r"
                             % (linear_sparse_combiner,))
        hidden_units = list(dnn_hidden_units or [])
        activation_fn = dnn_activation_fn or nn.relu
        linear_rate = min(0.2, 1.0 / math.sqrt(max(len(linear_feature_columns), 1)))

        def model_fn(features, labels, mode):
            from shardflow.framework import get_default_graph
            from shardflow.variable_scope import variable_scope
            from shardflow.variables import trainable_variables
            g = get_default_graph()
            parts, logits = [], None
            if dnn_feature_columns:
                before = trainable_variables(graph=g)
                dnn_logits = _dnn_logits(features, dnn_feature_columns, hidden_units,
                                         head.logits_dimension, activation_fn, dnn_dropout,
                                         mode)
                parts.append((dnn_optimizer, self._dnn_learning_rate,
                              _new_trainable(before, g)))
                logits = dnn_logits
            if linear_feature_columns:
                before = trainable_variables(graph=g)
                with variable_scope("linear"):
                    linear_logits = linear_model(features, linear_feature_columns,
                                                 units=head.logits_dimension,
                                                 sparse_combiner=linear_sparse_combiner)
                parts.append((linear_optimizer, linear_rate, _new_trainable(before, g)))
                logits = linear_logits if logits is None else ops.add(logits, linear_logits)
            opt = None
            if mode == ModeKeys.TRAIN:
                opt = _WideDeepOptimizer([(_optimizer(o, rate), var_list)
                                          for o, rate, var_list in parts])
            return head.create_spec(features, mode, logits, labels, opt)

        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class DNNLinearCombinedClassifier(_DNNLinearCombined):
    """A wide & deep classifier: a linear model of `linear_feature_columns` (trained by
    `linear_optimizer`, default Ftrl at min(0.2, 1/sqrt(columns))) plus a DNN of
    `dnn_feature_columns` (trained by `dnn_optimizer`, default Adagrad at 0.001), their
    logits summed. Predictions and metrics as DNNClassifier's."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=nn.relu, dnn_dropout=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction="weighted_sum", batch_norm=False,
                 linear_sparse_combiner="sum"):
        if weight_column is not None or label_vocabulary is not None:
            raise NotImplementedError("weight_column and label_vocabulary are not supported")
        _check_sum_reduction(loss_reduction, batch_norm)
        super().__init__(_classification_head(n_classes), model_dir, linear_feature_columns,
                         linear_optimizer, dnn_feature_columns, dnn_optimizer,
                         dnn_hidden_units, dnn_activation_fn, dnn_dropout, config,
                         warm_start_from, linear_sparse_combiner)


class DNNLinearCombinedRegressor(_DNNLinearCombined):
    """A wide & deep regressor (as DNNLinearCombinedClassifier); predictions "predictions"
    [batch, label_dimension]; loss: squared error summed over the batch."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=nn.relu, dnn_dropout=None, label_dimension=1,
                 weight_column=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction="weighted_sum", batch_norm=False,
                 linear_sparse_combiner="sum"):
        if weight_column is not None:
            raise NotImplementedError("weight_column is not supported")
        _check_sum_reduction(loss_reduction, batch_norm)
        super().__init__(_Head("regression", label_dimension=label_dimension), model_dir,
                         linear_feature_columns, linear_optimizer, dnn_feature_columns,
                         dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                         config, warm_start_from, linear_sparse_combiner)


def _check_sum_reduction(loss_reduction, batch_norm):
    if loss_reduction not in ("weighted_sum", None) and \
            getattr(loss_reduction, "value", loss_reduction) != "weighted_sum":
        raise NotImplementedError("loss_reduction: only TF1's default SUM is supported")
    if batch_norm:
        raise NotImplementedError("batch_norm is not supported")
