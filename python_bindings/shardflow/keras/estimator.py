"""tf.keras.estimator.model_to_estimator: a tf.estimator.Estimator that trains, evaluates and
predicts with a compiled Keras model.

Example::

    model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    est = keras.estimator.model_to_estimator(keras_model=model, model_dir="/tmp/m")
    est.train(tf.estimator.inputs.numpy_input_fn({"input": x}, y, shuffle=True), steps=100)
    est.evaluate(input_fn)          # {'loss': ..., 'acc': ..., 'global_step': 100}

The model_fn rebuilds the model's layers (its config, keras/saving.py: Sequential and
functional models whose layers' arguments are names) on the features, which are a tensor (one
input) or a dict keyed by the names of the model's inputs: the InputLayer's name, its
placeholder's name, or, for a Sequential, TF's "<first layer name>_input". Features of another
dtype than the input's are cast to it. Labels are a tensor (or a dict keyed by the output
layer's name; several outputs: a dict by output name). The losses, loss_weights, metrics (eval
results keyed as Model.metrics_names: 'acc' for 'accuracy', as TF 1.x; "<output>_<metric>"
for several outputs) and optimizer are those of compile(); the layers run in training mode
(Dropout, BatchNormalization) in TRAIN only. Predictions are a dict keyed by the output layers'
names.

The Keras model's current weights are the Estimator's starting point: when model_dir has no
checkpoint yet, model_to_estimator writes them (with freshly initialised optimizer slots) as
model_dir/keras_model.ckpt-0, so evaluate and predict before any training use them too (TF 1.15
warm-starts train() from model_dir/keras/ instead). Not supported: subclassed models (their
config cannot be written), sample weights.
"""

import contextlib
import os

import numpy as np

from shardflow import tf_logging as logging


def _input_keys(model):
    """Per model input, the names a features dict may give it by."""
    from shardflow.keras.models import Sequential
    keys = []
    for t in model.inputs:
        names = [t._keras_history[0].name, t.op.name]
        if isinstance(model, Sequential) and model.layers:
            names.append(model.layers[0].name + "_input")
        keys.append(list(dict.fromkeys(names)))
    return keys


@contextlib.contextmanager
def _learning_phase(graph, training):
    """Layers built inside take the training behaviour (Dropout on) when `training`."""
    from shardflow.keras import backend as K
    if not training:
        yield
        return
    with graph.as_default():
        K.set_learning_phase(1)
    try:
        yield
    finally:
        K._fixed_learning_phase.pop(graph, None)


class _KerasModelFn:
    """The Estimator's model_fn for one compiled Keras model (its config, compile settings and
    the names of its inputs and outputs, taken when model_to_estimator is called)."""

    def __init__(self, keras_model, custom_objects):
        from shardflow.keras import optimizers, saving
        self._config = saving.model_config(keras_model)
        self._custom_objects = custom_objects
        optimizer, self._loss, self._metrics = keras_model._compile_call
        self._loss_weights = getattr(keras_model, "loss_weights", None)
        self._optimizer = optimizer
        self._lr = None
        if isinstance(optimizer, optimizers.Optimizer) and \
                not isinstance(optimizer, optimizers.TFOptimizer):
            self._lr = float(optimizer._get_lr())   # its current value, set_value included
        self._input_keys = _input_keys(keras_model)
        self._input_specs = [(t.dtype, t.shape.as_list()) for t in keras_model.inputs]
        self._output_names = [t._keras_history[0].name for t in keras_model.outputs]
        self.last_model = None

    # ---- inputs -------------------------------------------------------------------------------

    def _inputs(self, features):
        from shardflow import ops
        from shardflow.framework import convert_to_tensor
        if isinstance(features, dict):
            tensors = []
            for keys in self._input_keys:
                found = [k for k in keys if k in features]
                if not found:
                    raise KeyError(
                        "model_to_estimator: the features dict has keys %s; the Keras model's "
                        "input is named %s" % (sorted(features), " or ".join(map(repr, keys))))
                tensors.append(features[found[0]])
        else:
            if len(self._input_keys) != 1:
                raise ValueError("model_to_estimator: the model has %d inputs; give the features "
                                 "as a dict keyed by %s" % (len(self._input_keys),
                                                           [k[0] for k in self._input_keys]))
            tensors = [features]
        out = []
        for t, (dtype, _) in zip(tensors, self._input_specs):
            t = convert_to_tensor(t)
            out.append(ops.cast(t, dtype) if t.dtype != dtype else t)
        return out

    def _labels(self, labels):
        """The labels of each output: a dict by output name, a list (several outputs) or the
        labels themselves (one output)."""
        if labels is None:
            raise ValueError("model_to_estimator: training and evaluation need labels; the "
                             "input_fn gave features only")
        names = self._output_names
        if isinstance(labels, dict):
            if len(names) == 1 and names[0] not in labels and len(labels) == 1:
                return [next(iter(labels.values()))]
            unknown = sorted(set(labels) - set(names))
            if unknown:
                raise KeyError("model_to_estimator: the labels dict has keys %s; the model's "
                               "outputs are %s" % (sorted(labels), names))
            return [labels.get(n) for n in names]
        if len(names) == 1:
            return [labels]
        if not isinstance(labels, (list, tuple)) or len(labels) != len(names):
            raise ValueError("model_to_estimator: the model has %d outputs (%s); give the "
                             "labels as a dict by output name" % (len(names), names))
        return list(labels)

    @staticmethod
    def _target(labels, head, y_pred):
        """One output's labels as its loss takes them (int32 classes, or float32 of the
        output's rank)."""
        from shardflow import dtypes, ops
        from shardflow.framework import convert_to_tensor
        from shardflow.keras import losses
        t = convert_to_tensor(labels)
        if head.loss_fn is not None and getattr(head.loss_fn, "fn", head.loss_fn) is \
                losses.sparse_categorical_crossentropy:
            return ops.reshape(ops.cast(t, dtypes.int32), [-1])
        t = ops.cast(t, dtypes.float32)
        if t.shape.ndims is not None and t.shape.ndims == y_pred.shape.ndims - 1:
            t = ops.expand_dims(t, -1)
        return t

    # ---- the model_fn ---------------------------------------------------------------------------

    def __call__(self, features, labels, mode):
        from shardflow.estimator import EstimatorSpec, ModeKeys
        from shardflow.framework import get_default_graph
        from shardflow.keras import saving, training_outputs
        inputs = self._inputs(features)
        with _learning_phase(get_default_graph(), mode == ModeKeys.TRAIN):
            model = saving.model_from_config(self._config, self._custom_objects,
                                             "model_to_estimator", input_tensors=inputs)
        self.last_model = model
        predictions = dict(zip(self._output_names, model.outputs))
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=predictions)
        heads = training_outputs.make_heads(model, self._loss, self._loss_weights,
                                            self._metrics)
        targets = []
        for head, y_pred, labels_i in zip(heads, model.outputs, self._labels(labels)):
            if labels_i is None and head.loss_fn is not None:
                raise KeyError("model_to_estimator: no labels for output %r, which has a loss"
                               % head.name)
            targets.append(None if labels_i is None else self._target(labels_i, head, y_pred))
        loss = self._loss_of(model, heads, targets)
        if mode == ModeKeys.EVAL:
            return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                 eval_metric_ops=self._metric_ops(heads, targets, model.outputs))
        return EstimatorSpec(mode, predictions=predictions, loss=loss,
                             train_op=self._train_op(model, loss))

    @staticmethod
    def _loss_of(model, heads, targets):
        """The training loss as Keras's: the outputs' weighted-mean losses times their
        loss_weights, plus the regularization penalties."""
        from shardflow import ops
        from shardflow.keras import losses
        parts = []
        for head, target, y_pred in zip(heads, targets, model.outputs):
            if head.loss_fn is None:
                continue
            if isinstance(head.loss_fn, losses.Loss):
                loss = head.loss_fn(target, y_pred)
            else:
                loss = losses.compute_weighted_loss(head.loss_fn(target, y_pred))
            parts.append(loss if head.weight == 1.0 else ops.multiply(loss, head.weight))
        parts += model.losses
        return ops.add_n(parts) if len(parts) > 1 else parts[0]

    @staticmethod
    def _metric_ops(heads, targets, outputs):
        """eval_metric_ops named as Model.metrics_names: the metric's name for one output,
        "<output>_<metric>" for several."""
        from shardflow import dtypes, metrics, ops
        from shardflow.keras import metrics as keras_metrics
        pairs = {}
        for head, target, y_pred in zip(heads, targets, outputs):
            for m in head.metric_ids if target is not None else []:
                name, fn = keras_metrics.named(m, head.loss_fn, y_pred.shape.as_list())
                if len(heads) > 1:
                    name = "%s_%s" % (head.name, name)
                if isinstance(fn, keras_metrics.Metric):
                    try:
                        fresh = type(fn).from_config(fn.get_config())
                    except TypeError as e:
                        raise ValueError("model_to_estimator: metric %s cannot be made again "
                                         "from its config (%s); compile with its name instead"
                                         % (name, e)) from None
                    update = fresh.update_state(target, y_pred)
                    pairs[name] = (fresh.result(), update)
                else:
                    pairs[name] = metrics.mean(ops.cast(fn(target, y_pred), dtypes.float32),
                                               name=name)
        return pairs

    def _train_op(self, model, loss):
        from shardflow import ops
        from shardflow.framework import control_dependencies
        from shardflow.keras import optimizers
        from shardflow.train import get_global_step
        optimizer = self._optimizer
        if isinstance(optimizer, str):
            optimizer = optimizers.get(optimizer)
        elif isinstance(optimizer, optimizers.Optimizer) and \
                optimizer.__dict__.get("_init_call") is not None:
            args, kwargs = optimizer.__dict__["_init_call"]
            optimizer = type(optimizer)(*args, **kwargs)   # a fresh one for this graph
        else:
            optimizer = optimizers.get(optimizer)          # a tf.train optimizer, shared
        if self._lr is not None:
            optimizer._lr_value = self._lr
        step = optimizer.get_updates(loss, model.trainable_weights)
        if model.updates:
            step = ops.group(step, *model.updates)
        global_step = get_global_step()
        with control_dependencies([step]):
            return global_step.assign_add(np.array(1, global_step.dtype.as_numpy_dtype),
                                          read_value=False)


def _save_first_checkpoint(estimator, model_fn, keras_model):
    """Writes the Keras model's weights (optimizer slots freshly initialised) as model_dir's
    first checkpoint, global step 0; nothing when model_dir has a checkpoint already."""
    from shardflow import ops
    from shardflow.estimator import ModeKeys
    from shardflow.framework import Graph
    from shardflow.session import Session
    from shardflow.train import Saver, get_or_create_global_step
    from shardflow.variables import global_variables_initializer
    if estimator.latest_checkpoint() is not None:
        logging.info("model_to_estimator: %s has a checkpoint already; the Keras model's "
                     "weights are not written", estimator.model_dir)
        return
    weights = keras_model.get_weights()
    g = Graph()
    with g.as_default():
        get_or_create_global_step()
        features = {keys[0]: ops.placeholder(dtype, shape, name="features_%d" % i)
                    for i, (keys, (dtype, shape)) in enumerate(zip(model_fn._input_keys,
                                                                   model_fn._input_specs))}
        labels = {name: ops.placeholder(out.dtype, out.shape.as_list(), name="labels_%d" % i)
                  for i, (name, out) in enumerate(zip(model_fn._output_names,
                                                      keras_model.outputs))}
        model_fn(features, labels, ModeKeys.TRAIN)
        variables = model_fn.last_model.weights
        if len(variables) != len(weights):
            raise ValueError("model_to_estimator: the rebuilt model has %d weights, the Keras "
                             "model %d" % (len(variables), len(weights)))
        feeds, assigns = {}, []
        for v, value in zip(variables, weights):
            p = ops.placeholder(v.dtype, v.shape.as_list(), name="keras_weight")
            feeds[p] = np.asarray(value, v.dtype.as_numpy_dtype)
            assigns.append(v.assign(p, read_value=False))
        init = global_variables_initializer()
        saver = Saver()
        with Session(graph=g) as sess:
            sess.run(init)
            sess.run(assigns, feed_dict=feeds)
            path = saver.save(sess, os.path.join(estimator.model_dir, "keras_model.ckpt"),
                              global_step=0, write_meta_graph=False)
    logging.info("model_to_estimator: the Keras model's weights are in %s", path)


def model_to_estimator(keras_model=None, keras_model_path=None, custom_objects=None,
                       model_dir=None, config=None, checkpoint_format=None):
    """An Estimator for a compiled Keras model (or the one keras_model_path holds, loaded with
    keras.models.load_model and `custom_objects`) whose first checkpoint holds the model's
    current weights. `model_dir` and `config` go to the Estimator; checkpoint_format is
    accepted (shardflow has one checkpoint format)."""
    from shardflow.estimator import Estimator
    if (keras_model is None) == (keras_model_path is None):
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model is None:
        from shardflow.keras.models import load_model
        keras_model = load_model(keras_model_path, custom_objects=custom_objects)
    if getattr(keras_model, "_compiled", None) is None:
        raise ValueError("The given keras model has not been compiled yet. Please compile the "
                         "model with `model.compile()` before calling `model_to_estimator()`.")
    model_fn = _KerasModelFn(keras_model, custom_objects)

    def keras_model_fn(features, labels, mode):
        return model_fn(features, labels, mode)

    estimator = Estimator(keras_model_fn, model_dir=model_dir, config=config)
    _save_first_checkpoint(estimator, model_fn, keras_model)
    return estimator


__all__ = ["model_to_estimator"]
