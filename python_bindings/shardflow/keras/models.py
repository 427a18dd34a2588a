"""keras.Model (functional) and keras.Sequential for graph mode: compile, fit, evaluate,
predict, summary, and weights saved in shardflow's checkpoint format.

Example::

    model = keras.Sequential([keras.layers.Dense(32, activation="relu", input_shape=(8,)),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x, y, epochs=5, validation_split=0.1)   # history.history["val_acc"]
    loss, acc = model.evaluate(x_test, y_test)

Training runs in keras.backend.get_session(), one step per batch. Not thread safe.
"""

import os

import numpy as np

from shardflow import _shardflow, ops
from shardflow.framework import get_default_graph
from shardflow.keras import backend as K
from shardflow.keras import callbacks as callbacks_module
from shardflow.keras.callbacks import call_hooks
from shardflow.keras import data_adapter as _data
from shardflow.keras import layers as layers_module
from shardflow.keras import losses as losses_module
from shardflow.keras import metrics as metrics_module
from shardflow.keras import optimizers as optimizers_module
from shardflow.keras import training_outputs as _outputs


def _as_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _given(arrays):
    """The arrays that are there (outputs without targets have None)."""
    return [a for a in arrays if a is not None]


def _rows_of(arrays, rows):
    """Each array (or None) of a per-output list cut to `rows`."""
    return [None if a is None else a[rows] for a in arrays]


def _num_rows(arrays):
    sizes = {len(a) for a in arrays}
    if len(sizes) != 1:
        raise ValueError("the input arrays have different numbers of samples: %s"
                         % sorted(sizes))
    return sizes.pop()


def _session_kwargs(kwargs):
    """compile()'s keyword arguments beyond Keras's own: TF1 Keras's session arguments
    (K._session_arguments: every training, test and predict step runs with them), and TF
    1.15's distribute / run_eagerly / experimental_run_tf_function, which graph mode takes as
    None / False / anything. Others are a TypeError, as TF 1.15's."""
    kwargs = dict(kwargs)
    kwargs.pop("experimental_run_tf_function", None)
    if kwargs.pop("distribute", None) is not None:
        raise ValueError("compile(distribute=...): build and compile the model in "
                         "strategy.scope() instead")
    if kwargs.pop("run_eagerly", None):
        raise ValueError("compile(run_eagerly=True): shardflow's Keras runs graphs in a session "
                         "(TF 1.x graph mode); leave it False")
    return K._session_arguments(kwargs, "compile")


def _validation_epochs(freq):
    """fit's validation_freq as a test of a 1-based epoch number: an int N > 0 (every N-th
    epoch) or a collection of epochs."""
    if isinstance(freq, (int, np.integer)) and not isinstance(freq, bool):
        if freq < 1:
            raise ValueError("fit(validation_freq=%d): validate every N >= 1 epochs, or give a "
                             "list of epochs" % freq)
        return lambda epoch: epoch % int(freq) == 0
    try:
        epochs = {int(e) for e in freq}
    except (TypeError, ValueError):
        raise TypeError("fit(validation_freq=%r): an int or a list of epochs (1-based)"
                        % (freq,)) from None
    return lambda epoch: epoch in epochs


def _input_dtype(dtype):
    """The Input dtype for data of NumPy dtype `dtype` (floats as the backend's floatx)."""
    name = np.dtype(dtype).name
    return name if name in ("float32", "int32", "int64") else K.floatx()


class Model:
    """A model from input tensors (keras.layers.Input) to output tensors, through the layers
    called between them.

    Example::

        a = keras.layers.Input(shape=(4,))
        b = keras.layers.Input(shape=(6,))
        h = keras.layers.concatenate([a, b])
        out = keras.layers.Dense(1, activation="sigmoid")(h)
        model = keras.Model(inputs=[a, b], outputs=out)
        model.fit([xa, xb], y)
    """

    def __init__(self, inputs=None, outputs=None, name=None):
        self.name = name or K.unique_name("model" if type(self) is Model
                                          else layers_module._snake(type(self).__name__))
        self.stop_training = False
        self.optimizer = None
        self.history = None
        self.trainable = True
        self._compiled = None
        self._functions = None
        self.inputs, self.outputs, self._layers = [], [], []
        # what model.add_loss / add_update / add_metric add (Note [What layers add])
        self._model_losses, self._model_updates, self._model_metrics = [], [], []
        if isinstance(inputs, dict):   # inputs by feature name (fit takes a dict alike)
            inputs = list(inputs.values())
        if inputs is not None:
            self._init_graph(_as_list(inputs), _as_list(outputs))

    # ---- structure -------------------------------------------------------------------------

    def _init_graph(self, inputs, outputs):
        self.inputs, self.outputs = inputs, outputs
        self._single_input = len(inputs) == 1
        found, stack, visited = {}, list(outputs), set()
        input_ids = {id(t) for t in inputs}
        while stack:
            t = stack.pop()
            if id(t) in visited:  # each tensor once: residual and dense blocks reach tensors
                continue          # by many paths (doubling at every Add otherwise)
            visited.add(id(t))
            history = getattr(t, "_keras_history", None)
            if history is None:
                raise ValueError("%s is not the output of a keras layer; build models from "
                                 "keras.layers.Input and keras layers" % t.name)
            layer, node, _ = history
            found[id(layer)] = layer
            if id(t) in input_ids:
                continue
            xs = layer._inbound_nodes[node][0]
            if layer is not None and isinstance(layer, layers_module.InputLayer):
                raise ValueError("the outputs depend on input %s, which is not in the model's "
                                 "inputs" % t.name)
            stack.extend(_as_list(xs))
        self._layers = sorted(found.values(), key=lambda layer: layer._order)

    @property
    def built(self):
        return bool(self.outputs)

    @property
    def layers(self):
        return list(self._layers)

    @property
    def input(self):
        return self.inputs[0] if len(self.inputs) == 1 else self.inputs

    @property
    def output(self):
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    @property
    def input_shape(self):
        """The shape tuple of the input (a list of them for several inputs), None for unknown
        dimensions, as Keras's."""
        self._require_built("input_shape")
        shapes = [layers_module._shape_tuple(t) for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        """The shape tuple of the output (a list of them for several outputs)."""
        self._require_built("output_shape")
        shapes = [layers_module._shape_tuple(t) for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    def get_layer(self, name=None, index=None):
        if index is not None:
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError("no layer named %r (the layers: %s)"
                         % (name, ", ".join(layer.name for layer in self.layers)))

    def __call__(self, inputs, training=None):
        """Applies the model to new tensors, sharing its weights."""
        if self._is_subclassed():
            if not self.built and all(_is_keras_input(t) for t in _as_list(inputs)):
                # model(keras.Input(...)) builds a subclassed model, as tf.keras's.
                self._build_subclassed(inputs)
                return self.outputs[0] if len(self.outputs) == 1 else list(self.outputs)
            return self._call_subclassed(inputs, training)
        self._require_built("call")
        # Keyed by tensor name: a model's graph may hold another Python object for its input
        # tensor (a pretrained application's), which must map to the new input all the same.
        new = {t.name: x for t, x in zip(self.inputs, _as_list(inputs))}

        def compute(t):
            if t.name not in new:
                layer, node, index = t._keras_history
                xs = layer._inbound_nodes[node][0]
                args = [compute(x) for x in xs] if isinstance(xs, list) else compute(xs)
                y = layer(args, training=training)
                new[t.name] = y[index] if isinstance(y, list) else y
            return new[t.name]
        outs = [compute(t) for t in self.outputs]
        out = outs[0] if len(outs) == 1 else outs
        self._record_call(inputs, out)
        return out

    def _record_call(self, inputs, out):
        """Note [Models as layers]: a model called on tensors of another model is one layer
        of it, as in Keras: the outputs' history names this model, so the outer model lists it
        among its layers (not its layers one by one) and takes its weights through it; its
        `trainable` (False to freeze a pretrained base) decides whether they train."""
        if _as_list(inputs) and all(getattr(t, "_keras_history", None) is not None
                                    for t in _as_list(inputs)):
            nodes = self.__dict__.setdefault("_inbound_nodes", [])
            if getattr(self, "_order", None) is None:
                self._order = next(layers_module._call_order)
            index = len(nodes)
            nodes.append((list(inputs) if isinstance(inputs, (list, tuple)) else inputs, out))
            for i, t in enumerate(_as_list(out)):
                t._keras_history = (self, index, i)

    # ---- weights ---------------------------------------------------------------------------

    @property
    def weights(self):
        seen, out = set(), []
        for layer in self.layers:
            for v in layer.weights:
                if id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out

    variables = weights

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        ids = {id(v) for layer in self.layers for v in layer.trainable_weights}
        return [v for v in self.weights if id(v) in ids]

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self):
        ids = {id(v) for v in self.trainable_weights}
        return [v for v in self.weights if id(v) not in ids]

    @property
    def losses(self):
        return [p for layer in self.layers for p in getattr(layer, "losses", [])] + \
            list(self.__dict__.get("_model_losses", []))

    @property
    def updates(self):
        return [u for layer in self.layers for u in getattr(layer, "updates", [])] + \
            list(self.__dict__.get("_model_updates", []))

    def add_loss(self, losses, inputs=None):
        """Adds loss tensors (or callables giving them) that fit minimizes with the compiled
        loss (a VAE's KL term; Note [What layers add] in keras/layers.py). Before compile."""
        self.__dict__.setdefault("_model_losses", []).extend(layers_module._added_losses(losses))
        self._functions = None

    def add_update(self, updates, inputs=None):
        """Adds update ops that fit runs with each training step."""
        self.__dict__.setdefault("_model_updates", []).extend(
            layers_module._added_updates(updates))
        self._functions = None

    def add_metric(self, value, aggregation=None, name=None):
        """Reports `value` under `name` in fit's and evaluate's logs (the epoch's mean)."""
        self.__dict__.setdefault("_model_metrics", []).append(
            layers_module._added_metric(value, aggregation, name))
        self._functions = None

    def _collect_added_metrics(self):
        """(name, tensor) of the metrics the layers and the model added, each name once."""
        out, seen = [], set()
        for layer in self.layers:
            added = layer._collect_added_metrics() if isinstance(layer, Model) else \
                getattr(layer, "_added_metrics", [])
            for name, value in added:
                if name not in seen:
                    seen.add(name)
                    out.append((name, value))
        for name, value in self.__dict__.get("_model_metrics", []):
            if name not in seen:
                seen.add(name)
                out.append((name, value))
        return out

    @property
    def state_updates(self):
        """The updates of the stateful layers' kept states (TF 1.15's Network.state_updates):
        evaluate and predict run them with each batch, as fit does."""
        return [u for layer in self.layers for u in getattr(layer, "state_updates", [])]

    def _with_state_updates(self, fetches):
        """`fetches` plus, when the model has stateful layers, one op running their updates
        (last; callers drop its value)."""
        updates = self.state_updates
        if not updates:
            return list(fetches)
        key = tuple(id(u) for u in updates)
        cached = self.__dict__.get("_state_group")
        if cached is None or cached[0] != key:      # one op, made once (not one per batch)
            g = updates[0].graph
            with g.as_default(), g.name_scope(None):
                cached = self._state_group = (key, ops.group(*updates))
        return list(fetches) + [cached[1]]

    def get_updates_for(self, inputs):
        """The updates computed from `inputs` (the tensor the model was called on), or with
        inputs=None the unconditional ones, as TF1's Network.get_updates_for."""
        from shardflow.layers import _conditional_on
        return _conditional_on(self.updates, inputs)

    def get_losses_for(self, inputs):
        from shardflow.layers import _conditional_on
        return _conditional_on(self.losses, inputs)

    def count_params(self):
        self._require_built("count_params")
        return sum(K.count_params(v) for v in self.weights)

    def get_weights(self):
        return K.batch_get_value(self.weights)

    def set_weights(self, values):
        weights = self.weights
        if len(values) != len(weights):
            raise ValueError("the model has %d weights; %d values were given"
                             % (len(weights), len(values)))
        K.batch_set_value(list(zip(weights, values)))

    def save_weights(self, filepath, overwrite=True, save_format=None):
        """Writes the weights to `filepath` in shardflow's checkpoint format (whatever its
        extension, '.h5' included), in the model's order: load_weights puts them back into
        a model of the same architecture, whatever its layer names. Without an .h5 extension
        the directory's "checkpoint" file names it, as TF's format does, so
        tf.train.latest_checkpoint(directory) finds it."""
        self._require_built("save_weights")
        if not overwrite and os.path.exists(filepath):
            raise FileExistsError("%s exists (overwrite=False)" % filepath)
        directory = os.path.dirname(filepath)
        if directory:
            os.makedirs(directory, exist_ok=True)
        # "<index>/<layer>|<variable>": the order for load_weights, the layer for by_name.
        owner = self._weight_owners()
        entries = [("%05d/%s|%s" % (i, owner.get(id(v), ""), v.op.name), value)
                   for i, (v, value) in enumerate(zip(self.weights, self.get_weights()))]
        _shardflow.save_checkpoint(filepath, entries)
        h5 = filepath.endswith((".h5", ".keras", ".hdf5")) or save_format == "h5"
        if not h5:
            # TF's format also names the newest file in the directory's "checkpoint" state,
            # which tf.train.latest_checkpoint(directory) reads (the save/load tutorial).
            from shardflow.checkpoint_utils import update_checkpoint_state
            update_checkpoint_state(directory or ".", os.path.basename(filepath))

    def save(self, filepath, overwrite=True, include_optimizer=True, save_format=None):
        """Writes the whole model (layers, weights, compile settings) to `filepath`, which
        keras.models.load_model reads back (Sequential models; keras/saving.py)."""
        from shardflow.keras import saving
        saving.save_model(self, filepath, overwrite=overwrite,
                          include_optimizer=include_optimizer)

    def get_config(self):
        """The architecture as a dict (keras/saving.py's model.json, without compile
        settings); Sequential and functional models whose layers' arguments are names."""
        from shardflow.keras import saving
        return saving.model_config(self)

    def to_json(self, **kwargs):
        """The architecture as a JSON string (json.dumps kwargs, e.g. indent=2), which
        keras.models.model_from_json builds back with fresh weights."""
        import json
        return json.dumps(self.get_config(), **kwargs)

    def load_weights(self, filepath, by_name=False):
        """Sets the weights from a file save_weights wrote, matched by order; with by_name, as
        Keras: each layer of the model whose name the file has takes that layer's weights (in
        order; their number and shapes must agree), the others are left as they are."""
        self._require_built("load_weights")
        loaded = sorted(_shardflow.load_checkpoint(filepath), key=lambda e: e[0])
        weights = self.weights
        if by_name:
            saved = {}   # layer name -> its values in order
            for key, value in loaded:
                layer = key.split("/", 1)[1].split("|", 1)[0] if "|" in key else \
                    key.split("/", 2)[1]      # files of before: the variable's first scope
                saved.setdefault(layer, []).append(value)
            pairs = []
            for layer in self.layers:
                own = list(getattr(layer, "weights", []))
                if not own or layer.name not in saved:
                    continue
                values = saved[layer.name]
                if len(values) != len(own):
                    raise ValueError("layer '%s' has %d weights; %s holds %d for it"
                                     % (layer.name, len(own), filepath, len(values)))
                pairs += list(zip(own, values))
            for v, value in pairs:
                if list(value.shape) != v.shape.as_list():
                    raise ValueError("weight %s has shape %s in the model but %s in %s"
                                     % (v.op.name, v.shape.as_list(), list(value.shape),
                                        filepath))
            K.batch_set_value(pairs)
            return
        else:
            if len(loaded) != len(weights):
                raise ValueError("%s holds %d weights; the model has %d"
                                 % (filepath, len(loaded), len(weights)))
            values = [value for _, value in loaded]
        for v, value in zip(weights, values):
            if list(value.shape) != v.shape.as_list():
                raise ValueError("weight %s has shape %s in the model but %s in %s"
                                 % (v.op.name, v.shape.as_list(), list(value.shape), filepath))
        self.set_weights(values)

    def _weight_owners(self):
        """id(weight) -> the name of the model's layer that holds it (the first one)."""
        owner = {}
        for layer in self.layers:
            for v in getattr(layer, "weights", []):
                owner.setdefault(id(v), layer.name)
        return owner

    # ---- compile and the step functions ----------------------------------------------------

    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                sample_weight_mode=None, weighted_metrics=None, target_tensors=None, **kwargs):
        """Chooses the optimizer ('sgd', 'adam', 'rmsprop', 'adagrad', a keras.optimizers
        or tf.train optimizer), the loss (a name or a function of (y_true, y_pred); for
        several outputs also a list or a dict by output name), `loss_weights` and the metrics
        (['accuracy'], names or functions; or a dict by output name) as Keras
        (shardflow/keras/training_outputs.py). The training ops are built on first use."""
        from shardflow.distribute import context
        from shardflow.distribute.multi_worker import MultiWorkerMirroredStrategy
        strategy = context.get_strategy()
        multi_worker = isinstance(strategy, MultiWorkerMirroredStrategy) and \
            strategy.num_replicas_in_sync > 1 and context.get_replica_context() is None
        from shardflow.distribute.parameter_server import ParameterServerStrategy
        if isinstance(strategy, ParameterServerStrategy) and strategy.extended.placement():
            raise NotImplementedError(
                "Keras Model.compile under %r is not supported (nor in TF 1.15): train with an "
                "estimator (tf.keras.estimator.model_to_estimator and RunConfig("
                "train_distribute=strategy)), or build the model under tf.device(tf.train."
                "replica_device_setter(cluster)) and fit it in a session on this worker's "
                "server (tf.keras.backend.set_session)" % (strategy,))
        if weighted_metrics or target_tensors:
            raise ValueError("compile: weighted_metrics and target_tensors are not supported")
        self._session_kwargs = _session_kwargs(kwargs)
        self.optimizer = optimizers_module.get(optimizer)
        if isinstance(self.optimizer, optimizers_module.Optimizer) and \
                hasattr(self.optimizer, "_lr_var"):       # not a wrapped tf.train optimizer
            self.optimizer._make_variables(self.outputs[0].graph if self.outputs
                                           else get_default_graph())
        if multi_worker:  # one replica of the workers' group (shardflow/distribute/multi_worker)
            strategy._keras_compile(self)
        self._compile_call = (optimizer, loss, metrics)  # what model.save writes
        self.loss = loss
        self.loss_weights = loss_weights
        self.sample_weight_mode = sample_weight_mode
        self._compiled = (loss, metrics, loss_weights, sample_weight_mode)
        self._functions = None
        # What training updates is fixed here, as TF 1.15's _collected_trainable_weights: a
        # GAN's discriminator compiled, then frozen (trainable = False) for the combined model,
        # still trains through its own train_on_batch. A model built later collects them then.
        self._collected_trainable_weights = self.trainable_weights if self.built else None
        if self.built:
            _outputs.make_heads(self, *self._compiled_args())  # per-output arguments checked

    @property
    def output_names(self):
        """The names of the outputs: their layers' names."""
        return _outputs.output_names(self)

    @property
    def metrics_names(self):
        if self._compiled is None:
            return ["loss"]
        if self._functions is not None:
            return list(self._functions["names"])
        if not self.built:
            loss, metrics = self._compiled[:2]
            names = [metrics_module.named(m, losses_module.get(loss))[0]
                     for m in _as_list(metrics)] if not isinstance(loss, (dict, list)) else []
            return ["loss"] + names
        heads = _outputs.make_heads(self, *self._compiled_args())
        return _outputs.history_names(heads, [
            [metrics_module.named(m, h.loss_fn, y.shape.as_list())[0] for m in h.metric_ids]
            for h, y in zip(heads, self.outputs)])

    def _compiled_args(self):
        loss, metrics, loss_weights, sample_weight_mode = self._compiled
        return loss, loss_weights, metrics, sample_weight_mode

    def _require_built(self, what):
        if not self.built:
            raise ValueError("%s: the model is not built yet; give the first layer an "
                             "input_shape, or call fit/build first" % what)

    def _make_functions(self):
        if self._functions is not None:
            return self._functions
        if self._compiled is None:
            raise RuntimeError("compile() the model before fit/evaluate")
        heads = _outputs.make_heads(self, *self._compiled_args())
        g = self.outputs[0].graph
        with g.as_default(), g.name_scope(None), g.name_scope(self.name + "_training"):
            head_losses = [h.build(y, i) for i, (h, y) in enumerate(zip(heads, self.outputs))]
            weighted = [loss if h.weight == 1.0 else ops.multiply(loss, h.weight)
                        for h, loss in zip(heads, head_losses) if loss is not None]
            penalties = self.losses
            parts = weighted + penalties
            if not parts:
                raise ValueError("the model has no loss to minimize: compile it with a loss, or "
                                 "add one with model.add_loss / a layer's add_loss")
            total = ops.add_n(parts) if len(parts) > 1 else parts[0]
            tensors = [loss for loss in head_losses if loss is not None] \
                if len(heads) > 1 else []
            flags = [False] * len(tensors)
            metric_names, stateful = [], []
            for h, y in zip(heads, self.outputs):
                names, values, head_flags, objects = _outputs.metric_tensors(h, y, g)
                metric_names.append(names)
                tensors += values
                flags += head_flags
                stateful += objects
            added = self._collect_added_metrics()
            tensors += [value for _, value in added]
            flags += [False] * len(added)
            if self.__dict__.get("_collected_trainable_weights") is None:
                self._collected_trainable_weights = self.trainable_weights
            params = self._collected_trainable_weights
            train_op = None
            if params:
                step = self.optimizer.get_updates(total, params)
                # The updates computed from this model's inputs (batch statistics of this
                # model's own call of a nested pretrained model, not of that model's first
                # build on its own Input, which nothing feeds here) and the unconditional ones.
                updates = self.get_updates_for(self.inputs)
                own = {id(u) for u in updates}
                updates += [u for u in self.get_updates_for(None) if id(u) not in own]
                train_op = ops.group(step, *updates) if updates else step
            reset = ops.group(*[m._reset_op() for m in stateful]) if stateful else None
        # which of [loss] + metrics are stateful (their value after the last batch is the
        # epoch's); their state is reset (and first set) by `reset`
        self._functions = {"heads": heads, "loss": total, "metrics": tensors,
                           "names": _outputs.history_names(heads, metric_names) +
                           [name for name, _ in added],
                           "train": train_op, "reset": reset, "stateful": [False] + flags}
        self.reset_metrics()
        return self._functions

    def reset_metrics(self):
        """Sets the state of the compiled stateful metrics (keras.metrics.Metric objects) to
        zero; fit and evaluate do so at the start of each epoch and evaluation."""
        f = self._functions
        if f is not None and f["reset"] is not None:
            K.get_session().run(f["reset"])

    def reset_states(self):
        """Resets the state of each stateful layer, as TF 1.15's (the recurrent layers here are
        not stateful, so for them this does nothing)."""
        for layer in self.layers:
            if getattr(layer, "stateful", False) and hasattr(layer, "reset_states"):
                layer.reset_states()

    def _epoch_values(self, totals, last, n):
        """The epoch's [loss, metrics...]: size-weighted batch means, but for stateful metrics
        their result after the last batch."""
        stateful = self._functions["stateful"]
        return [float(v) if s else float(t / max(n, 1))
                for t, v, s in zip(totals, last, stateful)]

    # ---- data ------------------------------------------------------------------------------

    def _inputs_list(self, x):
        if isinstance(x, dict):
            if not self.built and hasattr(self, "_build_from_dict"):
                self._build_from_dict(x)        # a Sequential starting with DenseFeatures
            x = [self._input_from_dict(x, t) for t in self.inputs]
        xs = [np.asarray(a) for a in _as_list(x)]
        if self.built and len(xs) != len(self.inputs):
            raise ValueError("the model has %d inputs; %d arrays were given"
                             % (len(self.inputs), len(xs)))
        return xs

    @property
    def input_names(self):
        """The names of the model's inputs (their Input layers'), the keys of a dict of
        input arrays."""
        return [_input_name(t) for t in self.inputs]

    @staticmethod
    def _input_from_dict(arrays, t):
        for key in (getattr(t, "_feature_key", None), _input_name(t), t.op.name):
            if key in arrays:
                return arrays[key]
        raise ValueError("no data for input %r; the dict has %s" % (_input_name(t),
                                                                   sorted(arrays)))

    def _targets(self, y):
        """The targets of each output (see training_outputs.split_by_output), converted."""
        heads = self._functions["heads"]
        ys = _outputs.split_by_output(y, heads, "y")
        missing = [h.name for h, v in zip(heads, ys) if v is None and h.loss_fn is not None]
        if missing:
            raise ValueError("no targets were given for output(s) %s, which have a loss"
                             % missing)
        return [h.convert_targets(v) if v is not None else None for h, v in zip(heads, ys)]

    def _run(self, sess, fetches, feed):
        """sess.run(fetches, feed) with compile()'s session arguments (a full trace of each
        step, extra fetches, a feed_dict), as Keras's TensorFlow backend does."""
        return K._run_with(sess, fetches, feed, getattr(self, "_session_kwargs", None))

    def _feed(self, xs, rows, ys=None, training=False, weights=None):
        feed = {t: a[rows] for t, a in zip(self.inputs, xs)}
        if ys is not None:
            for i, (h, y) in enumerate(zip(self._functions["heads"], ys)):
                if y is None:
                    continue
                feed[h.target] = y[rows]
                w = None if weights is None else weights[i]
                feed[h.weights] = h.default_weights(y[rows]) if w is None else w[rows]
        feed.update(K._phase_feed(training))
        return feed

    def _sample_weights(self, ys, n, sample_weight=None, class_weight=None):
        """The per-sample weights of each output (None where it has none), for n samples
        with targets ys (as _targets gives them): sample_weight (a vector of n; a list or
        dict by output for several outputs) times class_weight[class of the sample] (a dict;
        by output name for several outputs); None when neither is given."""
        if sample_weight is None and not class_weight:
            return None
        heads = self._functions["heads"]
        sws = _outputs.split_by_output(sample_weight, heads, "sample_weight") \
            if sample_weight is not None else [None] * len(heads)
        cws = _outputs.class_weights_by_output(class_weight, heads)
        return [self._head_weights(h, y, n, sw, cw)
                for h, y, sw, cw in zip(heads, ys, sws, cws)]

    @staticmethod
    def _head_weights(head, y, n, sample_weight, class_weight):
        if (sample_weight is None and not class_weight) or y is None:
            return None
        w = head.default_weights(y)
        if sample_weight is not None:
            sw = np.asarray(sample_weight, dtype=np.float32)
            if sw.ndim == 2 and sw.shape[1] == 1 and not head.temporal:
                sw = sw[:, 0]
            if sw.shape != w.shape:
                raise ValueError(
                    "sample_weight must be %s, got shape %s" % (
                        "[samples, steps] = %s (sample_weight_mode='temporal')" % (w.shape,)
                        if head.temporal else "a vector of %d weights (one per sample)" % n,
                        sw.shape))
            w *= sw
        if class_weight:
            if head.temporal:   # per step: the class of each step
                classes = y if head.sparse else y.argmax(axis=-1) if y.shape[-1] > 1 \
                    else np.round(y[..., 0]).astype(np.int64)
                classes = classes.reshape(w.shape)
            elif head.sparse:
                classes = y.reshape(n, -1)[:, 0]
            elif y.ndim >= 2 and y.shape[-1] > 1:
                classes = y.reshape(n, -1, y.shape[-1])[:, 0].argmax(axis=-1)
            else:
                classes = np.round(y.reshape(n, -1)[:, 0]).astype(np.int64)
            flat = np.asarray(classes).reshape(-1)
            missing = sorted(set(int(c) for c in flat) - set(int(k) for k in class_weight))
            if missing:
                raise ValueError("`class_weight` must contain all classes in the data. The "
                                 "classes %s exist in the data but not in `class_weight`."
                                 % missing)
            w *= np.asarray([class_weight[int(c)] for c in flat],
                            dtype=np.float32).reshape(w.shape)
        return w

    def _build_for(self, xs):
        """Builds a Sequential without an input shape, or a subclassed model, from the first
        data it sees."""
        if self.built:
            return
        if self._is_subclassed():
            inputs = [layers_module.Input(shape=x.shape[1:], dtype=_input_dtype(x.dtype))
                      for x in xs]
            self._build_subclassed(inputs[0] if len(inputs) == 1 else inputs)
            return
        if not hasattr(self, "_build_input"):
            raise ValueError("this Model has no inputs: build it as keras.Model(inputs, "
                             "outputs), or subclass keras.Model with a call method")
        self._build_input(xs[0].shape[1:], xs[0].dtype)

    # ---- subclassed models (tf.keras's Model subclassing) ----------------------------------

    def _is_subclassed(self):
        """A subclass of Model with its own call(inputs[, training]) and its layers in its
        attributes, as tf.keras's: built on the first data (fit / evaluate / predict) by
        calling call on Input placeholders of the data's shapes."""
        return callable(getattr(type(self), "call", None))

    def _build_subclassed(self, inputs):
        """Builds a subclassed model by calling call on these Input tensors."""
        outputs = self._call_subclassed(inputs)
        self.inputs, self.outputs = _as_list(inputs), _as_list(outputs)
        self._single_input = len(self.inputs) == 1
        self._layers = self._tracked_layers()

    def build(self, input_shape=None):
        """Builds a subclassed model for inputs of `input_shape` (batch dimension first; a
        list of shapes for several inputs), as tf.keras's Model.build, so that its weights
        exist (load_weights, summary) before any data."""
        if self.built:
            return
        if not self._is_subclassed():
            raise ValueError("build: a functional Model is built by keras.Model(inputs, "
                             "outputs)")
        if input_shape is None:
            raise ValueError("build needs the input_shape, e.g. model.build((None, 784))")
        shapes = input_shape if isinstance(input_shape, list) else [input_shape]
        inputs = [layers_module.Input(batch_shape=tuple(shape)) for shape in shapes]
        self._build_subclassed(inputs[0] if len(inputs) == 1 else inputs)

    def _call_subclassed(self, inputs, training=None):
        import inspect
        try:
            takes_training = "training" in inspect.signature(self.call).parameters
        except (TypeError, ValueError):
            takes_training = False
        if takes_training:
            return self.call(inputs, training=training)
        return self.call(inputs)

    def _tracked_layers(self):
        """The layers a subclassed model holds in its attributes (also in lists and in models
        it holds), in the order they were assigned."""
        out, seen = [], set()

        def add(value):
            if isinstance(value, Model):
                for layer in value.layers:
                    add(layer)
            elif isinstance(value, layers_module.Layer):
                if id(value) not in seen:
                    seen.add(id(value))
                    out.append(value)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    add(item)
        for key, value in vars(self).items():
            if key not in ("inputs", "outputs", "_layers"):
                add(value)
        return out

    # ---- training and inference ------------------------------------------------------------

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_freq=1, max_queue_size=10, workers=1, use_multiprocessing=False):
        """Trains for `epochs` passes over (x, y) in batches of `batch_size` (32) and returns
        the History: ``history.history`` maps 'loss', the metrics ('acc') and, with
        validation data, 'val_loss', 'val_acc' to one value per validated epoch (the mean over
        the epoch's batches, weighted by their sizes). `validation_split` holds out the last
        fraction of the samples (before shuffling), as Keras does. `validation_freq` (TF 1.14):
        validate after every N-th epoch, or after the epochs (1-based) of a list.
        max_queue_size, workers and use_multiprocessing are accepted: batches are read in this
        thread."""
        validate_after = _validation_epochs(validation_freq)
        batch_size = int(batch_size or 32)
        if _data.holds_tensors(x):        # an input pipeline's tensors, with steps_per_epoch
            x, y = _data.TensorSource(x, y), None
        seq = _data.BatchStream(x, steps_per_epoch, "fit", shard=self._worker_share(),
                                stop_when_short=True) if _data.is_stream(x) else None
        if seq is None and steps_per_epoch:
            raise ValueError("fit: steps_per_epoch is taken with a tf.data.Dataset, a "
                             "generator or a keras.utils.Sequence; with arrays give batch_size")
        if seq is not None:
            if y is not None or validation_split:
                raise ValueError("fit: a Dataset, generator or Sequence gives the targets; y "
                                 "and validation_split are not taken (use validation_data)")
            x, y = seq.peek()[:2]
        xs = self._inputs_list(x)
        self._build_for(xs)
        f = self._make_functions()
        ys = self._targets(y)
        n = _num_rows(xs + _given(ys))
        sw = None if seq is not None else self._sample_weights(ys, n, sample_weight,
                                                               class_weight)
        val = None
        if validation_data is not None and _data.is_stream(validation_data):
            val = _data.BatchStream(validation_data, validation_steps, "fit's validation_data",
                                    shard=self._worker_share(), restart=True)
        elif validation_data is not None:
            vx, vy = validation_data[0], validation_data[1]
            vys = self._targets(vy)
            vsw = validation_data[2] if len(validation_data) > 2 else None
            val = (self._inputs_list(vx), vys,
                   self._sample_weights(vys, _num_rows(_given(vys)), vsw)
                   if vsw is not None else None)
        elif validation_split:
            split = int(n * (1.0 - validation_split))
            val = ([a[split:] for a in xs], _rows_of(ys, slice(split, None)),
                   None if sw is None else _rows_of(sw, slice(split, None)))
            xs, ys, n = [a[:split] for a in xs], _rows_of(ys, slice(None, split)), split
            sw = None if sw is None else _rows_of(sw, slice(None, split))
        if f["train"] is None:
            raise ValueError("the model has no trainable weights")

        history = callbacks_module.History()
        cbs = list(callbacks or []) + [history]
        params = {"epochs": epochs, "steps": seq.steps if seq is not None else None,
                  "samples": None if seq is not None else n, "verbose": verbose,
                  "batch_size": None if seq is not None else batch_size,
                  "do_validation": val is not None,
                  "metrics": f["names"] + ["val_" + m for m in f["names"]] if val else f["names"]}
        for cb in cbs:
            cb.set_model(self)
            cb.set_params(params)
        self.stop_training = False
        sess = K.get_session()
        if getattr(self, "_multi_worker", None) is not None:
            self._multi_worker._keras_broadcast(sess)  # worker 0's variables, on every worker
        for cb in cbs:
            cb.on_train_begin(None)             # TF 1.15 passes logs=None to these two
        fetches = [f["train"], f["loss"]] + f["metrics"]
        for epoch in range(initial_epoch, epochs):
            for cb in cbs:
                cb.on_epoch_begin(epoch, {})
            totals = np.zeros(len(f["names"]))
            last = np.zeros(len(f["names"]))
            self.reset_metrics()
            if seq is not None:
                n = 0
            b = -1
            for b, (bxs, bys, bsw, rows) in enumerate(self._batches(
                    seq, xs, ys, batch_size, shuffle, sw, class_weight)):
                batch_logs = {"batch": b, "size": len(rows)}
                for cb in cbs:
                    cb.on_train_batch_begin(b, batch_logs)
                values = self._run(sess, fetches, self._feed(bxs, rows, bys, training=True,
                                                      weights=bsw))[1:]
                totals += np.asarray(values, dtype=np.float64) * len(rows)
                last = values
                if seq is not None:
                    n += len(rows)
                batch_logs.update(zip(f["names"], (float(v) for v in values)))
                for cb in cbs:
                    cb.on_train_batch_end(b, batch_logs)
                if self.stop_training:  # TerminateOnNaN: stop within the epoch, as Keras
                    break
            logs = dict(zip(f["names"], self._epoch_values(totals, last, n)))
            if seq is not None and seq.ran_out:    # as TF 1.15: a warning, then no more epochs
                self.stop_training = True
            # (TF 1.15 skips the validation of an epoch that stopped training)
            if val is not None and validate_after(epoch + 1) and not self.stop_training:
                results = self._stream_test_loop(val, cbs) \
                    if isinstance(val, _data.BatchStream) \
                    else self._test_loop(val[0], val[1], batch_size, weights=val[2],
                                         callbacks=cbs)
                logs.update({"val_" + name: v for name, v in zip(f["names"], results)})
            if verbose:
                # as TF 1.15's progress bar: samples for arrays, steps for a Dataset, generator
                # or Sequence
                done = n if seq is None else b + 1
                print("Epoch %d/%d" % (epoch + 1, epochs))
                print("%d/%d - %s" % (done, done,
                                      " - ".join("%s: %.4f" % kv for kv in logs.items())))
            for cb in cbs:
                cb.on_epoch_end(epoch, logs)
            if seq is not None:
                seq.end_of_epoch()
            if self.stop_training:
                break
        for cb in cbs:
            cb.on_train_end(None)
        self.history = history
        return history

    def _batches(self, seq, xs, ys, batch_size, shuffle, weights=None, class_weight=None):
        """(inputs, targets, sample weights, rows) of each batch of an epoch: rows of the
        arrays, or the batches of a BatchStream (a Sequence's in a random order with shuffle;
        a batch's third element, when there is one, holds its sample weights)."""
        if seq is None:
            n = _num_rows(xs + _given(ys))
            order = np.random.permutation(n) if shuffle else np.arange(n)
            for start in range(0, n, batch_size):
                rows = order[start:start + batch_size]
                yield xs, ys, weights, (np.sort(rows) if shuffle else rows)
            return
        for batch in seq.epoch(shuffle):
            if len(batch) < 2:
                raise ValueError("fit: a batch must hold (inputs, targets), got only inputs")
            bxs, bys = self._inputs_list(batch[0]), self._targets(batch[1])
            rows = _num_rows(bxs + _given(bys))
            bsw = self._sample_weights(bys, rows, batch[2] if len(batch) > 2 else None,
                                       class_weight)
            yield bxs, bys, bsw, np.arange(rows)

    def fit_generator(self, generator, steps_per_epoch=None, epochs=1, verbose=1,
                      callbacks=None, validation_data=None, validation_steps=None,
                      class_weight=None, max_queue_size=10, workers=1,
                      use_multiprocessing=False, shuffle=True, initial_epoch=0):
        """fit on a Python generator (steps_per_epoch required), a keras.utils.Sequence or a
        tf.data.Dataset, read in this thread (workers and queues are not used)."""
        return self.fit(generator, epochs=epochs, verbose=verbose, callbacks=callbacks,
                        validation_data=validation_data, validation_steps=validation_steps,
                        class_weight=class_weight, shuffle=shuffle,
                        initial_epoch=initial_epoch, steps_per_epoch=steps_per_epoch)

    def evaluate_generator(self, generator, steps=None, callbacks=None, max_queue_size=10,
                           workers=1, use_multiprocessing=False, verbose=0):
        """evaluate on a generator, Sequence or Dataset (see data_adapter.py)."""
        return self.evaluate(generator, steps=steps, verbose=verbose, callbacks=callbacks)

    def predict_generator(self, generator, steps=None, callbacks=None, max_queue_size=10,
                          workers=1, use_multiprocessing=False, verbose=0):
        """predict on a generator, Sequence or Dataset (see data_adapter.py)."""
        return self.predict(generator, steps=steps, verbose=verbose, callbacks=callbacks)

    def _stream_test_loop(self, stream, callbacks=None):
        """_test_loop over the batches of one epoch of a BatchStream."""
        f = self._make_functions()
        sess = K.get_session()
        totals = np.zeros(len(f["names"]))
        last = np.zeros(len(f["names"]))
        n = 0
        self.reset_metrics()
        call_hooks(callbacks, "on_test_begin", None)
        for b, batch in enumerate(stream.epoch()):
            if len(batch) < 2:
                raise ValueError("evaluate: a batch must hold (inputs, targets)")
            xs, ys = self._inputs_list(batch[0]), self._targets(batch[1])
            rows = _num_rows(xs + _given(ys))
            weights = self._sample_weights(ys, rows, batch[2] if len(batch) > 2 else None)
            logs = {"batch": b, "size": rows}
            call_hooks(callbacks, "on_test_batch_begin", b, logs)
            fetches = [f["loss"]] + f["metrics"]
            values = self._run(sess, self._with_state_updates(fetches),
                              self._feed(xs, np.arange(rows), ys, weights=weights))
            values = values[:len(fetches)]
            totals += np.asarray(values, dtype=np.float64) * rows
            last = values
            n += rows
            logs.update(zip(f["names"], (float(v) for v in values)))
            call_hooks(callbacks, "on_test_batch_end", b, logs)
        stream.end_of_epoch()
        call_hooks(callbacks, "on_test_end", None)
        return self._epoch_values(totals, last, n)

    def _test_loop(self, xs, ys, batch_size, reset_metrics=True, weights=None, callbacks=None):
        f = self._make_functions()
        sess = K.get_session()
        n = _num_rows(xs + _given(ys))
        totals = np.zeros(len(f["names"]))
        last = np.zeros(len(f["names"]))
        if reset_metrics:
            self.reset_metrics()
        call_hooks(callbacks, "on_test_begin", None)
        for b, start in enumerate(range(0, n, batch_size)):
            rows = np.arange(start, min(start + batch_size, n))
            logs = {"batch": b, "size": len(rows)}
            call_hooks(callbacks, "on_test_batch_begin", b, logs)
            fetches = [f["loss"]] + f["metrics"]
            values = self._run(sess, self._with_state_updates(fetches),
                              self._feed(xs, rows, ys, weights=weights))[:len(fetches)]
            totals += np.asarray(values, dtype=np.float64) * len(rows)
            last = values
            logs.update(zip(f["names"], (float(v) for v in values)))
            call_hooks(callbacks, "on_test_batch_end", b, logs)
        call_hooks(callbacks, "on_test_end", None)
        return self._epoch_values(totals, last, n)

    def _set_callbacks(self, callbacks, params):
        """evaluate's and predict's callbacks get the model and these params."""
        for cb in callbacks or ():
            cb.set_model(self)
            cb.set_params(params)

    def _worker_share(self):
        """(rank, workers) when compiled in a MultiWorkerMirroredStrategy of several workers:
        fit and evaluate take this worker's share of each global batch of a Dataset."""
        strategy = getattr(self, "_multi_worker", None)
        if strategy is None or strategy.num_replicas_in_sync < 2:
            return None
        return strategy._task_rank, strategy.num_replicas_in_sync

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, sample_weight=None,
                 steps=None, callbacks=None):
        """The loss (and metrics) over (x, y), learning phase off: a float when there are
        no metrics, else [loss, metric, ...] in the order of metrics_names. `x` may also be
        a tf.data.Dataset, a generator (with `steps`) or a Sequence of (inputs, targets)."""
        if _data.holds_tensors(x):
            x, y = _data.TensorSource(x, y), None
        if _data.is_stream(x):
            stream = _data.BatchStream(x, steps, "evaluate", shard=self._worker_share())
            self._build_for(self._inputs_list(stream.peek()[0]))
            self._set_callbacks(callbacks, {"steps": stream.steps, "samples": None,
                                            "verbose": verbose})
            results = self._stream_test_loop(stream, callbacks)
        else:
            xs = self._inputs_list(x)
            self._build_for(xs)
            self._make_functions()
            ys = self._targets(y)
            self._set_callbacks(callbacks, {"steps": None, "samples": _num_rows(xs),
                                            "verbose": verbose})
            results = self._test_loop(xs, ys, int(batch_size or 32),
                                      weights=self._sample_weights(ys, _num_rows(_given(ys)),
                                                                   sample_weight),
                                      callbacks=callbacks)
        if verbose:
            names = self._functions["names"]
            print(" - ".join("%s: %.4f" % (k, v) for k, v in zip(names, results)))
        return results[0] if len(results) == 1 else results

    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None):
        """The outputs for `x` as NumPy arrays (learning phase off), computed in batches. `x`
        may also be a tf.data.Dataset, a generator (with `steps`) or a Sequence whose batches
        are the inputs (or tuples starting with them)."""
        if _data.holds_tensors(x):
            x = _data.TensorSource(x)
        sessions = []      # the session, once the model is built (a subclassed model's
                           # variables exist only then: get_session initialises them)

        def run_batch(b, xs, rows):
            if not sessions:
                sessions.append(K.get_session())
            logs = {"batch": b, "size": len(rows)}
            call_hooks(callbacks, "on_predict_batch_begin", b, logs)
            out = self._run(sessions[0], self._with_state_updates(self.outputs),
                            self._feed(xs, rows))[:len(self.outputs)]
            logs["outputs"] = out
            call_hooks(callbacks, "on_predict_batch_end", b, logs)
            return out

        if _data.is_stream(x):
            stream = _data.BatchStream(x, steps, "predict", inputs_only=True)
            self._build_for(self._inputs_list(stream.peek()[0]))
            self._set_callbacks(callbacks, {"steps": stream.steps, "samples": None,
                                            "verbose": verbose})
            call_hooks(callbacks, "on_predict_begin", None)
            parts = []
            for b, batch in enumerate(stream.epoch()):
                xs = self._inputs_list(batch[0])
                parts.append(run_batch(b, xs, np.arange(_num_rows(xs))))
            if not parts:
                raise ValueError("predict: the data gave no batch")
        else:
            xs = self._inputs_list(x)
            self._build_for(xs)
            batch_size = int(batch_size or 32)
            n = _num_rows(xs)
            self._set_callbacks(callbacks, {"steps": None, "samples": n, "verbose": verbose})
            call_hooks(callbacks, "on_predict_begin", None)
            parts = [run_batch(b, xs, np.arange(s, min(s + batch_size, n)))
                     for b, s in enumerate(range(0, n, batch_size))]
        call_hooks(callbacks, "on_predict_end", None)
        outs = [np.concatenate([p[i] for p in parts]) for i in range(len(self.outputs))]
        return outs[0] if len(outs) == 1 else outs

    def train_on_batch(self, x, y, sample_weight=None, class_weight=None, reset_metrics=True):
        """One training step on (x, y): the loss (and metrics) of the batch; stateful
        metrics accumulate over calls unless reset_metrics (then reset after the step)."""
        xs = self._inputs_list(x)
        self._build_for(xs)
        f = self._make_functions()
        if f["train"] is None:
            raise ValueError("the model has no trainable weights (it was compiled with none)")
        ys = self._targets(y)
        n = _num_rows(xs + _given(ys))
        weights = self._sample_weights(ys, n, sample_weight, class_weight)
        values = self._run(K.get_session(), [f["train"], f["loss"]] + f["metrics"],
                                     self._feed(xs, np.arange(n), ys, training=True,
                                                weights=weights))[1:]
        values = [float(v) for v in values]
        if reset_metrics:
            self.reset_metrics()
        return values[0] if len(values) == 1 else values

    def test_on_batch(self, x, y, sample_weight=None, reset_metrics=True):
        """The loss (and metrics) of one batch; with reset_metrics=False stateful metrics
        accumulate over calls (and over what came before)."""
        xs = self._inputs_list(x)
        self._build_for(xs)
        self._make_functions()
        ys = self._targets(y)
        results = self._test_loop(xs, ys, max(len(xs[0]), 1), reset_metrics=reset_metrics,
                                  weights=self._sample_weights(ys, _num_rows(_given(ys)),
                                                               sample_weight))
        return results[0] if len(results) == 1 else results

    def predict_on_batch(self, x):
        return self.predict(x, batch_size=max(len(self._inputs_list(x)[0]), 1))

    # ---- summary ---------------------------------------------------------------------------

    def summary(self, line_length=None, positions=None, print_fn=None):
        """Prints a table of the layers: name (type), output shape, parameter count (and,
        for functional models, the layers each is connected to), then the totals."""
        self._require_built("summary")
        print_fn = print_fn or print
        sequential = isinstance(self, Sequential)
        widths = [29, 26, 11] if sequential else [29, 26, 11, 32]
        header = ["Layer (type)", "Output Shape", "Param #"] + \
            ([] if sequential else ["Connected to"])
        line_length = line_length or sum(widths)

        def row(cells):
            return "".join(str(c)[:w - 1].ljust(w) for c, w in zip(cells, widths)).rstrip()

        print_fn('Model: "%s"' % self.name)
        print_fn("_" * line_length)
        print_fn(row(header))
        print_fn("=" * line_length)
        for i, layer in enumerate(self.layers):
            shape = layer.output_shape
            cells = ["%s (%s)" % (layer.name, type(layer).__name__), shape,
                     layer.count_params()]
            if not sequential:
                xs = layer._inbound_nodes[0][0] if not isinstance(
                    layer, layers_module.InputLayer) else []
                cells.append(", ".join(x._keras_history[0].name for x in _as_list(xs)))
            print_fn(row(cells))
            print_fn(("=" if i == len(self.layers) - 1 else "_") * line_length)
        trainable = sum(K.count_params(v) for v in self.trainable_weights)
        total = self.count_params()
        print_fn("Total params: {:,}".format(total))
        print_fn("Trainable params: {:,}".format(trainable))
        print_fn("Non-trainable params: {:,}".format(total - trainable))
        print_fn("_" * line_length)


class Sequential(Model):
    """A stack of layers, each called on the previous one's output.

    Built (its input placeholder made and the layers called) as soon as the first layer has
    an input_shape / input_dim / batch_input_shape, or an InputLayer is added; otherwise on
    the first fit / evaluate / predict, from the data's shape.

    Example::

        model = keras.Sequential()
        model.add(keras.layers.Dense(16, activation="relu", input_dim=4))
        model.add(keras.layers.Dense(1))
    """

    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        self._stack = []
        self._input_layer = None
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self):
        return list(self._stack)

    def add(self, layer):
        if isinstance(layer, layers_module.InputLayer):
            if self._stack or self._input_layer is not None:
                raise ValueError("an InputLayer goes first in a Sequential")
            self._input_layer = layer
            self.inputs, self.outputs = [layer.output], [layer.output]
            return
        if not callable(layer):
            raise TypeError("Sequential.add takes a layer, not %r" % (layer,))
        self._stack.append(layer)
        self._functions = None
        if self.built:
            self._apply(layer)
        elif len(self._stack) == 1 and getattr(layer, "_batch_input_shape", None):
            shape = layer._batch_input_shape
            # TF 1.15's name: "<first layer>_input" ("dense_input"), the key of a dict of inputs
            self._build_input(shape[1:], layer.dtype, batch=shape[0],
                              name=getattr(layer, "name", None) and layer.name + "_input")

    def _apply(self, layer):
        y = layer(self.outputs[0])
        self.outputs = [y]
        self._single_input = True

    def _build_input(self, shape, dtype, batch=None, name=None):
        dtype = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
        if dtype not in ("float32", "int32", "int64"):
            dtype = K.floatx()
        self._input_layer = layers_module.InputLayer(
            batch_input_shape=(batch,) + tuple(shape), dtype=dtype, name=name)
        self.inputs = [self._input_layer.output]
        self.outputs = list(self.inputs)
        for layer in self._stack:
            self._apply(layer)

    def _build_from_dict(self, arrays):
        """Builds a Sequential whose first layer takes a dict of features (DenseFeatures, as
        TF's structured-data tutorial): an Input per feature, named by its key, shaped and
        typed as the feature's batch; the dict goes to the first layer."""
        features = {}
        for key in sorted(arrays):
            a = np.asarray(arrays[key])
            if a.dtype.kind in "USO":
                dtype = "string"
            elif a.dtype.kind in "iu":
                dtype = "int64"
            else:
                dtype = K.floatx()
            t = layers_module.Input(shape=a.shape[1:], name=key, dtype=dtype)
            t._feature_key = key
            features[key] = t
        self.inputs = [features[k] for k in sorted(features)]
        out = features
        for layer in self._stack:
            out = layer(out)
        self.outputs = [out]
        self._single_input = False

    def build(self, input_shape=None):
        """Builds the model for inputs of `input_shape` (batch dimension first)."""
        if not self.built:
            self._build_input(tuple(input_shape)[1:], K.floatx(), batch=input_shape[0])

    def predict_proba(self, x, batch_size=32, verbose=0):
        """predict's probabilities (Sequential.predict_proba of TF 1.15's Keras)."""
        return self.predict(x, batch_size=batch_size, verbose=verbose)

    def predict_classes(self, x, batch_size=32, verbose=0):
        """The class of each example: the argmax of a softmax output, or the output rounded
        at 0.5 for a single sigmoid unit (as TF 1.15's Keras Sequential)."""
        proba = self.predict(x, batch_size=batch_size, verbose=verbose)
        if proba.shape[-1] > 1:
            return proba.argmax(axis=-1)
        return (proba > 0.5).astype("int32")

    def __call__(self, inputs, training=None):
        x = inputs
        for layer in self._stack:
            x = layer(x, training=training)
        self._record_call(inputs, x)
        return x


def _input_name(t):
    history = getattr(t, "_keras_history", None)
    return history[0].name if history is not None else t.op.name


def _is_keras_input(t):
    history = getattr(t, "_keras_history", None)
    return history is not None and isinstance(history[0], layers_module.InputLayer)


def load_model(filepath, custom_objects=None, compile=True):  # noqa: A002 (Keras's name)
    """The model Model.save wrote (keras/saving.py)."""
    from shardflow.keras import saving
    return saving.load_model(filepath, custom_objects=custom_objects, compile=compile)


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    """model.save(filepath), as keras.models.save_model."""
    model.save(filepath, overwrite=overwrite, include_optimizer=include_optimizer)


def model_from_json(json_string, custom_objects=None):
    """A new model (fresh weights, not compiled) from what model.to_json() gave."""
    import json
    from shardflow.keras import saving
    return saving.model_from_config(json.loads(json_string), custom_objects,
                                    "model_from_json")


def model_from_config(config, custom_objects=None):
    """A new model (fresh weights, not compiled) from what model.get_config() gave."""
    from shardflow.keras import saving
    return saving.model_from_config(config, custom_objects, "model_from_config")


def clone_model(model, input_tensors=None, clone_function=None):
    """A new model with the same layers and connections as `model` (a Sequential or
    functional model whose layers' arguments are names), built in the default graph with new
    weights, freshly initialised (not copied: model.set_weights(clone.get_weights()) does
    that); not compiled. `input_tensors` and `clone_function` are not supported."""
    if input_tensors is not None or clone_function is not None:
        raise ValueError("clone_model: input_tensors and clone_function are not supported")
    from shardflow.keras import saving
    return saving.model_from_config(saving.model_config(model), None, "clone_model")
