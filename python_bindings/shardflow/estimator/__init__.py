"""TF1's tf.estimator: Estimator (model_fn + checkpoints in model_dir), EstimatorSpec,
ModeKeys, RunConfig, the canned DNN/Linear/DNNLinearCombined classifiers and regressors,
tf.estimator.inputs.numpy_input_fn, and TrainSpec / EvalSpec / train_and_evaluate
(estimator/training.py). estimator.py says how a call runs; docs/python.md,
"tf.estimator", what is supported."""

from shardflow.estimator import export, inputs  # noqa: F401
from shardflow.estimator import early_stopping as experimental  # noqa: F401
from shardflow.estimator.canned import (DNNClassifier, DNNRegressor,  # noqa: F401
                                        DNNLinearCombinedClassifier,
                                        DNNLinearCombinedRegressor, LinearClassifier,
                                        LinearRegressor)
from shardflow.estimator.estimator import Estimator, add_metrics  # noqa: F401
from shardflow.estimator.export import (BestExporter, Exporter, FinalExporter,  # noqa: F401
                                        LatestExporter)
from shardflow.estimator.model_fn import EstimatorSpec, ModeKeys, RunConfig  # noqa: F401
from shardflow.estimator.training import EvalSpec, TrainSpec, train_and_evaluate  # noqa: F401
from shardflow.warm_starting_util import VocabInfo, WarmStartSettings  # noqa: F401
