"""TF 1.15's tf.profiler.ProfileOptionBuilder: the options dict that tf.profiler.profile and
Profiler's views take.

Example::

    opts = tf.profiler.ProfileOptionBuilder.float_operation()      # a dict
    opts = (tf.profiler.ProfileOptionBuilder(opts)
            .with_max_depth(4).order_by("float_ops").with_empty_output().build())

The keys are TF's. What shardflow's profiler reads from them (shardflow/profiler_model.py):
max_depth, min_params, min_float_ops, min_bytes, min_micros (and its accelerator / cpu
variants), min_occurrence, order_by, select, account_type_regexes, show_name_regexes,
hide_name_regexes, account_displayed_op_only and output ("stdout", "none", "file:outfile=...",
"timeline:outfile=...", "pprof:outfile=..."); start_name_regexes, trim_name_regexes and step
are kept and not applied.
"""

import copy

# The account type of a trainable variable's op (TF's tfprof_logger.TRAINABLE_VARIABLES).
TRAINABLE_VARIABLES = "_trainable_variables"

_BASE = {
    "max_depth": 100, "min_bytes": 0, "min_peak_bytes": 0, "min_residual_bytes": 0,
    "min_output_bytes": 0, "min_micros": 0, "min_accelerator_micros": 0, "min_cpu_micros": 0,
    "min_params": 0, "min_float_ops": 0, "min_occurrence": 0, "order_by": "name",
    "account_type_regexes": [".*"], "start_name_regexes": [".*"], "trim_name_regexes": [],
    "show_name_regexes": [".*"], "hide_name_regexes": [], "account_displayed_op_only": False,
    "select": ["micros"], "step": -1, "output": "stdout",
}

_ORDER_BY = ("name", "bytes", "peak_bytes", "residual_bytes", "output_bytes", "micros",
             "accelerator_micros", "cpu_micros", "params", "float_ops", "occurrence")
_SELECT = ("bytes", "peak_bytes", "residual_bytes", "output_bytes", "micros",
           "accelerator_micros", "cpu_micros", "params", "float_ops", "occurrence",
           "tensor_value", "device", "op_types", "input_shapes")


def _options(**changes):
    opts = copy.deepcopy(_BASE)
    opts.update(changes)
    return opts


class ProfileOptionBuilder:
    """Builds the options dict step by step; each with_* / order_by / select returns the
    builder, build() the dict. Not thread safe."""

    def __init__(self, options=None):
        self._options = copy.deepcopy(options) if options is not None else _options()

    # ---- the presets (static, as in TF) -------------------------------------------------------

    @staticmethod
    def trainable_variables_parameter():
        """Counts the parameters (elements) of the trainable variables, by name scope."""
        return _options(max_depth=10000, order_by="name", select=["params"],
                        account_type_regexes=[TRAINABLE_VARIABLES],
                        account_displayed_op_only=True)

    @staticmethod
    def float_operation():
        """Counts the FLOPs of the ops whose FLOPs are known (shardflow/profiler_flops.py)."""
        return _options(max_depth=10000, min_float_ops=1, order_by="float_ops",
                        select=["float_ops"], account_displayed_op_only=True)

    @staticmethod
    def time_and_memory(min_micros=1, min_bytes=1, min_accelerator_micros=0,
                        min_cpu_micros=0, min_peak_bytes=0, min_residual_bytes=0,
                        min_output_bytes=0):
        """Time and memory of the ops a traced RunMetadata recorded."""
        return _options(max_depth=10000, min_bytes=min_bytes, min_peak_bytes=min_peak_bytes,
                        min_residual_bytes=min_residual_bytes,
                        min_output_bytes=min_output_bytes, min_micros=min_micros,
                        min_accelerator_micros=min_accelerator_micros,
                        min_cpu_micros=min_cpu_micros, order_by="micros",
                        select=["micros", "bytes"], account_displayed_op_only=True)

    def build(self):
        """The options dict (a copy)."""
        return copy.deepcopy(self._options)

    # ---- filters --------------------------------------------------------------------------

    def _set(self, **changes):
        self._options.update(changes)
        return self

    def with_max_depth(self, max_depth):
        return self._set(max_depth=int(max_depth))

    def with_min_memory(self, min_bytes=0, min_peak_bytes=0, min_residual_bytes=0,
                        min_output_bytes=0):
        return self._set(min_bytes=min_bytes, min_peak_bytes=min_peak_bytes,
                         min_residual_bytes=min_residual_bytes,
                         min_output_bytes=min_output_bytes)

    def with_min_execution_time(self, min_micros=0, min_accelerator_micros=0,
                                min_cpu_micros=0):
        return self._set(min_micros=min_micros, min_accelerator_micros=min_accelerator_micros,
                         min_cpu_micros=min_cpu_micros)

    def with_min_parameters(self, min_params):
        return self._set(min_params=int(min_params))

    def with_min_occurrence(self, min_occurrence):
        return self._set(min_occurrence=int(min_occurrence))

    def with_min_float_operations(self, min_float_ops):
        return self._set(min_float_ops=int(min_float_ops))

    def with_accounted_types(self, account_type_regexes):
        return self._set(account_type_regexes=list(account_type_regexes))

    def with_node_names(self, start_name_regexes=None, show_name_regexes=None,
                        hide_name_regexes=None, trim_name_regexes=None):
        for key, value in (("start_name_regexes", start_name_regexes),
                           ("show_name_regexes", show_name_regexes),
                           ("hide_name_regexes", hide_name_regexes),
                           ("trim_name_regexes", trim_name_regexes)):
            if value is not None:
                self._options[key] = list(value)
        return self

    def account_displayed_op_only(self, is_true):
        return self._set(account_displayed_op_only=bool(is_true))

    def with_step(self, step):
        return self._set(step=int(step))

    # ---- output ---------------------------------------------------------------------------

    def with_empty_output(self):
        return self._set(output="none")

    def with_stdout_output(self):
        return self._set(output="stdout")

    def with_file_output(self, outfile):
        return self._set(output="file:outfile=%s" % outfile)

    def with_timeline_output(self, timeline_file):
        return self._set(output="timeline:outfile=%s" % timeline_file)

    def with_pprof_output(self, pprof_file):
        return self._set(output="pprof:outfile=%s" % pprof_file)

    def order_by(self, attribute):
        if attribute not in _ORDER_BY:
            raise ValueError("order_by: %r is not one of %s" % (attribute, ", ".join(_ORDER_BY)))
        return self._set(order_by=attribute)

    def select(self, attributes):
        unknown = [a for a in attributes if a not in _SELECT]
        if unknown:
            raise ValueError("select: %s not among %s" % (unknown, ", ".join(_SELECT)))
        return self._set(select=list(attributes))


__all__ = ["ProfileOptionBuilder", "TRAINABLE_VARIABLES"]
