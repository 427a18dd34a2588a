"""TF1's tf.contrib.predictor: a SavedModel (or an Estimator) as a Python function from a dict
of input arrays to a dict of output arrays, with the session kept open between calls.

Example::

    predict = sf.contrib.predictor.from_saved_model(export_dir)
    out = predict({"x": images})            # the signature's outputs by key
"""

import shutil
import tempfile

from shardflow import errors


class Predictor:
    """Runs one signature of a loaded model: predictor(input_dict) -> output dict. The
    signature's input and output tensors are in .feed_tensors and .fetch_tensors."""

    def __init__(self, session, signature):
        self._session = session
        self._graph = session.graph
        self.feed_tensors = {k: self._graph.get_tensor_by_name(v.name)
                             for k, v in signature.inputs.items()}
        self.fetch_tensors = {k: self._graph.get_tensor_by_name(v.name)
                              for k, v in signature.outputs.items()}

    @property
    def session(self):
        return self._session

    @property
    def graph(self):
        return self._graph

    def __call__(self, input_dict):
        if not isinstance(input_dict, dict):
            raise TypeError("a predictor takes a dict of inputs (keys %s), got %r"
                            % (sorted(self.feed_tensors), type(input_dict).__name__))
        unknown = sorted(set(input_dict) - set(self.feed_tensors))
        if unknown:
            raise ValueError("predictor: unknown inputs %s; the signature takes %s"
                             % (unknown, sorted(self.feed_tensors)))
        missing = sorted(set(self.feed_tensors) - set(input_dict))
        if missing:
            raise ValueError("predictor: inputs %s are missing; the signature takes %s"
                             % (missing, sorted(self.feed_tensors)))
        feed = {self.feed_tensors[k]: v for k, v in input_dict.items()}
        return self._session.run(self.fetch_tensors, feed_dict=feed)

    def __repr__(self):
        return "<Predictor inputs=%s outputs=%s>" % (sorted(self.feed_tensors),
                                                    sorted(self.fetch_tensors))


def from_saved_model(export_dir, signature_def_key=None, signature_def=None, tags=None,
                     graph=None, config=None):
    """A Predictor of the SavedModel in export_dir: signature `signature_def_key` (default
    'serving_default'), or `signature_def` itself; `tags` default to ['serve']."""
    from shardflow import saved_model
    from shardflow.framework import Graph
    from shardflow.session import Session
    if signature_def_key is not None and signature_def is not None:
        raise ValueError("from_saved_model takes signature_def_key or signature_def, not both")
    graph = graph if graph is not None else Graph()
    session = Session(graph=graph, config=config)
    try:
        meta = saved_model.loader.load(session, tags or [saved_model.tag_constants.SERVING],
                                       export_dir)
        if signature_def is None:
            key = signature_def_key or \
                saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
            if key not in meta.signature_def:
                raise errors.NotFoundError(
                    "from_saved_model: %s has no signature %r (it has: %s)"
                    % (export_dir, key, ", ".join(sorted(meta.signature_def))))
            signature_def = meta.signature_def[key]
        return Predictor(session, signature_def)
    except BaseException:
        session.close()
        raise


def from_estimator(estimator, serving_input_receiver_fn, output_key=None, graph=None,
                   config=None):
    """A Predictor of an Estimator's newest checkpoint, served through
    serving_input_receiver_fn; `output_key` picks an export output (default:
    'serving_default')."""
    export_base = tempfile.mkdtemp(prefix="sf_predictor_")
    try:
        path = estimator.export_savedmodel(export_base, serving_input_receiver_fn)
        return from_saved_model(path, signature_def_key=output_key, graph=graph, config=config)
    finally:
        shutil.rmtree(export_base, ignore_errors=True)


__all__ = ["Predictor", "from_estimator", "from_saved_model"]
