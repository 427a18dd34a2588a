"""TF1's tf.estimator: Estimator (model_fn + checkpoints in model_dir), EstimatorSpec,
ModeKeys, RunConfig, the canned DNN/Linear/DNNLinearCombined classifiers and regressors,
tf.estimator.inputs.numpy_input_fn, TrainSpec / EvalSpec / train_and_evaluate
(estimator/training.py), classifier/regressor_parse_example_spec, and tf.train's session-run
hooks under the names TF 1.15 gives them here. estimator.py says how a call runs; docs/python.md,
"tf.estimator", what is supported."""

from shardflow.estimator import experimental, export, inputs  # noqa: F401
from shardflow.estimator.canned import (BaselineClassifier, BaselineRegressor,  # noqa: F401
                                        DNNClassifier, DNNRegressor,
                                        DNNLinearCombinedClassifier,
                                        DNNLinearCombinedRegressor, LinearClassifier,
                                        LinearRegressor)
from shardflow.estimator.estimator import Estimator, add_metrics  # noqa: F401
from shardflow.estimator.export import (BestExporter, Exporter, FinalExporter,  # noqa: F401
                                        LatestExporter)
from shardflow.estimator.model_fn import EstimatorSpec, ModeKeys, RunConfig  # noqa: F401
from shardflow.estimator.training import EvalSpec, TrainSpec, train_and_evaluate  # noqa: F401
from shardflow.estimator.parsing_utils import (classifier_parse_example_spec,  # noqa: F401
                                               regressor_parse_example_spec)
from shardflow.warm_starting_util import VocabInfo, WarmStartSettings  # noqa: F401
# The session-run hooks TF 1.15 also exports under tf.estimator (tf.train's classes).
from shardflow.basic_hooks import (FeedFnHook, FinalOpsHook, GlobalStepWaiterHook,  # noqa: F401
                                   LoggingTensorHook, NanLossDuringTrainingError, NanTensorHook,
                                   SecondOrStepTimer, StepCounterHook, SummarySaverHook)
from shardflow.monitored_session import (CheckpointSaverHook,  # noqa: F401
                                         CheckpointSaverListener, SessionRunArgs,
                                         SessionRunContext, SessionRunHook, SessionRunValues,
                                         StopAtStepHook)
from shardflow.profiler_hook import ProfilerHook  # noqa: F401
