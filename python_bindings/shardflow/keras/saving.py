"""Whole-model saving for tf.keras: ``model.save(path)`` and ``keras.models.load_model(path)``
for Sequential and functional models, as TF 1.x Keras programs write them.

The file (whatever its extension, '.h5' included: shardflow has no HDF5) is a ZIP archive of
model.json — the layers as their classes and the arguments they were constructed with, how
they are connected (the input shape of a Sequential; each layer's inputs in a functional
model), and the compile() choices — and the weights in shardflow's checkpoint format
(save_weights). load_model rebuilds the layers, loads the weights and compiles the model again
(the optimizer's settings, not its slots: Adam's moments start from zero). model.to_json() is
that model.json without the compile settings; keras.models.model_from_json builds it back
(fresh weights), and keras.models.clone_model goes through the same config.

What cannot be written is an error naming the layer and argument: subclassed models and
layers shared by several calls (save their weights and rebuild the model in code), and
arguments that are Python objects rather than names (a lambda as activation, an initializer
object; pass 'relu', 'glorot_uniform', ...; custom layer classes are read back through
load_model's custom_objects).
"""

import functools
import json
import os
import tempfile
import threading
import zipfile

import numpy as np

# The custom_objects of the load_model / model_from_config call in progress (this thread's),
# where a function saved by name ({"__function__": name}) is looked up.
_loading = threading.local()

_FORMAT = "shardflow-keras-model"
_VERSION = 1
# model.json is read into memory: a larger one is not a model this module wrote.
_MAX_CONFIG_BYTES = 64 << 20


def record_init(cls):
    """Wraps cls.__init__ so that the outermost constructor call of an instance is kept as
    instance._init_call = (args, kwargs): what save() writes for it."""
    init = cls.__dict__.get("__init__")
    if init is None or getattr(init, "_records_init", False):
        return

    @functools.wraps(init)
    def wrapped(self, *args, **kwargs):
        if "_init_call" not in self.__dict__:
            self.__dict__["_init_call"] = (args, dict(kwargs))
        init(self, *args, **kwargs)

    wrapped._records_init = True
    cls.__init__ = wrapped


def _encode(value, where):
    from shardflow import dtypes
    from shardflow.keras import activations
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, where) for v in value]}
    if isinstance(value, list):
        return [_encode(v, where) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: _encode(v, where + "." + k) for k, v in value.items()}}
    if isinstance(value, dtypes.DType):
        return {"__dtype__": value.name}
    from shardflow.keras import layers as layers_module
    if isinstance(value, layers_module.Layer):  # the layer a wrapper (Bidirectional) wraps
        return {"__layer__": _layer_entry(value)}
    from shardflow.keras import constraints, regularizers, schedules
    from shardflow.variables import Initializer
    if isinstance(value, schedules.LearningRateSchedule):  # an optimizer's learning_rate
        entry = schedules.serialize(value)
        return {"__schedule__": {"class_name": entry["class_name"],
                                 "config": _encode(entry["config"], where)}}
    if isinstance(value, regularizers.L1L2):  # kernel_regularizer=keras.regularizers.l2(1e-4)
        return {"__regularizer__": value.get_config()}
    if isinstance(value, constraints.Constraint):
        return {"__constraint__": {"class": type(value).__name__,
                                   "config": _encode(value.get_config(), where)}}
    if isinstance(value, Initializer):  # keras.initializers.he_normal(), Constant(0.1), ...
        return {"__initializer__": {"kind": value.kind, "seed": value.seed,
                                    "value": value.value}}
    from shardflow.variable_scope import _Initializer
    if isinstance(value, _Initializer):  # keras.initializers.RandomNormal(stddev=0.01), ...
        return {"__init_class__": {"class": type(value).__name__,
                                   "config": _encode(value.get_config(), where)}}
    name = getattr(value, "__name__", None)
    module = getattr(value, "__module__", None) or ""
    # keras.activations.relu, and shardflow's own functions of an activation's name (sf.nn.relu)
    if callable(value) and name and callable(getattr(activations, name, None)) and (
            getattr(activations, name) is value or module.startswith("shardflow")):
        return {"__activation__": name}
    if callable(value) and name and name.isidentifier() and name != "<lambda>":
        # A custom loss, metric or Lambda function: saved by its name, and load_model takes it
        # from custom_objects (as Keras does); its code is not written.
        return {"__function__": name}
    raise NotImplementedError(
        "model.save: %s is %r, which cannot be written to a file; give it by name (e.g. "
        "activation='relu', kernel_initializer='glorot_uniform'), or save_weights() and "
        "rebuild the model in code" % (where, value))


def _decode(value):
    from shardflow import dtypes
    from shardflow.keras import activations
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if "__tuple__" in value:
            return tuple(_decode(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {k: _decode(v) for k, v in value["__dict__"].items()}
        if "__dtype__" in value:
            return dtypes.as_dtype(value["__dtype__"])
        if "__activation__" in value:
            return getattr(activations, value["__activation__"])
        if "__layer__" in value:
            return _decode_layer(value["__layer__"])
        if "__function__" in value:
            return _decode_function(value["__function__"])
        if "__schedule__" in value:
            from shardflow.keras import schedules
            from shardflow.keras.utils import get_custom_objects
            entry = value["__schedule__"]
            objects = dict(get_custom_objects(), **(getattr(_loading, "objects", None) or {}))
            return schedules.deserialize(
                {"class_name": entry.get("class_name"), "config": _decode(entry.get("config"))},
                custom_objects=objects)
        if "__regularizer__" in value or "__constraint__" in value or \
                "__initializer__" in value or "__init_class__" in value:
            return _decode_object(value)
        raise ValueError("load_model: unknown value %r in model.json" % (value,))
    return value


def _decode_function(name):
    """A function save() wrote by name: from custom_objects, else keras's losses, metrics and
    activations."""
    from shardflow.keras import activations, losses, metrics
    from shardflow.keras.utils import get_custom_objects
    objects = dict(get_custom_objects(), **(getattr(_loading, "objects", None) or {}))
    if isinstance(name, str) and name in objects:
        return objects[name]
    for module in (losses, metrics, activations):
        found = getattr(module, name, None) if isinstance(name, str) and \
            name.isidentifier() and not name.startswith("_") else None
        if callable(found) and not isinstance(found, type):
            return found
    raise ValueError("load_model: unknown function %r (a custom loss, metric or Lambda "
                     "function?); pass it in custom_objects={%r: ...}" % (name, name))


def _decode_initializer_class(entry):
    """One of TF1's initializer classes (RandomNormal, TruncatedNormal, Constant, ...) from
    model.json: only shardflow.variable_scope's, with plain values as arguments."""
    import importlib
    variable_scope = importlib.import_module("shardflow.variable_scope")  # (sf.variable_scope
    name = entry.get("class") if isinstance(entry, dict) else None        # is the function)
    cls = getattr(variable_scope, name, None) if isinstance(name, str) and \
        name.isidentifier() and not name.startswith("_") else None
    config = _decode(entry.get("config")) if isinstance(entry, dict) else None

    def plain(v):
        return v is None or isinstance(v, (bool, int, float, str)) or (
            isinstance(v, (list, tuple)) and all(plain(x) for x in v))
    if not (isinstance(cls, type) and issubclass(cls, variable_scope._Initializer)) or \
            not isinstance(config, dict) or not all(plain(v) for v in config.values()):
        raise ValueError("load_model: unknown initializer %r in model.json" % (entry,))
    try:
        return cls.from_config(config)
    except (TypeError, ValueError) as e:
        raise ValueError("load_model: initializer %s with arguments %r: %s"
                         % (name, config, e)) from None


def _decode_object(value):
    """A regularizer, constraint or initializer model.json names (only keras's own classes,
    with number arguments)."""
    from shardflow.keras import constraints, regularizers
    from shardflow.variables import Initializer, initializers

    def numbers(config, keys):
        if not isinstance(config, dict) or set(config) - set(keys) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in config.values()):
            raise ValueError("load_model: bad arguments %r in model.json (numbers among %s)"
                             % (config, ", ".join(keys)))
        return config
    if "__regularizer__" in value:
        return regularizers.L1L2(**numbers(value["__regularizer__"], ("l1", "l2")))
    if "__init_class__" in value:
        return _decode_initializer_class(value["__init_class__"])
    if "__initializer__" in value:
        entry = value["__initializer__"]
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if not isinstance(kind, str) or not kind.isidentifier() or \
                not callable(getattr(initializers, kind, None)):
            raise ValueError("load_model: unknown initializer %r in model.json" % (entry,))
        rest = numbers({k: v for k, v in entry.items() if k != "kind"}, ("seed", "value"))
        return Initializer(kind, **rest)
    entry = value["__constraint__"]
    cls = getattr(constraints, entry.get("class", ""), None) if isinstance(entry, dict) \
        and isinstance(entry.get("class"), str) else None
    if not (isinstance(cls, type) and issubclass(cls, constraints.Constraint)):
        raise ValueError("load_model: unknown constraint %r in model.json" % (entry,))
    config = _decode(entry.get("config", {"__dict__": {}}))
    return cls(**numbers(config, tuple(config) if isinstance(config, dict) else ()))


def _decode_layer(entry):
    """The keras layer (of a class of keras.layers only) an {"__layer__": entry} stands for."""
    from shardflow.keras import layers as layers_module
    if not (isinstance(entry, dict) and isinstance(entry.get("class"), str)
            and isinstance(entry.get("args"), list) and isinstance(entry.get("kwargs"), dict)):
        raise ValueError("load_model: a wrapped layer in model.json is not {class, args, kwargs}")
    cls = getattr(layers_module, entry["class"], None)
    if not (isinstance(cls, type) and issubclass(cls, layers_module.Layer)):
        raise ValueError("load_model: unknown wrapped layer class %r" % (entry["class"],))
    return cls(*_decode(entry["args"]), **{k: _decode(v) for k, v in entry["kwargs"].items()})


def _layer_entry(layer):
    from shardflow.keras import layers as layers_module
    call = layer.__dict__.get("_init_call")
    if call is None and not isinstance(layer, layers_module.Layer):
        raise NotImplementedError("model.save: '%s' (%s) is a model used as a layer; saving "
                                  "nested models is not supported: save_weights() and rebuild "
                                  "the model in code" % (getattr(layer, "name", layer),
                                                         type(layer).__name__))
    if call is None:
        raise NotImplementedError("model.save: layer %s (%s) is not a keras layer whose "
                                  "arguments were recorded" % (layer, type(layer).__name__))
    args, kwargs = call
    kwargs = dict(kwargs, name=layer.name)
    where = "layer '%s' (%s)" % (layer.name, type(layer).__name__)
    return {"class": type(layer).__name__,
            "args": _encode(list(args), where + " argument"),
            "kwargs": _encode(kwargs, where + " argument")["__dict__"]}


def _ref(t):
    """(layer name, node, output index) of a tensor a keras layer made."""
    layer, node, index = t._keras_history
    return [layer.name, node, index]


def _functional_layers(model):
    """The layers of a functional model in call order, each with the tensors it was called on;
    a layer called more than once (shared) is refused."""
    from shardflow.keras import layers as layers_module
    entries = []
    for layer in model.layers:
        entry = _layer_entry(layer)
        if isinstance(layer, layers_module.InputLayer):
            entry["kwargs"].pop("input_tensor", None)
            entry["kwargs"]["batch_input_shape"] = _encode(tuple(layer._batch_input_shape), "")
            for key in ("input_shape", "batch_size"):
                entry["kwargs"].pop(key, None)
            entry["kwargs"]["dtype"] = layer.output.dtype.name
        else:
            if len(layer._inbound_nodes) != 1:
                raise NotImplementedError(
                    "model.save: layer '%s' is called %d times in the model (a shared layer); "
                    "saving those is not supported: save_weights() and rebuild the model in code"
                    % (layer.name, len(layer._inbound_nodes)))
            xs = layer._inbound_nodes[0][0]
            entry["inbound"] = [_ref(t) for t in xs] if isinstance(xs, (list, tuple)) \
                else _ref(xs)
        entries.append(entry)
    return entries


def model_config(model):
    """The architecture of a built Sequential or functional model as model.json holds it
    (without weights; "compile" None): what model.to_json writes and clone_model rebuilds."""
    from shardflow.keras.models import Model, Sequential
    if type(model) not in (Sequential, Model):
        raise NotImplementedError(
            "model.save: Sequential and functional models can be saved whole here, not a "
            "subclassed %s; use save_weights() and rebuild the model in code"
            % type(model).__name__)
    model._require_built("save")
    x = model.inputs[0]
    config = {"format": _FORMAT, "version": _VERSION, "name": model.name, "compile": None}
    if type(model) is Sequential:
        config.update(kind="sequential", batch_input_shape=x.shape.as_list(),
                      input_dtype=x.dtype.name,
                      layers=[_layer_entry(layer) for layer in model.layers])
    else:
        config.update(kind="functional", layers=_functional_layers(model),
                      inputs=[_ref(t) for t in model.inputs],
                      outputs=[_ref(t) for t in model.outputs])
    return config


def _is_tf_train_optimizer(optimizer):
    from shardflow.train import Optimizer
    return isinstance(optimizer, Optimizer)


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    model._require_built("save")
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError("%s exists (overwrite=False)" % filepath)
    config = model_config(model)
    compiled = getattr(model, "_compile_call", None)
    if include_optimizer and compiled is not None and _is_tf_train_optimizer(compiled[0]):
        # As TF 1.15: a tf.train optimizer's state cannot be written; the model is saved
        # without its training configuration (load_model gives it uncompiled).
        from shardflow import tf_logging
        tf_logging.warning(
            "model.save: the model was compiled with a tf.train optimizer (%s), whose state "
            "cannot be saved; it is saved without its compile settings: compile it again after "
            "load_model (or use a keras.optimizers optimizer)" % type(compiled[0]).__name__)
        compiled = None
    if include_optimizer and compiled is not None:
        optimizer, loss, metrics = compiled
        opt_call = optimizer.__dict__.get("_init_call") if not isinstance(optimizer, str) \
            else None
        if isinstance(optimizer, str):
            opt = {"name": optimizer}
        elif opt_call is not None:
            opt = {"class": type(optimizer).__name__,
                   "args": _encode(list(opt_call[0]), "the optimizer's arguments"),
                   "kwargs": _encode(opt_call[1], "the optimizer's arguments")["__dict__"]}
        else:
            raise NotImplementedError(
                "model.save: the model was compiled with %r, which cannot be written; compile "
                "with a name ('adam') or a keras.optimizers instance, or save with "
                "include_optimizer=False" % (optimizer,))
        config["compile"] = {"optimizer": opt, "loss": _encode(loss, "the loss"),
                             "metrics": _encode(metrics, "the metrics"),
                             "loss_weights": _encode(getattr(model, "loss_weights", None),
                                                     "the loss weights"),
                             "sample_weight_mode": _encode(
                                 getattr(model, "sample_weight_mode", None),
                                 "the sample weight mode")}
    directory = os.path.dirname(os.path.abspath(filepath))
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_weights(os.path.join(tmp, "weights"))
        partial = os.path.join(directory, ".%s.partial" % os.path.basename(filepath))
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("model.json", json.dumps(config, indent=1))
            for name in sorted(os.listdir(tmp)):
                z.write(os.path.join(tmp, name), "weights/" + name)
        os.replace(partial, filepath)


def _check_config(config, filepath):
    """Raises ValueError naming what in model.json is not what save_model writes (the file is
    untrusted: it decides which classes are built, with which arguments)."""
    def bad(what):
        return ValueError("load_model: %s: model.json is malformed (%s)" % (filepath, what))

    def is_ref(r):
        return (isinstance(r, list) and len(r) == 3 and isinstance(r[0], str)
                and all(isinstance(v, int) and not isinstance(v, bool) for v in r[1:]))

    if not isinstance(config, dict):
        raise bad("not an object")
    kind = config.get("kind", "sequential")
    if kind not in ("sequential", "functional"):
        raise bad("kind %r" % (kind,))
    layers = config.get("layers")
    if not isinstance(layers, list):
        raise bad("no list of layers")
    for i, entry in enumerate(layers):
        if not (isinstance(entry, dict) and isinstance(entry.get("class"), str)
                and isinstance(entry.get("args"), list) and isinstance(entry.get("kwargs"), dict)
                and isinstance(entry["kwargs"].get("name"), str)):
            raise bad("layer %d is not {class, args, kwargs with a name}" % i)
        inbound = entry.get("inbound")
        if kind == "functional" and entry["class"] != "InputLayer" and not (
                is_ref(inbound) or (isinstance(inbound, list) and inbound
                                    and all(is_ref(r) for r in inbound))):
            raise bad("layer %d has no inputs" % i)
    if kind == "sequential":
        shape = config.get("batch_input_shape")
        if not (isinstance(shape, list) and all(d is None or (isinstance(d, int) and d >= 0)
                                                 for d in shape)):
            raise bad("batch_input_shape %r" % (shape,))
    else:
        for key in ("inputs", "outputs"):
            refs = config.get(key)
            if not (isinstance(refs, list) and refs and all(is_ref(r) for r in refs)):
                raise bad("%s %r" % (key, refs))
    compiled = config.get("compile")
    if compiled is not None and not (isinstance(compiled, dict)
                                     and isinstance(compiled.get("optimizer"), dict)):
        raise bad("compile %r" % (compiled,))


def _weight_files(archive, filepath):
    """The archive's weights/<file> entries as (entry, file name); a name that is not a plain
    file name (a path out of the directory it is written to) is an error."""
    files = []
    for n in archive.namelist():
        if not n.startswith("weights/"):
            continue
        name = n[len("weights/"):]
        if not name or name in (".", "..") or os.path.basename(name) != name or "\\" in name:
            raise ValueError("load_model: %s holds a weights entry %r that is not a plain file "
                             "name" % (filepath, n))
        files.append((n, name))
    return files


def load_model(filepath, custom_objects=None, compile=True):  # noqa: A002 (Keras's name)
    """The model save() wrote to `filepath`, with its weights (and compiled, unless
    compile=False). custom_objects maps the names of custom layer classes to them."""
    if not os.path.exists(filepath):
        raise IOError("load_model: no file %s" % filepath)
    try:
        archive = zipfile.ZipFile(filepath)
    except zipfile.BadZipFile:
        raise ValueError("load_model: %s is not a model saved by shardflow's model.save (an "
                         "HDF5 file from Keras cannot be read: shardflow has no HDF5)"
                         % filepath) from None
    with archive, tempfile.TemporaryDirectory() as tmp:
        try:
            if archive.getinfo("model.json").file_size > _MAX_CONFIG_BYTES:
                raise ValueError("model.json is larger than %d bytes" % _MAX_CONFIG_BYTES)
            config = json.loads(archive.read("model.json"))
        except (KeyError, ValueError) as e:
            raise ValueError("load_model: %s has no readable model.json (%s)" % (filepath, e)) \
                from None
        if not isinstance(config, dict):
            raise ValueError("load_model: %s: model.json is malformed (not an object)"
                             % filepath)
        if config.get("format") != _FORMAT or config.get("version") != _VERSION:
            raise ValueError("load_model: %s is format %r version %r; this shardflow reads %s "
                             "version %d" % (filepath, config.get("format"),
                                             config.get("version"), _FORMAT, _VERSION))
        _check_config(config, filepath)
        weight_files = _weight_files(archive, filepath)  # checked before anything is built
        model = model_from_config(config, custom_objects, filepath)
        for entry_name, name in weight_files:
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(archive.read(entry_name))
        model.load_weights(os.path.join(tmp, "weights"))
    compiled = config.get("compile")
    if compile and compiled is not None:
        _loading.objects = custom_objects
        try:
            _compile_saved(model, compiled, filepath)
        finally:
            _loading.objects = None
    return model


def _compile_saved(model, compiled, filepath):
    """model.compile with what save() wrote of its compile call."""
    from shardflow.keras import optimizers
    opt = compiled["optimizer"]
    if "name" in opt:
        optimizer = opt["name"]
    else:
        cls = getattr(optimizers, str(opt.get("class")), None)
        if not (isinstance(cls, type) and issubclass(cls, optimizers.Optimizer)):
            raise ValueError("load_model: %s: unknown optimizer class %r"
                             % (filepath, opt.get("class")))
        optimizer = cls(*_decode(opt.get("args", [])),
                        **{k: _decode(v) for k, v in opt.get("kwargs", {}).items()})
    model.compile(optimizer=optimizer, loss=_decode(compiled["loss"]),
                  metrics=_decode(compiled["metrics"]),
                  loss_weights=_decode(compiled.get("loss_weights")),
                  sample_weight_mode=_decode(compiled.get("sample_weight_mode")))


def model_from_config(config, custom_objects=None, filepath="the model config",
                      input_tensors=None):
    """A new model (fresh weights, not compiled) built from a config model_config gave
    (checked first: it decides which classes are built, with which arguments). With
    `input_tensors` (a list, one per model input) the model is built on those tensors instead
    of new placeholders."""
    _check_config(config, filepath)
    outer = getattr(_loading, "objects", None)
    _loading.objects = custom_objects  # for the functions the layers' arguments name
    try:
        return _model_from_config(config, custom_objects, filepath, input_tensors)
    finally:
        _loading.objects = outer


def _model_from_config(config, custom_objects, filepath, input_tensors):
    from shardflow.keras import layers as layers_module
    from shardflow.keras.models import Model, Sequential
    from shardflow.keras.utils import get_custom_objects
    objects = dict(get_custom_objects(), **(custom_objects or {}))  # custom_object_scope's too

    def make(entry, keep_input_shape=False):
        cls = objects.get(entry["class"])
        if cls is None:  # only keras layer classes, whatever the file names
            cls = getattr(layers_module, entry["class"], None)
            if not (isinstance(cls, type) and issubclass(cls, layers_module.Layer)):
                raise ValueError("load_model: unknown layer class %s; pass it in "
                                 "custom_objects={'%s': ...}"
                                 % (entry["class"], entry["class"]))
        kwargs = {k: _decode(v) for k, v in entry["kwargs"].items()}
        if not keep_input_shape:
            for key in ("input_shape", "input_dim", "batch_input_shape"):
                kwargs.pop(key, None)  # the model's InputLayer gives the input
        try:
            return cls(*_decode(entry["args"]), **kwargs)
        except TypeError as e:
            raise ValueError("load_model: %s: layer %s (%s) cannot be made from its saved "
                             "arguments (%s)" % (filepath, kwargs.get("name"),
                                                 entry["class"], e)) from None

    if config.get("kind", "sequential") == "sequential":
        model = Sequential(name=config.get("name"))
        shape = config["batch_input_shape"]
        tensor = input_tensors[0] if input_tensors else None
        model.add(layers_module.InputLayer(batch_input_shape=tuple(shape),
                                           dtype=config.get("input_dtype"), input_tensor=tensor))
        for entry in config["layers"]:
            model.add(make(entry))
    else:
        outputs = {}  # layer name -> its output (a tensor or a list)

        def tensor(ref):
            name, _, index = ref
            if name not in outputs:
                raise ValueError("load_model: %s reads layer '%s' before it is made"
                                 % (filepath, name))
            y = outputs[name]
            return y[index] if isinstance(y, (list, tuple)) else y

        given = {}
        if input_tensors:
            given = {ref[0]: t for ref, t in zip(config["inputs"], input_tensors)}
        for entry in config["layers"]:
            name = entry["kwargs"]["name"]
            if entry["class"] == "InputLayer" and name in given:
                entry = dict(entry, kwargs=dict(entry["kwargs"]))
                entry["kwargs"].pop("batch_input_shape", None)
                entry["kwargs"]["input_tensor"] = given[name]   # _decode keeps it as it is
                layer = make(entry, keep_input_shape=True)
            else:
                layer = make(entry, keep_input_shape=entry["class"] == "InputLayer")
            if entry["class"] == "InputLayer":
                outputs[name] = layer.output
                continue
            inbound = entry["inbound"]
            xs = [tensor(r) for r in inbound] if inbound and isinstance(inbound[0], list) \
                else tensor(inbound)
            outputs[name] = layer(xs)
        model = Model(inputs=[tensor(r) for r in config["inputs"]],
                      outputs=[tensor(r) for r in config["outputs"]],
                      name=config.get("name"))
    return model
