"""TF1's tf.saved_model: simple_save, the SavedModelBuilder, loader.load and the signature
helpers, over shardflow's meta graphs (shardflow/meta_graph.py) and checkpoints.

Example::

    sf.saved_model.simple_save(sess, "/tmp/export/1", inputs={"x": x}, outputs={"y": y})

    with sf.Session(graph=sf.Graph()) as sess:
        meta = sf.saved_model.loader.load(sess, [sf.saved_model.tag_constants.SERVING],
                                          "/tmp/export/1")
        sig = meta.signature_def["serving_default"]
        y = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: batch})

An export directory holds ``saved_model.json`` (the meta graph, its tags and signatures: a
shardflow format, not TensorFlow's saved_model.pb) and ``variables/variables`` (a checkpoint).
Loading needs no model code. As in TF1, exporting into a directory that exists is an error.
"""

import collections
import json
import os
import types

from shardflow import errors
from shardflow import meta_graph as _meta_graph

_FILE = "saved_model.json"

tag_constants = types.SimpleNamespace(SERVING="serve", TRAINING="train", GPU="gpu", TPU="tpu")
signature_constants = types.SimpleNamespace(
    DEFAULT_SERVING_SIGNATURE_DEF_KEY="serving_default",
    PREDICT_METHOD_NAME="tensorflow/serving/predict",
    CLASSIFY_METHOD_NAME="tensorflow/serving/classify",
    REGRESS_METHOD_NAME="tensorflow/serving/regress",
    PREDICT_INPUTS="inputs", PREDICT_OUTPUTS="outputs")

TensorInfo = collections.namedtuple("TensorInfo", ["name", "dtype", "tensor_shape"])


class SignatureDef:
    """A signature: named input and output TensorInfos and a method name."""

    def __init__(self, inputs=None, outputs=None, method_name=""):
        self.inputs = dict(inputs or {})
        self.outputs = dict(outputs or {})
        self.method_name = method_name

    def _to_json(self):
        def infos(d):
            return {k: {"name": v.name, "dtype": v.dtype, "shape": v.tensor_shape}
                    for k, v in d.items()}
        return {"inputs": infos(self.inputs), "outputs": infos(self.outputs),
                "method_name": self.method_name}

    @classmethod
    def _from_json(cls, d):
        def infos(x):
            return {k: TensorInfo(v["name"], v["dtype"], v["shape"]) for k, v in x.items()}
        return cls(infos(d["inputs"]), infos(d["outputs"]), d.get("method_name", ""))

    def __repr__(self):
        return "<SignatureDef inputs=%s outputs=%s>" % (sorted(self.inputs), sorted(self.outputs))


def build_tensor_info(tensor):
    """The TensorInfo (name, dtype, shape) of a tensor, for a signature."""
    from shardflow.framework import convert_to_tensor
    t = convert_to_tensor(tensor)
    shape = t.shape.as_list() if t.shape.ndims is not None else None
    return TensorInfo(t.name, t.dtype.name, shape)


def predict_signature_def(inputs, outputs):
    """A predict signature from {name: tensor} inputs and outputs."""
    return SignatureDef({k: build_tensor_info(v) for k, v in inputs.items()},
                        {k: build_tensor_info(v) for k, v in outputs.items()},
                        signature_constants.PREDICT_METHOD_NAME)


def build_signature_def(inputs=None, outputs=None, method_name=None):
    """A signature from {name: TensorInfo} maps (TF1's signature_def_utils.build_signature_def)."""
    return SignatureDef(inputs, outputs, method_name or "")


utils = types.SimpleNamespace(build_tensor_info=build_tensor_info)
signature_def_utils = types.SimpleNamespace(predict_signature_def=predict_signature_def,
                                            build_signature_def=build_signature_def)


class MetaGraphInfo:
    """What loader.load returns: the tags and signatures (.signature_def, .meta_info_def)."""

    def __init__(self, tags, signature_def):
        self.signature_def = signature_def
        self.meta_info_def = types.SimpleNamespace(tags=list(tags))


class SavedModelBuilder:
    """Exports a session's graph and variables into a new directory (TF1's
    tf.saved_model.builder.SavedModelBuilder); one meta graph per export in shardflow."""

    def __init__(self, export_dir):
        export_dir = os.fsdecode(export_dir)
        if os.path.exists(export_dir) and os.listdir(export_dir):
            raise errors.AlreadyExistsError(
                "SavedModelBuilder: export directory %s already exists; export into a new "
                "one (e.g. a higher version number)" % export_dir)
        self._dir = export_dir
        self._record = None

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None,
                                     assets_collection=None,
                                     legacy_init_op=None, clear_devices=False, main_op=None,
                                     strip_default_attrs=False, saver=None):
        from shardflow.train import Saver
        from shardflow.variables import global_variables
        if self._record is not None:
            raise ValueError("SavedModelBuilder: add_meta_graph_and_variables was called already")
        g = sess.graph
        with g.as_default():
            have_vars = bool(global_variables(g))
            if have_vars:
                os.makedirs(os.path.join(self._dir, "variables"), exist_ok=True)
                (saver or Saver()).save(sess, os.path.join(self._dir, "variables", "variables"),
                                        write_state=False)
            meta = _meta_graph.export_meta_graph(graph=g, clear_devices=clear_devices)
        init = main_op if main_op is not None else legacy_init_op
        self._record = {"tags": list(tags), "meta_graph": meta, "has_variables": have_vars,
                        "init_op": init.name if init is not None else None,
                        "signature_def": {k: v._to_json()
                                          for k, v in (signature_def_map or {}).items()}}

    def add_meta_graph(self, tags, *args, **kwargs):
        raise NotImplementedError("SavedModelBuilder.add_meta_graph: shardflow exports one meta "
                                  "graph per directory; use add_meta_graph_and_variables")

    def save(self, as_text=False):
        """Writes saved_model.json; returns its path."""
        if self._record is None:
            raise ValueError("SavedModelBuilder.save: call add_meta_graph_and_variables first")
        os.makedirs(self._dir, exist_ok=True)
        path = os.path.join(self._dir, _FILE)
        with open(path + ".tmp", "w") as f:
            json.dump(self._record, f, indent=1 if as_text else None)
        os.replace(path + ".tmp", path)
        return path


builder = types.SimpleNamespace(SavedModelBuilder=SavedModelBuilder)
Builder = SavedModelBuilder  # TF 1.15's tf.saved_model.Builder


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """Exports the session's graph and variables with one serving_default predict signature."""
    b = SavedModelBuilder(export_dir)
    b.add_meta_graph_and_variables(
        session, [tag_constants.SERVING],
        {signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
         predict_signature_def(inputs, outputs)}, legacy_init_op=legacy_init_op)
    b.save()


def _load_record(export_dir):
    export_dir = os.fsdecode(export_dir)
    path = os.path.join(export_dir, _FILE)
    try:
        with open(path) as f:
            record = json.load(f)
    except FileNotFoundError:
        raise errors.NotFoundError("saved_model: no %s in %s (export with simple_save or "
                                   "SavedModelBuilder)" % (_FILE, export_dir)) from None
    except OSError as e:  # a directory, unreadable
        raise errors.DataLossError("saved_model: cannot read %s (%s)" % (path, e)) from None
    except (ValueError, RecursionError) as e:   # RecursionError: nested past the limit
        raise errors.DataLossError("saved_model: %s is damaged (%s)" % (path, e)) from None
    problem = _record_problem(record)
    if problem:
        raise errors.DataLossError("saved_model: %s is damaged (%s)" % (path, problem))
    return record


def _record_problem(record):
    """What is wrong with a saved_model.json's fields (the file may have been edited or
    damaged and still be JSON), or None."""
    def is_infos(x):
        return isinstance(x, dict) and all(
            isinstance(v, dict) and isinstance(v.get("name"), str) for v in x.values())
    if not isinstance(record, dict):
        return "not a JSON object"
    tags = record.get("tags")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return "'tags' is not a list of strings"
    if not isinstance(record.get("meta_graph"), dict):
        return "'meta_graph' is not an object"
    if record.get("init_op") is not None and not isinstance(record["init_op"], str):
        return "'init_op' is not an op name"
    signatures = record.get("signature_def", {})
    if not isinstance(signatures, dict) or not all(
            isinstance(sig, dict) and is_infos(sig.get("inputs")) and is_infos(sig.get("outputs"))
            for sig in signatures.values()):
        return "'signature_def' is not a map of signatures with inputs and outputs"
    return None


def contains_saved_model(export_dir):
    """Whether export_dir holds a saved model."""
    return os.path.exists(os.path.join(os.fsdecode(export_dir), _FILE))


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Loads the saved model into sess's graph and restores its variables; returns an object
    with .signature_def (TF1's tf.saved_model.loader.load)."""
    export_dir = os.fsdecode(export_dir)
    record = _load_record(export_dir)
    if sorted(set(tags)) != sorted(set(record["tags"])):
        raise RuntimeError("saved_model: %s has a meta graph with tags %s, not %s"
                           % (export_dir, record["tags"], list(tags)))
    with sess.graph.as_default():
        saver = _meta_graph.import_meta_graph(record["meta_graph"], import_scope=import_scope)
        if saver is not None and record.get("has_variables"):
            saver.restore(sess, os.path.join(export_dir, "variables", "variables"))
        if record.get("init_op"):
            name = record["init_op"]
            sess.run((import_scope + "/" + name) if import_scope else name)
    signatures = {k: SignatureDef._from_json(v)
                  for k, v in record.get("signature_def", {}).items()}
    if import_scope:
        for sig in signatures.values():
            for d in (sig.inputs, sig.outputs):
                for k, v in d.items():
                    d[k] = v._replace(name=import_scope + "/" + v.name)
    return MetaGraphInfo(record["tags"], signatures)


loader = types.SimpleNamespace(load=load, maybe_saved_model_directory=contains_saved_model)

__all__ = ["Builder", "build_signature_def", "build_tensor_info", "builder", "contains_saved_model",
           "load", "loader", "predict_signature_def", "signature_constants",
           "signature_def_utils", "simple_save", "tag_constants", "utils"]
