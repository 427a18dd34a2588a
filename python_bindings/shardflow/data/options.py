"""tf.data.Options (TF 1.15) and its groups: OptimizationOptions, ThreadingOptions,
DistributeOptions, StatsOptions, MapVectorizationOptions.

Example::

    options = sf.data.Options()
    options.experimental_optimization.map_parallelization = True
    ds = ds.with_options(options)
    ds.options().experimental_optimization.map_parallelization   # True

Options are attribute holders: every field starts unset (None, or a group of unset fields),
takes a value of its type, and an unknown field is an AttributeError, as in TF. shardflow's
pipelines run the same whatever they say (no optimizer passes, no thread pools), so they are
kept for the program to read back.
"""


class _OptionsBase:
    """A set of named fields, each None (unset) or a value of its type."""

    _fields = {}  # name -> (type or tuple of types, default factory)

    def __init__(self):
        for name, (_, default) in self._fields.items():
            object.__setattr__(self, name, default())

    def __setattr__(self, name, value):
        if name not in self._fields:
            raise AttributeError("Cannot set the property %s on %s; its properties are %s"
                                 % (name, type(self).__name__, ", ".join(sorted(self._fields))))
        kind, default = self._fields[name]
        if value is None and default is not _unset or \
                value is not None and not isinstance(value, kind) or \
                isinstance(value, bool) and bool not in _as_tuple(kind):
            raise TypeError("Property \"%s\" must be of type %s, got: %r (type: %s)"
                            % (name, " or ".join(k.__name__ for k in _as_tuple(kind)), value,
                               type(value).__name__))
        object.__setattr__(self, name, value)

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, n) == getattr(other, n) for n in self._fields)

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % (n, getattr(self, n)) for n in sorted(self._fields)))

    def merge(self, options):
        """A new object with the fields set in either; a field both set to different values is
        a ValueError, as in TF."""
        if type(options) is not type(self):
            raise TypeError("%s.merge takes a %s, not %r" % (type(self).__name__,
                                                             type(self).__name__, options))
        merged = type(self)()
        for name in self._fields:
            mine, theirs = getattr(self, name), getattr(options, name)
            if isinstance(mine, _OptionsBase):
                value = mine.merge(theirs)
            elif mine is None or theirs is None or mine == theirs:
                value = theirs if mine is None else mine
            else:
                raise ValueError("Cannot merge incompatible values (%r and %r) of option: %s"
                                 % (mine, theirs, name))
            object.__setattr__(merged, name, value)
        return merged


def _as_tuple(kind):
    return kind if isinstance(kind, tuple) else (kind,)


def _unset():
    return None


def _flags(*names):
    return {name: (bool, _unset) for name in names}


class MapVectorizationOptions(_OptionsBase):
    """experimental_optimization.map_vectorization: enabled, use_choose_fastest."""

    _fields = _flags("enabled", "use_choose_fastest")


class OptimizationOptions(_OptionsBase):
    """Options.experimental_optimization: which static optimizations TF would apply."""

    _fields = dict(_flags(
        "apply_default_optimizations", "autotune", "autotune_buffers", "filter_fusion",
        "filter_with_random_uniform_fusion", "hoist_random_uniform", "map_and_batch_fusion",
        "map_and_filter_fusion", "map_fusion", "map_parallelization", "noop_elimination",
        "parallel_batch", "shuffle_and_repeat_fusion"),
        autotune_cpu_budget=(int, _unset),
        map_vectorization=(MapVectorizationOptions, MapVectorizationOptions))


class ThreadingOptions(_OptionsBase):
    """Options.experimental_threading: the thread pools TF would use."""

    _fields = {"max_intra_op_parallelism": (int, _unset),
               "private_threadpool_size": (int, _unset)}


class DistributeOptions(_OptionsBase):
    """Options.experimental_distribute: auto_shard (bool) and num_devices (int)."""

    _fields = {"auto_shard": (bool, _unset), "num_devices": (int, _unset)}


class StatsOptions(_OptionsBase):
    """Options.experimental_stats: where TF would record statistics (nothing is recorded)."""

    _fields = {"aggregator": (object, _unset), "prefix": (str, _unset),
               "counter_prefix": (str, _unset), "latency_all_edges": (bool, _unset)}


class Options(_OptionsBase):
    """tf.data.Options: pass to Dataset.with_options; Dataset.options() gives them back merged
    over the whole pipeline."""

    _fields = {"experimental_deterministic": (bool, _unset),
               "experimental_slack": (bool, _unset),
               "experimental_optimization": (OptimizationOptions, OptimizationOptions),
               "experimental_threading": (ThreadingOptions, ThreadingOptions),
               "experimental_distribute": (DistributeOptions, DistributeOptions),
               "experimental_stats": (StatsOptions, StatsOptions)}
