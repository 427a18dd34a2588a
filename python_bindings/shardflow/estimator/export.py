"""TF1's tf.estimator.export: what Estimator.export_savedmodel needs to write a SavedModel.

A serving input receiver function builds the serving graph's inputs: a ServingInputReceiver
holds the features handed to model_fn (mode PREDICT) and the receiver tensors a client feeds.
model_fn's EstimatorSpec.export_outputs (PredictOutput, ClassificationOutput, RegressionOutput)
become the SavedModel's signatures; without them the predictions become one predict signature,
"serving_default".

Example::

    def serving_input_receiver_fn():
        x = sf.placeholder(sf.float32, [None, 28, 28], name="x")
        return sf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})

    path = estimator.export_savedmodel("/tmp/export", serving_input_receiver_fn)
    predict = sf.contrib.predictor.from_saved_model(path)
    predict({"x": images})                        # {'classes': ..., 'probabilities': ...}

build_parsing_serving_input_receiver_fn parses tf.train.Examples with a PyFunc node, so (as a
py_func in TensorFlow) its export loads only in the process that wrote it.
"""

import os
import shutil
import time

from shardflow import dtypes
from shardflow.framework import Tensor, convert_to_tensor

SINGLE_FEATURE_DEFAULT_NAME = "feature"
SINGLE_RECEIVER_DEFAULT_NAME = "input"
SINGLE_LABEL_DEFAULT_NAME = "label"


def _tensor_dict(value, default_name, what):
    if value is None:
        raise ValueError("%s must be given" % what)
    if not isinstance(value, dict):
        value = {default_name: value}
    out = {}
    for key, tensor in value.items():
        if not isinstance(key, str):
            raise ValueError("%s keys must be strings, got %r" % (what, key))
        if not isinstance(tensor, Tensor) and not hasattr(tensor, "dense_shape"):
            tensor = convert_to_tensor(tensor)
        out[key] = tensor
    return out


class ServingInputReceiver:
    """features: a tensor or a {name: tensor} dict for model_fn ({'feature': t} for a lone
    tensor); receiver_tensors: what a client feeds ({'input': t} for a lone tensor);
    receiver_tensors_alternatives: {signature suffix: receiver dict}, extra input sets."""

    def __init__(self, features, receiver_tensors, receiver_tensors_alternatives=None):
        self.features = _tensor_dict(features, SINGLE_FEATURE_DEFAULT_NAME, "features")
        self.receiver_tensors = _tensor_dict(receiver_tensors, SINGLE_RECEIVER_DEFAULT_NAME,
                                             "receiver_tensors")
        self.receiver_tensors_alternatives = {
            k: _tensor_dict(v, SINGLE_RECEIVER_DEFAULT_NAME, "receiver_tensors_alternatives")
            for k, v in (receiver_tensors_alternatives or {}).items()}


class TensorServingInputReceiver(ServingInputReceiver):
    """As ServingInputReceiver, but model_fn gets `features` itself (one tensor), not a dict."""

    def __init__(self, features, receiver_tensors, receiver_tensors_alternatives=None):
        if isinstance(features, dict):
            raise ValueError("TensorServingInputReceiver: features must be one tensor, not a "
                             "dict (use ServingInputReceiver)")
        super().__init__(features, receiver_tensors, receiver_tensors_alternatives)
        self.features = self.features[SINGLE_FEATURE_DEFAULT_NAME]


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver function feeding placeholders shaped like `features` ({name: tensor}), with
    the batch dimension `default_batch_size` (None: any)."""
    features = _tensor_dict(features, SINGLE_FEATURE_DEFAULT_NAME, "features")

    def serving_input_receiver_fn():
        from shardflow.ops import placeholder
        receivers = {}
        for name, t in features.items():
            shape = t.shape.as_list() if t.shape.ndims is not None else None
            if shape:
                shape[0] = default_batch_size
            receivers[name] = placeholder(t.dtype, shape, name=name)
        return ServingInputReceiver(receivers, receivers)
    return serving_input_receiver_fn


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A receiver function taking serialized tf.train.Examples (a string vector fed as
    'examples') and parsing them with `feature_spec` (tf.parse_example's dict)."""
    feature_spec = dict(feature_spec)

    def serving_input_receiver_fn():
        from shardflow.ops import placeholder
        from shardflow.parsing_ops import parse_example
        serialized = placeholder(dtypes.string, [default_batch_size],
                                 name="input_example_tensor")
        return ServingInputReceiver(parse_example(serialized, feature_spec),
                                    {"examples": serialized})
    return serving_input_receiver_fn


# ---- export outputs -------------------------------------------------------------------------

class ExportOutput:
    """What one signature of an exported model returns."""

    def as_signature_def(self, receiver_tensors):
        raise NotImplementedError


def _infos(tensors):
    from shardflow.saved_model import build_tensor_info
    return {k: build_tensor_info(v) for k, v in tensors.items()}


class PredictOutput(ExportOutput):
    """A predict signature: every receiver tensor in, `outputs` (a tensor, named 'output', or
    a {name: tensor} dict) out."""

    def __init__(self, outputs):
        self.outputs = _tensor_dict(outputs, "output", "PredictOutput outputs")

    def as_signature_def(self, receiver_tensors):
        from shardflow.saved_model import SignatureDef, signature_constants
        return SignatureDef(_infos(receiver_tensors), _infos(self.outputs),
                            signature_constants.PREDICT_METHOD_NAME)


def _single_string_input(receiver_tensors):
    if len(receiver_tensors) != 1:
        return None
    (t,) = receiver_tensors.values()
    if not isinstance(t, Tensor) or t.dtype != dtypes.string:
        return None
    return {"inputs": t}


class ClassificationOutput(ExportOutput):
    """A classify signature: 'scores' (float, [batch, classes]) and/or 'classes' (string,
    [batch, classes]). Its input must be one string tensor (serialized Examples), as
    TensorFlow's classify API; otherwise the signature takes the receiver tensors as a predict
    signature does."""

    def __init__(self, scores=None, classes=None):
        if scores is None and classes is None:
            raise ValueError("ClassificationOutput needs scores, classes or both")
        if scores is not None and (not isinstance(scores, Tensor) or not scores.dtype.is_floating):
            raise ValueError("ClassificationOutput: scores must be a float tensor, got %r"
                             % (scores,))
        if classes is not None and (not isinstance(classes, Tensor)
                                    or classes.dtype != dtypes.string):
            raise ValueError("ClassificationOutput: classes must be a string tensor, got %r"
                             % (classes,))
        self.scores, self.classes = scores, classes

    def as_signature_def(self, receiver_tensors):
        from shardflow.saved_model import SignatureDef, signature_constants
        outputs = {k: v for k, v in (("scores", self.scores), ("classes", self.classes))
                   if v is not None}
        inputs = _single_string_input(receiver_tensors)
        if inputs is None:
            return SignatureDef(_infos(receiver_tensors), _infos(outputs),
                                signature_constants.PREDICT_METHOD_NAME)
        return SignatureDef(_infos(inputs), _infos(outputs),
                            signature_constants.CLASSIFY_METHOD_NAME)


class RegressionOutput(ExportOutput):
    """A regress signature with one float output, 'outputs' (input as ClassificationOutput)."""

    def __init__(self, value):
        if not isinstance(value, Tensor) or not value.dtype.is_floating:
            raise ValueError("RegressionOutput: value must be a float tensor, got %r" % (value,))
        self.value = value

    def as_signature_def(self, receiver_tensors):
        from shardflow.saved_model import SignatureDef, signature_constants
        inputs = _single_string_input(receiver_tensors)
        if inputs is None:
            return SignatureDef(_infos(receiver_tensors), _infos({"outputs": self.value}),
                                signature_constants.PREDICT_METHOD_NAME)
        return SignatureDef(_infos(inputs), _infos({"outputs": self.value}),
                            signature_constants.REGRESS_METHOD_NAME)


def signature_def_map(receiver, export_outputs, predictions):
    """The signatures of an export: one per export output (and per receiver alternative, as
    '<output key>:<alternative>'); predictions as 'serving_default' without export_outputs."""
    from shardflow.saved_model import signature_constants
    default_key = signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
    if not export_outputs:
        if predictions is None:
            raise ValueError("export: model_fn gave neither export_outputs nor predictions "
                             "in PREDICT mode")
        export_outputs = {default_key: PredictOutput(predictions)}
    export_outputs = dict(export_outputs)
    for key, out in export_outputs.items():
        if not isinstance(out, ExportOutput):
            raise ValueError("export_outputs[%r] must be a PredictOutput, ClassificationOutput "
                             "or RegressionOutput, got %r" % (key, out))
    if default_key not in export_outputs:
        if len(export_outputs) != 1:
            raise ValueError("export_outputs has several entries (%s) and none is %r: name the "
                             "default one" % (sorted(export_outputs), default_key))
        export_outputs[default_key] = next(iter(export_outputs.values()))
    sigs = {}
    for key, out in export_outputs.items():
        sigs[key] = out.as_signature_def(receiver.receiver_tensors)
        for alt, tensors in receiver.receiver_tensors_alternatives.items():
            sigs["%s:%s" % (key, alt)] = out.as_signature_def(tensors)
    return sigs


def new_export_dir(export_dir_base):
    """export_dir_base/<seconds since the epoch>, one that does not exist yet."""
    export_dir_base = os.fsdecode(export_dir_base)
    stamp = int(time.time())
    while os.path.exists(os.path.join(export_dir_base, str(stamp))):
        stamp += 1
    return os.path.join(export_dir_base, str(stamp))


def export_dirs(export_dir_base):
    """The numbered exports under export_dir_base, oldest first."""
    export_dir_base = os.fsdecode(export_dir_base)
    if not os.path.isdir(export_dir_base):
        return []
    return sorted((int(d), os.path.join(export_dir_base, d))
                  for d in os.listdir(export_dir_base) if d.isdigit())


def copy_assets_extra(assets_extra, export_dir):
    """assets_extra {destination relative path: source file} into export_dir/assets.extra."""
    for dest, source in (assets_extra or {}).items():
        target = os.path.join(export_dir, "assets.extra", dest)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)


# ---- exporters (EvalSpec(exporters=...)) ---------------------------------------------------

class Exporter:
    """Called by train_and_evaluate after each evaluation:
    export(estimator, export_path, checkpoint_path, eval_result, is_the_final_export)."""

    @property
    def name(self):
        return self._name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        raise NotImplementedError


def _check_exporter_name(name):
    if not name or not isinstance(name, str):
        raise ValueError("an exporter needs a non-empty name, got %r" % (name,))
    return name


def _export_keeping(estimator, export_path, exporter, checkpoint_path):
    """An export by `exporter`'s settings, then only its newest exports_to_keep kept."""
    path = estimator.export_savedmodel(export_path, exporter._fn, assets_extra=exporter._assets,
                                       as_text=exporter._as_text,
                                       checkpoint_path=checkpoint_path)
    if exporter._keep is not None:
        for _, old in export_dirs(export_path)[:-exporter._keep]:
            shutil.rmtree(old, ignore_errors=True)
    return path


class LatestExporter(Exporter):
    """Exports after every evaluation and keeps the newest `exports_to_keep` (None: all)."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False,
                 exports_to_keep=5):
        self._name = _check_exporter_name(name)
        self._fn, self._assets, self._as_text = serving_input_receiver_fn, assets_extra, as_text
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("LatestExporter: exports_to_keep must be positive or None")
        self._keep = exports_to_keep

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        return _export_keeping(estimator, export_path, self, checkpoint_path)


class FinalExporter(Exporter):
    """Exports once, after the final evaluation."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        self._name = _check_exporter_name(name)
        self._fn, self._assets, self._as_text = serving_input_receiver_fn, assets_extra, as_text

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if not is_the_final_export:
            return None
        return estimator.export_savedmodel(export_path, self._fn, assets_extra=self._assets,
                                           as_text=self._as_text,
                                           checkpoint_path=checkpoint_path)


def _loss_smaller(best_eval_result, current_eval_result):
    if "loss" not in best_eval_result or "loss" not in current_eval_result:
        raise ValueError("BestExporter's default compare_fn needs 'loss' in the evaluation "
                         "results")
    return best_eval_result["loss"] > current_eval_result["loss"]


class BestExporter(Exporter):
    """Exports when an evaluation beats the best so far by compare_fn(best, current) (default:
    a smaller loss); keeps the newest `exports_to_keep` of those exports."""

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None,
                 event_file_pattern="eval/*.tfevents.*", compare_fn=_loss_smaller,
                 assets_extra=None, as_text=False, exports_to_keep=5):
        if serving_input_receiver_fn is None:
            raise ValueError("BestExporter needs a serving_input_receiver_fn")
        self._name = _check_exporter_name(name)
        self._fn, self._assets, self._as_text = serving_input_receiver_fn, assets_extra, as_text
        self._compare, self._keep, self._best = compare_fn, exports_to_keep, None

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if self._best is not None and not self._compare(self._best, eval_result):
            return None
        self._best = dict(eval_result)
        return _export_keeping(estimator, export_path, self, checkpoint_path)


__all__ = ["BestExporter", "ClassificationOutput", "ExportOutput", "Exporter", "FinalExporter",
           "LatestExporter", "PredictOutput", "RegressionOutput", "ServingInputReceiver",
           "TensorServingInputReceiver", "build_parsing_serving_input_receiver_fn",
           "build_raw_serving_input_receiver_fn"]
